/* SPDX-License-Identifier: MIT */
/*
 * Span jobs: read-ahead inside one wide entry from its checkpoints (see
 * ckahead.h, and doc/design.md "Checkpoints inside one unit").  Span i of
 * a set is the slices from the first slice boundary at or after point i
 * to the first at or after point i + 1 (the entry's end for the last):
 * spans tile the entry, so a job and the reader (or another job) share
 * only the bytes between a point and the slice boundary after it, which
 * the job decodes to reach its first slice.  Point 0's span is the
 * reader's own.  Every byte a job keeps comes out of a resumed decoder
 * (udec_resume_at), which hands out no byte of a piece before its CRC32
 * matched, as a reader's resume does.
 */
#include "ckahead.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "bcache.h"
#include "ckpt.h"
#include "cmap.h"
#include "park.h"
#include "pool.h"
#include "reader_int.h"
#include "udec.h"
#include "zlog.h"

struct ckjob {
	struct reader *r;
	size_t k, i;		/* entry, and the point its decoder resumes at */
	uint64_t a;		/* its first slice, bytes into the entry */
	unsigned slot;		/* in r->ckj */
	size_t n;		/* slices */
	struct bcache_ent *e[]; /* in order; NULL once filled */
};

bool ckahead_owns(struct reader *r, uint64_t ustart)
{
	bool owns = false;

	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < CKAHEAD_JOBS && !owns; i++)
		owns = r->ckj[i].used && ustart >= r->ckj[i].from && ustart < r->ckj[i].to;
	pthread_mutex_unlock(&r->lock);
	return owns;
}

/* The job has filled the slice before at (absolute): readers may look it up as any other. */
static void owned_from(struct reader *r, unsigned slot, uint64_t at)
{
	pthread_mutex_lock(&r->lock);
	r->ckj[slot].from = at;
	pthread_mutex_unlock(&r->lock);
}

/*
 * Ends job j: its slot is freed first, then its unfilled slices leave the
 * cache with -EAGAIN, so a reader waiting on one looks again, finds the
 * slice no longer owned, and decodes it as it would have without the job
 * (and if the data is bad, fails and logs it there).
 */
static void job_end(struct ckjob *j)
{
	struct reader *r = j->r;

	pthread_mutex_lock(&r->lock);
	r->ckj[j->slot].used = false;
	pthread_mutex_unlock(&r->lock);
	for (size_t x = 0; x < j->n; x++)
		if (j->e[x])
			bcache_done(r->cache, j->e[x], -EAGAIN);
	reader_moved(r);
	pthread_mutex_lock(&r->lock);
	if (--r->jobs == 0)
		pthread_cond_broadcast(&r->idle);
	pthread_mutex_unlock(&r->lock);
	free(j);
}

/* Decodes d forward to byte a of its entry, keeping nothing.  0 or a negative errno. */
static int skip_to(struct reader *r, struct udec *d, uint64_t a, struct zerr *err)
{
	static _Thread_local unsigned char scratch[CKPT_PIECE];

	while (udec_tell(d) < a) {
		uint64_t pos = udec_tell(d);
		size_t n = CKPT_PIECE - (size_t)(pos % CKPT_PIECE);
		ssize_t got;

		if (a - pos < n)
			n = (size_t)(a - pos);
		got = udec_read(r, d, scratch, n, err);
		if (got != (ssize_t)n)
			return got < 0 ? (int)got : -EIO;
		atomic_fetch_add(&r->ctx->stats.decoded, n);
		atomic_fetch_add(&r->decoded, n);
		atomic_fetch_add(&r->ck_ahead, n);
	}
	return 0;
}

/* Fills j's slices in order with d, from its first: stops at the first failure. */
static void fill_slices(struct ckjob *j, struct udec *d, struct zerr *err)
{
	struct reader *r = j->r;
	uint64_t start = r->map.start[j->k];

	for (size_t x = 0; x < j->n && !atomic_load(&r->ck_stop); x++) {
		size_t len = bcache_size(j->e[x]);
		ssize_t got = udec_read(r, d, bcache_buf(j->e[x]), len, err);

		if (got != (ssize_t)len || reader_check_unchanged(r) < 0)
			break;
		atomic_fetch_add(&r->ctx->stats.decoded, len);
		atomic_fetch_add(&r->ctx->stats.ahead, len);
		atomic_fetch_add(&r->decoded, len);
		atomic_fetch_add(&r->ck_ahead, len);
		owned_from(r, j->slot, start + udec_tell(d));
		bcache_done(r->cache, j->e[x], 0);
		bcache_put(r->cache, j->e[x]);
		j->e[x] = NULL;
		reader_moved(r);
	}
}

