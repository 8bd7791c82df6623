/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ZMCTX_INT_H
#define ZMOUNT_ZMCTX_INT_H

/*
 * The context's fields, for the reader (reader.c and the files of its
 * core, see reader_int.h; fmt_*.c) and zmctx.c only: callers see zmctx.h.
 */

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "fmttab.h"
#include "park.h"
#include "zmctx.h"

struct reader;

/* A pass in progress (zmctx_pass_begin); name, what, total and t0 are protected by pass_lock. */
struct zmctx_slot {
	bool used;
	char name[512];
	char what[32];
	uint64_t total;
	struct timespec t0;
	atomic_uint_fast64_t done;
};

/* A damaged archive's entry (zmctx_note_damaged): both strings owned. */
struct zmctx_noted {
	char *name, *why;
};

/* Counters of all readers on one context (reader_get_counters); backends add to their own. */
struct reader_stats {
	atomic_uint_fast64_t decoded, ahead, prefault, built, loaded, errors, ixerr, served, ckpts;
	atomic_uint_fast64_t opened[FMTTAB_MAX]; /* per format id: its fmt->counter */
};

struct zmctx {
	struct bcache *cache;	  /* owned */
	struct pool *pool;	  /* borrowed; NULL: no read-ahead */
	void *fstate[FMTTAB_MAX]; /* per format id: owned, fmt->ctx_new's (fmt_state) */
	struct reader_stats stats;
	atomic_uint_fast64_t next_id; /* cache keys: unique per reader within this cache */
	struct park parked;	      /* the readers' parked decoders, charged to cache (park.h) */
	/* Once-only warnings (fmt_gz.c): said once per context. */
	atomic_flag save_failed_logged, untrusted_logged;
	/* Checkpoint windows on disk (spill.h): opened by the first set spilled. */
	pthread_mutex_t spill_lock;
	struct spill *spill; /* protected by spill_lock until zmctx_free; owned */
	pthread_mutex_t pass_lock;
	struct zmctx_slot passes[ZMCTX_PASSES]; /* in progress: see zmctx_slot */
	/* Damaged archives by name (zmctx_note_damaged), oldest note first. */
	pthread_mutex_t damage_lock;
	/* Protected by damage_lock. */
	struct zmctx_noted *noted; /* owned */
	size_t nnoted, noted_cap;
	/* The sink; set before readers are shared, read-only after. */
	zmctx_log_fn log;
	void *log_user;
	enum zlog_level log_max;
};

/* zmctx_log with a va_list. */
void zmctx_vlog(struct zmctx *c, enum zlog_level level, const char *name, const struct zerr *why,
		const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

#endif
