/* SPDX-License-Identifier: MIT */
#include "ns_tar.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arctab.h"
#include "idxfile.h"
#include "names.h"
#include "ns.h"
#include "reader.h"
#include "src.h"
#include "tarsave.h"
#include "tarscan.h"
#include "tartab.h"
#include "tarview.h"
#include "zlog.h"

/*
 * Entries of this layer carry a tag no source gives (an ETag is printable):
 * "\1t" a member, "\1r" + 'a' or 'f' + the base tag: an archive (or plain
 * file) shown as its directory, whose base entry is the rest.
 */
#define MARK	   '\001'
#define TAG_MEMBER "\001t"
/* Each table's members are numbered on a device of their own (nodes_ino). */
#define TAR_DEV	  ((dev_t)0x7a74 << 48)
#define SCAN_BUF  (1u << 20)
#define TABLE_CAP ((size_t)1 << 32) /* without arctab options: counted bytes of one table */
/* Scans in threads of their own at once; more run in the thread that asked. */
#define MAX_SCANNERS 4
/*
 * The st_ino of a path inside a tar: its depth in components << INO_DEPTH,
 * + 1 + the index of the first member reached whose name is, or starts
 * with, that path; ROOT_INO + 1 + i in the tar's root.  Both are known as
 * soon as that member is, so a listing or a lookup during the scan gives
 * the numbers stat gives later.  Unique: two paths with the same first
 * member are prefixes of its name, so of different depths (at most
 * PATH_MAX / 2, so below 2^52).
 */
#define INO_DEPTH 40
#define ROOT_INO  ((ino_t)1 << INO_DEPTH)

enum { READY = 0, SCANNING = 1 };
/* Whether an archive's pass at open fills a table (struct ptap), and how that went. */
enum { PASS_NONE, PASS_RUNNING, PASS_DONE, PASS_FAILED };

/*
 * The paths reached while a table is scanned (each member's name and its
 * parents'), hashed by path, so that a lookup need not wait for the whole
 * table (early_entry).  Built only by lookups, catching up with the scan
 * under the lock; freed when the scan's input ends.
 */
struct early_slot {
	uint32_t first; /* 1 + the first member whose name is, or starts with, the path */
	uint32_t last;	/* 1 + the last member reached named exactly so; 0: none yet */
	uint32_t len;	/* the path: the first len bytes of member first - 1's name */
};

struct early {
	struct early_slot *s; /* open addressing; first 0: free */
	size_t n, cap;	      /* cap a power of 2, at least twice n */
	size_t seen;	      /* members taken */
	bool full;	      /* it would pass the table's cap: lookups wait for the table */
};

/* One version of one archive's table and the tree it shows. */
struct tarv {
	struct tarv *next;
	struct ns_entry base; /* the archive's entry in the base namespace */
	uint64_t gen;	      /* its members' ns_entry.obj: a new one per version */
	unsigned refs;	      /* under ns_tar.lock */
	int state;	      /* SCANNING, READY, or the -errno its scan ended with */
	bool fed;	      /* the scan fed t once: a growing listing may read it, locked */
	bool damaged;	      /* the scan stopped at a damaged header (set before READY) */
	bool asked;	      /* a lookup or listing wanted it: a pass's own table is kept */
	bool orphan;	      /* made by a pass (ptap), with no scan thread: the pass ends it */
	bool own;	      /* its scan thread loads or scans t itself: no pass may feed it */
	int pass;	      /* PASS_*: whether the open's pass fills it */
	int pass_ret;	      /* PASS_DONE: as scan_table returns */
	bool fed_all;	      /* the scan was told the input ended: lookups wait for READY */
	struct early early;   /* SCANNING and fed: the paths reached, for lookups */
	struct tartab t;
	struct tarview v;
	uint32_t *first; /* READY: per view node, the first member reached at or under it */
};

struct ns_tar {
	struct ns ns; /* first */
	struct ns_ops ops;
	struct ns *base;
	struct arctab *arcs;
	pthread_mutex_t lock; /* list, gen, scanners, stop, the counts; each tarv's refs,
				 state, fed, fed_all, early, asked, own, pass, pass_ret,
				 and its table while it is SCANNING and fed */
	pthread_cond_t built; /* a scan fed more bytes, or ended; a scan thread ended */
	struct tarv *list;
	uint64_t gen;
	unsigned scanners; /* scan threads running */
	uint64_t scanned;  /* decoded bytes fed to scanners (stats) */
	uint64_t by_pass;  /* tables filled by an archive's pass at open (struct ptap) */
	bool stop;	   /* ns_tar_stop: scans end at their next chunk */
};

/* An archive's decoded bytes: through its reader, or a plain tar's own source. */
struct tbytes {
	struct arc *arc;
	struct reader *r;
	struct zsrc *src;
};

static struct ns_tar *tns(void *ns)
{
	return ns;
}

static char mark(const struct ns_entry *e)
{
	return e->tag && e->tag[0] == MARK ? e->tag[1] : 0;
}

static bool tar_name(const char *p, size_t len)
{
	return len >= 4 && memcmp(p + len - 4, ".tar", 4) == 0;
}

/* The base entry of a directory-shown archive (shallow: shares e's strings). */
static void unroot(const struct ns_entry *e, struct ns_entry *out)
{
	*out = *e;
	out->kind = e->tag[2] == 'a' ? NS_ARCHIVE : NS_FILE;
	out->tag = e->tag + 3;
}

static int tb_open(struct ns_tar *nt, const struct ns_entry *base, struct tbytes *b)
{
	bool same;
	int ret;

	memset(b, 0, sizeof(*b));
	if (base->kind != NS_ARCHIVE)
		return ns_open(nt->base, base, &b->src, &same);
	ret = arctab_get(nt->arcs, base, &b->arc);
	if (ret < 0)
		return ret == -ENOTSUP ? -EIO : ret;
	/* a corrupt archive: arctab said why, once */
	ret = arc_reader(b->arc) ? arctab_open(nt->arcs, b->arc) : -EIO;
	if (ret < 0) {
		arctab_put(nt->arcs, b->arc);
		b->arc = NULL;
		return ret;
	}
	b->r = arc_reader(b->arc);
	return 0;
}

static ssize_t tb_pread(struct tbytes *b, void *buf, size_t n, uint64_t off)
{
	return b->r ? reader_pread(b->r, buf, n, off) : zsrc_pread(b->src, buf, n, off);
}

static void tb_close(struct ns_tar *nt, struct tbytes *b)
{
	if (b->arc) {
		arctab_close(nt->arcs, b->arc);
		arctab_put(nt->arcs, b->arc);
	}
	zsrc_put(b->src);
	memset(b, 0, sizeof(*b));
}

static void on_drop(void *arg, uint64_t off, const char *reason, const char *name)
{
	char esc[4 * 256];

	zlog_escape(esc, sizeof(esc), name);
	zlog(ZLOG_WARN, "%s: tar member at offset %" PRIu64 " not shown (%s): %s",
	     (const char *)arg, off, reason, esc);
}

/*
 * A failed read: the reader logs its own failure once (the archive's one
 * line); a plain tar's source does not.
 */
static void say_read_error(const struct tbytes *b, const char *name, uint64_t off, ssize_t n)
{
	zlog(b->r ? ZLOG_DEBUG : ZLOG_ERROR, "%s: tar listing failed at offset %" PRIu64 ": %s",
	     name, off, strerror((int)-n));
}

static size_t name_hash(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
	return (size_t)h;
}

/* The number of components of path p (len > 0 bytes). */
static size_t path_depth(const char *p, size_t len)
{
	size_t d = 1;

	for (size_t i = 0; i < len; i++)
		d += p[i] == '/';
	return d;
}

static void early_free(struct early *e)
{
	free(e->s);
	memset(e, 0, sizeof(*e));
}

/* The slot of path p (len bytes) in e: its own, or the free one it would take. */
static size_t early_slot(const struct early *e, const struct tartab *t, const char *p, size_t len)
{
	size_t mask = e->cap - 1;

	for (size_t h = name_hash(p, len) & mask;; h = (h + 1) & mask) {
		const struct early_slot *x = &e->s[h];

		if (!x->first ||
		    (x->len == len && memcmp(tartab_name(t, &t->m[x->first - 1]), p, len) == 0))
			return h;
	}
}

static int early_grow(struct early *e, const struct tartab *t)
{
	struct early old = *e;

	e->cap = old.cap ? 2 * old.cap : 256;
	e->s = calloc(e->cap, sizeof(*e->s));
	if (!e->s) {
		*e = old;
		return -ENOMEM;
	}
	for (size_t i = 0; i < old.cap; i++) {
		const struct early_slot *x = &old.s[i];

		if (x->first)
			e->s[early_slot(e, t, tartab_name(t, &t->m[x->first - 1]), x->len)] = *x;
	}
	free(old.s);
	return 0;
}

