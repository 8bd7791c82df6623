/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_BCACHE_H
#define ZMOUNT_BCACHE_H

/*
 * The shared cache of decoded chunks: one per process, used by every
 * archive.  Entries are keyed by (archive id, chunk number), refcounted,
 * and kept in LRU order.  The byte budget counts the buffers of every
 * entry in the table, being filled or ready (a new entry takes over the
 * buffer of one it evicts when that is at most 1/8 larger than it needs:
 * no fresh pages to fault in).  Unreferenced entries are evicted,
 * least recently used first, whenever the total would exceed the budget.
 * Referenced ones are never evicted, so the budget can be exceeded while
 * readers hold more than it, by at most what they hold; as soon as the
 * last reference goes the cache shrinks back under the budget.
 *
 * A miss makes the caller the filler: the entry is in the table at once,
 * marked in flight, and the lock is dropped while the caller decodes into
 * it.  Other threads that want the same chunk wait for that one decode.
 *
 * Threads: every function may be called from any thread, except that
 * bcache_free must be the last call.
 */

#include <stddef.h>
#include <stdint.h>

struct bcache;
struct bcache_ent;

struct bcache_stats {
	size_t budget;      /* bytes */
	size_t used;        /* bytes of buffers in the table, in flight included */
	size_t entries;     /* entries in the table */
	uint64_t hits;      /* gets served without decoding, waits included */
	uint64_t misses;    /* fills started */
	uint64_t waits;     /* gets that waited for another thread's fill */
	uint64_t evictions;
};

/* Returns 0 and *out, or -ENOMEM with *out NULL. */
int bcache_new(size_t budget, struct bcache **out);

/* Frees the cache and every entry.  No entry may still be referenced.  Accepts NULL. */
void bcache_free(struct bcache *c);

/*
 * Looks up chunk (id, no), which is size bytes long.
 * Returns:
 *   0  hit: *out is a ready entry holding a reference; release it with bcache_put;
 *   1  miss: *out is a new entry with an uninitialised buffer of size bytes
 *      (bcache_buf) that the caller must fill and then pass to bcache_done;
 *   -ENOMEM  with *out NULL;
 *   -errno   the thread that was filling it failed with that error (*out NULL).
 * May block while another thread fills the same chunk; never while decoding
 * under a lock of its own.
 */
int bcache_get(struct bcache *c, uint64_t id, uint64_t no, size_t size, struct bcache_ent **out);

/*
 * Returns 0 and a referenced ready entry if (id, no) is cached, else
 * -ENOENT (also while it is in flight) with *out NULL.  Never waits.
 */
int bcache_lookup(struct bcache *c, uint64_t id, uint64_t no, struct bcache_ent **out);

/*
 * Like bcache_get, but for chunks a decoder produces on its way to the one
 * it was asked for: never waits and never returns a hit.
 * Returns 1 and *out to fill (as for a miss), 0 with *out NULL when the
 * chunk is already present or in flight, or -ENOMEM.
 */
int bcache_claim(struct bcache *c, uint64_t id, uint64_t no, size_t size,
		 struct bcache_ent **out);

/*
 * Ends a fill.  err == 0: the entry becomes ready and the caller keeps its
 * reference.  err < 0: the entry leaves the table, waiters get err, and the
 * caller's reference is released (e must not be used again).
 */
void bcache_done(struct bcache *c, struct bcache_ent *e, int err);

/* Releases a reference taken by get or claim.  Accepts NULL. */
void bcache_put(struct bcache *c, struct bcache_ent *e);

/*
 * Removes every entry of archive id, in flight or ready; referenced ones are
 * freed at their last put, and a fill in progress completes for its waiters
 * but is not kept.
 */
void bcache_drop(struct bcache *c, uint64_t id);

/* The entry's bytes.  Valid while the caller holds its reference. */
void *bcache_buf(struct bcache_ent *e);
size_t bcache_size(const struct bcache_ent *e);

/* A consistent snapshot of the counters. */
void bcache_stats(struct bcache *c, struct bcache_stats *st);

#endif
