/* SPDX-License-Identifier: MIT */
/*
 * The dummy format's checkpoints go through the core's paths alone (issue
 * 31, item 4): a zid file of one 3 MiB entry (header version 2), wide at a
 * 64 KiB span, gets its set from reader_build_checkpoints (the pass the
 * background indexer runs), which saves it as a ".zmc" file of kind 3 in
 * index_dir; a fresh reader in a fresh context loads it and serves a read
 * near the end by resuming at the last checkpoint before it, decoding at
 * most a span and a slice, not the 3 MiB before it.
 *
 * Without zid's ck hook (fmt_zid.c's `.ck`) the entry is never checkpointed
 * (r->ck stays NULL): the first test fails at "no checkpoints wanted", and
 * a far read decodes from the entry's start.
 *
 * Built and linked like check_fmttab_zid: against zmindex_zid, the library
 * whose format table carries the dummy.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "idxfile.h"
#include "reader.h"
#include "reader_int.h"
#include "zmctx.h"
#include "zmtest.h"
#include "zmtest_store.h"

#define CK_SPAN (64u << 10)
#define USIZE	((3u << 20) + 4321)

static char top[] = "/tmp/check_zidck.XXXXXX";
static char path[128], idx[128];
static uint8_t *content;

/* A version-2 zid file of USIZE bytes in one entry (its entry size is larger). */
static void setup(void)
{
	unsigned char h[24] = { 'Z', 'M', 'I', 'D', 'E', 'N', 'T', '2' };
	uint64_t chunk = 1ull << 30;
	uint32_t x = 31;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(top));
	zmtest_join(path, sizeof(path), top, "w.zid");
	zmtest_join(idx, sizeof(idx), top, "idx");
	ck_assert_int_eq(mkdir(idx, 0700), 0);
	content = malloc(USIZE);
	ck_assert_ptr_nonnull(content);
	for (size_t i = 0; i < USIZE; i++) {
		x = x * 1103515245u + 12345u;
		content[i] = (uint8_t)(x >> 16);
	}
	for (int i = 0; i < 8; i++) {
		h[8 + i] = (unsigned char)((uint64_t)USIZE >> (8 * i));
		h[16 + i] = (unsigned char)(chunk >> (8 * i));
	}
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(h, 1, sizeof(h), f), sizeof(h));
	ck_assert_uint_eq(fwrite(content, 1, USIZE, f), USIZE);
	ck_assert_int_eq(fclose(f), 0);
}

static void teardown(void)
{
	free(content);
	zmtest_sh(top, "rm -rf '%s'", top);
}

static struct reader *open_reader(struct zmctx *zm)
{
	struct reader_opts ro;
	struct reader *r = NULL;
	int ret;

	reader_opts_default(&ro, 64u << 20);
	ro.ck_span = CK_SPAN;
	ro.index_dir = zmtest_store(idx);
	ret = reader_open(path, zm, &ro, &r, NULL);
	ck_assert_msg(ret == 0, "reader_open: %d", ret);
	return r;
}