/*
 * Whether e, at cap slots (0: as it is), and table t together would pass
 * the cap the table and its view have (README "Memory"): then lookups
 * wait for the whole table instead.
 */
static bool early_over(const struct early *e, const struct tartab *t, size_t cap)
{
	size_t bytes = (cap ? cap : e->cap) * sizeof(*e->s);

	return t->max_bytes && bytes && tartab_bytes(t) + bytes > t->max_bytes;
}

/* Takes member i: its name, then its parents' until one was reached before. */
static int early_add(struct early *e, const struct tartab *t, size_t i)
{
	const char *p = tartab_name(t, &t->m[i]);
	size_t len = t->m[i].name_len;

	for (bool whole = true; len > 0; whole = false) {
		struct early_slot *x;

		if ((e->n + 1) * 2 > e->cap) {
			if (early_over(e, t, e->cap ? 2 * e->cap : 256)) {
				e->full = true;
				return 0;
			}
			if (early_grow(e, t) < 0)
				return -ENOMEM;
		}
		x = &e->s[early_slot(e, t, p, len)];
		if (whole)
			x->last = (uint32_t)i + 1;
		if (x->first)
			return 0; /* so were its parents */
		*x = (struct early_slot){ (uint32_t)i + 1, x->last, (uint32_t)len };
		e->n++;
		while (len > 0 && p[len - 1] != '/')
			len--;
		len -= len > 0; /* the slash */
	}
	return 0;
}

/*
 * Under the lock, tv SCANNING and fed: the slot of path p (len bytes) among
 * the members fed so far, or NULL (not reached yet, or no memory: *err).
 */
static const struct early_slot *early_find(struct tarv *tv, const char *p, size_t len, int *err)
{
	struct early *e = &tv->early;
	const struct early_slot *x;

	for (*err = 0; e->seen < tv->t.n && !e->full; e->seen++)
		if ((*err = early_add(e, &tv->t, e->seen)) < 0)
			return NULL;
	if (!e->n || e->full)
		return NULL;
	x = &e->s[early_slot(e, &tv->t, p, len)];
	return x->first ? x : NULL;
}

/*
 * Feeds n bytes (0: the end) to tv's scanner under the lock, since partial
 * listings read the table as it grows; -ECANCELED once ns_tar_stop ran.
 */
static int feed(struct ns_tar *nt, struct tarv *tv, struct tarscan *s, const char *buf, size_t n)
{
	int ret = -ECANCELED;

	pthread_mutex_lock(&nt->lock);
	if (!nt->stop) {
		ret = n == 0 ? tarscan_finish_unsized(s) : tarscan_feed(s, buf, n);
		nt->scanned += n;
		tv->fed = true;
		if (n == 0) { /* the end may take back the last member (tartab_pop) */
			tv->fed_all = true;
			early_free(&tv->early);
		} else if (early_over(&tv->early, &tv->t, 0)) {
			early_free(&tv->early); /* lookups wait for the table from here on */
			tv->early.full = true;
		}
		pthread_cond_broadcast(&nt->built);
	}
	pthread_mutex_unlock(&nt->lock);
	return ret;
}

/*
 * After feeding s (ret: feed's): 1 to go on, else the scan's end: 0 (a
 * damaged header, said here: the members before it are kept, see
 * scan_result), or -ECANCELED, -ENOMEM or the cap's -E2BIG (scan() says so).
 */
static int fed(struct tarscan *s, int ret, const char *name)
{
	struct zerr why;

	if (ret == -ECANCELED || ret == -ENOMEM || (ret < 0 && tarscan_capped(s)))
		return ret;
	if (ret < 0) {
		tarscan_error(s, &why);
		zlog(ZLOG_ERROR, "%s: %s; only the members before it are shown", name, why.msg);
		return 0;
	}
	return 1;
}

/* A whole scan's result from its last fed() (ret <= 0): 1 if damaged (never saved). */
static int scan_result(struct tarv *tv, struct tarscan *s, int ret)
{
	if (ret == 0 && tarscan_error(s, NULL) < 0) {
		tv->damaged = true;
		return 1;
	}
	return ret;
}

/* Feeds the whole archive to a scanner.  A damaged header keeps the members before it. */
static int scan_bytes(struct ns_tar *nt, struct tarv *tv, struct tbytes *b, struct tarscan *s,
		      const char *name, char *buf)
{
	uint64_t off = 0;

	while (!tarscan_done(s)) {
		ssize_t n = tb_pread(b, buf, SCAN_BUF, off);
		int ret;

		if (n < 0) {
			say_read_error(b, name, off, n);
			return (int)n;
		}
		ret = fed(s, feed(nt, tv, s, buf, (size_t)n), name);
		if (ret <= 0)
			return ret;
		if (n == 0)
			break;
		off += (uint64_t)n;
	}
	return 0;
}

/* The index_dir of the mount, or NULL. */
static const struct idxstore *store(const struct ns_tar *nt)
{
	const struct reader_opts *o = arctab_opts(nt->arcs);

	return o ? o->index_dir : NULL;
}

/*
 * Whether tv's table may be kept in dir (an archive's, not a plain tar's:
 * it has no index_dir entry of its own): then *id is its archive's
 * identity and *src its source (the caller's reference), else *src NULL.
 */
static bool identify(struct ns_tar *nt, const struct tarv *tv, const char *name,
		     const struct idxstore *dir, struct idxfile_id *id, struct zsrc **src)
{
	bool same;

	*src = NULL;
	if (!dir || tv->base.kind != NS_ARCHIVE || !idxfile_keyed(name) ||
	    ns_open(nt->base, &tv->base, src, &same) < 0)
		return false;
	if (idxfile_identify(*src, id) < 0) {
		zsrc_put(*src);
		*src = NULL;
		return false;
	}
	return true;
}

/*
 * The saved table of an archive of identity id, into tv's table: true
 * loaded; false none (scan), never an error: a table that cannot be loaded
 * is scanned again.
 */
static bool load_saved(struct ns_tar *nt, struct tarv *tv, const char *name,
		       const struct idxfile_id *id)
{
	struct zerr why = { 0 };
	int ret = tarsave_load(store(nt), name, id, &tv->t, &why);

	if (ret == 0)
		return true;
	if (ret != -ENOENT)
		zlog(ZLOG_INFO, "%s: saved member table not used (%s): scanning", name, why.msg);
	tartab_free(&tv->t); /* keeps the cap */
	return false;
}

/*
 * Opens tv's archive for its scan, whose work the pass run by that open
 * (or by another thread's, waited for) may do instead (struct ptap).
 * Returns tb_open's error; 0: scan; 1: the pass filled the table, or fed
 * it and failed: tv->pass_ret is the scan's result, or -EAGAIN (a new
 * table must be made).
 */
static int open_for_scan(struct ns_tar *nt, struct tarv *tv, struct tbytes *b)
{
	int err, pass;
	bool fed_any;

	err = tb_open(nt, &tv->base, b);
	pthread_mutex_lock(&nt->lock);
	while (tv->pass == PASS_RUNNING)
		pthread_cond_wait(&nt->built, &nt->lock);
	pass = tv->pass;
	fed_any = tv->fed;
	tv->own = pass == PASS_NONE; /* from here on a pass that starts feeds nothing */
	pthread_mutex_unlock(&nt->lock);
	if (err < 0)
		return err;
	return pass == PASS_DONE || (pass == PASS_FAILED && fed_any);
}

/* Builds tv's table by one pass over the archive's decoded bytes (*asize: their length). */
static int scan_table(struct ns_tar *nt, struct tarv *tv, const char *name, uint64_t *asize)
{
	char *buf = malloc(SCAN_BUF);
	struct tarscan *s = NULL;
	struct tbytes b;
	int ret = buf ? open_for_scan(nt, tv, &b) : -ENOMEM;

	if (ret < 0) {
		free(buf);
		return ret;
	}
	*asize = b.r ? reader_size(b.r) : (uint64_t)tv->base.st.st_size;
	if (ret == 1) {
		ret = tv->pass_ret; /* a pass filled it, or failed after feeding it */
	} else {
		ret = tarscan_new(&tv->t, *asize, on_drop, (void *)name, &s);
		if (ret == 0)
			ret = scan_result(tv, s, scan_bytes(nt, tv, &b, s, name, buf));
	}
	tarscan_free(s);
	tb_close(nt, &b);
	free(buf);
	return ret;
}

/*
 * The counted bytes one table and its view may take (README "Memory"):
 * index_max, cache_size/4, the bound of an archive's block map too.
 */
static size_t table_cap(const struct ns_tar *nt)
{
	const struct reader_opts *o = nt->arcs ? arctab_opts(nt->arcs) : NULL;

	return o && o->index_max ? o->index_max : TABLE_CAP;
}

