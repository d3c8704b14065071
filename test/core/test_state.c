/* The simulation state machine: Stopped -> Runnable -> Running -> Stopping -> Stopped,
 * Stopped -> Resetting -> Stopped, each completed by the acknowledgement of every asset;
 * illegal transitions; hako_domain_wait_state. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako_test_util.h"

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_master_t *master;
	hako_member_t *m[2];
	pthread_t thread;
	int thread_started;
};

static int setup(void **state, const char *test)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name(test, f->name, sizeof(f->name));
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 4;
	cfg.arena_bytes = 1 << 16;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	hako_master_config_t mc = {1000, 1000, 0};
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	if (f->thread_started) {
		pthread_join(f->thread, NULL);
	}
	hako_master_stop(f->master);
	hako_member_unregister(f->m[0]);
	hako_member_unregister(f->m[1]);
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

static void two_members(struct fx *f)
{
	assert_int_equal(hako_member_register(f->dom, "a", 1000, &f->m[0]), 0);
	assert_int_equal(hako_member_register(f->dom, "b", 1000, &f->m[1]), 0);
}

static void expect_state(struct fx *f, int st)
{
	int got = hako_domain_state(f->dom);
	if (got != st) {
		fail_msg("state %s, expected %s", hako_state_name(got), hako_state_name(st));
	}
}

SETUP(names)
static void test_names(void **state)
{
	(void)state;
	assert_string_equal(hako_state_name(HAKO_STATE_STOPPED), "stopped");
	assert_string_equal(hako_state_name(HAKO_STATE_RUNNABLE), "runnable");
	assert_string_equal(hako_state_name(HAKO_STATE_RUNNING), "running");
	assert_string_equal(hako_state_name(HAKO_STATE_STOPPING), "stopping");
	assert_string_equal(hako_state_name(HAKO_STATE_RESETTING), "resetting");
	assert_string_equal(hako_state_name(HAKO_STATE_ERROR), "error");
	assert_string_equal(hako_state_name(42), "unknown");
	assert_string_equal(hako_state_name(-1), "unknown");
}

SETUP(full_cycle)
static void test_full_cycle(void **state)
{
	struct fx *f = *state;
	two_members(f);
	expect_state(f, HAKO_STATE_STOPPED);

	assert_int_equal(hako_domain_start(f->dom), 0);
	expect_state(f, HAKO_STATE_RUNNABLE);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_START), 0);
	expect_state(f, HAKO_STATE_RUNNABLE); /* b has not acknowledged */
	assert_int_equal(hako_member_ack(f->m[1], HAKO_EVENT_START), 0);
	expect_state(f, HAKO_STATE_RUNNING);

	/* Some steps so that there is something to reset. */
	for (int k = 0; k < 20; k++) {
		for (int i = 0; i < 2; i++) {
			if (hako_member_step_poll(f->m[i]) == 0) {
				hako_member_step_done(f->m[i]);
			}
		}
	}
	assert_true(hako_domain_world_time(f->dom) > 0);
	assert_true(hako_member_time(f->m[0]) > 0);

	assert_int_equal(hako_domain_stop(f->dom), 0);
	expect_state(f, HAKO_STATE_STOPPING);
	assert_int_equal(hako_member_ack(f->m[1], HAKO_EVENT_STOP), 0);
	expect_state(f, HAKO_STATE_STOPPING);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_STOP), 0);
	expect_state(f, HAKO_STATE_STOPPED);
	hako_time_t w = hako_domain_world_time(f->dom);
	assert_true(w > 0); /* stop keeps the clocks */

	assert_int_equal(hako_domain_reset(f->dom), 0);
	expect_state(f, HAKO_STATE_RESETTING);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_RESET), 0);
	assert_int_equal(hako_member_time(f->m[0]), 0);
	expect_state(f, HAKO_STATE_RESETTING);
	assert_int_equal(hako_domain_world_time(f->dom), w); /* until everyone acked */
	assert_int_equal(hako_member_ack(f->m[1], HAKO_EVENT_RESET), 0);
	expect_state(f, HAKO_STATE_STOPPED);

	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.world_time, 0);
	assert_int_equal(info.world_steps, 0);
	hako_asset_info_t list[2];
	int count;
	assert_int_equal(hako_domain_list_assets(f->dom, list, 2, &count), 0);
	assert_int_equal(count, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(list[i].time_usec, 0);
		assert_int_equal(list[i].steps, 0);
		assert_int_equal(list[i].checked_in, 0);
		assert_int_equal(list[i].event, HAKO_EVENT_NONE);
	}

	/* And the next run starts from zero with its own barrier. */
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_START), 0);
	assert_int_equal(hako_member_ack(f->m[1], HAKO_EVENT_START), 0);
	expect_state(f, HAKO_STATE_RUNNING);
	assert_int_equal(hako_member_step_poll(f->m[0]), HAKO_EAGAIN);
	assert_int_equal(hako_domain_world_time(f->dom), 0);
	assert_int_equal(hako_member_step_poll(f->m[1]), 0);
	assert_int_equal(hako_domain_world_time(f->dom), 1000);
}

