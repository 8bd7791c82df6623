/* SPDX-License-Identifier: MIT */
/*
 * Checkpoints inside one xz Block and one zstd frame (issue 19): the set
 * and its verifying decoder (index/ckpt.c), and the reader resuming at
 * them: exact bytes at every offset, work bounded by a span instead of the
 * offset, and EIO with one log line when a span's checksum does not match.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "bcache.h"
#include "ckpt.h"
#include "pool.h"
#include "readahead.h"
#include "reader.h"
#include "reader_int.h"
#include "udec.h"
#include "zcrc.h"
#include "zmctx.h"
#include "zmtest.h"
#include "zmtest_store.h"

#define SIZE  (8u << 20)
#define SPAN  (1u << 20)
#define SLICE (128u << 10)

static char dir[PATH_MAX];
static unsigned char *text;

/* ---- the set and the verifying decoder, over an in-memory "decoder" ---- */

struct memdec {
	const unsigned char *p;
	uint64_t pos, end;
	size_t maxread; /* short reads, as a real decoder gives */
};

static ssize_t mem_read(void *dec, struct zsrc *src, void *buf, size_t len, struct zerr *err)
{
	struct memdec *m = dec;

	(void)src;
	(void)err;
	if (len > m->maxread)
		len = m->maxread;
	if (len > m->end - m->pos)
		len = (size_t)(m->end - m->pos);
	memcpy(buf, m->p + m->pos, len);
	m->pos += len;
	return (ssize_t)len;
}

static size_t mem_cost(const void *dec)
{
	(void)dec;
	return sizeof(struct memdec);
}

static void mem_close(void *dec)
{
	free(dec);
}

static const struct ckpt_inner_ops mem_ops = { mem_read, mem_cost, mem_close };

/* A set over text[0, size) with points at each of at[0..n), fed in odd pieces. */
static struct ckpt_set *build_set(uint64_t size, const uint64_t *at, size_t n)
{
	struct ckpt_build *b;
	struct ckpt_set *s;
	uint64_t pos = 0;

	ck_assert_int_eq(ckpt_build_new(size, &b), 0);
	for (size_t i = 0; i <= n; i++) {
		uint64_t to = i < n ? at[i] : size;

		while (pos < to) {
			size_t piece = (size_t)(to - pos < 77777 ? to - pos : 77777);

			ck_assert_int_eq(ckpt_build_out(b, text + pos, piece), 0);
			pos += piece;
		}
		if (i < n)
			ck_assert_int_eq(ckpt_build_point(b, at[i], "blob", 4), 0);
	}
	ck_assert_int_eq(ckpt_build_end(b, &s), 0);
	return s;
}

static struct ckpt_dec *open_at(const struct ckpt_set *s, size_t i, const unsigned char *data)
{
	struct memdec *m = malloc(sizeof(*m));
	struct ckpt_dec *d;

	ck_assert_ptr_nonnull(m);
	*m = (struct memdec){ data, s->pt[i].uoff, s->usize, 10000 };
	ck_assert_int_eq(ckpt_dec_new(s, i, m, &mem_ops, &d), 0);
	return d;
}

START_TEST(set_resumes_exact_at_every_point)
{
	static const uint64_t at[] = { 100000, 1000000, 1065536, 3000001 };
	struct ckpt_set *s = build_set(4000000, at, 4);
	unsigned char *buf = malloc(4000000);

	ck_assert_int_eq(ckpt_set_check(s), 0);
	ck_assert_uint_eq(s->n, 5);
	ck_assert_uint_eq(ckpt_find(s, 99999), 0);
	ck_assert_uint_eq(ckpt_find(s, 100000), 1);
	ck_assert_uint_eq(ckpt_find(s, 3999999), 4);
	for (size_t i = 0; i < s->n; i++) {
		struct ckpt_dec *d = open_at(s, i, text);
		uint64_t want = s->usize - s->pt[i].uoff, got = 0;
		ssize_t n;

		while ((n = ckpt_dec_read(d, NULL, buf + got, 123457, NULL)) > 0)
			got += (uint64_t)n;
		ck_assert_int_eq(n, 0);
		ck_assert_uint_eq(got, want);
		ck_assert(memcmp(buf, text + s->pt[i].uoff, want) == 0);
		ck_assert_uint_eq(ckpt_dec_tell(d), s->usize);
		ckpt_dec_close(d);
	}
	free(buf);
	ckpt_set_free(s);
}
END_TEST

/* A decoder that yields one wrong byte is caught before its piece is handed out, not earlier. */
START_TEST(set_catches_a_wrong_byte)
{
	static const uint64_t at[] = { 500000, 2000000 };
	/* pieces end at multiples of CKPT_PIECE and at points: the third after 2000000 */
	const uint64_t third = (2000000 / CKPT_PIECE + 3) * CKPT_PIECE;
	struct ckpt_set *s = build_set(3000000, at, 2);
	unsigned char *bad = malloc(3000000), *buf = malloc(3000000);
	struct zerr err = { 0 };
	struct ckpt_dec *d;

	memcpy(bad, text, 3000000);
	bad[third + 5] ^= 1;
	d = open_at(s, 2, bad);
	ck_assert_int_eq(ckpt_dec_read(d, NULL, buf, third - 2000000, &err), third - 2000000);
	ck_assert(memcmp(buf, text + 2000000, third - 2000000) == 0);
	ck_assert_int_eq(ckpt_dec_read(d, NULL, buf, 1, &err), -EIO);
	ck_assert_msg(strstr(err.msg, "checksum mismatch"), "%s", err.msg);
	ckpt_dec_close(d);
	free(bad);
	free(buf);
	ckpt_set_free(s);
}
END_TEST

START_TEST(set_check_refuses_forged_tables)
{
	static const uint64_t at[] = { 500000, 2000000 };
	struct ckpt_set *s = build_set(3000000, at, 2);
	struct ckpt_point keep = s->pt[1];

	ck_assert_int_eq(ckpt_set_check(s), 0);
	s->pt[1].uoff = 2000000; /* not ascending */
	ck_assert_int_eq(ckpt_set_check(s), -EINVAL);
	s->pt[1] = keep;
	s->pt[1].blob_len = 1000; /* past the blobs */
	ck_assert_int_eq(ckpt_set_check(s), -EINVAL);
	s->pt[1] = keep;
	s->ncrc--; /* a piece short */
	ck_assert_int_eq(ckpt_set_check(s), -EINVAL);
	s->ncrc++;
	s->pt[2].piece0++;
	ck_assert_int_eq(ckpt_set_check(s), -EINVAL);
	s->pt[2].piece0--;
	ck_assert_int_eq(ckpt_set_check(s), 0);
	ckpt_set_free(s);
}
END_TEST

START_TEST(build_refuses_points_out_of_order)
{
	struct ckpt_build *b;
	struct ckpt_set *s;

	ck_assert_int_eq(ckpt_build_new(1000, &b), 0);
	ck_assert_int_eq(ckpt_build_out(b, text, 100), 0);
	ck_assert_int_eq(ckpt_build_point(b, 50, "x", 1), -EPROTO);
	ck_assert_int_eq(ckpt_build_out(b, text, 900), 0);
	ck_assert_int_eq(ckpt_build_out(b, text, 1), -EIO); /* more than the entry holds */
	ck_assert_int_eq(ckpt_build_end(b, &s), 0);
	ckpt_set_free(s);
	ck_assert_int_eq(ckpt_build_new(1000, &b), 0);
	ck_assert_int_eq(ckpt_build_out(b, text, 999), 0);
	ck_assert_int_eq(ckpt_build_end(b, &s), -EIO); /* a byte short */
	ck_assert_ptr_null(s);
}
END_TEST

/*
 * A build that measures its entry (CKPT_USIZE_UNKNOWN) takes the size from
 * its output, pieces past any first guess included, and a point at the end
 * starts no span.
 */
START_TEST(build_of_unknown_size_takes_what_came)
{
	const size_t n = 5 * CKPT_PIECE + 123;
	struct ckpt_build *b;
	struct ckpt_set *s;
	unsigned char *buf = malloc(n);
	struct zerr e = { 0 };

	ck_assert_int_eq(ckpt_build_new(CKPT_USIZE_UNKNOWN, &b), 0);
	for (size_t at = 0; at < n; at += 1000)
		ck_assert_int_eq(ckpt_build_out(b, text + at, at + 1000 < n ? 1000 : n - at), 0);
	ck_assert_int_eq(ckpt_build_point(b, 2 * CKPT_PIECE, "x", 1), 0);
	ck_assert_int_eq(ckpt_build_point(b, n, "y", 1), 0);
	ck_assert_int_eq(ckpt_build_end(b, &s), 0);
	ck_assert_uint_eq(s->usize, n);
	ck_assert_uint_eq(s->n, 2);
	ck_assert_uint_eq(s->blob_len, 1);
	ck_assert_int_eq(ckpt_set_check(s), 0);
	for (size_t i = 0; i < s->n; i++) {
		struct ckpt_dec *d = open_at(s, i, text);
		size_t got = (size_t)s->pt[i].uoff;
		ssize_t r;

		while ((r = ckpt_dec_read(d, NULL, buf + got, n - got, &e)) > 0)
			got += (size_t)r;
		ck_assert_int_eq(r, 0);
		ck_assert_uint_eq(got, n);
		ck_assert(memcmp(buf + s->pt[i].uoff, text + s->pt[i].uoff, n - s->pt[i].uoff) ==
			  0);
		ckpt_dec_close(d);
	}
	ckpt_set_free(s);
	free(buf);
}
END_TEST

