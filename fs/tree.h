/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_TREE_H
#define ZMOUNT_TREE_H

/*
 * The visible tree: maps a path under the mount point to the source entry
 * behind it, by the rules in names.h, and gives the stat it shows.
 *
 * Each source directory's visible listing is computed once and reused
 * while the directory's identity (inode, mtime, ctime) is unchanged, so
 * lookups in a directory of 10,000 archives do not list it again.  A
 * listing also records the version (srcid_same) of every candidate whose
 * magic bytes it probed; at most every max(ttl, 0.1 s) a use re-stats them
 * (no opens) and a changed one rebuilds the listing, so an empty x.gz that
 * later becomes gzip shows as x without the directory changing.  A rebuild
 * re-probes only the candidates that changed.
 *
 * Memory: listings are kept in an LRU bounded by a byte budget (see
 * tree_set_limits).  Each listing is charged TREE_LIST_BYTES_PER_ENTRY per
 * entry plus its names, and TREE_LIST_BYTES_PER_PROBED per probed
 * candidate; the least recently used ones are dropped while the total is
 * over the budget, except the newest (a directory larger than the budget
 * still works, and is then the only one kept).  Listings in use by a
 * request are freed when it ends.
 *
 * Directories keep their names; only regular files are renamed.  Symlinks
 * are shown as symlinks and never followed, on the way or at the end
 * (beneath.h).
 *
 * Threads: any thread may call anything but tree_free.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "ns.h"

struct arctab;
struct tree;

enum tree_kind {
	TREE_PASS,    /* shown as it is in the source */
	TREE_ARCHIVE, /* shown decompressed under its stripped name */
};

/* One resolved entry.  rel is malloc'd and owned by the node (tree_node_clear). */
struct tree_node {
	enum tree_kind kind;
	char *rel;	/* source path relative to the root, "." for the root */
	struct stat st; /* lstat of the source entry */
};

/* Bytes charged to the listing budget (an upper bound of what malloc gives, on 64-bit glibc). */
#define TREE_LIST_BYTES_PER_ENTRY   64	/* per entry, plus the lengths of its names */
#define TREE_LIST_BYTES_PER_PROBED  176 /* per candidate probed (its stat) */
#define TREE_LIST_BYTES_PER_LISTING 384 /* plus the length of its path */
#define TREE_LIST_BUDGET_DEFAULT    (4u << 20)

/*
 * Opens the source root src.  Returns 0 and *out, or -ENOTDIR / -ENOENT /
 * another -errno from opening src, or -ENOMEM.  arcs is borrowed.  The
 * listing budget is TREE_LIST_BUDGET_DEFAULT and candidates are re-checked
 * every second until tree_set_limits says otherwise.
 */
int tree_new(const char *src, struct arctab *arcs, struct tree **out);

/*
 * Sets the listing byte budget (0: the default) and how often, in seconds,
 * a listing's probed candidates are re-checked (the mount's timeout; 0.1 s
 * at least).  Call before the tree is used.
 */
void tree_set_limits(struct tree *t, size_t list_budget, double ttl);

/* Sets the archive table (borrowed) the tree probes candidates through; before it is used. */
void tree_set_arcs(struct tree *t, struct arctab *arcs);

/*
 * The namespace entry (ns.h) of the local archive rel whose lstat is st,
 * as the archive table takes it (arctab_get, arctab_index): it borrows
 * rel, so never ns_entry_clear it.
 */
struct ns_entry tree_arc_entry(const char *rel, const struct stat *st);

/* Frees the tree.  Accepts NULL. */
void tree_free(struct tree *t);

/* The source root's directory fd, owned by the tree. */
int tree_root_fd(const struct tree *t);

/*
 * Resolves a visible absolute path ("/" or "/a/b").  Returns 0 and *node
 * (free node->rel with tree_node_clear), -ENOENT if nothing is shown there,
 * -ENAMETOOLONG, -ENOMEM, or another -errno; on error node->rel is NULL.
 */
int tree_resolve(struct tree *t, const char *path, struct tree_node *node);

/* Frees node->rel and sets it to NULL.  Accepts a cleared node. */
void tree_node_clear(struct tree_node *node);

/*
 * The stat shown for node: read-only modes, times and owners of the source,
 * and for an archive its exact uncompressed size (indexing it if needed;
 * a corrupt archive shows size 0 and fails to open).  Returns 0 or -errno.
 */
int tree_stat(struct tree *t, const struct tree_node *node, struct stat *st);

/*
 * Calls fill once per visible entry of directory path (not "." or "..")
 * with its name and shown stat, until fill returns nonzero.  Returns 0 or
 * -errno (-ENOTDIR if path is not a directory).
 */
int tree_list(struct tree *t, const char *path,
	      int (*fill)(void *ctx, const char *name, const struct stat *st), void *ctx);

/*
 * An open directory: a snapshot of its listing that never changes, shared
 * by every open directory on the same version of it (32 handles on one
 * directory hold one listing).  While open, it is kept in the table and
 * charged to the budget but never dropped to make room; a directory that
 * changes gets a new listing, and handles opened before keep the old one
 * (then no longer charged) until they close.
 */
struct tree_dir;

/*
 * Opens the listing of directory path for reading.  Returns 0 and *out
 * (close it with tree_closedir), or tree_list's errors (*out NULL).
 */
int tree_opendir(struct tree *t, const char *path, struct tree_dir **out);

/* Entries in d ("." and ".." are not). */
size_t tree_dir_count(const struct tree_dir *d);

/*
 * Entry i < tree_dir_count(d): returns its visible name (valid while d is
 * open) and sets *st to what tree_list's fill gets: the type (S_IFREG for an
 * archive, else 0: unknown), the source's inode number (its d_ino) and the
 * device of its directory.
 */
const char *tree_dir_entry(const struct tree_dir *d, size_t i, struct stat *st);

/* Ends tree_opendir.  Accepts NULL. */
void tree_closedir(struct tree *t, struct tree_dir *d);

struct tree_stats {
	size_t listings;   /* listings kept */
	size_t list_bytes; /* bytes charged for them */
	size_t list_budget;
	unsigned long long rebuilds; /* listings rebuilt because a probed candidate changed */
};

void tree_get_stats(struct tree *t, struct tree_stats *out);

/* Masks the write bits: the mount is read-only. */
void tree_readonly(struct stat *st);

#endif
