/* SPDX-License-Identifier: MIT */
/*
 * Tests for codec/xzckpt.c, differential against liblzma: .xz files are
 * made in memory with lzma_stream_encoder (one Block) under several presets,
 * dictionaries, lc/lp/pb and Checks; xzdec (liblzma) decodes each whole
 * Block as the reference.  xzckpt_build must give the same bytes and
 * checkpoints that are sparse; resuming from every checkpoint must give the
 * reference's bytes to the Block's end.  Then what must fail: filters other
 * than LZMA2, SHA-256, damaged data, Check, Padding or Index sizes, and
 * damaged or foreign checkpoints.
 */
#include <check.h>
#include <errno.h>
#include <lzma.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "xzckpt.h"
#include "xzdec.h"
#include "zmtest.h"

/* Blob layout facts the crafted-blob test needs (see xzckpt.h). */
#define HEAD	   96
#define HEAD_ZLEN  88
#define HEAD_CRC   92
#define HEAD_KEPT  84
#define HEAD_NRUNS 80
#define HEAD_NPROB 56
#define HEAD_WLEN  60

struct buf {
	uint8_t *p;
	size_t n, cap;
};

struct point {
	uint64_t uoff;
	struct buf blob;
};

/* What build handed out: the output and the checkpoints. */
struct got {
	struct buf out;
	struct point *pts;
	size_t npts;
	int fail_at;   /* point() returns -ECANCELED at this point number (0: never) */
	pthread_t thr; /* the thread of the first out(): every call must come on it */
	bool thr_set;
};

/* A file under test: its bytes as a source (memsrc), its index, the reference output of its Block.
 */
struct xzf {
	struct memsrc *m;
	struct buf file;
	struct xzdec_index *idx;
	struct buf ref;
};

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void append(struct buf *b, const void *p, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = 2 * (b->n + n + 1);
		b->p = realloc(b->p, b->cap);
		ck_assert(b->p);
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

/* Log-like lines with numbers, and now and then incompressible runs (stored chunks). */
static struct buf text(size_t n, uint32_t seed)
{
	static const char *w[] = { "GET /api/v1/items ",
				   "200 ",
				   "ERROR ",
				   "cache miss ",
				   "the ",
				   "index ",
				   "block ",
				   "zmount ",
				   "span ",
				   "window ",
				   "\n",
				   "2026-12-01T15:00:00Z ",
				   "user=",
				   "took " };
	struct buf b = { 0 };
	char tmp[32];

	while (b.n < n) {
		uint32_t r = rnd(&seed);

		if (r % 20000 == 0) { /* about 100 KiB of noise, now and then */
			for (int i = 0; i < 100000; i++) {
				uint8_t c = (uint8_t)(rnd(&seed) >> 11);

				append(&b, &c, 1);
			}
		} else if (r % 5 == 0) {
			append(&b, tmp, (size_t)snprintf(tmp, sizeof(tmp), "%u ", r % 100000));
		} else {
			const char *s = w[r % (sizeof(w) / sizeof(w[0]))];

			append(&b, s, strlen(s));
		}
	}
	b.n = n;
	return b;
}

static struct buf encode(const struct buf *in, const lzma_filter *f, lzma_check check)
{
	lzma_stream s = LZMA_STREAM_INIT;
	struct buf out = { 0 };
	size_t cap = in->n + in->n / 8 + 65536;

	ck_assert_int_eq(lzma_stream_encoder(&s, f, check), LZMA_OK);
	out.p = malloc(cap);
	ck_assert(out.p);
	s.next_in = in->p;
	s.avail_in = in->n;
	s.next_out = out.p;
	s.avail_out = cap;
	ck_assert_int_eq(lzma_code(&s, LZMA_FINISH), LZMA_STREAM_END);
	out.n = cap - s.avail_out;
	lzma_end(&s);
	return out;
}

/* Puts file into a memsrc and reads its index and the reference output of Block 0. */
static void xzf_open(struct xzf *x, struct buf file)
{
	struct zerr err = { 0 };
	struct xzdec_dec *d;
	ssize_t n;

	x->file = file;
	x->m = memsrc_new(file.p, file.n);
	ck_assert_int_eq(xzdec_index_read(memsrc_src(x->m), file.n, &x->idx, &err), 0);
	ck_assert_uint_eq(x->idx->nblocks, 1);
	x->ref.n = x->idx->blocks[0].usize;
	x->ref.p = malloc(x->ref.n + 1);
	ck_assert(x->ref.p);
	ck_assert_int_eq(xzdec_dec_open(memsrc_src(x->m), &x->idx->blocks[0], NULL, &d, &err), 0);
	for (size_t at = 0; at < x->ref.n; at += (size_t)n) {
		n = xzdec_dec_read(d, memsrc_src(x->m), x->ref.p + at, x->ref.n - at, &err);
		ck_assert_msg(n > 0, "xzdec: %zd %s", n, err.msg);
	}
	xzdec_dec_close(d);
}

static void xzf_close(struct xzf *x)
{
	xzdec_index_free(x->idx);
	memsrc_destroy(x->m);
	free(x->file.p);
	free(x->ref.p);
}

/* Both sink calls on the build's caller, though it compresses on a helper (xzckpt.h). */
static void same_thread(struct got *g)
{
	if (!g->thr_set) {
		g->thr = pthread_self();
		g->thr_set = true;
	}
	ck_assert_msg(pthread_equal(g->thr, pthread_self()), "a sink call on another thread");
}

static int got_out(void *arg, const void *buf, size_t len)
{
	same_thread(arg);
	append(&((struct got *)arg)->out, buf, len);
	return 0;
}

static int got_point(void *arg, uint64_t uoff, const void *blob, size_t len)
{
	struct got *g = arg;

	same_thread(g);
	if (g->fail_at && (size_t)g->fail_at == g->npts + 1)
		return -ECANCELED;
	/* every byte before a checkpoint comes before it */
	ck_assert_uint_ge(g->out.n, uoff);
	g->pts = realloc(g->pts, (g->npts + 1) * sizeof(*g->pts));
	ck_assert(g->pts);
	g->pts[g->npts].uoff = uoff;
	g->pts[g->npts].blob = (struct buf){ 0 };
	append(&g->pts[g->npts].blob, blob, len);
	g->npts++;
	return 0;
}

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->npts; i++)
		free(g->pts[i].blob.p);
	free(g->pts);
	free(g->out.p);
	memset(g, 0, sizeof(*g));
}