/* The most bytes node_firsts allocates: 4 per view node, at most one per member and per '/'. */
static size_t first_cost(const struct tartab *t)
{
	size_t nodes = 1 + t->n;

	for (size_t i = 0; i < t->n; i++)
		for (const char *p = tartab_name(t, &t->m[i]); (p = strchr(p, '/')); p++)
			nodes++;
	return nodes * sizeof(uint32_t);
}

/* The length of the first depth components of member i's name, or 0 if it has fewer. */
static size_t prefix_len(const struct tartab *t, size_t i, size_t depth)
{
	const char *p = tartab_name(t, &t->m[i]), *slash;
	size_t n = t->m[i].name_len, len = 0;

	for (size_t d = 0; d < depth; d++) {
		if (d > 0 && len == n)
			return 0;
		len += d > 0; /* the slash */
		slash = memchr(p + len, '/', n - len);
		len = slash ? (size_t)(slash - p) : n;
	}
	return len;
}

/* The length of the first component of member i's name. */
static size_t first_len(const struct tartab *t, size_t i)
{
	return prefix_len(t, i, 1);
}

/* tv->first: for each view node, the first member reached at or under its path. */
static int node_firsts(struct tarv *tv)
{
	tv->first = malloc((tv->v.n ? tv->v.n : 1) * sizeof(*tv->first));
	if (!tv->first)
		return -ENOMEM;
	memset(tv->first, 0xff, (tv->v.n ? tv->v.n : 1) * sizeof(*tv->first));
	for (size_t i = 0; i < tv->t.n; i++) {
		const char *p = tartab_name(&tv->t, &tv->t.m[i]);
		size_t len = tv->t.m[i].name_len;
		long k;

		/* deepest first: a path already taken has its parents taken too */
		while (len > 0 && (k = tarview_find(&tv->v, p, len)) > 0 &&
		       tv->first[k] == UINT32_MAX) {
			tv->first[k] = (uint32_t)i;
			while (len > 0 && p[len - 1] != '/')
				len--;
			len -= len > 0;
		}
	}
	return 0;
}

static ino_t path_ino(const char *p, size_t len, size_t first)
{
	return ((ino_t)path_depth(p, len) << INO_DEPTH) + 1 + first;
}

/* The st_ino of view node k > 0. */
static ino_t node_ino(const struct tarv *tv, size_t k)
{
	return path_ino(tv->v.v[k].p, tv->v.v[k].len, tv->first[k]);
}

/* The path st_ino ino names in table t (of *len bytes, in its pool), or NULL: none yet. */
static const char *ino_path(const struct tartab *t, ino_t ino, size_t *len)
{
	size_t depth = (size_t)(ino >> INO_DEPTH), i = (size_t)(ino & (ROOT_INO - 1)) - 1;

	*len = depth && (ino & (ROOT_INO - 1)) && i < t->n ? prefix_len(t, i, depth) : 0;
	return *len ? tartab_name(t, &t->m[i]) : NULL;
}

/* The view node a member entry's st_ino names, or -1. */
static long node_of(const struct tarv *tv, ino_t ino)
{
	size_t len;
	const char *p = ino_path(&tv->t, ino, &len);

	return p ? tarview_find(&tv->v, p, len) : -1;
}

/* What table t and its view hold, as the cap counts them (README "Memory"). */
static size_t table_cost(const struct tartab *t)
{
	return tartab_bytes(t) + tarview_cost(t) + first_cost(t);
}

/* -E2BIG, said once (the table is kept in its failed state), if t or its view pass the cap. */
static int over_cap(const struct tartab *t, const char *name, int ret)
{
	size_t cost = ret == -E2BIG ? 0 : table_cost(t);

	if (ret != -E2BIG && (ret < 0 || cost <= t->max_bytes))
		return ret;
	zlog(ZLOG_ERROR,
	     "%s: tar member table over its limit of %zu KiB (cache_size/4) at %zu members: "
	     "the directory is not shown",
	     name, t->max_bytes >> 10, t->n);
	return -E2BIG;
}

/* Saves a whole table (ret 0) of asize decoded bytes when src is set (identify).  True: saved. */
static bool save(struct ns_tar *nt, struct tarv *tv, const char *name, int ret, uint64_t asize,
		 const struct idxfile_id *id, const struct zsrc *src)
{
	if (ret != 0 || !src || tarsave_save(store(nt), name, id, &tv->t, asize, NULL) < 0)
		return false;
	zlog(ZLOG_DEBUG, "%s: member table saved", name);
	return true;
}

/* tv's table is in (ret: as scan_table's, the cap checked): its view. */
static int view(struct tarv *tv, const char *name, int ret)
{
	if (ret >= 0)
		ret = tarview_build(&tv->t, &tv->v);
	if (ret >= 0)
		ret = node_firsts(tv);
	zlog(ZLOG_DEBUG, "%s: tar table of %zu members (%zu bytes): %s", name, tv->t.n,
	     tartab_bytes(&tv->t), ret < 0 ? strerror(-ret) : "ok");
	return ret;
}

/* Builds tv's table, from index_dir or by a scan (then saved there), and its view. */
static int scan(struct ns_tar *nt, struct tarv *tv)
{
	char name[PATH_MAX + 64];
	struct idxfile_id id;
	struct zsrc *src;
	uint64_t asize = 0;
	int ret = 0;

	ns_name(nt->base, &tv->base, name, sizeof(name));
	pthread_mutex_lock(&nt->lock);
	tv->own = tv->pass == PASS_NONE; /* a pass that feeds t already: no saved table */
	pthread_mutex_unlock(&nt->lock);
	if (identify(nt, tv, name, store(nt), &id, &src) && tv->own &&
	    load_saved(nt, tv, name, &id)) {
		ret = over_cap(&tv->t, name, 0);
	} else {
		pthread_mutex_lock(&nt->lock);
		tv->own = false; /* until its open ends, a pass there may feed t instead */
		pthread_mutex_unlock(&nt->lock);
		ret = over_cap(&tv->t, name, scan_table(nt, tv, name, &asize));
		save(nt, tv, name, ret, asize, &id, src);
	}
	zsrc_put(src);
	return view(tv, name, ret);
}

static void tarv_free(struct tarv *tv)
{
	ns_entry_clear(&tv->base);
	tartab_free(&tv->t);
	tarview_free(&tv->v);
	early_free(&tv->early);
	free(tv->first);
	free(tv);
}

/* Unlinks and frees, under the lock, unused tables of older versions of e's archive. */
static void prune_old(struct ns_tar *nt, const struct ns_entry *e)
{
	for (struct tarv **p = &nt->list; *p;) {
		struct tarv *tv = *p;

		if (tv->base.obj == e->obj && tv->base.st.st_dev == e->st.st_dev && !tv->refs &&
		    tv->state != SCANNING) {
			*p = tv->next;
			tarv_free(tv);
		} else {
			p = &tv->next;
		}
	}
}

/* A new table for e, scanning, with one reference; under the lock.  NULL: no memory. */
static struct tarv *tarv_new(struct ns_tar *nt, const struct ns_entry *e)
{
	struct tarv *tv = calloc(1, sizeof(*tv));

	if (!tv || ns_entry_copy(&tv->base, e) < 0) {
		free(tv);
		return NULL;
	}
	prune_old(nt, e);
	tartab_init(&tv->t, table_cap(nt));
	tv->gen = ++nt->gen;
	tv->refs = 1;
	tv->state = SCANNING;
	tv->next = nt->list;
	nt->list = tv;
	return tv;
}

static void tarv_unlink(struct ns_tar *nt, struct tarv *tv)
{
	for (struct tarv **p = &nt->list; *p; p = &(*p)->next)
		if (*p == tv) {
			*p = tv->next;
			return;
		}
}

static void tarv_drop_failed(struct ns_tar *nt, struct tarv *tv);

static void tarv_put(struct ns_tar *nt, struct tarv *tv)
{
	pthread_mutex_lock(&nt->lock);
	tv->refs--;
	tarv_drop_failed(nt, tv);
	pthread_mutex_unlock(&nt->lock);
}

/*
 * A failure that says nothing about the archive: the table is dropped, to
 * scan again later.  -EAGAIN: a pass's table, failed or given to index_dir
 * (ptap_end): a waiting lookup makes a new one at once (tarv_get).
 */
static bool transient(int ret)
{
	return ret == -ENOMEM || ret == -EMFILE || ret == -ENFILE || ret == -ESTALE ||
	       ret == -ECANCELED || ret == -EAGAIN;
}

/* Under the lock: the table of e's version, unless it failed for a transient reason. */
static struct tarv *find_same(struct ns_tar *nt, const struct ns_entry *e)
{
	for (struct tarv *tv = nt->list; tv; tv = tv->next)
		if (tv->base.obj == e->obj && tv->base.st.st_dev == e->st.st_dev &&
		    !(tv->state < 0 && transient(tv->state)) && ns_same(nt->base, &tv->base, e))
			return tv;
	return NULL;
}

