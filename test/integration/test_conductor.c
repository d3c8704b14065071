/* The compatible APIs end to end, each in its own process as Hakoniwa users run them:
 * hako_conductor_start in one process (capacities from HAKO_CORE_CONFIG), an asset with
 * hako_asset_register (pdudef) + hako_asset_start in another, and this process driving the
 * simulation with hako_simevent_*. The domain name reaches the children through HAKO_DOMAIN. */
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
#include "hako/hako_conductor.h"
#include "hako/hako_simevent.h"
#include "hako_test_util.h"

#define PDUDEF                                                                                     \
	"{\"robots\": [{\"name\": \"Rover\", \"shm_pdu_writers\": [{\"type\": "                    \
	"\"geometry_msgs/Twist\", \"org_name\": \"pos\", \"channel_id\": 1, \"pdu_size\": 16}]}]}"

struct shared {
	_Atomic int conductor_ready; /* 1 ok, -1 failed */
	_Atomic int conductor_quit;
	_Atomic int asset_registered;
	_Atomic int asset_quit;
	_Atomic int initialized;
	_Atomic int steps;
	_Atomic int resets;
	_Atomic int runs; /* hako_asset_start returned EINTR */
	_Atomic int bad_pdu_time;
};

struct fx {
	char name[HAKO_NAME_MAX];
	char dir[256];
	char pdudef[512];
	char core_config[512];
	struct shared *sh;
};

static struct fx *g_fx;

static void conductor_main(void *p)
{
	struct fx *f = p;
	setenv("HAKO_CORE_CONFIG", f->core_config, 1);
	if (hako_conductor_start(1000, 3000) != 0) {
		atomic_store(&f->sh->conductor_ready, -1);
		_exit(1);
	}
	HTU_CHECK_RC(hako_conductor_start(1000, 3000), -1); /* once per process */
	atomic_store(&f->sh->conductor_ready, 1);
	while (!atomic_load(&f->sh->conductor_quit)) {
		htu_sleep_usec(1000);
	}
	hako_conductor_stop();
	hako_conductor_stop(); /* harmless */
}

/* A second conductor for a domain whose conductor lives: Hakoniwa's call succeeds, and this
 * process runs under the conductor there (test/core/test_compat.c). */
static void second_conductor_main(void *p)
{
	(void)p;
	HTU_CHECK_RC(hako_conductor_start(1000, 3000), 0);
	hako_conductor_stop(); /* leaves the other process's conductor alone */
}

static int on_init(hako_asset_context_t *ctx)
{
	(void)ctx;
	atomic_fetch_add(&g_fx->sh->initialized, 1);
	return 0;
}

static int on_step(hako_asset_context_t *ctx)
{
	(void)ctx;
	/* Publish this asset's time; the test reads it back through its own handle. */
	int64_t pdu[2] = {hako_asset_current_time(), hako_asset_simulation_time()};
	if (pdu[0] + 1000 > pdu[1]) {
		atomic_fetch_add(&g_fx->sh->bad_pdu_time, 1);
	}
	if (hako_asset_pdu_write("Rover", 1, (const char *)pdu, sizeof(pdu)) != 0) {
		atomic_fetch_add(&g_fx->sh->bad_pdu_time, 1);
	}
	atomic_fetch_add(&g_fx->sh->steps, 1);
	return 0;
}

static int on_reset(hako_asset_context_t *ctx)
{
	(void)ctx;
	atomic_fetch_add(&g_fx->sh->resets, 1);
	return 0;
}

static int asset_quit(void)
{
	return atomic_load(&g_fx->sh->asset_quit);
}