static int build(struct xzf *x, const struct xzdec_block *b, uint64_t span, struct got *g,
		 struct xzckpt_stats *st, struct zerr *err)
{
	struct xzckpt_sink s = { got_out, got_point, g };

	return xzckpt_build(memsrc_src(x->m), b, span, &s, st, err);
}

/*
 * Resumes at blob (NULL: the start), with windows from sp (may be NULL),
 * and reads to the end in odd pieces; must equal ref.
 */
static void resume_check(struct xzf *x, const struct point *pt, struct xzdec_spares *sp)
{
	const struct xzdec_block *b = &x->idx->blocks[0];
	uint64_t at = pt ? pt->uoff : 0;
	struct zerr err = { 0 };
	struct xzckpt_dec *d;
	static uint8_t buf[70001];
	size_t piece = 1;
	ssize_t n;

	ck_assert_int_eq(xzckpt_dec_open(memsrc_src(x->m), b, sp, pt ? pt->blob.p : NULL,
					 pt ? pt->blob.n : 0, &d, &err),
			 0);
	ck_assert_uint_eq(xzckpt_dec_tell(d), at);
	ck_assert_uint_gt(xzckpt_dec_cost(d), 0);
	while ((n = xzckpt_dec_read(d, memsrc_src(x->m), buf, piece, &err)) > 0) {
		ck_assert_uint_le(at + (uint64_t)n, x->ref.n);
		ck_assert_msg(memcmp(buf, x->ref.p + at, (size_t)n) == 0,
			      "resumed at %llu: bytes differ in [%llu, %llu)",
			      (unsigned long long)(pt ? pt->uoff : 0), (unsigned long long)at,
			      (unsigned long long)(at + (uint64_t)n));
		at += (uint64_t)n;
		ck_assert_uint_eq(xzckpt_dec_tell(d), at);
		piece = piece * 7 % sizeof(buf) + 1;
	}
	ck_assert_msg(n == 0, "resumed at %llu: %zd %s", (unsigned long long)(pt ? pt->uoff : 0), n,
		      err.msg);
	ck_assert_uint_eq(at, x->ref.n);
	xzckpt_dec_close(d);
}

