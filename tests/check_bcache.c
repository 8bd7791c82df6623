/* SPDX-License-Identifier: MIT */
/*
 * Tests for index/bcache.c.  Every filled buffer holds a pattern derived
 * from (id, no, salt), so a reader can tell its bytes from any other
 * entry's, and from a refill's.  Threads never call ck_assert: they record
 * the first failure and the main thread asserts on it.
 *
 * Every entry costs the budget its buffer plus BCACHE_ENT_COST, so expected
 * `used` values and budgets are written in COST() units.  A test that holds
 * a reference and gets another passes wait false: waiting for room while
 * holding what blocks it would wait for itself.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bcache.h"

/* What an entry of n bytes costs the budget. */
#define COST(n) ((size_t)(n) + BCACHE_ENT_COST)

static unsigned char pat(uint64_t id, uint64_t no, unsigned salt, size_t i)
{
	uint64_t h = (id * 0x9E3779B97F4A7C15ull) ^ (no * 0xC2B2AE3D27D4EB4Full) ^ salt;

	h += i * 0x165667B19E3779F9ull;
	h ^= h >> 29;
	return (unsigned char)(h ^ (h >> 17) ^ (i >> 8));
}

static uint32_t lcg_next(uint32_t *x)
{
	*x = *x * 1664525u + 1013904223u;
	return *x >> 8;
}

static void fill_pat(struct bcache_ent *e, uint64_t id, uint64_t no, unsigned salt)
{
	unsigned char *p = bcache_buf(e);

	for (size_t i = 0; i < bcache_size(e); i++)
		p[i] = pat(id, no, salt, i);
}

/* Returns the index of the first wrong byte, or SIZE_MAX if all match. */
static size_t bad_pat(const struct bcache_ent *e, const void *buf, uint64_t id, uint64_t no,
		      unsigned salt)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < bcache_size(e); i++)
		if (p[i] != pat(id, no, salt, i))
			return i;
	return SIZE_MAX;
}

static void assert_pat(struct bcache_ent *e, uint64_t id, uint64_t no, unsigned salt)
{
	size_t i = bad_pat(e, bcache_buf(e), id, no, salt);

	ck_assert_msg(i == SIZE_MAX, "entry (%llu, %llu) wrong at byte %zu", (unsigned long long)id,
		      (unsigned long long)no, i);
}

/* A miss, filled with the pattern, made ready and released. */
static void put_new(struct bcache *c, uint64_t id, uint64_t no, size_t size)
{
	struct bcache_ent *e;

	ck_assert_int_eq(bcache_get(c, id, no, size, true, &e), 1);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(bcache_size(e), size);
	fill_pat(e, id, no, 0);
	bcache_done(c, e, 0);
	bcache_put(c, e);
}

static struct bcache_stats stats(struct bcache *c)
{
	struct bcache_stats st;

	bcache_stats(c, &st);
	return st;
}

/*
 * Asserts (id, no) is in the table, without making it recently used.  Claim
 * inserts when absent, so callers check absence last, with get.  Claim also
 * says 0 when there is no room (after evicting to make some), so the probe
 * is only meaningful when a 1-byte entry fits without evicting anything:
 * tests that use it leave COST(1) of slack in their budget.
 */
static void present(struct bcache *c, uint64_t id, uint64_t no)
{
	struct bcache_ent *e;
	struct bcache_stats st = stats(c);

	ck_assert_msg(st.used + COST(1) <= st.budget,
		      "present() needs room for COST(1): used %zu of %zu", st.used, st.budget);
	ck_assert_msg(bcache_claim(c, id, no, 1, &e) == 0, "(%llu, %llu) is not in the cache",
		      (unsigned long long)id, (unsigned long long)no);
	ck_assert_ptr_null(e);
	ck_assert_uint_eq(stats(c).evictions, st.evictions);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Polls until the cache has counted want waits; fails after 20 s. */
static void wait_for_waits(struct bcache *c, uint64_t want)
{
	for (int i = 0; i < 20000; i++) {
		if (stats(c).waits >= want)
			return;
		sleep_ms(1);
	}
	ck_abort_msg("only %llu of %llu waiters arrived", (unsigned long long)stats(c).waits,
		     (unsigned long long)want);
}

/* Polls until the cache has counted want waits for room; fails after 20 s. */
static void wait_for_room_waits(struct bcache *c, uint64_t want)
{
	for (int i = 0; i < 20000; i++) {
		if (stats(c).room_waits >= want)
			return;
		sleep_ms(1);
	}
	ck_abort_msg("only %llu of %llu waits for room began",
		     (unsigned long long)stats(c).room_waits, (unsigned long long)want);
}

/* Joins t, or fails the test if it has not ended within ms: a hang is a failure. */
static void join_within(pthread_t t, long ms, const char *what)
{
	struct timespec dl;
	int ret;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	ret = pthread_timedjoin_np(t, NULL, &dl);
	ck_assert_msg(ret == 0, "%s: still blocked after %ld ms (%s)", what, ms, strerror(ret));
}

START_TEST(hit_after_fill_returns_same_bytes)
{
	struct bcache *c;
	struct bcache_ent *e, *h;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	ck_assert_int_eq(bcache_get(c, 3, 9, 70000, true, &e), 1);
	fill_pat(e, 3, 9, 0);
	bcache_done(c, e, 0);
	bcache_put(c, e);

	ck_assert_int_eq(bcache_get(c, 3, 9, 70000, true, &h), 0);
	ck_assert_ptr_eq(h, e); /* the same entry, not a copy */
	ck_assert_uint_eq(bcache_size(h), 70000);
	assert_pat(h, 3, 9, 0);
	bcache_put(c, h);

	st = stats(c);
	ck_assert_uint_eq(st.hits, 1);
	ck_assert_uint_eq(st.misses, 1);
	ck_assert_uint_eq(st.waits, 0);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_eq(st.used, COST(70000));
	ck_assert_uint_eq(st.peak, COST(70000));
	ck_assert_uint_eq(st.charged, 0);
	ck_assert_uint_eq(st.room_waits, 0);
	ck_assert_uint_eq(st.budget, 1 << 20);
	bcache_free(c);
}
END_TEST

START_TEST(miss_gives_buffer_of_requested_size)
{
	const size_t sizes[] = { 1, 2, 4095, 65536, 300001 };
	struct bcache *c;
	size_t used = 0;

	ck_assert_int_eq(bcache_new(4 << 20, &c), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct bcache_ent *e = (struct bcache_ent *)1;

		ck_assert_int_eq(bcache_get(c, 1, i, sizes[i], true, &e), 1);
		ck_assert_ptr_nonnull(e);
		ck_assert_ptr_nonnull(bcache_buf(e));
		ck_assert_uint_eq(bcache_size(e), sizes[i]);
		/* every byte writable (ASan checks the bounds) */
		memset(bcache_buf(e), 0xA5, sizes[i]);
		used += COST(sizes[i]);
		/* in flight, it counts already */
		ck_assert_uint_eq(stats(c).used, used);
		bcache_done(c, e, 0);
		bcache_put(c, e);
	}
	ck_assert_uint_eq(stats(c).used,
			  COST(1) + COST(2) + COST(4095) + COST(65536) + COST(300001));
	ck_assert_uint_eq(stats(c).entries, 5);
	ck_assert_uint_eq(stats(c).misses, 5);
	bcache_free(c);
}
END_TEST

/* The THP mode the kernel is in ("always", "madvise" or "never"), or "" if it has none. */
static const char *thp_mode(char *buf, size_t len)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char line[128] = "", *l, *r;

	buf[0] = '\0';
	if (f && fgets(line, sizeof(line), f) && (l = strchr(line, '[')) && (r = strchr(l, ']'))) {
		*r = '\0';
		snprintf(buf, len, "%s", l + 1);
	}
	if (f)
		fclose(f);
	return buf;
}

/* smaps' THPeligible for the mapping holding p: 1, 0, or -1 when the kernel does not say. */
static int thp_eligible(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	bool in = false;
	int ret = -1;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		int v;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		else if (in && sscanf(line, "THPeligible: %d", &v) == 1)
			ret = v;
	}
	fclose(f);
	return ret;
}

/*
 * Large buffers are filled fresh by every cold read: they must be 2 MiB
 * aligned and advised for huge pages, so the fill takes one fault per
 * 2 MiB.  A buffer traded to a smaller entry (reuse) and freed must go
 * back the way it came (ASan and the allocator check that).
 */
START_TEST(large_buffers_are_huge_page_aligned)
{
	const size_t sizes[] = { BCACHE_HUGE, 3 * BCACHE_HUGE + 12345, BCACHE_HUGE - 1 };
	char mode[32];
	struct bcache *c;

	ck_assert_int_eq(bcache_new(16 << 20, &c), 0);
	thp_mode(mode, sizeof(mode));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct bcache_ent *e;
		unsigned char *b;

		ck_assert_int_eq(bcache_get(c, 1, i, sizes[i], true, &e), 1);
		b = bcache_buf(e);
		memset(b, 0x5A, sizes[i]);
		if (sizes[i] >= BCACHE_HUGE) {
			ck_assert_uint_eq((uintptr_t)b % BCACHE_HUGE, 0);
			if (strcmp(mode, "always") == 0 || strcmp(mode, "madvise") == 0)
				ck_assert_int_ne(thp_eligible(b), 0);
			else
				fprintf(stderr,
					"large_buffers_are_huge_page_aligned: THP is '%s' here: "
					"only the alignment was checked\n",
					mode);
		}
		bcache_done(c, e, 0);
		bcache_put(c, e);
	}
	bcache_free(c);

	/* Room for one: the second entry, just under BCACHE_HUGE, takes over the first's mapping.
	 */
	ck_assert_int_eq(bcache_new(COST(BCACHE_HUGE), &c), 0);
	put_new(c, 2, 0, BCACHE_HUGE);
	put_new(c, 2, 1, BCACHE_HUGE - 4096);
	ck_assert_uint_eq(stats(c).used, COST(BCACHE_HUGE));
	bcache_free(c);
}
END_TEST

START_TEST(keys_are_id_and_number)
{
	struct bcache *c;
	struct bcache_ent *e;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	put_new(c, 1, 0, 100);
	/* same number, other id; same id, other number: both misses */
	put_new(c, 2, 0, 200);
	put_new(c, 1, 1, 300);
	ck_assert_int_eq(bcache_get(c, 1, 0, 100, true, &e), 0);
	assert_pat(e, 1, 0, 0);
	bcache_put(c, e);
	ck_assert_int_eq(bcache_get(c, 2, 0, 200, true, &e), 0);
	assert_pat(e, 2, 0, 0);
	bcache_put(c, e);
	ck_assert_int_eq(bcache_get(c, 1, 1, 300, true, &e), 0);
	assert_pat(e, 1, 1, 0);
	bcache_put(c, e);
	ck_assert_uint_eq(stats(c).entries, 3);
	ck_assert_uint_eq(stats(c).used, COST(100) + COST(200) + COST(300));
	bcache_free(c);
}
END_TEST

