/* What forklift-report builds on, fed with synthetic hosts' records: two "hosts" in this
 * process hand the model back and forth through its packed context, as forklift-host does;
 * merging finds every hand-off, the replay finds the run identical to a single-process one, and
 * every way of breaking continuity (a step run twice or never, a restore that loses a PID term,
 * a record off by one bit) is found and named. A host killed while writing leaves its file cut
 * short: the cut line is skipped and said, and the steps whose records the kill lost are told
 * from steps never run. The plot is written and looked at.
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
	FAULT_KILLED_HOST,   /* node 2 is killed after its first stretch: node 1 runs the rest */
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
		if (!release || s.step == STEPS || (fault == FAULT_KILLED_HOST && *handoffs == 2)) {
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
	/* A record cut short in the middle of the file is corruption, not a kill. */
	f = fopen(path, "w");
	fputs("# forklift steps v1\n# node=1 domain=x delta_usec=1000 dmax_usec=0\n"
	      "step,model_usec,world_usec,node,epoch,phase,x,y,yaw,v,lift,hash\n"
	      "1,1000,1000,1,0,0,0.5,0,0,0,0,00ff\n"
	      "2,2000,2000,1,0,0,0.5,0,0,0\n"
	      "3,3000,3000,1,0,0,0.5,0,0,0,0,00ff\n",
	      f);
	fclose(f);
	assert_int_equal(forklift_steps_load(path, &s, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "bad.csv:5: malformed record"));
	/* A file cut short in its first line has nothing to skip to. */
	f = fopen(path, "w");
	fputs("# forklift st", f);
	fclose(f);
	assert_int_equal(forklift_steps_load(path, &s, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "bad.csv: empty"));
	f = fopen(path, "w");
	fputs("x,y\n", f);
	fclose(f);
	assert_int_equal(forklift_steps_load(path, &s, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "not a forklift steps file"));
	snprintf(path, sizeof(path), "%s/none.csv", dir);
	assert_int_equal(forklift_steps_load(path, &s, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "none.csv"));
}

/* A host killed while its records were on their way to the file: the file keeps its lines up
 * to the record of step `keep`, then `cut_at` bytes of the next line (no newline), no more.
 * Returns the number of that cut line. */
static int cut_file(const char *path, uint64_t keep, size_t cut_at)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char text[8 << 20];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "\n%llu,", (unsigned long long)keep + 1);
	char *next = strstr(text, prefix);
	assert_non_null(next);
	next++;
	assert_true(strchr(next, '\n') - next > (ptrdiff_t)cut_at);
	int line = 1;
	for (const char *p = text; p < next; p++) {
		line += *p == '\n';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, (size_t)(next - text) + cut_at, f),
	                 (size_t)(next - text) + cut_at);
	assert_int_equal(fclose(f), 0);
	return line;
}

/* The final owner killed while writing its last record: that record, cut inside its hash
 * (which still parses as a number), is skipped and said; the rest of the run is exact. */
static void test_cut_last_line_skipped(void **state)
{
	(void)state;
	size_t handoffs;
	synth(FAULT_NONE, &handoffs);
	forklift_run_t run;
	forklift_mission_t m;
	char why[512];
	assert_int_equal(load_run(&run, &m, why, sizeof(why)), 0);
	unsigned last_node = run.rec[STEPS - 1].node;
	forklift_run_free(&run);
	char path[300];
	snprintf(path, sizeof(path), "%s/forklift-%u.steps.csv", dir, last_node);
	/* step,model_usec,world_usec,node,epoch,phase,x,y,yaw,v,lift,hash: all but the hash's
	 * last 3 digits of step STEPS. */
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char line[1024], prev[1024];
	while (fgets(line, sizeof(line), f) != NULL) {
		memcpy(prev, line, sizeof(line));
	}
	fclose(f);
	int lineno = cut_file(path, STEPS - 1, strlen(prev) - 4);

	forklift_steps_t s;
	assert_int_equal(forklift_steps_load(path, &s, why, sizeof(why)), 0);
	char want[400];
	snprintf(want, sizeof(want), "forklift-%u.steps.csv:%d: the last line is cut short",
	         last_node, lineno);
	assert_non_null(strstr(why, want));
	assert_non_null(strstr(why, "skipped"));
	assert_int_equal(s.cut_line, lineno);
	assert_int_equal(s.rec[s.count - 1].step, STEPS - 1);
	forklift_steps_free(&s);

	assert_int_equal(load_run(&run, &m, why, sizeof(why)), 0);
	assert_int_equal(run.steps, STEPS - 1);
	assert_int_equal(run.lost, 0);
	assert_int_equal(forklift_run_replay(&run, &m, why, sizeof(why)), STEPS - 1);
	assert_string_equal(why, "");
	forklift_run_free(&run);
}

