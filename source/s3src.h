/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_S3SRC_H
#define ZMOUNT_S3SRC_H

/*
 * Objects in a bucket as sources (source/src.h), and the one way the daemon
 * and the tools turn an s3:// URL and options into a client.
 *
 * An object's source reads with ranged GETs that carry If-Match: the ETag
 * its listing or HEAD gave, so once the object is overwritten every read
 * fails with -ESTALE and no byte of the new version is ever returned.
 * Reads are fetched in windows (s3src.c says how they are sized and how
 * many are kept); the memory they hold is bounded per source and stated
 * in S3SRC_BYTES_PER_SOURCE.
 *
 * Threads: everything may be called from any thread at once.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "src.h"

struct s3;
struct s3_stat;

/*
 * An upper bound of the memory one open object source holds, buffers
 * included: 8 MiB of windows (two of 4 MiB, or more smaller ones), the
 * struct and the key.  Not counted: while a fetch ahead runs, its helper
 * thread (a stack) and the client's connection (s3.h).
 */
#define S3SRC_BYTES_PER_SOURCE ((8u << 20) + (16u << 10))

/* Settings from the command line or a tool's flags; NULL/0 fields take the defaults. */
struct s3src_conf {
	const char *endpoint;	 /* default: see s3src_endpoint */
	const char *region;	 /* default $AWS_REGION, $AWS_DEFAULT_REGION, else us-east-1 */
	const char *credentials; /* a credentials file; default s3cred_load's places */
	const char *profile;	 /* default $AWS_PROFILE, else "default" */
	int retries;		 /* < 0: the default (s3_opts_default); 0: no retry */
	int timeout_ms;		 /* <= 0: the default */
	/* Where the client's one-line error reports go; NULL: stderr. */
	void (*log)(void *arg, const char *line);
	void *log_arg;
};

/*
 * Splits "s3://BUCKET[/PREFIX]" into bucket and prefix (without the
 * leading '/'; "" for none), each NUL-terminated in the given buffers.
 * Returns 1 if url is an s3:// URL and was split, 0 if it is not an s3://
 * URL (a local path), -EINVAL for an s3:// URL with no bucket, a bucket
 * name S3 would refuse, or a part longer than its buffer.
 */
int s3src_url(const char *url, char *bucket, size_t blen, char *prefix, size_t plen);

/*
 * The endpoint conf names, as s3src_connect uses it (for s3src_dev):
 * conf->endpoint, else $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else
 * https://s3.REGION.amazonaws.com; trailing '/' removed.  Returns 0, or
 * -EINVAL if it does not fit in n bytes.
 */
int s3src_endpoint(const struct s3src_conf *conf, char *buf, size_t n);

/*
 * Opens a client for bucket with conf (credentials loaded here, never
 * logged).  Makes no request.  Returns 0 and *out (s3_close), or -errno
 * with one line in msg (msglen bytes) saying why: no credentials found, a
 * bad endpoint, -ENOMEM.
 */
int s3src_connect(const char *bucket, const struct s3src_conf *conf, struct s3 **out, char *msg,
		  size_t msglen);

/*
 * A device number for the objects of one endpoint and bucket, so that two
 * buckets' objects never share an identity.
 */
dev_t s3src_dev(const char *endpoint, const char *bucket);

/*
 * The attributes of an object: S_IFREG | 0444, st_dev dev, st_ino a hash
 * of key (never 0), st_size, st_mtim and st_ctim its Last-Modified,
 * st_nlink 1, st_blksize 64 KiB, st_blocks from the size.  Not its
 * version: two versions may share all of these; the source's tag (its
 * ETag, exactly) tells them apart.
 */
void s3src_version(dev_t dev, const char *key, const struct s3_stat *os, struct stat *st);

/*
 * A source reading key, whose listing or HEAD said os, through s3
 * (borrowed: it must outlive the source).  Makes no request.  Returns 0
 * and *out, -EINVAL (an empty key, or os has no ETag: then a changed
 * object could not be told), or -ENOMEM.
 */
int s3src_open(struct s3 *s3, dev_t dev, const char *key, const struct s3_stat *os,
	       struct zsrc **out);

/* Totals over every object source of the process, for stats and benchmarks. */
struct s3src_counters {
	uint64_t gets;	   /* ranged GETs that returned data */
	uint64_t bytes;	   /* bytes they returned */
	uint64_t hits;	   /* preads served from a window already fetched */
	uint64_t stale;	   /* reads refused because the object changed (412) */
	uint64_t held_max; /* the most window bytes one source held at once */
	uint64_t held;	   /* window bytes all sources hold now */
};

void s3src_get_counters(struct s3src_counters *out);

#endif
