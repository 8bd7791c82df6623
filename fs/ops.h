/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_OPS_H
#define ZMOUNT_OPS_H

/*
 * The FUSE operations: thin glue from kernel requests to the tree, the
 * archive table and the readers.  Each operation returns 0, a byte count,
 * or a negative errno, and libfuse replies exactly once with it.
 */

#define FUSE_USE_VERSION 314
#include <fuse.h>

struct arctab;
struct bcache;
struct tree;

/* What every operation works on; passed as fuse_new's private data. */
struct ops_ctx {
	struct tree *tree;
	struct arctab *arcs;
	struct bcache *cache;
	double timeout; /* seconds the kernel may cache entries and attributes */
};

extern const struct fuse_operations ops_table;

#endif
