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
};

void udec_close(struct udec *d)
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
int udec_open(struct reader *r, size_t k, struct udec **out, struct zerr *err)
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

ssize_t udec_read(struct reader *r, struct udec *d, void *buf, size_t len, struct zerr *err)
{
	if (d->ck)
		return ckpt_dec_read(d->ck, r->src, buf, len, err);
	return d->f->dec_read(d->d, r->src, buf, len, err);
}

/* Bytes returned since the start of its map entry. */
uint64_t udec_tell(const struct udec *d)
{
	return d->ck ? ckpt_dec_tell(d->ck) : d->f->dec_tell(d->d);
}

static size_t udec_cost(const struct udec *d)
{
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
	d = udec_unpark(r, k);

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
		if (r->ckable && r->ckable[k] == CKABLE_WIDE)
			reader_ck_kick(r, k);
	}
	return udec_open(r, k, out, err);
}
