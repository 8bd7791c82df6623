/* SPDX-License-Identifier: MIT */
/*
 * The reader's checkpoints inside wide entries (issue 19): which entries
 * may have them, building them, and handing them to the core.  The sets
 * themselves are ckpt.c's; what a checkpoint holds is the format's
 * (fmt->ck).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include "ckpt.h"
#include "idxfile.h"
#include "idxlocal.h"
#include "bcache.h"
#include "park.h"
#include "pool.h"
#include "reader_int.h"
#include "zlog.h"

/*
 * An entry gets checkpoints when it holds more than two spans: below
 * that, a read decodes at most two spans from the entry's start anyway.
 * Narrower ones over two far slices, which are cached whole, get the
 * CRC32s of their pieces, so that a far read (the header, the last record,
 * a random 4 KiB) need not decode and hold all of one: a whole unit is
 * verified before any byte of it is served, and is held in fresh pages.
 * The bound is the far slice, not the slice: a 4 MiB frame is two 2 MiB
 * slices, and a random read into one decoded all 4 MiB where a peer that
 * decodes up to the offset takes half of that on average.
 */
static uint8_t ckable_of(const struct reader *r, size_t k)
{
	uint64_t len = cmap_len(&r->map, k);

	if (r->opts.ck_span == 0)
		return CKABLE_NO;
	if (len > 2 * r->opts.ck_span)
		return CKABLE_WIDE;
	if (len > 2 * (uint64_t)reader_far_slice(r) && len <= r->opts.whole_max)
		return CKABLE_MEDIUM;
	return CKABLE_NO;
}

bool reader_ck_medium(const struct reader *r, size_t k)
{
	return r->ckable && r->ckable[k] == CKABLE_MEDIUM;
}

/*
 * Which entries may get sets: r->ckable, r->ck, r->ck_state and r->ck_far,
 * if any may.  0 or -ENOMEM.
 */
static int ck_alloc(struct reader *r)
{
	size_t n = 0;

	if (!r->f->ck)
		return 0;
	for (size_t k = 0; k < r->map.n; k++)
		n += ckable_of(r, k) != CKABLE_NO;
	if (n == 0)
		return 0;
	r->ckable = calloc(r->map.n, 1);
	r->ck = calloc(r->map.n, sizeof(*r->ck));
	r->ck_state = calloc(r->map.n, sizeof(*r->ck_state));
	r->ck_far = calloc(r->map.n, sizeof(*r->ck_far));
	if (!r->ckable || !r->ck || !r->ck_state || !r->ck_far) {
		reader_ck_free(r);
		return -ENOMEM;
	}
	for (size_t k = 0; k < r->map.n; k++)
		r->ckable[k] = ckable_of(r, k);
	return 0;
}

/* Frees the sets of r->ck_open that nobody took, and the array. */
static void drop_open(struct reader *r)
{
	if (!r->ck_open)
		return;
	for (size_t k = 0; k < r->map.n; k++)
		ckpt_set_free(r->ck_open[k]);
	free(r->ck_open);
	r->ck_open = NULL;
}

void reader_ck_free(struct reader *r)
{
	drop_open(r);
	if (r->ck)
		for (size_t k = 0; k < r->map.n; k++)
			ckpt_set_free(atomic_load(&r->ck[k]));
	free(r->ck);
	free(r->ckable);
	free((void *)r->ck_state);
	free((void *)r->ck_far);
	r->ck = NULL;
	r->ckable = NULL;
	r->ck_state = NULL;
	r->ck_far = NULL;
}

const struct ckpt_set *reader_ck_set(const struct reader *r, size_t k)
{
	return r->ck ? atomic_load_explicit(&r->ck[k], memory_order_acquire) : NULL;
}

/*
 * Moves the blobs of set s (not yet published) out of memory (ckpt_set_spill)
 * into the context's unlinked file in index_dir (one for all sets: one
 * descriptor), when that is a local directory: the place the user gave
 * zmount for derived data, on disk.  Never /tmp: on
 * tmpfs the windows would be memory outside cache_size, and the README
 * promises no temporary files.  Then its windows come back through the
 * cache (reader_ck_window), and it holds only its table.  Where no file can
 * be made (index_dir=none or s3://, or it does not exist yet), it keeps its
 * blobs, and the callers' cap decides.
 */
