/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_READER_INT_H
#define ZMOUNT_READER_INT_H

/*
 * The reader's state, shared by its core (reader.c, fill.c, udec.c,
 * readahead.c, reader_ck.c) and the format backends (fmt_*.c, see fmt.h),
 * and by nothing else: callers see only reader.h.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "ckahead.h"
#include "cmap.h"
#include "fmt.h"
#include "park.h"
#include "reader.h"
#include "zerr.h"
#include "zmctx_int.h"

/* Sequential streams tracked per archive, as the kernel's read-ahead does per file. */
#define NSTREAMS 4
/* Reads in progress tracked per archive, for a read ahead of the decoder to wait on. */
#define NINFLIGHT 16

struct reader {
	struct zsrc *src; /* owned reference; NULL while detached */
	char *name;
	uint64_t id; /* cache key: unique per reader, so versions never mix */
	struct stat st;
	char tag[ZSRC_TAG_MAX]; /* with st, the version opened (zsrc_tag) */
	bool sampled;		/* sample hashes the version in st */
	uint64_t sample;	/* idxfile_identify's fingerprint: its first and last 4 KiB */
	int fmt;		/* the backend's id (fmttab.h), the index of per-format arrays */
	const struct fmt *f;	/* the backend */
	void *idx;		/* the backend's index */
	struct zmctx *ctx;	/* borrowed: cache, pool, counters, parked list, log */
	struct bcache *cache;	/* ctx->cache */
	struct reader_opts opts;
	uint64_t tapped; /* bytes handed to opts.tap during open (reader_pass_out) */
	struct cmap map;
	size_t *entry; /* map entry -> the backend's unit (Block, point, frame) */

	/*
	 * Slices of streamed units are filled only under this lock, so the
	 * thread that holds it can claim every slice it walks past, and the
	 * next one finds the decoder parked where it wants it.  Per archive:
	 * other archives, and whole units of this one, decode meanwhile.
	 */
	pthread_mutex_t stream;
	/* Its decoder parked at a slice boundary, on ctx->parked (park.h). */
	struct park_slot park;
	/*
	 * fill_slice's buffer for the bytes it walks past, under stream: kept,
	 * since a fresh one is a fresh mapping (M_MMAP_THRESHOLD is 64 KiB)
	 * and up to 16 page faults per far read.  NULL until the first walk,
	 * and again after reader_detach.
	 */
	unsigned char *skip;

