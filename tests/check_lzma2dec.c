/* SPDX-License-Identifier: MIT */
/*
 * Tests for codec/lzma2dec.c, differential against liblzma, which is the
 * reference for every byte: data is encoded with lzma_raw_encoder (LZMA2
 * alone) under many presets and options, decoded by both, and compared.
 * Then, at every chunk boundary, the checkpoint is exported, serialised,
 * loaded again and resumed from, and the rest must match byte for byte.
 * Malformed streams (every truncation, bit flips) must fail in both or give
 * the same bytes.  The xz-utils files of the corpus (argv[1], else
 * $ZMOUNT_CORPUS, else the ../shared/corpus that CMake compiles in) whose
 * single Block is LZMA2 alone are decoded too; without the corpus that test
 * is skipped out loud and the exit status is 77.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lzma2dec.h"
#include "zmtest.h"

static char corpus[PATH_MAX]; /* .../corpus/xz-utils */

struct buf {
	uint8_t *p;
	size_t n;
};

/* ---- data ---- */

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Appends n bytes of word salad (compresses about 3:1) to b. */
static void add_text(struct buf *b, size_t n, uint32_t seed)
{
	static const char *w[] = { "the ",
				   "index ",
				   "block ",
				   "of ",
				   "zmount ",
				   "reads ",
				   "GET /api/v1/items ",
				   "200 ",
				   "ERROR ",
				   "cache ",
				   "\n",
				   "2026-12-01T15:00:00Z ",
				   "span ",
				   "window " };

	b->p = realloc(b->p, b->n + n);
	ck_assert(b->p);
	for (size_t i = 0; i < n;) {
		const char *s = w[rnd(&seed) % (sizeof(w) / sizeof(w[0]))];

		for (; *s && i < n; s++)
			b->p[b->n + i++] = (uint8_t)*s;
	}
	b->n += n;
}

/* Appends n incompressible bytes: LZMA2 stores them as uncompressed chunks. */
static void add_random(struct buf *b, size_t n, uint32_t seed)
{
	b->p = realloc(b->p, b->n + n);
	ck_assert(b->p);
	for (size_t i = 0; i < n; i++)
		b->p[b->n + i] = (uint8_t)(rnd(&seed) >> 7);
	b->n += n;
}

/* Text, random, text, random, text: every kind of chunk and reset. */
static struct buf mixed(size_t scale, uint32_t seed)
{
	struct buf b = { 0 };

	add_text(&b, 5 * scale, seed);
	add_random(&b, scale, seed + 1);
	add_text(&b, 3 * scale, seed + 2);
	add_random(&b, scale / 3, seed + 3);
	add_text(&b, scale, seed + 4);
	return b;
}

/* ---- liblzma, the reference ---- */

static struct buf encode(const struct buf *in, const lzma_options_lzma *opt)
{
	lzma_filter f[2] = { { LZMA_FILTER_LZMA2, (void *)opt }, { LZMA_VLI_UNKNOWN, NULL } };
	lzma_stream s = LZMA_STREAM_INIT;
	struct buf out = { 0 };
	size_t cap = in->n + in->n / 16 + 4096;
	lzma_ret r;

	ck_assert_int_eq(lzma_raw_encoder(&s, f), LZMA_OK);
	out.p = malloc(cap);
	ck_assert(out.p);
	s.next_in = in->p;
	s.avail_in = in->n;
	s.next_out = out.p;
	s.avail_out = cap;
	r = lzma_code(&s, LZMA_FINISH);
	ck_assert_int_eq(r, LZMA_STREAM_END);
	out.n = cap - s.avail_out;
	lzma_end(&s);
	return out;
}

/*
 * liblzma's raw decoder on in[0..n) with at most max bytes out.  Returns 1
 * if it reached the end marker, 0 if it stopped at max, -1 on an error or
 * input that ends before the end marker; *out holds what it decoded.
 */
static int ref_decode(const uint8_t *in, size_t n, uint32_t dict, size_t max, struct buf *out)
{
	lzma_options_lzma opt = { .dict_size = dict };
	lzma_filter f[2] = { { LZMA_FILTER_LZMA2, &opt }, { LZMA_VLI_UNKNOWN, NULL } };
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_ret r;

	ck_assert_int_eq(lzma_raw_decoder(&s, f), LZMA_OK);
	out->p = malloc(max + 1);
	ck_assert(out->p);
	s.next_in = in;
	s.avail_in = n;
	s.next_out = out->p;
	s.avail_out = max + 1;
	r = lzma_code(&s, LZMA_FINISH);
	out->n = max + 1 - s.avail_out;
	lzma_end(&s);
	if (r == LZMA_STREAM_END && out->n <= max)
		return 1;
	if (out->n > max) {
		out->n = max;
		return 0;
	}
	return -1;
}

/* ---- ours ---- */

struct mem {
	const uint8_t *p;
	size_t n;
	unsigned pulls;
};

static ssize_t mem_pull(void *opaque, uint64_t coff, void *b, size_t len)
{
	struct mem *m = opaque;

	m->pulls++;
	if (coff >= m->n)
		return 0;
	if (len > m->n - coff)
		len = m->n - coff;
	memcpy(b, m->p + coff, len);
	return (ssize_t)len;
}