static void spill(struct reader *r, struct ckpt_set *s)
{
	const char *dir = idxlocal_dir(r->opts.index_dir);
	struct spill *file;

	if (s->blob_len == 0 || ckpt_set_spilled(s) || !dir || !(file = zmctx_spill(r->ctx, dir)))
		return;
	(void)ckpt_set_spill(s, file);
}

/*
 * Publishes set s, made by a pass that verified entry k whole, as k's
 * (taking it over): 0, or -ENOTSUP (too large to keep) or -ESTALE (src
 * is not the version r was opened on), with why set and s freed.
 */
static int publish(struct reader *r, struct zsrc *src, size_t k, struct ckpt_set *s,
		   struct zerr *why)
{
	size_t bytes;

	spill(r, s);
	bytes = ckpt_set_bytes(s);
	/* Held for the reader's life, outside the cache: capped as a block map is. */
	if (bytes > r->opts.index_max) {
		ckpt_set_free(s);
		return zerr_set(why, -ENOTSUP, 0,
				"they would take %zu bytes, more than "
				"cache_size/4",
				bytes);
	}
	/* Only bytes of the version that was indexed: a set of another is dropped. */
	if (!reader_same_version(r, src)) {
		ckpt_set_free(s);
		return zerr_set(why, -ESTALE, 0, "the file changed while it was read");
	}
	atomic_store_explicit(&r->ck[k], s, memory_order_release);
	atomic_fetch_add(&r->ctx->stats.ckpts, s->n - 1);
	reader_log(r, ZLOG_DEBUG, NULL, "%s %zu: %zu checkpoints, %" PRIu64 " bytes", r->f->unit,
		   r->entry[k], s->n - 1, (uint64_t)bytes);
	return 0;
}

/*
 * Whether a reader streams entry k now: the sequential stream the last
 * read started or continued (readahead_note) has continued at least once
 * and ends inside k.  The last one only: a stream left inside k (a head
 * of the file) is no reader once a far read started another.  A pass
 * over k would decode the bytes that reader decodes, on a second core
 * beside it (the cold sequential read of a 40 MiB zstd frame slowed from
 * 0.68x to 0.40x zstd -dc): it leaves k to the reader, whose end queues
 * the pass again (reader_ck_note).  A far read (a stream of one read) does
 * not count: the pass it queued runs.
 */
static bool streaming(struct reader *r, size_t k)
{
	uint64_t start = r->map.start[k], end = start + cmap_len(&r->map, k), e;
	unsigned hits;

	pthread_mutex_lock(&r->lock);
	e = r->streams[r->last_stream % NSTREAMS].end;
	hits = r->streams[r->last_stream % NSTREAMS].hits;
	pthread_mutex_unlock(&r->lock);
	return hits > 0 && e > start && e < end;
}

/*
 * One entry's pass.  0, or a negative errno with why set; -EAGAIN if a
 * reader streams k (streaming) or began to while it ran (reader_ck_yield).
 */
static int build_one(struct reader *r, struct zsrc *src, size_t k, struct zmctx_slot *prog,
		     struct zerr *why)
{
	struct ckpt_build *b;
	struct ckpt_set *s;
	int ret;

	/* Cleared before the look, so a reader that starts after it stops this pass. */
	atomic_store(&r->ck_yield, false);
	if (streaming(r, k))
		return -EAGAIN;
	ret = ckpt_build_new(cmap_len(&r->map, k), &b);
	if (ret < 0)
		return zerr_set(why, ret, 0, "out of memory");
	/* reader_ck_stop sets ck_yield too. */
	ckpt_build_stop_on(b, &r->ck_yield);
	ckpt_build_progress(b, prog);
	atomic_store(&r->ck_at, 0);
	atomic_store(&r->ck_at_k, k);
	ckpt_build_watch(b, &r->ck_at);
	ret = r->f->ck->build(r, src, k, r->opts.ck_span, b, why);
	if (ret < 0) {
		ckpt_build_free(b);
		return ret == -ECANCELED && !atomic_load(&r->ck_stop) ? -EAGAIN : ret;
	}
	ret = ckpt_build_end(b, &s);
	if (ret < 0)
		return zerr_set(why, ret, 0, "the %s did not decode to its size", r->f->unit);
	ret = publish(r, src, k, s, why);
	if (ret == 0)
		atomic_fetch_add(&r->ctx->stats.decoded, cmap_len(&r->map, k));
	return ret;
}

