/* What forklift-report builds on, fed with synthetic hosts' records: two "hosts" in this
 * process hand the model back and forth through its packed context, as forklift-host does;
 * merging finds every hand-off, the replay finds the run identical to a single-process one, and
 * every way of breaking continuity (a step run twice or never, a restore that loses a PID term,
 * a record off by one bit) is found and named. The plot is written and looked at.
 *
 * FORKLIFT_TEST_KEEP=DIR keeps the records and the plot in DIR. */
#define _GNU_SOURCE /* mkdtemp */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "forklift_model.h"
#include "forklift_plot.h"
#include "forklift_records.h"

#define STEPS    20000
#define BOUNDARY 1.0
#define MARGIN   0.035 /* v_max * 50 ms */
#define GAP_USEC 3000  /* world time between the old owner's last step and the new one's first */

enum fault {
	FAULT_NONE,
	FAULT_LOSE_INTEGRAL, /* the new owner restores all but the speed PID's integral */
	FAULT_REPEAT_STEP,   /* the new owner runs the old owner's last step again */
	FAULT_SKIP_STEP,     /* the new owner skips a step */
};

static char dir[256];

/* Two hosts of the EU: node 1 owns it below the boundary, node 2 above. */
static void synth(enum fault fault, size_t *handoffs)
{
	char path[2][300];
	FILE *f[2];
	for (int i = 0; i < 2; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/forklift-%d.steps.csv", dir, i + 1);
		f[i] = fopen(path[i], "w");
		assert_non_null(f[i]);
		forklift_steps_info_t info = {.node = (unsigned)i + 1,
		                              .delta_usec = FORKLIFT_DT_USEC,
		                              .dmax_usec = 50000,
		                              .have_mission = i == 0};
		snprintf(info.domain, sizeof(info.domain), "test-%d", (int)getpid());
		forklift_mission_default(&info.mission);
		forklift_steps_write_header(f[i], &info);
	}
	forklift_mission_t m;
	forklift_mission_default(&m);
	forklift_state_t s;
	forklift_model_init(&s, &m);
	int owner = 0;
	uint8_t epoch = 0;
	hako_time_t lag = 0; /* world time lost in hand-offs so far */
	*handoffs = 0;
	while (s.step < STEPS) {
		forklift_model_step(&s);
		forklift_steps_write(f[owner], &s, (hako_time_t)s.step * FORKLIFT_DT_USEC + lag,
		                     (uint8_t)(owner + 1), epoch);
		int release = owner == 0 ? s.x >= BOUNDARY - MARGIN && s.v > 0
		                         : s.x <= BOUNDARY + MARGIN && s.v < 0;
		if (!release || s.step == STEPS) {
			continue;
		}
		uint8_t ctx[FORKLIFT_CONTEXT_SIZE];
		size_t n = forklift_context_pack(&s, ctx, sizeof(ctx));
		forklift_state_t next;
		assert_int_equal(forklift_context_unpack(&next, ctx, n), 0);
		if (fault == FAULT_LOSE_INTEGRAL && *handoffs == 2) {
			next.speed_pid.integral = 0;
		}
		if (fault == FAULT_REPEAT_STEP && *handoffs == 1) {
			forklift_steps_write(f[!owner], &s, (hako_time_t)s.step * 1000 + lag,
			                     (uint8_t)(!owner + 1), (uint8_t)(epoch + 1));
		}
		if (fault == FAULT_SKIP_STEP && *handoffs == 1) {
			forklift_model_step(&next);
		}
		s = next;
		owner = !owner;
		epoch++;
		lag += GAP_USEC - FORKLIFT_DT_USEC;
		(*handoffs)++;
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fclose(f[i]), 0);
	}
}

static int load_run(forklift_run_t *run, forklift_mission_t *m, char *why, size_t len)
{
	forklift_steps_t files[2];
	for (int i = 0; i < 2; i++) {
		char path[300];
		snprintf(path, sizeof(path), "%s/forklift-%d.steps.csv", dir, i + 1);
		assert_int_equal(forklift_steps_load(path, &files[i], why, len), 0);
	}
	assert_true(files[0].info.have_mission);
	assert_false(files[1].info.have_mission);
	assert_int_equal(files[1].info.node, 2);
	assert_int_equal(files[0].info.dmax_usec, 50000);
	*m = files[0].info.mission;
	int r = forklift_run_merge(files, 2, run, why, len);
	forklift_steps_free(&files[0]);
	forklift_steps_free(&files[1]);
	return r;
}

