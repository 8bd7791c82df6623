/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_RAWKEEP_H
#define ZMOUNT_RAWKEEP_H

/*
 * The compressed bytes of a remote source that a pass fetched anyway, kept
 * in the cache for the reads that follow it.  A gzip file's size is proven
 * only by decoding all of it, so the first open of an object in a bucket
 * fetches it whole; its decoded output fits the cache only in part, and
 * the first read then fetched again every byte whose output was not kept
 * (issue 32: 1.875x a 1 GiB .gz object at cache_size=256M).  Compressed
 * bytes are several times denser, so the same room keeps far more of the
 * file, and the decode that follows runs on every core from memory.
 *
 * Bytes are kept in chunks of RAWKEEP_CHUNK (the last one shorter) as
 * ordinary cache entries (id, base | k) for chunk k: charged to the cache
 * budget, evicted like data, dropped with the archive (bcache_drop(id)).
 * base must set a bit no other entry number of id uses.
 *
 * rawkeep_tee: a source for the pass, reading through src; the bytes it
 * returns in order from offset 0 are kept, chunk by chunk, while the
 * chunks so far stay within budget bytes, the cache has room
 * (bcache_claim), and *when is true (NULL: always); then up to spare
 * bytes more, only into room the cache has spare (bcache_claim_spare:
 * nobody's data is evicted for them).  A chunk is in the cache once
 * filled whole; one left part-filled when the tee is freed is not kept.
 *
 * rawkeep_view: a source that serves each read from a kept chunk when the
 * cache holds it, else from src.  A read that ends a chunk moves the one
 * before it to the cache's evicting end (bcache_demote): a sequential
 * reader is done with that one, while the decoders read-ahead runs beside
 * it may still be behind in this one.  Hints are passed to src without
 * the chunks kept at their start, so src does not fetch again what is
 * kept.
 *
 * Both take a reference of src (dropped by their own last zsrc_put); their
 * stat, tag, pinned and remote are src's.  The cache must outlive them.
 * Return 0 and *out, or -ENOMEM or src's stat error with *out NULL.
 *
 * Threads: a tee's pread runs on one thread at a time (its pass's); a
 * view is like any source (src.h): any thread, at once.
 */

#include <stdatomic.h>
#include <stdint.h>

#include "src.h"

struct bcache;

#define RAWKEEP_CHUNK (1u << 20)

int rawkeep_tee(struct bcache *c, uint64_t id, uint64_t base, struct zsrc *src, uint64_t budget,
		uint64_t spare, const atomic_bool *when, struct zsrc **out);

/* The bytes a tee has kept in chunks the cache took so far. */
uint64_t rawkeep_kept(struct zsrc *tee);

int rawkeep_view(struct bcache *c, uint64_t id, uint64_t base, struct zsrc *src, struct zsrc **out);

/*
 * The source under s if s is a view, else s (borrowed either way): for a
 * question only the source can answer, such as whether the version read
 * is still there (a byte kept would say yes).
 */
struct zsrc *rawkeep_under(struct zsrc *s);

#endif
