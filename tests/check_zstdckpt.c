/* SPDX-License-Identifier: MIT */
/*
 * Tests for codec/zstdckpt.c.  Fixtures are made at start-up with the zstd
 * tool (libzstd 1.5.4) in a mkdtemp directory, each with its expected
 * output from `zstd -dc` (the oracle).  The main test takes a checkpoint at
 * every block boundary of every fixture and resumes from each one to the
 * frame's end, comparing byte for byte.  crafted_modes makes frames by
 * hand for the table modes libzstd's encoder never chains.  The blobs_*
 * tests do the same through zstdckpt_build_blobs and zstdckpt_blob_open
 * (sparse windows), and feed damaged frames and damaged or forged blobs.
 *
 * `check_zstdckpt --bench FILE.zst [SPAN]` measures instead (not run by
 * ctest): decode speed of zstddec (ZSTD_decompressStream), of zstdckpt from
 * the frame's start (ZSTD_decompressBlock) and of the checkpoint-building
 * pass, medians of 5, and the checkpoints' sizes.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zmtest.h"
#include <zlib.h> /* crc32: resealing forged blobs */

#include "zstd.h" /* ZSTD_decompressDCtx: the oracle for hand-made frames; ZSTD_compress */
#include "zstdckpt.h"
#include "zstddec.h"

#define TEXT_SIZE  (4u << 20)
#define MIXED_SIZE (3u << 20)
#define BIG_SIZE   (17u << 20)

static char tmpdir[1024];
static int gen_ok;

/* Every fixture: name, source, zstd options. */
static const struct {
	const char *name, *src, *opts;
} fixtures[] = {
	{ "t1.zst", "text", "-1" },
	{ "t3.zst", "text", "-3" },
	{ "t9.zst", "text", "-9" },
	{ "t19.zst", "text", "-19" },
	{ "tlong.zst", "text", "-3 --long=27" },
	{ "t22.zst", "text", "--ultra -22" },
	{ "m1.zst", "mixed", "-1" },
	{ "m3.zst", "mixed", "-3" },
	{ "m9.zst", "mixed", "-9" },
	{ "m19.zst", "mixed", "-19" },
	{ "mlong.zst", "mixed", "-3 --long=27" },
	{ "m22.zst", "mixed", "--ultra -22" },
};

static void tpath(char *buf, size_t len, const char *name)
{
	zmtest_join(buf, len, tmpdir, name);
}

/* Text, then runs of pseudo-random bytes, zeros and text again: raw, RLE and compressed blocks. */
static int gen_mixed(const char *path)
{
	FILE *f = fopen(path, "w");
	uint32_t x = 12345;
	char tpath_[PATH_MAX];
	FILE *t;
	size_t n = 0;

	tpath(tpath_, sizeof(tpath_), "text");
	t = fopen(tpath_, "r");
	if (!f || !t)
		return -1;
	while (n < MIXED_SIZE) {
		unsigned kind = (unsigned)(n / 200000) % 3;
		size_t run = 200000 - n % 200000;

		if (run > MIXED_SIZE - n)
			run = MIXED_SIZE - n;
		for (size_t i = 0; i < run; i++) {
			int c;

			if (kind == 0) {
				c = fgetc(t);
			} else if (kind == 1) {
				x ^= x << 13;
				x ^= x >> 17;
				x ^= x << 5;
				c = (int)(x & 255);
			} else {
				c = 0;
			}
			fputc(c, f);
		}
		n += run;
	}
	fclose(t);
	return fclose(f);
}

static int gen_fixtures(void)
{
	char path[PATH_MAX];

	tpath(path, sizeof(path), "text");
	if (zmtest_text(path, TEXT_SIZE, 7))
		return -1;
	tpath(path, sizeof(path), "mixed");
	if (gen_mixed(path))
		return -1;
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		if (zmtest_sh(tmpdir, "zstd -q -f %s %s -o %s && zstd -q -dc %s > %s.out",
			      fixtures[i].opts, fixtures[i].src, fixtures[i].name, fixtures[i].name,
			      fixtures[i].name) != 0)
			return -1;
	/* a window over 16 MiB: marked by granules, resumed in a ring on huge pages */
	tpath(path, sizeof(path), "bigtext");
	if (zmtest_text(path, BIG_SIZE, 11) ||
	    zmtest_sh(tmpdir, "zstd -q -f -3 --long=25 bigtext -o big.zst && "
			      "zstd -q -dc --long=25 big.zst > big.zst.out") != 0)
		return -1;
	/* through a pipe: no Frame_Content_Size */
	if (zmtest_sh(tmpdir, "cat text | zstd -q -3 > pipe.zst && zstd -q -dc pipe.zst > "
			      "pipe.zst.out") != 0)
		return -1;
	return 0;
}

/* A fixture, open, walked, with its oracle output. */
struct fx {
	struct zsrc *src;
	struct zstddec_index *idx;
	const struct zstddec_frame *f;
	uint8_t *want;
	size_t wlen;
};

static void fx_open(struct fx *x, const char *name)
{
	char path[PATH_MAX], opath[PATH_MAX + 8];
	struct stat st;
	struct zerr e = { 0 };
	int ret;

	ck_assert_msg(gen_ok, "fixtures are missing (is zstd installed?)");
	tpath(path, sizeof(path), name);
	snprintf(opath, sizeof(opath), "%s.out", path);
	x->want = zmtest_slurp(opath, &x->wlen);
	x->src = zmtest_src_open(path);
	ck_assert_int_eq(zsrc_stat(x->src, &st), 0);
	ret = zstddec_index_read(x->src, (uint64_t)st.st_size, ZSTDDEC_WINDOW_LIBMAX, &x->idx, &e);
	ck_assert_msg(ret == 0, "%s: %s", name, e.msg);
	ck_assert_uint_eq(x->idx->nframes, 1);
	x->f = &x->idx->frames[0];
}

static void fx_close(struct fx *x)
{
	zsrc_put(x->src);
	zstddec_index_free(x->idx);
	free(x->want);
}

/* Decodes d to its end in reads of `chunk` bytes; checks them against want[from..]. */
static void drain(struct zstdckpt_dec *d, struct zsrc *src, const struct fx *x, uint64_t from,
		  size_t chunk, const char *what)
{
	static uint8_t buf[1u << 20];
	uint64_t pos = from;
	struct zerr e = { 0 };
	ssize_t n;

	ck_assert_uint_le(chunk, sizeof(buf));
	while ((n = zstdckpt_dec_read(d, src, buf, chunk, &e)) > 0) {
		ck_assert_uint_le(pos + (uint64_t)n, x->wlen);
		ck_assert_msg(memcmp(buf, x->want + pos, (size_t)n) == 0,
			      "%s: bytes differ in [%llu, %llu)", what, (unsigned long long)pos,
			      (unsigned long long)(pos + (uint64_t)n));
		pos += (uint64_t)n;
		ck_assert_uint_eq(zstdckpt_dec_tell(d), pos);
	}
	ck_assert_msg(n == 0, "%s: read failed at %llu: %s", what, (unsigned long long)pos, e.msg);
	ck_assert_uint_eq(pos, x->wlen);
}

