/* SPDX-License-Identifier: MIT */
/*
 * How it works.  Every call builds one request (a struct req: method, URL,
 * headers, where the body goes) and hands it to run(), which takes a curl
 * handle from the pool, performs the request, judges the outcome (done,
 * final error, or worth another attempt), sleeps a jittered backoff and
 * tries again, and reports the last error once.  Bodies go straight into
 * the caller's buffer for ranged GETs and into a growing buffer for
 * listings; error answers go to a small side buffer so their <Code> can be
 * logged, and never into the caller's buffer.
 *
 * Signing is libcurl's (CURLOPT_AWS_SIGV4).  It signs the query as given,
 * so query values are percent-encoded here first and the parameters are
 * written in sorted order, as the canonical request wants them.
 */
#include "s3.h"
#include "s3cred.h"

/* Plain declarations: the pointers in libcurl (below) stand for them, not type-checking macros. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define POOL_MAX       16	   /* idle handles kept; more may be in use */
#define BACKOFF_MS     50	   /* the first retry waits up to this */
#define BACKOFF_CAP_MS 2000	   /* and no retry waits longer */
#define LIST_PAGE_MAX  (64u << 20) /* a listing page larger than this is refused */
/*
 * Truncated pages in a row that add nothing before a listing gives up.  More
 * than one: S3 may end a page early, even empty, when it skipped much it
 * does not show; a server that only ever does that would list forever.
 */
#define LIST_EMPTY_MAX 3

struct s3 {
	char *endpoint; /* without a trailing '/' */
	char *bucket;
	char *sigv4; /* "aws:amz:REGION:s3" */
	struct s3cred *cred;
	struct s3_opts o;
	pthread_mutex_t mu;
	CURL *idle[POOL_MAX]; /* protected by mu */
	int nidle;	      /* protected by mu */
};

/* One request and what came back. */
struct req {
	const char *method; /* "GET", "HEAD", "PUT" or "DELETE" */
	const char *key;    /* for the log: the prefix of a listing */
	char *url;
	const char *if_match;
	char range[64];

	/* The body: into buf[0..cap) (fixed), or a growing malloc'ed one. */
	char *buf;
	size_t cap, got;
	int grow;
	int overflow;
	char errbody[512]; /* an error answer's first bytes */
	size_t errgot;

	const char *up; /* PUT body */
	size_t uplen, upoff;

	long status;
	curl_off_t clen;  /* Content-Length, or -1 */
	curl_off_t mtime; /* Last-Modified, or -1 */
	char etag[80];
	char crange[128]; /* Content-Range */
	CURL *h;
};

/*
 * libcurl, loaded at the first s3_open rather than linked: with the
 * libraries it pulls in (TLS, Kerberos, LDAP, ...) it made every start
 * slower, and most mounts and tool runs never use S3.  A mount of an empty
 * directory with the page cache dropped took 41-42 ms linked, 14-19 ms
 * now (8-10 against 6 ms warm); every first-touch figure includes it.
 */
static struct {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *h);
	void (*easy_reset)(CURL *h);
	CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *h);
	CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
	const char *(*easy_strerror)(CURLcode rc);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
} libcurl;

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int global_err; /* s3_open's error once loading or curl_global_init failed */

static void global_init(void)
{
	void *so = dlopen(S3_LIBCURL, RTLD_NOW | RTLD_LOCAL);
	struct {
		const char *name;
		void **fn;
	} syms[] = {
		{ "curl_global_init", (void **)&libcurl.global_init },
		{ "curl_easy_init", (void **)&libcurl.easy_init },
		{ "curl_easy_cleanup", (void **)&libcurl.easy_cleanup },
		{ "curl_easy_reset", (void **)&libcurl.easy_reset },
		{ "curl_easy_setopt", (void **)&libcurl.easy_setopt },
		{ "curl_easy_perform", (void **)&libcurl.easy_perform },
		{ "curl_easy_getinfo", (void **)&libcurl.easy_getinfo },
		{ "curl_easy_strerror", (void **)&libcurl.easy_strerror },
		{ "curl_slist_append", (void **)&libcurl.slist_append },
		{ "curl_slist_free_all", (void **)&libcurl.slist_free_all },
	};

	for (size_t i = 0; so && i < sizeof(syms) / sizeof(syms[0]); i++)
		if (!(*syms[i].fn = dlsym(so, syms[i].name)))
			so = NULL; /* kept loaded: a failed start is not retried */
	if (!so) {
		global_err = -ELIBACC;
		return;
	}
	global_err = libcurl.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -ENOMEM;
}

