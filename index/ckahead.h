/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_CKAHEAD_H
#define ZMOUNT_CKAHEAD_H

/*
 * Read-ahead inside one wide entry that has a checkpoint set (ckahead.c):
 * pool jobs that each resume at a checkpoint ahead of a sequential reader
 * and decode that span's slices into the cache, so that one xz Block or
 * zstd frame decodes on all cores.  Internal to index/: readahead.c
 * queues them, fill.c keeps readers off the slices they own.
 *
 * A job owns its slices from the moment it is queued (they are in the
 * cache, in flight) until it has filled each one; a reader that wants an
 * owned slice waits for it with no lock held (ckahead_owns), never with
 * r->stream: a queued job may sit behind workers that wait for that lock.
 * Jobs take no lock but r->lock (briefly) and never wait for room or for
 * another fill, so waiting for them is always safe.
 */

#include <stdbool.h>
#include <stdint.h>

struct reader;

/* How many span jobs one reader may have queued or running at once (a slot each). */
#define CKAHEAD_JOBS 4

/*
 * No span job is queued for a stream before it reaches this offset: on a
 * mount, head's one read of a file's start comes from the kernel as a few
 * reads that continue one another (32, 128 and 256 KiB), and a span
 * queued on them (16 MiB by default) would be decoded for nobody.  cat
 * passes it a few reads later.
 */
#define CKAHEAD_FROM (1u << 20)

/*
 * A sequential stream of r has read up to end (< the reader's size):
 * if end is inside a wide entry whose set is at hand, and at or past
 * CKAHEAD_FROM, queues a job for each of the next spans that starts at or after both end and r's
 * parked decoder, ends within room bytes of end, and has no slice cached or in flight, up to one
 * job per pool worker.  If r->stream is busy, leaves that to its holder's ckahead_unlock.  first:
 * the stream's first read, a large one at offset 0 (most often cat's or grep's, but also head's
 * only one): then the set is loaded from index_dir if need be, so that it
 * is at hand for the next read, and nothing is queued: a span decoded for
 * head would be a span's work for nobody, and a stream that goes on
 * continues at its next read, one read later.  Never waits for a job or
 * for room.  Any thread holding no lock of r.
 */
void ckahead_queue(struct reader *r, uint64_t end, uint64_t room, bool first);

/*
 * Releases r->stream (held by the caller, which holds no other lock of
 * r), first queueing what a ckahead_queue left to it.  May claim cache
 * units, never waits for one.
 */
void ckahead_unlock(struct reader *r);

/*
 * Whether the slice keyed at (ustart) is owned by a span job that has not
 * filled it yet: then the caller must not decode it, and waits for it
 * (bcache_wait_fill) holding no lock.  Takes r->lock.
 */
bool ckahead_owns(struct reader *r, uint64_t ustart);

#endif
