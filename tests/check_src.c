/* SPDX-License-Identifier: MIT */
/*
 * The reader over a source that is not a file (issue 21 part 1): an
 * in-memory source (memsrc, zmtest.h) that gives short counts, fails a range with
 * a chosen errno, or turns into another version, and counts its frees.
 * The archives are made once by the xz, gzip and zstd tools from
 * zmtest_text and random bytes, then read into memory.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gzdec.h"
#include "idxfile.h"
#include "reader.h"
#include "s3.h"
#include "s3src.h"
#include "xzdec.h"
#include "zlog.h"
#include "zmctx.h"
#include "zmtest.h"
#include "zmtest_store.h"

#define KiB	  1024u
#define MiB	  (1024u * KiB)
#define TEXT_SIZE (768 * KiB)

static char dir[PATH_MAX];
static int gen_ok;

struct blob {
	unsigned char *p;
	size_t n;
};

static struct blob slurp(const char *name)
{
	char path[PATH_MAX];
	struct blob b;

	ck_assert_msg(gen_ok, "fixtures were not made (see stderr)");
	zmtest_join(path, sizeof(path), dir, name);
	b.p = zmtest_slurp(path, &b.n);
	return b;
}

/* The reader over m (a reference of its own, so m outlives it); the context in *zm. */
static struct reader *open_mem(struct memsrc *m, const char *name, struct zmctx **zm)
{
	struct reader_opts ro;
	struct reader *r = NULL;
	struct zerr why = { 0 };

	reader_opts_default(&ro, 4 * MiB);
	ck_assert_int_eq(zmctx_new(4 * MiB, zm), 0);
	ck_assert_msg(reader_open_src(zsrc_get(memsrc_src(m)), name, *zm, &ro, &r, &why) == 0,
		      "%s: %s", name, why.msg);
	return r;
}

/* len bytes at off read exactly as want[off, off + len). */
static void expect_bytes(struct reader *r, const struct blob *want, uint64_t off, size_t len,
			 const char *what)
{
	unsigned char *buf = malloc(len);
	ssize_t n;

	ck_assert_ptr_nonnull(buf);
	n = reader_pread(r, buf, len, off);
	ck_assert_msg(n == (ssize_t)len, "%s: read at %llu gave %zd, want %zu", what,
		      (unsigned long long)off, n, len);
	ck_assert_msg(memcmp(buf, want->p + off, len) == 0, "%s: wrong bytes at %llu", what,
		      (unsigned long long)off);
	free(buf);
}

/* Each archive, read through 1..7-byte preads, gives the original at several offsets. */
START_TEST(short_reads_serve_exact_bytes)
{
	static const char *const names[] = { "text.xz", "text.gz", "text.zst" };
	static const uint64_t offs[] = { 0, 1, 65535, 65536, 200001, 500000, TEXT_SIZE - 4097 };
	struct blob text = slurp("text");

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct blob a = slurp(names[i]);
		struct memsrc *m = memsrc_new(a.p, a.n);
		struct zmctx *zm;
		struct reader *r;

		memsrc_short(m, 7);
		r = open_mem(m, names[i], &zm);
		ck_assert_uint_eq(reader_size(r), TEXT_SIZE);
		for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++)
			expect_bytes(r, &text, offs[k], 4096, names[i]);
		/* Whole preads would be a few dozen; 1..7 bytes each, thousands (not
		 * a.n / 7: the xz open reads Header, Footer and Index only). */
		ck_assert_msg(atomic_load(&m->calls) > 2000, "%s: the reads were not short (%u)",
			      names[i], atomic_load(&m->calls));
		reader_close(r);
		zmctx_free(zm);
		ck_assert_uint_eq(memsrc_frees(m), 0); /* ours is left */
		zsrc_put(memsrc_src(m));
		ck_assert_uint_eq(memsrc_frees(m), 1);
		memsrc_destroy(m);
		free(a.p);
	}
	free(text.p);
}
END_TEST

/* Blocks of text.xz (64 KiB each), as its Index says. */
static struct xzdec_index *blocks_of(struct memsrc *m)
{
	struct xzdec_index *idx;
	struct zerr e;

	ck_assert_int_eq(xzdec_index_read(memsrc_src(m), m->len, &idx, &e), 0);
	ck_assert_uint_ge(idx->nblocks, 8);
	return idx;
}

