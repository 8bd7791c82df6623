/* SPDX-License-Identifier: MIT */
/*
 * Tests for codec/gzdec.c.  main() writes about 5 MiB of pseudo-random text
 * into a fresh temporary directory and compresses it with gzip, pigz and
 * bgzip; the tests index and extract those files, and damaged copies of
 * them.  The corpus test runs the shared gzip case generator and holds
 * gzdec to every row of its EXPECTED.tsv.
 *
 * usage: check_gzdec [CORPUS_DIR]  (else $ZMOUNT_CORPUS, else /work/shared/corpus)
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gzdec.h"
#include "testutil.h"

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
#define sh(...) testutil_sh(g_dir, __VA_ARGS__)
#define join testutil_join

static void path_of(char *buf, size_t size, const char *name)
{
	join(buf, size, g_dir, name);
}

static int open_file(const char *path, uint64_t *size)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(fstat(fd, &st), 0);
	*size = (uint64_t)st.st_size;
	return fd;
}

/* Indexes g_dir/name; returns gzdec_index_build's result, *fd open either way. */
static int build(const char *name, uint64_t span, int *fd, struct gzdec_index **idx,
		 struct zerr *err)
{
	char path[PATH_MAX];
	uint64_t size;
	int ret;

	path_of(path, sizeof(path), name);
	*fd = open_file(path, &size);
	memset(err, 0, sizeof(*err));
	ret = gzdec_index_build(*fd, size, span, idx, err);
	if (ret == 0) {
		ck_assert_ptr_nonnull(*idx);
		ck_assert_uint_eq((*idx)->csize, size);
	} else {
		ck_assert_ptr_null(*idx);
		ck_assert_msg(err->msg[0], "%s: error %d without a message", name, ret);
	}
	return ret;
}

static struct gzdec_index *build_ok(const char *name, uint64_t span, int *fd)
{
	struct gzdec_index *idx;
	struct zerr err;
	int ret = build(name, span, fd, &idx, &err);

	ck_assert_msg(ret == 0, "%s: %d %s at %llu", name, ret, err.msg,
		      (unsigned long long)err.coff);
	return idx;
}

static uint64_t chunk_end(const struct gzdec_index *idx, size_t i)
{
	return i + 1 < idx->npoints ? idx->points[i + 1].uoff : idx->usize;
}