/* ---- the reader over real one-Block xz and one-frame zstd files ---- */

struct sunk {
	unsigned errors;
	char text[1024];
};

static void sink(void *user, enum zlog_level level, const char *name, const char *msg,
		 const struct zerr *why)
{
	struct sunk *k = user;

	(void)name;
	(void)why;
	if (level != ZLOG_ERROR)
		return;
	k->errors++;
	snprintf(k->text, sizeof(k->text), "%s", msg);
}

struct opened {
	struct zmctx *zm;
	struct reader *r;
	struct zsrc *src; /* the file again, for the passes */
	struct sunk log;
};

static void open_with(const char *name, const char *index_dir, bool ck_at_open, struct opened *o)
{
	struct reader_opts ro;
	char path[PATH_MAX];

	zmtest_join(path, sizeof(path), dir, name);
	memset(o, 0, sizeof(*o));
	ck_assert_int_eq(zmctx_new(64u << 20, &o->zm), 0);
	zmctx_set_log(o->zm, sink, &o->log, ZLOG_DEBUG);
	reader_opts_default(&ro, 64u << 20);
	ro.ck_span = SPAN;
	ro.slice = SLICE;
	ro.index_dir = index_dir ? zmtest_store(index_dir) : NULL;
	ro.ck_at_open = ck_at_open;
	ck_assert_int_eq(reader_open(path, o->zm, &ro, &o->r, NULL), 0);
	o->src = zmtest_src_open(path);
}

static void open_in(const char *name, const char *index_dir, struct opened *o)
{
	open_with(name, index_dir, true, o);
}

static void open_one(const char *name, struct opened *o)
{
	open_in(name, NULL, o);
}

static void close_one(struct opened *o)
{
	reader_close(o->r);
	zmctx_free(o->zm);
	zsrc_put(o->src);
}

static uint64_t decoded(struct opened *o)
{
	struct reader_info in;

	reader_get_info(o->r, &in);
	return in.decoded;
}

/* Reads at offsets spread over the file, each checked, each costing at most a span and two slices.
 */
static void random_reads(struct opened *o, int want_resumes)
{
	unsigned char buf[4096];
	struct reader_info in;
	uint32_t x = 99;

	for (int i = 0; i < 40; i++) {
		uint64_t off, d0;

		x = x * 1103515245u + 12345u;
		off = (uint64_t)(x >> 4) % (SIZE - sizeof(buf));
		d0 = decoded(o);
		ck_assert_int_eq(reader_pread(o->r, buf, sizeof(buf), off), sizeof(buf));
		ck_assert_msg(memcmp(buf, text + off, sizeof(buf)) == 0, "wrong bytes at %llu",
			      (unsigned long long)off);
		if (want_resumes)
			ck_assert_msg(decoded(o) - d0 <= 2 * SPAN,
				      "read at %llu decoded %llu bytes, more than a span",
				      (unsigned long long)off,
				      (unsigned long long)(decoded(o) - d0));
	}
	reader_get_info(o->r, &in);
	if (want_resumes)
		ck_assert_uint_gt(in.resumes, 0);
	ck_assert_uint_eq(o->log.errors, 0);
}

static void resumes_exact(const char *name)
{
	struct opened o;
	struct reader_info in;

	open_one(name, &o);
	reader_get_info(o.r, &in);
	ck_assert_uint_eq(in.ckpt_wanted, 1);
	ck_assert_int_eq(reader_build_checkpoints(o.r, o.src, NULL), 0);
	reader_get_info(o.r, &in);
	ck_assert_uint_ge(in.ckpts, SIZE / SPAN / 2); /* xz: LZMA2 chunks hold up to 2 MiB */
	ck_assert_uint_eq(in.ckpt_wanted, 0);
	random_reads(&o, 1);
	/* And the last byte, and a read across two spans. */
	{
		unsigned char buf[300000];

		ck_assert_int_eq(reader_pread(o.r, buf, 1, SIZE - 1), 1);
		ck_assert_int_eq(buf[0], text[SIZE - 1]);
		ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), 5 * SPAN - 1000), sizeof(buf));
		ck_assert(memcmp(buf, text + 5 * SPAN - 1000, sizeof(buf)) == 0);
	}
	close_one(&o);
}

START_TEST(xz_one_block_resumes_exact)
{
	resumes_exact("one.xz");
}
END_TEST

START_TEST(zstd_one_frame_resumes_exact)
{
	resumes_exact("one.zst");
}
END_TEST

/*
 * A frame that states no size (zstd from a pipe) is measured at open, and
 * that pass, which decodes and verifies it whole, builds its checkpoints
 * too: it is decoded once, not once to measure and once more for them.
 */
START_TEST(zstd_unsized_frame_is_decoded_once)
{
	struct reader_counters rc;
	struct reader_info in;
	struct opened o;

	open_one("nofcs.zst", &o);
	reader_get_info(o.r, &in);
	ck_assert_uint_eq(in.usize, SIZE);
	ck_assert_uint_eq(in.ckpt_wanted, 0);
	ck_assert_uint_ge(in.ckpts, SIZE / SPAN / 2);
	ck_assert_int_eq(reader_build_checkpoints(o.r, o.src, NULL), 0);
	reader_get_counters(o.zm, &rc);
	ck_assert_uint_eq(rc.decoded_bytes, SIZE);
	random_reads(&o, 1);
	close_one(&o);

	/* Without ck_at_open (noindex), measuring only measures: a later pass builds them. */
	open_with("nofcs.zst", NULL, false, &o);
	reader_get_info(o.r, &in);
	ck_assert_uint_eq(in.usize, SIZE);
	ck_assert_uint_eq(in.ckpts, 0);
	ck_assert_uint_eq(in.ckpt_wanted, 1);
	close_one(&o);
}
END_TEST

/*
 * Without checkpoints a far read decodes from the start (what the bound in
 * random_reads would catch), and reads are right too.
 */
START_TEST(without_checkpoints_reads_decode_from_the_start)
{
	struct opened o;
	unsigned char buf[4096];

	open_one("one.xz", &o);
	ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), SIZE - 8192), sizeof(buf));
	ck_assert(memcmp(buf, text + SIZE - 8192, sizeof(buf)) == 0);
	ck_assert_uint_ge(decoded(&o), SIZE - 2 * SLICE);
	random_reads(&o, 0);
	close_one(&o);
}
END_TEST

/*
 * The ★ of item 4: a span whose recorded checksum does not match what the
 * resumed decoder yields gives EIO and one log line, never its bytes.
 */
static void span_mismatch(const char *name, int damage_blob)
{
	struct opened o;
	struct ckpt_set *s;
	unsigned char buf[4096];
	uint64_t off;

	open_one(name, &o);
	ck_assert_int_eq(reader_build_checkpoints(o.r, o.src, NULL), 0);
	s = atomic_load(&o.r->ck[0]);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_ge(s->n, 4);
	off = s->pt[3].uoff + 3 * CKPT_PIECE + 17;
	if (damage_blob && ckpt_set_spilled(s)) {
		unsigned char c;
		uint64_t base;
		int fd = ckpt_set_spill_fd(s, &base);
		off_t at = (off_t)(base + s->pt[3].blob_off + s->pt[3].blob_len / 2);

		ck_assert_int_eq(pread(fd, &c, 1, at), 1);
		c ^= 0x55;
		ck_assert_int_eq(pwrite(fd, &c, 1, at), 1);
	} else if (damage_blob)
		s->blob[s->pt[3].blob_off + s->pt[3].blob_len / 2] ^= 0x55;
	else
		s->crc[s->pt[3].piece0 + 3] ^= 1;
	ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), -EIO);
	ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), -EIO);
	ck_assert_uint_eq(o.log.errors, 1);
	ck_assert_msg(damage_blob || strstr(o.log.text, "checksum mismatch"), "%s", o.log.text);
	close_one(&o);
}

START_TEST(xz_span_checksum_mismatch_is_eio)
{
	span_mismatch("one.xz", 0);
}
END_TEST

START_TEST(zstd_span_checksum_mismatch_is_eio)
{
	span_mismatch("one.zst", 0);
}
END_TEST

START_TEST(xz_damaged_checkpoint_is_eio)
{
	span_mismatch("one.xz", 1);
}
END_TEST

START_TEST(zstd_damaged_checkpoint_is_eio)
{
	span_mismatch("one.zst", 1);
}
END_TEST

/*
 * Sets saved in index_dir are used by the next reader of the same version,
 * loaded when a read first wants one, without a pass.
 */
static void saved_and_loaded(const char *name)
{
	char idx[PATH_MAX];
	struct opened o;
	struct reader_info in;

	zmtest_join(idx, sizeof(idx), dir, "index");
	mkdir(idx, 0700);
	open_in(name, idx, &o);
	ck_assert_int_eq(reader_build_checkpoints(o.r, o.src, NULL), 0);
	close_one(&o);
	open_in(name, idx, &o);
	reader_get_info(o.r, &in);
	ck_assert_uint_eq(in.ckpt_wanted, 1); /* not loaded at open */
	random_reads(&o, 1);
	reader_get_info(o.r, &in);
	ck_assert_uint_ge(in.ckpts, SIZE / SPAN / 2); /* xz: LZMA2 chunks hold up to 2 MiB */
	close_one(&o);
	zmtest_sh(idx, "rm -f *.zmc *.zmi");
	rmdir(idx);
}