/* Resumes a decoder at j's point and fills j's slices with it, charging it to the cache. */
static void job_fill(struct ckjob *j, struct zerr *err)
{
	struct reader *r = j->r;
	struct udec *d = NULL;
	size_t cost;

	if (atomic_load(&r->ck_stop) || reader_is_bad(r, j->k) ||
	    udec_resume_at(r, j->k, j->i, &d, err) < 0)
		return;
	/* Counted in the budget while it runs, as a parked decoder is. */
	cost = udec_cost(d);
	bcache_charge(r->cache, cost);
	if (skip_to(r, d, j->a, err) == 0)
		fill_slices(j, d, err);
	udec_close(d);
	bcache_uncharge(r->cache, cost);
}

static void job_run(void *arg)
{
	struct ckjob *j = arg;
	struct zerr err = { 0 };

	reader_log(j->r, ZLOG_DEBUG, NULL, "%s %zu: decoding span %zu ahead (%zu slices)",
		   j->r->f->unit, j->r->entry[j->k], j->i, j->n);
	job_fill(j, &err);
	if (err.msg[0])
		reader_log(j->r, ZLOG_DEBUG, NULL, "%s %zu: span %zu stopped: %s", j->r->f->unit,
			   j->r->entry[j->k], j->i, err.msg);
	else
		reader_log(j->r, ZLOG_DEBUG, NULL, "%s %zu: span %zu ends", j->r->f->unit,
			   j->r->entry[j->k], j->i);
	job_end(j);
}

/* Drops a job that was never queued: its claims leave the cache. */
static void job_drop(struct ckjob *j)
{
	for (size_t x = 0; x < j->n; x++)
		bcache_done(j->r->cache, j->e[x], -EAGAIN);
	free(j);
}

/* Rounds pos (bytes into an entry of elen) up to a slice boundary, at most elen. */
static uint64_t slice_up(uint64_t pos, size_t sl, uint64_t elen)
{
	uint64_t up = (pos + sl - 1) / sl * sl;

	return up < elen ? up : elen;
}

/*
 * With r->stream held: claims every slice of [a, b) in entry k for a job
 * resuming at point i.  NULL if one is cached or in flight already, or
 * has no room: then none stays claimed (nobody can wait on them yet: a
 * reader looks for owners under r->stream, which the caller holds).
 */
static struct ckjob *job_claim(struct reader *r, size_t k, size_t i, uint64_t a, uint64_t b)
{
	size_t sl = r->opts.slice, n = (size_t)((b - a + sl - 1) / sl);
	uint64_t start = r->map.start[k];
	struct ckjob *j = calloc(1, sizeof(*j) + n * sizeof(j->e[0]));

	if (!j)
		return NULL;
	*j = (struct ckjob){ .r = r, .k = k, .i = i, .a = a };
	for (; j->n < n; j->n++) {
		uint64_t at = a + j->n * sl;
		size_t len = (size_t)(b - at < sl ? b - at : sl);

		if (bcache_claim(r->cache, r->id, start + at, len, &j->e[j->n]) != 1)
			break;
	}
	if (j->n == n)
		return j;
	job_drop(j);
	return NULL;
}

/*
 * With r->stream held: registers j as owner of its slices [a, b) and
 * queues it.  false (j's claims dropped, j freed) if all slots are taken
 * or the pool's queue is full.
 */
static bool job_submit(struct ckjob *j, uint64_t b)
{
	struct reader *r = j->r;
	uint64_t start = r->map.start[j->k];
	unsigned slot = CKAHEAD_JOBS;

	pthread_mutex_lock(&r->lock);
	for (unsigned s = 0; s < CKAHEAD_JOBS && slot == CKAHEAD_JOBS; s++)
		if (!r->ckj[s].used)
			slot = s;
	if (slot < CKAHEAD_JOBS) {
		r->ckj[slot].used = true;
		r->ckj[slot].from = start + j->a;
		r->ckj[slot].to = start + b;
		r->jobs++;
	}
	pthread_mutex_unlock(&r->lock);
	if (slot == CKAHEAD_JOBS) {
		job_drop(j);
		return false;
	}
	j->slot = slot;
	if (pool_submit(r->ctx->pool, job_run, j) == 0)
		return true;
	job_end(j);
	return false;
}

/* Slots of r's span jobs in use (each a job queued or running).  Takes r->lock. */
static unsigned jobs_busy(struct reader *r)
{
	unsigned n = 0;

	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < CKAHEAD_JOBS; i++)
		n += r->ckj[i].used;
	pthread_mutex_unlock(&r->lock);
	return n;
}

