/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_NS_LOCAL_H
#define ZMOUNT_NS_LOCAL_H

/*
 * A local directory as a namespace (ns.h): names by the visible tree
 * (tree.h), bytes by beneath_open_file as local sources, so no symlink is
 * followed and no FIFO or device is ever opened.  Entries' ids are paths
 * relative to the root; their version is srcid_same; their tag is NULL.
 * Readers are named by absolute path.  The background walk is indexer.h.
 */

struct ns;

/*
 * Opens directory root (an absolute, canonical path, copied).  ttl is the
 * mount's timeout (tree_set_limits).  Returns 0 and *out, or -errno from
 * opening it, or -ENOMEM.
 */
int ns_local_new(const char *root, double ttl, struct ns **out);

#endif
