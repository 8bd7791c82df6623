/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_PROBE_H
#define ZMOUNT_PROBE_H

#include <stddef.h>

/* Formats zmount decodes.  The magic bytes decide, never the file name. */
enum probe_fmt {
	PROBE_NONE = 0, /* anything else: passed through as it is */
	PROBE_XZ,       /* FD 37 7A 58 5A 00 */
	PROBE_GZIP,     /* 1F 8B */
	PROBE_ZSTD,     /* 28 B5 2F FD (a zstd frame; skippable frames first are not probed) */
};

/* Classifies the first len bytes of a file.  Never fails. */
enum probe_fmt probe_buf(const void *buf, size_t len);

/*
 * Reads the first bytes of fd with pread and classifies them.
 * Returns 0 and sets *fmt, or -errno from pread (*fmt is then PROBE_NONE).
 */
int probe_fd(int fd, enum probe_fmt *fmt);

/* "xz", "gzip", "zstd" or "plain". */
const char *probe_name(enum probe_fmt fmt);

#endif
