/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_PARK_H
#define ZMOUNT_PARK_H

/*
 * The parked list of one context (zmctx_int.h): decoders stopped inside a
 * streamed unit, kept for their reader's next sequential read.  Internal
 * to index/ (udec.c parks decoders; the list does not know what it holds).
 *
 * Each owner (a reader) has one slot and so at most one item parked.
 * What is parked is charged to the context's cache (bcache_charge), and
 * the list holds at most 1/PARK_SHARE of that cache's budget, but always
 * at least the item parked last, so a sequential reader of a huge Block
 * never decodes it twice: parking one more closes as many of the least
 * recently parked others as that takes.  An owner with no descriptor
 * parks nothing (reader_detach empties its slot), so a decoder never
 * outlives the descriptor it was reading.
 *
 * Locking: one mutex per list, held only to link and unlink, never while
 * an item is closed, the cache is charged, or anything decodes.  Every
 * function may be called from any thread at once, except park_init and
 * park_drain (one thread, no other call running), and except that the
 * calls for one slot are the slot's owner's to order (a reader calls them
 * with its stream lock held, or when nobody reads it).
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bcache;
struct park_slot;

/* The list holds at most 1/PARK_SHARE of the cache's budget (readahead.c leaves it room). */
#define PARK_SHARE 2

/* Take any item of the slot, whatever its key (park_take). */
#define PARK_ANY SIZE_MAX

/*
 * Embedded in what is parked.  The caller sets close, key, pos and cost
 * before park_add, and must not change them while it is parked; the list
 * owns the rest.
 */
struct park_node {
	void (*close)(struct park_node *n); /* frees the item n is in (an eviction, a drain) */
	size_t key;			    /* the owner's tag: the map entry a decoder is in */
	uint64_t pos;			    /* where it stands (a parked decoder does not move) */
	size_t cost;			    /* bytes it holds: charged to the cache while parked */
	/* Owned by the list, protected by park.lock while parked. */
	struct park_node *prev, *next; /* next also chains evicted nodes on their way to close */
	struct park_slot *slot;
};

/*
 * An owner's place on the list: its one parked node, or NULL.  Zeroed:
 * empty.  It must stay valid while it holds a node (take it back first).
 */
struct park_slot {
	struct park_node *node; /* protected by park.lock */
};

struct park {
	pthread_mutex_t lock;
	struct park_node *head, *tail; /* most recently parked first; protected by lock */
	size_t total;		       /* bytes parked; protected by lock */
	struct bcache *cache;	       /* borrowed: charged for them, its budget bounds them */
};

/* An empty list charging cache (borrowed; it must outlive the list). */
void park_init(struct park *p, struct bcache *cache);

/*
 * Closes every parked node (n->close), gives back its charge, empties
 * every slot, and destroys the lock: the list's last call.  Accepts a
 * list that was never parked on.
 */
void park_drain(struct park *p);

/*
 * Parks n (taken over: the list closes it, unless its owner takes it back)
 * in slot s, most recently parked, and charges n->cost to the cache.
 * Closes the node s held before, and then the least recently parked nodes
 * of any slot while the list would hold more than its share with n, the
 * oldest first; n itself is always kept.  The nodes closed are unlinked
 * under the lock and closed after it is let go, each charge given back
 * as it is closed; then n is charged.  From the moment the lock is let
 * go another thread's park_add may evict and close n: the caller (and
 * park_add itself) must not touch n after that.
 */
void park_add(struct park *p, struct park_slot *s, struct park_node *n);

/*
 * Takes slot s's node off the list if its key is key (any key if
 * PARK_ANY) and gives its charge back.  Returns the node, now the
 * caller's to close, or NULL (nothing parked there, or at another key:
 * left parked).  Only s's own node, never another slot's.
 */
struct park_node *park_take(struct park *p, struct park_slot *s, size_t key);

/*
 * Whether slot s has a node parked, and if so its key and pos: a snapshot
 * (another thread may take it as soon as this returns, but only s's owner
 * parks into s).
 */
bool park_peek(struct park *p, const struct park_slot *s, size_t *key, uint64_t *pos);

#endif
