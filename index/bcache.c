/* SPDX-License-Identifier: MIT */
/*
 * How it works: a hash table (htab.h) finds entries by (id, no); a doubly
 * linked list orders the ready ones from most to least recently used.  One
 * mutex guards both and the counters; it is never held while a chunk is
 * decoded or a large buffer is allocated or freed.  Waiters sleep on one
 * condition variable that every finished fill broadcasts: fills are
 * milliseconds long, so a shared wake-up costs little and keeps entries small.
 *
 * Room: a new entry is admitted when, after evicting what is unreferenced,
 * it fits the budget, or when nothing else is left in the table (so one
 * unit larger than the whole budget can still be served, alone).  Otherwise
 * bcache_get waits for references to go (room_cv), and the non-waiting
 * calls say "no room".  Every entry is charged its buffer plus
 * BCACHE_ENT_COST, so a million one-byte chunks cost what they really do.
 */
#include "bcache.h"
#include "htab.h"
#include "hugemem.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

enum ent_state { ENT_FILLING, ENT_READY, ENT_FAILED };

struct bcache_ent {
	uint64_t id, no;
	unsigned char *data;
	size_t size;
	size_t cap; /* bytes allocated at data */
	/* All below protected by bcache.lock. */
	int refs;
	int err; /* for ENT_FAILED */
	enum ent_state state;
	bool in_table;
	bool read_through;		/* demoted (bcache_demote) and not hit since */
	struct htab_link link;		/* in bcache.ents while in_table */
	struct bcache_ent *fnext;	/* in a chain of entries to free (evict) */
	struct bcache_ent *prev, *next; /* LRU list, ready entries only */
};

/* The entry, malloc's header and rounding, and its hash bucket (at most one per entry). */
_Static_assert(sizeof(struct bcache_ent) + 16 + sizeof(struct htab_link *) <= BCACHE_ENT_COST,
	       "BCACHE_ENT_COST");

struct bcache {
	pthread_mutex_t lock;
	pthread_cond_t filled;
	pthread_cond_t room; /* a reference went, or bytes left the table */
	/* All below protected by lock. */
	struct htab ents; /* struct bcache_ent by (id, no) */
	struct bcache_ent *mru, *lru;
	/*
	 * The entry demoted last (bcache_demote) while it is still where that
	 * put it; NULL once it leaves that place (lru_unlink clears it).
	 */
	struct bcache_ent *demoted;
	struct bcache_stats st;
};

/*
 * Bytes of parked decoders (bcache_charge) beyond half the budget, with the
 * lock held.  They are not counted when deciding what to evict or admit:
 * one decoder is always parked, however small the budget (xz -6 needs
 * 9 MiB), and were it counted in full, a cache smaller than it would evict
 * every unit as soon as its reader let go of it, the slice a sequential
 * reader is halfway through included; the reader would then decode the
 * Block again from its start for the rest of that slice.
 */
static size_t excess(const struct bcache *c)
{
	size_t half = c->st.budget / 2;

	return c->st.charged > half ? c->st.charged - half : 0;
}

/* What an entry costs the budget: its buffer, itself, malloc's headers, its hash slot. */
static size_t charge(size_t cap)
{
	return cap + BCACHE_ENT_COST;
}

static size_t ent_hash(uint64_t id, uint64_t no)
{
	return (size_t)((id * 0x9E3779B97F4A7C15ull) ^ (no + 0x632BE59BD9B4E019ull + (id << 6)));
}

static size_t link_hash(const struct htab_link *l)
{
	const struct bcache_ent *e = htab_entry(l, struct bcache_ent, link);

	return ent_hash(e->id, e->no);
}

int bcache_new(size_t budget, struct bcache **out)
{
	struct bcache *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return -ENOMEM;
	if (htab_init(&c->ents, 1024, link_hash) < 0) {
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->filled, NULL);
	pthread_cond_init(&c->room, NULL);
	c->st.budget = budget;
	*out = c;
	return 0;
}

/*
 * A buffer of BCACHE_HUGE bytes or more is hugemem's: a cold read fills
 * fresh buffers, and 8 MiB of fresh 4 KiB pages took 37 ms to fill here,
 * 20 ms as huge pages, 0.5 ms when warm (doc/results/benchmarks.md).  Returns
 * NULL when out of memory.
 */
