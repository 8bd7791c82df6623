/* SPDX-License-Identifier: MIT */
/*
 * zmount-index: saved gzip indexes and zstd frame sizes for mounts to
 * reuse, and end-to-end integrity checks.  Everything goes through the
 * reader the daemon uses:
 *  - build:  reader_open with index_dir set loads a fresh saved index or
 *            runs the gzip checkpoint pass or the zstd measuring pass and
 *            saves one; the reader's counters tell which happened (a zstd
 *            file whose frames all state their size runs neither);
 *  - info:   reader_get_info, and the saved index's state (idxfile_load for
 *            the file's current identity);
 *  - verify: gzip: a checkpoint pass with no saved index (every member's
 *            CRC32 and ISIZE); xz and zstd: every Block or frame decoded to
 *            its end, so every Check and content checksum is verified;
 *  - prune:  idxfile_prune; of an s3:// prefix (-d s3://, source/s3idx.h),
 *            idxfile_prune_store, with one HEAD per recorded object.
 * The reader reports each error once, through its context's log sink, and
 * gives the reason as data too (reader_open's why, reader_last_error):
 * build and verify print that reason, one line per file, and hold back the
 * log line that said the same (struct reasons); stderr is never redirected.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fmttab.h"
#include "idxfile.h"
#include "idxopen.h"
#include "reader.h"
#include "srcid.h"
#include "s3idx.h"
#include "toolsrc.h"
#include "zlog.h"
#include "zmctx.h"

#define BUILD_CACHE	(1u << 20) /* build leaves nothing in the cache (warm_bytes is 0) */
#define BUILD_INDEX_MAX (64u << 20)
#define VERIFY_CACHE	(8u << 20) /* xz Blocks over 4 MiB are streamed in 2 MiB slices */
#define READ_BUF	(1u << 20)

enum { EX_OK = 0, EX_USAGE = 1, EX_CORRUPT = 2, EX_UNREADABLE = 3 };

/* The index directory's store (-d DIR or s3://, idxopen.h), open while a command runs. */
static struct idxstore *store;
/* It is an s3:// prefix's. */
static bool shared;

static const char usage[] =
	"usage: zmount-index build [-d DIR|s3://BUCKET/PREFIX] [-q] [S3 FLAGS]\n"
	"                          PATH|s3://BUCKET/KEY...\n"
	"       zmount-index info [-d DIR|s3://BUCKET/PREFIX] [S3 FLAGS]\n"
	"                         FILE|s3://BUCKET/KEY...\n"
	"       zmount-index verify [S3 FLAGS] PATH|s3://BUCKET/KEY...\n"
	"       zmount-index prune [-d DIR|s3://BUCKET/PREFIX] [S3 FLAGS]\n"
	"\n"
	"  build   save the index of every gzip file, and the frame sizes of every\n"
	"          zstd file whose frames do not state them (zstd from a pipe), known\n"
	"          by their magic, among PATHs and in directories under them (symlinks\n"
	"          not followed) and the objects s3://BUCKET/KEY names, or under\n"
	"          a prefix s3://BUCKET/PREFIX/ (a mount of the bucket with the same\n"
	"          endpoint= finds them), where mounts look\n"
	"          for them.  xz files carry their own index.  Then the checkpoints\n"
	"          inside every xz Block and zstd frame over 32 MiB (two spans), as a\n"
	"          mount's background pass makes them.\n"
	"          Exit: 0 all indexed, 2 some file corrupt or unreadable.\n"
	"  info    format, members/Streams, checkpoints/Blocks, sizes, and the saved\n"
	"          index: its file, size and state (fresh, stale, missing, corrupt,\n"
	"          untrusted: the index directory or file is not only ours or root's).\n"
	"          Exit: 0, or 2 if some file could not be opened as an archive.\n"
	"  verify  full integrity check: every xz Block and Check, every gzip member's\n"
	"          CRC32 and ISIZE, every zstd frame and content checksum, of each FILE,\n"
	"          and of every xz, gzip and zstd file (known\n"
	"          by its magic) in directories under each directory PATH (or under\n"
	"          each s3://BUCKET/PREFIX/), in name\n"
	"          order (other files there are skipped, as build skips them).\n"
	"          Prints 'FILE: ok', 'FILE: corrupt: why' or\n"
	"          'FILE: unreadable: why'.  Exit: 0 all verified; 2 some file corrupt\n"
	"          (wins over 3); 3 some file could not be read (missing, permission,\n"
	"          I/O error, not an xz, gzip or zstd file).\n"
	"  prune   remove the indexes whose source is gone or changed.  In an\n"
	"          s3:// prefix: blobs that are damaged or not an index, and those\n"
	"          whose s3:// object is gone or has another ETag, size or\n"
	"          Last-Modified (one HEAD each); an index of a local path (a local\n"
	"          mount's) is kept unless damaged: it may be another machine's.\n"
	"          Exit: 0, or 2 if the directory or prefix cannot be read.\n"
	"\n"
	"  -d DIR  index directory (default: $XDG_CACHE_HOME/zmount or ~/.cache/zmount),\n"
	"          or s3://BUCKET/PREFIX, a mount's shared index_dir (with the S3 flags)\n"
	"  -q      no progress bar and no summary line\n"
	"  -h, --help     this text\n"
	"  -V, --version  the version\n"
	"S3 FLAGS, for s3:// URLs and -d s3://:\n" TOOLSRC_HELP "Bad usage exits with 1.\n";

static __attribute__((format(printf, 1, 2))) int bad_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("zmount-index: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see zmount-index --help)\n", stderr);
	return EX_USAGE;
}

static void *xalloc(void *p)
{
	if (!p) {
		fputs("zmount-index: out of memory\n", stderr);
		exit(EX_UNREADABLE);
	}
	return p;
}

/*
 * The readers' log lines come here (zmctx_set_log), never through stderr.
 * A file's reason is data: the why of reader_open, or reader_last_error's
 * after a read failed.  The line that said it is held back, so a failure
 * is one line; every other line (warnings, a later failure of the same
 * file) is passed on to stderr, the progress bar cleared first, so no log
 * line lands in the middle of the bar.
 */
