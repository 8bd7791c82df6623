/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for codec/zstdckpt's checkpoint blobs (zstdckpt_blob_open,
 * then zstdckpt_dec_read from what it opened).
 *
 * How it works.  LLVMFuzzerInitialize makes one frame: 512 KiB of generated
 * text, zstd level 3 with a 128 KiB window and a checksum, in a memfd; walks
 * it with zstddec_index_read and builds its blobs (span 64 KiB) with
 * zstdckpt_build_blobs, keeping them.  Real blobs are the starting point,
 * because a CRC guards every blob and random bytes would only ever test it.
 * An input is:
 *   byte 0: bits 0-3 pick a blob; bit 7 reseals the CRC after the edits;
 *           bit 6 uses the rest of the input as the whole blob instead;
 *   then 3-byte edits (u16 position, modulo the blob's length; u8 XOR).
 * The blob is opened, and if it opens, decoded to the frame's end in
 * odd-sized reads.  Every open takes its buffers from one stock
 * (zstdckpt_blob_open_in), which the previous input's decoder went back
 * to, failed or not: what an edited blob left there must not change the
 * bytes of the next one.
 *
 * Besides sanitizer reports, the harness aborts when a result breaks
 * zstdckpt.h: zstdckpt_blob_open returning other than 0, -EINVAL or
 * -ENOMEM, *out not NULL on error, no reason given; a decoder not at a
 * position inside the frame; a read returning other than 1..len, 0 or -EIO,
 * or more bytes than the frame has; an unedited blob that does not
 * decode to the very bytes that were compressed; and a stock over its
 * bound.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "fuzz_common.h"
#include "zstdckpt.h"
#include "zstddec.h"

#define TEXT_LEN  (512u << 10)
#define MAX_BLOBS 16
#define BUF_CAP	  4093u

static uint8_t *text;
static struct zsrc *src;
static struct zstddec_index *idx;
static struct {
	uint8_t *p;
	size_t len;
} blobs[MAX_BLOBS];
static size_t nblobs;
static struct zstdckpt_spares *spares; /* every input's decoder comes from and goes back here */

static int keep_blob(void *arg, uint64_t uoff, const void *blob, size_t len)
{
	(void)arg, (void)uoff;
	if (nblobs == MAX_BLOBS)
		return 0;
	blobs[nblobs].p = malloc(len);
	FUZZ_CHECK(blobs[nblobs].p, "out of memory");
	memcpy(blobs[nblobs].p, blob, len);
	blobs[nblobs++].len = len;
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *words[] = { "GET ", "POST ", "/index.html ", "200 ",	   "404 ", "user=",
				       "id=",  "\n",	"ms ",		"error: ", "ok " };
	struct zstdckpt_sink sink = { NULL, keep_blob, NULL };
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t cap = ZSTD_compressBound(TEXT_LEN), n = 0, z;
	uint8_t *zbuf = malloc(cap);
	uint32_t x = 1;
	struct zerr e = { 0 };

	(void)argc, (void)argv;
	text = malloc(TEXT_LEN);
	FUZZ_CHECK(cc && zbuf && text, "out of memory");
	while (n < TEXT_LEN) {
		const char *w =
			words[(x = x * 1103515245u + 12345u) >> 16 & 7 ? (x >> 20) % 11 : 7];
		size_t k = strlen(w);

		if (k > TEXT_LEN - n)
			k = TEXT_LEN - n;
		memcpy(text + n, w, k);
		n += k;
	}
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 3);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, 17);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	z = ZSTD_compress2(cc, zbuf, cap, text, TEXT_LEN);
	FUZZ_CHECK(!ZSTD_isError(z), "compress");
	src = fuzz_src(zbuf, z);
	FUZZ_CHECK(zstddec_index_read(src, z, ZSTDDEC_WINDOW_LIBMAX, &idx, &e) == 0 &&
			   idx->nframes == 1,
		   "walk: %s", e.msg);
	FUZZ_CHECK(zstdckpt_build_blobs(src, &idx->frames[0], 64u << 10, &sink, NULL, &e) == 0 &&
			   nblobs > 2,
		   "build: %s", e.msg);
	FUZZ_CHECK(zstdckpt_spares_new(&spares) == 0, "out of memory");
	ZSTD_freeCCtx(cc);
	free(zbuf);
	return 0;
}

