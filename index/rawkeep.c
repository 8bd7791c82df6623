/* SPDX-License-Identifier: MIT */
/*
 * How it works: a tee's next is the offset of the first byte it has not
 * yet kept or passed over; bytes before it that the pass reads again (a
 * header read twice) are ignored, and a read past it (which a pass from 0
 * never makes) keeps nothing.  Whether a chunk is kept is decided at its
 * first byte: a chunk passed over (no room then, or nobody waiting) is
 * skipped to its end, and the next one is decided afresh.
 */
#include "rawkeep.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bcache.h"

struct rawkeep {
	struct zsrc z;
	struct zsrc_ops ops; /* src's pinned and remote, our functions */
	struct zsrc *src;
	struct bcache *c;
	uint64_t id, base;
	uint64_t size; /* src's size at open */
	/* the tee's */
	uint64_t next;		 /* see above */
	uint64_t budget, kept;	 /* bytes it may keep; kept in finished chunks */
	uint64_t spare;		 /* and more, only into room the cache has spare */
	const atomic_bool *when; /* borrowed */
	struct bcache_ent *e;	 /* the chunk being filled, or NULL */
	bool full;		 /* the budget is spent: keeps nothing more */
};

static uint64_t chunk_len(const struct rawkeep *t, uint64_t k)
{
	uint64_t at = k * RAWKEEP_CHUNK;

	return t->size - at < RAWKEEP_CHUNK ? t->size - at : RAWKEEP_CHUNK;
}

/* Decides, at chunk k's first byte, whether to keep it: sets t->e if so. */
static void chunk_begin(struct rawkeep *t, uint64_t k)
{
	uint64_t len = chunk_len(t, k);
	bool spare = t->kept + len > t->budget;

	if (t->full || t->kept + len > t->budget + t->spare) {
		t->full = true;
		return;
	}
	if (t->when && !atomic_load(t->when))
		return;
	if ((spare ? bcache_claim_spare : bcache_claim)(t->c, t->id, t->base | k, (size_t)len,
							&t->e) != 1)
		t->e = NULL;
}

/* p holds the n bytes at t->next. */
static void keep(struct rawkeep *t, const unsigned char *p, uint64_t n)
{
	while (n) {
		uint64_t k = t->next / RAWKEEP_CHUNK, o = t->next % RAWKEEP_CHUNK;
		uint64_t len = chunk_len(t, k), m;

		if (o == 0 && !t->e)
			chunk_begin(t, k);
		m = len - o < n ? len - o : n;
		if (t->e)
			memcpy((unsigned char *)bcache_buf(t->e) + o, p, (size_t)m);
		t->next += m;
		p += m;
		n -= m;
		if (t->e && o + m == len) {
			bcache_done(t->c, t->e, 0);
			bcache_put(t->c, t->e);
			t->e = NULL;
			t->kept += len;
		}
	}
}

static ssize_t tee_pread(struct zsrc *z, void *buf, size_t len, uint64_t off)
{
	struct rawkeep *t = (struct rawkeep *)z;
	ssize_t n = zsrc_pread(t->src, buf, len, off);

	if (n > 0 && off <= t->next && off + (uint64_t)n > t->next && t->next < t->size) {
		uint64_t end = off + (uint64_t)n < t->size ? off + (uint64_t)n : t->size;

		keep(t, (const unsigned char *)buf + (t->next - off), end - t->next);
	}
	return n;
}

static ssize_t view_pread(struct zsrc *z, void *buf, size_t len, uint64_t off)
{
	struct rawkeep *v = (struct rawkeep *)z;
	uint64_t k = off / RAWKEEP_CHUNK, end;
	struct bcache_ent *e;
	size_t m;

	if (off >= v->size)
		return zsrc_pread(v->src, buf, len, off);
	end = k * RAWKEEP_CHUNK + chunk_len(v, k);
	m = end - off < len ? (size_t)(end - off) : len;
	if (bcache_lookup(v->c, v->id, v->base | k, &e) < 0)
		return zsrc_pread(v->src, buf, m, off);
	memcpy(buf, (const unsigned char *)bcache_buf(e) + (off - k * RAWKEEP_CHUNK), m);
	bcache_put(v->c, e);
	if (off + m == end && k > 0)
		bcache_demote(v->c, v->id, v->base | (k - 1));
	return (ssize_t)m;
}

static void view_hint(struct zsrc *z, uint64_t off, uint64_t len)
{
	struct rawkeep *v = (struct rawkeep *)z;

	while (len && off < v->size && bcache_has(v->c, v->id, v->base | (off / RAWKEEP_CHUNK))) {
		uint64_t next = (off / RAWKEEP_CHUNK + 1) * RAWKEEP_CHUNK;

		if (next - off >= len)
			return;
		len -= next - off;
		off = next;
	}
	if (len)
		zsrc_hint(v->src, off, len);
}

static void tee_hint(struct zsrc *z, uint64_t off, uint64_t len)
{
	zsrc_hint(((struct rawkeep *)z)->src, off, len);
}

static int keep_stat(struct zsrc *z, struct stat *st)
{
	return zsrc_stat(((struct rawkeep *)z)->src, st);
}

static void keep_tag(struct zsrc *z, char buf[ZSRC_TAG_MAX])
{
	zsrc_tag(((struct rawkeep *)z)->src, buf);
}

static void keep_free(struct zsrc *z)
{
	struct rawkeep *t = (struct rawkeep *)z;

	if (t->e) /* a chunk the pass left part-filled */
		bcache_done(t->c, t->e, -ECANCELED);
	zsrc_put(t->src);
	free(t);
}

static int make(struct bcache *c, uint64_t id, uint64_t base, struct zsrc *src, bool tee,
		struct rawkeep **out)
{
	struct rawkeep *t = calloc(1, sizeof(*t));
	int ret;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->ops = (struct zsrc_ops){ .pread = tee ? tee_pread : view_pread,
				    .stat = keep_stat,
				    .tag = keep_tag,
				    .hint = tee ? tee_hint : view_hint,
				    .free = keep_free };
	ret = zsrc_wrap(&t->z, &t->ops, src, &t->src, &t->size);
	if (ret < 0) {
		free(t);
		return ret;
	}
	t->c = c;
	t->id = id;
	t->base = base;
	*out = t;
	return 0;
}

int rawkeep_tee(struct bcache *c, uint64_t id, uint64_t base, struct zsrc *src, uint64_t budget,
		uint64_t spare, const atomic_bool *when, struct zsrc **out)
{
	struct rawkeep *t;
	int ret = make(c, id, base, src, true, &t);

	*out = NULL;
	if (ret < 0)
		return ret;
	t->budget = budget;
	t->spare = spare;
	t->when = when;
	*out = &t->z;
	return 0;
}

uint64_t rawkeep_kept(struct zsrc *tee)
{
	return ((struct rawkeep *)tee)->kept;
}

int rawkeep_view(struct bcache *c, uint64_t id, uint64_t base, struct zsrc *src, struct zsrc **out)
{
	struct rawkeep *v;
	int ret = make(c, id, base, src, false, &v);

	*out = ret < 0 ? NULL : &v->z;
	return ret;
}

struct zsrc *rawkeep_under(struct zsrc *s)
{
	return s && s->ops->pread == view_pread ? ((struct rawkeep *)s)->src : s;
}
