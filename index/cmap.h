/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_CMAP_H
#define ZMOUNT_CMAP_H

/*
 * The chunk map of one archive: where each cache unit ("chunk") starts in
 * the uncompressed data.  Chunk k covers [start[k], start[k + 1]); start[n]
 * is the total size.  Chunks are never empty.  Immutable once built, so any
 * thread may search it without a lock.
 */

#include <stddef.h>
#include <stdint.h>

struct cmap {
	size_t n;	 /* number of chunks */
	uint64_t *start; /* n + 1 ascending offsets, start[0] == 0 */
};

/*
 * Makes room for up to max chunks.  Returns 0, or -ENOMEM (m is then empty).
 * Append with cmap_add, in ascending order, then close with cmap_end.
 */
int cmap_init(struct cmap *m, size_t max);

/* Adds a chunk starting at off; a repeat of the previous start is ignored (no empty chunks). */
void cmap_add(struct cmap *m, uint64_t off);

/* Closes the map at total size.  Drops a last chunk that would be empty. */
void cmap_end(struct cmap *m, uint64_t total);

/* Returns the chunk holding byte off.  off must be below cmap_size(m). */
size_t cmap_find(const struct cmap *m, uint64_t off);

static inline uint64_t cmap_size(const struct cmap *m)
{
	return m->start ? m->start[m->n] : 0;
}

static inline uint64_t cmap_len(const struct cmap *m, size_t k)
{
	return m->start[k + 1] - m->start[k];
}

/* Frees the offsets.  Accepts an empty or never-initialised (zeroed) map. */
void cmap_free(struct cmap *m);

#endif
