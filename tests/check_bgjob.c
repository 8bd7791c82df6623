/* SPDX-License-Identifier: MIT */
/*
 * Tests for codec/bgjob.c: jobs run one at a time, in order, on a thread
 * other than the caller's; wait, idle and free are barriers (TSan's stage
 * runs this program too: a job's plain writes read after them must not
 * race); without a thread (pthread_create made to fail, through the
 * linker's --wrap) every job runs inline, at its post.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "bgjob.h"

/* pthread_create fails with EAGAIN while this is set (tests/CMakeLists.txt wraps it). */
static bool no_threads;

int __real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	return no_threads ? EAGAIN : __real_pthread_create(t, a, fn, arg);
}

struct tally {
	int next;	  /* plain int: only barriers order it */
	int out_of_order; /* jobs that found next not at their number */
	int on_caller;	  /* jobs that ran on the caller's thread */
	pthread_t caller;
	int want;
};

static void count_job(void *opaque)
{
	struct tally *t = opaque;

	if (t->next != t->want)
		t->out_of_order++;
	if (pthread_equal(pthread_self(), t->caller))
		t->on_caller++;
	t->next++;
}

START_TEST(jobs_run_in_order_on_the_helper)
{
	struct bgjob *j = bgjob_new();
	struct tally t = { .caller = pthread_self() };

	ck_assert_ptr_nonnull(j);
	for (int i = 0; i < 2000; i++) {
		bgjob_post(j, count_job, &t); /* waits for job i - 1: t is ours again */
		bgjob_wait(j);
		ck_assert_int_eq(t.next, i + 1);
		t.want = t.next;
	}
	ck_assert_int_eq(t.out_of_order, 0);
	ck_assert_int_eq(t.on_caller, 0);
	bgjob_free(j);
}
END_TEST

struct gate {
	sem_t go;
	bool done;
};

static void gated_job(void *opaque)
{
	struct gate *g = opaque;

	sem_wait(&g->go);
	usleep(20000); /* free and wait must outlast this */
	g->done = true;
}

START_TEST(idle_is_false_while_a_job_runs)
{
	struct bgjob *j = bgjob_new();
	struct gate g = { .done = false };

	ck_assert_ptr_nonnull(j);
	ck_assert(bgjob_idle(j));
	sem_init(&g.go, 0, 0);
	bgjob_post(j, gated_job, &g);
	usleep(10000);
	ck_assert(!bgjob_idle(j));
	sem_post(&g.go);
	while (!bgjob_idle(j))
		usleep(1000);
	ck_assert(g.done);
	bgjob_free(j);
	sem_destroy(&g.go);
}
END_TEST

START_TEST(free_waits_for_the_job)
{
	struct bgjob *j = bgjob_new();
	struct gate g = { .done = false };

	ck_assert_ptr_nonnull(j);
	sem_init(&g.go, 0, 1);
	bgjob_post(j, gated_job, &g);
	bgjob_free(j);
	ck_assert(g.done);
	sem_destroy(&g.go);
	bgjob_free(NULL);
}
END_TEST

START_TEST(without_a_thread_jobs_run_inline)
{
	struct bgjob *j = bgjob_new();
	struct tally t = { .caller = pthread_self() };

	ck_assert_ptr_nonnull(j);
	no_threads = true;
	for (int i = 0; i < 3; i++) {
		bgjob_post(j, count_job, &t);
		ck_assert_int_eq(t.next, i + 1); /* done before post returned */
		ck_assert(bgjob_idle(j));
		t.want = t.next;
	}
	no_threads = false;
	ck_assert_int_eq(t.on_caller, 3);
	ck_assert_int_eq(t.out_of_order, 0);
	bgjob_free(j);
}
END_TEST

static Suite *bgjob_suite(void)
{
	Suite *s = suite_create("bgjob");
	TCase *tc = tcase_create("bgjob");

	tcase_add_test(tc, jobs_run_in_order_on_the_helper);
	tcase_add_test(tc, idle_is_false_while_a_job_runs);
	tcase_add_test(tc, free_waits_for_the_job);
	tcase_add_test(tc, without_a_thread_jobs_run_inline);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bgjob_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
