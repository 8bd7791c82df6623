/* SPDX-License-Identifier: MIT */
/*
 * The zstd backend: the frame walk (frame and block headers, nothing
 * decoded) gives each frame's compressed extent and, from its
 * Frame_Content_Size, its size (a seek table's sizes are not the frames'
 * word and place nothing: zstddec.h); a frame without FCS is measured by
 * one decode pass at open (checksum verified; the frames are spread over
 * the context's pool, see measure_all), and
 * the sizes measured are saved in opts.index_dir like a gzip index
 * (idxfile_save_zstd) and loaded by the next open of the same version of
 * the file instead of decoding again, once they agree with the frames just
 * walked (idxfile_load_zstd).  A loaded size is no more trusted than a
 * measured one: the decoder fails with -EIO if a frame decodes to any
 * other length.  And since a frame's place in the output is the sum of the
 * sizes before it, a frame after one whose size came from the saved index
 * is not decoded until that one has been seen to decode to its size
 * (struct zst, zstd_dec_open): a forged index costs errors (-EIO, logged
 * once per frame), never bytes served at the wrong offset.  One
 * map entry per non-empty frame, so multi-frame files (pzstd, the seekable
 * format) are read at random per frame, and a single frame is read in
 * order through a parked decoder.  A frame that says it is empty gets no
 * entry, so the same pass decodes it at open (pass_needed): a forged 0
 * fails the open instead of hiding the frame's bytes.
 *
 * Shown raw, with one log line: frames that need a dictionary, windows
 * larger than ZSTDDEC_WINDOW_DEFAULT (128 MiB, what zstd -d decodes without
 * --memory): their decoder alone would pass any reasonable cache; and more
 * frames than a map of cache_size/4 holds.  The listing's probe decides,
 * with a walk that keeps nothing (zstddec_scan) and stops at that count.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bcache.h"
#include "ckpt.h"
#include "fill.h"
#include "idxfile.h"
#include "idxtee.h"
#include "idxrec.h"
#include "pool.h"
#include "reader_int.h"
#include "stage.h"
#include "zlog.h"
#include "zstdckpt.h"
#include "zstddec.h"

/* Bytes of memory per frame: the walk's entry, the map's start, entry and bad mark, unseen mark. */
#define ZSTD_FRAME_COST (sizeof(struct zstddec_frame) + sizeof(uint64_t) + sizeof(size_t) + 2)

/* Frames of any kind the map's budget (index_max bytes) allows; the walk stops past it. */
static size_t max_frames(size_t index_max)
{
	size_t n = index_max / ZSTD_FRAME_COST;

	return n == 0 ? 1 : n < ZSTDDEC_MAX_FRAMES ? n : ZSTDDEC_MAX_FRAMES;
}

/* Why frame i (flagged ZSTDDEC_F_DICT or ZSTDDEC_F_BIGWIN) is not decoded here: -ENOTSUP. */
static int flagged(const struct zstddec_frame *f, size_t i, struct zerr *why)
{
	if (f->flags & ZSTDDEC_F_DICT)
		return zerr_set(why, -ENOTSUP, f->coff,
				"frame %zu needs dictionary %" PRIu32 "; shown as it is", i,
				f->dict_id);
	return zerr_set(why, -ENOTSUP, f->coff,
			"frame %zu has a window of %" PRIu64
			" MiB, more than %llu MiB; shown as it is",
			i, f->window >> 20, ZSTDDEC_WINDOW_DEFAULT >> 20);
}

/* The refusal of a file of more than max frames, from the walk's -E2BIG. */
static int too_many(size_t max, size_t index_max, const struct zerr *err, struct zerr *why)
{
	if (max == ZSTDDEC_MAX_FRAMES)
		return zerr_set(why, -E2BIG, err->coff, "more than %zu frames, zmount's limit",
				max);
	return zerr_set(why, -E2BIG, err->coff,
			"more than %zu frames: their map needs more than cache_size/4 (%zu KiB); "
			"raise cache_size",
			max, index_max >> 10);
}

/*
 * The walk, and whether zmount decodes what it found; why says why not.
 * At most what index_max allows: the walk stops at the first frame over,
 * before allocating for it (-E2BIG).
 */
static int walk(struct zsrc *src, uint64_t size, size_t index_max, struct zstddec_index **out,
		struct zerr *why)
{
	struct zerr err = { 0 };
	struct zstddec_index *z;
	size_t max = max_frames(index_max);
	int ret = zstddec_index_read_max(src, size, ZSTDDEC_WINDOW_DEFAULT, max, &z, &err);

	*out = NULL;
	if (ret == -E2BIG)
		return too_many(max, index_max, &err, why);
	if (ret < 0) {
		*why = err;
		return ret;
	}
	for (size_t i = 0; i < z->nframes; i++) {
		if (z->frames[i].flags & (ZSTDDEC_F_DICT | ZSTDDEC_F_BIGWIN)) {
			ret = flagged(&z->frames[i], i, why);
			zstddec_index_free(z);
			return ret;
		}
	}
	*out = z;
	return 0;
}

/* The backend's index (r->idx). */
struct zst {
	struct zstddec_index *z;
	/*
	 * Per frame, or NULL when no size came from a saved index: 1 while
	 * the frame's size is the saved index's word only.  Cleared when the
	 * frame is seen to decode to that size (its decoder reached its end,
	 * or a measuring pass); no byte of a frame is returned before every
	 * frame before it is clear.
	 */
	atomic_uchar *unseen;
	/*
	 * Per frame (with unseen): decoders inside a call that reads it to
	 * its end, and so will clear or condemn it, and those opened and not
	 * yet read (a whole fill opens one to read it to its end at once).  check_before waits for
	 * those (lock, seen) instead of measuring the frame beside them:
	 * read-ahead decodes the next frames while the reader is still in
	 * this one, and measuring each beside its own decode had decoded a
	 * sequential read of 4 MiB frames 1.8 times (issue 32).
	 */
	atomic_uint *ending;
	pthread_mutex_t lock;
	pthread_cond_t seen;
	/*
	 * Frames below this are all clear (none unseen): check_before starts
	 * here, so a read walks only the frames no read has walked yet, and
	 * reading the whole file walks each frame once, not once per frame
	 * after it.  Only grows.
	 */
	atomic_size_t proven;
	/* Where the sizes came from, to remove them once one is proven wrong. */
	const struct idxstore *dir; /* borrowed from the reader, which outlives this */
	const char *name;
	struct idxfile_id id;
	atomic_flag dropped;
};

static const struct fmt_saved zstd_saved; /* its saved index, at the end */

/* A decoder, and which frame it decodes, to clear its mark at its end. */
struct zdec {
	struct zstddec_dec *d;
	struct zst *s;
	struct reader *r;
	size_t i;
	bool checked; /* check_before passed for this frame */
	bool fresh;   /* counted in s->ending from its open to its first read */
};

