/* SPDX-License-Identifier: MIT */
/*
 * Raw LZMA2 decoder with checkpoints at chunk boundaries (see lzma2dec.h).
 *
 * How it works.  lzma2dec_read loops over three steps: hand out bytes that
 * are decoded but not yet returned; else, at a chunk boundary, pull and
 * check the next chunk header (the chunk callback runs here), then pull the
 * chunk's whole compressed body (at most 64 KiB) into inbuf; else decode
 * min(wanted, rest of the chunk, room before the window wraps) bytes into
 * the circular window, and go round.  Because a whole chunk body is in
 * memory, the LZMA loop only checks one input bound per range-coder
 * normalisation; because output may stop anywhere, the loop can pause
 * between symbols, keeping the unfinished part of a match in `pend`.
 *
 * The LZMA part follows lzma-specification.txt: an adaptive binary range
 * decoder (11-bit probabilities, shift 5), literals coded with lc/lp
 * context and "matched" literals after a match, lengths 2..273 in three
 * trees, distances as a 6-bit slot plus reverse-coded or direct bits and
 * 4 align bits, and four repeat distances.  The model's probabilities live
 * in one array (offsets below), so a checkpoint is a plain copy of it.
 *
 * Checks mirror liblzma's, so that both accept the same streams: the first
 * chunk resets the dictionary, a dictionary reset requires new properties
 * before the next LZMA chunk, lc + lp <= 4, distances stay below
 * min(dpos, window), no end marker inside a chunk, and each LZMA chunk ends
 * with all its compressed bytes used and the range coder's code at 0.
 */
#include "lzma2dec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Offsets into the probability array. */
#define P_IS_MATCH  0	/* [state][pos_state]: 12 * 16 */
#define P_IS_REP    192 /* [state] */
#define P_IS_REP0   204
#define P_IS_REP1   216
#define P_IS_REP2   228
#define P_REP0_LONG 240	 /* [state][pos_state] */
#define P_SLOT	    432	 /* [len_state][64] */
#define P_SPECIAL   688	 /* 114: reverse trees of distance slots 4-13 */
#define P_ALIGN	    802	 /* 16 */
#define P_LEN	    818	 /* 514: choice, choice2, low[16][8], mid[16][8], high[256] */
#define P_REP_LEN   1332 /* 514 */
#define P_LIT	    1846 /* 0x300 << (lc + lp) */
#define L_LOW	    2
#define L_MID	    130
#define L_HIGH	    258

#define PROB_INIT 1024u
#define RC_TOP	  (1u << 24)
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

static uint32_t nprobs_of(uint32_t lc, uint32_t lp)
{
	return P_LIT + (0x300u << (lc + lp));
}

static uint32_t window_of(uint32_t dict_size)
{
	uint32_t w = dict_size < 4096 ? 4096 : dict_size;

	return (w + 15) & ~15u;
}

static int props_decode(uint8_t b, uint32_t *lc, uint32_t *lp, uint32_t *pb)
{
	if (b >= 9 * 5 * 5)
		return -1;
	*lc = b % 9;
	*lp = (b / 9) % 5;
	*pb = b / 45;
	return *lc + *lp > 4 ? -1 : 0;
}

static void state_reset(struct lzma2dec *d)
{
	uint32_t n = nprobs_of(d->lc, d->lp);

	for (uint32_t i = 0; i < n; i++)
		d->probs[i] = PROB_INIT;
	d->state = 0;
	memset(d->rep, 0, sizeof(d->rep));
}

uint32_t lzma2dec_window_size(uint32_t dict_size)
{
	return window_of(dict_size);
}

/* A decoder with window win (lent, NULL: one of its own). */
static int alloc_dec(uint32_t dict_size, uint64_t ulimit, lzma2dec_pull_fn pull, void *opaque,
		     uint8_t *win, struct lzma2dec **out)
{
	struct lzma2dec *d;

	*out = NULL;
	if (!pull || dict_size > LZMA2DEC_DICT_MAX)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->wsize = window_of(dict_size);
	d->win_lent = win != NULL;
	d->win = win ? win : malloc(d->wsize);
	if (!d->win) {
		free(d);
		return -ENOMEM;
	}
	d->dict_size = dict_size;
	d->pull = pull;
	d->popaque = opaque;
	d->ulimit = ulimit;
	d->expect_control = -1;
	*out = d;
	return 0;
}

int lzma2dec_new(uint32_t dict_size, uint64_t ulimit, lzma2dec_pull_fn pull, void *opaque,
		 struct lzma2dec **out)
{
	int ret = alloc_dec(dict_size, ulimit, pull, opaque, NULL, out);

