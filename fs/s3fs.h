/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_S3FS_H
#define ZMOUNT_S3FS_H

/*
 * The FUSE operations of an s3:// mount: a bucket prefix shown as a tree
 * (s3tree.h), each archive object decompressed through a reader on an
 * object source (s3src.h), every other object's bytes as they are.
 *
 * Listing: one snapshot of the whole prefix, kept for the mount's timeout
 * (at least 1 s), then listed again at the next lookup or opendir; while
 * one request lists, the others use the old snapshot.  A failed listing
 * keeps the old snapshot (one log line) and is retried a timeout later.
 *
 * Nodes (FUSE node ids) name versions: a directory by its path, an object
 * by its path, key and ETag.  An object overwritten in the bucket gets a
 * new node (and st_ino, s3tree.h) at its next lookup, so new opens read
 * the new version, while handles on the old node keep their reader and
 * source, whose GETs carry If-Match: its old ETag, so their reads that
 * miss the caches fail with EIO, never returning bytes of the new version.
 *
 * Archives: an object whose name was stripped is opened as an archive at
 * its first lookup (its size needs the index): one reader per node, that
 * is per object version, named "s3://BUCKET/KEY" in log lines and saved
 * indexes.  A corrupt object, or one whose magic bytes are no archive
 * format's, shows size 0 and its opens fail with EIO, with one log line
 * naming s3://BUCKET/KEY (and, when corrupt, the offset).  Pages of a
 * streamed unit that fails its check late are dropped from the kernel's
 * cache (s3fs_tainted), as on local mounts.  A request that
 * fails (timeout, unreachable) is not remembered: the next lookup tries again.
 *
 * Memory: the snapshot (S3TREE_BYTES_PER_OBJECT and per directory, s3tree.h),
 * a node per name the kernel holds (S3FS_BYTES_PER_NODE plus its path and
 * key), each archive's reader (its block map), each open plain object's
 * source (S3SRC_BYTES_PER_SOURCE at most) and the shared cache.
 *
 * Threads: any FUSE worker may run any operation at once.
 */

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <stddef.h>

#include "s3src.h"

struct reader;
struct reader_opts;
struct s3fs;
struct zmctx;

/* Bytes per node besides its path and key (an upper bound; s3fs.c asserts it). */
#define S3FS_BYTES_PER_NODE 256

struct s3fs_conf {
	const char *bucket;
	const char *prefix;    /* "" for the whole bucket */
	struct s3src_conf src; /* log and log_arg are set by s3fs_new */
	double timeout;	       /* the kernel's cache time and the listing's life (>= 1 s) */
	struct zmctx *zm;      /* borrowed: the readers' context */
	const struct reader_opts *ropts; /* borrowed, for the life of the mount */
};

/*
 * Connects and lists the prefix once (the first snapshot), before anything
 * is mounted.  Returns 0 and *out, or -errno with *out NULL and one line in
 * msg (msglen bytes) saying what failed: no credentials, a bad endpoint,
 * an endpoint that cannot be reached, keys the server refuses, a missing
 * bucket.  Nothing it says or logs holds a secret.
 */
int s3fs_new(const struct s3fs_conf *conf, struct s3fs **out, char *msg, size_t msglen);

/*
 * Once mounted (and daemonized): from now on the client's error lines go
 * to the log (zlog) instead of being kept for s3fs_new's message, and a
 * thread drops, through se, the kernel's pages of archives s3fs_tainted
 * was told about.
 */
void s3fs_live(struct s3fs *fs, struct fuse_session *se);

/*
 * The reader_opts.tainted hook (ctx: the struct s3fs): a streamed unit of
 * r failed its check after pages of it were served; queues r and returns
 * at once.  Any thread.
 */
void s3fs_tainted(void *ctx, const struct reader *r);

/* When the loop ends: stops that thread, frees the handles and directories still open. */
void s3fs_stop(struct s3fs *fs);

/* Frees everything: nodes, readers, the snapshot and the client.  Accepts NULL. */
void s3fs_free(struct s3fs *fs);

/* The operations; fuse_session_new's user data is the struct s3fs. */
extern const struct fuse_lowlevel_ops s3fs_ops;

#endif
