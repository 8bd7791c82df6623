/* SPDX-License-Identifier: MIT */
/*
 * Raw LZMA2 decoder with checkpoints at chunk boundaries (see lzma2dec.h):
 * the chunk layer.
 *
 * How it works.  lzma2dec_read loops over three steps: hand out bytes that
 * are decoded but not yet returned; else, at a chunk boundary, pull and
 * check the next chunk header (the chunk callback runs here), then pull the
 * chunk's whole compressed body (at most 64 KiB) into inbuf; else decode
 * min(wanted, rest of the chunk, room before the window wraps) bytes into
 * the circular window, and go round.  Because a whole chunk body is in
 * memory, the LZMA core (lzma2dec_lzma.c) only checks one input bound per
 * range-coder normalisation; because output may stop anywhere, the core
 * can pause between symbols, keeping the unfinished part of a match.
 * Checkpoints (lzma2dec_ckpt.c) are taken from inside the chunk callback.
 *
 * Checks mirror liblzma's, so that both accept the same streams: the first
 * chunk resets the dictionary, a dictionary reset requires new properties
 * before the next LZMA chunk, lc + lp <= 4, distances stay below
 * min(dpos, window), no end marker inside a chunk, and each LZMA chunk ends
 * with all its compressed bytes used and the range coder's code at 0.
 */
#include "lzma2dec_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint32_t lzma2dec_window_size(uint32_t dict_size)
{
	return window_of(dict_size);
}

/* A decoder with window win (lent; NULL: one of its own): see lzma2dec_int.h. */
int lzma2dec_alloc(uint32_t dict_size, uint64_t ulimit, lzma2dec_pull_fn pull, void *opaque,
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
	int ret = lzma2dec_alloc(dict_size, ulimit, pull, opaque, NULL, out);

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
		lzma2dec_lzma_reset(d);
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
		ret = lzma2dec_lzma_run(d, n, err);
		if (ret == 0 && d->chunk_left == 0)
			ret = lzma2dec_lzma_finish(d, err);
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
