/* SPDX-License-Identifier: MIT */
#include "beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Component by component, each opened with O_NOFOLLOW, for kernels before 5.6. */
static int walk_open(int root, const char *rel, int flags)
{
	char path[PATH_MAX], *save = NULL, *comp, *next;
	int fd;

	if (strlen(rel) >= sizeof(path))
		return -ENAMETOOLONG;
	strcpy(path, rel);
	fd = openat(root, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (comp = strtok_r(path, "/", &save); comp; comp = next) {
		int nfd;

		next = strtok_r(NULL, "/", &save);
		if (strcmp(comp, "..") == 0) {
			close(fd);
			return -EXDEV;
		}
		nfd = openat(fd, comp,
			     (next ? O_PATH | O_DIRECTORY : flags) | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (nfd < 0)
			return -errno;
		fd = nfd;
	}
	if (strcmp(rel, ".") == 0 || !*rel) { /* no component: root itself */
		close(fd);
		fd = openat(root, ".", flags | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	return fd;
}

int beneath_open(int root, const char *rel, int flags)
{
	static bool no_openat2;
	struct open_how how = {
		.flags = (unsigned)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (!__atomic_load_n(&no_openat2, __ATOMIC_RELAXED)) {
		fd = syscall(SYS_openat2, root, rel, &how, sizeof(how));
		if (fd >= 0)
			return (int)fd;
		if (errno != ENOSYS)
			return -errno;
		__atomic_store_n(&no_openat2, true, __ATOMIC_RELAXED);
	}
	return walk_open(root, rel, flags);
}

/* Opens the directory holding rel's last component; *name points at that component. */
static int open_parent(int root, const char *rel, char *buf, size_t len, const char **name)
{
	const char *slash = strrchr(rel, '/');
	size_t plen;

	if (!slash) {
		*name = rel;
		return beneath_open(root, ".", O_PATH | O_DIRECTORY);
	}
	plen = (size_t)(slash - rel);
	if (plen >= len)
		return -ENAMETOOLONG;
	memcpy(buf, rel, plen);
	buf[plen] = '\0';
	*name = slash + 1;
	return beneath_open(root, buf, O_PATH | O_DIRECTORY);
}

int beneath_lstat(int root, const char *rel, struct stat *st)
{
	char parent[PATH_MAX];
	const char *name;
	int ret, fd = open_parent(root, rel, parent, sizeof(parent), &name);

	if (fd < 0)
		return fd;
	ret = fstatat(fd, name, st, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH)) < 0 ? -errno
											   : 0;
	close(fd);
	return ret;
}

ssize_t beneath_readlink(int root, const char *rel, char *buf, size_t len)
{
	char parent[PATH_MAX];
	const char *name;
	ssize_t n;
	int fd = open_parent(root, rel, parent, sizeof(parent), &name);

	if (fd < 0)
		return fd;
	n = len ? readlinkat(fd, name, buf, len - 1) : -1;
	if (n < 0)
		n = len ? -errno : -EINVAL;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}

/*
 * Reopens the object behind pfd (an O_PATH fd) for reading if it is the
 * regular file want names.  Going through /proc/self/fd opens that very
 * inode, so nothing swapped in by name in between can be opened; without
 * /proc, dirfd/name is opened with O_NONBLOCK (a FIFO cannot block us) and
 * checked after.
 */
static int reopen_checked(int pfd, int dirfd, const char *name, const struct stat *want,
			  struct stat *now)
{
	char proc[64];
	struct stat st;
	int fd, flags;

	if (fstat(pfd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_dev != want->st_dev || st.st_ino != want->st_ino)
		return -ESTALE;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) /* no /proc */
		fd = dirfd == -1
			     ? -ENOENT
			     : openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != want->st_dev ||
	    st.st_ino != want->st_ino) {
		close(fd);
		return -ESTALE;
	}
	/* A regular file: reads must block as usual (some file systems honour O_NONBLOCK). */
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	if (now)
		*now = st;
	return fd;
}

int beneath_open_file_at(int dirfd, const char *name, const struct stat *want, struct stat *now)
{
	int pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), fd;

	if (pfd < 0)
		return -errno;
	fd = reopen_checked(pfd, dirfd, name, want, now);
	close(pfd);
	return fd;
}

int beneath_open_file(int root, const char *rel, const struct stat *want, struct stat *now)
{
	const char *slash = strrchr(rel, '/');
	int dfd, fd;

	if (!S_ISREG(want->st_mode))
		return -EACCES;
	if (!slash)
		return beneath_open_file_at(root, rel, want, now);
	/* The parent beneath the root, then the last component, never followed. */
	{
		size_t plen = (size_t)(slash - rel);
		char *parent = strndup(rel, plen);

		if (!parent)
			return -ENOMEM;
		dfd = beneath_open(root, parent, O_PATH | O_DIRECTORY);
		free(parent);
	}
	if (dfd < 0)
		return dfd;
	fd = beneath_open_file_at(dfd, slash + 1, want, now);
	close(dfd);
	return fd;
}
