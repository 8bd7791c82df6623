/* SPDX-License-Identifier: MIT */
/*
 * zstd frame records (kind 2; idxrec.h): after the key field, one 32-byte
 * record per frame (compressed offset and size, uncompressed size and where
 * that size came from).  The file alone shows only that the frames are in
 * order, inside the source and plausible; whether they are the source's
 * frames is idxrec_zstd_get's check against a fresh walk.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "idxrec.h"

/* zstd frame record field offsets. */
enum { Z_COFF = 0, Z_CSIZE = 8, Z_USIZE = 16, Z_SRC = 24, Z_RSV = 25 };

uint64_t idxrec_zstd_max(uint64_t src_size, uint64_t span)
{
	(void)span; /* frames are where the compressor put them */
	uint64_t frames = src_size / IF_ZMIN_FRAME;

	if (frames > ZSTDDEC_MAX_FRAMES)
		frames = ZSTDDEC_MAX_FRAMES;
	return IF_HDR + IF_KEYMAX + IF_CRC + frames * IF_REC;
}

int idxrec_zstd_fits(const unsigned char *h, uint64_t flen, uint64_t src_size, uint64_t span,
		     struct zerr *err)
{
	uint64_t can = src_size / IF_ZMIN_FRAME < ZSTDDEC_MAX_FRAMES ? src_size / IF_ZMIN_FRAME
								     : ZSTDDEC_MAX_FRAMES;

	(void)span;
	return idxrec_fits_records(h, flen, can, IF_REC, src_size, err);
}

/*
 * The zstd frame records from off on.  Only what the file alone can show:
 * frames in order, inside the source, apart, each at least 9 bytes, sizes
 * within 32768:1 and summing to usize.  Whether they are this source's
 * frames is idxfile_load_zstd's check against the walk.  0 or -EBADMSG.
 */
int idxrec_zstd_check(const unsigned char *b, size_t len, size_t off, struct idxfile_info *in,
		      struct zerr *err)
{
	uint64_t csize = in->id.size, next = 0, sum = 0, end;

	if (in->span != 0 || get16(b + H_TRAILING) != 0 || get64(b + H_TRAILOFF) != 0)
		return BAD(H_SPAN, "span or trailing-data fields set in a zstd index");
	if (in->npoints == 0 || in->npoints != in->members ||
	    in->npoints != (len - IF_CRC - off) / IF_REC || (len - IF_CRC - off) % IF_REC)
		return BAD(H_NPOINTS,
			   "%" PRIu64 " frame records (%" PRIu64 " frames) do not "
			   "fill the file",
			   in->npoints, in->members);
	if (in->npoints > csize / IF_ZMIN_FRAME || in->npoints > ZSTDDEC_MAX_FRAMES)
		return BAD(H_NPOINTS,
			   "%" PRIu64 " frames, more than a %" PRIu64 "-byte source can have",
			   in->npoints, csize);
	for (uint64_t i = 0; i < in->npoints; i++, off += IF_REC) {
		const unsigned char *r = b + off;
		uint64_t coff = get64(r + Z_COFF), fsize = get64(r + Z_CSIZE),
			 usize = get64(r + Z_USIZE);

		if (coff < next || fsize < IF_ZMIN_FRAME ||
		    __builtin_add_overflow(coff, fsize, &end) || end > csize)
			return BAD(off, "frame %" PRIu64 ": bad extent %" PRIu64 "+%" PRIu64, i,
				   coff, fsize);
		if (fsize <= UINT64_MAX / IF_ZRATIO && usize > fsize * IF_ZRATIO)
			return BAD(off,
				   "frame %" PRIu64 ": %" PRIu64 " bytes impossible from %" PRIu64
				   " compressed",
				   i, usize, fsize);
		if (r[Z_SRC] < ZSTDDEC_SRC_FCS || r[Z_SRC] > ZSTDDEC_SRC_MEASURED)
			return BAD(off, "frame %" PRIu64 ": unknown size source %u", i, r[Z_SRC]);
		if (!idxrec_zero(r + Z_RSV, IF_REC - Z_RSV))
			return BAD(off, "frame %" PRIu64 ": reserved bytes not zero", i);
		if (__builtin_add_overflow(sum, usize, &sum))
			return BAD(off, "frame sizes overflow");
		next = end;
	}
	if (sum != in->usize || sum > INT64_MAX)
		return BAD(H_USIZE, "frames sum to %" PRIu64 " bytes, the header says %" PRIu64,
			   sum, in->usize);
	in->wbytes = 0;
	return 0;
}

