/* SPDX-License-Identifier: MIT */
#include "indexer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arctab.h"
#include "beneath.h"
#include "pool.h"
#include "zlog.h"

#define PROGRESS_SECS 5

struct item {
	char *rel;
	struct stat st;
};

struct indexer {
	struct arctab *arcs;
	int root;
	struct pool *pool;
	unsigned max_jobs;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	/* Protected by lock. */
	bool stop;
	unsigned running;
	uint64_t done, done_bytes;
};

struct job {
	struct indexer *ix;
	struct item it;
};

static bool is_candidate(const char *name)
{
	size_t n = strlen(name);

	return (n > 3 && strcmp(name + n - 3, ".gz") == 0) ||
	       (n > 4 && strcmp(name + n - 4, ".tgz") == 0);
}

static int by_size(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	return (x->st.st_size > y->st.st_size) - (x->st.st_size < y->st.st_size);
}

/* Appends the gzip candidates under rel (recursively) to *items. */
static void walk(struct indexer *ix, const char *rel, struct item **items, size_t *n, size_t *cap)
{
	int fd = beneath_open(ix->root, rel, O_RDONLY | O_DIRECTORY);
	struct dirent *de;
	DIR *dir;

	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dir))) {
		char path[PATH_MAX];
		struct stat st;
		int len;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		len = strcmp(rel, ".") == 0 ? snprintf(path, sizeof(path), "%s", de->d_name)
					    : snprintf(path, sizeof(path), "%s/%s", rel, de->d_name);
		if (len < 0 || (size_t)len >= sizeof(path) ||
		    fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			walk(ix, path, items, n, cap);
		} else if (S_ISREG(st.st_mode) && is_candidate(de->d_name)) {
			if (*n == *cap) {
				size_t ncap = *cap ? *cap * 2 : 256;
				struct item *ni = realloc(*items, ncap * sizeof(**items));

				if (!ni)
					break;
				*items = ni;
				*cap = ncap;
			}
			(*items)[*n].rel = strdup(path);
			(*items)[*n].st = st;
			if ((*items)[*n].rel)
				(*n)++;
		}
	}
	closedir(dir);
}

static void run_job(void *arg)
{
	struct job *j = arg;
	struct indexer *ix = j->ix;

	arctab_index(ix->arcs, ix->root, j->it.rel, &j->it.st);
	pthread_mutex_lock(&ix->lock);
	ix->running--;
	ix->done++;
	ix->done_bytes += (uint64_t)j->it.st.st_size;
	pthread_cond_broadcast(&ix->changed);
	pthread_mutex_unlock(&ix->lock);
	free(j->it.rel);
	free(j);
}

static void *main_loop(void *vix)
{
	struct indexer *ix = vix;
	struct item *items = NULL;
	size_t n = 0, cap = 0, next = 0;
	uint64_t total = 0;
	time_t last = time(NULL);

	walk(ix, ".", &items, &n, &cap);
	if (n)
		qsort(items, n, sizeof(*items), by_size);
	for (size_t i = 0; i < n; i++)
		total += (uint64_t)items[i].st.st_size;
	if (n)
		zlog(ZLOG_INFO, "indexing %zu gzip files (%" PRIu64 " MiB) in the background", n,
		     total >> 20);

	pthread_mutex_lock(&ix->lock);
	while (!ix->stop && next < n) {
		struct job *j;

		while (!ix->stop && ix->running >= ix->max_jobs)
			pthread_cond_wait(&ix->changed, &ix->lock);
		if (ix->stop)
			break;
		if (time(NULL) - last >= PROGRESS_SECS) {
			last = time(NULL);
			zlog(ZLOG_INFO, "indexed %" PRIu64 " of %zu gzip files (%" PRIu64 " of %" PRIu64 " MiB)",
			     ix->done, n, ix->done_bytes >> 20, total >> 20);
		}
		j = malloc(sizeof(*j));
		if (!j)
			break;
		j->ix = ix;
		j->it = items[next];
		ix->running++;
		if (pool_submit(ix->pool, run_job, j) < 0) {
			ix->running--;
			free(j);
			/* The pool is full of read-ahead: let it drain a little. */
			pthread_mutex_unlock(&ix->lock);
			usleep(10000);
			pthread_mutex_lock(&ix->lock);
			continue;
		}
		items[next++].rel = NULL; /* the job owns it now */
	}
	while (ix->running > 0)
		pthread_cond_wait(&ix->changed, &ix->lock);
	if (n && next == n)
		zlog(ZLOG_INFO, "indexed all %zu gzip files (%" PRIu64 " MiB)", n, total >> 20);
	pthread_mutex_unlock(&ix->lock);
	for (size_t i = 0; i < n; i++)
		free(items[i].rel);
	free(items);
	return NULL;
}

int indexer_start(struct arctab *arcs, int rootfd, struct pool *pool, unsigned jobs,
		  struct indexer **out)
{
	struct indexer *ix = calloc(1, sizeof(*ix));
	int err;

	*out = NULL;
	if (!ix)
		return -ENOMEM;
	ix->arcs = arcs;
	ix->root = rootfd;
	ix->pool = pool;
	ix->max_jobs = jobs ? jobs : 1;
	pthread_mutex_init(&ix->lock, NULL);
	pthread_cond_init(&ix->changed, NULL);
	err = pthread_create(&ix->thread, NULL, main_loop, ix);
	if (err) {
		pthread_mutex_destroy(&ix->lock);
		pthread_cond_destroy(&ix->changed);
		free(ix);
		return -err;
	}
	*out = ix;
	return 0;
}

void indexer_stop(struct indexer *ix)
{
	if (!ix)
		return;
	pthread_mutex_lock(&ix->lock);
	ix->stop = true;
	pthread_cond_broadcast(&ix->changed);
	pthread_mutex_unlock(&ix->lock);
	pthread_join(ix->thread, NULL);
	pthread_mutex_destroy(&ix->lock);
	pthread_cond_destroy(&ix->changed);
	free(ix);
}
