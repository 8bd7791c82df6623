/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_IDXTRUST_H
#define ZMOUNT_IDXTRUST_H

/*
 * Who may have written a saved index (internal to index/): the ownership
 * rules of idxfile.h ("Ownership", as ssh's StrictModes) for the local
 * index directory, the directories above it and the index files in it.
 * Nothing here logs; a refusal is -EPERM with the reason in err (may be
 * NULL), for the caller's one log line.  No global state, any thread.
 */

#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "zerr.h"

/* How index files and, for prune, their sources are opened: never through a symlink, never
 * blocking on a FIFO or a device, never becoming a controlling terminal. */
#define IDXTRUST_OPEN (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

/* Parents checked above an index directory, at most. */
#define IDXTRUST_MAX_UP 1024

/*
 * Whether st may have been written only by us or root: owned by geteuid()
 * or root, and not writable by group or others, unless sticky_ok and the
 * sticky bit is set.  Returns 0, or -EPERM with err naming what (e.g. "the
 * index file").
 */
int idxtrust_stat(const struct stat *st, bool sticky_ok, const char *what, struct zerr *err);

/*
 * Checks the index directory dfd (borrowed): itself without the sticky
 * exception, then its parent and the directories above that up to and
 * including the first one root owns (or "/"), walked through "..", at most
 * IDXTRUST_MAX_UP of them; a sticky parent is accepted, since nobody else
 * can rename or remove what we own in it, and past this check the
 * directory is only used through dfd.  Returns 0, or -EPERM with err.
 */
int idxtrust_dir(int dfd, struct zerr *err);

/*
 * Opens dir (following symlinks: it is the user's setting) as a directory,
 * O_CLOEXEC, and checks it with idxtrust_dir.  Returns the fd (the caller
 * closes it), or -EPERM or the -errno of open, with err.
 */
int idxtrust_open_dir(const char *dir, struct zerr *err);

/*
 * Opens the index file name in dfd (AT_FDCWD: name is a path) with
 * IDXTRUST_OPEN, checks that it is a regular file and, if trust, that
 * idxtrust_stat accepts it.  Returns the fd (the caller closes it) with
 * *st its fstat, or -EBADMSG (a symlink, not a regular file), -EPERM, or
 * the -errno of open or fstat (-ENOENT, ...), with err.
 */
int idxtrust_open_file(int dfd, const char *name, bool trust, struct stat *st, struct zerr *err);

#endif
