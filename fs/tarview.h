/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_TARVIEW_H
#define ZMOUNT_TARVIEW_H

/*
 * The directory tree a tar's member table shows (tartab.h): every member
 * name and every directory its names imply, each path once.  Where a name
 * repeats, the last member wins, as it does for tar -x.  Node 0 is the
 * archive's root ("").  Paths point into the table's string pool (a
 * directory only implied by a longer name is a prefix of that name, so
 * paths are not NUL-terminated: use len).
 *
 * Memory: 24 bytes per node plus 8 per node for the child lists, besides
 * the table; building needs 24 bytes per name component (the nodes before
 * merging, kept) and 4 more per node briefly: tarview_cost, at most 36
 * bytes per member plus 36 per '/' in the names.
 *
 * Threads: built by one thread; a finished view is read from any thread.
 */

#include <stddef.h>
#include <stdint.h>

#include "tartab.h"

struct tarview_node {
	const char *p; /* the path inside the archive, len bytes */
	uint32_t len;
	int32_t mem;	 /* member index in the table, -1: an implied directory */
	uint32_t parent; /* node index; the root is its own parent */
	uint32_t name;	 /* offset of the last component in p */
};

struct tarview {
	struct tarview_node *v;
	size_t n;
	uint32_t *kids; /* children of node k: kids[kid0[k] .. kid0[k + 1]), in path order */
	uint32_t *kid0; /* n + 1 entries */
};

/* Builds *out from t (borrowed: it must outlive the view).  Returns 0 or -ENOMEM. */
int tarview_build(const struct tartab *t, struct tarview *out);
void tarview_free(struct tarview *v);

/* The most bytes tarview_build allocates for t, counted before it is called (the cap). */
size_t tarview_cost(const struct tartab *t);

/* The node whose path is path (len bytes, "" for the root), or -1. */
long tarview_find(const struct tarview *v, const char *path, size_t len);

/* The bytes of node k shown as a directory, a file or a link: the member whose data it
 * shows (a hard link's target), or NULL for an implied directory or a dangling link. */
const struct tar_member *tarview_data(const struct tartab *t, const struct tarview *v, size_t k);

#endif
