/* SPDX-License-Identifier: MIT */
/*
 * Tests for index/tarscan.c and index/tartab.c on hand-built archives: each
 * header kind, each kind of bad input, and the same table whatever the
 * chunks the bytes arrive in.  tests/tools/test_tar.sh holds the scanner to
 * GNU tar's own archives.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idxhash.h"
#include "le.h"
#include "tarscan.h"
#include "tartab.h"

struct arc {
	unsigned char *p;
	size_t len, cap;
};

static void put(struct arc *a, const void *d, size_t n)
{
	if (a->len + n > a->cap) {
		a->cap = (a->len + n) * 2;
		a->p = realloc(a->p, a->cap);
		ck_assert_ptr_nonnull(a->p);
	}
	if (d)
		memcpy(a->p + a->len, d, n);
	else
		memset(a->p + a->len, 0, n);
	a->len += n;
}

static void put_pad(struct arc *a)
{
	put(a, NULL, (512 - a->len % 512) % 512);
}

static void octal(unsigned char *f, size_t n, uint64_t v)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "%0*llo", (int)n - 1, (unsigned long long)v);
	memcpy(f, tmp, n - 1);
	f[n - 1] = 0;
}

static void seal(unsigned char *h)
{
	unsigned sum = 0;

	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

/* A POSIX ustar header, sealed. */
static void mkhdr(unsigned char *h, const char *name, char type, uint64_t size, const char *link)
{
	memset(h, 0, 512);
	strncpy((char *)h, name, 100);
	octal(h + 100, 8, 0644);
	octal(h + 108, 8, 1000);
	octal(h + 116, 8, 100);
	octal(h + 124, 12, size);
	octal(h + 136, 12, 1700000000);
	h[156] = (unsigned char)type;
	if (link)
		strncpy((char *)h + 157, link, 100);
	memcpy(h + 257,
	       "ustar\0"
	       "00",
	       8);
	strcpy((char *)h + 265, "user");
	strcpy((char *)h + 297, "group");
	seal(h);
}

static void entry(struct arc *a, const char *name, char type, const char *data, const char *link)
{
	unsigned char h[512];
	size_t n = data ? strlen(data) : 0;

	mkhdr(h, name, type, n, link);
	put(a, h, 512);
	put(a, data, n);
	put_pad(a);
}

/* An extended header (kind 'x', 'g', 'L', 'K') holding n bytes of d. */
static void ext(struct arc *a, char kind, const char *d, size_t n)
{
	unsigned char h[512];

	mkhdr(h, "././@ext", kind, n, NULL);
	put(a, h, 512);
	put(a, d, n);
	put_pad(a);
}

/* Appends the pax record "LEN k=v\n" to out. */
static void rec(char *out, const char *k, const char *v)
{
	size_t body = strlen(k) + strlen(v) + 3, len = body + 1;

	while (snprintf(NULL, 0, "%zu", len) + body != len)
		len++;
	sprintf(out + strlen(out), "%zu %s=%s\n", len, k, v);
}

static void end(struct arc *a)
{
	put(a, NULL, 1024);
}

struct res {
	struct tartab t;
	int ret;
	struct zerr why;
	unsigned drops;
	char last_drop[160];
};

static void on_drop(void *arg, uint64_t off, const char *reason, const char *name)
{
	struct res *r = arg;

	r->drops++;
	snprintf(r->last_drop, sizeof(r->last_drop), "%llu %s: %.60s", (unsigned long long)off,
		 reason, name);
}

/* Scans a in chunks of chunk bytes (0: random sizes from seed). */
static void scan(const struct arc *a, size_t chunk, unsigned seed, uint64_t asize, size_t cap,
		 struct res *r)
{
	struct tarscan *s;
	size_t i = 0;

	memset(r, 0, sizeof(*r));
	tartab_init(&r->t, cap);
	ck_assert_int_eq(tarscan_new(&r->t, asize, on_drop, r, &s), 0);
	srand(seed);
	while (i < a->len && r->ret == 0) {
		size_t k = chunk ? chunk : 1 + (size_t)rand() % 1500;

		k = k < a->len - i ? k : a->len - i;
		r->ret = tarscan_feed(s, a->p + i, k);
		i += k;
	}
	if (r->ret == 0)
		r->ret = tarscan_finish(s);
	tarscan_error(s, &r->why);
	tarscan_free(s);
}

static const struct tar_member *find(const struct res *r, const char *name)
{
	for (size_t i = 0; i < r->t.n; i++)
		if (strcmp(tartab_name(&r->t, &r->t.m[i]), name) == 0)
			return &r->t.m[i];
	ck_abort_msg("no member %s", name);
	return NULL;
}

