/* SPDX-License-Identifier: MIT */
/*
 * How it works.
 *
 * Build: libzstd's streaming decoder is fed the frame one block at a time
 * (header, then each block's 3-byte header and body, then the checksum), so
 * that after each feed its output is exactly that block's bytes; they go
 * into a ring of Window_Size bytes, which is the window at every boundary.
 * Before each compressed block is fed, it is parsed here (RFC 8878,
 * 3.1.1.3): the literals section header gives the Huffman table
 * description, if any, and the section's size; the sequences section header
 * gives the FSE table descriptions or modes, and where the sequences
 * bitstream lies.  At a boundary past the next span, the bitstream of the
 * last block with sequences is decoded (FSE states and extra bits only, no
 * literals, no copies) to learn the three repeat offsets (3.1.1.5), the
 * one part of the state that nothing in the stream states outright; then
 * the tables in force, the offsets and the ring go to the caller's fn.
 *
 * Resume: the checkpoint is written as a zstd dictionary (RFC 8878, 5:
 * magic, ID, Huffman description, FSE descriptions for OF, ML, LL, the
 * three offsets, content = the window) into a ring of window + 2 blocks,
 * directly before where the next block's output goes, so that after
 * ZSTD_decompressBegin_usingDict the window is a contiguous prefix of the
 * output.  Blocks are then decoded in place: compressed ones with
 * ZSTD_decompressBlock, raw and RLE ones written here and announced with
 * ZSTD_insertBlock.  The ring wraps, as libzstd's own stream buffer does,
 * when fewer than a block and its literals' overrun remain; libzstd then
 * sees the previous lap as its "external dictionary", of which the last
 * Window_Size bytes are intact because the ring has two blocks' slack.
 *
 * Table modes a dictionary cannot say directly: a predefined table becomes
 * its distribution written as a description (the constants below, from
 * RFC 8878 3.1.1.3.2.2); a table not set yet in the frame (a repeat of it
 * would be corrupt data) becomes the same.  An RLE table cannot be written
 * (accuracy log 0 is not describable); it stands in as predefined only
 * when the next block with sequences replaces it (checked by reading ahead).
 *
 * Blobs (zstdckpt_build_blobs): a point becomes pending with a bitmap over
 * its window; the sequences of every block within a window after a
 * pending point are decoded in full (lengths, offsets with repeat codes
 * resolved), and each match's source below the point's uoff is marked.  A
 * window byte x is settled once the output passes x + window (no later
 * match reaches it), and kept bytes are copied out before the ring, one
 * window plus one block, overwrites them.  At uoff + window (or the
 * frame's verified end) the runs and bytes are compressed into the blob.
 */
#define ZSTD_STATIC_LINKING_ONLY /* block API: exported by libzstd.so 1.5.4 */
#include "zstdckpt.h"
#include "hugemem.h"
#include "src.h"

#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zlib.h> /* crc32 of a blob */
#include <zstd_errors.h>

#define BLOCK_MAX  ZSTDDEC_BLOCK_MAX
#define IN_CAP	   (512u << 10) /* compressed input buffer: >= 3 + BLOCK_MAX */
#define SLACK	   64u		/* margin past a block, as libzstd's buffers keep (wild copies) */
#define DICT_MAGIC 0xEC30A437u
#define DICT_HMAX  (8 + ZSTDCKPT_HUF_MAX + 3 * ZSTDCKPT_FSE_MAX + 12)
#define PEEK_MAX   64u /* blocks read ahead for an RLE table, before giving up */

/* ------------------------------------------------------------------------ */
/* Constants of the format. */

static const uint8_t max_sym[3] = { 35, 31, 52 }; /* LL, OF, ML */
static const uint8_t max_log[3] = { 9, 8, 9 };
static const uint8_t ll_bits[36] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0,  0,  0,  0,  1,  1,
				     1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t ml_bits[53] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0,  0,  0,  0,  0,  0, 0,
				     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0,  0,  0,  1,  1,  1, 1,
				     2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
/* Baselines of the literal length and match length codes (RFC 8878, 3.1.1.3.2.1.1). */
static const uint32_t ll_base[36] = { 0,   1,	2,    3,    4,	  5,	6,     7,     8,
				      9,   10,	11,   12,   13,	  14,	15,    16,    18,
				      20,  22,	24,   28,   32,	  40,	48,    64,    128,
				      256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536 };
static const uint32_t ml_base[53] = { 3,   4,	5,    6,    7,	  8,	9,     10,    11,   12, 13,
				      14,  15,	16,   17,   18,	  19,	20,    21,    22,   23, 24,
				      25,  26,	27,   28,   29,	  30,	31,    32,    33,   34, 35,
				      37,  39,	41,   43,   47,	  51,	59,    67,    83,   99, 131,
				      259, 515, 1027, 2051, 4099, 8195, 16387, 32771, 65539 };

/* The predefined distributions written as FSE table descriptions. */
static const uint8_t predef_ll[] = { 0x51, 0x10, 0x63, 0x8c, 0x31, 0xc6, 0x18, 0x63, 0x0c, 0x21,
				     0xc4, 0x18, 0x63, 0x66, 0x66, 0x86, 0x46, 0x92, 0x04, 0x00 };
static const uint8_t predef_of[] = { 0x20, 0x84, 0x10, 0x42, 0x66, 0x46, 0x44,
				     0x44, 0x44, 0x44, 0x24, 0x49, 0x02, 0x00 };
static const uint8_t predef_ml[] = { 0x21, 0x14, 0xc4, 0x18, 0x63, 0x8c, 0x21, 0x84, 0x10, 0x42,
				     0x08, 0x21, 0x84, 0x10, 0x42, 0x08, 0x21, 0x44, 0x44, 0x44,
				     0x44, 0x44, 0x44, 0x44, 0x44, 0x24, 0x09, 0x00, 0x00 };
static const struct {
	const uint8_t *p;
	uint8_t len;
} predef[3] = { { predef_ll, sizeof(predef_ll) },
		{ predef_of, sizeof(predef_of) },
		{ predef_ml, sizeof(predef_ml) } };

/* A Huffman description for "no table yet": weights 1 and (implied) 1. */
static const uint8_t huf_none[] = { 0x80, 0x10 };

