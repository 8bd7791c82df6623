/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_IDXOPEN_H
#define ZMOUNT_IDXOPEN_H

/*
 * The one way from an index_dir setting to a store handle (idxstore.h):
 * the daemon (fs/main.c) and the tools (zmount-index -d) open the handle
 * here once and pass it down, borrowed, to every reader and idxfile call.
 * What the setting names is decided by srcloc_parse, the parser of every
 * "path or s3:// URL" argument, so index_dir and SRC read alike.
 *
 * Threads: any; no state.
 */

#include <stddef.h>

#include "idxstore.h"
#include "s3src.h"

/*
 * Opens the store where names: an s3://BUCKET[/PREFIX] URL (s3idx_open,
 * with conf: one request to prove the bucket answers), or else a local
 * directory path (idxlocal_store: not created or checked here; each load
 * and save checks it; the daemon's is absolute, opts.c).  Returns 0 and
 * *out (idxstore_free), or -errno with *out NULL and one line in msg
 * (msglen bytes), "index_dir WHERE: ..." as s3idx_open words it: a URL S3
 * refuses, no credentials, an unreachable endpoint, a missing bucket;
 * -EINVAL for an empty path.
 */
int idxopen(const char *where, const struct s3src_conf *conf, struct idxstore **out, char *msg,
	    size_t msglen);

#endif
