/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for codec/xzdec: the input is a whole .xz file.
 *
 * How it works.  The input goes into a memfd (xzdec only preads from fds).
 * xzdec_index_read parses it; every Block of the Index is then decoded on
 * its own with xzdec_dec_open/xzdec_dec_read, in odd-sized chunks (1 to
 * 65521 bytes, the order derived from the input) so that output boundaries
 * fall everywhere.  Each read writes at the very end of a heap buffer, so a
 * single byte past the requested length is an ASan report.
 *
 * Then the first Blocks are opened again with an entry that lies the way a
 * crafted Index can: a Block with a different Uncompressed or Unpadded Size
 * must fail with -EIO, never overflow, never decode "whole".
 *
 * Each input runs twice: as it is, then "resealed", with every CRC32 that
 * guards structure (Stream Header and Footer, Block Headers, Index)
 * recomputed, so that mutations of Stream Flags, filter options, dictionary
 * sizes and Index records reach our code instead of stopping at liblzma's
 * CRC checks.  A resealed Index that lies is what bad-2-index-2.xz is.
 *
 * Blocks the daemon's reader would refuse before opening them (an Index
 * claiming more than 65536 output bytes per input byte) are skipped, so
 * that every report is about something the daemon can be made to do.
 *
 * Besides sanitizer reports, the harness aborts when a result breaks
 * xzdec.h: error codes outside the listed ones, *out not NULL on error, an
 * Index whose Blocks do not tile the file, a read returning other than
 * min(len, remaining), a Block that ends short of its Index size without an
 * error.
 *
 * Bounded work per input: at most MAX_BLOCKS Blocks, MAX_OUT decoded bytes
 * and MAX_CALLS reads, whatever the Index claims.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "xzdec.h"

#define MAX_BLOCKS 64
#define MAX_OUT	   (4u << 20)
#define MAX_CALLS  4096
#define BUF_CAP	   65536u
#define FORGED	   4 /* Blocks decoded again under forged entries */

static const uint8_t xz_magic[6] = { 0xFD, '7', 'z', 'X', 'Z', 0x00 };
static const size_t chunks[] = { 1, 3, 7, 31, 127, 509, 4093, 65521 };

/* The index's promises: Blocks in file order, inside the file, tiling the output. */
static void check_index(const struct xzdec_index *idx, uint64_t size)
{
	uint64_t uoff = 0, coff = 0;

	FUZZ_CHECK(idx->csize == size, "csize %llu != file size %llu",
		   (unsigned long long)idx->csize, (unsigned long long)size);
	FUZZ_CHECK(idx->nstreams >= 1, "no Streams");
	FUZZ_CHECK(idx->nblocks == 0 || idx->blocks, "Blocks missing");
	for (size_t i = 0; i < idx->nblocks; i++) {
		const struct xzdec_block *b = &idx->blocks[i];

		FUZZ_CHECK(b->coff >= coff, "Block %zu starts before the previous one ends", i);
		FUZZ_CHECK(b->csize <= size && b->coff <= size - b->csize,
			   "Block %zu extends past end of file", i);
		FUZZ_CHECK(b->unpadded <= b->csize, "Block %zu: Unpadded Size > Total Size", i);
		FUZZ_CHECK(b->uoff == uoff, "Block %zu: uoff %llu, expected %llu", i,
			   (unsigned long long)b->uoff, (unsigned long long)uoff);
		FUZZ_CHECK(b->stream < idx->nstreams, "Block %zu: Stream out of range", i);
		FUZZ_CHECK(!__builtin_add_overflow(uoff, b->usize, &uoff), "usize overflows");
		coff = b->coff + b->csize;
	}
	FUZZ_CHECK(uoff == idx->usize, "Blocks sum to %llu, usize says %llu",
		   (unsigned long long)uoff, (unsigned long long)idx->usize);
}

/*
 * Decodes Block b (its entry possibly forged) to its end, its first error or
 * the end of the budget.  Returns 0 if it decoded whole, 1 if the budget ran
 * out, or the negative errno it failed with.
 */
