/* SPDX-License-Identifier: MIT */
/*
 * Resuming a zstd frame at a checkpoint (zstdckpt_dec_*, zstdckpt_spares_*).
 *
 * How it works.  The checkpoint is written as a zstd dictionary (RFC 8878,
 * 5: magic, ID, Huffman description, FSE descriptions for OF, ML, LL, the
 * three offsets, content = the window) into a ring of window + 2 blocks,
 * directly before where the next block's output goes, so that after
 * ZSTD_decompressBegin_usingDict the window is a contiguous prefix of the
 * output.  Blocks are then decoded in place: compressed ones with
 * ZSTD_decompressBlock, raw and RLE ones written here and announced with
 * ZSTD_insertBlock.  The ring wraps, as libzstd's own stream buffer does,
 * when fewer than a block and its literals' overrun remain; libzstd then
 * sees the previous lap as its "external dictionary", of which the last
 * Window_Size bytes are intact because the ring has two blocks' slack.
 *
 * A closed decoder may go back to its caller's stock (struct
 * zstdckpt_spares) whole, ring included, so that the next resume of the
 * same window size does not fault in fresh pages.
 */
#define ZSTD_STATIC_LINKING_ONLY /* block API: exported by libzstd.so 1.5.4 */
#include "zstdckpt_int.h"

#include "le.h"

#include <limits.h>
#include <pthread.h>

#define SLACK	   64u /* margin past a block, as libzstd's buffers keep (wild copies) */
#define DICT_MAGIC 0xEC30A437u
#define DICT_HMAX  (8 + ZSTDCKPT_HUF_MAX + 3 * ZSTDCKPT_FSE_MAX + 12)
/* rings below this are calloc'd: zeroing 2 MiB pages cost more than the faults */
#define HUGE_MIN_DEC (16ull << 20)

int zstdckpt_in_get(struct zstdckpt_in *b, struct zsrc *src, uint64_t off, size_t n,
		    const uint8_t **p, struct zerr *err)
{
	if (off > b->end || b->end - off < n)
		return zerr_set(err, -EIO, off, "block runs past the frame's end");
	if (off < b->boff || off + n > b->boff + b->blen) {
		size_t want =
			b->end - off < ZSTDCKPT_IN_CAP ? (size_t)(b->end - off) : ZSTDCKPT_IN_CAP;
		ssize_t got = zsrc_pread(src, b->buf, want, off);

		b->boff = off;
		b->blen = got > 0 ? (size_t)got : 0;
		if (got < (ssize_t)n)
			return zerr_set(err, -EIO, off, "reading: %s",
					got < 0 ? strerror((int)-got) : "file is truncated");
	}
	*p = b->buf + (off - b->boff);
	return 0;
}

struct zstdckpt_dec {
	struct zstddec_frame f;
	ZSTD_DCtx *dc;
	struct zstdckpt_in in;
	uint64_t coff; /* next block header */
	uint64_t uoff; /* frame offset of ring[rd] */
	bool last;     /* the last block has been decoded */
	bool failed;
	size_t bmax; /* the frame's block size: min(window, 128 KiB) */
	uint8_t *ring;
	size_t rsize;
	size_t rd, wr;		    /* unread output: ring[rd..wr) */
	struct zstdckpt_raw raw;    /* a blob's payload, unpacked (kept for the next open) */
	struct zstdckpt_spares *sp; /* borrowed; where close gives the buffers back, or NULL */
	size_t kept_cost;	    /* zstdckpt_dec_cost while it sits in sp's stock */
};

/*
 * The stock (zstdckpt.h): whole decoders, closed, with their ring, input
 * buffer, libzstd context and payload buffer.  Owned by the caller, so two
 * users in one process never share a lock or a bound.
 */
struct zstdckpt_spares {
	pthread_mutex_t lock;
	/* Protected by lock. */
	struct zstdckpt_dec *slot[ZSTDCKPT_SPARES_N];
	size_t bytes;
};

int zstdckpt_spares_new(struct zstdckpt_spares **out)
{
	struct zstdckpt_spares *sp = calloc(1, sizeof(*sp));

	*out = sp;
	if (!sp)
		return -ENOMEM;
	pthread_mutex_init(&sp->lock, NULL);
	return 0;
}

