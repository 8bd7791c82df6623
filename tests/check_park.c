/* SPDX-License-Identifier: MIT */
/*
 * Tests for index/park.c, through park.h alone: the parked list of a
 * context, with items of the test's own standing in for decoders.  Each
 * item records when the list closes it; its charge is read back from the
 * cache's counters (bcache_stats: charged).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bcache.h"
#include "park.h"

#define KiB    1024u
#define BUDGET (1024u * KiB) /* the list's share: half of it */

struct item {
	struct park_node pn; /* first: the node is the item */
	int id;
};

/* Items closed by the list, in the order it closed them. */
static int closed[64];
static unsigned nclosed;

static void item_close(struct park_node *n)
{
	struct item *it = (struct item *)n;

	ck_assert_uint_lt(nclosed, sizeof(closed) / sizeof(closed[0]));
	closed[nclosed++] = it->id;
	free(it);
}

static struct item *item_new(int id, size_t key, size_t cost)
{
	struct item *it = calloc(1, sizeof(*it));

	ck_assert_ptr_nonnull(it);
	it->id = id;
	it->pn.close = item_close;
	it->pn.key = key;
	it->pn.pos = (uint64_t)id * 100;
	it->pn.cost = cost;
	return it;
}

static bool was_closed(int id)
{
	for (unsigned i = 0; i < nclosed; i++)
		if (closed[i] == id)
			return true;
	return false;
}

static size_t charged(struct bcache *c)
{
	struct bcache_stats st;

	bcache_stats(c, &st);
	return st.charged;
}

static struct bcache *cache;
static struct park list;
/* Slots outlive what they hold: teardown drains the list, which empties them. */
static struct park_slot a, b, c, four[4];

static void setup(void)
{
	nclosed = 0;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&c, 0, sizeof(c));
	memset(four, 0, sizeof(four));
	ck_assert_int_eq(bcache_new(BUDGET, &cache), 0);
	park_init(&list, cache);
}

static void teardown(void)
{
	park_drain(&list);
	bcache_free(cache);
}

/* Parked under the share: kept, charged, and seen where it stands. */
START_TEST(under_budget_keeps)
{
	size_t key;
	uint64_t pos;

	park_add(&list, &a, &item_new(1, 7, 200 * KiB)->pn);
	park_add(&list, &b, &item_new(2, 9, 200 * KiB)->pn);
	ck_assert_msg(nclosed == 0, "parking 400 KiB in a 512 KiB share closed item %d", closed[0]);
	ck_assert_uint_eq(charged(cache), 400 * KiB);
	ck_assert(park_peek(&list, &a, &key, &pos));
	ck_assert_uint_eq(key, 7);
	ck_assert_uint_eq(pos, 100);
	ck_assert(park_peek(&list, &b, &key, &pos));
	ck_assert_uint_eq(key, 9);
	ck_assert_uint_eq(pos, 200);
}
END_TEST

/*
 * Over the share: the least recently parked of the others go first, as
 * many as it takes.  a parks, b parks, a parks again (its first item
 * closed as its own); c then needs room for one more: b, now the oldest,
 * goes, and a's newer item stays.
 */
START_TEST(over_budget_evicts_oldest_other)
{
	size_t key;
	uint64_t pos;

	park_add(&list, &a, &item_new(1, 0, 200 * KiB)->pn);
	park_add(&list, &b, &item_new(2, 0, 200 * KiB)->pn);
	park_add(&list, &a, &item_new(3, 0, 200 * KiB)->pn);
	ck_assert_uint_eq(nclosed, 1);
	ck_assert_int_eq(closed[0], 1); /* a's own earlier one */
	park_add(&list, &c, &item_new(4, 0, 200 * KiB)->pn);
	ck_assert_msg(
		nclosed == 2 && closed[1] == 2,
		"expected b's item (2) evicted, the least recently parked; closed %u, last %d",
		nclosed, nclosed ? closed[nclosed - 1] : -1);
	ck_assert(!park_peek(&list, &b, &key, &pos));
	ck_assert(park_peek(&list, &a, &key, &pos));
	ck_assert_uint_eq(pos, 300);
	ck_assert(park_peek(&list, &c, &key, &pos));
	ck_assert_uint_eq(charged(cache), 400 * KiB);

	/* One item wider than the whole share: all others go, it stays. */
	park_add(&list, &b, &item_new(5, 0, 600 * KiB)->pn);
	ck_assert_uint_eq(nclosed, 4);
	ck_assert(was_closed(3) && was_closed(4));
	ck_assert(park_peek(&list, &b, &key, &pos));
	ck_assert_uint_eq(pos, 500);
	ck_assert_uint_eq(charged(cache), 600 * KiB);
}
END_TEST

/* A slot gives back its own item, at its own key, and nobody else's. */
START_TEST(take_returns_only_own)
{
	struct item *ia = item_new(1, 3, 100 * KiB);
	struct park_node *n;
	size_t key;
	uint64_t pos;

	park_add(&list, &a, &ia->pn);
	park_add(&list, &b, &item_new(2, 5, 100 * KiB)->pn);
	n = park_take(&list, &a, 5);
	ck_assert_msg(n == NULL, "a took an item at key 5 (b's key; a's is at 3): item %d",
		      n ? ((struct item *)n)->id : 0);
	ck_assert(park_peek(&list, &a, &key, &pos));
	n = park_take(&list, &a, 3);
	ck_assert_ptr_eq(n, &ia->pn);
	ck_assert_uint_eq(charged(cache), 100 * KiB);
	n = park_take(&list, &a, PARK_ANY);
	ck_assert_msg(n == NULL, "a's slot is empty but gave item %d",
		      n ? ((struct item *)n)->id : 0);
	ck_assert(park_peek(&list, &b, &key, &pos));
	ck_assert_uint_eq(key, 5);
	ck_assert_uint_eq(nclosed, 0);
	item_close(&ia->pn); /* taken back: the caller's to close */
	n = park_take(&list, &b, PARK_ANY);
	ck_assert_ptr_nonnull(n);
	ck_assert_int_eq(((struct item *)n)->id, 2);
	item_close(n);
	ck_assert_uint_eq(charged(cache), 0);
}
END_TEST

/* park_drain closes everything still parked, and gives back every charge. */
START_TEST(drain_frees_all)
{
	size_t key;
	uint64_t pos;

	for (int i = 0; i < 4; i++)
		park_add(&list, &four[i], &item_new(i + 1, 0, 50 * KiB)->pn);
	ck_assert_uint_eq(charged(cache), 200 * KiB);
	park_drain(&list);
	ck_assert_msg(nclosed == 4, "drain closed %u of 4 items", nclosed);
	ck_assert_uint_eq(charged(cache), 0);
	park_init(&list, cache); /* for teardown's drain, and for looking at the slots */
	for (int i = 0; i < 4; i++)
		ck_assert(!park_peek(&list, &four[i], &key, &pos));
}
END_TEST

static Suite *park_suite(void)
{
	Suite *s = suite_create("park");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, under_budget_keeps);
	tcase_add_test(tc, over_budget_evicts_oldest_other);
	tcase_add_test(tc, take_returns_only_own);
	tcase_add_test(tc, drain_frees_all);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(park_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
