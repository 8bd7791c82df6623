/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_XZDEC_H
#define ZMOUNT_XZDEC_H

/*
 * The .xz format, wrapped: the only file besides gzdec.c that sees liblzma.
 *
 * xzdec_index_read() walks the file backwards from EOF, one Stream at a
 * time (Stream Footer, Index, Stream Header, Stream Padding), and returns
 * a flat list of Blocks without decompressing anything.  xzdec_dec_*
 * decode one Block on its own, given its entry from that list.
 * xzdec_index_scan() builds the same list the slow way, by decoding the
 * file forward, for salvaging a file whose Index is gone or whose Blocks
 * are damaged (its entries' sizes come from the decoded data).
 *
 * Every size in a Block entry comes from the file's Index and is therefore
 * untrusted until the Block decodes: the decoder is told the Index's sizes,
 * so a Block Header or a data stream that disagrees with them fails with
 * -EIO instead of writing past the caller's buffer.
 *
 * Threads: an xzdec_index is immutable after xzdec_index_read returns and
 * may be read from any thread.  An xzdec_dec belongs to one thread at a
 * time.  All I/O is zsrc_pread on a caller-owned source, so any number of decoders
 * may share one src.
 *
 * Descriptors: a decoder never holds a file descriptor.  The caller passes
 * the src to each call that reads (xzdec_dec_open, xzdec_dec_read), so a
 * decoder kept after its file was closed cannot read whatever file reuses
 * the number: the caller decides which src it reads, on every call.  The
 * src must be the same file (the same version of it) on every call for one
 * decoder; the decoder cannot check that.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src.h"

#include "zerr.h"

/* Check types as numbered by the format (xz's "Check ID"). */
#define XZDEC_CHECK_NONE   0x00
#define XZDEC_CHECK_CRC32  0x01
#define XZDEC_CHECK_CRC64  0x04
#define XZDEC_CHECK_SHA256 0x0A

/*
 * LZMA2 never expands one compressed byte into more than about 7,000 (a run
 * of zeros at -9 gives 6,860).  A Block whose Index sizes claim more than
 * this is lying, and is refused before its dictionary is sized from them.
 */
#define XZDEC_MAX_RATIO 16384u

/*
 * The largest uncompressed size of a whole file: what an off_t (st_size)
 * can hold.  liblzma's own limit for a VLI is the same number.
 */
#define XZDEC_MAX_USIZE ((uint64_t)INT64_MAX)

struct xzdec_block {
	uint64_t coff;	   /* file offset of the Block Header */
	uint64_t csize;	   /* Total Size: header + data + padding + check */
	uint64_t unpadded; /* Unpadded Size, as the Index says */
	uint64_t uoff;	   /* offset in the whole file's uncompressed output */
	uint64_t usize;	   /* Uncompressed Size, as the Index says */
	uint32_t stream;   /* 0-based number of the Stream holding it */
	uint16_t check;	   /* Check ID of that Stream */
	/*
	 * 1 (only from xzdec_index_scan): the file ends inside this Block,
	 * the last one.  usize is then what its data decodes to before that
	 * end, csize runs to the end of the file, unpadded is 0, and its
	 * Check was never read: these bytes are not verified.
	 */
	uint16_t cut;
};

struct xzdec_index {
	uint64_t usize;	   /* sum of all Blocks' usize */
	uint64_t csize;	   /* file size */
	uint32_t nstreams; /* Streams, including empty ones */
	uint64_t padding;  /* Stream Padding bytes in all */
	uint32_t checks;   /* bit mask: 1u << Check ID, for every Stream */
	size_t nblocks;
	struct xzdec_block *blocks; /* nblocks entries, in file order */
	/*
	 * Set only by xzdec_index_scan; 0 from xzdec_index_read (and from
	 * a scan of an undamaged file).
	 */
	int salvaged;	      /* 1: the file is damaged; blocks stop before the damage */
	uint64_t damage_coff; /* compressed offset where the damage was seen (err->coff) */
};

/*
 * Reads the Indexes of every Stream in src (size bytes long).
 * On success returns 0 and *out, which the caller frees with
 * xzdec_index_free; then idx->usize <= XZDEC_MAX_USIZE, and so is every
 * Block's uoff + usize, which therefore fits an off_t.
 * On failure *out is NULL, err says why, and it returns:
 *   -EINVAL  not .xz, or its Stream/Index structure is corrupt, or its
 *            uncompressed sizes add up to more than XZDEC_MAX_USIZE (a
 *            "bad" file), or reserved Stream Flags (a future format
 *            version), or the file is cut short: it starts with a Stream
 *            Header but does not end with a Stream Footer (nor with
 *            Stream Padding), as a file still being written does; then
 *            err->cut is 1 and err says so in zerr_cut's words;
 *   -ENOMEM  out of memory, or the Index needs more than 64 MiB to decode,
 *            which for a corrupt Index claiming huge record counts means a
 *            bad file rather than a busy machine;
 *   -EIO     pread failed or the file is shorter than its footers say.
 */
int xzdec_index_read(struct zsrc *src, uint64_t size, struct xzdec_index **out, struct zerr *err);

