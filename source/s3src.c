/* SPDX-License-Identifier: MIT */
/*
 * How it works.  Codecs read an archive in small pieces (a header, a few
 * KiB of a block), so one GET per pread would cost a round trip per piece.
 * Each source keeps up to NWIN windows: copies of byte ranges of the
 * object, fetched with one ranged GET each (If-Match: the ETag at open).
 * A pread inside a ready window is a memcpy; one inside a window being
 * fetched waits for it; a miss fetches a new window starting at the read:
 *
 *   - the first read at 0 (the format's sniff) fetches WIN_HEAD (1 KiB):
 *     an xz Index lies at the end, and a run from the head grows anyway;
 *   - its size is WIN_MIN (64 KiB) after a jump, and doubles up to WIN_MAX
 *     (4 MiB) while reads continue where the last one ended (or step
 *     forward by less than twice the last window: a walk over headers), or go
 *     backwards (then the window ends where the last read began);
 *   - when the read lies in the extent the last hint named (the reader's
 *     read-ahead), the window is that extent (capped), so a random read of
 *     one block fetches that block's bytes and not more;
 *   - it ends where a window already held begins, so no byte is fetched
 *     twice while it is held;
 *   - a read at least as long as the window goes straight into the
 *     caller's buffer.
 *
 * Read-ahead: when a read passes the middle of a window of a sequential
 * run, or is the first read in a hinted extent, one helper thread per
 * source fetches the next window in the background (and on through the
 * hinted extent while the budget has room besides the windows not read
 * through yet), so the transfer overlaps the decoding.  A hint
 * alone fetches nothing: the reader hints the units it queues for its
 * workers, and a unit already cached is never read, so its bytes must not
 * be fetched again (issue 32: a first read of a .gz whose pass had left
 * every unit cached fetched up to twice the object).
 *
 * Memory: the windows' buffers never add up to more than WIN_BUDGET; to
 * make room idle windows are freed, those read through first, least
 * recently used first, and a fetch that still does not fit shrinks, or
 * goes straight into the caller's buffer.  A fetch ahead frees only windows
 * read through: one that freed the window a decoder was in, or a window it
 * had fetched itself for a worker on its way, had those bytes fetched again
 * (a .gz read with its saved index fetched 1.1-1.8 times the object).  Windows are shared by every
 * thread reading the source; the lock is never held during a GET, so two threads may fetch at once.
 *
 * A GET answered 412 marks the source stale: that read and every later one
 * fail with -ESTALE, so bytes of two versions are never mixed.
 */
#include "s3src.h"
#include "s3.h"
#include "s3cred.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NWIN	   16	      /* the reader's workers read several ~200 KB units at once */
#define WIN_HEAD   (1u << 10) /* the first read at 0: see plan */
#define WIN_MIN	   (64u << 10)
#define WIN_MAX	   (4u << 20)
#define WIN_BUDGET (2u * WIN_MAX) /* the read window and the one fetched ahead */
#define AHEAD_FROM (256u << 10)
#define NHINT	   16
#define HINT_ROOM  (WIN_MAX / 2) /* see ahead_claim */

_Static_assert(WIN_BUDGET + (16u << 10) <= S3SRC_BYTES_PER_SOURCE,
	       "S3SRC_BYTES_PER_SOURCE covers the windows, the struct and the key");

enum { W_EMPTY, W_FILLING, W_READY };

struct win {
	char *buf; /* cap bytes, or NULL when empty */
	uint64_t off;
	size_t len, cap; /* bytes held (or being fetched), bytes allocated */
	int state;
	size_t hi;     /* bytes from off read through: where the furthest read ended */
	bool seq;      /* part of a sequential run: reading it fetches the next one */
	uint64_t used; /* LRU tick of the last read */
};

struct s3src {
	struct zsrc z;
	struct s3 *s3;
	char *key;
	char etag[80];
	struct stat st;
	uint64_t size;

