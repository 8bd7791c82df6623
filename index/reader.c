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
 * pool (readahead_note), so several decode at once.
 *
 * Memory: chunks and parked decoders are charged to the cache (bcache.h);
 * a reader holds its map (a documented cost per entry, see fmt_*.c) and,
 * only while it has a source (attached), a parked decoder.
 *
 * One job per file: this one opens, probes, describes and closes readers,
 * checks that the source is unchanged, and serves reads (views); fill.c
 * fills a unit on a miss and orders the reads of a streamed unit;
 * udec.c is the decoder inside one entry; park.c the context's list of
 * parked decoders; readahead.c the read-ahead policy; reader_ck.c the
 * checkpoints inside wide entries.
 */
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bcache.h"
#include "cmap.h"
#include "fill.h"
#include "fmt.h"
#include "idxfile.h"
#include "park.h"
#include "rawkeep.h"
#include "readahead.h"
#include "reader_int.h"
#include "srcid.h"
#include "udec.h"
#include "zlog.h"

void reader_get_counters(struct zmctx *c, struct reader_counters *out)
{
	out->decoded_bytes = atomic_load(&c->stats.decoded);
	out->readahead_bytes = atomic_load(&c->stats.ahead);
	out->prefault_bytes = atomic_load(&c->stats.prefault);
	for (int id = 0; id < FMTTAB_MAX; id++)
		out->opened[id] = atomic_load(&c->stats.opened[id]);
	out->indexes_built = atomic_load(&c->stats.built);
	out->indexes_loaded = atomic_load(&c->stats.loaded);
	out->read_errors = atomic_load(&c->stats.errors);
	out->index_errors = atomic_load(&c->stats.ixerr);
	out->served_bytes = atomic_load(&c->stats.served);
	out->checkpoints = atomic_load(&c->stats.ckpts);
}

size_t reader_passes(const struct reader *r, struct zmctx_pass *out, size_t n)
{
	return zmctx_passes(r->ctx, r->name, out, n);
}

void reader_note_error(struct zmctx *c)
{
	atomic_fetch_add(&c->stats.errors, 1);
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
	o->ck_at_open = true;
	o->index_dir = NULL;
	o->warm_bytes = 0;
	o->warm_when = NULL;
	o->tainted = NULL;
	o->tainted_ctx = NULL;
	o->still_named = NULL;
	o->still_named_ctx = NULL;
	o->tap = NULL;
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
		if (cmap_len(&r->map, k) > widest && !(r->ckable && r->ckable[k] == CKABLE_WIDE))
			widest = cmap_len(&r->map, k);
	if (!r->opts.warn_wide || widest <= r->opts.whole_max)
		return;
	reader_log(r, ZLOG_WARN, NULL,
		   "a %s of %" PRIu64 " KiB is more than cache_size/2 (%zu KiB): random reads "
		   "inside it decode from its start; for fast random access set cache_size=%" PRIu64
		   "M or more%s",
		   r->f->unit, widest >> 10, r->opts.whole_max >> 10, (2 * widest >> 20) + 1,
		   r->f->wide_fix ? r->f->wide_fix : "");
}

/*
 * Records the hash reader_check_unchanged compares with, if nothing changed
 * the file while it was taken.
 */
static void sample_take(struct reader *r)
{
	struct idxfile_id id;
	struct stat after;

	/*
	 * ctime may move meanwhile (a chmod); a write would move mtime too.
	 * A pinned source's version never moves: nothing to sample.
	 */
	r->sampled = !r->src->ops->pinned && idxfile_identify(r->src, &id) == 0 &&
		     zsrc_stat(r->src, &after) == 0 && srcid_same_but_ctime(&after, &r->st);
	r->sample = r->sampled ? id.fingerprint : 0;
	r->st_ok = r->st;
	r->named_ok = true;
}

int reader_open_fd(int fd, const char *name, struct zmctx *ctx, const struct reader_opts *opts,
		   struct reader **out, struct zerr *why)
{
	struct zsrc *src;

