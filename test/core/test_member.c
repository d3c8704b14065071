/* Members (assets registered in a domain): names, capacity, state and master checks, events
 * and acknowledgements, and reclaiming the names of dead processes. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako_test_util.h"

#define MAXM 8

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_member_t *m[MAXM];
};

static int setup_with(void **state, const char *test, uint32_t max_assets)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name(test, f->name, sizeof(f->name));
	*state = f;
	if (max_assets > 0) {
		hako_domain_config_t cfg;
		hako_domain_config_default(&cfg);
		cfg.max_assets = max_assets;
		cfg.max_channels = 4;
		cfg.arena_bytes = 1 << 16;
		assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	}
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	for (int i = 0; i < MAXM; i++) {
		hako_member_unregister(f->m[i]);
	}
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	free(f);
	return 0;
}

#define SETUP(test, max_assets)                                                                    \
	static int setup_##test(void **state)                                                      \
	{                                                                                          \
		return setup_with(state, #test, max_assets);                                       \
	}

SETUP(register_basics, 4)
static void test_register_basics(void **state)
{
	struct fx *f = *state;
	assert_int_equal(hako_member_register(f->dom, "alpha", 1000, &f->m[0]), 0);
	assert_int_equal(hako_member_register(f->dom, "beta", 2500, &f->m[1]), 0);
	assert_string_equal(hako_member_name(f->m[0]), "alpha");
	assert_int_equal(hako_member_delta(f->m[1]), 2500);
	assert_int_equal(hako_member_time(f->m[0]), 0);
	assert_int_not_equal(hako_member_id(f->m[0]), hako_member_id(f->m[1]));
	assert_int_equal(hako_member_event(f->m[0]), HAKO_EVENT_NONE);

	hako_asset_info_t list[4];
	int count = -1;
	assert_int_equal(hako_domain_list_assets(f->dom, list, 4, &count), 0);
	assert_int_equal(count, 2);
	int seen = 0;
	for (int i = 0; i < count; i++) {
		assert_int_equal(list[i].pid, getpid());
		assert_int_equal(list[i].alive, 1);
		assert_int_equal(list[i].time_usec, 0);
		assert_int_equal(list[i].checked_in, 0);
		if (strcmp(list[i].name, "alpha") == 0) {
			assert_int_equal(list[i].id, hako_member_id(f->m[0]));
			assert_int_equal(list[i].delta_usec, 1000);
			seen |= 1;
		} else if (strcmp(list[i].name, "beta") == 0) {
			assert_int_equal(list[i].delta_usec, 2500);
			seen |= 2;
		}
	}
	assert_int_equal(seen, 3);
	/* count reports every asset even when the array is smaller */
	assert_int_equal(hako_domain_list_assets(f->dom, list, 1, &count), 0);
	assert_int_equal(count, 2);
	assert_int_equal(hako_domain_list_assets(f->dom, NULL, 0, &count), 0);
	assert_int_equal(count, 2);

	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.asset_count, 2);
}

SETUP(bad_names, 4)
static void test_bad_names(void **state)
{
	struct fx *f = *state;
	char name[HAKO_NAME_MAX + 1];
	memset(name, 'n', HAKO_NAME_MAX);
	name[HAKO_NAME_MAX] = '\0'; /* 128 chars */
	hako_member_t *m = NULL;
	assert_int_equal(hako_member_register(f->dom, name, 1000, &m), HAKO_ENAMETOOLONG);
	assert_null(m);
	assert_int_equal(hako_member_register(f->dom, "", 1000, &m), HAKO_EINVAL);
	assert_int_equal(hako_member_register(f->dom, NULL, 1000, &m), HAKO_EINVAL);
	assert_int_equal(hako_member_register(f->dom, "x", 0, &m), HAKO_EINVAL);
	assert_int_equal(hako_member_register(f->dom, "x", -5, &m), HAKO_EINVAL);
	assert_int_equal(hako_member_register(NULL, "x", 1000, &m), HAKO_EINVAL);
	assert_null(m);

	name[HAKO_NAME_MAX - 1] = '\0'; /* 127 chars: the longest allowed */
	assert_int_equal(hako_member_register(f->dom, name, 1000, &f->m[0]), 0);
	assert_string_equal(hako_member_name(f->m[0]), name);

	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.asset_count, 1);
}

