/* SPDX-License-Identifier: MIT */
#include "loop.h"

#include <errno.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "zlog.h"

struct loop {
	struct fuse_session *se;
	loop_note_fn note;
	void *arg;
	pthread_mutex_t recv; /* held from a receive until its READ is noted */
	sem_t ended;	      /* a worker left: the loop may be over */
	atomic_int error;     /* the first receive failure */
	unsigned hold_ms;     /* the test hook (loop.h) */
	atomic_uint reads;
};

struct worker {
	struct loop *l;
	pthread_t tid;
	struct fuse_buf buf; /* libfuse allocates its memory at the first receive */
};

/* Shows a received READ to the hook; returns whether buf is one. */
static bool note_read(struct loop *l, const struct fuse_buf *buf, size_t len)
{
	const struct fuse_in_header *in = buf->mem;
	const struct fuse_read_in *rd;

	/* A READ's arguments are small, so libfuse never leaves them in a pipe. */
	if ((buf->flags & FUSE_BUF_IS_FD) || len < sizeof(*in) + sizeof(*rd) ||
	    in->opcode != FUSE_READ)
		return false;
	rd = (const struct fuse_read_in *)(in + 1);
	/* libfuse refuses, unseen by us, what does not fit an off_t */
	if (rd->offset <= INT64_MAX)
		l->note(l->arg, rd->fh, rd->offset, rd->size);
	return true;
}

static void hold(struct loop *l)
{
	struct timespec ts = { .tv_sec = l->hold_ms / 1000,
			       .tv_nsec = (long)(l->hold_ms % 1000) * 1000000L };

	if (atomic_fetch_add(&l->reads, 1) % 16 == 5)
		nanosleep(&ts, NULL);
}

static void unlock(void *mu)
{
	pthread_mutex_unlock(mu);
}

/*
 * Receives one request into buf under the receive lock, noting it if it
 * is a READ (*is_read).  Cancellation is enabled only while waiting in the
 * kernel, so a request taken is always processed; a cancelled wait lets
 * the lock go through the cleanup handler.
 */
static int receive(struct loop *l, struct fuse_buf *buf, bool *is_read)
{
	volatile int res; /* set between the handler's setjmp and its pop */

	pthread_mutex_lock(&l->recv);
	pthread_cleanup_push(unlock, &l->recv);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	res = fuse_session_receive_buf(l->se, buf);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	*is_read = res > 0 && note_read(l, buf, (size_t)res);
	pthread_cleanup_pop(1);
	return res;
}

/* The buffer is the caller's (loop_run frees it), so a cancelled worker leaks nothing. */
static void *worker(void *arg)
{
	struct worker *w = arg;
	struct loop *l = w->l;
	int res = 0;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	while (!fuse_session_exited(l->se)) {
		bool is_read;

		res = receive(l, &w->buf, &is_read);
		if (res == -EINTR)
			continue;
		if (res <= 0)
			break;
		if (is_read && l->hold_ms)
			hold(l);
		fuse_session_process_buf(l->se, &w->buf);
	}
	if (res < 0) {
		int none = 0;

		atomic_compare_exchange_strong(&l->error, &none, res);
		fuse_session_exit(l->se);
	}
	sem_post(&l->ended);
	return NULL;
}

int loop_run(struct fuse_session *se, loop_note_fn note, void *arg)
{
	struct loop l = { .se = se, .note = note, .arg = arg };
	struct worker w[LOOP_WORKERS] = { { 0 } };
	const char *hold = getenv("ZMOUNT_TEST_HOLD_READ_MS");
	sigset_t block, old;
	int n = 0;

	if (hold) {
		l.hold_ms = (unsigned)strtoul(hold, NULL, 10);
		zlog(ZLOG_WARN,
		     "test hook: every 16th READ is held %u ms (ZMOUNT_TEST_HOLD_READ_MS)",
		     l.hold_ms);
	}
	pthread_mutex_init(&l.recv, NULL);
	sem_init(&l.ended, 0, 0);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old); /* the workers inherit it */
	for (; n < LOOP_WORKERS; n++) {
		w[n].l = &l;
		if (pthread_create(&w[n].tid, NULL, worker, &w[n]) != 0)
			break;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (n == 0)
		atomic_store(&l.error, -EAGAIN);
	else
		while (!fuse_session_exited(se))
			sem_wait(&l.ended); /* a signal ends the wait too */
	for (int i = 0; i < n; i++)
		pthread_cancel(w[i].tid);
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].tid, NULL);
		free(w[i].buf.mem);
	}
	sem_destroy(&l.ended);
	pthread_mutex_destroy(&l.recv);
	return atomic_load(&l.error);
}