static void *buf_alloc(size_t n)
{
	if (n < BCACHE_HUGE)
		return malloc(n ? n : 1);
	return hugemem_alloc(n);
}

/* Frees a buffer of buf_alloc(cap). */
static void buf_free(void *p, size_t cap)
{
	if (cap >= BCACHE_HUGE)
		hugemem_free(p, cap);
	else
		free(p);
}

static void ent_free(struct bcache_ent *e)
{
	buf_free(e->data, e->cap);
	free(e);
}

void bcache_free(struct bcache *c)
{
	struct htab_walk w;
	struct htab_link *l;

	if (!c)
		return;
	htab_walk_start(&c->ents, &w);
	while ((l = htab_walk_next(&w)))
		ent_free(htab_entry(l, struct bcache_ent, link));
	htab_fini(&c->ents);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->filled);
	pthread_cond_destroy(&c->room);
	free(c);
}

static struct bcache_ent *find(struct bcache *c, uint64_t id, uint64_t no)
{
	for (struct htab_link *l = htab_bucket(&c->ents, ent_hash(id, no)); l; l = l->next) {
		struct bcache_ent *e = htab_entry(l, struct bcache_ent, link);

		if (e->id == id && e->no == no)
			return e;
	}
	return NULL;
}

static void lru_unlink(struct bcache *c, struct bcache_ent *e)
{
	if (c->demoted == e) /* the hint must never outlive e's place in the list */
		c->demoted = NULL;
	if (e->prev)
		e->prev->next = e->next;
	else
		c->mru = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->lru = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct bcache *c, struct bcache_ent *e)
{
	e->prev = NULL;
	e->next = c->mru;
	if (c->mru)
		c->mru->prev = e;
	c->mru = e;
	if (!c->lru)
		c->lru = e;
}

/* Takes e out of the table (and the LRU list if ready); its bytes leave the budget. */
static void unlink_ent(struct bcache *c, struct bcache_ent *e)
{
	htab_del(&c->ents, &e->link);
	if (e->state == ENT_READY)
		lru_unlink(c, e);
	e->in_table = false;
	c->st.used -= charge(e->cap);
	c->st.entries--;
	pthread_cond_broadcast(&c->room);
}

/*
 * Evicts unreferenced ready entries from the LRU end until `need` more bytes
 * fit the budget.  Returns them chained through fnext, to be freed after the
 * lock is dropped.
 */
static struct bcache_ent *evict(struct bcache *c, size_t need)
{
	struct bcache_ent *victims = NULL, *e = c->lru;

	while (e && c->st.used - excess(c) + need > c->st.budget) {
		struct bcache_ent *prev = e->prev;

		if (e->refs == 0) {
			unlink_ent(c, e);
			e->fnext = victims;
			victims = e;
			c->st.evictions++;
		}
		e = prev;
	}
	return victims;
}

/*
 * With the lock held: whether `need` bytes may be admitted now (see "Room"
 * above).  "Otherwise empty" means no entries and no reservations: charges
 * alone must not shut every reader out, since no put could ever make room
 * for them; reservations are given back when their pass ends (which wakes
 * room waiters), and must not let a unit in beside them over the budget.
 */
static bool has_room(const struct bcache *c, size_t need)
{
	return c->st.used - excess(c) + need <= c->st.budget ||
	       (c->st.entries == 0 && c->st.reserved == 0);
}

static void free_chain(struct bcache_ent *e)
{
	while (e) {
		struct bcache_ent *next = e->fnext;

		ent_free(e);
		e = next;
	}
}

/* Inserts a new in-flight entry; called with the lock held. */
static struct bcache_ent *insert(struct bcache *c, uint64_t id, uint64_t no, size_t size)
{
	struct bcache_ent *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->id = id;
	e->no = no;
	e->size = size;
	e->cap = size;
	e->refs = 1;
	e->state = ENT_FILLING;
	e->in_table = true;
	htab_add(&c->ents, &e->link);
	c->st.entries++;
	c->st.used += charge(size);
	if (c->st.used > c->st.peak)
		c->st.peak = c->st.used;
	c->st.misses++;
	return e;
}

/* A hit on ready entry e, with the lock held: one more reference, most recently used. */
static struct bcache_ent *hit(struct bcache *c, struct bcache_ent *e)
{
	e->refs++;
	c->st.hits++;
	e->read_through = false;
	lru_unlink(c, e);
	lru_push(c, e);
	return e;
}

