/* SPDX-License-Identifier: MIT */
#include "srcloc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "s3src.h"

void srcloc_why(int err, char *why, size_t n)
{
	snprintf(why, n, "cannot open: %s", strerror(-err));
}

int srcloc_parse(const char *src, enum srcloc_want want, struct srcloc *l, char *why, size_t n)
{
	struct stat st;
	int ret = s3src_url(src, l->bucket, sizeof(l->bucket), l->key, sizeof(l->key));

	l->s3 = ret != 0; /* set for a refused URL too, for the caller's own words */
	if (ret < 0) {
		snprintf(why, n,
			 "not an s3://BUCKET[/KEY] URL S3 accepts (bucket: 3-63 of a-z 0-9 . -)");
		return -EINVAL;
	}
	if (ret == 1) {
		if (want == SRCLOC_OBJECT && !l->key[0]) {
			snprintf(why, n, "names a bucket, not an object (s3://BUCKET/KEY)");
			return -EINVAL;
		}
		return 0;
	}
	if (stat(src, &st) < 0) {
		ret = -errno;
		srcloc_why(ret, why, n);
		return ret;
	}
	if (want == SRCLOC_TREE && !S_ISDIR(st.st_mode)) {
		snprintf(why, n, "not a directory");
		return -ENOTDIR;
	}
	return 0;
}
