/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ZSTDCKPT_H
#define ZMOUNT_ZSTDCKPT_H

/*
 * Checkpoints inside one zstd frame (issue 19, items 2 and 3; see
 * doc/results/zstd-checkpoints.md): resume decoding at a block boundary instead of
 * the frame's start.  zstdckpt_build hands out checkpoints with their dense
 * window; zstdckpt_build_blobs hands out self-contained blobs with sparse,
 * compressed windows (below), which zstdckpt_blob_open resumes from.
 *
 * At a block boundary libzstd's decoder state is the window (the last
 * Window_Size bytes of output), the three repeat offsets and the entropy
 * tables in force (Huffman for literals, FSE for literal lengths, offsets
 * and match lengths).  A struct zstdckpt holds the tables as the
 * descriptions that appeared in the stream, and the offsets; the caller
 * keeps the window bytes beside it.  To resume, the two are written as a
 * zstd dictionary (RFC 8878, 5) and the following blocks are decoded one by
 * one with libzstd's block API (ZSTD_decompressBegin_usingDict,
 * ZSTD_decompressBlock, ZSTD_insertBlock: exported by Debian 12's
 * libzstd.so.1.5.4).
 *
 * zstdckpt_build decodes a whole frame with libzstd's streaming decoder
 * (which verifies the Content_Checksum) and, beside it, parses each
 * compressed block's literals and sequences headers to follow the tables
 * in force, which libzstd keeps to itself.  The offsets, which libzstd
 * also keeps to itself, are recovered at each boundary by decoding the
 * sequences (not the literals) of the last block that has any.
 *
 * A boundary gets no checkpoint (zstdckpt_stats says how many; the next
 * boundary is tried) when that block leaves an offset that depends on
 * earlier blocks, or one larger than the window kept (only in a frame's
 * first bytes); or when an FSE table in force is in RLE mode and the next
 * block with sequences repeats it: a dictionary cannot describe a
 * one-symbol table (its accuracy log would be 0).  libzstd never repeats
 * an RLE table.  libzstd (1.5.4) also accepts some streams that RFC 8878
 * calls corrupt, such as a sequences bitstream read past its start; where
 * the parser here disagrees, the boundary or the rest of the frame gets no
 * checkpoints, and the frame still decodes and verifies.
 *
 * Trust: a checkpoint is only as good as the pass that made it.  If
 * zstdckpt_build fails, the checkpoints it handed out before the failure
 * must be dropped.  A resumed decoder cannot verify the Content_Checksum
 * (it covers the whole frame); per-span checksums are issue 19, item 4.
 *
 * Threads: a zstdckpt_dec belongs to one thread at a time; the one shared
 * object is a stock of closed decoders (struct zstdckpt_spares, below),
 * which any thread may use: it has its own lock.
 * All I/O is zsrc_pread on the source the caller passes to each call (borrowed).
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src.h"

#include "zerr.h"
#include "zstddec.h"

/* Largest table descriptions: a Huffman header byte and up to 128 bytes of
 * weights; an FSE description: the 4-bit accuracy log, then at most 53
 * symbols of at most 10 bits, each followed by at most 2 bits of zero-run
 * flags: 80 bytes. */
#define ZSTDCKPT_HUF_MAX 129
#define ZSTDCKPT_FSE_MAX 80

/* Order of zstdckpt.fse[]: the order of the sequences section. */
enum { ZSTDCKPT_LL, ZSTDCKPT_OF, ZSTDCKPT_ML };

struct zstdckpt {
	uint64_t uoff;	    /* offset in the frame's output where decoding resumes */
	uint64_t coff;	    /* file offset of the block header there */
	uint64_t wlen;	    /* window bytes that go with it: min(uoff, window) */
	uint32_t rep[3];    /* repeat offsets, each 1..wlen */
	uint16_t huf_len;   /* Huffman table description, as in the stream */
	uint8_t fse_len[3]; /* FSE table descriptions, as in the stream */
	uint8_t huf[ZSTDCKPT_HUF_MAX];
	uint8_t fse[3][ZSTDCKPT_FSE_MAX];
};

/*
 * Receives one checkpoint; the window is w1[0..n1) then w2[0..n2) (oldest
 * byte first, n1 + n2 == ck->wlen).  All are borrowed for the call.
 * Return 0 to go on; anything else stops zstdckpt_build, which returns it.
 */
typedef int (*zstdckpt_fn)(void *arg, const struct zstdckpt *ck, const uint8_t *w1, size_t n1,
			   const uint8_t *w2, size_t n2);