void s3_opts_default(struct s3_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->retries = 4;
	o->timeout_ms = 30000;
	o->verify_tls = true;
	o->list_pages_max = S3_LIST_PAGES_MAX;
}

static int has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

int s3_open(const char *endpoint, const char *region, const char *bucket, const struct s3cred *cred,
	    const struct s3_opts *opts, struct s3 **out)
{
	struct s3 *s;
	size_t n;

	*out = NULL;
	if (!endpoint || !region || !bucket || !cred || !cred->access_key || !cred->secret_key ||
	    !*region || !*bucket ||
	    (strncmp(endpoint, "http://", 7) && strncmp(endpoint, "https://", 8)) ||
	    has_ctl(endpoint) || has_ctl(region) || has_ctl(bucket) || strchr(bucket, '/'))
		return -EINVAL;
	pthread_once(&global_once, global_init);
	if (global_err)
		return global_err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->mu, NULL);
	s->endpoint = strdup(endpoint);
	s->bucket = strdup(bucket);
	s->cred = s3cred_dup(cred);
	if (asprintf(&s->sigv4, "aws:amz:%s:s3", region) < 0)
		s->sigv4 = NULL;
	if (!s->endpoint || !s->bucket || !s->cred || !s->sigv4) {
		s3_close(s);
		return -ENOMEM;
	}
	n = strlen(s->endpoint);
	while (n > 0 && s->endpoint[n - 1] == '/')
		s->endpoint[--n] = '\0';
	if (opts)
		s->o = *opts;
	else
		s3_opts_default(&s->o);
	if (s->o.retries < 0)
		s->o.retries = 0;
	if (s->o.timeout_ms <= 0)
		s->o.timeout_ms = 30000;
	if (s->o.list_pages_max == 0)
		s->o.list_pages_max = S3_LIST_PAGES_MAX;
	*out = s;
	return 0;
}

void s3_close(struct s3 *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nidle; i++)
		libcurl.easy_cleanup(s->idle[i]);
	pthread_mutex_destroy(&s->mu);
	s3cred_free(s->cred);
	free(s->endpoint);
	free(s->bucket);
	free(s->sigv4);
	free(s);
}

/* -- the handle pool -------------------------------------------------------- */

static CURL *pool_get(struct s3 *s)
{
	CURL *h = NULL;

	pthread_mutex_lock(&s->mu);
	if (s->nidle > 0)
		h = s->idle[--s->nidle];
	pthread_mutex_unlock(&s->mu);
	return h ? h : libcurl.easy_init();
}

static void pool_put(struct s3 *s, CURL *h)
{
	pthread_mutex_lock(&s->mu);
	if (s->nidle < POOL_MAX) {
		s->idle[s->nidle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	if (h)
		libcurl.easy_cleanup(h);
}

/* -- URLs ----------------------------------------------------------------- */

/* Writes s to f, percent-encoding all but RFC 3986 unreserved bytes (and '/' if keep_slash). */
static void put_escaped(FILE *f, const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~' ||
		    (keep_slash && *p == '/'))
			fputc(*p, f);
		else
			fprintf(f, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
	}
}

/* ENDPOINT/BUCKET/KEY, or the bucket's ListObjectsV2 URL when key is NULL. */
static char *make_url(const struct s3 *s, const char *key, const char *prefix, const char *token,
		      int delim)
{
	char *url = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&url, &len);

	if (!f)
		return NULL;
	fprintf(f, "%s/", s->endpoint);
	put_escaped(f, s->bucket, 0);
	if (key) {
		fputc('/', f);
		put_escaped(f, key, 1);
	} else {
		/* Sorted by name: the signature's canonical query is. */
		fputs("?", f);
		if (token) {
			fputs("continuation-token=", f);
			put_escaped(f, token, 0);
			fputs("&", f);
		}
		if (delim)
			fputs("delimiter=%2F&", f);
		fputs("list-type=2&max-keys=1000&prefix=", f);
		put_escaped(f, prefix, 0);
	}
	if (fclose(f) || !url) {
		free(url);
		return NULL;
	}
	return url;
}

/* -- curl callbacks ------------------------------------------------------- */

