/* SPDX-License-Identifier: MIT */
#include "zmctx.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bcache.h"
#include "fmt.h"
#include "spill.h"
#include "zerr.h"
#include "zmctx_int.h"

int zmctx_new(size_t cache_size, struct zmctx **out)
{
	struct zmctx *c = calloc(1, sizeof(*c));
	int ret;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	atomic_init(&c->next_id, 1);
	pthread_mutex_init(&c->damage_lock, NULL);
	pthread_mutex_init(&c->pass_lock, NULL);
	pthread_mutex_init(&c->spill_lock, NULL);
	atomic_flag_clear(&c->save_failed_logged);
	atomic_flag_clear(&c->untrusted_logged);
	c->log_max = ZLOG_DEBUG;
	ret = bcache_new(cache_size, &c->cache);
	park_init(&c->parked, c->cache); /* without a cache it stays empty: zmctx_free drains it */
	if (ret < 0)
		goto fail;
	for (int id = 1; id <= fmttab_count(); id++)
		if (fmt_get(id)->ctx_new && fmt_get(id)->ctx_new(&c->fstate[id]) < 0)
			goto fail;
	*out = c;
	return 0;
fail:
	zmctx_free(c);
	return -ENOMEM;
}

void zmctx_set_pool(struct zmctx *c, struct pool *pool)
{
	c->pool = pool;
}

void zmctx_free(struct zmctx *c)
{
	if (!c)
		return;
	park_drain(&c->parked); /* empty by now (reader_close unparks); the lock goes */
	bcache_free(c->cache);
	for (int id = 1; id <= fmttab_count(); id++)
		if (fmt_get(id)->ctx_free)
			fmt_get(id)->ctx_free(c->fstate[id]);
	for (size_t i = 0; i < c->nnoted; i++) {
		free(c->noted[i].name);
		free(c->noted[i].why);
	}
	free(c->noted);
	spill_free(c->spill); /* after the cache and the readers: no set is left */
	pthread_mutex_destroy(&c->spill_lock);
	pthread_mutex_destroy(&c->damage_lock);
	pthread_mutex_destroy(&c->pass_lock);
	free(c);
}

struct spill *zmctx_spill(struct zmctx *c, const char *dir)
{
	struct spill *sp;

	pthread_mutex_lock(&c->spill_lock);
	if (!c->spill)
		(void)spill_open(dir,
				 &c->spill); /* no file yet (dir not made): the next set tries */
	sp = c->spill && strcmp(spill_dir(c->spill), dir) == 0 ? c->spill : NULL;
	pthread_mutex_unlock(&c->spill_lock);
	return sp;
}

struct bcache *zmctx_cache(const struct zmctx *c)
{
	return c->cache;
}

void zmctx_set_log(struct zmctx *c, zmctx_log_fn fn, void *user, enum zlog_level max)
{
	c->log = fn;
	c->log_user = user;
	c->log_max = fn ? max : ZLOG_DEBUG;
}

void zmctx_vlog(struct zmctx *c, enum zlog_level level, const char *name, const struct zerr *why,
		const char *fmt, va_list ap)
{
	char text[1024];

	/* Dropped before formatting: a debug line per decoded unit is the common case. */
	if (level > c->log_max || (!c->log && !zlog_wants(level)))
		return;
	vsnprintf(text, sizeof(text), fmt, ap);
	if (c->log)
		c->log(c->log_user, level, name, text, why);
	else if (name)
		zlog(level, "%s: %s", name, text);
	else
		zlog(level, "%s", text);
}

void zmctx_log(struct zmctx *c, enum zlog_level level, const char *name, const struct zerr *why,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	zmctx_vlog(c, level, name, why, fmt, ap);
	va_end(ap);
}

