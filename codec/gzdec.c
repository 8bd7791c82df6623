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
 * member whole.  A gzdec_dec is that inflate kept between calls, so a span
 * of any size streams through a fixed amount of memory: the struct with its
 * 32 KiB input buffer, and zlib's inflate state with its 32 KiB window.
 * gzdec_extract is one decoder used once.
 */
#include "gzdec.h"
#include "src.h"
#include "zcrc.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define GZ_MIN_SPAN (64u << 10)
#define GZ_BUILD_IN (256u << 10) /* input buffer of the build pass */
#define GZ_DEC_IN   GZDEC_WINDOW /* input buffer of a decoder; holds a window at open */
#define GZ_TRAILER  8u		 /* CRC32 + ISIZE after each member's deflate data */

/* Reads up to len bytes at off, never at or past limit.
 * Returns the count, 0 at limit, or -errno. */
static ssize_t gz_pread(struct zsrc *src, void *buf, size_t len, uint64_t off, uint64_t limit)
{
	if (off >= limit)
		return 0;
	if (len > limit - off)
		len = (size_t)(limit - off);
	return zsrc_pread(src, buf, len, off);
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
	struct zsrc *src;
	uint64_t size;
	uint64_t span;
	struct zerr *err;
	struct gzdec_index *idx;
	size_t cap;	     /* points allocated in idx */
	uint64_t mout;	     /* output of the current member so far */
	uint64_t mstart;     /* compressed offset of the current member */
	z_stream zs;	     /* gzip-mode inflate over the whole file */
	z_stream zw;	     /* raw deflate that packs the windows */
	int zs_ok, zw_ok;    /* whether zs and zw need End */
	uint64_t inoff;	     /* file offset of in[0] */
	unsigned char *in;   /* GZ_BUILD_IN bytes */
	unsigned char *ring; /* GZDEC_WINDOW bytes: output goes here, round and round */
	unsigned char *lin;  /* GZDEC_WINDOW bytes: the ring straightened for deflate */
	unsigned char *wz;   /* wzcap bytes: deflate output */
	uLong wzcap;
	/*
	 * Span CRC32s, from the member CRC32 inflate keeps anyway (zs.adler)
	 * rather than a second pass over the output: the CRC of the bytes
	 * after a mark is zs.adler with the mark's CRC shifted out.
	 */
	uint32_t scrc;	   /* CRC32 of the span's output in earlier members */
	uint32_t mark_crc; /* zs.adler at the mark: the newest checkpoint in this member, or 0 */
	uint64_t mark_out; /* mout at the mark */
	uint32_t vcrc;	   /* the span's CRC32 when the newest member's trailer passed */
	size_t vlast;	   /* npoints then: vcrc is the CRC of points[vlast - 1]'s span */
	const struct gzdec_sink *sink; /* may be NULL */
	uint64_t last;		       /* uoff of the newest checkpoint */
	uint64_t verified; /* usize at the end of the newest member whose trailer passed */
	bool in_data;	   /* past the first member's header: damage from here is salvaged */
	bool salvage;	   /* whether the failure bld_run returned may be salvaged */
	bool cut;	   /* whether it was the file ending inside a member */
};

/* CRC32 of the output since the newest checkpoint, up to inflate's position. */
static uint32_t bld_span_crc(const struct gz_build *b)
{
	z_off_t n = (z_off_t)(b->mout - b->mark_out);
	uint32_t tail = (uint32_t)(b->zs.adler ^ crc32_combine(b->mark_crc, 0, n));

	return (uint32_t)crc32_combine(b->scrc, tail, n);
}

/* Marks the current position as the start of what bld_span_crc counts. */
static void bld_mark(struct gz_build *b, uint32_t scrc)
{
	b->scrc = scrc;
	b->mark_crc = (uint32_t)b->zs.adler;
	b->mark_out = b->mout;
}

static uint64_t bld_coff(const struct gz_build *b)
{
	return b->inoff + (uint64_t)(b->zs.next_in - b->in);
}

/* Refills the empty input buffer.  Running out of file here means truncation:
 * inflate still wants input, and at least a trailer is still due. */