static void done(struct res *r, struct arc *a)
{
	tartab_free(&r->t);
	if (a) {
		free(a->p);
		memset(a, 0, sizeof(*a));
	}
}

START_TEST(ustar_members_and_their_offsets)
{
	struct arc a = { 0 };
	struct res r;
	const struct tar_member *m;
	unsigned char h[512];
	char longdir[160];
	uint64_t aoff, run;

	entry(&a, "d/", '5', NULL, NULL);
	entry(&a, "./d/f.txt", '0', "hello", NULL);
	entry(&a, "d/ln", '2', NULL, "f.txt");
	entry(&a, "d/hard", '1', NULL, "./d/f.txt");
	entry(&a, "fifo", '6', NULL, NULL);
	/* a name in prefix + name */
	memset(longdir, 'p', 120);
	longdir[120] = 0;
	mkhdr(h, "leaf", '0', 3, NULL);
	memcpy(h + 345, longdir, 120);
	seal(h);
	put(&a, h, 512);
	put(&a, "abc", 3);
	put_pad(&a);
	end(&a);
	scan(&a, SIZE_MAX, 0, a.len, 0, &r);
	ck_assert_msg(r.ret == 0, "%s", r.why.msg);
	ck_assert_uint_eq(r.t.n, 6);
	m = find(&r, "d/f.txt");
	ck_assert_uint_eq(m->type, TAR_FILE);
	ck_assert_uint_eq(m->hdr_off, 512);
	ck_assert_uint_eq(m->data_off, 1024);
	ck_assert_uint_eq(m->size, 5);
	/* a table with no sparse member has no extent array: locate must not touch it */
	ck_assert_ptr_null(r.t.sp);
	ck_assert_int_eq(tartab_locate(&r.t, m, 2, &aoff, &run), 1);
	ck_assert_uint_eq(aoff, 1026);
	ck_assert_uint_eq(run, 3);
	ck_assert_int_eq(tartab_locate(&r.t, m, 5, &aoff, &run), -1);
	ck_assert_uint_eq(m->mode, 0644);
	ck_assert_uint_eq(m->uid, 1000);
	ck_assert_uint_eq(m->gid, 100);
	ck_assert_int_eq(m->mtime, 1700000000);
	ck_assert_str_eq(tartab_str(&r.t, m->uname), "user");
	ck_assert_str_eq(tartab_str(&r.t, m->gname), "group");
	ck_assert_uint_eq(find(&r, "d")->type, TAR_DIR);
	m = find(&r, "d/ln");
	ck_assert_uint_eq(m->type, TAR_SYMLINK);
	ck_assert_str_eq(tartab_str(&r.t, m->link), "f.txt");
	m = find(&r, "d/hard");
	ck_assert_uint_eq(m->type, TAR_HARDLINK);
	ck_assert_str_eq(tartab_str(&r.t, m->link), "d/f.txt");
	ck_assert_ptr_eq(tartab_link_target(&r.t, (size_t)(m - r.t.m)), find(&r, "d/f.txt"));
	ck_assert_uint_eq(find(&r, "fifo")->type, TAR_FIFO);
	strcat(longdir, "/leaf");
	ck_assert_uint_eq(find(&r, longdir)->size, 3);
	ck_assert_uint_eq(r.t.dropped, 0);
	done(&r, &a);
}
END_TEST

START_TEST(gnu_long_names_and_base256)
{
	struct arc a = { 0 };
	struct res r;
	char name[300], link[200];
	unsigned char h[512];
	const struct tar_member *m;

	memset(name, 'n', 299);
	name[299] = 0;
	memset(link, 'k', 199);
	link[199] = 0;
	ext(&a, 'L', name, 300); /* with its NUL, as GNU tar writes it */
	ext(&a, 'K', link, 199);
	entry(&a, "cut-name", '2', NULL, "cut-link");
	/* base-256: a size of 2^33 + 5 does not fit 11 octal digits; a negative mtime */
	mkhdr(h, "big", '0', 0, NULL);
	memset(h + 124, 0, 12);
	h[124] = 0x80;
	h[131] = 0x02;
	h[135] = 0x05;
	memset(h + 136, 0xff, 12);
	h[147] = 0xfe; /* -2 */
	memcpy(h + 257, "ustar  \0", 8);
	seal(h);
	put(&a, h, 512);
	scan(&a, SIZE_MAX, 0, 0, 0, &r);
	/* the archive ends inside big's data: the table holds both, the error says where */
	ck_assert_int_eq(r.ret, -EINVAL);
	ck_assert_msg(strstr(r.why.msg, "inside the data"), "%s", r.why.msg);
	ck_assert_uint_eq(r.why.coff, 2560);
	ck_assert_int_eq(r.why.cut, 1);
	ck_assert_uint_eq(r.t.n, 2);
	m = find(&r, name);
	ck_assert_uint_eq(m->hdr_off, 0);
	ck_assert_str_eq(tartab_str(&r.t, m->link), link);
	m = find(&r, "big");
	ck_assert_uint_eq(m->size, (1ull << 33) + 5);
	ck_assert_int_eq(m->mtime, -2);
	done(&r, &a);
}
END_TEST

