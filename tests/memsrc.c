/* SPDX-License-Identifier: MIT */
#include "memsrc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ssize_t mem_pread(struct zsrc *s, void *buf, size_t len, uint64_t off)
{
	struct memsrc *m = (struct memsrc *)s;
	unsigned call = atomic_fetch_add(&m->calls, 1);

	if (off > INT64_MAX)
		return -EINVAL;
	if (m->estale)
		return -ESTALE;
	if (m->err && off < m->err_hi && off + len > m->err_lo)
		return m->err;
	if (off >= m->len)
		return 0;
	if (len > m->len - off)
		len = (size_t)(m->len - off);
	/* 1..short_max, in an order that is not a cycle of the callers' sizes */
	if (m->short_max && len > 1 + (call * 7919u) % m->short_max)
		len = 1 + (call * 7919u) % m->short_max;
	memcpy(buf, m->data + off, len);
	return (ssize_t)len;
}

static int mem_stat(struct zsrc *s, struct stat *st)
{
	*st = ((struct memsrc *)s)->st;
	return 0;
}

static void mem_free(struct zsrc *s)
{
	atomic_fetch_add(&((struct memsrc *)s)->frees, 1);
}

/* Keeps the last hint (tests read it when no other thread hints). */
static void mem_hint(struct zsrc *s, uint64_t off, uint64_t len)
{
	struct memsrc *m = (struct memsrc *)s;

	m->hint_off = off;
	m->hint_len = len;
}

static void mem_tag(struct zsrc *s, char buf[ZSRC_TAG_MAX])
{
	memcpy(buf, ((struct memsrc *)s)->tag, ZSRC_TAG_MAX);
}

static const struct zsrc_ops mem_ops = {
	.pread = mem_pread,
	.stat = mem_stat,
	.tag = mem_tag,
	.hint = mem_hint,
	.free = mem_free,
};

static unsigned char *copy(const void *data, size_t len)
{
	unsigned char *p = malloc(len ? len : 1);

	if (!p)
		abort();
	memcpy(p, data, len);
	return p;
}

struct memsrc *memsrc_new(const void *data, size_t len)
{
	static atomic_uint next_ino = 1;
	struct memsrc *m = calloc(1, sizeof(*m));

	if (!m)
		abort();
	zsrc_init(&m->s, &mem_ops);
	m->data = copy(data, len);
	m->len = len;
	m->st.st_mode = S_IFREG | 0444;
	m->st.st_nlink = 1;
	m->st.st_dev = 0x5a;
	m->st.st_ino = atomic_fetch_add(&next_ino, 1);
	m->st.st_size = (off_t)len;
	m->st.st_mtim.tv_sec = 1000000000;
	m->st.st_ctim = m->st.st_mtim;
	return m;
}

void memsrc_short(struct memsrc *m, unsigned short_max)
{
	m->short_max = short_max;
}

void memsrc_fail(struct memsrc *m, uint64_t lo, uint64_t hi, int err)
{
	m->err_lo = lo;
	m->err_hi = hi;
	m->err = err;
}

void memsrc_change(struct memsrc *m, const void *data, size_t len, unsigned how)
{
	free(m->data);
	m->data = copy(data, len);
	m->len = len;
	if (how & MEMSRC_STAT) {
		m->st.st_size = (off_t)len;
		m->st.st_mtim.tv_sec += 60;
		m->st.st_ctim = m->st.st_mtim;
	}
	m->estale = how & MEMSRC_ESTALE;
}

void memsrc_set_tag(struct memsrc *m, const char *tag)
{
	snprintf(m->tag, sizeof(m->tag), "%s", tag);
}

unsigned memsrc_frees(struct memsrc *m)
{
	return atomic_load(&m->frees);
}

void memsrc_destroy(struct memsrc *m)
{
	if (m) {
		free(m->data);
		free(m);
	}
}
