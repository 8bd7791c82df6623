/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_SPILL_H
#define ZMOUNT_SPILL_H

/*
 * One unlinked file per context where checkpoint windows wait on disk
 * (ckpt_set_spill), so that a set of any size costs memory only for its
 * table.  One file, not one per set: a mount holds one descriptor for all
 * of them, however many archives have sets (one each exhausted a daemon
 * limited to 256 descriptors after 113 one-Block files).
 *
 * Space: each put appends a region; spill_drop gives a region's blocks
 * back to the file system (FALLOC_FL_PUNCH_HOLE), so the disk holds what
 * live sets hold.  Where holes cannot be punched the file only grows,
 * until the context is freed.
 *
 * Threads: spill_put, spill_read and spill_drop may be called from any
 * thread at once (a mutex guards only the end offset; I/O runs outside it).
 * spill_open and spill_free: one thread, with no other call running.
 */

#include <stddef.h>
#include <stdint.h>

struct spill;

/*
 * An unlinked file made in dir (O_TMPFILE, else a name made and removed at
 * once).  Returns 0 and *out (free with spill_free), or a negative errno.
 */
int spill_open(const char *dir, struct spill **out);

/* The directory it was made in (borrowed from sp). */
const char *spill_dir(const struct spill *sp);

/* Appends len bytes of buf: 0 and their offset in *off, or a negative errno (nothing kept). */
int spill_put(struct spill *sp, const void *buf, uint64_t len, uint64_t *off);

/* len bytes at off into buf: 0, or -EIO for a short read or an error. */
int spill_read(struct spill *sp, uint64_t off, void *buf, size_t len);

/* The region [off, off + len) is no longer used: its blocks go back to the file system. */
void spill_drop(struct spill *sp, uint64_t off, uint64_t len);

/* The file's descriptor (owned by sp): for tests that damage it. */
int spill_fd(const struct spill *sp);

/* Closes the file (its bytes are gone with it).  Accepts NULL. */
void spill_free(struct spill *sp);

#endif
