/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_LZMA2DEC_H
#define ZMOUNT_LZMA2DEC_H

/*
 * A raw LZMA2 decoder of our own, written from the .xz format specification
 * and the LZMA SDK's lzma-specification.txt, for one reason: it can stop at
 * an LZMA2 chunk boundary, hand out its whole state as plain data (a
 * checkpoint), and later start again from that checkpoint and the
 * compressed bytes that follow it.  liblzma cannot resume inside a Block;
 * it stays the decoder of whole Blocks (xzdec.c) and the reference in the
 * tests.
 *
 * Input: the LZMA2 data of one xz Block whose only filter is LZMA2, i.e.
 * the bytes after the Block Header, up to and including the end marker
 * (control byte 0x00).  Compressed offsets ("coff") count from the first
 * byte of that data; uncompressed offsets ("uoff") from the first byte the
 * Block decodes to.  The decoder pulls its input through a pread-like
 * callback, one chunk at a time (a chunk is at most 6 + 65536 bytes), so
 * the caller decides where the bytes come from.
 *
 * Chunks and what a checkpoint needs.  Every LZMA chunk restarts the range
 * coder, so a chunk boundary is a clean place to stop; what else the chunk
 * needs depends on its control byte:
 *   0x01, 0xE0-0xFF  dictionary reset: needs nothing but the two offsets;
 *   0xC0-0xDF        state reset with new lc/lp/pb: needs the dictionary
 *                    (the last min(dpos, window) bytes) and dpos;
 *   0xA0-0xBF        state reset, old lc/lp/pb: the dictionary, dpos and
 *                    the properties;
 *   0x80-0x9F, 0x02  no reset: the dictionary, dpos, the properties, the
 *                    LZMA state, rep0-rep3 and the probability model
 *                    (2 * (1846 + 0x300 << (lc + lp)) bytes: 15,980 at
 *                    lc=3 lp=0, at most 28,268).  An uncompressed chunk
 *                    keeps them for the LZMA chunk after it.
 * dpos is the number of bytes since the last dictionary reset: its low bits
 * select probabilities (pb, lp), and it bounds valid match distances.
 *
 * Errors are negative errnos:
 *   -EIO     corrupt or truncated data: a reserved control byte, a chunk
 *            that needs a reset or properties it lacks, invalid lc/lp/pb, a
 *            match distance beyond the data decoded since the dictionary
 *            reset, an end-of-payload marker inside a chunk, a chunk whose
 *            LZMA data does not end exactly at its compressed size with the
 *            range coder finished, input ending before the end marker,
 *            output beyond the caller's limit, or a chunk that differs from
 *            the one a checkpoint was made at;
 *   -EINVAL  bad arguments, or a checkpoint that is malformed or
 *            inconsistent (lzma2dec_ckpt_load, lzma2dec_resume);
 *   -ENOMEM  out of memory;
 *   any negative value the pull callback returns, passed on unchanged.
 * Every such error leaves the decoder failed: later reads return the same
 * error.  Nothing is read or written out of bounds, and work is bounded by
 * the input (each input byte yields at most 2 MiB of chunk output).
 *
 * Threads: a decoder belongs to one thread at a time; decoders share
 * nothing, so any number may run at once.  A checkpoint is plain data with
 * no pointer into a decoder: any thread may keep, copy or resume from it.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zerr.h"

/* The largest dictionary accepted, 1.5 GiB: far above xz -9e (64 MiB); callers cap lower. */
#define LZMA2DEC_DICT_MAX (3u << 29)

/* The most probabilities a model has (lc + lp = 4). */
#define LZMA2DEC_PROBS_MAX (1846u + (0x300u << 4))

/*
 * Reads up to len compressed bytes at offset coff (counted from the start
 * of the LZMA2 data) into buf, like pread.  Returns the number read, which
 * is less than len only where the data ends, or a negative errno, which the
 * decoder returns as it is.  Called only from inside lzma2dec_read.
 */
typedef ssize_t (*lzma2dec_pull_fn)(void *opaque, uint64_t coff, void *buf, size_t len);

/* Where a chunk starts and what it holds: passed to the chunk callback. */
struct lzma2dec_chunk {
	uint64_t uoff;	 /* uncompressed offset of its first byte */
	uint64_t coff;	 /* compressed offset of its control byte */
	uint32_t usize;	 /* uncompressed bytes it holds */
	uint32_t csize;	 /* compressed bytes after its header (= usize if uncompressed) */
	uint8_t control; /* its control byte (never 0x00: the end calls nothing) */
};

struct lzma2dec;

/*
 * Called at every chunk start, after the chunk's header was read and
 * checked and before anything in the chunk is decoded: the one moment
 * lzma2dec_ckpt_export works.  Returns 0 to go on, or a negative errno,
 * which stops the decoder (it fails with that error).
 */
