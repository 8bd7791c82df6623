/* SPDX-License-Identifier: MIT */
/*
 * How it works: a hash table on the source object (device, ns_entry.obj).  An entry being opened
 * is in the table with `opening` set, so a second caller waits for it
 * rather than indexing the same file again; the slow part, reader_open,
 * runs with the table lock dropped.  A stale entry is unhooked from the
 * table and lives on until its last reference goes.
 *
 * Opens are counted under the lock, but the first open's attach and the
 * last close's detach run with it dropped, the entry marked `moving`
 * meanwhile: a detach waits for the file's read-ahead jobs, and a pool
 * worker may be in arctab_index waiting for the lock, so holding it there
 * deadlocks (with threads=1, for good).  An arctab_open that finds the entry
 * moving waits for the move to end, then attaches anew or counts itself in.
 * See locking.h.
 */
#include "arctab.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmttab.h"
#include "htab.h"
#include "ns.h"
#include "reader.h"
#include "zlog.h"
#include "zmctx.h"

#define NBUCKETS 4096 /* at first: it grows */

struct arc {
	struct ns_entry e; /* the version it was opened for (its own strings) */
	struct reader *r;  /* NULL on error */
	int err;
	char *why; /* why it is corrupt (NULL if not, or out of memory) */
	/* Protected by arctab.lock. */
	int refs;    /* the table's own counts as one while hooked */
	int opens;   /* handles reading it; r has a source while > 0 */
	bool moving; /* an attach or detach of r runs, with the lock dropped */
	bool opening;
	bool hooked;
	/* a first open waits for a background open of it (reader_opts.warm_when) */
	atomic_bool wanted;
	struct htab_link link;
};

struct arctab {
	struct ns *ns;
	struct zmctx *zm;
	const struct reader_opts *opts; /* the caller's */
	pthread_mutex_t lock;
	pthread_cond_t opened; /* an entry's opening ended */
	pthread_cond_t moved;  /* an entry's moving ended */
	/* Protected by lock. */
	struct htab arcs; /* struct arc by (dev, ino) */
};

/*
 * The open this thread runs in get(), if any: its table, and the line the
 * reader wrote about its failure, held back (log_line) so that get() writes
 * it once it knows the verdict, saying what the mount shows and, where it
 * helps, to mount with -o salvage.  Per thread, as the reader writes that
 * line on the opening thread, before reader_open_fd returns.
 */
static _Thread_local struct {
	const struct arctab *t;
	bool held;
	enum zlog_level level;
	char text[1024]; /* zmctx formats lines into as much */
} opening;

/* The sink of the table's context (arctab_new): as zlog, but see opening. */
static void log_line(void *user, enum zlog_level level, const char *name, const char *text,
		     const struct zerr *why)
{
	if (opening.t == user && !opening.held && why) {
		opening.held = true;
		opening.level = level;
		snprintf(opening.text, sizeof(opening.text), "%s", text);
	} else if (name) {
		zlog(level, "%s: %s", name, text);
	} else {
		zlog(level, "%s", text);
	}
}

/*
 * Writes the line held back from a failed open of name (ret its error).
 * The verdicts kept (-EINVAL, -EIO) show the archive empty, its opens
 * failing with EIO; for a corrupt file (-EINVAL) of a format that
 * salvages (fmttab_salvages: gzip, xz) on a mount without salvage,
 * -o salvage may show the part before the damage.  A map
 * refused for its size names its own fix (cache_size) instead.
 */
static void log_open_failure(const char *name, int ret, int fmt, bool salvage)
{
	const char *hint = "";

	if (!opening.held)
		return;
	if (ret == -EINVAL && !salvage && fmttab_salvages(fmt) &&
	    !strstr(opening.text, "cache_size"))
		hint = "; shown empty, its opens fail with EIO; mount with -o salvage to read the "
		       "verified part before the damage";
	else if (ret == -EINVAL || ret == -EIO)
		hint = "; shown empty, its opens fail with EIO";
	zlog(opening.level, "%s: %s%s", name, opening.text, hint);
	opening.held = false;
}

