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
 *  - records each span's own CRC32 (the bytes from one checkpoint to the
 *    next), which every decoder checks when it reaches the span's end, so a
 *    read from a checkpoint is checked too, not only whole members;
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
 * call does its own zsrc_pread on a caller-owned source, so any number of threads
 * may extract from one index at once.  A gzdec_dec belongs to one thread at
 * a time; any number of them may share one index and one src.
 *
 * Descriptors: nothing here keeps a file descriptor.  Every call that reads
 * takes the src as an argument and uses it only during that call.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src.h"

#include "zerr.h"

#define GZDEC_WINDOW 32768u
/* A checkpoint span never exceeds this, whatever the caller asks. */
#define GZDEC_MAX_SPAN (64u << 20)
/*
 * gzdec_header_check reads at most this many bytes: a member header (with
 * FEXTRA, FNAME, FCOMMENT and FHCRC) longer than this is called unreadable.
 * It holds the largest FEXTRA (65,537 bytes) and 60 KiB of name and comment.
 */
#define GZDEC_HEADER_MAX (128u << 10)

enum gzdec_trail {
	GZDEC_TRAIL_NONE = 0,
	GZDEC_TRAIL_ZEROS,
	GZDEC_TRAIL_GARBAGE,
};

struct gzdec_point {
	uint64_t uoff;	   /* uncompressed offset of the next output byte */
	uint64_t coff;	   /* file offset of the first input byte inflate has not fully used */
	uint8_t bits;	   /* if nonzero, that many high bits of byte coff-1 come first */
	uint32_t wsize;	   /* window bytes before uoff in the same member (<= 32 KiB) */
	uint32_t wzsize;   /* bytes at wz */
	unsigned char *wz; /* window, raw-deflate compressed; owned by the index */
	/*
	 * CRC32 (zlib's crc32) of this checkpoint's span: the output from uoff
	 * to the next checkpoint's uoff, or to usize for the last one.  The
	 * build computes it from the output it verified; decoders check it.
	 */
	uint32_t crc;
};

struct gzdec_index {
	uint64_t usize;	  /* exact uncompressed size */
	uint64_t csize;	  /* file size */
	uint64_t members; /* gzip members, empty ones included */
	uint64_t span;	  /* span it was built with */
	enum gzdec_trail trailing;
	uint64_t trail_off;	    /* file offset where trailing data starts, if any */
	size_t npoints;		    /* >= 1 */
	struct gzdec_point *points; /* ascending uoff; points[0].uoff == 0 */
	/*
	 * Salvage (GZDEC_SALVAGE): set only by gzdec_index_build_opts.  When
	 * salvaged is 0 every byte of usize passed its member's CRC32 and
	 * ISIZE, and damage_coff and verified mean nothing (an index built
	 * here has verified == usize; one loaded from elsewhere may have 0).
	 */
	int salvaged;	      /* 1: the data is damaged; usize stops before the damage */
	uint64_t damage_coff; /* compressed offset where the damage was seen (err->coff) */
	uint64_t verified;    /* leading bytes of usize that passed a member's CRC32/ISIZE */
};

/*
 * Builds the checkpoint index of src (size bytes long).  span is clamped to
 * [64 KiB, GZDEC_MAX_SPAN].  Checkpoints fall only on deflate block
 * boundaries, so one deflate block larger than span gives a span that
 * large: read such spans with a gzdec_dec, not whole.
 * Returns 0 and *out (free with gzdec_index_free), or, with *out NULL and
 * err set:
 *   -EINVAL  not gzip, a bad header, corrupt deflate data, a CRC32 or ISIZE
 *            mismatch, truncated input (err->coff says where), or more
 *            than INT64_MAX bytes of output.  When inflate fails inside a
 *            member (its deflate data, CRC32 or ISIZE), err->msg begins
 *            "in the member at M: " (GZDEC_MEMBER_AT), M its compressed
 *            offset: the damage may lie anywhere in the member, however
 *            far before err->coff, where it was found;
 *   -ENOMEM  out of memory;
 *   -EIO     pread failed.
 */
