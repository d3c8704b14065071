/* More asset processes than CPUs: the step waits yield their CPU to the other assets before they
 * sleep (core/src/wait.c, hakoi_yield_budget). The lock-step must stay exact, a stop must reach
 * assets that wait in either phase, and a killed asset must still be noticed (Error, the others'
 * step waits return EINTR) rather than leave the crowd yielding or sleeping for ever. The crowd is
 * CPUs + 2 processes, so the yielding path runs whatever the machine. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako_test_util.h"

#define MAX_CROWD         34
#define DETECT_LIMIT_USEC 5000000 /* generous; the design goal is 1 s */
#define DELTA             1000

struct fx {
	char name[HAKO_NAME_MAX];
	char names[MAX_CROWD][16];
	hako_domain_t *dom;
	hako_master_t *master;
	hako_member_t *holder; /* a member of the test process that never steps, or NULL */
	htu_asset_stats_t *st; /* n, shared */
	htu_asset_args_t args[MAX_CROWD];
	pid_t pid[MAX_CROWD];
	int n;
};

static int crowd_size(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 1) {
		cpus = 1;
	}
	return cpus + 2 > MAX_CROWD ? MAX_CROWD : (int)cpus + 2;
}

static int setup_with(void **state, const char *test)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name(test, f->name, sizeof(f->name));
	f->n = crowd_size();
	f->st = htu_shared_alloc((size_t)f->n * sizeof(*f->st));
	assert_non_null(f->st);
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = MAX_CROWD + 2;
	cfg.max_channels = 4;
	cfg.arena_bytes = 1 << 16;
	cfg.liveness_policy = HAKO_LIVENESS_ERROR;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	for (int i = 0; i < f->n; i++) {
		snprintf(f->names[i], sizeof(f->names[i]), "a%d", i);
		f->args[i] = (htu_asset_args_t){f->name, f->names[i], DELTA, &f->st[i]};
	}
	*state = f;
	return 0;
}

static int setup_lockstep(void **state)
{
	return setup_with(state, "crowd_lockstep");
}

static int setup_stalled(void **state)
{
	return setup_with(state, "crowd_stalled");
}

static int setup_kill(void **state)
{
	return setup_with(state, "crowd_kill");
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	hako_member_unregister(f->holder);
	hako_master_stop(f->master);
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	htu_shared_free(f->st, (size_t)f->n * sizeof(*f->st));
	free(f);
	return 0;
}

/* The crowd registered, the master free running (delta = Dmax: exact lock-step). */
static void spawn_crowd(struct fx *f)
{
	for (int i = 0; i < f->n; i++) {
		f->pid[i] = htu_fork(htu_asset_main, &f->args[i]);
		assert_true(f->pid[i] > 0);
	}
	for (int i = 0; i < f->n; i++) {
		int ok;
		HTU_WAIT_UNTIL(ok, atomic_load(&f->st[i].registered) != 0, HTU_TIMEOUT_USEC);
		assert_true(ok);
		assert_int_equal(atomic_load(&f->st[i].registered), 1);
	}
	hako_master_config_t mc = {DELTA, DELTA, 0};
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), 0);
}

static void start_run(struct fx *f)
{
	assert_int_equal(hako_domain_start(f->dom), 0);
	if (f->holder != NULL) {
		assert_int_equal(hako_member_ack(f->holder, HAKO_EVENT_START), 0);
	}
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_RUNNING, HTU_TIMEOUT_USEC), 0);
}

/* Every asset's run ended with EINTR. */
static void wait_all_interrupted(struct fx *f, int skip)
{
	for (int i = 0; i < f->n; i++) {
		if (i == skip) {
			continue;
		}
		int ok;
		HTU_WAIT_UNTIL(ok, atomic_load(&f->st[i].step_intr) >= 1, HTU_TIMEOUT_USEC);
		if (!ok) {
			fail_msg("asset a%d still in its step wait (last rc %d)", i,
			         atomic_load(&f->st[i].last_step_rc));
		}
		assert_int_equal(atomic_load(&f->st[i].last_step_rc), HAKO_EINTR);
	}
}

static void quit_all(struct fx *f, int skip)
{
	for (int i = 0; i < f->n; i++) {
		if (i != skip) {
			atomic_store(&f->st[i].quit, 1);
		}
	}
	for (int i = 0; i < f->n; i++) {
		if (i != skip) {
			assert_true(htu_join_child(f->pid[i], HTU_TIMEOUT_USEC));
		}
	}
}

