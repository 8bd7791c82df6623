/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_GZDEC_H
#define ZMOUNT_GZDEC_H

/*
 * gzip, wrapped: the only file besides xzdec.c that sees zlib.
 *
 * gzdec_index_build() inflates the whole file once.  On the way it
 *  - records a checkpoint at a deflate block boundary each time at least
 *    `span` bytes have come out since the previous one (and one at offset 0),
 *    with the bit position and the last 32 KiB of that member's output,
 *    which it stores deflate-compressed;
 *  - verifies every member's CRC32 and ISIZE;
 *  - counts the exact uncompressed size in 64 bits (ISIZE is only mod 2^32).
 * gzdec_extract() later restarts inflate at any checkpoint and produces
 * bytes from there, crossing member boundaries as needed.
 *
 * Trailing data after the last complete member, as GNU gzip treats it:
 *  - zero bytes: accepted silently (trailing = GZDEC_TRAIL_ZEROS);
 *  - anything not starting with 1F 8B: accepted, trailing = GZDEC_TRAIL_GARBAGE
 *    (gzip says "trailing garbage ignored"; callers may log it);
 *  - bytes starting with 1F 8B are a member, and fail if it is not valid;
 *  - 1F 9D, 1F 9E, 1F 1E, 1F A0 (compress, old gzip, pack, LZH members,
 *    which gzip would decode) fail as unsupported, rather than being
 *    dropped as garbage.
 *
 * Threads: a gzdec_index is immutable once built and may be shared.  Every
 * call does its own pread on a caller-owned fd and keeps no state between
 * calls, so any number of threads may extract from one index at once.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zerr.h"

#define GZDEC_WINDOW 32768u
/* A checkpoint span never exceeds this, whatever the caller asks. */
#define GZDEC_MAX_SPAN (64u << 20)

enum gzdec_trail {
	GZDEC_TRAIL_NONE = 0,
	GZDEC_TRAIL_ZEROS,
	GZDEC_TRAIL_GARBAGE,
};

struct gzdec_point {
	uint64_t uoff;      /* uncompressed offset of the next output byte */
	uint64_t coff;      /* file offset of the first input byte inflate has not fully used */
	uint8_t bits;       /* if nonzero, that many high bits of byte coff-1 come first */
	uint32_t wsize;     /* window bytes before uoff in the same member (<= 32 KiB) */
	uint32_t wzsize;    /* bytes at wz */
	unsigned char *wz;  /* window, raw-deflate compressed; owned by the index */
};

struct gzdec_index {
	uint64_t usize;          /* exact uncompressed size */
	uint64_t csize;          /* file size */
	uint64_t members;        /* gzip members, empty ones included */
	uint64_t span;           /* span it was built with */
	enum gzdec_trail trailing;
	uint64_t trail_off;      /* file offset where trailing data starts, if any */
	size_t npoints;          /* >= 1 */
	struct gzdec_point *points; /* ascending uoff; points[0].uoff == 0 */
};

/*
 * Builds the checkpoint index of fd (size bytes long).  span is clamped to
 * [64 KiB, GZDEC_MAX_SPAN].
 * Returns 0 and *out (free with gzdec_index_free), or, with *out NULL and
 * err set:
 *   -EINVAL  not gzip, a bad header, corrupt deflate data, a CRC32 or ISIZE
 *            mismatch, or truncated input (err->coff says where);
 *   -ENOMEM  out of memory;
 *   -EIO     pread failed.
 */
int gzdec_index_build(int fd, uint64_t size, uint64_t span, struct gzdec_index **out,
		      struct zerr *err);

/*
 * Checks, cheaply, that fd starts with a readable gzip member header (magic,
 * method, flags, FEXTRA/FNAME/FCOMMENT within the file, FHCRC) followed by
 * at least one byte of deflate data.  Reads at most the header's size.
 * Returns 0, or with err set: -EINVAL (not a readable gzip header), -ENOMEM,
 * -EIO (pread failed).
 */
int gzdec_header_check(int fd, uint64_t size, struct zerr *err);

/*
 * Optional observer of a build: output(ctx, buf, len) gets every
 * uncompressed byte in order; point(ctx, uoff) is called as each checkpoint
 * is recorded (after the output before it).  Either may be NULL.  They
 * cannot fail a build: an observer that runs out of memory just stops.
 */
struct gzdec_sink {
	void (*output)(void *ctx, const void *buf, size_t len);
	void (*point)(void *ctx, uint64_t uoff);
	void *ctx;
};

/* gzdec_index_build with an observer (sink may be NULL). */
int gzdec_index_build_sink(int fd, uint64_t size, uint64_t span, const struct gzdec_sink *sink,
			   struct gzdec_index **out, struct zerr *err);

/* Frees an index and its windows.  Accepts NULL. */
void gzdec_index_free(struct gzdec_index *idx);

/*
 * Produces exactly len bytes of uncompressed output starting at
 * idx->points[point].uoff into buf.  len must not reach past idx->usize.
 * Returns len, or, with err set:
 *   -EIO     the data no longer inflates as it did when indexed (the file
 *            changed), or pread failed or came up short;
 *   -EINVAL  point or len out of range;
 *   -ENOMEM  out of memory.
 * A changed file is not always noticed here (the partial member at a
 * checkpoint has no CRC to check, and output stops before the trailer), so
 * callers must compare the file's identity with the one they indexed.
 */
ssize_t gzdec_extract(int fd, const struct gzdec_index *idx, size_t point, void *buf,
		      size_t len, struct zerr *err);

#endif