void zmctx_note_damaged(struct zmctx *c, const char *name, const char *why)
{
	struct zmctx_noted e;
	size_t i;

	pthread_mutex_lock(&c->damage_lock);
	for (i = 0; i < c->nnoted && strcmp(c->noted[i].name, name) != 0; i++)
		;
	if (i < c->nnoted) {
		/* noted before: not counted again; it moves to the end with its new reason */
		char *w = strdup(why);

		e = c->noted[i];
		if (w) {
			free(e.why);
			e.why = w;
		}
		memmove(&c->noted[i], &c->noted[i + 1], (c->nnoted - i - 1) * sizeof(e));
		c->noted[c->nnoted - 1] = e;
		pthread_mutex_unlock(&c->damage_lock);
		return;
	}
	atomic_fetch_add(&c->stats.ixerr, 1);
	if (c->nnoted == c->noted_cap && c->noted_cap < ZMCTX_DAMAGE_MAX) {
		size_t cap = c->noted_cap ? 2 * c->noted_cap : 8;
		struct zmctx_noted *grown = realloc(c->noted, cap * sizeof(*grown));

		if (grown) {
			c->noted = grown;
			c->noted_cap = cap;
		}
	}
	e.name = strdup(name);
	e.why = strdup(why);
	if (c->nnoted < c->noted_cap && e.name && e.why) {
		c->noted[c->nnoted++] = e;
	} else {
		free(e.name);
		free(e.why);
	}
	pthread_mutex_unlock(&c->damage_lock);
}

size_t zmctx_damaged(struct zmctx *c, struct zmctx_damage *out, size_t n)
{
	size_t k = 0;

	pthread_mutex_lock(&c->damage_lock);
	for (size_t i = c->nnoted; i > 0 && k < n; i--, k++) {
		snprintf(out[k].name, sizeof(out[k].name), "%s", c->noted[i - 1].name);
		snprintf(out[k].why, sizeof(out[k].why), "%s", c->noted[i - 1].why);
	}
	pthread_mutex_unlock(&c->damage_lock);
	return k;
}

struct zmctx_slot *zmctx_pass_begin(struct zmctx *c, const char *name, const char *what,
				    uint64_t total)
{
	struct zmctx_slot *s = NULL;

	pthread_mutex_lock(&c->pass_lock);
	for (size_t i = 0; i < ZMCTX_PASSES && !s; i++)
		if (!c->passes[i].used)
			s = &c->passes[i];
	if (s) {
		s->used = true;
		snprintf(s->name, sizeof(s->name), "%s", name);
		snprintf(s->what, sizeof(s->what), "%s", what);
		s->total = total;
		clock_gettime(CLOCK_MONOTONIC, &s->t0);
		atomic_store(&s->done, 0);
	}
	pthread_mutex_unlock(&c->pass_lock);
	return s;
}

void zmctx_pass_add(struct zmctx_slot *s, uint64_t n)
{
	if (s)
		atomic_fetch_add_explicit(&s->done, n, memory_order_relaxed);
}

void zmctx_pass_set(struct zmctx_slot *s, uint64_t done)
{
	if (s)
		atomic_store_explicit(&s->done, done, memory_order_relaxed);
}

void zmctx_pass_end(struct zmctx *c, struct zmctx_slot *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&c->pass_lock);
	s->used = false;
	pthread_mutex_unlock(&c->pass_lock);
}

size_t zmctx_passes(struct zmctx *c, const char *name, struct zmctx_pass *out, size_t n)
{
	struct timespec now;
	size_t k = 0;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&c->pass_lock);
	for (size_t i = 0; i < ZMCTX_PASSES && k < n; i++) {
		const struct zmctx_slot *s = &c->passes[i];

		if (!s->used || (name && strcmp(s->name, name) != 0))
			continue;
		snprintf(out[k].name, sizeof(out[k].name), "%s", s->name);
		snprintf(out[k].what, sizeof(out[k].what), "%s", s->what);
		out[k].total = s->total;
		out[k].done = atomic_load_explicit(&s->done, memory_order_relaxed);
		out[k].secs = (double)(now.tv_sec - s->t0.tv_sec) +
			      (double)(now.tv_nsec - s->t0.tv_nsec) / 1e9;
		k++;
	}
	pthread_mutex_unlock(&c->pass_lock);
	return k;
}
