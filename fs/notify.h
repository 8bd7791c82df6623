/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_NOTIFY_H
#define ZMOUNT_NOTIFY_H

/*
 * Dropping the kernel's pages of archives whose readers served bytes that
 * later failed a check (reader_opts.tainted), on a thread of our own: the
 * hook may run on a worker in the middle of a read of that very inode, and
 * an invalidation waits for such reads.  Local and s3:// mounts share it;
 * each says through a callback which node ids read a given reader.
 *
 * Lifetime: the struct lives in the mount's context, which outlives the
 * pool, so a late notify_queue from a read-ahead job finishing after
 * unmount finds a queue that says "stopped", not freed memory.
 *
 * Threads: notify_queue from any thread; notify_init, notify_start and
 * notify_stop from the thread that owns the session.
 */

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct reader;

/*
 * The node ids whose pages came from r, or every archive node's if r is
 * NULL.  Returns how many and sets *ids to a malloc'd array the caller
 * frees, or -errno (then *ids is not set).  Called on the notify thread
 * with no lock of ours held.
 */
typedef ssize_t (*notify_ids_fn)(void *arg, const struct reader *r, uint64_t **ids);

#define NOTIFY_QUEUE 64

struct notify {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* Protected by lock. */
	const struct reader *queue[NOTIFY_QUEUE];
	size_t n;
	bool all; /* the queue overflowed: invalidate every archive node */
	bool running;
	bool stop;
	/* Set before the thread starts, read by it only. */
	pthread_t thread;
	struct fuse_session *se;
	notify_ids_fn ids;
	void *ids_arg;
};

/* Sets up q's locks (default mutexes: nothing to destroy) and its callback. */
void notify_init(struct notify *q, notify_ids_fn ids, void *arg);

/*
 * Queues r and returns at once (never blocks on the kernel).  Calls before
 * notify_start wait in the queue; calls after notify_stop are dropped (the
 * mount is going away).
 */
void notify_queue(struct notify *q, const struct reader *r);

/*
 * Starts the thread that invalidates, through se, the pages of every node
 * of each queued reader.  Call once the session exists; returns 0 or
 * -errno (then tainted readers are only logged).
 */
int notify_start(struct notify *q, struct fuse_session *se);

/* Stops and joins that thread, before se is destroyed.  Safe if never started. */
void notify_stop(struct notify *q);

#endif