	if (ret == 0) {
		(*out)->need_dict_reset = 1;
		(*out)->need_props = 1;
	}
	return ret;
}

void lzma2dec_set_chunk_cb(struct lzma2dec *d, lzma2dec_chunk_fn fn, void *opaque)
{
	d->cb = fn;
	d->cbopaque = opaque;
}

void lzma2dec_set_mark_cb(struct lzma2dec *d, lzma2dec_mark_fn fn, void *opaque)
{
	d->mark = fn;
	d->mopaque = opaque;
	d->mark_below = UINT64_MAX;
}

void lzma2dec_set_mark_below(struct lzma2dec *d, uint64_t below)
{
	d->mark_below = below;
}

size_t lzma2dec_memusage(const struct lzma2dec *d)
{
	return sizeof(*d) + d->wsize;
}

uint64_t lzma2dec_tell(const struct lzma2dec *d)
{
	return d->uoff - d->avail;
}

uint64_t lzma2dec_ctell(const struct lzma2dec *d)
{
	return d->coff;
}

void lzma2dec_free(struct lzma2dec *d)
{
	if (!d)
		return;
	if (!d->win_lent)
		free(d->win);
	free(d);
}

/* ---- the LZMA loop ---- */

/* Index in the window of the byte dist + 1 back from pos. */
static inline uint32_t back(uint32_t pos, uint32_t dist, uint32_t wsize)
{
	return pos > dist ? pos - dist - 1 : pos + wsize - dist - 1;
}

/* Copies n bytes of a match at distance dist + 1 to win[pos..pos + n), which does not wrap. */
static inline void copy_match(uint8_t *win, uint32_t wsize, uint32_t pos, uint32_t dist, uint32_t n)
{
	uint32_t src = back(pos, dist, wsize);

	if (dist == 0) {
		memset(win + pos, win[src], n);
	} else if (src < pos ? pos - src >= n : src - pos >= n && wsize - src >= n) {
		memcpy(win + pos, win + src, n);
	} else if (src < pos) {
		/* overlapping run: each byte is one already written */
		for (uint32_t i = 0; i < n; i++)
			win[pos + i] = win[src + i];
	} else {
		for (uint32_t i = 0; i < n; i++) {
			win[pos + i] = win[src++];
			if (src == wsize)
				src = 0;
		}
	}
}

#define NORM                                                                                       \
	do {                                                                                       \
		if (rng < RC_TOP) {                                                                \
			if (unlikely(ip == iend))                                                  \
				goto overrun;                                                      \
			rng <<= 8;                                                                 \
			code = (code << 8) | *ip++;                                                \
		}                                                                                  \
	} while (0)
#define IF_BIT0(p)                                                                                 \
	ttt = *(p);                                                                                \
	NORM;                                                                                      \
	bound = (rng >> 11) * ttt;                                                                 \
	if (code < bound)
#define UPD0(p)                                                                                    \
	do {                                                                                       \
		rng = bound;                                                                       \
		*(p) = (uint16_t)(ttt + ((2048 - ttt) >> 5));                                      \
	} while (0)
#define UPD1(p)                                                                                    \
	do {                                                                                       \
		rng -= bound;                                                                      \
		code -= bound;                                                                     \
		*(p) = (uint16_t)(ttt - (ttt >> 5));                                               \
	} while (0)
/* One bit of a bit tree at base p: sym grows by it. */
#define TREE_BIT(p, sym)                                                                           \
	do {                                                                                       \
		IF_BIT0((p) + (sym))                                                               \
		{                                                                                  \
			UPD0((p) + (sym));                                                         \
			sym <<= 1;                                                                 \
		}                                                                                  \
		else                                                                               \
		{                                                                                  \
			UPD1((p) + (sym));                                                         \
			sym = (sym << 1) | 1;                                                      \
		}                                                                                  \
	} while (0)
