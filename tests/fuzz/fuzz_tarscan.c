/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for index/tarscan.c and index/tartab_blob.c: the input
 * is a tar archive's decoded bytes.
 *
 * How it works.  The input is scanned whole, then again in chunks whose
 * sizes come from its first byte, and the two scans must agree: the same
 * return, the same table.  The harness then checks the promises of
 * tarscan.h and tartab.h: a return tarscan.h lists, every member's data
 * inside the archive, names in normal form and safe, and members in order.
 * The table must survive a round trip through its saved form, and the input
 * read as a saved table must decode or be refused without harm.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "tarscan.h"
#include "tartab.h"

#define CAP (16u << 20)

static int scan(const uint8_t *data, size_t size, size_t chunk, struct tartab *t)
{
	struct tarscan *s;
	size_t i = 0;
	int ret = 0;

	tartab_init(t, CAP);
	if (tarscan_new(t, size, NULL, NULL, &s) < 0)
		return -ENOMEM;
	while (i < size && ret == 0) {
		size_t k = chunk < size - i ? chunk : size - i;

		ret = tarscan_feed(s, data + i, k);
		i += k;
	}
	if (ret == 0)
		ret = tarscan_finish(s);
	FUZZ_CHECK(ret == tarscan_error(s, NULL), "tarscan_error %d, returned %d",
		   tarscan_error(s, NULL), ret);
	tarscan_free(s);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL || ret == -E2BIG || ret == -ENOMEM, "return %d", ret);
	return ret;
}

static void same(const struct tartab *a, const struct tartab *b, const char *how)
{
	FUZZ_CHECK(a->n == b->n && a->str_len == b->str_len && a->sp_n == b->sp_n,
		   "%s: %zu/%zu members", how, a->n, b->n);
	FUZZ_CHECK(!a->n || memcmp(a->m, b->m, a->n * sizeof(*a->m)) == 0, "%s: members", how);
	FUZZ_CHECK(!a->str_len || memcmp(a->str, b->str, a->str_len) == 0, "%s: strings", how);
	FUZZ_CHECK(!a->sp_n || memcmp(a->sp, b->sp, a->sp_n * sizeof(*a->sp)) == 0, "%s", how);
}

/* tartab_locate over a member's first runs: stored bytes inside its data, runs that add up. */
static void walk(const struct tartab *t, const struct tar_member *m)
{
	uint64_t off = 0, aoff, run, stored = 0;
	int k;

	for (int i = 0; i < 1000 && (k = tartab_locate(t, m, off, &aoff, &run)) >= 0; i++) {
		FUZZ_CHECK(run > 0 && run <= m->size - off, "run %llu at %llu",
			   (unsigned long long)run, (unsigned long long)off);
		if (k == 1) {
			FUZZ_CHECK(aoff >= m->data_off && aoff - m->data_off + run <= m->stored,
				   "run outside the member's data");
			stored += run;
		}
		off += run;
	}
	FUZZ_CHECK(off < m->size || (m->flags & TAR_SPARSE ? stored == m->stored : 1),
		   "extents do not add up");
}

static void promises(const struct tartab *t, uint64_t size)
{
	static char norm[PATH_MAX + 1];
	uint64_t end = 0;
	const char *why;

	FUZZ_CHECK(tartab_bytes(t) <= CAP, "table %zu bytes over its cap", tartab_bytes(t));
	for (size_t i = 0; i < t->n; i++) {
		const struct tar_member *m = &t->m[i];
		const char *name = tartab_name(t, m);

		FUZZ_CHECK(m->hdr_off >= end && m->data_off >= m->hdr_off + 512, "member %zu order",
			   i);
		FUZZ_CHECK(m->data_off <= size && m->stored <= size - m->data_off,
			   "member %zu past the end", i);
		FUZZ_CHECK(tartab_name_check(name, m->name_len, norm, &why) == (int)m->name_len &&
				   strcmp(norm, name) == 0,
			   "member %zu name '%s'", i, name);
		FUZZ_CHECK(m->type < TAR_TYPES && m->mode <= 07777, "member %zu type/mode", i);
		end = m->data_off + m->stored;
		walk(t, m);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tartab whole, chunked, back;
	size_t chunk = size ? 1 + data[0] % 97 : 1, len;
	uint8_t *blob;
	int r1 = scan(data, size, size ? size : 1, &whole), r2 = scan(data, size, chunk, &chunked);

	FUZZ_CHECK(r1 == r2, "whole %d, in chunks of %zu %d", r1, chunk, r2);
	same(&whole, &chunked, "chunked");
	promises(&whole, size);
	if (tartab_encode(&whole, size, &blob, &len) == 0) {
		int r;

		tartab_init(&back, CAP);
		r = tartab_decode(&back, blob, len, size, NULL);
		FUZZ_CHECK(r == 0 || r == -ENOMEM, "decoding an encoded table: %d", r);
		if (r == 0)
			same(&whole, &back, "decoded");
		tartab_free(&back);
		free(blob);
	}
	tartab_init(&back, CAP);
	if (tartab_decode(&back, data, size, size, NULL) == 0)
		promises(&back, size);
	tartab_free(&back);
	tartab_free(&whole);
	tartab_free(&chunked);
	return 0;
}
