/* SPDX-License-Identifier: MIT */
/*
 * How it works: the block map (cmap) has one entry per xz Block, zstd frame
 * or gzip checkpoint span.  A read walks the entries it touches; for each it
 * forms the cache unit holding the wanted byte (the whole entry, or one
 * slice of an entry wider than whole_max), keyed in the shared cache by the
 * unit's uncompressed start offset, and fills it on a miss:
 *  - an entry up to whole_max: one decoder from the entry's start, run to
 *    its end, its integrity check (xz Check, zstd checksum) included;
 *  - a wider entry (a large xz Block or zstd frame, a gzip span of one huge
 *    deflate block): the parked decoder (struct udec) if it stopped at or
 *    before the slice, else a new one from the entry's start; the slices it
 *    passes on the way are offered to the cache, so a skip forward is not
 *    wasted.
 * What the formats differ in is behind struct fmt (fmt.h, fmt_*.c).
 * Sequential readers also get the units after theirs queued on the worker
 * pool (read_ahead), so several decode at once.
 *
 * Memory: chunks and parked decoders are charged to the cache (bcache.h);
 * a reader holds its map (a documented cost per entry, see fmt_*.c) and,
 * only while it has a descriptor, a parked decoder.
 */
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bcache.h"
#include "cmap.h"
#include "fmt.h"
#include "idxfile.h"
#include "pool.h"
#include "reader_int.h"
#include "srcid.h"
#include "zlog.h"

/* Reads arrive out of order from the kernel's parallel read-ahead: this close counts as "next". */
#define SEQ_SLACK (1u << 20)
/*
 * Misses in a streamed unit are decoded in the order of the reads that
 * want them, within this distance (wait_for_turn): the kernel sends its
 * read-ahead requests to several threads at once, and the one for a later
 * slice may come first.  A read waits for the earlier ones up to
 * TURN_STALL_MS without anything moving; with none, but the decoder a
 * little behind, TURN_GRACE_MS once, for one that the kernel sent but that
 * has not reached us yet, if the read continues a sequential stream
 * (near_stream): a random reader skipping forward does not wait.
 */
#define TURN_SPAN     (8u << 20)
/*
 * Read-ahead looks at most this many units past a read (ahead_end), so a
 * read costs what the units it touches do: in a file of a million one-byte
 * Blocks, a walk to opts.readahead bytes on is the rest of the file, and
 * once per read made reading it quadratic (issue 18).  Units that small
 * gain nothing from workers; 1024 units of 32 KiB still fill 32 MiB.
 */
#define AHEAD_UNITS_MAX 1024u
/* A sequential stream gives up a unit it has read through once it reads this far past it. */
#define DONE_LAG      TURN_SPAN
#define TURN_GRACE_MS 20
#define TURN_STALL_MS 500
/*
 * Parked decoders of every reader on a context (zmctx_int.h), most
 * recently parked first.  A parked decoder is charged to its reader's
 * cache, and the list holds at most PARKED_SHARE of that cache's budget
 * (always at least one decoder, so a sequential reader of a huge Block
 * never decodes it twice): parking one more closes as many of the oldest
 * others as that takes.  A detached reader parks nothing, so a decoder
 * never outlives the descriptor it was reading.
 */
#define PARKED_SHARE 2 /* 1/2 of the budget */

/* Bytes fill_slice decodes at a time through its scratch buffer: a checkpoint piece. */
#define SKIP_BUF CKPT_PIECE

/*
 * A whole unit at least this large has its fresh pages faulted in by an
 * idle worker while the decoder fills it from the start (see prefault).
 */
#define PREFAULT_MIN (4u << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels refuse it with EINVAL */
#endif

/* The backends, by the format the magic bytes say. */
static const struct fmt *const fmts[] = {
	[PROBE_XZ] = &fmt_xz,
	[PROBE_GZIP] = &fmt_gzip,
	[PROBE_ZSTD] = &fmt_zstd,
};

static const struct fmt *fmt_of(enum probe_fmt id)
{
	return (size_t)id < sizeof(fmts) / sizeof(fmts[0]) ? fmts[id] : NULL;
}

void reader_get_counters(struct zmctx *c, struct reader_counters *out)
{
	out->decoded_bytes = atomic_load(&c->stats.decoded);
	out->readahead_bytes = atomic_load(&c->stats.ahead);
	out->prefault_bytes = atomic_load(&c->stats.prefault);
	out->xz_indexes = atomic_load(&c->stats.xz);
	out->indexes_built = atomic_load(&c->stats.built);
	out->indexes_loaded = atomic_load(&c->stats.loaded);
	out->read_errors = atomic_load(&c->stats.errors);
	out->index_errors = atomic_load(&c->stats.ixerr);
	out->served_bytes = atomic_load(&c->stats.served);
	out->checkpoints = atomic_load(&c->stats.ckpts);
}

void reader_note_error(struct zmctx *c)
{
	atomic_fetch_add(&c->stats.errors, 1);
}

void reader_log(const struct reader *r, enum zlog_level level, const struct zerr *why,
		const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	zmctx_vlog(r->ctx, level, r->name, why, fmt, ap);
	va_end(ap);
}

int reader_last_error(const struct reader *r, struct zerr *why)
{
	int ret;

	pthread_mutex_lock((pthread_mutex_t *)&r->lock);
	ret = r->changed ? -ESTALE : r->failed ? -EIO : 0;
	if (why && r->changed)
		zerr_set(why, ret, 0, "source changed since it was opened");
	else if (why && r->failed)
		*why = r->first_err;
	else if (why)
		zerr_set(why, 0, 0, "%s", "");
	pthread_mutex_unlock((pthread_mutex_t *)&r->lock);
	return ret;
}