/* Lock-step with delta = Dmax: at the stop every asset has taken exactly one step per world
 * step, or is one step behind (it was granted the last world step and had not reported yet).
 */
static void test_lockstep(void **state)
{
	struct fx *f = *state;
	spawn_crowd(f);
	start_run(f);
	int ok;
	HTU_WAIT_UNTIL(ok, hako_domain_world_time(f->dom) >= 200 * DELTA, HTU_TIMEOUT_USEC);
	assert_true(ok);
	assert_int_equal(hako_domain_stop(f->dom), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	wait_all_interrupted(f, -1);
	hako_time_t world = hako_domain_world_time(f->dom);
	assert_true(world >= 200 * DELTA);
	uint64_t world_steps = (uint64_t)(world / DELTA);
	for (int i = 0; i < f->n; i++) {
		uint64_t s = atomic_load(&f->st[i].steps);
		if (s != world_steps && s + 1 != world_steps) {
			fail_msg("asset a%d took %llu steps in %llu world steps", i,
			         (unsigned long long)s, (unsigned long long)world_steps);
		}
	}
	quit_all(f, -1);
}

/* The state letter of a process in /proc/<pid>/stat ('R' running or runnable, 'S' asleep). */
static char proc_state(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *fp = fopen(path, "r");
	if (fp == NULL) {
		return '?';
	}
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	return p != NULL && p[1] == ' ' ? p[2] : '?';
}

static int all_asleep(struct fx *f)
{
	for (int i = 0; i < f->n; i++) {
		if (proc_state(f->pid[i]) != 'S') {
			return 0;
		}
	}
	return 1;
}

/* A member of the test process acks START but never polls, so the start barrier never opens:
 * the crowd waits. Its waits must end in a sleep (a yielder is never 'S'), and a stop must end
 * every one of them with EINTR. */
static void test_stalled(void **state)
{
	struct fx *f = *state;
	spawn_crowd(f);
	assert_int_equal(hako_member_register(f->dom, "holder", DELTA, &f->holder), 0);
	start_run(f);
	int ok;
	for (int i = 0; i < f->n; i++) {
		HTU_WAIT_UNTIL(ok, atomic_load(&f->st[i].runs) == 1, HTU_TIMEOUT_USEC);
		assert_true(ok);
	}
	HTU_WAIT_UNTIL(ok, all_asleep(f), HTU_TIMEOUT_USEC);
	if (!ok) {
		for (int i = 0; i < f->n; i++) {
			print_message("asset a%d: state %c\n", i, proc_state(f->pid[i]));
		}
		fail_msg("the crowd does not sleep while the world is stalled");
	}
	assert_int_equal(hako_domain_world_time(f->dom), 0);
	for (int i = 0; i < f->n; i++) {
		assert_int_equal(atomic_load(&f->st[i].steps), 0);
	}
	assert_int_equal(hako_domain_stop(f->dom), 0);
	assert_int_equal(hako_member_ack(f->holder, HAKO_EVENT_STOP), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	wait_all_interrupted(f, -1);
	quit_all(f, -1);
}

/* One of the crowd is killed while the others step: Error, naming it, and every survivor's step
 * wait returns EINTR. */
static void test_kill(void **state)
{
	struct fx *f = *state;
	spawn_crowd(f);
	start_run(f);
	int ok;
	HTU_WAIT_UNTIL(ok, hako_domain_world_time(f->dom) >= 50 * DELTA, HTU_TIMEOUT_USEC);
	assert_true(ok);
	int victim = f->n / 2;
	htu_kill_child(f->pid[victim]); /* SIGKILL + reap */
	HTU_WAIT_UNTIL(ok, hako_domain_state(f->dom) == HAKO_STATE_ERROR, DETECT_LIMIT_USEC);
	if (!ok) {
		fail_msg("SIGKILL of a%d among %d assets not noticed (state %s)", victim, f->n,
		         hako_state_name(hako_domain_state(f->dom)));
	}
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	char quoted[24];
	snprintf(quoted, sizeof(quoted), "'%s'", f->names[victim]);
	if (strstr(info.error_reason, quoted) == NULL) {
		fail_msg("error reason '%s' does not name %s", info.error_reason, quoted);
	}
	wait_all_interrupted(f, victim);
	quit_all(f, victim);
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_lockstep, setup_lockstep, teardown),
	    cmocka_unit_test_setup_teardown(test_stalled, setup_stalled, teardown),
	    cmocka_unit_test_setup_teardown(test_kill, setup_kill, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
