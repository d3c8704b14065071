/* 100 start / stop / reset cycles with two asset processes on the compatible API
 * (hako_asset_register + hako_asset_start in a loop) while this process is the conductor and
 * drives the domain with the handle API. After each cycle: world time 0, asset clocks 0, and
 * every asset ran on_initialize and on_reset exactly once per cycle. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/hako_asset.h"
#include "hako_test_util.h"

#define NASSETS 2
#define CYCLES  100

struct counters {
	_Atomic int registered;
	_Atomic int initialized;
	_Atomic int resets;
	_Atomic int steps;
	_Atomic int returns; /* hako_asset_start returned EINTR */
	_Atomic int clock_not_zero;
};

struct shared {
	_Atomic int quit;
	struct counters c[NASSETS];
};

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_master_t *master;
	struct shared *sh;
};

/* In a child: which asset it is (a copy per process). */
static struct shared *g_sh;
static int g_index;

static int on_init(hako_asset_context_t *ctx)
{
	(void)ctx;
	atomic_fetch_add(&g_sh->c[g_index].initialized, 1);
	return 0;
}

static int on_step(hako_asset_context_t *ctx)
{
	(void)ctx;
	atomic_fetch_add(&g_sh->c[g_index].steps, 1);
	return 0;
}

static int on_reset(hako_asset_context_t *ctx)
{
	(void)ctx;
	atomic_fetch_add(&g_sh->c[g_index].resets, 1);
	return 0;
}

static int should_quit(void)
{
	return atomic_load(&g_sh->quit);
}

static void asset_main(void *p)
{
	g_index = (int)(intptr_t)p;
	struct counters *c = &g_sh->c[g_index];
	char name[16];
	snprintf(name, sizeof(name), "cyc%d", g_index);
	hako_asset_callbacks_t cb = {0};
	cb.on_initialize = on_init;
	cb.on_simulation_step = on_step;
	cb.on_reset = on_reset;
	HTU_CHECK_RC(hako_asset_register(name, NULL, &cb, 1000, HAKO_ASSET_MODEL_PLANT), 0);
	atomic_store(&c->registered, 1);
	for (;;) {
		int r = hako_asset_start_no_wait(should_quit);
		if (should_quit()) {
			break;
		}
		HTU_CHECK_RC(r, EINTR);
		if (hako_asset_current_time() != 0) {
			atomic_fetch_add(&c->clock_not_zero, 1);
		}
		atomic_fetch_add(&c->returns, 1);
	}
	HTU_CHECK_RC(hako_asset_unregister(), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name("cycles", f->name, sizeof(f->name));
	f->sh = htu_shared_alloc(sizeof(*f->sh));
	assert_non_null(f->sh);
	g_sh = f->sh;
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 4;
	cfg.arena_bytes = 1 << 16;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	setenv("HAKO_DOMAIN", f->name, 1);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	unsetenv("HAKO_DOMAIN");
	hako_master_stop(f->master);
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	htu_shared_free(f->sh, sizeof(*f->sh));
	free(f);
	return 0;
}

static void wait_state(struct fx *f, int st, int cycle)
{
	int r = hako_domain_wait_state(f->dom, st, HTU_TIMEOUT_USEC);
	if (r != 0) {
		hako_domain_info_t info;
		hako_domain_get_info(f->dom, &info);
		fail_msg("cycle %d: waiting for %s: %s (state %s, %s)", cycle, hako_state_name(st),
		         hako_strerror(r), hako_state_name(info.state), info.error_reason);
	}
}

static void test_cycles(void **state)
{
	struct fx *f = *state;
	pid_t pids[NASSETS];
	for (int i = 0; i < NASSETS; i++) {
		pids[i] = htu_fork(asset_main, (void *)(intptr_t)i);
		assert_true(pids[i] > 0);
	}
	hako_master_config_t mc = {1000, 2000, 0};
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), 0);
	int ok;
	HTU_WAIT_UNTIL(ok,
	               atomic_load(&f->sh->c[0].registered) && atomic_load(&f->sh->c[1].registered),
	               HTU_TIMEOUT_USEC);
	assert_true(ok);

	for (int cycle = 1; cycle <= CYCLES; cycle++) {
		assert_int_equal(hako_domain_start(f->dom), 0);
		wait_state(f, HAKO_STATE_RUNNING, cycle);
		HTU_WAIT_UNTIL(ok, hako_domain_world_time(f->dom) >= 5000, HTU_TIMEOUT_USEC);
		if (!ok) {
			fail_msg("cycle %d: the world did not move", cycle);
		}
		assert_int_equal(hako_domain_stop(f->dom), 0);
		wait_state(f, HAKO_STATE_STOPPED, cycle);
		assert_true(hako_domain_world_time(f->dom) >= 5000);
		assert_int_equal(hako_domain_reset(f->dom), 0);
		wait_state(f, HAKO_STATE_STOPPED, cycle);

		hako_domain_info_t info;
		assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
		assert_int_equal(info.world_time, 0);
		assert_int_equal(info.world_steps, 0);
		assert_int_equal(info.asset_count, NASSETS);
		hako_asset_info_t a[NASSETS];
		int n = 0;
		assert_int_equal(hako_domain_list_assets(f->dom, a, NASSETS, &n), 0);
		assert_int_equal(n, NASSETS);
		for (int i = 0; i < NASSETS; i++) {
			assert_int_equal(a[i].time_usec, 0);
			struct counters *c = &f->sh->c[i];
			if (atomic_load(&c->resets) != cycle ||
			    atomic_load(&c->initialized) != cycle) {
				fail_msg("cycle %d: asset %d ran on_initialize %d and on_reset %d "
				         "times",
				         cycle, i, atomic_load(&c->initialized),
				         atomic_load(&c->resets));
			}
			/* hako_asset_start came back (EINTR) for this cycle. */
			HTU_WAIT_UNTIL(ok, atomic_load(&c->returns) >= cycle, HTU_TIMEOUT_USEC);
			assert_int_equal(atomic_load(&c->returns), cycle);
		}
	}

	atomic_store(&f->sh->quit, 1);
	for (int i = 0; i < NASSETS; i++) {
		assert_true(htu_join_child(pids[i], HTU_TIMEOUT_USEC));
		struct counters *c = &f->sh->c[i];
		assert_int_equal(atomic_load(&c->returns), CYCLES);
		assert_int_equal(atomic_load(&c->clock_not_zero), 0);
		assert_true(atomic_load(&c->steps) >= CYCLES * 3);
	}
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.asset_count, 0);
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_cycles, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
