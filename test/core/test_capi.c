/* Hakoniwa's older C API (hako_capi.h) and the sim-event controller (hako_simevent.h): their
 * truth values (true = success, as Hakoniwa's), polling and callback assets through a whole
 * start / stop / reset cycle, PDUs by asset name, flag-mode receive events, and a master driven
 * by hako_master_init. The API keeps one domain per process, so every asset runs in a forked
 * child; the test process is the conductor (creator + master) unless a test says otherwise. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/hako_capi.h"
#include "hako/hako_simevent.h"
#include "hako_test_util.h"

struct shared {
	_Atomic int registered;
	_Atomic int phase; /* what the child reached; the test waits for it */
	_Atomic int starts;
	_Atomic int stops;
	_Atomic int resets;
	_Atomic long long asset_time;
	_Atomic int quit;
};

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_master_t *master;
	struct shared *sh;
};

static struct fx *cur; /* the children read it (a copy of the test's memory) */

static int setup_fx(void **state, const char *test, int conductor)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name(test, f->name, sizeof(f->name));
	f->sh = htu_shared_alloc(sizeof(*f->sh));
	assert_non_null(f->sh);
	if (conductor) {
		hako_domain_config_t cfg;
		hako_domain_config_default(&cfg);
		cfg.max_assets = 4;
		cfg.max_channels = 16;
		cfg.arena_bytes = 1 << 20;
		assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
		hako_master_config_t mc = {1000, 1000, 0};
		assert_int_equal(hako_master_start(f->dom, &mc, &f->master), 0);
	}
	setenv("HAKO_DOMAIN", f->name, 1);
	cur = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	hako_simevent_fini();
	unsetenv("HAKO_DOMAIN");
	hako_master_stop(f->master);
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	htu_shared_free(f->sh, sizeof(*f->sh));
	free(f);
	cur = NULL;
	return 0;
}

#define SETUP(test, conductor)                                                                     \
	static int setup_##test(void **state)                                                      \
	{                                                                                          \
		return setup_fx(state, #test, conductor);                                          \
	}

static int wait_phase(struct fx *f, int phase, pid_t child)
{
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&f->sh->phase) >= phase || htu_child_exited(child),
	               HTU_TIMEOUT_USEC);
	return ok && atomic_load(&f->sh->phase) >= phase;
}

/* ---- hako_simevent: Hakoniwa's truth values ---- */

SETUP(simevent_without_domain, 0)
static void test_simevent_without_domain(void **state)
{
	(void)state;
	/* The idiom of Hakoniwa's programs must read a missing domain as a failure. */
	assert_false(hako_simevent_init());
	assert_int_equal(hako_simevent_last_error(), HAKO_ENOENT);
	assert_int_equal(hako_simevent_get_state(), -1);
	assert_false(hako_simevent_start());
	assert_false(hako_simevent_stop());
	assert_false(hako_simevent_reset());
	assert_int_equal(hako_simevent_world_time(), 0);
}

SETUP(simevent_truth, 1)
static void test_simevent_truth(void **state)
{
	struct fx *f = *state;
	if (!hako_simevent_init()) {
		fail_msg("hako_simevent_init() is false with a domain: %s",
		         hako_strerror(hako_simevent_last_error()));
	}
	assert_int_equal(hako_simevent_get_state(), HAKO_STATE_STOPPED);
	/* Refused transitions are false, with the reason. */
	assert_false(hako_simevent_stop());
	assert_int_equal(hako_simevent_last_error(), HAKO_ESTATE);
	/* Without assets every transition completes at once. */
	assert_true(hako_simevent_start());
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_RUNNING, HTU_TIMEOUT_USEC), 0);
	assert_int_equal(hako_simevent_get_state(), HAKO_STATE_RUNNING);
	assert_false(hako_simevent_start());
	assert_false(hako_simevent_reset());
	assert_true(hako_simevent_stop());
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	assert_true(hako_simevent_reset());
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	int n = -1;
	assert_int_equal(hako_simevent_list_assets(NULL, 0, &n), 0);
	assert_int_equal(n, 0);
	/* init again after fini: attached again */
	hako_simevent_fini();
	assert_true(hako_simevent_init());
}

/* ---- a polling asset through a whole cycle ---- */

#define POLL_UNTIL(cond)                                                                           \
	do {                                                                                       \
		hako_time_t poll_deadline_ = hako_now_usec() + HTU_TIMEOUT_USEC;                   \
		while (!(cond)) {                                                                  \
			HTU_CHECK(hako_now_usec() < poll_deadline_);                               \
			sched_yield();                                                             \
		}                                                                                  \
	} while (0)