/* Under the lock: the last reference to a table that failed for a transient reason frees it. */
static void tarv_drop_failed(struct ns_tar *nt, struct tarv *tv)
{
	if (tv->refs == 0 && tv->state < 0 && transient(tv->state)) {
		tarv_unlink(nt, tv);
		tarv_free(tv);
	}
}

/* Scans tv and drops the scan's reference; a failed scan is kept (said once) unless transient. */
static void scan_run(struct ns_tar *nt, struct tarv *tv)
{
	int ret = scan(nt, tv);

	pthread_mutex_lock(&nt->lock);
	tv->state = ret >= 0 ? READY : transient(ret) ? ret : -EIO;
	early_free(&tv->early); /* lookups use the view now */
	tv->refs--;
	tarv_drop_failed(nt, tv);
	pthread_cond_broadcast(&nt->built);
	pthread_mutex_unlock(&nt->lock);
}

struct scan_job {
	struct ns_tar *nt;
	struct tarv *tv;
};

static void *scan_thread(void *arg)
{
	struct scan_job job = *(struct scan_job *)arg;

	free(arg);
	scan_run(job.nt, job.tv);
	pthread_mutex_lock(&job.nt->lock);
	job.nt->scanners--;
	pthread_cond_broadcast(&job.nt->built);
	pthread_mutex_unlock(&job.nt->lock);
	return NULL;
}

/* Under the lock: starts tv's scan in a thread of its own.  false: none (scan in the caller). */
static bool launch(struct ns_tar *nt, struct tarv *tv)
{
	struct scan_job *job;
	pthread_attr_t attr;
	pthread_t th;
	bool ok;

	if (nt->stop || nt->scanners >= MAX_SCANNERS || !(job = malloc(sizeof(*job))))
		return false;
	job->nt = nt;
	job->tv = tv;
	if (pthread_attr_init(&attr) != 0) {
		free(job);
		return false;
	}
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ok = pthread_create(&th, &attr, scan_thread, job) == 0;
	pthread_attr_destroy(&attr);
	if (!ok)
		free(job);
	nt->scanners += ok;
	return ok;
}

/* tarv_get once: its errors as they are, -EAGAIN included. */
static int tarv_get_once(struct ns_tar *nt, const struct ns_entry *e, bool partial,
			 struct tarv **out)
{
	struct tarv *tv;
	int ret;

	pthread_mutex_lock(&nt->lock);
	tv = find_same(nt, e);
	if (!tv && (tv = tarv_new(nt, e))) { /* with the scan's reference */
		tv->refs++;
		if (!launch(nt, tv)) {
			pthread_mutex_unlock(&nt->lock);
			scan_run(nt, tv);
			pthread_mutex_lock(&nt->lock);
		}
	} else if (tv) {
		tv->refs++;
	}
	if (!tv) {
		pthread_mutex_unlock(&nt->lock);
		return -ENOMEM;
	}
	tv->asked = true;
	while (tv->state == SCANNING && !(partial && tv->fed))
		pthread_cond_wait(&nt->built, &nt->lock);
	ret = tv->state;
	if (ret < 0) {
		tv->refs--;
		tarv_drop_failed(nt, tv);
	}
	pthread_mutex_unlock(&nt->lock);
	*out = ret < 0 ? NULL : tv;
	return ret;
}

/*
 * The table of base archive e with a reference (tarv_put), its scan started
 * if nobody has (or filled by the archive's pass at open, struct ptap).
 * Waits until the table is READY (0), or with partial until the scan has
 * fed it once: then SCANNING (1), a table that grows, read only under the
 * lock.  A failed scan gives -EIO (or a transient -errno).
 */
static int tarv_get(struct ns_tar *nt, const struct ns_entry *e, bool partial, struct tarv **out)
{
	int ret;

	while ((ret = tarv_get_once(nt, e, partial, out)) == -EAGAIN)
		; /* a pass's table that failed or went to index_dir: make one of our own */
	return ret < 0 ? (ret == -ESTALE || ret == -ENOMEM ? ret : -EIO) : ret;
}

/*
 * The decoded bytes of a tar's pass at open (gzip's index pass, which runs
 * before anything is read) fed to its table's scanner as they go by
 * (reader.h, struct reader_tap), so the table needs no decode of its own.
 * It feeds the table of a scan thread that has not begun to fill it
 * itself (tarv.own: that thread then waits for the pass and only builds
 * the view), or, if nobody has asked yet, a table of its own that it
 * finishes itself (orphan).  A pass that fails, or shows less than
 * it decoded (salvage), leaves the table to a scan through the reader
 * (-EAGAIN).  Its table gets the same members and damage as a scan: the
 * scanner learns the archive's size only at the end
 * (tarscan_finish_unsized).
 */
struct ptap {
	struct reader_tap tap;
	struct ns_tar *nt;
	struct ns_entry e;
	struct tarv *tv; /* attached at the first bytes, referenced; NULL: none (yet) */
	struct tarscan *s;
	uint64_t bytes; /* fed */
	int ret;	/* fed()'s last: 1 going on, else the scan's end */
	bool off;	/* feeds nothing more */
	char name[PATH_MAX + 64];
};

/* At the first bytes: the table to fill, if any; false: none. */
static bool ptap_attach(struct ptap *p)
{
	struct ns_tar *nt = p->nt;
	struct tarv *tv;

	pthread_mutex_lock(&nt->lock);
	tv = nt->stop ? NULL : find_same(nt, &p->e);
	if (tv && tv->state == SCANNING && !tv->own && tv->pass == PASS_NONE) {
		tv->refs++;
	} else if (!tv && !nt->stop && (tv = tarv_new(nt, &p->e))) {
		tv->orphan = true; /* its one reference is the pass's */
	} else {
		tv = NULL;
	}
	if (tv)
		tv->pass = PASS_RUNNING;
	pthread_mutex_unlock(&nt->lock);
	p->tv = tv;
	if (tv && tarscan_new(&tv->t, 0, on_drop, p->name, &p->s) < 0)
		p->ret = -ENOMEM;
	return tv && p->s;
}

static void ptap_out(void *ctx, const void *buf, size_t len)
{
	struct ptap *p = ctx;

	if (p->off)
		return;
	if (!p->tv && !ptap_attach(p)) {
		p->off = true;
		return;
	}
	p->bytes += len;
	p->ret = fed(p->s, feed(p->nt, p->tv, p->s, buf, len), p->name);
	p->off = p->ret <= 0 || tarscan_done(p->s);
}

/* Under the lock: what the tables nobody asked for hold (table_cost), skip aside. */
static size_t unasked_bytes(const struct ns_tar *nt, const struct tarv *skip)
{
	size_t sum = 0;

	for (const struct tarv *tv = nt->list; tv; tv = tv->next)
		if (tv != skip && !tv->asked && tv->state == READY)
			sum += table_cost(&tv->t);
	return sum;
}

/* An orphan table's end (ret: as scan_table's): saved, and kept if asked for or not saved. */
static int orphan_done(struct ns_tar *nt, struct tarv *tv, const char *name, int ret,
		       uint64_t asize)
{
	struct idxfile_id id;
	struct zsrc *src = NULL;
	bool saved, drop;

	ret = over_cap(&tv->t, name, ret);
	if (ret == 0)
		identify(nt, tv, name, store(nt), &id, &src);
	saved = save(nt, tv, name, ret, asize, &id, src);
	zsrc_put(src);
	pthread_mutex_lock(&nt->lock);
	/*
	 * Nobody asked: index_dir keeps it, so it costs no memory until a
	 * lookup loads it.  Without one, the tables nobody asked for share
	 * one cap (README "Memory"); past it, a lookup scans again.
	 */
	drop = !tv->asked &&
	       (saved || (ret == 0 && unasked_bytes(nt, tv) + table_cost(&tv->t) > table_cap(nt)));
	pthread_mutex_unlock(&nt->lock);
	if (drop && !saved)
		zlog(ZLOG_DEBUG,
		     "%s: member table not kept: the tables nobody listed fill their cap", name);
	return drop ? -EAGAIN : view(tv, name, ret);
}

