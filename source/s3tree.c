/* SPDX-License-Identifier: MIT */
/*
 * How it works: every listed object's key and ETag go into one string
 * arena, the objects into one array.  At the end the array is sorted by
 * key, so the keys under any directory "a/" form one run; build_dir walks
 * a run, turns each key without a further '/' into a file entry and each
 * run sharing a first segment into a child directory (recursing into it),
 * then resolves the directory's names (the rules' strip) and appends its entries,
 * sorted by name, to the one entry array, where a lookup bsearches them.
 * All references inside are offsets, so the arrays may move while they grow.
 */
#include "s3tree.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_SKIPPED_MAX 10 /* keys named in the log per listing; the rest are counted */
#define NO_OFF		SIZE_MAX

struct sobj {
	size_t key, etag; /* arena offsets */
	uint64_t size;
	int64_t mtime;
};

struct sent {
	size_t name;  /* arena offset of the visible name */
	uint32_t idx; /* object index, or directory index for S3TREE_DIR */
	uint32_t kind;
};

struct sdir {
	size_t path;	       /* arena offset: "a/b", "" for the root */
	uint32_t first, count; /* its entries in ents */
};

struct s3tree {
	atomic_uint refs;
	char *s; /* the arena */
	size_t slen, scap;
	struct sobj *objs;
	size_t nobj, objcap;
	struct sent *ents;
	size_t nent, entcap;
	struct sdir *dirs;
	size_t ndir, dircap;
	struct s3tree_stats stats;
};

struct s3tree_build {
	struct s3tree *t;
	char *label;
	char *prefix;
	size_t plen;
	const struct s3tree_rules *rules;
};

/* A directory's entry while it is built. */
struct tent {
	size_t name;
	uint32_t idx;
	uint32_t kind; /* S3TREE_DIR or S3TREE_RAW (a file, before strip) */
};

