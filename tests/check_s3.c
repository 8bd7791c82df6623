/* SPDX-License-Identifier: MIT */
/*
 * Tests for source/s3.c and source/s3cred.c against a real Ceph RGW.
 *
 * ZMOUNT_S3_DIR names the directory that tests/s3/rgw.sh up made (ctest's
 * fixture s3_rgw does that): its endpoint, bucket and credentials files say
 * where the gateway is.  Without it, or if the gateway does not answer, the
 * program fails and says why: these tests never skip.
 *
 * The fault cases go through tests/s3/faultproxy.py, started once per
 * fault TCase (an unchecked fixture, in the parent), and steered through
 * its control port: each request takes the next scheduled fault.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "s3.h"
#include "s3cred.h"

#define NLIST	 10000
#define NUP	 16			 /* upload threads */
#define BIG_SIZE (3u * 1024 * 1024 + 17) /* three MiB and an odd tail */

static char endpoint[256], bucket[128], credfile[512];
static struct s3cred *cred;

/* -- helpers -------------------------------------------------------------- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t lcg(uint32_t *x)
{
	*x = *x * 1664525u + 1013904223u;
	return *x >> 8;
}

/* The bytes of a test object: a pattern of (seed, i). */
static unsigned char *pattern(size_t n, uint32_t seed)
{
	unsigned char *p = malloc(n ? n : 1);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < n; i++) {
		uint64_t h = (i + 1 + (uint64_t)seed * 0x100000001B3ull) * 0x9E3779B97F4A7C15ull;

		p[i] = (unsigned char)(h >> 56 ^ h >> 29 ^ h >> 13);
	}
	return p;
}

/* The last log line of a client, for the tests that check what is said. */
static char last_log[1024];

static void keep_log(void *arg, const char *line)
{
	(void)arg;
	snprintf(last_log, sizeof(last_log), "%s", line);
}

static struct s3 *open_at(const char *ep, const struct s3cred *c, int retries, int timeout_ms)
{
	struct s3_opts o;
	struct s3 *s;

	s3_opts_default(&o);
	o.retries = retries;
	o.timeout_ms = timeout_ms;
	o.log = keep_log;
	last_log[0] = '\0';
	ck_assert_int_eq(s3_open(ep, "us-east-1", bucket, c, &o, &s), 0);
	return s;
}

static struct s3 *open_rgw(void)
{
	return open_at(endpoint, cred, 2, 10000);
}

static void put_ok(struct s3 *s, const char *key, const void *buf, size_t n, char *etag)
{
	int rc = s3_put(s, key, buf, n, etag);

	ck_assert_msg(rc == 0, "PUT %s: %s (%s)", key, strerror(-rc), last_log);
}

/* -- the fault proxy ------------------------------------------------------ */

static pid_t proxy_pid;
static int proxy_stdin = -1, proxy_port, control_port;
static char proxy_url[64];

static void proxy_start(void)
{
	int in[2], out[2];
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
	    sscanf(line, "%d %d", &proxy_port, &control_port) != 2) {
		fprintf(stderr, "check_s3: %s did not start\n", ZMOUNT_FAULTPROXY);
		exit(1);
	}
	fclose(f);
	snprintf(proxy_url, sizeof(proxy_url), "http://127.0.0.1:%d", proxy_port);
}

static void proxy_stop(void)
{
	if (proxy_pid <= 0)
		return;
	close(proxy_stdin); /* it exits when its stdin closes */
	for (int i = 0; i < 50; i++) {
		if (waitpid(proxy_pid, NULL, WNOHANG) != 0) {
			proxy_pid = 0;
			return;
		}
		usleep(100000);
	}
	kill(proxy_pid, SIGKILL);
	waitpid(proxy_pid, NULL, 0);
	proxy_pid = 0;
}

