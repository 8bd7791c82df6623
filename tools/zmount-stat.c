/* SPDX-License-Identifier: MIT */
/*
 * zmount-stat [-w SECS [-n COUNT]] MNT: the daemon's counters, for people.
 * It reads the root's user.zmount.stats attribute (key=value lines, the
 * machine-readable form, which stays as it is) and prints sizes in units,
 * the cache hit ratio, bytes decoded against bytes served (the read
 * amplification), cache use and its peak, and the files that cost the most
 * decoding.  Counters an older daemon does not have are shown as "n/a".
 * Keys it knows: cache_budget, cache_used, cache_peak, cache_entries,
 * cache_hits, cache_misses, cache_waits, cache_evictions, decoded_bytes,
 * readahead_bytes, served_bytes, xz_indexes, indexes_built, indexes_loaded,
 * read_errors, and up to 10 "top=DECODED_BYTES PATH" lines (PATH relative to
 * the source, escaped by the daemon with zlog_escape); other keys are
 * printed as they are.
 * Exit status: 0, 1 bad usage, 2 MNT unreadable or not a zmount mount.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "zlog.h"

#define XATTR_STATS "user.zmount.stats"
#define MAX_TOP     10
#define MAX_TEXT    (1u << 20)

enum key {
	K_BUDGET, K_USED, K_PEAK, K_ENTRIES, K_HITS, K_MISSES, K_WAITS, K_EVICTIONS,
	K_DECODED, K_READAHEAD, K_SERVED, K_XZ_INDEXES, K_BUILT, K_LOADED, K_ERRORS, K_COUNT
};

static const char *const key_names[K_COUNT] = {
	"cache_budget",	 "cache_used",	  "cache_peak",	     "cache_entries",	"cache_hits",
	"cache_misses",	 "cache_waits",	  "cache_evictions", "decoded_bytes",	"readahead_bytes",
	"served_bytes",	 "xz_indexes",	  "indexes_built",   "indexes_loaded",	"read_errors",
};

struct stats {
	uint64_t v[K_COUNT];
	bool has[K_COUNT];
	unsigned ntop;
	struct {
		uint64_t decoded;
		const char *path; /* points into the text */
	} top[MAX_TOP];
	const char *other[32]; /* unknown "key=value" lines, into the text */
	unsigned nother;
};

static void usage(FILE *out)
{
	fprintf(out, "usage: zmount-stat [-w SECS [-n COUNT]] MNT\n"
		     "Shows a zmount mount's cache and decoding counters in units for people:\n"
		     "cache use and peak, hit ratio, bytes decoded against bytes served (the\n"
		     "read amplification), errors, and the files that cost the most decoding.\n"
		     "MNT is the mount point itself.  The raw counters stay readable with\n"
		     "  getfattr --only-values -n user.zmount.stats MNT\n"
		     "  -w, --watch SECS  refresh every SECS seconds (until interrupted), with\n"
		     "                    rates since the last refresh\n"
		     "  -n, --count N     with -w: stop after N refreshes\n"
		     "  -h, --help        this text\n"
		     "  -V, --version     the version\n"
		     "Exit status: 0, 1 bad usage, 2 MNT unreadable or not a zmount mount.\n");
}

static int bad_usage(const char *what, const char *arg)
{
	fprintf(stderr, "zmount-stat: %s%s%s (see zmount-stat --help)\n", what, arg ? " " : "",
		arg ? arg : "");
	return 1;
}

/* The attribute's text, NUL-terminated, in *out (caller frees); 0 or -errno. */
static int read_stats(const char *mnt, char **out)
{
	size_t cap = 4096;

	*out = NULL;
	for (;;) {
		char *buf = malloc(cap + 1);
		ssize_t n;

		if (!buf)
			return -ENOMEM;
		n = getxattr(mnt, XATTR_STATS, buf, cap);
		if (n >= 0) {
			buf[n] = '\0';
			*out = buf;
			return 0;
		}
		free(buf);
		if (errno != ERANGE || cap >= MAX_TEXT)
			return -errno;
		cap *= 4;
	}
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || (*end && *end != ' ') ? -EINVAL : 0;
}

