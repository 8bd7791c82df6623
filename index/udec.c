/* SPDX-License-Identifier: MIT */
/*
 * Decoders inside one map entry (struct udec): opened at the entry's
 * start through the format's backend (fmt.h), or resumed at a checkpoint
 * (ckpt.h); and, between the reads of a streamed unit, parked on the
 * context's list (park.h), where udec_for finds them again.
 */
#include "udec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#include "ckpt.h"
#include "fmt.h"
#include "park.h"
#include "reader_int.h"
#include "zlog.h"

/*
 * A decoder inside one map entry, whatever the format: what a streamed unit
 * is read with, and what is parked between reads.  The src is the reader's
 * at each call, never kept.
 */
struct udec {
	const struct fmt *f;
	void *d;
	struct ckpt_dec *ck;	   /* instead of d: resumed at a checkpoint, its output verified */
	struct ckpt_inner_ops own; /* ck's ops when it wraps the format's own decoder (point 0) */
	struct park_node pn;	   /* on the context's parked list (park.h) */
	/*
	 * With d a run decoder (fmt.h, run_open): the set its reads build
	 * (handed to reader_ck_run_end at the entry's end, or at close), the
	 * reader and entry it was claimed for, and the bytes returned.
	 */
	struct ckpt_build *cb;
	struct reader *r;
	size_t k;
	uint64_t pos;
	bool run;
};

void udec_close(struct udec *d)
{
	if (!d)
		return;
	if (d->ck)
		ckpt_dec_close(d->ck);
	else if (d->run)
		d->f->ck->run_ops.close(d->d);
	else
		d->f->dec_close(d->d);
	if (d->cb) /* read only partly: the claim ends, and a pass may build the set */
		reader_ck_run_end(d->r, d->k, d->cb, false);
	free(d);
}

/*
 * One decode per byte (issue 32): a reader that reads a wide entry from
 * its start, which has no set yet, decodes it through the format's
 * checkpoint build (run_open), so that a read through it leaves its set
 * and no pass decodes it again.  false (and d as it was) if it does not.
 */
static bool udec_open_run(struct reader *r, size_t k, struct udec *d)
{
	struct zerr e = { 0 };

	if (!reader_ck_run_begin(r, k))
		return false;
	if (ckpt_build_new(cmap_len(&r->map, k), &d->cb) == 0 &&
	    r->f->ck->run_open(r, k, r->opts.ck_span, d->cb, &d->d, &e) == 0) {
		d->run = true;
		d->r = r;
		d->k = k;
		return true;
	}
	/* The plain decoder then: its own open says what is wrong, if anything is. */
	reader_ck_run_end(r, k, d->cb, false);
	d->cb = NULL;
	return false;
}

/* A decoder at the start of map entry k, a run decoder if run and it may be. */
static int udec_open_as(struct reader *r, size_t k, bool run, struct udec **out, struct zerr *err)
{
	struct udec *d = calloc(1, sizeof(*d));
	int ret = 0;

	*out = NULL;
	if (!d)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	d->f = r->f;
	if (!run || !udec_open_run(r, k, d))
		ret = r->f->dec_open(r, k, &d->d, err);
	if (ret < 0) {
		free(d);
		return ret;
	}
	*out = d;
	return 0;
}

/* A decoder at the start of map entry k.  Returns 0 and *out, or a negative errno (err set). */
int udec_open(struct reader *r, size_t k, struct udec **out, struct zerr *err)
{
	return udec_open_as(r, k, true, out, err);
}

/* A run decoder's read: at the entry's end, its set is the entry's. */
static ssize_t udec_run_read(struct reader *r, struct udec *d, void *buf, size_t len,
			     struct zerr *err)
{
	ssize_t n = d->f->ck->run_ops.read(d->d, r->src, buf, len, err);

	if (n > 0)
		d->pos += (uint64_t)n;
	if (n > 0 && d->cb && d->pos == cmap_len(&r->map, d->k)) {
		reader_ck_run_end(r, d->k, d->cb, true);
		d->cb = NULL;
	}
	return n;
}