/* Fills z's unknown sizes from a saved index of this version of the file; true if it did. */
static bool load_sizes(struct reader *r, const struct idxfile_id *id, struct zstddec_index *z)
{
	struct zerr err = { 0 };
	int ret = idxfile_load_zstd(r->opts.index_dir, r->name, id, z, &err);

	if (ret == 0) {
		atomic_fetch_add(&r->ctx->stats.loaded, 1);
		reader_log(r, ZLOG_DEBUG, NULL, "using its saved frame sizes");
		return true;
	}
	if (ret == -EPERM) {
		/* Another user could have written it (idxfile.h): never used; said once. */
		if (!atomic_flag_test_and_set(&r->ctx->untrusted_logged))
			reader_log(r, ZLOG_WARN, NULL,
				   "saved index not trusted (%s); frame sizes are measured",
				   err.msg[0] ? err.msg : strerror(-ret));
	} else if (ret != -ENOENT) {
		reader_log(r, ZLOG_INFO, NULL, "saved index not usable (%s); measuring the frames",
			   err.msg[0] ? err.msg : strerror(-ret));
	}
	return false;
}

static void save_sizes(struct reader *r, const struct idxfile_id *id, const struct zstddec_index *z)
{
	int ret = idxfile_save_zstd(r->opts.index_dir, r->name, id, z, NULL);

	r->saved = ret == 0;
	if (ret < 0 && !atomic_flag_test_and_set(&r->ctx->save_failed_logged))
		zmctx_log(r->ctx, ZLOG_WARN, NULL, NULL,
			  "cannot save indexes in %s (%s); keeping them in memory",
			  idxstore_name(r->opts.index_dir), strerror(-ret));
}

/*
 * The listing's verdict, in 64 KiB whatever the file (zstddec_scan keeps no
 * frame) and in time bounded by the frames index_max allows: the open's
 * walk's.  A file zmount cannot decode (a dictionary, a window over the
 * limit, too many frames) is shown raw under its own name; a damaged one
 * is not (below).
 */
static int zstd_probe(struct zsrc *src, uint64_t size, size_t index_max, struct zerr *why)
{
	struct zstddec_scan sc;
	struct zerr err = { 0 };
	size_t max = max_frames(index_max);
	int ret = zstddec_scan(src, size, ZSTDDEC_WINDOW_DEFAULT, max, &sc, &err);

	if (ret == -E2BIG)
		return too_many(max, index_max, &err, why);
	/*
	 * Damaged (cut short, corrupt, garbage after the last frame): shown
	 * under the stripped name and refused at open, empty, with one log
	 * line, as a damaged gzip or xz file is; a raw copy would pass for
	 * the real thing.
	 */
	if (ret == -EINVAL)
		return 0;
	if (ret < 0) {
		*why = err;
		return ret;
	}
	return sc.ndict || sc.nbigwin ? flagged(&sc.flagged, sc.flagged_i, why) : 0;
}

/*
 * Measuring shared with pool workers: frames are handed out one at a time
 * under lock, and the opener waits only for frames a worker has taken, never
 * for a job still queued (a worker may be the opener itself, or busy).  A
 * job that runs after the opener gave up finds nothing to take: it touches
 * neither src nor z, only this struct, freed by whichever side lets go last.
 */
struct measure {
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned refs; /* the opener and each queued job; under lock */
	bool closed;   /* the opener stopped handing out frames; under lock */
	size_t next;   /* the next frame to take; under lock */
	unsigned busy; /* frames taken and not yet done; under lock */
	int ret;       /* the first failure, its reason in err; under lock */
	size_t bad;    /* and the frame that failed; under lock */
	struct zerr err;
	struct zsrc *src;
	const struct zstddec_index *z;
	size_t from, end; /* the frames it may take; usize[i - from] is frame i's */
	/*
	 * NULL, or a check of saved sizes (check_before): the frames taken are
	 * those it marks unseen, each claimed in check->ending while it is
	 * measured, and cleared if it decodes to its saved size.
	 */
	struct zst *check;
	uint64_t *usize; /* end - from of them: a check's span, not the whole file */
	struct zmctx *ctx;
	uint64_t span;		/* the reader's ck_span: 0, no checkpoints */
	struct ckpt_set **sets; /* per frame, those built (ck_worth), or NULL */
	size_t nframes;		/* z's, for the last unref, which may come after z is gone */
	/* one frame, measured by the opener alone: its bytes also go to r's tap (reader.h) */
	struct reader *tapped;
	/*
	 * Per frame, its bytes staged for the cache (stage.h), or NULL: keep
	 * nothing.  A frame's stage is written by the thread measuring it;
	 * the opener takes them all once none is busy (measure_all).
	 */
	struct stage_budget *keep;
	struct stage *kept;
};

static void sets_free(struct ckpt_set **sets, size_t n)
{
	for (size_t i = 0; sets && i < n; i++)
		ckpt_set_free(sets[i]);
	free(sets);
}

/* Where frame i's size goes (i in [m->from, m->end)). */
static uint64_t *usize_of(struct measure *m, size_t i)
{
	return &m->usize[i - m->from];
}

static void measure_unref(struct measure *m)
{
	bool last;

	pthread_mutex_lock(&m->lock);
	last = --m->refs == 0;
	pthread_mutex_unlock(&m->lock);
	if (last) {
		pthread_mutex_destroy(&m->lock);
		pthread_cond_destroy(&m->idle);
		sets_free(m->sets, m->nframes);
		free(m->kept); /* the opener's stage_drop emptied each */
		free(m->usize);
		free(m);
	}
}

/*
 * Whether frame f is decoded at open: its size is unknown, or it says it
 * is empty.  An empty frame has no map entry, so no read would ever decode
 * it: one that is not empty (a forged 0, in its header or in a saved
 * index) would hide its bytes without an error.  The pass stops at its
 * first byte, so its cost is bounded by its compressed size and one block.
 */
static bool pass_needed(const struct zstddec_frame *f)
{
	return f->usize == ZSTDDEC_UNKNOWN || f->usize == 0;
}

/*
 * Frame f as its header states it, for zstdckpt, whose blobs name their
 * frame: a size measured (or saved) is not the header's, and a blob built
 * while measuring could not have known it.
 */
static struct zstddec_frame stated(const struct zstddec_frame *f)
{
	struct zstddec_frame g = *f;

	if (g.usize_src != ZSTDDEC_SRC_FCS) {
		g.usize = ZSTDDEC_UNKNOWN;
		g.usize_src = ZSTDDEC_SRC_NONE;
	}
	return g;
}

/*
 * Whether frame f's measuring pass also builds its checkpoints: it may
 * hold more than two spans (reader_ck.c's wide_enough) at a ratio up to
 * MEASURE_CK_RATIO.  A wider one the pass missed gets them from the
 * background pass, decoded again.
 */
