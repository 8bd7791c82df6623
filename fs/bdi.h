/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_BDI_H
#define ZMOUNT_BDI_H

/*
 * The kernel caps read-ahead on a FUSE mount at the smaller of what the
 * daemon asks for (max_readahead) and its backing device's read_ahead_kb,
 * which starts at 128 KiB.  At 128 KiB a sequential reader waits on one
 * small request after another; 1 MiB requests let it keep pace with the
 * decoders.  Only root may raise it, and only before the mount answers
 * its first request (the INIT reply takes the minimum of the two).
 *
 * Finding that device takes our mount's line of /proc/self/mountinfo, so
 * this file also answers "is SRC already zmount-mounted on MNT".
 *
 * Paths (mnt, src) are absolute and canonical (realpath), as mountinfo
 * writes them.  Nothing here logs.  Threads: call from one thread.
 */

#include <stdio.h>
#include <stddef.h>

/* The file system type of a zmount mount in mountinfo (subtype=zmount). */
#define BDI_FSTYPE "fuse.zmount"

/*
 * Reads mountinfo text from f (borrowed; read to its end) and finds the
 * mount a zmount of src has just made on mnt: the topmost mount at mnt
 * (no other mount at mnt sits on it), which must be of type BDI_FSTYPE and
 * source src.  Picking merely the last line at mnt could pick a mount that
 * is not ours (one made beneath ours later, with a higher id, or another
 * file system that raced onto mnt); in doubt we leave every device alone.
 * Returns 0 and its "major:minor" in dev (size bytes), or:
 *   -ENOENT   no mount at mnt, or the topmost one is not a zmount of src;
 *   -EEXIST   several topmost zmounts of src at mnt on different devices;
 *   -ENAMETOOLONG  the device name does not fit in size;
 *   -ENOMEM.
 */
int bdi_find_dev(FILE *f, const char *mnt, const char *src, char *dev, size_t size);

/*
 * Returns 1 if mountinfo text f (borrowed; read to its end) lists a mount of
 * type BDI_FSTYPE and source src (any source if src is NULL) at mnt,
 * anywhere in the stack of mounts there; 0 if not; -ENOMEM.
 */
int bdi_is_mounted(FILE *f, const char *mnt, const char *src);

/*
 * Sets read_ahead_kb of the zmount of src on mnt (bdi_find_dev on
 * /proc/self/mountinfo) to bytes / 1024.  Returns 0, bdi_find_dev's errors,
 * or the -errno of opening the file or of the write (-EACCES when not root).
 */
int bdi_set_read_ahead(const char *mnt, const char *src, size_t bytes);

#endif