START_TEST(pax_records_local_and_global)
{
	struct arc a = { 0 };
	struct res r;
	char x[4096] = "", g[256] = "";
	const struct tar_member *m;

	rec(g, "uid", "4242");
	rec(g, "uname", "global");
	ext(&a, 'g', g, strlen(g));
	rec(x, "path", "pax/a name with = and\nnewline");
	rec(x, "mtime", "1234567890.123456789123");
	rec(x, "size", "7");
	rec(x, "gid", "77");
	rec(x, "comment", "ignored");
	ext(&a, 'x', x, strlen(x));
	entry(&a, "short", '0', "1234567", NULL);
	x[0] = 0;
	rec(x, "mtime", "-1.25");
	rec(x, "linkpath", "target/far/away");
	ext(&a, 'x', x, strlen(x));
	entry(&a, "s", '2', NULL, "t");
	entry(&a, "plain", '0', "", NULL);
	end(&a);
	scan(&a, SIZE_MAX, 0, a.len, 0, &r);
	ck_assert_msg(r.ret == 0, "%s", r.why.msg);
	ck_assert_uint_eq(r.t.n, 3);
	m = find(&r, "pax/a name with = and\nnewline");
	ck_assert_uint_eq(m->hdr_off, 1024);
	ck_assert_uint_eq(m->size, 7);
	ck_assert_int_eq(m->mtime, 1234567890);
	ck_assert_uint_eq(m->mtime_ns, 123456789);
	ck_assert_uint_eq(m->uid, 4242);
	ck_assert_uint_eq(m->gid, 77);
	ck_assert_str_eq(tartab_str(&r.t, m->uname), "global");
	m = find(&r, "s");
	ck_assert_int_eq(m->mtime, -2);
	ck_assert_uint_eq(m->mtime_ns, 750000000);
	ck_assert_str_eq(tartab_str(&r.t, m->link), "target/far/away");
	m = find(&r, "plain");
	ck_assert_uint_eq(m->uid, 4242); /* the global record lasts */
	ck_assert_int_eq(m->mtime, 1700000000);
	done(&r, &a);
}
END_TEST

START_TEST(pax_bad_length_stops_with_offset)
{
	const char *bad[] = { "30 path=x\n", "5 path=x\n", "9 pathx\n", "abc\n", "10 path=xy" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct arc a = { 0 };
		struct res r;

		entry(&a, "first", '0', "1", NULL);
		ext(&a, 'x', bad[i], strlen(bad[i]));
		entry(&a, "second", '0', "2", NULL);
		end(&a);
		scan(&a, SIZE_MAX, 0, a.len, 0, &r);
		ck_assert_msg(r.ret == -EINVAL, "case %zu: %d", i, r.ret);
		ck_assert_msg(strstr(r.why.msg, "pax header at offset 1024"), "case %zu: %s", i,
			      r.why.msg);
		ck_assert_uint_eq(r.why.coff, 1024);
		ck_assert_uint_eq(r.t.n, 1);
		done(&r, &a);
	}
}
END_TEST

START_TEST(checksum_failure_keeps_the_members_before)
{
	struct arc a = { 0 };
	struct res r;

	entry(&a, "one", '0', "1", NULL);
	entry(&a, "two", '0', "2", NULL);
	entry(&a, "three", '0', "3", NULL);
	end(&a);
	a.p[1024 + 10] ^= 1; /* a bit of two's name */
	scan(&a, SIZE_MAX, 0, a.len, 0, &r);
	ck_assert_int_eq(r.ret, -EINVAL);
	ck_assert_uint_eq(r.why.coff, 1024);
	ck_assert_msg(strstr(r.why.msg, "offset 1024 fails its checksum"), "%s", r.why.msg);
	ck_assert_uint_eq(r.t.n, 1);
	ck_assert_str_eq(tartab_name(&r.t, &r.t.m[0]), "one");
	done(&r, &a);
	entry(&a, "one", '0', "1", NULL);
	a.p[0] ^= 1;
	scan(&a, SIZE_MAX, 0, a.len, 0, &r);
	ck_assert_msg(r.ret == -EINVAL && strstr(r.why.msg, "not a tar archive"), "%s", r.why.msg);
	done(&r, &a);
}
END_TEST