static int bld_fill(struct gz_build *b)
{
	uint64_t off = bld_coff(b);
	ssize_t n = gz_pread(b->src, b->in, GZ_BUILD_IN, off, b->size);

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
	/* the span before ends here */
	if (idx->npoints)
		idx->points[idx->npoints - 1].crc = bld_span_crc(b);
	bld_mark(b, 0);
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
		ssize_t n = gz_pread(b->src, b->in, GZ_BUILD_IN, off, b->size);

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
		n = gz_pread(b->src, m, 2, off, b->size);
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
		b->mstart = off;
		bld_mark(b, b->scrc); /* zs.adler is 0 again */
		idx->members++;
		return 1;
	}
	/* gzip also reads compress, pack and LZH members there, which we cannot. */
	if (n == 2 && m[0] == 0x1F &&
	    (m[1] == 0x9D || m[1] == 0x9E || m[1] == 0x1E || m[1] == 0xA0))
		return zerr_set(b->err, -EINVAL, off,
				"unsupported member format after the gzip data");
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

	n = gz_pread(b->src, m, 2, 0, b->size);
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

int gzdec_header_check(struct zsrc *src, uint64_t size, struct zerr *err)
{
	unsigned char in[4096], out[1];
	z_stream zs = { 0 };
	uint64_t off = 0;
	/* the header must end within the budget, and one data byte must follow */
	uint64_t limit = size < GZDEC_HEADER_MAX ? size : GZDEC_HEADER_MAX;
	int ret;

	if (inflateInit2(&zs, 31) != Z_OK)
		return zerr_set(err, -ENOMEM, 0, "inflateInit2 failed");
	/* Z_BLOCK makes inflate stop right after the header, before any data. */
	for (;;) {
		ssize_t n = gz_pread(src, in, sizeof(in), off, limit);

		if (n == 0 && off == limit && limit < size) {
			ret = zerr_set(err, -EINVAL, off, "gzip header is longer than %u bytes",
				       GZDEC_HEADER_MAX);
			break;
		}
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
			ret = off < size ? 0
					 : zerr_set(err, -EINVAL, off,
						    "no data after the gzip header");
			break;
		}
	}
	inflateEnd(&zs);
	return ret;
}

int gzdec_index_build(struct zsrc *src, uint64_t size, uint64_t span, struct gzdec_index **out,
		      struct zerr *err)
{
	return gzdec_index_build_opts(src, size, span, NULL, 0, out, err);
}

int gzdec_index_build_sink(struct zsrc *src, uint64_t size, uint64_t span,
			   const struct gzdec_sink *sink, struct gzdec_index **out,
			   struct zerr *err)
{
	return gzdec_index_build_opts(src, size, span, sink, 0, out, err);
}

/*
 * Turns a build that failed on damaged data into the index of what came
 * before the damage.  inflate has already written (and the sink has seen)
 * every byte it decoded before it noticed the damage, and idx->usize counts
 * them, which is what gzip -dc prints too.  Only a cut (cut: the file ended
 * inside a member) keeps them all: a cut changes no byte before it.  Any
 * other damage failed a check of its member (deflate data, CRC32, ISIZE, or
 * the next member's header), so the index ends with the last member that
 * passed (verified): deflate cannot tell where corruption began, and a
 * CRC32 that fails condemns the whole member.  Checkpoints at usize are
 * dropped, but never the first: nothing may start at or after the damage.
 */
