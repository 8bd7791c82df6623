/* SPDX-License-Identifier: MIT */
#include "zmctx.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "bcache.h"
#include "fmt.h"
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
	free(c);
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