static int decode_block(struct zsrc *src, const struct xzdec_block *b, unsigned char *buf,
			uint64_t *state, uint64_t *budget, unsigned *calls)
{
	struct xzdec_dec *d = (struct xzdec_dec *)&d; /* must be overwritten */
	struct zerr err = { 0 };
	uint64_t got = 0;
	size_t k = (size_t)fuzz_mix(state);
	ssize_t n;
	int ret;

	ret = xzdec_dec_open(src, b, NULL, &d, &err);
	if (ret < 0) {
		FUZZ_CHECK(d == NULL, "dec_open failed (%d) but *out is set", ret);
		FUZZ_CHECK(ret == -EIO || ret == -ENOTSUP || ret == -ENOMEM,
			   "dec_open returned %d, not listed in xzdec.h", ret);
		FUZZ_CHECK(err.msg[0], "dec_open failed (%d) without a reason", ret);
		return ret;
	}
	FUZZ_CHECK(ret == 0 && d, "dec_open returned %d", ret);
	FUZZ_CHECK(xzdec_dec_tell(d) == 0, "a fresh decoder is not at 0");
	for (;;) {
		size_t want = chunks[k++ % (sizeof(chunks) / sizeof(chunks[0]))];
		uint64_t left = b->usize - got;

		if (*budget == 0 || *calls >= MAX_CALLS) {
			ret = 1; /* out of budget: not an error, not a whole Block */
			break;
		}
		(*calls)++;
		if (want > *budget)
			want = (size_t)*budget;
		err.msg[0] = '\0';
		n = xzdec_dec_read(d, src, buf + BUF_CAP - want, want, &err);
		if (n < 0) {
			FUZZ_CHECK(n == -EIO || n == -ENOMEM, "dec_read returned %zd", n);
			FUZZ_CHECK(err.msg[0], "dec_read failed (%zd) without a reason", n);
			/* a failed decoder may only be closed: later reads fail too */
			n = xzdec_dec_read(d, src, buf, 1, &err);
			FUZZ_CHECK(n < 0, "a failed decoder returned %zd", n);
			ret = -EIO;
			break;
		}
		if (n == 0) {
			FUZZ_CHECK(got == b->usize, "dec_read returned 0 after %llu of %llu bytes",
				   (unsigned long long)got, (unsigned long long)b->usize);
			n = xzdec_dec_read(d, src, buf, 1, &err);
			FUZZ_CHECK(n == 0, "dec_read after the end returned %zd", n);
			ret = 0;
			break;
		}
		FUZZ_CHECK((uint64_t)n == (want < left ? want : left),
			   "dec_read returned %zd for min(%zu, %llu)", n, want,
			   (unsigned long long)left);
		got += (uint64_t)n;
		*budget -= (uint64_t)n;
		FUZZ_CHECK(xzdec_dec_tell(d) == got, "dec_tell %llu != %llu",
			   (unsigned long long)xzdec_dec_tell(d), (unsigned long long)got);
	}
	xzdec_dec_close(d);
	return ret;
}

/* Total Size of a Block whose Unpadded Size is u: padded to a multiple of 4. */
static uint64_t ceil4(uint64_t u)
{
	return (u + 3) & ~(uint64_t)3;
}

/*
 * The daemon's reader refuses a file whose Index claims more than 65536
 * uncompressed bytes per compressed byte for a Block (index/reader.c,
 * XZ_MAX_RATIO), before any Block is opened.  Such Blocks are skipped
 * here too, so that a report is about something the daemon would do.
 */
static int reader_refuses(const struct xzdec_block *b)
{
	return b->usize / 65536u > b->csize;
}

/* CRC-32 (IEEE, as .xz uses it), bitwise: only headers and Indexes go through it. */
static uint32_t crc32(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
	}
	return ~c;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Decodes a multibyte integer of the .xz format at p[*pos..end); 0 or -1. */
static int get_vli(const uint8_t *p, size_t *pos, size_t end, uint64_t *v)
{
	*v = 0;
	for (int i = 0; i < 9 && *pos < end; i++) {
		uint8_t c = p[(*pos)++];

		*v |= (uint64_t)(c & 0x7F) << (7 * i);
		if (!(c & 0x80))
			return 0;
	}
	return -1;
}

/*
 * Rewrites every CRC32 that guards structure, so the fuzzer's mutations of
 * the Stream Flags, the Block Headers (filters, dictionary size, sizes) and
 * the Index records (a lying Index) reach our code instead of stopping at
 * liblzma's CRC checks.  Walks the Streams from the end as the format allows:
 * Stream Padding, Footer, Index, Blocks (located by the Index's Unpadded
 * Sizes), Header; stops at the first thing that does not parse.
 */
static void reseal(uint8_t *p, size_t size)
{
	size_t end = size;

	for (int streams = 0; streams < 16; streams++) {
		uint64_t back, count, unpadded, usize, blocks = 0;
		size_t foot, ix, pos, start, boff;

		while (end >= 4 && !get32(p + end - 4)) /* Stream Padding */
			end -= 4;
		if (end < 24 || p[end - 2] != 'Y' || p[end - 1] != 'Z')
			return;
		foot = end - 12;
		put32(p + foot, crc32(p + foot + 4, 6));
		back = ((uint64_t)get32(p + foot + 4) + 1) * 4;
		if (back > foot - 12 || back < 8)
			return;
		ix = foot - (size_t)back;
		put32(p + foot - 4, crc32(p + ix, (size_t)back - 4));
		/* the Index's records give the Blocks' sizes, hence where they start */
		pos = ix + 1;
		if (p[ix] != 0 || get_vli(p, &pos, foot - 4, &count) < 0 || count > 4096)
			return;
		for (uint64_t i = 0; i < count; i++) {
			if (get_vli(p, &pos, foot - 4, &unpadded) < 0 ||
			    get_vli(p, &pos, foot - 4, &usize) < 0 || unpadded > size)
				return;
			blocks += ceil4(unpadded);
		}
		if (blocks + 12 > ix)
			return;
		start = ix - (size_t)blocks - 12;
		if (memcmp(p + start, xz_magic, sizeof(xz_magic)) != 0)
			return;
		put32(p + start + 8, crc32(p + start + 6, 2));
		/* again, now fixing each Block Header's CRC32 */
		pos = ix + 1;
		get_vli(p, &pos, foot - 4, &count);
		boff = start + 12;
		for (uint64_t i = 0; i < count; i++) {
			size_t hsize = ((size_t)p[boff] + 1) * 4;

			get_vli(p, &pos, foot - 4, &unpadded);
			get_vli(p, &pos, foot - 4, &usize);
			if (p[boff] != 0 && boff + hsize <= ix)
				put32(p + boff + hsize - 4, crc32(p + boff, hsize - 4));
			boff += (size_t)ceil4(unpadded);
		}
		end = start;
	}
}

