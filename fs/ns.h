/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_NS_H
#define ZMOUNT_NS_H

/*
 * A namespace: what the one FUSE stack (ops.c, nodes.c, arctab.c) knows of
 * a source tree.  Names go through here; bytes go through the zsrc an
 * entry opens as (source/src.h).  Two implementations: a local directory
 * (ns_local.c, over tree.c and beneath.c) and a bucket prefix (ns_s3.c,
 * over s3tree.c snapshots and s3src).  Directory descriptors, dirfd+rel
 * pairs, S3 clients and snapshots stay private to them.
 *
 * An entry (struct ns_entry) is one version of one visible name:
 *   kind  what the name shows as;
 *   id    the source's own name for it: a local path relative to the root
 *         ("." for the root), an object key ("" for a directory);
 *   st    the stat shown before decompression: a local lstat; for an
 *         object its size, Last-Modified and an st_ino that changes with
 *         its ETag (s3tree.h); st_dev is the same for the whole tree
 *         unless a local tree crosses file systems;
 *   obj   the source object's number within st_dev, the same for every
 *         version (local: st_ino; object: a hash of its key): the archive
 *         table keeps one archive per (st_dev, obj);
 *   tag   the part of the version the stat cannot hold, compared exactly:
 *         an object's ETag; NULL (as "") for a local file.
 * ns_same tells whether two entries are the same version: the same kind
 * and object, and for a regular file the same contents (local: srcid_same;
 * object: key and ETag).  Node ids name versions (nodes.h) by this test.
 *
 * Errors are -errno.  -ESTALE from ns_open: the name no longer holds that
 * version (look it up again).
 *
 * Threads: any thread may call anything but ns_free and ns_bind, which
 * belong to the main thread before and after the loop.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

struct arctab;
struct indexer;
struct pool;
struct reader;
struct reader_tap;
struct zmctx;
struct zsrc;

enum ns_kind {
	NS_DIR,
	NS_ARCHIVE, /* shown decompressed under its stripped name */
	NS_FILE,    /* a regular file shown as it is */
	NS_SYMLINK, /* shown as a symlink, never followed */
	NS_OTHER,   /* FIFOs, devices, sockets: shown, never opened */
};

/* One version of a visible name.  id and tag are malloc'd: ns_entry_clear. */
struct ns_entry {
	enum ns_kind kind;
	char *id;
	char *tag;
	uint64_t obj;
	struct stat st;
};

/*
 * An open directory listing: a snapshot taken at open.  It may grow while
 * open (ns_dir_more), never otherwise: entry i stays entry i.
 */
struct ns_dir;

struct ns_ops {
	/* The entry at visible path ("/" or "/a/b"); -ENOENT if nothing is shown there. */
	int (*resolve)(void *ns, const char *path, struct ns_entry *out);
	/* Same version (see above). */
	bool (*same)(void *ns, const struct ns_entry *a, const struct ns_entry *b);
	/*
	 * The current state of e's object (plain files and directories):
	 * through src if not NULL (an open handle's source), else by name,
	 * -ENOENT if the name no longer holds that object.  A source that
	 * never changes (an object) gives e->st.
	 */
	int (*state)(void *ns, const struct ns_entry *e, struct zsrc *src, struct stat *st);
	/*
	 * e's bytes as a source (*out, the caller's reference), never anything
	 * but that regular file or object (no FIFO or device is opened);
	 * *same says the source is exactly version e (keep_cache), where a
	 * local file may have changed since its lookup.  -ESTALE: e's name
	 * no longer holds that object.
	 */
	int (*open)(void *ns, const struct ns_entry *e, struct zsrc **out, bool *same);
	/* Directory listings: see ns_opendir and the following. */
	int (*opendir)(void *ns, const char *path, struct ns_dir **out);
	size_t (*dir_count)(const struct ns_dir *d);
	const char *(*dir_entry)(const struct ns_dir *d, size_t i, struct stat *st);
	void (*closedir)(void *ns, struct ns_dir *d);
	/* May be NULL (listings that never grow): see ns_dir_more. */
	int (*dir_more)(void *ns, struct ns_dir *d);
	ssize_t (*readlink)(void *ns, const struct ns_entry *e, char *buf, size_t len);
	int (*statfs)(void *ns, struct statvfs *sv);
	/* The reader name of e: absolute path or "s3://BUCKET/KEY" (logs, saved-index key). */
	void (*name)(void *ns, const struct ns_entry *e, char *buf, size_t len);
	/* The source= of user.zmount.info: the path relative to the root, or the URL. */
	void (*source)(void *ns, const struct ns_entry *e, char *buf, size_t len);
	bool (*still_named)(void *ns, const struct reader *r);
	/* Appends "key=value\n" lines about the namespace to out; returns the length written. */
	size_t (*stats)(void *ns, char *out, size_t len);
	/* May be NULL: the background walk that indexes archives (indexer.h). */
	int (*index_start)(void *ns, struct arctab *arcs, struct zmctx *zm, struct pool *pool,
			   unsigned jobs, struct indexer **out);
	void (*bind)(void *ns, struct arctab *arcs);
	/*
	 * May be NULL: a watcher of the decoded bytes of archive e's pass at
	 * open (struct reader_tap, reader.h), or NULL for none; it frees
	 * itself at its end call.  Any thread (the one opening e's reader).
	 */
	const struct reader_tap *(*pass_tap)(void *ns, const struct ns_entry *e);
	void (*live)(void *ns);
	void (*free)(void *ns);
	/* True if bytes cost requests: a failed request is shown as EIO, and retried later. */
	bool remote;
	/*
	 * True if a name is stripped only after its magic bytes were checked
	 * (local): a candidate that turns out no archive is then a race, and
	 * fails its lookup.  False (objects, named by suffix alone): it is
	 * shown empty, its opens failing with EIO, with one log line.
	 */
	bool probed;
};

