/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_PROBE_H
#define ZMOUNT_PROBE_H

#include <stddef.h>

#include "src.h"

/* Formats zmount decodes.  The magic bytes decide, never the file name. */
enum probe_fmt {
	PROBE_NONE = 0, /* anything else: passed through as it is */
	PROBE_XZ,	/* FD 37 7A 58 5A 00 */
	PROBE_GZIP,	/* 1F 8B */
	PROBE_ZSTD,	/* 28 B5 2F FD, after up to PROBE_SKIP_MAX skippable frames */
};

/* Classifies the first len bytes of a file.  Never fails. */
enum probe_fmt probe_buf(const void *buf, size_t len);

/* Skippable zstd frames (magic 50..5F 2A 4D 18) probe_src steps over. */
#define PROBE_SKIP_MAX 4

/*
 * Reads the first bytes of src with zsrc_pread and classifies them.  A file that
 * starts with skippable zstd frames (as pzstd writes) is PROBE_ZSTD if a
 * zstd frame or the end of the file follows within PROBE_SKIP_MAX of them
 * (the end: a file of only skippable frames, whose content is empty; one
 * that claims more bytes than the file has ends there too, and the walk
 * refuses it); probe_buf, which sees only the first bytes, calls it
 * PROBE_NONE.
 * Returns 0 and sets *fmt, or -errno from zsrc_pread (*fmt is then PROBE_NONE).
 */
int probe_src(struct zsrc *src, enum probe_fmt *fmt);

/* "xz", "gzip", "zstd" or "plain". */
const char *probe_name(enum probe_fmt fmt);

#endif
