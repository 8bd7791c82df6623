/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_STAGE_H
#define ZMOUNT_STAGE_H

/*
 * Decoded bytes held for the cache before their unit's place is known.
 * A pass that must decode frames to learn their sizes (fmt_zstd.c's
 * measuring pass) learns a frame's offset in the file only when every
 * frame before it is measured, and frames are measured on several threads
 * at once.  What it decodes is staged here, one struct stage per unit, in
 * a cache buffer as large as the unit can be, reserved in the cache's
 * budget before it is allocated (bcache_reserve), and handed to the cache
 * as the unit once the map is built (stage_place): the bytes are written
 * once, into the pages the cache keeps.  A first read from the start then
 * finds those units cached instead of decoding them again (issue 32).
 *
 * A stage_budget caps what all its stages reserve in one pass (`left`)
 * and the size of one unit (`unit_max`: a unit cached in slices, not
 * whole, is not kept).  A unit that may pass either cap, or finds no room,
 * is not staged; the pass decodes it into a buffer of its own.  With
 * `when`, a unit that starts while *when is false is staged only in room
 * the cache has spare (bcache_reserve_spare): a background pass nobody
 * waits for evicts nobody's data for bytes nobody may read, but fills an
 * idle cache, as a mount's first minutes leave it.
 *
 * Threads: one thread writes a given stage (all calls but the budget's);
 * the budget is shared under its lock.  stage_place and stage_drop may
 * run on any thread once no writer is left.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bcache;

struct stage_budget {
	pthread_mutex_t lock;
	struct bcache *cache;	 /* borrowed: outlives every stage */
	uint64_t left;		 /* bytes all stages may still reserve; under lock */
	uint64_t unit_max;	 /* a unit longer than this is not kept */
	const atomic_bool *when; /* NULL, or evict for them only while it is true (borrowed) */
};

struct stage {
	unsigned char *buf; /* bcache_buf_alloc(cap), reserved; NULL: not staged */
	size_t cap;
	size_t len; /* bytes staged */
};

void stage_budget_init(struct stage_budget *b, struct bcache *cache, uint64_t left,
		       uint64_t unit_max, const atomic_bool *when);
void stage_budget_destroy(struct stage_budget *b);

/*
 * Starts staging a unit of at most bound bytes in s (zeroed).  False, with
 * nothing held, when it is not to be kept (see above) or out of memory.
 */
bool stage_begin(struct stage_budget *b, struct stage *s, uint64_t bound);

/* Where the next bytes go (*cap of room), or false: s is full or not staged. */
bool stage_room(struct stage *s, void **dst, size_t *cap);

/* The caller wrote n bytes (at most the *cap of the last stage_room) at *dst. */
void stage_wrote(struct stage *s, size_t n);

/* Appends len bytes from buf; if they do not fit, drops s (stage_drop). */
void stage_copy(struct stage_budget *b, struct stage *s, const void *buf, size_t len);

/* Frees s's buffer and gives back its reservation; s is not staged after.  Accepts either. */
void stage_drop(struct stage_budget *b, struct stage *s);

/*
 * Hands s's bytes to the cache as unit (id, no) if they are exactly len
 * bytes, and drops s.  A buffer much larger than its bytes is copied into
 * one of their size instead, so the cache holds no slack.
 */
void stage_place(struct stage_budget *b, struct stage *s, uint64_t id, uint64_t no, uint64_t len);

#endif
