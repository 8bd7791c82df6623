/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_READER_H
#define ZMOUNT_READER_H

/*
 * Random access to the uncompressed bytes of one .xz, .gz or .zst file.
 * This is the code path of the daemon, the tools, the tests and the
 * benchmark alike.  The formats differ only behind struct fmt (fmt.h).
 *
 * reader_open reads the archive's block map (xz: its own Index; zstd: its
 * frames, each measured by one decode if it does not say its size; gzip:
 * one checkpoint pass that also verifies every member's CRC32 and ISIZE).
 * The gzip pass leaves the first opts.warm_bytes it decodes in the cache,
 * and the zstd pass up to that many of the frames it measured (stage.h),
 * so a reader that starts at the beginning does not decode them again.
 * reader_pread finds the chunks a range touches, takes each from the shared
 * cache or decodes it once, and copies out (reader_view pins them instead).
 *
 * A reader is opened on a context (zmctx.h), which it borrows: the cache,
 * the read-ahead pool, the counters (reader_get_counters), the parked
 * decoders and the log sink are the context's, so readers on two contexts
 * share none of them.
 *
 * Cache units: a map entry (gzip: the bytes between two checkpoints; xz: a
 * Block; zstd: a frame) up to opts.whole_max bytes, decoded whole, its
 * integrity check verified before any byte of it is served; a larger entry
 * is streamed in opts.slice-sized slices by a decoder parked where it
 * stopped, so reading it in order decodes it once; its check is verified
 * when decoding reaches its end, and a failure there fails later reads of
 * that entry (and calls opts.tainted).
 *
 * Read-ahead: a read that continues an earlier one (starts where it
 * ended; or, 64 KiB or larger, starts within 1 MiB of that end: the kernel
 * delivers its parallel read-ahead slightly out of order; up to four
 * interleaved streams are tracked), once a read has started where the
 * stream ended (from a remote source, two), queues the next opts.readahead
 * bytes' units on the context's pool (or, when units are wider than that, the next
 * one per worker), never more than the cache holds beside the reader's own
 * unit and the parked decoders' share, and asks the kernel for
 * their compressed bytes, so workers decode them in parallel, into the
 * same cache and under the same budget, while the reader is served.  A
 * slice of a streamed unit is decoded ahead only by the decoder parked
 * exactly at its start, so read-ahead never walks past a slice.  Reads
 * further apart than that queue nothing, except that a read at offset 0,
 * the usual start of a sequential reader, queues the unit after its own.
 *
 * Errors are logged once per cause, through the context's sink (zmctx.h),
 * naming the file, the offset and the reason; later reads of a failed chunk
 * get -EIO without decoding it again.  The reason is data too: reader_open's
 * why, and reader_last_error after a read failed.
 *
 * Threads: every function but reader_close may be called from any thread
 * at once.  The block map is immutable; the parked decoder and the failure
 * marks are guarded by a lock that is never held while decoding.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/types.h>

#include "fmttab.h"
#include "src.h"
#include "zerr.h"

struct bcache_ent;
struct reader;
struct zmctx;

/*
 * A watcher of the decoded bytes a full pass at open produces, so that
 * whoever wants them all in order (a tar's member table, fs/ns_tar.c) gets
 * them without a second decode.  Only gzip's index pass streams them yet.
 * reader_open_src calls end exactly once for an opts.tap it was given,
 * before it returns, on its own thread, after every out call: status 0 if
 * out saw each decoded byte of the file once, in order from offset 0 (a
 * whole pass, not salvaged, and the open succeeded); else -ENOTSUP (no
 * pass streamed its bytes: an index was loaded, another format) or the
 * open's error, and the bytes out saw, if any, are not to be trusted.
 * Neither callback may call into the reader being opened.
 */
struct reader_tap {
	void (*out)(void *ctx, const void *buf, size_t len);
	void (*end)(void *ctx, int status);
	void *ctx;
};

