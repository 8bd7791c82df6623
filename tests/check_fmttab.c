/* SPDX-License-Identifier: MIT */
/*
 * Tests for index/fmttab.c: every entry of the table of formats has every
 * hook fmt.h marks required, sane names and suffixes, and the lookups
 * answer from the table.  Built twice: against the real table
 * (check_fmttab) and against the one with the dummy format tests/fmt/
 * adds (check_fmttab_zid, CHECK_EXTRA the dummy's name, which must be the
 * last entry).  With the dummy, its saved index goes through the envelope
 * (idxfile.c) by its saved hook alone: saved, read, loaded, refused as
 * another kind and pruned with no line of idxfile.c naming it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"
#include "fmttab.h"
#include "idxfile.h"
#include "reader.h"
#include "src.h"
#include "zmtest_store.h"

START_TEST(every_entry_has_its_hooks)
{
	ck_assert_int_ge(fmttab_count(), 3);
	ck_assert_int_lt(fmttab_count(), FMTTAB_MAX);
	for (int id = 1; id <= fmttab_count(); id++) {
		const struct fmt *f = fmt_get(id);

		ck_assert_ptr_nonnull(f);
		ck_assert_msg(f->name && f->name[0], "entry %d has no name", id);
		ck_assert_msg(f->unit && f->unit[0], "%s: no unit", f->name);
		ck_assert_msg(f->sniff && f->open && f->free && f->dec_open && f->dec_read &&
				      f->dec_tell && f->dec_cost && f->dec_close && f->extent &&
				      f->info,
			      "%s: a reader hook is missing", f->name);
		ck_assert_msg(f->info_line && f->info_counts && f->advice,
			      "%s: a tools hook (info_line, info_counts, advice) is missing",
			      f->name);
		ck_assert_msg(f->suffixes, "%s: no suffix table", f->name);
		for (const struct fmt_suffix *s = f->suffixes; s->ext; s++)
			ck_assert_msg(s->ext[0] == '.' && s->ext[1] && s->add,
				      "%s: suffix '%s' is not '.something' with an add", f->name,
				      s->ext);
		ck_assert_msg(f->bg == FMTTAB_BG_NONE || f->bg == FMTTAB_BG_INDEX ||
				      f->bg == FMTTAB_BG_CKPT,
			      "%s: bg %d", f->name, (int)f->bg);
		ck_assert_msg(!f->ctx_free || f->ctx_new, "%s: ctx_free without ctx_new", f->name);
		if (f->ck)
			ck_assert_msg(f->ck->build && f->ck->open && f->ck->ops.read &&
					      f->ck->ops.cost && f->ck->ops.close,
				      "%s: a checkpoint hook is missing", f->name);
		for (int j = 1; j < id; j++)
			ck_assert_msg(strcmp(fmt_get(j)->name, f->name) != 0, "%s twice", f->name);
	}
	ck_assert_ptr_null(fmt_get(0));
	ck_assert_ptr_null(fmt_get(fmttab_count() + 1));
}
END_TEST

/* Every saved kind, the formats' and the checkpoint sets', is whole and has a kind of its own. */
START_TEST(saved_kinds_are_whole_and_distinct)
{
	const struct fmt_saved *ck = fmt_saved_kind(IDXFILE_KIND_CKPT);

	ck_assert_ptr_nonnull(ck);
	ck_assert_ptr_null(ck->fresh); /* no format's: fmttab_saved never reaches it */
	ck_assert_ptr_null(fmt_saved_kind(0));
	for (int id = 1; id <= fmttab_count(); id++) {
		const struct fmt_saved *k = fmt_get(id)->saved;

		if (!k)
			continue;
		ck_assert_msg(k->max && k->fits && k->check && k->size && k->put && k->get &&
				      k->fresh && k->name && k->name[0],
			      "%s: a saved hook is missing", fmt_get(id)->name);
		ck_assert_msg(k->kind != 0 && k->kind != IDXFILE_KIND_CKPT, "%s: kind %u",
			      fmt_get(id)->name, k->kind);
		ck_assert_msg(!strcmp(k->ext, IDXFILE_EXT), "%s: its index is not a %s file",
			      fmt_get(id)->name, IDXFILE_EXT);
		ck_assert_ptr_eq(fmt_saved_kind(k->kind), k);
		ck_assert(fmttab_saves(id));
	}
	ck_assert_uint_eq(fmt_saved_kind(IDXFILE_KIND_GZIP)->kind, IDXFILE_KIND_GZIP);
	ck_assert_uint_eq(fmt_saved_kind(IDXFILE_KIND_ZSTD)->kind, IDXFILE_KIND_ZSTD);
}
END_TEST

#ifdef CHECK_EXTRA
/* A zid file of n content bytes at path. */
static void write_zid(const char *path, uint64_t n)
{
	unsigned char h[16] = { 'Z', 'M', 'I', 'D', 'E', 'N', 'T', '1' };
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 8; i++)
		h[8 + i] = (unsigned char)(n >> (8 * i));
	fwrite(h, 1, sizeof(h), f);
	for (uint64_t i = 0; i < n; i++)
		fputc((int)(i * 7), f);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * "One file and one line" for saving: the dummy's index is saved, read,
 * loaded, told apart from gzip's and pruned by the envelope, which only
 * knows it through fmt_saved_kind.  Fails with "unknown kind 77" if the
 * envelope does not ask the table.
 */
