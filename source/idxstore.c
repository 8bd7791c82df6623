/* SPDX-License-Identifier: MIT */
/*
 * The table of registered index stores (idxstore.h): a short list, since
 * a process has one shared index prefix at most in practice.
 */
#include "idxstore.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define IDXSTORE_URL_MAX 4096

struct entry {
	struct entry *next;
	const struct idxstore_ops *ops;
	void *ctx;
	char url[];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *head; /* protected by lock */

/* The link pointing at url's entry, or at the list's end; lock held. */
static struct entry **slot(const char *url)
{
	struct entry **p = &head;

	while (*p && strcmp((*p)->url, url))
		p = &(*p)->next;
	return p;
}

int idxstore_register(const char *url, const struct idxstore_ops *ops, void *ctx)
{
	size_t n = strnlen(url, IDXSTORE_URL_MAX);
	struct entry *e, **p;

	if (!strstr(url, "://") || n == IDXSTORE_URL_MAX || !ops)
		return -EINVAL;
	e = malloc(sizeof(*e) + n + 1);
	if (!e)
		return -ENOMEM;
	memcpy(e->url, url, n + 1);
	e->ops = ops;
	e->ctx = ctx;
	pthread_mutex_lock(&lock);
	p = slot(url);
	e->next = *p ? (*p)->next : NULL;
	free(*p);
	*p = e;
	pthread_mutex_unlock(&lock);
	return 0;
}

void idxstore_unregister(const char *url)
{
	struct entry *e, **p;

	pthread_mutex_lock(&lock);
	p = slot(url);
	e = *p;
	if (e)
		*p = e->next;
	pthread_mutex_unlock(&lock);
	free(e);
}

int idxstore_find(const char *url, const struct idxstore_ops **ops, void **ctx)
{
	struct entry *e;
	int ret = -ENOENT;

	pthread_mutex_lock(&lock);
	e = *slot(url);
	if (e) {
		*ops = e->ops;
		*ctx = e->ctx;
		ret = 0;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}
