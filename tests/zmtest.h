/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_TESTS_ZMTEST_H
#define ZMOUNT_TESTS_ZMTEST_H

/*
 * The C tests' one library (target zmtest): fixtures made by shell
 * commands, files read whole, Check suites from tables, and the sources
 * tests read archives through.  Everything here runs on the test's own
 * thread unless said otherwise; the functions that "fail the running test"
 * do so by ck_assert, so they are for Check test bodies only.
 */

#include <check.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src.h"

/* ---------------------------------------------------------------- files */

/* Runs the shell command built from fmt in directory dir; returns its exit status, or -1. */
int zmtest_sh(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* buf = dir/name, which must fit: aborts otherwise (usable before any test runs). */
void zmtest_join(char *buf, size_t size, const char *dir, const char *name);

/*
 * Writes size bytes of deterministic pseudo-text (words from a small list,
 * in xorshift32 order from seed, which must not be 0) to path.  Returns 0,
 * or -1 if the file cannot be written.
 */
int zmtest_text(const char *path, size_t size, unsigned seed);

/* CRC-64/XZ of p[0..n), bit by bit from the definition: to reseal forged index files. */
uint64_t zmtest_crc64(const unsigned char *p, size_t n);

/*
 * The whole file at path in a malloc'ed buffer, which the caller frees:
 * *len bytes and a NUL after them (so text files read as strings).  Fails
 * the running test if the file cannot be read.
 */
uint8_t *zmtest_slurp(const char *path, size_t *len);

/* --------------------------------------------------------------- sources */

/*
 * fd as a local file source (zsrc_local, what the daemon and the tools
 * use): takes over fd, closed by the last zsrc_put; the caller holds the
 * one reference.  zsrc_local_fd gives the descriptor back for fstat,
 * futimens, pwrite.  Fails the running test if the source cannot be made.
 */
struct zsrc *zmtest_src_fd(int fd);

/* The file at path opened read-only as zmtest_src_fd's source; fails the running test if it cannot
 * be opened. */
struct zsrc *zmtest_src_open(const char *path);

/* ---------------------------------------------------------------- suites */

/* One test of a table: corpus says it needs the conformance corpus. */
struct zmtest_case {
	const char *name;
	const TTest *test;
	int corpus;
};

/*
 * A Suite named name with one TCase per case of t[0..n), each with the
 * given timeout in seconds.  Without the corpus (have_corpus 0) the cases
 * that need it are left out, each said on stderr as "prog: SKIP: NAME",
 * and counted in *skipped (which may be NULL when no case needs it).
 */
Suite *zmtest_suite(const char *prog, const char *name, const struct zmtest_case *t, size_t n,
		    int timeout, int have_corpus, int *skipped);

/* --------------------------------------------------------------- memsrc */

/*
 * memsrc: an in-memory source (codec/src.h) with faults on demand:
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
