/* SPDX-License-Identifier: MIT */
/*
 * Tests for codec/zstddec.c.  Fixtures are made at start-up with the zstd
 * and pzstd tools in a mkdtemp directory, each with its expected output
 * from `zstd -dc` (the oracle); a missing tool fails the tests that need
 * the fixtures.  Damaged files are made here by flipping bytes at offsets
 * the walk reports, so each damage lands where the test says it does.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zmtest.h"
#include "zstddec.h"

#define ORIG_SIZE  (4u << 20)
#define SMALL_SIZE 200000u
#define WMAX	   (64ull << 20) /* the window limit the tests pass, unless stated */

static char tmpdir[1024];
static int gen_ok; /* all generated fixtures were made */

static void tpath(char *buf, size_t len, const char *name)
{
	zmtest_join(buf, len, tmpdir, name);
}

static void need_generated(void)
{
	ck_assert_msg(gen_ok, "generated fixtures are missing (are zstd and pzstd installed?)");
}

/* name in the fixture directory, read whole (zmtest_slurp). */
static uint8_t *slurp(const char *name, size_t *len)
{
	char path[PATH_MAX];

	tpath(path, sizeof(path), name);
	return zmtest_slurp(path, len);
}

static void spew(const char *name, const void *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	tpath(path, sizeof(path), name);
	f = fopen(path, "w");
	ck_assert_msg(f, "cannot create %s", path);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* Opens name in tmpdir and walks it; returns zstddec_index_read's result. */
static int open_index(const char *name, uint64_t wmax, struct zsrc **src,
		      struct zstddec_index **idx, struct zerr *e)
{
	char path[PATH_MAX];
	struct stat st;

	tpath(path, sizeof(path), name);
	*src = zmtest_src_open(path);
	ck_assert_int_eq(zsrc_stat(*src, &st), 0);
	memset(e, 0, sizeof(*e));
	*idx = (struct zstddec_index *)idx; /* must be overwritten */
	return zstddec_index_read(*src, (uint64_t)st.st_size, wmax, idx, e);
}

/*
 * Decodes frame f whole into buf (cap bytes) in reads of `chunk` bytes.
 * Returns the byte count, or the first error with *e set.
 */
static ssize_t decode_frame(struct zsrc *src, const struct zstddec_frame *f, uint8_t *buf,
			    size_t cap, size_t chunk, struct zerr *e)
{
	struct zstddec_dec *d;
	size_t got = 0;
	ssize_t n;
	int ret;

	ret = zstddec_dec_open(f, &d, e);
	if (ret)
		return ret;
	for (;;) {
		size_t want = chunk < cap - got ? chunk : cap - got;

		n = zstddec_dec_read(d, src, buf + got, want, e);
		if (n < 0)
			break;
		if (n == 0)
			break;
		ck_assert_uint_le((size_t)n, want);
		if (f->usize != ZSTDDEC_UNKNOWN)
			ck_assert_uint_eq((size_t)n, want < f->usize - got ? want : f->usize - got);
		got += (size_t)n;
		ck_assert_uint_eq(zstddec_dec_tell(d), got);
		ck_assert_msg(got < cap || f->usize == got, "frame larger than the buffer");
		if (got == cap)
			break;
	}
	zstddec_dec_close(d);
	return n < 0 ? n : (ssize_t)got;
}

/*
 * Walks name, measures and settles frames without a size, decodes every
 * frame and checks the result against name's oracle output "name.out".
 */
static void check_file(const char *name, size_t chunk, struct zstddec_index **keep)
{
	struct zstddec_index *idx;
	struct zerr e;
	char oname[PATH_MAX];
	uint8_t *want, *got;
	size_t wlen, pos = 0;
	struct zsrc *src;
	int ret;

	need_generated();
	snprintf(oname, sizeof(oname), "%s.out", name);
	want = slurp(oname, &wlen);
	ret = open_index(name, WMAX, &src, &idx, &e);
	ck_assert_msg(ret == 0, "%s: %d: %s at %llu", name, ret, e.msg, (unsigned long long)e.coff);
	for (size_t i = 0; i < idx->nframes; i++) {
		uint64_t u = 0;

		if (idx->frames[i].usize != ZSTDDEC_UNKNOWN)
			continue;
		ret = zstddec_measure(src, &idx->frames[i], &u, &e);
		ck_assert_msg(ret == 0, "%s: measure %zu: %s", name, i, e.msg);
		ck_assert_int_eq(zstddec_index_settle(idx, i, u), 0);
		ck_assert_uint_eq(idx->frames[i].usize_src, ZSTDDEC_SRC_MEASURED);
	}
	ck_assert_uint_eq(idx->nunknown, 0);
	ck_assert_uint_eq(idx->usize, wlen);
	got = malloc(wlen + 1);
	ck_assert_ptr_nonnull(got);
	/* each frame on its own, in reverse order: frames are independent */
	for (size_t k = idx->nframes; k-- > 0;) {
		const struct zstddec_frame *f = &idx->frames[k];
		ssize_t n = decode_frame(src, f, got + f->uoff, wlen + 1 - f->uoff, chunk, &e);

		ck_assert_msg(n >= 0, "%s: frame %zu: %s at %llu", name, k, e.msg,
			      (unsigned long long)e.coff);
		ck_assert_uint_eq((uint64_t)n, f->usize);
		pos += (size_t)n;
	}
	ck_assert_uint_eq(pos, wlen);
	ck_assert_msg(memcmp(got, want, wlen) == 0, "%s: output differs from zstd -dc", name);
	free(got);
	free(want);
	zsrc_put(src);
	if (keep)
		*keep = idx;
	else
		zstddec_index_free(idx);
}

START_TEST(test_levels)
{
	static const char *const files[] = { "l1.zst", "l3.zst", "l19.zst", "long27.zst" };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct zstddec_index *idx;

		check_file(files[i], 1u << 20, &idx);
		ck_assert_uint_eq(idx->nframes, 1);
		ck_assert_uint_eq(idx->frames[0].coff, 0);
		ck_assert_uint_eq(idx->frames[0].csize, idx->csize);
		ck_assert_uint_eq(idx->frames[0].usize_src, ZSTDDEC_SRC_FCS);
		ck_assert_uint_eq(idx->frames[0].checksum, 1);
		ck_assert_uint_eq(idx->frames[0].dict_id, 0);
		ck_assert_uint_eq(idx->frames[0].flags, 0);
		ck_assert_uint_ge(idx->frames[0].nblocks, ORIG_SIZE / ZSTDDEC_BLOCK_MAX);
		ck_assert_uint_eq(idx->seek, ZSTDDEC_SEEK_NONE);
		zstddec_index_free(idx);
	}
}
END_TEST

/* Odd read sizes put output boundaries everywhere, the last byte included. */
START_TEST(test_small_reads)
{
	check_file("small.zst", 1, NULL);
	check_file("small.zst", 7, NULL);
	check_file("l3.zst", 4093, NULL);
	check_file("pipe.zst", 65521, NULL);
}
END_TEST