/* Serialised checkpoints of every chunk boundary, and the controls seen. */
struct ckset {
	size_t n;
	struct buf blob[4096];
	uint64_t uoff[4096];
	uint8_t control[4096];
	size_t size_sum;
};

static int collect(void *opaque, struct lzma2dec *d, const struct lzma2dec_chunk *c)
{
	struct ckset *cs = opaque;
	struct lzma2dec_ckpt ck;
	struct buf *b;

	ck_assert_uint_lt(cs->n, 4096);
	ck_assert_int_eq(lzma2dec_ckpt_export(d, &ck), 0);
	ck_assert_uint_eq(ck.uoff, c->uoff);
	ck_assert_uint_eq(ck.coff, c->coff);
	ck_assert_uint_eq(ck.control, c->control);
	ck_assert_uint_eq(lzma2dec_tell(d), c->uoff);
	b = &cs->blob[cs->n];
	b->n = lzma2dec_ckpt_size(&ck);
	b->p = malloc(b->n);
	ck_assert(b->p);
	ck_assert_int_eq(lzma2dec_ckpt_save(&ck, b->p, b->n), (ssize_t)b->n);
	ck_assert_int_eq(lzma2dec_ckpt_save(&ck, b->p, b->n - 1), -ENOSPC);
	cs->uoff[cs->n] = c->uoff;
	cs->control[cs->n] = c->control;
	cs->size_sum += b->n;
	cs->n++;
	lzma2dec_ckpt_release(&ck);
	return 0;
}

static void ckset_free(struct ckset *cs)
{
	for (size_t i = 0; i < cs->n; i++)
		free(cs->blob[i].p);
	free(cs);
}

/*
 * Reads d to its end or first error into out (at most max bytes), in reads
 * of odd sizes.  Returns 1 at the end marker, 0 at max, or the error.
 */
static int our_read(struct lzma2dec *d, size_t max, struct buf *out)
{
	static const size_t sizes[] = { 1, 4093, 7, 65536, 300000, 31, 2u << 20, 127 };
	struct zerr err = { 0 };
	size_t k = 0;
	ssize_t n;

	out->p = malloc(max + 1);
	ck_assert(out->p);
	out->n = 0;
	for (;;) {
		size_t want = sizes[k++ % 8];

		if (want > max + 1 - out->n)
			want = max + 1 - out->n;
		if (want == 0)
			return 0;
		n = lzma2dec_read(d, out->p + out->n, want, &err);
		if (n < 0) {
			ck_assert_msg(err.msg[0], "error %zd without a message", n);
			ck_assert_int_eq(lzma2dec_read(d, out->p, 1, NULL), n); /* stays failed */
			return (int)n;
		}
		if (n == 0)
			return 1;
		ck_assert_uint_le((size_t)n, want);
		out->n += (size_t)n;
		if (out->n > max) {
			out->n = max;
			return 0;
		}
		if ((size_t)n < want) /* only the end marker makes a read short */
			ck_assert_int_eq(lzma2dec_read(d, out->p, 1, NULL), 0);
	}
}

/* Our decoder on in[0..n), as ref_decode; *used (may be NULL): the compressed bytes it took. */
static int our_decode(const uint8_t *in, size_t n, uint32_t dict, size_t max, struct ckset *cs,
		      struct buf *out, uint64_t *used)
{
	struct mem m = { in, n, 0 };
	struct lzma2dec *d;
	int ret;

	ck_assert_int_eq(lzma2dec_new(dict, UINT64_MAX, mem_pull, &m, &d), 0);
	if (cs)
		lzma2dec_set_chunk_cb(d, collect, cs);
	ret = our_read(d, max, out);
	if (used)
		*used = lzma2dec_ctell(d);
	lzma2dec_free(d);
	return ret;
}

/* Expected checkpoint size at a chunk with control c, lc + lp = lclp, after dpos bytes. */
static size_t expect_size(uint8_t c, unsigned lclp, uint64_t dpos, uint32_t dict, int has_props)
{
	uint32_t w = ((dict < 4096 ? 4096 : dict) + 15) & ~15u;
	size_t s = 64;

	if (c == 0x01 || c >= 0xE0)
		return s;
	s += dpos < w ? dpos : w;
	if ((c == 0x02 && has_props) || (c >= 0x80 && c < 0xA0))
		s += 2 * (1846 + (0x300u << lclp));
	return s;
}

/*
 * The whole check for one valid stream of data: both decoders give data;
 * then every checkpoint, loaded back, resumes to the same rest.
 */
