/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ZSTDDEC_H
#define ZMOUNT_ZSTDDEC_H

/*
 * Zstandard (RFC 8878), wrapped: the only file besides xzdec.c and gzdec.c
 * that sees a codec library (libzstd).
 *
 * zstddec_index_read() walks the file from its start, frame by frame,
 * without decoding anything: each zstd frame's header (Frame_Header_
 * Descriptor, Window_Descriptor, Dictionary_ID, Frame_Content_Size) is
 * parsed and its block headers (3 bytes each) are stepped over to find the
 * frame's compressed extent; skippable frames are stepped over and counted.
 * A trailing seek table of the zstd seekable format is then checked against
 * the walked frames (see "Seek table" below).  zstddec_dec_* decode one
 * frame on its own, given its entry from that list.  zstddec_scan walks
 * the same way but keeps nothing: a probe in constant memory.
 *
 * Sizes.  Frame_Content_Size (FCS) is optional.  A frame without it has
 * usize ZSTDDEC_UNKNOWN, seek table or not (below); the caller
 * learns it with zstddec_measure (one decode pass, checksum verified) and
 * records it with zstddec_index_settle.  Every usize is untrusted until the
 * frame decodes: the decoder stops at usize and fails with -EIO if the
 * frame would produce more or less.  The walk already refuses an FCS larger
 * than the frame's blocks can hold (each block yields at most
 * min(Window_Size, 128 KiB)), so a usize never exceeds
 * nblocks * 128 KiB: callers may size buffers from it.
 *
 * Seek table (contrib/seekable_format, version 0.1.0).  When the last frame
 * is a skippable frame (magic 0x184D2A5E) whose last 4 bytes are
 * 0x8F92EAB1, it is parsed and must agree with the walk exactly: its
 * entries tile the file from offset 0 to the seek table, one entry per
 * walked frame (zstd or skippable), with that frame's compressed size; a
 * skippable frame's Decompressed_Size is 0 and a zstd frame's equals its
 * FCS when it has one.  Its Decompressed_Size for a frame without FCS is
 * never used: that size is not the frame's own word, and a frame placed
 * by it before the frames ahead were decoded could be served at the wrong
 * offset (issue 18).  Such frames stay ZSTDDEC_UNKNOWN and are measured,
 * and the file's size is what `zstd -dc` prints, whatever the table says.
 * If it disagrees in any way, or its reserved descriptor bits are set, it
 * is IGNORED, not an error: the frames themselves are authoritative and
 * decodable without it (zstd -d ignores it too); seek_reason says why, for
 * the caller's one log line.  Its per-frame checksums (low 32 bits of
 * XXH64) are not verified.
 *
 * Flags, not errors: a frame that needs a dictionary (Dictionary_ID != 0)
 * gets ZSTDDEC_F_DICT, and one whose window is larger than the caller's
 * limit (or than libzstd can decode, 2^31) gets ZSTDDEC_F_BIGWIN.  The
 * caller decides (the daemon shows such files raw); zstddec_dec_open
 * refuses such frames with -ENOTSUP.
 *
 * Memory.  A decoder costs zstddec_dec_cost(f): the window (Window_Size,
 * or FCS for a single-segment frame), libzstd's ZSTD_DStream (about 160 KiB
 * plus two blocks of buffers, ZSTD_estimateDStreamSize) and our 128 KiB
 * input buffer.  ZSTD_d_windowLogMax is set from the frame's own header, so
 * libzstd never allocates more than that.  Measured with libzstd 1.5.4: a
 * 2 MiB window (zstd -3 on a large input) costs 2.6 MiB, the window plus
 * about 606 KiB; --long=27 costs 128.6 MiB.
 * The index costs 56 bytes per zstd frame, and the walk 32 more per frame of
 * any kind while it runs; a file of more frames (of any kind) than the
 * caller's max_frames, and never more than ZSTDDEC_MAX_FRAMES, is refused
 * (-E2BIG) as soon as the walk counts one too many, before anything is
 * allocated for it: the walk never holds more than max_frames * 88 bytes
 * (about 90 MiB at ZSTDDEC_MAX_FRAMES), as the 64 MiB memlimit bounds an
 * xz Index.  zstddec_scan holds 64 KiB whatever the file.  (A million
 * frames is 64 GiB in the 64 KiB frames seekable-format writers use; pzstd
 * writes one per few MiB.)
 *
 * Checkpoints inside a frame (not done yet; where they would go).  Today a
 * random read inside a frame decodes forward from a parked decoder or from
 * the frame's start.  Two kinds could be added without changing the frame
 * entry or the calls above:
 *  - in memory: a parked zstddec_dec is a checkpoint at zstddec_dec_tell();
 *    a reader may keep several per frame, each charged zstddec_dec_cost();
 *  - saved, like gzip's: libzstd needs, to resume at a block boundary, the
 *    last Window_Size bytes of output, the three repeat offsets and the
 *    entropy tables in force, and has no public call to export the last
 *    two.  So a saved point is (block's compressed offset, uoff in the
 *    frame, that window), taken by the decode pass that measures the frame
 *    and only before a block that needs no earlier tables (its literals and
 *    sequences section headers say so) and sets its offsets before using a
 *    repeat code (the pass sees that while decoding).  Restart would be the
 *    block-level API (ZSTD_decompressBegin_usingDict with the window as
 *    raw content, then ZSTD_decompressBlock) behind one new call,
 *    zstddec_dec_open_at(f, point), with the same read/tell/close.
 *    A decoder already keeps (uoff, compressed offset) as its position.
 *
 * Threads: a zstddec_index is immutable after zstddec_index_read (and any
 * zstddec_index_settle calls, which must finish before it is shared) and
 * may be read from any thread.  A zstddec_dec belongs to one thread at a
 * time and never holds a src: the caller passes one on every read.  All
 * I/O is pread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src.h"

#include "zerr.h"

#define ZSTDDEC_UNKNOWN	   UINT64_MAX	/* usize or uoff not known without decoding */
#define ZSTDDEC_BLOCK_MAX  (128u << 10) /* the most one block decodes to */
#define ZSTDDEC_MAX_FRAMES (1u << 20)	/* zstd and skippable frames in one file */

