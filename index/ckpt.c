/* SPDX-License-Identifier: MIT */
#include "ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spill.h"
#include "zcrc.h"
#include "zmctx.h"

/* Where a set's blobs went: a region of the context's spill file, laid out as s->blob was. */
struct ckpt_spill {
	struct spill *file; /* borrowed: the context's, which outlives its sets */
	uint64_t base;
	uint32_t *crc; /* of each point's blob, taken as it was written */
};

size_t ckpt_set_bytes(const struct ckpt_set *s)
{
	size_t held;

	if (!s)
		return 0;
	held = s->spill ? sizeof(*s->spill) + s->n * sizeof(*s->spill->crc) : s->blob_len;
	return sizeof(*s) + s->n * sizeof(*s->pt) + s->ncrc * sizeof(*s->crc) + held;
}

void ckpt_set_free(struct ckpt_set *s)
{
	if (!s)
		return;
	if (s->spill) {
		spill_drop(s->spill->file, s->spill->base, s->blob_len);
		free(s->spill->crc);
		free(s->spill);
	}
	free(s->pt);
	free(s->crc);
	free(s->blob);
	free(s);
}

int ckpt_set_spill(struct ckpt_set *s, struct spill *file)
{
	struct ckpt_spill *sp;
	int ret;

	if (s->spill || s->blob_len == 0)
		return 0;
	sp = calloc(1, sizeof(*sp));
	if (!sp || !(sp->crc = malloc(s->n * sizeof(*sp->crc)))) {
		free(sp);
		return -ENOMEM;
	}
	ret = spill_put(file, s->blob, s->blob_len, &sp->base);
	if (ret < 0) {
		free(sp->crc);
		free(sp);
		return ret;
	}
	sp->file = file;
	for (size_t i = 0; i < s->n; i++)
		sp->crc[i] = zcrc32(0, s->blob + s->pt[i].blob_off, s->pt[i].blob_len);
	free(s->blob);
	s->blob = NULL;
	s->spill = sp;
	return 0;
}

bool ckpt_set_spilled(const struct ckpt_set *s)
{
	return s->spill != NULL;
}

int ckpt_set_spill_fd(const struct ckpt_set *s, uint64_t *base)
{
	*base = s->spill ? s->spill->base : 0;
	return s->spill ? spill_fd(s->spill->file) : -1;
}

int ckpt_blob_read(const struct ckpt_set *s, size_t i, void *buf)
{
	const struct ckpt_point *p = &s->pt[i];

	if (!s->spill) {
		memcpy(buf, s->blob + p->blob_off, p->blob_len);
		return 0;
	}
	if (spill_read(s->spill->file, s->spill->base + p->blob_off, buf, p->blob_len) < 0)
		return -EIO;
	return zcrc32(0, buf, p->blob_len) == s->spill->crc[i] ? 0 : -EIO;
}

int ckpt_blobs_copy(const struct ckpt_set *s, uint8_t **out)
{
	uint8_t *b;

	*out = NULL;
	if (s->blob_len == 0)
		return 0;
	b = malloc(s->blob_len);
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		int ret = ckpt_blob_read(s, i, b + s->pt[i].blob_off);

		if (ret < 0) {
			free(b);
			return ret;
		}
	}
	*out = b;
	return 0;
}

size_t ckpt_find(const struct ckpt_set *s, uint64_t want)
{
	size_t lo = 0, hi = s->n; /* pt[lo].uoff <= want < pt[hi].uoff */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->pt[mid].uoff <= want)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t span_end(const struct ckpt_set *s, size_t i)
{
	return i + 1 < s->n ? s->pt[i + 1].uoff : s->usize;
}

/* Where the piece that starts at pos in span i ends: the next multiple of CKPT_PIECE, or the span's
 * end. */
static uint64_t piece_end(const struct ckpt_set *s, size_t i, uint64_t pos)
{
	uint64_t grid = (pos / CKPT_PIECE + 1) * CKPT_PIECE, end = span_end(s, i);

	return grid < end ? grid : end;
}

static uint64_t pieces_in(const struct ckpt_set *s, size_t i)
{
	uint64_t n = 0;

	for (uint64_t pos = s->pt[i].uoff, end = span_end(s, i); pos < end; n++)
		pos = piece_end(s, i, pos);
	return n;
}

