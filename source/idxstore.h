/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_IDXSTORE_H
#define ZMOUNT_IDXSTORE_H

/*
 * Where saved index files live: a store of named blobs ("<16 hex>.zmi",
 * "<16 hex>.zmc"; idxfile.h names them) that can get one, put one
 * atomically (a reader sees the old blob or the new one, never a torn one)
 * and delete one.  idxfile.c does all the format work (header, size caps,
 * CRC-64, identity) on what a store returns; a store only moves bytes.
 *
 * Two implementations:
 *  - a local directory (the index_dir path; index/idxlocal.c, with the
 *    ownership, O_NOFOLLOW and temp+rename rules of idxfile.h);
 *  - an S3 prefix ("s3://BUCKET/PREFIX"; s3idx.c).
 * A third (another object store, plain HTTP) is one more file beside
 * s3idx.c that fills these ops and makes a handle with idxstore_new.
 *
 * A store is reached through a handle (struct idxstore): whoever reads the
 * index_dir setting (the daemon's main.c, the tools) opens ONE handle from
 * "a path or an s3:// URL" (idxopen.h) and passes it down, borrowed, to
 * every idxfile call and reader; there is no table to look a store up in.
 *
 * This header is in source/, the ground floor, so that a store beside the
 * sources (s3idx.c) and idxfile.c above it both see it: it includes
 * nothing above source/.
 *
 * Threads: a handle is immutable once made; its ops may be called from any
 * thread at once (each implementation says so).  It must outlive every
 * reader and idxfile call given it: free it after they are closed.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct idxstore;

struct idxstore_ops {
	/*
	 * Reads blob name, if it is at most cap bytes, into a new buffer:
	 * returns 0 with *buf (malloc'd; the caller frees it) and *len, or
	 * -ENOENT (none), -EFBIG (larger than cap; nothing of it was read),
	 * -EPERM (the store is not trusted), -ESTALE (it changed while read:
	 * never a mix of two versions), or another -errno (-EIO, -EACCES,
	 * -ETIMEDOUT, -ENOMEM, ...).  The caller words the reason (the
	 * store's name, the blob's and the errno's text): a store logs nothing.
	 * -EBADMSG: a blob that can never be an index (a symlink, not a
	 * regular file).  On error *buf is NULL.
	 *
	 * Memory: the buffer is the whole blob, held by the calling thread
	 * for one load or one prune check and freed before idxfile returns.
	 * It counts against no cache (not cache_size): it is bounded by cap,
	 * which idxfile passes as the largest index the source's size allows
	 * (fmt.h's saved max), and a mount loads one per archive it opens.
	 */
	int (*get)(void *ctx, const char *name, uint64_t cap, unsigned char **buf, size_t *len);
	/* Stores len bytes of buf (borrowed) as name, replacing any blob of that name
	 * atomically.  0 or -errno. */
	int (*put)(void *ctx, const char *name, const void *buf, size_t len);
	/* Deletes name.  0, -ENOENT or -errno. */
	int (*del)(void *ctx, const char *name);
	/*
	 * For idxfile_prune_store; NULL in a store that cannot be listed.
	 * list calls cb(arg, name, size, tag) for every blob of the store
	 * (name may hold a '/' for a blob deeper down: not an index's; tag
	 * names the blob's version, such as an ETag, or is NULL; all valid
	 * during the call only), and stops at a non-zero return of cb, which
	 * it returns; else 0 or -errno.  peek reads the first len bytes of
	 * blob name (len >= 1) into buf: the count (fewer only if the blob is
	 * shorter), or -errno: -ESTALE if tag is not NULL and the blob is not
	 * that version any more.
	 */
	int (*list)(void *ctx,
		    int (*cb)(void *arg, const char *name, uint64_t size, const char *tag),
		    void *arg);
	ssize_t (*peek)(void *ctx, const char *name, const char *tag, void *buf, size_t len);
};

/*
 * A handle over ops and ctx (both borrowed, ctx until idxstore_free),
 * named name (copied; the path or URL for messages and for idxfile_path,
 * without a trailing '/').  close, if not NULL, is called with ctx by
 * idxstore_free.  Returns 0 and *out, or -EINVAL (ops or name NULL or
 * empty) or -ENOMEM (*out NULL; close is not called).
 */
int idxstore_new(const char *name, const struct idxstore_ops *ops, void *ctx,
		 void (*close)(void *ctx), struct idxstore **out);

/* Closes the store (its close) and frees the handle.  Accepts NULL. */
void idxstore_free(struct idxstore *st);

/* The store's name, as given to idxstore_new: valid while st is. */
const char *idxstore_name(const struct idxstore *st);

/* Its ops and ctx, for idxfile.c and the stores' own extras (s3idx_size). */
const struct idxstore_ops *idxstore_ops_of(const struct idxstore *st);
void *idxstore_ctx(const struct idxstore *st);

#endif