#define MEASURE_CK_RATIO 32
static bool ck_worth(const struct zstddec_frame *f, uint64_t span)
{
	return span > 0 && f->csize > 2 * span / MEASURE_CK_RATIO;
}

/*
 * The most frame f may decode to: each block yields at most the smaller of
 * its window and 128 KiB (zstddec.h), so its stage need not grow.
 */
static uint64_t most(const struct zstddec_frame *f)
{
	uint64_t block = f->window < (128u << 10) ? f->window : (128u << 10);

	return (uint64_t)f->nblocks * block;
}

/*
 * A frame's checkpoint build that also hands its bytes to the reader's tap
 * (measure.tapped) and to its stage (measure.kept), each if there is one.
 */
struct ck_tap {
	struct ckpt_build *b;
	struct reader *r;
	struct stage_budget *keep;
	struct stage *s;
};

static int ck_tap_out(void *arg, const void *buf, size_t len)
{
	struct ck_tap *t = arg;

	if (t->r)
		reader_pass_out(t->r, buf, len);
	if (t->s)
		stage_copy(t->keep, t->s, buf, len);
	return ckpt_build_out(t->b, buf, len);
}

static int ck_tap_point(void *arg, uint64_t uoff, const void *blob, size_t len)
{
	return ckpt_build_point(((struct ck_tap *)arg)->b, uoff, blob, len);
}

/*
 * Measures frame i with zstdckpt, which verifies it as zstddec does and
 * builds its checkpoints on the way (m->sets[i]); zstddec decides on any
 * failure but memory, so the verdict on the data stays libzstd's.
 */
static int measure_ck(struct measure *m, size_t i, struct zerr *err)
{
	struct zstddec_frame f = stated(&m->z->frames[i]);
	struct zstdckpt_sink sink = { .out = ckpt_build_out, .point = ckpt_build_point };
	struct ckpt_build *b;
	int ret = ckpt_build_new(CKPT_USIZE_UNKNOWN, &b);
	bool tapped = m->tapped && m->tapped->opts.tap;
	bool staged = m->kept && stage_begin(m->keep, &m->kept[i], most(&f));
	struct ck_tap tap = { b, tapped ? m->tapped : NULL, m->keep, staged ? &m->kept[i] : NULL };

	if (ret < 0)
		return zerr_set(err, ret, f.coff, "out of memory");
	sink.arg = b;
	if (tap.r || tap.s)
		sink = (struct zstdckpt_sink){ ck_tap_out, ck_tap_point, &tap };
	ret = zstdckpt_build_blobs(m->src, &f, m->span, &sink, NULL, err);
	if (ret < 0) {
		ckpt_build_free(b);
		if (ret == -ENOMEM)
			return ret;
		*err = (struct zerr){ 0 };
		if (tap.s)
			stage_drop(m->keep, tap.s);
		return zstddec_measure(m->src, &m->z->frames[i], usize_of(m, i), err);
	}
	ret = ckpt_build_end(b, &m->sets[i]);
	if (ret < 0)
		return zerr_set(err, -ENOMEM, f.coff, "out of memory");
	*usize_of(m, i) = m->sets[i]->usize;
	return 0;
}

/*
 * zstddec_measure's pass over frame i that hands its bytes on: into the
 * frame's stage while the stage has room (stage_room), and to the
 * reader's tap (measure.tapped), so that a tar's table needs no decode of
 * its own without checkpoints too (noindex); else into a buffer of its own.
 */
#define MEASURE_BUF (128u << 10)
static int measure_out(struct measure *m, size_t i, struct zerr *err)
{
	const struct zstddec_frame *f = &m->z->frames[i];
	bool tapped = m->tapped && m->tapped->opts.tap;
	unsigned char *scratch = NULL;
	struct zstddec_dec *d;
	ssize_t n;
	int ret = zstddec_dec_open(f, &d, err);

	if (ret < 0)
		return ret;
	if (m->kept)
		stage_begin(m->keep, &m->kept[i], most(f));
	do {
		void *dst;
		size_t cap;
		bool staged = m->kept && stage_room(&m->kept[i], &dst, &cap);

		if (!staged && !scratch && !(scratch = malloc(MEASURE_BUF))) {
			n = zerr_set(err, -ENOMEM, f->coff, "out of memory");
			break;
		}
		if (!staged) {
			dst = scratch;
			cap = MEASURE_BUF;
		}
		n = zstddec_dec_read(d, m->src, dst, cap, err);
		if (n > 0 && staged)
			stage_wrote(&m->kept[i], (size_t)n);
		if (n > 0 && tapped)
			reader_pass_out(m->tapped, dst, (size_t)n);
	} while (n > 0);
	*usize_of(m, i) = zstddec_dec_tell(d);
	zstddec_dec_close(d);
	free(scratch);
	return n < 0 ? (int)n : 0;
}

static int measure_one(struct measure *m, size_t i, struct zerr *err)
{
	const struct zstddec_frame *f = &m->z->frames[i];

	/* Not one whose header or saved index says 0: that size is checked, not measured. */
	if (m->sets && f->usize == ZSTDDEC_UNKNOWN && ck_worth(f, m->span))
		return measure_ck(m, i, err);
	if ((m->kept || (m->tapped && m->tapped->opts.tap)) && f->usize == ZSTDDEC_UNKNOWN)
		return measure_out(m, i, err);
	return zstddec_measure(m->src, f, usize_of(m, i), err);
}

/* A decoder counted in s->ending[i] read or closed: waiters in seen_or_ending look again. */
static void ended(struct zst *s, size_t i)
{
	pthread_mutex_lock(&s->lock);
	atomic_fetch_sub(&s->ending[i], 1);
	pthread_cond_broadcast(&s->seen);
	pthread_mutex_unlock(&s->lock);
}

/*
 * Counts a check's measure of frame i in s->ending[i] (ended undoes it), if
 * the frame is unseen and no decoder is on it: those waiting for the
 * frame wait for the measure, and a second check passes it by.
 */
static bool claim(struct zst *s, size_t i)
{
	bool mine;

	pthread_mutex_lock(&s->lock);
	mine = atomic_load(&s->unseen[i]) && atomic_load(&s->ending[i]) == 0;
	if (mine)
		atomic_fetch_add(&s->ending[i], 1);
	pthread_mutex_unlock(&s->lock);
	return mine;
}

/* Whether a pass takes frame i (struct measure). */
static bool wanted(const struct measure *m, size_t i)
{
	return m->check ? atomic_load(&m->check->unseen[i]) != 0 : pass_needed(&m->z->frames[i]);
}

/*
 * A check's measure of frame i ended with ret: the frame is seen if it
 * decoded to its saved size; else check_before measures it again and
 * says why.
 */
static void check_settle(struct measure *m, size_t i, int ret)
{
	struct zst *s = m->check;

	if (ret == 0 && *usize_of(m, i) == s->z->frames[i].usize)
		atomic_store(&s->unseen[i], 0);
	ended(s, i);
}

