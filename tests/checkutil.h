/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_CHECKUTIL_H
#define ZMOUNT_CHECKUTIL_H

/* Helpers for the Check test programs (testutil.h is for fuzz targets too). */

#include <check.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The whole file at path in a malloc'ed buffer (at least 1 byte, so never
 * NULL), which the caller frees; *len is its size.  Fails the running test
 * if the file cannot be read.
 */
uint8_t *checkutil_slurp(const char *path, size_t *len);

/* One test of a table: corpus says it needs the conformance corpus. */
struct checkutil_case {
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
Suite *checkutil_suite(const char *prog, const char *name, const struct checkutil_case *t, size_t n,
		       int timeout, int have_corpus, int *skipped);

#endif
