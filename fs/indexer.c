/* SPDX-License-Identifier: MIT */
#include "indexer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arctab.h"
#include "beneath.h"
#include "fmttab.h"
#include "pool.h"
#include "reader.h"
#include "tree.h"
#include "zlog.h"

#define PROGRESS_SECS 5

struct item {
	char *rel;
	struct stat st;
	bool first; /* its format's pass is the index (FMTTAB_BG_INDEX); else checkpoints */
};

struct indexer {
	struct arctab *arcs;
	struct zmctx *zm;
	uint64_t loaded0; /* indexes_loaded when the walk began */
	int root;
	struct pool *pool;
	unsigned max_jobs;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	/* Protected by lock. */
	bool stop;
	unsigned running;
	uint64_t done, done_bytes;
	uint64_t indexed, corrupt, not_kind, skipped; /* done, by verdict */
	uint64_t ck_done, ck_corrupt; /* checkpoint-pass files looked at, and found corrupt */
	/* For log lines, from the format table: "gzip", "xz Blocks and zstd frames". */
	char kinds[64], ck_kinds[128];
};

struct job {
	struct indexer *ix;
	struct item it;
};

/*
 * What its format's policy (fmttab_bg) says for a file named name, by its
 * suffix: an index to build (gzip), checkpoints inside wide units (xz and
 * zstd; only those with any: the reader decides), or nothing.
 */
static enum fmttab_bg bg_of(const char *name)
{
	return fmttab_bg(fmttab_by_suffix(name));
}

static bool is_candidate(const char *name)
{
	return bg_of(name) != FMTTAB_BG_NONE;
}

/* The names of the formats with pass bg, for log lines; units: "xz Blocks and zstd frames". */
static void kinds_of(enum fmttab_bg bg, bool units, char *out, size_t len)
{
	size_t n = 0, k = 0, all = 0;

	for (int id = 1; id <= fmttab_count(); id++)
		all += fmttab_bg(id) == bg;
	out[0] = '\0';
	for (int id = 1; id <= fmttab_count() && n < len; id++) {
		if (fmttab_bg(id) != bg)
			continue;
		k++;
		n += (size_t)snprintf(out + n, len - n, "%s%s%s%s%s",
				      k == 1	 ? ""
				      : k == all ? (units ? " and " : "/")
						 : ", ",
				      fmttab_name(id), units ? " " : "",
				      units ? fmttab_unit(id) : "", units ? "s" : "");
	}
}

/* Index-pass files first (their indexes are what first reads wait for), each kind smallest first.
 */
static int by_kind_size(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->first != y->first)
		return x->first ? -1 : 1;
	return (x->st.st_size > y->st.st_size) - (x->st.st_size < y->st.st_size);
}

static bool stopping(struct indexer *ix)
{
	bool stop;

	pthread_mutex_lock(&ix->lock);
	stop = ix->stop;
	pthread_mutex_unlock(&ix->lock);
	return stop;
}

/*
 * The walk's state: a stack of directories still to list and the
 * candidates found so far, both on the heap.  `bytes` is what they hold
 * (each path, plus its slot), capped at INDEXER_WALK_MAX_BYTES.
 */
struct walk {
	char **dirs;
	size_t ndirs, capdirs;
	struct item *items;
	size_t n, cap;
	size_t bytes;
	bool full; /* the cap was hit: some files were left out */
};

/*
 * Returns arr (n elements of size elem used, *cap allocated) with room for
 * one more, moved if it had to grow, and charges cost bytes (the element
 * and its path) to the walk's cap; or NULL, with w->full set and arr still
 * valid, if the cap or memory says no.
 */
static void *room_for(struct walk *w, void *arr, size_t n, size_t *cap, size_t elem, size_t cost)
{
	if (w->bytes + cost > INDEXER_WALK_MAX_BYTES)
		goto full;
	if (n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		void *na = realloc(arr, ncap * elem);

		if (!na)
			goto full;
		arr = na;
		*cap = ncap;
	}
	w->bytes += cost;
	return arr;
full:
	w->full = true;
	return NULL;
}