void reader_opts_default(struct reader_opts *o, size_t cache_size)
{
	o->span = 1u << 20;
	o->ck_span = 16u << 20;
	o->whole_max = cache_size / 2;
	/*
	 * Small caches still hold a few slices, so one reader never evicts its
	 * own: at least three of them in half the budget, which is all slices
	 * get beside a parked decoder larger than the cache (bcache_charge).
	 * A kernel request is rarely slice-aligned, so two share a slice, and
	 * filling the next must not evict the one the earlier is still in.
	 */
	o->slice = cache_size / 8;
	if (o->slice > (2u << 20))
		o->slice = 2u << 20;
	if (o->slice < (64u << 10))
		o->slice = 64u << 10;
	if (o->whole_max < o->slice)
		o->whole_max = o->slice;
	o->index_max = cache_size / 4;
	o->warn_wide = false;
	o->salvage = false;
	o->index_dir = NULL;
	o->warm_bytes = 0;
	o->tainted = NULL;
	o->tainted_ctx = NULL;
	o->still_named = NULL;
	o->still_named_ctx = NULL;
	o->readahead = cache_size / 8;
	if (o->readahead > (32u << 20))
		o->readahead = 32u << 20;
}

int reader_map_init(struct reader *r, size_t n)
{
	if (cmap_init(&r->map, n) < 0)
		return -ENOMEM;
	r->entry = calloc(n + 1, sizeof(*r->entry));
	return r->entry ? 0 : -ENOMEM;
}

int reader_open(const char *path, struct zmctx *ctx, const struct reader_opts *opts,
		struct reader **out, struct zerr *why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char real[PATH_MAX];

	if (fd < 0) {
		struct zerr e = { 0 };
		int ret = -errno;

		*out = NULL;
		zerr_set(&e, ret, 0, "cannot open: %s", strerror(-ret));
		zmctx_log(ctx, ZLOG_ERROR, path, &e, "%s", e.msg);
		if (why)
			*why = e;
		return ret;
	}
	return reader_open_fd(fd, realpath(path, real) ? real : path, ctx, opts, out, why);
}

/*
 * A unit wider than whole_max is streamed: reading inside it at random
 * decodes from its start.  Say so once per open, with what to change.
 */
static void warn_wide_units(const struct reader *r)
{
	uint64_t widest = 0;

	/* One that may get checkpoints reads fast at random once they are built. */
	for (size_t k = 0; k < r->map.n; k++)
		if (cmap_len(&r->map, k) > widest && !(r->ckable && r->ckable[k]))
			widest = cmap_len(&r->map, k);
	if (!r->opts.warn_wide || widest <= r->opts.whole_max)
		return;
	reader_log(r, ZLOG_WARN, NULL,
	     "a %s of %" PRIu64 " KiB is more than cache_size/2 (%zu KiB): random reads "
	     "inside it decode from its start; for fast random access set cache_size=%" PRIu64
	     "M or more%s",
	     r->f->unit, widest >> 10, r->opts.whole_max >> 10, (2 * widest >> 20) + 1,
	     r->f == &fmt_xz ? ", or recompress with xz --block-size=16MiB" : "");
}

/* Records the hash check_unchanged compares with, if nothing changed the file while it was taken. */
static void sample_take(struct reader *r)
{
	struct idxfile_id id;
	struct stat after;

	/* ctime may move meanwhile (a chmod); a write would move mtime too */
	r->sampled = idxfile_identify(r->fd, &id) == 0 && fstat(r->fd, &after) == 0 &&
		     srcid_same_but_ctime(&after, &r->st);
	r->sample = r->sampled ? id.fingerprint : 0;
	r->st_ok = r->st;
	r->named_ok = true;
}