typedef int (*lzma2dec_chunk_fn)(void *opaque, struct lzma2dec *d, const struct lzma2dec_chunk *c);

/*
 * The decoder's state at a chunk boundary, as plain data.  probs and window
 * belong to the checkpoint (lzma2dec_ckpt_release frees them); the struct
 * itself is the caller's.  Fields the chunk does not need (see above) are 0
 * and their arrays NULL.
 */
struct lzma2dec_ckpt {
	uint64_t uoff;	    /* uncompressed offset of the chunk */
	uint64_t coff;	    /* compressed offset of its control byte */
	uint64_t dpos;	    /* bytes decoded since the last dictionary reset */
	uint32_t dict_size; /* the dictionary size the decoder was opened with */
	uint8_t control;    /* the chunk's control byte; resuming checks it */
	uint8_t props;	    /* lc + 9 * (lp + 5 * pb), when has_props */
	uint8_t has_props;  /* 1: props, state and reps are set */
	uint8_t state;	    /* LZMA state, 0-11 */
	uint32_t rep[4];    /* rep0-rep3 (distances minus one) */
	uint32_t nprobs;    /* entries in probs: 0, or 1846 + 0x300 << (lc + lp) */
	uint32_t wlen;	    /* bytes in window */
	uint16_t *probs;    /* the probability model, or NULL */
	uint8_t *window;    /* the last wlen bytes decoded, oldest first, or NULL */
};

/*
 * A decoder at the start of the LZMA2 data.  dict_size is the Block
 * Header's LZMA2 dictionary size, which the caller may lower to the
 * Block's uncompressed size (no distance can reach further); like liblzma,
 * the decoder uses max(dict_size, 4 KiB) rounded up to 16 as its window,
 * and allocates it here.  ulimit: the most bytes the data may decode to
 * (the Index's Uncompressed Size); a chunk that would go past it fails.
 * pull and its opaque are borrowed for the decoder's life.
 * Returns 0 and *out, or -EINVAL (dict_size over LZMA2DEC_DICT_MAX, pull
 * NULL) or -ENOMEM, with *out NULL.
 */
int lzma2dec_new(uint32_t dict_size, uint64_t ulimit, lzma2dec_pull_fn pull, void *opaque,
		 struct lzma2dec **out);

/*
 * A decoder that goes on from checkpoint ck, as the decoder that exported
 * it would: the next byte read is uncompressed offset ck->uoff, and the
 * first pull is at ck->coff.  ck is only read during the call.  dict_size
 * is the caller's own (from the Block Header, capped as for lzma2dec_new):
 * it must equal ck->dict_size, so a damaged or foreign checkpoint cannot
 * size the window.  Returns 0 and *out, or, with *out NULL: -EINVAL (ck
 * inconsistent, as lzma2dec_ckpt_load checks, or of another dictionary
 * size; pull NULL), -ENOMEM.  If the chunk at ck->coff has another control
 * byte than ck->control, the first read fails with -EIO.
 */
int lzma2dec_resume(const struct lzma2dec_ckpt *ck, uint32_t dict_size, uint64_t ulimit,
		    lzma2dec_pull_fn pull, void *opaque, struct lzma2dec **out);

/* Bytes of the window a decoder of dict_size uses: max(dict_size, 4 KiB) rounded up to 16. */
uint32_t lzma2dec_window_size(uint32_t dict_size);

/*
 * lzma2dec_resume without copying the window: the decoder works in win,
 * a buffer of lzma2dec_window_size(dict_size) bytes whose first ck->wlen
 * bytes the caller has filled with the checkpoint's window (oldest
 * first); ck->window must be NULL.  win is lent, not given: the decoder
 * uses it until lzma2dec_free, which leaves it to the caller (who may
 * reuse it for the next decoder).  Its other bytes are never read before
 * the decoder writes them, and bytes of the window a correct stream never
 * reads may hold anything: a checkpoint that lies about them gives wrong
 * bytes, never an access outside win.  lzma2dec_memusage counts win.
 * Returns as lzma2dec_resume; also -EINVAL for win NULL or ck->window
 * set.  On failure win is still the caller's, untouched.
 */
int lzma2dec_resume_in(const struct lzma2dec_ckpt *ck, uint32_t dict_size, uint64_t ulimit,
		       lzma2dec_pull_fn pull, void *opaque, uint8_t *win, struct lzma2dec **out);

/* Sets (or, with fn NULL, clears) the chunk callback; opaque is borrowed. */
void lzma2dec_set_chunk_cb(struct lzma2dec *d, lzma2dec_chunk_fn fn, void *opaque);

