/* SPDX-License-Identifier: MIT */
/*
 * The xz backend: the block map is the file's own Index (read from the end
 * of each Stream, nothing decoded); one map entry per non-empty Block.
 *
 * Empty Blocks: a Block whose Index says it holds 0 bytes has no map entry
 * (entries are never empty), so no read would decode it, and an Index that
 * lies that a Block is empty would hide it and its corruption: `xz -t`
 * says corrupt, and so must we.  Such Blocks are verified, decoded to
 * their end, when the map entry after them in the file is decoded from its
 * start, until they pass once (struct xz); the ones after the last entry
 * go with the last entry, and in a file with no entry at all, at open.  So
 * the reads that fail with EIO are those of the unit starting at the
 * offset where the empty Block sits (the unit before it ends there,
 * untouched).  This is cheap: an honest empty
 * Block is a Block Header, the 1-byte LZMA2 end marker and a Check, its
 * decoder's dictionary is capped at 4 KiB (xzdec_dec_open), and a Block
 * that holds more than it says fails at its first decoded byte, having
 * read at most its compressed size.  Checking the Unpadded Size alone at
 * open would need each Block Header's size (a pread each) and would still
 * not see a corrupt end marker or Check.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "reader_int.h"
#include "xzckpt.h"
#include "xzdec.h"
#include "zlog.h"

#define XZ_KNOWN_CHECKS                                                                            \
	(1u << XZDEC_CHECK_NONE | 1u << XZDEC_CHECK_CRC32 | 1u << XZDEC_CHECK_CRC64 |              \
	 1u << XZDEC_CHECK_SHA256)
/*
 * Bytes of memory per Block in the map: the Index entry, the map's start,
 * entry and bad mark (the README's 65 bytes a Block, test_memory.py's cap).
 * Not counted: struct xz's empty-run flag, one byte per map entry plus one,
 * so at most one more byte a Block.
 */
#define XZ_BLOCK_COST (sizeof(struct xzdec_block) + sizeof(uint64_t) + sizeof(size_t) + 1)

/* The backend's index (r->idx). */
struct xz {
	struct xzdec_index *x;
	/*
	 * Per map entry k, whether the run of empty Blocks just before it (k
	 * == map.n: after the last entry) verified whole.  Each run is
	 * verified once per reader, not on every decode from the start of the
	 * entry after it (each backward read in a streamed Block).  Two
	 * threads may verify a run at once the first time: duplicate work,
	 * the same verdict.  NULL while map.n is 0.  A failure is not kept
	 * here: the core retries a failed unit once (a pread error can pass)
	 * and then marks it bad, so it fails from then on without a decode.
	 */
	atomic_uchar *empty_ok;
	atomic_uint_fast64_t verified; /* empty Blocks decoded, for check_reader */
};

static const struct xzdec_index *xz_index(const struct reader *r)
{
	return ((const struct xz *)r->idx)->x;
}

/* Verifies Blocks [from, to), every one of which the Index says is empty. */
static int verify_empty(struct reader *r, size_t from, size_t to, struct zerr *err)
{
	struct xz *s = r->idx;

	for (size_t i = from; i < to; i++) {
		struct zerr e = { 0 };
		int ret = xzdec_block_verify(r->src, &s->x->blocks[i], fmt_state(r), &e);

		atomic_fetch_add_explicit(&s->verified, 1, memory_order_relaxed);
		if (ret < 0)
			return zerr_set(err, ret, e.coff,
					"Block %zu, which the Index says is empty: %s", i, e.msg);
	}
	return 0;
}

/* verify_empty for the run before map entry k (k == map.n: after the last), once it passes. */
static int verify_run(struct reader *r, size_t k, struct zerr *err)
{
	struct xz *s = r->idx;
	int ret;

	if (atomic_load(&s->empty_ok[k]))
		return 0;
	ret = verify_empty(r, k > 0 ? r->entry[k - 1] + 1 : 0,
			   k < r->map.n ? r->entry[k] : s->x->nblocks, err);
	if (ret == 0)
		atomic_store(&s->empty_ok[k], 1);
	return ret;
}

uint64_t fmt_xz_empty_verified(const struct reader *r)
{
	return atomic_load(&((struct xz *)r->idx)->verified);
}

