/* SPDX-License-Identifier: MIT */
/*
 * gzip random access by checkpoints, after the idea of zlib's zran.
 *
 * How it works.  Deflate output depends only on the input bits that follow
 * and on the last 32 KiB of output, so inflate can be restarted anywhere a
 * block begins if we have those 32 KiB and know the bit position.
 *
 * Building: one pass of inflate in gzip mode (windowBits 31) over the whole
 * file, called with Z_BLOCK so that it returns at every block boundary, and
 * also right after each member's header.  Output goes into a 32 KiB ring,
 * which is all we keep of it.  At a boundary that is not the end of a
 * member's last block, once `span` bytes have come out since the previous
 * checkpoint, we record the uncompressed offset, the input offset, the
 * number of bits of the previous input byte still unread, and a raw-deflate
 * compressed copy of the last 32 KiB of this member's output (less at the
 * start of a member; a member never refers to the one before it).  inflate
 * itself checks every member's CRC32 and ISIZE.  After each member we look
 * at the next bytes and decide, as GNU gzip does, between another member,
 * zero padding, garbage, and a truncated header.
 *
 * Extracting: a raw inflate (windowBits -15), primed with the unread bits
 * and given the window as its dictionary, goes on exactly where the build
 * pass was.  When that member's deflate data ends, we skip its 8-byte
 * trailer and continue in gzip mode, which parses and verifies each further
 * member whole.
 */
#include "gzdec.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define GZ_MIN_SPAN   (64u << 10)
#define GZ_BUILD_IN   (256u << 10) /* input buffer of the build pass */
#define GZ_EXTRACT_IN (64u << 10)  /* input buffer of one extract call */
#define GZ_TRAILER    8u	   /* CRC32 + ISIZE after each member's deflate data */

/* Reads up to len bytes at off, never at or past limit.
 * Returns the count, 0 at limit, or -errno. */