/* A length (2..273) from the length coder at probs + base into len. */
#define LEN_DECODE(base)                                                                           \
	do {                                                                                       \
		uint16_t *lb_ = probs + (base);                                                    \
		uint32_t s_ = 1;                                                                   \
		IF_BIT0(lb_)                                                                       \
		{                                                                                  \
			UPD0(lb_);                                                                 \
			lb_ += L_LOW + ps * 8;                                                     \
			TREE_BIT(lb_, s_);                                                         \
			TREE_BIT(lb_, s_);                                                         \
			TREE_BIT(lb_, s_);                                                         \
			len = s_ - 8 + 2;                                                          \
		}                                                                                  \
		else                                                                               \
		{                                                                                  \
			UPD1(lb_);                                                                 \
			IF_BIT0(lb_ + 1)                                                           \
			{                                                                          \
				UPD0(lb_ + 1);                                                     \
				lb_ += L_MID + ps * 8;                                             \
				TREE_BIT(lb_, s_);                                                 \
				TREE_BIT(lb_, s_);                                                 \
				TREE_BIT(lb_, s_);                                                 \
				len = s_ - 8 + 10;                                                 \
			}                                                                          \
			else                                                                       \
			{                                                                          \
				UPD1(lb_ + 1);                                                     \
				lb_ += L_HIGH;                                                     \
				do                                                                 \
					TREE_BIT(lb_, s_);                                         \
				while (s_ < 0x100);                                                \
				len = s_ - 0x100 + 18;                                             \
			}                                                                          \
		}                                                                                  \
	} while (0)

/*
 * Decodes exactly n bytes of the current LZMA chunk into the window at
 * wpos (n <= wsize - wpos, n <= chunk_left).  Returns 0 or -EIO.  Every
 * hot value lives in a local; they go back to *d on every way out.
 */
