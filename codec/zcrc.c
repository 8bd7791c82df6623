/* SPDX-License-Identifier: MIT */
/*
 * CRC-32 by carry-less multiplication where the CPU has it, else zlib's.
 *
 * Why: every byte a checkpoint pass or a resumed read hands out is
 * CRC'd (index/ckpt.c), and at zlib's 5 GB/s that was 17% of a zstd
 * checkpoint pass here (doc/results/benchmarks.md).
 *
 * How (x86-64 with PCLMULQDQ): bits are taken in the reflected order of
 * gzip's CRC, byte 0's bit 0 being the highest power, so a 16-byte block X
 * is the polynomial X(x) of degree < 128 and a message of blocks X Y is
 * X(x)*x^128 + Y(x).  The CRC only needs the message mod P, so X can be
 * replaced by any X' = X(x)*x^128 (mod P) of degree < 128 and XORed into
 * the next block: with X = LO(x)*x^64 + HI(x) (LO its first 8 bytes),
 * X' = LO*(x^192 mod P) + HI*(x^128 mod P), two carry-less products of a
 * 64-bit half by a 32-bit constant.  In this bit order a product comes out
 * one power short, so the constants are x^191 and x^127 mod P.  Four
 * blocks in flight fold by x^512 the same way (x^575, x^511).  What is
 * left is one 16-byte block with the message's CRC, which zlib then
 * finishes, as it does the bytes after the last whole block.  The
 * constants are computed at first use, and a self-check against zlib
 * turns the fast path off should it ever disagree.
 */
#include "zcrc.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <zlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ZCRC_CLMUL 1
#include <immintrin.h>
#endif

/* zlib's, over any length (it takes a uInt). */
static uint32_t crc_zlib(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len > 0) {
		uInt n = len > UINT_MAX ? UINT_MAX : (uInt)len;

		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

#ifdef ZCRC_CLMUL
/* Below this, zlib is as fast: the fold's setup and finish cost about 64 bytes' worth. */
#define CLMUL_MIN 64

static uint64_t k511, k575, k127, k191; /* x^n mod P in the bit order above, set once */
static bool clmul_ok;
static pthread_once_t clmul_once = PTHREAD_ONCE_INIT;

/* x^n mod P, placed so that the coefficient of x^d is bit 63 - d of a 64-bit operand. */
static uint64_t xpow_mod(unsigned n)
{
	uint64_t r = 1, out = 0;

	for (unsigned i = 0; i < n; i++) {
		r <<= 1;
		if (r & (1ull << 32))
			r ^= 0x104C11DB7ull; /* P, the gzip polynomial, highest power first */
	}
	for (unsigned d = 0; d < 32; d++)
		if (r & (1ull << d))
			out |= 1ull << (63 - d);
	return out;
}

/* Block x folded forward (see the top): its first 8 bytes by k's low half, the rest by its high. */
__attribute__((target("pclmul,sse2"))) static inline __m128i fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* zlib's crc32(crc, p, len) for len >= CLMUL_MIN. */
__attribute__((target("pclmul,sse2"))) static uint32_t crc_clmul(uint32_t crc,
								 const unsigned char *p, size_t len)
{
	const __m128i k4 = _mm_set_epi64x((long long)k511, (long long)k575);
	const __m128i k1 = _mm_set_epi64x((long long)k127, (long long)k191);
	__m128i a0, a1, a2, a3;
	unsigned char last[16];

	/* zlib's CRC starts from ~crc: that is the CRC of the message with ~crc XORed in front. */
	a0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)~crc));
	a1 = _mm_loadu_si128((const __m128i *)(p + 16));
	a2 = _mm_loadu_si128((const __m128i *)(p + 32));
	a3 = _mm_loadu_si128((const __m128i *)(p + 48));
	p += 64;
	len -= 64;
	for (; len >= 64; p += 64, len -= 64) {
		a0 = _mm_xor_si128(fold(a0, k4), _mm_loadu_si128((const __m128i *)p));
		a1 = _mm_xor_si128(fold(a1, k4), _mm_loadu_si128((const __m128i *)(p + 16)));
		a2 = _mm_xor_si128(fold(a2, k4), _mm_loadu_si128((const __m128i *)(p + 32)));
		a3 = _mm_xor_si128(fold(a3, k4), _mm_loadu_si128((const __m128i *)(p + 48)));
	}
	a0 = _mm_xor_si128(fold(a0, k1), a1);
	a0 = _mm_xor_si128(fold(a0, k1), a2);
	a0 = _mm_xor_si128(fold(a0, k1), a3);
	for (; len >= 16; p += 16, len -= 16)
		a0 = _mm_xor_si128(fold(a0, k1), _mm_loadu_si128((const __m128i *)p));
	/*
	 * a0 now has the message's CRC with no start value: zlib's CRC of it
	 * from ~0 (a start of 0 inside) is the answer, continued over the rest.
	 */
	_mm_storeu_si128((__m128i *)last, a0);
	return crc_zlib(crc_zlib(0xFFFFFFFFu, last, sizeof(last)), p, len);
}

static void clmul_init(void)
{
	unsigned char probe[1024];
	bool same = true;

	__builtin_cpu_init();
	if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse2"))
		return;
	k127 = xpow_mod(127);
	k191 = xpow_mod(191);
	k511 = xpow_mod(511);
	k575 = xpow_mod(575);
	for (size_t i = 0; i < sizeof(probe); i++)
		probe[i] = (unsigned char)(i * 131 + (i >> 3));
	/* lengths of every residue mod 64, at offsets of every residue mod 8 */
	for (size_t n = CLMUL_MIN; n <= sizeof(probe) - 8 && same; n += 13)
		same = crc_clmul(0x12345678u, probe + n % 8, n) ==
		       crc_zlib(0x12345678u, probe + n % 8, n);
	clmul_ok = same;
}
#endif

uint32_t zcrc32(uint32_t crc, const void *buf, size_t len)
{
#ifdef ZCRC_CLMUL
	if (len >= CLMUL_MIN) {
		pthread_once(&clmul_once, clmul_init);
		if (clmul_ok)
			return crc_clmul(crc, buf, len);
	}
#endif
	return crc_zlib(crc, buf, len);
}

const char *zcrc32_impl(void)
{
#ifdef ZCRC_CLMUL
	pthread_once(&clmul_once, clmul_init);
	if (clmul_ok)
		return "pclmul";
#endif
	return "zlib";
}

uint32_t zcrc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	return (uint32_t)crc32_combine64(crc_a, crc_b, (z_off64_t)len_b);
}
