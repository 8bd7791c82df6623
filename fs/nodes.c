/* SPDX-License-Identifier: MIT */
/*
 * How it works: two hash tables over the same nodes, one by id for
 * nodes_get and one by (parent, name) for nodes_lookup, whose chain holds
 * every live version of that name.  Ids are never reused, so the generation
 * number the kernel sees can stay 0.  A node and its two paths are one
 * allocation; its name points into its visible path.
 */
#include "nodes.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "arctab.h"
#include "htab.h"

#define FUSE_ROOT 1
#define NBUCKETS  8192 /* at first: they grow */
#define DEV_SHIFT 48   /* nodes_ino: other file systems' numbers start at N << 48 */

struct entry {
	struct node n;
	const char *name; /* the last component of n.path */
	/* Protected by nodes.lock. */
	uint64_t nlookup;
	int refs;
	atomic_flag said; /* nodes_say_once; not under the lock */
	struct htab_link by_id, by_name;
	char strings[]; /* n.path, then n.e.id and n.e.tag */
};

_Static_assert(sizeof(struct entry) + 2 + 8 + 15 <= NODES_BYTES_PER_NODE,
	       "NODES_BYTES_PER_NODE (documented in README) is too small");

struct nodes {
	struct arctab *arcs;
	struct ns *ns;
	dev_t root_dev;
	pthread_mutex_t lock;
	/* Protected by lock. */
	dev_t *devs; /* file systems other than the root's, numbered from 1 (nodes_ino) */
	size_t ndevs, capdevs;
	uint64_t next_id;
	struct htab ids;   /* struct entry by n.id */
	struct htab names; /* struct entry by (n.parent, name) */
};

static size_t name_hash(uint64_t parent, const char *name)
{
	uint64_t h = parent * 0x100000001B3ull;

	while (*name)
		h = (h ^ (unsigned char)*name++) * 0x100000001B3ull;
	return (size_t)h;
}

static size_t link_id_hash(const struct htab_link *l)
{
	return (size_t)htab_entry(l, struct entry, by_id)->n.id;
}

static size_t link_name_hash(const struct htab_link *l)
{
	const struct entry *e = htab_entry(l, struct entry, by_name);

	return name_hash(e->n.parent, e->name);
}

/* The node of id, or NULL. */
static struct entry *find_id(struct nodes *t, uint64_t id)
{
	for (struct htab_link *l = htab_bucket(&t->ids, (size_t)id); l; l = l->next) {
		struct entry *e = htab_entry(l, struct entry, by_id);

		if (e->n.id == id)
			return e;
	}
	return NULL;
}

/*
 * The node of name under parent at version v, or NULL: the same version by
 * ns_same, so that a file's pages, cached under its node, are never shown
 * for another version of it.
 */
static struct entry *find_name(struct nodes *t, uint64_t parent, const char *name,
			       const struct ns_entry *v)
{
	for (struct htab_link *l = htab_bucket(&t->names, name_hash(parent, name)); l;
	     l = l->next) {
		struct entry *e = htab_entry(l, struct entry, by_name);

		if (e->n.parent == parent && strcmp(e->name, name) == 0 &&
		    ns_same(t->ns, &e->n.e, v))
			return e;
	}
	return NULL;
}

static void entry_free(struct nodes *t, struct entry *e)
{
	arctab_put(t->arcs, e->n.arc);
	free(e);
}

static struct entry *entry_new(uint64_t parent, const char *name, const char *path,
			       const struct ns_entry *v)
{
	size_t plen = strlen(path), nlen = strlen(name);
	size_t ilen = v->id ? strlen(v->id) + 1 : 0, tlen = v->tag ? strlen(v->tag) + 1 : 0;
	struct entry *e;

	if (nlen > plen || strcmp(path + plen - nlen, name) != 0)
		return NULL; /* name must end path */
	e = malloc(sizeof(*e) + plen + 1 + ilen + tlen);
	if (!e)
		return NULL;
	memset(e, 0, sizeof(*e));
	atomic_flag_clear(&e->said);
	e->n.parent = parent;
	e->n.e = *v;
	e->n.path = e->strings;
	memcpy(e->n.path, path, plen + 1);
	if (v->id)
		e->n.e.id = memcpy(e->strings + plen + 1, v->id, ilen);
	if (v->tag)
		e->n.e.tag = memcpy(e->strings + plen + 1 + ilen, v->tag, tlen);
	e->name = e->n.path + plen - nlen;
	return e;
}

static void link_entry(struct nodes *t, struct entry *e)
{
	htab_add(&t->ids, &e->by_id);
	htab_add(&t->names, &e->by_name);
}