/* Takes over path (freed on failure).  Returns false once the cap is hit. */
static bool push_dir(struct walk *w, char *path)
{
	char **dirs = room_for(w, w->dirs, w->ndirs, &w->capdirs, sizeof(*dirs),
			       strlen(path) + 1 + sizeof(*dirs));

	if (!dirs) {
		free(path);
		return false;
	}
	w->dirs = dirs;
	w->dirs[w->ndirs++] = path;
	return true;
}

static char *pop_dir(struct walk *w)
{
	char *path = w->dirs[--w->ndirs];

	w->bytes -= strlen(path) + 1 + sizeof(char *);
	return path;
}

/* Takes over path (freed on failure).  Returns false once the cap is hit. */
static bool add_item(struct walk *w, char *path, const struct stat *st)
{
	struct item *items = room_for(w, w->items, w->n, &w->cap, sizeof(*items),
				      strlen(path) + 1 + sizeof(*items));

	if (!items) {
		free(path);
		return false;
	}
	w->items = items;
	w->items[w->n].rel = path;
	w->items[w->n].st = *st;
	w->items[w->n].first = bg_of(path) == FMTTAB_BG_INDEX;
	w->n++;
	return true;
}

/* rel/name, or name alone under the root; NULL if too long for a path or out of memory. */
static char *join(const char *rel, const char *name)
{
	char *path;
	int len = strcmp(rel, ".") == 0 ? asprintf(&path, "%s", name)
					: asprintf(&path, "%s/%s", rel, name);

	if (len < 0)
		return NULL;
	if (len >= PATH_MAX) {
		free(path);
		return NULL;
	}
	return path;
}

/* Lists directory rel: subdirectories go on the stack, candidates into the items. */
static void list_dir(struct indexer *ix, struct walk *w, const char *rel)
{
	int fd = beneath_open(ix->root, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK);
	unsigned long seen = 0;
	struct dirent *de;
	DIR *dir;

	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dir))) {
		struct stat st;
		char *path;

		/* A directory of millions of entries: unmount should not wait for it. */
		if (++seen % 4096 == 0 && stopping(ix))
			break;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (de->d_type != DT_UNKNOWN && de->d_type != DT_DIR && de->d_type != DT_REG)
			continue;
		if (de->d_type == DT_REG && !is_candidate(de->d_name))
			continue;
		if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			path = join(rel, de->d_name);
			if (path)
				push_dir(w, path);
		} else if (S_ISREG(st.st_mode) && is_candidate(de->d_name)) {
			path = join(rel, de->d_name);
			if (path)
				add_item(w, path, &st);
		}
	}
	closedir(dir);
}

/*
 * Collects the candidates of the whole tree into w, depth first, with
 * an explicit stack: no recursion, so a deep tree costs heap (its paths,
 * under the cap), not stack.  Checks `stop` at each directory.
 */
static void walk_tree(struct indexer *ix, struct walk *w)
{
	char *root = strdup(".");

	if (!root || !push_dir(w, root))
		return;
	/* Once full, stop: what was found is indexed, the rest on first use. */
	while (w->ndirs > 0 && !w->full && !stopping(ix)) {
		char *rel = pop_dir(w);

		list_dir(ix, w, rel);
		free(rel);
	}
	while (w->ndirs > 0)
		free(pop_dir(w));
	free(w->dirs);
	w->dirs = NULL;
	w->capdirs = 0;
}