/* Takes and measures frames until none is left or one failed. */
static void measure_run(struct measure *m)
{
	pthread_mutex_lock(&m->lock);
	for (;;) {
		struct zerr err = { 0 };
		size_t i;
		int ret;

		while (!m->closed && m->ret == 0 && m->next < m->end && !wanted(m, m->next))
			m->next++;
		if (m->closed || m->ret != 0 || m->next >= m->end)
			break;
		i = m->next++;
		if (m->check && !claim(m->check, i))
			continue;
		m->busy++;
		pthread_mutex_unlock(&m->lock);
		ret = measure_one(m, i, &err);
		if (ret == 0)
			atomic_fetch_add(&m->ctx->stats.decoded, *usize_of(m, i));
		if (m->check)
			check_settle(m, i, ret);
		pthread_mutex_lock(&m->lock);
		if (ret < 0 && m->ret == 0) {
			m->ret = ret;
			m->bad = i;
			m->err = err;
		}
		if (--m->busy == 0)
			pthread_cond_broadcast(&m->idle);
	}
	pthread_mutex_unlock(&m->lock);
}

static void measure_job(void *arg)
{
	measure_run(arg);
	measure_unref(arg);
}

/*
 * Workers to lend a measuring pass: the pool's, as far as their decoders
 * (cost each, the costliest frame's) fit in a quarter of the budget beside
 * the opener's own.  Measuring is transient and charged to no one, so it is
 * kept well inside what the cache leaves.
 */
static unsigned measure_helpers(struct reader *r, uint64_t cost)
{
	uint64_t room = bcache_budget(r->ctx->cache) / 4;
	uint64_t fit = cost ? room / cost : 0;
	unsigned n = r->ctx->pool ? pool_threads(r->ctx->pool) : 0;

	if (fit <= 1)
		return 0;
	return fit - 1 < n ? (unsigned)(fit - 1) : n;
}

/*
 * What measuring frame f holds in memory: its decoder, or, building its
 * checkpoints too, zstdckpt's (the window twice, a ring, pending points:
 * about four windows).
 */
static uint64_t measure_cost(const struct zstddec_frame *f, uint64_t span)
{
	return zstddec_dec_cost(f) * (ck_worth(f, span) ? 4 : 1);
}

/* Which frames a pass takes: those in [from, to) that pass_needed, or with check, that it marks. */
struct measure_span {
	size_t from, to;
	struct zst *check;
};

/*
 * The shared state of a pass over z's frames in span for r, npass of
 * them wanted, with its helpers queued.  0, or -ENOMEM.
 */
static int measure_new(struct reader *r, struct zstddec_index *z, struct measure_span span,
		       size_t npass, struct zsrc *tee, struct stage_budget *keep,
		       struct measure **out)
{
	struct measure *m = calloc(1, sizeof(*m));
	uint64_t cost = 0;
	unsigned helpers;

	*out = NULL;
	if (!m || !(m->usize = malloc((span.to - span.from + 1) * sizeof(*m->usize)))) {
		free(m);
		return -ENOMEM;
	}
	m->span = r->f->ck && r->opts.ck_at_open && !span.check ? r->opts.ck_span : 0;
	if (m->span && !(m->sets = calloc(z->nframes, sizeof(*m->sets))))
		m->span = 0; /* no memory for sets: measure only, the background pass builds them */
	if (keep && (m->kept = calloc(z->nframes, sizeof(*m->kept))))
		m->keep = keep; /* else keep nothing */
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->idle, NULL);
	m->refs = 1;
	m->src = r->src;
	m->z = z;
	m->nframes = z->nframes;
	m->from = m->next = span.from;
	m->end = span.to;
	m->check = span.check;
	m->ctx = r->ctx;
	for (size_t i = span.from; i < span.to; i++) {
		*usize_of(m, i) = z->frames[i].usize;
		if (wanted(m, i) && measure_cost(&z->frames[i], m->span) > cost)
			cost = measure_cost(&z->frames[i], m->span);
	}
	helpers = npass > 1 ? measure_helpers(r, cost) : 0;
	/* A tee hashes what one thread reads in order (idxtee.h): not frames read at once. */
	if (tee && !helpers)
		m->src = tee;
	m->tapped = z->nframes == 1 && !span.check ? r : NULL; /* then no helper: in order */
	for (unsigned k = 0; k < helpers; k++) {
		pthread_mutex_lock(&m->lock);
		m->refs++;
		pthread_mutex_unlock(&m->lock);
		if (pool_submit(r->ctx->pool, measure_job, m) < 0) {
			measure_unref(m); /* the queue is full: the rest is the opener's */
			break;
		}
	}
	*out = m;
	return 0;
}

/*
 * The opener's share of m's frames, then the wait for those that workers
 * took; a job that runs later takes none.  m's first failure (0 or its
 * code), and in *bad, if not NULL, the frame that failed.
 */
static int measure_wait(struct measure *m, size_t *bad)
{
	int ret;

	measure_run(m);
	pthread_mutex_lock(&m->lock);
	m->closed = true;
	while (m->busy)
		pthread_cond_wait(&m->idle, &m->lock);
	ret = m->ret;
	if (bad)
		*bad = m->bad;
	pthread_mutex_unlock(&m->lock);
	return ret;
}

/*
 * Whether codec error e is the data ending early (zstddec says "truncated"
 * when the file ends inside a frame): then why gets zerr_cut's words, the
 * same as every format's, for a file of size bytes, and it returns true.
 */
static bool cut_short(const struct zerr *e, uint64_t size, struct zerr *why)
{
	struct zerr w = *e; /* e may be why */

	if (!strstr(w.msg, "truncated") && !strstr(w.msg, "unexpected end of file"))
		return false;
	zerr_cut(why, -EINVAL, size, "inside a zstd frame [%s]", w.msg);
	return true;
}

/* What a measuring pass leaves its opener, by frame: NULL, or each for the caller to free. */
struct measured {
	struct ckpt_set **sets; /* the checkpoints it built (measure_ck) */
	struct stage *kept;	/* the bytes it staged (measure.kept), each dropped or placed */
};

static void measured_free(struct measured *out, struct stage_budget *keep, size_t nframes)
{
	sets_free(out->sets, nframes);
	for (size_t i = 0; out->kept && i < nframes; i++)
		stage_drop(keep, &out->kept[i]);
	free(out->kept);
	*out = (struct measured){ 0 };
}

/*
 * One decode pass over every frame of z that pass_needed (checksums
 * verified on the way), spread over the context's pool (read through tee,
 * if not NULL, when the opener reads them alone), then all sizes
 * settled at once: settling one frame at a time re-sums every offset,
 * quadratic in the frames.  With keep, the bytes decoded are staged
 * within it.  On failure *bad is the frame that failed, and nothing is
 * left in *out.
 */
