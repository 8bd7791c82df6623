/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_NS_TAR_H
#define ZMOUNT_NS_TAR_H

/*
 * -o tar: a namespace over another one (ns.h) in which every tar archive,
 * an archive whose shown name ends in ".tar" (x.tar.gz, x.tgz, x.tar.xz,
 * x.txz, x.tar.zst, x.tzst) or a plain x.tar, is a directory x.tar/ of its
 * members.  Everything else is the base namespace's, unchanged.
 *
 * An archive's member table (tartab.h) is built at the first lookup or
 * listing inside it, by one scan of its decoded bytes through the
 * archive's reader (arctab.h: the same cache and checkpoints), in a
 * thread of its own (at most 4; past that, in the asking thread), and kept
 * for the life of the mount, one per archive version.  While the scan
 * runs, the root's listing shows the members reached so far, and a
 * lookup, an open or a readlink answers as soon as the scan has reached
 * its name (a name not reached yet waits for the end: ENOENT only then),
 * with the inode number it keeps; a listing below the root waits for the
 * whole table (doc/tar.md "Listing before the table is whole").  A
 * member's bytes
 * are the archive's decoded bytes at its data offset, through the same
 * reader: a member opens as a zsrc (src.h) that ops.c reads like any plain
 * file.  Members with unsafe names are left out (one log line each); an
 * archive that cannot be read shows its directory, whose listing and
 * lookups fail with EIO (one log line).
 *
 * Memory: per archive looked into, its table (tartab.h) plus its view
 * (tarview_cost), together at most the reader options' index_max
 * (cache_size/4): over it, the directory fails with EIO (one log line).
 *
 * Threads: as ns.h.  Two threads that look into the same unscanned archive
 * share one scan.
 */

struct ns;

/*
 * Wraps base (taken over: freed by ns_free of *out).  Returns 0 and *out,
 * or -ENOMEM (base is freed).
 */
int ns_tar_wrap(struct ns *base, struct ns **out);

/*
 * Ends the scans that run in threads of their own (at their next 1 MiB)
 * and waits for them; later scans run in the thread that asks.  Call it
 * before freeing the arctab the namespace was bound to: the scans read
 * through it.  ns_free calls it too.  Any thread but a scan's.
 */
void ns_tar_stop(struct ns *ns);

#endif
