/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_TARSCAN_H
#define ZMOUNT_TARSCAN_H

/*
 * A streaming tar header parser: fed an archive's decoded bytes in order,
 * in chunks of any size (as a sequential read or a checkpoint pass sees
 * them), it fills a member table (tartab.h) without a second decode or a
 * seek.  It reads ustar (prefix + name), v7, old GNU and GNU (long names
 * 'L'/'K', base-256 numbers, sparse 'S' headers), pax 'x' and 'g' headers
 * (path, linkpath, size, mtime with its fraction, uid, gid, uname, gname)
 * and GNU sparse in pax form 0.0, 0.1 and 1.0.  The archive ends at the
 * first zero block or at EOF (doc/tar.md says why one block is enough).
 *
 * Two kinds of trouble (doc/tar.md):
 *   - a member with an unsafe name (absolute, a ".." segment, a NUL, over
 *     PATH_MAX) or a bad sparse map is dropped: counted, its reason and
 *     offset passed to the drop callback, and the scan goes on;
 *   - a damaged header (checksum, a bad number or pax record, an absurd
 *     size, a truncated header or member, the table's cap) stops the scan:
 *     tarscan_feed/finish return the error, tarscan_error says why and
 *     where, and the members before it stay in the table.  No resync is
 *     tried, since after a bad header the next one's place is a guess.
 *
 * Memory: the table (tartab.h's formula, capped) plus one header's pax or
 * long-name data, capped at TARSCAN_EXT_MAX.
 *
 * Threads: one scanner is used by one thread at a time.
 */

#include <stdbool.h>
#include <stdint.h>

#include "tartab.h"
#include "zerr.h"

/* A pax header or GNU long name larger than this stops the scan. */
#define TARSCAN_EXT_MAX (1u << 20)
/* A sparse member with more extents than this is dropped. */
#define TARSCAN_SPARSE_MAX 100000u

struct tarscan;

/*
 * Called for each dropped member, with its first header's offset and the
 * reason (a static sentence) and the name as stored (escaped for one line
 * by the callee if it prints it; may be cut).  Runs inside tarscan_feed.
 */
typedef void (*tarscan_drop_fn)(void *arg, uint64_t off, const char *reason, const char *name);

/*
 * A scanner that fills t (initialised by the caller, borrowed until
 * tarscan_free).  asize: the archive's decoded size when known, so a
 * member that runs past it stops the scan at its header; 0: unknown
 * (tarscan_finish catches it then).  drop may be NULL.  Returns 0 and
 * *out, or -ENOMEM.
 */
int tarscan_new(struct tartab *t, uint64_t asize, tarscan_drop_fn drop, void *arg,
		struct tarscan **out);
void tarscan_free(struct tarscan *s);

/*
 * Parses n more bytes.  Returns 0 (more may come, or the end was seen: see
 * tarscan_done), or the scan's error, the same on every later call:
 *   -EINVAL  a damaged header (tarscan_error);
 *   -E2BIG   the table's cap or TARSCAN_EXT_MAX;
 *   -ENOMEM.
 */
int tarscan_feed(struct tarscan *s, const void *buf, size_t n);

/*
 * The input ended.  Returns 0 if it ended at a member boundary (with or
 * without the end-of-archive blocks), or -EINVAL if a header or member's
 * data was cut short, or the earlier error.
 */
int tarscan_finish(struct tarscan *s);

/*
 * tarscan_finish for a scanner made with asize 0 whose input is now known
 * to have been the whole archive (a pass that did not know its size when
 * it began): the table and the error are those a scanner told the size
 * would have given (a member cut short is not kept; the error says it
 * runs past the end).  Only the log differs: a member cut short that was
 * also unsafe was reported to the drop callback.  With asize set, the same
 * as tarscan_finish.
 */
int tarscan_finish_unsized(struct tarscan *s);

/* Whether the end-of-archive zero block was seen (bytes after it are ignored). */
int tarscan_done(const struct tarscan *s);

/* The error that stopped the scan: 0, or as tarscan_feed returned, with why->msg a
 * sentence and why->coff the decoded offset of the bad header. */
int tarscan_error(const struct tarscan *s, struct zerr *why);

/* Whether the scan stopped at the table's cap (tartab_init's max_bytes), not at a pax
 * or long-name payload over TARSCAN_EXT_MAX: both are -E2BIG. */
bool tarscan_capped(const struct tarscan *s);

/* Decoded bytes consumed so far. */
uint64_t tarscan_offset(const struct tarscan *s);

#endif
