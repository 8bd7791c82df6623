/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_LZMA2DEC_INT_H
#define ZMOUNT_LZMA2DEC_INT_H

/*
 * The decoder's state, shared by its three parts (codec-internal; the
 * contract with callers is lzma2dec.h):
 *   lzma2dec.c       the chunk layer (LZMA2): headers, resets, input, output;
 *   lzma2dec_lzma.c  the LZMA core over the range coder (lzma2dec_rc.h);
 *   lzma2dec_ckpt.c  checkpoints: export, check, resume, save and load.
 */

#include <stdint.h>

#include "lzma2dec.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define P_LIT	  1846 /* the literal coders' offset in the probability array: 0x300 << (lc + lp) */
#define INBUF	  65536u
#define CHUNK_MAX (2u << 20) /* the most bytes one chunk decodes to */

enum { K_NONE, K_LZMA, K_COPY };

struct lzma2dec {
	/* input */
	lzma2dec_pull_fn pull;
	void *popaque;
	uint64_t coff; /* next compressed byte to pull */
	uint32_t ipos; /* next byte of inbuf */
	uint32_t ilen; /* bytes in inbuf: the current chunk's body */
	/* output */
	uint8_t *win; /* owned, unless lent to lzma2dec_resume_in */
	int win_lent;
	uint32_t wsize; /* window: max(dict, 4 KiB) rounded up to 16 */
	uint32_t wpos;	/* next byte of win to write */
	uint32_t rpos;	/* first byte of win not yet returned */
	uint32_t avail; /* bytes from rpos not yet returned */
	uint64_t dpos;	/* bytes since the last dictionary reset */
	uint64_t uoff;	/* bytes decoded into the window */
	uint64_t ulimit;
	/* chunks */
	struct lzma2dec_chunk cur;
	int kind;	     /* K_*: what the current chunk is */
	uint32_t chunk_left; /* of its uncompressed bytes, still to decode */
	int need_dict_reset, need_props, ended, in_cb, err;
	int expect_control; /* after resume: the control byte the checkpoint saw, else -1 */
	uint32_t dict_size;
	lzma2dec_chunk_fn cb;
	void *cbopaque;
	lzma2dec_mark_fn mark; /* NULL unless a checkpoint builder asks where matches read */
	void *mopaque;
	uint64_t mark_below; /* only reads that start below this are reported */
	/* LZMA */
	uint32_t rng, code;
	uint32_t state, rep[4], pend;
	uint32_t lc, lp, pb;
	uint16_t probs[LZMA2DEC_PROBS_MAX];
	uint8_t inbuf[INBUF];
};

/* Probabilities of a model with lc and lp. */
static inline uint32_t nprobs_of(uint32_t lc, uint32_t lp)
{
	return P_LIT + (0x300u << (lc + lp));
}

/* The window of a dictionary: max(dict_size, 4 KiB) rounded up to 16. */
static inline uint32_t window_of(uint32_t dict_size)
{
	uint32_t w = dict_size < 4096 ? 4096 : dict_size;

	return (w + 15) & ~15u;
}

/* Splits a properties byte into lc, lp, pb: 0, or -1 if invalid (lc + lp > 4 too). */
static inline int props_decode(uint8_t b, uint32_t *lc, uint32_t *lp, uint32_t *pb)
{
	if (b >= 9 * 5 * 5)
		return -1;
	*lc = b % 9;
	*lp = (b / 9) % 5;
	*pb = b / 45;
	return *lc + *lp > 4 ? -1 : 0;
}

/*
 * A decoder with window win (lent; NULL: one of its own), nothing read
 * yet (lzma2dec.c).  0, or -EINVAL (pull NULL, dict_size too large) or
 * -ENOMEM, with *out NULL.
 */
int lzma2dec_alloc(uint32_t dict_size, uint64_t ulimit, lzma2dec_pull_fn pull, void *opaque,
		   uint8_t *win, struct lzma2dec **out);

/* The LZMA state reset: every probability to 1/2, state 0, rep0-rep3 0 (lzma2dec_lzma.c). */
void lzma2dec_lzma_reset(struct lzma2dec *d);

/*
 * Decodes exactly n bytes of the current LZMA chunk into the window at
 * wpos (n <= wsize - wpos, n <= chunk_left), from inbuf[ipos..ilen).
 * Returns 0, or -EIO with err set (corrupt data, or data past the chunk).
 */
int lzma2dec_lzma_run(struct lzma2dec *d, uint32_t n, struct zerr *err);

/* After an LZMA chunk's last byte: 0 if all its input is used and the range coder finished; else
 * -EIO. */
int lzma2dec_lzma_finish(struct lzma2dec *d, struct zerr *err);

#endif