static void dec_free(struct zstdckpt_dec *d)
{
	ZSTD_freeDCtx(d->dc);
	free(d->in.buf);
	free(d->raw.p);
	zstdckpt_ring_free(d->ring, d->rsize, HUGE_MIN_DEC);
	free(d);
}

void zstdckpt_spares_free(struct zstdckpt_spares *sp)
{
	if (!sp)
		return;
	for (size_t i = 0; i < ZSTDCKPT_SPARES_N; i++)
		if (sp->slot[i])
			dec_free(sp->slot[i]);
	pthread_mutex_destroy(&sp->lock);
	free(sp);
}

size_t zstdckpt_spares_bytes(struct zstdckpt_spares *sp)
{
	size_t n;

	pthread_mutex_lock(&sp->lock);
	n = sp->bytes;
	pthread_mutex_unlock(&sp->lock);
	return n;
}

/* A closed decoder with a ring of rsize bytes from sp's stock, or NULL. */
static struct zstdckpt_dec *spares_take(struct zstdckpt_spares *sp, size_t rsize)
{
	struct zstdckpt_dec *d = NULL;

	if (!sp)
		return NULL;
	pthread_mutex_lock(&sp->lock);
	for (size_t i = 0; i < ZSTDCKPT_SPARES_N; i++) {
		if (sp->slot[i] && sp->slot[i]->rsize == rsize) {
			d = sp->slot[i];
			sp->slot[i] = NULL;
			sp->bytes -= d->kept_cost;
			break;
		}
	}
	pthread_mutex_unlock(&sp->lock);
	return d;
}

/* Keeps d in its stock while that has a slot and room for it; true if kept. */
static bool spares_keep(struct zstdckpt_dec *d)
{
	struct zstdckpt_spares *sp = d->sp;
	bool kept = false;

	if (!sp)
		return false;
	d->kept_cost = zstdckpt_dec_cost(d);
	pthread_mutex_lock(&sp->lock);
	for (size_t i = 0; i < ZSTDCKPT_SPARES_N && !kept; i++) {
		if (!sp->slot[i] && d->kept_cost <= ZSTDCKPT_SPARES_MAX - sp->bytes) {
			sp->slot[i] = d;
			sp->bytes += d->kept_cost;
			kept = true;
		}
	}
	pthread_mutex_unlock(&sp->lock);
	return kept;
}

/* Writes ck as a dictionary header ending at dst + DICT_HMAX; returns its length. */
static size_t dict_header(const struct zstdckpt *ck, uint8_t *end)
{
	uint8_t h[DICT_HMAX], *p = h;
	static const int order[3] = { ZSTDCKPT_OF, ZSTDCKPT_ML, ZSTDCKPT_LL };
	uint32_t v[2] = { DICT_MAGIC, 1 };

	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 4; k++)
			*p++ = (uint8_t)(v[i] >> (8 * k));
	memcpy(p, ck->huf, ck->huf_len);
	p += ck->huf_len;
	for (int i = 0; i < 3; i++) {
		memcpy(p, ck->fse[order[i]], ck->fse_len[order[i]]);
		p += ck->fse_len[order[i]];
	}
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 4; k++)
			*p++ = (uint8_t)(ck->rep[i] >> (8 * k));
	memcpy(end - (p - h), h, (size_t)(p - h));
	return (size_t)(p - h);
}

static int ckpt_check(const struct zstddec_frame *f, const struct zstdckpt *ck, struct zerr *err)
{
	uint64_t w = zstdckpt_frame_window(f);

	if (ck->wlen != (ck->uoff < w ? ck->uoff : w) || ck->wlen == 0 ||
	    ck->coff < f->coff + f->hsize || ck->coff >= f->coff + f->csize ||
	    (f->usize != ZSTDDEC_UNKNOWN && ck->uoff >= f->usize) || ck->huf_len > ZSTDCKPT_HUF_MAX)
		return zerr_set(err, -EINVAL, ck->coff, "checkpoint does not fit the frame");
	for (int k = 0; k < 3; k++)
		if (ck->rep[k] == 0 || ck->rep[k] > ck->wlen || ck->fse_len[k] > ZSTDCKPT_FSE_MAX)
			return zerr_set(err, -EINVAL, ck->coff, "checkpoint is malformed");
	return 0;
}