/* What a build callback checks and keeps. */
struct seen {
	const struct fx *x;
	uint64_t span, last_uoff;
	uint32_t n;
	size_t chunk;
	bool resume;	      /* resume from every checkpoint, to the end */
	struct zstdckpt keep; /* the checkpoint numbered keep_at */
	uint32_t keep_at;
	uint8_t *keep_win;
};

static int on_ckpt(void *arg, const struct zstdckpt *ck, const uint8_t *w1, size_t n1,
		   const uint8_t *w2, size_t n2)
{
	struct seen *s = arg;
	const struct fx *x = s->x;
	uint8_t *win = malloc(ck->wlen ? (size_t)ck->wlen : 1);
	struct zstdckpt_dec *d;
	struct zerr e = { 0 };
	char what[64];
	int ret;

	ck_assert_ptr_nonnull(win);
	ck_assert_uint_eq(n1 + n2, ck->wlen);
	ck_assert_uint_ge(ck->uoff, s->last_uoff + s->span);
	ck_assert_uint_lt(ck->uoff, x->wlen);
	memcpy(win, w1, n1);
	memcpy(win + n1, w2, n2);
	/* the window is the output just before uoff */
	ck_assert(memcmp(win, x->want + ck->uoff - ck->wlen, (size_t)ck->wlen) == 0);
	if (s->resume) {
		snprintf(what, sizeof(what), "checkpoint %u at %llu", s->n,
			 (unsigned long long)ck->uoff);
		ret = zstdckpt_dec_open(x->f, ck, win, &d, &e);
		ck_assert_msg(ret == 0, "%s: %s", what, e.msg);
		ck_assert_uint_eq(zstdckpt_dec_tell(d), ck->uoff);
		drain(d, x->src, x, ck->uoff, s->chunk, what);
		zstdckpt_dec_close(d);
	}
	if (s->n == s->keep_at) {
		s->keep = *ck;
		s->keep_win = win;
		win = NULL;
	}
	free(win);
	s->last_uoff = ck->uoff;
	s->n++;
	return 0;
}

/* Builds x's checkpoints at `span`, resuming from each if resume. */
static struct zstdckpt_stats build(const struct fx *x, uint64_t span, bool resume, struct seen *s)
{
	struct zstdckpt_stats st;
	struct zerr e = { 0 };
	int ret;

	memset(s, 0, sizeof(*s));
	s->x = x;
	s->span = span;
	s->resume = resume;
	s->chunk = 65521;
	s->keep_at = 1;
	ret = zstdckpt_build(x->src, x->f, span, on_ckpt, s, &st, &e);
	ck_assert_msg(ret == 0, "build: %d: %s at %llu", ret, e.msg, (unsigned long long)e.coff);
	ck_assert_uint_eq(st.usize, x->wlen);
	ck_assert_uint_eq(st.nckpt, s->n);
	ck_assert_uint_eq(st.nblocks, x->f->nblocks);
	return st;
}

/* A checkpoint at every block boundary of every fixture; each resumed to the end. */
START_TEST(test_resume_every_boundary)
{
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		struct fx x;
		struct seen s;
		struct zstdckpt_stats st;

		fx_open(&x, fixtures[i].name);
		st = build(&x, 1, true, &s);
		/* all but the last block's boundary, less the skipped ones */
		ck_assert_uint_eq(st.nckpt + st.skip_rep + st.skip_rle, x.f->nblocks - 1);
		ck_assert_uint_eq(st.skip_rle, 0);
		ck_assert_uint_ge(st.nckpt, x.f->nblocks - 2);
		free(s.keep_win);
		fx_close(&x);
	}
}
END_TEST

/* Spacing: the first checkpoint at or past span, each next at or past the last + span. */
START_TEST(test_span)
{
	struct fx x;
	struct seen s;
	struct zstdckpt_stats st;

	fx_open(&x, "t3.zst");
	st = build(&x, 1u << 20, false, &s);
	ck_assert_uint_ge(st.nckpt, 3);
	ck_assert_uint_le(st.nckpt, 4);
	ck_assert_uint_gt(st.nseq, 0);
	free(s.keep_win);
	fx_close(&x);
}
END_TEST

/* Odd read sizes from a checkpoint, and a decode from the frame's start (ck NULL). */
START_TEST(test_reads)
{
	static const size_t chunks[] = { 1, 7, 4093, 1u << 20 };
	struct fx x;
	struct seen s;
	struct zstdckpt_dec *d;
	struct zerr e = { 0 };

	fx_open(&x, "m3.zst");
	build(&x, 1u << 20, false, &s);
	ck_assert_ptr_nonnull(s.keep_win);
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		ck_assert_int_eq(zstdckpt_dec_open(x.f, &s.keep, s.keep_win, &d, &e), 0);
		drain(d, x.src, &x, s.keep.uoff, chunks[i], "odd reads");
		/* at the end: 0, and again 0 */
		ck_assert_int_eq(zstdckpt_dec_read(d, x.src, s.keep_win, 1, &e), 0);
		zstdckpt_dec_close(d);
	}
	ck_assert_int_eq(zstdckpt_dec_open(x.f, NULL, NULL, &d, &e), 0);
	drain(d, x.src, &x, 0, 65536, "from the start");
	zstdckpt_dec_close(d);
	free(s.keep_win);
	fx_close(&x);
}
END_TEST

/* A frame without Frame_Content_Size: its Window_Size is the window. */
START_TEST(test_no_fcs)
{
	struct fx x;
	struct seen s;

	fx_open(&x, "pipe.zst");
	ck_assert_uint_eq(x.f->usize, ZSTDDEC_UNKNOWN);
	build(&x, 300000, true, &s);
	ck_assert_uint_ge(s.n, 10);
	ck_assert_uint_eq(s.keep.wlen, s.keep.uoff < x.f->window ? s.keep.uoff : x.f->window);
	free(s.keep_win);
	fx_close(&x);
}
END_TEST

static int stop_cb(void *arg, const struct zstdckpt *ck, const uint8_t *w1, size_t n1,
		   const uint8_t *w2, size_t n2)
{
	(void)arg, (void)ck, (void)w1, (void)n1, (void)w2, (void)n2;
	return -ECANCELED;
}

static int count_cb(void *arg, const struct zstdckpt *ck, const uint8_t *w1, size_t n1,
		    const uint8_t *w2, size_t n2)
{
	(void)arg, (void)ck, (void)w1, (void)n1, (void)w2, (void)n2;
	return 0;
}

/* Bad arguments: span 0, a frame that needs a dictionary, a callback that stops. */
START_TEST(test_bad_args)
{
	struct fx x;
	struct zstddec_frame f;
	struct zerr e = { 0 };
	struct zstdckpt_dec *d = (struct zstdckpt_dec *)&e;

	fx_open(&x, "t1.zst");
	ck_assert_int_eq(zstdckpt_build(x.src, x.f, 0, stop_cb, NULL, NULL, &e), -EINVAL);
	ck_assert_int_eq(zstdckpt_build(x.src, x.f, 1, stop_cb, NULL, NULL, &e), -ECANCELED);
	f = *x.f;
	f.flags |= ZSTDDEC_F_DICT;
	ck_assert_int_eq(zstdckpt_build(x.src, &f, 1, stop_cb, NULL, NULL, &e), -ENOTSUP);
	ck_assert_int_eq(zstdckpt_dec_open(&f, NULL, NULL, &d, &e), -ENOTSUP);
	ck_assert_ptr_null(d);
	fx_close(&x);
}
END_TEST

