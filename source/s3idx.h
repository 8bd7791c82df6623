/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_S3IDX_H
#define ZMOUNT_S3IDX_H

/*
 * A shared index store in an S3 prefix (index_dir=s3://BUCKET/PREFIX): the
 * idxstore.h operations over the S3 client, behind a store handle that
 * idxfile.c is given.  Blob "<h>.zmi" is the object PREFIX/<h>.zmi.
 *  - get: a HEAD, then, if the object is within the cap, GETs of it with
 *    "If-Match: <the HEAD's ETag>" into one buffer of the blob's size (one
 *    version, never a mix of two; the memory rule is idxstore.h's), which
 *    idxfile.c then checks as it checks a local file;
 *  - put: one PUT (S3 replaces an object atomically);
 *  - del: one DELETE;
 *  - list: ListObjectsV2 of the prefix (s3_list, paginated), names without
 *    the prefix, for idxfile_prune_store;
 *  - peek: one ranged GET of a blob's first bytes, with "If-Match:" the
 *    listing's ETag, for the same.
 * What a shared index is trusted for is idxfile.c's business (header,
 * caps, CRC-64, identity); this file only moves bytes.  Its client's
 * lines go to conf's log: a missing index (404) is the usual answer, so
 * the caller logs them at debug level and what matters once itself.
 *
 * Threads: the store may be used from any thread (s3.h).
 */

#include <stddef.h>
#include <stdint.h>

#include "s3src.h"

struct idxstore;

/*
 * Opens a client for url's bucket with conf (borrowed; its endpoint,
 * region, credentials, profile, retries and timeout are the mount's, its
 * log gets the client's lines, see above), lists PREFIX once to prove the
 * bucket answers, and makes the store's handle, named url (idxstore_free
 * closes the client).  Returns 0 and *out, or -errno and *out NULL with
 * one line in msg (msglen bytes): not an s3:// URL, no credentials, an
 * unreachable endpoint, a missing bucket, refused keys.
 */
int s3idx_open(const char *url, const struct s3src_conf *conf, struct idxstore **out, char *msg,
	       size_t msglen);

/*
 * The size of blob name of store, one of s3idx_open's (one HEAD): 0 and
 * *size, or -errno (-ENOENT: no such blob, s3.h; -EINVAL: not an S3 store).
 */
int s3idx_size(const struct idxstore *store, const char *name, uint64_t *size);

#endif
