/* hako_rd_check on hand-written traces: one good hand-off, then the same trace with each kind
 * of violation put in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/log.h"
#include "hako/rd.h"
#include "hako_test_util.h"
#include "rd_internal.h"

/* clang-format off */
#define INIT_1  "{\"t\":0,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"init\",\"run\":0,\"hash\":77,\"role\":\"owner\"}\n"
#define INIT_2  "{\"t\":0,\"node\":2,\"eu\":0,\"epoch\":0,\"ev\":\"init\",\"run\":0,\"hash\":77,\"role\":\"standby\"}\n"
#define A_STEPS "{\"t\":1000,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"step\",\"step\":1,\"mt\":1000}\n" \
                "{\"t\":1000,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"write\",\"pdu\":\"pos\",\"mt\":1000}\n" \
                "{\"t\":2000,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"step\",\"step\":2,\"mt\":2000}\n" \
                "{\"t\":2000,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"write\",\"pdu\":\"pos\",\"mt\":2000}\n"
#define RELEASE "{\"t\":2000,\"node\":1,\"eu\":0,\"epoch\":1,\"ev\":\"release\",\"next\":2,\"step\":2}\n"
#define ACTIVATE "{\"t\":4000,\"node\":2,\"eu\":0,\"epoch\":1,\"ev\":\"activate\",\"from\":1,\"step\":2}\n"
#define B_STEP3 "{\"t\":4000,\"node\":2,\"eu\":0,\"epoch\":1,\"ev\":\"step\",\"step\":3,\"mt\":3000}\n"
#define B_STEP4 "{\"t\":4000,\"node\":2,\"eu\":0,\"epoch\":1,\"ev\":\"step\",\"step\":4,\"mt\":4000}\n"
#define B_WRITE "{\"t\":4000,\"node\":2,\"eu\":0,\"epoch\":1,\"ev\":\"write\",\"pdu\":\"pos\",\"mt\":4000}\n"
#define RELEASED "{\"t\":5000,\"node\":1,\"eu\":0,\"epoch\":1,\"ev\":\"released\",\"next\":2}\n"
#define NODE1   INIT_1 A_STEPS RELEASE RELEASED
#define NODE2   INIT_2 ACTIVATE B_STEP3 B_STEP4 B_WRITE
#define GOOD    INIT_1 INIT_2 A_STEPS RELEASE ACTIVATE B_STEP3 B_STEP4 B_WRITE RELEASED
/* clang-format on */

static char g_dir[256];

/* The step record made without printf is the bytes hakoi_rd_trace_emit makes, for the extreme
 * values too; records wait in the buffer until a flush or an ownership record. */
static void test_step_record_format(void **state)
{
	(void)state;
	char path[320];
	snprintf(path, sizeof(path), "%s/format.jsonl", g_dir);
	hakoi_rd_trace_t *tr = hakoi_rd_trace_open(path);
	assert_non_null(tr);
	const struct {
		hako_time_t t, mt;
		uint8_t node, epoch;
		uint32_t eu;
		uint64_t step;
	} v[] = {{0, 0, 1, 0, 0, 0},
	         {1234567, 1230000, 255, 255, UINT32_MAX, 1230},
	         {INT64_MAX, INT64_MIN, 7, 9, 42, UINT64_MAX},
	         {-1, -999, 3, 1, 10, 18446744073709551615ull}};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char extra[96];
		snprintf(extra, sizeof(extra), ",\"step\":%llu,\"mt\":%lld",
		         (unsigned long long)v[i].step, (long long)v[i].mt);
		hakoi_rd_trace_step(tr, v[i].t, v[i].node, v[i].eu, v[i].epoch, v[i].step, v[i].mt);
		hakoi_rd_trace_emit(tr, v[i].t, v[i].node, v[i].eu, v[i].epoch, HAKOI_RD_EV_STEP,
		                    extra);
	}
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char a[700];
	assert_null(fgets(a, sizeof(a), f)); /* nothing written yet: steps wait */
	fclose(f);
	hakoi_rd_trace_flush(tr);
	f = fopen(path, "r");
	assert_non_null(f);
	char b[700];
	int lines = 0;
	while (fgets(a, sizeof(a), f) != NULL) {
		assert_non_null(fgets(b, sizeof(b), f));
		assert_string_equal(a, b);
		lines += 2;
	}
	fclose(f);
	assert_int_equal(lines, 8);
	hakoi_rd_trace_close(tr);
}