/*
 * xzdec_index_read, refusing a file of more than max_blocks Blocks (0: no
 * limit but the 64 MiB one) before building anything per Block: liblzma's
 * own Index is capped at what max_blocks records need.  Returns -E2BIG for
 * such a file, else as xzdec_index_read.
 */
int xzdec_index_read_max(struct zsrc *src, uint64_t size, size_t max_blocks,
			 struct xzdec_index **out, struct zerr *err);

/*
 * The largest LZMA dictionary a decoder (xzdec_dec_open, xzdec_index_scan)
 * allocates, after capping it at what the Block can hold: zstd's default
 * window limit, twice what xz -9 uses.  Every decoding thread may hold one,
 * so this is what bounds a decoder's memory against a 15 KiB file whose
 * Block Header asks for 4 GiB and whose Index claims a Block big enough.
 */
#define XZDEC_DICT_MAX (128u << 20)
/* The most Blocks xzdec_index_scan lists: 64 MiB of them, as for an Index. */
#define XZDEC_SCAN_MAX_BLOCKS ((64u << 20) / sizeof(struct xzdec_block))

/*
 * Salvage: builds the index of src (size bytes long) by decoding it forward
 * from the first Stream Header, for a file whose Index or Stream Footer
 * cannot be read (typically a file cut short by a crash) or whose Blocks
 * may be corrupt.  It reads each Block Header, decodes the Block to its
 * end (the sizes come from the data, checked against the header's if it
 * has them), and verifies its Padding and Check; at each Index it checks
 * the Index against the Blocks decoded (lzma_index_hash), then the Stream
 * Footer and Stream Padding, and goes on to the next Stream.
 *
 * Returns 0 and *out (free with xzdec_index_free) in two cases:
 *  - the whole file is sound: salvaged = 0, and the index is the one
 *    xzdec_index_read gives (same Blocks, Streams, padding, checks);
 *  - something fails after the first Stream Header: salvaged = 1 and the
 *    index holds every Block before the failure that decoded whole and
 *    passed its Check, in file order, with uoff/usize/coff/csize/unpadded
 *    exact, so xzdec_dec_open/xzdec_dec_read read them as usual; usize is
 *    their sum (possibly 0, with nblocks 0); damage_coff and err (message
 *    and coff, set although the call returned 0) say what failed where.
 *    If the failure is the file ending inside a Block's data, Padding or
 *    Check (a file cut short, or still being written), that Block is kept
 *    too, as the last, with cut = 1 and usize the bytes its data decoded
 *    to before the end (if any), and err->cut is 1: the whole index then
 *    reads as exactly what `xz -dc` prints before its error.
 *    What counts as failure: the file ending anywhere before the end of a
 *    Stream (inside a Block, before or inside an Index, inside a Footer),
 *    corrupt Block data, Padding or Check, a corrupt Block Header, a
 *    corrupt or disagreeing Index, Footer or Stream Padding, bytes after a
 *    Stream that are not another Stream, and also Blocks that are not
 *    damaged but cannot be decoded here: an unsupported filter, a
 *    dictionary over XZDEC_DICT_MAX, output past XZDEC_MAX_USIZE, or a
 *    Block after the first XZDEC_SCAN_MAX_BLOCKS.
 * A Block that fails for damage (corrupt data, Padding or Check) is
 * dropped whole: the bytes it decodes before its failure are not kept,
 * though `xz -dc` prints them before its error, because they are wrong or
 * unverifiable.  A Block the file ends inside is kept (cut = 1) without
 * its Check, as `xz -dc` prints it: a cut changes no byte before the cut,
 * and this is how a log still being written shows its newest lines.  Only
 * the start of that one Block is unverified.
 * A Block's Check is verified when liblzma supports its type; a Stream
 * with Check None (or an unsupported type, see idx->checks) gives Blocks
 * that decoded without error but are not verified.  Blocks of a Stream
 * whose Index turns out bad stay in the index: their own Checks passed.
 *
 * Fails, with *out NULL and err set:
 *   -EINVAL  not .xz: the first Stream Header is missing, corrupt or
 *            has reserved flags (nothing to salvage), or size > INT64_MAX;
 *   -ENOMEM  out of memory (for the Block list or the decoders);
 *   -EIO     pread failed.
 *
 * Cost: the whole file is decoded once, one Block at a time, into a 64 KiB
 * scratch buffer; memory is one decoder (its dictionary, at most
 * XZDEC_DICT_MAX, is capped by the Block's uncompressed size when the header
 * gives it, and always by XZDEC_MAX_RATIO times the compressed bytes it
 * can have), two 64 KiB buffers and the Block list (at most 64 MiB).  No
 * recursion.  Time is one full decode, as for a gzip index build.
 * Threads: like xzdec_index_read, it touches nothing shared but src.
 */
int xzdec_index_scan(struct zsrc *src, uint64_t size, struct xzdec_index **out, struct zerr *err);

/* Frees an index.  Accepts NULL. */
void xzdec_index_free(struct xzdec_index *idx);

struct xzdec_dec;

