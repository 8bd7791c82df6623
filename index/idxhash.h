/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_IDXHASH_H
#define ZMOUNT_IDXHASH_H

/*
 * The hashes of saved indexes (internal to index/): FNV-1a and a mixer for
 * file names and fingerprints, XXH64 for a source's whole-file hash, and
 * CRC-64/XZ for an index file's checksum.  Plain functions of their
 * arguments: no global state, any thread.  The CRC table lives in the
 * caller's memory (2 KiB, built in microseconds), so nothing here is
 * initialised once.
 */

#include <stddef.h>
#include <stdint.h>

/* FNV-1a's offset basis: where an idxhash_fnv64 chain starts. */
#define IDXHASH_FNV64_INIT 0xCBF29CE484222325ull

/* FNV-1a, 64 bits, over n bytes of buf, continued from h (start with IDXHASH_FNV64_INIT). */
uint64_t idxhash_fnv64(uint64_t h, const void *buf, size_t n);

/* splitmix64's finalizer: FNV's high bits mix poorly on their own. */
uint64_t idxhash_mix64(uint64_t h);

/*
 * CRC-64/XZ (ECMA-182 polynomial, reflected; "123456789" -> 995DC9BBDF1939FA)
 * of n bytes at p, continued from the CRC of the bytes before (0 for none).
 * liblzma's lzma_crc64: a saved index is checked whole before it is used,
 * at 12x a byte-wise table's speed (16 ms for 8 MiB here, now 1.4).
 */
uint64_t idxhash_crc64_more(uint64_t crc, const unsigned char *p, size_t n);

/* CRC-64/XZ of n bytes at p. */
uint64_t idxhash_crc64(const unsigned char *p, size_t n);

/*
 * XXH64 with seed 0, over a stream that arrives in pieces: every piece but
 * the last a multiple of 32 bytes, so only the last one leaves a tail.
 * idxhash_xxh_init starts it; idxhash_xxh_feed takes the whole 32-byte
 * stripes of a piece and returns how many bytes that took (n rounded down
 * to 32); idxhash_xxh_end takes the tail (n < 32 bytes at p, the last
 * piece's rest) and the stream's total length, and returns the hash.
 */
struct idxhash_xxh {
	uint64_t v[4];
};

void idxhash_xxh_init(struct idxhash_xxh *x);
size_t idxhash_xxh_feed(struct idxhash_xxh *x, const unsigned char *p, size_t n);
uint64_t idxhash_xxh_end(const struct idxhash_xxh *x, uint64_t total, const unsigned char *p,
			 size_t n);

#endif
