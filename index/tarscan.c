/* SPDX-License-Identifier: MIT */
/*
 * How it works: the input is cut into 512-byte blocks only where the state
 * needs whole blocks (headers, old GNU sparse extensions, a pax 1.0 sparse
 * map); a pax header's or long name's data is gathered whole (capped), and
 * a member's data is only counted past.  The headers that prefix a member
 * (pax 'x', GNU 'L'/'K') leave their values pending; the member's own
 * header takes them, the scanner completes it (sparse maps may follow) and
 * adds it to the table or drops it, and the pending values are cleared.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tarscan_int.h"

#define ABSURD_SIZE (1ull << 62) /* no archive holds a member larger (4 EiB) */

int tarscan_new(struct tartab *t, uint64_t asize, tarscan_drop_fn drop, void *arg,
		struct tarscan **out)
{
	struct tarscan *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->t = t;
	s->asize = asize;
	s->drop = drop;
	s->drop_arg = arg;
	s->local.major = s->global.major = -1;
	*out = s;
	return 0;
}

void tarscan_free(struct tarscan *s)
{
	if (!s)
		return;
	tarscan_pax_clear(&s->local);
	tarscan_pax_clear(&s->global);
	free(s->long_name.p);
	free(s->long_link.p);
	free(s->ext);
	free(s->name);
	free(s->link);
	free(s->map);
	free(s);
}

int tarscan_done(const struct tarscan *s)
{
	return s->state == TS_END;
}

int tarscan_error(const struct tarscan *s, struct zerr *why)
{
	if (why) {
		*why = s->why;
		if (!s->err)
			why->msg[0] = 0;
	}
	return s->err;
}

bool tarscan_capped(const struct tarscan *s)
{
	return s->err == -E2BIG && s->capped;
}

uint64_t tarscan_offset(const struct tarscan *s)
{
	return s->off;
}

/* A numeric field: octal (spaces and NULs around it), or GNU base-256 (top bit set, two's
 * complement).  0 or -1. */
static int num_field(const unsigned char *f, size_t n, int64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (f[0] & 0x80) {
		unsigned char sign = f[0] & 0x40 ? 0xff : 0, b0 = f[0] & 0x40 ? f[0] : f[0] & 0x7f;

		for (; i + 8 < n; i++)
			if ((i ? f[i] : b0) != sign)
				return -1;
		for (; i < n; i++)
			v = v << 8 | (i ? f[i] : b0);
		if (n < 8 && sign)
			v |= UINT64_MAX << (8 * n);
		if ((v >> 63) != (sign != 0))
			return -1;
		*out = (int64_t)v;
		return 0;
	}
	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return -1;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != 0)
			return -1;
	*out = (int64_t)v;
	return 0;
}

