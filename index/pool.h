/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_POOL_H
#define ZMOUNT_POOL_H

/*
 * A fixed set of worker threads that run queued jobs, for decoding ahead of
 * readers.  Jobs are hints: when the queue is full, a new one is refused
 * rather than queued without bound.
 *
 * Threads: pool_submit may be called from any thread, including a worker.
 * pool_free must be the last call; it runs the jobs still queued first.
 */

#include <stddef.h>

struct pool;

typedef void (*pool_fn)(void *arg);

/*
 * Starts nthreads workers (at least 1) with room for qmax queued jobs.
 * Returns 0 and *out, or -ENOMEM / -errno from pthread_create (*out NULL).
 */
int pool_new(unsigned nthreads, size_t qmax, struct pool **out);

/* Queues fn(arg).  Returns 0, or -EBUSY if the queue is full (fn is not called). */
int pool_submit(struct pool *p, pool_fn fn, void *arg);
/*
 * Queues fn(arg) only if a worker is waiting for it (every queued job has
 * a sleeping worker, and one more is left): for work worth doing only on a
 * core that is free now.  Returns 0, or -EBUSY (fn is not called).
 */
int pool_submit_idle(struct pool *p, pool_fn fn, void *arg);

unsigned pool_threads(const struct pool *p);

/* Finishes the queued jobs, joins the workers and frees the pool.  Accepts NULL. */
void pool_free(struct pool *p);

#endif