/* The pass ended: status 0 if it handed out every byte (struct reader_tap). */
static void ptap_end(void *ctx, int status)
{
	struct ptap *p = ctx;
	struct ns_tar *nt = p->nt;
	struct tarv *tv = p->tv;
	int ret = -EAGAIN;

	if (tv && status == 0 && p->s) {
		if (!p->off)
			p->ret = fed(p->s, feed(nt, tv, p->s, NULL, 0), p->name);
		ret = scan_result(tv, p->s, p->ret > 0 ? 0 : p->ret);
	}
	tarscan_free(p->s);
	if (tv && tv->orphan) {
		ret = ret == -EAGAIN ? ret : orphan_done(nt, tv, p->name, ret, p->bytes);
		pthread_mutex_lock(&nt->lock);
		tv->state = ret >= 0 ? READY : transient(ret) ? ret : -EIO;
		early_free(&tv->early);
	} else if (tv) {
		pthread_mutex_lock(&nt->lock);
		tv->pass_ret = ret;
	}
	if (tv) {
		tv->pass = ret == -EAGAIN ? PASS_FAILED : PASS_DONE;
		nt->by_pass += tv->pass == PASS_DONE;
		tv->refs--;
		tarv_drop_failed(nt, tv);
		pthread_cond_broadcast(&nt->built);
		pthread_mutex_unlock(&nt->lock);
	}
	ns_entry_clear(&p->e);
	free(p);
}

/* ns_ops.pass_tap: a watcher for an archive shown as a tar. */
static const struct reader_tap *t_pass_tap(void *ns, const struct ns_entry *e)
{
	struct ns_tar *nt = tns(ns);
	const char *id = e->id ? e->id : "", *slash = strrchr(id, '/');
	char shown[NAME_MAX + 1];
	struct ptap *p;

	if (e->kind != NS_ARCHIVE || mark(e) ||
	    names_strip(slash ? slash + 1 : id, shown, sizeof(shown)) != 1 ||
	    !tar_name(shown, strlen(shown)))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p || ns_entry_copy(&p->e, e) < 0) {
		free(p);
		return NULL;
	}
	p->nt = nt;
	p->ret = 1;
	ns_name(nt->base, e, p->name, sizeof(p->name));
	p->tap = (struct reader_tap){ ptap_out, ptap_end, p };
	return &p->tap;
}

void ns_tar_stop(struct ns *ns)
{
	struct ns_tar *nt = tns(ns);

	pthread_mutex_lock(&nt->lock);
	nt->stop = true;
	while (nt->scanners)
		pthread_cond_wait(&nt->built, &nt->lock);
	pthread_mutex_unlock(&nt->lock);
}

/*
 * Under the lock, tv SCANNING: whether an operation on member entry e can
 * be answered from the members the scan has reached: 1 (answered into
 * arg), 0 (not yet: wait for more, or for the whole table), or -errno.
 */
typedef int (*early_fn)(struct tarv *tv, const struct ns_entry *e, void *arg);

/*
 * The table whose members carry obj e->obj, with a reference, READY or
 * (early answered 1) still SCANNING; or NULL and *err: -ESTALE
 * (superseded), -EIO (its scan failed, said in the log), or early's
 * -errno.  wait: one still scanning (a lookup answered early,
 * early_entry) is waited for, asking early (may be NULL) at each chunk
 * fed; else it gives NULL (-EIO).
 */
static struct tarv *tarv_by_gen(struct ns_tar *nt, const struct ns_entry *e, bool wait,
				early_fn early, void *arg, int *err)
{
	struct tarv *tv;
	int got = 0;

	pthread_mutex_lock(&nt->lock);
	for (;;) {
		for (tv = nt->list; tv && tv->gen != e->obj; tv = tv->next)
			;
		if (!tv || tv->state != SCANNING || !wait || (early && (got = early(tv, e, arg))))
			break;
		pthread_cond_wait(&nt->built, &nt->lock);
	}
	*err = got < 0 ? got : tv ? -EIO : -ESTALE;
	if (got < 0 || (tv && tv->state != READY && got != 1))
		tv = NULL;
	if (tv)
		tv->refs++;
	pthread_mutex_unlock(&nt->lock);
	return tv;
}

static mode_t type_bits(const struct tar_member *m)
{
	static const mode_t bits[TAR_TYPES] = { S_IFREG, S_IFDIR, S_IFLNK, S_IFREG,
						S_IFCHR, S_IFBLK, S_IFIFO };

	return bits[m->type];
}

/*
 * What a path numbered ino shows: member m, its bytes those of member d (a
 * hard link's target; NULL: none), or with m NULL a directory only its
 * members' names imply, shown with the archive's owner and time.
 */
static enum ns_kind fill_stat(const struct tarv *tv, const struct tar_member *m,
			      const struct tar_member *d, ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = TAR_DEV | (dev_t)tv->gen;
	st->st_ino = ino;
	st->st_nlink = 1;
	st->st_blksize = 4096;
	if (!m) {
		st->st_mode = S_IFDIR | 0755;
		st->st_uid = tv->base.st.st_uid;
		st->st_gid = tv->base.st.st_gid;
		st->st_mtim = tv->base.st.st_mtim;
	} else {
		st->st_mode = type_bits(m) | (m->mode & 07777);
		st->st_uid = m->uid;
		st->st_gid = m->gid;
		st->st_mtim.tv_sec = m->mtime;
		st->st_mtim.tv_nsec = m->mtime_ns;
		if (m->type == TAR_SYMLINK)
			st->st_size = m->link_len;
		else if (S_ISREG(st->st_mode))
			st->st_size = d ? (off_t)d->size : 0;
	}
	st->st_atim = st->st_ctim = st->st_mtim;
	st->st_blocks = (st->st_size + 511) / 512;
	if (S_ISDIR(st->st_mode))
		return st->st_nlink = 2, NS_DIR;
	if (S_ISREG(st->st_mode))
		return NS_FILE;
	return S_ISLNK(st->st_mode) ? NS_SYMLINK : NS_OTHER;
}

/* What view node k shows: its kind and stat. */
static enum ns_kind member_stat(const struct tarv *tv, size_t k, struct stat *st)
{
	int32_t i = tv->v.v[k].mem;

	return fill_stat(tv, i < 0 ? NULL : &tv->t.m[i], tarview_data(&tv->t, &tv->v, k),
			 node_ino(tv, k), st);
}

/*
 * Under the lock, tv SCANNING: what a lookup of path p (len bytes) shows
 * as far as the scan has gone (early_find): 1 (*kind, *st), 0 not reached
 * yet, or -ENOMEM.  The last member reached with that name, as the view
 * keeps the last (a later one may still replace it: t_state shows the
 * final one); a directory implied by deeper names until its own header.
 */
static int early_stat(struct tarv *tv, const char *p, size_t len, enum ns_kind *kind,
		      struct stat *st)
{
	int err = 0;
	const struct early_slot *x = tv->fed ? early_find(tv, p, len, &err) : NULL;
	const struct tar_member *m = NULL, *d = NULL;

	if (!x)
		return err;
	if (x->last) {
		m = d = &tv->t.m[x->last - 1];
		if (m->type == TAR_HARDLINK)
			d = tartab_link_target(&tv->t, x->last - 1);
	}
	*kind = fill_stat(tv, m, d, path_ino(p, len, x->first - 1), st);
	return 1;
}

/*
 * Under the lock: waits until path p (len bytes) of tv is reached (1,
 * *kind and *st set) or the scan's input has ended (0: the whole table
 * answers), or fails: -ENOMEM, -EIO, a transient -errno.  A name not
 * reached yet is never ENOENT before the end: the kernel caches that.
 */
static int early_entry(struct ns_tar *nt, struct tarv *tv, const char *p, size_t len,
		       enum ns_kind *kind, struct stat *st)
{
	int ret = 0;

	while (tv->state == SCANNING && !tv->fed_all && ret == 0) {
		ret = early_stat(tv, p, len, kind, st);
		if (ret == 0)
			pthread_cond_wait(&nt->built, &nt->lock);
	}
	while (ret == 0 && tv->state == SCANNING)
		pthread_cond_wait(&nt->built, &nt->lock);
	return ret != 0 ? ret : tv->state == READY ? 0 : transient(tv->state) ? tv->state : -EIO;
}

/*
 * The entry for inner path inner of archive base (taken over) at visible
 * path: during the scan, as soon as the scan has reached it (early_entry).
 */
static int member_entry(struct ns_tar *nt, struct ns_entry *base, const char *inner,
			const char *path, struct ns_entry *out)
{
	struct tarv *tv = NULL;
	enum ns_kind kind = NS_OTHER;
	struct stat st;
	int ret;

	do { /* -EAGAIN: a pass's table that failed (tarv_get) */
		ret = tarv_get(nt, base, true, &tv);
		if (ret < 0)
			break;
		pthread_mutex_lock(&nt->lock);
		ret = early_entry(nt, tv, inner, strlen(inner), &kind, &st);
		pthread_mutex_unlock(&nt->lock);
		if (ret == -EAGAIN)
			tarv_put(nt, tv);
	} while (ret == -EAGAIN);
	ns_entry_clear(base); /* which may be out */
	if (ret < 0 && tv)
		tarv_put(nt, tv);
	if (ret < 0)
		return ret == -ENOMEM || ret == -ESTALE ? ret : -EIO;
	if (ret == 0) {
		long k = tarview_find(&tv->v, inner, strlen(inner));

		ret = k > 0 ? 0 : -ENOENT;
		if (k > 0)
			kind = member_stat(tv, (size_t)k, &st);
	}
	memset(out, 0, sizeof(*out));
	if (ret >= 0) {
		out->kind = kind;
		out->st = st;
		out->obj = tv->gen;
		out->id = strdup(path);
		out->tag = strdup(TAG_MEMBER);
		ret = out->id && out->tag ? 0 : -ENOMEM;
	}
	if (ret < 0)
		ns_entry_clear(out);
	tarv_put(nt, tv);
	return ret;
}

