/* Proxy members: a clock set from outside bounds the world as an asset's does (the conductor's
 * stand-in for another node), its START acknowledgement is its check-in, it is never stepped. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako_test_util.h"

#define DELTA 1000
#define DMAX  3000

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_master_t *master;
	hako_member_t *asset;
	hako_member_t *proxy;
	pthread_t thread;
	int started;
	_Atomic int stop;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name("proxy", f->name, sizeof(f->name));
	*state = f;
	hako_domain_config_t cfg;
	hako_domain_config_init(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 4;
	cfg.arena_bytes = 1 << 16;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	hako_master_config_t mc = {DELTA, DMAX, 0};
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), 0);
	assert_int_equal(hako_member_register(f->dom, "asset", DELTA, &f->asset), 0);
	assert_int_equal(hako_member_register_proxy(f->dom, "proxy:peer", &f->proxy), 0);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	atomic_store(&f->stop, 1);
	if (f->started) {
		hako_domain_stop(f->dom);
		pthread_join(f->thread, NULL);
	}
	hako_member_unregister(f->asset);
	hako_member_unregister(f->proxy);
	hako_master_stop(f->master);
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	free(f);
	return 0;
}

/* The asset steps as fast as the rules let it, until stopped. */
static void *asset_main(void *p)
{
	struct fx *f = p;
	while (!atomic_load(&f->stop) && hako_member_step_wait(f->asset) == 0) {
		hako_member_step_done(f->asset);
	}
	return NULL;
}

static void start(struct fx *f)
{
	int ev = 0;
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_member_wait_event(f->asset, HTU_TIMEOUT_USEC, &ev), 0);
	assert_int_equal(hako_member_ack(f->asset, HAKO_EVENT_START), 0);
	/* Not running until the proxy (the other side) acknowledged too. */
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_RUNNABLE);
	assert_int_equal(hako_member_ack(f->proxy, HAKO_EVENT_START), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_RUNNING, HTU_TIMEOUT_USEC), 0);
	assert_int_equal(pthread_create(&f->thread, NULL, asset_main, f), 0);
	f->started = 1;
}

/* The world never runs more than Dmax ahead of the proxy's clock, and follows it up. */
static void test_bounds_world(void **state)
{
	struct fx *f = *state;
	start(f);
	for (hako_time_t peer = 0; peer <= 200000; peer += 7000) {
		assert_int_equal(hako_member_set_time(f->proxy, peer), 0);
		/* Stepping round the bound: it must be reached and not passed. */
		hako_time_t bound = (peer + DMAX) / DELTA * DELTA;
		assert_int_equal(hako_domain_wait_world_time(f->dom, bound, HTU_TIMEOUT_USEC), 0);
		for (int i = 0; i < 1000; i++) {
			assert_true(hako_domain_world_time(f->dom) <= peer + DMAX);
		}
		hako_asset_info_t info[2];
		int n = 0;
		assert_int_equal(hako_domain_list_assets(f->dom, info, 2, &n), 0);
		assert_int_equal(n, 2);
		for (int i = 0; i < n; i++) {
			if (strcmp(info[i].name, "proxy:peer") == 0) {
				assert_int_equal(info[i].proxy, 1);
				assert_int_equal(info[i].time_usec, peer);
				assert_int_equal(info[i].delta_usec, 0);
			} else {
				assert_int_equal(info[i].proxy, 0);
			}
		}
	}
}