static int xz_open(struct reader *r, struct zerr *why)
{
	struct zerr err = { 0 };
	struct xzdec_index *x;
	struct xz *s;
	size_t max_blocks = r->opts.index_max / XZ_BLOCK_COST;
	int ret = xzdec_index_read_max(r->src, (uint64_t)r->st.st_size, max_blocks ? max_blocks : 1,
				       &x, &err);

	/* The map's cost per Block (README "Memory"): a file of a million tiny Blocks is refused.
	 */
	if (ret == -E2BIG)
		return zerr_set(why, -EINVAL, err.coff,
				"%s: its map would need more than cache_size/4 (%zu KiB); raise "
				"cache_size or recompress with larger Blocks",
				err.msg, r->opts.index_max >> 10);
	/*
	 * Salvage: a file whose Index cannot be read (cut short by a crash, or
	 * still being written, most often) is decoded forward instead, and
	 * shows the whole verified Blocks before the damage; a file cut short
	 * shows what xz -dc prints, the start of the Block it ends inside
	 * included, unverified (its Check is not in the file yet).  A file
	 * whose Index reads keeps every Block it can: a corrupt one fails
	 * alone, with EIO, as without salvage.
	 */
	if (ret < 0 && ret != -EIO && r->opts.salvage) {
		struct zerr first = err;

		ret = xzdec_index_scan(r->src, (uint64_t)r->st.st_size, &x, &err);
		if (ret == 0 && x->salvaged && err.cut) {
			const struct xzdec_block *last =
				&x->blocks[x->nblocks ? x->nblocks - 1 : 0];
			uint64_t loose = x->nblocks && last->cut ? last->usize : 0;
			char tail[96] = "";

			if (loose)
				snprintf(tail, sizeof(tail),
					 ", and %" PRIu64 " unverified bytes of the Block it ends "
					 "inside",
					 loose);
			reader_log(r, ZLOG_WARN, NULL,
				   "%s; salvage: showing the %" PRIu64
				   " bytes xz -dc prints: %zu whole, verified Blocks%s",
				   err.msg, x->usize, x->nblocks - (loose ? 1 : 0), tail);
		} else if (ret == 0 && x->salvaged) {
			reader_log(r, ZLOG_WARN, NULL,
				   "not readable as xz (%s at compressed offset %" PRIu64
				   "); salvage: "
				   "showing the %" PRIu64
				   " bytes of the %zu whole, verified Blocks before "
				   "compressed offset %" PRIu64 " (%s)",
				   first.msg, first.coff, x->usize, x->nblocks, x->damage_coff,
				   err.msg);
		}
		if (ret == 0 && max_blocks && x->nblocks > max_blocks) {
			ret = zerr_set(&err, -EINVAL, 0,
				       "its %zu Blocks need more than cache_size/4", x->nblocks);
			xzdec_index_free(x);
			return zerr_set(why, ret, 0, "salvage: %s", err.msg);
		}
		if (ret < 0)
			err = first;
	}
	/* A file cut short says so in its own words (zerr_cut's), whatever the format. */
	if (ret < 0 && err.cut) {
		if (why)
			*why = err;
		return ret;
	}
	if (ret < 0)
		/* The Index's memlimit only trips on an Index that lies about its size. */
		return zerr_set(why, ret == -ENOMEM ? -EINVAL : ret, err.coff,
				"not readable as xz (at compressed offset %" PRIu64 "): %s",
				err.coff, err.msg);
	s = calloc(1, sizeof(*s));
	if (!s) {
		xzdec_index_free(x);
		return -ENOMEM;
	}
	s->x = x;
	r->idx = s; /* the core frees it with xz_free whatever happens next */
	atomic_fetch_add(&r->ctx->stats.opened[r->fmt], 1);
	if (x->checks & ~XZ_KNOWN_CHECKS)
		reader_log(r, ZLOG_WARN, NULL,
			   "unsupported type of integrity check; not verifying it");
	for (size_t i = 0; i < x->nblocks; i++) {
		const struct xzdec_block *b = &x->blocks[i];

		if (b->usize / XZDEC_MAX_RATIO > b->csize)
			return zerr_set(why, -EINVAL, b->coff,
					"Index claims %" PRIu64 " bytes for Block %zu of %" PRIu64
					" compressed bytes; refusing it",
					b->usize, i, b->csize);
	}
	if (reader_map_init(r, x->nblocks) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < x->nblocks; i++) {
		if (x->blocks[i].usize == 0)
			continue;
		cmap_add(&r->map, x->blocks[i].uoff);
		r->entry[r->map.n - 1] = i;
	}
	cmap_end(&r->map, x->usize);
	if (r->map.n > 0) {
		s->empty_ok = calloc(r->map.n + 1, sizeof(*s->empty_ok));
		if (!s->empty_ok)
			return -ENOMEM;
	}
	ret = r->map.n == 0 ? verify_empty(r, 0, x->nblocks, &err) : 0;
	if (ret < 0)
		return zerr_set(why, ret == -ENOMEM ? ret : -EINVAL, err.coff, "%s", err.msg);
	return 0;
}

