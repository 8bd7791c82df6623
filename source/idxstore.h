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
 *  - a local directory (the index_dir path; idxlocal.c, with the
 *    ownership, O_NOFOLLOW and temp+rename rules of idxfile.h);
 *  - an S3 prefix ("s3://BUCKET/PREFIX"; s3idx.c), registered here by
 *    whoever owns the S3 client, so that index/ never sees libcurl.
 *
 * This header is in source/, the ground floor, so that a store beside the
 * sources (s3idx.c) and idxfile.c above it both see it: it names nothing
 * above source/.
 *
 * idxfile's functions take the index directory as a string: one that
 * holds "://" is looked up in this table of registered stores; an
 * unregistered URL gives -ENOENT (no saved index, none saved).
 *
 * Threads: the table is protected by a mutex; register and unregister may
 * run while other threads look up, but a store must stay valid until
 * idxstore_unregister returns and no idxfile call that found it runs (the
 * mount unregisters after its readers are closed).
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
 * Registers ops with ctx (both borrowed until idxstore_unregister) as the
 * store of url ("s3://BUCKET/PREFIX", no trailing '/'), replacing any
 * earlier one.  Returns 0, -EINVAL (url without "://" or too long) or
 * -ENOMEM.
 */
int idxstore_register(const char *url, const struct idxstore_ops *ops, void *ctx);

/* Forgets url's store (nothing if none). */
void idxstore_unregister(const char *url);

/*
 * The store of url: 0 with *ops and *ctx, or -ENOENT.  Called by idxfile.c
 * for every load and save of an index whose directory is a URL.
 */
int idxstore_find(const char *url, const struct idxstore_ops **ops, void **ctx);

#endif