SETUP(duplicate, 4)
static void test_duplicate(void **state)
{
	struct fx *f = *state;
	hako_member_t *m = NULL;
	assert_int_equal(hako_member_register(f->dom, "twin", 1000, &f->m[0]), 0);
	assert_int_equal(hako_member_register(f->dom, "twin", 1000, &m), HAKO_EEXIST);
	assert_null(m);
	/* Through another handle of the same domain as well. */
	hako_domain_t *other;
	assert_int_equal(hako_domain_open(f->name, &other), 0);
	int r = hako_member_register(other, "twin", 2000, &m);
	hako_domain_close(other);
	assert_int_equal(r, HAKO_EEXIST);
}

SETUP(capacity, 2)
static void test_capacity(void **state)
{
	struct fx *f = *state;
	hako_member_t *m = NULL;
	assert_int_equal(hako_member_register(f->dom, "one", 1000, &f->m[0]), 0);
	assert_int_equal(hako_member_register(f->dom, "two", 1000, &f->m[1]), 0);
	assert_int_equal(hako_member_register(f->dom, "three", 1000, &m), HAKO_ENOSPC);
	assert_null(m);
	/* A freed slot is reused. */
	hako_member_unregister(f->m[0]);
	f->m[0] = NULL;
	assert_int_equal(hako_member_register(f->dom, "three", 1000, &f->m[2]), 0);
	assert_int_equal(hako_member_register(f->dom, "four", 1000, &m), HAKO_ENOSPC);
}

SETUP(unregister_reregister, 4)
static void test_unregister_reregister(void **state)
{
	struct fx *f = *state;
	assert_int_equal(hako_member_register(f->dom, "again", 1000, &f->m[0]), 0);
	hako_member_unregister(f->m[0]);
	f->m[0] = NULL;
	hako_member_unregister(NULL);
	int count = -1;
	assert_int_equal(hako_domain_list_assets(f->dom, NULL, 0, &count), 0);
	assert_int_equal(count, 0);
	assert_int_equal(hako_member_register(f->dom, "again", 3000, &f->m[0]), 0);
	assert_int_equal(hako_member_delta(f->m[0]), 3000);
	hako_asset_info_t info;
	assert_int_equal(hako_domain_list_assets(f->dom, &info, 1, &count), 0);
	assert_int_equal(count, 1);
	assert_string_equal(info.name, "again");
	assert_int_equal(info.delta_usec, 3000);
}

/* Leave an asset registered in the domain and exit without unregistering. */
static void child_register_and_die(void *p)
{
	const char *name = p;
	hako_domain_t *dom;
	hako_member_t *m;
	HTU_CHECK_RC(hako_domain_open(name, &dom), 0);
	HTU_CHECK_RC(hako_member_register(dom, "orphan", 1000, &m), 0);
	_exit(0);
}

SETUP(reclaim_dead_name, 2)
static void test_reclaim_dead_name(void **state)
{
	struct fx *f = *state;
	pid_t pid = htu_fork(child_register_and_die, f->name);
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
	hako_asset_info_t info;
	int count = -1;
	assert_int_equal(hako_domain_list_assets(f->dom, &info, 1, &count), 0);
	assert_int_equal(count, 1);
	assert_string_equal(info.name, "orphan");
	assert_int_equal(info.pid, pid);
	assert_int_equal(info.alive, 0);
	/* The name of a dead process is free again; its slot is reused, not leaked. */
	assert_int_equal(hako_member_register(f->dom, "orphan", 1000, &f->m[0]), 0);
	assert_int_equal(hako_member_register(f->dom, "other", 1000, &f->m[1]), 0);
	assert_int_equal(hako_domain_list_assets(f->dom, NULL, 0, &count), 0);
	assert_int_equal(count, 2);
}

