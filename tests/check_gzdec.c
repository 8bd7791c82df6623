/* SPDX-License-Identifier: MIT */
/*
 * Tests for codec/gzdec.c.  main() writes about 5 MiB of pseudo-random text
 * into a fresh temporary directory and compresses it with gzip, pigz and
 * bgzip; the tests index and extract those files, and damaged copies of
 * them.  The corpus test runs the shared gzip case generator and holds
 * gzdec to every row of its EXPECTED.tsv.
 *
 * usage: check_gzdec [CORPUS_DIR]  (else $ZMOUNT_CORPUS, else the
 * ../shared/corpus beside the source tree that CMake compiles in).  Without
 * a corpus the corpus test is skipped out loud and the exit status is 77,
 * which ctest reports as a skip, not a pass (1 if another test failed).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gzdec.h"
#include "zmtest.h"

#define ORIG_SIZE (5u * 1048576u + 4321u)
#define SPAN_MIN  (64u << 10)
#define SPAN_1M	  (1u << 20)
/* multi.gz: members [0, M1) [M1, M2) [M2, M2) (empty) [M2, end) */
#define M1 1500000u
#define M2 3500000u

static char g_dir[PATH_MAX];
static const char *g_corpus;
static unsigned char *g_data; /* the original text, ORIG_SIZE bytes */

/* Shell commands run in g_dir. */
#define sh(...) zmtest_sh(g_dir, __VA_ARGS__)
#define join	zmtest_join

static void path_of(char *buf, size_t size, const char *name)
{
	join(buf, size, g_dir, name);
}

static struct zsrc *open_file(const char *path, uint64_t *size)
{
	struct zsrc *src = zmtest_src_open(path);
	struct stat st;

	ck_assert_int_eq(zsrc_stat(src, &st), 0);
	*size = (uint64_t)st.st_size;
	return src;
}

/* Indexes g_dir/name; returns gzdec_index_build's result, *src open either way. */
static int build(const char *name, uint64_t span, struct zsrc **src, struct gzdec_index **idx,
		 struct zerr *err)
{
	char path[PATH_MAX];
	uint64_t size;
	int ret;

	path_of(path, sizeof(path), name);
	*src = open_file(path, &size);
	memset(err, 0, sizeof(*err));
	ret = gzdec_index_build(*src, size, span, idx, err);
	if (ret == 0) {
		ck_assert_ptr_nonnull(*idx);
		ck_assert_uint_eq((*idx)->csize, size);
	} else {
		ck_assert_ptr_null(*idx);
		ck_assert_msg(err->msg[0], "%s: error %d without a message", name, ret);
	}
	return ret;
}

static struct gzdec_index *build_ok(const char *name, uint64_t span, struct zsrc **src)
{
	struct gzdec_index *idx;
	struct zerr err;
	int ret = build(name, span, src, &idx, &err);

	ck_assert_msg(ret == 0, "%s: %d %s at %llu", name, ret, err.msg,
		      (unsigned long long)err.coff);
	return idx;
}

static uint64_t chunk_end(const struct gzdec_index *idx, size_t i)
{
	return i + 1 < idx->npoints ? idx->points[i + 1].uoff : idx->usize;
}

/* Extracts len bytes from point i and compares them with want + that point's uoff. */
static void expect_extract(struct zsrc *src, const struct gzdec_index *idx, size_t i, size_t len,
			   const unsigned char *want, const char *name)
{
	unsigned char *buf = malloc(len ? len : 1);
	struct zerr err = { 0 };
	ssize_t n;

	ck_assert_ptr_nonnull(buf);
	n = gzdec_extract(src, idx, i, buf, len, &err);
	ck_assert_msg(n == (ssize_t)len, "%s: point %zu len %zu: %zd %s at %llu", name, i, len, n,
		      err.msg, (unsigned long long)err.coff);
	ck_assert_msg(memcmp(buf, want + idx->points[i].uoff, len) == 0,
		      "%s: point %zu len %zu: wrong bytes", name, i, len);
	free(buf);
}

/* Copies g_dir/src to g_dir/dst, cut to cut bytes (if not -1) and with byte at xoff ^= mask. */
static void make_variant(const char *src, const char *dst, long cut, long xoff, int mask)
{
	ck_assert_int_eq(sh("cp %s %s", src, dst), 0);
	if (cut >= 0)
		ck_assert_int_eq(sh("truncate -s %ld %s", cut, dst), 0);
	if (xoff >= 0) {
		char path[PATH_MAX];
		unsigned char c;
		int wfd;

		path_of(path, sizeof(path), dst);
		wfd = open(path, O_RDWR | O_CLOEXEC);
		ck_assert_int_ge(wfd, 0);
		ck_assert_int_eq(pread(wfd, &c, 1, xoff), 1);
		c ^= (unsigned char)mask;
		ck_assert_int_eq(pwrite(wfd, &c, 1, xoff), 1);
		close(wfd);
	}
}

static long file_size(const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	path_of(path, sizeof(path), name);
	ck_assert_int_eq(stat(path, &st), 0);
	return (long)st.st_size;
}

static const char *const good_files[] = { "g6.gz", "g1.gz", "multi.gz", "pigzi.gz", "bgz.gz" };
#define NGOOD (sizeof(good_files) / sizeof(good_files[0]))

START_TEST(usize_matches)
{
	for (size_t f = 0; f < NGOOD; f++) {
		struct zsrc *src;
		struct gzdec_index *idx = build_ok(good_files[f], SPAN_1M, &src);

		ck_assert_msg(idx->usize == ORIG_SIZE, "%s: usize %llu", good_files[f],
			      (unsigned long long)idx->usize);
		ck_assert_int_eq(idx->trailing, GZDEC_TRAIL_NONE);
		gzdec_index_free(idx);
		zsrc_put(src);
	}
}
END_TEST

START_TEST(points_ordered)
{
	for (size_t f = 0; f < NGOOD; f++) {
		struct zsrc *src;
		struct gzdec_index *idx = build_ok(good_files[f], SPAN_MIN, &src);

		ck_assert_uint_eq(idx->span, SPAN_MIN);
		ck_assert_uint_ge(idx->npoints, 1);
		ck_assert_uint_eq(idx->points[0].uoff, 0);
		/* 5 MiB at >= 64 KiB spacing, but not one point per block either */
		ck_assert_uint_le(idx->npoints, ORIG_SIZE / SPAN_MIN + 1);
		ck_assert_uint_ge(idx->npoints, 20);
		for (size_t i = 0; i < idx->npoints; i++) {
			const struct gzdec_point *p = &idx->points[i];

			if (i)
				ck_assert_uint_ge(p->uoff, idx->points[i - 1].uoff + SPAN_MIN);
			ck_assert_uint_le(p->uoff, idx->usize);
			ck_assert_uint_le(p->coff, idx->csize);
			ck_assert_uint_le(p->bits, 7);
			ck_assert_uint_le(p->wsize, GZDEC_WINDOW);
			ck_assert(p->wsize == 0 || (p->wz && p->wzsize));
		}
		gzdec_index_free(idx);
		zsrc_put(src);
	}
}
END_TEST

