/* The clock rules in one process: several members and a master thread.
 *
 *   master rule: T_c -> T_c + dT_c only if T_c + dT_c - t_i <= Dmax for every asset i,
 *                so T_c <= min t_i + Dmax at all times;
 *   asset rule:  t_i -> t_i + dt_i only if t_i + dt_i <= T_c, so t_i <= T_c at all times;
 *   start barrier: T_c stays put until every asset checked in (polled once) after start.
 *
 * Most tests step the members round-robin from the test thread with hako_member_step_poll /
 * hako_member_step_done, so every state is observed exactly and the assertions are exact. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako_test_util.h"

#define MAXM 4

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_master_t *master;
	hako_member_t *m[MAXM];
	int n;
	hako_time_t dmax;
	pthread_t threads[MAXM];
	int nthreads;
};

static int setup(void **state, const char *test)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name(test, f->name, sizeof(f->name));
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 8;
	cfg.max_channels = 4;
	cfg.arena_bytes = 1 << 16;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->nthreads > 0 && hako_domain_state(f->dom) == HAKO_STATE_RUNNING) {
		hako_domain_stop(f->dom); /* makes the stepping threads return */
	}
	for (int i = 0; i < f->nthreads; i++) {
		pthread_join(f->threads[i], NULL);
	}
	hako_master_stop(f->master);
	for (int i = 0; i < MAXM; i++) {
		hako_member_unregister(f->m[i]);
	}
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	free(f);
	return 0;
}

#define SETUP(test)                                                                                \
	static int setup_##test(void **state)                                                      \
	{                                                                                          \
		return setup(state, #test);                                                        \
	}

static void start_master(struct fx *f, hako_time_t delta, hako_time_t dmax, double rtf)
{
	hako_master_config_t mc = {delta, dmax, rtf};
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), 0);
	f->dmax = dmax;
}

static void add_members(struct fx *f, int n, const hako_time_t *deltas)
{
	static const char *const names[MAXM] = {"m0", "m1", "m2", "m3"};
	for (int i = 0; i < n; i++) {
		assert_int_equal(hako_member_register(f->dom, names[i], deltas[i], &f->m[i]), 0);
	}
	f->n = n;
}

/* Start, every member acks: Running. */
static void run(struct fx *f)
{
	assert_int_equal(hako_domain_start(f->dom), 0);
	for (int i = 0; i < f->n; i++) {
		assert_int_equal(hako_member_ack(f->m[i], HAKO_EVENT_START), 0);
	}
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_RUNNING);
}

/* The rules, checked on a state that nobody else changes. */
static void check_rules(struct fx *f)
{
	hako_time_t w = hako_domain_world_time(f->dom);
	hako_time_t min = INT64_MAX, max = INT64_MIN;
	for (int i = 0; i < f->n; i++) {
		hako_time_t t = hako_member_time(f->m[i]);
		if (t > w) {
			fail_msg("asset %d is ahead of the world: t=%lld T=%lld", i, (long long)t,
			         (long long)w);
		}
		min = t < min ? t : min;
		max = t > max ? t : max;
	}
	if (w > min + f->dmax) {
		fail_msg("world %lld ran more than Dmax %lld ahead of the slowest asset %lld",
		         (long long)w, (long long)f->dmax, (long long)min);
	}
	if (max - min > f->dmax) {
		fail_msg("assets %lld apart, Dmax %lld", (long long)(max - min),
		         (long long)f->dmax);
	}
}

/* Poll member i; if it may step, check the asset rule and step. Returns the poll result. */
static int try_step(struct fx *f, int i)
{
	int r = hako_member_step_poll(f->m[i]);
	if (r == 0) {
		hako_time_t t = hako_member_time(f->m[i]);
		hako_time_t w = hako_domain_world_time(f->dom);
		if (t + hako_member_delta(f->m[i]) > w) {
			fail_msg("asset %d allowed to step from %lld by %lld with world %lld", i,
			         (long long)t, (long long)hako_member_delta(f->m[i]), (long long)w);
		}
		hako_member_step_done(f->m[i]);
		assert_int_equal(hako_member_time(f->m[i]), t + hako_member_delta(f->m[i]));
	} else if (r != HAKO_EAGAIN) {
		fail_msg("step_poll of asset %d: %s", i, hako_strerror(r));
	}
	check_rules(f);
	return r;
}

/* Every member polls once (checks in at the start barrier) without stepping. */
static void check_in(struct fx *f)
{
	for (int i = 0; i < f->n; i++) {
		int r = hako_member_step_poll(f->m[i]);
		assert_true(r == 0 || r == HAKO_EAGAIN);
	}
	check_rules(f);
}

