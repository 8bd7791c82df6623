/* SPDX-License-Identifier: MIT */
/*
 * Tests for fs/names.c: the archive suffixes, and the resolution of one
 * directory's visible names.  is_archive is a stub that answers from a
 * table and counts its calls per entry.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

/* names_strip into a large buffer; returns the result or NULL for 0. */
static const char *strip(const char *name)
{
	static char out[512];
	int ret;

	memset(out, '#', sizeof(out));
	out[sizeof(out) - 1] = '\0';
	ret = names_strip(name, out, sizeof(out));
	ck_assert_msg(ret == 0 || ret == 1, "names_strip(\"%s\") returned %d", name, ret);
	return ret ? out : NULL;
}

static void assert_strip(const char *name, const char *want)
{
	const char *got = strip(name);

	if (!want)
		ck_assert_msg(got == NULL, "names_strip(\"%s\") gave \"%s\", want 0", name, got);
	else
		ck_assert_msg(got && strcmp(got, want) == 0,
			      "names_strip(\"%s\") gave %s%s%s, want \"%s\"", name, got ? "\"" : "",
			      got ? got : "0", got ? "\"" : "", want);
}

START_TEST(strip_xz_and_gz)
{
	assert_strip("x.xz", "x");
	assert_strip("x.gz", "x");
	assert_strip("data.csv.gz", "data.csv");
	assert_strip("a.b.c.xz", "a.b.c");
	assert_strip("x.gz.gz", "x.gz"); /* one suffix at a time */
	assert_strip("x.xz.gz", "x.xz");
	assert_strip("x.zst", "x");
	assert_strip("pmlogger.20261130.0.zst", "pmlogger.20261130.0");
}
END_TEST

START_TEST(strip_tgz_and_txz_to_tar)
{
	assert_strip("x.tgz", "x.tar");
	assert_strip("x.txz", "x.tar");
	assert_strip("x.tar.gz", "x.tar");
	assert_strip("x.tar.xz", "x.tar");
	assert_strip("backup-2024.01.tgz", "backup-2024.01.tar");
	assert_strip("x.tzst", "x.tar");
	assert_strip("x.tar.zst", "x.tar");
}
END_TEST

START_TEST(strip_needs_a_stem)
{
	assert_strip(".gz", NULL);
	assert_strip(".xz", NULL);
	assert_strip(".tgz", NULL);
	assert_strip(".txz", NULL);
	assert_strip("", NULL);
	/* a one-character stem is enough */
	assert_strip("a.gz", "a");
	assert_strip("_.tgz", "_.tar");
	assert_strip(".a.gz", ".a");
}
END_TEST

START_TEST(strip_only_known_suffixes)
{
	static const char *const names[] = { "x.bz2",  "x.zstd",   "x.lzma", "x.z",    "x.Z",
					     "x.gzip", "x.gz.bak", "x.xz~",  "xz",     "gz",
					     "x.tar",  "x.tbz2",   "x.tgzz", "x.xzgz", "xgz",
					     "x_gz",   "x.g",	   "x." };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_strip(names[i], NULL);
}
END_TEST

START_TEST(strip_is_case_sensitive)
{
	assert_strip("x.GZ", NULL);
	assert_strip("x.Gz", NULL);
	assert_strip("x.XZ", NULL);
	assert_strip("x.TGZ", NULL);
	assert_strip("x.Txz", NULL);
}
END_TEST

START_TEST(strip_spaces_and_utf8)
{
	assert_strip("my file.gz", "my file");
	assert_strip(" .gz", " ");
	assert_strip("donn\xc3\xa9"
		     "es.xz",
		     "donn\xc3\xa9"
		     "es");
	assert_strip("\xe6\x97\xa5\xe6\x9c\xac.tgz", "\xe6\x97\xa5\xe6\x9c\xac.tar");
	assert_strip("caf\xc3\xa9 au lait.tar.xz", "caf\xc3\xa9 au lait.tar");
}
END_TEST

