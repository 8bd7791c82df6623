/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_BCACHE_H
#define ZMOUNT_BCACHE_H

/*
 * The shared cache of decoded chunks: one per process, used by every
 * archive.  Entries are keyed by (archive id, chunk number), refcounted,
 * and kept in LRU order.  The byte budget counts, for every entry in the
 * table, being filled or ready, its buffer plus BCACHE_ENT_COST (a new
 * entry takes over the buffer of one it evicts when that is at most 1/8
 * larger than it needs: no fresh pages to fault in), and whatever callers
 * charge to it (bcache_charge: parked decoders) or reserve in it
 * (bcache_reserve: output not yet in a unit).  Unreferenced entries are
 * evicted, least recently used first, to make room.
 *
 * Room: a new entry is admitted only if it then fits the budget, or if the
 * table is otherwise empty (one unit larger than the budget is served
 * alone; charges are not entries, so they alone never shut readers out).
 * Referenced entries are never evicted, so when readers hold the budget, a
 * new entry waits (bcache_get with wait) or is refused (the other calls).
 * So the budget holds, give or take the 1/8 of a reused buffer, except
 * while one unit larger than the whole budget is in use.  A caller that
 * holds references must never wait for room: it could wait for itself.
 *
 * A miss makes the caller the filler: the entry is in the table at once,
 * marked in flight, and the lock is dropped while the caller decodes into
 * it.  Other threads that want the same chunk wait for that one decode.
 *
 * Threads: every function may be called from any thread, except that
 * bcache_free must be the last call.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Buffers of at least this many bytes are aligned to it and advised for
 * transparent huge pages (bcache_buf), so filling a fresh one takes a page
 * fault per 2 MiB rather than per 4 KiB where the kernel allows THP.
 */
#define BCACHE_HUGE (2u << 20)

/* What one entry costs besides its buffer: the entry, malloc's headers, hash slots. */
#define BCACHE_ENT_COST 160u

struct bcache;
struct bcache_ent;