static void xz_free(void *idx)
{
	struct xz *s = idx;

	if (!s)
		return;
	xzdec_index_free(s->x);
	free(s->empty_ok);
	free(s);
}

static const struct xzdec_block *block(const struct reader *r, size_t k)
{
	return &xz_index(r)->blocks[r->entry[k]];
}

static int xz_dec_open(struct reader *r, size_t k, void **dec, struct zerr *err)
{
	int ret = verify_run(r, k, err);

	if (ret == 0 && k + 1 == r->map.n)
		ret = verify_run(r, k + 1, err);
	if (ret < 0)
		return ret;
	return xzdec_dec_open(r->src, block(r, k), fmt_state(r), (struct xzdec_dec **)dec, err);
}

static ssize_t xz_dec_read(void *dec, struct zsrc *src, void *buf, size_t len, struct zerr *err)
{
	return xzdec_dec_read(dec, src, buf, len, err);
}

static uint64_t xz_dec_tell(const void *dec)
{
	return xzdec_dec_tell(dec);
}

static size_t xz_dec_cost(const void *dec)
{
	return xzdec_dec_memusage(dec);
}

static void xz_dec_close(void *dec)
{
	xzdec_dec_close(dec);
}

static void xz_extent(const struct reader *r, size_t k0, size_t k1, uint64_t *cstart,
		      uint64_t *cend)
{
	*cstart = block(r, k0)->coff;
	*cend = block(r, k1)->coff + block(r, k1)->csize;
}

static void xz_info(const struct reader *r, struct reader_info *in)
{
	const struct xzdec_index *x = xz_index(r);

	in->salvaged = x->salvaged;
	in->streams = x->nstreams;
	in->blocks = r->map.n;
	in->checks = x->checks;
	in->padding = x->padding;
}

/* Checkpoints inside one Block: codec/xzckpt.h says what one holds. */
static int xz_ck_build(struct reader *r, struct zsrc *src, size_t k, uint64_t span,
		       struct ckpt_build *b, struct zerr *err)
{
	struct xzckpt_sink sink = { .out = ckpt_build_out, .point = ckpt_build_point, .arg = b };

	/* Checkpoints record the Block's Check; a cut Block has none to record. */
	if (block(r, k)->cut)
		return zerr_set(err, -ENOTSUP, block(r, k)->coff,
				"the file ends inside it (salvaged, cut short)");
	return xzckpt_build(src, block(r, k), span, &sink, NULL, err);
}

static int xz_ck_open(struct reader *r, size_t k, const void *blob, size_t len, void **dec,
		      struct zerr *err)
{
	/* The empty Blocks around it, as a decoder from its start would see them. */
	int ret = verify_run(r, k, err);

	if (ret == 0 && k + 1 == r->map.n)
		ret = verify_run(r, k + 1, err);
	if (ret < 0)
		return ret;
	return xzckpt_dec_open(r->src, block(r, k), fmt_state(r), blob, len,
			       (struct xzckpt_dec **)dec, err);
}

static ssize_t xz_ck_read(void *dec, struct zsrc *src, void *buf, size_t len, struct zerr *err)
{
	return xzckpt_dec_read(dec, src, buf, len, err);
}

static size_t xz_ck_cost(const void *dec)
{
	return xzckpt_dec_cost(dec);
}

static void xz_ck_close(void *dec)
{
	xzckpt_dec_close(dec);
}

/* A decoder from the Block's start that builds its checkpoints on the way (fmt.h, run_open). */
static int xz_run_open(struct reader *r, size_t k, uint64_t span, struct ckpt_build *b, void **dec,
		       struct zerr *err)
{
	struct xzckpt_sink sink = { .out = ckpt_build_out, .point = ckpt_build_point, .arg = b };
	int ret = verify_run(r, k, err);

	if (ret == 0 && k + 1 == r->map.n)
		ret = verify_run(r, k + 1, err);
	if (ret < 0)
		return ret;
	if (block(r, k)->cut)
		return zerr_set(err, -ENOTSUP, block(r, k)->coff, "the file ends inside it");
	return xzckpt_run_open(r->src, block(r, k), span, &sink, (struct xzckpt_run **)dec, err);
}

