/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_SRCID_H
#define ZMOUNT_SRCID_H

/*
 * The one test of "the same version of a source file", used by every layer
 * (reader, archive table, nodes, listings, saved indexes, tools).
 *
 * A version is (device, inode, size, mtime ns, ctime ns).  ctime is what
 * catches an in-place rewrite that restores the mtime (rsync --inplace -t,
 * touch -r): user space cannot set ctime, and every write, truncate, chmod
 * or rename moves it.  Such a false "changed" costs a re-index; a false
 * "same" would serve one version's bytes as another's.  An open reader
 * forgives ctime alone (srcid_same_but_ctime) if its content sample still
 * hashes the same, so a rename or an unlink does not fail its handles.  A
 * saved index (idxfile.h) forgives device, inode and ctime (a logrotate
 * rename, cp -p) only if a hash of the whole compressed file is the same.
 *
 * Threads: pure functions.
 */

#include <stdbool.h>
#include <sys/stat.h>

static inline bool srcid_same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * Everything but ctime the same: a rename, unlink, link or chmod of the file
 * (its bytes as they were), or an in-place rewrite that restored size and
 * mtime.  Not a version test by itself: the caller must tell the two apart
 * by content (reader_check_unchanged re-hashes a sample).
 */
static inline bool srcid_same_but_ctime(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Same object (device and inode), whatever its contents: for plain files and directories' nodes. */
static inline bool srcid_same_object(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       (a->st_mode & S_IFMT) == (b->st_mode & S_IFMT);
}

#endif