int gzdec_index_build(struct zsrc *src, uint64_t size, uint64_t span, struct gzdec_index **out,
		      struct zerr *err);

/* How a build's err->msg names the damaged member: "in the member at %llu: ". */
#define GZDEC_MEMBER_AT "in the member at "

/*
 * Checks, cheaply, that src starts with a readable gzip member header (magic,
 * method, flags, FEXTRA/FNAME/FCOMMENT within the file, FHCRC) followed by
 * at least one byte of deflate data.  Reads the header in 4 KiB preads, and
 * never more than its first GZDEC_HEADER_MAX bytes, so an FNAME or FCOMMENT
 * without its terminating NUL costs at most that much, not the whole file.
 * Returns 0, or with err set: -EINVAL (not a readable gzip header, or one
 * longer than GZDEC_HEADER_MAX bytes, which gzdec_index_build itself would
 * accept), -ENOMEM, -EIO (pread failed).
 */
int gzdec_header_check(struct zsrc *src, uint64_t size, struct zerr *err);

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
	/* May be NULL: after each read of compressed data, the compressed offset reached. */
	void (*read)(void *ctx, uint64_t coff);
};

/* gzdec_index_build with an observer (sink may be NULL). */
int gzdec_index_build_sink(struct zsrc *src, uint64_t size, uint64_t span,
			   const struct gzdec_sink *sink, struct gzdec_index **out,
			   struct zerr *err);

/* Flags for gzdec_index_build_opts. */
#define GZDEC_SALVAGE 0x1u

/*
 * gzdec_index_build_sink with flags.  With flags 0 it is exactly
 * gzdec_index_build_sink.  Unknown flags: -EINVAL.
 *
 * GZDEC_SALVAGE: damaged data is not an error once the first member's
 * header has been read whole.  Where the plain build would fail with
 * -EINVAL because the data is corrupt or truncated (a deflate error, a
 * CRC32 or ISIZE mismatch, the file ending inside a member or inside the
 * magic of the next one, a next member whose header is bad, or one of the
 * unsupported member formats above), it instead returns 0 and an index
 * with salvaged = 1 of the start of the data, never a byte that failed a
 * check:
 *  - usize is the end of the last member that passed its CRC32 and ISIZE
 *    (0 if none did), except when the damage is a cut (the file ends
 *    inside a member's deflate data or trailer, or inside the next
 *    member's header): then it also counts what that member decoded
 *    before the end, which no check could fail.  So usize is the length
 *    of a prefix of what `gzip -dc` writes before its error message, all
 *    of it for a cut (tests compare with gzip 1.12); a member with corrupt
 *    deflate data or a bad CRC32 or ISIZE shows none of its bytes, since
 *    deflate cannot tell where the corruption began;
 *  - verified is the number of leading bytes covered by passed CRCs
 *    (the end of the last good member): usize itself unless cut;
 *  - damage_coff is the compressed offset where the damage was seen;
 *  - err is set as the plain build would have set it (message and coff),
 *    so the caller can log why, though the call returned 0;
 *  - trailing is GZDEC_TRAIL_NONE; nothing after the damage is looked at;
 *  - no checkpoint lies at or after usize, except points[0] when usize is
 *    0 (a file damaged before its first output byte gives an empty index);
 *  - gzdec_extract and gzdec_dec_read return exactly the usize bytes and
 *    stop there, without failing on the damage right after them.
 * The sink, if any, has seen the usize bytes, and after them whatever the
 * damaged member decoded before the damage was noticed: a caller keeping
 * the sink's bytes must drop those past usize.
 * Still failures with GZDEC_SALVAGE: not gzip, or damage inside the first
 * member's header (-EINVAL; nothing decodes), -ENOMEM, -EIO (pread
 * failed: the file is not damaged, our reading of it is), and more than
 * INT64_MAX bytes of output (-EINVAL).
 * An undamaged file gives the same index as without the flag, salvaged 0,
 * trailing data judged the same way.
 */
