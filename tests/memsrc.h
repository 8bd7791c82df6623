/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_MEMSRC_H
#define ZMOUNT_MEMSRC_H

/*
 * An in-memory source (codec/src.h) for tests, with faults on demand:
 *  - short reads: each pread returns at most 1..short_max bytes, the bound
 *    varying from call to call (0: whole counts);
 *  - errors: a pread overlapping [lo, hi) fails with err (a -errno);
 *  - a new version: memsrc_change swaps in other bytes; with MEMSRC_STAT,
 *    stat says so at once (a later mtime, as a local file rewritten in
 *    place); with MEMSRC_ESTALE, pread fails with -ESTALE instead of
 *    serving them (an object: its stat is the version at open, and every
 *    GET carries If-Match).
 * A tag (memsrc_set_tag) makes it a source whose version a stat cannot hold.
 * The last zsrc_put only counts (memsrc_frees) and leaves the memory to
 * memsrc_destroy, so a test can see a source freed once, never twice.
 * Threads: preads may run at once; the setters are for the test's thread
 * while no read runs.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src.h"

struct memsrc {
	struct zsrc s; /* first: memsrc_src(m) is &m->s */
	unsigned char *data;
	size_t len;
	struct stat st;
	unsigned short_max;
	uint64_t err_lo, err_hi;
	int err;
	bool estale;		/* reads fail with -ESTALE (after memsrc_change with estale) */
	char tag[ZSRC_TAG_MAX]; /* the version tag (src.h); "" for none */
	atomic_uint calls, frees;
	uint64_t hint_off, hint_len; /* the last hint */
};

/* A source over a copy of data[0, len).  Aborts if out of memory. */
struct memsrc *memsrc_new(const void *data, size_t len);

static inline struct zsrc *memsrc_src(struct memsrc *m)
{
	return &m->s;
}

void memsrc_short(struct memsrc *m, unsigned short_max);
void memsrc_fail(struct memsrc *m, uint64_t lo, uint64_t hi, int err);
enum { MEMSRC_STAT = 1, MEMSRC_ESTALE = 2 };
void memsrc_change(struct memsrc *m, const void *data, size_t len, unsigned how);

/* Sets the version tag zsrc_tag gives ("" for none). */
void memsrc_set_tag(struct memsrc *m, const char *tag);

/* How often the last reference was dropped. */
unsigned memsrc_frees(struct memsrc *m);

/* Frees m itself, whatever its references. */
void memsrc_destroy(struct memsrc *m);

#endif