struct zstdckpt_stats {
	uint64_t usize;	    /* the frame's output */
	uint32_t nblocks;   /* blocks decoded */
	uint32_t nckpt;	    /* checkpoints handed out */
	uint32_t skip_rep;  /* boundaries skipped: an offset unknown or beyond the window */
	uint32_t skip_rle;  /* boundaries skipped: an RLE table repeated next */
	uint64_t nseq;	    /* sequences decoded for the offsets, all boundaries */
	uint64_t lost_coff; /* 0, or the first block whose headers libzstd took and
			       the parser refused: no checkpoints from there on */
};

/*
 * Decodes frame f of src to its end and hands fn a checkpoint at the first
 * block boundary at or past every `span` bytes of output (the first at or
 * past span, the next at or past that one plus span, ...; never at the
 * frame's start or end).  st, if not NULL, is filled in on success.
 * Returns 0 once the whole frame has decoded and its checksum (if any)
 * matched; or what fn returned; or, with err set:
 *   -EINVAL  span is 0;
 *   -ENOTSUP f is flagged ZSTDDEC_F_DICT or ZSTDDEC_F_BIGWIN;
 *   -EIO     corrupt data (libzstd's or our parse's verdict), a checksum
 *            mismatch, a size other than f->usize, or a failed pread;
 *   -ENOMEM  out of memory (the window, twice: ours and libzstd's).
 */
int zstdckpt_build(struct zsrc *src, const struct zstddec_frame *f, uint64_t span, zstdckpt_fn fn,
		   void *arg, struct zstdckpt_stats *st, struct zerr *err);

struct zstdckpt_dec;

/*
 * Prepares to decode frame f from checkpoint ck (made by zstdckpt_build for
 * this frame) with its ck->wlen window bytes, or from the frame's start if
 * ck is NULL (window ignored).  f, ck and the window are copied.  No I/O.
 * Returns 0 and *out, or with *out NULL and err set:
 *   -ENOTSUP f is flagged ZSTDDEC_F_DICT or ZSTDDEC_F_BIGWIN;
 *   -EINVAL  ck does not fit f (offsets, window length, descriptions that
 *            libzstd refuses);
 *   -ENOMEM  out of memory (the window plus about 1 MiB: two blocks of
 *            ring, a 512 KiB input buffer, libzstd's context).
 */
int zstdckpt_dec_open(const struct zstddec_frame *f, const struct zstdckpt *ck, const void *window,
		      struct zstdckpt_dec **out, struct zerr *err);

/*
 * Decodes the next bytes of the frame into buf and returns how many: 1 to
 * len while the frame has more, 0 at its end.  src is borrowed for the call.
 * On failure returns, with err set (coff: the block where it happened):
 *   -EIO  corrupt data, a block larger than the frame's block size, a
 *         frame larger or smaller than f->usize or ending elsewhere than
 *         coff + csize, or a failed pread.
 * The checksum is NOT verified (see above).  After a failure the decoder
 * may only be closed.
 */
ssize_t zstdckpt_dec_read(struct zstdckpt_dec *d, struct zsrc *src, void *buf, size_t len,
			  struct zerr *err);

/* Offset in the frame's output of the next byte zstdckpt_dec_read returns. */
uint64_t zstdckpt_dec_tell(const struct zstdckpt_dec *d);

/* Frees a decoder, or keeps it in the stock it was opened with (below).  Accepts NULL. */
void zstdckpt_dec_close(struct zstdckpt_dec *d);

