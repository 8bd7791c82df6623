/* SPDX-License-Identifier: MIT */
#include "opts.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "idxfile.h"
#include "s3src.h"
#include "zlog.h"

int opts_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mul = 1;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++)
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v))
			return -EINVAL;
	switch (toupper((unsigned char)*p)) {
	case 'T':
		mul <<= 10;
		/* fall through */
	case 'G':
		mul <<= 10;
		/* fall through */
	case 'M':
		mul <<= 10;
		/* fall through */
	case 'K':
		mul <<= 10;
		p++;
		if (strcasecmp(p, "iB") == 0 || strcasecmp(p, "B") == 0)
			p += strlen(p);
		break;
	}
	if (*p != '\0' || __builtin_mul_overflow(v, mul, &v))
		return -EINVAL;
	*out = v;
	return 0;
}

void opts_default(struct opts *o)
{
	o->cache_size = OPTS_DEFAULT_CACHE;
	o->span = OPTS_DEFAULT_SPAN;
	o->ck_span = OPTS_DEFAULT_CK_SPAN;
	o->log_level = ZLOG_INFO;
	o->timeout = 1.0;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	o->threads = n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
	o->background_index = 1;
	o->index_dir_given = 0;
	o->max_read = 0;
	o->log_file[0] = '\0';
	o->endpoint[0] = o->region[0] = o->credentials[0] = o->profile[0] = '\0';
	o->retries = -1;
	o->request_timeout = 0;
	if (idxfile_default_dir(o->index_dir, sizeof(o->index_dir)) < 0)
		o->index_dir[0] = '\0';
}

uint64_t opts_phys_mem(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	uint64_t bytes;

	if (pages <= 0 || psize <= 0 ||
	    __builtin_mul_overflow((uint64_t)pages, (uint64_t)psize, &bytes))
		return 0;
	return bytes;
}

static int sized(const char *val, uint64_t lo, uint64_t hi, uint64_t *out, const char *key,
		 char *msg, size_t msglen)
{
	char los[32], his[32];
	uint64_t v;

	if (opts_size(val, &v) < 0 || v < lo || v > hi) {
		snprintf(msg, msglen, "bad %s '%s': give a size such as 64M, from %s to %s", key,
			 val, zlog_size(los, sizeof(los), lo), zlog_size(his, sizeof(his), hi));
		return -EINVAL;
	}
	*out = v;
	return 1;
}

/*
 * cache_size: at least 1M, and no more than this machine's memory.  The
 * real cap is the memory, so that is what a bad value's message names, not
 * the 8 EiB that only keeps the arithmetic in range.
 */
static int cache_size(struct opts *o, const char *val, char *msg, size_t msglen)
{
	uint64_t v, mem = opts_phys_mem();
	char want[32], have[32];

	if (opts_size(val, &v) < 0 || v < (1ull << 20) || v > UINT64_MAX / 2) {
		if (mem)
			snprintf(
				msg, msglen,
				"bad cache_size '%s': give a size such as 256M, from 1 MiB to this "
				"machine's %s of memory",
				val, zlog_size(have, sizeof(have), mem));
		else
			snprintf(msg, msglen,
				 "bad cache_size '%s': give a size such as 256M, at least 1 MiB",
				 val);
		return -EINVAL;
	}
	if (mem && v > mem) {
		snprintf(msg, msglen,
			 "cache_size=%s (%s) is larger than this machine's %s of memory; "
			 "give at most a fraction of it, such as 256M",
			 val, zlog_size(want, sizeof(want), v), zlog_size(have, sizeof(have), mem));
		return -EINVAL;
	}
	o->cache_size = v;
	return 1;
}

static int threads(struct opts *o, const char *val, char *msg, size_t msglen)
{
	uint64_t n;

	if (opts_size(val, &n) < 0 || n < 1 || n > 256 ||
	    strspn(val, "0123456789") != strlen(val)) {
		snprintf(msg, msglen, "bad threads '%s': give a number from 1 to 256", val);
		return -EINVAL;
	}
	o->threads = (unsigned)n;
	return 1;
}