/* Base entry e (kept) shown as the directory of its members. */
static int root_entry(struct ns_entry *e)
{
	size_t len = e->tag ? strlen(e->tag) : 0;
	char *tag = malloc(len + 4);

	if (!tag) {
		ns_entry_clear(e);
		return -ENOMEM;
	}
	tag[0] = MARK;
	tag[1] = 'r';
	tag[2] = e->kind == NS_ARCHIVE ? 'a' : 'f';
	memcpy(tag + 3, e->tag ? e->tag : "", len + 1);
	free(e->tag);
	e->tag = tag;
	e->kind = NS_DIR;
	return 0;
}

static int t_resolve(void *ns, const char *path, struct ns_entry *out)
{
	struct ns_tar *nt = tns(ns);
	size_t len = strlen(path);
	char pre[PATH_MAX];

	/* the first component named *.tar that is an archive or plain file is the tar */
	for (size_t i = 1; i <= len && i < sizeof(pre); i++) {
		int ret;

		if ((i < len && path[i] != '/') || !tar_name(path, i))
			continue;
		memcpy(pre, path, i);
		pre[i] = '\0';
		ret = ns_resolve(nt->base, pre, out);
		if (ret < 0)
			return ret;
		if (out->kind != NS_ARCHIVE && out->kind != NS_FILE) {
			ns_entry_clear(out);
			continue;
		}
		if (i == len)
			return root_entry(out);
		return member_entry(nt, out, path + i + 1, path, out);
	}
	return ns_resolve(nt->base, path, out);
}

static bool t_same(void *ns, const struct ns_entry *a, const struct ns_entry *b)
{
	struct ns_entry x, y;
	char ka = mark(a);

	if (ka != mark(b))
		return false;
	if (ka == 't')
		return a->kind == b->kind && a->obj == b->obj && a->st.st_ino == b->st.st_ino;
	if (ka != 'r')
		return ns_same(tns(ns)->base, a, b);
	unroot(a, &x);
	unroot(b, &y);
	return ns_same(tns(ns)->base, &x, &y);
}

/* A directory-shown archive's stat: its own, as a directory anyone who may read it may enter. */
static void root_stat(const struct ns_entry *e, struct stat *st)
{
	*st = e->st;
	st->st_mode = S_IFDIR | (e->st.st_mode & 07777) | ((e->st.st_mode & 0444) >> 2);
	st->st_nlink = 2;
	st->st_size = 0;
	st->st_blocks = 0;
}

/*
 * A member's stat: from the whole table once there is one, since a lookup
 * answered during the scan (early_entry) showed the member reached by
 * then (a later member of the same name, or a directory's own header, may
 * change it); the lookup's if the type changed, which a node cannot.
 */
static void member_state(struct ns_tar *nt, const struct ns_entry *e, struct stat *st)
{
	int err;
	struct tarv *tv = tarv_by_gen(nt, e, false, NULL, NULL, &err);
	long k = tv ? node_of(tv, e->st.st_ino) : -1;

	if (k < 0 || member_stat(tv, (size_t)k, st) != e->kind)
		*st = e->st;
	if (tv)
		tarv_put(nt, tv);
}

static int t_state(void *ns, const struct ns_entry *e, struct zsrc *src, struct stat *st)
{
	switch (mark(e)) {
	case 't':
		member_state(tns(ns), e, st);
		return 0;
	case 'r':
		root_stat(e, st);
		return 0;
	default:
		return ns_state(tns(ns)->base, e, src, st);
	}
}

/*
 * Under the lock, tv SCANNING: the member entry e (made by a lookup) shows,
 * as far as the scan has gone: the last member reached with its path
 * (early_find), if that is still the member e showed (the same type,
 * mode, size and time: else a later member of the same name replaced it,
 * and the whole table answers).  1: *m, and *d the member whose data it
 * shows (a hard link's target; NULL: dangling), pointers into tv->t valid
 * until the lock is dropped; 0: not (yet); -ENOMEM.
 */
static int early_member(struct tarv *tv, const struct ns_entry *e, const struct tar_member **m,
			const struct tar_member **d)
{
	const struct early_slot *x;
	struct stat st;
	size_t len;
	const char *p;
	int err = 0;

	if (!tv->fed || tv->fed_all)
		return 0;
	p = ino_path(&tv->t, e->st.st_ino, &len);
	x = p ? early_find(tv, p, len, &err) : NULL;
	if (!x || !x->last)
		return err;
	*m = *d = &tv->t.m[x->last - 1];
	if ((*m)->type == TAR_HARDLINK)
		*d = tartab_link_target(&tv->t, x->last - 1);
	fill_stat(tv, *m, *d, e->st.st_ino, &st);
	return ((st.st_mode ^ e->st.st_mode) & ~(mode_t)0222) == 0 && st.st_size == e->st.st_size &&
	       st.st_mtim.tv_sec == e->st.st_mtim.tv_sec &&
	       st.st_mtim.tv_nsec == e->st.st_mtim.tv_nsec;
}

/*
 * A member's bytes: the archive's decoded bytes at its data offset (sparse:
 * holes are zeros).  The member is copied at open, so an open answered
 * during the scan needs nothing of the growing table.
 */
struct msrc {
	struct zsrc z; /* first */
	struct ns_tar *nt;
	struct tar_member m; /* the member whose data it shows; size 0: none (a dangling link) */
	struct tartab sp;    /* only m's sparse extents (m.sp 0) */
	bool taken;	     /* m was taken during the scan (early_open) */
	struct tbytes b;
	struct stat st;
};

/* Copies member d of t (NULL: none) into ms.  0 or -ENOMEM. */
static int msrc_take(struct msrc *ms, const struct tartab *t, const struct tar_member *d)
{
	if (!d)
		return 0;
	ms->m = *d;
	ms->m.sp = 0;
	if (!(d->flags & TAR_SPARSE) || d->sp_n == 0)
		return 0;
	ms->sp.sp = malloc(d->sp_n * sizeof(*ms->sp.sp));
	if (!ms->sp.sp)
		return -ENOMEM;
	memcpy(ms->sp.sp, t->sp + d->sp, d->sp_n * sizeof(*ms->sp.sp));
	ms->sp.sp_n = ms->sp.sp_cap = d->sp_n;
	return 0;
}

/*
 * early_fn of an open: e's member copied into arg (a struct msrc) as soon
 * as its header is reached, so that a big member streams while the scan
 * goes on.  Its data is then inside the archive: a scan through the
 * reader knows the archive's size and stops at the header of a member
 * that runs past it (tarscan_new).  A pass's scanner does not know it
 * (struct ptap), and the pass may end short (salvage): not from a table a
 * pass fills.  That costs nothing: tb_open waits for the pass, which is
 * the archive's open.
 */
static int early_open(struct tarv *tv, const struct ns_entry *e, void *arg)
{
	struct msrc *ms = arg;
	const struct tar_member *m, *d;
	int ret = tv->pass != PASS_NONE ? 0 : early_member(tv, e, &m, &d);

	if (ret != 1)
		return ret;
	ret = msrc_take(ms, &tv->t, d);
	ms->taken = ret == 0;
	return ret < 0 ? ret : 1;
}

static ssize_t m_pread(struct zsrc *s, void *buf, size_t len, uint64_t off)
{
	struct msrc *ms = (struct msrc *)s;
	uint64_t aoff, run;
	int k = tartab_locate(&ms->sp, &ms->m, off, &aoff, &run);

	if (k < 0)
		return 0;
	if (run < len)
		len = (size_t)run;
	if (k == 0) {
		memset(buf, 0, len);
		return (ssize_t)len;
	}
	return tb_pread(&ms->b, buf, len, aoff);
}

static int m_stat(struct zsrc *s, struct stat *st)
{
	*st = ((struct msrc *)s)->st;
	return 0;
}

static void m_free(struct zsrc *s)
{
	struct msrc *ms = (struct msrc *)s;

	tb_close(ms->nt, &ms->b);
	tartab_free(&ms->sp);
	free(ms);
}

static const struct zsrc_ops msrc_ops = {
	.pread = m_pread,
	.stat = m_stat,
	.free = m_free,
	.pinned = true,
};