SETUP(illegal_transitions)
static void test_illegal_transitions(void **state)
{
	struct fx *f = *state;
	two_members(f);
	/* Stopped */
	assert_int_equal(hako_domain_stop(f->dom), HAKO_ESTATE);
	expect_state(f, HAKO_STATE_STOPPED);
	assert_int_equal(hako_domain_start(f->dom), 0);
	/* Runnable */
	assert_int_equal(hako_domain_start(f->dom), HAKO_ESTATE);
	assert_int_equal(hako_domain_reset(f->dom), HAKO_ESTATE);
	expect_state(f, HAKO_STATE_RUNNABLE);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_START), 0);
	assert_int_equal(hako_member_ack(f->m[1], HAKO_EVENT_START), 0);
	/* Running */
	assert_int_equal(hako_domain_start(f->dom), HAKO_ESTATE);
	assert_int_equal(hako_domain_reset(f->dom), HAKO_ESTATE);
	expect_state(f, HAKO_STATE_RUNNING);
	assert_int_equal(hako_domain_stop(f->dom), 0);
	/* Stopping */
	assert_int_equal(hako_domain_start(f->dom), HAKO_ESTATE);
	assert_int_equal(hako_domain_stop(f->dom), HAKO_ESTATE);
	assert_int_equal(hako_domain_reset(f->dom), HAKO_ESTATE);
	expect_state(f, HAKO_STATE_STOPPING);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_STOP), 0);
	assert_int_equal(hako_member_ack(f->m[1], HAKO_EVENT_STOP), 0);
	assert_int_equal(hako_domain_reset(f->dom), 0);
	/* Resetting */
	assert_int_equal(hako_domain_start(f->dom), HAKO_ESTATE);
	assert_int_equal(hako_domain_stop(f->dom), HAKO_ESTATE);
	assert_int_equal(hako_domain_reset(f->dom), HAKO_ESTATE);
	expect_state(f, HAKO_STATE_RESETTING);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_RESET), 0);
	assert_int_equal(hako_member_ack(f->m[1], HAKO_EVENT_RESET), 0);
	expect_state(f, HAKO_STATE_STOPPED);

	assert_int_equal(hako_domain_start(NULL), HAKO_EINVAL);
	assert_int_equal(hako_domain_stop(NULL), HAKO_EINVAL);
	assert_int_equal(hako_domain_reset(NULL), HAKO_EINVAL);
	assert_int_equal(hako_domain_state(NULL), HAKO_EINVAL);
}

SETUP(stop_from_runnable)
static void test_stop_from_runnable(void **state)
{
	struct fx *f = *state;
	two_members(f);
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_START), 0);
	assert_int_equal(hako_domain_stop(f->dom), 0);
	expect_state(f, HAKO_STATE_STOPPING);
	/* b's START was replaced by STOP: both must ack STOP. */
	assert_int_equal(hako_member_event(f->m[1]), HAKO_EVENT_STOP);
	assert_int_equal(hako_member_ack(f->m[1], HAKO_EVENT_START), HAKO_ESTATE);
	assert_int_equal(hako_member_ack(f->m[1], HAKO_EVENT_STOP), 0);
	expect_state(f, HAKO_STATE_STOPPING);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_STOP), 0);
	expect_state(f, HAKO_STATE_STOPPED);
}

SETUP(no_assets)
static void test_no_assets(void **state)
{
	struct fx *f = *state;
	/* With nobody to acknowledge, transitions complete at once. */
	assert_int_equal(hako_domain_start(f->dom), 0);
	expect_state(f, HAKO_STATE_RUNNING);
	htu_sleep_usec(20000);
	assert_int_equal(hako_domain_world_time(f->dom), 0); /* nothing to keep in step with */
	assert_int_equal(hako_domain_stop(f->dom), 0);
	expect_state(f, HAKO_STATE_STOPPED);
	assert_int_equal(hako_domain_reset(f->dom), 0);
	expect_state(f, HAKO_STATE_STOPPED);
}

SETUP(unregister_completes_transition)
static void test_unregister_completes_transition(void **state)
{
	struct fx *f = *state;
	two_members(f);
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_START), 0);
	expect_state(f, HAKO_STATE_RUNNABLE);
	hako_member_unregister(f->m[1]); /* the one that did not ack leaves */
	f->m[1] = NULL;
	expect_state(f, HAKO_STATE_RUNNING);
	assert_int_equal(hako_domain_stop(f->dom), 0);
	hako_member_unregister(f->m[0]);
	f->m[0] = NULL;
	expect_state(f, HAKO_STATE_STOPPED);
}

