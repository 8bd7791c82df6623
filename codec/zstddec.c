/* SPDX-License-Identifier: MIT */
/*
 * How it works.
 *
 * Walk: from offset 0, one frame after another until the end of the file.
 * A zstd frame's header is parsed by hand (RFC 8878, 3.1.1.1) so that every
 * refusal can say which field at which offset; then its blocks are stepped
 * over by their 3-byte headers (a Raw block carries Block_Size bytes, an
 * RLE block one byte, a Compressed block Block_Size bytes) until the one
 * with Last_Block set, then the 4-byte checksum if the header announced
 * one.  Nothing is decompressed.  Reads go through a 64 KiB window
 * (struct walk), so a file of small blocks costs one pread per 64 KiB, not
 * one per block.  Skippable frames are stepped over by their Frame_Size.
 *
 * The walk keeps the extent of every frame, skippable ones included, so
 * that a trailing seek table can be checked entry by entry against what
 * the file really holds (zstddec.h, "Seek table").
 *
 * Decode: one ZSTD_DStream per frame (closed ones are kept for the next,
 * ds_get), fed by pread from [coff, coff+csize)
 * only, so libzstd can never run into the next frame.  Its window limit is
 * the frame's own Window_Size, so a decoder costs what the index said.
 * Output is bounded by the frame's usize when known, and as in xzdec.c, the
 * call that produces the last byte keeps feeding input into a one-byte
 * scratch output until libzstd reports the frame complete: the checksum is
 * verified, and a frame that would go on is caught, before that last byte
 * is returned.
 *
 * A call that asks for a whole frame of known size at once (a cache unit
 * filled whole) decodes it with one ZSTD_decompressDCtx from the frame's
 * compressed bytes read in one pread (dec_whole): libzstd then writes
 * straight into the caller's buffer, with no window buffer of its own to
 * map, fault in and copy out of per frame.  Anything that goes wrong there
 * is decoded again by the streaming path, whose verdict and message stand.
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_estimateDStreamSize: exported by libzstd.so */
#include "zstddec.h"
#include "src.h"
#include "zstdseq.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#define ZSTD_MAGIC	 0xFD2FB528u
#define SKIP_MAGIC_MASK	 0xFFFFFFF0u
#define SKIP_MAGIC	 0x184D2A50u
#define SEEKTAB_MAGIC	 0x184D2A5Eu /* the skippable magic the seekable format uses */
#define SEEKTAB_FOOTER	 0x8F92EAB1u
#define SEEKTAB_FOOTSIZE 9u

#define WALK_BUF  (64u << 10)
#define DEC_CHUNK (128u << 10) /* pread size for compressed input */
/* Frames of at most this many compressed bytes are decoded in one go when asked whole. */
#define WHOLE_CMAX (64u << 20)

