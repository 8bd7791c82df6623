/* SPDX-License-Identifier: MIT */
/*
 * A dummy format for tests only: "zid", the identity.  A file is a header
 * and the content as it is.  Version 1: 16 bytes, the magic "ZMIDENT1" and
 * the content's size (64-bit little-endian); one map entry per MiB.
 * Version 2: 24 bytes, "ZMIDENT2", the size, and the entry size (at least
 * 64 KiB), so that a test can make entries as wide as it likes: wide
 * enough for the core to want checkpoints inside them (reader_ck.c).
 *
 * It exists to prove that a format is added through the table alone: the
 * test build (tests/fmt/CMakeLists.txt) compiles index/fmttab.c with
 * ZMOUNT_FMT_EXTRA=fmt_zid and links this file in, and nothing else
 * changes.  It fills every hook fmt.h lists, keeps its own per-context
 * state (opens counted in fmt_state) and its own counter (zid_indexes),
 * and asks the background indexer for the index pass.
 *
 * It saves its index too, through the saved hook alone (zid_saved): kind
 * ZID_KIND, one 32-byte record (the content size, the entry size and the
 * header's), in the same "<h>.zmi" files, envelope, trust and identity as
 * gzip's.  An open with an index_dir loads it (counted as a loaded index)
 * or saves one (a built one), so the tools' build and info see a format
 * that saves.
 *
 * And it has checkpoints inside one entry, through the ck hook alone
 * (zid_ck): a checkpoint's blob is the magic "ZIDCKPT1" and the source
 * offset to go on from, which the build pass records every span.  The
 * core does the rest as for any format: the background pass that builds
 * them, their piece CRC32s, the ".zmc" file of kind 3 they are saved in,
 * loading them on a later mount, and resuming a far read at one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idxfile.h"
#include "idxrec.h"
#include "src.h"
#include "reader_int.h"

#define ZID_HDR1      16
#define ZID_HDR2      24
#define ZID_CHUNK     (1u << 20) /* version 1's entries */
#define ZID_CHUNK_MIN (64u << 10)

#define ZID_KIND 77 /* its index files' kind: any number no other kind takes */

/* Its one record's fields. */
enum { ZR_USIZE = 0, ZR_CHUNK = 8, ZR_HDR = 16, ZR_RSV = 24 };

/* The magic without its version digit, '1' or '2'. */
static const unsigned char zid_magic[7] = { 'Z', 'M', 'I', 'D', 'E', 'N', 'T' };

/* The index: what the header says, r->idx; also what the saved record holds. */
struct zid_idx {
	uint64_t usize; /* content bytes */
	uint64_t chunk; /* bytes per map entry */
	uint64_t hdr;	/* header bytes: where the content starts */
};

/* Per context: opens of zid files (the format's own state, ctx_new's). */
struct zid_state {
	atomic_uint_fast64_t opens;
};

struct zid_dec {
	uint64_t hdr;		  /* the content's offset in the source */
	uint64_t start, end, pos; /* content offsets: the entry's, and where the next read goes */
};

static int zid_sniff(struct zsrc *src, const unsigned char *head, size_t n)
{
	(void)src;
	return n > sizeof(zid_magic) && memcmp(head, zid_magic, sizeof(zid_magic)) == 0 &&
	       (head[7] == '1' || head[7] == '2');
}

/* The header, checked against the file's size: 0 or -EINVAL/-EIO/... with why set. */
static int zid_head(struct zsrc *src, uint64_t fsize, struct zid_idx *x, struct zerr *why)
{
	unsigned char h[ZID_HDR2];
	ssize_t n = zsrc_pread(src, h, sizeof(h), 0);

	if (n < 0)
		return zerr_set(why, (int)n, 0, "cannot read: %s", strerror((int)-n));
	x->hdr = n >= 8 && h[7] == '2' ? ZID_HDR2 : ZID_HDR1;
	if ((uint64_t)n < x->hdr)
		return zerr_set(why, -EINVAL, (uint64_t)n, "zid header cut short");
	x->usize = get64(h + 8);
	x->chunk = x->hdr == ZID_HDR2 ? get64(h + 16) : ZID_CHUNK;
	if (x->chunk < ZID_CHUNK_MIN)
		return zerr_set(why, -EINVAL, 16, "zid entries of %" PRIu64 " bytes: too small",
				x->chunk);
	if (fsize < x->hdr || x->usize != fsize - x->hdr)
		return zerr_set(why, -EINVAL, 8,
				"zid header says %" PRIu64 " bytes, the file has %" PRIu64,
				x->usize, fsize < x->hdr ? 0 : fsize - x->hdr);
	return 0;
}

