/* SPDX-License-Identifier: MIT */
/*
 * How it works: XXH64 takes 32-byte stripes (idxhash.h), and a pass reads
 * in pieces of any length, so up to 31 bytes wait in carry for the next
 * read; next is the offset of the first byte not yet hashed (carry's
 * included).  Bytes the pass reads again (a header read twice) are before
 * next and skipped.
 */
#include "idxtee.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "idxhash.h"

struct idxtee {
	struct zsrc z;
	struct zsrc_ops ops; /* src's pinned and remote, our functions */
	struct zsrc *src;
	uint64_t size;	      /* src's size at open */
	uint64_t next;	      /* bytes [0, next) are hashed or in carry */
	struct idxhash_xxh x; /* the stripes of [0, next - ncarry) */
	unsigned char carry[32];
	size_t ncarry;
};

/* Hashes p[0, n), the bytes at t->next. */
static void tee_feed(struct idxtee *t, const unsigned char *p, size_t n)
{
	size_t k;

	t->next += n;
	if (t->ncarry) {
		k = sizeof(t->carry) - t->ncarry < n ? sizeof(t->carry) - t->ncarry : n;
		memcpy(t->carry + t->ncarry, p, k);
		t->ncarry += k;
		p += k;
		n -= k;
		if (t->ncarry < sizeof(t->carry))
			return;
		idxhash_xxh_feed(&t->x, t->carry, sizeof(t->carry));
		t->ncarry = 0;
	}
	k = idxhash_xxh_feed(&t->x, p, n);
	memcpy(t->carry, p + k, n - k);
	t->ncarry = n - k;
}

static ssize_t tee_pread(struct zsrc *z, void *buf, size_t len, uint64_t off)
{
	struct idxtee *t = (struct idxtee *)z;
	ssize_t n = zsrc_pread(t->src, buf, len, off);

	if (n > 0 && off <= t->next && off + (uint64_t)n > t->next && t->next < t->size) {
		uint64_t end = off + (uint64_t)n < t->size ? off + (uint64_t)n : t->size;

		tee_feed(t, (const unsigned char *)buf + (t->next - off), (size_t)(end - t->next));
	}
	return n;
}

static int tee_stat(struct zsrc *z, struct stat *st)
{
	return zsrc_stat(((struct idxtee *)z)->src, st);
}

static void tee_tag(struct zsrc *z, char buf[ZSRC_TAG_MAX])
{
	zsrc_tag(((struct idxtee *)z)->src, buf);
}

static void tee_hint(struct zsrc *z, uint64_t off, uint64_t len)
{
	zsrc_hint(((struct idxtee *)z)->src, off, len);
}

static void tee_free(struct zsrc *z)
{
	struct idxtee *t = (struct idxtee *)z;

	zsrc_put(t->src);
	free(t);
}

int idxtee_new(struct zsrc *src, struct zsrc **out)
{
	struct idxtee *t = calloc(1, sizeof(*t));
	int ret;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->ops = (struct zsrc_ops){ .pread = tee_pread,
				    .stat = tee_stat,
				    .tag = tee_tag,
				    .hint = tee_hint,
				    .free = tee_free };
	ret = zsrc_wrap(&t->z, &t->ops, src, &t->src, &t->size);
	if (ret < 0) {
		free(t);
		return ret;
	}
	idxhash_xxh_init(&t->x);
	*out = &t->z;
	return 0;
}

bool idxtee_take(struct zsrc *tee, struct idxfile_id *id)
{
	struct idxtee *t = (struct idxtee *)tee;

	if (t->next != t->size || id->size != t->size)
		return false;
	id->hash = idxhash_xxh_end(&t->x, t->size, t->carry, t->ncarry);
	id->hashed = true;
	return true;
}