struct prog;

struct reasons {
	bool clear;	     /* a progress bar is showing: clear it before passing lines on */
	struct prog *pg;     /* that bar (build), or NULL */
	bool held;	     /* a line is held back: the file's first line with a why */
	struct zerr why;     /* that line's why */
	char name[PATH_MAX]; /* the file it names ("" if none) */
	char text[1024];     /* the line without the name */
};

/* Writes a line as zlog would, escaped: "zmount-index: LEVEL: NAME: text". */
static void prog_lock(struct prog *pg, bool lock);

static void pass_on(struct reasons *rs, enum zlog_level level, const char *name, const char *text)
{
	prog_lock(rs->pg, true); /* the bar's thread draws nothing meanwhile */
	if (rs->clear)
		fputs("\r\033[K", stderr);
	if (name && name[0])
		zlog(level, "%s: %s", name, text);
	else
		zlog(level, "%s", text);
	prog_lock(rs->pg, false);
}

static void collect(void *user, enum zlog_level level, const char *name, const char *text,
		    const struct zerr *why)
{
	struct reasons *rs = user;

	if (level != ZLOG_ERROR || !why || rs->held) {
		pass_on(rs, level, name, text);
		return;
	}
	rs->held = true;
	rs->why = *why;
	snprintf(rs->name, sizeof(rs->name), "%s", name ? name : "");
	snprintf(rs->text, sizeof(rs->text), "%s", text);
}

/* Before a file: nothing held. */
static void reasons_begin(struct reasons *rs)
{
	rs->held = false;
}

/*
 * After it, given its reason (why, "" if it has none): the held line is
 * dropped if it said that reason, which the caller prints; else passed on.
 */
static void reasons_end(struct reasons *rs, const struct zerr *why)
{
	if (rs->held && strcmp(rs->why.msg, why->msg) != 0)
		pass_on(rs, ZLOG_ERROR, rs->name, rs->text);
	rs->held = false;
}

/* A context whose readers' lines go to rs. */
static struct zmctx *new_ctx(size_t cache_size, struct reasons *rs, enum zlog_level max)
{
	struct zmctx *zm = NULL;

	if (zmctx_new(cache_size, &zm) < 0)
		xalloc(NULL);
	rs->held = false;
	zmctx_set_log(zm, collect, rs, max);
	return zm;
}

/* -d DIR or s3://BUCKET/PREFIX, or the default directory, into dir (PATH_MAX bytes). */
static int get_dir(const char *opt, char *dir)
{
	if (opt && (!opt[0] || strlen(opt) >= PATH_MAX))
		return bad_usage("bad index directory '%s'", opt);
	if (opt)
		strcpy(dir, opt);
	else if (idxfile_default_dir(dir, PATH_MAX) < 0)
		return bad_usage("no home directory for the default index directory; use -d DIR");
	return 0;
}

/* The gzip and zstd files to build, with their compressed sizes, and the count of the rest. */
struct item {
	char *path;
	uint64_t size;
};

struct list {
	struct item *v;
	size_t n, cap;
	char **ckv; /* build: files of formats that save no index (xz), for their checkpoints */
	size_t nck;
	uint64_t bytes;
	unsigned skipped[FMTTAB_MAX]; /* build: by format id, files of formats that save no index */
	unsigned other, failed;
	bool all; /* verify: list every archive, and report failures as verify lines */
};

static void walk_fail(struct list *l, const char *path, int err)
{
	char esc[4 * PATH_MAX];

	zlog_escape(esc, sizeof(esc), path);
	if (l->all)
		printf("%s: unreadable: %s\n", esc, strerror(err));
	else
		fprintf(stderr, "zmount-index: %s: %s\n", esc, strerror(err));
	l->failed++;
}

/* path opened read-only with flags as a local source; NULL with errno set if it cannot be. */
static struct zsrc *open_src(const char *path, int flags)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | flags), ret;
	struct zsrc *src;

	if (fd < 0)
		return NULL;
	ret = zsrc_local(fd, &src);
	errno = -ret;
	return src;
}

/* path, a local file or an s3:// URL, as a source; NULL with errno set (a URL's reason in msg). */
static struct zsrc *open_any(const char *path, char *msg, size_t n)
{
	struct zsrc *src = NULL;

	msg[0] = '\0';
	if (!toolsrc_is_url(path))
		return open_src(path, 0);
	errno = -toolsrc_open(path, &src, msg, n);
	return src;
}

/* Adds path, of format fmt (fmttab_by_magic's answer) and size bytes, to the list of its kind. */
static void add(struct list *l, const char *path, int fmt, uint64_t size)
{
	if (fmttab_saves(fmt) || (l->all && fmt)) {
		if (l->n == l->cap) {
			l->cap = l->cap ? l->cap * 2 : 64;
			l->v = xalloc(realloc(l->v, l->cap * sizeof(*l->v)));
		}
		l->v[l->n].path = xalloc(strdup(path));
		l->v[l->n++].size = size;
		l->bytes += size;
	} else if (!fmt) {
		l->other++;
	} else {
		l->skipped[fmt]++;
		if (fmttab_has_ckpts(fmt)) {
			l->ckv = xalloc(realloc(l->ckv, (l->nck + 1) * sizeof(*l->ckv)));
			l->ckv[l->nck++] = xalloc(strdup(path));
		}
	}
}

/* Whether an s3:// URL names a prefix by its spelling: it ends in '/' or names a bucket alone. */
static bool url_dir(const char *url)
{
	return url[strlen(url) - 1] == '/' || !strchr(url + strlen("s3://"), '/');
}

/* Adds one listed object of a prefix by its magic (one ranged GET). */
static int walk_listed(void *arg, const char *url, const struct s3_stat *os)
{
	struct list *l = arg;
	char msg[256];
	struct zsrc *src;
	struct stat st;
	int fmt = toolsrc_open_listed(url, os, &src, msg, sizeof(msg));

	if (fmt == 0)
		fmt = zsrc_stat(src, &st);
	if (fmt == 0)
		fmt = fmttab_by_magic(src);
	zsrc_put(src);
	if (fmt >= 0) {
		add(l, url, fmt, (uint64_t)st.st_size);
		return 0;
	}
	fprintf(stderr, "zmount-index: %s: %s\n", url, msg[0] ? msg : strerror(-fmt));
	l->failed++;
	return 0;
}

