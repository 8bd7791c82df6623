/* SPDX-License-Identifier: MIT */
/*
 * Read-ahead policy: which reads are sequential, and what to decode ahead
 * of them on the context's pool.  How it works: up to NSTREAMS streams per
 * reader, each where its last read ended (a read that starts there
 * continues it, and so does a large one near it: stream_continues).  A
 * read that continues a stream queues the units after it up to
 * ahead_end, one pool job each (prefetch_run fills a unit through
 * fill_entry, as a miss would), and demotes the units the stream read
 * through (consumed_to).  The amount is bounded by the cache: what it
 * holds beside the reader's own unit and the parked decoders' share
 * (ahead_room).  A slice of a streamed unit is decoded ahead only by the
 * decoder parked at its start (ahead_in_step).
 */
#include "readahead.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "bcache.h"
#include "ckahead.h"
#include "cmap.h"
#include "fill.h"
#include "park.h"
#include "pool.h"
#include "reader_int.h"

/* Reads arrive out of order from the kernel's parallel read-ahead: this close counts as "next". */
#define SEQ_SLACK (1u << 20)
/*
 * But only a read this large (the kernel's read-ahead requests are 16 KiB
 * and up, growing to max_readahead) may continue a stream without touching
 * its end (stream_continues).  A random 4 KiB pread reaches the daemon as
 * one 4 KiB request at its own offset, and the kernel sends nothing after
 * it (issue 32): such reads land within SEQ_SLACK of an earlier one
 * every few reads, and each was taken for a stream.
 */
#define SEQ_LARGE (64u << 10)
/*
 * Reads that continue a stream in order (where it ended) before it queues
 * read-ahead (readahead_note): from a remote source; locally, one.
 */
#define SEQ_CONFIRM 2
/*
 * Read-ahead looks at most this many units past a read (ahead_end), so a
 * read costs what the units it touches do: in a file of a million one-byte
 * Blocks, a walk to opts.readahead bytes on is the rest of the file, and
 * once per read made reading it quadratic (issue 18).  Units that small
 * gain nothing from workers; 1024 units of 32 KiB still fill 32 MiB.
 */
#define AHEAD_UNITS_MAX 1024u
/*
 * The smallest read at offset 0 that starts the second unit at once: the
 * kernel turns a small read at 0 (a header's) into 16 KiB, and cat's or
 * grep's first read into 128 KiB or more (stream_start).
 */
#define AHEAD_AT_ZERO_MIN (64u << 10)
/* A sequential stream gives up a unit it has read through once it reads this far past it. */
#define DONE_LAG TURN_SPAN

