/* SPDX-License-Identifier: MIT */
/*
 * Tests for source/s3src.c (objects as sources) against a real Ceph RGW,
 * found as check_s3 finds it (ZMOUNT_S3_DIR from the fixture s3_rgw; no
 * skipping).  The fault case goes through tests/s3/faultproxy.py.
 *
 * Costs are counted (s3src_get_counters: GETs and bytes), never timed.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "s3.h"
#include "s3src.h"

#define BIG   (24u * 1024 * 1024 + 4321) /* 24 MiB and an odd tail */
#define SMALL (1u * 1024 * 1024)

static char endpoint[256], bucket[128], credfile[512];
static unsigned char *big; /* the bytes of "s3src/big" */

/* -- helpers -------------------------------------------------------------- */

static uint32_t lcg(uint32_t *x)
{
	*x = *x * 1664525u + 1013904223u;
	return *x >> 8;
}

static unsigned char *pattern(size_t n, uint32_t seed)
{
	unsigned char *p = malloc(n);

	if (!p)
		abort();
	for (size_t i = 0; i < n; i++) {
		uint64_t h = (i + 1 + (uint64_t)seed * 0x100000001B3ull) * 0x9E3779B97F4A7C15ull;

		p[i] = (unsigned char)(h >> 56 ^ h >> 29 ^ h >> 13);
	}
	return p;
}

static char last_log[1024];

static void keep_log(void *arg, const char *line)
{
	(void)arg;
	snprintf(last_log, sizeof(last_log), "%s", line);
}

static int connect_to(const char *ep, int retries, struct s3 **out, char *msg, size_t n)
{
	struct s3src_conf c = { .endpoint = ep,
				.region = "us-east-1",
				.credentials = credfile,
				.profile = "default",
				.retries = retries,
				.timeout_ms = 5000,
				.log = keep_log };

	return s3src_connect(bucket, &c, out, msg, n);
}

static struct s3 *connect_at(const char *ep, int retries)
{
	char msg[256];
	struct s3 *s;

	ck_assert_msg(connect_to(ep, retries, &s, msg, sizeof(msg)) == 0, "connect: %s", msg);
	return s;
}

static struct zsrc *open_obj(struct s3 *s, const char *key)
{
	struct s3_stat st;
	struct zsrc *z;

	ck_assert_int_eq(s3_head(s, key, &st), 0);
	ck_assert_int_eq(s3src_open(s, s3src_dev(endpoint, bucket), key, &st, &z), 0);
	return z;
}

static struct s3src_counters since(const struct s3src_counters *a)
{
	struct s3src_counters b;

	s3src_get_counters(&b);
	return (struct s3src_counters){ b.gets - a->gets,   b.bytes - a->bytes, b.hits - a->hits,
					b.stale - a->stale, b.held_max,		b.held };
}

/* Reads [off, off + len) with zsrc_pread and compares with ref (size bytes). */
static void check_at(struct zsrc *z, const unsigned char *ref, size_t size, uint64_t off,
		     size_t len)
{
	static unsigned char buf[1 << 20];
	size_t want = off >= size ? 0 : (size - off < len ? size - off : len);
	ssize_t r;

	ck_assert_uint_le(len, sizeof(buf));
	r = zsrc_pread(z, buf, len, off);
	ck_assert_msg(r == (ssize_t)want, "pread at %llu+%zu: %zd, want %zu (%s)",
		      (unsigned long long)off, len, r, want, last_log);
	ck_assert_msg(!memcmp(buf, ref + off, want), "pread at %llu+%zu: wrong bytes",
		      (unsigned long long)off, len);
}

/* -- the fault proxy (as in check_s3) ------------------------------------- */

static pid_t proxy_pid;
static int proxy_stdin = -1, control_port;
static char proxy_url[64];