START_TEST(xz_saved_sets_are_loaded)
{
	saved_and_loaded("one.xz");
}
END_TEST

START_TEST(zstd_saved_sets_are_loaded)
{
	saved_and_loaded("one.zst");
}
END_TEST

/* Built while measuring, saved at open, loaded with the saved sizes: blobs name the same frame. */
START_TEST(zstd_unsized_saved_sets_are_loaded)
{
	saved_and_loaded("nofcs.zst");
}
END_TEST

/* Waits up to a minute for a queued pass to publish the set. */
static void wait_for_checkpoints(struct opened *o)
{
	struct reader_info in = { 0 };

	for (int i = 0; i < 600; i++) {
		reader_get_info(o->r, &in);
		if (in.ckpts > 0)
			break;
		usleep(100000);
	}
	ck_assert_uint_gt(in.ckpts, 0);
}

/*
 * A read that must decode from the start of a wide entry queues a pass on
 * the pool: reads after it resume at checkpoints, with no indexer.
 */
START_TEST(a_far_read_queues_a_pass)
{
	struct opened o;
	struct pool *pool;
	unsigned char buf[4096];

	open_one("one.zst", &o);
	ck_assert_int_eq(pool_new(2, 64, &pool), 0);
	zmctx_set_pool(o.zm, pool);
	ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), SIZE / 2), sizeof(buf));
	wait_for_checkpoints(&o);
	random_reads(&o, 1);
	reader_close(o.r);
	o.r = NULL;
	pool_free(pool);
	close_one(&o);
}
END_TEST

static uint64_t ctx_decoded(struct opened *o)
{
	struct reader_counters c;

	reader_get_counters(o->zm, &c);
	return c.decoded_bytes;
}

/* Waits for o's set, closes its reader (which waits for any pass), and returns all it decoded. */
static uint64_t decoded_at_close(struct opened *o)
{
	wait_for_checkpoints(o);
	reader_close(o->r);
	o->r = NULL;
	return ctx_decoded(o);
}

/*
 * One decode per byte on a first touch (issue 32 item 3): a tail read into
 * a wide entry nobody builds decodes through the checkpoint build, so its
 * read to the end leaves the set, and no pass decodes the entry again.
 */
static void tail_builds_the_set_once(const char *name)
{
	struct opened o;
	struct pool *pool;
	unsigned char buf[4096];
	uint64_t off = SIZE - sizeof(buf), total;

	open_one(name, &o);
	ck_assert_int_eq(pool_new(2, 64, &pool), 0);
	zmctx_set_pool(o.zm, pool);
	ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), sizeof(buf));
	ck_assert(memcmp(buf, text + off, sizeof(buf)) == 0);
	total = decoded_at_close(&o);
	ck_assert_msg(total <= SIZE, "%s: a tail read on a fresh reader decoded %llu bytes of %u",
		      name, (unsigned long long)total, SIZE);
	pool_free(pool);
	close_one(&o);
}

START_TEST(xz_tail_builds_the_set_once)
{
	tail_builds_the_set_once("one.xz");
}
END_TEST

START_TEST(zstd_tail_builds_the_set_once)
{
	tail_builds_the_set_once("one.zst");
}
END_TEST

/*
 * A read in order through a wide entry queues the same pass at its end: a
 * full sequential read leaves checkpoints behind, with no indexer.
 */
START_TEST(a_sequential_read_queues_a_pass)
{
	char idx[PATH_MAX];
	struct opened o;
	struct pool *pool;
	static unsigned char buf[SLICE];

	zmtest_join(idx, sizeof(idx), dir, "index-seq");
	mkdir(idx, 0700);
	open_in("one.xz", idx, &o);
	ck_assert_int_eq(pool_new(2, 64, &pool), 0);
	zmctx_set_pool(o.zm, pool);
	for (uint64_t off = 0; off < SIZE; off += sizeof(buf)) {
		ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), sizeof(buf));
		ck_assert(memcmp(buf, text + off, sizeof(buf)) == 0);
	}
	wait_for_checkpoints(&o);
	reader_close(o.r);
	o.r = NULL;
	pool_free(pool);
	close_one(&o);
	/* Saved by the pass: a reader with a cold cache resumes from them. */
	open_in("one.xz", idx, &o);
	random_reads(&o, 1);
	close_one(&o);
	zmtest_sh(idx, "rm -f *.zmc *.zmi");
	rmdir(idx);
}
END_TEST

/*
 * A reader of name over a fresh index_dir (idx, under dir) that an
 * earlier reader's pass filled with its set, with a pool of 2 workers:
 * what span jobs need.  Returns the pool (pool_free it after reader_close).
 */
static struct pool *open_saved_with_pool(const char *name, const char *sub, char *idx, size_t len,
					 struct opened *o)
{
	struct pool *pool;

	zmtest_join(idx, len, dir, sub);
	mkdir(idx, 0700);
	open_in(name, idx, o);
	ck_assert_int_eq(reader_build_checkpoints(o->r, o->src, NULL), 0);
	close_one(o);
	open_in(name, idx, o);
	ck_assert_int_eq(pool_new(2, 64, &pool), 0);
	zmctx_set_pool(o->zm, pool);
	return pool;
}

/*
 * A sequential read of a one-Block xz or one-frame zstd file whose set is
 * saved decodes on all cores (issue 32 item 4): pool jobs resume at the
 * checkpoints ahead of the reader and decode their spans into the cache,
 * and the reader waits for those slices rather than decode them: each
 * byte is decoded about once (a job also decodes from its point to the
 * first slice boundary: at most a slice per point).
 */
static void sequential_read_decodes_spans_ahead(const char *name)
{
	char idx[PATH_MAX];
	struct opened o;
	struct pool *pool;
	struct reader_info in;
	static unsigned char buf[SLICE];
	uint64_t total;

	pool = open_saved_with_pool(name, "index-ahead", idx, sizeof(idx), &o);
	for (uint64_t off = 0; off < SIZE; off += sizeof(buf)) {
		ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), sizeof(buf));
		ck_assert_msg(memcmp(buf, text + off, sizeof(buf)) == 0, "wrong bytes at %llu",
			      (unsigned long long)off);
	}
	readahead_wait(o.r);
	reader_get_info(o.r, &in);
	total = ctx_decoded(&o);
	ck_assert_msg(in.resumes > 0 && in.ck_ahead >= SIZE / 4,
		      "no span decoded ahead from a checkpoint: %llu resumes, %llu bytes",
		      (unsigned long long)in.resumes, (unsigned long long)in.ck_ahead);
	ck_assert_msg(total <= SIZE + in.ckpts * SLICE, "decoded %llu bytes for %u: some twice",
		      (unsigned long long)total, SIZE);
	ck_assert_uint_eq(o.log.errors, 0);
	reader_close(o.r);
	o.r = NULL;
	pool_free(pool);
	close_one(&o);
	zmtest_sh(idx, "rm -f *.zmc *.zmi");
	rmdir(idx);
}

/*
 * head: one read of 128 KiB at offset 0, then close; on a mount, the
 * kernel sends it as reads that continue one another, to 416 KiB.  Span
 * jobs queued on those (16 MiB each by default) would decode for nobody:
 * they wait for the stream to pass CKAHEAD_FROM.
 */
static void head_decodes_no_span_ahead(const char *name)
{
	char idx[PATH_MAX];
	struct opened o;
	struct pool *pool;
	struct reader_info in;
	static unsigned char buf[128u << 10], big[256u << 10];

	pool = open_saved_with_pool(name, "index-head", idx, sizeof(idx), &o);
	ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), 0), sizeof(buf));
	ck_assert(memcmp(buf, text, sizeof(buf)) == 0);
	readahead_wait(o.r);
	reader_get_info(o.r, &in);
	ck_assert_msg(in.ckpts >= 2, "no checkpoint set: %llu points",
		      (unsigned long long)in.ckpts);
	ck_assert_msg(in.ck_ahead == 0, "a head read of 128 KiB had span jobs decode %llu bytes",
		      (unsigned long long)in.ck_ahead);
	/* as the kernel sends it: 32 KiB, then 128 and 256 KiB that continue it */
	ck_assert_int_eq(reader_pread(o.r, buf, 32u << 10, 0), 32u << 10);
	ck_assert_int_eq(reader_pread(o.r, buf, 128u << 10, 32u << 10), 128u << 10);
	ck_assert_int_eq(reader_pread(o.r, big, sizeof(big), 160u << 10), sizeof(big));
	ck_assert(memcmp(big, text + (160u << 10), sizeof(big)) == 0);
	readahead_wait(o.r);
	reader_get_info(o.r, &in);
	ck_assert_msg(in.ck_ahead == 0, "head's reads on a mount had span jobs decode %llu bytes",
		      (unsigned long long)in.ck_ahead);
	ck_assert_uint_eq(o.log.errors, 0);
	reader_close(o.r);
	o.r = NULL;
	pool_free(pool);
	close_one(&o);
	zmtest_sh(idx, "rm -f *.zmc *.zmi");
	rmdir(idx);
}

START_TEST(xz_head_decodes_no_span_ahead)
{
	head_decodes_no_span_ahead("one.xz");
}
END_TEST

START_TEST(zstd_head_decodes_no_span_ahead)
{
	head_decodes_no_span_ahead("one.zst");
}
END_TEST

/* One of four threads reading a file in order, as the kernel's parallel read-ahead requests do. */
struct seq_job {
	struct reader *r;
	unsigned t, bad;
};