static int lzma_run(struct lzma2dec *d, uint32_t n, struct zerr *err)
{
	uint8_t *const win = d->win;
	const uint32_t wsize = d->wsize;
	uint16_t *const probs = d->probs;
	const uint8_t *ip = d->inbuf + d->ipos, *const iend = d->inbuf + d->ilen;
	const uint32_t lc = d->lc, lpmask = (1u << d->lp) - 1, pbmask = (1u << d->pb) - 1;
	uint32_t rng = d->rng, code = d->code, state = d->state;
	uint32_t rep0 = d->rep[0], rep1 = d->rep[1], rep2 = d->rep[2], rep3 = d->rep[3];
	uint32_t wpos = d->wpos, wend = d->wpos + n;
	uint64_t dpos = d->dpos;
	/* the uncompressed offset of win[wpos] is base + wpos (mod 2^64) */
	const uint64_t base = d->uoff - d->wpos;
	const lzma2dec_mark_fn mark = d->mark;
	const uint64_t mbelow = d->mark_below;
	uint32_t ttt, bound, len = d->pend, ps;
	const char *why;
	int ret = 0;

	if (len)
		goto copy; /* the rest of a match the last call stopped in */
	while (wpos < wend) {
		ps = (uint32_t)dpos & pbmask;
		IF_BIT0(probs + P_IS_MATCH + (state << 4) + ps)
		{
			uint32_t prev = dpos ? win[(wpos ? wpos : wsize) - 1] : 0, sym = 1;
			uint16_t *lp =
				probs + P_LIT +
				0x300 * ((((uint32_t)dpos & lpmask) << lc) + (prev >> (8 - lc)));

			UPD0(probs + P_IS_MATCH + (state << 4) + ps);
			if (state < 7) {
				/* unrolled: the most frequent symbol of all */
				TREE_BIT(lp, sym);
				TREE_BIT(lp, sym);
				TREE_BIT(lp, sym);
				TREE_BIT(lp, sym);
				TREE_BIT(lp, sym);
				TREE_BIT(lp, sym);
				TREE_BIT(lp, sym);
				TREE_BIT(lp, sym);
			} else {
				uint32_t mb = win[back(wpos, rep0, wsize)], bit;

				if (unlikely(mark != NULL) && base + wpos - rep0 - 1 < mbelow)
					mark(d->mopaque, base + wpos - rep0 - 1, 1);
				do {
					uint32_t mbit = (mb >> 7) & 1;

					mb <<= 1;
					IF_BIT0(lp + ((1 + mbit) << 8) + sym)
					{
						UPD0(lp + ((1 + mbit) << 8) + sym);
						bit = 0;
					}
					else
					{
						UPD1(lp + ((1 + mbit) << 8) + sym);
						bit = 1;
					}
					sym = (sym << 1) | bit;
					if (mbit != bit)
						break;
				} while (sym < 0x100);
				while (sym < 0x100)
					TREE_BIT(lp, sym);
			}
			win[wpos++] = (uint8_t)sym;
			dpos++;
			state = state < 4 ? 0 : state < 10 ? state - 3 : state - 6;
			continue;
		}
		UPD1(probs + P_IS_MATCH + (state << 4) + ps);
		IF_BIT0(probs + P_IS_REP + state)
		{
			uint32_t slot = 1, ls, dist;

			UPD0(probs + P_IS_REP + state);
			rep3 = rep2;
			rep2 = rep1;
			rep1 = rep0;
			LEN_DECODE(P_LEN);
			state = state < 7 ? 7 : 10;
			ls = len < 6 ? len - 2 : 3;
			do
				TREE_BIT(probs + P_SLOT + (ls << 6), slot);
			while (slot < 64);
			slot -= 64;
			if (slot < 4) {
				dist = slot;
			} else {
				uint32_t nb = (slot >> 1) - 1;

				dist = (2 | (slot & 1)) << nb;
				if (slot < 14) {
					uint16_t *sp = probs + P_SPECIAL + dist - slot - 1;
					uint32_t m = 1;

					for (uint32_t i = 0; i < nb; i++) {
						IF_BIT0(sp + m)
						{
							UPD0(sp + m);
							m <<= 1;
						}
						else
						{
							UPD1(sp + m);
							m = (m << 1) | 1;
							dist |= 1u << i;
						}
					}
				} else {
					uint32_t direct = 0, m = 1;

					for (uint32_t i = nb - 4; i; i--) {
						uint32_t t;

						NORM;
						rng >>= 1;
						code -= rng;
						t = 0u - (code >> 31);
						code += rng & t;
						direct = (direct << 1) + (t + 1);
					}
					dist += direct << 4;
					for (uint32_t i = 0; i < 4; i++) {
						IF_BIT0(probs + P_ALIGN + m)
						{
							UPD0(probs + P_ALIGN + m);
							m <<= 1;
						}
						else
						{
							UPD1(probs + P_ALIGN + m);
							m = (m << 1) | 1;
							dist |= 1u << i;
						}
					}
					if (unlikely(dist == UINT32_MAX)) {
						why = "end-of-payload marker inside an LZMA2 chunk";
						goto corrupt;
					}
				}
			}
			rep0 = dist;
		}
		else
		{
			UPD1(probs + P_IS_REP + state);
			IF_BIT0(probs + P_IS_REP0 + state)
			{
				UPD0(probs + P_IS_REP0 + state);
				IF_BIT0(probs + P_REP0_LONG + (state << 4) + ps)
				{
					UPD0(probs + P_REP0_LONG + (state << 4) + ps);
					if (unlikely(rep0 >= dpos || rep0 >= wsize)) {
						why = "match distance beyond the dictionary";
						goto corrupt;
					}
					state = state < 7 ? 9 : 11;
					if (unlikely(mark != NULL) &&
					    base + wpos - rep0 - 1 < mbelow)
						mark(d->mopaque, base + wpos - rep0 - 1, 1);
					win[wpos] = win[back(wpos, rep0, wsize)];
					wpos++;
					dpos++;
					continue;
				}
				UPD1(probs + P_REP0_LONG + (state << 4) + ps);
			}
			else
			{
				uint32_t dist;

				UPD1(probs + P_IS_REP0 + state);
				IF_BIT0(probs + P_IS_REP1 + state)
				{
					UPD0(probs + P_IS_REP1 + state);
					dist = rep1;
				}
				else
				{
					UPD1(probs + P_IS_REP1 + state);
					IF_BIT0(probs + P_IS_REP2 + state)
					{
						UPD0(probs + P_IS_REP2 + state);
						dist = rep2;
					}
					else
					{
						UPD1(probs + P_IS_REP2 + state);
						dist = rep3;
						rep3 = rep2;
					}
					rep2 = rep1;
				}
				rep1 = rep0;
				rep0 = dist;
			}
			LEN_DECODE(P_REP_LEN);
			state = state < 7 ? 8 : 11;
		}
		if (unlikely(rep0 >= dpos || rep0 >= wsize)) {
			why = "match distance beyond the dictionary";
			goto corrupt;
		}
		if (unlikely(mark != NULL) && base + wpos - rep0 - 1 < mbelow)
			mark(d->mopaque, base + wpos - rep0 - 1, len);
	copy : {
		uint32_t k = wend - wpos < len ? wend - wpos : len;

		copy_match(win, wsize, wpos, rep0, k);
		wpos += k;
		dpos += k;
		len -= k;
	}
	}
	goto out;
overrun:
	why = "LZMA data runs past its chunk";
corrupt:
	ret = zerr_set(err, -EIO, d->cur.coff, "LZMA2 chunk at %llu: %s",
		       (unsigned long long)d->cur.coff, why);
out:
	d->ipos = (uint32_t)(ip - d->inbuf);
	d->rng = rng;
	d->code = code;
	d->state = state;
	d->rep[0] = rep0;
	d->rep[1] = rep1;
	d->rep[2] = rep2;
	d->rep[3] = rep3;
	d->pend = len;
	d->uoff += wpos - d->wpos;
	d->chunk_left -= wpos - d->wpos;
	d->wpos = wpos;
	d->dpos = dpos;
	return ret;
}

