/* SPDX-License-Identifier: MIT */
/*
 * The local index directory (idxlocal.h).  A save never shows a torn
 * file: it writes a new O_EXCL temporary file in the directory itself,
 * fsyncs it and renames it over the final name, so readers see the old
 * file or the new one, and of two processes saving the same index the last
 * rename wins.  Temporary names start with a dot and end with six random
 * characters (getrandom, or the clock when that fails: O_EXCL makes any
 * name safe), so that prune knows an abandoned one.
 */
#include "idxlocal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "idxhash.h"
#include "idxtrust.h"

#define IL_TMPLEN  6u	/* random characters ending a temporary name */
#define IL_TMP_AGE 3600 /* seconds before prune removes a temporary file */

/* mkdir -p with mode 0700 for every directory it creates. */
static int mkdir_p(const char *dir)
{
	char buf[PATH_MAX];
	size_t n = strlen(dir);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		buf[i] = dir[i];
	}
	return 0;
}

/*
 * Creates ".<name>.XXXXXX" in dfd (O_EXCL, mode 0600, never through a
 * symlink) and puts its name in tmp.  Returns the fd or -errno.
 */
static int make_tmp(int dfd, const char *name, char *tmp, size_t len)
{
	static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	int n = snprintf(tmp, len, ".%s.", name), fd = -EEXIST;
	struct timespec ts;
	uint64_t r;

	if (n < 0 || (size_t)n + IL_TMPLEN >= len)
		return -ENAMETOOLONG;
	for (int tries = 0; tries < 100 && fd == -EEXIST; tries++) {
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
			clock_gettime(CLOCK_REALTIME, &ts);
			r = idxhash_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^
					  (uint64_t)tries);
		}
		for (unsigned i = 0; i < IL_TMPLEN; i++, r /= sizeof(set) - 1)
			tmp[n + i] = set[r % (sizeof(set) - 1)];
		tmp[n + IL_TMPLEN] = '\0';
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			fd = -errno;
	}
	return fd;
}

int idxlocal_rw(int fd, void *buf, size_t len, uint64_t off, bool wr)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = wr ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int local_put(void *ctx, const char *name, const void *buf, size_t len)
{
	const char *dir = ctx;
	char tmp[PATH_MAX];
	int dfd = -1, fd, ret = mkdir_p(dir);

	if (ret == 0)
		ret = dfd = idxtrust_open_dir(dir, NULL);
	if (ret < 0)
		return ret;
	/* ".<name>.XXXXXX": hidden, and named after its index for prune */
	fd = make_tmp(dfd, name, tmp, sizeof(tmp));
	if (fd < 0) {
		close(dfd);
		return fd;
	}
	ret = idxlocal_rw(fd, (void *)buf, len, 0, true); /* a new file: from 0 */
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret == 0 && renameat(dfd, tmp, dfd, name) < 0)
		ret = -errno;
	if (ret < 0)
		unlinkat(dfd, tmp, 0);
	else
		fsync(dfd); /* make the rename durable too; the file is complete either way */
	close(dfd);
	return ret;
}

int idxlocal_open(const char *dir, const char *name, struct stat *st, struct zerr *err)
{
	int dfd = idxtrust_open_dir(dir, err), fd;

	if (dfd < 0)
		return dfd;
	fd = idxtrust_open_file(dfd, name, true, st, err);
	close(dfd);
	return fd;
}

static int local_get(void *ctx, const char *name, uint64_t cap, unsigned char **buf, size_t *len)
{
	struct stat st;
	int fd = idxlocal_open(ctx, name, &st, NULL), ret;

	*buf = NULL;
	if (fd < 0)
		return fd;
	ret = (uint64_t)st.st_size > cap || (uint64_t)st.st_size > SIZE_MAX ? -EFBIG : 0;
	if (ret == 0 && !(*buf = malloc(st.st_size ? (size_t)st.st_size : 1)))
		ret = -ENOMEM;
	if (ret == 0 && (ret = idxlocal_rw(fd, *buf, (size_t)st.st_size, 0, false)) < 0) {
		free(*buf);
		*buf = NULL;
	}
	*len = (size_t)st.st_size;
	close(fd);
	return ret;
}

static int local_del(void *ctx, const char *name)
{
	int dfd = idxtrust_open_dir(ctx, NULL), ret = 0;

	if (dfd < 0)
		return dfd;
	if (unlinkat(dfd, name, 0) < 0)
		ret = -errno;
	close(dfd);
	return ret;
}

const struct idxstore_ops idxlocal_ops = {
	.get = local_get,
	.put = local_put,
	.del = local_del,
};

int idxlocal_store(const char *dir, struct idxstore **out)
{
	char *path;
	int ret;

	*out = NULL;
	if (!dir || !dir[0])
		return -EINVAL;
	path = strdup(dir); /* the ctx: get, put and del open it each time */
	if (!path)
		return -ENOMEM;
	ret = idxstore_new(path, &idxlocal_ops, path, free, out);
	if (ret < 0)
		free(path);
	return ret;
}

const char *idxlocal_dir(const struct idxstore *st)
{
	return st && idxstore_ops_of(st) == &idxlocal_ops ? idxstore_ctx(st) : NULL;
}

/* Whether s (n bytes) is put's temporary name for an index name: ".<index>.XXXXXX". */
static bool is_tmp(const char *s, size_t n, bool (*is_index)(const char *name, size_t n))
{
	return n > IL_TMPLEN + 2 && s[0] == '.' && s[n - IL_TMPLEN - 1] == '.' &&
	       is_index(s + 1, n - IL_TMPLEN - 2);
}

int idxlocal_prune(const char *dir, bool (*is_index)(const char *name, size_t n),
		   int (*judge)(void *arg, int dfd, const char *name), void *arg, unsigned *removed)
{
	unsigned count = 0;
	struct dirent *de;
	struct stat st;
	time_t now = time(NULL);
	DIR *d;
	int dfd;

	if (removed)
		*removed = 0;
	dfd = idxtrust_open_dir(dir, NULL);
	if (dfd < 0)
		return dfd;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOMEM;
	}
	while ((de = readdir(d))) {
		const char *s = de->d_name;
		size_t n = strlen(s);
		int go = 0;

		/* only regular files: a symlink or anything else is not ours */
		if (fstatat(dfd, s, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (is_index(s, n))
			go = judge(arg, dfd, s);
		else if (is_tmp(s, n, is_index))
			go = st.st_mtime < now - IL_TMP_AGE;
		if (go && unlinkat(dfd, s, 0) == 0)
			count++;
	}
	closedir(d);
	if (removed)
		*removed = count;
	return 0;
}