static int unum_field(const unsigned char *f, size_t n, uint64_t *out)
{
	int64_t v;

	if (num_field(f, n, &v) || v < 0)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static bool checksum_ok(const unsigned char *h)
{
	uint64_t want;
	unsigned usum = 0;
	int ssum = 0;

	if (unum_field(h + 148, 8, &want))
		return false;
	for (int i = 0; i < 512; i++) {
		unsigned char c = i >= 148 && i < 156 ? ' ' : h[i];

		usum += c;
		ssum += (signed char)c;
	}
	/* Some old tars summed signed chars. */
	return want == usum || (int64_t)want == ssum;
}

static bool is_zero(const unsigned char *h)
{
	for (int i = 0; i < 512; i++)
		if (h[i])
			return false;
	return true;
}

static uint64_t pad_of(uint64_t n)
{
	return (TAR_BLOCK_SIZE - n % TAR_BLOCK_SIZE) % TAR_BLOCK_SIZE;
}

/* Copies n bytes at p into the growable *dst, NUL-terminated. */
static int hold(char **dst, size_t *len, const char *p, size_t n)
{
	char *d = realloc(*dst, n + 1);

	if (!d)
		return -ENOMEM;
	memcpy(d, p, n);
	d[n] = 0;
	*dst = d;
	*len = n;
	return 0;
}

static void set_skip(struct tarscan *s, uint64_t data, uint64_t pad)
{
	s->skip = data + pad;
	s->skip_pad = pad;
	s->skip_member = false;
	s->state = s->skip ? TS_SKIP : TS_HDR;
}

/* Clears what the headers before a member left pending. */
static void reset_pending(struct tarscan *s)
{
	free(s->long_name.p);
	free(s->long_link.p);
	s->long_name = s->long_link = (struct pax_str){ 0 };
	tarscan_pax_clear(&s->local);
	s->map_n = 0;
	s->map_bad = false;
	s->map_why = NULL;
	s->sparse = false;
	s->have_first = false;
}

static int start_ext(struct tarscan *s, char kind, uint64_t size, uint64_t off)
{
	if (size > TARSCAN_EXT_MAX)
		return tarscan_fail(s, -E2BIG, off,
				    "a '%c' header at offset %llu of %llu bytes, over the %u the "
				    "scanner takes",
				    kind, (unsigned long long)off, (unsigned long long)size,
				    TARSCAN_EXT_MAX);
	if (size > s->ext_cap) {
		char *e = realloc(s->ext, size);

		if (!e)
			return tarscan_fail(s, -ENOMEM, off, "out of memory");
		s->ext = e;
		s->ext_cap = size;
	}
	s->kind = kind;
	s->ext_off = off;
	s->ext_len = 0;
	s->ext_need = size;
	s->ext_pad = pad_of(size);
	s->state = TS_EXT;
	return 0;
}

static int end_ext(struct tarscan *s)
{
	uint64_t off = s->blk_off;
	int ret = 0;

	if (s->kind == 'L' || s->kind == 'K')
		ret = hold(s->kind == 'L' ? &s->long_name.p : &s->long_link.p,
			   s->kind == 'L' ? &s->long_name.len : &s->long_link.len, s->ext,
			   strnlen(s->ext, s->ext_len));
	else
		ret = tarscan_pax(s, off);
	if (ret == -ENOMEM)
		return tarscan_fail(s, ret, off, "out of memory");
	if (ret < 0)
		return ret;
	/* A global header belongs to no member. */
	if (s->kind == 'g')
		s->have_first = false;
	set_skip(s, 0, s->ext_pad);
	return 0;
}

/* A dropped member: counted and reported; its data is skipped all the same. */
static void drop(struct tarscan *s, const char *why)
{
	s->t->dropped++;
	if (s->drop)
		s->drop(s->drop_arg, s->cur.hdr_off, why, s->name ? s->name : "");
}

/* Checks the member in s->cur and its strings; returns why it must be dropped, or NULL, with
 * the normal name in norm and *skip_it for the archive root's own entry. */
static const char *member_check(struct tarscan *s, char *norm, char *lnorm, bool *skip_it)
{
	const char *why = NULL;
	int n = tartab_name_check(s->name, s->name_len, norm, &why);

	*skip_it = false;
	if (n < 0)
		return why;
	if (n == 0) {
		*skip_it = s->cur.type == TAR_DIR;
		return "an empty name";
	}
	if (s->cur.type == TAR_HARDLINK) {
		n = tartab_name_check(s->link, s->link_len, lnorm, &why);
		if (n <= 0)
			return "a hard link to an unsafe or empty name";
		s->link_len = (size_t)n;
	} else if (s->cur.type == TAR_SYMLINK) {
		if (s->link_len == 0 || s->link_len >= PATH_MAX || memchr(s->link, 0, s->link_len))
			return "a symlink target that is empty, has a NUL, or passes PATH_MAX";
		memcpy(lnorm, s->link, s->link_len + 1);
	}
	if (s->sparse)
		return tarscan_map_check(s, s->realsize, s->cur.stored);
	return NULL;
}

static const char *owner(const struct pax *l, const struct pax *g, unsigned bit, const char *field)
{
	const struct pax_str *ls = bit == PAX_UNAME ? &l->uname : &l->gname;
	const struct pax_str *gs = bit == PAX_UNAME ? &g->uname : &g->gname;

	if (l->set & bit)
		return memchr(ls->p, 0, ls->len) ? "" : ls->p;
	if (g->set & bit)
		return memchr(gs->p, 0, gs->len) ? "" : gs->p;
	return field;
}

/* Stops the scan at member cur, whose data runs past asize, the archive's end. */
static int past_end(struct tarscan *s, uint64_t asize)
{
	const struct tar_member *m = &s->cur;

	return tarscan_fail(s, -EINVAL, m->hdr_off,
			    "the member at offset %llu runs past the end of the archive "
			    "(its data ends at %llu, the archive at %llu)",
			    (unsigned long long)m->hdr_off,
			    (unsigned long long)(m->data_off + m->stored),
			    (unsigned long long)asize);
}

/* Stops the scan at the 'L', 'K', 'x' or 'g' header at off, whose data runs past the end. */
static int ext_past_end(struct tarscan *s, char c, uint64_t off)
{
	return tarscan_fail(s, -EINVAL, off,
			    "the '%c' header at offset %llu runs past the end of the archive", c,
			    (unsigned long long)off);
}

/* The member is complete: into the table, or dropped; then its data is skipped. */
static int member_done(struct tarscan *s)
{
	char *norm = s->norm, *lnorm = s->lnorm;
	struct tar_member *m = &s->cur;
	uint64_t consumed = s->map_blocks * TAR_BLOCK_SIZE, total, rem, pad;
	bool skip_it;
	const char *why;
	int ret = 0;

	m->stored = s->data_size > consumed ? s->data_size - consumed : 0;
	if (s->asize && (m->data_off > s->asize || m->stored > s->asize - m->data_off))
		return past_end(s, s->asize);
	why = member_check(s, norm, lnorm, &skip_it);

	if (s->sparse) {
		m->flags |= TAR_SPARSE;
		m->size = s->realsize;
	}
	if (why && !skip_it)
		drop(s, why);
	if (!why)
		ret = tartab_add(
			s->t, m, norm, lnorm,
			m->type == TAR_SYMLINK || m->type == TAR_HARDLINK ? s->link_len : 0,
			owner(&s->local, &s->global, PAX_UNAME, s->uname),
			owner(&s->local, &s->global, PAX_GNAME, s->gname), s->map, s->map_n);
	s->capped = ret == -E2BIG;
	if (ret == -E2BIG)
		return tarscan_fail(
			s, ret, m->hdr_off,
			"the member table would pass its cap of %zu bytes at member %zu "
			"(offset %llu)",
			s->t->max_bytes, s->t->n, (unsigned long long)m->hdr_off);
	if (ret < 0)
		return tarscan_fail(s, ret, m->hdr_off, "out of memory");
	/* A 1.0 map was read in whole blocks, so it may have eaten into the padding. */
	total = s->data_size + pad_of(s->data_size);
	rem = total > consumed ? total - consumed : 0;
	pad = pad_of(s->data_size) < rem ? pad_of(s->data_size) : rem;
	set_skip(s, rem - pad, pad);
	s->skip_member = true;
	reset_pending(s);
	return 0;
}

static enum tar_type type_of(char c, const char *name, size_t len)
{
	switch (c) {
	case '1':
		return TAR_HARDLINK;
	case '2':
		return TAR_SYMLINK;
	case '3':
		return TAR_CHAR;
	case '4':
		return TAR_BLOCK;
	case '5':
	case 'D': /* GNU dumpdir: a directory whose data lists its entries */
		return TAR_DIR;
	case '6':
		return TAR_FIFO;
	case '0':
	case 0: /* v7 marks a directory by its trailing slash */
		return len > 0 && name[len - 1] == '/' ? TAR_DIR : TAR_FILE;
	default: /* POSIX: an unknown type reads as a regular file ('7', 'S' among them) */
		return TAR_FILE;
	}
}

/* The member's name and link target: pax over GNU long names over the header's fields. */
static int member_names(struct tarscan *s, const unsigned char *h)
{
	const struct pax *l = &s->local;
	const char *hn = (const char *)h, *hl = (const char *)h + 157;
	char both[256 + 1];
	int ret;

	if (l->set & PAX_SPNAME)
		ret = hold(&s->name, &s->name_len, l->spname.p, l->spname.len);
	else if (l->set & PAX_PATH)
		ret = hold(&s->name, &s->name_len, l->path.p, l->path.len);
	else if (s->long_name.p)
		ret = hold(&s->name, &s->name_len, s->long_name.p, s->long_name.len);
	else if (memcmp(h + 257, "ustar", 6) == 0 && h[345]) {
		/* POSIX ustar: prefix "/" name (old GNU keeps other fields there) */
		size_t pn = strnlen((const char *)h + 345, 155), nn = strnlen(hn, 100);

		memcpy(both, h + 345, pn);
		both[pn] = '/';
		memcpy(both + pn + 1, hn, nn);
		ret = hold(&s->name, &s->name_len, both, pn + 1 + nn);
	} else
		ret = hold(&s->name, &s->name_len, hn, strnlen(hn, 100));
	if (ret)
		return ret;
	if (l->set & PAX_LINKPATH)
		return hold(&s->link, &s->link_len, l->linkpath.p, l->linkpath.len);
	if (s->long_link.p)
		return hold(&s->link, &s->link_len, s->long_link.p, s->long_link.len);
	return hold(&s->link, &s->link_len, hl, strnlen(hl, 100));
}

/* Mode, owner and time: the header's, then global pax records', then the member's own. */
static int member_attrs(struct tarscan *s, const unsigned char *h)
{
	const struct pax *ps[2] = { &s->global, &s->local };
	uint64_t mode, uid, gid;
	int64_t mt;
	uint32_t ns = 0;

	if (unum_field(h + 100, 8, &mode) || unum_field(h + 108, 8, &uid) ||
	    unum_field(h + 116, 8, &gid) || num_field(h + 136, 12, &mt))
		return -1;
	for (int i = 0; i < 2; i++) {
		uid = ps[i]->set & PAX_UID ? ps[i]->uid : uid;
		gid = ps[i]->set & PAX_GID ? ps[i]->gid : gid;
		if (ps[i]->set & PAX_MTIME) {
			mt = ps[i]->mtime;
			ns = ps[i]->mtime_ns;
		}
	}
	s->cur.mode = (uint32_t)(mode & 07777);
	/* Ids past 32 bits cannot be shown; they read as nobody's. */
	s->cur.uid = uid > UINT32_MAX ? 65534 : (uint32_t)uid;
	s->cur.gid = gid > UINT32_MAX ? 65534 : (uint32_t)gid;
	s->cur.mtime = mt;
	s->cur.mtime_ns = ns;
	memcpy(s->uname, h + 265, 32);
	memcpy(s->gname, h + 297, 32);
	s->uname[32] = s->gname[32] = 0;
	return 0;
}

/* Old GNU sparse entries (offset, numbytes: 12 octal bytes each) in a header or extension. */
static int gnu_extents(struct tarscan *s, const unsigned char *f, int count)
{
	for (int i = 0; i < count && f[24 * i]; i++) {
		uint64_t o, l;

		if (unum_field(f + 24 * i, 12, &o) || unum_field(f + 24 * i + 12, 12, &l)) {
			s->map_bad = true;
			s->map_why = "a bad number in a GNU sparse header";
			return 0;
		}
		if (tarscan_map_add(s, o, l) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* A member's own header (not 'x', 'g', 'L', 'K'): sparse maps may follow it. */
static int on_member(struct tarscan *s, const unsigned char *h, uint64_t size, uint64_t off)
{
	char c = (char)h[156];

	s->cur = (struct tar_member){ .hdr_off = s->first_hdr, .data_off = off + TAR_BLOCK_SIZE };
	if (member_names(s, h) < 0)
		return tarscan_fail(s, -ENOMEM, off, "out of memory");
	if (member_attrs(s, h) < 0)
		return tarscan_fail(s, -EINVAL, off, "a bad number in the header at offset %llu",
				    (unsigned long long)off);
	s->cur.type = (uint8_t)type_of(c, s->name, s->name_len);
	s->data_size = s->local.set & PAX_SIZE ? s->local.size : size;
	if (s->data_size > ABSURD_SIZE)
		return tarscan_fail(s, -EINVAL, off,
				    "an absurd size (%llu bytes) in the header at offset %llu",
				    (unsigned long long)s->data_size, (unsigned long long)off);
	s->cur.size = s->data_size;
	s->map_blocks = 0;
	if (c == 'S') {
		s->sparse = true;
		if (unum_field(h + 483, 12, &s->realsize))
			s->map_bad = true;
		if (gnu_extents(s, h + 386, 4) < 0)
			return tarscan_fail(s, -ENOMEM, off, "out of memory");
		if (h[482]) {
			s->state = TS_SPX;
			return 0;
		}
	} else if (s->local.set & PAX_SPARSE) {
		s->sparse = true;
		s->realsize = s->local.realsize;
		if (!(s->local.set & PAX_REALSIZE)) {
			s->map_bad = true;
			s->map_why = "a GNU sparse member without its size";
		}
		if (s->local.major == 1 && s->data_size > 0) {
			s->map_left = UINT64_MAX;
			s->map_pos = s->ext_len = 0;
			s->state = TS_MAP;
			return 0;
		}
	}
	return member_done(s);
}

static int on_header(struct tarscan *s)
{
	const unsigned char *h = s->blk;
	uint64_t off = s->blk_off, size;
	char c = (char)h[156];

	if (is_zero(h)) {
		s->state = TS_END;
		return 0;
	}
	if (!checksum_ok(h))
		return tarscan_fail(
			s, -EINVAL, off,
			off == 0 ? "not a tar archive: the header at offset %llu fails its "
				   "checksum"
				 : "the header at offset %llu fails its checksum",
			(unsigned long long)off);
	if (unum_field(h + 124, 12, &size))
		return tarscan_fail(s, -EINVAL, off,
				    "a bad size field in the header at offset %llu",
				    (unsigned long long)off);
	if (!s->have_first) {
		s->first_hdr = off;
		s->have_first = true;
	}
	if (c == 'L' || c == 'K' || c == 'x' || c == 'X' || c == 'g') {
		if (s->asize && (s->off > s->asize || size > s->asize - s->off))
			return ext_past_end(s, c, off);
		if (start_ext(s, c == 'X' ? 'x' : c, size, off) < 0)
			return s->err;
		return s->ext_need ? 0 : end_ext(s);
	}
	if (c == 'V' || c == 'M') {
		/* A volume label is no member; a continued one from another volume has no start. */
		s->cur.hdr_off = s->first_hdr;
		if (c == 'M' && member_names(s, h) < 0)
			return tarscan_fail(s, -ENOMEM, off, "out of memory");
		if (c == 'M')
			drop(s, "a member continued from another volume");
		set_skip(s, c == 'M' ? size : 0, c == 'M' ? pad_of(size) : 0);
		reset_pending(s);
		return 0;
	}
	return on_member(s, h, size, off);
}

static int on_map_block(struct tarscan *s)
{
	int r = 0;

	if (s->ext_len + TAR_BLOCK_SIZE > s->ext_cap) {
		size_t c = s->ext_cap * 2 > TAR_BLOCK_SIZE ? s->ext_cap * 2 : 4 * TAR_BLOCK_SIZE;
		char *e = c <= TARSCAN_EXT_MAX ? realloc(s->ext, c) : NULL;

		if (!e) {
			s->map_bad = true;
			s->map_why = "a sparse map (GNU 1.0) over the size the scanner takes";
			return member_done(s);
		}
		s->ext = e;
		s->ext_cap = c;
	}
	memcpy(s->ext + s->ext_len, s->blk, TAR_BLOCK_SIZE);
	s->ext_len += TAR_BLOCK_SIZE;
	s->map_blocks++;
	s->cur.data_off += TAR_BLOCK_SIZE;
	if (!s->map_bad)
		r = tarscan_map_text(s);
	if (r == 0 && s->map_blocks * TAR_BLOCK_SIZE < s->data_size)
		return 0;
	if (r <= 0) {
		s->map_bad = true;
		if (r == 0)
			s->map_why = "a sparse map (GNU 1.0) that does not end inside its member";
	}
	return member_done(s);
}

static int on_block(struct tarscan *s)
{
	s->blk_fill = 0;
	switch (s->state) {
	case TS_HDR:
		return on_header(s);
	case TS_SPX:
		s->cur.data_off += TAR_BLOCK_SIZE;
		if (gnu_extents(s, s->blk, 21) < 0)
			return tarscan_fail(s, -ENOMEM, s->blk_off, "out of memory");
		return s->blk[504] ? 0 : member_done(s);
	case TS_MAP:
		return on_map_block(s);
	default:
		return 0;
	}
}

int tarscan_feed(struct tarscan *s, const void *buf, size_t n)
{
	const unsigned char *p = buf;

	while (n > 0 && s->state != TS_ERR) {
		size_t k;
		int ret = 0;

		if (s->state == TS_END) {
			s->off += n;
			return 0;
		}
		if (s->state == TS_SKIP) {
			k = n < s->skip ? n : (size_t)s->skip;
			s->skip -= k;
			if (s->skip == 0)
				s->state = TS_HDR;
		} else if (s->state == TS_EXT) {
			k = n < s->ext_need - s->ext_len ? n : s->ext_need - s->ext_len;
			memcpy(s->ext + s->ext_len, p, k);
			s->ext_len += k;
		} else {
			if (s->blk_fill == 0)
				s->blk_off = s->off;
			k = n < TAR_BLOCK_SIZE - s->blk_fill ? n : TAR_BLOCK_SIZE - s->blk_fill;
			memcpy(s->blk + s->blk_fill, p, k);
			s->blk_fill += k;
		}
		p += k;
		n -= k;
		s->off += k;
		if (s->state == TS_EXT && s->ext_len == s->ext_need)
			ret = end_ext(s);
		else if (s->blk_fill == TAR_BLOCK_SIZE)
			ret = on_block(s);
		if (ret < 0)
			return ret;
	}
	return s->state == TS_ERR ? s->err : 0;
}

int tarscan_finish(struct tarscan *s)
{
	const char *where = NULL;
	uint64_t at;

	if (s->state == TS_ERR || s->state == TS_END)
		return s->err;
	if (s->state == TS_SKIP && s->skip > s->skip_pad)
		where = "inside the data of the member";
	else if (s->state == TS_EXT || (s->state != TS_SKIP && s->blk_fill > 0))
		where = "inside a header of the member";
	else if (s->state == TS_SPX || s->state == TS_MAP)
		where = "inside the sparse map of the member";
	if (!where)
		return 0;
	at = s->state == TS_SKIP ? s->cur.hdr_off : s->have_first ? s->first_hdr : s->blk_off;
	tarscan_fail(s, -EINVAL, at,
		     "the archive ends at %llu %s at offset %llu (truncated, or still being "
		     "written)",
		     (unsigned long long)s->off, where, (unsigned long long)at);
	s->why.cut = 1;
	return s->err;
}

int tarscan_finish_unsized(struct tarscan *s)
{
	if (s->asize || s->state == TS_ERR || s->state == TS_END)
		return tarscan_finish(s);
	if (s->state == TS_SKIP && s->skip > s->skip_pad && s->skip_member) {
		/* a sized scan stops at its header: it never takes the member */
		if (s->t->n && s->t->m[s->t->n - 1].hdr_off == s->cur.hdr_off)
			tartab_pop(s->t);
		return past_end(s, s->off);
	}
	if (s->state == TS_EXT)
		return ext_past_end(s, s->kind, s->ext_off);
	return tarscan_finish(s);
}
