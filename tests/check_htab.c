/* SPDX-License-Identifier: MIT */
/*
 * Tests for index/htab.c, the intrusive hash table.  Items hash by key / 3,
 * so keys share hashes and a lookup must compare keys along the chain.
 * calloc is wrapped at link time (-Wl,--wrap=calloc, see CMakeLists.txt)
 * so that a test can make the table's growth fail.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "htab.h"

struct item {
	unsigned key;
	int seen; /* visits in the current walk */
	struct htab_link link;
};

static unsigned calloc_fails; /* calls to calloc left to fail */

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

void *__wrap_calloc(size_t n, size_t size)
{
	if (calloc_fails > 0) {
		calloc_fails--;
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

static size_t hash_of(unsigned key)
{
	return key / 3;
}

static size_t item_hash(const struct htab_link *l)
{
	return hash_of(htab_entry(l, struct item, link)->key);
}

static struct item *find(const struct htab *t, unsigned key)
{
	for (struct htab_link *l = htab_bucket(t, hash_of(key)); l; l = l->next) {
		struct item *it = htab_entry(l, struct item, link);

		if (it->key == key)
			return it;
	}
	return NULL;
}

/* n items keyed 0..n-1, each malloc'd (so ASan sees a use after htab_del and free). */
static struct item **items_new(unsigned n)
{
	struct item **v = malloc(n * sizeof(*v));

	ck_assert_ptr_nonnull(v);
	for (unsigned i = 0; i < n; i++) {
		v[i] = malloc(sizeof(**v));
		ck_assert_ptr_nonnull(v[i]);
		*v[i] = (struct item){ .key = i };
	}
	return v;
}

static void items_add(struct htab *t, struct item **v, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++)
		htab_add(t, &v[i]->link);
}

/* Walks t, counting each item's visits; returns the links returned. */
static size_t walk_count(const struct htab *t)
{
	struct htab_walk w;
	struct htab_link *l;
	size_t n = 0;

	htab_walk_start(t, &w);
	while ((l = htab_walk_next(&w))) {
		htab_entry(l, struct item, link)->seen++;
		n++;
	}
	return n;
}

static size_t buckets(const struct htab *t)
{
	return t->mask + 1;
}

START_TEST(add_find_del)
{
	struct item **v = items_new(100);
	struct htab t;

	ck_assert_int_eq(htab_init(&t, 4, item_hash), 0);
	ck_assert_ptr_null(find(&t, 7));
	items_add(&t, v, 0, 100);
	ck_assert_uint_eq(htab_count(&t), 100);
	for (unsigned i = 0; i < 100; i++)
		ck_assert_ptr_eq(find(&t, i), v[i]);
	ck_assert_ptr_null(find(&t, 100));
	for (unsigned i = 0; i < 100; i += 2)
		htab_del(&t, &v[i]->link);
	ck_assert_uint_eq(htab_count(&t), 50);
	for (unsigned i = 0; i < 100; i++)
		ck_assert_ptr_eq(find(&t, i), i % 2 ? v[i] : NULL);
	for (unsigned i = 1; i < 100; i += 2)
		htab_del(&t, &v[i]->link);
	ck_assert_uint_eq(htab_count(&t), 0);
	ck_assert_uint_eq(walk_count(&t), 0);
	/* added again after leaving: found again */
	htab_add(&t, &v[42]->link);
	ck_assert_ptr_eq(find(&t, 42), v[42]);
	htab_fini(&t);
	for (unsigned i = 0; i < 100; i++)
		free(v[i]);
	free(v);
}
END_TEST

START_TEST(growth_keeps_every_entry_findable)
{
	const unsigned n = 100000;
	struct item **v = items_new(n);
	struct htab t;

	ck_assert_int_eq(htab_init(&t, 1, item_hash), 0);
	for (unsigned i = 0; i < n; i++) {
		htab_add(&t, &v[i]->link);
		ck_assert_msg(htab_count(&t) <= buckets(&t) * HTAB_MAX_LOAD,
			      "%zu entries in %zu buckets", htab_count(&t), buckets(&t));
	}
	ck_assert_uint_ge(buckets(&t), n / HTAB_MAX_LOAD);
	for (unsigned i = 0; i < n; i++)
		ck_assert_msg(find(&t, i) == v[i], "key %u lost", i);
	ck_assert_uint_eq(walk_count(&t), n);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(v[i]->seen, 1);
	htab_fini(&t);
	for (unsigned i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
END_TEST

START_TEST(delete_while_walking_visits_each_once)
{
	const unsigned n = 1000;
	struct item **v = items_new(n);
	struct htab_walk w;
	struct htab_link *l;
	struct htab t;
	size_t visits = 0;

	ck_assert_int_eq(htab_init(&t, 16, item_hash), 0);
	items_add(&t, v, 0, n);
	htab_walk_start(&t, &w);
	while ((l = htab_walk_next(&w))) {
		struct item *it = htab_entry(l, struct item, link);

		it->seen++;
		visits++;
		if (it->key % 2 == 0) { /* out, and freed: the walk must not touch it again */
			htab_del(&t, l);
			v[it->key] = NULL;
			free(it);
		}
	}
	ck_assert_uint_eq(visits, n);
	ck_assert_uint_eq(htab_count(&t), n / 2);
	for (unsigned i = 1; i < n; i += 2) {
		ck_assert_int_eq(v[i]->seen, 1);
		ck_assert_ptr_eq(find(&t, i), v[i]);
		v[i]->seen = 0;
	}
	/* What is left is walked once each too. */
	ck_assert_uint_eq(walk_count(&t), n / 2);
	for (unsigned i = 1; i < n; i += 2)
		ck_assert_int_eq(v[i]->seen, 1);
	htab_fini(&t);
	for (unsigned i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
END_TEST

START_TEST(failed_growth_keeps_the_table_working)
{
	const unsigned n = 1000;
	struct item **v = items_new(n);
	struct htab t;

	ck_assert_int_eq(htab_init(&t, 2, item_hash), 0);
	items_add(&t, v, 0, 2 * HTAB_MAX_LOAD); /* full: the next add grows */
	calloc_fails = ~0u;
	items_add(&t, v, 2 * HTAB_MAX_LOAD, n - 1);
	calloc_fails = 0;
	ck_assert_uint_eq(buckets(&t), 2);
	ck_assert_uint_eq(htab_count(&t), n - 1);
	for (unsigned i = 0; i < n - 1; i++)
		ck_assert_msg(find(&t, i) == v[i], "key %u lost", i);
	for (unsigned i = 0; i < n - 1; i += 2)
		htab_del(&t, &v[i]->link);
	ck_assert_uint_eq(walk_count(&t), (n - 1) / 2);
	/* Memory again: the next add grows it. */
	htab_add(&t, &v[n - 1]->link);
	ck_assert_uint_eq(buckets(&t), 4);
	for (unsigned i = 0; i < n; i++)
		ck_assert_ptr_eq(find(&t, i), i % 2 || i == n - 1 ? v[i] : NULL);
	htab_fini(&t);
	for (unsigned i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
END_TEST

START_TEST(init_errors)
{
	struct htab t;

	ck_assert_int_eq(htab_init(&t, 0, item_hash), -EINVAL);
	htab_fini(&t);
	ck_assert_int_eq(htab_init(&t, 3, item_hash), -EINVAL);
	htab_fini(&t);
	calloc_fails = 1;
	ck_assert_int_eq(htab_init(&t, 8, item_hash), -ENOMEM);
	ck_assert_ptr_null(t.buckets);
	htab_fini(&t);
	ck_assert_uint_eq(walk_count(&t), 0); /* a failed table walks as empty */
}
END_TEST

static Suite *htab_suite(void)
{
	Suite *s = suite_create("htab");
	TCase *tc = tcase_create("htab");

	tcase_add_test(tc, add_find_del);
	tcase_add_test(tc, growth_keeps_every_entry_findable);
	tcase_add_test(tc, delete_while_walking_visits_each_once);
	tcase_add_test(tc, failed_growth_keeps_the_table_working);
	tcase_add_test(tc, init_errors);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(htab_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