START_TEST(unsafe_names_are_dropped_the_rest_kept)
{
	struct arc a = { 0 };
	struct res r;
	char x[8192] = "", nul[16] = "", *huge = malloc(PATH_MAX + 10);

	entry(&a, "/etc/passwd", '0', "x", NULL);
	entry(&a, "a/../../b", '0', "x", NULL);
	entry(&a, "ok", '0', "fine", NULL);
	entry(&a, "h", '1', NULL, "../outside");
	memcpy(nul, "17 path=a\0b\n", 12); /* 12 bytes: the record length must say 12 */
	nul[0] = '1';
	nul[1] = '2';
	ext(&a, 'x', nul, 12);
	entry(&a, "nul", '0', "x", NULL);
	memset(huge, 'h', PATH_MAX + 9);
	huge[PATH_MAX + 9] = 0;
	rec(x, "path", huge);
	ext(&a, 'x', x, strlen(x));
	entry(&a, "huge", '0', "x", NULL);
	entry(&a, "./", '5', NULL, NULL);     /* the root's own entry: no member, not a drop */
	entry(&a, "cont", 'M', "part", NULL); /* continued from another volume */
	entry(&a, "last", '0', "y", NULL);
	end(&a);
	scan(&a, SIZE_MAX, 0, a.len, 0, &r);
	ck_assert_msg(r.ret == 0, "%s", r.why.msg);
	ck_assert_uint_eq(r.t.n, 2);
	ck_assert_str_eq(tartab_name(&r.t, &r.t.m[0]), "ok");
	ck_assert_str_eq(tartab_name(&r.t, &r.t.m[1]), "last");
	ck_assert_uint_eq(r.t.dropped, 6);
	ck_assert_uint_eq(r.drops, 6);
	ck_assert_msg(strstr(r.last_drop, "another volume: cont"), "%s", r.last_drop);
	/* the data offsets after the drops are still right */
	ck_assert_uint_eq(r.t.m[1].data_off + 1, a.len - 1024 - 511);
	free(huge);
	done(&r, &a);
}
END_TEST

START_TEST(names_are_normalised)
{
	char out[64];
	const char *why;

	ck_assert_int_eq(tartab_name_check("./a//b/./c/", 11, out, &why), 5);
	ck_assert_str_eq(out, "a/b/c");
	ck_assert_int_eq(tartab_name_check("./", 2, out, &why), 0);
	ck_assert_int_eq(tartab_name_check("a/..", 4, out, &why), -1);
	ck_assert_int_eq(tartab_name_check("..a/b..", 7, out, &why), 7);
	ck_assert_int_eq(tartab_name_check("/a", 2, out, &why), -1);
	ck_assert_str_eq(why, "an absolute name");
}
END_TEST

START_TEST(past_the_end_and_absurd_sizes)
{
	struct arc a = { 0 };
	struct res r;
	unsigned char h[512];

	entry(&a, "one", '0', "1", NULL);
	mkhdr(h, "two", '0', 4096, NULL);
	put(&a, h, 512);
	put(&a, "short", 5);
	/* the size known: caught at the header */
	scan(&a, 1, 0, a.len, 0, &r);
	ck_assert_int_eq(r.ret, -EINVAL);
	ck_assert_msg(strstr(r.why.msg, "runs past the end"), "%s", r.why.msg);
	ck_assert_uint_eq(r.why.coff, 1024);
	ck_assert_uint_eq(r.t.n, 1);
	done(&r, NULL);
	/* not known: caught at the end */
	scan(&a, 7, 0, 0, 0, &r);
	ck_assert_int_eq(r.ret, -EINVAL);
	ck_assert_msg(strstr(r.why.msg, "ends at 1541 inside the data"), "%s", r.why.msg);
	ck_assert_uint_eq(r.t.n, 2);
	done(&r, &a);
	/* over 2^62 in base-256 */
	mkhdr(h, "absurd", '0', 0, NULL);
	memset(h + 124, 0, 12);
	h[124] = 0x80;
	h[128] = 0x41;
	seal(h);
	put(&a, h, 512);
	scan(&a, SIZE_MAX, 0, 0, 0, &r);
	ck_assert_msg(r.ret == -EINVAL && strstr(r.why.msg, "absurd"), "%s", r.why.msg);
	done(&r, &a);
	/* a header cut short */
	entry(&a, "one", '0', "1", NULL);
	put(&a, "partial", 7);
	scan(&a, SIZE_MAX, 0, 0, 0, &r);
	ck_assert_msg(r.ret == -EINVAL && strstr(r.why.msg, "inside a header"), "%s", r.why.msg);
	ck_assert_uint_eq(r.why.coff, 1024);
	done(&r, &a);
}
END_TEST