static void run_job(void *arg)
{
	struct job *j = arg;
	struct indexer *ix = j->ix;
	struct ns_entry e = tree_arc_entry(j->it.rel, &j->it.st);
	int ret = arctab_index(ix->arcs, &e);

	pthread_mutex_lock(&ix->lock);
	ix->running--;
	if (!j->it.first) {
		ix->ck_done++;
		ix->ck_corrupt += ret == -EINVAL || ret == -EIO;
	} else {
		ix->done++;
		ix->done_bytes += (uint64_t)j->it.st.st_size;
	}
	if (!j->it.first)
		; /* counted above: the reader logged any failure, with its offset */
	else if (ret == 0)
		ix->indexed++;
	else if (ret == -EINVAL || ret == -EIO)
		ix->corrupt++; /* logged by the reader, with its offset */
	else if (ret == -ENOTSUP)
		ix->not_kind++;
	else
		ix->skipped++; /* gone, changed, or no descriptor: indexed on first use */
	pthread_cond_broadcast(&ix->changed);
	pthread_mutex_unlock(&ix->lock);
	free(j->it.rel);
	free(j);
}

/*
 * The summary: what each file turned out to be, not just that all were
 * tried, and whether its index was built or loaded from index_dir.  Loads
 * are counted by the mount's counter, so a file a user opened meanwhile
 * counts by what that open did.
 */
static void log_summary(struct indexer *ix, size_t n, uint64_t total, bool all)
{
	struct reader_counters rc;
	uint64_t loaded, built;
	char extra[64] = "";

	reader_get_counters(ix->zm, &rc);
	loaded = rc.indexes_loaded - ix->loaded0;
	if (loaded > ix->indexed)
		loaded = ix->indexed;
	built = ix->indexed - loaded;
	if (ix->skipped)
		snprintf(extra, sizeof(extra),
			 ", %" PRIu64 " skipped (gone, changed or unreadable)", ix->skipped);
	if (all)
		zlog(ZLOG_INFO,
		     "background indexing done, %zu %s files (%" PRIu64 " MiB): %" PRIu64
		     " built, %" PRIu64 " loaded, %" PRIu64 " corrupt, %" PRIu64 " not %s%s",
		     n, ix->kinds, total >> 20, built, loaded, ix->corrupt, ix->not_kind, ix->kinds,
		     extra);
	else
		zlog(ZLOG_INFO,
		     "background indexing stopped after %" PRIu64 " of %zu %s files: %" PRIu64
		     " built, %" PRIu64 " loaded, %" PRIu64 " corrupt, %" PRIu64 " not %s%s",
		     ix->done, n, ix->kinds, built, loaded, ix->corrupt, ix->not_kind, ix->kinds,
		     extra);
}

/*
 * Hands items [from, to) of w to the pool, at most max_jobs at a time, with
 * ix->lock held (dropped while waiting).  Returns how far it got: to,
 * unless it was stopped.  progress: log a line every PROGRESS_SECS.
 */
static size_t submit(struct indexer *ix, struct walk *w, size_t from, size_t to, uint64_t total,
		     bool progress)
{
	time_t last = time(NULL);
	size_t next = from;

	while (!ix->stop && next < to) {
		struct job *j;

		while (!ix->stop && ix->running >= ix->max_jobs)
			pthread_cond_wait(&ix->changed, &ix->lock);
		if (ix->stop)
			break;
		if (progress && time(NULL) - last >= PROGRESS_SECS) {
			last = time(NULL);
			zlog(ZLOG_INFO,
			     "indexed %" PRIu64 " of %zu %s files (%" PRIu64 " of %" PRIu64 " MiB)",
			     ix->done, to - from, ix->kinds, ix->done_bytes >> 20, total >> 20);
		}
		j = malloc(sizeof(*j));
		if (!j)
			break;
		j->ix = ix;
		j->it = w->items[next];
		ix->running++;
		if (pool_submit(ix->pool, run_job, j) < 0) {
			ix->running--;
			free(j);
			/* The pool is full of read-ahead: let it drain a little. */
			pthread_mutex_unlock(&ix->lock);
			usleep(10000);
			pthread_mutex_lock(&ix->lock);
			continue;
		}
		w->items[next++].rel = NULL; /* the job owns it now */
	}
	while (ix->running > 0)
		pthread_cond_wait(&ix->changed, &ix->lock);
	return next;
}