static void polling_child(void *p)
{
	struct fx *f = p;
	struct shared *sh = f->sh;
	char buf[32];
	HTU_CHECK(hako_asset_init());
	HTU_CHECK(hako_asset_is_pdu_created());
	HTU_CHECK(hako_asset_register_polling("poller"));
	HTU_CHECK(!hako_asset_register_polling("poller"));
	HTU_CHECK_RC(hako_capi_last_error(NULL), HAKO_EEXIST);
	HTU_CHECK_RC(hako_asset_get_event("poller"), 0);
	HTU_CHECK_RC(hako_asset_get_event("nobody"), 4); /* Hakoniwa's answer: Error */

	/* Channels: by robot name only; the real id is the channel's index. */
	HTU_CHECK(hako_asset_create_pdu_lchannel("R", 0, 16));
	HTU_CHECK(hako_asset_create_pdu_lchannel("R", 0, 16));
	HTU_CHECK(!hako_asset_create_pdu_lchannel("R", 0, 24));
	HTU_CHECK(!hako_asset_create_pdu_channel(7, 16));
	HTU_CHECK_RC(hako_capi_last_error(NULL), HAKO_ENOTSUP);
	HTU_CHECK(hako_asset_get_pdu_channel("R", 0) >= 0);
	HTU_CHECK_RC(hako_asset_get_pdu_channel("R", 9), -1);

	/* PDUs by asset name; dirty until this asset read it. */
	HTU_CHECK(!hako_asset_is_pdu_dirty("poller", "R", 0));
	HTU_CHECK(hako_asset_write_pdu("poller", "R", 0, "abc", 3));
	HTU_CHECK(!hako_asset_write_pdu("nobody", "R", 0, "abc", 3));
	HTU_CHECK(!hako_asset_write_pdu("poller", "R", 0, "0123456789abcdefX", 17));
	HTU_CHECK(hako_asset_is_pdu_dirty("poller", "R", 0));
	memset(buf, 0x7f, sizeof(buf));
	HTU_CHECK(hako_asset_read_pdu("poller", "R", 0, buf, 16));
	HTU_CHECK(memcmp(buf, "abc", 3) == 0 && buf[3] == 0 && buf[15] == 0);
	HTU_CHECK(!hako_asset_is_pdu_dirty("poller", "R", 0));
	HTU_CHECK(!hako_asset_read_pdu("poller", "R", 0, buf, 17));
	HTU_CHECK(hako_asset_write_pdu_nolock("R", 0, "xyz", 3));
	HTU_CHECK(hako_asset_is_pdu_dirty("poller", "R", 0));
	HTU_CHECK(hako_asset_read_pdu_nolock("R", 0, buf, 4));
	HTU_CHECK(memcmp(buf, "xyz", 4) == 0);
	HTU_CHECK(hako_asset_is_pdu_dirty("poller", "R", 0)); /* not read as the asset */

	/* Feedback outside its state is refused. */
	HTU_CHECK(!hako_asset_start_feedback("poller", true));
	HTU_CHECK_RC(hako_capi_last_error(NULL), HAKO_ESTATE);
	HTU_CHECK(!hako_asset_start_feedback("nobody", true));
	atomic_store(&sh->registered, 1);

	/* START: acknowledge; the run waits at the start barrier until the first PDUs. */
	POLL_UNTIL(hako_asset_get_event("poller") == 1);
	HTU_CHECK(hako_asset_start_feedback("poller", true));
	POLL_UNTIL(hako_simevent_get_state() == HAKO_STATE_RUNNING);
	HTU_CHECK(hako_asset_is_pdu_sync_mode("poller"));
	HTU_CHECK(!hako_asset_is_simulation_mode());
	HTU_CHECK(hako_asset_write_pdu("poller", "R", 0, "first", 5));
	hako_asset_notify_write_pdu_done("poller");
	HTU_CHECK(!hako_asset_is_pdu_sync_mode("poller"));
	HTU_CHECK(hako_asset_is_simulation_mode());

	/* Hakoniwa's polling loop: step when the world allows, report the new time. The world
	 * never runs more than Dmax (1000 us) ahead of the reported clock. */
	hako_time_t t = 0;
	while (t < 20000) {
		hako_time_t w = hako_asset_get_worldtime();
		HTU_CHECK(w - t <= 1000);
		if (t + 1000 <= w) {
			t += 1000;
			hako_asset_notify_simtime("poller", t);
		} else {
			POLL_UNTIL(hako_asset_get_worldtime() > w);
		}
	}
	HTU_CHECK_RC(hako_asset_get_min_asset_time(), t);
	atomic_store(&sh->asset_time, t);
	atomic_store(&sh->phase, 1);

	/* STOP, then RESET: the clock goes back to 0. */
	POLL_UNTIL(hako_asset_get_event("poller") == 2);
	HTU_CHECK(!hako_asset_reset_feedback("poller", true));
	HTU_CHECK(hako_asset_stop_feedback("poller", true));
	POLL_UNTIL(hako_asset_get_event("poller") == 3);
	HTU_CHECK(hako_asset_reset_feedback("poller", true));
	POLL_UNTIL(hako_simevent_get_state() == HAKO_STATE_STOPPED);
	HTU_CHECK_RC(hako_asset_get_min_asset_time(), 0);
	HTU_CHECK(!hako_asset_is_pdu_dirty("poller", "R", 0)); /* the reset cleared the writes */

	HTU_CHECK(hako_capi_asset_unregister("poller"));
	HTU_CHECK(!hako_capi_asset_unregister("poller"));
	HTU_CHECK_RC(hako_asset_get_event("poller"), 4);
}

