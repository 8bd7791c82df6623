/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for fs/opts: the input is a mount option string.
 *
 * How it works.  The input is split at commas, as FUSE splits -o, and each
 * piece, NUL-terminated in a buffer of exactly its size (so a read past the
 * terminator is an ASan report), goes through opts_apply on one struct opts
 * and through opts_size on its own.  After every piece the harness checks
 * the promises of opts.h: a return of 1, 0 or -EINVAL; a one-line message
 * exactly when -EINVAL; an option that is not ours leaving the struct
 * untouched; and every field within its documented range.  A value that
 * opts_size accepts must also survive a round trip through its decimal
 * form.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "opts.h"
#include "zlog.h"

static void check_ranges(const struct opts *o)
{
	FUZZ_CHECK(o->cache_size >= (1ull << 20), "cache_size %" PRIu64, o->cache_size);
	FUZZ_CHECK(o->span >= (64ull << 10) && o->span <= (64ull << 20), "span %" PRIu64, o->span);
	FUZZ_CHECK(o->timeout >= 0 && o->timeout <= 3600, "timeout %g", o->timeout);
	FUZZ_CHECK(o->threads >= 1 && o->threads <= 256, "threads %u", o->threads);
	FUZZ_CHECK(o->log_level >= ZLOG_ERROR && o->log_level <= ZLOG_DEBUG, "log_level %d",
		   o->log_level);
	FUZZ_CHECK(memchr(o->index_dir, 0, sizeof(o->index_dir)), "index_dir not terminated");
	FUZZ_CHECK(o->index_dir[0] == '\0' || o->index_dir[0] == '/' ||
			   strncmp(o->index_dir, "s3://", 5) == 0,
		   "index_dir '%s'", o->index_dir);
	FUZZ_CHECK(o->background_index == 0 || o->background_index == 1, "background_index %d",
		   o->background_index);
}

/* Field by field: a struct copy need not copy padding, so no memcmp. */
static int same(const struct opts *a, const struct opts *b)
{
	return a->cache_size == b->cache_size && a->span == b->span &&
	       a->log_level == b->log_level && a->timeout == b->timeout &&
	       a->threads == b->threads && !strcmp(a->index_dir, b->index_dir) &&
	       a->background_index == b->background_index;
}

static void one(struct opts *o, const uint8_t *p, size_t n)
{
	char *opt = malloc(n + 1), msg[256], dec[32];
	struct opts before = *o;
	uint64_t v = 0, w = 0;
	int ret;

	FUZZ_CHECK(opt, "out of memory");
	memcpy(opt, p, n);
	opt[n] = '\0';

	memset(msg, 0, sizeof(msg));
	ret = opts_apply(o, opt, msg, sizeof(msg));
	FUZZ_CHECK(ret == 1 || ret == 0 || ret == -EINVAL, "opts_apply returned %d", ret);
	if (ret == -EINVAL) {
		FUZZ_CHECK(msg[0], "-EINVAL without a reason");
		/* the message quotes the value, so only a newline given can appear in it */
		FUZZ_CHECK(!strchr(msg, '\n') || strchr(opt, '\n'), "a reason of two lines: %s",
			   msg);
	} else {
		FUZZ_CHECK(msg[0] == '\0', "a message without an error: %s", msg);
	}
	if (ret <= 0)
		FUZZ_CHECK(same(&before, o), "opts_apply returned %d but changed the options", ret);
	check_ranges(o);

	/* a message that does not fit is cut, never overrun */
	if (ret == -EINVAL) {
		char tiny[8];

		*o = before;
		memset(tiny, 'x', sizeof(tiny));
		ret = opts_apply(o, opt, tiny, sizeof(tiny));
		FUZZ_CHECK(ret == -EINVAL && memchr(tiny, 0, sizeof(tiny)),
			   "a short message buffer was not terminated");
	}

	ret = opts_size(opt, &v);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL, "opts_size returned %d", ret);
	if (ret == 0) {
		snprintf(dec, sizeof(dec), "%" PRIu64, v);
		FUZZ_CHECK(opts_size(dec, &w) == 0 && w == v, "%s -> %" PRIu64 " -> %" PRIu64, opt,
			   v, w);
	}
	free(opt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct opts *o = malloc(sizeof(*o));
	size_t start = 0;

	FUZZ_CHECK(o, "out of memory");
	opts_default(o);
	check_ranges(o);
	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != ',')
			continue;
		one(o, data + start, i - start);
		start = i + 1;
	}
	free(o);
	return 0;
}
