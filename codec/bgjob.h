/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_BGJOB_H
#define ZMOUNT_BGJOB_H

/*
 * One job at a time on a helper thread of its own: a producer hands off
 * work that does not need its core, and the machine's other core does it.
 * xzckpt's build compresses a closed checkpoint there while its decode
 * goes on (at 4 MiB spans zstd was 11% of that thread's samples).
 *
 * The thread is made on the first post.  Where it cannot be made, post
 * runs the job inline, so a caller never needs a second path.
 *
 * Threads: one owner thread makes every call.  The job runs on the helper
 * thread; what it touches belongs to it from post until wait or idle
 * reports it done (both are barriers: the job's writes are visible after
 * them).
 */

#include <stdbool.h>

struct bgjob;

/* A handle with no thread yet; NULL if out of memory (jobs can't be posted then). */
struct bgjob *bgjob_new(void);
/* Waits for the job before, then starts fn(arg) (inline where no thread could be made). */
void bgjob_post(struct bgjob *j, void (*fn)(void *), void *arg);
/* true when no job is posted or running: never blocks. */
bool bgjob_idle(struct bgjob *j);
/* Returns once no job is posted or running. */
void bgjob_wait(struct bgjob *j);
/* Waits, ends the thread and frees j; accepts NULL. */
void bgjob_free(struct bgjob *j);

#endif
