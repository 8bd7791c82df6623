/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_IDXREC_H
#define ZMOUNT_IDXREC_H

/*
 * The records of each kind of saved index (internal to index/): what
 * follows the header and the key field of an index file
 * (doc/index-format.md), and the helpers a kind's records are written
 * with.  idxfile.c keeps the envelope (header, key, CRC-64, identity,
 * load, save, prune) and calls each kind through its struct fmt_saved
 * (fmt.h, which says what each hook does): gzip's and zstd's are their
 * formats' (fmt_gz.c, fmt_zstd.c) over the functions below; the
 * checkpoint sets' (idxrec_ckpt_saved) belong to no format.  The
 * functions here are those hooks; idxfile.h's per-kind calls
 * (idxfile_save, idxfile_load_zstd, ...) are thin wrappers beside them.
 * Errors go into err (may be NULL) with the offset in the index file;
 * nothing logs.  No state; any thread.
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fmt.h"
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

/* gzip checkpoints and windows (idxrec_gz.c); recs and out: a gzdec_index, out by **. */
uint64_t idxrec_gz_max(uint64_t src_size, uint64_t span);
int idxrec_gz_fits(const unsigned char *h, uint64_t flen, uint64_t src_size, uint64_t span,
		   struct zerr *err);
int idxrec_gz_check(const unsigned char *b, size_t len, size_t off, struct idxfile_info *in,
		    struct zerr *err);
int idxrec_gz_size(const struct idxfile_id *id, const void *recs, size_t plen, size_t *n);
void idxrec_gz_put(unsigned char *b, size_t off, const void *recs);
/* The gzdec_index of a checked image, allocated as gzdec.c does, so that gzdec_index_free
 * frees it. */
int idxrec_gz_get(const unsigned char *b, size_t off, const struct idxfile_info *in, void *out,
		  struct zerr *err);

/* zstd frame records (idxrec_zstd.c); recs and out: a struct zstddec_index. */
uint64_t idxrec_zstd_max(uint64_t src_size, uint64_t span);
int idxrec_zstd_fits(const unsigned char *h, uint64_t flen, uint64_t src_size, uint64_t span,
		     struct zerr *err);
int idxrec_zstd_check(const unsigned char *b, size_t len, size_t off, struct idxfile_info *in,
		      struct zerr *err);
int idxrec_zstd_size(const struct idxfile_id *id, const void *recs, size_t plen, size_t *n);
void idxrec_zstd_put(unsigned char *b, size_t off, const void *recs);
/* idxfile_load_zstd's agreement of a checked image with the walked index out, and then its
 * sizes in out; -EBADMSG leaves out unchanged. */
int idxrec_zstd_get(const unsigned char *b, size_t off, const struct idxfile_info *in, void *out,
		    struct zerr *err);

/* Checkpoint sets (idxrec_ckpt.c): what a save of them is given (recs). */
struct idxrec_ckpt_recs {
	uint64_t span;
	const struct idxfile_ckpt *sets;
	size_t n;
};

/* What a load of them gives (out): as idxfile_load_ckpt returns them. */
struct idxrec_ckpt_got {
	struct idxfile_ckpt *v;
	size_t n;
};

/* The checkpoint sets' kind: no format's, every format with checkpoints saves them. */
extern const struct fmt_saved idxrec_ckpt_saved;

#endif
