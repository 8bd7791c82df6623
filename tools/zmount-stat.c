/* SPDX-License-Identifier: MIT */
/*
 * zmount-stat [-w SECS [-n COUNT]] MNT: the daemon's counters, for people.
 * It reads the root's user.zmount.stats attribute (key=value lines, the
 * machine-readable form, which stays as it is) and prints sizes in units,
 * the cache hit ratio, bytes decoded against bytes served (the read
 * amplification), cache use and its peak, and the files that cost the most
 * decoding.  Counters an older daemon does not have are shown as "n/a".
 * It reads this daemon's format only (an older daemon's missing counters
 * aside).  Keys it knows, all those the daemon writes (stats_text in
 * fs/ops.c): cache_budget, cache_used, cache_peak, cache_charged,
 * cache_entries, cache_hits, cache_misses, cache_waits, cache_room_waits,
 * cache_evictions, decoded_bytes, served_bytes, readahead_bytes,
 * prefault_bytes, each format's own counter (fmttab_counter: xz_indexes),
 * indexes_built, indexes_loaded, read_errors, index_errors, nodes,
 * listings, listing_bytes, listing_budget, listing_rebuilds, plain_reads,
 * "pass=WHAT DONE TOTAL MS PATH" lines (passes running now: bytes done of
 * the total, for MS milliseconds), up to 5 "damaged=PATH<TAB>REASON" lines (the last archives that
 * failed to index, newest first, escaped), log (where the log goes: stderr, syslog or a file's
 * path), and up to 10 "top=DECODED SERVED READS WHY PATH" lines (PATH the source file's path,
 * escaped by the daemon with zlog_escape; WHY wide_unit:UNIT_BYTES, one_unit:UNIT_BYTES, no_index,
 * index_saved, no_index_dir, salvaged or -).  A key it does not know (a newer daemon's) is left out
 * of the view. Exit status: 0, 1 bad usage, 2 MNT unreadable or not a zmount mount.
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

#include "fmttab.h"
#include "zlog.h"

#define XATTR_STATS "user.zmount.stats"
#define MAX_TOP	    10
#define MAX_DAMAGED 5
#define MAX_PASSES  16
#define MAX_TEXT    (1u << 20)

enum key {
	K_BUDGET,
	K_USED,
	K_PEAK,
	K_CHARGED,
	K_ENTRIES,
	K_HITS,
	K_MISSES,
	K_WAITS,
	K_ROOM_WAITS,
	K_EVICTIONS,
	K_DECODED,
	K_READAHEAD,
	K_PREFAULT,
	K_SERVED,
	K_BUILT,
	K_LOADED,
	K_ERRORS,
	K_INDEX_ERRORS,
	K_NODES,
	K_LISTINGS,
	K_LIST_BYTES,
	K_LIST_BUDGET,
	K_REBUILDS,
	K_PLAIN_READS,
	K_COUNT
};

static const char *const key_names[K_COUNT] = {
	"cache_budget",	   "cache_used",       "cache_peak",
	"cache_charged",   "cache_entries",    "cache_hits",
	"cache_misses",	   "cache_waits",      "cache_room_waits",
	"cache_evictions", "decoded_bytes",    "readahead_bytes",
	"prefault_bytes",  "served_bytes",     "indexes_built",
	"indexes_loaded",  "read_errors",      "index_errors",
	"nodes",	   "listings",	       "listing_bytes",
	"listing_budget",  "listing_rebuilds", "plain_reads",
};

/* A top= line: "DECODED SERVED READS WHY PATH". */
struct top {
	uint64_t decoded, served, reads;
	uint64_t unit;	  /* wide_unit, one_unit: the size of its widest unit */
	const char *why;  /* the token before any ':' ("wide_unit"), into the text */
	const char *path; /* into the text */
};

struct stats {
	uint64_t v[K_COUNT];
	bool has[K_COUNT];
	uint64_t fmt[FMTTAB_MAX]; /* each format's own counter (fmttab_counter: xz_indexes) */
	unsigned ntop;
	struct top top[MAX_TOP];
	unsigned npass;
	struct pass {
		uint64_t done, total, ms;
		const char *what, *path; /* into the text */
	} pass[MAX_PASSES];		 /* pass=WHAT DONE TOTAL MS PATH: passes running now */
	const char *log; /* log=: "stderr", "syslog" or the file's path; into the text, or NULL */
	unsigned ndamaged;
	const char
		*damaged[MAX_DAMAGED][2]; /* damaged=PATH<TAB>REASON: path, reason; into the text */
};