static const char *put(const char *name, const char *text)
{
	static char paths[4][300];
	static int next;
	char *p = paths[next++ % 4];
	snprintf(p, sizeof(paths[0]), "%s/%s", g_dir, name);
	assert_int_equal(htu_write_file(p, text), 0);
	return p;
}

static hako_rd_check_result_t check(const char *text)
{
	const char *paths[1] = {put("trace.jsonl", text)};
	hako_rd_check_result_t res;
	hako_error_t err;
	int r = hako_rd_check(paths, 1, &res, &err);
	if (r != 0) {
		fail_msg("%s:%d: %s", err.file, err.line, err.message);
	}
	return res;
}

/* One violation (at least `n`), the first one containing `what`. */
static void expect_violation(const char *text, uint64_t n, const char *what)
{
	hako_rd_check_result_t res = check(text);
	if (res.violations != n || strstr(res.first_violation, what) == NULL) {
		fail_msg("expected %llu violations, the first with \"%s\"; got %llu: %s",
		         (unsigned long long)n, what, (unsigned long long)res.violations,
		         res.first_violation);
	}
}

static void test_good(void **state)
{
	(void)state;
	hako_rd_check_result_t res = check(GOOD);
	assert_int_equal(res.violations, 0);
	assert_string_equal(res.first_violation, "");
	assert_int_equal(res.writes, 3);
	assert_int_equal(res.steps, 4);
	assert_int_equal(res.handoffs, 1);
	assert_int_equal(res.reclaims, 0);
}

/* One file per node: merged by world time. */
static void test_good_two_files(void **state)
{
	(void)state;
	const char *paths[2] = {put("b.jsonl", NODE2), put("a.jsonl", NODE1)};
	hako_rd_check_result_t res;
	hako_error_t err;
	assert_int_equal(hako_rd_check(paths, 2, &res, &err), 0);
	assert_int_equal(res.violations, 0);
	assert_int_equal(res.steps, 4);
	assert_int_equal(res.handoffs, 1);
}

static void test_two_owners(void **state)
{
	(void)state;
	/* activated without a release: node 1 still owns */
	expect_violation(INIT_1 INIT_2 A_STEPS ACTIVATE B_STEP3 B_STEP4 B_WRITE, 1,
	                 "two owners: node 2 activated the EU at world time 4000 us while node 1 "
	                 "owns it");
	/* activated at the world time of the release */
	expect_violation(INIT_1 A_STEPS RELEASE
	                 "{\"t\":2000,\"node\":2,\"eu\":0,\"epoch\":1,\"ev\":\"activate\","
	                 "\"from\":1,\"step\":2}\n",
	                 1, "two owners: node 2 activated the EU at world time 2000 us, not after");
	/* taken back while the other node owns it */
	expect_violation(GOOD "{\"t\":6000,\"node\":1,\"eu\":0,\"epoch\":2,\"ev\":\"reclaim\","
	                      "\"step\":2}\n",
	                 1,
	                 "two owners: node 1 took back the EU at world time 6000 us while node "
	                 "2 owns it");
	/* two initial owners */
	expect_violation(INIT_1
	                 "{\"t\":0,\"node\":2,\"eu\":0,\"epoch\":0,\"ev\":\"init\",\"run\":0,"
	                 "\"hash\":77,\"role\":\"owner\"}\n",
	                 1, "both start run 0 as the owner");
}

