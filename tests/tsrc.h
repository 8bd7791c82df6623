/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_TESTS_TSRC_H
#define ZMOUNT_TESTS_TSRC_H

/*
 * For the tests that drive the codecs over descriptors they manage
 * themselves: tsrc(fd) is a source (codec/src.h) that reads through the
 * descriptor number fd as it is at each call, never closing it, so a test
 * that closes, reopens or futimens its fd sees what it saw before the
 * codecs took sources.  One per descriptor number, made at the first call
 * and kept for the process's life (never freed: its references are the
 * callers' to borrow, not to drop).  Not thread-safe at the first call for
 * a number.  tsrc(-1) is a source whose reads fail with -EBADF.  Tests
 * of ownership use zsrc_local or memsrc (zmtest.h) instead.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src.h"

#define TSRC_MAX 4096

struct tsrc {
	struct zsrc s;
	int fd;
};

static inline ssize_t tsrc_pread(struct zsrc *s, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (off > INT64_MAX)
		return -EINVAL;
	do
		n = pread(((struct tsrc *)s)->fd, buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static inline int tsrc_stat(struct zsrc *s, struct stat *st)
{
	return fstat(((struct tsrc *)s)->fd, st) ? -errno : 0;
}

static inline void tsrc_free(struct zsrc *s)
{
	(void)s; /* the table keeps it */
}

static inline struct zsrc *tsrc(int fd)
{
	static const struct zsrc_ops ops = { .pread = tsrc_pread,
					     .stat = tsrc_stat,
					     .free = tsrc_free };
	static struct tsrc *table[TSRC_MAX + 1]; /* by fd + 1 */

	if (fd < -1 || fd >= TSRC_MAX)
		abort();
	if (!table[fd + 1]) {
		table[fd + 1] = malloc(sizeof(*table[fd + 1]));
		if (!table[fd + 1])
			abort();
		zsrc_init(&table[fd + 1]->s, &ops);
		table[fd + 1]->fd = fd;
	}
	return &table[fd + 1]->s;
}

#endif
