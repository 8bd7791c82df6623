/* SPDX-License-Identifier: MIT */
/*
 * Tar member tables (kind 4; idxrec.h), in "<h>.zmt": after the key field,
 * the table's own saved form (tartab_encode, doc/tar.md), whose decode
 * re-checks everything a scan checks.  The header's usize is the tar's
 * decoded size, members and npoints its member count, span 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "idxrec.h"
#include "tarsave.h"

/* The saved form takes at most this per byte of tar (a member is at least one 512-byte block,
 * and its saved name at most the blocks its name took), plus a constant. */
#define IF_TPER 2u
#define IF_TMAX ((uint64_t)1 << 30) /* as tartab's cap in the daemon */

static uint64_t tar_max(uint64_t src_size, uint64_t span)
{
	uint64_t body = sat_mul(sat_mul(src_size, IF_ZRATIO), IF_TPER);

	(void)span;
	return sat_add(IF_HDR + IF_KEYMAX + IF_CRC + 64, body < IF_TMAX ? body : IF_TMAX);
}

static int tar_fits(const unsigned char *h, uint64_t flen, uint64_t src_size, uint64_t span,
		    struct zerr *err)
{
	uint64_t plen = get32(h + H_PATHLEN), least = IF_HDR + plen + IF_CRC + 8;

	if (plen == 0 || plen > IF_KEYMAX || flen < least || flen > tar_max(src_size, span))
		return BAD(H_FSIZE,
			   "a %" PRIu64 "-byte member table, or a %" PRIu64
			   "-byte path: impossible for a %" PRIu64 "-byte source",
			   flen, plen, src_size);
	return 0;
}

static int tar_decode(const unsigned char *b, size_t len, size_t off, uint64_t asize,
		      struct tartab *t, struct zerr *err)
{
	struct zerr why = { 0 };
	int ret;

	tartab_init(t, IF_TMAX);
	ret = tartab_decode(t, b + off, len - IF_CRC - off, asize, &why);
	if (ret == -ENOMEM)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	if (ret < 0)
		return BAD(off + why.coff, "member table: %s", why.msg[0] ? why.msg : "refused");
	return 0;
}

static int tar_check(const unsigned char *b, size_t len, size_t off, struct idxfile_info *in,
		     struct zerr *err)
{
	struct tartab t;
	int ret;

	if (in->span != 0 || get16(b + H_TRAILING) != 0 || get64(b + H_TRAILOFF) != 0)
		return BAD(H_SPAN, "span or trailing-data fields set in a member table");
	ret = tar_decode(b, len, off, in->usize, &t, err);
	if (ret == 0 && (t.n != in->members || in->npoints != in->members))
		ret = BAD(H_MEMBERS, "%zu members, the header says %" PRIu64, t.n, in->members);
	in->wbytes = 0;
	tartab_free(&t);
	return ret;
}

static int tar_size(const struct idxfile_id *id, const void *recs, size_t plen, size_t *n)
{
	const struct tarsave_recs *r = recs;
	uint64_t size = sat_add(IF_HDR + plen + IF_CRC, r->len);

	if (size > tar_max(id->size, 0))
		return -EFBIG;
	*n = (size_t)size;
	return 0;
}

static void tar_put(unsigned char *b, size_t off, const void *recs)
{
	const struct tarsave_recs *r = recs;

	memcpy(b + off, r->blob, r->len);
	put64(b + H_USIZE, r->asize);
	put64(b + H_MEMBERS, r->members);
	put64(b + H_NPOINTS, r->members);
	put64(b + H_SPAN, 0);
}

static int tar_get(const unsigned char *b, size_t off, const struct idxfile_info *in, void *out,
		   struct zerr *err)
{
	struct tartab *t = out;
	size_t len = (size_t)get64(b + H_FSIZE); /* the image's length: checked by the envelope */

	tartab_free(t);
	return tar_decode(b, len, off, in->usize, t, err);
}

const struct fmt_saved idxrec_tar_saved = {
	.kind = IDXFILE_KIND_TAR,
	.name = "tar member table",
	.ext = IDXFILE_EXT_TAR,
	.max = tar_max,
	.fits = tar_fits,
	.check = tar_check,
	.size = tar_size,
	.put = tar_put,
	.get = tar_get,
};

int tarsave_save(const struct idxstore *store, const char *name, const struct idxfile_id *id,
		 const struct tartab *t, uint64_t asize, uint64_t *bytes_written)
{
	struct tarsave_recs r = { .asize = asize, .members = t->n };
	uint8_t *blob;
	int ret = tartab_encode(t, asize, &blob, &r.len);

	if (ret < 0)
		return ret;
	r.blob = blob;
	ret = idxfile_save_recs(store, name, id, &idxrec_tar_saved, &r, bytes_written);
	free(blob);
	return ret;
}

int tarsave_load(const struct idxstore *store, const char *name, const struct idxfile_id *id,
		 struct tartab *t, struct zerr *err)
{
	return idxfile_load_recs(store, name, id, &idxrec_tar_saved, 0, t, err);
}