static void test_write_not_owner(void **state)
{
	(void)state;
	expect_violation(
	    INIT_1 INIT_2 "{\"t\":1500,\"node\":2,\"eu\":0,\"epoch\":0,\"ev\":\"write\",\"pdu\":"
	                  "\"pos\",\"mt\":1500}\n",
	    1,
	    "trace.jsonl:3: eu 0: node 2 wrote \"pos\" at world time 1500 us, but node "
	    "1 owns the EU (epoch 0 since 0 us)");
	/* after the release, before the activation */
	expect_violation(INIT_1 A_STEPS RELEASE
	                 "{\"t\":3000,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"write\",\"pdu\":"
	                 "\"pos\",\"mt\":3000}\n",
	                 1,
	                 "node 1 wrote \"pos\" at world time 3000 us, but nobody owns the EU "
	                 "(node 1 released it at 2000 us)");
	/* a step too */
	expect_violation(INIT_1 A_STEPS RELEASE
	                 "{\"t\":3000,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"step\",\"step\":3,"
	                 "\"mt\":3000}\n",
	                 1, "node 1 ran model step 3 at world time 3000 us, but nobody owns");
	/* no owner at all */
	expect_violation(A_STEPS, 4, "nobody owns the EU (no init with role owner)");
}

static void test_write_stale_epoch(void **state)
{
	(void)state;
	expect_violation(GOOD
	                 "{\"t\":5000,\"node\":2,\"eu\":0,\"epoch\":0,\"ev\":\"write\",\"pdu\":"
	                 "\"pos\",\"mt\":5000}\n",
	                 1,
	                 "node 2 wrote \"pos\" at world time 5000 us with epoch 0; its ownership "
	                 "is epoch 1");
}

static void test_two_writers(void **state)
{
	(void)state;
	/* the same PDU at the same world time: both the writer and the ownership rule fire */
	expect_violation(INIT_1 INIT_2 A_STEPS
	                 "{\"t\":1000,\"node\":2,\"eu\":0,\"epoch\":0,\"ev\":\"write\",\"pdu\":"
	                 "\"pos\",\"mt\":1000}\n",
	                 2, "nodes 1 and 2 both wrote \"pos\" at world time 1000 us");
}

static void test_steps(void **state)
{
	(void)state;
	/* run twice */
	expect_violation(GOOD
	                 "{\"t\":5000,\"node\":2,\"eu\":0,\"epoch\":1,\"ev\":\"step\",\"step\":"
	                 "2,\"mt\":2000}\n",
	                 1,
	                 "model step 2 run twice (node 1 at world time 2000 us, node 2 at 5000 "
	                 "us)");
	/* skipped */
	expect_violation(INIT_1 INIT_2 A_STEPS RELEASE ACTIVATE B_STEP4 B_WRITE, 1,
	                 "model steps 3..3 skipped (node 1 ran 2 at world time 2000 us, node 2 ran "
	                 "4 at 4000 us)");
	/* right number, wrong model time */
	expect_violation(INIT_1 INIT_2 A_STEPS RELEASE ACTIVATE B_STEP3
	                 "{\"t\":4000,\"node\":2,\"eu\":0,\"epoch\":1,\"ev\":\"step\",\"step\":4,"
	                 "\"mt\":5000}\n",
	                 1, "model step 4 (node 2) is at model time 5000 us, expected 4000 us");
	/* model time standing still */
	expect_violation(INIT_1
	                 "{\"t\":1000,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"step\",\"step\":1,"
	                 "\"mt\":1000}\n"
	                 "{\"t\":2000,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"step\",\"step\":2,"
	                 "\"mt\":1000}\n",
	                 1, "model time does not advance");
}

static void test_release_rules(void **state)
{
	(void)state;
	expect_violation(
	    INIT_1 INIT_2
	    "{\"t\":1500,\"node\":2,\"eu\":0,\"epoch\":1,\"ev\":\"release\",\"next\":1,"
	    "\"step\":0}\n",
	    1, "node 2 released the EU at world time 1500 us without owning it");
	expect_violation(
	    INIT_1 "{\"t\":1500,\"node\":1,\"eu\":0,\"epoch\":3,\"ev\":\"release\",\"next\":2,"
	           "\"step\":0}\n",
	    1, "released the EU with epoch 3; its ownership is epoch 0");
	/* activation by another node than the one released to */
	expect_violation(INIT_1 A_STEPS RELEASE
	                 "{\"t\":4000,\"node\":3,\"eu\":0,\"epoch\":1,\"ev\":\"activate\","
	                 "\"from\":1,\"step\":2}\n",
	                 1,
	                 "node 3 activated the EU at epoch 1, but the last release was to node 2");
}