/* Sends one control command and returns its one-line answer in ans. */
static void proxy_cmd(const char *cmd, char *ans, size_t n)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(control_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t got = 0;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(write(fd, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
	ck_assert_int_eq(write(fd, "\n", 1), 1);
	while (got < n - 1) {
		ssize_t r = read(fd, ans + got, n - 1 - got);

		if (r <= 0)
			break;
		got += (size_t)r;
		if (ans[got - 1] == '\n')
			break;
	}
	ans[got] = '\0';
	close(fd);
}

struct pstats {
	long requests, down, up, actions, conns;
};

static struct pstats proxy_stats(void)
{
	struct pstats p;
	char ans[256];

	proxy_cmd("stats", ans, sizeof(ans));
	ck_assert_int_eq(sscanf(ans, "requests %ld down %ld up %ld actions %ld connections %ld",
				&p.requests, &p.down, &p.up, &p.actions, &p.conns),
			 5);
	return p;
}

static void proxy_push(const char *actions)
{
	char cmd[512], ans[64];

	proxy_cmd("clear", ans, sizeof(ans));
	snprintf(cmd, sizeof(cmd), "push %s", actions);
	proxy_cmd(cmd, ans, sizeof(ans));
	ck_assert_str_eq(ans, "ok\n");
}

/* -- listing -------------------------------------------------------------- */

struct upload {
	struct s3 *s;
	int from, to, err;
};

static void *upload_part(void *arg)
{
	struct upload *u = arg;
	char key[64], body[16];

	for (int i = u->from; i < u->to && !u->err; i++) {
		snprintf(key, sizeof(key), "list10k/obj%05d", i);
		snprintf(body, sizeof(body), "%d", i);
		u->err = s3_put(u->s, key, body, strlen(body), NULL);
	}
	return NULL;
}

struct seen {
	int n, bad;
	char prev[64];
};

static int count_obj(void *arg, const struct s3_obj *o)
{
	struct seen *v = arg;
	char want[64];

	snprintf(want, sizeof(want), "list10k/obj%05d", v->n);
	if (strcmp(o->key, want) || o->st.size != (uint64_t)snprintf(NULL, 0, "%d", v->n) ||
	    strlen(o->st.etag) < 3 || o->st.mtime < 1600000000)
		v->bad++;
	v->n++;
	return 0;
}

START_TEST(test_list_10k_paginated)
{
	struct s3 *s = open_rgw();
	struct upload u[NUP];
	pthread_t t[NUP];
	struct seen v = { 0 };
	double t0;
	int rc;

	/* The threads share one client: its handle pool serves them all. */
	t0 = now();
	for (int i = 0; i < NUP; i++) {
		u[i] = (struct upload){ s, i * NLIST / NUP, (i + 1) * NLIST / NUP, 0 };
		pthread_create(&t[i], NULL, upload_part, &u[i]);
	}
	for (int i = 0; i < NUP; i++) {
		pthread_join(t[i], NULL);
		ck_assert_msg(u[i].err == 0, "upload: %s (%s)", strerror(-u[i].err), last_log);
	}
	fprintf(stderr, "check_s3: uploaded %d objects in %.2f s\n", NLIST, now() - t0);
	t0 = now();
	rc = s3_list(s, "list10k/", count_obj, &v);
	double dt = now() - t0;

	fprintf(stderr, "check_s3: listed %d objects (ListObjectsV2, 1000 a page) in %.3f s\n", v.n,
		dt);
	ck_assert_msg(rc == 0, "list: %s (%s)", strerror(-rc), last_log);
	ck_assert_int_eq(v.n, NLIST);
	ck_assert_int_eq(v.bad, 0);
	/* A deadline, not a benchmark: the target is 2 s, a broken pager never ends. */
	ck_assert_msg(dt < 30, "listing took %.1f s", dt);
	s3_close(s);
}
END_TEST

static int stop_at_3(void *arg, const struct s3_obj *o)
{
	(void)o;
	return ++*(int *)arg == 3 ? 42 : 0;
}

START_TEST(test_list_stops_on_callback)
{
	struct s3 *s = open_rgw();
	int n = 0;

	for (int i = 0; i < 5; i++) {
		char key[32];

		snprintf(key, sizeof(key), "stop/%d", i);
		put_ok(s, key, "x", 1, NULL);
	}
	ck_assert_int_eq(s3_list(s, "stop/", stop_at_3, &n), 42);
	ck_assert_int_eq(n, 3);
	s3_close(s);
}
END_TEST

/* Keys with bytes that must be percent-encoded, in the path and in a prefix. */
static const char *const odd_keys[] = { "odd/a b/c+d&e=f%g.txt", "odd/a b/sp ace",
					"odd/a b/\xc3\xbc-umlaut", "odd/a b/x?y#z",
					"odd/a b/amp&lt;<tag>" };

static int collect(void *arg, const struct s3_obj *o)
{
	char *list = arg;

	strcat(list, o->key);
	strcat(list, "\n");
	return 0;
}

START_TEST(test_odd_keys)
{
	struct s3 *s = open_rgw();
	char listed[1024] = "", want[1024] = "", buf[64];
	const char *sorted[5];
	size_t n = sizeof(odd_keys) / sizeof(odd_keys[0]);

	for (size_t i = 0; i < n; i++) {
		put_ok(s, odd_keys[i], odd_keys[i], strlen(odd_keys[i]), NULL);
		ssize_t r = s3_get_range(s, odd_keys[i], NULL, 0, sizeof(buf), buf);

		ck_assert_msg(r == (ssize_t)strlen(odd_keys[i]), "GET %s: %zd (%s)", odd_keys[i], r,
			      last_log);
		ck_assert(!memcmp(buf, odd_keys[i], (size_t)r));
		sorted[i] = odd_keys[i];
	}
	/* The listing is in byte order. */
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (strcmp(sorted[j], sorted[i]) < 0) {
				const char *x = sorted[i];

				sorted[i] = sorted[j];
				sorted[j] = x;
			}
	for (size_t i = 0; i < n; i++)
		strcat(strcat(want, sorted[i]), "\n");
	ck_assert_int_eq(s3_list(s, "odd/a b/", collect, listed), 0);
	ck_assert_str_eq(listed, want);
	s3_close(s);
}
END_TEST

/* -- HEAD and ranged GET -------------------------------------------------- */

static void check_range(struct s3 *s, const char *key, const unsigned char *ref, size_t size,
			uint64_t off, size_t len)
{
	unsigned char *buf = malloc(len ? len : 1);
	size_t want = off >= size ? 0 : (size - off < len ? size - off : len);
	ssize_t r;

	ck_assert_ptr_nonnull(buf);
	r = s3_get_range(s, key, NULL, off, len, buf);
	ck_assert_msg(r == (ssize_t)want, "GET %s at %llu+%zu: %zd, want %zu (%s)", key,
		      (unsigned long long)off, len, r, want, last_log);
	ck_assert_msg(!memcmp(buf, ref + off, want), "GET %s at %llu+%zu: wrong bytes", key,
		      (unsigned long long)off, len);
	free(buf);
}

START_TEST(test_range_exact)
{
	struct s3 *s = open_rgw();
	unsigned char *ref = pattern(BIG_SIZE, 7);
	char etag[80];
	struct s3_stat st;
	uint32_t x = 12345;

	put_ok(s, "range/big", ref, BIG_SIZE, etag);
	ck_assert_int_eq(s3_head(s, "range/big", &st), 0);
	ck_assert_uint_eq(st.size, BIG_SIZE);
	ck_assert_str_eq(st.etag, etag);
	ck_assert_int_le(llabs((long long)(st.mtime - time(NULL))), 600);
	check_range(s, "range/big", ref, BIG_SIZE, BIG_SIZE - 1, 1);	 /* the last byte */
	check_range(s, "range/big", ref, BIG_SIZE, BIG_SIZE - 10, 100);	 /* short at the end */
	check_range(s, "range/big", ref, BIG_SIZE, BIG_SIZE, 10);	 /* at the end: 0 */
	check_range(s, "range/big", ref, BIG_SIZE, BIG_SIZE + 5000, 10); /* past it: 0 */
	check_range(s, "range/big", ref, BIG_SIZE, 0, BIG_SIZE + 1000);	 /* all of it, and more */
	check_range(s, "range/big", ref, BIG_SIZE, 0, 0);
	for (int i = 0; i < 200; i++) {
		uint64_t off = lcg(&x) % BIG_SIZE;
		size_t len = 1 + lcg(&x) % (i % 4 == 0 ? 300000 : 5000);

		check_range(s, "range/big", ref, BIG_SIZE, off, len);
	}
	free(ref);
	s3_close(s);
}
END_TEST

START_TEST(test_if_match_stale)
{
	struct s3 *s = open_rgw();
	unsigned char *v1 = pattern(100000, 1), *v2 = pattern(100000, 2), buf[4096];
	char e1[80], e2[80];

	put_ok(s, "stale/obj", v1, 100000, e1);
	ck_assert_int_eq(s3_get_range(s, "stale/obj", e1, 5000, sizeof(buf), buf), sizeof(buf));
	ck_assert(!memcmp(buf, v1 + 5000, sizeof(buf)));
	put_ok(s, "stale/obj", v2, 100000, e2);
	ck_assert_str_ne(e1, e2);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(s3_get_range(s, "stale/obj", e1, 5000, sizeof(buf), buf), -ESTALE);
	ck_assert_msg(strstr(last_log, "stale/obj") && strstr(last_log, "412"), "log: %s",
		      last_log);
	ck_assert_int_eq(s3_get_range(s, "stale/obj", e2, 5000, sizeof(buf), buf), sizeof(buf));
	ck_assert_int_eq(s3_get_range(s, "stale/obj", "\"x\"\r\nRange: bytes=0-1", 0, 9, buf),
			 -EINVAL);
	ck_assert(!memcmp(buf, v2 + 5000, sizeof(buf)));
	free(v1);
	free(v2);
	s3_close(s);
}
END_TEST

START_TEST(test_missing_enoent)
{
	struct s3 *s = open_rgw();
	struct s3_stat st;
	char buf[16];

	ck_assert_int_eq(s3_get_range(s, "no/such/key", NULL, 0, sizeof(buf), buf), -ENOENT);
	ck_assert_msg(strstr(last_log, "GET zmount-test/no/such/key: HTTP 404 NoSuchKey"),
		      "log: %s", last_log);
	ck_assert_int_eq(s3_head(s, "no/such/key", &st), -ENOENT);
	s3_close(s);
}
END_TEST

/* DELETE removes the object (a shared index proven wrong); a missing key is no error to S3. */
START_TEST(test_delete)
{
	struct s3 *s = open_rgw();
	struct s3_stat st;

	put_ok(s, "del/one", "gone soon", 9, NULL);
	ck_assert_int_eq(s3_head(s, "del/one", &st), 0);
	ck_assert_int_eq(s3_delete(s, "del/one"), 0);
	ck_assert_int_eq(s3_head(s, "del/one", &st), -ENOENT);
	ck_assert_int_eq(s3_delete(s, "del/one"), 0);
	s3_close(s);
}
END_TEST

START_TEST(test_bad_keys_eacces)
{
	struct s3cred bad = { cred->access_key, "wrong-secret-SHOULD-NOT-APPEAR", NULL };
	struct s3cred unknown = { "NOSUCHACCESSKEY", "another-secret-NOT-LOGGED", NULL };
	struct s3 *s = open_at(endpoint, &bad, 3, 10000);
	struct s3 *u = open_at(endpoint, &unknown, 3, 10000);
	char buf[16];
	int n = 0;

	ck_assert_int_eq(s3_get_range(s, "range/big", NULL, 0, sizeof(buf), buf), -EACCES);
	ck_assert_msg(strstr(last_log, "range/big") && strstr(last_log, "403") &&
			      strstr(last_log, "(1 attempt)"),
		      "log: %s", last_log);
	ck_assert_ptr_null(strstr(last_log, "SHOULD-NOT-APPEAR"));
	ck_assert_int_eq(s3_list(s, "", stop_at_3, &n), -EACCES);
	ck_assert_int_eq(s3_get_range(u, "range/big", NULL, 0, sizeof(buf), buf), -EACCES);
	ck_assert_ptr_null(strstr(last_log, "NOT-LOGGED"));
	s3_close(s);
	s3_close(u);
}
END_TEST

START_TEST(test_unreachable)
{
	/* A port nobody listens on: refused at once, retried, then one error. */
	struct s3 *s = open_at("http://127.0.0.1:1", cred, 1, 2000);
	char buf[16];

	ck_assert_int_eq(s3_get_range(s, "k", NULL, 0, sizeof(buf), buf), -ECONNREFUSED);
	ck_assert_msg(strstr(last_log, "(2 attempts)"), "log: %s", last_log);
	s3_close(s);
}
END_TEST

/* -- faults, through the proxy -------------------------------------------- */

START_TEST(test_retry_recovers)
{
	struct s3 *s = open_at(proxy_url, cred, 6, 1000), *direct = open_rgw();
	unsigned char *ref = pattern(BIG_SIZE, 7), *buf = malloc(300000);
	struct s3_stat st;
	struct pstats p;
	int n = 0;

	ck_assert_ptr_nonnull(buf);
	put_ok(direct, "range/big", ref, BIG_SIZE, NULL);
	s3_close(direct);
	/* One of each fault, then the seventh attempt passes. */
	proxy_push("503 429 reset cut:100 cut:1000 delay:3000");
	ssize_t r = s3_get_range(s, "range/big", NULL, 1000000, 300000, buf);

	ck_assert_msg(r == 300000, "GET: %zd (%s)", r, last_log);
	ck_assert(!memcmp(buf, ref + 1000000, 300000));
	p = proxy_stats();
	ck_assert_int_eq(p.actions, 6);
	ck_assert_int_eq(p.requests, 7);
	ck_assert_str_eq(last_log, ""); /* recovered: nothing to report */
	proxy_push("503 reset");
	ck_assert_int_eq(s3_head(s, "range/big", &st), 0);
	ck_assert_uint_eq(st.size, BIG_SIZE);
	proxy_push("reset 503 cut:50");
	ck_assert_int_eq(s3_list(s, "stop/", stop_at_3, &n), 42);
	free(ref);
	free(buf);
	s3_close(s);
}
END_TEST

START_TEST(test_retries_exhausted)
{
	struct s3 *s = open_at(proxy_url, cred, 2, 1000);
	char buf[16];

	proxy_push("503 503 503");
	ck_assert_int_eq(s3_get_range(s, "range/big", NULL, 0, sizeof(buf), buf), -EIO);
	ck_assert_msg(strstr(last_log, "range/big: HTTP 503 SlowDown (3 attempts)"), "log: %s",
		      last_log);
	ck_assert_int_eq(proxy_stats().requests, 3);
	/* The schedule is used up: the next call passes. */
	ck_assert_int_eq(s3_get_range(s, "range/big", NULL, 0, sizeof(buf), buf), sizeof(buf));
	proxy_push("429 429 429");
	ck_assert_int_eq(s3_get_range(s, "range/big", NULL, 0, sizeof(buf), buf), -EIO);
	ck_assert_msg(strstr(last_log, "429"), "log: %s", last_log);
	s3_close(s);
}
END_TEST

START_TEST(test_no_hang)
{
	/* Every attempt stalls: three attempts of 500 ms, then -ETIMEDOUT. */
	struct s3 *s = open_at(proxy_url, cred, 2, 500);
	char buf[16];
	double t0 = now();

	proxy_push("delay:60000 delay:60000 delay:60000");
	ck_assert_int_eq(s3_get_range(s, "range/big", NULL, 0, sizeof(buf), buf), -ETIMEDOUT);
	ck_assert_msg(now() - t0 < 15, "took %.1f s", now() - t0);
	ck_assert_msg(strstr(last_log, "range/big") && strstr(last_log, "(3 attempts)"), "log: %s",
		      last_log);
	s3_close(s);
}
END_TEST

START_TEST(test_final_errors_not_retried)
{
	struct s3 *s = open_at(proxy_url, cred, 5, 1000);
	char buf[16];

	proxy_push("pass");
	ck_assert_int_eq(s3_get_range(s, "no/such/key", NULL, 0, sizeof(buf), buf), -ENOENT);
	ck_assert_int_eq(proxy_stats().requests, 1);
	s3_close(s);
}
END_TEST

START_TEST(test_bytes_counted)
{
	/* A ranged GET fetches the range plus headers, not the object. */
	struct s3 *s = open_at(proxy_url, cred, 0, 5000);
	unsigned char *buf = malloc(10000);
	struct pstats p;

	proxy_push("pass");
	ck_assert_int_eq(s3_get_range(s, "range/big", NULL, 123456, 10000, buf), 10000);
	p = proxy_stats();
	ck_assert_int_ge(p.down, 10000);
	ck_assert_msg(p.down < 10000 + 2048, "%ld bytes down for 10000", p.down);
	free(buf);
	s3_close(s);
}
END_TEST

START_TEST(test_connection_reused)
{
	/* Twenty requests, one after the other, over one connection. */
	struct s3 *s = open_at(proxy_url, cred, 0, 5000);
	struct s3_stat st;
	char buf[100];
	struct pstats p;

	proxy_push("pass");
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(
			s3_get_range(s, "range/big", NULL, (uint64_t)i * 1000, sizeof(buf), buf),
			sizeof(buf));
		ck_assert_int_eq(s3_head(s, "range/big", &st), 0);
	}
	p = proxy_stats();
	ck_assert_int_eq(p.requests, 20);
	ck_assert_int_eq(p.conns, 1);
	s3_close(s);
}
END_TEST

/* -- credentials (no server) ---------------------------------------------- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(test_cred_sources)
{
	char dir[] = "/tmp/check_s3.XXXXXX", path[256], err[256];
	struct s3cred *c;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/credentials", dir);
	write_file(path,
		   "# comment\n[default]\naws_access_key_id = AK1\naws_secret_access_key=SK1\n"
		   "\n[other]\n  aws_access_key_id=AK2 \naws_secret_access_key = SK2\n"
		   "aws_session_token = TOK2\nregion = eu\n[half]\naws_access_key_id = AK3\n");
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_PROFILE");
	ck_assert_int_eq(s3cred_load(path, NULL, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c->access_key, "AK1");
	ck_assert_str_eq(c->secret_key, "SK1");
	ck_assert_ptr_null(c->session_token);
	s3cred_free(c);
	setenv("AWS_PROFILE", "other", 1);
	ck_assert_int_eq(s3cred_load(path, NULL, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c->access_key, "AK2");
	ck_assert_str_eq(c->session_token, "TOK2");
	s3cred_free(c);
	/* A profile without its secret, or none at all: -ENOENT, and no value said. */
	ck_assert_int_eq(s3cred_load(path, "half", &c, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_null(c);
	ck_assert_ptr_null(strstr(err, "AK3"));
	ck_assert_int_eq(s3cred_load(path, "nope", &c, err, sizeof(err)), -ENOENT);
	/* The shared file through HOME, then the environment first. */
	setenv("HOME", dir, 1);
	snprintf(path, sizeof(path), "%s/.aws", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/.aws/credentials", dir);
	write_file(path, "[other]\naws_access_key_id=HK\naws_secret_access_key=HS\n");
	ck_assert_int_eq(s3cred_load(NULL, NULL, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c->access_key, "HK");
	s3cred_free(c);
	setenv("AWS_ACCESS_KEY_ID", "EK", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "ES", 1);
	setenv("AWS_SESSION_TOKEN", "ET", 1);
	ck_assert_int_eq(s3cred_load(NULL, NULL, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c->access_key, "EK");
	ck_assert_str_eq(c->secret_key, "ES");
	ck_assert_str_eq(c->session_token, "ET");
	s3cred_free(c);
	/* A line that is neither: -EINVAL naming the line, not its text. */
	write_file(path, "[default]\naws_secret_access_key SECRETVALUE\n");
	ck_assert_int_eq(s3cred_load(path, "default", &c, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, ":2:") && !strstr(err, "SECRETVALUE"), "err: %s", err);
	snprintf(path, sizeof(path), "%s/missing", dir);
	ck_assert_int_eq(s3cred_load(path, NULL, &c, err, sizeof(err)), -ENOENT);
	/* Clean up the scratch directory. */
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

START_TEST(test_open_rejects)
{
	struct s3 *s = (struct s3 *)1;

	ck_assert_int_eq(s3_open("ftp://x", "us-east-1", "b", cred, NULL, &s), -EINVAL);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(s3_open("http://x", "us-east-1", "a/b", cred, NULL, &s), -EINVAL);
	ck_assert_int_eq(s3_open("http://x\n", "us-east-1", "b", cred, NULL, &s), -EINVAL);
	ck_assert_int_eq(s3_open("http://x", "", "b", cred, NULL, &s), -EINVAL);
	s3_close(NULL);
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
		fprintf(stderr, "check_s3: FAIL: cannot read %s (did tests/s3/rgw.sh up %s run?)\n",
			path, dir);
		exit(1);
	}
	fclose(f);
	dst[strcspn(dst, "\n")] = '\0';
}

static void load_server(void)
{
	const char *dir = getenv("ZMOUNT_S3_DIR");
	char err[256];

	if (!dir || !*dir) {
		fprintf(stderr, "check_s3: FAIL: ZMOUNT_S3_DIR is not set; run through ctest "
				"(the s3_rgw fixture), or: tests/s3/rgw.sh up DIR; "
				"ZMOUNT_S3_DIR=DIR check_s3\n");
		exit(1);
	}
	read_line(dir, "endpoint", endpoint, sizeof(endpoint));
	read_line(dir, "bucket", bucket, sizeof(bucket));
	snprintf(credfile, sizeof(credfile), "%s/credentials", dir);
	if (s3cred_load(credfile, "default", &cred, err, sizeof(err))) {
		fprintf(stderr, "check_s3: FAIL: %s\n", err);
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
	const TTest *const plain[] = { test_cred_sources, test_open_rejects, NULL };
	const TTest *const rgw[] = { test_list_10k_paginated,
				     test_list_stops_on_callback,
				     test_odd_keys,
				     test_range_exact,
				     test_if_match_stale,
				     test_missing_enoent,
				     test_delete,
				     test_bad_keys_eacces,
				     test_unreachable,
				     NULL };
	const TTest *const faults[] = { test_retry_recovers,
					test_retries_exhausted,
					test_no_hang,
					test_final_errors_not_retried,
					test_bytes_counted,
					test_connection_reused,
					NULL };
	Suite *su = suite_create("s3");
	SRunner *sr;
	TCase *f;
	int failed;

	load_server();
	suite_add_tcase(su, tc("cred", 10, plain));
	suite_add_tcase(su, tc("rgw", 600, rgw));
	f = tc("faults", 60, faults);
	tcase_add_unchecked_fixture(f, proxy_start, proxy_stop);
	suite_add_tcase(su, f);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	s3cred_free(cred);
	return failed ? 1 : 0;
}
