/* The I/O loop of the network comms (pdu-endpoint/src/ep_loop.c), white-box: timers fire in
 * deadline order and not once cancelled, posts coalesce while a task is queued, an io deleted
 * by an earlier callback of the same round is not called, a loop released from its own thread
 * and held again serves again, and the thread runs only while the loop is held. */
#define _GNU_SOURCE

#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ep_loop.h"
#include "ep_test_util.h"

static int thread_count(void)
{
	int n = htu_thread_count();
	assert_true(n > 0);
	return n;
}

/* ---- timers ---- */

typedef struct timers {
	hakoi_loop_t *l;
	hakoi_timer_t t[4];
	int order[4];
	atomic_int fired;
	int on_loop; /* every callback ran on the loop's thread */
} timers_t;

static void on_timer(hakoi_timer_t *t)
{
	timers_t *x = t->arg;
	int n = atomic_load(&x->fired);
	x->order[n] = (int)(t - x->t);
	x->on_loop &= hakoi_loop_on_thread(x->l);
	atomic_store(&x->fired, n + 1);
}

static void arm_timers(void *arg)
{
	timers_t *x = arg;
	uint64_t now = hakoi_now_ns();
	const unsigned ms[4] = {40, 10, 25, 15};
	for (int i = 0; i < 4; i++) {
		x->t[i] = (hakoi_timer_t){.cb = on_timer, .arg = x};
		assert_int_equal(hakoi_timer_add(x->l, &x->t[i]), 0);
		hakoi_timer_set(x->l, &x->t[i], now + ms[i] * 1000000ull);
	}
	/* 3 (15 ms) goes; 2 (25 ms) moves after 0 (40 ms). */
	hakoi_timer_cancel(x->l, &x->t[3]);
	hakoi_timer_set(x->l, &x->t[2], now + 60 * 1000000ull);
}

static void del_timers(void *arg)
{
	timers_t *x = arg;
	for (int i = 0; i < 4; i++) {
		hakoi_timer_del(x->l, &x->t[i]);
	}
}

static void test_timers_in_order(void **state)
{
	(void)state;
	timers_t x = {.on_loop = 1};
	atomic_init(&x.fired, 0);
	assert_int_equal(hakoi_loop_create(&x.l), 0);
	assert_int_equal(hakoi_loop_hold(x.l), 0);
	hakoi_loop_call(x.l, arm_timers, &x);
	EPT_WAIT_FOR(atomic_load(&x.fired) == 3);
	assert_int_equal(x.order[0], 1);
	assert_int_equal(x.order[1], 0);
	assert_int_equal(x.order[2], 2);
	assert_true(x.on_loop);
	hakoi_loop_call(x.l, del_timers, &x);
	hakoi_loop_release(x.l);
	assert_int_equal(atomic_load(&x.fired), 3); /* the cancelled one never fired */
	hakoi_loop_destroy(x.l);
}

/* ---- tasks ---- */

static void noop(void *arg)
{
	(void)arg;
}

typedef struct tasks {
	hakoi_loop_t *l;
	hakoi_task_t block, counted;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int blocking, go;
	atomic_int runs;
} tasks_t;

/* Holds the loop until the test says go. */
static void on_block(hakoi_task_t *t)
{
	tasks_t *x = t->arg;
	pthread_mutex_lock(&x->mu);
	x->blocking = 1;
	pthread_cond_broadcast(&x->cv);
	while (!x->go) {
		pthread_cond_wait(&x->cv, &x->mu);
	}
	pthread_mutex_unlock(&x->mu);
}

static void on_counted(hakoi_task_t *t)
{
	tasks_t *x = t->arg;
	atomic_fetch_add(&x->runs, 1);
}

static void test_posts_coalesce(void **state)
{
	(void)state;
	tasks_t x = {0};
	pthread_mutex_init(&x.mu, NULL);
	pthread_cond_init(&x.cv, NULL);
	atomic_init(&x.runs, 0);
	x.block.fn = on_block;
	x.block.arg = &x;
	x.counted.fn = on_counted;
	x.counted.arg = &x;
	assert_int_equal(hakoi_loop_create(&x.l), 0);
	assert_int_equal(hakoi_loop_hold(x.l), 0);
	hakoi_loop_post(x.l, &x.block);
	pthread_mutex_lock(&x.mu);
	while (!x.blocking) {
		pthread_cond_wait(&x.cv, &x.mu);
	}
	pthread_mutex_unlock(&x.mu);
	/* Queued while the loop is busy: one run for all of these. */
	for (int i = 0; i < 100; i++) {
		hakoi_loop_post(x.l, &x.counted);
	}
	pthread_mutex_lock(&x.mu);
	x.go = 1;
	pthread_cond_broadcast(&x.cv);
	pthread_mutex_unlock(&x.mu);
	EPT_WAIT_FOR(atomic_load(&x.runs) == 1);
	/* hakoi_loop_call returns after a whole round: no second run came from those posts. */
	hakoi_loop_call(x.l, noop, NULL);
	assert_int_equal(atomic_load(&x.runs), 1);
	hakoi_loop_post(x.l, &x.counted);
	EPT_WAIT_FOR(atomic_load(&x.runs) == 2);
	hakoi_loop_release(x.l);
	hakoi_loop_destroy(x.l);
	pthread_cond_destroy(&x.cv);
	pthread_mutex_destroy(&x.mu);
}

/* ---- ios ---- */

typedef struct ios {
	hakoi_loop_t *l;
	int p1[2], p2[2];
	hakoi_io_t a, b;
	hakoi_task_t after;
	atomic_int a_calls, b_calls, rounds_after;
} ios_t;

