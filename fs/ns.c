/* SPDX-License-Identifier: MIT */
#include "ns.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void ns_entry_clear(struct ns_entry *e)
{
	free(e->id);
	free(e->tag);
	e->id = NULL;
	e->tag = NULL;
}

int ns_entry_copy(struct ns_entry *dst, const struct ns_entry *src)
{
	*dst = *src;
	dst->id = src->id ? strdup(src->id) : NULL;
	dst->tag = src->tag ? strdup(src->tag) : NULL;
	if ((src->id && !dst->id) || (src->tag && !dst->tag)) {
		ns_entry_clear(dst);
		return -ENOMEM;
	}
	return 0;
}
