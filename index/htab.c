/* SPDX-License-Identifier: MIT */
/*
 * How it works: an array of singly linked chains, a power of two long, so
 * a bucket is the low bits of the mixed hash.  Growing allocates the
 * doubled array first and only then moves the links, rehashing each
 * through the caller's function, so a failed allocation leaves the table
 * as it was.  A walk remembers the link after the one it returned, which
 * is why that one may leave the table meanwhile.
 */
#include "htab.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* The 64-bit finalizer of MurmurHash3: every input bit reaches the low bits. */
static size_t mix(size_t h)
{
	uint64_t x = h;

	x ^= x >> 33;
	x *= 0xFF51AFD7ED558CCDull;
	x ^= x >> 33;
	x *= 0xC4CEB9FE1A85EC53ull;
	x ^= x >> 33;
	return (size_t)x;
}

static struct htab_link **slot(const struct htab *t, size_t hash)
{
	return &t->buckets[mix(hash) & t->mask];
}

int htab_init(struct htab *t, size_t nbuckets, htab_hash_fn *hash)
{
	*t = (struct htab){ .hash = hash };
	if (nbuckets == 0 || (nbuckets & (nbuckets - 1)) != 0)
		return -EINVAL;
	t->buckets = calloc(nbuckets, sizeof(*t->buckets));
	if (!t->buckets)
		return -ENOMEM;
	t->mask = nbuckets - 1;
	return 0;
}

void htab_fini(struct htab *t)
{
	free(t->buckets);
	t->buckets = NULL;
	t->mask = 0;
	t->count = 0;
}

/* Doubles the bucket array; on failure leaves t as it was. */
static void grow(struct htab *t)
{
	size_t old = t->mask + 1;
	struct htab_link **ob = t->buckets;

	if (old > SIZE_MAX / 2 / sizeof(*ob))
		return;
	t->buckets = calloc(old * 2, sizeof(*ob));
	if (!t->buckets) {
		t->buckets = ob;
		return;
	}
	t->mask = old * 2 - 1;
	for (size_t i = 0; i < old; i++) {
		struct htab_link *l = ob[i], *next;

		for (; l; l = next) {
			struct htab_link **pp = slot(t, t->hash(l));

			next = l->next;
			l->next = *pp;
			*pp = l;
		}
	}
	free(ob);
}

void htab_add(struct htab *t, struct htab_link *l)
{
	struct htab_link **pp;

	if (t->count >= (t->mask + 1) * HTAB_MAX_LOAD)
		grow(t);
	pp = slot(t, t->hash(l));
	l->next = *pp;
	*pp = l;
	t->count++;
}

void htab_del(struct htab *t, struct htab_link *l)
{
	struct htab_link **pp = slot(t, t->hash(l));

	while (*pp != l)
		pp = &(*pp)->next;
	*pp = l->next;
	l->next = NULL;
	t->count--;
}

struct htab_link *htab_bucket(const struct htab *t, size_t hash)
{
	return *slot(t, hash);
}

size_t htab_count(const struct htab *t)
{
	return t->count;
}

void htab_walk_start(const struct htab *t, struct htab_walk *w)
{
	*w = (struct htab_walk){ .t = t };
}

struct htab_link *htab_walk_next(struct htab_walk *w)
{
	struct htab_link *l = w->next;

	while (!l && w->b <= w->t->mask && w->t->buckets)
		l = w->t->buckets[w->b++];
	if (l)
		w->next = l->next;
	return l;
}