/* One configuration: build at span, compare, resume from every checkpoint. */
static void config_run(const lzma_options_lzma *opt, lzma_check check, size_t size, uint64_t span)
{
	lzma_filter f[2] = { { LZMA_FILTER_LZMA2, (void *)opt }, { LZMA_VLI_UNKNOWN, NULL } };
	struct buf in = text(size, 0x9e3779b9u + (uint32_t)span);
	struct xzckpt_stats st;
	struct zerr err = { 0 };
	struct got g = { 0 };
	struct xzf x;

	xzf_open(&x, encode(&in, f, check));
	ck_assert(x.ref.n == in.n && memcmp(x.ref.p, in.p, in.n) == 0);
	ck_assert_msg(build(&x, &x.idx->blocks[0], span, &g, &st, &err) == 0, "build: %s", err.msg);
	ck_assert(g.out.n == x.ref.n && memcmp(g.out.p, x.ref.p, x.ref.n) == 0);
	ck_assert_uint_ge(g.npts, size / span / 4); /* chunks are up to 2 MiB of output */
	ck_assert_uint_eq(st.points, g.npts);
	for (size_t i = 0; i < g.npts; i++) {
		/* at the start of the chunk holding a multiple of span: within 2 MiB before it */
		uint64_t m = (g.pts[i].uoff + span - 1) / span * span;

		ck_assert(i == 0 || g.pts[i].uoff > g.pts[i - 1].uoff);
		ck_assert_msg(m - g.pts[i].uoff < (2u << 20), "point %zu at %llu, span %llu", i,
			      (unsigned long long)g.pts[i].uoff, (unsigned long long)span);
		ck_assert(g.pts[i].uoff > 0 && g.pts[i].uoff < x.ref.n);
		resume_check(&x, &g.pts[i], NULL);
	}
	resume_check(&x, NULL, NULL);
	/* sparse: far less than the dense windows */
	ck_assert_uint_lt(st.window_bytes_kept, st.window_bytes_dense / 2);
	got_free(&g);
	xzf_close(&x);
	free(in.p);
}

static lzma_options_lzma preset(uint32_t p)
{
	lzma_options_lzma o;

	ck_assert(!lzma_lzma_preset(&o, p));
	return o;
}

START_TEST(test_preset0)
{
	lzma_options_lzma o = preset(0);

	config_run(&o, LZMA_CHECK_CRC32, 3 << 20, 256 << 10);
	/*
	 * Spans longer than a chunk, as a mount's (16 MiB): each point within
	 * a chunk before its multiple of the span.  The first chunk start past
	 * it, where points were, left a span job a slice to decode and drop.
	 */
	config_run(&o, LZMA_CHECK_CRC64, 9 << 20, 4 << 20);
}
END_TEST

START_TEST(test_preset6)
{
	lzma_options_lzma o = preset(6);

	config_run(&o, LZMA_CHECK_CRC64, 3 << 20, 128 << 10); /* many open checkpoints */
	config_run(&o, LZMA_CHECK_CRC64, 3 << 20, 1 << 20);
}
END_TEST

START_TEST(test_preset9e)
{
	lzma_options_lzma o = preset(9 | LZMA_PRESET_EXTREME);

	config_run(&o, LZMA_CHECK_CRC64, 4 << 20, 512 << 10);
}
END_TEST

START_TEST(test_dict64k)
{
	lzma_options_lzma o = preset(6);

	o.dict_size = 64 << 10;
	config_run(&o, LZMA_CHECK_CRC32, 3 << 20, 32 << 10); /* span < dict */
	config_run(&o, LZMA_CHECK_NONE, 3 << 20, 300 << 10); /* span > dict */
}
END_TEST

START_TEST(test_lclppb)
{
	static const uint32_t v[][3] = {
		{ 0, 0, 0 }, { 4, 0, 4 }, { 0, 4, 2 }, { 1, 3, 1 }, { 3, 1, 0 }
	};
	lzma_options_lzma o = preset(1);

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		o.lc = v[i][0];
		o.lp = v[i][1];
		o.pb = v[i][2];
		config_run(&o, i % 2 ? LZMA_CHECK_CRC64 : LZMA_CHECK_CRC32, 2 << 20, 192 << 10);
	}
}
END_TEST

