/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ARCTAB_H
#define ZMOUNT_ARCTAB_H

/*
 * The daemon's table of open archives, one per source object (device and
 * ns_entry.obj, ns.h), each holding a reader.  It reaches names and bytes
 * only through the namespace (ns.h), local files and objects alike.  An
 * archive is opened, and indexed, once: at its first lookup, listing or
 * open.  A later call whose fresh entry is no longer the same version
 * (ns_same) gets a new reader, while handles already open keep the old
 * one, so a reader never mixes two versions of a file.
 *
 * An archive holds a source (ns_open: a file descriptor, or an object's
 * fetch windows) only while it has open handles (arctab_open ..
 * arctab_close), so descriptors and window memory are bounded by the files
 * users hold open, not by the files they have listed or stat'ed.
 *
 * Threads: any thread may call anything but arctab_free.  Two threads that
 * want the same unindexed archive index it once; the other one waits.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct ns;
struct ns_entry;
struct reader;
struct zmctx;
struct reader_opts;
struct arctab;
struct arc;

/*
 * Returns 0 and *out, or -ENOMEM.  zm (the readers' context), opts and ns
 * are borrowed for the table's life; opts is read at each reader open.
 * Readers are named by ns_name (an absolute path, s3://BUCKET/KEY), in log
 * lines and as keys of saved indexes.
 *
 * It routes zm's log lines through the table (zmctx_set_log, at the level
 * zlog_set_level set, so call that first): each still goes to zlog, but the
 * one line saying why an archive cannot be opened also says that it is
 * shown empty and its opens fail with EIO, and, for a damaged gzip or xz
 * file on a mount without opts->salvage, to mount with -o salvage.
 */
int arctab_new(struct zmctx *zm, const struct reader_opts *opts, struct ns *ns,
	       struct arctab **out);

/* Closes every archive.  No reference may still be held.  Accepts NULL. */
void arctab_free(struct arctab *t);

/*
 * Returns a referenced archive for e, a fresh entry of the namespace (an
 * archive candidate; copied).  Returns:
 *   0        *out set; arc_reader(*out) is NULL if the archive is corrupt,
 *            and arc_error(*out) then says why (-EINVAL, -EIO, ...); on a
 *            namespace that names candidates by suffix alone (ns_probed
 *            false) a file that is no archive by its magic bytes is such a
 *            corrupt one (-EIO), said once in the log;
 *   -ENOTSUP the file is not an archive by its magic bytes (*out NULL),
 *            on a namespace that probed it before naming it;
 *   -ENOMEM, or ns_open's errors for a source that cannot be opened now
 *            (a failed request, EMFILE: no verdict kept) (*out NULL).
 */
int arctab_get(struct arctab *t, const struct ns_entry *e, struct arc **out);

/*
 * Indexes the archive of e, as arctab_get would, for a background job:
 * nobody is about to read it, so it leaves nothing in the cache; then
 * builds the checkpoints inside its wide xz Blocks and zstd frames
 * (reader_build_checkpoints).  Returns 0, the archive's error if it is
 * corrupt (-EINVAL at open, -EIO in a checkpoint pass), -ESTALE (changed),
 * or arctab_get's errors.  Any thread, pool workers included.
 */
int arctab_index(struct arctab *t, const struct ns_entry *e);

/*
 * Prepares a (non-corrupt) archive for reading: the first open handle
 * opens its source (ns_open) and checks it is still the version indexed
 * (reader_attach).  Returns 0, -ESTALE if the file changed since (look it
 * up again), or -errno from the open (EMFILE, ...).  It may wait for a last
 * arctab_close of a still detaching (see below), so, like arctab_close, it
 * is for FUSE threads, never for a pool worker.
 */
int arctab_open(struct arctab *t, struct arc *a);

/*
 * Ends what arctab_open began; the last one drops the source, after
 * waiting for the file's read-ahead jobs on the pool, with no lock held
 * (locking.h).  Never call it from a pool worker: it could wait for a job
 * queued behind itself.
 */
void arctab_close(struct arctab *t, struct arc *a);

/* Releases a reference.  Accepts NULL. */
void arctab_put(struct arctab *t, struct arc *a);

/* The reader options the table opens archives with (arctab_new's opts); NULL for a NULL t. */
const struct reader_opts *arctab_opts(const struct arctab *t);

/* The archive's reader, valid while the reference is held; NULL if it is corrupt. */
struct reader *arc_reader(const struct arc *a);
int arc_error(const struct arc *a);

/* Why an archive decodes more than it serves, as the reader's map shows it. */
enum arctab_why {
	ARCTAB_WHY_NONE,
	ARCTAB_WHY_WIDE, /* a unit wider than cache_size/2: random reads decode from its start */
	ARCTAB_WHY_ONE,	 /* the same, and the file is that one unit */
	ARCTAB_WHY_NO_INDEX, /* gzip/zstd: opening ran a full pass, as no index was saved */
	ARCTAB_WHY_SAVED,    /* the same, and the pass saved its index: later mounts load it */
	ARCTAB_WHY_NO_DIR,   /* the same, on a mount with index_dir=none: nothing is saved */
	ARCTAB_WHY_SALVAGED, /* damaged, shown salvaged (-o salvage): its pass ran at open */
};

/* One of the archives that decoded the most, for the stats. */
struct arctab_top {
	uint64_t decoded; /* by its reads, plus the whole size if opening ran a pass */
	uint64_t served, reads;
	enum arctab_why why;
	uint64_t unit;	/* WIDE, ONE: the size of its widest unit */
	char name[256]; /* the reader's name, cut to fit */
};

/*
 * Fills top[0..n) with the n archives that decoded the most bytes, largest
 * first; unused slots get decoded 0.  Takes the table lock briefly.
 */
void arctab_top(struct arctab *t, struct arctab_top *top, size_t n);

/* Why a corrupt archive is corrupt, as reader_open said (or strerror); valid with the reference. */
const char *arc_why(const struct arc *a);

#endif
