/* SPDX-License-Identifier: MIT */
/*
 * Tests for the listing loop of source/s3.c against a fake S3 server that
 * runs in the test process: a thread on 127.0.0.1 that answers every GET
 * with a ListObjectsV2 page made by the test's mode (a server that repeats
 * its continuation token, hands out empty truncated pages, never ends...).
 * It counts the requests, so each test bounds the listing by requests, not
 * by time.  No gateway is needed.
 *
 * The server is started inside each test (Check forks a test into a child
 * process, which would not inherit a thread of the parent).
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "s3.h"
#include "s3cred.h"
#include "s3hint.h"

/* A server mode answering the old, looping code ends its listing after this many requests. */
#define OLD_CODE_STOP 100

enum mode {
	M_REPEAT,   /* a new key on every page, always the token "same" */
	M_CYCLE,    /* tokens A, B, A, B, ... with new keys */
	M_EMPTY,    /* truncated pages with no key and a new token each */
	M_SAMEPAGE, /* ignores the token: the same two keys, a new token each time */
	M_ENDLESS,  /* a new key and a new token on every page */
	M_THREE,    /* three good pages, then the end */
	M_DIRS,	    /* delimiter listings: common prefixes (s3_list_dir) */
};

static enum mode mode;
static atomic_int nreq;
static int lfd = -1, port;
static char last_log[1024];
static char last_query[2048];

static void keep_log(void *arg, const char *line)
{
	(void)arg;
	snprintf(last_log, sizeof(last_log), "%s", line);
}

/* The value of name= in the query q, into dst ("" if absent; not decoded). */
static void query_arg(const char *q, const char *name, char *dst, size_t n)
{
	size_t len = strlen(name);
	const char *p = q;

	dst[0] = '\0';
	while (p && *p) {
		if (!strncmp(p, name, len) && p[len] == '=') {
			size_t k = strcspn(p + len + 1, "& ");

			if (k >= n)
				k = n - 1;
			memcpy(dst, p + len + 1, k);
			dst[k] = '\0';
			return;
		}
		p = strchr(p, '&');
		if (p)
			p++;
	}
}

/* The body of the answer to request no. i (1-based) with query q. */
static void page(int i, const char *q, char *body, size_t n)
{
	char token[256], contents[1024] = "", next[256] = "";
	int truncated = 1;
	FILE *f;

	query_arg(q, "continuation-token", token, sizeof(token));
	switch (mode) {
	case M_REPEAT:
		snprintf(contents, sizeof(contents),
			 "<Contents><Key>k%04d</Key><Size>1</Size>"
			 "<ETag>\"e\"</ETag></Contents>",
			 i);
		snprintf(next, sizeof(next), "same");
		break;
	case M_CYCLE:
		snprintf(contents, sizeof(contents),
			 "<Contents><Key>k%04d</Key><Size>1</Size>"
			 "<ETag>\"e\"</ETag></Contents>",
			 i);
		snprintf(next, sizeof(next), "%s", i % 2 ? "A" : "B");
		break;
	case M_EMPTY:
		snprintf(next, sizeof(next), "t%d", i);
		break;
	case M_SAMEPAGE:
		snprintf(contents, sizeof(contents),
			 "<Contents><Key>a</Key><Size>1</Size><ETag>\"e\"</ETag></Contents>"
			 "<Contents><Key>b</Key><Size>1</Size><ETag>\"e\"</ETag></Contents>");
		snprintf(next, sizeof(next), "t%d", i);
		break;
	case M_ENDLESS:
		snprintf(contents, sizeof(contents),
			 "<Contents><Key>k%04d</Key><Size>1</Size>"
			 "<ETag>\"e\"</ETag></Contents>",
			 i);
		snprintf(next, sizeof(next), "t%d", i);
		break;
	case M_THREE:
		snprintf(contents, sizeof(contents),
			 "<Contents><Key>k%04d</Key><Size>1</Size>"
			 "<ETag>\"e\"</ETag></Contents>",
			 i);
		snprintf(next, sizeof(next), "t%d", i);
		truncated = i < 3;
		break;
	case M_DIRS: {
		char prefix[256];

		/* The bucket: readme, data/..., logs/x.gz, logs/app/..., logs/web/... */
		query_arg(q, "prefix", prefix, sizeof(prefix));
		if (!strcmp(prefix, ""))
			snprintf(contents, sizeof(contents),
				 "<Contents><Key>readme</Key><Size>1</Size><ETag>\"e\"</ETag>"
				 "</Contents><CommonPrefixes><Prefix>data/</Prefix>"
				 "</CommonPrefixes><CommonPrefixes><Prefix>logs/</Prefix>"
				 "</CommonPrefixes>");
		else if (!strcmp(prefix, "logs%2F"))
			snprintf(contents, sizeof(contents),
				 "<Contents><Key>logs/x.gz</Key><Size>1</Size><ETag>\"e\"</ETag>"
				 "</Contents><CommonPrefixes><Prefix>logs/app/</Prefix>"
				 "</CommonPrefixes><CommonPrefixes><Prefix>logs/web/</Prefix>"
				 "</CommonPrefixes>");
		truncated = 0;
		break;
	}
	}
	if (i >= OLD_CODE_STOP)
		truncated = 0;
	f = fmemopen(body, n, "w");
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Name>b</Name><IsTruncated>%s</IsTruncated>%s",
		truncated ? "true" : "false", contents);
	if (truncated)
		fprintf(f, "<NextContinuationToken>%s</NextContinuationToken>", next);
	fprintf(f, "</ListBucketResult>");
	fputc('\0', f);
	fclose(f);
}

