/* SPDX-License-Identifier: MIT */
/*
 * Building zstd checkpoints (zstdckpt_build, zstdckpt_build_blobs).
 *
 * How it works.  libzstd's streaming decoder is fed the frame one block at
 * a time (header, then each block's 3-byte header and body, then the
 * checksum), so that after each feed its output is exactly that block's
 * bytes; they go into a ring of Window_Size bytes plus a block, which
 * holds the window at every boundary.  Before each compressed block is
 * fed, zstdseq follows the tables it sets and remembers where its
 * sequences lie.  At a boundary past the next span, the sequences of the
 * last blocks that have any are decoded to learn the three repeat offsets;
 * then the tables in force, the offsets and the ring go to the caller's fn.
 *
 * Table modes a dictionary cannot say directly (zstdseq_describe): a
 * predefined table, or one not set yet in the frame (a repeat of it would
 * be corrupt data), becomes the predefined distribution written as a
 * description.  An RLE table cannot be written (accuracy log 0 is not
 * describable); it stands in as predefined only when the next block with
 * sequences replaces it (checked by reading ahead, build_peek).
 *
 * Blobs (zstdckpt_build_blobs): a point becomes pending with a bitmap over
 * its window; the sequences of every block within a window after a
 * pending point are decoded in full (lengths, offsets with repeat codes
 * resolved), and each match's source below the point's uoff is marked.  A
 * window byte x is settled once the output passes x + window (no later
 * match reaches it), and kept bytes are copied out before the ring, one
 * window plus one block, overwrites them.  At uoff + window (or the
 * frame's verified end) the runs and bytes go to zstdckpt_blob_write.
 */
#define ZSTD_STATIC_LINKING_ONLY
#include "zstdckpt_int.h"
#include "zstdseq.h"

#include "le.h"

#include <zstd_errors.h>

#define PEEK_MAX  64u	       /* blocks read ahead for an RLE table, before giving up */
#define BLOB_BITS (8ull << 20) /* the most bitmap bits per point: 1 MiB */

struct blobs {
	const struct zstdckpt_sink *sink;
	uint64_t window;	    /* zstdckpt_frame_window(): no match reaches further back */
	unsigned glog;		    /* a bitmap bit covers 1 << glog window bytes */
	struct zstdckpt_pend *pend; /* oldest (lowest uoff) first */
	size_t npend, pend_cap;
	uint64_t pend_bytes;	     /* what the pending points hold */
	uint32_t rep[3];	     /* the offsets, followed from the oldest pending point on */
	struct zstdckpt_blobbuf out; /* where blobs are written */
	struct zstdckpt_blob_stats st;
};

struct build {
	const struct zstddec_frame *f;
	struct zsrc *src;
	struct zstdckpt_in in;
	ZSTD_DStream *ds;
	bool done;	/* libzstd said the frame is complete */
	uint8_t *ring;	/* output offset x is at ring[x % rsize] */
	uint64_t rsize; /* the window plus a block: min(Window_Size, usize) + ZSTDCKPT_BLOCK_MAX */
	uint64_t rpos;
	struct zstdseq_tables s;
	struct zstdseq_fse dt[3]; /* scratch for decoding the last block's sequences */
	struct zstdckpt ck;
	struct zstdckpt_stats st;
	zstdckpt_fn fn; /* zstdckpt_build's */
	void *arg;
	struct blobs *m;     /* zstdckpt_build_blobs's */
	uint64_t span, next; /* points: at or past next, then span apart */
	uint64_t uoff, coff; /* output so far; the next block's header */
	bool last;	     /* the frame's last block was fed */
};

/* Feeds p[0..n) to libzstd; the output goes into the ring (and the sink); *got its size. */
static int build_feed(struct build *b, const uint8_t *p, size_t n, uint64_t coff, uint64_t *got,
		      struct zerr *err)
{
	const struct zstdckpt_sink *sink = b->m ? b->m->sink : NULL;
	ZSTD_inBuffer in = { p, n, 0 };

