/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_HTAB_H
#define ZMOUNT_HTAB_H

/*
 * An intrusive chained hash table: the caller embeds a struct htab_link in
 * each entry and gives the table a function that hashes an entry from its
 * link.  The table only chains links; it never allocates, copies or frees
 * an entry, and it never compares keys: a lookup walks the chain of the
 * key's bucket (htab_bucket) and compares the keys itself, so the same
 * entry may hold several links, each in its own table, keyed differently.
 *
 * Hashes need not be well mixed: the table mixes them before taking their
 * low bits.  Equal keys must hash equal.
 *
 * Growth: the bucket array doubles when an add takes the load past
 * HTAB_MAX_LOAD entries per bucket, so chains stay short however many
 * entries there are.  Growth may fail (out of memory): the table then
 * keeps working at its size, with longer chains, and tries again at the
 * next add.  It never shrinks: the array stays at the largest size it
 * reached, 8 bytes a bucket, at most about one bucket per entry at that peak.
 *
 * Threads: none of its own; the caller's lock guards the table and every
 * link in it.
 */

#include <stddef.h>

#define HTAB_MAX_LOAD 2

struct htab_link {
	struct htab_link *next; /* in its bucket's chain; NULL at the end */
};

/*
 * The hash of the entry holding l: the same for as long as l is in a table.
 * Called by htab_add, htab_del and growth, under the caller's lock.
 */
typedef size_t htab_hash_fn(const struct htab_link *l);

struct htab {
	struct htab_link **buckets;
	size_t mask;  /* buckets - 1: their number is a power of two */
	size_t count; /* links in the table */
	htab_hash_fn *hash;
};

/* The entry of type, whose member is the link l. */
#define htab_entry(l, type, member) ((type *)(void *)((char *)&(l)->next - offsetof(type, member)))

/*
 * Makes t an empty table of nbuckets buckets (a power of two, at least 1)
 * whose entries hash by hash.  Returns 0, or -ENOMEM (t then holds no
 * memory, and htab_fini accepts it) or -EINVAL for a bad nbuckets.
 */
int htab_init(struct htab *t, size_t nbuckets, htab_hash_fn *hash);

/* Frees the bucket array; the entries are the caller's.  Accepts a zeroed or failed t. */
void htab_fini(struct htab *t);

/* Adds l, which must be in no table, at the head of its chain.  Never fails (see Growth). */
void htab_add(struct htab *t, struct htab_link *l);

/* Takes l, which must be in t, out of it. */
void htab_del(struct htab *t, struct htab_link *l);

/*
 * The first link of the chain that holds every entry of that hash (NULL if
 * it is empty); follow ->next and compare keys.  Valid until the next add.
 */
struct htab_link *htab_bucket(const struct htab *t, size_t hash);

/* Links in t. */
size_t htab_count(const struct htab *t);

/*
 * A walk over every link of a table, each once, in no order.  The link
 * htab_walk_next returned last may be taken out of the table (htab_del) and
 * freed before the next call; nothing may be added during a walk (an add
 * may grow the table), and no other link taken out.
 */
struct htab_walk {
	const struct htab *t;
	size_t b;		/* the next bucket to start on */
	struct htab_link *next; /* the next link to return */
};

void htab_walk_start(const struct htab *t, struct htab_walk *w);

/* The next link of the walk, or NULL at its end. */
struct htab_link *htab_walk_next(struct htab_walk *w);

#endif