/* After the index pass, the checkpoint pass (xz, zstd): checkpoints inside their wide units. */
static void checkpoint_all(struct indexer *ix, struct walk *w, size_t from)
{
	struct reader_counters rc;
	uint64_t ck0;
	size_t end;

	reader_get_counters(ix->zm, &rc);
	ck0 = rc.checkpoints;
	end = submit(ix, w, from, w->n, 0, false);
	reader_get_counters(ix->zm, &rc);
	if (rc.checkpoints > ck0 || ix->ck_corrupt)
		zlog(ZLOG_INFO,
		     "checkpoints inside %s: %" PRIu64 " built in %" PRIu64 " of %zu "
		     "files%s, %" PRIu64 " corrupt",
		     ix->ck_kinds, rc.checkpoints - ck0, ix->ck_done, w->n - from,
		     end == w->n ? "" : " (stopped)", ix->ck_corrupt);
}

static void *main_loop(void *vix)
{
	struct indexer *ix = vix;
	struct walk w = { 0 };
	size_t ngz = 0, next;
	uint64_t total = 0;
	struct reader_counters rc;

	reader_get_counters(ix->zm, &rc);
	ix->loaded0 = rc.indexes_loaded;
	walk_tree(ix, &w);
	if (w.full)
		zlog(ZLOG_WARN,
		     "background indexing: the tree has more archives or directories "
		     "than %u MiB of paths can list; the rest are indexed on first use",
		     (unsigned)(INDEXER_WALK_MAX_BYTES >> 20));
	if (w.n)
		qsort(w.items, w.n, sizeof(*w.items), by_kind_size);
	while (ngz < w.n && w.items[ngz].first)
		total += (uint64_t)w.items[ngz++].st.st_size;
	if (ngz && !stopping(ix))
		zlog(ZLOG_INFO, "indexing %zu %s files (%" PRIu64 " MiB) in the background", ngz,
		     ix->kinds, total >> 20);

	pthread_mutex_lock(&ix->lock);
	next = submit(ix, &w, 0, ngz, total, true);
	if (ngz)
		log_summary(ix, ngz, total, next == ngz);
	if (next == ngz && ngz < w.n)
		checkpoint_all(ix, &w, ngz);
	pthread_mutex_unlock(&ix->lock);
	for (size_t i = 0; i < w.n; i++)
		free(w.items[i].rel);
	free(w.items);
	return NULL;
}

int indexer_start(struct arctab *arcs, struct zmctx *zm, int rootfd, struct pool *pool,
		  unsigned jobs, struct indexer **out)
{
	struct indexer *ix = calloc(1, sizeof(*ix));
	int err;

	*out = NULL;
	if (!ix)
		return -ENOMEM;
	ix->arcs = arcs;
	ix->zm = zm;
	ix->root = rootfd;
	ix->pool = pool;
	ix->max_jobs = jobs ? jobs : 1;
	kinds_of(FMTTAB_BG_INDEX, false, ix->kinds, sizeof(ix->kinds));
	kinds_of(FMTTAB_BG_CKPT, true, ix->ck_kinds, sizeof(ix->ck_kinds));
	pthread_mutex_init(&ix->lock, NULL);
	pthread_cond_init(&ix->changed, NULL);
	err = pthread_create(&ix->thread, NULL, main_loop, ix);
	if (err) {
		pthread_mutex_destroy(&ix->lock);
		pthread_cond_destroy(&ix->changed);
		free(ix);
		return -err;
	}
	*out = ix;
	return 0;
}

void indexer_stop(struct indexer *ix)
{
	if (!ix)
		return;
	pthread_mutex_lock(&ix->lock);
	ix->stop = true;
	pthread_cond_broadcast(&ix->changed);
	pthread_mutex_unlock(&ix->lock);
	pthread_join(ix->thread, NULL);
	pthread_mutex_destroy(&ix->lock);
	pthread_cond_destroy(&ix->changed);
	free(ix);
}
