/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_FILL_H
#define ZMOUNT_FILL_H

/*
 * Filling a reader's cache units on a miss, and the turns that reads of a
 * streamed unit take (fill.c).  Internal to index/: reader.c's views and
 * readahead.c's workers call it.
 *
 * Locks (fs/locking.h has the order): r->stream is taken around the fill
 * of a streamed unit, by fill_get, or by the caller of fill_entry;
 * r->lock, a leaf, around the marks and the reads in progress.  Room in
 * the cache is never waited for with r->stream held.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bcache_ent;
struct reader;

/*
 * Misses in a streamed unit are decoded in the order of the reads that
 * want them, within this distance (wait_for_turn): the kernel sends its
 * read-ahead requests to several threads at once, and the one for a later
 * slice may come first.  A read waits for the earlier ones up to
 * TURN_STALL_MS without anything moving; with none, but the decoder a
 * little behind, TURN_GRACE_MS once, for one that the kernel sent but that
 * has not reached us yet, if the read continues a sequential stream
 * (readahead_near): a random reader skipping forward does not wait.
 */
#define TURN_SPAN     (8u << 20)
#define TURN_GRACE_MS 20
#define TURN_STALL_MS 500

/*
 * Returns 0 and *out, a referenced cache entry (release with bcache_put)
 * holding unit [ustart, ustart + ulen) of map entry k, decoded on a miss;
 * or a negative errno with *out NULL: -EIO (this or another thread's fill
 * failed, and logged it), -ENOMEM, or -EAGAIN when there is no room and
 * may_wait is false (the caller holds other units, or it would go before
 * an earlier read of a streamed unit).  pos: the byte the reader wants,
 * for the log; seq: the read continues a stream (readahead_near), so it
 * may wait a little for an earlier read not yet noted.  ustart with
 * UNIT_SLICE set (reader_int.h): a slice of a medium entry, cached apart
 * from its whole unit and read through its set like a streamed unit's.
 * Any thread, no lock held.
 */
int fill_get(struct reader *r, size_t k, uint64_t ustart, size_t ulen, uint64_t pos, bool may_wait,
	     bool seq, struct bcache_ent **out);

/*
 * Fills e, which the caller claimed (bcache_claim) for the unit at ustart
 * of map entry k (e from bcache_get or bcache_claim), and ends the fill
 * (bcache_done).  Returns 0, and the caller keeps its reference; or a
 * negative errno (-EIO, -ENOMEM) after the one log line for its cause, and
 * the reference is gone.  For a streamed entry, with r->stream held.
 */
int fill_entry(struct reader *r, size_t k, uint64_t ustart, struct bcache_ent *e, uint64_t pos);

/*
 * Notes a read in progress of [pos, end), so later misses of a streamed
 * unit wait their turn; returns its slot, or -1 if all NINFLIGHT are
 * taken (then it is not noted).  fill_inflight_move: it now wants pos;
 * fill_inflight_del: it ended.  Both accept slot -1.  No r->lock held.
 */
int fill_inflight_add(struct reader *r, uint64_t pos, uint64_t end);
void fill_inflight_move(struct reader *r, int slot, uint64_t pos);
void fill_inflight_del(struct reader *r, int slot);

/*
 * Makes slot, which fill_inflight_add returned on another thread for a
 * read this thread now makes, this thread's next fill_inflight_add of r:
 * that call takes the slot over (and its owner) instead of a new one.
 */
void fill_inflight_adopt(struct reader *r, int slot);

/*
 * With r->lock held: whether a read in progress on another thread wants a
 * byte before ustart, at most TURN_SPAN before it.
 */
bool fill_turn_earlier(const struct reader *r, uint64_t ustart);

/*
 * Whether a read in progress on another thread (fill_inflight_add) wants
 * a byte of [from, to).  Takes r->lock; call with it not held.
 */
bool fill_inflight_in(struct reader *r, uint64_t from, uint64_t to);

#endif