SETUP(lockstep)
static void test_lockstep(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 1000, 1000};
	start_master(f, 1000, 1000, 0);
	add_members(f, 3, d);
	run(f);
	check_in(f);
	assert_int_equal(hako_domain_world_time(f->dom), 1000);
	/* Every member got exactly one step per round and the world moved exactly once per
	 * round, after the last member of the round. */
	for (int round = 0; round < 1000; round++) {
		hako_time_t w = hako_domain_world_time(f->dom);
		for (int i = 0; i < 3; i++) {
			if (i > 0) {
				assert_int_equal(hako_domain_world_time(f->dom), w);
			}
			assert_int_equal(try_step(f, i), 0);
			if (i < 2) {
				assert_int_equal(try_step(f, i), HAKO_EAGAIN);
			}
		}
		assert_int_equal(hako_domain_world_time(f->dom), w + 1000);
	}
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.world_time, 1001 * 1000);
	assert_int_equal(info.world_steps, 1001);
	assert_int_equal(info.delta_usec, 1000);
	assert_int_equal(info.max_delay_usec, 1000);
	hako_asset_info_t list[3];
	int count;
	assert_int_equal(hako_domain_list_assets(f->dom, list, 3, &count), 0);
	for (int i = 0; i < count; i++) {
		assert_int_equal(list[i].steps, 1000);
		assert_int_equal(list[i].lag_usec, 1000);
		assert_int_equal(list[i].checked_in, 1);
	}
}

SETUP(run_ahead)
static void test_run_ahead(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 1000, 1000};
	start_master(f, 1000, 5000, 0);
	add_members(f, 3, d);
	run(f);
	check_in(f);
	/* Nobody stepped yet: the world may be Dmax ahead, no further. */
	assert_int_equal(hako_domain_world_time(f->dom), 5000);
	int steps = 0;
	while (try_step(f, 0) == 0) {
		steps++;
		assert_true(steps <= 1000);
	}
	assert_int_equal(steps, 5);
	assert_int_equal(hako_member_time(f->m[0]), 5000);
	assert_int_equal(hako_domain_world_time(f->dom), 5000);
	assert_int_equal(try_step(f, 0), HAKO_EAGAIN);
	/* m1 moving does not help while m2 is still at 0. */
	assert_int_equal(try_step(f, 1), 0);
	assert_int_equal(hako_domain_world_time(f->dom), 5000);
	assert_int_equal(try_step(f, 2), 0);
	assert_int_equal(hako_domain_world_time(f->dom), 6000);
	assert_int_equal(try_step(f, 0), 0);
	assert_int_equal(hako_member_time(f->m[0]), 6000);
	assert_int_equal(try_step(f, 0), HAKO_EAGAIN);
}

SETUP(start_barrier)
static void test_start_barrier(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 1000, 1000};
	start_master(f, 1000, 3000, 0);
	add_members(f, 3, d);
	run(f);
	assert_int_equal(hako_domain_world_time(f->dom), 0);
	assert_int_equal(try_step(f, 0), HAKO_EAGAIN);
	assert_int_equal(try_step(f, 1), HAKO_EAGAIN);
	assert_int_equal(try_step(f, 0), HAKO_EAGAIN);
	/* The master thread runs too; still nothing may move. */
	htu_sleep_usec(50000);
	assert_int_equal(hako_domain_world_time(f->dom), 0);
	hako_asset_info_t list[3];
	int count;
	assert_int_equal(hako_domain_list_assets(f->dom, list, 3, &count), 0);
	assert_int_equal(count, 3);
	for (int i = 0; i < 3; i++) {
		int want = list[i].id == hako_member_id(f->m[2]) ? 0 : 1;
		assert_int_equal(list[i].checked_in, want);
	}
	/* The last check-in opens the barrier and may step at once. */
	assert_int_equal(try_step(f, 2), 0);
	assert_int_equal(hako_domain_world_time(f->dom), 3000);
	assert_int_equal(try_step(f, 0), 0);

	/* A new run has its own barrier. */
	assert_int_equal(hako_domain_stop(f->dom), 0);
	assert_int_equal(hako_member_step_poll(f->m[1]), HAKO_EINTR);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(hako_member_ack(f->m[i], HAKO_EVENT_STOP), 0);
	}
	hako_time_t w = hako_domain_world_time(f->dom);
	run(f);
	/* Members behind the world may step, but the world waits for the last check-in. */
	assert_int_equal(try_step(f, 0), 0);
	assert_int_equal(try_step(f, 1), 0);
	assert_int_equal(hako_domain_world_time(f->dom), w);
	assert_int_equal(try_step(f, 2), 0);
	assert_int_equal(hako_domain_world_time(f->dom), w + 1000);
}

