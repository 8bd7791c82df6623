/* SPDX-License-Identifier: MIT */
/*
 * How it works: ns_s3.h says what is shown.  The snapshot is swapped under
 * snap_lock; every request takes a reference to the current one and works
 * on it without a lock.  An open directory keeps its snapshot referenced.
 */
#include "ns_s3.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "names.h"
#include "ns.h"
#include "opts.h"
#include "reader.h"
#include "s3.h"
#include "s3hint.h"
#include "s3tree.h"
#include "zlog.h"

struct ns_s3 {
	struct ns ns; /* first */
	struct s3 *s3;
	dev_t dev;
	char *prefix, *label; /* label: "s3://BUCKET" */
	double list_every;
	uid_t uid;
	gid_t gid;
	struct timespec born;

	pthread_mutex_t snap_lock;
	struct s3tree *snap; /* protected by snap_lock */
	double listed_at;    /* protected by snap_lock: CLOCK_MONOTONIC seconds */
	bool listing;	     /* protected by snap_lock */
	atomic_ullong lists, list_errors;

	/* Until ns_live: the client's last error line, for ns_s3_new's message. */
	atomic_bool live;
	pthread_mutex_t line_lock;
	char last_line[512]; /* protected by line_lock */
};

/* An open directory: its snapshot, referenced, and its index there. */
struct s3dir {
	struct s3tree *t;
	uint32_t dir;
	dev_t dev;
};

static struct ns_s3 *fs_of(void *ns)
{
	return ns;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void client_log(void *arg, const char *line)
{
	struct ns_s3 *fs = arg;

	if (atomic_load(&fs->live)) {
		zlog(ZLOG_ERROR, "%s", line);
		return;
	}
	pthread_mutex_lock(&fs->line_lock);
	snprintf(fs->last_line, sizeof(fs->last_line), "%s", line);
	pthread_mutex_unlock(&fs->line_lock);
}

/* -- the listing ------------------------------------------------------------ */

static void tree_warn(void *arg, const char *line)
{
	(void)arg;
	zlog(ZLOG_WARN, "%s", line);
}

static void tree_debug(void *arg, const char *line)
{
	(void)arg;
	zlog(ZLOG_DEBUG, "%s", line);
}

/* The mount's naming rules for a listing; its lines about keys not shown are said once, at the
 * first listing, and at debug level when the same prefix is listed again. */
static const struct s3tree_rules first_rules = { names_resolve_suffix, tree_warn, NULL };
static const struct s3tree_rules again_rules = { names_resolve_suffix, tree_debug, NULL };

static int list_cb(void *arg, const struct s3_obj *o)
{
	return s3tree_build_add(arg, o->key, &o->st);
}

/* The first listing found nothing: most often a mistyped prefix (s3hint.h). */
static void warn_empty(struct ns_s3 *fs)
{
	char line[1024];

	s3hint_empty(fs->s3, fs->label + strlen("s3://"), fs->prefix, line, sizeof(line));
	zlog(ZLOG_WARN, "%s", line);
}

static int list_prefix(struct ns_s3 *fs, struct s3tree **out)
{
	struct s3tree_build *b;
	double t0 = mono();
	int ret = s3tree_build_new(fs->label, fs->prefix,
				   atomic_load(&fs->lists) > 0 ? &again_rules : &first_rules, &b);

	*out = NULL;
	if (ret < 0)
		return ret;
	ret = s3_list(fs->s3, fs->prefix, list_cb, b);
	if (ret < 0) {
		s3tree_build_abort(b);
		return ret;
	}
	ret = s3tree_build_finish(b, out);
	if (ret == 0) {
		struct s3tree_stats st;

		s3tree_get_stats(*out, &st);
		zlog(ZLOG_DEBUG,
		     "%s/%s: listed %zu objects in %zu directories in %.3f s (%zu bytes)",
		     fs->label, fs->prefix, st.objects, st.dirs, mono() - t0, st.bytes);
		if (st.objects + st.markers == 0 && atomic_load(&fs->lists) == 0)
			warn_empty(fs);
		atomic_fetch_add(&fs->lists, 1);
	}
	return ret;
}

/*
 * The current snapshot, with a reference; lists the prefix again first if
 * it is older than list_every and nobody else is listing it.
 */
static struct s3tree *snapshot(struct ns_s3 *fs)
{
	struct s3tree *t, *old = NULL;
	int ret;

