/* SPDX-License-Identifier: MIT */
/*
 * The zstd checkpoint blob format (zstdckpt.h, "Blob format"): writing a
 * pending point's blob for the build, and parsing and unpacking one to
 * open a resume decoder at it.
 *
 * How it works.  A blob is a fixed header (the frame it is for, the
 * struct zstdckpt), the table descriptions, and a payload compressed with
 * ZSTD_compress: the kept window bytes as (gap, length) runs in LEB128
 * varints, then the bytes themselves; a CRC-32 closes it.  Opening one
 * checks every field against the frame and the format before anything is
 * trusted, then writes the runs into the zeroed window of a fresh decoder
 * (zstdckpt_dec_new); bytes not kept stay zero, which no match reads.
 */
#include "zstdckpt_int.h"

#include "le.h"

#include <zlib.h> /* crc32 of a blob */

#define BLOB_MAGIC "ZCK1"
#define BLOB_HDR   97u /* bytes before the tables */
#define BLOB_LEVEL 1   /* ZSTD_compress level of the payload */

/* ------------------------------------------------------------------------ */
/* Writing. */

int zstdckpt_grow(void *buf, size_t *cap, size_t need, size_t elem, uint64_t *total)
{
	void *q, **pp = buf;
	size_t n = *cap ? *cap : 256;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*pp, n * elem);
	if (!q)
		return -ENOMEM;
	*pp = q;
	if (total)
		*total += (n - *cap) * elem;
	*cap = n;
	return 0;
}

/* Writes v as n little-endian bytes at q; returns the byte after them. */
static uint8_t *put_n(uint8_t *q, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		*q++ = (uint8_t)(v >> (8 * i));
	return q;
}

/* LEB128: 7 bits a byte, low first; at most 5 bytes for 32 bits. */
static uint8_t *put_varint(uint8_t *q, uint32_t v)
{
	while (v >= 0x80) {
		*q++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*q++ = (uint8_t)v;
	return q;
}

/* Reads a varint of at most 32 bits from [*p, end); 0, or -EINVAL. */
static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned i = 0; i < 5; i++) {
		if (*p == end)
			return -EINVAL;
		*v |= (uint64_t)(**p & 0x7F) << (7 * i);
		if (!(*(*p)++ & 0x80))
			return *v <= UINT32_MAX ? 0 : -EINVAL;
	}
	return -EINVAL;
}

size_t zstdckpt_blob_write(struct zstdckpt_blobbuf *o, const struct zstddec_frame *f,
			   const struct zstdckpt_pend *p, struct zerr *err)
{
	const struct zstdckpt *ck = &p->ck;
	size_t raw = 10 * p->nruns + p->nkept, runs_len, tabs = ck->huf_len, cap, z;
	uint8_t *q, *zlen_at;

	for (int k = 0; k < 3; k++)
		tabs += ck->fse_len[k];
	cap = BLOB_HDR + tabs + ZSTD_compressBound(raw) + 4;
	if (zstdckpt_grow(&o->raw, &o->raw_cap, raw, 1, NULL) ||
	    zstdckpt_grow(&o->blob, &o->blob_cap, cap, 1, NULL)) {
		zerr_set(err, -ENOMEM, ck->coff, "out of memory");
		return 0;
	}
	q = o->raw;
	for (size_t i = 0; i < 2 * p->nruns; i++)
		q = put_varint(q, p->runs[i]);
	runs_len = (size_t)(q - o->raw);
	if (p->nkept) /* none: a window no match reads */
		memcpy(q, p->kept, p->nkept);
	raw = runs_len + p->nkept;
	q = o->blob;
	memcpy(q, BLOB_MAGIC, 4);
	q = put_n(q + 4, f->coff, 8);
	q = put_n(q, f->csize, 8);
	q = put_n(q, f->usize, 8);
	q = put_n(q, f->window, 8);
	q = put_n(q, ck->uoff, 8);
	q = put_n(q, ck->coff, 8);
	q = put_n(q, ck->wlen, 8);
	for (int k = 0; k < 3; k++)
		q = put_n(q, ck->rep[k], 4);
	q = put_n(q, ck->huf_len, 2);
	for (int k = 0; k < 3; k++)
		*q++ = ck->fse_len[k];
	q = put_n(q, p->nruns, 4);
	q = put_n(q, runs_len, 4);
	q = put_n(q, p->nkept, 8);
	zlen_at = q;
	q += 4;
	memcpy(q, ck->huf, ck->huf_len);
	q += ck->huf_len;
	for (int k = 0; k < 3; k++) {
		memcpy(q, ck->fse[k], ck->fse_len[k]);
		q += ck->fse_len[k];
	}
	z = ZSTD_compressCCtx(o->cc, q, cap - (size_t)(q - o->blob) - 4, o->raw, raw, BLOB_LEVEL);
	if (ZSTD_isError(z)) {
		zerr_set(err, -ENOMEM, ck->coff, "compressing a window: %s", ZSTD_getErrorName(z));
		return 0;
	}
	put_n(zlen_at, z, 4);
	q += z;
	q = put_n(q, crc32(0, o->blob, (uInt)(q - o->blob)), 4);
	return (size_t)(q - o->blob);
}