START_TEST(test_multi_frame)
{
	struct zstddec_index *idx;

	check_file("pzstd.zst", 1u << 20, &idx);
	ck_assert_uint_ge(idx->nframes, 2);
	/* pzstd puts a skippable frame before each frame */
	ck_assert_uint_eq(idx->nskippable, idx->nframes);
	for (size_t i = 1; i < idx->nframes; i++)
		ck_assert_uint_eq(idx->frames[i].uoff,
				  idx->frames[i - 1].uoff + idx->frames[i - 1].usize);
	zstddec_index_free(idx);

	check_file("concat.zst", 1u << 20, &idx);
	ck_assert_uint_eq(idx->nframes, 3);
	ck_assert_uint_eq(idx->nskippable, 0);
	ck_assert_uint_eq(idx->frames[1].coff, idx->frames[0].csize);
	ck_assert_uint_eq(idx->frames[1].uoff, ORIG_SIZE);
	ck_assert_uint_eq(idx->frames[2].uoff, 2ull * ORIG_SIZE);
	zstddec_index_free(idx);
}
END_TEST

START_TEST(test_skippable)
{
	struct zstddec_index *idx;

	check_file("skip.zst", 1u << 20, &idx);
	ck_assert_uint_eq(idx->nframes, 2);
	ck_assert_uint_eq(idx->nskippable, 3);
	ck_assert_uint_eq(idx->skippable_bytes, (8 + 16) + (8 + 0) + (8 + 5));
	ck_assert_uint_eq(idx->frames[0].coff, 8 + 16);
	ck_assert_uint_eq(idx->seek, ZSTDDEC_SEEK_NONE);
	zstddec_index_free(idx);

	/* only skippable frames: no zstd frame, nothing to show, not an error */
	check_file("onlyskip.zst", 1, &idx);
	ck_assert_uint_eq(idx->nframes, 0);
	ck_assert_uint_eq(idx->usize, 0);
	zstddec_index_free(idx);
}
END_TEST

START_TEST(test_empty)
{
	struct zstddec_index *idx;

	/* from a file: FCS 0, single segment; from a pipe: no FCS */
	check_file("empty.zst", 1, &idx);
	ck_assert_uint_eq(idx->nframes, 1);
	ck_assert_uint_eq(idx->frames[0].usize_src, ZSTDDEC_SRC_FCS);
	ck_assert_uint_eq(idx->frames[0].usize, 0);
	zstddec_index_free(idx);
	/* zstd 1.5 sees the end of an empty pipe at once and writes FCS 0 */
	check_file("emptypipe.zst", 1, &idx);
	ck_assert_uint_eq(idx->nframes, 1);
	ck_assert_uint_eq(idx->frames[0].usize, 0);
	zstddec_index_free(idx);
}
END_TEST