/*
 * Gives e the buffer of a victim about its size, if there is one, with the
 * lock held.  A full cache thus trades buffers instead of unmapping one
 * and mapping another, which would cost a page fault per 4 KiB filled.
 */
static void reuse(struct bcache *c, struct bcache_ent *e, struct bcache_ent *victims)
{
	for (struct bcache_ent *v = victims; v; v = v->fnext) {
		if (v->data && v->cap >= e->size && v->cap - e->size <= e->size / 8) {
			c->st.used += v->cap - e->cap;
			e->data = v->data;
			e->cap = v->cap;
			v->data = NULL;
			return;
		}
	}
}

/*
 * Gives e, which found no victim's buffer, the buffer of the entry at the
 * evicting end if a sequential reader has read that one through (demoted)
 * and it fits as in reuse, with the lock held; the entry goes on *victims.
 * Though the budget has room: a fresh mapping costs a page fault and a
 * zeroed page per 4 KiB, or per 2 MiB huge page, and on the VMs we measure
 * on a fresh page also costs the host's fault.  That was half of the
 * daemon's CPU on a later cat of a one-frame .zst at cache_size=256M
 * (doc/results/zseq-2026-12-04.md), for units whose bytes the kernel's page
 * cache holds now.  A reader in order thus cycles through a few buffers.
 */
static void recycle(struct bcache *c, struct bcache_ent *e, struct bcache_ent **victims)
{
	struct bcache_ent *v = c->lru;

	if (!v || !v->read_through || v->refs > 0 || v->cap < e->size ||
	    v->cap - e->size > e->size / 8)
		return;
	unlink_ent(c, v);
	c->st.evictions++;
	v->fnext = *victims;
	*victims = v;
	reuse(c, e, v);
}

/*
 * A miss, entered with the lock held, which it drops.  Makes room by
 * evicting, or gives up (returns 0) if there is none.  Inserts an in-flight
 * entry, reusing a victim's buffer if one fits, else allocates its buffer
 * outside the lock.  Returns 1 and *out, 0, or -ENOMEM.
 */
static int miss(struct bcache *c, uint64_t id, uint64_t no, size_t size, struct bcache_ent **out)
{
	struct bcache_ent *victims = evict(c, charge(size)), *e = NULL;
	bool room = has_room(c, charge(size));

	if (room) {
		e = insert(c, id, no, size);
		if (e)
			reuse(c, e, victims);
		if (e && !e->data)
			recycle(c, e, &victims);
	}
	pthread_mutex_unlock(&c->lock);
	free_chain(victims);
	if (!e)
		return room ? -ENOMEM : 0;
	if (!e->data)
		e->data = buf_alloc(e->size);
	if (!e->data) {
		bcache_done(c, e, -ENOMEM);
		return -ENOMEM;
	}
	*out = e;
	return 1;
}

/* Waits, with the lock held, until has_room(need) after evicting; frees victims unlocked. */
static void wait_room(struct bcache *c, size_t need)
{
	for (;;) {
		struct bcache_ent *victims = evict(c, need);

		if (victims) {
			pthread_mutex_unlock(&c->lock);
			free_chain(victims);
			pthread_mutex_lock(&c->lock);
			continue;
		}
		if (has_room(c, need))
			return;
		c->st.room_waits++;
		pthread_cond_wait(&c->room, &c->lock);
	}
}

int bcache_get(struct bcache *c, uint64_t id, uint64_t no, size_t size, bool wait,
	       struct bcache_ent **out)
{
	struct bcache_ent *e;
	int ret;

	*out = NULL;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		e = find(c, id, no);
		if (e)
			break;
		/*
		 * Evict and insert in one go, so that the new entry can take a
		 * victim's buffer; wait only if that finds no room.
		 */
		ret = miss(c, id, no, size, out);
		if (ret != 0 || !wait)
			return ret == 0 ? -EAGAIN : ret;
		/* The table may change while we wait: look the chunk up again after. */
		pthread_mutex_lock(&c->lock);
		wait_room(c, charge(size));
	}
	if (e && e->state == ENT_FILLING) {
		/* Our reference keeps it alive even if it leaves the table meanwhile. */
		e->refs++;
		c->st.waits++;
		while (e->state == ENT_FILLING)
			pthread_cond_wait(&c->filled, &c->lock);
		if (e->state == ENT_FAILED) {
			int err = e->err;
			bool dead = --e->refs == 0;

			pthread_mutex_unlock(&c->lock);
			if (dead)
				ent_free(e);
			return err;
		}
		c->st.hits++; /* served without decoding, like any hit */
		if (e->in_table) {
			lru_unlink(c, e);
			lru_push(c, e);
		}
		pthread_mutex_unlock(&c->lock);
		*out = e;
		return 0;
	}
	*out = hit(c, e);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void bcache_wait_room(struct bcache *c, size_t size)
{
	pthread_mutex_lock(&c->lock);
	wait_room(c, charge(size));
	pthread_mutex_unlock(&c->lock);
}

