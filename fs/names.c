/* SPDX-License-Identifier: MIT */
#include "names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fmttab.h"

int names_strip(const char *name, char *out, size_t outlen)
{
	size_t len = strlen(name);
	char *vis = malloc(len + 8);
	int ok;

	/* the suffixes are the formats' (fmttab.h); the stem's rules are here */
	if (!vis || !fmttab_strip(name, vis, len + 8)) {
		free(vis);
		return 0;
	}
	/* "x.gz" needs a stem; "..gz" must not become "." */
	ok = vis[0] && strcmp(vis, ".") != 0 && strcmp(vis, "..") != 0 && strlen(vis) + 1 <= outlen;
	if (ok)
		strcpy(out, vis);
	free(vis);
	return ok;
}

struct claim {
	char *visible;
	size_t ent;
	int verdict; /* NAMES_SOUND or NAMES_DAMAGED */
};

/* The winner of a name sorts first: sound before damaged, then by source name. */
static int by_visible_then_source(const void *a, const void *b, void *ents)
{
	const struct claim *x = a, *y = b;
	const struct names_ent *e = ents;
	int c = strcmp(x->visible, y->visible);

	if (!c)
		c = (x->verdict > y->verdict) - (x->verdict < y->verdict);
	return c ? c : strcmp(e[x->ent].name, e[y->ent].name);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int names_resolve(struct names_ent *ents, size_t n, int (*is_archive)(void *ctx, size_t i),
		  void *ctx)
{
	const char **sorted = malloc((n + 1) * sizeof(*sorted));
	struct claim *claims = malloc((n + 1) * sizeof(*claims));
	size_t nclaims = 0;
	int ret = 0;

	if (!sorted || !claims) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		sorted[i] = ents[i].name;
		ents[i].visible = NULL;
	}
	qsort(sorted, n, sizeof(*sorted), by_name);

	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(ents[i].name) + 2;
		char *vis;
		const char *key;
		int verdict;

		if (!ents[i].candidate)
			continue;
		vis = malloc(len);
		if (!vis) {
			ret = -ENOMEM;
			goto out;
		}
		key = vis;
		verdict = NAMES_NOT;
		if (names_strip(ents[i].name, vis, len) &&
		    !bsearch(&key, sorted, n, sizeof(*sorted), by_name))
			verdict = is_archive(ctx, i);
		if (verdict != NAMES_SOUND && verdict != NAMES_DAMAGED) {
			free(vis);
			continue;
		}
		claims[nclaims].visible = vis;
		claims[nclaims].verdict = verdict;
		claims[nclaims++].ent = i;
	}
	qsort_r(claims, nclaims, sizeof(*claims), by_visible_then_source, ents);
	for (size_t i = 0, win = 0; i < nclaims; i++) {
		if (i > 0 && strcmp(claims[i].visible, claims[win].visible) == 0) {
			free(claims[i].visible); /* a loser: keeps its own name */
			continue;
		}
		win = i;
		ents[claims[i].ent].visible = claims[i].visible;
	}
	nclaims = 0;
out:
	for (size_t i = 0; i < nclaims; i++)
		free(claims[i].visible);
	free(claims);
	free(sorted);
	return ret;
}

void names_free(struct names_ent *ents, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(ents[i].visible);
		ents[i].visible = NULL;
	}
}

/* By suffix alone: an object's magic is checked when it is looked up (s3tree.h). */
static int by_suffix(void *ctx, size_t i)
{
	(void)ctx;
	(void)i;
	return NAMES_SOUND;
}

int names_resolve_suffix(const char *const *names, const bool *file, char **visible, size_t n)
{
	struct names_ent *ents = calloc(n + 1, sizeof(*ents));
	int ret;

	if (!ents)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		ents[i].name = names[i];
		ents[i].candidate = file[i];
	}
	ret = names_resolve(ents, n, by_suffix, NULL);
	if (ret < 0)
		names_free(ents, n);
	for (size_t i = 0; i < n; i++)
		visible[i] = ret < 0 ? NULL : ents[i].visible;
	free(ents);
	return ret;
}