/* The one log line, and the mark, for a pass that failed. */
static void build_failed(struct reader *r, struct zsrc *src, size_t k, int ret,
			 const struct zerr *why)
{
	if (ret == -ENOTSUP)
		reader_log(r, ZLOG_INFO, why,
			   "%s %zu has no checkpoints (%s): reads inside it "
			   "decode from its start",
			   r->f->unit, r->entry[k], why->msg);
	else if (ret == -EIO && reader_same_version(r, src))
		reader_fail_entry(r, k, r->map.start[k], why);
	else if (ret != -ECANCELED)
		reader_log(r, ZLOG_WARN, why, "%s %zu: no checkpoints this time (%s)", r->f->unit,
			   r->entry[k], why->msg[0] ? why->msg : strerror(-ret));
}

/*
 * Whether set s of a medium entry fits beside the others: together they are
 * capped as a block map is, for a file of many such entries.  Counts it if so.
 */
static bool medium_room(struct reader *r, const struct ckpt_set *s)
{
	size_t bytes = ckpt_set_bytes(s);

	if (atomic_fetch_add(&r->ck_medium_bytes, bytes) + bytes <= r->opts.index_max)
		return true;
	atomic_fetch_sub(&r->ck_medium_bytes, bytes);
	return false;
}

/* Publishes set s for entry k if it fits the map and nobody got there first; else frees it. */
static bool adopt(struct reader *r, uint64_t entry_start, struct ckpt_set *s)
{
	size_t k = entry_start < cmap_size(&r->map) ? cmap_find(&r->map, entry_start) : 0;
	unsigned char none = CK_NONE;

	if (r->map.start[k] != entry_start || !r->ckable[k] || s->usize != cmap_len(&r->map, k) ||
	    atomic_load(&r->ck_state[k]) != CK_NONE) {
		ckpt_set_free(s);
		return false;
	}
	/* Before the claim: a read that finds it claimed finds the set soon after. */
	spill(r, s);
	if (ckpt_set_bytes(s) > r->opts.index_max ||
	    !atomic_compare_exchange_strong(&r->ck_state[k], &none, CK_BUSY)) {
		ckpt_set_free(s);
		return false;
	}
	if (r->ckable[k] == CKABLE_MEDIUM && !medium_room(r, s)) {
		atomic_store(&r->ck_state[k], CK_NONE);
		ckpt_set_free(s);
		return false;
	}
	atomic_store_explicit(&r->ck[k], s, memory_order_release);
	atomic_store(&r->ck_state[k], CK_DONE);
	return true;
}

/*
 * Loads the sets saved in index_dir for this version of the source (src's),
 * until one load has been through.  The trust rules are idxfile's; a set
 * that fits is still only used through ckpt_dec, which checks every piece.
 * ck_loaded is set only once that load's sets are published, and no load
 * waits for another: a read that finds none loads them itself, even while
 * a pass on the pool is inside its own load (whose source may be slow), so
 * it never decodes from an entry's start beside a saved set (issue 32).
 * Two loads at once cost a second read of the file: adopt keeps one set.
 */
static void load_saved(struct reader *r, struct zsrc *src)
{
	struct idxfile_ckpt *sets;
	struct idxfile_id id;
	struct zerr e = { 0 };
	size_t n, got = 0;
	int ret;

	if (!r->opts.index_dir || !idxfile_keyed(r->name) || atomic_load(&r->ck_loaded))
		return;
	if (idxfile_identify(src, &id) < 0)
		return; /* no verdict on the saved file: the next want tries again */
	ret = idxfile_load_ckpt(r->opts.index_dir, r->name, &id, r->opts.ck_span, &sets, &n, &e);
	if (ret == -EPERM && !atomic_flag_test_and_set(&r->ctx->untrusted_logged))
		reader_log(r, ZLOG_WARN, &e, "saved checkpoints not used: %s", e.msg);
	else if (ret < 0 && ret != -ENOENT && ret != -ERANGE && ret != -ESTALE)
		reader_log(r, ZLOG_INFO, &e, "saved checkpoints not used (%s): built again", e.msg);
	if (ret < 0) {
		atomic_store(&r->ck_loaded, true);
		return;
	}
	for (size_t i = 0; i < n; i++)
		got += adopt(r, sets[i].entry_start, (struct ckpt_set *)sets[i].set);
	free(sets);
	if (got)
		atomic_fetch_add(&r->ctx->stats.loaded, 1);
	atomic_store(&r->ck_loaded, true);
}

