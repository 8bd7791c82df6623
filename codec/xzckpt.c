/* SPDX-License-Identifier: MIT */
/*
 * Checkpoints inside one xz Block (see xzckpt.h).
 *
 * How build works.  lzma2dec decodes the Block into a ring of output
 * (2 * window + one read), from which the sink gets every byte and the
 * Check is computed.  At the start of the chunk that holds each multiple
 * of span the chunk callback exports the decoder state without its window and opens a
 * bitmap over that window (the wlen bytes before the chunk).  While the
 * next window's worth of output decodes, lzma2dec's mark hook reports
 * every earlier byte a symbol reads; each open checkpoint whose uoff is
 * past the byte marks it.  Once the output reaches uoff + window, no
 * match can reach before uoff any more: the checkpoint is closed, its
 * marked bytes gathered from the ring (still there: the ring holds two
 * windows and a read) and compressed on the build's helper thread
 * (bgjob.h) while the decode goes on; the decode thread hands the blob out
 * once it is done (at most one is in flight), so zstd's share (11% of
 * the samples at 4 MiB spans, a few % at 16 MiB) leaves the thread a
 * read waits for.  The Block's end closes the rest, then Padding and
 * Check are verified.
 *
 * Resuming unpacks the kept runs straight into the decoder's window
 * (zeros between them), a buffer taken from the caller's stock of spares,
 * and hands it and the state to lzma2dec_resume_in, which checks the
 * state; the window goes back to the stock at close.
 */
#include "xzckpt.h"

#include <errno.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "bgjob.h"
#include "le.h"
#include "lzma2dec.h"
#include "src.h"
#include "zcrc.h"

#define READ_MAX 65536u /* output bytes decoded per lzma2dec_read during build */
#define RUN_GAP	 8u	/* runs closer than this are merged: a run costs 2-4 bytes */
#ifndef ZLEVEL		/* a bench may build with another */
#define ZLEVEL 1	/* zstd level for the payload: see the numbers in the report */
#endif
#define BLOB_HEAD  96u
#define HEAD_ZLEN  88u /* where in the head the payload's compressed size goes */
#define BLOB_MAGIC "ZXC1"

/* What the Block Header says, checked against the Index. */
struct xzck_hdr {
	uint64_t data_off;  /* file offset of the LZMA2 data */
	uint64_t data_size; /* its size (Compressed Size) */
	uint32_t dict;	    /* LZMA2 dictionary, capped at the Block's size */
	uint32_t check_size;
};

/* lzma2dec's pull: the LZMA2 data of one Block, through the caller's src. */
struct xzck_src {
	struct zsrc *src;
	uint64_t off, size;
};

struct xzckpt_dec {
	struct lzma2dec *ld;
	uint8_t *win; /* ld's window, when resumed: from sp, back to sp at close */
	struct xzdec_spares *sp;
	struct xzck_src pull;
	struct xzck_hdr h;
	uint64_t usize, bcoff;
	int err;
};

/* One checkpoint whose marks are still being collected. */
struct xzck_open {
	struct lzma2dec_ckpt ck; /* without its window */
	uint64_t *bits;		 /* ck.wlen bits: window byte i is needed */
};

/*
 * A closed checkpoint on its way out: gathered on the decode thread,
 * compressed by the helper, handed to the sink on the decode thread.  The
 * helper owns it from bgjob_post until the decode thread sees the job done.
 */
struct xzck_pend {
	bool full; /* posted and not handed out yet */
	uint64_t uoff;
	uint8_t *raw, *blob; /* the payload; BLOB_HEAD then the payload compressed */
	size_t rawlen, rawcap, blobcap, zlen;
	ZSTD_CCtx *cctx;
	uint64_t dense, kept, runs; /* for the stats */
};

struct xzck_build {
	const struct xzdec_block *b;
	const struct xzckpt_sink *s;
	struct xzckpt_stats *st;
	struct lzma2dec *ld;
	struct zerr *err;
	uint64_t span, next, out;
	uint64_t chunk_end; /* where the chunk being decoded ends */
	uint32_t wsize;
	uint8_t *ring;
	size_t rsize;
	struct xzck_open *open;
	size_t nopen, capopen;
	uint64_t bits_bytes; /* held by open checkpoints now */
	size_t dec_mem;
	struct bgjob *fin; /* compresses pend */
	struct xzck_pend pend;
	uint32_t *runs; /* (offset, length) pairs */
	size_t capruns;
	uint32_t crc32; /* the Check, over the output so far */
	uint64_t crc64;
};

/* ---- the Block Header ---- */

static int check_size_of(uint32_t check, uint32_t *size)
{
	*size = check == XZDEC_CHECK_NONE    ? 0
		: check == XZDEC_CHECK_CRC32 ? 4
		: check == XZDEC_CHECK_CRC64 ? 8
					     : UINT32_MAX;
	return *size == UINT32_MAX ? -ENOTSUP : 0;
}

static void filters_free(lzma_filter *f)
{
	for (size_t i = 0; i < LZMA_FILTERS_MAX && f[i].id != LZMA_VLI_UNKNOWN; i++)
		free(f[i].options);
}