/* The one ".zmc" file in idx, whose header says kind 3 (IDXFILE_KIND_CKPT). */
static void check_zmc(void)
{
	char pat[160];
	glob_t g;
	struct idxfile_info in;
	struct zerr err = { 0 };

	snprintf(pat, sizeof(pat), "%s/*%s", idx, IDXFILE_EXT_CKPT);
	ck_assert_int_eq(glob(pat, 0, NULL, &g), 0);
	ck_assert_uint_eq(g.gl_pathc, 1);
	ck_assert_msg(idxfile_read_header(g.gl_pathv[0], &in, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(in.kind, IDXFILE_KIND_CKPT);
	globfree(&g);
}

START_TEST(built_saved_loaded_resumed)
{
	struct zmctx *zm;
	struct reader *r;
	struct reader_info in;
	struct zerr why = { 0 };
	const struct ckpt_set *s;
	size_t npts;
	uint64_t far = USIZE - 70000;
	uint8_t buf[4096];
	int ret;

	/* the build: one pass over the wide entry, a point every span */
	ck_assert_int_eq(zmctx_new(16u << 20, &zm), 0);
	r = open_reader(zm);
	ck_assert_uint_eq(r->map.n, 1);
	ck_assert_msg(r->ck && r->ckable && r->ckable[0] == CKABLE_WIDE,
		      "no checkpoints wanted in the 3 MiB entry: zid's ck hook not seen");
	ret = reader_build_checkpoints(r, r->src, &why);
	ck_assert_msg(ret == 0, "reader_build_checkpoints: %d %s", ret, why.msg);
	s = reader_ck_set(r, 0);
	ck_assert_ptr_nonnull(s);
	npts = s->n;
	ck_assert_uint_eq(npts, 1 + (USIZE - 1) / CK_SPAN);
	reader_close(r);
	zmctx_free(zm);
	check_zmc();

	/* a fresh context: the set comes from idx, and a far read resumes at it */
	ck_assert_int_eq(zmctx_new(16u << 20, &zm), 0);
	r = open_reader(zm);
	ck_assert_int_eq(reader_pread(r, buf, sizeof(buf), far), sizeof(buf));
	ck_assert_msg(memcmp(buf, content + far, sizeof(buf)) == 0, "wrong bytes at %llu",
		      (unsigned long long)far);
	reader_get_info(r, &in);
	fprintf(stderr,
		"check_zidck: %zu points; a read at %llu of %u decoded %llu bytes (%llu resumes)\n",
		npts, (unsigned long long)far, USIZE, (unsigned long long)in.decoded,
		(unsigned long long)in.resumes);
	ck_assert_msg(in.resumes >= 1, "the far read did not resume at a checkpoint");
	ck_assert_uint_eq(in.ckpts, npts - 1);
	ck_assert_msg(in.decoded <= CK_SPAN + r->opts.slice,
		      "a far read decoded %llu bytes; a resumed one needs at most %zu",
		      (unsigned long long)in.decoded, (size_t)(CK_SPAN + r->opts.slice));
	reader_close(r);
	zmctx_free(zm);
}
END_TEST

/* The source offset off as a zid checkpoint's blob. */
static void put_at(unsigned char *blob, uint64_t off)
{
	for (int i = 0; i < 8; i++)
		blob[8 + i] = (unsigned char)(off >> (8 * i));
}

/* A blob the build did not make for this entry is refused, not followed. */
START_TEST(foreign_blob_refused)
{
	struct zmctx *zm;
	struct reader *r;
	struct zerr err = { 0 };
	unsigned char blob[16] = { 'Z', 'I', 'D', 'C', 'K', 'P', 'T', '1' };
	uint64_t past = 24 + (uint64_t)USIZE; /* the source offset just past the entry */
	void *dec = NULL;

	ck_assert_int_eq(zmctx_new(16u << 20, &zm), 0);
	r = open_reader(zm);
	ck_assert_ptr_nonnull(r->f->ck);
	put_at(blob, past);
	ck_assert_int_eq(r->f->ck->open(r, 0, blob, sizeof(blob), &dec, &err), -EINVAL);
	ck_assert_ptr_null(dec);
	ck_assert_int_eq(r->f->ck->open(r, 0, blob, 8, &dec, &err), -EINVAL);
	put_at(blob, 24 + CK_SPAN);
	ck_assert_int_eq(r->f->ck->open(r, 0, blob, sizeof(blob), &dec, &err), 0);
	r->f->ck->ops.close(dec);
	dec = NULL;
	blob[0] = 'X'; /* inside the entry, but no zid checkpoint's magic */
	ck_assert_int_eq(r->f->ck->open(r, 0, blob, sizeof(blob), &dec, &err), -EINVAL);
	reader_close(r);
	zmctx_free(zm);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zidck");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, built_saved_loaded_resumed);
	tcase_add_test(tc, foreign_blob_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
