/* SPDX-License-Identifier: MIT */
#include "spill.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct spill {
	int fd;
	char *dir;
	pthread_mutex_t lock;
	uint64_t end; /* protected by lock: where the next region goes */
};

static int unlinked_file(const char *dir)
{
	char path[PATH_MAX];
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd >= 0 ? fd : -errno;
	/* A file system without O_TMPFILE: a name nobody else can take, gone at once. */
	if (snprintf(path, sizeof(path), "%s/.zmount-spill-XXXXXX", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(path);
	return fd;
}

int spill_open(const char *dir, struct spill **out)
{
	struct spill *sp = calloc(1, sizeof(*sp));

	*out = NULL;
	if (!sp || !(sp->dir = strdup(dir))) {
		free(sp);
		return -ENOMEM;
	}
	sp->fd = unlinked_file(dir);
	if (sp->fd < 0) {
		int ret = sp->fd;

		free(sp->dir);
		free(sp);
		return ret;
	}
	pthread_mutex_init(&sp->lock, NULL);
	*out = sp;
	return 0;
}

const char *spill_dir(const struct spill *sp)
{
	return sp->dir;
}

int spill_put(struct spill *sp, const void *buf, uint64_t len, uint64_t *off)
{
	const uint8_t *p = buf;
	uint64_t at, done = 0;

	pthread_mutex_lock(&sp->lock);
	at = sp->end;
	sp->end += len;
	pthread_mutex_unlock(&sp->lock);
	while (done < len) {
		size_t n = len - done > (1u << 30) ? (1u << 30) : (size_t)(len - done);
		ssize_t w = pwrite(sp->fd, p + done, n, (off_t)(at + done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int ret = w < 0 ? -errno : -EIO;

			spill_drop(sp, at, len);
			return ret;
		}
		done += (uint64_t)w;
	}
	*off = at;
	return 0;
}

int spill_read(struct spill *sp, uint64_t off, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(sp->fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

void spill_drop(struct spill *sp, uint64_t off, uint64_t len)
{
	/* Best effort: without hole punching the bytes stay until spill_free. */
	if (len)
		(void)fallocate(sp->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
				(off_t)len);
}

int spill_fd(const struct spill *sp)
{
	return sp->fd;
}

void spill_free(struct spill *sp)
{
	if (!sp)
		return;
	close(sp->fd);
	pthread_mutex_destroy(&sp->lock);
	free(sp->dir);
	free(sp);
}
