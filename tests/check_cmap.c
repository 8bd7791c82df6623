/* SPDX-License-Identifier: MIT */
/*
 * Tests for index/cmap.c.  Every map is checked against a plain array of
 * chunk starts kept by the test: cmap_find must agree with a linear scan
 * at every chunk start, one byte before it, offset 0 and the last byte.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "cmap.h"

/* Chunk holding off among the n ascending starts, by linear scan. */
static size_t linear_find(const uint64_t *starts, size_t n, uint64_t off)
{
	size_t k = 0;

	while (k + 1 < n && starts[k + 1] <= off)
		k++;
	return k;
}

/*
 * Checks m against the n distinct ascending starts (starts[0] == 0) and
 * total: counts, sizes, lengths, and cmap_find around every boundary.
 */
static void check_map(const struct cmap *m, const uint64_t *starts, size_t n, uint64_t total)
{
	ck_assert_uint_eq(m->n, n);
	ck_assert_uint_eq(cmap_size(m), total);
	ck_assert_ptr_nonnull(m->start);
	for (size_t k = 0; k < n; k++) {
		uint64_t end = k + 1 < n ? starts[k + 1] : total;

		ck_assert_uint_eq(m->start[k], starts[k]);
		ck_assert_uint_eq(cmap_len(m, k), end - starts[k]);
		ck_assert_uint_gt(cmap_len(m, k), 0);
		/* first and last byte of the chunk */
		ck_assert_uint_eq(cmap_find(m, starts[k]), k);
		ck_assert_uint_eq(cmap_find(m, end - 1), k);
		if (k > 0)
			ck_assert_uint_eq(cmap_find(m, starts[k] - 1), k - 1);
		if (end - starts[k] > 2)
			ck_assert_uint_eq(cmap_find(m, starts[k] + (end - starts[k]) / 2), k);
	}
	ck_assert_uint_eq(m->start[n], total);
	if (total > 0) {
		ck_assert_uint_eq(cmap_find(m, 0), 0);
		ck_assert_uint_eq(cmap_find(m, total - 1), n - 1);
	}
}

START_TEST(one_chunk)
{
	struct cmap m;
	const uint64_t starts[] = { 0 };

	ck_assert_int_eq(cmap_init(&m, 1), 0);
	cmap_add(&m, 0);
	cmap_end(&m, 12345);
	check_map(&m, starts, 1, 12345);
	ck_assert_uint_eq(cmap_find(&m, 6000), 0);
	cmap_free(&m);
}
END_TEST

START_TEST(one_byte_map)
{
	struct cmap m;
	const uint64_t starts[] = { 0 };

	ck_assert_int_eq(cmap_init(&m, 1), 0);
	cmap_add(&m, 0);
	cmap_end(&m, 1);
	check_map(&m, starts, 1, 1);
	cmap_free(&m);
}
END_TEST

START_TEST(many_equal_chunks)
{
	enum { N = 100, LEN = 65536 };
	uint64_t starts[N];
	struct cmap m;

	ck_assert_int_eq(cmap_init(&m, N), 0);
	for (size_t k = 0; k < N; k++) {
		starts[k] = (uint64_t)k * LEN;
		cmap_add(&m, starts[k]);
	}
	cmap_end(&m, (uint64_t)N * LEN);
	check_map(&m, starts, N, (uint64_t)N * LEN);
	cmap_free(&m);
}
END_TEST

START_TEST(uneven_chunks_with_one_byte_ones)
{
	/* 1-byte chunks at the start, in the middle (three in a row) and at the end */
	const uint64_t starts[] = { 0, 1, 2, 10, 11, 12, 13, 1000, 1001, 70000, 70001 };
	const size_t n = sizeof(starts) / sizeof(starts[0]);
	const uint64_t total = 70002;
	struct cmap m;

	ck_assert_int_eq(cmap_init(&m, n), 0);
	for (size_t k = 0; k < n; k++)
		cmap_add(&m, starts[k]);
	cmap_end(&m, total);
	check_map(&m, starts, n, total);
	/* every byte, against a linear scan */
	for (uint64_t off = 0; off < total; off++)
		ck_assert_uint_eq(cmap_find(&m, off), linear_find(starts, n, off));
	cmap_free(&m);
}
END_TEST

START_TEST(all_one_byte_chunks)
{
	enum { N = 257 };
	uint64_t starts[N];
	struct cmap m;

	ck_assert_int_eq(cmap_init(&m, N), 0);
	for (size_t k = 0; k < N; k++) {
		starts[k] = k;
		cmap_add(&m, k);
	}
	cmap_end(&m, N);
	check_map(&m, starts, N, N);
	for (uint64_t off = 0; off < N; off++)
		ck_assert_uint_eq(cmap_find(&m, off), off);
	cmap_free(&m);
}
END_TEST

START_TEST(repeated_starts_ignored)
{
	/* as from empty xz Blocks or two gzip points at one offset */
	const uint64_t added[] = { 0, 0, 0, 100, 100, 250, 250, 250, 251 };
	const uint64_t starts[] = { 0, 100, 250, 251 };
	struct cmap m;

	ck_assert_int_eq(cmap_init(&m, sizeof(added) / sizeof(added[0])), 0);
	for (size_t i = 0; i < sizeof(added) / sizeof(added[0]); i++)
		cmap_add(&m, added[i]);
	cmap_end(&m, 400);
	check_map(&m, starts, 4, 400);
	cmap_free(&m);
}
END_TEST