static void check_stream(const struct buf *comp, uint32_t dict, const struct buf *data,
			 unsigned lclp)
{
	struct ckset *cs = calloc(1, sizeof(*cs));
	struct buf ref, ours;
	uint64_t used;

	ck_assert(cs);
	ck_assert_int_eq(ref_decode(comp->p, comp->n, dict, data->n, &ref), 1);
	ck_assert_uint_eq(ref.n, data->n);
	ck_assert(data->n == 0 || memcmp(ref.p, data->p, data->n) == 0);
	ck_assert_int_eq(our_decode(comp->p, comp->n, dict, data->n, cs, &ours, &used), 1);
	ck_assert_uint_eq(used, comp->n);
	ck_assert_uint_eq(ours.n, data->n);
	ck_assert_msg(data->n == 0 || memcmp(ours.p, data->p, data->n) == 0,
		      "output differs from liblzma's");
	free(ours.p);
	ck_assert_uint_ge(cs->n, data->n > 0);

	for (size_t i = 0; i < cs->n; i++) {
		struct lzma2dec_ckpt ck;
		struct mem m = { comp->p, comp->n, 0 };
		struct lzma2dec *d;
		struct buf rest;
		uint64_t dpos;

		ck_assert_int_eq(lzma2dec_ckpt_load(cs->blob[i].p, cs->blob[i].n, &ck), 0);
		ck_assert_uint_eq(ck.uoff, cs->uoff[i]);
		dpos = ck.dpos;
		ck_assert_uint_eq(cs->blob[i].n,
				  expect_size(cs->control[i], lclp, dpos, dict, ck.has_props));
		ck_assert_int_eq(lzma2dec_resume(&ck, dict, data->n, mem_pull, &m, &d), 0);
		lzma2dec_ckpt_release(&ck);
		ck_assert_uint_eq(lzma2dec_tell(d), cs->uoff[i]);
		ck_assert_int_eq(our_read(d, data->n - cs->uoff[i], &rest), 1);
		ck_assert_uint_eq(rest.n, data->n - cs->uoff[i]);
		ck_assert_msg(memcmp(rest.p, data->p + cs->uoff[i], rest.n) == 0,
			      "resumed at chunk %zu (uoff %llu, control 0x%02x): output differs", i,
			      (unsigned long long)cs->uoff[i], cs->control[i]);
		ck_assert_uint_eq(lzma2dec_ctell(d), comp->n);
		free(rest.p);
		lzma2dec_free(d);
	}
	free(ref.p);
	ckset_free(cs);
}

static void check_options(const struct buf *data, const lzma_options_lzma *opt)
{
	struct buf comp = encode(data, opt);

	check_stream(&comp, opt->dict_size, data, opt->lc + opt->lp);
	free(comp.p);
}

/* ---- tests ---- */

START_TEST(test_presets)
{
	static const uint32_t presets[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9 | LZMA_PRESET_EXTREME };
	struct buf data = mixed(100000, 11);

	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		lzma_options_lzma opt;

		ck_assert(!lzma_lzma_preset(&opt, presets[i]));
		check_options(&data, &opt);
	}
	free(data.p);
}
END_TEST

/* 4 KiB wraps the window thousands of times; 64 MiB never fills it. */
START_TEST(test_dict_sizes)
{
	static const uint32_t dicts[] = { 4096, 4096 + 1000, 65536, 1u << 20, 64u << 20 };
	struct buf data = mixed(150000, 12);

	for (size_t i = 0; i < sizeof(dicts) / sizeof(dicts[0]); i++) {
		lzma_options_lzma opt;

		ck_assert(!lzma_lzma_preset(&opt, 1));
		opt.dict_size = dicts[i];
		check_options(&data, &opt);
	}
	free(data.p);
}
END_TEST

START_TEST(test_lc_lp_pb)
{
	static const uint32_t v[][3] = { { 0, 0, 0 }, { 4, 0, 2 }, { 0, 4, 4 }, { 1, 3, 0 },
					 { 3, 1, 1 }, { 2, 2, 3 }, { 3, 0, 4 }, { 0, 0, 4 } };
	struct buf data = mixed(60000, 13);

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		lzma_options_lzma opt;

		ck_assert(!lzma_lzma_preset(&opt, 6));
		opt.dict_size = 1u << 20;
		opt.lc = v[i][0];
		opt.lp = v[i][1];
		opt.pb = v[i][2];
		check_options(&data, &opt);
	}
	free(data.p);
}
END_TEST

/*
 * The encoder picks the control bytes; these inputs make it use every kind:
 * 0x01 (random first), 0xC0 (LZMA after that), 0xE0, 0x80, 0x02 and 0xA0
 * (LZMA after an uncompressed chunk), and a second stream appended gives
 * dictionary resets in the middle.  The test checks they all appeared.
 */
