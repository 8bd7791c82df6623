/* SPDX-License-Identifier: MIT */
/*
 * A dummy format for tests only: "zid", the identity.  A file is a 16-byte
 * header (the magic "ZMIDENT1", then the content's size, 64-bit
 * little-endian) followed by the content as it is; one map entry per MiB.
 *
 * It exists to prove that a format is added through the table alone: the
 * test build (tests/fmt/CMakeLists.txt) compiles index/fmttab.c with
 * ZMOUNT_FMT_EXTRA=fmt_zid and links this file in, and nothing else
 * changes.  It fills every hook fmt.h lists, keeps its own per-context
 * state (opens counted in fmt_state) and its own counter (zid_indexes),
 * and asks the background indexer for the index pass.
 *
 * It saves its index too, through the saved hook alone (zid_saved): kind
 * ZID_KIND, one 32-byte record (the content size and the chunk size), in
 * the same "<h>.zmi" files, envelope, trust and identity as gzip's.  An
 * open with an index_dir loads it (counted as a loaded index) or saves one
 * (a built one), so the tools' build and info see a format that saves.
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

#define ZID_HDR	  16
#define ZID_CHUNK (1u << 20)

#define ZID_KIND 77 /* its index files' kind: any number no other kind takes */

/* Its one record's fields. */
enum { ZR_USIZE = 0, ZR_CHUNK = 8, ZR_RSV = 16 };

static const unsigned char zid_magic[8] = { 'Z', 'M', 'I', 'D', 'E', 'N', 'T', '1' };

/* Per context: opens of zid files (the format's own state, ctx_new's). */
struct zid_state {
	atomic_uint_fast64_t opens;
};

struct zid_dec {
	uint64_t start, end, pos; /* content offsets: the entry's, and where the next read goes */
};

static int zid_sniff(struct zsrc *src, const unsigned char *head, size_t n)
{
	(void)src;
	return n >= sizeof(zid_magic) && memcmp(head, zid_magic, sizeof(zid_magic)) == 0;
}

/* The content size the header states, checked against the file's size. */
static int zid_size(struct zsrc *src, uint64_t fsize, uint64_t *usize, struct zerr *why)
{
	unsigned char h[ZID_HDR];
	ssize_t n = zsrc_pread(src, h, sizeof(h), 0);

	if (n < 0)
		return zerr_set(why, (int)n, 0, "cannot read: %s", strerror((int)-n));
	if (n < ZID_HDR)
		return zerr_set(why, -EINVAL, (uint64_t)n, "zid header cut short");
	*usize = 0;
	for (int i = 7; i >= 0; i--)
		*usize = *usize << 8 | h[8 + i];
	if (*usize != fsize - ZID_HDR)
		return zerr_set(why, -EINVAL, 8,
				"zid header says %" PRIu64 " bytes, the file has %" PRIu64, *usize,
				fsize - ZID_HDR);
	return 0;
}

static int zid_probe(struct zsrc *src, uint64_t size, size_t index_max, struct zerr *why)
{
	uint64_t usize;

	(void)index_max;
	return zid_size(src, size, &usize, why);
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
	uint64_t usize = get64(b + off + ZR_USIZE);

	if (len != off + IF_REC + IF_CRC || in->npoints != 1 || in->members != 1)
		return BAD(off, "a zid index holds one record");
	if (in->id.size < ZID_HDR || usize != in->id.size - ZID_HDR || in->usize != usize ||
	    get64(b + off + ZR_CHUNK) != ZID_CHUNK || !idxrec_zero(b + off + ZR_RSV, 16))
		return BAD(off, "zid record disagrees with a %" PRIu64 "-byte source", in->id.size);
	in->wbytes = 0;
	return 0;
}

/* recs: the content size (a uint64_t). */
static int zid_rec_size(const struct idxfile_id *id, const void *recs, size_t plen, size_t *n)
{
	if (*(const uint64_t *)recs + ZID_HDR != id->size)
		return -EINVAL;
	*n = IF_HDR + plen + IF_REC + IF_CRC;
	return 0;
}