START_TEST(many_entries_grow_the_table)
{
	enum { N = 5000 };
	struct bcache *c;
	struct bcache_ent *e;
	size_t used = 0;

	ck_assert_int_eq(bcache_new(64 << 20, &c), 0);
	for (uint64_t k = 0; k < N; k++) {
		put_new(c, k % 7, k, 16 + k % 50);
		used += COST(16 + k % 50);
	}
	ck_assert_uint_eq(stats(c).entries, N);
	ck_assert_uint_eq(stats(c).used, used);
	for (uint64_t k = 0; k < N; k++) {
		ck_assert_int_eq(bcache_get(c, k % 7, k, 16 + k % 50, true, &e), 0);
		assert_pat(e, k % 7, k, 0);
		bcache_put(c, e);
	}
	ck_assert_uint_eq(stats(c).hits, N);
	ck_assert_uint_eq(stats(c).evictions, 0);
	bcache_free(c);
}
END_TEST

struct getter {
	struct bcache *c;
	uint64_t id, no;
	size_t size;
	unsigned salt;
	bool wait;		  /* bcache_get's wait: the getter holds nothing else */
	pthread_barrier_t *start; /* may be NULL */
	int ret;
	struct bcache_ent *e;
	size_t bad;	     /* first wrong byte of a hit, or SIZE_MAX */
	atomic_int finished; /* get has returned */
};

/* One get; on a hit, checks the bytes and releases; on a miss, keeps e. */
static void *getter_run(void *arg)
{
	struct getter *g = arg;

	if (g->start)
		pthread_barrier_wait(g->start);
	g->bad = SIZE_MAX;
	g->ret = bcache_get(g->c, g->id, g->no, g->size, g->wait, &g->e);
	if (g->ret == 0) {
		g->bad = bad_pat(g->e, bcache_buf(g->e), g->id, g->no, g->salt);
		bcache_put(g->c, g->e);
	}
	atomic_store(&g->finished, 1);
	return NULL;
}

START_TEST(failed_fill_reaches_waiter_and_refill_works)
{
	struct bcache *c;
	struct bcache_ent *e;
	struct getter g = { 0 };
	pthread_t t;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	ck_assert_int_eq(bcache_get(c, 5, 5, 1000, true, &e), 1);
	g = (struct getter){ .c = c, .id = 5, .no = 5, .size = 1000, .wait = true };
	ck_assert_int_eq(pthread_create(&t, NULL, getter_run, &g), 0);
	wait_for_waits(c, 1);
	bcache_done(c, e, -EBADMSG);
	pthread_join(t, NULL);
	ck_assert_int_eq(g.ret, -EBADMSG);
	ck_assert_ptr_null(g.e);
	/* the failed entry left the table and the budget */
	ck_assert_uint_eq(stats(c).entries, 0);
	ck_assert_uint_eq(stats(c).used, 0);

	/* a later get is a miss again, and the refill is served */
	ck_assert_int_eq(bcache_get(c, 5, 5, 1000, true, &e), 1);
	fill_pat(e, 5, 5, 1);
	bcache_done(c, e, 0);
	bcache_put(c, e);
	ck_assert_int_eq(bcache_get(c, 5, 5, 1000, true, &e), 0);
	assert_pat(e, 5, 5, 1);
	bcache_put(c, e);
	ck_assert_uint_eq(stats(c).misses, 2);
	ck_assert_uint_eq(stats(c).waits, 1);
	ck_assert_uint_eq(stats(c).hits, 1);
	bcache_free(c);
}
END_TEST

START_TEST(failed_fill_without_waiters_leaves_no_trace)
{
	struct bcache *c;
	struct bcache_ent *e;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	put_new(c, 1, 1, 10);
	ck_assert_int_eq(bcache_get(c, 1, 2, 500, true, &e), 1);
	ck_assert_uint_eq(stats(c).used, COST(10) + COST(500));
	bcache_done(c, e, -EIO);
	ck_assert_uint_eq(stats(c).entries, 1);
	ck_assert_uint_eq(stats(c).used, COST(10));
	ck_assert_int_eq(bcache_get(c, 1, 2, 500, true, &e), 1);
	bcache_done(c, e, -EIO);
	ck_assert_uint_eq(stats(c).entries, 1);
	ck_assert_uint_eq(stats(c).misses, 3);
	bcache_free(c);
}
END_TEST

START_TEST(concurrent_misses_fill_once)
{
	enum { T = 16 };
	struct bcache *c;
	struct getter g[T];
	pthread_t t[T];
	pthread_barrier_t start;
	int filler = -1;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	pthread_barrier_init(&start, NULL, T + 1);
	for (int i = 0; i < T; i++) {
		g[i] = (struct getter){ .c = c,
					.id = 7,
					.no = 7,
					.size = 100000,
					.salt = 3,
					.wait = true,
					.start = &start };
		ck_assert_int_eq(pthread_create(&t[i], NULL, getter_run, &g[i]), 0);
	}
	pthread_barrier_wait(&start);
	/* exactly one thread becomes the filler; find it */
	for (int tries = 0; tries < 20000 && stats(c).misses == 0; tries++)
		sleep_ms(1);
	ck_assert_uint_eq(stats(c).misses, 1);
	/* every other thread must wait for that one fill */
	wait_for_waits(c, T - 1);
	/* the filler's get has returned; the waiters' are blocked */
	for (int tries = 0; tries < 20000 && filler < 0; tries++) {
		for (int i = 0; i < T; i++)
			if (atomic_load(&g[i].finished))
				filler = i;
		if (filler < 0)
			sleep_ms(1);
	}
	ck_assert_int_ne(filler, -1);
	pthread_join(t[filler], NULL);
	ck_assert_int_eq(g[filler].ret, 1);
	for (int i = 0; i < T; i++)
		ck_assert_msg(i == filler || !atomic_load(&g[i].finished),
			      "thread %d did not wait for the fill", i);
	sleep_ms(20);
	fill_pat(g[filler].e, 7, 7, 3);
	bcache_done(c, g[filler].e, 0);
	bcache_put(c, g[filler].e);
	for (int i = 0; i < T; i++) {
		if (i == filler)
			continue;
		pthread_join(t[i], NULL);
		ck_assert_int_eq(g[i].ret, 0);
		ck_assert_msg(g[i].bad == SIZE_MAX, "waiter %d: wrong byte %zu", i, g[i].bad);
	}
	st = stats(c);
	ck_assert_uint_eq(st.misses, 1);
	ck_assert_uint_eq(st.waits, T - 1);
	ck_assert_uint_eq(st.hits, T - 1);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_eq(st.used, COST(100000));
	ck_assert_uint_eq(st.room_waits, 0);
	pthread_barrier_destroy(&start);
	bcache_free(c);
}
END_TEST

START_TEST(concurrent_misses_share_the_error)
{
	enum { T = 16 };
	struct bcache *c;
	struct bcache_ent *e;
	struct getter g[T];
	pthread_t t[T];

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	ck_assert_int_eq(bcache_get(c, 8, 1, 4096, true, &e), 1);
	for (int i = 0; i < T; i++) {
		g[i] = (struct getter){ .c = c, .id = 8, .no = 1, .size = 4096, .wait = true };
		ck_assert_int_eq(pthread_create(&t[i], NULL, getter_run, &g[i]), 0);
	}
	wait_for_waits(c, T);
	bcache_done(c, e, -EIO);
	for (int i = 0; i < T; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(g[i].ret, -EIO);
		ck_assert_ptr_null(g[i].e);
	}
	ck_assert_uint_eq(stats(c).entries, 0);
	ck_assert_uint_eq(stats(c).used, 0);
	ck_assert_uint_eq(stats(c).misses, 1);
	ck_assert_int_eq(bcache_get(c, 8, 1, 4096, true, &e), 1);
	bcache_done(c, e, -EIO);
	bcache_free(c);
}
END_TEST

START_TEST(budget_holds_with_lru_order)
{
	struct bcache *c;
	struct bcache_ent *e;
	struct bcache_stats st;

	/* room for exactly four 100-byte entries, and present()'s probe */
	ck_assert_int_eq(bcache_new(4 * COST(100) + COST(1), &c), 0);
	for (uint64_t k = 0; k < 4; k++)
		put_new(c, 1, k, 100);
	st = stats(c);
	ck_assert_uint_eq(st.used, 4 * COST(100));
	ck_assert_uint_eq(st.entries, 4);
	ck_assert_uint_eq(st.evictions, 0);

	/* touch 0: LRU order is now 1, 2, 3, 0 */
	ck_assert_int_eq(bcache_get(c, 1, 0, 100, true, &e), 0);
	bcache_put(c, e);

	put_new(c, 1, 4, 100); /* evicts 1, the least recently used */
	st = stats(c);
	ck_assert_uint_le(st.used, st.budget);
	ck_assert_uint_eq(st.used, 4 * COST(100));
	ck_assert_uint_eq(st.entries, 4);
	ck_assert_uint_eq(st.evictions, 1);
	present(c, 1, 0);
	present(c, 1, 2);
	present(c, 1, 3);
	present(c, 1, 4);

	/* 1 comes back: 2 is now the least recently used and goes */
	ck_assert_int_eq(bcache_get(c, 1, 1, 100, true, &e), 1);
	fill_pat(e, 1, 1, 0);
	bcache_done(c, e, 0);
	bcache_put(c, e);
	st = stats(c);
	ck_assert_uint_eq(st.used, 4 * COST(100));
	ck_assert_uint_eq(st.evictions, 2);
	present(c, 1, 0);
	present(c, 1, 1);
	present(c, 1, 3);
	present(c, 1, 4);
	ck_assert_int_eq(bcache_get(c, 1, 2, 100, true, &e), 1);
	bcache_done(c, e, -ECANCELED);
	bcache_free(c);
}
END_TEST

/*
 * Demoted entries go first, oldest demotion first, before entries that were
 * used less recently but not demoted; a hit undoes a demotion; demoting the
 * absent, and demoting again after the last demoted one was evicted (the
 * hint it leaves must not dangle), are harmless.
 */
