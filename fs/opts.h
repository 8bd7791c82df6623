/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_OPTS_H
#define ZMOUNT_OPTS_H

/*
 * zmount's own mount options, parsed and checked apart from FUSE so that a
 * bad value is caught, and explained in one line, before anything mounts.
 */

#include <stddef.h>
#include <stdint.h>

#define OPTS_DEFAULT_CACHE (256ull << 20)
#define OPTS_DEFAULT_SPAN  (1ull << 20)
/*
 * Inside one xz Block or zstd frame a checkpoint holds a model and the
 * window bytes that the next span reads: far more than a gzip one, so
 * they are further apart unless span= names one spacing for all.
 */
#define OPTS_DEFAULT_CK_SPAN (16ull << 20)

struct opts {
	uint64_t cache_size; /* bytes of decoded data the cache may hold */
	uint64_t span;	     /* gzip checkpoint spacing */
	uint64_t ck_span; /* checkpoint spacing inside xz Blocks and zstd frames; span= sets both */
	int log_level;	  /* enum zlog_level */
	double timeout;	  /* seconds the kernel caches entries and attributes */
	unsigned threads; /* decode workers for read-ahead */
	char index_dir[4096]; /* where gzip indexes persist; "" = memory only */
	int index_dir_given;  /* index_dir= was given: not the default directory */
	int background_index; /* index gzip files after mount (noindex: 0) */
	int salvage;	      /* show the good start of damaged archives (salvage: 1) */
	int tar;	      /* tar archives shown as directories of their members (tar: 1) */
	unsigned max_read;    /* FUSE's max_read=N, noted (0: not given): init must repeat it */
	char log_file[4096];  /* log_file=PATH: lines appended there; "" = syslog or stderr */
	/* s3:// sources (s3src.h's struct s3src_conf); "" and -1/0: its defaults. */
	char endpoint[1024];	/* endpoint=URL: http:// or https:// */
	char region[64];	/* region=R */
	char credentials[4096]; /* credentials=FILE: an AWS credentials file (absolute path) */
	char profile[128];	/* profile=P: its section */
	int retries;		/* retries=N (0..20); -1: the default */
	int request_timeout;	/* request_timeout=SECONDS (1..600) per attempt; 0: the default */
};

/*
 * Physical memory in bytes (sysconf _SC_PHYS_PAGES * _SC_PAGESIZE), or 0 if
 * unknown.  cache_size may not exceed it: a cache the machine cannot hold
 * only swaps or gets the daemon killed.
 */
uint64_t opts_phys_mem(void);

/*
 * Parses a size: digits with an optional K, M, G or T suffix (powers of
 * 1024, either case, optionally followed by "iB" or "B").
 * Returns 0 and *out, or -EINVAL for anything else or a value that
 * overflows 64 bits.
 */
int opts_size(const char *s, uint64_t *out);

/*
 * Fills the defaults (threads: the number of online CPUs; index_dir:
 * $XDG_CACHE_HOME/zmount or ~/.cache/zmount, or "" if no home is known).
 */
void opts_default(struct opts *o);

/*
 * Applies one "key=value" option.  Returns 1 if it is one of ours and was
 * applied, 0 if it is not ours (pass it on to FUSE), or -EINVAL with a
 * one-line reason in msg (msglen bytes).  FUSE's max_read=N is noted in
 * o->max_read and passed on (0), or refused (-EINVAL) unless 4096..2^31.
 * Keys: cache_size (>= 1M, and no more than opts_phys_mem() when that is
 * known), span (64K..64M), timeout (0..3600 seconds), threads (1..256),
 * index_dir (a path, or "none" for memory only), noindex, salvage, tar, log_level (error,
 * warning, info, debug), log_file (a path; relative paths are taken from
 * the current directory when zmount starts), and for s3:// sources
 * endpoint (http:// or https://), region, credentials (a file; made
 * absolute here, as the daemon changes directory), profile, retries
 * (0..20) and request_timeout (1..600 seconds).  None of them holds a
 * secret: keys come from the environment or files only.  Sizes in messages
 * are in units for people ("23.4 GiB").
 */
int opts_apply(struct opts *o, const char *opt, char *msg, size_t msglen);

#endif