/* Round-robin polling until the world reaches `target`; fails on a deadlock. */
static void round_robin(struct fx *f, hako_time_t target)
{
	for (int i = 0; i < f->n; i++) {
		try_step(f, i);
	}
	long idle_rounds = 0;
	while (hako_domain_world_time(f->dom) < target) {
		int stepped = 0;
		for (int i = 0; i < f->n; i++) {
			stepped |= try_step(f, i) == 0;
		}
		idle_rounds = stepped ? 0 : idle_rounds + 1;
		if (idle_rounds > 2) {
			fail_msg("deadlock at world %lld",
			         (long long)hako_domain_world_time(f->dom));
		}
	}
}

SETUP(different_deltas)
static void test_different_deltas(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 3000};
	start_master(f, 1000, 3000, 0);
	add_members(f, 2, d);
	run(f);
	round_robin(f, 300000);
	assert_true(hako_member_time(f->m[0]) >= 297000);
	assert_true(hako_member_time(f->m[1]) >= 297000);
	assert_int_equal(hako_member_time(f->m[1]) % 3000, 0);
}

SETUP(odd_deltas)
static void test_odd_deltas(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 1500, 2500, 700};
	start_master(f, 500, 3000, 0);
	add_members(f, 4, d);
	run(f);
	round_robin(f, 200000);
	for (int i = 0; i < 4; i++) {
		assert_true(hako_member_time(f->m[i]) >= 200000 - 3000);
	}
}

SETUP(unregister_unblocks)
static void test_unregister_unblocks(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 1000};
	start_master(f, 1000, 1000, 0);
	add_members(f, 2, d);
	run(f);
	check_in(f);
	assert_int_equal(try_step(f, 0), 0);
	assert_int_equal(try_step(f, 0), HAKO_EAGAIN); /* waits for m1 */
	hako_member_unregister(f->m[1]);
	f->m[1] = NULL;
	f->n = 1;
	assert_int_equal(hako_domain_world_time(f->dom), 2000);
	assert_int_equal(try_step(f, 0), 0);
	assert_int_equal(hako_domain_world_time(f->dom), 3000);
}

SETUP(late_joiner)
static void test_late_joiner(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 2000};
	start_master(f, 1000, 2000, 0);
	add_members(f, 1, d);
	run(f);
	round_robin(f, 50000);
	assert_int_equal(hako_domain_stop(f->dom), 0);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_STOP), 0);
	hako_time_t w = hako_domain_world_time(f->dom);
	/* Registered after a run, without reset: it starts at the world time. */
	assert_int_equal(hako_member_register(f->dom, "m1", 2000, &f->m[1]), 0);
	assert_int_equal(hako_member_time(f->m[1]), w);
	f->n = 2;
	check_rules(f);
	run(f);
	round_robin(f, w + 50000);
}

SETUP(stop_interrupts)
static void test_stop_interrupts(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 1000};
	start_master(f, 1000, 1000, 0);
	add_members(f, 2, d);
	assert_int_equal(hako_member_step_poll(f->m[0]), HAKO_EINTR); /* Stopped */
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_member_step_poll(f->m[0]), HAKO_EAGAIN); /* Runnable */
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_START), 0);
	assert_int_equal(hako_member_ack(f->m[1], HAKO_EVENT_START), 0);
	try_step(f, 0);
	assert_int_equal(hako_domain_stop(f->dom), 0);
	assert_int_equal(hako_member_step_poll(f->m[0]), HAKO_EINTR);
	assert_int_equal(hako_member_step_wait(f->m[1]), HAKO_EINTR);
	assert_int_equal(hako_member_step_poll(NULL), HAKO_EINVAL);
	assert_int_equal(hako_member_step_wait(NULL), HAKO_EINVAL);
}

/* Threads that step with the blocking wait and record rule violations. */
struct stepper {
	struct fx *f;
	int i;
	_Atomic int violations;
	_Atomic uint64_t steps;
	_Atomic int end_rc;
	char why[200];
};