/* Create the domain in a child that dies: the segment stays, its master is gone. */
static void child_create_and_die(void *p)
{
	const char *name = p;
	hako_domain_t *dom;
	HTU_CHECK_RC(hako_domain_create(name, NULL, &dom), 0);
	_exit(0);
}

SETUP(no_master, 0)
static void test_no_master(void **state)
{
	struct fx *f = *state;
	pid_t pid = htu_fork(child_create_and_die, f->name);
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
	assert_int_equal(hako_domain_open(f->name, &f->dom), 0);
	hako_member_t *m = NULL;
	assert_int_equal(hako_member_register(f->dom, "lonely", 1000, &m), HAKO_ENOMASTER);
	assert_null(m);
	assert_int_equal(hako_domain_start(f->dom), HAKO_ENOMASTER);
}

SETUP(register_not_stopped, 4)
static void test_register_not_stopped(void **state)
{
	struct fx *f = *state;
	hako_member_t *m = NULL;
	assert_int_equal(hako_member_register(f->dom, "first", 1000, &f->m[0]), 0);
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_RUNNABLE);
	assert_int_equal(hako_member_register(f->dom, "late", 1000, &m), HAKO_ESTATE);
	assert_null(m);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_START), 0);
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_RUNNING);
	assert_int_equal(hako_member_register(f->dom, "late", 1000, &m), HAKO_ESTATE);
	assert_int_equal(hako_domain_stop(f->dom), 0);
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_STOPPING);
	assert_int_equal(hako_member_register(f->dom, "late", 1000, &m), HAKO_ESTATE);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_STOP), 0);
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_STOPPED);
	assert_int_equal(hako_member_register(f->dom, "late", 1000, &f->m[1]), 0);
}

SETUP(events_and_acks, 4)
static void test_events_and_acks(void **state)
{
	struct fx *f = *state;
	assert_int_equal(hako_member_register(f->dom, "ev", 1000, &f->m[0]), 0);
	hako_member_t *m = f->m[0];
	int ev = -1;
	assert_int_equal(hako_member_wait_event(m, 20000, &ev), HAKO_ETIMEDOUT);
	/* Nothing to acknowledge yet. */
	assert_int_equal(hako_member_ack(m, HAKO_EVENT_START), HAKO_ESTATE);
	assert_int_equal(hako_member_ack(m, HAKO_EVENT_NONE), HAKO_EINVAL);
	assert_int_equal(hako_member_ack(m, 99), HAKO_EINVAL);
	assert_int_equal(hako_member_ack(NULL, HAKO_EVENT_START), HAKO_EINVAL);

	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_member_event(m), HAKO_EVENT_START);
	assert_int_equal(hako_member_wait_event(m, 0, &ev), 0);
	assert_int_equal(ev, HAKO_EVENT_START);
	/* Still pending until acked, and only the pending event can be acked. */
	assert_int_equal(hako_member_event(m), HAKO_EVENT_START);
	assert_int_equal(hako_member_ack(m, HAKO_EVENT_STOP), HAKO_ESTATE);
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_RUNNABLE);
	assert_int_equal(hako_member_ack(m, HAKO_EVENT_START), 0);
	assert_int_equal(hako_member_event(m), HAKO_EVENT_NONE);
	assert_int_equal(hako_member_ack(m, HAKO_EVENT_START), HAKO_ESTATE);

	assert_int_equal(hako_domain_stop(f->dom), 0);
	assert_int_equal(hako_member_wait_event(m, HTU_TIMEOUT_USEC, &ev), 0);
	assert_int_equal(ev, HAKO_EVENT_STOP);
	assert_int_equal(hako_member_ack(m, HAKO_EVENT_STOP), 0);
	assert_int_equal(hako_domain_reset(f->dom), 0);
	assert_int_equal(hako_member_event(m), HAKO_EVENT_RESET);
	assert_int_equal(hako_member_ack(m, HAKO_EVENT_RESET), 0);
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_STOPPED);
}

