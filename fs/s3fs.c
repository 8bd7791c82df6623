/* SPDX-License-Identifier: MIT */
/*
 * How it works: s3fs.h says what is shown; here, the node table is two
 * hash tables (by node id, by visible path) under one lock, and each
 * operation resolves its node, works without the lock, and replies once.
 * An archive node's reader is opened by the first request that needs it;
 * others wait for that open on the table's condition variable.
 */
#include "s3fs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "htab.h"
#include "notify.h"
#include "ops.h"
#include "reader.h"
#include "s3.h"
#include "s3hint.h"
#include "s3tree.h"
#include "zlog.h"

#define XATTR_STATS "user.zmount.stats"
#define XATTR_INFO  "user.zmount.info"
#define XATTR_MAX   (64 << 10)

enum arc_state { ARC_NONE, ARC_OPENING, ARC_DONE };

struct snode {
	struct htab_link by_id, by_path; /* protected by s3fs.lock */
	uint64_t id;
	uint64_t nlookup; /* protected by s3fs.lock */
	unsigned refs;	  /* protected by s3fs.lock */
	enum s3tree_kind kind;
	char *path;	   /* visible path, "/" or "/a/b" */
	char *key;	   /* objects: the key; NULL for directories */
	struct s3_stat st; /* objects: the version */
	uint64_t ino;
	atomic_flag said; /* plain objects: "changed since opened" was logged */
	/* Archives; protected by s3fs.lock until state is ARC_DONE, then read-only. */
	enum arc_state state;
	struct reader *r; /* NULL: corrupt or not an archive */
	char *why;	  /* why r is NULL */
	/*
	 * r holds a source (and its windows, up to S3SRC_BYTES_PER_SOURCE)
	 * only while the node has open handles, so memory does not grow with
	 * the archives merely looked up.  Protected by att.
	 */
	pthread_mutex_t att;
	unsigned opens;
	bool attached;
};

_Static_assert(sizeof(struct snode) <= S3FS_BYTES_PER_NODE, "S3FS_BYTES_PER_NODE is too small");

/* An open file or directory, on the mount's list (kernel sends no release at a forced stop). */
struct sopen {
	struct sopen *prev, *next; /* protected by s3fs.open_lock */
	bool is_dir;
	struct snode *node;
	struct zsrc *src;    /* plain objects */
	bool held;	     /* archives: arc_hold succeeded */
	struct s3tree *snap; /* directories: the snapshot listed */
	uint32_t dir;	     /* its directory */
};

struct s3fs {
	struct s3 *s3;
	dev_t dev;
	char *prefix, *label; /* label: "s3://BUCKET" */
	double timeout, list_every;
	struct zmctx *zm;
	const struct reader_opts *ropts;
	uid_t uid;
	gid_t gid;
	struct timespec born;

	pthread_mutex_t snap_lock;
	struct s3tree *snap; /* protected by snap_lock */
	double listed_at;    /* protected by snap_lock: CLOCK_MONOTONIC seconds */
	bool listing;	     /* protected by snap_lock */
	atomic_ullong lists, list_errors;

	pthread_mutex_t lock;
	pthread_cond_t opened; /* an archive's open ended */
	struct htab ids, paths;
	uint64_t next_id;

	pthread_mutex_t open_lock;
	struct sopen open_list;

	struct notify notify; /* readers whose streamed unit failed late (s3fs_tainted) */

