/* SPDX-License-Identifier: MIT */
/*
 * Checkpoint set records (kind 3; idxrec.h), in "<h>.zmc": after the key
 * field, one 32-byte record per set (its entry's start and size, blob
 * bytes, points and CRC32s), then each set's 16-byte point records, its
 * CRC32s and its blobs end to end.  Sizes are checked before anything is
 * allocated (idxrec_ckpt_check), and each set is then parsed and passed
 * through ckpt_set_check.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "idxrec.h"

/*
 * Checkpoint sets (kind 3).  Output per compressed byte: zstd's IF_ZRATIO
 * also bounds an xz Block, since LZMA's range coder spends at least 0.022
 * bits per decision (a probability stops at 2017/2048) and a 273-byte
 * match takes at least 14 decisions: under 7100 bytes per byte.
 */
#define IF_CRATIO IF_ZRATIO
#define IF_CSET	  32u	      /* a set record */
#define IF_CPT	  16u	      /* a point record */
#define IF_CCRC	  4u	      /* a piece's CRC32 */
#define IF_CSTATE (64u << 10) /* codec state per point: an LZMA2 model at lc+lp=4 is 28 KiB */
#define IF_CWIN	  4u	      /* window bytes per source byte, all points together */

/* Checkpoint set record and point record field offsets. */
enum { S_START = 0, S_USIZE = 8, S_BLOBLEN = 16, S_NPOINTS = 24, S_NCRC = 28 };
enum { C_UOFF = 0, C_BLOBLEN = 8, C_PIECE0 = 12 };

static uint64_t clamp_span(uint64_t span)
{
	return span < IF_MIN_SPAN ? IF_MIN_SPAN : span > GZDEC_MAX_SPAN ? GZDEC_MAX_SPAN : span;
}

/*
 * The most bytes m sets with k points past their first ones, covering u
 * bytes of output, can take after the path (idxfile_max_size_ckpt's
 * terms): records, CRC32s (one per whole piece of output, and one partial
 * piece per span), codec state per point but a set's first (which has no
 * blob), and windows up to IF_CWIN bytes per source byte.
 */
static uint64_t ckpt_most(uint64_t m, uint64_t k, uint64_t u, uint64_t src_size)
{
	uint64_t len = sat_mul(m, IF_CSET + IF_CPT + IF_CCRC);

	len = sat_add(len, sat_mul(k, IF_CPT + IF_CCRC + IF_CSTATE));
	len = sat_add(len, sat_mul(u / CKPT_PIECE, IF_CCRC));
	return sat_add(len, sat_mul(src_size, IF_CWIN));
}

static uint64_t idxrec_ckpt_max(uint64_t src_size, uint64_t span)
{
	uint64_t u = sat_mul(src_size, IF_CRATIO);

	return sat_add(IF_HDR + IF_KEYMAX + IF_CRC,
		       ckpt_most(src_size / IF_ZMIN_FRAME, u / clamp_span(span), u, src_size));
}

/*
 * fits for checkpoint sets: m sets of n points in all, covering u
 * bytes of output, as the header says.  A source of src_size bytes has at
 * most src_size / 9 entries and src_size * IF_CRATIO bytes of output, and a
 * set at most one point per span past its first (idxrec_ckpt_check's rules); the
 * file then takes at least a record, a CRC32 and (past each set's first
 * point) a blob byte per point, and at most ckpt_most.  0 or -EBADMSG.
 */
static int idxrec_ckpt_fits(const unsigned char *h, uint64_t flen, uint64_t src_size, uint64_t span,
			    struct zerr *err)
{
	uint64_t n = get64(h + H_NPOINTS), m = get64(h + H_MEMBERS), u = get64(h + H_USIZE),
		 plen = get32(h + H_PATHLEN), fixed = IF_HDR + plen + IF_CRC, least, most;

	if (m == 0 || m > src_size / IF_ZMIN_FRAME || n < m || u > sat_mul(src_size, IF_CRATIO) ||
	    n - m > u / span || plen == 0 || plen > IF_KEYMAX)
		return BAD(H_NPOINTS,
			   "%" PRIu64 " sets of %" PRIu64 " points in all over %" PRIu64
			   " bytes, or a %" PRIu64 "-byte path: impossible for a %" PRIu64
			   "-byte source",
			   m, n, u, plen, src_size);
	least = sat_add(fixed,
			sat_add(sat_mul(m, IF_CSET), sat_add(sat_mul(n, IF_CPT + IF_CCRC), n - m)));
	most = sat_add(fixed, ckpt_most(m, n - m, u, src_size));
	if (flen < least || flen > most)
		return BAD(flen,
			   "file is %" PRIu64 " bytes; its %" PRIu64 " points take %" PRIu64
			   " to %" PRIu64,
			   flen, n, least, most);
	return 0;
}