static void *serve(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept(lfd, NULL, NULL), i;
		char req[8192], body[4096], head[256];
		size_t got = 0;
		ssize_t r;

		if (c < 0)
			return NULL;
		while (got < sizeof(req) - 1 &&
		       (r = read(c, req + got, sizeof(req) - 1 - got)) > 0) {
			got += (size_t)r;
			req[got] = '\0';
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		req[got] = '\0';
		i = atomic_fetch_add(&nreq, 1) + 1;
		char *q = strchr(req, '?');

		snprintf(last_query, sizeof(last_query), "%.*s", q ? (int)strcspn(q + 1, " ") : 0,
			 q ? q + 1 : "");
		page(i, q ? q + 1 : "", body, sizeof(body));
		snprintf(head, sizeof(head),
			 "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			 strlen(body));
		if (write(c, head, strlen(head)) < 0 || write(c, body, strlen(body)) < 0)
			(void)0;
		close(c);
	}
}

static unsigned pages_max; /* for the next start(): opts.list_pages_max */

/* Starts the fake server in mode m and opens a client of it (no retry). */
static struct s3 *start(enum mode m)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	struct s3cred *cred;
	struct s3_opts o;
	char ep[64];
	pthread_t t;
	struct s3 *s;

	mode = m;
	atomic_store(&nreq, 0);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(lfd, 16), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&t, NULL, serve, NULL), 0);
	pthread_detach(t);
	setenv("AWS_ACCESS_KEY_ID", "AKTEST", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
	ck_assert_int_eq(s3cred_load(NULL, NULL, &cred, last_log, sizeof(last_log)), 0);
	s3_opts_default(&o);
	o.retries = 0;
	o.timeout_ms = 5000;
	o.log = keep_log;
	o.list_pages_max = pages_max;
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", port);
	last_log[0] = '\0';
	ck_assert_int_eq(s3_open(ep, "us-east-1", "b", cred, &o, &s), 0);
	s3cred_free(cred);
	return s;
}

static int count_cb(void *arg, const struct s3_obj *o)
{
	(void)o;
	++*(int *)arg;
	return 0;
}

/* Lists "logs/" in the current mode; returns s3_list's answer, the keys in *keys. */
static int list(struct s3 *s, int *keys)
{
	*keys = 0;
	return s3_list(s, "logs/", count_cb, keys);
}

/* -- tests ------------------------------------------------------------------ */

START_TEST(test_repeated_token_stops)
{
	struct s3 *s = start(M_REPEAT);
	int keys, rc = list(s, &keys), n = atomic_load(&nreq);

	ck_assert_msg(rc == -EIO && n <= 2, "s3_list gave %d (%s) after %d requests, %d keys", rc,
		      rc ? strerror(-rc) : "no error", n, keys);
	printf("repeated token: %s\n", last_log);
	ck_assert_msg(strstr(last_log, "continuation token") && strstr(last_log, "b/logs/"),
		      "the log line: '%s'", last_log);
	s3_close(s);
}
END_TEST

START_TEST(test_token_cycle_stops)
{
	struct s3 *s = start(M_CYCLE);
	int keys, rc = list(s, &keys), n = atomic_load(&nreq);

	ck_assert_msg(rc == -EIO && n <= 3, "s3_list gave %d after %d requests, %d keys", rc, n,
		      keys);
	ck_assert_msg(strstr(last_log, "continuation token"), "the log line: '%s'", last_log);
	s3_close(s);
}
END_TEST

START_TEST(test_empty_truncated_pages_stop)
{
	struct s3 *s = start(M_EMPTY);
	int keys, rc = list(s, &keys), n = atomic_load(&nreq);

	ck_assert_msg(rc == -EIO && n <= 4, "s3_list gave %d after %d requests", rc, n);
	ck_assert_msg(strstr(last_log, "added no key"), "the log line: '%s'", last_log);
	s3_close(s);
}
END_TEST

