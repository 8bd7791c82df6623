/* gencorpus: deterministic benchmark corpus for tools/bench/zmount-bench.
 *   gencorpus log SIZE SEED   log-like text (access, app, db and error lines)
 *   gencorpus bin SIZE SEED   binary mix: random bytes, fixed-size records, text blobs
 * Writes exactly SIZE bytes to stdout.  Same arguments, same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t s;
static uint64_t rnd(void) /* splitmix64 */
{
	uint64_t z = (s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static unsigned below(unsigned n)
{
	return (unsigned)(rnd() % n);
}
static unsigned skew(unsigned n) /* small values far more likely (roughly Zipf) */
{
	double u = (double)(rnd() >> 11) / 9007199254740992.0;
	return (unsigned)(u * u * u * n);
}
#define PICK(a) (a[skew(sizeof(a) / sizeof(a[0]))])
#define ANY(a)	(a[below(sizeof(a) / sizeof(a[0]))])

static const char *svc[] = { "api-gateway", "auth",	"orders",    "billing",	 "search",
			     "inventory",   "notifier", "scheduler", "cdn-edge", "reports" };
static const char *lvl[] = { "INFO", "INFO", "INFO", "INFO", "DEBUG", "DEBUG", "WARN", "ERROR" };
static const char *meth[] = { "GET", "GET", "GET", "POST", "PUT", "DELETE", "PATCH" };
static const char *res[] = { "users",	 "orders", "items",  "carts",	"sessions",  "invoices",
			     "products", "search", "health", "metrics", "static/js", "images" };
static const char *st[] = { "200", "200", "200", "200", "304", "201", "204",
			    "404", "400", "500", "503", "302", "401" };
static const char *ua[] = {
	"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0",
	"curl/7.88.1",
	"python-requests/2.31.0",
	"Go-http-client/1.1",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
	"kube-probe/1.28",
	"Prometheus/2.48.0"
};
static const char *msg[] = { /* each takes one %s, then one %u */
			     "cache miss for key %s:%u, fetching from backend",
			     "connection pool %s exhausted (active=%u), waiting",
			     "retrying request to %s (attempt %u)",
			     "user from %s logged in from new device, uid=%u",
			     "job %s finished, %u rows processed",
			     "slow query on table %s: %u ms",
			     "rate limit exceeded on %s for client %u",
			     "scheduled task %s started, next run in %u s",
			     "TLS handshake failed with peer %s: code=%u",
			     "flushed dirty pages of %s to disk: %u pages"
};
static const char *word[] = { "orders",		 "users",	   "billing.v2", "sessions",
			      "inventory_items", "nightly-export", "reindex",	 "gc",
			      "payments",	 "eu-west-1",	   "replica-3" };
static const char *tbl[] = { "orders", "order_items", "users", "events", "audit_log", "prices" };

static char *out;
static size_t outlen, outcap;
static void emit(const char *p, size_t n)
{
	if (outlen + n > outcap)
		n = outcap - outlen;
	memcpy(out + outlen, p, n);
	outlen += n;
}

static void log_line(uint64_t *t)
{
	char b[1024];
	int n;
	*t += skew(40000) + 1; /* microseconds */
	uint64_t sec = *t / 1000000, us = *t % 1000000;
	unsigned dd = (unsigned)(sec / 86400), hh = (unsigned)(sec / 3600 % 24),
		 mi = (unsigned)(sec / 60 % 60), ss = (unsigned)(sec % 60);
	const char *l = ANY(lvl), *sv = PICK(svc);
	n = snprintf(b, sizeof b, "2024-03-%02u %02u:%02u:%02u.%06u %-5s %s[%u]: ", 1 + dd % 28, hh,
		     mi, ss, (unsigned)us, l, sv, 1000 + skew(40));
	unsigned k = below(10);
	if (k < 6) /* access line */
		n += snprintf(b + n, sizeof b - n,
			      "%u.%u.%u.%u - - \"%s /api/v%u/%s/%u HTTP/1.1\" %s %u %.3fms "
			      "req=%016llx \"%s\"\n",
			      10 + skew(3), skew(256), skew(256), 1 + below(254), PICK(meth),
			      1 + skew(3), PICK(res), skew(100000), PICK(st), skew(200000),
			      (double)skew(500000) / 1000.0, (unsigned long long)rnd(), PICK(ua));
	else if (k < 8) { /* application message */
		char m[256];
		snprintf(m, sizeof m, PICK(msg), PICK(word), skew(5000));
		n += snprintf(b + n, sizeof b - n, "%s trace_id=%08x%08x\n", m, (unsigned)rnd(),
			      (unsigned)rnd());
	} else if (k < 9) /* db */
		n += snprintf(b + n, sizeof b - n,
			      "db: SELECT id, status, total FROM %s WHERE customer_id = %u AND "
			      "created_at > '2024-02-%02u' LIMIT %u; rows=%u elapsed=%ums\n",
			      PICK(tbl), skew(1000000), 1 + below(28), 10 * (1 + skew(10)),
			      skew(1000), skew(3000));
	else { /* error with a short stack */
		n += snprintf(b + n, sizeof b - n,
			      "unhandled exception in worker %u: java.io.IOException: %s\n",
			      skew(64), PICK(msg));
		for (unsigned i = 0, d = 2 + below(5); i < d && n < 900; i++)
			n += snprintf(b + n, sizeof b - n,
				      "\tat com.example.%s.Handler.process(Handler.java:%u)\n",
				      PICK(word), 20 + skew(800));
	}
	emit(b, (size_t)n);
}

static void bin_segment(uint64_t *id)
{
	char b[65536];
	unsigned k = below(100);
	if (k < 25) { /* incompressible: already-compressed media, encrypted blobs */
		for (size_t i = 0; i < sizeof b; i += 8) {
			uint64_t r = rnd();
			memcpy(b + i, &r, 8);
		}
	} else if (k < 65) { /* fixed 64-byte records, like a table dump */
		memset(b, 0, sizeof b);
		for (size_t i = 0; i + 64 <= sizeof b; i += 64, (*id)++) {
			uint64_t ts = 1709251200000ull + *id * 37 + below(30);
			uint32_t user = skew(10000);
			uint16_t kind = (uint16_t)skew(16), flags = (uint16_t)(below(4) << 3);
			double v = (double)skew(100000) / 100.0;
			memcpy(b + i, id, 8);
			memcpy(b + i + 8, &ts, 8);
			memcpy(b + i + 16, &user, 4);
			memcpy(b + i + 20, &kind, 2);
			memcpy(b + i + 22, &flags, 2);
			memcpy(b + i + 24, &v, 8);
			snprintf(b + i + 32, 24, "%s", PICK(word));
		}
	} else { /* serialized text objects */
		size_t n = 0;
		while (n < sizeof b - 512)
			n += (size_t)snprintf(
				b + n, sizeof b - n,
				"{\"id\":%llu,\"svc\":\"%s\",\"user\":%u,\"path\":\"/%s/%u\","
				"\"status\":%s,\"tags\":[\"%s\",\"%s\"]}\n",
				(unsigned long long)(*id)++, PICK(svc), skew(10000), PICK(res),
				skew(5000), PICK(st), PICK(word), PICK(word));
		memset(b + n, ' ', sizeof b - n);
	}
	emit(b, sizeof b);
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "log") && strcmp(argv[1], "bin"))) {
		fprintf(stderr, "usage: gencorpus log|bin SIZE SEED\n");
		return 2;
	}
	unsigned long long size = strtoull(argv[2], NULL, 10);
	s = strtoull(argv[3], NULL, 10) * 2654435761u + (argv[1][0] == 'b');
	outcap = 1u << 20;
	out = malloc(outcap);
	uint64_t t = 0, id = 1;
	while (size > 0) {
		outlen = 0;
		if (size < outcap)
			outcap = (size_t)size;
		while (outlen < outcap)
			argv[1][0] == 'l' ? log_line(&t) : bin_segment(&id);
		if (fwrite(out, 1, outlen, stdout) != outlen)
			return 1;
		size -= outlen;
	}
	return fflush(stdout) ? 1 : 0;
}