START_TEST(demoted_entries_go_first_in_demotion_order)
{
	struct bcache *c;
	struct bcache_ent *e;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(4 * COST(100) + COST(1), &c), 0);
	for (uint64_t k = 0; k < 4; k++)
		put_new(c, 1, k, 100); /* LRU order 0, 1, 2, 3 */
	bcache_demote(c, 1, 3);
	bcache_demote(c, 1, 2);
	bcache_demote(c, 1, 99); /* absent: nothing */
	st = stats(c);
	ck_assert_uint_eq(st.hits, 0); /* not a use */
	put_new(c, 1, 4, 100);	       /* evicts 3, demoted first */
	present(c, 1, 0);
	present(c, 1, 1);
	present(c, 1, 2);
	present(c, 1, 4);
	put_new(c, 1, 5, 100); /* evicts 2, demoted next; 0 is older but was not demoted */
	present(c, 1, 0);
	present(c, 1, 1);
	present(c, 1, 4);
	present(c, 1, 5);
	ck_assert_uint_eq(stats(c).evictions, 2);

	/* 2 was the last demoted and is gone: a new demotion must not use it */
	bcache_demote(c, 1, 4);
	ck_assert_int_eq(bcache_get(c, 1, 4, 100, true, &e), 0); /* a hit: 4 is in use again */
	bcache_put(c, e);
	bcache_demote(c, 1, 1);
	put_new(c, 1, 6, 100); /* evicts 1 */
	present(c, 1, 0);
	present(c, 1, 4);
	present(c, 1, 5);
	present(c, 1, 6);
	put_new(c, 1, 7, 100); /* then plain LRU: 0 */
	present(c, 1, 4);
	present(c, 1, 5);
	present(c, 1, 6);
	present(c, 1, 7);
	ck_assert_int_eq(bcache_get(c, 1, 0, 100, true, &e), 1);
	bcache_done(c, e, -ECANCELED);
	ck_assert_int_eq(bcache_get(c, 1, 1, 100, true, &e), 1);
	bcache_done(c, e, -ECANCELED);
	bcache_free(c);
}
END_TEST

/*
 * A miss with room to spare still takes the buffer of a read-through
 * (demoted) entry at the evicting end, if its size fits as a victim's
 * would: a fresh buffer costs page faults, and a sequential reader's
 * kernel page cache holds that entry's bytes.  Entries merely old, or of
 * another size, or hit since their demotion, keep theirs.
 */
START_TEST(read_through_entries_lend_their_buffers)
{
	struct bcache *c;
	struct bcache_ent *e;
	void *buf0;

	ck_assert_int_eq(bcache_new(16 * COST(100), &c), 0);
	put_new(c, 1, 0, 100);
	put_new(c, 1, 1, 100);
	ck_assert_int_eq(bcache_get(c, 1, 0, 100, true, &e), 0);
	buf0 = bcache_buf(e);
	bcache_put(c, e);
	bcache_demote(c, 1, 0);
	ck_assert_int_eq(bcache_get(c, 1, 2, 100, true, &e), 1);
	ck_assert_msg(bcache_buf(e) == buf0, "a miss with room mapped a fresh buffer");
	fill_pat(e, 1, 2, 0);
	bcache_done(c, e, 0);
	bcache_put(c, e);
	ck_assert_uint_eq(stats(c).evictions, 1);
	put_new(c, 1, 3, 100); /* 1 is the oldest, not read through: kept */
	present(c, 1, 1);
	bcache_demote(c, 1, 1);
	put_new(c, 1, 4, 50); /* 1's 100 bytes are too many for 50 */
	present(c, 1, 1);
	ck_assert_int_eq(bcache_get(c, 1, 1, 100, true, &e), 0); /* a hit undoes the demotion */
	bcache_put(c, e);
	put_new(c, 1, 5, 100);
	present(c, 1, 1);
	present(c, 1, 2);
	present(c, 1, 3);
	ck_assert_uint_eq(stats(c).evictions, 1);
	bcache_free(c);
}
END_TEST

START_TEST(full_cache_reuses_victim_buffers)
{
	struct bcache *c;
	struct bcache_ent *e;
	struct bcache_stats st;
	void *first;

	ck_assert_int_eq(bcache_new(3 * COST(100), &c), 0);
	for (uint64_t k = 0; k < 3; k++)
		put_new(c, 1, k, 100);
	ck_assert_int_eq(bcache_get(c, 1, 0, 100, true, &e), 0);
	first = bcache_buf(e);
	bcache_put(c, e);
	put_new(c, 1, 3, 100); /* evicts 1 */
	put_new(c, 1, 4, 100); /* evicts 2 */
	put_new(c, 1, 5, 90);  /* evicts 0 (after 3 and 4 were used): takes its 100 bytes */
	ck_assert_int_eq(bcache_get(c, 1, 5, 90, true, &e), 0);
	ck_assert_ptr_eq(bcache_buf(e), first);
	ck_assert_uint_eq(bcache_size(e), 90);
	assert_pat(e, 1, 5, 0);
	bcache_put(c, e);
	st = stats(c);
	/*
	 * The whole buffer counts.  This, not the pointer (malloc may hand
	 * back the same chunk anyway), shows the buffer was traded, on the
	 * path readers take: put_new gets with wait.
	 */
	ck_assert_uint_eq(st.used, 3 * COST(100));
	ck_assert_uint_eq(st.evictions, 3);
	ck_assert_uint_le(st.peak, st.budget); /* trading buffers never passed the budget */

	/* A victim much larger than needed is freed, not kept: 10 bytes need a new one. */
	put_new(c, 1, 6, 10);
	st = stats(c);
	ck_assert_uint_eq(st.used, 2 * COST(100) + COST(10));
	ck_assert_uint_eq(st.entries, 3);
	bcache_free(c);
}
END_TEST

START_TEST(budget_holds_under_churn)
{
	struct bcache *c;
	struct bcache_ent *e;
	uint32_t x = 99;

	ck_assert_int_eq(bcache_new(50000, &c), 0);
	for (int i = 0; i < 3000; i++) {
		uint64_t no;
		size_t size;
		int ret;

		x = x * 1664525u + 1013904223u;
		no = (x >> 8) % 200;
		size = 100 + (size_t)(no * 131 % 9000);
		ret = bcache_get(c, 2, no, size, true, &e);
		ck_assert_int_ge(ret, 0);
		if (ret == 1) {
			fill_pat(e, 2, no, 0);
			bcache_done(c, e, 0);
		} else {
			assert_pat(e, 2, no, 0);
		}
		bcache_put(c, e);
		ck_assert_uint_le(stats(c).used, 50000);
	}
	ck_assert_uint_gt(stats(c).evictions, 0);
	ck_assert_uint_le(stats(c).peak, 50000);
	bcache_free(c);
}
END_TEST

START_TEST(referenced_entries_are_never_evicted)
{
	struct bcache *c;
	struct bcache_ent *held[4], *e;
	struct bcache_stats st;

	/* room for four 100-byte entries, and present()'s probe */
	ck_assert_int_eq(bcache_new(4 * COST(100) + COST(1), &c), 0);
	/* hold one entry and churn far past the budget */
	ck_assert_int_eq(bcache_get(c, 1, 100, 100, true, &held[0]), 1);
	fill_pat(held[0], 1, 100, 0);
	bcache_done(c, held[0], 0);
	for (uint64_t k = 0; k < 20; k++) {
		put_new(c, 1, k, 100);
		ck_assert_uint_le(stats(c).used, 4 * COST(100));
	}
	present(c, 1, 100);
	assert_pat(held[0], 1, 100, 0);

	/* hold the whole budget (each get evicts an unreferenced churn entry) */
	for (uint64_t k = 1; k < 4; k++) {
		ck_assert_int_eq(bcache_get(c, 1, 100 + k, 100, false, &held[k]), 1);
		fill_pat(held[k], 1, 100 + k, 0);
		bcache_done(c, held[k], 0);
	}
	st = stats(c);
	ck_assert_uint_eq(st.used, 4 * COST(100));
	ck_assert_uint_eq(st.entries, 4);
	ck_assert_uint_eq(st.evictions, 20);

	/* one more: nothing can make room for it, so it is refused, and nothing changes */
	e = (struct bcache_ent *)1;
	ck_assert_int_eq(bcache_get(c, 1, 200, 100, false, &e), -EAGAIN);
	ck_assert_ptr_null(e);
	e = (struct bcache_ent *)1;
	ck_assert_int_eq(bcache_claim(c, 1, 200, 100, &e), 0);
	ck_assert_ptr_null(e);
	st = stats(c);
	ck_assert_uint_eq(st.used, 4 * COST(100));
	ck_assert_uint_eq(st.entries, 4);
	ck_assert_uint_eq(st.evictions, 20);
	ck_assert_uint_eq(st.misses, 24);
	ck_assert_uint_eq(st.room_waits, 0);
	/* a hit needs no room */
	ck_assert_int_eq(bcache_get(c, 1, 101, 100, false, &e), 0);
	ck_assert_ptr_eq(e, held[1]);
	bcache_put(c, e);
	ck_assert_uint_le(stats(c).peak, 4 * COST(100));

	for (int k = 0; k < 4; k++) {
		assert_pat(held[k], 1, 100 + (uint64_t)k, 0);
		bcache_put(c, held[k]);
	}
	/* unreferenced now: the least recently used one (held[0]) makes room */
	ck_assert_int_eq(bcache_get(c, 1, 200, 100, false, &e), 1);
	fill_pat(e, 1, 200, 0);
	bcache_done(c, e, 0);
	bcache_put(c, e);
	st = stats(c);
	ck_assert_uint_eq(st.used, 4 * COST(100));
	ck_assert_uint_eq(st.evictions, 21);
	present(c, 1, 101);
	present(c, 1, 102);
	present(c, 1, 103);
	present(c, 1, 200);
	bcache_free(c);
}
END_TEST

/*
 * New entries cannot take `used` past the budget any more, but charges can
 * (bcache_charge never waits).  While held entries keep it over, each put
 * of one of them gives it back at once.
 */
START_TEST(held_entries_over_budget_shrink_back_on_put)
{
	struct bcache *c;
	struct bcache_ent *held[3], *e;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(3 * COST(100), &c), 0);
	for (uint64_t k = 0; k < 3; k++) {
		ck_assert_int_eq(bcache_get(c, 3, k, 100, false, &held[k]), 1);
		fill_pat(held[k], 3, k, 0);
		bcache_done(c, held[k], 0);
		ck_assert_uint_eq(stats(c).used, COST(100) * (k + 1));
	}
	ck_assert_int_eq(bcache_get(c, 3, 3, 100, false, &e), -EAGAIN);
	/* charged with nothing evictable: used grows by exactly the charge */
	bcache_charge(c, 3 * COST(100));
	st = stats(c);
	ck_assert_uint_eq(st.used, 6 * COST(100));
	ck_assert_uint_eq(st.charged, 3 * COST(100));
	ck_assert_uint_eq(st.entries, 3);
	ck_assert_uint_eq(st.peak, 6 * COST(100));
	/*
	 * Each put evicts until the budget holds, counting of the charge only
	 * what is within half the budget (bcache.h): 1.5 units here.  So the
	 * first two puts evict, and the third finds 2.5 units, within 3.
	 */
	for (uint64_t k = 0; k < 3; k++) {
		assert_pat(held[k], 3, k, 0);
		bcache_put(c, held[k]);
		st = stats(c);
		ck_assert_uint_eq(st.entries, k < 2 ? 2 - k : 1);
		ck_assert_uint_eq(st.evictions, k < 2 ? k + 1 : 2);
		ck_assert_uint_eq(st.used, 3 * COST(100) + COST(100) * st.entries);
	}
	bcache_uncharge(c, 3 * COST(100));
	st = stats(c);
	ck_assert_uint_eq(st.used, COST(100));
	ck_assert_uint_eq(st.charged, 0);
	ck_assert_uint_eq(st.peak, 6 * COST(100));
	bcache_free(c);
}
END_TEST

