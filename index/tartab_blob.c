/* SPDX-License-Identifier: MIT */
/*
 * The member table's saved form (doc/tar.md): "ZMTAR\0", a 2-byte version,
 * LEB128 varints for the archive size, the member count and the dropped
 * count, then each member relative to the one before (its header's distance
 * from the previous data's end, its name as the length shared with the
 * previous name and the rest, owners only when they change), and the
 * CRC-64 of all that, 8 bytes little-endian.  Decoding goes through
 * tartab_add after the checks the scanner makes, so a loaded table holds
 * nothing a scan could not have produced.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "idxhash.h"
#include "le.h"
#include "tartab.h"

#define MAGIC	"ZMTAR"
#define VERSION 1
#define HEAD	8 /* magic with its NUL, version */

/* member flag byte: type in bits 0-2, then these */
#define F_SPARSE 0x08
#define F_IDS	 0x10 /* uid, gid follow (else the previous member's) */
#define F_OWNERS 0x20 /* uname, gname follow (else the previous member's) */

struct out {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static uint8_t *room(struct out *o, size_t n)
{
	if (o->oom)
		return NULL;
	if (o->len + n > o->cap) {
		size_t c = o->cap ? o->cap : 4096;
		uint8_t *q;

		while (c < o->len + n)
			c *= 2;
		q = realloc(o->p, c);
		if (!q) {
			o->oom = true;
			return NULL;
		}
		o->p = q;
		o->cap = c;
	}
	o->len += n;
	return o->p + o->len - n;
}

static void put_v(struct out *o, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0, i;
	uint8_t *d;

	do {
		b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	d = room(o, n);
	for (i = 0; d && i < n; i++)
		d[i] = b[i];
}

static void put_bytes(struct out *o, const void *s, size_t n)
{
	uint8_t *d;

	put_v(o, n);
	d = room(o, n);
	if (d && n)
		memcpy(d, s, n);
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static void put_member(struct out *o, const struct tartab *t, const struct tar_member *m,
		       const struct tar_member *prev)
{
	const char *name = tartab_name(t, m), *pname = prev ? tartab_name(t, prev) : "";
	uint64_t prev_end = prev ? prev->data_off + prev->stored : 0;
	bool ids = !prev || m->uid != prev->uid || m->gid != prev->gid;
	bool owners = !prev || m->uname != prev->uname || m->gname != prev->gname;
	size_t same = 0;
	uint8_t *f = room(o, 1);

	if (f)
		*f = (uint8_t)(m->type | (m->flags & TAR_SPARSE ? F_SPARSE : 0) |
			       (ids ? F_IDS : 0) | (owners ? F_OWNERS : 0));
	put_v(o, m->hdr_off - prev_end);
	put_v(o, m->data_off - m->hdr_off);
	put_v(o, m->stored);
	put_v(o, zigzag(m->mtime - (prev ? prev->mtime : 0)));
	put_v(o, m->mtime_ns);
	put_v(o, m->mode);
	if (ids) {
		put_v(o, m->uid);
		put_v(o, m->gid);
	}
	if (owners) {
		put_bytes(o, tartab_str(t, m->uname), strlen(tartab_str(t, m->uname)));
		put_bytes(o, tartab_str(t, m->gname), strlen(tartab_str(t, m->gname)));
	}
	while (name[same] && name[same] == pname[same])
		same++;
	put_v(o, same);
	put_bytes(o, name + same, m->name_len - same);
	if (m->type == TAR_SYMLINK || m->type == TAR_HARDLINK)
		put_bytes(o, tartab_str(t, m->link), m->link_len);
	if (m->flags & TAR_SPARSE) {
		put_v(o, m->size);
		put_v(o, m->sp_n);
		for (uint32_t i = 0; i < m->sp_n; i++) {
			put_v(o, t->sp[m->sp + i].off);
			put_v(o, t->sp[m->sp + i].len);
		}
	}
}

int tartab_encode(const struct tartab *t, uint64_t asize, uint8_t **out, size_t *len)
{
	struct out o = { 0 };
	uint8_t *h = room(&o, HEAD), *crc;

	*out = NULL;
	*len = 0;
	if (h) {
		memcpy(h, MAGIC, 6);
		put_le(h + 6, VERSION, 2);
	}
	put_v(&o, asize);
	put_v(&o, t->n);
	put_v(&o, t->dropped);
	for (size_t i = 0; i < t->n; i++)
		put_member(&o, t, &t->m[i], i ? &t->m[i - 1] : NULL);
	crc = room(&o, 8);
	if (!crc) {
		free(o.p);
		return -ENOMEM;
	}
	put_le(crc, idxhash_crc64(o.p, o.len - 8), 8);
	*out = o.p;
	*len = o.len;
	return 0;
}

struct in {
	const uint8_t *p, *end;
	/* the member being read, and what it shares with the one before */
	struct tar_member m, prev;
	bool have_prev;
	char name[PATH_MAX + 1], link[PATH_MAX + 1];
	char uname[PATH_MAX + 1], gname[PATH_MAX + 1];
	size_t link_len;
	struct tar_extent *sp;
	size_t sp_cap;
};

static int get_v(struct in *in, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64 && in->p < in->end; shift += 7) {
		uint8_t b = *in->p++;

		if (shift == 63 && b > 1)
			return -1;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* A length-prefixed string into d (room for max bytes and a NUL) at d + at. */
static int get_str(struct in *in, char *d, size_t at, size_t max, size_t *len)
{
	uint64_t n;

	if (get_v(in, &n) || n > max - at || n > (size_t)(in->end - in->p))
		return -1;
	memcpy(d + at, in->p, n);
	d[at + n] = 0;
	in->p += n;
	if (len)
		*len = at + n;
	return 0;
}

static const char *get_sparse(struct in *in, uint64_t *n)
{
	if (get_v(in, &in->m.size) || get_v(in, n) || *n > (uint64_t)(in->end - in->p) / 2)
		return "a bad sparse map";
	if (*n > in->sp_cap) {
		struct tar_extent *e = realloc(in->sp, *n * sizeof(*e));

		if (!e)
			return "out of memory";
		in->sp = e;
		in->sp_cap = *n;
	}
	for (uint64_t i = 0; i < *n; i++)
		if (get_v(in, &in->sp[i].off) || get_v(in, &in->sp[i].len))
			return "a bad sparse map";
	return tartab_extents_check(in->sp, *n, in->m.size, in->m.stored);
}

/* Offsets, sizes, time, mode, ids of in->m; NULL or why they are wrong. */
static const char *get_fields(struct in *in, uint8_t f, uint64_t asize)
{
	struct tar_member *m = &in->m;
	uint64_t prev_end = in->have_prev ? in->prev.data_off + in->prev.stored : 0;
	uint64_t dh, dd, zz, ns, mode, uid = in->prev.uid, gid = in->prev.gid;
	int64_t dt;

	if (get_v(in, &dh) || get_v(in, &dd) || get_v(in, &m->stored) || get_v(in, &zz) ||
	    get_v(in, &ns) || get_v(in, &mode))
		return "a truncated member";
	if (__builtin_add_overflow(prev_end, dh, &m->hdr_off) || dd < 512 ||
	    __builtin_add_overflow(m->hdr_off, dd, &m->data_off) || m->data_off > asize ||
	    m->stored > asize - m->data_off)
		return "a member overlapping the one before or past the archive's end";
	dt = (int64_t)(zz >> 1) ^ -(int64_t)(zz & 1);
	if (__builtin_add_overflow(in->have_prev ? in->prev.mtime : 0, dt, &m->mtime) ||
	    ns >= 1000000000 || mode > 07777)
		return "a bad time or mode";
	if ((f & F_IDS) && (get_v(in, &uid) || get_v(in, &gid)))
		return "a truncated member";
	if ((!in->have_prev && !(f & F_IDS)) || uid > UINT32_MAX || gid > UINT32_MAX)
		return "a bad uid or gid";
	m->mtime_ns = (uint32_t)ns;
	m->mode = (uint32_t)mode;
	m->uid = (uint32_t)uid;
	m->gid = (uint32_t)gid;
	m->type = f & 7;
	m->flags = f & F_SPARSE ? TAR_SPARSE : 0;
	m->size = m->stored;
	return m->type < TAR_TYPES ? NULL : "an unknown member type";
}

/* Name, link target and owners; NULL or why they are wrong. */
static const char *get_names(struct in *in, uint8_t f)
{
	char norm[PATH_MAX + 1];
	const char *why = NULL;
	size_t len, plen = strlen(in->name);
	uint64_t same;
	int n;

	if ((f & F_OWNERS) && (get_str(in, in->uname, 0, PATH_MAX, NULL) ||
			       get_str(in, in->gname, 0, PATH_MAX, NULL)))
		return "a bad user or group name";
	if (!in->have_prev && !(f & F_OWNERS))
		return "a bad user or group name";
	if (get_v(in, &same) || same > plen || get_str(in, in->name, same, PATH_MAX, &len))
		return "a bad name";
	n = tartab_name_check(in->name, len, norm, &why);
	if (n <= 0 || (size_t)n != len)
		return "an unsafe or unnormalised name";
	in->link_len = 0;
	if (in->m.type != TAR_SYMLINK && in->m.type != TAR_HARDLINK)
		return NULL;
	if (get_str(in, in->link, 0, PATH_MAX - 1, &in->link_len) || in->link_len == 0 ||
	    strlen(in->link) != in->link_len)
		return "a bad link target";
	if (in->m.type == TAR_HARDLINK &&
	    tartab_name_check(in->link, in->link_len, norm, &why) != (int)in->link_len)
		return "a hard link to an unsafe name";
	return NULL;
}

static const char *get_member(struct in *in, struct tartab *t, uint64_t asize, int *err)
{
	const char *why;
	uint64_t sp_n = 0;
	uint8_t f;

	if (in->p >= in->end)
		return "a truncated table";
	f = *in->p++;
	if (f & ~(0x07 | F_SPARSE | F_IDS | F_OWNERS))
		return "unknown member flags";
	if ((why = get_fields(in, f, asize)) || (why = get_names(in, f)))
		return why;
	if ((f & F_SPARSE) && (why = get_sparse(in, &sp_n)))
		return why;
	*err = tartab_add(t, &in->m, in->name, in->link, in->link_len, in->uname, in->gname, in->sp,
			  sp_n);
	if (*err)
		return *err == -E2BIG ? "over the table's cap" : "out of memory";
	in->prev = in->m;
	in->have_prev = true;
	return NULL;
}

static int check_head(const uint8_t *buf, size_t len, struct zerr *why)
{
	if (len < HEAD + 8 || memcmp(buf, MAGIC, 6) != 0)
		return zerr_set(why, -EINVAL, 0, "not a tar member table");
	if (get_le(buf + 6, 2) != VERSION)
		return zerr_set(why, -EINVAL, 6, "a tar member table of version %u, not %u",
				(unsigned)get_le(buf + 6, 2), VERSION);
	if (get_le(buf + len - 8, 8) != idxhash_crc64(buf, len - 8))
		return zerr_set(why, -EINVAL, len - 8, "a tar member table failing its CRC-64");
	return 0;
}

int tartab_decode(struct tartab *t, const uint8_t *buf, size_t len, uint64_t asize,
		  struct zerr *why)
{
	struct in *in;
	uint64_t size, n, dropped;
	int ret = check_head(buf, len, why), err = 0;
	const char *bad = NULL;

	if (ret)
		return ret;
	in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->p = buf + HEAD;
	in->end = buf + len - 8;
	if (get_v(in, &size) || get_v(in, &n) || get_v(in, &dropped) || size != asize ||
	    n > (uint64_t)(in->end - in->p))
		bad = "a header that does not match the archive";
	for (uint64_t i = 0; !bad && i < n; i++) {
		bad = get_member(in, t, asize, &err);
		if (bad)
			ret = zerr_set(why, err ? err : -EINVAL, (uint64_t)(in->p - buf),
				       "tar member table: member %llu: %s", (unsigned long long)i,
				       bad);
	}
	if (!bad && in->p != in->end)
		bad = "bytes after the last member";
	if (bad && !ret)
		ret = zerr_set(why, -EINVAL, (uint64_t)(in->p - buf), "tar member table: %s", bad);
	if (!ret)
		t->dropped = dropped;
	else
		tartab_free(t);
	free(in->sp);
	free(in);
	return ret;
}
