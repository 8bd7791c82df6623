/* SPDX-License-Identifier: MIT */
#include "ns_local.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "beneath.h"
#include "indexer.h"
#include "ns.h"
#include "reader.h"
#include "src.h"
#include "srcid.h"
#include "tree.h"

struct ns_local {
	struct ns ns; /* first */
	struct tree *tree;
	char *root;
};

static struct ns_local *loc(void *ns)
{
	return ns;
}

static enum ns_kind kind_of(const struct tree_node *tn)
{
	if (tn->kind == TREE_ARCHIVE)
		return NS_ARCHIVE;
	if (S_ISDIR(tn->st.st_mode))
		return NS_DIR;
	if (S_ISREG(tn->st.st_mode))
		return NS_FILE;
	return S_ISLNK(tn->st.st_mode) ? NS_SYMLINK : NS_OTHER;
}

static int l_resolve(void *ns, const char *path, struct ns_entry *out)
{
	struct tree_node tn;
	int ret = tree_resolve(loc(ns)->tree, path, &tn);

	memset(out, 0, sizeof(*out));
	if (ret < 0)
		return ret;
	out->kind = kind_of(&tn);
	out->id = tn.rel; /* taken over */
	out->obj = tn.st.st_ino;
	out->st = tn.st;
	return 0;
}

/* The same object, and for a regular file (archive or plain) the same contents. */
static bool l_same(void *ns, const struct ns_entry *a, const struct ns_entry *b)
{
	(void)ns;
	if (a->kind != b->kind || !srcid_same_object(&a->st, &b->st))
		return false;
	return !S_ISREG(a->st.st_mode) || srcid_same(&a->st, &b->st);
}

static int l_state(void *ns, const struct ns_entry *e, struct zsrc *src, struct stat *st)
{
	if (src)
		return zsrc_stat(src, st);
	if (beneath_lstat(tree_root_fd(loc(ns)->tree), e->id, st) < 0 ||
	    !srcid_same_object(st, &e->st))
		return -ENOENT;
	return 0;
}

static int l_open(void *ns, const struct ns_entry *e, struct zsrc **out, bool *same)
{
	struct stat now;
	int fd = beneath_open_file(tree_root_fd(loc(ns)->tree), e->id, &e->st, &now);

	*out = NULL;
	*same = false;
	if (fd < 0)
		return fd;
	*same = srcid_same(&now, &e->st);
	return zsrc_local(fd, out);
}

static int l_opendir(void *ns, const char *path, struct ns_dir **out)
{
	return tree_opendir(loc(ns)->tree, path, (struct tree_dir **)out);
}

static size_t l_dir_count(const struct ns_dir *d)
{
	return tree_dir_count((const struct tree_dir *)d);
}

static const char *l_dir_entry(const struct ns_dir *d, size_t i, struct stat *st)
{
	return tree_dir_entry((const struct tree_dir *)d, i, st);
}

static void l_closedir(void *ns, struct ns_dir *d)
{
	tree_closedir(loc(ns)->tree, (struct tree_dir *)d);
}

static ssize_t l_readlink(void *ns, const struct ns_entry *e, char *buf, size_t len)
{
	return beneath_readlink(tree_root_fd(loc(ns)->tree), e->id, buf, len);
}

static int l_statfs(void *ns, struct statvfs *sv)
{
	return fstatvfs(tree_root_fd(loc(ns)->tree), sv) == 0 ? 0 : -errno;
}

static void l_name(void *ns, const struct ns_entry *e, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", loc(ns)->root, e->id);
}

static void l_source(void *ns, const struct ns_entry *e, char *buf, size_t len)
{
	(void)ns;
	snprintf(buf, len, "%s", e->id);
}

/* Looked up beneath the root's descriptor, never through the mount (MNT may be SRC). */
static bool l_still_named(void *ns, const struct reader *r)
{
	const char *name = reader_name(r), *root = loc(ns)->root;
	const struct stat *was = reader_stat(r);
	size_t n = strlen(root);
	struct stat now;

	if (strncmp(name, root, n) != 0 || name[n] != '/')
		return true; /* not ours to judge: as if still named */
	return beneath_lstat(tree_root_fd(loc(ns)->tree), name + n + 1, &now) == 0 &&
	       now.st_dev == was->st_dev && now.st_ino == was->st_ino;
}

static size_t l_stats(void *ns, char *out, size_t len)
{
	struct tree_stats ts;
	int n;

	tree_get_stats(loc(ns)->tree, &ts);
	n = snprintf(out, len,
		     "listings=%zu\nlisting_bytes=%zu\nlisting_budget=%zu\nlisting_rebuilds=%llu\n",
		     ts.listings, ts.list_bytes, ts.list_budget, (unsigned long long)ts.rebuilds);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

static int l_index_start(void *ns, struct arctab *arcs, struct zmctx *zm, struct pool *pool,
			 unsigned jobs, struct indexer **out)
{
	return indexer_start(arcs, zm, tree_root_fd(loc(ns)->tree), pool, jobs, out);
}

static void l_bind(void *ns, struct arctab *arcs)
{
	tree_set_arcs(loc(ns)->tree, arcs);
}

static void l_free(void *ns)
{
	tree_free(loc(ns)->tree);
	free(loc(ns)->root);
	free(ns);
}

static const struct ns_ops local_ops = {
	.resolve = l_resolve,
	.same = l_same,
	.state = l_state,
	.open = l_open,
	.opendir = l_opendir,
	.dir_count = l_dir_count,
	.dir_entry = l_dir_entry,
	.closedir = l_closedir,
	.readlink = l_readlink,
	.statfs = l_statfs,
	.name = l_name,
	.source = l_source,
	.still_named = l_still_named,
	.stats = l_stats,
	.index_start = l_index_start,
	.bind = l_bind,
	.free = l_free,
	.remote = false,
	.probed = true,
};

int ns_local_new(const char *root, double ttl, struct ns **out)
{
	struct ns_local *l = calloc(1, sizeof(*l));
	int ret;

	*out = NULL;
	if (!l || !(l->root = strdup(root))) {
		free(l);
		return -ENOMEM;
	}
	ret = tree_new(root, NULL, &l->tree);
	if (ret < 0) {
		free(l->root);
		free(l);
		return ret;
	}
	tree_set_limits(l->tree, 0, ttl);
	l->ns.ops = &local_ops;
	*out = &l->ns;
	return 0;
}
