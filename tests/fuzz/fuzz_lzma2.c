/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for codec/lzma2dec: the input is raw LZMA2 data (what an
 * xz Block holds after its header), decoded differentially.
 *
 * How it works.  liblzma's raw LZMA2 decoder is the reference: it decodes
 * the input (to its end marker, its first error, or MAX_OUT bytes).  Then
 * lzma2dec decodes it, in odd-sized reads that each end at the very end of
 * a heap buffer (one byte past the request is an ASan report), and must
 * agree: where liblzma reaches the end marker, the same bytes and the end;
 * where liblzma fails, a failure (-EIO) no later than liblzma's output
 * ends; up to where either stops, the same bytes.  Our decoder may not
 * accept anything liblzma refuses, nor refuse anything it accepts (it may
 * fail before liblzma's MAX_OUT on input liblzma fails on later: it reads
 * a chunk whole, so a cut chunk fails at its start).
 *
 * At every chunk boundary the harness exports a checkpoint; a few of them
 * (chosen from the input's hash) are serialised, loaded and resumed from,
 * and the resumed decoder must give exactly the bytes and the outcome of
 * the first pass from that point.  A damaged copy of one serialised
 * checkpoint must be refused by lzma2dec_ckpt_load or lzma2dec_resume, or
 * decode to an end or -EIO without breaking the limit.
 *
 * The dictionary size comes from the input's hash: 1 MiB mostly, 4 KiB
 * (the window wraps) one time in four; the output limit is sometimes the
 * exact size liblzma found, sometimes one byte less (which must fail).
 */
#include <errno.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "lzma2dec.h"

#define MAX_OUT	  (256u << 10)
#define MAX_CKPTS 3

static const size_t reads[] = { 1, 3, 7, 31, 127, 509, 4093, 65521, 1u << 20 };

struct mem {
	const uint8_t *p;
	size_t n;
};

static ssize_t mem_pull(void *opaque, uint64_t coff, void *buf, size_t len)
{
	const struct mem *m = opaque;

	if (coff >= m->n)
		return 0;
	if (len > m->n - coff)
		len = m->n - coff;
	memcpy(buf, m->p + coff, len);
	return (ssize_t)len;
}

/* 1: end marker; 0: stopped at the limit; -1: error or truncated input. */
static int ref_decode(const uint8_t *in, size_t n, uint32_t dict, uint8_t *out, size_t *outn)
{
	lzma_options_lzma opt = { .dict_size = dict };
	lzma_filter f[2] = { { LZMA_FILTER_LZMA2, &opt }, { LZMA_VLI_UNKNOWN, NULL } };
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_ret r;

	FUZZ_CHECK(lzma_raw_decoder(&s, f) == LZMA_OK, "lzma_raw_decoder");
	s.next_in = in;
	s.avail_in = n;
	s.next_out = out;
	s.avail_out = MAX_OUT;
	r = lzma_code(&s, LZMA_FINISH);
	*outn = MAX_OUT - s.avail_out;
	lzma_end(&s);
	if (r == LZMA_STREAM_END)
		return 1;
	return r == LZMA_OK && *outn == MAX_OUT ? 0 : -1;
}

/*
 * Whether liblzma, given no output limit, fails on the input (damage or
 * truncation) within 64 MiB of output.  Ours reads each chunk whole before
 * decoding it, so it may fail at the start of a chunk that is cut short,
 * where liblzma first streams out what the chunk's start holds.
 */
static bool ref_fails_later(const uint8_t *in, size_t n, uint32_t dict)
{
	static uint8_t scratch[64u << 10];
	lzma_options_lzma opt = { .dict_size = dict };
	lzma_filter f[2] = { { LZMA_FILTER_LZMA2, &opt }, { LZMA_VLI_UNKNOWN, NULL } };
	lzma_stream s = LZMA_STREAM_INIT;
	uint64_t total = 0;
	lzma_ret r;

	FUZZ_CHECK(lzma_raw_decoder(&s, f) == LZMA_OK, "lzma_raw_decoder");
	s.next_in = in;
	s.avail_in = n;
	do {
		s.next_out = scratch;
		s.avail_out = sizeof(scratch);
		r = lzma_code(&s, LZMA_FINISH);
		total += sizeof(scratch) - s.avail_out;
	} while (r == LZMA_OK && total < (64u << 20));
	lzma_end(&s);
	return r != LZMA_OK && r != LZMA_STREAM_END;
}

struct kept {
	uint64_t seed;
	unsigned boundaries;
	size_t n;
	uint8_t *blob[MAX_CKPTS];
	size_t len[MAX_CKPTS];
	uint64_t uoff[MAX_CKPTS];
};

static int keep(void *opaque, struct lzma2dec *d, const struct lzma2dec_chunk *c)
{
	struct kept *k = opaque;
	struct lzma2dec_ckpt ck;
	ssize_t n;

	k->boundaries++;
	if (k->n == MAX_CKPTS || fuzz_mix(&k->seed) % 3)
		return 0;
	FUZZ_CHECK(lzma2dec_ckpt_export(d, &ck) == 0, "export failed inside the callback");
	FUZZ_CHECK(ck.uoff == c->uoff && ck.coff == c->coff && ck.control == c->control,
		   "checkpoint offsets disagree with the chunk");
	k->len[k->n] = lzma2dec_ckpt_size(&ck);
	k->blob[k->n] = malloc(k->len[k->n]);
	FUZZ_CHECK(k->blob[k->n], "out of memory");
	n = lzma2dec_ckpt_save(&ck, k->blob[k->n], k->len[k->n]);
	FUZZ_CHECK(n == (ssize_t)k->len[k->n], "ckpt_save returned %zd", n);
	k->uoff[k->n++] = c->uoff;
	lzma2dec_ckpt_release(&ck);
	return 0;
}

/*
 * Reads d into out until the end marker, an error, or limit bytes.
 * Returns 1, 0 or the error; *outn is the byte count.
 */
static int our_read(struct lzma2dec *d, uint8_t *out, size_t limit, uint64_t *state, size_t *outn)
{
	struct zerr err = { 0 };
	size_t got = 0;
	ssize_t n;

	for (;;) {
		size_t want = reads[fuzz_mix(state) % (sizeof(reads) / sizeof(reads[0]))];

		if (want > limit - got)
			want = limit - got;
		if (want == 0) {
			*outn = got;
			return 0;
		}
		/* read into the end of the buffer, then move: a byte too many is an ASan report */
		n = lzma2dec_read(d, out + MAX_OUT - want, want, &err);
		if (n < 0) {
			FUZZ_CHECK(n == -EIO, "read returned %zd, not listed in lzma2dec.h", n);
			FUZZ_CHECK(err.msg[0], "read failed without a reason");
			FUZZ_CHECK(lzma2dec_read(d, out, 1, NULL) == n,
				   "a failed decoder recovered");
			*outn = got;
			return (int)n;
		}
		FUZZ_CHECK((size_t)n <= want, "read returned %zd for %zu", n, want);
		memmove(out + got, out + MAX_OUT - want, (size_t)n);
		got += (size_t)n;
		FUZZ_CHECK(lzma2dec_tell(d) >= got, "tell went back");
		if (n == 0 || (size_t)n < want) {
			FUZZ_CHECK(n == 0 || lzma2dec_read(d, out, 1, NULL) == 0,
				   "a short read not followed by the end");
			*outn = got;
			return 1;
		}
	}
}

/* Resumes from a serialised checkpoint; must end as the first pass did from there. */
static void check_resume(const struct mem *m, uint32_t dict, const uint8_t *blob, size_t len,
			 uint64_t uoff, const uint8_t *first, size_t firstn, int firstret,
			 uint64_t *state, uint8_t *out)
{
	struct lzma2dec_ckpt ck;
	struct lzma2dec *d;
	size_t n, after;
	int ret;

	FUZZ_CHECK(lzma2dec_ckpt_load(blob, len, &ck) == 0, "a saved checkpoint does not load");
	FUZZ_CHECK(lzma2dec_resume(&ck, dict, UINT64_MAX, mem_pull, (void *)m, &d) == 0,
		   "a saved checkpoint does not resume");
	lzma2dec_ckpt_release(&ck);
	FUZZ_CHECK(lzma2dec_tell(d) == uoff, "resumed at the wrong offset");
	ret = our_read(d, out, MAX_OUT - uoff, state, &n);
	lzma2dec_free(d);
	/*
	 * A failing read returns none of its bytes, so after an error only a
	 * prefix is comparable, and the first pass may have returned fewer
	 * bytes than uoff: a read that failed in a later chunk dropped them.
	 */
	after = firstn > uoff ? (size_t)(firstn - uoff) : 0;
	FUZZ_CHECK(memcmp(out, first + uoff, n < after ? n : after) == 0,
		   "resumed at %llu: bytes differ from the first pass", (unsigned long long)uoff);
	FUZZ_CHECK(ret == firstret && (ret < 0 || n == after),
		   "resumed at %llu: outcome %d after %zu bytes, first pass %d after %zu",
		   (unsigned long long)uoff, ret, n, firstret, after);
}

/* A damaged checkpoint: refused, or decodes cleanly within the limit. */
static void check_damaged(const struct mem *m, uint32_t dict, const uint8_t *blob, size_t len,
			  uint64_t *state, uint8_t *out)
{
	struct lzma2dec_ckpt ck;
	struct lzma2dec *d;
	uint8_t *bad = malloc(len);
	size_t n;
	uint64_t r = fuzz_mix(state);
	int ret;

	FUZZ_CHECK(bad, "out of memory");
	memcpy(bad, blob, len);
	bad[r % len] ^= (uint8_t)(1u << ((r >> 32) % 8));
	ret = lzma2dec_ckpt_load(bad, len, &ck);
	free(bad);
	if (ret < 0) {
		FUZZ_CHECK(ret == -EINVAL && !ck.probs && !ck.window, "load: %d, or arrays left",
			   ret);
		return;
	}
	ret = lzma2dec_resume(&ck, dict,
			      ck.uoff > UINT64_MAX - MAX_OUT ? UINT64_MAX : ck.uoff + MAX_OUT / 2,
			      mem_pull, (void *)m, &d);
	lzma2dec_ckpt_release(&ck);
	if (ret < 0) {
		FUZZ_CHECK(ret == -EINVAL && d == NULL, "resume: %d", ret);
		return;
	}
	ret = our_read(d, out, MAX_OUT, state, &n);
	FUZZ_CHECK(ret == 1 || ret == -EIO, "damaged checkpoint: outcome %d", ret);
	FUZZ_CHECK(n <= MAX_OUT / 2, "damaged checkpoint: %zu bytes past its limit", n);
	lzma2dec_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t state = fuzz_seed(data, size), r = fuzz_mix(&state);
	uint32_t dict = r % 4 == 0 ? 4096 : 1u << 20;
	struct mem m = { data, size };
	struct kept k = { .seed = fuzz_mix(&state) };
	static uint8_t *ref, *ours, *tmp; /* once: allocating 3 MiB per input halves the speed */
	uint64_t ulimit = UINT64_MAX;
	struct lzma2dec *d;
	size_t refn, oursn, common;
	int rr, ret;

	if (!ref) {
		ref = malloc(MAX_OUT);
		ours = malloc(MAX_OUT);
		tmp = malloc(MAX_OUT);
		FUZZ_CHECK(ref && ours && tmp, "out of memory");
	}
	rr = ref_decode(data, size, dict, ref, &refn);

	/* the limit: none, or exactly liblzma's size (fine), or one less (must fail) */
	if (rr == 1 && (r >> 8) % 4 == 1)
		ulimit = refn;
	else if (rr == 1 && refn && (r >> 8) % 4 == 2)
		ulimit = refn - 1;
	ret = lzma2dec_new(dict, ulimit, mem_pull, &m, &d);
	FUZZ_CHECK(ret == 0, "lzma2dec_new: %d", ret);
	lzma2dec_set_chunk_cb(d, keep, &k);
	ret = our_read(d, ours, MAX_OUT, &state, &oursn);
	lzma2dec_free(d);

	common = refn < oursn ? refn : oursn;
	FUZZ_CHECK(memcmp(ref, ours, common) == 0, "output differs from liblzma's within %zu bytes",
		   common);
	if (ulimit != UINT64_MAX && ulimit < refn) {
		FUZZ_CHECK(ret == -EIO && oursn <= ulimit, "limit %llu: returned %d after %zu",
			   (unsigned long long)ulimit, ret, oursn);
	} else if (rr == 1) {
		FUZZ_CHECK(ret == 1 && oursn == refn,
			   "liblzma: end after %zu bytes; ours: %d after %zu", refn, ret, oursn);
	} else if (rr == 0) {
		/* An early -EIO only where liblzma fails later on: never a refusal of good data. */
		FUZZ_CHECK((ret == 0 && oursn == MAX_OUT) ||
				   (ret == -EIO && ref_fails_later(data, size, dict)),
			   "liblzma: %u bytes; ours: %d after %zu", MAX_OUT, ret, oursn);
	} else {
		FUZZ_CHECK(ret < 0 && oursn <= refn,
			   "liblzma fails after %zu bytes; ours: %d after %zu", refn, ret, oursn);
	}

	for (size_t i = 0; i < k.n; i++) {
		if (ulimit == UINT64_MAX)
			check_resume(&m, dict, k.blob[i], k.len[i], k.uoff[i], ours, oursn, ret,
				     &state, tmp);
		if (i == 0)
			check_damaged(&m, dict, k.blob[i], k.len[i], &state, tmp);
		free(k.blob[i]);
	}
	return 0;
}