struct reader_opts {
	uint64_t span;	  /* gzip checkpoint spacing, bytes */
	uint64_t ck_span; /* checkpoint spacing inside one xz Block or zstd frame; 0: none */
	size_t whole_max; /* xz Blocks up to this size are one verified unit */
	size_t slice;	  /* larger xz Blocks are cached in slices of this size */
	size_t readahead; /* bytes decoded ahead of a sequential reader, on the context's pool */
	/* where gzip indexes and zstd frame sizes persist (the index_dir= store, idxopen.h;
	 * borrowed: it outlives the reader); NULL: memory only */
	const struct idxstore *index_dir;
	/*
	 * A gzip pass leaves up to this many of the first bytes it decodes
	 * cached, and a zstd measuring pass the frames it decodes.  With
	 * warm_when (a background open's), a gzip pass keeps none, and a zstd
	 * pass keeps a frame that starts while *warm_when is false (nobody
	 * waits for it) only in room the cache has spare: its copy into the
	 * cache would slow the pass that the first stat waits for.
	 */
	size_t warm_bytes;
	const atomic_bool *warm_when; /* borrowed until reader_open returns */
	size_t index_max;	      /* an xz file whose block map would take more is refused */
	bool warn_wide; /* log a warning for units wider than whole_max (the daemon does) */
	bool salvage;	/* a damaged gzip or xz file shows the good part before the damage */
	/*
	 * A zstd frame that states no size is decoded whole at open to measure
	 * it; with ck_at_open (the default) that pass builds its checkpoints
	 * too, at about 1.4 times the CPU of a plain decode.  Without, the
	 * measuring pass only measures, and checkpoints come from a later pass.
	 */
	bool ck_at_open;
	/*
	 * Called at most once per reader, from whichever thread found it (a
	 * reader's or a read-ahead worker), with no reader lock held, when a
	 * streamed unit fails its Check after earlier slices of it may have
	 * been served: pages the kernel cached from this reader must go.  The
	 * callee must not block on the kernel (queue the invalidation).  NULL:
	 * nobody to tell.
	 */
	void (*tainted)(void *ctx, const struct reader *r);
	void *tainted_ctx;
	/*
	 * Whether the name r was opened by still leads to its file (same
	 * device and inode).  Asked when only the source's ctime moved, with
	 * its mode, owner and link count as before: then a rename is the one
	 * cause left besides a write (rsync --inplace -t rewrites a file and
	 * restores its mtime), and a file still under its name was written.
	 * Any thread, no reader lock held; it must not go through a FUSE mount
	 * of the source.  NULL: taken as still named, so such a move fails.
	 */
	bool (*still_named)(void *ctx, const struct reader *r);
	void *still_named_ctx;
	/* NULL, or borrowed until its end call (struct reader_tap): one open's only. */
	const struct reader_tap *tap;
};

/* Defaults for a cache of cache_size bytes. */
void reader_opts_default(struct reader_opts *o, size_t cache_size);

struct reader_info {
	int fmt;	    /* format id (fmttab.h): fmttab_name, fmttab_info_line */
	uint64_t usize;	    /* uncompressed size */
	uint64_t csize;	    /* compressed (file) size */
	uint64_t streams;   /* xz Streams or gzip members */
	uint64_t blocks;    /* xz Blocks (non-empty) or gzip checkpoints */
	uint64_t chunks;    /* entries of the block map */
	uint64_t max_block; /* xz: largest Block; gzip: largest span between checkpoints */
	uint32_t checks;    /* xz: mask of 1u << Check ID; gzip: 0 */
	uint64_t padding;   /* xz: Stream Padding bytes; gzip: trailing bytes ignored */
	uint64_t served;    /* bytes returned to readers of this reader */
	uint64_t reads;	    /* reads that returned them */
	uint64_t decoded;   /* bytes its decoders produced into the cache */
	unsigned failed;    /* units that failed (corrupt data; each logged once) */
	int changed;	    /* the source changed in place since open: every miss fails */
	int salvaged;	    /* opened with opts.salvage and damaged: only its start is shown */
	int pass;	    /* gzip/zstd: opening ran a full index or measuring pass, as no
			     * saved index was found (zmount-index build saves one) */
	int saved;	    /* pass: and its index was saved in opts.index_dir */
	uint64_t ckpts; /* checkpoints inside xz Blocks or zstd frames, entry starts not counted */
	uint64_t ckpt_bytes;  /* memory they hold */
	uint64_t ckpt_wanted; /* entries that may get checkpoints but have none yet */
	uint64_t resumes;     /* decoders started at one of them */
	uint64_t ck_ahead;    /* bytes decoded ahead of a reader by pool jobs resumed at them */
};