static void test_reclaim(void **state)
{
	(void)state;
	const char *reclaim = INIT_1 INIT_2 A_STEPS RELEASE
	    "{\"t\":206000,\"node\":1,\"eu\":0,\"epoch\":2,\"ev\":\"reclaim\",\"step\":2}\n"
	    "{\"t\":206000,\"node\":1,\"eu\":0,\"epoch\":2,\"ev\":\"step\",\"step\":3,\"mt\":3000}"
	    "\n"
	    "{\"t\":206000,\"node\":1,\"eu\":0,\"epoch\":2,\"ev\":\"write\",\"pdu\":\"pos\","
	    "\"mt\":3000}\n";
	hako_rd_check_result_t res = check(reclaim);
	assert_int_equal(res.violations, 0);
	assert_int_equal(res.reclaims, 1);
	assert_int_equal(res.handoffs, 0);
	expect_violation(INIT_1 A_STEPS RELEASE
	                 "{\"t\":206000,\"node\":1,\"eu\":0,\"epoch\":1,\"ev\":\"reclaim\","
	                 "\"step\":2}\n",
	                 1,
	                 "node 1 took the EU back at epoch 1, but the last release was by node 1 "
	                 "at epoch 1");
}

/* RD-Full: node 1 is lost after step 2 (its last context the authority holds is at step 1);
 * node 2 restarts from step 1 and runs step 2 again: the lost node's step 2 is not counted.
 * A record of the lost node after the restart is a step without owning. */
static void test_restart(void **state)
{
	(void)state;
	const char *restart = INIT_1 INIT_2 A_STEPS
	    "{\"t\":9000,\"node\":2,\"eu\":0,\"epoch\":2,\"ev\":\"restart\",\"lost\":1,"
	    "\"step\":1}\n"
	    "{\"t\":9000,\"node\":2,\"eu\":0,\"epoch\":2,\"ev\":\"step\",\"step\":2,\"mt\":2000}\n"
	    "{\"t\":9000,\"node\":2,\"eu\":0,\"epoch\":2,\"ev\":\"step\",\"step\":3,\"mt\":3000}\n";
	hako_rd_check_result_t res = check(restart);
	assert_int_equal(res.violations, 0);
	assert_int_equal(res.restarts, 1);
	assert_int_equal(res.handoffs, 0);
	expect_violation(
	    INIT_1 INIT_2 A_STEPS "{\"t\":9000,\"node\":2,\"eu\":0,\"epoch\":2,\"ev\":\"restart\","
	                          "\"lost\":1,\"step\":1}\n"
	                          "{\"t\":9500,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"step\","
	                          "\"step\":3,\"mt\":3000}\n",
	    2, "node 1 ran model step 3 at world time 9500 us, but node 2 owns the EU");
	/* A restart naming another node than the owner: two owners. */
	expect_violation(INIT_1 INIT_2 A_STEPS
	                 "{\"t\":9000,\"node\":2,\"eu\":0,\"epoch\":2,\"ev\":\"restart\","
	                 "\"lost\":3,\"step\":1}\n",
	                 1, "two owners: node 2 restarted the EU");
}

static void test_config_hash(void **state)
{
	(void)state;
	expect_violation(INIT_1
	                 "{\"t\":0,\"node\":2,\"eu\":0,\"epoch\":0,\"ev\":\"init\",\"run\":0,"
	                 "\"hash\":78,\"role\":\"standby\"}\n",
	                 1, "node 2 used an RD config with hash 0x0000004e; node 1");
}

/* After a domain reset (run 1) the model starts over: not a repeat of run 0's steps. */
static void test_runs(void **state)
{
	(void)state;
	hako_rd_check_result_t res = check(
	    GOOD "{\"t\":0,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"init\",\"run\":1,\"hash\":77,"
	         "\"role\":\"owner\"}\n" A_STEPS);
	assert_int_equal(res.violations, 0);
	assert_int_equal(res.steps, 6);
	/* without the new init, the same records repeat steps 1 and 2 (and the copies at 2000 us
	 * come after node 1's release) */
	expect_violation(GOOD A_STEPS, 4, "model step 1 run twice");
}