/* After an LZMA chunk's last byte: all its input used, the range coder finished. */
static int lzma_finish(struct lzma2dec *d, struct zerr *err)
{
	if (d->rng < RC_TOP && d->ipos < d->ilen) {
		d->rng <<= 8;
		d->code = (d->code << 8) | d->inbuf[d->ipos++];
	}
	if (d->pend || d->ipos != d->ilen || d->code != 0)
		return zerr_set(err, -EIO, d->cur.coff,
				"LZMA2 chunk at %llu: does not end where its header says",
				(unsigned long long)d->cur.coff);
	return 0;
}

/* ---- chunks ---- */

/* Pulls exactly len bytes at d->coff into buf; a short read is truncation. */
static int pull_exact(struct lzma2dec *d, void *buf, size_t len, struct zerr *err)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = d->pull(d->popaque, d->coff + got, (char *)buf + got, len - got);

		if (n < 0)
			return zerr_set(err, (int)n, d->coff + got, "reading LZMA2 data at %llu",
					(unsigned long long)(d->coff + got));
		if (n == 0 || (size_t)n > len - got)
			return zerr_set(err, -EIO, d->coff + got,
					"LZMA2 data truncated at %llu (no end marker)",
					(unsigned long long)(d->coff + got));
		got += (size_t)n;
	}
	d->coff += len;
	return 0;
}

static int bad_chunk(struct lzma2dec *d, struct zerr *err, const char *why)
{
	return zerr_set(err, -EIO, d->cur.coff, "LZMA2 chunk at %llu (control 0x%02x): %s",
			(unsigned long long)d->cur.coff, d->cur.control, why);
}

/* Reads and checks the header at d->coff into d->cur (nothing applied yet). */
static int read_header(struct lzma2dec *d, uint8_t *props, struct zerr *err)
{
	uint8_t h[6];
	int ret;

	memset(&d->cur, 0, sizeof(d->cur));
	d->cur.coff = d->coff;
	d->cur.uoff = d->uoff;
	ret = pull_exact(d, h, 1, err);
	if (ret < 0)
		return ret;
	d->cur.control = h[0];
	if (d->expect_control >= 0 && h[0] != d->expect_control)
		return bad_chunk(d, err, "not the chunk the checkpoint was made at");
	d->expect_control = -1;
	if (h[0] == 0)
		return 0;
	if (h[0] >= 0x03 && h[0] < 0x80)
		return bad_chunk(d, err, "reserved control byte");
	ret = pull_exact(d, h + 1, h[0] < 0x80 ? 2 : h[0] < 0xC0 ? 4 : 5, err);
	if (ret < 0)
		return ret;
	if (h[0] < 0x80) {
		d->cur.usize = ((uint32_t)h[1] << 8 | h[2]) + 1;
		d->cur.csize = d->cur.usize;
	} else {
		d->cur.usize = ((uint32_t)(h[0] & 0x1F) << 16 | (uint32_t)h[1] << 8 | h[2]) + 1;
		d->cur.csize = ((uint32_t)h[3] << 8 | h[4]) + 1;
		*props = h[5];
	}
	if (d->need_dict_reset && h[0] != 0x01 && h[0] < 0xE0)
		return bad_chunk(d, err, "the first chunk must reset the dictionary");
	if (h[0] >= 0x80 && h[0] < 0xC0 && d->need_props)
		return bad_chunk(d, err, "LZMA chunk without properties after a dictionary reset");
	if (d->cur.usize > d->ulimit - d->uoff)
		return bad_chunk(d, err, "more data than the expected uncompressed size");
	return 0;
}