/*
 * index_dir: an absolute path, "none", or s3://BUCKET[/PREFIX] (a shared
 * store, s3idx.h), kept without trailing '/' so that it names the store
 * it is registered as.
 */
static int index_dir(struct opts *o, const char *val, char *msg, size_t msglen)
{
	char bucket[256], prefix[1024];
	size_t n = strlen(val);
	int s3 = s3src_url(val, bucket, sizeof(bucket), prefix, sizeof(prefix) - 1);

	if (strcmp(val, "none") == 0) {
		o->index_dir[0] = '\0';
		o->index_dir_given = 1;
		return 1;
	}
	if ((val[0] != '/' && s3 != 1) || n >= sizeof(o->index_dir)) {
		snprintf(msg, msglen,
			 "bad index_dir '%s': give an absolute path, s3://BUCKET[/PREFIX], or none",
			 val);
		return -EINVAL;
	}
	strcpy(o->index_dir, val);
	o->index_dir_given = 1;
	while (s3 == 1 && n > 0 && o->index_dir[n - 1] == '/')
		o->index_dir[--n] = '\0';
	return 1;
}

static int timeout(struct opts *o, const char *val, char *msg, size_t msglen)
{
	char *end;
	double t = strtod(val, &end);

	if (!isdigit((unsigned char)val[0]) || strchr(val, 'x') || strchr(val, 'X') ||
	    *end != '\0' || !(t >= 0 && t <= 3600)) {
		snprintf(msg, msglen, "bad timeout '%s': give seconds from 0 to 3600", val);
		return -EINVAL;
	}
	o->timeout = t;
	return 1;
}

/* 0, not 1: libfuse must see max_read too (opts.h). */
static int max_read(struct opts *o, const char *val, char *msg, size_t msglen)
{
	uint64_t n;

	if (opts_size(val, &n) < 0 || n < 4096 || n > (1u << 31)) {
		snprintf(msg, msglen, "bad max_read '%s': give a size from 4096 bytes to 2G", val);
		return -EINVAL;
	}
	o->max_read = (unsigned)n;
	return 0;
}

static int log_level(struct opts *o, const char *val, char *msg, size_t msglen)
{
	static const char *const levels[] = { "error", "warning", "info", "debug" };

	for (int i = 0; i < 4; i++) {
		if (strcmp(val, levels[i]) == 0) {
			o->log_level = i;
			return 1;
		}
	}
	snprintf(msg, msglen, "bad log_level '%s': give error, warning, info or debug", val);
	return -EINVAL;
}

/* A whole number from lo to hi. */
static int whole(const char *val, int lo, int hi, int *out, const char *key, const char *unit,
		 char *msg, size_t msglen)
{
	char *end;
	long v = strtol(val, &end, 10);

	if (!isdigit((unsigned char)val[0]) || *end != '\0' || v < lo || v > hi) {
		snprintf(msg, msglen, "bad %s '%s': give %s from %d to %d", key, val, unit, lo, hi);
		return -EINVAL;
	}
	*out = (int)v;
	return 1;
}

/* A word with no control byte, space or comma, that fits out (outlen bytes). */
static int word(const char *val, char *out, size_t outlen, const char *key, const char *what,
		char *msg, size_t msglen)
{
	bool ok = val[0] && strlen(val) < outlen;

	for (const char *p = val; ok && *p; p++)
		ok = (unsigned char)*p > ' ' && *p != 0x7f;
	if (!ok) {
		snprintf(msg, msglen, "bad %s '%s': give %s", key, val, what);
		return -EINVAL;
	}
	strcpy(out, val);
	return 1;
}