	pthread_mutex_lock(&fs->snap_lock);
	if (!fs->listing && mono() - fs->listed_at >= fs->list_every) {
		fs->listing = true;
		pthread_mutex_unlock(&fs->snap_lock);
		ret = list_prefix(fs, &t);
		pthread_mutex_lock(&fs->snap_lock);
		fs->listing = false;
		fs->listed_at = mono();
		if (ret == 0) {
			old = fs->snap;
			fs->snap = t;
		} else {
			atomic_fetch_add(&fs->list_errors, 1);
			zlog(ZLOG_ERROR, "%s/%s: cannot list (%s); showing the listing of before",
			     fs->label, fs->prefix, strerror(-ret));
		}
	}
	t = s3tree_get(fs->snap);
	pthread_mutex_unlock(&fs->snap_lock);
	s3tree_put(old);
	return t;
}

/* -- entries ---------------------------------------------------------------- */

/* The stat shown for a directory of the snapshot: read-only, dated at the mount. */
static void dir_stat(const struct ns_s3 *fs, uint64_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = fs->dev;
	st->st_ino = ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = 64 << 10;
	st->st_mode = S_IFDIR | 0555;
	st->st_nlink = 2;
	st->st_mtim = st->st_ctim = st->st_atim = fs->born;
}

/* An object's entry: its key and ETag (copied), its listed size and date. */
static int obj_entry(const struct ns_s3 *fs, const struct s3tree_ent *e, struct ns_entry *out)
{
	struct stat byname;

	out->kind = e->kind == S3TREE_ARCHIVE ? NS_ARCHIVE : NS_FILE;
	out->id = strdup(e->key);
	out->tag = strdup(e->st.etag);
	if (!out->id || !out->tag) {
		ns_entry_clear(out);
		return -ENOMEM;
	}
	s3src_version(fs->dev, e->key, &e->st, &byname);
	out->obj = byname.st_ino; /* a hash of the key: the archive table's slot */
	dir_stat(fs, e->ino, &out->st);
	out->st.st_mode = S_IFREG | 0444;
	out->st.st_nlink = 1;
	out->st.st_size = (off_t)e->st.size;
	out->st.st_blocks = (out->st.st_size + 511) / 512;
	out->st.st_mtim.tv_sec = out->st.st_ctim.tv_sec = out->st.st_atim.tv_sec = e->st.mtime;
	out->st.st_mtim.tv_nsec = out->st.st_ctim.tv_nsec = out->st.st_atim.tv_nsec = 0;
	return 0;
}

static int s_resolve(void *ns, const char *path, struct ns_entry *out)
{
	struct ns_s3 *fs = fs_of(ns);
	struct s3tree *t = snapshot(fs);
	struct s3tree_ent e;
	int ret = s3tree_resolve(t, path, &e);

	memset(out, 0, sizeof(*out));
	if (ret == 0 && e.kind == S3TREE_DIR) {
		out->kind = NS_DIR;
		out->obj = strcmp(path, "/") ? e.ino : 1;
		dir_stat(fs, out->obj, &out->st);
	} else if (ret == 0) {
		ret = obj_entry(fs, &e, out);
	}
	s3tree_put(t);
	return ret == -ENOTDIR ? -ENOENT : ret; /* a file on the way: nothing is there */
}

/* A directory by its kind; an object by its key and ETag, compared exactly. */
static bool s_same(void *ns, const struct ns_entry *a, const struct ns_entry *b)
{
	(void)ns;
	if (a->kind != b->kind)
		return false;
	if (a->kind == NS_DIR)
		return a->obj == b->obj;
	return strcmp(a->id, b->id) == 0 && strcmp(a->tag, b->tag) == 0;
}

/* An object never changes under its entry: a new version is a new entry. */
static int s_state(void *ns, const struct ns_entry *e, struct zsrc *src, struct stat *st)
{
	(void)ns;
	(void)src;
	*st = e->st;
	return 0;
}

static int s_open(void *ns, const struct ns_entry *e, struct zsrc **out, bool *same)
{
	struct ns_s3 *fs = fs_of(ns);
	struct s3_stat os = { .size = (uint64_t)e->st.st_size, .mtime = e->st.st_mtim.tv_sec };

	*out = NULL;
	*same = true; /* its GETs carry If-Match: they never give another version */
	if (e->kind == NS_DIR)
		return -EISDIR;
	snprintf(os.etag, sizeof(os.etag), "%s", e->tag);
	return s3src_open(fs->s3, fs->dev, e->id, &os, out);
}

static int s_opendir(void *ns, const char *path, struct ns_dir **out)
{
	struct ns_s3 *fs = fs_of(ns);
	struct s3dir *d = calloc(1, sizeof(*d));
	struct s3tree_ent e = { 0 };
	int ret;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	d->t = snapshot(fs);
	d->dev = fs->dev;
	ret = s3tree_resolve(d->t, path, &e);
	if (ret == 0 && e.kind != S3TREE_DIR)
		ret = -ENOTDIR;
	if (ret < 0) {
		s3tree_put(d->t);
		free(d);
		return ret;
	}
	d->dir = e.dir;
	*out = (struct ns_dir *)d;
	return 0;
}

static size_t s_dir_count(const struct ns_dir *nd)
{
	const struct s3dir *d = (const struct s3dir *)nd;

	return s3tree_dir_count(d->t, d->dir);
}

static const char *s_dir_entry(const struct ns_dir *nd, size_t i, struct stat *st)
{
	const struct s3dir *d = (const struct s3dir *)nd;
	struct s3tree_ent e;

	s3tree_dir_entry(d->t, d->dir, i, &e);
	st->st_ino = e.ino;
	st->st_dev = d->dev;
	st->st_mode = e.kind == S3TREE_DIR ? S_IFDIR : S_IFREG;
	return e.name;
}

static void s_closedir(void *ns, struct ns_dir *nd)
{
	struct s3dir *d = (struct s3dir *)nd;

	(void)ns;
	if (!d)
		return;
	s3tree_put(d->t);
	free(d);
}

static ssize_t s_readlink(void *ns, const struct ns_entry *e, char *buf, size_t len)
{
	(void)ns;
	(void)e;
	(void)buf;
	(void)len;
	return -EINVAL; /* a bucket has no symlinks */
}

static int s_statfs(void *ns, struct statvfs *sv)
{
	struct s3tree *t = snapshot(fs_of(ns));
	struct s3tree_stats ts;

	s3tree_get_stats(t, &ts);
	s3tree_put(t);
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = sv->f_frsize = 4096;
	sv->f_namemax = S3TREE_NAME_MAX;
	sv->f_files = ts.objects + ts.dirs;
	return 0;
}

static void s_name(void *ns, const struct ns_entry *e, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", fs_of(ns)->label, e->id ? e->id : "");
}

/* An object's version never changes under a reader: no rename to tell from a write. */
static bool s_still_named(void *ns, const struct reader *r)
{
	(void)ns;
	(void)r;
	return true;
}

static size_t s_stats(void *ns, char *out, size_t len)
{
	struct ns_s3 *fs = fs_of(ns);
	struct s3tree *t = snapshot(fs);
	struct s3tree_stats ts;
	struct s3src_counters sc;
	int n;

	s3tree_get_stats(t, &ts);
	s3tree_put(t);
	s3src_get_counters(&sc);
	n = snprintf(
		out, len,
		"objects=%zu\ndirectories=%zu\nkeys_skipped=%zu\nkeys_shadowed=%zu\n"
		"listing_bytes=%zu\nbucket_listings=%llu\nbucket_listing_errors=%llu\ns3_gets=%llu\n"
		"s3_bytes=%llu\ns3_window_hits=%llu\ns3_stale=%llu\ns3_window_bytes=%llu\n",
		ts.objects, ts.dirs, ts.skipped, ts.shadowed, ts.bytes,
		(unsigned long long)atomic_load(&fs->lists),
		(unsigned long long)atomic_load(&fs->list_errors), (unsigned long long)sc.gets,
		(unsigned long long)sc.bytes, (unsigned long long)sc.hits,
		(unsigned long long)sc.stale, (unsigned long long)sc.held);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

static void s_live(void *ns)
{
	atomic_store(&fs_of(ns)->live, true);
}

static void s_free(void *ns)
{
	struct ns_s3 *fs = fs_of(ns);

	if (!fs)
		return;
	s3tree_put(fs->snap);
	s3_close(fs->s3);
	pthread_mutex_destroy(&fs->snap_lock);
	pthread_mutex_destroy(&fs->line_lock);
	free(fs->label);
	free(fs->prefix);
	free(fs);
}

static const struct ns_ops s3_ops = {
	.resolve = s_resolve,
	.same = s_same,
	.state = s_state,
	.open = s_open,
	.opendir = s_opendir,
	.dir_count = s_dir_count,
	.dir_entry = s_dir_entry,
	.closedir = s_closedir,
	.readlink = s_readlink,
	.statfs = s_statfs,
	.name = s_name,
	.source = s_name, /* the URL, as in log lines */
	.still_named = s_still_named,
	.stats = s_stats,
	.live = s_live,
	.free = s_free,
	.remote = true,
	.probed = false,
};

/* -- the mount -------------------------------------------------------------- */

void ns_s3_conf(struct s3src_conf *sc, const struct opts *o)
{
	memset(sc, 0, sizeof(*sc));
	sc->endpoint = o->endpoint[0] ? o->endpoint : NULL;
	sc->region = o->region[0] ? o->region : NULL;
	sc->credentials = o->credentials[0] ? o->credentials : NULL;
	sc->profile = o->profile[0] ? o->profile : NULL;
	sc->retries = o->retries;
	sc->timeout_ms = o->request_timeout * 1000;
}

/* One line for a listing that failed at mount time. */
static void say_list_error(struct ns_s3 *fs, int err, char *msg, size_t msglen)
{
	const char *what = err == -ENOENT	  ? "no such bucket"
			   : err == -EACCES	  ? "access denied (check the credentials and the "
						    "bucket's permissions)"
			   : err == -ECONNREFUSED ? "the endpoint refuses connections"
			   : err == -EHOSTUNREACH ? "the endpoint cannot be reached"
			   : err == -ETIMEDOUT	  ? "the endpoint does not answer"
						  : strerror(-err);

	pthread_mutex_lock(&fs->line_lock);
	snprintf(msg, msglen, "%s/%s: cannot list: %s%s%s", fs->label, fs->prefix, what,
		 fs->last_line[0] ? " -- " : "", fs->last_line);
	pthread_mutex_unlock(&fs->line_lock);
}

static int fs_alloc(const char *bucket, const char *prefix, double timeout, struct ns_s3 **out)
{
	struct ns_s3 *fs = calloc(1, sizeof(*fs));

	*out = NULL;
	if (!fs)
		return -ENOMEM;
	fs->ns.ops = &s3_ops;
	pthread_mutex_init(&fs->snap_lock, NULL);
	pthread_mutex_init(&fs->line_lock, NULL);
	*out = fs;
	fs->list_every = timeout < 1 ? 1 : timeout;
	fs->uid = getuid();
	fs->gid = getgid();
	clock_gettime(CLOCK_REALTIME, &fs->born);
	if (asprintf(&fs->label, "s3://%s", bucket) < 0) {
		fs->label = NULL;
		return -ENOMEM;
	}
	fs->prefix = strdup(prefix);
	return fs->prefix ? 0 : -ENOMEM;
}

int ns_s3_new(const char *bucket, const char *prefix, const struct s3src_conf *conf, double timeout,
	      struct ns **out, char *msg, size_t msglen)
{
	struct s3src_conf sc = *conf;
	char endpoint[1024];
	struct ns_s3 *fs;
	int ret = fs_alloc(bucket, prefix, timeout, &fs);

	*out = NULL;
	if (ret < 0) {
		s_free(fs);
		snprintf(msg, msglen, "out of memory");
		return ret;
	}
	/* The endpoint as the client uses it: the tools name objects by the same identity. */
	ret = s3src_endpoint(&sc, endpoint, sizeof(endpoint));
	if (ret < 0)
		snprintf(msg, msglen, "the endpoint is too long");
	sc.log = client_log;
	sc.log_arg = fs;
	if (ret == 0) {
		fs->dev = s3src_dev(endpoint, bucket);
		ret = s3src_connect(bucket, &sc, &fs->s3, msg, msglen);
	}
	if (ret == 0) {
		ret = list_prefix(fs, &fs->snap);
		if (ret < 0)
			say_list_error(fs, ret, msg, msglen);
	}
	if (ret < 0) {
		s_free(fs);
		return ret;
	}
	fs->listed_at = mono();
	*out = &fs->ns;
	return 0;
}
