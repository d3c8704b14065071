/* fleet-report on synthetic trajectories of 8 drones on two hosts (drones 1-4 on host 1, 5-8
 * on host 2), each drone exactly on its target: the letters until 18 s, the circle until 33 s,
 * then on the ground. What a run that lost a host looks like to the report: host 2 killed,
 * its file ending with a line cut short, host 1 taking its drones over some time later. The
 * report skips the cut line and says so, and passes the run; a run whose lost drones are never
 * taken over fails, and so does a file cut short in the middle (corruption, not a kill).
 *
 * usage: test_fleet_report PATH_OF_FLEET_REPORT */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "formation.h"
#include "hako_test_util.h"

#define DRONES 8

static const char *g_report;

/* A run: sample instants k = 1..end_k (t = k / 10 s). Host 2 writes its drones up to kill_k
 * (0: never killed), then `cut` (a line cut short, no newline); host 1 flies them from take_k
 * (0: never). corrupt_k: host 2's line of drone 5 at that instant is cut short, with its
 * newline, in the middle of the file. */
struct run {
	int end_k, kill_k, take_k, corrupt_k;
	const char *cut;
};

static void sample(FILE *f, int k, unsigned drone, unsigned host)
{
	fleet_formation_t form = k < 180 ? FLEET_HAKO : FLEET_CIRCLE;
	double p[3];
	fleet_formation_point(form, drone - 1, DRONES, p);
	if (k >= 330) {
		p[2] = 0; /* landed */
	}
	fprintf(f, "%.1f,%u,%.3f,%.3f,%.3f,%u\n", k / 10.0, drone, p[0], p[1], p[2], host);
}

/* The lines host 2's file has before its line of drone `drone` at instant k. */
static int lines_before(int k, unsigned drone)
{
	return 1 + (k - 1) * 4 + (int)(drone - 5);
}

static void write_run(const char *dir, const struct run *r)
{
	char path[2][400];
	FILE *f[2];
	for (int h = 0; h < 2; h++) {
		snprintf(path[h], sizeof(path[h]), "%s/fleet-host-%d.csv", dir, h + 1);
		f[h] = fopen(path[h], "w");
		assert_non_null(f[h]);
		fputs("t,drone,x,y,z,host\n", f[h]);
	}
	for (int k = 1; k <= r->end_k; k++) {
		for (unsigned d = 1; d <= DRONES; d++) {
			int mine2 = d > 4 && (r->kill_k == 0 || k <= r->kill_k);
			int mine1 = d <= 4 || (r->take_k != 0 && k >= r->take_k);
			if (mine2 && k == r->corrupt_k && d == 5) {
				fputs("17.9,5,-3.2\n", f[1]);
			} else if (mine2) {
				sample(f[1], k, d, 2);
			}
			if (mine1) {
				sample(f[0], k, d, 1);
			}
		}
	}
	if (r->cut != NULL) {
		fputs(r->cut, f[1]);
	}
	assert_int_equal(fclose(f[0]), 0);
	assert_int_equal(fclose(f[1]), 0);
}

