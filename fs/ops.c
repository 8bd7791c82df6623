/* SPDX-License-Identifier: MIT */
#include "ops.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "arctab.h"
#include "bcache.h"
#include "reader.h"
#include "tree.h"

#define XATTR_STATS "user.zmount.stats"
#define XATTR_INFO "user.zmount.info"

/* An open file: an archive's reader, or a plain source file's fd. */
struct handle {
	struct arc *arc;
	int fd;
};

static struct ops_ctx *ctx(void)
{
	return fuse_get_context()->private_data;
}

static struct handle *handle_of(const struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	struct ops_ctx *c = ctx();

	cfg->use_ino = 1;
	cfg->nullpath_ok = 1;
	cfg->entry_timeout = c->timeout;
	cfg->attr_timeout = c->timeout;
	cfg->negative_timeout = c->timeout;
	/*
	 * Keep the kernel's page cache across opens, unless the file's size
	 * or mtime changed since it was cached: then libfuse drops it, so a
	 * replaced archive is never served from its old version's pages.
	 */
	cfg->auto_cache = 1;
	cfg->kernel_cache = 0;
	/* Large requests: fewer round trips per decoded chunk. */
	conn->max_readahead = 1u << 20;
	return c;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct tree_node node;
	int ret;

	if (fi && fi->fh) {
		struct handle *h = handle_of(fi);

		if (!h->arc)
			return fstat(h->fd, st) < 0 ? -errno : (tree_readonly(st), 0);
		*st = *reader_stat(arc_reader(h->arc));
		st->st_size = (off_t)reader_size(arc_reader(h->arc));
		st->st_blocks = (st->st_size + 511) / 512;
		tree_readonly(st);
		return 0;
	}
	ret = tree_resolve(ctx()->tree, path, &node);
	if (ret < 0)
		return ret;
	return tree_stat(ctx()->tree, &node, st);
}

