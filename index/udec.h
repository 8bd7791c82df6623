/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_UDEC_H
#define ZMOUNT_UDEC_H

/*
 * A decoder inside one map entry of a reader, whatever the format (fmt.h)
 * and whether it started at the entry's start or at a checkpoint (ckpt.h):
 * what a unit is decoded with, and what a streamed unit's reader parks
 * between reads (park.h).  Internal to index/ (fill.c, reader.c).
 *
 * Threads: a decoder is used by one thread at a time, the one that opened
 * or took it (for a streamed unit, the holder of r->stream).  It reads
 * through r->src at each call and keeps no source.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct reader;
struct udec;
struct zerr;

/*
 * A decoder at the start of map entry k.  Returns 0 and *out (close with
 * udec_close), or a negative errno with *out NULL and err set.  For a wide
 * entry with no set that nobody builds, it is the format's run decoder
 * (fmt.h, run_open; reader_ck_run_begin): the read that returns the
 * entry's last byte publishes the set its reads built, so no pass decodes
 * the entry again; closed before that, it drops it.
 */
int udec_open(struct reader *r, size_t k, struct udec **out, struct zerr *err);

/* Frees d.  Accepts NULL. */
void udec_close(struct udec *d);

/*
 * Decodes the next min(len, bytes left in its entry) bytes into buf.
 * Returns that count, or a negative errno with err set (the entry's
 * integrity check is verified by the call that returns its last byte).
 */
ssize_t udec_read(struct reader *r, struct udec *d, void *buf, size_t len, struct zerr *err);

/* Bytes returned since the start of its map entry. */
uint64_t udec_tell(const struct udec *d);

/*
 * A decoder at or before byte want of entry k, the nearest at hand: r's
 * parked one, one resumed at a checkpoint (after waiting for a pass about
 * to build the set: reader_ck_wait), or udec_open's at the entry's start.
 * In a medium entry, only one whose output its set checks (-EIO if it
 * has none).  Returns 0 and *out (the caller's: park it or close it), or
 * a negative errno with *out NULL and err set.  With r->stream held.
 */
int udec_for(struct reader *r, size_t k, uint64_t want, struct udec **out, struct zerr *err);

/* The bytes d holds (its state, window, buffers): what parking it charges to the cache. */
size_t udec_cost(const struct udec *d);

/*
 * A decoder resumed at point i of wide entry k's set (which must be
 * published: reader_ck_set), its output checked piece by piece as for
 * udec_for's resumes.  Needs no lock: for span jobs (ckahead.c), which
 * never take r->stream.  0 and *out (close it), or a negative errno with
 * err set.
 */
int udec_resume_at(struct reader *r, size_t k, size_t i, struct udec **out, struct zerr *err);

/*
 * Parks d (taken over), stopped in map entry k, on r's context's list for
 * r's next sequential read: park_add, which may close it, r's earlier
 * one, or other readers' later.  With r->stream held, and only while r
 * has a descriptor.
 */
void udec_park(struct reader *r, struct udec *d, size_t k);

/*
 * Takes r's parked decoder back if it is in map entry k (any entry if k
 * is PARK_ANY).  Returns it (the caller's now) or NULL.
 */
struct udec *udec_unpark(struct reader *r, size_t k);

#endif
