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

#endif