int gzdec_index_build_opts(struct zsrc *src, uint64_t size, uint64_t span,
			   const struct gzdec_sink *sink, unsigned flags, struct gzdec_index **out,
			   struct zerr *err);

/* Frees an index and its windows.  Accepts NULL. */
void gzdec_index_free(struct gzdec_index *idx);

/*
 * Produces exactly len bytes of uncompressed output starting at
 * idx->points[point].uoff into buf.  len must not reach past idx->usize.
 * Returns len, or, with err set:
 *   -EIO     the data no longer inflates as it did when indexed (the file
 *            changed), a span that len reaches the end of does not match
 *            its recorded CRC32, or pread failed or came up short;
 *   -EINVAL  point or len out of range;
 *   -ENOMEM  out of memory.
 * Only spans that len covers to their end are checked: bytes of a span cut
 * short by len are not, so callers wanting checked bytes ask for whole
 * spans (or read on with a gzdec_dec), and still compare the file's
 * identity with the one they indexed.
 */
ssize_t gzdec_extract(struct zsrc *src, const struct gzdec_index *idx, size_t point, void *buf,
		      size_t len, struct zerr *err);

/*
 * Streaming: a decoder that starts at a checkpoint and returns the bytes
 * after it in as many calls as the caller likes, crossing members as
 * gzdec_extract does.  It is what a span too large to hold whole is read
 * with.  Memory per decoder is fixed, whatever the span: 72,880 bytes of
 * heap measured (check_gzdec stream_one_huge_block, zlib 1.2.13, glibc):
 * the struct with its 32 KiB input buffer (about 32,930 bytes), zlib's
 * inflate state (7,160) and zlib's 32 KiB window (32,768).
 */
struct gzdec_dec;

/*
 * Prepares to decode from idx->points[point].  idx is borrowed and must
 * outlive the decoder; no src is needed (the window is in the index), and
 * none is kept.
 * Returns 0 and *out (close with gzdec_dec_close), or, with *out NULL and
 * err set:
 *   -EINVAL  point out of range, or a malformed checkpoint;
 *   -EIO     the checkpoint's stored window does not inflate;
 *   -ENOMEM  out of memory.
 */
int gzdec_dec_open(const struct gzdec_index *idx, size_t point, struct gzdec_dec **out,
		   struct zerr *err);

/*
 * Decodes the next min(len, bytes left before idx->usize) bytes into buf,
 * reading compressed input from src (the source idx was built from) with zsrc_pread
 * during this call only.  Returns that count (0 once idx->usize is reached;
 * reads stop there, before the last member's trailer), or, with err set:
 *   -EIO     the data no longer inflates as it did when indexed (the file
 *            changed), or pread failed or came up short, or a span whose end
 *            this call reached does not match the CRC32 the build recorded
 *            for it (err->msg: "span at offset X does not match the
 *            checksum the index pass recorded", err->coff: the span's
 *            checkpoint coff);
 *   -ENOMEM  out of memory.
 * So the call that returns a span's last byte has checked that span: a
 * caller that reads a span in one call serves none of a bad span's bytes;
 * one that reads it in pieces learns at its end that the earlier pieces
 * were wrong.  The caller must still check the file's identity.
 * After a failure the decoder may only be closed (reads return -EIO).
 */
ssize_t gzdec_dec_read(struct gzdec_dec *d, struct zsrc *src, void *buf, size_t len,
		       struct zerr *err);

/* Bytes returned so far: the next byte is at idx->points[point].uoff + this. */
uint64_t gzdec_dec_tell(const struct gzdec_dec *d);

/* Frees a decoder.  Accepts NULL. */
void gzdec_dec_close(struct gzdec_dec *d);

/* Whether the n bytes at head (a file's start) begin with gzip's magic, 1F 8B (fmt_gz.c's sniff).
 */
bool gzdec_magic(const void *head, size_t n);

#endif