/*
 * The set whose record is at b + r and whose points, CRC32s and blobs
 * start at b + off (idxrec_ckpt_check sized them), in *out (free with
 * ckpt_set_free; with copy false, its blob points into b: set it to NULL
 * first).  Blobs must be packed end to end, and the set must pass
 * ckpt_set_check.  0, -ENOMEM or -EBADMSG.
 */
static int parse_set(const unsigned char *b, size_t r, size_t off, bool copy, struct ckpt_set **out,
		     struct zerr *err)
{
	struct ckpt_set *s = calloc(1, sizeof(*s));
	const unsigned char *crc, *blob;
	uint64_t boff = 0;
	int ret = 0;

	*out = s;
	if (!s)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	s->usize = get64(b + r + S_USIZE);
	s->n = get32(b + r + S_NPOINTS); /* >= 1: idxrec_ckpt_check */
	s->ncrc = get32(b + r + S_NCRC); /* >= n */
	s->blob_len = get64(b + r + S_BLOBLEN);
	crc = b + off + s->n * IF_CPT;
	blob = crc + s->ncrc * IF_CCRC;
	s->pt = malloc(s->n * sizeof(*s->pt));
	s->crc = malloc(s->ncrc * sizeof(*s->crc));
	s->blob = copy && s->blob_len ? malloc(s->blob_len) : copy ? NULL : (uint8_t *)blob;
	if (!s->pt || !s->crc || (copy && s->blob_len && !s->blob))
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	for (size_t i = 0; i < s->n; i++, off += IF_CPT) {
		s->pt[i].uoff = get64(b + off + C_UOFF);
		s->pt[i].blob_len = get32(b + off + C_BLOBLEN);
		s->pt[i].piece0 = get32(b + off + C_PIECE0);
		s->pt[i].blob_off = boff;
		boff += s->pt[i].blob_len; /* n < 2^32 lengths < 2^32 */
	}
	for (size_t i = 0; i < s->ncrc; i++)
		s->crc[i] = get32(crc + i * IF_CCRC);
	if (copy && s->blob_len)
		memcpy(s->blob, blob, s->blob_len);
	if (boff != s->blob_len)
		ret = BAD(r, "blobs take %" PRIu64 " bytes, the set has %" PRIu64, boff,
			  s->blob_len);
	else if (ckpt_set_check(s) < 0)
		ret = BAD(r, "not a usable checkpoint set (points, blobs or pieces)");
	return ret;
}

/*
 * The checkpoint sets from off on: the set records, then each set's points,
 * CRC32s and blobs.  First the sizes, all without allocating (entries in
 * order, apart and inside usize; no more points than one per span; every
 * section inside the file and together filling it exactly), then each set
 * through parse_set.  0, -EBADMSG or -ENOMEM.
 */
static int idxrec_ckpt_check(const unsigned char *b, size_t len, size_t off,
			     struct idxfile_info *in, struct zerr *err)
{
	uint64_t csize = in->id.size, end = 0, pts = 0, blobs = 0, left = len - IF_CRC - off;
	size_t sec, r = off;
	int ret = 0;