static int endpoint(struct opts *o, const char *val, char *msg, size_t msglen)
{
	if (strncmp(val, "http://", 7) != 0 && strncmp(val, "https://", 8) != 0) {
		snprintf(msg, msglen,
			 "bad endpoint '%s': give a URL such as https://s3.eu-west-1.amazonaws.com "
			 "or http://127.0.0.1:7480",
			 val);
		return -EINVAL;
	}
	return word(val, o->endpoint, sizeof(o->endpoint), "endpoint", "a URL", msg, msglen);
}

/* Made absolute now: the daemon runs from "/". */
static int credentials(struct opts *o, const char *val, char *msg, size_t msglen)
{
	char cwd[4096];
	int n;

	if (!val[0] || (val[0] != '/' && !getcwd(cwd, sizeof(cwd)))) {
		snprintf(msg, msglen, "bad credentials '%s': give a credentials file", val);
		return -EINVAL;
	}
	n = val[0] == '/' ? snprintf(o->credentials, sizeof(o->credentials), "%s", val)
			  : snprintf(o->credentials, sizeof(o->credentials), "%s/%s", cwd, val);
	if (n < 0 || (size_t)n >= sizeof(o->credentials)) {
		o->credentials[0] = '\0';
		snprintf(msg, msglen, "bad credentials '%s': the path is too long", val);
		return -EINVAL;
	}
	return 1;
}

static int s3_opt(struct opts *o, const char *key, size_t klen, const char *val, char *msg,
		  size_t msglen)
{
#define KEY(k) (klen == strlen(k) && strncmp(key, k, klen) == 0)
	if (KEY("endpoint"))
		return endpoint(o, val, msg, msglen);
	if (KEY("region"))
		return word(val, o->region, sizeof(o->region), "region",
			    "a region such as us-east-1", msg, msglen);
	if (KEY("credentials"))
		return credentials(o, val, msg, msglen);
	if (KEY("profile"))
		return word(val, o->profile, sizeof(o->profile), "profile",
			    "the name of a section of the credentials file", msg, msglen);
	if (KEY("retries"))
		return whole(val, 0, 20, &o->retries, "retries", "a number", msg, msglen);
	if (KEY("request_timeout"))
		return whole(val, 1, 600, &o->request_timeout, "request_timeout", "seconds", msg,
			     msglen);
#undef KEY
	return 0;
}

int opts_apply(struct opts *o, const char *opt, char *msg, size_t msglen)
{
	const char *eq = strchr(opt, '=');
	size_t klen = eq ? (size_t)(eq - opt) : strlen(opt);
	const char *val = eq ? eq + 1 : "";

#define KEY(k) (klen == strlen(k) && strncmp(opt, k, klen) == 0)
	if (KEY("cache_size"))
		return cache_size(o, val, msg, msglen);
	if (KEY("span")) {
		int ret = sized(val, 64ull << 10, 64ull << 20, &o->span, "span", msg, msglen);

		/* One spacing for all three formats once the user names one. */
		if (ret > 0)
			o->ck_span = o->span;
		return ret;
	}
	if (KEY("threads"))
		return threads(o, val, msg, msglen);
	if (KEY("noindex") && !eq) {
		o->background_index = 0;
		return 1;
	}
	if (KEY("salvage") && !eq) {
		o->salvage = 1;
		return 1;
	}
	if (KEY("tar") && !eq) {
		o->tar = 1;
		return 1;
	}
	if (KEY("index_dir"))
		return index_dir(o, val, msg, msglen);
	if (KEY("log_file")) {
		if (!val[0] || strlen(val) >= sizeof(o->log_file)) {
			snprintf(msg, msglen, "bad log_file '%s': give a file name", val);
			return -EINVAL;
		}
		strcpy(o->log_file, val);
		return 1;
	}
	if (KEY("timeout"))
		return timeout(o, val, msg, msglen);
	if (KEY("max_read"))
		return max_read(o, val, msg, msglen);
	if (KEY("log_level"))
		return log_level(o, val, msg, msglen);
#undef KEY
	return s3_opt(o, opt, klen, val, msg, msglen);
}