static int op_readlink(const char *path, char *buf, size_t size)
{
	struct tree_node node;
	ssize_t n;
	int ret = tree_resolve(ctx()->tree, path, &node);

	if (ret < 0)
		return ret;
	if (size == 0)
		return -EINVAL;
	n = readlinkat(tree_root_fd(ctx()->tree), node.rel, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* Opens the archive behind node for reading into h. */
static int open_archive(struct ops_ctx *c, const char *path, struct tree_node *node,
			struct handle *h)
{
	/* A file replaced between our stat and our open is simply looked up again. */
	for (int tries = 0; tries < 3; tries++) {
		int ret = tries ? tree_resolve(c->tree, path, node) : 0;

		if (ret == 0 && node->kind != TREE_ARCHIVE)
			ret = -ESTALE;
		if (ret == 0)
			ret = arctab_get(c->arcs, tree_root_fd(c->tree), node->rel, &node->st, &h->arc);
		if (ret < 0)
			return ret == -ENOTSUP ? -EIO : ret;
		if (!arc_reader(h->arc))
			ret = -EIO; /* logged once, when it was indexed */
		else
			ret = arctab_open(c->arcs, h->arc, tree_root_fd(c->tree), node->rel);
		if (ret == 0)
			return 0;
		arctab_put(c->arcs, h->arc);
		h->arc = NULL;
		if (ret != -ESTALE)
			return ret;
	}
	return -EIO;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	struct ops_ctx *c = ctx();
	struct tree_node node;
	struct handle *h;
	int ret;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return -EROFS;
	ret = tree_resolve(c->tree, path, &node);
	if (ret < 0)
		return ret;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->fd = -1;
	if (node.kind == TREE_ARCHIVE) {
		ret = open_archive(c, path, &node, h);
	} else if (S_ISREG(node.st.st_mode)) {
		h->fd = openat(tree_root_fd(c->tree), node.rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		ret = h->fd < 0 ? -errno : 0;
	} else {
		ret = -EACCES;
	}
	if (ret < 0) {
		free(h);
		return ret;
	}
	fi->fh = (uintptr_t)h;
	return 0;
}

static int op_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct handle *h = handle_of(fi);
	size_t done = 0;

	(void)path;
	if (off < 0)
		return -EINVAL;
	if (h->arc) {
		ssize_t n = reader_pread(arc_reader(h->arc), buf, size, (uint64_t)off);

		return (int)n;
	}
	while (done < size) {
		ssize_t n = pread(h->fd, buf + done, size - done, off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return done ? (int)done : -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (int)done;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	struct handle *h = handle_of(fi);

	(void)path;
	if (h->arc) {
		arctab_close(ctx()->arcs, h->arc);
		arctab_put(ctx()->arcs, h->arc);
	}
	if (h->fd >= 0)
		close(h->fd);
	free(h);
	return 0;
}

static int op_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	return fstatvfs(tree_root_fd(ctx()->tree), sv) < 0 ? -errno : 0;
}

struct fill_ctx {
	void *buf;
	fuse_fill_dir_t filler;
};

static int fill_one(void *vctx, const char *name, const struct stat *st)
{
	struct fill_ctx *f = vctx;

	return f->filler(f->buf, name, st, 0, 0);
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct fill_ctx f = { buf, filler };

	(void)path;
	(void)off;
	(void)flags;
	if (filler(buf, ".", NULL, 0, 0) || filler(buf, "..", NULL, 0, 0))
		return -ENOMEM;
	return tree_list(ctx()->tree, (const char *)(uintptr_t)fi->fh, fill_one, &f);
}

/* nullpath_ok leaves readdir without a path, so the handle keeps it. */
static int op_opendir(const char *path, struct fuse_file_info *fi)
{
	struct tree_node node;
	char *copy;
	int ret = tree_resolve(ctx()->tree, path, &node);

	if (ret < 0)
		return ret;
	if (!S_ISDIR(node.st.st_mode))
		return -ENOTDIR;
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	fi->fh = (uintptr_t)copy;
	return 0;
}

static int op_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	free((char *)(uintptr_t)fi->fh);
	return 0;
}

static int stats_text(struct ops_ctx *c, char *out, size_t len)
{
	struct bcache_stats st;
	struct reader_counters rc;

	bcache_stats(c->cache, &st);
	reader_get_counters(&rc);
	return snprintf(out, len,
			"cache_budget=%zu\ncache_used=%zu\ncache_entries=%zu\ncache_hits=%llu\n"
			"cache_misses=%llu\ncache_waits=%llu\ncache_evictions=%llu\n"
			"decoded_bytes=%llu\nxz_indexes=%llu\nindexes_built=%llu\n"
			"indexes_loaded=%llu\nread_errors=%llu\n",
			st.budget, st.used, st.entries, (unsigned long long)st.hits,
			(unsigned long long)st.misses, (unsigned long long)st.waits,
			(unsigned long long)st.evictions, (unsigned long long)rc.decoded_bytes,
			(unsigned long long)rc.xz_indexes, (unsigned long long)rc.indexes_built,
			(unsigned long long)rc.indexes_loaded, (unsigned long long)rc.read_errors);
}

static int info_text(struct ops_ctx *c, const struct tree_node *node, char *out, size_t len)
{
	struct reader_info in;
	struct arc *a;
	int n, ret = arctab_get(c->arcs, tree_root_fd(c->tree), node->rel, &node->st, &a);

	if (ret < 0)
		return ret == -ENOTSUP ? -ENODATA : ret;
	if (!arc_reader(a)) {
		n = snprintf(out, len, "source=%s\nstate=corrupt\nerror=%s\n", node->rel,
			     strerror(-arc_error(a)));
	} else {
		reader_get_info(arc_reader(a), &in);
		n = snprintf(out, len,
			     "source=%s\nformat=%s\nstate=indexed\nstreams=%llu\nblocks=%llu\n"
			     "chunks=%llu\ncompressed=%llu\nuncompressed=%llu\nmax_chunk=%llu\n",
			     node->rel, probe_name(in.fmt), (unsigned long long)in.streams,
			     (unsigned long long)in.blocks, (unsigned long long)in.chunks,
			     (unsigned long long)in.csize, (unsigned long long)in.usize,
			     (unsigned long long)in.max_block);
	}
	arctab_put(c->arcs, a);
	return n;
}

static int op_getxattr(const char *path, const char *name, char *value, size_t size)
{
	struct ops_ctx *c = ctx();
	struct tree_node node;
	char text[1024 + PATH_MAX];
	int n, ret = tree_resolve(c->tree, path, &node);

	if (ret < 0)
		return ret;
	if (strcmp(name, XATTR_STATS) == 0 && strcmp(node.rel, ".") == 0)
		n = stats_text(c, text, sizeof(text));
	else if (strcmp(name, XATTR_INFO) == 0 && node.kind == TREE_ARCHIVE)
		n = info_text(c, &node, text, sizeof(text));
	else
		return -ENODATA;
	if (n < 0)
		return n;
	if ((size_t)n >= sizeof(text))
		n = (int)sizeof(text) - 1;
	if (size == 0)
		return n;
	if (size < (size_t)n)
		return -ERANGE;
	memcpy(value, text, (size_t)n);
	return n;
}

static int op_listxattr(const char *path, char *list, size_t size)
{
	struct tree_node node;
	const char *name = NULL;
	size_t n;
	int ret = tree_resolve(ctx()->tree, path, &node);

	if (ret < 0)
		return ret;
	if (strcmp(node.rel, ".") == 0)
		name = XATTR_STATS;
	else if (node.kind == TREE_ARCHIVE)
		name = XATTR_INFO;
	if (!name)
		return 0;
	n = strlen(name) + 1;
	if (size == 0)
		return (int)n;
	if (size < n)
		return -ERANGE;
	memcpy(list, name, n);
	return (int)n;
}

const struct fuse_operations ops_table = {
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.init = op_init,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.statfs = op_statfs,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
};
