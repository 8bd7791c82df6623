/* SPDX-License-Identifier: MIT */
/*
 * The LZMA core of the LZMA2 decoder (lzma2dec_int.h).
 *
 * How it works.  This follows lzma-specification.txt, over the range
 * decoder of lzma2dec_rc.h: each symbol starts with an "is match" bit.  A
 * literal is 8 bits of a bit tree chosen by lc/lp context, or, after a
 * match, a "matched" literal coded against the byte at rep0 until the first
 * bit that differs.  A match is a length (2..273, in three trees) and a
 * distance: a 6-bit slot, then reverse-coded bits (slots 4-13) or direct
 * bits and 4 reverse-coded align bits.  A rep match reuses one of the last
 * four distances, and a short rep copies one byte from rep0.  The model's
 * probabilities live in one array (offsets below), so a checkpoint is a
 * plain copy of it.
 *
 * lzma2dec_lzma_run keeps every hot value in one local struct (struct run)
 * that the per-symbol helpers, always inlined, work on: the compiler keeps
 * its fields in registers as it did the locals of the single function this
 * was.  Output may stop anywhere, so the run can pause between symbols
 * and inside a match, keeping the rest of the match in d->pend.
 */
#include "lzma2dec_int.h"

#include <errno.h>
#include <string.h>

#include "lzma2dec_rc.h"

/* The per-symbol helpers: inlined whatever the compiler's budget says. */
#define HOT static inline __attribute__((always_inline))

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
#define L_LOW	    2
#define L_MID	    130
#define L_HIGH	    258

#define PROB_INIT 1024u

/* What a helper found: go on, or stop the run (data past the chunk, or corrupt). */
enum { RUN_OK = 0, RUN_SHORTREP = 1, RUN_OVERRUN = -1, RUN_FAR = -2, RUN_EOPM = -3 };

/* The hot state of one lzma2dec_lzma_run: loaded from and saved to the decoder. */
struct run {
	struct lzma2dec_rc rc;
	uint8_t *win;
	uint32_t wsize;
	uint16_t *probs;
	uint32_t lc, lpmask, pbmask;
	uint32_t state, rep0, rep1, rep2, rep3;
	uint32_t wpos;
	uint64_t dpos;
	uint64_t base; /* the uncompressed offset of win[wpos] is base + wpos (mod 2^64) */
	lzma2dec_mark_fn mark;
	void *mopaque;
	uint64_t mbelow;
};

void lzma2dec_lzma_reset(struct lzma2dec *d)
{
	uint32_t n = nprobs_of(d->lc, d->lp);

	for (uint32_t i = 0; i < n; i++)
		d->probs[i] = PROB_INIT;
	d->state = 0;
	memset(d->rep, 0, sizeof(d->rep));
}

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

/* Reports a read of len bytes at rep0 to the mark callback, if it asks for it. */
HOT void mark_rep0(struct run *r, uint32_t len)
{
	uint64_t src = r->base + r->wpos - r->rep0 - 1;

	if (unlikely(r->mark != NULL) && src < r->mbelow)
		r->mark(r->mopaque, src, len);
}

/* A matched literal: coded against the byte at rep0 until the first bit that differs. */
HOT int lit_matched(struct run *r, uint16_t *lp, uint32_t *symp)
{
	struct lzma2dec_rc *rc = &r->rc;
	uint32_t mb = r->win[back(r->wpos, r->rep0, r->wsize)], bit, sym = 1, ttt, bound;

	mark_rep0(r, 1);
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
	*symp = sym;
	return RUN_OK;
overrun:
	return RUN_OVERRUN;
}

