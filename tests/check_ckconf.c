/* SPDX-License-Identifier: MIT */
/*
 * Conformance resumed from every checkpoint (issue 19, item 6): for every
 * xz file of the shared corpus, every zstd case of
 * tests/zstd/make-zstd-cases.sh and one-Block / one-frame files made here
 * at the levels that matter (xz -0, -6, -9e, dict=64KiB; zstd -1, -19,
 * --long=27, --ultra -22), checkpoints are built at a 64 KiB span and
 * saved in an index_dir; then, for every point of every set, a fresh
 * reader loads the set from there, a decoder resumed at that point reads
 * to the entry's end (through ckpt_dec, so every piece is checked against
 * the pass's CRC32s), and the bytes must equal `xz -dc` / `zstd -dc`.
 *
 * Files the reference tool rejects have no bytes to compare and are only
 * counted; so are entries the codec refuses (-ENOTSUP: other filters, a
 * dictionary).  Each test says its counts on stderr.
 *
 * usage: check_ckconf [CORPUS_DIR]  (as check_xzdec: $ZMOUNT_CORPUS, else
 * the path CMake compiled in; without it the corpus test is skipped out
 * loud and the exit status is 77).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt.h"
#include "reader.h"
#include "reader_int.h"
#include "zmctx.h"
#include "zmtest.h"
#include "zmtest_store.h"

#ifndef ZMOUNT_ZSTD_CASES
#define ZMOUNT_ZSTD_CASES "tests/zstd/make-zstd-cases.sh"
#endif

#define CK_SPAN	   (64u << 10)
#define LEVEL_SIZE (1u << 20)

static char corpus[PATH_MAX]; /* .../corpus/xz-utils */
static char tmpdir[PATH_MAX];

struct tally {
	unsigned files, rejected, unopened, notsup, sets;
	uint64_t points; /* checkpoints resumed, entry starts not counted */
	uint64_t starts; /* entry starts (point 0) decoded through the same path */
};

static void tally_say(const char *what, const struct tally *t)
{
	fprintf(stderr,
		"check_ckconf: %s: %u files, %u rejected by the reference tool, %u not "
		"opened, %u entries -ENOTSUP, %u sets; %llu checkpoints resumed "
		"(+%llu entry starts), every one equal to the reference\n",
		what, t->files, t->rejected, t->unopened, t->notsup, t->sets,
		(unsigned long long)t->points, (unsigned long long)t->starts);
}

/* Warnings and errors only: the info lines (a frame without a checksum, ...) are expected. */
static void sink(void *user, enum zlog_level level, const char *name, const char *msg,
		 const struct zerr *why)
{
	(void)user;
	fprintf(stderr, "check_ckconf: %s: %s: %s%s%s\n", level == ZLOG_ERROR ? "error" : "warning",
		name ? name : "-", msg, why ? ": " : "", why ? why->msg : "");
}

static struct reader *open_reader(struct zmctx *zm, const char *path, const char *idx)
{
	struct reader_opts ro;
	struct reader *r = NULL;

	zmctx_set_log(zm, sink, NULL, ZLOG_WARN);
	reader_opts_default(&ro, 64u << 20);
	ro.ck_span = CK_SPAN;
	ro.index_dir = idx ? zmtest_store(idx) : NULL;
	if (reader_open(path, zm, &ro, &r, NULL) < 0)
		return NULL;
	return r;
}

/*
 * Entry k's bytes from point i of its set on, from a fresh reader whose
 * set came from idx, against want[0, len) (the entry's reference bytes).
 */
