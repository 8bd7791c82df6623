/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ZCRC_H
#define ZMOUNT_ZCRC_H

#include <stddef.h>
#include <stdint.h>

/*
 * CRC-32 (the gzip/zlib polynomial), continued from crc: start with 0.
 * The same value as zlib's crc32, for the layers above codec/ that may not
 * include zlib.h; by carry-less multiplication where the CPU has it.
 * Any thread.
 */
uint32_t zcrc32(uint32_t crc, const void *buf, size_t len);

/* Which implementation zcrc32 uses here: "pclmul" or "zlib".  Any thread. */
const char *zcrc32_impl(void);

/*
 * The CRC-32 of A followed by B, from crc_a, crc_b and B's length.  It is
 * linear in crc_a: zcrc32_combine(crc_a, 0, len_b) XORed with the CRC of
 * A B gives the CRC of B alone, without B's bytes.
 */
uint32_t zcrc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

#endif