START_TEST(chunk_larger_than_budget)
{
	struct bcache *c;
	struct bcache_ent *e;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(5 * COST(100), &c), 0);
	for (uint64_t k = 0; k < 5; k++)
		put_new(c, 4, k, 100);
	ck_assert_uint_eq(stats(c).evictions, 0);
	ck_assert_int_eq(bcache_get(c, 4, 99, 50000, true, &e), 1);
	ck_assert_uint_eq(bcache_size(e), 50000);
	fill_pat(e, 4, 99, 0);
	bcache_done(c, e, 0);
	st = stats(c);
	ck_assert_uint_eq(st.used, COST(50000)); /* the small ones made room */
	ck_assert_uint_eq(st.entries, 1);
	assert_pat(e, 4, 99, 0);
	bcache_put(c, e);
	st = stats(c);
	ck_assert_uint_eq(st.used, 0);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.evictions, 6);
	ck_assert_uint_eq(st.peak, COST(50000));
	ck_assert_int_eq(bcache_get(c, 4, 99, 50000, true, &e), 1);
	bcache_done(c, e, -EIO);
	bcache_free(c);
}
END_TEST

START_TEST(chunk_larger_than_budget_is_shared_while_held)
{
	struct bcache *c;
	struct bcache_ent *e, *h;

	ck_assert_int_eq(bcache_new(1000, &c), 0);
	ck_assert_int_eq(bcache_get(c, 4, 1, 5000, true, &e), 1);
	fill_pat(e, 4, 1, 0);
	bcache_done(c, e, 0);
	/* held: a hit needs no room */
	ck_assert_int_eq(bcache_get(c, 4, 1, 5000, false, &h), 0);
	ck_assert_ptr_eq(h, e);
	bcache_put(c, e);
	assert_pat(h, 4, 1, 0);
	bcache_put(c, h);
	ck_assert_uint_eq(stats(c).used, 0);
	bcache_free(c);
}
END_TEST

START_TEST(claim_absent_present_and_in_flight)
{
	struct bcache *c;
	struct bcache_ent *e, *f;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	/* absent: claimed to fill */
	ck_assert_int_eq(bcache_claim(c, 1, 1, 300, &e), 1);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(bcache_size(e), 300);
	/* in flight: 0 at once, no wait (this thread is the filler) */
	f = (struct bcache_ent *)1;
	ck_assert_int_eq(bcache_claim(c, 1, 1, 300, &f), 0);
	ck_assert_ptr_null(f);
	fill_pat(e, 1, 1, 0);
	bcache_done(c, e, 0);
	bcache_put(c, e);
	/* present: 0, and never a hit */
	f = (struct bcache_ent *)1;
	ck_assert_int_eq(bcache_claim(c, 1, 1, 300, &f), 0);
	ck_assert_ptr_null(f);
	ck_assert_uint_eq(stats(c).hits, 0);
	/* a claimed fill is a hit for get */
	ck_assert_int_eq(bcache_get(c, 1, 1, 300, true, &e), 0);
	assert_pat(e, 1, 1, 0);
	bcache_put(c, e);
	ck_assert_uint_eq(stats(c).misses, 1);
	ck_assert_uint_eq(stats(c).entries, 1);
	bcache_free(c);
}
END_TEST

START_TEST(claim_in_flight_by_get_does_not_wait)
{
	struct bcache *c;
	struct bcache_ent *e, *f;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	ck_assert_int_eq(bcache_get(c, 2, 2, 64, true, &e), 1);
	ck_assert_int_eq(bcache_claim(c, 2, 2, 64, &f), 0);
	ck_assert_ptr_null(f);
	ck_assert_uint_eq(stats(c).waits, 0);
	bcache_done(c, e, -EIO);
	/* failed: absent again */
	ck_assert_int_eq(bcache_claim(c, 2, 2, 64, &f), 1);
	bcache_done(c, f, -EIO);
	bcache_free(c);
}
END_TEST

START_TEST(drop_removes_entries_of_one_id)
{
	struct bcache *c;
	struct bcache_ent *e;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	put_new(c, 1, 0, 100);
	put_new(c, 1, 1, 100);
	put_new(c, 1, 2000, 100);
	put_new(c, 2, 0, 50);
	bcache_drop(c, 1);
	st = stats(c);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_eq(st.used, COST(50));
	ck_assert_int_eq(bcache_get(c, 2, 0, 50, true, &e), 0);
	assert_pat(e, 2, 0, 0);
	bcache_put(c, e);
	ck_assert_int_eq(bcache_get(c, 1, 1, 100, true, &e), 1);
	bcache_done(c, e, -EIO);
	ck_assert_int_eq(bcache_get(c, 1, 0, 100, true, &e), 1);
	bcache_done(c, e, -EIO);
	bcache_drop(c, 3); /* nothing of that id: no change */
	ck_assert_uint_eq(stats(c).entries, 1);
	bcache_free(c);
}
END_TEST

START_TEST(drop_keeps_held_reference_valid)
{
	struct bcache *c;
	struct bcache_ent *held, *e;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	ck_assert_int_eq(bcache_get(c, 1, 0, 200000, true, &held), 1);
	fill_pat(held, 1, 0, 0);
	bcache_done(c, held, 0);
	bcache_drop(c, 1);
	st = stats(c);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.used, 0);
	/* a new fill of the same key is a different entry (held: no waiting for room) */
	ck_assert_int_eq(bcache_get(c, 1, 0, 200000, false, &e), 1);
	ck_assert_uint_eq(stats(c).used, COST(200000)); /* the dropped one no longer counts */
	ck_assert_ptr_ne(e, held);
	fill_pat(e, 1, 0, 9);
	bcache_done(c, e, 0);
	bcache_put(c, e);
	assert_pat(held, 1, 0, 0);
	bcache_put(c, held); /* freed here (ASan checks) */
	st = stats(c);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_eq(st.used, COST(200000));
	ck_assert_int_eq(bcache_get(c, 1, 0, 200000, true, &e), 0);
	assert_pat(e, 1, 0, 9);
	bcache_put(c, e);
	bcache_free(c);
}
END_TEST

/*
 * The header: bcache_drop removes every entry of the id, "in flight or
 * ready".  Once the fill ends and its filler lets go, a get must miss,
 * not serve the bytes of the archive that was dropped.
 */
START_TEST(drop_removes_entry_in_flight)
{
	struct bcache *c;
	struct bcache_ent *e;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	ck_assert_int_eq(bcache_get(c, 1, 0, 100, true, &e), 1);
	bcache_drop(c, 1);
	fill_pat(e, 1, 0, 0);
	bcache_done(c, e, 0);
	bcache_put(c, e);
	st = stats(c);
	ck_assert_msg(st.entries == 0 && st.used == 0,
		      "after bcache_drop(1) an entry of id 1 that was in flight is still in the "
		      "table: entries %zu, used %zu",
		      st.entries, st.used);
	ck_assert_int_eq(bcache_get(c, 1, 0, 100, true, &e), 1);
	bcache_done(c, e, -EIO);
	bcache_free(c);
}
END_TEST

START_TEST(lookup_absent_or_in_flight_is_enoent)
{
	struct bcache *c;
	struct bcache_ent *e, *f;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	f = (struct bcache_ent *)1;
	ck_assert_int_eq(bcache_lookup(c, 1, 1, &f), -ENOENT);
	ck_assert_ptr_null(f);
	ck_assert_int_eq(bcache_get(c, 1, 1, 500, true, &e), 1);
	/* in flight: no wait (this thread is the filler), no entry */
	f = (struct bcache_ent *)1;
	ck_assert_int_eq(bcache_lookup(c, 1, 1, &f), -ENOENT);
	ck_assert_ptr_null(f);
	ck_assert_uint_eq(stats(c).waits, 0);
	fill_pat(e, 1, 1, 0);
	bcache_done(c, e, 0);
	bcache_put(c, e);
	/* ready: a referenced hit */
	ck_assert_int_eq(bcache_lookup(c, 1, 1, &f), 0);
	ck_assert_ptr_eq(f, e);
	assert_pat(f, 1, 1, 0);
	ck_assert_uint_eq(stats(c).hits, 1);
	ck_assert_uint_eq(stats(c).misses, 1);
	/* held: a drop does not free it under us */
	bcache_drop(c, 1);
	assert_pat(f, 1, 1, 0);
	bcache_put(c, f);
	ck_assert_int_eq(bcache_lookup(c, 1, 1, &f), -ENOENT);
	ck_assert_uint_eq(stats(c).entries, 0);
	bcache_free(c);
}
END_TEST

START_TEST(lookup_of_failed_fill_is_enoent)
{
	struct bcache *c;
	struct bcache_ent *e, *f;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	ck_assert_int_eq(bcache_get(c, 2, 3, 50, true, &e), 1);
	bcache_done(c, e, -EIO);
	ck_assert_int_eq(bcache_lookup(c, 2, 3, &f), -ENOENT);
	ck_assert_ptr_null(f);
	bcache_free(c);
}
END_TEST

START_TEST(lookup_counts_as_recent_use)
{
	struct bcache *c;
	struct bcache_ent *e;

	ck_assert_int_eq(bcache_new(4 * COST(100) + COST(1), &c), 0);
	for (uint64_t k = 0; k < 4; k++)
		put_new(c, 1, k, 100);
	ck_assert_int_eq(bcache_lookup(c, 1, 0, &e), 0);
	bcache_put(c, e);
	put_new(c, 1, 4, 100); /* 1 is now the least recently used, not 0 */
	present(c, 1, 0);
	ck_assert_int_eq(bcache_lookup(c, 1, 1, &e), -ENOENT);
	bcache_free(c);
}
END_TEST

/*
 * A fill in flight when its archive is dropped: its waiters still get the
 * bytes, but the entry is not kept, and nothing of it leaks.
 */
START_TEST(drop_in_flight_still_serves_its_waiters)
{
	struct bcache *c;
	struct bcache_ent *e;
	struct getter g;
	pthread_t t;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	ck_assert_int_eq(bcache_get(c, 6, 0, 30000, true, &e), 1);
	g = (struct getter){ .c = c, .id = 6, .no = 0, .size = 30000, .salt = 4, .wait = true };
	ck_assert_int_eq(pthread_create(&t, NULL, getter_run, &g), 0);
	wait_for_waits(c, 1);
	bcache_drop(c, 6);
	st = stats(c);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.used, 0);
	fill_pat(e, 6, 0, 4);
	bcache_done(c, e, 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(g.ret, 0);
	ck_assert_msg(g.bad == SIZE_MAX, "waiter: wrong byte %zu", g.bad);
	assert_pat(e, 6, 0, 4);
	bcache_put(c, e);
	st = stats(c);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.used, 0);
	ck_assert_int_eq(bcache_get(c, 6, 0, 30000, true, &e), 1);
	bcache_done(c, e, -EIO);
	bcache_free(c);
}
END_TEST

