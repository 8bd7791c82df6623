/* SPDX-License-Identifier: MIT */
/*
 * How it works: a directory's listing (struct dmap) is built by reading the
 * source directory once, probing the candidates' magic bytes (xz files are
 * also opened in the archive table, which reads their Index), and resolving
 * names.  Listings are sorted by visible name for lookups and kept in a
 * hash by relative path, stamped with the directory's identity and with
 * each probed candidate's version; a stale one is rebuilt with no lock
 * held and swapped in, reusing the verdicts of
 * the candidates that did not change.  Holders keep a reference, so a swap
 * or an eviction never frees a listing in use.  A listing never changes once
 * built, so open directories share it (tree_opendir) rather than copy it.
 * Kept listings that no open directory holds are on an LRU list, whose
 * least recently used are dropped while the charged bytes are over the
 * budget; those open directories hold stay in the table and charged.
 */
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arctab.h"
#include "ns.h"
#include "beneath.h"
#include "htab.h"
#include "names.h"
#include "fmttab.h"
#include "reader.h"
#include "srcid.h"
#include "zlog.h"

#define NBUCKETS     1024 /* at first: it grows */
#define MIN_TTL	     0.1
#define WARNED_SLOTS 256 /* file versions remembered as already said unreadable */

struct dent {
	char *vis; /* visible name */
	char *src; /* source name (same pointer as vis when unrenamed) */
	enum tree_kind kind;
	ino_t ino; /* readdir's d_ino: glibc hides entries whose inode is 0 */
};

/* A candidate whose magic bytes were probed: its version and the verdict. */
struct probed {
	const char *src; /* the dent's src string */
	struct stat st;
	unsigned char verdict; /* enum names_verdict */
	bool fresh;	       /* probed for this listing, not reused from the one before */
};

struct dmap {
	char *rel;
	struct stat st; /* the directory's identity when listed */
	size_t n;
	struct dent *ents; /* sorted by vis */
	size_t np;
	struct probed *probed; /* sorted by src */
	size_t bytes;	       /* charged to the budget */
	/* Protected by tree.lock. */
	int refs;
	int opens;	/* open directories (tree_opendir) holding it */
	bool hooked;	/* in the hash (that holds one ref), and on the LRU list if opens is 0 */
	bool checking;	/* a thread is re-stating the probed candidates */
	double checked; /* CLOCK_MONOTONIC seconds of the last check */
	struct htab_link link; /* in tree.lists while hooked */
	struct dmap *next;     /* in a chain of listings to free (evict) */
	struct dmap *newer, *older;
};

/* The charges in tree.h bound what malloc takes (16-byte chunks, 8-byte header). */
_Static_assert(sizeof(struct dent) + 32 <= TREE_LIST_BYTES_PER_ENTRY, "entry charge");
_Static_assert(sizeof(struct probed) <= TREE_LIST_BYTES_PER_PROBED, "probed charge");
/* A listing's charge also covers its hash bucket: at most one per listing as the table grows. */
_Static_assert(sizeof(struct dmap) + 4 * 24 + sizeof(struct htab_link *) <=
		       TREE_LIST_BYTES_PER_LISTING,
	       "listing charge");