/* The most verbose level zlog writes (set before the table is made, main.c). */
static enum zlog_level zlog_max(void)
{
	enum zlog_level l = ZLOG_DEBUG;

	while (l > ZLOG_ERROR && !zlog_wants(l))
		l--;
	return l;
}

static size_t arc_hash(dev_t dev, uint64_t obj)
{
	return (size_t)((obj * 0x9E3779B97F4A7C15ull) ^ dev);
}

static size_t link_hash(const struct htab_link *l)
{
	const struct arc *a = htab_entry(l, struct arc, link);

	return arc_hash(a->e.st.st_dev, a->e.obj);
}

int arctab_new(struct zmctx *zm, const struct reader_opts *opts, struct ns *ns, struct arctab **out)
{
	struct arctab *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t || htab_init(&t->arcs, NBUCKETS, link_hash) < 0) {
		if (t)
			htab_fini(&t->arcs);
		free(t);
		return -ENOMEM;
	}
	t->zm = zm;
	t->opts = opts;
	t->ns = ns;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->opened, NULL);
	pthread_cond_init(&t->moved, NULL);
	zmctx_set_log(zm, log_line, t, zlog_max());
	*out = t;
	return 0;
}

static void arc_free(struct arc *a)
{
	if (!a)
		return;
	reader_close(a->r);
	ns_entry_clear(&a->e);
	free(a->why);
	free(a);
}

void arctab_free(struct arctab *t)
{
	struct htab_walk w;
	struct htab_link *l;

	if (!t)
		return;
	htab_walk_start(&t->arcs, &w);
	while ((l = htab_walk_next(&w)))
		arc_free(htab_entry(l, struct arc, link));
	htab_fini(&t->arcs);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->opened);
	pthread_cond_destroy(&t->moved);
	free(t);
}

/* The entry hooked for e's object, or NULL. */
static struct arc *find(struct arctab *t, const struct ns_entry *e)
{
	dev_t dev = e->st.st_dev;

	for (struct htab_link *l = htab_bucket(&t->arcs, arc_hash(dev, e->obj)); l; l = l->next) {
		struct arc *a = htab_entry(l, struct arc, link);

		if (a->e.st.st_dev == dev && a->e.obj == e->obj)
			return a;
	}
	return NULL;
}

/* Unhooks a from the table; returns true if that dropped its last reference. */
static bool unhook(struct arctab *t, struct arc *a)
{
	htab_del(&t->arcs, &a->link);
	a->hooked = false;
	return --a->refs == 0;
}

/* a's bytes through the namespace: never anything but that file or object (ns_open). */
static int open_src(struct arctab *t, const struct arc *a, struct zsrc **src)
{
	bool same;

	*src = NULL;
	return ns_open(t->ns, &a->e, src, &same);
}

/*
 * Under t->lock: a reference to the entry for st, if it is that version
 * (0, or -ENOTSUP for a file that is no archive), after waiting for an
 * open of it to end; else 1, with *fresh a new entry hooked in its place,
 * `opening`, for the caller to open (NULL if out of memory), and *stale
 * the replaced one if that dropped its last reference.
 */
static int find_locked(struct arctab *t, const struct ns_entry *e, bool bg, struct arc **out,
		       struct arc **fresh, struct arc **stale)
{
	struct arc *a;

	for (;;) {
		a = find(t, e);
		if (!a || !a->opening)
			break;
		if (!bg)
			atomic_store(&a->wanted, true);
		pthread_cond_wait(&t->opened, &t->lock);
	}
	if (a && ns_same(t->ns, &a->e, e)) {
		if (a->err == -ENOTSUP)
			return -ENOTSUP;
		a->refs++;
		*out = a;
		return 0;
	}
	*stale = a && unhook(t, a) ? a : NULL;
	a = calloc(1, sizeof(*a));
	if (a && ns_entry_copy(&a->e, e) < 0) {
		free(a);
		a = NULL;
	}
	if (a) {
		a->refs = 1;
		a->opening = true;
		a->hooked = true;
		htab_add(&t->arcs, &a->link);
	}
	*fresh = a;
	return 1;
}

/*
 * A candidate named by its suffix alone (ns_probed false) whose magic bytes
 * are no format's: a verdict on its contents, shown empty, said once.
 */