/*
 * Opens the archive read from src (source/src.h), which it takes over (its
 * reference is dropped on failure too); name is used in log lines and
 * copied; ctx is borrowed and must outlive the reader; opts is copied.  If
 * name can key a saved index (an absolute path or a URL such as
 * s3://bucket/key: idxfile_keyed) and opts->index_dir is set, a gzip index
 * or zstd frame sizes saved in that store for that name (and the source's current
 * identity, zsrc_stat) are used instead of a pass
 * over the data, and newly built ones are saved (failures to save are logged once and the index
 * is kept in memory).
 * Returns 0 and *out (close with reader_close), or, with *out NULL and,
 * if why is not NULL, *why set to the reason (a sentence naming the
 * compressed offset where it applies; why->coff too):
 *   -ENOTSUP  the magic bytes are not xz, gzip or zstd, a gzip header is
 *             unreadable, or a zstd file needs a dictionary or a window over
 *             128 MiB (pass the file through; not logged here);
 *   -EINVAL   xz: the Streams or Index cannot be read, or its map would
 *             take more than opts->index_max; gzip: a header, the data, a
 *             CRC32 or an ISIZE is bad (logged);
 *   -ENOMEM, or another -errno from the source's stat/pread (logged).
 * "Logged" means one line through ctx's sink, its why the same as *why.
 */
int reader_open_src(struct zsrc *src, const char *name, struct zmctx *ctx,
		    const struct reader_opts *opts, struct reader **out, struct zerr *why);

/* reader_open_src on zsrc_local(fd): takes over fd (closed on failure too). */
int reader_open_fd(int fd, const char *name, struct zmctx *ctx, const struct reader_opts *opts,
		   struct reader **out, struct zerr *why);

/* reader_open_fd on path opened read-only, named by its real path; -errno from open too (logged).
 */
int reader_open(const char *path, struct zmctx *ctx, const struct reader_opts *opts,
		struct reader **out, struct zerr *why);

/* The bytes of a read left where the cache holds them; see reader_view. */
#define READER_VIEW_MAX 16
struct reader_view {
	struct bcache *cache;			 /* the reader's, which the release needs, not r */
	unsigned n;				 /* pieces, in file order */
	struct iovec iov[READER_VIEW_MAX];	 /* their bytes */
	struct bcache_ent *ent[READER_VIEW_MAX]; /* the references pinning them */
};

/*
 * reader_pread without the copy: pins the cache units that hold the bytes
 * at off and points v->iov at them.  Returns the count the pieces cover,
 * min(len, size - off), or less when that would take more than
 * READER_VIEW_MAX units or when the cache has no room for more while these
 * are pinned (then a prefix ending at a unit boundary, never 0 before EOF); or a negative errno as
 * reader_pread, with nothing pinned. Unless it failed, the caller must pass v to
 * reader_view_release, soon: pinned units stay in the cache past its budget.  Any thread may
 * release, and the reader may be closed before: once a reply is sent from the view, the
 * kernel may release and forget the file, and another thread free the reader, before the
 * thread that replied releases it.
 */
ssize_t reader_view(struct reader *r, size_t len, uint64_t off, struct reader_view *v);

/*
 * Notes a read of [off, off + len) that the caller has received and will
 * hand to another thread, so that a read received after it waits its turn
 * even if it starts first.  Returns the note's slot, or -1 if none is free
 * (then nothing is noted).  The thread that makes the read calls
 * reader_adopt_received(r, slot) just before it: its next reader_view or
 * reader_pread of r is that read, and must come; after it,
 * reader_adopt_received(NULL, -1) forgets a note it did not take over, so
 * that no later reader at the same address takes that slot.  The note
 * takes r's lock only; the adoption no lock.
 */
int reader_note_received(struct reader *r, uint64_t off, size_t len);
void reader_adopt_received(struct reader *r, int slot);
void reader_view_release(struct reader_view *v);

/*
 * Copies min(len, size - off) uncompressed bytes at off into buf.
 * Returns that count (0 at or past EOF), or a negative errno, never a short
 * count before EOF:
 *   -EIO     corrupt data, a failed Check, or the source changed since open;
 *   -ENOMEM  out of memory.
 */
ssize_t reader_pread(struct reader *r, void *buf, size_t len, uint64_t off);

uint64_t reader_size(const struct reader *r);

/* The name given at open (a copy owned by the reader). */
const char *reader_name(const struct reader *r);

void reader_get_info(const struct reader *r, struct reader_info *info);

/*
 * The passes over r's data running now (a checkpoint pass; zmctx_passes),
 * up to n into out.  Returns how many.  Any thread.
 */
struct zmctx_pass;
size_t reader_passes(const struct reader *r, struct zmctx_pass *out, size_t n);