/* glibc's count of bytes in use, all arenas; meaningless where a sanitizer replaces malloc */
static size_t mapped_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/*
 * A thread waiting for a fill holds a reference on the entry.  If the
 * entry is dropped between the end of the fill and the waiter's wake-up,
 * the waiter's reference is the last one and must free it.  Who wins the
 * race varies; over 20 rounds the drop comes first many times.
 * Leaks are seen by glibc's bytes-in-use count here and by LeakSanitizer under ASan.
 */
START_TEST(waiter_frees_entry_dropped_before_it_woke)
{
	/* below BCACHE_HUGE: a buffer from malloc, which mallinfo2 counts */
	enum { SIZE = 1 << 20, ROUNDS = 20 };
	size_t before, probe_before;
	int counting;
	void *probe;

	/* does mallinfo2 see our allocations in this build? */
	probe_before = mapped_bytes();
	probe = malloc(SIZE);
	ck_assert_ptr_nonnull(probe);
	counting = mapped_bytes() >= probe_before + SIZE; /* false under ASan or TSan */
	free(probe);

	before = mapped_bytes();
	for (int round = 0; round < ROUNDS; round++) {
		struct bcache *c;
		struct bcache_ent *e;
		struct getter g;
		pthread_t t;

		ck_assert_int_eq(bcache_new(64 << 20, &c), 0);
		ck_assert_int_eq(bcache_get(c, 1, 0, SIZE, true, &e), 1);
		g = (struct getter){ .c = c, .id = 1, .no = 0, .size = SIZE, .wait = true };
		ck_assert_int_eq(pthread_create(&t, NULL, getter_run, &g), 0);
		wait_for_waits(c, 1);
		fill_pat(e, 1, 0, 0);
		bcache_done(c, e, 0);
		bcache_put(c, e); /* the waiter's reference is now the only one */
		bcache_drop(c, 1);
		pthread_join(t, NULL);
		/* a hit (woke before the drop) or a miss (after): both fine */
		ck_assert_int_ge(g.ret, 0);
		if (g.ret == 0)
			ck_assert_uint_eq(g.bad, SIZE_MAX);
		else
			bcache_done(c, g.e, -ECANCELED);
		bcache_free(c);
		/* a leaked entry is SIZE bytes; other allocations are far smaller */
		if (counting)
			ck_assert_msg(mapped_bytes() < before + SIZE / 2,
				      "round %d: %zu more bytes in use after bcache_free: the "
				      "dropped entry a waiter held was never freed",
				      round, mapped_bytes() - before);
	}
}
END_TEST

/* The random concurrent workload. */
enum { STRESS_THREADS = 16, STRESS_OPS = 3000, STRESS_KEYS = 48 };
#define STRESS_BUDGET (24u << 10)

struct stress {
	struct bcache *c;
	atomic_int filling[STRESS_KEYS]; /* fillers at work on each key: never above 1 */
	atomic_ulong get_hits, get_misses, get_errors, claim_fills, claim_zero, failed_fills;
	atomic_ulong get_no_room; /* second gets, made while holding, refused for room */
	atomic_ulong lookup_hits;
	atomic_int failures;
	char first_failure[256];
	pthread_mutex_t fail_lock;
};

__attribute__((format(printf, 2, 3))) static void stress_fail(struct stress *s, const char *fmt,
							      ...)
{
	va_list ap;

	pthread_mutex_lock(&s->fail_lock);
	if (atomic_fetch_add(&s->failures, 1) == 0) {
		va_start(ap, fmt);
		vsnprintf(s->first_failure, sizeof(s->first_failure), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&s->fail_lock);
}

static uint64_t key_id(unsigned k)
{
	return 1 + k % 3;
}

static uint64_t key_no(unsigned k)
{
	return (uint64_t)k * 65536;
}

static size_t key_size(unsigned k)
{
	return 256 + (k * 977u) % 3000;
}

/* Fills entry e of key k; fails it (with -EIO) now and then.  Returns the done code. */
static int stress_fill(struct stress *s, unsigned k, struct bcache_ent *e, uint32_t *x)
{
	int ret = 0;

	if (atomic_fetch_add(&s->filling[k], 1) != 0)
		stress_fail(s, "key %u filled by two threads at once", k);
	if (bcache_size(e) != key_size(k))
		stress_fail(s, "key %u: buffer of %zu bytes", k, bcache_size(e));
	*x = *x * 1664525u + 1013904223u;
	if ((*x >> 24) % 4 == 0)
		sleep_ms(1);
	fill_pat(e, key_id(k), key_no(k), 0);
	if ((*x >> 16) % 32 == 0)
		ret = -EIO;
	atomic_fetch_sub(&s->filling[k], 1);
	bcache_done(s->c, e, ret);
	if (ret)
		atomic_fetch_add(&s->failed_fills, 1);
	return ret;
}

static void *stress_run(void *arg)
{
	struct stress *s = arg;
	static atomic_uint seed = 1;
	uint32_t x = atomic_fetch_add(&seed, 7919) * 2654435761u;

	for (int op = 0; op < STRESS_OPS; op++) {
		struct bcache_ent *held = NULL, *e;
		unsigned k, k2;
		int ret;

		x = x * 1664525u + 1013904223u;
		/* skewed toward low keys so that many threads meet on one */
		k = (x >> 8) % STRESS_KEYS;
		if ((x >> 20) % 2)
			k %= 8;
		if ((x >> 28) % 8 == 1) {
			if (bcache_lookup(s->c, key_id(k), key_no(k), &e) == 0) {
				atomic_fetch_add(&s->lookup_hits, 1);
				if (bad_pat(e, bcache_buf(e), key_id(k), key_no(k), 0) != SIZE_MAX)
					stress_fail(s, "key %u: wrong bytes from lookup", k);
				bcache_put(s->c, e);
			} else if (e) {
				stress_fail(s, "key %u: lookup failed but set an entry", k);
			}
			continue;
		}
		if ((x >> 28) % 8 == 0) {
			ret = bcache_claim(s->c, key_id(k), key_no(k), key_size(k), &e);
			if (ret == 1) {
				atomic_fetch_add(&s->claim_fills, 1);
				if (stress_fill(s, k, e, &x) == 0)
					bcache_put(s->c, e);
			} else if (ret == 0) {
				atomic_fetch_add(&s->claim_zero, 1);
			} else {
				stress_fail(s, "claim of key %u returned %d", k, ret);
			}
			continue;
		}
		/* holding nothing: may wait for room */
		ret = bcache_get(s->c, key_id(k), key_no(k), key_size(k), true, &e);
		if (ret < 0) {
			atomic_fetch_add(&s->get_errors, 1);
			if (ret != -EIO || e)
				stress_fail(s, "get of key %u failed with %d", k, ret);
			continue;
		}
		if (ret == 1) {
			atomic_fetch_add(&s->get_misses, 1);
			if (stress_fill(s, k, e, &x) != 0)
				continue;
		} else {
			atomic_fetch_add(&s->get_hits, 1);
		}
		if (bad_pat(e, bcache_buf(e), key_id(k), key_no(k), 0) != SIZE_MAX)
			stress_fail(s, "key %u: wrong bytes", k);
		/* sometimes hold it across a second get */
		if ((x >> 4) % 4 == 0) {
			held = e;
			k2 = (k + 1 + (x >> 12) % 5) % STRESS_KEYS;
			/* holding one: must not wait for room */
			ret = bcache_get(s->c, key_id(k2), key_no(k2), key_size(k2), false, &e);
			if (ret == 1) {
				atomic_fetch_add(&s->get_misses, 1);
				if (stress_fill(s, k2, e, &x) != 0)
					e = NULL;
			} else if (ret == 0) {
				atomic_fetch_add(&s->get_hits, 1);
			} else if (ret == -EAGAIN) {
				atomic_fetch_add(&s->get_no_room, 1);
				if (e)
					stress_fail(s, "key %u: -EAGAIN but set an entry", k2);
				e = NULL;
			} else {
				atomic_fetch_add(&s->get_errors, 1);
				e = NULL;
			}
			if (e && bad_pat(e, bcache_buf(e), key_id(k2), key_no(k2), 0) != SIZE_MAX)
				stress_fail(s, "key %u: wrong bytes (second get)", k2);
			bcache_put(s->c, e);
			if (bad_pat(held, bcache_buf(held), key_id(k), key_no(k), 0) != SIZE_MAX)
				stress_fail(s, "held key %u changed under its reference", k);
			e = held;
		}
		bcache_put(s->c, e);
	}
	return NULL;
}

START_TEST(concurrent_random_gets)
{
	struct stress *s = calloc(1, sizeof(*s));
	pthread_t t[STRESS_THREADS];
	struct bcache_stats st;
	unsigned long gets;

	ck_assert_ptr_nonnull(s);
	pthread_mutex_init(&s->fail_lock, NULL);
	ck_assert_int_eq(bcache_new(STRESS_BUDGET, &s->c), 0);
	for (int i = 0; i < STRESS_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, stress_run, s), 0);
	for (int i = 0; i < STRESS_THREADS; i++)
		join_within(t[i], 60000, "a random reader");
	ck_assert_msg(s->failures == 0, "%d failures, first: %s", s->failures, s->first_failure);

	bcache_stats(s->c, &st);
	gets = s->get_hits + s->get_misses + s->get_errors;
	/* every get is exactly one of hit, miss, or the error of a fill it waited for;
	 * a lookup that finds the chunk is a hit too */
	ck_assert_uint_eq(st.hits, s->get_hits + s->lookup_hits);
	ck_assert_uint_eq(st.misses, s->get_misses + s->claim_fills);
	ck_assert_uint_le(st.waits, gets);
	ck_assert_uint_le(s->get_errors, st.waits);
	/* every fill started is in the table, was evicted, or failed */
	ck_assert_uint_eq(st.misses, st.entries + st.evictions + s->failed_fills);
	/* nothing is held now */
	ck_assert_uint_le(st.used, st.budget);
	/* no unit here is larger than the budget, so it held throughout */
	ck_assert_uint_le(st.peak, st.budget);
	ck_assert_uint_eq(st.charged, 0);
	ck_assert_uint_le(st.entries, STRESS_KEYS);
	ck_assert_uint_ge(st.used, st.entries * COST(key_size(0)));
	ck_assert_uint_le(st.used, st.entries * COST(256 + 2999));
	ck_assert_uint_gt(st.evictions, 0);
	ck_assert_uint_gt(st.waits, 0);
	ck_assert_uint_gt(s->lookup_hits, 0);
	bcache_free(s->c);
	pthread_mutex_destroy(&s->fail_lock);
	free(s);
}
END_TEST