	pthread_mutex_t mu;
	pthread_cond_t filled; /* a window left W_FILLING */
	struct win w[NWIN];    /* protected by mu; a W_FILLING buf by its fetcher */
	size_t held;	       /* sum of the windows' cap, protected by mu */
	uint64_t tick;	       /* protected by mu */
	uint64_t last_off;     /* where the last read began, protected by mu */
	uint64_t seq_end;      /* where the last read ended, protected by mu */
	size_t seq_w;	       /* the last window's size, protected by mu */
	uint64_t ahead_to;     /* the helper goes on fetching up to here, protected by mu */
	struct {
		uint64_t off, end;
		bool armed;  /* no read in it yet: its fetch ahead is still to start */
	} hints[NHINT];	     /* the last NHINT hints (see hint_of), protected by mu */
	unsigned nhint;	     /* hints given, protected by mu */
	bool stale;	     /* protected by mu */
	bool closing;	     /* src_free runs: fetch no more; protected by mu */
	int ahead;	     /* 0 none, 1 running, 2 done: join; protected by mu */
	struct win *ahead_w; /* the window the helper fills, protected by mu */
	pthread_t ahead_thr;
};

static atomic_uint_fast64_t n_gets, n_bytes, n_hits, n_stale, n_held_max, n_held;