/* An error inside one Block's compressed bytes fails that Block's reads only. */
START_TEST(error_fails_one_unit_only)
{
	struct blob text = slurp("text"), a = slurp("text.xz");
	struct memsrc *m = memsrc_new(a.p, a.n);
	struct xzdec_index *idx = blocks_of(m);
	const struct xzdec_block *bad = &idx->blocks[3];
	unsigned char buf[4096];
	struct zmctx *zm;
	struct reader *r = open_mem(m, "text.xz", &zm);

	memsrc_short(m, 5);
	memsrc_fail(m, bad->coff + bad->csize / 2, bad->coff + bad->csize / 2 + 1, -EIO);
	ck_assert_int_eq(reader_pread(r, buf, sizeof(buf), bad->uoff + 100), -EIO);
	/* and again: the failure is remembered, not retried into other bytes */
	ck_assert_int_eq(reader_pread(r, buf, sizeof(buf), bad->uoff), -EIO);
	for (size_t k = 0; k < idx->nblocks; k++)
		if (k != 3)
			expect_bytes(r, &text, idx->blocks[k].uoff + 17, 4096, "a good Block");
	reader_close(r);
	zmctx_free(zm);
	xzdec_index_free(idx);
	zsrc_put(memsrc_src(m));
	memsrc_destroy(m);
	free(a.p);
	free(text.p);
}
END_TEST

/* A unit decoded whole first names its compressed bytes (hint), so a remote source fetches them in
 * one go. */
START_TEST(whole_unit_is_hinted)
{
	struct blob a = slurp("text.xz");
	struct memsrc *m = memsrc_new(a.p, a.n);
	struct xzdec_index *idx = blocks_of(m);
	const struct xzdec_block *b = &idx->blocks[3];
	unsigned char buf[4096];
	struct zmctx *zm;
	struct reader *r = open_mem(m, "text.xz", &zm);

	m->hint_off = m->hint_len = 0;
	ck_assert_int_eq(reader_pread(r, buf, sizeof(buf), b->uoff + 100), (ssize_t)sizeof(buf));
	ck_assert_uint_le(m->hint_off, b->coff);
	ck_assert_uint_ge(m->hint_off + m->hint_len, b->coff + b->csize);
	ck_assert_uint_le(m->hint_len, b->csize + 4096);
	reader_close(r);
	zmctx_free(zm);
	xzdec_index_free(idx);
	zsrc_put(memsrc_src(m));
	memsrc_destroy(m);
	free(a.p);
}
END_TEST

/*
 * A new version under an open reader: cached units may still be served
 * (the old bytes), uncached ones fail, and no read ever gives the new
 * bytes.  rand2.xz has rand.xz's layout byte for byte but other content,
 * so a reader that missed the change would decode it cleanly.
 */
static void changed_version(unsigned how)
{
	struct blob old = slurp("rand"), new = slurp("rand2"), a = slurp("rand.xz"),
		    b = slurp("rand2.xz");
	struct memsrc *m = memsrc_new(a.p, a.n);
	unsigned char buf[4096];
	struct zmctx *zm;
	struct reader *r = open_mem(m, "rand.xz", &zm);

	ck_assert_uint_eq(a.n, b.n); /* the same layout */
	expect_bytes(r, &old, 1000, sizeof(buf), "before the change");
	memsrc_change(m, b.p, b.n, how);
	for (uint64_t off = 65536; off < old.n; off += 65536) {
		ssize_t n = reader_pread(r, buf, sizeof(buf), off + 3);

		ck_assert_msg(n == -EIO || n == -ESTALE, "read at %llu after the change gave %zd",
			      (unsigned long long)(off + 3), n);
		ck_assert_msg(memcmp(buf, new.p + off + 3, sizeof(buf)) != 0,
			      "the new version's bytes at %llu", (unsigned long long)(off + 3));
	}
	/* a cached unit: the old bytes or an error, never the new ones */
	if (reader_pread(r, buf, sizeof(buf), 1000) == (ssize_t)sizeof(buf))
		ck_assert(memcmp(buf, old.p + 1000, sizeof(buf)) == 0);
	reader_close(r);
	zmctx_free(zm);
	zsrc_put(memsrc_src(m));
	memsrc_destroy(m);
	free(a.p);
	free(b.p);
	free(old.p);
	free(new.p);
}

START_TEST(changed_file_fails_uncached_units)
{
	changed_version(
		MEMSRC_STAT); /* a local file rewritten in place: pread gives the new bytes */
}
END_TEST

START_TEST(changed_object_fails_uncached_units)
{
	changed_version(MEMSRC_ESTALE); /* an object whose ETag moved: every GET says -ESTALE */
}
END_TEST

START_TEST(changed_both_fails_uncached_units)
{
	changed_version(MEMSRC_STAT | MEMSRC_ESTALE);
}
END_TEST

