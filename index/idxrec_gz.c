/* SPDX-License-Identifier: MIT */
/*
 * gzip checkpoint records (kind 1; idxrec.h): after the key field, one
 * 32-byte record per checkpoint (uncompressed and compressed offsets, bit
 * offset, window sizes, the span's CRC32), then the compressed windows end
 * to end.  A record's bounds come from deflate itself: at most 1032 bytes
 * out per byte in, checkpoints at least span apart, no window compressed
 * to more than twice its 32 KiB.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "idxrec.h"

#define IF_RATIO  1032u /* deflate's most output per input byte: 258 bytes from 2 bits */
#define IF_MAX_WZ (2u * GZDEC_WINDOW) /* no deflate encoder expands 32 KiB this much */

/* Checkpoint record field offsets. */
enum { P_UOFF = 0, P_COFF = 8, P_WSIZE = 16, P_WZSIZE = 20, P_BITS = 24, P_RSV = 25, P_CRC = 28 };

uint64_t idxrec_gz_max(uint64_t src_size, uint64_t span)
{
	uint64_t points, len;

	if (span < IF_MIN_SPAN)
		span = IF_MIN_SPAN;
	if (span > GZDEC_MAX_SPAN)
		span = GZDEC_MAX_SPAN;
	if (__builtin_mul_overflow(src_size, (uint64_t)IF_RATIO, &points))
		return UINT64_MAX;
	points = points / span + 1;
	if (__builtin_mul_overflow(points, (uint64_t)(IF_REC + IF_MAX_WZ), &len) ||
	    __builtin_add_overflow(len, (uint64_t)(IF_HDR + IF_KEYMAX + IF_CRC), &len))
		return UINT64_MAX;
	return len;
}

int idxrec_gz_fits(const unsigned char *h, uint64_t flen, uint64_t src_size, uint64_t span,
		   struct zerr *err)
{
	uint64_t can =
		src_size <= UINT64_MAX / IF_RATIO ? src_size * IF_RATIO / span + 1 : UINT64_MAX;

	return idxrec_fits_records(h, flen, can, IF_REC + IF_MAX_WZ, src_size, err);
}

/* The gzip records and windows from off on (the envelope checked the rest).  0 or -EBADMSG. */
int idxrec_gz_check(const unsigned char *b, size_t len, size_t off, struct idxfile_info *in,
		    struct zerr *err)
{
	uint64_t usize = in->usize, csize = in->id.size, avail, wtotal = 0, prev_uoff = 0,
		 prev_coff = 0;

	if (in->span < IF_MIN_SPAN || in->span > GZDEC_MAX_SPAN)
		return BAD(H_SPAN, "span %" PRIu64 " out of range", in->span);
	/* deflate's ratio bounds usize by the source, which also keeps st_size positive */
	if (usize > INT64_MAX || (csize <= UINT64_MAX / IF_RATIO && usize > csize * IF_RATIO))
		return BAD(H_USIZE,
			   "uncompressed size %" PRIu64 " impossible for %" PRIu64
			   " compressed bytes",
			   usize, csize);
	if (get16(b + H_TRAILING) > GZDEC_TRAIL_GARBAGE || get64(b + H_TRAILOFF) > csize)
		return BAD(H_TRAILOFF, "bad trailing-data fields");

	avail = len - IF_CRC - off;
	if (in->npoints == 0 || in->npoints > avail / IF_REC)
		return BAD(H_NPOINTS, "%" PRIu64 " checkpoints cannot fit in the file",
			   in->npoints);
	/* checkpoints are span apart: what idxfile_max_size counts on */
	if (csize <= UINT64_MAX / IF_RATIO && in->npoints - 1 > csize * IF_RATIO / in->span)
		return BAD(H_NPOINTS,
			   "%" PRIu64 " checkpoints, more than a %" PRIu64 "-byte source can have",
			   in->npoints, csize);

	for (uint64_t i = 0; i < in->npoints; i++, off += IF_REC) {
		const unsigned char *r = b + off;
		uint64_t uoff = get64(r + P_UOFF), coff = get64(r + P_COFF);
		uint32_t wsize = get32(r + P_WSIZE), wzsize = get32(r + P_WZSIZE);

		/* strictly ascending from 0; a checkpoint may sit at usize itself (a final
		 * empty block or member follows it), which gzdec_index_build does produce */
		if ((i == 0 && uoff != 0) || (i > 0 && uoff <= prev_uoff) || uoff > usize)
			return BAD(off, "checkpoint %" PRIu64 ": uoff %" PRIu64 " out of order", i,
				   uoff);
		if (coff > csize || coff < prev_coff || (r[P_BITS] && coff == 0) || r[P_BITS] > 7)
			return BAD(off, "checkpoint %" PRIu64 ": bad input position", i);
		if (wsize > GZDEC_WINDOW || wsize > uoff || !wsize != !wzsize || wzsize > IF_MAX_WZ)
			return BAD(off, "checkpoint %" PRIu64 ": bad window sizes", i);
		if (!idxrec_zero(r + P_RSV, P_CRC - P_RSV))
			return BAD(off, "checkpoint %" PRIu64 ": reserved bytes not zero", i);
		if (__builtin_add_overflow(wtotal, wzsize, &wtotal))
			return BAD(off, "window sizes overflow");
		prev_uoff = uoff;
		prev_coff = coff;
	}
	in->wbytes = wtotal;
	if (wtotal != len - IF_CRC - off)
		return BAD(off, "windows take %" PRIu64 " bytes, the file has %zu", wtotal,
			   len - IF_CRC - off);
	return 0;
}