void s3src_get_counters(struct s3src_counters *out)
{
	out->gets = atomic_load(&n_gets);
	out->bytes = atomic_load(&n_bytes);
	out->hits = atomic_load(&n_hits);
	out->stale = atomic_load(&n_stale);
	out->held_max = atomic_load(&n_held_max);
	out->held = atomic_load(&n_held);
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* -- windows (all with mu held) ------------------------------------------- */

static struct win *win_find(struct s3src *s, uint64_t off)
{
	for (int i = 0; i < NWIN; i++) {
		struct win *w = &s->w[i];

		if (w->state != W_EMPTY && off >= w->off && off - w->off < w->len)
			return w;
	}
	return NULL;
}

/* The start of the first window held after off, or end. */
static uint64_t win_next(const struct s3src *s, uint64_t off, uint64_t end)
{
	for (int i = 0; i < NWIN; i++)
		if (s->w[i].state != W_EMPTY && s->w[i].off > off && s->w[i].off < end)
			end = s->w[i].off;
	return end;
}

static void win_drop(struct s3src *s, struct win *w)
{
	s->held -= w->cap;
	atomic_fetch_sub(&n_held, w->cap);
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = w->hi = 0;
	w->state = W_EMPTY;
	w->seq = false;
}

/*
 * How much w is still wanted: 0 empty, 1 read through (a sequential reader
 * has left it, a unit's decoder is done with it), 2 fetched and not read
 * through yet, 3 being fetched.  Freeing a window someone is still reading,
 * or one fetched ahead for a reader on its way, has its bytes fetched again.
 */
static int win_want(const struct win *w)
{
	if (w->state == W_EMPTY)
		return 0;
	if (w->state == W_FILLING)
		return 3;
	return w->hi >= w->len ? 1 : 2;
}

/*
 * The window to free first (mu held): an empty one if slot (a slot is
 * wanted, not bytes), else the least recently used of the least wanted
 * (win_want) that is not being fetched; a fetch ahead frees only windows
 * read through.  NULL if none may go.
 */
static struct win *win_victim(struct s3src *s, bool ahead, bool slot)
{
	struct win *v = NULL;

	for (int i = 0; i < NWIN; i++) {
		struct win *x = &s->w[i];
		int k = win_want(x);

		if (k == 3 || (k == 0 && !slot) || (ahead && k == 2))
			continue;
		if (!v || k < win_want(v) || (k == win_want(v) && x->used < v->used))
			v = x;
	}
	return v;
}

/*
 * Claims a window for [off, off + len), len shrunk to fit budget (at most
 * WIN_BUDGET) but never below need: frees idle windows to make room, in the
 * order of win_victim.  Returns it W_FILLING with its buffer, or NULL (all
 * busy, no room, no memory).
 */
static struct win *win_claim(struct s3src *s, uint64_t off, size_t len, size_t need, bool ahead,
			     size_t budget)
{
	struct win *w = win_victim(s, ahead, true), *v;

	if (!w)
		return NULL;
	win_drop(s, w);
	while (s->held + len > budget && (v = win_victim(s, ahead, false)))
		win_drop(s, v);
	if (s->held + len > budget)
		len = s->held < budget ? budget - s->held : 0;
	if (len < need || len == 0 || !(w->buf = malloc(len)))
		return NULL;
	w->off = off;
	w->len = w->cap = len;
	w->state = W_FILLING;
	w->used = ++s->tick;
	s->held += len;
	atomic_fetch_add(&n_held, len);
	for (uint_fast64_t m = atomic_load(&n_held_max);
	     s->held > m && !atomic_compare_exchange_weak(&n_held_max, &m, s->held);)
		;
	return w;
}

/* -- fetching ------------------------------------------------------------- */

/* One GET of [off, off + len) into buf; counts it. */
static ssize_t fetch(struct s3src *s, void *buf, size_t len, uint64_t off)
{
	ssize_t n = s3_get_range(s->s3, s->key, s->etag, off, len, buf);

	if (n > 0) {
		atomic_fetch_add(&n_gets, 1);
		atomic_fetch_add(&n_bytes, (uint64_t)n);
	}
	return n;
}

/* Publishes the outcome of filling w (mu held): ready with n bytes, or gone. */
static void win_filled(struct s3src *s, struct win *w, ssize_t n)
{
	if (n == -ESTALE)
		s->stale = true;
	if (n <= 0) {
		win_drop(s, w);
	} else {
		/* Shorter only if the object ends first: keep what came. */
		w->len = (size_t)n;
		w->state = W_READY;
	}
	pthread_cond_broadcast(&s->filled);
}

/*
 * Claims the window to fetch ahead at off, up to len bytes and at least
 * WIN_MIN of them (or all of a shorter extent), if nobody holds off and the
 * budget has room besides the windows not read through (mu held); through a
 * hinted extent (hinted), leaving HINT_ROOM of it for the units the
 * reader's workers start before the fetch ahead gets there.  Returns it, or
 * NULL.
 */
static struct win *ahead_claim(struct s3src *s, uint64_t off, uint64_t len, bool hinted)
{
	if (s->stale || s->closing || off >= s->size || win_find(s, off))
		return NULL;
	if (len > s->size - off)
		len = s->size - off;
	if (len > WIN_MAX)
		len = WIN_MAX;
	len = win_next(s, off, off + len) - off;
	return win_claim(s, off, (size_t)len, len < WIN_MIN ? (size_t)len : WIN_MIN, true,
			 hinted ? WIN_BUDGET - HINT_ROOM : WIN_BUDGET);
}

/* The helper: fetches its window, then on through the hinted extent while the budget lets it. */
static void *ahead_run(void *arg)
{
	struct s3src *s = arg;
	struct win *w;
	ssize_t n;

	pthread_mutex_lock(&s->mu);
	for (w = s->ahead_w; w;) {
		pthread_mutex_unlock(&s->mu);
		n = fetch(s, w->buf, w->len, w->off);
		pthread_mutex_lock(&s->mu);
		win_filled(s, w, n);
		if (n <= 0)
			break;
		uint64_t end = w->off + (uint64_t)n;

		w = !s->closing && end < s->ahead_to ? ahead_claim(s, end, s->ahead_to - end, true)
						     : NULL;
	}
	s->ahead = 2;
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/*
 * Starts fetching [off, off + len) in the background, and on up to to,
 * unless a fetch ahead runs already (mu held).  Returns whether it started.
 */
static bool ahead_start(struct s3src *s, uint64_t off, size_t len, uint64_t to, bool seq)
{
	struct win *w;

	if (s->ahead == 1)
		return false;
	if (s->ahead == 2) {
		pthread_join(s->ahead_thr, NULL); /* it has finished: no wait */
		s->ahead = 0;
	}
	if (!(w = ahead_claim(s, off, len, to > 0)))
		return false;
	w->seq = seq;
	s->ahead_w = w;
	s->ahead_to = to;
	if (pthread_create(&s->ahead_thr, NULL, ahead_run, s)) {
		win_drop(s, w);
		return false;
	}
	s->ahead = 1;
	return true;
}

/*
 * Notes a read of [off, off + n) from window w (mu held): one past the
 * middle of a window of a sequential run, of AHEAD_FROM bytes or more,
 * starts fetching the next window of the run.  Not smaller windows: one
 * block read after a jump would fetch twice its bytes.  The window, not
 * the read, says "sequential": the reader's threads may read interleaved.
 */
static void note_read(struct s3src *s, struct win *w, uint64_t off, size_t n)
{
	uint64_t end;

	s->last_off = off;
	s->seq_end = off + n;
	if (!w)
		return;
	w->used = ++s->tick;
	end = w->off + w->len;
	if (w->seq && w->len >= AHEAD_FROM && off + n > w->off + w->len / 2 && end < s->size &&
	    !win_find(s, end)) {
		size_t next = w->len < WIN_MAX ? 2 * w->len : WIN_MAX;

		if (ahead_start(s, end, next, 0, true))
			s->seq_w = next;
	}
}

/*
 * Where the most recent hint that holds off ends, or 0 (mu held).  The
 * reader's workers each hint the unit they decode, at once: a read in one
 * unit must find its own hint, not only the last one any thread gave.
 */
static uint64_t hint_of(const struct s3src *s, uint64_t off)
{
	for (unsigned i = 0; i < NHINT && i < s->nhint; i++) {
		unsigned k = (s->nhint - 1 - i) % NHINT;

		if (off >= s->hints[k].off && off < s->hints[k].end)
			return s->hints[k].end;
	}
	return 0;
}

/*
 * A read at off, the first in one or more hinted extents (mu held): the
 * extents are read, so fetch the rest of the furthest reaching one in the
 * background, from from (the read's end: where what it fetches ends) or
 * past the windows held there.  A hint stays armed while another fetch
 * ahead runs, for the next read in it to start.
 */
static void hint_fire(struct s3src *s, uint64_t off, uint64_t from)
{
	uint64_t to = 0;
	struct win *w;

	for (unsigned i = 0; i < NHINT && i < s->nhint; i++)
		if (s->hints[i].armed && off >= s->hints[i].off && off < s->hints[i].end &&
		    s->hints[i].end > to)
			to = s->hints[i].end;
	if (!to)
		return;
	while ((w = win_find(s, from)) && from < to)
		from = w->off + w->len;
	if (from < to &&
	    !ahead_start(s, from, to - from < WIN_MAX ? (size_t)(to - from) : WIN_MAX, to, false))
		return;
	for (unsigned i = 0; i < NHINT && i < s->nhint; i++)
		if (s->hints[i].armed && off >= s->hints[i].off && off < s->hints[i].end)
			s->hints[i].armed = false;
}

/*
 * The window [start, *end) to fetch for a read of [off, off + len) that
 * missed every window (mu held); returns start.
 */
static uint64_t plan(struct s3src *s, uint64_t off, size_t len, uint64_t *end, bool *seq)
{
	size_t w = WIN_MIN, grown = s->seq_w < WIN_MAX ? 2 * s->seq_w : WIN_MAX;
	uint64_t start = off, hend = hint_of(s, off);

	*seq = false;
	if (off == 0 && !s->seq_w) {
		/*
		 * The first read of the head: the format's sniff.  An xz Index
		 * is at the end and a gzip or zstd reader goes on from here in
		 * a run that grows from WIN_MIN, so fetch just the head.
		 */
		w = WIN_HEAD;
	} else if (hend) {
		w = hend - off < WIN_MAX ? (size_t)(hend - off) : WIN_MAX;

	} else if (s->seq_w && off >= s->seq_end && off - s->seq_end <= 2 * (uint64_t)s->seq_w) {
		/* In order, or a short step forward (a walk over zstd block headers). */
		w = grown > WIN_MIN ? grown : WIN_MIN;
		*seq = true;
	} else if (s->seq_w && off + len <= s->last_off && s->last_off - (off + len) < WIN_MIN) {
		/* Backwards, just before the last read: a window that ends there. */
		w = grown;
		start = s->last_off > w ? s->last_off - w : 0;
		if (start > off)
			start = off;
		s->seq_w = w;
		*end = s->last_off;
		return start;
	}
	if (w < len && len < WIN_MAX)
		w = len;
	s->seq_w = w;
	*end = off + w;
	return start;
}

/* Copies what window w holds of [off, off + len) (mu held); returns the count. */
static size_t win_copy(struct s3src *s, struct win *w, void *buf, size_t len, uint64_t off)
{
	size_t n = w->off + w->len - off;

	if (n > len)
		n = len;
	memcpy(buf, w->buf + (off - w->off), n);
	if (off - w->off + n > w->hi)
		w->hi = (size_t)(off - w->off) + n;
	note_read(s, w, off, n);
	return n;
}

static ssize_t src_pread(struct zsrc *z, void *buf, size_t len, uint64_t off)
{
	struct s3src *s = (struct s3src *)z;
	struct win *w = NULL;
	uint64_t start, end;
	bool seq;
	ssize_t n;

	if (off > INT64_MAX)
		return -EINVAL;
	if (off >= s->size || len == 0)
		return 0;
	if (len > s->size - off)
		len = (size_t)(s->size - off);
	pthread_mutex_lock(&s->mu);
	while (!s->stale && (w = win_find(s, off)) && w->state == W_FILLING)
		pthread_cond_wait(&s->filled, &s->mu);
	if (s->stale) {
		pthread_mutex_unlock(&s->mu);
		atomic_fetch_add(&n_stale, 1);
		return -ESTALE;
	}
	if (w) {
		n = (ssize_t)win_copy(s, w, buf, len, off);
		hint_fire(s, off, off);
		pthread_mutex_unlock(&s->mu);
		atomic_fetch_add(&n_hits, 1);
		return n;
	}
	start = plan(s, off, len, &end, &seq);
	end = win_next(s, off, end < s->size ? end : s->size);
	w = end - start > len ? win_claim(s, start, (size_t)(end - start), off + len - start, false,
					  WIN_BUDGET)
			      : NULL;
	if (w)
		w->seq = seq;
	hint_fire(s, off, off + len); /* after the claim: the fetch ahead starts where w ends */
	if (!w) {
		/* Straight into the caller's buffer: a long read, or no window free. */
		pthread_mutex_unlock(&s->mu);
		n = fetch(s, buf, len, off);
		pthread_mutex_lock(&s->mu);
		if (n == -ESTALE)
			s->stale = true;
		else if (n > 0)
			note_read(s, NULL, off, (size_t)n);
	} else {
		pthread_mutex_unlock(&s->mu);
		n = fetch(s, w->buf, w->len, w->off);
		pthread_mutex_lock(&s->mu);
		win_filled(s, w, n);
		if (n > 0)
			n = (ssize_t)win_copy(s, w, buf, len, off);
	}
	pthread_mutex_unlock(&s->mu);
	if (n == -ESTALE)
		atomic_fetch_add(&n_stale, 1);
	return n;
}

static void src_hint(struct zsrc *z, uint64_t off, uint64_t len)
{
	struct s3src *s = (struct s3src *)z;
	unsigned k;

	if (off >= s->size || len == 0)
		return;
	pthread_mutex_lock(&s->mu);
	k = s->nhint++ % NHINT;
	s->hints[k].off = off;
	s->hints[k].end = len > s->size - off ? s->size : off + len;
	s->hints[k].armed = true; /* fetched from its first read on (hint_fire) */
	pthread_mutex_unlock(&s->mu);
}

static int src_stat(struct zsrc *z, struct stat *st)
{
	*st = ((struct s3src *)z)->st;
	return 0;
}

static void src_tag(struct zsrc *z, char buf[ZSRC_TAG_MAX])
{
	_Static_assert(sizeof(((struct s3src *)0)->etag) <= ZSRC_TAG_MAX,
		       "ETags longer than a tag");
	strcpy(buf, ((struct s3src *)z)->etag);
}

static void src_free(struct zsrc *z)
{
	struct s3src *s = (struct s3src *)z;
	int ahead;

	/* No other reference is left: no new fetch ahead starts, and the helper stops. */
	pthread_mutex_lock(&s->mu);
	s->closing = true;
	ahead = s->ahead; /* read under mu: the helper sets it as it ends */
	pthread_mutex_unlock(&s->mu);
	if (ahead)
		pthread_join(s->ahead_thr, NULL);
	for (int i = 0; i < NWIN; i++)
		free(s->w[i].buf);
	atomic_fetch_sub(&n_held, s->held);
	pthread_cond_destroy(&s->filled);
	pthread_mutex_destroy(&s->mu);
	free(s->key);
	free(s);
}

static const struct zsrc_ops s3src_ops = {
	.pread = src_pread,
	.stat = src_stat,
	.tag = src_tag,
	.hint = src_hint,
	.free = src_free,
	.pinned = true,
	.remote = true,
};

int s3src_open(struct s3 *s3, dev_t dev, const char *key, const struct s3_stat *os,
	       struct zsrc **out)
{
	struct s3src *s;

	*out = NULL;
	if (!key || !*key || !os->etag[0])
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->key = strdup(key))) {
		free(s);
		return -ENOMEM;
	}
	zsrc_init(&s->z, &s3src_ops);
	s->s3 = s3;
	memcpy(s->etag, os->etag, sizeof(s->etag));
	s->etag[sizeof(s->etag) - 1] = '\0';
	s->size = os->size;
	s3src_version(dev, key, os, &s->st);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->filled, NULL);
	*out = &s->z;
	return 0;
}

