/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ZERR_H
#define ZMOUNT_ZERR_H

#include <stdint.h>

/*
 * Why a codec call failed, for the one log line the caller writes.  The
 * codec knows what went wrong and where in the compressed file; only the
 * caller knows the file's name, so the codec never logs by itself.
 */
struct zerr {
	uint64_t coff; /* compressed offset where the problem was seen */
	char msg[256]; /* NUL-terminated reason, "" when none */
	/*
	 * 1: the data ends early (a file cut short, or still being written)
	 * and nothing before that end was found damaged; set by zerr_cut,
	 * cleared by zerr_set.
	 */
	int cut;
};

/* Sets err (may be NULL) and returns ret, so callers can `return zerr_set(...)`. */
int zerr_set(struct zerr *err, int ret, uint64_t coff, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * The one wording every format uses for data that ends early, so a user
 * tells a file still being written (or truncated) from a damaged one:
 * "cut short at compressed offset COFF: the file ends WHERE (still being
 * written, or truncated)", WHERE formatted from fmt ("inside Block 0").
 * coff is where the data ends (the file's size, for a file).  Sets err
 * (may be NULL) with cut = 1 and returns ret.
 */
int zerr_cut(struct zerr *err, int ret, uint64_t coff, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
