/* SPDX-License-Identifier: MIT */
/*
 * Tests for codec/xzdec.c.  Fixtures: the xz-utils test files under the
 * corpus directory (argv[1], else $ZMOUNT_CORPUS, else the ../shared/corpus
 * beside the source tree that CMake compiles in) and files made at start-up
 * with the xz tool in a mkdtemp directory.  A missing xz tool fails the
 * tests that need it; a missing corpus skips the tests that need it, out
 * loud, and makes the exit status 77 (a skip for ctest).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xzdec.h"
#include "zmtest.h"

#define ORIG_SIZE  (3u << 20)
#define SMALL_SIZE 300000u
#define SPLIT	   (1u << 20) /* where the two-Stream file is cut */

static char corpus[1024]; /* .../corpus/xz-utils */
static char tmpdir[1024];
static int gen_ok; /* all generated fixtures were made */

static void need_generated(void)
{
	ck_assert_msg(gen_ok, "generated fixtures are missing (is xz installed?)");
}

static void tpath(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static void cpath(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", corpus, name);
}

/* Opens path and reads its Index; returns xzdec_index_read's result. */
/* A source whose every read fails as one through a closed descriptor would. */
static struct memsrc *failing_src(void)
{
	struct memsrc *m = memsrc_new("", 0);

	memsrc_fail(m, 0, UINT64_MAX, -EBADF);
	return m;
}

static int open_index(const char *path, struct zsrc **src, struct xzdec_index **idx, struct zerr *e)
{
	struct stat st;

	*src = zmtest_src_open(path);
	ck_assert_int_eq(zsrc_stat(*src, &st), 0);
	memset(e, 0, sizeof(*e));
	return xzdec_index_read(*src, (uint64_t)st.st_size, idx, e);
}

/*
 * Decodes every Block in order with reads of chunk bytes.  If out is not
 * NULL the whole output is returned there (idx->usize must be sane).
 * Returns 0 or the first error, with *got the bytes decoded before it.
 */
static int decode_all(struct zsrc *src, const struct xzdec_index *idx, size_t chunk, uint8_t **out,
		      uint64_t *got, struct zerr *e)
{
	uint8_t *dst = NULL, *tmp = malloc(chunk);
	int ret = 0;

	ck_assert_ptr_nonnull(tmp);
	*got = 0;
	if (out) {
		dst = malloc(idx->usize ? idx->usize : 1);
		ck_assert_ptr_nonnull(dst);
	}
	for (size_t i = 0; i < idx->nblocks && !ret; i++) {
		struct xzdec_dec *d;
		ssize_t n;

		ret = xzdec_dec_open(src, &idx->blocks[i], NULL, &d, e);
		if (ret) {
			ck_assert_ptr_null(d);
			break;
		}
		while ((n = xzdec_dec_read(d, src, tmp, chunk, e)) > 0) {
			ck_assert_uint_le(*got + (uint64_t)n, idx->usize);
			if (dst)
				memcpy(dst + *got, tmp, (size_t)n);
			*got += (uint64_t)n;
		}
		if (n < 0)
			ret = (int)n;
		xzdec_dec_close(d);
	}
	free(tmp);
	if (out)
		*out = dst;
	return ret;
}

/* sha256 of buf as lowercase hex, by way of sha256sum(1). */
static void sha256_hex(const uint8_t *buf, size_t len, char hex[65])
{
	char path[PATH_MAX], cmd[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/sha.%d", tmpdir, (int)getpid());
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%64s", hex), 1);
	ck_assert_int_eq(pclose(f), 0);
	unlink(path);
}

static uint32_t crc32_buf(const uint8_t *p, size_t n, uint32_t crc)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0xEDB88320u & -(crc & 1));
	}
	return ~crc;
}

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put32(FILE *f, uint32_t v)
{
	uint8_t b[4];

	le32(b, v);
	fwrite(b, 1, 4, f);
}

static size_t put_vli(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	for (; v >= 0x80; v >>= 7)
		p[n++] = (uint8_t)(v | 0x80);
	p[n++] = (uint8_t)v;
	return n;
}

/*
 * Writes a one-Block .xz file by hand, so we know where every byte lies:
 * the data in LZMA2 uncompressed chunks, then the end marker `end` bytes
 * after the start of the Compressed Data, then a CRC32 Check (wrong if
 * bad_check).  The header asks for a 4 GiB dictionary.  Returns the
 * data length.
 */
static size_t write_handmade(const char *path, size_t end, int bad_check)
{
	static const uint8_t stream_hdr[] = { 0xFD, '7', 'z', 'X', 'Z', 0, 0, 1 };
	/* Block Header: 12 bytes, one filter (LZMA2, dict byte 40), no sizes */
	uint8_t bh[12] = { 0x02, 0x00, 0x21, 0x01, 40 }, idx[32] = { 0 }, foot[6];
	/* each chunk is a 3-byte header and up to 64 KiB of data */
	size_t nch = (end + 65538) / 65539, len = end - 3 * nch, csize, ilen, done;
	uint8_t *data = malloc(len);
	uint32_t x = 88172645u;
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(data);
	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		data[i] = (uint8_t)x;
	}
	fwrite(stream_hdr, 1, sizeof(stream_hdr), f);
	put32(f, crc32_buf(stream_hdr + 6, 2, 0));
	le32(bh + 8, crc32_buf(bh, 8, 0));
	fwrite(bh, 1, sizeof(bh), f);
	for (done = 0; done < len;) {
		size_t n = len - done < 65536 ? len - done : 65536;

		fputc(0x01, f); /* uncompressed chunk, dictionary reset */
		fputc((int)((n - 1) >> 8), f);
		fputc((int)((n - 1) & 0xFF), f);
		fwrite(data + done, 1, n, f);
		done += n;
	}
	fputc(0x00, f); /* end of LZMA2 data */
	csize = end + 1;
	for (size_t n = 12 + csize; n % 4; n++)
		fputc(0, f); /* Block Padding */
	put32(f, crc32_buf(data, len, 0) ^ (uint32_t)bad_check);

	ilen = 1;
	ilen += put_vli(idx + ilen, 1);
	ilen += put_vli(idx + ilen, 12 + csize + 4);
	ilen += put_vli(idx + ilen, len);
	ilen = (ilen + 3) & ~(size_t)3;
	fwrite(idx, 1, ilen, f);
	put32(f, crc32_buf(idx, ilen, 0));
	ilen += 4;
	le32(foot, (uint32_t)(ilen / 4 - 1)); /* Backward Size */
	foot[4] = 0;
	foot[5] = 1; /* Stream Flags: CRC32 */
	put32(f, crc32_buf(foot, 6, 0));
	fwrite(foot, 1, 6, f);
	fwrite("YZ", 1, 2, f);
	ck_assert_int_eq(fclose(f), 0);
	free(data);
	return len;
}

/* Decodes a generated file fully and compares it with the original. */
static void check_generated(const char *xzname, const char *origname, size_t chunk,
			    struct xzdec_index **keep)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct zerr e;
	uint8_t *orig, *out;
	size_t olen;
	uint64_t got;
	struct zsrc *src;

	need_generated();
	tpath(path, sizeof(path), origname);
	orig = zmtest_slurp(path, &olen);
	tpath(path, sizeof(path), xzname);
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->usize, olen);
	ck_assert_msg(decode_all(src, idx, chunk, &out, &got, &e) == 0, "%s: %s @%llu", xzname,
		      e.msg, (unsigned long long)e.coff);
	ck_assert_uint_eq(got, olen);
	ck_assert(memcmp(out, orig, olen) == 0);
	free(out);
	free(orig);
	zsrc_put(src);
	if (keep)
		*keep = idx;
	else
		xzdec_index_free(idx);
}

