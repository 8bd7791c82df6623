/* SPDX-License-Identifier: MIT */
/*
 * Tests for source/s3tree.c, with the mount's naming rules (names.h): the
 * visible tree of a bucket prefix built from a list of keys (no network):
 * directories, stripped names, collisions, odd keys, inode numbers and the
 * memory a snapshot holds.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "s3tree.h"

/* The builder's lines about keys not shown, as the mount's log would have them. */
static void say_line(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "%s\n", line);
}

static const struct s3tree_rules rules = { names_resolve_suffix, say_line, NULL };

/* Builds a tree of prefix from keys (NULL-terminated), each with ETag "e-KEY". */
static struct s3tree *build(const char *prefix, const char *const *keys)
{
	struct s3tree_build *b;
	struct s3tree *t;

	ck_assert_int_eq(s3tree_build_new("s3://bkt", prefix, &rules, &b), 0);
	for (size_t i = 0; keys[i]; i++) {
		struct s3_stat st = { .size = 100 + i, .mtime = 1700000000 };

		snprintf(st.etag, sizeof(st.etag), "\"e-%zu\"", strlen(keys[i]));
		ck_assert_int_eq(s3tree_build_add(b, keys[i], &st), 0);
	}
	ck_assert_int_eq(s3tree_build_finish(b, &t), 0);
	return t;
}

/* The names of directory path, as "name:kind name:kind ..." (kind d, a or r). */
static const char *listing(const struct s3tree *t, const char *path)
{
	static char out[4096];
	struct s3tree_ent d, e;
	size_t n = 0;

	ck_assert_int_eq(s3tree_resolve(t, path, &d), 0);
	ck_assert_int_eq(d.kind, S3TREE_DIR);
	out[0] = '\0';
	for (size_t i = 0; i < s3tree_dir_count(t, d.dir); i++) {
		s3tree_dir_entry(t, d.dir, i, &e);
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s:%c", n ? " " : "", e.name,
				      "dar"[e.kind]);
	}
	return out;
}

static void assert_key(const struct s3tree *t, const char *path, enum s3tree_kind kind,
		       const char *key)
{
	struct s3tree_ent e;
	int ret = s3tree_resolve(t, path, &e);

	ck_assert_msg(ret == 0, "%s: %s", path, strerror(-ret));
	ck_assert_int_eq(e.kind, kind);
	ck_assert_str_eq(e.key, key);
}

START_TEST(test_dirs)
{
	static const char *const keys[] = { "a/b/c.gz", "a/d", "e.xz", "f", "a/b/g.zst", NULL };
	struct s3tree *t = build("", keys);
	struct s3tree_ent e;
	struct s3tree_stats st;

	ck_assert_str_eq(listing(t, "/"), "a:d e:a f:r");
	ck_assert_str_eq(listing(t, "/a"), "b:d d:r");
	ck_assert_str_eq(listing(t, "/a/b"), "c:a g:a");
	assert_key(t, "/a/b/c", S3TREE_ARCHIVE, "a/b/c.gz");
	assert_key(t, "/e", S3TREE_ARCHIVE, "e.xz");
	assert_key(t, "/f", S3TREE_RAW, "f");
	ck_assert_int_eq(s3tree_resolve(t, "/a/b/c.gz", &e), -ENOENT);
	ck_assert_int_eq(s3tree_resolve(t, "/f/x", &e), -ENOTDIR);
	ck_assert_int_eq(s3tree_resolve(t, "/nope", &e), -ENOENT);
	ck_assert_int_eq(s3tree_resolve(t, "/a/b/c", &e), 0);
	ck_assert_uint_eq(e.st.size, 100);
	ck_assert_str_eq(e.st.etag, "\"e-8\"");
	s3tree_get_stats(t, &st);
	ck_assert_uint_eq(st.objects, 5);
	ck_assert_uint_eq(st.dirs, 3);
	s3tree_put(t);
}
END_TEST