START_TEST(the_end_is_a_zero_block_or_eof)
{
	struct arc a = { 0 };
	struct res r;

	entry(&a, "one", '0', "1", NULL);
	scan(&a, SIZE_MAX, 0, a.len, 0, &r);
	ck_assert_int_eq(r.ret, 0);
	ck_assert_uint_eq(r.t.n, 1);
	done(&r, NULL);
	end(&a);
	put(&a, "garbage after the end", 21);
	scan(&a, SIZE_MAX, 0, a.len, 0, &r);
	ck_assert_int_eq(r.ret, 0);
	ck_assert_uint_eq(r.t.n, 1);
	done(&r, &a);
}
END_TEST

/* The expanded file of the sparse tests: data "AAAA" at 1000, "BB" at 5000, size 8192. */
static void check_sparse(const struct res *r, const char *name)
{
	const struct tar_member *m = find(r, name);
	uint64_t aoff, run;

	ck_assert_uint_eq(m->flags & TAR_SPARSE, TAR_SPARSE);
	ck_assert_uint_eq(m->size, 8192);
	ck_assert_uint_eq(m->stored, 6);
	ck_assert_int_eq(tartab_locate(&r->t, m, 0, &aoff, &run), 0);
	ck_assert_uint_eq(run, 1000);
	ck_assert_int_eq(tartab_locate(&r->t, m, 1001, &aoff, &run), 1);
	ck_assert_uint_eq(aoff, m->data_off + 1);
	ck_assert_uint_eq(run, 3);
	ck_assert_int_eq(tartab_locate(&r->t, m, 5000, &aoff, &run), 1);
	ck_assert_uint_eq(aoff, m->data_off + 4);
	ck_assert_int_eq(tartab_locate(&r->t, m, 5002, &aoff, &run), 0);
	ck_assert_uint_eq(run, 8192 - 5002);
	ck_assert_int_eq(tartab_locate(&r->t, m, 8192, &aoff, &run), -1);
}

static void sparse_archive(struct arc *a)
{
	unsigned char h[512];
	char x[512] = "", map[512] = "2\n1000\n4\n5000\n2\n";

	/* old GNU 'S': one entry in the header, one in an extension block */
	mkhdr(h, "oldgnu", 'S', 6, NULL);
	memcpy(h + 257, "ustar  \0", 8);
	octal(h + 386, 12, 1000);
	octal(h + 398, 12, 4);
	h[482] = 1;
	octal(h + 483, 12, 8192);
	seal(h);
	put(a, h, 512);
	memset(h, 0, 512);
	octal(h, 12, 5000);
	octal(h + 12, 12, 2);
	put(a, h, 512);
	put(a, "AAAABB", 6);
	put_pad(a);
	/* pax 0.0 */
	rec(x, "GNU.sparse.size", "8192");
	rec(x, "GNU.sparse.offset", "1000");
	rec(x, "GNU.sparse.numbytes", "4");
	rec(x, "GNU.sparse.offset", "5000");
	rec(x, "GNU.sparse.numbytes", "2");
	ext(a, 'x', x, strlen(x));
	entry(a, "pax00", '0', "AAAABB", NULL);
	/* pax 0.1 */
	x[0] = 0;
	rec(x, "GNU.sparse.size", "8192");
	rec(x, "GNU.sparse.map", "1000,4,5000,2");
	ext(a, 'x', x, strlen(x));
	entry(a, "pax01", '0', "AAAABB", NULL);
	/* pax 1.0: the map leads the data */
	x[0] = 0;
	rec(x, "GNU.sparse.major", "1");
	rec(x, "GNU.sparse.minor", "0");
	rec(x, "GNU.sparse.name", "pax10");
	rec(x, "GNU.sparse.realsize", "8192");
	ext(a, 'x', x, strlen(x));
	mkhdr(h, "GNUSparseFile.0/pax10", '0', 518, NULL);
	put(a, h, 512);
	put(a, map, 512);
	put(a, "AAAABB", 6);
	put_pad(a);
	entry(a, "after", '0', "z", NULL);
	end(a);
}