static int not_an_archive(struct arc *a, const char *name)
{
	zlog(ZLOG_WARN,
	     "%s: not an %s archive by its magic bytes, or one zmount cannot "
	     "read; shown empty, opens fail with EIO",
	     name, fmttab_names());
	a->why = strdup("not an archive by its magic bytes");
	return -EIO;
}

/* Opens the reader of new entry a (no lock held); a->err, a->r and a->why say how it went. */
static void open_reader(struct arctab *t, struct arc *a, const struct reader_opts *opts, bool bg)
{
	struct zerr why = { 0 };
	struct zsrc *src;
	int ret = open_src(t, a, &src);

	if (ret == -ESTALE)
		ret = -EAGAIN; /* replaced since it was looked up: no verdict */
	if (ret >= 0) {
		int fmt = fmttab_by_magic(src);
		char name[PATH_MAX * 2];
		struct reader_opts o = *opts;

		ns_name(t->ns, &a->e, name, sizeof(name));
		/* a tar's member table is read from the pass's bytes (ns_tar.c) */
		o.tap = ns_pass_tap(t->ns, &a->e);
		/* No reader may follow a background open: it evicts for a pass's bytes only if one
		 * waits. */
		if (bg)
			o.warm_when = &a->wanted;
		opening.t = t;
		ret = reader_open_src(src, name, t->zm, &o, &a->r, &why);
		opening.t = NULL;
		log_open_failure(name, ret, fmt, opts->salvage);
		if (ret == -EINVAL || ret == -EIO)
			a->why = strdup(why.msg);
		if (ret == -ENOTSUP && !ns_probed(t->ns))
			ret = not_an_archive(a, name);
	}
	a->err = ret;
	if (a->r)
		reader_detach(a->r); /* no handle yet: hold no descriptor */
}