static void bld_salvage(struct gz_build *b, uint64_t verified, bool cut)
{
	struct gzdec_index *idx = b->idx;
	size_t built = idx->npoints;

	if (!cut)
		idx->usize = verified;
	while (idx->npoints > 1 && idx->points[idx->npoints - 1].uoff >= idx->usize) {
		idx->npoints--;
		free(idx->points[idx->npoints].wz);
		idx->points[idx->npoints].wz = NULL;
	}
	/*
	 * The last span now ends at usize.  A cut keeps all the output: its
	 * CRC runs to here (or was set when a dropped checkpoint at usize was
	 * recorded).  Otherwise usize is where the last good member ended,
	 * when the CRC was vcrc; a span the drop left ending there had its CRC
	 * set as the checkpoint at usize was recorded.  An empty span has 0.
	 */
	if (idx->npoints) {
		struct gzdec_point *last = &idx->points[idx->npoints - 1];

		if (last->uoff == idx->usize)
			last->crc = 0;
		else if (idx->npoints == (cut ? built : b->vlast))
			last->crc = cut ? bld_span_crc(b) : b->vcrc;
	}
	idx->salvaged = 1;
	idx->damage_coff = b->err->coff; /* set by whoever saw the damage */
	idx->verified = verified;
	idx->trailing = GZDEC_TRAIL_NONE;
	idx->trail_off = 0;
}

/*
 * After inflate's Z_STREAM_END: the member's CRC32 and ISIZE passed, so
 * the output so far is verified.  Returns 1 (another member follows), 0
 * (the file ends here) or -errno (b->salvage set) from bld_member_end.
 */
static int bld_end_of_member(struct gz_build *b)
{
	int ret;

	b->verified = b->idx->usize;
	bld_mark(b, bld_span_crc(b)); /* the member's part of the span */
	b->vcrc = b->scrc;
	b->vlast = b->idx->npoints;
	b->in_data = true;
	ret = bld_member_end(b);
	if (ret < 0)
		b->salvage = ret == -EINVAL;
	return ret;
}

/*
 * Feeds inflate from the file as it runs dry, and hands the output it made
 * since before (avail_out then) to the index's size and the sink.
 * Returns 0, or -errno with err set (b->salvage and b->cut as the
 * damage allows).
 */
static int bld_count(struct gz_build *b, unsigned before)
{
	const struct gzdec_sink *sink = b->sink;
	unsigned made = before - b->zs.avail_out;

	if (__builtin_add_overflow(b->idx->usize, made, &b->idx->usize) ||
	    b->idx->usize > (uint64_t)INT64_MAX)
		return zerr_set(b->err, -EINVAL, bld_coff(b),
				"uncompressed size is larger than a file can be");
	b->mout += made;
	if (sink && sink->output && made)
		sink->output(sink->ctx, b->zs.next_out - made, made);
	return 0;
}

/* Refills inflate's input when it is used up.  0 or -errno (b->salvage, b->cut set). */
static int bld_feed(struct gz_build *b)
{
	int ret;

	if (b->zs.avail_in)
		return 0;
	ret = bld_fill(b);
	if (ret < 0) {
		b->salvage = b->cut = ret == -EINVAL;
		return ret;
	}
	if (b->sink && b->sink->read)
		b->sink->read(b->sink->ctx, bld_coff(b));
	return 0;
}

/*
 * At a block boundary past the span since the last checkpoint (or before
 * the first), a checkpoint there (dt: inflate's data_type).  0 or -errno.
 */
static int bld_maybe_point(struct gz_build *b, int dt)
{
	struct gzdec_index *idx = b->idx;
	int ret;

	/* bit 128: at a block boundary (or just after the header); 64: in the last block */
	if ((dt & 128) || idx->usize)
		b->in_data = true;
	if (!(dt & 128) || (dt & 64) || (idx->npoints && idx->usize - b->last < b->span))
		return 0;
	ret = bld_point(b, (unsigned)dt & 7);
	if (ret < 0)
		return ret;
	b->last = idx->usize;
	if (b->sink && b->sink->point)
		b->sink->point(b->sink->ctx, b->last);
	return 0;
}

/*
 * The build's one pass: inflate over the whole file, a block at a time,
 * to the end of its last member.  Returns 0, or -errno with err set and
 * b->salvage, b->cut saying what bld_salvage may keep.
 */
