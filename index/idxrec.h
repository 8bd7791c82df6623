/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_IDXREC_H
#define ZMOUNT_IDXREC_H

/*
 * The records of each kind of saved index (internal to idxfile.c and
 * idxrec_*.c): what follows the header and the key field of an index file
 * (doc/index-format.md).  idxfile.c keeps the envelope (header, key,
 * CRC-64, identity, load, save, prune) and calls, per kind:
 *  - max: the largest file of that kind for a source of src_size bytes
 *    (idxfile.h's idxfile_max_size* say the formulas);
 *  - fits: whether a file of flen bytes fits what its header h (IF_HDR
 *    bytes, magic, version, length and kind already checked) says it
 *    holds, for a source of src_size bytes and span; 0 or -EBADMSG;
 *  - check: validates the records of a whole image b (len bytes, CRC-64
 *    and header checked) from off (the end of the key field) on, and fills
 *    in's wbytes; 0, -EBADMSG or -ENOMEM (checkpoints);
 *  - size: checks what a save was given and sets *n to the bytes of the
 *    whole file with a key field of plen bytes; 0, -EINVAL, -EFBIG or
 *    -ENOMEM;
 *  - put: writes the kind's header fields and records into an image of
 *    that size from off on (the envelope writes the rest and checks the
 *    result with check before saving it);
 *  - build / apply / parse: turn a checked image into what load returns.
 * Errors go into err (may be NULL) with the offset in the index file;
 * nothing logs.  No state; any thread.
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gzdec.h"
#include "idxfile.h"
#include "zerr.h"
#include "zstddec.h"

#define IF_HDR 136u /* fixed header */
#define IF_REC 32u  /* one gzip checkpoint or zstd frame record */
#define IF_CRC 8u   /* trailing CRC-64 */
/* The longest key field: a path (or URL), then a NUL and a version tag (src.h) */
#define IF_KEYMAX   (PATH_MAX - 1 + ZSRC_TAG_MAX)
#define IF_MIN_SPAN (64u << 10) /* gzdec_index_build never uses less (gzdec.h) */
/* magic, a 1-byte header and a block header: no zstd frame is shorter */
#define IF_ZMIN_FRAME 9u
/* a 4-byte RLE block makes 128 KiB: no zstd frame makes more per compressed byte */
#define IF_ZRATIO 32768u

/* Header field offsets; see doc/index-format.md. */
enum {
	H_MAGIC = 0,
	H_VERSION = 8,
	H_FLAGS = 12,
	H_FSIZE = 16,
	H_DEV = 24,
	H_INO = 32,
	H_SIZE = 40,
	H_MTIME = 48,
	H_NSEC = 56,
	H_PATHLEN = 60,
	H_FPRINT = 64,
	H_USIZE = 72,
	H_MEMBERS = 80,
	H_SPAN = 88,
	H_TRAILOFF = 96,
	H_TRAILING = 104, /* 2 bytes */
	H_KIND = 106,	  /* 2 bytes, version 3 */
	H_CNSEC = 108,
	H_NPOINTS = 112,
	H_CTIME = 120,
	H_HASH = 128, /* version 5 */
};

#define BAD(off, ...) zerr_set(err, -EBADMSG, (off), __VA_ARGS__)

/* Little-endian fields, byte by byte (any host, any alignment). */
static inline void put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline uint16_t get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	return __builtin_add_overflow(a, b, &a) ? UINT64_MAX : a;
}

static inline uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return __builtin_mul_overflow(a, b, &a) ? UINT64_MAX : a;
}

/* Whether the n bytes at p are all zero (a record's reserved tail). */
static inline bool idxrec_zero(const unsigned char *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/*
 * fits for kinds of fixed records (idxrec.c): n = the header's record
 * count, at least 1 and at most can; the file takes IF_REC to per bytes
 * per record after the header, the key field and before the CRC.
 */
int idxrec_fits_records(const unsigned char *h, uint64_t flen, uint64_t can, uint64_t per,
			uint64_t src_size, struct zerr *err);

/* gzip checkpoints and windows (idxrec_gz.c). */
uint64_t idxrec_gz_max(uint64_t src_size, uint64_t span);
int idxrec_gz_fits(const unsigned char *h, uint64_t flen, uint64_t src_size, uint64_t span,
		   struct zerr *err);
int idxrec_gz_check(const unsigned char *b, size_t len, size_t off, struct idxfile_info *in,
		    struct zerr *err);
int idxrec_gz_size(const struct idxfile_id *id, const struct gzdec_index *idx, size_t plen,
		   size_t *n);
void idxrec_gz_put(unsigned char *b, size_t off, const struct gzdec_index *idx);
/* The gzdec_index of a checked image (records at off), allocated as gzdec.c does, so that
 * gzdec_index_free frees it.  0 or -ENOMEM. */
int idxrec_gz_build(const unsigned char *b, size_t off, const struct idxfile_info *in,
		    struct gzdec_index **out);

/* zstd frame records (idxrec_zstd.c). */
uint64_t idxrec_zstd_max(uint64_t src_size);
int idxrec_zstd_fits(const unsigned char *h, uint64_t flen, uint64_t src_size, struct zerr *err);
int idxrec_zstd_check(const unsigned char *b, size_t len, size_t off, struct idxfile_info *in,
		      struct zerr *err);
int idxrec_zstd_size(const struct idxfile_id *id, const struct zstddec_index *z, size_t plen,
		     size_t *n);
void idxrec_zstd_put(unsigned char *b, size_t off, const struct zstddec_index *z);
/* idxfile_load_zstd's agreement of a checked image (records at off) with z, and then its sizes
 * in z.  0, -EBADMSG (z unchanged) or -ENOMEM. */
int idxrec_zstd_apply(const unsigned char *b, size_t off, const struct idxfile_info *in,
		      struct zstddec_index *z, struct zerr *err);

/* Checkpoint sets (idxrec_ckpt.c). */
uint64_t idxrec_ckpt_max(uint64_t src_size, uint64_t span);
int idxrec_ckpt_fits(const unsigned char *h, uint64_t flen, uint64_t src_size, uint64_t span,
		     struct zerr *err);
int idxrec_ckpt_check(const unsigned char *b, size_t len, size_t off, struct idxfile_info *in,
		      struct zerr *err);
int idxrec_ckpt_size(const struct idxfile_id *id, uint64_t span, const struct idxfile_ckpt *sets,
		     size_t n, size_t plen, size_t *len);
void idxrec_ckpt_put(unsigned char *b, size_t off, uint64_t span, const struct idxfile_ckpt *sets,
		     size_t n);
/* The sets of a checked image (records at off), as idxfile_load_ckpt returns them.
 * 0 or -ENOMEM (*out NULL, *n 0). */
int idxrec_ckpt_parse(const unsigned char *b, size_t off, const struct idxfile_info *in,
		      struct idxfile_ckpt **out, size_t *n, struct zerr *err);

#endif