int reader_open_fd(int fd, const char *name, struct zmctx *ctx,
		   const struct reader_opts *opts, struct reader **out, struct zerr *why)
{
	struct reader *r = calloc(1, sizeof(*r));
	struct zerr e = { 0 };
	int ret;

	*out = NULL;
	if (!r) {
		close(fd);
		return zerr_set(why, -ENOMEM, 0, "out of memory");
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->idle, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&r->moved, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_init(&r->stream, NULL);
	r->fd = fd;
	r->ctx = ctx;
	r->cache = ctx->cache;
	r->opts = *opts;
	r->id = atomic_fetch_add(&ctx->next_id, 1);
	r->name = strdup(name);
	if (!r->name) {
		ret = -ENOMEM;
		goto fail;
	}
	if (fstat(r->fd, &r->st) < 0) {
		ret = zerr_set(&e, -errno, 0, "cannot stat: %s", strerror(errno));
		goto fail;
	}
	sample_take(r);
	ret = probe_fd(r->fd, &r->fmt);
	if (ret < 0) {
		zerr_set(&e, ret, 0, "cannot read: %s", strerror(-ret));
		goto fail;
	}
	r->f = fmt_of(r->fmt);
	if (r->f)
		ret = r->f->open(r, &e);
	else
		ret = zerr_set(&e, -ENOTSUP, 0, "not an xz, gzip or zstd file");
	if (ret < 0)
		goto fail;
	r->bad = calloc(r->map.n + 1, 1);
	if (!r->bad) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = reader_ck_init(r);
	if (ret < 0)
		goto fail;
	warn_wide_units(r);
	*out = r;
	return 0;
fail:
	if (ret == -ENOMEM && !e.msg[0])
		zerr_set(&e, ret, 0, "out of memory");
	if (ret == -EINVAL)
		atomic_fetch_add(&ctx->stats.ixerr, 1); /* a corrupt archive: no read yet */
	if (ret != -ENOTSUP) /* not an archive (or one shown raw): said by probe, if at all */
		zmctx_log(ctx, ZLOG_ERROR, name, &e, "%s", e.msg);
	if (why)
		*why = e;
	reader_close(r);
	return ret;
}

/*
 * A decoder inside one map entry, whatever the format: what a streamed unit
 * is read with, and what is parked between reads.  The fd is the reader's
 * at each call, never kept.
 */
struct udec {
	const struct fmt *f;
	void *d;
	struct ckpt_dec *ck; /* instead of d: resumed at a checkpoint, its output verified */
	/* While park() closes it: the next one to close, and whose cache it was charged to. */
	struct udec *vnext;
	struct bcache *vcache;
	size_t vcost;
};

static void udec_close(struct udec *d)
{
	if (!d)
		return;
	if (d->ck)
		ckpt_dec_close(d->ck);
	else
		d->f->dec_close(d->d);
	free(d);
}

/* A decoder at the start of map entry k.  Returns 0 and *out, or a negative errno (err set). */
static int udec_open(struct reader *r, size_t k, struct udec **out, struct zerr *err)
{
	struct udec *d = calloc(1, sizeof(*d));
	int ret;

	*out = NULL;
	if (!d)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	d->f = r->f;
	ret = r->f->dec_open(r, k, &d->d, err);
	if (ret < 0) {
		free(d);
		return ret;
	}
	*out = d;
	return 0;
}

static ssize_t udec_read(struct reader *r, struct udec *d, void *buf, size_t len,
			 struct zerr *err)
{
	if (d->ck)
		return ckpt_dec_read(d->ck, r->fd, buf, len, err);
	return d->f->dec_read(d->d, r->fd, buf, len, err);
}

/* Bytes returned since the start of its map entry. */
static uint64_t udec_tell(const struct udec *d)
{
	return d->ck ? ckpt_dec_tell(d->ck) : d->f->dec_tell(d->d);
}

static size_t udec_cost(const struct udec *d)
{
	return sizeof(*d) + (d->ck ? ckpt_dec_cost(d->ck) : d->f->dec_cost(d->d));
}

/* A decoder resumed at point i of entry k's set s.  0 and *out, or a negative errno (err set). */
static int udec_resume(struct reader *r, size_t k, const struct ckpt_set *s, size_t i,
		       struct udec **out, struct zerr *err)
{
	const struct ckpt_point *p = &s->pt[i];
	struct udec *d = calloc(1, sizeof(*d));
	void *inner;
	int ret;

	*out = NULL;
	if (!d)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	d->f = r->f;
	ret = r->f->ck->open(r, k, p->blob_len ? s->blob + p->blob_off : NULL, p->blob_len, &inner,
			     err);
	if (ret == 0 && (ret = ckpt_dec_new(s, i, inner, &r->f->ck->ops, &d->ck)) < 0)
		zerr_set(err, ret, 0, "out of memory");
	if (ret < 0) {
		free(d);
		return ret;
	}
	atomic_fetch_add(&r->resumes, 1);
	*out = d;
	return 0;
}

/* With r->ctx->parked_lock held: takes r's parked decoder off the list; returns it. */
static struct udec *unpark_locked(struct reader *r)
{
	struct udec *d = r->parked;

	if (!d)
		return NULL;
	if (r->pprev)
		r->pprev->pnext = r->pnext;
	else
		r->ctx->parked_head = r->pnext;
	if (r->pnext)
		r->pnext->pprev = r->pprev;
	else
		r->ctx->parked_tail = r->pprev;
	r->pprev = r->pnext = NULL;
	r->parked = NULL;
	r->ctx->parked_total -= r->parked_cost;
	return d;
}

/* Takes r's parked decoder if it is in map entry k (any entry if k is SIZE_MAX); else NULL. */
static struct udec *unpark(struct reader *r, size_t k)
{
	struct udec *d = NULL;
	size_t cost = 0;

	pthread_mutex_lock(&r->ctx->parked_lock);
	if (r->parked && (k == SIZE_MAX || r->parked_k == k)) {
		cost = r->parked_cost;
		d = unpark_locked(r);
	}
	pthread_mutex_unlock(&r->ctx->parked_lock);
	if (d)
		bcache_uncharge(r->cache, cost);
	return d;
}

/* With r->ctx->parked_lock held: unparks r's decoder onto the list of those to close. */
static struct udec *unpark_victim(struct reader *r, struct udec *victims)
{
	size_t cost = r->parked_cost;
	struct udec *d = unpark_locked(r);

	d->vnext = victims;
	d->vcache = r->cache;
	d->vcost = cost;
	return d;
}

/*
 * Parks d (stopped in map entry k) for r's next sequential read, charging
 * it to the cache; closes any decoder r had parked before, and the
 * decoders of other readers that no longer fit the parked share, oldest
 * first, as many as it takes (one step each: the oldest is the list's
 * tail).  Closing happens after the lock is let go.
 */
static void park(struct reader *r, struct udec *d, size_t k)
{
	size_t cost = udec_cost(d), share = bcache_budget(r->cache) / PARKED_SHARE;
	struct udec *victims = NULL;

	pthread_mutex_lock(&r->ctx->parked_lock);
	if (r->parked)
		victims = unpark_victim(r, victims);
	while (r->ctx->parked_tail && r->ctx->parked_total + cost > share)
		victims = unpark_victim(r->ctx->parked_tail, victims);
	r->parked = d;
	r->parked_k = k;
	r->parked_cost = cost;
	r->pnext = r->ctx->parked_head;
	r->pprev = NULL;
	if (r->ctx->parked_head)
		r->ctx->parked_head->pprev = r;
	r->ctx->parked_head = r;
	if (!r->ctx->parked_tail)
		r->ctx->parked_tail = r;
	r->ctx->parked_total += cost;
	pthread_mutex_unlock(&r->ctx->parked_lock);
	while (victims) {
		struct udec *v = victims;
		struct bcache *cache = v->vcache;
		size_t vcost = v->vcost;

		victims = v->vnext;
		udec_close(v);
		bcache_uncharge(cache, vcost);
	}
	bcache_charge(r->cache, cost);
}

static void drain(struct reader *r)
{
	pthread_mutex_lock(&r->lock);
	while (r->jobs > 0)
		pthread_cond_wait(&r->idle, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

void reader_close(struct reader *r)
{
	if (!r)
		return;
	drain(r);
	reader_ck_stop(r);
	if (r->cache)
		bcache_drop(r->cache, r->id);
	udec_close(unpark(r, SIZE_MAX));
	reader_ck_free(r);
	if (r->f)
		r->f->free(r->idx);
	cmap_free(&r->map);
	free(r->entry);
	free(r->bad);
	if (r->fd >= 0)
		close(r->fd);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->idle);
	pthread_cond_destroy(&r->moved);
	pthread_mutex_destroy(&r->stream);
	free(r->name);
	free(r);
}

void reader_detach(struct reader *r)
{
	drain(r);
	/* Nobody reads it now: its decoder's memory goes back to the cache. */
	udec_close(unpark(r, SIZE_MAX));
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

int reader_attach(struct reader *r, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || !reader_matches(r, &st)) {
		close(fd);
		return -ESTALE;
	}
	if (r->fd >= 0)
		close(r->fd);
	r->fd = fd;
	return 0;
}

enum probe_fmt reader_probe(int fd, const char *name, const struct reader_opts *opts)
{
	enum probe_fmt fmt;
	const struct fmt *f;
	struct zerr err = { 0 };
	struct stat st;

	if (probe_fd(fd, &fmt) < 0 || !(f = fmt_of(fmt)))
		return PROBE_NONE;
	if (!f->probe)
		return fmt;
	if (fstat(fd, &st) == 0 &&
	    f->probe(fd, (uint64_t)st.st_size, opts ? opts->index_max : SIZE_MAX, &err) == 0)
		return fmt;
	if (name)
		zlog(ZLOG_WARN, "%s: not readable as %s (at offset %" PRIu64 "): %s; shown as it is",
		     name, f->name, err.coff, err.msg[0] ? err.msg : "cannot stat");
	return PROBE_NONE;
}

const char *reader_name(const struct reader *r)
{
	return r->name;
}

uint64_t reader_size(const struct reader *r)
{
	return cmap_size(&r->map);
}

const struct stat *reader_stat(const struct reader *r)
{
	return &r->st;
}

int reader_matches(const struct reader *r, const struct stat *st)
{
	return srcid_same(st, &r->st);
}

void reader_get_info(const struct reader *r, struct reader_info *info)
{
	memset(info, 0, sizeof(*info));
	info->fmt = r->fmt;
	info->usize = reader_size(r);
	info->csize = (uint64_t)r->st.st_size;
	info->chunks = r->map.n;
	info->served = atomic_load(&r->served);
	info->decoded = atomic_load(&r->decoded);
	info->pass = r->pass;
	info->reads = atomic_load(&r->reads);
	pthread_mutex_lock((pthread_mutex_t *)&r->lock);
	info->failed = r->failed;
	info->changed = r->changed;
	pthread_mutex_unlock((pthread_mutex_t *)&r->lock);
	for (size_t k = 0; k < r->map.n; k++) {
		const struct ckpt_set *s = reader_ck_set(r, k);

		if (cmap_len(&r->map, k) > info->max_block)
			info->max_block = cmap_len(&r->map, k);
		if (s) {
			info->ckpts += s->n - 1;
			info->ckpt_bytes += ckpt_set_bytes(s);
		} else if (r->ckable && r->ckable[k] && atomic_load(&r->ck_state[k]) != CK_DONE) {
			info->ckpt_wanted++;
		}
	}
	info->resumes = atomic_load(&r->resumes);
	r->f->info(r, info);
}

static int fail_entry(struct reader *r, size_t k, uint64_t off, int ret, const struct zerr *err);

int reader_fail_entry(struct reader *r, size_t k, uint64_t off, const struct zerr *err)
{
	return fail_entry(r, k, off, -EIO, err);
}

/* Marks entry k failed and writes its one log line.  Returns -EIO. */
static int fail_entry(struct reader *r, size_t k, uint64_t off, int ret, const struct zerr *err)
{
	struct zerr why;
	bool first;

	/* The line names both offsets: a caller gets it as data (reader_last_error). */
	zerr_set(&why, ret, err->coff,
		 "read error at offset %" PRIu64 " (%s %zu, compressed offset %" PRIu64 "): %s", off,
		 r->f->unit, r->entry[k], err->coff, err->msg[0] ? err->msg : strerror(-ret));
	pthread_mutex_lock(&r->lock);
	first = !r->bad[k];
	if (ret != -ENOMEM && first) { /* memory comes back; corrupt data does not */
		r->bad[k] = 1;
		if (r->failed++ == 0)
			r->first_err = why;
	}
	pthread_mutex_unlock(&r->lock);
	if (first)
		atomic_fetch_add(&r->ctx->stats.errors, 1);
	/* Formatted again, not from why.msg: the log line is not cut at sizeof(why.msg). */
	if (first)
		reader_log(r, ZLOG_ERROR, &why,
			   "read error at offset %" PRIu64 " (%s %zu, compressed offset %" PRIu64 "): %s",
			   off, r->f->unit, r->entry[k], err->coff,
			   err->msg[0] ? err->msg : strerror(-ret));
	return ret == -ENOMEM ? ret : -EIO;
}

static bool same_meta(const struct stat *a, const struct stat *b)
{
	return a->st_mode == b->st_mode && a->st_nlink == b->st_nlink && a->st_uid == b->st_uid &&
	       a->st_gid == b->st_gid;
}

/*
 * Whether the file, whose ctime alone moved since open (st: size and mtime
 * as at open), still holds the bytes it had.  A rename, unlink, link, chmod
 * or chown moves only ctime (logrotate renames the file under a long grep),
 * and so does a write that restores mtime (rsync --inplace -t), which a
 * unit's own check cannot catch: the new unit's check is valid.  So the
 * move must have a cause other than a write: since the stat last accepted,
 * the link count, mode or owner changed, or the name stopped leading to
 * the file (opts.still_named).  Without one, it is a write: false.  With
 * one, the first and last 4 KiB must still hash as at open, as a last
 * guard.  What it does not catch: a write after such a cause, before the
 * next miss looks (the ctime both moved), that keeps both ends; and a
 * chmod or chown that changes nothing, which looks like a write and fails
 * the handle.  Checked once per new ctime.
 */
static bool same_bytes(struct reader *r, const struct stat *st0)
{
	struct idxfile_id id;
	struct stat st = *st0, ok_st, after;
	bool named_ok, named, raced = false;

	if (!r->sampled || !srcid_same_but_ctime(&st, &r->st))
		return false;
	pthread_mutex_lock(&r->lock);
	ok_st = r->st_ok;
	named_ok = r->named_ok;
	pthread_mutex_unlock(&r->lock);
	/* A few tries: a chmod racing the hash moves ctime and mode again. */
	for (int tries = 0; tries < 3; tries++) {
		if (ok_st.st_ctim.tv_sec == st.st_ctim.tv_sec &&
		    ok_st.st_ctim.tv_nsec == st.st_ctim.tv_nsec)
			return true;
		named = st.st_nlink > 0 &&
			(!r->opts.still_named || r->opts.still_named(r->opts.still_named_ctx, r));
		/* raced: the mode, owner or links moved under the hash, a cause seen */
		if (!raced && same_meta(&st, &ok_st) && (named || !named_ok))
			return false;
		if (idxfile_identify(r->fd, &id) < 0 || id.fingerprint != r->sample ||
		    fstat(r->fd, &after) < 0 || !srcid_same_but_ctime(&after, &r->st))
			return false;
		if (same_meta(&after, &st)) {
			pthread_mutex_lock(&r->lock);
			r->st_ok = st;
			r->named_ok = named;
			pthread_mutex_unlock(&r->lock);
			return true;
		}
		st = after;
		raced = true;
	}
	return false;
}

/*
 * The source must still be the file indexed at open: a file changed in
 * place would mix versions.  Checked on every miss; hits serve the old bytes.
 */
static int check_unchanged(struct reader *r)
{
	struct stat st;
	bool first;

	if (fstat(r->fd, &st) == 0 && (srcid_same(&st, &r->st) || same_bytes(r, &st)))
		return 0;
	pthread_mutex_lock(&r->lock);
	first = !r->changed;
	r->changed = true;
	pthread_mutex_unlock(&r->lock);
	if (first) {
		struct zerr why;

		zerr_set(&why, -EIO, 0, "source changed since it was opened");
		reader_log(r, ZLOG_ERROR, &why,
			   "source changed since it was opened; reads of it fail until it is reopened");
	}
	return -EIO;
}

/* Decodes map entry k whole into buf (exactly len bytes), its integrity check verified. */
static int fill_whole(struct reader *r, size_t k, void *buf, size_t len, struct zerr *err)
{
	struct udec *d;
	ssize_t n;
	int ret = udec_open(r, k, &d, err);

	if (ret < 0)
		return ret;
	n = udec_read(r, d, buf, len, err);
	udec_close(d);
	if (n < 0)
		return (int)n;
	if ((size_t)n != len)
		return zerr_set(err, -EIO, 0, "%s ended %zu bytes early", r->f->unit, len - (size_t)n);
	return 0;
}

/*
 * A decoder to reach position want of entry k: the parked one if it stopped
 * at or before want, nearer than any checkpoint; else, once the entry has
 * checkpoints, one resumed at the last at or before want (for any want but
 * 0: a reader starting at 0 is most likely sequential, and the format's own
 * decoder is the fastest); else one at the entry's start.
 */
static int udec_for(struct reader *r, size_t k, uint64_t want, struct udec **out,
		    struct zerr *err)
{
	const struct ckpt_set *s = want > 0 ? reader_ck_get(r, k) : NULL;
	size_t i = s ? ckpt_find(s, want) : SIZE_MAX;
	struct udec *d = unpark(r, k);

	if (d && udec_tell(d) <= want && (i == SIZE_MAX || udec_tell(d) >= s->pt[i].uoff)) {
		*out = d;
		return 0;
	}
	udec_close(d); /* past want (a reader went back), or further than a checkpoint */
	if (i != SIZE_MAX)
		return udec_resume(r, k, s, i, out, err);
	if (want > 0) {
		reader_log(r, ZLOG_DEBUG, NULL, "%s %zu: decoding from its start to reach %" PRIu64,
			   r->f->unit, r->entry[k], want);
		if (r->ckable && r->ckable[k])
			reader_ck_kick(r, k);
	}
	return udec_open(r, k, out, err);
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
	uint64_t start = r->map.start[k], elen = cmap_len(&r->map, k);
	uint64_t want = ustart - start; /* position in the entry */
	struct udec *d;
	unsigned char *scratch = NULL;
	int ret = udec_for(r, k, want, &d, err);

	if (ret < 0)
		return ret;
	/*
	 * Walk forward slice by slice, offering each one we pass to the cache;
	 * from a checkpoint, first to the next slice boundary.
	 */
	while (udec_tell(d) < want) {
		uint64_t pos = udec_tell(d);
		size_t n = r->opts.slice - (size_t)(pos % r->opts.slice);
		struct bcache_ent *e = NULL;
		void *dst;
		ssize_t got;

		if (elen - pos < n)
			n = (size_t)(elen - pos);
		if (n == r->opts.slice && bcache_claim(r->cache, r->id, start + pos, n, &e) == 1) {
			dst = bcache_buf(e);
		} else {
			/*
			 * Not kept: decoded through a small buffer, which stays
			 * in the CPU's cache, rather than a slice of fresh pages.
			 */
			if (!scratch)
				scratch = malloc(SKIP_BUF);
			if (!scratch) {
				ret = -ENOMEM;
				break;
			}
			dst = scratch;
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
			int ok = check_unchanged(r);

			bcache_done(r->cache, e, ok);
			if (ok < 0) {
				ret = ok;
				break;
			}
			bcache_put(r->cache, e);
		}
	}
	free(scratch);
	if (ret == 0) {
		ssize_t got = udec_read(r, d, buf, len, err);

		if (got != (ssize_t)len)
			ret = got < 0 ? (int)got : zerr_set(err, -EIO, 0, "data ended early");
	}
	if (ret == 0 && udec_tell(d) < elen) {
		park(r, d, k);
		d = NULL;
	}
	udec_close(d);
	return ret;
}

static int fill(struct reader *r, size_t k, uint64_t ustart, size_t len, void *buf,
		struct zerr *err)
{
	if (ustart != r->map.start[k] || len != cmap_len(&r->map, k))
		return fill_slice(r, k, ustart, len, buf, err);
	return fill_whole(r, k, buf, len, err);
}

/*
 * Whether entry k is cached in slices, by a decoder parked between them: an
 * entry wider than whole_max, or one that may get checkpoints (from open
 * on, so its units never change shape).
 */
static bool is_streamed(const struct reader *r, size_t k)
{
	return cmap_len(&r->map, k) > r->opts.whole_max || (r->ckable && r->ckable[k]);
}

/* The cache unit holding byte off, as map entry k and [*ustart, *ustart + *len). */
static size_t unit_of(const struct reader *r, uint64_t off, uint64_t *ustart, size_t *len)
{
	size_t k = cmap_find(&r->map, off);
	uint64_t start = r->map.start[k], elen = cmap_len(&r->map, k);

	if (is_streamed(r, k)) {
		uint64_t s = (off - start) / r->opts.slice;

		start += s * r->opts.slice;
		elen = r->map.start[k + 1] - start;
		if (elen > r->opts.slice)
			elen = r->opts.slice;
	}
	*ustart = start;
	*len = (size_t)elen;
	/* A counter, not state: const readers count too (as reader_last_error locks). */
	atomic_fetch_add_explicit((atomic_uint_fast64_t *)&r->lookups, 1, memory_order_relaxed);
	return k;
}

static bool is_bad(struct reader *r, size_t k)
{
	bool bad;

	pthread_mutex_lock(&r->lock);
	bad = r->bad[k] || r->changed;
	pthread_mutex_unlock(&r->lock);
	return bad;
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
static int fill_entry(struct reader *r, size_t k, uint64_t ustart, struct bcache_ent *e,
		      uint64_t pos)
{
	struct zerr err = { 0 };
	struct timespec t0;
	int ret = check_unchanged(r);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (ret == 0 && !is_streamed(r, k))
		prefault(r, bcache_buf(e), bcache_size(e));
	if (ret == 0)
		ret = fill(r, k, ustart, bcache_size(e), bcache_buf(e), &err);
	/*
	 * Once more before calling the unit bad: a read error can pass (a
	 * pread EIO of a flaky disk or network file system), while corrupt
	 * data fails again, the same way, and only then is marked and logged.
	 */
	if (ret < 0 && ret != -ENOMEM && err.msg[0] && check_unchanged(r) == 0) {
		struct zerr again = { 0 };

		if (fill(r, k, ustart, bcache_size(e), bcache_buf(e), &again) == 0) {
			reader_log(r, ZLOG_WARN, NULL, "a %s at offset %" PRIu64 " failed once (%s) and decoded "
			     "the second time", r->f->unit, ustart, err.msg);
			ret = 0;
		}
	}
	/*
	 * And after: a file rewritten while we decoded it can yield bytes of
	 * neither version (a gzip span has no CRC of its own), so they are
	 * only kept if the file is still the one indexed.
	 */
	if (ret == 0)
		ret = check_unchanged(r);
	/*
	 * The log line and the marks come before bcache_done, so a reader
	 * waiting on this unit gets its EIO only once the cause is recorded.
	 * A file changed under the decoder is not corrupt: that cause is logged
	 * once already.
	 */
	if (ret < 0 && err.msg[0] && check_unchanged(r) == 0) {
		ret = fail_entry(r, k, pos, ret, &err);
		if (ret == -EIO && is_streamed(r, k))
			taint(r);
	}
	bcache_done(r->cache, e, ret);
	if (ret == 0) {
		atomic_fetch_add(&r->ctx->stats.decoded, bcache_size(e));
		atomic_fetch_add(&r->decoded, bcache_size(e));
		reader_log(r, ZLOG_DEBUG, NULL, "decoded %zu bytes at %" PRIu64 " (%s %zu) in %.1f ms",
		     bcache_size(e), ustart, r->f->unit, r->entry[k], ms_since(&t0));
	}
	return ret < 0 && ret != -ENOMEM ? -EIO : ret;
}

/* With r->lock held: wakes the threads in wait_for_turn to look again. */
static void moved_locked(struct reader *r)
{
	r->moves++;
	if (r->waiters)
		pthread_cond_broadcast(&r->moved);
}

/* The decoder of a streamed unit moved (or was closed). */
static void stream_moved(struct reader *r)
{
	pthread_mutex_lock(&r->lock);
	moved_locked(r);
	pthread_mutex_unlock(&r->lock);
}

/* Notes a read in progress of [pos, end); returns its slot, or -1 if all are taken. */
static int inflight_add(struct reader *r, uint64_t pos, uint64_t end)
{
	int slot = -1;

	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < NINFLIGHT; i++) {
		if (r->inflight[i].used)
			continue;
		r->inflight[i].who = pthread_self();
		r->inflight[i].pos = pos;
		r->inflight[i].end = end;
		r->inflight[i].used = true;
		slot = i;
		moved_locked(r);
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return slot;
}

static void inflight_move(struct reader *r, int slot, uint64_t pos)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&r->lock);
	r->inflight[slot].pos = pos;
	pthread_mutex_unlock(&r->lock);
}

static void inflight_del(struct reader *r, int slot)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&r->lock);
	r->inflight[slot].used = false;
	moved_locked(r);
	pthread_mutex_unlock(&r->lock);
}

