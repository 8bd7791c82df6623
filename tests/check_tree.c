/* SPDX-License-Identifier: MIT */
/*
 * Tests for fs/tree.c and fs/beneath.c: beneath_open_file opens only the regular file it was
 * told about (never a FIFO, device, symlink or another inode swapped in),
 * listings re-check their probed candidates, listings stay in their byte
 * budget, and resolved paths are heap strings.  Fixtures are made in a
 * temp dir; only gzip candidates are used, so no archive table is needed.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "beneath.h"
#include "tree.h"
#include "zmtest.h"

static char dir[PATH_MAX];

static void setup(void)
{
	strcpy(dir, "/tmp/check_tree.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	zmtest_sh(dir, "rm -rf '%s'", dir);
}

static void lstat_rel(const char *rel, struct stat *st)
{
	char p[PATH_MAX];

	zmtest_join(p, sizeof(p), dir, rel);
	ck_assert_int_eq(lstat(p, st), 0);
}

static int root_fd(void)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	return fd;
}

START_TEST(open_file_opens_the_regular_file_it_was_told_about)
{
	struct stat want, now;
	int root, fd, fl;

	ck_assert_int_eq(zmtest_sh(dir, "mkdir -p a && echo hello > a/f"), 0);
	lstat_rel("a/f", &want);
	root = root_fd();
	fd = beneath_open_file(root, "a/f", &want, &now);
	ck_assert_int_ge(fd, 0);
	ck_assert(now.st_ino == want.st_ino && S_ISREG(now.st_mode));
	fl = fcntl(fd, F_GETFL);
	ck_assert_msg(!(fl & O_NONBLOCK), "reads of a regular file must block as usual");
	ck_assert_msg(fcntl(fd, F_GETFD) & FD_CLOEXEC, "O_CLOEXEC");
	close(fd);
	close(root);
}
END_TEST

START_TEST(open_file_refuses_a_fifo_swapped_in_without_blocking)
{
	struct stat want;
	int root;

	ck_assert_int_eq(zmtest_sh(dir, "echo x > f"), 0);
	lstat_rel("f", &want);
	ck_assert_int_eq(zmtest_sh(dir, "rm f && mkfifo f"), 0);
	root = root_fd();
	/* Would block forever (no writer) if it were opened for reading. */
	ck_assert_int_eq(beneath_open_file(root, "f", &want, NULL), -ESTALE);
	close(root);
}
END_TEST

START_TEST(open_file_refuses_a_device_symlink_or_other_inode)
{
	struct stat want;
	int root, ret;

	ck_assert_int_eq(zmtest_sh(dir, "echo x > f && echo y > target"), 0);
	lstat_rel("f", &want);
	root = root_fd();
	ck_assert_int_eq(zmtest_sh(dir, "echo x > g && mv g f"), 0); /* another inode */
	ck_assert_int_eq(beneath_open_file(root, "f", &want, NULL), -ESTALE);
	ck_assert_int_eq(zmtest_sh(dir, "rm f && ln -s target f"), 0);
	ret = beneath_open_file(root, "f", &want, NULL);
	ck_assert_msg(ret == -ESTALE || ret == -ELOOP, "symlink: got %d", ret);
	if (geteuid() == 0) {
		char p[PATH_MAX];

		zmtest_join(p, sizeof(p), dir, "f");
		ck_assert_int_eq(unlink(p), 0);
		ck_assert_int_eq(mknod(p, S_IFCHR | 0644, makedev(1, 3)), 0);
		ck_assert_int_eq(beneath_open_file(root, "f", &want, NULL), -ESTALE);
	}
	/* A node that is not a regular file is never opened at all. */
	lstat_rel(".", &want);
	ck_assert_int_eq(beneath_open_file(root, "target", &want, NULL), -EACCES);
	close(root);
}
END_TEST

START_TEST(resolve_gives_heap_paths)
{
	struct tree_node n;
	struct tree *t;

	ck_assert_int_eq(zmtest_sh(dir, "mkdir -p a/b/c && echo z > a/b/c/plain.txt"), 0);
	ck_assert_int_eq(tree_new(dir, NULL, &t), 0);
	ck_assert_int_eq(tree_resolve(t, "/a/b/c/plain.txt", &n), 0);
	ck_assert_str_eq(n.rel, "a/b/c/plain.txt");
	ck_assert_int_eq(n.kind, TREE_PASS);
	tree_node_clear(&n);
	ck_assert_ptr_null(n.rel);
	ck_assert_int_eq(tree_resolve(t, "/", &n), 0);
	ck_assert_str_eq(n.rel, ".");
	tree_node_clear(&n);
	ck_assert_int_eq(tree_resolve(t, "/a/none", &n), -ENOENT);
	ck_assert_ptr_null(n.rel);
	tree_free(t);
}
END_TEST