/* Embedded first in each implementation's struct. */
struct ns {
	const struct ns_ops *ops;
};

/* Frees e's strings and zeroes them.  Accepts a cleared entry. */
void ns_entry_clear(struct ns_entry *e);

/* Copies src into *dst (its own strings).  Returns 0 or -ENOMEM (dst cleared). */
int ns_entry_copy(struct ns_entry *dst, const struct ns_entry *src);

static inline int ns_resolve(struct ns *ns, const char *path, struct ns_entry *out)
{
	return ns->ops->resolve(ns, path, out);
}

static inline bool ns_same(const struct ns *ns, const struct ns_entry *a, const struct ns_entry *b)
{
	return ns->ops->same((void *)ns, a, b);
}

static inline int ns_state(struct ns *ns, const struct ns_entry *e, struct zsrc *src,
			   struct stat *st)
{
	return ns->ops->state(ns, e, src, st);
}

static inline int ns_open(struct ns *ns, const struct ns_entry *e, struct zsrc **out, bool *same)
{
	return ns->ops->open(ns, e, out, same);
}

/* Opens directory path's listing.  Returns 0 and *out, -ENOTDIR, -ENOENT, ... */
static inline int ns_opendir(struct ns *ns, const char *path, struct ns_dir **out)
{
	return ns->ops->opendir(ns, path, out);
}

/* Entries of d ("." and ".." are not). */
static inline size_t ns_dir_count(struct ns *ns, const struct ns_dir *d)
{
	return ns->ops->dir_count(d);
}

/*
 * Entry i < ns_dir_count: its visible name (valid while d is open), and in
 * *st its type (0: unknown), inode number and device, as readdir shows them.
 */
static inline const char *ns_dir_entry(struct ns *ns, const struct ns_dir *d, size_t i,
				       struct stat *st)
{
	return ns->ops->dir_entry(d, i, st);
}

/*
 * Called when a reader has taken every entry of d: waits until d has more
 * (1: ns_dir_count grew), or is whole (0: the listing ends here), or
 * cannot be whole (-EIO: the end is not known; the namespace said why in
 * the log).  A listing still being built (a tar's root while its table is
 * scanned, doc/tar.md) streams this way and never ends short.  d is the
 * caller's alone: one thread at a time calls this, ns_dir_count and
 * ns_dir_entry on it.  May block for as long as the build takes.
 */
static inline int ns_dir_more(struct ns *ns, struct ns_dir *d)
{
	return ns->ops->dir_more ? ns->ops->dir_more(ns, d) : 0;
}

/* Ends ns_opendir.  Accepts NULL. */
static inline void ns_closedir(struct ns *ns, struct ns_dir *d)
{
	ns->ops->closedir(ns, d);
}

/* readlink of symlink e into buf (NUL-terminated): the length, or -errno (-EINVAL: none). */
static inline ssize_t ns_readlink(struct ns *ns, const struct ns_entry *e, char *buf, size_t len)
{
	return ns->ops->readlink(ns, e, buf, len);
}

static inline int ns_statfs(struct ns *ns, struct statvfs *sv)
{
	return ns->ops->statfs(ns, sv);
}

static inline void ns_name(struct ns *ns, const struct ns_entry *e, char *buf, size_t len)
{
	ns->ops->name(ns, e, buf, len);
}

static inline void ns_source(struct ns *ns, const struct ns_entry *e, char *buf, size_t len)
{
	ns->ops->source(ns, e, buf, len);
}

/*
 * The reader_opts.still_named test (reader.h) for a reader named by
 * ns_name: does its name still hold the object?  Never through the mount.
 */
static inline bool ns_still_named(struct ns *ns, const struct reader *r)
{
	return ns->ops->still_named(ns, r);
}

static inline size_t ns_stats(struct ns *ns, char *out, size_t len)
{
	return ns->ops->stats(ns, out, len);
}

/*
 * Starts the background indexing walk, if the namespace has one: 0 and
 * *out (indexer_stop), -ENOTSUP (none: archives are indexed at first
 * lookup), or -errno.  arcs, zm and pool are borrowed.  Main thread.
 */
static inline int ns_index_start(struct ns *ns, struct arctab *arcs, struct zmctx *zm,
				 struct pool *pool, unsigned jobs, struct indexer **out)
{
	*out = NULL;
	if (!ns->ops->index_start)
		return -ENOTSUP;
	return ns->ops->index_start(ns, arcs, zm, pool, jobs, out);
}

/*
 * Gives the namespace the archive table opened over it (borrowed until
 * ns_free): a local tree checks candidates' magic bytes through it.
 */
static inline void ns_bind(struct ns *ns, struct arctab *arcs)
{
	if (ns->ops->bind)
		ns->ops->bind(ns, arcs);
}

/* The watcher of e's pass at open (ns_ops.pass_tap), or NULL. */
static inline const struct reader_tap *ns_pass_tap(struct ns *ns, const struct ns_entry *e)
{
	return ns->ops->pass_tap ? ns->ops->pass_tap(ns, e) : NULL;
}

/* Mounted and daemonized: from now on errors go to the log, not to ns_open_src's message. */
static inline void ns_live(struct ns *ns)
{
	if (ns->ops->live)
		ns->ops->live(ns);
}

static inline bool ns_remote(const struct ns *ns)
{
	return ns->ops->remote;
}

/* True if candidates are checked by their magic bytes before being named (see probed). */
static inline bool ns_probed(const struct ns *ns)
{
	return ns->ops->probed;
}

/* Frees the namespace.  Accepts NULL. */
static inline void ns_free(struct ns *ns)
{
	if (ns)
		ns->ops->free(ns);
}

#endif
