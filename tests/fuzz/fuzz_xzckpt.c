/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for codec/xzckpt: the input is a checkpoint blob, which
 * in zmount comes from an index file on disk and is untrusted.
 *
 * How it works.  Once, a fixed .xz file is made in memory (512 KiB of text,
 * LZMA2 preset 6 with a 64 KiB dictionary, CRC32: one Block) and built with
 * span 32 KiB.  Each input is opened as a blob for that Block twice: as it
 * is, and resealed (its payload length and CRC32 fields set to match), so
 * that mutations reach the zstd payload, the runs and lzma2dec_resume.
 * xzckpt_dec_open must return 0, -EINVAL or -ENOMEM with *out NULL on
 * error; a decoder it opens is read in odd-sized pieces (96 KiB, or to
 * the end one time in 16: decoding is the slow part), each
 * read returning 1..len, 0 or -EIO, tell moving by what was returned and
 * never past the Block's size.  The bytes themselves are not compared: a
 * resealed blob can be wrong and still parse (the index layer's per-span
 * checksums catch that); only the outcome must be orderly.
 *
 * With FUZZ_XZCKPT_SEEDS=DIR set, the initializer writes the real blobs
 * into DIR (how tests/fuzz/regress/xzckpt/real-* were made).
 */
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "xzckpt.h"

#define USIZE	  (512u << 10)
#define SPAN	  (32u << 10)
#define BLOB_HEAD 96

static const size_t reads[] = { 1, 7, 127, 4093, 65521 };

static struct zsrc *src;
static struct xzdec_index *idx;
static const char *seed_dir;
static int nseeds;

static int drop(void *arg, const void *buf, size_t len)
{
	(void)arg;
	(void)buf;
	(void)len;
	return 0;
}

static int seed(void *arg, uint64_t uoff, const void *blob, size_t len)
{
	char path[4096];
	FILE *f;

	(void)arg;
	if (!seed_dir)
		return 0;
	snprintf(path, sizeof(path), "%s/real-%llu", seed_dir, (unsigned long long)uoff);
	f = fopen(path, "wb");
	FUZZ_CHECK(f && fwrite(blob, 1, len, f) == len && fclose(f) == 0, "writing %s", path);
	nseeds++;
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static uint8_t in[USIZE], out[USIZE + USIZE / 2 + 4096];
	lzma_options_lzma opt;
	lzma_filter f[2] = { { LZMA_FILTER_LZMA2, &opt }, { LZMA_VLI_UNKNOWN, NULL } };
	struct xzckpt_sink s = { drop, seed, NULL };
	struct zerr err = { 0 };
	uint64_t st = 1;
	size_t outn = 0;

	(void)argc;
	(void)argv;
	/* letters with copies from up to 40 KiB back: several chunks, matches into the window */
	for (size_t i = 0; i < USIZE; i++) {
		uint64_t r = fuzz_mix(&st);

		in[i] = (uint8_t)(r % 4 || i < 40000 ? 'a' + r / 4 % 26
						     : in[i - 1 - r / 4 % 40000]);
	}
	FUZZ_CHECK(!lzma_lzma_preset(&opt, 6), "preset");
	opt.dict_size = 64 << 10;
	FUZZ_CHECK(lzma_stream_buffer_encode(f, LZMA_CHECK_CRC32, NULL, in, USIZE, out, &outn,
					     sizeof(out)) == LZMA_OK,
		   "encode");
	src = fuzz_src(out, outn);
	FUZZ_CHECK(xzdec_index_read(src, outn, &idx, &err) == 0 && idx->nblocks == 1, "index: %s",
		   err.msg);
	seed_dir = getenv("FUZZ_XZCKPT_SEEDS");
	FUZZ_CHECK(xzckpt_build(src, idx->blocks, SPAN, &s, NULL, &err) == 0, "build: %s", err.msg);
	FUZZ_CHECK(!seed_dir || nseeds > 0, "no checkpoints");
	return 0;
}

static void try_blob(const uint8_t *blob, size_t len, uint64_t *mix)
{
	const struct xzdec_block *b = idx->blocks;
	struct xzckpt_dec *d = (struct xzckpt_dec *)1;
	struct zerr err = { 0 };
	static uint8_t buf[65521];
	uint64_t at, stop;
	ssize_t n;
	int ret = xzckpt_dec_open(src, b, NULL, blob, len, &d, &err);

	FUZZ_CHECK(ret == 0 || ret == -EINVAL || ret == -ENOMEM, "open returned %d", ret);
	if (ret < 0) {
		FUZZ_CHECK(d == NULL, "*out set on error");
		return;
	}
	at = xzckpt_dec_tell(d);
	FUZZ_CHECK(at > 0 && at < b->usize, "opened at %llu", (unsigned long long)at);
	stop = fuzz_mix(mix) % 16 ? at + (96u << 10) : UINT64_MAX;
	while (at < stop) {
		size_t want = reads[fuzz_mix(mix) % (sizeof(reads) / sizeof(reads[0]))];

		n = xzckpt_dec_read(d, src, buf, want, &err);
		FUZZ_CHECK(n == -EIO || (n >= 0 && (size_t)n <= want), "read returned %zd", n);
		if (n <= 0)
			break;
		at += (uint64_t)n;
		FUZZ_CHECK(xzckpt_dec_tell(d) == at && at <= b->usize, "tell");
	}
	FUZZ_CHECK(n != 0 || at == b->usize, "ended at %llu", (unsigned long long)at);
	xzckpt_dec_close(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t mix = fuzz_seed(data, size);
	uint8_t *copy;
	uint32_t crc;

	try_blob(data, size, &mix);
	if (size < BLOB_HEAD)
		return 0;
	copy = malloc(size);
	FUZZ_CHECK(copy, "malloc");
	memcpy(copy, data, size);
	for (int i = 0; i < 4; i++)
		copy[88 + i] = (uint8_t)((size - BLOB_HEAD) >> (8 * i));
	crc = lzma_crc32(copy + BLOB_HEAD, size - BLOB_HEAD, lzma_crc32(copy, BLOB_HEAD - 4, 0));
	for (int i = 0; i < 4; i++)
		copy[92 + i] = (uint8_t)(crc >> (8 * i));
	try_blob(copy, size, &mix);
	free(copy);
	return 0;
}