/*
 * Why reads of r fail, as data: returns 0 if none has (why->msg ""), -EIO
 * if a unit failed (why: the first such failure's line, "read error at
 * offset U (Block K, compressed offset C): reason", and why->coff = C), or
 * -ESTALE if the source changed since open.  why may be NULL.  Any thread.
 */
int reader_last_error(const struct reader *r, struct zerr *why);

/*
 * Builds checkpoints (ckpt.h) inside every entry of r that may have them
 * (an xz Block or zstd frame wider than 2 * opts.ck_span) and has none
 * yet: one verifying pass over each such entry, the cost of decoding it
 * once.  Readers of r go on meanwhile; each set is used from the moment
 * it is complete.  Returns 0 (also when there was nothing to do), or the
 * first entry's failure: -ENOTSUP (it cannot have checkpoints: logged once
 * at INFO, and not tried again), -EIO (corrupt: logged, and the entry
 * marked bad as a failed read would), -ENOMEM, -ESTALE (the source
 * changed).  src is the source (borrowed): the pass reads through it and
 * checks that it is the version r was opened on, so a detached reader
 * needs no attach.  Any thread.
 */
int reader_build_checkpoints(struct reader *r, struct zsrc *src, struct zerr *why);

/* Counters of all readers on one context, for the stats interface. */
struct reader_counters {
	uint64_t decoded_bytes;	     /* bytes produced by decoders, read-ahead included */
	uint64_t readahead_bytes;    /* of those, decoded by read-ahead on the pool */
	uint64_t prefault_bytes;     /* whole units whose pages an idle worker faulted in */
	uint64_t opened[FMTTAB_MAX]; /* per format id: its own counter (fmttab_counter), e.g.
				      * xz Indexes read */
	uint64_t indexes_built;	     /* gzip checkpoint passes and zstd measuring passes run */
	uint64_t indexes_loaded;     /* gzip indexes and zstd frame sizes loaded from index_dir */
	uint64_t read_errors;	     /* chunks that failed to decode (each logged once), and
				      * opens of corrupt archives (reader_note_error) */
	uint64_t index_errors;	     /* archives that failed to open as corrupt (-EINVAL, logged),
				      * each name once (zmctx_note_damaged) */
	uint64_t served_bytes;	     /* bytes returned by reader_view and reader_pread */
	uint64_t checkpoints;	     /* checkpoints built inside xz Blocks and zstd frames */
};

void reader_get_counters(struct zmctx *ctx, struct reader_counters *out);

/* Counts one more read error (read_errors) found by a caller: a failed open of a corrupt archive.
 */
void reader_note_error(struct zmctx *ctx);

/* The source's stat at open: device, inode, size and times identify it. */
const struct stat *reader_stat(const struct reader *r);

/*
 * Drops the reader's reference to its source (a local file's last one
 * closes the fd) and keeps its block map, so an indexed archive that
 * nobody has open holds no descriptor.  Waits for its queued read-ahead to
 * finish first.  The caller guarantees that no reader_pread runs until
 * reader_attach.
 */
void reader_detach(struct reader *r);

/*
 * Gives a detached reader a source again (taken over).  Returns 0, or
 * -ESTALE (src's reference dropped) if src is not the version that was
 * indexed (zsrc_stat).  Same rule as reader_detach: no reader_pread may
 * run meanwhile.
 */
int reader_attach(struct reader *r, struct zsrc *src);

/*
 * The cheap part of the naming rules: returns the format id (fmttab.h) of
 * the source src (borrowed) if a format's magic says so and its cheap probe (gzip: a
 * readable first member header; zstd: its frames) accepts it; else 0,
 * with a log line (naming it by name) when the magic matched but the probe
 * refused (none if name is NULL).  A format whose fmttab_list_opens still
 * needs reader_open to know (xz: whether its Index is readable).  opts
 * (may be NULL: no limit) gives the map limit, opts->index_max, that a
 * format's map (zstd frames) is counted against.
 */
int reader_probe(struct zsrc *src, const char *name, const struct reader_opts *opts);

/*
 * True if st (a fresh stat of the source path) still names the opened file
 * unchanged.  For a local file only: an object's stat is not its version.
 */
int reader_matches(const struct reader *r, const struct stat *st);

/* True if src (borrowed) is the version r was opened on: its stat and its tag (src.h). */
bool reader_same_version(const struct reader *r, struct zsrc *src);

/* Waits for its read-ahead, drops its source and frees the reader; drops its cached chunks. Accepts
 * NULL. */
void reader_close(struct reader *r);

#endif
