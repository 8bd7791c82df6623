/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_LZMA2DEC_RC_H
#define ZMOUNT_LZMA2DEC_RC_H

/*
 * The LZMA range decoder (lzma-specification.txt): adaptive binary
 * probabilities of 11 bits, moved by 1/32 of the distance to 0 or 2048
 * after each bit; direct bits at probability 1/2.  Codec-internal, for
 * lzma2dec_lzma.c only.
 *
 * The input is one LZMA chunk's whole body in memory, so normalisation
 * checks one bound per byte taken: past it, control jumps to the label
 * `overrun` of the function using the macros.  The macros work on `rc`
 * (a struct lzma2dec_rc *) and two scratch locals, `ttt` and `bound`,
 * which every user declares: they are macros, not functions, so that the
 * coder's four words stay in registers across a whole symbol.
 */

#include <stdint.h>

#define RC_TOP (1u << 24)

struct lzma2dec_rc {
	const uint8_t *ip, *iend; /* next input byte, end of the chunk */
	uint32_t rng, code;
};

#define NORM                                                                                       \
	do {                                                                                       \
		if (rc->rng < RC_TOP) {                                                            \
			if (unlikely(rc->ip == rc->iend))                                          \
				goto overrun;                                                      \
			rc->rng <<= 8;                                                             \
			rc->code = (rc->code << 8) | *rc->ip++;                                    \
		}                                                                                  \
	} while (0)
/* Decodes a bit at probability *p: the statement after it runs for a 0. */
#define IF_BIT0(p)                                                                                 \
	ttt = *(p);                                                                                \
	NORM;                                                                                      \
	bound = (rc->rng >> 11) * ttt;                                                             \
	if (rc->code < bound)
/* After IF_BIT0(p): the bit was 0, or 1; updates *p. */
#define UPD0(p)                                                                                    \
	do {                                                                                       \
		rc->rng = bound;                                                                   \
		*(p) = (uint16_t)(ttt + ((2048 - ttt) >> 5));                                      \
	} while (0)
#define UPD1(p)                                                                                    \
	do {                                                                                       \
		rc->rng -= bound;                                                                  \
		rc->code -= bound;                                                                 \
		*(p) = (uint16_t)(ttt - (ttt >> 5));                                               \
	} while (0)
/* One bit of a bit tree at base p: sym grows by it. */
#define TREE_BIT(p, sym)                                                                           \
	do {                                                                                       \
		IF_BIT0((p) + (sym))                                                               \
		{                                                                                  \
			UPD0((p) + (sym));                                                         \
			sym <<= 1;                                                                 \
		}                                                                                  \
		else                                                                               \
		{                                                                                  \
			UPD1((p) + (sym));                                                         \
			sym = (sym << 1) | 1;                                                      \
		}                                                                                  \
	} while (0)
/* One direct bit (probability 1/2) into the low end of v. */
#define DIRECT_BIT(v)                                                                              \
	do {                                                                                       \
		uint32_t t_;                                                                       \
		NORM;                                                                              \
		rc->rng >>= 1;                                                                     \
		rc->code -= rc->rng;                                                               \
		t_ = 0u - (rc->code >> 31);                                                        \
		rc->code += rc->rng & t_;                                                          \
		v = (v << 1) + (t_ + 1);                                                           \
	} while (0)

#endif
