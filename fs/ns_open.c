/* SPDX-License-Identifier: MIT */
#include "ns_open.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ns.h"
#include "ns_local.h"
#include "ns_s3.h"
#include "opts.h"

int ns_open_src(const char *src, const struct opts *o, struct ns **out, char *msg, size_t msglen)
{
	char bucket[64], prefix[1024];
	struct s3src_conf sc;
	int ret = s3src_url(src, bucket, sizeof(bucket), prefix, sizeof(prefix));

	*out = NULL;
	if (ret < 0) {
		snprintf(msg, msglen, "%s: not an s3://BUCKET[/PREFIX] URL S3 accepts", src);
		return ret;
	}
	if (ret == 1) {
		ns_s3_conf(&sc, o);
		return ns_s3_new(bucket, prefix, &sc, o->timeout, out, msg, msglen);
	}
	ret = ns_local_new(src, o->timeout, out);
	if (ret < 0)
		snprintf(msg, msglen, "%s: %s", src, strerror(-ret));
	return ret;
}