/* Applies the resets of d->cur and pulls its body.  The callback has run. */
static int start_chunk(struct lzma2dec *d, uint8_t props, struct zerr *err)
{
	uint8_t c = d->cur.control;
	int ret;

	if (c == 0x01 || c >= 0xE0) {
		d->dpos = 0;
		d->need_dict_reset = 0;
		d->need_props = 1;
	}
	if (c >= 0xC0) {
		if (props_decode(props, &d->lc, &d->lp, &d->pb) < 0)
			return bad_chunk(d, err, "invalid lc/lp/pb");
		d->need_props = 0;
	}
	if (c >= 0xA0)
		state_reset(d);
	ret = pull_exact(d, d->inbuf, d->cur.csize, err);
	if (ret < 0)
		return ret;
	d->ilen = d->cur.csize;
	d->chunk_left = d->cur.usize;
	if (c < 0x80) {
		d->kind = K_COPY;
		d->ipos = 0;
		return 0;
	}
	d->kind = K_LZMA;
	if (d->ilen < 5 || d->inbuf[0] != 0)
		return bad_chunk(d, err, "bad range coder start");
	d->code = (uint32_t)d->inbuf[1] << 24 | (uint32_t)d->inbuf[2] << 16 |
		  (uint32_t)d->inbuf[3] << 8 | d->inbuf[4];
	d->rng = UINT32_MAX;
	d->ipos = 5;
	d->pend = 0;
	return 0;
}

static int next_chunk(struct lzma2dec *d, struct zerr *err)
{
	uint8_t props = 0;
	int ret = read_header(d, &props, err);

	if (ret < 0)
		return ret;
	if (d->cur.control == 0) {
		d->ended = 1;
		return 0;
	}
	if (d->cb) {
		d->in_cb = 1;
		ret = d->cb(d->cbopaque, d, &d->cur);
		d->in_cb = 0;
		if (ret < 0)
			return zerr_set(err, ret, d->cur.coff, "stopped by the chunk callback");
	}
	return start_chunk(d, props, err);
}

/* Decodes (or copies) up to n bytes of the current chunk into the window. */
static int fill(struct lzma2dec *d, uint32_t n, struct zerr *err)
{
	int ret = 0;

	if (d->wpos == d->wsize)
		d->wpos = 0;
	if (n > d->wsize - d->wpos)
		n = d->wsize - d->wpos;
	if (n > d->chunk_left)
		n = d->chunk_left;
	d->rpos = d->wpos;
	if (d->kind == K_COPY) {
		memcpy(d->win + d->wpos, d->inbuf + d->ipos, n);
		d->ipos += n;
		d->wpos += n;
		d->dpos += n;
		d->uoff += n;
		d->chunk_left -= n;
	} else {
		ret = lzma_run(d, n, err);
		if (ret == 0 && d->chunk_left == 0)
			ret = lzma_finish(d, err);
	}
	d->avail = d->wpos - d->rpos;
	if (d->chunk_left == 0)
		d->kind = K_NONE;
	return ret;
}

ssize_t lzma2dec_read(struct lzma2dec *d, void *buf, size_t len, struct zerr *err)
{
	uint8_t *out = buf;
	size_t done = 0;
	int ret = 0;

	if (d->err)
		return zerr_set(err, d->err, d->cur.coff, "LZMA2 decoder failed before");
	while (done < len) {
		if (d->avail) {
			uint32_t k = len - done < d->avail ? (uint32_t)(len - done) : d->avail;

			memcpy(out + done, d->win + d->rpos, k);
			d->rpos += k;
			d->avail -= k;
			done += k;
		} else if (d->kind != K_NONE) {
			uint32_t want = len - done < CHUNK_MAX ? (uint32_t)(len - done) : CHUNK_MAX;

			ret = fill(d, want, err);
		} else if (!d->ended) {
			ret = next_chunk(d, err);
		} else {
			break;
		}
		if (ret < 0) {
			d->err = ret;
			return ret;
		}
	}
	return (ssize_t)done;
}

/* ---- checkpoints ---- */

/* What a checkpoint at a chunk with control c must hold, beyond the offsets. */
static int needs_window(uint8_t c)
{
	return c == 0x02 || (c >= 0x80 && c < 0xE0);
}

static int needs_props(uint8_t c)
{
	return c == 0x02 || (c >= 0x80 && c < 0xC0);
}

static int needs_probs(uint8_t c)
{
	return c == 0x02 || (c >= 0x80 && c < 0xA0);
}