static int zid_probe(struct zsrc *src, uint64_t size, size_t index_max, struct zerr *why)
{
	struct zid_idx x;

	(void)index_max;
	return zid_head(src, size, &x, why);
}

static uint64_t zid_rec_max(uint64_t src_size, uint64_t span)
{
	(void)src_size;
	(void)span;
	return IF_HDR + IF_KEYMAX + IF_REC + IF_CRC;
}

static int zid_rec_fits(const unsigned char *h, uint64_t flen, uint64_t src_size, uint64_t span,
			struct zerr *err)
{
	(void)span;
	return idxrec_fits_records(h, flen, 1, IF_REC, src_size, err);
}

/* The one record: the content the source's size leaves after the header, in our chunks. */
static int zid_rec_check(const unsigned char *b, size_t len, size_t off, struct idxfile_info *in,
			 struct zerr *err)
{
	uint64_t usize = get64(b + off + ZR_USIZE), chunk = get64(b + off + ZR_CHUNK);
	uint64_t hdr = get64(b + off + ZR_HDR);

	if (len != off + IF_REC + IF_CRC || in->npoints != 1 || in->members != 1)
		return BAD(off, "a zid index holds one record");
	if ((hdr != ZID_HDR1 && hdr != ZID_HDR2) || in->id.size < hdr ||
	    usize != in->id.size - hdr || in->usize != usize || chunk < ZID_CHUNK_MIN ||
	    (hdr == ZID_HDR1 && chunk != ZID_CHUNK) || !idxrec_zero(b + off + ZR_RSV, 8))
		return BAD(off, "zid record disagrees with a %" PRIu64 "-byte source", in->id.size);
	in->wbytes = 0;
	return 0;
}

/* recs: a struct zid_idx. */
static int zid_rec_size(const struct idxfile_id *id, const void *recs, size_t plen, size_t *n)
{
	const struct zid_idx *x = recs;

	if (x->usize + x->hdr != id->size)
		return -EINVAL;
	*n = IF_HDR + plen + IF_REC + IF_CRC;
	return 0;
}

static void zid_rec_put(unsigned char *b, size_t off, const void *recs)
{
	const struct zid_idx *x = recs;

	put64(b + H_USIZE, x->usize);
	put64(b + H_MEMBERS, 1);
	put64(b + H_NPOINTS, 1);
	put64(b + off + ZR_USIZE, x->usize);
	put64(b + off + ZR_CHUNK, x->chunk);
	put64(b + off + ZR_HDR, x->hdr);
}

/* out: a struct zid_idx. */
static int zid_rec_get(const unsigned char *b, size_t off, const struct idxfile_info *in, void *out,
		       struct zerr *err)
{
	struct zid_idx *x = out;

	(void)in;
	(void)err;
	x->usize = get64(b + off + ZR_USIZE);
	x->chunk = get64(b + off + ZR_CHUNK);
	x->hdr = get64(b + off + ZR_HDR);
	return 0;
}

static const struct fmt_saved zid_saved;

/* fmttab_saved: the mount's load. */
static int zid_fresh(const struct idxstore *dir, const char *real, struct zsrc *src,
		     struct zerr *err)
{
	struct idxfile_id id;
	struct zid_idx x;
	int ret = idxfile_identify(src, &id);

	return ret < 0 ? ret : idxfile_load_recs(dir, real, &id, &zid_saved, 0, &x, err);
}

static const struct fmt_saved zid_saved = {
	.kind = ZID_KIND,
	.name = "zid",
	.ext = IDXFILE_EXT,
	.max = zid_rec_max,
	.fits = zid_rec_fits,
	.check = zid_rec_check,
	.size = zid_rec_size,
	.put = zid_rec_put,
	.get = zid_rec_get,
	.fresh = zid_fresh,
};

/*
 * With an index_dir: the saved index of this version, if it says what the
 * header says (loaded), else a new one saved (built).
 */
