/* SPDX-License-Identifier: MIT */
/*
 * Staged units (stage.h).  The buffer is reserved before it is allocated,
 * so the cache's budget holds while the pass runs: what the stages hold and
 * what the cache holds never pass it together.  It is the cache's own kind
 * of buffer: on the VMs we measure on, writing fresh pages twice (a staging
 * buffer, then the cache's copy) doubled the measuring pass's time.
 */
#include <string.h>

#include "bcache.h"
#include "stage.h"

void stage_budget_init(struct stage_budget *b, struct bcache *cache, uint64_t left,
		       uint64_t unit_max, const atomic_bool *when)
{
	pthread_mutex_init(&b->lock, NULL);
	b->cache = cache;
	b->left = left;
	b->unit_max = unit_max;
	b->when = when;
}

void stage_budget_destroy(struct stage_budget *b)
{
	pthread_mutex_destroy(&b->lock);
}

/* What a buffer of cap bytes reserves: what its entry will count. */
static size_t held(size_t cap)
{
	return cap + BCACHE_ENT_COST;
}

static void give_back(struct stage_budget *b, size_t cap)
{
	bcache_unreserve(b->cache, held(cap));
	pthread_mutex_lock(&b->lock);
	b->left += held(cap);
	pthread_mutex_unlock(&b->lock);
}

bool stage_begin(struct stage_budget *b, struct stage *s, uint64_t bound)
{
	bool asked = !b->when || atomic_load(b->when), ok;

	*s = (struct stage){ 0 };
	if (bound == 0 || bound > b->unit_max)
		return false;
	pthread_mutex_lock(&b->lock);
	ok = b->left >= held((size_t)bound);
	if (ok)
		b->left -= held((size_t)bound);
	pthread_mutex_unlock(&b->lock);
	if (!ok)
		return false;
	if ((asked ? bcache_reserve(b->cache, held((size_t)bound))
		   : bcache_reserve_spare(b->cache, held((size_t)bound))) < 0)
		return false; /* `left` stays spent: the cache has no room for more */
	s->buf = bcache_buf_alloc((size_t)bound);
	if (!s->buf) {
		give_back(b, (size_t)bound);
		return false;
	}
	s->cap = (size_t)bound;
	return true;
}

bool stage_room(struct stage *s, void **dst, size_t *cap)
{
	if (!s->buf || s->len == s->cap)
		return false;
	*dst = s->buf + s->len;
	*cap = s->cap - s->len;
	return true;
}

void stage_wrote(struct stage *s, size_t n)
{
	s->len += n;
}

void stage_copy(struct stage_budget *b, struct stage *s, const void *buf, size_t len)
{
	if (!s->buf)
		return;
	if (len > s->cap - s->len) {
		stage_drop(b, s);
		return;
	}
	memcpy(s->buf + s->len, buf, len);
	s->len += len;
}

void stage_drop(struct stage_budget *b, struct stage *s)
{
	if (s->buf) {
		bcache_buf_free(s->buf, s->cap);
		give_back(b, s->cap);
	}
	*s = (struct stage){ 0 };
}

void stage_place(struct stage_budget *b, struct stage *s, uint64_t id, uint64_t no, uint64_t len)
{
	struct bcache_ent *e;

	if (!s->buf || s->len != len || len == 0)
		goto drop;
	if (s->cap - s->len <= s->len / 8) {
		if (bcache_adopt(b->cache, id, no, s->buf, s->len, s->cap)) {
			*s = (struct stage){ 0 }; /* the cache's now, its reservation too */
			return;
		}
		goto drop;
	}
	if (bcache_claim(b->cache, id, no, s->len, &e) == 1) {
		memcpy(bcache_buf(e), s->buf, s->len);
		bcache_done(b->cache, e, 0);
		bcache_put(b->cache, e);
	}
drop:
	stage_drop(b, s);
}
