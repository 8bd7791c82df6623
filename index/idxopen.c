/* SPDX-License-Identifier: MIT */
/*
 * index_dir to a store handle (idxopen.h): a URL to source/'s S3 store, a
 * path to the local one.  Here, in index/, because only index/ sees both.
 */
#include "idxopen.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "idxlocal.h"
#include "s3idx.h"
#include "srcloc.h"

int idxopen(const char *where, const struct s3src_conf *conf, struct idxstore **out, char *msg,
	    size_t msglen)
{
	struct srcloc loc;
	char why[256];
	int ret;

	*out = NULL;
	/* SRCLOC_TREE: only whether it is a URL matters; a local dir may not exist yet */
	srcloc_parse(where, SRCLOC_TREE, &loc, why, sizeof(why));
	if (loc.s3)
		return s3idx_open(where, conf, out, msg, msglen);
	ret = idxlocal_store(where, out);
	if (ret < 0)
		snprintf(msg, msglen, "index_dir %s: %s", where, strerror(-ret));
	return ret;
}
