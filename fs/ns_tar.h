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
 * archive's reader (arctab.h: the same cache and checkpoints), and kept
 * for the life of the mount, one per archive version.  A member's bytes
 * are the archive's decoded bytes at its data offset, through the same
 * reader: a member opens as a zsrc (src.h) that ops.c reads like any plain
 * file.  Members with unsafe names are left out (one log line each); an
 * archive that cannot be read shows its directory, whose listing and
 * lookups fail with EIO (one log line).
 *
 * Memory: per archive looked into, its table (tartab.h) plus 32 bytes per
 * shown name (tarview.h).
 *
 * Threads: as ns.h.  Two threads that look into the same unscanned archive
 * scan it once; the other one waits.
 */

struct ns;

/*
 * Wraps base (taken over: freed by ns_free of *out).  Returns 0 and *out,
 * or -ENOMEM (base is freed).
 */
int ns_tar_wrap(struct ns *base, struct ns **out);

#endif
