/* SPDX-License-Identifier: MIT */
/*
 * zstd's entropy tables and sequences, for checkpoints (see zstdseq.h).
 *
 * How it works.  libzstd keeps the tables in force and the repeat offsets
 * to itself, so they are followed here from the stream (RFC 8878).  Each
 * compressed block's literals section header gives the Huffman table
 * description, if any, and the section's size (3.1.1.3.1.1); the
 * sequences section header gives the FSE table modes and descriptions and
 * where the sequences bitstream lies (3.1.1.3.2).  To learn the repeat
 * offsets (3.1.1.5), the one part of the state that nothing in the stream
 * states outright, a block's bitstream is decoded with FSE tables built
 * from those descriptions (4.1.1): states and extra bits only, no
 * literals, no copies.  The same decoding hands each match's source to a
 * sink, which marks the window bytes a checkpoint must keep.
 *
 * A dictionary (RFC 8878, 5) cannot say "predefined" or "RLE": a
 * predefined table is written as its distribution's description (the
 * constants below, from 3.1.1.3.2.2).
 */
#define ZSTD_STATIC_LINKING_ONLY
#include "zstdseq.h"

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <zstd.h>

#include "le.h"

/* ------------------------------------------------------------------------ */
/* Constants of the format. */

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

static unsigned highbit(uint32_t v)
{
	return 31u - (unsigned)__builtin_clz(v);
}

int zstdseq_window_log(uint64_t window)
{
	int log = ZSTD_WINDOWLOG_MIN;

	while (log < 63 && (1ull << log) < window)
		log++;
	return log;
}

/* ------------------------------------------------------------------------ */
/* FSE tables (RFC 8878, 4.1). */

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
static int fse_build(struct zstdseq_fse *t, const int16_t *norm, unsigned nsym, unsigned log)
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
int zstdseq_fse_make(struct zstdseq_fse *t, int k, const struct zstdseq_desc *d)
{
	int16_t norm[53];
	unsigned log;
	size_t used;
	int ret;

	if (d->mode == ZSTDSEQ_T_RLE) {
		t->log = 0;
		t->cell[0] = (struct zstdseq_cell){ 0, d->rle, 0 };
		return 0;
	}
	if (d->mode == ZSTDSEQ_T_COMP)
		ret = fse_read_desc(d->desc, d->dlen, k, norm, &log, &used);
	else
		ret = fse_read_desc(predef[k].p, predef[k].len, k, norm, &log, &used);
	return ret ? ret : fse_build(t, norm, max_sym[k] + 1u, log);
}

void zstdseq_tables_init(struct zstdseq_tables *s)
{
	memset(s, 0, sizeof(*s)); /* every table ZSTDSEQ_T_NONE, no blocks */
}

void zstdseq_describe(const struct zstdseq_tables *s, struct zstdckpt *ck)
{
	for (int k = 0; k < 3; k++) {
		const struct zstdseq_desc *t = &s->t[k];
		bool comp = t->mode == ZSTDSEQ_T_COMP;

		ck->fse_len[k] = comp ? t->dlen : predef[k].len;
		memcpy(ck->fse[k], comp ? t->desc : predef[k].p, ck->fse_len[k]);
	}
	ck->huf_len = s->huf_len ? s->huf_len : sizeof(huf_none);
	memcpy(ck->huf, s->huf_len ? s->huf : huf_none, ck->huf_len);
}

/* ------------------------------------------------------------------------ */
/* Sequences (RFC 8878, 3.1.1.3.2 and 3.1.1.4). */

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

/* One match to the sink: checks it against the block and the window. */
static int seq_put(struct zstdseq_sink *k, uint32_t off, uint32_t ll, uint32_t ml)
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
int zstdseq_decode(const struct zstdseq_fse *t, const uint8_t *p, size_t len, uint32_t nseq,
		   uint32_t *rep, struct zstdseq_sink *k)
{
	const struct zstdseq_fse *ll = &t[ZSTDCKPT_LL], *of = &t[ZSTDCKPT_OF],
				 *ml = &t[ZSTDCKPT_ML];
	struct bitr b = { p, len, 0 };
	uint32_t sl, so, sm;

	if (len == 0 || p[len - 1] == 0)
		return -EIO;
	b.pos = (int64_t)(8 * (len - 1) + highbit(p[len - 1]));
	sl = br_read(&b, ll->log);
	so = br_read(&b, of->log);
	sm = br_read(&b, ml->log);
	for (uint32_t i = 0; i < nseq; i++) {
		const struct zstdseq_cell *cl = &ll->cell[sl], *co = &of->cell[so],
					  *cm = &ml->cell[sm];
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
		regen = hl == 1 ? p[0] >> 3 : (size_t)(get_le(p, hl) >> 4);
		*size = hl + (type == 0 ? regen : 1);
	} else {
		size_t csize;

		hl = sf < 2 ? 3 : sf + 2;
		if (n < hl)
			return -EIO;
		v = get_le(p, hl);
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
int zstdseq_block_follow(struct zstdseq_tables *s, const uint8_t *p, size_t n, uint64_t coff)
{
	const uint8_t *start = p;
	struct zstdseq_block *h;
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
		struct zstdseq_desc *t = &s->t[k];
		int16_t norm[53];
		unsigned log;

		switch ((modes >> (6 - 2 * k)) & 3) {
		case 0:
			t->mode = ZSTDSEQ_T_PREDEF;
			break;
		case 1:
			if (n < 1 || p[0] > max_sym[k])
				return -EIO;
			t->mode = ZSTDSEQ_T_RLE;
			t->rle = p[0];
			p++;
			n--;
			break;
		case 2:
			if (fse_read_desc(p, n, k, norm, &log, &used))
				return -EIO;
			t->mode = ZSTDSEQ_T_COMP;
			t->dlen = (uint8_t)used;
			memcpy(t->desc, p, used);
			p += used;
			n -= used;
			break;
		default:
			if (t->mode == ZSTDSEQ_T_NONE)
				return -EIO;
			break;
		}
	}
	if (n == 0)
		return -EIO;
	h = &s->hist[s->seq_blocks++ % ZSTDSEQ_HIST];
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
int zstdseq_block_repeats(const uint8_t *p, size_t n, unsigned *rep, bool *has_seq)
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