START_TEST(gnu_sparse_in_every_form)
{
	struct arc a = { 0 };
	struct res r;

	sparse_archive(&a);
	scan(&a, SIZE_MAX, 0, a.len, 0, &r);
	ck_assert_msg(r.ret == 0, "%s", r.why.msg);
	ck_assert_msg(r.t.n == 5, "%zu members, %u dropped: %s", r.t.n, r.drops, r.last_drop);
	check_sparse(&r, "oldgnu");
	ck_assert_uint_eq(find(&r, "oldgnu")->data_off, 1024);
	check_sparse(&r, "pax00");
	check_sparse(&r, "pax01");
	check_sparse(&r, "pax10");
	ck_assert_uint_eq(find(&r, "after")->size, 1);
	done(&r, &a);
}
END_TEST

START_TEST(sparse_member_all_hole)
{
	struct arc a = { 0 };
	struct res r;
	unsigned char h[512];
	uint64_t aoff, run;

	/* an old GNU 'S' header with no extents: 100 bytes, all hole, in a table with no
	 * extent array at all */
	mkhdr(h, "hole", 'S', 0, NULL);
	memcpy(h + 257, "ustar  \0", 8);
	octal(h + 483, 12, 100);
	seal(h);
	put(&a, h, 512);
	end(&a);
	scan(&a, SIZE_MAX, 0, a.len, 0, &r);
	ck_assert_msg(r.ret == 0 && r.t.n == 1, "%s", r.why.msg);
	ck_assert_ptr_null(r.t.sp);
	ck_assert_int_eq(tartab_locate(&r.t, &r.t.m[0], 10, &aoff, &run), 0);
	ck_assert_uint_eq(run, 90);
	done(&r, &a);
}
END_TEST

START_TEST(bad_sparse_map_drops_the_member)
{
	struct arc a = { 0 };
	struct res r;
	char x[512] = "";

	rec(x, "GNU.sparse.size", "100");
	rec(x, "GNU.sparse.map", "50,4,10,2"); /* out of order */
	ext(&a, 'x', x, strlen(x));
	entry(&a, "bad", '0', "AAAABB", NULL);
	entry(&a, "good", '0', "z", NULL);
	end(&a);
	scan(&a, SIZE_MAX, 0, a.len, 0, &r);
	ck_assert_int_eq(r.ret, 0);
	ck_assert_uint_eq(r.t.n, 1);
	ck_assert_uint_eq(r.drops, 1);
	ck_assert_msg(strstr(r.last_drop, "0 a sparse map with extents out of order"), "%s",
		      r.last_drop);
	done(&r, &a);
}
END_TEST

START_TEST(the_cap_stops_the_scan)
{
	struct arc a = { 0 };
	struct res r;
	char name[32];

	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "member-%03d", i);
		entry(&a, name, '0', "", NULL);
	}
	end(&a);
	scan(&a, SIZE_MAX, 0, a.len, 0, &r);
	ck_assert_uint_eq(r.t.n, 100);
	/* 96 + 11 per member, and "user", "group" once */
	ck_assert_uint_eq(tartab_bytes(&r.t), 100 * (sizeof(struct tar_member) + 11) + 5 + 6);
	done(&r, NULL);
	scan(&a, SIZE_MAX, 0, a.len, 10 * sizeof(struct tar_member) + 200, &r);
	ck_assert_int_eq(r.ret, -E2BIG);
	ck_assert_msg(strstr(r.why.msg, "cap of"), "%s", r.why.msg);
	ck_assert_uint_le(tartab_bytes(&r.t), 10 * sizeof(struct tar_member) + 200);
	ck_assert_uint_gt(r.t.n, 5);
	done(&r, &a);
}
END_TEST

static void same_table(const struct res *x, const struct res *y, const char *how)
{
	ck_assert_msg(x->ret == y->ret && x->t.n == y->t.n && x->drops == y->drops,
		      "%s: %d/%d, %zu/%zu members", how, x->ret, y->ret, x->t.n, y->t.n);
	ck_assert_msg(x->t.sp_n == y->t.sp_n && x->t.str_len == y->t.str_len, "%s", how);
	/* An empty table's arrays may be NULL, which memcmp must not be given. */
	ck_assert_msg(!x->t.n || memcmp(x->t.m, y->t.m, x->t.n * sizeof(*x->t.m)) == 0,
		      "%s: members", how);
	ck_assert_msg(!x->t.str_len || memcmp(x->t.str, y->t.str, x->t.str_len) == 0, "%s: strings",
		      how);
	ck_assert_msg(!x->t.sp_n || memcmp(x->t.sp, y->t.sp, x->t.sp_n * sizeof(*x->t.sp)) == 0,
		      "%s", how);
}