/* No Frame_Content_Size: unknown until measured, then decodes bounded by it. */
START_TEST(test_no_fcs)
{
	struct zstddec_index *idx;
	struct zstddec_dec *d;
	struct zerr e;
	uint8_t *buf;
	ssize_t n;
	uint64_t total = 0, u = 0;
	struct zsrc *src;

	need_generated();
	ck_assert_int_eq(open_index("pipe.zst", WMAX, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->nframes, 1);
	ck_assert_uint_eq(idx->frames[0].usize, ZSTDDEC_UNKNOWN);
	ck_assert_uint_eq(idx->frames[0].usize_src, ZSTDDEC_SRC_NONE);
	ck_assert_uint_eq(idx->usize, ZSTDDEC_UNKNOWN);
	ck_assert_uint_eq(idx->frames[0].uoff, 0);
	ck_assert_uint_eq(idx->nunknown, 1);

	/* decoding with an unknown size: partial reads allowed, 0 at the end */
	buf = malloc(ORIG_SIZE + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(zstddec_dec_open(&idx->frames[0], &d, &e), 0);
	while ((n = zstddec_dec_read(d, src, buf, 100000, &e)) > 0)
		total += (uint64_t)n;
	ck_assert_int_eq(n, 0);
	ck_assert_uint_eq(total, ORIG_SIZE);
	ck_assert_int_eq(zstddec_dec_read(d, src, buf, 1, &e), 0);
	zstddec_dec_close(d);

	ck_assert_int_eq(zstddec_measure(src, &idx->frames[0], &u, &e), 0);
	ck_assert_uint_eq(u, ORIG_SIZE);
	/* a size that does not match, or is more than its blocks can hold, is refused */
	ck_assert_int_eq(zstddec_index_settle(idx, 0, UINT64_MAX / 2), -EINVAL);
	ck_assert_int_eq(zstddec_index_settle(idx, 1, u), -EINVAL);
	ck_assert_int_eq(zstddec_index_settle(idx, 0, u), 0);
	ck_assert_int_eq(zstddec_index_settle(idx, 0, u), 0);
	ck_assert_int_eq(zstddec_index_settle(idx, 0, u + 1), -EINVAL);
	ck_assert_uint_eq(idx->usize, ORIG_SIZE);
	ck_assert_uint_eq(idx->nunknown, 0);
	free(buf);
	zstddec_index_free(idx);
	zsrc_put(src);
}
END_TEST

START_TEST(test_checksum_flag)
{
	struct zstddec_index *idx;

	check_file("nocheck.zst", 1u << 20, &idx);
	ck_assert_uint_eq(idx->frames[0].checksum, 0);
	ck_assert_uint_eq(idx->nchecksum, 0);
	ck_assert_uint_eq(idx->frames[0].csize, idx->csize);
	zstddec_index_free(idx);
	check_file("l3.zst", 1u << 20, &idx);
	ck_assert_uint_eq(idx->frames[0].checksum, 1);
	ck_assert_uint_eq(idx->nchecksum, 1);
	zstddec_index_free(idx);
}
END_TEST

START_TEST(test_dictionary_flagged)
{
	struct zstddec_index *idx;
	struct zstddec_dec *d = (struct zstddec_dec *)&d;
	struct zerr e;
	uint64_t u;
	struct zsrc *src;

	need_generated();
	ck_assert_int_eq(open_index("dict.zst", WMAX, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->nframes, 1);
	ck_assert_uint_ne(idx->frames[0].dict_id, 0);
	ck_assert_uint_eq(idx->frames[0].flags & ZSTDDEC_F_DICT, ZSTDDEC_F_DICT);
	ck_assert_uint_eq(idx->ndict, 1);
	ck_assert_int_eq(zstddec_dec_open(&idx->frames[0], &d, &e), -ENOTSUP);
	ck_assert_ptr_null(d);
	ck_assert_msg(strstr(e.msg, "dictionary"), "reason: %s", e.msg);
	ck_assert_int_eq(zstddec_measure(src, &idx->frames[0], &u, &e), -ENOTSUP);
	/* the scan (a listing's probe) sees the same, keeping nothing */
	{
		struct zstddec_scan sc;

		ck_assert_int_eq(zstddec_scan(src, idx->csize, WMAX, SIZE_MAX, &sc, &e), 0);
		ck_assert_uint_eq(sc.nframes, 1);
		ck_assert_uint_eq(sc.ndict, 1);
		ck_assert_uint_eq(sc.flagged_i, 0);
		ck_assert_uint_eq(sc.flagged.dict_id, idx->frames[0].dict_id);
	}
	zstddec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/* A window over the caller's limit is flagged; under a larger limit it decodes. */
START_TEST(test_window_limit)
{
	struct zstddec_index *idx;
	struct zstddec_dec *d = (struct zstddec_dec *)&d;
	struct zerr e;
	uint8_t *want, *got;
	size_t wlen;
	ssize_t n;
	struct zsrc *src;

	need_generated();
	ck_assert_int_eq(open_index("longpipe.zst", WMAX, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->frames[0].window, 1ull << 27);
	ck_assert_uint_eq(idx->max_window, 1ull << 27);
	ck_assert_uint_eq(idx->frames[0].flags, ZSTDDEC_F_BIGWIN);
	ck_assert_uint_eq(idx->nbigwin, 1);
	ck_assert_int_eq(zstddec_dec_open(&idx->frames[0], &d, &e), -ENOTSUP);
	ck_assert_ptr_null(d);
	ck_assert_uint_ge(zstddec_dec_cost(&idx->frames[0]), 1ull << 27);
	ck_assert_uint_le(zstddec_dec_cost(&idx->frames[0]), (1ull << 27) + (2u << 20));
	zstddec_index_free(idx);
	zsrc_put(src);

	/* at the limit: allowed, and a window above 2 GiB is clamped to libzstd's */
	ck_assert_int_eq(open_index("longpipe.zst", 1ull << 27, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->frames[0].flags, 0);
	zstddec_index_free(idx);
	zsrc_put(src);
	ck_assert_int_eq(open_index("longpipe.zst", UINT64_MAX, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->window_max, ZSTDDEC_WINDOW_LIBMAX);
	want = slurp("longpipe.zst.out", &wlen);
	got = malloc(wlen + 1);
	ck_assert_ptr_nonnull(got);
	n = decode_frame(src, &idx->frames[0], got, wlen + 1, 1u << 20, &e);
	ck_assert_msg(n == (ssize_t)wlen, "%zd: %s", n, e.msg);
	ck_assert(memcmp(got, want, wlen) == 0);
	free(got);
	free(want);
	zstddec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/* The cost of a decoder follows its window. */
START_TEST(test_cost)
{
	struct zstddec_frame f = { .window = 1u << 20 };
	uint64_t c1, c8;

	c1 = zstddec_dec_cost(&f);
	f.window = 8u << 20;
	c8 = zstddec_dec_cost(&f);
	ck_assert_uint_ge(c1, 1u << 20);
	ck_assert_uint_le(c1, 2u << 20);
	ck_assert_uint_ge(c8 - c1, 7u << 20);
	ck_assert_uint_le(c8 - c1, (7u << 20) + 4096);
}
END_TEST

/*
 * Closed decoders keep their libzstd state for reuse, within
 * ZSTDDEC_STASH_MAX: never one with a window over 8 MiB, and never more
 * than two however many close at once.
 */
START_TEST(test_stash_is_bounded)
{
	enum { N = 4 };
	struct zstddec_index *big, *small;
	struct zsrc *bsrc, *ssrc;
	struct zstddec_dec *d[N];
	struct zerr e;
	uint8_t *buf = malloc(32u << 20);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(zmtest_sh(tmpdir,
				   "seq 1 3000000 | zstd -q --zstd=wlog=24 -c > bigwin.zst && "
				   "seq 1 300000 | zstd -q -3 -c > smallwin.zst"),
			 0);
	ck_assert_int_eq(open_index("bigwin.zst", WMAX, &bsrc, &big, &e), 0);
	ck_assert_int_eq(open_index("smallwin.zst", WMAX, &ssrc, &small, &e), 0);
	/* streamed, so libzstd maps its 16 MiB window */
	ck_assert_int_gt(decode_frame(bsrc, &big->frames[0], buf, 32u << 20, 65536, &e), 0);
	ck_assert_msg(zstddec_stash_bytes() < (9u << 20), "a 16 MiB window kept: %zu bytes",
		      zstddec_stash_bytes());
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(zstddec_dec_open(&small->frames[0], &d[i], &e), 0);
		ck_assert_int_eq(zstddec_dec_read(d[i], ssrc, buf, 65536, &e), 65536);
	}
	for (int i = 0; i < N; i++)
		zstddec_dec_close(d[i]);
	ck_assert_uint_gt(zstddec_stash_bytes(), 0);
	ck_assert_uint_le(zstddec_stash_bytes(), ZSTDDEC_STASH_MAX);
	ck_assert_uint_le(zstddec_stash_bytes(), 2 * zstddec_dec_cost(&small->frames[0]));
	zstddec_index_free(big);
	zstddec_index_free(small);
	zsrc_put(bsrc);
	zsrc_put(ssrc);
	free(buf);
}
END_TEST

/* Decodes a whole single-frame file; returns the error, 0 if it decoded. */
static int decode_all(const char *name, struct zerr *e, uint64_t *reached)
{
	struct zstddec_index *idx;
	uint8_t *buf;
	ssize_t n = 0;
	struct zsrc *src;
	int ret;

	ret = open_index(name, WMAX, &src, &idx, e);
	if (ret) {
		ck_assert_ptr_null(idx);
		ck_assert_msg(e->msg[0], "no reason given");
		zsrc_put(src);
		return ret;
	}
	buf = malloc(ORIG_SIZE * 3 + 1);
	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < idx->nframes && n >= 0; i++)
		n = decode_frame(src, &idx->frames[i], buf, ORIG_SIZE * 3 + 1, 65536, e);
	free(buf);
	zstddec_index_free(idx);
	zsrc_put(src);
	if (reached)
		*reached = e->coff;
	return n < 0 ? (int)n : 0;
}

/* Flips a byte of src at off into dst. */
static void damage(const char *src, const char *dst, uint64_t off, uint8_t mask)
{
	size_t len;
	uint8_t *b = slurp(src, &len);

	ck_assert_uint_lt(off, len);
	b[off] ^= mask;
	spew(dst, b, len);
	free(b);
}

/* zstd -t must refuse name too, or the test is not about a bad file. */
static void oracle_refuses(const char *name)
{
	ck_assert_msg(zmtest_sh(tmpdir, "zstd -q -t %s 2>/dev/null", name) != 0,
		      "zstd -t accepts %s", name);
}

START_TEST(test_truncated)
{
	struct zerr e;
	size_t len;
	uint8_t *b;
	static const size_t cuts[] = { 1, 4, 100, 50000 };

	need_generated();
	b = slurp("l3.zst", &len);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		spew("cut.zst", b, len - cuts[i]);
		oracle_refuses("cut.zst");
		ck_assert_int_eq(decode_all("cut.zst", &e, NULL), -EINVAL);
		ck_assert_msg(strstr(e.msg, "truncated"), "cut %zu: %s", cuts[i], e.msg);
	}
	/* the header itself cut */
	spew("cut.zst", b, 5);
	ck_assert_int_eq(decode_all("cut.zst", &e, NULL), -EINVAL);
	ck_assert_uint_eq(e.coff, 0);
	spew("cut.zst", b, 3);
	ck_assert_int_eq(decode_all("cut.zst", &e, NULL), -EINVAL);
	free(b);
}
END_TEST

START_TEST(test_corrupt_payload)
{
	struct zstddec_index *idx;
	struct zerr e;
	uint64_t at, reached;
	struct zsrc *src;

	need_generated();
	ck_assert_int_eq(open_index("l3.zst", WMAX, &src, &idx, &e), 0);
	/* inside the first block's content: the walk cannot see it, the decoder must */
	at = idx->frames[0].coff + idx->frames[0].hsize + 3 + 20;
	zstddec_index_free(idx);
	zsrc_put(src);
	damage("l3.zst", "bad.zst", at, 0x55);
	oracle_refuses("bad.zst");
	ck_assert_int_eq(decode_all("bad.zst", &e, &reached), -EIO);
	ck_assert_msg(e.msg[0], "no reason");

	/* same damage without a checksum: libzstd must still see corrupt entropy data */
	damage("nocheck.zst", "bad.zst", at, 0xFF);
	if (zmtest_sh(tmpdir, "zstd -q -t bad.zst 2>/dev/null") != 0)
		ck_assert_int_eq(decode_all("bad.zst", &e, NULL), -EIO);
}
END_TEST

/* A wrong checksum fails the read that would return the last byte, not earlier. */
START_TEST(test_corrupt_checksum)
{
	struct zstddec_index *idx;
	struct zstddec_dec *d;
	struct zerr e;
	uint8_t *buf;
	uint64_t usize;
	size_t len;
	struct zsrc *src;

	need_generated();
	buf = slurp("small.zst", &len);
	free(buf);
	damage("small.zst", "badck.zst", len - 1, 0x01);
	oracle_refuses("badck.zst");
	ck_assert_int_eq(open_index("badck.zst", WMAX, &src, &idx, &e), 0);
	usize = idx->frames[0].usize;
	ck_assert_uint_eq(usize, SMALL_SIZE);
	buf = malloc(usize);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(zstddec_dec_open(&idx->frames[0], &d, &e), 0);
	ck_assert_int_eq(zstddec_dec_read(d, src, buf, usize - 1, &e), (ssize_t)usize - 1);
	ck_assert_int_eq(zstddec_dec_read(d, src, buf, 1, &e), -EIO);
	ck_assert_msg(strstr(e.msg, "checksum"), "reason: %s", e.msg);
	ck_assert_uint_ge(e.coff, len - 4); /* at the checksum field */
	ck_assert_uint_le(e.coff, len);
	ck_assert_int_eq(zstddec_dec_read(d, src, buf, 1, &e), -EIO); /* stays failed */
	zstddec_dec_close(d);
	free(buf);
	zstddec_index_free(idx);
	zsrc_put(src);
}
END_TEST

START_TEST(test_trailing_garbage)
{
	struct zerr e;
	size_t len;
	uint8_t *b;

	need_generated();
	b = slurp("l1.zst", &len);
	free(b);
	oracle_refuses("garbage.zst");
	ck_assert_int_eq(decode_all("garbage.zst", &e, NULL), -EINVAL);
	ck_assert_uint_eq(e.coff, len);
	ck_assert_msg(strstr(e.msg, "trailing"), "reason: %s", e.msg);
	oracle_refuses("zeros.zst");
	ck_assert_int_eq(decode_all("zeros.zst", &e, NULL), -EINVAL);
	ck_assert_uint_eq(e.coff, len);
}
END_TEST

/* Header fields the format reserves, and a reserved block type. */
START_TEST(test_reserved_bits)
{
	struct zstddec_index *idx;
	struct zerr e;
	uint64_t blk;
	struct zsrc *src;

	need_generated();
	damage("l1.zst", "rsv.zst", 4, 0x08); /* Frame_Header_Descriptor bit 3 */
	oracle_refuses("rsv.zst");
	ck_assert_int_eq(decode_all("rsv.zst", &e, NULL), -EINVAL);
	ck_assert_uint_eq(e.coff, 4);
	ck_assert_msg(strstr(e.msg, "reserved"), "reason: %s", e.msg);

	ck_assert_int_eq(open_index("l1.zst", WMAX, &src, &idx, &e), 0);
	blk = idx->frames[0].hsize; /* first block header */
	zstddec_index_free(idx);
	zsrc_put(src);
	{
		size_t len;
		uint8_t *b = slurp("l1.zst", &len);

		b[blk] |= 0x06; /* Block_Type 3: reserved */
		spew("rsv.zst", b, len);
		free(b);
	}
	oracle_refuses("rsv.zst");
	ck_assert_int_eq(decode_all("rsv.zst", &e, NULL), -EINVAL);
	ck_assert_uint_eq(e.coff, blk);
	ck_assert_msg(strstr(e.msg, "block type"), "reason: %s", e.msg);
}
END_TEST

/* A frame entry that lies about its size never decodes "whole". */
START_TEST(test_lying_size)
{
	struct zstddec_index *idx;
	struct zstddec_frame f;
	struct zerr e;
	uint8_t *buf;
	struct zsrc *src;

	need_generated();
	ck_assert_int_eq(open_index("small.zst", WMAX, &src, &idx, &e), 0);
	buf = malloc(SMALL_SIZE + 4096);
	ck_assert_ptr_nonnull(buf);
	f = idx->frames[0];
	f.usize = SMALL_SIZE + 1;
	ck_assert_int_eq(decode_frame(src, &f, buf, SMALL_SIZE + 4096, 65536, &e), -EIO);
	ck_assert_msg(strstr(e.msg, "smaller"), "reason: %s", e.msg);
	/*
	 * The same lie read with a buffer that ends exactly where the frame
	 * does (fuzz_zstd found it): the next read is an error, never 0 (EOF).
	 */
	{
		struct zstddec_dec *d;
		ssize_t n;

		ck_assert_int_eq(zstddec_dec_open(&f, &d, &e), 0);
		n = zstddec_dec_read(d, src, buf, SMALL_SIZE, &e);
		ck_assert(n == SMALL_SIZE || n == -EIO);
		if (n == SMALL_SIZE)
			ck_assert_int_eq(zstddec_dec_read(d, src, buf, 4096, &e), -EIO);
		ck_assert_msg(strstr(e.msg, "smaller"), "reason: %s", e.msg);
		zstddec_dec_close(d);
	}
	f.usize = SMALL_SIZE - 1;
	ck_assert_int_eq(decode_frame(src, &f, buf, SMALL_SIZE + 4096, 65536, &e), -EIO);
	ck_assert_msg(strstr(e.msg, "larger"), "reason: %s", e.msg);
	f.usize = 0;
	ck_assert_int_eq(decode_frame(src, &f, buf, SMALL_SIZE + 4096, 65536, &e), -EIO);
	/* a frame whose extent is wrong: libzstd ends it elsewhere */
	f = idx->frames[0];
	f.csize += 1;
	ck_assert_int_eq(decode_frame(src, &f, buf, SMALL_SIZE + 4096, 65536, &e), -EIO);
	f.csize -= 2;
	ck_assert_int_eq(decode_frame(src, &f, buf, SMALL_SIZE + 4096, 65536, &e), -EIO);
	free(buf);
	zstddec_index_free(idx);
	zsrc_put(src);

	/* an FCS larger than the blocks can hold is refused by the walk */
	ck_assert_int_eq(decode_all("bigfcs.zst", &e, NULL), -EINVAL);
	ck_assert_msg(strstr(e.msg, "Frame_Content_Size"), "reason: %s", e.msg);
}
END_TEST

/* One read of the whole frame f (its usize bytes), as a cache unit filled whole asks. */
static ssize_t read_whole(struct zsrc *src, const struct zstddec_frame *f, uint8_t *buf,
			  struct zerr *e)
{
	struct zstddec_dec *d;
	ssize_t n;

	ck_assert_int_eq(zstddec_dec_open(f, &d, e), 0);
	n = zstddec_dec_read(d, src, buf, (size_t)f->usize, e);
	if (n == (ssize_t)f->usize) /* then at its end */
		ck_assert_int_eq(zstddec_dec_read(d, src, buf, 1, e), 0);
	zstddec_dec_close(d);
	return n;
}

/*
 * A whole frame asked for in one read decodes in one go (dec_whole), and
 * gives the streaming path's verdicts: the bytes, a size that lies either
 * way, an extent that is not the frame's, a bad checksum.
 */
START_TEST(test_whole_frame_reads)
{
	struct zstddec_index *idx;
	struct zstddec_frame f;
	struct zerr e;
	uint8_t *buf, *want;
	size_t len;
	struct zsrc *src;

	need_generated();
	want = slurp("small.zst.out", &len);
	ck_assert_uint_eq(len, SMALL_SIZE);
	ck_assert_int_eq(open_index("small.zst", WMAX, &src, &idx, &e), 0);
	buf = malloc(SMALL_SIZE + 1);
	ck_assert_ptr_nonnull(buf);
	f = idx->frames[0];
	ck_assert_int_eq(read_whole(src, &f, buf, &e), SMALL_SIZE);
	ck_assert_mem_eq(buf, want, SMALL_SIZE);
	f.usize = SMALL_SIZE + 1;
	ck_assert_int_eq(read_whole(src, &f, buf, &e), -EIO);
	ck_assert_msg(strstr(e.msg, "smaller"), "reason: %s", e.msg);
	f.usize = SMALL_SIZE - 1;
	ck_assert_int_eq(read_whole(src, &f, buf, &e), -EIO);
	ck_assert_msg(strstr(e.msg, "larger"), "reason: %s", e.msg);
	f = idx->frames[0];
	f.csize -= 1;
	ck_assert_int_eq(read_whole(src, &f, buf, &e), -EIO);
	zstddec_index_free(idx);
	zsrc_put(src);

	free(slurp("small.zst", &len));
	damage("small.zst", "badwhole.zst", len - 1, 0x01); /* the checksum's last byte */
	ck_assert_int_eq(open_index("badwhole.zst", WMAX, &src, &idx, &e), 0);
	ck_assert_int_eq(read_whole(src, &idx->frames[0], buf, &e), -EIO);
	ck_assert_msg(strstr(e.msg, "checksum"), "reason: %s", e.msg);
	zstddec_index_free(idx);
	zsrc_put(src);
	free(buf);
	free(want);
}
END_TEST

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * Appends a seek table (seekable format 0.1.0) to frames.zst, made from
 * the walked frames and the given decompressed sizes, into name.  mutate
 * changes one thing: 0 none, 1 a compressed size, 2 a decompressed size,
 * 3 the entry count, 4 a reserved descriptor bit.
 */
static void make_seekable(const char *name, const uint32_t *dsize, size_t n, int mutate,
			  bool checksums)
{
	struct zstddec_index *idx;
	struct zerr e;
	size_t len, esize = checksums ? 12 : 8, tlen;
	uint8_t *b, *out, *t;
	struct zsrc *src;

	ck_assert_int_eq(open_index("frames.zst", WMAX, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->nframes, n);
	b = slurp("frames.zst", &len);
	tlen = 8 + n * esize + 9;
	out = malloc(len + tlen);
	ck_assert_ptr_nonnull(out);
	memcpy(out, b, len);
	t = out + len;
	put32(t, 0x184D2A5Eu);
	put32(t + 4, (uint32_t)(tlen - 8));
	for (size_t i = 0; i < n; i++) {
		uint8_t *en = t + 8 + i * esize;

		put32(en, (uint32_t)idx->frames[i].csize + (mutate == 1 && i == 1));
		put32(en + 4, dsize[i] + (mutate == 2 && i == 1));
		if (checksums)
			put32(en + 8, 0x12345678u); /* not verified (zstddec.h) */
	}
	put32(t + 8 + n * esize, (uint32_t)n + (mutate == 3));
	t[8 + n * esize + 4] = (uint8_t)((checksums ? 0x80 : 0) | (mutate == 4 ? 0x04 : 0));
	put32(t + 8 + n * esize + 5, 0x8F92EAB1u);
	spew(name, out, len + tlen);
	free(out);
	free(b);
	zstddec_index_free(idx);
	zsrc_put(src);
}

/* More frames than ZSTDDEC_MAX_FRAMES: refused before the index grows past its bound. */
START_TEST(test_too_many_frames)
{
	struct zstddec_index *idx;
	struct zstddec_scan sc;
	struct zerr e;
	size_t n = ZSTDDEC_MAX_FRAMES + 1, len = n * 8;
	uint8_t *b = malloc(len);
	struct zsrc *src;

	ck_assert_ptr_nonnull(b);
	for (size_t i = 0; i < n; i++) {
		put32(b + 8 * i, 0x184D2A50u); /* an empty skippable frame */
		put32(b + 8 * i + 4, 0);
	}
	spew("many.zst", b, len);
	ck_assert_int_eq(open_index("many.zst", WMAX, &src, &idx, &e), -E2BIG);
	ck_assert_ptr_null(idx);
	ck_assert_uint_eq(e.coff, len - 8);
	/*
	 * Issue 18, item 7: the scan too, and a caller's smaller limit stops
	 * the walk at its first frame over, before allocating for it.
	 */
	ck_assert_int_eq(zstddec_scan(src, len, WMAX, SIZE_MAX, &sc, &e), -E2BIG);
	ck_assert_uint_eq(sc.nskippable, ZSTDDEC_MAX_FRAMES);
	ck_assert_int_eq(zstddec_index_read_max(src, len, WMAX, 1000, &idx, &e), -E2BIG);
	ck_assert_ptr_null(idx);
	ck_assert_uint_eq(e.coff, 1000 * 8);
	ck_assert_int_eq(zstddec_scan(src, len, WMAX, 1000, &sc, &e), -E2BIG);
	ck_assert_uint_eq(e.coff, 1000 * 8);
	ck_assert_int_eq(zstddec_index_read_max(src, 1000 * 8, WMAX, 1000, &idx, &e), 0);
	ck_assert_uint_eq(idx->nskippable, 1000);
	zstddec_index_free(idx);
	ck_assert_int_eq(zstddec_scan(src, 1000 * 8, WMAX, 1000, &sc, &e), 0);
	ck_assert_uint_eq(sc.nskippable, 1000);
	ck_assert_uint_eq(sc.nframes, 0);
	zsrc_put(src);
	spew("many.zst", b, len - 8); /* exactly the limit: fine */
	ck_assert_int_eq(open_index("many.zst", WMAX, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->nskippable, ZSTDDEC_MAX_FRAMES);
	ck_assert_uint_eq(idx->nframes, 0);
	zstddec_index_free(idx);
	zsrc_put(src);
	free(b);
	/* the header's memory figure */
	ck_assert_uint_eq(sizeof(struct zstddec_frame), 56);
}
END_TEST

START_TEST(test_seekable)
{
	/* frames.zst: three frames from pipes (no FCS) of parts of sizes: */
	static const uint32_t parts[3] = { 1000000, 1500000, 1694304 };
	struct zstddec_index *idx;
	struct zerr e;
	struct zsrc *src;

	need_generated();
	ck_assert_uint_eq(parts[0] + parts[1] + parts[2], ORIG_SIZE);
	make_seekable("seek.zst", parts, 3, 0, false);
	ck_assert_int_eq(zmtest_sh(tmpdir, "zstd -q -dc seek.zst > seek.zst.out"), 0);
	check_file("seek.zst", 1u << 20, &idx);
	ck_assert_uint_eq(idx->seek, ZSTDDEC_SEEK_USED);
	ck_assert_str_eq(idx->seek_reason, "");
	ck_assert_uint_eq(idx->nskippable, 1);
	ck_assert_uint_eq(idx->nframes, 3);
	ck_assert_uint_eq(idx->seek_coff, idx->frames[2].coff + idx->frames[2].csize);
	zstddec_index_free(idx);

	/* the table's sizes are not the frames' word: not used, the frames are measured */
	ck_assert_int_eq(open_index("seek.zst", WMAX, &src, &idx, &e), 0);
	for (size_t i = 0; i < 3; i++) {
		ck_assert_uint_eq(idx->frames[i].usize, ZSTDDEC_UNKNOWN);
		ck_assert_uint_eq(idx->frames[i].usize_src, ZSTDDEC_SRC_NONE);
	}
	ck_assert_uint_eq(idx->nunknown, 3);
	ck_assert_uint_eq(idx->usize, ZSTDDEC_UNKNOWN);
	zstddec_index_free(idx);
	zsrc_put(src);

	make_seekable("seekck.zst", parts, 3, 0, true);
	ck_assert_int_eq(open_index("seekck.zst", WMAX, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->seek, ZSTDDEC_SEEK_USED);
	ck_assert_uint_eq(idx->nunknown, 3);
	zstddec_index_free(idx);
	zsrc_put(src);

	/* tables that disagree with the frames are ignored, with a reason */
	for (int m = 1; m <= 4; m++) {
		if (m == 2)
			continue; /* below */
		make_seekable("seekbad.zst", parts, 3, m, false);
		ck_assert_int_eq(open_index("seekbad.zst", WMAX, &src, &idx, &e), 0);
		ck_assert_uint_eq(idx->seek, ZSTDDEC_SEEK_IGNORED);
		ck_assert_msg(idx->seek_reason[0], "mutation %d: no reason", m);
		ck_assert_uint_eq(idx->nunknown, 3);
		ck_assert_uint_eq(idx->usize, ZSTDDEC_UNKNOWN);
		zstddec_index_free(idx);
		zsrc_put(src);
	}
	/*
	 * Issue 18, item 1: a Decompressed_Size that lies about a frame without
	 * FCS cannot be seen by the walk, and places nothing: the frames are
	 * measured, and the file is what zstd -dc prints.
	 */
	make_seekable("seekbad.zst", parts, 3, 2, false);
	ck_assert_int_eq(zmtest_sh(tmpdir, "zstd -q -dc seekbad.zst > seekbad.zst.out"), 0);
	check_file("seekbad.zst", 65536, &idx);
	ck_assert_uint_eq(idx->frames[1].usize, parts[1]);
	ck_assert_uint_eq(idx->usize, ORIG_SIZE);
	zstddec_index_free(idx);
	/* and one that says a frame with an FCS has another size is ignored */
	{
		uint32_t lie[3] = { parts[0], parts[1] + 1, parts[2] };

		ck_assert_int_eq(zmtest_sh(tmpdir, "cp frames.zst frames.keep && "
						   "cat l1.zst l1.zst l1.zst > frames.zst"),
				 0);
		lie[0] = lie[1] = lie[2] = ORIG_SIZE;
		lie[1] += 1;
		make_seekable("seekfcs.zst", lie, 3, 0, false);
		ck_assert_int_eq(zmtest_sh(tmpdir, "mv frames.keep frames.zst"), 0);
		ck_assert_int_eq(open_index("seekfcs.zst", WMAX, &src, &idx, &e), 0);
		ck_assert_uint_eq(idx->seek, ZSTDDEC_SEEK_IGNORED);
		ck_assert_msg(strstr(idx->seek_reason, "entry 1"), "%s", idx->seek_reason);
		ck_assert_uint_eq(idx->usize, 3ull * ORIG_SIZE);
		zstddec_index_free(idx);
		zsrc_put(src);
	}
}
END_TEST

/*
 * The magic decides: a zstd frame, or the end of the file (issue 18, item
 * 13: only skippable frames is a valid, empty zstd file), after at most
 * ZSTDDEC_SNIFF_SKIP skippable frames (zstddec_sniff, fmt_zstd.c's sniff).
 */
START_TEST(test_probe)
{
	static const struct {
		const char *file;
		bool want;
	} t[] = {
		{ "l1.zst", true },	 { "pzstd.zst", true }, { "skip.zst", true },
		{ "seek.zst", true },	 { "dict.zst", true },	{ "onlyskip.zst", true },
		{ "skip5.zst", false },	 { "skip4.zst", true }, { "orig.txt", false },
		{ "skipxz.zst", false }, { "cut3.zst", false }, { "empty.zst", false },
	};

	need_generated();
	make_seekable("seek.zst", (const uint32_t[]){ 1000000, 1500000, 1694304 }, 3, 0, false);
	ck_assert_int_eq(
		zmtest_sh(tmpdir,
			  "for n in 4 5; do "
			  "  for i in $(seq $n); do cat onlyskip.zst; done > skip$n.zst; "
			  "  cat small.zst >> skip$n.zst; done; "
			  "{ cat onlyskip.zst; printf '\\375\\067zXZ\\000\\000'; } "
			  "> skipxz.zst; printf '\\050\\265\\057' > cut3.zst; : > empty.zst"),
		0);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char path[PATH_MAX];
		bool got;
		struct zsrc *src;

		tpath(path, sizeof(path), t[i].file);
		src = zmtest_src_open(path);
		got = zstddec_sniff(src);
		ck_assert_msg(got == t[i].want, "%s: sniff says %d", t[i].file, got);
		zsrc_put(src);
	}
}
END_TEST

/*
 * The conformance cases of tests/zstd/make-zstd-cases.sh, against the
 * verdicts of `zstd -t` and the sha256 of `zstd -dc` in its EXPECTED.tsv:
 * every "decoded" row decodes to that sha256, every "raw" row walks and is
 * flagged (dictionary or window), every "eio" row fails in the walk or in
 * a frame's decode; when the damage is confined to frame k (bad-frame=k@),
 * the other frames still decode.
 */
#ifndef ZMOUNT_ZSTD_CASES
#define ZMOUNT_ZSTD_CASES "tests/zstd/make-zstd-cases.sh"
#endif

/* Decodes every frame of src in order into out (may be NULL); returns the 1-based failing frame or
 * 0. */
static size_t conf_decode(struct zsrc *src, struct zstddec_index *idx, FILE *out, size_t skip,
			  struct zerr *e)
{
	uint8_t *buf = malloc(1u << 20);

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < idx->nframes; i++) {
		struct zstddec_dec *d;
		ssize_t n;

		if (i + 1 == skip)
			continue;
		if (zstddec_dec_open(&idx->frames[i], &d, e) < 0) {
			free(buf);
			return i + 1;
		}
		while ((n = zstddec_dec_read(d, src, buf, 1u << 20, e)) > 0)
			if (out)
				ck_assert_uint_eq(fwrite(buf, 1, (size_t)n, out), (size_t)n);
		zstddec_dec_close(d);
		if (n < 0) {
			ck_assert_int_eq(n, -EIO);
			free(buf);
			return i + 1;
		}
	}
	free(buf);
	return 0;
}

START_TEST(test_conformance)
{
	char dir[PATH_MAX], path[PATH_MAX], line[4096], sha[80];
	FILE *tsv;
	int rows = 0;

	zmtest_join(dir, sizeof(dir), tmpdir, "cases");
	ck_assert_msg(zmtest_sh(tmpdir, "bash '%s' cases >cases.log 2>&1", ZMOUNT_ZSTD_CASES) == 0,
		      "make-zstd-cases.sh failed (see %s/cases.log)", tmpdir);
	zmtest_join(path, sizeof(path), dir, "EXPECTED.tsv");
	tsv = fopen(path, "r");
	ck_assert_ptr_nonnull(tsv);
	while (fgets(line, sizeof(line), tsv)) {
		char *col[9], *save = NULL, *p = line;
		struct zstddec_index *idx;
		struct zerr e;
		size_t bad = 0, failed;
		struct zsrc *src;
		int ret, k = 0;
		FILE *out;
		struct stat st;

		if (line[0] == '#')
			continue;
		line[strcspn(line, "\n")] = '\0';
		for (k = 0; k < 9 && (col[k] = strtok_r(p, "\t", &save)); k++)
			p = NULL;
		ck_assert_int_eq(k, 9);
		rows++;
		zmtest_join(path, sizeof(path), dir, col[0]);
		src = zmtest_src_open(path);
		ck_assert_int_eq(zsrc_stat(src, &st), 0);
		memset(&e, 0, sizeof(e));
		ret = zstddec_index_read(src, (uint64_t)st.st_size, ZSTDDEC_WINDOW_DEFAULT, &idx,
					 &e);
		if (strcmp(col[8], "eio") == 0) {
			const char *bf = strstr(col[6], "bad-frame=");

			ck_assert_str_eq(col[1], "error");
			if (ret < 0) {
				ck_assert_msg(ret == -EINVAL, "%s: walk returned %d", col[0], ret);
				ck_assert_msg(e.msg[0], "%s: no reason", col[0]);
				zsrc_put(src);
				continue;
			}
			if (bf) {
				bad = strtoul(bf + 10, NULL, 10);
				ck_assert_msg(conf_decode(src, idx, NULL, bad, &e) == 0,
					      "%s: a frame other than %zu fails: %s", col[0], bad,
					      e.msg);
			}
			for (size_t i = 0; i < idx->nframes; i++) {
				uint64_t u;

				if (idx->frames[i].usize == ZSTDDEC_UNKNOWN &&
				    zstddec_measure(src, &idx->frames[i], &u, &e) == 0)
					zstddec_index_settle(idx, i, u);
			}
			failed = conf_decode(src, idx, NULL, 0, &e);
			ck_assert_msg(failed > 0, "%s: decodes, zstd -t says: %s", col[0], col[5]);
			ck_assert_msg(!bad || failed == bad, "%s: frame %zu failed, not %zu",
				      col[0], failed, bad);
			ck_assert_msg(e.msg[0], "%s: no reason", col[0]);
		} else if (strcmp(col[8], "raw") == 0) {
			ck_assert_msg(ret == 0, "%s: %s", col[0], e.msg);
			ck_assert_msg(idx->ndict + idx->nbigwin > 0, "%s: not flagged", col[0]);
			ck_assert_uint_eq(conf_decode(src, idx, NULL, 0, &e), 1);
		} else {
			ck_assert_str_eq(col[8], "decoded");
			ck_assert_msg(ret == 0, "%s: %d: %s at %llu", col[0], ret, e.msg,
				      (unsigned long long)e.coff);
			ck_assert_uint_eq(idx->ndict + idx->nbigwin, 0);
			for (size_t i = 0; i < idx->nframes; i++) {
				uint64_t u;

				if (idx->frames[i].usize != ZSTDDEC_UNKNOWN)
					continue;
				ck_assert_msg(zstddec_measure(src, &idx->frames[i], &u, &e) == 0,
					      "%s: %s", col[0], e.msg);
				ck_assert_int_eq(zstddec_index_settle(idx, i, u), 0);
			}
			ck_assert_uint_eq(idx->usize, strtoull(col[3], NULL, 10));
			zmtest_join(path, sizeof(path), tmpdir, "conf.out");
			out = fopen(path, "w");
			ck_assert_ptr_nonnull(out);
			failed = conf_decode(src, idx, out, 0, &e);
			ck_assert_int_eq(fclose(out), 0);
			ck_assert_msg(failed == 0, "%s: frame %zu: %s", col[0], failed, e.msg);
			ck_assert_int_eq(
				zmtest_sh(tmpdir, "sha256sum < conf.out | cut -c1-64 > conf.sha"),
				0);
			zmtest_join(path, sizeof(path), tmpdir, "conf.sha");
			out = fopen(path, "r");
			ck_assert_ptr_nonnull(out);
			ck_assert_ptr_nonnull(fgets(sha, sizeof(sha), out));
			fclose(out);
			sha[strcspn(sha, "\n")] = '\0';
			ck_assert_msg(strcmp(sha, col[2]) == 0, "%s: sha256 differs from zstd -dc",
				      col[0]);
			if (strstr(col[7], "seektable=yes"))
				ck_assert_uint_eq(idx->seek, ZSTDDEC_SEEK_USED);
		}
		zstddec_index_free(idx);
		zsrc_put(src);
	}
	fclose(tsv);
	ck_assert_int_ge(rows, 25);
}
END_TEST

/* Fixture commands; each name.zst that decodes gets name.zst.out from `zstd -dc`. */
static int gen_fixtures(void)
{
	char orig[PATH_MAX], small[PATH_MAX];

	tpath(orig, sizeof(orig), "orig.txt");
	tpath(small, sizeof(small), "small.txt");
	if (zmtest_text(orig, ORIG_SIZE, 2463534242u) || zmtest_text(small, SMALL_SIZE, 88172645u))
		return -1;
	return zmtest_sh(
		tmpdir,
		"set -e; Z='zstd -q -f'; "
		"$Z -1 orig.txt -o l1.zst; $Z -3 orig.txt -o l3.zst; $Z -19 orig.txt -o l19.zst; "
		"$Z --long=27 orig.txt -o long27.zst; "
		"cat orig.txt | $Z --long=27 -c > longpipe.zst; "
		"$Z -3 small.txt -o small.zst; "
		"cat orig.txt | $Z -3 -c > pipe.zst; "
		"$Z --no-check orig.txt -o nocheck.zst; "
		"pzstd -q -f -p2 -1 orig.txt -o pzstd.zst; "
		"cat l1.zst l3.zst nocheck.zst > concat.zst; "
		": > empty.txt; $Z empty.txt -o empty.zst; : | $Z -c > emptypipe.zst; "
		/* skippable frames: 16 bytes before, 0 between, 5 after */
		"{ printf '\\120\\052\\115\\030\\020\\000\\000\\000'; printf 0123456789abcdef; "
		"  cat small.zst; printf '\\137\\052\\115\\030\\000\\000\\000\\000'; cat "
		"small.zst; "
		"  printf '\\123\\052\\115\\030\\005\\000\\000\\000'; printf hello; } > skip.zst; "
		"printf '\\120\\052\\115\\030\\001\\000\\000\\000x' > onlyskip.zst; "
		/* a trained dictionary, so the frame carries its Dictionary_ID */
		"mkdir -p samples; split -b 2000 small.txt samples/s.; "
		"$Z --train samples/s.* -o dict --maxdict=8192 >/dev/null 2>&1; "
		"$Z -D dict small.txt -o dict.zst; "
		"{ cat l1.zst; printf 'garbage!'; } > garbage.zst; "
		"{ cat l1.zst; head -c 64 /dev/zero; } > zeros.zst; "
		/* FCS field (8 bytes, at 5) of a level-19 frame set to 2^40 */
		"$Z -19 --no-check --single-thread small.txt -o fcs.zst; "
		"head -c 1000000 orig.txt > p1; tail -c +1000001 orig.txt | head -c 1500000 > p2; "
		"tail -c +2500001 orig.txt > p3; "
		"{ cat p1 | $Z -c; cat p2 | $Z -c; cat p3 | $Z -c; } > frames.zst; "
		"for f in l1 l3 l19 long27 longpipe small pipe nocheck pzstd concat empty "
		"  emptypipe skip onlyskip; do zstd -q -dc $f.zst > $f.zst.out; done; "
		"zstd -q -dc -D dict dict.zst > dict.zst.out");
}

/* bigfcs.zst: fcs.zst with its Frame_Content_Size raised past what its blocks hold. */
static int gen_bigfcs(void)
{
	size_t len;
	char path[PATH_MAX];
	uint8_t *b;
	FILE *f;
	long n;

	tpath(path, sizeof(path), "fcs.zst");
	f = fopen(path, "r");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	len = (size_t)n;
	b = malloc(len);
	if (!b || fread(b, 1, len, f) != len) {
		fclose(f);
		free(b);
		return -1;
	}
	fclose(f);
	/* FHD: FCS_flag 2 (4 bytes) for 200000 bytes, no dictionary; FCS at 5 or 6 */
	if ((b[4] >> 6) != 2 || (b[4] & 3)) {
		free(b);
		return -1;
	}
	b[(b[4] & 0x20 ? 5 : 6) + 3] = 0x7F; /* about 2 GiB */
	tpath(path, sizeof(path), "bigfcs.zst");
	f = fopen(path, "w");
	if (!f || fwrite(b, 1, len, f) != len) {
		if (f)
			fclose(f);
		free(b);
		return -1;
	}
	free(b);
	return fclose(f);
}

static Suite *zstddec_suite(void)
{
	const struct zmtest_case t[] = {
		{ "levels", test_levels, 0 },
		{ "small_reads", test_small_reads, 0 },
		{ "multi_frame", test_multi_frame, 0 },
		{ "skippable", test_skippable, 0 },
		{ "empty", test_empty, 0 },
		{ "no_fcs", test_no_fcs, 0 },
		{ "checksum_flag", test_checksum_flag, 0 },
		{ "dictionary_flagged", test_dictionary_flagged, 0 },
		{ "window_limit", test_window_limit, 0 },
		{ "cost", test_cost, 0 },
		{ "stash_is_bounded", test_stash_is_bounded, 0 },
		{ "truncated", test_truncated, 0 },
		{ "corrupt_payload", test_corrupt_payload, 0 },
		{ "corrupt_checksum", test_corrupt_checksum, 0 },
		{ "trailing_garbage", test_trailing_garbage, 0 },
		{ "reserved_bits", test_reserved_bits, 0 },
		{ "lying_size", test_lying_size, 0 },
		{ "whole_frame_reads", test_whole_frame_reads, 0 },
		{ "seekable", test_seekable, 0 },
		{ "too_many_frames", test_too_many_frames, 0 },
		{ "probe", test_probe, 0 },
		{ "conformance", test_conformance, 0 },
	};

	return zmtest_suite("check_zstddec", "zstddec", t, sizeof(t) / sizeof(t[0]), 300, 1, NULL);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	SRunner *sr;
	int failed;

	if ((size_t)snprintf(tmpdir, sizeof(tmpdir), "%s/check_zstddec.XXXXXX",
			     tmp ? tmp : "/tmp") >= sizeof(tmpdir)) {
		fprintf(stderr, "check_zstddec: path too long\n");
		return 1;
	}
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	gen_ok = gen_fixtures() == 0 && gen_bigfcs() == 0;
	if (!gen_ok)
		fprintf(stderr, "check_zstddec: could not generate fixtures in %s\n", tmpdir);

	sr = srunner_create(zstddec_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	zmtest_sh("/", "rm -rf '%s'", tmpdir);
	return failed != 0;
}
