/* SPDX-License-Identifier: MIT */
#include "ops.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "arctab.h"
#include "bcache.h"
#include "fmttab.h"
#include "nodes.h"
#include "ns.h"
#include "reader.h"
#include "src.h"
#include "tree.h"
#include "zlog.h"
#include "zmctx.h"

#define XATTR_STATS "user.zmount.stats"
#define XATTR_INFO  "user.zmount.info"
#define XATTR_MAX   (64 << 10) /* room for the stats with ten escaped names */

static ssize_t tainted_ids(void *vctx, const struct reader *r, uint64_t **ids);
static int ops_info_text(struct reader *r, const char *source, const char *corrupt, char *out,
			 size_t len);

/* Every open file and directory is on its mount's list (struct ops_open). */
void ops_ctx_init(struct ops_ctx *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->open_lock, NULL);
	c->open_list.next = c->open_list.prev = &c->open_list;
	atomic_init(&c->plain_reads, 0);
	atomic_flag_clear(&c->fd_limit_said);
	notify_init(&c->notify, tainted_ids, c);
}

static void open_add(struct ops_ctx *c, struct ops_open *l, bool is_dir)
{
	l->is_dir = is_dir;
	pthread_mutex_lock(&c->open_lock);
	l->next = c->open_list.next;
	l->prev = &c->open_list;
	c->open_list.next->prev = l;
	c->open_list.next = l;
	pthread_mutex_unlock(&c->open_lock);
}

static void open_remove(struct ops_ctx *c, struct ops_open *l)
{
	pthread_mutex_lock(&c->open_lock);
	l->prev->next = l->next;
	l->next->prev = l->prev;
	pthread_mutex_unlock(&c->open_lock);
}

/*
 * An open file: a node (whose arc reads an archive), or a plain file's
 * source, with its descriptor if it is a local file (read by splice).
 */
struct handle {
	struct ops_open link; /* first: freed through it by ops_cleanup */
	struct node *node;
	struct zsrc *src;
	int fd; /* src's descriptor, or -1 (an object) */
};

/*
 * An open directory: the namespace's listing at opendir, which may only
 * grow (ns_dir_more), so offsets stay stable.  It is shared, not copied
 * (tree_opendir, an S3 snapshot): any reader can open a directory many
 * times, and a copy per handle multiplied the listing's memory.
 */
struct listing {
	struct ops_open link;
	struct ns_dir *dir;
};

/* Running out of descriptors fails requests with EMFILE; say so once per mount, not per request. */
static int note_limits(struct ops_ctx *c, int ret)
{
	if ((ret == -EMFILE || ret == -ENFILE) && !atomic_flag_test_and_set(&c->fd_limit_said))
		zlog(ZLOG_ERROR,
		     "out of file descriptors (%s); opens fail until some close "
		     "(raise the limit with ulimit -n)",
		     strerror(-ret));
	return ret;
}