/* Checks the decoded header against the Index and fills h; frees nothing. */
static int hdr_check(const struct xzdec_block *b, lzma_block *blk, struct xzck_hdr *h,
		     struct zerr *err)
{
	const lzma_options_lzma *opt = blk->filters[0].options;
	uint32_t dict;

	if (blk->filters[0].id != LZMA_FILTER_LZMA2 || blk->filters[1].id != LZMA_VLI_UNKNOWN)
		return zerr_set(err, -ENOTSUP, b->coff,
				"Block has filters besides LZMA2 (BCJ, delta...): no checkpoints");
	if (lzma_block_compressed_size(blk, b->unpadded) != LZMA_OK ||
	    (blk->uncompressed_size != LZMA_VLI_UNKNOWN && blk->uncompressed_size != b->usize))
		return zerr_set(err, -EIO, b->coff, "Block Header disagrees with Index");
	if (b->usize / XZDEC_MAX_RATIO > blk->compressed_size)
		return zerr_set(err, -EIO, b->coff, "Index claims an impossible ratio");
	dict = b->usize < opt->dict_size ? (uint32_t)b->usize : opt->dict_size;
	if (dict > XZCKPT_DICT_MAX)
		return zerr_set(err, -ENOTSUP, b->coff,
				"Block needs a %u MiB dictionary; checkpoints stop at %u MiB",
				(unsigned)(((uint64_t)dict + (1u << 20) - 1) >> 20),
				XZCKPT_DICT_MAX >> 20);
	h->data_off = b->coff + blk->header_size;
	h->data_size = blk->compressed_size;
	h->dict = dict;
	return 0;
}

/* Reads Block b's header through src and checks it (see xzckpt_build). */
static int hdr_read(struct zsrc *src, const struct xzdec_block *b, struct xzck_hdr *h,
		    struct zerr *err)
{
	uint8_t raw[LZMA_BLOCK_HEADER_SIZE_MAX];
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	lzma_block blk = { .version = 1, .filters = filters };
	lzma_ret lret;
	ssize_t n;
	int ret;

	memset(h, 0, sizeof(*h));
	if (check_size_of(b->check, &h->check_size) < 0)
		return zerr_set(err, -ENOTSUP, b->coff, "Check %s: no checkpoints",
				xzdec_check_name(b->check));
	if (b->unpadded > UINT64_MAX - 3 || b->csize != ((b->unpadded + 3) & ~(uint64_t)3))
		return zerr_set(err, -EIO, b->coff, "Block sizes in the Index disagree");
	n = zsrc_pread(src, raw, 1, b->coff);
	if (n != 1 || raw[0] == 0)
		return zerr_set(err, -EIO, b->coff, "no Block Header at %llu",
				(unsigned long long)b->coff);
	blk.check = (lzma_check)b->check;
	blk.header_size = lzma_block_header_size_decode(raw[0]);
	if (blk.header_size >= b->unpadded)
		return zerr_set(err, -EIO, b->coff, "Block Header disagrees with Index");
	n = zsrc_pread(src, raw, blk.header_size, b->coff);
	if (n != (ssize_t)blk.header_size)
		return zerr_set(err, -EIO, b->coff, "Block Header truncated");
	lret = lzma_block_header_decode(&blk, NULL, raw);
	if (lret == LZMA_OPTIONS_ERROR)
		return zerr_set(err, -ENOTSUP, b->coff, "unsupported filter or Block option");
	if (lret == LZMA_MEM_ERROR)
		return zerr_set(err, -ENOMEM, b->coff, "out of memory");
	if (lret != LZMA_OK)
		return zerr_set(err, -EIO, b->coff, "Block Header is corrupt");
	ret = hdr_check(b, &blk, h, err);
	filters_free(filters);
	return ret;
}

/* lzma2dec's pull: a failed pread of any kind is -EIO, as the header promises. */
static ssize_t src_pull(void *opaque, uint64_t coff, void *buf, size_t len)
{
	const struct xzck_src *s = opaque;
	ssize_t n;

	if (coff >= s->size)
		return 0;
	if (len > s->size - coff)
		len = (size_t)(s->size - coff);
	n = zsrc_pread(s->src, buf, len, s->off + coff);
	return n < 0 ? -EIO : n;
}

/* After the end marker: the data filled exactly the sizes the Index gave. */
static int end_check(struct lzma2dec *ld, const struct xzck_hdr *h, uint64_t usize, uint64_t bcoff,
		     struct zerr *err)
{
	if (lzma2dec_tell(ld) != usize || lzma2dec_ctell(ld) != h->data_size)
		return zerr_set(err, -EIO, h->data_off + lzma2dec_ctell(ld),
				"Block at %llu: LZMA2 data ends at %llu bytes out, %llu in; the "
				"Index says %llu and %llu",
				(unsigned long long)bcoff, (unsigned long long)lzma2dec_tell(ld),
				(unsigned long long)lzma2dec_ctell(ld), (unsigned long long)usize,
				(unsigned long long)h->data_size);
	return 0;
}