/* A small file: one LZMA2 Block of `size` bytes of text, preset 6, dict 1 MiB. */
static void small_open(struct xzf *x, size_t size, lzma_check check)
{
	lzma_options_lzma o = preset(6);
	lzma_filter f[2] = { { LZMA_FILTER_LZMA2, &o }, { LZMA_VLI_UNKNOWN, NULL } };
	struct buf in = text(size, 12345);

	o.dict_size = 1 << 20;
	xzf_open(x, encode(&in, f, check));
	free(in.p);
}

START_TEST(test_filters_unsupported)
{
	lzma_options_lzma o = preset(6);
	lzma_filter f[3] = { { LZMA_FILTER_X86, NULL },
			     { LZMA_FILTER_LZMA2, &o },
			     { LZMA_VLI_UNKNOWN, NULL } };
	struct buf in = text(1 << 20, 7);
	struct zerr err = { 0 };
	struct xzckpt_dec *d = (void *)1;
	struct got g = { 0 };
	struct xzf x;

	xzf_open(&x, encode(&in, f, LZMA_CHECK_CRC64));
	ck_assert_int_eq(build(&x, &x.idx->blocks[0], 1 << 16, &g, NULL, &err), -ENOTSUP);
	ck_assert_msg(strstr(err.msg, "BCJ"), "%s", err.msg);
	ck_assert_uint_eq(g.npts, 0);
	ck_assert_int_eq(
		xzckpt_dec_open(memsrc_src(x.m), &x.idx->blocks[0], NULL, NULL, 0, &d, &err),
		-ENOTSUP);
	ck_assert_ptr_null(d);
	got_free(&g);
	xzf_close(&x);

	small_open(&x, 1 << 20, LZMA_CHECK_SHA256);
	ck_assert_int_eq(build(&x, &x.idx->blocks[0], 1 << 16, &g, NULL, &err), -ENOTSUP);
	got_free(&g);
	xzf_close(&x);
	free(in.p);
}
END_TEST

/* xzf_open without the reference decode (which would fail on damage). */
static void raw_open(struct xzf *x, struct buf file)
{
	struct zerr err = { 0 };

	memset(x, 0, sizeof(*x));
	x->file = file;
	x->m = memsrc_new(file.p, file.n);
	ck_assert_int_eq(xzdec_index_read(memsrc_src(x->m), file.n, &x->idx, &err), 0);
}

/* Build on a copy of x's file with byte at flipped; must fail with -EIO. */
static void build_flipped(const struct xzf *x, uint64_t at, const char *what)
{
	struct buf copy = { 0 };
	struct zerr err = { 0 };
	struct got g = { 0 };
	struct xzf y;

	append(&copy, x->file.p, x->file.n);
	copy.p[at] ^= 0x10;
	raw_open(&y, copy); /* the Index is not touched: it still reads */
	ck_assert_msg(build(&y, y.idx->blocks, 1 << 16, &g, NULL, &err) == -EIO, "%s at %llu: %s",
		      what, (unsigned long long)at, err.msg);
	got_free(&g);
	xzdec_index_free(y.idx);
	memsrc_destroy(y.m);
	free(y.file.p);
}