	*got = 0;
	for (;;) {
		ZSTD_outBuffer out = { b->ring + b->rpos, (size_t)(b->rsize - b->rpos), 0 };
		size_t in_pos = in.pos;
		size_t r = ZSTD_decompressStream(b->ds, &out, &in);

		if (ZSTD_isError(r))
			return zerr_set(err,
					ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation
						? -ENOMEM
						: -EIO,
					coff, "%s", ZSTD_getErrorName(r));
		if (out.pos && sink && sink->out) {
			int ret = sink->out(sink->arg, out.dst, out.pos);

			if (ret)
				return ret;
		}
		b->rpos += out.pos;
		if (b->rpos == b->rsize)
			b->rpos = 0;
		*got += out.pos;
		if (r == 0)
			b->done = true;
		if (in.pos == in.size && out.pos < out.size)
			return 0;
		if (in.pos == in_pos && out.pos == 0)
			return zerr_set(err, -EIO, coff, "decoder made no progress");
	}
}

/* Whether the next block with sequences (from coff on) repeats a table in mask. */
static int build_peek(struct build *b, uint64_t coff, unsigned mask, bool *bad, struct zerr *err)
{
	*bad = true;
	for (unsigned i = 0; i < PEEK_MAX; i++) {
		const uint8_t *p;
		uint32_t hdr, bsize;
		unsigned rep;
		bool has_seq;
		int ret = zstdckpt_in_get(&b->in, b->src, coff, 3, &p, err);

		if (ret)
			return ret;
		hdr = (uint32_t)get_le(p, 3);
		bsize = hdr >> 3;
		if (((hdr >> 1) & 3) == 3 || bsize > ZSTDCKPT_BLOCK_MAX)
			return zerr_set(err, -EIO, coff, "bad block header");
		if (((hdr >> 1) & 3) == 2) {
			ret = zstdckpt_in_get(&b->in, b->src, coff + 3, bsize, &p, err);
			if (ret)
				return ret;
			if (zstdseq_block_repeats(p, bsize, &rep, &has_seq))
				return zerr_set(err, -EIO, coff, "malformed compressed block");
			if (has_seq) {
				*bad = (rep & mask) != 0;
				return 0;
			}
		}
		if (hdr & 1) {
			*bad = false;
			return 0;
		}
		coff += 3 + (((hdr >> 1) & 3) == 1 ? 1 : bsize);
	}
	return 0;
}

/* Runs rep through the sequences of the last `back` blocks that have any; 0s if it cannot. */
static int build_reps_from(struct build *b, uint64_t back, uint32_t *rep, struct zerr *err)
{
	const struct zstdseq_tables *s = &b->s;

	for (uint64_t i = s->seq_blocks - back; i < s->seq_blocks; i++) {
		const struct zstdseq_block *h = &s->hist[i % ZSTDSEQ_HIST];
		const uint8_t *p;
		int ret = zstdckpt_in_get(&b->in, b->src, h->coff, h->len, &p, err);

		if (ret)
			return ret;
		for (int k = 0; k < 3; k++)
			ret |= zstdseq_fse_make(&b->dt[k], k, &h->t[k]);
		/* libzstd took this block; if we cannot decode it, the offsets stay unknown */
		if (ret || zstdseq_decode(b->dt, p, h->len, h->n, rep, NULL)) {
			rep[0] = rep[1] = rep[2] = 0;
			return 0;
		}
		b->st.nseq += h->n;
	}
	return 0;
}

/* The repeat offsets now; 0 where the remembered blocks do not tell. */
static int build_reps(struct build *b, uint32_t *rep, struct zerr *err)
{
	uint64_t nb = b->s.seq_blocks;
	int ret = 0;

	for (uint64_t back = 1; back <= (nb < ZSTDSEQ_HIST ? nb : ZSTDSEQ_HIST); back++) {
		bool first = back == nb; /* from the frame's first block with sequences */

		rep[0] = first ? 1 : 0;
		rep[1] = first ? 4 : 0;
		rep[2] = first ? 8 : 0;
		ret = build_reps_from(b, back, rep, err);
		if (ret || (rep[0] && rep[1] && rep[2]))
			return ret;
	}
	if (nb == 0) {
		rep[0] = 1;
		rep[1] = 4;
		rep[2] = 8;
	}
	return ret;
}

/* Fills b->ck for a point at uoff (block header at coff) with offsets rep. */
static void build_fill(struct build *b, uint64_t uoff, uint64_t coff, uint64_t wlen,
		       const uint32_t *rep)
{
	struct zstdckpt *ck = &b->ck;

	ck->uoff = uoff;
	ck->coff = coff;
	ck->wlen = wlen;
	memcpy(ck->rep, rep, sizeof(ck->rep));
	zstdseq_describe(&b->s, ck);
}