	if (in->span < IF_MIN_SPAN || in->span > GZDEC_MAX_SPAN || get16(b + H_TRAILING) ||
	    get64(b + H_TRAILOFF))
		return BAD(H_SPAN, "span out of range or trailing-data fields set");
	if (in->usize > INT64_MAX || in->usize > sat_mul(csize, IF_CRATIO))
		return BAD(H_USIZE,
			   "uncompressed size %" PRIu64 " impossible for %" PRIu64
			   " compressed bytes",
			   in->usize, csize);
	if (in->members == 0 || in->members > csize / IF_ZMIN_FRAME || in->members > left / IF_CSET)
		return BAD(H_MEMBERS, "%" PRIu64 " sets cannot fit", in->members);
	sec = off + in->members * IF_CSET;
	for (uint64_t i = 0; i < in->members; i++, r += IF_CSET) {
		uint64_t start = get64(b + r + S_START), us = get64(b + r + S_USIZE), e, need;
		uint32_t np = get32(b + r + S_NPOINTS), nc = get32(b + r + S_NCRC);

		if (us == 0 || start < end || __builtin_add_overflow(start, us, &e) ||
		    e > in->usize)
			return BAD(r,
				   "set %" PRIu64 ": entry %" PRIu64 "+%" PRIu64 " out of order "
				   "or past %" PRIu64,
				   i, start, us, in->usize);
		if (np == 0 || np - 1 > (us - 1) / in->span || nc < np || nc > np + us / CKPT_PIECE)
			return BAD(r,
				   "set %" PRIu64 ": %" PRIu32 " points and %" PRIu32 " pieces "
				   "impossible for %" PRIu64 " bytes",
				   i, np, nc, us);
		need = sat_add((uint64_t)np * IF_CPT + (uint64_t)nc * IF_CCRC,
			       get64(b + r + S_BLOBLEN));
		if (need > len - IF_CRC - sec)
			return BAD(r, "set %" PRIu64 ": runs past the end of the file", i);
		sec += need;
		pts += np;
		blobs += get64(b + r + S_BLOBLEN);
		end = e;
	}
	if (pts != in->npoints || end != in->usize || sec != len - IF_CRC)
		return BAD(H_NPOINTS,
			   "sets hold %" PRIu64 " points and end at %" PRIu64 " and %zu: "
			   "the header says %" PRIu64 ", %" PRIu64 " and %zu",
			   pts, end, sec, in->npoints, in->usize, len - IF_CRC);
	in->wbytes = blobs;
	sec = off + in->members * IF_CSET;
	for (r = off; ret == 0 && r < off + in->members * IF_CSET; r += IF_CSET) {
		struct ckpt_set *s;

		ret = parse_set(b, r, sec, false, &s, err);
		sec += (uint64_t)get32(b + r + S_NPOINTS) * IF_CPT +
		       (uint64_t)get32(b + r + S_NCRC) * IF_CCRC + get64(b + r + S_BLOBLEN);
		if (s)
			s->blob = NULL; /* b's */
		ckpt_set_free(s);
	}
	return ret;
}

/* Bytes set s takes in a file: its points, CRC32s and used blob bytes; 0 if s is unusable. */
static uint64_t set_bytes(const struct ckpt_set *s)
{
	uint64_t len = 0;

	if (!s || !s->pt || !s->crc || ckpt_set_check(s) < 0 || s->n > UINT32_MAX ||
	    s->ncrc > UINT32_MAX)
		return 0;
	for (size_t i = 0; i < s->n; i++)
		len += s->pt[i].blob_len; /* each inside blob_len: ckpt_set_check */
	return sat_add(len, s->n * IF_CPT + s->ncrc * IF_CCRC);
}

/* Writes set s's record at b + r and its sections at b + off; returns the end of those. */
static size_t put_set(unsigned char *b, size_t r, size_t off, uint64_t start,
		      const struct ckpt_set *s)
{
	uint64_t blen = 0;
	size_t boff = off + s->n * IF_CPT + s->ncrc * IF_CCRC;

	for (size_t i = 0; i < s->n; i++, off += IF_CPT) {
		const struct ckpt_point *p = &s->pt[i];

		put64(b + off + C_UOFF, p->uoff);
		put32(b + off + C_BLOBLEN, p->blob_len);
		put32(b + off + C_PIECE0, p->piece0);
		if (p->blob_len)
			memcpy(b + boff, s->blob + p->blob_off, p->blob_len);
		boff += p->blob_len;
		blen += p->blob_len;
	}
	for (size_t i = 0; i < s->ncrc; i++, off += IF_CCRC)
		put32(b + off, s->crc[i]);
	put64(b + r + S_START, start);
	put64(b + r + S_USIZE, s->usize);
	put64(b + r + S_BLOBLEN, blen);
	put32(b + r + S_NPOINTS, (uint32_t)s->n);
	put32(b + r + S_NCRC, (uint32_t)s->ncrc);
	return boff;
}

