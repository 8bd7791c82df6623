/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ZSTDCKPT_INT_H
#define ZMOUNT_ZSTDCKPT_INT_H

/*
 * What the three parts of zstd checkpoints share (codec-internal; the
 * contract with callers is zstdckpt.h):
 *   zstdckpt_build.c  the pass over a frame that makes checkpoints, and
 *                     the pending points whose sparse windows it marks;
 *   zstdckpt_blob.c   the blob format (zstdckpt.h): writing and parsing
 *                     blobs, and opening a decoder at one;
 *   zstdckpt_dec.c    the resume decoder and its stock of spares;
 * over zstdseq.c (entropy tables and sequences).  The small helpers here
 * are static inline, as the compiler inlined them when all was one file;
 * the others are called once per block or per run.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <zstd.h>

#include "hugemem.h"
#include "src.h"
#include "zerr.h"
#include "zstdckpt.h"
#include "zstddec.h"

#define ZSTDCKPT_BLOCK_MAX ZSTDDEC_BLOCK_MAX
#define ZSTDCKPT_IN_CAP	   (512u << 10) /* compressed input buffer: >= 3 + BLOCK_MAX */

/* ------------------------------------------------------------------------ */
/* Input: a read-through buffer over [f->coff, f->coff + f->csize). */

struct zstdckpt_in {
	uint64_t end;  /* the frame's end: nothing past it is read */
	uint64_t boff; /* file offset of buf[0] */
	size_t blen;
	uint8_t *buf; /* ZSTDCKPT_IN_CAP bytes */
};

/*
 * Points *p at n (<= ZSTDCKPT_IN_CAP) contiguous bytes at off, reading them
 * through b->buf if they are not there yet.  0, or -EIO with err set (past
 * the frame's end, a failed or short read).  In zstdckpt_dec.c.
 */
int zstdckpt_in_get(struct zstdckpt_in *b, struct zsrc *src, uint64_t off, size_t n,
		    const uint8_t **p, struct zerr *err);

/* ------------------------------------------------------------------------ */
/* Frames and rings. */

/* The window this frame needs: Window_Size, or less if the frame is smaller. */
static inline uint64_t zstdckpt_frame_window(const struct zstddec_frame *f)
{
	uint64_t w = f->window;

	if (f->usize != ZSTDDEC_UNKNOWN && f->usize < w)
		w = f->usize;
	return w ? w : 1;
}

/* 0, or -ENOTSUP with err set for a frame checkpoints cannot handle. */
static inline int zstdckpt_frame_usable(const struct zstddec_frame *f, struct zerr *err)
{
	if (f->flags & (ZSTDDEC_F_DICT | ZSTDDEC_F_BIGWIN) || f->window > ZSTDDEC_WINDOW_LIBMAX)
		return zerr_set(err, -ENOTSUP, f->coff, "frame needs a dictionary or a big window");
	return 0;
}

/*
 * Rings, zeroed.  Those of huge_min bytes or more are backed by
 * transparent huge pages where the kernel allows it (MADV_HUGEPAGE): a
 * sparse window touches pages all over a ring of up to 128 MiB, and the
 * page faults, not the copying, were the cost of a resume (measured: 200 ms
 * of faults for 10,000 runs over a 100 MiB window in a VM).  The build's
 * ring is written whole, so huge pages only save faults there.
 * zstdckpt_ring_free takes the same length and huge_min.
 */
static inline void *zstdckpt_ring_alloc(size_t len, size_t huge_min)
{
	return len < huge_min ? calloc(1, len) : hugemem_alloc(len);
}

static inline void zstdckpt_ring_free(void *p, size_t len, size_t huge_min)
{
	if (len < huge_min)
		free(p);
	else
		hugemem_free(p, len);
}

/*
 * Grows *buf (elements of elem bytes, *cap of them) to hold need, doubling
 * from 256; counts the growth in *total if not NULL.  0 or -ENOMEM (*buf
 * unchanged).  In zstdckpt_blob.c.
 */
int zstdckpt_grow(void *buf, size_t *cap, size_t need, size_t elem, uint64_t *total);

/* ------------------------------------------------------------------------ */
/* Blobs: written by the build (zstdckpt_build.c), read by zstdckpt_blob.c. */

/*
 * A point being made into a blob (zstdckpt_build_blobs): its window
 * [lo, uoff) is marked, as the blocks after uoff are decoded, by the
 * matches that copy from it, and each window byte is settled (kept or not)
 * once the output has passed it by a window, since no later match reaches
 * it.  Settled kept bytes are copied out of the ring before it overwrites
 * them.
 */
struct zstdckpt_pend {
	struct zstdckpt ck;
	uint64_t lo;	  /* output offset of the window's first byte: uoff - wlen */
	uint64_t done;	  /* [lo, done) settled and copied out */
	uint64_t run_end; /* output offset past the last run, lo at first */
	uint64_t *bits;	  /* a bit per granule of [lo, uoff): some match copies from it */
	size_t nbits_b;	  /* bytes of bits */
	uint32_t *runs;	  /* (gap, len) pairs, as in the blob */
	size_t nruns, runs_cap;
	uint8_t *kept;
	size_t nkept, kept_cap;
};

/* What writing blobs needs, kept across points (owned by the build). */
struct zstdckpt_blobbuf {
	ZSTD_CCtx *cc;
	uint8_t *raw, *blob; /* scratch: a payload, a blob */
	size_t raw_cap, blob_cap;
};

/*
 * Writes p's blob (for frame f) into o->blob; returns its length, or 0
 * with err set (-ENOMEM: out of memory, or the payload's compression
 * failed).
 */
size_t zstdckpt_blob_write(struct zstdckpt_blobbuf *o, const struct zstddec_frame *f,
			   const struct zstdckpt_pend *p, struct zerr *err);

/* ------------------------------------------------------------------------ */
/* Opening a resume decoder (zstdckpt_dec.c). */

/* A blob's payload, unpacked: a buffer kept with a decoder, as its ring is. */
struct zstdckpt_raw {
	uint8_t *p;
	size_t cap;
};

/*
 * Puts the window bytes of a checkpoint into win[0..wlen), which is zero,
 * using raw as scratch if it needs any: 0, or -EINVAL / -ENOMEM with err
 * set.
 */
typedef int (*zstdckpt_fill_fn)(const void *arg, struct zstdckpt_raw *raw, uint8_t *win,
				uint64_t wlen, struct zerr *err);

/*
 * A decoder for frame f at ck (NULL: the frame's start; fill and arg
 * unused), its window filled by fill(arg, ...), with buffers from sp's
 * stock if it has a decoder of the same size (sp may be NULL).  Returns
 * as zstdckpt_dec_open.
 */
int zstdckpt_dec_new(struct zstdckpt_spares *sp, const struct zstddec_frame *f,
		     const struct zstdckpt *ck, zstdckpt_fill_fn fill, const void *arg,
		     struct zstdckpt_dec **out, struct zerr *err);

#endif