/*
 * An object overwritten and then put back (a rollback, a re-upload, a sync
 * tool: the same ETag again).  While it is another version, reads of units
 * not cached fail; once it is back they read its bytes again.  The failure
 * belonged to the version that was away, not to the units read meanwhile.
 */
START_TEST(object_put_back_reads_again)
{
	struct blob old = slurp("rand"), a = slurp("rand.xz"), b = slurp("rand2.xz");
	struct memsrc *m = memsrc_new(a.p, a.n);
	unsigned char buf[4096];
	struct reader_info in;
	struct zmctx *zm;
	struct reader *r = open_mem(m, "rand.xz", &zm);

	expect_bytes(r, &old, 1000, sizeof(buf), "before the overwrite");
	memsrc_change(m, b.p, b.n, MEMSRC_ESTALE); /* another ETag: every GET says 412 */
	for (uint64_t off = 65536; off < old.n; off += 65536)
		ck_assert_int_lt(reader_pread(r, buf, sizeof(buf), off + 3), 0);
	memsrc_change(m, a.p, a.n, 0); /* put back: the ETag opened passes If-Match again */
	for (uint64_t off = 65536; off < old.n; off += 65536)
		expect_bytes(r, &old, off + 3, sizeof(buf), "after the put-back");
	reader_get_info(r, &in);
	ck_assert_uint_eq(in.failed, 0);
	reader_close(r);
	zmctx_free(zm);
	zsrc_put(memsrc_src(m));
	memsrc_destroy(m);
	free(a.p);
	free(b.p);
	free(old.p);
}
END_TEST

/*
 * Two versions of one object that share the size, the Last-Modified second,
 * the first and last 4 KiB, and every bit of their ETags that a hash kept
 * (these two agree in fnv64 mod 10^9, which was once the identity's ctime
 * nanoseconds).  The index saved for one is never taken for the other.
 */
START_TEST(colliding_etags_keep_their_indexes_apart)
{
	static const char url[] = "s3://bkt/k/text.gz",
			  e1[] = "\"4bcd83a98bc4ee323ec93c0f0e704d04\"",
			  e2[] = "\"56acd1ad649f3db6ee2bffca648ad192\"";
	struct s3_stat o1 = { .mtime = 1700000000 }, o2;
	struct blob a = slurp("text.gz");
	dev_t dev = s3src_dev("http://127.0.0.1:9", "bkt");
	struct idxfile_id ida, idb;
	struct gzdec_index *g = NULL;
	struct zerr err = { 0 };
	struct memsrc *ma, *mb;
	char idir[PATH_MAX];
	int ret;

	ck_assert_uint_gt(a.n, 3 * 4096);
	o1.size = a.n;
	strcpy(o1.etag, e1);
	o2 = o1;
	strcpy(o2.etag, e2);
	ma = memsrc_new(a.p, a.n);
	s3src_version(dev, "k/text.gz", &o1, &ma->st);
	memsrc_set_tag(ma, e1);
	a.p[a.n / 2] ^= 1; /* other bytes between */
	mb = memsrc_new(a.p, a.n);
	s3src_version(dev, "k/text.gz", &o2, &mb->st);
	memsrc_set_tag(mb, e2);

	zmtest_join(idir, sizeof(idir), dir, "idx");
	ck_assert_int_eq(zmtest_sh(dir, "mkdir -m 700 -p idx"), 0);
	ck_assert_int_eq(idxfile_identify(memsrc_src(ma), &ida), 0);
	ck_assert_int_eq(gzdec_index_build(memsrc_src(ma), a.n, 64 << 10, &g, &err), 0);
	ck_assert_int_eq(idxfile_save(zmtest_store(idir), url, &ida, g, NULL), 0);
	gzdec_index_free(g);
	g = NULL;
	ck_assert_int_eq(idxfile_identify(memsrc_src(mb), &idb), 0);
	ret = idxfile_load(zmtest_store(idir), url, &idb, 0, &g, &err);
	ck_assert_msg(ret == -ESTALE, "the index saved for ETag %s loaded for ETag %s: %d (%s)", e1,
		      e2, ret, err.msg);
	ck_assert_ptr_null(g);
	/* the version it was made for still takes it */
	ck_assert_int_eq(idxfile_load(zmtest_store(idir), url, &ida, 0, &g, &err), 0);
	gzdec_index_free(g);
	memsrc_destroy(ma);
	memsrc_destroy(mb);
	free(a.p);
}
END_TEST

