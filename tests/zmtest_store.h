/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ZMTEST_STORE_H
#define ZMOUNT_ZMTEST_STORE_H

/*
 * The local index store of a directory, for tests that name their index
 * directory at each call (idxfile_save(zmtest_store(dir), ...)): a new
 * handle per call (idxlocal_store), all freed at exit, so that
 * LeakSanitizer sees none.  Header-only: it needs index/ (idxlocal.h),
 * which zmtest.c, linked by codec-only tests too, must not.  Not
 * thread-safe: call it from the test's thread (a forked child may).
 */

#include <check.h>
#include <stdlib.h>

#include "idxlocal.h"

struct zmtest_stores {
	struct idxstore **v;
	size_t n, cap;
};

static struct zmtest_stores zmtest_stores_open;

static void zmtest_stores_free(void)
{
	for (size_t i = 0; i < zmtest_stores_open.n; i++)
		idxstore_free(zmtest_stores_open.v[i]);
	free(zmtest_stores_open.v);
	zmtest_stores_open = (struct zmtest_stores){ 0 };
}

static inline struct idxstore *zmtest_store(const char *dir)
{
	struct zmtest_stores *s = &zmtest_stores_open;
	struct idxstore *st = NULL;

	if (s->n == s->cap) {
		if (!s->cap)
			atexit(zmtest_stores_free);
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		ck_assert_ptr_nonnull(s->v);
	}
	ck_assert_int_eq(idxlocal_store(dir, &st), 0);
	s->v[s->n++] = st;
	return st;
}

#endif
