/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_OPS_H
#define ZMOUNT_OPS_H

/*
 * The FUSE operations (low-level API), the one stack for every source:
 * thin glue from kernel requests to the node table, the namespace (ns.h:
 * a local tree or a bucket prefix), the archive table and the readers.
 * Each operation replies exactly once.
 *
 * Node ids name versions (see nodes.h), so files are opened with
 * keep_cache: their pages stay valid for as long as the kernel keeps the
 * inode, and a changed source gets a new inode.  A plain file found changed
 * at open (its node is an older version whose name the kernel still caches)
 * is opened without keep_cache, so that open reads it afresh.
 *
 * Source files are only ever opened through ns_open: a FIFO or a device
 * swapped in for a file is never opened, so no worker blocks on one.
 * Objects' reads carry If-Match, so a handle on an overwritten object
 * fails with EIO, never returning the new version's bytes.
 *
 * Stats are extended attributes, so they never show up in find or du:
 *   user.zmount.stats on the mount root: cache and decoder counters;
 *   user.zmount.info on each archive: format, index state, blocks, sizes.
 * Each value is "key=value" lines.  They are served by name only and not
 * listed by listxattr, so cp -a, rsync -X and tar --xattrs do not copy them.
 *
 * Pages a reader served and later found bad (reader_opts.tainted) are
 * dropped from the kernel's cache by the mount's notify thread (notify.h).
 */

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "notify.h"

struct arctab;
struct nodes;
struct ns;
struct reader;
struct zmctx;

/*
 * A link on the mount's list of open files and directories (ops.c): the
 * kernel sends no release for those still open when the daemon is stopped
 * (SIGTERM, lazy unmount), so ops_cleanup frees what is left.
 */
struct ops_open {
	struct ops_open *prev, *next; /* protected by ops_ctx.open_lock */
	bool is_dir;
};

/*
 * One mount: what every operation works on; passed as fuse_session_new's
 * user data.  Initialize with ops_ctx_init; the caller fills the pointers.
 */
struct ops_ctx {
	struct ns *ns;
	struct arctab *arcs;
	struct zmctx *zm; /* the readers' context: cache, pool, counters, log */
	struct nodes *nodes;
	double timeout;	   /* seconds the kernel may cache entries and attributes */
	unsigned max_read; /* the max_read mount option, 0 if none */
	pthread_mutex_t open_lock;
	struct ops_open open_list; /* list head; protected by open_lock */
	atomic_ullong plain_reads; /* reads of plain files that reached us (page cache missed) */
	atomic_flag fd_limit_said; /* "out of file descriptors" was logged */
	struct notify notify;	   /* pages of tainted readers (ops_tainted) */
};

/* Zeroes c and sets up its locks and list (default mutexes: nothing to destroy). */
void ops_ctx_init(struct ops_ctx *c);

/* The read-ahead asked of the kernel, and so its largest read request. */
#define OPS_READ_AHEAD (1u << 20)

extern const struct fuse_lowlevel_ops ops_table;

/* Frees the files and directories still open when the loop ends. */
void ops_cleanup(struct ops_ctx *c);

/*
 * The reader_opts.tainted hook; ctx is the struct ops_ctx.  Queues r on
 * c->notify (notify_queue) and returns at once; any thread.
 */
void ops_tainted(void *ctx, const struct reader *r);

/*
 * The reader_opts.still_named hook; ctx is the struct ops_ctx: asks the
 * namespace (ns_still_named), never through the mount (MNT may be SRC
 * itself).  Any thread.
 */
bool ops_still_named(void *ctx, const struct reader *r);

/*
 * The request loop's hooks (loop.h); ctx is the struct ops_ctx.
 * ops_note_read: a READ just received on an archive's handle fh is noted
 * as in progress (reader_note_received), so that later READs wait their
 * turn; never blocks.  ops_adopt_read: on the worker about to process it,
 * makes that note its own (reader_adopt_received), and with n NULL after
 * it, forgets it.
 */
void ops_note_read(void *ctx, uint64_t fh, uint64_t off, uint32_t size, struct loop_note *out);
void ops_adopt_read(void *ctx, const struct loop_note *n);

#endif
