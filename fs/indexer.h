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
 * waits behind the queue.  Progress is logged at info level.
 *
 * Threads: indexer_start and indexer_stop from the main thread.
 */

struct arctab;
struct pool;
struct indexer;

/*
 * Starts indexing the tree under rootfd (borrowed, like arcs and pool).
 * Returns 0 and *out, or -ENOMEM / -errno from pthread_create (*out NULL).
 */
int indexer_start(struct arctab *arcs, int rootfd, struct pool *pool, unsigned jobs,
		  struct indexer **out);

/* Stops queuing, waits for the jobs in flight, and frees it.  Accepts NULL. */
void indexer_stop(struct indexer *ix);

#endif