static int ckpt_export(const struct lzma2dec *d, struct lzma2dec_ckpt *ck, int copy_window)
{
	uint8_t c = d->cur.control;

	memset(ck, 0, sizeof(*ck));
	if (!d->in_cb)
		return -EINVAL;
	ck->uoff = d->cur.uoff;
	ck->coff = d->cur.coff;
	ck->dict_size = d->dict_size;
	ck->control = c;
	if (needs_window(c)) {
		uint32_t w = d->dpos < d->wsize ? (uint32_t)d->dpos : d->wsize;
		uint32_t tail = w < d->wpos ? w : d->wpos; /* the newest bytes, before wpos */

		ck->dpos = d->dpos;
		ck->wlen = w;
		if (!copy_window)
			goto props;
		ck->window = malloc(w ? w : 1);
		if (!ck->window)
			goto nomem;
		memcpy(ck->window, d->win + d->wsize - (w - tail), w - tail);
		memcpy(ck->window + (w - tail), d->win + d->wpos - tail, tail);
	}
props:
	if (needs_props(c) && !d->need_props) {
		ck->has_props = 1;
		ck->props = (uint8_t)(d->lc + 9 * (d->lp + 5 * d->pb));
		ck->state = (uint8_t)d->state;
		memcpy(ck->rep, d->rep, sizeof(ck->rep));
		if (needs_probs(c)) {
			ck->nprobs = nprobs_of(d->lc, d->lp);
			ck->probs = malloc(ck->nprobs * sizeof(uint16_t));
			if (!ck->probs)
				goto nomem;
			memcpy(ck->probs, d->probs, ck->nprobs * sizeof(uint16_t));
		}
	}
	return 0;
nomem:
	lzma2dec_ckpt_release(ck);
	return -ENOMEM;
}

int lzma2dec_ckpt_export(const struct lzma2dec *d, struct lzma2dec_ckpt *ck)
{
	return ckpt_export(d, ck, 1);
}

int lzma2dec_ckpt_export_nowin(const struct lzma2dec *d, struct lzma2dec_ckpt *ck)
{
	return ckpt_export(d, ck, 0);
}

void lzma2dec_ckpt_release(struct lzma2dec_ckpt *ck)
{
	free(ck->probs);
	free(ck->window);
	memset(ck, 0, sizeof(*ck));
}

/* The promises lzma2dec_ckpt_load and lzma2dec_resume rely on; have_win: the window is there. */
static int ckpt_check(const struct lzma2dec_ckpt *ck, int have_win)
{
	uint8_t c = ck->control;
	uint32_t lc, lp, pb, w;

	if (ck->dict_size > LZMA2DEC_DICT_MAX || c == 0 || (c > 2 && c < 0x80))
		return -EINVAL;
	w = window_of(ck->dict_size);
	if (!needs_window(c))
		return ck->dpos || ck->wlen || ck->has_props || ck->nprobs ? -EINVAL : 0;
	if (ck->dpos > ck->uoff || ck->wlen != (ck->dpos < w ? ck->dpos : w) ||
	    (ck->wlen && !have_win))
		return -EINVAL;
	if (!needs_props(c))
		return ck->has_props || ck->nprobs ? -EINVAL : 0;
	if (!ck->has_props)
		return c == 0x02 && !ck->nprobs ? 0 : -EINVAL;
	if (props_decode(ck->props, &lc, &lp, &pb) < 0 || ck->state > 11)
		return -EINVAL;
	/* a matched literal reads at rep0 unchecked: it must be inside the window */
	if (ck->state >= 7 && (ck->rep[0] >= ck->dpos || ck->rep[0] >= w))
		return -EINVAL;
	if (ck->nprobs != (needs_probs(c) ? nprobs_of(lc, lp) : 0) || (ck->nprobs && !ck->probs))
		return -EINVAL;
	for (uint32_t i = 0; i < ck->nprobs; i++)
		if (ck->probs[i] == 0 || ck->probs[i] >= 2048)
			return -EINVAL;
	return 0;
}

/* Both resumes: with win NULL, ck->window is copied into a window of the decoder's own. */
static int resume(const struct lzma2dec_ckpt *ck, uint32_t dict_size, uint64_t ulimit,
		  lzma2dec_pull_fn pull, void *opaque, uint8_t *win, struct lzma2dec **out)
{
	struct lzma2dec *d;
	int ret;

	*out = NULL;
	if (ck->dict_size != dict_size || ckpt_check(ck, win || ck->window) < 0 ||
	    ck->uoff > ulimit)
		return -EINVAL;
	ret = alloc_dec(ck->dict_size, ulimit, pull, opaque, win, &d);
	if (ret < 0)
		return ret;
	d->coff = ck->coff;
	d->uoff = ck->uoff;
	d->dpos = ck->dpos;
	d->expect_control = ck->control;
	if (ck->wlen && !win)
		memcpy(d->win, ck->window, ck->wlen);
	d->wpos = ck->wlen;
	d->need_props = !ck->has_props;
	if (ck->has_props) {
		props_decode(ck->props, &d->lc, &d->lp, &d->pb);
		d->state = ck->state;
		memcpy(d->rep, ck->rep, sizeof(d->rep));
		if (ck->nprobs)
			memcpy(d->probs, ck->probs, ck->nprobs * sizeof(uint16_t));
	}
	*out = d;
	return 0;
}