/* ------------------------------------------------------------------------ */
/* Pending points and their marking. */

static uint64_t pend_size(const struct zstdckpt_pend *p)
{
	return p->nbits_b + p->runs_cap * sizeof(*p->runs) + p->kept_cap;
}

/* Drops the pending points from index `from` on (the newest ones). */
static void blobs_drop(struct blobs *m, size_t from)
{
	while (m->npend > from) {
		struct zstdckpt_pend *p = &m->pend[--m->npend];

		m->pend_bytes -= pend_size(p);
		free(p->bits);
		free(p->runs);
		free(p->kept);
	}
}

/* Starts a pending point at b->ck.  0 or -ENOMEM. */
static int pend_new(struct build *b, struct zerr *err)
{
	struct blobs *m = b->m;
	struct zstdckpt_pend *p;
	size_t nb = (size_t)(((b->ck.wlen - 1) >> m->glog) / 64 + 1) * 8;

	if (zstdckpt_grow(&m->pend, &m->pend_cap, m->npend + 1, sizeof(*p), NULL))
		return zerr_set(err, -ENOMEM, b->ck.coff, "out of memory");
	p = &m->pend[m->npend];
	memset(p, 0, sizeof(*p));
	p->bits = calloc(1, nb);
	if (!p->bits)
		return zerr_set(err, -ENOMEM, b->ck.coff, "out of memory");
	p->ck = b->ck;
	p->lo = p->done = p->run_end = b->ck.uoff - b->ck.wlen;
	p->nbits_b = nb;
	if (m->npend == 0)
		memcpy(m->rep, b->ck.rep, sizeof(m->rep));
	m->npend++;
	m->pend_bytes += nb;
	return 0;
}

/* Sets bits [a, e). */
static void bits_set(uint64_t *w, uint64_t a, uint64_t e)
{
	while (a < e) {
		uint64_t n = 64 - (a & 63);

		if (n > e - a)
			n = e - a;
		w[a >> 6] |= (n == 64 ? ~0ull : (1ull << n) - 1) << (a & 63);
		a += n;
	}
}

/* The first bit in [i, end) that is `set`, or end. */
static uint64_t bits_next(const uint64_t *w, uint64_t i, uint64_t end, bool set)
{
	while (i < end) {
		uint64_t v = (set ? w[i >> 6] : ~w[i >> 6]) & (~0ull << (i & 63));

		if (v) {
			i = (i & ~63ull) + (uint64_t)__builtin_ctzll(v);
			return i < end ? i : end;
		}
		i = (i & ~63ull) + 64;
	}
	return end;
}

/* A match copies [src, src + len): marks it in the windows of the points after which it lies. */
static int blobs_mark(void *arg, uint64_t src, uint32_t len)
{
	struct blobs *m = arg;

	/* newest first: a source at or past a point's uoff is past every older one's */
	for (size_t i = m->npend; i-- > 0;) {
		struct zstdckpt_pend *p = &m->pend[i];
		uint64_t a = src > p->lo ? src : p->lo;
		uint64_t e = src + len < p->ck.uoff ? src + len : p->ck.uoff;

		if (src >= p->ck.uoff)
			break;
		if (a < e)
			bits_set(p->bits, (a - p->lo) >> m->glog, ((e - 1 - p->lo) >> m->glog) + 1);
	}
	return 0;
}

/* Keeps window bytes [x, x + n) of p: a run, and the bytes from the ring. */
static int pend_keep(struct build *b, struct zstdckpt_pend *p, uint64_t x, uint64_t n)
{
	struct blobs *m = b->m;
	uint64_t before = p->nkept;

	if (p->nruns && x == p->run_end) {
		p->runs[2 * p->nruns - 1] += (uint32_t)n;
	} else {
		if (zstdckpt_grow(&p->runs, &p->runs_cap, 2 * (p->nruns + 1), sizeof(*p->runs),
				  &m->pend_bytes))
			return -ENOMEM;
		p->runs[2 * p->nruns] = (uint32_t)(x - p->run_end);
		p->runs[2 * p->nruns + 1] = (uint32_t)n;
		p->nruns++;
	}
	p->run_end = x + n;
	if (zstdckpt_grow(&p->kept, &p->kept_cap, p->nkept + n, 1, &m->pend_bytes))
		return -ENOMEM;
	while (p->nkept - before < n) {
		uint64_t at = (x + (p->nkept - before)) % b->rsize;
		uint64_t c = n - (p->nkept - before);

		if (c > b->rsize - at)
			c = b->rsize - at;
		memcpy(p->kept + p->nkept, b->ring + at, (size_t)c);
		p->nkept += (size_t)c;
	}
	return 0;
}