/* Gets and fills of two archives while a thread keeps dropping them. */
struct dropper {
	struct bcache *c;
	atomic_int stop;
	atomic_int failures;
	atomic_ulong served;
};

/* A self-describing buffer: 4 bytes of salt, then the pattern of that salt. */
static void fill_salted(struct bcache_ent *e, uint64_t id, uint64_t no, unsigned salt)
{
	unsigned char *p = bcache_buf(e);

	fill_pat(e, id, no, salt);
	memcpy(p, &salt, sizeof(salt));
}

static int salted_ok(struct bcache_ent *e, uint64_t id, uint64_t no)
{
	const unsigned char *p = bcache_buf(e);
	unsigned salt;

	memcpy(&salt, p, sizeof(salt));
	for (size_t i = sizeof(salt); i < bcache_size(e); i++)
		if (p[i] != pat(id, no, salt, i))
			return 0;
	return 1;
}

static void *drop_worker(void *arg)
{
	struct dropper *d = arg;
	static atomic_uint seed = 11;
	uint32_t x = atomic_fetch_add(&seed, 1) * 2654435761u;

	for (int op = 0; op < 4000; op++) {
		struct bcache_ent *e;
		uint64_t id = 1 + (lcg_next(&x) % 2), no = lcg_next(&x) % 16;
		size_t size = 64 + (size_t)no * 100;
		int ret = bcache_get(d->c, id, no, size, true, &e);

		if (ret < 0) {
			atomic_fetch_add(&d->failures, 1);
			continue;
		}
		if (ret == 1) {
			fill_salted(e, id, no, lcg_next(&x));
			bcache_done(d->c, e, 0);
		}
		if (!salted_ok(e, id, no))
			atomic_fetch_add(&d->failures, 1);
		atomic_fetch_add(&d->served, 1);
		bcache_put(d->c, e);
	}
	return NULL;
}

static void *drop_loop(void *arg)
{
	struct dropper *d = arg;
	uint64_t id = 1;

	while (!atomic_load(&d->stop)) {
		bcache_drop(d->c, id);
		id = 3 - id;
		sched_yield();
	}
	return NULL;
}

START_TEST(concurrent_gets_and_drops)
{
	enum { T = 8 };
	struct dropper d = { .stop = 0 };
	pthread_t t[T], dt;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(8000, &d.c), 0);
	ck_assert_int_eq(pthread_create(&dt, NULL, drop_loop, &d), 0);
	for (int i = 0; i < T; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, drop_worker, &d), 0);
	for (int i = 0; i < T; i++)
		pthread_join(t[i], NULL);
	atomic_store(&d.stop, 1);
	pthread_join(dt, NULL);
	ck_assert_int_eq(d.failures, 0);
	ck_assert_uint_eq(d.served, T * 4000);
	bcache_stats(d.c, &st);
	ck_assert_uint_le(st.used, st.budget);
	ck_assert_uint_le(st.entries, 32);
	ck_assert_uint_ge(st.used, st.entries * COST(64));
	ck_assert_uint_le(st.peak, st.budget);
	/* drop everything: the table is empty and the counters agree */
	bcache_drop(d.c, 1);
	bcache_drop(d.c, 2);
	bcache_stats(d.c, &st);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.used, 0);
	bcache_free(d.c);
}
END_TEST

START_TEST(free_and_put_accept_null)
{
	struct bcache *c;

	bcache_free(NULL);
	ck_assert_int_eq(bcache_new(0, &c), 0);
	bcache_put(c, NULL);
	ck_assert_uint_eq(stats(c).budget, 0);
	bcache_free(c);
}
END_TEST

START_TEST(zero_budget_still_serves)
{
	struct bcache *c;
	struct bcache_ent *e, *h, *f;

	ck_assert_int_eq(bcache_new(0, &c), 0);
	ck_assert_int_eq(bcache_get(c, 1, 1, 10, true, &e), 1); /* alone: admitted */
	fill_pat(e, 1, 1, 0);
	bcache_done(c, e, 0);
	ck_assert_int_eq(bcache_get(c, 1, 1, 10, false, &h), 0);
	ck_assert_ptr_eq(h, e);
	/* anything else must wait */
	ck_assert_int_eq(bcache_get(c, 1, 2, 10, false, &f), -EAGAIN);
	ck_assert_ptr_null(f);
	assert_pat(h, 1, 1, 0);
	bcache_put(c, h);
	bcache_put(c, e);
	ck_assert_uint_eq(stats(c).entries, 0);
	ck_assert_uint_eq(stats(c).used, 0);
	bcache_free(c);
}
END_TEST

/*
 * Issue 10 item 8: an xz file of a million one-byte Blocks peaked at 191 MiB
 * at cache_size=1M, because each entry counted as one byte.  Each must cost
 * its buffer plus BCACHE_ENT_COST, and the budget must hold at every step.
 */
START_TEST(tiny_entries_cost_their_overhead)
{
	enum { N = 200000 };
	const size_t budget = 64 << 10, fit = (64 << 10) / COST(1);
	struct bcache *c;
	struct bcache_ent *e;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(budget, &c), 0);
	for (uint64_t k = 0; k < N; k++) {
		size_t want = k + 1 < fit ? k + 1 : fit;

		put_new(c, 9, k, 1);
		st = stats(c);
		ck_assert_msg(
			st.used <= budget && st.entries == want && st.used == st.entries * COST(1),
			"after %llu one-byte entries: used %zu, entries %zu (want %zu of "
			"COST(1) = %zu each, budget %zu)",
			(unsigned long long)k + 1, st.used, st.entries, want, COST(1), budget);
	}
	st = stats(c);
	ck_assert_uint_eq(st.entries, fit);
	ck_assert_uint_eq(st.used, fit * COST(1));
	ck_assert_uint_eq(st.peak, fit * COST(1));
	ck_assert_uint_eq(st.evictions, N - fit);
	ck_assert_uint_eq(st.misses, N);
	/* the newest `fit` are the ones kept */
	ck_assert_int_eq(bcache_lookup(c, 9, N - 1, &e), 0);
	assert_pat(e, 9, N - 1, 0);
	bcache_put(c, e);
	ck_assert_int_eq(bcache_lookup(c, 9, N - fit, &e), 0);
	assert_pat(e, 9, N - fit, 0);
	bcache_put(c, e);
	ck_assert_int_eq(bcache_lookup(c, 9, N - fit - 1, &e), -ENOENT);
	bcache_free(c);
}
END_TEST

/* Waits in bcache_wait_room on another thread. */
struct roomer {
	struct bcache *c;
	size_t size;
	atomic_int finished;
};

static void *roomer_run(void *arg)
{
	struct roomer *r = arg;

	bcache_wait_room(r->c, r->size);
	atomic_store(&r->finished, 1);
	return NULL;
}

/*
 * Readers hold the whole budget: a new chunk is refused by the calls that
 * never wait, and get with wait blocks until a holder lets go, then evicts
 * what was let go and is admitted.
 */
START_TEST(full_of_references_refuses_or_waits)
{
	struct bcache *c;
	struct bcache_ent *a, *b, *e;
	struct getter g;
	pthread_t t;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(2 * COST(1000), &c), 0);
	ck_assert_int_eq(bcache_get(c, 1, 0, 1000, false, &a), 1);
	fill_pat(a, 1, 0, 0);
	bcache_done(c, a, 0);
	ck_assert_int_eq(bcache_get(c, 1, 1, 1000, false, &b), 1);
	fill_pat(b, 1, 1, 0);
	bcache_done(c, b, 0);

	e = (struct bcache_ent *)1;
	ck_assert_int_eq(bcache_get(c, 1, 2, 1000, false, &e), -EAGAIN);
	ck_assert_ptr_null(e);
	e = (struct bcache_ent *)1;
	ck_assert_int_eq(bcache_claim(c, 1, 2, 1000, &e), 0);
	ck_assert_ptr_null(e);
	/* not even one byte fits */
	ck_assert_int_eq(bcache_get(c, 1, 3, 1, false, &e), -EAGAIN);
	ck_assert_int_eq(bcache_claim(c, 1, 3, 1, &e), 0);
	/* but a hit needs no room */
	ck_assert_int_eq(bcache_get(c, 1, 1, 1000, false, &e), 0);
	ck_assert_ptr_eq(e, b);
	bcache_put(c, e);
	st = stats(c);
	ck_assert_uint_eq(st.used, 2 * COST(1000));
	ck_assert_uint_eq(st.entries, 2);
	ck_assert_uint_eq(st.misses, 2);
	ck_assert_uint_eq(st.evictions, 0);
	ck_assert_uint_eq(st.room_waits, 0);

	g = (struct getter){ .c = c, .id = 1, .no = 2, .size = 1000, .wait = true };
	ck_assert_int_eq(pthread_create(&t, NULL, getter_run, &g), 0);
	wait_for_room_waits(c, 1);
	sleep_ms(20);
	ck_assert_msg(!atomic_load(&g.finished), "get(wait) returned %d with the budget held",
		      g.ret);
	/* a put that leaves the entry referenced frees no room */
	ck_assert_int_eq(bcache_get(c, 1, 0, 1000, false, &e), 0);
	bcache_put(c, e);
	sleep_ms(20);
	ck_assert(!atomic_load(&g.finished));

	assert_pat(a, 1, 0, 0);
	bcache_put(c, a); /* the last reference: the waiter may evict it */
	join_within(t, 10000, "get(wait) after the holder let go");
	ck_assert_int_eq(g.ret, 1);
	ck_assert_ptr_nonnull(g.e);
	st = stats(c);
	ck_assert_uint_eq(st.used, 2 * COST(1000));
	ck_assert_uint_eq(st.entries, 2);
	ck_assert_uint_eq(st.evictions, 1);
	ck_assert_uint_eq(st.misses, 3);
	ck_assert_uint_ge(st.room_waits, 1);
	ck_assert_uint_le(st.peak, st.budget);
	fill_pat(g.e, 1, 2, 0);
	bcache_done(c, g.e, 0);
	bcache_put(c, g.e);

	/* a went, b (held all along) stayed */
	assert_pat(b, 1, 1, 0);
	bcache_put(c, b);
	ck_assert_int_eq(bcache_lookup(c, 1, 0, &e), -ENOENT);
	ck_assert_int_eq(bcache_lookup(c, 1, 1, &e), 0);
	bcache_put(c, e);
	bcache_free(c);
}
END_TEST

/*
 * A unit larger than the whole budget is served alone: it evicts all that
 * is unreferenced, nothing else is admitted while it is in, and a second
 * such unit waits until the first is let go.
 */