START_TEST(dummy_saves_through_its_hook)
{
	char top[] = "/tmp/check_fmttab.XXXXXX", dir[64], path[64], ipath[128];
	const struct fmt *f = fmt_get(fmttab_count());
	struct idxfile_info info;
	struct zerr err = { 0 };
	struct idxfile_id id;
	struct gzdec_index *g = NULL;
	struct zsrc *src;
	/* fmt_zid.c's records: content size, entry size, header size (version 1) */
	uint64_t usize = 5000, rec[3] = { usize, 1 << 20, 16 }, got[3] = { 0 };
	unsigned removed = 9;
	int fd, ret;

	ck_assert_ptr_nonnull(mkdtemp(top));
	snprintf(dir, sizeof(dir), "%s/idx", top);
	snprintf(path, sizeof(path), "%s/a.zid", top);
	write_zid(path, usize);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(zsrc_local(fd, &src), 0);
	ck_assert_int_eq(idxfile_identify(src, &id), 0);
	ck_assert_ptr_nonnull(f->saved);
	ck_assert_int_eq(fmttab_saved(fmttab_count(), zmtest_store(dir), path, src, NULL), -ENOENT);

	ck_assert_int_eq(idxfile_save_recs(zmtest_store(dir), path, &id, f->saved, rec, NULL), 0);
	ck_assert_int_eq(idxfile_path(dir, &id, ipath, sizeof(ipath)), 0);
	ret = idxfile_read_header(ipath, &info, &err);
	ck_assert_msg(ret == 0, "read_header: %d %s", ret, err.msg);
	ck_assert_uint_eq(info.kind, f->saved->kind);
	ck_assert_uint_eq(info.usize, usize);
	ck_assert_int_eq(idxfile_load_recs(zmtest_store(dir), path, &id, f->saved, 0, got, &err),
			 0);
	ck_assert_mem_eq(got, rec, sizeof(rec));
	ck_assert_int_eq(fmttab_saved(fmttab_count(), zmtest_store(dir), path, src, &err), 0);
	/* the kind is the file's: gzip's load refuses it, naming both kinds */
	ck_assert_int_eq(idxfile_load(zmtest_store(dir), path, &id, 0, &g, &err), -EBADMSG);
	ck_assert_msg(strstr(err.msg, "a zid index, not a gzip one"), "%s", err.msg);
	/* records the hook refuses are not written */
	rec[0]++;
	ck_assert_int_eq(idxfile_save_recs(zmtest_store(dir), path, &id, f->saved, rec, NULL),
			 -EINVAL);

	ck_assert_int_eq(idxfile_prune(zmtest_store(dir), &removed), 0);
	ck_assert_uint_eq(removed, 0); /* its source is there, the same */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(idxfile_prune(zmtest_store(dir), &removed), 0);
	ck_assert_uint_eq(removed, 1); /* its source is gone */
	zsrc_put(src);
	ck_assert_int_eq(rmdir(dir), 0);
	ck_assert_int_eq(rmdir(top), 0);
}
END_TEST
#endif

/* The ids the unit tests use for the table's first three entries (check_reader's FMT_*). */
enum { FMT_XZ = 1, FMT_GZIP = 2, FMT_ZSTD = 3 };

START_TEST(ids_keep_the_table_order)
{
	ck_assert_str_eq(fmttab_name(FMT_XZ), "xz");
	ck_assert_str_eq(fmttab_name(FMT_GZIP), "gzip");
	ck_assert_str_eq(fmttab_name(FMT_ZSTD), "zstd");
	ck_assert_str_eq(fmttab_name(0), "plain");
	ck_assert_str_eq(fmttab_name(FMTTAB_MAX + 3), "plain");
#ifdef CHECK_EXTRA
	ck_assert_str_eq(fmttab_name(fmttab_count()), CHECK_EXTRA);
#endif
}
END_TEST

START_TEST(suffixes_come_from_the_table)
{
	char out[64];

	ck_assert_int_eq(fmttab_strip("a.tzst", out, sizeof(out)), FMT_ZSTD);
	ck_assert_str_eq(out, "a.tar");
	ck_assert_int_eq(fmttab_strip("a.log.gz", out, sizeof(out)), FMT_GZIP);
	ck_assert_str_eq(out, "a.log");
	ck_assert_int_eq(fmttab_by_suffix("x.txz"), FMT_XZ);
	ck_assert_int_eq(fmttab_by_suffix("x.bz2"), 0);
	ck_assert_int_eq(fmttab_by_suffix(".gz"), 0);		/* no stem */
	ck_assert_int_eq(fmttab_strip("abcdef.gz", out, 4), 0); /* out too small */
	/* every format's every suffix strips to its own id */
	for (int id = 1; id <= fmttab_count(); id++)
		for (const struct fmt_suffix *s = fmt_get(id)->suffixes; s->ext; s++) {
			char name[64];

			snprintf(name, sizeof(name), "x%s", s->ext);
			ck_assert_int_eq(fmttab_strip(name, out, sizeof(out)), id);
			ck_assert_str_eq(out + 1, s->add);
		}
}
END_TEST

START_TEST(names_for_messages)
{
	char want[256] = "";

	for (int id = 1; id <= fmttab_count(); id++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s",
			 id == 1		? ""
			 : id == fmttab_count() ? " or "
						: ", ",
			 fmttab_name(id));
	ck_assert_str_eq(fmttab_names(), want);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fmttab");
	TCase *tc = tcase_create("table");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, every_entry_has_its_hooks);
	tcase_add_test(tc, ids_keep_the_table_order);
	tcase_add_test(tc, suffixes_come_from_the_table);
	tcase_add_test(tc, names_for_messages);
	tcase_add_test(tc, saved_kinds_are_whole_and_distinct);
#ifdef CHECK_EXTRA
	tcase_add_test(tc, dummy_saves_through_its_hook);
#endif
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
