/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_LE_H
#define ZMOUNT_LE_H

/* Little-endian integers of n bytes (1..8) in the codecs' own serialised formats. */

#include <stdint.h>

static inline void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#endif