static void *stepper_main(void *p)
{
	struct stepper *s = p;
	hako_member_t *m = s->f->m[s->i];
	int r;
	while ((r = hako_member_step_wait(m)) == 0) {
		hako_time_t t = hako_member_time(m);
		hako_time_t w = hako_domain_world_time(s->f->dom);
		/* w was read after the wait allowed the step: it is >= T_c at that moment. And
		 * t_i does not move until step_done, so T_c <= t_i + Dmax still holds at w. */
		if (t + hako_member_delta(m) > w || w - t > s->f->dmax) {
			if (atomic_fetch_add(&s->violations, 1) == 0) {
				snprintf(s->why, sizeof(s->why), "t=%lld dt=%lld T=%lld",
				         (long long)t, (long long)hako_member_delta(m),
				         (long long)w);
			}
		}
		hako_member_step_done(m);
		atomic_fetch_add(&s->steps, 1);
	}
	atomic_store(&s->end_rc, r);
	int ev;
	if (hako_member_wait_event(m, HTU_TIMEOUT_USEC, &ev) == 0 && ev == HAKO_EVENT_STOP) {
		hako_member_ack(m, ev);
	}
	return NULL;
}

static void run_threads(struct fx *f, struct stepper *s, hako_time_t target)
{
	for (int i = 0; i < f->n; i++) {
		s[i].f = f;
		s[i].i = i;
		assert_int_equal(pthread_create(&f->threads[i], NULL, stepper_main, &s[i]), 0);
		f->nthreads++;
	}
	int ok;
	HTU_WAIT_UNTIL(ok, hako_domain_world_time(f->dom) >= target, HTU_TIMEOUT_USEC);
	assert_true(ok);
	assert_int_equal(hako_domain_stop(f->dom), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	for (int i = 0; i < f->nthreads; i++) {
		pthread_join(f->threads[i], NULL);
	}
	f->nthreads = 0;
	check_rules(f);
	for (int i = 0; i < f->n; i++) {
		if (atomic_load(&s[i].violations) != 0) {
			fail_msg("asset %d broke a rule %d times, first: %s", i,
			         atomic_load(&s[i].violations), s[i].why);
		}
		assert_int_equal(atomic_load(&s[i].end_rc), HAKO_EINTR);
		assert_true(atomic_load(&s[i].steps) > 0);
	}
}

SETUP(threads_free_running)
static void test_threads_free_running(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 2000, 1000};
	static struct stepper s[3];
	memset(s, 0, sizeof(s));
	start_master(f, 1000, 3000, 0);
	add_members(f, 3, d);
	run(f);
	run_threads(f, s, 2000000);
	assert_true(atomic_load(&s[1].steps) * 2000 >= 2000000 - 3000);
}

SETUP(threads_paced)
static void test_threads_paced(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 1000};
	static struct stepper s[2];
	memset(s, 0, sizeof(s));
	/* 100x real time: the master thread advances the world (every 10 us of wall time). */
	start_master(f, 1000, 1000, 100.0);
	add_members(f, 2, d);
	run(f);
	run_threads(f, s, 200000);
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_true(info.real_time_factor == 100.0);
}

/* Threads step freely until the stop time; the world halts exactly there and the master stops
 * the run by itself. */
static void stop_at_exactly(struct fx *f, struct stepper *s, hako_time_t stop_at)
{
	assert_int_equal(hako_domain_set_stop_time(f->dom, stop_at), 0);
	assert_int_equal(hako_domain_stop_time(f->dom), stop_at);
	for (int i = 0; i < f->n; i++) {
		s[i].f = f;
		s[i].i = i;
		assert_int_equal(pthread_create(&f->threads[i], NULL, stepper_main, &s[i]), 0);
		f->nthreads++;
	}
	assert_int_equal(hako_domain_wait_world_time(f->dom, stop_at, HTU_TIMEOUT_USEC), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	for (int i = 0; i < f->nthreads; i++) {
		pthread_join(f->threads[i], NULL);
	}
	f->nthreads = 0;
	assert_int_equal(hako_domain_world_time(f->dom), stop_at);
	/* Cleared once reached: the master stops the run first, then clears it (an observer that
	 * sees it cleared also sees the run stopping), so it may still be set just after STOPPED
	 * shows. */
	int cleared;
	HTU_WAIT_UNTIL(cleared, hako_domain_stop_time(f->dom) == 0, HTU_TIMEOUT_USEC);
	assert_true(cleared);
	for (int i = 0; i < f->n; i++) {
		assert_int_equal(hako_member_time(f->m[i]), stop_at);
		assert_int_equal(atomic_load(&s[i].steps), stop_at / hako_member_delta(f->m[i]));
		assert_int_equal(atomic_load(&s[i].end_rc), HAKO_EINTR);
	}
	/* A wait for a time the stopped run will never reach ends at once. */
	assert_int_equal(hako_domain_wait_world_time(f->dom, stop_at + 1000, HTU_TIMEOUT_USEC),
	                 HAKO_EINTR);
}

SETUP(stop_time_free_running)
static void test_stop_time_free_running(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 1000, 2000};
	static struct stepper s[3];
	memset(s, 0, sizeof(s));
	start_master(f, 1000, 2000, 0);
	add_members(f, 3, d);
	run(f);
	stop_at_exactly(f, s, 500000);
}

