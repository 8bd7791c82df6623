/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for codec/gzdec: the input is a whole .gz file.
 *
 * How it works.  The input goes into a memfd.  gzdec_header_check looks at
 * its first member header; gzdec_index_build_sink then builds the
 * checkpoint index with the smallest span (64 KiB) while a sink keeps the
 * first OUT_KEEP bytes of the output it reports.  On success, gzdec_extract
 * runs from every checkpoint (up to MAX_POINTS) and from a few more
 * (point, length) pairs derived from the input, and each result is compared
 * byte for byte with what the build pass produced: a checkpoint that
 * restarts inflate in the wrong place, with the wrong bits or the wrong
 * window, shows up as a mismatch even when nothing crashes.  Extract writes
 * at the very end of a heap buffer, so one byte too many is an ASan report.
 * A gzdec_dec then streams the same bytes in odd-sized pieces and must give
 * exactly what extract gave.
 *
 * The harness also aborts when a result breaks gzdec.h: error codes outside
 * the listed ones, *out not NULL on error, checkpoints out of order or with
 * impossible fields, a size that disagrees with the bytes the sink saw, a
 * header that fails gzdec_header_check in a file whose index builds, and
 * out-of-range requests that are not refused with -EINVAL.  Last, two
 * checkpoints are forged (bits, input offset, window size) to see that a
 * lying checkpoint fails or serves wrong bytes, but never overflows.
 *
 * Work per input is bounded by the input size (a deflate stream expands at
 * most about 1032:1, so -max_len bounds the build pass) and by MAX_POINTS
 * and EXTRACT_MAX for the extracts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "gzdec.h"

#define SPAN		(64u << 10)
#define OUT_KEEP	(8u << 20)
#define MAX_POINTS	32
#define EXTRACT_MAX	(192u << 10)
#define RANDOM_EXTRACTS 6

/* What the build pass showed its observer. */
struct seen {
	unsigned char *buf; /* the first min(total, OUT_KEEP) bytes */
	uint64_t total;	    /* every byte reported */
	uint64_t npoints;   /* point() calls */
	uint64_t last;	    /* uoff of the last point() */
	int order_ok;	    /* point() came with ascending uoff, at the output seen so far */
};

static void seen_output(void *ctx, const void *buf, size_t len)
{
	struct seen *s = ctx;

	if (s->total < OUT_KEEP) {
		size_t n = len < OUT_KEEP - s->total ? len : (size_t)(OUT_KEEP - s->total);

		memcpy(s->buf + s->total, buf, n);
	}
	s->total += len;
}

static void seen_point(void *ctx, uint64_t uoff)
{
	struct seen *s = ctx;

	if ((s->npoints && uoff <= s->last) || uoff != s->total)
		s->order_ok = 0;
	s->last = uoff;
	s->npoints++;
}

static void check_index(const struct gzdec_index *idx, const struct seen *s, uint64_t size)
{
	FUZZ_CHECK(idx->csize == size, "csize %llu != file size %llu",
		   (unsigned long long)idx->csize, (unsigned long long)size);
	FUZZ_CHECK(idx->usize == s->total, "usize %llu, the sink saw %llu bytes",
		   (unsigned long long)idx->usize, (unsigned long long)s->total);
	FUZZ_CHECK(idx->span == SPAN, "span %llu, asked for %u", (unsigned long long)idx->span,
		   SPAN);
	FUZZ_CHECK(idx->members >= 1, "no members");
	FUZZ_CHECK(idx->npoints >= 1 && idx->points, "no checkpoints");
	FUZZ_CHECK(idx->points[0].uoff == 0, "first checkpoint at %llu",
		   (unsigned long long)idx->points[0].uoff);
	FUZZ_CHECK(s->order_ok && s->npoints == idx->npoints,
		   "the sink saw %llu checkpoints (in order: %d), the index has %zu",
		   (unsigned long long)s->npoints, s->order_ok, idx->npoints);
	FUZZ_CHECK(idx->trailing == GZDEC_TRAIL_NONE || idx->trail_off < size,
		   "trailing data at %llu of %llu", (unsigned long long)idx->trail_off,
		   (unsigned long long)size);
	for (size_t i = 0; i < idx->npoints; i++) {
		const struct gzdec_point *p = &idx->points[i];

		FUZZ_CHECK(i == 0 || p->uoff > p[-1].uoff, "checkpoint %zu out of order", i);
		FUZZ_CHECK(i == 0 || p->coff >= p[-1].coff, "checkpoint %zu goes back in input", i);
		FUZZ_CHECK(p->uoff <= idx->usize && p->coff <= size, "checkpoint %zu out of range",
			   i);
		FUZZ_CHECK(p->bits <= 7 && !(p->bits && p->coff == 0), "checkpoint %zu: bits %u", i,
			   p->bits);
		FUZZ_CHECK(p->wsize <= GZDEC_WINDOW && p->wsize <= p->uoff,
			   "checkpoint %zu: window %u at %llu", i, p->wsize,
			   (unsigned long long)p->uoff);
		FUZZ_CHECK(!p->wsize == !p->wzsize && (!p->wzsize || p->wz),
			   "checkpoint %zu: window sizes %u/%u", i, p->wsize, p->wzsize);
	}
}