static int get(struct arctab *t, const struct ns_entry *e, bool bg, struct arc **out)
{
	struct arc *a = NULL, *stale = NULL;
	int ret;

	*out = NULL;
	pthread_mutex_lock(&t->lock);
	ret = find_locked(t, e, bg, out, &a, &stale);
	pthread_mutex_unlock(&t->lock);
	if (ret <= 0)
		return ret;
	arc_free(stale); /* accepts NULL */
	if (!a)
		return -ENOMEM;
	open_reader(t, a, t->opts, bg);

	pthread_mutex_lock(&t->lock);
	a->opening = false;
	pthread_cond_broadcast(&t->opened);
	/* Only a verdict on the file's contents is kept; EMFILE or a race is not. */
	if (a->err != 0 && a->err != -EINVAL && a->err != -EIO && a->err != -ENOTSUP) {
		ret = a->err;
		if (!unhook(t, a))
			a = NULL;
		pthread_mutex_unlock(&t->lock);
		if (a)
			arc_free(a);
		return ret;
	}
	ret = a->err == -ENOTSUP ? -ENOTSUP : 0;
	if (ret == 0) {
		a->refs++;
		*out = a;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int arctab_get(struct arctab *t, const struct ns_entry *e, struct arc **out)
{
	return get(t, e, false, out);
}

/*
 * The background pass's second half: checkpoints inside the archive's wide
 * xz Blocks and zstd frames, read through a source of its own, so the
 * reader stays detached.  One that cannot have them is no failure.
 */
static int checkpoint(struct arctab *t, struct arc *a)
{
	struct reader_info in;
	struct zsrc *src;
	int ret;

	reader_get_info(a->r, &in);
	if (in.ckpt_wanted == 0)
		return 0;
	ret = open_src(t, a, &src);
	if (ret < 0)
		return ret;
	ret = reader_build_checkpoints(a->r, src, NULL);
	zsrc_put(src);
	return ret == -ENOTSUP ? 0 : ret;
}

int arctab_index(struct arctab *t, const struct ns_entry *e)
{
	struct arc *a;
	int ret = get(t, e, true, &a);

	if (ret == 0) {
		ret = a->r ? checkpoint(t, a) : a->err;
		arctab_put(t, a);
	}
	return ret;
}

int arctab_open(struct arctab *t, struct arc *a)
{
	struct zsrc *src;
	int ret;

	pthread_mutex_lock(&t->lock);
	while (a->moving) /* the last close's detach, or another first open's attach */
		pthread_cond_wait(&t->moved, &t->lock);
	if (a->opens > 0) {
		a->opens++;
		pthread_mutex_unlock(&t->lock);
		return 0;
	}
	a->moving = true;
	pthread_mutex_unlock(&t->lock);

	ret = open_src(t, a, &src);
	if (ret == 0)
		ret = reader_attach(a->r, src);

	pthread_mutex_lock(&t->lock);
	a->moving = false;
	if (ret == 0)
		a->opens++;
	pthread_cond_broadcast(&t->moved);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void arctab_close(struct arctab *t, struct arc *a)
{
	pthread_mutex_lock(&t->lock);
	/* Not moving: an attach ends with opens > 0, and a detach starts at 0. */
	if (--a->opens > 0) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	a->moving = true;
	pthread_mutex_unlock(&t->lock);

	reader_detach(a->r); /* waits for the read-ahead jobs: never under the lock */

	pthread_mutex_lock(&t->lock);
	a->moving = false;
	pthread_cond_broadcast(&t->moved);
	pthread_mutex_unlock(&t->lock);
}

void arctab_put(struct arctab *t, struct arc *a)
{
	bool last;

	if (!a)
		return;
	pthread_mutex_lock(&t->lock);
	last = --a->refs == 0;
	pthread_mutex_unlock(&t->lock);
	if (last)
		arc_free(a);
}

const struct reader_opts *arctab_opts(const struct arctab *t)
{
	return t ? t->opts : NULL;
}

struct reader *arc_reader(const struct arc *a)
{
	return a->r;
}

/* The cause, by the rule and the numbers of the reader's wide-unit warning. */
static void top_fill(struct arctab_top *top, const struct reader_opts *opts,
		     const struct reader_info *in, uint64_t cost)
{
	top->decoded = cost;
	top->served = in->served;
	top->reads = in->reads;
	top->unit = 0;
	/* the file's state decides the advice: a damaged file is not to be indexed */
	if (in->salvaged) {
		top->why = ARCTAB_WHY_SALVAGED;
	} else if (in->max_block > opts->whole_max) {
		top->why = in->chunks <= 1 ? ARCTAB_WHY_ONE : ARCTAB_WHY_WIDE;
		top->unit = in->max_block;
	} else if (!in->pass) {
		top->why = ARCTAB_WHY_NONE;
	} else {
		top->why = in->saved	      ? ARCTAB_WHY_SAVED
			   : !opts->index_dir ? ARCTAB_WHY_NO_DIR
					      : ARCTAB_WHY_NO_INDEX;
	}
}

void arctab_top(struct arctab *t, struct arctab_top *top, size_t n)
{
	size_t have = 0;
	struct htab_walk w;
	struct htab_link *l;

	pthread_mutex_lock(&t->lock);
	htab_walk_start(&t->arcs, &w);
	while ((l = htab_walk_next(&w))) {
		struct arc *a = htab_entry(l, struct arc, link);
		struct reader_info in;
		uint64_t cost;
		size_t i;

		/* opening first: a->r is written, unlocked, until opening is cleared */
		if (a->opening || !a->r)
			continue;
		reader_get_info(a->r, &in);
		cost = in.decoded + (in.pass ? in.usize : 0);
		if (cost == 0)
			continue;
		/* insertion into the n largest, kept sorted */
		for (i = have; i > 0 && top[i - 1].decoded < cost; i--)
			if (i < n)
				top[i] = top[i - 1];
		if (i < n) {
			top_fill(&top[i], t->opts, &in, cost);
			snprintf(top[i].name, sizeof(top[i].name), "%s", reader_name(a->r));
			if (have < n)
				have++;
		}
	}
	pthread_mutex_unlock(&t->lock);
	for (size_t i = have; i < n; i++)
		top[i].decoded = 0;
}

const char *arc_why(const struct arc *a)
{
	return a->why ? a->why : strerror(-a->err);
}

int arc_error(const struct arc *a)
{
	return a->err;
}