/* Settles p's window up to hi: copies out the marked bytes of [p->done, hi). */
static int pend_settle(struct build *b, struct zstdckpt_pend *p, uint64_t hi)
{
	unsigned glog = b->m->glog;
	uint64_t g, gend;

	if (hi <= p->done)
		return 0;
	g = (p->done - p->lo) >> glog;
	gend = ((hi - 1 - p->lo) >> glog) + 1;
	while ((g = bits_next(p->bits, g, gend, true)) < gend) {
		uint64_t ge = bits_next(p->bits, g, gend, false);
		uint64_t a = p->lo + (g << glog), e = p->lo + (ge << glog);
		int ret;

		a = a > p->done ? a : p->done;
		e = e < hi ? e : hi;
		ret = pend_keep(b, p, a, e - a);
		if (ret)
			return ret;
		g = ge;
	}
	p->done = hi;
	return 0;
}

/* Hands out the oldest pending point, settled to its uoff, and drops it. */
static int pend_finish(struct build *b, struct zerr *err)
{
	struct blobs *m = b->m;
	struct zstdckpt_pend *p = &m->pend[0];
	size_t len;
	int ret = pend_settle(b, p, p->ck.uoff);

	if (ret)
		return zerr_set(err, ret, p->ck.coff, "out of memory");
	len = zstdckpt_blob_write(&m->out, b->f, p, err);
	if (!len)
		return -ENOMEM; /* zstdckpt_blob_write's one failure */
	m->st.points++;
	m->st.blob_bytes += len;
	m->st.window_bytes_dense += p->ck.wlen;
	m->st.window_bytes_kept += p->nkept;
	m->st.runs += p->nruns;
	ret = m->sink->point ? m->sink->point(m->sink->arg, p->ck.uoff, m->out.blob, len) : 0;
	/* the oldest goes: swap it to the end and drop it there */
	if (m->npend > 1) {
		struct zstdckpt_pend t = m->pend[0];

		memmove(&m->pend[0], &m->pend[1], (m->npend - 1) * sizeof(*p));
		m->pend[m->npend - 1] = t;
	}
	blobs_drop(m, m->npend - 1);
	return ret;
}

/* Marks with the matches of the block at output [start, start + got) (with
 * sequences if seq), then settles and hands out what that allows. */