/* During the scan, as soon as the scan has reached the member (early_open). */
static int member_open(struct ns_tar *nt, const struct ns_entry *e, struct zsrc **out)
{
	struct msrc *ms = e->kind == NS_FILE ? calloc(1, sizeof(*ms)) : NULL;
	struct tarv *tv;
	int ret;

	if (!ms)
		return e->kind == NS_FILE ? -ENOMEM : -EINVAL;
	tv = tarv_by_gen(nt, e, true, early_open, ms, &ret);
	if (tv) {
		long k = ms->taken ? 0 : node_of(tv, e->st.st_ino); /* else READY */

		ret = 0;
		if (k < 0) /* not in the whole table: the kernel looks the name up again */
			ret = -ESTALE;
		else if (!ms->taken)
			ret = msrc_take(ms, &tv->t, tarview_data(&tv->t, &tv->v, (size_t)k));
		if (ret == 0)
			ret = tb_open(nt, &tv->base, &ms->b);
		tarv_put(nt, tv);
	}
	if (ret < 0) {
		tartab_free(&ms->sp);
		free(ms);
		return ret;
	}
	zsrc_init(&ms->z, &msrc_ops);
	ms->nt = nt;
	ms->st = e->st;
	*out = &ms->z;
	return 0;
}

static int t_open(void *ns, const struct ns_entry *e, struct zsrc **out, bool *same)
{
	*same = true;
	switch (mark(e)) {
	case 't':
		return member_open(tns(ns), e, out);
	case 'r':
		return -EISDIR;
	default:
		return ns_open(tns(ns)->base, e, out, same);
	}
}

/* A symlink's target, into a buffer. */
struct linkbuf {
	char *buf;
	size_t len;
	ssize_t ret; /* its length, -ENAMETOOLONG, or -ESTALE: none */
	bool taken;  /* during the scan (early_link) */
};

static void link_copy(const struct tartab *t, const struct tar_member *m, struct linkbuf *lb)
{
	snprintf(lb->buf, lb->len, "%s", tartab_str(t, m->link));
	lb->ret = m->link_len < lb->len ? (ssize_t)m->link_len : -ENAMETOOLONG;
	lb->taken = true;
}

/* early_fn of a readlink: the link's target is in its header, so once reached it is known. */
static int early_link(struct tarv *tv, const struct ns_entry *e, void *arg)
{
	const struct tar_member *m, *d;
	int ret = early_member(tv, e, &m, &d); /* a symlink, as e's mode says */

	if (ret == 1)
		link_copy(&tv->t, m, arg);
	return ret;
}

static ssize_t t_readlink(void *ns, const struct ns_entry *e, char *buf, size_t len)
{
	struct linkbuf lb = { buf, len, -ESTALE, false };
	struct tarv *tv;
	long k;
	int err;

	if (mark(e) != 't')
		return mark(e) ? -EINVAL : ns_readlink(tns(ns)->base, e, buf, len);
	if (e->kind != NS_SYMLINK)
		return -EINVAL;
	if (!(tv = tarv_by_gen(tns(ns), e, true, early_link, &lb, &err)))
		return err;
	if (!lb.taken) { /* READY */
		k = node_of(tv, e->st.st_ino);
		if (k >= 0 && tv->v.v[k].mem >= 0)
			link_copy(&tv->t, &tv->t.m[tv->v.v[k].mem], &lb);
	}
	tarv_put(tns(ns), tv);
	return lb.ret;
}

/*
 * A listing: the base's (with *.tar files shown as directories), or a tar
 * directory's.  A tar's root opened while its table is scanned grows as
 * the scan goes (t_dir_more): each name once, in the order first reached.
 */
struct ns_dir {
	struct ns *base;
	struct ns_dir *bd; /* the base's listing, or NULL */
	size_t n, cap;
	char *pool; /* the names, NUL-terminated */
	size_t pool_len, pool_cap;
	struct tdent {
		size_t name;
		mode_t mode;
		ino_t ino;
	} * d;
	dev_t dev;
	struct ns_tar *nt;
	struct tarv *tv; /* growing: the table, referenced until the listing is whole */
	size_t seen;	 /* members of tv->t taken */
	uint32_t *set;	 /* entry index + 1 by name hash (open addressing), 0: free */
	size_t set_cap;	 /* a power of 2, at least twice n */
};

/* The listing of directory node k of tv. */
static int tar_listing(const struct tarv *tv, size_t k, struct ns_dir *d)
{
	size_t first = tv->v.kid0[k], n = tv->v.kid0[k + 1] - first, bytes = 1, at = 0;

	for (size_t i = 0; i < n; i++) {
		const struct tarview_node *c = &tv->v.v[tv->v.kids[first + i]];

		bytes += c->len - c->name + 1;
	}
	d->d = calloc(n ? n : 1, sizeof(*d->d));
	d->pool = malloc(bytes);
	if (!d->d || !d->pool)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t kid = tv->v.kids[first + i];
		const struct tarview_node *c = &tv->v.v[kid];
		struct stat st;

		member_stat(tv, kid, &st);
		d->d[i] = (struct tdent){ .name = at, .mode = st.st_mode, .ino = st.st_ino };
		memcpy(d->pool + at, c->p + c->name, c->len - c->name);
		at += c->len - c->name;
		d->pool[at++] = '\0';
	}
	d->n = n;
	d->dev = TAR_DEV | (dev_t)tv->gen;
	return 0;
}

/* The slot of name p (len bytes) in d->set: its entry's, or the free one it would take. */
static size_t set_slot(const struct ns_dir *d, const char *p, size_t len)
{
	size_t mask = d->set_cap - 1;

	for (size_t h = name_hash(p, len) & mask;; h = (h + 1) & mask) {
		const char *q = d->set[h] ? d->pool + d->d[d->set[h] - 1].name : NULL;

		if (!q || (strncmp(q, p, len) == 0 && q[len] == '\0'))
			return h;
	}
}

static int set_grow(struct ns_dir *d)
{
	size_t cap = d->set_cap ? 2 * d->set_cap : 64, old_cap = d->set_cap;
	uint32_t *old = d->set, *set = calloc(cap, sizeof(*set));

	if (!set)
		return -ENOMEM;
	d->set = set;
	d->set_cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		const char *q = old[i] ? d->pool + d->d[old[i] - 1].name : NULL;

		if (q)
			d->set[set_slot(d, q, strlen(q))] = old[i];
	}
	free(old);
	return 0;
}

/* Appends a name (len bytes, copied) to a growing listing. */
static int dent_add(struct ns_dir *d, const char *p, size_t len, mode_t mode, ino_t ino)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		struct tdent *v = realloc(d->d, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->d = v;
		d->cap = cap;
	}
	if (d->pool_len + len + 1 > d->pool_cap) {
		size_t cap = 2 * d->pool_cap > d->pool_len + len + 1 ? 2 * d->pool_cap
								     : d->pool_len + len + 4096;
		char *pool = realloc(d->pool, cap);

		if (!pool)
			return -ENOMEM;
		d->pool = pool;
		d->pool_cap = cap;
	}
	d->d[d->n++] = (struct tdent){ .name = d->pool_len, .mode = mode, .ino = ino };
	memcpy(d->pool + d->pool_len, p, len);
	d->pool_len += len;
	d->pool[d->pool_len++] = '\0';
	return 0;
}

/*
 * Under the lock: the root names of the members fed since the last call,
 * each name once (copied: the table's pool moves as it grows).  Its type
 * and number are those of the first member reached under that name.
 */
static int take_members(struct ns_dir *d)
{
	const struct tartab *t = &d->tv->t;

	for (; d->seen < t->n; d->seen++) {
		const struct tar_member *m = &t->m[d->seen];
		size_t len = first_len(t, d->seen), h;
		mode_t mode;

		if ((d->n + 1) * 2 > d->set_cap && set_grow(d) < 0)
			return -ENOMEM;
		h = set_slot(d, tartab_name(t, m), len);
		if (d->set[h])
			continue;
		mode = len < m->name_len ? S_IFDIR | 0755 : type_bits(m) | (m->mode & 07777);
		if (dent_add(d, tartab_name(t, m), len, mode, ROOT_INO + 1 + d->seen) < 0)
			return -ENOMEM;
		d->set[h] = (uint32_t)d->n;
	}
	return 0;
}

/*
 * ns_dir_more: waits for names not listed yet, or the scan's end.  A scan
 * that fails, or stops at a damaged header, fails the listing with EIO: the
 * names it handed out may not be all (the scan said why in the log).
 */
