/* SPDX-License-Identifier: MIT */
/*
 * The shared index store in an S3 prefix (s3idx.h).
 */
#include "s3idx.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "idxstore.h"
#include "s3.h"
#include "srcloc.h"

#define S3IDX_PIECE (4u << 20) /* bytes one GET brings: a bound on one response */

struct s3idx {
	struct s3 *s3;
	char prefix[1026]; /* "" or "PREFIX/" */
};

/* The object key of blob name; 0 or -ENAMETOOLONG. */
static int key_of(const struct s3idx *x, const char *name, char *key, size_t len)
{
	int n = snprintf(key, len, "%s%s", x->prefix, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Reads the version etag names of key (size bytes) into p, a piece per GET. */
static int fetch(struct s3idx *x, const char *key, const char *etag, uint64_t size,
		 unsigned char *p)
{
	uint64_t off = 0;

	while (off < size) {
		size_t want = size - off < S3IDX_PIECE ? (size_t)(size - off) : S3IDX_PIECE;
		ssize_t got = s3_get_range(x->s3, key, etag, off, want, p + off);

		if (got != (ssize_t)want)
			return got < 0 ? (int)got : -EIO; /* shorter than its HEAD said */
		off += want;
	}
	return 0;
}

static int s3idx_get(void *ctx, const char *name, uint64_t cap, unsigned char **buf, size_t *len)
{
	struct s3idx *x = ctx;
	struct s3_stat st;
	char key[2048];
	int ret = key_of(x, name, key, sizeof(key));

	*buf = NULL;
	if (ret == 0)
		ret = s3_head(x->s3, key, &st);
	if (ret < 0)
		return ret;
	if (st.size > cap || st.size > SIZE_MAX)
		return -EFBIG;
	*buf = malloc(st.size ? (size_t)st.size : 1);
	if (!*buf)
		return -ENOMEM;
	/* If-Match: a PUT between the HEAD and a GET gives -ESTALE, never a mix */
	ret = fetch(x, key, st.etag[0] ? st.etag : NULL, st.size, *buf);
	if (ret < 0) {
		free(*buf);
		*buf = NULL;
		return ret;
	}
	*len = (size_t)st.size;
	return 0;
}

static int s3idx_put(void *ctx, const char *name, const void *buf, size_t len)
{
	struct s3idx *x = ctx;
	char key[2048];
	int ret = key_of(x, name, key, sizeof(key));

	return ret < 0 ? ret : s3_put(x->s3, key, buf, len, NULL);
}

static int s3idx_del(void *ctx, const char *name)
{
	struct s3idx *x = ctx;
	char key[2048];
	int ret = key_of(x, name, key, sizeof(key));

	return ret < 0 ? ret : s3_delete(x->s3, key);
}

/* A listing's callback: the store's, and the prefix to strip. */
struct listing {
	int (*cb)(void *arg, const char *name, uint64_t size, const char *tag);
	void *arg;
	size_t skip;
};

static int list_one(void *arg, const struct s3_obj *o)
{
	struct listing *l = arg;

	return l->cb(l->arg, o->key + l->skip, o->st.size, o->st.etag[0] ? o->st.etag : NULL);
}

static int s3idx_list(void *ctx,
		      int (*cb)(void *arg, const char *name, uint64_t size, const char *tag),
		      void *arg)
{
	struct s3idx *x = ctx;
	struct listing l = { cb, arg, strlen(x->prefix) };

	return s3_list(x->s3, x->prefix, list_one, &l);
}

static ssize_t s3idx_peek(void *ctx, const char *name, const char *tag, void *buf, size_t len)
{
	struct s3idx *x = ctx;
	char key[2048];
	int ret = key_of(x, name, key, sizeof(key));

	return ret < 0 ? ret : s3_get_range(x->s3, key, tag, 0, len, buf);
}

static const struct idxstore_ops s3idx_ops = {
	.get = s3idx_get,
	.put = s3idx_put,
	.del = s3idx_del,
	.list = s3idx_list,
	.peek = s3idx_peek,
};

int s3idx_size(const struct idxstore *store, const char *name, uint64_t *size)
{
	struct s3idx *x = idxstore_ctx(store);
	struct s3_stat st;
	char key[2048];
	int ret =
		idxstore_ops_of(store) == &s3idx_ops ? key_of(x, name, key, sizeof(key)) : -EINVAL;

	if (ret == 0)
		ret = s3_head(x->s3, key, &st);
	if (ret == 0)
		*size = st.size;
	return ret;
}

static int stop_at_first(void *arg, const struct s3_obj *o)
{
	(void)arg;
	(void)o;
	return 1;
}

static void s3idx_close(void *ctx)
{
	struct s3idx *x = ctx;

	s3_close(x->s3);
	free(x);
}

/* Connects x to loc's bucket and lists PREFIX once; 0 or -errno with msg. */
static int s3idx_connect(struct s3idx *x, const char *url, const struct srcloc *loc,
			 const struct s3src_conf *conf, char *msg, size_t msglen)
{
	size_t n = strlen(loc->key);
	int ret;

	snprintf(x->prefix, sizeof(x->prefix), "%s%s", loc->key,
		 n && loc->key[n - 1] != '/' ? "/" : "");
	ret = s3src_connect(loc->bucket, conf, &x->s3, msg, msglen);
	if (ret < 0)
		return ret;
	ret = s3_list(x->s3, x->prefix, stop_at_first, NULL);
	ret = ret == 1 ? 0 : ret;
	if (ret < 0) {
		snprintf(msg, msglen, "index_dir %s: %s", url,
			 ret == -ENOENT	  ? "no such bucket"
			 : ret == -EACCES ? "access denied"
					  : strerror(-ret));
		s3_close(x->s3);
	}
	return ret;
}

int s3idx_open(const char *url, const struct s3src_conf *conf, struct idxstore **out, char *msg,
	       size_t msglen)
{
	struct s3idx *x = calloc(1, sizeof(*x));
	struct srcloc loc;
	char why[256];
	int ret;

	*out = NULL;
	if (!x) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	/* a local path gets "not an s3:// URL", whatever stat says of it */
	ret = srcloc_parse(url, SRCLOC_TREE, &loc, why, sizeof(why));
	if (ret < 0 || !loc.s3) {
		snprintf(msg, msglen, "index_dir %s: %s", url, loc.s3 ? why : "not an s3:// URL");
		free(x);
		return -EINVAL;
	}
	ret = s3idx_connect(x, url, &loc, conf, msg, msglen);
	if (ret < 0) {
		free(x);
		return ret;
	}
	ret = idxstore_new(url, &s3idx_ops, x, s3idx_close, out);
	if (ret < 0) {
		snprintf(msg, msglen, "index_dir %s: %s", url, strerror(-ret));
		s3idx_close(x);
	}
	return ret;
}