/* ------------------------------------------------------------------------ */
/*
 * Self-contained checkpoint blobs with sparse, compressed windows (issue 19,
 * item 3).  A blob holds a struct zstdckpt and only those window bytes that
 * decoding from its uoff can read: the bytes before uoff that some match at
 * a position below uoff + Window_Size copies (no later match reaches back
 * past uoff).  They are found by decoding the sequences (lengths and
 * offsets, repeat offsets resolved) of the blocks in [uoff, uoff + window),
 * and kept as (gap, length) runs plus their bytes, compressed with
 * ZSTD_compress at level 1.  The bytes not kept are zero in the resumed
 * window; the tests hold resumed output to libzstd's, byte for byte.
 *
 * Marking is at byte granularity for windows up to 8 MiB; above that it is
 * per granule of window / 8 MiB bytes (a power of two: 16 bytes at
 * --long=27), so that a checkpoint's bitmap is at most 1 MiB.  A granule
 * marked is kept whole (a few more bytes, never fewer).
 *
 * A blob at uoff U is only complete once the build has decoded past
 * U + window, so points are handed out that late (or at the frame's end,
 * after the checksum); meanwhile each pending one holds its bitmap and the
 * bytes kept so far (at most its window).  When the pending ones together
 * hold more than ZSTDCKPT_PEND_MAX bytes, the newest are dropped (counted
 * in skip_cost): a point is given up, never made wrong.  With libzstd's
 * windows (up to 8 MiB below --long) and spans of a few MiB this never
 * happens; it bounds --long=27 and --ultra -22 at small spans.
 *
 * Blob format (little-endian; version 1):
 *   0   "ZCK1"
 *   4   u64 frame coff, csize, usize (or ~0), window: the frame it is for
 *   36  u64 uoff, coff, wlen               (struct zstdckpt)
 *   60  u32 rep[3]
 *   72  u16 huf_len, u8 fse_len[3]
 *   77  u32 nruns, u32 runs_len, u64 kept (window bytes kept), u32 zlen
 *   97  huf[huf_len], fse[LL], fse[OF], fse[ML], payload[zlen]
 *   end u32 CRC-32 (zlib's) of all the bytes before it
 * The payload is one or more zstd frames that decode to exactly
 * runs_len + kept bytes: nruns (gap, len) pairs of LEB128 varints (at most
 * 32 bits each) in runs_len bytes, each run starting gap bytes after the
 * previous one's end (the first: after the window's start, uoff - wlen),
 * len >= 1, all inside the window; then the kept bytes in order.  (Runs
 * closer than 32 bytes written as one, the gap's bytes kept, made blobs 3
 * to 10% larger: the runs table compresses better than the bytes.)
 *
 * Trust: zstdckpt_blob_open checks every field against f and the format,
 * and the CRC, so damage gives -EINVAL; but a blob that is well-formed for
 * a frame of the same offset, sizes and window (another file, or the same
 * file rewritten) opens, and decodes wrong bytes or fails with -EIO.  The
 * caller must tie blobs to the file (as index files are: size, mtime,
 * hashed ends) and check what it serves against per-span checksums taken
 * by the build (issue 19, item 4).
 */

/* Bytes all pending points of one build may hold (bitmaps and kept bytes). */
#define ZSTDCKPT_PEND_MAX (256ull << 20)

struct zstdckpt_sink {
	/* Every decoded byte of the frame, in order, in pieces of any size;
	 * all output before a checkpoint at uoff U is delivered before
	 * point(U).  Return 0 to go on; anything else stops the build, which
	 * returns it.  May be NULL. */
	int (*out)(void *arg, const void *buf, size_t len);
	/* One checkpoint at uoff (0 < uoff < usize), in increasing uoff: blob
	 * is self-contained (all zstdckpt_blob_open needs besides the frame
	 * and the src), borrowed for the call.  Return as out. */
	int (*point)(void *arg, uint64_t uoff, const void *blob, size_t len);
	void *arg;
};

struct zstdckpt_blob_stats {
	uint64_t points;	     /* blobs handed out */
	uint64_t blob_bytes;	     /* their total size */
	uint64_t window_bytes_dense; /* sum of their wlen */
	uint64_t window_bytes_kept;  /* sum of the window bytes they keep */
	uint64_t runs;		     /* sum of their runs */
	uint64_t seq_marked;	     /* sequences decoded to mark windows */
	uint64_t skip_cost;	     /* points dropped by ZSTDCKPT_PEND_MAX */
	uint64_t pend_peak;	     /* most bytes the pending points held at once */
	struct zstdckpt_stats ck;    /* as zstdckpt_build's */
};

/*
 * Decodes frame f of src to its end (checksum verified, as zstdckpt_build),
 * handing s->out the output and s->point a blob at the first usable block
 * boundary at or past every `span` bytes of output, as zstdckpt_build
 * places checkpoints.  st, if not NULL, is filled in on success.
 * Returns 0 only when the whole frame decoded and verified; otherwise as
 * zstdckpt_build (and -ENOMEM also for the blobs).  On any error, every
 * point already handed out must be dropped by the caller: the damage may
 * lie after it, and points are handed out before the checksum is seen.
 * Memory: the window plus 128 KiB (ring), libzstd's stream decoder (the
 * window again), and the pending points (see above).
 */
int zstdckpt_build_blobs(struct zsrc *src, const struct zstddec_frame *f, uint64_t span,
			 const struct zstdckpt_sink *s, struct zstdckpt_blob_stats *st,
			 struct zerr *err);