	pthread_mutex_t lock;
	pthread_cond_t idle; /* jobs reached 0 */
	/* Protected by lock. */
	uint8_t *bad;  /* per map entry: failed and logged */
	unsigned jobs; /* read-ahead jobs queued or running */
	struct {
		uint64_t end;	/* where the stream's last read ended */
		uint64_t ahead; /* read-ahead queued up to here */
		uint64_t done;	/* units wholly below here were demoted (consumed) */
		unsigned hits;	/* reads that continued it (see readahead_note) */
		uint64_t used;	/* r->notes when a read last started or continued it */
		bool big;	/* it started with a read of SEQ_LARGE or more */
	} streams[NSTREAMS];
	uint64_t notes;	      /* reads noted (readahead_note): the streams' clock */
	unsigned last_stream; /* the stream the last read started or continued */
	/*
	 * Reads in progress (reader_view, reader_pread): a read that wants a
	 * slice a little ahead of the parked decoder waits for the one that
	 * will take the decoder there (see wait_for_turn in fill.c).
	 */
	struct {
		pthread_t who;
		uint64_t pos, end; /* the next byte it wants, and its end */
		bool used;
	} inflight[NINFLIGHT];
	pthread_cond_t moved; /* the decoder moved, or a read started or ended */
	uint64_t moves;	      /* counts those events */
	unsigned waiters;     /* threads waiting on moved */
	bool changed;	      /* the source changed in place: all misses fail */
	bool away;	      /* the version opened is gone for now (-ESTALE): said once */
	/* Protected by lock: the source's stat last accepted (reader_check_unchanged) */
	struct stat st_ok;     /* st at open, or a later one whose ctime alone moved, harmlessly */
	bool named_ok;	       /* at st_ok, the name still led to the file */
	bool tainted;	       /* opts.tainted was called */
	unsigned failed;       /* map entries marked bad */
	struct zerr first_err; /* why the first of them failed (reader_last_error) */
	/* Counters of this reader, for per-file stats. */
	atomic_uint_fast64_t served, decoded, reads;
	bool pass;    /* opening ran an index or measuring pass (none was saved) */
	bool saved;   /* and that pass's index was saved in opts.index_dir (later mounts load it) */
	bool rawkept; /* that pass kept compressed chunks: src is read through rawkeep_view */
	/*
	 * Map look-ups (reader_unit_of): the CPU work of serving reads, which tests
	 * hold to a constant per unit read (check_reader, issue 18).
	 */
	atomic_uint_fast64_t lookups;
	/*
	 * Checkpoints inside wide entries (ckpt.h, reader_ck.c).  ckable[k]
	 * (CKABLE_*): entry k may get a set.  A wide one is cached in slices
	 * from open on, so its units keep their shape when the set comes; a
	 * medium one is cached whole, and its set (a CRC32 per piece, no
	 * checkpoint) lets a far read decode only as far as it needs, into
	 * slices of their own (UNIT_SLICE).  ck[k]: the set, once built or
	 * loaded; published once, immutable, freed at close.  Both NULL when
	 * no entry qualifies.
	 */
	uint8_t *ckable;
	_Atomic(struct ckpt_set *) *ck;
	atomic_uchar *ck_state; /* CK_NONE, CK_BUSY (a build runs), CK_DONE (built or gave up) */
	atomic_uchar *ck_far;	/* far slices a medium entry had (reader.c, far_slice) */
	/*
	 * Sets the format's open built on the pass that sized its entries
	 * (fmt.h, ck_open), by map entry, or NULL: reader_ck_init takes them
	 * over, so that pass is also the checkpoint pass.  Freed by then.
	 */
	struct ckpt_set **ck_open;
	atomic_uint_fast64_t resumes; /* decoders started at a checkpoint */
	atomic_bool ck_stop;	      /* reader_close: passes on the pool give up */
	/*
	 * A reader streams a wide entry while a pass runs on it: the pass
	 * gives up that entry (reader_ck_yield), so no byte is decoded twice
	 * at once; the reader's end queues it again (reader_ck_note).
	 */
	atomic_bool ck_yield;
	atomic_bool ck_loaded;		 /* a load of index_dir's saved sets went through */
	atomic_uint_fast64_t ck_windows; /* windows read back from spill files */
	atomic_bool ck_unsaved;		 /* a fill made a medium entry's set: save at detach */
	atomic_size_t ck_medium_bytes;	 /* what medium entries' sets hold: within opts.index_max */
	/*
	 * Span jobs (ckahead.h), under lock: the slices each still owns,
	 * [from, to) in the reader's offsets.  They count in jobs too.
	 */
	struct {
		uint64_t from, to;
		bool used;
	} ckj[CKAHEAD_JOBS];
	/* Under lock: a ckahead_queue left to r->stream's holder (end 0: none). */
	uint64_t ck_pend_end, ck_pend_room;
	/* Bytes span jobs decoded, the skips to their first slice included. */
	atomic_uint_fast64_t ck_ahead;
	unsigned ck_jobs; /* passes queued or running on the pool; under lock, idle signals 0 */
	/*
	 * The wide entry a pass builds now and the bytes of it that pass has
	 * decoded (ckpt_build_watch): a far read into it may wait for the set
	 * rather than decode the same bytes beside it (reader_ck_wait).
	 * ck_moved, under lock: a pass left an entry.
	 */
	atomic_size_t ck_at_k;
	atomic_uint_fast64_t ck_at;
	pthread_cond_t ck_moved;
};

enum { CK_NONE, CK_BUSY, CK_DONE, CK_RUN /* a reader's decode builds it: reader_ck_run_begin */ };
/*
 * ckable[k]: wide (more than two spans: checkpoints, built by a pass), or
 * medium (more than two slices, at most two spans and whole_max: only the
 * CRC32s of its pieces, recorded by the fill that verified it whole).
 */
enum { CKABLE_NO, CKABLE_WIDE, CKABLE_MEDIUM };
/*
 * Set in a unit's start offset (fill_get, fill_entry): a slice of a medium
 * entry, whose start may equal the entry's, keyed apart from the whole unit.
 */