START_TEST(test_every_control)
{
	struct buf a = { 0 }, b = { 0 }, comp, ca, cb, both = { 0 };
	struct ckset *cs = calloc(1, sizeof(*cs));
	struct buf out;
	lzma_options_lzma opt;
	int kinds = 0;

	ck_assert(cs);
	ck_assert(!lzma_lzma_preset(&opt, 6));
	opt.dict_size = 1u << 20;
	add_random(&a, 300000, 21); /* 0x01, 0x02 */
	add_text(&a, 300000, 22);   /* 0xC0, 0x80 */
	add_random(&a, 300000, 23); /* 0x02 */
	add_text(&a, 200000, 24);   /* 0xA0 */
	add_text(&b, 300000, 25);   /* 0xE0 */
	ca = encode(&a, &opt);
	cb = encode(&b, &opt);
	/* a's stream without its end marker, then b's: a mid-stream dictionary reset */
	comp.n = ca.n - 1 + cb.n;
	comp.p = malloc(comp.n);
	ck_assert(comp.p);
	memcpy(comp.p, ca.p, ca.n - 1);
	memcpy(comp.p + ca.n - 1, cb.p, cb.n);
	both.n = a.n + b.n;
	both.p = malloc(both.n);
	ck_assert(both.p);
	memcpy(both.p, a.p, a.n);
	memcpy(both.p + a.n, b.p, b.n);
	check_stream(&comp, opt.dict_size, &both, 3);

	ck_assert_int_eq(our_decode(comp.p, comp.n, opt.dict_size, both.n, cs, &out, NULL), 1);
	for (size_t i = 0; i < cs->n; i++) {
		uint8_t c = cs->control[i];

		kinds |= c == 0x01 ? 1 : c == 0x02 ? 2 : 4 << ((c >> 5) & 3);
	}
	ck_assert_msg(kinds == 63, "control kinds seen: 0x%x, not all six", kinds);
	free(out.p);
	ckset_free(cs);
	free(a.p);
	free(b.p);
	free(ca.p);
	free(cb.p);
	free(comp.p);
	free(both.p);
}
END_TEST

/* Empty data is the end marker alone; one byte is one chunk. */
START_TEST(test_tiny)
{
	struct buf data = { 0 };
	lzma_options_lzma opt;

	ck_assert(!lzma_lzma_preset(&opt, 6));
	opt.dict_size = 4096;
	check_options(&data, &opt);
	add_text(&data, 1, 5);
	check_options(&data, &opt);
	free(data.p);
}
END_TEST

/* The expected size bounds the output: one byte less fails, before decoding the chunk. */
START_TEST(test_ulimit)
{
	struct buf data = mixed(20000, 31), comp, out;
	lzma_options_lzma opt;
	struct mem m;
	struct lzma2dec *d;
	struct zerr err = { 0 };
	ssize_t n;

	ck_assert(!lzma_lzma_preset(&opt, 6));
	comp = encode(&data, &opt);
	m = (struct mem){ comp.p, comp.n, 0 };
	ck_assert_int_eq(lzma2dec_new(opt.dict_size, data.n - 1, mem_pull, &m, &d), 0);
	out.p = malloc(data.n);
	ck_assert(out.p);
	out.n = 0;
	while ((n = lzma2dec_read(d, out.p + out.n, data.n - out.n, &err)) > 0)
		out.n += (size_t)n;
	ck_assert_int_eq(n, -EIO);
	ck_assert_msg(strstr(err.msg, "expected uncompressed size"), "%s", err.msg);
	ck_assert(memcmp(out.p, data.p, out.n) == 0);
	lzma2dec_free(d);
	m.pulls = 0;
	ck_assert_int_eq(lzma2dec_new(opt.dict_size, data.n, mem_pull, &m, &d), 0);
	ck_assert_int_eq(lzma2dec_read(d, out.p, data.n, &err), (ssize_t)data.n);
	ck_assert_int_eq(lzma2dec_read(d, out.p, 1, &err), 0);
	lzma2dec_free(d);
	free(out.p);
	free(comp.p);
	free(data.p);
}
END_TEST

/* Every truncation of a small multi-chunk stream: both fail, ours with -EIO. */
START_TEST(test_truncated)
{
	struct buf data = { 0 }, comp;
	lzma_options_lzma opt;

	ck_assert(!lzma_lzma_preset(&opt, 6));
	opt.dict_size = 65536;
	add_text(&data, 3000, 41);
	add_random(&data, 1500, 42);
	add_text(&data, 2000, 43);
	comp = encode(&data, &opt);
	for (size_t cut = 0; cut < comp.n; cut++) {
		struct buf ref, ours;
		int r = ref_decode(comp.p, cut, opt.dict_size, data.n, &ref);
		int o = our_decode(comp.p, cut, opt.dict_size, data.n, NULL, &ours, NULL);

		ck_assert_int_eq(r, -1);
		ck_assert_msg(o == -EIO, "cut at %zu of %zu: returned %d", cut, comp.n, o);
		ck_assert(memcmp(ours.p, data.p, ours.n) == 0);
		free(ref.p);
		free(ours.p);
	}
	free(comp.p);
	free(data.p);
}
END_TEST

/*
 * Corrupt streams: one bit flipped at every byte (and a few bytes set to
 * each of the control values).  Where liblzma decodes to the end, ours
 * must give the same bytes; where liblzma fails, ours must fail too; and
 * up to where either stops, the bytes must agree.
 */