ssize_t udec_read(struct reader *r, struct udec *d, void *buf, size_t len, struct zerr *err)
{
	if (d->ck)
		return ckpt_dec_read(d->ck, r->src, buf, len, err);
	if (d->run)
		return udec_run_read(r, d, buf, len, err);
	return d->f->dec_read(d->d, r->src, buf, len, err);
}

/* Bytes returned since the start of its map entry. */
uint64_t udec_tell(const struct udec *d)
{
	if (d->run)
		return d->pos;
	return d->ck ? ckpt_dec_tell(d->ck) : d->f->dec_tell(d->d);
}

size_t udec_cost(const struct udec *d)
{
	if (d->run)
		return sizeof(*d) + d->f->ck->run_ops.cost(d->d);
	return sizeof(*d) + (d->ck ? ckpt_dec_cost(d->ck) : d->f->dec_cost(d->d));
}

/*
 * A decoder resumed at point i of entry k's set s.  0 and *out, or a negative errno (err set).
 * At point 0 of a medium entry's set, which holds no window, it is the
 * format's own decoder, which takes every filter; its output is checked
 * piece by piece all the same.  A wide entry's point 0 opens the
 * checkpoint decoder, whose windows come warm from the spares: libzstd's
 * streaming decoder maps and faults in a fresh one each time, and took 3
 * times the CPU there in a pmrep dashboard's profile (doc/results/benchmarks.md).
 */
static int udec_resume(struct reader *r, size_t k, const struct ckpt_set *s, size_t i,
		       struct udec **out, struct zerr *err)
{
	const struct ckpt_point *p = &s->pt[i];
	struct udec *d = calloc(1, sizeof(*d));
	const struct ckpt_inner_ops *ops = &r->f->ck->ops;
	void *inner;
	int ret;

	*out = NULL;
	if (!d)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	d->f = r->f;
	if (i == 0 && reader_ck_medium(r, k)) {
		d->own = (struct ckpt_inner_ops){ r->f->dec_read, r->f->dec_cost, r->f->dec_close };
		ops = &d->own;
		ret = r->f->dec_open(r, k, &inner, err);
	} else {
		struct ck_window w;

		ret = reader_ck_window(r, k, s, i, &w, err);
		if (ret == 0)
			ret = r->f->ck->open(r, k, w.blob, p->blob_len, &inner, err);
		reader_ck_window_put(r, &w);
	}
	if (ret == 0 && (ret = ckpt_dec_new(s, i, inner, ops, &d->ck)) < 0)
		zerr_set(err, ret, 0, "out of memory");
	if (ret < 0) {
		free(d);
		return ret;
	}
	atomic_fetch_add(&r->resumes, 1);
	*out = d;
	return 0;
}

int udec_resume_at(struct reader *r, size_t k, size_t i, struct udec **out, struct zerr *err)
{
	const struct ckpt_set *s = reader_ck_set(r, k);

	*out = NULL;
	if (!s || i >= s->n)
		return zerr_set(err, -EINVAL, 0, "no checkpoint %zu in %s %zu", i, r->f->unit,
				r->entry[k]);
	return udec_resume(r, k, s, i, out, err);
}

/* The decoder whose node n is (park.h). */
static struct udec *udec_of(struct park_node *n)
{
	return (struct udec *)((char *)n - offsetof(struct udec, pn));
}

/* How the parked list closes a decoder it evicts. */
static void udec_park_close(struct park_node *n)
{
	udec_close(udec_of(n));
}

/* Takes r's parked decoder if it is in map entry k (any entry if k is PARK_ANY); else NULL. */
struct udec *udec_unpark(struct reader *r, size_t k)
{
	struct park_node *n = park_take(&r->ctx->parked, &r->park, k);

	return n ? udec_of(n) : NULL;
}

/*
 * Parks d (stopped in map entry k) for r's next sequential read, charging
 * it to the cache; the list closes any decoder r had parked before, and
 * those of other readers that no longer fit its share (park_add).
 */
void udec_park(struct reader *r, struct udec *d, size_t k)
{
	d->pn.close = udec_park_close;
	d->pn.key = k;
	d->pn.pos = udec_tell(d);
	d->pn.cost = udec_cost(d);
	park_add(&r->ctx->parked, &r->park, &d->pn);
}

