/* SPDX-License-Identifier: MIT */
#include "toolsrc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "s3.h"
#include "s3hint.h"
#include "s3src.h"
#include "srcloc.h"
#include "zmctx.h"

#define MAX_CLIENTS 8

static struct s3src_conf conf = { .retries = -1 };
static const char *tool_name = "zmount";
static char *captured; /* where the client's report goes instead of stderr, or NULL */
static size_t captured_n;

static struct client {
	char bucket[64];
	struct s3 *s3;
	dev_t dev;
} clients[MAX_CLIENTS];
static int nclients;

/* The client's one-line reports: kept while toolsrc_open says it itself. */
static void client_log(void *arg, const char *line)
{
	(void)arg;
	if (captured)
		snprintf(captured, captured_n, "%s", line);
	else
		fprintf(stderr, "%s: %s\n", tool_name, line);
}

const struct s3src_conf *toolsrc_conf(void)
{
	return &conf;
}

int toolsrc_flags(const char *tool, int *argc, char **argv)
{
	static const char *const names[] = { "--endpoint", "--region", "--credentials",
					     "--profile" };
	const char **dst[] = { &conf.endpoint, &conf.region, &conf.credentials, &conf.profile };
	int out = 1;

	tool_name = tool;
	conf.log = client_log;
	for (int i = 1; i < *argc; i++) {
		bool taken = false;

		if (strcmp(argv[i], "--") == 0) {
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		for (int f = 0; f < 4 && !taken; f++) {
			size_t len = strlen(names[f]);

			if (strncmp(argv[i], names[f], len))
				continue;
			if (argv[i][len] == '=') {
				*dst[f] = argv[i] + len + 1;
				taken = true;
			} else if (argv[i][len] == '\0') {
				if (i + 1 == *argc) {
					fprintf(stderr, "%s: option %s needs a value\n", tool,
						names[f]);
					return -1;
				}
				*dst[f] = argv[++i];
				taken = true;
			}
		}
		if (!taken)
			argv[out++] = argv[i];
	}
	*argc = out;
	argv[out] = NULL;
	return 0;
}

int toolsrc_is_url(const char *path)
{
	return strncmp(path, "s3://", 5) == 0;
}

/* The client of bucket: one kept, or a new one.  Returns 0 or -errno (msg says why). */
static int client_for(const char *bucket, struct client **out, char *msg, size_t n)
{
	char ep[512];
	struct client *c;
	int rc;

	for (int i = 0; i < nclients; i++)
		if (strcmp(clients[i].bucket, bucket) == 0) {
			*out = &clients[i];
			return 0;
		}
	if (nclients == MAX_CLIENTS) {
		snprintf(msg, n, "more than %d buckets", MAX_CLIENTS);
		return -EMFILE;
	}
	c = &clients[nclients];
	rc = s3src_connect(bucket, &conf, &c->s3, msg, n);
	if (rc)
		return rc;
	s3src_endpoint(&conf, ep, sizeof(ep));
	c->dev = s3src_dev(ep, bucket);
	snprintf(c->bucket, sizeof(c->bucket), "%s", bucket);
	nclients++;
	*out = c;
	return 0;
}

/* url as s3://BUCKET/KEY (srcloc.h): 0 and *loc, or -EINVAL with msg (a local path is not one). */
static int object_url(const char *url, struct srcloc *loc, char *msg, size_t n)
{
	int rc = srcloc_parse(url, SRCLOC_OBJECT, loc, msg, n);

	if (rc == 0 && !loc->s3) {
		snprintf(msg, n, "not an s3:// URL");
		rc = -EINVAL;
	}
	return rc;
}

/*
 * Opens url's object at version st (NULL: one HEAD asks the server for it).
 * 0 and *out, or -errno with msg.
 */
static int open_object(const char *url, const struct s3_stat *st, struct zsrc **out, char *msg,
		       size_t n)
{
	struct srcloc loc;
	struct s3_stat head;
	struct client *c;
	int rc = object_url(url, &loc, msg, n);

	*out = NULL;
	if (rc == 0)
		rc = client_for(loc.bucket, &c, msg, n);
	if (rc)
		return rc;
	if (!st) {
		msg[0] = '\0';
		captured = msg;
		captured_n = n;
		rc = s3_head(c->s3, loc.key, &head);
		captured = NULL;
		if (rc) {
			if (!msg[0])
				snprintf(msg, n, "%s", strerror(-rc));
			return rc;
		}
		st = &head;
	}
	rc = s3src_open(c->s3, c->dev, loc.key, st, out);
	if (rc)
		snprintf(msg, n, "%s", rc == -EINVAL ? "the server gave no ETag" : strerror(-rc));
	return rc;
}

int toolsrc_open(const char *url, struct zsrc **out, char *msg, size_t n)
{
	return open_object(url, NULL, out, msg, n);
}

int toolsrc_open_listed(const char *url, const struct s3_stat *st, struct zsrc **out, char *msg,
			size_t n)
{
	return open_object(url, st, out, msg, n);
}

struct each {
	const char *bucket;
	int (*cb)(void *arg, const char *url, const struct s3_stat *st);
	void *arg;
	size_t objects;
	char *url; /* s3://BUCKET/ then the key */
	size_t ulen;
};

static int each_object(void *arg, const struct s3_obj *o)
{
	struct each *e = arg;
	size_t k = strlen(o->key);

	if (k == 0 || o->key[k - 1] == '/')
		return 0; /* a folder marker: no bytes to index */
	e->objects++;
	if (e->ulen + k + 1 > 1100)
		return 0; /* longer than any S3 key (1024 bytes) */
	memcpy(e->url + e->ulen, o->key, k + 1);
	return e->cb(e->arg, e->url, &o->st);
}

int toolsrc_list(const char *url, int (*cb)(void *arg, const char *url, const struct s3_stat *st),
		 void *arg, char *msg, size_t n)
{
	struct srcloc loc;
	char prefix[sizeof(loc.key) + 1], full[1100];
	struct each e = { .bucket = loc.bucket, .cb = cb, .arg = arg, .url = full };
	struct client *c;
	size_t plen;
	int rc = srcloc_parse(url, SRCLOC_TREE, &loc, msg, n);

	if (rc == 0 && !loc.s3) {
		snprintf(msg, n, "not an s3:// URL");
		rc = -EINVAL;
	}
	if (rc)
		return rc;
	msg[0] = '\0';
	strcpy(prefix, loc.key);
	plen = strlen(prefix);
	if (plen && prefix[plen - 1] != '/')
		memcpy(prefix + plen, "/", 2); /* a prefix is a directory, as a mount sees it */
	rc = client_for(loc.bucket, &c, msg, n);
	if (rc)
		return rc;
	e.ulen = (size_t)snprintf(full, sizeof(full), "s3://%s/", loc.bucket);
	captured = msg;
	captured_n = n;
	rc = s3_list(c->s3, prefix, each_object, &e);
	captured = NULL;
	if (rc < 0) {
		if (!msg[0])
			snprintf(msg, n, "%s", strerror(-rc));
		return rc;
	}
	if (rc == 0 && e.objects == 0) {
		s3hint_empty(c->s3, loc.bucket, prefix, msg, n);
		return -ENOENT;
	}
	return rc;
}

int toolsrc_reader(const char *path, struct zmctx *ctx, const struct reader_opts *opts,
		   struct reader **out, struct zerr *why)
{
	struct zerr mine;
	struct zsrc *src;
	char msg[sizeof(mine.msg)];
	struct srcloc loc;
	int rc;

	*out = NULL;
	/* A bad path or URL in srcloc.h's words, the daemon's for the same SRC. */
	rc = srcloc_parse(path, SRCLOC_OBJECT, &loc, msg, sizeof(msg));
	if (rc == 0 && !loc.s3)
		return reader_open(path, ctx, opts, out, why);
	if (rc == 0)
		rc = toolsrc_open(path, &src, msg, sizeof(msg));
	if (rc == 0)
		return reader_open_src(src, path, ctx, opts, out, why);
	zerr_set(why ? why : &mine, rc, 0, "%s", msg);
	zmctx_log(ctx, ZLOG_ERROR, path, why ? why : &mine, "%s", msg);
	return rc;
}

void toolsrc_end(void)
{
	for (int i = 0; i < nclients; i++)
		s3_close(clients[i].s3);
	nclients = 0;
}