static ssize_t xz_run_read(void *dec, struct zsrc *src, void *buf, size_t len, struct zerr *err)
{
	return xzckpt_run_read(dec, src, buf, len, err);
}

static size_t xz_run_cost(const void *dec)
{
	return xzckpt_run_cost(dec);
}

static void xz_run_close(void *dec)
{
	xzckpt_run_close(dec);
}

static const struct fmt_ck xz_ck = {
	.build = xz_ck_build,
	.open = xz_ck_open,
	.ops = { .read = xz_ck_read, .cost = xz_ck_cost, .close = xz_ck_close },
	.run_open = xz_run_open,
	.run_ops = { .read = xz_run_read, .cost = xz_run_cost, .close = xz_run_close },
};

static int xz_sniff(struct zsrc *src, const unsigned char *head, size_t n)
{
	(void)src;
	return xzdec_magic(head, n);
}

static int xz_ctx_new(void **state)
{
	return xzdec_spares_new((struct xzdec_spares **)state);
}

static void xz_ctx_free(void *state)
{
	xzdec_spares_free(state);
}

/* The Check IDs of mask, by name: "CRC64", "CRC32,SHA-256", "Unknown-7". */
static void check_names(uint32_t mask, char *out, size_t len)
{
	static const char *const names[] = {
		[0] = "None", [1] = "CRC32", [4] = "CRC64", [10] = "SHA-256"
	};
	size_t used = 0;

	out[0] = '\0';
	for (unsigned id = 0; id < 32 && used < len; id++) {
		const char *name = id < sizeof(names) / sizeof(names[0]) ? names[id] : NULL;
		char other[16];

		if (!(mask & (1u << id)))
			continue;
		if (!name) {
			snprintf(other, sizeof(other), "Unknown-%u", id);
			name = other;
		}
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "," : "", name);
	}
}

static int xz_info_line(const struct reader_info *in, char *out, size_t len)
{
	char ck[128];

	check_names(in->checks, ck, sizeof(ck));
	return snprintf(
		out, len,
		"xz\tstreams=%" PRIu64 "\tblocks=%" PRIu64 "\tcompressed=%" PRIu64
		"\tuncompressed=%" PRIu64 "\tmax_block=%" PRIu64 "\tcheck=%s\tpadding=%" PRIu64,
		in->streams, in->blocks, in->csize, in->usize, in->max_block, ck, in->padding);
}

static int xz_info_counts(const struct reader_info *in, char *out, size_t len)
{
	return snprintf(out, len, "streams=%" PRIu64 "\nblocks=%" PRIu64 "\n", in->streams,
			in->blocks);
}

static int xz_advice(enum fmttab_advice what, const char *bs, char *out, size_t len)
{
	switch (what) {
	case FMTTAB_UNIT:
		return snprintf(out, len, "Block");
	case FMTTAB_FIX_ONE:
		return snprintf(out, len,
				"recompress with xz -T0 --block-size=%s (many Blocks of at "
				"most cache_size/2)",
				bs);
	case FMTTAB_FIX_WIDE:
		return snprintf(out, len, "recompress with xz -T0 --block-size=%s (cache_size/2)",
				bs);
	default:
		return snprintf(out, len,
				"its Index was read"); /* never: the Index is the file's */
	}
}

static const struct fmt_suffix xz_suffixes[] = {
	{ ".xz", "" },
	{ ".txz", ".tar" },
	{ NULL, NULL },
};

const struct fmt fmt_xz = {
	.name = "xz",
	.unit = "Block",
	.sniff = xz_sniff,
	.suffixes = xz_suffixes,
	.bg = FMTTAB_BG_CKPT,
	.list_open = true,
	.salvage = true,
	.wide_fix = ", or recompress with xz --block-size=16MiB",
	.counter = "xz_indexes",
	.ctx_new = xz_ctx_new,
	.ctx_free = xz_ctx_free,
	.info_line = xz_info_line,
	.info_counts = xz_info_counts,
	.advice = xz_advice,
	.open = xz_open,
	.free = xz_free,
	.dec_open = xz_dec_open,
	.dec_read = xz_dec_read,
	.dec_tell = xz_dec_tell,
	.dec_cost = xz_dec_cost,
	.dec_close = xz_dec_close,
	.extent = xz_extent,
	.info = xz_info,
	.ck = &xz_ck,
};