static void *ack_later(void *p)
{
	struct fx *f = p;
	for (int i = 0; i < 2; i++) {
		int ev = 0;
		if (hako_member_wait_event(f->m[i], HTU_TIMEOUT_USEC, &ev) == 0) {
			htu_sleep_usec(20000);
			hako_member_ack(f->m[i], ev);
		}
	}
	return NULL;
}

SETUP(wait_state)
static void test_wait_state(void **state)
{
	struct fx *f = *state;
	two_members(f);
	/* Already there: at once. */
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, 0), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_RUNNING, 20000), HAKO_ETIMEDOUT);
	assert_int_equal(hako_domain_wait_state(NULL, HAKO_STATE_RUNNING, 0), HAKO_EINVAL);

	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(pthread_create(&f->thread, NULL, ack_later, f), 0);
	f->thread_started = 1;
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_RUNNING, HTU_TIMEOUT_USEC), 0);
	expect_state(f, HAKO_STATE_RUNNING);
	pthread_join(f->thread, NULL);
	f->thread_started = 0;

	assert_int_equal(hako_domain_stop(f->dom), 0);
	assert_int_equal(pthread_create(&f->thread, NULL, ack_later, f), 0);
	f->thread_started = 1;
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, -1), 0);
	pthread_join(f->thread, NULL);
	f->thread_started = 0;

	assert_int_equal(hako_domain_reset(f->dom), 0);
	assert_int_equal(pthread_create(&f->thread, NULL, ack_later, f), 0);
	f->thread_started = 1;
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
}

struct doomed {
	const char *domain;
	int *ready; /* shared */
};

static void doomed_main(void *p)
{
	struct doomed *d = p;
	hako_domain_t *dom;
	hako_member_t *m;
	HTU_CHECK_RC(hako_domain_open(d->domain, &dom), 0);
	HTU_CHECK_RC(hako_member_register(dom, "doomed", 1000, &m), 0);
	__atomic_store_n(d->ready, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		pause();
	}
}

/* An asset that dies during a transition puts the domain in Error; reset recovers. */
SETUP(dead_asset_error)
static void test_dead_asset_error(void **state)
{
	struct fx *f = *state;
	int *ready = htu_shared_alloc(sizeof(int));
	assert_non_null(ready);
	struct doomed d = {f->name, ready};
	pid_t pid = htu_fork(doomed_main, &d);
	int ok;
	HTU_WAIT_UNTIL(ok, __atomic_load_n(ready, __ATOMIC_SEQ_CST), HTU_TIMEOUT_USEC);
	htu_shared_free(ready, sizeof(int));
	assert_true(ok);
	assert_int_equal(hako_member_register(f->dom, "a", 1000, &f->m[0]), 0);
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_START), 0);
	expect_state(f, HAKO_STATE_RUNNABLE); /* "doomed" never acks */
	htu_kill_child(pid);

	/* Waiting for another state ends with ESTATE once the domain is in Error. */
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_RUNNING, HTU_TIMEOUT_USEC),
	                 HAKO_ESTATE);
	expect_state(f, HAKO_STATE_ERROR);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_ERROR, 0), 0);
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	if (strstr(info.error_reason, "doomed") == NULL) {
		fail_msg("error reason '%s' does not name the asset", info.error_reason);
	}
	assert_int_equal(hako_member_event(f->m[0]), HAKO_EVENT_ERROR);
	assert_int_equal(hako_member_step_poll(f->m[0]), HAKO_EINTR);
	assert_int_equal(hako_domain_start(f->dom), HAKO_ESTATE);
	assert_int_equal(hako_domain_stop(f->dom), HAKO_ESTATE);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_ERROR), 0);
	expect_state(f, HAKO_STATE_ERROR); /* acks do not leave Error; reset does */

	assert_int_equal(hako_domain_reset(f->dom), 0);
	expect_state(f, HAKO_STATE_RESETTING);
	assert_int_equal(hako_member_ack(f->m[0], HAKO_EVENT_RESET), 0);
	expect_state(f, HAKO_STATE_STOPPED);
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_string_equal(info.error_reason, "");
	assert_int_equal(info.asset_count, 1);
	hako_asset_info_t list[2];
	int count;
	assert_int_equal(hako_domain_list_assets(f->dom, list, 2, &count), 0);
	assert_int_equal(count, 1);
	assert_string_equal(list[0].name, "a");
	/* The name of the dead asset is free again. */
	assert_int_equal(hako_member_register(f->dom, "doomed", 1000, &f->m[1]), 0);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup_##name, teardown)

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    T(names),
	    T(full_cycle),
	    T(illegal_transitions),
	    T(stop_from_runnable),
	    T(no_assets),
	    T(unregister_completes_transition),
	    T(wait_state),
	    T(dead_asset_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