/* Window limits for zstddec_index_read's window_max. */
#define ZSTDDEC_WINDOW_LIBMAX (1ull << 31) /* libzstd's own limit on 64-bit */
/* What `zstd -d` decodes without --memory or --long (ZSTD_WINDOWLOG_LIMIT_DEFAULT). */
#define ZSTDDEC_WINDOW_DEFAULT (1ull << 27)

/* zstddec_frame.flags */
#define ZSTDDEC_F_DICT	 0x1u /* needs dictionary dict_id: cannot be decoded here */
#define ZSTDDEC_F_BIGWIN 0x2u /* window > the caller's window_max: not decoded here */

/* Where a frame's usize came from. */
enum zstddec_src {
	ZSTDDEC_SRC_NONE = 0, /* unknown: usize is ZSTDDEC_UNKNOWN */
	ZSTDDEC_SRC_FCS,      /* the frame header's Frame_Content_Size */
	ZSTDDEC_SRC_SEEKTAB,  /* no longer set (seek table sizes are not used); kept for idxfile */
	ZSTDDEC_SRC_MEASURED, /* zstddec_index_settle, after zstddec_measure */
};

enum zstddec_seek {
	ZSTDDEC_SEEK_NONE = 0, /* no seek table */
	ZSTDDEC_SEEK_USED,     /* present and agrees with the frames */
	ZSTDDEC_SEEK_IGNORED,  /* present, disagrees: seek_reason says how */
};

struct zstddec_frame {
	uint64_t coff;	   /* file offset of the frame's magic number */
	uint64_t csize;	   /* whole frame: magic, header, blocks, checksum */
	uint64_t usize;	   /* uncompressed size, or ZSTDDEC_UNKNOWN */
	uint64_t uoff;	   /* offset in the file's output, or ZSTDDEC_UNKNOWN */
	uint64_t window;   /* Window_Size in bytes (FCS for a single-segment frame) */
	uint32_t dict_id;  /* Dictionary_ID, 0 for none */
	uint32_t nblocks;  /* blocks in the frame (>= 1) */
	uint8_t hsize;	   /* magic + frame header bytes (6 to 18) */
	uint8_t checksum;  /* 1 if it ends with a Content_Checksum (XXH64) */
	uint8_t usize_src; /* enum zstddec_src */
	uint8_t flags;	   /* ZSTDDEC_F_* */
};