/*
 * A decoder with a ring of rsize bytes, all but the per-open state: from
 * sp's stock (its window's bytes zeroed again, as a fresh ring's are), or
 * new.  NULL if out of memory.
 */
static struct zstdckpt_dec *dec_shell(struct zstdckpt_spares *sp, size_t rsize, uint64_t wlen)
{
	struct zstdckpt_dec *d = spares_take(sp, rsize);

	if (d) {
		/*
		 * Of the ring, only the window is read before it is written
		 * (libzstd reads back only what it wrote): zeroed as a fresh
		 * one, so a blob's bytes not kept read as they always did.
		 */
		memset(d->ring + DICT_HMAX, 0, (size_t)wlen);
		d->in.boff = d->in.blen = 0; /* another frame's, maybe another file's */
		d->last = d->failed = false;
		return d;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->rsize = rsize;
	/* zeroed, so that a sparse window's pages not kept are never touched */
	d->ring = zstdckpt_ring_alloc(d->rsize, HUGE_MIN_DEC);
	d->in.buf = malloc(ZSTDCKPT_IN_CAP);
	d->dc = ZSTD_createDCtx();
	if (!d->ring || !d->in.buf || !d->dc) {
		dec_free(d);
		return NULL;
	}
	return d;
}

/* A decoder at ck (NULL: the frame's start), its window filled by fill. */
int zstdckpt_dec_new(struct zstdckpt_spares *sp, const struct zstddec_frame *f,
		     const struct zstdckpt *ck, zstdckpt_fill_fn fill, const void *arg,
		     struct zstdckpt_dec **out, struct zerr *err)
{
	struct zstdckpt_dec *d;
	uint64_t w = zstdckpt_frame_window(f);
	size_t r, hlen = 0;
	int ret;