/* The first violation reported is the earliest in world time, not in the file. */
static void test_first_is_earliest(void **state)
{
	(void)state;
	expect_violation(GOOD
	                 "{\"t\":9000,\"node\":2,\"eu\":0,\"epoch\":0,\"ev\":\"write\",\"pdu\":"
	                 "\"pos\",\"mt\":9000}\n"
	                 "{\"t\":1500,\"node\":2,\"eu\":0,\"epoch\":0,\"ev\":\"write\",\"pdu\":"
	                 "\"height\",\"mt\":1500}\n",
	                 2, "trace.jsonl:14: eu 0: node 2 wrote \"height\" at world time 1500 us");
}

static void test_bad_input(void **state)
{
	(void)state;
	hako_rd_check_result_t res;
	hako_error_t err;
	const char *paths[1];
	paths[0] = put("bad.jsonl", INIT_1 INIT_2 "{\"t\":1000,\"node\":1,\n");
	assert_int_equal(hako_rd_check(paths, 1, &res, &err), HAKO_EPROTO);
	assert_string_equal(err.file, paths[0]);
	assert_int_equal(err.line, 3);
	paths[0] = put("bad.jsonl", INIT_1 "{\"t\":1000,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":"
	                                   "\"jump\"}\n");
	assert_int_equal(hako_rd_check(paths, 1, &res, &err), HAKO_EPROTO);
	assert_int_equal(err.line, 2);
	assert_non_null(strstr(err.message, "\"ev\""));
	paths[0] = put("bad.jsonl", "{\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"step\"}\n");
	assert_int_equal(hako_rd_check(paths, 1, &res, &err), HAKO_EPROTO);
	assert_non_null(strstr(err.message, "\"t\" is missing"));
	paths[0] =
	    put("bad.jsonl", "{\"t\":1,\"node\":1,\"eu\":0,\"epoch\":300,\"ev\":\"step\"}\n");
	assert_int_equal(hako_rd_check(paths, 1, &res, &err), HAKO_EPROTO);
	paths[0] = put("bad.jsonl", "{\"t\":1,\"node\":1,\"eu\":0,\"epoch\":0,\"ev\":\"step\"}\n");
	assert_int_equal(hako_rd_check(paths, 1, &res, &err), HAKO_EPROTO);
	assert_non_null(strstr(err.message, "\"step\" is missing"));
	paths[0] = "/nonexistent/trace.jsonl";
	assert_int_equal(hako_rd_check(paths, 1, &res, &err), HAKO_ENOENT);
	assert_int_equal(hako_rd_check(paths, 0, &res, &err), HAKO_EINVAL);
	/* empty lines and an empty file are fine */
	paths[0] = put("empty.jsonl", "\n\n");
	assert_int_equal(hako_rd_check(paths, 1, &res, &err), 0);
	assert_int_equal(res.violations, 0);
}

int main(void)
{
	htu_init();
	htu_tmpdir(g_dir, sizeof(g_dir));
	if (getenv("HAKO_LOG") == NULL) {
		hako_log_set_level(HAKO_LOG_OFF);
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_step_record_format),
	    cmocka_unit_test(test_good),
	    cmocka_unit_test(test_good_two_files),
	    cmocka_unit_test(test_two_owners),
	    cmocka_unit_test(test_write_not_owner),
	    cmocka_unit_test(test_write_stale_epoch),
	    cmocka_unit_test(test_two_writers),
	    cmocka_unit_test(test_steps),
	    cmocka_unit_test(test_release_rules),
	    cmocka_unit_test(test_reclaim),
	    cmocka_unit_test(test_restart),
	    cmocka_unit_test(test_config_hash),
	    cmocka_unit_test(test_runs),
	    cmocka_unit_test(test_first_is_earliest),
	    cmocka_unit_test(test_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