SETUP(polling_asset, 1)
static void test_polling_asset(void **state)
{
	struct fx *f = *state;
	pid_t pid = htu_fork(polling_child, f);
	assert_true(pid > 0);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&f->sh->registered) || htu_child_exited(pid),
	               HTU_TIMEOUT_USEC);
	assert_true(ok && atomic_load(&f->sh->registered));
	assert_int_equal(hako_domain_start(f->dom), 0);
	if (wait_phase(f, 1, pid)) {
		assert_int_equal(hako_domain_stop(f->dom), 0);
		assert_int_equal(
		    hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
		assert_int_equal(hako_domain_reset(f->dom), 0);
	}
	/* A failed check in the child says where, through its exit status. */
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
	assert_int_equal(atomic_load(&f->sh->asset_time), 20000);
}

/* ---- a callback asset: each event to its callback, which acknowledges it ---- */

static void on_start(void)
{
	atomic_fetch_add(&cur->sh->starts, 1);
	HTU_CHECK(hako_asset_start_feedback("caller", true));
}

static void on_stop(void)
{
	atomic_fetch_add(&cur->sh->stops, 1);
	HTU_CHECK(hako_asset_stop_feedback("caller", true));
}

static void on_reset(void)
{
	atomic_fetch_add(&cur->sh->resets, 1);
	HTU_CHECK(hako_asset_reset_feedback("caller", true));
}

static void callback_child(void *p)
{
	struct fx *f = p;
	hako_asset_callback_t cb = {on_start, on_stop, on_reset};
	hako_asset_callback_t half = {on_start, NULL, NULL};
	HTU_CHECK(!hako_capi_asset_register("caller", &half));
	HTU_CHECK(hako_capi_asset_register("caller", &cb));
	atomic_store(&f->sh->registered, 1);
	POLL_UNTIL(atomic_load(&f->sh->quit));
	HTU_CHECK(hako_capi_asset_unregister("caller"));
}

SETUP(callback_asset, 1)
static void test_callback_asset(void **state)
{
	struct fx *f = *state;
	pid_t pid = htu_fork(callback_child, f);
	assert_true(pid > 0);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&f->sh->registered) || htu_child_exited(pid),
	               HTU_TIMEOUT_USEC);
	assert_true(ok && atomic_load(&f->sh->registered));
	/* Each transition completes only once the callback acknowledged it. */
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_RUNNING, HTU_TIMEOUT_USEC), 0);
	assert_int_equal(hako_domain_stop(f->dom), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	assert_int_equal(hako_domain_reset(f->dom), 0);
	HTU_WAIT_UNTIL(ok, atomic_load(&f->sh->resets) == 1, HTU_TIMEOUT_USEC);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	atomic_store(&f->sh->quit, 1);
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
	assert_int_equal(atomic_load(&f->sh->starts), 1);
	assert_int_equal(atomic_load(&f->sh->stops), 1);
	assert_int_equal(atomic_load(&f->sh->resets), 1);
	int n = -1;
	assert_int_equal(hako_domain_list_assets(f->dom, NULL, 0, &n), 0);
	assert_int_equal(n, 0);
}

/* ---- flag-mode receive events, pending and resume ---- */

