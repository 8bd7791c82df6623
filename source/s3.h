/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_S3_H
#define ZMOUNT_S3_H

/*
 * A small S3 client: list a prefix, HEAD an object, GET a byte range of
 * it, PUT or DELETE one (for tests and shared indexes).  Requests are path-style
 * (ENDPOINT/BUCKET/KEY) and signed by libcurl's SigV4 (CURLOPT_AWS_SIGV4),
 * with "x-amz-content-sha256: UNSIGNED-PAYLOAD".  This file and s3.c are
 * the only ones that know libcurl.
 *
 * Connections: a struct s3 keeps a pool of curl easy handles.  A call takes
 * one (or makes one when all are busy), and gives it back when done, so its
 * connection is reused by the next call on any thread.  Any thread may call
 * every function at the same time, except that s3_close must be the last.
 *
 * Faults: an attempt that ends in a connection error, a timeout, a reset,
 * an incomplete body, HTTP 5xx or 429 is retried, up to opts.retries more
 * times, after a capped exponential backoff with full jitter (50 ms doubling
 * up to 2 s).  When the last attempt fails, one line naming the request and
 * the key (never a secret) goes to opts.log; when no answer came at all
 * (no such host, refused, timed out, TLS failed) it says "cannot reach
 * ENDPOINT: " and curl's reason.  The call returns:
 *   -ENOENT     404 (no such key or bucket);
 *   -EACCES     403 (bad keys, signature or permission);
 *   -ESTALE     412: the object no longer has the ETag the caller gave;
 *   -ETIMEDOUT  the last attempt timed out (opts.timeout_ms);
 *   -ECONNREFUSED / -EHOSTUNREACH  the endpoint cannot be reached;
 *   -EIO        anything else (5xx, 429, resets, a malformed answer);
 *   -ENOMEM.
 * 404, 403 and 412 are never retried.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct s3;
struct s3cred;

struct s3_opts {
	int retries;		 /* extra attempts after the first; 0 = none; default 4 */
	int timeout_ms;		 /* the limit of one attempt, connecting included; default 30000 */
	bool verify_tls;	 /* verify the server's certificate and name (https) */
	unsigned list_pages_max; /* pages one listing may take; 0: S3_LIST_PAGES_MAX */
	/* Where the one-line error reports go (line has no newline); NULL: stderr. */
	void (*log)(void *arg, const char *line);
	void *log_arg;
};

/*
 * The most ListObjectsV2 pages one listing follows: 10 million keys at the
 * 1000 a page S3 and RGW send.  It only stops a server that never ends a
 * listing; mounting that many objects would take several GiB of snapshot
 * (s3tree.h) anyway.
 */
#define S3_LIST_PAGES_MAX 10000u

/* The defaults: retries 4, timeout_ms 30000, verify_tls true, list_pages_max S3_LIST_PAGES_MAX,
 * log NULL. */
void s3_opts_default(struct s3_opts *o);

/* The library s3_open loads (dlopen) at its first call, rather than every program linking it. */
#define S3_LIBCURL "libcurl.so.4"

/*
 * Opens a client for bucket at endpoint ("http://127.0.0.1:7480" or
 * "https://s3.eu-west-1.amazonaws.com"; no trailing path) in region
 * ("us-east-1" for RGW).  cred and opts are copied (cred may be freed
 * after).  Makes no request.  Returns 0 and *out, or with *out NULL:
 * -EINVAL  an empty argument, an endpoint not http:// or https://, or
 *          a name with a control byte; -ELIBACC  S3_LIBCURL could not be
 *          loaded (the first call loads it, and says so for good); -ENOMEM.
 */
int s3_open(const char *endpoint, const char *region, const char *bucket, const struct s3cred *cred,
	    const struct s3_opts *opts, struct s3 **out);

/* Closes connections and frees s (secrets are wiped first).  Accepts NULL.  No call may be running.
 */
void s3_close(struct s3 *s);

/* What LIST and HEAD say about an object. */
struct s3_stat {
	uint64_t size;
	char etag[80]; /* as the server quotes it, e.g. "\"9b2c...\""; "" if none */
	time_t mtime;  /* Last-Modified, seconds since the epoch (UTC) */
};

/* One object of a listing; key and st are valid during the callback only. */
struct s3_obj {
	const char *key;
	struct s3_stat st;
	bool dir; /* s3_list_dir only: key is a common prefix (ends in '/'), st is zero */
};

/*
 * Calls cb for every object whose key starts with prefix ("" for all), in
 * the server's (lexicographic) order, fetching ListObjectsV2 pages of up to
 * 1000 keys and following the continuation token.  A non-zero return of cb
 * stops the listing and is returned.  Returns 0, the errors above, or -EIO
 * for a page that cannot be parsed.  A failed page is retried as any
 * request; objects of pages already delivered stay delivered.
 *
 * A server that would keep the listing going forever is stopped with -EIO
 * and one line naming BUCKET/PREFIX and what it did: it sent a continuation
 * token again (any earlier one, so a cycle of any length), a page starting
 * with the name an earlier page started with, 3 truncated pages in a row
 * with no key and no common prefix, or more than opts.list_pages_max pages.
 * The cost of these checks is constant per page (8 bytes per page kept).
 */
int s3_list(struct s3 *s, const char *prefix, int (*cb)(void *arg, const struct s3_obj *o),
	    void *arg);

/*
 * As s3_list, with delimiter '/': one level under prefix.  cb gets the
 * objects right under it, then for each page the common prefixes (the
 * "subdirectories", o->dir true, o->key the whole prefix ending in '/').
 */
int s3_list_dir(struct s3 *s, const char *prefix, int (*cb)(void *arg, const struct s3_obj *o),
		void *arg);

/* Returns 0 and *st for key, or the errors above (*st unchanged). */
int s3_head(struct s3 *s, const char *key, struct s3_stat *st);

/*
 * Reads up to len bytes of key at off into buf, with "Range: bytes=" and,
 * when etag is not NULL, "If-Match: etag" (then an object that changed
 * gives -ESTALE, never bytes of its new version).  Returns the count, which
 * is len unless the object ends first (0 at or past its end), or the errors
 * above (buf may hold partial data then).  A body of another length than
 * the Content-Range promises is an error (retried), never a short count.
 * -EINVAL for len over SSIZE_MAX, or an ETag over 200 bytes or with a control byte.
 */
ssize_t s3_get_range(struct s3 *s, const char *key, const char *etag, uint64_t off, size_t len,
		     void *buf);

/*
 * Stores len bytes of buf as key (one PUT; for test fixtures and small
 * index files, not large uploads).  When etag_out is not NULL it receives
 * the new ETag ("" if the server sent none).  Returns 0 or the errors above.
 */
int s3_put(struct s3 *s, const char *key, const void *buf, size_t len, char etag_out[80]);

/* Deletes key (one DELETE; S3 answers 204 for a key that is not there too).  Returns 0 or the
 * errors above. */
int s3_delete(struct s3 *s, const char *key);

#endif