static void *seq_reader(void *arg)
{
	struct seq_job *j = arg;
	static _Thread_local unsigned char buf[SLICE / 2];

	for (uint64_t off = j->t * sizeof(buf); off < SIZE; off += 4 * sizeof(buf))
		if (reader_pread(j->r, buf, sizeof(buf), off) != (ssize_t)sizeof(buf) ||
		    memcmp(buf, text + off, sizeof(buf)) != 0)
			j->bad++;
	return NULL;
}

/*
 * The same from four threads at once, several times, with read-ahead
 * room for a few spans: readers wait for the jobs' slices or decode the
 * rest, every byte exact, no error, no hang.
 */
START_TEST(xz_threads_reading_in_order_beside_span_jobs_are_exact)
{
	char idx[PATH_MAX];
	struct opened o;
	struct pool *pool;
	struct reader_opts ro;
	struct reader_info in;
	char path[PATH_MAX];

	zmtest_join(idx, sizeof(idx), dir, "index-ahead-mt");
	mkdir(idx, 0700);
	open_in("one.xz", idx, &o);
	ck_assert_int_eq(reader_build_checkpoints(o.r, o.src, NULL), 0);
	close_one(&o);
	zmtest_join(path, sizeof(path), dir, "one.xz");
	for (int round = 0; round < 3; round++) {
		struct seq_job j[4];
		pthread_t th[4];

		memset(&o, 0, sizeof(o));
		ck_assert_int_eq(zmctx_new(3 * SIZE, &o.zm), 0);
		zmctx_set_log(o.zm, sink, &o.log, ZLOG_DEBUG);
		reader_opts_default(&ro, 3 * SIZE);
		ro.ck_span = SPAN;
		ro.slice = SLICE;
		ro.index_dir = zmtest_store(idx);
		ck_assert_int_eq(reader_open(path, o.zm, &ro, &o.r, NULL), 0);
		ck_assert_int_eq(pool_new(2, 64, &pool), 0);
		zmctx_set_pool(o.zm, pool);
		for (unsigned t = 0; t < 4; t++) {
			j[t] = (struct seq_job){ o.r, t, 0 };
			ck_assert_int_eq(pthread_create(&th[t], NULL, seq_reader, &j[t]), 0);
		}
		for (unsigned t = 0; t < 4; t++) {
			pthread_join(th[t], NULL);
			ck_assert_uint_eq(j[t].bad, 0);
		}
		readahead_wait(o.r);
		ck_assert_uint_eq(o.log.errors, 0);
		reader_get_info(o.r, &in);
		ck_assert_uint_gt(in.ck_ahead, 0);
		reader_close(o.r);
		pool_free(pool);
		zmctx_free(o.zm);
	}
	zmtest_sh(idx, "rm -f *.zmc *.zmi");
	rmdir(idx);
}
END_TEST

START_TEST(xz_sequential_read_decodes_spans_ahead)
{
	sequential_read_decodes_spans_ahead("one.xz");
}
END_TEST

START_TEST(zstd_sequential_read_decodes_spans_ahead)
{
	sequential_read_decodes_spans_ahead("one.zst");
}
END_TEST

/*
 * One decode per byte: a pass (the background indexer's, or one queued
 * earlier) that finds a reader streaming a wide entry from its start
 * leaves that entry to it, rather than decode the same bytes on a second
 * core beside it.  The reader's own decode builds the set (udec_open).
 */
static void pass_leaves_streamed_entry(const char *name)
{
	struct opened o;
	struct pool *pool;
	struct reader_info in;
	static unsigned char buf[SLICE];
	uint64_t before;

	open_one(name, &o);
	ck_assert_int_eq(pool_new(2, 64, &pool), 0);
	zmctx_set_pool(o.zm, pool);
	for (uint64_t off = 0; off < 4 * SLICE; off += sizeof(buf)) {
		ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), sizeof(buf));
		ck_assert(memcmp(buf, text + off, sizeof(buf)) == 0);
	}
	readahead_wait(o.r);
	before = ctx_decoded(&o);
	ck_assert_int_eq(reader_build_checkpoints(o.r, o.src, NULL), 0);
	ck_assert_msg(ctx_decoded(&o) == before,
		      "a pass beside a reader streaming the entry decoded %llu more bytes",
		      (unsigned long long)(ctx_decoded(&o) - before));
	/*
	 * Left to the reader; or already built by the reader's own decode
	 * (seen twice on a loaded machine: ckpt_wanted 0, nothing decoded
	 * by the pass; most likely read-ahead had taken that decoder to the
	 * entry's end first).  Done with no set would be the bug.
	 */
	reader_get_info(o.r, &in);
	ck_assert_msg(in.ckpt_wanted == 1 || in.ckpts > 0,
		      "the pass neither left the entry nor found its set: wanted %llu, %llu points",
		      (unsigned long long)in.ckpt_wanted, (unsigned long long)in.ckpts);
	/* The reader goes on to the end, and its end publishes the set. */
	for (uint64_t off = 4 * SLICE; off < SIZE; off += sizeof(buf)) {
		ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), sizeof(buf));
		ck_assert(memcmp(buf, text + off, sizeof(buf)) == 0);
	}
	wait_for_checkpoints(&o);
	readahead_wait(o.r);
	/* Every byte decoded once, by the reader, whose decode built the set (issue 32). */
	ck_assert_uint_eq(ctx_decoded(&o), (uint64_t)SIZE);
	random_reads(&o, 0); /* all cached: the file fits */
	reader_close(o.r);
	o.r = NULL;
	pool_free(pool);
	close_one(&o);
}

/*
 * A stream left inside an entry (a head of the file) is no reader once a
 * far read starts another: the pass over the entry runs then, so the far
 * reads after it resume at checkpoints.
 */
START_TEST(a_pass_runs_once_a_partial_read_is_left)
{
	struct opened o;
	struct pool *pool;
	struct reader_info in;
	static unsigned char buf[SLICE];

	open_one("one.zst", &o);
	ck_assert_int_eq(pool_new(2, 64, &pool), 0);
	zmctx_set_pool(o.zm, pool);
	for (uint64_t off = 0; off < 4 * SLICE; off += sizeof(buf))
		ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), sizeof(buf));
	ck_assert_int_eq(reader_pread(o.r, buf, 4096, SIZE / 2), 4096);
	ck_assert(memcmp(buf, text + SIZE / 2, 4096) == 0);
	readahead_wait(o.r);
	ck_assert_int_eq(reader_build_checkpoints(o.r, o.src, NULL), 0);
	reader_get_info(o.r, &in);
	ck_assert_msg(in.ckpt_wanted == 0, "the pass left the entry to a stream nobody reads");
	ck_assert_uint_gt(in.ckpts, 0);
	reader_close(o.r);
	o.r = NULL;
	pool_free(pool);
	close_one(&o);
}
END_TEST

/*
 * The other order: a pass ran over a wide entry when a reader started it
 * (the reader took the plain decoder), and gave the entry up to that
 * reader (reader_ck_yield).  The reader's decoder, still near the start,
 * is restarted through the build, so its read through leaves the set and
 * no pass runs after it: what it had decoded is decoded twice, not the
 * whole entry.
 */
static void yielded_entry_built_by_reader(const char *name)
{
	struct opened o;
	struct pool *pool;
	static unsigned char buf[SLICE];
	uint64_t before, decoded;

	open_one(name, &o);
	atomic_store(&o.r->ck_state[0], CK_BUSY); /* a pass runs on it */
	for (uint64_t off = 0; off < 2 * SLICE; off += sizeof(buf))
		ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), sizeof(buf));
	before = ctx_decoded(&o); /* no pool yet, so no read-ahead: these two slices */
	atomic_store(&o.r->ck_state[0], CK_NONE); /* and gave the entry up to the reader */
	ck_assert_int_eq(pool_new(2, 64, &pool), 0);
	zmctx_set_pool(o.zm, pool);
	for (uint64_t off = 2 * SLICE; off < SIZE; off += sizeof(buf)) {
		ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), sizeof(buf));
		ck_assert(memcmp(buf, text + off, sizeof(buf)) == 0);
	}
	decoded = decoded_at_close(&o);
	ck_assert_msg(before < SIZE / 2 && decoded <= (uint64_t)SIZE + before,
		      "%s: a read through after a pass gave it up decoded %llu bytes of %u "
		      "(%llu before it did)",
		      name, (unsigned long long)decoded, SIZE, (unsigned long long)before);
	pool_free(pool);
	close_one(&o);
}

START_TEST(xz_yielded_entry_is_built_by_its_reader)
{
	yielded_entry_built_by_reader("one.xz");
}
END_TEST

START_TEST(zstd_yielded_entry_is_built_by_its_reader)
{
	yielded_entry_built_by_reader("one.zst");
}
END_TEST

START_TEST(xz_pass_leaves_an_entry_a_reader_streams)
{
	pass_leaves_streamed_entry("one.xz");
}
END_TEST

START_TEST(zstd_pass_leaves_an_entry_a_reader_streams)
{
	pass_leaves_streamed_entry("one.zst");
}
END_TEST

/*
 * Per read at off in entry 0, what a read resumed from the set decodes:
 * from the last point at or before the start of off's slice (units are
 * slices) to the end of the slice after it (a read may cross into it).
 */
static uint64_t one_resume(const struct ckpt_set *s, uint64_t off)
{
	uint64_t slice = off / SLICE * SLICE;

	return slice + 2 * SLICE - s->pt[ckpt_find(s, slice)].uoff;
}