START_TEST(strip_out_buffer_size)
{
	char out[16];

	/* "x.gz" -> "x": needs 2 bytes */
	memset(out, '#', sizeof(out));
	ck_assert_int_eq(names_strip("x.gz", out, 2), 1);
	ck_assert_str_eq(out, "x");
	memset(out, '#', sizeof(out));
	ck_assert_int_eq(names_strip("x.gz", out, 1), 0);
	ck_assert_int_eq(out[0], '#'); /* untouched */
	ck_assert_int_eq(names_strip("x.gz", out, 0), 0);
	ck_assert_int_eq(out[0], '#');

	/* "ab.tgz" -> "ab.tar": needs 7 bytes */
	ck_assert_int_eq(names_strip("ab.tgz", out, 6), 0);
	for (size_t i = 0; i < sizeof(out); i++)
		ck_assert_int_eq(out[i], '#');
	ck_assert_int_eq(names_strip("ab.tgz", out, 7), 1);
	ck_assert_str_eq(out, "ab.tar");

	/* a name that does not strip leaves out untouched whatever its size */
	memset(out, '#', sizeof(out));
	ck_assert_int_eq(names_strip("x.bz2", out, sizeof(out)), 0);
	for (size_t i = 0; i < sizeof(out); i++)
		ck_assert_int_eq(out[i], '#');
}
END_TEST

/*
 * "." and ".." name the directory and its parent; no directory entry may
 * be called that.  A source file "..gz" or "...xz" must not become one.
 */
START_TEST(strip_never_makes_dot_or_dotdot)
{
	static const char *const names[] = { "..gz", "..xz", "...gz", "...xz" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *got = strip(names[i]);

		ck_assert_msg(!got || (strcmp(got, ".") != 0 && strcmp(got, "..") != 0),
			      "names_strip(\"%s\") gives the reserved name \"%s\"", names[i], got);
	}
	assert_strip("....gz", "...");
}
END_TEST

/* ------------------------------------------------------------------ */
/* names_resolve                                                       */

#define MAXENT 64

struct dir {
	struct names_ent ents[MAXENT];
	int archive[MAXENT]; /* what is_archive answers */
	int calls[MAXENT];   /* how often it was asked */
	size_t n;
};

static int stub_is_archive(void *ctx, size_t i)
{
	struct dir *d = ctx;

	ck_assert_uint_lt(i, d->n);
	d->calls[i]++;
	return d->archive[i];
}

/* Adds an entry: candidate if it is a regular file whose name strips (as the caller decides). */
static void add(struct dir *d, const char *name, int regular, int archive)
{
	char tmp[512];

	ck_assert_uint_lt(d->n, MAXENT);
	d->ents[d->n].name = name;
	d->ents[d->n].candidate = regular && names_strip(name, tmp, sizeof(tmp));
	d->ents[d->n].visible = (char *)(uintptr_t)1; /* must be overwritten */
	d->archive[d->n] = archive;
	d->calls[d->n] = 0;
	d->n++;
}

static void resolve(struct dir *d)
{
	ck_assert_int_eq(names_resolve(d->ents, d->n, stub_is_archive, d), 0);
}

static size_t find(const struct dir *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->ents[i].name, name) == 0)
			return i;
	ck_abort_msg("no entry %s", name);
	return 0;
}

/* Entry name shows as want (NULL: under its own name). */
static void assert_shows(const struct dir *d, const char *name, const char *want)
{
	const char *vis = d->ents[find(d, name)].visible;

	if (!want)
		ck_assert_msg(vis == NULL, "%s shows as \"%s\", want its own name", name, vis);
	else
		ck_assert_msg(vis && strcmp(vis, want) == 0, "%s shows as %s, want \"%s\"", name,
			      vis ? vis : "(its own name)", want);
}

static int calls(const struct dir *d, const char *name)
{
	return d->calls[find(d, name)];
}

START_TEST(resolve_single_archive)
{
	struct dir d = { .n = 0 };

	add(&d, "x.gz", 1, 1);
	add(&d, "readme", 1, 0);
	resolve(&d);
	assert_shows(&d, "x.gz", "x");
	assert_shows(&d, "readme", NULL);
	ck_assert_int_eq(calls(&d, "x.gz"), 1);
	ck_assert_int_eq(calls(&d, "readme"), 0);
	names_free(d.ents, d.n);
	ck_assert_ptr_null(d.ents[0].visible);
}
END_TEST