struct tree {
	int root;
	struct arctab *arcs;
	size_t budget;
	double ttl;
	pthread_mutex_t lock;
	/* Protected by lock. */
	struct htab lists; /* struct dmap by rel */
	struct dmap *newest, *oldest;
	size_t nlist, bytes;
	unsigned long long rebuilds;
	/*
	 * Candidates whose probe said "not readable as ..." in the log, by
	 * version, so that a listing rebuilt after an eviction does not say it
	 * again: one slot per hash of device and inode, a new one overwriting.
	 */
	struct stat warned[WARNED_SLOTS];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static htab_hash_fn link_hash;

int tree_new(const char *src, struct arctab *arcs, struct tree **out)
{
	struct tree *t;
	int fd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*out = NULL;
	if (fd < 0)
		return -errno;
	t = calloc(1, sizeof(*t));
	if (!t || htab_init(&t->lists, NBUCKETS, link_hash) < 0) {
		free(t);
		close(fd);
		return -ENOMEM;
	}
	t->root = fd;
	t->arcs = arcs;
	t->budget = TREE_LIST_BUDGET_DEFAULT;
	t->ttl = 1.0;
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

void tree_set_arcs(struct tree *t, struct arctab *arcs)
{
	t->arcs = arcs;
}

struct ns_entry tree_arc_entry(const char *rel, const struct stat *st)
{
	return (struct ns_entry){
		.kind = NS_ARCHIVE, .id = (char *)rel, .obj = st->st_ino, .st = *st
	};
}

void tree_set_limits(struct tree *t, size_t list_budget, double ttl)
{
	t->budget = list_budget ? list_budget : TREE_LIST_BUDGET_DEFAULT;
	t->ttl = ttl < MIN_TTL ? MIN_TTL : ttl;
}

static void dmap_free(struct dmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->ents[i].vis != m->ents[i].src)
			free(m->ents[i].vis);
		free(m->ents[i].src);
	}
	free(m->ents);
	free(m->probed);
	free(m->rel);
	free(m);
}