static int ckpt_size(const struct idxfile_id *id, const void *recs, size_t plen, size_t *len)
{
	const struct idxrec_ckpt_recs *c = recs;
	const struct idxfile_ckpt *sets = c->sets;
	uint64_t size, end = 0, span = c->span;
	size_t n = c->n;

	if (!sets || n == 0 || span < IF_MIN_SPAN || span > GZDEC_MAX_SPAN)
		return -EINVAL;
	size = sat_add(IF_HDR + plen + IF_CRC, sat_mul(n, IF_CSET));
	for (size_t i = 0; i < n; i++) {
		uint64_t bytes = set_bytes(sets[i].set);

		if (bytes == 0 || sets[i].entry_start < end ||
		    __builtin_add_overflow(sets[i].entry_start, sets[i].set->usize, &end))
			return -EINVAL;
		size = sat_add(size, bytes);
	}
	if (size > idxrec_ckpt_max(id->size, span))
		return -EFBIG;
	*len = (size_t)size;
	return 0;
}

static void ckpt_put(unsigned char *b, size_t off, const void *recs)
{
	const struct idxrec_ckpt_recs *c = recs;
	const struct idxfile_ckpt *sets = c->sets;
	size_t n = c->n;
	uint64_t pts = 0;
	size_t r = off;

	off = r + n * IF_CSET;
	for (size_t i = 0; i < n; i++, r += IF_CSET) {
		off = put_set(b, r, off, sets[i].entry_start, sets[i].set);
		pts += sets[i].set->n;
	}
	put64(b + H_USIZE, n ? sets[n - 1].entry_start + sets[n - 1].set->usize : 0);
	put64(b + H_MEMBERS, n);
	put64(b + H_SPAN, c->span);
	put64(b + H_NPOINTS, pts);
}

static void free_sets(struct idxfile_ckpt *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		ckpt_set_free((struct ckpt_set *)v[i].set);
	free(v);
}

static int ckpt_get(const unsigned char *b, size_t off, const struct idxfile_info *in, void *out,
		    struct zerr *err)
{
	struct idxrec_ckpt_got *got = out;
	struct idxfile_ckpt *v;
	size_t r = off, i = 0;
	int ret = 0;

	got->v = NULL;
	got->n = 0;
	v = calloc(in->members,
		   sizeof(*v)); /* members >= 1, bounded by the file: idxrec_ckpt_check */
	if (!v)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	off = r + in->members * IF_CSET;
	for (; ret == 0 && i < in->members; i++, r += IF_CSET) {
		struct ckpt_set *s;

		ret = parse_set(b, r, off, true, &s, err); /* checked already: only -ENOMEM */
		v[i].entry_start = get64(b + r + S_START);
		v[i].set = s;
		off += (uint64_t)get32(b + r + S_NPOINTS) * IF_CPT +
		       (uint64_t)get32(b + r + S_NCRC) * IF_CCRC + get64(b + r + S_BLOBLEN);
	}
	if (ret < 0) {
		free_sets(v, i);
		return ret;
	}
	got->v = v;
	got->n = i;
	return 0;
}

const struct fmt_saved idxrec_ckpt_saved = {
	.kind = IDXFILE_KIND_CKPT,
	.name = "checkpoint",
	.ext = IDXFILE_EXT_CKPT,
	.spanned = true,
	.max = idxrec_ckpt_max,
	.fits = idxrec_ckpt_fits,
	.check = idxrec_ckpt_check,
	.size = ckpt_size,
	.put = ckpt_put,
	.get = ckpt_get,
};

uint64_t idxfile_max_size_ckpt(uint64_t src_size, uint64_t span)
{
	return idxrec_ckpt_max(src_size, span);
}

int idxfile_save_ckpt(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, uint64_t span, const struct idxfile_ckpt *sets,
		      size_t n, uint64_t *bytes_written)
{
	struct idxrec_ckpt_recs c = { .span = span, .sets = sets, .n = n };

	return idxfile_save_recs(store, src_abspath, id, &idxrec_ckpt_saved, &c, bytes_written);
}

int idxfile_load_ckpt(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, uint64_t span_wanted, struct idxfile_ckpt **out,
		      size_t *n, struct zerr *err)
{
	struct idxrec_ckpt_got got = { 0 };
	int ret = idxfile_load_recs(store, src_abspath, id, &idxrec_ckpt_saved, span_wanted, &got,
				    err);

	*out = ret == 0 ? got.v : NULL;
	*n = ret == 0 ? got.n : 0;
	return ret;
}

int idxfile_remove_ckpt(const struct idxstore *store, const char *src_abspath,
			const struct idxfile_id *id)
{
	return idxfile_remove_recs(store, src_abspath, id, &idxrec_ckpt_saved);
}