static void test_exact_run(void **state)
{
	(void)state;
	size_t handoffs;
	synth(FAULT_NONE, &handoffs);
	assert_true(handoffs >= 3);
	forklift_run_t run;
	forklift_mission_t m;
	char why[512];
	assert_int_equal(load_run(&run, &m, why, sizeof(why)), 0);
	assert_int_equal(run.steps, STEPS);
	assert_int_equal(run.handoff_count, handoffs);
	assert_int_equal(run.reclaims, 0);
	for (size_t i = 0; i < run.handoff_count; i++) {
		const forklift_handoff_t *h = &run.handoffs[i];
		assert_int_equal(h->from, i % 2 == 0 ? 1 : 2);
		assert_int_equal(h->to, i % 2 == 0 ? 2 : 1);
		assert_int_equal(h->epoch, i + 1);
		assert_int_equal(h->gap_usec, GAP_USEC);
		assert_true(fabs(h->x - BOUNDARY) < MARGIN + 0.001);
	}
	assert_int_equal(forklift_run_replay(&run, &m, why, sizeof(why)), STEPS);
	assert_string_equal(why, "");

	forklift_plot_t p = {&run,           BOUNDARY, MARGIN, "Forklift RD-Light (synthetic)",
	                     "test figures", {1, 2},   0,      0};
	char svg[300];
	snprintf(svg, sizeof(svg), "%s/forklift-x.svg", dir);
	assert_int_equal(forklift_plot_svg(svg, &p), 0);
	FILE *f = fopen(svg, "r");
	assert_non_null(f);
	static char text[1 << 20];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	assert_non_null(strstr(text, "<svg"));
	assert_non_null(strstr(text, "</svg>"));
	assert_non_null(strstr(text, ">e1<"));
	char label[16];
	snprintf(label, sizeof(label), ">e%zu<", handoffs);
	assert_non_null(strstr(text, label));
	/* One polyline per owner's stretch. */
	size_t lines = 0;
	for (const char *q = text; (q = strstr(q, "<polyline")) != NULL; q++) {
		lines++;
	}
	assert_int_equal(lines, handoffs + 1);
	forklift_run_free(&run);
}

static void test_lost_integral_found(void **state)
{
	(void)state;
	size_t handoffs;
	synth(FAULT_LOSE_INTEGRAL, &handoffs);
	forklift_run_t run;
	forklift_mission_t m;
	char why[512];
	assert_int_equal(load_run(&run, &m, why, sizeof(why)), 0);
	size_t same = forklift_run_replay(&run, &m, why, sizeof(why));
	assert_true(same < STEPS);
	/* The first step of the third owner is the first that differs. */
	assert_int_equal(same, run.handoffs[2].index);
	assert_non_null(strstr(why, "epoch 3"));
	forklift_run_free(&run);
}

static void test_repeated_step_found(void **state)
{
	(void)state;
	size_t handoffs;
	synth(FAULT_REPEAT_STEP, &handoffs);
	forklift_run_t run;
	forklift_mission_t m;
	char why[512];
	assert_int_equal(load_run(&run, &m, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "was run twice: by node"));
}

static void test_skipped_step_found(void **state)
{
	(void)state;
	size_t handoffs;
	synth(FAULT_SKIP_STEP, &handoffs);
	forklift_run_t run;
	forklift_mission_t m;
	char why[512];
	assert_int_equal(load_run(&run, &m, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "was never run"));
}

/* One bit off in one field of one record is a mismatch, named with its step. */
static void test_one_bit_found(void **state)
{
	(void)state;
	size_t handoffs;
	synth(FAULT_NONE, &handoffs);
	forklift_run_t run;
	forklift_mission_t m;
	char why[512];
	assert_int_equal(load_run(&run, &m, why, sizeof(why)), 0);
	run.rec[12344].lift = nextafter(run.rec[12344].lift, 10.0);
	assert_int_equal(forklift_run_replay(&run, &m, why, sizeof(why)), 12344);
	assert_non_null(strstr(why, "step 12345 "));
	assert_non_null(strstr(why, "lift"));
	forklift_run_free(&run);
}

static void test_malformed_files(void **state)
{
	(void)state;
	char path[300], why[512];
	forklift_steps_t s;
	snprintf(path, sizeof(path), "%s/bad.csv", dir);
	FILE *f = fopen(path, "w");
	fputs("# forklift steps v1\n# node=1 domain=x delta_usec=1000 dmax_usec=0\n"
	      "step,model_usec,world_usec,node,epoch,phase,x,y,yaw,v,lift,hash\n"
	      "1,1000,1000,1,0,0,0.5,0,0,0,0,00ff\n"
	      "2,2000,2000,1,0,0,0.5,0,0,0\n",
	      f);
	fclose(f);
	assert_int_equal(forklift_steps_load(path, &s, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "bad.csv:5: malformed record"));
	f = fopen(path, "w");
	fputs("x,y\n", f);
	fclose(f);
	assert_int_equal(forklift_steps_load(path, &s, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "not a forklift steps file"));
	snprintf(path, sizeof(path), "%s/none.csv", dir);
	assert_int_equal(forklift_steps_load(path, &s, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "none.csv"));
}

static int setup(void **state)
{
	(void)state;
	const char *keep = getenv("FORKLIFT_TEST_KEEP");
	if (keep != NULL && keep[0] != '\0') {
		snprintf(dir, sizeof(dir), "%s", keep);
		return 0;
	}
	snprintf(dir, sizeof(dir), "/tmp/test-forklift-report-XXXXXX");
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	if (getenv("FORKLIFT_TEST_KEEP") == NULL) {
		const char *files[] = {"forklift-1.steps.csv", "forklift-2.steps.csv",
		                       "forklift-x.svg", "bad.csv"};
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			char path[300];
			snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
			unlink(path);
		}
		rmdir(dir);
	}
	return 0;
}

int main(void)
{
	/* test_exact_run last: with FORKLIFT_TEST_KEEP the kept files are the good run's. */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lost_integral_found), cmocka_unit_test(test_repeated_step_found),
	    cmocka_unit_test(test_skipped_step_found),  cmocka_unit_test(test_one_bit_found),
	    cmocka_unit_test(test_malformed_files),     cmocka_unit_test(test_exact_run),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