static void reseal(uint8_t *b, size_t len)
{
	uLong c;

	if (len < 4)
		return;
	c = crc32(0, b, (uInt)(len - 4));
	for (int i = 0; i < 4; i++)
		b[len - 4 + i] = (uint8_t)(c >> (8 * i));
}

/* Decodes d to the frame's end; the bytes must be the text's if exact. */
static void drain(struct zstdckpt_dec *d, bool exact)
{
	static uint8_t buf[BUF_CAP];
	const struct zstddec_frame *f = &idx->frames[0];
	uint64_t pos = zstdckpt_dec_tell(d);
	struct zerr e = { 0 };
	ssize_t n;

	FUZZ_CHECK(pos < f->usize, "opened at %llu", (unsigned long long)pos);
	for (size_t i = 0;; i++) {
		size_t want = 1 + (i * 997) % BUF_CAP;

		n = zstdckpt_dec_read(d, src, buf, want, &e);
		if (n <= 0)
			break;
		FUZZ_CHECK((size_t)n <= want && pos + (uint64_t)n <= f->usize, "read %zd", n);
		FUZZ_CHECK(!exact || memcmp(buf, text + pos, (size_t)n) == 0,
			   "an unedited blob decodes wrong bytes at %llu", (unsigned long long)pos);
		pos += (uint64_t)n;
	}
	FUZZ_CHECK(n == 0 || n == -EIO, "read returned %zd", n);
	FUZZ_CHECK(n != 0 || pos == f->usize, "ended at %llu", (unsigned long long)pos);
	FUZZ_CHECK(!exact || n == 0, "an unedited blob fails: %s", e.msg);
	FUZZ_CHECK(n == 0 || e.msg[0], "no reason");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct zstdckpt_dec *d = (struct zstdckpt_dec *)&d;
	struct zerr e = { 0 };
	uint8_t *b;
	size_t len;
	bool edited;
	int ret;

	if (size < 1)
		return 0;
	if (data[0] & 0x40) {
		len = size - 1;
		b = malloc(len ? len : 1);
		FUZZ_CHECK(b, "out of memory");
		memcpy(b, data + 1, len);
		edited = true;
	} else {
		len = blobs[(data[0] & 15) % nblobs].len;
		b = malloc(len);
		FUZZ_CHECK(b, "out of memory");
		memcpy(b, blobs[(data[0] & 15) % nblobs].p, len);
		edited = false;
		for (size_t i = 1; i + 3 <= size; i += 3) {
			b[(data[i] | (size_t)data[i + 1] << 8) % len] ^= data[i + 2];
			edited |= data[i + 2] != 0;
		}
	}
	if (data[0] & 0x80)
		reseal(b, len);
	ret = zstdckpt_blob_open_in(spares, &idx->frames[0], b, len, &d, &e);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL || ret == -ENOMEM, "open returned %d", ret);
	if (ret) {
		FUZZ_CHECK(d == NULL, "*out not NULL on error");
		FUZZ_CHECK(e.msg[0], "no reason");
	} else {
		FUZZ_CHECK(d && zstdckpt_dec_cost(d) > 0, "no decoder");
		drain(d, !edited);
		zstdckpt_dec_close(d);
	}
	FUZZ_CHECK(edited || ret == 0, "an unedited blob is refused: %s", e.msg);
	FUZZ_CHECK(zstdckpt_spares_bytes(spares) <= ZSTDCKPT_SPARES_MAX, "stock over its bound");
	free(b);
	return 0;
}