static int grow(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*arr, n * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

/*
 * Appends len bytes and a NUL, from str or, if str is NULL, from the arena
 * itself at from (the arena may move meanwhile); returns their offset or NO_OFF.
 */
static size_t arena_copy(struct s3tree *t, const char *str, size_t from, size_t len)
{
	size_t off = t->slen;

	if (grow((void **)&t->s, &t->scap, t->slen + len + 1, 1) < 0)
		return NO_OFF;
	memcpy(t->s + off, str ? str : t->s + from, len);
	t->s[off + len] = '\0';
	t->slen += len + 1;
	return off;
}

static size_t arena_add(struct s3tree *t, const char *str, size_t len)
{
	return arena_copy(t, str, 0, len);
}

/* One line about keys not shown, to the rules' log. */
__attribute__((format(printf, 2, 3))) static void say(const struct s3tree_build *b, const char *fmt,
						      ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	b->rules->log(b->rules->log_arg, line);
}

int s3tree_build_new(const char *label, const char *prefix, const struct s3tree_rules *rules,
		     struct s3tree_build **out)
{
	struct s3tree_build *b = calloc(1, sizeof(*b));
	size_t n = strlen(prefix);

	*out = NULL;
	if (!b || !(b->t = calloc(1, sizeof(*b->t))) || !(b->label = strdup(label)) ||
	    !(b->prefix = malloc(n + 2))) {
		s3tree_build_abort(b);
		return -ENOMEM;
	}
	memcpy(b->prefix, prefix, n + 1);
	if (n && prefix[n - 1] != '/')
		memcpy(b->prefix + n++, "/", 2);
	b->plen = n;
	b->rules = rules;
	atomic_init(&b->t->refs, 1);
	*out = b;
	return 0;
}

void s3tree_build_abort(struct s3tree_build *b)
{
	if (!b)
		return;
	s3tree_put(b->t);
	free(b->label);
	free(b->prefix);
	free(b);
}

/* True if every segment of rel can be a name; the last may be empty (a folder marker). */
static bool key_ok(const char *rel)
{
	for (;;) {
		const char *slash = strchr(rel, '/');
		size_t len = slash ? (size_t)(slash - rel) : strlen(rel);

		if ((len == 0 && slash) || len > S3TREE_NAME_MAX || (len == 1 && rel[0] == '.') ||
		    (len == 2 && rel[0] == '.' && rel[1] == '.'))
			return false;
		if (!slash)
			return true;
		rel = slash + 1;
	}
}

int s3tree_build_add(struct s3tree_build *b, const char *key, const struct s3_stat *st)
{
	struct s3tree *t = b->t;
	struct sobj *o;

	if (strncmp(key, b->prefix, b->plen) != 0) {
		t->stats.skipped++;
		return 0;
	}
	if (!key[b->plen]) {
		t->stats.markers++; /* the prefix's own marker */
		return 0;
	}
	if (!key_ok(key + b->plen)) {
		if (t->stats.skipped++ < LOG_SKIPPED_MAX)
			say(b,
			    "%s/%s: not shown: a key with an empty, '.' or '..' segment, "
			    "or one over %d bytes, has no file name",
			    b->label, key, S3TREE_NAME_MAX);
		return 0;
	}
	if (grow((void **)&t->objs, &t->objcap, t->nobj + 1, sizeof(*t->objs)) < 0)
		return -ENOMEM;
	o = &t->objs[t->nobj];
	o->key = arena_add(t, key, strlen(key));
	o->etag = o->key == NO_OFF ? NO_OFF : arena_add(t, st->etag, strlen(st->etag));
	if (o->etag == NO_OFF)
		return -ENOMEM;
	o->size = st->size;
	o->mtime = (int64_t)st->mtime;
	t->nobj++;
	return 0;
}

static int by_key(const void *a, const void *b, void *arena)
{
	const char *s = arena;

	return strcmp(s + ((const struct sobj *)a)->key, s + ((const struct sobj *)b)->key);
}

/* By name; a directory before a file of the same name. */
static int by_name(const void *a, const void *b, void *arena)
{
	const struct tent *x = a, *y = b;
	const char *s = arena;
	int c = strcmp(s + x->name, s + y->name);

	return c ? c : (x->kind != S3TREE_DIR) - (y->kind != S3TREE_DIR);
}

static int add_dir(struct s3tree *t, size_t path, uint32_t *idx)
{
	if (t->ndir >= UINT32_MAX ||
	    grow((void **)&t->dirs, &t->dircap, t->ndir + 1, sizeof(*t->dirs)) < 0)
		return -ENOMEM;
	t->dirs[t->ndir].path = path;
	t->dirs[t->ndir].first = t->dirs[t->ndir].count = 0;
	*idx = (uint32_t)t->ndir++;
	return 0;
}

/*
 * Drops files shadowed by a directory of the same name (v is sorted by
 * name, directories first), then strips names.  Returns the count kept or
 * -ENOMEM.
 */
static ssize_t resolve_names(struct s3tree_build *b, struct tent *v, size_t n)
{
	struct s3tree *t = b->t;
	const char **names;
	char **vis;
	bool *file;
	size_t k = 0;
	int ret = 0;

	for (size_t i = 0; i < n; i++) {
		if (k && v[i].kind != S3TREE_DIR &&
		    strcmp(t->s + v[i].name, t->s + v[k - 1].name) == 0) {
			say(b, "%s/%s: not shown: a directory of the same name is", b->label,
			    t->s + t->objs[v[i].idx].key);
			t->stats.shadowed++;
			continue;
		}
		v[k++] = v[i];
	}
	names = calloc(k + 1, sizeof(*names));
	vis = calloc(k + 1, sizeof(*vis));
	file = calloc(k + 1, sizeof(*file));
	if (!names || !vis || !file)
		ret = -ENOMEM;
	for (size_t i = 0; i < k && ret == 0; i++) {
		names[i] = t->s + v[i].name; /* the arena does not move until strip returns */
		file[i] = v[i].kind != S3TREE_DIR;
	}
	if (ret == 0)
		ret = b->rules->strip(names, file, vis, k);
	for (size_t i = 0; i < k && ret == 0; i++) {
		if (!vis[i])
			continue;
		v[i].name = arena_add(t, vis[i], strlen(vis[i]));
		v[i].kind = S3TREE_ARCHIVE;
		if (v[i].name == NO_OFF)
			ret = -ENOMEM;
	}
	for (size_t i = 0; vis && i < k; i++)
		free(vis[i]);
	free(names);
	free(vis);
	free(file);
	return ret < 0 ? ret : (ssize_t)k;
}

/* Appends directory dir's entries v[0..n) to ents, sorted by visible name. */
static int finish_dir(struct s3tree_build *b, uint32_t dir, struct tent *v, size_t n)
{
	struct s3tree *t = b->t;
	ssize_t k;

	if (n) /* an empty directory may have no array: qsort_r wants one */
		qsort_r(v, n, sizeof(*v), by_name, t->s);
	k = resolve_names(b, v, n);
	if (k < 0)
		return (int)k;
	if (k)
		qsort_r(v, (size_t)k, sizeof(*v), by_name, t->s);
	if (grow((void **)&t->ents, &t->entcap, t->nent + (size_t)k, sizeof(*t->ents)) < 0)
		return -ENOMEM;
	t->dirs[dir].first = (uint32_t)t->nent;
	t->dirs[dir].count = (uint32_t)k;
	for (ssize_t i = 0; i < k; i++) {
		t->ents[t->nent].name = v[i].name;
		t->ents[t->nent].idx = v[i].idx;
		t->ents[t->nent++].kind = v[i].kind;
		if (v[i].kind != S3TREE_DIR)
			t->stats.objects++;
	}
	return 0;
}

/* Objects [lo, hi), whose relative keys all start with dir's path and '/' (L bytes). */
static int build_dir(struct s3tree_build *b, uint32_t dir, size_t lo, size_t hi, size_t L)
{
	struct s3tree *t = b->t;
	struct tent *v = NULL;
	size_t n = 0, cap = 0, i = lo;
	int ret = 0;

	while (i < hi && ret == 0) {
		const char *rel = t->s + t->objs[i].key + b->plen + L;
		const char *slash = strchr(rel, '/');
		size_t j = i + 1, seg, path;
		uint32_t child;

		if (grow((void **)&v, &cap, n + 1, sizeof(*v)) < 0) {
			ret = -ENOMEM;
			break;
		}
		if (!*rel) { /* "dir/": the marker of this very directory */
			t->stats.markers++;
			i++;
			continue;
		}
		if (!slash) {
			v[n].name = t->objs[i].key + b->plen + L;
			v[n].idx = (uint32_t)i++;
			v[n++].kind = S3TREE_RAW;
			continue;
		}
		seg = (size_t)(slash - rel);
		while (j < hi && strncmp(t->s + t->objs[j].key + b->plen + L, rel, seg + 1) == 0)
			j++;
		path = arena_copy(t, NULL, t->objs[i].key + b->plen, L + seg);
		ret = path == NO_OFF ? -ENOMEM : add_dir(t, path, &child);
		if (ret == 0) {
			v[n].name = path + L;
			v[n].idx = child;
			v[n++].kind = S3TREE_DIR;
			ret = build_dir(b, child, i, j, L + seg + 1);
		}
		i = j;
	}
	if (ret == 0)
		ret = finish_dir(b, dir, v, n);
	free(v);
	return ret;
}

/* Gives back what the doubling left unused. */
static void trim(void **arr, size_t *cap, size_t n, size_t size)
{
	void *p = n ? realloc(*arr, n * size) : NULL;

	if (p || !n) {
		if (!n)
			free(*arr);
		*arr = p;
		*cap = n;
	}
}

int s3tree_build_finish(struct s3tree_build *b, struct s3tree **out)
{
	struct s3tree *t = b->t;
	uint32_t root;
	size_t path = arena_add(t, "", 0);
	int ret = path == NO_OFF ? -ENOMEM : add_dir(t, path, &root);

	*out = NULL;
	if (ret == 0) {
		if (t->nobj) /* an empty listing has no array: qsort_r wants one */
			qsort_r(t->objs, t->nobj, sizeof(*t->objs), by_key, t->s);
		ret = build_dir(b, root, 0, t->nobj, 0);
	}
	if (ret < 0) {
		s3tree_build_abort(b);
		return ret;
	}
	if (t->stats.skipped > LOG_SKIPPED_MAX)
		say(b, "%s/%s: %zu keys not shown (no file name; the first %d were named)",
		    b->label, b->prefix, t->stats.skipped, LOG_SKIPPED_MAX);
	trim((void **)&t->s, &t->scap, t->slen, 1);
	trim((void **)&t->objs, &t->objcap, t->nobj, sizeof(*t->objs));
	trim((void **)&t->ents, &t->entcap, t->nent, sizeof(*t->ents));
	trim((void **)&t->dirs, &t->dircap, t->ndir, sizeof(*t->dirs));
	t->stats.dirs = t->ndir;
	t->stats.bytes = s3tree_bytes(t);
	b->t = NULL;
	s3tree_build_abort(b);
	*out = t;
	return 0;
}

struct s3tree *s3tree_get(struct s3tree *t)
{
	atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
	return t;
}

void s3tree_put(struct s3tree *t)
{
	if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
		return;
	free(t->s);
	free(t->objs);
	free(t->ents);
	free(t->dirs);
	free(t);
}

/* FNV-1a over a, a NUL, then b; 0 and 1 are moved out of the way (1 is the root). */
static uint64_t ino_hash(const char *a, const char *b)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const char *p = a;; p++) {
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
		if (!*p)
			break;
	}
	for (const char *p = b; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	return h < 2 ? h + 2 : h;
}