int nodes_new(struct arctab *arcs, struct ns *ns, const struct ns_entry *root, struct nodes **out)
{
	struct nodes *t = calloc(1, sizeof(*t));
	struct entry *e = entry_new(FUSE_ROOT, "", "/", root);

	*out = NULL;
	if (!t || !e || htab_init(&t->ids, NBUCKETS, link_id_hash) < 0 ||
	    htab_init(&t->names, NBUCKETS, link_name_hash) < 0) {
		if (t) {
			htab_fini(&t->ids);
			htab_fini(&t->names);
		}
		free(t);
		free(e);
		return -ENOMEM;
	}
	t->arcs = arcs;
	t->ns = ns;
	t->root_dev = root->st.st_dev;
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
	struct htab_walk w;
	struct htab_link *l;

	if (!t)
		return;
	htab_walk_start(&t->ids, &w);
	while ((l = htab_walk_next(&w)))
		entry_free(t, htab_entry(l, struct entry, by_id));
	htab_fini(&t->ids);
	htab_fini(&t->names);
	pthread_mutex_destroy(&t->lock);
	free(t->devs);
	free(t);
}

int nodes_lookup(struct nodes *t, uint64_t parent, const char *name, const char *path,
		 const struct ns_entry *v, struct arc **arc, struct node **out)
{
	struct entry *e, *fresh = NULL;

	*out = NULL;
	for (;;) {
		pthread_mutex_lock(&t->lock);
		e = find_name(t, parent, name, v);
		if (e || fresh)
			break;
		/* Allocate outside the lock, then look again. */
		pthread_mutex_unlock(&t->lock);
		fresh = entry_new(parent, name, path, v);
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
	e = find_id(t, id);
	if (e)
		e->refs++;
	pthread_mutex_unlock(&t->lock);
	return e ? &e->n : NULL;
}

/* Unlinks e if nobody holds it any more; returns true if the caller must free it. */
static bool maybe_unlink(struct nodes *t, struct entry *e)
{
	if (e->refs > 0 || e->nlookup > 0)
		return false;
	htab_del(&t->ids, &e->by_id);
	htab_del(&t->names, &e->by_name);
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
	e = find_id(t, id);
	if (e && id != FUSE_ROOT) {
		e->nlookup = nlookup > e->nlookup ? 0 : e->nlookup - nlookup;
		dead = maybe_unlink(t, e);
	}
	pthread_mutex_unlock(&t->lock);
	if (dead)
		entry_free(t, e);
}

uint64_t nodes_ino(struct nodes *t, dev_t dev, ino_t ino)
{
	uint64_t shown = ino;
	size_t i;

	if (dev == t->root_dev || (uint64_t)ino >> DEV_SHIFT)
		return ino;
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->ndevs && t->devs[i] != dev; i++)
		;
	if (i == t->ndevs && i < (1u << (64 - DEV_SHIFT)) - 1) {
		if (t->ndevs == t->capdevs) {
			size_t cap = t->capdevs ? 2 * t->capdevs : 8;
			dev_t *p = realloc(t->devs, cap * sizeof(*p));

			if (p) {
				t->devs = p;
				t->capdevs = cap;
			}
		}
		if (t->ndevs < t->capdevs)
			t->devs[t->ndevs++] = dev;
	}
	if (i < t->ndevs)
		shown = (uint64_t)(i + 1) << DEV_SHIFT | ino;
	pthread_mutex_unlock(&t->lock);
	return shown;
}

size_t nodes_count(struct nodes *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = htab_count(&t->ids);
	pthread_mutex_unlock(&t->lock);
	return n;
}

ssize_t nodes_with_reader(struct nodes *t, const struct reader *r, uint64_t **ids)
{
	size_t n = 0, cap = 0;
	uint64_t *out = NULL;
	struct htab_walk w;
	struct htab_link *l;

	*ids = NULL;
	pthread_mutex_lock(&t->lock);
	htab_walk_start(&t->ids, &w);
	while ((l = htab_walk_next(&w))) {
		struct entry *e = htab_entry(l, struct entry, by_id);

		if (!e->n.arc || (r && arc_reader(e->n.arc) != r))
			continue;
		if (n == cap) {
			uint64_t *p;

			cap = cap ? cap * 2 : 8;
			p = realloc(out, cap * sizeof(*out));
			if (!p) {
				pthread_mutex_unlock(&t->lock);
				free(out);
				return -ENOMEM;
			}
			out = p;
		}
		out[n++] = e->n.id;
	}
	pthread_mutex_unlock(&t->lock);
	*ids = out;
	return (ssize_t)n;
}

bool nodes_say_once(struct node *n)
{
	return !atomic_flag_test_and_set(&((struct entry *)n)->said); /* n is the first member */
}