/*
 * Adds the object of an s3://BUCKET/KEY URL by its magic (one HEAD, one ranged GET), or, for a
 * URL ending in '/', naming a bucket, or naming no object, every object under it as a prefix.
 */
static void walk_url(struct list *l, const char *url)
{
	bool dir = url_dir(url);
	char msg[512], lmsg[400];
	struct zsrc *src = dir ? NULL : open_any(url, msg, sizeof(msg));
	struct stat st;
	int fmt = !src ? -errno : zsrc_stat(src, &st);

	if (!dir && fmt == 0)
		fmt = fmttab_by_magic(src);
	zsrc_put(src);
	if (!dir && fmt >= 0) {
		add(l, url, fmt, (uint64_t)st.st_size);
		return;
	}
	if (dir || fmt == -ENOENT) { /* a prefix, as a local walk takes a directory */
		int ret = toolsrc_list(url, walk_listed, l, lmsg, sizeof(lmsg));

		if (ret == 0)
			return;
		if (dir || ret != -ENOENT)
			snprintf(msg, sizeof(msg), "%s", lmsg);
		else /* neither an object nor a prefix: say both */
			snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "; %s", lmsg);
		fmt = ret;
	}
	fprintf(stderr, "zmount-index: %s: %s\n", url, msg[0] ? msg : strerror(-fmt));
	l->failed++;
}

/*
 * Adds path, or every file under it, by magic.  Only a top path's symlink is followed.  A top
 * s3:// URL names one object or, failing that, a prefix to walk (walk_url).
 */
static void walk(struct list *l, const char *path, bool top)
{
	struct zsrc *src;
	struct stat st;
	int fmt;

	if (top && toolsrc_is_url(path)) {
		walk_url(l, path);
		return;
	}
	if ((top ? stat(path, &st) : lstat(path, &st)) < 0) {
		walk_fail(l, path, errno);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;
		char child[PATH_MAX];

		if (!d) {
			walk_fail(l, path, errno);
			return;
		}
		while ((e = readdir(d))) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if ((size_t)snprintf(child, sizeof(child), "%s/%s", path, e->d_name) >=
			    sizeof(child))
				walk_fail(l, path, ENAMETOOLONG);
			else
				walk(l, child, false);
		}
		closedir(d);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		if (top)
			walk_fail(l, path, EINVAL);
		return;
	}
	src = open_src(path, top ? 0 : O_NOFOLLOW);
	fmt = !src ? -errno : fmttab_by_magic(src);
	zsrc_put(src);
	if (fmt < 0)
		walk_fail(l, path, -fmt);
	else
		add(l, path, fmt, (uint64_t)st.st_size);
}

static double mib(uint64_t n)
{
	return (double)n / (1u << 20);
}

/*
 * build's progress line on a terminal, as pv and gztool draw theirs: one
 * line redrawn with \r, at most PROG_HZ times a second, by a thread of its
 * own, so a long pass over one large file shows its bytes moving.  It
 * gives files done, compressed bytes done of all (the file being passed
 * over counted by its pass's share done, zmctx_passes), the rate since the
 * start, the time left at that rate, and the file.  The main thread says
 * which file starts (prog_file) and prints its own lines under lock, so a
 * line never lands inside the bar.
 */
#define PROG_HZ 4

struct prog {
	bool on; /* stderr is a terminal and not -q */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct zmctx *zm;
	struct timespec t0;
	/* Protected by lock. */
	bool stop;
	size_t i, n;		/* files done, of all */
	uint64_t before, total; /* compressed bytes of the files done, of all */
	uint64_t size;		/* of the file being passed over */
	char path[PATH_MAX];
};

static double since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* "1:02:03", "4:05" or "6s" */
static void hms(char *buf, size_t len, double secs)
{
	unsigned long s = secs > 0 && secs < 1e9 ? (unsigned long)(secs + 0.5) : 0;

	if (s >= 3600)
		snprintf(buf, len, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
	else if (s >= 60)
		snprintf(buf, len, "%lu:%02lu", s / 60, s % 60);
	else
		snprintf(buf, len, "%lus", s);
}

/* Draws the line; the caller holds pg->lock. */
static void prog_draw(struct prog *pg)
{
	struct winsize ws;
	size_t cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 40 ? ws.ws_col : 80;
	size_t plen = strlen(pg->path), room;
	struct zmctx_pass p;
	uint64_t done = pg->before;
	double secs = since(&pg->t0), rate;
	char line[256], a[32], b[32], r[48], left[48];
	int n;

	/* the current file's share: its pass's fraction done, in its compressed bytes */
	if (zmctx_passes(pg->zm, NULL, &p, 1) == 1 && p.total)
		done += (uint64_t)((double)pg->size *
				   (double)(p.done < p.total ? p.done : p.total) / (double)p.total);
	/* from the second redraw on (PROG_HZ): a pass of under a second still shows one */
	rate = secs >= 0.2 ? (double)done / secs : 0;
	if (rate >= 1) {
		zlog_size(a, sizeof(a), (uint64_t)rate);
		snprintf(r, sizeof(r), "%s/s", a);
		hms(a, sizeof(a), (double)(pg->total > done ? pg->total - done : 0) / rate);
		snprintf(left, sizeof(left), "%s left", a);
	} else {
		snprintf(r, sizeof(r), "-- B/s");
		snprintf(left, sizeof(left), "-- left");
	}
	n = snprintf(line, sizeof(line), "[%-20.*s] %zu/%zu files  %s/%s  %s  %s  ",
		     pg->total ? (int)(done * 20 / pg->total) : 0, "####################", pg->i,
		     pg->n, zlog_size(a, sizeof(a), done), zlog_size(b, sizeof(b), pg->total), r,
		     left);
	room = cols - 1 > (size_t)n + 3 ? cols - 1 - (size_t)n : 3;
	if (plen <= room)
		fprintf(stderr, "\r%s%s\033[K", line, pg->path);
	else
		fprintf(stderr, "\r%s...%s\033[K", line, pg->path + plen - (room - 3));
	fflush(stderr);
}

static void *prog_run(void *arg)
{
	struct prog *pg = arg;
	struct timespec until;

	pthread_mutex_lock(&pg->lock);
	while (!pg->stop) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 1000000000L / PROG_HZ;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&pg->wake, &pg->lock, &until);
		if (!pg->stop && pg->path[0])
			prog_draw(pg);
	}
	pthread_mutex_unlock(&pg->lock);
	return NULL;
}

