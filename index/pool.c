/* SPDX-License-Identifier: MIT */
/* How it works: a ring buffer of jobs under one mutex, and a condition variable the workers sleep
 * on. */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct job {
	pool_fn fn;
	void *arg;
};

struct pool {
	unsigned nthreads;
	pthread_t *threads;
	size_t qmax;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* Protected by lock. */
	struct job *ring;
	size_t head, count;
	unsigned sleeping; /* workers waiting for a job */
	bool stop;
};

static void *worker(void *vp)
{
	struct pool *p = vp;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct job j;

		while (p->count == 0 && !p->stop) {
			p->sleeping++;
			pthread_cond_wait(&p->wake, &p->lock);
			p->sleeping--;
		}
		if (p->count == 0)
			break;
		j = p->ring[p->head];
		p->head = (p->head + 1) % p->qmax;
		p->count--;
		pthread_mutex_unlock(&p->lock);
		j.fn(j.arg);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int pool_new(unsigned nthreads, size_t qmax, struct pool **out)
{
	struct pool *p = calloc(1, sizeof(*p));
	int ret = -ENOMEM;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->nthreads = nthreads ? nthreads : 1;
	p->qmax = qmax ? qmax : 1;
	p->ring = calloc(p->qmax, sizeof(*p->ring));
	p->threads = calloc(p->nthreads, sizeof(*p->threads));
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	if (!p->ring || !p->threads)
		goto fail;
	for (unsigned i = 0; i < p->nthreads; i++) {
		int err = pthread_create(&p->threads[i], NULL, worker, p);

		if (err) {
			p->nthreads = i;
			ret = -err;
			goto fail;
		}
	}
	*out = p;
	return 0;
fail:
	pool_free(p);
	return ret;
}

static int submit(struct pool *p, pool_fn fn, void *arg, bool only_idle)
{
	int ret = 0;

	pthread_mutex_lock(&p->lock);
	if (p->count == p->qmax || p->stop || (only_idle && p->count >= p->sleeping)) {
		ret = -EBUSY;
	} else {
		p->ring[(p->head + p->count) % p->qmax] = (struct job){ fn, arg };
		p->count++;
		pthread_cond_signal(&p->wake);
	}
	pthread_mutex_unlock(&p->lock);
	return ret;
}

int pool_submit(struct pool *p, pool_fn fn, void *arg)
{
	return submit(p, fn, arg, false);
}

int pool_submit_idle(struct pool *p, pool_fn fn, void *arg)
{
	return submit(p, fn, arg, true);
}

unsigned pool_threads(const struct pool *p)
{
	return p->nthreads;
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	free(p->ring);
	free(p->threads);
	free(p);
}