#define UNIT_SLICE (UINT64_C(1) << 63)
/* Set in the key of a checkpoint's window (reader_ck_window): entry start + point offset. */
#define UNIT_WIN (UINT64_C(1) << 62)
/* Set in the key of a kept chunk of compressed bytes (rawkeep.h): UNIT_RAW | chunk number. */
#define UNIT_RAW (UINT64_C(1) << 61)
/*
 * Such slices are at most FAR_SLICE, smaller than a streamed unit's: a far
 * read (a header, a record) wants a few KiB, and everything up to its slice
 * is decoded anyway, the slices passed kept.  A multiple of CKPT_PIECE.
 */
#define FAR_SLICE (256u << 10)
static inline size_t reader_far_slice(const struct reader *r)
{
	return r->opts.slice < FAR_SLICE ? r->opts.slice : FAR_SLICE;
}

/*
 * A pass at open decoded buf: handed to opts.tap, if any, in order
 * (reader.h, struct reader_tap).  reader.c.
 */
void reader_pass_out(struct reader *r, const void *buf, size_t len);

/*
 * With r->rawkept, makes r->src a rawkeep_view over it, so reads use the
 * compressed chunks the pass kept.  Left as it was if that fails (reads
 * then fetch again, correctly).  At open or attach only: no read runs.
 * reader.c.
 */
void reader_keep_view(struct reader *r);

/* Marks entry k failed (one log line, as a failed read); returns -EIO.  reader.c. */
int reader_fail_entry(struct reader *r, size_t k, uint64_t off, const struct zerr *err);

/*
 * reader_fail_entry for a fill that failed with ret: marks entry k failed
 * unless ret is -ENOMEM (memory comes back; corrupt data does not) or
 * -ESTALE (the version opened is gone: an object overwritten, whose GETs
 * fail If-Match; it may come back, and then it reads again), and logs the
 * first failure of k, or the first -ESTALE since the version was last
 * read.  Returns -ENOMEM if ret is, else -EIO.
 */
int reader_mark_failed(struct reader *r, size_t k, uint64_t off, int ret, const struct zerr *err);

/*
 * A fill succeeded: if the version opened had gone (reader_mark_failed
 * with -ESTALE), says once that it is back.  Any thread; takes r->lock.
 */
void reader_mark_read(struct reader *r);

/*
 * Whether the source is still the file indexed at open (a write in place
 * would mix versions): 0, or -EIO, the first time with one log line, and
 * every read's miss fails from then on.  Checked before and after each
 * fill.  Any thread; takes r->lock.
 */
int reader_check_unchanged(struct reader *r);

/* Whether entry k is cached in slices, by a decoder parked between them (see reader.c). */
bool reader_streamed(const struct reader *r, size_t k);

/*
 * The cache unit holding byte off (< reader_size): returns its map entry,
 * and sets [*ustart, *ustart + *len).  Counts one look-up (r->lookups).
 */
size_t reader_unit_of(const struct reader *r, uint64_t off, uint64_t *ustart, size_t *len);

/* Whether entry k failed, or the source changed (then every miss fails).  Takes r->lock. */
bool reader_is_bad(struct reader *r, size_t k);

/*
 * The decoder of a streamed unit moved (or was closed), or a read of one
 * started or ended: wakes the reads waiting for their turn (fill.c,
 * wait_for_turn) to look again.  Span jobs (ckahead.c), read-ahead and
 * fills call it.  reader_moved takes r->lock; reader_moved_locked is for
 * a caller that holds it.
 */
void reader_moved(struct reader *r);
void reader_moved_locked(struct reader *r);

/* reader_ck.c: which entries may get checkpoints (at open); 0 or -ENOMEM. */
int reader_ck_init(struct reader *r);
void reader_ck_free(struct reader *r);
/*
 * A read had to decode entry k from its start: queues a checkpoint pass
 * over it on the context's pool (if any, and if none ran or runs, or only
 * a reader's decode claimed it: ck_take), so the reads after it need not.
 * With r->stream held; never blocks.
 */
void reader_ck_kick(struct reader *r, size_t k);
/*
 * A decoder of entry k has reached pos: at the end of a wide entry without
 * a set, a reader has read it through in order, and the pass is queued
 * then, as for a far read, so a full sequential read leaves checkpoints
 * behind.  Not earlier: a pass beside the reader took a core from its
 * read-ahead (a cold sequential read of 1 GiB of xz ran 9% slower).
 * readahead_note calls it too, for a read that reaches k's end (a decoder
 * ahead of the reader got there first).  Any thread; never blocks.
 */