void bcache_wait_fill(struct bcache *c, uint64_t id, uint64_t no)
{
	struct bcache_ent *e;

	pthread_mutex_lock(&c->lock);
	e = find(c, id, no);
	if (!e || e->state != ENT_FILLING) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	e->refs++; /* keeps it alive if it leaves the table meanwhile */
	while (e->state == ENT_FILLING)
		pthread_cond_wait(&c->filled, &c->lock);
	pthread_mutex_unlock(&c->lock);
	bcache_put(c, e);
}

int bcache_lookup(struct bcache *c, uint64_t id, uint64_t no, struct bcache_ent **out)
{
	struct bcache_ent *e;

	pthread_mutex_lock(&c->lock);
	e = find(c, id, no);
	e = e && e->state == ENT_READY ? hit(c, e) : NULL;
	pthread_mutex_unlock(&c->lock);
	*out = e;
	return e ? 0 : -ENOENT;
}

bool bcache_has(struct bcache *c, uint64_t id, uint64_t no)
{
	struct bcache_ent *e;
	bool ready;

	pthread_mutex_lock(&c->lock);
	e = find(c, id, no);
	ready = e && e->state == ENT_READY;
	pthread_mutex_unlock(&c->lock);
	return ready;
}

int bcache_claim(struct bcache *c, uint64_t id, uint64_t no, size_t size, struct bcache_ent **out)
{
	*out = NULL;
	pthread_mutex_lock(&c->lock);
	if (find(c, id, no)) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	return miss(c, id, no, size, out);
}

int bcache_claim_spare(struct bcache *c, uint64_t id, uint64_t no, size_t size,
		       struct bcache_ent **out)
{
	*out = NULL;
	pthread_mutex_lock(&c->lock);
	if (find(c, id, no) || c->st.used - excess(c) + charge(size) > c->st.budget) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	return miss(c, id, no, size, out);
}

void bcache_done(struct bcache *c, struct bcache_ent *e, int err)
{
	bool dead = false;

	pthread_mutex_lock(&c->lock);
	if (err == 0) {
		e->state = ENT_READY;
		if (e->in_table) /* else dropped while in flight: freed at the last put */
			lru_push(c, e);
	} else {
		if (e->in_table)
			unlink_ent(c, e);
		e->state = ENT_FAILED;
		e->err = err;
		dead = --e->refs == 0;
	}
	pthread_cond_broadcast(&c->filled);
	pthread_mutex_unlock(&c->lock);
	if (dead)
		ent_free(e);
}

void bcache_demote(struct bcache *c, uint64_t id, uint64_t no)
{
	struct bcache_ent *e;

	pthread_mutex_lock(&c->lock);
	e = find(c, id, no);
	if (e && e->state == ENT_READY) {
		/*
		 * Behind the entries demoted before it, not at the very end:
		 * those were finished earlier and go first.
		 */
		struct bcache_ent *at = c->demoted != e ? c->demoted : NULL;

		lru_unlink(c, e);
		if (at) { /* insert e just before `at` (towards the MRU end) */
			e->next = at;
			e->prev = at->prev;
			if (at->prev)
				at->prev->next = e;
			else
				c->mru = e;
			at->prev = e;
		} else { /* append at the LRU end */
			e->prev = c->lru;
			e->next = NULL;
			if (c->lru)
				c->lru->next = e;
			else
				c->mru = e;
			c->lru = e;
		}
		c->demoted = e;
		e->read_through = true;
	}
	pthread_mutex_unlock(&c->lock);
}