/*
 * Sets as a save takes them: a spilled set's copy (*tmp, freed by
 * unspilled_free) with its blobs read back, the others as they are.
 * 0, or -ENOMEM or -EIO for the first that cannot be read back.
 */
static int unspilled(const struct ckpt_set *s, struct ckpt_set **tmp, const struct ckpt_set **out)
{
	uint8_t *blob;
	int ret;

	*tmp = NULL;
	*out = s;
	if (!ckpt_set_spilled(s))
		return 0;
	ret = ckpt_blobs_copy(s, &blob);
	if (ret < 0)
		return ret;
	*tmp = malloc(sizeof(**tmp));
	if (!*tmp) {
		free(blob);
		return -ENOMEM;
	}
	**tmp = *s;
	(*tmp)->blob = blob;
	(*tmp)->spill = NULL;
	*out = *tmp;
	return 0;
}

/* Frees the copies unspilled made (the table they share is the set's). */
static void unspilled_free(struct ckpt_set **tmp, size_t n)
{
	for (size_t i = 0; tmp && i < n; i++)
		if (tmp[i]) {
			free(tmp[i]->blob);
			free(tmp[i]);
		}
	free(tmp);
}

/* Saves every set r has in index_dir, for later mounts; a failure is logged once per context. */
static void save_all(struct reader *r, struct zsrc *src)
{
	struct idxfile_ckpt *sets = calloc(r->map.n, sizeof(*sets));
	struct ckpt_set **tmp = calloc(r->map.n, sizeof(*tmp));
	struct idxfile_id id;
	size_t n = 0;
	int ret = sets && tmp ? 0 : -ENOMEM;

	if (!r->opts.index_dir || !idxfile_keyed(r->name)) {
		free(sets);
		free(tmp);
		return;
	}
	for (size_t k = 0; ret == 0 && k < r->map.n; k++) {
		const struct ckpt_set *s = reader_ck_set(r, k);

		if (s && (ret = unspilled(s, &tmp[n], &s)) == 0)
			sets[n++] = (struct idxfile_ckpt){ r->map.start[k], s };
	}
	if (ret == 0 && n > 0 && (ret = idxfile_identify(src, &id)) == 0)
		ret = idxfile_save_ckpt(r->opts.index_dir, r->name, &id, r->opts.ck_span, sets, n,
					NULL);
	if (ret < 0 && n > 0 && !atomic_flag_test_and_set(&r->ctx->save_failed_logged))
		reader_log(r, ZLOG_WARN, NULL,
			   "cannot save checkpoints in %s: %s; they are kept "
			   "in memory",
			   idxstore_name(r->opts.index_dir), strerror(-ret));
	unspilled_free(tmp, n);
	free(sets);
}

/*
 * Takes over the sets the format's open built on its sizing pass (that pass
 * decoded and verified each entry whole, so it was also the checkpoint
 * pass: none runs again), and saves them in index_dir.
 */
static void take_open(struct reader *r)
{
	size_t got = 0;

	for (size_t k = 0; k < r->map.n; k++) {
		struct ckpt_set *s = r->ck_open[k];
		struct zerr e = { 0 };
		int ret;

		if (!s || !r->ckable[k] || s->usize != cmap_len(&r->map, k))
			continue; /* drop_open frees it */
		r->ck_open[k] = NULL;
		ret = publish(r, r->src, k, s, &e);
		atomic_store(&r->ck_state[k], ret == -ESTALE ? CK_NONE : CK_DONE);
		if (ret < 0)
			build_failed(r, r->src, k, ret, &e);
		got += ret == 0;
	}
	if (got)
		save_all(r, r->src);
}

int reader_ck_init(struct reader *r)
{
	int ret = ck_alloc(r);

	atomic_store(&r->ck_at_k, SIZE_MAX); /* no pass builds an entry yet */
	if (ret == 0 && r->ck && r->ck_open)
		take_open(r);
	drop_open(r);
	return ret;
}

