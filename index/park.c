/* SPDX-License-Identifier: MIT */
/*
 * How it works: a doubly linked list, most recently parked at the head,
 * with the bytes it holds summed.  Parking links at the head; making room
 * unlinks from the tail, the least recently parked, one step per node
 * closed.  Nodes unlinked to be closed are chained through their own next
 * pointer (off the list it is free), so closing them, which may take a
 * while, happens after the lock is let go.
 */
#include "park.h"

#include "bcache.h"

void park_init(struct park *p, struct bcache *cache)
{
	pthread_mutex_init(&p->lock, NULL);
	p->head = p->tail = NULL;
	p->total = 0;
	p->cache = cache;
}

/* With p->lock held: takes n off the list and out of its slot. */
static void unlink_locked(struct park *p, struct park_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		p->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		p->tail = n->prev;
	n->prev = n->next = NULL;
	n->slot->node = NULL;
	n->slot = NULL;
	p->total -= n->cost;
}

/* With p->lock held: unlinks n onto the chain of those to close. */
static struct park_node *evict_locked(struct park *p, struct park_node *n,
				      struct park_node *victims)
{
	unlink_locked(p, n);
	n->next = victims;
	return n;
}

/* Without the lock: closes the chained nodes, giving back each one's charge. */
static void close_all(struct park *p, struct park_node *victims)
{
	while (victims) {
		struct park_node *v = victims;
		size_t cost = v->cost;

		victims = v->next;
		v->close(v);
		bcache_uncharge(p->cache, cost);
	}
}

void park_add(struct park *p, struct park_slot *s, struct park_node *n)
{
	size_t share = bcache_budget(p->cache) / PARK_SHARE;
	size_t cost = n->cost; /* once n is on the list, another reader may evict and free it */
	struct park_node *victims = NULL;

	pthread_mutex_lock(&p->lock);
	if (s->node)
		victims = evict_locked(p, s->node, victims);
	while (p->tail && p->total + n->cost > share)
		victims = evict_locked(p, p->tail, victims);
	n->slot = s;
	s->node = n;
	n->next = p->head;
	n->prev = NULL;
	if (p->head)
		p->head->prev = n;
	p->head = n;
	if (!p->tail)
		p->tail = n;
	p->total += n->cost;
	pthread_mutex_unlock(&p->lock);
	close_all(p, victims);
	bcache_charge(p->cache, cost);
}

struct park_node *park_take(struct park *p, struct park_slot *s, size_t key)
{
	struct park_node *n = NULL;

	pthread_mutex_lock(&p->lock);
	if (s->node && (key == PARK_ANY || s->node->key == key)) {
		n = s->node;
		unlink_locked(p, n);
	}
	pthread_mutex_unlock(&p->lock);
	if (n)
		bcache_uncharge(p->cache, n->cost);
	return n;
}

bool park_peek(struct park *p, const struct park_slot *s, size_t *key, uint64_t *pos)
{
	bool parked;

	pthread_mutex_lock(&p->lock);
	parked = s->node != NULL;
	if (parked) {
		*key = s->node->key;
		*pos = s->node->pos;
	}
	pthread_mutex_unlock(&p->lock);
	return parked;
}

void park_drain(struct park *p)
{
	struct park_node *victims = NULL;

	pthread_mutex_lock(&p->lock);
	while (p->tail)
		victims = evict_locked(p, p->tail, victims);
	pthread_mutex_unlock(&p->lock);
	close_all(p, victims);
	pthread_mutex_destroy(&p->lock);
}