/* Random reads, each decoding no more than one_resume allows. */
static void reads_within_one_resume(struct opened *o, const struct ckpt_set *s)
{
	unsigned char buf[4096];
	uint32_t x = 7;

	for (int i = 0; i < 24; i++) {
		uint64_t off, d0 = decoded(o);

		x = x * 1103515245u + 12345u;
		off = (uint64_t)(x >> 4) % (SIZE - sizeof(buf));
		ck_assert_int_eq(reader_pread(o->r, buf, sizeof(buf), off), sizeof(buf));
		ck_assert(memcmp(buf, text + off, sizeof(buf)) == 0);
		ck_assert_msg(
			decoded(o) - d0 <= one_resume(s, off),
			"read at %llu decoded %llu bytes, more than from its checkpoint (%llu)",
			(unsigned long long)off, (unsigned long long)(decoded(o) - d0),
			(unsigned long long)one_resume(s, off));
	}
}

/*
 * A set whose blobs take more than the per-archive map limit, cache_size/4,
 * is kept all the same (issue 32 item 2): its table stays, its windows go
 * to a spill file and come back through the cache, one unit each, when a
 * read resumes there.  Here the limit is 4 KiB, as cache_size=16K would
 * make it.
 */
static void open_spilling(const char *name, struct opened *o)
{
	char spill[PATH_MAX];

	zmtest_join(spill, sizeof(spill), dir, "spill");
	ck_assert(mkdir(spill, 0700) == 0 || errno == EEXIST);
	open_in(name, spill, o);
}

static void kept_over_the_map_limit(const char *name)
{
	struct opened o;
	struct reader_info in;
	struct zerr why = { 0 };
	const struct ckpt_set *s;
	struct bcache_stats st;

	open_spilling(name, &o);
	o.r->opts.index_max = 4096;
	ck_assert_int_eq(reader_build_checkpoints(o.r, o.src, &why), 0);
	s = reader_ck_set(o.r, 0);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_gt(s->blob_len, 4096); /* the whole set was over the limit */
	reader_get_info(o.r, &in);
	ck_assert_uint_le(in.ckpt_bytes, 4096);
	reads_within_one_resume(&o, s);
	ck_assert_uint_gt(atomic_load(&o.r->ck_windows), 0);
	bcache_stats(o.r->cache, &st);
	ck_assert_uint_le(st.peak, st.budget + (st.budget >> 3));
	ck_assert_uint_eq(o.log.errors, 0);
	close_one(&o);
}

START_TEST(xz_sets_over_the_map_limit_are_kept)
{
	kept_over_the_map_limit("one.xz");
}
END_TEST

START_TEST(zstd_sets_over_the_map_limit_are_kept)
{
	kept_over_the_map_limit("one.zst");
}
END_TEST

/*
 * With no local index_dir there is no place on disk for the windows (never
 * /tmp: tmpfs is memory outside cache_size), so a set over the map limit
 * is dropped, with its reason, and the reader still serves exact bytes.
 */
START_TEST(sets_without_a_local_index_dir_stay_within_the_map_limit)
{
	struct opened o;
	struct zerr why = { 0 };

	open_one("one.xz", &o);
	o.r->opts.index_max = 4096;
	ck_assert_int_eq(reader_build_checkpoints(o.r, o.src, &why), -ENOTSUP);
	ck_assert_ptr_null(reader_ck_set(o.r, 0));
	close_one(&o);
}
END_TEST

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/*
 * Every spilled set of a context shares one file: a descriptor per set ran
 * a daemon limited to 256 descriptors out of them after 113 one-Block
 * files were read, one at a time, and every open failed after that.  Here
 * eight readers on one context each build a set that spills, and the
 * process gains at most one descriptor; their far reads are exact.
 */
START_TEST(spilled_sets_share_one_descriptor)
{
	enum { N = 8 };
	static const char *names[] = { "one.xz", "one.zst" };
	struct reader *r[N];
	struct zmctx *zm;
	struct reader_opts ro;
	struct sunk log = { 0 };
	char path[PATH_MAX], spill[PATH_MAX];
	unsigned char buf[4096];
	int before;

	zmtest_join(spill, sizeof(spill), dir, "spill");
	ck_assert(mkdir(spill, 0700) == 0 || errno == EEXIST);
	ck_assert_int_eq(zmctx_new(64u << 20, &zm), 0);
	zmctx_set_log(zm, sink, &log, ZLOG_DEBUG);
	reader_opts_default(&ro, 64u << 20);
	ro.ck_span = SPAN;
	ro.slice = SLICE;
	ro.index_dir = zmtest_store(spill);
	for (int i = 0; i < N; i++) {
		zmtest_join(path, sizeof(path), dir, names[i % 2]);
		ck_assert_int_eq(reader_open(path, zm, &ro, &r[i], NULL), 0);
	}
	before = open_fds();
	for (int i = 0; i < N; i++) {
		struct zsrc *src;

		zmtest_join(path, sizeof(path), dir, names[i % 2]);
		src = zmtest_src_open(path);
		ck_assert_int_eq(reader_build_checkpoints(r[i], src, NULL), 0);
		zsrc_put(src);
		ck_assert(ckpt_set_spilled(reader_ck_set(r[i], 0)));
	}
	ck_assert_msg(open_fds() <= before + 1, "%d sets spilled hold %d descriptors", N,
		      open_fds() - before);
	for (int i = 0; i < N; i++) {
		uint64_t off = SIZE - 3 * sizeof(buf) - (uint64_t)i * 4099;

		ck_assert_int_eq(reader_pread(r[i], buf, sizeof(buf), off), sizeof(buf));
		ck_assert(memcmp(buf, text + off, sizeof(buf)) == 0);
		reader_close(r[i]);
	}
	zmctx_free(zm);
	ck_assert_uint_eq(log.errors, 0);
}
END_TEST

/*
 * What stays in memory per checkpoint of a spilled set is README's Memory
 * term: CKPT_RESIDENT (a point, the CRC32 of its blob and of one partial
 * piece; a CRC32 per 64 KiB piece of the entry), plus the set's own
 * struct and its spill's (under 128 bytes), never its windows.
 */
START_TEST(resident_bytes_per_checkpoint)
{
	static const char *names[] = { "one.xz", "one.zst" };

	for (size_t f = 0; f < 2; f++) {
		struct opened o;
		struct reader_info in;
		const struct ckpt_set *s;

		open_spilling(names[f], &o);
		ck_assert_int_eq(reader_build_checkpoints(o.r, o.src, NULL), 0);
		s = reader_ck_set(o.r, 0);
		ck_assert_ptr_nonnull(s);
		reader_get_info(o.r, &in);
		ck_assert_msg(in.ckpt_bytes <= 128 + CKPT_RESIDENT(s->n, s->usize),
			      "%s: %zu checkpoints hold %llu bytes, more than %zu", names[f],
			      s->n - 1, (unsigned long long)in.ckpt_bytes,
			      (size_t)(128 + CKPT_RESIDENT(s->n, s->usize)));
		close_one(&o);
	}
}
END_TEST

/*
 * A source whose reads wait at a gate once open: the background pass
 * stuck inside its own load of the saved sets (idxfile_identify reads it),
 * as an indexer busy elsewhere or on a slow disk leaves it.
 */
struct gated {
	struct zsrc base;
	struct zsrc *in;
	pthread_mutex_t m;
	pthread_cond_t c;
	bool shut, open, entered;
};

static ssize_t gated_pread(struct zsrc *z, void *buf, size_t len, uint64_t off)
{
	struct gated *g = (struct gated *)z;

	pthread_mutex_lock(&g->m);
	g->entered = true;
	pthread_cond_broadcast(&g->c);
	while (g->shut && !g->open)
		pthread_cond_wait(&g->c, &g->m);
	pthread_mutex_unlock(&g->m);
	return g->in->ops->pread(g->in, buf, len, off);
}

static int gated_stat(struct zsrc *z, struct stat *st)
{
	struct gated *g = (struct gated *)z;

	return g->in->ops->stat(g->in, st);
}

static void gated_tag(struct zsrc *z, char buf[ZSRC_TAG_MAX])
{
	struct gated *g = (struct gated *)z;

	zsrc_tag(g->in, buf);
}

static void gated_free(struct zsrc *z)
{
	(void)z; /* on the test's stack */
}

static const struct zsrc_ops gated_ops = {
	.pread = gated_pread, .stat = gated_stat, .tag = gated_tag, .free = gated_free
};

static void *pass_thread(void *arg)
{
	struct opened *o = arg;
	struct gated *g = (struct gated *)o->src;

	reader_build_checkpoints(o->r, &g->base, NULL);
	return NULL;
}

/*
 * Starts a pass over o's reader on thread *t through g, a source over
 * name held shut at its first read, and returns once the pass is there.
 * Returns o's own source (gated_pass_end puts it back).
 */
static struct zsrc *gated_pass_start(struct opened *o, struct gated *g, const char *name,
				     pthread_t *t)
{
	char path[PATH_MAX];
	struct zsrc *plain = o->src;

	zmtest_join(path, sizeof(path), dir, name);
	zsrc_init(&g->base, &gated_ops);
	g->in = zmtest_src_open(path);
	pthread_mutex_init(&g->m, NULL);
	pthread_cond_init(&g->c, NULL);
	o->src = &g->base;
	ck_assert_int_eq(pthread_create(t, NULL, pass_thread, o), 0);
	pthread_mutex_lock(&g->m);
	while (!g->entered)
		pthread_cond_wait(&g->c, &g->m);
	pthread_mutex_unlock(&g->m);
	return plain;
}