/*
 * A plain decoder d parked at most halfway into wide entry k, which
 * nobody builds now (a pass that ran gave the entry up to this reader:
 * reader_ck_yield): replaced by a run decoder from the entry's start, so
 * that the reader's read through builds the set.  Decoding those bytes
 * again costs less than the pass after the reader would (the whole
 * entry); past halfway, a reader that stops early would have wasted
 * more.  Returns the decoder to go on with.
 */
static struct udec *udec_restart(struct reader *r, size_t k, uint64_t want, struct udec *d)
{
	struct udec *n;

	if (!d || d->run || d->ck || !r->ckable || r->ckable[k] != CKABLE_WIDE ||
	    want > cmap_len(&r->map, k) / 2 || udec_tell(d) > want || !(n = calloc(1, sizeof(*n))))
		return d;
	n->f = r->f;
	if (!udec_open_run(r, k, n)) {
		free(n);
		return d;
	}
	reader_log(r, ZLOG_DEBUG, NULL,
		   "%s %zu: read again from its start to build its checkpoints", r->f->unit,
		   r->entry[k]);
	udec_close(d);
	return n;
}

/*
 * A decoder to reach position want of entry k: the parked one if it stopped
 * at or before want, nearer than any checkpoint; else, once the entry has
 * checkpoints, one resumed at the last at or before want (for any want but
 * 0 of a wide entry: a reader starting at 0 is most likely sequential, and
 * its Check is verified at the end); else one at the entry's start.  A
 * medium entry is read in slices only through its set, which checks every
 * piece before it is served: -EIO without one.
 */
int udec_for(struct reader *r, size_t k, uint64_t want, struct udec **out, struct zerr *err)
{
	bool medium = reader_ck_medium(r, k);
	const struct ckpt_set *s = want > 0 || medium ? reader_ck_get(r, k) : NULL;
	size_t i = s ? ckpt_find(s, want) : SIZE_MAX;
	struct udec *d;

	*out = NULL;
	if (medium && !s)
		return zerr_set(err, -EIO, 0, "%s %zu has no piece checks to read it in slices",
				r->f->unit, r->entry[k]);
	d = udec_restart(r, k, want, udec_unpark(r, k));

	if (d && udec_tell(d) <= want && (i == SIZE_MAX || udec_tell(d) >= s->pt[i].uoff)) {
		*out = d;
		return 0;
	}
	udec_close(d); /* past want (a reader went back), or further than a checkpoint */
	/* A pass about to end has the set: cheaper than decoding beside it. */
	if (i == SIZE_MAX && want > 0 && reader_ck_wait(r, k, want) && (s = reader_ck_get(r, k)))
		i = ckpt_find(s, want);
	if (i != SIZE_MAX)
		return udec_resume(r, k, s, i, out, err);
	bool tail = want + r->opts.slice >= cmap_len(&r->map, k);
	int ret;

	if (want > 0) {
		reader_log(r, ZLOG_DEBUG, NULL, "%s %zu: decoding from its start to reach %" PRIu64,
			   r->f->unit, r->entry[k], want);
		/*
		 * A far read short of the entry's end leaves the set to the pass
		 * it queues now (it may read no further), and takes the plain
		 * decoder; one whose slice ends the entry (a tail) decodes through
		 * the checkpoint build, leaves the set, and no pass decodes the
		 * entry again.
		 */
		if (r->ckable && r->ckable[k] == CKABLE_WIDE && !tail)
			reader_ck_kick(r, k);
	}
	ret = udec_open_as(r, k, want == 0 || tail, out, err);
	/*
	 * A tail whose claim failed: a pass took the entry after the wait
	 * above looked (the indexer's, right after a mount).  Waiting for it
	 * beats decoding the whole entry beside it (twice the entry in all).
	 */
	if (ret == 0 && want > 0 && tail && !(*out)->run && reader_ck_wait(r, k, want) &&
	    (s = reader_ck_get(r, k))) {
		udec_close(*out);
		return udec_resume(r, k, s, ckpt_find(s, want), out, err);
	}
	return ret;
}