static void check_corrupt(const uint8_t *in, size_t n, uint32_t dict, const char *what)
{
	struct buf ref, ours;
	int r = ref_decode(in, n, dict, 1u << 20, &ref);
	int o = our_decode(in, n, dict, 1u << 20, NULL, &ours, NULL);
	size_t common = ref.n < ours.n ? ref.n : ours.n;

	ck_assert_msg(memcmp(ref.p, ours.p, common) == 0, "%s: bytes differ", what);
	if (r == 1)
		ck_assert_msg(o == 1 && ours.n == ref.n,
			      "%s: liblzma decodes %zu bytes, ours %d/%zu", what, ref.n, o, ours.n);
	else if (r == -1)
		ck_assert_msg(o < 0, "%s: liblzma fails, ours returned %d after %zu bytes", what, o,
			      ours.n);
	if (o < 0)
		ck_assert_msg(o == -EIO, "%s: error %d", what, o);
	free(ref.p);
	free(ours.p);
}

START_TEST(test_bitflips)
{
	struct buf data = { 0 }, comp;
	lzma_options_lzma opt;
	uint8_t *bad;
	char what[64];

	ck_assert(!lzma_lzma_preset(&opt, 6));
	opt.dict_size = 4096;
	add_text(&data, 6000, 51);
	add_random(&data, 800, 52);
	add_text(&data, 3000, 53);
	comp = encode(&data, &opt);
	bad = malloc(comp.n);
	ck_assert(bad);
	for (size_t i = 0; i < comp.n; i++) {
		for (int bit = 0; bit < 8; bit += (i < 64 ? 1 : 3)) {
			memcpy(bad, comp.p, comp.n);
			bad[i] ^= (uint8_t)(1u << bit);
			snprintf(what, sizeof(what), "byte %zu bit %d", i, bit);
			check_corrupt(bad, comp.n, opt.dict_size, what);
		}
	}
	/* the controls at the chunk starts, replaced by every value */
	for (unsigned v = 0; v < 256; v++) {
		memcpy(bad, comp.p, comp.n);
		bad[0] = (uint8_t)v;
		snprintf(what, sizeof(what), "first control 0x%02x", v);
		check_corrupt(bad, comp.n, opt.dict_size, what);
	}
	free(bad);
	free(comp.p);
	free(data.p);
}
END_TEST

/* Hand-made streams for the rules liblzma enforces between chunks. */
START_TEST(test_chunk_rules)
{
	/* 0x01 "ab", then 0x80 (no props after a dictionary reset) */
	static const uint8_t noprops[] = { 0x01, 0x00, 0x01, 'a',  'b',	 0x80, 0x00, 0x00,
					   0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 };
	/* 0x02 first: no dictionary reset */
	static const uint8_t noreset[] = { 0x02, 0x00, 0x00, 'a', 0x00 };
	/* reserved control */
	static const uint8_t reserved[] = { 0x03, 0x00, 0x00, 'a', 0x00 };
	/* 0x01 "ab", 0x02 "c", end: fine */
	static const uint8_t copies[] = { 0x01, 0x00, 0x01, 'a', 'b', 0x02, 0x00, 0x00, 'c', 0x00 };
	/* bad props (lc=4, lp=1) in an 0xE0 chunk */
	static const uint8_t badprops[] = { 0xE0, 0x00, 0x00, 0x00, 0x05, 4 + 9 * 1,
					    0x00, 0x00, 0x00, 0x00, 0x00, 0x00 };

	check_corrupt(noprops, sizeof(noprops), 4096, "noprops");
	check_corrupt(noreset, sizeof(noreset), 4096, "noreset");
	check_corrupt(reserved, sizeof(reserved), 4096, "reserved");
	check_corrupt(copies, sizeof(copies), 4096, "copies");
	check_corrupt(badprops, sizeof(badprops), 4096, "badprops");
	{
		struct buf out;

		ck_assert_int_eq(our_decode(copies, sizeof(copies), 4096, 100, NULL, &out, NULL),
				 1);
		ck_assert_uint_eq(out.n, 3);
		ck_assert(memcmp(out.p, "abc", 3) == 0);
		free(out.p);
		ck_assert_int_eq(our_decode(noprops, sizeof(noprops), 4096, 100, NULL, &out, NULL),
				 -EIO);
		free(out.p);
	}
}
END_TEST

/* The callback's refusal stops the decoder; export works only inside it. */
static int refuse(void *opaque, struct lzma2dec *d, const struct lzma2dec_chunk *c)
{
	(void)d;
	return c->uoff > 0 ? *(int *)opaque : 0;
}

START_TEST(test_callback_and_export)
{
	struct buf data = mixed(30000, 61), comp, out;
	lzma_options_lzma opt;
	struct lzma2dec_ckpt ck;
	struct lzma2dec *d;
	struct mem m;
	int stop = -ECANCELED;

	ck_assert(!lzma_lzma_preset(&opt, 0));
	comp = encode(&data, &opt);
	m = (struct mem){ comp.p, comp.n, 0 };
	ck_assert_int_eq(lzma2dec_new(opt.dict_size, UINT64_MAX, mem_pull, &m, &d), 0);
	ck_assert_int_eq(lzma2dec_ckpt_export(d, &ck), -EINVAL);
	ck_assert_ptr_null(ck.probs);
	lzma2dec_set_chunk_cb(d, refuse, &stop);
	ck_assert_int_eq(our_read(d, data.n, &out), -ECANCELED);
	ck_assert(memcmp(out.p, data.p, out.n) == 0);
	ck_assert_uint_gt(out.n, 0);
	free(out.p);
	lzma2dec_free(d);
	lzma2dec_free(NULL);
	ck_assert_int_eq(lzma2dec_new(LZMA2DEC_DICT_MAX + 1, 1, mem_pull, &m, &d), -EINVAL);
	ck_assert_ptr_null(d);
	ck_assert_int_eq(lzma2dec_new(4096, 1, NULL, &m, &d), -EINVAL);
	free(comp.p);
	free(data.p);
}
END_TEST