static void resume_one(const char *path, const char *idx, size_t k, size_t i, size_t npoints,
		       const uint8_t *want, uint64_t len)
{
	static uint8_t buf[1u << 20];
	struct zmctx *zm;
	struct reader *r;
	const struct ckpt_set *s;
	const struct ckpt_point *p;
	struct ckpt_dec *d;
	struct zerr err = { 0 };
	void *inner, *blob;
	uint64_t pos;
	ssize_t n;

	ck_assert_int_eq(zmctx_new(16u << 20, &zm), 0);
	r = open_reader(zm, path, idx);
	ck_assert_msg(r, "%s: a second open failed", path);
	s = reader_ck_get(r, k);
	ck_assert_msg(s && s->n == npoints, "%s entry %zu: the saved set was not loaded", path, k);
	p = &s->pt[i];
	pos = p->uoff;
	blob = p->blob_len ? malloc(p->blob_len) : NULL;
	ck_assert(!p->blob_len || (blob && ckpt_blob_read(s, i, blob) == 0));
	ck_assert_int_eq(r->f->ck->open(r, k, blob, p->blob_len, &inner, &err), 0);
	free(blob);
	ck_assert_int_eq(ckpt_dec_new(s, i, inner, &r->f->ck->ops, &d), 0);
	while ((n = ckpt_dec_read(d, r->src, buf, sizeof(buf), &err)) > 0) {
		ck_assert_msg(pos + (uint64_t)n <= len, "%s entry %zu point %zu: too long", path, k,
			      i);
		ck_assert_msg(memcmp(buf, want + pos, (size_t)n) == 0,
			      "%s entry %zu point %zu (@%llu): wrong bytes in [%llu, +%zd)", path,
			      k, i, (unsigned long long)p->uoff, (unsigned long long)pos, n);
		pos += (uint64_t)n;
	}
	ck_assert_msg(n == 0, "%s entry %zu point %zu (@%llu): %zd: %s", path, k, i,
		      (unsigned long long)p->uoff, n, err.msg);
	ck_assert_msg(pos == len, "%s entry %zu point %zu: ended at %llu of %llu", path, k, i,
		      (unsigned long long)pos, (unsigned long long)len);
	ckpt_dec_close(d);
	reader_close(r);
	zmctx_free(zm);
}

/*
 * One file: its reference bytes from `tool -dc`, then every point of every
 * set resumed.  Returns without comparing anything when the tool rejects
 * the file (counted).
 */
static void conform_file(const char *path, const char *tool, struct tally *t)
{
	char idx[PATH_MAX], ref[PATH_MAX];
	struct zmctx *zm;
	struct reader *r;
	struct zerr why = { 0 };
	uint8_t *want;
	size_t wlen;
	int ret;

	t->files++;
	zmtest_join(ref, sizeof(ref), tmpdir, "ref.out");
	zmtest_join(idx, sizeof(idx), tmpdir, "idx");
	zmtest_sh(tmpdir, "rm -rf idx && mkdir -m 700 idx");
	if (zmtest_sh(tmpdir, "%s -dc '%s' > ref.out 2>/dev/null", tool, path) != 0) {
		t->rejected++;
		return;
	}
	want = zmtest_slurp(ref, &wlen);
	ck_assert_int_eq(zmctx_new(16u << 20, &zm), 0);
	r = open_reader(zm, path, idx);
	if (!r) {
		t->unopened++;
		free(want);
		zmctx_free(zm);
		return;
	}
	ck_assert_msg(cmap_size(&r->map) == wlen, "%s: %llu bytes, %s -dc gives %zu", path,
		      (unsigned long long)cmap_size(&r->map), tool, wlen);
	ret = reader_build_checkpoints(r, r->src, &why);
	ck_assert_msg(ret == 0 || ret == -ENOTSUP, "%s: building checkpoints: %d %s", path, ret,
		      why.msg);
	for (size_t k = 0; k < r->map.n; k++) {
		const struct ckpt_set *s = reader_ck_set(r, k);
		uint64_t start = r->map.start[k];

		if (!s) {
			t->notsup += r->ckable && r->ckable[k];
			continue;
		}
		t->sets++;
		for (size_t i = 0; i < s->n; i++) {
			resume_one(path, idx, k, i, s->n, want + start, cmap_len(&r->map, k));
			if (i)
				t->points++;
			else
				t->starts++;
		}
	}
	reader_close(r);
	zmctx_free(zm);
	free(want);
}

START_TEST(corpus_xz_resumed_at_every_checkpoint)
{
	struct tally t = { 0 };
	struct dirent *e;
	DIR *d = opendir(corpus);

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char path[PATH_MAX];
		size_t l = strlen(e->d_name);

		if (l < 4 || strcmp(e->d_name + l - 3, ".xz") != 0)
			continue;
		zmtest_join(path, sizeof(path), corpus, e->d_name);
		conform_file(path, "xz", &t);
	}
	closedir(d);
	tally_say("xz corpus", &t);
	ck_assert_uint_gt(t.files, 0);
}
END_TEST

