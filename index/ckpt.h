/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_CKPT_H
#define ZMOUNT_CKPT_H

/*
 * Checkpoints inside one map entry: an xz Block or a zstd frame wide enough
 * that decoding it from its start to reach an offset costs more than a few
 * spans (issue 19).  The format's codec (xzckpt, zstdckpt) says what a
 * checkpoint holds, as an opaque blob; this module keeps the blobs of one
 * entry, finds the one to resume from, and verifies what a resumed decoder
 * returns.
 *
 * Trust.  The pass that builds a set is the pass that verified the whole
 * entry (its xz Check, its zstd Content_Checksum).  It also records the
 * CRC32 of every piece of output: the entry cut at every multiple of
 * CKPT_PIECE and at every checkpoint.  A
 * decoder resumed from a checkpoint hands out a piece only after its CRC32
 * matched, so a damaged blob, a forged saved index or a codec bug gives
 * -EIO, never a wrong byte.
 *
 * Threads: a set is immutable once built; any thread may read it.  A
 * builder and a decoder belong to one thread at a time.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src.h"
#include "zerr.h"

struct spill;

#define CKPT_PIECE (64u << 10)

struct ckpt_point {
	uint64_t uoff;	   /* offset in the entry's output */
	uint64_t blob_off; /* its blob: set->blob[blob_off, + blob_len) */
	uint32_t blob_len; /* 0 for point 0, the entry's start */
	uint32_t piece0;   /* set->crc index of its span's first piece */
};

struct ckpt_set {
	uint64_t usize;	       /* the entry's uncompressed size */
	size_t n;	       /* points; pt[0] is the entry's start */
	struct ckpt_point *pt; /* ascending uoff */
	size_t ncrc;
	uint32_t *crc; /* CRC32 of each piece, span after span */
	uint8_t *blob; /* every point's blob, end to end; NULL once spilled */
	uint64_t blob_len;
	struct ckpt_spill *spill; /* NULL, or where the blobs went (ckpt_set_spill) */
};

/*
 * Memory a set holds, for the byte budget and the stats.  A spilled set
 * holds CKPT_RESIDENT(n, usize) bytes past the struct: its points, a CRC32
 * per point's blob, and a CRC32 per piece (at most usize / CKPT_PIECE + n).
 */
size_t ckpt_set_bytes(const struct ckpt_set *s);
#define CKPT_RESIDENT(n, usize)                                                                    \
	((n) * (sizeof(struct ckpt_point) + 2 * sizeof(uint32_t)) +                                \
	 ((usize) / CKPT_PIECE + 1) * sizeof(uint32_t))

/*
 * Moves a set's blobs out of memory, into a region of file (the context's
 * spill file, spill.h, which must outlive the set), so that a set of any
 * size can be kept: its table stays (CKPT_RESIDENT), and a point's blob is
 * read back when a decoder resumes there (ckpt_blob_read), into the cache.
 * Only before the set is published (it changes s).  Returns 0 (also for a
 * set without blobs, or one spilled already), or a negative errno with the
 * set unchanged.
 */
int ckpt_set_spill(struct ckpt_set *s, struct spill *file);
bool ckpt_set_spilled(const struct ckpt_set *s);
/* The spill file's descriptor (not s's: never close it), or -1, and where s's blobs start in
 * it: for tests that damage them. */
int ckpt_set_spill_fd(const struct ckpt_set *s, uint64_t *base);

/*
 * Point i's blob (s->pt[i].blob_len bytes) into buf, from memory or from
 * the spill file; any thread.  0, or -EIO (a short read, or bytes whose
 * CRC32 is not the one taken when they were spilled: never handed out).
 */
int ckpt_blob_read(const struct ckpt_set *s, size_t i, void *buf);

/*
 * Every blob end to end, as s->blob would hold them (for a save), in *out
 * (malloc'ed, free it; NULL for a set without blobs).  0, -ENOMEM or -EIO.
 */
int ckpt_blobs_copy(const struct ckpt_set *s, uint8_t **out);

/* Frees a set, and gives its region of the spill file back.  Accepts NULL. */
void ckpt_set_free(struct ckpt_set *s);

/* The last point at or before entry offset want (want < s->usize). */
size_t ckpt_find(const struct ckpt_set *s, uint64_t want);

