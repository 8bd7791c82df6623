/* SPDX-License-Identifier: MIT */
#include "probe.h"
#include "src.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

enum probe_fmt probe_buf(const void *buf, size_t len)
{
	static const unsigned char xz[6] = { 0xFD, '7', 'z', 'X', 'Z', 0x00 };
	static const unsigned char zstd[4] = { 0x28, 0xB5, 0x2F, 0xFD };
	const unsigned char *p = buf;

	if (len >= sizeof(xz) && memcmp(p, xz, sizeof(xz)) == 0)
		return PROBE_XZ;
	if (len >= 2 && p[0] == 0x1F && p[1] == 0x8B)
		return PROBE_GZIP;
	if (len >= sizeof(zstd) && memcmp(p, zstd, sizeof(zstd)) == 0)
		return PROBE_ZSTD;
	return PROBE_NONE;
}

/* A zstd skippable frame's magic, 0x184D2A50 to 0x184D2A5F little-endian. */
static bool probe_skippable(const unsigned char *p, size_t len)
{
	return len >= 8 && (p[0] & 0xF0) == 0x50 && p[1] == 0x2A && p[2] == 0x4D && p[3] == 0x18;
}

int probe_src(struct zsrc *src, enum probe_fmt *fmt)
{
	unsigned char buf[8];
	uint64_t off = 0;
	ssize_t n;

	*fmt = PROBE_NONE;
	n = zsrc_pread(src, buf, sizeof(buf), 0);
	if (n < 0)
		return (int)n;
	/*
	 * pzstd and other zstd writers may start a file with skippable frames
	 * (pzstd puts one before every frame): step over a few to find the
	 * first zstd frame.  Skippable frames up to the end of the file are
	 * zstd too: a valid file with nothing in it (zstd -t accepts it).
	 */
	for (int i = 0; i < PROBE_SKIP_MAX && probe_skippable(buf, (size_t)n); i++) {
		off += 8 + ((uint64_t)buf[4] | (uint64_t)buf[5] << 8 | (uint64_t)buf[6] << 16 |
			    (uint64_t)buf[7] << 24);
		n = zsrc_pread(src, buf, sizeof(buf), off);
		if (n < 0)
			return (int)n;
		if (n == 0 || probe_buf(buf, (size_t)n) == PROBE_ZSTD) {
			*fmt = PROBE_ZSTD;
			return 0;
		}
	}
	if (off == 0)
		*fmt = probe_buf(buf, (size_t)n);
	return 0;
}

const char *probe_name(enum probe_fmt fmt)
{
	switch (fmt) {
	case PROBE_XZ:
		return "xz";
	case PROBE_GZIP:
		return "gzip";
	case PROBE_ZSTD:
		return "zstd";
	default:
		return "plain";
	}
}
