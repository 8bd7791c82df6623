/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_XZCKPT_H
#define ZMOUNT_XZCKPT_H

/*
 * Checkpoints inside one xz Block (issue 19, items 1 and 3): resume
 * decoding an LZMA2 Block at a chunk boundary instead of its start.
 *
 * xzckpt_build decodes a whole Block with lzma2dec (codec/lzma2dec.h),
 * verifies it as liblzma would (Block Header, sizes, Padding, Check), and
 * hands out a checkpoint every `span` bytes of output.  A checkpoint at
 * uoff U is the LZMA2 decoder's state there (lc/lp/pb, state, rep0-rep3,
 * the probability model) plus a sparse window: only the bytes before U
 * that decoding at or past U reads (matches, one-byte repeats, the byte a
 * literal after a match is coded against, and byte U - 1), found with
 * lzma2dec's mark hook while the next dictionary-size of output decodes.
 * A match at or past U + window cannot reach before U, so a checkpoint is
 * handed out once the output reaches there (or the Block ends).  Kept
 * bytes are stored as runs (gap and length as LEB128 numbers); runs closer
 * than 8 bytes are merged.  The model, the runs and the bytes are
 * compressed with zstd (level 1).
 * Bytes not kept are zero in the resumed decoder's window: no byte
 * decoded from the checkpoint reads them.
 *
 * The blob ("ZXC1", version 1, little-endian) is self-contained: a fixed
 * head (the decoder fields, the Block's file offset and uncompressed size,
 * the dictionary size, payload sizes, a CRC32 of the whole blob) and the
 * zstd frame.  xzckpt_dec_open checks all of it before trusting any size.
 *
 * What the layer above must still check: a blob is only as good as the
 * build that made it, and the CRC32 only catches damage on disk, not a
 * blob made for another version of the file at the same offset with the
 * same sizes.  Resumed output is not covered by the Block's Check (it
 * covers the whole Block), so the caller records a checksum of every span
 * at build time (from the sink's out calls) and checks resumed bytes
 * against it before serving any of them.  With that, a wrong blob gives
 * EIO, never wrong bytes.
 *
 * Limits: LZMA2 alone (no BCJ, delta or other filter before it), Check
 * None, CRC32 or CRC64 (SHA-256 and unknown IDs are refused: the index
 * layer decodes such Blocks whole), and a dictionary, once capped at the
 * Block's size, of at most XZCKPT_DICT_MAX.
 *
 * Memory: build holds one lzma2dec (window + 128 KiB), a ring of
 * 2 * window + 64 KiB of output, and window / 8 bytes of marks for each
 * checkpoint not yet handed out (window / span + 1 of them at most), plus
 * each blob while it is being compressed.  At xz -6 (8 MiB) and an 8 MiB
 * span: about 30 MiB.  A resumed decoder holds one lzma2dec (window +
 * 128 KiB; xzckpt_dec_cost counts both), and while it opens, the blob's
 * payload unpacked (about window / 4).  Its window comes from the
 * caller's struct xzdec_spares (xzdec.h) and goes back there at close:
 * that stock keeps at most 8 MiB (one xz -6 window, or liblzma's
 * dictionary of the same size) after every decoder is closed; it is not
 * part of any decoder's cost.
 *
 * Threads: nothing shared; a decoder belongs to one thread at a time.  A
 * build (xzckpt_build, xzckpt_run_*) compresses each closed checkpoint on
 * a helper thread of its own (bgjob.h), started with the first point and
 * joined when the build ends; the sink is only ever called on the
 * caller's thread, in the order described above.  All
 * I/O is zsrc_pread on the source the caller passes to each call (borrowed, never
 * kept); it must be the same file every time for one decoder.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src.h"

#include "xzdec.h"
#include "zerr.h"

/* The largest dictionary (after capping at the Block's size) given checkpoints: xz -9's. */
#define XZCKPT_DICT_MAX (64u << 20)

struct xzckpt_sink {
	/*
	 * Every decoded byte of the Block, in order; each call ends at or
	 * before an LZMA2 chunk's end, so a checkpoint's uoff is always
	 * where one call ended (ckpt.h needs that).  point(U) comes after
	 * the output past U that it depends on.  Returns 0 to go on, else
	 * build stops and returns it.
	 */
	int (*out)(void *arg, const void *buf, size_t len);
	/*
	 * One checkpoint at uoff (0 < uoff < usize), in increasing uoff
	 * order: blob (len bytes) is self-contained (all xzckpt_dec_open
	 * needs besides the Block and the src) and borrowed for the call.
	 * Returns 0 to go on, else build stops and returns it.
	 */
	int (*point)(void *arg, uint64_t uoff, const void *blob, size_t len);
	void *arg;
};

struct xzckpt_stats {
	uint64_t points;	     /* checkpoints handed out */
	uint64_t blob_bytes;	     /* their blobs' sizes, in all */
	uint64_t window_bytes_dense; /* window bytes a dense checkpoint would hold, in all */
	uint64_t window_bytes_kept;  /* window bytes the sparse ones keep (before zstd), in all */
	uint64_t raw_bytes;	     /* payloads before zstd (model, runs, bytes), in all */
	uint64_t runs;		     /* (offset, length) runs, in all */
	uint64_t build_mem;	     /* the most bytes build held at once (approximate) */
};