/* ---- build: marks ---- */

static void bits_set(uint64_t *w, uint64_t from, uint64_t n)
{
	while (n) {
		uint64_t i = from >> 6, sh = from & 63, k = 64 - sh < n ? 64 - sh : n;

		w[i] |= (k == 64 ? ~0ull : ((1ull << k) - 1)) << sh;
		from += k;
		n -= k;
	}
}

/* lzma2dec's mark hook: newest checkpoints first; one past src means all older ones are too. */
static void on_mark(void *opaque, uint64_t src, uint32_t len)
{
	struct xzck_build *bd = opaque;

	for (size_t i = bd->nopen; i-- > 0;) {
		struct xzck_open *o = &bd->open[i];
		uint64_t lo = o->ck.uoff - o->ck.wlen, end = src + len;

		if (src >= o->ck.uoff)
			break;
		if (src < lo) /* lzma2dec checked the distance: cannot happen */
			continue;
		if (end > o->ck.uoff)
			end = o->ck.uoff;
		bits_set(o->bits, src - lo, end - src);
	}
}

static int on_chunk(void *opaque, struct lzma2dec *ld, const struct lzma2dec_chunk *c)
{
	struct xzck_build *bd = opaque;
	struct xzck_open *o;
	int ret;

	bd->chunk_end = c->uoff + c->usize;
	if (bd->chunk_end <= bd->next)
		return 0;
	/*
	 * This chunk holds output byte next: its start is the checkpoint, at
	 * or just before next.  next is a multiple of span, so of the reader's
	 * slices too, and a span job resuming here decodes up to its first
	 * slice only the bytes before next.  The first chunk start at or past
	 * next made it decode most of a slice it does not keep (5% more of a
	 * one-Block .xz decoded on a later read).
	 */
	while (bd->next < bd->chunk_end)
		bd->next = bd->next > UINT64_MAX - bd->span ? UINT64_MAX : bd->next + bd->span;
	if (c->uoff == 0)
		return 0;
	if (bd->nopen == bd->capopen) {
		size_t cap = bd->capopen ? 2 * bd->capopen : 4;

		o = realloc(bd->open, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		bd->open = o;
		bd->capopen = cap;
	}
	o = &bd->open[bd->nopen];
	ret = lzma2dec_ckpt_export_nowin(ld, &o->ck);
	if (ret < 0)
		return ret;
	o->bits = calloc((o->ck.wlen + 63) / 64 + 1, sizeof(uint64_t));
	if (!o->bits) {
		lzma2dec_ckpt_release(&o->ck);
		return -ENOMEM;
	}
	if (o->ck.wlen) /* the first literal's context */
		bits_set(o->bits, o->ck.wlen - 1, 1);
	bd->bits_bytes += ((o->ck.wlen + 63) / 64 + 1) * sizeof(uint64_t);
	bd->nopen++;
	lzma2dec_set_mark_below(ld, c->uoff); /* the newest: the reads on_mark uses */
	return 0;
}

/* ---- build: blobs ---- */

static int grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	void *p;

	if (need <= *cap)
		return 0;
	if (need < 2 * *cap)
		need = 2 * *cap;
	p = realloc(*(void **)pp, need * elem);
	if (!p)
		return -ENOMEM;
	*(void **)pp = p;
	*cap = need;
	return 0;
}

/* The kept runs of o into bd->runs; returns their count or -ENOMEM, sets *kept. */
static ssize_t runs_of(struct xzck_build *bd, const struct xzck_open *o, uint64_t *kept)
{
	const uint64_t *w = o->bits;
	uint32_t wlen = o->ck.wlen, i = 0;
	size_t n = 0;

	*kept = 0;
	while (i < wlen) {
		uint32_t start, end;

		if (!(w[i >> 6] >> (i & 63))) { /* nothing more in this word */
			i = (i | 63) + 1;
			continue;
		}
		if (!(w[i >> 6] >> (i & 63) & 1)) {
			i += __builtin_ctzll(w[i >> 6] >> (i & 63));
			continue;
		}
		start = i;
		while (i < wlen && (w[i >> 6] >> (i & 63) & 1))
			i += (w[i >> 6] >> (i & 63)) == ~0ull >> (i & 63)
				     ? 64 - (i & 63)
				     : (uint32_t)__builtin_ctzll(~(w[i >> 6] >> (i & 63)));
		end = i < wlen ? i : wlen;
		if (n && start - (bd->runs[2 * n - 2] + bd->runs[2 * n - 1]) < RUN_GAP) {
			*kept += end - (bd->runs[2 * n - 2] + bd->runs[2 * n - 1]);
			bd->runs[2 * n - 1] = end - bd->runs[2 * n - 2];
			continue;
		}
		if (grow(&bd->runs, &bd->capruns, 2 * n + 2, sizeof(uint32_t)) < 0)
			return -ENOMEM;
		bd->runs[2 * n] = start;
		bd->runs[2 * n + 1] = end - start;
		*kept += end - start;
		n++;
	}
	return (ssize_t)n;
}

