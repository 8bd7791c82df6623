/* SPDX-License-Identifier: MIT */
/*
 * The ownership rules of saved indexes (idxtrust.h).  A directory is
 * checked through its descriptor and its parents through "..", opened
 * O_PATH (only search permission is needed to look at a parent), so a
 * rename after the check changes nothing for a caller that keeps using the
 * descriptor.
 */
#include "idxtrust.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int idxtrust_stat(const struct stat *st, bool sticky_ok, const char *what, struct zerr *err)
{
	uid_t me = geteuid();

	if (st->st_uid != me && st->st_uid != 0)
		return zerr_set(err, -EPERM, 0,
				"%s is owned by uid %u (neither ours, uid %u, "
				"nor root)",
				what, (unsigned)st->st_uid, (unsigned)me);
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(sticky_ok && (st->st_mode & S_ISVTX)))
		return zerr_set(err, -EPERM, 0, "%s is writable by others (mode %04o)", what,
				(unsigned)(st->st_mode & 07777));
	return 0;
}

int idxtrust_dir(int dfd, struct zerr *err)
{
	struct stat st, up;
	int fd = dfd, next, ret;

	if (fstat(dfd, &st) < 0)
		return zerr_set(err, -EPERM, 0, "cannot stat the index directory: %s",
				strerror(errno));
	ret = idxtrust_stat(&st, false, "the index directory", err);
	/* the parent always (a root daemon's directory is root's), then up to root's */
	for (int n = 0; ret == 0 && (n == 0 || st.st_uid != 0); n++) {
		if (n == IDXTRUST_MAX_UP) {
			ret = zerr_set(err, -EPERM, 0,
				       "over %d directories above the index "
				       "directory",
				       IDXTRUST_MAX_UP);
			break;
		}
		next = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (next < 0 || fstat(next, &up) < 0) {
			ret = zerr_set(err, -EPERM, 0,
				       "cannot check the directories above the "
				       "index directory: %s",
				       strerror(errno));
			if (next >= 0)
				close(next);
			break;
		}
		if (fd != dfd)
			close(fd);
		fd = next;
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino)
			break; /* "/" is its own parent */
		st = up;
		ret = idxtrust_stat(&st, true, "a directory above the index directory", err);
	}
	if (fd != dfd)
		close(fd);
	return ret;
}

int idxtrust_open_dir(const char *dir, struct zerr *err)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret;

	if (dfd < 0)
		return zerr_set(err, -errno, 0, "cannot open the index directory");
	ret = idxtrust_dir(dfd, err);
	if (ret < 0) {
		close(dfd);
		return ret;
	}
	return dfd;
}

int idxtrust_open_file(int dfd, const char *name, bool trust, struct stat *st, struct zerr *err)
{
	int fd = openat(dfd, name, IDXTRUST_OPEN), ret;

	if (fd < 0) {
		if (errno == ELOOP)
			return zerr_set(err, -EBADMSG, 0, "the index file is a symlink");
		return zerr_set(err, -errno, 0, "cannot open the index file");
	}
	if (fstat(fd, st) < 0)
		ret = zerr_set(err, -errno, 0, "fstat failed");
	else if (!S_ISREG(st->st_mode))
		ret = zerr_set(err, -EBADMSG, 0, "not a regular file");
	else
		ret = trust ? idxtrust_stat(st, false, "the index file", err) : 0;
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}