void bcache_put(struct bcache *c, struct bcache_ent *e)
{
	struct bcache_ent *victims = NULL;
	bool dead;

	if (!e)
		return;
	pthread_mutex_lock(&c->lock);
	dead = --e->refs == 0 && !e->in_table;
	if (e->refs == 0) {
		if (c->st.used - excess(c) > c->st.budget)
			victims = evict(c, 0);
		pthread_cond_broadcast(&c->room);
	}
	pthread_mutex_unlock(&c->lock);
	if (dead)
		ent_free(e);
	free_chain(victims);
}

void bcache_drop(struct bcache *c, uint64_t id)
{
	struct bcache_ent *victims = NULL;
	struct htab_walk w;
	struct htab_link *l;

	pthread_mutex_lock(&c->lock);
	htab_walk_start(&c->ents, &w);
	while ((l = htab_walk_next(&w))) {
		struct bcache_ent *e = htab_entry(l, struct bcache_ent, link);

		if (e->id != id)
			continue;
		unlink_ent(c, e); /* an entry in flight is freed at its filler's put */
		if (e->refs == 0) {
			e->fnext = victims;
			victims = e;
		}
	}
	pthread_mutex_unlock(&c->lock);
	free_chain(victims);
}

void bcache_charge(struct bcache *c, size_t bytes)
{
	struct bcache_ent *victims;
	size_t half, before, after;

	pthread_mutex_lock(&c->lock);
	/* Only the part within half the budget counts (excess()). */
	half = c->st.budget / 2;
	before = c->st.charged < half ? c->st.charged : half;
	after = bytes < half - before ? before + bytes : half;
	victims = evict(c, after - before);
	c->st.used += bytes;
	c->st.charged += bytes;
	if (c->st.used > c->st.peak)
		c->st.peak = c->st.used;
	pthread_mutex_unlock(&c->lock);
	free_chain(victims);
}

void bcache_uncharge(struct bcache *c, size_t bytes)
{
	pthread_mutex_lock(&c->lock);
	c->st.used -= bytes;
	c->st.charged -= bytes;
	pthread_cond_broadcast(&c->room);
	pthread_mutex_unlock(&c->lock);
}

static int reserve(struct bcache *c, size_t bytes, bool may_evict)
{
	struct bcache_ent *victims = NULL;
	bool room;

	pthread_mutex_lock(&c->lock);
	if (may_evict)
		victims = evict(c, bytes);
	room = c->st.used - excess(c) + bytes <= c->st.budget;
	if (room) {
		c->st.used += bytes;
		c->st.reserved += bytes;
		if (c->st.used > c->st.peak)
			c->st.peak = c->st.used;
	}
	pthread_mutex_unlock(&c->lock);
	free_chain(victims);
	return room ? 0 : -EAGAIN;
}

int bcache_reserve(struct bcache *c, size_t bytes)
{
	return reserve(c, bytes, true);
}

int bcache_reserve_spare(struct bcache *c, size_t bytes)
{
	return reserve(c, bytes, false);
}

void bcache_unreserve(struct bcache *c, size_t bytes)
{
	pthread_mutex_lock(&c->lock);
	c->st.used -= bytes;
	c->st.reserved -= bytes;
	pthread_cond_broadcast(&c->room);
	pthread_mutex_unlock(&c->lock);
}

void *bcache_buf_alloc(size_t cap)
{
	return buf_alloc(cap);
}

void bcache_buf_free(void *p, size_t cap)
{
	buf_free(p, cap);
}

bool bcache_adopt(struct bcache *c, uint64_t id, uint64_t no, void *buf, size_t size, size_t cap)
{
	struct bcache_ent *e;

	pthread_mutex_lock(&c->lock);
	if (find(c, id, no) || !(e = insert(c, id, no, size))) {
		pthread_mutex_unlock(&c->lock);
		return false;
	}
	/* insert counted a miss and charge(size): the reservation becomes the entry */
	c->st.misses--;
	c->st.used -= charge(size);
	c->st.reserved -= charge(cap);
	e->data = buf;
	e->cap = cap;
	e->refs = 0;
	e->state = ENT_READY;
	lru_push(c, e);
	pthread_mutex_unlock(&c->lock);
	return true;
}

size_t bcache_budget(const struct bcache *c)
{
	return c->st.budget; /* fixed at bcache_new */
}

void *bcache_buf(struct bcache_ent *e)
{
	return e->data;
}

size_t bcache_size(const struct bcache_ent *e)
{
	return e->size;
}

void bcache_stats(struct bcache *c, struct bcache_stats *st)
{
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->lock);
}
