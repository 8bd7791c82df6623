/* SPDX-License-Identifier: MIT */
/*
 * Tests for codec/zcrc.c: zcrc32 must give zlib's crc32 for every length,
 * alignment and start value, and must take the carry-less path wherever
 * the CPU has it (its self-check turning it off would go unnoticed by the
 * values alone).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "zcrc.h"

START_TEST(equals_zlib_for_every_length_and_alignment)
{
	enum { MAX = 4200 };
	unsigned char *buf = malloc(MAX + 16);
	uint32_t start = 0;

	ck_assert_ptr_nonnull(buf);
	srand(7);
	for (size_t i = 0; i < MAX + 16; i++)
		buf[i] = (unsigned char)rand();
	for (size_t len = 0; len <= MAX; len++) {
		for (size_t off = 0; off < 16; off += 5) {
			uint32_t want = (uint32_t)crc32(start, buf + off, (uInt)len);

			ck_assert_msg(zcrc32(start, buf + off, len) == want,
				      "length %zu at offset %zu from %08x: %08x, zlib %08x", len,
				      off, start, zcrc32(start, buf + off, len), want);
			start = want ^ (uint32_t)len; /* every start value differs */
		}
	}
	free(buf);
}
END_TEST

/* Long runs of one byte and of zeros: the folds' carries over many blocks. */
START_TEST(equals_zlib_on_long_uniform_runs)
{
	size_t n = (8u << 20) + 13;
	unsigned char *buf = malloc(n);

	ck_assert_ptr_nonnull(buf);
	for (int v = 0; v < 256; v += 255) {
		memset(buf, v, n);
		ck_assert_uint_eq(zcrc32(0, buf, n), (uint32_t)crc32(0, buf, (uInt)n));
		ck_assert_uint_eq(zcrc32(0xFFFFFFFFu, buf, n),
				  (uint32_t)crc32(0xFFFFFFFFu, buf, (uInt)n));
	}
	free(buf);
}
END_TEST

START_TEST(carry_less_path_where_the_cpu_has_it)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("pclmul")) {
		ck_assert_str_eq(zcrc32_impl(), "pclmul");
		return;
	}
#endif
	fprintf(stderr, "check_zcrc: no PCLMULQDQ here: only zlib's path was tested\n");
	ck_assert_str_eq(zcrc32_impl(), "zlib");
}
END_TEST

static Suite *zcrc_suite(void)
{
	Suite *s = suite_create("zcrc");
	TCase *tc = tcase_create("zcrc");

	tcase_add_test(tc, equals_zlib_for_every_length_and_alignment);
	tcase_add_test(tc, equals_zlib_on_long_uniform_runs);
	tcase_add_test(tc, carry_less_path_where_the_cpu_has_it);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(zcrc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
