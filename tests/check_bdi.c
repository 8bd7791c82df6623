/* SPDX-License-Identifier: MIT */
/*
 * Tests for fs/bdi.c: which mountinfo line is our mount, and whether SRC is
 * already zmount-mounted on MNT.  The mountinfo texts are made up, shaped
 * like the kernel's.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bdi.h"

#define ROOTFS "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"

static int find(const char *text, const char *mnt, const char *src, char *dev, size_t size)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int ret;

	ck_assert_ptr_nonnull(f);
	ret = bdi_find_dev(f, mnt, src, dev, size);
	fclose(f);
	return ret;
}

static int mounted(const char *text, const char *mnt, const char *src)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int ret;

	ck_assert_ptr_nonnull(f);
	ret = bdi_is_mounted(f, mnt, src);
	fclose(f);
	return ret;
}

START_TEST(finds_the_only_mount)
{
	char dev[32] = "";
	const char *mi =
		ROOTFS "40 22 0:40 / /mnt/v ro,nosuid,nodev,relatime - fuse.zmount /srv/logs "
		       "ro,user_id=0,group_id=0,default_permissions\n";

	ck_assert_int_eq(find(mi, "/mnt/v", "/srv/logs", dev, sizeof(dev)), 0);
	ck_assert_str_eq(dev, "0:40");
}
END_TEST

/*
 * A mount made beneath ours after it (MOVE_MOUNT_BENEATH) has a higher id,
 * so it is listed last, and ours now sits on it: the last line at the path
 * is not ours.
 */
START_TEST(a_mount_beneath_ours_listed_last_is_not_taken)
{
	char dev[32] = "";
	const char *mi = ROOTFS "40 41 0:40 / /mnt/v ro,relatime - fuse.zmount /srv/logs ro\n"
				"41 22 0:41 / /mnt/v rw,relatime - tmpfs tmpfs rw\n";

	ck_assert_int_eq(find(mi, "/mnt/v", "/srv/logs", dev, sizeof(dev)), 0);
	ck_assert_str_eq(dev, "0:40");
}
END_TEST

/* Something mounted on top of ours before we got to it: leave it alone. */
START_TEST(a_mount_on_top_of_ours_is_left_alone)
{
	char dev[32] = "unset";
	const char *mi = ROOTFS "40 22 0:40 / /mnt/v ro,relatime - fuse.zmount /srv/logs ro\n"
				"41 40 0:41 / /mnt/v rw,relatime - tmpfs tmpfs rw\n";

	ck_assert_int_eq(find(mi, "/mnt/v", "/srv/logs", dev, sizeof(dev)), -ENOENT);
	ck_assert_str_eq(dev, "unset");
}
END_TEST

/* Our zmount stacked on another zmount of another SRC: the top one is ours. */
START_TEST(stacked_zmounts_pick_the_one_of_our_src)
{
	char dev[32] = "";
	const char *mi = ROOTFS "40 22 0:40 / /mnt/v ro,relatime - fuse.zmount /srv/other ro\n"
				"43 40 0:43 / /mnt/v ro,relatime - fuse.zmount /srv/logs ro\n";

	ck_assert_int_eq(find(mi, "/mnt/v", "/srv/logs", dev, sizeof(dev)), 0);
	ck_assert_str_eq(dev, "0:43");
	ck_assert_int_eq(find(mi, "/mnt/v", "/srv/other", dev, sizeof(dev)), -ENOENT);
}
END_TEST

START_TEST(other_paths_types_and_sources_do_not_count)
{
	char dev[32] = "";
	const char *mi = ROOTFS "40 22 0:40 / /mnt/v/sub ro,relatime - fuse.zmount /srv/logs ro\n"
				"41 22 0:41 / /mnt/vv ro,relatime - fuse.zmount /srv/logs ro\n"
				"42 22 0:42 / /mnt/v ro,relatime - fuse.sshfs /srv/logs ro\n";

	ck_assert_int_eq(find(mi, "/mnt/v", "/srv/logs", dev, sizeof(dev)), -ENOENT);
	ck_assert_int_eq(find(mi, "/mnt/v", "/srv/log", dev, sizeof(dev)), -ENOENT);
	ck_assert_int_eq(find(mi, "/nowhere", "/srv/logs", dev, sizeof(dev)), -ENOENT);
}
END_TEST