static int bld_run(struct gz_build *b)
{
	int ret, zret;

	for (;;) {
		unsigned before;

		ret = bld_feed(b);
		if (ret < 0)
			return ret;
		if (b->zs.avail_out == 0) {
			b->zs.next_out = b->ring;
			b->zs.avail_out = GZDEC_WINDOW;
		}
		before = b->zs.avail_out;
		zret = inflate(&b->zs, Z_BLOCK);
		ret = bld_count(b, before);
		if (ret < 0)
			return ret;
		if (zret == Z_STREAM_END) {
			ret = bld_end_of_member(b);
			if (ret <= 0)
				return ret;
			continue;
		}
		if (zret != Z_OK) {
			char what[64];

			/* A CRC32 fails at the trailer, for damage anywhere in the member. */
			snprintf(what, sizeof(what), GZDEC_MEMBER_AT "%" PRIu64 ": inflate",
				 b->mstart);
			ret = gz_zerr(b->err, &b->zs, zret, -EINVAL, bld_coff(b), what);
			b->salvage = ret == -EINVAL;
			return ret;
		}
		ret = bld_maybe_point(b, b->zs.data_type);
		if (ret < 0)
			return ret;
	}
}

/* A whole build's index: its points array trimmed, the last span's CRC32 set. */
static void bld_finish(struct gz_build *b)
{
	struct gzdec_index *idx = b->idx;

	if (idx->npoints < b->cap) {
		void *p = realloc(idx->points, idx->npoints * sizeof(*idx->points));

		if (p)
			idx->points = p;
	}
	if (idx->npoints)
		idx->points[idx->npoints - 1].crc =
			bld_span_crc(b); /* the last span ends at usize */
	idx->verified = idx->usize;
}

int gzdec_index_build_opts(struct zsrc *src, uint64_t size, uint64_t span,
			   const struct gzdec_sink *sink, unsigned flags, struct gzdec_index **out,
			   struct zerr *err)
{
	struct zerr own = { 0 };
	struct gz_build b = { .src = src, .size = size, .err = err ? err : &own, .sink = sink };
	int ret;

