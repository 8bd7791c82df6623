/* SPDX-License-Identifier: MIT */
/*
 * pax extended header records ("LEN KEY=VALUE\n", LEN counting the whole
 * record) and the GNU sparse maps that travel in them (0.0: repeated
 * GNU.sparse.offset/numbytes; 0.1: GNU.sparse.map) or in the member's
 * data (1.0: decimal lines, the count first).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarscan_int.h"

int tarscan_fail(struct tarscan *s, int ret, uint64_t coff, const char *fmt, ...)
{
	va_list ap;

	s->state = TS_ERR;
	s->err = ret;
	s->why.coff = coff;
	s->why.cut = 0;
	va_start(ap, fmt);
	vsnprintf(s->why.msg, sizeof(s->why.msg), fmt, ap);
	va_end(ap);
	return ret;
}

void tarscan_pax_clear(struct pax *p)
{
	free(p->path.p);
	free(p->linkpath.p);
	free(p->uname.p);
	free(p->gname.p);
	free(p->spname.p);
	memset(p, 0, sizeof(*p));
	p->major = -1;
}

/* A decimal without sign, whole; 0 or -1. */
static int dec_u64(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;

	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9' || x > (UINT64_MAX - 9) / 10)
			return -1;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return 0;
}

/* "[-]SECONDS[.FRACTION]": nanoseconds kept, further digits dropped. */
static int dec_time(const char *v, size_t n, int64_t *sec, uint32_t *ns)
{
	size_t dot = 0, neg = n > 0 && v[0] == '-';
	uint64_t whole, frac = 0, scale = 1000000000;

	while (neg + dot < n && v[neg + dot] != '.')
		dot++;
	if (dec_u64(v + neg, dot, &whole) || whole > INT64_MAX)
		return -1;
	for (size_t i = neg + dot + 1; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		if (scale > 1) {
			scale /= 10;
			frac += (uint64_t)(v[i] - '0') * scale;
		}
	}
	*sec = neg ? -(int64_t)whole : (int64_t)whole;
	*ns = (uint32_t)frac;
	if (neg && frac) {
		*sec -= 1;
		*ns = (uint32_t)(1000000000 - frac);
	}
	return 0;
}

static int set_str(struct pax_str *d, const char *v, size_t n)
{
	char *p = malloc(n + 1);

	if (!p)
		return -ENOMEM;
	memcpy(p, v, n);
	p[n] = 0;
	free(d->p);
	d->p = p;
	d->len = n;
	return 0;
}

int tarscan_map_add(struct tarscan *s, uint64_t off, uint64_t len)
{
	if (s->map_n >= TARSCAN_SPARSE_MAX) {
		s->map_bad = true;
		s->map_why = "a sparse map of more extents than the scanner keeps";
		return 0;
	}
	if (s->map_n == s->map_cap) {
		size_t c = s->map_cap ? s->map_cap * 2 : 16;
		struct tar_extent *m = realloc(s->map, c * sizeof(*m));

		if (!m)
			return -ENOMEM;
		s->map = m;
		s->map_cap = c;
	}
	s->map[s->map_n].off = off;
	s->map[s->map_n].len = len;
	s->map_n++;
	return 0;
}

/* GNU.sparse.map "OFF,LEN,OFF,LEN...". */
static int map_list(struct tarscan *s, const char *v, size_t n)
{
	size_t i = 0;
	uint64_t num[2];
	int k = 0, ret;

	while (i <= n) {
		size_t j = i;

		while (j < n && v[j] != ',')
			j++;
		if (dec_u64(v + i, j - i, &num[k])) {
			s->map_bad = true;
			s->map_why = "a bad number in GNU.sparse.map";
			return 0;
		}
		if (++k == 2) {
			if ((ret = tarscan_map_add(s, num[0], num[1])) < 0)
				return ret;
			k = 0;
		}
		i = j + 1;
	}
	if (k) {
		s->map_bad = true;
		s->map_why = "an odd count of numbers in GNU.sparse.map";
	}
	return 0;
}

/* The GNU.sparse.* keys; 0, 1 (not one of them), or -ENOMEM. */
static int pax_sparse(struct tarscan *s, struct pax *p, const char *k, const char *v, size_t n)
{
	uint64_t x = 0;
	int num = dec_u64(v, n, &x) == 0;

	if (strncmp(k, "GNU.sparse.", 11) != 0)
		return 1;
	k += 11;
	p->set |= PAX_SPARSE;
	if (strcmp(k, "name") == 0) {
		p->set |= PAX_SPNAME;
		return set_str(&p->spname, v, n);
	}
	if (strcmp(k, "map") == 0)
		return map_list(s, v, n);
	if (strcmp(k, "offset") == 0)
		return num ? tarscan_map_add(s, x, 0) : (s->map_bad = true, 0);
	if (strcmp(k, "numbytes") == 0) {
		if (num && s->map_n > 0)
			s->map[s->map_n - 1].len = x;
		else
			s->map_bad = true;
		return 0;
	}
	if (strcmp(k, "size") == 0 || strcmp(k, "realsize") == 0) {
		p->set |= PAX_REALSIZE;
		p->realsize = x;
		if (!num)
			s->map_bad = true;
	} else if (strcmp(k, "major") == 0) {
		p->major = num && x < 100 ? (int)x : 99;
	}
	return 0;
}