START_TEST(zstd_cases_resumed_at_every_checkpoint)
{
	char dir[PATH_MAX], line[4096];
	struct tally t = { 0 };
	FILE *tsv;

	ck_assert_msg(zmtest_sh(tmpdir, "bash '%s' cases >cases.log 2>&1", ZMOUNT_ZSTD_CASES) == 0,
		      "make-zstd-cases.sh failed (see %s/cases.log)", tmpdir);
	zmtest_join(dir, sizeof(dir), tmpdir, "cases/EXPECTED.tsv");
	tsv = fopen(dir, "r");
	ck_assert_ptr_nonnull(tsv);
	zmtest_join(dir, sizeof(dir), tmpdir, "cases");
	while (fgets(line, sizeof(line), tsv)) {
		char path[PATH_MAX], *tab = strchr(line, '\t');

		if (line[0] == '#' || !tab)
			continue;
		*tab = '\0';
		zmtest_join(path, sizeof(path), dir, line);
		conform_file(path, "zstd", &t);
	}
	fclose(tsv);
	tally_say("zstd cases", &t);
	ck_assert_uint_gt(t.files, 0);
	zmtest_sh(tmpdir, "rm -rf cases cases.log");
}
END_TEST

/* One-Block and one-frame files at the levels and windows of item 6: each must get a set. */
START_TEST(levels_resumed_at_every_checkpoint)
{
	static const struct {
		const char *name, *tool, *cmd;
	} lv[] = {
		{ "l0.xz", "xz", "xz -T1 -0 -c text > l0.xz" },
		{ "l6.xz", "xz", "xz -T1 -6 -c text > l6.xz" },
		{ "l9e.xz", "xz", "xz -T1 -9e -c text > l9e.xz" },
		{ "dict64k.xz", "xz", "xz -T1 --lzma2=dict=64KiB -c text > dict64k.xz" },
		{ "l1.zst", "zstd", "zstd -q -1 -c text > l1.zst" },
		{ "l19.zst", "zstd", "zstd -q -19 -c text > l19.zst" },
		{ "long27.zst", "zstd", "zstd -q --long=27 -c text > long27.zst" },
		{ "ultra22.zst", "zstd", "zstd -q --ultra -22 -c text > ultra22.zst" },
	};
	struct tally t = { 0 };
	char path[PATH_MAX];

	zmtest_join(path, sizeof(path), tmpdir, "text");
	ck_assert_int_eq(zmtest_text(path, LEVEL_SIZE, 19), 0);
	for (size_t i = 0; i < sizeof(lv) / sizeof(lv[0]); i++) {
		unsigned sets = t.sets;

		ck_assert_int_eq(zmtest_sh(tmpdir, "%s", lv[i].cmd), 0);
		zmtest_join(path, sizeof(path), tmpdir, lv[i].name);
		conform_file(path, lv[i].tool, &t);
		ck_assert_msg(t.sets == sets + 1, "%s: no checkpoints", lv[i].name);
	}
	tally_say("levels", &t);
	ck_assert_uint_eq(t.rejected + t.unopened + t.notsup, 0);
}
END_TEST

int main(int argc, char **argv)
{
	const struct zmtest_case cases[] = {
		{ "corpus_xz_resumed_at_every_checkpoint", corpus_xz_resumed_at_every_checkpoint,
		  1 },
		{ "zstd_cases_resumed_at_every_checkpoint", zstd_cases_resumed_at_every_checkpoint,
		  0 },
		{ "levels_resumed_at_every_checkpoint", levels_resumed_at_every_checkpoint, 0 },
	};
	const char *dir = argc > 1 ? argv[1] : getenv("ZMOUNT_CORPUS");
	const char *tmp = getenv("TMPDIR");
	char probe[PATH_MAX];
	int failed, skipped = 0, have_corpus;
	SRunner *sr;

#ifdef ZMOUNT_CORPUS_DEFAULT
	if (!dir)
		dir = ZMOUNT_CORPUS_DEFAULT;
#endif
	snprintf(corpus, sizeof(corpus), "%s/xz-utils", dir ? dir : "");
	zmtest_join(probe, sizeof(probe), corpus, "EXPECTED.tsv");
	have_corpus = access(probe, R_OK) == 0;
	if (!have_corpus)
		fprintf(stderr, "check_ckconf: SKIP: corpus not found (%s: %s)\n", probe,
			strerror(errno));
	/* absolute: index_dir keys saved sets by the archive's absolute path */
	snprintf(tmpdir, sizeof(tmpdir), "%s/check_ckconf.XXXXXX",
		 tmp && *tmp == '/' ? tmp : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	sr = srunner_create(zmtest_suite("check_ckconf", "ckconf", cases,
					 sizeof(cases) / sizeof(cases[0]), 300, have_corpus,
					 &skipped));
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	zmtest_sh("/", "rm -rf '%s'", tmpdir);
	if (failed)
		return 1;
	if (skipped) {
		fprintf(stderr, "check_ckconf: SKIP: %d tests did not run: no corpus\n", skipped);
		return 77;
	}
	return 0;
}