/* Node 2 killed after it handed the EU back, its last records still in its buffer: its file
 * ends cut short inside its last stretch. The steps after its last whole record are lost, not
 * "never run"; the replay fills them in and the run is exact to its end. */
static void test_killed_host_records_lost(void **state)
{
	(void)state;
	size_t handoffs;
	synth(FAULT_KILLED_HOST, &handoffs);
	assert_int_equal(handoffs, 2);
	forklift_run_t run;
	forklift_mission_t m;
	char why[512];
	assert_int_equal(load_run(&run, &m, why, sizeof(why)), 0);
	assert_int_equal(run.handoff_count, 2);
	size_t first = run.handoffs[0].index,
	       back = run.handoffs[1].index; /* node 2: [first, back) */
	double x_back = run.handoffs[1].x;
	assert_true(back - first > 100);
	forklift_run_free(&run);
	uint64_t keep = (uint64_t)(first + back) / 2; /* node 2's last whole record */
	char path[300];
	snprintf(path, sizeof(path), "%s/forklift-2.steps.csv", dir);
	int lineno = cut_file(path, keep, 32); /* inside x */

	assert_int_equal(load_run(&run, &m, why, sizeof(why)), 0);
	assert_int_equal(run.steps, STEPS);
	assert_int_equal(run.lost, back - keep);
	char want[200];
	snprintf(want, sizeof(want), "steps %llu..%zu ", (unsigned long long)keep + 1, back);
	assert_non_null(strstr(run.lost_note, want));
	snprintf(want, sizeof(want), "node 2's records end cut short at step %llu (line %d",
	         (unsigned long long)keep, lineno);
	assert_non_null(strstr(run.lost_note, want));
	assert_int_equal(run.handoff_count, 2);
	assert_int_equal(run.handoffs[1].index, back);
	assert_true(run.rec[keep].lost && run.rec[back - 1].lost && !run.rec[back].lost);
	assert_int_equal(forklift_run_replay(&run, &m, why, sizeof(why)), STEPS);
	assert_string_equal(why, "");
	assert_true(run.handoffs[1].x == x_back);
	assert_int_equal(run.rec[back - 1].node, 2);
	forklift_run_free(&run);
}

/* Steps missing after a whole last line are still never run: only a cut file loses steps. */
static void test_missing_steps_after_whole_file_found(void **state)
{
	(void)state;
	size_t handoffs;
	synth(FAULT_KILLED_HOST, &handoffs);
	forklift_run_t run;
	forklift_mission_t m;
	char why[512];
	assert_int_equal(load_run(&run, &m, why, sizeof(why)), 0);
	size_t first = run.handoffs[0].index, back = run.handoffs[1].index;
	forklift_run_free(&run);
	uint64_t keep = (uint64_t)(first + back) / 2;
	char path[300];
	snprintf(path, sizeof(path), "%s/forklift-2.steps.csv", dir);
	cut_file(path, keep, 0); /* ends with the whole line of step `keep` */
	assert_int_equal(load_run(&run, &m, why, sizeof(why)), -1);
	char want[100];
	snprintf(want, sizeof(want), "step %llu (t=", (unsigned long long)keep + 1);
	assert_non_null(strstr(why, want));
	assert_non_null(strstr(why, "was never run"));
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
	    cmocka_unit_test(test_lost_integral_found),
	    cmocka_unit_test(test_repeated_step_found),
	    cmocka_unit_test(test_skipped_step_found),
	    cmocka_unit_test(test_one_bit_found),
	    cmocka_unit_test(test_malformed_files),
	    cmocka_unit_test(test_cut_last_line_skipped),
	    cmocka_unit_test(test_killed_host_records_lost),
	    cmocka_unit_test(test_missing_steps_after_whole_file_found),
	    cmocka_unit_test(test_exact_run),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