static int blobs_block(struct build *b, uint64_t start, uint64_t got, bool seq, struct zerr *err)
{
	struct blobs *m = b->m;
	uint64_t end = start + got;
	int ret = 0;

	if (m->npend == 0)
		return 0;
	if (b->st.lost_coff) {
		blobs_drop(m, 0);
		return 0;
	}
	if (seq) {
		const struct zstdseq_block *h = &b->s.hist[(b->s.seq_blocks - 1) % ZSTDSEQ_HIST];
		struct zstdseq_sink k = { start, end, m->window, blobs_mark, m };
		const uint8_t *p;

		ret = zstdckpt_in_get(&b->in, b->src, h->coff, h->len, &p, err);
		if (ret)
			return ret;
		for (int t = 0; t < 3; t++)
			ret |= zstdseq_fse_make(&b->dt[t], t, &h->t[t]);
		/* libzstd took this block and the parser does not: no more points */
		if (ret || zstdseq_decode(b->dt, p, h->len, h->n, m->rep, &k)) {
			b->st.lost_coff = h->coff;
			blobs_drop(m, 0);
			return 0;
		}
		m->st.seq_marked += h->n;
	}
	/* no match at or past uoff + window reaches back before uoff */
	while (m->npend && m->pend[0].ck.uoff + m->window <= end)
		if ((ret = pend_finish(b, err)))
			return ret;
	/* a window byte x is settled once the output has passed x + window */
	for (size_t i = 0; i < m->npend && end > m->window; i++) {
		struct zstdckpt_pend *p = &m->pend[i];
		uint64_t hi = end - m->window < p->ck.uoff ? end - m->window : p->ck.uoff;

		if (pend_settle(b, p, hi))
			return zerr_set(err, -ENOMEM, p->ck.coff, "out of memory");
	}
	if (m->pend_bytes > m->st.pend_peak)
		m->st.pend_peak = m->pend_bytes;
	while (m->npend && m->pend_bytes > ZSTDCKPT_PEND_MAX) {
		blobs_drop(m, m->npend - 1);
		m->st.skip_cost++;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */

/* At the boundary before the block at coff: makes a point there if one can be made. */
static int build_point(struct build *b, uint64_t uoff, uint64_t coff, bool *taken, struct zerr *err)
{
	uint64_t wlen = uoff < zstdckpt_frame_window(b->f) ? uoff : zstdckpt_frame_window(b->f);
	uint32_t rep[3];
	unsigned rle = 0;
	size_t n1, n2;
	int ret;

	*taken = false;
	ret = build_reps(b, rep, err);
	if (ret)
		return ret;
	/* while points are pending, the offsets are followed through every block */
	if (b->m && b->m->npend)
		memcpy(rep, b->m->rep, sizeof(rep));
	for (int k = 0; k < 3; k++) {
		if (rep[k] == 0 || rep[k] > wlen) {
			b->st.skip_rep++;
			return 0;
		}
		if (b->s.t[k].mode == ZSTDSEQ_T_RLE)
			rle |= 1u << k;
	}
	if (rle) {
		bool bad;

		ret = build_peek(b, coff, rle, &bad, err);
		if (ret)
			return ret;
		if (bad) {
			b->st.skip_rle++;
			return 0;
		}
	}
	build_fill(b, uoff, coff, wlen, rep);
	if (b->m) {
		ret = pend_new(b, err);
	} else {
		/* the ring's last wlen bytes, oldest first */
		n2 = (size_t)(wlen < b->rpos ? wlen : b->rpos);
		n1 = (size_t)wlen - n2;
		ret = b->fn(b->arg, &b->ck, b->ring + (n1 ? b->rsize - n1 : 0), n1,
			    b->ring + b->rpos - n2, n2);
	}
	if (ret)
		return ret;
	b->st.nckpt++;
	*taken = true;
	return 0;
}

/* Feeds the frame header. */
static int build_head(struct build *b, struct zerr *err)
{
	const struct zstddec_frame *f = b->f;
	const uint8_t *p;
	uint64_t got;
	int ret = zstdckpt_in_get(&b->in, b->src, f->coff, f->hsize, &p, err);

	if (!ret)
		ret = build_feed(b, p, f->hsize, f->coff, &got, err);
	b->coff = f->coff + f->hsize;
	return ret;
}

/* Feeds the next block (b->last once it was the frame's last), then makes a point after it. */
static int build_block(struct build *b, struct zerr *err)
{
	uint32_t hdr, type, bsize;
	uint64_t seq_before = b->s.seq_blocks, start = b->uoff, coff = b->coff, got;
	const uint8_t *p;
	size_t body;
	bool taken;
	int ret = zstdckpt_in_get(&b->in, b->src, coff, 3, &p, err);

	if (ret)
		return ret;
	hdr = (uint32_t)get_le(p, 3);
	type = (hdr >> 1) & 3;
	bsize = hdr >> 3;
	if (type == 3 || bsize > ZSTDCKPT_BLOCK_MAX)
		return zerr_set(err, -EIO, coff, "bad block header");
	body = type == 1 ? 1 : bsize;
	ret = zstdckpt_in_get(&b->in, b->src, coff, 3 + body, &p, err);
	if (ret)
		return ret;
	ret = build_feed(b, p, 3 + body, coff, &got, err);
	if (ret)
		return ret;
	/* libzstd took it: if we cannot follow it, no more checkpoints */
	if (type == 2 && !b->st.lost_coff && zstdseq_block_follow(&b->s, p + 3, body, coff + 3))
		b->st.lost_coff = coff;
	b->uoff += got;
	b->coff = coff += 3 + body;
	b->st.nblocks++;
	if (b->f->usize != ZSTDDEC_UNKNOWN && b->uoff > b->f->usize)
		return zerr_set(err, -EIO, coff, "frame is larger than its size says");
	if (b->m) {
		ret = blobs_block(b, start, got, b->s.seq_blocks != seq_before, err);
		if (ret)
			return ret;
	}
	b->last = hdr & 1;
	if (b->last || b->uoff < b->next || b->st.lost_coff)
		return 0;
	ret = build_point(b, b->uoff, coff, &taken, err);
	if (!ret && taken)
		b->next = b->uoff + b->span;
	return ret;
}

/* After the last block: the checksum, the sizes, and the points the end settles. */
static int build_end(struct build *b, struct zerr *err)
{
	const struct zstddec_frame *f = b->f;
	uint64_t coff = b->coff, got;
	const uint8_t *p;
	int ret;

	if (f->checksum) {
		ret = zstdckpt_in_get(&b->in, b->src, coff, 4, &p, err);
		if (!ret)
			ret = build_feed(b, p, 4, coff, &got, err);
		if (ret)
			return ret;
		coff += 4;
	}
	if (!b->done || coff != f->coff + f->csize)
		return zerr_set(err, -EIO, coff, "frame does not end where its blocks do");
	if (f->usize != ZSTDDEC_UNKNOWN && b->uoff != f->usize)
		return zerr_set(err, -EIO, coff, "frame is smaller than its size says");
	b->st.usize = b->uoff;
	/* verified: the points whose windows the end settles */
	while (b->m && b->m->npend)
		if ((ret = pend_finish(b, err)))
			return ret;
	return 0;
}

static int build_blocks(struct build *b, struct zerr *err)
{
	int ret = build_head(b, err);

	while (!ret && !b->last)
		ret = build_block(b, err);
	return ret ? ret : build_end(b, err);
}

static void build_free(struct build *b)
{
	if (!b)
		return;
	if (b->m) {
		blobs_drop(b->m, 0);
		free(b->m->pend);
		free(b->m->out.raw);
		free(b->m->out.blob);
		ZSTD_freeCCtx(b->m->out.cc);
		free(b->m);
	}
	ZSTD_freeDStream(b->ds);
	zstdckpt_ring_free(b->ring, (size_t)b->rsize, HUGEMEM_PAGE);
	free(b->in.buf);
	free(b);
}

/* A build pass over f, ready for build_blocks; blobs if `blobs`. */
static int build_new(struct zsrc *src, const struct zstddec_frame *f, uint64_t span, bool blobs,
		     struct build **out, struct zerr *err)
{
	struct build *b;
	int ret;

	*out = NULL;
	if (span == 0)
		return zerr_set(err, -EINVAL, f->coff, "span is 0");
	ret = zstdckpt_frame_usable(f, err);
	if (ret)
		return ret;
	b = calloc(1, sizeof(*b));
	if (!b)
		return zerr_set(err, -ENOMEM, f->coff, "out of memory");
	b->f = f;
	b->src = src;
	b->span = b->next = span;
	b->in.end = f->coff + f->csize;
	b->rsize = zstdckpt_frame_window(f) + ZSTDCKPT_BLOCK_MAX;
	b->in.buf = malloc(ZSTDCKPT_IN_CAP);
	b->ring = zstdckpt_ring_alloc((size_t)b->rsize, HUGEMEM_PAGE);
	b->ds = ZSTD_createDStream();
	zstdseq_tables_init(&b->s);
	if (blobs) {
		b->m = calloc(1, sizeof(*b->m));
		if (b->m) {
			b->m->window = zstdckpt_frame_window(f);
			while ((b->m->window >> b->m->glog) > BLOB_BITS)
				b->m->glog++;
			b->m->out.cc = ZSTD_createCCtx();
		}
	}
	if (!b->in.buf || !b->ring || !b->ds || (blobs && (!b->m || !b->m->out.cc))) {
		build_free(b);
		return zerr_set(err, -ENOMEM, f->coff, "out of memory");
	}
	if (ZSTD_isError(ZSTD_DCtx_setParameter(b->ds, ZSTD_d_windowLogMax,
						zstdseq_window_log(f->window)))) {
		build_free(b);
		return zerr_set(err, -ENOTSUP, f->coff, "window too large for libzstd");
	}
	*out = b;
	return 0;
}

int zstdckpt_build(struct zsrc *src, const struct zstddec_frame *f, uint64_t span, zstdckpt_fn fn,
		   void *arg, struct zstdckpt_stats *st, struct zerr *err)
{
	struct build *b;
	int ret = build_new(src, f, span, false, &b, err);

	if (ret)
		return ret;
	b->fn = fn;
	b->arg = arg;
	ret = build_blocks(b, err);
	if (!ret && st)
		*st = b->st;
	build_free(b);
	return ret;
}

int zstdckpt_build_blobs(struct zsrc *src, const struct zstddec_frame *f, uint64_t span,
			 const struct zstdckpt_sink *s, struct zstdckpt_blob_stats *st,
			 struct zerr *err)
{
	struct build *b;
	int ret = build_new(src, f, span, true, &b, err);

	if (ret)
		return ret;
	b->m->sink = s;
	ret = build_blocks(b, err);
	if (!ret && st) {
		*st = b->m->st;
		st->ck = b->st;
		st->ck.nckpt = (uint32_t)st->points;
	}
	build_free(b);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* zstdckpt_build_blobs pulled by a reader (zstdckpt_run_*). */

struct zstdckpt_run {
	struct zstddec_frame f; /* the build's: a copy, the caller's may be a temporary */
	struct build *b;
	struct zstdckpt_sink s;
	uint64_t handed; /* output returned so far: [handed, b->uoff) waits in the ring */
	int err;
	bool ended; /* verified to its end */
};

int zstdckpt_run_open(struct zsrc *src, const struct zstddec_frame *f, uint64_t span,
		      const struct zstdckpt_sink *s, struct zstdckpt_run **out, struct zerr *err)
{
	struct zstdckpt_run *x = calloc(1, sizeof(*x));
	int ret;

	*out = NULL;
	if (!x)
		return zerr_set(err, -ENOMEM, f->coff, "out of memory");
	x->s = *s;
	x->f = *f;
	ret = build_new(src, &x->f, span, true, &x->b, err);
	if (!ret) {
		x->b->m->sink = &x->s;
		ret = build_head(x->b, err);
	}
	if (ret) {
		zstdckpt_run_close(x);
		return ret;
	}
	*out = x;
	return 0;
}

/* Copies what waits in the ring to buf, at most len bytes; returns how many. */
static size_t run_copy(struct zstdckpt_run *x, uint8_t *buf, size_t len)
{
	const struct build *b = x->b;
	size_t done = 0;

	while (done < len && x->handed < b->uoff) {
		uint64_t at = x->handed % b->rsize, n = b->uoff - x->handed;

		if (n > b->rsize - at)
			n = b->rsize - at;
		if (n > len - done)
			n = len - done;
		memcpy(buf + done, b->ring + at, (size_t)n);
		done += (size_t)n;
		x->handed += n;
	}
	return done;
}

ssize_t zstdckpt_run_read(struct zstdckpt_run *x, struct zsrc *src, void *buf, size_t len,
			  struct zerr *err)
{
	size_t done = 0;
	int ret = 0;

	if (x->err)
		return zerr_set(err, x->err, x->b->coff, "zstd checkpoint build failed before");
	x->b->src = src;
	while (ret == 0 && done < len) {
		done += run_copy(x, (uint8_t *)buf + done, len - done);
		if (done < len && !x->b->last)
			ret = build_block(x->b, err);
		else if (done < len)
			break;
	}
	/* The call that returns the last byte has verified the frame (fmt.h). */
	if (ret == 0 && x->b->last && x->handed == x->b->uoff && !x->ended) {
		ret = build_end(x->b, err);
		x->ended = ret == 0;
	}
	if (ret) {
		x->err = ret;
		return ret;
	}
	return (ssize_t)done;
}

uint64_t zstdckpt_run_tell(const struct zstdckpt_run *x)
{
	return x->handed;
}

size_t zstdckpt_run_cost(const struct zstdckpt_run *x)
{
	const struct build *b = x->b;

	return sizeof(*x) + sizeof(*b) + (size_t)b->rsize + ZSTDCKPT_IN_CAP +
	       ZSTD_sizeof_DStream(b->ds) + (size_t)b->m->pend_bytes;
}

void zstdckpt_run_close(struct zstdckpt_run *x)
{
	if (!x)
		return;
	build_free(x->b);
	free(x);
}