	/* Until s3fs_live: the client's last error line, for s3fs_new's message. */
	atomic_bool live;
	pthread_mutex_t line_lock;
	char last_line[512]; /* protected by line_lock */
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t hash_str(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static size_t hash_id(const struct htab_link *l)
{
	return (size_t)htab_entry(l, struct snode, by_id)->id;
}

static size_t hash_path(const struct htab_link *l)
{
	return hash_str(htab_entry(l, struct snode, by_path)->path);
}

static void client_log(void *arg, const char *line)
{
	struct s3fs *fs = arg;

	if (atomic_load(&fs->live)) {
		zlog(ZLOG_ERROR, "%s", line);
		return;
	}
	pthread_mutex_lock(&fs->line_lock);
	snprintf(fs->last_line, sizeof(fs->last_line), "%s", line);
	pthread_mutex_unlock(&fs->line_lock);
}

/* -- the listing ------------------------------------------------------------ */

static int list_cb(void *arg, const struct s3_obj *o)
{
	return s3tree_build_add(arg, o->key, &o->st);
}

/* The first listing found nothing: most often a mistyped prefix (s3hint.h). */
static void warn_empty(struct s3fs *fs)
{
	char line[1024];

	s3hint_empty(fs->s3, fs->label + strlen("s3://"), fs->prefix, line, sizeof(line));
	zlog(ZLOG_WARN, "%s", line);
}

static int list_prefix(struct s3fs *fs, struct s3tree **out)
{
	struct s3tree_build *b;
	double t0 = mono();
	int ret = s3tree_build_new(fs->label, fs->prefix, &b);

	*out = NULL;
	if (ret < 0)
		return ret;
	if (atomic_load(&fs->lists) > 0)
		s3tree_build_set_log_level(b, ZLOG_DEBUG); /* said at the first listing */
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
static struct s3tree *snapshot(struct s3fs *fs)
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

/* -- nodes ------------------------------------------------------------------ */

static void node_free(struct snode *n)
{
	reader_close(n->r);
	pthread_mutex_destroy(&n->att);
	free(n->why);
	free(n->path);
	free(n->key);
	free(n);
}

static struct snode *node_get(struct s3fs *fs, uint64_t id)
{
	struct snode *n = NULL;

	pthread_mutex_lock(&fs->lock);
	for (struct htab_link *l = htab_bucket(&fs->ids, (size_t)id); l; l = l->next) {
		struct snode *c = htab_entry(l, struct snode, by_id);

		if (c->id == id) {
			n = c;
			n->refs++;
			break;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return n;
}

/* Takes n out of the tables if nothing holds it; returns it then, for the caller to free. */
static struct snode *node_unused(struct s3fs *fs, struct snode *n)
{
	if (n->refs || n->nlookup || n->id == FUSE_ROOT_ID)
		return NULL;
	htab_del(&fs->ids, &n->by_id);
	htab_del(&fs->paths, &n->by_path);
	return n;
}

static void node_put(struct s3fs *fs, struct snode *n)
{
	struct snode *gone;

	if (!n)
		return;
	pthread_mutex_lock(&fs->lock);
	n->refs--;
	gone = node_unused(fs, n);
	pthread_mutex_unlock(&fs->lock);
	if (gone)
		node_free(gone); /* reader_close waits for read-ahead: no lock held */
}

static bool same_version(const struct snode *n, const char *path, const struct s3tree_ent *e)
{
	if (strcmp(n->path, path) != 0 || n->kind != e->kind)
		return false;
	return e->kind == S3TREE_DIR ||
	       (strcmp(n->key, e->key) == 0 && strcmp(n->st.etag, e->st.etag) == 0);
}

/*
 * The node of entry e at path, with one more kernel lookup and a
 * reference; made if this version has none.  Returns NULL for ENOMEM.
 */
static struct snode *node_lookup(struct s3fs *fs, const char *path, const struct s3tree_ent *e)
{
	struct snode *n = NULL;

	pthread_mutex_lock(&fs->lock);
	for (struct htab_link *l = htab_bucket(&fs->paths, hash_str(path)); l; l = l->next) {
		struct snode *c = htab_entry(l, struct snode, by_path);

		if (same_version(c, path, e)) {
			n = c;
			break;
		}
	}
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n || !(n->path = strdup(path)) || (e->key && !(n->key = strdup(e->key)))) {
			if (n)
				free(n->path);
			free(n);
			pthread_mutex_unlock(&fs->lock);
			return NULL;
		}
		atomic_flag_clear(&n->said);
		pthread_mutex_init(&n->att, NULL);
		n->id = fs->next_id++;
		n->kind = e->kind;
		n->st = e->st;
		n->ino = e->ino;
		htab_add(&fs->ids, &n->by_id);
		htab_add(&fs->paths, &n->by_path);
	}
	n->nlookup++;
	n->refs++;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

static void node_forget(struct s3fs *fs, uint64_t id, uint64_t nlookup)
{
	struct snode *n = node_get(fs, id);

	if (!n)
		return;
	pthread_mutex_lock(&fs->lock);
	n->nlookup -= nlookup < n->nlookup ? nlookup : n->nlookup;
	pthread_mutex_unlock(&fs->lock);
	node_put(fs, n);
}

/* -- archives --------------------------------------------------------------- */

/* Opens the reader of archive node n once; 0 (r may be NULL: corrupt), or -errno (try again). */
static int arc_open_now(struct s3fs *fs, struct snode *n, struct reader **r, char **why)
{
	char name[1200];
	struct zsrc *src;
	struct zerr err = { 0 };
	int ret = s3src_open(fs->s3, fs->dev, n->key, &n->st, &src);

	*r = NULL;
	*why = NULL;
	snprintf(name, sizeof(name), "%s/%s", fs->label, n->key);
	if (ret == 0)
		ret = reader_open_src(src, name, fs->zm, fs->ropts, r, &err);
	if (ret == 0)
		reader_detach(*r); /* nobody has it open yet: see snode.att */
	if (ret == -ENOTSUP) {
		zlog(ZLOG_WARN,
		     "%s: not an xz, gzip or zstd object by its magic bytes, or one zmount cannot "
		     "read; shown empty, opens fail with EIO",
		     name);
		*why = strdup("not an archive by its magic bytes");
		return 0;
	}
	if (ret == -EINVAL) { /* corrupt: reader_open logged it, with the offset */
		*why = strdup(err.msg[0] ? err.msg : "corrupt");
		return 0;
	}
	if (ret < 0)
		zlog(ZLOG_ERROR, "%s: cannot open: %s", name, strerror(-ret));
	return ret;
}

/* Waits for or makes the reader of archive node n; 0 when decided, or -errno. */
static int arc_ready(struct s3fs *fs, struct snode *n)
{
	struct reader *r;
	char *why;
	int ret;

	pthread_mutex_lock(&fs->lock);
	while (n->state == ARC_OPENING)
		pthread_cond_wait(&fs->opened, &fs->lock);
	if (n->state == ARC_DONE) {
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	n->state = ARC_OPENING;
	pthread_mutex_unlock(&fs->lock);
	ret = arc_open_now(fs, n, &r, &why);
	pthread_mutex_lock(&fs->lock);
	n->state = ret == 0 ? ARC_DONE : ARC_NONE;
	n->r = r;
	n->why = why;
	pthread_cond_broadcast(&fs->opened);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/* Gives archive node n's reader a source for one more open handle: 0 or -errno. */
static int arc_hold(struct s3fs *fs, struct snode *n)
{
	struct zsrc *src;
	int ret = 0;

	pthread_mutex_lock(&n->att);
	if (!n->attached) {
		ret = s3src_open(fs->s3, fs->dev, n->key, &n->st, &src);
		if (ret == 0)
			ret = reader_attach(n->r, src);
		n->attached = ret == 0;
	}
	if (ret == 0)
		n->opens++;
	pthread_mutex_unlock(&n->att);
	return ret;
}

/* Ends arc_hold: the last handle's release frees the source and its windows. */
static void arc_unhold(struct snode *n)
{
	pthread_mutex_lock(&n->att);
	if (--n->opens == 0) {
		reader_detach(n->r);
		n->attached = false;
	}
	pthread_mutex_unlock(&n->att);
}

/* -- attributes ------------------------------------------------------------- */

static void node_attr(struct s3fs *fs, const struct snode *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = 64 << 10;
	if (n->kind == S3TREE_DIR) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		st->st_mtim = st->st_ctim = st->st_atim = fs->born;
		return;
	}
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_mtim.tv_sec = st->st_ctim.tv_sec = st->st_atim.tv_sec = n->st.mtime;
	if (n->kind == S3TREE_ARCHIVE)
		st->st_size = n->r ? (off_t)reader_size(n->r) : 0;
	else
		st->st_size = (off_t)n->st.size;
	st->st_blocks = (st->st_size + 511) / 512;
}

static struct s3fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_readahead = OPS_READ_AHEAD;
}

/* The node (node_lookup) of name under directory p in the current snapshot, whose path it writes.
 */
static int resolve_child(struct s3fs *fs, const struct snode *p, const char *name, char *path,
			 size_t plen, struct snode **out)
{
	struct s3tree *t;
	struct s3tree_ent e;
	int ret = snprintf(path, plen, "%s/%s", strcmp(p->path, "/") ? p->path : "", name);

	*out = NULL;
	if (ret < 0 || (size_t)ret >= plen)
		return -ENAMETOOLONG;
	t = snapshot(fs);
	ret = s3tree_resolve(t, path, &e);
	if (ret == 0) {
		*out = node_lookup(fs, path, &e);
		ret = *out ? 0 : -ENOMEM;
	}
	s3tree_put(t);
	return ret;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct s3fs *fs = fs_of(req);
	struct fuse_entry_param e = { .attr_timeout = fs->timeout, .entry_timeout = fs->timeout };
	struct snode *p = node_get(fs, parent), *n = NULL;
	char path[4096];
	int ret = p ? resolve_child(fs, p, name, path, sizeof(path), &n) : -ESTALE;

	node_put(fs, p);
	if (ret == 0 && n->kind == S3TREE_ARCHIVE)
		ret = arc_ready(fs, n); /* its size is part of what the kernel caches */
	if (ret == -ENOENT || ret == -ENOTDIR) {
		fuse_reply_entry(req, &e); /* ino 0: the kernel caches the absence */
		return;
	}
	if (ret < 0) {
		if (n)
			node_forget(fs, n->id, 1);
		node_put(fs, n);
		/* A request that failed (logged) is EIO; the kernel retries at the next lookup. */
		fuse_reply_err(req, ret == -ENAMETOOLONG || ret == -ENOMEM || ret == -ESTALE ? -ret
											     : EIO);
		return;
	}
	e.ino = n->id;
	node_attr(fs, n, &e.attr);
	node_put(fs, n);
	fuse_reply_entry(req, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(fs_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		node_forget(fs_of(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct s3fs *fs = fs_of(req);
	struct snode *n = node_get(fs, ino);
	struct stat st;

	(void)fi;
	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	node_attr(fs, n, &st);
	node_put(fs, n);
	fuse_reply_attr(req, &st, fs->timeout);
}

/* -- open files and directories --------------------------------------------- */

static void open_add(struct s3fs *fs, struct sopen *o)
{
	pthread_mutex_lock(&fs->open_lock);
	o->next = fs->open_list.next;
	o->prev = &fs->open_list;
	fs->open_list.next->prev = o;
	fs->open_list.next = o;
	pthread_mutex_unlock(&fs->open_lock);
}

static void open_close(struct s3fs *fs, struct sopen *o)
{
	if (!o)
		return;
	if (o->next) {
		pthread_mutex_lock(&fs->open_lock);
		o->prev->next = o->next;
		o->next->prev = o->prev;
		pthread_mutex_unlock(&fs->open_lock);
	}
	if (o->held)
		arc_unhold(o->node);
	zsrc_put(o->src);
	s3tree_put(o->snap);
	node_put(fs, o->node);
	free(o);
}

static struct sopen *open_of(const struct fuse_file_info *fi)
{
	return (struct sopen *)(uintptr_t)fi->fh;
}

static void reply_open(fuse_req_t req, struct s3fs *fs, struct sopen *o, struct fuse_file_info *fi)
{
	fi->fh = (uintptr_t)o;
	open_add(fs, o);
	if (fuse_reply_open(req, fi) != 0)
		open_close(fs, o); /* the opener is gone: nobody will release it */
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct s3fs *fs = fs_of(req);
	struct sopen *o;
	int ret = 0;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	o->node = node_get(fs, ino);
	if (!o->node)
		ret = -ESTALE;
	else if (o->node->kind == S3TREE_ARCHIVE) {
		ret = arc_ready(fs, o->node) < 0 ? -EIO : !o->node->r ? -EIO : 0;
		if (ret == 0 && (ret = arc_hold(fs, o->node)) == 0)
			o->held = true;
	} else if (o->node->kind == S3TREE_RAW)
		ret = s3src_open(fs->s3, fs->dev, o->node->key, &o->node->st, &o->src);
	else
		ret = -EISDIR;
	if (ret == -EIO)
		reader_note_error(fs->zm); /* logged when it was opened */
	if (ret < 0) {
		open_close(fs, o);
		fuse_reply_err(req, -ret);
		return;
	}
	/* A node is one version of an object: its pages never go stale. */
	fi->keep_cache = 1;
	reply_open(req, fs, o, fi);
}

static void read_plain(fuse_req_t req, struct s3fs *fs, struct sopen *o, size_t size, uint64_t off)
{
	char *buf = malloc(size ? size : 1);
	ssize_t n = buf ? zsrc_pread(o->src, buf, size, off) : -ENOMEM;

	if (n == -ESTALE && !atomic_flag_test_and_set(&o->node->said))
		zlog(ZLOG_WARN,
		     "%s/%s: changed since it was listed (its ETag differs); reads of the old "
		     "version fail with EIO until its name is looked up again",
		     fs->label, o->node->key);
	if (n < 0)
		fuse_reply_err(req, n == -ENOMEM ? ENOMEM : EIO);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct sopen *o = open_of(fi);

	(void)ino;
	if (off < 0)
		fuse_reply_err(req, EINVAL);
	else if (o->node->kind == S3TREE_ARCHIVE)
		ops_read_archive(req, o->node->r, size, (uint64_t)off);
	else
		read_plain(req, fs_of(req), o, size, (uint64_t)off);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	open_close(fs_of(req), open_of(fi));
	fuse_reply_err(req, 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct s3fs *fs = fs_of(req);
	struct snode *n = node_get(fs, ino);
	struct sopen *o = calloc(1, sizeof(*o));
	struct s3tree_ent e = { 0 };
	int ret = !n ? -ESTALE : !o ? -ENOMEM : 0;

	if (ret == 0) {
		o->is_dir = true;
		o->snap = snapshot(fs);
		ret = s3tree_resolve(o->snap, n->path, &e);
		if (ret == 0 && e.kind != S3TREE_DIR)
			ret = -ENOTDIR;
		o->dir = e.dir;
	}
	node_put(fs, n);
	if (ret < 0) {
		open_close(fs, o);
		fuse_reply_err(req, -ret);
		return;
	}
	fi->cache_readdir = 0;
	reply_open(req, fs, o, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct sopen *o = open_of(fi);
	size_t count = s3tree_dir_count(o->snap, o->dir), used = 0;
	char *buf = malloc(size ? size : 1);

	(void)ino;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* Offsets: 1 is ".", 2 is "..", 2 + i + 1 follows entry i. */
	for (off_t i = off; i < (off_t)count + 2; i++) {
		struct stat st = { .st_ino = 1, .st_mode = S_IFDIR };
		struct s3tree_ent e;
		const char *name = i == 0 ? "." : "..";
		size_t len;

		if (i >= 2) {
			s3tree_dir_entry(o->snap, o->dir, (size_t)(i - 2), &e);
			name = e.name;
			st.st_ino = e.ino;
			st.st_mode = e.kind == S3TREE_DIR ? S_IFDIR : S_IFREG;
		}
		len = fuse_add_direntry(req, buf + used, size - used, name, &st, i + 1);
		if (len > size - used)
			break;
		used += len;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	open_close(fs_of(req), open_of(fi));
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct s3fs *fs = fs_of(req);
	struct s3tree *t = snapshot(fs);
	struct s3tree_stats ts;
	struct statvfs sv = { .f_bsize = 4096, .f_frsize = 4096, .f_namemax = S3TREE_NAME_MAX };

	(void)ino;
	s3tree_get_stats(t, &ts);
	s3tree_put(t);
	sv.f_files = ts.objects + ts.dirs;
	fuse_reply_statfs(req, &sv);
}

/* -- extended attributes ---------------------------------------------------- */

static int stats_text(struct s3fs *fs, char *out, size_t len)
{
	size_t n = ops_cache_stats(fs->zm, out, len);
	struct s3tree *t = snapshot(fs);
	struct s3tree_stats ts;
	struct s3src_counters sc;

	s3tree_get_stats(t, &ts);
	s3tree_put(t);
	s3src_get_counters(&sc);
	pthread_mutex_lock(&fs->lock);
	size_t nodes = htab_count(&fs->ids);
	pthread_mutex_unlock(&fs->lock);
	n += (size_t)snprintf(
		out + n, len - n,
		"nodes=%zu\nobjects=%zu\ndirectories=%zu\nkeys_skipped=%zu\nkeys_shadowed=%zu\n"
		"listing_bytes=%zu\nbucket_listings=%llu\nbucket_listing_errors=%llu\ns3_gets=%llu\n"
		"s3_bytes=%llu\ns3_window_hits=%llu\ns3_stale=%llu\ns3_window_bytes=%llu\n",
		nodes, ts.objects, ts.dirs, ts.skipped, ts.shadowed, ts.bytes,
		(unsigned long long)atomic_load(&fs->lists),
		(unsigned long long)atomic_load(&fs->list_errors), (unsigned long long)sc.gets,
		(unsigned long long)sc.bytes, (unsigned long long)sc.hits,
		(unsigned long long)sc.stale, (unsigned long long)sc.held);
	return n < len ? (int)n : (int)len - 1;
}

static void reply_xattr(fuse_req_t req, const char *value, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, value, len);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct s3fs *fs = fs_of(req);
	struct snode *n = node_get(fs, ino);
	char *text = malloc(XATTR_MAX), source[1200];
	int len = -ENODATA;

	if (!text) {
		len = -ENOMEM;
	} else if (!n) {
		len = -ESTALE;
	} else if (strcmp(name, XATTR_STATS) == 0 && ino == FUSE_ROOT_ID) {
		len = stats_text(fs, text, XATTR_MAX);
	} else if (strcmp(name, XATTR_INFO) == 0 && n->kind == S3TREE_ARCHIVE &&
		   arc_ready(fs, n) == 0) {
		snprintf(source, sizeof(source), "%s/%s", fs->label, n->key);
		len = ops_info_text(n->r, source, n->why ? n->why : "", text, XATTR_MAX);
	}
	node_put(fs, n);
	if (len < 0)
		fuse_reply_err(req, -len);
	else
		reply_xattr(req, text, len < XATTR_MAX ? (size_t)len : XATTR_MAX - 1, size);
	free(text);
}

/* No names listed, as on local mounts (ops.c): they are views of the daemon. */
static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	reply_xattr(req, "", 0, size);
}

const struct fuse_lowlevel_ops s3fs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.statfs = op_statfs,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
};

static void s3fs_cleanup(struct s3fs *fs);

/* -- pages of a unit that failed late ---------------------------------------- */

void s3fs_tainted(void *ctx, const struct reader *r)
{
	notify_queue(&((struct s3fs *)ctx)->notify, r);
}

/* The notify_ids_fn: archive nodes reading r (every archive node if r is NULL). */
static ssize_t tainted_ids(void *ctx, const struct reader *r, uint64_t **out)
{
	struct s3fs *fs = ctx;
	struct htab_walk w;
	struct htab_link *l;
	uint64_t *ids;
	size_t n = 0;

	pthread_mutex_lock(&fs->lock);
	ids = malloc((htab_count(&fs->ids) + 1) * sizeof(*ids));
	htab_walk_start(&fs->ids, &w);
	while (ids && (l = htab_walk_next(&w))) {
		const struct snode *c = htab_entry(l, struct snode, by_id);

		if (c->kind == S3TREE_ARCHIVE && (!r || c->r == r))
			ids[n++] = c->id;
	}
	pthread_mutex_unlock(&fs->lock);
	if (!ids)
		return -ENOMEM;
	*out = ids;
	return (ssize_t)n;
}

/* -- the mount -------------------------------------------------------------- */

/* One line for a listing that failed at mount time. */
static void say_list_error(struct s3fs *fs, int err, char *msg, size_t msglen)
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

static int fs_alloc(const struct s3fs_conf *conf, struct s3fs **out)
{
	struct s3fs *fs = calloc(1, sizeof(*fs));
	struct snode *root;

	*out = NULL;
	if (!fs)
		return -ENOMEM;
	pthread_mutex_init(&fs->snap_lock, NULL);
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->open_lock, NULL);
	pthread_mutex_init(&fs->line_lock, NULL);
	notify_init(&fs->notify, tainted_ids, fs);
	pthread_cond_init(&fs->opened, NULL);
	fs->open_list.next = fs->open_list.prev = &fs->open_list;
	*out = fs;
	if (asprintf(&fs->label, "s3://%s", conf->bucket) < 0) {
		fs->label = NULL;
		return -ENOMEM;
	}
	fs->prefix = strdup(conf->prefix);
	root = calloc(1, sizeof(*root));
	if (!fs->prefix || !root || !(root->path = strdup("/")) ||
	    htab_init(&fs->ids, 64, hash_id) < 0 || htab_init(&fs->paths, 64, hash_path) < 0) {
		if (root)
			free(root->path);
		free(root);
		return -ENOMEM;
	}
	pthread_mutex_init(&root->att, NULL);
	root->id = FUSE_ROOT_ID;
	root->kind = S3TREE_DIR;
	root->ino = 1;
	root->nlookup = 1;
	htab_add(&fs->ids, &root->by_id);
	htab_add(&fs->paths, &root->by_path);
	fs->next_id = FUSE_ROOT_ID + 1;
	return 0;
}

int s3fs_new(const struct s3fs_conf *conf, struct s3fs **out, char *msg, size_t msglen)
{
	struct s3src_conf sc = conf->src;
	char endpoint[1024];
	struct s3fs *fs;
	int ret = fs_alloc(conf, &fs);

	*out = NULL;
	if (ret < 0) {
		s3fs_free(fs);
		snprintf(msg, msglen, "out of memory");
		return ret;
	}
	fs->timeout = conf->timeout;
	fs->list_every = conf->timeout < 1 ? 1 : conf->timeout;
	fs->zm = conf->zm;
	fs->ropts = conf->ropts;
	fs->uid = getuid();
	fs->gid = getgid();
	clock_gettime(CLOCK_REALTIME, &fs->born);
	/* The endpoint as the client uses it: the tools name objects by the same identity. */
	ret = s3src_endpoint(&sc, endpoint, sizeof(endpoint));
	if (ret < 0)
		snprintf(msg, msglen, "the endpoint is too long");
	sc.log = client_log;
	sc.log_arg = fs;
	if (ret == 0) {
		fs->dev = s3src_dev(endpoint, conf->bucket);
		ret = s3src_connect(conf->bucket, &sc, &fs->s3, msg, msglen);
	}
	if (ret == 0) {
		ret = list_prefix(fs, &fs->snap);
		if (ret < 0)
			say_list_error(fs, ret, msg, msglen);
	}
	if (ret < 0) {
		s3fs_free(fs);
		return ret;
	}
	fs->listed_at = mono();
	*out = fs;
	return 0;
}

void s3fs_live(struct s3fs *fs, struct fuse_session *se)
{
	atomic_store(&fs->live, true);
	if (notify_start(&fs->notify, se) < 0)
		zlog(ZLOG_WARN, "cannot start the page-cache invalidation thread");
}

void s3fs_stop(struct s3fs *fs)
{
	notify_stop(&fs->notify);
	s3fs_cleanup(fs);
}

static void s3fs_cleanup(struct s3fs *fs)
{
	while (fs->open_list.next != &fs->open_list)
		open_close(fs, fs->open_list.next);
}

void s3fs_free(struct s3fs *fs)
{
	struct htab_walk w;
	struct htab_link *l;

	if (!fs)
		return;
	s3fs_stop(fs); /* if the loop never ran */
	if (fs->ids.buckets) {
		htab_walk_start(&fs->ids, &w);
		while ((l = htab_walk_next(&w))) {
			htab_del(&fs->ids, l);
			node_free(htab_entry(l, struct snode, by_id));
		}
	}
	htab_fini(&fs->ids);
	htab_fini(&fs->paths);
	s3tree_put(fs->snap);
	s3_close(fs->s3);
	free(fs->label);
	free(fs->prefix);
	free(fs);
}
