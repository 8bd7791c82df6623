/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_INDEXER_H
#define ZMOUNT_INDEXER_H

/*
 * Builds the missing gzip indexes of the source tree in the background, so
 * that the mount returns at once and sizes are ready by the time someone
 * asks.  One thread walks the tree (never following symlinks), sorts the
 * gzip candidates smallest first, and feeds them to the decode pool, at most
 * `jobs` at a time so read-ahead still gets workers.  A file a user stats
 * meanwhile is indexed at once in the user's own thread (the archive table
 * makes a second indexer of the same file wait for the first), so it never
 * waits behind the queue.  Progress is logged at info level, and at the end
 * one summary of what the files turned out to be: "B built, L loaded,
 * C corrupt, G not gzip" (built: a pass over the data; loaded: from
 * index_dir; and "S skipped" for files that vanished, changed or could not
 * be opened meanwhile: they are indexed on first use).
 *
 * The walk is iterative, with its stack of directories on the heap, so the
 * depth of the tree costs no stack; it checks for indexer_stop at every
 * directory (and every 4096 entries of a large one), so unmount never waits
 * for the rest of a walk.  Its memory is capped: the pending directories
 * and the candidates, each counted as its path plus its slot (about 160
 * bytes plus the path for a candidate), hold at most INDEXER_WALK_MAX_BYTES;
 * when that is reached the walk ends there, the candidates found are
 * indexed, the rest on first use, and a warning says so.
 *
 * Threads: indexer_start and indexer_stop from the main thread.
 */

/* About 100,000 gzip files with 40-byte paths; twice that, briefly, while an array grows. */
#define INDEXER_WALK_MAX_BYTES ((size_t)16 << 20)

struct arctab;
struct pool;
struct indexer;
struct zmctx;

/*
 * Starts indexing the tree under rootfd (borrowed, like arcs, pool and zm,
 * the readers' context whose counters say which indexes were loaded).
 * Returns 0 and *out, or -ENOMEM / -errno from pthread_create (*out NULL).
 */
int indexer_start(struct arctab *arcs, struct zmctx *zm, int rootfd, struct pool *pool,
		  unsigned jobs, struct indexer **out);

/* Stops queuing, waits for the jobs in flight, and frees it.  Accepts NULL. */
void indexer_stop(struct indexer *ix);

#endif