static void prog_start(struct prog *pg, struct zmctx *zm, size_t n, uint64_t total)
{
	pg->zm = zm;
	pg->n = n;
	pg->total = total;
	clock_gettime(CLOCK_MONOTONIC, &pg->t0);
	pthread_mutex_init(&pg->lock, NULL);
	pthread_cond_init(&pg->wake, NULL);
	if (pg->on && pthread_create(&pg->thread, NULL, prog_run, pg) != 0)
		pg->on = false;
}

/* File path of size compressed bytes begins (the one before it is done): redraws at once. */
static void prog_file(struct prog *pg, const char *path, uint64_t size)
{
	if (!pg->on)
		return;
	pthread_mutex_lock(&pg->lock);
	if (pg->path[0]) { /* the one before is done */
		pg->before += pg->size;
		pg->i++;
	}
	pg->size = size;
	snprintf(pg->path, sizeof(pg->path), "%s", path);
	prog_draw(pg);
	pthread_mutex_unlock(&pg->lock);
}

/* Takes (lock) or drops the bar's lock, if a bar is drawn (pg may be NULL). */
static void prog_lock(struct prog *pg, bool lock)
{
	if (pg && pg->on && lock)
		pthread_mutex_lock(&pg->lock);
	else if (pg && pg->on)
		pthread_mutex_unlock(&pg->lock);
}

/* Prints one line of the main thread's on stderr, the bar cleared first. */
static __attribute__((format(printf, 2, 3))) void prog_say(struct prog *pg, const char *fmt, ...)
{
	va_list ap;

	if (pg->on)
		pthread_mutex_lock(&pg->lock);
	if (pg->on)
		fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (pg->on)
		pthread_mutex_unlock(&pg->lock);
}

static void prog_stop(struct prog *pg)
{
	if (pg->on) {
		pthread_mutex_lock(&pg->lock);
		pg->stop = true;
		pthread_cond_signal(&pg->wake);
		pthread_mutex_unlock(&pg->lock);
		pthread_join(pg->thread, NULL);
		fputs("\r\033[K", stderr);
	}
	pthread_mutex_destroy(&pg->lock);
	pthread_cond_destroy(&pg->wake);
}

