/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_LOCKING_H
#define ZMOUNT_LOCKING_H

/*
 * The daemon's locks (every mutex in fs/, index/, codec/, source/ and
 * tools/) and condition variables, and the order they nest in.
 * Documentation only: no code includes this for anything but the reader's
 * benefit.  A change that takes one lock inside another, or waits while
 * holding one, updates this list in the same commit.
 *
 * Each lock is named OWNER.FIELD: the struct it is a field of, or, for a
 * file-scope variable, the file's stem (zlog.rotate_lock).  The test `locking`
 * (tests/tools/check_locking.py) finds every pthread_mutex_t,
 * pthread_rwlock_t, pthread_spinlock_t and pthread_cond_t declared in
 * those directories and fails for each one not named here, and for each
 * entry of the order list below that no longer exists.  The file column
 * is a hint; the check matches by struct and field, not by file.
 *
 * Two rules:
 *
 *  1. Nest only downwards in the list below.  A lock marked "leaf" has no
 *     other lock taken inside it.
 *
 *  2. Never wait for work while holding a lock that the work may need.
 *     Above all: no thread waits for jobs on the decode pool (reader_detach,
 *     reader_close: their drain of the reader's read-ahead) while it holds
 *     any lock, and a pool worker never waits for a pool job at all (with
 *     threads=1 the job it waits for is queued behind itself).
 *     Waiting on a condition variable releases only its own mutex; any
 *     other lock still held counts as held.
 *
 * The order, outermost first:
 *
 *  loop.mu           fs/loop.c      the request loop's idle workers and
 *                                   hand-offs.  Leaf: the receiver notes a
 *                                   READ (reader.lock) and waits in the
 *                                   kernel with it dropped.  loop.freed (a
 *                                   worker is idle: the receiver waits) and
 *                                   worker.go (a request for that worker)
 *                                   wait on it, with no other lock held.
 *  indexer.lock      fs/indexer.c   the walk's progress and job count.
 *                                   Inside it: pool.lock (pool_submit,
 *                                   which never waits), zlog.
 *                                   indexer.changed (a job ended, or
 *                                   indexer_stop): only the walk's own
 *                                   thread waits on it, holding no other
 *                                   lock, for its own pool jobs (rule 2);
 *                                   it is never a pool worker.
 *  reader.stream     index/fill.c   serialises the decode of one large
 *                                   streamed unit (xz Block, zstd frame,
 *                                   gzip span).  Inside it: park.lock
 *                                   (park_add, park_take), bcache.lock
 *                                   (bcache_get without waiting for room,
 *                                   claim, done, charge; bcache_get may wait
 *                                   on bcache.filled for a fill another
 *                                   thread is running now, never for a
 *                                   queued job: a span job's slices,
 *                                   ckahead.h, are waited for outside
 *                                   it), reader.lock
 *                                   (reader_check_unchanged,
 *                                   reader_mark_failed), and the
 *                                   context's log sink (zmctx.h).  Room in
 *                                   the cache is never waited for under it
 *                                   (fill_get drops it first): a holder of
 *                                   pinned units may need it.
 *                                   wait_for_turn takes reader.lock inside
 *                                   it, then drops reader.stream and waits
 *                                   on reader.moved (see reader.lock).
 *  park.lock         index/park.c   the list of parked decoders of all
 *                                   readers of one context (zmctx.h).
 *                                   Leaf: decoders are closed and
 *                                   uncharged after it is dropped.
 *  arctab.lock       fs/arctab.c    the archive table.  Leaf.  Its
 *                                   condition variables wait for a
 *                                   reader_open (arctab.opened) or an attach
 *                                   or detach (arctab.moved) that runs with
 *                                   the lock
 *                                   dropped.  Those waits are made by FUSE
 *                                   threads (arctab_open) or by any thread
 *                                   (arctab_get, arctab_index); the work
 *                                   they wait for never waits for a pool job
 *                                   except a detach, and only arctab_open,
 *                                   never called on a pool worker, waits for
 *                                   a detach.
 *  nodes.lock        fs/nodes.c     the inode table.  Leaf: entries are
 *                                   freed, and their arcs put, after it is
 *                                   dropped.
 *  tree.lock         fs/tree.c      the listing cache.  Leaf: listings are
 *                                   built and freed with it dropped.
 *  ops_ctx.open_lock fs/ops.c       the mount's list of open handles.
 *                                   Leaf.
 *  ns_tar.lock       fs/ns_tar.c    -o tar: the list of member tables,
 *                                   their references and states.  Leaf
 *                                   (ns_same of the base namespace inside
 *                                   it compares entries only).  A scan
 *                                   reads with it dropped, and feeds the
 *                                   scanner 1 MiB at a time under it;
 *                                   ns_tar.built (a scan fed or ended, a
 *                                   scan thread ended) is waited on by
 *                                   FUSE threads and ns_tar_stop, holding
 *                                   no other lock.
 *  ns_s3.snap_lock   fs/ns_s3.c     an s3:// namespace's current listing
 *                                   (snap, listed_at, listing).  Inside
 *                                   it: zlog only.  The prefix is listed
 *                                   with it dropped (`listing` keeps a
 *                                   second lister out); the old snapshot
 *                                   is put after it is dropped.
 *  ns_s3.line_lock   fs/ns_s3.c     the S3 client's last error line
 *                                   before the mount is live (for
 *                                   ns_s3_new's message).  Leaf; taken in
 *                                   the client's log callback, on whatever
 *                                   thread makes the request.
 *  notify.lock       fs/notify.c    the invalidation thread's queue
 *                                   (struct notify, in ops_ctx).  Leaf:
 *                                   notify_queue,
 *                                   called with no reader lock held, only
 *                                   queues; the thread drops it before it
 *                                   invalidates (which takes nodes.lock
 *                                   and waits on the kernel).
 *                                   notify.wake: only the thread waits on
 *                                   it, for work or notify_stop.
 *  measure.lock      index/fmt_zstd.c  the frames of one zstd measuring
 *                                   pass handed out to the opener and pool
 *                                   workers.  Leaf: frames are measured,
 *                                   and jobs submitted, with it dropped;
 *                                   measure.idle waits only for frames a
 *                                   thread has taken, never for a queued
 *                                   job (rule 2).
 *  zst.lock          index/fmt_zstd.c  which frames of a zstd file whose
 *                                   sizes came from a saved index are being
 *                                   decoded to their end.  Leaf.  zst.seen
 *                                   waits on it (check_before) only for a
 *                                   decode running now (inside
 *                                   zstddec_dec_read, never a queued job),
 *                                   of an earlier frame, so no cycle; may be
 *                                   waited on under reader.stream, which
 *                                   that decode does not need.  Likewise
 *                                   check_before waits on bcache.filled
 *                                   (bcache_wait_fill, with no lock held
 *                                   but maybe reader.stream) for a whole
 *                                   fill of an earlier frame running now.
 *  reader.lock       index/reader.c a reader's bad-unit marks, streams,
 *                                   reads in progress and job count.  Leaf;
 *                                   reader.idle (readahead_wait) waits on it, see
 *                                   rule 2.  reader.moved waits on it in
 *                                   wait_for_turn (a read letting an earlier
 *                                   read of a streamed unit go first): with
 *                                   no other lock and no cache reference
 *                                   held, never on a pool worker, for reads
 *                                   that want earlier bytes (so no cycle),
 *                                   and at most TURN_STALL_MS without any of
 *                                   them moving.
 *                                   reader.ck_moved waits on it in
 *                                   reader_ck_wait: a far read, under
 *                                   reader.stream, waits for a checkpoint
 *                                   pass running now (never a queued one),
 *                                   which takes neither reader.stream nor
 *                                   anything a reader holds: no cycle.
 *  bcache.lock       index/bcache.c the cache.  Leaf: buffers are freed
 *                                   after it is dropped.  bcache.room is
 *                                   waited on (bcache_get with wait,
 *                                   bcache_wait_room) only by a thread that
 *                                   holds no cache reference and no other
 *                                   lock: every reference is released
 *                                   without waiting, so room comes.
 *  pool.lock         index/pool.c   the job queue.  Leaf: jobs run with it
 *                                   dropped.  pool.wake: only idle workers
 *                                   wait on it, for a job or pool_free.
 *  xzdec_spares.lock codec/xzdec.c  a context's stock of spare xz decoder
 *                                   buffers (struct xzdec_spares).  Leaf;
 *                                   taken inside reader.stream when a
 *                                   decoder allocates or frees; buffers
 *                                   are malloc'd and freed outside it.
 *  zstdckpt_spares.lock codec/zstdckpt_dec.c  a context's stock of closed
 *                                   zstd resume decoders (struct
 *                                   zstdckpt_spares).  Leaf; taken when a
 *                                   resumed decoder opens or closes; the
 *                                   decoders are made and freed outside it.
 *  bgjob.mu          codec/bgjob.c  one helper thread's job slot (an xz
 *                                   checkpoint build's compressor,
 *                                   xzckpt.c).  Leaf.  bgjob.cv: the
 *                                   build's thread waits on it (bgjob_wait,
 *                                   bgjob_post, bgjob_free), maybe under
 *                                   reader.stream, only for the job
 *                                   running now, which takes no lock; the
 *                                   helper waits on it for a job.
 *  s3src.mu          source/s3src.c an S3 object source's windows, hints,
 *                                   stale mark and fetch-ahead thread.
 *                                   Leaf: every GET runs with it dropped
 *                                   (a W_FILLING window belongs to its
 *                                   fetcher); a source read may take it
 *                                   inside reader.stream.
 *                                   s3src.filled is waited on for a window
 *                                   another thread is fetching now (a GET
 *                                   bounded by the client's timeouts),
 *                                   never for a queued job.  The
 *                                   fetch-ahead thread is joined under it
 *                                   only once it has finished (ahead 2).
 *  s3.mu             source/s3.c    an S3 client's idle libcurl handles.
 *                                   Leaf: handles are made, used and
 *                                   cleaned up with it dropped.
 *  prog.lock         tools/zmount-index.c  the progress line of
 *                                   zmount-index build (what it shows, and
 *                                   whether it is drawn).  Taken inside
 *                                   reader.stream through the log sink
 *                                   (pass_on); inside it only
 *                                   zmctx.pass_lock (prog_draw reads the
 *                                   passes) and zlog.  prog.wake: only the
 *                                   bar's thread waits on it, with a
 *                                   timeout.
 *  zmctx.pass_lock   index/zmctx.c  a context's passes in progress (what,
 *                                   bytes done and total, for
 *                                   user.zmount.info and zmount-stat).
 *                                   Leaf.
 *  zmctx.damage_lock index/zmctx.c  a context's list of damaged files,
 *                                   each counted once.  Leaf: it only
 *                                   allocates and copies names.
 *  zmctx.spill_lock  index/zmctx.c  whether a context's spill file is
 *                                   made yet.  Leaf: held over that
 *                                   file's one open(), nothing else.
 *  spill.lock        index/spill.c  the spill file's end offset.  Leaf:
 *                                   held to move the end, never over I/O.
 *  hashed_ids.lock   index/idxfile.c the whole-file hashes this process
 *                                   took (src_hash).  Leaf: held to look
 *                                   one up or add one, never over a read.
 *  stage_budget.lock index/stage.c  the bytes a measuring pass may still
 *                                   stage.  Leaf: held to take or give
 *                                   some back, never over the cache's lock.
 *  zstddec.stash_lock codec/zstddec.c the idle libzstd decoders kept for
 *                                   reuse.  Leaf: held to take or put
 *                                   one, never over a decode.
 *  zlog.rotate_lock  index/zlog.c   the fallback log file (its descriptor
 *                                   and its size, renamed at 4 MiB).
 *                                   Leaf, and last: taken inside any lock
 *                                   that logs; rename, open and dup3 run
 *                                   under it, nothing that waits.
 *
 * Who waits for pool jobs, and why it is safe:
 *  - arctab_close (the last close of a file) detaches its reader with no
 *    lock held, on a FUSE thread;
 *  - reader_close, from arc_free, runs when the last reference to an
 *    archive goes, with no lock held; its reader then has no open handle,
 *    so the last arctab_close already drained it and there is nothing to
 *    wait for, even when that last reference is a pool worker's
 *    (arctab_index);
 *  - get() in fs/arctab.c detaches the reader it has just opened, with no
 *    lock held, possibly on a pool worker (arctab_index): nobody can have
 *    read from that reader yet (it is still `opening`), so it has no job;
 *  - arctab_free, pool_free and indexer_stop run on the main thread after
 *    the FUSE loop ended.
 */

#endif