static struct ops_ctx *ctx(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct handle *handle_of(const struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	const struct ops_ctx *c = userdata;

	/* libfuse ends the session unless init repeats a max_read mount option. */
	if (c->max_read)
		conn->max_read = c->max_read;
	/* Large requests: fewer round trips per decoded chunk (see bdi.h). */
	conn->max_readahead = OPS_READ_AHEAD;
}

/*
 * The current state of plain file or directory n's source object: through
 * handle h (an open handle on n, or NULL), else by name if the name still
 * names that object, else through any handle open on n.  The last is what
 * keeps a rotated log followable: after "mv app.log app.log.1" (or an
 * unlink) the name shows another file or none, but tail -F still polls
 * its old descriptor with fstat and reads to its end before it looks at
 * the name again; the lookup-time state shown instead hid every later
 * append, or looked like a truncation and made tail print the file again
 * from the start.  The list is walked only in that case, so an ordinary
 * getattr costs one lstat, as before.  Returns 0, or -errno (the state is
 * unknown: then *st is not set).
 */
static int plain_stat(struct ops_ctx *c, const struct node *n, const struct handle *h,
		      struct stat *st)
{
	int ret = -ENOENT;

	if (h && h->src)
		return ns_state(c->ns, &n->e, h->src, st);
	if (ns_state(c->ns, &n->e, NULL, st) == 0)
		return 0;
	pthread_mutex_lock(&c->open_lock);
	for (const struct ops_open *l = c->open_list.next; l != &c->open_list; l = l->next) {
		const struct handle *o = (const struct handle *)l;

		if (!l->is_dir && o->node == n && o->src) {
			ret = ns_state(c->ns, &n->e, o->src, st);
			break;
		}
	}
	pthread_mutex_unlock(&c->open_lock);
	return ret;
}

/*
 * The attributes node shows: its version's, read-only, archives at their
 * uncompressed size.  st_ino stays the source's, not the node id: the node
 * id names one version (nodes.h), so that an old handle keeps its version's
 * pages, while st_ino names the file, as long as it is the same source file
 * (device and inode), across content changes.  tail -F compares st_ino to
 * tell a rotated file from a grown one; with a number per version it took
 * every append for a new file and printed it again from the start.  The
 * kernel keys its inodes by node id and only shows st_ino, so two versions'
 * inodes may share it.  Files on another file system under SRC are numbered
 * apart (nodes_ino), since the mount has one st_dev.
 */
static void node_attr(struct ops_ctx *c, const struct node *n, const struct handle *h,
		      struct stat *st)
{
	struct stat now;

	*st = n->e.st;
	if (n->arc) {
		struct reader *r = arc_reader(n->arc);

		st->st_size = r ? (off_t)reader_size(r) : 0;
		st->st_blocks = (st->st_size + 511) / 512;
	} else if (plain_stat(c, n, h, &now) == 0) {
		*st = now; /* plain files and directories show their current state */
	}
	st->st_ino = nodes_ino(c->nodes, st->st_dev, st->st_ino);
	tree_readonly(st);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ops_ctx *c = ctx(req);
	struct fuse_entry_param e = { .attr_timeout = c->timeout, .entry_timeout = c->timeout };
	struct node *p = nodes_get(c->nodes, parent), *n = NULL;
	struct ns_entry v = { 0 };
	struct arc *arc = NULL;
	char path[PATH_MAX];
	int ret;

	if (!p) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	ret = snprintf(path, sizeof(path), "%s/%s", strcmp(p->path, "/") ? p->path : "", name);
	ret = ret < 0 || (size_t)ret >= sizeof(path) ? -ENAMETOOLONG : ns_resolve(c->ns, path, &v);
	if (ret == 0 && v.kind == NS_ARCHIVE) {
		/* Index it now: its size is part of the version the kernel caches. */
		ret = arctab_get(c->arcs, &v, &arc);
		ret = ret == -ENOTSUP ? -EIO : ret;
	}
	if (ret == 0)
		ret = nodes_lookup(c->nodes, parent, name, path, &v, &arc, &n);
	ns_entry_clear(&v);
	note_limits(c, ret);
	/* A request that failed (logged) is EIO; the kernel retries at the next lookup. */
	if (ns_remote(c->ns) && ret < 0 && ret != -ENOENT && ret != -ENAMETOOLONG &&
	    ret != -ENOMEM && ret != -ESTALE)
		ret = -EIO;
	arctab_put(c->arcs, arc);
	nodes_put(c->nodes, p);
	if (ret == -ENOENT) {
		fuse_reply_entry(req, &e); /* ino 0: the kernel caches the absence */
		return;
	}
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	e.ino = n->id;
	node_attr(c, n, NULL, &e.attr);
	nodes_put(c->nodes, n);
	fuse_reply_entry(req, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	nodes_forget(ctx(req)->nodes, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		nodes_forget(ctx(req)->nodes, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ops_ctx *c = ctx(req);
	struct node *n = nodes_get(c->nodes, ino);
	struct stat st;

	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	/* fi: an open file's handle (the kernel sends it for a read past the size it holds). */
	node_attr(c, n, fi && !handle_of(fi)->link.is_dir ? handle_of(fi) : NULL, &st);
	nodes_put(c->nodes, n);
	fuse_reply_attr(req, &st, c->timeout);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct ops_ctx *c = ctx(req);
	struct node *n = nodes_get(c->nodes, ino);
	char buf[PATH_MAX];
	ssize_t len = n ? ns_readlink(c->ns, &n->e, buf, sizeof(buf)) : -ESTALE;

	nodes_put(c->nodes, n);
	if (len < 0)
		fuse_reply_err(req, (int)-len);
	else
		fuse_reply_readlink(req, buf);
}

static void handle_close(struct ops_ctx *c, struct handle *h)
{
	open_remove(c, &h->link);
	if (h->node->arc)
		arctab_close(c->arcs, h->node->arc);
	zsrc_put(h->src);
	nodes_put(c->nodes, h->node);
	free(h);
}

/*
 * Opens node n for reading into h; *same says whether the file is still the
 * version n names.  -ESTALE (the name is no longer that regular file) makes
 * the kernel look the name up again.
 */
static int open_node(struct ops_ctx *c, struct node *n, struct handle *h, bool *same)
{
	int ret;

	*same = true;
	if (n->arc) {
		if (!arc_reader(n->arc))
			return -EIO; /* logged once, when it was indexed */
		return arctab_open(c->arcs, n->arc);
	}
	/* Never opens what is not that regular file: no FIFO can block us, no device is opened. */
	ret = ns_open(c->ns, &n->e, &h->src, same);
	if (ret == 0)
		h->fd = zsrc_local_fd(h->src);
	return ret;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ops_ctx *c = ctx(req);
	struct handle *h;
	bool same = false;
	int ret;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	h->fd = -1;
	h->node = nodes_get(c->nodes, ino);
	ret = h->node ? note_limits(c, open_node(c, h->node, h, &same)) : -ESTALE;
	if (ret < 0) {
		if (ret == -EIO)
			reader_note_error(
				c->zm); /* a corrupt archive: its cause was logged when indexed */
		if (h->node)
			zlog(ZLOG_DEBUG, "open %s: %s", h->node->path, strerror(-ret));
		nodes_put(c->nodes, h->node);
		free(h);
		fuse_reply_err(req, -ret);
		return;
	}
	zlog(ZLOG_DEBUG, "open %s (%s, node %llu)", h->node->path,
	     h->node->arc ? "archive" : "plain", (unsigned long long)h->node->id);
	/*
	 * A node is one version of a file: its pages never go stale.  A plain
	 * file that changed since its node was looked up (the kernel still
	 * caches the name) is read afresh by this open; the next lookup gives
	 * the new version its own node.
	 */
	fi->keep_cache = same;
	fi->fh = (uintptr_t)h;
	open_add(c, &h->link, false);
	if (fuse_reply_open(req, fi) != 0)
		handle_close(c, h); /* the opener is gone (interrupted): nobody will release it */
}

/* Archive bytes go to the kernel straight from the cache, not through a buffer of ours. */
static void ops_read_archive(fuse_req_t req, struct reader *r, size_t size, uint64_t off)
{
	struct reader_view v;
	ssize_t n = reader_view(r, size, off, &v);
	char *buf;

	if (n >= 0 && ((size_t)n == size || off + (uint64_t)n >= reader_size(r))) {
		fuse_reply_iov(req, v.iov, (int)v.n);
		/* r may be gone now: the reply lets the kernel release and forget the file */
		reader_view_release(&v);
		return;
	}
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	/*
	 * More pieces than a view holds (an xz file of tiny Blocks), or no
	 * room to pin them all at once: copy them.  What the view has is
	 * copied first, so it is not decoded again if evicted meanwhile.
	 */
	buf = malloc(size);
	if (buf) {
		size_t have = 0;

		for (unsigned i = 0; i < v.n; i++) {
			memcpy(buf + have, v.iov[i].iov_base, v.iov[i].iov_len);
			have += v.iov[i].iov_len;
		}
		reader_view_release(&v);
		n = reader_pread(r, buf + have, size - have, off + have);
		if (n >= 0)
			n += (ssize_t)have;
	} else {
		reader_view_release(&v);
		n = -ENOMEM;
	}
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/*
 * A plain file with no descriptor (an object): read through its source,
 * whose GETs carry If-Match, so an overwritten object fails with EIO (said
 * once per node), never giving the new version's bytes.
 */
static void read_plain(fuse_req_t req, struct ops_ctx *c, struct handle *h, size_t size,
		       uint64_t off)
{
	char *buf = malloc(size ? size : 1), name[PATH_MAX + 64];
	ssize_t n = buf ? zsrc_pread(h->src, buf, size, off) : -ENOMEM;

	if (n == -ESTALE && nodes_say_once(h->node)) {
		ns_name(c->ns, &h->node->e, name, sizeof(name));
		zlog(ZLOG_WARN,
		     "%s: changed since it was listed (its ETag differs); reads of the old "
		     "version fail with EIO until its name is looked up again",
		     name);
	}
	if (n < 0)
		fuse_reply_err(req, n == -ENOMEM ? ENOMEM : EIO);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct handle *h = handle_of(fi);
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);
	struct ops_ctx *c = ctx(req);

	(void)ino;
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
	} else if (h->node->arc) {
		ops_read_archive(req, arc_reader(h->node->arc), size, (uint64_t)off);
	} else if (h->fd < 0) {
		atomic_fetch_add_explicit(&c->plain_reads, 1, memory_order_relaxed);
		read_plain(req, c, h, size, (uint64_t)off);
	} else {
		atomic_fetch_add_explicit(&c->plain_reads, 1, memory_order_relaxed);
		/* libfuse reads the file straight into its reply. */
		bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK | FUSE_BUF_FD_RETRY;
		bv.buf[0].fd = h->fd;
		bv.buf[0].pos = off;
		fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
	}
}

void ops_note_read(void *ctx, uint64_t fh, uint64_t off, uint32_t size, struct loop_note *out)
{
	const struct handle *h = (const struct handle *)(uintptr_t)fh;
	struct reader *r;

	(void)ctx;
	/* A READ holds the kernel's reference to the open file: h lives until it is answered. */
	if (!h->node->arc)
		return;
	r = arc_reader(h->node->arc);
	out->slot = reader_note_received(r, off, size);
	out->what = out->slot >= 0 ? r : NULL;
}

void ops_adopt_read(void *ctx, const struct loop_note *n)
{
	(void)ctx;
	if (n)
		reader_adopt_received(n->what, n->slot);
	else
		reader_adopt_received(NULL, -1);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	handle_close(ctx(req), handle_of(fi));
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;
	int ret = ns_statfs(ctx(req)->ns, &sv);

	(void)ino;
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_statfs(req, &sv);
}

static void listing_free(struct ops_ctx *c, struct listing *l)
{
	if (!l)
		return;
	if (l->link.next)
		open_remove(c, &l->link);
	ns_closedir(c->ns, l->dir);
	free(l);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ops_ctx *c = ctx(req);
	struct node *n = nodes_get(c->nodes, ino);
	struct listing *l = calloc(1, sizeof(*l));
	int ret = !n ? -ESTALE : !l ? -ENOMEM : ns_opendir(c->ns, n->path, &l->dir);

	nodes_put(c->nodes, n);
	if (ret < 0) {
		listing_free(c, l);
		fuse_reply_err(req, -ret);
		return;
	}
	fi->fh = (uintptr_t)l;
	fi->cache_readdir = 0;
	open_add(c, &l->link, true);
	if (fuse_reply_open(req, fi) != 0)
		listing_free(c, l);
}

/* The st_ino node_attr shows for directory node id, or for its parent. */
static ino_t dir_ino(struct ops_ctx *c, fuse_ino_t id, bool parent)
{
	struct node *n = nodes_get(c->nodes, id);
	ino_t shown = 1; /* the kernel forgot it: any nonzero number (glibc skips 0) */

	if (n && parent) {
		fuse_ino_t up = n->parent;

		nodes_put(c->nodes, n);
		n = nodes_get(c->nodes, up);
	}
	if (n)
		shown = nodes_ino(c->nodes, n->e.st.st_dev, n->e.st.st_ino);
	nodes_put(c->nodes, n);
	return shown;
}

/*
 * Whether offset i has an entry.  With none in the reply yet (used 0), a
 * listing that may grow is waited for; *more < 0: it failed.  The kernel
 * sends one readdir at a time per open directory (its per-file readdir
 * lock), so one thread at a time reads or grows a listing, as ns.h asks.
 */
static bool have_offset(struct ops_ctx *c, struct listing *l, off_t i, size_t used, int *more)
{
	while (i >= (off_t)ns_dir_count(c->ns, l->dir) + 2)
		if (used || (*more = ns_dir_more(c->ns, l->dir)) <= 0)
			return false;
	return true;
}

/*
 * Offsets: 1 is ".", 2 is "..", 2 + i + 1 follows entry i.  A reply with
 * no entry ends the listing for the kernel, so a listing that may grow
 * (ns_dir_more) is asked for more before an empty reply is sent.
 */
static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct listing *l = (struct listing *)(uintptr_t)fi->fh;
	struct ops_ctx *c = ctx(req);
	char *buf = malloc(size ? size : 1);
	size_t used = 0;
	int more = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (off_t i = off;; i++) {
		struct stat st = { 0 };
		const char *name;
		size_t len;

		if (!have_offset(c, l, i, used, &more))
			break;
		if (i < 2) {
			name = i == 0 ? "." : "..";
			st.st_mode = S_IFDIR;
			st.st_ino = dir_ino(c, ino, i == 1);
		} else {
			name = ns_dir_entry(c->ns, l->dir, (size_t)(i - 2), &st);
			st.st_ino = nodes_ino(c->nodes, st.st_dev, st.st_ino);
		}
		len = fuse_add_direntry(req, buf + used, size - used, name, &st, i + 1);
		if (len > size - used)
			break;
		used += len;
	}
	if (more < 0)
		fuse_reply_err(req, -more);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	listing_free(ctx(req), (struct listing *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

#define STATS_TOP   10
#define OPS_DAMAGED 5 /* damaged archives named in the stats, the last ones */

static size_t ops_cache_stats(struct zmctx *zm, char *out, size_t len)
{
	struct bcache_stats st;
	struct reader_counters rc;
	size_t n;

	bcache_stats(zmctx_cache(zm), &st);
	reader_get_counters(zm, &rc);
	n = (size_t)snprintf(
		out, len,
		"cache_budget=%zu\ncache_used=%zu\ncache_peak=%zu\ncache_charged=%zu\n"
		"cache_entries=%zu\ncache_hits=%llu\ncache_misses=%llu\ncache_waits=%llu\n"
		"cache_room_waits=%llu\ncache_evictions=%llu\n"
		"decoded_bytes=%llu\nserved_bytes=%llu\nreadahead_bytes=%llu\nprefault_bytes=%llu\n",
		st.budget, st.used, st.peak, st.charged, st.entries, (unsigned long long)st.hits,
		(unsigned long long)st.misses, (unsigned long long)st.waits,
		(unsigned long long)st.room_waits, (unsigned long long)st.evictions,
		(unsigned long long)rc.decoded_bytes, (unsigned long long)rc.served_bytes,
		(unsigned long long)rc.readahead_bytes, (unsigned long long)rc.prefault_bytes);
	/* each format's own counter, if it has one (fmttab_counter: "xz_indexes") */
	for (int id = 1; id <= fmttab_count() && n < len; id++)
		if (fmttab_counter(id))
			n += (size_t)snprintf(out + n, len - n, "%s=%llu\n", fmttab_counter(id),
					      (unsigned long long)rc.opened[id]);
	if (n < len)
		n += (size_t)snprintf(
			out + n, len - n,
			"indexes_built=%llu\nindexes_loaded=%llu\nread_errors=%llu\n"
			"index_errors=%llu\ncheckpoints=%llu\n",
			(unsigned long long)rc.indexes_built, (unsigned long long)rc.indexes_loaded,
			(unsigned long long)rc.read_errors, (unsigned long long)rc.index_errors,
			(unsigned long long)rc.checkpoints);
	/* the last damaged archives (zmctx_damaged): "damaged=PATH<TAB>REASON", both escaped */
	if (n < len) {
		struct zmctx_damage *d = malloc(OPS_DAMAGED * sizeof(*d));
		size_t k = d ? zmctx_damaged(zm, d, OPS_DAMAGED) : 0;

		for (size_t i = 0; i < k && n < len; i++) {
			char name[4 * sizeof(d->name)], why[4 * sizeof(d->why)];

			zlog_escape(name, sizeof(name), d[i].name);
			zlog_escape(why, sizeof(why), d[i].why);
			n += (size_t)snprintf(out + n, len - n, "damaged=%s\t%s\n", name, why);
		}
		free(d);
	}
	/* passes running now: "pass=WHAT DONE TOTAL MILLISECONDS PATH", PATH escaped */
	if (n < len) {
		struct zmctx_pass *p = malloc(ZMCTX_PASSES * sizeof(*p));
		size_t k = p ? zmctx_passes(zm, NULL, p, ZMCTX_PASSES) : 0;

		for (size_t i = 0; i < k && n < len; i++) {
			char name[4 * sizeof(p->name)];

			zlog_escape(name, sizeof(name), p[i].name);
			n += (size_t)snprintf(out + n, len - n, "pass=%s %llu %llu %llu %s\n",
					      p[i].what, (unsigned long long)p[i].done,
					      (unsigned long long)p[i].total,
					      (unsigned long long)(p[i].secs * 1000), name);
		}
		free(p);
	}
	/* where the log goes (zlog_where): "stderr", "syslog" or a file's path, escaped */
	if (n < len) {
		char where[4 * PATH_MAX];

		zlog_escape(where, sizeof(where), zlog_where());
		n += (size_t)snprintf(out + n, len - n, "log=%s\n", where);
	}
	return n < len ? n : len - 1;
}

static int stats_text(struct ops_ctx *c, char *out, size_t len)
{
	struct arctab_top top[STATS_TOP];
	size_t n = ops_cache_stats(c->zm, out, len);

	arctab_top(c->arcs, top, STATS_TOP);
	if (n < len)
		n += (size_t)snprintf(out + n, len - n, "nodes=%zu\nplain_reads=%llu\n",
				      nodes_count(c->nodes),
				      (unsigned long long)atomic_load(&c->plain_reads));
	if (n < len)
		n += ns_stats(c->ns, out + n, len - n); /* the namespace's own: listings, ... */
	/*
	 * The archives that cost the most decoding: "top=DECODED SERVED READS
	 * WHY NAME", NAME escaped, WHY one of wide_unit:BYTES, one_unit:BYTES
	 * (BYTES the widest unit, over cache_size/2), no_index, index_saved,
	 * no_index_dir, salvaged (arctab_why), or "-".
	 */
	for (size_t i = 0; i < STATS_TOP && top[i].decoded && n < len; i++) {
		static const char *const whys[] = { "-",	"wide_unit",   "one_unit",
						    "no_index", "index_saved", "no_index_dir",
						    "salvaged" };
		char name[4 * sizeof(top[i].name)], why[48];

		zlog_escape(name, sizeof(name), top[i].name);
		if (top[i].unit)
			snprintf(why, sizeof(why), "%s:%llu", whys[top[i].why],
				 (unsigned long long)top[i].unit);
		else
			snprintf(why, sizeof(why), "%s", whys[top[i].why]);
		n += (size_t)snprintf(out + n, len - n, "top=%llu %llu %llu %s %s\n",
				      (unsigned long long)top[i].decoded,
				      (unsigned long long)top[i].served,
				      (unsigned long long)top[i].reads, why, name);
	}
	return n < len ? (int)n : (int)len - 1;
}

static int info_text(struct ops_ctx *c, const struct node *n, char *out, size_t len)
{
	char source[PATH_MAX + 64];

	ns_source(c->ns, &n->e, source, sizeof(source));
	return ops_info_text(arc_reader(n->arc), source, arc_why(n->arc), out, len);
}

/*
 * Appends "key=value\n" to out (n bytes used of len) unless key is there
 * already: the format's own fields come first and win.  Returns the new n.
 */
static size_t info_add(char *out, size_t len, size_t n, const char *key, unsigned long long v)
{
	char pat[64];
	int k;

	snprintf(pat, sizeof(pat), "\n%s=", key);
	if (n >= len || strstr(out, pat))
		return n;
	k = snprintf(out + n, len - n, "%s=%llu\n", key, v);
	return k < 0 ? n : n + (size_t)k;
}

static int ops_info_text(struct reader *r, const char *source, const char *corrupt, char *out,
			 size_t len)
{
	struct reader_info in;
	struct zerr err;
	char why[1024], line[1024];
	const char *f;
	size_t n;
	int k;

	if (!r) {
		zlog_escape(why, sizeof(why), corrupt);
		return snprintf(out, len, "source=%s\nstate=corrupt\nerror=%s\n", source, why);
	}
	reader_get_info(r, &in);
	k = snprintf(out, len, "source=%s\nformat=%s\nstate=%s\nfailed_units=%u\n", source,
		     fmttab_name(in.fmt),
		     in.changed	   ? "changed"
		     : in.failed   ? "damaged"
		     : in.salvaged ? "salvaged"
				   : "indexed",
		     in.failed);
	if (k < 0 || (size_t)k >= len)
		return k;
	n = (size_t)k;
	/*
	 * The format's own fields, as zmount-info prints them (fmttab_info_line:
	 * "gzip<TAB>members=1<TAB>checkpoints=3..."), one per line: one
	 * vocabulary for both (members, checkpoints and max_span for gzip;
	 * streams, blocks and max_block for xz; frames and max_frame for zstd).
	 */
	fmttab_info_line(in.fmt, &in, line, sizeof(line));
	f = strchr(line, '\t');
	while (f && n < len) {
		size_t flen = strcspn(++f, "\t");

		k = snprintf(out + n, len - n, "%.*s\n", (int)flen, f);
		n = k < 0 ? n : n + (size_t)k;
		f = strchr(f, '\t');
	}
	n = info_add(out, len, n, "chunks", in.chunks);
	n = info_add(out, len, n, "compressed", in.csize);
	n = info_add(out, len, n, "uncompressed", in.usize);
	n = info_add(out, len, n, "decoded", in.decoded);
	n = info_add(out, len, n, "served", in.served);
	/* gzip's checkpoints are its index's, above; it has none inside units */
	n = info_add(out, len, n, "checkpoints", in.ckpts);
	n = info_add(out, len, n, "checkpoint_bytes", in.ckpt_bytes);
	n = info_add(out, len, n, "checkpoints_pending", in.ckpt_wanted);
	n = info_add(out, len, n, "resumes", in.resumes);
	/* A pass over it running now: what it builds, bytes done and total (zmctx_passes). */
	if (n < len) {
		struct zmctx_pass p;

		if (reader_passes(r, &p, 1) == 1) {
			k = snprintf(out + n, len - n,
				     "pass=%s\npass_done=%llu\npass_total=%llu\npass_ms=%llu\n",
				     p.what, (unsigned long long)p.done,
				     (unsigned long long)p.total,
				     (unsigned long long)(p.secs * 1000));
			n = k < 0 ? n : n + (size_t)k;
		}
	}
	/* A damaged or changed archive: why its reads fail, as the log said it. */
	if (n < len && reader_last_error(r, &err) < 0) {
		zlog_escape(why, sizeof(why), err.msg);
		k = snprintf(out + n, len - n, "error=%s\n", why);
		n = k < 0 ? n : n + (size_t)k;
	}
	return (int)n;
}

/* Replies with value (len bytes) the way getxattr and listxattr want it. */
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
	struct ops_ctx *c = ctx(req);
	struct node *n = nodes_get(c->nodes, ino);
	char *text = malloc(XATTR_MAX);
	int len = -ENODATA;

	if (!text)
		len = -ENOMEM;
	else if (!n)
		len = -ESTALE;
	else if (strcmp(name, XATTR_STATS) == 0 && ino == FUSE_ROOT_ID)
		len = stats_text(c, text, XATTR_MAX);
	else if (strcmp(name, XATTR_INFO) == 0 && n->arc)
		len = info_text(c, n, text, XATTR_MAX);
	nodes_put(c->nodes, n);
	if (len < 0)
		fuse_reply_err(req, -len);
	else
		reply_xattr(req, text, len < XATTR_MAX ? (size_t)len : XATTR_MAX - 1, size);
	free(text);
}

/*
 * No names: ours are views of the daemon, not the files' attributes, and a
 * listed name is one that cp -a, rsync -X and tar --xattrs copy.  getxattr
 * still serves them to whoever asks by name.
 */
static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	reply_xattr(req, "", 0, size);
}

void ops_cleanup(struct ops_ctx *c)
{
	while (c->open_list.next != &c->open_list) {
		struct ops_open *l = c->open_list.next;

		if (l->is_dir)
			listing_free(c, (struct listing *)l);
		else
			handle_close(c, (struct handle *)l);
	}
}

bool ops_still_named(void *vctx, const struct reader *r)
{
	return ns_still_named(((struct ops_ctx *)vctx)->ns, r);
}

void ops_tainted(void *vctx, const struct reader *r)
{
	notify_queue(&((struct ops_ctx *)vctx)->notify, r);
}

static ssize_t tainted_ids(void *vctx, const struct reader *r, uint64_t **ids)
{
	return nodes_with_reader(((struct ops_ctx *)vctx)->nodes, r, ids);
}

const struct fuse_lowlevel_ops ops_table = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.readlink = op_readlink,
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