/* A proxy is not stepped; an asset's clock is not set from outside. */
static void test_not_stepped(void **state)
{
	struct fx *f = *state;
	assert_int_equal(hako_member_step_poll(f->proxy), HAKO_EINVAL);
	assert_int_equal(hako_member_step_wait(f->proxy), HAKO_EINVAL);
	assert_int_equal(hako_member_set_time(f->asset, 5), HAKO_EINVAL);
	assert_int_equal(hako_member_set_time(f->proxy, -1), HAKO_EINVAL);
	assert_int_equal(hako_member_set_time(f->proxy, 12345), 0);
	assert_int_equal(hako_member_time(f->proxy), 12345);
	/* A reset brings it back to 0 with the others once acknowledged. */
	int ev = 0;
	assert_int_equal(hako_domain_reset(f->dom), 0);
	assert_int_equal(hako_member_wait_event(f->asset, HTU_TIMEOUT_USEC, &ev), 0);
	assert_int_equal(hako_member_ack(f->asset, HAKO_EVENT_RESET), 0);
	assert_int_equal(hako_member_ack(f->proxy, HAKO_EVENT_RESET), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	assert_int_equal(hako_member_time(f->proxy), 0);
}

/* What a conductor needs around its proxies: a note shown with the member, a wait for any
 * change of the domain, and putting the domain in Error from outside. */
static void test_note_change_fail(void **state)
{
	struct fx *f = *state;
	assert_int_equal(hako_member_set_note(f->proxy, "server unreachable: world clock held"), 0);
	hako_asset_info_t info[2];
	int n = 0;
	assert_int_equal(hako_domain_list_assets(f->dom, info, 2, &n), 0);
	int found = 0;
	for (int i = 0; i < n; i++) {
		if (info[i].proxy) {
			assert_string_equal(info[i].note, "server unreachable: world clock held");
			found = 1;
		} else {
			assert_string_equal(info[i].note, "");
		}
	}
	assert_true(found);
	assert_int_equal(hako_member_set_note(f->proxy, NULL), 0);

	uint32_t seen = hako_domain_changes(f->dom);
	assert_int_equal(hako_domain_wait_change(f->dom, seen, 1000), HAKO_ETIMEDOUT);
	start(f);
	assert_true(hako_domain_changes(f->dom) != seen);
	seen = hako_domain_changes(f->dom);
	assert_int_equal(hako_member_set_time(f->proxy, 50000), 0); /* the world moves */
	assert_int_equal(hako_domain_wait_change(f->dom, seen, HTU_TIMEOUT_USEC), 0);

	assert_int_equal(hako_domain_fail(f->dom, "client 'cli-02' lost"), 0);
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_ERROR);
	assert_int_equal(hako_domain_fail(f->dom, "again"), HAKO_ESTATE);
	hako_domain_info_t di;
	assert_int_equal(hako_domain_get_info(f->dom, &di), 0);
	assert_string_equal(di.error_reason, "client 'cli-02' lost");
	pthread_join(f->thread, NULL); /* the asset's step wait ended with the error */
	f->started = 0;
}

/* hako_domain_wait_watch: world steps up to `beyond` do not end the wait (nor move the
 * counter), a step past it does; hako_domain_watch_wake and a state change do. */
struct mover {
	struct fx *f;
	_Atomic int second; /* set just before the proxy lets the world pass 10000 */
};

static void *move_proxy(void *p)
{
	struct mover *mv = p;
	usleep(50000);
	hako_member_set_time(mv->f->proxy, 5000); /* the world may run to 8000 */
	usleep(50000);
	atomic_store(&mv->second, 1);
	hako_member_set_time(mv->f->proxy, 8000); /* ... and to 11000 */
	return NULL;
}

static void test_watch(void **state)
{
	struct fx *f = *state;
	start(f);
	assert_int_equal(hako_domain_wait_world_time(f->dom, DMAX, HTU_TIMEOUT_USEC), 0);
	uint32_t seen = hako_domain_watch_changes(f->dom);
	struct mover mv = {f, 0};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, move_proxy, &mv), 0);
	assert_int_equal(hako_domain_wait_watch(f->dom, seen, 10000, HTU_TIMEOUT_USEC), 0);
	/* Only the steps past 10000 could end it: the ones to 8000 came first. */
	assert_true(atomic_load(&mv.second));
	assert_true(hako_domain_world_time(f->dom) > 10000);
	pthread_join(t, NULL);

	seen = hako_domain_watch_changes(f->dom);
	hako_domain_watch_wake(f->dom);
	assert_true(hako_domain_watch_changes(f->dom) != seen);
	assert_int_equal(hako_domain_wait_watch(f->dom, seen, INT64_MAX, HTU_TIMEOUT_USEC), 0);

	seen = hako_domain_watch_changes(f->dom);
	assert_int_equal(hako_domain_wait_watch(f->dom, seen, INT64_MAX, 1000), HAKO_ETIMEDOUT);
	assert_int_equal(hako_domain_stop(f->dom), 0); /* a state change */
	assert_int_equal(hako_domain_wait_watch(f->dom, seen, INT64_MAX, HTU_TIMEOUT_USEC), 0);
	pthread_join(f->thread, NULL);
	f->started = 0;
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_bounds_world, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_stepped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_note_change_fail, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