/* ------------------------------------------------------------------------ */
/* Reading. */

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le_n(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* A read-through window over the file for the walk. */
struct walk {
	struct zsrc *src;
	uint64_t size; /* file size: bytes at or past it are never asked for */
	uint64_t boff; /* file offset of buf[0] */
	size_t blen;   /* valid bytes in buf */
	uint8_t *buf;  /* WALK_BUF bytes */
};

/*
 * Points *p at n (<= 32) bytes at file offset off, which the caller has
 * checked lie inside the file.  0, or -EIO if pread fails or comes up short.
 */
static int walk_get(struct walk *w, uint64_t off, size_t n, const uint8_t **p, struct zerr *err)
{
	if (off < w->boff || off + n > w->boff + w->blen) {
		uint64_t left = w->size - off;
		size_t want = left < WALK_BUF ? (size_t)left : WALK_BUF;
		ssize_t got = zsrc_pread(w->src, w->buf, want, off);

		w->boff = off;
		w->blen = got > 0 ? (size_t)got : 0;
		if (got < (ssize_t)n)
			return zerr_set(err, -EIO, off, "reading: %s",
					got < 0 ? strerror((int)-got)
						: "file is shorter than its size");
	}
	*p = w->buf + (off - w->boff);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The walk. */

/* One frame of any kind, for the seek table check. */
struct extent {
	uint64_t coff, csize;
	size_t zi; /* index in idx->frames, or SIZE_MAX for a skippable frame */
	uint32_t magic;
};

struct walkstate {
	struct walk w;
	struct zstddec_index *idx;
	size_t max_frames;	   /* frames of any kind before the walk gives up (-E2BIG) */
	bool keep;		   /* store frames and extents; else only count them (a scan) */
	struct zstddec_scan *scan; /* when !keep: the counts */
	size_t fcap;
	struct extent *ext;
	size_t next, ecap;
};

/* Most output frame f can have: one full block per block. */
static uint64_t frame_umax(const struct zstddec_frame *f)
{
	uint64_t m;

	if (__builtin_mul_overflow((uint64_t)f->nblocks, (uint64_t)ZSTDDEC_BLOCK_MAX, &m))
		return UINT64_MAX;
	return m;
}

/* Growth of an array of frames: doubled, but never past the walk's frame limit. */
static size_t grow(size_t cap, size_t max)
{
	size_t want = cap ? cap * 2 : 16;

	return want < max ? want : max;
}

/*
 * Counts one more frame of any kind, and keeps its extent if the walk
 * keeps frames.  The limit is checked before anything is allocated for
 * the frame, so a file of too many frames costs at most the limit's worth.
 */
static int ext_add(struct walkstate *s, uint64_t coff, uint64_t csize, size_t zi, uint32_t magic,
		   struct zerr *err)
{
	if (s->next >= s->max_frames)
		return zerr_set(err, -E2BIG, coff, "more than %zu frames", s->max_frames);
	if (!s->keep) {
		s->next++;
		return 0;
	}
	if (s->next == s->ecap) {
		size_t cap = grow(s->ecap, s->max_frames);
		struct extent *e;

		e = realloc(s->ext, cap * sizeof(*e));
		if (!e)
			return zerr_set(err, -ENOMEM, coff, "out of memory");
		s->ext = e;
		s->ecap = cap;
	}
	s->ext[s->next++] = (struct extent){ coff, csize, zi, magic };
	return 0;
}

static int frame_add(struct walkstate *s, const struct zstddec_frame *f, struct zerr *err)
{
	struct zstddec_index *idx = s->idx;

	if (!s->keep) {
		struct zstddec_scan *sc = s->scan;

		if (f->flags && !sc->ndict && !sc->nbigwin) {
			sc->flagged = *f;
			sc->flagged_i = sc->nframes;
		}
		sc->ndict += !!(f->flags & ZSTDDEC_F_DICT);
		sc->nbigwin += !!(f->flags & ZSTDDEC_F_BIGWIN);
		sc->nframes++;
		return 0;
	}
	if (idx->nframes == s->fcap) {
		size_t cap = grow(s->fcap, s->max_frames);
		struct zstddec_frame *v = realloc(idx->frames, cap * sizeof(*v));

		if (!v)
			return zerr_set(err, -ENOMEM, f->coff, "out of memory");
		idx->frames = v;
		s->fcap = cap;
	}
	idx->frames[idx->nframes++] = *f;
	return 0;
}

/* The Frame_Content_Size field's bytes for a Frame_Header_Descriptor (ss: Single_Segment). */
static unsigned fcs_bytes_of(unsigned fhd, unsigned ss)
{
	switch (fhd >> 6) {
	case 0:
		return ss ? 1 : 0;
	case 1:
		return 2;
	case 2:
		return 4;
	default:
		return 8;
	}
}

/*
 * Parses the frame header at off into f (hsize, checksum, window, dict_id,
 * usize and its source); *has_fcs and *fcs: the Frame_Content_Size field.
 */
static int walk_header(struct walk *w, uint64_t off, struct zstddec_frame *f, bool *has_fcs,
		       uint64_t *fcs, struct zerr *err)
{
	static const uint8_t did_bytes[4] = { 0, 1, 2, 4 };
	uint64_t size = w->size;
	const uint8_t *p;
	unsigned fhd, ss, fcs_bytes, did;
	int ret;

	if (size - off < 5)
		return zerr_set(err, -EINVAL, off, "frame header is truncated");
	ret = walk_get(w, off + 4, 1, &p, err);
	if (ret)
		return ret;
	fhd = p[0];
	if (fhd & 0x08)
		return zerr_set(err, -EINVAL, off + 4,
				"reserved bit set in Frame_Header_Descriptor (0x%02x)", fhd);
	ss = (fhd >> 5) & 1;
	did = did_bytes[fhd & 3];
	fcs_bytes = fcs_bytes_of(fhd, ss);
	*has_fcs = fcs_bytes > 0;
	f->hsize = (uint8_t)(5 + !ss + did + fcs_bytes);
	f->checksum = (fhd >> 2) & 1;
	if (size - off < f->hsize)
		return zerr_set(err, -EINVAL, off, "frame header is truncated");
	ret = walk_get(w, off + 5, f->hsize - 5u, &p, err);
	if (ret)
		return ret;
	if (!ss) {
		unsigned wlog = 10 + (p[0] >> 3);
		uint64_t base = 1ull << wlog;

		f->window = base + (base >> 3) * (p[0] & 7);
		p++;
	}
	f->dict_id = (uint32_t)le_n(p, did);
	p += did;
	if (*has_fcs) {
		*fcs = le_n(p, fcs_bytes);
		if (fcs_bytes == 2)
			*fcs += 256;
		f->usize = *fcs;
		f->usize_src = ZSTDDEC_SRC_FCS;
	} else {
		f->usize = ZSTDDEC_UNKNOWN;
		f->usize_src = ZSTDDEC_SRC_NONE;
	}
	if (ss)
		f->window = *fcs;
	return 0;
}

/*
 * Walks the blocks from *pos (the first block header) to the end of the
 * last one, into *pos; counts them in f->nblocks and the bytes of the raw
 * and RLE ones in *rawrle.  A loop over the file, never recursion.
 */
static int walk_blocks(struct walk *w, uint64_t *pos, struct zstddec_frame *f, uint64_t *rawrle,
		       struct zerr *err)
{
	uint64_t size = w->size;
	const uint8_t *p;
	int ret;

	for (;;) {
		uint32_t hdr, type, bsize;
		uint64_t body;

		if (size - *pos < 3)
			return zerr_set(err, -EINVAL, *pos, "block header is truncated");
		ret = walk_get(w, *pos, 3, &p, err);
		if (ret)
			return ret;
		hdr = (uint32_t)le_n(p, 3);
		type = (hdr >> 1) & 3;
		bsize = hdr >> 3;
		if (type == 3)
			return zerr_set(err, -EINVAL, *pos, "reserved block type");
		if (bsize > ZSTDDEC_BLOCK_MAX)
			return zerr_set(err, -EINVAL, *pos, "block size %u exceeds 128 KiB", bsize);
		if (f->nblocks == UINT32_MAX)
			return zerr_set(err, -EINVAL, *pos, "too many blocks in one frame");
		f->nblocks++;
		body = type == 1 ? 1 : bsize;
		if (type != 2)
			*rawrle += bsize;
		if (size - *pos - 3 < body)
			return zerr_set(
				err, -EINVAL, *pos, "block is truncated (%llu of %llu bytes)",
				(unsigned long long)(size - *pos - 3), (unsigned long long)body);
		*pos += 3 + body;
		if (hdr & 1)
			return 0;
	}
}

/* Parses the zstd frame at off (its magic already checked); sets f. */
static int walk_frame(struct walkstate *s, uint64_t off, struct zstddec_frame *f, struct zerr *err)
{
	struct walk *w = &s->w;
	uint64_t size = w->size, pos, fcs = 0, rawrle = 0;
	bool has_fcs = false;
	int ret;

	memset(f, 0, sizeof(*f));
	f->coff = off;
	ret = walk_header(w, off, f, &has_fcs, &fcs, err);
	if (ret)
		return ret;
	pos = off + f->hsize;
	ret = walk_blocks(w, &pos, f, &rawrle, err);
	if (ret)
		return ret;
	if (f->checksum) {
		if (size - pos < 4)
			return zerr_set(err, -EINVAL, pos, "content checksum is truncated");
		pos += 4;
	}
	f->csize = pos - off;
	if (has_fcs && fcs > frame_umax(f))
		return zerr_set(err, -EINVAL, off,
				"Frame_Content_Size %llu is more than its %u blocks can hold",
				(unsigned long long)fcs, f->nblocks);
	if (has_fcs && fcs < rawrle)
		return zerr_set(
			err, -EINVAL, off,
			"Frame_Content_Size %llu is less than its raw and RLE blocks hold (%llu)",
			(unsigned long long)fcs, (unsigned long long)rawrle);
	if (f->dict_id)
		f->flags |= ZSTDDEC_F_DICT;
	if (f->window > s->idx->window_max)
		f->flags |= ZSTDDEC_F_BIGWIN;
	return 0;
}

/* Sets ignore reason and returns 0: a disagreeing seek table is not an error. */
static int seek_ignore(struct zstddec_index *idx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int seek_ignore(struct zstddec_index *idx, const char *fmt, ...)
{
	va_list ap;

	idx->seek = ZSTDDEC_SEEK_IGNORED;
	va_start(ap, fmt);
	vsnprintf(idx->seek_reason, sizeof(idx->seek_reason), fmt, ap);
	va_end(ap);
	return 0;
}

/*
 * Checks the seek table in the last frame (a skippable one) against the
 * other frames.  Its sizes are never taken: a Decompressed_Size for a frame
 * without FCS is not from the frame, so it could only place bytes before
 * the frames ahead of it were decoded (issue 18); those frames are
 * measured instead, as without a seek table.
 * Returns 0 (the verdict is in idx->seek) or -EIO.
 */
static int seek_check(struct walkstate *s, struct zerr *err)
{
	struct zstddec_index *idx = s->idx;
	const struct extent *t = &s->ext[s->next - 1];
	uint64_t fsize = t->csize - 8;
	uint32_t n, esize;
	const uint8_t *p;
	uint8_t desc;
	int ret;

	if (t->magic != SEEKTAB_MAGIC || fsize < 4)
		return 0;
	ret = walk_get(&s->w, t->coff + t->csize - 4, 4, &p, err);
	if (ret)
		return ret;
	if (le32(p) != SEEKTAB_FOOTER)
		return 0;
	idx->seek_coff = t->coff;
	idx->seek = ZSTDDEC_SEEK_USED;
	if (fsize < SEEKTAB_FOOTSIZE)
		return seek_ignore(idx, "seek table is too short (%llu bytes)",
				   (unsigned long long)fsize);
	ret = walk_get(&s->w, t->coff + t->csize - SEEKTAB_FOOTSIZE, SEEKTAB_FOOTSIZE, &p, err);
	if (ret)
		return ret;
	n = le32(p);
	desc = p[4];
	if (desc & 0x7C)
		return seek_ignore(idx, "seek table descriptor has reserved bits set (0x%02x)",
				   desc);
	esize = desc & 0x80 ? 12 : 8;
	if ((uint64_t)n * esize + SEEKTAB_FOOTSIZE != fsize)
		return seek_ignore(idx, "seek table of %llu bytes cannot hold %u entries",
				   (unsigned long long)fsize, n);
	if (n != s->next - 1)
		return seek_ignore(idx, "seek table lists %u frames, the file has %zu", n,
				   s->next - 1);
	for (uint32_t i = 0; i < n; i++) {
		const struct extent *e = &s->ext[i];
		const struct zstddec_frame *f = e->zi == SIZE_MAX ? NULL : &idx->frames[e->zi];
		uint32_t cs, ds;

		ret = walk_get(&s->w, t->coff + 8 + (uint64_t)i * esize, 8, &p, err);
		if (ret)
			return ret;
		cs = le32(p);
		ds = le32(p + 4);
		if (cs != e->csize)
			return seek_ignore(idx,
					   "seek table entry %u: %u compressed bytes, the frame at "
					   "%llu has %llu",
					   i, cs, (unsigned long long)e->coff,
					   (unsigned long long)e->csize);
		if (!f && ds != 0)
			return seek_ignore(
				idx, "seek table entry %u: %u bytes for a skippable frame", i, ds);
		if (f && f->usize != ZSTDDEC_UNKNOWN && ds != f->usize)
			return seek_ignore(
				idx, "seek table entry %u: %u bytes, Frame_Content_Size says %llu",
				i, ds, (unsigned long long)f->usize);
		if (f && ds > frame_umax(f))
			return seek_ignore(
				idx, "seek table entry %u: %u bytes, more than %u blocks hold", i,
				ds, f->nblocks);
	}
	return 0;
}

/* Recomputes uoff, the totals and the counts from the frames. */
static void index_sum(struct zstddec_index *idx)
{
	uint64_t uoff = 0;

	idx->nunknown = idx->ndict = idx->nbigwin = idx->nchecksum = 0;
	idx->max_window = 0;
	for (size_t i = 0; i < idx->nframes; i++) {
		struct zstddec_frame *f = &idx->frames[i];

		f->uoff = uoff;
		if (f->usize == ZSTDDEC_UNKNOWN) {
			idx->nunknown++;
			uoff = ZSTDDEC_UNKNOWN;
		} else if (uoff != ZSTDDEC_UNKNOWN &&
			   __builtin_add_overflow(uoff, f->usize, &uoff)) {
			uoff = ZSTDDEC_UNKNOWN; /* cannot happen below 2^64 bytes of file */
		}
		idx->ndict += !!(f->flags & ZSTDDEC_F_DICT);
		idx->nbigwin += !!(f->flags & ZSTDDEC_F_BIGWIN);
		idx->nchecksum += f->checksum;
		if (f->window > idx->max_window)
			idx->max_window = f->window;
	}
	idx->usize = uoff;
}

/*
 * Walks every frame of s->w's file into s (see struct walkstate): 0, or
 * the error with err set.  Frames and extents allocated stay in s.
 */
static int walk_all(struct walkstate *s, struct zerr *err)
{
	struct zstddec_index *idx = s->idx;
	uint64_t off = 0, size = s->w.size;
	int ret;

	while (off < size) {
		const uint8_t *p;
		uint32_t magic;

		if (size - off < 4)
			return zerr_set(err, -EINVAL, off,
					off ? "trailing data is not a zstd frame"
					    : "not a zstd file");
		ret = walk_get(&s->w, off, 4, &p, err);
		if (ret)
			return ret;
		magic = le32(p);
		if (magic == ZSTD_MAGIC) {
			struct zstddec_frame f;

			ret = walk_frame(s, off, &f, err);
			if (!ret)
				ret = ext_add(s, off, f.csize, idx->nframes, magic, err);
			if (!ret)
				ret = frame_add(s, &f, err);
			if (ret)
				return ret;
			off += f.csize;
		} else if ((magic & SKIP_MAGIC_MASK) == SKIP_MAGIC) {
			uint64_t fsize;

			if (size - off < 8)
				return zerr_set(err, -EINVAL, off,
						"skippable frame header is truncated");
			ret = walk_get(&s->w, off + 4, 4, &p, err);
			if (ret)
				return ret;
			fsize = le32(p);
			if (size - off - 8 < fsize)
				return zerr_set(err, -EINVAL, off,
						"skippable frame is truncated (%llu of %llu bytes)",
						(unsigned long long)(size - off - 8),
						(unsigned long long)fsize);
			ret = ext_add(s, off, fsize + 8, SIZE_MAX, magic, err);
			if (ret)
				return ret;
			idx->nskippable++;
			idx->skippable_bytes += fsize + 8;
			off += fsize + 8;
		} else if (off == 0) {
			return zerr_set(err, -EINVAL, 0, "not a zstd file (magic 0x%08x)", magic);
		} else {
			return zerr_set(err, -EINVAL, off,
					"trailing data is not a zstd frame (magic 0x%08x)", magic);
		}
	}
	if (size == 0)
		return zerr_set(err, -EINVAL, 0, "not a zstd file (empty)");
	return 0;
}

static size_t frames_limit(size_t max_frames)
{
	return max_frames < ZSTDDEC_MAX_FRAMES ? max_frames : ZSTDDEC_MAX_FRAMES;
}

int zstddec_index_read_max(struct zsrc *src, uint64_t size, uint64_t window_max, size_t max_frames,
			   struct zstddec_index **out, struct zerr *err)
{
	struct walkstate s = { .w = { .src = src, .size = size }, .keep = true };
	struct zstddec_index *idx;
	int ret;

	*out = NULL;
	s.max_frames = frames_limit(max_frames);
	idx = calloc(1, sizeof(*idx));
	s.w.buf = malloc(WALK_BUF);
	if (!idx || !s.w.buf) {
		ret = zerr_set(err, -ENOMEM, 0, "out of memory");
		goto out;
	}
	s.idx = idx;
	idx->csize = size;
	idx->window_max = window_max < ZSTDDEC_WINDOW_LIBMAX ? window_max : ZSTDDEC_WINDOW_LIBMAX;
	ret = walk_all(&s, err);
	if (!ret)
		ret = seek_check(&s, err);
	if (ret)
		goto out;
	index_sum(idx);
	*out = idx;
	idx = NULL;
out:
	zstddec_index_free(idx);
	free(s.ext);
	free(s.w.buf);
	return ret;
}

int zstddec_index_read(struct zsrc *src, uint64_t size, uint64_t window_max,
		       struct zstddec_index **out, struct zerr *err)
{
	return zstddec_index_read_max(src, size, window_max, ZSTDDEC_MAX_FRAMES, out, err);
}

int zstddec_scan(struct zsrc *src, uint64_t size, uint64_t window_max, size_t max_frames,
		 struct zstddec_scan *out, struct zerr *err)
{
	struct zstddec_index idx = { .csize = size };
	struct walkstate s = { .w = { .src = src, .size = size }, .idx = &idx, .scan = out };
	int ret;

	memset(out, 0, sizeof(*out));
	s.max_frames = frames_limit(max_frames);
	idx.window_max = window_max < ZSTDDEC_WINDOW_LIBMAX ? window_max : ZSTDDEC_WINDOW_LIBMAX;
	s.w.buf = malloc(WALK_BUF);
	if (!s.w.buf)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	ret = walk_all(&s, err);
	out->nskippable = idx.nskippable;
	free(s.w.buf);
	return ret;
}

void zstddec_index_free(struct zstddec_index *idx)
{
	if (!idx)
		return;
	free(idx->frames);
	free(idx);
}

int zstddec_index_settle(struct zstddec_index *idx, size_t i, uint64_t usize)
{
	struct zstddec_frame *f;

	if (i >= idx->nframes || usize == ZSTDDEC_UNKNOWN)
		return -EINVAL;
	f = &idx->frames[i];
	if (f->usize != ZSTDDEC_UNKNOWN)
		return f->usize == usize ? 0 : -EINVAL;
	if (usize > frame_umax(f))
		return -EINVAL;
	f->usize = usize;
	f->usize_src = ZSTDDEC_SRC_MEASURED;
	index_sum(idx);
	return 0;
}

int zstddec_index_settle_all(struct zstddec_index *idx, const uint64_t *usize)
{
	/* every frame is checked before any is changed: a refusal leaves idx as it was */
	for (size_t i = 0; i < idx->nframes; i++) {
		const struct zstddec_frame *f = &idx->frames[i];

		if (usize[i] == ZSTDDEC_UNKNOWN ||
		    (f->usize != ZSTDDEC_UNKNOWN && f->usize != usize[i]) ||
		    (f->usize == ZSTDDEC_UNKNOWN && usize[i] > frame_umax(f)))
			return -EINVAL;
	}
	for (size_t i = 0; i < idx->nframes; i++) {
		struct zstddec_frame *f = &idx->frames[i];

		if (f->usize == ZSTDDEC_UNKNOWN) {
			f->usize = usize[i];
			f->usize_src = ZSTDDEC_SRC_MEASURED;
		}
	}
	index_sum(idx);
	return 0;
}

const char *zstddec_src_name(unsigned src)
{
	switch (src) {
	case ZSTDDEC_SRC_FCS:
		return "FCS";
	case ZSTDDEC_SRC_SEEKTAB:
		return "seek table";
	case ZSTDDEC_SRC_MEASURED:
		return "measured";
	default:
		return "unknown";
	}
}

/* ------------------------------------------------------------------------ */
/* Decoding. */

struct zstddec_dec {
	struct zstddec_frame f;
	ZSTD_DStream *ds;
	uint64_t in_off; /* file offset of the next pread */
	uint64_t in_end; /* end of the frame: coff + csize */
	uint64_t pos;	 /* uncompressed bytes returned */
	ZSTD_inBuffer in;
	bool done; /* libzstd finished the frame: checksum good */
	bool failed;
	uint8_t buf[DEC_CHUNK];
};

uint64_t zstddec_dec_cost(const struct zstddec_frame *f)
{
	uint64_t w = f->window < ZSTDDEC_WINDOW_LIBMAX ? f->window : ZSTDDEC_WINDOW_LIBMAX;

	return (uint64_t)ZSTD_estimateDStreamSize((size_t)w) + sizeof(struct zstddec_dec);
}

/*
 * Idle DStreams kept for the next open, process-wide: at most STASH, each
 * holding at most STASH_MAX bytes (the README's Memory table).  A fresh DStream maps and faults in
 * its window on its first frame, and a far read into a 4 MiB frame (decoded up to its slice,
 * streaming) paid as much for that as for the decode. stash_lock is a leaf (fs/locking.h).
 */
#define STASH	  2
#define STASH_MAX ((size_t)9 << 20) /* windows up to 8 MiB: zstd -19 and below */
static pthread_mutex_t stash_lock = PTHREAD_MUTEX_INITIALIZER;
static ZSTD_DStream *stash[STASH];

/* A DStream from the stash, or a new one; NULL if out of memory. */
static ZSTD_DStream *ds_get(void)
{
	ZSTD_DStream *ds = NULL;

	pthread_mutex_lock(&stash_lock);
	for (int i = 0; i < STASH && !ds; i++) {
		ds = stash[i];
		stash[i] = NULL;
	}
	pthread_mutex_unlock(&stash_lock);
	return ds ? ds : ZSTD_createDStream();
}

/* Back to the stash, reset (its buffers kept), if it fits; else freed. */
static void ds_put(ZSTD_DStream *ds)
{
	if (!ds)
		return;
	if (ZSTD_sizeof_DStream(ds) <= STASH_MAX &&
	    !ZSTD_isError(ZSTD_DCtx_reset(ds, ZSTD_reset_session_and_parameters))) {
		pthread_mutex_lock(&stash_lock);
		for (int i = 0; i < STASH && ds; i++) {
			if (!stash[i]) {
				stash[i] = ds;
				ds = NULL;
			}
		}
		pthread_mutex_unlock(&stash_lock);
	}
	ZSTD_freeDStream(ds);
}

size_t zstddec_stash_bytes(void)
{
	size_t n = 0;

	pthread_mutex_lock(&stash_lock);
	for (int i = 0; i < STASH; i++)
		n += stash[i] ? ZSTD_sizeof_DStream(stash[i]) : 0;
	pthread_mutex_unlock(&stash_lock);
	return n;
}

int zstddec_dec_open(const struct zstddec_frame *f, struct zstddec_dec **out, struct zerr *err)
{
	struct zstddec_dec *d;
	size_t r;

	*out = NULL;
	if (f->flags & ZSTDDEC_F_DICT)
		return zerr_set(err, -ENOTSUP, f->coff, "frame needs dictionary %u",
				(unsigned)f->dict_id);
	if (f->flags & ZSTDDEC_F_BIGWIN || f->window > ZSTDDEC_WINDOW_LIBMAX)
		return zerr_set(err, -ENOTSUP, f->coff,
				"frame window of %llu bytes is over the limit",
				(unsigned long long)f->window);
	d = malloc(sizeof(*d));
	if (!d)
		return zerr_set(err, -ENOMEM, f->coff, "out of memory");
	memset(d, 0, offsetof(struct zstddec_dec, buf));
	d->f = *f;
	d->in_off = f->coff;
	if (__builtin_add_overflow(f->coff, f->csize, &d->in_end)) {
		free(d);
		return zerr_set(err, -EIO, f->coff, "frame size overflows");
	}
	d->in.src = d->buf;
	d->ds = ds_get();
	if (!d->ds) {
		free(d);
		return zerr_set(err, -ENOMEM, f->coff, "out of memory");
	}
	/* libzstd's own limit is 2^27 by default: allow exactly this frame's window */
	r = ZSTD_DCtx_setParameter(d->ds, ZSTD_d_windowLogMax, zstdseq_window_log(f->window));
	if (ZSTD_isError(r)) {
		zstddec_dec_close(d);
		return zerr_set(err, -ENOTSUP, f->coff, "window log: %s", ZSTD_getErrorName(r));
	}
	*out = d;
	return 0;
}

/* File offset of the first input byte libzstd has not consumed. */
static uint64_t dec_coff(const struct zstddec_dec *d)
{
	return d->in_off - (d->in.size - d->in.pos);
}

/* One ZSTD_decompressStream call into out, refilling input first. */
static int dec_step(struct zstddec_dec *d, struct zsrc *src, ZSTD_outBuffer *out, struct zerr *err)
{
	size_t in_pos, out_pos, r;

	if (d->in.pos == d->in.size && d->in_off < d->in_end) {
		uint64_t left = d->in_end - d->in_off;
		ssize_t n = zsrc_pread(src, d->buf, left < DEC_CHUNK ? (size_t)left : DEC_CHUNK,
				       d->in_off);

		if (n <= 0)
			return zerr_set(err, -EIO, d->in_off, "reading frame data: %s",
					n ? strerror((int)-n) : "unexpected end of file");
		d->in.size = (size_t)n;
		d->in.pos = 0;
		d->in_off += (uint64_t)n;
	}
	in_pos = d->in.pos;
	out_pos = out->pos;
	r = ZSTD_decompressStream(d->ds, out, &d->in);
	if (ZSTD_isError(r)) {
		ZSTD_ErrorCode code = ZSTD_getErrorCode(r);

		if (code == ZSTD_error_memory_allocation)
			return zerr_set(err, -ENOMEM, dec_coff(d), "out of memory");
		if (code == ZSTD_error_checksum_wrong)
			return zerr_set(err, -EIO, dec_coff(d),
					"content checksum mismatch (XXH64)");
		return zerr_set(err, -EIO, dec_coff(d), "%s", ZSTD_getErrorName(r));
	}
	if (r == 0) {
		d->done = true;
		if (dec_coff(d) != d->in_end)
			return zerr_set(err, -EIO, dec_coff(d), "frame ends at %llu, not at %llu",
					(unsigned long long)dec_coff(d),
					(unsigned long long)d->in_end);
		return 0;
	}
	if (d->in.pos == in_pos && out->pos == out_pos) {
		if (d->in.pos == d->in.size && d->in_off == d->in_end)
			return zerr_set(err, -EIO, dec_coff(d), "frame data is truncated");
		return zerr_set(err, -EIO, dec_coff(d), "decoder made no progress");
	}
	return 0;
}

/* The error for a frame that ended after pos + got bytes, short of the size it was given. */
static int too_small(const struct zstddec_dec *d, size_t got, struct zerr *err)
{
	return zerr_set(err, -EIO, dec_coff(d),
			"frame is smaller than its size says (%llu of %llu bytes, %s)",
			(unsigned long long)(d->pos + got), (unsigned long long)d->f.usize,
			zstddec_src_name(d->f.usize_src));
}

/*
 * Frame d (nothing decoded yet, usize known) whole into buf, usize bytes:
 * 1 if it decoded to exactly usize, its checksum verified and its extent
 * exactly one frame; 0 if not (d untouched, for the streaming path to
 * decode and judge); -ENOMEM.
 */
static int dec_whole(struct zstddec_dec *d, struct zsrc *src, void *buf, struct zerr *err)
{
	/* r starts as an error: an empty frame (usize 0) must not pass unread. */
	size_t clen = (size_t)d->f.csize, r = (size_t)-1;
	uint8_t *in = malloc(clen ? clen : 1);
	ssize_t n;

	if (!in)
		return zerr_set(err, -ENOMEM, d->f.coff, "out of memory");
	n = zsrc_pread(src, in, clen, d->f.coff);
	if (n == (ssize_t)clen && ZSTD_findFrameCompressedSize(in, clen) == clen)
		r = ZSTD_decompressDCtx(d->ds, buf, (size_t)d->f.usize, in, clen);
	free(in);
	if (n == (ssize_t)clen && ZSTD_isError(r) &&
	    ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation)
		return zerr_set(err, -ENOMEM, d->f.coff, "out of memory");
	if (n != (ssize_t)clen || ZSTD_isError(r) || r != d->f.usize) {
		ZSTD_DCtx_reset(d->ds, ZSTD_reset_session_only);
		return 0;
	}
	d->in_off = d->in_end;
	d->pos = d->f.usize;
	d->done = true;
	return 1;
}

ssize_t zstddec_dec_read(struct zstddec_dec *d, struct zsrc *src, void *buf, size_t len,
			 struct zerr *err)
{
	bool known = d->f.usize != ZSTDDEC_UNKNOWN;
	uint64_t left = known ? d->f.usize - d->pos : UINT64_MAX;
	size_t want = len < left ? len : (size_t)left;
	ZSTD_outBuffer out = { buf, 0, 0 };
	int ret;

	if (d->failed)
		return zerr_set(err, -EIO, dec_coff(d), "decoder has already failed");
	if (want > SSIZE_MAX)
		want = SSIZE_MAX;
	/* The frame may have ended exactly where an earlier call's buffer did. */
	if (d->done && known && d->pos < d->f.usize) {
		ret = too_small(d, 0, err);
		goto fail;
	}
	if (d->done || (want == 0 && left > 0))
		return 0;
	if (known && d->pos == 0 && d->in_off == d->f.coff && want == d->f.usize &&
	    d->f.csize <= WHOLE_CMAX) {
		ret = dec_whole(d, src, buf, err);
		if (ret < 0)
			goto fail;
		if (ret == 1)
			return (ssize_t)want;
	}
	out.size = want;
	while (out.pos < want && !d->done) {
		ret = dec_step(d, src, &out, err);
		if (ret)
			goto fail;
	}
	if (known && (out.pos < want || (d->done && d->pos + out.pos < d->f.usize))) {
		ret = too_small(d, out.pos, err);
		goto fail;
	}
	/* the last byte is returned only after the frame's end and checksum */
	while (known && out.pos == left && !d->done) {
		uint8_t scratch;
		ZSTD_outBuffer one = { &scratch, 1, 0 };

		ret = dec_step(d, src, &one, err);
		if (ret)
			goto fail;
		if (one.pos) {
			ret = zerr_set(err, -EIO, dec_coff(d),
				       "frame is larger than its size says (%llu bytes, %s)",
				       (unsigned long long)d->f.usize,
				       zstddec_src_name(d->f.usize_src));
			goto fail;
		}
	}
	d->pos += out.pos;
	return (ssize_t)out.pos;
fail:
	d->failed = true;
	return ret;
}

uint64_t zstddec_dec_tell(const struct zstddec_dec *d)
{
	return d->pos;
}

void zstddec_dec_close(struct zstddec_dec *d)
{
	if (!d)
		return;
	ds_put(d->ds);
	free(d);
}

int zstddec_measure(struct zsrc *src, const struct zstddec_frame *f, uint64_t *usize,
		    struct zerr *err)
{
	struct zstddec_dec *d;
	uint8_t *buf;
	uint64_t total = 0;
	ssize_t n;
	int ret;

	ret = zstddec_dec_open(f, &d, err);
	if (ret)
		return ret;
	buf = malloc(DEC_CHUNK);
	if (!buf) {
		zstddec_dec_close(d);
		return zerr_set(err, -ENOMEM, f->coff, "out of memory");
	}
	while ((n = zstddec_dec_read(d, src, buf, DEC_CHUNK, err)) > 0)
		total += (uint64_t)n;
	free(buf);
	zstddec_dec_close(d);
	if (n < 0)
		return (int)n;
	*usize = total;
	return 0;
}

uint64_t zstddec_dec_cost_of(const struct zstddec_dec *d)
{
	return zstddec_dec_cost(&d->f);
}

/* Whether the n bytes at p start a zstd frame. */
static bool zstd_magic(const unsigned char *p, size_t n)
{
	return n >= 4 && p[0] == 0x28 && p[1] == 0xB5 && p[2] == 0x2F && p[3] == 0xFD;
}

/* Whether the n bytes at p start a skippable frame, 0x184D2A50 to 0x184D2A5F little-endian. */
static bool skippable_magic(const unsigned char *p, size_t n)
{
	return n >= 8 && (p[0] & 0xF0) == 0x50 && p[1] == 0x2A && p[2] == 0x4D && p[3] == 0x18;
}

bool zstddec_sniff(struct zsrc *src)
{
	unsigned char buf[8];
	uint64_t off = 0;
	ssize_t n = zsrc_pread(src, buf, sizeof(buf), 0);

	/*
	 * pzstd and other zstd writers may start a file with skippable frames
	 * (pzstd puts one before every frame): step over a few to find the
	 * first zstd frame.  Skippable frames up to the end of the file are
	 * zstd too: a valid file with nothing in it (zstd -t accepts it).
	 */
	for (int i = 0; n >= 0 && i < ZSTDDEC_SNIFF_SKIP && skippable_magic(buf, (size_t)n); i++) {
		off += 8 + ((uint64_t)buf[4] | (uint64_t)buf[5] << 8 | (uint64_t)buf[6] << 16 |
			    (uint64_t)buf[7] << 24);
		n = zsrc_pread(src, buf, sizeof(buf), off);
		if (n == 0)
			return true;
	}
	return n > 0 && zstd_magic(buf, (size_t)n);
}