void readahead_wait(struct reader *r)
{
	pthread_mutex_lock(&r->lock);
	while (r->jobs > 0)
		pthread_cond_wait(&r->idle, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

struct pjob {
	struct reader *r;
	size_t k;
	uint64_t ustart;
	size_t ulen;
};

static void job_done(struct reader *r)
{
	pthread_mutex_lock(&r->lock);
	if (--r->jobs == 0)
		pthread_cond_broadcast(&r->idle);
	pthread_mutex_unlock(&r->lock);
}

/*
 * Whether a read-ahead job for slice [ustart, ...) of streamed entry k may
 * run, with r->stream held: only if r's decoder stands at its very start
 * (parked there, or none parked and the slice is the entry's first).  A job
 * that ran further would walk the decoder past slices the reader has not
 * had yet, and a slice the cache has no room for is lost on the way: the
 * reader would then decode the Block again from its start.
 */
static bool ahead_in_step(struct reader *r, size_t k, uint64_t ustart)
{
	uint64_t want = ustart - r->map.start[k], at;
	size_t pk;
	bool ok;

	if (park_peek(&r->ctx->parked, &r->park, &pk, &at))
		ok = pk == k && at == want;
	else
		ok = want == 0;
	/* Nor while a read wants an earlier byte: the slice could evict the one it is in. */
	if (ok) {
		pthread_mutex_lock(&r->lock);
		ok = !fill_turn_earlier(r, ustart);
		pthread_mutex_unlock(&r->lock);
	}
	return ok;
}

/* A worker decodes one unit ahead of a reader, unless it is cached or in flight. */
static void prefetch_run(void *arg)
{
	struct pjob *j = arg;
	struct reader *r = j->r;
	bool streamed = reader_streamed(r, j->k);
	struct bcache_ent *e;

	if (!reader_is_bad(r, j->k)) {
		if (streamed)
			pthread_mutex_lock(&r->stream);
		if ((!streamed || ahead_in_step(r, j->k, j->ustart)) &&
		    bcache_claim(r->cache, r->id, j->ustart, j->ulen, &e) == 1 &&
		    fill_entry(r, j->k, j->ustart, e, j->ustart) == 0) {
			atomic_fetch_add(&r->ctx->stats.ahead, j->ulen);
			bcache_put(r->cache, e);
		}
		if (streamed) {
			reader_moved(r);
			ckahead_unlock(r);
		}
	}
	job_done(r);
	free(j);
}

/*
 * Asks the source to start fetching what the queued units [k0, k1] will
 * need (zsrc_hint), so workers find it cached rather than wait on small preads in
 * turn.  A streamed Block is left to the kernel's own sequential read-ahead.
 */
static void prefetch_input(struct reader *r, size_t k0, size_t k1)
{
	uint64_t cstart, cend;

	if (reader_streamed(r, k0) || reader_streamed(r, k1))
		return;
	r->f->extent(r, k0, k1, &cstart, &cend);
	if (cend > cstart && cend <= INT64_MAX)
		zsrc_hint(r->src, cstart, cend - cstart);
}

/*
 * Bytes of the cache that read-ahead for a reader at end may fill without
 * evicting what it has not consumed: the budget, less the parked decoders'
 * share (see PARK_SHARE), the unit the reader is in and those it left
 * less than DONE_LAG ago.  Units decoded ahead are the most recently used,
 * so older entries go first; beyond this the newest read-ahead would push
 * out the oldest, still unread.
 */
static uint64_t ahead_room(const struct reader *r, uint64_t end)
{
	struct bcache_stats st;
	size_t parked, own, held, llen;
	uint64_t ustart, lstart, behind;
	size_t k;

	bcache_stats(r->cache, &st);
	k = reader_unit_of(r, end < reader_size(r) ? end : end - 1, &ustart, &own);
	/*
	 * And the units just read, which a stream gives up only DONE_LAG past
	 * them (consumed_to): until then they may be more recently used than
	 * units decoded ahead, which would be evicted first.
	 */
	reader_unit_of(r, end > DONE_LAG ? end - DONE_LAG : 0, &lstart, &llen);
	behind = ustart > lstart ? ustart - lstart : 0;
	/*
	 * As bcache counts them: a decoder beyond the parked share evicts no
	 * units.  In a streamed unit the reader's decoder counts in full even
	 * while it is out of the list, decoding: it is parked again after.
	 */
	parked = st.charged < st.budget / PARK_SHARE ? st.charged : st.budget / PARK_SHARE;
	if (reader_streamed(r, k))
		parked = st.budget / PARK_SHARE;
	held = parked + own + BCACHE_ENT_COST;
	return st.budget > held + behind ? st.budget - held - behind : 0;
}

/*
 * Where read-ahead for a stream that has read up to end stops: far enough
 * that every worker has one of the next units to decode (an xz -T Block is
 * 24 MiB or more), and at least opts.readahead bytes on; never past what
 * the cache can hold beside the reader's own unit (ahead_room), so a unit
 * decoded ahead is still there when the reader comes to it, nor past
 * AHEAD_UNITS_MAX units.  Always at a unit boundary: units are queued whole.
 */
static uint64_t ahead_end(const struct reader *r, uint64_t end)
{
	uint64_t size = reader_size(r), room = ahead_room(r, end), held = 0, pos = end;
	uint64_t min_to = end + r->opts.readahead;
	unsigned units = pool_threads(r->ctx->pool) + 1; /* the one holding end, then one each */

	for (unsigned i = 0; pos < size && i < AHEAD_UNITS_MAX; i++) {
		uint64_t ustart;
		size_t ulen;

		reader_unit_of(r, pos, &ustart, &ulen);
		if (ustart < end) { /* the reader's own: counted in room already */
			pos = ustart + ulen;
			continue;
		}
		if (i >= units && pos >= min_to)
			break;
		if (held + ulen + BCACHE_ENT_COST > room)
			break; /* a unit that does not fit is not started */
		held += ulen + BCACHE_ENT_COST;
		pos = ustart + ulen;
	}
	return pos < size ? pos : size;
}

/*
 * Whether a read at off is near where a sequential stream (readahead_note) has
 * got to, either side: one of a burst of read-ahead requests that the
 * kernel sent at once.  Not a stream that is one small read so far: the
 * kernel sends nothing after a random 4 KiB pread, and with 4 streams at
 * random offsets, TURN_SPAN either side of them took a quarter of a
 * 256 MiB file, where a random read decoded a whole 4 MiB Block instead of
 * its far slice (7 of 40 first misses; peer.sh, x4m).
 */
bool readahead_near(struct reader *r, uint64_t off)
{
	bool near = false;

	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < NSTREAMS && !near; i++) {
		uint64_t e = r->streams[i].end;

		near = e && (r->streams[i].hits || r->streams[i].big) && off + TURN_SPAN >= e &&
		       off <= e + TURN_SPAN;
	}
	pthread_mutex_unlock(&r->lock);
	return near;
}

/* Bytes of the budget that nothing holds now. */
static uint64_t cache_free(const struct reader *r)
{
	struct bcache_stats st;

	bcache_stats(r->cache, &st);
	return st.budget > st.used ? st.budget - st.used : 0;
}

/*
 * Where a stream that has demoted the units below done, and now reads at
 * off, may demote up to: the end of the last whole unit that ends
 * DONE_LAG or more before off.  The lag is for the kernel's read-ahead
 * requests, which arrive out of order: a unit is not given up while a
 * request for its bytes may still be on the way.
 */
static uint64_t consumed_to(const struct reader *r, uint64_t done, uint64_t off)
{
	while (done + DONE_LAG <= off) {
		uint64_t us;
		size_t ul;

		reader_unit_of(r, done, &us, &ul);
		if (us + ul + DONE_LAG > off)
			break;
		done = us + ul;
	}
	return done;
}

/*
 * With r->lock held: whether [off, end) lies inside what a stream has read
 * and not yet given up, [done, end).  On kernels whose FUSE page cache
 * uses large folios (6.18 here), a 1 MiB read-ahead request that ends
 * inside a 2 MiB folio does not fill it, and the kernel asks again for the
 * folio's part it covered: 100 such re-reads of 768 KiB in a cat of
 * 256 MiB.  Taken for new streams, they pushed the reader's own stream out
 * of the table, and the units it then never demoted stopped the cache
 * recycling buffers (bcache.c, recycle): every later unit took fresh
 * pages.  A re-read is served like any read; it only starts nothing.
 */
static bool reread(const struct reader *r, uint64_t off, uint64_t end)
{
	for (unsigned i = 0; i < NSTREAMS; i++)
		if (r->streams[i].end && off >= r->streams[i].done && end <= r->streams[i].end)
			return true;
	return false;
}

/* With r->lock held: the stream a new one replaces, the one read least recently. */
static unsigned stream_oldest(const struct reader *r)
{
	unsigned old = 0;

	for (unsigned i = 1; i < NSTREAMS; i++)
		if (r->streams[i].used < r->streams[old].used)
			old = i;
	return old;
}

/*
 * With r->lock held: starts stream i at a read of [off, end) that
 * continues none, and sets [*from, *to), the units to queue for it.
 */
static void stream_start(struct reader *r, unsigned i, uint64_t off, uint64_t end, uint64_t *from,
			 uint64_t *to)
{
	uint64_t us;
	size_t ul;

	r->streams[i].end = r->streams[i].ahead = end;
	r->streams[i].hits = 0;
	r->streams[i].used = r->notes;
	r->streams[i].big = end - off >= SEQ_LARGE;
	/* The unit the stream starts in was not read from its start by it. */
	reader_unit_of(r, off, &us, &ul);
	r->streams[i].done = us == off ? off : us + ul;
	*from = *to = 0;
	/*
	 * A large read from the very start is most often the first of
	 * many (cat, grep): the unit after the first one starts at once,
	 * so that a second core works while the first unit decodes.  A
	 * small one is most often a look at the header (file, pmdumplog
	 * -l, sqlite3), which would waste that unit; a small reader that
	 * goes on (dd bs=4k, tar) continues the stream at its next read.
	 */
	if (off == 0 && end >= AHEAD_AT_ZERO_MIN) {
		uint64_t ustart;
		size_t ulen;

		reader_unit_of(r, 0, &ustart, &ulen);
		*from = ulen;
		if (*from < reader_size(r)) {
			reader_unit_of(r, *from, &ustart, &ulen);
			/*
			 * Only if it fits beside the first (else it would
			 * evict it), and in room nobody uses: a guess must
			 * not push out units other files' readers will
			 * want, as when a client opens many files and
			 * reads their heads first (a PCP multi-archive
			 * context).
			 */
			if (ulen + BCACHE_ENT_COST <= ahead_room(r, 0) &&
			    ulen + BCACHE_ENT_COST <= cache_free(r))
				*to = ustart + ulen;
			r->streams[i].ahead = *to > *from ? *to : *from;
		}
	}
}

/* Queues the units of [from, to) on the pool, one job each, until the queue is full. */
static void queue_units(struct reader *r, uint64_t from, uint64_t to)
{
	if (from < to)
		prefetch_input(r, cmap_find(&r->map, from), cmap_find(&r->map, to - 1));
	while (from < to) {
		struct pjob *j = malloc(sizeof(*j));

		if (!j)
			return;
		j->r = r;
		j->k = reader_unit_of(r, from, &j->ustart, &j->ulen);
		from = j->ustart + j->ulen;
		pthread_mutex_lock(&r->lock);
		r->jobs++;
		pthread_mutex_unlock(&r->lock);
		if (pool_submit(r->ctx->pool, prefetch_run, j) < 0) {
			job_done(r);
			free(j);
			return; /* the queue is full: the workers are busy enough */
		}
	}
}

/*
 * Whether a read of [off, off + len) continues a stream that has read up
 * to e (0: none): one that starts at e (a reader in order, whatever its
 * request size: tail | head, dd through direct I/O; the kernel never asks
 * twice for a page it holds), or a large one near e (SEQ_LARGE: the
 * kernel's parallel read-ahead requests, which may arrive out of order).
 * Only the first kind confirms a stream (readahead_note's hits).
 */
static bool stream_continues(uint64_t e, uint64_t off, size_t len)
{
	if (!e || off + SEQ_SLACK < e || off > e + SEQ_SLACK)
		return false;
	return off == e || len >= SEQ_LARGE;
}

/*
 * A read of [off, end) that continues a stream and reaches the end of its
 * entry: the reader has read a wide entry through, and its checkpoint pass
 * is queued if none ran (reader_ck_note; a lone tail read's decoder builds
 * the set itself: udec_for).  The decoder's own note at the entry's end is not
 * enough: when read-ahead decodes the last slice while the reader is still
 * behind it, the pass that note queues gives way to the reader (streaming,
 * in reader_ck.c) and, once that reader had its last slice from the cache,
 * nobody queued it again: a full read left no checkpoints.
 */
static void ck_at_entry_end(struct reader *r, uint64_t off, uint64_t end)
{
	size_t k = cmap_find(&r->map, off);
	uint64_t elen = cmap_len(&r->map, k);

	if (end >= r->map.start[k] + elen)
		reader_ck_note(r, k, elen);
}

/* Notes a read of [off, off + len) and, if it continues a stream, queues what follows. */
void readahead_note(struct reader *r, uint64_t off, size_t len)
{
	uint64_t end = off + len, from, to, done_from = 0, done_to = 0, room = 0;
	bool confirmed, continued = false, first = false;
	unsigned i;

	if (!r->ctx->pool || r->opts.readahead == 0)
		return;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < NSTREAMS; i++)
		if (stream_continues(r->streams[i].end, off, len))
			break;
	if (i == NSTREAMS && reread(r, off, end)) {
		pthread_mutex_unlock(&r->lock);
		return;
	}
	r->notes++;
	if (i == NSTREAMS) {
		i = stream_oldest(r);
		stream_start(r, i, off, end, &from, &to);
		r->last_stream = i;
		first = off == 0 && end >= AHEAD_AT_ZERO_MIN;
		room = first ? ahead_room(r, end) : 0;
	} else {
		r->last_stream = i;
		r->streams[i].used = r->notes;
		continued = true;
		/* Only these count: large random reads land near each other too, never in order. */
		if (off == r->streams[i].end)
			r->streams[i].hits++;
		if (end > r->streams[i].end)
			r->streams[i].end = end;
		from = r->streams[i].ahead > end ? r->streams[i].ahead : end;
		/*
		 * One read near another proves little: random reads into a
		 * file of 1 MiB units land within SEQ_SLACK of an earlier one
		 * every few dozen reads, and each such guess would decode (and
		 * from a bucket, fetch) up to opts.readahead bytes nobody
		 * wants.  From a remote source, the second read that continues
		 * the stream starts its read-ahead (locally, the first: a
		 * wrong guess costs only CPU there, and a late start would
		 * put the read-ahead out of step with a parked decoder).
		 */
		confirmed = r->streams[i].hits >= SEQ_CONFIRM ||
			    (r->streams[i].hits > 0 && (!r->src || !r->src->ops->remote));
		to = confirmed ? ahead_end(r, end) : 0;
		room = confirmed ? ahead_room(r, end) : 0;
		if (from < to)
			r->streams[i].ahead = to;
		done_from = r->streams[i].done;
		done_to = consumed_to(r, done_from, off);
		r->streams[i].done = done_to;
	}
	pthread_mutex_unlock(&r->lock);
	/*
	 * A stream that continues inside a wide entry is a reader decoding it
	 * in order: a checkpoint pass over it stops (one decode per byte).  A
	 * lone read (a header's) leaves the pass running.
	 */
	if (continued && off < reader_size(r))
		reader_ck_yield(r, cmap_find(&r->map, off));
	if (continued && off < reader_size(r))
		ck_at_entry_end(r, off, end);

	/* Units the stream has read through go first when room is needed (bcache_demote). */
	while (done_from < done_to) {
		uint64_t us;
		size_t ul;

		reader_unit_of(r, done_from, &us, &ul);
		bcache_demote(r->cache, r->id, us);
		done_from = us + ul;
	}
	/* First, so that its claims stand before the slice jobs look for work. */
	if (room && end < reader_size(r))
		ckahead_queue(r, end, room, first);
	queue_units(r, from, to);
}