/* "logs" lists "logs/": keys outside it (never listed by S3, but given here) are dropped. */
START_TEST(test_prefix)
{
	static const char *const keys[] = { "logs/x.gz", "logsother/y", "logs/", "logs/s/t", NULL };
	struct s3tree *t = build("logs", keys);
	struct s3tree_stats st;

	ck_assert_str_eq(listing(t, "/"), "s:d x:a");
	assert_key(t, "/x", S3TREE_ARCHIVE, "logs/x.gz");
	assert_key(t, "/s/t", S3TREE_RAW, "logs/s/t");
	s3tree_get_stats(t, &st);
	ck_assert_uint_eq(st.skipped, 1);
	ck_assert_uint_eq(st.markers, 1);
	s3tree_put(t);
}
END_TEST

/* The local rules (names.h): an existing name wins, the first bytewise of two archives wins. */
START_TEST(test_collisions)
{
	static const char *const keys[] = { "x.xz", "x.gz",  "y",     "y.gz",  "z.gz",
					    "z/in", "t.tgz", "u.zst", "u.tar", NULL };
	struct s3tree *t = build("", keys);

	ck_assert_str_eq(listing(t, "/"), "t.tar:a u:a u.tar:r x:a x.xz:r y:r y.gz:r z:d z.gz:r");
	assert_key(t, "/x", S3TREE_ARCHIVE, "x.gz");
	assert_key(t, "/x.xz", S3TREE_RAW, "x.xz");
	assert_key(t, "/y", S3TREE_RAW, "y");
	assert_key(t, "/y.gz", S3TREE_RAW, "y.gz");
	assert_key(t, "/z.gz", S3TREE_RAW, "z.gz");
	assert_key(t, "/t.tar", S3TREE_ARCHIVE, "t.tgz");
	s3tree_put(t);
}
END_TEST

START_TEST(test_odd_keys)
{
	char longseg[300];
	const char *keys[] = { "a//b", "./x",	 "a/../b",  "a/.", "..",  "a/b/",  "c/",     "k",
			       "k/v",  "ok/.gz", "ok/..gz", "m/",  "m/n", longseg, "w/.hid", NULL };
	struct s3tree *t;
	struct s3tree_stats st;
	struct s3tree_ent e;

	memset(longseg, 'L', sizeof(longseg) - 1);
	longseg[sizeof(longseg) - 1] = '\0';
	t = build("", keys);
	ck_assert_str_eq(listing(t, "/"), "a:d c:d k:d m:d ok:d w:d");
	ck_assert_str_eq(listing(t, "/a"), "b:d");
	ck_assert_str_eq(listing(t, "/a/b"), "");
	ck_assert_str_eq(listing(t, "/c"), "");
	ck_assert_str_eq(listing(t, "/k"), "v:r");
	ck_assert_str_eq(listing(t, "/m"), "n:r");
	/* ".gz" and "..gz" have no stem to show: they keep their names. */
	ck_assert_str_eq(listing(t, "/ok"), "..gz:r .gz:r");
	ck_assert_str_eq(listing(t, "/w"), ".hid:r");
	ck_assert_int_eq(s3tree_resolve(t, "/k", &e), 0);
	ck_assert_int_eq(e.kind, S3TREE_DIR);
	s3tree_get_stats(t, &st);
	ck_assert_uint_eq(st.skipped, 6); /* a//b ./x a/../b a/. .. and the long one */
	ck_assert_uint_eq(st.shadowed, 1);
	ck_assert_uint_eq(st.markers, 3);
	ck_assert_uint_eq(st.objects, 5);
	s3tree_put(t);
}
END_TEST

/* The server's order does not matter; neither does the order of the input. */
START_TEST(test_order)
{
	static const char *const fwd[] = { "a.c/y", "a/x.gz", "a0", "a/z", "a", "b/c/d", NULL };
	static const char *const rev[] = { "b/c/d", "a", "a/z", "a0", "a/x.gz", "a.c/y", NULL };
	struct s3tree *t1 = build("", fwd), *t2 = build("", rev);
	char l1[4096];

	snprintf(l1, sizeof(l1), "%s", listing(t1, "/"));
	ck_assert_str_eq(l1, "a:d a.c:d a0:r b:d");
	ck_assert_str_eq(listing(t2, "/"), l1);
	ck_assert_str_eq(listing(t1, "/a"), "x:a z:r");
	ck_assert_str_eq(listing(t2, "/a"), "x:a z:r");
	s3tree_put(t1);
	s3tree_put(t2);
}
END_TEST