static int measure_all(struct reader *r, struct zstddec_index *z, struct zsrc *tee,
		       struct stage_budget *keep, size_t *bad, struct measured *out,
		       struct zerr *why)
{
	struct measure *m;
	size_t npass = 0;
	int ret;

	*out = (struct measured){ 0 };
	for (size_t i = 0; i < z->nframes; i++)
		npass += pass_needed(&z->frames[i]);
	if (npass == 0)
		return 0;
	ret = measure_new(r, z, (struct measure_span){ 0, z->nframes, NULL }, npass, tee, keep, &m);
	if (ret < 0)
		return ret;
	ret = measure_wait(m, bad);
	/* no worker is left to touch them */
	out->sets = m->sets;
	out->kept = m->kept;
	m->sets = NULL;
	m->kept = NULL;
	if (ret < 0 && ret != -ENOMEM && cut_short(&m->err, (uint64_t)r->st.st_size, why))
		ret = -EINVAL;
	else if (ret < 0)
		ret = zerr_set(why, ret == -ENOMEM ? ret : -EINVAL, m->err.coff,
			       "corrupt zstd at compressed offset %" PRIu64 ": %s", m->err.coff,
			       m->err.msg);
	else if (zstddec_index_settle_all(z, m->usize) < 0)
		ret = zerr_set(why, -EINVAL, 0, "corrupt zstd: frame sizes do not settle");
	if (ret < 0)
		measured_free(out, keep, z->nframes);
	measure_unref(m);
	return ret;
}

/*
 * Hands what measure_all left (by frame; freed here) to the core by map
 * entry: the sets to r->ck_open, which keeps those of wide entries
 * (without memory for that, they go: the background pass builds them
 * again), and the staged bytes to the cache, each frame as its unit.
 */
static void hand_over(struct reader *r, const struct zstddec_index *z, struct stage_budget *keep,
		      struct measured *got)
{
	struct ckpt_set **sets = got->sets;

	if (sets && r->map.n && (r->ck_open = calloc(r->map.n, sizeof(*r->ck_open))))
		for (size_t k = 0; k < r->map.n; k++) {
			r->ck_open[k] = sets[r->entry[k]];
			sets[r->entry[k]] = NULL;
		}
	for (size_t k = 0; got->kept && k < r->map.n; k++)
		stage_place(keep, &got->kept[r->entry[k]], r->id, r->map.start[k],
			    cmap_len(&r->map, k));
	measured_free(got, keep, z->nframes);
}

/*
 * The budget for the bytes a measuring pass keeps (measure.kept): the
 * opts.warm_bytes a pass may leave cached, and only frames that are cached
 * whole (reader_streamed: no wider than whole_max, nor wide enough for
 * checkpoints).  False: keep none.
 */
static bool keep_init(struct reader *r, struct stage_budget *keep)
{
	uint64_t unit_max = r->opts.whole_max;

	if (!r->opts.warm_bytes)
		return false;
	if (r->opts.ck_span && unit_max > 2 * (uint64_t)r->opts.ck_span)
		unit_max = 2 * (uint64_t)r->opts.ck_span;
	stage_budget_init(keep, r->cache, r->opts.warm_bytes, unit_max, r->opts.warm_when);
	return true;
}

static void zst_free(struct zst *s)
{
	if (s) {
		zstddec_index_free(s->z);
		free(s->unseen);
		free(s->ending);
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->seen);
		free(s);
	}
}

/* What zstd_open returns for walk's error ret (why set): -EINVAL for any refusal of the data. */
static int walk_failed(int ret, uint64_t size, struct zerr *why)
{
	struct zerr w = *why; /* zerr_set must not read what it writes */

	if (ret == -E2BIG)
		return -EINVAL;
	if (ret != -EINVAL)
		return ret;
	if (cut_short(&w, size, why))
		return ret;
	return zerr_set(why, ret, w.coff,
			"not readable as zstd (at compressed offset %" PRIu64 "): %s", w.coff,
			w.msg);
}

/*
 * Streamed input has no sizes: the saved ones, if index_dir has them for
 * this version of the file (s->unseen then marks them until each is seen
 * to decode to its size), else none: the frames are measured by the pass.
 * True if the sizes must be saved after that pass.
 */
static bool use_saved(struct reader *r, struct zst *s)
{
	struct zstddec_index *z = s->z;

	if (!z->nunknown || !r->opts.index_dir || !idxfile_keyed(r->name) ||
	    idxfile_identify(r->src, &s->id) < 0)
		return false;
	s->dir = r->opts.index_dir;
	s->name = r->name;
	s->unseen = calloc(z->nframes, sizeof(*s->unseen));
	s->ending = calloc(z->nframes, sizeof(*s->ending));
	if (!s->unseen || !s->ending) {
		free(s->unseen);
		free(s->ending);
		s->unseen = NULL;
		s->ending = NULL;
		return true; /* measured, then: no marks needed */
	}
	for (size_t i = 0; i < z->nframes; i++)
		atomic_init(&s->unseen[i], z->frames[i].usize == ZSTDDEC_UNKNOWN);
	if (load_sizes(r, &s->id, z))
		return false;
	free(s->unseen);
	s->unseen = NULL;
	return true; /* ending stays, unused */
}

/*
 * measure_all over s->z; with persist, through a tee (idxtee.h), so that
 * when the pass reads the whole file in order, saving the sizes after it
 * reads nothing again to hash it (issue 32: for an object in a bucket, a
 * second download of all of it).
 */
static int measure_saving(struct reader *r, struct zst *s, bool persist, struct stage_budget *keep,
			  size_t *bad, struct measured *got, struct zerr *why)
{
	struct zsrc *tee = NULL;
	int ret;

	if (persist && idxtee_new(r->src, &tee) < 0)
		tee = NULL;
	ret = measure_all(r, s->z, tee, keep, bad, got, why);
	if (ret == 0 && tee)
		idxtee_take(tee, &s->id);
	zsrc_put(tee);
	return ret;
}

/*
 * A frame the saved index says is empty is not: walk again, measure, and
 * save over it.  What measure_saving returns.
 */
static int measure_again(struct reader *r, struct zst *s, struct stage_budget *keep,
			 struct measured *got, struct zerr *why)
{
	size_t bad = 0;
	int ret;

	reader_log(
		r, ZLOG_INFO, NULL,
		"saved index not usable (a frame it says is empty is not); measuring the frames");
	free(s->unseen);
	s->unseen = NULL;
	zstddec_index_free(s->z);
	s->z = NULL;
	ret = walk(r->src, (uint64_t)r->st.st_size, r->opts.index_max, &s->z, why);
	if (ret < 0) /* it walked a moment ago */
		return ret == -ENOTSUP ? -EINVAL : walk_failed(ret, (uint64_t)r->st.st_size, why);
	return measure_saving(r, s, true, keep, &bad, got, why);
}

