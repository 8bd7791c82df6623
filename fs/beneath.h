/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_BENEATH_H
#define ZMOUNT_BENEATH_H

/*
 * Path walks that stay inside the source tree.  zmount never follows a
 * symlink itself: not at the last component (O_NOFOLLOW does that much) and
 * not on the way there either, which is what these add.  Without them, a
 * directory swapped for a symlink after the kernel cached its name would
 * lead lookups out of SRC.  Uses openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), or a walk with O_NOFOLLOW on every component where
 * the kernel lacks openat2.
 *
 * root is a directory fd; rel is relative to it ("." for root itself) and
 * must not be absolute.  Any thread may call these.
 */

#include <sys/stat.h>
#include <sys/types.h>

/* Opens rel with flags (O_CLOEXEC is added).  Returns an fd, or -errno (-ELOOP: a symlink). */
int beneath_open(int root, const char *rel, int flags);

/* lstat of rel: a symlink at the end is described, not followed.  Returns 0 or -errno. */
int beneath_lstat(int root, const char *rel, struct stat *st);

/* readlink of rel into buf (NUL-terminated).  Returns the length or -errno. */
ssize_t beneath_readlink(int root, const char *rel, char *buf, size_t len);

/*
 * Opens the regular file rel (relative to the root, never through a
 * symlink) for reading, without ever opening anything else: the path is
 * first opened O_PATH (which opens no device and blocks on no FIFO), its
 * type and object are checked against want (S_ISREG, device, inode), and
 * only then is that very object reopened O_RDONLY through /proc/self/fd
 * (or, without /proc, by name with O_NONBLOCK, and checked again by fstat).
 * If now is not NULL it gets the opened file's fstat.  The fd has
 * O_CLOEXEC and blocks normally on reads.  Returns the fd, -ESTALE if rel
 * is no longer that regular file, or -errno.
 */
int beneath_open_file(int root, const char *rel, const struct stat *want, struct stat *now);

/* beneath_open_file of name, one component in dirfd. */
int beneath_open_file_at(int dirfd, const char *name, const struct stat *want, struct stat *now);

#endif