START_TEST(unit_larger_than_budget_is_served_alone)
{
	struct bcache *c;
	struct bcache_ent *x, *e;
	struct getter g;
	pthread_t t;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(COST(1000), &c), 0);
	for (uint64_t k = 0; k < 3; k++)
		put_new(c, 2, k, 10);
	ck_assert_int_eq(bcache_get(c, 1, 0, 5000, false, &x), 1);
	st = stats(c);
	ck_assert_uint_eq(st.evictions, 3);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_eq(st.used, COST(5000));
	fill_pat(x, 1, 0, 0);
	bcache_done(c, x, 0);

	/* while it is in, nothing else fits, large or small */
	ck_assert_int_eq(bcache_get(c, 2, 0, 10, false, &e), -EAGAIN);
	ck_assert_int_eq(bcache_claim(c, 2, 0, 10, &e), 0);
	ck_assert_int_eq(bcache_get(c, 1, 1, 6000, false, &e), -EAGAIN);
	ck_assert_int_eq(bcache_claim(c, 1, 1, 6000, &e), 0);

	g = (struct getter){ .c = c, .id = 1, .no = 1, .size = 6000, .wait = true };
	ck_assert_int_eq(pthread_create(&t, NULL, getter_run, &g), 0);
	wait_for_room_waits(c, 1);
	/* another reference to the first, taken and let go, frees nothing */
	ck_assert_int_eq(bcache_get(c, 1, 0, 5000, false, &e), 0);
	assert_pat(e, 1, 0, 0);
	bcache_put(c, e);
	sleep_ms(20);
	ck_assert_msg(!atomic_load(&g.finished),
		      "a second unit larger than the budget got in (%d) beside a held one", g.ret);
	st = stats(c);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_eq(st.used, COST(5000));

	bcache_put(c, x);
	join_within(t, 10000, "the second large unit after the first was let go");
	ck_assert_int_eq(g.ret, 1);
	st = stats(c);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_eq(st.used, COST(6000));
	ck_assert_uint_eq(st.evictions, 4);
	ck_assert_uint_eq(st.peak, COST(6000));
	fill_pat(g.e, 1, 1, 0);
	bcache_done(c, g.e, 0);
	ck_assert_int_eq(bcache_lookup(c, 1, 0, &e), -ENOENT);
	bcache_put(c, g.e);
	st = stats(c);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.used, 0);
	bcache_free(c);
}
END_TEST

/*
 * bcache_charge evicts what is unreferenced to make room, never waits, and
 * counts in used and charged; bcache_uncharge gives the bytes back and
 * wakes whoever waits for room.
 */
START_TEST(charges_evict_count_and_wake_room_waiters)
{
	struct bcache *c;
	struct bcache_ent *h2, *h3, *e;
	struct getter g;
	struct roomer rm = { 0 };
	pthread_t t, tr;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(4 * COST(100), &c), 0);
	for (uint64_t k = 0; k < 4; k++)
		put_new(c, 1, k, 100);
	bcache_charge(c, 2 * COST(100));
	st = stats(c);
	ck_assert_uint_eq(st.used, 4 * COST(100));
	ck_assert_uint_eq(st.charged, 2 * COST(100));
	ck_assert_uint_eq(st.entries, 2);
	ck_assert_uint_eq(st.evictions, 2);
	ck_assert_int_eq(bcache_lookup(c, 1, 0, &e), -ENOENT); /* the least recently used went */
	ck_assert_int_eq(bcache_lookup(c, 1, 1, &e), -ENOENT);

	/* with the rest held, a charge has nothing to evict and passes the budget */
	ck_assert_int_eq(bcache_get(c, 1, 2, 100, false, &h2), 0);
	ck_assert_int_eq(bcache_get(c, 1, 3, 100, false, &h3), 0);
	bcache_charge(c, COST(100));
	st = stats(c);
	ck_assert_uint_eq(st.used, 5 * COST(100));
	ck_assert_uint_eq(st.charged, 3 * COST(100));
	ck_assert_uint_eq(st.peak, 5 * COST(100));
	ck_assert_uint_eq(st.entries, 2);
	ck_assert_uint_eq(st.evictions, 2);
	ck_assert_int_eq(bcache_get(c, 1, 4, 100, false, &e), -EAGAIN);

	g = (struct getter){ .c = c, .id = 1, .no = 4, .size = 100, .wait = true };
	rm.c = c;
	rm.size = 100;
	ck_assert_int_eq(pthread_create(&t, NULL, getter_run, &g), 0);
	ck_assert_int_eq(pthread_create(&tr, NULL, roomer_run, &rm), 0);
	wait_for_room_waits(c, 2);
	/* back to exactly the budget: still no room for COST(100); both wake and wait again */
	bcache_uncharge(c, COST(100));
	wait_for_room_waits(c, 4);
	ck_assert(!atomic_load(&g.finished));
	ck_assert(!atomic_load(&rm.finished));
	/* only an uncharge can let them in now: the holders keep their references */
	bcache_uncharge(c, 2 * COST(100));
	join_within(tr, 10000, "bcache_wait_room after an uncharge");
	join_within(t, 10000, "get(wait) after an uncharge");
	ck_assert_int_eq(g.ret, 1);
	fill_pat(g.e, 1, 4, 0);
	bcache_done(c, g.e, 0);
	bcache_put(c, g.e);
	st = stats(c);
	ck_assert_uint_eq(st.charged, 0);
	ck_assert_uint_eq(st.used, 3 * COST(100));
	ck_assert_uint_eq(st.entries, 3);
	ck_assert_uint_eq(st.evictions, 2);
	ck_assert_uint_eq(st.peak, 5 * COST(100));
	assert_pat(h2, 1, 2, 0);
	assert_pat(h3, 1, 3, 0);
	bcache_put(c, h2);
	bcache_put(c, h3);
	bcache_free(c);
}
END_TEST

/*
 * The header admits a new entry if it fits "or if the table is otherwise
 * empty".  Charges (parked decoders) are not entries: charged bytes at or
 * past the budget must not shut every reader out, because no put can ever
 * make room then, and a get with wait would hang until someone happened to
 * uncharge.
 */
START_TEST(charges_alone_do_not_shut_out_an_empty_table)
{
	struct bcache *c;
	struct bcache_ent *e, *first;
	struct getter g;
	pthread_t t;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(4 * COST(100), &c), 0);
	bcache_charge(c, 4 * COST(100));
	g = (struct getter){ .c = c, .id = 1, .no = 0, .size = 200, .wait = true };
	ck_assert_int_eq(pthread_create(&t, NULL, getter_run, &g), 0);
	join_within(t, 5000, "get(wait) with only charges in the cache");
	ck_assert_int_eq(g.ret, 1);
	st = stats(c);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_eq(st.used, 4 * COST(100) + COST(200));
	first = g.e;
	fill_pat(first, 1, 0, 0);
	bcache_done(c, first, 0);

	/*
	 * Not empty now: a second entry is refused, and waits for the first to
	 * go (charges past half the budget do not count: 2 units of COST(200)
	 * and the half do not fit).
	 */
	ck_assert_int_eq(bcache_get(c, 1, 1, 200, false, &e), -EAGAIN);
	ck_assert_int_eq(bcache_claim(c, 1, 1, 200, &e), 0);
	g = (struct getter){ .c = c, .id = 1, .no = 1, .size = 200, .wait = true };
	ck_assert_int_eq(pthread_create(&t, NULL, getter_run, &g), 0);
	wait_for_room_waits(c, 1);
	sleep_ms(20);
	ck_assert(!atomic_load(&g.finished));
	assert_pat(first, 1, 0, 0);
	bcache_put(c, first); /* over the budget: evicted at once */
	join_within(t, 10000, "get(wait) once the only entry was let go");
	ck_assert_int_eq(g.ret, 1);
	st = stats(c);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_eq(st.evictions, 1);
	ck_assert_uint_eq(st.used, 4 * COST(100) + COST(200));
	ck_assert_uint_eq(st.charged, 4 * COST(100));
	bcache_done(c, g.e, -ECANCELED);
	bcache_uncharge(c, 4 * COST(100));
	ck_assert_uint_eq(stats(c).used, 0);
	bcache_free(c);
}
END_TEST

/*
 * Reservations (a gzip pass's output before its unit is known) count like
 * entries: they evict unreferenced entries, are refused when they would pass
 * the budget (even with the table empty), and keep claims out until given
 * back.
 */
START_TEST(reservations_evict_are_refused_and_keep_claims_out)
{
	struct bcache *c;
	struct bcache_ent *e;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(4 * COST(1000), &c), 0);
	put_new(c, 1, 0, 1000);
	put_new(c, 1, 1, 1000);
	ck_assert_int_eq(bcache_reserve(c, 2 * COST(1000)), 0);
	ck_assert_int_eq(bcache_reserve(c, 2 * COST(1000)), 0); /* evicts both entries */
	st = stats(c);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.reserved, 4 * COST(1000));
	ck_assert_uint_eq(st.used, st.budget);
	ck_assert_int_eq(bcache_reserve(c, 1), -EAGAIN);
	ck_assert_int_eq(bcache_claim(c, 2, 0, 1000, &e), 0);
	ck_assert_ptr_null(e);
	bcache_unreserve(c, 2 * COST(1000));
	ck_assert_int_eq(bcache_claim(c, 2, 0, 1000, &e), 1);
	bcache_done(c, e, 0);
	bcache_put(c, e);
	bcache_unreserve(c, 2 * COST(1000));
	st = stats(c);
	ck_assert_uint_eq(st.reserved, 0);
	ck_assert_uint_eq(st.used, COST(1000));
	/* more than the whole budget is never reserved, even in an empty table */
	bcache_drop(c, 2);
	ck_assert_int_eq(bcache_reserve(c, 5 * COST(1000)), -EAGAIN);
	ck_assert_uint_eq(stats(c).used, 0);
	bcache_free(c);
}
END_TEST

/*
 * An adopted buffer becomes a ready entry in place of its reservation:
 * used does not move, nothing stays reserved, the bytes are served as
 * they were written, and the entry is evicted like any other.  A key
 * already there refuses it, leaving buffer and reservation to the caller.
 */
START_TEST(adopt_turns_a_reservation_into_an_entry)
{
	struct bcache *c;
	struct bcache_ent *e;
	struct bcache_stats st;
	unsigned char *buf;

	ck_assert_int_eq(bcache_new(4 * COST(1000), &c), 0);
	ck_assert_int_eq(bcache_reserve(c, COST(1000)), 0);
	buf = bcache_buf_alloc(1000);
	ck_assert_ptr_nonnull(buf);
	memset(buf, 0x5A, 900);
	ck_assert(bcache_adopt(c, 1, 0, buf, 900, 1000));
	st = stats(c);
	ck_assert_uint_eq(st.reserved, 0);
	ck_assert_uint_eq(st.used, COST(1000));
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_int_eq(bcache_lookup(c, 1, 0, &e), 0);
	ck_assert_uint_eq(bcache_size(e), 900);
	ck_assert_int_eq(((unsigned char *)bcache_buf(e))[899], 0x5A);
	bcache_put(c, e);
	ck_assert_int_eq(bcache_reserve(c, COST(1000)), 0);
	buf = bcache_buf_alloc(1000);
	ck_assert(!bcache_adopt(c, 1, 0, buf, 1000, 1000));
	bcache_buf_free(buf, 1000);
	bcache_unreserve(c, COST(1000));
	ck_assert_uint_eq(stats(c).used, COST(1000));
	/* three more entries: the adopted one, least recently used, goes */
	for (uint64_t k = 1; k <= 3; k++)
		put_new(c, 2, k, 1000);
	put_new(c, 2, 4, 1000);
	ck_assert_int_eq(bcache_lookup(c, 1, 0, &e), -ENOENT);
	ck_assert_uint_le(stats(c).used, stats(c).budget);
	bcache_free(c);
}
END_TEST