/* True if the store holds a fresh saved index for r's source, the version r opened. */
static bool saved_for(const char *path, const struct reader *r)
{
	char real[PATH_MAX], msg[256];
	struct reader_info in;
	struct zsrc *src;
	bool ok;

	if (toolsrc_is_url(path)) /* an object is keyed by its URL, as a mount keys it */
		src = snprintf(real, sizeof(real), "%s", path) < (int)sizeof(real)
			      ? open_any(path, msg, sizeof(msg))
			      : NULL;
	else
		src = realpath(path, real) ? open_src(real, O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
					   : NULL;
	if (!src)
		return false;
	reader_get_info(r, &in);
	ok = reader_same_version(r, src) && fmttab_saved(in.fmt, store, real, src, NULL) == 0;
	zsrc_put(src);
	return ok;
}

static int format_of(const struct reader *r)
{
	struct reader_info in;

	reader_get_info(r, &in);
	return in.fmt;
}

/* Checkpoint counts of a build: sets built, found saved, failed. */
struct ckcount {
	unsigned built, fresh, failed;
};

/* What build did to each format's files, for the summary's line per format. */
struct fmtsum {
	unsigned files;
	uint64_t bytes;						   /* compressed */
	unsigned built, fresh, unneeded, failed;		   /* saved indexes */
	unsigned ck_built, ck_fresh, ck_none, ck_unsup, ck_failed; /* checkpoints */
	uint64_t saved; /* bytes of the index and checkpoint files this build wrote */
};

static int index_size(const char *ipath, uint64_t *size);

/* The size of the index file (ckpt: the checkpoint file) dir holds for path's source; 0 if none. */
static uint64_t saved_size(const char *dir, const char *path, bool ckpt)
{
	char msg[256], ipath[PATH_MAX];
	struct idxfile_id id;
	struct zsrc *src = open_any(path, msg, sizeof(msg));
	uint64_t size = 0;

	if (src && idxfile_identify(src, &id) == 0 &&
	    (ckpt ? idxfile_path_ckpt(dir, &id, ipath, sizeof(ipath))
		  : idxfile_path(dir, &id, ipath, sizeof(ipath))) == 0 &&
	    index_size(ipath, &size) < 0)
		size = 0;
	zsrc_put(src);
	return size;
}

/*
 * The checkpoints inside r's wide xz Blocks or zstd frames, as a mount
 * would build them: loaded if saved and fresh, else built and saved.
 * Counted in c and in fs, the file's format's line.
 */
static void build_ckpts(struct zmctx *zm, struct reader *r, const char *path, const char *dir,
			struct prog *pg, struct ckcount *c, struct fmtsum *fs)
{
	struct reader_counters before, after;
	struct reader_info in;
	struct zerr why = { 0 };
	struct zsrc *src;
	char msg[256];
	int ret;

	reader_get_info(r, &in);
	if (in.ckpt_wanted == 0) {
		fs->ck_none += fmttab_has_ckpts(in.fmt); /* gzip has none to need */
		return;
	}
	src = open_any(path, msg, sizeof(msg));
	reader_get_counters(zm, &before);
	ret = !src ? zerr_set(&why, -errno, 0, "%s", msg[0] ? msg : strerror(errno))
		   : reader_build_checkpoints(r, src, &why);
	reader_get_counters(zm, &after);
	zsrc_put(src);
	if (ret == -ENOTSUP) {
		fs->ck_unsup++;
	} else if (ret < 0) {
		prog_say(pg, "zmount-index: %s: no checkpoints: %s\n", path, why.msg);
		c->failed++;
		fs->ck_failed++;
	} else if (after.checkpoints > before.checkpoints) {
		c->built++;
		fs->ck_built++;
		fs->saved += saved_size(dir, path, true);
	} else {
		c->fresh++;
		fs->ck_fresh++;
	}
}

/* build's second half: files that need no saved index (xz), for their checkpoints. */
static void build_rest(struct zmctx *zm, const struct reader_opts *ro, struct list *l,
		       const char *dir, struct prog *pg, struct ckcount *c, struct fmtsum *sum)
{
	for (size_t i = 0; i < l->nck; i++) {
		struct reader *r;
		struct stat st;

		prog_file(pg, l->ckv[i],
			  !toolsrc_is_url(l->ckv[i]) && stat(l->ckv[i], &st) == 0
				  ? (uint64_t)st.st_size
				  : 0);
		if (toolsrc_reader(l->ckv[i], zm, ro, &r, NULL) == 0) {
			struct reader_info in;

			reader_get_info(r, &in);
			sum[in.fmt].files++;
			sum[in.fmt].bytes += in.csize;
			build_ckpts(zm, r, l->ckv[i], dir, pg, c, &sum[in.fmt]);
			reader_close(r);
		}
		free(l->ckv[i]);
	}
	free(l->ckv);
}

/*
 * build's summary line, the formats named from the table: "3 gzip and zstd
 * files, ...; skipped: xz=1 other=0; not needed: zstd=1; ...".
 */
static void build_summary(const struct list *l, unsigned built, unsigned fresh,
			  const unsigned *unneeded, const struct ckcount *ck, const char *dir)
{
	const char *sep = "";

	printf("zmount-index: %zu ", l->n);
	for (int id = 1; id <= fmttab_count(); id++)
		if (fmttab_saves(id)) {
			printf("%s%s", sep, fmttab_name(id));
			sep = " and ";
		}
	printf(" files, %.1f MiB: built=%u fresh=%u failed=%u; skipped:", mib(l->bytes), built,
	       fresh, l->failed);
	for (int id = 1; id <= fmttab_count(); id++)
		if (!fmttab_saves(id))
			printf(" %s=%u", fmttab_name(id), l->skipped[id]);
	printf(" other=%u; not needed:", l->other);
	for (int id = 1; id <= fmttab_count(); id++)
		if (fmttab_index_optional(id))
			printf(" %s=%u", fmttab_name(id), unneeded[id]);
	printf("; checkpoints: built=%u fresh=%u failed=%u; index directory %s\n", ck->built,
	       ck->fresh, ck->failed, dir);
}

/* One part of a format's line: ", what N" (the first without the comma). */
static void part(bool *first, unsigned n, const char *what)
{
	if (!n)
		return;
	printf("%s%s %u", *first ? " " : ", ", what, n);
	*first = false;
}

/*
 * What was built, format by format, for people: "xz: 1 file, 207 MiB:
 * checkpoints built for 1 (8.8 MiB saved)".  Before the summary line.
 */
static void build_formats(const struct fmtsum *sum)
{
	for (int id = 1; id <= fmttab_count(); id++) {
		const struct fmtsum *f = &sum[id];
		bool first = true;
		char a[32];

		if (!f->files)
			continue;
		printf("%s: %u file%s, %s:", fmttab_name(id), f->files, f->files == 1 ? "" : "s",
		       zlog_size(a, sizeof(a), f->bytes));
		part(&first, f->built, "index built for");
		part(&first, f->fresh, "index already saved for");
		part(&first, f->unneeded, "no index needed (sizes stated) for");
		part(&first, f->failed, "index failed for");
		part(&first, f->ck_built, "checkpoints built for");
		part(&first, f->ck_fresh, "checkpoints already saved for");
		part(&first, f->ck_none, "no checkpoints needed (small units) for");
		part(&first, f->ck_unsup, "no checkpoints possible for");
		part(&first, f->ck_failed, "checkpoints failed for");
		if (first)
			printf(" nothing to do");
		if (f->saved)
			printf(" (%s saved)", zlog_size(a, sizeof(a), f->saved));
		printf("\n");
	}
}

static int cmd_build(int argc, char *argv[], const char *dir, bool quiet)
{
	struct prog pg = { .on = !quiet && isatty(STDERR_FILENO) };
	struct reasons rs = { .clear = pg.on, .pg = &pg };
	struct list l = { 0 };
	unsigned built = 0, fresh = 0, unneeded[FMTTAB_MAX] = { 0 };
	struct fmtsum sum[FMTTAB_MAX] = { 0 };
	struct ckcount ck = { 0 };
	struct reader_opts ro;
	struct zmctx *zm;
	uint64_t total = 0;

	for (int i = 0; i < argc; i++)
		walk(&l, argv[i], true);
	reader_opts_default(&ro, BUILD_CACHE);
	ro.index_dir = store;
	/* A mount's default limit for maps and checkpoints (cache_size=256M), not the tool's
	 * cache's. */
	ro.index_max = BUILD_INDEX_MAX;
	zm = new_ctx(BUILD_CACHE, &rs, ZLOG_WARN); /* not the "rebuilding a stale index" notes */
	/* the bar's total: every file's compressed size (the checkpoint-only ones stat'ed) */
	total = l.bytes;
	for (size_t i = 0; pg.on && i < l.nck; i++) {
		struct stat st;

		if (!toolsrc_is_url(l.ckv[i]) && stat(l.ckv[i], &st) == 0)
			total += (uint64_t)st.st_size;
	}
	prog_start(&pg, zm, l.n + l.nck, total);
	for (size_t i = 0; i < l.n; i++) {
		const char *path = l.v[i].path;
		struct reader_counters before, after;
		struct zerr why = { 0 };
		struct reader *r;
		struct fmtsum *fs = NULL;
		int ret;

		prog_file(&pg, path, l.v[i].size);
		reader_get_counters(zm, &before);
		reasons_begin(&rs);
		ret = toolsrc_reader(path, zm, &ro, &r, &why);
		reasons_end(&rs, &why);
		reader_get_counters(zm, &after);
		if (ret == 0) {
			fs = &sum[format_of(r)];
			fs->files++;
			fs->bytes += l.v[i].size;
		}
		if (ret == 0 && after.indexes_loaded > before.indexes_loaded) {
			fresh++;
			fs->fresh++;
		} else if (ret == 0 && after.indexes_built == before.indexes_built &&
			   fmttab_index_optional(format_of(r))) {
			unneeded[format_of(
				r)]++; /* zstd whose frames state their sizes: nothing to save */
			fs->unneeded++;
		} else if (ret == 0 && saved_for(path, r)) {
			built++;
			fs->built++;
			fs->saved += saved_size(dir, path, false);
		} else {
			prog_say(&pg, "zmount-index: %s: %s\n", path,
				 ret == 0 ? "index built but not saved" : why.msg);
			l.failed++;
			if (fs)
				fs->failed++;
		}
		if (ret == 0)
			build_ckpts(zm, r, path, dir, &pg, &ck, fs);
		reader_close(r);
		free(l.v[i].path);
	}
	build_rest(zm, &ro, &l, dir, &pg, &ck, sum);
	prog_stop(&pg);
	if (!quiet) {
		build_formats(sum);
		build_summary(&l, built, fresh, unneeded, &ck, dir);
	}
	toolsrc_end();
	zmctx_free(zm);
	free(l.v);
	return l.failed || ck.failed ? EX_CORRUPT : EX_OK;
}

/* The size of the index file ipath: a local file's, or a blob's of the shared store. */
static int index_size(const char *ipath, uint64_t *size)
{
	struct stat st;

	if (shared)
		return s3idx_size(store, strrchr(ipath, '/') + 1, size);
	if (lstat(ipath, &st) < 0)
		return -errno;
	*size = (uint64_t)st.st_size;
	return 0;
}

/*
 * Writes the index_* lines of source src, of a format that saves an index
 * (gzip, zstd), to out; returns 0 if its saved index is fresh, 1 if it
 * needs none (zstd sizes all stated).
 */
static int index_state(FILE *out, struct zsrc *src, const char *real, const char *dir, int fmt)
{
	struct zerr err = { 0 };
	char ipath[PATH_MAX];
	struct idxfile_id id;
	uint64_t size = 0;
	int ret = idxfile_identify(src, &id);

	if (ret == 0)
		ret = idxfile_path(dir, &id, ipath, sizeof(ipath));
	if (ret == 0) {
		fprintf(out, "index_file=%s\n", ipath);
		if (index_size(ipath, &size) == 0)
			fprintf(out, "index_size=%" PRIu64 "\n", size);
		ret = fmttab_saved(fmt, store, real, src, &err);
	}
	fprintf(out, "index_state=%s\n",
		ret == 1	  ? "unneeded"
		: ret == 0	  ? "fresh"
		: ret == -ESTALE  ? "stale"
		: ret == -ENOENT  ? "missing"
		: ret == -EBADMSG ? "corrupt"
		: ret == -EPERM	  ? "untrusted"
				  : "unreadable");
	if (ret < 0 && ret != -ENOENT)
		fprintf(out, "index_reason=%s\n", err.msg[0] ? err.msg : strerror(-ret));
	return ret;
}

/*
 * The checkpoint lines of a source whose format has checkpoints (xz, zstd): how many of its units
 * are wide enough to have checkpoints, and whether dir holds a set a mount would load for this
 * version (the mount's own load and checks).
 */
static void ckpt_state(const char *real, const char *dir, uint64_t units)
{
	struct idxfile_ckpt *sets = NULL;
	struct idxfile_id id;
	char ipath[PATH_MAX], msg[256];
	struct zsrc *src = NULL;
	size_t n = 0;
	int ret;

	printf("checkpoint_units=%" PRIu64 "\n", units);
	src = units ? open_any(real, msg, sizeof(msg)) : NULL;
	ret = !src ? -errno : idxfile_identify(src, &id);
	if (units == 0 || (ret == 0 && idxfile_path_ckpt(dir, &id, ipath, sizeof(ipath)) < 0)) {
		zsrc_put(src);
		printf("checkpoints_state=unneeded\n");
		return;
	}
	if (ret == 0)
		printf("checkpoints_file=%s\n", ipath);
	if (ret == 0) /* id.src held: a renamed source is proven by its bytes */
		ret = idxfile_load_ckpt(store, real, &id, 0, &sets, &n, NULL);
	zsrc_put(src);
	for (size_t i = 0; i < n; i++)
		ckpt_set_free((struct ckpt_set *)sets[i].set);
	free(sets);
	printf("checkpoints_state=%s\n", ret == 0	  ? "fresh"
					 : ret == -ENOENT ? "missing"
					 : ret == -ESTALE ? "stale"
					 : ret == -EPERM  ? "untrusted"
							  : "invalid");
}

static int info_one(const char *path, const char *dir, struct zmctx *zm)
{
	struct zerr why = { 0 };
	char why_text[4 * sizeof(why.msg)];
	char real[PATH_MAX], *ilines = NULL, counts[256], msg[256];
	struct zsrc *src = open_any(path, msg, sizeof(msg));
	struct reader_counters before, after;
	struct reader_opts ro;
	struct reader_info in;
	struct reader *r;
	size_t ilen;
	FILE *idx;
	int ret, fmt;

	printf("file=%s\n", path);
	/* An object is named by its URL, as a mount names it. */
	if (toolsrc_is_url(path))
		snprintf(real, sizeof(real), "%s", path);
	fmt = !src || (!toolsrc_is_url(path) && !realpath(path, real)) ? -errno
								       : fmttab_by_magic(src);
	if (fmt <= 0) {
		if (msg[0])
			printf("error=%s\n", msg);
		else if (fmt < 0)
			printf("error=%s\n", strerror(-fmt));
		else
			printf("error=not an %s file\n", fmttab_names());
		zsrc_put(src);
		return EX_CORRUPT;
	}
	printf("format=%s\n", fmttab_name(fmt));
	reader_opts_default(&ro, 1u << 20);
	idx = xalloc(open_memstream(&ilines, &ilen));
	/* A fresh saved index is used; otherwise the index is built in memory, not saved. */
	if (fmttab_saves(fmt) && index_state(idx, src, real, dir, fmt) == 0)
		ro.index_dir = store;
	fclose(idx);
	reader_get_counters(zm, &before);
	ret = reader_open_src(src, real, zm, &ro, &r, &why);
	reader_get_counters(zm, &after);
	if (ret == 0) {
		reader_get_info(r, &in);
		fmttab_info_counts(fmt, &in, counts, sizeof(counts));
		fputs(counts, stdout);
		printf("compressed=%" PRIu64 "\nuncompressed=%" PRIu64 "\n", in.csize, in.usize);
		if (fmttab_saves(fmt))
			printf("index_used=%s\n",
			       after.indexes_loaded > before.indexes_loaded ? "saved"
			       : fmttab_index_optional(fmt) &&
					       after.indexes_built == before.indexes_built
				       ? "none"
				       : "memory");
	} else {
		/* The reason as data, one line whatever it quotes. */
		zlog_escape(why_text, sizeof(why_text), why.msg[0] ? why.msg : strerror(-ret));
		printf("error=%s\n", why_text);
	}
	fputs(ilines, stdout);
	free(ilines);
	if (ret == 0 && fmttab_has_ckpts(fmt))
		ckpt_state(real, dir, in.ckpt_wanted);
	reader_close(r);
	return ret == 0 ? EX_OK : EX_CORRUPT;
}

static int cmd_info(int argc, char *argv[], const char *dir)
{
	struct zmctx *zm;
	int status = EX_OK;

	/* The reader's lines go to stderr, as zlog writes them: info prints the reason itself. */
	if (zmctx_new(1u << 20, &zm) < 0)
		xalloc(NULL);
	for (int i = 0; i < argc; i++) {
		if (i > 0)
			putchar('\n');
		if (info_one(argv[i], dir, zm) != EX_OK)
			status = EX_CORRUPT;
		fflush(stdout);
	}
	toolsrc_end();
	zmctx_free(zm);
	return status;
}

/* Prints the file's line; returns EX_OK, EX_CORRUPT or EX_UNREADABLE. */
static int verify_one(const char *path, struct zmctx *zm, struct reasons *rs, char *buf)
{
	struct reader_opts ro;
	struct reader_info in;
	struct reader *r;
	struct zerr why = { 0 };
	char reason_esc[4 * sizeof(why.msg)], esc[4 * PATH_MAX];
	ssize_t n = 0;
	int ret;

	/* One line per file: a name with a newline must not make two. */
	zlog_escape(esc, sizeof(esc), path);
	reader_opts_default(&ro, VERIFY_CACHE); /* index_dir NULL: a fresh gzip pass */
	reasons_begin(rs);
	ret = toolsrc_reader(path, zm, &ro, &r, &why);
	if (ret == 0) {
		reader_get_info(r, &in);
		/* a format whose open did not check every byte (xz, zstd) is read whole */
		for (uint64_t off = 0; !fmttab_open_verifies(in.fmt) && off < in.usize;
		     off += (uint64_t)n) {
			n = reader_pread(r, buf, READ_BUF, off);
			if (n <= 0)
				break;
		}
	}
	if (ret == 0 && reader_last_error(r, &why) == 0 && n < 0)
		zerr_set(&why, (int)n, 0, "%s", strerror((int)-n)); /* not the data's: ENOMEM */
	reasons_end(rs, &why);
	zlog_escape(reason_esc, sizeof(reason_esc), why.msg);
	reader_close(r);
	if (ret == 0 && n >= 0) {
		printf("%s: ok\n", esc);
		return EX_OK;
	}
	printf("%s: %s: %s\n", esc, ret == -EINVAL || n == -EIO ? "corrupt" : "unreadable",
	       reason_esc);
	return ret == -EINVAL || n == -EIO ? EX_CORRUPT : EX_UNREADABLE;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->path, ((const struct item *)b)->path);
}