	*out = NULL;
	ret = zstdckpt_frame_usable(f, err);
	if (!ret && ck)
		ret = ckpt_check(f, ck, err);
	if (ret)
		return ret;
	/* the dictionary header, the window, two blocks (one for split literals) */
	d = dec_shell(sp, DICT_HMAX + (size_t)w + 2 * (ZSTDCKPT_BLOCK_MAX + SLACK),
		      ck ? ck->wlen : 0);
	if (!d)
		return zerr_set(err, -ENOMEM, f->coff, "out of memory");
	d->sp = sp;
	d->f = *f;
	d->in.end = f->coff + f->csize;
	d->bmax = f->window < ZSTDCKPT_BLOCK_MAX ? (size_t)f->window : ZSTDCKPT_BLOCK_MAX;
	d->rd = d->wr = 0;
	if (ck) {
		ret = fill(arg, &d->raw, d->ring + DICT_HMAX, ck->wlen, err);
		if (!sp) { /* nobody reuses the payload buffer: not held while decoding */
			free(d->raw.p);
			d->raw.p = NULL;
			d->raw.cap = 0;
		}
		if (ret) {
			zstdckpt_dec_close(d);
			return ret;
		}
		hlen = dict_header(ck, d->ring + DICT_HMAX);
		r = ZSTD_decompressBegin_usingDict(d->dc, d->ring + DICT_HMAX - hlen,
						   hlen + (size_t)ck->wlen);
		d->coff = ck->coff;
		d->uoff = ck->uoff;
		d->rd = d->wr = DICT_HMAX + (size_t)ck->wlen;
	} else {
		r = ZSTD_decompressBegin(d->dc);
		d->coff = f->coff + f->hsize;
		d->uoff = 0;
	}
	if (ZSTD_isError(r)) {
		zstdckpt_dec_close(d);
		return zerr_set(err, -EINVAL, ck ? ck->coff : f->coff, "checkpoint refused: %s",
				ZSTD_getErrorName(r));
	}
	*out = d;
	return 0;
}

static int fill_dense(const void *arg, struct zstdckpt_raw *raw, uint8_t *win, uint64_t wlen,
		      struct zerr *err)
{
	(void)raw;
	(void)err;
	memcpy(win, arg, (size_t)wlen);
	return 0;
}

int zstdckpt_dec_open(const struct zstddec_frame *f, const struct zstdckpt *ck, const void *window,
		      struct zstdckpt_dec **out, struct zerr *err)
{
	return zstdckpt_dec_new(NULL, f, ck, fill_dense, window, out, err);
}

size_t zstdckpt_dec_cost(const struct zstdckpt_dec *d)
{
	return sizeof(*d) + d->rsize + ZSTDCKPT_IN_CAP + ZSTD_sizeof_DCtx(d->dc) + d->raw.cap;
}

/* Decodes the next block into the ring at wr.  0 or -EIO. */
static int dec_block(struct zstdckpt_dec *d, struct zsrc *src, struct zerr *err)
{
	const uint8_t *p;
	uint32_t hdr, type, bsize;
	size_t body, n;
	uint8_t *dst;
	int ret;

	if (d->rsize - d->wr < ZSTDCKPT_BLOCK_MAX + SLACK)
		d->rd = d->wr = 0;
	dst = d->ring + d->wr;
	ret = zstdckpt_in_get(&d->in, src, d->coff, 3, &p, err);
	if (ret)
		return ret;
	hdr = (uint32_t)get_le(p, 3);
	type = (hdr >> 1) & 3;
	bsize = hdr >> 3;
	body = type == 1 ? 1 : bsize;
	if (type == 3 || bsize > d->bmax)
		return zerr_set(err, -EIO, d->coff, "bad block header");
	ret = zstdckpt_in_get(&d->in, src, d->coff + 3, body, &p, err);
	if (ret)
		return ret;
	if (type == 2) {
		size_t r = ZSTD_decompressBlock(d->dc, dst, ZSTDCKPT_BLOCK_MAX, p, body);

		if (ZSTD_isError(r))
			return zerr_set(err, -EIO, d->coff, "%s", ZSTD_getErrorName(r));
		n = r;
	} else {
		n = bsize;
		if (type == 0)
			memcpy(dst, p, n);
		else
			memset(dst, p[0], n);
		ZSTD_insertBlock(d->dc, dst, n);
	}
	if (n > d->bmax)
		return zerr_set(err, -EIO, d->coff, "block is larger than the frame's block size");
	d->coff += 3 + body;
	d->wr += n;
	d->last = hdr & 1;
	return 0;
}

/* Checks the frame's end and size once its last block is out. */
static int dec_end(const struct zstdckpt_dec *d, struct zerr *err)
{
	uint64_t end = d->coff + (d->f.checksum ? 4 : 0);

	if (end != d->f.coff + d->f.csize)
		return zerr_set(err, -EIO, d->coff, "frame does not end where its blocks do");
	if (d->f.usize != ZSTDDEC_UNKNOWN && d->uoff != d->f.usize)
		return zerr_set(err, -EIO, d->coff, "frame is %s than its size says",
				d->uoff < d->f.usize ? "smaller" : "larger");
	return 0;
}

ssize_t zstdckpt_dec_read(struct zstdckpt_dec *d, struct zsrc *src, void *buf, size_t len,
			  struct zerr *err)
{
	size_t n;
	int ret;

	if (d->failed)
		return zerr_set(err, -EIO, d->coff, "decoder has already failed");
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (d->rd == d->wr && !d->last) {
		ret = dec_block(d, src, err);
		if (!ret && d->f.usize != ZSTDDEC_UNKNOWN && d->wr - d->rd > d->f.usize - d->uoff)
			ret = zerr_set(err, -EIO, d->coff, "frame is larger than its size says");
		if (ret) {
			d->failed = true;
			return ret;
		}
	}
	n = d->wr - d->rd < len ? d->wr - d->rd : len;
	memcpy(buf, d->ring + d->rd, n);
	d->rd += n;
	d->uoff += n;
	if (d->rd == d->wr && d->last) {
		ret = dec_end(d, err);
		if (ret) {
			d->failed = true;
			return ret;
		}
	}
	return (ssize_t)n;
}

uint64_t zstdckpt_dec_tell(const struct zstdckpt_dec *d)
{
	return d->uoff;
}

void zstdckpt_dec_close(struct zstdckpt_dec *d)
{
	if (d && !spares_keep(d))
		dec_free(d);
}
