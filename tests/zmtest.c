/* SPDX-License-Identifier: MIT */
#include "zmtest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int zmtest_sh(const char *dir, const char *fmt, ...)
{
	char cmd[4096];
	int n, st;
	va_list ap;

	n = snprintf(cmd, sizeof(cmd), "cd '%s' && ", dir);
	if (n < 0 || (size_t)n >= sizeof(cmd))
		return -1;
	va_start(ap, fmt);
	n += vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	if ((size_t)n >= sizeof(cmd))
		return -1;
	st = system(cmd);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

void zmtest_join(char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "path too long: %s/%s\n", dir, name);
		abort();
	}
}

int zmtest_text(const char *path, size_t size, unsigned seed)
{
	static const char *words[] = { "block",	 "stream", "index", "padding", "check",
				       "the",	 "of",	   "a",	    "lzma",    "dictionary",
				       "zmount", "fuse",   "\n",    "offset",  "42" };
	uint32_t x = seed;
	size_t n = 0;
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	while (n < size) {
		const char *w;
		size_t len;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		w = words[x % (sizeof(words) / sizeof(words[0]))];
		len = strlen(w);
		if (len > size - n)
			len = size - n;
		fwrite(w, 1, len, f);
		n += len;
		if (n < size && w[0] != '\n') {
			fputc(' ', f);
			n++;
		}
	}
	return fclose(f);
}

uint64_t zmtest_crc64(const unsigned char *p, size_t n)
{
	uint64_t c = ~0ull;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0xC96C5795D7870F42ull : c >> 1;
	}
	return ~c;
}

uint8_t *zmtest_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	ck_assert_msg(f, "cannot open %s: %s", path, strerror(errno));
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

struct zsrc *zmtest_src_fd(int fd)
{
	struct zsrc *src;

	ck_assert_msg(fd >= 0, "no descriptor to make a source of");
	ck_assert_int_eq(zsrc_local(fd, &src), 0);
	return src;
}

struct zsrc *zmtest_src_open(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "cannot open %s: %s", path, strerror(errno));
	return zmtest_src_fd(fd);
}

Suite *zmtest_suite(const char *prog, const char *name, const struct zmtest_case *t, size_t n,
		    int timeout, int have_corpus, int *skipped)
{
	Suite *s = suite_create(name);

	if (skipped)
		*skipped = 0;
	for (size_t i = 0; i < n; i++) {
		TCase *tc;

		if (t[i].corpus && !have_corpus) {
			fprintf(stderr, "%s: SKIP: %s (needs the corpus)\n", prog, t[i].name);
			if (skipped)
				(*skipped)++;
			continue;
		}
		tc = tcase_create(t[i].name);
		tcase_set_timeout(tc, timeout);
		tcase_add_test(tc, t[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

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