/* Splits text (modified in place) into st. */
static void parse(char *text, struct stats *st)
{
	char *line, *next;

	memset(st, 0, sizeof(*st));
	for (line = text; *line; line = next) {
		char *eq;
		uint64_t v;
		int k;

		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		if (strcmp(line, "top") == 0) {
			char *sp = strchr(eq + 1, ' ');

			if (st->ntop < MAX_TOP && sp && parse_u64(eq + 1, &v) == 0) {
				st->top[st->ntop].decoded = v;
				st->top[st->ntop++].path = sp + 1;
			}
			continue;
		}
		for (k = 0; k < K_COUNT; k++)
			if (strcmp(line, key_names[k]) == 0)
				break;
		if (k < K_COUNT && parse_u64(eq + 1, &v) == 0) {
			st->v[k] = v;
			st->has[k] = true;
		} else if (st->nother < sizeof(st->other) / sizeof(st->other[0])) {
			*eq = '='; /* show it as the daemon wrote it */
			st->other[st->nother++] = line;
		}
	}
}

static const char *size(char *buf, size_t len, const struct stats *st, enum key k)
{
	if (!st->has[k])
		return "n/a";
	return zlog_size(buf, len, st->v[k]);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* "  (12.3 MiB/s)" from the change since the previous refresh, or "". */
static const char *rate(char *buf, size_t len, const struct stats *st, const struct stats *prev,
			double secs, enum key k)
{
	char sz[32];

	if (!prev || secs <= 0 || !st->has[k] || !prev->has[k] || st->v[k] < prev->v[k]) {
		buf[0] = '\0';
		return buf;
	}
	snprintf(buf, len, "  (%s/s)",
		 zlog_size(sz, sizeof(sz), (uint64_t)((double)(st->v[k] - prev->v[k]) / secs + 0.5)));
	return buf;
}

static void show(const char *mnt, const struct stats *st, const struct stats *prev, double secs)
{
	char a[32], b[32], r[48];
	uint64_t lookups = st->v[K_HITS] + st->v[K_MISSES];
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(a, sizeof(a), "%Y-%m-%d %H:%M:%S", &tm);
	printf("zmount-stat %s  (%s)\n", mnt, a);

	printf("cache      %s used of %s", size(a, sizeof(a), st, K_USED),
	       size(b, sizeof(b), st, K_BUDGET));
	if (st->has[K_USED] && st->has[K_BUDGET])
		printf(" (%.1f%%)", pct(st->v[K_USED], st->v[K_BUDGET]));
	if (st->has[K_ENTRIES])
		printf(", %" PRIu64 " entries", st->v[K_ENTRIES]);
	printf("\n");
	if (st->has[K_PEAK])
		printf("peak       %s (%.1f%% of the budget)\n", size(a, sizeof(a), st, K_PEAK),
		       pct(st->v[K_PEAK], st->v[K_BUDGET]));
	else
		printf("peak       n/a (daemon too old)\n");

	if (st->has[K_HITS] && st->has[K_MISSES] && lookups)
		printf("hit ratio  %.1f%%  (%" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
		       " waited on a decode, %" PRIu64 " evictions)\n",
		       pct(st->v[K_HITS], lookups), st->v[K_HITS], st->v[K_MISSES], st->v[K_WAITS],
		       st->v[K_EVICTIONS]);
	else
		printf("hit ratio  n/a (%s)\n", st->has[K_HITS] ? "no lookups yet" : "not reported");

	printf("decoded    %s%s", size(a, sizeof(a), st, K_DECODED),
	       rate(r, sizeof(r), st, prev, secs, K_DECODED));
	if (st->has[K_READAHEAD])
		printf(", of which read-ahead %s", size(b, sizeof(b), st, K_READAHEAD));
	printf("\n");
	if (st->has[K_SERVED]) {
		printf("served     %s%s\n", size(a, sizeof(a), st, K_SERVED),
		       rate(r, sizeof(r), st, prev, secs, K_SERVED));
		if (st->v[K_SERVED] && st->has[K_DECODED])
			printf("amplif.    %.2fx  (bytes decoded per byte served)\n",
			       (double)st->v[K_DECODED] / (double)st->v[K_SERVED]);
		else
			printf("amplif.    n/a  (nothing served yet)\n");
	} else {
		printf("served     n/a (daemon too old)\n");
	}
	printf("indexes    %" PRIu64 " xz read, %" PRIu64 " gzip built, %" PRIu64 " gzip loaded\n",
	       st->v[K_XZ_INDEXES], st->v[K_BUILT], st->v[K_LOADED]);
	if (st->has[K_ERRORS])
		printf("errors     %" PRIu64 " failed reads\n", st->v[K_ERRORS]);
	else
		printf("errors     n/a\n");
	if (st->ntop) {
		printf("top files by decoded bytes\n");
		for (unsigned i = 0; i < st->ntop; i++) {
			printf("  %10s  ", zlog_size(a, sizeof(a), st->top[i].decoded));
			/*
			 * The daemon writes the path escaped (zlog_escape); any
			 * control byte left would still not reach the terminal.
			 */
			for (const unsigned char *p = (const unsigned char *)st->top[i].path; *p; p++)
				putchar(*p < 0x20 || *p == 0x7f ? '?' : *p);
			putchar('\n');
		}
	}
	for (unsigned i = 0; i < st->nother; i++)
		printf("other      %s\n", st->other[i]);
	fflush(stdout);
}

static int parse_secs(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return (errno || end == s || *end || !(*out > 0 && *out <= 86400)) ? -EINVAL : 0;
}

int main(int argc, char *argv[])
{
	struct stats cur, prev;
	struct timespec last = { 0, 0 };
	char *texts[2] = { NULL, NULL };
	const char *mnt = NULL;
	double watch = 0;
	uint64_t count = 0;
	bool tty = isatty(STDOUT_FILENO);
	int i, status = 0;

	zlog_set_name("zmount-stat");
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			printf("zmount-stat %s\n", ZMOUNT_VERSION);
			return 0;
		}
		if (strcmp(a, "-w") == 0 || strcmp(a, "--watch") == 0) {
			if (++i == argc || parse_secs(argv[i], &watch) < 0)
				return bad_usage("-w needs seconds from 0.1 to 86400, got",
						 i < argc ? argv[i] : "nothing");
		} else if (strncmp(a, "--watch=", 8) == 0) {
			if (parse_secs(a + 8, &watch) < 0)
				return bad_usage("--watch needs seconds, got", a + 8);
		} else if (strcmp(a, "-n") == 0 || strcmp(a, "--count") == 0) {
			if (++i == argc || parse_u64(argv[i], &count) < 0 || count == 0)
				return bad_usage("-n needs a count of 1 or more, got",
						 i < argc ? argv[i] : "nothing");
		} else if (strcmp(a, "--") == 0 && i + 1 < argc) {
			if (mnt || i + 2 != argc)
				return bad_usage("give one mount point", NULL);
			mnt = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			return bad_usage("unknown option", a);
		} else if (mnt) {
			return bad_usage("give one mount point, not also", a);
		} else {
			mnt = a;
		}
	}
	if (!mnt)
		return bad_usage("give the mount point", NULL);
	if (count && !watch)
		return bad_usage("-n goes with -w", NULL);
	for (uint64_t n = 0;; n++) {
		struct timespec t0, t1;
		double secs = 0, left;
		int ret;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		free(texts[n & 1]);
		ret = read_stats(mnt, &texts[n & 1]);
		if (ret < 0) {
			if (ret == -ENODATA || ret == -ENOTSUP)
				fprintf(stderr, "zmount-stat: %s: not the root of a zmount mount (it has no %s)\n",
					mnt, XATTR_STATS);
			else
				fprintf(stderr, "zmount-stat: %s: %s\n", mnt, strerror(-ret));
			status = 2;
			break;
		}
		if (n)
			prev = cur;
		parse(texts[n & 1], &cur);
		if (n)
			secs = (double)(t0.tv_sec - last.tv_sec) + (double)(t0.tv_nsec - last.tv_nsec) / 1e9;
		last = t0;
		if (watch && tty)
			fputs("\033[H\033[J", stdout); /* redraw in place, like top */
		else if (n)
			putchar('\n');
		/* prev's strings point into the other text, which is kept until next time. */
		show(mnt, &cur, n ? &prev : NULL, secs);
		if (!watch || (count && n + 1 >= count))
			break;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = watch - ((double)(t1.tv_sec - t0.tv_sec) +
				       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
		if (left > 0) {
			struct timespec d = { (time_t)left,
					      (long)((left - (double)(time_t)left) * 1e9) };

			while (nanosleep(&d, &d) < 0 && errno == EINTR)
				;
		}
	}
	free(texts[0]);
	free(texts[1]);
	return status;
}