int idxrec_zstd_size(const struct idxfile_id *id, const void *recs, size_t plen, size_t *n)
{
	const struct zstddec_index *z = recs;

	if (id->size != z->csize || z->nframes == 0 || z->nunknown || z->usize == ZSTDDEC_UNKNOWN ||
	    z->nframes > ZSTDDEC_MAX_FRAMES)
		return -EINVAL;
	*n = IF_HDR + plen + z->nframes * IF_REC + IF_CRC;
	return 0;
}

void idxrec_zstd_put(unsigned char *b, size_t off, const void *recs)
{
	const struct zstddec_index *z = recs;

	put64(b + H_USIZE, z->usize);
	put64(b + H_MEMBERS, z->nframes);
	put64(b + H_NPOINTS, z->nframes);
	for (size_t i = 0; i < z->nframes; i++, off += IF_REC) {
		const struct zstddec_frame *f = &z->frames[i];

		put64(b + off + Z_COFF, f->coff);
		put64(b + off + Z_CSIZE, f->csize);
		put64(b + off + Z_USIZE, f->usize);
		b[off + Z_SRC] = f->usize_src;
	}
}

int idxrec_zstd_get(const unsigned char *b, size_t off, const struct idxfile_info *in, void *out,
		    struct zerr *err)
{
	struct zstddec_index *z = out;
	size_t body = off;
	uint64_t *usize;
	int ret = 0;

	/* the same source (identity) walked now: the frames must be the ones recorded */
	if (in->npoints != z->nframes || z->csize != in->id.size)
		return BAD(H_NPOINTS, "%" PRIu64 " frames recorded, the file has %zu", in->npoints,
			   z->nframes);
	usize = malloc(z->nframes * sizeof(*usize)); /* nframes >= 1: idxrec_zstd_check */
	if (!usize)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	for (size_t i = 0; ret == 0 && i < z->nframes; i++, off += IF_REC) {
		const struct zstddec_frame *f = &z->frames[i];

		usize[i] = get64(b + off + Z_USIZE);
		if (get64(b + off + Z_COFF) != f->coff || get64(b + off + Z_CSIZE) != f->csize)
			ret = BAD(off,
				  "frame %zu: recorded at %" PRIu64 "+%" PRIu64 ", the file "
				  "has it at %" PRIu64 "+%" PRIu64,
				  i, get64(b + off + Z_COFF), get64(b + off + Z_CSIZE), f->coff,
				  f->csize);
	}
	if (ret == 0 && zstddec_index_settle_all(z, usize) < 0)
		ret = BAD(body, "the recorded sizes disagree with the frames' "
				"headers or blocks");
	free(usize);
	return ret;
}

/* idxfile.h's zstd calls: the envelope's, with the zstd kind (fmt_zstd.c's saved). */
extern const struct fmt fmt_zstd;

uint64_t idxfile_max_size_zstd(uint64_t src_size)
{
	return idxrec_zstd_max(src_size, 0);
}

int idxfile_save_zstd(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, const struct zstddec_index *z,
		      uint64_t *bytes_written)
{
	return idxfile_save_recs(store, src_abspath, id, fmt_zstd.saved, z, bytes_written);
}

int idxfile_load_zstd(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, struct zstddec_index *z, struct zerr *err)
{
	return idxfile_load_recs(store, src_abspath, id, fmt_zstd.saved, 0, z, err);
}