START_TEST(last_start_equal_to_total_dropped)
{
	const uint64_t starts[] = { 0, 64, 128 };
	struct cmap m;

	ck_assert_int_eq(cmap_init(&m, 4), 0);
	cmap_add(&m, 0);
	cmap_add(&m, 64);
	cmap_add(&m, 128);
	cmap_add(&m, 192); /* would be an empty last chunk */
	cmap_end(&m, 192);
	check_map(&m, starts, 3, 192);
	cmap_free(&m);
}
END_TEST

START_TEST(repeat_then_last_start_equal_to_total)
{
	const uint64_t starts[] = { 0, 10 };
	struct cmap m;

	ck_assert_int_eq(cmap_init(&m, 5), 0);
	cmap_add(&m, 0);
	cmap_add(&m, 10);
	cmap_add(&m, 20);
	cmap_add(&m, 20);
	cmap_end(&m, 20);
	check_map(&m, starts, 2, 20);
	cmap_free(&m);
}
END_TEST

START_TEST(random_layouts_match_linear_scan)
{
	uint32_t x = 0x12345678u;

	for (int round = 0; round < 200; round++) {
		size_t max = 1 + round % 50, n = 0;
		uint64_t *starts = malloc(max * sizeof(*starts)), pos = 0;
		struct cmap m;

		ck_assert_ptr_nonnull(starts);
		ck_assert_int_eq(cmap_init(&m, max), 0);
		for (size_t k = 0; k < max; k++) {
			x = x * 1664525u + 1013904223u;
			starts[n++] = pos;
			cmap_add(&m, pos);
			/* lengths 1..4, or up to 100000 */
			pos += (x >> 28) < 8 ? 1 + (x >> 8) % 4 : 1 + (x >> 8) % 100000;
		}
		cmap_end(&m, pos);
		check_map(&m, starts, n, pos);
		for (int i = 0; i < 200; i++) {
			uint64_t off;

			x = x * 1664525u + 1013904223u;
			off = ((uint64_t)x << 16 ^ x) % pos;
			ck_assert_uint_eq(cmap_find(&m, off), linear_find(starts, n, off));
		}
		cmap_free(&m);
		free(starts);
	}
}
END_TEST

START_TEST(empty_map)
{
	struct cmap m;

	ck_assert_int_eq(cmap_init(&m, 0), 0);
	cmap_end(&m, 0);
	ck_assert_uint_eq(m.n, 0);
	ck_assert_uint_eq(cmap_size(&m), 0);
	cmap_free(&m);
	ck_assert_ptr_null(m.start);
	ck_assert_uint_eq(m.n, 0);
}
END_TEST

START_TEST(empty_map_with_a_start_at_zero)
{
	/* an xz of empty input: no Blocks, or one empty Block at 0 */
	struct cmap m;

	ck_assert_int_eq(cmap_init(&m, 1), 0);
	cmap_add(&m, 0);
	cmap_end(&m, 0);
	ck_assert_uint_eq(m.n, 0);
	ck_assert_uint_eq(cmap_size(&m), 0);
	cmap_free(&m);
}
END_TEST

START_TEST(zeroed_map_size_and_free)
{
	struct cmap m = { 0 };

	ck_assert_uint_eq(cmap_size(&m), 0);
	cmap_free(&m); /* never initialised: must be harmless */
	cmap_free(&m); /* and twice */
	ck_assert_ptr_null(m.start);
}
END_TEST

START_TEST(offsets_above_4_gib)
{
	const uint64_t g = 1ull << 32;
	const uint64_t starts[] = { 0, g - 1, g, g + 1, 3 * g };
	struct cmap m;

	ck_assert_int_eq(cmap_init(&m, 5), 0);
	for (size_t k = 0; k < 5; k++)
		cmap_add(&m, starts[k]);
	cmap_end(&m, 5 * g);
	check_map(&m, starts, 5, 5 * g);
	cmap_free(&m);
}
END_TEST

static Suite *cmap_suite(void)
{
	Suite *s = suite_create("cmap");
	TCase *tc = tcase_create("cmap");

	tcase_add_test(tc, one_chunk);
	tcase_add_test(tc, one_byte_map);
	tcase_add_test(tc, many_equal_chunks);
	tcase_add_test(tc, uneven_chunks_with_one_byte_ones);
	tcase_add_test(tc, all_one_byte_chunks);
	tcase_add_test(tc, repeated_starts_ignored);
	tcase_add_test(tc, last_start_equal_to_total_dropped);
	tcase_add_test(tc, repeat_then_last_start_equal_to_total);
	tcase_add_test(tc, random_layouts_match_linear_scan);
	tcase_add_test(tc, empty_map);
	tcase_add_test(tc, empty_map_with_a_start_at_zero);
	tcase_add_test(tc, zeroed_map_size_and_free);
	tcase_add_test(tc, offsets_above_4_gib);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cmap_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
