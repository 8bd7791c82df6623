/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_IDXFILE_H
#define ZMOUNT_IDXFILE_H

/*
 * Saved gzip checkpoint indexes: one file per source in an index directory,
 * reused by later mounts and by the tools.  The byte layout is in
 * doc/index-format.md.
 *
 * A saved index is bound to its source's identity (struct idxfile_id) and
 * absolute path.  Loading validates the whole file (magic, version, length,
 * CRC-64, every field and every checkpoint) before anything is allocated
 * from it, so a damaged, foreign or stale index is rejected, never trusted.
 *
 * Files are written to a unique temporary name in the same directory,
 * fsync'd, and renamed over the final name: readers see the old file or the
 * new one, never a torn one, and of two processes saving the same index the
 * last rename wins.  Index files are mode 0600 and a created directory 0700,
 * because windows hold up to 32 KiB of the source's plain text per
 * checkpoint.
 *
 * Nothing here logs.  Functions return 0 or a negative errno; load and
 * read_header also fill a struct zerr (may be NULL) with the reason and the
 * offset in the index file, for the caller's one log line.  A failed save
 * leaves no temporary file behind; the caller keeps its index in memory and
 * logs once (e.g. "cannot save index in DIR: Read-only file system").
 *
 * Threads: every function may be called from any thread at once; there is
 * no global state.  idxfile_default_dir reads the environment, so it must
 * not race with setenv().
 */

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "gzdec.h"
#include "zerr.h"

#define IDXFILE_VERSION	   1u
#define IDXFILE_F_VERIFIED 1u /* every member's CRC32 and ISIZE were checked when built */

/* What a saved index is bound to.  All of it must match for a load. */
struct idxfile_id {
	uint64_t dev, ino, size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint64_t fingerprint; /* hash of the first and last 4 KiB (fewer if the file is smaller) */
};

/* A saved index's header, for tools. */
struct idxfile_info {
	char src[PATH_MAX]; /* the source's absolute path, NUL-terminated */
	struct idxfile_id id;
	uint32_t version, flags; /* flags: IDXFILE_F_VERIFIED */
	uint64_t span, usize, members, npoints;
	uint64_t wbytes;    /* compressed window bytes, all checkpoints */
	uint64_t file_size; /* bytes of the index file */
};

/*
 * The default index directory: "$XDG_CACHE_HOME/zmount" if XDG_CACHE_HOME is
 * an absolute path (the XDG spec says to ignore a relative one), else
 * "$HOME/.cache/zmount" if HOME is absolute, else the same under the home
 * directory of getuid() from the password database.  Does not create it.
 * Returns 0, -ENOENT (no home directory found) or -ENAMETOOLONG (len too
 * small; out is then "").
 */
int idxfile_default_dir(char *out, size_t len);

/*
 * Reads fd's identity: fstat, plus a hash of its first and last 4 KiB read
 * with pread.  Returns 0, -EINVAL (not a regular file), -EIO (the file
 * shrank while being read) or the errno of fstat/pread.  *id is undefined on
 * error.
 */
int idxfile_identify(int fd, struct idxfile_id *id);

/*
 * out = "DIR/<16 hex digits>.zmi", the hex being a 64-bit hash of
 * src_abspath.  The path is hashed as given: callers should pass a
 * canonical path (realpath) so that one source has one index file.
 * Returns 0, -EINVAL (dir empty, or src_abspath not absolute) or -ENAMETOOLONG.
 */
int idxfile_path(const char *dir, const char *src_abspath, char *out, size_t len);

/*
 * Saves idx (borrowed, not modified) as the index of the source at
 * src_abspath with identity id.  Creates dir and its parents as needed (mode
 * 0700).  Sets IDXFILE_F_VERIFIED: gzdec_index_build always verifies.
 * Returns 0 and, if bytes_written is not NULL, the file's size; or
 *   -EINVAL        src_abspath not absolute, id->size != idx->csize, or idx
 *                  is not a well-formed index (points out of order, ...);
 *   -ENAMETOOLONG  a path too long;
 *   -ENOMEM        out of memory;
 *   or the errno of mkdir, mkstemp, write, fsync, close or rename, e.g.
 *   -EROFS, -ENOSPC, -EDQUOT, -EFBIG, -EACCES, -ENOTDIR, -EIO.
 * On error no temporary file is left and any previous index file is intact.
 */
int idxfile_save(const char *dir, const char *src_abspath, const struct idxfile_id *id,
		 const struct gzdec_index *idx, uint64_t *bytes_written);

/*
 * Loads the saved index of src_abspath and checks that it was made for that
 * path and identity id.  If span_wanted is not 0, an index built with
 * another span is refused with -ERANGE: span bounds how much a random read
 * decodes, so a mount asked for span=64K must not silently use a 64M index.
 * Pass 0 (tools) to take any span; on -ERANGE rebuild and save over it.
 * Returns 0 and *out (caller frees with gzdec_index_free), or *out = NULL and
 *   -ENOENT   no index file for this path (-ENOTDIR if dir is not a directory);
 *   -EBADMSG  not a valid index: wrong magic, unsupported version, truncated
 *             or padded, checksum mismatch, a field out of range, or not a
 *             regular file;
 *   -ESTALE   a valid index, but made for another path (hash collision or a
 *             copied file) or another identity (the source changed);
 *   -ERANGE   valid and current, but built with another span;
 *   -ENOMEM   out of memory;
 *   or the errno of open/pread (-EACCES, -EIO, ...).
 * err (may be NULL) says why, with coff = the offset in the index file.
 */
int idxfile_load(const char *dir, const char *src_abspath, const struct idxfile_id *id,
		 uint64_t span_wanted, struct gzdec_index **out, struct zerr *err);

/*
 * Reads and fully validates the index file at path (checksum included, as
 * load does; the source is not looked at) and fills *info.
 * Returns 0, -EBADMSG, -ENOMEM, or the errno of open/pread; err as for load.
 * *info is undefined on error.
 */
int idxfile_read_header(const char *path, struct idxfile_info *info, struct zerr *err);

/*
 * Removes from dir, without following symlinks (entries are opened with
 * O_NOFOLLOW relative to dir; symlinks are left alone):
 *  - index files "<16 hex>.zmi" that are invalid, whose name is not the hash
 *    of their recorded path, whose source is gone (ENOENT, ENOTDIR, ELOOP)
 *    or not a regular file, or whose source's identity changed;
 *  - temporary files ".<16 hex>.zmi.XXXXXX" last modified over an hour ago
 *    (a live save takes seconds).
 * Indexes whose source cannot be checked (EACCES, EIO, ...) are kept.
 * Returns 0 and, if removed is not NULL, how many files went; or -ENOENT,
 * -ENOTDIR, -ENOMEM or the errno of opening dir.
 */
int idxfile_prune(const char *dir, unsigned *removed);

#endif
