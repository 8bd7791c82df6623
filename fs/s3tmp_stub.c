/* SPDX-License-Identifier: MIT */
/*
 * TEMPORARY: a stand-in for source/s3src.c (branch s3m) until it lands on
 * main.  Deleted before the final commit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader.h"
#include "s3.h"
#include "s3cred.h"
#include "s3src.h"

int s3src_url(const char *url, char *bucket, size_t blen, char *prefix, size_t plen)
{
	const char *b, *slash;
	size_t n;

	if (strncmp(url, "s3://", 5) != 0)
		return 0;
	b = url + 5;
	slash = strchr(b, '/');
	n = slash ? (size_t)(slash - b) : strlen(b);
	if (!n || n >= blen || (slash && strlen(slash + 1) >= plen))
		return -EINVAL;
	memcpy(bucket, b, n);
	bucket[n] = '\0';
	snprintf(prefix, plen, "%s", slash ? slash + 1 : "");
	return 1;
}

int s3src_connect(const char *bucket, const struct s3src_conf *conf, struct s3 **out, char *msg,
		  size_t msglen)
{
	struct s3cred *cred;
	struct s3_opts o;
	const char *ep = conf->endpoint ? conf->endpoint : getenv("AWS_ENDPOINT_URL");
	const char *region = conf->region ? conf->region : "us-east-1";
	char def[256];
	int ret = s3cred_load(conf->credentials, conf->profile, &cred, msg, msglen);

	*out = NULL;
	if (ret < 0)
		return ret;
	if (!ep) {
		snprintf(def, sizeof(def), "https://s3.%s.amazonaws.com", region);
		ep = def;
	}
	s3_opts_default(&o);
	if (conf->retries >= 0)
		o.retries = conf->retries;
	if (conf->timeout_ms > 0)
		o.timeout_ms = conf->timeout_ms;
	o.log = conf->log;
	o.log_arg = conf->log_arg;
	ret = s3_open(ep, region, bucket, cred, &o, out);
	s3cred_free(cred);
	if (ret < 0)
		snprintf(msg, msglen, "bad endpoint %s", ep);
	return ret;
}

dev_t s3src_dev(const char *endpoint, const char *bucket)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *p = endpoint; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	for (const char *p = bucket; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return (dev_t)(h | 1);
}

void s3src_version(dev_t dev, const char *key, const struct s3_stat *os, struct stat *st)
{
	uint64_t h = 1469598103934665603ull, e = h;

	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	for (const char *p = os->etag; *p; p++)
		e = (e ^ (unsigned char)*p) * 1099511628211ull;
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFREG | 0444;
	st->st_dev = dev;
	st->st_ino = h | 1;
	st->st_size = (off_t)os->size;
	st->st_mtim.tv_sec = os->mtime;
	st->st_ctim.tv_sec = os->mtime;
	st->st_ctim.tv_nsec = (long)(e % 1000000000u);
	st->st_nlink = 1;
	st->st_blksize = 65536;
	st->st_blocks = (st->st_size + 511) / 512;
}

struct tsrc {
	struct zsrc z;
	struct s3 *s3;
	char *key;
	struct s3_stat os;
	struct stat st;
};

static ssize_t tsrc_pread(struct zsrc *z, void *buf, size_t len, uint64_t off)
{
	struct tsrc *s = (struct tsrc *)z;

	if (off >= s->os.size)
		return 0;
	return s3_get_range(s->s3, s->key, s->os.etag, off, len, buf);
}

static int tsrc_stat(struct zsrc *z, struct stat *st)
{
	*st = ((struct tsrc *)z)->st;
	return 0;
}

static void tsrc_free(struct zsrc *z)
{
	struct tsrc *s = (struct tsrc *)z;

	free(s->key);
	free(s);
}

static const struct zsrc_ops tsrc_ops = { tsrc_pread, tsrc_stat, NULL, tsrc_free };

int s3src_open(struct s3 *s3, dev_t dev, const char *key, const struct s3_stat *os,
	       struct zsrc **out)
{
	struct tsrc *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!key[0] || !os->etag[0]) {
		free(s);
		return -EINVAL;
	}
	if (!s || !(s->key = strdup(key))) {
		free(s);
		return -ENOMEM;
	}
	zsrc_init(&s->z, &tsrc_ops);
	s->s3 = s3;
	s->os = *os;
	s3src_version(dev, key, os, &s->st);
	*out = &s->z;
	return 0;
}

void s3src_get_counters(struct s3src_counters *out)
{
	memset(out, 0, sizeof(*out));
}