	*out = NULL;
	err = b.err;
	if (flags & ~GZDEC_SALVAGE)
		return zerr_set(err, -EINVAL, 0, "unknown flags %#x", flags);
	if (size > (uint64_t)INT64_MAX)
		return zerr_set(err, -EINVAL, 0, "file too large");
	b.span = span < GZ_MIN_SPAN ? GZ_MIN_SPAN : span;
	if (b.span > GZDEC_MAX_SPAN)
		b.span = GZDEC_MAX_SPAN;
	ret = bld_setup(&b);
	if (ret == 0)
		ret = bld_run(&b);
	if (ret == 0)
		bld_finish(&b);
	else if (b.salvage && b.in_data && (flags & GZDEC_SALVAGE)) {
		bld_salvage(&b, b.verified, b.cut);
		ret = 0;
	}
	bld_free(&b);
	if (ret < 0) {
		gzdec_index_free(b.idx);
		return ret;
	}
	*out = b.idx;
	return 0;
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

struct gzdec_dec {
	const struct gzdec_index *idx; /* borrowed: must outlive the decoder */
	size_t point;
	uint64_t pos;	/* bytes returned so far, after idx->points[point].uoff */
	size_t span;	/* the checkpoint whose span the next byte is in */
	uint32_t crc;	/* CRC32 of that span's bytes returned so far */
	uint64_t inoff; /* file offset of in[0] */
	z_stream zs;	/* raw deflate at first, gzip mode after the first member */
	unsigned skip;	/* trailer bytes still to step over */
	bool raw;	/* still in the checkpoint's own member, inflating raw deflate */
	bool primed;	/* the checkpoint's partial byte has been fed to inflate */
	bool failed;
	unsigned char in[GZ_DEC_IN]; /* input; at open, the window's scratch space */
};

_Static_assert(GZ_DEC_IN >= GZDEC_WINDOW, "a decoder's input buffer holds a window at open");

/* Whether checkpoint point of idx can be started from, with err set if not. */
static int dec_check(const struct gzdec_index *idx, size_t point, struct zerr *err)
{
	const struct gzdec_point *pt;

	if (!idx || point >= idx->npoints)
		return zerr_set(err, -EINVAL, 0, "checkpoint %zu out of range", point);
	pt = &idx->points[point];
	if (pt->uoff > idx->usize || pt->bits > 7 || (pt->bits && pt->coff == 0) ||
	    pt->coff > idx->csize || pt->wsize > GZDEC_WINDOW || (pt->wsize && !pt->wz))
		return zerr_set(err, -EINVAL, pt->coff, "checkpoint %zu is malformed", point);
	return 0;
}

/* Inflates pt's window into win with zs (raw), then resets zs for the data. */
static int dec_window(z_stream *zs, const struct gzdec_point *pt, unsigned char *win, size_t point,
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
static ssize_t dec_fill(struct gzdec_dec *d, struct zsrc *src)
{
	ssize_t n;

	d->inoff += (uint64_t)(d->zs.next_in - d->in);
	d->zs.next_in = d->in;
	n = gz_pread(src, d->in, GZ_DEC_IN, d->inoff, d->idx->csize);
	d->zs.avail_in = n > 0 ? (uInt)n : 0;
	return n;
}

int gzdec_dec_open(const struct gzdec_index *idx, size_t point, struct gzdec_dec **out,
		   struct zerr *err)
{
	const struct gzdec_point *pt;
	struct gzdec_dec *d;
	int ret;

	*out = NULL;
	ret = dec_check(idx, point, err);
	if (ret < 0)
		return ret;
	pt = &idx->points[point];
	d = malloc(sizeof(*d));
	if (!d)
		return zerr_set(err, -ENOMEM, pt->coff, "out of memory");
	memset(d, 0, offsetof(struct gzdec_dec, in));
	d->idx = idx;
	d->point = point;
	d->span = point;
	d->raw = true;
	if (inflateInit2(&d->zs, -15) != Z_OK) {
		free(d);
		return zerr_set(err, -ENOMEM, pt->coff, "inflateInit2 failed");
	}
	if (pt->wsize) {
		ret = dec_window(&d->zs, pt, d->in, point, err);
		if (ret < 0) {
			gzdec_dec_close(d);
			return ret;
		}
		/* zlib allocates its window here */
		if (inflateSetDictionary(&d->zs, d->in, pt->wsize) != Z_OK) {
			gzdec_dec_close(d);
			return zerr_set(err, -ENOMEM, pt->coff, "out of memory");
		}
	}
	/* the checkpoint's partial byte is read with the first data, in gzdec_dec_read */
	d->inoff = pt->coff - (pt->bits ? 1 : 0);
	d->zs.next_in = d->in;
	d->zs.avail_in = 0;
	d->primed = pt->bits == 0;
	*out = d;
	return 0;
}

/* Inflates exactly len bytes (the caller has checked they exist) into dst;
 * end says that they are the last bytes of the index. */
static int dec_inflate(struct gzdec_dec *d, struct zsrc *src, unsigned char *dst, size_t len,
		       bool end, struct zerr *err)
{
	size_t done = 0;
	ssize_t n;

	if (!d->primed) {
		const struct gzdec_point *pt = &d->idx->points[d->point];

		n = dec_fill(d, src);
		if (n <= 0)
			return gz_readerr(err, -EIO, n, d->inoff);
		inflatePrime(&d->zs, pt->bits, d->in[0] >> (8 - pt->bits));
		d->zs.next_in++;
		d->zs.avail_in--;
		d->primed = true;
	}
	while (done < len) {
		size_t chunk = len - done < UINT_MAX ? len - done : UINT_MAX;
		int zret;

		if (d->zs.avail_in == 0) {
			n = dec_fill(d, src);
			if (n <= 0)
				return gz_readerr(err, -EIO, n, d->inoff);
		}
		if (d->skip) {
			unsigned k = d->skip < d->zs.avail_in ? d->skip : d->zs.avail_in;

			d->zs.next_in += k;
			d->zs.avail_in -= k;
			d->skip -= k;
			continue;
		}
		d->zs.next_out = dst + done;
		d->zs.avail_out = (uInt)chunk;
		zret = inflate(&d->zs, Z_NO_FLUSH);
		done += chunk - d->zs.avail_out;
		if (zret == Z_STREAM_END) {
			/* raw deflate leaves the trailer to us; gzip mode eats its own */
			d->skip = d->raw ? GZ_TRAILER : 0;
			d->raw = false;
			zret = inflateReset2(&d->zs, 31);
		}
		/*
		 * A salvaged index ends where inflate saw the damage, and inflate
		 * may see it again in the call that produced the last byte we
		 * asked for: those bytes are good, the damage is after them.
		 */
		if (zret != Z_OK && zret != Z_MEM_ERROR && done == len && end && d->idx->salvaged)
			break;
		if (zret != Z_OK)
			return gz_zerr(err, &d->zs, zret, -EIO,
				       d->inoff + (uint64_t)(d->zs.next_in - d->in), "inflate");
	}
	return 0;
}

/*
 * Adds len bytes just decoded (at d->pos) to their spans' CRC32s, and checks
 * each span they end against the one the build recorded.  0 or -EIO.
 */
static int dec_verify(struct gzdec_dec *d, const unsigned char *p, size_t len, struct zerr *err)
{
	const struct gzdec_index *idx = d->idx;
	uint64_t at = idx->points[d->point].uoff + d->pos;

	while (len) {
		const struct gzdec_point *pt = &idx->points[d->span];
		uint64_t end =
			d->span + 1 < idx->npoints ? idx->points[d->span + 1].uoff : idx->usize;
		size_t n = end - at < len ? (size_t)(end - at) : len;

		d->crc = zcrc32(d->crc, p, n);
		p += n;
		len -= n;
		at += n;
		if (at < end)
			continue;
		if (d->crc != pt->crc)
			return zerr_set(err, -EIO, pt->coff,
					"span at offset %llu does not match the "
					"checksum the index pass recorded",
					(unsigned long long)pt->uoff);
		d->span++;
		d->crc = 0;
	}
	return 0;
}

ssize_t gzdec_dec_read(struct gzdec_dec *d, struct zsrc *src, void *buf, size_t len,
		       struct zerr *err)
{
	const struct gzdec_index *idx = d->idx;
	uint64_t left = idx->usize - idx->points[d->point].uoff - d->pos;
	size_t want = len < left ? len : (size_t)left;
	int ret;

	if (d->failed)
		return zerr_set(err, -EIO, d->inoff + (uint64_t)(d->zs.next_in - d->in),
				"decoder has already failed");
	if (want > SSIZE_MAX)
		want = SSIZE_MAX;
	if (want == 0)
		return 0;
	ret = dec_inflate(d, src, buf, want, want == left, err);
	if (ret == 0)
		ret = dec_verify(d, buf, want, err);
	if (ret < 0) {
		d->failed = true;
		return ret;
	}
	d->pos += want;
	return (ssize_t)want;
}

uint64_t gzdec_dec_tell(const struct gzdec_dec *d)
{
	return d->pos;
}

void gzdec_dec_close(struct gzdec_dec *d)
{
	if (!d)
		return;
	inflateEnd(&d->zs);
	free(d);
}

ssize_t gzdec_extract(struct zsrc *src, const struct gzdec_index *idx, size_t point, void *buf,
		      size_t len, struct zerr *err)
{
	const struct gzdec_point *pt;
	struct gzdec_dec *d;
	ssize_t n;
	int ret;

	ret = dec_check(idx, point, err);
	if (ret < 0)
		return ret;
	pt = &idx->points[point];
	if (len > idx->usize - pt->uoff || len > SSIZE_MAX)
		return zerr_set(err, -EINVAL, pt->coff, "%zu bytes at %llu reach past the end", len,
				(unsigned long long)pt->uoff);
	if (len == 0)
		return 0;
	ret = gzdec_dec_open(idx, point, &d, err);
	if (ret < 0)
		return ret;
	n = gzdec_dec_read(d, src, buf, len, err);
	gzdec_dec_close(d);
	return n;
}

bool gzdec_magic(const void *head, size_t n)
{
	const unsigned char *p = head;

	return n >= 2 && p[0] == 0x1F && p[1] == 0x8B;
}