/*
 * A small stock of freed decoder buffers (at most 8 of them, 8 MiB in all)
 * that later decoders of the same size reuse: large allocations are fresh
 * mappings, and faulting a dictionary's pages in again for every Block
 * costs more than decoding a small one.  The caller owns it and lends it to
 * every decoder it opens; it must outlive them.  Any thread may use it.
 * xzdec_spares_new returns 0, or -ENOMEM with *out NULL; xzdec_spares_free
 * frees the buffers it holds and accepts NULL; xzdec_spares_bytes says how
 * many bytes it holds now.
 */
struct xzdec_spares;
int xzdec_spares_new(struct xzdec_spares **out);
void xzdec_spares_free(struct xzdec_spares *sp);
size_t xzdec_spares_bytes(struct xzdec_spares *sp);

/*
 * The stock for another decoder of the same sizes (xzckpt's LZMA2
 * windows): xzdec_spares_get returns n bytes (contents undefined), taken
 * from sp's stock if it holds a buffer of exactly n bytes, else
 * allocated (1 MiB or more: on huge pages, hugemem.h), or NULL; sp may
 * be NULL.  Give it back only with
 * xzdec_spares_put (not free: the buffer has a header), to the same sp,
 * which keeps it while the stock has room and else frees it; p NULL does
 * nothing.  Any thread.
 */
void *xzdec_spares_get(struct xzdec_spares *sp, size_t n);
void xzdec_spares_put(struct xzdec_spares *sp, void *p);

/*
 * Prepares to decode Block b of src from its start.  b is copied; a Block
 * with cut = 1 (from xzdec_index_scan) is decoded to its usize bytes and
 * no further, unverified (its Check is not in the file).  sp (may
 * be NULL: plain malloc) is borrowed for the decoder's life.  src is
 * only used during this call, to read the Block Header and check it
 * against b (sizes, Unpadded Size); the decoder does not keep it.
 * Returns 0 and *out, or, with *out NULL and err set:
 *   -EIO     corrupt or disagreeing Block Header, an Index claiming more
 *            than XZDEC_MAX_RATIO bytes per compressed byte, or pread failed;
 *   -ENOTSUP a filter or option liblzma does not support, or a dictionary
 *            over XZDEC_DICT_MAX once capped;
 *   -ENOMEM  out of memory.
 * The LZMA2 dictionary is capped at the Block's usize, so a small Block
 * never allocates the large dictionary its header may ask for.
 */
int xzdec_dec_open(struct zsrc *src, const struct xzdec_block *b, struct xzdec_spares *sp,
		   struct xzdec_dec **out, struct zerr *err);

/*
 * Decodes the next min(len, remaining) bytes of the Block into buf and
 * returns how many that is (0 once the whole Block has been returned).
 * Compressed input is read from src with zsrc_pread during this call only; src
 * must refer to the file xzdec_dec_open read the header from (the caller
 * checks that: a different file gives -EIO, or bytes that are wrong and
 * that only the Block's Check, if it has one, catches at the Block's end).
 * The call that returns the Block's last byte first reads and verifies the
 * Block Padding and Check, so a positive return that reaches the end of the
 * Block means the Check passed.  An unsupported Check ID is skipped without
 * any signal: callers that want to warn must look at b->check themselves.
 * On failure returns, with err set (coff is the compressed offset reached):
 *   -EIO     corrupt data, a size that disagrees with the Index, a Check
 *            mismatch, or a failed or short pread;
 *   -ENOMEM  out of memory.
 * After a failure the decoder may only be closed.
 */
ssize_t xzdec_dec_read(struct xzdec_dec *d, struct zsrc *src, void *buf, size_t len,
		       struct zerr *err);

/*
 * Decodes Block b of src to its end, discarding the bytes, and verifies its
 * Padding and Check: for a Block no reader asks bytes of, one whose Index
 * says it holds 0 bytes.  Such a Block that holds more fails at its first
 * decoded byte, having read no more than its compressed size (as the Index
 * says).  sp as for xzdec_dec_open.  Returns 0, or as xzdec_dec_open and
 * xzdec_dec_read, with err set.
 */
int xzdec_block_verify(struct zsrc *src, const struct xzdec_block *b, struct xzdec_spares *sp,
		       struct zerr *err);

/* Uncompressed bytes returned so far from this Block. */
uint64_t xzdec_dec_tell(const struct xzdec_dec *d);

/* Frees a decoder.  Accepts NULL. */
void xzdec_dec_close(struct xzdec_dec *d);

/* Bytes the decoder holds now (its dictionary and state): what keeping it parked costs. */
size_t xzdec_dec_memusage(const struct xzdec_dec *d);

/* "None", "CRC32", "CRC64", "SHA-256", "Unknown-N" (N < 16) or "Unknown"; static storage. */
const char *xzdec_check_name(uint32_t check);

/*
 * Whether the n bytes at head (the start of a file; n may be short) begin
 * with an xz Stream Header's magic, FD 37 7A 58 5A 00.  The magic decides,
 * never the name (fmt_xz.c's sniff).
 */
bool xzdec_magic(const void *head, size_t n);

#endif