/* Checkpoints that do not fit their frame, or that libzstd refuses, are refused cleanly. */
START_TEST(test_bad_checkpoint)
{
	struct fx x;
	struct seen s;
	struct zstdckpt ck;
	struct zerr e = { 0 };
	struct zstdckpt_dec *d;
	int ret;

	fx_open(&x, "t19.zst");
	build(&x, 1u << 20, false, &s);
	ck = s.keep;
	ck.rep[1] = 0;
	ck_assert_int_eq(zstdckpt_dec_open(x.f, &ck, s.keep_win, &d, &e), -EINVAL);
	ck_assert_ptr_null(d);
	ck = s.keep;
	ck.rep[2] = (uint32_t)ck.wlen + 1;
	ck_assert_int_eq(zstdckpt_dec_open(x.f, &ck, s.keep_win, &d, &e), -EINVAL);
	ck = s.keep;
	ck.wlen--;
	ck_assert_int_eq(zstdckpt_dec_open(x.f, &ck, s.keep_win, &d, &e), -EINVAL);
	ck = s.keep;
	ck.coff = x.f->coff + x.f->csize;
	ck_assert_int_eq(zstdckpt_dec_open(x.f, &ck, s.keep_win, &d, &e), -EINVAL);
	ck = s.keep;
	ck.fse_len[ZSTDCKPT_OF] = ZSTDCKPT_FSE_MAX + 1;
	ck_assert_int_eq(zstdckpt_dec_open(x.f, &ck, s.keep_win, &d, &e), -EINVAL);
	/* an accuracy log above the maximum: libzstd's dictionary loader refuses it */
	ck = s.keep;
	ck.fse[ZSTDCKPT_LL][0] |= 0x0F;
	ret = zstdckpt_dec_open(x.f, &ck, s.keep_win, &d, &e);
	ck_assert_msg(ret == -EINVAL, "%d: %s", ret, e.msg);
	ck_assert_msg(strstr(e.msg, "checkpoint refused"), "%s", e.msg);
	/* a checkpoint moved to the middle of a block: errors, never a crash */
	ck = s.keep;
	ck.coff += 1;
	ret = zstdckpt_dec_open(x.f, &ck, s.keep_win, &d, &e);
	ck_assert_int_eq(ret, 0);
	for (;;) {
		static uint8_t buf[1u << 16];
		ssize_t n = zstdckpt_dec_read(d, x.src, buf, sizeof(buf), &e);

		if (n <= 0) {
			ck_assert_int_eq(n, -EIO);
			break;
		}
	}
	ck_assert_int_eq(zstdckpt_dec_read(d, x.src, s.keep_win, 1, &e), -EIO);
	zstdckpt_dec_close(d);
	free(s.keep_win);
	fx_close(&x);
}
END_TEST

/* Copies fixture name to "bad.zst" and returns a fixture opened on the copy, walked from the
 * original. */