/* A literal (the "is match" bit was 0 and is updated): writes it to the window. */
HOT int literal(struct run *r)
{
	struct lzma2dec_rc *rc = &r->rc;
	uint32_t prev = r->dpos ? r->win[(r->wpos ? r->wpos : r->wsize) - 1] : 0, sym = 1;
	uint16_t *lp = r->probs + P_LIT +
		       0x300 * ((((uint32_t)r->dpos & r->lpmask) << r->lc) + (prev >> (8 - r->lc)));
	uint32_t ttt, bound;

	if (r->state < 7) {
		/* unrolled: the most frequent symbol of all */
		TREE_BIT(lp, sym);
		TREE_BIT(lp, sym);
		TREE_BIT(lp, sym);
		TREE_BIT(lp, sym);
		TREE_BIT(lp, sym);
		TREE_BIT(lp, sym);
		TREE_BIT(lp, sym);
		TREE_BIT(lp, sym);
	} else if (lit_matched(r, lp, &sym)) {
		return RUN_OVERRUN;
	}
	r->win[r->wpos++] = (uint8_t)sym;
	r->dpos++;
	r->state = r->state < 4 ? 0 : r->state < 10 ? r->state - 3 : r->state - 6;
	return RUN_OK;
overrun:
	return RUN_OVERRUN;
}

/* A length (2..273) from the length coder at probs + base, for pos_state ps. */
HOT int len_decode(struct run *r, uint32_t base, uint32_t ps, uint32_t *len)
{
	struct lzma2dec_rc *rc = &r->rc;
	uint16_t *lb = r->probs + base;
	uint32_t s = 1, ttt, bound;

	IF_BIT0(lb)
	{
		UPD0(lb);
		lb += L_LOW + ps * 8;
		TREE_BIT(lb, s);
		TREE_BIT(lb, s);
		TREE_BIT(lb, s);
		*len = s - 8 + 2;
		return RUN_OK;
	}
	UPD1(lb);
	IF_BIT0(lb + 1)
	{
		UPD0(lb + 1);
		lb += L_MID + ps * 8;
		TREE_BIT(lb, s);
		TREE_BIT(lb, s);
		TREE_BIT(lb, s);
		*len = s - 8 + 10;
		return RUN_OK;
	}
	UPD1(lb + 1);
	lb += L_HIGH;
	do
		TREE_BIT(lb, s);
	while (s < 0x100);
	*len = s - 0x100 + 18;
	return RUN_OK;
overrun:
	return RUN_OVERRUN;
}

/* The low bits of a distance of slot 4-13: nb reverse-coded bits. */
HOT int dist_special(struct run *r, uint32_t slot, uint32_t nb, uint32_t *dist)
{
	struct lzma2dec_rc *rc = &r->rc;
	uint16_t *sp = r->probs + P_SPECIAL + *dist - slot - 1;
	uint32_t m = 1, ttt, bound;

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
			*dist |= 1u << i;
		}
	}
	return RUN_OK;
overrun:
	return RUN_OVERRUN;
}

/* The low bits of a distance of slot 14 or more: nb - 4 direct bits, then 4 align bits. */
HOT int dist_direct(struct run *r, uint32_t nb, uint32_t *dist)
{
	struct lzma2dec_rc *rc = &r->rc;
	uint32_t direct = 0, m = 1, ttt, bound;

	for (uint32_t i = nb - 4; i; i--)
		DIRECT_BIT(direct);
	*dist += direct << 4;
	for (uint32_t i = 0; i < 4; i++) {
		IF_BIT0(r->probs + P_ALIGN + m)
		{
			UPD0(r->probs + P_ALIGN + m);
			m <<= 1;
		}
		else
		{
			UPD1(r->probs + P_ALIGN + m);
			m = (m << 1) | 1;
			*dist |= 1u << i;
		}
	}
	return unlikely(*dist == UINT32_MAX) ? RUN_EOPM : RUN_OK;
overrun:
	return RUN_OVERRUN;
}