/*
 * With r->stream held, for wide entry k and its set s: queues the spans
 * that start at or after lo (bytes into k) and end within room bytes of
 * end (absolute), while fewer than max jobs are busy.
 */
static void queue_spans(struct reader *r, size_t k, const struct ckpt_set *s, uint64_t lo,
			uint64_t end, uint64_t room, unsigned max)
{
	size_t sl = r->opts.slice, p = ckpt_find(s, lo);
	uint64_t start = r->map.start[k], elen = cmap_len(&r->map, k);

	for (size_t i = p > 0 ? p : 1; i < s->n && jobs_busy(r) < max; i++) {
		uint64_t a = slice_up(s->pt[i].uoff, sl, elen);
		uint64_t b = i + 1 < s->n ? slice_up(s->pt[i + 1].uoff, sl, elen) : elen;
		struct ckjob *j;

		if (a < lo || a >= b)
			continue;
		if (start + b > end + room)
			break;
		/* A span cached or in flight (a job's, or one the reader passed) is skipped whole.
		 */
		j = job_claim(r, k, i, a, b);
		if (j && !job_submit(j, b))
			break;
	}
}

/*
 * The wide entry holding end, and its set, if span jobs may run there:
 * false without a pool or a set (loaded first if load).  Takes no lock of r
 * but what a load takes.
 */
static bool span_target(struct reader *r, uint64_t end, bool load, size_t *k,
			const struct ckpt_set **s)
{
	if (!r->ckable || !r->ctx->pool || end >= reader_size(r))
		return false;
	*k = cmap_find(&r->map, end);
	if (r->ckable[*k] != CKABLE_WIDE)
		return false;
	*s = load ? reader_ck_get(r, *k) : reader_ck_set(r, *k);
	return *s && (*s)->n >= 2;
}

/* With r->stream held: ckahead_queue's work in entry k with set s, up to max jobs. */
static void queue_locked(struct reader *r, size_t k, const struct ckpt_set *s, uint64_t end,
			 uint64_t room, unsigned max)
{
	uint64_t lo, at;
	size_t pk;

	if (jobs_busy(r) >= max)
		return;
	/*
	 * Not behind the reader's own decoder: a span it is in is its own.
	 * Under r->stream, since that decoder is parked then, and no reader
	 * is between its look for owners and its fill (fill_get).
	 */
	lo = end - r->map.start[k];
	if (park_peek(&r->ctx->parked, &r->park, &pk, &at) && pk == k && at > lo)
		lo = at;
	queue_spans(r, k, s, lo, end, room, max);
}

/* One job per worker: more would only share the cores. */
static unsigned jobs_max(const struct reader *r)
{
	unsigned max = pool_threads(r->ctx->pool);

	return max < CKAHEAD_JOBS ? max : CKAHEAD_JOBS;
}

void ckahead_queue(struct reader *r, uint64_t end, uint64_t room, bool first)
{
	const struct ckpt_set *s;
	size_t k;

	/*
	 * A first read is only a guess (see ckahead.h): the set is made
	 * ready, and a read that continues the stream past CKAHEAD_FROM
	 * queues the spans.
	 */
	if (!span_target(r, end, first, &k, &s) || first || end < CKAHEAD_FROM)
		return;
	if (pthread_mutex_trylock(&r->stream) == 0) {
		queue_locked(r, k, s, end, room, jobs_max(r));
		pthread_mutex_unlock(&r->stream);
		return;
	}
	/*
	 * Busy (a reader decodes its own span): left to the holder, which
	 * queues it as it lets go (ckahead_unlock), rather than wait a
	 * slice's decode here or miss the chance until a read finds the lock
	 * free, which at a cold start can be a whole span later.
	 */
	pthread_mutex_lock(&r->lock);
	if (end > r->ck_pend_end) {
		r->ck_pend_end = end;
		r->ck_pend_room = room;
	}
	pthread_mutex_unlock(&r->lock);
}

void ckahead_unlock(struct reader *r)
{
	const struct ckpt_set *s;
	uint64_t end, room;
	size_t k;

	pthread_mutex_lock(&r->lock);
	end = r->ck_pend_end;
	room = r->ck_pend_room;
	r->ck_pend_end = 0;
	pthread_mutex_unlock(&r->lock);
	if (end && span_target(r, end, false, &k, &s))
		queue_locked(r, k, s, end, room, jobs_max(r));
	pthread_mutex_unlock(&r->stream);
}
