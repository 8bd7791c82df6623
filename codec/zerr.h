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
	char msg[200]; /* NUL-terminated reason, "" when none */
};

/* Sets err (may be NULL) and returns ret, so callers can `return zerr_set(...)`. */
int zerr_set(struct zerr *err, int ret, uint64_t coff, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