/*
 * Called, from inside lzma2dec_read, for every read of earlier output that
 * decoding makes, before the bytes are used: src is the uncompressed
 * offset of the first byte read, len how many (1..273).  That is every
 * match (src, its whole length, once, even if it is copied in two calls),
 * every one-byte repeat, and the byte at rep0 a literal after a match is
 * coded against.  Not reported: the byte just before each literal (its
 * context), which is always the previous output byte.  So a decoder
 * resumed at uoff U from a window that is exact at every byte reported
 * by decoding at or past U, and at byte U - 1, decodes what this one does:
 * what a sparse checkpoint keeps (xzckpt.c).  Distances were checked
 * against the window before the call.  Unset, the hook costs one
 * predictable branch per match or matched literal (measured: no change in
 * tools/bench/lzma2-speed).
 */
typedef void (*lzma2dec_mark_fn)(void *opaque, uint64_t src, uint32_t len);

/* Sets (or, with fn NULL, clears) the mark callback; opaque is borrowed. */
void lzma2dec_set_mark_cb(struct lzma2dec *d, lzma2dec_mark_fn fn, void *opaque);

/*
 * From now on, reports only reads whose src is below `below` (after
 * lzma2dec_set_mark_cb: all): most matches read recent output, which a
 * checkpoint builder does not need, and skipping the call is what keeps
 * the build's cost near a plain decode.  Any time outside lzma2dec_read
 * or from the chunk callback.
 */
void lzma2dec_set_mark_below(struct lzma2dec *d, uint64_t below);

/* Bytes of memory the decoder holds: its struct (buffers, model) and its window. */
size_t lzma2dec_memusage(const struct lzma2dec *d);

/*
 * Decodes up to len bytes into buf.  Returns how many (len, unless the end
 * marker comes first), 0 once the end marker has been read (or for len 0),
 * or a negative error as listed above, with err (may be NULL) saying why
 * and where (err->coff: compressed offset of the chunk).  A call that fails
 * returns none of the bytes it decoded before the failure.  The chunk
 * callback runs from inside this call.
 */
ssize_t lzma2dec_read(struct lzma2dec *d, void *buf, size_t len, struct zerr *err);

/* Uncompressed bytes returned so far (counting from offset 0 of the data, also after resume). */
uint64_t lzma2dec_tell(const struct lzma2dec *d);

/* Compressed bytes consumed so far: after the end marker, the LZMA2 data's size. */
uint64_t lzma2dec_ctell(const struct lzma2dec *d);

/* Frees a decoder.  Accepts NULL. */
void lzma2dec_free(struct lzma2dec *d);

/*
 * Fills *ck with what resuming at the current chunk needs (see the table
 * above); only from inside the chunk callback.  Returns 0, or -EINVAL
 * (not inside the callback) or -ENOMEM, with *ck zeroed.  The caller
 * releases *ck with lzma2dec_ckpt_release.
 */
int lzma2dec_ckpt_export(const struct lzma2dec *d, struct lzma2dec_ckpt *ck);

/*
 * lzma2dec_ckpt_export without the window: ck->wlen says how many bytes
 * the window needs (the last wlen bytes before ck->uoff) but ck->window
 * stays NULL, for a caller that keeps the output itself and stores only
 * part of it.  It sets ck->window (malloc'd, wlen bytes; release frees
 * it) before lzma2dec_resume or lzma2dec_ckpt_save.
 */
int lzma2dec_ckpt_export_nowin(const struct lzma2dec *d, struct lzma2dec_ckpt *ck);

/* Frees ck's arrays and zeroes it.  Accepts a zeroed ck. */
void lzma2dec_ckpt_release(struct lzma2dec_ckpt *ck);

/* Bytes lzma2dec_ckpt_save writes for ck: 64 + 2 * nprobs + wlen. */
size_t lzma2dec_ckpt_size(const struct lzma2dec_ckpt *ck);

/*
 * Serialises ck into buf (len bytes; little-endian, versioned, no padding).
 * Returns the size written, or -ENOSPC if len is smaller than
 * lzma2dec_ckpt_size(ck).
 */
ssize_t lzma2dec_ckpt_save(const struct lzma2dec_ckpt *ck, void *buf, size_t len);

/*
 * Parses what lzma2dec_ckpt_save wrote (exactly len bytes) into *ck, which
 * the caller releases.  Checks everything a decoder relies on: the magic
 * and version, the sizes, lc/lp/pb, the state, every probability in
 * 1..2047, the window no longer than dpos or the dictionary.  Returns 0,
 * or -EINVAL (malformed) or -ENOMEM, with *ck zeroed.
 */
int lzma2dec_ckpt_load(const void *buf, size_t len, struct lzma2dec_ckpt *ck);

#endif
