/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_IDXLOCAL_H
#define ZMOUNT_IDXLOCAL_H

/*
 * The local index directory as a store (idxstore.h): idxlocal_store makes
 * its handle, whose ctx is the directory's path (a char *, owned by the
 * handle).  Every call
 * opens the directory and checks it (idxtrust_open_dir) and then uses it
 * only through that descriptor, so the ownership rules of idxfile.h hold
 * for each get, put, delete and prune.
 *
 * Threads: no state; any thread, at once.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "idxstore.h"
#include "zerr.h"

/*
 * get: the file name in directory ctx, opened as idxlocal_open does and
 * read whole; -EFBIG if it is larger than cap (nothing read), else what
 * idxstore_ops.get says.  (idxfile.c reads local files through
 * idxlocal_open instead: header and CRC-64 before the body.)
 * put: creates directory ctx and its parents as needed (mode 0700), writes
 * ".<name>.XXXXXX" (O_EXCL, mode 0600, random characters) in it, fsyncs and
 * renames it over name, then fsyncs the directory; on error the temporary
 * file is unlinked and any previous file of that name is intact.  Returns
 * 0, -EPERM (directory not trusted; nothing written) or the -errno of
 * mkdir, open, write, fsync, close or rename.
 * del: unlinks name in directory ctx once it is trusted.
 * No list or peek: a local directory is pruned by idxlocal_prune.
 */
extern const struct idxstore_ops idxlocal_ops;

/*
 * A handle over the local directory dir (copied; absolute, not checked or
 * created here: each get, put and delete checks it, and put creates it):
 * the store idxopen makes of a path.  Its name is dir.  Returns 0 and
 * *out (idxstore_free), -EINVAL (dir empty) or -ENOMEM.
 */
int idxlocal_store(const char *dir, struct idxstore **out);

/* The directory of st if idxlocal_store made it (borrowed: st's), else NULL. */
const char *idxlocal_dir(const struct idxstore *st);

/*
 * Opens file name in directory dir with idxtrust_open_file (dir trusted;
 * name regular, never through a symlink): returns the fd (O_CLOEXEC; the
 * caller closes it) with its fstat in *st, or -errno with err (may be NULL).
 */
int idxlocal_open(const char *dir, const char *name, struct stat *st, struct zerr *err);

/*
 * Reads (wr false) or writes (wr true) all len bytes at buf from or to
 * offset off of fd, again after EINTR and short transfers: 0, -EIO if
 * the file ends first (or a write makes no progress), or -errno.  One
 * loop for the saves here and the loads in idxfile.c.
 */
int idxlocal_rw(int fd, void *buf, size_t len, uint64_t off, bool wr);

/*
 * Removes from directory dir (trusted as above), without following
 * symlinks, the regular files that must go: name for which is_index(name,
 * its length) holds and judge(arg, dfd, name) returns 1 (dfd: dir's
 * descriptor, valid during the call), and temporary files of put
 * (".<index name>.XXXXXX") last modified over an hour ago (a live save
 * takes seconds).  Everything else is left alone.  Returns 0 and, if
 * removed is not NULL, how many files went; or -EPERM (dir not trusted:
 * nothing is removed), -ENOMEM or the -errno of opening dir.
 */
int idxlocal_prune(const char *dir, bool (*is_index)(const char *name, size_t n),
		   int (*judge)(void *arg, int dfd, const char *name), void *arg,
		   unsigned *removed);

#endif