int ckpt_set_check(const struct ckpt_set *s)
{
	uint64_t piece = 0;

	if (s->n < 1 || s->usize == 0 || s->pt[0].uoff != 0 || s->pt[0].blob_len != 0)
		return -EINVAL;
	for (size_t i = 0; i < s->n; i++) {
		const struct ckpt_point *p = &s->pt[i];

		if (i > 0 && (p->uoff <= s->pt[i - 1].uoff || p->blob_len == 0))
			return -EINVAL;
		if (p->uoff >= s->usize || p->blob_off > s->blob_len ||
		    p->blob_len > s->blob_len - p->blob_off || p->piece0 != piece)
			return -EINVAL;
		piece += pieces_in(s, i);
	}
	return piece == s->ncrc ? 0 : -EINVAL;
}

/*
 * The build works with prefix CRCs: C(x), the CRC-32 of the entry's first
 * x bytes.  The CRC of any piece [a, b) follows from C(a) and C(b) alone
 * (zcrc32_combine), so a point that the codec hands over late, after more
 * output (it must first see what the next bytes reference), costs no
 * second look at the bytes: C is kept at every multiple of CKPT_PIECE and
 * at the end of every ckpt_build_out call, where points may be.
 */
struct mark {
	uint64_t pos;
	uint32_t c; /* C(pos) */
};

struct ckpt_build {
	struct ckpt_set *s;
	size_t cap_pt;
	uint64_t cap_blob;
	uint32_t *cg;	   /* C(k * CKPT_PIECE), k = 0 .. total / CKPT_PIECE */
	size_t cap_cg;	   /* entries cg holds: grown only while the size is unknown */
	struct mark *ends; /* C at the ends of ckpt_build_out calls past the last point */
	size_t nends, cap_ends;
	uint32_t *cpt;	/* C at each point */
	uint64_t total; /* bytes seen */
	uint32_t crc;	/* of [the last multiple of CKPT_PIECE, total) */
	const atomic_bool *stop;
	struct zmctx_slot *prog;  /* borrowed, or NULL */
	atomic_uint_fast64_t *at; /* borrowed, or NULL: ckpt_build_watch */
};

void ckpt_build_stop_on(struct ckpt_build *b, const atomic_bool *stop)
{
	b->stop = stop;
}

void ckpt_build_progress(struct ckpt_build *b, struct zmctx_slot *s)
{
	b->prog = s;
}