/* ------------------------------------------------------------------------ */
/* Reading. */

/* A blob, parsed (its header checked against the frame and its CRC). */
struct blob_in {
	struct zstdckpt ck;
	uint32_t nruns;
	uint32_t runs_len; /* bytes of the payload's run table */
	uint64_t kept;
	const uint8_t *z; /* the payload */
	size_t zlen;
};

static int blob_bad(const struct zstddec_frame *f, struct zerr *err, const char *why)
{
	return zerr_set(err, -EINVAL, f->coff, "checkpoint blob %s", why);
}

static int blob_parse(const struct zstddec_frame *f, const uint8_t *p, size_t len,
		      struct blob_in *bi, struct zerr *err)
{
	const uint8_t *q = p + 4;
	struct zstdckpt *ck = &bi->ck;
	uint64_t v[4] = { f->coff, f->csize, f->usize, f->window }, tabs;

	memset(bi, 0, sizeof(*bi));
	if (len < BLOB_HDR + 4 || memcmp(p, BLOB_MAGIC, 4) != 0)
		return blob_bad(f, err, "is not one (magic or size)");
	if (get_le(p + len - 4, 4) != crc32(0, p, (uInt)(len - 4)))
		return blob_bad(f, err, "is damaged (CRC)");
	for (int i = 0; i < 4; i++, q += 8)
		if (get_le(q, 8) != v[i])
			return blob_bad(f, err, "is for another frame");
	ck->uoff = get_le(q, 8);
	ck->coff = get_le(q + 8, 8);
	ck->wlen = get_le(q + 16, 8);
	q += 24;
	for (int k = 0; k < 3; k++, q += 4)
		ck->rep[k] = (uint32_t)get_le(q, 4);
	ck->huf_len = (uint16_t)get_le(q, 2);
	q += 2;
	tabs = ck->huf_len;
	for (int k = 0; k < 3; k++) {
		ck->fse_len[k] = *q++;
		tabs += ck->fse_len[k];
		if (ck->fse_len[k] < 1 || ck->fse_len[k] > ZSTDCKPT_FSE_MAX)
			return blob_bad(f, err, "has a bad table length");
	}
	bi->nruns = (uint32_t)get_le(q, 4);
	bi->runs_len = (uint32_t)get_le(q + 4, 4);
	bi->kept = get_le(q + 8, 8);
	bi->zlen = (size_t)get_le(q + 16, 4);
	q += 20;
	if (ck->huf_len < 1 || ck->huf_len > ZSTDCKPT_HUF_MAX)
		return blob_bad(f, err, "has a bad table length");
	if (BLOB_HDR + tabs + bi->zlen + 4 != len)
		return blob_bad(f, err, "has the wrong length");
	if (bi->kept > ck->wlen || bi->nruns > bi->kept || (bi->nruns == 0) != (bi->kept == 0) ||
	    bi->runs_len < 2ull * bi->nruns || bi->runs_len > 10ull * bi->nruns)
		return blob_bad(f, err, "has bad run counts");
	memcpy(ck->huf, q, ck->huf_len);
	q += ck->huf_len;
	for (int k = 0; k < 3; k++) {
		memcpy(ck->fse[k], q, ck->fse_len[k]);
		q += ck->fse_len[k];
	}
	bi->z = q;
	return 0;
}