static void fill_ent(const struct s3tree *t, const struct sent *e, struct s3tree_ent *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = (enum s3tree_kind)e->kind;
	out->name = t->s + e->name;
	if (e->kind == S3TREE_DIR) {
		out->dir = e->idx;
		out->ino = ino_hash("/", t->s + t->dirs[e->idx].path);
		return;
	}
	out->key = t->s + t->objs[e->idx].key;
	out->st.size = t->objs[e->idx].size;
	out->st.mtime = (time_t)t->objs[e->idx].mtime;
	snprintf(out->st.etag, sizeof(out->st.etag), "%s", t->s + t->objs[e->idx].etag);
	out->ino = ino_hash(out->key, out->st.etag);
}

static int by_visible(const void *key, const void *ent, void *arena)
{
	return strcmp(key, (const char *)arena + ((const struct sent *)ent)->name);
}

/* bsearch_r is not in glibc: a plain binary search over one directory's entries. */
static const struct sent *dir_find(const struct s3tree *t, uint32_t dir, const char *name)
{
	size_t lo = t->dirs[dir].first, hi = lo + t->dirs[dir].count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = by_visible(name, &t->ents[mid], t->s);

		if (c == 0)
			return &t->ents[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

int s3tree_resolve(const struct s3tree *t, const char *path, struct s3tree_ent *out)
{
	struct sent root = { .name = t->dirs[0].path, .idx = 0, .kind = S3TREE_DIR };
	const struct sent *cur = &root;
	char name[S3TREE_NAME_MAX + 1];

	while (*path) {
		const char *slash;
		size_t len;

		while (*path == '/')
			path++;
		if (!*path)
			break;
		slash = strchr(path, '/');
		len = slash ? (size_t)(slash - path) : strlen(path);
		if (cur->kind != S3TREE_DIR)
			return -ENOTDIR;
		if (len > S3TREE_NAME_MAX)
			return -ENOENT;
		memcpy(name, path, len);
		name[len] = '\0';
		cur = dir_find(t, cur->idx, name);
		if (!cur)
			return -ENOENT;
		path += len;
	}
	fill_ent(t, cur, out);
	if (cur == &root)
		out->ino = 1;
	return 0;
}

size_t s3tree_dir_count(const struct s3tree *t, uint32_t dir)
{
	return dir < t->ndir ? t->dirs[dir].count : 0;
}

void s3tree_dir_entry(const struct s3tree *t, uint32_t dir, size_t i, struct s3tree_ent *out)
{
	fill_ent(t, &t->ents[t->dirs[dir].first + i], out);
}

void s3tree_get_stats(const struct s3tree *t, struct s3tree_stats *out)
{
	*out = t->stats;
}

size_t s3tree_bytes(const struct s3tree *t)
{
	return sizeof(*t) + t->scap + t->objcap * sizeof(*t->objs) + t->entcap * sizeof(*t->ents) +
	       t->dircap * sizeof(*t->dirs);
}