static void zid_rec_put(unsigned char *b, size_t off, const void *recs)
{
	uint64_t usize = *(const uint64_t *)recs;

	put64(b + H_USIZE, usize);
	put64(b + H_MEMBERS, 1);
	put64(b + H_NPOINTS, 1);
	put64(b + off + ZR_USIZE, usize);
	put64(b + off + ZR_CHUNK, ZID_CHUNK);
}

/* out: the content size (a uint64_t). */
static int zid_rec_get(const unsigned char *b, size_t off, const struct idxfile_info *in, void *out,
		       struct zerr *err)
{
	(void)in;
	(void)err;
	*(uint64_t *)out = get64(b + off + ZR_USIZE);
	return 0;
}

static const struct fmt_saved zid_saved;

/* fmttab_saved: the mount's load. */
static int zid_fresh(const char *dir, const char *real, struct zsrc *src, struct zerr *err)
{
	struct idxfile_id id;
	uint64_t usize;
	int ret = idxfile_identify(src, &id);

	return ret < 0 ? ret : idxfile_load_recs(dir, real, &id, &zid_saved, 0, &usize, err);
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
static void zid_persist(struct reader *r, uint64_t usize)
{
	struct idxfile_id id;
	uint64_t got = 0;

	if (!r->opts.index_dir || !idxfile_keyed(r->name) || idxfile_identify(r->src, &id) < 0)
		return;
	if (idxfile_load_recs(r->opts.index_dir, r->name, &id, &zid_saved, 0, &got, NULL) == 0 &&
	    got == usize) {
		atomic_fetch_add(&r->ctx->stats.loaded, 1);
		return;
	}
	atomic_fetch_add(&r->ctx->stats.built, 1);
	r->saved =
		idxfile_save_recs(r->opts.index_dir, r->name, &id, &zid_saved, &usize, NULL) == 0;
}

static int zid_open(struct reader *r, struct zerr *why)
{
	struct zid_state *s = fmt_state(r);
	uint64_t usize, *idx;
	size_t n;
	int ret = zid_size(r->src, (uint64_t)r->st.st_size, &usize, why);

	/* a header that does not match the file is shown raw, as the probe said */
	if (ret < 0)
		return ret == -EINVAL ? -ENOTSUP : ret;
	idx = malloc(sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	*idx = usize;
	r->idx = idx;
	atomic_fetch_add(&s->opens, 1);
	atomic_fetch_add(&r->ctx->stats.opened[r->fmt], 1);
	zid_persist(r, usize);
	n = (size_t)((usize + ZID_CHUNK - 1) / ZID_CHUNK);
	if (reader_map_init(r, n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		cmap_add(&r->map, (uint64_t)i * ZID_CHUNK);
		r->entry[r->map.n - 1] = i;
	}
	cmap_end(&r->map, usize);
	return 0;
}

static int zid_dec_open(struct reader *r, size_t k, void **dec, struct zerr *err)
{
	struct zid_dec *d = malloc(sizeof(*d));

	*dec = NULL;
	if (!d)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	d->start = d->pos = r->map.start[k];
	d->end = d->start + cmap_len(&r->map, k);
	*dec = d;
	return 0;
}

static ssize_t zid_dec_read(void *dec, struct zsrc *src, void *buf, size_t len, struct zerr *err)
{
	struct zid_dec *d = dec;
	size_t want = d->end - d->pos < len ? (size_t)(d->end - d->pos) : len;
	ssize_t n = zsrc_pread(src, buf, want, ZID_HDR + d->pos);

	if (n < 0)
		return zerr_set(err, (int)n, ZID_HDR + d->pos, "%s", strerror((int)-n));
	if ((size_t)n < want)
		return zerr_set(err, -EIO, ZID_HDR + d->pos + (uint64_t)n, "zid content cut short");
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
	*cstart = ZID_HDR + r->map.start[k0];
	*cend = ZID_HDR + r->map.start[k1] + cmap_len(&r->map, k1);
}

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
