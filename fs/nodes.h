/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_NODES_H
#define ZMOUNT_NODES_H

/*
 * The kernel's inode numbers (FUSE node ids), one per *version* of a
 * visible entry.  An archive's version is its source's device, inode, size,
 * mtime and ctime; anything else's is its device and inode.  When a source
 * changes, the next lookup of its name gets a new node, so the kernel gives
 * the new version a new inode with its own page cache: handles on the old
 * version keep reading the old version's pages and bytes, and new opens
 * never see them.  That is what lets archives keep their page cache
 * (keep_cache) without ever mixing two versions.
 *
 * A node lives while the kernel holds lookups on it (nodes_lookup adds one,
 * nodes_forget removes them) or an operation holds a reference (nodes_get).
 *
 * Threads: any thread may call anything but nodes_free.
 */

#include <stdint.h>

#include "tree.h"

struct arc;
struct arctab;
struct nodes;

struct node {
	uint64_t id;           /* the FUSE node id; FUSE_ROOT_ID for the root */
	uint64_t parent;       /* parent's id (the root is its own parent) */
	char *path;            /* visible path: "/" or "/a/b" */
	struct tree_node tn;   /* the version: kind, source path, lstat */
	struct arc *arc;       /* archives: its reader (may be corrupt); else NULL */
};

/* Creates the table with the root node for tn.  Returns 0 and *out, or -ENOMEM. */
int nodes_new(struct arctab *arcs, const struct tree_node *root, struct nodes **out);

/* Frees every node.  Accepts NULL. */
void nodes_free(struct nodes *t);

/*
 * Returns, with one more kernel lookup counted and one reference for the
 * caller, the node for name under parent at version tn (a fresh
 * tree_resolve of path), creating it if that version has none yet.  For a
 * new archive node, arc is taken over; otherwise the caller keeps it (and
 * puts it).  Returns 0, or -ENOMEM.
 */
int nodes_lookup(struct nodes *t, uint64_t parent, const char *name, const char *path,
		 const struct tree_node *tn, struct arc **arc, struct node **out);

/* Returns node id with a reference, or NULL if the kernel forgot it. */
struct node *nodes_get(struct nodes *t, uint64_t id);

/* Releases a reference from nodes_get or nodes_lookup.  Accepts NULL. */
void nodes_put(struct nodes *t, struct node *n);

/* The kernel dropped nlookup lookups of node id. */
void nodes_forget(struct nodes *t, uint64_t id, uint64_t nlookup);

#endif