/* A broken candidate never hides a good one; alone, it still takes the name. */
START_TEST(resolve_damaged_never_hides_a_sound_one)
{
	struct dir d = { .n = 0 };

	add(&d, "x.xz", 1, NAMES_DAMAGED);
	add(&d, "x.zst", 1, NAMES_SOUND);
	add(&d, "y.gz", 1, NAMES_DAMAGED);
	add(&d, "y.xz", 1, NAMES_SOUND);
	add(&d, "z.xz", 1, NAMES_DAMAGED);
	add(&d, "w.gz", 1, NAMES_DAMAGED);
	add(&d, "w.xz", 1, NAMES_DAMAGED);
	resolve(&d);
	assert_shows(&d, "x.zst", "x");
	assert_shows(&d, "x.xz", NULL);
	assert_shows(&d, "y.xz", "y");
	assert_shows(&d, "y.gz", NULL);
	assert_shows(&d, "z.xz", "z");
	/* two damaged ones: the first by name, as for two sound ones */
	assert_shows(&d, "w.gz", "w");
	assert_shows(&d, "w.xz", NULL);
	names_free(d.ents, d.n);
}
END_TEST

START_TEST(resolve_existing_plain_name_wins)
{
	struct dir d = { .n = 0 };

	add(&d, "x.gz", 1, 1);
	add(&d, "x", 1, 0);
	resolve(&d);
	assert_shows(&d, "x.gz", NULL);
	assert_shows(&d, "x", NULL);
	/* the stripped name exists: no need to look inside */
	ck_assert_int_eq(calls(&d, "x.gz"), 0);
	names_free(d.ents, d.n);
}
END_TEST

START_TEST(resolve_existing_name_of_any_type_wins)
{
	struct dir d = { .n = 0 };

	add(&d, "a.tgz", 1, 1);
	add(&d, "a.tar", 0, 0); /* a directory, say */
	add(&d, "b.xz", 1, 1);
	add(&d, "b", 0, 0);
	resolve(&d);
	assert_shows(&d, "a.tgz", NULL);
	assert_shows(&d, "b.xz", NULL);
	ck_assert_int_eq(calls(&d, "a.tgz"), 0);
	ck_assert_int_eq(calls(&d, "b.xz"), 0);
	names_free(d.ents, d.n);
}
END_TEST

START_TEST(resolve_gz_beats_xz)
{
	/* in both orders of the directory listing */
	for (int order = 0; order < 2; order++) {
		struct dir d = { .n = 0 };

		if (order == 0) {
			add(&d, "x.gz", 1, 1);
			add(&d, "x.xz", 1, 1);
		} else {
			add(&d, "x.xz", 1, 1);
			add(&d, "x.gz", 1, 1);
		}
		resolve(&d);
		assert_shows(&d, "x.gz", "x");
		assert_shows(&d, "x.xz", NULL);
		ck_assert_int_le(calls(&d, "x.gz"), 1);
		ck_assert_int_le(calls(&d, "x.xz"), 1);
		names_free(d.ents, d.n);
	}
}
END_TEST

START_TEST(resolve_not_an_archive_stays_raw)
{
	struct dir d = { .n = 0 };

	add(&d, "x.gz", 1, 0);
	add(&d, "y.xz", 1, 1);
	resolve(&d);
	assert_shows(&d, "x.gz", NULL);
	assert_shows(&d, "y.xz", "y");
	ck_assert_int_eq(calls(&d, "x.gz"), 1);
	names_free(d.ents, d.n);
}
END_TEST

START_TEST(resolve_loser_that_is_not_an_archive_lets_the_other_win)
{
	struct dir d = { .n = 0 };

	add(&d, "x.gz", 1, 0); /* sorts first, but is not really gzip */
	add(&d, "x.xz", 1, 1);
	resolve(&d);
	assert_shows(&d, "x.gz", NULL);
	assert_shows(&d, "x.xz", "x");
	names_free(d.ents, d.n);
}
END_TEST

