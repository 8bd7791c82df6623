/* SPDX-License-Identifier: MIT */
#include "tarview.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int path_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

/* Sorted by path, then by member index, so the last of equal paths is the one tar -x keeps. */
static int node_cmp(const void *x, const void *y)
{
	const struct tarview_node *a = x, *b = y;
	int c = path_cmp(a->p, a->len, b->p, b->len);

	return c ? c : (a->mem > b->mem) - (a->mem < b->mem);
}

/* The root, every member's path and each of its parents' paths, before merging. */
static size_t gathered(const struct tartab *t)
{
	size_t cap = 1;

	for (size_t i = 0; i < t->n; i++) {
		const char *p = tartab_name(t, &t->m[i]);

		cap++;
		for (const char *s = strchr(p, '/'); s; s = strchr(s + 1, '/'))
			cap++;
	}
	return cap;
}

size_t tarview_cost(const struct tartab *t)
{
	/* the nodes, then kid0, kids and link_kids' fill: 4 bytes each per node */
	return gathered(t) * (sizeof(struct tarview_node) + 3 * sizeof(uint32_t)) + 8;
}

/* Every member's path and each of its parents' paths, plus the root: at most *n. */
static struct tarview_node *gather(const struct tartab *t, size_t *n)
{
	size_t cap = gathered(t), k = 0;
	struct tarview_node *v;

	v = calloc(cap, sizeof(*v));
	if (!v)
		return NULL;
	v[k++] = (struct tarview_node){ .p = "", .len = 0, .mem = -1 };
	for (size_t i = 0; i < t->n; i++) {
		const char *p = tartab_name(t, &t->m[i]);

		for (const char *s = strchr(p, '/'); s; s = strchr(s + 1, '/'))
			v[k++] = (struct tarview_node){ .p = p,
							.len = (uint32_t)(s - p),
							.mem = -1 };
		v[k++] =
			(struct tarview_node){ .p = p, .len = t->m[i].name_len, .mem = (int32_t)i };
	}
	*n = k;
	return v;
}

/* Keeps the last of each run of equal paths (sorted): the member tar -x would leave. */
static size_t dedupe(struct tarview_node *v, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++) {
		if (out && path_cmp(v[out - 1].p, v[out - 1].len, v[i].p, v[i].len) == 0)
			out--;
		v[out++] = v[i];
	}
	return out;
}

long tarview_find(const struct tarview *v, const char *path, size_t len)
{
	size_t lo = 0, hi = v->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = path_cmp(v->v[mid].p, v->v[mid].len, path, len);

		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Parents by their paths, then the child lists by counting. */
static int link_kids(struct tarview *v)
{
	uint32_t *fill;

	v->kid0 = calloc(v->n + 1, sizeof(*v->kid0));
	v->kids = malloc((v->n ? v->n : 1) * sizeof(*v->kids));
	fill = calloc(v->n + 1, sizeof(*fill));
	if (!v->kid0 || !v->kids || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (size_t k = 1; k < v->n; k++) {
		struct tarview_node *d = &v->v[k];
		const char *s = memrchr(d->p, '/', d->len);
		size_t plen = s ? (size_t)(s - d->p) : 0;

		d->name = s ? (uint32_t)plen + 1 : 0;
		/* every parent path was gathered: the lookup cannot fail */
		d->parent = (uint32_t)tarview_find(v, d->p, plen);
		v->kid0[d->parent + 1]++;
	}
	for (size_t k = 0; k < v->n; k++)
		v->kid0[k + 1] += v->kid0[k];
	for (size_t k = 1; k < v->n; k++) {
		uint32_t p = v->v[k].parent;

		v->kids[v->kid0[p] + fill[p]++] = (uint32_t)k;
	}
	free(fill);
	return 0;
}

int tarview_build(const struct tartab *t, struct tarview *out)
{
	memset(out, 0, sizeof(*out));
	out->v = gather(t, &out->n);
	if (!out->v)
		return -ENOMEM;
	qsort(out->v, out->n, sizeof(*out->v), node_cmp);
	out->n = dedupe(out->v, out->n);
	if (link_kids(out) < 0) {
		tarview_free(out);
		return -ENOMEM;
	}
	return 0;
}

void tarview_free(struct tarview *v)
{
	free(v->v);
	free(v->kids);
	free(v->kid0);
	memset(v, 0, sizeof(*v));
}

const struct tar_member *tarview_data(const struct tartab *t, const struct tarview *v, size_t k)
{
	int32_t i = v->v[k].mem;

	if (i < 0)
		return NULL;
	if (t->m[i].type == TAR_HARDLINK)
		return tartab_link_target(t, (size_t)i);
	return &t->m[i];
}