/* One record: key k (NUL-terminated), value v of n bytes.  0, -1 (a bad value), -ENOMEM. */
static int pax_apply(struct tarscan *s, struct pax *p, const char *k, const char *v, size_t n)
{
	static const struct {
		const char *key;
		unsigned bit;
	} keys[] = { { "path", PAX_PATH },   { "linkpath", PAX_LINKPATH }, { "size", PAX_SIZE },
		     { "mtime", PAX_MTIME }, { "uid", PAX_UID },	   { "gid", PAX_GID },
		     { "uname", PAX_UNAME }, { "gname", PAX_GNAME } };
	unsigned bit = 0;
	int ret;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(k, keys[i].key) == 0)
			bit = keys[i].bit;
	if (!bit)
		return pax_sparse(s, p, k, v, n) < 0 ? -ENOMEM : 0;
	/* An empty value undoes the key: the header's field counts again. */
	if (n == 0) {
		p->set &= ~bit;
		return 0;
	}
	p->set |= bit;
	if (bit == PAX_PATH || bit == PAX_LINKPATH || bit == PAX_UNAME || bit == PAX_GNAME) {
		struct pax_str *d = bit == PAX_PATH	  ? &p->path
				    : bit == PAX_LINKPATH ? &p->linkpath
				    : bit == PAX_UNAME	  ? &p->uname
							  : &p->gname;

		ret = set_str(d, v, n);
		return ret;
	}
	if (bit == PAX_MTIME)
		return dec_time(v, n, &p->mtime, &p->mtime_ns);
	return dec_u64(v, n, bit == PAX_SIZE ? &p->size : bit == PAX_UID ? &p->uid : &p->gid);
}

int tarscan_pax(struct tarscan *s, uint64_t hdr_off)
{
	struct pax *p = s->kind == 'g' ? &s->global : &s->local;
	const char *b = s->ext;
	size_t i = 0, n = s->ext_len;
	char key[64];

	while (i < n) {
		uint64_t len = 0;
		size_t j = i, eq;
		int ret;

		while (j < n && b[j] >= '0' && b[j] <= '9' && len < n)
			len = len * 10 + (uint64_t)(b[j++] - '0');
		if (j == i || j >= n || b[j] != ' ' || len < 5 || len > n - i ||
		    b[i + len - 1] != '\n')
			return tarscan_fail(
				s, -EINVAL, hdr_off,
				"pax header at offset %llu: bad record length at byte %zu",
				(unsigned long long)hdr_off, i);
		for (eq = j + 1; eq < i + len - 1 && b[eq] != '='; eq++)
			;
		if (eq == i + len - 1 || eq == j + 1)
			return tarscan_fail(s, -EINVAL, hdr_off,
					    "pax header at offset %llu: a record without a key at "
					    "byte %zu",
					    (unsigned long long)hdr_off, i);
		/* Keys the scanner knows are short; a longer one is unknown, so ignored. */
		if (eq - j - 1 < sizeof(key)) {
			memcpy(key, b + j + 1, eq - j - 1);
			key[eq - j - 1] = 0;
			ret = pax_apply(s, p, key, b + eq + 1, i + len - 1 - eq - 1);
			if (ret == -ENOMEM)
				return tarscan_fail(s, ret, hdr_off, "out of memory");
			if (ret < 0)
				return tarscan_fail(s, -EINVAL, hdr_off,
						    "pax header at offset %llu: a bad value for %s",
						    (unsigned long long)hdr_off, key);
		}
		i += len;
	}
	return 0;
}

/* One decimal line of the 1.0 map at s->ext + *pos, if complete: 1, 0 (not yet), -1. */
static int map_line(struct tarscan *s, size_t *pos, uint64_t *v)
{
	const char *nl = memchr(s->ext + *pos, '\n', s->ext_len - *pos);

	if (!nl)
		return s->ext_len - *pos > 20 ? -1 : 0;
	if (dec_u64(s->ext + *pos, (size_t)(nl - s->ext - *pos), v))
		return -1;
	*pos = (size_t)(nl - s->ext) + 1;
	return 1;
}

int tarscan_map_text(struct tarscan *s)
{
	uint64_t v;
	int r;

	while (s->map_left > 0) {
		r = map_line(s, &s->map_pos, &v);
		if (r <= 0) {
			s->map_why = "a malformed sparse map (GNU 1.0)";
			return r;
		}
		if (s->map_left == UINT64_MAX) {
			if (v > TARSCAN_SPARSE_MAX) {
				s->map_why = "a sparse map of more extents than the scanner keeps";
				return -1;
			}
			s->map_left = 2 * v;
		} else if (s->map_left % 2 == 0) {
			if (tarscan_map_add(s, v, 0) < 0)
				return -1;
			s->map_left--;
		} else {
			s->map[s->map_n - 1].len = v;
			s->map_left--;
		}
	}
	return 1;
}

const char *tarscan_map_check(const struct tarscan *s, uint64_t realsize, uint64_t stored)
{
	if (s->map_bad)
		return s->map_why ? s->map_why : "a malformed sparse map";
	return tartab_extents_check(s->map, s->map_n, realsize, stored);
}