/* A step the clock can never grant: refused at registration once a master set the clock, and
 * at start for an asset that registered before (it would stay at 0 steps, "running", for
 * ever). */
SETUP(step_over_dmax, 4)
static void test_step_over_dmax(void **state)
{
	struct fx *f = *state;
	/* Before any master: the clock is not known yet. */
	assert_int_equal(hako_member_register(f->dom, "early", 3000, &f->m[0]), 0);
	hako_master_config_t mc = {.delta_usec = 1000, .max_delay_usec = 2000};
	hako_master_t *master = NULL;
	assert_int_equal(hako_master_start(f->dom, &mc, &master), 0);
	assert_int_equal(hako_member_register(f->dom, "late", 3000, &f->m[1]), HAKO_EINVAL);
	assert_null(f->m[1]);
	/* 1300 fits at t = 0 but not at t = 1300 * 6 = 7800 (800 us past a world step: it needs
	 * T_c = 10000, and T_c may reach at most 9000 = the last world step <= t + Dmax). */
	assert_int_equal(hako_member_register(f->dom, "odd", 1300, &f->m[1]), HAKO_EINVAL);
	assert_int_equal(hako_member_register(f->dom, "ok", 2000, &f->m[2]), 0);
	assert_int_equal(hako_domain_start(f->dom), HAKO_EINVAL);
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_STOPPED);
	hako_member_unregister(f->m[0]);
	f->m[0] = NULL;
	assert_int_equal(hako_domain_start(f->dom), 0);
	hako_master_stop(master);
}

/* hako_step_fits against the rule itself, stepped: an asset starting at 0 with step dt, under
 * a world of step delta and max delay dmax, takes its steps for 4 * lcm of the steps. */
static int steps_forever(hako_time_t dt, hako_time_t delta, hako_time_t dmax)
{
	hako_time_t world = 0, t = 0;
	for (int i = 0; i < 4000; i++) {
		if (t + dt <= world) {
			t += dt;
		} else if (world + delta - t <= dmax) {
			world += delta;
		} else {
			return 0;
		}
	}
	return 1;
}

static void test_step_fits_rule(void **state)
{
	(void)state;
	char why[400];
	int refused = 0;
	for (hako_time_t delta = 1; delta <= 12; delta++) {
		for (hako_time_t dmax = delta; dmax <= 30; dmax++) {
			for (hako_time_t dt = 1; dt <= 36; dt++) {
				int fits = hako_step_fits(dt, delta, dmax, why, sizeof(why)) == 0;
				if (fits != steps_forever(dt, delta, dmax)) {
					fail_msg("dt %lld delta %lld dmax %lld: fits says %d",
					         (long long)dt, (long long)delta, (long long)dmax,
					         fits);
				}
				refused += !fits;
			}
		}
	}
	assert_true(refused > 0);
	assert_int_equal(hako_step_fits(2000, 1000, 1000, why, sizeof(why)), HAKO_EINVAL);
	assert_non_null(strstr(why, "2000 us"));
	assert_int_equal(hako_step_fits(1000, 1000, 1000, why, sizeof(why)), 0);
	assert_int_equal(hako_step_fits(1000, 1000, 500, why, sizeof(why)), HAKO_EINVAL);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup_##name, teardown)

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    T(register_basics),
	    T(bad_names),
	    T(duplicate),
	    T(capacity),
	    T(unregister_reregister),
	    T(reclaim_dead_name),
	    T(no_master),
	    T(register_not_stopped),
	    T(events_and_acks),
	    T(step_over_dmax),
	    cmocka_unit_test(test_step_fits_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
