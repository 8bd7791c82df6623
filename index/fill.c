/* SPDX-License-Identifier: MIT */
/*
 * Filling cache units on a miss (reader.c's "how it works" has the
 * shapes): a whole entry by one decoder run to its end, its check
 * verified; a slice of a streamed entry by the decoder parked at or before
 * it (udec_for), the slices it walks past offered to the cache.  And the
 * turn-taking that keeps one parked decoder walking forward: reads of a
 * streamed unit in progress are noted (fill_inflight_*), and a miss waits
 * for an earlier read's slice to be decoded first (wait_for_turn).
 */
#include "fill.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bcache.h"
#include "ckahead.h"
#include "cmap.h"
#include "park.h"
#include "pool.h"
#include "reader_int.h"
#include "udec.h"
#include "zlog.h"

/*
 * A whole unit at least this large has its fresh pages faulted in by an
 * idle worker while the decoder fills it from the start (see prefault).
 */
#define PREFAULT_MIN (4u << 20)

/* Bytes fill_slice decodes at a time through its scratch buffer: a checkpoint piece. */
#define SKIP_BUF CKPT_PIECE
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels refuse it with EINVAL */
#endif

/* Decodes map entry k whole into buf (exactly len bytes), its integrity check verified. */
static int fill_whole(struct reader *r, size_t k, void *buf, size_t len, struct zerr *err)
{
	struct udec *d;
	uint64_t cstart, cend;
	ssize_t n;
	int ret;

	/* All of its compressed bytes are read now: a remote source fetches them in one go. */
	r->f->extent(r, k, k, &cstart, &cend);
	if (cend > cstart)
		zsrc_hint(r->src, cstart, cend - cstart);
	ret = udec_open(r, k, &d, err);
	if (ret < 0)
		return ret;
	n = udec_read(r, d, buf, len, err);
	udec_close(d);
	if (n < 0)
		return (int)n;
	if ((size_t)n != len)
		return zerr_set(err, -EIO, 0, "%s ended %zu bytes early", r->f->unit,
				len - (size_t)n);
	return 0;
}

/*
 * With r->stream held: where in entry k the decoder that would fill the
 * slice at want (bytes into the entry) starts: the parked one if it is in
 * k and not past want, else a new one at 0.
 */
static uint64_t decoder_at(struct reader *r, size_t k, uint64_t want)
{
	uint64_t pos;
	size_t pk;

	if (park_peek(&r->ctx->parked, &r->park, &pk, &pos) && pk == k && pos <= want)
		return pos;
	return 0;
}

/*
 * Fills slice [ustart, ustart + len) of the streamed unit (an xz Block, a
 * zstd frame or a gzip span wider than whole_max) behind map entry k into
 * buf, using the parked decoder when it stopped at or before it.  Called
 * with r->stream held.
 */
static int fill_slice(struct reader *r, size_t k, uint64_t ustart, size_t len, void *buf,
		      struct zerr *err)
{
	uint64_t flag = ustart & UNIT_SLICE;
	size_t sl = flag ? reader_far_slice(r) : r->opts.slice;
	uint64_t start = r->map.start[k], elen = cmap_len(&r->map, k);
	uint64_t want = (ustart & ~UNIT_SLICE) - start; /* position in the entry */
	struct udec *d;
	int ret = udec_for(r, k, want, &d, err);

	if (ret < 0)
		return ret;
	/*
	 * Walk forward slice by slice, offering each one we pass to the cache;
	 * from a checkpoint, first to the next slice boundary.
	 */
	while (udec_tell(d) < want) {
		uint64_t pos = udec_tell(d);
		size_t n = sl - (size_t)(pos % sl);
		struct bcache_ent *e = NULL;
		void *dst;
		ssize_t got;

		if (elen - pos < n)
			n = (size_t)(elen - pos);
		/* A far slice keeps only itself (reader.c, far_slice). */
		if (n == sl && !flag && bcache_claim(r->cache, r->id, start + pos, n, &e) == 1) {
			dst = bcache_buf(e);
		} else {
			/*
			 * Not kept: decoded through a small buffer, which stays
			 * in the CPU's cache, rather than a slice of fresh pages.
			 */
			if (!r->skip)
				r->skip = malloc(SKIP_BUF);
			if (!r->skip) {
				ret = -ENOMEM;
				break;
			}
			dst = r->skip;
			if (n > SKIP_BUF - pos % SKIP_BUF) /* on the grid of ckpt.h's pieces */
				n = SKIP_BUF - (size_t)(pos % SKIP_BUF);
		}
		got = udec_read(r, d, dst, n, err);
		if (got != (ssize_t)n) {
			ret = got < 0 ? (int)got : zerr_set(err, -EIO, 0, "data ended early");
			if (e)
				bcache_done(r->cache, e, ret);
			break;
		}
		/* Decoding work done, kept or not: the stat must show a walk re-decoding. */
		atomic_fetch_add(&r->ctx->stats.decoded, n);
		atomic_fetch_add(&r->decoded, n);
		if (e) {
			/* Kept only if the file is still the one indexed, as in fill_entry. */
			int ok = reader_check_unchanged(r);

			bcache_done(r->cache, e, ok);
			if (ok < 0) {
				ret = ok;
				break;
			}
			bcache_put(r->cache, e);
		}
	}
	if (ret == 0) {
		ssize_t got = udec_read(r, d, buf, len, err);

		if (got != (ssize_t)len)
			ret = got < 0 ? (int)got : zerr_set(err, -EIO, 0, "data ended early");
	}
	if (ret == 0)
		reader_ck_note(r, k, udec_tell(d));
	/*
	 * Parked for the next slice, but not after a far slice: a read after
	 * it takes the whole unit (reader.c, far_slice), so a parked decoder
	 * would only hold a window that the next whole fill then maps afresh.
	 */
	if (ret == 0 && !flag && udec_tell(d) < elen) {
		udec_park(r, d, k);
		d = NULL;
	}
	udec_close(d);
	return ret;
}