/* Lets the pass of gated_pass_start go on, waits for its end, and gives o its source back. */
static void gated_pass_end(struct opened *o, struct gated *g, struct zsrc *plain, pthread_t t)
{
	pthread_mutex_lock(&g->m);
	g->open = true;
	pthread_cond_broadcast(&g->c);
	pthread_mutex_unlock(&g->m);
	pthread_join(t, NULL);
	o->src = plain;
	zsrc_put(g->in);
	pthread_mutex_destroy(&g->m);
	pthread_cond_destroy(&g->c);
}

/*
 * Issue 32 item 1: right after a mount with saved sets, the background
 * pass may be inside its load of them, stuck behind other work; a far read
 * then loads the set itself and decodes from its checkpoint, never from
 * the entry's start.
 */
static void far_read_beside_a_stuck_load(const char *name)
{
	char idx[PATH_MAX];
	struct opened o;
	struct gated g = { .shut = true };
	struct zsrc *plain;
	unsigned char buf[4096];
	const struct ckpt_set *s;
	pthread_t t;
	uint64_t d0, off = SIZE - SIZE / 5;

	zmtest_join(idx, sizeof(idx), dir, "index");
	mkdir(idx, 0700);
	open_in(name, idx, &o);
	ck_assert_int_eq(reader_build_checkpoints(o.r, o.src, NULL), 0);
	close_one(&o);
	open_in(name, idx, &o);
	plain = gated_pass_start(&o, &g, name, &t);
	d0 = decoded(&o);
	ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), sizeof(buf));
	ck_assert(memcmp(buf, text + off, sizeof(buf)) == 0);
	s = reader_ck_set(o.r, 0);
	ck_assert_msg(s && decoded(&o) - d0 <= one_resume(s, off),
		      "%s: a far read beside a pass stuck in its load decoded %llu bytes (a "
		      "span is %u)",
		      name, (unsigned long long)(decoded(&o) - d0), SPAN);
	gated_pass_end(&o, &g, plain, t);
	close_one(&o);
	zmtest_sh(idx, "rm -f *.zmc *.zmi");
	rmdir(idx);
}

struct tail_job {
	struct opened *o;
	uint64_t off;
	unsigned char buf[4096];
	ssize_t got;
	atomic_bool done;
};

static void *tail_thread(void *arg)
{
	struct tail_job *t = arg;

	t->got = reader_pread(t->o->r, t->buf, sizeof(t->buf), t->off);
	atomic_store(&t->done, true);
	return NULL;
}

/*
 * A tail read that comes while a pass builds the entry's set (right after
 * a mount, beside the indexer) waits for that pass and resumes at its last
 * checkpoint, rather than decode the entry from its start beside it.  The
 * pass is held at its first read until the tail read has had time to
 * start its own decode.
 */
static void tail_beside_a_pass(const char *name)
{
	struct opened o;
	struct gated g = { .shut = true };
	struct zsrc *plain;
	struct tail_job tj = { .o = &o, .off = SIZE - sizeof(tj.buf) };
	pthread_t t, tt;
	uint64_t total;

	open_one(name, &o);
	plain = gated_pass_start(&o, &g, name, &t);
	ck_assert_int_eq(atomic_load(&o.r->ck_state[0]), CK_BUSY);
	ck_assert_int_eq(pthread_create(&tt, NULL, tail_thread, &tj), 0);
	usleep(300000);
	gated_pass_end(&o, &g, plain, t);
	pthread_join(tt, NULL);
	ck_assert_int_eq(tj.got, sizeof(tj.buf));
	ck_assert(memcmp(tj.buf, text + SIZE - sizeof(tj.buf), sizeof(tj.buf)) == 0);
	total = ctx_decoded(&o);
	/* an xz point is the start of the LZMA2 chunk (at most 2 MiB) that holds its multiple of
	 * the span */
	ck_assert_msg(total <= SIZE + SPAN + SLICE + (strstr(name, ".xz") ? 2u << 20 : 0),
		      "%s: a tail read beside a pass decoded, with the pass, %llu bytes of %u",
		      name, (unsigned long long)total, SIZE);
	close_one(&o);
}

/*
 * The other side of that rule: a read a quarter into the entry, beside a
 * pass that has not started (held at its first read), would wait for the
 * whole entry; it decodes its own way there instead, and returns while
 * the pass is still held.
 */
static void near_read_beside_a_pass(const char *name)
{
	struct opened o;
	struct gated g = { .shut = true };
	struct zsrc *plain;
	struct tail_job tj = { .o = &o, .off = SIZE / 4 };
	pthread_t t, tt;
	bool done = false;

	open_one(name, &o);
	plain = gated_pass_start(&o, &g, name, &t);
	ck_assert_int_eq(pthread_create(&tt, NULL, tail_thread, &tj), 0);
	for (int i = 0; i < 600 && !(done = atomic_load(&tj.done)); i++)
		usleep(50000);
	gated_pass_end(&o, &g, plain, t);
	pthread_join(tt, NULL);
	ck_assert_msg(done, "%s: a read a quarter in waited for a pass that had not started", name);
	ck_assert_int_eq(tj.got, sizeof(tj.buf));
	ck_assert(memcmp(tj.buf, text + SIZE / 4, sizeof(tj.buf)) == 0);
	close_one(&o);
}

START_TEST(xz_near_read_beside_a_pass_does_not_wait)
{
	near_read_beside_a_pass("one.xz");
}
END_TEST

START_TEST(zstd_near_read_beside_a_pass_does_not_wait)
{
	near_read_beside_a_pass("one.zst");
}
END_TEST

START_TEST(xz_tail_beside_a_pass_waits_for_it)
{
	tail_beside_a_pass("one.xz");
}
END_TEST

START_TEST(zstd_tail_beside_a_pass_waits_for_it)
{
	tail_beside_a_pass("one.zst");
}
END_TEST

START_TEST(xz_far_read_beside_a_stuck_load)
{
	far_read_beside_a_stuck_load("one.xz");
}
END_TEST

START_TEST(zstd_far_read_beside_a_stuck_load)
{
	far_read_beside_a_stuck_load("one.zst");
}
END_TEST

/*
 * A pass over another version of the file (here: another file) builds
 * nothing: a set of other bytes would resume into wrong ones.
 */
START_TEST(a_pass_over_another_version_builds_nothing)
{
	struct opened o;
	struct reader_info in;
	char path[PATH_MAX];
	struct zsrc *other;

	open_one("one.zst", &o);
	zmtest_join(path, sizeof(path), dir, "one.xz");
	other = zmtest_src_open(path);
	ck_assert_int_eq(reader_build_checkpoints(o.r, other, NULL), -ESTALE);
	zsrc_put(other);
	reader_get_info(o.r, &in);
	ck_assert_uint_eq(in.ckpts, 0);
	ck_assert_uint_eq(in.ckpt_wanted, 1);
	close_one(&o);
}
END_TEST

/*
 * Medium entries (1 MiB Blocks and frames here: over two slices, at most
 * two spans): cached whole, but the fill that verified one whole records
 * the CRC32 of its pieces, saved at close.  The next reader's far reads
 * (a header, a last record) decode only up to their slice, checked piece
 * by piece; a sequential read still takes the whole unit.
 */
#define MED (1u << 20)

/* A reader of name in a fresh index_dir idx, after a reader that read it all and saved. */
static void open_medium(const char *name, char *idx, size_t len, struct opened *o)
{
	static unsigned char all[SIZE];
	struct reader_info in;

	zmtest_join(idx, len, dir, "index-med");
	mkdir(idx, 0700);
	open_in(name, idx, o);
	reader_get_info(o->r, &in);
	ck_assert_uint_eq(in.chunks, SIZE / MED);
	ck_assert_uint_eq(in.ckpt_wanted, 0); /* no pass: the reads make them */
	ck_assert_int_eq(reader_pread(o->r, all, SIZE, 0), SIZE);
	ck_assert(memcmp(all, text, SIZE) == 0);
	reader_get_info(o->r, &in);
	ck_assert_uint_gt(in.ckpt_bytes, 0);
	close_one(o);
	open_in(name, idx, o);
}

static void close_medium(struct opened *o, const char *idx)
{
	close_one(o);
	zmtest_sh(idx, "rm -f *.zmc *.zmi");
	rmdir(idx);
}