/* The map over s->z's measured frames, and what the pass left handed over (hand_over). */
static int map_frames(struct reader *r, struct zst *s, struct stage_budget *keep,
		      struct measured *got)
{
	struct zstddec_index *z = s->z;

	for (size_t i = 0; s->unseen && i < z->nframes; i++)
		if (z->frames[i].usize == 0) /* decoded by the pass */
			atomic_store(&s->unseen[i], 0);
	if (reader_map_init(r, z->nframes) < 0) {
		measured_free(got, keep, z->nframes);
		return -ENOMEM;
	}
	for (size_t i = 0; i < z->nframes; i++) {
		if (z->frames[i].usize == 0)
			continue;
		cmap_add(&r->map, z->frames[i].uoff);
		r->entry[r->map.n - 1] = i;
	}
	cmap_end(&r->map, z->nframes ? z->usize : 0);
	hand_over(r, z, keep, got);
	if (z->nframes && z->nchecksum < z->nframes)
		reader_log(r, ZLOG_INFO, NULL,
			   "%zu of %zu frames have no checksum: their bytes are not verified",
			   z->nframes - z->nchecksum, z->nframes);
	return 0;
}

static int zstd_open(struct reader *r, struct zerr *why)
{
	struct zst *s = calloc(1, sizeof(*s));
	struct stage_budget budget, *keep = NULL;
	struct measured got = { 0 };
	bool persist, built;
	size_t bad = 0;
	int ret;

	if (!s)
		return -ENOMEM;
	atomic_flag_clear(&s->dropped);
	atomic_init(&s->proven, 0);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->seen, NULL);
	ret = walk(r->src, (uint64_t)r->st.st_size, r->opts.index_max, &s->z, why);
	if (ret < 0) {
		free(s);
		return walk_failed(ret, (uint64_t)r->st.st_size, why);
	}
	r->idx = s; /* the core frees it with zstd_free whatever happens next */
	if (s->z->seek == ZSTDDEC_SEEK_IGNORED)
		reader_log(r, ZLOG_WARN, NULL, "seek table ignored: %s", s->z->seek_reason);
	persist = use_saved(r, s);
	/* Unknown sizes measured, empty frames decoded (pass_needed); checksums verified. */
	built = s->z->nunknown > 0;
	if (keep_init(r, &budget))
		keep = &budget;
	ret = measure_saving(r, s, persist, keep, &bad, &got, why);
	if (ret < 0 && s->unseen && atomic_load(&s->unseen[bad])) {
		ret = measure_again(r, s, keep, &got, why);
		persist = built = true;
	}
	if (ret == 0 && built) {
		atomic_fetch_add(&r->ctx->stats.built, 1);
		r->pass = true;
	}
	if (ret == 0 && persist)
		save_sizes(r, &s->id, s->z);
	if (ret == 0)
		ret = map_frames(r, s, keep, &got);
	if (keep)
		stage_budget_destroy(keep);
	return ret;
}

static void zstd_free(void *idx)
{
	zst_free(idx);
}

static const struct zstddec_frame *frame(const struct reader *r, size_t k)
{
	return &((const struct zst *)r->idx)->z->frames[r->entry[k]];
}

/*
 * Frame i's saved size was just proven wrong (or could not be checked: its
 * data is bad): err, already set, gets a note, and the saved index goes,
 * once, so that the next open measures the frames instead of failing again.
 */
static void drop_saved(struct zst *s, struct zerr *err)
{
	struct zerr e = *err; /* zerr_set must not read what it writes */

	if (!atomic_flag_test_and_set(&s->dropped))
		idxfile_remove_recs(s->dir, s->name, &s->id, &zstd_saved);
	zerr_set(err, -EIO, e.coff, "%s (its size came from the saved index, now removed)", e.msg);
}

/* Raises s->proven to i (frames below i are all clear). */
static void proven_raise(struct zst *s, size_t i)
{
	size_t w = atomic_load(&s->proven);

	while (w < i && !atomic_compare_exchange_weak(&s->proven, &w, i))
		;
}

/*
 * Whether frame j is still unseen once no decoder is reading it to its end
 * (waits for those: they clear it, or fail and leave it to a measure).
 * The waiter holds no lock that they need: they are inside
 * zstddec_dec_read, past their own check_before, whose waits are for
 * earlier frames only, so waits never form a cycle.
 */
static bool seen_or_ending(struct zst *s, size_t j)
{
	bool unseen;

	if (!atomic_load(&s->unseen[j]))
		return false;
	pthread_mutex_lock(&s->lock);
	while (atomic_load(&s->unseen[j]) && atomic_load(&s->ending[j]) > 0)
		pthread_cond_wait(&s->seen, &s->lock);
	unseen = atomic_load(&s->unseen[j]);
	pthread_mutex_unlock(&s->lock);
	return unseen;
}

/*
 * How long check_before gives a read in progress over an unseen frame to
 * decode it before measuring it itself: about what a loaded machine takes
 * to get a thread going, well under a measure of a large frame.
 */
#define SEEN_GRACE_MS 50

/* Waits at most ms for frame j to be seen (or a decoder to start on it, then for that). */
static void seen_within(struct zst *s, size_t j, long ms)
{
	struct timespec dl;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_nsec += ms * 1000000L;
	dl.tv_sec += dl.tv_nsec / 1000000000L;
	dl.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&s->lock);
	while (atomic_load(&s->unseen[j]) && atomic_load(&s->ending[j]) == 0 && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&s->seen, &s->lock, &dl);
	pthread_mutex_unlock(&s->lock);
}

/*
 * Whether frame j is still unseen once the fill of its cache unit that
 * another thread may be running now has ended (a read-ahead job that has
 * claimed the unit but not yet opened its decoder is not in s->ending).
 * Only a unit filled whole: a streamed one is filled under reader.stream.
 */
static bool unseen_after_fill(struct reader *r, struct zst *s, size_t j)
{
	const struct zstddec_frame *f = &s->z->frames[j];
	size_t k;

	if (!seen_or_ending(s, j))
		return false;
	if (f->usize == 0 || f->usize == ZSTDDEC_UNKNOWN)
		return true;
	k = cmap_find(&r->map, f->uoff);
	if (k >= r->map.n || r->entry[k] != j || reader_streamed(r, k))
		return true;
	bcache_wait_fill(r->cache, r->id, r->map.start[k]);
	if (!seen_or_ending(s, j))
		return false;
	/*
	 * A reader about to fill it (read-ahead queues the next frame before
	 * the reader claims its own): given SEEN_GRACE_MS to start.
	 */
	if (fill_inflight_in(r, f->uoff, f->uoff + f->usize))
		seen_within(s, j, SEEN_GRACE_MS);
	return seen_or_ending(s, j);
}

