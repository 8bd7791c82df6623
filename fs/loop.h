/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_LOOP_H
#define ZMOUNT_LOOP_H

/*
 * The session's multi-threaded request loop, in place of
 * fuse_session_loop_mt: one thread receives every request, into the
 * buffer of an idle worker out of a fixed set, which processes it.
 *
 * Why not libfuse's: its workers note nothing between taking a request from
 * the kernel and calling our handler.  The kernel sends a sequential
 * reader's read-ahead as several READs at once; when the worker holding the
 * earlier one is descheduled (a busy machine), the later READ reaches the
 * reader first, sees no earlier read in progress, and walks a streamed
 * unit's decoder past the earlier slices; with a small cache these are gone
 * when the earlier READ comes, and it decodes the unit again from its start
 * (a one-block gzip at cache_size=1M: 1.5x the file under load, and 9x with
 * every 16th READ held 100 ms).  Here each READ is noted (hooks.note)
 * before the next request is received, so reads are noted in the order the
 * kernel sent them, however the workers are scheduled.  One receiving
 * thread rather than workers taking turns at receiving under a lock: a
 * burst of READs is then taken from the kernel in one go, not one thread
 * wake-up after another (a cold read of two 20 MiB zstd frames: a median
 * of 86 ms, 88 with the lock, 85 with libfuse's loop).
 *
 * Exit: unmount ends the receive; fuse_session_exit (the signal handlers)
 * ends the loop, and a receive still waiting in the kernel is cancelled,
 * as libfuse does; a worker finishes the request it holds.  The exit
 * signals are blocked in the loop's threads, so that they reach the thread
 * that waits for the end.
 *
 * Test hook: with ZMOUNT_TEST_HOLD_READ_MS=N in the environment, every 16th
 * READ waits N ms after it is noted and before it is processed, as if its
 * worker had been descheduled.
 */

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <stdint.h>

#define LOOP_WORKERS 10 /* libfuse's default max_threads */

/* What note made of a READ, handed to adopt on the worker that processes it. */
struct loop_note {
	void *what; /* NULL: nothing noted */
	int slot;
};

/*
 * note: called for each READ on the receiving thread, before the next
 * request is received: it must not block.  fh is the file handle the open
 * set.  adopt: called with what note made of it on the worker, before the
 * READ is processed there, and with NULL after, to forget a note the READ
 * did not take over (the reader may be gone by then).
 */
struct loop_hooks {
	void (*note)(void *arg, uint64_t fh, uint64_t off, uint32_t size, struct loop_note *out);
	void (*adopt)(void *arg, const struct loop_note *n);
	void *arg;
};

/*
 * Runs se's requests on a receiving thread and LOOP_WORKERS workers until
 * unmount or fuse_session_exit.  Returns 0 then, -ECONNABORTED if the
 * connection was aborted from outside, another negative errno if receiving
 * failed, or -EAGAIN if the threads could not be started.  From the thread
 * that owns the session, which receives the exit signals meanwhile.
 */
int loop_run(struct fuse_session *se, const struct loop_hooks *hooks);

#endif