/* Room for n bytes in raw (kept with its decoder, as its ring is).  0 or -ENOMEM. */
static int raw_room(struct zstdckpt_raw *raw, size_t n)
{
	if (raw->cap < n) {
		free(raw->p);
		raw->cap = 0;
		raw->p = malloc(n);
		if (!raw->p)
			return -ENOMEM;
		raw->cap = n;
	}
	return 0;
}

/* Decompresses a blob's payload and puts its runs into the (zero) window. */
static int fill_blob(const void *arg, struct zstdckpt_raw *buf, uint8_t *win, uint64_t wlen,
		     struct zerr *err)
{
	const struct blob_in *bi = arg;
	size_t nraw = (size_t)bi->runs_len + (size_t)bi->kept, r;
	const uint8_t *bytes, *q;
	uint8_t *raw;
	uint64_t pos = 0, gap, n;
	int ret = 0;

	if (raw_room(buf, nraw ? nraw : 1))
		return zerr_set(err, -ENOMEM, bi->ck.coff, "out of memory");
	raw = buf->p;
	bytes = raw + bi->runs_len;
	q = raw;
	r = ZSTD_decompress(raw, nraw, bi->z, bi->zlen);
	if (ZSTD_isError(r) || r != nraw) {
		ret = zerr_set(err, -EINVAL, bi->ck.coff, "checkpoint blob payload is bad: %s",
			       ZSTD_isError(r) ? ZSTD_getErrorName(r) : "wrong size");
		goto out;
	}
	for (uint32_t i = 0; i < bi->nruns; i++) {
		if (get_varint(&q, raw + bi->runs_len, &gap) ||
		    get_varint(&q, raw + bi->runs_len, &n)) {
			ret = zerr_set(err, -EINVAL, bi->ck.coff, "checkpoint blob has a bad run");
			goto out;
		}
		pos += gap;
		if (n == 0 || pos > wlen || wlen - pos < n || (uint64_t)(bytes - raw) + n > nraw) {
			ret = zerr_set(err, -EINVAL, bi->ck.coff, "checkpoint blob has a bad run");
			goto out;
		}
		memcpy(win + pos, bytes, (size_t)n);
		bytes += n;
		pos += n;
	}
	if (bytes != raw + nraw || q != raw + bi->runs_len)
		ret = zerr_set(err, -EINVAL, bi->ck.coff, "checkpoint blob has a bad run");
out:
	return ret;
}

int zstdckpt_blob_open_in(struct zstdckpt_spares *sp, const struct zstddec_frame *f,
			  const void *blob, size_t len, struct zstdckpt_dec **out, struct zerr *err)
{
	struct blob_in bi;
	int ret;

	*out = NULL;
	if (!blob)
		return zstdckpt_dec_new(sp, f, NULL, NULL, NULL, out, err);
	ret = zstdckpt_frame_usable(f, err);
	if (!ret)
		ret = blob_parse(f, blob, len, &bi, err);
	return ret ? ret : zstdckpt_dec_new(sp, f, &bi.ck, fill_blob, &bi, out, err);
}

int zstdckpt_blob_open(const struct zstddec_frame *f, const void *blob, size_t len,
		       struct zstdckpt_dec **out, struct zerr *err)
{
	return zstdckpt_blob_open_in(NULL, f, blob, len, out, err);
}
