/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_TESTUTIL_H
#define ZMOUNT_TESTUTIL_H

/* Helpers shared by the Check tests: fixtures are made by shell commands in a temp dir. */

#include <stddef.h>
#include <stdint.h>

/* Runs the shell command built from fmt in directory dir; returns its exit status, or -1. */
int testutil_sh(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* buf = dir/name, which must fit: aborts otherwise (usable before any test runs). */
void testutil_join(char *buf, size_t size, const char *dir, const char *name);

/*
 * Writes size bytes of deterministic pseudo-text (words from a small list,
 * in xorshift32 order from seed, which must not be 0) to path.  Returns 0,
 * or -1 if the file cannot be written.
 */
int testutil_text(const char *path, size_t size, unsigned seed);

/* CRC-64/XZ of p[0..n), bit by bit from the definition: to reseal forged index files. */
uint64_t testutil_crc64(const unsigned char *p, size_t n);

#endif
