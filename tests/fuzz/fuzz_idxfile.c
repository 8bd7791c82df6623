/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for index/idxfile: the input is a saved index file.
 *
 * How it works.  Every input is written to a private directory (made once,
 * in LLVMFuzzerInitialize, under /dev/shm when it exists so that no disk is
 * touched) and parsed twice:
 *
 *  1. as it is, by idxfile_read_header: random bytes almost never carry a
 *     valid CRC-64, so this pass mostly tests the magic, length and checksum
 *     gates;
 *  2. "resealed": the header's file length is set to the input's length and
 *     the trailing CRC-64/XZ recomputed (doc/index-format.md), so mutations
 *     of every other field get past the checksum and into the field and
 *     checkpoint validation.  The resealed image goes through
 *     idxfile_read_header, then through idxfile_load under the name
 *     idxfile_path gives for the identity recorded in it, with that
 *     identity (no source descriptor: nothing to hash), the path and the
 *     span recorded in it, so a valid image is loaded all the way to a
 *     gzdec_index.  A loaded index must agree with the header, and
 *     gzdec_extract from each of its checkpoints (over the input itself as
 *     the "source", which is not gzip) must fail cleanly with -EIO, never
 *     -EINVAL: the loader promises it never hands out a malformed index.
 *     A zstd-kind image (kind 2) is refused by idxfile_load (-EBADMSG, or
 *     -ESTALE first) and goes through idxfile_load_zstd instead, against a
 *     frame list made from its own records (what a walk of a matching
 *     source would give, sizes unknown): accepted, every size must equal
 *     its record's and sum to the header's usize; refused, the list must be
 *     untouched.  A checkpoint-kind image (kind 3) is refused by both and
 *     goes through idxfile_load_ckpt under its own name (idxfile_path_ckpt):
 *     accepted, it must agree with the header and every set must pass
 *     ckpt_set_check.
 *
 * The harness aborts when a result breaks idxfile.h: a code outside the
 * listed ones, *out not NULL on error, a loaded index unlike its header.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "gzdec.h"
#include "idxfile.h"
#include "idxlocal.h"
#include "zmtest.h"
#include "zstddec.h"

/* Layout, from doc/index-format.md. */
#define HDR	    136u
#define REC	    32u
#define CRC	    8u
#define H_FSIZE	    16u
#define H_DEV	    24u
#define H_INO	    32u
#define H_SIZE	    40u
#define H_MTIME	    48u
#define H_NSEC	    56u
#define H_PATHLEN   60u
#define H_FPRINT    64u
#define H_USIZE	    72u
#define H_SPAN	    88u
#define H_CNSEC	    108u
#define H_CTIME	    120u
#define MAX_POINTS  16
#define EXTRACT_LEN 4096u

static char g_dir[PATH_MAX];	 /* private directory for the index files */
static char g_raw[PATH_MAX];	 /* g_dir/raw.zmi */
static struct idxstore *g_store; /* g_dir's, for the loads */

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	FUZZ_CHECK(fd >= 0, "cannot create %s: errno %d", path, errno);
	while (size) {
		ssize_t n = write(fd, data, size);

		FUZZ_CHECK(n > 0, "write %s: errno %d", path, errno);
		data += n;
		size -= (size_t)n;
	}
	close(fd);
}

static void cleanup(void)
{
	idxstore_free(g_store);
	unlink(g_raw);
	rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");

	(void)argc;
	(void)argv;
	snprintf(g_dir, sizeof(g_dir), "%s/zmount-fuzz-idx.XXXXXX", base ? base : "/tmp");
	FUZZ_CHECK(mkdtemp(g_dir), "mkdtemp %s: errno %d", g_dir, errno);
	snprintf(g_raw, sizeof(g_raw), "%s/raw.zmi", g_dir);
	FUZZ_CHECK(idxlocal_store(g_dir, &g_store) == 0, "idxlocal_store %s", g_dir);
	atexit(cleanup);
	return 0;
}

static int header_code_ok(int ret)
{
	return ret == 0 || ret == -EBADMSG || ret == -ENOMEM;
}

/* Extract from every checkpoint of a loaded index over a source that is not its gzip. */
static void extract_all(const struct gzdec_index *idx, const uint8_t *data, size_t size)
{
	unsigned char *buf = malloc(EXTRACT_LEN);
	struct zsrc *src = fuzz_src(data, size);

	FUZZ_CHECK(buf, "out of memory");
	for (size_t i = 0; i < idx->npoints && i < MAX_POINTS; i++) {
		struct zerr err = { 0 };
		uint64_t left = idx->usize - idx->points[i].uoff;
		size_t len = left < EXTRACT_LEN ? (size_t)left : EXTRACT_LEN;
		ssize_t n = gzdec_extract(src, idx, i, buf + EXTRACT_LEN - len, len, &err);

		FUZZ_CHECK(n == (ssize_t)len || n == -EIO || n == -ENOMEM,
			   "extract from loaded checkpoint %zu (%zu bytes) returned %zd: %s", i,
			   len, n, err.msg);
	}
	free(buf);
	zsrc_put(src);
}