void ckpt_build_watch(struct ckpt_build *b, atomic_uint_fast64_t *at)
{
	b->at = at;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	void *na;
	size_t ncap;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	na = realloc(*arr, ncap * elem);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

int ckpt_build_new(uint64_t usize, struct ckpt_build **out)
{
	struct ckpt_build *b = calloc(1, sizeof(*b));
	uint64_t ngrid = usize == CKPT_USIZE_UNKNOWN ? 64 : usize / CKPT_PIECE + 1;

	*out = NULL;
	if (!b || ngrid > SIZE_MAX / sizeof(uint32_t) || !(b->s = calloc(1, sizeof(*b->s))) ||
	    !(b->cg = calloc((size_t)ngrid, sizeof(uint32_t)))) {
		ckpt_build_free(b);
		return -ENOMEM;
	}
	b->cap_cg = (size_t)ngrid;
	b->s->usize = usize;
	*out = b;
	/* Point 0, the entry's start, needs no blob. */
	return ckpt_build_point(b, 0, NULL, 0);
}

/* C(total). */
static uint32_t c_now(const struct ckpt_build *b)
{
	uint64_t g = b->total / CKPT_PIECE;

	return zcrc32_combine(b->cg[g], b->crc, b->total - g * CKPT_PIECE);
}

int ckpt_build_out(void *vb, const void *buf, size_t len)
{
	struct ckpt_build *b = vb;
	const uint8_t *p = buf;

	if (len > b->s->usize - b->total)
		return -EIO; /* more than the entry holds */
	if (b->stop && atomic_load_explicit(b->stop, memory_order_relaxed))
		return -ECANCELED;
	zmctx_pass_add(b->prog, len);
	while (len > 0) {
		uint64_t room = CKPT_PIECE - b->total % CKPT_PIECE;
		size_t n = len < room ? len : (size_t)room;

		b->crc = zcrc32(b->crc, p, n);
		b->total += n;
		p += n;
		len -= n;
		if (b->total % CKPT_PIECE == 0) {
			uint64_t g = b->total / CKPT_PIECE;

			if (g >= b->cap_cg &&
			    grow((void **)&b->cg, &b->cap_cg, g + 1, sizeof(*b->cg)))
				return -ENOMEM;
			b->cg[g] = zcrc32_combine(b->cg[g - 1], b->crc, CKPT_PIECE);
			b->crc = 0;
		}
	}
	if (b->total % CKPT_PIECE) {
		if (grow((void **)&b->ends, &b->cap_ends, b->nends + 1, sizeof(*b->ends)) < 0)
			return -ENOMEM;
		b->ends[b->nends++] = (struct mark){ b->total, c_now(b) };
	}
	if (b->at)
		atomic_store_explicit(b->at, b->total, memory_order_relaxed);
	return 0;
}

/* C(pos) for a pos on the grid or at the end of an out call; -1 if neither. */
static int64_t c_at(const struct ckpt_build *b, uint64_t pos)
{
	size_t lo = 0, hi = b->nends;

	if (pos % CKPT_PIECE == 0)
		return b->cg[pos / CKPT_PIECE];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->ends[mid].pos < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < b->nends && b->ends[lo].pos == pos ? (int64_t)b->ends[lo].c : -1;
}

int ckpt_build_point(void *vb, uint64_t uoff, const void *blob, size_t len)
{
	struct ckpt_build *b = vb;
	struct ckpt_set *s = b->s;
	struct ckpt_point *p;
	int64_t c = uoff <= b->total ? c_at(b, uoff) : -1;

	if (uoff == s->usize && s->n > 0)
		return 0; /* a point at the very end has no span to start */
	if (c < 0 || (s->n > 0 && (len == 0 || len > UINT32_MAX || uoff <= s->pt[s->n - 1].uoff)) ||
	    uoff >= s->usize)
		return -EPROTO;
	if (grow((void **)&s->pt, &b->cap_pt, s->n + 1, sizeof(*s->pt)) < 0)
		return -ENOMEM;
	b->cpt = realloc(b->cpt, b->cap_pt * sizeof(*b->cpt));
	if (!b->cpt)
		return -ENOMEM;
	if (s->blob_len + len > b->cap_blob) {
		uint64_t ncap = b->cap_blob ? b->cap_blob * 2 : (1u << 16);
		void *nb;

		while (ncap < s->blob_len + len)
			ncap *= 2;
		nb = realloc(s->blob, ncap);
		if (!nb)
			return -ENOMEM;
		s->blob = nb;
		b->cap_blob = ncap;
	}
	b->cpt[s->n] = (uint32_t)c;
	p = &s->pt[s->n++];
	p->uoff = uoff;
	p->blob_off = s->blob_len;
	p->blob_len = (uint32_t)len;
	if (len)
		memcpy(s->blob + s->blob_len, blob, len);
	s->blob_len += len;
	/* Points only go forward: the ends before this one are needed no more. */
	while (b->nends > 0 && b->ends[0].pos <= uoff) {
		size_t drop = 0;

		while (drop < b->nends && b->ends[drop].pos <= uoff)
			drop++;
		memmove(b->ends, b->ends + drop, (b->nends - drop) * sizeof(*b->ends));
		b->nends -= drop;
	}
	return 0;
}

/* Every piece's CRC, from C at its two ends.  0 or -ENOMEM. */
static int pieces_from_prefix(struct ckpt_build *b, uint32_t c_end)
{
	struct ckpt_set *s = b->s;
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += (size_t)pieces_in(s, i);
	s->crc = malloc((n ? n : 1) * sizeof(*s->crc));
	if (!s->crc)
		return -ENOMEM;
	s->ncrc = 0;
	for (size_t i = 0; i < s->n; i++) {
		uint64_t a = s->pt[i].uoff, end = span_end(s, i);
		uint32_t ca = b->cpt[i];

		s->pt[i].piece0 = (uint32_t)s->ncrc;
		while (a < end) {
			uint64_t e = piece_end(s, i, a);
			uint32_t ce = e == s->usize ? c_end
				      : e == end    ? b->cpt[i + 1]
						    : b->cg[e / CKPT_PIECE];

			s->crc[s->ncrc++] = ce ^ zcrc32_combine(ca, 0, e - a);
			a = e;
			ca = ce;
		}
	}
	return 0;
}

int ckpt_build_end(struct ckpt_build *b, struct ckpt_set **out)
{
	struct ckpt_set *s = b->s;
	int ret = 0;

	*out = NULL;
	if (s->usize == CKPT_USIZE_UNKNOWN) {
		s->usize = b->total;
		/* A point at the very end has no span to start (ckpt_build_point could not tell).
		 */
		if (s->n > 1 && s->pt[s->n - 1].uoff == s->usize)
			s->blob_len -= s->pt[--s->n].blob_len;
	}
	if (b->total != s->usize)
		ret = -EIO;
	else
		ret = pieces_from_prefix(b, c_now(b));
	if (ret == 0) {
		/* Give back what doubling left over: a set lives as long as its reader. */
		void *nb = s->blob_len ? realloc(s->blob, s->blob_len) : NULL;

		if (nb)
			s->blob = nb;
		*out = s;
		b->s = NULL;
	}
	ckpt_build_free(b);
	return ret;
}

void ckpt_build_free(struct ckpt_build *b)
{
	if (!b)
		return;
	ckpt_set_free(b->s);
	free(b->cg);
	free(b->ends);
	free(b->cpt);
	free(b);
}

struct ckpt_dec {
	const struct ckpt_set *s;
	void *inner;
	const struct ckpt_inner_ops *ops;
	size_t span;	   /* the span the next piece is in */
	uint64_t pos;	   /* entry offset of buf[0] */
	uint32_t piece;	   /* set->crc index of the piece in buf */
	size_t have, used; /* bytes in buf, and handed out */
	uint8_t buf[CKPT_PIECE];
};

int ckpt_dec_new(const struct ckpt_set *s, size_t i, void *inner, const struct ckpt_inner_ops *ops,
		 struct ckpt_dec **out)
{
	struct ckpt_dec *d = malloc(sizeof(*d));

	*out = NULL;
	if (!d) {
		ops->close(inner);
		return -ENOMEM;
	}
	d->s = s;
	d->inner = inner;
	d->ops = ops;
	d->span = i;
	d->pos = s->pt[i].uoff;
	d->piece = s->pt[i].piece0;
	d->have = d->used = 0;
	*out = d;
	return 0;
}

/* Decodes and checks the piece at d->pos + d->have (the buffer is used up). */
/*
 * Decodes and checks the piece at d->pos + d->have (the buffer is used up)
 * into dst if it fits in room (the caller's buffer: no copy, and its bytes
 * count as handed out), else into d->buf.  Returns the bytes placed in dst
 * (0: the piece waits in d->buf), or a negative errno.
 */
static ssize_t next_piece(struct ckpt_dec *d, struct zsrc *src, uint8_t *dst, size_t room,
			  struct zerr *err)
{
	const struct ckpt_set *s = d->s;
	uint64_t pos = d->pos + d->have, end;
	size_t len, got = 0;
	uint8_t *to;

	if (d->have) {
		d->piece++;
		if (d->span + 1 < s->n && pos == s->pt[d->span + 1].uoff)
			d->span++;
	}
	end = piece_end(s, d->span, pos);
	len = (size_t)(end - pos);
	to = room >= len ? dst : d->buf;
	d->pos = pos;
	d->have = d->used = 0;
	while (got < len) {
		ssize_t n = d->ops->read(d->inner, src, to + got, len - got, err);

		if (n < 0)
			return n;
		if (n == 0)
			return zerr_set(err, -EIO, 0,
					"data ended at offset %" PRIu64 " of %" PRIu64, pos + got,
					s->usize);
		got += (size_t)n;
	}
	if (d->piece >= s->ncrc || zcrc32(0, to, len) != s->crc[d->piece])
		return zerr_set(err, -EIO, 0,
				"checksum mismatch in the piece at offset %" PRIu64
				" (resumed from checkpoint %zu at %" PRIu64 ")",
				pos, d->span, s->pt[d->span].uoff);
	d->have = len;
	d->used = to == dst ? len : 0;
	return to == dst ? (ssize_t)len : 0;
}

ssize_t ckpt_dec_read(struct ckpt_dec *d, struct zsrc *src, void *buf, size_t len, struct zerr *err)
{
	uint8_t *out = buf;
	size_t done = 0;

	while (done < len && d->pos + d->used < d->s->usize) {
		size_t n;

		if (d->used == d->have) {
			ssize_t direct = next_piece(d, src, out + done, len - done, err);

			if (direct < 0)
				return direct;
			done += (size_t)direct;
			if (direct > 0)
				continue;
		}
		n = d->have - d->used;
		if (n > len - done)
			n = len - done;
		memcpy(out + done, d->buf + d->used, n);
		d->used += n;
		done += n;
	}
	return (ssize_t)done;
}

uint64_t ckpt_dec_tell(const struct ckpt_dec *d)
{
	return d->pos + d->used;
}

size_t ckpt_dec_cost(const struct ckpt_dec *d)
{
	return sizeof(*d) + d->ops->cost(d->inner);
}

void ckpt_dec_close(struct ckpt_dec *d)
{
	if (!d)
		return;
	d->ops->close(d->inner);
	free(d);
}