/* One pass over the file data[0..size): the Index, every Block, forged entries. */
static void run(const uint8_t *data, size_t size)
{
	struct xzdec_index *idx = (struct xzdec_index *)&idx; /* must be overwritten */
	struct zerr err = { 0 };
	uint64_t state = fuzz_seed(data, size), budget = MAX_OUT;
	unsigned calls = 0;
	int whole[FORGED] = { 0 }; /* Block i decoded whole under its Index entry */
	unsigned char *buf;
	struct zsrc *src = fuzz_src(data, size);
	int ret;

	ret = xzdec_index_read(src, size, &idx, &err);
	if (ret < 0) {
		FUZZ_CHECK(idx == NULL, "index_read failed (%d) but *out is set", ret);
		FUZZ_CHECK(ret == -EINVAL || ret == -ENOMEM || ret == -EIO,
			   "index_read returned %d, not listed in xzdec.h", ret);
		FUZZ_CHECK(err.msg[0], "index_read failed (%d) without a reason", ret);
		zsrc_put(src);
		return;
	}
	FUZZ_CHECK(ret == 0 && idx, "index_read returned %d", ret);
	check_index(idx, size);

	buf = malloc(BUF_CAP);
	FUZZ_CHECK(buf, "out of memory");
	for (size_t i = 0; i < idx->nblocks && i < MAX_BLOCKS; i++) {
		if (reader_refuses(&idx->blocks[i]))
			continue;
		ret = decode_block(src, &idx->blocks[i], buf, &state, &budget, &calls);
		if (i < FORGED)
			whole[i] = ret == 0;
	}

	/*
	 * The same Blocks under entries a lying Index could hold.  Only a Block
	 * that decoded whole under its own entry proves that entry true, and
	 * then no other entry may decode whole (the Index itself may be the
	 * liar, as in bad-2-index-2.xz, and a "forged" entry the truth).
	 */
	for (size_t i = 0; i < idx->nblocks && i < FORGED; i++) {
		struct xzdec_block b = idx->blocks[i];
		uint64_t r = fuzz_mix(&state);

		switch (r % 4) {
		case 0: /* more output than the Block has */
			b.usize += 1 + (r >> 8) % 4096;
			break;
		case 1: /* less */
			b.usize -= b.usize ? 1 + (r >> 8) % b.usize : 0;
			break;
		case 2: /* a different Unpadded Size (Total Size follows, as in an Index) */
			if ((r >> 8) % 2)
				b.unpadded += 4;
			else if (b.unpadded > 4)
				b.unpadded -= 4;
			else
				continue;
			b.csize = ceil4(b.unpadded);
			if (b.coff + b.csize > size)
				continue;
			break;
		default: /* the most the reader lets an Index claim: nothing may be sized from it */
			if (__builtin_mul_overflow(b.csize, (uint64_t)65536, &b.usize))
				b.usize = UINT64_MAX;
			break;
		}
		if (reader_refuses(&b))
			continue;
		budget = MAX_OUT;
		ret = decode_block(src, &b, buf, &state, &budget, &calls);
		FUZZ_CHECK(
			ret != 0 || !whole[i] ||
				(b.usize == idx->blocks[i].usize &&
				 b.unpadded == idx->blocks[i].unpadded),
			"Block %zu decoded whole under a forged entry (usize %llu, unpadded %llu;"
			" the Index says %llu, %llu)",
			i, (unsigned long long)b.usize, (unsigned long long)b.unpadded,
			(unsigned long long)idx->blocks[i].usize,
			(unsigned long long)idx->blocks[i].unpadded);
	}
	free(buf);
	xzdec_index_free(idx);
	zsrc_put(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *img;

	run(data, size);
	/* and again with every structural CRC32 made right, if any was wrong */
	img = malloc(size ? size : 1);
	FUZZ_CHECK(img, "out of memory");
	memcpy(img, data, size);
	reseal(img, size);
	if (memcmp(img, data, size) != 0)
		run(img, size);
	free(img);
	return 0;
}
