/* SPDX-License-Identifier: MIT */
/*
 * The store handle (idxstore.h): what an implementation gave, and a name.
 */
#include "idxstore.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct idxstore {
	const struct idxstore_ops *ops;
	void *ctx;
	void (*close)(void *ctx);
	char name[];
};

int idxstore_new(const char *name, const struct idxstore_ops *ops, void *ctx,
		 void (*close)(void *ctx), struct idxstore **out)
{
	size_t n = name ? strlen(name) : 0;
	struct idxstore *st;

	*out = NULL;
	if (!ops || !n)
		return -EINVAL;
	st = malloc(sizeof(*st) + n + 1);
	if (!st)
		return -ENOMEM;
	st->ops = ops;
	st->ctx = ctx;
	st->close = close;
	memcpy(st->name, name, n + 1);
	*out = st;
	return 0;
}

void idxstore_free(struct idxstore *st)
{
	if (!st)
		return;
	if (st->close)
		st->close(st->ctx);
	free(st);
}

const char *idxstore_name(const struct idxstore *st)
{
	return st->name;
}

const struct idxstore_ops *idxstore_ops_of(const struct idxstore *st)
{
	return st->ops;
}

void *idxstore_ctx(const struct idxstore *st)
{
	return st->ctx;
}