static int cmd_verify(int argc, char *argv[])
{
	struct reasons rs = { .clear = false };
	char *buf = xalloc(malloc(READ_BUF));
	bool corrupt = false, unreadable = false;
	struct zmctx *zm = new_ctx(VERIFY_CACHE, &rs, ZLOG_INFO);

	for (int i = 0; i < argc; i++) {
		struct list l = { .all = true };
		struct stat st;
		int ret;

		/* A directory (or an s3:// prefix ending in '/') is verified the way build
		 * indexes one: every archive under it. */
		if (toolsrc_is_url(argv[i]) ? url_dir(argv[i])
					    : stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			walk(&l, argv[i], true);
			qsort(l.v, l.n, sizeof(*l.v), by_path);
			unreadable |= l.failed > 0;
			for (size_t j = 0; j < l.n; j++) {
				ret = verify_one(l.v[j].path, zm, &rs, buf);
				corrupt |= ret == EX_CORRUPT;
				unreadable |= ret == EX_UNREADABLE;
				fflush(stdout);
				free(l.v[j].path);
			}
			free(l.v);
			if (l.other)
				fprintf(stderr,
					"zmount-index: %s: skipped %u files that are not %s files\n",
					argv[i], l.other, fmttab_names());
			continue;
		}
		ret = verify_one(argv[i], zm, &rs, buf);
		corrupt |= ret == EX_CORRUPT;
		unreadable |= ret == EX_UNREADABLE;
		fflush(stdout);
	}
	toolsrc_end();
	zmctx_free(zm);
	free(buf);
	return corrupt ? EX_CORRUPT : unreadable ? EX_UNREADABLE : EX_OK;
}