/* -- identity ------------------------------------------------------------- */

dev_t s3src_dev(const char *endpoint, const char *bucket)
{
	uint64_t h = fnv(fnv(0xcbf29ce484222325ull, endpoint), "\n");

	/* The top bit set: never the number of a local device. */
	return (dev_t)(fnv(h, bucket) | 1ull << 63);
}

void s3src_version(dev_t dev, const char *key, const struct s3_stat *os, struct stat *st)
{
	uint64_t ino = fnv(0xcbf29ce484222325ull, key);

	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFREG | 0444;
	st->st_dev = dev;
	st->st_ino = ino ? ino : 1;
	st->st_nlink = 1;
	st->st_size = (off_t)os->size;
	st->st_blksize = 64 << 10;
	st->st_blocks = (blkcnt_t)((os->size + 511) / 512);
	st->st_mtim.tv_sec = os->mtime;
	st->st_ctim.tv_sec = os->mtime;
}

/* -- URLs and clients ----------------------------------------------------- */

/* S3's rules: 3 to 63 of a-z 0-9 . -, starting and ending with a letter or digit. */
static bool bucket_ok(const char *b, size_t n)
{
	if (n < 3 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = b[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && ((c != '.' && c != '-') || i == 0 || i == n - 1))
			return false;
	}
	return true;
}