SETUP(stop_time_paced)
static void test_stop_time_paced(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 1000};
	static struct stepper s[2];
	memset(s, 0, sizeof(s));
	start_master(f, 1000, 1000, 100.0);
	add_members(f, 2, d);
	run(f);
	stop_at_exactly(f, s, 100000);
}

/* Times whose sums could overflow int64 are refused where they enter. */
SETUP(time_bounds)
static void test_time_bounds(void **state)
{
	struct fx *f = *state;
	hako_member_t *m = NULL;
	hako_master_config_t mc = {1000, (hako_time_t)1 << 41, 0};
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), HAKO_EINVAL);
	mc.max_delay_usec = 1000;
	mc.real_time_factor = 0.0001; /* would round to 0 = free running */
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), HAKO_EINVAL);
	assert_int_equal(hako_member_register(f->dom, "huge", (hako_time_t)1 << 41, &m),
	                 HAKO_EINVAL);
	assert_int_equal(hako_domain_set_stop_time(f->dom, INT64_MAX), HAKO_EINVAL);
	start_master(f, 1024, (hako_time_t)1 << 40, 0.001);
	assert_int_equal(hako_member_register(f->dom, "big", (hako_time_t)1 << 40, &f->m[0]), 0);
}

/* A stop time between two world steps: the run stops at the last step before it. */
SETUP(stop_time_between_steps)
static void test_stop_time_between_steps(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 1000};
	static struct stepper s[2];
	memset(s, 0, sizeof(s));
	start_master(f, 1000, 1000, 0);
	add_members(f, 2, d);
	run(f);
	assert_int_equal(hako_domain_set_stop_time(f->dom, 100500), 0);
	for (int i = 0; i < f->n; i++) {
		s[i].f = f;
		s[i].i = i;
		assert_int_equal(pthread_create(&f->threads[i], NULL, stepper_main, &s[i]), 0);
		f->nthreads++;
	}
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	for (int i = 0; i < f->nthreads; i++) {
		pthread_join(f->threads[i], NULL);
		assert_int_equal(atomic_load(&s[i].steps), 100);
	}
	f->nthreads = 0;
	assert_int_equal(hako_domain_world_time(f->dom), 100000);
}

/* The conductor process lives on but stops its master thread while assets run free: the run
 * must not go on without liveness checks; the assets' next look at it puts the domain in Error. */
SETUP(master_stopped)
static void test_master_stopped(void **state)
{
	struct fx *f = *state;
	const hako_time_t d[] = {1000, 1000};
	static struct stepper s[2];
	memset(s, 0, sizeof(s));
	start_master(f, 1000, 1000, 0);
	add_members(f, 2, d);
	run(f);
	for (int i = 0; i < f->n; i++) {
		s[i].f = f;
		s[i].i = i;
		assert_int_equal(pthread_create(&f->threads[i], NULL, stepper_main, &s[i]), 0);
		f->nthreads++;
	}
	int ok;
	HTU_WAIT_UNTIL(ok, hako_domain_world_time(f->dom) >= 10000, HTU_TIMEOUT_USEC);
	assert_true(ok);
	hako_master_stop(f->master);
	f->master = NULL;
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_ERROR, HTU_TIMEOUT_USEC), 0);
	for (int i = 0; i < f->nthreads; i++) {
		pthread_join(f->threads[i], NULL);
		assert_int_equal(atomic_load(&s[i].end_rc), HAKO_EINTR);
	}
	f->nthreads = 0;
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.master_running, 0);
	assert_non_null(strstr(info.error_reason, "stopped its master"));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup_##name, teardown)

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    T(lockstep),
	    T(run_ahead),
	    T(start_barrier),
	    T(different_deltas),
	    T(odd_deltas),
	    T(unregister_unblocks),
	    T(late_joiner),
	    T(stop_interrupts),
	    T(threads_free_running),
	    T(threads_paced),
	    T(stop_time_free_running),
	    T(stop_time_paced),
	    T(master_stopped),
	    T(stop_time_between_steps),
	    T(time_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