static int fill(struct reader *r, size_t k, uint64_t ustart, size_t len, void *buf,
		struct zerr *err)
{
	if ((ustart & UNIT_SLICE) || ustart != r->map.start[k] || len != cmap_len(&r->map, k))
		return fill_slice(r, k, ustart, len, buf, err);
	return fill_whole(r, k, buf, len, err);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/*
 * Earlier slices of a streamed unit that just failed its Check may be in
 * the kernel's page cache: tell whoever can drop them, once.
 */
static void taint(struct reader *r)
{
	bool first;

	pthread_mutex_lock(&r->lock);
	first = !r->tainted;
	r->tainted = true;
	pthread_mutex_unlock(&r->lock);
	if (first && r->opts.tainted)
		r->opts.tainted(r->opts.tainted_ctx, r);
}

struct prefault {
	uintptr_t start;
	size_t len;
};

static void prefault_run(void *arg)
{
	struct prefault *p = arg;

	madvise((void *)p->start, p->len, MADV_POPULATE_WRITE);
	free(p);
}

/*
 * A whole unit's buffer is often a fresh mapping (a new mount has no
 * evicted buffers to reuse), and the decoder, writing it from the start,
 * stops for a page fault and the zeroing of a page every 4 KiB: about 50 ms
 * per 128 MiB here, a third of zstd's time to decode that much.  When a worker
 * is idle (one Block or frame being read, nothing else decoding), it
 * faults the pages in ahead of the decoder instead.  MADV_POPULATE_WRITE
 * never changes the bytes, so it cannot race the decoder, and if the
 * buffer is gone before the job runs it fails on an unmapped range or
 * prefaults a mapping of ours that is harmless to prefault: the job needs
 * no reference.  Pages already there cost a page-table walk.
 */
static void prefault(struct reader *r, void *buf, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = ((uintptr_t)buf + page - 1) & ~(page - 1);
	uintptr_t end = ((uintptr_t)buf + len) & ~(page - 1);
	struct prefault *p;

	if (!r->ctx->pool || len < PREFAULT_MIN || end <= start)
		return;
	p = malloc(sizeof(*p));
	if (!p)
		return;
	*p = (struct prefault){ start, end - start };
	if (pool_submit_idle(r->ctx->pool, prefault_run, p) < 0)
		free(p);
	else
		atomic_fetch_add(&r->ctx->stats.prefault, end - start);
}

/*
 * Fills entry e, which the caller claimed for the unit at ustart of map
 * entry k, and ends the fill.  Returns 0, or a negative errno after the one
 * log line for its cause.  pos is the offset a reader wanted, for the log.
 */
int fill_entry(struct reader *r, size_t k, uint64_t ustart, struct bcache_ent *e, uint64_t pos)
{
	struct zerr err = { 0 };
	struct timespec t0;
	bool whole = !(ustart & UNIT_SLICE) && !reader_streamed(r, k);
	int ret = reader_check_unchanged(r);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (ret == 0 && whole)
		prefault(r, bcache_buf(e), bcache_size(e));
	if (ret == 0)
		ret = fill(r, k, ustart, bcache_size(e), bcache_buf(e), &err);
	/*
	 * Once more before calling the unit bad: a read error can pass (a
	 * pread EIO of a flaky disk or network file system), while corrupt
	 * data fails again, the same way, and only then is marked and logged.
	 */
	if (ret < 0 && ret != -ENOMEM && ret != -ESTALE && err.msg[0] &&
	    reader_check_unchanged(r) == 0) {
		struct zerr again = { 0 };

		if (fill(r, k, ustart, bcache_size(e), bcache_buf(e), &again) == 0) {
			reader_log(r, ZLOG_WARN, NULL,
				   "a %s at offset %" PRIu64 " failed once (%s) and decoded "
				   "the second time",
				   r->f->unit, ustart, err.msg);
			ret = 0;
		}
	}
	/*
	 * And after: a file rewritten while we decoded it can yield bytes of
	 * neither version (a gzip span has no CRC of its own), so they are
	 * only kept if the file is still the one indexed.
	 */
	if (ret == 0)
		ret = reader_check_unchanged(r);
	if (ret == 0 && whole)
		reader_ck_medium_done(r, k, bcache_buf(e), bcache_size(e));
	/*
	 * The log line and the marks come before bcache_done, so a reader
	 * waiting on this unit gets its EIO only once the cause is recorded.
	 * A file changed under the decoder is not corrupt: that cause is logged
	 * once already.
	 */
	if (ret < 0 && err.msg[0] && reader_check_unchanged(r) == 0) {
		ret = reader_mark_failed(r, k, pos, ret, &err);
		if (ret == -EIO && reader_streamed(r, k))
			taint(r);
	}
	bcache_done(r->cache, e, ret);
	if (ret == 0) {
		reader_mark_read(r);
		atomic_fetch_add(&r->ctx->stats.decoded, bcache_size(e));
		atomic_fetch_add(&r->decoded, bcache_size(e));
		reader_log(r, ZLOG_DEBUG, NULL,
			   "decoded %zu bytes at %" PRIu64 " (%s %zu) in %.1f ms", bcache_size(e),
			   ustart & ~UNIT_SLICE, r->f->unit, r->entry[k], ms_since(&t0));
	}
	return ret < 0 && ret != -ENOMEM ? -EIO : ret;
}

/* The read noted for this thread, until it starts (fill_inflight_adopt). */
static _Thread_local struct {
	const struct reader *r;
	int slot;
} received;

/* Notes a read in progress of [pos, end); returns its slot, or -1 if all are taken. */
int fill_inflight_add(struct reader *r, uint64_t pos, uint64_t end)
{
	int slot = -1;

	pthread_mutex_lock(&r->lock);
	if (received.r == r) {
		slot = received.slot;
		received.r = NULL;
	} else {
		for (int i = 0; i < NINFLIGHT && slot < 0; i++)
			if (!r->inflight[i].used)
				slot = i;
	}
	if (slot >= 0) {
		r->inflight[slot].who = pthread_self();
		r->inflight[slot].pos = pos;
		r->inflight[slot].end = end;
		r->inflight[slot].used = true;
		reader_moved_locked(r);
	}
	pthread_mutex_unlock(&r->lock);
	return slot;
}

void fill_inflight_adopt(struct reader *r, int slot)
{
	received.r = r;
	received.slot = slot;
}

void fill_inflight_move(struct reader *r, int slot, uint64_t pos)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&r->lock);
	r->inflight[slot].pos = pos;
	pthread_mutex_unlock(&r->lock);
}

