/* SPDX-License-Identifier: MIT */
#include "zcrc.h"

#include <limits.h>
#include <zlib.h>

uint32_t zcrc32(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	/* zlib takes a uInt length. */
	while (len > 0) {
		uInt n = len > UINT_MAX ? UINT_MAX : (uInt)len;

		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

uint32_t zcrc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	return (uint32_t)crc32_combine64(crc_a, crc_b, (z_off64_t)len_b);
}
