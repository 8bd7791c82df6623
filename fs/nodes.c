/* SPDX-License-Identifier: MIT */
/*
 * How it works: two chained hashes over the same nodes, one by id for
 * nodes_get and one by (parent, name) for nodes_lookup, whose chain holds
 * every live version of that name.  Ids are never reused, so the generation
 * number the kernel sees can stay 0.
 */
#include "nodes.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "arctab.h"

#define FUSE_ROOT 1
#define NBUCKETS 8192

struct entry {
	struct node n;
	char *name;
	/* Protected by nodes.lock. */
	uint64_t nlookup;
	int refs;
	struct entry *by_id, *by_name;
};

struct nodes {
	struct arctab *arcs;
	pthread_mutex_t lock;
	/* Protected by lock. */
	uint64_t next_id;
	struct entry *ids[NBUCKETS];
	struct entry *names[NBUCKETS];
};

static size_t id_hash(uint64_t id)
{
	return (size_t)(id * 0x9E3779B97F4A7C15ull >> 40) % NBUCKETS;
}

static size_t name_hash(uint64_t parent, const char *name)
{
	uint64_t h = parent * 0x100000001B3ull;

	while (*name)
		h = (h ^ (unsigned char)*name++) * 0x100000001B3ull;
	return (size_t)(h % NBUCKETS);
}

/* The same version: the same source object, and for archives the same contents. */
static bool same_version(const struct tree_node *a, const struct tree_node *b)
{
	if (a->kind != b->kind || a->st.st_dev != b->st.st_dev || a->st.st_ino != b->st.st_ino ||
	    (a->st.st_mode & S_IFMT) != (b->st.st_mode & S_IFMT))
		return false;
	return a->kind != TREE_ARCHIVE ||
	       (a->st.st_size == b->st.st_size && a->st.st_mtim.tv_sec == b->st.st_mtim.tv_sec &&
		a->st.st_mtim.tv_nsec == b->st.st_mtim.tv_nsec &&
		a->st.st_ctim.tv_sec == b->st.st_ctim.tv_sec &&
		a->st.st_ctim.tv_nsec == b->st.st_ctim.tv_nsec);
}

static void entry_free(struct nodes *t, struct entry *e)
{
	arctab_put(t->arcs, e->n.arc);
	free(e->n.path);
	free(e->name);
	free(e);
}

static struct entry *entry_new(uint64_t parent, const char *name, const char *path,
			       const struct tree_node *tn)
{
	struct entry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->n.parent = parent;
	e->n.tn = *tn;
	e->n.path = strdup(path);
	e->name = strdup(name);
	if (!e->n.path || !e->name) {
		free(e->n.path);
		free(e->name);
		free(e);
		return NULL;
	}
	return e;
}

static void link_entry(struct nodes *t, struct entry *e)
{
	size_t b = id_hash(e->n.id);

	e->by_id = t->ids[b];
	t->ids[b] = e;
	b = name_hash(e->n.parent, e->name);
	e->by_name = t->names[b];
	t->names[b] = e;
}

int nodes_new(struct arctab *arcs, const struct tree_node *root, struct nodes **out)
{
	struct nodes *t = calloc(1, sizeof(*t));
	struct entry *e = entry_new(FUSE_ROOT, "", "/", root);

	*out = NULL;
	if (!t || !e) {
		free(t);
		free(e);
		return -ENOMEM;
	}
	t->arcs = arcs;
	pthread_mutex_init(&t->lock, NULL);
	e->n.id = FUSE_ROOT;
	e->nlookup = 1; /* the root is never forgotten */
	t->next_id = FUSE_ROOT + 1;
	link_entry(t, e);
	*out = t;
	return 0;
}

void nodes_free(struct nodes *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < NBUCKETS; i++) {
		struct entry *e = t->ids[i], *next;

		for (; e; e = next) {
			next = e->by_id;
			entry_free(t, e);
		}
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

int nodes_lookup(struct nodes *t, uint64_t parent, const char *name, const char *path,
		 const struct tree_node *tn, struct arc **arc, struct node **out)
{
	struct entry *e, *fresh = NULL;

	*out = NULL;
	for (;;) {
		pthread_mutex_lock(&t->lock);
		for (e = t->names[name_hash(parent, name)]; e; e = e->by_name)
			if (e->n.parent == parent && strcmp(e->name, name) == 0 &&
			    same_version(&e->n.tn, tn))
				break;
		if (e || fresh)
			break;
		/* Allocate outside the lock, then look again. */
		pthread_mutex_unlock(&t->lock);
		fresh = entry_new(parent, name, path, tn);
		if (!fresh)
			return -ENOMEM;
	}
	if (!e) {
		e = fresh;
		fresh = NULL;
		e->n.id = t->next_id++;
		e->n.arc = *arc;
		*arc = NULL;
		link_entry(t, e);
	}
	e->nlookup++;
	e->refs++;
	pthread_mutex_unlock(&t->lock);
	if (fresh)
		entry_free(t, fresh);
	*out = &e->n;
	return 0;
}

struct node *nodes_get(struct nodes *t, uint64_t id)
{
	struct entry *e;

	pthread_mutex_lock(&t->lock);
	for (e = t->ids[id_hash(id)]; e && e->n.id != id; e = e->by_id)
		;
	if (e)
		e->refs++;
	pthread_mutex_unlock(&t->lock);
	return e ? &e->n : NULL;
}

/* Unlinks e if nobody holds it any more; returns true if the caller must free it. */
static bool maybe_unlink(struct nodes *t, struct entry *e)
{
	struct entry **pp;

	if (e->refs > 0 || e->nlookup > 0)
		return false;
	for (pp = &t->ids[id_hash(e->n.id)]; *pp != e; pp = &(*pp)->by_id)
		;
	*pp = e->by_id;
	for (pp = &t->names[name_hash(e->n.parent, e->name)]; *pp != e; pp = &(*pp)->by_name)
		;
	*pp = e->by_name;
	return true;
}

void nodes_put(struct nodes *t, struct node *n)
{
	struct entry *e = (struct entry *)n; /* n is the first member */
	bool dead;

	if (!n)
		return;
	pthread_mutex_lock(&t->lock);
	e->refs--;
	dead = maybe_unlink(t, e);
	pthread_mutex_unlock(&t->lock);
	if (dead)
		entry_free(t, e);
}

void nodes_forget(struct nodes *t, uint64_t id, uint64_t nlookup)
{
	struct entry *e;
	bool dead = false;

	pthread_mutex_lock(&t->lock);
	for (e = t->ids[id_hash(id)]; e && e->n.id != id; e = e->by_id)
		;
	if (e && id != FUSE_ROOT) {
		e->nlookup = nlookup > e->nlookup ? 0 : e->nlookup - nlookup;
		dead = maybe_unlink(t, e);
	}
	pthread_mutex_unlock(&t->lock);
	if (dead)
		entry_free(t, e);
}
