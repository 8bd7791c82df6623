/* SPDX-License-Identifier: MIT */
/*
 * How it works: a directory's listing (struct dmap) is built by reading the
 * source directory once, probing the candidates' magic bytes (xz files are
 * also opened in the archive table, since an unreadable Index means the
 * file is shown raw), and resolving names.  Listings are sorted by visible
 * name for lookups and kept in a hash by relative path, stamped with the
 * directory's identity; a stale one is rebuilt with no lock held and swapped
 * in.  Holders keep a reference, so a swap never frees a listing in use.
 */
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arctab.h"
#include "beneath.h"
#include "names.h"
#include "probe.h"
#include "reader.h"

#define NBUCKETS 1024

struct dent {
	char *vis;   /* visible name */
	char *src;   /* source name (same pointer as vis when unrenamed) */
	enum tree_kind kind;
	ino_t ino;   /* readdir's d_ino: glibc hides entries whose inode is 0 */
};

struct dmap {
	char *rel;
	struct stat st; /* the directory's identity when listed */
	size_t n;
	struct dent *ents; /* sorted by vis */
	/* Protected by tree.lock. */
	int refs;
	struct dmap *next;
};

struct tree {
	int root;
	struct arctab *arcs;
	pthread_mutex_t lock;
	/* Protected by lock. */
	struct dmap *buckets[NBUCKETS];
};

int tree_new(const char *src, struct arctab *arcs, struct tree **out)
{
	struct tree *t;
	int fd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*out = NULL;
	if (fd < 0)
		return -errno;
	t = calloc(1, sizeof(*t));
	if (!t) {
		close(fd);
		return -ENOMEM;
	}
	t->root = fd;
	t->arcs = arcs;
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

static void dmap_free(struct dmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->ents[i].vis != m->ents[i].src)
			free(m->ents[i].vis);
		free(m->ents[i].src);
	}
	free(m->ents);
	free(m->rel);
	free(m);
}

void tree_free(struct tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < NBUCKETS; i++) {
		struct dmap *m = t->buckets[i], *next;

		for (; m; m = next) {
			next = m->next;
			dmap_free(m);
		}
	}
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
	return h % NBUCKETS;
}

/* Joins dir and name into out; returns -ENAMETOOLONG if it does not fit. */
static int join(char *out, size_t outlen, const char *dir, const char *name)
{
	int n = strcmp(dir, ".") == 0 ? snprintf(out, outlen, "%s", name)
				      : snprintf(out, outlen, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

struct probe_ctx {
	struct tree *t;
	const char *rel;
	int dirfd;
	struct names_ent *ents;
};

/* names_resolve callback: is candidate i a real, readable archive? */
static int probe_candidate(void *vctx, size_t i)
{
	struct probe_ctx *c = vctx;
	const char *name = c->ents[i].name;
	enum probe_fmt fmt = PROBE_NONE;
	char rel[PATH_MAX];
	struct stat st;
	struct arc *a;
	int fd, ret;

	if (join(rel, sizeof(rel), c->rel, name) < 0)
		return 0;
	fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		fmt = reader_probe(fd, rel);
	close(fd);
	if (fmt != PROBE_XZ)
		return fmt == PROBE_GZIP; /* gzip is only indexed when its size is needed */
	/* xz: the Index is cheap to read and decides whether it is shown raw. */
	if (arctab_get(c->t->arcs, c->t->root, rel, &st, &a) < 0)
		return 0;
	ret = arc_reader(a) != NULL;
	arctab_put(c->t->arcs, a);
	return ret;
}

static int by_vis(const void *a, const void *b)
{
	return strcmp(((const struct dent *)a)->vis, ((const struct dent *)b)->vis);
}

/* Reads source directory rel (whose stat is st) into a new listing. */
static int dmap_build(struct tree *t, const char *rel, const struct stat *st, struct dmap **out)
{
	struct names_ent *ents = NULL;
	ino_t *inos = NULL;
	size_t n = 0, cap = 0;
	struct dmap *m = NULL;
	struct dirent *de;
	int ret = 0, fd;
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
	while ((de = readdir(dir))) {
		struct stat est;
		bool reg;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			struct names_ent *ne;
			ino_t *ni;

			cap = cap ? cap * 2 : 64;
			ne = realloc(ents, cap * sizeof(*ents));
			if (ne)
				ents = ne;
			ni = realloc(inos, cap * sizeof(*inos));
			if (ni)
				inos = ni;
			if (!ne || !ni) {
				ret = -ENOMEM;
				goto out;
			}
		}
		reg = de->d_type == DT_REG;
		if (de->d_type == DT_UNKNOWN)
			reg = fstatat(dirfd(dir), de->d_name, &est, AT_SYMLINK_NOFOLLOW) == 0 &&
			      S_ISREG(est.st_mode);
		inos[n] = de->d_ino;
		ents[n].name = strdup(de->d_name);
		ents[n].visible = NULL;
		if (!ents[n].name) {
			ret = -ENOMEM;
			goto out;
		}
		ents[n].candidate = reg && names_strip(de->d_name, (char[NAME_MAX + 1]){ 0 }, NAME_MAX + 1);
		n++;
	}
	struct probe_ctx ctx = { .t = t, .rel = rel, .dirfd = dirfd(dir), .ents = ents };

	ret = names_resolve(ents, n, probe_candidate, &ctx);
	if (ret < 0)
		goto out;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->ents = calloc(n + 1, sizeof(*m->ents))) || !(m->rel = strdup(rel))) {
		ret = -ENOMEM;
		goto out;
	}
	m->st = *st;
	m->n = n;
	for (size_t i = 0; i < n; i++) {
		m->ents[i].src = (char *)ents[i].name;
		m->ents[i].vis = ents[i].visible ? ents[i].visible : (char *)ents[i].name;
		m->ents[i].kind = ents[i].visible ? TREE_ARCHIVE : TREE_PASS;
		m->ents[i].ino = inos[i];
		ents[i].name = NULL;
		ents[i].visible = NULL;
	}
	qsort(m->ents, n, sizeof(*m->ents), by_vis);
	*out = m;
	m = NULL;
