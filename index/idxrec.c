/* SPDX-License-Identifier: MIT */
/* What the kinds of saved index share past the envelope (idxrec.h). */
#include <errno.h>
#include <inttypes.h>

#include "idxrec.h"

int idxrec_fits_records(const unsigned char *h, uint64_t flen, uint64_t can, uint64_t per,
			uint64_t src_size, struct zerr *err)
{
	uint64_t n = get64(h + H_NPOINTS), plen = get32(h + H_PATHLEN), least, most;
	uint64_t fixed = IF_HDR + plen + IF_CRC;

	if (n == 0 || n > can || plen == 0 || plen > IF_KEYMAX)
		return BAD(H_NPOINTS,
			   "%" PRIu64 " records or a %" PRIu64 "-byte path: impossible "
			   "for a %" PRIu64 "-byte source",
			   n, plen, src_size);
	if (__builtin_mul_overflow(n, (uint64_t)IF_REC, &least) ||
	    __builtin_add_overflow(least, fixed, &least))
		least = UINT64_MAX;
	if (__builtin_mul_overflow(n, per, &most) || __builtin_add_overflow(most, fixed, &most))
		most = UINT64_MAX;
	if (flen < least || flen > most)
		return BAD(flen,
			   "file is %" PRIu64 " bytes; its %" PRIu64 " records take %" PRIu64
			   " to %" PRIu64,
			   flen, n, least, most);
	return 0;
}