int lzma2dec_resume(const struct lzma2dec_ckpt *ck, uint32_t dict_size, uint64_t ulimit,
		    lzma2dec_pull_fn pull, void *opaque, struct lzma2dec **out)
{
	return resume(ck, dict_size, ulimit, pull, opaque, NULL, out);
}

int lzma2dec_resume_in(const struct lzma2dec_ckpt *ck, uint32_t dict_size, uint64_t ulimit,
		       lzma2dec_pull_fn pull, void *opaque, uint8_t *win, struct lzma2dec **out)
{
	*out = NULL;
	if (!win || ck->window)
		return -EINVAL;
	return resume(ck, dict_size, ulimit, pull, opaque, win, out);
}

/* ---- serialisation: "ZL2C", version 1, then the fields, little-endian ---- */

#define CK_MAGIC   "ZL2C"
#define CK_VERSION 1
#define CK_HEAD	   64

size_t lzma2dec_ckpt_size(const struct lzma2dec_ckpt *ck)
{
	return CK_HEAD + 2 * (size_t)ck->nprobs + ck->wlen;
}

ssize_t lzma2dec_ckpt_save(const struct lzma2dec_ckpt *ck, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t need = lzma2dec_ckpt_size(ck);

	if (len < need)
		return -ENOSPC;
	memcpy(p, CK_MAGIC, 4);
	p[4] = CK_VERSION;
	p[5] = ck->control;
	p[6] = ck->props;
	p[7] = ck->has_props;
	put_le(p + 8, ck->uoff, 8);
	put_le(p + 16, ck->coff, 8);
	put_le(p + 24, ck->dpos, 8);
	put_le(p + 32, ck->dict_size, 4);
	put_le(p + 36, ck->state, 4);
	for (int i = 0; i < 4; i++)
		put_le(p + 40 + 4 * i, ck->rep[i], 4);
	put_le(p + 56, ck->nprobs, 4);
	put_le(p + 60, ck->wlen, 4);
	p += CK_HEAD;
	for (uint32_t i = 0; i < ck->nprobs; i++, p += 2)
		put_le(p, ck->probs[i], 2);
	if (ck->wlen)
		memcpy(p, ck->window, ck->wlen);
	return (ssize_t)need;
}

int lzma2dec_ckpt_load(const void *buf, size_t len, struct lzma2dec_ckpt *ck)
{
	const uint8_t *p = buf;
	uint64_t state;

	memset(ck, 0, sizeof(*ck));
	if (len < CK_HEAD || memcmp(p, CK_MAGIC, 4) != 0 || p[4] != CK_VERSION || p[7] > 1)
		return -EINVAL;
	ck->control = p[5];
	ck->props = p[6];
	ck->has_props = p[7];
	ck->uoff = get_le(p + 8, 8);
	ck->coff = get_le(p + 16, 8);
	ck->dpos = get_le(p + 24, 8);
	ck->dict_size = (uint32_t)get_le(p + 32, 4);
	state = get_le(p + 36, 4);
	for (int i = 0; i < 4; i++)
		ck->rep[i] = (uint32_t)get_le(p + 40 + 4 * i, 4);
	ck->nprobs = (uint32_t)get_le(p + 56, 4);
	ck->wlen = (uint32_t)get_le(p + 60, 4);
	if (state > 11 || ck->nprobs > LZMA2DEC_PROBS_MAX ||
	    ck->wlen > window_of(LZMA2DEC_DICT_MAX) || len != lzma2dec_ckpt_size(ck))
		goto bad;
	ck->state = (uint8_t)state;
	p += CK_HEAD;
	if (ck->nprobs) {
		ck->probs = malloc(ck->nprobs * sizeof(uint16_t));
		if (!ck->probs)
			goto nomem;
		for (uint32_t i = 0; i < ck->nprobs; i++, p += 2)
			ck->probs[i] = (uint16_t)get_le(p, 2);
	}
	if (ck->wlen) {
		ck->window = malloc(ck->wlen);
		if (!ck->window)
			goto nomem;
		memcpy(ck->window, p, ck->wlen);
	}
	if (ckpt_check(ck, ck->window != NULL) < 0)
		goto bad;
	return 0;
bad:
	lzma2dec_ckpt_release(ck);
	return -EINVAL;
nomem:
	lzma2dec_ckpt_release(ck);
	return -ENOMEM;
}