/* The archive of same_table_in_any_chunks: every kind of member. */
static void every_kind(struct arc *a)
{
	char x[512] = "", name[300];

	memset(name, 'n', 299);
	name[299] = 0;
	ext(a, 'L', name, 300);
	entry(a, "x", '0', "long", NULL);
	rec(x, "path", "pax/path");
	rec(x, "mtime", "5.5");
	rec(x, "uname", "someone");
	ext(a, 'x', x, strlen(x));
	entry(a, "y", '0', "data of y", NULL);
	entry(a, "/abs", '0', "dropped", NULL);
	entry(a, "d/", '5', NULL, NULL);
	entry(a, "d/s", '2', NULL, "../x");
	entry(a, "d/h", '1', NULL, "x");
	sparse_archive(a);
}

START_TEST(same_table_in_any_chunks)
{
	struct arc a = { 0 };
	struct res whole, r;

	every_kind(&a);
	scan(&a, SIZE_MAX, 0, a.len, 0, &whole);
	ck_assert_msg(whole.ret == 0 && whole.t.n == 10, "%s %zu", whole.why.msg, whole.t.n);
	scan(&a, 1, 0, a.len, 0, &r);
	same_table(&whole, &r, "one byte at a time");
	done(&r, NULL);
	for (unsigned seed = 1; seed <= 200; seed++) {
		char how[32];

		snprintf(how, sizeof(how), "random chunks, seed %u", seed);
		scan(&a, 0, seed, seed % 2 ? a.len : 0, 0, &r);
		same_table(&whole, &r, how);
		done(&r, NULL);
	}
	done(&whole, &a);
}
END_TEST

/* The first len bytes of a, in chunks of 1500, its size told (or not: tarscan_finish_unsized). */
static void scan_cut(const struct arc *a, size_t len, bool sized, struct res *r)
{
	struct tarscan *s;

	memset(r, 0, sizeof(*r));
	tartab_init(&r->t, 0);
	ck_assert_int_eq(tarscan_new(&r->t, sized ? len : 0, on_drop, r, &s), 0);
	for (size_t i = 0; i < len && r->ret == 0; i += 1500)
		r->ret = tarscan_feed(s, a->p + i, len - i < 1500 ? len - i : 1500);
	if (r->ret == 0)
		r->ret = sized ? tarscan_finish(s) : tarscan_finish_unsized(s);
	tarscan_error(s, &r->why);
	tarscan_free(s);
}

/*
 * A pass learns the archive's size only at its end (ns_tar.c, struct
 * ptap): cut anywhere, the table and the error are those of a scan told
 * the size at the start.  Only the drop count may differ: a cut member
 * that is also unsafe is dropped before the end is known.
 */
START_TEST(size_told_at_the_end_gives_the_same_table)
{
	struct arc a = { 0 };
	struct res x, y;

	every_kind(&a);
	for (size_t len = 0; len <= a.len; len++) {
		char how[48];

		snprintf(how, sizeof(how), "cut at %zu", len);
		scan_cut(&a, len, true, &x);
		scan_cut(&a, len, false, &y);
		y.drops = x.drops;
		same_table(&x, &y, how);
		ck_assert_msg(strcmp(x.why.msg, y.why.msg) == 0 && x.why.coff == y.why.coff,
			      "%s: '%s' / '%s'", how, x.why.msg, y.why.msg);
		done(&x, NULL);
		done(&y, NULL);
	}
	done(&x, &a);
}
END_TEST

static void reseal(uint8_t *b, size_t len)
{
	put_le(b + len - 8, idxhash_crc64(b, len - 8), 8);
}

START_TEST(saved_form_round_trips)
{
	struct arc a = { 0 };
	struct res r, back;
	uint8_t *b;
	size_t len;
	struct zerr why;

	every_kind(&a);
	scan(&a, SIZE_MAX, 0, a.len, 0, &r);
	ck_assert_msg(r.ret == 0 && r.t.n == 10, "%s %zu", r.why.msg, r.t.n);
	ck_assert_int_eq(tartab_encode(&r.t, a.len, &b, &len), 0);
	memset(&back, 0, sizeof(back));
	tartab_init(&back.t, 0);
	ck_assert_msg(tartab_decode(&back.t, b, len, a.len, &why) == 0, "%s", why.msg);
	back.drops = r.drops = 0;
	same_table(&r, &back, "decoded");
	ck_assert_uint_eq(back.t.dropped, 1);
	tartab_free(&back.t);
	/* another archive size, every cut, every flipped byte: refused, never a crash */
	ck_assert_int_eq(tartab_decode(&back.t, b, len, a.len - 1, &why), -EINVAL);
	for (size_t cut = 0; cut < len; cut++) {
		reseal(b, len);
		ck_assert_int_eq(tartab_decode(&back.t, b, cut, a.len, &why), -EINVAL);
	}
	for (size_t i = 0; i < len - 8; i++) {
		for (int bit = 0; bit < 8; bit++) {
			b[i] ^= (uint8_t)(1 << bit);
			ck_assert_int_eq(tartab_decode(&back.t, b, len, a.len, &why), -EINVAL);
			reseal(b, len);
			if (tartab_decode(&back.t, b, len, a.len, &why) == 0)
				tartab_free(&back.t);
			b[i] ^= (uint8_t)(1 << bit);
			reseal(b, len);
		}
	}
	free(b);
	done(&r, &a);
}
END_TEST

