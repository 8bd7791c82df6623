/* SPDX-License-Identifier: MIT */
#include "probe.h"

#include <errno.h>
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

int probe_fd(int fd, enum probe_fmt *fmt)
{
	unsigned char buf[6];
	ssize_t n;

	*fmt = PROBE_NONE;
	do
		n = pread(fd, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
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