/*
 * With r->stream held: where in entry k the decoder that would fill the
 * slice at want (bytes into the entry) starts: the parked one if it is in
 * k and not past want, else a new one at 0.
 */
static uint64_t decoder_at(struct reader *r, size_t k, uint64_t want)
{
	uint64_t at = 0;

	pthread_mutex_lock(&r->ctx->parked_lock);
	if (r->parked && r->parked_k == k && udec_tell(r->parked) <= want)
		at = udec_tell(r->parked);
	pthread_mutex_unlock(&r->ctx->parked_lock);
	return at;
}

/*
 * With r->lock held: whether a read in progress on another thread wants a
 * byte before ustart, at most TURN_SPAN before it.  Filling ustart first
 * would either walk the decoder past that read's slices, or evict the
 * slice it is in the middle of (a kernel request is rarely aligned to
 * slices, so two requests share one): either way it would be decoded again.
 */
static bool turn_earlier(const struct reader *r, uint64_t ustart)
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
 * caller should let another read go first (turn_earlier), or, with
 * *grace, wait briefly for one that may not be noted yet because the
 * decoder stands a little behind ustart.
 */
static bool turn_wait(struct reader *r, size_t k, uint64_t ustart, bool *grace)
{
	uint64_t want = ustart - r->map.start[k], at = decoder_at(r, k, want);
	bool earlier;

	pthread_mutex_lock(&r->lock);
	earlier = turn_earlier(r, ustart);
	pthread_mutex_unlock(&r->lock);
	*grace = !earlier && at != want && want - at <= TURN_SPAN;
	return earlier;
}

