/* SPDX-License-Identifier: MIT */
#include "ns_open.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ns.h"
#include "ns_local.h"
#include "ns_s3.h"
#include "opts.h"
#include "srcloc.h"

int ns_open_src(const char *src, const struct opts *o, struct ns **out, char *msg, size_t msglen)
{
	struct srcloc loc;
	struct s3src_conf sc;
	char why[256];
	int ret = srcloc_parse(src, SRCLOC_TREE, &loc, why, sizeof(why));

	*out = NULL;
	if (ret == 0 && loc.s3) {
		ns_s3_conf(&sc, o);
		return ns_s3_new(loc.bucket, loc.key, &sc, o->timeout, out, msg, msglen);
	}
	if (ret == 0 && (ret = ns_local_new(src, o->timeout, out)) < 0)
		srcloc_why(ret, why, sizeof(why));
	if (ret < 0)
		snprintf(msg, msglen, "%s: %s", src, why);
	return ret;
}