/*
 * A decoder at the checkpoint in blob[0..len) (untrusted bytes: all
 * checked), or at the frame's start if blob is NULL.  blob is borrowed for
 * the call.  No I/O.  Then zstdckpt_dec_read/tell/close as usual.
 * Returns 0 and *out, or with *out NULL and err set:
 *   -ENOTSUP f is flagged ZSTDDEC_F_DICT or ZSTDDEC_F_BIGWIN;
 *   -EINVAL  the blob is malformed, damaged (CRC), of another version, or
 *            not for frame f (its coff, csize, usize, window);
 *   -ENOMEM  out of memory (as zstdckpt_dec_open).
 */
int zstdckpt_blob_open(const struct zstddec_frame *f, const void *blob, size_t len,
		       struct zstdckpt_dec **out, struct zerr *err);

/*
 * Bytes of memory decoder d holds: its ring, input buffer, libzstd's
 * context and the buffer a blob's payload was unpacked into.
 */
size_t zstdckpt_dec_cost(const struct zstdckpt_dec *d);

/*
 * A stock of closed decoders that later resumes reuse: their ring, input
 * buffer, libzstd context and payload buffer.  A fresh ring is fresh
 * pages, and on this project's VMs faulting them in cost more than
 * decoding (2.3 MiB of ring at zstd -3, for every random read).  The
 * caller owns it (one per context) and lends it to every decoder it
 * opens; it must outlive them.  Any thread.
 *
 * Bound: at most ZSTDCKPT_SPARES_N decoders and ZSTDCKPT_SPARES_MAX bytes
 * in all (as zstdckpt_dec_cost counts them) once their decoders are
 * closed; a decoder that does not fit is freed at close.  That is five
 * zstd -3 decoders (2 MiB window: about 3 MiB each), one of zstd -19's
 * 8 MiB window, none of --long or --ultra windows (16 MiB and more: their
 * rings are mapped and unmapped as before).  zstdckpt_spares_bytes says how many bytes it
 * holds now; they are not part of any decoder's cost.
 *
 * zstdckpt_spares_new returns 0, or -ENOMEM with *out NULL;
 * zstdckpt_spares_free frees the decoders it holds and accepts NULL.
 */
#define ZSTDCKPT_SPARES_N   8
#define ZSTDCKPT_SPARES_MAX (16u << 20)
struct zstdckpt_spares;
int zstdckpt_spares_new(struct zstdckpt_spares **out);
void zstdckpt_spares_free(struct zstdckpt_spares *sp);
size_t zstdckpt_spares_bytes(struct zstdckpt_spares *sp);

/*
 * As zstdckpt_blob_open, with buffers from sp's stock when it holds a
 * decoder of the same window (its bytes are zeroed and its input buffer
 * forgotten: nothing of an earlier frame or file is read).  sp may be
 * NULL (plain allocation); it is borrowed for the decoder's life, and
 * zstdckpt_dec_close gives the decoder back to it.
 */
int zstdckpt_blob_open_in(struct zstdckpt_spares *sp, const struct zstddec_frame *f,
			  const void *blob, size_t len, struct zstdckpt_dec **out,
			  struct zerr *err);

/*
 * zstdckpt_build_blobs pulled by a reader, one read at a time: a decoder
 * at the start of frame f that hands s every byte it returns and
 * s->point the blobs zstdckpt_build_blobs would, so that a reader reading
 * the frame through builds its checkpoints with the one decode.  s is
 * copied, and so is f.  Opening reads the frame
 * header; errors as zstdckpt_build_blobs's, err set.  zstdckpt_run_read
 * decodes the next min(len, bytes left) bytes into buf (a block at a time,
 * copied out of the build's ring); the call that returns the frame's last
 * byte has verified its checksum and size and handed out the last blobs.
 * After a failure later calls fail too, and the blobs handed out must be
 * dropped.  Memory: the build's (zstdckpt_run_cost).  One thread at a
 * time; src is borrowed for each call.
 */
struct zstdckpt_run;
int zstdckpt_run_open(struct zsrc *src, const struct zstddec_frame *f, uint64_t span,
		      const struct zstdckpt_sink *s, struct zstdckpt_run **out, struct zerr *err);
ssize_t zstdckpt_run_read(struct zstdckpt_run *x, struct zsrc *src, void *buf, size_t len,
			  struct zerr *err);
uint64_t zstdckpt_run_tell(const struct zstdckpt_run *x);
size_t zstdckpt_run_cost(const struct zstdckpt_run *x);
void zstdckpt_run_close(struct zstdckpt_run *x); /* accepts NULL */

#endif