/* Run fleet-report on dir: its exit status, its output in out (static, overwritten). */
static int report(const char *dir, char **out)
{
	char log[400];
	snprintf(log, sizeof(log), "%s/report.txt", dir);
	htu_exec_t x = {{(char *)g_report, "--dir", (char *)dir, NULL}, log};
	pid_t pid = htu_fork(htu_exec_main, &x);
	int status = 0;
	assert_int_equal(htu_wait_child(pid, HTU_TIMEOUT_USEC, &status), 0);
	*out = htu_slurp(log);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void expect(const char *out, const char *text)
{
	if (strstr(out, text) == NULL) {
		fail_msg("fleet-report said:\n%s\nnot: %s", out, text);
	}
}

static void test_whole_run(void **state)
{
	(void)state;
	char dir[300], *out;
	assert_non_null(htu_tmpdir(dir, sizeof(dir)));
	write_run(dir, &(struct run){.end_k = 380});
	assert_int_equal(report(dir, &out), 0);
	expect(out, "hako     at 17.9 s: 8 of 8 drones within 0.10 m");
	expect(out, "circle   at 32.9 s: 8 of 8 drones within 0.10 m");
	expect(out, "landed   at 38.0 s: 8 of 8 drones on the ground");
	assert_null(strstr(out, "cut short"));
}

/* Host 2 killed at 17.85 s while writing its line of drone 5 at 17.9 s (cut inside a
 * number); host 1 takes drones 5-8 over at 18.5 s; every drone lands. */
static void test_killed_host_cut_line_skipped(void **state)
{
	(void)state;
	char dir[300], *out, want[500];
	assert_non_null(htu_tmpdir(dir, sizeof(dir)));
	write_run(dir,
	          &(struct run){.end_k = 380, .kill_k = 178, .take_k = 185, .cut = "17.9,5,-3.2"});
	assert_int_equal(report(dir, &out), 0);
	snprintf(want, sizeof(want),
	         "fleet-report: %s/fleet-host-2.csv:%d: the last line is cut short (its host was "
	         "killed while writing it): skipped",
	         dir, lines_before(179, 5) + 1);
	expect(out, want);
	expect(out, "fleet: 8 drones on 2 host(s), at the start: 4 on host 1; 4 on host 2;");
	expect(out, "hako     at 17.9 s: 4 of 4 drones within 0.10 m of their targets (worst ");
	expect(out, " m); 4 more without a sample then, being taken over from a lost host\n");
	expect(out, "circle   at 32.9 s: 8 of 8 drones within 0.10 m");
	expect(out, "landed   at 38.0 s: 8 of 8 drones on the ground");
}

/* The same when the kill came right after a whole line: nothing to skip, and the drones
 * without a sample at 17.9 s are those being taken over. */
static void test_killed_host_whole_lines_taken_over(void **state)
{
	(void)state;
	char dir[300], *out;
	assert_non_null(htu_tmpdir(dir, sizeof(dir)));
	write_run(dir, &(struct run){.end_k = 380, .kill_k = 178, .take_k = 185});
	assert_int_equal(report(dir, &out), 0);
	assert_null(strstr(out, "cut short"));
	expect(out, " m); 4 more without a sample then, being taken over from a lost host\n");
	expect(out, "landed   at 38.0 s: 8 of 8 drones on the ground");
}

/* Drones of a killed host that nobody takes over fail the checks, even when the run ends
 * before the landing is checked. */
static void test_lost_drones_not_taken_over_fail(void **state)
{
	(void)state;
	char dir[300], *out;
	assert_non_null(htu_tmpdir(dir, sizeof(dir)));
	write_run(dir, &(struct run){.end_k = 200, .kill_k = 178, .cut = "17.9,5,-3.2"});
	assert_int_equal(report(dir, &out), 1);
	expect(out, "hako     at 17.9 s: 4 of 4 drones within 0.10 m of their targets (worst ");
	assert_null(strstr(out, "taken over"));
	write_run(dir, &(struct run){.end_k = 380, .kill_k = 178});
	assert_int_equal(report(dir, &out), 1);
	expect(out, "landed   at 38.0 s: 4 of 4 drones on the ground");
}

/* A line cut short with its newline, lines after it: a corrupted file, refused where. */
static void test_corrupted_middle_line_refused(void **state)
{
	(void)state;
	char dir[300], *out, want[500];
	assert_non_null(htu_tmpdir(dir, sizeof(dir)));
	write_run(dir, &(struct run){.end_k = 380, .corrupt_k = 179});
	assert_int_equal(report(dir, &out), 1);
	snprintf(want, sizeof(want),
	         "fleet-report: %s/fleet-host-2.csv:%d: not a sample (t,drone,x,y,z,host)", dir,
	         lines_before(179, 5) + 1);
	expect(out, want);
	assert_null(strstr(out, "cut short"));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_fleet_report PATH_OF_FLEET_REPORT\n");
		return 2;
	}
	g_report = argv[1];
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_whole_run),
	    cmocka_unit_test(test_killed_host_cut_line_skipped),
	    cmocka_unit_test(test_killed_host_whole_lines_taken_over),
	    cmocka_unit_test(test_lost_drones_not_taken_over_fail),
	    cmocka_unit_test(test_corrupted_middle_line_refused),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	htu_remove_tmpdirs();
	return r;
}