static void usage(FILE *out)
{
	fprintf(out, "usage: zmount-stat [-w SECS [-n COUNT]] MNT\n"
		     "Shows a zmount mount's cache and decoding counters in units for people:\n"
		     "cache use and peak, hit ratio, bytes decoded against bytes served (the\n"
		     "read amplification), errors, and the files that cost the most decoding,\n"
		     "each with its cause and fix.\n"
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

/* The next space-separated field of *s (modified in place), or NULL. */
static char *field(char **s)
{
	char *f = *s, *sp = strchr(f, ' ');

	if (!sp)
		return NULL;
	*sp = '\0';
	*s = sp + 1;
	return f;
}

/* "DECODED SERVED READS WHY PATH" into t; 0, or -EINVAL (the line is skipped). */
static int parse_top(char *s, struct top *t)
{
	char *dec = field(&s), *srv = field(&s), *nrd = field(&s), *why = field(&s), *colon;

	if (!why || !*s || parse_u64(dec, &t->decoded) < 0 || parse_u64(srv, &t->served) < 0 ||
	    parse_u64(nrd, &t->reads) < 0)
		return -EINVAL;
	t->unit = 0;
	colon = strchr(why, ':');
	if (colon) {
		*colon = '\0';
		if (parse_u64(colon + 1, &t->unit) < 0)
			return -EINVAL;
	}
	t->why = why;
	t->path = s;
	return 0;
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
		if (strcmp(line, "damaged") == 0) {
			char *tab = strchr(eq + 1, '\t');

			if (tab && st->ndamaged < MAX_DAMAGED) {
				*tab = '\0';
				st->damaged[st->ndamaged][0] = eq + 1;
				st->damaged[st->ndamaged++][1] = tab + 1;
			}
			continue;
		}
		if (strcmp(line, "pass") == 0) {
			char *f = eq + 1, *what = field(&f), *d = field(&f), *t = field(&f),
			     *ms = field(&f);
			struct pass *ps = &st->pass[st->npass];

			if (st->npass < MAX_PASSES && ms && *f && parse_u64(d, &ps->done) == 0 &&
			    parse_u64(t, &ps->total) == 0 && parse_u64(ms, &ps->ms) == 0) {
				ps->what = what;
				ps->path = f;
				st->npass++;
			}
			continue;
		}
		if (strcmp(line, "log") == 0) {
			st->log = eq + 1;
			continue;
		}
		if (strcmp(line, "top") == 0) {
			if (st->ntop < MAX_TOP && parse_top(eq + 1, &st->top[st->ntop]) == 0)
				st->ntop++;
			continue;
		}
		for (k = 0; k < K_COUNT; k++)
			if (strcmp(line, key_names[k]) == 0)
				break;
		if (k < K_COUNT && parse_u64(eq + 1, &v) == 0) {
			st->v[k] = v;
			st->has[k] = true;
		}
		for (int id = 1; k == K_COUNT && id <= fmttab_count(); id++)
			if (fmttab_counter(id) && strcmp(line, fmttab_counter(id)) == 0 &&
			    parse_u64(eq + 1, &v) == 0)
				st->fmt[id] = v;
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

/* The path, escaped by the daemon; any control byte left never reaches the terminal. */
static void put_path(const char *path)
{
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		putchar(*p < 0x20 || *p == 0x7f ? '?' : *p);
}

/*
 * Why a top file decoded more than it served and what to do, in words, from
 * the daemon's WHY token (its rule is the one of the daemon's log warning: a
 * unit wider than cache_size/2).  The format is told by the name.
 */
static void show_cause(const struct top *t, const struct stats *st)
{
	int fmt = fmttab_by_suffix(t->path);
	char a[32], b[32], c[32], bs[32], unit[32], fix[160];

	/* the cache_size the daemon's log line asks for: twice the unit, whole MiB, and one more */
	zlog_size(a, sizeof(a), t->unit);
	snprintf(b, sizeof(b), "%" PRIu64 "M", (2 * t->unit >> 20) + 1);
	/* xz --block-size that fits this cache: cache_size/2, in whole MiB */
	if (st->has[K_BUDGET] && st->v[K_BUDGET] >= (4u << 20)) {
		zlog_size(c, sizeof(c), st->v[K_BUDGET] / 2);
		snprintf(bs, sizeof(bs), "%" PRIu64 "MiB", st->v[K_BUDGET] >> 21);
	} else {
		snprintf(c, sizeof(c), "n/a");
		snprintf(bs, sizeof(bs), "1MiB");
	}
	/* the words are the format's, told by the name (fmttab_advice) */
	fmttab_advice(fmt, FMTTAB_UNIT, bs, unit, sizeof(unit));
	if (strcmp(t->why, "one_unit") == 0) {
		fmttab_advice(fmt, FMTTAB_FIX_ONE, bs, fix, sizeof(fix));
		printf("    cause: the whole file is one %s of %s, more than cache_size/2 (%s): "
		       "every random read decodes from the file's start\n",
		       unit, a, c);
		printf("    fix:   %s%smount with cache_size=%s or more\n", fix,
		       fix[0] ? ", or " : "", b);
	} else if (strcmp(t->why, "wide_unit") == 0) {
		fmttab_advice(fmt, FMTTAB_FIX_WIDE, bs, fix, sizeof(fix));
		printf("    cause: %ss of up to %s are wider than cache_size/2 (%s): random reads "
		       "decode from the %s start\n",
		       unit, a, c, unit);
		printf("    fix:   mount with cache_size=%s or more%s%s\n", b,
		       fix[0] ? ", or " : "", fix);
	} else if (strcmp(t->why, "no_index") == 0) {
		fmttab_advice(fmt, FMTTAB_NO_INDEX, bs, fix, sizeof(fix));
		printf("    cause: %s: opening it decoded the whole file once, in this mount\n",
		       fix);
		printf("    fix:   zmount-index build FILE (or its directory) saves it; later mounts "
		       "load it (see index_dir)\n");
	} else if (strcmp(t->why, "index_saved") == 0) {
		fmttab_advice(fmt, FMTTAB_NO_INDEX, bs, fix, sizeof(fix));
		printf("    cause: %s: opening it decoded the whole file once, in this mount, and "
		       "that index is now saved in index_dir\n",
		       fix);
		printf("    fix:   none needed: later mounts load the saved index\n");
	} else if (strcmp(t->why, "no_index_dir") == 0) {
		fmttab_advice(fmt, FMTTAB_NO_INDEX, bs, fix, sizeof(fix));
		printf("    cause: %s: opening it decoded the whole file once, in this mount, which "
		       "has index_dir=none: no index is saved or loaded, so every mount does it "
		       "again\n",
		       fix);
		printf("    fix:   mount without index_dir=none (or with index_dir=DIR); then "
		       "zmount-index build FILE saves it ahead, or the first mount does\n");
	} else if (strcmp(t->why, "salvaged") == 0) {
		printf("    cause: the file is damaged; -o salvage shows its verified part before the "
		       "damage, found by a pass over the file at open (a damaged file's index is "
		       "never saved)\n");
		printf("    fix:   replace the file with an intact copy (zmount-index verify FILE "
		       "says where the damage is)\n");
	}
}

/* One file of the top: what it cost, then why. */
static void show_top(const struct top *t, const struct stats *st)
{
	char a[32], b[32];

	printf("  ");
	put_path(t->path);
	printf("\n    decoded %s to serve %s in %" PRIu64 " read%s",
	       zlog_size(a, sizeof(a), t->decoded), zlog_size(b, sizeof(b), t->served), t->reads,
	       t->reads == 1 ? "" : "s");
	if (t->served)
		printf(" (%.2fx)", (double)t->decoded / (double)t->served);
	printf("\n");
	show_cause(t, st);
}

/*
 * A pass running now: what it builds, bytes done of its total, its rate
 * since it began and the time left at that rate, as pv shows them.
 */
static void show_pass(const struct pass *p)
{
	char a[32], b[32], c[32];
	double secs = (double)p->ms / 1000, rate = secs > 0 ? (double)p->done / secs : 0;

	printf("  ");
	put_path(p->path);
	printf("\n    %s: %s of %s (%.0f%%)", p->what, zlog_size(a, sizeof(a), p->done),
	       zlog_size(b, sizeof(b), p->total), pct(p->done, p->total));
	if (rate >= 1) {
		double left = p->total > p->done ? (double)(p->total - p->done) / rate : 0;

		printf(", %s/s, about %.0f s left", zlog_size(c, sizeof(c), (uint64_t)rate),
		       left < 1 && p->total > p->done ? 1 : left);
	}
	printf("\n");
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
		 zlog_size(sz, sizeof(sz),
			   (uint64_t)((double)(st->v[k] - prev->v[k]) / secs + 0.5)));
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
	if (st->has[K_CHARGED] && st->v[K_CHARGED])
		printf(", of which %s held by parked decoders", size(a, sizeof(a), st, K_CHARGED));
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
		printf("hit ratio  n/a (%s)\n",
		       st->has[K_HITS] ? "no lookups yet" : "not reported");
	if (st->v[K_ROOM_WAITS])
		printf("           %" PRIu64 " lookups waited for room in a full cache\n",
		       st->v[K_ROOM_WAITS]);

	printf("decoded    %s%s", size(a, sizeof(a), st, K_DECODED),
	       rate(r, sizeof(r), st, prev, secs, K_DECODED));
	if (st->has[K_READAHEAD])
		printf(", of which read-ahead %s", size(b, sizeof(b), st, K_READAHEAD));
	if (st->v[K_PREFAULT])
		printf("; %s of pages faulted in ahead", size(b, sizeof(b), st, K_PREFAULT));
	printf("\n");
	if (st->has[K_SERVED]) {
		printf("served     %s%s\n", size(a, sizeof(a), st, K_SERVED),
		       rate(r, sizeof(r), st, prev, secs, K_SERVED));
		if (st->v[K_SERVED] && st->has[K_DECODED])
			printf("amplif.    %.2fx  (decoded %s to serve %s; each file's cause below)\n",
			       (double)st->v[K_DECODED] / (double)st->v[K_SERVED],
			       size(a, sizeof(a), st, K_DECODED), size(b, sizeof(b), st, K_SERVED));
		else
			printf("amplif.    n/a  (nothing served yet)\n");
	} else {
		printf("served     n/a (daemon too old)\n");
	}
	/* each format's own counter (xz: Indexes read), then the passes of those that save one */
	printf("indexes    ");
	for (int id = 1; id <= fmttab_count(); id++)
		if (fmttab_counter(id))
			printf("%" PRIu64 " %s read, ", st->fmt[id], fmttab_name(id));
	printf("%" PRIu64 " built by a pass (", st->v[K_BUILT]);
	for (int id = 1, k = 0; id <= fmttab_count(); id++)
		if (fmttab_saves(id))
			printf("%s%s", k++ ? ", " : "", fmttab_name(id));
	printf("), %" PRIu64 " loaded from index_dir\n", st->v[K_LOADED]);
	if (st->has[K_ERRORS])
		printf("errors     %" PRIu64 " failed reads\n", st->v[K_ERRORS]);
	else
		printf("errors     n/a\n");
	if (st->has[K_INDEX_ERRORS] && st->ndamaged) {
		/* the last few, named with their reasons; the log has them all */
		printf("corrupt    %" PRIu64 " archives failed to index (index errors; %s):\n",
		       st->v[K_INDEX_ERRORS],
		       st->v[K_INDEX_ERRORS] > st->ndamaged ? "the last ones, all in the log"
							    : "each in the log");
		for (unsigned i = 0; i < st->ndamaged; i++) {
			printf("  ");
			put_path(st->damaged[i][0]);
			printf(": ");
			put_path(st->damaged[i][1]);
			printf("\n");
		}
	} else if (st->has[K_INDEX_ERRORS]) {
		printf("corrupt    %" PRIu64
		       " archives failed to index (index errors; see the log)\n",
		       st->v[K_INDEX_ERRORS]);
	}
	if (st->log && strcmp(st->log, "syslog") == 0) {
		printf("log        syslog (journalctl -t zmount)\n");
	} else if (st->log && strcmp(st->log, "stderr") == 0) {
		printf("log        the daemon's stderr (-f)\n");
	} else if (st->log) {
		printf("log        ");
		put_path(st->log);
		printf("\n");
	}
	if (st->has[K_NODES])
		printf("tree       %" PRIu64 " nodes, %" PRIu64 " listings in %s of %s, %" PRIu64
		       " rebuilt; %" PRIu64 " reads of plain files\n",
		       st->v[K_NODES], st->v[K_LISTINGS], size(a, sizeof(a), st, K_LIST_BYTES),
		       size(b, sizeof(b), st, K_LIST_BUDGET), st->v[K_REBUILDS],
		       st->v[K_PLAIN_READS]);
	if (st->npass)
		printf("passes\n");
	for (unsigned i = 0; i < st->npass; i++)
		show_pass(&st->pass[i]);
	if (st->ntop) {
		printf("top files by bytes decoded\n");
		for (unsigned i = 0; i < st->ntop; i++)
			show_top(&st->top[i], st);
	}
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
				fprintf(stderr,
					"zmount-stat: %s: not the root of a zmount mount (it has no %s)\n",
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
			secs = (double)(t0.tv_sec - last.tv_sec) +
			       (double)(t0.tv_nsec - last.tv_nsec) / 1e9;
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
		left = watch -
		       ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
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