int idxrec_gz_size(const struct idxfile_id *id, const void *recs, size_t plen, size_t *n)
{
	const struct gzdec_index *idx = recs;

	if (id->size != idx->csize || !idx->points ||
	    __builtin_mul_overflow(idx->npoints, (size_t)IF_REC, n) ||
	    __builtin_add_overflow(*n, IF_HDR + IF_CRC + plen, n))
		return -EINVAL;
	for (size_t i = 0; i < idx->npoints; i++)
		if ((idx->points[i].wzsize && !idx->points[i].wz) ||
		    __builtin_add_overflow(*n, idx->points[i].wzsize, n))
			return -EINVAL;
	return 0;
}

void idxrec_gz_put(unsigned char *b, size_t off, const void *recs)
{
	const struct gzdec_index *idx = recs;
	size_t woff = off + idx->npoints * IF_REC;

	put64(b + H_USIZE, idx->usize);
	put64(b + H_MEMBERS, idx->members);
	put64(b + H_SPAN, idx->span);
	put64(b + H_TRAILOFF, idx->trail_off);
	put16(b + H_TRAILING, (uint16_t)idx->trailing);
	put64(b + H_NPOINTS, idx->npoints);
	for (size_t i = 0; i < idx->npoints; i++, off += IF_REC) {
		const struct gzdec_point *pt = &idx->points[i];

		put64(b + off + P_UOFF, pt->uoff);
		put64(b + off + P_COFF, pt->coff);
		put32(b + off + P_WSIZE, pt->wsize);
		put32(b + off + P_WZSIZE, pt->wzsize);
		b[off + P_BITS] = pt->bits;
		put32(b + off + P_CRC, pt->crc);
		if (pt->wzsize)
			memcpy(b + woff, pt->wz, pt->wzsize);
		woff += pt->wzsize;
	}
}

static int build(const unsigned char *b, size_t off, const struct idxfile_info *in,
		 struct gzdec_index **out)
{
	struct gzdec_index *idx = calloc(1, sizeof(*idx));
	size_t woff;

	if (!idx)
		return -ENOMEM;
	idx->usize = in->usize;
	idx->csize = in->id.size;
	idx->members = in->members;
	idx->span = in->span;
	idx->trailing = (enum gzdec_trail)get16(b + H_TRAILING);
	idx->trail_off = get64(b + H_TRAILOFF);
	idx->npoints = (size_t)in->npoints; /* <= file size / IF_REC */
	idx->points = calloc(idx->npoints, sizeof(*idx->points));
	if (!idx->points) {
		free(idx);
		return -ENOMEM;
	}
	woff = off + idx->npoints * IF_REC;
	for (size_t i = 0; i < idx->npoints; i++, off += IF_REC) {
		struct gzdec_point *pt = &idx->points[i];

		pt->uoff = get64(b + off + P_UOFF);
		pt->coff = get64(b + off + P_COFF);
		pt->wsize = get32(b + off + P_WSIZE);
		pt->wzsize = get32(b + off + P_WZSIZE);
		pt->bits = b[off + P_BITS];
		pt->crc = get32(b + off + P_CRC);
		if (!pt->wzsize)
			continue;
		pt->wz = malloc(pt->wzsize);
		if (!pt->wz) {
			gzdec_index_free(idx); /* later windows are still NULL */
			return -ENOMEM;
		}
		memcpy(pt->wz, b + woff, pt->wzsize);
		woff += pt->wzsize;
	}
	*out = idx;
	return 0;
}

int idxrec_gz_get(const unsigned char *b, size_t off, const struct idxfile_info *in, void *out,
		  struct zerr *err)
{
	return build(b, off, in, out) < 0 ? zerr_set(err, -ENOMEM, 0, "out of memory") : 0;
}

/* idxfile.h's gzip calls: the envelope's, with the gzip kind (fmt_gz.c's saved). */
extern const struct fmt fmt_gzip;

uint64_t idxfile_max_size(uint64_t src_size, uint64_t span)
{
	return idxrec_gz_max(src_size, span);
}

int idxfile_save(const struct idxstore *store, const char *src_abspath, const struct idxfile_id *id,
		 const struct gzdec_index *idx, uint64_t *bytes_written)
{
	return idxfile_save_recs(store, src_abspath, id, fmt_gzip.saved, idx, bytes_written);
}

int idxfile_load(const struct idxstore *store, const char *src_abspath, const struct idxfile_id *id,
		 uint64_t span_wanted, struct gzdec_index **out, struct zerr *err)
{
	*out = NULL;
	return idxfile_load_recs(store, src_abspath, id, fmt_gzip.saved, span_wanted, out, err);
}

int idxfile_remove(const struct idxstore *store, const char *src_abspath,
		   const struct idxfile_id *id)
{
	return idxfile_remove_recs(store, src_abspath, id, fmt_gzip.saved);
}