static void medium_far_reads(const char *name)
{
	struct pool *pool;
	char idx[PATH_MAX];
	unsigned char buf[4096];
	struct reader_info in;
	struct opened o;

	open_medium(name, idx, sizeof(idx), &o);
	/*
	 * With read-ahead's pool, as in a mount: each read below is a stream
	 * of one small read, which must not make the next, a MiB away, look
	 * sequential (readahead_near) and take its unit whole.
	 */
	ck_assert_int_eq(pool_new(2, 64, &pool), 0);
	zmctx_set_pool(o.zm, pool);
	/* The head of every entry but the first, backwards: no stream, one slice each. */
	for (uint64_t k = SIZE / MED - 1; k > 0; k--) {
		uint64_t off = k * MED + 1000, d0 = decoded(&o);

		ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), sizeof(buf));
		ck_assert_msg(memcmp(buf, text + off, sizeof(buf)) == 0, "wrong bytes at %llu",
			      (unsigned long long)off);
		ck_assert_msg(decoded(&o) - d0 == SLICE, "a head read at %llu decoded %llu bytes",
			      (unsigned long long)off, (unsigned long long)(decoded(&o) - d0));
		/*
		 * Nothing parked: a read after a far slice takes the whole unit,
		 * and a parked decoder would keep its window from the next one.
		 */
		ck_assert_msg(udec_unpark(o.r, PARK_ANY) == NULL,
			      "a far slice at %llu parked its decoder", (unsigned long long)off);
	}
	/*
	 * The tail of the first; a second far miss in it decodes to its slice
	 * too (random reads come back to a unit they touched once), and a
	 * third takes the whole unit, so a reader moving around inside does
	 * not decode from its start for each read (quadratic): the reads after
	 * it hit.
	 */
	ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), MED - sizeof(buf)), sizeof(buf));
	ck_assert(memcmp(buf, text + MED - sizeof(buf), sizeof(buf)) == 0);
	for (int i = 1; i <= 4; i++) {
		uint64_t d0 = decoded(&o), off = MED - i * (MED / 5);
		uint64_t want = i == 1 ? (off / SLICE + 1) * SLICE : i == 2 ? MED : 0;

		ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), sizeof(buf));
		ck_assert(memcmp(buf, text + off, sizeof(buf)) == 0);
		ck_assert_msg(decoded(&o) - d0 == want,
			      "far read %d into a Block decoded %llu bytes, not %llu", i,
			      (unsigned long long)(decoded(&o) - d0), (unsigned long long)want);
	}
	reader_get_info(o.r, &in);
	ck_assert_uint_ge(in.resumes, SIZE / MED - 1);
	ck_assert_uint_eq(o.log.errors, 0);
	close_medium(&o, idx);
	pool_free(pool);
}

START_TEST(xz_medium_far_reads_decode_to_their_slice)
{
	medium_far_reads("med.xz");
}
END_TEST

START_TEST(zstd_medium_far_reads_decode_to_their_slice)
{
	medium_far_reads("med.zst");
}
END_TEST

/*
 * Units of exactly two default slices (4 MiB frames and Blocks: 64M gives
 * 2 MiB slices) are medium too: a random 4 KiB read into one, with the set
 * a whole read saved, decodes up to its far slice, not the whole unit (a
 * peer that decodes up to the offset takes half a unit on average).
 */
static void two_slice_far_read(const char *name)
{
	static unsigned char all[SIZE];
	unsigned char buf[4096];
	char idx[PATH_MAX], path[PATH_MAX];
	struct reader_opts ro;
	struct opened o;
	uint64_t off = SIZE / 2 + 1000, d0;

	zmtest_join(idx, sizeof(idx), dir, "index-two");
	mkdir(idx, 0700);
	zmtest_join(path, sizeof(path), dir, name);
	for (int pass = 0; pass < 2; pass++) {
		memset(&o, 0, sizeof(o));
		ck_assert_int_eq(zmctx_new(64u << 20, &o.zm), 0);
		reader_opts_default(&ro, 64u << 20);
		ck_assert_uint_eq(ro.slice, 2u << 20);
		ro.index_dir = zmtest_store(idx);
		ck_assert_int_eq(reader_open(path, o.zm, &ro, &o.r, NULL), 0);
		if (pass == 0) {
			ck_assert_int_eq(reader_pread(o.r, all, SIZE, 0), SIZE);
			ck_assert(memcmp(all, text, SIZE) == 0);
		} else {
			d0 = decoded(&o);
			ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), off), sizeof(buf));
			ck_assert(memcmp(buf, text + off, sizeof(buf)) == 0);
			ck_assert_msg(decoded(&o) - d0 <= FAR_SLICE,
				      "a 4 KiB read into a 4 MiB unit decoded %llu bytes",
				      (unsigned long long)(decoded(&o) - d0));
		}
		reader_close(o.r);
		zmctx_free(o.zm);
	}
	zmtest_sh(idx, "rm -f *.zmc *.zmi");
	rmdir(idx);
}

START_TEST(xz_two_slice_blocks_are_read_to_the_far_slice)
{
	two_slice_far_read("med4.xz");
}
END_TEST

START_TEST(zstd_two_slice_frames_are_read_to_the_far_slice)
{
	two_slice_far_read("med4.zst");
}
END_TEST

/* A medium entry's piece whose CRC32 does not match: EIO and one log line, never its bytes. */
static void medium_mismatch(const char *name)
{
	char idx[PATH_MAX];
	unsigned char buf[4096];
	struct ckpt_set *s;
	struct opened o;

	open_medium(name, idx, sizeof(idx), &o);
	ck_assert_ptr_nonnull(reader_ck_get(o.r, 2));
	s = atomic_load(&o.r->ck[2]);
	ck_assert_uint_eq(s->n, 1); /* the entry's start, no checkpoint */
	s->crc[1] ^= 1;
	ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), 2 * MED + CKPT_PIECE + 5), -EIO);
	ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), 2 * MED + CKPT_PIECE + 5), -EIO);
	ck_assert_uint_eq(o.log.errors, 1);
	ck_assert_msg(strstr(o.log.text, "checksum mismatch"), "%s", o.log.text);
	/* The other entries still read. */
	ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), 5 * MED + 77), sizeof(buf));
	ck_assert(memcmp(buf, text + 5 * MED + 77, sizeof(buf)) == 0);
	close_medium(&o, idx);
}

START_TEST(xz_medium_piece_mismatch_is_eio)
{
	medium_mismatch("med.xz");
}
END_TEST

START_TEST(zstd_medium_piece_mismatch_is_eio)
{
	medium_mismatch("med.zst");
}
END_TEST

/* Read whole, name's medium entries' sets with index_max cap (0: the default); their bytes. */
static uint64_t medium_set_bytes(const char *name, size_t cap)
{
	static unsigned char all[SIZE];
	struct reader_opts ro;
	struct reader_info in;
	struct zmctx *zm;
	struct reader *r;
	char path[PATH_MAX];

	zmtest_join(path, sizeof(path), dir, name);
	ck_assert_int_eq(zmctx_new(64u << 20, &zm), 0);
	reader_opts_default(&ro, 64u << 20);
	ro.ck_span = SPAN;
	ro.slice = SLICE;
	if (cap)
		ro.index_max = cap;
	ck_assert_int_eq(reader_open(path, zm, &ro, &r, NULL), 0);
	ck_assert_int_eq(reader_pread(r, all, SIZE, 0), SIZE);
	ck_assert(memcmp(all, text, SIZE) == 0);
	reader_get_info(r, &in);
	reader_close(r);
	zmctx_free(zm);
	return in.ckpt_bytes;
}

/* Together a file's medium sets are capped as its block map is (index_max). */
START_TEST(medium_sets_stay_within_the_map_limit)
{
	uint64_t all = medium_set_bytes("med.xz", 0), one = all / (SIZE / MED);
	uint64_t cap = 5 * one + one / 2; /* over the map's 8 * 65 bytes, under 8 sets */

	ck_assert_uint_gt(one, 0);
	ck_assert_uint_eq(medium_set_bytes("med.xz", cap), 5 * one);
}
END_TEST

struct far_job {
	struct reader *r;
	uint32_t seed;
	int bad;
};

static void *far_reader(void *arg)
{
	struct far_job *j = arg;
	unsigned char buf[4096];

	for (int i = 0; i < 200; i++) {
		uint64_t off;

		j->seed = j->seed * 1103515245u + 12345u;
		off = (uint64_t)(j->seed >> 4) % (SIZE - sizeof(buf));
		if (reader_pread(j->r, buf, sizeof(buf), off) != (ssize_t)sizeof(buf) ||
		    memcmp(buf, text + off, sizeof(buf)) != 0)
			j->bad++;
	}
	return NULL;
}

/*
 * Far slices, their once-per-unit switch to the whole unit, and whole fills,
 * all at once from four threads over the same units: every byte exact, no
 * error, no hang.
 */