/*
 * Called with r->stream held, for slice ustart of streamed entry k, by a
 * read that holds no cache reference.  If a read on another thread wants
 * an earlier byte (turn_earlier), releases r->stream, waits for something
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
static bool wait_for_turn(struct reader *r, size_t k, uint64_t ustart, bool *graced,
			  bool *stalled)
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
static int get_unit(struct reader *r, size_t k, uint64_t ustart, size_t ulen, uint64_t pos,
		    bool may_wait, bool seq, struct bcache_ent **out)
{
	bool streamed = is_streamed(r, k), graced = !seq, stalled = false;
	int ret;

	for (;;) {
		if (streamed) {
			if (bcache_lookup(r->cache, r->id, ustart, out) == 0)
				return 0;
			pthread_mutex_lock(&r->stream);
			/*
			 * A read holding units of its own may not wait, nor go
			 * before an earlier read or walk the decoder: it serves
			 * what it has, and asks again.
			 */
			if (!may_wait) {
				bool grace;

				if (turn_wait(r, k, ustart, &grace) ||
				    decoder_at(r, k, ustart - r->map.start[k]) !=
					    ustart - r->map.start[k]) {
					pthread_mutex_unlock(&r->stream);
					return -EAGAIN;
				}
			}
			if (may_wait && !stalled && wait_for_turn(r, k, ustart, &graced, &stalled))
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
			stream_moved(r);
			pthread_mutex_unlock(&r->stream);
		}
		if (ret != -EAGAIN || !may_wait)
			break;
		bcache_wait_room(r->cache, ulen);
	}
	return ret < 0 ? ret : 0;
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
	uint64_t want = ustart - r->map.start[k];
	bool ok;

	pthread_mutex_lock(&r->ctx->parked_lock);
	if (r->parked)
		ok = r->parked_k == k && udec_tell(r->parked) == want;
	else
		ok = want == 0;
	pthread_mutex_unlock(&r->ctx->parked_lock);
	/* Nor while a read wants an earlier byte: the slice could evict the one it is in. */
	if (ok) {
		pthread_mutex_lock(&r->lock);
		ok = !turn_earlier(r, ustart);
		pthread_mutex_unlock(&r->lock);
	}
	return ok;
}