/*
 * Checks that a set read back from disk is one a decoder may use: n >= 1,
 * pt[0] at 0 without a blob, offsets ascending below usize, blobs inside
 * blob_len, and exactly the pieces the spans need.  Returns 0 or -EINVAL.
 */
int ckpt_set_check(const struct ckpt_set *s);

/*
 * Building a set from the codec's pass.  The codec calls ckpt_build_out
 * with every byte of the entry in order, and ckpt_build_point(uoff) for
 * each checkpoint, in ascending order, where uoff is 0 < uoff < usize and
 * a multiple of CKPT_PIECE or a place where a ckpt_build_out call ended;
 * the point may come late, after more output (a codec must see what the
 * next bytes reference before it knows what a checkpoint keeps).  Both
 * take the builder as void *, for the codec's sink, and return 0, -ENOMEM,
 * -EIO (ckpt_build_out: more than usize bytes), -ECANCELED (see
 * ckpt_build_stop_on) or -EPROTO (a point that
 * breaks those rules: the codec's bug; the build fails).
 */
#define CKPT_USIZE_UNKNOWN UINT64_MAX /* ckpt_build_new: the pass measures the entry */
struct ckpt_build;
int ckpt_build_new(uint64_t usize, struct ckpt_build **out);
int ckpt_build_out(void *b, const void *buf, size_t len);
int ckpt_build_point(void *b, uint64_t uoff, const void *blob, size_t len);
/*
 * Ends the build: returns 0 and *out (free with ckpt_set_free) if exactly
 * usize bytes came, else -EIO.  Frees b either way.  A build begun with
 * CKPT_USIZE_UNKNOWN (a pass that also measures the entry) takes its size
 * from the bytes that came: the caller proves it, as the pass that
 * measured it.
 */
int ckpt_build_end(struct ckpt_build *b, struct ckpt_set **out);
/* From now on, ckpt_build_out fails with -ECANCELED once *stop is true (borrowed). */
void ckpt_build_stop_on(struct ckpt_build *b, const atomic_bool *stop);
/* From now on, ckpt_build_out adds each call's length to progress s (zmctx_pass_add; borrowed). */
struct zmctx_slot;
void ckpt_build_progress(struct ckpt_build *b, struct zmctx_slot *s);
/* From now on, ckpt_build_out stores the bytes seen so far in *at (borrowed), for other threads. */
void ckpt_build_watch(struct ckpt_build *b, atomic_uint_fast64_t *at);
/* Frees a builder whose pass failed.  Accepts NULL. */
void ckpt_build_free(struct ckpt_build *b);

/*
 * A resumed decoder, wrapped: ckpt_dec_read returns only bytes of pieces
 * whose CRC32 matched.  inner is the format's decoder, opened at point i
 * of s and driven through ops; the wrapper owns it from here (closed by
 * ckpt_dec_close, also if this fails).  s is borrowed and must outlive d.
 */
struct ckpt_inner_ops {
	ssize_t (*read)(void *dec, struct zsrc *src, void *buf, size_t len, struct zerr *err);
	size_t (*cost)(const void *dec);
	void (*close)(void *dec);
};
struct ckpt_dec;
/* Returns 0 and *out, or -ENOMEM (inner closed). */
int ckpt_dec_new(const struct ckpt_set *s, size_t i, void *inner, const struct ckpt_inner_ops *ops,
		 struct ckpt_dec **out);
/*
 * Up to len verified bytes (0 at the entry's end), or a negative errno with
 * err set, and then buf's contents undefined: a whole piece that fits is
 * decoded straight into buf, and checked there before the call returns.
 * Errors: -EIO for a piece whose CRC32 differs (err names the entry
 * offset of the piece and the checkpoint), the inner decoder's error, or
 * data that ends before the entry does.
 */
ssize_t ckpt_dec_read(struct ckpt_dec *d, struct zsrc *src, void *buf, size_t len,
		      struct zerr *err);
uint64_t ckpt_dec_tell(const struct ckpt_dec *d); /* entry offset of the next byte */
size_t ckpt_dec_cost(const struct ckpt_dec *d);
void ckpt_dec_close(struct ckpt_dec *d); /* accepts NULL */

#endif