/* The reader drops the reference it was given exactly once, however it ends. */
START_TEST(reader_frees_its_source_once)
{
	struct blob a = slurp("text.xz"), text = slurp("text");
	struct memsrc *m = memsrc_new(a.p, a.n), *other = memsrc_new(a.p, a.n),
		      *junk = memsrc_new("not an archive", 14);
	struct reader_info in;
	struct reader_opts ro;
	struct reader *r;
	struct zmctx *zm;

	reader_opts_default(&ro, 4 * MiB);
	ck_assert_int_eq(zmctx_new(4 * MiB, &zm), 0);
	/* a failed open drops it too */
	ck_assert_int_eq(reader_open_src(memsrc_src(junk), "junk", zm, &ro, &r, NULL), -ENOTSUP);
	ck_assert_ptr_null(r);
	ck_assert_uint_eq(memsrc_frees(junk), 1);

	ck_assert_int_eq(reader_open_src(memsrc_src(m), "text.xz", zm, &ro, &r, NULL), 0);
	ck_assert_uint_eq(memsrc_frees(m), 0);
	/* borrowed: no reference kept or dropped */
	reader_get_info(r, &in);
	ck_assert_int_eq(reader_probe(memsrc_src(other), "other", &ro), in.fmt);
	ck_assert_int_le(reader_build_checkpoints(r, memsrc_src(other), NULL), 0);
	ck_assert_uint_eq(memsrc_frees(other), 0);
	/* detach drops it; attach of another version drops that one and keeps none */
	reader_detach(r);
	ck_assert_uint_eq(memsrc_frees(m), 1);
	ck_assert_int_eq(reader_attach(r, memsrc_src(other)), -ESTALE);
	ck_assert_uint_eq(memsrc_frees(other), 1);
	/* the right version again: a new reference, dropped once at close */
	ck_assert_int_eq(reader_attach(r, zsrc_get(memsrc_src(m))), 0);
	expect_bytes(r, &text, 300000, 4096, "after attach");
	ck_assert_uint_eq(memsrc_frees(m), 1);
	reader_close(r);
	ck_assert_uint_eq(memsrc_frees(m), 2);
	ck_assert_uint_eq(memsrc_frees(other), 1);
	ck_assert_uint_eq(memsrc_frees(junk), 1);
	zmctx_free(zm);
	memsrc_destroy(m);
	memsrc_destroy(other);
	memsrc_destroy(junk);
	free(a.p);
	free(text.p);
}
END_TEST

static int make_fixtures(void)
{
	char tmpl[] = "/tmp/check_src.XXXXXX", path[PATH_MAX];

	if (!mkdtemp(tmpl))
		return -1;
	snprintf(dir, sizeof(dir), "%s", tmpl);
	zmtest_join(path, sizeof(path), dir, "text");
	if (zmtest_text(path, TEXT_SIZE, 7) < 0)
		return -1;
	/* 64 KiB Blocks; random bytes compress to stored chunks: the same layout for any seed */
	return zmtest_sh(
		       dir,
		       "xz -k --block-size=65536 text && gzip -k text && "
		       "zstd -q -k text -o text.zst && "
		       "head -c 524288 /dev/urandom > rand && head -c 524288 /dev/urandom > rand2 && "
		       "xz -k --block-size=65536 rand rand2") == 0
		       ? 0
		       : -1;
}

int main(void)
{
	const struct zmtest_case cases[] = {
		{ "short_reads_serve_exact_bytes", short_reads_serve_exact_bytes, 0 },
		{ "error_fails_one_unit_only", error_fails_one_unit_only, 0 },
		{ "whole_unit_is_hinted", whole_unit_is_hinted, 0 },
		{ "changed_file_fails_uncached_units", changed_file_fails_uncached_units, 0 },
		{ "changed_object_fails_uncached_units", changed_object_fails_uncached_units, 0 },
		{ "changed_both_fails_uncached_units", changed_both_fails_uncached_units, 0 },
		{ "reader_frees_its_source_once", reader_frees_its_source_once, 0 },
		{ "object_put_back_reads_again", object_put_back_reads_again, 0 },
		{ "colliding_etags_keep_their_indexes_apart",
		  colliding_etags_keep_their_indexes_apart, 0 },
	};
	SRunner *sr;
	int failed;

	zlog_set_level(ZLOG_ERROR); /* the faults log on purpose: errors only */
	gen_ok = make_fixtures() == 0;
	sr = srunner_create(zmtest_suite("check_src", "src", cases,
					 sizeof(cases) / sizeof(cases[0]), 120, 1, NULL));
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (dir[0])
		zmtest_sh(dir, "rm -rf '%s'", dir);
	return failed || !gen_ok ? EXIT_FAILURE : EXIT_SUCCESS;
}
