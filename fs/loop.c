/* SPDX-License-Identifier: MIT */
#include "loop.h"

#include <errno.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "zlog.h"

struct worker {
	struct loop *l;
	pthread_t tid;
	struct fuse_buf buf;	  /* libfuse allocates its memory at the first receive */
	pthread_cond_t go;	  /* buf holds a request, or the loop stops */
	bool busy;		  /* buf holds a request (under loop.mu) */
	bool hold;		  /* the test hook holds it (loop.h) */
	struct loop_note note;	  /* what the receiver noted of it */
	struct worker *next_idle; /* under loop.mu */
};

struct loop {
	struct fuse_session *se;
	struct loop_hooks hooks;
	pthread_mutex_t mu;   /* the idle list, each worker's busy, stop */
	pthread_cond_t freed; /* a worker joined the idle list */
	struct worker *idle;
	bool stop;
	sem_t ended;	  /* the receiver left: the loop may be over */
	int error;	  /* the receive failure that ended it (the receiver's) */
	unsigned hold_ms; /* the test hook (loop.h) */
	unsigned reads;	  /* READs received (the receiver's) */
	pthread_t receiver;
	struct worker w[LOOP_WORKERS];
};

/* Shows a received READ to the hook; returns whether buf is one. */
static bool note_read(struct loop *l, const struct fuse_buf *buf, size_t len, struct loop_note *out)
{
	const struct fuse_in_header *in = buf->mem;
	const struct fuse_read_in *rd;

	/* A READ's arguments are small, so libfuse never leaves them in a pipe. */
	if ((buf->flags & FUSE_BUF_IS_FD) || len < sizeof(*in) + sizeof(*rd) ||
	    in->opcode != FUSE_READ)
		return false;
	rd = (const struct fuse_read_in *)(in + 1);
	/* op_read refuses an offset past an off_t before any reader would adopt the note */
	if (rd->offset <= INT64_MAX)
		l->hooks.note(l->hooks.arg, rd->fh, rd->offset, rd->size, out);
	return true;
}

static void hold(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Takes an idle worker, waiting for one; NULL once the loop stops. */
static struct worker *take_idle(struct loop *l)
{
	struct worker *w;

	pthread_mutex_lock(&l->mu);
	while (!l->idle && !l->stop)
		pthread_cond_wait(&l->freed, &l->mu);
	w = l->stop ? NULL : l->idle;
	if (w)
		l->idle = w->next_idle;
	pthread_mutex_unlock(&l->mu);
	return w;
}

static void put_idle_locked(struct loop *l, struct worker *w)
{
	w->busy = false;
	w->next_idle = l->idle;
	l->idle = w;
	pthread_cond_signal(&l->freed);
}

/*
 * The one thread that receives: each request into an idle worker's
 * buffer, a READ noted before the next request is received, so that
 * reads are noted in the kernel's order.  Cancellation is enabled only
 * while it waits in the kernel, with no lock held.
 */
static void *receive(void *arg)
{
	struct loop *l = arg;
	struct worker *w;
	int res = 0;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	while (!fuse_session_exited(l->se) && (w = take_idle(l))) {
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		res = fuse_session_receive_buf(l->se, &w->buf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (res > 0) { /* w is ours until busy is set: no lock for these */
			w->note.what = NULL;
			w->hold = note_read(l, &w->buf, (size_t)res, &w->note) && l->hold_ms &&
				  ++l->reads % 16 == 5;
		}
		pthread_mutex_lock(&l->mu);
		if (res > 0) {
			w->busy = true;
			pthread_cond_signal(&w->go);
		} else {
			put_idle_locked(l, w);
		}
		pthread_mutex_unlock(&l->mu);
		if (res <= 0 && res != -EINTR)
			break;
	}
	if (res < 0 && res != -EINTR) {
		l->error = res;
		fuse_session_exit(l->se);
	}
	sem_post(&l->ended);
	return NULL;
}

/* Processes what the receiver hands it until the loop stops. */
static void *worker(void *arg)
{
	struct worker *w = arg;
	struct loop *l = w->l;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (!w->busy && !l->stop)
			pthread_cond_wait(&w->go, &l->mu);
		if (!w->busy)
			break;
		pthread_mutex_unlock(&l->mu);
		if (w->note.what)
			l->hooks.adopt(l->hooks.arg, &w->note);
		if (w->hold)
			hold(l->hold_ms);
		fuse_session_process_buf(l->se, &w->buf);
		if (w->note.what)
			l->hooks.adopt(l->hooks.arg, NULL);
		pthread_mutex_lock(&l->mu);
		put_idle_locked(l, w);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

int loop_run(struct fuse_session *se, const struct loop_hooks *hooks)
{
	struct loop l = { .se = se, .hooks = *hooks };
	const char *hold = getenv("ZMOUNT_TEST_HOLD_READ_MS");
	bool receiving = false;
	sigset_t block, old;
	int n = 0;

	if (hold) {
		l.hold_ms = (unsigned)strtoul(hold, NULL, 10);
		zlog(ZLOG_WARN,
		     "test hook: every 16th READ is held %u ms (ZMOUNT_TEST_HOLD_READ_MS)",
		     l.hold_ms);
	}
	pthread_mutex_init(&l.mu, NULL);
	pthread_cond_init(&l.freed, NULL);
	sem_init(&l.ended, 0, 0);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old); /* the threads inherit it */
	for (; n < LOOP_WORKERS; n++) {
		l.w[n].l = &l;
		pthread_cond_init(&l.w[n].go, NULL);
		if (pthread_create(&l.w[n].tid, NULL, worker, &l.w[n]) != 0) {
			pthread_cond_destroy(&l.w[n].go);
			break;
		}
		pthread_mutex_lock(&l.mu);
		put_idle_locked(&l, &l.w[n]);
		pthread_mutex_unlock(&l.mu);
	}
	receiving = n > 0 && pthread_create(&l.receiver, NULL, receive, &l) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!receiving)
		l.error = -EAGAIN;
	else
		while (!fuse_session_exited(se))
			sem_wait(&l.ended); /* a signal ends the wait too */
	pthread_mutex_lock(&l.mu);
	l.stop = true;
	pthread_cond_broadcast(&l.freed);
	for (int i = 0; i < n; i++)
		pthread_cond_signal(&l.w[i].go);
	pthread_mutex_unlock(&l.mu);
	if (receiving) {
		pthread_cancel(l.receiver); /* if it waits in the kernel */
		pthread_join(l.receiver, NULL);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(l.w[i].tid, NULL);
		pthread_cond_destroy(&l.w[i].go);
		free(l.w[i].buf.mem);
	}
	sem_destroy(&l.ended);
	pthread_cond_destroy(&l.freed);
	pthread_mutex_destroy(&l.mu);
	return l.error;
}