START_TEST(test_damage)
{
	const struct xzdec_block *b;
	struct xzdec_block lie;
	struct zerr err = { 0 };
	struct got g = { 0 };
	struct xzf x;

	small_open(&x, 2 << 20, LZMA_CHECK_CRC64);
	b = &x.idx->blocks[0];
	for (uint64_t at = b->coff + 40; at < b->coff + b->unpadded - 8; at += b->unpadded / 7)
		build_flipped(&x, at, "data");
	/* the Check's bytes (after the Padding), the Padding's, the Block Header's */
	for (uint64_t at = b->coff + b->csize - 8; at < b->coff + b->csize; at++) {
		struct buf copy = { 0 };
		struct xzf y;

		append(&copy, x.file.p, x.file.n);
		copy.p[at] ^= 0x01;
		raw_open(&y, copy);
		ck_assert_int_eq(build(&y, y.idx->blocks, 1 << 16, &g, NULL, &err), -EIO);
		ck_assert_msg(strstr(err.msg, "CRC64 mismatch"), "%s", err.msg);
		got_free(&g);
		xzdec_index_free(y.idx);
		memsrc_destroy(y.m);
		free(y.file.p);
	}
	for (uint64_t at = b->coff + b->unpadded - 8; at < b->coff + b->csize - 8; at++)
		build_flipped(&x, at, "Padding");
	build_flipped(&x, b->coff + 2, "Block Header");
	/* sizes that disagree with the Index */
	lie = *b;
	lie.usize--;
	ck_assert_int_eq(xzckpt_build(memsrc_src(x.m), &lie, 1 << 16,
				      &(struct xzckpt_sink){ got_out, got_point, &g }, NULL, &err),
			 -EIO);
	got_free(&g);
	lie = *b;
	lie.unpadded += 4;
	lie.csize += 4;
	ck_assert_int_eq(build(&x, &lie, 1 << 16, &g, NULL, &err), -EIO);
	got_free(&g);
	/* arguments, and a sink that says stop */
	ck_assert_int_eq(build(&x, b, 0, &g, NULL, &err), -EINVAL);
	g.fail_at = 2;
	ck_assert_int_eq(build(&x, b, 1 << 16, &g, NULL, &err), -ECANCELED);
	ck_assert_uint_eq(g.npts, 1);
	got_free(&g);
	xzf_close(&x);
}
END_TEST

