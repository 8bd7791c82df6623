/* SPDX-License-Identifier: MIT */
#include "bgjob.h"

#include <pthread.h>
#include <stdlib.h>

struct bgjob {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a job posted, done, or quit */
	pthread_t thr;
	bool started, quit;
	void (*fn)(void *); /* the job posted and not done; NULL when idle */
	void *arg;
};

static void *helper(void *opaque)
{
	struct bgjob *j = opaque;

	pthread_mutex_lock(&j->mu);
	for (;;) {
		while (!j->fn && !j->quit)
			pthread_cond_wait(&j->cv, &j->mu);
		if (!j->fn)
			break;
		pthread_mutex_unlock(&j->mu);
		j->fn(j->arg);
		pthread_mutex_lock(&j->mu);
		j->fn = NULL;
		pthread_cond_broadcast(&j->cv);
	}
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

struct bgjob *bgjob_new(void)
{
	struct bgjob *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	return j;
}

void bgjob_wait(struct bgjob *j)
{
	pthread_mutex_lock(&j->mu);
	while (j->fn)
		pthread_cond_wait(&j->cv, &j->mu);
	pthread_mutex_unlock(&j->mu);
}

bool bgjob_idle(struct bgjob *j)
{
	bool idle;

	pthread_mutex_lock(&j->mu);
	idle = !j->fn;
	pthread_mutex_unlock(&j->mu);
	return idle;
}

void bgjob_post(struct bgjob *j, void (*fn)(void *), void *arg)
{
	bgjob_wait(j);
	if (!j->started)
		j->started = pthread_create(&j->thr, NULL, helper, j) == 0;
	if (!j->started) {
		fn(arg);
		return;
	}
	pthread_mutex_lock(&j->mu);
	j->fn = fn;
	j->arg = arg;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

void bgjob_free(struct bgjob *j)
{
	if (!j)
		return;
	if (j->started) {
		bgjob_wait(j);
		pthread_mutex_lock(&j->mu);
		j->quit = true;
		pthread_cond_broadcast(&j->cv);
		pthread_mutex_unlock(&j->mu);
		pthread_join(j->thr, NULL);
	}
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	free(j);
}