	*out = NULL;
	if (zsrc_local(fd, &src) < 0)
		return zerr_set(why, -ENOMEM, 0, "out of memory");
	return reader_open_src(src, name, ctx, opts, out, why);
}

void reader_pass_out(struct reader *r, const void *buf, size_t len)
{
	if (r->opts.tap && len) {
		r->opts.tap->out(r->opts.tap->ctx, buf, len);
		r->tapped += len;
	}
}

/*
 * The one end call of opts.tap (reader.h): 0 only if the open ran a pass
 * that handed out every byte it shows, and nothing beyond (a salvaged
 * pass saw bytes past its end).
 */
static void pass_end(struct reader *r, int ret)
{
	const struct reader_tap *tap = r->opts.tap;
	struct reader_info in = { 0 };

	if (!tap)
		return;
	r->opts.tap = NULL;
	if (ret == 0 && r->f->info)
		r->f->info(r, &in);
	if (ret == 0 && (!r->pass || in.salvaged || r->tapped != reader_size(r)))
		ret = -ENOTSUP;
	tap->end(tap->ctx, ret);
}

int reader_open_src(struct zsrc *src, const char *name, struct zmctx *ctx,
		    const struct reader_opts *opts, struct reader **out, struct zerr *why)
{
	struct reader *r = calloc(1, sizeof(*r));
	struct zerr e = { 0 };
	int ret;

	*out = NULL;
	if (!r) {
		zsrc_put(src);
		if (opts->tap)
			opts->tap->end(opts->tap->ctx, -ENOMEM);
		return zerr_set(why, -ENOMEM, 0, "out of memory");
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->idle, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&r->moved, &ca);
		pthread_cond_init(&r->ck_moved, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_init(&r->stream, NULL);
	r->src = src;
	r->ctx = ctx;
	r->cache = ctx->cache;
	r->opts = *opts;
	r->id = atomic_fetch_add(&ctx->next_id, 1);
	r->name = strdup(name);
	if (!r->name) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = zsrc_stat(r->src, &r->st);
	if (ret < 0) {
		zerr_set(&e, ret, 0, "cannot stat: %s", strerror(-ret));
		goto fail;
	}
	zsrc_tag(r->src, r->tag);
	sample_take(r);
	ret = fmt_sniff(r->src, &r->f);
	if (ret < 0) {
		zerr_set(&e, ret, 0, "cannot read: %s", strerror(-ret));
		goto fail;
	}
	r->fmt = ret;
	if (r->f)
		ret = r->f->open(r, &e);
	else
		ret = zerr_set(&e, -ENOTSUP, 0, "not an %s file", fmttab_names());
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
	pass_end(r, 0);
	*out = r;
	return 0;
fail:
	pass_end(r, ret);
	if (ret == -ENOMEM && !e.msg[0])
		zerr_set(&e, ret, 0, "out of memory");
	if (ret == -EINVAL)
		zmctx_note_damaged(ctx, name, e.msg); /* a corrupt archive: no read yet */
	if (ret != -ENOTSUP) /* not an archive (or one shown raw): said by probe, if at all */
		zmctx_log(ctx, ZLOG_ERROR, name, &e, "%s", e.msg);
	if (why)
		*why = e;
	reader_close(r);
	return ret;
}

void reader_close(struct reader *r)
{
	if (!r)
		return;
	readahead_wait(r);
	reader_ck_stop(r);
	if (r->ckable)
		reader_ck_save(r);
	if (r->cache)
		bcache_drop(r->cache, r->id);
	udec_close(udec_unpark(r, PARK_ANY));
	free(r->skip);
	reader_ck_free(r);
	if (r->f)
		r->f->free(r->idx);
	cmap_free(&r->map);
	free(r->entry);
	free(r->bad);
	zsrc_put(r->src);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->idle);
	pthread_cond_destroy(&r->ck_moved);
	pthread_cond_destroy(&r->moved);
	pthread_mutex_destroy(&r->stream);
	free(r->name);
	free(r);
}

