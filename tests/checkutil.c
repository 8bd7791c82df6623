/* SPDX-License-Identifier: MIT */
#include "checkutil.h"

#include <stdio.h>
#include <stdlib.h>

uint8_t *checkutil_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	uint8_t *buf;
	long n;

	ck_assert_msg(f, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	buf = malloc(n ? (size_t)n : 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

Suite *checkutil_suite(const char *prog, const char *name, const struct checkutil_case *t, size_t n,
		       int timeout, int have_corpus, int *skipped)
{
	Suite *s = suite_create(name);

	if (skipped)
		*skipped = 0;
	for (size_t i = 0; i < n; i++) {
		TCase *tc;

		if (t[i].corpus && !have_corpus) {
			fprintf(stderr, "%s: SKIP: %s (needs the corpus)\n", prog, t[i].name);
			if (skipped)
				(*skipped)++;
			continue;
		}
		tc = tcase_create(t[i].name);
		tcase_set_timeout(tc, timeout);
		tcase_add_test(tc, t[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}