START_TEST(medium_far_reads_from_threads_are_exact)
{
	struct far_job jobs[4];
	pthread_t th[4];
	char idx[PATH_MAX];
	struct reader_info in;
	struct opened o;

	open_medium("med.xz", idx, sizeof(idx), &o);
	for (int i = 0; i < 4; i++) {
		jobs[i] = (struct far_job){ o.r, 77u + (uint32_t)i, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, far_reader, &jobs[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(jobs[i].bad, 0);
	}
	reader_get_info(o.r, &in);
	ck_assert_uint_gt(in.resumes, 0);
	ck_assert_uint_eq(o.log.errors, 0);
	close_medium(&o, idx);
}
END_TEST

/*
 * A file rewritten in place under an open reader can keep its size, mtime
 * and both 4 KiB ends, the identity its saved index goes by: the old
 * version's piece CRCs saved under it would fail every far read of the new
 * version with EIO.  So a set is saved only while the source is the version
 * it was made from (reader_ck_save).  The version moves with ctime, which a
 * chmod moves without touching a byte: then nothing may be saved.
 */
START_TEST(medium_sets_of_another_version_are_not_saved)
{
	static unsigned char all[SIZE];
	char idx[PATH_MAX], path[PATH_MAX];
	unsigned char buf[4096];
	struct opened o;
	uint64_t d0;

	ck_assert_int_eq(zmtest_sh(dir, "cp med.xz rw.xz"), 0);
	zmtest_join(path, sizeof(path), dir, "rw.xz");
	zmtest_join(idx, sizeof(idx), dir, "index-rw");
	mkdir(idx, 0700);
	open_in("rw.xz", idx, &o);
	ck_assert_int_eq(reader_pread(o.r, all, SIZE, 0), SIZE); /* makes the sets */
	usleep(20000); /* a ctime of its own, on coarse clocks too */
	ck_assert_int_eq(chmod(path, 0640), 0);
	close_one(&o);

	/* Nothing saved: a far read decodes its whole Block, as with no index. */
	open_in("rw.xz", idx, &o);
	d0 = decoded(&o);
	ck_assert_int_eq(reader_pread(o.r, buf, sizeof(buf), 3 * MED + 1000), sizeof(buf));
	ck_assert(memcmp(buf, text + 3 * MED + 1000, sizeof(buf)) == 0);
	ck_assert_uint_eq(decoded(&o) - d0, MED);
	close_one(&o);
	zmtest_sh(dir, "rm -f rw.xz");
	zmtest_sh(idx, "rm -f *.zmc *.zmi");
	rmdir(idx);
}
END_TEST

/* A Block with a BCJ filter gets no checkpoints and still reads right. */
START_TEST(xz_bcj_block_has_none)
{
	struct opened o;
	struct reader_info in;

	open_one("bcj.xz", &o);
	ck_assert_int_eq(reader_build_checkpoints(o.r, o.src, NULL), -ENOTSUP);
	reader_get_info(o.r, &in);
	ck_assert_uint_eq(in.ckpts, 0);
	ck_assert_uint_eq(in.ckpt_wanted, 0);
	random_reads(&o, 0);
	close_one(&o);
}
END_TEST

static int setup(void)
{
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX];
	size_t n;

	snprintf(dir, sizeof(dir), "%s/check_ckpt.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	zmtest_join(path, sizeof(path), dir, "text");
	if (zmtest_text(path, SIZE, 7) < 0)
		return -1;
	{
		FILE *f = fopen(path, "rb");

		text = malloc(SIZE);
		n = f && text ? fread(text, 1, SIZE, f) : 0;
		if (f)
			fclose(f);
		if (n != SIZE)
			return -1;
	}
	return zmtest_sh(dir, "xz -T1 -6 -c text > one.xz && zstd -q -3 -c text > one.zst && "
			      "xz -T1 --x86 --lzma2=preset=6 -c text > bcj.xz && "
			      "zstd -q -3 -c < text > nofcs.zst && "
			      "xz -T1 -6 --block-size=1MiB -c text > med.xz && "
			      "for i in 0 1 2 3 4 5 6 7; do "
			      "dd if=text bs=1M skip=$i count=1 status=none | zstd -q -3; "
			      "done > med.zst && "
			      "xz -T1 -6 --block-size=4MiB -c text > med4.xz && "
			      "split -b 4M --filter='zstd -q -3 -c' text > med4.zst");
}

int main(void)
{
	const struct zmtest_case cases[] = {
		{ "set_resumes_exact_at_every_point", set_resumes_exact_at_every_point, 0 },
		{ "set_catches_a_wrong_byte", set_catches_a_wrong_byte, 0 },
		{ "set_check_refuses_forged_tables", set_check_refuses_forged_tables, 0 },
		{ "build_refuses_points_out_of_order", build_refuses_points_out_of_order, 0 },
		{ "build_of_unknown_size_takes_what_came", build_of_unknown_size_takes_what_came,
		  0 },
		{ "xz_one_block_resumes_exact", xz_one_block_resumes_exact, 0 },
		{ "zstd_one_frame_resumes_exact", zstd_one_frame_resumes_exact, 0 },
		{ "zstd_unsized_frame_is_decoded_once", zstd_unsized_frame_is_decoded_once, 0 },
		{ "without_checkpoints_reads_decode_from_the_start",
		  without_checkpoints_reads_decode_from_the_start, 0 },
		{ "xz_span_checksum_mismatch_is_eio", xz_span_checksum_mismatch_is_eio, 0 },
		{ "zstd_span_checksum_mismatch_is_eio", zstd_span_checksum_mismatch_is_eio, 0 },
		{ "xz_damaged_checkpoint_is_eio", xz_damaged_checkpoint_is_eio, 0 },
		{ "zstd_damaged_checkpoint_is_eio", zstd_damaged_checkpoint_is_eio, 0 },
		{ "xz_bcj_block_has_none", xz_bcj_block_has_none, 0 },
		{ "xz_saved_sets_are_loaded", xz_saved_sets_are_loaded, 0 },
		{ "zstd_saved_sets_are_loaded", zstd_saved_sets_are_loaded, 0 },
		{ "zstd_unsized_saved_sets_are_loaded", zstd_unsized_saved_sets_are_loaded, 0 },
		{ "a_far_read_queues_a_pass", a_far_read_queues_a_pass, 0 },
		{ "xz_sequential_read_decodes_spans_ahead", xz_sequential_read_decodes_spans_ahead,
		  0 },
		{ "zstd_sequential_read_decodes_spans_ahead",
		  zstd_sequential_read_decodes_spans_ahead, 0 },
		{ "xz_head_decodes_no_span_ahead", xz_head_decodes_no_span_ahead, 0 },
		{ "zstd_head_decodes_no_span_ahead", zstd_head_decodes_no_span_ahead, 0 },
		{ "xz_threads_reading_in_order_beside_span_jobs_are_exact",
		  xz_threads_reading_in_order_beside_span_jobs_are_exact, 0 },
		{ "a_sequential_read_queues_a_pass", a_sequential_read_queues_a_pass, 0 },
		{ "xz_pass_leaves_an_entry_a_reader_streams",
		  xz_pass_leaves_an_entry_a_reader_streams, 0 },
		{ "a_pass_runs_once_a_partial_read_is_left",
		  a_pass_runs_once_a_partial_read_is_left, 0 },
		{ "zstd_pass_leaves_an_entry_a_reader_streams",
		  zstd_pass_leaves_an_entry_a_reader_streams, 0 },
		{ "xz_yielded_entry_is_built_by_its_reader",
		  xz_yielded_entry_is_built_by_its_reader, 0 },
		{ "zstd_yielded_entry_is_built_by_its_reader",
		  zstd_yielded_entry_is_built_by_its_reader, 0 },
		{ "xz_sets_over_the_map_limit_are_kept", xz_sets_over_the_map_limit_are_kept, 0 },
		{ "zstd_sets_over_the_map_limit_are_kept", zstd_sets_over_the_map_limit_are_kept,
		  0 },
		{ "sets_without_a_local_index_dir_stay_within_the_map_limit",
		  sets_without_a_local_index_dir_stay_within_the_map_limit, 0 },
		{ "resident_bytes_per_checkpoint", resident_bytes_per_checkpoint, 0 },
		{ "spilled_sets_share_one_descriptor", spilled_sets_share_one_descriptor, 0 },
		{ "xz_far_read_beside_a_stuck_load", xz_far_read_beside_a_stuck_load, 0 },
		{ "zstd_far_read_beside_a_stuck_load", zstd_far_read_beside_a_stuck_load, 0 },
		{ "xz_tail_beside_a_pass_waits_for_it", xz_tail_beside_a_pass_waits_for_it, 0 },
		{ "zstd_tail_beside_a_pass_waits_for_it", zstd_tail_beside_a_pass_waits_for_it, 0 },
		{ "xz_near_read_beside_a_pass_does_not_wait",
		  xz_near_read_beside_a_pass_does_not_wait, 0 },
		{ "zstd_near_read_beside_a_pass_does_not_wait",
		  zstd_near_read_beside_a_pass_does_not_wait, 0 },
		{ "xz_tail_builds_the_set_once", xz_tail_builds_the_set_once, 0 },
		{ "zstd_tail_builds_the_set_once", zstd_tail_builds_the_set_once, 0 },
		{ "a_pass_over_another_version_builds_nothing",
		  a_pass_over_another_version_builds_nothing, 0 },
		{ "xz_medium_far_reads_decode_to_their_slice",
		  xz_medium_far_reads_decode_to_their_slice, 0 },
		{ "zstd_medium_far_reads_decode_to_their_slice",
		  zstd_medium_far_reads_decode_to_their_slice, 0 },
		{ "xz_two_slice_blocks_are_read_to_the_far_slice",
		  xz_two_slice_blocks_are_read_to_the_far_slice, 0 },
		{ "zstd_two_slice_frames_are_read_to_the_far_slice",
		  zstd_two_slice_frames_are_read_to_the_far_slice, 0 },
		{ "xz_medium_piece_mismatch_is_eio", xz_medium_piece_mismatch_is_eio, 0 },
		{ "zstd_medium_piece_mismatch_is_eio", zstd_medium_piece_mismatch_is_eio, 0 },
		{ "medium_sets_stay_within_the_map_limit", medium_sets_stay_within_the_map_limit,
		  0 },
		{ "medium_sets_of_another_version_are_not_saved",
		  medium_sets_of_another_version_are_not_saved, 0 },
		{ "medium_far_reads_from_threads_are_exact",
		  medium_far_reads_from_threads_are_exact, 0 },
	};
	SRunner *sr;
	int failed;

	if (setup() < 0) {
		fprintf(stderr, "check_ckpt: cannot make the fixtures in %s\n", dir);
		return 1;
	}
	sr = srunner_create(zmtest_suite("check_ckpt", "ckpt", cases,
					 sizeof(cases) / sizeof(cases[0]), 300, 1, NULL));
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	zmtest_sh(dir,
		  "rm -f text one.xz one.zst bcj.xz nofcs.zst med.xz med.zst med4.xz med4.zst");
	rmdir(dir);
	free(text);
	return failed ? 1 : 0;
}