static void asset_main(void *p)
{
	struct fx *f = p;
	hako_asset_callbacks_t cb = {0};
	cb.on_initialize = on_init;
	cb.on_simulation_step = on_step;
	cb.on_reset = on_reset;
	HTU_CHECK_RC(hako_asset_register("rover", f->pdudef, &cb, 1000, HAKO_ASSET_MODEL_PLANT), 0);
	atomic_store(&f->sh->asset_registered, 1);
	for (;;) {
		int r = hako_asset_start_no_wait(asset_quit);
		if (asset_quit()) {
			break;
		}
		HTU_CHECK_RC(r, EINTR);
		atomic_fetch_add(&f->sh->runs, 1);
	}
	HTU_CHECK_RC(hako_asset_unregister(), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name("conductor", f->name, sizeof(f->name));
	assert_non_null(htu_tmpdir(f->dir, sizeof(f->dir)));
	snprintf(f->pdudef, sizeof(f->pdudef), "%s/pdudef.json", f->dir);
	snprintf(f->core_config, sizeof(f->core_config), "%s/core.json", f->dir);
	assert_int_equal(htu_write_file(f->pdudef, PDUDEF), 0);
	assert_int_equal(htu_write_file(f->core_config, "{\"max_assets\": 3, \"max_channels\": 9, "
	                                                "\"arena_bytes\": 65536}"),
	                 0);
	f->sh = htu_shared_alloc(sizeof(*f->sh));
	assert_non_null(f->sh);
	setenv("HAKO_DOMAIN", f->name, 1);
	g_fx = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	hako_simevent_fini();
	unsetenv("HAKO_DOMAIN");
	htu_remove_domain(f->name);
	htu_remove_tmpdirs();
	htu_shared_free(f->sh, sizeof(*f->sh));
	free(f);
	g_fx = NULL;
	return 0;
}

static int wait_sim_state(int st)
{
	int ok;
	HTU_WAIT_UNTIL(ok, hako_simevent_get_state() == st, HTU_TIMEOUT_USEC);
	return ok;
}

static void test_conductor(void **state)
{
	struct fx *f = *state;
	int ok;
	pid_t conductor = htu_fork(conductor_main, f);
	assert_true(conductor > 0);
	HTU_WAIT_UNTIL(ok, atomic_load(&f->sh->conductor_ready) != 0, HTU_TIMEOUT_USEC);
	assert_true(ok);
	assert_int_equal(atomic_load(&f->sh->conductor_ready), 1);
	assert_true(htu_join_child(htu_fork(second_conductor_main, f), HTU_TIMEOUT_USEC));

	pid_t asset = htu_fork(asset_main, f);
	assert_true(asset > 0);
	HTU_WAIT_UNTIL(ok, atomic_load(&f->sh->asset_registered), HTU_TIMEOUT_USEC);
	assert_true(ok);

	/* The domain of the conductor: capacities from HAKO_CORE_CONFIG, clock parameters. */
	assert_true(hako_simevent_init());
	assert_int_equal(hako_simevent_get_state(), HAKO_STATE_STOPPED);
	hako_domain_t *dom;
	assert_int_equal(hako_domain_open(f->name, &dom), 0);
	hako_domain_info_t info;
	int r = hako_domain_get_info(dom, &info);
	hako_channel_t *ch = NULL;
	int lr = hako_channel_lookup(dom, "Rover", 1, &ch);
	if (r != 0 || lr != 0) {
		hako_domain_close(dom);
	}
	assert_int_equal(r, 0);
	assert_int_equal(lr, 0);
	assert_int_equal(info.master_pid, conductor);
	assert_int_equal(info.max_assets, 3);
	assert_int_equal(info.max_channels, 9);
	assert_int_equal(info.arena_bytes, 65536);
	assert_int_equal(info.delta_usec, 1000);
	assert_int_equal(info.max_delay_usec, 3000);
	assert_int_equal(info.asset_count, 1);
	hako_asset_info_t a[3];
	int n = 0;
	assert_int_equal(hako_simevent_list_assets(a, 3, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(a[0].name, "rover");
	assert_int_equal(a[0].pid, asset);

	for (int run = 1; run <= 3; run++) {
		assert_true(hako_simevent_start());
		assert_true(wait_sim_state(HAKO_STATE_RUNNING));
		HTU_WAIT_UNTIL(ok, hako_simevent_world_time() >= 50000, HTU_TIMEOUT_USEC);
		assert_true(ok);
		assert_true(hako_simevent_stop());
		assert_true(wait_sim_state(HAKO_STATE_STOPPED));

		/* The last PDU of the asset: its own time, behind the world by at most Dmax. */
		int64_t pdu[2] = {0, 0};
		size_t len = 0;
		uint64_t seq = 0;
		assert_int_equal(hako_channel_read(ch, pdu, sizeof(pdu), &len, &seq), 0);
		assert_int_equal(len, sizeof(pdu));
		assert_true(seq > 0);
		hako_time_t w = hako_simevent_world_time();
		assert_true(pdu[0] + 1000 <= pdu[1] && pdu[1] <= w);
		assert_true(w - pdu[0] <= 3000 + 1000);

		assert_true(hako_simevent_reset());
		assert_true(wait_sim_state(HAKO_STATE_STOPPED));
		assert_int_equal(hako_simevent_world_time(), 0);
		assert_int_equal(hako_channel_seq(ch), 0);
		assert_int_equal(atomic_load(&f->sh->initialized), run);
		assert_int_equal(atomic_load(&f->sh->resets), run);
		HTU_WAIT_UNTIL(ok, atomic_load(&f->sh->runs) == run, HTU_TIMEOUT_USEC);
		assert_true(ok);
	}
	hako_domain_close(dom);
	assert_int_equal(atomic_load(&f->sh->bad_pdu_time), 0);
	assert_true(atomic_load(&f->sh->steps) >= 3 * 47);

	atomic_store(&f->sh->asset_quit, 1);
	assert_true(htu_join_child(asset, HTU_TIMEOUT_USEC));
	assert_int_equal(hako_simevent_list_assets(a, 3, &n), 0);
	assert_int_equal(n, 0);
	hako_simevent_fini();

	/* The segment goes with its conductor. */
	atomic_store(&f->sh->conductor_quit, 1);
	assert_true(htu_join_child(conductor, HTU_TIMEOUT_USEC));
	assert_int_equal(hako_domain_open(f->name, &dom), HAKO_ENOENT);
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_conductor, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