/*
 * A serialised checkpoint with any byte changed: load refuses it, or the
 * resumed decoder fails cleanly, or (a changed probability or window byte
 * is still a valid checkpoint) it decodes to whatever it decodes, within
 * the limit.  A checkpoint resumed against other data fails with -EIO.
 */
START_TEST(test_ckpt_damage)
{
	struct buf data = mixed(40000, 71), comp, other;
	struct ckset *cs = calloc(1, sizeof(*cs));
	lzma_options_lzma opt;
	struct buf out;
	uint8_t *b;
	size_t pick = 0;

	ck_assert(cs);
	ck_assert(!lzma_lzma_preset(&opt, 3));
	opt.dict_size = 65536;
	comp = encode(&data, &opt);
	ck_assert_int_eq(our_decode(comp.p, comp.n, opt.dict_size, data.n, cs, &out, NULL), 1);
	free(out.p);
	for (size_t i = 0; i < cs->n; i++)
		if (cs->control[i] >= 0x80 && cs->control[i] < 0xA0 && cs->uoff[i])
			pick = i; /* the largest kind: props, state, probabilities, window */
	ck_assert_uint_gt(pick, 0);
	b = malloc(cs->blob[pick].n);
	ck_assert(b);
	for (size_t i = 0; i < cs->blob[pick].n; i += (i < 64 ? 1 : 97)) {
		for (unsigned v = 1; v < 256; v <<= 1) {
			struct lzma2dec_ckpt ck;
			struct mem m = { comp.p, comp.n, 0 };
			struct lzma2dec *d;
			int ret;

			memcpy(b, cs->blob[pick].p, cs->blob[pick].n);
			b[i] ^= (uint8_t)v;
			ret = lzma2dec_ckpt_load(b, cs->blob[pick].n, &ck);
			if (ret < 0) {
				ck_assert_int_eq(ret, -EINVAL);
				ck_assert_ptr_null(ck.probs);
				continue;
			}
			ret = lzma2dec_resume(&ck, opt.dict_size, data.n, mem_pull, &m, &d);
			lzma2dec_ckpt_release(&ck);
			if (ret < 0) {
				ck_assert_int_eq(ret, -EINVAL);
				continue;
			}
			ret = our_read(d, data.n, &out);
			ck_assert(ret == 1 || ret == -EIO);
			free(out.p);
			lzma2dec_free(d);
		}
	}
	for (size_t len = 0; len < cs->blob[pick].n; len += 61) {
		struct lzma2dec_ckpt ck;

		ck_assert_int_eq(lzma2dec_ckpt_load(cs->blob[pick].p, len, &ck), -EINVAL);
	}
	/* resumed against other data, whose chunk there has another control byte */
	other = mixed(40000, 72);
	{
		struct buf oc = encode(&other, &opt);
		struct lzma2dec_ckpt ck;
		struct mem m = { oc.p, oc.n, 0 };
		struct lzma2dec *d;
		struct zerr err = { 0 };
		uint8_t one;

		ck_assert_int_eq(lzma2dec_ckpt_load(cs->blob[pick].p, cs->blob[pick].n, &ck), 0);
		ck.coff = 0; /* other's first chunk is 0xE0 */
		ck_assert_int_eq(
			lzma2dec_resume(&ck, opt.dict_size * 2, UINT64_MAX, mem_pull, &m, &d),
			-EINVAL);
		ck_assert_ptr_null(d);
		ck_assert_int_eq(lzma2dec_resume(&ck, opt.dict_size, UINT64_MAX, mem_pull, &m, &d),
				 0);
		lzma2dec_ckpt_release(&ck);
		ck_assert_int_eq(lzma2dec_read(d, &one, 1, &err), -EIO);
		ck_assert_msg(strstr(err.msg, "checkpoint"), "%s", err.msg);
		lzma2dec_free(d);
		free(oc.p);
	}
	free(other.p);
	free(b);
	free(comp.p);
	free(data.p);
	ckset_free(cs);
}
END_TEST

/*
 * lzma2dec_resume_in works in the caller's window, whose bytes past the
 * checkpoint's window hold anything, and leaves it to the caller: after
 * lzma2dec_free the caller still writes and frees it (ASan: no double
 * free).  It refuses a missing window or a checkpoint with its own.
 */