struct zstddec_index {
	uint64_t usize;		      /* sum of the frames' usize, or ZSTDDEC_UNKNOWN */
	uint64_t csize;		      /* file size */
	uint64_t window_max;	      /* the limit the walk was given */
	uint64_t max_window;	      /* largest window of any frame */
	uint64_t nskippable;	      /* skippable frames, the seek table's included */
	uint64_t skippable_bytes;     /* their total size */
	size_t nunknown;	      /* frames whose usize is ZSTDDEC_UNKNOWN */
	size_t ndict;		      /* frames flagged ZSTDDEC_F_DICT */
	size_t nbigwin;		      /* frames flagged ZSTDDEC_F_BIGWIN */
	size_t nchecksum;	      /* frames with a Content_Checksum */
	enum zstddec_seek seek;	      /* the seek table, if any (its sizes are never used) */
	uint64_t seek_coff;	      /* its frame's offset, when seek != NONE */
	char seek_reason[120];	      /* when seek == IGNORED: why, "" otherwise */
	size_t nframes;		      /* zstd frames (skippable ones are not listed) */
	struct zstddec_frame *frames; /* nframes entries, in file order */
};

/*
 * Walks every frame of src (size bytes long).  window_max is the largest
 * window the caller will decode (frames above it are flagged
 * ZSTDDEC_F_BIGWIN); it is clamped to ZSTDDEC_WINDOW_LIBMAX.  max_frames
 * (clamped to ZSTDDEC_MAX_FRAMES) bounds the frames of any kind.
 * On success returns 0 and *out, which the caller frees with
 * zstddec_index_free.  A file with no zstd frame at all (only skippable
 * frames) succeeds with nframes 0.  On failure *out is NULL, err says why
 * and where (err->coff), and it returns:
 *   -EINVAL  not zstd at offset 0, or a bad frame: truncated, a reserved
 *            bit set, a reserved block type, a block larger than 128 KiB,
 *            an FCS its blocks cannot hold or that is smaller than its raw
 *            and RLE blocks, or bytes after the last frame that are not a
 *            frame (trailing garbage, as zstd -d also refuses);
 *   -E2BIG   more than max_frames frames (err->coff: the first one over);
 *   -ENOMEM  out of memory;
 *   -EIO     pread failed.
 */
int zstddec_index_read_max(struct zsrc *src, uint64_t size, uint64_t window_max, size_t max_frames,
			   struct zstddec_index **out, struct zerr *err);

/* zstddec_index_read_max with max_frames ZSTDDEC_MAX_FRAMES. */
int zstddec_index_read(struct zsrc *src, uint64_t size, uint64_t window_max,
		       struct zstddec_index **out, struct zerr *err);

/* What zstddec_scan found. */
struct zstddec_scan {
	size_t nframes;		      /* zstd frames */
	size_t nskippable;	      /* skippable frames */
	size_t ndict, nbigwin;	      /* frames flagged ZSTDDEC_F_DICT, ZSTDDEC_F_BIGWIN */
	size_t flagged_i;	      /* the first flagged frame's number, if any */
	struct zstddec_frame flagged; /* and that frame (uoff not set) */
};

/*
 * The walk of zstddec_index_read_max, keeping only counts: the same
 * verdicts and errors (but no seek table check, and not -ENOMEM past the
 * start), in 64 KiB of memory whatever the file.  For a listing's probe.
 * *out is set on success and holds the counts so far on failure.
 */
int zstddec_scan(struct zsrc *src, uint64_t size, uint64_t window_max, size_t max_frames,
		 struct zstddec_scan *out, struct zerr *err);

/* Frees an index.  Accepts NULL. */
void zstddec_index_free(struct zstddec_index *idx);

/*
 * Records frame i's measured usize (from zstddec_measure) and recomputes
 * every uoff and idx->usize.  Only before the index is shared.
 * Returns 0, or -EINVAL if i is out of range, the frame's usize is already
 * known and differs, or usize exceeds what the frame's blocks can hold.
 */
int zstddec_index_settle(struct zstddec_index *idx, size_t i, uint64_t usize);