/*
 * Ends a CK_BUSY of entry k with state st, and wakes the reads waiting for
 * it (reader_ck_wait): whoever holds k busy, a pass or a reader's decode
 * publishing its set (reader_ck_run_end, which spills windows to disk), a
 * tail read waits for it, and would otherwise sleep to its timeout.
 */
static void ck_settle(struct reader *r, size_t k, unsigned char st)
{
	atomic_store(&r->ck_state[k], st);
	pthread_mutex_lock(&r->lock);
	pthread_cond_broadcast(&r->ck_moved);
	pthread_mutex_unlock(&r->lock);
}

/*
 * Whether the pass takes entry k (CK_BUSY): nobody builds it, or a
 * reader's decode that claimed it (CK_RUN) no longer streams it: its
 * decoder, parked halfway, may never go on.  That decoder's set is then
 * dropped at its end (reader_ck_run_end).  A decoder that is not parked
 * is decoding now (a far read on its way to the entry's end): its set
 * comes at that end, so the pass leaves it.
 */
static bool ck_take(struct reader *r, size_t k)
{
	unsigned char st = CK_NONE;
	uint64_t pos;
	size_t pk;

	if (atomic_compare_exchange_strong(&r->ck_state[k], &st, CK_BUSY))
		return true;
	return st == CK_RUN && !streaming(r, k) &&
	       park_peek(&r->ctx->parked, &r->park, &pk, &pos) && pk == k &&
	       atomic_compare_exchange_strong(&r->ck_state[k], &st, CK_BUSY);
}

int reader_build_checkpoints(struct reader *r, struct zsrc *src, struct zerr *why)
{
	struct zerr e = { 0 };
	struct zmctx_slot *prog = NULL;
	uint64_t total = 0;
	int first = 0;
	size_t built = 0;

	if (!r->ck)
		return 0;
	if (!reader_same_version(r, src))
		return zerr_set(why, -ESTALE, 0, "the file changed since it was opened");
	load_saved(r, src);
	/*
	 * Progress for people (zmctx_pass_begin): the bytes of the units still
	 * without a set, those a reader's decoder claimed included (ck_take).
	 */
	for (size_t k = 0; k < r->map.n; k++) {
		unsigned char st = atomic_load(&r->ck_state[k]);

		if (r->ckable[k] == CKABLE_WIDE && (st == CK_NONE || st == CK_RUN))
			total += cmap_len(&r->map, k);
	}
	if (total)
		prog = zmctx_pass_begin(r->ctx, r->name, "checkpoints", total);
	for (size_t k = 0; k < r->map.n; k++) {
		int ret;

		if (r->ckable[k] != CKABLE_WIDE || !ck_take(r, k))
			continue;
		e = (struct zerr){ 0 };
		ret = build_one(r, src, k, prog, &e);
		built += ret == 0;
		/*
		 * Memory or a change may pass, a stop was no verdict, a reader
		 * that streams k queues the pass at its end: tried again.
		 */
		atomic_store(&r->ck_at_k, SIZE_MAX);
		ck_settle(r, k,
			  ret == -ENOMEM || ret == -ESTALE || ret == -ECANCELED || ret == -EAGAIN
				  ? CK_NONE
				  : CK_DONE);
		if (ret == -EAGAIN) {
			reader_log(r, ZLOG_DEBUG, NULL,
				   "%s %zu: checkpoint pass left to the reader streaming it",
				   r->f->unit, r->entry[k]);
			continue;
		}
		if (ret == -ECANCELED) {
			first = first ? first : ret;
			break;
		}
		if (ret < 0) {
			build_failed(r, src, k, ret, &e);
			if (!first) {
				first = ret;
				if (why)
					*why = e;
			}
		}
	}
	zmctx_pass_end(r->ctx, prog);
	if (built)
		save_all(r, src);
	return first;
}

const struct ckpt_set *reader_ck_get(struct reader *r, size_t k)
{
	const struct ckpt_set *s = reader_ck_set(r, k);

	if (!s && r->ckable && r->ckable[k] && r->src && !atomic_load(&r->ck_loaded)) {
		load_saved(r, r->src);
		s = reader_ck_set(r, k);
	}
	return s;
}

int reader_ck_window(struct reader *r, size_t k, const struct ckpt_set *s, size_t i,
		     struct ck_window *w, struct zerr *err)
{
	const struct ckpt_point *p = &s->pt[i];
	uint64_t no = UNIT_WIN | (r->map.start[k] + p->uoff);
	int ret;