static int t_dir_more(void *ns, struct ns_dir *d)
{
	struct ns_tar *nt = tns(ns);
	size_t had = d->n;
	int ret;

	if (!d->tv)
		return 0;
	pthread_mutex_lock(&nt->lock);
	for (;;) {
		int state = d->tv->state;

		ret = state < 0 ? -EIO : take_members(d);
		if (ret < 0 || d->n > had)
			break;
		if (state != SCANNING) {
			ret = d->tv->damaged ? -EIO : 0;
			break;
		}
		pthread_cond_wait(&nt->built, &nt->lock);
	}
	pthread_mutex_unlock(&nt->lock);
	if (ret == 0 && d->n == had) { /* whole: the table is no longer needed */
		tarv_put(nt, d->tv);
		d->tv = NULL;
	}
	return ret < 0 ? ret : d->n > had;
}

/*
 * d: the listing of node k of tv (whose reference it takes), growing while
 * the scan runs; or -EIO (a failed scan).
 */
static int any_listing(struct ns_tar *nt, struct tarv *tv, long k, struct ns_dir *d)
{
	int state, ret = 0;

	d->dev = TAR_DEV | (dev_t)tv->gen;
	pthread_mutex_lock(&nt->lock);
	state = tv->state;
	if (state == SCANNING) {
		d->nt = nt;
		d->tv = tv;
		ret = take_members(d);
	}
	pthread_mutex_unlock(&nt->lock);
	if (state == READY)
		ret = k >= 0 ? tar_listing(tv, (size_t)k, d) : -ESTALE;
	if (!d->tv)
		tarv_put(nt, tv);
	return state < 0 ? -EIO : ret;
}

static bool has_tar_component(const char *path)
{
	for (const char *s = strstr(path, ".tar"); s; s = strstr(s + 1, ".tar"))
		if (s[4] == '/' || s[4] == '\0')
			return true;
	return false;
}

/* Directory path inside a tar (or a tar's own): its listing into d; 1: path is no tar's. */
static int tar_opendir(struct ns_tar *nt, const char *path, struct ns_dir *d)
{
	struct ns_entry e, base;
	struct tarv *tv;
	int ret = t_resolve(nt, path, &e);
	long k = 0;

	if (ret < 0)
		return ret;
	if (!mark(&e)) {
		ns_entry_clear(&e);
		return 1;
	}
	if (mark(&e) == 'r') {
		unroot(&e, &base);
		ret = tarv_get(nt, &base, true, &tv);
	} else {
		ret = -ENOTDIR;
		tv = e.kind == NS_DIR ? tarv_by_gen(nt, &e, true, NULL, NULL, &ret) : NULL;
		ret = tv ? 0 : ret;
		k = tv ? node_of(tv, e.st.st_ino) : 0;
	}
	ns_entry_clear(&e);
	if (ret < 0)
		return ret;
	return any_listing(nt, tv, k, d);
}

static void t_closedir(void *ns, struct ns_dir *d)
{
	(void)ns;
	if (!d)
		return;
	if (d->bd)
		ns_closedir(d->base, d->bd);
	if (d->tv)
		tarv_put(d->nt, d->tv);
	free(d->set);
	free(d->d);
	free(d->pool);
	free(d);
}

static int t_opendir(void *ns, const char *path, struct ns_dir **out)
{
	struct ns_tar *nt = tns(ns);
	struct ns_dir *d = calloc(1, sizeof(*d));
	int ret;

	if (!d)
		return -ENOMEM;
	d->base = nt->base;
	ret = has_tar_component(path) ? tar_opendir(nt, path, d) : 1;
	if (ret == 1)
		ret = ns_opendir(nt->base, path, &d->bd);
	if (ret < 0) {
		t_closedir(ns, d);
		return ret;
	}
	*out = d;
	return 0;
}

static size_t t_dir_count(const struct ns_dir *d)
{
	return d->bd ? ns_dir_count(d->base, d->bd) : d->n;
}

static const char *t_dir_entry(const struct ns_dir *d, size_t i, struct stat *st)
{
	const char *name;

	if (!d->bd) {
		st->st_mode = d->d[i].mode;
		st->st_ino = d->d[i].ino;
		st->st_dev = d->dev;
		return d->pool + d->d[i].name;
	}
	name = ns_dir_entry(d->base, d->bd, i, st);
	/* as t_resolve shows it: an archive or plain file named *.tar is a directory */
	if ((S_ISREG(st->st_mode) || !(st->st_mode & S_IFMT)) && tar_name(name, strlen(name)))
		st->st_mode = S_IFDIR | (st->st_mode & 07777);
	return name;
}

static int t_statfs(void *ns, struct statvfs *sv)
{
	return ns_statfs(tns(ns)->base, sv);
}

static void t_name(void *ns, const struct ns_entry *e, char *buf, size_t len)
{
	struct ns_entry b;

	if (mark(e) == 't') {
		snprintf(buf, len, "%s", e->id);
		return;
	}
	if (mark(e) == 'r') {
		unroot(e, &b);
		e = &b;
	}
	ns_name(tns(ns)->base, e, buf, len);
}

static void t_source(void *ns, const struct ns_entry *e, char *buf, size_t len)
{
	struct ns_entry b;

	if (mark(e) == 't') {
		snprintf(buf, len, "%s", e->id + (e->id[0] == '/'));
		return;
	}
	if (mark(e) == 'r') {
		unroot(e, &b);
		e = &b;
	}
	ns_source(tns(ns)->base, e, buf, len);
}

static bool t_still_named(void *ns, const struct reader *r)
{
	return ns_still_named(tns(ns)->base, r);
}

static size_t t_stats(void *ns, char *out, size_t len)
{
	struct ns_tar *nt = tns(ns);
	size_t n = ns_stats(nt->base, out, len), tables = 0, members = 0, bytes = 0, scanning = 0;
	uint64_t scanned, by_pass;
	int k;

	pthread_mutex_lock(&nt->lock);
	scanned = nt->scanned;
	by_pass = nt->by_pass;
	for (const struct tarv *tv = nt->list; tv; tv = tv->next) {
		tables++;
		scanning += tv->state == SCANNING;
		/* a scan thread loads a table and builds its view with the lock dropped */
		if (tv->state == SCANNING && !tv->fed)
			continue;
		members += tv->t.n;
		bytes += tartab_bytes(&tv->t);
		if (tv->state == READY)
			bytes += tv->v.n * (sizeof(*tv->v.v) + 3 * sizeof(uint32_t));
	}
	pthread_mutex_unlock(&nt->lock);
	if (n >= len)
		return n;
	k = snprintf(out + n, len - n,
		     "tar_tables=%zu\ntar_members=%zu\ntar_table_bytes=%zu\ntar_scanning=%zu\n"
		     "tar_scanned_bytes=%" PRIu64 "\ntar_pass_tables=%" PRIu64 "\n",
		     tables, members, bytes, scanning, scanned, by_pass);
	return k < 0 ? n : n + (size_t)k < len ? n + (size_t)k : len - 1;
}

static int t_index_start(void *ns, struct arctab *arcs, struct zmctx *zm, struct pool *pool,
			 unsigned jobs, struct indexer **out)
{
	return ns_index_start(tns(ns)->base, arcs, zm, pool, jobs, out);
}

static void t_bind(void *ns, struct arctab *arcs)
{
	tns(ns)->arcs = arcs;
	ns_bind(tns(ns)->base, arcs);
}

static void t_live(void *ns)
{
	ns_live(tns(ns)->base);
}

static void t_free(void *ns)
{
	struct ns_tar *nt = tns(ns);

	ns_tar_stop(ns);
	while (nt->list) {
		struct tarv *tv = nt->list;

		nt->list = tv->next;
		tarv_free(tv);
	}
	ns_free(nt->base);
	pthread_mutex_destroy(&nt->lock);
	pthread_cond_destroy(&nt->built);
	free(nt);
}

static const struct ns_ops tar_ops = {
	.resolve = t_resolve,
	.same = t_same,
	.state = t_state,
	.open = t_open,
	.opendir = t_opendir,
	.dir_count = t_dir_count,
	.dir_entry = t_dir_entry,
	.closedir = t_closedir,
	.dir_more = t_dir_more,
	.readlink = t_readlink,
	.statfs = t_statfs,
	.name = t_name,
	.source = t_source,
	.still_named = t_still_named,
	.stats = t_stats,
	.index_start = t_index_start,
	.bind = t_bind,
	.pass_tap = t_pass_tap,
	.live = t_live,
	.free = t_free,
};

int ns_tar_wrap(struct ns *base, struct ns **out)
{
	struct ns_tar *nt = calloc(1, sizeof(*nt));

	*out = NULL;
	if (!nt) {
		ns_free(base);
		return -ENOMEM;
	}
	nt->ops = tar_ops;
	nt->ops.remote = ns_remote(base);
	nt->ops.probed = ns_probed(base);
	nt->ns.ops = &nt->ops;
	nt->base = base;
	pthread_mutex_init(&nt->lock, NULL);
	pthread_cond_init(&nt->built, NULL);
	*out = &nt->ns;
	return 0;
}
