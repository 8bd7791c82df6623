/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ZSTDSEQ_H
#define ZMOUNT_ZSTDSEQ_H

/*
 * zstd's entropy tables and sequences, as far as checkpoints need them
 * (RFC 8878, 3.1.1.3 and 4.1; codec-internal, used by zstdckpt_*.c): the
 * FSE table descriptions in force, FSE decoding tables, the sequences
 * bitstream (lengths and offsets only, no literals), the literals and
 * sequences section headers of a compressed block, and the window log
 * libzstd needs for a frame's window.  No I/O, no allocation, no libzstd
 * state: every function works on the bytes it is given.
 *
 * Errors: functions that read stream bytes return 0, or -EIO where those
 * bytes are malformed or run past the length given; they never read out of
 * bounds.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zstdckpt.h"

/* What a table in force came from: none yet, predefined, RLE, or a description. */
enum { ZSTDSEQ_T_NONE = 0, ZSTDSEQ_T_PREDEF, ZSTDSEQ_T_RLE, ZSTDSEQ_T_COMP };

/* A table in force, as the stream gave it. */
struct zstdseq_desc {
	uint8_t mode; /* ZSTDSEQ_T_* */
	uint8_t rle;  /* the symbol, for ZSTDSEQ_T_RLE */
	uint8_t dlen; /* desc bytes, for ZSTDSEQ_T_COMP */
	uint8_t desc[ZSTDCKPT_FSE_MAX];
};

struct zstdseq_cell {
	uint16_t base; /* next state's base */
	uint8_t sym;
	uint8_t nbits;
};

/* An FSE decoding table (accuracy log at most 9). */
struct zstdseq_fse {
	uint8_t log;
	struct zstdseq_cell cell[1u << 9];
};

/*
 * The repeat offsets are not followed block by block, which would cost
 * about as much as decoding (measured: doc/results/zstd-checkpoints.md).  At a
 * boundary they are what the last blocks with sequences left, and the
 * last one alone nearly always sets all three.  So the last
 * ZSTDSEQ_HIST such blocks are remembered (where their sequences are, and
 * the tables they were decoded with), and at a boundary the sequences of
 * the last 1, 2, ... of them are decoded, from offsets unknown (0), or
 * from the initial offsets when the frame's first such block is among
 * them, until all three offsets are known.
 */
#define ZSTDSEQ_HIST 8u

/* One remembered block with sequences. */
struct zstdseq_block {
	uint64_t coff; /* its sequences bitstream's file offset */
	uint32_t len;  /* and length */
	uint32_t n;    /* sequences */
	struct zstdseq_desc t[3];
};

/* The tables in force in a frame so far, and its last blocks with sequences. */
struct zstdseq_tables {
	struct zstdseq_desc t[3]; /* ZSTDCKPT_LL, _OF, _ML */
	uint16_t huf_len;	  /* 0: no Huffman table yet */
	uint8_t huf[ZSTDCKPT_HUF_MAX];
	uint64_t seq_blocks;			 /* blocks with sequences so far */
	struct zstdseq_block hist[ZSTDSEQ_HIST]; /* block k (from 0) in hist[k % ZSTDSEQ_HIST] */
};

/*
 * Where a block's matches go, for marking windows: pos is the output offset
 * of the next sequence's literals, and each match is handed to fn (which
 * returns 0 or -EIO) with its source offset, resolved.  end is the block's
 * output end, which the sequences must not pass; window bounds offsets.
 */
struct zstdseq_sink {
	uint64_t pos, end, window;
	int (*fn)(void *arg, uint64_t src, uint32_t len);
	void *arg;
};

/* log2 of the smallest power of two >= window, at least libzstd's minimum (ZSTD_d_windowLogMax). */
int zstdseq_window_log(uint64_t window);

/* Empties s: every table ZSTDSEQ_T_NONE, no Huffman table, no blocks. */
void zstdseq_tables_init(struct zstdseq_tables *s);

/*
 * Follows one compressed block body p[0..n), at file offset coff: updates
 * the tables in force and, if the block has sequences, remembers where
 * they are in s->hist.  0, or -EIO where the stream is malformed (s may
 * then be partly updated).
 */
int zstdseq_block_follow(struct zstdseq_tables *s, const uint8_t *p, size_t n, uint64_t coff);

/*
 * For a compressed block body p[0..n): which tables (bit k for ZSTDCKPT_k)
 * its sequences repeat, in *rep; *has_seq says whether it has sequences.
 * 0 or -EIO.
 */
int zstdseq_block_repeats(const uint8_t *p, size_t n, unsigned *rep, bool *has_seq);

/* Builds the decoding table t of kind k (ZSTDCKPT_*) for the table in force d.  0 or -EIO. */
int zstdseq_fse_make(struct zstdseq_fse *t, int k, const struct zstdseq_desc *d);

/*
 * Decodes nseq sequences from the bitstream p[0..len) with decoding tables
 * t[3], running the repeat offsets rep[3] through them (0 stands for an
 * offset not known, as libzstd computes them), and, if k is not NULL,
 * hands each match to k.  0, or -EIO (malformed, or k refused a match).
 */
int zstdseq_decode(const struct zstdseq_fse *t, const uint8_t *p, size_t len, uint32_t nseq,
		   uint32_t *rep, struct zstdseq_sink *k);

/*
 * Writes the tables in force of s into ck as a dictionary can state them:
 * FSE descriptions (a predefined table, or one not set yet, as the
 * predefined distribution; an RLE table likewise, which the caller must
 * only do when the next block replaces it) and the Huffman description
 * (a one-weight stand-in when the frame has none yet).  Sets ck->fse_len,
 * ck->fse, ck->huf_len and ck->huf only.
 */
void zstdseq_describe(const struct zstdseq_tables *s, struct zstdckpt *ck);

#endif