void reader_detach(struct reader *r)
{
	readahead_wait(r);
	reader_ck_save(r);
	/* Nobody reads it now: its decoder's memory goes back to the cache. */
	udec_close(udec_unpark(r, PARK_ANY));
	pthread_mutex_lock(&r->stream);
	free(r->skip); /* a tree read once holds no buffer per file */
	r->skip = NULL;
	pthread_mutex_unlock(&r->stream);
	zsrc_put(r->src);
	r->src = NULL;
}

int reader_attach(struct reader *r, struct zsrc *src)
{
	if (!reader_same_version(r, src)) {
		zsrc_put(src);
		return -ESTALE;
	}
	zsrc_put(r->src);
	r->src = src;
	reader_keep_view(r);
	return 0;
}

void reader_keep_view(struct reader *r)
{
	struct zsrc *v;

	if (r->rawkept && rawkeep_view(r->cache, r->id, UNIT_RAW, r->src, &v) == 0) {
		zsrc_put(r->src);
		r->src = v;
	}
}

int reader_probe(struct zsrc *src, const char *name, const struct reader_opts *opts)
{
	const struct fmt *f;
	int fmt = fmt_sniff(src, &f);
	struct zerr err = { 0 };
	struct stat st;

	if (!f)
		return 0;
	if (!f->probe)
		return fmt;
	if (zsrc_stat(src, &st) == 0 &&
	    f->probe(src, (uint64_t)st.st_size, opts ? opts->index_max : SIZE_MAX, &err) == 0)
		return fmt;
	if (name)
		zlog(ZLOG_WARN,
		     "%s: not readable as %s (at offset %" PRIu64 "): %s; shown as it is", name,
		     f->name, err.coff, err.msg[0] ? err.msg : "cannot stat");
	return 0;
}

const char *reader_name(const struct reader *r)
{
	return r->name;
}

const struct stat *reader_stat(const struct reader *r)
{
	return &r->st;
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
	info->saved = r->saved;
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
		} else if (r->ckable && r->ckable[k] == CKABLE_WIDE &&
			   atomic_load(&r->ck_state[k]) != CK_DONE) {
			info->ckpt_wanted++;
		}
	}
	info->resumes = atomic_load(&r->resumes);
	info->ck_ahead = atomic_load(&r->ck_ahead);
	r->f->info(r, info);
}

/*
 * For a read that continues no stream, at pos in medium entry k
 * (reader_ck.c): true if the whole unit is cached (*e, referenced), or if
 * the entry has its pieces' CRC32s, and then *ustart and *len are the
 * slice of pos, read through them (UNIT_SLICE; *e is the slice if cached,
 * else NULL).  A look at a header or a last record then decodes up to that
 * slice and holds only it, not the whole unit.  Twice per entry
 * (FAR_MISSES): a third far miss in it is a reader moving around inside,
 * which the whole unit serves best (decoding from the start for each
 * would be quadratic); so an entry costs at most three decodes of it.
 * Not once: random reads over many units come back to one they touched
 * once (40 reads into 64 units of 4 MiB do, about 12 times), and a whole
 * decode for each such read took 29-43 ms against 1-27 ms for a peer that
 * decodes to the offset (peer.sh, x4m).
 * False: the whole unit, as for a sequential read, which a whole decode
 * serves fastest (and which verifies it and so records the CRC32s).
 */
#define FAR_MISSES 2

/* Counts a far miss in an entry (r->ck_far[k]); false once it had FAR_MISSES. */
static bool far_again(atomic_uchar *misses)
{
	unsigned char n = atomic_load(misses);

	while (n < FAR_MISSES)
		if (atomic_compare_exchange_weak(misses, &n, (unsigned char)(n + 1)))
			return true;
	return false;
}

static bool far_slice(struct reader *r, size_t k, uint64_t pos, uint64_t *ustart, size_t *len,
		      struct bcache_ent **e)
{
	uint64_t start = r->map.start[k], end = r->map.start[k + 1], s;
	size_t fs = reader_far_slice(r);

	*e = NULL;
	if (!reader_ck_medium(r, k))
		return false;
	if (bcache_lookup(r->cache, r->id, start, e) == 0)
		return true;
	s = start + (pos - start) / fs * fs;
	if (bcache_lookup(r->cache, r->id, s | UNIT_SLICE, e) != 0 &&
	    (!reader_ck_get(r, k) || !far_again(&r->ck_far[k])))
		return false;
	*ustart = s;
	*len = (size_t)(end - s < fs ? end - s : fs);
	return true;
}