void reader_ck_note(struct reader *r, size_t k, uint64_t pos);
/*
 * A sequential stream continued inside entry k (readahead_note): if k is
 * wide and a pass runs on it, the pass stops and leaves k to the reader
 * (one decode per byte).  Any thread; never blocks.
 */
void reader_ck_yield(struct reader *r, size_t k);
/*
 * A reader is about to decode wide entry k from its start: if k has no set
 * (none loaded from index_dir either), none is being built, and the format
 * can build one on the reader's own decode (fmt.h, run_open), claims k
 * (CK_RUN: no pass starts over it) and returns true.  The claimer ends it
 * with reader_ck_run_end.  Any thread; may load saved sets.
 */
bool reader_ck_run_begin(struct reader *r, size_t k);
/*
 * Ends a claim: b (taken over) is what the reader's decode fed; whole says
 * that decode returned k's last byte (so verified k whole), and then its
 * set is published and saved at detach; else b is dropped and a pass may
 * build k later.  Any thread.
 */
void reader_ck_run_end(struct reader *r, size_t k, struct ckpt_build *b, bool whole);
/*
 * A read must reach byte want of wide entry k, which has no set, while a
 * pass builds one (or has taken k and not begun): waits for that pass to
 * end if it would end about when the read, decoding from k's start beside
 * it, would end want's slice (a tail read right after a mount, while the
 * indexer's pass runs, always waits).  true: it
 * waited (the set may be there now); false: no such pass, or too far
 * behind.  With r->stream held; the pass never takes it.
 */
bool reader_ck_wait(struct reader *r, size_t k, uint64_t want);
/* Stops and waits for the passes reader_ck_kick queued (reader_close). */
void reader_ck_stop(struct reader *r);
/* Whether entry k is medium (CKABLE_MEDIUM). */
bool reader_ck_medium(const struct reader *r, size_t k);
/*
 * Medium entry k was just decoded whole into buf and verified: records
 * the CRC32 of its pieces as its set, once, to be saved at detach
 * (reader_ck_save).  While the sets of r's medium entries would then hold
 * more than opts.index_max in all (a block map's cap), or without memory:
 * none.
 */
void reader_ck_medium_done(struct reader *r, size_t k, const void *buf, size_t len);
/* Saves r's sets in index_dir if a medium entry's set is new since the last save. */
void reader_ck_save(struct reader *r);
/* Entry k's set, or NULL: loaded from index_dir the first time one is wanted. */
const struct ckpt_set *reader_ck_get(struct reader *r, size_t k);
/*
 * Point i's blob of entry k's set s, for the codec's open: w->blob (NULL
 * for a point without one), valid until reader_ck_window_put.  A spilled
 * set's blob is a cache unit of its own (UNIT_WIN), charged to the cache
 * and evicted like data, read back from the spill file on a miss (or
 * into memory of its own for this open when the cache has no room).
 * 0, or -EIO (the spill file failed its CRC32) or -ENOMEM, with err set.
 */
struct bcache_ent;
struct ck_window {
	const void *blob;
	struct bcache_ent *e;
	void *tmp;
};
int reader_ck_window(struct reader *r, size_t k, const struct ckpt_set *s, size_t i,
		     struct ck_window *w, struct zerr *err);
void reader_ck_window_put(struct reader *r, struct ck_window *w);
/* Entry k's set, or NULL. */
const struct ckpt_set *reader_ck_set(const struct reader *r, size_t k);

/*
 * Sizes r->map and r->entry for up to n entries.  Returns 0 or -ENOMEM.
 * Then cmap_add each entry (recording r->entry[r->map.n - 1]) and cmap_end.
 */
int reader_map_init(struct reader *r, size_t n);

/* For check_reader: empty Blocks an xz reader r has decoded to verify them (fmt_xz.c). */
uint64_t fmt_xz_empty_verified(const struct reader *r);

/* A log line about r through its context's sink: "NAME: text"; why as for zmctx_log_fn. */
void reader_log(const struct reader *r, enum zlog_level level, const struct zerr *why,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