/* a deletes b in the round where both are ready. */
static void on_a(hakoi_io_t *io, short rev)
{
	ios_t *x = io->arg;
	(void)rev;
	char c;
	assert_int_equal(read(x->p1[0], &c, 1), 1);
	hakoi_io_del(x->l, &x->b);
	hakoi_io_del(x->l, &x->a);
	atomic_fetch_add(&x->a_calls, 1);
	hakoi_loop_post(x->l, &x->after); /* runs at the start of the next round */
}

static void on_b(hakoi_io_t *io, short rev)
{
	ios_t *x = io->arg;
	(void)rev;
	atomic_fetch_add(&x->b_calls, 1);
}

static void on_after(hakoi_task_t *t)
{
	ios_t *x = t->arg;
	atomic_fetch_add(&x->rounds_after, 1);
}

static void add_ios(void *arg)
{
	ios_t *x = arg;
	x->a = (hakoi_io_t){.fd = x->p1[0], .events = POLLIN, .cb = on_a, .arg = x};
	x->b = (hakoi_io_t){.fd = x->p2[0], .events = POLLIN, .cb = on_b, .arg = x};
	assert_int_equal(hakoi_io_add(x->l, &x->a), 0);
	assert_int_equal(hakoi_io_add(x->l, &x->b), 0);
	/* Both readable before the loop polls again. */
	assert_int_equal(write(x->p1[1], "a", 1), 1);
	assert_int_equal(write(x->p2[1], "b", 1), 1);
}

static void test_io_deleted_in_round(void **state)
{
	(void)state;
	ios_t x = {0};
	atomic_init(&x.a_calls, 0);
	atomic_init(&x.b_calls, 0);
	atomic_init(&x.rounds_after, 0);
	x.after.fn = on_after;
	x.after.arg = &x;
	assert_int_equal(pipe(x.p1), 0);
	assert_int_equal(pipe(x.p2), 0);
	assert_int_equal(hakoi_loop_create(&x.l), 0);
	assert_int_equal(hakoi_loop_hold(x.l), 0);
	hakoi_loop_call(x.l, add_ios, &x);
	EPT_WAIT_FOR(atomic_load(&x.rounds_after) == 1);
	assert_int_equal(atomic_load(&x.a_calls), 1);
	assert_int_equal(atomic_load(&x.b_calls), 0); /* deleted before its turn */
	/* b's fd is still readable, and no longer polled: nothing more is called. */
	hakoi_loop_post(x.l, &x.after);
	EPT_WAIT_FOR(atomic_load(&x.rounds_after) == 2);
	assert_int_equal(atomic_load(&x.b_calls), 0);
	hakoi_loop_release(x.l);
	hakoi_loop_destroy(x.l);
	for (int i = 0; i < 2; i++) {
		close(x.p1[i]);
		close(x.p2[i]);
	}
}

/* ---- the thread ---- */

typedef struct life {
	hakoi_loop_t *l;
	hakoi_task_t release;
	hakoi_timer_t t;
	atomic_int released, fired;
} life_t;

static void on_release(hakoi_task_t *task)
{
	life_t *x = task->arg;
	hakoi_loop_release(x->l); /* the last holder, from the loop's own thread */
	atomic_store(&x->released, 1);
}

static void on_fire(hakoi_timer_t *t)
{
	life_t *x = t->arg;
	atomic_store(&x->fired, 1);
}

static void arm_one(void *arg)
{
	life_t *x = arg;
	x->t = (hakoi_timer_t){.cb = on_fire, .arg = x};
	assert_int_equal(hakoi_timer_add(x->l, &x->t), 0);
	hakoi_timer_set(x->l, &x->t, hakoi_now_ns());
}

static void del_one(void *arg)
{
	life_t *x = arg;
	hakoi_timer_del(x->l, &x->t);
}

static void test_thread_while_held(void **state)
{
	(void)state;
	life_t x = {0};
	atomic_init(&x.released, 0);
	atomic_init(&x.fired, 0);
	x.release.fn = on_release;
	x.release.arg = &x;
	int base = htu_thread_count_settled();
	assert_int_equal(hakoi_loop_create(&x.l), 0);
	assert_int_equal(thread_count(), base);
	assert_int_equal(hakoi_loop_hold(x.l), 0);
	assert_int_equal(hakoi_loop_hold(x.l), 0);
	assert_int_equal(thread_count(), base + 1); /* one thread, however many hold it */
	hakoi_loop_release(x.l);
	assert_int_equal(thread_count(), base + 1);
	/* Released by its last holder from its own thread: it ends after that round... */
	hakoi_loop_post(x.l, &x.release);
	EPT_WAIT_FOR(atomic_load(&x.released) == 1);
	assert_int_equal(htu_thread_count_reaches(base), base);
	/* ...and serves again once held again. */
	assert_int_equal(hakoi_loop_hold(x.l), 0);
	assert_int_equal(thread_count(), base + 1);
	hakoi_loop_call(x.l, arm_one, &x);
	EPT_WAIT_FOR(atomic_load(&x.fired) == 1);
	hakoi_loop_call(x.l, del_one, &x);
	hakoi_loop_release(x.l);
	assert_int_equal(htu_thread_count_reaches(base), base);
	hakoi_loop_destroy(x.l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_timers_in_order),
	    cmocka_unit_test(test_posts_coalesce),
	    cmocka_unit_test(test_io_deleted_in_round),
	    cmocka_unit_test(test_thread_while_held),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
