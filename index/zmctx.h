/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ZMCTX_H
#define ZMOUNT_ZMCTX_H

/*
 * The state readers share, held in one object instead of process globals,
 * so that two users in one process (two mounts, a tool and a test, two
 * tests) never see each other's cache, counters or parked decoders:
 *  - the block cache (bcache) and its byte budget;
 *  - the worker pool that decodes ahead of sequential readers (optional);
 *  - the counters of reader_get_counters;
 *  - the list of parked decoders and its lock;
 *  - xz's stock of spare decoder buffers;
 *  - the log sink that every reader's log lines go through.
 * Readers are opened on a context (reader_open) and keep a pointer to it.
 *
 * Ownership: the context owns its cache, its spares and its parked list,
 * and borrows the pool: a pool's threads can only start once a daemon has
 * forked, and the daemon's own indexer shares them.  zmctx_free is the last
 * call, after every reader opened on it is closed.
 *
 * Threads: zmctx_new, zmctx_set_pool, zmctx_set_log and zmctx_free are
 * for one thread, before the readers are shared (the setters) or after
 * they are gone (free).  The rest may be called from any thread at once.
 */

#include <stddef.h>

#include "zlog.h"

struct bcache;
struct pool;
struct spill;
struct zerr;
struct zmctx;

/*
 * A context with a cache of cache_size bytes, no pool, and the default
 * sink (zlog).  Returns 0 and *out (free with zmctx_free), or -ENOMEM with
 * *out NULL.
 */
int zmctx_new(size_t cache_size, struct zmctx **out);

/*
 * Lends pool to the readers for read-ahead (NULL: none; the default).
 * Readers opened earlier use it too, from their next read.  The caller
 * frees the pool (pool_free, which runs the jobs still queued) only after
 * the last read of a reader on c, usually after closing them all.
 */
void zmctx_set_pool(struct zmctx *c, struct pool *pool);

/* Frees the cache, the spares and c.  No reader may be open on it.  Accepts NULL. */
void zmctx_free(struct zmctx *c);

/*
 * The context's spill file for checkpoint windows (spill.h), made in dir by
 * the first call; valid until zmctx_free.  NULL when it cannot be made, or
 * when it was made in another directory (every reader of a daemon has one
 * index_dir).  Any thread.
 */
struct spill *zmctx_spill(struct zmctx *c, const char *dir);

/* The context's cache (for its stats); valid until zmctx_free. */
struct bcache *zmctx_cache(const struct zmctx *c);

/*
 * Where the log lines of readers on this context go.  One call per line:
 *   level  its severity;
 *   name   the file it is about (a reader's name), or NULL;
 *   text   the line without the name, e.g. "read error at offset 1048576
 *          (Block 1, compressed offset 1501068): compressed data is corrupt";
 *   why    for an error about a file's data (an open or a read that
 *          failed), the reason and its compressed offset (why->coff);
 *          else NULL.
 * It runs on whichever thread found the problem (a reader's or a pool
 * worker's), possibly on several at once, and may hold the reader's
 * stream lock (the decode of a large unit; never a cache or parked-list
 * lock): it must return soon and must not call into the readers of this
 * context.  All pointers are valid only during the call.
 */
typedef void (*zmctx_log_fn)(void *user, enum zlog_level level, const char *name, const char *text,
			     const struct zerr *why);

/*
 * Sends the readers' lines at or below max to fn(user, ...) instead of
 * zlog (fn NULL: back to zlog, which applies its own level).  user is
 * borrowed.  Call before the readers are shared.
 */
void zmctx_set_log(struct zmctx *c, zmctx_log_fn fn, void *user, enum zlog_level max);

/* Writes one line through c's sink; name and why as for zmctx_log_fn (may be NULL). */
void zmctx_log(struct zmctx *c, enum zlog_level level, const char *name, const struct zerr *why,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* One archive that failed to open as corrupt (zmctx_damaged). */
struct zmctx_damage {
	char name[512]; /* the reader's name, cut to fit */
	char why[256];	/* the reason, as its log line gave it, cut to fit */
};

/*
 * Notes that the archive name failed to open as corrupt, for the reason
 * why (both borrowed).  It counts in index_errors (reader_get_counters)
 * unless name was noted before: one damaged file counts once however often
 * it is opened, and a second note of it only renews its reason.  Names are
 * remembered up to ZMCTX_DAMAGE_MAX; beyond that a new name counts without
 * being remembered.  Any thread.
 */
void zmctx_note_damaged(struct zmctx *c, const char *name, const char *why);

#define ZMCTX_DAMAGE_MAX 4096

/*
 * Passes in progress (a gzip index pass, a checkpoint pass over wide
 * units), for people: user.zmount.info, zmount-stat -w, zmount-index's
 * progress line.  A pass takes a slot with zmctx_pass_begin, adds what it
 * has done with zmctx_pass_add (an atomic add: cheap enough per output
 * buffer), and gives the slot back with zmctx_pass_end.  done and total
 * count one unit per pass, the pass's own: compressed bytes for a gzip
 * pass (total the file size), uncompressed bytes of the units for a
 * checkpoint pass.  At most ZMCTX_PASSES at once are shown; begin returns
 * NULL beyond that, and add and end accept NULL.  Any thread.
 */
#define ZMCTX_PASSES 16
struct zmctx_slot;
struct zmctx_slot *zmctx_pass_begin(struct zmctx *c, const char *name, const char *what,
				    uint64_t total);
void zmctx_pass_add(struct zmctx_slot *s, uint64_t n);
/* Sets done (a pass that knows its position, such as a compressed offset). */
void zmctx_pass_set(struct zmctx_slot *s, uint64_t done);
void zmctx_pass_end(struct zmctx *c, struct zmctx_slot *s);

/* One pass in progress, as zmctx_passes copies it. */
struct zmctx_pass {
	char name[512]; /* the reader's name, cut to fit */
	char what[32];	/* "index" or "checkpoints" */
	uint64_t done, total;
	double secs; /* since it began */
};

/*
 * Copies up to n passes in progress into out (name NULL), or only those of
 * the reader named name.  Returns how many.  Any thread.
 */
size_t zmctx_passes(struct zmctx *c, const char *name, struct zmctx_pass *out, size_t n);

/*
 * Copies up to n of the noted damaged archives into out, the most recently
 * noted first.  Returns how many it copied.  Any thread.
 */
size_t zmctx_damaged(struct zmctx *c, struct zmctx_damage *out, size_t n);

#endif
