/* SPDX-License-Identifier: MIT */
/* A local file as a source (src.h): the fd the caller opened, owned here. */
#include "src.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

struct zsrc_file {
	struct zsrc s; /* first: the ops get a struct zsrc * */
	int fd;
};

static int local_fd(struct zsrc *s)
{
	return ((struct zsrc_file *)s)->fd;
}

static ssize_t local_pread(struct zsrc *s, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (off > INT64_MAX)
		return -EINVAL;
	do
		n = pread(local_fd(s), buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static int local_stat(struct zsrc *s, struct stat *st)
{
	return fstat(local_fd(s), st) ? -errno : 0;
}

/* Read-ahead only: a failed advice changes nothing but timing. */
static void local_hint(struct zsrc *s, uint64_t off, uint64_t len)
{
	if (off > INT64_MAX || len > INT64_MAX)
		return;
	(void)posix_fadvise(local_fd(s), (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

static void local_free(struct zsrc *s)
{
	close(local_fd(s));
	free(s);
}

static const struct zsrc_ops local_ops = {
	.pread = local_pread,
	.stat = local_stat,
	.hint = local_hint,
	.free = local_free,
};

int zsrc_local(int fd, struct zsrc **out)
{
	struct zsrc_file *f = malloc(sizeof(*f));

	*out = NULL;
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	zsrc_init(&f->s, &local_ops);
	f->fd = fd;
	*out = &f->s;
	return 0;
}

int zsrc_local_fd(const struct zsrc *s)
{
	return s && s->ops == &local_ops ? ((const struct zsrc_file *)s)->fd : -1;
}
