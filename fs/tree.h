/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_TREE_H
#define ZMOUNT_TREE_H

/*
 * The visible tree: maps a path under the mount point to the source entry
 * behind it, by the rules in names.h, and gives the stat it shows.
 *
 * Each source directory's visible listing is computed once and reused
 * until the directory's mtime or ctime changes, so lookups in a directory
 * of 10,000 archives do not list it again.  Directories keep their names;
 * only regular files are renamed.  Symlinks are shown as symlinks and
 * never followed, on the way or at the end (beneath.h).
 *
 * Threads: any thread may call anything but tree_free.
 */

#include <limits.h>
#include <sys/stat.h>

struct arctab;
struct tree;

enum tree_kind {
	TREE_PASS,    /* shown as it is in the source */
	TREE_ARCHIVE, /* shown decompressed under its stripped name */
};

struct tree_node {
	enum tree_kind kind;
	char rel[PATH_MAX]; /* source path relative to the root, "." for the root */
	struct stat st;     /* lstat of the source entry */
};

/*
 * Opens the source root src.  Returns 0 and *out, or -ENOTDIR / -ENOENT /
 * another -errno from opening src, or -ENOMEM.  arcs is borrowed.
 */
int tree_new(const char *src, struct arctab *arcs, struct tree **out);

/* Frees the tree.  Accepts NULL. */
void tree_free(struct tree *t);

/* The source root's directory fd, owned by the tree. */
int tree_root_fd(const struct tree *t);

/*
 * Resolves a visible absolute path ("/" or "/a/b").  Returns 0 and *node,
 * -ENOENT if nothing is shown there, -ENAMETOOLONG, or another -errno.
 */
int tree_resolve(struct tree *t, const char *path, struct tree_node *node);

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

/* Masks the write bits: the mount is read-only. */
void tree_readonly(struct stat *st);

#endif