/* Extracts len bytes at checkpoint i and compares them with the build pass's output. */
static void extract_cmp(struct zsrc *src, const struct gzdec_index *idx, size_t i, size_t len,
			unsigned char *buf, const struct seen *s)
{
	struct zerr err = { 0 };
	unsigned char *dst = buf + EXTRACT_MAX - len;
	uint64_t uoff = idx->points[i].uoff;
	ssize_t n = gzdec_extract(src, idx, i, dst, len, &err);

	/* the file has not changed since the build, so nothing may fail */
	FUZZ_CHECK(n == (ssize_t)len, "extract(point %zu at %llu, %zu bytes) returned %zd: %s", i,
		   (unsigned long long)uoff, len, n, err.msg);
	if (uoff < OUT_KEEP) {
		size_t cmp = OUT_KEEP - uoff < len ? (size_t)(OUT_KEEP - uoff) : len;
		const unsigned char *want = s->buf + uoff;

		for (size_t k = 0; k < cmp; k++)
			FUZZ_CHECK(dst[k] == want[k],
				   "extract from checkpoint %zu: byte %llu is %02x, the build pass "
				   "saw %02x",
				   i, (unsigned long long)(uoff + k), dst[k], want[k]);
	}
}

/*
 * Streams len bytes from checkpoint i with a gzdec_dec, in pieces of
 * input-derived sizes, and compares them with gzdec_extract's (at the end
 * of buf, from extract_cmp just before).  At the end of the data a read
 * returns 0.
 */
static void stream_cmp(struct zsrc *src, const struct gzdec_index *idx, size_t i, size_t len,
		       const unsigned char *buf, uint64_t *state)
{
	static const size_t pieces[] = { 1, 3, 4093, 7, 65537, 2, 32768 };
	static unsigned char tmp[65537];
	const unsigned char *want = buf + EXTRACT_MAX - len;
	struct gzdec_dec *d = (struct gzdec_dec *)&d; /* must be overwritten */
	struct zerr err = { 0 };
	uint64_t left = idx->usize - idx->points[i].uoff;
	size_t got = 0, k = (size_t)fuzz_mix(state);
	ssize_t n;
	int ret = gzdec_dec_open(idx, i, &d, &err);

	FUZZ_CHECK(ret == 0 && d, "dec_open(point %zu) returned %d: %s", i, ret, err.msg);
	while (got < len) {
		size_t want_n = pieces[k++ % (sizeof(pieces) / sizeof(pieces[0]))];

		if (want_n > len - got)
			want_n = len - got;
		n = gzdec_dec_read(d, src, tmp, want_n, &err);
		FUZZ_CHECK(n == (ssize_t)want_n, "dec_read(point %zu, +%zu, %zu) returned %zd: %s",
			   i, got, want_n, n, err.msg);
		FUZZ_CHECK(memcmp(tmp, want + got, want_n) == 0,
			   "streaming from checkpoint %zu differs from extract at +%zu", i, got);
		got += want_n;
		FUZZ_CHECK(gzdec_dec_tell(d) == got, "dec_tell %llu != %zu",
			   (unsigned long long)gzdec_dec_tell(d), got);
	}
	if (left == len) {
		n = gzdec_dec_read(d, src, tmp, 1, &err);
		FUZZ_CHECK(n == 0, "dec_read at the end returned %zd", n);
	}
	gzdec_dec_close(d);
}

/*
 * A checkpoint that lies, as in an index file edited and resealed, or one
 * kept after its source changed in place: another bit offset, input offset
 * or window size.  Extract may serve wrong bytes (it cannot know; callers
 * compare the source's identity) or fail with -EIO or -EINVAL, but must
 * never write past len or read past the window it was given.
 */