static void zid_persist(struct reader *r, const struct zid_idx *x)
{
	struct idxfile_id id;
	struct zid_idx got = { 0 };

	if (!r->opts.index_dir || !idxfile_keyed(r->name) || idxfile_identify(r->src, &id) < 0)
		return;
	if (idxfile_load_recs(r->opts.index_dir, r->name, &id, &zid_saved, 0, &got, NULL) == 0 &&
	    memcmp(&got, x, sizeof(got)) == 0) {
		atomic_fetch_add(&r->ctx->stats.loaded, 1);
		return;
	}
	atomic_fetch_add(&r->ctx->stats.built, 1);
	r->saved = idxfile_save_recs(r->opts.index_dir, r->name, &id, &zid_saved, x, NULL) == 0;
}

static int zid_open(struct reader *r, struct zerr *why)
{
	struct zid_state *s = fmt_state(r);
	struct zid_idx x, *idx;
	size_t n;
	int ret = zid_head(r->src, (uint64_t)r->st.st_size, &x, why);

	/* a header that does not match the file is shown raw, as the probe said */
	if (ret < 0)
		return ret == -EINVAL ? -ENOTSUP : ret;
	idx = malloc(sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	*idx = x;
	r->idx = idx;
	atomic_fetch_add(&s->opens, 1);
	atomic_fetch_add(&r->ctx->stats.opened[r->fmt], 1);
	zid_persist(r, &x);
	n = (size_t)((x.usize + x.chunk - 1) / x.chunk);
	if (reader_map_init(r, n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		cmap_add(&r->map, (uint64_t)i * x.chunk);
		r->entry[r->map.n - 1] = i;
	}
	cmap_end(&r->map, x.usize);
	return 0;
}

static int zid_dec_open(struct reader *r, size_t k, void **dec, struct zerr *err)
{
	struct zid_dec *d = malloc(sizeof(*d));

	*dec = NULL;
	if (!d)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	d->hdr = ((const struct zid_idx *)r->idx)->hdr;
	d->start = d->pos = r->map.start[k];
	d->end = d->start + cmap_len(&r->map, k);
	*dec = d;
	return 0;
}

static ssize_t zid_dec_read(void *dec, struct zsrc *src, void *buf, size_t len, struct zerr *err)
{
	struct zid_dec *d = dec;
	size_t want = d->end - d->pos < len ? (size_t)(d->end - d->pos) : len;
	ssize_t n = zsrc_pread(src, buf, want, d->hdr + d->pos);

	if (n < 0)
		return zerr_set(err, (int)n, d->hdr + d->pos, "%s", strerror((int)-n));
	if ((size_t)n < want)
		return zerr_set(err, -EIO, d->hdr + d->pos + (uint64_t)n, "zid content cut short");
	d->pos += (uint64_t)n;
	return n;
}

static uint64_t zid_dec_tell(const void *dec)
{
	const struct zid_dec *d = dec;

	return d->pos - d->start;
}

static size_t zid_dec_cost(const void *dec)
{
	(void)dec;
	return sizeof(struct zid_dec);
}

static void zid_extent(const struct reader *r, size_t k0, size_t k1, uint64_t *cstart,
		       uint64_t *cend)
{
	uint64_t hdr = ((const struct zid_idx *)r->idx)->hdr;

	*cstart = hdr + r->map.start[k0];
	*cend = hdr + r->map.start[k1] + cmap_len(&r->map, k1);
}

/*
 * Checkpoints inside one entry (fmt.h's ck).  A blob is the magic and the
 * source offset the decoder goes on from: all the identity needs, and
 * enough for ck->open to tell a blob of this entry from any other.
 */
#define ZID_BLOB 16
static const unsigned char zid_ck_magic[8] = { 'Z', 'I', 'D', 'C', 'K', 'P', 'T', '1' };

/* One piece of entry k's build at entry offset off: read from src, fed to b. */
static int zid_ck_piece(struct zsrc *src, uint64_t coff, unsigned char *buf, size_t want,
			struct ckpt_build *b, struct zerr *err)
{
	ssize_t n = zsrc_pread(src, buf, want, coff);
	int ret;

	if (n < 0)
		return zerr_set(err, (int)n, coff, "%s", strerror((int)-n));
	if ((size_t)n < want)
		return zerr_set(err, -EIO, coff + (uint64_t)n, "zid content cut short");
	ret = ckpt_build_out(b, buf, want);
	return ret < 0 ? zerr_set(err, ret, coff, "checkpoint pass: %s", strerror(-ret)) : 0;
}

/* The whole entry through b, a point at the first piece end at or past every span bytes. */
static int zid_ck_build(struct reader *r, struct zsrc *src, size_t k, uint64_t span,
			struct ckpt_build *b, struct zerr *err)
{
	const struct zid_idx *x = r->idx;
	uint64_t base = x->hdr + r->map.start[k], len = cmap_len(&r->map, k), off = 0;
	uint64_t next = span;
	unsigned char *buf = malloc(CKPT_PIECE), blob[ZID_BLOB];
	int ret = buf ? 0 : zerr_set(err, -ENOMEM, 0, "out of memory");

	memcpy(blob, zid_ck_magic, sizeof(zid_ck_magic));
	while (ret == 0 && off < len) {
		size_t want = len - off < CKPT_PIECE ? (size_t)(len - off) : CKPT_PIECE;

		ret = zid_ck_piece(src, base + off, buf, want, b, err);
		off += want;
		if (ret == 0 && off >= next && off < len) {
			put64(blob + 8, base + off);
			ret = ckpt_build_point(b, off, blob, sizeof(blob));
			if (ret < 0)
				zerr_set(err, ret, base + off, "checkpoint: %s", strerror(-ret));
			next = off + span;
		}
	}
	free(buf);
	return ret;
}

/* A decoder at the blob's source offset, which must lie inside entry k (blob NULL: its start). */
static int zid_ck_open(struct reader *r, size_t k, const void *blob, size_t len, void **dec,
		       struct zerr *err)
{
	const struct zid_idx *x = r->idx;
	uint64_t start = x->hdr + r->map.start[k], end = start + cmap_len(&r->map, k), at;
	int ret = zid_dec_open(r, k, dec, err);

	if (ret < 0 || !blob)
		return ret;
	at = len == ZID_BLOB ? get64((const unsigned char *)blob + 8) : 0;
	if (len != ZID_BLOB || memcmp(blob, zid_ck_magic, sizeof(zid_ck_magic)) != 0 ||
	    at <= start || at >= end) {
		free(*dec);
		*dec = NULL;
		return zerr_set(err, -EINVAL, start, "not a checkpoint of zid chunk %zu",
				r->entry[k]);
	}
	((struct zid_dec *)*dec)->pos = at - x->hdr;
	return 0;
}

static const struct fmt_ck zid_ck = {
	.build = zid_ck_build,
	.open = zid_ck_open,
	.ops = { zid_dec_read, zid_dec_cost, free },
};

static void zid_info(const struct reader *r, struct reader_info *in)
{
	in->streams = 1;
	in->blocks = r->map.n;
}

static int zid_ctx_new(void **state)
{
	*state = calloc(1, sizeof(struct zid_state));
	return *state ? 0 : -ENOMEM;
}

static int zid_info_line(const struct reader_info *in, char *out, size_t len)
{
	return snprintf(out, len,
			"zid\tchunks=%" PRIu64 "\tcompressed=%" PRIu64 "\tuncompressed=%" PRIu64,
			in->blocks, in->csize, in->usize);
}

static int zid_info_counts(const struct reader_info *in, char *out, size_t len)
{
	return snprintf(out, len, "chunks=%" PRIu64 "\n", in->blocks);
}

static int zid_advice(enum fmttab_advice what, const char *bs, char *out, size_t len)
{
	(void)bs;
	return snprintf(out, len, "%s", what == FMTTAB_UNIT ? "chunk" : "");
}

static const struct fmt_suffix zid_suffixes[] = {
	{ ".zid", "" },
	{ ".tzid", ".tar" },
	{ NULL, NULL },
};

const struct fmt fmt_zid = {
	.name = "zid",
	.unit = "chunk",
	.probe = zid_probe,
	.open = zid_open,
	.free = free,
	.dec_open = zid_dec_open,
	.dec_read = zid_dec_read,
	.dec_tell = zid_dec_tell,
	.dec_cost = zid_dec_cost,
	.dec_close = free,
	.extent = zid_extent,
	.info = zid_info,
	.ck = &zid_ck,
	.sniff = zid_sniff,
	.suffixes = zid_suffixes,
	.bg = FMTTAB_BG_INDEX,
	.counter = "zid_indexes",
	.saved = &zid_saved,
	.ctx_new = zid_ctx_new,
	.ctx_free = free,
	.info_line = zid_info_line,
	.info_counts = zid_info_counts,
	.advice = zid_advice,
};