static size_t on_body(char *data, size_t sz, size_t nm, void *arg)
{
	struct req *r = arg;
	size_t n = sz * nm;
	long st = 0;

	libcurl.easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &st);
	if (st >= 300) {
		size_t room = sizeof(r->errbody) - 1 - r->errgot;

		memcpy(r->errbody + r->errgot, data, n < room ? n : room);
		r->errgot += n < room ? n : room;
		r->errbody[r->errgot] = '\0';
		return n;
	}
	if (r->got + n > r->cap) {
		size_t cap = r->cap ? r->cap : 65536;

		while (cap < r->got + n)
			cap *= 2;
		if (!r->grow || cap > LIST_PAGE_MAX) {
			r->overflow = 1;
			return 0; /* stops the transfer: CURLE_WRITE_ERROR */
		}
		char *nb = realloc(r->buf, cap);

		if (!nb) {
			r->overflow = 1;
			return 0;
		}
		r->buf = nb;
		r->cap = cap;
	}
	memcpy(r->buf + r->got, data, n);
	r->got += n;
	return n;
}

/* Copies header value (after "name:"), blanks trimmed, into dst of cap bytes. */
static void header_value(const char *v, size_t n, char *dst, size_t cap)
{
	while (n && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	if (n >= cap)
		n = 0; /* never a cut value: two ETags cut alike would pass for one version */
	memcpy(dst, v, n);
	dst[n] = '\0';
}

static size_t on_header(char *data, size_t sz, size_t nm, void *arg)
{
	struct req *r = arg;
	size_t n = sz * nm;

	if (n >= 5 && !strncmp(data, "HTTP/", 5)) {
		r->etag[0] = r->crange[0] = '\0'; /* a new response (after 100 Continue) */
	} else if (n > 5 && !strncasecmp(data, "ETag:", 5)) {
		header_value(data + 5, n - 5, r->etag, sizeof(r->etag));
	} else if (n > 14 && !strncasecmp(data, "Content-Range:", 14)) {
		header_value(data + 14, n - 14, r->crange, sizeof(r->crange));
	}
	return n;
}

static size_t on_upload(char *dst, size_t sz, size_t nm, void *arg)
{
	struct req *r = arg;
	size_t n = sz * nm, left = r->uplen - r->upoff;

	if (n > left)
		n = left;
	memcpy(dst, r->up + r->upoff, n);
	r->upoff += n;
	return n;
}

/* -- one attempt, and the retry loop -------------------------------------- */

static struct curl_slist *make_headers(const struct s3 *s, const struct req *r)
{
	struct curl_slist *l = NULL, *t;
	char line[256];

#define ADD(str)                                                                                   \
	do {                                                                                       \
		t = libcurl.slist_append(l, (str));                                                \
		if (!t)                                                                            \
			goto fail;                                                                 \
		l = t;                                                                             \
	} while (0)
	ADD("x-amz-content-sha256: UNSIGNED-PAYLOAD");
	/* No "Expect:" to suppress 100-continue: curl would sign it but not send it. */
	if (r->range[0])
		ADD(r->range);
	if (r->if_match) {
		snprintf(line, sizeof(line), "If-Match: %s", r->if_match);
		ADD(line);
	}
	if (s->cred->session_token) {
		char *tok;

		if (asprintf(&tok, "x-amz-security-token: %s", s->cred->session_token) < 0)
			goto fail;
		t = libcurl.slist_append(l, tok);
		explicit_bzero(tok, strlen(tok));
		free(tok);
		if (!t)
			goto fail;
		l = t;
	}
#undef ADD
	return l;
fail:
	libcurl.slist_free_all(l);
	return NULL;
}

static CURLcode attempt(struct s3 *s, struct req *r, struct curl_slist *hdrs, char *cerr)
{
	CURL *h = r->h;
	CURLcode rc;

	libcurl.easy_reset(h); /* keeps the connection cache */
	r->got = r->errgot = r->upoff = 0;
	r->overflow = 0;
	r->status = 0;
	r->errbody[0] = r->etag[0] = r->crange[0] = cerr[0] = '\0';
	libcurl.easy_setopt(h, CURLOPT_URL, r->url);
	libcurl.easy_setopt(h, CURLOPT_PATH_AS_IS, 1L); /* a key is a name, not a path to tidy */
	libcurl.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	libcurl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	libcurl.easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)s->o.timeout_ms);
	libcurl.easy_setopt(h, CURLOPT_SSL_VERIFYPEER, s->o.verify_tls ? 1L : 0L);
	libcurl.easy_setopt(h, CURLOPT_SSL_VERIFYHOST, s->o.verify_tls ? 2L : 0L);
	libcurl.easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
	libcurl.easy_setopt(h, CURLOPT_USERNAME, s->cred->access_key);
	libcurl.easy_setopt(h, CURLOPT_PASSWORD, s->cred->secret_key);
	libcurl.easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	libcurl.easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	libcurl.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	libcurl.easy_setopt(h, CURLOPT_WRITEDATA, r);
	libcurl.easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	libcurl.easy_setopt(h, CURLOPT_HEADERDATA, r);
	libcurl.easy_setopt(h, CURLOPT_FILETIME, 1L);
	if (!strcmp(r->method, "HEAD")) {
		libcurl.easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(r->method, "PUT")) {
		libcurl.easy_setopt(h, CURLOPT_UPLOAD, 1L);
		libcurl.easy_setopt(h, CURLOPT_READFUNCTION, on_upload);
		libcurl.easy_setopt(h, CURLOPT_READDATA, r);
		libcurl.easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->uplen);
	} else if (!strcmp(r->method, "DELETE")) {
		libcurl.easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
	}
	rc = libcurl.easy_perform(h);
	libcurl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	if (libcurl.easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &r->clen) != CURLE_OK)
		r->clen = -1;
	if (libcurl.easy_getinfo(h, CURLINFO_FILETIME_T, &r->mtime) != CURLE_OK)
		r->mtime = -1;
	return rc;
}

