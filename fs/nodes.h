/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_NODES_H
#define ZMOUNT_NODES_H

/*
 * The kernel's inode numbers (FUSE node ids), one per *version* of a
 * visible entry, as the namespace tells versions apart (ns_same, ns.h): a
 * local regular file's version, archive or plain, is its source's device,
 * inode, size, mtime and ctime (srcid_same), a directory's or anything
 * else's its device, inode and type (srcid_same_object); an object's is its
 * key and ETag.
 * When a file changes, the next lookup of its name gets a new node, so the
 * kernel gives the new version a new inode with its own page cache:
 * handles on the old version keep their pages, and new opens never see
 * them.  That is what lets files keep their page cache (keep_cache) without
 * a new open ever reading a page of an older version.  The node id is not
 * the st_ino users see: that is the source's inode number, the same for
 * every version of a file (ops.c, node_attr).
 *
 * Memory: one allocation per node of at most NODES_BYTES_PER_NODE plus the
 * lengths of its visible path, its source id and its tag; the kernel decides how many
 * nodes it holds (it forgets them as it drops inodes).
 *
 * A node lives while the kernel holds lookups on it (nodes_lookup adds one,
 * nodes_forget removes them) or an operation holds a reference (nodes_get).
 *
 * Threads: any thread may call anything but nodes_free.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ns.h"

struct arc;
struct arctab;
struct ns;
struct nodes;
struct reader;

struct node {
	uint64_t id;	   /* the FUSE node id; FUSE_ROOT_ID for the root */
	uint64_t parent;   /* parent's id (the root is its own parent) */
	char *path;	   /* visible path: "/" or "/a/b" (the node's own storage) */
	struct ns_entry e; /* the version (its strings are the node's storage:
			      never ns_entry_clear it) */
	struct arc *arc;   /* archives: its reader (may be corrupt); else NULL */
};

/* Bytes per node besides its strings: an upper bound, asserted at build time in nodes.c. */
#define NODES_BYTES_PER_NODE 280

/*
 * Creates the table with the root node for entry root (copied); versions
 * are compared with ns_same of ns (borrowed).  Returns 0 and *out, or -ENOMEM.
 */
int nodes_new(struct arctab *arcs, struct ns *ns, const struct ns_entry *root, struct nodes **out);

/* Frees every node.  Accepts NULL. */
void nodes_free(struct nodes *t);

/*
 * Returns, with one more kernel lookup counted and one reference for the
 * caller, the node for name under parent at version e (a fresh
 * ns_resolve of path, copied), creating it if that version has none yet.
 * name must be path's last component.  For a new archive node, arc is
 * taken over; otherwise the caller keeps it (and puts it).  Returns 0, or
 * -ENOMEM.
 */
int nodes_lookup(struct nodes *t, uint64_t parent, const char *name, const char *path,
		 const struct ns_entry *e, struct arc **arc, struct node **out);

/* Returns node id with a reference, or NULL if the kernel forgot it. */
struct node *nodes_get(struct nodes *t, uint64_t id);

/* Releases a reference from nodes_get or nodes_lookup.  Accepts NULL. */
void nodes_put(struct nodes *t, struct node *n);

/* The kernel dropped nlookup lookups of node id. */
void nodes_forget(struct nodes *t, uint64_t id, uint64_t nlookup);

/*
 * The st_ino shown for the source object (dev, ino): ino itself on the
 * source root's file system; on another one mounted below it, ino plus
 * N << 48, N = 1, 2, ... numbering those file systems as they are first
 * met (an ino of 2^48 or more, or a 65,536th file system, is shown as it
 * is).  The mount has one st_dev, so without this the roots of two ext4
 * file systems (both inode 2) would look like one directory, which find
 * reports as a loop.  Stable for the life of t.
 */
uint64_t nodes_ino(struct nodes *t, dev_t dev, ino_t ino);

/*
 * True for the first call on node n only: for a line said once per
 * version (an object found changed under its open handles).  Any thread.
 */
bool nodes_say_once(struct node *n);

/* Live nodes (for the stats). */
size_t nodes_count(struct nodes *t);

/*
 * The ids of every live node whose archive's reader is r (only compared,
 * never dereferenced, so r may be gone), or of every archive node if r is
 * NULL.  Returns the count and *ids (malloc'd, caller frees; NULL when 0),
 * or -ENOMEM.
 */
ssize_t nodes_with_reader(struct nodes *t, const struct reader *r, uint64_t **ids);

#endif