/* A match (the "is rep" bit was 0 and is updated): its length into *len, its distance into rep0. */
HOT int match(struct run *r, uint32_t ps, uint32_t *len)
{
	struct lzma2dec_rc *rc = &r->rc;
	uint32_t slot = 1, ls, dist, ttt, bound;
	int ret;

	r->rep3 = r->rep2;
	r->rep2 = r->rep1;
	r->rep1 = r->rep0;
	ret = len_decode(r, P_LEN, ps, len);
	if (ret)
		return ret;
	r->state = r->state < 7 ? 7 : 10;
	ls = *len < 6 ? *len - 2 : 3;
	do
		TREE_BIT(r->probs + P_SLOT + (ls << 6), slot);
	while (slot < 64);
	slot -= 64;
	if (slot < 4) {
		dist = slot;
	} else {
		uint32_t nb = (slot >> 1) - 1;

		dist = (2 | (slot & 1)) << nb;
		ret = slot < 14 ? dist_special(r, slot, nb, &dist) : dist_direct(r, nb, &dist);
		if (ret)
			return ret;
	}
	r->rep0 = dist;
	return RUN_OK;
overrun:
	return RUN_OVERRUN;
}

/* rep1-rep3 (the "is rep0" bit was 1 and is updated): moves the one chosen to rep0. */
HOT int rep_pick(struct run *r)
{
	struct lzma2dec_rc *rc = &r->rc;
	uint16_t *probs = r->probs;
	uint32_t state = r->state, dist, ttt, bound;

	IF_BIT0(probs + P_IS_REP1 + state)
	{
		UPD0(probs + P_IS_REP1 + state);
		dist = r->rep1;
	}
	else
	{
		UPD1(probs + P_IS_REP1 + state);
		IF_BIT0(probs + P_IS_REP2 + state)
		{
			UPD0(probs + P_IS_REP2 + state);
			dist = r->rep2;
		}
		else
		{
			UPD1(probs + P_IS_REP2 + state);
			dist = r->rep3;
			r->rep3 = r->rep2;
		}
		r->rep2 = r->rep1;
	}
	r->rep1 = r->rep0;
	r->rep0 = dist;
	return RUN_OK;
overrun:
	return RUN_OVERRUN;
}

/*
 * A rep match (the "is rep" bit was 1 and is updated): RUN_SHORTREP after
 * a one-byte copy from rep0, written; else its length into *len, its
 * distance into rep0.
 */
HOT int rep_match(struct run *r, uint32_t ps, uint32_t *len)
{
	struct lzma2dec_rc *rc = &r->rc;
	uint16_t *probs = r->probs;
	uint32_t state = r->state, ttt, bound;
	int ret;

	IF_BIT0(probs + P_IS_REP0 + state)
	{
		UPD0(probs + P_IS_REP0 + state);
		IF_BIT0(probs + P_REP0_LONG + (state << 4) + ps)
		{
			UPD0(probs + P_REP0_LONG + (state << 4) + ps);
			if (unlikely(r->rep0 >= r->dpos || r->rep0 >= r->wsize))
				return RUN_FAR;
			r->state = state < 7 ? 9 : 11;
			mark_rep0(r, 1);
			r->win[r->wpos] = r->win[back(r->wpos, r->rep0, r->wsize)];
			r->wpos++;
			r->dpos++;
			return RUN_SHORTREP;
		}
		UPD1(probs + P_REP0_LONG + (state << 4) + ps);
	}
	else
	{
		UPD1(probs + P_IS_REP0 + state);
		if (rep_pick(r))
			return RUN_OVERRUN;
	}
	ret = len_decode(r, P_REP_LEN, ps, len);
	if (ret)
		return ret;
	r->state = state < 7 ? 8 : 11;
	return RUN_OK;
overrun:
	return RUN_OVERRUN;
}

/*
 * One symbol at r->wpos: a literal or a short rep, written (RUN_OK with
 * *len 0), or a match whose length goes to *len and distance to rep0,
 * checked against the data (RUN_OK), or a stop.
 */