static int cmd_prune(const char *dir)
{
	unsigned removed = 0;
	int ret = idxfile_prune(store, &removed);

	if (ret < 0 && ret != -ENOENT) { /* no directory: nothing to prune */
		fprintf(stderr, "zmount-index: %s: %s\n", dir, strerror(-ret));
		return EX_CORRUPT;
	}
	printf("zmount-index: removed %u index files from %s\n", removed, dir);
	return EX_OK;
}

/* A shared prune's sources that it could not judge (source_now). */
struct unjudged {
	unsigned local; /* a local path: of whichever machine saved the index */
	unsigned other; /* an object of another endpoint, or one the HEAD could not tell */
};

/*
 * idxfile_prune_store's view of a recorded source: an object's identity by
 * one HEAD (its ETag, size and Last-Modified), if it was recorded through
 * this endpoint (the identity's device says which); -ENOENT for a 404.  A
 * local path is never judged: the index may be another machine's, whose
 * path is not this one's.
 */
static int source_now(void *arg, const struct idxfile_info *in, struct stat *st,
		      char tag[ZSRC_TAG_MAX])
{
	char bucket[64], key[1025], ep[512], msg[256];
	struct unjudged *u = arg;
	struct zsrc *src;
	int ret;

	if (!toolsrc_is_url(in->src)) {
		u->local++;
		return -ENOTSUP;
	}
	if (s3src_url(in->src, bucket, sizeof(bucket), key, sizeof(key)) != 1 ||
	    s3src_endpoint(toolsrc_conf(), ep, sizeof(ep)) < 0 ||
	    in->id.dev != (uint64_t)s3src_dev(ep, bucket)) {
		u->other++;
		return -EXDEV;
	}
	ret = toolsrc_open(in->src, &src, msg, sizeof(msg));
	if (ret == 0) {
		ret = zsrc_stat(src, st);
		zsrc_tag(src, tag);
		zsrc_put(src);
	}
	if (ret < 0 && ret != -ENOENT)
		u->other++;
	return ret;
}