START_TEST(resolve_non_candidates_are_not_probed)
{
	struct dir d = { .n = 0 };

	add(&d, "dir.gz", 0, 1); /* not a regular file */
	add(&d, "notes.txt", 1, 1);
	add(&d, "x.bz2", 1, 1);
	resolve(&d);
	for (size_t i = 0; i < d.n; i++) {
		ck_assert_int_eq(d.calls[i], 0);
		ck_assert_ptr_null(d.ents[i].visible);
	}
	names_free(d.ents, d.n);
}
END_TEST

START_TEST(resolve_tar_gz_beats_tgz)
{
	struct dir d = { .n = 0 };

	/* "a.tar.gz" < "a.tgz" bytewise ('a' < 'g') */
	add(&d, "a.tgz", 1, 1);
	add(&d, "a.tar.gz", 1, 1);
	resolve(&d);
	assert_shows(&d, "a.tar.gz", "a.tar");
	assert_shows(&d, "a.tgz", NULL);
	names_free(d.ents, d.n);
}
END_TEST

/* Up to four archives can claim x.tar: exactly one gets it. */
START_TEST(resolve_four_tar_claimants_one_wins)
{
	struct dir d = { .n = 0 };

	add(&d, "a.tgz", 1, 1);
	add(&d, "a.tar.gz", 1, 1);
	add(&d, "a.txz", 1, 1);
	add(&d, "a.tar.xz", 1, 1);
	resolve(&d);
	assert_shows(&d, "a.tar.gz", "a.tar");
	assert_shows(&d, "a.tar.xz", NULL);
	assert_shows(&d, "a.tgz", NULL);
	assert_shows(&d, "a.txz", NULL);
	names_free(d.ents, d.n);
}
END_TEST

START_TEST(resolve_three_tar_claimants_one_wins)
{
	struct dir d = { .n = 0 };

	add(&d, "b.txz", 1, 1);
	add(&d, "b.tgz", 1, 1);
	add(&d, "b.tar.xz", 1, 1);
	resolve(&d);
	assert_shows(&d, "b.tar.xz", "b.tar");
	assert_shows(&d, "b.tgz", NULL);
	assert_shows(&d, "b.txz", NULL);
	names_free(d.ents, d.n);
}
END_TEST

START_TEST(resolve_chain_of_suffixes)
{
	struct dir d = { .n = 0 };

	add(&d, "a.gz.gz", 1, 1); /* would show as a.gz, which exists */
	add(&d, "a.gz", 1, 1);
	resolve(&d);
	assert_shows(&d, "a.gz", "a");
	assert_shows(&d, "a.gz.gz", NULL);
	ck_assert_int_eq(calls(&d, "a.gz.gz"), 0);
	ck_assert_int_eq(calls(&d, "a.gz"), 1);
	names_free(d.ents, d.n);
}
END_TEST

START_TEST(resolve_spaces_and_utf8)
{
	struct dir d = { .n = 0 };

	add(&d, "my file.gz", 1, 1);
	add(&d,
	    "donn\xc3\xa9"
	    "es.xz",
	    1, 1);
	add(&d, "\xe6\x97\xa5\xe6\x9c\xac.tgz", 1, 1);
	/* bytewise: "\xc3\xa9.gz" < "\xc3\xa9.xz" */
	add(&d, "\xc3\xa9.xz", 1, 1);
	add(&d, "\xc3\xa9.gz", 1, 1);
	/* a name equal to another's stem, with a space */
	add(&d, "two words.xz", 1, 1);
	add(&d, "two words", 1, 0);
	resolve(&d);
	assert_shows(&d, "my file.gz", "my file");
	assert_shows(&d,
		     "donn\xc3\xa9"
		     "es.xz",
		     "donn\xc3\xa9"
		     "es");
	assert_shows(&d, "\xe6\x97\xa5\xe6\x9c\xac.tgz", "\xe6\x97\xa5\xe6\x9c\xac.tar");
	assert_shows(&d, "\xc3\xa9.gz", "\xc3\xa9");
	assert_shows(&d, "\xc3\xa9.xz", NULL);
	assert_shows(&d, "two words.xz", NULL);
	names_free(d.ents, d.n);
}
END_TEST

