/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_S3TREE_H
#define ZMOUNT_S3TREE_H

/*
 * The visible tree of a bucket prefix: one snapshot of one listing (all
 * keys under the prefix, no delimiter), immutable once built, so any number
 * of threads read it without a lock while the mount builds the next one.
 *
 * Keys to names:
 *  - the prefix is a directory: "logs" lists "logs/", and "logs/a/b.gz"
 *    shows as a/b;
 *  - '/' in a key makes directories;
 *  - a key with an empty, "." or ".." segment, or a segment longer than
 *    255 bytes, cannot be named without aliasing another path: it is not
 *    shown (counted in skipped, logged for the first few);
 *  - a key ending in '/' (a "folder marker", as consoles make them) makes
 *    its directory exist, empty if nothing else is under it, and is not a
 *    file itself;
 *  - a key that is also a directory prefix ("a" and "a/b"): the directory
 *    is shown, the object is not (counted in shadowed, logged);
 *  - file names are stripped as for local files, by the rules the caller
 *    passes (struct s3tree_rules: fs/names.h's, so that source/ holds no
 *    naming policy): x.gz shows as x unless an object or directory x
 *    exists there; x.gz and x.xz both: the first bytewise wins, the other
 *    keeps its own name.
 * A stripped name is decided by its suffix alone, without reading the
 * object: the listing makes no request per object.  The mount checks the
 * magic bytes when the name is first looked up (arctab.c, through ns_s3.c).
 *
 * Inode numbers (s3tree_ent.ino): a hash of the key and its ETag for an
 * object, so a new version of an object has a new number, and of the path
 * for a directory; never 0 or 1 (the root's).  Stable across listings.
 *
 * Memory: a snapshot holds, per object, S3TREE_BYTES_PER_OBJECT plus twice
 * its key's length plus its ETag's length, and per directory,
 * S3TREE_BYTES_PER_DIR plus its path's length; s3tree_bytes says what it
 * holds (arrays are trimmed to fit when the build ends).
 *
 * Threads: a builder belongs to one thread.  A finished snapshot is
 * read-only; s3tree_get/put and every reader may run on any thread at once.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3.h"

#define S3TREE_BYTES_PER_OBJECT 64 /* plus 2 * key length + ETag length */
#define S3TREE_BYTES_PER_DIR	64 /* plus the length of its path */
#define S3TREE_NAME_MAX		255

struct s3tree;
struct s3tree_build;

enum s3tree_kind {
	S3TREE_DIR,
	S3TREE_ARCHIVE, /* an object under its stripped name (a candidate, checked at lookup) */
	S3TREE_RAW,	/* an object shown as it is */
};

/* One visible entry.  Pointers are into the snapshot: valid while a reference is held. */
struct s3tree_ent {
	enum s3tree_kind kind;
	const char *name;  /* the visible name; "" for the root */
	const char *key;   /* objects: the full key; NULL for directories */
	struct s3_stat st; /* objects: as listed */
	uint64_t ino;	   /* the inode number shown (see above) */
	uint32_t dir;	   /* directories: their index for s3tree_dir_* (the root is 0) */
};

struct s3tree_stats {
	size_t objects;	 /* objects shown */
	size_t dirs;	 /* directories, the root included */
	size_t skipped;	 /* keys with a segment that cannot be a name */
	size_t shadowed; /* objects hidden by a directory of the same name */
	size_t markers;	 /* folder markers */
	size_t bytes;	 /* what the snapshot holds (s3tree_bytes) */
};

/*
 * What a builder takes from the layer above (fs/), which owns the naming
 * rules and the log.  Both are called on the builder's thread.
 *  - strip: the visible names of one directory's n entries (names,
 *    borrowed; file[i] false for a subdirectory, which keeps its name):
 *    sets visible[i] to a malloc'd name (the builder frees it) for a file
 *    shown under a stripped name, else NULL.  Every file is taken as an
 *    archive by its suffix alone.  0, or -ENOMEM with every visible[i] NULL.
 *  - log: one line about keys not shown (log_arg its first argument).  A
 *    mount passes a warning at its first listing and a debug line when it
 *    lists the same prefix again.
 */
struct s3tree_rules {
	int (*strip)(const char *const *names, const bool *file, char **visible, size_t n);
	void (*log)(void *log_arg, const char *line);
	void *log_arg;
};

/*
 * Starts a listing of prefix ("" for the whole bucket; a '/' is added
 * unless it ends in one).  label names the bucket in log lines
 * ("s3://BUCKET"), copied; rules is borrowed until the build ends.
 * Returns 0 and *out, or -ENOMEM.
 */
int s3tree_build_new(const char *label, const char *prefix, const struct s3tree_rules *rules,
		     struct s3tree_build **out);

/*
 * Adds one listed object, in any order (key and st are copied).  Keys not
 * under the prefix and keys that cannot be names are counted and dropped.
 * Returns 0 or -ENOMEM (the builder stays valid: finish or abort it).
 * Its shape fits s3_list's callback through a one-line wrapper.
 */
int s3tree_build_add(struct s3tree_build *b, const char *key, const struct s3_stat *st);

/*
 * Builds the snapshot and frees b.  Returns 0 and *out (one reference:
 * s3tree_put), or -ENOMEM with *out NULL (b freed all the same).
 */
int s3tree_build_finish(struct s3tree_build *b, struct s3tree **out);

/* Frees an unfinished builder.  Accepts NULL. */
void s3tree_build_abort(struct s3tree_build *b);

/* Adds a reference; returns t. */
struct s3tree *s3tree_get(struct s3tree *t);

/* Drops a reference; the last one frees t.  Accepts NULL. */
void s3tree_put(struct s3tree *t);

/*
 * Resolves a visible absolute path ("/" or "/a/b").  Returns 0 and *out,
 * -ENOENT if nothing is shown there, -ENOTDIR if a component on the way
 * is a file.
 */
int s3tree_resolve(const struct s3tree *t, const char *path, struct s3tree_ent *out);

/* Entries of directory dir, sorted by name ("." and ".." are not). */
size_t s3tree_dir_count(const struct s3tree *t, uint32_t dir);

/* Entry i < s3tree_dir_count(t, dir) of directory dir. */
void s3tree_dir_entry(const struct s3tree *t, uint32_t dir, size_t i, struct s3tree_ent *out);

void s3tree_get_stats(const struct s3tree *t, struct s3tree_stats *out);

/* Bytes the snapshot holds: its arrays and strings. */
size_t s3tree_bytes(const struct s3tree *t);

#endif