static void forged(struct zsrc *src, struct gzdec_index *idx, unsigned char *buf, uint64_t *state)
{
	for (int k = 0; k < 2; k++) {
		size_t i = (size_t)(fuzz_mix(state) % idx->npoints);
		struct gzdec_point saved = idx->points[i], *p = &idx->points[i];
		uint64_t r = fuzz_mix(state), left = idx->usize - p->uoff;
		size_t len = left < 4099 ? (size_t)left : 4099;
		struct zerr err = { 0 };
		ssize_t n;

		switch (r % 3) {
		case 0:
			p->bits = (uint8_t)((r >> 8) % 8);
			break;
		case 1:
			if ((r >> 8) % 2 || p->coff == 0)
				p->coff++;
			else
				p->coff--;
			break;
		default:
			p->wsize = (uint32_t)((r >> 8) % (GZDEC_WINDOW + 1));
			break;
		}
		n = gzdec_extract(src, idx, i, buf + EXTRACT_MAX - len, len, &err);
		FUZZ_CHECK(n == (ssize_t)len || n == -EIO || n == -EINVAL || n == -ENOMEM,
			   "extract from a forged checkpoint returned %zd: %s", n, err.msg);
		*p = saved;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gzdec_index *idx = (struct gzdec_index *)&idx; /* must be overwritten */
	struct seen s = { .order_ok = 1 };
	struct gzdec_sink sink = { seen_output, seen_point, &s, NULL };
	struct zerr err = { 0 };
	uint64_t state = fuzz_seed(data, size);
	unsigned char *buf;
	ssize_t n;
	struct zsrc *src = fuzz_src(data, size);
	int hret, ret;

	hret = gzdec_header_check(src, size, &err);
	FUZZ_CHECK(hret == 0 || hret == -EINVAL || hret == -ENOMEM || hret == -EIO,
		   "header_check returned %d", hret);
	FUZZ_CHECK(hret == 0 || err.msg[0], "header_check failed (%d) without a reason", hret);
	if (size < 2 || data[0] != 0x1F || data[1] != 0x8B)
		FUZZ_CHECK(hret == -EINVAL, "header_check accepted a file without gzip magic");

	s.buf = malloc(OUT_KEEP);
	buf = malloc(EXTRACT_MAX);
	FUZZ_CHECK(s.buf && buf, "out of memory");
	err.msg[0] = '\0';
	/* half the minimum: the header promises it is clamped up to 64 KiB */
	ret = gzdec_index_build_sink(src, size, SPAN / 2, &sink, &idx, &err);
	if (ret < 0) {
		FUZZ_CHECK(idx == NULL, "index_build failed (%d) but *out is set", ret);
		FUZZ_CHECK(ret == -EINVAL || ret == -ENOMEM || ret == -EIO,
			   "index_build returned %d, not listed in gzdec.h", ret);
		FUZZ_CHECK(err.msg[0], "index_build failed (%d) without a reason", ret);
		goto out;
	}
	FUZZ_CHECK(ret == 0 && idx, "index_build returned %d", ret);
	FUZZ_CHECK(hret == 0, "the index builds, but header_check refused the header: %s", err.msg);
	check_index(idx, &s, size);

	/* every checkpoint: its first bytes */
	for (size_t i = 0; i < idx->npoints && i < MAX_POINTS; i++) {
		uint64_t left = idx->usize - idx->points[i].uoff;
		size_t len = left < 4099 ? (size_t)left : 4099;

		extract_cmp(src, idx, i, len, buf, &s);
		stream_cmp(src, idx, i, len, buf, &state);
	}
	/* a few (point, length) pairs from the input, including runs across checkpoints */
	for (int k = 0; k < RANDOM_EXTRACTS; k++) {
		size_t i = (size_t)(fuzz_mix(&state) % idx->npoints);
		uint64_t left = idx->usize - idx->points[i].uoff;
		size_t len = (size_t)(fuzz_mix(&state) % EXTRACT_MAX) + 1;

		extract_cmp(src, idx, i, len < left ? len : (size_t)left, buf, &s);
	}
	/* the last checkpoint, up to the very end */
	{
		size_t i = idx->npoints - 1;
		uint64_t left = idx->usize - idx->points[i].uoff;

		if (left <= EXTRACT_MAX) {
			extract_cmp(src, idx, i, (size_t)left, buf, &s);
			stream_cmp(src, idx, i, (size_t)left, buf, &state);
		}
	}
	/* requests out of range are refused, not served */
	n = gzdec_extract(src, idx, idx->npoints, buf, 1, &err);
	FUZZ_CHECK(n == -EINVAL, "extract at checkpoint npoints returned %zd", n);
	if (idx->usize - idx->points[0].uoff < EXTRACT_MAX) {
		n = gzdec_extract(src, idx, 0, buf, (size_t)idx->usize + 1, &err);
		FUZZ_CHECK(n == -EINVAL, "extract past the end returned %zd", n);
	}
	forged(src, idx, buf, &state);
	gzdec_index_free(idx);
out:
	free(buf);
	free(s.buf);
	zsrc_put(src);
	return 0;
}