/* A worker decodes one unit ahead of a reader, unless it is cached or in flight. */
static void prefetch_run(void *arg)
{
	struct pjob *j = arg;
	struct reader *r = j->r;
	bool streamed = is_streamed(r, j->k);
	struct bcache_ent *e;

	if (!is_bad(r, j->k)) {
		if (streamed)
			pthread_mutex_lock(&r->stream);
		if ((!streamed || ahead_in_step(r, j->k, j->ustart)) &&
		    bcache_claim(r->cache, r->id, j->ustart, j->ulen, &e) == 1 &&
		    fill_entry(r, j->k, j->ustart, e, j->ustart) == 0) {
			atomic_fetch_add(&r->ctx->stats.ahead, j->ulen);
			bcache_put(r->cache, e);
		}
		if (streamed) {
			stream_moved(r);
			pthread_mutex_unlock(&r->stream);
		}
	}
	job_done(r);
	free(j);
}

/*
 * Asks the kernel to start reading what the queued units [k0, k1] will
 * need, so workers find it cached rather than wait on small preads in
 * turn.  A streamed Block is left to the kernel's own sequential read-ahead.
 */
static void prefetch_input(struct reader *r, size_t k0, size_t k1)
{
	uint64_t cstart, cend;

	if (is_streamed(r, k0) || is_streamed(r, k1))
		return;
	r->f->extent(r, k0, k1, &cstart, &cend);
	if (cend > cstart && cend <= INT64_MAX)
		posix_fadvise(r->fd, (off_t)cstart, (off_t)(cend - cstart), POSIX_FADV_WILLNEED);
}