/*
 * reader_view; seq: readahead_near(r, off) before this read's read-ahead;
 * outer: whether to note the read in progress and start read-ahead for
 * it.  reader_pread does both once for the whole read, not once per view:
 * readahead_note's cost does not shrink with a view's, so once per
 * READER_VIEW_MAX units would cost far more than the units do.
 */
static ssize_t view(struct reader *r, size_t len, uint64_t off, struct reader_view *v, bool outer,
		    bool seq)
{
	uint64_t size = reader_size(r);
	size_t done = 0;
	int slot = -1;

	v->cache = r->cache;
	v->n = 0;
	len = off < size ? (size_t)(len < size - off ? len : size - off) : 0;
	/* noted first: the read-ahead it queues must see it (fmt_zstd.c, check_before) */
	if (outer)
		slot = fill_inflight_add(r, off, off + len); /* even past EOF: it may be received */
	if (len == 0) {
		fill_inflight_del(r, slot);
		return 0;
	}
	if (outer)
		readahead_note(r, off, len);
	while (done < len && v->n < READER_VIEW_MAX) {
		uint64_t pos = off + done, ustart;
		size_t ulen, n;
		size_t k = reader_unit_of(r, pos, &ustart, &ulen);
		struct bcache_ent *e;
		bool first = v->n == 0;
		int ret;

		if (reader_is_bad(r, k))
			ret = -EIO;
		else if (!seq && far_slice(r, k, pos, &ustart, &ulen, &e))
			ret = e ? 0
				: fill_get(r, k, ustart | UNIT_SLICE, ulen, pos, first, seq, &e);
		else
			ret = fill_get(r, k, ustart, ulen, pos, first, seq, &e);
		if (ret == -EAGAIN)
			break; /* the cache is full of what is pinned: serve what we have */
		if (ret < 0) {
			reader_view_release(v);
			fill_inflight_del(r, slot);
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
	fill_inflight_del(r, slot);
	atomic_fetch_add(&r->ctx->stats.served, done);
	atomic_fetch_add(&r->served, done);
	atomic_fetch_add(&r->reads, 1);
	return (ssize_t)done;
}

int reader_note_received(struct reader *r, uint64_t off, size_t len)
{
	return fill_inflight_add(r, off, off + len);
}

void reader_adopt_received(struct reader *r, int slot)
{
	fill_inflight_adopt(r, slot);
}

ssize_t reader_view(struct reader *r, size_t len, uint64_t off, struct reader_view *v)
{
	return view(r, len, off, v, true, readahead_near(r, off));
}

void reader_view_release(struct reader_view *v)
{
	for (unsigned i = 0; i < v->n; i++)
		bcache_put(v->cache, v->ent[i]);
	v->n = 0;
}

ssize_t reader_pread(struct reader *r, void *buf, size_t len, uint64_t off)
{
	uint64_t size = reader_size(r);
	size_t done = 0;
	ssize_t n = 0;
	int slot = -1;
	bool seq = readahead_near(r, off);

	/* Noted once for the whole read: it is in progress between its views too. */
	if (off < size) {
		slot = fill_inflight_add(r, off, len < size - off ? off + len : size);
		readahead_note(r, off, len < size - off ? len : (size_t)(size - off));
	}
	while (done < len) {
		struct reader_view v;

		fill_inflight_move(r, slot, off + done);
		if (done > 0)
			seq = readahead_near(r, off + done);
		n = view(r, len - done, off + done, &v, false, seq);
		if (n <= 0)
			break;
		for (unsigned i = 0; i < v.n; i++) {
			memcpy((char *)buf + done, v.iov[i].iov_base, v.iov[i].iov_len);
			done += v.iov[i].iov_len;
		}
		reader_view_release(&v);
	}
	fill_inflight_del(r, slot);
	return n < 0 ? n : (ssize_t)done;
}
