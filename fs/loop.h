/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_LOOP_H
#define ZMOUNT_LOOP_H

/*
 * The session's multi-threaded request loop, in place of
 * fuse_session_loop_mt: a fixed set of workers, each receiving one request
 * at a time under one lock and processing it on its own.
 *
 * Why not libfuse's: its workers note nothing between taking a request from
 * the kernel and calling our handler.  The kernel sends a sequential
 * reader's read-ahead as several READs at once; when the worker holding the
 * earlier one is descheduled (a busy machine), the later READ reaches the
 * reader first, sees no earlier read in progress, and walks a streamed
 * unit's decoder past the earlier slices; with a small cache these are gone
 * when the earlier READ comes, and it decodes the unit again from its start
 * (a one-block gzip at cache_size=1M: 1.5x the file under load, and 9x with
 * every 16th READ held 100 ms).  Here each READ is shown to note_read
 * before the next request is received, so reads are noted in the order the
 * kernel sent them, however the workers are scheduled.
 *
 * Exit: unmount ends every worker's receive; fuse_session_exit (the signal
 * handlers) ends the loop, and the workers still waiting in the kernel are
 * cancelled, as libfuse does.  The exit signals are blocked in the workers,
 * so that they reach the thread that waits for the end.
 *
 * Test hook: with ZMOUNT_TEST_HOLD_READ_MS=N in the environment, every 16th
 * READ waits N ms after it is noted and before it is processed, as if its
 * worker had been descheduled.
 */

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <stdint.h>

#define LOOP_WORKERS 10 /* libfuse's default max_threads */

/*
 * Called for each READ, on the worker that will process it, under the
 * receive lock: it must not block.  fh is the file handle the open set.
 */
typedef void (*loop_note_fn)(void *arg, uint64_t fh, uint64_t off, uint32_t size);

/*
 * Runs se's requests on LOOP_WORKERS threads until unmount or
 * fuse_session_exit.  Returns 0 then, -ECONNABORTED if the connection was
 * aborted from outside, another negative errno if receiving failed, or
 * -EAGAIN if no worker could be started.  From the thread that owns the
 * session, which receives the exit signals meanwhile.
 */
int loop_run(struct fuse_session *se, loop_note_fn note, void *arg);

#endif