/*
 * zstddec_index_settle for every frame at once, in one pass (a saved index
 * gives all the sizes together): usize[i] is frame i's size, nframes
 * entries.  Frames whose usize is known must get that same value; the
 * others get usize[i] (usize_src ZSTDDEC_SRC_MEASURED: still untrusted, the
 * decoder checks it).  Only before the index is shared.
 * Returns 0, or -EINVAL with idx unchanged if any entry is ZSTDDEC_UNKNOWN,
 * differs from a known size, or exceeds what its frame's blocks can hold.
 */
int zstddec_index_settle_all(struct zstddec_index *idx, const uint64_t *usize);

/*
 * Decodes frame f of src once, to the end, discarding the output, and sets
 * *usize to its length.  The Content_Checksum, if any, is verified.  If
 * f->usize is known it must match.  Returns 0, or with *usize untouched and
 * err set, what zstddec_dec_open and zstddec_dec_read return.
 */
int zstddec_measure(struct zsrc *src, const struct zstddec_frame *f, uint64_t *usize,
		    struct zerr *err);

struct zstddec_dec;

/*
 * Decoders keep their libzstd state for the next one when they close: at
 * most 2 idle, each at most 9 MiB (frames with windows up to 8 MiB), so a
 * decoder opened per far read does not map and fault in a fresh window.
 * zstddec_stash_bytes: what the idle ones hold now.  Any thread.
 */
#define ZSTDDEC_STASH_MAX ((size_t)2 * (9u << 20))
size_t zstddec_stash_bytes(void);

/*
 * Prepares to decode frame f from its start.  f is copied.  No I/O.
 * Returns 0 and *out, or, with *out NULL and err set:
 *   -ENOTSUP f is flagged ZSTDDEC_F_DICT or ZSTDDEC_F_BIGWIN;
 *   -ENOMEM  out of memory.
 * The decoder's memory is about zstddec_dec_cost(f).
 */
int zstddec_dec_open(const struct zstddec_frame *f, struct zstddec_dec **out, struct zerr *err);

/*
 * Decodes the next bytes of the frame into buf, reading input from src
 * (borrowed for this call only), and returns how many.
 * With f->usize known: exactly min(len, remaining), and 0 once the whole
 * frame has been returned.  With f->usize ZSTDDEC_UNKNOWN: between 1 and
 * len bytes while the frame has more, 0 at its end.
 * The call that returns the frame's last byte first consumes the rest of
 * the frame and has libzstd verify its Content_Checksum (if any), so a
 * return that reaches the end means the checksum passed and the frame ended
 * exactly where the walk said.
 * On failure returns, with err set (coff: the compressed offset reached):
 *   -EIO     corrupt data, a checksum mismatch, a frame that produces more
 *            or fewer bytes than usize or ends elsewhere than coff+csize,
 *            truncated input, or a failed pread;
 *   -ENOMEM  out of memory.
 * After a failure the decoder may only be closed.
 */
ssize_t zstddec_dec_read(struct zstddec_dec *d, struct zsrc *src, void *buf, size_t len,
			 struct zerr *err);

/* Uncompressed bytes returned so far from this frame. */
uint64_t zstddec_dec_tell(const struct zstddec_dec *d);

/* Frees a decoder.  Accepts NULL. */
void zstddec_dec_close(struct zstddec_dec *d);

/*
 * Bytes a decoder for f holds at most: the window, libzstd's stream
 * buffers and context, our input buffer.  For a reader's cache budget.
 */
uint64_t zstddec_dec_cost(const struct zstddec_frame *f);

/* zstddec_dec_cost of the frame d decodes. */
uint64_t zstddec_dec_cost_of(const struct zstddec_dec *d);

/* "FCS", "seek table", "measured" or "unknown"; static storage. */
const char *zstddec_src_name(unsigned src);

/* Skippable frames (magic 50..5F 2A 4D 18) zstddec_sniff steps over. */
#define ZSTDDEC_SNIFF_SKIP 4

/*
 * Whether src (borrowed) is a zstd file by its magic (fmt_zstd.c's sniff):
 * it starts with a zstd frame (28 B5 2F FD), or with skippable frames (as
 * pzstd writes) followed within ZSTDDEC_SNIFF_SKIP of them by a zstd frame
 * or the end of the file (a file of only skippable frames, whose content
 * is empty; one that claims more bytes than the file has ends there too,
 * and the walk refuses it).  Reads with zsrc_pread; false on a read error.
 */
bool zstddec_sniff(struct zsrc *src);

#endif