/*
 * Bytes of the cache that read-ahead for a reader at end may fill without
 * evicting what it has not consumed: the budget, less the parked decoders'
 * share (see PARKED_SHARE), the unit the reader is in and those it left
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
	k = unit_of(r, end < reader_size(r) ? end : end - 1, &ustart, &own);
	/*
	 * And the units just read, which a stream gives up only DONE_LAG past
	 * them (consumed_to): until then they may be more recently used than
	 * units decoded ahead, which would be evicted first.
	 */
	unit_of(r, end > DONE_LAG ? end - DONE_LAG : 0, &lstart, &llen);
	behind = ustart > lstart ? ustart - lstart : 0;
	/*
	 * As bcache counts them: a decoder beyond the parked share evicts no
	 * units.  In a streamed unit the reader's decoder counts in full even
	 * while it is out of the list, decoding: it is parked again after.
	 */
	parked = st.charged < st.budget / PARKED_SHARE ? st.charged : st.budget / PARKED_SHARE;
	if (is_streamed(r, k))
		parked = st.budget / PARKED_SHARE;
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

		unit_of(r, pos, &ustart, &ulen);
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
 * Whether a read at off is near where a sequential stream (read_ahead) has
 * got to, either side: one of a burst of read-ahead requests that the
 * kernel sent at once.
 */
static bool near_stream(struct reader *r, uint64_t off)
{
	bool near = false;

	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < NSTREAMS && !near; i++) {
		uint64_t e = r->streams[i].end;

		near = e && off + TURN_SPAN >= e && off <= e + TURN_SPAN;
	}
	pthread_mutex_unlock(&r->lock);
	return near;
}