int s3src_url(const char *url, char *bucket, size_t blen, char *prefix, size_t plen)
{
	const char *b, *slash;
	size_t n;

	if (strncmp(url, "s3://", 5))
		return 0;
	b = url + 5;
	slash = strchr(b, '/');
	n = slash ? (size_t)(slash - b) : strlen(b);
	if (!bucket_ok(b, n) || n >= blen)
		return -EINVAL;
	memcpy(bucket, b, n);
	bucket[n] = '\0';
	b = slash ? slash + 1 : "";
	if (strlen(b) >= plen)
		return -EINVAL;
	strcpy(prefix, b);
	return 1;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static const char *conf_region(const struct s3src_conf *conf)
{
	const char *r = conf && conf->region && *conf->region ? conf->region : NULL;

	if (!r)
		r = env("AWS_REGION");
	if (!r)
		r = env("AWS_DEFAULT_REGION");
	return r ? r : "us-east-1";
}

int s3src_endpoint(const struct s3src_conf *conf, char *buf, size_t n)
{
	const char *e = conf && conf->endpoint && *conf->endpoint ? conf->endpoint : NULL;
	int len;

	if (!e)
		e = env("AWS_ENDPOINT_URL_S3");
	if (!e)
		e = env("AWS_ENDPOINT_URL");
	if (e)
		len = snprintf(buf, n, "%s", e);
	else
		len = snprintf(buf, n, "https://s3.%s.amazonaws.com", conf_region(conf));
	if (len < 0 || (size_t)len >= n)
		return -EINVAL;
	while (len > 0 && buf[len - 1] == '/')
		buf[--len] = '\0';
	return 0;
}

int s3src_connect(const char *bucket, const struct s3src_conf *conf, struct s3 **out, char *msg,
		  size_t msglen)
{
	char ep[512], err[256];
	struct s3cred *cred;
	struct s3_opts o;
	int rc;

	*out = NULL;
	if (s3src_endpoint(conf, ep, sizeof(ep))) {
		snprintf(msg, msglen, "s3: the endpoint URL is too long");
		return -EINVAL;
	}
	rc = s3cred_load(conf ? conf->credentials : NULL, conf ? conf->profile : NULL, &cred, err,
			 sizeof(err));
	if (rc) {
		snprintf(msg, msglen, "s3: no credentials: %s", err);
		return rc;
	}
	s3_opts_default(&o);
	if (conf && conf->retries >= 0)
		o.retries = conf->retries;
	if (conf && conf->timeout_ms > 0)
		o.timeout_ms = conf->timeout_ms;
	if (conf) {
		o.log = conf->log;
		o.log_arg = conf->log_arg;
	}
	rc = s3_open(ep, conf_region(conf), bucket, cred, &o, out);
	s3cred_free(cred);
	if (rc == -EINVAL)
		snprintf(msg, msglen,
			 "s3: bad endpoint, region or bucket (the endpoint must be "
			 "http://HOST[:PORT] or https://HOST[:PORT])");
	else if (rc == -ELIBACC)
		snprintf(msg, msglen, "s3: cannot load %s (Debian: apt-get install libcurl4)",
			 S3_LIBCURL);
	else if (rc)
		snprintf(msg, msglen, "s3: %s", strerror(-rc));
	return rc;
}