static void proxy_start(void)
{
	int in[2], out[2], port;
	char line[64];
	FILE *f;

	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		abort();
	proxy_pid = fork();
	if (proxy_pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execlp("python3", "python3", ZMOUNT_FAULTPROXY, "--upstream", endpoint + 7,
		       (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	proxy_stdin = in[1];
	f = fdopen(out[0], "r");
	if (!f || !fgets(line, sizeof(line), f) ||
	    sscanf(line, "%d %d", &port, &control_port) != 2) {
		fprintf(stderr, "check_s3src: %s did not start\n", ZMOUNT_FAULTPROXY);
		exit(1);
	}
	fclose(f);
	snprintf(proxy_url, sizeof(proxy_url), "http://127.0.0.1:%d", port);
}

static void proxy_stop(void)
{
	if (proxy_pid <= 0)
		return;
	close(proxy_stdin); /* it exits when its stdin closes */
	waitpid(proxy_pid, NULL, 0);
	proxy_pid = 0;
}

static void proxy_cmd(const char *cmd, char *ans, size_t n)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(control_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ssize_t r;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(write(fd, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
	ck_assert_int_eq(write(fd, "\n", 1), 1);
	r = read(fd, ans, n - 1); /* one short line: one read */
	ans[r > 0 ? r : 0] = '\0';
	close(fd);
}

/* -- bytes ---------------------------------------------------------------- */

START_TEST(test_exact_bytes)
{
	struct s3 *s = connect_at(endpoint, 2);
	struct zsrc *z = open_obj(s, "s3src/big");
	uint32_t x = 99;
	uint64_t off;

	/* Sequential, in pieces of odd sizes. */
	for (off = 0; off < BIG; off += 7001)
		check_at(z, big, BIG, off, 7001);
	/* Backwards, from the end. */
	for (off = BIG; off > 10000; off -= 10000)
		check_at(z, big, BIG, off - 10000, 10000);
	/* Straddling the first windows' edges (64 KiB doubling). */
	for (uint64_t e = 64 << 10; e < (16u << 20); e *= 2) {
		check_at(z, big, BIG, e - 3, 6);
		check_at(z, big, BIG, e + (e >> 1) - 100, 200000);
	}
	/* At and past the end, and long reads. */
	check_at(z, big, BIG, BIG - 10, 100);
	check_at(z, big, BIG, BIG, 10);
	check_at(z, big, BIG, BIG + 12345, 10);
	check_at(z, big, BIG, 3, 1 << 20);
	for (int i = 0; i < 300; i++)
		check_at(z, big, BIG, lcg(&x) % BIG, 1 + lcg(&x) % (i % 5 ? 9000 : 700000));
	ck_assert_int_eq(z->ops->pread(z, big, 1, (uint64_t)INT64_MAX + 1), -EINVAL);
	zsrc_put(z);
	s3_close(s);
}
END_TEST

struct reader {
	struct zsrc *z;
	uint32_t seed;
	int bad;
};

static void *read_many(void *arg)
{
	struct reader *r = arg;
	unsigned char *buf = malloc(200000);

	for (int i = 0; i < 150 && buf; i++) {
		/* Half of them in one 2 MiB region, so the windows are shared. */
		uint64_t off = i % 2 ? lcg(&r->seed) % (2u << 20) : lcg(&r->seed) % BIG;
		size_t len = 1 + lcg(&r->seed) % 200000;
		size_t want = off + len > BIG ? BIG - off : len;

		if (zsrc_pread(r->z, buf, len, off) != (ssize_t)want ||
		    memcmp(buf, big + off, want))
			r->bad++;
	}
	free(buf);
	return NULL;
}

START_TEST(test_threads_share)
{
	struct s3 *s = connect_at(endpoint, 2);
	struct zsrc *z = open_obj(s, "s3src/big");
	struct s3src_counters c;
	struct reader r[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		r[i] = (struct reader){ zsrc_get(z), 1000u + (uint32_t)i, 0 };
		pthread_create(&t[i], NULL, read_many, &r[i]);
	}
	zsrc_put(z); /* the threads hold theirs */
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(r[i].bad, 0);
		zsrc_put(r[i].z);
	}
	s3src_get_counters(&c);
	ck_assert_uint_le(c.held_max, S3SRC_BYTES_PER_SOURCE);
	s3_close(s);
}
END_TEST

/* -- versions ------------------------------------------------------------- */

START_TEST(test_overwrite_stale)
{
	struct s3 *s = connect_at(endpoint, 2);
	unsigned char *v1 = pattern(SMALL, 1), *v2 = pattern(SMALL, 2), buf[4096];
	struct s3src_counters c0;
	char t1[ZSRC_TAG_MAX], t2[ZSRC_TAG_MAX];
	struct stat st1, st2;
	struct zsrc *z, *z2;

	ck_assert_int_eq(s3_put(s, "s3src/ow", v1, SMALL, NULL), 0);
	z = open_obj(s, "s3src/ow");
	check_at(z, v1, SMALL, 0, sizeof(buf));
	ck_assert_int_eq(s3_put(s, "s3src/ow", v2, SMALL, NULL), 0);
	s3src_get_counters(&c0);
	/* Bytes no window held: the object changed, so -ESTALE, never v2. */
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(zsrc_pread(z, buf, sizeof(buf), SMALL / 2), -ESTALE);
	ck_assert_msg(memcmp(buf, v2 + SMALL / 2, 64), "bytes of the new version");
	/* And every later read, also of bytes fetched before. */
	ck_assert_int_eq(zsrc_pread(z, buf, sizeof(buf), 0), -ESTALE);
	ck_assert_int_eq(zsrc_pread(z, buf, sizeof(buf), SMALL - 100), -ESTALE);
	ck_assert_uint_eq(since(&c0).stale, 3);
	/* A source opened on the new version reads it, and its identity differs. */
	z2 = open_obj(s, "s3src/ow");
	check_at(z2, v2, SMALL, SMALL / 2, sizeof(buf));
	ck_assert_int_eq(zsrc_stat(z, &st1), 0);
	ck_assert_int_eq(zsrc_stat(z2, &st2), 0);
	ck_assert(st1.st_ino == st2.st_ino && st1.st_dev == st2.st_dev);
	zsrc_tag(z, t1);
	zsrc_tag(z2, t2);
	ck_assert_msg(t1[0] == '"' && strcmp(t1, t2) != 0, "tags %s and %s", t1, t2);
	zsrc_put(z);
	zsrc_put(z2);
	free(v1);
	free(v2);
	s3_close(s);
}
END_TEST

START_TEST(test_overwrite_during_read_ahead)
{
	/* Reading on after the overwrite: the fetch ahead sees 412 too. */
	struct s3 *s = connect_at(endpoint, 2);
	unsigned char *v1 = pattern(8u << 20, 3), *v2 = pattern(8u << 20, 4);
	unsigned char *buf = malloc(16384);
	uint64_t off = 0;
	ssize_t r = 0;
	struct zsrc *z;

	ck_assert_int_eq(s3_put(s, "s3src/ow2", v1, 8u << 20, NULL), 0);
	z = open_obj(s, "s3src/ow2");
	for (; off < (1u << 20); off += 16384)
		check_at(z, v1, 8u << 20, off, 16384);
	ck_assert_int_eq(s3_put(s, "s3src/ow2", v2, 8u << 20, NULL), 0);
	for (; off < (8u << 20); off += (uint64_t)r) {
		r = zsrc_pread(z, buf, 16384, off);
		if (r < 0)
			break;
		ck_assert_msg(!memcmp(buf, v1 + off, (size_t)r), "wrong bytes at %llu",
			      (unsigned long long)off);
	}
	ck_assert_int_eq(r, -ESTALE);
	zsrc_put(z);
	free(buf);
	free(v1);
	free(v2);
	s3_close(s);
}
END_TEST

/* -- costs ---------------------------------------------------------------- */

START_TEST(test_sequential_cost)
{
	struct s3 *s = connect_at(endpoint, 2);
	struct zsrc *z = open_obj(s, "s3src/big");
	unsigned char *buf = malloc(16384);
	struct s3src_counters c0, c;
	uint64_t off = 0;

	s3src_get_counters(&c0);
	while (off < BIG) {
		ssize_t r = zsrc_pread(z, buf, 16384, off);

		ck_assert_int_gt(r, 0);
		ck_assert(!memcmp(buf, big + off, (size_t)r));
		off += (uint64_t)r;
	}
	c = since(&c0);
	fprintf(stderr,
		"check_s3src: sequential %u bytes in 16 KiB preads: %llu GETs, %llu bytes\n", BIG,
		(unsigned long long)c.gets, (unsigned long long)c.bytes);
	ck_assert_uint_le(c.held_max, S3SRC_BYTES_PER_SOURCE);
	ck_assert_uint_le(c.bytes, BIG + BIG / 5);
	/* 64 KiB doubling to 4 MiB is 7 windows, then one GET per 4 MiB. */
	ck_assert_uint_le(c.gets, 7 + BIG / (4u << 20) + 2);
	zsrc_put(z);
	free(buf);
	s3_close(s);
}
END_TEST

/* A walk over headers (zstd's block headers): 4 KiB reads 80 KiB apart. */
START_TEST(test_walk_cost)
{
	struct s3 *s = connect_at(endpoint, 2);
	struct zsrc *z = open_obj(s, "s3src/big");
	unsigned char buf[4096];
	struct s3src_counters c0, c;
	unsigned reads = 0;

	s3src_get_counters(&c0);
	for (uint64_t off = 0; off + sizeof(buf) <= BIG; off += 80u << 10, reads++) {
		ck_assert_int_eq(zsrc_pread(z, buf, sizeof(buf), off), (ssize_t)sizeof(buf));
		ck_assert(!memcmp(buf, big + off, sizeof(buf)));
	}
	c = since(&c0);
	fprintf(stderr, "check_s3src: %u reads 80 KiB apart: %llu GETs, %llu bytes\n", reads,
		(unsigned long long)c.gets, (unsigned long long)c.bytes);
	/* Windows grow as for reads in order: not one GET per read. */
	ck_assert_uint_le(c.gets, 7 + BIG / (4u << 20) + 2);
	ck_assert_uint_le(c.bytes, BIG + BIG / 5);
	zsrc_put(z);
	s3_close(s);
}
END_TEST

START_TEST(test_units_cost)
{
	/* As the reader decodes gzip units: 32 KiB reads, each unit starting a
	 * little before the last one's reads ended.  Still 4 MiB windows. */
	struct s3 *s = connect_at(endpoint, 2);
	struct zsrc *z = open_obj(s, "s3src/big");
	struct s3src_counters c0, c;
	uint64_t unit = 0;

	s3src_get_counters(&c0);
	while (unit < BIG) {
		uint64_t end = unit + 900000 < BIG ? unit + 900000 : BIG;

		for (uint64_t off = unit; off < end; off += 32768)
			check_at(z, big, BIG, off, 32768);
		unit = end - 2000;
		if (end == BIG)
			break;
	}
	c = since(&c0);
	fprintf(stderr,
		"check_s3src: units of 900000 bytes in 32 KiB preads: %llu GETs, %llu bytes\n",
		(unsigned long long)c.gets, (unsigned long long)c.bytes);
	ck_assert_uint_le(c.bytes, BIG + BIG / 5);
	ck_assert_uint_le(c.gets, 7 + BIG / (4u << 20) + 2);
	zsrc_put(z);
	s3_close(s);
}
END_TEST

START_TEST(test_workers_cost)
{
	/*
	 * As the reader's workers decode gzip units from a saved index: each
	 * hints its unit (UNITS at once), then they read in turn, 32 KiB at a
	 * time, each unit a little past its end (spans meet inside a byte).
	 * Each read finds its own unit's hint, and the windows of units not
	 * yet read through stay held (16 slots, not 4).
	 */
	enum { UNITS = 8, ULEN = 200000, PIECE = 32768 };
	struct s3 *s = connect_at(endpoint, 2);
	struct zsrc *z = open_obj(s, "s3src/big");
	struct s3src_counters c0, c;
	uint64_t base = 5u << 20, pos[UNITS];

	s3src_get_counters(&c0);
	for (int u = 0; u < UNITS; u++) {
		pos[u] = base + (uint64_t)u * ULEN;
		zsrc_hint(z, pos[u], ULEN);
	}
	for (int done = 0; done < UNITS;) {
		done = 0;
		for (int u = 0; u < UNITS; u++) {
			uint64_t end = base + (uint64_t)(u + 1) * ULEN + 16;

			if (pos[u] >= end) {
				done++;
				continue;
			}
			check_at(z, big, BIG, pos[u], end - pos[u] < PIECE ? end - pos[u] : PIECE);
			pos[u] += PIECE;
		}
	}
	c = since(&c0);
	fprintf(stderr, "check_s3src: %d hinted units read in turn: %llu GETs, %llu bytes\n", UNITS,
		(unsigned long long)c.gets, (unsigned long long)c.bytes);
	/* 3cf4112 (4 windows, the last hint only): 56 GETs, 4.06 MB; now 9, 2.0 MB. */
	ck_assert_uint_le(c.bytes, UNITS * ULEN * 13 / 10);
	zsrc_put(z);
	s3_close(s);
}
END_TEST

START_TEST(test_random_cost)
{
	struct s3 *s = connect_at(endpoint, 2);
	struct zsrc *z = open_obj(s, "s3src/big");
	struct s3src_counters c0, c;
	uint32_t x = 4242;

	/* Without hints each jump fetches one 64 KiB window, not more. */
	s3src_get_counters(&c0);
	for (int i = 0; i < 200; i++)
		check_at(z, big, BIG, lcg(&x) % (BIG - 4096), 4096);
	c = since(&c0);
	fprintf(stderr, "check_s3src: 200 random 4 KiB preads: %llu GETs, %llu bytes\n",
		(unsigned long long)c.gets, (unsigned long long)c.bytes);
	ck_assert_uint_le(c.gets, 200);
	ck_assert_uint_le(c.bytes, 200u * (64u << 10));
	/* With the extent hinted, as the reader's read-ahead does, exactly that. */
	s3src_get_counters(&c0);
	for (int i = 0; i < 200; i++) {
		uint64_t off = lcg(&x) % (BIG - 4096);

		zsrc_hint(z, off, 4096);
		check_at(z, big, BIG, off, 4096);
	}
	c = since(&c0);
	fprintf(stderr, "check_s3src: 200 hinted 4 KiB preads: %llu GETs, %llu bytes\n",
		(unsigned long long)c.gets, (unsigned long long)c.bytes);
	ck_assert_uint_le(c.bytes, 200u * 4096 * 6 / 5);
	/* A hinted 300000-byte extent read in 4 KiB pieces: its bytes, and not more. */
	s3src_get_counters(&c0);
	for (int i = 0; i < 20; i++) {
		uint64_t off = lcg(&x) % (BIG - 300000);

		zsrc_hint(z, off, 300000);
		for (uint64_t o = off; o < off + 300000; o += 4096)
			check_at(z, big, BIG, o, o + 4096 > off + 300000 ? off + 300000 - o : 4096);
	}
	c = since(&c0);
	ck_assert_uint_le(c.bytes, 20u * 300000 * 6 / 5);
	zsrc_put(z);
	s3_close(s);
}
END_TEST

/* -- faults --------------------------------------------------------------- */

START_TEST(test_faults_retried)
{
	struct s3 *s = connect_at(proxy_url, 6);
	struct zsrc *z = open_obj(s, "s3src/big");
	char ans[256];
	long actions = -1;

	proxy_cmd("clear", ans, sizeof(ans));
	proxy_cmd("push 503 reset 429 cut:1000 pass pass 503 503 reset", ans, sizeof(ans));
	ck_assert_str_eq(ans, "ok\n");
	for (uint64_t off = 0; off < (12u << 20); off += 30000)
		check_at(z, big, BIG, off, 30000);
	proxy_cmd("stats", ans, sizeof(ans));
	ck_assert_int_eq(sscanf(ans, "requests %*d down %*d up %*d actions %ld", &actions), 1);
	ck_assert_int_eq(actions, 9);
	zsrc_put(z);
	s3_close(s);
}
END_TEST

/* -- URLs, identity, clients (no server) ---------------------------------- */

START_TEST(test_url)
{
	char b[64], p[16];

	ck_assert_int_eq(s3src_url("s3://my-bucket/logs/a.gz", b, sizeof(b), p, sizeof(p)), 1);
	ck_assert_str_eq(b, "my-bucket");
	ck_assert_str_eq(p, "logs/a.gz");
	ck_assert_int_eq(s3src_url("s3://b.c.d", b, sizeof(b), p, sizeof(p)), 1);
	ck_assert_str_eq(p, "");
	ck_assert_int_eq(s3src_url("s3://abc/", b, sizeof(b), p, sizeof(p)), 1);
	ck_assert_str_eq(p, "");
	ck_assert_int_eq(s3src_url("/local/file.gz", b, sizeof(b), p, sizeof(p)), 0);
	ck_assert_int_eq(s3src_url("s3:/abc/x", b, sizeof(b), p, sizeof(p)), 0);
	ck_assert_int_eq(s3src_url("s3://", b, sizeof(b), p, sizeof(p)), -EINVAL);
	ck_assert_int_eq(s3src_url("s3:///x", b, sizeof(b), p, sizeof(p)), -EINVAL);
	ck_assert_int_eq(s3src_url("s3://ab/x", b, sizeof(b), p, sizeof(p)), -EINVAL);
	ck_assert_int_eq(s3src_url("s3://Upper/x", b, sizeof(b), p, sizeof(p)), -EINVAL);
	ck_assert_int_eq(s3src_url("s3://-abc/x", b, sizeof(b), p, sizeof(p)), -EINVAL);
	ck_assert_int_eq(s3src_url("s3://abc/0123456789abcdef", b, sizeof(b), p, sizeof(p)),
			 -EINVAL);
	ck_assert_int_eq(s3src_url("s3://abcdef/x", b, 4, p, sizeof(p)), -EINVAL);
}
END_TEST

START_TEST(test_identity)
{
	struct s3_stat os = { 1000, "\"abc\"", 1700000000 }, os2 = os;
	struct stat a, b;

	s3src_version(s3src_dev("http://h", "bkt"), "k/x.gz", &os, &a);
	ck_assert(S_ISREG(a.st_mode) && (a.st_mode & 07777) == 0444);
	ck_assert_int_eq(a.st_size, 1000);
	ck_assert_int_eq(a.st_blocks, 2);
	ck_assert_int_eq(a.st_mtim.tv_sec, 1700000000);
	ck_assert_int_eq(a.st_ctim.tv_sec, 1700000000);
	ck_assert_int_ne(a.st_ino, 0);
	strcpy(os2.etag, "\"abd\"");
	s3src_version(s3src_dev("http://h", "bkt"), "k/x.gz", &os2, &b);
	/* the ETag is the source's tag, never folded into a stat field */
	ck_assert(a.st_ino == b.st_ino && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec);
	ck_assert(s3src_dev("http://h", "bkt") != s3src_dev("http://h", "bkt2"));
	ck_assert(s3src_dev("http://h", "bkt") != s3src_dev("http://g", "bkt"));
}
END_TEST

START_TEST(test_connect_defaults)
{
	struct s3src_conf c = { .retries = -1 };
	char ep[128], msg[256];
	struct s3 *s = (struct s3 *)1;
	struct s3_stat os = { 10, "", 0 };
	struct zsrc *z = (struct zsrc *)1;

	unsetenv("AWS_ENDPOINT_URL_S3");
	unsetenv("AWS_ENDPOINT_URL");
	unsetenv("AWS_REGION");
	setenv("AWS_DEFAULT_REGION", "eu-west-3", 1);
	ck_assert_int_eq(s3src_endpoint(&c, ep, sizeof(ep)), 0);
	ck_assert_str_eq(ep, "https://s3.eu-west-3.amazonaws.com");
	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9/", 1);
	ck_assert_int_eq(s3src_endpoint(&c, ep, sizeof(ep)), 0);
	ck_assert_str_eq(ep, "http://127.0.0.1:9");
	c.endpoint = "http://other:1";
	ck_assert_int_eq(s3src_endpoint(&c, ep, sizeof(ep)), 0);
	ck_assert_str_eq(ep, "http://other:1");
	/* No credentials anywhere: one line, -ENOENT. */
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	setenv("HOME", "/nonexistent", 1);
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	ck_assert_int_eq(s3src_connect("bkt", &c, &s, msg, sizeof(msg)), -ENOENT);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(msg, "credentials") && !strchr(msg, '\n'), "msg: %s", msg);
	/* Keys in the environment, a bad endpoint: said, the secret not. */
	setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SECRET-NEVER-SAID", 1);
	c.endpoint = "ftp://x";
	ck_assert_int_eq(s3src_connect("bkt", &c, &s, msg, sizeof(msg)), -EINVAL);
	ck_assert_msg(strstr(msg, "endpoint") && !strstr(msg, "SECRET"), "msg: %s", msg);
	c.endpoint = NULL;
	ck_assert_int_eq(s3src_connect("bkt", &c, &s, msg, sizeof(msg)), 0);
	/* No ETag: a change could not be told, so no source. */
	ck_assert_int_eq(s3src_open(s, 1, "k", &os, &z), -EINVAL);
	ck_assert_ptr_null(z);
	s3_close(s);
}
END_TEST

/* -- main ----------------------------------------------------------------- */

static void read_line(const char *dir, const char *name, char *dst, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f || !fgets(dst, (int)n, f)) {
		fprintf(stderr, "check_s3src: FAIL: cannot read %s (did tests/s3/rgw.sh up run?)\n",
			path);
		exit(1);
	}
	fclose(f);
	dst[strcspn(dst, "\n")] = '\0';
}

/* Reads the fixture's files and uploads the big test object once. */
static void load_server(void)
{
	const char *dir = getenv("ZMOUNT_S3_DIR");
	char msg[256];
	struct s3 *s;
	int rc;

	if (!dir || !*dir) {
		fprintf(stderr, "check_s3src: FAIL: ZMOUNT_S3_DIR is not set; run through ctest "
				"(the s3_rgw fixture)\n");
		exit(1);
	}
	read_line(dir, "endpoint", endpoint, sizeof(endpoint));
	read_line(dir, "bucket", bucket, sizeof(bucket));
	snprintf(credfile, sizeof(credfile), "%s/credentials", dir);
	big = pattern(BIG, 7);
	rc = connect_to(endpoint, 2, &s, msg, sizeof(msg));
	if (rc) {
		fprintf(stderr, "check_s3src: FAIL: %s\n", msg);
		exit(1);
	}
	rc = s3_put(s, "s3src/big", big, BIG, NULL);
	s3_close(s);
	if (rc) {
		fprintf(stderr, "check_s3src: FAIL: PUT s3src/big: %s (%s)\n", strerror(-rc),
			last_log);
		exit(1);
	}
}

static TCase *tc(const char *name, int timeout, const TTest *const *t)
{
	TCase *c = tcase_create(name);

	tcase_set_timeout(c, timeout);
	for (; *t; t++)
		tcase_add_test(c, *t);
	return c;
}

int main(void)
{
	const TTest *const plain[] = { test_url, test_identity, test_connect_defaults, NULL };
	const TTest *const rgw[] = { test_exact_bytes,	   test_threads_share,
				     test_overwrite_stale, test_overwrite_during_read_ahead,
				     test_sequential_cost, test_walk_cost,
				     test_units_cost,	   test_workers_cost,
				     test_random_cost,	   NULL };
	const TTest *const faults[] = { test_faults_retried, NULL };
	Suite *su = suite_create("s3src");
	SRunner *sr;
	TCase *f;
	int failed;

	load_server();
	suite_add_tcase(su, tc("plain", 10, plain));
	suite_add_tcase(su, tc("rgw", 300, rgw));
	f = tc("faults", 120, faults);
	tcase_add_unchecked_fixture(f, proxy_start, proxy_stop);
	suite_add_tcase(su, f);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	free(big);
	return failed ? 1 : 0;
}