/*
 * Runs are stored as two LEB128 numbers each: the gap from the previous
 * run's end less RUN_GAP (for the first run, its offset), and the length - 1,
 * so that every run the parser accepts is in order, apart and not empty.
 */
static size_t varint_put(uint8_t *p, uint32_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Reads one number below 2^32 from p[*at..end); -1 if it does not fit or is cut. */
static int varint_get(const uint8_t *p, size_t end, size_t *at, uint64_t *v)
{
	*v = 0;
	for (int sh = 0; sh < 35 && *at < end; sh += 7) {
		uint8_t c = p[(*at)++];

		*v |= (uint64_t)(c & 0x7f) << sh;
		if (!(c & 0x80))
			return *v > UINT32_MAX ? -1 : 0;
	}
	return -1;
}

/* Copies ring bytes of uoff [from, from + n) to dst. */
static void ring_copy(const struct xzck_build *bd, uint8_t *dst, uint64_t from, uint32_t n)
{
	size_t pos = (size_t)(from % bd->rsize), k = bd->rsize - pos < n ? bd->rsize - pos : n;

	memcpy(dst, bd->ring + pos, k);
	memcpy(dst + k, bd->ring, n - k);
}

/* The blob's head but for the payload's compressed size and the CRC (pend_compress's). */
static void head_put(uint8_t *p, const struct lzma2dec_ckpt *ck, const struct xzdec_block *b,
		     size_t nruns, uint64_t kept)
{
	memset(p, 0, BLOB_HEAD);
	memcpy(p, BLOB_MAGIC, 4);
	p[4] = 1;
	p[5] = ck->control;
	p[6] = ck->props;
	p[7] = ck->has_props;
	put_le(p + 8, ck->uoff, 8);
	put_le(p + 16, ck->coff, 8);
	put_le(p + 24, ck->dpos, 8);
	put_le(p + 32, ck->dict_size, 4);
	p[36] = ck->state;
	for (int i = 0; i < 4; i++)
		put_le(p + 40 + 4 * i, ck->rep[i], 4);
	put_le(p + 56, ck->nprobs, 4);
	put_le(p + 60, ck->wlen, 4);
	put_le(p + 64, b->coff, 8);
	put_le(p + 72, b->usize, 8);
	put_le(p + 80, nruns, 4);
	put_le(p + 84, kept, 4);
}

static uint32_t blob_crc(const uint8_t *p, size_t len)
{
	return lzma_crc32(p + BLOB_HEAD, len - BLOB_HEAD, lzma_crc32(p, BLOB_HEAD - 4, 0));
}

/* The helper's job: compresses the payload and seals the blob with its CRC. */
static void pend_compress(void *opaque)
{
	struct xzck_pend *p = opaque;

	p->zlen = ZSTD_compressCCtx(p->cctx, p->blob + BLOB_HEAD, p->blobcap - BLOB_HEAD, p->raw,
				    p->rawlen, ZLEVEL);
	if (ZSTD_isError(p->zlen))
		return;
	put_le(p->blob + HEAD_ZLEN, p->zlen, 4);
	put_le(p->blob + BLOB_HEAD - 4, blob_crc(p->blob, BLOB_HEAD + p->zlen), 4);
}

/* Hands out the checkpoint in flight, if any: waits for it with wait, else only if done. */
static int pend_deliver(struct xzck_build *bd, bool wait)
{
	struct xzck_pend *p = &bd->pend;
	int ret;

	if (!p->full)
		return 0;
	if (wait)
		bgjob_wait(bd->fin);
	else if (!bgjob_idle(bd->fin))
		return 0;
	p->full = false;
	if (ZSTD_isError(p->zlen))
		return zerr_set(bd->err, -ENOMEM, bd->b->coff, "zstd: %s",
				ZSTD_getErrorName(p->zlen));
	if (bd->st) {
		bd->st->points++;
		bd->st->blob_bytes += BLOB_HEAD + p->zlen;
		bd->st->window_bytes_dense += p->dense;
		bd->st->window_bytes_kept += p->kept;
		bd->st->raw_bytes += p->rawlen;
		bd->st->runs += p->runs;
	}
	ret = bd->s->point(bd->s->arg, p->uoff, p->blob, BLOB_HEAD + p->zlen);
	if (ret)
		return zerr_set(bd->err, ret, bd->b->coff, "stopped by the checkpoint sink");
	return 0;
}

/* Gathers open checkpoint o from the ring and posts it for compression. */
static int point_emit(struct xzck_build *bd, struct xzck_open *o)
{
	const struct lzma2dec_ckpt *ck = &o->ck;
	struct xzck_pend *p = &bd->pend;
	uint64_t kept, lo = ck->uoff - ck->wlen;
	ssize_t nruns = runs_of(bd, o, &kept);
	size_t rawlen, at;
	int ret;

	if (nruns < 0)
		return zerr_set(bd->err, -ENOMEM, bd->b->coff, "out of memory");
	if (ck->wlen && lo + bd->rsize < bd->out) /* the ring must still hold the window */
		return zerr_set(bd->err, -EFAULT, bd->b->coff, "xzckpt: ring overrun (a bug)");
	ret = pend_deliver(bd, true); /* the one before: p is free after it */
	if (ret)
		return ret;
	rawlen = 2 * (size_t)ck->nprobs + 10 * (size_t)nruns + kept; /* at most */
	if (grow(&p->raw, &p->rawcap, rawlen + 1, 1) < 0 ||
	    grow(&p->blob, &p->blobcap, BLOB_HEAD + ZSTD_compressBound(rawlen), 1) < 0)
		return zerr_set(bd->err, -ENOMEM, bd->b->coff, "out of memory");
	for (uint32_t i = 0; i < ck->nprobs; i++)
		put_le(p->raw + 2 * i, ck->probs[i], 2);
	at = 2 * (size_t)ck->nprobs;
	for (ssize_t i = 0; i < nruns; i++) {
		uint32_t end = i ? bd->runs[2 * i - 2] + bd->runs[2 * i - 1] + RUN_GAP : 0;

		at += varint_put(p->raw + at, bd->runs[2 * i] - end);
		at += varint_put(p->raw + at, bd->runs[2 * i + 1] - 1);
	}
	for (ssize_t i = 0; i < nruns; i++) {
		ring_copy(bd, p->raw + at, lo + bd->runs[2 * i], bd->runs[2 * i + 1]);
		at += bd->runs[2 * i + 1];
	}
	head_put(p->blob, ck, bd->b, (size_t)nruns, kept);
	p->rawlen = at;
	p->uoff = ck->uoff;
	p->dense = ck->wlen;
	p->kept = kept;
	p->runs = (uint64_t)nruns;
	p->full = true;
	bgjob_post(bd->fin, pend_compress, p);
	return 0;
}

static void open_drop(struct xzck_build *bd, struct xzck_open *o)
{
	bd->bits_bytes -= ((o->ck.wlen + 63) / 64 + 1) * sizeof(uint64_t);
	lzma2dec_ckpt_release(&o->ck);
	free(o->bits);
}

/*
 * Hands out the open checkpoints no match can reach before any more (all,
 * if all; then it waits for the last one's compression too).
 */
static int points_close(struct xzck_build *bd, int all)
{
	size_t done = 0;
	int ret = pend_deliver(bd, false);

	if (bd->st) {
		uint64_t mem = bd->dec_mem + bd->rsize + bd->bits_bytes + bd->pend.rawcap +
			       bd->pend.blobcap + bd->capruns * 4;

		if (mem > bd->st->build_mem)
			bd->st->build_mem = mem;
	}
	while (done < bd->nopen && ret == 0 &&
	       (all || bd->open[done].ck.uoff + bd->wsize <= bd->out)) {
		ret = point_emit(bd, &bd->open[done]);
		open_drop(bd, &bd->open[done++]);
	}
	bd->nopen -= done;
	if (done)
		memmove(bd->open, bd->open + done, bd->nopen * sizeof(*bd->open));
	lzma2dec_set_mark_below(bd->ld, bd->nopen ? bd->open[bd->nopen - 1].ck.uoff : 0);
	if (all && ret == 0)
		ret = pend_deliver(bd, true);
	return ret;
}

/* ---- build: the Block ---- */

/* Padding zero and the Check equal to check (computed over the output). */
static int tail_check(struct zsrc *src, const struct xzdec_block *b, const struct xzck_hdr *h,
		      const uint8_t *check, struct zerr *err)
{
	uint64_t at = h->data_off + h->data_size;
	size_t pad = (size_t)(b->coff + b->csize - h->check_size - at);
	uint8_t buf[3 + 8];

	if (pad > 3 ||
	    zsrc_pread(src, buf, pad + h->check_size, at) != (ssize_t)(pad + h->check_size))
		return zerr_set(err, -EIO, at, "Block Padding or Check truncated");
	for (size_t i = 0; i < pad; i++)
		if (buf[i])
			return zerr_set(err, -EIO, at + i, "Block Padding is not zero");
	if (memcmp(buf + pad, check, h->check_size) != 0)
		return zerr_set(err, -EIO, at + pad, "Block at %llu: %s mismatch",
				(unsigned long long)b->coff, xzdec_check_name(b->check));
	return 0;
}

/*
 * Decodes the next bytes of the Block into the ring, at most max: returns
 * how many (0 at the end marker) and sets *at to where they are, or an
 * error with bd->err set.  The sink has them, the Check covers them, and
 * the points they close are handed out.
 */
static ssize_t build_step(struct xzck_build *bd, size_t max, size_t *at)
{
	size_t pos = (size_t)(bd->out % bd->rsize);
	size_t n = bd->rsize - pos < READ_MAX ? bd->rsize - pos : READ_MAX;
	/*
	 * Each sink->out call ends at a chunk's end, so a checkpoint's offset
	 * is where one ended (ckpt.h): reads stop at the chunk's end, and at
	 * a boundary one byte enters the next chunk, which says how long it is.
	 */
	uint64_t room = bd->chunk_end > bd->out ? bd->chunk_end - bd->out : 1;
	ssize_t got;
	int ret;

	if (n > room)
		n = (size_t)room;
	if (n > max)
		n = max;
	got = lzma2dec_read(bd->ld, bd->ring + pos, n, bd->err);
	if (got <= 0)
		return got;
	if (bd->b->check == XZDEC_CHECK_CRC32)
		bd->crc32 = zcrc32(bd->crc32, bd->ring + pos, (size_t)got);
	else if (bd->b->check == XZDEC_CHECK_CRC64)
		bd->crc64 = lzma_crc64(bd->ring + pos, (size_t)got, bd->crc64);
	ret = bd->s->out(bd->s->arg, bd->ring + pos, (size_t)got);
	if (ret)
		return zerr_set(bd->err, ret, bd->b->coff, "stopped by the output sink");
	bd->out += (uint64_t)got;
	*at = pos;
	ret = points_close(bd, 0);
	return ret ? ret : got;
}

/* After the end marker: sizes, the last points, Padding and the Check.  0 or an error. */
static int build_tail(struct xzck_build *bd, struct zsrc *src, const struct xzck_hdr *h)
{
	uint8_t check[8];
	int ret = end_check(bd->ld, h, bd->b->usize, bd->b->coff, bd->err);

	if (ret == 0)
		ret = points_close(bd, 1);
	if (ret)
		return ret;
	put_le(check, bd->b->check == XZDEC_CHECK_CRC32 ? bd->crc32 : bd->crc64, 8);
	return tail_check(src, bd->b, h, check, bd->err);
}

/* Reads Block b's header and sets bd up to decode it (pull: the data's extent). */
static int build_setup(struct xzck_build *bd, struct zsrc *src, struct xzck_hdr *h,
		       struct xzck_src *pull)
{
	const struct xzdec_block *b = bd->b;
	int ret;

	if (bd->span == 0 || !bd->s || !bd->s->out)
		return zerr_set(bd->err, -EINVAL, b->coff,
				"xzckpt_build: span 0 or no output sink");
	ret = hdr_read(src, b, h, bd->err);
	if (ret < 0)
		return ret;
	pull->src = src;
	pull->off = h->data_off;
	pull->size = h->data_size;
	bd->wsize = lzma2dec_window_size(h->dict);
	bd->rsize = 2 * (size_t)bd->wsize + READ_MAX;
	bd->ring = malloc(bd->rsize);
	bd->pend.cctx = ZSTD_createCCtx();
	bd->fin = bgjob_new();
	ret = lzma2dec_new(h->dict, b->usize, src_pull, pull, &bd->ld);
	if (ret < 0 || !bd->ring || !bd->pend.cctx || !bd->fin)
		return zerr_set(bd->err, ret < 0 ? ret : -ENOMEM, b->coff, "out of memory");
	bd->dec_mem = lzma2dec_memusage(bd->ld);
	if (bd->s->point) {
		lzma2dec_set_chunk_cb(bd->ld, on_chunk, bd);
		lzma2dec_set_mark_cb(bd->ld, on_mark, bd);
		lzma2dec_set_mark_below(bd->ld, 0); /* nothing open yet */
	}
	return 0;
}

static void build_release(struct xzck_build *bd)
{
	bgjob_free(bd->fin); /* first: its job uses pend */
	for (size_t i = 0; i < bd->nopen; i++)
		open_drop(bd, &bd->open[i]);
	free(bd->open);
	free(bd->runs);
	free(bd->pend.raw);
	free(bd->pend.blob);
	ZSTD_freeCCtx(bd->pend.cctx);
	free(bd->ring);
	lzma2dec_free(bd->ld);
}

int xzckpt_build(struct zsrc *src, const struct xzdec_block *b, uint64_t span,
		 const struct xzckpt_sink *s, struct xzckpt_stats *st, struct zerr *err)
{
	struct xzck_build bd = { .b = b, .s = s, .st = st, .err = err, .span = span, .next = span };
	struct xzck_src pull;
	struct xzck_hdr h;
	ssize_t got;
	size_t at;
	int ret;

	if (st)
		memset(st, 0, sizeof(*st));
	ret = build_setup(&bd, src, &h, &pull);
	while (ret == 0 && (got = build_step(&bd, SIZE_MAX, &at)) != 0)
		ret = got < 0 ? (int)got : 0;
	if (ret == 0)
		ret = build_tail(&bd, src, &h);
	build_release(&bd);
	return ret;
}

/* ---- build, pulled by a reader ---- */

struct xzckpt_run {
	struct xzck_build bd;
	struct xzckpt_sink s;
	struct xzck_src pull;
	struct xzck_hdr h;
	int err;
	bool ended; /* verified to its end */
};

int xzckpt_run_open(struct zsrc *src, const struct xzdec_block *b, uint64_t span,
		    const struct xzckpt_sink *s, struct xzckpt_run **out, struct zerr *err)
{
	struct xzckpt_run *x = calloc(1, sizeof(*x));
	int ret;

	*out = NULL;
	if (!x)
		return zerr_set(err, -ENOMEM, b->coff, "out of memory");
	x->s = *s;
	x->bd = (struct xzck_build){ .b = b, .s = &x->s, .err = err, .span = span, .next = span };
	ret = build_setup(&x->bd, src, &x->h, &x->pull);
	if (ret < 0) {
		xzckpt_run_close(x);
		return ret;
	}
	*out = x;
	return 0;
}

ssize_t xzckpt_run_read(struct xzckpt_run *x, struct zsrc *src, void *buf, size_t len,
			struct zerr *err)
{
	size_t done = 0, at;
	ssize_t got = 1;

	if (x->err)
		return zerr_set(err, x->err, x->h.data_off, "xz checkpoint build failed before");
	if (x->ended)
		return 0;
	x->bd.err = err;
	x->pull.src = src;
	while (done < len && (got = build_step(&x->bd, len - done, &at)) > 0) {
		memcpy((uint8_t *)buf + done, x->bd.ring + at, (size_t)got);
		done += (size_t)got;
	}
	/* The call that returns the last byte has verified the Block (fmt.h). */
	if (got > 0 && x->bd.out == x->bd.b->usize) {
		uint8_t end;

		got = lzma2dec_read(x->bd.ld, &end, 1, err);
		if (got > 0)
			got = zerr_set(err, -EIO, x->bd.b->coff,
				       "Block longer than the Index says");
	}
	if (got == 0) {
		got = build_tail(&x->bd, src, &x->h);
		x->ended = got == 0;
	}
	if (got < 0) {
		x->err = (int)got;
		return got;
	}
	return (ssize_t)done;
}

uint64_t xzckpt_run_tell(const struct xzckpt_run *x)
{
	return x->bd.out;
}

size_t xzckpt_run_cost(const struct xzckpt_run *x)
{
	const struct xzck_build *bd = &x->bd;

	return sizeof(*x) + bd->dec_mem + bd->rsize + bd->bits_bytes + bd->pend.rawcap +
	       bd->pend.blobcap + bd->capruns * sizeof(uint32_t);
}

void xzckpt_run_close(struct xzckpt_run *x)
{
	if (!x)
		return;
	build_release(&x->bd);
	free(x);
}

/* ---- resuming ---- */

/* The head's fields into ck (no arrays), and the sizes after it; -EINVAL if any is wrong. */
static int head_get(const uint8_t *p, size_t len, const struct xzdec_block *b,
		    const struct xzck_hdr *h, struct lzma2dec_ckpt *ck, uint32_t *nruns,
		    uint32_t *kept)
{
	memset(ck, 0, sizeof(*ck));
	if (len < BLOB_HEAD || memcmp(p, BLOB_MAGIC, 4) != 0 || p[4] != 1 || p[37] || p[38] ||
	    p[39] || get_le(p + BLOB_HEAD - 4, 4) != blob_crc(p, len))
		return -EINVAL;
	ck->control = p[5];
	ck->props = p[6];
	ck->has_props = p[7];
	ck->uoff = get_le(p + 8, 8);
	ck->coff = get_le(p + 16, 8);
	ck->dpos = get_le(p + 24, 8);
	ck->dict_size = (uint32_t)get_le(p + 32, 4);
	ck->state = p[36];
	for (int i = 0; i < 4; i++)
		ck->rep[i] = (uint32_t)get_le(p + 40 + 4 * i, 4);
	ck->nprobs = (uint32_t)get_le(p + 56, 4);
	ck->wlen = (uint32_t)get_le(p + 60, 4);
	*nruns = (uint32_t)get_le(p + 80, 4);
	*kept = (uint32_t)get_le(p + 84, 4);
	if (get_le(p + 64, 8) != b->coff || get_le(p + 72, 8) != b->usize ||
	    ck->dict_size != h->dict || ck->uoff == 0 || ck->uoff >= b->usize ||
	    ck->coff >= h->data_size || ck->nprobs > LZMA2DEC_PROBS_MAX ||
	    ck->wlen > lzma2dec_window_size(h->dict) || *kept > ck->wlen ||
	    *nruns > ck->wlen / (RUN_GAP + 1) + 1 || *nruns > *kept ||
	    get_le(p + 88, 4) != len - BLOB_HEAD)
		return -EINVAL;
	return 0;
}

/*
 * Walks the runs in raw[at..rawlen): checks each (inside the window, nkept
 * bytes in all), and with win non-NULL copies its bytes from kept (the
 * bytes after the runs) and zeroes the rest of win's first wlen bytes.
 * Returns the offset where the runs end, or 0 if any is wrong.
 */
static size_t runs_walk(const uint8_t *raw, size_t at, size_t rawlen, uint32_t nruns, uint32_t wlen,
			uint32_t nkept, uint8_t *win, const uint8_t *kept)
{
	uint64_t end = 0, gap, n, sum = 0, prev = 0;

	for (uint32_t i = 0; i < nruns; i++) {
		if (varint_get(raw, rawlen, &at, &gap) < 0 || varint_get(raw, rawlen, &at, &n) < 0)
			return 0;
		end += (i ? RUN_GAP : 0) + gap;
		if (end + n + 1 > wlen)
			return 0;
		if (win) {
			memset(win + prev, 0, end - prev);
			memcpy(win + end, kept, n + 1);
			kept += n + 1;
		}
		end += n + 1;
		sum += n + 1;
		prev = end;
	}
	if (win)
		memset(win + prev, 0, wlen - prev);
	return sum == nkept ? at : 0;
}

/*
 * The payload into ck's probs and win (the decoder's window, of at least
 * ck->wlen bytes): the runs' bytes, zeros between them.
 */
static int payload_get(const uint8_t *z, size_t zlen, struct lzma2dec_ckpt *ck, uint32_t nruns,
		       uint32_t kept, uint8_t *win)
{
	unsigned long long rawlen = ZSTD_getFrameContentSize(z, zlen);
	size_t probs_end = 2 * (size_t)ck->nprobs, runs_end;
	uint8_t *raw;
	int ret = -EINVAL;

	/* kept <= wlen and nruns <= wlen / 9 + 1 (head_get): a bounded allocation */
	if (rawlen > probs_end + 10 * (size_t)nruns + kept)
		return -EINVAL;
	raw = malloc(rawlen + 1);
	if (!raw)
		return -ENOMEM;
	if (ZSTD_decompress(raw, rawlen, z, zlen) != rawlen)
		goto out;
	runs_end = runs_walk(raw, probs_end, rawlen, nruns, ck->wlen, kept, NULL, NULL);
	if ((nruns && !runs_end) || (!nruns && (runs_end = probs_end) > rawlen) ||
	    rawlen - runs_end != kept)
		goto out;
	ret = -ENOMEM;
	ck->probs = ck->nprobs ? malloc(probs_end) : NULL;
	if (ck->nprobs && !ck->probs)
		goto out;
	for (uint32_t i = 0; i < ck->nprobs; i++)
		ck->probs[i] = (uint16_t)get_le(raw + 2 * i, 2);
	runs_walk(raw, probs_end, rawlen, nruns, ck->wlen, kept, win, raw + runs_end);
	ret = 0;
out:
	free(raw);
	return ret;
}

int xzckpt_dec_open(struct zsrc *src, const struct xzdec_block *b, struct xzdec_spares *sp,
		    const void *blob, size_t len, struct xzckpt_dec **out, struct zerr *err)
{
	struct lzma2dec_ckpt ck = { 0 };
	struct xzckpt_dec *d;
	uint32_t nruns, kept;
	int ret;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return zerr_set(err, -ENOMEM, b->coff, "out of memory");
	d->sp = sp;
	ret = hdr_read(src, b, &d->h, err);
	if (ret < 0)
		goto fail;
	d->pull.off = d->h.data_off;
	d->pull.size = d->h.data_size;
	d->usize = b->usize;
	d->bcoff = b->coff;
	if (!blob) {
		ret = lzma2dec_new(d->h.dict, b->usize, src_pull, &d->pull, &d->ld);
	} else {
		ret = head_get(blob, len, b, &d->h, &ck, &nruns, &kept);
		if (ret == 0) {
			/* head_get checked ck.wlen against this window's size */
			d->win = xzdec_spares_get(sp, lzma2dec_window_size(d->h.dict));
			ret = d->win ? 0 : -ENOMEM;
		}
		if (ret == 0)
			ret = payload_get((const uint8_t *)blob + BLOB_HEAD, len - BLOB_HEAD, &ck,
					  nruns, kept, d->win);
		if (ret == 0)
			ret = lzma2dec_resume_in(&ck, d->h.dict, b->usize, src_pull, &d->pull,
						 d->win, &d->ld);
		lzma2dec_ckpt_release(&ck);
	}
	if (ret < 0) {
		zerr_set(err, ret, b->coff,
			 ret == -ENOMEM ? "out of memory"
					: "checkpoint is damaged or not for the Block at %llu",
			 (unsigned long long)b->coff);
		goto fail;
	}
	*out = d;
	return 0;
fail:
	xzckpt_dec_close(d);
	return ret;
}

ssize_t xzckpt_dec_read(struct xzckpt_dec *d, struct zsrc *src, void *buf, size_t len,
			struct zerr *err)
{
	ssize_t n;

	if (d->err)
		return zerr_set(err, d->err, d->h.data_off, "xz checkpoint decoder failed before");
	d->pull.src = src;
	n = lzma2dec_read(d->ld, buf, len, err);
	if (n >= 0 && (size_t)n < len) {
		int ret = end_check(d->ld, &d->h, d->usize, d->bcoff, err);

		if (ret < 0)
			n = ret;
	}
	if (n < 0)
		d->err = (int)n;
	return n;
}

uint64_t xzckpt_dec_tell(const struct xzckpt_dec *d)
{
	return lzma2dec_tell(d->ld);
}

size_t xzckpt_dec_cost(const struct xzckpt_dec *d)
{
	return sizeof(*d) + lzma2dec_memusage(d->ld);
}

void xzckpt_dec_close(struct xzckpt_dec *d)
{
	if (!d)
		return;
	lzma2dec_free(d->ld);
	xzdec_spares_put(d->sp, d->win);
	free(d);
}