void fill_inflight_del(struct reader *r, int slot)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&r->lock);
	r->inflight[slot].used = false;
	reader_moved_locked(r);
	pthread_mutex_unlock(&r->lock);
}

bool fill_inflight_in(struct reader *r, uint64_t from, uint64_t to)
{
	pthread_t self = pthread_self();
	bool in = false;

	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < NINFLIGHT && !in; i++)
		in = r->inflight[i].used && !pthread_equal(r->inflight[i].who, self) &&
		     r->inflight[i].pos < to && r->inflight[i].end > from;
	pthread_mutex_unlock(&r->lock);
	return in;
}

/*
 * With r->lock held: whether a read in progress on another thread wants a
 * byte before ustart, at most TURN_SPAN before it.  Filling ustart first
 * would either walk the decoder past that read's slices, or evict the
 * slice it is in the middle of (a kernel request is rarely aligned to
 * slices, so two requests share one): either way it would be decoded again.
 */
bool fill_turn_earlier(const struct reader *r, uint64_t ustart)
{
	pthread_t self = pthread_self();

	for (int i = 0; i < NINFLIGHT; i++) {
		uint64_t pos = r->inflight[i].pos;

		if (!r->inflight[i].used || pthread_equal(r->inflight[i].who, self))
			continue;
		if (pos < ustart && pos + TURN_SPAN >= ustart)
			return true;
	}
	return false;
}

/*
 * With r->stream held, for slice ustart of streamed entry k: whether the
 * caller should let another read go first (fill_turn_earlier), or, with
 * *grace, wait briefly for one that may not be noted yet because the
 * decoder stands a little behind ustart.
 */
static bool turn_wait(struct reader *r, size_t k, uint64_t ustart, bool *grace)
{
	uint64_t want = ustart - r->map.start[k], at = decoder_at(r, k, want);
	bool earlier;

	pthread_mutex_lock(&r->lock);
	earlier = fill_turn_earlier(r, ustart);
	pthread_mutex_unlock(&r->lock);
	*grace = !earlier && at != want && want - at <= TURN_SPAN;
	return earlier;
}

