/* SPDX-License-Identifier: MIT */
/*
 * Checkpoints of the LZMA2 decoder (lzma2dec.h): export at a chunk
 * boundary, check, resume, and the "ZL2C" serialisation.
 *
 * How it works.  At a chunk start the decoder's whole state is the window,
 * dpos, the properties, the LZMA state, rep0-rep3 and the probability
 * array; which of them the chunk needs follows from its control byte (the
 * table in lzma2dec.h), and a checkpoint holds exactly those.  Resuming
 * makes a fresh decoder, puts them back, and has it expect that control
 * byte at ck->coff, so a checkpoint for another chunk fails at once.
 * Every field of a loaded or given checkpoint is checked before a decoder
 * relies on it (ckpt_check).
 */
#include "lzma2dec_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"

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
	ret = lzma2dec_alloc(ck->dict_size, ulimit, pull, opaque, win, &d);
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