START_TEST(test_resume_in_lent_window)
{
	struct buf data = mixed(40000, 73), comp, out;
	struct ckset *cs = calloc(1, sizeof(*cs));
	lzma_options_lzma opt;
	size_t pick = 0;
	uint32_t wsize;

	ck_assert(cs);
	ck_assert_uint_eq(lzma2dec_window_size(100), 4096);
	ck_assert_uint_eq(lzma2dec_window_size(65537), 65552);
	ck_assert(!lzma_lzma_preset(&opt, 3));
	opt.dict_size = 65536;
	wsize = lzma2dec_window_size(opt.dict_size);
	comp = encode(&data, &opt);
	ck_assert_int_eq(our_decode(comp.p, comp.n, opt.dict_size, data.n, cs, &out, NULL), 1);
	free(out.p);
	for (size_t i = 0; i < cs->n; i++)
		if (cs->control[i] >= 0x80 && cs->control[i] < 0xA0 && cs->uoff[i] > wsize)
			pick = i; /* a full window, props, state, probabilities */
	ck_assert_uint_gt(pick, 0);
	for (int round = 0; round < 2; round++) {
		struct lzma2dec_ckpt ck;
		struct mem m = { comp.p, comp.n, 0 };
		struct lzma2dec *d = (void *)1;
		uint8_t *win = malloc(wsize);
		int ret;

		ck_assert(win);
		memset(win, 0xA5, wsize);
		ck_assert_int_eq(lzma2dec_ckpt_load(cs->blob[pick].p, cs->blob[pick].n, &ck), 0);
		ck_assert_uint_eq(ck.wlen, wsize);
		ck_assert_int_eq(
			lzma2dec_resume_in(&ck, opt.dict_size, data.n, mem_pull, &m, NULL, &d),
			-EINVAL);
		ck_assert_ptr_null(d);
		ck_assert_int_eq(
			lzma2dec_resume_in(&ck, opt.dict_size, data.n, mem_pull, &m, win, &d),
			-EINVAL); /* ck.window is set */
		/* the window's bytes lent, and in round 1 only the newest half of them */
		memcpy(win + round * wsize / 2, ck.window + round * wsize / 2,
		       wsize - round * wsize / 2);
		free(ck.window);
		ck.window = NULL;
		ck_assert_int_eq(
			lzma2dec_resume_in(&ck, opt.dict_size * 2, data.n, mem_pull, &m, win, &d),
			-EINVAL);
		ck_assert_int_eq(
			lzma2dec_resume_in(&ck, opt.dict_size, data.n, mem_pull, &m, win, &d), 0);
		lzma2dec_ckpt_release(&ck);
		ck_assert_uint_ge(lzma2dec_memusage(d), wsize);
		ret = our_read(d, data.n - cs->uoff[pick], &out);
		if (round == 0) {
			ck_assert_int_eq(ret, 1);
			ck_assert_uint_eq(out.n, data.n - cs->uoff[pick]);
			ck_assert_msg(memcmp(out.p, data.p + cs->uoff[pick], out.n) == 0,
				      "resumed in a lent window: output differs");
		} else {
			ck_assert(ret == 1 || ret == -EIO); /* wrong bytes, maybe, inside win */
		}
		free(out.p);
		lzma2dec_free(d);
		memset(win, 0, wsize); /* still the caller's */
		free(win);
	}
	free(comp.p);
	free(data.p);
	ckset_free(cs);
}
END_TEST

/* ---- the corpus: Blocks whose only filter is LZMA2 ---- */

/*
 * Finds the first Block of xz file f and, if LZMA2 is its only filter,
 * sets *data to the offset of its compressed data and *dict.  Returns 1 if
 * so, 0 if the file is not such a file.
 */
static int lzma2_block(const struct buf *f, size_t *data, uint32_t *dict)
{
	lzma_stream_flags sf;
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	lzma_block blk = { 0 };
	int ok;

	if (f->n < 12 + 8 + 12 || lzma_stream_header_decode(&sf, f->p) != LZMA_OK || f->p[12] == 0)
		return 0;
	blk.version = 1;
	blk.check = sf.check;
	blk.filters = filters;
	blk.header_size = lzma_block_header_size_decode(f->p[12]);
	if (12 + blk.header_size > f->n ||
	    lzma_block_header_decode(&blk, NULL, f->p + 12) != LZMA_OK)
		return 0;
	ok = filters[0].id == LZMA_FILTER_LZMA2 && filters[1].id == LZMA_VLI_UNKNOWN;
	if (ok)
		*dict = ((lzma_options_lzma *)filters[0].options)->dict_size;
	for (size_t i = 0; filters[i].id != LZMA_VLI_UNKNOWN; i++)
		free(filters[i].options);
	*data = 12 + blk.header_size;
	return ok;
}

/*
 * One corpus file, if its first Block is LZMA2 alone: the Block's data
 * against liblzma's raw decoder (check_corrupt), and, for a good file,
 * against the whole file's output, of which it must be a prefix (all of
 * it when the file has one Block).  Returns 1 if it was such a file.
 */
