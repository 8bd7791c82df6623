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
 */

#include <stddef.h>

/*
 * Sets read_ahead_kb of the FUSE mount on the absolute, canonical path mnt
 * (the newest mount there, per /proc/self/mountinfo) to bytes / 1024.
 * Returns 0, -ENOENT if no such mount is listed, or the -errno of the write
 * (-EACCES when not root).  Logs nothing.  Call from one thread.
 */
int bdi_set_read_ahead(const char *mnt, size_t bytes);

#endif
