/* hako-conductor check --domains: the live drift checker judges only the snapshots taken while
 * every domain runs. Two domains of this process stand for a server's and a client's nodes;
 * their clocks follow a proxy member each (as a conductor's peer does), set by the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako_test_util.h"

#define END_USEC 20000000 /* where the server's run ended: 20 s */

struct fx {
	char name[2][HAKO_NAME_MAX];
	hako_domain_t *dom[2];
	hako_master_t *master[2];
	hako_member_t *m[2];
	char dir[256];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name("check_server", f->name[0], sizeof(f->name[0]));
	htu_domain_name("check_client", f->name[1], sizeof(f->name[1]));
	assert_non_null(htu_tmpdir(f->dir, sizeof(f->dir)));
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 4;
	cfg.arena_bytes = 1 << 16;
	hako_master_config_t mc = {100000, 100000, 0.0};
	for (int i = 0; i < 2; i++) {
		assert_int_equal(hako_domain_create(f->name[i], &cfg, &f->dom[i]), 0);
		assert_int_equal(hako_master_start(f->dom[i], &mc, &f->master[i]), 0);
		assert_int_equal(hako_member_register_proxy(f->dom[i], "peer", &f->m[i]), 0);
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	for (int i = 0; i < 2; i++) {
		hako_member_unregister(f->m[i]);
		hako_master_stop(f->master[i]);
		hako_domain_close(f->dom[i]);
		htu_remove_domain(f->name[i]);
	}
	htu_remove_tmpdirs();
	free(f);
	return 0;
}

/* The pending event of domain i's proxy is `event`: acknowledge it. */
static void ack(struct fx *f, int i, int event)
{
	int got = HAKO_EVENT_NONE;
	assert_int_equal(hako_member_wait_event(f->m[i], HTU_TIMEOUT_USEC, &got), 0);
	assert_int_equal(got, event);
	assert_int_equal(hako_member_ack(f->m[i], event), 0);
}

/* Start domain i; its world clock then follows its proxy's time, set here. */
static void run(struct fx *f, int i)
{
	assert_int_equal(hako_domain_start(f->dom[i]), 0);
	ack(f, i, HAKO_EVENT_START);
	assert_int_equal(hako_domain_wait_state(f->dom[i], HAKO_STATE_RUNNING, HTU_TIMEOUT_USEC),
	                 0);
}

/* The server's domain ran to END_USEC and stopped there (its stop time). */
static void server_ran_to_end(struct fx *f)
{
	assert_int_equal(hako_domain_set_stop_time(f->dom[0], END_USEC), 0);
	run(f, 0);
	assert_int_equal(hako_member_set_time(f->m[0], END_USEC), 0);
	ack(f, 0, HAKO_EVENT_STOP);
	assert_int_equal(hako_domain_wait_state(f->dom[0], HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC),
	                 0);
	assert_int_equal(hako_domain_world_time(f->dom[0]), END_USEC);
}

/* hako-conductor check --dmax-usec 1000 --domains server,client for 100 ms: its exit code,
 * its output in out. */
static int check(struct fx *f, char *out, size_t len)
{
	char log[512], domains[2 * HAKO_NAME_MAX + 2];
	snprintf(log, sizeof(log), "%s/check.txt", f->dir);
	snprintf(domains, sizeof(domains), "%s,%s", f->name[0], f->name[1]);
	htu_exec_t x = {.argv = {HAKO_CONDUCTOR_EXE, "check", "--dmax-usec", "1000", "--domains",
	                         domains, "--duration-ms", "100", NULL},
	                .log = log};
	pid_t pid = htu_fork(htu_exec_main, &x);
	assert_true(pid > 0);
	int status = 0;
	assert_int_equal(htu_wait_child(pid, HTU_TIMEOUT_USEC, &status), 0);
	snprintf(out, len, "%s", htu_slurp(log));
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A run's end: the server stopped at 20 s, the client stopped (or reset) at 0. Nothing runs,
 * so nothing is judged: before, the 20 s were a violation. */
static void test_stopped_not_judged(void **state)
{
	struct fx *f = *state;
	char out[1024];
	server_ran_to_end(f);
	int rc = check(f, out, sizeof(out));
	if (rc != 0 || strstr(out, ", 0 while every one ran: ") == NULL ||
	    strstr(out, ": ok\n") == NULL) {
		fail_msg("check exited %d:\n%s", rc, out);
	}
}

/* One domain runs, the other is stopped: not judged either. */
static void test_one_running_not_judged(void **state)
{
	struct fx *f = *state;
	char out[1024];
	server_ran_to_end(f);
	run(f, 0);
	int rc = check(f, out, sizeof(out));
	if (rc != 0 || strstr(out, ": ok\n") == NULL) {
		fail_msg("check exited %d:\n%s", rc, out);
	}
}

/* Both run, 20 s apart: every snapshot is judged, and the drift is a violation. */
static void test_running_judged(void **state)
{
	struct fx *f = *state;
	char out[1024];
	server_ran_to_end(f);
	run(f, 0);
	run(f, 1);
	int rc = check(f, out, sizeof(out));
	if (rc != 1 || strstr(out, ", 0 while every one ran: ") != NULL ||
	    strstr(out, ": VIOLATED\n") == NULL) {
		fail_msg("check exited %d:\n%s", rc, out);
	}
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_stopped_not_judged, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_one_running_not_judged, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_running_judged, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