static int check_corpus_file(const char *name)
{
	char path[PATH_MAX + 64];
	struct buf f, whole, ours;
	size_t off, inpos = 0, outpos = 0;
	uint64_t memlimit = UINT64_MAX;
	uint32_t dict;

	snprintf(path, sizeof(path), "%s/%s", corpus, name);
	f.p = zmtest_slurp(path, &f.n);
	if (!lzma2_block(&f, &off, &dict)) {
		free(f.p);
		return 0;
	}
	check_corrupt(f.p + off, f.n - off, dict, name);
	if (strncmp(name, "good-", 5) == 0) {
		whole.p = malloc(16u << 20);
		ck_assert(whole.p);
		ck_assert_int_eq(lzma_stream_buffer_decode(&memlimit, 0, NULL, f.p, &inpos, f.n,
							   whole.p, &outpos, 16u << 20),
				 LZMA_OK);
		ck_assert_int_eq(
			our_decode(f.p + off, f.n - off, dict, 16u << 20, NULL, &ours, NULL), 1);
		ck_assert_uint_le(ours.n, outpos);
		ck_assert_msg(ours.n == 0 || memcmp(ours.p, whole.p, ours.n) == 0, "%s differs",
			      name);
		if (strcmp(name, "good-2-lzma2.xz") != 0 &&
		    strcmp(name, "good-1-block_header-2.xz"))
			ck_assert_msg(ours.n == outpos, "%s: %zu of %zu bytes", name, ours.n,
				      outpos);
		free(ours.p);
		free(whole.p);
	}
	free(f.p);
	return 1;
}

/* Every .xz of the corpus whose first Block is LZMA2 alone, and these among them. */
START_TEST(test_corpus)
{
	static const char *names[] = {
		"good-1-lzma2-1.xz", "good-1-lzma2-2.xz", "good-1-lzma2-3.xz", "good-1-lzma2-4.xz",
		"good-1-lzma2-5.xz", "good-2-lzma2.xz",	  "bad-1-lzma2-1.xz",  "bad-1-lzma2-2.xz",
		"bad-1-lzma2-3.xz",  "bad-1-lzma2-4.xz",  "bad-1-lzma2-5.xz",  "bad-1-lzma2-6.xz",
		"bad-1-lzma2-7.xz",  "bad-1-lzma2-8.xz",  "bad-1-lzma2-9.xz",  "bad-1-lzma2-10.xz",
		"bad-1-lzma2-11.xz"
	};
	DIR *dir = opendir(corpus);
	struct dirent *e;
	int n = 0;

	ck_assert_msg(dir, "%s: %s", corpus, strerror(errno));
	while ((e = readdir(dir))) {
		size_t len = strlen(e->d_name);

		if (len > 3 && strcmp(e->d_name + len - 3, ".xz") == 0)
			n += check_corpus_file(e->d_name);
	}
	closedir(dir);
	ck_assert_int_ge(n, (int)(sizeof(names) / sizeof(names[0])));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(check_corpus_file(names[i]), "%s: no LZMA2-only Block", names[i]);
	fprintf(stderr, "check_lzma2dec: corpus: %d files with an LZMA2-only Block\n", n);
}
END_TEST

static Suite *lzma2dec_suite(int have_corpus, int *skipped)
{
	const struct zmtest_case t[] = {
		{ "presets", test_presets, 0 },
		{ "dict_sizes", test_dict_sizes, 0 },
		{ "lc_lp_pb", test_lc_lp_pb, 0 },
		{ "every_control", test_every_control, 0 },
		{ "tiny", test_tiny, 0 },
		{ "ulimit", test_ulimit, 0 },
		{ "truncated", test_truncated, 0 },
		{ "bitflips", test_bitflips, 0 },
		{ "chunk_rules", test_chunk_rules, 0 },
		{ "callback_and_export", test_callback_and_export, 0 },
		{ "ckpt_damage", test_ckpt_damage, 0 },
		{ "resume_in_lent_window", test_resume_in_lent_window, 0 },
		{ "corpus", test_corpus, 1 },
	};

	return zmtest_suite("check_lzma2dec", "lzma2dec", t, sizeof(t) / sizeof(t[0]), 600,
			    have_corpus, skipped);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("ZMOUNT_CORPUS");
	char probe[PATH_MAX + 32];
	SRunner *sr;
	int failed, have_corpus, skipped;

#ifdef ZMOUNT_CORPUS_DEFAULT
	if (!dir)
		dir = ZMOUNT_CORPUS_DEFAULT;
#endif
	if ((size_t)snprintf(corpus, sizeof(corpus), "%s/xz-utils", dir ? dir : "") >=
	    sizeof(corpus)) {
		fprintf(stderr, "check_lzma2dec: path too long\n");
		return 1;
	}
	snprintf(probe, sizeof(probe), "%s/good-1-lzma2-1.xz", corpus);
	have_corpus = access(probe, R_OK) == 0;
	if (!have_corpus)
		fprintf(stderr, "check_lzma2dec: SKIP: corpus not found (%s: %s)\n", probe,
			strerror(errno));
	sr = srunner_create(lzma2dec_suite(have_corpus, &skipped));
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed)
		return 1;
	if (skipped) {
		fprintf(stderr, "check_lzma2dec: SKIP: %d tests did not run: no corpus\n", skipped);
		return 77;
	}
	return 0;
}