static int open_blob(struct xzf *x, const struct xzdec_block *b, const struct buf *blob)
{
	struct xzckpt_dec *d = (void *)1;
	struct zerr err = { 0 };
	int ret = xzckpt_dec_open(memsrc_src(x->m), b, NULL, blob->p, blob->n, &d, &err);

	if (ret < 0)
		ck_assert_ptr_null(d);
	xzckpt_dec_close(d);
	return ret;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void reseal(struct buf *blob)
{
	put32(blob->p + HEAD_CRC,
	      lzma_crc32(blob->p + HEAD, blob->n - HEAD, lzma_crc32(blob->p, HEAD - 4, 0)));
}

START_TEST(test_bad_blob)
{
	const struct xzdec_block *b;
	struct xzdec_block other;
	struct zerr err = { 0 };
	struct got g = { 0 };
	struct buf blob, raw, z;
	struct xzf x;
	uint32_t nprobs, nruns, kept;
	size_t rawlen;

	small_open(&x, 3 << 20, LZMA_CHECK_CRC32);
	b = &x.idx->blocks[0];
	ck_assert_int_eq(build(&x, b, 1 << 20, &g, NULL, &err), 0);
	ck_assert_uint_ge(g.npts, 2);
	blob = g.pts[1].blob;
	ck_assert_int_eq(open_blob(&x, b, &blob), 0);
	/* every single flipped bit of the head, and bytes all over the payload */
	for (size_t i = 0; i < blob.n; i += i < HEAD ? 1 : 97) {
		for (int bit = 0; bit < 8; bit += i < HEAD ? 1 : 3) {
			blob.p[i] ^= (uint8_t)(1u << bit);
			ck_assert_msg(open_blob(&x, b, &blob) == -EINVAL, "byte %zu bit %d", i,
				      bit);
			blob.p[i] ^= (uint8_t)(1u << bit);
		}
	}
	/* every truncation, and a byte more */
	for (size_t n = 0; n < blob.n; n += n < 200 ? 1 : 101) {
		struct buf t = { blob.p, n, n };

		ck_assert_int_eq(open_blob(&x, b, &t), -EINVAL);
	}
	append(&blob, "", 1);
	ck_assert_int_eq(open_blob(&x, b, &blob), -EINVAL);
	blob.n--;
	/* another Block's: its offset or its size differ */
	other = *b;
	other.usize++;
	ck_assert_int_eq(xzckpt_dec_open(memsrc_src(x.m), &other, NULL, blob.p, blob.n,
					 &(struct xzckpt_dec *){ 0 }, &err),
			 -EINVAL);
	other = *b;
	other.coff += 4; /* no Block Header there: -EIO before the blob is looked at */
	ck_assert_int_lt(xzckpt_dec_open(memsrc_src(x.m), &other, NULL, blob.p, blob.n,
					 &(struct xzckpt_dec *){ 0 }, &err),
			 0);

	/*
	 * A blob that parses and whose CRC is right, crafted: the kept bytes
	 * zeroed.  It opens; its output differs from the reference, which is
	 * what the caller's per-span checksums must catch.
	 */
	nprobs = get32(blob.p + HEAD_NPROB);
	nruns = get32(blob.p + HEAD_NRUNS);
	kept = get32(blob.p + HEAD_KEPT);
	rawlen = (size_t)ZSTD_getFrameContentSize(blob.p + HEAD, blob.n - HEAD);
	ck_assert_uint_ge(rawlen, 2 * (size_t)nprobs + 2 * (size_t)nruns + kept);
	raw.p = malloc(rawlen + 1);
	raw.n = rawlen;
	ck_assert_uint_eq(ZSTD_decompress(raw.p, rawlen, blob.p + HEAD, blob.n - HEAD), rawlen);
	memset(raw.p + rawlen - kept, 0, kept);
	z.p = malloc(HEAD + ZSTD_compressBound(rawlen + 1));
	memcpy(z.p, blob.p, HEAD);
	z.n = HEAD + ZSTD_compress(z.p + HEAD, ZSTD_compressBound(rawlen), raw.p, rawlen, 1);
	put32(z.p + HEAD_ZLEN, (uint32_t)(z.n - HEAD));
	reseal(&z);
	{
		struct xzckpt_dec *d;
		static uint8_t buf[1 << 20];
		uint64_t at = g.pts[1].uoff;
		ssize_t n;
		int differs = 0;

		ck_assert_int_eq(xzckpt_dec_open(memsrc_src(x.m), b, NULL, z.p, z.n, &d, &err), 0);
		while ((n = xzckpt_dec_read(d, memsrc_src(x.m), buf, sizeof(buf), &err)) > 0 &&
		       !differs) {
			differs = memcmp(buf, x.ref.p + at, (size_t)n) != 0;
			at += (uint64_t)n;
		}
		ck_assert_msg(differs || n < 0,
			      "a blob with its window zeroed gave the right bytes");
		xzckpt_dec_close(d);
	}
	/* resealed, but one run more than the runs hold, or one byte more than kept: refused */
	ck_assert_uint_gt(nruns, 0);
	put32(z.p + HEAD_NRUNS, nruns + 1);
	reseal(&z);
	ck_assert_int_eq(open_blob(&x, b, &z), -EINVAL);
	put32(z.p + HEAD_NRUNS, nruns);
	raw.p[rawlen] = 'x';
	z.n = HEAD +
	      ZSTD_compress(z.p + HEAD, ZSTD_compressBound(rawlen + 1), raw.p, rawlen + 1, 1);
	put32(z.p + HEAD_ZLEN, (uint32_t)(z.n - HEAD));
	reseal(&z);
	ck_assert_int_eq(open_blob(&x, b, &z), -EINVAL);
	free(raw.p);
	free(z.p);
	got_free(&g);
	xzf_close(&x);
}
END_TEST

/* Appends v as LEB128, as the blob's runs are stored. */
static void put_varint(struct buf *b, uint32_t v)
{
	uint8_t c;

	while (v >= 0x80) {
		c = (uint8_t)(v | 0x80);
		append(b, &c, 1);
		v >>= 7;
	}
	c = (uint8_t)v;
	append(b, &c, 1);
}

/* blob with its payload replaced: its probabilities, then one 8-byte run at gap. */
static struct buf one_run_blob(const struct buf *blob, uint32_t gap)
{
	uint32_t nprobs = get32(blob->p + HEAD_NPROB);
	size_t rawlen = (size_t)ZSTD_getFrameContentSize(blob->p + HEAD, blob->n - HEAD);
	struct buf raw = { 0 }, z = { 0 };
	uint8_t *full = malloc(rawlen);

	ck_assert(full);
	ck_assert_uint_eq(ZSTD_decompress(full, rawlen, blob->p + HEAD, blob->n - HEAD), rawlen);
	append(&raw, full, 2 * (size_t)nprobs);
	put_varint(&raw, gap);
	put_varint(&raw, 8 - 1);
	append(&raw, "runbytes", 8);
	z.cap = HEAD + ZSTD_compressBound(raw.n);
	z.p = malloc(z.cap);
	ck_assert(z.p);
	memcpy(z.p, blob->p, HEAD);
	z.n = HEAD + ZSTD_compress(z.p + HEAD, z.cap - HEAD, raw.p, raw.n, 1);
	put32(z.p + HEAD_NRUNS, 1);
	put32(z.p + HEAD_KEPT, 8);
	put32(z.p + HEAD_ZLEN, (uint32_t)(z.n - HEAD));
	reseal(&z);
	free(full);
	free(raw.p);
	return z;
}

/*
 * A resumed decoder's window comes from the caller's stock and goes back
 * there at close; the next decoder takes it, whatever the last one left
 * in it, and still gives the right bytes.  However many decoders close,
 * the stock keeps at most its 8 MiB.  A forged blob whose run ends past
 * the window is refused (and, under ASan, writes nothing outside it).
 */
START_TEST(test_window_stock)
{
	const uint32_t wsize = 1 << 20; /* small_open's dictionary */
	const struct xzdec_block *b;
	struct xzckpt_dec *d[10];
	struct xzdec_spares *sp;
	struct zerr err = { 0 };
	struct got g = { 0 };
	struct buf z;
	struct xzf x;

	small_open(&x, 6 << 20, LZMA_CHECK_CRC32);
	b = &x.idx->blocks[0];
	ck_assert_int_eq(build(&x, b, 1 << 20, &g, NULL, &err), 0);
	ck_assert_uint_ge(g.npts, 3);
	ck_assert_uint_eq(get32(g.pts[1].blob.p + HEAD_WLEN), wsize);
	ck_assert_int_eq(xzdec_spares_new(&sp), 0);
	/* last point first: each reused window holds a later part of the output */
	for (size_t i = g.npts; i-- > 0;) {
		resume_check(&x, &g.pts[i], sp);
		ck_assert_uint_eq(xzdec_spares_bytes(sp), wsize);
	}
	ck_assert_int_eq(xzckpt_dec_open(memsrc_src(x.m), b, sp, g.pts[0].blob.p, g.pts[0].blob.n,
					 &d[0], &err),
			 0);
	ck_assert_uint_eq(xzdec_spares_bytes(sp), 0); /* taken, not allocated */
	for (size_t i = 1; i < 10; i++)
		ck_assert_int_eq(xzckpt_dec_open(memsrc_src(x.m), b, sp, g.pts[0].blob.p,
						 g.pts[0].blob.n, &d[i], &err),
				 0);
	for (size_t i = 0; i < 10; i++) {
		xzckpt_dec_close(d[i]);
		ck_assert_uint_le(xzdec_spares_bytes(sp), 8u << 20);
	}
	ck_assert_uint_eq(xzdec_spares_bytes(sp), 8u << 20);

	z = one_run_blob(&g.pts[1].blob, wsize - 8); /* the run ends at the window's end */
	ck_assert_int_eq(xzckpt_dec_open(memsrc_src(x.m), b, sp, z.p, z.n, &d[0], &err), 0);
	xzckpt_dec_close(d[0]);
	free(z.p);
	z = one_run_blob(&g.pts[1].blob, wsize - 4); /* 4 bytes past it */
	d[0] = (void *)1;
	ck_assert_int_eq(xzckpt_dec_open(memsrc_src(x.m), b, sp, z.p, z.n, &d[0], &err), -EINVAL);
	ck_assert_ptr_null(d[0]);
	ck_assert_uint_eq(xzdec_spares_bytes(sp), 8u << 20); /* its window went back */
	free(z.p);
	xzdec_spares_free(sp);
	got_free(&g);
	xzf_close(&x);
}
END_TEST

static Suite *xzckpt_suite(void)
{
	const struct zmtest_case t[] = {
		{ "preset0", test_preset0, 0 },
		{ "preset6", test_preset6, 0 },
		{ "preset9e", test_preset9e, 0 },
		{ "dict64k", test_dict64k, 0 },
		{ "lclppb", test_lclppb, 0 },
		{ "filters_unsupported", test_filters_unsupported, 0 },
		{ "damage", test_damage, 0 },
		{ "bad_blob", test_bad_blob, 0 },
		{ "window_stock", test_window_stock, 0 },
	};

	return zmtest_suite("check_xzckpt", "xzckpt", t, sizeof(t) / sizeof(t[0]), 600, 1, NULL);
}

int main(void)
{
	SRunner *sr = srunner_create(xzckpt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0;
}