/*
 * Measures the unseen frames in [from, to) that no decoder is on, on the
 * pool's threads too (measure_all's pass, each frame claimed while it is
 * measured): a far read right after a mount over saved sizes has them
 * all to check, and one thread alone took twice as long (issue 32).  It
 * keeps no bytes: staging them in fresh cache pages took longer than the
 * decode (doc/design.md).  A frame it leaves unseen (a decoder was on it,
 * or it did not match) is check_before's, which says why.
 */
static void check_many(struct reader *r, struct zst *s, size_t from, size_t to)
{
	struct measure *m;
	size_t npass = 0;

	/* not those a decoder is on (read-ahead): helpers would start for none */
	for (size_t j = from; j < to; j++)
		npass += atomic_load(&s->unseen[j]) && !atomic_load(&s->ending[j]);
	if (npass < 2 ||
	    measure_new(r, s->z, (struct measure_span){ from, to, s }, npass, NULL, NULL, &m) < 0)
		return;
	measure_wait(m, NULL);
	measure_unref(m);
}

/*
 * Before any byte of frame i is returned: every earlier frame whose size only the saved
 * index vouches for is decoded once, to see that it has that size, so that
 * frame i's offset is right.  Frames below s->proven are skipped: each
 * frame is walked here about once over the reader's life.  0, or
 * -EIO/-ENOMEM with err.
 */
static int check_before(struct reader *r, struct zst *s, size_t i, struct zerr *err)
{
	if (!s->unseen)
		return 0;
	check_many(r, s, atomic_load(&s->proven), i);
	for (size_t j = atomic_load(&s->proven); j < i; j++) {
		const struct zstddec_frame *f = &s->z->frames[j];
		struct zerr e = { 0 };
		uint64_t usize;
		int ret;

		if (!unseen_after_fill(r, s, j))
			continue;
		/* racing threads may both measure j: the same answer, twice the work once */
		ret = zstddec_measure(r->src, f, &usize, &e);
		if (ret == -ENOMEM)
			return zerr_set(err, ret, e.coff, "out of memory");
		if (ret < 0) {
			zerr_set(err, -EIO, e.coff,
				 "frame %zu, before this one, does not decode "
				 "to its saved size %" PRIu64 ": %s",
				 j, f->usize, e.msg);
			drop_saved(s, err);
			return -EIO;
		}
		atomic_fetch_add(&r->ctx->stats.decoded, usize);
		atomic_store(&s->unseen[j], 0);
		reader_log(r, ZLOG_DEBUG, NULL,
			   "frame %zu measured (its saved size) before frame %zu", j, i);
	}
	proven_raise(s, i);
	return 0;
}

static int zstd_dec_open(struct reader *r, size_t k, void **dec, struct zerr *err)
{
	struct zst *s = r->idx;
	struct zdec *zd = malloc(sizeof(*zd));
	int ret;

	*dec = NULL;
	if (!zd)
		return zerr_set(err, -ENOMEM, frame(r, k)->coff, "out of memory");
	zd->s = s;
	zd->r = r;
	zd->i = r->entry[k];
	zd->checked = false;
	zd->fresh = s->unseen && atomic_load(&s->unseen[zd->i]);
	if (zd->fresh)
		atomic_fetch_add(&s->ending[zd->i], 1);
	ret = zstddec_dec_open(frame(r, k), &zd->d, err);
	if (ret < 0 && zd->fresh)
		ended(s, zd->i);
	if (ret < 0) {
		free(zd);
		return ret;
	}
	*dec = zd;
	return 0;
}

/*
 * The earlier frames are checked after this frame's bytes are decoded but
 * before they are returned, so that read-ahead decodes frames in parallel
 * and each waits only at its end for the one before (check_before).
 */
static ssize_t zstd_dec_read(void *dec, struct zsrc *src, void *buf, size_t len, struct zerr *err)
{
	struct zdec *zd = dec;
	struct zst *s = zd->s;
	bool ending = zd->fresh || (s->unseen && atomic_load(&s->unseen[zd->i]) &&
				    zstddec_dec_tell(zd->d) + len >= s->z->frames[zd->i].usize);
	ssize_t n;
	int ret;

	if (ending && !zd->fresh)
		atomic_fetch_add(&s->ending[zd->i], 1);
	zd->fresh = false;
	n = zstddec_dec_read(zd->d, src, buf, len, err);
	if (n == -EIO && s->unseen && atomic_load(&s->unseen[zd->i]))
		drop_saved(s, err);
	/* the call that returns the last byte has checked that the frame ends there */
	if (n > 0 && s->unseen && zstddec_dec_tell(zd->d) == s->z->frames[zd->i].usize)
		atomic_store(&s->unseen[zd->i], 0);
	if (ending)
		ended(s, zd->i);
	if (n >= 0 && !zd->checked) {
		ret = check_before(zd->r, s, zd->i, err);
		if (ret < 0)
			return ret;
		zd->checked = true;
	}
	return n;
}

static uint64_t zstd_dec_tell(const void *dec)
{
	return zstddec_dec_tell(((const struct zdec *)dec)->d);
}

/* The frame's window and buffers: known from its header, as the decoder was sized. */
static size_t zstd_dec_cost(const void *dec)
{
	return (size_t)zstddec_dec_cost_of(((const struct zdec *)dec)->d) + sizeof(struct zdec);
}

static void zstd_dec_close(void *dec)
{
	struct zdec *zd = dec;

	if (zd) {
		if (zd->fresh)
			ended(zd->s, zd->i);
		zstddec_dec_close(zd->d);
		free(zd);
	}
}

static void zstd_extent(const struct reader *r, size_t k0, size_t k1, uint64_t *cstart,
			uint64_t *cend)
{
	*cstart = frame(r, k0)->coff;
	*cend = frame(r, k1)->coff + frame(r, k1)->csize;
}

static void zstd_info(const struct reader *r, struct reader_info *in)
{
	const struct zstddec_index *z = ((const struct zst *)r->idx)->z;

	in->streams = z->nframes;
	in->blocks = r->map.n;
	in->padding = z->skippable_bytes;
}

/*
 * Checkpoints inside one frame: codec/zstdckpt.h says what one holds.  A
 * frame whose size, or an earlier frame's, only a saved index vouches for
 * gets none until reads have proven them: its offsets are not yet known.
 */
static int zstd_ck_build(struct reader *r, struct zsrc *src, size_t k, uint64_t span,
			 struct ckpt_build *b, struct zerr *err)
{
	struct zst *s = r->idx;
	struct zstdckpt_sink sink = { .out = ckpt_build_out, .point = ckpt_build_point, .arg = b };
	size_t i = r->entry[k];
	struct zstddec_frame f = stated(frame(r, k));

	if (s->unseen && (atomic_load(&s->proven) < i || atomic_load(&s->unseen[i])))
		return zerr_set(err, -ENOTSUP, frame(r, k)->coff,
				"its size is not yet proven by a read");
	return zstdckpt_build_blobs(src, &f, span, &sink, NULL, err);
}