/* Optional fields (shared:N master:N) come before the "-". */
START_TEST(optional_fields_are_skipped)
{
	char dev[32] = "";
	const char *mi = ROOTFS
		"40 22 0:40 / /mnt/v ro,relatime shared:7 master:3 - fuse.zmount /srv/logs ro\n";

	ck_assert_int_eq(find(mi, "/mnt/v", "/srv/logs", dev, sizeof(dev)), 0);
	ck_assert_str_eq(dev, "0:40");
}
END_TEST

/* Space, tab, newline and backslash come escaped as \ooo. */
START_TEST(escaped_paths_match)
{
	char dev[32] = "";
	const char *mi =
		ROOTFS "40 22 0:40 / /mnt/my\\040view ro - fuse.zmount /srv/a\\040b,c\\134d ro\n";

	ck_assert_int_eq(find(mi, "/mnt/my view", "/srv/a b,c\\d", dev, sizeof(dev)), 0);
	ck_assert_str_eq(dev, "0:40");
	ck_assert_int_eq(mounted(mi, "/mnt/my view", "/srv/a b,c\\d"), 1);
}
END_TEST

/* Two copies of one mount by propagation share a device: fine; two devices: refuse. */
START_TEST(two_tops_need_one_device)
{
	char dev[32] = "";
	const char *same = ROOTFS "30 22 0:30 / /b rw - ext4 /dev/vdb rw\n"
				  "31 30 0:30 / /b rw - ext4 /dev/vdb rw\n"
				  "40 30 0:40 / /b/v ro - fuse.zmount /srv/logs ro\n"
				  "41 31 0:40 / /b/v ro - fuse.zmount /srv/logs ro\n";
	const char *two = ROOTFS "30 22 0:30 / /b rw - ext4 /dev/vdb rw\n"
				 "31 30 0:30 / /b rw - ext4 /dev/vdb rw\n"
				 "40 30 0:40 / /b/v ro - fuse.zmount /srv/logs ro\n"
				 "41 31 0:41 / /b/v ro - fuse.zmount /srv/logs ro\n";

	ck_assert_int_eq(find(same, "/b/v", "/srv/logs", dev, sizeof(dev)), 0);
	ck_assert_str_eq(dev, "0:40");
	ck_assert_int_eq(find(two, "/b/v", "/srv/logs", dev, sizeof(dev)), -EEXIST);
}
END_TEST

START_TEST(device_name_must_fit)
{
	char dev[4] = "";
	const char *mi = ROOTFS "40 22 0:400 / /mnt/v ro - fuse.zmount /srv/logs ro\n";

	ck_assert_int_eq(find(mi, "/mnt/v", "/srv/logs", dev, sizeof(dev)), -ENAMETOOLONG);
}
END_TEST

START_TEST(is_mounted_looks_through_the_stack)
{
	const char *mi = ROOTFS "40 22 0:40 / /mnt/v ro - fuse.zmount /srv/logs ro\n"
				"41 40 0:41 / /mnt/v rw - tmpfs tmpfs rw\n";

	ck_assert_int_eq(mounted(mi, "/mnt/v", "/srv/logs"), 1);
	ck_assert_int_eq(mounted(mi, "/mnt/v", "/srv/other"), 0);
	ck_assert_int_eq(mounted(mi, "/mnt", "/srv/logs"), 0);
	ck_assert_int_eq(mounted(ROOTFS, "/", "/dev/vda1"), 0); /* not a zmount */
	ck_assert_int_eq(mounted("garbage\n\n1 2\n", "/mnt/v", "/srv/logs"), 0);
	/* NULL: a zmount of any source */
	ck_assert_int_eq(mounted(mi, "/mnt/v", NULL), 1);
	ck_assert_int_eq(mounted(mi, "/mnt", NULL), 0);
	ck_assert_int_eq(mounted(ROOTFS, "/", NULL), 0);
}
END_TEST

static Suite *bdi_suite(void)
{
	Suite *s = suite_create("bdi");
	TCase *tc = tcase_create("mountinfo");

	tcase_add_test(tc, finds_the_only_mount);
	tcase_add_test(tc, a_mount_beneath_ours_listed_last_is_not_taken);
	tcase_add_test(tc, a_mount_on_top_of_ours_is_left_alone);
	tcase_add_test(tc, stacked_zmounts_pick_the_one_of_our_src);
	tcase_add_test(tc, other_paths_types_and_sources_do_not_count);
	tcase_add_test(tc, optional_fields_are_skipped);
	tcase_add_test(tc, escaped_paths_match);
	tcase_add_test(tc, two_tops_need_one_device);
	tcase_add_test(tc, device_name_must_fit);
	tcase_add_test(tc, is_mounted_looks_through_the_stack);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bdi_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