struct bcache_stats {
	size_t budget; /* bytes */
	size_t used;   /* bytes charged: entries in the table (in flight included) and bcache_charge
			*/
	size_t peak;   /* the most `used` has been */
	size_t charged;	 /* of used, through bcache_charge */
	size_t reserved; /* of used, through bcache_reserve */
	size_t entries;	 /* entries in the table */
	uint64_t hits;	 /* gets served without decoding, waits included */
	uint64_t misses; /* fills started */
	uint64_t waits;	 /* gets that waited for another thread's fill */
	uint64_t evictions;
	uint64_t room_waits; /* gets that waited for room */
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
 *   -EAGAIN  (wait false only) not cached and no room for it now (*out NULL);
 *   -ENOMEM  with *out NULL;
 *   -errno   the thread that was filling it failed with that error (*out NULL).
 * Blocks while another thread fills the same chunk, and with wait true
 * until there is room for it: pass wait true only when holding no other
 * reference of this cache and no lock that a holder of one may need.
 */
int bcache_get(struct bcache *c, uint64_t id, uint64_t no, size_t size, bool wait,
	       struct bcache_ent **out);

/* Waits until an entry of size bytes would have room (rules as bcache_get with wait). */
void bcache_wait_room(struct bcache *c, size_t size);

/*
 * Waits while another thread fills (id, no); returns at once if it is
 * absent or ready.  For a caller that needs what that fill does to the
 * data's state (a zstd frame's size proven), not its bytes: takes no
 * reference and counts neither a hit nor a wait.  Waits as bcache_get
 * does for a fill running now: never call it for an entry the caller, or
 * a thread waiting for the caller, is filling.
 */
void bcache_wait_fill(struct bcache *c, uint64_t id, uint64_t no);

/*
 * Returns 0 and a referenced ready entry if (id, no) is cached, else
 * -ENOENT (also while it is in flight) with *out NULL.  Never waits.
 */
int bcache_lookup(struct bcache *c, uint64_t id, uint64_t no, struct bcache_ent **out);

/*
 * Whether (id, no) is cached and ready, touching nothing: no reference, no
 * LRU move, no counter.  The answer may be stale by the time it is used.
 */
bool bcache_has(struct bcache *c, uint64_t id, uint64_t no);

/*
 * Like bcache_get, but for chunks a decoder produces on its way to the one
 * it was asked for, and for read-ahead: never waits and never returns a hit.
 * Returns 1 and *out to fill (as for a miss), 0 with *out NULL when the
 * chunk is already present or in flight or there is no room, or -ENOMEM.
 */
int bcache_claim(struct bcache *c, uint64_t id, uint64_t no, size_t size, struct bcache_ent **out);

/* Like bcache_claim, but only into room the budget has spare: evicts nothing. */
int bcache_claim_spare(struct bcache *c, uint64_t id, uint64_t no, size_t size,
		       struct bcache_ent **out);

/*
 * Ends a fill.  err == 0: the entry becomes ready and the caller keeps its
 * reference.  err < 0: the entry leaves the table, waiters get err, and the
 * caller's reference is released (e must not be used again).
 */
void bcache_done(struct bcache *c, struct bcache_ent *e, int err);

/*
 * Moves the ready entry (id, no), if cached, to the evicting end of the LRU
 * list: a sequential reader has read it to the end, and its kernel page
 * cache now holds those bytes, so it is the first to go when room is
 * needed, before entries that other readers have only started on.
 * Demoted entries leave in the order they were demoted; a later hit makes
 * one most recently used again.  Not a hit: the counters do not change.
 * Never waits (beyond the lock).
 */
void bcache_demote(struct bcache *c, uint64_t id, uint64_t no);

/* Releases a reference taken by get or claim.  Accepts NULL. */
void bcache_put(struct bcache *c, struct bcache_ent *e);

/*
 * Removes every entry of archive id, in flight or ready; referenced ones are
 * freed at their last put, and a fill in progress completes for its waiters
 * but is not kept.
 */
void bcache_drop(struct bcache *c, uint64_t id);

/*
 * Counts bytes the caller holds outside the cache (a parked decoder) against
 * the budget, evicting unreferenced entries to make room; never waits, so
 * `used` may pass the budget by what is charged.  Charged bytes beyond half
 * the budget evict nothing and keep nothing out: entries always have at
 * least half the budget, so a decoder larger than the whole cache does not
 * push out the slice its reader is in the middle of (memory is then the
 * budget plus that excess).  bcache_uncharge gives them back.
 */
void bcache_charge(struct bcache *c, size_t bytes);
void bcache_uncharge(struct bcache *c, size_t bytes);

/*
 * Reserves bytes the caller is about to allocate for data on its way into
 * the cache, before it knows the unit they belong to (a gzip index pass's
 * output, held until the next checkpoint ends its unit).  They count like
 * an entry: unreferenced entries are evicted to make room, and they are
 * admitted only if they then fit the budget; and while any are held, an
 * entry is admitted only if it fits beside them, even in an empty table.
 * So reservations and entries together never pass the budget.  Never waits.  Returns 0, or -EAGAIN
 * with nothing reserved.  bcache_unreserve gives them back.
 */
int bcache_reserve(struct bcache *c, size_t bytes);
void bcache_unreserve(struct bcache *c, size_t bytes);

/*
 * Like bcache_reserve, but only into room the budget has spare: evicts
 * nothing.  For bytes nobody has asked for yet (a background pass's).
 */
int bcache_reserve_spare(struct bcache *c, size_t bytes);

/*
 * A buffer of cap bytes as the cache makes them (huge pages from
 * BCACHE_HUGE on), for bcache_adopt; bcache_buf_free frees one it did not
 * take.  NULL when out of memory.  Any thread.
 */
void *bcache_buf_alloc(size_t cap);
void bcache_buf_free(void *p, size_t cap);

/*
 * Makes buf (from bcache_buf_alloc(cap)), holding size bytes, the ready
 * entry (id, no), in place of the cap + BCACHE_ENT_COST bytes the caller
 * reserved for it (bcache_reserve), which the entry now counts: data
 * decoded before its unit was known goes in without a copy into fresh
 * pages.  Returns true: the cache owns buf.  False, with buf and the
 * reservation still the caller's: (id, no) is there already.
 */
bool bcache_adopt(struct bcache *c, uint64_t id, uint64_t no, void *buf, size_t size, size_t cap);

/* The budget given to bcache_new. */
size_t bcache_budget(const struct bcache *c);

/* The entry's bytes.  Valid while the caller holds its reference. */
void *bcache_buf(struct bcache_ent *e);
size_t bcache_size(const struct bcache_ent *e);

/* A consistent snapshot of the counters. */
void bcache_stats(struct bcache *c, struct bcache_stats *st);

#endif