/*
 * A zstd-kind image that read_header accepted: its records as the frame list
 * a walk would give (sizes unknown, blocks enough for any size), loaded.
 */
static void load_zstd(const uint8_t *img, const struct idxfile_info *info, const char *src,
		      const struct idxfile_id *id)
{
	struct zstddec_index z = { 0 };
	struct zerr err = { 0 };
	size_t off = HDR + strlen(info->src);
	uint64_t sum = 0;
	int ret;

	z.nframes = (size_t)info->npoints; /* fits: records are in the file */
	z.csize = info->id.size;
	z.usize = ZSTDDEC_UNKNOWN;
	z.nunknown = z.nframes;
	z.frames = calloc(z.nframes, sizeof(*z.frames));
	FUZZ_CHECK(z.frames, "out of memory");
	for (size_t i = 0; i < z.nframes; i++, off += REC) {
		z.frames[i].coff = get64(img + off);
		z.frames[i].csize = get64(img + off + 8);
		z.frames[i].usize = z.frames[i].uoff = ZSTDDEC_UNKNOWN;
		z.frames[i].nblocks = UINT32_MAX;
	}
	ret = idxfile_load_zstd(g_store, src, id, &z, &err);
	if (ret < 0) {
		FUZZ_CHECK(ret == -ESTALE || ret == -EBADMSG || ret == -ENOMEM,
			   "load_zstd returned %d", ret);
		FUZZ_CHECK(ret != -EBADMSG || err.msg[0], "load_zstd refused without a reason");
		FUZZ_CHECK(z.nunknown == z.nframes && z.frames[0].usize == ZSTDDEC_UNKNOWN,
			   "load_zstd failed (%d) but changed the frames", ret);
	} else {
		off = HDR + strlen(info->src);
		for (size_t i = 0; i < z.nframes; i++, off += REC) {
			FUZZ_CHECK(z.frames[i].usize == get64(img + off + 16) &&
					   z.frames[i].uoff == sum,
				   "frame %zu: loaded size or offset unlike its record", i);
			sum += z.frames[i].usize;
		}
		FUZZ_CHECK(z.nunknown == 0 && z.usize == sum && sum == get64(img + H_USIZE),
			   "loaded sizes do not sum to the header's");
	}
	free(z.frames);
}

/* A checkpoint-kind image that read_header accepted, loaded under its own name. */
static void load_ckpt(const uint8_t *img, size_t size, const struct idxfile_info *info,
		      const char *src, const struct idxfile_id *id)
{
	struct idxfile_ckpt *v = (struct idxfile_ckpt *)&v;
	char path[PATH_MAX];
	struct zerr err = { 0 };
	uint64_t pts = 0, blobs = 0;
	size_t n = 99;
	int ret = idxfile_path_ckpt(g_dir, id, path, sizeof(path));

	FUZZ_CHECK(ret == 0, "idxfile_path_ckpt(%s) returned %d", src, ret);
	write_file(path, img, size);
	ret = idxfile_load_ckpt(g_store, src, id, info->span, &v, &n, &err);
	if (ret < 0) {
		/* the same bytes read_header accepted: only the path can differ */
		FUZZ_CHECK(ret == -ESTALE || ret == -ENOMEM, "load_ckpt returned %d: %s", ret,
			   err.msg);
		FUZZ_CHECK(v == NULL && n == 0, "load_ckpt failed (%d) but set its outputs", ret);
	} else {
		FUZZ_CHECK(v && n == info->members, "load_ckpt: %zu sets, header %" PRIu64, n,
			   info->members);
		for (size_t i = 0; i < n; i++) {
			FUZZ_CHECK(ckpt_set_check(v[i].set) == 0, "loaded set %zu unusable", i);
			FUZZ_CHECK(v[i].entry_start + v[i].set->usize <= info->usize,
				   "loaded set %zu past usize", i);
			pts += v[i].set->n;
			blobs += v[i].set->blob_len;
			ckpt_set_free((struct ckpt_set *)v[i].set);
		}
		free(v);
		FUZZ_CHECK(pts == info->npoints && blobs == info->wbytes,
			   "the loaded sets disagree with their header");
	}
	unlink(path);
}