static void fx_damaged(struct fx *x, const char *name, uint64_t flip_at, uint64_t truncate_to)
{
	char path[PATH_MAX];
	int fd;

	fx_open(x, name);
	ck_assert_int_eq(zmtest_sh(tmpdir, "cp %s bad.zst", name), 0);
	tpath(path, sizeof(path), "bad.zst");
	fd = open(path, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	if (flip_at != UINT64_MAX) {
		uint8_t c;

		ck_assert_int_eq(pread(fd, &c, 1, (off_t)flip_at), 1);
		c ^= 0x5A;
		ck_assert_int_eq(pwrite(fd, &c, 1, (off_t)flip_at), 1);
	}
	if (truncate_to != UINT64_MAX)
		ck_assert_int_eq(ftruncate(fd, (off_t)truncate_to), 0);
	zsrc_put(x->src);
	x->src = zmtest_src_fd(fd);
}

/* Damaged input: the build fails with -EIO and a reason; so does a resume past the damage. */
START_TEST(test_damaged)
{
	struct fx x;
	struct seen s;
	struct zerr e = { 0 };
	struct zstdckpt_dec *d;
	int ret, nfail = 0;

	/* a byte flipped anywhere in the blocks: every place is caught (the checksum at worst) */
	for (uint64_t at = 20; at < 400000; at += 9973) {
		fx_damaged(&x, "t3.zst", at, UINT64_MAX);
		memset(&s, 0, sizeof(s));
		s.x = &x;
		s.span = UINT64_MAX / 2;
		ret = zstdckpt_build(x.src, x.f, s.span, on_ckpt, &s, NULL, &e);
		ck_assert_msg(ret == -EIO, "flip at %llu: %d", (unsigned long long)at, ret);
		ck_assert_str_ne(e.msg, "");
		nfail++;
		fx_close(&x);
	}
	ck_assert_int_gt(nfail, 30);
	/* truncated: the build, and a resume from a checkpoint before the cut */
	fx_open(&x, "t9.zst");
	build(&x, 1u << 20, false, &s);
	fx_close(&x);
	fx_damaged(&x, "t9.zst", UINT64_MAX, s.keep.coff + 1000);
	ret = zstdckpt_build(x.src, x.f, 1, stop_cb, NULL, NULL, &e);
	ck_assert_int_eq(ret, -ECANCELED); /* the first checkpoint comes before the cut */
	ret = zstdckpt_build(x.src, x.f, 1u << 30, stop_cb, NULL, NULL, &e);
	ck_assert_int_eq(ret, -EIO);
	ck_assert_int_eq(zstdckpt_dec_open(x.f, &s.keep, s.keep_win, &d, &e), 0);
	for (;;) {
		static uint8_t buf[1u << 16];
		ssize_t n = zstdckpt_dec_read(d, x.src, buf, sizeof(buf), &e);

		if (n <= 0) {
			ck_assert_int_eq(n, -EIO);
			ck_assert_msg(strstr(e.msg, "truncated") || strstr(e.msg, "past"), "%s",
				      e.msg);
			break;
		}
	}
	zstdckpt_dec_close(d);
	free(s.keep_win);
	fx_close(&x);
}
END_TEST

/* A frame whose stated size is smaller than its output: -EIO from both. */
START_TEST(test_lying_size)
{
	struct fx x;
	struct seen s;
	struct zstddec_frame f;
	struct zerr e = { 0 };
	struct zstdckpt_dec *d;
	ssize_t n;
	static uint8_t buf[1u << 20];

	fx_open(&x, "m9.zst");
	build(&x, 1u << 20, false, &s);
	f = *x.f;
	f.usize -= 1;
	ck_assert_int_eq(zstdckpt_build(x.src, &f, 1u << 20, stop_cb, NULL, NULL, &e), -ECANCELED);
	ck_assert_int_eq(zstdckpt_build(x.src, &f, 1u << 30, stop_cb, NULL, NULL, &e), -EIO);
	ck_assert_int_eq(zstdckpt_dec_open(&f, &s.keep, s.keep_win, &d, &e), 0);
	while ((n = zstdckpt_dec_read(d, x.src, buf, sizeof(buf), &e)) > 0)
		;
	ck_assert_int_eq(n, -EIO);
	ck_assert_msg(strstr(e.msg, "larger"), "%s", e.msg);
	zstdckpt_dec_close(d);
	free(s.keep_win);
	fx_close(&x);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Hand-made frames: table modes libzstd's encoder never chains. */

static uint32_t xs(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/*
 * Appends a compressed block of 24 raw literals and 2 to 4 sequences with
 * modes[k] (0 predefined, 1 RLE, 3 repeat) and a random bitstream; returns
 * the new length.
 */
static size_t craft_block(uint8_t *p, size_t len, const unsigned *modes, bool last, uint32_t *x)
{
	static const unsigned rle_max[3] = { 15, 4, 10 };
	size_t start = len, bsize;
	unsigned nbytes = 3 + xs(x) % 6;

	len += 3;
	p[len++] = 24 << 3;
	for (int i = 0; i < 24; i++)
		p[len++] = (uint8_t)('a' + xs(x) % 26);
	p[len++] = (uint8_t)(2 + xs(x) % 3);
	p[len++] = (uint8_t)(modes[0] << 6 | modes[1] << 4 | modes[2] << 2);
	for (int k = 0; k < 3; k++)
		if (modes[k] == 1)
			p[len++] = (uint8_t)(xs(x) % (rle_max[k] + 1));
	for (unsigned i = 0; i < nbytes; i++)
		p[len++] = (uint8_t)xs(x);
	p[len - 1] |= (uint8_t)(1u << (xs(x) % 8));
	bsize = len - start - 3;
	p[start] = (uint8_t)(bsize << 3 | 2u << 1 | last);
	p[start + 1] = (uint8_t)(bsize >> 5);
	p[start + 2] = (uint8_t)(bsize >> 13);
	return len;
}

/*
 * Two-block frames with random sequences, kept when libzstd decodes them:
 * block 1 sets each table predefined or RLE, block 2 uses each as
 * predefined or repeat.  A checkpoint between them must resume to
 * libzstd's bytes (the predefined tables written as descriptions), or be
 * skipped exactly when block 2 repeats an RLE table.  libzstd's encoder
 * makes neither chain, so the files of the other tests never do.
 */
START_TEST(test_crafted_modes)
{
	static uint8_t frame[256], ref[4096];
	char path[PATH_MAX];
	uint32_t x = 2463534242u;
	unsigned skipped = 0, predef_rep = 0;
	ZSTD_DCtx *dc = ZSTD_createDCtx();

	ck_assert_ptr_nonnull(dc);
	tpath(path, sizeof(path), "craft.zst");
	for (unsigned trial = 0; trial < 20000000 && (predef_rep < 10 || skipped < 10); trial++) {
		unsigned m1[3], m2[3];
		bool rle_repeated = false, predef_repeated = false;
		size_t len = 0, n;
		struct fx fx;
		struct seen sn;
		struct zstdckpt_stats st;
		struct zerr e;
		FILE *f;
		int ret;

		for (int k = 0; k < 3; k++) {
			m1[k] = trial % 4 == 0 ? xs(&x) % 2 : 0;
			m2[k] = xs(&x) % 2 ? 3 : 0;
			rle_repeated |= m1[k] == 1 && m2[k] == 3;
			predef_repeated |= m1[k] == 0 && m2[k] == 3;
		}
		memcpy(frame, "\x28\xb5\x2f\xfd\x00\x00", 6); /* no FCS, 1 KiB window */
		len = craft_block(frame, 6, m1, false, &x);
		len = craft_block(frame, len, m2, true, &x);
		n = ZSTD_decompressDCtx(dc, ref, sizeof(ref), frame, len);
		if (ZSTD_isError(n))
			continue;
		f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(fwrite(frame, 1, len, f), len);
		ck_assert_int_eq(fclose(f), 0);
		/*
		 * Most random bitstreams that libzstd takes are read past their
		 * start, which RFC 8878 calls corrupt: the parser does not follow
		 * them and the boundary gets no checkpoint.  Only the others are
		 * worth the oracle.
		 */
		fx.src = zmtest_src_open(path);
		ck_assert_int_eq(
			zstddec_index_read(fx.src, len, ZSTDDEC_WINDOW_LIBMAX, &fx.idx, &e), 0);
		ret = zstdckpt_build(fx.src, &fx.idx->frames[0], 1, count_cb, NULL, &st, &e);
		zsrc_put(fx.src);
		zstddec_index_free(fx.idx);
		/* the streaming decoder refuses a few that the one-shot one takes */
		if (ret == -EIO)
			continue;
		ck_assert_int_eq(ret, 0);
		if (st.skip_rep)
			continue;
		ck_assert_int_eq(zmtest_sh(tmpdir, "zstd -q -dc craft.zst > craft.zst.out"), 0);
		fx_open(&fx, "craft.zst");
		ck_assert_uint_eq(fx.wlen, n);
		ck_assert(memcmp(fx.want, ref, n) == 0);
		st = build(&fx, 1, true, &sn);
		ck_assert_uint_eq(st.lost_coff, 0);
		ck_assert_uint_eq(st.skip_rep, 0);
		ck_assert_uint_eq(st.skip_rle, rle_repeated);
		ck_assert_uint_eq(st.nckpt, !rle_repeated);
		skipped += rle_repeated;
		predef_rep += st.nckpt && predef_repeated;
		free(sn.keep_win);
		fx_close(&fx);
	}
	ZSTD_freeDCtx(dc);
	ck_assert_uint_ge(predef_rep, 10);
	ck_assert_uint_ge(skipped, 10);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Blobs (zstdckpt_build_blobs, zstdckpt_blob_open). */

/* What a blob sink checks and keeps. */
struct bseen {
	const struct fx *x;
	uint64_t out_pos; /* output seen so far: compared with want */
	uint64_t last_uoff;
	uint64_t n;
	bool resume;	  /* resume from every blob, to the frame's end */
	uint64_t keep_at; /* the blob numbered keep_at is kept */
	uint8_t *keep;
	size_t keep_len;
	uint64_t keep_uoff;
};

static int bs_out(void *arg, const void *buf, size_t len)
{
	struct bseen *s = arg;

	ck_assert_uint_le(s->out_pos + len, s->x->wlen);
	ck_assert_msg(memcmp(buf, s->x->want + s->out_pos, len) == 0, "out differs at %llu",
		      (unsigned long long)s->out_pos);
	s->out_pos += len;
	return 0;
}

static int bs_point(void *arg, uint64_t uoff, const void *blob, size_t len)
{
	struct bseen *s = arg;
	struct zstdckpt_dec *d;
	struct zerr e = { 0 };
	char what[64];
	int ret;

	ck_assert_uint_gt(uoff, s->last_uoff);
	ck_assert_uint_lt(uoff, s->x->wlen);
	ck_assert_uint_le(uoff, s->out_pos); /* its output came first */
	if (s->resume) {
		snprintf(what, sizeof(what), "blob %llu at %llu", (unsigned long long)s->n,
			 (unsigned long long)uoff);
		ret = zstdckpt_blob_open(s->x->f, blob, len, &d, &e);
		ck_assert_msg(ret == 0, "%s: %d: %s", what, ret, e.msg);
		ck_assert_uint_eq(zstdckpt_dec_tell(d), uoff);
		ck_assert_uint_gt(zstdckpt_dec_cost(d), 0);
		drain(d, s->x->src, s->x, uoff, 65521, what);
		zstdckpt_dec_close(d);
	}
	if (s->n == s->keep_at) {
		s->keep = malloc(len);
		ck_assert_ptr_nonnull(s->keep);
		memcpy(s->keep, blob, len);
		s->keep_len = len;
		s->keep_uoff = uoff;
	}
	s->last_uoff = uoff;
	s->n++;
	return 0;
}

static struct zstdckpt_blob_stats build_blobs(const struct fx *x, uint64_t span, bool resume,
					      struct bseen *s)
{
	struct zstdckpt_sink sink = { bs_out, bs_point, s };
	struct zstdckpt_blob_stats st;
	struct zerr e = { 0 };
	int ret;

	memset(s, 0, sizeof(*s));
	s->x = x;
	s->resume = resume;
	s->keep_at = 1;
	ret = zstdckpt_build_blobs(x->src, x->f, span, &sink, &st, &e);
	ck_assert_msg(ret == 0, "build_blobs: %d: %s at %llu", ret, e.msg,
		      (unsigned long long)e.coff);
	ck_assert_uint_eq(s->out_pos, x->wlen);
	ck_assert_uint_eq(st.points, s->n);
	ck_assert_uint_eq(st.ck.usize, x->wlen);
	ck_assert_uint_eq(st.ck.nblocks, x->f->nblocks);
	return st;
}

/*
 * A blob at every block boundary of every fixture (zstd -1 to --ultra -22,
 * --long=27, raw and RLE blocks, no FCS), each resumed to the frame's end
 * and compared with zstd -dc's bytes: the sparse windows miss no byte
 * that is read.  The text windows must be sparse indeed.
 */
START_TEST(test_blobs_every_boundary)
{
	for (size_t i = 0; i <= sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		const char *name =
			i < sizeof(fixtures) / sizeof(fixtures[0]) ? fixtures[i].name : "pipe.zst";
		struct zstdckpt_blob_stats st;
		struct fx x;
		struct bseen s;

		fx_open(&x, name);
		st = build_blobs(&x, 1, true, &s);
		ck_assert_uint_eq(st.points + st.ck.skip_rep + st.ck.skip_rle + st.skip_cost,
				  x.f->nblocks - 1);
		ck_assert_uint_eq(st.skip_cost, 0);
		ck_assert_uint_eq(st.ck.lost_coff, 0);
		ck_assert_uint_ge(st.points, x.f->nblocks - 2);
		ck_assert_uint_gt(st.seq_marked, 0);
		ck_assert_uint_le(st.window_bytes_kept, st.window_bytes_dense);
		if (name[0] == 't')
			ck_assert_msg(st.window_bytes_kept < st.window_bytes_dense / 2,
				      "%s: kept %llu of %llu window bytes", name,
				      (unsigned long long)st.window_bytes_kept,
				      (unsigned long long)st.window_bytes_dense);
		free(s.keep);
		fx_close(&x);
	}
}
END_TEST

/* The spacing and the numbers at a real span; NULL opens at the frame's start. */
START_TEST(test_blobs_span)
{
	struct zstdckpt_blob_stats st;
	struct zstdckpt_dec *d;
	struct zerr e = { 0 };
	struct fx x;
	struct bseen s;

	fx_open(&x, "t3.zst");
	st = build_blobs(&x, 1u << 20, true, &s);
	ck_assert_uint_ge(st.points, 3);
	ck_assert_uint_le(st.points, 4);
	/* compressed and sparse: far below the dense windows */
	ck_assert_uint_lt(st.blob_bytes, st.window_bytes_dense / 8);
	ck_assert_int_eq(zstdckpt_blob_open(x.f, NULL, 0, &d, &e), 0);
	ck_assert_uint_ge(zstdckpt_dec_cost(d), x.f->window < x.wlen ? x.f->window : x.wlen);
	drain(d, x.src, &x, 0, 65536, "from the start");
	zstdckpt_dec_close(d);
	free(s.keep);
	fx_close(&x);
}
END_TEST

/*
 * A 17 MiB window (--long=25 on 17 MiB): the bitmaps have one bit per 4
 * bytes (window / 8 MiB, rounded up to a power of two), and the resumed
 * rings are on huge pages; every blob still resumes exactly.
 */
START_TEST(test_blobs_granules)
{
	struct zstdckpt_blob_stats st;
	struct fx x;
	struct bseen s;

	fx_open(&x, "big.zst");
	ck_assert_uint_gt(x.f->window, 16u << 20);
	st = build_blobs(&x, 2u << 20, true, &s);
	ck_assert_uint_ge(st.points, 7);
	ck_assert_uint_eq(st.skip_cost, 0);
	ck_assert_uint_eq(st.ck.lost_coff, 0);
	ck_assert_uint_lt(st.window_bytes_kept, st.window_bytes_dense / 2);
	free(s.keep);
	fx_close(&x);
}
END_TEST

static uint64_t get_le(const uint8_t *p, unsigned n);

/* Every blob of a build, kept. */
struct allblobs {
	size_t n;
	uint64_t uoff[64];
	uint8_t *blob[64];
	size_t len[64];
};

static int ab_out(void *arg, const void *buf, size_t len)
{
	(void)arg;
	(void)buf;
	(void)len;
	return 0;
}

static int ab_point(void *arg, uint64_t uoff, const void *blob, size_t len)
{
	struct allblobs *a = arg;

	ck_assert_uint_lt(a->n, 64);
	a->uoff[a->n] = uoff;
	a->blob[a->n] = malloc(len);
	ck_assert_ptr_nonnull(a->blob[a->n]);
	memcpy(a->blob[a->n], blob, len);
	a->len[a->n++] = len;
	return 0;
}

static void all_blobs(const struct fx *x, uint64_t span, struct allblobs *a)
{
	struct zstdckpt_sink sink = { ab_out, ab_point, a };
	struct zerr e = { 0 };

	memset(a, 0, sizeof(*a));
	ck_assert_int_eq(zstdckpt_build_blobs(x->src, x->f, span, &sink, NULL, &e), 0);
	ck_assert_uint_ge(a->n, 2);
}

static void all_blobs_free(struct allblobs *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->blob[i]);
}

/* Its checkpoint's file offset (the blob format's field at 44). */
static uint64_t blob_coff(const struct allblobs *a, size_t i)
{
	return get_le(a->blob[i] + 44, 8);
}

/*
 * The stock never holds more than ZSTDCKPT_SPARES_N decoders nor
 * ZSTDCKPT_SPARES_MAX bytes, however many are closed into it; a decoder
 * over the bound (a 17 MiB window) is never kept; and an open takes one.
 */
START_TEST(test_spares_bound)
{
	struct zstdckpt_dec *d[ZSTDCKPT_SPARES_N + 12];
	const size_t nd = sizeof(d) / sizeof(d[0]);
	struct zstdckpt_spares *sp;
	struct zerr e = { 0 };
	struct allblobs a;
	size_t cost, fit;
	struct fx x;

	ck_assert_int_eq(zstdckpt_spares_new(&sp), 0);
	fx_open(&x, "t3.zst");
	all_blobs(&x, 1u << 20, &a);
	for (size_t i = 0; i < nd; i++) {
		ck_assert_int_eq(zstdckpt_blob_open_in(sp, x.f, a.blob[1], a.len[1], &d[i], &e), 0);
		drain(d[i], x.src, &x, a.uoff[1], 65536, "stocked");
	}
	cost = zstdckpt_dec_cost(d[0]);
	for (size_t i = 0; i < nd; i++)
		zstdckpt_dec_close(d[i]);
	fit = ZSTDCKPT_SPARES_MAX / cost;
	fit = fit < ZSTDCKPT_SPARES_N ? fit : ZSTDCKPT_SPARES_N;
	ck_assert_uint_ge(fit, 2);
	ck_assert_uint_le(zstdckpt_spares_bytes(sp), ZSTDCKPT_SPARES_MAX);
	ck_assert_uint_eq(zstdckpt_spares_bytes(sp), fit * cost);
	/* an open takes one (the same bytes) back out */
	ck_assert_int_eq(zstdckpt_blob_open_in(sp, x.f, a.blob[0], a.len[0], &d[0], &e), 0);
	ck_assert_uint_eq(zstdckpt_spares_bytes(sp), (fit - 1) * cost);
	drain(d[0], x.src, &x, a.uoff[0], 65536, "from the stock");
	zstdckpt_dec_close(d[0]);
	all_blobs_free(&a);
	fx_close(&x);
	zstdckpt_spares_free(sp);

	/* a decoder larger than the whole bound is freed at close */
	ck_assert_int_eq(zstdckpt_spares_new(&sp), 0);
	fx_open(&x, "big.zst");
	ck_assert_int_eq(zstdckpt_blob_open_in(sp, x.f, NULL, 0, &d[0], &e), 0);
	ck_assert_uint_gt(zstdckpt_dec_cost(d[0]), ZSTDCKPT_SPARES_MAX);
	zstdckpt_dec_close(d[0]);
	ck_assert_uint_eq(zstdckpt_spares_bytes(sp), 0);
	fx_close(&x);
	zstdckpt_spares_free(sp);
}
END_TEST

/*
 * A decoder from the stock, last used for another file's frame at a
 * nearby file offset (so an input buffer kept from it would be read),
 * or for another point of the same frame, resumes to exact bytes; and
 * so does one opened at the frame's start.
 */
START_TEST(test_spares_other_file)
{
	struct zstdckpt_spares *sp;
	struct zstdckpt_dec *d;
	struct zerr e = { 0 };
	struct allblobs a[2];
	struct fx x[2];
	size_t pairs = 0;

	ck_assert_int_eq(zstdckpt_spares_new(&sp), 0);
	fx_open(&x[0], "m3.zst");
	fx_open(&x[1], "t3.zst");
	ck_assert_uint_eq(x[0].f->window,
			  x[1].f->window); /* one ring size: the stock serves both */
	all_blobs(&x[0], 256u << 10, &a[0]);
	all_blobs(&x[1], 256u << 10, &a[1]);
	for (int u = 0; u < 2; u++) {
		const struct fx *xa = &x[u], *xb = &x[1 - u];
		const struct allblobs *aa = &a[u], *ab = &a[1 - u];

		for (size_t i = 0; i < aa->n; i++) {
			for (size_t j = 0; j < ab->n; j++) {
				uint64_t ca = blob_coff(aa, i), cb = blob_coff(ab, j);
				ssize_t n;
				uint8_t buf[4096];

				if (cb < ca || cb - ca > (256u << 10)) /* inside its input buffer */
					continue;
				/* the first file's decoder, a few reads in, goes back to the stock
				 */
				ck_assert_int_eq(zstdckpt_blob_open_in(sp, xa->f, aa->blob[i],
								       aa->len[i], &d, &e),
						 0);
				n = zstdckpt_dec_read(d, xa->src, buf, sizeof(buf), &e);
				ck_assert_int_eq(n, sizeof(buf));
				ck_assert_mem_eq(buf, xa->want + aa->uoff[i], sizeof(buf));
				zstdckpt_dec_close(d);
				ck_assert_uint_gt(zstdckpt_spares_bytes(sp), 0);
				/* the other file, from the stock */
				ck_assert_int_eq(zstdckpt_blob_open_in(sp, xb->f, ab->blob[j],
								       ab->len[j], &d, &e),
						 0);
				ck_assert_uint_eq(zstdckpt_spares_bytes(sp), 0);
				drain(d, xb->src, xb, ab->uoff[j], 65521, "after another file");
				zstdckpt_dec_close(d);
				pairs++;
			}
		}
	}
	ck_assert_uint_gt(pairs, 0);
	/* another point of the same frame, after one further on */
	for (size_t i = a[1].n; i-- > 0;) {
		ck_assert_int_eq(
			zstdckpt_blob_open_in(sp, x[1].f, a[1].blob[i], a[1].len[i], &d, &e), 0);
		drain(d, x[1].src, &x[1], a[1].uoff[i], 65536, "after a later point");
		zstdckpt_dec_close(d);
	}
	/* and its start */
	ck_assert_int_eq(zstdckpt_blob_open_in(sp, x[1].f, NULL, 0, &d, &e), 0);
	ck_assert_uint_eq(zstdckpt_spares_bytes(sp), 0);
	ck_assert_uint_eq(zstdckpt_dec_tell(d), 0);
	drain(d, x[1].src, &x[1], 0, 65536, "the frame's start, after a point");
	zstdckpt_dec_close(d);
	for (int u = 0; u < 2; u++) {
		all_blobs_free(&a[u]);
		fx_close(&x[u]);
	}
	zstdckpt_spares_free(sp);
}
END_TEST

/* A byte flipped in the frame: -EIO from the build (the checksum at worst). */
START_TEST(test_blobs_damaged_frame)
{
	struct zstdckpt_sink sink = { NULL, NULL, NULL };
	struct zerr e = { 0 };
	struct fx x;
	int ret, n = 0;

	for (uint64_t at = 20; at < 400000; at += 19997) {
		fx_damaged(&x, "t3.zst", at, UINT64_MAX);
		ret = zstdckpt_build_blobs(x.src, x.f, 1, &sink, NULL, &e);
		ck_assert_msg(ret == -EIO, "flip at %llu: %d", (unsigned long long)at, ret);
		ck_assert_str_ne(e.msg, "");
		n++;
		fx_close(&x);
	}
	ck_assert_int_gt(n, 15);
}
END_TEST

static int stop_out(void *arg, const void *buf, size_t len)
{
	(void)arg, (void)buf, (void)len;
	return -ECANCELED;
}

static int stop_point(void *arg, uint64_t uoff, const void *blob, size_t len)
{
	(void)arg, (void)uoff, (void)blob, (void)len;
	return -EINTR;
}

/* A sink that stops the build: its value comes back. */
START_TEST(test_blobs_sink_stops)
{
	struct zstdckpt_sink s1 = { stop_out, NULL, NULL }, s2 = { NULL, stop_point, NULL };
	struct zerr e = { 0 };
	struct fx x;

	fx_open(&x, "t1.zst");
	ck_assert_int_eq(zstdckpt_build_blobs(x.src, x.f, 1, &s1, NULL, &e), -ECANCELED);
	ck_assert_int_eq(zstdckpt_build_blobs(x.src, x.f, 1, &s2, NULL, &e), -EINTR);
	ck_assert_int_eq(zstdckpt_build_blobs(x.src, x.f, 0, &s2, NULL, &e), -EINVAL);
	fx_close(&x);
}
END_TEST

/* Offsets in a blob (the format in zstdckpt.h). */
#define B_USIZE	 20
#define B_UOFF	 36
#define B_WLEN	 52
#define B_REP	 60
#define B_HUFLEN 72
#define B_FSELEN 74
#define B_NRUNS	 77
#define B_RUNLEN 81
#define B_KEPT	 85
#define B_ZLEN	 93
#define B_TABS	 97

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

static void set_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static size_t put_varint(uint8_t *q, uint32_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		q[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	q[n++] = (uint8_t)v;
	return n;
}

static void reseal(uint8_t *b, size_t len)
{
	set_le(b + len - 4, crc32(0, b, (uInt)(len - 4)), 4);
}

/* A copy of blob b with its payload replaced by raw[0..n) (nruns, runs_len, kept set), resealed. */
static uint8_t *forge_payload(const uint8_t *b, const uint8_t *raw, size_t n, uint32_t nruns,
			      uint32_t runs_len, uint64_t kept, size_t *len)
{
	size_t tabs = get_le(b + B_HUFLEN, 2) + b[B_FSELEN] + b[B_FSELEN + 1] + b[B_FSELEN + 2];
	size_t cap = B_TABS + tabs + ZSTD_compressBound(n) + 4, z;
	uint8_t *f = malloc(cap);

	ck_assert_ptr_nonnull(f);
	memcpy(f, b, B_TABS + tabs);
	z = ZSTD_compress(f + B_TABS + tabs, cap - B_TABS - tabs - 4, raw, n, 1);
	ck_assert(!ZSTD_isError(z));
	set_le(f + B_NRUNS, nruns, 4);
	set_le(f + B_RUNLEN, runs_len, 4);
	set_le(f + B_KEPT, kept, 8);
	set_le(f + B_ZLEN, z, 4);
	*len = B_TABS + tabs + z + 4;
	reseal(f, *len);
	return f;
}

static void expect_einval(const struct zstddec_frame *f, const uint8_t *b, size_t len,
			  const char *what)
{
	struct zstdckpt_dec *d = (struct zstdckpt_dec *)&d;
	struct zerr e = { 0 };
	int ret = zstdckpt_blob_open(f, b, len, &d, &e);

	ck_assert_msg(ret == -EINVAL, "%s: %d", what, ret);
	ck_assert_ptr_null(d);
	ck_assert_str_ne(e.msg, "");
}

/*
 * Damaged blobs: every byte flipped, every length short, another frame,
 * and forged ones with a valid CRC (runs outside the window, counts that
 * disagree, offsets beyond the window): all -EINVAL.
 */
START_TEST(test_blobs_damaged_blob)
{
	struct zstdckpt_blob_stats st;
	struct zstddec_frame f;
	struct fx x;
	struct bseen s;
	uint8_t *b, raw[16], *g;
	size_t len, glen, n;
	uint64_t wlen;

	fx_open(&x, "t3.zst");
	st = build_blobs(&x, 1u << 20, false, &s);
	ck_assert_uint_ge(st.points, 2);
	b = s.keep;
	len = s.keep_len;
	wlen = get_le(b + B_WLEN, 8);
	for (size_t i = 0; i < len; i++) {
		b[i] ^= 0x20;
		expect_einval(x.f, b, len, "flipped");
		b[i] ^= 0x20;
	}
	for (size_t k = 0; k < len; k += k < 200 ? 1 : 97)
		expect_einval(x.f, b, k, "short");
	f = *x.f;
	f.csize++;
	expect_einval(&f, b, len, "another frame's csize");
	f = *x.f;
	f.window *= 2;
	expect_einval(&f, b, len, "another frame's window");
	/* forged, with a good CRC */
	g = malloc(len);
	ck_assert_ptr_nonnull(g);
	memcpy(g, b, len);
	set_le(g + B_REP, 0, 4);
	reseal(g, len);
	expect_einval(x.f, g, len, "rep 0");
	set_le(g + B_REP, wlen + 1, 4);
	reseal(g, len);
	expect_einval(x.f, g, len, "rep past the window");
	memcpy(g, b, len);
	set_le(g + B_WLEN, wlen - 1, 8);
	reseal(g, len);
	expect_einval(x.f, g, len, "wlen");
	memcpy(g, b, len);
	set_le(g + B_KEPT, get_le(b + B_KEPT, 8) + 1, 8);
	reseal(g, len);
	expect_einval(x.f, g, len, "kept one more than the payload has");
	free(g);
	/* one run (varints: gap, len) and its byte */
	n = put_varint(raw, (uint32_t)wlen); /* a run one past the window */
	n += put_varint(raw + n, 1);
	raw[n] = 'x';
	g = forge_payload(b, raw, n + 1, 1, (uint32_t)n, 1, &glen);
	expect_einval(x.f, g, glen, "run past the window");
	free(g);
	n = put_varint(raw, (uint32_t)wlen - 1); /* the window's last byte: fine */
	n += put_varint(raw + n, 1);
	raw[n] = 'x';
	g = forge_payload(b, raw, n + 1, 1, (uint32_t)n, 1, &glen);
	{
		struct zstdckpt_dec *d;
		struct zerr e = { 0 };

		ck_assert_int_eq(zstdckpt_blob_open(x.f, g, glen, &d, &e), 0);
		zstdckpt_dec_close(d);
	}
	free(g);
	raw[n - 1] = 0; /* an empty run */
	g = forge_payload(b, raw, n + 1, 1, (uint32_t)n, 1, &glen);
	expect_einval(x.f, g, glen, "empty run");
	free(g);
	raw[n - 1] = 2; /* longer than the bytes there */
	g = forge_payload(b, raw, n + 1, 1, (uint32_t)n, 1, &glen);
	expect_einval(x.f, g, glen, "run longer than the bytes");
	free(g);
	raw[n - 1] = 0x81; /* a varint that runs into the bytes */
	g = forge_payload(b, raw, n + 1, 1, (uint32_t)n, 1, &glen);
	expect_einval(x.f, g, glen, "varint past the run table");
	free(g);
	memset(raw, 0xFF, 5); /* a varint of more than 32 bits */
	raw[5] = 0x01;
	raw[6] = 1;
	raw[7] = 'x';
	g = forge_payload(b, raw, 8, 1, 7, 1, &glen);
	expect_einval(x.f, g, glen, "varint too long");
	free(g);
	free(s.keep);
	fx_close(&x);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* --bench */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct bsum {
	uint64_t n, tables, window;
	struct zstdckpt first; /* the first checkpoint and its window */
	uint8_t *win;
};

static int bench_cb(void *arg, const struct zstdckpt *ck, const uint8_t *w1, size_t n1,
		    const uint8_t *w2, size_t n2)
{
	struct bsum *b = arg;

	(void)w1, (void)w2, (void)n1, (void)n2;
	b->n++;
	/* what a saved checkpoint needs beside the window: offsets, reps, lengths, tables */
	b->tables += 2 * 8 + 3 * 4 + 2 + 3 + ck->huf_len + ck->fse_len[0] + ck->fse_len[1] +
		     ck->fse_len[2];
	b->window += ck->wlen;
	if (!b->win) {
		b->first = *ck;
		b->win = malloc((size_t)ck->wlen);
		if (!b->win)
			return -ENOMEM;
		memcpy(b->win, w1, n1);
		memcpy(b->win + n1, w2, n2);
	}
	return 0;
}

static int bench(const char *path, uint64_t span)
{
	static uint8_t buf[1u << 20];
	double t[4][5] = { { 0 } };
	struct zstddec_index *idx;
	struct zerr e = { 0 };
	struct stat st;
	struct bsum bs = { 0 };
	struct zsrc *src = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || zsrc_local(fd, &src) || zsrc_stat(src, &st) ||
	    zstddec_index_read(src, (uint64_t)st.st_size, ZSTDDEC_WINDOW_LIBMAX, &idx, &e)) {
		fprintf(stderr, "%s: cannot walk: %s\n", path, e.msg);
		zsrc_put(src);
		return 1;
	}
	for (int r = 0; r < 5; r++) {
		for (int m = 0; m < 3; m++) {
			const struct zstddec_frame *f = &idx->frames[0];
			double t0 = now();
			ssize_t n = 0;

			if (m == 0) {
				struct zstddec_dec *d;

				if (zstddec_dec_open(f, &d, &e))
					return 1;
				while ((n = zstddec_dec_read(d, src, buf, sizeof(buf), &e)) > 0)
					;
				zstddec_dec_close(d);
			} else if (m == 1) {
				struct zstdckpt_dec *d;

				if (zstdckpt_dec_open(f, NULL, NULL, &d, &e))
					return 1;
				while ((n = zstdckpt_dec_read(d, src, buf, sizeof(buf), &e)) > 0)
					;
				zstdckpt_dec_close(d);
			} else {
				free(bs.win);
				memset(&bs, 0, sizeof(bs));
				n = zstdckpt_build(src, f, span, bench_cb, &bs, NULL, &e);
			}
			if (n < 0) {
				fprintf(stderr, "%s: %s\n", path, e.msg);
				return 1;
			}
			t[m][r] = now() - t0;
		}
	}
	/* resuming: open at the first checkpoint and read its first 4 KiB */
	for (int r = 0; r < 5 && bs.win; r++) {
		struct zstdckpt_dec *d;
		double t0 = now();

		if (zstdckpt_dec_open(&idx->frames[0], &bs.first, bs.win, &d, &e) ||
		    zstdckpt_dec_read(d, src, buf, 4096, &e) != 4096)
			return 1;
		zstdckpt_dec_close(d);
		t[3][r] = now() - t0;
	}
	for (int m = 0; m < 4; m++)
		qsort(t[m], 5, sizeof(double), cmp_double);
	printf("%s: %.1f MiB out, window %llu\n", path, (double)idx->usize / 1048576,
	       (unsigned long long)idx->frames[0].window);
	printf("  ZSTD_decompressStream (zstddec)  %7.0f MB/s\n",
	       (double)idx->usize / t[0][2] / 1e6);
	printf("  ZSTD_decompressBlock (zstdckpt)  %7.0f MB/s\n",
	       (double)idx->usize / t[1][2] / 1e6);
	printf("  build, span %llu               %7.0f MB/s\n", (unsigned long long)span,
	       (double)idx->usize / t[2][2] / 1e6);
	if (bs.n)
		printf("  %llu checkpoints: tables+reps+offsets %.0f B avg, window %.0f B avg\n",
		       (unsigned long long)bs.n, (double)bs.tables / (double)bs.n,
		       (double)bs.window / (double)bs.n);
	if (bs.win)
		printf("  resume: open + first 4 KiB      %7.2f ms\n", t[3][2] * 1e3);
	free(bs.win);
	zstddec_index_free(idx);
	zsrc_put(src);
	return 0;
}

/* ------------------------------------------------------------------------ */

static Suite *zstdckpt_suite(void)
{
	const struct zmtest_case t[] = {
		{ "resume_every_boundary", test_resume_every_boundary, 0 },
		{ "span", test_span, 0 },
		{ "reads", test_reads, 0 },
		{ "no_fcs", test_no_fcs, 0 },
		{ "bad_args", test_bad_args, 0 },
		{ "bad_checkpoint", test_bad_checkpoint, 0 },
		{ "damaged", test_damaged, 0 },
		{ "lying_size", test_lying_size, 0 },
		{ "crafted_modes", test_crafted_modes, 0 },
		{ "blobs_every_boundary", test_blobs_every_boundary, 0 },
		{ "blobs_span", test_blobs_span, 0 },
		{ "blobs_granules", test_blobs_granules, 0 },
		{ "blobs_damaged_frame", test_blobs_damaged_frame, 0 },
		{ "blobs_sink_stops", test_blobs_sink_stops, 0 },
		{ "blobs_damaged_blob", test_blobs_damaged_blob, 0 },
		{ "spares_bound", test_spares_bound, 0 },
		{ "spares_other_file", test_spares_other_file, 0 },
	};

	return zmtest_suite("check_zstdckpt", "zstdckpt", t, sizeof(t) / sizeof(t[0]), 600, 1,
			    NULL);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	SRunner *sr;
	int failed;

	if (argc >= 3 && strcmp(argv[1], "--bench") == 0)
		return bench(argv[2], argc > 3 ? strtoull(argv[3], NULL, 0) : 1u << 20);
	if ((size_t)snprintf(tmpdir, sizeof(tmpdir), "%s/check_zstdckpt.XXXXXX",
			     tmp ? tmp : "/tmp") >= sizeof(tmpdir) ||
	    !mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	gen_ok = gen_fixtures() == 0;
	if (!gen_ok)
		fprintf(stderr, "check_zstdckpt: could not generate fixtures in %s\n", tmpdir);
	sr = srunner_create(zstdckpt_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	zmtest_sh("/", "rm -rf '%s'", tmpdir);
	return failed != 0;
}