/*
 * Decodes Block b of src with lzma2dec and hands s->point a checkpoint at
 * the start of the chunk that holds output offset k * span, for every
 * k >= 1 below usize (a chunk is at most 2 MiB of output, so within that
 * of k * span, at or before it; none at 0, and one per chunk), and s->out
 * every byte.  Verifies the whole Block: the Block
 * Header (CRC32, LZMA2 alone), the sizes against the Index's (b->unpadded,
 * b->usize; b->csize must be Unpadded Size rounded up to 4), Block Padding
 * zero, and the Check.  Returns 0 only when all of that held.
 * s->point may be NULL (nothing is built: verify and decode only).
 * st (may be NULL) is zeroed, then filled as far as build got.
 * Returns, with err set:
 *   -ENOTSUP  a filter chain other than LZMA2 alone, a SHA-256 or unknown
 *             Check, or a dictionary over XZCKPT_DICT_MAX;
 *   -EIO      corrupt or truncated data, a size that disagrees with the
 *             Index, nonzero Padding, a Check mismatch, a failed pread;
 *   -EINVAL   span 0, or s->out NULL;
 *   -ENOMEM   out of memory;
 *   whatever a sink callback returned (nonzero; err says so).
 * If it fails, every point handed out before must be dropped by the
 * caller: nothing verified them.
 */
int xzckpt_build(struct zsrc *src, const struct xzdec_block *b, uint64_t span,
		 const struct xzckpt_sink *s, struct xzckpt_stats *st, struct zerr *err);

/*
 * xzckpt_build pulled by a reader, one read at a time: a decoder at the
 * start of Block b that hands s every byte it returns and s->point the
 * same checkpoints xzckpt_build would, so that a reader reading the Block
 * through builds its checkpoints with the one decode.  s is copied; the
 * xzdec_block is borrowed for the decoder's life.  Same errors as
 * xzckpt_build's setup (-ENOTSUP, -EIO, -EINVAL, -ENOMEM), err set.
 * xzckpt_run_read decodes the next min(len, bytes left) bytes into buf
 * (xzdec_dec_read's contract: the call that returns the Block's last byte
 * has verified its sizes, Padding and Check, and handed out the last
 * points); after a failure, later calls fail too, and the points handed
 * out must be dropped.  The memory is xzckpt_build's (xzckpt_run_cost).
 * One thread at a time; src as for xzckpt_dec_read.
 */
struct xzckpt_run;
int xzckpt_run_open(struct zsrc *src, const struct xzdec_block *b, uint64_t span,
		    const struct xzckpt_sink *s, struct xzckpt_run **out, struct zerr *err);
ssize_t xzckpt_run_read(struct xzckpt_run *x, struct zsrc *src, void *buf, size_t len,
			struct zerr *err);
uint64_t xzckpt_run_tell(const struct xzckpt_run *x);
size_t xzckpt_run_cost(const struct xzckpt_run *x);
void xzckpt_run_close(struct xzckpt_run *x); /* accepts NULL */

struct xzckpt_dec;

/*
 * A decoder of Block b of src positioned at checkpoint blob (len bytes,
 * borrowed for the call), or, with blob NULL, at the Block's start.  sp
 * (may be NULL: plain malloc) lends the window and is borrowed for the
 * decoder's life (xzckpt_dec_close gives the window back to it).
 * Reads the Block Header through src (the dictionary size, the filter
 * chain, the data's size); no other I/O.  The blob comes from disk and is
 * untrusted: every field is checked, the payload's sizes are bounded
 * before anything is allocated from them, and lzma2dec_resume checks the
 * decoder state.  Returns 0 and *out, or, with *out NULL and err set:
 *   -EINVAL  a malformed or damaged blob (CRC32), or one not for this
 *            Block (its file offset, uncompressed size or dictionary size
 *            differ, or its uoff is not inside the Block);
 *   -ENOTSUP, -EIO  as xzckpt_build, for the Block Header;
 *   -ENOMEM  out of memory.
 */
int xzckpt_dec_open(struct zsrc *src, const struct xzdec_block *b, struct xzdec_spares *sp,
		    const void *blob, size_t len, struct xzckpt_dec **out, struct zerr *err);

/*
 * Decodes up to len bytes into buf: returns 1..len, 0 at the Block's end
 * (and for len 0), or, with err set, -EIO (corrupt data, the data ending
 * short of or past the Index's sizes, a failed pread) or -ENOMEM.  After
 * a failure, later calls fail too.  Does NOT verify the Block's Check:
 * the caller checks resumed bytes against the per-span checksums it
 * recorded at build.
 */
ssize_t xzckpt_dec_read(struct xzckpt_dec *d, struct zsrc *src, void *buf, size_t len,
			struct zerr *err);

/* Offset in the Block's output of the next byte xzckpt_dec_read returns. */
uint64_t xzckpt_dec_tell(const struct xzckpt_dec *d);

/* Bytes of memory the decoder holds. */
size_t xzckpt_dec_cost(const struct xzckpt_dec *d);

/* Frees a decoder.  Accepts NULL. */
void xzckpt_dec_close(struct xzckpt_dec *d);

#endif