/* Extracts len bytes from point i and compares them with want + that point's uoff. */
static void expect_extract(int fd, const struct gzdec_index *idx, size_t i, size_t len,
			   const unsigned char *want, const char *name)
{
	unsigned char *buf = malloc(len ? len : 1);
	struct zerr err = {0};
	ssize_t n;

	ck_assert_ptr_nonnull(buf);
	n = gzdec_extract(fd, idx, i, buf, len, &err);
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
		int fd;

		path_of(path, sizeof(path), dst);
		fd = open(path, O_RDWR | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pread(fd, &c, 1, xoff), 1);
		c ^= (unsigned char)mask;
		ck_assert_int_eq(pwrite(fd, &c, 1, xoff), 1);
		close(fd);
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

static const char *const good_files[] = {"g6.gz", "g1.gz", "multi.gz", "pigzi.gz", "bgz.gz"};
#define NGOOD (sizeof(good_files) / sizeof(good_files[0]))

START_TEST(usize_matches)
{
	for (size_t f = 0; f < NGOOD; f++) {
		int fd;
		struct gzdec_index *idx = build_ok(good_files[f], SPAN_1M, &fd);

		ck_assert_msg(idx->usize == ORIG_SIZE, "%s: usize %llu", good_files[f],
			      (unsigned long long)idx->usize);
		ck_assert_int_eq(idx->trailing, GZDEC_TRAIL_NONE);
		gzdec_index_free(idx);
		close(fd);
	}
}
END_TEST

START_TEST(points_ordered)
{
	for (size_t f = 0; f < NGOOD; f++) {
		int fd;
		struct gzdec_index *idx = build_ok(good_files[f], SPAN_MIN, &fd);

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
		close(fd);
	}
}
END_TEST

/* A window holds only its own member's bytes: at a member start it is empty. */
START_TEST(window_per_member)
{
	int fd;
	struct gzdec_index *idx = build_ok("multi.gz", SPAN_MIN, &fd);

	ck_assert_uint_eq(idx->members, 4);
	for (size_t i = 0; i < idx->npoints; i++) {
		const struct gzdec_point *p = &idx->points[i];
		uint64_t start = p->uoff >= M2 ? M2 : p->uoff >= M1 ? M1 : 0;
		uint64_t want = p->uoff - start < GZDEC_WINDOW ? p->uoff - start : GZDEC_WINDOW;

		ck_assert_msg(p->wsize == want, "point %zu at %llu: wsize %u, want %llu", i,
			      (unsigned long long)p->uoff, p->wsize, (unsigned long long)want);
	}
	gzdec_index_free(idx);
	close(fd);
}
END_TEST

START_TEST(every_chunk)
{
	for (size_t f = 0; f < NGOOD; f++) {
		int fd;
		struct gzdec_index *idx = build_ok(good_files[f], SPAN_MIN, &fd);

		for (size_t i = 0; i < idx->npoints; i++)
			expect_extract(fd, idx, i, chunk_end(idx, i) - idx->points[i].uoff, g_data,
				       good_files[f]);
		gzdec_index_free(idx);
		close(fd);
	}
}
END_TEST

START_TEST(into_next_chunk)
{
	for (size_t f = 0; f < NGOOD; f++) {
		int fd;
		struct gzdec_index *idx = build_ok(good_files[f], SPAN_MIN, &fd);

		for (size_t i = 0; i + 1 < idx->npoints; i++) {
			uint64_t end = chunk_end(idx, i + 1);
			uint64_t len = chunk_end(idx, i) + 4099 - idx->points[i].uoff;

			if (idx->points[i].uoff + len > end)
				len = end - idx->points[i].uoff;
			expect_extract(fd, idx, i, len, g_data, good_files[f]);
			/* and a short read that stops inside the first chunk */
			expect_extract(fd, idx, i, 1, g_data, good_files[f]);
		}
		gzdec_index_free(idx);
		close(fd);
	}
}
END_TEST

/* From every point to the end crosses every later member boundary. */
START_TEST(across_members)
{
	static const char *const files[] = {"multi.gz", "bgz.gz"};

	for (size_t f = 0; f < 2; f++) {
		int fd;
		struct gzdec_index *idx = build_ok(files[f], SPAN_1M, &fd);

		ck_assert_uint_gt(idx->members, 3);
		for (size_t i = 0; i < idx->npoints; i++)
			expect_extract(fd, idx, i, idx->usize - idx->points[i].uoff, g_data,
				       files[f]);
		gzdec_index_free(idx);
		close(fd);
	}
}
END_TEST

START_TEST(bgzf_members)
{
	int fd;
	struct gzdec_index *idx = build_ok("bgz.gz", SPAN_1M, &fd);

	/* 0xff00-byte blocks plus the empty EOF marker member; no point per member */
	ck_assert_uint_eq(idx->members, (ORIG_SIZE + 0xff00 - 1) / 0xff00 + 1);
	ck_assert_uint_le(idx->npoints, ORIG_SIZE / SPAN_1M + 1);
	gzdec_index_free(idx);
	close(fd);
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
	int fd;

	path_of(path, sizeof(path), "g6.gz");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !buf)
		w->bad++;
	for (size_t k = 0; !w->bad && k < idx->npoints; k++) {
		size_t i = (k * w->stride + w->stride) % idx->npoints;
		size_t len = (size_t)(chunk_end(idx, i) - idx->points[i].uoff);
		struct zerr err;

		if (gzdec_extract(fd, idx, i, buf, len, &err) != (ssize_t)len ||
		    memcmp(buf, g_data + idx->points[i].uoff, len))
			w->bad++;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

START_TEST(threads_share_index)
{
	static const size_t strides[4] = {1, 3, 5, 7};
	struct walker w[4];
	pthread_t t[4];
	int fd;
	struct gzdec_index *idx = build_ok("g6.gz", SPAN_MIN, &fd);

	for (int i = 0; i < 4; i++) {
		w[i] = (struct walker){.idx = idx, .stride = strides[i]};
		ck_assert_int_eq(pthread_create(&t[i], NULL, thread_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_uint_eq(w[i].bad, 0);
	}
	gzdec_index_free(idx);
	close(fd);
}
END_TEST

static void expect_fail(const char *name, const char *msg_part, uint64_t coff_min,
			uint64_t coff_max)
{
	struct gzdec_index *idx = (void *)1;
	struct zerr err;
	int fd, ret = build(name, SPAN_1M, &fd, &idx, &err);

	ck_assert_msg(ret == -EINVAL, "%s: %d (%s)", name, ret, err.msg);
	if (msg_part)
		ck_assert_msg(strstr(err.msg, msg_part), "%s: message '%s', want '%s'", name,
			      err.msg, msg_part);
	ck_assert_msg(err.coff >= coff_min && err.coff <= coff_max,
		      "%s: coff %llu not in [%llu, %llu]", name, (unsigned long long)err.coff,
		      (unsigned long long)coff_min, (unsigned long long)coff_max);
	close(fd);
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
	int fd;
	struct gzdec_index *idx = build_ok("zeros.gz", SPAN_MIN, &fd);

	ck_assert_int_eq(idx->trailing, GZDEC_TRAIL_ZEROS);
	ck_assert_uint_eq(idx->trail_off, (uint64_t)file_size("g6.gz"));
	ck_assert_uint_eq(idx->usize, ORIG_SIZE);
	ck_assert_uint_eq(idx->members, 1);
	expect_extract(fd, idx, idx->npoints - 1, idx->usize - idx->points[idx->npoints - 1].uoff,
		       g_data, "zeros.gz");
	gzdec_index_free(idx);
	close(fd);
}
END_TEST

START_TEST(trailing_garbage)
{
	static const char *const files[] = {"garbage.gz", "zero-garbage.gz", "magic-junk.gz"};

	for (size_t f = 0; f < 3; f++) {
		int fd;
		struct gzdec_index *idx = build_ok(files[f], SPAN_MIN, &fd);

		ck_assert_int_eq(idx->trailing, GZDEC_TRAIL_GARBAGE);
		ck_assert_uint_eq(idx->trail_off, (uint64_t)file_size("g6.gz"));
		ck_assert_uint_eq(idx->usize, ORIG_SIZE);
		expect_extract(fd, idx, idx->npoints - 1,
			       idx->usize - idx->points[idx->npoints - 1].uoff, g_data, files[f]);
		gzdec_index_free(idx);
		close(fd);
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
	int fd;
	struct gzdec_index *idx = build_ok("empty.gz", SPAN_MIN, &fd);

	ck_assert_uint_eq(idx->usize, 0);
	ck_assert_uint_ge(idx->npoints, 1);
	ck_assert_uint_eq(idx->members, 1);
	ck_assert_int_eq(gzdec_extract(fd, idx, 0, &c, 0, &err), 0);
	ck_assert_int_eq(gzdec_extract(fd, idx, 0, &c, 1, &err), -EINVAL);
	gzdec_index_free(idx);
	close(fd);
}
END_TEST

START_TEST(extract_bad_args)
{
	unsigned char c[16];
	struct zerr err;
	int fd;
	struct gzdec_index *idx = build_ok("g6.gz", SPAN_MIN, &fd);
	size_t last = idx->npoints - 1;
	uint64_t rest = idx->usize - idx->points[last].uoff;

	ck_assert_int_eq(gzdec_extract(fd, idx, idx->npoints, c, 1, &err), -EINVAL);
	ck_assert_int_eq(gzdec_extract(fd, idx, last, c, (size_t)rest + 1, &err), -EINVAL);
	ck_assert_int_eq(gzdec_extract(fd, idx, last, c, sizeof(c), NULL), (ssize_t)sizeof(c));
	gzdec_index_free(idx);
	close(fd);
}
END_TEST

/* The file shrinks after indexing: extract notices and says -EIO. */
START_TEST(file_changed)
{
	unsigned char *buf = malloc(ORIG_SIZE);
	char path[PATH_MAX];
	struct zerr err;
	int fd;
	struct gzdec_index *idx;
	size_t last;

	ck_assert_int_eq(sh("cp g6.gz changing.gz"), 0);
	idx = build_ok("changing.gz", SPAN_MIN, &fd);
	last = idx->npoints - 1;
	path_of(path, sizeof(path), "changing.gz");
	ck_assert_int_eq(truncate(path, (off_t)idx->points[last].coff + 100), 0);
	ck_assert_int_eq(gzdec_extract(fd, idx, last, buf,
				       (size_t)(idx->usize - idx->points[last].uoff), &err),
			 -EIO);
	ck_assert_msg(strstr(err.msg, "unexpected end of file"), "message '%s'", err.msg);
	/* other deflate data in its place: inflate fails or the bytes differ, never a crash */
	ck_assert_int_eq(sh("tail -c +7 g1.gz > changing.gz"), 0);
	for (size_t i = 0; i < idx->npoints; i++) {
		size_t len = (size_t)(chunk_end(idx, i) - idx->points[i].uoff);
		ssize_t n = gzdec_extract(fd, idx, i, buf, len, &err);

		ck_assert(n == -EIO ||
			  (n == (ssize_t)len && memcmp(buf, g_data + idx->points[i].uoff, len)));
	}
	gzdec_index_free(idx);
	close(fd);
	free(buf);
}
END_TEST

START_TEST(span_clamped)
{
	int fd;
	struct gzdec_index *idx = build_ok("g6.gz", 0, &fd);

	ck_assert_uint_eq(idx->span, SPAN_MIN);
	gzdec_index_free(idx);
	close(fd);
	idx = build_ok("g6.gz", UINT64_MAX, &fd);
	ck_assert_uint_eq(idx->span, GZDEC_MAX_SPAN);
	ck_assert_uint_eq(idx->npoints, 1);
	expect_extract(fd, idx, 0, ORIG_SIZE, g_data, "g6.gz");
	gzdec_index_free(idx);
	close(fd);
	gzdec_index_free(NULL);
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
	int fd, ret;

	join(path, sizeof(path), dir, name);
	fd = open_file(path, &size);
	ret = gzdec_index_build(fd, size, SPAN_MIN, &idx, &err);
	ck_assert_msg(ret == 0, "%s: %d %s at %llu", name, ret, err.msg,
		      (unsigned long long)err.coff);
	ck_assert_msg(idx->usize == strtoull(usize, NULL, 10), "%s: usize %llu, want %s", name,
		      (unsigned long long)idx->usize, usize);
	all = malloc(idx->usize + 1);
	whole = malloc(idx->usize + 1);
	ck_assert(all && whole);
	for (size_t i = 0; i < idx->npoints; i++) {
		size_t len = (size_t)(chunk_end(idx, i) - idx->points[i].uoff);

		ck_assert_msg(gzdec_extract(fd, idx, i, all + idx->points[i].uoff, len, &err) ==
				      (ssize_t)len,
			      "%s: point %zu: %s", name, i, err.msg);
	}
	/* one call across every member */
	ck_assert_msg(gzdec_extract(fd, idx, 0, whole, idx->usize, &err) == (ssize_t)idx->usize,
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
	close(fd);
}

static void corpus_bad(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct gzdec_index *idx = (void *)1;
	struct zerr err = {0};
	uint64_t size;
	int fd, ret;

	join(path, sizeof(path), dir, name);
	fd = open_file(path, &size);
	ret = gzdec_index_build(fd, size, SPAN_MIN, &idx, &err);
	ck_assert_msg(ret == -EINVAL, "%s: build returned %d (%s), want -EINVAL", name, ret,
		      err.msg);
	ck_assert_ptr_null(idx);
	ck_assert_msg(err.msg[0], "%s: no message", name);
	ck_assert_uint_le(err.coff, size);
	close(fd);
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
		char *col[9] = {0}, *save = NULL;
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
	TCase *tc = tcase_create("core"), *tcc = tcase_create("corpus");
	SRunner *sr;
	int failed;

	g_corpus = argc > 1 ? argv[1] : getenv("ZMOUNT_CORPUS");
	if (!g_corpus)
		g_corpus = "/work/shared/corpus";
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
	tcase_add_test(tc, truncated);
	tcase_add_test(tc, trailing_zeros);
	tcase_add_test(tc, trailing_garbage);
	tcase_add_test(tc, not_gzip);
	tcase_add_test(tc, empty_input);
	tcase_add_test(tc, extract_bad_args);
	tcase_add_test(tc, file_changed);
	tcase_add_test(tc, span_clamped);
	suite_add_tcase(s, tc);
	tcase_set_timeout(tcc, 600);
	tcase_add_test(tcc, corpus_table);
	suite_add_tcase(s, tcc);

	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	free(g_data);
	sh("cd / && rm -rf '%s'", g_dir);
	return failed ? 1 : 0;
}