	*w = (struct ck_window){ 0 };
	if (p->blob_len == 0)
		return 0;
	if (!ckpt_set_spilled(s)) {
		w->blob = s->blob + p->blob_off;
		return 0;
	}
	/* No wait for room: the caller may hold the unit it fills. */
	ret = bcache_get(r->cache, r->id, no, p->blob_len, false, &w->e);
	if (ret == 1) {
		ret = ckpt_blob_read(s, i, bcache_buf(w->e));
		bcache_done(r->cache, w->e, ret);
		if (ret == 0)
			atomic_fetch_add(&r->ck_windows, 1);
		else
			w->e = NULL;
	} else if (ret < 0) {
		/* No room now (or another reader's load failed): this open alone, uncached. */
		w->e = NULL;
		w->tmp = malloc(p->blob_len);
		ret = w->tmp ? ckpt_blob_read(s, i, w->tmp) : -ENOMEM;
		if (ret == 0)
			atomic_fetch_add(&r->ck_windows, 1);
	}
	if (ret < 0) {
		reader_ck_window_put(r, w);
		return zerr_set(err, ret == -ENOMEM ? ret : -EIO, 0,
				"cannot read back checkpoint %zu of %s %zu from its spill file", i,
				r->f->unit, r->entry[k]);
	}
	w->blob = w->e ? bcache_buf(w->e) : w->tmp;
	return 0;
}

void reader_ck_window_put(struct reader *r, struct ck_window *w)
{
	bcache_put(r->cache, w->e);
	free(w->tmp);
	*w = (struct ck_window){ 0 };
}

struct kick {
	struct reader *r;
	struct zsrc *src;
};

static void kick_run(void *arg)
{
	struct kick *j = arg;
	struct reader *r = j->r;

	reader_build_checkpoints(r, j->src, NULL);
	zsrc_put(j->src);
	free(j);
	pthread_mutex_lock(&r->lock);
	if (--r->ck_jobs == 0)
		pthread_cond_broadcast(&r->idle);
	pthread_mutex_unlock(&r->lock);
}

void reader_ck_kick(struct reader *r, size_t k)
{
	unsigned char st = atomic_load(&r->ck_state[k]);
	struct kick *j;
	bool queued = false;

	if (!r->ctx->pool || (st != CK_NONE && st != CK_RUN) || atomic_load(&r->ck_stop))
		return;
	j = malloc(sizeof(*j));
	if (!j)
		return;
	/* Its own reference: the reader may be detached before the pass ends. */
	j->src = r->src ? zsrc_get(r->src) : NULL;
	j->r = r;
	pthread_mutex_lock(&r->lock);
	if (j->src && r->ck_jobs == 0) {
		r->ck_jobs++;
		queued = pool_submit(r->ctx->pool, kick_run, j) == 0;
		if (!queued)
			r->ck_jobs--;
	}
	pthread_mutex_unlock(&r->lock);
	if (!queued) {
		zsrc_put(j->src);
		free(j);
	}
}

void reader_ck_note(struct reader *r, size_t k, uint64_t pos)
{
	/* CK_RUN: a reader's decoder builds the set, and publishes it at the end. */
	if (r->ckable && r->ckable[k] == CKABLE_WIDE && pos >= cmap_len(&r->map, k) &&
	    !reader_ck_set(r, k) && atomic_load(&r->ck_state[k]) != CK_RUN)
		reader_ck_kick(r, k);
}

void reader_ck_yield(struct reader *r, size_t k)
{
	if (r->ckable && r->ckable[k] == CKABLE_WIDE && atomic_load(&r->ck_state[k]) == CK_BUSY)
		atomic_store(&r->ck_yield, true);
}