/* prune -d s3://BUCKET/PREFIX: the shared store, by proof only (idxfile_prune_store). */
static int prune_shared(const char *dir)
{
	struct unjudged u = { 0 };
	unsigned removed = 0;
	int ret = idxfile_prune_store(store, source_now, &u, &removed);

	toolsrc_end();
	if (ret < 0) {
		fprintf(stderr, "zmount-index: %s: %s\n", dir, strerror(-ret));
		return EX_CORRUPT;
	}
	printf("zmount-index: removed %u index files from %s\n", removed, dir);
	if (u.local || u.other)
		fprintf(stderr,
			"zmount-index: %s: %u index files name a source that cannot be checked "
			"from here (%u a local path, %u an object this endpoint cannot tell): "
			"kept unless damaged\n",
			dir, u.local + u.other, u.local, u.other);
	return EX_OK;
}

/* Archives must not be opened as fd 0 to 2. */
static void open_std_fds(void)
{
	int fd;

	do
		fd = open("/dev/null", O_RDWR);
	while (fd >= 0 && fd <= STDERR_FILENO);
	if (fd >= 0)
		close(fd);
}

/* The shared store's client lines: a 404 is the usual answer to a get, so debug level only. */
static void store_log(void *arg, const char *line)
{
	(void)arg;
	zlog(ZLOG_DEBUG, "index store: %s", line);
}

/*
 * cmd with dir's store (idxopen.h): a local directory, or a shared one,
 * -d s3://BUCKET/PREFIX, opened with the S3 flags.
 */
static int run_store(const char *cmd, int argc, char *argv[], const char *dir, bool quiet)
{
	struct s3src_conf sc = *toolsrc_conf();
	char msg[1024];
	int ret;

	sc.log = store_log;
	if (idxopen(dir, &sc, &store, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "zmount-index: %s\n", msg);
		/* as build's unreadable inputs; info and prune know only 2 */
		return strcmp(cmd, "build") == 0 ? EX_UNREADABLE : EX_CORRUPT;
	}
	shared = strstr(dir, "://") != NULL;
	if (strcmp(cmd, "build") == 0)
		ret = cmd_build(argc, argv, dir, quiet);
	else if (strcmp(cmd, "info") == 0)
		ret = cmd_info(argc, argv, dir);
	else
		ret = shared ? prune_shared(dir) : cmd_prune(dir);
	idxstore_free(store);
	store = NULL;
	return ret;
}

int main(int argc, char *argv[])
{
	const char *cmd = argc > 1 ? argv[1] : "", *dopt = NULL;
	char dir[PATH_MAX];
	bool quiet = false, verify = strcmp(cmd, "verify") == 0;
	int c, nargs;

	open_std_fds();
	zlog_set_name("zmount-index");
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
		printf("zmount-index %s\n", ZMOUNT_VERSION);
		return EX_OK;
	}
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0 ||
	    (argc > 2 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0))) {
		fputs(usage, stdout);
		return EX_OK;
	}
	if (!cmd[0])
		return bad_usage("no subcommand");
	if (strcmp(cmd, "build") && strcmp(cmd, "info") && !verify && strcmp(cmd, "prune"))
		return bad_usage("unknown subcommand '%s'", cmd);
	argc--;
	argv++;
	if (toolsrc_flags("zmount-index", &argc, argv))
		return EX_USAGE;
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strncmp(argv[i], "--", 2) == 0)
			return bad_usage("unknown option '%s'", argv[i]);
	opterr = 0;
	while ((c = getopt(argc, argv, ":d:q")) != -1) {
		char opt[3] = { '-', (char)(c == '?' || c == ':' ? optopt : c), '\0' };

		if (c == 'd' && !verify)
			dopt = optarg;
		else if (c == 'q' && strcmp(cmd, "build") == 0)
			quiet = true;
		else
			return bad_usage(c == ':' ? "option %s needs an argument"
						  : "unknown option '%s'",
					 opt);
	}
	nargs = argc - optind;
	if (strcmp(cmd, "prune") == 0 && nargs)
		return bad_usage("prune takes no file: '%s'", argv[optind]);
	if (strcmp(cmd, "prune") != 0 && nargs == 0)
		return bad_usage("%s: give at least one file", cmd);
	if (verify)
		return cmd_verify(nargs, argv + optind);
	if (get_dir(dopt, dir))
		return EX_USAGE;
	return run_store(cmd, nargs, argv + optind, dir, quiet);
}