START_TEST(peak_is_the_most_used_has_been)
{
	struct bcache *c;
	struct bcache_ent *e1, *e2;
	struct bcache_stats st;

	ck_assert_int_eq(bcache_new(1 << 20, &c), 0);
	ck_assert_uint_eq(stats(c).peak, 0);
	ck_assert_int_eq(bcache_get(c, 1, 0, 1000, true, &e1), 1);
	ck_assert_uint_eq(stats(c).peak, COST(1000)); /* in flight counts */
	fill_pat(e1, 1, 0, 0);
	bcache_done(c, e1, 0);
	ck_assert_int_eq(bcache_get(c, 1, 1, 3000, false, &e2), 1);
	ck_assert_uint_eq(stats(c).peak, COST(1000) + COST(3000));
	bcache_done(c, e2, -EIO);
	bcache_put(c, e1);
	bcache_drop(c, 1);
	put_new(c, 2, 0, 10);
	st = stats(c);
	ck_assert_uint_eq(st.used, COST(10));
	ck_assert_uint_eq(st.peak, COST(1000) + COST(3000)); /* the most, not the latest */

	/* a charge counts too, past the budget (the part past half evicts nothing) */
	bcache_charge(c, (1 << 20) + 5);
	st = stats(c);
	ck_assert_uint_eq(st.used, (1 << 20) + 5 + COST(10));
	ck_assert_uint_eq(st.peak, (1 << 20) + 5 + COST(10));
	bcache_uncharge(c, (1 << 20) + 5);
	st = stats(c);
	ck_assert_uint_eq(st.used, COST(10));
	ck_assert_uint_eq(st.peak, (1 << 20) + 5 + COST(10));
	bcache_free(c);
}
END_TEST

/*
 * Readers that each hold one reference at a time, as the daemon's workers
 * do, all getting with wait: no deadlock, and `used` never passes the
 * budget, except by one unit larger than the whole budget served alone.
 */
enum { ONE_THREADS = 8, ONE_OPS = 3000, ONE_KEYS = 64 };
#define ONE_BUDGET (64u << 10)
#define ONE_BIG	   100000u /* the one key larger than the budget */

struct one_ref {
	struct bcache *c;
	atomic_size_t max_used; /* the most stats().used seen while holding */
	atomic_ulong served, failed_fills, big_served;
	atomic_int failures;
	char first_failure[256];
	pthread_mutex_t fail_lock;
};

__attribute__((format(printf, 2, 3))) static void one_fail(struct one_ref *o, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&o->fail_lock);
	if (atomic_fetch_add(&o->failures, 1) == 0) {
		va_start(ap, fmt);
		vsnprintf(o->first_failure, sizeof(o->first_failure), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&o->fail_lock);
}

static size_t one_size(unsigned k)
{
	if (k == ONE_KEYS - 1)
		return ONE_BIG;
	if (k % 8 == 7)
		return 9000 + k * 100; /* a sixth to a fifth of the budget */
	return 100 + (k * 2654435761u) % 4000;
}

static void *one_run(void *arg)
{
	struct one_ref *o = arg;
	static atomic_uint seed = 5;
	uint32_t x = atomic_fetch_add(&seed, 1) * 2246822519u;

	for (int op = 0; op < ONE_OPS; op++) {
		unsigned k = lcg_next(&x) % (ONE_KEYS - 1);
		uint64_t id, no;
		struct bcache_ent *e;
		struct bcache_stats st;
		size_t seen;
		int ret;

		if (lcg_next(&x) % 100 == 0)
			k = ONE_KEYS - 1;
		id = 20 + k % 2;
		no = k;
		ret = bcache_get(o->c, id, no, one_size(k), true, &e);
		if (ret < 0) {
			/* only the error of a failed fill this get waited for */
			if (ret != -EIO || e)
				one_fail(o, "get of key %u returned %d", k, ret);
			continue;
		}
		if (bcache_size(e) != one_size(k))
			one_fail(o, "key %u: %zu bytes", k, bcache_size(e));
		if (ret == 1) {
			fill_pat(e, id, no, 0);
			if (lcg_next(&x) % 64 == 0) {
				bcache_done(o->c, e, -EIO);
				atomic_fetch_add(&o->failed_fills, 1);
				continue;
			}
			bcache_done(o->c, e, 0);
		}
		if (bad_pat(e, bcache_buf(e), id, no, 0) != SIZE_MAX)
			one_fail(o, "key %u: wrong bytes", k);
		bcache_stats(o->c, &st);
		seen = atomic_load(&o->max_used);
		while (st.used > seen &&
		       !atomic_compare_exchange_weak(&o->max_used, &seen, st.used))
			;
		if (k == ONE_KEYS - 1)
			atomic_fetch_add(&o->big_served, 1);
		atomic_fetch_add(&o->served, 1);
		bcache_put(o->c, e);
	}
	return NULL;
}

START_TEST(one_reference_each_never_deadlocks_or_overspends)
{
	const size_t bound = COST(ONE_BIG) > ONE_BUDGET ? COST(ONE_BIG) : ONE_BUDGET;
	struct one_ref *o = calloc(1, sizeof(*o));
	pthread_t t[ONE_THREADS];
	struct bcache_stats st;

	ck_assert_ptr_nonnull(o);
	pthread_mutex_init(&o->fail_lock, NULL);
	ck_assert_int_eq(bcache_new(ONE_BUDGET, &o->c), 0);
	for (int i = 0; i < ONE_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, one_run, o), 0);
	/* one deadline for them all: a hang fails here instead of timing out silently */
	for (int i = 0; i < ONE_THREADS; i++)
		join_within(t[i], 60000, "a reader holding one reference at a time");
	ck_assert_msg(o->failures == 0, "%d failures, first: %s", o->failures, o->first_failure);
	bcache_stats(o->c, &st);
	ck_assert_msg(o->max_used <= bound, "used reached %zu: budget %u, largest unit costs %zu",
		      (size_t)o->max_used, ONE_BUDGET, COST(ONE_BIG));
	ck_assert_msg(st.peak <= bound, "peak %zu: budget %u, largest unit costs %zu", st.peak,
		      ONE_BUDGET, COST(ONE_BIG));
	ck_assert_uint_ge(st.peak, o->max_used);
	/* nothing held: the large unit was evicted at its last put */
	ck_assert_uint_le(st.used, st.budget);
	ck_assert_uint_eq(st.charged, 0);
	ck_assert_uint_gt(o->big_served, 0);
	ck_assert_uint_gt(st.room_waits, 0);
	ck_assert_uint_gt(st.evictions, 0);
	ck_assert_uint_eq(st.misses, st.entries + st.evictions + o->failed_fills);
	ck_assert_uint_eq(st.hits + st.misses - o->failed_fills, o->served);
	bcache_free(o->c);
	pthread_mutex_destroy(&o->fail_lock);
	free(o);
}
END_TEST

static Suite *bcache_suite(void)
{
	Suite *s = suite_create("bcache");
	TCase *tc = tcase_create("single");
	TCase *tt = tcase_create("threads");

	tcase_add_test(tc, hit_after_fill_returns_same_bytes);
	tcase_add_test(tc, miss_gives_buffer_of_requested_size);
	tcase_add_test(tc, large_buffers_are_huge_page_aligned);
	tcase_add_test(tc, keys_are_id_and_number);
	tcase_add_test(tc, many_entries_grow_the_table);
	tcase_add_test(tc, failed_fill_without_waiters_leaves_no_trace);
	tcase_add_test(tc, budget_holds_with_lru_order);
	tcase_add_test(tc, demoted_entries_go_first_in_demotion_order);
	tcase_add_test(tc, read_through_entries_lend_their_buffers);
	tcase_add_test(tc, full_cache_reuses_victim_buffers);
	tcase_add_test(tc, budget_holds_under_churn);
	tcase_add_test(tc, referenced_entries_are_never_evicted);
	tcase_add_test(tc, held_entries_over_budget_shrink_back_on_put);
	tcase_add_test(tc, chunk_larger_than_budget);
	tcase_add_test(tc, chunk_larger_than_budget_is_shared_while_held);
	tcase_add_test(tc, claim_absent_present_and_in_flight);
	tcase_add_test(tc, claim_in_flight_by_get_does_not_wait);
	tcase_add_test(tc, drop_removes_entries_of_one_id);
	tcase_add_test(tc, drop_keeps_held_reference_valid);
	tcase_add_test(tc, drop_removes_entry_in_flight);
	tcase_add_test(tc, lookup_absent_or_in_flight_is_enoent);
	tcase_add_test(tc, lookup_of_failed_fill_is_enoent);
	tcase_add_test(tc, lookup_counts_as_recent_use);
	tcase_add_test(tc, free_and_put_accept_null);
	tcase_add_test(tc, zero_budget_still_serves);
	tcase_add_test(tc, tiny_entries_cost_their_overhead);
	tcase_add_test(tc, reservations_evict_are_refused_and_keep_claims_out);
	tcase_add_test(tc, adopt_turns_a_reservation_into_an_entry);
	tcase_add_test(tc, peak_is_the_most_used_has_been);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tcase_add_test(tt, failed_fill_reaches_waiter_and_refill_works);
	tcase_add_test(tt, concurrent_misses_fill_once);
	tcase_add_test(tt, concurrent_misses_share_the_error);
	tcase_add_test(tt, waiter_frees_entry_dropped_before_it_woke);
	tcase_add_test(tt, drop_in_flight_still_serves_its_waiters);
	tcase_add_test(tt, concurrent_random_gets);
	tcase_add_test(tt, concurrent_gets_and_drops);
	tcase_add_test(tt, full_of_references_refuses_or_waits);
	tcase_add_test(tt, unit_larger_than_budget_is_served_alone);
	tcase_add_test(tt, charges_evict_count_and_wake_room_waiters);
	tcase_add_test(tt, charges_alone_do_not_shut_out_an_empty_table);
	tcase_add_test(tt, one_reference_each_never_deadlocks_or_overspends);
	tcase_set_timeout(tt, 120);
	suite_add_tcase(s, tt);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bcache_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
