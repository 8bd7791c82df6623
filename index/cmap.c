/* SPDX-License-Identifier: MIT */
#include "cmap.h"

#include <errno.h>
#include <stdlib.h>

int cmap_init(struct cmap *m, size_t max)
{
	m->n = 0;
	m->start = calloc(max + 1, sizeof(*m->start));
	return m->start ? 0 : -ENOMEM;
}

void cmap_add(struct cmap *m, uint64_t off)
{
	if (m->n > 0 && m->start[m->n - 1] == off)
		return;
	m->start[m->n++] = off;
}

void cmap_end(struct cmap *m, uint64_t total)
{
	while (m->n > 0 && m->start[m->n - 1] >= total)
		m->n--;
	m->start[m->n] = total;
}

size_t cmap_find(const struct cmap *m, uint64_t off)
{
	size_t lo = 0, hi = m->n; /* answer in [lo, hi) */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->start[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void cmap_free(struct cmap *m)
{
	free(m->start);
	m->start = NULL;
	m->n = 0;
}
