// SPDX-License-Identifier: MIT
#include "notify.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zlog.h"

void notify_init(struct notify *q, notify_ids_fn ids, void *arg)
{
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->wake, NULL);
	q->ids = ids;
	q->ids_arg = arg;
}

void notify_queue(struct notify *q, const struct reader *r)
{
	pthread_mutex_lock(&q->lock);
	if (!q->stop) {
		if (q->n < NOTIFY_QUEUE)
			q->queue[q->n++] = r;
		else
			q->all = true;
		pthread_cond_signal(&q->wake);
	}
	pthread_mutex_unlock(&q->lock);
}

/* Drops the kernel's pages (and attributes) of every node reading r (every archive if NULL). */
static void invalidate(struct notify *q, const struct reader *r)
{
	uint64_t *ids;
	ssize_t n = q->ids(q->ids_arg, r, &ids);

	if (n < 0) {
		zlog(ZLOG_ERROR, "cannot drop cached pages of a failed archive: %s",
		     strerror((int)-n));
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		/* -ENOENT: the kernel has forgotten the inode, and its pages with it. */
		int ret = fuse_lowlevel_notify_inval_inode(q->se, ids[i], 0, 0);

		if (ret < 0 && ret != -ENOENT)
			zlog(ZLOG_WARN, "cannot drop the cached pages of inode %llu: %s",
			     (unsigned long long)ids[i], strerror(-ret));
		else
			zlog(ZLOG_DEBUG, "dropped the cached pages of inode %llu",
			     (unsigned long long)ids[i]);
	}
	free(ids);
}

static void *notify_main(void *arg)
{
	struct notify *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		const struct reader *batch[NOTIFY_QUEUE];
		size_t n;
		bool all;

		while (!q->stop && q->n == 0 && !q->all)
			pthread_cond_wait(&q->wake, &q->lock);
		if (q->stop)
			break;
		n = q->n;
		all = q->all;
		memcpy(batch, q->queue, n * sizeof(*batch));
		q->n = 0;
		q->all = false;
		pthread_mutex_unlock(&q->lock);
		if (all)
			invalidate(q, NULL);
		else
			for (size_t i = 0; i < n; i++)
				invalidate(q, batch[i]);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int notify_start(struct notify *q, struct fuse_session *se)
{
	int ret;

	q->se = se;
	ret = pthread_create(&q->thread, NULL, notify_main, q);
	if (ret != 0)
		return -ret;
	pthread_mutex_lock(&q->lock);
	q->running = true;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/*
 * The join does not wait on the kernel in practice: an invalidation waits
 * only for reads in flight on that inode, and libfuse 3.14's loop lets a
 * worker finish the request it is processing (workers are cancelled only
 * while they wait for the next one).  The one gap: a request received in
 * the instant the loop exits is dropped unanswered; an invalidation of that
 * very inode at that instant would wait for the connection to be aborted.
 */
void notify_stop(struct notify *q)
{
	bool running;

	pthread_mutex_lock(&q->lock);
	q->stop = true;
	running = q->running;
	q->running = false;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
	if (running)
		pthread_join(q->thread, NULL);
}