/* A window holds only its own member's bytes: at a member start it is empty. */
START_TEST(window_per_member)
{
	struct zsrc *src;
	struct gzdec_index *idx = build_ok("multi.gz", SPAN_MIN, &src);

	ck_assert_uint_eq(idx->members, 4);
	for (size_t i = 0; i < idx->npoints; i++) {
		const struct gzdec_point *p = &idx->points[i];
		uint64_t start = p->uoff >= M2 ? M2 : p->uoff >= M1 ? M1 : 0;
		uint64_t want = p->uoff - start < GZDEC_WINDOW ? p->uoff - start : GZDEC_WINDOW;

		ck_assert_msg(p->wsize == want, "point %zu at %llu: wsize %u, want %llu", i,
			      (unsigned long long)p->uoff, p->wsize, (unsigned long long)want);
	}
	gzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

START_TEST(every_chunk)
{
	for (size_t f = 0; f < NGOOD; f++) {
		struct zsrc *src;
		struct gzdec_index *idx = build_ok(good_files[f], SPAN_MIN, &src);

		for (size_t i = 0; i < idx->npoints; i++)
			expect_extract(src, idx, i, chunk_end(idx, i) - idx->points[i].uoff, g_data,
				       good_files[f]);
		gzdec_index_free(idx);
		zsrc_put(src);
	}
}
END_TEST

START_TEST(into_next_chunk)
{
	for (size_t f = 0; f < NGOOD; f++) {
		struct zsrc *src;
		struct gzdec_index *idx = build_ok(good_files[f], SPAN_MIN, &src);

		for (size_t i = 0; i + 1 < idx->npoints; i++) {
			uint64_t end = chunk_end(idx, i + 1);
			uint64_t len = chunk_end(idx, i) + 4099 - idx->points[i].uoff;

			if (idx->points[i].uoff + len > end)
				len = end - idx->points[i].uoff;
			expect_extract(src, idx, i, len, g_data, good_files[f]);
			/* and a short read that stops inside the first chunk */
			expect_extract(src, idx, i, 1, g_data, good_files[f]);
		}
		gzdec_index_free(idx);
		zsrc_put(src);
	}
}
END_TEST

/* From every point to the end crosses every later member boundary. */
START_TEST(across_members)
{
	static const char *const files[] = { "multi.gz", "bgz.gz" };

	for (size_t f = 0; f < 2; f++) {
		struct zsrc *src;
		struct gzdec_index *idx = build_ok(files[f], SPAN_1M, &src);

		ck_assert_uint_gt(idx->members, 3);
		for (size_t i = 0; i < idx->npoints; i++)
			expect_extract(src, idx, i, idx->usize - idx->points[i].uoff, g_data,
				       files[f]);
		gzdec_index_free(idx);
		zsrc_put(src);
	}
}
END_TEST

START_TEST(bgzf_members)
{
	struct zsrc *src;
	struct gzdec_index *idx = build_ok("bgz.gz", SPAN_1M, &src);

	/* 0xff00-byte blocks plus the empty EOF marker member; no point per member */
	ck_assert_uint_eq(idx->members, (ORIG_SIZE + 0xff00 - 1) / 0xff00 + 1);
	ck_assert_uint_le(idx->npoints, ORIG_SIZE / SPAN_1M + 1);
	gzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

struct walker {
	const struct gzdec_index *idx;
	size_t stride; /* each thread walks the chunks in its own order */
	size_t bad;
};

static void *thread_main(void *arg)
{
	struct walker *w = arg;
	const struct gzdec_index *idx = w->idx;
	unsigned char *buf = malloc(idx->usize);
	char path[PATH_MAX];
	struct zsrc *src = NULL;
	int fd;

	path_of(path, sizeof(path), "g6.gz");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || zsrc_local(fd, &src) || !buf)
		w->bad++;
	for (size_t k = 0; !w->bad && k < idx->npoints; k++) {
		size_t i = (k * w->stride + w->stride) % idx->npoints;
		size_t len = (size_t)(chunk_end(idx, i) - idx->points[i].uoff);
		struct zerr err;

		if (gzdec_extract(src, idx, i, buf, len, &err) != (ssize_t)len ||
		    memcmp(buf, g_data + idx->points[i].uoff, len))
			w->bad++;
	}
	zsrc_put(src);
	free(buf);
	return NULL;
}

START_TEST(threads_share_index)
{
	static const size_t strides[4] = { 1, 3, 5, 7 };
	struct walker w[4];
	pthread_t t[4];
	struct zsrc *src;
	struct gzdec_index *idx = build_ok("g6.gz", SPAN_MIN, &src);

	for (int i = 0; i < 4; i++) {
		w[i] = (struct walker){ .idx = idx, .stride = strides[i] };
		ck_assert_int_eq(pthread_create(&t[i], NULL, thread_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_uint_eq(w[i].bad, 0);
	}
	gzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

static void expect_fail(const char *name, const char *msg_part, uint64_t coff_min,
			uint64_t coff_max)
{
	struct gzdec_index *idx = (void *)1;
	struct zerr err;
	struct zsrc *src;
	int ret = build(name, SPAN_1M, &src, &idx, &err);

	ck_assert_msg(ret == -EINVAL, "%s: %d (%s)", name, ret, err.msg);
	if (msg_part)
		ck_assert_msg(strstr(err.msg, msg_part), "%s: message '%s', want '%s'", name,
			      err.msg, msg_part);
	ck_assert_msg(err.coff >= coff_min && err.coff <= coff_max,
		      "%s: coff %llu not in [%llu, %llu]", name, (unsigned long long)err.coff,
		      (unsigned long long)coff_min, (unsigned long long)coff_max);
	zsrc_put(src);
}

START_TEST(corrupt_deflate)
{
	long s = file_size("g6.gz");

	make_variant("g6.gz", "bad-mid.gz", -1, s / 2, 0x55);
	expect_fail("bad-mid.gz", NULL, 1, (uint64_t)s);
	make_variant("g6.gz", "bad-early.gz", -1, 40, 0x55);
	expect_fail("bad-early.gz", NULL, 1, (uint64_t)s);
}
END_TEST

START_TEST(corrupt_trailer)
{
	long s = file_size("g6.gz");
	long m = file_size("multi.gz");

	make_variant("g6.gz", "bad-crc.gz", -1, s - 8, 1);
	expect_fail("bad-crc.gz", "incorrect data check", (uint64_t)s - 8, (uint64_t)s);
	make_variant("g6.gz", "bad-isize.gz", -1, s - 4, 1);
	expect_fail("bad-isize.gz", "incorrect length check", (uint64_t)s - 4, (uint64_t)s);
	/* the first member's CRC: what follows must not matter */
	make_variant("multi.gz", "bad-crc1.gz", -1, file_size("m1.gz") - 8, 0x80);
	expect_fail("bad-crc1.gz", "incorrect data check", 1, (uint64_t)m);
}
END_TEST

/*
 * Damage inside a member is found at its end (the CRC32) or wherever
 * deflate trips, but it may be anywhere in the member: the message names
 * the member's start too.
 */
START_TEST(damage_names_its_member)
{
	long m1 = file_size("m1.gz"), m2 = file_size("m2.gz");
	struct gzdec_index *idx = NULL;
	struct zerr err;
	char want[64];
	struct zsrc *src;

	/* a flipped byte in the middle of the second member */
	make_variant("multi.gz", "bad-m2.gz", -1, m1 + m2 / 2, 0x01);
	ck_assert_int_eq(build("bad-m2.gz", SPAN_1M, &src, &idx, &err), -EINVAL);
	snprintf(want, sizeof(want), "in the member at %ld: ", m1);
	ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "message '%s', want '%s...'",
		      err.msg, want);
	ck_assert_uint_ge(err.coff, (uint64_t)(m1 + m2 / 2)); /* where it was found */
	zsrc_put(src);
	/* the first member's CRC32: found at its trailer, in the member at 0 */
	make_variant("multi.gz", "bad-crc1b.gz", -1, m1 - 8, 0x80);
	ck_assert_int_eq(build("bad-crc1b.gz", SPAN_1M, &src, &idx, &err), -EINVAL);
	ck_assert_msg(strncmp(err.msg, "in the member at 0: ", 20) == 0, "message '%s'", err.msg);
	ck_assert_uint_ge(err.coff, (uint64_t)(m1 - 8));
	zsrc_put(src);
}
END_TEST

START_TEST(truncated)
{
	long s = file_size("g6.gz");
	long m1 = file_size("m1.gz");

	make_variant("g6.gz", "cut-half.gz", s / 2, -1, 0);
	expect_fail("cut-half.gz", "unexpected end of file", (uint64_t)s / 2, (uint64_t)s / 2);
	make_variant("g6.gz", "cut-trailer.gz", s - 3, -1, 0);
	expect_fail("cut-trailer.gz", "unexpected end of file", (uint64_t)s - 3, (uint64_t)s - 3);
	make_variant("g6.gz", "cut-header.gz", 5, -1, 0);
	expect_fail("cut-header.gz", "unexpected end of file", 5, 5);
	make_variant("multi.gz", "cut-m2.gz", m1 + 1000, -1, 0);
	expect_fail("cut-m2.gz", "unexpected end of file", (uint64_t)m1 + 1000,
		    (uint64_t)m1 + 1000);
	/* a lone 1F after a member is the start of a magic, not garbage */
	make_variant("multi.gz", "cut-magic.gz", m1 + 1, -1, 0);
	expect_fail("cut-magic.gz", "unexpected end of file", 1, (uint64_t)m1 + 1);
	/* 1F 8B starts a member, which then must be valid */
	ck_assert_int_eq(sh("{ cat g6.gz; printf '\\037\\213garbage'; } > magic-garbage.gz"), 0);
	expect_fail("magic-garbage.gz", NULL, (uint64_t)s, (uint64_t)s + 9);
}
END_TEST

START_TEST(trailing_zeros)
{
	struct zsrc *src;
	struct gzdec_index *idx = build_ok("zeros.gz", SPAN_MIN, &src);

	ck_assert_int_eq(idx->trailing, GZDEC_TRAIL_ZEROS);
	ck_assert_uint_eq(idx->trail_off, (uint64_t)file_size("g6.gz"));
	ck_assert_uint_eq(idx->usize, ORIG_SIZE);
	ck_assert_uint_eq(idx->members, 1);
	expect_extract(src, idx, idx->npoints - 1, idx->usize - idx->points[idx->npoints - 1].uoff,
		       g_data, "zeros.gz");
	gzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

START_TEST(trailing_garbage)
{
	static const char *const files[] = { "garbage.gz", "zero-garbage.gz", "magic-junk.gz" };

	for (size_t f = 0; f < 3; f++) {
		struct zsrc *src;
		struct gzdec_index *idx = build_ok(files[f], SPAN_MIN, &src);

		ck_assert_int_eq(idx->trailing, GZDEC_TRAIL_GARBAGE);
		ck_assert_uint_eq(idx->trail_off, (uint64_t)file_size("g6.gz"));
		ck_assert_uint_eq(idx->usize, ORIG_SIZE);
		expect_extract(src, idx, idx->npoints - 1,
			       idx->usize - idx->points[idx->npoints - 1].uoff, g_data, files[f]);
		gzdec_index_free(idx);
		zsrc_put(src);
	}
}
END_TEST

START_TEST(not_gzip)
{
	expect_fail("emptyfile.gz", "unexpected end of file", 0, 0);
	expect_fail("notgz.gz", "not in gzip format", 0, 0);
}
END_TEST

START_TEST(empty_input)
{
	unsigned char c;
	struct zerr err;
	struct zsrc *src;
	struct gzdec_index *idx = build_ok("empty.gz", SPAN_MIN, &src);

	ck_assert_uint_eq(idx->usize, 0);
	ck_assert_uint_ge(idx->npoints, 1);
	ck_assert_uint_eq(idx->members, 1);
	ck_assert_int_eq(gzdec_extract(src, idx, 0, &c, 0, &err), 0);
	ck_assert_int_eq(gzdec_extract(src, idx, 0, &c, 1, &err), -EINVAL);
	gzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

START_TEST(extract_bad_args)
{
	unsigned char c[16];
	struct zerr err;
	struct zsrc *src;
	struct gzdec_index *idx = build_ok("g6.gz", SPAN_MIN, &src);
	size_t last = idx->npoints - 1;
	uint64_t rest = idx->usize - idx->points[last].uoff;

	ck_assert_int_eq(gzdec_extract(src, idx, idx->npoints, c, 1, &err), -EINVAL);
	ck_assert_int_eq(gzdec_extract(src, idx, last, c, (size_t)rest + 1, &err), -EINVAL);
	ck_assert_int_eq(gzdec_extract(src, idx, last, c, sizeof(c), NULL), (ssize_t)sizeof(c));
	gzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/* The file shrinks after indexing: extract notices and says -EIO. */
START_TEST(file_changed)
{
	unsigned char *buf = malloc(ORIG_SIZE);
	char path[PATH_MAX];
	struct zerr err;
	struct zsrc *src;
	struct gzdec_index *idx;
	size_t last;

	ck_assert_int_eq(sh("cp g6.gz changing.gz"), 0);
	idx = build_ok("changing.gz", SPAN_MIN, &src);
	last = idx->npoints - 1;
	path_of(path, sizeof(path), "changing.gz");
	ck_assert_int_eq(truncate(path, (off_t)idx->points[last].coff + 100), 0);
	ck_assert_int_eq(gzdec_extract(src, idx, last, buf,
				       (size_t)(idx->usize - idx->points[last].uoff), &err),
			 -EIO);
	ck_assert_msg(strstr(err.msg, "unexpected end of file"), "message '%s'", err.msg);
	/* other deflate data in its place: inflate fails or the bytes differ, never a crash */
	ck_assert_int_eq(sh("tail -c +7 g1.gz > changing.gz"), 0);
	for (size_t i = 0; i < idx->npoints; i++) {
		size_t len = (size_t)(chunk_end(idx, i) - idx->points[i].uoff);
		ssize_t n = gzdec_extract(src, idx, i, buf, len, &err);

		ck_assert(n == -EIO ||
			  (n == (ssize_t)len && memcmp(buf, g_data + idx->points[i].uoff, len)));
	}
	gzdec_index_free(idx);
	zsrc_put(src);
	free(buf);
}
END_TEST

START_TEST(span_clamped)
{
	struct zsrc *src;
	struct gzdec_index *idx = build_ok("g6.gz", 0, &src);

	ck_assert_uint_eq(idx->span, SPAN_MIN);
	gzdec_index_free(idx);
	zsrc_put(src);
	idx = build_ok("g6.gz", UINT64_MAX, &src);
	ck_assert_uint_eq(idx->span, GZDEC_MAX_SPAN);
	ck_assert_uint_eq(idx->npoints, 1);
	expect_extract(src, idx, 0, ORIG_SIZE, g_data, "g6.gz");
	gzdec_index_free(idx);
	zsrc_put(src);
	gzdec_index_free(NULL);
}
END_TEST

/* ------------------------------------------------------------ streaming */

static const size_t odd_sizes[] = { 1, 7, 4093, 65537, 3, 100003, 32768, 2 };
#define NODD (sizeof(odd_sizes) / sizeof(odd_sizes[0]))

/*
 * Streams len bytes from point i in odd-sized reads into a buffer, checking
 * tell and the return of every read; returns the buffer (caller frees).
 */
static unsigned char *stream_read(struct zsrc *src, const struct gzdec_index *idx, size_t i,
				  size_t len, size_t first, const char *name)
{
	unsigned char *buf = malloc(len ? len : 1);
	struct gzdec_dec *d = (void *)1;
	struct zerr err = { 0 };
	size_t got = 0, k = first;

	ck_assert_ptr_nonnull(buf);
	ck_assert_msg(gzdec_dec_open(idx, i, &d, &err) == 0, "%s: open %zu: %s", name, i, err.msg);
	ck_assert_uint_eq(gzdec_dec_tell(d), 0);
	while (got < len) {
		size_t want = odd_sizes[k++ % NODD];
		ssize_t n;

		if (want > len - got)
			want = len - got;
		n = gzdec_dec_read(d, src, buf + got, want, &err);
		ck_assert_msg(n == (ssize_t)want, "%s: point %zu at +%zu: read %zu gave %zd: %s",
			      name, i, got, want, n, err.msg);
		got += want;
		ck_assert_uint_eq(gzdec_dec_tell(d), got);
	}
	gzdec_dec_close(d);
	return buf;
}

/* From every checkpoint, streaming in odd pieces gives what extract gives. */
START_TEST(stream_equals_extract)
{
	for (size_t f = 0; f < NGOOD; f++) {
		struct zsrc *src;
		struct gzdec_index *idx = build_ok(good_files[f], SPAN_MIN, &src);

		for (size_t i = 0; i < idx->npoints; i++) {
			/* into the next chunk, so the reads cross a checkpoint */
			uint64_t end = chunk_end(idx, i + 1 < idx->npoints ? i + 1 : i);
			size_t len = (size_t)(end - idx->points[i].uoff);
			unsigned char *ext = malloc(len ? len : 1), *str;
			struct zerr err = { 0 };

			ck_assert_ptr_nonnull(ext);
			ck_assert_int_eq(gzdec_extract(src, idx, i, ext, len, &err), (ssize_t)len);
			str = stream_read(src, idx, i, len, i, good_files[f]);
			ck_assert_msg(memcmp(ext, str, len) == 0,
				      "%s: point %zu: stream != extract", good_files[f], i);
			ck_assert_msg(memcmp(str, g_data + idx->points[i].uoff, len) == 0,
				      "%s: point %zu: wrong bytes", good_files[f], i);
			free(ext);
			free(str);
		}
		gzdec_index_free(idx);
		zsrc_put(src);
	}
}
END_TEST

/* One decoder from a checkpoint to the very end, across every later member. */
START_TEST(stream_to_end)
{
	static const char *const files[] = { "multi.gz", "bgz.gz", "zeros.gz", "garbage.gz" };

	for (size_t f = 0; f < 4; f++) {
		struct zsrc *src;
		struct gzdec_index *idx = build_ok(files[f], SPAN_1M, &src);

		for (size_t i = 0; i < idx->npoints; i += 2) {
			size_t len = (size_t)(idx->usize - idx->points[i].uoff);
			unsigned char *str = stream_read(src, idx, i, len, 3, files[f]), c;
			struct gzdec_dec *d;
			struct zerr err = { 0 };

			ck_assert_msg(memcmp(str, g_data + idx->points[i].uoff, len) == 0,
				      "%s: point %zu: wrong bytes", files[f], i);
			free(str);
			/* a read past the end is short, then 0, and never an error */
			ck_assert_int_eq(gzdec_dec_open(idx, i, &d, &err), 0);
			str = malloc(len + 10);
			ck_assert_ptr_nonnull(str);
			ck_assert_int_eq(gzdec_dec_read(d, src, str, len + 10, &err), (ssize_t)len);
			ck_assert_int_eq(gzdec_dec_read(d, src, &c, 1, &err), 0);
			ck_assert_uint_eq(gzdec_dec_tell(d), len);
			gzdec_dec_close(d);
			free(str);
		}
		gzdec_index_free(idx);
		zsrc_put(src);
	}
}
END_TEST

START_TEST(stream_bad_args)
{
	struct gzdec_dec *d = (void *)1;
	struct zerr err = { 0 };
	struct zsrc *src;
	struct gzdec_index *idx = build_ok("g6.gz", SPAN_MIN, &src);

	ck_assert_int_eq(gzdec_dec_open(idx, idx->npoints, &d, &err), -EINVAL);
	ck_assert_ptr_null(d);
	ck_assert_msg(err.msg[0], "no message");
	d = (void *)1;
	ck_assert_int_eq(gzdec_dec_open(NULL, 0, &d, &err), -EINVAL);
	ck_assert_ptr_null(d);
	gzdec_dec_close(NULL);
	gzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/* A file that shrinks under a decoder: -EIO, then -EIO for good. */
START_TEST(stream_file_changed)
{
	unsigned char *buf = malloc(ORIG_SIZE);
	char path[PATH_MAX];
	struct gzdec_dec *d;
	struct zerr err = { 0 };
	struct zsrc *src;
	struct gzdec_index *idx;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(sh("cp g6.gz changing2.gz"), 0);
	idx = build_ok("changing2.gz", SPAN_1M, &src);
	ck_assert_int_eq(gzdec_dec_open(idx, 0, &d, &err), 0);
	ck_assert_int_eq(gzdec_dec_read(d, src, buf, 100000, &err), 100000);
	path_of(path, sizeof(path), "changing2.gz");
	ck_assert_int_eq(truncate(path, 200000), 0);
	ck_assert_int_eq(gzdec_dec_read(d, src, buf, ORIG_SIZE, &err), -EIO);
	ck_assert_msg(strstr(err.msg, "unexpected end of file"), "message '%s'", err.msg);
	ck_assert_int_eq(gzdec_dec_read(d, src, buf, 1, &err), -EIO);
	gzdec_dec_close(d);
	gzdec_index_free(idx);
	zsrc_put(src);
	free(buf);
}
END_TEST

/* --------------------------------------- one deflate block, hand-written */

struct bitw {
	FILE *f;
	uint64_t acc;
	unsigned n;
	uint64_t bytes;
};

static void put_bits(struct bitw *w, uint32_t v, unsigned n)
{
	w->acc |= (uint64_t)v << w->n;
	w->n += n;
	while (w->n >= 8) {
		fputc((int)(w->acc & 0xFF), w->f);
		w->acc >>= 8;
		w->n -= 8;
		w->bytes++;
	}
}

/* A Huffman code goes out most significant bit first. */
static void put_code(struct bitw *w, uint32_t code, unsigned len)
{
	uint32_t r = 0;

	for (unsigned i = 0; i < len; i++)
		r |= ((code >> i) & 1u) << (len - 1 - i);
	put_bits(w, r, len);
}

/* Literal/length symbol sym in the fixed code of RFC 1951 3.2.6. */
static void put_fixed(struct bitw *w, unsigned sym)
{
	if (sym < 144)
		put_code(w, 0x30 + sym, 8);
	else if (sym < 256)
		put_code(w, 0x190 + sym - 144, 9);
	else if (sym < 280)
		put_code(w, sym - 256, 7);
	else
		put_code(w, 0xC0 + sym - 280, 8);
}

static const unsigned short len_base[29] = { 3,	 4,  5,	 6,   7,   8,	9,   10,  11, 13,
					     15, 17, 19, 23,  27,  31,	35,  43,  51, 59,
					     67, 83, 99, 115, 131, 163, 195, 227, 258 };
static const unsigned char len_extra[29] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
					     2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };
static const unsigned short dist_base[30] = { 1,    2,	  3,	4,     5,     7,    9,	  13,
					      17,   25,	  33,	49,    65,    97,   129,  193,
					      257,  385,  513,	769,   1025,  1537, 2049, 3073,
					      4097, 6145, 8193, 12289, 16385, 24577 };
static const unsigned char dist_extra[30] = { 0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
					      6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 };

static void put_match(struct bitw *w, unsigned len, unsigned dist)
{
	unsigned l = 28, d = 29;

	while (len_base[l] > len)
		l--;
	put_fixed(w, 257 + l);
	put_bits(w, len - len_base[l], len_extra[l]);
	while (dist_base[d] > dist)
		d--;
	put_code(w, d, 5);
	put_bits(w, dist - dist_base[d], dist_extra[d]);
}

static uint32_t crc_table[256];

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	if (!crc_table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t v = i;

			for (int k = 0; k < 8; k++)
				v = v >> 1 ^ (0xEDB88320u & -(v & 1));
			crc_table[i] = v;
		}
	while (n--)
		c = crc_table[(c ^ *p++) & 0xFF] ^ c >> 8;
	return ~c;
}

/*
 * Writes g_dir/name: a gzip member whose deflate data is one fixed-Huffman
 * block (BFINAL set) holding usize bytes of seeded literals and long
 * matches, as no ordinary compressor writes it.  Returns the bytes.
 */
static unsigned char *write_one_block(const char *name, size_t usize, uint64_t *csize)
{
	static const unsigned char hdr[10] = { 0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF };
	unsigned char *data = malloc(usize);
	char path[PATH_MAX];
	struct bitw w = { 0 };
	uint32_t x = 12345u, crc;
	size_t pos = 0;

	ck_assert_ptr_nonnull(data);
	path_of(path, sizeof(path), name);
	w.f = fopen(path, "wb");
	ck_assert_ptr_nonnull(w.f);
	fwrite(hdr, 1, sizeof(hdr), w.f);
	put_bits(&w, 1, 1); /* BFINAL */
	put_bits(&w, 1, 2); /* BTYPE 01: fixed Huffman codes */
	while (pos < usize) {
		x = x * 1103515245u + 12345u;
		if (pos < 3 || (x >> 26) == 0 || usize - pos < 3) {
			unsigned char c = (unsigned char)('a' + (x >> 8) % 26);

			put_fixed(&w, c);
			data[pos++] = c;
		} else {
			uint32_t y = x * 2654435761u;
			size_t len = 3 + (y >> 8) % 256, maxd = pos < 32768 ? pos : 32768;
			size_t dist = 1 + (size_t)(x >> 9) % maxd;

			if (len > usize - pos)
				len = usize - pos;
			put_match(&w, (unsigned)len, (unsigned)dist);
			for (size_t k = 0; k < len; k++, pos++)
				data[pos] = data[pos - dist];
		}
	}
	put_fixed(&w, 256); /* end of block */
	put_bits(&w, 0, 7); /* to a byte boundary */
	crc = crc32_of(data, usize);
	for (int i = 0; i < 4; i++)
		fputc((int)(crc >> (8 * i)) & 0xFF, w.f);
	for (int i = 0; i < 4; i++)
		fputc((int)((uint32_t)usize >> (8 * i)) & 0xFF, w.f);
	ck_assert_int_eq(fclose(w.f), 0);
	*csize = sizeof(hdr) + w.bytes + 8;
	return data;
}

/* Heap bytes in use now, as malloc counts them. */
static size_t heap_used(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/*
 * Issue 10 item 8: a deflate block far larger than any span.  The index can
 * have only the checkpoint at 0; a decoder streams the whole block in odd
 * pieces with correct bytes and a fixed amount of memory.
 */
START_TEST(stream_one_huge_block)
{
	const size_t usize = 48u << 20;
	uint64_t csize;
	unsigned char *want = write_one_block("oneblock.gz", usize, &csize), *buf;
	const size_t bufsize = 100003;
	struct gzdec_dec *d;
	struct zerr err = { 0 };
	size_t got = 0, k = 0, base, peak = 0;
	struct zsrc *src;
	struct gzdec_index *idx;

	ck_assert_uint_eq((uint64_t)file_size("oneblock.gz"), csize);
	ck_assert_uint_lt(csize, usize / 8);
	idx = build_ok("oneblock.gz", SPAN_MIN, &src);
	ck_assert_uint_eq(idx->usize, usize);
	/* no block boundary inside: 48 MiB at a 64 KiB span, one checkpoint */
	ck_assert_uint_eq(idx->npoints, 1);
	buf = malloc(bufsize);
	ck_assert_ptr_nonnull(buf);

	base = heap_used();
	ck_assert_int_eq(gzdec_dec_open(idx, 0, &d, &err), 0);
	while (got < usize) {
		size_t want_n = odd_sizes[k++ % NODD] * 3 + 1, used;
		ssize_t n;

		if (want_n > bufsize)
			want_n = bufsize;
		n = gzdec_dec_read(d, src, buf, want_n, &err);
		ck_assert_msg(n > 0, "at %zu: %zd %s", got, n, err.msg);
		ck_assert_msg(memcmp(buf, want + got, (size_t)n) == 0, "wrong bytes at %zu", got);
		got += (size_t)n;
		used = heap_used() - base;
		if (used > peak)
			peak = used;
	}
	ck_assert_uint_eq(got, usize);
	ck_assert_int_eq(gzdec_dec_read(d, src, buf, 1, &err), 0);
	gzdec_dec_close(d);
	fprintf(stderr, "check_gzdec: one decoder streamed %zu MiB with %zu bytes of heap\n",
		usize >> 20, peak);
	/* the documented ~72 KiB, with room for malloc's rounding */
	ck_assert_msg(peak <= 96u << 10, "a decoder holds %zu bytes of heap", peak);
	/* extract of a small piece deep in the block agrees */
	ck_assert_int_eq(gzdec_extract(src, idx, 0, buf, bufsize, &err), (ssize_t)bufsize);
	ck_assert(memcmp(buf, want, bufsize) == 0);
	free(buf);
	free(want);
	gzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/* ------------------------------------------------- span CRC32s (issue 19) */

#define STORED_BLOCK 65535u

/*
 * Writes g_dir/name: one gzip member holding the first len bytes of g_data
 * in stored (level 0) deflate blocks of STORED_BLOCK bytes, so that byte u
 * of the output is byte stored_coff(u) of the file.
 */
static void write_stored(const char *name, size_t len)
{
	static const unsigned char hdr[10] = { 0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3 };
	char path[PATH_MAX];
	uint32_t crc = crc32_of(g_data, len);
	FILE *f;

	path_of(path, sizeof(path), name);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fwrite(hdr, 1, sizeof(hdr), f);
	for (size_t off = 0; off < len; off += STORED_BLOCK) {
		size_t n = len - off < STORED_BLOCK ? len - off : STORED_BLOCK;
		unsigned char bh[5] = { off + n == len, (unsigned char)n, (unsigned char)(n >> 8),
					(unsigned char)~n, (unsigned char)(~n >> 8) };

		fwrite(bh, 1, sizeof(bh), f);
		fwrite(g_data + off, 1, n, f);
	}
	for (int i = 0; i < 4; i++)
		fputc((int)(crc >> (8 * i)) & 0xFF, f);
	for (int i = 0; i < 4; i++)
		fputc((int)(len >> (8 * i)) & 0xFF, f);
	ck_assert_int_eq(fclose(f), 0);
}

static uint64_t stored_coff(uint64_t u)
{
	return 10 + u / STORED_BLOCK * (STORED_BLOCK + 5) + 5 + u % STORED_BLOCK;
}

/*
 * The file changes after indexing in a way inflate cannot notice: one
 * stored byte in the middle of span 2.  Every read that reaches the end of
 * that span fails with EIO naming it, whole or in pieces, alone or from an
 * earlier checkpoint; the spans around it still read right.
 */
START_TEST(span_crc_mismatch)
{
	unsigned char *buf = malloc(ORIG_SIZE);
	char path[PATH_MAX], want[160];
	struct gzdec_index *idx;
	struct gzdec_dec *d;
	struct zerr err = { 0 };
	uint64_t u, s2, e2;
	unsigned char c;
	ssize_t n = 0;
	struct zsrc *src;
	int wfd;

	ck_assert_ptr_nonnull(buf);
	write_stored("stored.gz", 1u << 20);
	idx = build_ok("stored.gz", SPAN_MIN, &src);
	ck_assert_uint_ge(idx->npoints, 5);
	s2 = idx->points[2].uoff;
	e2 = chunk_end(idx, 2);
	u = s2 + (e2 - s2) / 2;
	path_of(path, sizeof(path), "stored.gz");
	wfd = open(path, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(wfd, 0);
	c = g_data[u] ^ 0x20;
	ck_assert_int_eq(pwrite(wfd, &c, 1, (off_t)stored_coff(u)), 1);
	close(wfd);
	snprintf(want, sizeof(want),
		 "span at offset %llu does not match the checksum the index pass recorded",
		 (unsigned long long)s2);

	/* whole: none of its bytes come back */
	n = gzdec_extract(src, idx, 2, buf, (size_t)(e2 - s2), &err);
	ck_assert_msg(n == -EIO, "span 2 whole: %zd (%s), want -EIO", n, err.msg);
	ck_assert_msg(strstr(err.msg, want), "message '%s'", err.msg);
	ck_assert_uint_eq(err.coff, idx->points[2].coff);
	/* the neighbours are fine */
	expect_extract(src, idx, 1, (size_t)(s2 - idx->points[1].uoff), g_data, "stored.gz");
	expect_extract(src, idx, 3, (size_t)(chunk_end(idx, 3) - idx->points[3].uoff), g_data,
		       "stored.gz");
	/* from checkpoint 1, across span 1 and into span 2: the check comes at span 2's end */
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(gzdec_dec_open(idx, 1, &d, &err), 0);
	for (uint64_t at = idx->points[1].uoff; at < e2; at += (uint64_t)n) {
		n = gzdec_dec_read(d, src, buf, 4096, &err);
		if (n < 0)
			break;
		ck_assert_int_eq(n, 4096);
		ck_assert_msg(at + 4096 < e2,
			      "the read reaching %llu, past span 2's end, returned %zd",
			      (unsigned long long)(at + 4096), n);
	}
	ck_assert_int_eq(n, -EIO);
	ck_assert_msg(strstr(err.msg, want), "message '%s'", err.msg);
	ck_assert_int_eq(gzdec_dec_read(d, src, buf, 1, &err), -EIO);
	gzdec_dec_close(d);
	gzdec_index_free(idx);
	zsrc_put(src);
	free(buf);
}
END_TEST

/* -------------------------------------------------- header check's budget */

/* Writes a gzip header with FNAME whose NUL is its byte number hlen (so the
 * header is hlen bytes long), or no NUL at all when nul is 0, then a few
 * more bytes; total bytes in all. */
static void write_fname_header(const char *name, size_t hlen, int nul, size_t total)
{
	static const unsigned char hdr[10] = { 0x1F, 0x8B, 8, 0x08, 0, 0, 0, 0, 0, 0xFF };
	unsigned char chunk[65536];
	char path[PATH_MAX];
	size_t done = sizeof(hdr);
	FILE *f;

	path_of(path, sizeof(path), name);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fwrite(hdr, 1, sizeof(hdr), f);
	memset(chunk, 'n', sizeof(chunk));
	while (done < total) {
		size_t n = total - done < sizeof(chunk) ? total - done : sizeof(chunk);

		if (nul && done < hlen && hlen <= done + n)
			chunk[hlen - 1 - done] = 0;
		fwrite(chunk, 1, n, f);
		if (nul && done < hlen && hlen <= done + n)
			chunk[hlen - 1 - done] = 'n';
		done += n;
	}
	ck_assert_int_eq(fclose(f), 0);
}

/* Bytes this process has read with read/pread so far (/proc/self/io rchar). */
static uint64_t rchar(void)
{
	char buf[512];
	const char *p;
	ssize_t n;
	int iofd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(iofd, 0);
	n = read(iofd, buf, sizeof(buf) - 1);
	close(iofd);
	ck_assert_int_gt(n, 0);
	buf[n] = 0;
	p = strstr(buf, "rchar:");
	ck_assert_ptr_nonnull(p);
	return strtoull(p + 6, NULL, 10);
}

static int header_check_file(const char *name, struct zerr *err)
{
	uint64_t size;
	char path[PATH_MAX];
	struct zsrc *src;
	int ret;

	path_of(path, sizeof(path), name);
	src = open_file(path, &size);
	memset(err, 0, sizeof(*err));
	ret = gzdec_header_check(src, size, err);
	zsrc_put(src);
	return ret;
}

/* Issue 10 item 13: an FNAME without its NUL costs the budget, not the file. */
START_TEST(header_budget)
{
	struct zerr err;
	uint64_t before, read_bytes;
	int ret;

	/* the header ends exactly at the budget: accepted */
	write_fname_header("hdr-max.gz", GZDEC_HEADER_MAX, 1, GZDEC_HEADER_MAX + 100);
	ret = header_check_file("hdr-max.gz", &err);
	ck_assert_msg(ret == 0, "a %u-byte header: %d %s", GZDEC_HEADER_MAX, ret, err.msg);
	/* one byte more: unreadable, and said so */
	write_fname_header("hdr-over.gz", GZDEC_HEADER_MAX + 1, 1, GZDEC_HEADER_MAX + 100);
	ck_assert_int_eq(header_check_file("hdr-over.gz", &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "longer than"), "message '%s'", err.msg);
	/* no NUL in a short file: truncated */
	write_fname_header("hdr-short.gz", 0, 0, 5000);
	ck_assert_int_eq(header_check_file("hdr-short.gz", &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "unexpected end of file"), "message '%s'", err.msg);

	/* no NUL in 50 MB: refused after reading the budget, not the file */
	write_fname_header("hdr-huge.gz", 0, 0, 50u << 20);
	before = rchar();
	ret = header_check_file("hdr-huge.gz", &err);
	read_bytes = rchar() - before;
	ck_assert_int_eq(ret, -EINVAL);
	ck_assert_msg(read_bytes <= GZDEC_HEADER_MAX + 4096,
		      "header check read %llu bytes for a refused header",
		      (unsigned long long)read_bytes);
	ck_assert_msg(read_bytes >= GZDEC_HEADER_MAX, "read only %llu bytes",
		      (unsigned long long)read_bytes);
}
END_TEST

/* ----------------------------------------------------------- the corpus */

static int sha256_file(const char *path, char hex[65])
{
	char cmd[PATH_MAX + 32];
	FILE *p;
	int ok;

	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	ok = fscanf(p, "%64s", hex) == 1;
	return pclose(p) == 0 && ok ? 0 : -1;
}

/* Decodes all of name chunk by chunk and checks it against one row of EXPECTED.tsv. */
static void corpus_good(const char *dir, const char *name, const char *sha, const char *usize,
			const char *tags)
{
	char path[PATH_MAX], hex[65];
	unsigned char *all, *whole;
	struct gzdec_index *idx;
	struct zerr err;
	uint64_t size;
	const char *m;
	FILE *f;
	struct zsrc *src;
	int ret;

	join(path, sizeof(path), dir, name);
	src = open_file(path, &size);
	ret = gzdec_index_build(src, size, SPAN_MIN, &idx, &err);
	ck_assert_msg(ret == 0, "%s: %d %s at %llu", name, ret, err.msg,
		      (unsigned long long)err.coff);
	ck_assert_msg(idx->usize == strtoull(usize, NULL, 10), "%s: usize %llu, want %s", name,
		      (unsigned long long)idx->usize, usize);
	all = malloc(idx->usize + 1);
	whole = malloc(idx->usize + 1);
	ck_assert(all && whole);
	for (size_t i = 0; i < idx->npoints; i++) {
		size_t len = (size_t)(chunk_end(idx, i) - idx->points[i].uoff);

		ck_assert_msg(gzdec_extract(src, idx, i, all + idx->points[i].uoff, len, &err) ==
				      (ssize_t)len,
			      "%s: point %zu: %s", name, i, err.msg);
	}
	/* one call across every member */
	ck_assert_msg(gzdec_extract(src, idx, 0, whole, idx->usize, &err) == (ssize_t)idx->usize,
		      "%s: whole: %s", name, err.msg);
	ck_assert_msg(memcmp(all, whole, idx->usize) == 0, "%s: whole differs from chunks", name);

	path_of(path, sizeof(path), "corpus.out");
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(all, 1, idx->usize, f), idx->usize);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(sha256_file(path, hex), 0);
	ck_assert_msg(strcmp(hex, sha) == 0, "%s: sha256 %s, want %s", name, hex, sha);

	if (strstr(tags, "trailing-zero-padding"))
		ck_assert_msg(idx->trailing == GZDEC_TRAIL_ZEROS, "%s: trailing %d", name,
			      idx->trailing);
	else if (strstr(tags, "trailing-garbage"))
		ck_assert_msg(idx->trailing == GZDEC_TRAIL_GARBAGE, "%s: trailing %d", name,
			      idx->trailing);
	else
		ck_assert_msg(idx->trailing == GZDEC_TRAIL_NONE, "%s: trailing %d", name,
			      idx->trailing);
	m = strstr(tags, "members=");
	if (m && m[8] >= '0' && m[8] <= '9')
		ck_assert_msg(idx->members == strtoull(m + 8, NULL, 10),
			      "%s: %llu members, tags %s", name, (unsigned long long)idx->members,
			      tags);
	/* members are not points: 4096 tiny members, 4001 empty ones */
	ck_assert_uint_le(idx->npoints, idx->usize / SPAN_MIN + 1);

	free(all);
	free(whole);
	gzdec_index_free(idx);
	zsrc_put(src);
}

static void corpus_bad(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct gzdec_index *idx = (void *)1;
	struct zerr err = { 0 };
	uint64_t size;
	struct zsrc *src;
	int ret;

	join(path, sizeof(path), dir, name);
	src = open_file(path, &size);
	ret = gzdec_index_build(src, size, SPAN_MIN, &idx, &err);
	ck_assert_msg(ret == -EINVAL, "%s: build returned %d (%s), want -EINVAL", name, ret,
		      err.msg);
	ck_assert_ptr_null(idx);
	ck_assert_msg(err.msg[0], "%s: no message", name);
	ck_assert_uint_le(err.coff, size);
	zsrc_put(src);
}

START_TEST(corpus_table)
{
	char script[PATH_MAX], dir[PATH_MAX], path[PATH_MAX], line[4096];
	size_t rows = 0, good = 0, bad = 0;
	FILE *f;

	join(script, sizeof(script), g_corpus, "make-gzip-cases.sh");
	ck_assert_msg(access(script, R_OK) == 0, "corpus generator %s missing", script);
	path_of(dir, sizeof(dir), "corpus");
	ck_assert_msg(sh("bash '%s' '%s' 2>/dev/null", script, dir) == 0, "%s failed", script);
	join(path, sizeof(path), dir, "EXPECTED.tsv");
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		char *col[9] = { 0 }, *save = NULL;
		int n = 0;

		if (line[0] == '#')
			continue;
		line[strcspn(line, "\n")] = '\0';
		for (char *t = strtok_r(line, "\t", &save); t && n < 9;
		     t = strtok_r(NULL, "\t", &save))
			col[n++] = t;
		ck_assert_msg(n >= 7, "short row in %s", path);
		rows++;
		if (!strcmp(col[1], "error")) {
			corpus_bad(dir, col[0]);
			bad++;
		} else {
			corpus_good(dir, col[0], col[2], col[3], col[6]);
			good++;
		}
	}
	fclose(f);
	ck_assert_uint_ge(rows, 60);
	ck_assert_uint_ge(good, 30);
	ck_assert_uint_ge(bad, 30);
	/* one damaged member among three fails the whole file */
	corpus_bad(dir, "bad-crc-member2.gz");
}
END_TEST

/* ------------------------------------------------------------- salvage */

/* g_dir/name, read whole (zmtest_slurp). */
static unsigned char *slurp(const char *name, size_t *len)
{
	char path[PATH_MAX];

	path_of(path, sizeof(path), name);
	return zmtest_slurp(path, len);
}

/* What `gzip -dc` writes of g_dir/name before it gives up: the oracle. */
static unsigned char *zcat_of(const char *name, size_t *len)
{
	char out[PATH_MAX];

	snprintf(out, sizeof(out), "%s.zcat", name);
	/* its exit status is 1 for damaged input: only the bytes it wrote count */
	ck_assert_int_ge(sh("gzip -dc < %s > %s 2>/dev/null; true", name, out), 0);
	return slurp(out, len);
}

/* Collects a build's output, for the sink check. */
struct collect {
	unsigned char *buf;
	size_t len, cap;
	uint64_t last_point;
};

static void collect_output(void *ctx, const void *buf, size_t len)
{
	struct collect *c = ctx;

	if (c->len + len > c->cap) {
		c->cap = (c->len + len) * 2;
		c->buf = realloc(c->buf, c->cap);
		ck_assert_ptr_nonnull(c->buf);
	}
	memcpy(c->buf + c->len, buf, len);
	c->len += len;
}

static void collect_point(void *ctx, uint64_t uoff)
{
	((struct collect *)ctx)->last_point = uoff;
}

/*
 * Builds g_dir/name with GZDEC_SALVAGE and holds it to zcat's output: usize,
 * the sink's bytes, every checkpoint extracted to the end, one decoder
 * streamed in odd pieces from point 0 to the end and then returning 0.
 * damaged says whether zcat fails on it; verified is what must be
 * CRC-covered; cut says the damage is the file ending inside a member.
 * What must show is all of zcat's output for an undamaged or cut file,
 * else only its first verified bytes (the members that passed).  Returns
 * nothing; fails the test on any difference.
 */
static void expect_salvage(const char *name, uint64_t span, int damaged, uint64_t verified, int cut)
{
	struct collect c = { 0 };
	struct gzdec_sink sink = { collect_output, collect_point, &c, NULL };
	struct gzdec_index *idx = (void *)1;
	struct zerr err = { 0 }, rerr = { 0 };
	char path[PATH_MAX];
	unsigned char *want, *got, tail[16];
	struct gzdec_dec *d;
	size_t wlen, zlen;
	uint64_t size;
	struct zsrc *src;
	int ret;

	want = zcat_of(name, &zlen);
	wlen = damaged && !cut ? (size_t)verified : zlen;
	ck_assert_msg(wlen <= zlen, "%s: %llu verified, zcat gave %zu", name,
		      (unsigned long long)verified, zlen);
	path_of(path, sizeof(path), name);
	src = open_file(path, &size);
	ret = gzdec_index_build_opts(src, size, span, &sink, GZDEC_SALVAGE, &idx, &err);
	ck_assert_msg(ret == 0, "%s: salvage build %d: %s at %llu", name, ret, err.msg,
		      (unsigned long long)err.coff);
	ck_assert_msg(idx->usize == wlen, "%s: usize %llu, zcat gave %zu (%s at %llu)", name,
		      (unsigned long long)idx->usize, wlen, err.msg, (unsigned long long)err.coff);
	ck_assert_int_eq(idx->salvaged, damaged);
	if (damaged) {
		ck_assert_msg(err.msg[0], "%s: salvaged without a reason", name);
		ck_assert_uint_eq(idx->damage_coff, err.coff);
		ck_assert_uint_le(idx->damage_coff, size);
		ck_assert_int_eq(idx->trailing, GZDEC_TRAIL_NONE);
	}
	ck_assert_msg(idx->verified == verified, "%s: verified %llu, want %llu", name,
		      (unsigned long long)idx->verified, (unsigned long long)verified);
	ck_assert_uint_le(idx->verified, idx->usize);
	/* the observer saw the salvaged bytes first (and then what decoded of the bad member) */
	ck_assert_uint_ge(c.len, wlen);
	ck_assert_uint_le(c.len, zlen);
	ck_assert_msg(wlen == 0 || memcmp(c.buf, want, wlen) == 0, "%s: sink bytes differ", name);
	free(c.buf);
	/* no checkpoint at or after the damage */
	ck_assert_uint_ge(idx->npoints, 1);
	ck_assert_uint_eq(idx->points[0].uoff, 0);
	for (size_t i = 1; i < idx->npoints; i++)
		ck_assert_msg(idx->points[i].uoff < idx->usize, "%s: point %zu at %llu of %llu",
			      name, i, (unsigned long long)idx->points[i].uoff,
			      (unsigned long long)idx->usize);
	/* every checkpoint extracts to the end */
	for (size_t i = 0; i < idx->npoints; i++)
		expect_extract(src, idx, i, (size_t)(idx->usize - idx->points[i].uoff), want, name);
	/* one decoder from 0 to the end, in odd pieces; then it only says 0 */
	got = stream_read(src, idx, 0, wlen, 3, name);
	ck_assert_msg(memcmp(got, want, wlen) == 0, "%s: streamed bytes differ", name);
	free(got);
	ck_assert_int_eq(gzdec_dec_open(idx, idx->npoints - 1, &d, &rerr), 0);
	got = malloc(wlen + 1);
	ck_assert_ptr_nonnull(got);
	{
		size_t from = (size_t)idx->points[idx->npoints - 1].uoff, n = 0;
		ssize_t r;

		while ((r = gzdec_dec_read(d, src, got + n, wlen + 1 - n, &rerr)) > 0)
			n += (size_t)r;
		ck_assert_msg(r == 0, "%s: last point read: %zd %s", name, r, rerr.msg);
		ck_assert_uint_eq(n, wlen - from);
		ck_assert_int_eq(gzdec_dec_read(d, src, tail, sizeof(tail), &rerr), 0);
	}
	free(got);
	gzdec_dec_close(d);
	/* one byte past usize is refused (before anything is written to tail) */
	ck_assert_int_eq(gzdec_extract(src, idx, 0, tail, (size_t)idx->usize + 1, &rerr), -EINVAL);
	/* without the flag the same file fails (if damaged) or gives the same size */
	{
		struct gzdec_index *plain = (void *)1;
		struct zerr perr = { 0 };

		ret = gzdec_index_build(src, size, span, &plain, &perr);
		if (damaged) {
			ck_assert_int_eq(ret, -EINVAL);
			ck_assert_ptr_null(plain);
			ck_assert_str_eq(perr.msg, err.msg);
			ck_assert_uint_eq(perr.coff, err.coff);
		} else {
			ck_assert_int_eq(ret, 0);
			ck_assert_uint_eq(plain->usize, idx->usize);
			ck_assert_uint_eq(plain->npoints, idx->npoints);
			ck_assert_int_eq(plain->salvaged, 0);
			gzdec_index_free(plain);
		}
	}
	gzdec_index_free(idx);
	free(want);
	zsrc_put(src);
}

/* Uncompressed bytes of multi.gz's members wholly inside its first cut bytes. */
static uint64_t multi_verified(long cut)
{
	long e1 = file_size("m1.gz"), e2 = e1 + file_size("m2.gz");

	if (cut >= e2)
		return M2; /* the empty member needs 20 more bytes, but adds nothing */
	return cut >= e1 ? M1 : 0;
}

/* Cut at every 10% (and at a few awkward places): what zcat recovers, no more. */
START_TEST(salvage_truncated)
{
	long s = file_size("g6.gz"), m = file_size("multi.gz");
	long e1 = file_size("m1.gz");
	char name[64];

	for (int p = 1; p <= 9; p++) {
		snprintf(name, sizeof(name), "s-g6-%d.gz", p);
		make_variant("g6.gz", name, s * p / 10, -1, 0);
		expect_salvage(name, SPAN_MIN, 1, 0, 1);
		snprintf(name, sizeof(name), "s-multi-%d.gz", p);
		make_variant("multi.gz", name, m * p / 10, -1, 0);
		expect_salvage(name, SPAN_MIN, 1, multi_verified(m * p / 10), 1);
	}
	/* in the trailer: all the data, none of it verified */
	make_variant("g6.gz", "s-trailer.gz", s - 3, -1, 0);
	expect_salvage("s-trailer.gz", SPAN_1M, 1, 0, 1);
	/* right after the header: nothing decodes yet, still a (0-byte) salvage */
	make_variant("g6.gz", "s-hdr.gz", 11, -1, 0);
	expect_salvage("s-hdr.gz", SPAN_1M, 1, 0, 1);
	/* at a member boundary plus the first magic byte; then inside the next header */
	make_variant("multi.gz", "s-magic.gz", e1 + 1, -1, 0);
	expect_salvage("s-magic.gz", SPAN_MIN, 1, M1, 1);
	make_variant("multi.gz", "s-hdr2.gz", e1 + 5, -1, 0);
	expect_salvage("s-hdr2.gz", SPAN_MIN, 1, M1, 1);
	/* exactly where a checkpoint is: that checkpoint must not survive */
	{
		struct zsrc *src;
		struct gzdec_index *idx = build_ok("g6.gz", SPAN_MIN, &src);
		size_t i = idx->npoints / 2;

		ck_assert_uint_gt(idx->npoints, 4);
		make_variant("g6.gz", "s-point.gz", (long)idx->points[i].coff, -1, 0);
		expect_salvage("s-point.gz", SPAN_MIN, 1, 0, 1);
		ck_assert_uint_eq(file_size("s-point.gz.zcat"), idx->points[i].uoff);
		gzdec_index_free(idx);
		zsrc_put(src);
	}
	/* exactly at a member boundary the file is whole: nothing is salvaged */
	make_variant("multi.gz", "s-whole.gz", e1, -1, 0);
	expect_salvage("s-whole.gz", SPAN_MIN, 0, M1, 0);
}
END_TEST

/* A flipped byte in the deflate data: the members before it, a prefix of zcat's bytes. */
START_TEST(salvage_corrupt)
{
	static const int masks[] = { 0x55, 0x01, 0x80, 0xff };
	long s = file_size("g6.gz"), m = file_size("multi.gz");
	long e1 = file_size("m1.gz"), e2 = e1 + file_size("m2.gz");
	char name[64];

	for (int k = 0; k < 4; k++) {
		long off = s / 2 + k * 7919;

		snprintf(name, sizeof(name), "c-g6-%d.gz", k);
		make_variant("g6.gz", name, -1, off, masks[k]);
		expect_salvage(name, SPAN_MIN, 1, 0, 0);
		/* in member 2 of multi.gz: member 1 verified */
		off = e1 + (e2 - e1) / 3 + k * 4099;
		snprintf(name, sizeof(name), "c-multi-%d.gz", k);
		make_variant("multi.gz", name, -1, off, masks[k]);
		expect_salvage(name, SPAN_MIN, 1, M1, 0);
	}
	/* the last member of multi.gz: members 1 to 3 verified */
	make_variant("multi.gz", "c-multi-last.gz", -1, m - 5000, 0x55);
	expect_salvage("c-multi-last.gz", SPAN_1M, 1, M2, 0);
	/* a bad header of member 2 (reserved FLG bit) */
	make_variant("multi.gz", "c-hdr2.gz", -1, e1 + 3, 0x80);
	expect_salvage("c-hdr2.gz", SPAN_MIN, 1, M1, 0);
}
END_TEST

/* A bad CRC32 or ISIZE: the member's data is dropped with it; the members before show. */
START_TEST(salvage_bad_crc)
{
	long s = file_size("g6.gz"), e1 = file_size("m1.gz");

	make_variant("g6.gz", "k-crc.gz", -1, s - 8, 1);
	expect_salvage("k-crc.gz", SPAN_MIN, 1, 0, 0);
	make_variant("g6.gz", "k-isize.gz", -1, s - 4, 1);
	expect_salvage("k-isize.gz", SPAN_MIN, 1, 0, 0);
	make_variant("multi.gz", "k-crc1.gz", -1, e1 - 8, 0x80);
	expect_salvage("k-crc1.gz", SPAN_MIN, 1, 0, 0);
	make_variant("multi.gz", "k-crc2.gz", -1, e1 + file_size("m2.gz") - 6, 0x10);
	expect_salvage("k-crc2.gz", SPAN_1M, 1, M1, 0);
}
END_TEST

/* Undamaged files, trailing data included, are what they are without the flag. */
START_TEST(salvage_undamaged)
{
	static const char *const files[] = { "g6.gz",	     "multi.gz",   "bgz.gz",
					     "zeros.gz",     "garbage.gz", "zero-garbage.gz",
					     "magic-junk.gz" };

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++)
		expect_salvage(files[f], SPAN_MIN, 0, ORIG_SIZE, 0);
}
END_TEST

/* What is not gzip, or damaged before any data, still fails with the flag. */
START_TEST(salvage_refused)
{
	static const char *const files[] = { "notgz.gz", "emptyfile.gz", "s-cut5.gz",
					     "s-badflg.gz" };
	struct gzdec_index *idx;
	struct zerr err;
	char path[PATH_MAX];
	uint64_t size;
	struct zsrc *src;

	make_variant("g6.gz", "s-cut5.gz", 5, -1, 0);
	make_variant("g6.gz", "s-badflg.gz", -1, 3, 0x80);
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		path_of(path, sizeof(path), files[f]);
		src = open_file(path, &size);
		idx = (void *)1;
		memset(&err, 0, sizeof(err));
		ck_assert_msg(gzdec_index_build_opts(src, size, SPAN_MIN, NULL, GZDEC_SALVAGE, &idx,
						     &err) == -EINVAL,
			      "%s", files[f]);
		ck_assert_ptr_null(idx);
		ck_assert(err.msg[0]);
		zsrc_put(src);
	}
	path_of(path, sizeof(path), "g6.gz");
	src = open_file(path, &size);
	idx = (void *)1;
	ck_assert_int_eq(gzdec_index_build_opts(src, size, SPAN_MIN, NULL, 0x2, &idx, &err),
			 -EINVAL);
	ck_assert_ptr_null(idx);
	zsrc_put(src);
}
END_TEST

/* ------------------------------------------------------------- fixtures */

static int write_text(const char *path)
{
	static const char *const words[] = {
		"zmount", "gzip",	"deflate", "window", "member", "block",	  "the",    "of",
		"a",	  "checkpoint", "inflate", "span",   "offset", "trailer", "header", "crc",
		"and",	  "random",	"access",  "fuse",   "read",   "byte",	  "bits",   "index",
	};
	uint32_t x = 20240601;
	size_t n = 0, col = 0;
	FILE *f;

	g_data = malloc(ORIG_SIZE);
	if (!g_data)
		return -1;
	while (n < ORIG_SIZE) {
		char w[32];
		int len;

		x = x * 1103515245u + 12345u;
		if ((x >> 28) == 0)
			len = snprintf(w, sizeof(w), "%u", x >> 9);
		else
			len = snprintf(w, sizeof(w), "%s", words[(x >> 16) % 24]);
		col += (size_t)len + 1;
		w[len++] = col > 72 ? '\n' : ' ';
		if (col > 72)
			col = 0;
		for (int i = 0; i < len && n < ORIG_SIZE; i++)
			g_data[n++] = (unsigned char)w[i];
	}
	f = fopen(path, "wb");
	if (!f)
		return -1;
	n = fwrite(g_data, 1, ORIG_SIZE, f);
	return fclose(f) == 0 && n == ORIG_SIZE ? 0 : -1;
}

static int make_fixtures(void)
{
	char path[PATH_MAX];
	int ret;

	path_of(path, sizeof(path), "orig");
	if (write_text(path))
		return -1;
	ret = sh("gzip -n -6 -c orig > g6.gz && gzip -n -1 -c orig > g1.gz && "
		 "head -c %u orig | gzip -n > m1.gz && "
		 "tail -c +%u orig | head -c %u | gzip -n -9 > m2.gz && "
		 ": | gzip -n > empty.gz && tail -c +%u orig | gzip -n -1 > m4.gz && "
		 "cat m1.gz m2.gz empty.gz m4.gz > multi.gz && "
		 "pigz -n -i -p 2 -c orig > pigzi.gz && bgzip -c < orig > bgz.gz && "
		 "{ cat g6.gz; head -c 1000 /dev/zero; } > zeros.gz && "
		 "{ cat g6.gz; printf 'not gzip\\n'; } > garbage.gz && "
		 "{ cat g6.gz; printf '\\000\\001'; } > zero-garbage.gz && "
		 "{ cat g6.gz; printf '\\037Ajunk'; } > magic-junk.gz && "
		 ": > emptyfile.gz && head -c 1000 orig > notgz.gz",
		 M1, M1 + 1, M2 - M1, M2 + 1);
	return ret == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	Suite *s = suite_create("gzdec");
	TCase *tc = tcase_create("core");
	char probe[PATH_MAX];
	SRunner *sr;
	int failed, have_corpus;

	g_corpus = argc > 1 ? argv[1] : getenv("ZMOUNT_CORPUS");
#ifdef ZMOUNT_CORPUS_DEFAULT
	if (!g_corpus)
		g_corpus = ZMOUNT_CORPUS_DEFAULT;
#endif
	if (!g_corpus)
		g_corpus = "";
	join(probe, sizeof(probe), g_corpus, "make-gzip-cases.sh");
	have_corpus = access(probe, R_OK) == 0;
	if (!have_corpus)
		fprintf(stderr,
			"check_gzdec: SKIP: corpus not found (%s: %s); pass CORPUS_DIR, "
			"set ZMOUNT_CORPUS or configure with -DZMOUNT_CORPUS=\n",
			probe, strerror(errno));
	snprintf(g_dir, sizeof(g_dir), "%s/check_gzdec.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(g_dir) || make_fixtures()) {
		fprintf(stderr, "check_gzdec: cannot make fixtures in %s\n", g_dir);
		return 1;
	}

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, usize_matches);
	tcase_add_test(tc, points_ordered);
	tcase_add_test(tc, window_per_member);
	tcase_add_test(tc, every_chunk);
	tcase_add_test(tc, into_next_chunk);
	tcase_add_test(tc, across_members);
	tcase_add_test(tc, bgzf_members);
	tcase_add_test(tc, threads_share_index);
	tcase_add_test(tc, corrupt_deflate);
	tcase_add_test(tc, corrupt_trailer);
	tcase_add_test(tc, damage_names_its_member);
	tcase_add_test(tc, truncated);
	tcase_add_test(tc, trailing_zeros);
	tcase_add_test(tc, trailing_garbage);
	tcase_add_test(tc, not_gzip);
	tcase_add_test(tc, empty_input);
	tcase_add_test(tc, extract_bad_args);
	tcase_add_test(tc, file_changed);
	tcase_add_test(tc, span_clamped);
	tcase_add_test(tc, stream_equals_extract);
	tcase_add_test(tc, stream_to_end);
	tcase_add_test(tc, stream_bad_args);
	tcase_add_test(tc, stream_file_changed);
	tcase_add_test(tc, span_crc_mismatch);
	tcase_add_test(tc, stream_one_huge_block);
	tcase_add_test(tc, header_budget);
	tcase_add_test(tc, salvage_truncated);
	tcase_add_test(tc, salvage_corrupt);
	tcase_add_test(tc, salvage_bad_crc);
	tcase_add_test(tc, salvage_undamaged);
	tcase_add_test(tc, salvage_refused);
	suite_add_tcase(s, tc);
	if (have_corpus) {
		TCase *tcc = tcase_create("corpus");

		tcase_set_timeout(tcc, 600);
		tcase_add_test(tcc, corpus_table);
		suite_add_tcase(s, tcc);
	}

	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	free(g_data);
	sh("cd / && rm -rf '%s'", g_dir);
	if (failed)
		return 1;
	if (!have_corpus) {
		fprintf(stderr, "check_gzdec: SKIP: corpus_table did not run: no corpus\n");
		return 77;
	}
	return 0;
}