/* Whether a failed transfer may succeed when tried again, and its errno. */
static int curl_errno(CURLcode rc, int *retry)
{
	*retry = 1;
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return -EIO;
	case CURLE_OUT_OF_MEMORY:
		*retry = 0;
		return -ENOMEM;
	default:
		*retry = 0;
		return -EIO;
	}
}

/* Whether rc means that no answer came from the endpoint at all. */
static int no_answer(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_GOT_NOTHING:
		return 1;
	default:
		return 0;
	}
}

static int http_errno(long st, int *retry)
{
	*retry = st >= 500 || st == 429;
	switch (st) {
	case 403:
		return -EACCES;
	case 404:
		return -ENOENT;
	case 412:
		return -ESTALE;
	default:
		return -EIO;
	}
}

/* The <Code> of an S3 error answer, into dst (cap bytes), or "". */
static void err_code(const char *body, char *dst, size_t cap)
{
	const char *a = strstr(body, "<Code>"), *b;
	size_t n;

	dst[0] = '\0';
	if (!a || !(b = strstr(a + 6, "</Code>")))
		return;
	n = (size_t)(b - a - 6) < cap - 1 ? (size_t)(b - a - 6) : cap - 1;
	memcpy(dst, a + 6, n);
	dst[n] = '\0';
	for (char *p = dst; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static void report(const struct s3 *s, const struct req *r, int tries, const char *fmt, ...)
{
	char why[512], line[1200], key[512];
	va_list ap;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	for (i = 0; r->key && r->key[i] && i < sizeof(key) - 1; i++)
		key[i] = (unsigned char)r->key[i] < 0x20 || r->key[i] == 0x7f ? '?' : r->key[i];
	key[i] = '\0';
	snprintf(line, sizeof(line), "s3: %s %s/%s%s: %s (%d attempt%s)",
		 r->grow ? "LIST" : r->method, s->bucket, key, r->grow ? "*" : "", why, tries,
		 tries == 1 ? "" : "s");
	if (s->o.log)
		s->o.log(s->o.log_arg, line);
	else
		fprintf(stderr, "%s\n", line);
}

static void backoff(int attempt_no)
{
	static _Thread_local unsigned seed;
	unsigned cap = BACKOFF_MS << (attempt_no < 6 ? attempt_no : 6);
	struct timespec ts;

	if (!seed)
		seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&seed ^ (unsigned)getpid();
	if (cap > BACKOFF_CAP_MS)
		cap = BACKOFF_CAP_MS;
	unsigned ms = (unsigned)rand_r(&seed) % (cap + 1); /* full jitter */

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
}

/*
 * check, if not NULL, judges a 2xx answer: 0 good, or -errno with *retry and
 * a reason.  Returns 0 with the answer in r, or the last attempt's -errno
 * (reported), or 416 as a positive 416 (no report: the caller decides).
 */
static int run(struct s3 *s, struct req *r,
	       int (*check)(const struct req *r, void *arg, int *retry, char *why, size_t n),
	       void *arg)
{
	struct curl_slist *hdrs = make_headers(s, r);
	char cerr[CURL_ERROR_SIZE], why[512], code[64];
	int err = -ENOMEM, retry, tries = 0;

	r->h = pool_get(s);
	if (!hdrs || !r->h)
		goto out;
	for (;;) {
		CURLcode rc = attempt(s, r, hdrs, cerr);

		tries++;
		if (r->overflow && !r->grow) {
			err = -EIO, retry = 0;
			snprintf(why, sizeof(why), "the answer is longer than asked for");
		} else if (rc != CURLE_OK) {
			err = curl_errno(rc, &retry);
			/* The endpoint may come from a flag, the environment or a default: say it.
			 */
			snprintf(why, sizeof(why), "%s%.160s%s%s",
				 no_answer(rc) ? "cannot reach " : "",
				 no_answer(rc) ? s->endpoint : "", no_answer(rc) ? ": " : "",
				 cerr[0] ? cerr : libcurl.easy_strerror(rc));
		} else if (r->status == 416) {
			err = 416;
			goto out;
		} else if (r->status < 200 || r->status > 299) {
			err = http_errno(r->status, &retry);
			err_code(r->errbody, code, sizeof(code));
			snprintf(why, sizeof(why), "HTTP %ld%s%s", r->status, code[0] ? " " : "",
				 code);
		} else {
			err = check ? check(r, arg, &retry, why, sizeof(why)) : 0;
			if (!err)
				goto out;
		}
		if (!retry || tries > s->o.retries)
			break;
		backoff(tries - 1);
	}
	report(s, r, tries, "%s", why);
out:
	if (r->h) {
		libcurl.easy_reset(r->h); /* drops the pointers to hdrs, cerr and r */
		pool_put(s, r->h);
	}
	libcurl.slist_free_all(hdrs);
	r->h = NULL;
	return err;
}

/* -- HEAD, GET, PUT ------------------------------------------------------- */

struct want {
	uint64_t off;
	size_t len;
};

/* A 2xx answer to a ranged GET is good when it is exactly the range asked for, cut only by the
 * object's end. */
static int check_range(const struct req *r, void *arg, int *retry, char *why, size_t n)
{
	const struct want *w = arg;
	unsigned long long a, b, total;

	*retry = 1;
	if (r->status == 200 && w->off == 0 && r->clen >= 0 && r->got == (size_t)r->clen)
		return 0; /* the whole object, no longer than asked (else overflow) */
	if (r->status != 206) {
		*retry = 0;
		snprintf(why, n, "HTTP %ld instead of 206 Partial Content", r->status);
		return -EIO;
	}
	if (sscanf(r->crange, "bytes %llu-%llu/%llu", &a, &b, &total) != 3 || a != w->off ||
	    b < a || b >= total) {
		snprintf(why, n, "Content-Range \"%.100s\" is not the range asked for", r->crange);
		return -EIO;
	}
	if (r->got != b - a + 1 || (r->got != w->len && b + 1 != total)) {
		snprintf(why, n, "%zu bytes at %llu, Content-Range \"%.100s\", %zu asked for",
			 r->got, a, r->crange, w->len);
		return -EIO;
	}
	return 0;
}

ssize_t s3_get_range(struct s3 *s, const char *key, const char *etag, uint64_t off, size_t len,
		     void *buf)
{
	struct want w = { off, len };
	struct req r = { .method = "GET", .key = key, .if_match = etag, .buf = buf, .cap = len };
	uint64_t last;
	int rc;

	if (len == 0)
		return 0;
	if (len > SSIZE_MAX || (etag && (strlen(etag) > 200 || has_ctl(etag))))
		return -EINVAL;
	if (__builtin_add_overflow(off, (uint64_t)len - 1, &last))
		last = UINT64_MAX - 1;
	snprintf(r.range, sizeof(r.range), "Range: bytes=%llu-%llu", (unsigned long long)off,
		 (unsigned long long)last);
	r.url = make_url(s, key, NULL, NULL, 0);
	if (!r.url)
		return -ENOMEM;
	rc = run(s, &r, check_range, &w);
	free(r.url);
	if (rc == 416)
		return 0; /* off is at or past the end */
	return rc ? rc : (ssize_t)r.got;
}

/* One request on key with no body to read (HEAD, PUT, DELETE): 0 or -errno. */
static int run_plain(struct s3 *s, struct req *r, const char *key)
{
	int rc;

	r->url = make_url(s, key, NULL, NULL, 0);
	if (!r->url)
		return -ENOMEM;
	rc = run(s, r, NULL, NULL);
	free(r->url);
	return rc == 416 ? -EIO : rc;
}

int s3_head(struct s3 *s, const char *key, struct s3_stat *st)
{
	struct req r = { .method = "HEAD", .key = key };
	int rc = run_plain(s, &r, key);

	if (rc)
		return rc;
	if (r.clen < 0) {
		report(s, &r, 1, "no Content-Length in the answer");
		return -EIO;
	}
	st->size = (uint64_t)r.clen;
	st->mtime = r.mtime >= 0 ? (time_t)r.mtime : 0;
	memcpy(st->etag, r.etag, sizeof(st->etag));
	return 0;
}

int s3_put(struct s3 *s, const char *key, const void *buf, size_t len, char etag_out[80])
{
	struct req r = { .method = "PUT", .key = key, .up = buf, .uplen = len };
	int rc = run_plain(s, &r, key);

	if (!rc && etag_out)
		memcpy(etag_out, r.etag, sizeof(r.etag));
	return rc;
}

int s3_delete(struct s3 *s, const char *key)
{
	struct req r = { .method = "DELETE", .key = key };

	return run_plain(s, &r, key);
}

/* -- LIST ----------------------------------------------------------------- */

/* The text between <tag> and </tag> in [p, end), or NULL; *n is its length, *next after it. */
static const char *xml_find(const char *p, const char *end, const char *tag, size_t *n,
			    const char **next)
{
	char open[64], close[64];
	const char *a, *b;
	int lo = snprintf(open, sizeof(open), "<%s>", tag);
	int lc = snprintf(close, sizeof(close), "</%s>", tag);

	a = memmem(p, (size_t)(end - p), open, (size_t)lo);
	if (!a)
		return NULL;
	a += lo;
	b = memmem(a, (size_t)(end - a), close, (size_t)lc);
	if (!b)
		return NULL;
	*n = (size_t)(b - a);
	if (next)
		*next = b + lc;
	return a;
}

static size_t utf8_put(char *d, unsigned long c)
{
	if (c < 0x80) {
		d[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		d[0] = (char)(0xc0 | c >> 6);
		d[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		d[0] = (char)(0xe0 | c >> 12);
		d[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		d[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	d[0] = (char)(0xf0 | c >> 18);
	d[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	d[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	d[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* XML text (entities decoded) as a malloc'ed string, or NULL (no memory, or a bad entity). */
static char *xml_text(const char *p, size_t n)
{
	static const struct {
		const char *name;
		char c;
	} ent[] = {
		{ "amp;", '&' }, { "lt;", '<' }, { "gt;", '>' }, { "quot;", '"' }, { "apos;", '\'' }
	};
	char *out = malloc(n + 1), *d = out;
	const char *end = p + n;

	if (!out)
		return NULL;
	while (p < end) {
		if (*p != '&') {
			*d++ = *p++;
			continue;
		}
		p++;
		size_t i, k;

		for (i = 0; i < sizeof(ent) / sizeof(ent[0]); i++) {
			k = strlen(ent[i].name);
			if ((size_t)(end - p) >= k && !memcmp(p, ent[i].name, k))
				break;
		}
		if (i < sizeof(ent) / sizeof(ent[0])) {
			*d++ = ent[i].c;
			p += k;
			continue;
		}
		char num[16], *e;
		const char *semi = memchr(p, ';', (size_t)(end - p));

		if (*p != '#' || !semi || semi - p < 2 || (size_t)(semi - p) >= sizeof(num))
			goto bad;
		memcpy(num, p + 1, (size_t)(semi - p - 1));
		num[semi - p - 1] = '\0';
		unsigned long c = num[0] == 'x' ? strtoul(num + 1, &e, 16) : strtoul(num, &e, 10);

		if (*e || c == 0 || c > 0x10ffff)
			goto bad;
		d += utf8_put(d, c); /* "&#N;" is at least as long as its UTF-8 */
		p = semi + 1;
	}
	*d = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

/* "2026-12-01T18:30:00.000Z" as seconds since the epoch, or 0. */
static time_t iso_time(const char *p, size_t n)
{
	struct tm tm = { 0 };
	char buf[40];

	if (n >= sizeof(buf))
		return 0;
	memcpy(buf, p, n);
	buf[n] = '\0';
	if (sscanf(buf, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		   &tm.tm_min, &tm.tm_sec) != 6)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return timegm(&tm);
}

/* What one page brought, for the loop's checks. */
struct page_sum {
	unsigned entries; /* keys and common prefixes */
	uint64_t first;	  /* a hash of its first key or prefix (0: none) */
	char first_name[128];
};

/* FNV-1a of s[0..n), never 0 (0 marks an empty slot of a struct seen). */
static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h ? h : 1;
}

static void page_note(struct page_sum *ps, const char *name)
{
	if (ps->entries++ == 0) {
		ps->first = hash_bytes(name, strlen(name));
		snprintf(ps->first_name, sizeof(ps->first_name), "%s", name);
	}
}

/*
 * Calls cb for each <Contents> of one page, then (delimiter listings) for
 * each <CommonPrefixes> as an object with dir set.  Returns 0, cb's
 * non-zero, or -EIO/-ENOMEM.
 */
static int list_page(const char *p, const char *end, int (*cb)(void *, const struct s3_obj *),
		     void *arg, struct page_sum *ps)
{
	const char *c, *next, *v, *start = p;
	size_t n, vn;

	while ((c = xml_find(p, end, "Contents", &n, &next))) {
		struct s3_obj o = { 0 };
		const char *ce = c + n;
		char *key;
		int rc;

		p = next;
		v = xml_find(c, ce, "Key", &vn, NULL);
		if (!v)
			return -EIO;
		key = xml_text(v, vn);
		if (!key)
			return -EIO;
		o.key = key;
		if ((v = xml_find(c, ce, "Size", &vn, NULL)))
			o.st.size = strtoull(v, NULL, 10);
		if ((v = xml_find(c, ce, "LastModified", &vn, NULL)))
			o.st.mtime = iso_time(v, vn);
		if ((v = xml_find(c, ce, "ETag", &vn, NULL))) {
			char *e = xml_text(v, vn);

			/* too long to keep whole: none, so the object is not read (s3src_open) */
			if (e && strlen(e) < sizeof(o.st.etag))
				strcpy(o.st.etag, e);
			free(e);
		}
		page_note(ps, key);
		rc = cb(arg, &o);
		free(key);
		if (rc)
			return rc;
	}
	for (p = start; (c = xml_find(p, end, "CommonPrefixes", &n, &next)); p = next) {
		struct s3_obj o = { .dir = true };
		char *name;
		int rc;

		v = xml_find(c, c + n, "Prefix", &vn, NULL);
		if (!v)
			return -EIO;
		name = xml_text(v, vn);
		if (!name)
			return -EIO;
		o.key = name;
		page_note(ps, name);
		rc = cb(arg, &o);
		free(name);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * A set of 64-bit hashes (open addressing, linear probing, at most half
 * full): the continuation tokens sent and the first names of the pages
 * seen, so that a server going round in a circle of any length is caught at
 * its first repeat, at a constant cost per page.  A false "seen" needs two
 * of the listing's tokens or first names to share a 64-bit hash.
 */
struct seen {
	uint64_t *v;
	size_t cap, n;
};

/* Adds h; returns 1 if it was there, 0 if added, -ENOMEM. */
static int seen_add(struct seen *t, uint64_t h)
{
	if (2 * (t->n + 1) > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		uint64_t *v = calloc(cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < t->cap; i++)
			if (t->v[i])
				for (size_t j = t->v[i] & (cap - 1);; j = (j + 1) & (cap - 1))
					if (!v[j]) {
						v[j] = t->v[i];
						break;
					}
		free(t->v);
		t->v = v;
		t->cap = cap;
	}
	for (size_t j = h & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
		if (t->v[j] == h)
			return 1;
		if (!t->v[j]) {
			t->v[j] = h;
			t->n++;
			return 0;
		}
	}
}

/* One line about the listing of prefix as a whole (not one request). */
static void report_list(const struct s3 *s, const char *prefix, const char *fmt, ...)
{
	char why[384], line[1024], key[384];
	va_list ap;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	for (char *p = why; *p; p++) /* a token or key from the server stays on one line */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	for (i = 0; prefix[i] && i < sizeof(key) - 1; i++)
		key[i] = (unsigned char)prefix[i] < 0x20 || prefix[i] == 0x7f ? '?' : prefix[i];
	key[i] = '\0';
	snprintf(line, sizeof(line), "s3: LIST %s/%s*: %s", s->bucket, key, why);
	if (s->o.log)
		s->o.log(s->o.log_arg, line);
	else
		fprintf(stderr, "%s\n", line);
}

/*
 * The listing loop of s3_list and s3_list_dir.  Besides each page's own
 * faults it stops, with one line and -EIO, a server that would keep it
 * going forever: a continuation token sent before, a page that starts
 * with a name an earlier page started with, LIST_EMPTY_MAX truncated pages
 * in a row that add nothing, or more than opts.list_pages_max pages.
 */
static int list_loop(struct s3 *s, const char *prefix, int delim,
		     int (*cb)(void *arg, const struct s3_obj *o), void *arg)
{
	struct seen tokens = { 0 }, firsts = { 0 };
	unsigned pages = 0, empty = 0;
	char *token = NULL;
	int rc;

	if (!prefix)
		prefix = "";
	do {
		struct req r = { .method = "GET", .key = prefix, .grow = 1 };
		struct page_sum ps = { 0 };
		const char *v, *end;
		size_t vn;

		if (pages == s->o.list_pages_max) {
			report_list(s, prefix,
				    "more than %u pages (up to 1000 keys each); stopped listing "
				    "(mount a narrower prefix)",
				    pages);
			rc = -EIO;
			break;
		}
		pages++;
		if (token) {
			rc = seen_add(&tokens, hash_bytes(token, strlen(token)));
			if (rc) {
				if (rc > 0)
					report_list(s, prefix,
						    "the server repeated its continuation token "
						    "\"%.60s\" after page %u; stopped listing",
						    token, pages - 1);
				rc = rc > 0 ? -EIO : rc;
				break;
			}
		}
		r.url = make_url(s, NULL, prefix, token, delim);
		free(token);
		token = NULL;
		if (!r.url) {
			rc = -ENOMEM;
			break;
		}
		rc = run(s, &r, NULL, NULL);
		free(r.url);
		if (rc == 416)
			rc = -EIO;
		end = r.buf ? r.buf + r.got : NULL;
		/* The root element has attributes (xmlns): look for its start only. */
		if (!rc && (!r.buf || !memmem(r.buf, r.got, "<ListBucketResult", 17))) {
			report(s, &r, 1, "not a ListBucketResult");
			rc = -EIO;
		}
		if (!rc)
			rc = list_page(r.buf, end, cb, arg, &ps);
		if (!rc && ps.first && (rc = seen_add(&firsts, ps.first)) > 0) {
			report_list(s, prefix,
				    "page %u starts with \"%.100s\", as an earlier page did: the "
				    "server returned a page it had already sent; stopped listing",
				    pages, ps.first_name);
			rc = -EIO;
		}
		v = rc ? NULL : xml_find(r.buf, end, "IsTruncated", &vn, NULL);
		if (v && vn == 4 && !memcmp(v, "true", 4)) {
			v = xml_find(r.buf, end, "NextContinuationToken", &vn, NULL);
			token = v ? xml_text(v, vn) : NULL;
			empty = ps.entries ? 0 : empty + 1;
			if (!token) {
				report(s, &r, 1, "truncated, without a continuation token");
				rc = -EIO;
			} else if (empty == LIST_EMPTY_MAX) {
				report_list(
					s, prefix,
					"%u truncated pages in a row added no key and no common "
					"prefix (page %u); stopped listing",
					empty, pages);
				rc = -EIO;
			}
		}
		free(r.buf);
	} while (!rc && token);
	free(token);
	free(tokens.v);
	free(firsts.v);
	return rc;
}

int s3_list(struct s3 *s, const char *prefix, int (*cb)(void *arg, const struct s3_obj *o),
	    void *arg)
{
	return list_loop(s, prefix, 0, cb, arg);
}

int s3_list_dir(struct s3 *s, const char *prefix, int (*cb)(void *arg, const struct s3_obj *o),
		void *arg)
{
	return list_loop(s, prefix, 1, cb, arg);
}