START_TEST(listing_rechecks_a_candidate_changed_in_place)
{
	struct stat before, after;
	struct tree_node n;
	struct tree *t;

	ck_assert_int_eq(zmtest_sh(dir, "touch x.gz && echo hello world | gzip -c > ../%s.src",
				   strrchr(dir, '/') + 1),
			 0);
	ck_assert_int_eq(tree_new(dir, NULL, &t), 0);
	tree_set_limits(t, 0, 0.1);
	ck_assert_int_eq(tree_resolve(t, "/x", &n), -ENOENT);
	ck_assert_int_eq(tree_resolve(t, "/x.gz", &n), 0);
	tree_node_clear(&n);
	lstat_rel(".", &before);
	/* In place: the directory does not change. */
	ck_assert_int_eq(zmtest_sh(dir, "cat ../%s.src 1<> x.gz && rm ../%s.src",
				   strrchr(dir, '/') + 1, strrchr(dir, '/') + 1),
			 0);
	lstat_rel(".", &after);
	ck_assert(before.st_mtim.tv_nsec == after.st_mtim.tv_nsec &&
		  before.st_mtim.tv_sec == after.st_mtim.tv_sec);
	usleep(150 * 1000);
	ck_assert_int_eq(tree_resolve(t, "/x", &n), 0);
	ck_assert_int_eq(n.kind, TREE_ARCHIVE);
	ck_assert_str_eq(n.rel, "x.gz");
	tree_node_clear(&n);
	ck_assert_int_eq(tree_resolve(t, "/x.gz", &n), -ENOENT);
	{
		struct tree_stats s;

		tree_get_stats(t, &s);
		ck_assert_uint_eq(s.rebuilds, 1);
	}
	tree_free(t);
}
END_TEST

static int count(void *ctx, const char *name, const struct stat *st)
{
	(void)name;
	(void)st;
	++*(int *)ctx;
	return 0;
}

START_TEST(listings_stay_in_their_budget)
{
	struct tree_stats s;
	struct tree *t;
	int n = 0;

	ck_assert_int_eq(zmtest_sh(dir, "for d in 1 2 3 4; do mkdir d$d; for f in 1 2 3 4 5 6 7 8; "
					"do touch d$d/file$f; done; done"),
			 0);
	ck_assert_int_eq(tree_new(dir, NULL, &t), 0);
	tree_set_limits(t, 2000, 1); /* room for the root's listing and about one more */
	for (int d = 1; d <= 4; d++) {
		char p[32];

		snprintf(p, sizeof(p), "/d%d", d);
		ck_assert_int_eq(tree_list(t, p, count, &n), 0);
	}
	ck_assert_int_eq(n, 32);
	tree_get_stats(t, &s);
	ck_assert_uint_le(s.list_bytes, 2000);
	ck_assert_uint_lt(s.listings, 5);
	ck_assert_uint_ge(s.listings, 1);
	/* Dropped listings come back on demand. */
	n = 0;
	ck_assert_int_eq(tree_list(t, "/d1", count, &n), 0);
	ck_assert_int_eq(n, 8);
	/* A listing bigger than the budget still works, and is then the only one kept. */
	tree_set_limits(t, 1, 1);
	n = 0;
	ck_assert_int_eq(tree_list(t, "/d2", count, &n), 0);
	ck_assert_int_eq(n, 8);
	tree_get_stats(t, &s);
	ck_assert_uint_eq(s.listings, 1);
	tree_free(t);
}
END_TEST

/*
 * Open directories share the listing (one copy however many are open), a
 * pinned listing is not dropped for others, and a handle on a directory
 * that changed keeps the names it opened with.
 */
START_TEST(open_directories_share_one_listing)
{
	struct tree_dir *a, *b, *c;
	struct tree_stats s;
	struct stat st;
	struct tree *t;
	int n = 0;

	ck_assert_int_eq(zmtest_sh(dir, "mkdir d e && touch d/f1 d/f2 e/g"), 0);
	ck_assert_int_eq(tree_new(dir, NULL, &t), 0);
	tree_set_limits(t, 1, 1); /* every listing is over budget: only the newest is kept */
	ck_assert_int_eq(tree_opendir(t, "/d", &a), 0);
	ck_assert_int_eq(tree_opendir(t, "/d", &b), 0);
	ck_assert_ptr_eq(a, b);
	ck_assert_uint_eq(tree_dir_count(a), 2);
	ck_assert_str_eq(tree_dir_entry(a, 0, &st), "f1");
	ck_assert_int_eq(tree_opendir(t, "/d/f1", &c), -ENOTDIR);
	ck_assert_ptr_null(c);
	/* Listing e would drop d's listing, were it not open. */
	ck_assert_int_eq(tree_list(t, "/e", count, &n), 0);
	ck_assert_int_eq(tree_opendir(t, "/d", &c), 0);
	ck_assert_ptr_eq(c, a);
	tree_closedir(t, c);
	/* d changes: a new open sees it, the open ones keep their names. */
	ck_assert_int_eq(zmtest_sh(dir, "rm d/f1 && touch d/f3 d/f4"), 0);
	ck_assert_int_eq(tree_opendir(t, "/d", &c), 0);
	ck_assert_ptr_ne(c, a);
	ck_assert_uint_eq(tree_dir_count(c), 3);
	ck_assert_uint_eq(tree_dir_count(a), 2);
	ck_assert_str_eq(tree_dir_entry(b, 0, &st), "f1");
	tree_closedir(t, a);
	tree_closedir(t, b);
	tree_closedir(t, c);
	tree_closedir(t, NULL);
	tree_get_stats(t, &s);
	ck_assert_uint_eq(s.listings, 1);
	tree_free(t);
}
END_TEST

static Suite *tree_suite(void)
{
	Suite *s = suite_create("tree");
	TCase *tc = tcase_create("tree");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, open_file_opens_the_regular_file_it_was_told_about);
	tcase_add_test(tc, open_file_refuses_a_fifo_swapped_in_without_blocking);
	tcase_add_test(tc, open_file_refuses_a_device_symlink_or_other_inode);
	tcase_add_test(tc, resolve_gives_heap_paths);
	tcase_add_test(tc, listing_rechecks_a_candidate_changed_in_place);
	tcase_add_test(tc, listings_stay_in_their_budget);
	tcase_add_test(tc, open_directories_share_one_listing);
	tcase_set_timeout(tc, 20);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tree_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