out:
	for (size_t i = 0; i < n; i++) {
		free((char *)ents[i].name);
		free(ents[i].visible);
	}
	free(ents);
	free(inos);
	if (m) {
		m->n = 0;
		dmap_free(m);
	}
	closedir(dir);
	return ret;
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

/* Returns the current listing of source directory rel, referenced. */
static int dmap_get(struct tree *t, const char *rel, struct dmap **out)
{
	struct dmap **pp, *m, *old = NULL;
	struct stat st;
	int ret;

	*out = NULL;
	ret = beneath_lstat(t->root, rel, &st);
	if (ret < 0)
		return ret;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	pthread_mutex_lock(&t->lock);
	for (pp = &t->buckets[hash_rel(rel)]; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->rel, rel) == 0)
			break;
	if (*pp && same_dir(&(*pp)->st, &st)) {
		(*pp)->refs++;
		*out = *pp;
		pthread_mutex_unlock(&t->lock);
		return 0;
	}
	pthread_mutex_unlock(&t->lock);

	ret = dmap_build(t, rel, &st, &m);
	if (ret < 0)
		return ret;
	m->refs = 2; /* the table's and the caller's */
	pthread_mutex_lock(&t->lock);
	for (pp = &t->buckets[hash_rel(rel)]; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->rel, rel) == 0)
			break;
	if (*pp) {
		old = *pp;
		m->next = old->next;
		old->next = NULL;
	}
	*pp = m;
	pthread_mutex_unlock(&t->lock);
	if (old)
		dmap_put(t, old);
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
	char parent[PATH_MAX];
	const char *slash, *name;
	const struct dent *d;
	struct dmap *m;
	size_t plen;
	int ret;

	while (*path == '/')
		path++;
	if (*path == '\0') {
		node->kind = TREE_PASS;
		strcpy(node->rel, ".");
		return fstatat(t->root, ".", &node->st, 0) < 0 ? -errno : 0;
	}
	slash = strrchr(path, '/');
	name = slash ? slash + 1 : path;
	plen = slash ? (size_t)(slash - path) : 0;
	if (plen >= sizeof(parent))
		return -ENAMETOOLONG;
	if (plen == 0)
		strcpy(parent, ".");
	else
		memcpy(parent, path, plen), parent[plen] = '\0';
	ret = dmap_get(t, parent, &m);
	if (ret < 0)
		return ret == -ENOTDIR ? -ENOENT : ret;
	d = dmap_find(m, name);
	if (!d)
		ret = -ENOENT;
	else if ((ret = join(node->rel, sizeof(node->rel), parent, d->src)) == 0)
		node->kind = d->kind;
	dmap_put(t, m);
	if (ret < 0)
		return ret;
	ret = beneath_lstat(t->root, node->rel, &node->st);
	if (ret < 0)
		return ret;
	return 0;
}

int tree_stat(struct tree *t, const struct tree_node *node, struct stat *st)
{
	struct arc *a;
	int ret;

	*st = node->st;
	tree_readonly(st);
	if (node->kind != TREE_ARCHIVE)
		return 0;
	ret = arctab_get(t->arcs, t->root, node->rel, &node->st, &a);
	if (ret < 0)
		return ret == -ENOTSUP ? -EIO : ret;
	st->st_size = arc_reader(a) ? (off_t)reader_size(arc_reader(a)) : 0;
	st->st_blocks = (st->st_size + 511) / 512;
	arctab_put(t->arcs, a);
	return 0;
}

int tree_list(struct tree *t, const char *path, int (*fill)(void *ctx, const char *name,
							      const struct stat *st),
	      void *ctx)
{
	struct tree_node dir;
	struct dmap *m;
	int ret = tree_resolve(t, path, &dir);

	if (ret < 0)
		return ret;
	if (!S_ISDIR(dir.st.st_mode))
		return -ENOTDIR;
	ret = dmap_get(t, dir.rel, &m);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < m->n; i++) {
		struct stat st = { 0 };

		/* Only the type matters here: sizes come from getattr, so a
		 * listing never indexes a gzip file. */
		st.st_mode = m->ents[i].kind == TREE_ARCHIVE ? S_IFREG : 0;
		st.st_ino = m->ents[i].ino;
		if (fill(ctx, m->ents[i].vis, &st))
			break;
	}
	dmap_put(t, m);
	return 0;
}