static void recv_child(void *p)
{
	(void)p;
	HTU_CHECK(hako_asset_register_polling("watcher"));
	HTU_CHECK(hako_asset_create_pdu_lchannel("R", 1, 8));
	HTU_CHECK(!hako_capi_asset_register_data_recv_event("R", 2));    /* no such channel */
	HTU_CHECK(!hako_capi_asset_set_data_recv_event_pending("R", 1)); /* not subscribed */
	HTU_CHECK(hako_asset_write_pdu_nolock("R", 1, "a", 1));
	HTU_CHECK(hako_capi_asset_register_data_recv_event("R", 1));
	/* only writes after the subscription count */
	HTU_CHECK(!hako_capi_asset_check_data_recv_event("watcher", "R", 1));
	HTU_CHECK(hako_asset_write_pdu_nolock("R", 1, "b", 1));
	HTU_CHECK(hako_asset_write_pdu_nolock("R", 1, "c", 1));
	HTU_CHECK(hako_capi_asset_check_data_recv_event("watcher", "R", 1));
	HTU_CHECK(!hako_capi_asset_check_data_recv_event("watcher", "R", 1));
	HTU_CHECK(!hako_capi_asset_check_data_recv_event("nobody", "R", 1));
	/* pending: the write is kept and shows once on resume */
	HTU_CHECK(hako_capi_asset_set_data_recv_event_pending("R", 1));
	HTU_CHECK(hako_asset_write_pdu_nolock("R", 1, "d", 1));
	HTU_CHECK(!hako_capi_asset_check_data_recv_event(NULL, "R", 1));
	HTU_CHECK(hako_capi_asset_set_data_recv_event_resume("R", 1));
	HTU_CHECK(hako_capi_asset_check_data_recv_event(NULL, "R", 1));
	HTU_CHECK(!hako_capi_asset_check_data_recv_event(NULL, "R", 1));
	HTU_CHECK(hako_capi_asset_unregister("watcher"));
}

SETUP(recv_events, 1)
static void test_recv_events(void **state)
{
	struct fx *f = *state;
	pid_t pid = htu_fork(recv_child, f);
	assert_true(pid > 0);
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
}

/* ---- a master of Hakoniwa's shape: init, set_config_simtime, execute ---- */

static void master_child(void *p)
{
	(void)p;
	/* Before init: nothing to drive. */
	HTU_CHECK(!hako_master_execute());
	HTU_CHECK_RC(hako_master_get_delta_time_usec(), 0);
	HTU_CHECK(hako_master_init());
	HTU_CHECK(hako_master_init()); /* again: the same master */
	HTU_CHECK_RC(hako_master_get_delta_time_usec(), 1000);
	hako_master_set_config_simtime(5000, 1000);
	HTU_CHECK_RC(hako_master_get_max_deltay_time_usec(), 5000);
	HTU_CHECK_RC(hako_master_get_delta_time_usec(), 1000);
	hako_master_set_config_simtime(500, 1000); /* max delay below the step: refused */
	HTU_CHECK_RC(hako_capi_last_error(NULL), HAKO_EINVAL);
	HTU_CHECK_RC(hako_master_get_max_deltay_time_usec(), 5000);
	HTU_CHECK(!hako_master_execute());

	/* An asset of the same process holds its clock at 0: the world runs to Dmax, no further. */
	HTU_CHECK(hako_asset_register_polling("held"));
	HTU_CHECK(hako_simevent_start());
	POLL_UNTIL(hako_asset_get_event("held") == 1);
	HTU_CHECK(hako_asset_start_feedback("held", true));
	HTU_CHECK(!hako_simevent_start());
	hako_asset_notify_write_pdu_done("held");
	POLL_UNTIL(hako_asset_get_worldtime() == 5000);
	HTU_CHECK(hako_master_execute());
	HTU_CHECK(!hako_master_execute());
	hako_asset_notify_simtime("held", 2000);
	POLL_UNTIL(hako_asset_get_worldtime() == 7000);
	HTU_CHECK(hako_master_execute());
	HTU_CHECK(hako_simevent_stop());
	POLL_UNTIL(hako_asset_get_event("held") == 2);
	HTU_CHECK(hako_asset_stop_feedback("held", true));
	POLL_UNTIL(hako_simevent_get_state() == HAKO_STATE_STOPPED);
	HTU_CHECK(hako_capi_asset_unregister("held"));
}

SETUP(master, 0)
static void test_master(void **state)
{
	struct fx *f = *state;
	pid_t pid = htu_fork(master_child, f);
	assert_true(pid > 0);
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
	/* The domain of a dead master is left behind: the teardown removes it. */
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup_##name, teardown)

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    T(simevent_without_domain), T(simevent_truth), T(polling_asset),
	    T(callback_asset),          T(recv_events),    T(master),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
