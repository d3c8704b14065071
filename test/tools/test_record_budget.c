/* hako-record's CPU budget (tools/hako-record/record_budget.c), on a simulated world: a fixed
 * budget keeps the recorder's CPU time at its share; the automatic one finds the budget that
 * keeps a free world at >= 0.9 of its speed when reading costs the world in proportion to the
 * recorder's CPU time, grows to a whole CPU when reading costs nothing or the run is paced and
 * keeps its pace, is quiet (reads nothing) one window in REC_CYCLE in a free run and never in a
 * paced one, and is not thrown by a reset that takes the world time back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "record_budget.h"

#define LOOK_USEC 100 /* the CPU (and wall) time of one look that reads */

typedef struct sim {
	double base;  /* world us per wall us without the recorder */
	double cost;  /* speed lost per CPU the recorder uses: speed = base (1 - cost share) */
	double rtf;   /* the domain's pace (0: free); a paced world goes at most this fast */
	int64_t wall; /* us */
	int64_t cpu;  /* ns */
	double world; /* us */
	int64_t quiet_looks, looks;
} sim_t;

/* Run the recorder against the world for `usec` of wall time. */
static void run(sim_t *s, rec_budget_t *b, int64_t usec)
{
	int64_t end = s->wall + usec;
	while (s->wall < end) {
		int reading = rec_budget_may_read(b);
		s->looks++;
		s->quiet_looks += !reading;
		int64_t busy = reading ? LOOK_USEC : 0;
		s->cpu += busy * 1000;
		int64_t nap =
		    rec_budget_nap(b, s->wall + busy, s->cpu, (int64_t)s->world, s->rtf, 100000) /
		    1000;
		int64_t dt = busy + (nap > 0 ? nap : 1);
		double share = (double)busy / (double)dt;
		double speed = s->base * (1 - s->cost * share);
		if (s->rtf > 0 && speed > s->rtf) {
			speed = s->rtf;
		}
		s->world += speed * (double)dt;
		s->wall += dt;
	}
}

static void test_fixed(void **state)
{
	(void)state;
	rec_budget_t b;
	rec_budget_init(&b, 0.1);
	sim_t s = {.base = 10};
	run(&s, &b, 5000000);
	/* 10 % of the wall time, give or take a look. */
	double share = (double)s.cpu / 1000.0 / (double)s.wall;
	assert_true(share > 0.09 && share <= 0.101);
	assert_int_equal(s.quiet_looks, 0);
	/* No limit: a look every poll (as long as a look), all of them reading. */
	rec_budget_init(&b, 0);
	sim_t u = {.base = 10};
	run(&u, &b, 1000000);
	assert_true((double)u.cpu / 1000.0 / (double)u.wall > 0.49);
	assert_int_equal(u.quiet_looks, 0);
}

static void test_auto_finds_the_cost(void **state)
{
	(void)state;
	rec_budget_t b;
	rec_budget_init(&b, -1);
	assert_true(b.cpus > 0.09 && b.cpus < 0.11);
	/* Each CPU of recording costs the world 60 % of its speed: 0.9 of it is 1/6 CPU. */
	sim_t s = {.base = 15, .cost = 0.6};
	run(&s, &b, 60000000);
	assert_true(b.changes > 30); /* a decision every REC_RATIOS cycles */
	double loss = 0.6 * b.cpus;
	assert_true(loss <= 0.1);    /* the world at >= 0.9 of its speed */
	assert_true(b.cpus >= 0.05); /* and not far below what it could */
	assert_true(b.ratio >= 0.9);
	/* One window in REC_CYCLE is quiet: its looks are a small part, but there are some. */
	assert_true(s.quiet_looks > 0 && s.quiet_looks < s.looks / 5);
}

static void test_auto_grows_when_free(void **state)
{
	(void)state;
	rec_budget_t b;
	rec_budget_init(&b, -1);
	sim_t s = {.base = 15, .cost = 0};
	run(&s, &b, 30000000);
	assert_true(b.cpus >= REC_AUTO_MAX - 1e-9);
	/* A cost that appears later brings it down again. */
	s.cost = 0.5;
	run(&s, &b, 60000000);
	assert_true(0.5 * b.cpus <= 0.1);
}

static void test_auto_paced(void **state)
{
	(void)state;
	rec_budget_t b;
	rec_budget_init(&b, -1);
	/* A paced run with slack: its pace is the reference, no quiet window, a whole CPU. */
	sim_t s = {.base = 15, .cost = 0.5, .rtf = 1};
	run(&s, &b, 30000000);
	assert_int_equal(s.quiet_looks, 0);
	assert_true(b.cpus >= REC_AUTO_MAX - 1e-9);
	/* A paced run the recording slows below its pace: the budget shrinks. */
	rec_budget_init(&b, -1);
	sim_t t = {.base = 1, .cost = 0.6, .rtf = 1};
	run(&t, &b, 30000000);
	assert_true(0.6 * b.cpus <= 0.1);
}

static void test_reset_and_pause(void **state)
{
	(void)state;
	rec_budget_t b;
	rec_budget_init(&b, -1);
	sim_t s = {.base = 15, .cost = 0.6};
	run(&s, &b, 5000000);
	/* A reset takes the world back to 0, a pause stops it: no negative or absurd speed. */
	for (int i = 0; i < 20; i++) {
		s.world = 0;
		run(&s, &b, 200000);
		rec_budget_pause(&b);
		assert_true(rec_budget_may_read(&b));
		run(&s, &b, 100000);
	}
	assert_true(b.cpus >= REC_AUTO_MIN && b.cpus <= REC_AUTO_MAX);
	assert_true(b.ratio > 0.5 && b.ratio < 1.5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fixed),
	    cmocka_unit_test(test_auto_finds_the_cost),
	    cmocka_unit_test(test_auto_grows_when_free),
	    cmocka_unit_test(test_auto_paced),
	    cmocka_unit_test(test_reset_and_pause),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