static uint64_t le_n(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

static unsigned highbit(uint32_t v)
{
	return 31u - (unsigned)__builtin_clz(v);
}

/*
 * Rings, zeroed.  Those of huge_min bytes or more are backed by
 * transparent huge pages where the kernel allows it (MADV_HUGEPAGE): a
 * sparse window touches pages all over a ring of up to 128 MiB, and the
 * page faults, not the copying, were the cost of a resume (measured: 200 ms
 * of faults for 10,000 runs over a 100 MiB window in a VM).  The build's
 * ring is written whole, so huge pages only save faults there.
 * ring_free takes the same length and huge_min.
 */
#define HUGE_MIN_DEC                                                                               \
	(16ull << 20) /* below: calloc (zeroing 2 MiB pages cost more than the faults) */

static void *ring_alloc(size_t len, size_t huge_min)
{
	return len < huge_min ? calloc(1, len) : hugemem_alloc(len);
}

static void ring_free(void *p, size_t len, size_t huge_min)
{
	if (len < huge_min)
		free(p);
	else
		hugemem_free(p, len);
}

/* ------------------------------------------------------------------------ */
/* Input: a read-through buffer over [f->coff, f->coff + f->csize). */

struct inbuf {
	uint64_t end;  /* the frame's end: nothing past it is read */
	uint64_t boff; /* file offset of buf[0] */
	size_t blen;
	uint8_t *buf; /* IN_CAP bytes */
};

/* Points *p at n (<= IN_CAP) contiguous bytes at off.  0, or -EIO. */
static int in_get(struct inbuf *b, struct zsrc *src, uint64_t off, size_t n, const uint8_t **p,
		  struct zerr *err)
{
	if (off > b->end || b->end - off < n)
		return zerr_set(err, -EIO, off, "block runs past the frame's end");
	if (off < b->boff || off + n > b->boff + b->blen) {
		size_t want = b->end - off < IN_CAP ? (size_t)(b->end - off) : IN_CAP;
		ssize_t got = zsrc_pread(src, b->buf, want, off);

		b->boff = off;
		b->blen = got > 0 ? (size_t)got : 0;
		if (got < (ssize_t)n)
			return zerr_set(err, -EIO, off, "reading: %s",
					got < 0 ? strerror((int)-got) : "file is truncated");
	}
	*p = b->buf + (off - b->boff);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* FSE tables (RFC 8878, 4.1). */

enum { T_NONE = 0, T_PREDEF, T_RLE, T_COMP };

struct fse_cell {
	uint16_t base; /* next state's base */
	uint8_t sym;
	uint8_t nbits;
};

/* A table in force, as the stream gave it. */
struct fse_desc {
	uint8_t mode; /* T_*: what the table in force came from */
	uint8_t rle;  /* the symbol, for T_RLE */
	uint8_t dlen; /* desc bytes, for T_COMP */
	uint8_t desc[ZSTDCKPT_FSE_MAX];
};

/* A decoding table. */
struct fse {
	uint8_t log;
	struct fse_cell cell[1u << 9];
};

/* Forward bit reader for descriptions: bits past the end read as 0. */
static uint32_t bits_at(const uint8_t *p, size_t len, size_t bit, unsigned n)
{
	uint32_t v = 0;

	for (unsigned i = 0; i < n; i++) {
		size_t k = bit + i;

		if ((k >> 3) < len)
			v |= (uint32_t)((p[k >> 3] >> (k & 7)) & 1) << i;
	}
	return v;
}

/*
 * Reads a description (4.1.1) from p[0..len) into norm[0..max_sym]; sets
 * *log and *used (bytes).  0, or -EIO if it is malformed or runs past len.
 */
static int fse_read_desc(const uint8_t *p, size_t len, int t, int16_t *norm, unsigned *log,
			 size_t *used)
{
	size_t bit = 4;
	int remaining, threshold, nb;
	unsigned s = 0;
	bool prev0 = false;

	if (len < 1)
		return -EIO;
	*log = (p[0] & 15) + 5;
	if (*log > max_log[t])
		return -EIO;
	remaining = (1 << *log) + 1;
	threshold = 1 << *log;
	nb = (int)*log + 1;
	memset(norm, 0, (max_sym[t] + 1u) * sizeof(*norm));
	while (remaining > 1) {
		int max, c;
		uint32_t low;

		while (prev0) {
			uint32_t r = bits_at(p, len, bit, 2);

			bit += 2;
			s += r;
			prev0 = r == 3;
		}
		if (s > max_sym[t])
			return -EIO;
		max = (2 * threshold - 1) - remaining;
		low = bits_at(p, len, bit, (unsigned)nb - 1);
		if ((int)low < max) {
			c = (int)low;
			bit += (size_t)nb - 1;
		} else {
			c = (int)bits_at(p, len, bit, (unsigned)nb);
			bit += (size_t)nb;
			if (c >= threshold)
				c -= max;
		}
		c--;
		remaining -= c < 0 ? -c : c;
		norm[s++] = (int16_t)c;
		prev0 = c == 0;
		while (remaining < threshold) {
			nb--;
			threshold >>= 1;
		}
	}
	if (remaining != 1 || (bit + 7) / 8 > len || (bit + 7) / 8 > ZSTDCKPT_FSE_MAX)
		return -EIO;
	*used = (bit + 7) / 8;
	return 0;
}

/* Builds the decoding table (4.1.1, "FSE Decoding Tables").  0 or -EIO. */
static int fse_build(struct fse *t, const int16_t *norm, unsigned nsym, unsigned log)
{
	unsigned size = 1u << log, high = size - 1, pos = 0;
	unsigned step = (size >> 1) + (size >> 3) + 3;
	uint16_t next[53];

	for (unsigned s = 0; s < nsym; s++) {
		if (norm[s] == -1) {
			t->cell[high--].sym = (uint8_t)s;
			next[s] = 1;
		} else {
			next[s] = (uint16_t)(norm[s] > 0 ? norm[s] : 0);
		}
	}
	for (unsigned s = 0; s < nsym; s++) {
		for (int i = 0; i < norm[s]; i++) {
			t->cell[pos].sym = (uint8_t)s;
			do
				pos = (pos + step) & (size - 1);
			while (pos > high);
		}
	}
	if (pos != 0)
		return -EIO;
	for (unsigned u = 0; u < size; u++) {
		uint16_t n = next[t->cell[u].sym]++;
		unsigned nbits = log - highbit(n);

		t->cell[u].nbits = (uint8_t)nbits;
		t->cell[u].base = (uint16_t)((n << nbits) - size);
	}
	t->log = (uint8_t)log;
	return 0;
}

/* Builds the decoding table t of kind k (ZSTDCKPT_*) for the table in force d. */
static int fse_make(struct fse *t, int k, const struct fse_desc *d)
{
	int16_t norm[53];
	unsigned log;
	size_t used;
	int ret;

	if (d->mode == T_RLE) {
		t->log = 0;
		t->cell[0] = (struct fse_cell){ 0, d->rle, 0 };
		return 0;
	}
	if (d->mode == T_COMP)
		ret = fse_read_desc(d->desc, d->dlen, k, norm, &log, &used);
	else
		ret = fse_read_desc(predef[k].p, predef[k].len, k, norm, &log, &used);
	return ret ? ret : fse_build(t, norm, max_sym[k] + 1u, log);
}

/* ------------------------------------------------------------------------ */
/* The state that the stream does not carry in one place. */

/*
 * The repeat offsets are not followed block by block, which would cost
 * about as much as decoding (measured: doc/results/zstd-checkpoints.md).  At a
 * boundary they are what the last blocks with sequences left, and the
 * last one alone nearly always sets all three.  So the last SEQ_HIST such
 * blocks are remembered (where their sequences are, and the tables they
 * were decoded with), and at a boundary the sequences of the last 1, 2, ...
 * of them are decoded, from offsets unknown (0), or from the initial
 * offsets when the frame's first such block is among them, until all three
 * offsets are known.
 */
#define SEQ_HIST 8u

struct seqblock {
	uint64_t coff; /* its sequences bitstream's file offset */
	uint32_t len;  /* and length */
	uint32_t n;    /* sequences */
	struct fse_desc t[3];
};

struct tables {
	struct fse_desc t[3];
	uint16_t huf_len;
	uint8_t huf[ZSTDCKPT_HUF_MAX];
	uint64_t seq_blocks;		/* blocks with sequences so far */
	struct seqblock hist[SEQ_HIST]; /* block k (counting from 0) in hist[k % SEQ_HIST] */
};

static void tables_init(struct tables *s)
{
	memset(s, 0, sizeof(*s)); /* every table T_NONE, no blocks */
}

/* Backward bit reader of a sequences bitstream (4.1, "Bitstream"). */
struct bitr {
	const uint8_t *p;
	size_t len;
	int64_t pos; /* bits not read yet: [0, pos) */
};

static uint32_t br_read(struct bitr *b, unsigned n)
{
	uint64_t v = 0;
	size_t first;

	if (n == 0)
		return 0;
	b->pos -= n;
	if (b->pos < 0)
		return 0; /* overrun: caught by the end check */
	first = (size_t)b->pos >> 3;
	if (first + 8 <= b->len) {
		memcpy(&v, b->p + first, 8);
		v = le64toh(v);
	} else {
		for (size_t i = 0; first + i < b->len; i++)
			v |= (uint64_t)b->p[first + i] << (8 * i);
	}
	return (uint32_t)((v >> (b->pos & 7)) & ((1ull << n) - 1));
}

/* The offsets after one sequence (3.1.1.5), the way libzstd computes them; 0 is unknown. */
static void rep_update(uint32_t *rep, uint32_t offval, bool ll0)
{
	unsigned idx;
	uint32_t off;

	if (offval > 3) {
		rep[2] = rep[1];
		rep[1] = rep[0];
		rep[0] = offval - 3;
		return;
	}
	idx = offval - 1 + ll0;
	if (idx == 0)
		return;
	if (idx == 3)
		off = rep[0] ? rep[0] - 1 + (rep[0] == 1) : 0; /* libzstd makes 0 a 1 */
	else
		off = rep[idx];
	if (idx != 1)
		rep[2] = rep[1];
	rep[1] = rep[0];
	rep[0] = off;
}

/*
 * Where a block's matches go, for marking windows: pos is the output offset
 * of the next sequence's literals, and each match is handed to fn (which
 * returns 0 or -EIO) with its source offset, resolved.  end is the block's
 * output end, which the sequences must not pass.
 */
struct seq_sink {
	uint64_t pos, end, window;
	int (*fn)(void *arg, uint64_t src, uint32_t len);
	void *arg;
};

static int seq_put(struct seq_sink *k, uint32_t off, uint32_t ll, uint32_t ml)
{
	k->pos += ll;
	if (off == 0 || off > k->pos || off > k->window || ml > k->end - k->pos || k->pos > k->end)
		return -EIO;
	k->pos += ml;
	return k->fn(k->arg, k->pos - ml - off, ml);
}

/*
 * Decodes nseq sequences from p[0..len) with tables t for their offsets,
 * and, if k is not NULL, hands each match to k.  0 or -EIO.
 */
static int seq_decode(const struct fse *t, const uint8_t *p, size_t len, uint32_t nseq,
		      uint32_t *rep, struct seq_sink *k)
{
	const struct fse *ll = &t[ZSTDCKPT_LL], *of = &t[ZSTDCKPT_OF], *ml = &t[ZSTDCKPT_ML];
	struct bitr b = { p, len, 0 };
	uint32_t sl, so, sm;

	if (len == 0 || p[len - 1] == 0)
		return -EIO;
	b.pos = (int64_t)(8 * (len - 1) + highbit(p[len - 1]));
	sl = br_read(&b, ll->log);
	so = br_read(&b, of->log);
	sm = br_read(&b, ml->log);
	for (uint32_t i = 0; i < nseq; i++) {
		const struct fse_cell *cl = &ll->cell[sl], *co = &of->cell[so], *cm = &ml->cell[sm];
		uint32_t offval, mlv, llv;

		if (co->sym > 31 || cl->sym > 35 || cm->sym > 52)
			return -EIO;
		offval = (1u << co->sym) + br_read(&b, co->sym);
		mlv = ml_base[cm->sym] + br_read(&b, ml_bits[cm->sym]);
		llv = ll_base[cl->sym] + br_read(&b, ll_bits[cl->sym]);
		rep_update(rep, offval, cl->sym == 0);
		if (k && seq_put(k, rep[0], llv, mlv))
			return -EIO;
		if (i + 1 < nseq) {
			sl = cl->base + br_read(&b, cl->nbits);
			sm = cm->base + br_read(&b, cm->nbits);
			so = co->base + br_read(&b, co->nbits);
		}
		if (b.pos < 0)
			return -EIO;
	}
	return b.pos == 0 ? 0 : -EIO;
}

/*
 * Literals section header (3.1.1.3.1.1): sets *size (the whole section) and,
 * for a Compressed_Literals_Block, *huf and *huf_len (its tree description).
 */
static int lit_header(const uint8_t *p, size_t n, size_t *size, const uint8_t **huf,
		      size_t *huf_len)
{
	unsigned type = p[0] & 3, sf = (p[0] >> 2) & 3, hl;
	uint64_t v;

	*huf = NULL;
	if (type < 2) {
		size_t regen;

		hl = (sf & 1) == 0 ? 1 : sf == 1 ? 2 : 3;
		if (n < hl)
			return -EIO;
		regen = hl == 1 ? p[0] >> 3 : (size_t)(le_n(p, hl) >> 4);
		*size = hl + (type == 0 ? regen : 1);
	} else {
		size_t csize;

		hl = sf < 2 ? 3 : sf + 2;
		if (n < hl)
			return -EIO;
		v = le_n(p, hl);
		csize = hl == 3	  ? (v >> 14) & 0x3FF
			: hl == 4 ? (v >> 18) & 0x3FFF
				  : (v >> 22) & 0x3FFFF;
		*size = hl + csize;
		if (type == 2) {
			size_t h;

			if (csize < 1 || n <= hl)
				return -EIO;
			h = p[hl];
			*huf_len = h < 128 ? 1 + h : 1 + (h - 127 + 1) / 2;
			if (*huf_len > csize)
				return -EIO;
			*huf = p + hl;
		}
	}
	return *size <= n ? 0 : -EIO;
}

/* Sequences section header up to the modes byte: sets *nseq, *used. */
static int seq_count(const uint8_t *p, size_t n, uint32_t *nseq, size_t *used)
{
	if (n < 1)
		return -EIO;
	if (p[0] < 128) {
		*nseq = p[0];
		*used = 1;
	} else if (p[0] < 255) {
		if (n < 2)
			return -EIO;
		*nseq = ((uint32_t)(p[0] - 128) << 8) + p[1];
		*used = 2;
	} else {
		if (n < 3)
			return -EIO;
		*nseq = p[1] + ((uint32_t)p[2] << 8) + 0x7F00;
		*used = 3;
	}
	return 0;
}

/*
 * Follows one compressed block body p[0..n), at file offset coff: the
 * tables it sets and where its sequences are.  0, or -EIO where the stream
 * is malformed.
 */
static int block_follow(struct tables *s, const uint8_t *p, size_t n, uint64_t coff)
{
	const uint8_t *start = p;
	struct seqblock *h;
	const uint8_t *huf;
	size_t lsize, hlen = 0, used;
	uint32_t nseq;
	unsigned modes;

	if (n < 1 || lit_header(p, n, &lsize, &huf, &hlen))
		return -EIO;
	if (huf) {
		memcpy(s->huf, huf, hlen);
		s->huf_len = (uint16_t)hlen;
	} else if ((p[0] & 3) == 3 && !s->huf_len) {
		return -EIO; /* treeless literals with no tree yet */
	}
	p += lsize;
	n -= lsize;
	if (seq_count(p, n, &nseq, &used))
		return -EIO;
	p += used;
	n -= used;
	if (nseq == 0)
		return 0;
	if (n < 1 || (p[0] & 3))
		return -EIO;
	modes = p[0];
	p++;
	n--;
	for (int k = 0; k < 3; k++) {
		struct fse_desc *t = &s->t[k];
		int16_t norm[53];
		unsigned log;

		switch ((modes >> (6 - 2 * k)) & 3) {
		case 0:
			t->mode = T_PREDEF;
			break;
		case 1:
			if (n < 1 || p[0] > max_sym[k])
				return -EIO;
			t->mode = T_RLE;
			t->rle = p[0];
			p++;
			n--;
			break;
		case 2:
			if (fse_read_desc(p, n, k, norm, &log, &used))
				return -EIO;
			t->mode = T_COMP;
			t->dlen = (uint8_t)used;
			memcpy(t->desc, p, used);
			p += used;
			n -= used;
			break;
		default:
			if (t->mode == T_NONE)
				return -EIO;
			break;
		}
	}
	if (n == 0)
		return -EIO;
	h = &s->hist[s->seq_blocks++ % SEQ_HIST];
	h->coff = coff + (uint64_t)(p - start);
	h->len = (uint32_t)n;
	h->n = nseq;
	memcpy(h->t, s->t, sizeof(h->t));
	return 0;
}

/*
 * For a block body p[0..n): which tables (bit k for ZSTDCKPT_k) its
 * sequences repeat, in *rep; *has_seq says whether it has sequences.
 */
static int block_repeats(const uint8_t *p, size_t n, unsigned *rep, bool *has_seq)
{
	const uint8_t *huf;
	size_t lsize, hlen, used;
	uint32_t nseq;

	*rep = 0;
	*has_seq = false;
	if (n < 1 || lit_header(p, n, &lsize, &huf, &hlen) ||
	    seq_count(p + lsize, n - lsize, &nseq, &used))
		return -EIO;
	if (nseq == 0)
		return 0;
	if (lsize + used >= n)
		return -EIO;
	*has_seq = true;
	for (int k = 0; k < 3; k++)
		if (((p[lsize + used] >> (6 - 2 * k)) & 3) == 3)
			*rep |= 1u << k;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Building checkpoints. */

/*
 * A point being made into a blob (zstdckpt_build_blobs): its window
 * [lo, uoff) is marked, as the blocks after uoff are decoded, by the
 * matches that copy from it, and each window byte is settled (kept or not)
 * once the output has passed it by a window, since no later match reaches
 * it.  Settled kept bytes are copied out of the ring before it overwrites
 * them.
 */
struct pend {
	struct zstdckpt ck;
	uint64_t lo;	  /* output offset of the window's first byte: uoff - wlen */
	uint64_t done;	  /* [lo, done) settled and copied out */
	uint64_t run_end; /* output offset past the last run, lo at first */
	uint64_t *bits;	  /* a bit per granule of [lo, uoff): some match copies from it */
	size_t nbits_b;	  /* bytes of bits */
	uint32_t *runs;	  /* (gap, len) pairs, as in the blob */
	size_t nruns, runs_cap;
	uint8_t *kept;
	size_t nkept, kept_cap;
};

struct blobs {
	const struct zstdckpt_sink *sink;
	uint64_t window;   /* frame_window(): no match reaches further back */
	unsigned glog;	   /* a bitmap bit covers 1 << glog window bytes */
	struct pend *pend; /* oldest (lowest uoff) first */
	size_t npend, pend_cap;
	uint64_t pend_bytes; /* what the pending points hold */
	uint32_t rep[3];     /* the offsets, followed from the oldest pending point on */
	ZSTD_CCtx *cc;
	uint8_t *raw, *blob; /* scratch: a payload, a blob */
	size_t raw_cap, blob_cap;
	struct zstdckpt_blob_stats st;
};

struct build {
	const struct zstddec_frame *f;
	struct zsrc *src;
	struct inbuf in;
	ZSTD_DStream *ds;
	bool done;	/* libzstd said the frame is complete */
	uint8_t *ring;	/* output offset x is at ring[x % rsize] */
	uint64_t rsize; /* the window plus a block: min(Window_Size, usize) + BLOCK_MAX */
	uint64_t rpos;
	struct tables s;
	struct fse dt[3]; /* scratch for decoding the last block's sequences */
	struct zstdckpt ck;
	struct zstdckpt_stats st;
	zstdckpt_fn fn; /* zstdckpt_build's */
	void *arg;
	struct blobs *m; /* zstdckpt_build_blobs's */
};

/* The window this frame needs: Window_Size, or less if the frame is smaller. */
static uint64_t frame_window(const struct zstddec_frame *f)
{
	uint64_t w = f->window;

	if (f->usize != ZSTDDEC_UNKNOWN && f->usize < w)
		w = f->usize;
	return w ? w : 1;
}

static int window_log(uint64_t window)
{
	int log = ZSTD_WINDOWLOG_MIN;

	while (log < 63 && (1ull << log) < window)
		log++;
	return log;
}

/* Feeds p[0..n) to libzstd; the output goes into the ring (and the sink); *got its size. */
static int build_feed(struct build *b, const uint8_t *p, size_t n, uint64_t coff, uint64_t *got,
		      struct zerr *err)
{
	const struct zstdckpt_sink *sink = b->m ? b->m->sink : NULL;
	ZSTD_inBuffer in = { p, n, 0 };

	*got = 0;
	for (;;) {
		ZSTD_outBuffer out = { b->ring + b->rpos, (size_t)(b->rsize - b->rpos), 0 };
		size_t in_pos = in.pos;
		size_t r = ZSTD_decompressStream(b->ds, &out, &in);

		if (ZSTD_isError(r))
			return zerr_set(err,
					ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation
						? -ENOMEM
						: -EIO,
					coff, "%s", ZSTD_getErrorName(r));
		if (out.pos && sink && sink->out) {
			int ret = sink->out(sink->arg, out.dst, out.pos);

			if (ret)
				return ret;
		}
		b->rpos += out.pos;
		if (b->rpos == b->rsize)
			b->rpos = 0;
		*got += out.pos;
		if (r == 0)
			b->done = true;
		if (in.pos == in.size && out.pos < out.size)
			return 0;
		if (in.pos == in_pos && out.pos == 0)
			return zerr_set(err, -EIO, coff, "decoder made no progress");
	}
}

/* Whether the next block with sequences (from coff on) repeats a table in mask. */
static int build_peek(struct build *b, uint64_t coff, unsigned mask, bool *bad, struct zerr *err)
{
	*bad = true;
	for (unsigned i = 0; i < PEEK_MAX; i++) {
		const uint8_t *p;
		uint32_t hdr, bsize;
		unsigned rep;
		bool has_seq;
		int ret = in_get(&b->in, b->src, coff, 3, &p, err);

		if (ret)
			return ret;
		hdr = (uint32_t)le_n(p, 3);
		bsize = hdr >> 3;
		if (((hdr >> 1) & 3) == 3 || bsize > BLOCK_MAX)
			return zerr_set(err, -EIO, coff, "bad block header");
		if (((hdr >> 1) & 3) == 2) {
			ret = in_get(&b->in, b->src, coff + 3, bsize, &p, err);
			if (ret)
				return ret;
			if (block_repeats(p, bsize, &rep, &has_seq))
				return zerr_set(err, -EIO, coff, "malformed compressed block");
			if (has_seq) {
				*bad = (rep & mask) != 0;
				return 0;
			}
		}
		if (hdr & 1) {
			*bad = false;
			return 0;
		}
		coff += 3 + (((hdr >> 1) & 3) == 1 ? 1 : bsize);
	}
	return 0;
}

/* Runs rep through the sequences of the last `back` blocks that have any; 0s if it cannot. */
static int build_reps_from(struct build *b, uint64_t back, uint32_t *rep, struct zerr *err)
{
	const struct tables *s = &b->s;

	for (uint64_t i = s->seq_blocks - back; i < s->seq_blocks; i++) {
		const struct seqblock *h = &s->hist[i % SEQ_HIST];
		const uint8_t *p;
		int ret = in_get(&b->in, b->src, h->coff, h->len, &p, err);

		if (ret)
			return ret;
		for (int k = 0; k < 3; k++)
			ret |= fse_make(&b->dt[k], k, &h->t[k]);
		/* libzstd took this block; if we cannot decode it, the offsets stay unknown */
		if (ret || seq_decode(b->dt, p, h->len, h->n, rep, NULL)) {
			rep[0] = rep[1] = rep[2] = 0;
			return 0;
		}
		b->st.nseq += h->n;
	}
	return 0;
}

/* The repeat offsets now; 0 where the remembered blocks do not tell. */
static int build_reps(struct build *b, uint32_t *rep, struct zerr *err)
{
	uint64_t nb = b->s.seq_blocks;
	int ret = 0;

	for (uint64_t back = 1; back <= (nb < SEQ_HIST ? nb : SEQ_HIST); back++) {
		bool first = back == nb; /* from the frame's first block with sequences */

		rep[0] = first ? 1 : 0;
		rep[1] = first ? 4 : 0;
		rep[2] = first ? 8 : 0;
		ret = build_reps_from(b, back, rep, err);
		if (ret || (rep[0] && rep[1] && rep[2]))
			return ret;
	}
	if (nb == 0) {
		rep[0] = 1;
		rep[1] = 4;
		rep[2] = 8;
	}
	return ret;
}

/* Fills b->ck for a point at uoff (block header at coff) with offsets rep. */
static void build_fill(struct build *b, uint64_t uoff, uint64_t coff, uint64_t wlen,
		       const uint32_t *rep)
{
	struct zstdckpt *ck = &b->ck;

	ck->uoff = uoff;
	ck->coff = coff;
	ck->wlen = wlen;
	memcpy(ck->rep, rep, sizeof(ck->rep));
	for (int k = 0; k < 3; k++) {
		const struct fse_desc *t = &b->s.t[k];
		bool comp = t->mode == T_COMP;

		ck->fse_len[k] = comp ? t->dlen : predef[k].len;
		memcpy(ck->fse[k], comp ? t->desc : predef[k].p, ck->fse_len[k]);
	}
	ck->huf_len = b->s.huf_len ? b->s.huf_len : sizeof(huf_none);
	memcpy(ck->huf, b->s.huf_len ? b->s.huf : huf_none, ck->huf_len);
}

/* ------------------------------------------------------------------------ */
/* Blobs: pending points, their marking, and the blob format (zstdckpt.h). */

#define BLOB_MAGIC "ZCK1"
#define BLOB_HDR   97u		/* bytes before the tables */
#define BLOB_LEVEL 1		/* ZSTD_compress level of the payload */
#define BLOB_BITS  (8ull << 20) /* the most bitmap bits per point: 1 MiB */

static uint64_t pend_size(const struct pend *p)
{
	return p->nbits_b + p->runs_cap * sizeof(*p->runs) + p->kept_cap;
}

/* Drops the pending points from index `from` on (the newest ones). */
static void blobs_drop(struct blobs *m, size_t from)
{
	while (m->npend > from) {
		struct pend *p = &m->pend[--m->npend];

		m->pend_bytes -= pend_size(p);
		free(p->bits);
		free(p->runs);
		free(p->kept);
	}
}

/* Grows *buf (elements of elem bytes, *cap of them) to hold need; counts the growth in *total. */
static int grow(void *buf, size_t *cap, size_t need, size_t elem, uint64_t *total)
{
	void *q, **pp = buf;
	size_t n = *cap ? *cap : 256;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*pp, n * elem);
	if (!q)
		return -ENOMEM;
	*pp = q;
	if (total)
		*total += (n - *cap) * elem;
	*cap = n;
	return 0;
}

/* Starts a pending point at b->ck.  0 or -ENOMEM. */
static int pend_new(struct build *b, struct zerr *err)
{
	struct blobs *m = b->m;
	struct pend *p;
	size_t nb = (size_t)(((b->ck.wlen - 1) >> m->glog) / 64 + 1) * 8;

	if (grow(&m->pend, &m->pend_cap, m->npend + 1, sizeof(*p), NULL))
		return zerr_set(err, -ENOMEM, b->ck.coff, "out of memory");
	p = &m->pend[m->npend];
	memset(p, 0, sizeof(*p));
	p->bits = calloc(1, nb);
	if (!p->bits)
		return zerr_set(err, -ENOMEM, b->ck.coff, "out of memory");
	p->ck = b->ck;
	p->lo = p->done = p->run_end = b->ck.uoff - b->ck.wlen;
	p->nbits_b = nb;
	if (m->npend == 0)
		memcpy(m->rep, b->ck.rep, sizeof(m->rep));
	m->npend++;
	m->pend_bytes += nb;
	return 0;
}

/* Sets bits [a, e). */
static void bits_set(uint64_t *w, uint64_t a, uint64_t e)
{
	while (a < e) {
		uint64_t n = 64 - (a & 63);

		if (n > e - a)
			n = e - a;
		w[a >> 6] |= (n == 64 ? ~0ull : (1ull << n) - 1) << (a & 63);
		a += n;
	}
}

/* The first bit in [i, end) that is `set`, or end. */
static uint64_t bits_next(const uint64_t *w, uint64_t i, uint64_t end, bool set)
{
	while (i < end) {
		uint64_t v = (set ? w[i >> 6] : ~w[i >> 6]) & (~0ull << (i & 63));

		if (v) {
			i = (i & ~63ull) + (uint64_t)__builtin_ctzll(v);
			return i < end ? i : end;
		}
		i = (i & ~63ull) + 64;
	}
	return end;
}

/* A match copies [src, src + len): marks it in the windows of the points after which it lies. */
static int blobs_mark(void *arg, uint64_t src, uint32_t len)
{
	struct blobs *m = arg;

	/* newest first: a source at or past a point's uoff is past every older one's */
	for (size_t i = m->npend; i-- > 0;) {
		struct pend *p = &m->pend[i];
		uint64_t a = src > p->lo ? src : p->lo;
		uint64_t e = src + len < p->ck.uoff ? src + len : p->ck.uoff;

		if (src >= p->ck.uoff)
			break;
		if (a < e)
			bits_set(p->bits, (a - p->lo) >> m->glog, ((e - 1 - p->lo) >> m->glog) + 1);
	}
	return 0;
}

/* Keeps window bytes [x, x + n) of p: a run, and the bytes from the ring. */
static int pend_keep(struct build *b, struct pend *p, uint64_t x, uint64_t n)
{
	struct blobs *m = b->m;
	uint64_t before = p->nkept;

	if (p->nruns && x == p->run_end) {
		p->runs[2 * p->nruns - 1] += (uint32_t)n;
	} else {
		if (grow(&p->runs, &p->runs_cap, 2 * (p->nruns + 1), sizeof(*p->runs),
			 &m->pend_bytes))
			return -ENOMEM;
		p->runs[2 * p->nruns] = (uint32_t)(x - p->run_end);
		p->runs[2 * p->nruns + 1] = (uint32_t)n;
		p->nruns++;
	}
	p->run_end = x + n;
	if (grow(&p->kept, &p->kept_cap, p->nkept + n, 1, &m->pend_bytes))
		return -ENOMEM;
	while (p->nkept - before < n) {
		uint64_t at = (x + (p->nkept - before)) % b->rsize;
		uint64_t c = n - (p->nkept - before);

		if (c > b->rsize - at)
			c = b->rsize - at;
		memcpy(p->kept + p->nkept, b->ring + at, (size_t)c);
		p->nkept += (size_t)c;
	}
	return 0;
}

/* Settles p's window up to hi: copies out the marked bytes of [p->done, hi). */
static int pend_settle(struct build *b, struct pend *p, uint64_t hi)
{
	unsigned glog = b->m->glog;
	uint64_t g, gend;

	if (hi <= p->done)
		return 0;
	g = (p->done - p->lo) >> glog;
	gend = ((hi - 1 - p->lo) >> glog) + 1;
	while ((g = bits_next(p->bits, g, gend, true)) < gend) {
		uint64_t ge = bits_next(p->bits, g, gend, false);
		uint64_t a = p->lo + (g << glog), e = p->lo + (ge << glog);
		int ret;

		a = a > p->done ? a : p->done;
		e = e < hi ? e : hi;
		ret = pend_keep(b, p, a, e - a);
		if (ret)
			return ret;
		g = ge;
	}
	p->done = hi;
	return 0;
}

static uint8_t *put_le(uint8_t *q, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		*q++ = (uint8_t)(v >> (8 * i));
	return q;
}

/* LEB128: 7 bits a byte, low first; at most 5 bytes for 32 bits. */
static uint8_t *put_varint(uint8_t *q, uint32_t v)
{
	while (v >= 0x80) {
		*q++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*q++ = (uint8_t)v;
	return q;
}

/* Reads a varint of at most 32 bits from [*p, end); 0, or -EINVAL. */
static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned i = 0; i < 5; i++) {
		if (*p == end)
			return -EINVAL;
		*v |= (uint64_t)(**p & 0x7F) << (7 * i);
		if (!(*(*p)++ & 0x80))
			return *v <= UINT32_MAX ? 0 : -EINVAL;
	}
	return -EINVAL;
}

/* Writes p's blob into m->blob; returns its length, or 0 with err set. */
static size_t blob_write(struct build *b, const struct pend *p, struct zerr *err)
{
	struct blobs *m = b->m;
	const struct zstdckpt *ck = &p->ck;
	const struct zstddec_frame *f = b->f;
	size_t raw = 10 * p->nruns + p->nkept, runs_len, tabs = ck->huf_len, cap, z;
	uint8_t *q, *zlen_at;

	for (int k = 0; k < 3; k++)
		tabs += ck->fse_len[k];
	cap = BLOB_HDR + tabs + ZSTD_compressBound(raw) + 4;
	if (grow(&m->raw, &m->raw_cap, raw, 1, NULL) ||
	    grow(&m->blob, &m->blob_cap, cap, 1, NULL)) {
		zerr_set(err, -ENOMEM, ck->coff, "out of memory");
		return 0;
	}
	q = m->raw;
	for (size_t i = 0; i < 2 * p->nruns; i++)
		q = put_varint(q, p->runs[i]);
	runs_len = (size_t)(q - m->raw);
	if (p->nkept) /* none: a window no match reads */
		memcpy(q, p->kept, p->nkept);
	raw = runs_len + p->nkept;
	q = m->blob;
	memcpy(q, BLOB_MAGIC, 4);
	q = put_le(q + 4, f->coff, 8);
	q = put_le(q, f->csize, 8);
	q = put_le(q, f->usize, 8);
	q = put_le(q, f->window, 8);
	q = put_le(q, ck->uoff, 8);
	q = put_le(q, ck->coff, 8);
	q = put_le(q, ck->wlen, 8);
	for (int k = 0; k < 3; k++)
		q = put_le(q, ck->rep[k], 4);
	q = put_le(q, ck->huf_len, 2);
	for (int k = 0; k < 3; k++)
		*q++ = ck->fse_len[k];
	q = put_le(q, p->nruns, 4);
	q = put_le(q, runs_len, 4);
	q = put_le(q, p->nkept, 8);
	zlen_at = q;
	q += 4;
	memcpy(q, ck->huf, ck->huf_len);
	q += ck->huf_len;
	for (int k = 0; k < 3; k++) {
		memcpy(q, ck->fse[k], ck->fse_len[k]);
		q += ck->fse_len[k];
	}
	z = ZSTD_compressCCtx(m->cc, q, cap - (size_t)(q - m->blob) - 4, m->raw, raw, BLOB_LEVEL);
	if (ZSTD_isError(z)) {
		zerr_set(err, -ENOMEM, ck->coff, "compressing a window: %s", ZSTD_getErrorName(z));
		return 0;
	}
	put_le(zlen_at, z, 4);
	q += z;
	q = put_le(q, crc32(0, m->blob, (uInt)(q - m->blob)), 4);
	return (size_t)(q - m->blob);
}

/* Hands out the oldest pending point, settled to its uoff, and drops it. */
static int pend_finish(struct build *b, struct zerr *err)
{
	struct blobs *m = b->m;
	struct pend *p = &m->pend[0];
	size_t len;
	int ret = pend_settle(b, p, p->ck.uoff);

	if (ret)
		return zerr_set(err, ret, p->ck.coff, "out of memory");
	len = blob_write(b, p, err);
	if (!len)
		return -ENOMEM; /* blob_write's one failure */
	m->st.points++;
	m->st.blob_bytes += len;
	m->st.window_bytes_dense += p->ck.wlen;
	m->st.window_bytes_kept += p->nkept;
	m->st.runs += p->nruns;
	ret = m->sink->point ? m->sink->point(m->sink->arg, p->ck.uoff, m->blob, len) : 0;
	/* the oldest goes: swap it to the end and drop it there */
	if (m->npend > 1) {
		struct pend t = m->pend[0];

		memmove(&m->pend[0], &m->pend[1], (m->npend - 1) * sizeof(*p));
		m->pend[m->npend - 1] = t;
	}
	blobs_drop(m, m->npend - 1);
	return ret;
}

/* Marks with the matches of the block at output [start, start + got) (with
 * sequences if seq), then settles and hands out what that allows. */
static int blobs_block(struct build *b, uint64_t start, uint64_t got, bool seq, struct zerr *err)
{
	struct blobs *m = b->m;
	uint64_t end = start + got;
	int ret = 0;

	if (m->npend == 0)
		return 0;
	if (b->st.lost_coff) {
		blobs_drop(m, 0);
		return 0;
	}
	if (seq) {
		const struct seqblock *h = &b->s.hist[(b->s.seq_blocks - 1) % SEQ_HIST];
		struct seq_sink k = { start, end, m->window, blobs_mark, m };
		const uint8_t *p;

		ret = in_get(&b->in, b->src, h->coff, h->len, &p, err);
		if (ret)
			return ret;
		for (int t = 0; t < 3; t++)
			ret |= fse_make(&b->dt[t], t, &h->t[t]);
		/* libzstd took this block and the parser does not: no more points */
		if (ret || seq_decode(b->dt, p, h->len, h->n, m->rep, &k)) {
			b->st.lost_coff = h->coff;
			blobs_drop(m, 0);
			return 0;
		}
		m->st.seq_marked += h->n;
	}
	/* no match at or past uoff + window reaches back before uoff */
	while (m->npend && m->pend[0].ck.uoff + m->window <= end)
		if ((ret = pend_finish(b, err)))
			return ret;
	/* a window byte x is settled once the output has passed x + window */
	for (size_t i = 0; i < m->npend && end > m->window; i++) {
		struct pend *p = &m->pend[i];
		uint64_t hi = end - m->window < p->ck.uoff ? end - m->window : p->ck.uoff;

		if (pend_settle(b, p, hi))
			return zerr_set(err, -ENOMEM, p->ck.coff, "out of memory");
	}
	if (m->pend_bytes > m->st.pend_peak)
		m->st.pend_peak = m->pend_bytes;
	while (m->npend && m->pend_bytes > ZSTDCKPT_PEND_MAX) {
		blobs_drop(m, m->npend - 1);
		m->st.skip_cost++;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */

/* At the boundary before the block at coff: makes a point there if one can be made. */
static int build_point(struct build *b, uint64_t uoff, uint64_t coff, bool *taken, struct zerr *err)
{
	uint64_t wlen = uoff < frame_window(b->f) ? uoff : frame_window(b->f);
	uint32_t rep[3];
	unsigned rle = 0;
	size_t n1, n2;
	int ret;

	*taken = false;
	ret = build_reps(b, rep, err);
	if (ret)
		return ret;
	/* while points are pending, the offsets are followed through every block */
	if (b->m && b->m->npend)
		memcpy(rep, b->m->rep, sizeof(rep));
	for (int k = 0; k < 3; k++) {
		if (rep[k] == 0 || rep[k] > wlen) {
			b->st.skip_rep++;
			return 0;
		}
		if (b->s.t[k].mode == T_RLE)
			rle |= 1u << k;
	}
	if (rle) {
		bool bad;

		ret = build_peek(b, coff, rle, &bad, err);
		if (ret)
			return ret;
		if (bad) {
			b->st.skip_rle++;
			return 0;
		}
	}
	build_fill(b, uoff, coff, wlen, rep);
	if (b->m) {
		ret = pend_new(b, err);
	} else {
		/* the ring's last wlen bytes, oldest first */
		n2 = (size_t)(wlen < b->rpos ? wlen : b->rpos);
		n1 = (size_t)wlen - n2;
		ret = b->fn(b->arg, &b->ck, b->ring + (n1 ? b->rsize - n1 : 0), n1,
			    b->ring + b->rpos - n2, n2);
	}
	if (ret)
		return ret;
	b->st.nckpt++;
	*taken = true;
	return 0;
}

static int build_blocks(struct build *b, uint64_t span, struct zerr *err)
{
	const struct zstddec_frame *f = b->f;
	uint64_t coff = f->coff + f->hsize, uoff = 0, next = span, got;
	const uint8_t *p;
	int ret;

	ret = in_get(&b->in, b->src, f->coff, f->hsize, &p, err);
	if (!ret)
		ret = build_feed(b, p, f->hsize, f->coff, &got, err);
	if (ret)
		return ret;
	for (;;) {
		uint32_t hdr, type, bsize;
		uint64_t seq_before = b->s.seq_blocks, start = uoff;
		size_t body;
		bool taken;

		ret = in_get(&b->in, b->src, coff, 3, &p, err);
		if (ret)
			return ret;
		hdr = (uint32_t)le_n(p, 3);
		type = (hdr >> 1) & 3;
		bsize = hdr >> 3;
		if (type == 3 || bsize > BLOCK_MAX)
			return zerr_set(err, -EIO, coff, "bad block header");
		body = type == 1 ? 1 : bsize;
		ret = in_get(&b->in, b->src, coff, 3 + body, &p, err);
		if (ret)
			return ret;
		ret = build_feed(b, p, 3 + body, coff, &got, err);
		if (ret)
			return ret;
		/* libzstd took it: if we cannot follow it, no more checkpoints */
		if (type == 2 && !b->st.lost_coff && block_follow(&b->s, p + 3, body, coff + 3))
			b->st.lost_coff = coff;
		uoff += got;
		coff += 3 + body;
		b->st.nblocks++;
		if (f->usize != ZSTDDEC_UNKNOWN && uoff > f->usize)
			return zerr_set(err, -EIO, coff, "frame is larger than its size says");
		if (b->m) {
			ret = blobs_block(b, start, got, b->s.seq_blocks != seq_before, err);
			if (ret)
				return ret;
		}
		if (hdr & 1)
			break;
		if (uoff >= next && !b->st.lost_coff) {
			ret = build_point(b, uoff, coff, &taken, err);
			if (ret)
				return ret;
			if (taken)
				next = uoff + span;
		}
	}
	if (f->checksum) {
		ret = in_get(&b->in, b->src, coff, 4, &p, err);
		if (!ret)
			ret = build_feed(b, p, 4, coff, &got, err);
		if (ret)
			return ret;
		coff += 4;
	}
	if (!b->done || coff != f->coff + f->csize)
		return zerr_set(err, -EIO, coff, "frame does not end where its blocks do");
	if (f->usize != ZSTDDEC_UNKNOWN && uoff != f->usize)
		return zerr_set(err, -EIO, coff, "frame is smaller than its size says");
	b->st.usize = uoff;
	/* verified: the points whose windows the end settles */
	while (b->m && b->m->npend)
		if ((ret = pend_finish(b, err)))
			return ret;
	return 0;
}

static int frame_usable(const struct zstddec_frame *f, struct zerr *err)
{
	if (f->flags & (ZSTDDEC_F_DICT | ZSTDDEC_F_BIGWIN) || f->window > ZSTDDEC_WINDOW_LIBMAX)
		return zerr_set(err, -ENOTSUP, f->coff, "frame needs a dictionary or a big window");
	return 0;
}

static void build_free(struct build *b)
{
	if (!b)
		return;
	if (b->m) {
		blobs_drop(b->m, 0);
		free(b->m->pend);
		free(b->m->raw);
		free(b->m->blob);
		ZSTD_freeCCtx(b->m->cc);
		free(b->m);
	}
	ZSTD_freeDStream(b->ds);
	ring_free(b->ring, (size_t)b->rsize, HUGEMEM_PAGE);
	free(b->in.buf);
	free(b);
}

/* A build pass over f, ready for build_blocks; blobs if `blobs`. */
static int build_new(struct zsrc *src, const struct zstddec_frame *f, uint64_t span, bool blobs,
		     struct build **out, struct zerr *err)
{
	struct build *b;
	int ret;

	*out = NULL;
	if (span == 0)
		return zerr_set(err, -EINVAL, f->coff, "span is 0");
	ret = frame_usable(f, err);
	if (ret)
		return ret;
	b = calloc(1, sizeof(*b));
	if (!b)
		return zerr_set(err, -ENOMEM, f->coff, "out of memory");
	b->f = f;
	b->src = src;
	b->in.end = f->coff + f->csize;
	b->rsize = frame_window(f) + BLOCK_MAX;
	b->in.buf = malloc(IN_CAP);
	b->ring = ring_alloc((size_t)b->rsize, HUGEMEM_PAGE);
	b->ds = ZSTD_createDStream();
	tables_init(&b->s);
	if (blobs) {
		b->m = calloc(1, sizeof(*b->m));
		if (b->m) {
			b->m->window = frame_window(f);
			while ((b->m->window >> b->m->glog) > BLOB_BITS)
				b->m->glog++;
			b->m->cc = ZSTD_createCCtx();
		}
	}
	if (!b->in.buf || !b->ring || !b->ds || (blobs && (!b->m || !b->m->cc))) {
		build_free(b);
		return zerr_set(err, -ENOMEM, f->coff, "out of memory");
	}
	if (ZSTD_isError(
		    ZSTD_DCtx_setParameter(b->ds, ZSTD_d_windowLogMax, window_log(f->window)))) {
		build_free(b);
		return zerr_set(err, -ENOTSUP, f->coff, "window too large for libzstd");
	}
	*out = b;
	return 0;
}

int zstdckpt_build(struct zsrc *src, const struct zstddec_frame *f, uint64_t span, zstdckpt_fn fn,
		   void *arg, struct zstdckpt_stats *st, struct zerr *err)
{
	struct build *b;
	int ret = build_new(src, f, span, false, &b, err);

	if (ret)
		return ret;
	b->fn = fn;
	b->arg = arg;
	ret = build_blocks(b, span, err);
	if (!ret && st)
		*st = b->st;
	build_free(b);
	return ret;
}

int zstdckpt_build_blobs(struct zsrc *src, const struct zstddec_frame *f, uint64_t span,
			 const struct zstdckpt_sink *s, struct zstdckpt_blob_stats *st,
			 struct zerr *err)
{
	struct build *b;
	int ret = build_new(src, f, span, true, &b, err);

	if (ret)
		return ret;
	b->m->sink = s;
	ret = build_blocks(b, span, err);
	if (!ret && st) {
		*st = b->m->st;
		st->ck = b->st;
		st->ck.nckpt = (uint32_t)st->points;
	}
	build_free(b);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* Resuming. */

struct zstdckpt_dec {
	struct zstddec_frame f;
	ZSTD_DCtx *dc;
	struct inbuf in;
	uint64_t coff; /* next block header */
	uint64_t uoff; /* frame offset of ring[rd] */
	bool last;     /* the last block has been decoded */
	bool failed;
	size_t bmax; /* the frame's block size: min(window, 128 KiB) */
	uint8_t *ring;
	size_t rsize;
	size_t rd, wr;		    /* unread output: ring[rd..wr) */
	uint8_t *raw;		    /* a blob's payload, unpacked (kept for the next open) */
	size_t rawcap;		    /* raw's size */
	struct zstdckpt_spares *sp; /* borrowed; where close gives the buffers back, or NULL */
	size_t kept_cost;	    /* zstdckpt_dec_cost while it sits in sp's stock */
};

/*
 * The stock (zstdckpt.h): whole decoders, closed, with their ring, input
 * buffer, libzstd context and payload buffer.  Owned by the caller, so two
 * users in one process never share a lock or a bound.
 */
struct zstdckpt_spares {
	pthread_mutex_t lock;
	/* Protected by lock. */
	struct zstdckpt_dec *slot[ZSTDCKPT_SPARES_N];
	size_t bytes;
};

int zstdckpt_spares_new(struct zstdckpt_spares **out)
{
	struct zstdckpt_spares *sp = calloc(1, sizeof(*sp));

	*out = sp;
	if (!sp)
		return -ENOMEM;
	pthread_mutex_init(&sp->lock, NULL);
	return 0;
}

static void dec_free(struct zstdckpt_dec *d)
{
	ZSTD_freeDCtx(d->dc);
	free(d->in.buf);
	free(d->raw);
	ring_free(d->ring, d->rsize, HUGE_MIN_DEC);
	free(d);
}

void zstdckpt_spares_free(struct zstdckpt_spares *sp)
{
	if (!sp)
		return;
	for (size_t i = 0; i < ZSTDCKPT_SPARES_N; i++)
		if (sp->slot[i])
			dec_free(sp->slot[i]);
	pthread_mutex_destroy(&sp->lock);
	free(sp);
}

size_t zstdckpt_spares_bytes(struct zstdckpt_spares *sp)
{
	size_t n;

	pthread_mutex_lock(&sp->lock);
	n = sp->bytes;
	pthread_mutex_unlock(&sp->lock);
	return n;
}

/* A closed decoder with a ring of rsize bytes from sp's stock, or NULL. */
static struct zstdckpt_dec *spares_take(struct zstdckpt_spares *sp, size_t rsize)
{
	struct zstdckpt_dec *d = NULL;

	if (!sp)
		return NULL;
	pthread_mutex_lock(&sp->lock);
	for (size_t i = 0; i < ZSTDCKPT_SPARES_N; i++) {
		if (sp->slot[i] && sp->slot[i]->rsize == rsize) {
			d = sp->slot[i];
			sp->slot[i] = NULL;
			sp->bytes -= d->kept_cost;
			break;
		}
	}
	pthread_mutex_unlock(&sp->lock);
	return d;
}

/* Keeps d in its stock while that has a slot and room for it; true if kept. */
static bool spares_keep(struct zstdckpt_dec *d)
{
	struct zstdckpt_spares *sp = d->sp;
	bool kept = false;

	if (!sp)
		return false;
	d->kept_cost = zstdckpt_dec_cost(d);
	pthread_mutex_lock(&sp->lock);
	for (size_t i = 0; i < ZSTDCKPT_SPARES_N && !kept; i++) {
		if (!sp->slot[i] && d->kept_cost <= ZSTDCKPT_SPARES_MAX - sp->bytes) {
			sp->slot[i] = d;
			sp->bytes += d->kept_cost;
			kept = true;
		}
	}
	pthread_mutex_unlock(&sp->lock);
	return kept;
}

/* Writes ck as a dictionary header ending at dst + DICT_HMAX; returns its length. */
static size_t dict_header(const struct zstdckpt *ck, uint8_t *end)
{
	uint8_t h[DICT_HMAX], *p = h;
	static const int order[3] = { ZSTDCKPT_OF, ZSTDCKPT_ML, ZSTDCKPT_LL };
	uint32_t v[2] = { DICT_MAGIC, 1 };

	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 4; k++)
			*p++ = (uint8_t)(v[i] >> (8 * k));
	memcpy(p, ck->huf, ck->huf_len);
	p += ck->huf_len;
	for (int i = 0; i < 3; i++) {
		memcpy(p, ck->fse[order[i]], ck->fse_len[order[i]]);
		p += ck->fse_len[order[i]];
	}
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 4; k++)
			*p++ = (uint8_t)(ck->rep[i] >> (8 * k));
	memcpy(end - (p - h), h, (size_t)(p - h));
	return (size_t)(p - h);
}

static int ckpt_check(const struct zstddec_frame *f, const struct zstdckpt *ck, struct zerr *err)
{
	uint64_t w = frame_window(f);

	if (ck->wlen != (ck->uoff < w ? ck->uoff : w) || ck->wlen == 0 ||
	    ck->coff < f->coff + f->hsize || ck->coff >= f->coff + f->csize ||
	    (f->usize != ZSTDDEC_UNKNOWN && ck->uoff >= f->usize) || ck->huf_len > ZSTDCKPT_HUF_MAX)
		return zerr_set(err, -EINVAL, ck->coff, "checkpoint does not fit the frame");
	for (int k = 0; k < 3; k++)
		if (ck->rep[k] == 0 || ck->rep[k] > ck->wlen || ck->fse_len[k] > ZSTDCKPT_FSE_MAX)
			return zerr_set(err, -EINVAL, ck->coff, "checkpoint is malformed");
	return 0;
}

/*
 * Puts the window bytes of a checkpoint into win[0..wlen), which is zero:
 * 0, or -EINVAL with err set.
 */
typedef int (*win_fill_fn)(const void *arg, struct zstdckpt_dec *d, uint8_t *win, uint64_t wlen,
			   struct zerr *err);

/*
 * A decoder with a ring of rsize bytes, all but the per-open state: from
 * sp's stock (its window's bytes zeroed again, as a fresh ring's are), or
 * new.  NULL if out of memory.
 */
static struct zstdckpt_dec *dec_shell(struct zstdckpt_spares *sp, size_t rsize, uint64_t wlen)
{
	struct zstdckpt_dec *d = spares_take(sp, rsize);

	if (d) {
		/*
		 * Of the ring, only the window is read before it is written
		 * (libzstd reads back only what it wrote): zeroed as a fresh
		 * one, so a blob's bytes not kept read as they always did.
		 */
		memset(d->ring + DICT_HMAX, 0, (size_t)wlen);
		d->in.boff = d->in.blen = 0; /* another frame's, maybe another file's */
		d->last = d->failed = false;
		return d;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->rsize = rsize;
	/* zeroed, so that a sparse window's pages not kept are never touched */
	d->ring = ring_alloc(d->rsize, HUGE_MIN_DEC);
	d->in.buf = malloc(IN_CAP);
	d->dc = ZSTD_createDCtx();
	if (!d->ring || !d->in.buf || !d->dc) {
		dec_free(d);
		return NULL;
	}
	return d;
}

/* A decoder at ck (NULL: the frame's start), its window filled by fill. */
static int dec_new(struct zstdckpt_spares *sp, const struct zstddec_frame *f,
		   const struct zstdckpt *ck, win_fill_fn fill, const void *arg,
		   struct zstdckpt_dec **out, struct zerr *err)
{
	struct zstdckpt_dec *d;
	uint64_t w = frame_window(f);
	size_t r, hlen = 0;
	int ret;

	*out = NULL;
	ret = frame_usable(f, err);
	if (!ret && ck)
		ret = ckpt_check(f, ck, err);
	if (ret)
		return ret;
	/* the dictionary header, the window, two blocks (one for split literals) */
	d = dec_shell(sp, DICT_HMAX + (size_t)w + 2 * (BLOCK_MAX + SLACK), ck ? ck->wlen : 0);
	if (!d)
		return zerr_set(err, -ENOMEM, f->coff, "out of memory");
	d->sp = sp;
	d->f = *f;
	d->in.end = f->coff + f->csize;
	d->bmax = f->window < BLOCK_MAX ? (size_t)f->window : BLOCK_MAX;
	d->rd = d->wr = 0;
	if (ck) {
		ret = fill(arg, d, d->ring + DICT_HMAX, ck->wlen, err);
		if (!sp) { /* nobody reuses the payload buffer: not held while decoding */
			free(d->raw);
			d->raw = NULL;
			d->rawcap = 0;
		}
		if (ret) {
			zstdckpt_dec_close(d);
			return ret;
		}
		hlen = dict_header(ck, d->ring + DICT_HMAX);
		r = ZSTD_decompressBegin_usingDict(d->dc, d->ring + DICT_HMAX - hlen,
						   hlen + (size_t)ck->wlen);
		d->coff = ck->coff;
		d->uoff = ck->uoff;
		d->rd = d->wr = DICT_HMAX + (size_t)ck->wlen;
	} else {
		r = ZSTD_decompressBegin(d->dc);
		d->coff = f->coff + f->hsize;
		d->uoff = 0;
	}
	if (ZSTD_isError(r)) {
		zstdckpt_dec_close(d);
		return zerr_set(err, -EINVAL, ck ? ck->coff : f->coff, "checkpoint refused: %s",
				ZSTD_getErrorName(r));
	}
	*out = d;
	return 0;
}

static int fill_dense(const void *arg, struct zstdckpt_dec *d, uint8_t *win, uint64_t wlen,
		      struct zerr *err)
{
	(void)d;
	(void)err;
	memcpy(win, arg, (size_t)wlen);
	return 0;
}

int zstdckpt_dec_open(const struct zstddec_frame *f, const struct zstdckpt *ck, const void *window,
		      struct zstdckpt_dec **out, struct zerr *err)
{
	return dec_new(NULL, f, ck, fill_dense, window, out, err);
}

/* A blob, parsed (its header checked against the frame and its CRC). */
struct blob_in {
	struct zstdckpt ck;
	uint32_t nruns;
	uint32_t runs_len; /* bytes of the payload's run table */
	uint64_t kept;
	const uint8_t *z; /* the payload */
	size_t zlen;
};

static int blob_bad(const struct zstddec_frame *f, struct zerr *err, const char *why)
{
	return zerr_set(err, -EINVAL, f->coff, "checkpoint blob %s", why);
}

static int blob_parse(const struct zstddec_frame *f, const uint8_t *p, size_t len,
		      struct blob_in *bi, struct zerr *err)
{
	const uint8_t *q = p + 4;
	struct zstdckpt *ck = &bi->ck;
	uint64_t v[4] = { f->coff, f->csize, f->usize, f->window }, tabs;

	memset(bi, 0, sizeof(*bi));
	if (len < BLOB_HDR + 4 || memcmp(p, BLOB_MAGIC, 4) != 0)
		return blob_bad(f, err, "is not one (magic or size)");
	if (le_n(p + len - 4, 4) != crc32(0, p, (uInt)(len - 4)))
		return blob_bad(f, err, "is damaged (CRC)");
	for (int i = 0; i < 4; i++, q += 8)
		if (le_n(q, 8) != v[i])
			return blob_bad(f, err, "is for another frame");
	ck->uoff = le_n(q, 8);
	ck->coff = le_n(q + 8, 8);
	ck->wlen = le_n(q + 16, 8);
	q += 24;
	for (int k = 0; k < 3; k++, q += 4)
		ck->rep[k] = (uint32_t)le_n(q, 4);
	ck->huf_len = (uint16_t)le_n(q, 2);
	q += 2;
	tabs = ck->huf_len;
	for (int k = 0; k < 3; k++) {
		ck->fse_len[k] = *q++;
		tabs += ck->fse_len[k];
		if (ck->fse_len[k] < 1 || ck->fse_len[k] > ZSTDCKPT_FSE_MAX)
			return blob_bad(f, err, "has a bad table length");
	}
	bi->nruns = (uint32_t)le_n(q, 4);
	bi->runs_len = (uint32_t)le_n(q + 4, 4);
	bi->kept = le_n(q + 8, 8);
	bi->zlen = (size_t)le_n(q + 16, 4);
	q += 20;
	if (ck->huf_len < 1 || ck->huf_len > ZSTDCKPT_HUF_MAX)
		return blob_bad(f, err, "has a bad table length");
	if (BLOB_HDR + tabs + bi->zlen + 4 != len)
		return blob_bad(f, err, "has the wrong length");
	if (bi->kept > ck->wlen || bi->nruns > bi->kept || (bi->nruns == 0) != (bi->kept == 0) ||
	    bi->runs_len < 2ull * bi->nruns || bi->runs_len > 10ull * bi->nruns)
		return blob_bad(f, err, "has bad run counts");
	memcpy(ck->huf, q, ck->huf_len);
	q += ck->huf_len;
	for (int k = 0; k < 3; k++) {
		memcpy(ck->fse[k], q, ck->fse_len[k]);
		q += ck->fse_len[k];
	}
	bi->z = q;
	return 0;
}

/* Room for n bytes in d->raw (kept with d, as its ring is).  0 or -ENOMEM. */
static int raw_room(struct zstdckpt_dec *d, size_t n)
{
	if (d->rawcap < n) {
		free(d->raw);
		d->rawcap = 0;
		d->raw = malloc(n);
		if (!d->raw)
			return -ENOMEM;
		d->rawcap = n;
	}
	return 0;
}

/* Decompresses a blob's payload and puts its runs into the (zero) window. */
static int fill_blob(const void *arg, struct zstdckpt_dec *d, uint8_t *win, uint64_t wlen,
		     struct zerr *err)
{
	const struct blob_in *bi = arg;
	size_t nraw = (size_t)bi->runs_len + (size_t)bi->kept, r;
	const uint8_t *bytes, *q;
	uint8_t *raw;
	uint64_t pos = 0, gap, n;
	int ret = 0;

	if (raw_room(d, nraw ? nraw : 1))
		return zerr_set(err, -ENOMEM, bi->ck.coff, "out of memory");
	raw = d->raw;
	bytes = raw + bi->runs_len;
	q = raw;
	r = ZSTD_decompress(raw, nraw, bi->z, bi->zlen);
	if (ZSTD_isError(r) || r != nraw) {
		ret = zerr_set(err, -EINVAL, bi->ck.coff, "checkpoint blob payload is bad: %s",
			       ZSTD_isError(r) ? ZSTD_getErrorName(r) : "wrong size");
		goto out;
	}
	for (uint32_t i = 0; i < bi->nruns; i++) {
		if (get_varint(&q, raw + bi->runs_len, &gap) ||
		    get_varint(&q, raw + bi->runs_len, &n)) {
			ret = zerr_set(err, -EINVAL, bi->ck.coff, "checkpoint blob has a bad run");
			goto out;
		}
		pos += gap;
		if (n == 0 || pos > wlen || wlen - pos < n || (uint64_t)(bytes - raw) + n > nraw) {
			ret = zerr_set(err, -EINVAL, bi->ck.coff, "checkpoint blob has a bad run");
			goto out;
		}
		memcpy(win + pos, bytes, (size_t)n);
		bytes += n;
		pos += n;
	}
	if (bytes != raw + nraw || q != raw + bi->runs_len)
		ret = zerr_set(err, -EINVAL, bi->ck.coff, "checkpoint blob has a bad run");
out:
	return ret;
}

int zstdckpt_blob_open_in(struct zstdckpt_spares *sp, const struct zstddec_frame *f,
			  const void *blob, size_t len, struct zstdckpt_dec **out, struct zerr *err)
{
	struct blob_in bi;
	int ret;

	*out = NULL;
	if (!blob)
		return dec_new(sp, f, NULL, NULL, NULL, out, err);
	ret = frame_usable(f, err);
	if (!ret)
		ret = blob_parse(f, blob, len, &bi, err);
	return ret ? ret : dec_new(sp, f, &bi.ck, fill_blob, &bi, out, err);
}

int zstdckpt_blob_open(const struct zstddec_frame *f, const void *blob, size_t len,
		       struct zstdckpt_dec **out, struct zerr *err)
{
	return zstdckpt_blob_open_in(NULL, f, blob, len, out, err);
}

size_t zstdckpt_dec_cost(const struct zstdckpt_dec *d)
{
	return sizeof(*d) + d->rsize + IN_CAP + ZSTD_sizeof_DCtx(d->dc) + d->rawcap;
}

/* Decodes the next block into the ring at wr.  0 or -EIO. */
static int dec_block(struct zstdckpt_dec *d, struct zsrc *src, struct zerr *err)
{
	const uint8_t *p;
	uint32_t hdr, type, bsize;
	size_t body, n;
	uint8_t *dst;
	int ret;

	if (d->rsize - d->wr < BLOCK_MAX + SLACK)
		d->rd = d->wr = 0;
	dst = d->ring + d->wr;
	ret = in_get(&d->in, src, d->coff, 3, &p, err);
	if (ret)
		return ret;
	hdr = (uint32_t)le_n(p, 3);
	type = (hdr >> 1) & 3;
	bsize = hdr >> 3;
	body = type == 1 ? 1 : bsize;
	if (type == 3 || bsize > d->bmax)
		return zerr_set(err, -EIO, d->coff, "bad block header");
	ret = in_get(&d->in, src, d->coff + 3, body, &p, err);
	if (ret)
		return ret;
	if (type == 2) {
		size_t r = ZSTD_decompressBlock(d->dc, dst, BLOCK_MAX, p, body);

		if (ZSTD_isError(r))
			return zerr_set(err, -EIO, d->coff, "%s", ZSTD_getErrorName(r));
		n = r;
	} else {
		n = bsize;
		if (type == 0)
			memcpy(dst, p, n);
		else
			memset(dst, p[0], n);
		ZSTD_insertBlock(d->dc, dst, n);
	}
	if (n > d->bmax)
		return zerr_set(err, -EIO, d->coff, "block is larger than the frame's block size");
	d->coff += 3 + body;
	d->wr += n;
	d->last = hdr & 1;
	return 0;
}

/* Checks the frame's end and size once its last block is out. */
static int dec_end(const struct zstdckpt_dec *d, struct zerr *err)
{
	uint64_t end = d->coff + (d->f.checksum ? 4 : 0);

	if (end != d->f.coff + d->f.csize)
		return zerr_set(err, -EIO, d->coff, "frame does not end where its blocks do");
	if (d->f.usize != ZSTDDEC_UNKNOWN && d->uoff != d->f.usize)
		return zerr_set(err, -EIO, d->coff, "frame is %s than its size says",
				d->uoff < d->f.usize ? "smaller" : "larger");
	return 0;
}

ssize_t zstdckpt_dec_read(struct zstdckpt_dec *d, struct zsrc *src, void *buf, size_t len,
			  struct zerr *err)
{
	size_t n;
	int ret;

	if (d->failed)
		return zerr_set(err, -EIO, d->coff, "decoder has already failed");
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (d->rd == d->wr && !d->last) {
		ret = dec_block(d, src, err);
		if (!ret && d->f.usize != ZSTDDEC_UNKNOWN && d->wr - d->rd > d->f.usize - d->uoff)
			ret = zerr_set(err, -EIO, d->coff, "frame is larger than its size says");
		if (ret) {
			d->failed = true;
			return ret;
		}
	}
	n = d->wr - d->rd < len ? d->wr - d->rd : len;
	memcpy(buf, d->ring + d->rd, n);
	d->rd += n;
	d->uoff += n;
	if (d->rd == d->wr && d->last) {
		ret = dec_end(d, err);
		if (ret) {
			d->failed = true;
			return ret;
		}
	}
	return (ssize_t)n;
}

uint64_t zstdckpt_dec_tell(const struct zstdckpt_dec *d)
{
	return d->uoff;
}

void zstdckpt_dec_close(struct zstdckpt_dec *d)
{
	if (d && !spares_keep(d))
		dec_free(d);
}
