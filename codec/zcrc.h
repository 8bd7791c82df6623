/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ZCRC_H
#define ZMOUNT_ZCRC_H

#include <stddef.h>
#include <stdint.h>

/*
 * CRC-32 (the gzip/zlib polynomial), continued from crc: start with 0.
 * zlib's, for the layers above codec/ that may not include zlib.h.
 * Any thread.
 */
uint32_t zcrc32(uint32_t crc, const void *buf, size_t len);

#endif
