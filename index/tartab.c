/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tartab.h"

void tartab_init(struct tartab *t, size_t max_bytes)
{
	memset(t, 0, sizeof(*t));
	t->max_bytes = max_bytes;
}

void tartab_free(struct tartab *t)
{
	size_t max;

	if (!t)
		return;
	max = t->max_bytes;
	free(t->m);
	free(t->str);
	free(t->sp);
	tartab_init(t, max);
}

size_t tartab_bytes(const struct tartab *t)
{
	return t->n * sizeof(struct tar_member) + t->str_len + t->sp_n * sizeof(struct tar_extent);
}

int tartab_name_check(const char *path, size_t len, char *out, const char **why)
{
	size_t i = 0, o = 0;

	if (len >= PATH_MAX)
		return *why = "a name longer than PATH_MAX", -1;
	if (memchr(path, 0, len))
		return *why = "a NUL inside the name", -1;
	if (len > 0 && path[0] == '/')
		return *why = "an absolute name", -1;
	while (i < len) {
		size_t j = i;

		while (j < len && path[j] != '/')
			j++;
		if (j - i == 2 && path[i] == '.' && path[i + 1] == '.')
			return *why = "a \"..\" segment in the name", -1;
		if (j > i && !(j - i == 1 && path[i] == '.')) {
			if (o > 0)
				out[o++] = '/';
			memcpy(out + o, path + i, j - i);
			o += j - i;
		}
		i = j + 1;
	}
	out[o] = 0;
	return (int)o;
}

/* Grows *p (elements of size sz, *cap of them) to hold need; 0 or -ENOMEM. */
static int grow(void **p, size_t *cap, size_t need, size_t sz)
{
	size_t c = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * sz);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* Appends s (len bytes) and a NUL to the pool, at *off. */
static void put_str(struct tartab *t, const char *s, size_t len, uint32_t *off)
{
	*off = (uint32_t)t->str_len;
	memcpy(t->str + t->str_len, s, len);
	t->str[t->str_len + len] = 0;
	t->str_len += len + 1;
}

/* uname/gname: shared with the previous member's when equal, which is the usual case. */
static size_t owner_need(const struct tartab *t, uint32_t last, const char *s)
{
	if (t->n > 0 && strcmp(t->str + last, s) == 0)
		return 0;
	return strlen(s) + 1;
}

static void put_owner(struct tartab *t, uint32_t *last, const char *s, uint32_t *off)
{
	if (t->n > 0 && strcmp(t->str + *last, s) == 0) {
		*off = *last;
		return;
	}
	put_str(t, s, strlen(s), off);
	*last = *off;
}

int tartab_add(struct tartab *t, const struct tar_member *m, const char *name, const char *link,
	       size_t link_len, const char *uname, const char *gname, const struct tar_extent *sp,
	       size_t sp_n)
{
	size_t name_len = strlen(name), ext = m->flags & TAR_SPARSE ? sp_n : 0;
	size_t need = name_len + 1 + (link_len ? link_len + 1 : 0) +
		      owner_need(t, t->last_uname, uname) + owner_need(t, t->last_gname, gname);
	size_t after = tartab_bytes(t) + sizeof(*m) + need + ext * sizeof(*sp);
	struct tar_member *d;

	if ((t->max_bytes && after > t->max_bytes) || t->str_len + need > UINT32_MAX ||
	    t->sp_n + ext > UINT32_MAX)
		return -E2BIG;
	if (grow((void **)&t->m, &t->m_cap, t->n + 1, sizeof(*m)) ||
	    grow((void **)&t->str, &t->str_cap, t->str_len + need, 1) ||
	    grow((void **)&t->sp, &t->sp_cap, t->sp_n + ext, sizeof(*sp)))
		return -ENOMEM;
	d = &t->m[t->n];
	*d = *m;
	put_str(t, name, name_len, &d->name);
	d->name_len = (uint32_t)name_len;
	d->link = d->link_len = 0;
	if (link_len) {
		put_str(t, link, link_len, &d->link);
		d->link_len = (uint32_t)link_len;
	}
	put_owner(t, &t->last_uname, uname, &d->uname);
	put_owner(t, &t->last_gname, gname, &d->gname);
	d->sp = (uint32_t)t->sp_n;
	d->sp_n = (uint32_t)ext;
	if (ext)
		memcpy(t->sp + t->sp_n, sp, ext * sizeof(*sp));
	t->sp_n += ext;
	t->n++;
	return 0;
}

void tartab_pop(struct tartab *t)
{
	const struct tar_member *d;

	if (t->n == 0)
		return;
	d = &t->m[--t->n];
	t->str_len = d->name; /* its strings were the last ones put */
	t->sp_n = d->sp;
	/* the owners the next member shares are the member's before it, as they were */
	t->last_uname = t->n ? t->m[t->n - 1].uname : 0;
	t->last_gname = t->n ? t->m[t->n - 1].gname : 0;
}

/* The extent holding off or the first after it (binary search), or sp_n. */
static size_t extent_at(const struct tar_extent *e, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e[mid].off + e[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int tartab_locate(const struct tartab *t, const struct tar_member *m, uint64_t off, uint64_t *aoff,
		  uint64_t *run)
{
	const struct tar_extent *e;
	uint64_t before = 0;
	size_t k;

	if (off >= m->size)
		return -1;
	if (!(m->flags & TAR_SPARSE)) {
		*aoff = m->data_off + off;
		*run = m->size - off;
		return 1;
	}
	/* a member all hole may have no extents, and a table none at all: no arithmetic on NULL */
	if (m->sp_n == 0) {
		*run = m->size - off;
		return 0;
	}
	e = t->sp + m->sp;
	k = extent_at(e, m->sp_n, off);
	if (k == m->sp_n || off < e[k].off) {
		*run = (k == m->sp_n ? m->size : e[k].off) - off;
		return 0;
	}
	/* The stored bytes of extents before k: a sum, as the map holds no running total. */
	for (size_t i = 0; i < k; i++)
		before += e[i].len;
	*aoff = m->data_off + before + (off - e[k].off);
	*run = e[k].off + e[k].len - off;
	return 1;
}

const struct tar_member *tartab_link_target(const struct tartab *t, size_t i)
{
	const struct tar_member *m = &t->m[i];
	const char *want = t->str + m->link;

	if (m->type != TAR_HARDLINK)
		return NULL;
	while (i-- > 0) {
		const struct tar_member *c = &t->m[i];

		if (c->name_len == m->link_len && memcmp(t->str + c->name, want, c->name_len) == 0)
			return c->type == TAR_FILE ? c : NULL;
	}
	return NULL;
}

const char *tartab_extents_check(const struct tar_extent *e, size_t n, uint64_t size,
				 uint64_t stored)
{
	uint64_t end = 0, sum = 0;

	for (size_t i = 0; i < n; i++) {
		if (e[i].off < end || e[i].len > size || e[i].off > size - e[i].len)
			return "a sparse map with extents out of order or past the file's size";
		end = e[i].off + e[i].len;
		sum += e[i].len;
	}
	return sum == stored ? NULL : "a sparse map whose extents do not add up to the stored data";
}