HOT int symbol(struct run *r, uint32_t *len)
{
	struct lzma2dec_rc *rc = &r->rc;
	uint32_t ps = (uint32_t)r->dpos & r->pbmask, ttt, bound;
	uint16_t *p = r->probs + P_IS_MATCH + (r->state << 4) + ps;
	int ret;

	IF_BIT0(p)
	{
		UPD0(p);
		return literal(r);
	}
	UPD1(p);
	IF_BIT0(r->probs + P_IS_REP + r->state)
	{
		UPD0(r->probs + P_IS_REP + r->state);
		ret = match(r, ps, len);
	}
	else
	{
		UPD1(r->probs + P_IS_REP + r->state);
		ret = rep_match(r, ps, len);
		if (ret == RUN_SHORTREP)
			return RUN_OK;
	}
	if (ret)
		return ret;
	if (unlikely(r->rep0 >= r->dpos || r->rep0 >= r->wsize))
		return RUN_FAR;
	mark_rep0(r, *len);
	return RUN_OK;
overrun:
	return RUN_OVERRUN;
}

/* Loads the hot state of d into r. */
HOT void run_load(struct run *r, struct lzma2dec *d)
{
	r->rc.ip = d->inbuf + d->ipos;
	r->rc.iend = d->inbuf + d->ilen;
	r->rc.rng = d->rng;
	r->rc.code = d->code;
	r->win = d->win;
	r->wsize = d->wsize;
	r->probs = d->probs;
	r->lc = d->lc;
	r->lpmask = (1u << d->lp) - 1;
	r->pbmask = (1u << d->pb) - 1;
	r->state = d->state;
	r->rep0 = d->rep[0];
	r->rep1 = d->rep[1];
	r->rep2 = d->rep[2];
	r->rep3 = d->rep[3];
	r->wpos = d->wpos;
	r->dpos = d->dpos;
	r->base = d->uoff - d->wpos;
	r->mark = d->mark;
	r->mopaque = d->mopaque;
	r->mbelow = d->mark_below;
}

/* Saves r (and the rest of a match, len) back into d. */
HOT void run_save(const struct run *r, struct lzma2dec *d, uint32_t len)
{
	d->ipos = (uint32_t)(r->rc.ip - d->inbuf);
	d->rng = r->rc.rng;
	d->code = r->rc.code;
	d->state = r->state;
	d->rep[0] = r->rep0;
	d->rep[1] = r->rep1;
	d->rep[2] = r->rep2;
	d->rep[3] = r->rep3;
	d->pend = len;
	d->uoff += r->wpos - d->wpos;
	d->chunk_left -= r->wpos - d->wpos;
	d->wpos = r->wpos;
	d->dpos = r->dpos;
}

int lzma2dec_lzma_run(struct lzma2dec *d, uint32_t n, struct zerr *err)
{
	struct run r;
	uint32_t wend = d->wpos + n, len = d->pend;
	const char *why;
	int ret = RUN_OK;

	run_load(&r, d);
	/* len != 0: the rest of a match the last call stopped in */
	while (len || r.wpos < wend) {
		uint32_t k;

		if (!len) {
			ret = symbol(&r, &len);
			if (unlikely(ret))
				break;
			if (!len)
				continue;
		}
		k = wend - r.wpos < len ? wend - r.wpos : len;
		copy_match(r.win, r.wsize, r.wpos, r.rep0, k);
		r.wpos += k;
		r.dpos += k;
		len -= k;
		if (len)
			break; /* the window is full: the rest waits for the next call */
	}
	run_save(&r, d, len);
	if (likely(ret == RUN_OK))
		return 0;
	why = ret == RUN_OVERRUN ? "LZMA data runs past its chunk"
	      : ret == RUN_FAR	 ? "match distance beyond the dictionary"
				 : "end-of-payload marker inside an LZMA2 chunk";
	return zerr_set(err, -EIO, d->cur.coff, "LZMA2 chunk at %llu: %s",
			(unsigned long long)d->cur.coff, why);
}

int lzma2dec_lzma_finish(struct lzma2dec *d, struct zerr *err)
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
