/* SPDX-License-Identifier: MIT */
#include "beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <string.h>
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