/*
 * Called with r->stream held, for slice ustart of streamed entry k, by a
 * read that holds no cache reference.  If a read on another thread wants
 * an earlier byte (fill_turn_earlier), releases r->stream, waits for something
 * to change (the decoder moving, a read starting, moving on or ending) or
 * TURN_STALL_MS, and returns true: the caller looks again.  If only the
 * decoder stands a little behind the slice, the same for TURN_GRACE_MS,
 * once, and only if the read continues a sequential stream (the kernel
 * may have sent the earlier read, not yet noted).  Else returns false,
 * r->stream still held, and the caller decodes (walking the decoder if it
 * must).  *graced and *stalled carry the time-outs across calls; once
 * stalled, the caller stops waiting.  Waits with no lock held (r->lock is
 * the condition's own) and no cache reference, so every read it waits for
 * can go on; that read wants an earlier byte than the waiter, so waits
 * never form a cycle.
 */
static bool wait_for_turn(struct reader *r, size_t k, uint64_t ustart, bool *graced, bool *stalled)
{
	struct timespec dl;
	uint64_t moves;
	bool grace, earlier = turn_wait(r, k, ustart, &grace);
	int rc = 0;

	if (!earlier && (!grace || *graced))
		return false;
	pthread_mutex_lock(&r->lock);
	moves = r->moves;
	pthread_mutex_unlock(&r->stream);
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += (long)(earlier ? TURN_STALL_MS : TURN_GRACE_MS) * 1000000L;
	dl.tv_sec += dl.tv_nsec / 1000000000L;
	dl.tv_nsec %= 1000000000L;
	r->waiters++;
	while (r->moves == moves && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&r->moved, &r->lock, &dl);
	r->waiters--;
	if (r->moves == moves) {
		if (earlier)
			*stalled = true;
		else
			*graced = true;
	}
	pthread_mutex_unlock(&r->lock);
	return true;
}

/*
 * Returns a referenced cache entry holding unit [ustart, ustart + ulen) of
 * map entry k, decoding it on a miss, or a negative errno; -EAGAIN when
 * there is no room for it and the caller may not wait (it holds other
 * units: waiting could be waiting for itself).  Room is never waited for
 * with r->stream held, since holders of other units may need that lock.
 */
int fill_get(struct reader *r, size_t k, uint64_t ustart, size_t ulen, uint64_t pos, bool may_wait,
	     bool seq, struct bcache_ent **out)
{
	uint64_t at = ustart & ~UNIT_SLICE; /* ustart is the cache key */
	bool streamed = (ustart & UNIT_SLICE) || reader_streamed(r, k), graced = !seq,
	     stalled = false;
	int ret;

	for (;;) {
		if (streamed) {
			if (bcache_lookup(r->cache, r->id, ustart, out) == 0)
				return 0;
			/*
			 * A span job's slice (ckahead.h): never decoded here,
			 * and waited for with no lock held, since the job may
			 * still be queued behind workers that wait for
			 * r->stream.  A read holding units serves those.
			 */
			if (ckahead_owns(r, ustart)) {
				if (!may_wait)
					return -EAGAIN;
				bcache_wait_fill(r->cache, r->id, ustart);
				continue;
			}
			pthread_mutex_lock(&r->stream);
			if (ckahead_owns(r, ustart)) { /* queued since: look again */
				pthread_mutex_unlock(&r->stream);
				continue;
			}
			/*
			 * A read holding units of its own may not wait, nor go
			 * before an earlier read or walk the decoder: it serves
			 * what it has, and asks again.
			 */
			if (!may_wait) {
				bool grace;

				if (turn_wait(r, k, at, &grace) ||
				    decoder_at(r, k, at - r->map.start[k]) !=
					    at - r->map.start[k]) {
					pthread_mutex_unlock(&r->stream);
					return -EAGAIN;
				}
			}
			if (may_wait && !stalled && wait_for_turn(r, k, at, &graced, &stalled))
				continue;
		}
		ret = bcache_get(r->cache, r->id, ustart, ulen, may_wait && !streamed, out);
		if (ret == 1) {
			ret = fill_entry(r, k, ustart, *out, pos);
			if (ret < 0)
				*out = NULL;
		} else if (ret < 0 && ret != -ENOMEM && ret != -EAGAIN) {
			ret = -EIO; /* another thread's fill failed, and logged it */
		}
		if (streamed) {
			reader_moved(r);
			ckahead_unlock(r);
		}
		if (ret != -EAGAIN || !may_wait)
			break;
		bcache_wait_room(r->cache, ulen);
	}
	return ret < 0 ? ret : 0;
}
