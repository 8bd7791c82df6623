/* SPDX-License-Identifier: MIT */
/*
 * The hashes of saved indexes (idxhash.h).  XXH64 follows its
 * specification (seed 0): four lanes over 32-byte stripes, then the tail
 * in 8-, 4- and 1-byte steps, then the avalanche.
 */
#include "idxhash.h"

#include <lzma.h>
#include <string.h>

/* XXH64's primes */
#define XP1 0x9E3779B185EBCA87ull
#define XP2 0xC2B2AE3D27D4EB4Full
#define XP3 0x165667B19E3779F9ull
#define XP4 0x85EBCA77C2B2AE63ull
#define XP5 0x27D4EB2F165667C5ull

uint64_t idxhash_fnv64(uint64_t h, const void *buf, size_t n)
{
	const unsigned char *p = buf;

	while (n--)
		h = (h ^ *p++) * 0x100000001B3ull;
	return h;
}

uint64_t idxhash_mix64(uint64_t h)
{
	h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
	h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
	return h ^ (h >> 31);
}

uint64_t idxhash_crc64_more(uint64_t crc, const unsigned char *p, size_t n)
{
	return lzma_crc64(p, n, crc);
}

uint64_t idxhash_crc64(const unsigned char *p, size_t n)
{
	return lzma_crc64(p, n, 0);
}

static uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t xround(uint64_t acc, uint64_t in)
{
	return rotl64(acc + in * XP2, 31) * XP1;
}

/* A little-endian 64-bit word, in one load where the host allows (the hot loop's). */
static uint64_t load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static uint32_t load32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void idxhash_xxh_init(struct idxhash_xxh *x)
{
	x->v[0] = XP1 + XP2;
	x->v[1] = XP2;
	x->v[2] = 0;
	x->v[3] = -XP1;
}

size_t idxhash_xxh_feed(struct idxhash_xxh *x, const unsigned char *p, size_t n)
{
	uint64_t a = x->v[0], b = x->v[1], c = x->v[2], d = x->v[3];
	size_t done = n - n % 32;

	/* lanes in locals: through x they would be reloaded after every store */
	for (size_t i = 0; i < done; i += 32) {
		a = xround(a, load64(p + i));
		b = xround(b, load64(p + i + 8));
		c = xround(c, load64(p + i + 16));
		d = xround(d, load64(p + i + 24));
	}
	x->v[0] = a;
	x->v[1] = b;
	x->v[2] = c;
	x->v[3] = d;
	return done;
}

uint64_t idxhash_xxh_end(const struct idxhash_xxh *x, uint64_t total, const unsigned char *p,
			 size_t n)
{
	uint64_t h;

	if (total >= 32) {
		h = rotl64(x->v[0], 1) + rotl64(x->v[1], 7) + rotl64(x->v[2], 12) +
		    rotl64(x->v[3], 18);
		for (int k = 0; k < 4; k++)
			h = (h ^ xround(0, x->v[k])) * XP1 + XP4;
	} else {
		h = XP5;
	}
	h += total;
	for (; n >= 8; p += 8, n -= 8)
		h = rotl64(h ^ xround(0, load64(p)), 27) * XP1 + XP4;
	if (n >= 4) {
		h = rotl64(h ^ (uint64_t)load32(p) * XP1, 23) * XP2 + XP3;
		p += 4;
		n -= 4;
	}
	for (; n; p++, n--)
		h = rotl64(h ^ *p * XP5, 11) * XP1;
	h = (h ^ (h >> 33)) * XP2;
	h = (h ^ (h >> 29)) * XP3;
	return h ^ (h >> 32);
}