/* Notes a read of [off, off + len) and, if it continues a stream, queues what follows. */
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

		unit_of(r, done, &us, &ul);
		if (us + ul + DONE_LAG > off)
			break;
		done = us + ul;
	}
	return done;
}

static void read_ahead(struct reader *r, uint64_t off, size_t len)
{
	uint64_t end = off + len, from, to, done_from = 0, done_to = 0;
	unsigned i;

	if (!r->ctx->pool || r->opts.readahead == 0)
		return;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < NSTREAMS; i++) {
		uint64_t e = r->streams[i].end;

		if (e && off + SEQ_SLACK >= e && off <= e + SEQ_SLACK)
			break;
	}
	if (i == NSTREAMS) {
		uint64_t us;
		size_t ul;

		i = r->next_stream++ % NSTREAMS;
		r->streams[i].end = r->streams[i].ahead = end;
		/* The unit the stream starts in was not read from its start by it. */
		unit_of(r, off, &us, &ul);
		r->streams[i].done = us == off ? off : us + ul;
		from = to = 0;
		/*
		 * A read from the very start is most often the first of many
		 * (cat, grep, tar): the unit after the first one starts at
		 * once, so that a second core works while the first unit
		 * decodes.  A reader that wanted only the header wastes one.
		 */
		if (off == 0) {
			uint64_t ustart;
			size_t ulen;

			unit_of(r, 0, &ustart, &ulen);
			from = ulen;
			if (from < reader_size(r)) {
				unit_of(r, from, &ustart, &ulen);
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
					to = ustart + ulen;
				r->streams[i].ahead = to > from ? to : from;
			}
		}
	} else {
		if (end > r->streams[i].end)
			r->streams[i].end = end;
		from = r->streams[i].ahead > end ? r->streams[i].ahead : end;
		to = ahead_end(r, end);
		if (from < to)
			r->streams[i].ahead = to;
		done_from = r->streams[i].done;
		done_to = consumed_to(r, done_from, off);
		r->streams[i].done = done_to;
	}
	pthread_mutex_unlock(&r->lock);

	/* Units the stream has read through go first when room is needed (bcache_demote). */
	while (done_from < done_to) {
		uint64_t us;
		size_t ul;

		unit_of(r, done_from, &us, &ul);
		bcache_demote(r->cache, r->id, us);
		done_from = us + ul;
	}

	if (from < to)
		prefetch_input(r, cmap_find(&r->map, from), cmap_find(&r->map, to - 1));
	while (from < to) {
		struct pjob *j = malloc(sizeof(*j));

		if (!j)
			return;
		j->r = r;
		j->k = unit_of(r, from, &j->ustart, &j->ulen);
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
 * reader_view; seq: near_stream(r, off) before this read's read-ahead;
 * outer: whether to note the read in progress and start read-ahead for
 * it.  reader_pread does both once for the whole read, not once per view:
 * read_ahead's cost does not shrink with a view's, so once per
 * READER_VIEW_MAX units would cost far more than the units do.
 */
static ssize_t view(struct reader *r, size_t len, uint64_t off, struct reader_view *v, bool outer,
		    bool seq)
{
	uint64_t size = reader_size(r);
	size_t done = 0;
	int slot = -1;

	v->n = 0;
	if (off >= size)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	if (outer) {
		read_ahead(r, off, len);
		slot = inflight_add(r, off, off + len);
	}
	while (done < len && v->n < READER_VIEW_MAX) {
		uint64_t pos = off + done, ustart;
		size_t ulen, n;
		size_t k = unit_of(r, pos, &ustart, &ulen);
		struct bcache_ent *e;
		int ret;

		if (is_bad(r, k))
			ret = -EIO;
		else
			ret = get_unit(r, k, ustart, ulen, pos, v->n == 0, seq, &e);
		if (ret == -EAGAIN)
			break; /* the cache is full of what is pinned: serve what we have */
		if (ret < 0) {
			reader_view_release(r, v);
			inflight_del(r, slot);
			return ret;
		}
		n = ulen - (size_t)(pos - ustart);
		if (n > len - done)
			n = len - done;
		v->iov[v->n].iov_base = (char *)bcache_buf(e) + (pos - ustart);
		v->iov[v->n].iov_len = n;
		v->ent[v->n++] = e;
		done += n;
	}
	inflight_del(r, slot);
	atomic_fetch_add(&r->ctx->stats.served, done);
	atomic_fetch_add(&r->served, done);
	atomic_fetch_add(&r->reads, 1);
	return (ssize_t)done;
}

ssize_t reader_view(struct reader *r, size_t len, uint64_t off, struct reader_view *v)
{
	return view(r, len, off, v, true, near_stream(r, off));
}

void reader_view_release(struct reader *r, struct reader_view *v)
{
	for (unsigned i = 0; i < v->n; i++)
		bcache_put(r->cache, v->ent[i]);
	v->n = 0;
}

ssize_t reader_pread(struct reader *r, void *buf, size_t len, uint64_t off)
{
	uint64_t size = reader_size(r);
	size_t done = 0;
	ssize_t n = 0;
	int slot = -1;
	bool seq = near_stream(r, off);

	/* Noted once for the whole read: it is in progress between its views too. */
	if (off < size) {
		read_ahead(r, off, len < size - off ? len : (size_t)(size - off));
		slot = inflight_add(r, off, len < size - off ? off + len : size);
	}
	while (done < len) {
		struct reader_view v;

		inflight_move(r, slot, off + done);
		if (done > 0)
			seq = near_stream(r, off + done);
		n = view(r, len - done, off + done, &v, false, seq);
		if (n <= 0)
			break;
		for (unsigned i = 0; i < v.n; i++) {
			memcpy((char *)buf + done, v.iov[i].iov_base, v.iov[i].iov_len);
			done += v.iov[i].iov_len;
		}
		reader_view_release(r, &v);
	}
	inflight_del(r, slot);
	return n < 0 ? n : (ssize_t)done;
}