START_TEST(resolve_finds_existing_names_among_utf8)
{
	/* the existence check must work whatever bytes the names hold */
	struct dir d = { .n = 0 };

	add(&d, "z", 1, 0);
	add(&d, "\xc3\xa9", 1, 0);
	add(&d,
	    "\xc3\xa9"
	    "a",
	    1, 0);
	add(&d, "a", 0, 0);
	add(&d, "\xff", 1, 0);
	add(&d, "\xc3\xa9.gz", 1, 1); /* "\xc3\xa9" exists */
	add(&d, "z.gz", 1, 1);	      /* "z" exists */
	add(&d, "\xc3\xbc.xz", 1, 1); /* "\xc3\xbc" does not */
	add(&d, "\xff.tgz", 1, 1);    /* "\xff.tar" does not */
	add(&d, "a.xz", 1, 1);	      /* "a" exists (a directory) */
	resolve(&d);
	assert_shows(&d, "\xc3\xa9.gz", NULL);
	assert_shows(&d, "z.gz", NULL);
	assert_shows(&d, "a.xz", NULL);
	assert_shows(&d, "\xc3\xbc.xz", "\xc3\xbc");
	assert_shows(&d, "\xff.tgz", "\xff.tar");
	ck_assert_int_eq(calls(&d, "\xc3\xa9.gz"), 0);
	ck_assert_int_eq(calls(&d, "z.gz"), 0);
	ck_assert_int_eq(calls(&d, "a.xz"), 0);
	names_free(d.ents, d.n);
}
END_TEST

START_TEST(resolve_never_makes_dot_or_dotdot)
{
	struct dir d = { .n = 0 };

	add(&d, "..gz", 1, 1);
	add(&d, "...xz", 1, 1);
	resolve(&d);
	for (size_t i = 0; i < d.n; i++) {
		const char *v = d.ents[i].visible;

		ck_assert_msg(!v || (strcmp(v, ".") != 0 && strcmp(v, "..") != 0),
			      "%s shows as the reserved name \"%s\"", d.ents[i].name, v);
	}
	names_free(d.ents, d.n);
}
END_TEST

START_TEST(resolve_empty_directory)
{
	ck_assert_int_eq(names_resolve(NULL, 0, stub_is_archive, NULL), 0);
	names_free(NULL, 0);
}
END_TEST

START_TEST(resolve_ctx_reaches_is_archive)
{
	struct dir d = { .n = 0 };

	add(&d, "p.xz", 1, 1);
	add(&d, "q.gz", 1, 0);
	resolve(&d); /* stub_is_archive checks i < n through ctx */
	ck_assert_int_eq(calls(&d, "p.xz"), 1);
	ck_assert_int_eq(calls(&d, "q.gz"), 1);
	names_free(d.ents, d.n);
}
END_TEST

/*
 * Random directories over a small alphabet, so that collisions are common.
 * Checks the rules as stated in names.h against a brute-force model.
 */
