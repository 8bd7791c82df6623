/* SPDX-License-Identifier: MIT */
/*
 * Tests for index/fmttab.c: every entry of the table of formats has every
 * hook fmt.h marks required, sane names and suffixes, and the lookups
 * answer from the table.  Built twice: against the real table
 * (check_fmttab) and against the one with the dummy format tests/fmt/
 * adds (check_fmttab_zid, CHECK_EXTRA the dummy's name, which must be the
 * last entry).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "fmttab.h"
#include "probe.h"
#include "reader.h"

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

START_TEST(ids_keep_the_probe_values)
{
	ck_assert_str_eq(fmttab_name(PROBE_XZ), "xz");
	ck_assert_str_eq(fmttab_name(PROBE_GZIP), "gzip");
	ck_assert_str_eq(fmttab_name(PROBE_ZSTD), "zstd");
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

	ck_assert_int_eq(fmttab_strip("a.tzst", out, sizeof(out)), PROBE_ZSTD);
	ck_assert_str_eq(out, "a.tar");
	ck_assert_int_eq(fmttab_strip("a.log.gz", out, sizeof(out)), PROBE_GZIP);
	ck_assert_str_eq(out, "a.log");
	ck_assert_int_eq(fmttab_by_suffix("x.txz"), PROBE_XZ);
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
	tcase_add_test(tc, ids_keep_the_probe_values);
	tcase_add_test(tc, suffixes_come_from_the_table);
	tcase_add_test(tc, names_for_messages);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