/* Encodes t and decodes it; returns the decode's result and its message in why. */
static int round_trip(struct tartab *t, uint64_t asize, struct zerr *why)
{
	struct tartab back;
	uint8_t *b;
	size_t len;
	int ret;

	ck_assert_int_eq(tartab_encode(t, asize, &b, &len), 0);
	tartab_init(&back, 0);
	ret = tartab_decode(&back, b, len, asize, why);
	tartab_free(&back);
	free(b);
	return ret;
}

START_TEST(decode_rejects_what_a_scan_cannot_make)
{
	struct tartab t;
	struct tar_member m = { .hdr_off = 0, .data_off = 512, .stored = 100, .size = 100 };
	struct tar_extent e[2] = { { 10, 60 }, { 50, 40 } };
	struct zerr why;

	tartab_init(&t, 0);
	ck_assert_int_eq(tartab_add(&t, &m, "a/../b", NULL, 0, "", "", NULL, 0), 0);
	ck_assert_int_eq(round_trip(&t, 1024, &why), -EINVAL);
	ck_assert_msg(strstr(why.msg, "member 0: an unsafe"), "%s", why.msg);
	tartab_free(&t);
	/* overlapping members */
	ck_assert_int_eq(tartab_add(&t, &m, "a", NULL, 0, "", "", NULL, 0), 0);
	m.hdr_off = 512;
	m.data_off = 1024;
	ck_assert_int_eq(tartab_add(&t, &m, "b", NULL, 0, "", "", NULL, 0), 0);
	ck_assert_int_eq(round_trip(&t, 4096, &why), -EINVAL);
	ck_assert_msg(strstr(why.msg, "member 1: a member overlapping"), "%s", why.msg);
	/* past the archive */
	ck_assert_int_eq(round_trip(&t, 1100, &why), -EINVAL);
	tartab_free(&t);
	/* a sparse map whose extents overlap */
	m.hdr_off = 0;
	m.data_off = 512;
	m.flags = TAR_SPARSE;
	ck_assert_int_eq(tartab_add(&t, &m, "s", NULL, 0, "", "", e, 2), 0);
	ck_assert_int_eq(round_trip(&t, 4096, &why), -EINVAL);
	ck_assert_msg(strstr(why.msg, "out of order"), "%s", why.msg);
	tartab_free(&t);
}
END_TEST

static Suite *tarscan_suite(void)
{
	Suite *s = suite_create("tarscan");
	TCase *tc = tcase_create("tarscan");

	tcase_add_test(tc, ustar_members_and_their_offsets);
	tcase_add_test(tc, gnu_long_names_and_base256);
	tcase_add_test(tc, pax_records_local_and_global);
	tcase_add_test(tc, pax_bad_length_stops_with_offset);
	tcase_add_test(tc, checksum_failure_keeps_the_members_before);
	tcase_add_test(tc, unsafe_names_are_dropped_the_rest_kept);
	tcase_add_test(tc, names_are_normalised);
	tcase_add_test(tc, past_the_end_and_absurd_sizes);
	tcase_add_test(tc, the_end_is_a_zero_block_or_eof);
	tcase_add_test(tc, gnu_sparse_in_every_form);
	tcase_add_test(tc, sparse_member_all_hole);
	tcase_add_test(tc, bad_sparse_map_drops_the_member);
	tcase_add_test(tc, the_cap_stops_the_scan);
	tcase_add_test(tc, same_table_in_any_chunks);
	tcase_add_test(tc, size_told_at_the_end_gives_the_same_table);
	tcase_add_test(tc, saved_form_round_trips);
	tcase_add_test(tc, decode_rejects_what_a_scan_cannot_make);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tarscan_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
