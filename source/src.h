/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_SRC_H
#define ZMOUNT_SRC_H

/*
 * A source of compressed bytes: the one way the codecs, the reader, the
 * saved indexes and the tools reach an archive's bytes.  No format code
 * knows whether they come from a local file (zsrc_local) or an object in a
 * bucket (source/s3src.h); each kind is one struct zsrc_ops.
 *
 *   pread  up to len bytes at off into buf: the count (0 at or past the
 *          end; it may be short anywhere, as pread(2) may), or -errno:
 *          -ESTALE when the source is no longer the version it was opened
 *          on (an object whose ETag changed), -EIO, -ETIMEDOUT, ... buf may
 *          hold partial data on error.  -EINVAL for off past INT64_MAX.
 *   stat   the source's attributes and, for a local file, its version
 *          (srcid.h compares them): a local file's fstat; for an object,
 *          its attributes at open (dev from its endpoint and bucket, ino
 *          from its key, size, mtime and ctime from Last-Modified), which
 *          do not tell two versions apart: its tag does.  Every GET of an
 *          object carries If-Match, so it fails with -ESTALE once the
 *          object changed.  Returns 0 or -errno.
 *   tag    the part of the version a stat cannot hold, compared exactly:
 *          an object's ETag as the server gave it, NUL-terminated in buf
 *          (ZSRC_TAG_MAX bytes).  NULL for sources whose stat is their
 *          whole version (local files): their tag is "".  Never a hash of
 *          the tag: two versions must never compare equal by accident.
 *   hint   bytes [off, off + len) will be read soon (read-ahead); the
 *          source may start fetching them.  May be NULL.  Never fails.
 *   free   frees the source; called by zsrc_put for the last reference.
 *   pinned true when every pread is checked against the version at open
 *          (an object's GETs carry If-Match): stat never changes and a new
 *          version shows as -ESTALE, so nobody needs to sample the bytes
 *          to notice a change (reader.c sample_take, which would fetch
 *          4 KiB at each end of an object).
 *   remote true when bytes cost requests and transfer (an object): the
 *          reader's read-ahead waits for surer signs of a sequential read.
 *
 * Ownership: a source is reference-counted.  Its maker holds one reference;
 * zsrc_get adds one, zsrc_put drops one.  A function that "takes over" a
 * source drops the caller's reference when done, on failure too; one that
 * "borrows" it does not.
 *
 * Threads: pread, stat and hint may run on any thread at once, also on
 * the same source; zsrc_get/zsrc_put from any thread.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct zsrc;

/* The longest version tag, NUL included: S3 ETags are 34 characters (36 for a multipart upload). */
#define ZSRC_TAG_MAX 80

struct zsrc_ops {
	ssize_t (*pread)(struct zsrc *s, void *buf, size_t len, uint64_t off);
	int (*stat)(struct zsrc *s, struct stat *st);
	void (*tag)(struct zsrc *s, char buf[ZSRC_TAG_MAX]);
	void (*hint)(struct zsrc *s, uint64_t off, uint64_t len);
	void (*free)(struct zsrc *s);
	bool pinned;
	bool remote;
};

/* Embedded first in each implementation's own struct. */
struct zsrc {
	const struct zsrc_ops *ops;
	atomic_uint refs;
};

/* For implementations: sets ops and one reference (the maker's). */
static inline void zsrc_init(struct zsrc *s, const struct zsrc_ops *ops)
{
	s->ops = ops;
	atomic_init(&s->refs, 1);
}

/*
 * Reads len bytes at off, calling ops->pread again after a short count:
 * returns len, fewer only where the source ends (0 at or past it), or the
 * -errno of the first failed call.  Callers use this, never ops->pread.
 */
static inline ssize_t zsrc_pread(struct zsrc *s, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = s->ops->pread(s, (char *)buf + done, len - done, off + done);

		if (n < 0)
			return n;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static inline int zsrc_stat(struct zsrc *s, struct stat *st)
{
	return s->ops->stat(s, st);
}

static inline void zsrc_hint(struct zsrc *s, uint64_t off, uint64_t len)
{
	if (s->ops->hint)
		s->ops->hint(s, off, len);
}

/* The source's version tag into buf: "" for a source without one. */
static inline void zsrc_tag(struct zsrc *s, char buf[ZSRC_TAG_MAX])
{
	buf[0] = '\0';
	if (s->ops->tag)
		s->ops->tag(s, buf);
}

/* Adds a reference; returns s. */
static inline struct zsrc *zsrc_get(struct zsrc *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}

/* Drops a reference; the last one frees s.  Accepts NULL. */
static inline void zsrc_put(struct zsrc *s)
{
	if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
		s->ops->free(s);
}

/*
 * Makes z, whose ops are *ops, a source that wraps under (a tee, a view):
 * ops gets under's pinned and remote, *ref a reference of under (for
 * z's free to drop), *size under's size now (0 if it states none), and z
 * its maker's reference.  Returns 0, or under's stat error with nothing
 * done.
 */
static inline int zsrc_wrap(struct zsrc *z, struct zsrc_ops *ops, struct zsrc *under,
			    struct zsrc **ref, uint64_t *size)
{
	struct stat st;
	int ret = zsrc_stat(under, &st);

	if (ret < 0)
		return ret;
	ops->pinned = under->ops->pinned;
	ops->remote = under->ops->remote;
	zsrc_init(z, ops);
	*ref = zsrc_get(under);
	*size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	return 0;
}

/*
 * A local file as a source: takes over fd (closed by the last zsrc_put, or
 * at once on failure).  pread is pread(2), retried on EINTR;
 * stat is fstat; hint is posix_fadvise WILLNEED.  Returns 0 and *out, or
 * -ENOMEM (*out NULL).
 */
int zsrc_local(int fd, struct zsrc **out);

/*
 * The descriptor of a zsrc_local source (still owned by it: valid while a
 * reference is held), for a caller that hands a local file's bytes to the
 * kernel by splice; -1 for any other kind of source, and for NULL.
 */
int zsrc_local_fd(const struct zsrc *s);

#endif