static int zstd_ck_open(struct reader *r, size_t k, const void *blob, size_t len, void **dec,
			struct zerr *err)
{
	struct zstddec_frame f = stated(frame(r, k));
	int ret = check_before(r, r->idx, r->entry[k], err);

	if (ret == 0)
		ret = zstdckpt_blob_open_in(fmt_state(r), &f, blob, len,
					    (struct zstdckpt_dec **)dec, err);
	/* Saved by a zmount that named measured frames by their size: as good, since pieces are
	 * checked. */
	if (ret == -EINVAL && f.usize != frame(r, k)->usize)
		ret = zstdckpt_blob_open_in(fmt_state(r), frame(r, k), blob, len,
					    (struct zstdckpt_dec **)dec, err);
	return ret;
}

static ssize_t zstd_ck_read(void *dec, struct zsrc *src, void *buf, size_t len, struct zerr *err)
{
	return zstdckpt_dec_read(dec, src, buf, len, err);
}

static size_t zstd_ck_cost(const void *dec)
{
	return zstdckpt_dec_cost(dec);
}

static void zstd_ck_close(void *dec)
{
	zstdckpt_dec_close(dec);
}

/*
 * A decoder from the frame's start that builds its checkpoints on the way
 * (fmt.h, run_open): for a frame whose size a read has proven, as
 * zstd_ck_build.
 */
static int zstd_run_open(struct reader *r, size_t k, uint64_t span, struct ckpt_build *b,
			 void **dec, struct zerr *err)
{
	struct zst *s = r->idx;
	struct zstdckpt_sink sink = { .out = ckpt_build_out, .point = ckpt_build_point, .arg = b };
	struct zstddec_frame f = stated(frame(r, k));
	int ret = check_before(r, s, r->entry[k], err);

	if (ret < 0)
		return ret;
	if (s->unseen && atomic_load(&s->unseen[r->entry[k]]))
		return zerr_set(err, -ENOTSUP, f.coff, "its size is not yet proven by a read");
	return zstdckpt_run_open(r->src, &f, span, &sink, (struct zstdckpt_run **)dec, err);
}

static ssize_t zstd_run_read(void *dec, struct zsrc *src, void *buf, size_t len, struct zerr *err)
{
	return zstdckpt_run_read(dec, src, buf, len, err);
}

static size_t zstd_run_cost(const void *dec)
{
	return zstdckpt_run_cost(dec);
}

static void zstd_run_close(void *dec)
{
	zstdckpt_run_close(dec);
}

static const struct fmt_ck zstd_ck = {
	.build = zstd_ck_build,
	.open = zstd_ck_open,
	.ops = { .read = zstd_ck_read, .cost = zstd_ck_cost, .close = zstd_ck_close },
	.run_open = zstd_run_open,
	.run_ops = { .read = zstd_run_read, .cost = zstd_run_cost, .close = zstd_run_close },
};

/* The context's stock of resumed decoders (codec/zstdckpt.h: bounded, any thread). */
static int zstd_ctx_new(void **state)
{
	return zstdckpt_spares_new((struct zstdckpt_spares **)state);
}

static void zstd_ctx_free(void *state)
{
	zstdckpt_spares_free(state);
}

/* A zstd frame, after up to ZSTDDEC_SNIFF_SKIP skippable ones (pzstd): zstddec_sniff. */
static int zstd_sniff(struct zsrc *src, const unsigned char *head, size_t n)
{
	(void)head;
	(void)n;
	return zstddec_sniff(src);
}

/*
 * fmttab_saved: the frame walk, then idxfile_load_zstd (the mount's load,
 * and agreement with the frames); 1 if every frame states its size.
 */
static int zstd_fresh(const struct idxstore *dir, const char *real, struct zsrc *src,
		      struct zerr *err)
{
	struct zstddec_index *z = NULL;
	struct idxfile_id id;
	int ret = idxfile_identify(src, &id);

	if (ret == 0)
		ret = zstddec_index_read(src, id.size, ZSTDDEC_WINDOW_DEFAULT, &z, err);
	if (ret == 0)
		ret = z->nunknown ? idxfile_load_zstd(dir, real, &id, z, err) : 1;
	zstddec_index_free(z);
	return ret;
}

static int zstd_info_line(const struct reader_info *in, char *out, size_t len)
{
	return snprintf(out, len,
			"zstd\tframes=%" PRIu64 "\tcompressed=%" PRIu64 "\tuncompressed=%" PRIu64
			"\tmax_frame=%" PRIu64 "\tskippable=%" PRIu64,
			in->streams, in->csize, in->usize, in->max_block, in->padding);
}

static int zstd_info_counts(const struct reader_info *in, char *out, size_t len)
{
	return snprintf(out, len, "frames=%" PRIu64 "\n", in->streams);
}

static int zstd_advice(enum fmttab_advice what, const char *bs, char *out, size_t len)
{
	(void)bs;
	switch (what) {
	case FMTTAB_UNIT:
		return snprintf(out, len, "frame");
	case FMTTAB_FIX_ONE:
		return snprintf(out, len, "recompress with pzstd (many frames)");
	case FMTTAB_FIX_WIDE:
		return snprintf(out, len, "recompress with pzstd");
	default:
		return snprintf(out, len,
				"its frames do not state their sizes (none saved), so they "
				"were measured");
	}
}

static const struct fmt_suffix zstd_suffixes[] = {
	{ ".zst", "" },
	{ ".tzst", ".tar" },
	{ NULL, NULL },
};

/* Its saved index: the measured frame sizes (idxrec_zstd.c). */
static const struct fmt_saved zstd_saved = {
	.kind = IDXFILE_KIND_ZSTD,
	.name = "zstd",
	.ext = IDXFILE_EXT,
	.max = idxrec_zstd_max,
	.fits = idxrec_zstd_fits,
	.check = idxrec_zstd_check,
	.size = idxrec_zstd_size,
	.put = idxrec_zstd_put,
	.get = idxrec_zstd_get,
	.fresh = zstd_fresh,
};

const struct fmt fmt_zstd = {
	.name = "zstd",
	.unit = "frame",
	.sniff = zstd_sniff,
	.suffixes = zstd_suffixes,
	.bg = FMTTAB_BG_CKPT,
	.index_optional = true,
	.ctx_new = zstd_ctx_new,
	.ctx_free = zstd_ctx_free,
	.saved = &zstd_saved,
	.info_line = zstd_info_line,
	.info_counts = zstd_info_counts,
	.advice = zstd_advice,
	.probe = zstd_probe,
	.open = zstd_open,
	.free = zstd_free,
	.dec_open = zstd_dec_open,
	.dec_read = zstd_dec_read,
	.dec_tell = zstd_dec_tell,
	.dec_cost = zstd_dec_cost,
	.dec_close = zstd_dec_close,
	.extent = zstd_extent,
	.info = zstd_info,
	.ck = &zstd_ck,
};
