/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_OPS_H
#define ZMOUNT_OPS_H

/*
 * The FUSE operations (low-level API): thin glue from kernel requests to
 * the node table, the tree, the archive table and the readers.  Each
 * operation replies exactly once.
 *
 * Node ids name versions (see nodes.h), so archives are opened with
 * keep_cache: their pages stay valid for as long as the kernel keeps the
 * inode, and a changed source gets a new inode.
 *
 * Stats are extended attributes, so they never show up in find or du:
 *   user.zmount.stats on the mount root: cache and decoder counters;
 *   user.zmount.info on each archive: format, index state, blocks, sizes.
 * Each value is "key=value" lines.
 */

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

struct arctab;
struct bcache;
struct nodes;
struct tree;

/* What every operation works on; passed as fuse_session_new's user data. */
struct ops_ctx {
	struct tree *tree;
	struct arctab *arcs;
	struct bcache *cache;
	struct nodes *nodes;
	double timeout; /* seconds the kernel may cache entries and attributes */
	unsigned max_read; /* the max_read mount option, 0 if none */
};

/* The read-ahead asked of the kernel, and so its largest read request. */
#define OPS_READ_AHEAD (1u << 20)

extern const struct fuse_lowlevel_ops ops_table;

/* Frees the files and directories still open when the loop ends. */
void ops_cleanup(struct ops_ctx *c);

#endif
