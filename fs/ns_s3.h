/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_NS_S3_H
#define ZMOUNT_NS_S3_H

/*
 * A bucket prefix as a namespace (ns.h): names by a snapshot of the whole
 * prefix (s3tree.h), bytes by object sources (s3src.h) whose GETs carry
 * If-Match, so a read of a gone version fails, never giving the new one's
 * bytes.  Entries' ids are keys (NULL for directories), their tags ETags;
 * a version is its key and ETag, compared exactly.  Readers are named
 * "s3://BUCKET/KEY".  Stripped names are decided by suffix alone
 * (ns_probed false): an object that is no archive is shown empty.
 *
 * Listing: one snapshot, kept for the mount's timeout (at least 1 s), then
 * listed again at the next resolve or opendir; while one request lists,
 * the others use the old snapshot.  A failed listing keeps the old
 * snapshot (one log line) and is retried a timeout later.
 *
 * Memory: the snapshot (S3TREE_BYTES_PER_OBJECT and per directory,
 * s3tree.h) and, per open object, its source (S3SRC_BYTES_PER_SOURCE).
 */

#include <stddef.h>

#include "s3src.h"

struct ns;
struct opts;

/* The client's settings from the mount's options (opts.h), without a secret. */
void ns_s3_conf(struct s3src_conf *sc, const struct opts *o);

/*
 * Connects and lists s3://bucket/prefix once (the first snapshot), before
 * anything is mounted.  timeout is the mount's (the listing's life, at
 * least 1 s).  Returns 0 and *out, or -errno with *out NULL and one line
 * in msg (msglen bytes) saying what failed: no credentials, a bad
 * endpoint, an endpoint that cannot be reached, keys the server refuses, a
 * missing bucket.  Nothing it says or logs holds a secret.  Until ns_live,
 * the client's error lines are kept for that message, not logged.
 */
int ns_s3_new(const char *bucket, const char *prefix, const struct s3src_conf *conf, double timeout,
	      struct ns **out, char *msg, size_t msglen);

#endif