static ssize_t gz_pread(int fd, void *buf, size_t len, uint64_t off, uint64_t limit)
{
	ssize_t n;

	if (off >= limit)
		return 0;
	if (len > limit - off)
		len = (size_t)(limit - off);
	do
		n = pread(fd, buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* The one place zlib codes become errnos; other is what corrupt data means to the caller. */
static int gz_zerr(struct zerr *err, const z_stream *zs, int zret, int other, uint64_t coff,
		   const char *what)
{
	const char *why = zs->msg;

	if (zret == Z_MEM_ERROR)
		return zerr_set(err, -ENOMEM, coff, "%s: out of memory", what);
	if (!why)
		why = zret == Z_BUF_ERROR ? "no progress" : "zlib error";
	return zerr_set(err, other, coff, "%s: %s", what, why);
}

/* pread's failure, or (n == 0) the file ending too soon.
 * strerror_r, not strerror: extract runs in many threads. */
static int gz_readerr(struct zerr *err, int ret, ssize_t n, uint64_t off)
{
	char buf[80];

	if (n == 0)
		return zerr_set(err, ret, off, "unexpected end of file");
	return zerr_set(err, -EIO, off, "read: %s", strerror_r((int)-n, buf, sizeof(buf)));
}

struct gz_build {
	int fd;
	uint64_t size;
	uint64_t span;
	struct zerr *err;
	struct gzdec_index *idx;
	size_t cap;	     /* points allocated in idx */
	uint64_t mout;	     /* output of the current member so far */
	z_stream zs;	     /* gzip-mode inflate over the whole file */
	z_stream zw;	     /* raw deflate that packs the windows */
	int zs_ok, zw_ok;    /* whether zs and zw need End */
	uint64_t inoff;	     /* file offset of in[0] */
	unsigned char *in;   /* GZ_BUILD_IN bytes */
	unsigned char *ring; /* GZDEC_WINDOW bytes: output goes here, round and round */
	unsigned char *lin;  /* GZDEC_WINDOW bytes: the ring straightened for deflate */
	unsigned char *wz;   /* wzcap bytes: deflate output */
	uLong wzcap;
};

static uint64_t bld_coff(const struct gz_build *b)
{
	return b->inoff + (uint64_t)(b->zs.next_in - b->in);
}

/* Refills the empty input buffer.  Running out of file here means truncation:
 * inflate still wants input, and at least a trailer is still due. */
static int bld_fill(struct gz_build *b)
{
	uint64_t off = bld_coff(b);
	ssize_t n = gz_pread(b->fd, b->in, GZ_BUILD_IN, off, b->size);

	if (n <= 0)
		return gz_readerr(b->err, -EINVAL, n, off);
	b->inoff = off;
	b->zs.next_in = b->in;
	b->zs.avail_in = (uInt)n;
	return 0;
}

/* Records a checkpoint at the current position with the ring's window. */
static int bld_point(struct gz_build *b, unsigned bits)
{
	struct gzdec_index *idx = b->idx;
	struct gzdec_point *pt;
	size_t wsize = b->mout < GZDEC_WINDOW ? (size_t)b->mout : GZDEC_WINDOW;
	size_t pos = GZDEC_WINDOW - b->zs.avail_out; /* next write in the ring */
	size_t head = wsize < pos ? wsize : pos;     /* window bytes before pos */
	size_t tail = wsize - head;		     /* the rest, at the ring's end */

	if (idx->npoints == b->cap) {
		size_t cap = b->cap ? b->cap : 16, bytes;
		void *p;

		if (__builtin_mul_overflow(cap, 2, &cap) ||
		    __builtin_mul_overflow(cap, sizeof(*pt), &bytes))
			return zerr_set(b->err, -ENOMEM, bld_coff(b), "too many checkpoints");
		p = realloc(idx->points, bytes);
		if (!p)
			return zerr_set(b->err, -ENOMEM, bld_coff(b), "out of memory");
		idx->points = p;
		b->cap = cap;
	}
	pt = &idx->points[idx->npoints];
	memset(pt, 0, sizeof(*pt));
	pt->uoff = idx->usize;
	pt->coff = bld_coff(b);
	pt->bits = (uint8_t)bits;
	pt->wsize = (uint32_t)wsize;
	if (wsize) {
		int zret;

		memcpy(b->lin, b->ring + GZDEC_WINDOW - tail, tail);
		memcpy(b->lin + tail, b->ring + pos - head, head);
		deflateReset(&b->zw);
		b->zw.next_in = b->lin;
		b->zw.avail_in = (uInt)wsize;
		b->zw.next_out = b->wz;
		b->zw.avail_out = (uInt)b->wzcap;
		zret = deflate(&b->zw, Z_FINISH);
		if (zret != Z_STREAM_END)
			return gz_zerr(b->err, &b->zw, zret, -ENOMEM, pt->coff, "window deflate");
		pt->wzsize = (uint32_t)(b->wzcap - b->zw.avail_out);
		pt->wz = malloc(pt->wzsize);
		if (!pt->wz)
			return zerr_set(b->err, -ENOMEM, pt->coff, "out of memory");
		memcpy(pt->wz, b->wz, pt->wzsize);
	}
	idx->npoints++;
	return 0;
}

/* Whether every byte from off to the end of the file is zero: 1, 0, or -errno. */
static int bld_all_zero(struct gz_build *b, uint64_t off)
{
	for (;;) {
		ssize_t n = gz_pread(b->fd, b->in, GZ_BUILD_IN, off, b->size);

		if (n < 0)
			return gz_readerr(b->err, -EIO, n, off);
		if (n == 0)
			return 1;
		for (ssize_t i = 0; i < n; i++)
			if (b->in[i])
				return 0;
		off += (uint64_t)n;
	}
}

/*
 * A member just ended; decide what follows the way GNU gzip does.  Returns
 * 1 when another member starts (inflate is reset for it), 0 when the data
 * ends here, or a negative errno.
 */
static int bld_member_end(struct gz_build *b)
{
	struct gzdec_index *idx = b->idx;
	uint64_t off = bld_coff(b);
	unsigned char m[2];
	ssize_t n;
	int zero;

	if (b->zs.avail_in >= 2) {
		memcpy(m, b->zs.next_in, 2);
		n = 2;
	} else {
		n = gz_pread(b->fd, m, 2, off, b->size);
		if (n < 0)
			return gz_readerr(b->err, -EIO, n, off);
	}
	if (n == 0)
		return 0;
	/* gzip reads a second magic byte after a nonzero first one, and fails at EOF */
	if (n == 1 && m[0] == 0x1F)
		return zerr_set(b->err, -EINVAL, off + 1, "unexpected end of file");
	if (n == 2 && m[0] == 0x1F && m[1] == 0x8B) {
		inflateReset(&b->zs);
		b->mout = 0;
		idx->members++;
		return 1;
	}
	/* gzip also reads compress, pack and LZH members there, which we cannot. */
	if (n == 2 && m[0] == 0x1F && (m[1] == 0x9D || m[1] == 0x9E || m[1] == 0x1E || m[1] == 0xA0))
		return zerr_set(b->err, -EINVAL, off, "unsupported member format after the gzip data");
	zero = m[0] == 0 ? bld_all_zero(b, off) : 0;
	if (zero < 0)
		return zero;
	idx->trailing = zero ? GZDEC_TRAIL_ZEROS : GZDEC_TRAIL_GARBAGE;
	idx->trail_off = off;
	return 0;
}

static int bld_setup(struct gz_build *b)
{
	unsigned char m[2];
	ssize_t n;

	n = gz_pread(b->fd, m, 2, 0, b->size);
	if (n < 0)
		return gz_readerr(b->err, -EIO, n, 0);
	if (n == 0 || (n == 1 && m[0] == 0x1F))
		return zerr_set(b->err, -EINVAL, (uint64_t)n, "unexpected end of file");
	if (n < 2 || m[0] != 0x1F || m[1] != 0x8B)
		return zerr_set(b->err, -EINVAL, 0, "not in gzip format");

	b->idx = calloc(1, sizeof(*b->idx));
	b->in = malloc(GZ_BUILD_IN);
	b->ring = malloc(GZDEC_WINDOW);
	b->lin = malloc(GZDEC_WINDOW);
	if (!b->idx || !b->in || !b->ring || !b->lin)
		return zerr_set(b->err, -ENOMEM, 0, "out of memory");
	if (inflateInit2(&b->zs, 31) != Z_OK)
		return zerr_set(b->err, -ENOMEM, 0, "inflateInit2 failed");
	b->zs_ok = 1;
	if (deflateInit2(&b->zw, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return zerr_set(b->err, -ENOMEM, 0, "deflateInit2 failed");
	b->zw_ok = 1;
	b->wzcap = deflateBound(&b->zw, GZDEC_WINDOW);
	b->wz = malloc(b->wzcap);
	if (!b->wz)
		return zerr_set(b->err, -ENOMEM, 0, "out of memory");
	b->zs.next_in = b->in;
	b->zs.avail_in = 0;
	b->zs.next_out = b->ring;
	b->zs.avail_out = GZDEC_WINDOW;
	b->idx->csize = b->size;
	b->idx->span = b->span;
	b->idx->members = 1;
	return 0;
}

static void bld_free(struct gz_build *b)
{
	if (b->zs_ok)
		inflateEnd(&b->zs);
	if (b->zw_ok)
		deflateEnd(&b->zw);
	free(b->in);
	free(b->ring);
	free(b->lin);
	free(b->wz);
}

int gzdec_header_check(int fd, uint64_t size, struct zerr *err)
{
	unsigned char in[4096], out[1];
	z_stream zs = { 0 };
	uint64_t off = 0;
	int ret;

	if (inflateInit2(&zs, 31) != Z_OK)
		return zerr_set(err, -ENOMEM, 0, "inflateInit2 failed");
	/* Z_BLOCK makes inflate stop right after the header, before any data. */
	for (;;) {
		ssize_t n = gz_pread(fd, in, sizeof(in), off, size);

		if (n <= 0) {
			ret = gz_readerr(err, -EINVAL, n, off);
			break;
		}
		zs.next_in = in;
		zs.avail_in = (uInt)n;
		zs.next_out = out;
		zs.avail_out = sizeof(out);
		int zret = inflate(&zs, Z_BLOCK);

		off += (uint64_t)n - zs.avail_in;
		if (zret != Z_OK && zret != Z_BUF_ERROR) {
			ret = gz_zerr(err, &zs, zret, -EINVAL, off, "gzip header");
			break;
		}
		if ((zs.data_type & 128) || zs.total_out > 0) {
			ret = off < size ? 0 : zerr_set(err, -EINVAL, off, "no data after the gzip header");
			break;
		}
	}
	inflateEnd(&zs);
	return ret;
}

int gzdec_index_build(int fd, uint64_t size, uint64_t span, struct gzdec_index **out,
		      struct zerr *err)
{
	return gzdec_index_build_sink(fd, size, span, NULL, out, err);
}

int gzdec_index_build_sink(int fd, uint64_t size, uint64_t span, const struct gzdec_sink *sink,
			   struct gzdec_index **out, struct zerr *err)
{
	struct gz_build b = {.fd = fd, .size = size, .err = err};
	struct gzdec_index *idx;
	uint64_t last = 0; /* uoff of the newest checkpoint */
	int ret;

	*out = NULL;
	if (size > (uint64_t)INT64_MAX)
		return zerr_set(err, -EINVAL, 0, "file too large");
	b.span = span < GZ_MIN_SPAN ? GZ_MIN_SPAN : span;
	if (b.span > GZDEC_MAX_SPAN)
		b.span = GZDEC_MAX_SPAN;
	ret = bld_setup(&b);
	if (ret < 0)
		goto fail;
	idx = b.idx;
	for (;;) {
		unsigned before;
		int zret, dt;

		if (b.zs.avail_in == 0) {
			ret = bld_fill(&b);
			if (ret < 0)
				goto fail;
		}
		if (b.zs.avail_out == 0) {
			b.zs.next_out = b.ring;
			b.zs.avail_out = GZDEC_WINDOW;
		}
		before = b.zs.avail_out;
		zret = inflate(&b.zs, Z_BLOCK);
		if (__builtin_add_overflow(idx->usize, before - b.zs.avail_out, &idx->usize)) {
			ret = zerr_set(err, -EINVAL, bld_coff(&b),
				       "uncompressed size overflows 64 bits");
			goto fail;
		}
		b.mout += before - b.zs.avail_out;
		if (sink && sink->output && before > b.zs.avail_out)
			sink->output(sink->ctx, b.zs.next_out - (before - b.zs.avail_out),
				     before - b.zs.avail_out);
		if (zret == Z_STREAM_END) {
			ret = bld_member_end(&b);
			if (ret < 0)
				goto fail;
			if (ret == 0)
				break;
			continue;
		}
		if (zret != Z_OK) {
			ret = gz_zerr(err, &b.zs, zret, -EINVAL, bld_coff(&b), "inflate");
			goto fail;
		}
		/* bit 128: at a block boundary (or just after the header); 64: in the last block */
		dt = b.zs.data_type;
		if ((dt & 128) && !(dt & 64) &&
		    (idx->npoints == 0 || idx->usize - last >= b.span)) {
			ret = bld_point(&b, (unsigned)dt & 7);
			if (ret < 0)
				goto fail;
			last = idx->usize;
			if (sink && sink->point)
				sink->point(sink->ctx, last);
		}
	}
	if (idx->npoints < b.cap) {
		void *p = realloc(idx->points, idx->npoints * sizeof(*idx->points));

		if (p)
			idx->points = p;
	}
	bld_free(&b);
	*out = idx;
	return 0;
fail:
	bld_free(&b);
	gzdec_index_free(b.idx);
	return ret;
}

void gzdec_index_free(struct gzdec_index *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->npoints; i++)
		free(idx->points[i].wz);
	free(idx->points);
	free(idx);
}

/* Inflates pt's window into win with zs (raw), then resets zs for the data. */
static int ext_window(z_stream *zs, const struct gzdec_point *pt, unsigned char *win, size_t point,
		      struct zerr *err)
{
	int zret;

	zs->next_in = pt->wz;
	zs->avail_in = pt->wzsize;
	zs->next_out = win;
	zs->avail_out = GZDEC_WINDOW;
	zret = inflate(zs, Z_FINISH);
	if (zret == Z_MEM_ERROR)
		return zerr_set(err, -ENOMEM, pt->coff, "out of memory");
	if (zret != Z_STREAM_END || zs->total_out != pt->wsize)
		return zerr_set(err, -EIO, pt->coff, "window of checkpoint %zu is corrupt", point);
	return inflateReset(zs) == Z_OK ? 0 : zerr_set(err, -EIO, pt->coff, "inflateReset failed");
}

/* Refills the empty input buffer from where it ends.  Returns the count, 0 at EOF, or -errno. */
static ssize_t ext_fill(int fd, uint64_t csize, z_stream *zs, unsigned char *in, uint64_t *inoff)
{
	ssize_t n;

	*inoff += (uint64_t)(zs->next_in - in);
	zs->next_in = in;
	n = gz_pread(fd, in, GZ_EXTRACT_IN, *inoff, csize);
	zs->avail_in = n > 0 ? (uInt)n : 0;
	return n;
}

ssize_t gzdec_extract(int fd, const struct gzdec_index *idx, size_t point, void *buf, size_t len,
		      struct zerr *err)
{
	const struct gzdec_point *pt;
	unsigned char *win, *in, *dst = buf;
	z_stream zs = {0};
	uint64_t inoff; /* file offset of in[0] */
	size_t done = 0;
	unsigned skip = 0; /* trailer bytes still to step over */
	int raw = 1;	   /* still in the checkpoint's own member, inflating raw deflate */
	ssize_t ret;

	if (!idx || point >= idx->npoints)
		return zerr_set(err, -EINVAL, 0, "checkpoint %zu out of range", point);
	pt = &idx->points[point];
	if (pt->uoff > idx->usize || len > idx->usize - pt->uoff || len > SSIZE_MAX)
		return zerr_set(err, -EINVAL, pt->coff, "%zu bytes at %llu reach past the end", len,
				(unsigned long long)pt->uoff);
	if (pt->bits > 7 || (pt->bits && pt->coff == 0) || pt->coff > idx->csize ||
	    pt->wsize > GZDEC_WINDOW || (pt->wsize && !pt->wz))
		return zerr_set(err, -EINVAL, pt->coff, "checkpoint %zu is malformed", point);
	if (len == 0)
		return 0;

	win = malloc(GZDEC_WINDOW + GZ_EXTRACT_IN);
	if (!win)
		return zerr_set(err, -ENOMEM, pt->coff, "out of memory");
	in = win + GZDEC_WINDOW;
	if (inflateInit2(&zs, -15) != Z_OK) {
		free(win);
		return zerr_set(err, -ENOMEM, pt->coff, "inflateInit2 failed");
	}
	if (pt->wsize) {
		ret = ext_window(&zs, pt, win, point, err);
		if (ret < 0)
			goto out;
		inflateSetDictionary(&zs, win, pt->wsize);
	}
	inoff = pt->coff - (pt->bits ? 1 : 0);
	zs.next_in = in;
	zs.avail_in = 0;
	if (pt->bits) {
		ret = ext_fill(fd, idx->csize, &zs, in, &inoff);
		if (ret <= 0) {
			ret = gz_readerr(err, -EIO, ret, inoff);
			goto out;
		}
		inflatePrime(&zs, pt->bits, in[0] >> (8 - pt->bits));
		zs.next_in++;
		zs.avail_in--;
	}

	while (done < len) {
		size_t chunk = len - done < UINT_MAX ? len - done : UINT_MAX;
		int zret;

		if (zs.avail_in == 0) {
			ret = ext_fill(fd, idx->csize, &zs, in, &inoff);
			if (ret <= 0) {
				ret = gz_readerr(err, -EIO, ret, inoff);
				goto out;
			}
		}
		if (skip) {
			unsigned n = skip < zs.avail_in ? skip : zs.avail_in;

			zs.next_in += n;
			zs.avail_in -= n;
			skip -= n;
			continue;
		}
		zs.next_out = dst + done;
		zs.avail_out = (uInt)chunk;
		zret = inflate(&zs, Z_NO_FLUSH);
		done += chunk - zs.avail_out;
		if (zret == Z_STREAM_END) {
			/* raw deflate leaves the trailer to us; gzip mode eats its own */
			skip = raw ? GZ_TRAILER : 0;
			raw = 0;
			zret = inflateReset2(&zs, 31);
		}
		if (zret != Z_OK) {
			ret = gz_zerr(err, &zs, zret, -EIO, inoff + (uint64_t)(zs.next_in - in),
				      "inflate");
			goto out;
		}
	}
	ret = (ssize_t)len;
out:
	inflateEnd(&zs);
	free(win);
	return ret;
}