START_TEST(test_same_page_again_stops)
{
	struct s3 *s = start(M_SAMEPAGE);
	int keys, rc = list(s, &keys), n = atomic_load(&nreq);

	ck_assert_msg(rc == -EIO && n <= 2, "s3_list gave %d after %d requests, %d keys", rc, n,
		      keys);
	ck_assert_msg(strstr(last_log, "already"), "the log line: '%s'", last_log);
	s3_close(s);
}
END_TEST

START_TEST(test_page_bound)
{
	struct s3 *s;
	int keys, rc, n;

	pages_max = 5;
	s = start(M_ENDLESS);
	rc = list(s, &keys);
	n = atomic_load(&nreq);
	ck_assert_msg(rc == -EIO && n == 5 && keys == 5,
		      "s3_list gave %d after %d requests, %d keys", rc, n, keys);
	ck_assert_msg(strstr(last_log, "more than 5 pages"), "the log line: '%s'", last_log);
	s3_close(s);
}
END_TEST

START_TEST(test_good_pages_listed)
{
	struct s3 *s = start(M_THREE);
	int keys, rc = list(s, &keys), n = atomic_load(&nreq);

	ck_assert_msg(rc == 0 && keys == 3 && n == 3, "s3_list gave %d after %d requests, %d keys",
		      rc, n, keys);
	s3_close(s);
}
END_TEST

static int dir_cb(void *arg, const struct s3_obj *o)
{
	char *out = arg;

	strcat(out, o->key);
	strcat(out, o->dir ? "(dir) " : " ");
	return 0;
}

START_TEST(test_list_dir)
{
	struct s3 *s = start(M_DIRS);
	char got[512] = "";

	ck_assert_int_eq(s3_list_dir(s, "logs/", dir_cb, got), 0);
	ck_assert_str_eq(got, "logs/x.gz logs/app/(dir) logs/web/(dir) ");
	ck_assert_msg(strstr(last_query, "delimiter=%2F"), "query: %s", last_query);
	s3_close(s);
}
END_TEST

START_TEST(test_hint_typo)
{
	struct s3 *s = start(M_DIRS);
	char line[512];

	ck_assert_int_eq(s3hint_empty(s, "b", "logz/", line, sizeof(line)), 1);
	ck_assert_str_eq(line, "s3://b/logz/: no objects; did you mean s3://b/logs/?");
	ck_assert_int_eq(s3hint_empty(s, "b", "logs/ap", line, sizeof(line)), 1);
	ck_assert_str_eq(line, "s3://b/logs/ap/: no objects; did you mean s3://b/logs/app/?");
	ck_assert_int_eq(s3hint_empty(s, "b", "logs/wbe", line, sizeof(line)), 1);
	ck_assert_str_eq(line, "s3://b/logs/wbe/: no objects; did you mean s3://b/logs/web/?");
	ck_assert_int_eq(atomic_load(&nreq), 3); /* one listing each */
	s3_close(s);
}
END_TEST

START_TEST(test_hint_nothing_near)
{
	struct s3 *s = start(M_DIRS);
	char line[512];

	ck_assert_int_eq(s3hint_empty(s, "b", "zzzzzz", line, sizeof(line)), 0);
	ck_assert_str_eq(line, "s3://b/zzzzzz/: no objects (s3://b/ has 2 other prefixes, none "
			       "near \"zzzzzz\")");
	ck_assert_int_eq(s3hint_empty(s, "b", "nope/x/", line, sizeof(line)), 0);
	ck_assert_str_eq(line, "s3://b/nope/x/: no objects, and s3://b/nope/ is empty too");
	ck_assert_int_eq(s3hint_empty(s, "b", "", line, sizeof(line)), 0);
	ck_assert_str_eq(line, "s3://b/: no objects");
	ck_assert_int_eq(atomic_load(&nreq), 2);
	s3_close(s);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("s3list");
	TCase *c = tcase_create("loop");
	SRunner *sr;
	int failed;

	tcase_set_timeout(c, 20);
	tcase_add_test(c, test_repeated_token_stops);
	tcase_add_test(c, test_token_cycle_stops);
	tcase_add_test(c, test_empty_truncated_pages_stop);
	tcase_add_test(c, test_same_page_again_stops);
	tcase_add_test(c, test_page_bound);
	tcase_add_test(c, test_good_pages_listed);
	tcase_add_test(c, test_list_dir);
	tcase_add_test(c, test_hint_typo);
	tcase_add_test(c, test_hint_nothing_near);
	suite_add_tcase(su, c);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