START_TEST(resolve_random_directories_follow_the_rules)
{
	static const char *const stems[] = { "a", "b", "ab", "a b", "a.tar", "b.tar", "\xc3\xa9" };
	static const char *const sufs[] = { "",	      ".gz",	 ".xz",	    ".tgz", ".txz",
					    ".gz.gz", ".tar.gz", ".tar.xz", ".bz2" };
	uint32_t x = 2024;
	char names[MAXENT][32];

	for (int round = 0; round < 500; round++) {
		struct dir d = { .n = 0 };
		size_t want = 1 + (x >> 8) % 20;

		while (d.n < want) {
			char name[32];
			int dup = 0;

			x = x * 1664525u + 1013904223u;
			snprintf(name, sizeof(name), "%s%s", stems[(x >> 8) % 7],
				 sufs[(x >> 16) % 9]);
			for (size_t i = 0; i < d.n; i++)
				dup |= strcmp(names[i], name) == 0;
			if (dup)
				continue;
			strcpy(names[d.n], name);
			add(&d, names[d.n], (x >> 24) % 8 != 0, (x >> 27) % 4 != 0);
		}
		resolve(&d);

		for (size_t i = 0; i < d.n; i++) {
			char vis[64];
			int strips = names_strip(d.ents[i].name, vis, sizeof(vis));
			int taken = 0, beaten = 0;

			/* is_archive: once for a candidate whose stripped name is free, else never
			 */
			for (size_t j = 0; j < d.n; j++)
				taken |= strips && strcmp(d.ents[j].name, vis) == 0;
			ck_assert_int_eq(d.calls[i], d.ents[i].candidate && !taken ? 1 : 0);
			if (!d.ents[i].candidate || taken || !d.archive[i]) {
				ck_assert_msg(d.ents[i].visible == NULL, "round %d: %s shows as %s",
					      round, d.ents[i].name, d.ents[i].visible);
				continue;
			}
			/* a claimant: it wins unless a claimant of the same name sorts before it */
			for (size_t j = 0; j < d.n; j++) {
				char v2[64];

				beaten |= j != i && d.ents[j].candidate && d.archive[j] &&
					  names_strip(d.ents[j].name, v2, sizeof(v2)) &&
					  strcmp(v2, vis) == 0 &&
					  strcmp(d.ents[j].name, d.ents[i].name) < 0;
			}
			if (beaten)
				ck_assert_msg(
					d.ents[i].visible == NULL,
					"round %d: %s shows as %s, which an archive that sorts "
					"first already has",
					round, d.ents[i].name, d.ents[i].visible);
			else
				ck_assert_msg(d.ents[i].visible &&
						      strcmp(d.ents[i].visible, vis) == 0,
					      "round %d: %s should show as %s", round,
					      d.ents[i].name, vis);
		}
		/* and the names shown are all different */
		for (size_t i = 0; i < d.n; i++) {
			const char *a = d.ents[i].visible ? d.ents[i].visible : d.ents[i].name;

			for (size_t j = i + 1; j < d.n; j++) {
				const char *b =
					d.ents[j].visible ? d.ents[j].visible : d.ents[j].name;

				ck_assert_msg(strcmp(a, b) != 0, "round %d: two entries show as %s",
					      round, a);
			}
		}
		names_free(d.ents, d.n);
	}
}
END_TEST

static Suite *names_suite(void)
{
	Suite *s = suite_create("names");
	TCase *ts = tcase_create("strip");
	TCase *tr = tcase_create("resolve");

	tcase_add_test(ts, strip_xz_and_gz);
	tcase_add_test(ts, strip_tgz_and_txz_to_tar);
	tcase_add_test(ts, strip_needs_a_stem);
	tcase_add_test(ts, strip_only_known_suffixes);
	tcase_add_test(ts, strip_is_case_sensitive);
	tcase_add_test(ts, strip_spaces_and_utf8);
	tcase_add_test(ts, strip_out_buffer_size);
	tcase_add_test(ts, strip_never_makes_dot_or_dotdot);
	suite_add_tcase(s, ts);

	tcase_add_test(tr, resolve_single_archive);
	tcase_add_test(tr, resolve_existing_plain_name_wins);
	tcase_add_test(tr, resolve_damaged_never_hides_a_sound_one);
	tcase_add_test(tr, resolve_existing_name_of_any_type_wins);
	tcase_add_test(tr, resolve_gz_beats_xz);
	tcase_add_test(tr, resolve_not_an_archive_stays_raw);
	tcase_add_test(tr, resolve_loser_that_is_not_an_archive_lets_the_other_win);
	tcase_add_test(tr, resolve_non_candidates_are_not_probed);
	tcase_add_test(tr, resolve_tar_gz_beats_tgz);
	tcase_add_test(tr, resolve_four_tar_claimants_one_wins);
	tcase_add_test(tr, resolve_three_tar_claimants_one_wins);
	tcase_add_test(tr, resolve_chain_of_suffixes);
	tcase_add_test(tr, resolve_spaces_and_utf8);
	tcase_add_test(tr, resolve_finds_existing_names_among_utf8);
	tcase_add_test(tr, resolve_never_makes_dot_or_dotdot);
	tcase_add_test(tr, resolve_empty_directory);
	tcase_add_test(tr, resolve_ctx_reaches_is_archive);
	tcase_add_test(tr, resolve_random_directories_follow_the_rules);
	tcase_set_timeout(tr, 60);
	suite_add_tcase(s, tr);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(names_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