/* An object's number follows its key and ETag; a directory's its path; the root is 1. */
START_TEST(test_inodes)
{
	struct s3tree_build *b;
	struct s3tree *t1, *t2;
	struct s3_stat st = { .size = 1, .etag = "\"one\"" };
	struct s3tree_ent e1, e2, d1, d2, r;

	ck_assert_int_eq(s3tree_build_new("s3://bkt", "", &rules, &b), 0);
	ck_assert_int_eq(s3tree_build_add(b, "d/f", &st), 0);
	ck_assert_int_eq(s3tree_build_finish(b, &t1), 0);
	ck_assert_int_eq(s3tree_build_new("s3://bkt", "", &rules, &b), 0);
	strcpy(st.etag, "\"two\"");
	ck_assert_int_eq(s3tree_build_add(b, "d/f", &st), 0);
	ck_assert_int_eq(s3tree_build_finish(b, &t2), 0);
	ck_assert_int_eq(s3tree_resolve(t1, "/d/f", &e1), 0);
	ck_assert_int_eq(s3tree_resolve(t2, "/d/f", &e2), 0);
	ck_assert_int_eq(s3tree_resolve(t1, "/d", &d1), 0);
	ck_assert_int_eq(s3tree_resolve(t2, "/d", &d2), 0);
	ck_assert_int_eq(s3tree_resolve(t1, "/", &r), 0);
	ck_assert_uint_ne(e1.ino, e2.ino);
	ck_assert_uint_eq(d1.ino, d2.ino);
	ck_assert_uint_ne(d1.ino, e1.ino);
	ck_assert_uint_eq(r.ino, 1);
	ck_assert_uint_gt(e1.ino, 1);
	s3tree_put(t1);
	s3tree_put(t2);
}
END_TEST

/* 10,000 objects in 100 directories cost what the header says, and lookups find each. */
START_TEST(test_memory)
{
	enum { N = 10000 };
	struct s3tree_build *b;
	struct s3tree *t;
	struct s3tree_stats st;
	struct s3tree_ent e;
	size_t bound = 1024, keys = 0;
	char key[64], path[64];

	ck_assert_int_eq(s3tree_build_new("s3://bkt", "p", &rules, &b), 0);
	for (int i = 0; i < N; i++) {
		struct s3_stat os = { .size = (uint64_t)i };

		snprintf(key, sizeof(key), "p/dir%02d/object-%05d.gz", i % 100, i);
		snprintf(os.etag, sizeof(os.etag), "\"%032x\"", i);
		ck_assert_int_eq(s3tree_build_add(b, key, &os), 0);
		bound += S3TREE_BYTES_PER_OBJECT + 2 * strlen(key) + strlen(os.etag);
		keys += strlen(key);
	}
	bound += 101 * (S3TREE_BYTES_PER_DIR + strlen("dir00"));
	ck_assert_int_eq(s3tree_build_finish(b, &t), 0);
	s3tree_get_stats(t, &st);
	ck_assert_uint_eq(st.objects, N);
	ck_assert_uint_eq(st.dirs, 101);
	ck_assert_msg(st.bytes <= bound, "%zu bytes for %d objects, bound %zu", st.bytes, N, bound);
	ck_assert_uint_eq(st.bytes, s3tree_bytes(t));
	for (int i = 0; i < N; i += 97) {
		snprintf(path, sizeof(path), "/dir%02d/object-%05d", i % 100, i);
		ck_assert_int_eq(s3tree_resolve(t, path, &e), 0);
		ck_assert_uint_eq(e.st.size, (uint64_t)i);
	}
	ck_assert_uint_eq(s3tree_dir_count(t, 1), N / 100);
	s3tree_put(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3tree");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_dirs);
	tcase_add_test(tc, test_prefix);
	tcase_add_test(tc, test_collisions);
	tcase_add_test(tc, test_odd_keys);
	tcase_add_test(tc, test_order);
	tcase_add_test(tc, test_inodes);
	tcase_add_test(tc, test_memory);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