void tree_free(struct tree *t)
{
	struct htab_walk w;
	struct htab_link *l;

	if (!t)
		return;
	htab_walk_start(&t->lists, &w);
	while ((l = htab_walk_next(&w)))
		dmap_free(htab_entry(l, struct dmap, link));
	htab_fini(&t->lists);
	close(t->root);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

int tree_root_fd(const struct tree *t)
{
	return t->root;
}

void tree_readonly(struct stat *st)
{
	st->st_mode &= ~(mode_t)(S_IWUSR | S_IWGRP | S_IWOTH);
}

void tree_node_clear(struct tree_node *node)
{
	free(node->rel);
	node->rel = NULL;
}

void tree_get_stats(struct tree *t, struct tree_stats *out)
{
	pthread_mutex_lock(&t->lock);
	out->listings = t->nlist;
	out->list_bytes = t->bytes;
	out->list_budget = t->budget;
	out->rebuilds = t->rebuilds;
	pthread_mutex_unlock(&t->lock);
}

static bool same_dir(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static size_t hash_rel(const char *rel)
{
	size_t h = 5381;

	while (*rel)
		h = h * 33 + (unsigned char)*rel++;
	return h;
}

static size_t link_hash(const struct htab_link *l)
{
	return hash_rel(htab_entry(l, struct dmap, link)->rel);
}

/* dir joined with name, malloc'd; NULL if out of memory. */
static char *join(const char *dir, const char *name)
{
	char *out;

	if (strcmp(dir, ".") == 0)
		return strdup(name);
	return asprintf(&out, "%s/%s", dir, name) < 0 ? NULL : out;
}

static int probed_by_src(const void *a, const void *b)
{
	return strcmp(((const struct probed *)a)->src, ((const struct probed *)b)->src);
}

struct slot {
	ino_t ino;
	ssize_t probed; /* index in probe_ctx.probed, or -1 */
};

struct probe_ctx {
	struct tree *t;
	const char *rel;
	int dirfd;
	struct names_ent *ents;
	struct slot *slots;
	struct probed *probed; /* one per candidate at most */
	size_t np;
	const struct dmap *old; /* verdicts to reuse, or NULL */
};

/*
 * Whether reader_probe already logged that version st is unreadable; with
 * mark, records that it has (also for files that are no archive at all,
 * which it never logs: harmless).
 */
static bool said_unreadable(struct tree *t, const struct stat *st, bool mark)
{
	struct stat *w = &t->warned[(size_t)((st->st_ino * 0x9E3779B97F4A7C15ull) ^ st->st_dev) %
				    WARNED_SLOTS];
	bool said;

	pthread_mutex_lock(&t->lock);
	said = srcid_same(w, st);
	if (mark)
		*w = *st;
	pthread_mutex_unlock(&t->lock);
	return said;
}

/*
 * Probes the magic bytes (and, for xz, the Index) of regular file name in
 * c's directory: an enum names_verdict.
 */
static int probe_now(struct probe_ctx *c, const char *name, const struct stat *lst, struct stat *st)
{
	int fmt = 0;
	struct zsrc *src;
	struct ns_entry e;
	struct arc *a;
	char *rel;
	int ret;
	int fd;

	rel = join(c->rel, name);
	if (!rel)
		return NAMES_NOT;
	fd = beneath_open_file_at(c->dirfd, name, lst, st);
	if (fd >= 0 && zsrc_local(fd, &src) == 0) {
		fmt = reader_probe(src, said_unreadable(c->t, st, false) ? NULL : rel,
				   arctab_opts(c->t->arcs));
		if (fmt == 0)
			said_unreadable(c->t, st, true);
		zsrc_put(src);
	}
	if (!fmttab_list_opens(fmt)) {
		free(rel);
		/* the probe said enough (gzip: header; zstd: frames): indexed when its size is
		 * needed, so its damage, if any, is not known yet */
		return fmt != 0 ? NAMES_SOUND : NAMES_NOT;
	}
	/*
	 * A format whose map is cheap to read (xz: its Index) is opened now,
	 * and an archive found damaged (cut before its Index, corrupt) says so
	 * in the log now.
	 * It is still shown under the stripped name, giving EIO, as a cut
	 * gzip is (its damage shows only in the index pass): one rule for
	 * both, and no raw copy of a damaged file passes for the real thing.
	 * But a damaged one (failed, or salvaged) never hides a sound archive
	 * of the same name (names.h): x.xz still being written loses x to a
	 * good x.zst beside it, and shows raw under its own name.
	 */
	ret = NAMES_NOT;
	e = tree_arc_entry(rel, st);
	if (arctab_get(c->t->arcs, &e, &a) == 0) {
		struct reader_info in = { 0 };

		if (arc_reader(a))
			reader_get_info(arc_reader(a), &in);
		ret = !arc_reader(a) || in.salvaged ? NAMES_DAMAGED : NAMES_SOUND;
	}
	arctab_put(c->t->arcs, a);
	free(rel);
	return ret;
}

/* names_resolve callback: is candidate i a real archive, and is it sound? */
static int probe_candidate(void *vctx, size_t i)
{
	struct probe_ctx *c = vctx;
	const char *name = c->ents[i].name;
	struct probed *p = &c->probed[c->np];
	const struct probed *old = NULL;
	struct stat lst;

	if (fstatat(c->dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(lst.st_mode))
		return 0;
	if (c->old) {
		struct probed key = { .src = name };

		old = bsearch(&key, c->old->probed, c->old->np, sizeof(key), probed_by_src);
	}
	if (old && srcid_same(&old->st, &lst)) {
		p->st = lst;
		p->verdict = old->verdict;
		p->fresh = false;
	} else {
		p->st = lst;
		p->verdict = (unsigned char)probe_now(c, name, &lst, &p->st);
		p->fresh = true;
	}
	c->slots[i].probed = (ssize_t)c->np++;
	return p->verdict;
}

static int by_vis(const void *a, const void *b)
{
	return strcmp(((const struct dent *)a)->vis, ((const struct dent *)b)->vis);
}

/*
 * Says, once per probe, which damaged archives lost their stripped name to
 * a sound one (names.h) and so show raw under their own names: the line
 * that gave the damage said they would show empty under the stripped name.
 */
static void say_losers(const struct probe_ctx *c, const struct names_ent *ents, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct probed *p =
			c->slots[i].probed >= 0 ? &c->probed[c->slots[i].probed] : NULL;
		char vis[NAME_MAX + 1];

		if (!p || !p->fresh || p->verdict != NAMES_DAMAGED || ents[i].visible ||
		    !names_strip(ents[i].name, vis, sizeof(vis)))
			continue;
		for (size_t j = 0; j < n; j++)
			if (ents[j].visible && strcmp(ents[j].visible, vis) == 0)
				zlog(ZLOG_INFO,
				     "%s%s%s: damaged, so shown raw under its own name; %s, a sound "
				     "archive, shows as %s",
				     strcmp(c->rel, ".") ? c->rel : "",
				     strcmp(c->rel, ".") ? "/" : "", ents[i].name, ents[j].name,
				     vis);
	}
}

/* Bytes charged for a listing (see tree.h). */
static size_t dmap_charge(const struct dmap *m)
{
	size_t b =
		TREE_LIST_BYTES_PER_LISTING + strlen(m->rel) + m->np * TREE_LIST_BYTES_PER_PROBED;

	for (size_t i = 0; i < m->n; i++) {
		b += TREE_LIST_BYTES_PER_ENTRY + strlen(m->ents[i].src);
		if (m->ents[i].vis != m->ents[i].src)
			b += TREE_LIST_BYTES_PER_ENTRY + strlen(m->ents[i].vis);
	}
	return b;
}

/* What one pass over a source directory found. */
struct scan {
	struct names_ent *ents;
	struct slot *slots; /* one per entry: its d_ino, and its probe */
	size_t n, cap;
	size_t ncand; /* entries whose names strip: regular files named x.gz, ... */
};

static void scan_free(struct scan *sc)
{
	for (size_t i = 0; i < sc->n; i++) {
		free((char *)sc->ents[i].name);
		free(sc->ents[i].visible);
	}
	free(sc->ents);
	free(sc->slots);
}

/* Room for one more entry in sc; 0 or -ENOMEM. */
static int scan_grow(struct scan *sc)
{
	struct names_ent *ne;
	struct slot *ns;

	if (sc->n < sc->cap)
		return 0;
	sc->cap = sc->cap ? sc->cap * 2 : 64;
	ne = realloc(sc->ents, sc->cap * sizeof(*sc->ents));
	if (ne)
		sc->ents = ne;
	ns = realloc(sc->slots, sc->cap * sizeof(*sc->slots));
	if (ns)
		sc->slots = ns;
	return ne && ns ? 0 : -ENOMEM;
}

/* Reads dir's entries (not . and ..) into sc; 0 or -ENOMEM (sc holds what was read). */
static int scan_dir(DIR *dir, struct scan *sc)
{
	struct dirent *de;

	while ((de = readdir(dir))) {
		struct names_ent *e;
		struct stat est;
		bool reg;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (scan_grow(sc) < 0)
			return -ENOMEM;
		reg = de->d_type == DT_REG;
		if (de->d_type == DT_UNKNOWN)
			reg = fstatat(dirfd(dir), de->d_name, &est, AT_SYMLINK_NOFOLLOW) == 0 &&
			      S_ISREG(est.st_mode);
		sc->slots[sc->n].ino = de->d_ino;
		sc->slots[sc->n].probed = -1;
		e = &sc->ents[sc->n];
		e->name = strdup(de->d_name);
		e->visible = NULL;
		if (!e->name)
			return -ENOMEM;
		e->candidate =
			reg && names_strip(de->d_name, (char[NAME_MAX + 1]){ 0 }, NAME_MAX + 1);
		sc->ncand += e->candidate;
		sc->n++;
	}
	return 0;
}

/*
 * A listing of rel (whose stat is st) from sc's resolved entries, whose
 * names it takes over, and ctx's probed candidates, which it takes over
 * (ctx->probed NULL after).  Returns 0 and *out, or -ENOMEM.
 */
static int dmap_assemble(const char *rel, const struct stat *st, struct scan *sc,
			 struct probe_ctx *ctx, struct dmap **out)
{
	struct dmap *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m || !(m->ents = calloc(sc->n + 1, sizeof(*m->ents))) || !(m->rel = strdup(rel))) {
		if (m)
			free(m->ents);
		free(m);
		return -ENOMEM;
	}
	m->st = *st;
	m->n = sc->n;
	for (size_t i = 0; i < sc->n; i++) {
		struct names_ent *e = &sc->ents[i];

		m->ents[i].src = (char *)e->name;
		m->ents[i].vis = e->visible ? e->visible : (char *)e->name;
		m->ents[i].kind = e->visible ? TREE_ARCHIVE : TREE_PASS;
		m->ents[i].ino = sc->slots[i].ino;
		if (sc->slots[i].probed >= 0)
			ctx->probed[sc->slots[i].probed].src = e->name;
		e->name = NULL;
		e->visible = NULL;
	}
	qsort(m->ents, m->n, sizeof(*m->ents), by_vis);
	qsort(ctx->probed, ctx->np, sizeof(*ctx->probed), probed_by_src);
	/* Keep only the candidates probed (names taken by plain files were not). */
	m->probed = realloc(ctx->probed, (ctx->np + 1) * sizeof(*ctx->probed));
	if (!m->probed)
		m->probed = ctx->probed;
	m->np = ctx->np;
	ctx->probed = NULL;
	m->bytes = dmap_charge(m);
	*out = m;
	return 0;
}

/*
 * Reads source directory rel (whose stat is st) into a new listing; old,
 * if not NULL, is the listing it replaces, whose verdicts are reused for
 * candidates that did not change.
 */
static int dmap_build(struct tree *t, const char *rel, const struct stat *st,
		      const struct dmap *old, struct dmap **out)
{
	struct probe_ctx ctx = { .t = t, .rel = rel, .old = old };
	struct scan sc = { 0 };
	int ret, fd;
	DIR *dir;

	*out = NULL;
	fd = beneath_open(t->root, rel, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	ret = scan_dir(dir, &sc);
	if (ret == 0) {
		ctx.dirfd = dirfd(dir);
		ctx.ents = sc.ents;
		ctx.slots = sc.slots;
		ctx.probed = malloc((sc.ncand + 1) * sizeof(*ctx.probed));
		ret = ctx.probed ? names_resolve(sc.ents, sc.n, probe_candidate, &ctx) : -ENOMEM;
		if (ret == 0)
			say_losers(&ctx, sc.ents, sc.n);
	}
	if (ret >= 0)
		ret = dmap_assemble(rel, st, &sc, &ctx, out);
	scan_free(&sc);
	free(ctx.probed);
	closedir(dir);
	return ret;
}

/* Takes m off the LRU list, if on it: a listing that open directories pin is not. */
static void lru_unlink(struct tree *t, struct dmap *m)
{
	if (!m->newer && t->newest != m)
		return;
	if (m->newer)
		m->newer->older = m->older;
	else
		t->newest = m->older;
	if (m->older)
		m->older->newer = m->newer;
	else
		t->oldest = m->newer;
	m->newer = m->older = NULL;
}

static void lru_push(struct tree *t, struct dmap *m)
{
	m->older = t->newest;
	m->newer = NULL;
	if (t->newest)
		t->newest->newer = m;
	else
		t->oldest = m;
	t->newest = m;
}

/* Takes m out of the table; returns true if that dropped its last reference. */
static bool unhook(struct tree *t, struct dmap *m)
{
	htab_del(&t->lists, &m->link);
	lru_unlink(t, m);
	m->hooked = false;
	t->nlist--;
	t->bytes -= m->bytes;
	return --m->refs == 0;
}

static void dmap_put(struct tree *t, struct dmap *m)
{
	bool last;

	pthread_mutex_lock(&t->lock);
	last = --m->refs == 0;
	pthread_mutex_unlock(&t->lock);
	if (last)
		dmap_free(m);
}

static struct dmap *lookup_locked(struct tree *t, const char *rel)
{
	for (struct htab_link *l = htab_bucket(&t->lists, hash_rel(rel)); l; l = l->next) {
		struct dmap *m = htab_entry(l, struct dmap, link);

		if (strcmp(m->rel, rel) == 0)
			return m;
	}
	return NULL;
}

/* True if every probed candidate of m is still the version it was probed at. */
static bool probed_unchanged(struct tree *t, const struct dmap *m)
{
	struct stat st;
	bool ok = true;
	int dfd;

	if (m->np == 0)
		return true;
	dfd = beneath_open(t->root, m->rel, O_PATH | O_DIRECTORY);
	if (dfd < 0)
		return false;
	for (size_t i = 0; i < m->np && ok; i++)
		ok = fstatat(dfd, m->probed[i].src, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		     srcid_same(&st, &m->probed[i].st);
	close(dfd);
	return ok;
}

/*
 * Drops the least recently used listings, but not keep, while the budget is
 * exceeded; returns those to free (linked by next, after drop), with the
 * lock held.  Pinned listings are not on the LRU list, so they stay.
 */
static struct dmap *evict(struct tree *t, const struct dmap *keep, struct dmap *drop)
{
	while (t->bytes > t->budget && t->oldest && t->oldest != keep) {
		struct dmap *cur = t->oldest;

		if (unhook(t, cur))
			cur->next = drop, drop = cur;
	}
	return drop;
}

static void free_chain(struct dmap *drop)
{
	struct dmap *next;

	for (; drop; drop = next) {
		next = drop->next;
		dmap_free(drop);
	}
}

/* Hooks fresh listing m (one reference, the caller's) in place of any other for its path. */
static void hook(struct tree *t, struct dmap *m)
{
	struct dmap *drop = NULL, *cur;

	pthread_mutex_lock(&t->lock);
	cur = lookup_locked(t, m->rel);
	if (cur && unhook(t, cur))
		cur->next = drop, drop = cur;
	m->refs++; /* the table's */
	m->hooked = true;
	m->checked = now_s();
	htab_add(&t->lists, &m->link);
	lru_push(t, m);
	t->nlist++;
	t->bytes += m->bytes;
	drop = evict(t, m, drop);
	pthread_mutex_unlock(&t->lock);
	free_chain(drop);
}

/* Returns the current listing of source directory rel, referenced. */
static int dmap_get(struct tree *t, const char *rel, struct dmap **out)
{
	struct dmap *m, *old = NULL;
	bool check = false;
	struct stat st;
	double now;
	int ret;

	*out = NULL;
	ret = beneath_lstat(t->root, rel, &st);
	if (ret < 0)
		return ret;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	now = now_s();
	pthread_mutex_lock(&t->lock);
	m = lookup_locked(t, rel);
	if (m) {
		m->refs++;
		if (same_dir(&m->st, &st)) {
			if (m->opens == 0) {
				lru_unlink(t, m);
				lru_push(t, m);
			}
			check = !m->checking && now - m->checked >= t->ttl;
			m->checking |= check;
		} else {
			old = m; /* changed: rebuild, reusing what did not */
		}
	}
	pthread_mutex_unlock(&t->lock);
	if (m && !old) {
		if (!check) {
			*out = m;
			return 0;
		}
		ret = probed_unchanged(t, m);
		pthread_mutex_lock(&t->lock);
		m->checking = false;
		m->checked = now_s();
		if (!ret)
			t->rebuilds++;
		pthread_mutex_unlock(&t->lock);
		if (ret) {
			*out = m;
			return 0;
		}
		old = m;
	}

	ret = dmap_build(t, rel, &st, old, &m);
	if (old)
		dmap_put(t, old);
	if (ret < 0)
		return ret;
	m->refs = 1; /* the caller's */
	hook(t, m);
	*out = m;
	return 0;
}

static const struct dent *dmap_find(const struct dmap *m, const char *vis)
{
	struct dent key = { .vis = (char *)vis };

	return bsearch(&key, m->ents, m->n, sizeof(*m->ents), by_vis);
}

int tree_resolve(struct tree *t, const char *path, struct tree_node *node)
{
	const char *slash, *name;
	const struct dent *d;
	char *parent;
	struct dmap *m;
	int ret;

	node->rel = NULL;
	while (*path == '/')
		path++;
	if (*path == '\0') {
		node->kind = TREE_PASS;
		node->rel = strdup(".");
		if (!node->rel)
			return -ENOMEM;
		if (fstatat(t->root, ".", &node->st, 0) < 0) {
			ret = -errno;
			tree_node_clear(node);
			return ret;
		}
		return 0;
	}
	slash = strrchr(path, '/');
	name = slash ? slash + 1 : path;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	parent = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	if (!parent)
		return -ENOMEM;
	ret = dmap_get(t, parent, &m);
	if (ret < 0) {
		free(parent);
		return ret == -ENOTDIR ? -ENOENT : ret;
	}
	d = dmap_find(m, name);
	if (!d) {
		ret = -ENOENT;
	} else {
		node->kind = d->kind;
		node->rel = join(parent, d->src);
		ret = node->rel ? 0 : -ENOMEM;
	}
	dmap_put(t, m);
	free(parent);
	if (ret == 0)
		ret = beneath_lstat(t->root, node->rel, &node->st);
	if (ret < 0)
		tree_node_clear(node);
	return ret;
}

int tree_stat(struct tree *t, const struct tree_node *node, struct stat *st)
{
	struct ns_entry e;
	struct arc *a;
	int ret;

	*st = node->st;
	tree_readonly(st);
	if (node->kind != TREE_ARCHIVE)
		return 0;
	e = tree_arc_entry(node->rel, &node->st);
	ret = arctab_get(t->arcs, &e, &a);
	if (ret < 0)
		return ret == -ENOTSUP ? -EIO : ret;
	st->st_size = arc_reader(a) ? (off_t)reader_size(arc_reader(a)) : 0;
	st->st_blocks = (st->st_size + 511) / 512;
	arctab_put(t->arcs, a);
	return 0;
}

/* The listing of visible directory path, referenced. */
static int dir_listing(struct tree *t, const char *path, struct dmap **out)
{
	struct tree_node dir;
	int ret = tree_resolve(t, path, &dir);

	*out = NULL;
	if (ret < 0)
		return ret;
	ret = S_ISDIR(dir.st.st_mode) ? dmap_get(t, dir.rel, out) : -ENOTDIR;
	tree_node_clear(&dir);
	return ret;
}

int tree_list(struct tree *t, const char *path,
	      int (*fill)(void *ctx, const char *name, const struct stat *st), void *ctx)
{
	struct dmap *m;
	int ret = dir_listing(t, path, &m);

	if (ret < 0)
		return ret;
	for (size_t i = 0; i < m->n; i++) {
		struct stat st;
		const char *name = tree_dir_entry((struct tree_dir *)m, i, &st);

		if (fill(ctx, name, &st))
			break;
	}
	dmap_put(t, m);
	return 0;
}

/*
 * An open directory is its listing: tree_opendir takes a reference and pins
 * it (off the LRU list, still in the table and charged), so every handle on
 * an unchanged directory shares one listing and 32 handles cost what one
 * does.  A handle on a directory that changed keeps the older listing it
 * opened, which is then no longer in the table nor charged.
 */
static struct dmap *dmap_of(const struct tree_dir *d)
{
	return (struct dmap *)d;
}

int tree_opendir(struct tree *t, const char *path, struct tree_dir **out)
{
	struct dmap *m;
	int ret = dir_listing(t, path, &m);

	*out = NULL;
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&t->lock);
	if (m->opens++ == 0 && m->hooked)
		lru_unlink(t, m);
	pthread_mutex_unlock(&t->lock);
	*out = (struct tree_dir *)m;
	return 0;
}

size_t tree_dir_count(const struct tree_dir *d)
{
	return dmap_of(d)->n;
}

const char *tree_dir_entry(const struct tree_dir *d, size_t i, struct stat *st)
{
	const struct dent *e = &dmap_of(d)->ents[i];

	/* Only the type matters: sizes come from getattr, so a listing never indexes a gzip file.
	 */
	memset(st, 0, sizeof(*st));
	st->st_mode = e->kind == TREE_ARCHIVE ? S_IFREG : 0;
	st->st_dev = dmap_of(d)->st.st_dev;
	st->st_ino = e->ino;
	return e->vis;
}

void tree_closedir(struct tree *t, struct tree_dir *d)
{
	struct dmap *m = dmap_of(d), *drop = NULL;
	bool last;

	if (!d)
		return;
	pthread_mutex_lock(&t->lock);
	if (--m->opens == 0 && m->hooked) {
		lru_push(t, m); /* unpinned: the most recently used */
		drop = evict(t, m, NULL);
	}
	last = --m->refs == 0;
	pthread_mutex_unlock(&t->lock);
	free_chain(drop);
	if (last)
		dmap_free(m);
}