START_TEST(test_index_many_blocks)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct zerr e;
	uint64_t sum = 0;
	struct stat st;
	struct zsrc *src;

	need_generated();
	tpath(path, sizeof(path), "blocks.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	ck_assert_int_eq(zsrc_stat(src, &st), 0);
	ck_assert_uint_eq(idx->nblocks, ORIG_SIZE / 65536);
	ck_assert_uint_eq(idx->nstreams, 1);
	ck_assert_uint_eq(idx->padding, 0);
	ck_assert_uint_eq(idx->checks, 1u << XZDEC_CHECK_CRC64);
	ck_assert_uint_eq(idx->csize, (uint64_t)st.st_size);
	ck_assert_uint_eq(idx->blocks[0].coff, 12); /* right after the Stream Header */
	for (size_t i = 0; i < idx->nblocks; i++) {
		const struct xzdec_block *b = &idx->blocks[i];

		ck_assert_uint_eq(b->uoff, sum);
		if (i > 0)
			ck_assert_uint_eq(b->coff, b[-1].coff + b[-1].csize);
		ck_assert_uint_eq(b->csize, (b->unpadded + 3) & ~3ull);
		ck_assert_uint_eq(b->stream, 0);
		ck_assert_uint_eq(b->check, XZDEC_CHECK_CRC64);
		sum += b->usize;
	}
	ck_assert_uint_eq(sum, ORIG_SIZE);
	ck_assert_uint_eq(idx->usize, ORIG_SIZE);
	xzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

START_TEST(test_blocks_independent)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct zerr e;
	uint8_t *orig, *buf;
	size_t olen;
	struct zsrc *src;

	need_generated();
	tpath(path, sizeof(path), "orig.txt");
	orig = zmtest_slurp(path, &olen);
	tpath(path, sizeof(path), "blocks.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	buf = malloc(65536 + 1);
	/* backwards, so no Block can lean on state left by the one before */
	for (size_t i = idx->nblocks; i-- > 0;) {
		const struct xzdec_block *b = &idx->blocks[i];
		struct xzdec_dec *d;

		ck_assert_int_eq(xzdec_dec_open(src, b, NULL, &d, &e), 0);
		ck_assert_int_eq(xzdec_dec_read(d, src, buf, 65536 + 1, &e), (ssize_t)b->usize);
		ck_assert(memcmp(buf, orig + b->uoff, b->usize) == 0);
		ck_assert_uint_eq(xzdec_dec_tell(d), b->usize);
		ck_assert_int_eq(xzdec_dec_read(d, src, buf, 65536, &e), 0);
		xzdec_dec_close(d);
	}
	free(buf);
	free(orig);
	xzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/*
 * Issue 12: a decoder's buffers go back to the stock it was lent, not to a
 * process-wide one: another stock stays empty, and a second decoder of the
 * same Block takes them back out.
 */
START_TEST(test_spares_are_the_callers)
{
	char path[PATH_MAX];
	struct xzdec_spares *a, *b;
	struct xzdec_index *idx;
	struct xzdec_dec *d;
	struct zerr e;
	uint8_t buf[4096];
	size_t held;
	struct zsrc *src;

	need_generated();
	tpath(path, sizeof(path), "one.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	ck_assert_int_eq(xzdec_spares_new(&a), 0);
	ck_assert_int_eq(xzdec_spares_new(&b), 0);
	ck_assert_uint_eq(xzdec_spares_bytes(a), 0);
	ck_assert_int_eq(xzdec_dec_open(src, &idx->blocks[0], a, &d, &e), 0);
	ck_assert_int_eq(xzdec_dec_read(d, src, buf, sizeof(buf), &e), (ssize_t)sizeof(buf));
	xzdec_dec_close(d);
	held = xzdec_spares_bytes(a);
	ck_assert_uint_gt(held, 0); /* at least the decoder's struct, over 64 KiB */
	ck_assert_uint_eq(xzdec_spares_bytes(b), 0);
	ck_assert_int_eq(xzdec_dec_open(src, &idx->blocks[0], a, &d, &e), 0);
	ck_assert_int_eq(xzdec_dec_read(d, src, buf, sizeof(buf), &e), (ssize_t)sizeof(buf));
	ck_assert_uint_lt(xzdec_spares_bytes(a), held); /* reused, not allocated again */
	xzdec_dec_close(d);
	/* without a stock nothing is kept */
	ck_assert_int_eq(xzdec_dec_open(src, &idx->blocks[0], NULL, &d, &e), 0);
	xzdec_dec_close(d);
	ck_assert_uint_eq(xzdec_spares_bytes(b), 0);
	xzdec_spares_free(a);
	xzdec_spares_free(b);
	xzdec_spares_free(NULL);
	xzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/*
 * A spare of a megabyte or more, such as a dictionary, is written whole by
 * most Blocks: it sits at the start of a 2 MiB-aligned mapping of its own
 * (hugemem.h, after its size header), so that filling it faults once per
 * huge page.  It goes back to the stock and out again the same way.
 */
START_TEST(test_large_spares_are_huge_page_aligned)
{
	struct xzdec_spares *sp;
	unsigned char *p, *q;

	ck_assert_int_eq(xzdec_spares_new(&sp), 0);
	p = xzdec_spares_get(sp, 2u << 20);
	ck_assert_ptr_nonnull(p);
	ck_assert_msg((uintptr_t)p % (2u << 20) <= 64, "a 2 MiB spare at %p", (void *)p);
	memset(p, 0x5A, 2u << 20);
	xzdec_spares_put(sp, p);
	ck_assert_uint_eq(xzdec_spares_bytes(sp), 2u << 20);
	q = xzdec_spares_get(sp, 2u << 20);
	ck_assert_ptr_eq(q, p);
	xzdec_spares_put(sp, q);
	/* Under a megabyte: malloc's, freed by free (ASan checks the pairing). */
	xzdec_spares_put(sp, xzdec_spares_get(sp, 100000));
	xzdec_spares_free(sp);
	/* With no stock (a decoder opened without one) a large buffer goes back by its size too. */
	p = xzdec_spares_get(NULL, 3u << 20);
	ck_assert_ptr_nonnull(p);
	ck_assert_msg((uintptr_t)p % (2u << 20) <= 64, "a 3 MiB buffer at %p", (void *)p);
	memset(p, 0xA5, 3u << 20);
	xzdec_spares_put(NULL, p);
}
END_TEST

START_TEST(test_small_reads)
{
	static const size_t sizes[] = { 1, 3, 7, 4093, 65537, 11 };
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct xzdec_dec *d;
	struct zerr e;
	uint8_t *orig, *buf;
	size_t olen, pos = 0, k = 0;
	ssize_t n;
	struct zsrc *src;

	need_generated();
	tpath(path, sizeof(path), "orig.txt");
	orig = zmtest_slurp(path, &olen);
	tpath(path, sizeof(path), "one.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->nblocks, 1);
	ck_assert_int_eq(xzdec_dec_open(src, &idx->blocks[0], NULL, &d, &e), 0);
	buf = malloc(olen);
	while ((n = xzdec_dec_read(d, src, buf + pos, sizes[k++ % 6], &e)) > 0) {
		pos += (size_t)n;
		ck_assert_uint_eq(xzdec_dec_tell(d), pos);
		ck_assert_uint_le(pos, olen);
		if (pos + 65537 > olen)
			break; /* finish below with a read that is too big */
	}
	ck_assert_int_ge(n, 0);
	n = xzdec_dec_read(d, src, buf + pos, olen - pos, &e);
	ck_assert_int_eq(n, (ssize_t)(olen - pos));
	ck_assert_int_eq(xzdec_dec_read(d, src, buf, 1, &e), 0);
	ck_assert(memcmp(buf, orig, olen) == 0);
	xzdec_dec_close(d);
	free(buf);
	free(orig);
	xzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

START_TEST(test_one_big_block)
{
	/* one 3 MiB Block from an 8 MiB dictionary header: capped, same bytes */
	check_generated("one.xz", "orig.txt", ORIG_SIZE + 5, NULL);
}
END_TEST

START_TEST(test_sizes_in_headers)
{
	struct xzdec_index *idx;

	/* xz -T2 writes both sizes into each Block Header */
	check_generated("sized.xz", "orig.txt", 10007, &idx);
	ck_assert_uint_gt(idx->nblocks, 1);
	xzdec_index_free(idx);
}
END_TEST

START_TEST(test_two_streams_padding)
{
	struct xzdec_index *idx;

	check_generated("two.xz", "orig.txt", 65536, &idx);
	ck_assert_uint_eq(idx->nstreams, 2);
	ck_assert_uint_eq(idx->padding, 4);
	ck_assert_uint_eq(idx->checks, (1u << XZDEC_CHECK_CRC32) | (1u << XZDEC_CHECK_SHA256));
	ck_assert_uint_eq(idx->blocks[0].stream, 0);
	ck_assert_uint_eq(idx->blocks[0].check, XZDEC_CHECK_CRC32);
	ck_assert_uint_eq(idx->blocks[idx->nblocks - 1].stream, 1);
	ck_assert_uint_eq(idx->blocks[idx->nblocks - 1].check, XZDEC_CHECK_SHA256);
	ck_assert_uint_eq(idx->blocks[idx->nblocks - 1].uoff, SPLIT);
	xzdec_index_free(idx);
}
END_TEST

START_TEST(test_check_types)
{
	static const struct {
		const char *file;
		uint32_t id;
	} t[] = { { "none.xz", XZDEC_CHECK_NONE },
		  { "crc32.xz", XZDEC_CHECK_CRC32 },
		  { "crc64.xz", XZDEC_CHECK_CRC64 },
		  { "sha256.xz", XZDEC_CHECK_SHA256 } };
	struct xzdec_index *idx;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		check_generated(t[i].file, "small.txt", 4096, &idx);
		ck_assert_uint_eq(idx->checks, 1u << t[i].id);
		ck_assert_uint_eq(idx->blocks[0].check, t[i].id);
		xzdec_index_free(idx);
	}
}
END_TEST

/* The Check is verified before the read that returns the last byte. */
START_TEST(test_check_mismatch_at_end)
{
	static const char *files[] = { "bad-1-check-crc32.xz", "bad-1-check-crc64.xz",
				       "bad-1-check-sha256.xz" };
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct xzdec_dec *d;
	struct zerr e;
	uint8_t buf[64];
	struct zsrc *src;

	for (size_t i = 0; i < 3; i++) {
		cpath(path, sizeof(path), files[i]);
		ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
		ck_assert_uint_eq(idx->nblocks, 1);
		ck_assert_uint_eq(idx->blocks[0].usize, 13);

		ck_assert_int_eq(xzdec_dec_open(src, &idx->blocks[0], NULL, &d, &e), 0);
		ck_assert_int_eq(xzdec_dec_read(d, src, buf, sizeof(buf), &e), -EIO);
		ck_assert_msg(strstr(e.msg, "Check mismatch"), "%s: %s", files[i], e.msg);
		ck_assert_uint_eq(e.coff, idx->blocks[0].coff + idx->blocks[0].csize);
		ck_assert_int_eq(xzdec_dec_read(d, src, buf, sizeof(buf), &e), -EIO);
		xzdec_dec_close(d);

		/* bytes short of the end come unverified; the last one does not */
		ck_assert_int_eq(xzdec_dec_open(src, &idx->blocks[0], NULL, &d, &e), 0);
		ck_assert_int_eq(xzdec_dec_read(d, src, buf, 12, &e), 12);
		ck_assert_int_eq(xzdec_dec_read(d, src, buf, 1, &e), -EIO);
		xzdec_dec_close(d);
		xzdec_index_free(idx);
		zsrc_put(src);
	}
}
END_TEST

/*
 * Handmade Blocks whose LZMA2 end marker lies 4 KiB .. 128 KiB into the
 * data, so that for some input chunk size the last byte comes out before
 * the Padding and Check have been read: they must be read anyway.
 */
START_TEST(test_check_before_last_byte)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct xzdec_dec *d;
	struct zerr e;
	struct zsrc *src;

	snprintf(path, sizeof(path), "%s/hand.%d.xz", tmpdir, (int)getpid());
	for (size_t end = 4096; end <= 131072; end *= 2) {
		for (int bad = 0; bad <= 1; bad++) {
			size_t len = write_handmade(path, end, bad);
			uint8_t *buf = malloc(len);

			ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
			ck_assert_uint_eq(idx->nblocks, 1);
			ck_assert_uint_eq(idx->usize, len);

			/* in one read */
			ck_assert_int_eq(xzdec_dec_open(src, &idx->blocks[0], NULL, &d, &e), 0);
			ck_assert_int_eq(xzdec_dec_read(d, src, buf, len, &e),
					 bad ? -EIO : (ssize_t)len);
			xzdec_dec_close(d);

			/* and with the last byte on its own */
			ck_assert_int_eq(xzdec_dec_open(src, &idx->blocks[0], NULL, &d, &e), 0);
			ck_assert_int_eq(xzdec_dec_read(d, src, buf, len - 1, &e),
					 (ssize_t)len - 1);
			if (bad) {
				ck_assert_int_eq(xzdec_dec_read(d, src, buf, 1, &e), -EIO);
				ck_assert_str_eq(e.msg, "Check mismatch (CRC32)");
			} else {
				ck_assert_int_eq(xzdec_dec_read(d, src, buf, 1, &e), 1);
				ck_assert_int_eq(xzdec_dec_read(d, src, buf, 1, &e), 0);
			}
			xzdec_dec_close(d);
			xzdec_index_free(idx);
			zsrc_put(src);
			free(buf);
		}
	}
	unlink(path);
}
END_TEST

/* bad-2-index-2: the Index says 13+0 bytes where the data holds 6+7. */
START_TEST(test_lying_index)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct zerr e;
	struct zsrc *src;
	int ret, failed = 0;

	cpath(path, sizeof(path), "bad-2-index-2.xz");
	ret = open_index(path, &src, &idx, &e);
	if (ret) {
		ck_assert_int_eq(ret, -EINVAL);
		zsrc_put(src);
		return;
	}
	for (size_t i = 0; i < idx->nblocks; i++) {
		struct xzdec_dec *d;
		/* exactly usize bytes, so ASan sees any write past them */
		uint8_t *buf = malloc(idx->blocks[i].usize + 1);
		ssize_t n;

		ret = xzdec_dec_open(src, &idx->blocks[i], NULL, &d, &e);
		if (ret == 0) {
			do
				n = xzdec_dec_read(d, src, buf, idx->blocks[i].usize, &e);
			while (n > 0);
			if (n < 0) {
				ck_assert_int_eq(n, -EIO);
				failed = 1;
			}
		} else {
			failed = 1;
		}
		xzdec_dec_close(d);
		free(buf);
	}
	ck_assert_msg(failed, "a lying Index decoded without error");
	xzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/* An absurd Uncompressed Size costs neither memory nor a crash: refused at open. */
START_TEST(test_huge_uncomp)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct xzdec_dec *d;
	struct zerr e;
	struct zsrc *src;

	cpath(path, sizeof(path), "bad-1-index-huge-uncomp.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	ck_assert_uint_gt(idx->usize, 1ull << 60);
	ck_assert_int_eq(xzdec_dec_open(src, &idx->blocks[0], NULL, &d, &e), -EIO);
	ck_assert_ptr_null(d);
	ck_assert_msg(strstr(e.msg, "Index claims") != NULL, "reason: %s", e.msg);
	xzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

START_TEST(test_bad_structure_einval)
{
	static const char *files[] = { "bad-0-header_magic.xz",
				       "bad-0-footer_magic.xz",
				       "bad-0-backward_size.xz",
				       "bad-0-empty-truncated.xz",
				       "bad-0pad-empty.xz",
				       "bad-0cat-alone.xz",
				       "bad-1-stream_flags-1.xz",
				       "bad-2-index-3.xz",
				       "bad-3-index-uncomp-overflow.xz" };
	char path[PATH_MAX];
	struct xzdec_index *idx = (void *)1;
	struct zerr e;
	struct zsrc *src;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		cpath(path, sizeof(path), files[i]);
		ck_assert_msg(open_index(path, &src, &idx, &e) == -EINVAL, "%s", files[i]);
		ck_assert_ptr_null(idx);
		ck_assert_str_ne(e.msg, "");
		zsrc_put(src);
	}
}
END_TEST

START_TEST(test_index_memlimit)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct zerr e;
	struct zsrc *src;

	/* its Index claims more records than 64 MiB may hold */
	cpath(path, sizeof(path), "bad-0-index-1.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), -ENOMEM);
	ck_assert_ptr_null(idx);
	zsrc_put(src);
}
END_TEST

START_TEST(test_unsupported_filter)
{
	static const char *files[] = { "unsupported-block_header.xz",
				       "unsupported-filter_flags-1.xz",
				       "unsupported-filter_flags-2.xz",
				       "unsupported-filter_flags-3.xz" };
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct xzdec_dec *d = (void *)1;
	struct zerr e;
	struct zsrc *src;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		cpath(path, sizeof(path), files[i]);
		ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
		ck_assert_msg(xzdec_dec_open(src, &idx->blocks[0], NULL, &d, &e) == -ENOTSUP, "%s",
			      files[i]);
		ck_assert_ptr_null(d);
		xzdec_index_free(idx);
		zsrc_put(src);
	}
}
END_TEST

START_TEST(test_unsupported_check)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct zerr e;
	uint8_t *out;
	uint64_t got;
	struct zsrc *src;

	cpath(path, sizeof(path), "unsupported-check.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->checks, 1u << 2);
	ck_assert_str_eq(xzdec_check_name(idx->blocks[0].check), "Unknown-2");
	ck_assert_int_eq(decode_all(src, idx, 64, &out, &got, &e), 0);
	ck_assert_uint_eq(got, 13);
	ck_assert(memcmp(out, "Hello\nWorld!\n", 13) == 0);
	free(out);
	xzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/* Index entries that contradict the Block Header are caught. */
START_TEST(test_header_disagrees)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct xzdec_block b;
	struct xzdec_dec *d;
	struct zerr e;
	uint8_t buf[64];
	struct zsrc *src;

	/* both sizes in the header */
	cpath(path, sizeof(path), "good-1-block_header-1.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	b = idx->blocks[0];
	b.unpadded += 4;
	b.csize += 4;
	ck_assert_int_eq(xzdec_dec_open(src, &b, NULL, &d, &e), -EIO);
	ck_assert_str_eq(e.msg, "Block Header disagrees with Index");
	b = idx->blocks[0];
	b.usize = 12;
	ck_assert_int_eq(xzdec_dec_open(src, &b, NULL, &d, &e), -EIO);
	ck_assert_str_eq(e.msg, "Block Header disagrees with Index");
	xzdec_index_free(idx);
	zsrc_put(src);

	/* no sizes in the header: the data must match the Index's usize */
	cpath(path, sizeof(path), "good-1-check-crc32.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	for (int delta = -1; delta <= 1; delta += 2) {
		b = idx->blocks[0];
		b.usize += (uint64_t)(int64_t)delta;
		ck_assert_int_eq(xzdec_dec_open(src, &b, NULL, &d, &e), 0);
		ck_assert_int_eq(xzdec_dec_read(d, src, buf, sizeof(buf), &e), -EIO);
		xzdec_dec_close(d);
	}
	xzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

START_TEST(test_empty_block)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct xzdec_dec *d;
	struct zerr e;
	uint8_t buf[16];
	struct zsrc *src;

	cpath(path, sizeof(path), "good-1-empty-bcj-lzma2.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->nblocks, 1);
	ck_assert_uint_eq(idx->blocks[0].usize, 0);
	ck_assert_int_eq(xzdec_dec_open(src, &idx->blocks[0], NULL, &d, &e), 0);
	ck_assert_int_eq(xzdec_dec_read(d, src, buf, sizeof(buf), &e), 0);
	ck_assert_int_eq(xzdec_dec_read(d, src, buf, sizeof(buf), &e), 0);
	xzdec_dec_close(d);
	xzdec_index_free(idx);
	zsrc_put(src);

	cpath(path, sizeof(path), "good-0catpad-empty.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->nblocks, 0);
	ck_assert_uint_eq(idx->nstreams, 2);
	ck_assert_uint_eq(idx->padding, 4);
	ck_assert_uint_eq(idx->usize, 0);
	xzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/*
 * Issue 18: xzdec_block_verify decodes a Block nobody reads to its end:
 * an honest empty one passes, and a Block of data whose Index entry says
 * 0 bytes fails with -EIO, as `xz -t` says corrupt.
 */
START_TEST(test_block_verify)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct xzdec_block b;
	struct zerr e;
	struct zsrc *src;

	cpath(path, sizeof(path), "good-1-empty-bcj-lzma2.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	ck_assert_int_eq(xzdec_block_verify(src, &idx->blocks[0], NULL, &e), 0);
	xzdec_index_free(idx);
	zsrc_put(src);

	cpath(path, sizeof(path), "good-1-check-crc64.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	b = idx->blocks[0];
	ck_assert_uint_gt(b.usize, 0);
	ck_assert_int_eq(xzdec_block_verify(src, &b, NULL, &e), 0);
	b.usize = 0;
	ck_assert_int_eq(xzdec_block_verify(src, &b, NULL, &e), -EIO);
	ck_assert_uint_ge(e.coff, b.coff);
	ck_assert_uint_le(e.coff, b.coff + b.csize);
	xzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/* A file that shrinks under us gives -EIO, not a bogus success. */
START_TEST(test_truncated)
{
	char from[PATH_MAX], path[PATH_MAX];
	struct xzdec_index *idx;
	struct xzdec_dec *d;
	struct zerr e;
	struct stat st;
	uint8_t buf[4096];
	const struct xzdec_block *last;
	ssize_t n;
	struct zsrc *src;
	struct memsrc *bad;

	need_generated();
	tpath(from, sizeof(from), "blocks.xz");
	snprintf(path, sizeof(path), "%s/trunc.%d.xz", tmpdir, (int)getpid());
	ck_assert_int_eq(zmtest_sh(".", "cp '%s' '%s'", from, path), 0);
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	ck_assert_int_eq(zsrc_stat(src, &st), 0);
	last = &idx->blocks[idx->nblocks - 1];
	ck_assert_int_eq(truncate(path, (off_t)(last->coff + last->csize / 2)), 0);

	ck_assert_int_eq(xzdec_dec_open(src, last, NULL, &d, &e), 0);
	while ((n = xzdec_dec_read(d, src, buf, sizeof(buf), &e)) > 0)
		;
	ck_assert_int_eq(n, -EIO);
	xzdec_dec_close(d);
	xzdec_index_free(idx);

	/* the footer is gone: the old size reads short, the new one is corrupt */
	ck_assert_int_eq(xzdec_index_read(src, (uint64_t)st.st_size, &idx, &e), -EIO);
	ck_assert_int_eq(zsrc_stat(src, &st), 0);
	ck_assert_int_eq(xzdec_index_read(src, (uint64_t)st.st_size, &idx, &e), -EINVAL);
	ck_assert_int_eq(xzdec_index_read(src, 0, &idx, &e), -EINVAL);
	bad = failing_src();
	ck_assert_int_eq(xzdec_index_read(memsrc_src(bad), 100, &idx, &e), -EIO);
	memsrc_destroy(bad);
	ck_assert_ptr_null(idx);
	zsrc_put(src);
	unlink(path);
}
END_TEST

START_TEST(test_check_name)
{
	ck_assert_str_eq(xzdec_check_name(XZDEC_CHECK_NONE), "None");
	ck_assert_str_eq(xzdec_check_name(XZDEC_CHECK_CRC32), "CRC32");
	ck_assert_str_eq(xzdec_check_name(XZDEC_CHECK_CRC64), "CRC64");
	ck_assert_str_eq(xzdec_check_name(XZDEC_CHECK_SHA256), "SHA-256");
	ck_assert_str_eq(xzdec_check_name(7), "Unknown-7");
	ck_assert_str_eq(xzdec_check_name(15), "Unknown-15");
	ck_assert_str_eq(xzdec_check_name(16), "Unknown");
	xzdec_index_free(NULL);
	xzdec_dec_close(NULL);
}
END_TEST

/*
 * Writes an .xz file of nstreams Streams, each with nblocks Blocks that the
 * Index says hold usize bytes each.  The Blocks themselves are 16 zero
 * bytes: xzdec_index_read never looks inside a Block.
 */
static void write_index_only(const char *path, unsigned nstreams, unsigned nblocks, uint64_t usize)
{
	static const uint8_t stream_hdr[] = { 0xFD, '7', 'z', 'X', 'Z', 0, 0, 1 };
	static const uint8_t block[16];
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	for (unsigned s = 0; s < nstreams; s++) {
		uint8_t idx[256] = { 0 }, foot[6];
		size_t ilen = 1;

		fwrite(stream_hdr, 1, sizeof(stream_hdr), f);
		put32(f, crc32_buf(stream_hdr + 6, 2, 0));
		for (unsigned b = 0; b < nblocks; b++)
			fwrite(block, 1, sizeof(block), f);
		ilen += put_vli(idx + ilen, nblocks);
		for (unsigned b = 0; b < nblocks; b++) {
			ck_assert_uint_lt(ilen, sizeof(idx) - 24);
			ilen += put_vli(idx + ilen, sizeof(block)); /* Unpadded Size */
			ilen += put_vli(idx + ilen, usize);
		}
		ilen = (ilen + 3) & ~(size_t)3;
		fwrite(idx, 1, ilen, f);
		put32(f, crc32_buf(idx, ilen, 0));
		ilen += 4;
		le32(foot, (uint32_t)(ilen / 4 - 1));
		foot[4] = 0;
		foot[5] = 1;
		put32(f, crc32_buf(foot, 6, 0));
		fwrite(foot, 1, 6, f);
		fwrite("YZ", 1, 2, f);
	}
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * st_size is an off_t: an Index whose sizes add up to more than INT64_MAX
 * is refused, in one Stream or across Streams; INT64_MAX itself is fine.
 */
START_TEST(test_usize_bound)
{
	static const struct {
		unsigned nstreams, nblocks;
		uint64_t usize;
		int ok;
	} cases[] = {
		{ 1, 1, (uint64_t)INT64_MAX, 1 },
		{ 2, 1, 1ull << 62, 0 },		/* 2^63 across two Streams */
		{ 1, 2, 1ull << 62, 0 },		/* 2^63 in one Stream */
		{ 1, 3, (1ull << 62) - 1, 0 },		/* wraps nothing, still too big */
		{ 3, 1, ((uint64_t)INT64_MAX) / 3, 1 }, /* just under */
	};
	char path[PATH_MAX];

	tpath(path, sizeof(path), "usize-bound.xz");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct xzdec_index *idx;
		struct zerr e;
		struct zsrc *src;
		int ret;

		write_index_only(path, cases[i].nstreams, cases[i].nblocks, cases[i].usize);
		ret = open_index(path, &src, &idx, &e);
		if (cases[i].ok) {
			ck_assert_msg(ret == 0, "case %zu: %d %s", i, ret, e.msg);
			ck_assert_uint_eq(idx->usize,
					  cases[i].usize * cases[i].nstreams * cases[i].nblocks);
			ck_assert_uint_le(idx->usize, XZDEC_MAX_USIZE);
			for (size_t b = 0; b < idx->nblocks; b++)
				ck_assert_uint_le(idx->blocks[b].uoff + idx->blocks[b].usize,
						  idx->usize);
			xzdec_index_free(idx);
		} else {
			ck_assert_msg(ret == -EINVAL, "case %zu: %d, want -EINVAL", i, ret);
			ck_assert_ptr_null(idx);
			ck_assert_msg(e.msg[0], "case %zu: no message", i);
		}
		zsrc_put(src);
	}
}
END_TEST

/*
 * A decoder holds no source: it reads from the source of each call.  Here
 * the source it was opened with is dropped (closing its file) and another
 * .xz file opened; the decoder then goes on from a new source of the same
 * file and must produce that file's bytes, never the other's.
 */
START_TEST(test_src_per_call)
{
	char path[PATH_MAX], other[PATH_MAX];
	struct xzdec_index *idx;
	struct xzdec_dec *d;
	struct zerr e;
	uint8_t *orig, *buf;
	size_t olen, half;
	struct zsrc *src, *src2, *osrc;

	need_generated();
	tpath(path, sizeof(path), "orig.txt");
	orig = zmtest_slurp(path, &olen);
	tpath(path, sizeof(path), "one.xz");
	tpath(other, sizeof(other), "none.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->nblocks, 1);
	ck_assert_uint_eq(idx->blocks[0].usize, olen);
	ck_assert_int_eq(xzdec_dec_open(src, &idx->blocks[0], NULL, &d, &e), 0);
	buf = malloc(olen);
	ck_assert_ptr_nonnull(buf);
	half = olen / 3;
	ck_assert_int_eq(xzdec_dec_read(d, src, buf, half, &e), (ssize_t)half);
	zsrc_put(src);
	osrc = zmtest_src_open(other);
	src2 = zmtest_src_open(path);
	ck_assert_int_eq(xzdec_dec_read(d, src2, buf + half, olen - half, &e),
			 (ssize_t)(olen - half));
	ck_assert_msg(memcmp(buf, orig, olen) == 0, "the decoder read another file's bytes");
	ck_assert_int_eq(xzdec_dec_read(d, src2, buf, 1, &e), 0);
	xzdec_dec_close(d);
	/* and a read through the other file's source fails or is caught, never served whole */
	ck_assert_int_eq(xzdec_dec_open(src2, &idx->blocks[0], NULL, &d, &e), 0);
	ck_assert_int_eq(xzdec_dec_read(d, src2, buf, half, &e), (ssize_t)half);
	ck_assert_int_lt(xzdec_dec_read(d, osrc, buf + half, olen - half, &e), 0);
	xzdec_dec_close(d);
	zsrc_put(osrc);
	zsrc_put(src2);
	free(buf);
	free(orig);
	xzdec_index_free(idx);
}
END_TEST

struct row {
	char *file, *expect, *sha256, *usize, *format, *index;
};

/* Calls fn for each xz row of EXPECTED.tsv whose expect column matches. */
static int for_each_row(int want_error, void (*fn)(const struct row *))
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	int rows = 0;
	FILE *f;

	cpath(path, sizeof(path), "EXPECTED.tsv");
	f = fopen(path, "r");
	ck_assert_msg(f, "corpus is missing: %s", path);
	while (getline(&line, &cap, f) > 0) {
		char *col[10], *p = line;
		struct row r;
		int n = 0;

		if (line[0] == '#')
			continue;
		line[strcspn(line, "\n")] = 0;
		while (n < 10 && (col[n] = strsep(&p, "\t")))
			n++;
		ck_assert_int_eq(n, 10);
		r = (struct row){ col[0], col[1], col[2], col[3], col[7], col[8] };
		if (strcmp(r.format, "xz") != 0 || (strcmp(r.expect, "error") == 0) != want_error)
			continue;
		fn(&r);
		rows++;
	}
	free(line);
	fclose(f);
	return rows;
}

static void good_row(const struct row *r)
{
	char path[PATH_MAX], hex[65];
	struct xzdec_index *idx;
	struct zerr e;
	uint8_t *out;
	uint64_t got;
	struct zsrc *src;

	cpath(path, sizeof(path), r->file);
	ck_assert_msg(open_index(path, &src, &idx, &e) == 0, "%s: %s", r->file, e.msg);
	ck_assert_msg(decode_all(src, idx, 1000, &out, &got, &e) == 0, "%s: %s", r->file, e.msg);
	ck_assert_msg(got == strtoull(r->usize, NULL, 10), "%s: size", r->file);
	sha256_hex(out, got, hex);
	ck_assert_msg(strcmp(hex, r->sha256) == 0, "%s: sha256", r->file);
	free(out);
	xzdec_index_free(idx);
	zsrc_put(src);
}

START_TEST(test_corpus_good)
{
	ck_assert_int_eq(for_each_row(0, good_row), 23);
}
END_TEST

/* Never a full success, and failing at Index time exactly when xz -l does. */
static void bad_row(const struct row *r)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct zerr e;
	uint64_t got;
	struct zsrc *src;
	int ret;

	cpath(path, sizeof(path), r->file);
	ret = open_index(path, &src, &idx, &e);
	if (strncmp(r->index, "fail:", 5) == 0) {
		ck_assert_msg(ret < 0, "%s: Index accepted", r->file);
		ck_assert_ptr_null(idx);
		ck_assert_msg(e.msg[0], "%s: no message", r->file);
	} else {
		ck_assert_msg(ret == 0, "%s: %s", r->file, e.msg);
		ret = decode_all(src, idx, 4096, NULL, &got, &e);
		ck_assert_msg(ret == -EIO || ret == -ENOTSUP, "%s: decoded (%d)", r->file, ret);
		ck_assert_msg(e.msg[0], "%s: no message", r->file);
		xzdec_index_free(idx);
	}
	zsrc_put(src);
}

START_TEST(test_corpus_bad)
{
	ck_assert_int_eq(for_each_row(1, bad_row), 48);
}
END_TEST

/* ------------------------------------------------------------- salvage */

/* Scans path; returns xzdec_index_scan's result, *src open either way (zsrc_put it). */
static int open_scan(const char *path, struct zsrc **src, struct xzdec_index **idx, struct zerr *e)
{
	struct stat st;
	int ret;

	*src = zmtest_src_open(path);
	ck_assert_int_eq(zsrc_stat(*src, &st), 0);
	memset(e, 0, sizeof(*e));
	*idx = (void *)1;
	ret = xzdec_index_scan(*src, (uint64_t)st.st_size, idx, e);
	if (ret)
		ck_assert_ptr_null(*idx);
	return ret;
}

/* Copies tmpdir/src to tmpdir/dst, cut to cut bytes (if >= 0), byte xoff ^= mask (if >= 0). */
static void variant(const char *src, const char *dst, long long cut, long long xoff, int mask)
{
	char path[PATH_MAX];
	uint8_t c;
	int wfd;

	ck_assert_int_eq(zmtest_sh(tmpdir, "cp %s %s", src, dst), 0);
	tpath(path, sizeof(path), dst);
	if (cut >= 0)
		ck_assert_int_eq(truncate(path, (off_t)cut), 0);
	if (xoff >= 0) {
		wfd = open(path, O_RDWR | O_CLOEXEC);
		ck_assert_int_ge(wfd, 0);
		ck_assert_int_eq(pread(wfd, &c, 1, (off_t)xoff), 1);
		c ^= (uint8_t)mask;
		ck_assert_int_eq(pwrite(wfd, &c, 1, (off_t)xoff), 1);
		close(wfd);
	}
}

/* The intact file's Index (xzdec_index_read), to say where Blocks are. */
static struct xzdec_index *read_index(const char *name)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct zerr e;
	struct zsrc *src;

	need_generated();
	tpath(path, sizeof(path), name);
	ck_assert_msg(open_index(path, &src, &idx, &e) == 0, "%s: %s", name, e.msg);
	zsrc_put(src);
	return idx;
}

static void same_block(const struct xzdec_block *a, const struct xzdec_block *b, size_t i,
		       const char *name)
{
	ck_assert_msg(a->coff == b->coff && a->csize == b->csize && a->unpadded == b->unpadded &&
			      a->uoff == b->uoff && a->usize == b->usize &&
			      a->stream == b->stream && a->check == b->check,
		      "%s: Block %zu differs: coff %llu/%llu csize %llu/%llu usize %llu/%llu", name,
		      i, (unsigned long long)a->coff, (unsigned long long)b->coff,
		      (unsigned long long)a->csize, (unsigned long long)b->csize,
		      (unsigned long long)a->usize, (unsigned long long)b->usize);
}

/*
 * Scans path (a file made from an original whose Index is `whole`, or NULL)
 * and holds the result to the format and to `xz -dc`:
 *  - salvaged as `damaged` says, with a reason when damaged;
 *  - exactly `keep` whole Blocks (if keep >= 0), each the same as whole's,
 *    and, for a file cut short inside a Block, that Block's start after
 *    them (cut = 1, the last);
 *  - every Block decodes through xzdec_dec to usize bytes in all, which are
 *    a prefix of what xz -dc prints: all of it when undamaged or cut short.
 * Returns the number of whole Blocks kept.
 */
static size_t expect_scan(const char *path, const struct xzdec_index *whole, int damaged, long keep)
{
	char cmd[3 * PATH_MAX], out[PATH_MAX];
	struct xzdec_index *idx;
	struct zerr e, de = { 0 };
	uint8_t *got, *want;
	uint64_t glen;
	size_t wlen, nwhole;
	struct zsrc *src;
	int ret;

	ret = open_scan(path, &src, &idx, &e);
	ck_assert_msg(ret == 0, "%s: scan %d: %s @%llu", path, ret, e.msg,
		      (unsigned long long)e.coff);
	ck_assert_msg(idx->salvaged == damaged, "%s: salvaged %d (%s @%llu)", path, idx->salvaged,
		      e.msg, (unsigned long long)e.coff);
	if (damaged) {
		ck_assert_msg(e.msg[0], "%s: salvaged without a reason", path);
		ck_assert_uint_eq(idx->damage_coff, e.coff);
	}
	nwhole = idx->nblocks;
	if (nwhole && idx->blocks[nwhole - 1].cut) {
		ck_assert_msg(e.cut, "%s: a cut Block, but the reason '%s' is not a cut", path,
			      e.msg);
		nwhole--;
	}
	for (size_t i = 0; i < nwhole; i++)
		ck_assert_msg(!idx->blocks[i].cut, "%s: Block %zu is cut but not the last", path,
			      i);
	if (keep >= 0)
		ck_assert_msg(nwhole == (size_t)keep, "%s: %zu whole Blocks, want %ld (%s @%llu)",
			      path, nwhole, keep, e.msg, (unsigned long long)e.coff);
	if (whole) {
		ck_assert_uint_le(idx->nblocks, whole->nblocks);
		for (size_t i = 0; i < nwhole; i++)
			same_block(&idx->blocks[i], &whole->blocks[i], i, path);
	}
	ck_assert_msg(decode_all(src, idx, 4093, &got, &glen, &de) == 0, "%s: decode: %s @%llu",
		      path, de.msg, (unsigned long long)de.coff);
	ck_assert_uint_eq(glen, idx->usize);
	snprintf(out, sizeof(out), "%s.xzcat", path);
	snprintf(cmd, sizeof(cmd), "xz -dc < '%s' > '%s' 2>/dev/null; true", path, out);
	ck_assert_int_eq(system(cmd), 0);
	want = zmtest_slurp(out, &wlen);
	ck_assert_msg(glen <= wlen, "%s: %llu bytes, xz -dc gave only %zu", path,
		      (unsigned long long)glen, wlen);
	if (!damaged || e.cut)
		ck_assert_msg(glen == wlen, "%s: %llu bytes, xz -dc gave %zu", path,
			      (unsigned long long)glen, wlen);
	ck_assert_msg(memcmp(got, want, glen) == 0, "%s: not a prefix of xz -dc's output", path);
	free(got);
	free(want);
	unlink(out);
	xzdec_index_free(idx);
	zsrc_put(src);
	return nwhole;
}

/* Blocks of idx that end at or before cut. */
static long blocks_before(const struct xzdec_index *idx, uint64_t cut)
{
	long k = 0;

	while ((size_t)k < idx->nblocks && idx->blocks[k].coff + idx->blocks[k].csize <= cut)
		k++;
	return k;
}

/* An undamaged file scans to exactly what xzdec_index_read says. */
START_TEST(test_scan_whole)
{
	static const char *const files[] = { "blocks.xz", "one.xz",  "sized.xz", "two.xz",
					     "six.xz",	  "twob.xz", "none.xz",	 "sha256.xz" };

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct xzdec_index *whole = read_index(files[f]), *idx;
		char path[PATH_MAX];
		struct zerr e;
		struct zsrc *src;

		tpath(path, sizeof(path), files[f]);
		expect_scan(path, whole, 0, (long)whole->nblocks);
		ck_assert_int_eq(open_scan(path, &src, &idx, &e), 0);
		ck_assert_uint_eq(idx->usize, whole->usize);
		ck_assert_uint_eq(idx->csize, whole->csize);
		ck_assert_uint_eq(idx->nstreams, whole->nstreams);
		ck_assert_uint_eq(idx->padding, whole->padding);
		ck_assert_uint_eq(idx->checks, whole->checks);
		ck_assert_uint_eq(idx->damage_coff, 0);
		xzdec_index_free(idx);
		xzdec_index_free(whole);
		zsrc_put(src);
	}
}
END_TEST

/* Cut at every 10% (no Index, no Footer): every whole Block before the cut, and the cut one. */
START_TEST(test_scan_truncated)
{
	static const char *const files[] = { "blocks.xz", "sized.xz", "six.xz" };

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct xzdec_index *whole = read_index(files[f]);
		const struct xzdec_block *last = &whole->blocks[whole->nblocks - 1];
		uint64_t s = whole->csize, iend = last->coff + last->csize;
		char path[PATH_MAX], name[64];

		for (int p = 1; p <= 9; p++) {
			snprintf(name, sizeof(name), "t%zu-%d.xz", f, p);
			variant(files[f], name, (long long)(s * p / 10), -1, 0);
			tpath(path, sizeof(path), name);
			expect_scan(path, whole, 1, blocks_before(whole, s * p / 10));
		}
		/* right at a Block's end; inside the Index; inside the Footer */
		variant(files[f], "t-bend.xz", (long long)whole->blocks[2].coff, -1, 0);
		tpath(path, sizeof(path), "t-bend.xz");
		expect_scan(path, whole, 1, 2);
		variant(files[f], "t-index.xz", (long long)iend + 2, -1, 0);
		tpath(path, sizeof(path), "t-index.xz");
		expect_scan(path, whole, 1, (long)whole->nblocks);
		variant(files[f], "t-footer.xz", (long long)s - 5, -1, 0);
		tpath(path, sizeof(path), "t-footer.xz");
		expect_scan(path, whole, 1, (long)whole->nblocks);
		/* inside the first Block: nothing, but still a salvage */
		variant(files[f], "t-first.xz", 40, -1, 0);
		tpath(path, sizeof(path), "t-first.xz");
		expect_scan(path, whole, 1, 0);
		xzdec_index_free(whole);
	}
}
END_TEST

/*
 * A file cut short (still being written, or truncated) salvages to exactly
 * what `xz -dc` prints before its error: the whole Blocks before the cut and
 * the start of the Block the file ends in, whose Check was never read.
 */
static void expect_xz_dc(const char *name, long long cut)
{
	char path[PATH_MAX], out[PATH_MAX + 8], cmd[3 * PATH_MAX], vname[64];
	struct xzdec_index *idx;
	struct zerr e, de = { 0 };
	uint8_t *got, *want;
	uint64_t glen;
	size_t wlen;
	struct zsrc *src;

	snprintf(vname, sizeof(vname), "dc-%s-%lld", name, cut);
	variant(name, vname, cut, -1, 0);
	tpath(path, sizeof(path), vname);
	ck_assert_int_eq(open_scan(path, &src, &idx, &e), 0);
	ck_assert_msg(idx->salvaged, "%s: not salvaged", vname);
	ck_assert_msg(decode_all(src, idx, 4093, &got, &glen, &de) == 0, "%s: decode: %s @%llu",
		      vname, de.msg, (unsigned long long)de.coff);
	snprintf(out, sizeof(out), "%s.xzcat", path);
	snprintf(cmd, sizeof(cmd), "xz -dc < '%s' > '%s' 2>/dev/null; true", path, out);
	ck_assert_int_eq(system(cmd), 0);
	want = zmtest_slurp(out, &wlen);
	ck_assert_msg(glen == wlen && idx->usize == wlen && memcmp(got, want, wlen) == 0,
		      "%s: salvaged %llu bytes (usize %llu), xz -dc prints %zu", vname,
		      (unsigned long long)glen, (unsigned long long)idx->usize, wlen);
	ck_assert_msg(strstr(e.msg, "cut short at compressed offset") &&
			      strstr(e.msg, "still being written, or truncated"),
		      "%s: reason '%s' does not say the file is cut short", vname, e.msg);
	free(got);
	free(want);
	unlink(out);
	xzdec_index_free(idx);
	zsrc_put(src);
	unlink(path);
}

START_TEST(test_scan_cut_is_xz_dc)
{
	/* blocks.xz and six.xz: test_scan_truncated holds their cuts to xz -dc too */
	static const char *const files[] = { "one.xz", "sized.xz", "twob.xz" };

	need_generated();
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct xzdec_index *whole = read_index(files[f]);
		uint64_t s = whole->csize;
		const long long cuts[] = { (long long)s / 10, (long long)s / 2, (long long)s - 5,
					   40 };

		for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++)
			expect_xz_dc(files[f], cuts[c]);
		xzdec_index_free(whole);
	}
}
END_TEST

/* Cut short and corrupt are told apart: the Index reader says which. */
START_TEST(test_cut_or_corrupt)
{
	struct xzdec_index *whole = read_index("blocks.xz"), *idx;
	const struct xzdec_block *last = &whole->blocks[whole->nblocks - 1];
	char path[PATH_MAX];
	struct zerr e;
	struct zsrc *src;

	variant("one.xz", "cc-cut.xz", (long long)whole->csize / 3, -1, 0);
	tpath(path, sizeof(path), "cc-cut.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), -EINVAL);
	zsrc_put(src);
	ck_assert_msg(strstr(e.msg, "cut short at compressed offset") &&
			      strstr(e.msg, "still being written, or truncated") &&
			      !strstr(e.msg, "corrupt"),
		      "cut file: reason '%s'", e.msg);
	/* a flipped byte in the Index: corrupt, not cut */
	variant("blocks.xz", "cc-flip.xz", -1, (long long)(last->coff + last->csize + 3), 0x01);
	tpath(path, sizeof(path), "cc-flip.xz");
	ck_assert_int_eq(open_index(path, &src, &idx, &e), -EINVAL);
	zsrc_put(src);
	ck_assert_msg(strstr(e.msg, "corrupt") && !strstr(e.msg, "cut short"),
		      "flipped Index: reason '%s'", e.msg);
	xzdec_index_free(whole);
}
END_TEST

/* Damage in Block 3 of 6: Blocks 0 to 2, whatever part of Block 3 is hit. */
START_TEST(test_scan_corrupt_block)
{
	struct xzdec_index *whole = read_index("six.xz");
	const struct xzdec_block *b3 = &whole->blocks[3];
	char path[PATH_MAX];

	ck_assert_uint_eq(whole->nblocks, 6);
	/* its data, three ways */
	variant("six.xz", "c-data.xz", -1, (long long)(b3->coff + b3->csize / 2), 0x55);
	tpath(path, sizeof(path), "c-data.xz");
	expect_scan(path, whole, 1, 3);
	variant("six.xz", "c-data2.xz", -1, (long long)(b3->coff + 100), 0x01);
	tpath(path, sizeof(path), "c-data2.xz");
	expect_scan(path, whole, 1, 3);
	/* its header (CRC32 catches it) */
	variant("six.xz", "c-hdr.xz", -1, (long long)b3->coff + 2, 0x10);
	tpath(path, sizeof(path), "c-hdr.xz");
	expect_scan(path, whole, 1, 3);
	/* its Check (CRC64, the last 8 bytes): the data decodes, but is not verified */
	variant("six.xz", "c-check.xz", -1, (long long)(b3->coff + b3->csize - 3), 0x01);
	tpath(path, sizeof(path), "c-check.xz");
	expect_scan(path, whole, 1, 3);
	/* Block 0: nothing to keep */
	variant("six.xz", "c-first.xz", -1, (long long)(whole->blocks[0].coff + 300), 0x55);
	tpath(path, sizeof(path), "c-first.xz");
	expect_scan(path, whole, 1, 0);
	/* the Index: all the Blocks (their Checks passed), salvaged all the same */
	variant("six.xz", "c-index.xz", -1,
		(long long)(whole->blocks[5].coff + whole->blocks[5].csize + 2), 0x01);
	tpath(path, sizeof(path), "c-index.xz");
	expect_scan(path, whole, 1, 6);
	xzdec_index_free(whole);
}
END_TEST

/* Two Streams of several Blocks each, cut in the second: Stream 1 and the whole Blocks after. */
START_TEST(test_scan_two_streams)
{
	struct xzdec_index *whole = read_index("twob.xz");
	const struct xzdec_block *b = NULL;
	char path[PATH_MAX], name[64];
	size_t first2 = 0;
	uint64_t s1end;

	ck_assert_uint_eq(whole->nstreams, 2);
	while (whole->blocks[first2].stream == 0)
		first2++;
	ck_assert_uint_gt(whole->nblocks - first2, 3);
	/* in the middle of every Block of Stream 2 */
	for (size_t i = first2; i < whole->nblocks; i++) {
		b = &whole->blocks[i];
		snprintf(name, sizeof(name), "m-%zu.xz", i);
		variant("twob.xz", name, (long long)(b->coff + b->csize / 2), -1, 0);
		tpath(path, sizeof(path), name);
		expect_scan(path, whole, 1, (long)i);
	}
	/* a corrupt byte in Stream 2's second Block */
	b = &whole->blocks[first2 + 1];
	variant("twob.xz", "m-bad.xz", -1, (long long)(b->coff + b->csize / 2), 0x55);
	tpath(path, sizeof(path), "m-bad.xz");
	expect_scan(path, whole, 1, (long)first2 + 1);
	/* Stream 1, then part of the padding: not a multiple of four */
	s1end = whole->blocks[first2].coff - 12 - 8; /* Stream Header, 8 bytes of padding */
	variant("twob.xz", "m-pad.xz", (long long)s1end + 2, -1, 0);
	tpath(path, sizeof(path), "m-pad.xz");
	expect_scan(path, whole, 1, (long)first2);
	/* Stream 1 and all its padding: a whole, sound file */
	variant("twob.xz", "m-s1.xz", (long long)s1end + 8, -1, 0);
	tpath(path, sizeof(path), "m-s1.xz");
	expect_scan(path, whole, 0, (long)first2);
	/* Stream 1, its padding and half a Stream Header */
	variant("twob.xz", "m-sh.xz", (long long)s1end + 14, -1, 0);
	tpath(path, sizeof(path), "m-sh.xz");
	expect_scan(path, whole, 1, (long)first2);
	xzdec_index_free(whole);
}
END_TEST

/*
 * A header asking for a 4 GiB dictionary: on a small Block the scan caps it
 * by what the Block's compressed bytes can expand to and decodes it; on a
 * large one it would need more than XZDEC_DICT_MAX and stops there.
 */
START_TEST(test_scan_memlimit)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct zerr e;
	size_t len;
	struct zsrc *src;

	need_generated();
	tpath(path, sizeof(path), "dict-small.xz");
	len = write_handmade(path, 4000, 0);
	expect_scan(path, NULL, 0, 1);
	ck_assert_int_eq(open_scan(path, &src, &idx, &e), 0);
	ck_assert_uint_eq(idx->usize, len);
	xzdec_index_free(idx);
	zsrc_put(src);

	tpath(path, sizeof(path), "dict-big.xz");
	write_handmade(path, 1u << 20, 0);
	ck_assert_int_eq(open_scan(path, &src, &idx, &e), 0);
	ck_assert_int_eq(idx->salvaged, 1);
	ck_assert_uint_eq(idx->nblocks, 0);
	ck_assert_msg(strstr(e.msg, "MiB dictionary"), "message: %s", e.msg);
	ck_assert_uint_eq(e.coff, 12);
	xzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/*
 * The same 4 GiB header behind an Index that claims the most the reader
 * accepts (XZDEC_MAX_RATIO bytes per compressed byte): the dictionary,
 * capped at that claim, would still be a gigabyte for a 64 KiB Block
 * (tests/fuzz/regress/xz/oom-lzma2-dict-sized-from-index.xz).  The decoder
 * refuses it before allocating anything and says why; a claim small enough
 * for XZDEC_DICT_MAX still opens.
 */
START_TEST(test_dec_dict_limit)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct xzdec_block b;
	struct xzdec_dec *d;
	struct zerr e;
	struct zsrc *src;

	need_generated();
	tpath(path, sizeof(path), "dict-claim.xz");
	write_handmade(path, 1u << 16, 0);
	ck_assert_int_eq(open_index(path, &src, &idx, &e), 0);
	b = idx->blocks[0];
	b.usize = b.csize * XZDEC_MAX_RATIO;
	ck_assert_uint_gt(b.usize, XZDEC_DICT_MAX);
	ck_assert_int_eq(xzdec_dec_open(src, &b, NULL, &d, &e), -ENOTSUP);
	ck_assert_ptr_null(d);
	ck_assert_msg(strstr(e.msg, "MiB dictionary, more than the 128 MiB"), "message: %s", e.msg);
	ck_assert_uint_eq(e.coff, b.coff);
	b.usize = XZDEC_DICT_MAX;
	ck_assert_int_eq(xzdec_dec_open(src, &b, NULL, &d, &e), 0);
	xzdec_dec_close(d);
	xzdec_index_free(idx);
	zsrc_put(src);
}
END_TEST

/* Not .xz, or a bad first Stream Header: nothing to salvage, -EINVAL. */
START_TEST(test_scan_refused)
{
	static const char *const files[] = { "orig.txt", "sc-empty.xz", "sc-short.xz",
					     "sc-hdr.xz" };
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct zerr e;
	struct zsrc *src;
	struct memsrc *bad;

	need_generated();
	variant("six.xz", "sc-empty.xz", 0, -1, 0);
	variant("six.xz", "sc-short.xz", 9, -1, 0);
	variant("six.xz", "sc-hdr.xz", -1, 7, 0x01);
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		tpath(path, sizeof(path), files[f]);
		ck_assert_msg(open_scan(path, &src, &idx, &e) == -EINVAL, "%s", files[f]);
		ck_assert_msg(e.msg[0], "%s: no message", files[f]);
		zsrc_put(src);
	}
	bad = failing_src();
	ck_assert_int_eq(xzdec_index_scan(memsrc_src(bad), 100, &idx, &e), -EIO);
	memsrc_destroy(bad);
	ck_assert_ptr_null(idx);
}
END_TEST

/* Every corpus file: good ones scan whole; bad ones are refused or salvaged, never whole. */
static void scan_row(const struct row *r)
{
	char path[PATH_MAX];
	struct xzdec_index *idx;
	struct zerr e;
	struct zsrc *src;
	int ret;

	cpath(path, sizeof(path), r->file);
	ret = open_scan(path, &src, &idx, &e);
	zsrc_put(src);
	if (strcmp(r->expect, "error") != 0) {
		ck_assert_msg(ret == 0, "%s: %d %s", r->file, ret, e.msg);
		ck_assert_msg(!idx->salvaged, "%s: salvaged: %s @%llu", r->file, e.msg,
			      (unsigned long long)e.coff);
		ck_assert_uint_eq(idx->usize, strtoull(r->usize, NULL, 10));
		xzdec_index_free(idx);
		expect_scan(path, NULL, 0, -1);
		return;
	}
	ck_assert_msg(ret == -EINVAL || (ret == 0 && idx->salvaged), "%s: %d, taken whole", r->file,
		      ret);
	ck_assert_msg(e.msg[0], "%s: no message", r->file);
	if (ret == 0) {
		xzdec_index_free(idx);
		expect_scan(path, NULL, 1, -1);
	}
}

static void scan_good_row(const struct row *r)
{
	scan_row(r);
}

static void scan_bad_row(const struct row *r)
{
	scan_row(r);
}

START_TEST(test_scan_corpus)
{
	ck_assert_int_eq(for_each_row(0, scan_good_row), 23);
	ck_assert_int_eq(for_each_row(1, scan_bad_row), 48);
}
END_TEST

static int gen_fixtures(void)
{
	char orig[PATH_MAX];

	tpath(orig, sizeof(orig), "orig.txt");
	if (zmtest_text(orig, ORIG_SIZE, 2463534242u))
		return -1;
	if (zmtest_sh(
		    tmpdir,
		    "xz -T1 -c --block-size=65536 orig.txt > blocks.xz"
		    " && xz -T1 -c orig.txt > one.xz"
		    " && xz -T2 -c --block-size=65536 orig.txt > sized.xz"
		    " && head -c %u orig.txt | xz -T1 -c --check=crc32 > s1.xz"
		    " && tail -c +%u orig.txt | xz -T1 -c --check=sha256 > s2.xz"
		    " && head -c 4 /dev/zero > pad && cat s1.xz pad s2.xz > two.xz"
		    " && head -c %u orig.txt > small.txt"
		    " && for c in none crc32 crc64 sha256; do"
		    "    xz -T1 -c --check=$c small.txt > $c.xz || exit 1; done"
		    " && xz -T1 -c --block-size=524288 orig.txt > six.xz"
		    " && head -c %u orig.txt | xz -T1 -c --check=crc32 --block-size=131072 > s1b.xz"
		    " && tail -c +%u orig.txt | xz -T1 -c --block-size=262144 > s2b.xz"
		    " && head -c 8 /dev/zero > pad8 && cat s1b.xz pad8 s2b.xz > twob.xz",
		    SPLIT, SPLIT + 1, SMALL_SIZE, SPLIT, SPLIT + 1))
		return -1;
	return 0;
}

static Suite *xzdec_suite(int have_corpus, int *skipped)
{
	const struct zmtest_case t[] = {
		{ "index_many_blocks", test_index_many_blocks, 0 },
		{ "blocks_independent", test_blocks_independent, 0 },
		{ "small_reads", test_small_reads, 0 },
		{ "spares_are_the_callers", test_spares_are_the_callers, 0 },
		{ "large_spares_are_huge_page_aligned", test_large_spares_are_huge_page_aligned,
		  0 },
		{ "one_big_block", test_one_big_block, 0 },
		{ "sizes_in_headers", test_sizes_in_headers, 0 },
		{ "two_streams_padding", test_two_streams_padding, 0 },
		{ "check_types", test_check_types, 0 },
		{ "check_mismatch_at_end", test_check_mismatch_at_end, 1 },
		{ "check_before_last_byte", test_check_before_last_byte, 0 },
		{ "lying_index", test_lying_index, 1 },
		{ "huge_uncomp", test_huge_uncomp, 1 },
		{ "bad_structure_einval", test_bad_structure_einval, 1 },
		{ "index_memlimit", test_index_memlimit, 1 },
		{ "unsupported_filter", test_unsupported_filter, 1 },
		{ "unsupported_check", test_unsupported_check, 1 },
		{ "header_disagrees", test_header_disagrees, 1 },
		{ "empty_block", test_empty_block, 1 },
		{ "block_verify", test_block_verify, 1 },
		{ "truncated", test_truncated, 0 },
		{ "check_name", test_check_name, 0 },
		{ "usize_bound", test_usize_bound, 0 },
		{ "src_per_call", test_src_per_call, 0 },
		{ "corpus_good", test_corpus_good, 1 },
		{ "corpus_bad", test_corpus_bad, 1 },
		{ "scan_whole", test_scan_whole, 0 },
		{ "scan_truncated", test_scan_truncated, 0 },
		{ "scan_cut_is_xz_dc", test_scan_cut_is_xz_dc, 0 },
		{ "cut_or_corrupt", test_cut_or_corrupt, 0 },
		{ "scan_corrupt_block", test_scan_corrupt_block, 0 },
		{ "scan_two_streams", test_scan_two_streams, 0 },
		{ "scan_refused", test_scan_refused, 0 },
		{ "scan_memlimit", test_scan_memlimit, 0 },
		{ "dec_dict_limit", test_dec_dict_limit, 0 },
		{ "scan_corpus", test_scan_corpus, 1 },
	};

	return zmtest_suite("check_xzdec", "xzdec", t, sizeof(t) / sizeof(t[0]), 120, have_corpus,
			    skipped);
}

/*
 * usage: check_xzdec [CORPUS_DIR]
 * CORPUS_DIR defaults to $ZMOUNT_CORPUS, else the path CMake compiled in
 * (../shared/corpus beside the source tree).  Without a corpus the tests
 * that need it are skipped out loud, and the exit status is 77, which
 * ctest reports as a skip, not a pass (1 if another test failed).
 */
int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("ZMOUNT_CORPUS");
	const char *tmp = getenv("TMPDIR");
	char probe[PATH_MAX];
	SRunner *sr;
	int failed, have_corpus, skipped;

#ifdef ZMOUNT_CORPUS_DEFAULT
	if (!dir)
		dir = ZMOUNT_CORPUS_DEFAULT;
#endif
	if (!dir) {
		fprintf(stderr, "check_xzdec: no corpus directory given\n");
		dir = "";
	}
	if ((size_t)snprintf(corpus, sizeof(corpus), "%s/xz-utils", dir) >= sizeof(corpus) ||
	    (size_t)snprintf(tmpdir, sizeof(tmpdir), "%s/check_xzdec.XXXXXX", tmp ? tmp : "/tmp") >=
		    sizeof(tmpdir)) {
		fprintf(stderr, "check_xzdec: path too long\n");
		return 1;
	}
	cpath(probe, sizeof(probe), "EXPECTED.tsv");
	have_corpus = access(probe, R_OK) == 0;
	if (!have_corpus)
		fprintf(stderr,
			"check_xzdec: SKIP: corpus not found (%s: %s); pass CORPUS_DIR, "
			"set ZMOUNT_CORPUS or configure with -DZMOUNT_CORPUS=\n",
			probe, strerror(errno));
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	gen_ok = gen_fixtures() == 0;
	if (!gen_ok)
		fprintf(stderr, "check_xzdec: could not generate fixtures in %s\n", tmpdir);

	sr = srunner_create(xzdec_suite(have_corpus, &skipped));
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	zmtest_sh("/", "rm -rf '%s'", tmpdir);
	if (failed)
		return 1;
	if (skipped) {
		fprintf(stderr, "check_xzdec: SKIP: %d tests did not run: no corpus\n", skipped);
		return 77;
	}
	return 0;
}