/* Pass 2: the resealed image, through read_header and load. */
static void resealed(const uint8_t *data, size_t size, uint8_t *img)
{
	char src[PATH_MAX] = "/nonexistent", path[PATH_MAX];
	struct idxfile_info *info = malloc(sizeof(*info));
	struct gzdec_index *idx = (struct gzdec_index *)&idx; /* must be overwritten */
	struct idxfile_id id;
	struct zerr err = { 0 };
	uint32_t plen = get32(img + H_PATHLEN);
	int hret, ret;

	FUZZ_CHECK(info, "out of memory");
	/* the path that load will compare, as recorded (any bytes; load must cope) */
	id.tag[0] = '\0';
	if (plen > 0 && plen < sizeof(src) && plen <= size - HDR - CRC) {
		const char *nul;

		memcpy(src, img + HDR, plen);
		src[plen] = '\0';
		/* version 6: the key, then after a NUL the version tag (any bytes; load must cope)
		 */
		nul = memchr(img + HDR, 0, plen);
		if (nul && (size_t)(img + HDR + plen - (const uint8_t *)nul - 1) < sizeof(id.tag)) {
			size_t tlen = (size_t)(img + HDR + plen - (const uint8_t *)nul - 1);

			memcpy(id.tag, nul + 1, tlen);
			id.tag[tlen] = '\0';
		}
		/* a key load could take as it is stays; anything else becomes a path */
		if (!idxfile_keyed(src))
			src[0] = '/';
	}
	id.dev = get64(img + H_DEV);
	id.ino = get64(img + H_INO);
	id.size = get64(img + H_SIZE);
	id.mtime_sec = (int64_t)get64(img + H_MTIME);
	id.mtime_nsec = get32(img + H_NSEC);
	id.ctime_sec = (int64_t)get64(img + H_CTIME);
	id.ctime_nsec = get32(img + H_CNSEC);
	id.fingerprint = get64(img + H_FPRINT);
	id.src = NULL; /* no source: only an index recorded for this very identity loads */

	ret = idxfile_path(g_dir, &id, path, sizeof(path));
	FUZZ_CHECK(ret == 0, "idxfile_path(%s) returned %d", src, ret);
	write_file(path, img, size);

	hret = idxfile_read_header(path, info, &err);
	FUZZ_CHECK(header_code_ok(hret), "read_header (resealed) returned %d", hret);
	FUZZ_CHECK(hret == 0 || err.msg[0], "read_header failed (%d) without a reason", hret);

	ret = idxfile_load(g_store, src, &id, get64(img + H_SPAN), &idx, &err);
	if (ret < 0) {
		FUZZ_CHECK(idx == NULL, "load failed (%d) but *out is set", ret);
		FUZZ_CHECK(ret == -EBADMSG || ret == -ESTALE || ret == -ENOMEM || ret == -ERANGE,
			   "load returned %d", ret);
		/* the same bytes: if the header is valid, only the path (or kind) can differ */
		FUZZ_CHECK(hret < 0 || ret == -ESTALE ||
				   (ret == -EBADMSG && info->kind != IDXFILE_KIND_GZIP),
			   "read_header accepted, load said %d: %s", ret, err.msg);
		FUZZ_CHECK(hret == 0 || ret != -ESTALE, "read_header refused, load said stale");
	} else {
		FUZZ_CHECK(ret == 0 && idx, "load returned %d", ret);
		FUZZ_CHECK(hret == 0, "load accepted what read_header refused (%d)", hret);
		FUZZ_CHECK(idx->npoints == info->npoints && idx->usize == info->usize &&
				   idx->span == info->span && idx->members == info->members &&
				   idx->csize == info->id.size && !strcmp(info->src, src),
			   "the loaded index disagrees with its header");
		extract_all(idx, data, size);
		gzdec_index_free(idx);
	}
	if (hret == 0 && info->kind == IDXFILE_KIND_ZSTD)
		load_zstd(img, info, src, &id);
	if (hret == 0 && info->kind == IDXFILE_KIND_CKPT)
		load_ckpt(img, size, info, src, &id);
	unlink(path);
	free(info);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct idxfile_info *info = malloc(sizeof(*info));
	struct zerr err = { 0 };
	uint8_t *img;
	int ret;

	FUZZ_CHECK(info, "out of memory");
	/* pass 1: as it is */
	write_file(g_raw, data, size);
	ret = idxfile_read_header(g_raw, info, &err);
	FUZZ_CHECK(header_code_ok(ret), "read_header returned %d", ret);
	FUZZ_CHECK(ret == 0 || err.msg[0], "read_header failed (%d) without a reason", ret);
	free(info);

	/* pass 2: resealed, when it is long enough to hold a header, a path and a CRC */
	if (size < HDR + 1 + CRC)
		return 0;
	img = malloc(size);
	FUZZ_CHECK(img, "out of memory");
	memcpy(img, data, size);
	put64(img + H_FSIZE, size);
	put64(img + size - CRC, zmtest_crc64(img, size - CRC));
	resealed(data, size, img);
	free(img);
	return 0;
}