bool reader_ck_wait(struct reader *r, size_t k, uint64_t want)
{
	uint64_t len = cmap_len(&r->map, k), sl = r->opts.slice, at, end;

	if (!r->ckable || r->ckable[k] != CKABLE_WIDE || atomic_load(&r->ck_state[k]) != CK_BUSY)
		return false;
	/* A pass that took k but has not begun it yet (build_one) is at its start. */
	at = atomic_load(&r->ck_at_k) == k ? atomic_load(&r->ck_at) : 0;
	/*
	 * Worth it if the pass ends about when this read would end on its
	 * own, at the end of want's slice: an eighth later still saves the
	 * whole decode beside it.  A tail's read ends where the pass does, so
	 * it always waits: judged by want alone, a pass that had just begun
	 * (the indexer's, right after a mount) looked too far behind, and the
	 * tail decoded the whole entry beside it.
	 */
	end = sl && want / sl < (len - 1) / sl ? (want / sl + 1) * sl : len;
	if (len - at > end + end / 8)
		return false;
	pthread_mutex_lock(&r->lock);
	while (atomic_load(&r->ck_state[k]) == CK_BUSY && !atomic_load(&r->ck_stop)) {
		struct timespec dl;

		/* the pass's end signals ck_moved; the timeout only bounds a missed one */
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_nsec += 100 * 1000000L;
		dl.tv_sec += dl.tv_nsec / 1000000000L;
		dl.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&r->ck_moved, &r->lock, &dl);
	}
	pthread_mutex_unlock(&r->lock);
	return true;
}

void reader_ck_stop(struct reader *r)
{
	atomic_store(&r->ck_stop, true);
	atomic_store(&r->ck_yield, true);
	pthread_mutex_lock(&r->lock);
	while (r->ck_jobs > 0)
		pthread_cond_wait(&r->idle, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

bool reader_ck_run_begin(struct reader *r, size_t k)
{
	unsigned char none = CK_NONE;

	/* reader_ck_get: a set saved earlier is loaded, not built again. */
	return r->ckable && r->ckable[k] == CKABLE_WIDE && r->f->ck->run_open &&
	       !atomic_load(&r->ck_stop) && !reader_ck_get(r, k) &&
	       atomic_compare_exchange_strong(&r->ck_state[k], &none, CK_RUN);
}

void reader_ck_run_end(struct reader *r, size_t k, struct ckpt_build *b, bool whole)
{
	unsigned char run = CK_RUN;
	struct ckpt_set *s = NULL;
	struct zerr e = { 0 };
	int ret;

	if (!whole) { /* a read stopped halfway: a pass may build k later (reader_ck_note) */
		ckpt_build_free(b);
		atomic_compare_exchange_strong(&r->ck_state[k], &run, CK_NONE);
		return;
	}
	/* A pass took k over (ck_take): its set, not this one. */
	if (!atomic_compare_exchange_strong(&r->ck_state[k], &run, CK_BUSY)) {
		ckpt_build_free(b);
		return;
	}
	if (ckpt_build_end(b, &s) < 0) /* a codec's bug, not the data's */
		ret = zerr_set(&e, -EPROTO, 0, "the %s did not decode to its size", r->f->unit);
	else
		ret = publish(r, r->src, k, s, &e);
	/* Saved at detach, as the sets of medium entries: not on the reader's time. */
	if (ret == 0)
		atomic_store(&r->ck_unsaved, true);
	else
		build_failed(r, r->src, k, ret, &e);
	ck_settle(r, k, ret == -ESTALE ? CK_NONE : CK_DONE);
}

void reader_ck_medium_done(struct reader *r, size_t k, const void *buf, size_t len)
{
	unsigned char none = CK_NONE;
	struct ckpt_build *b;
	struct ckpt_set *s = NULL;

	/* reader_ck_get: a set saved earlier is loaded, not made and saved again. */
	if (!reader_ck_medium(r, k) || len != cmap_len(&r->map, k) || reader_ck_get(r, k) ||
	    !atomic_compare_exchange_strong(&r->ck_state[k], &none, CK_BUSY))
		return;
	if (ckpt_build_new(len, &b) == 0 && ckpt_build_out(b, buf, len) == 0)
		ckpt_build_end(b, &s);
	else
		ckpt_build_free(b);
	if (s && medium_room(r, s)) {
		atomic_store_explicit(&r->ck[k], s, memory_order_release);
		atomic_store(&r->ck_unsaved, true);
		s = NULL;
	}
	ckpt_set_free(s);
	atomic_store(&r->ck_state[k], CK_DONE);
}

void reader_ck_save(struct reader *r)
{
	/* Sets of the version r was opened on, saved under that version's identity only. */
	if (r->src && atomic_exchange(&r->ck_unsaved, false) && reader_same_version(r, r->src))
		save_all(r, r->src);
}
