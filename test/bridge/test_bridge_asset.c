/* hako-bridge --asset: the daemon as a core asset that ticks once per step on world time.
 *
 * This process creates a private domain and runs its master in a thread (delta 1000 us, max
 * delay 1000 us, free-running: real-time factor 0), so world time is deterministic: with the
 * bridge the only asset, the world moves one delta per bridge step and the bridge ticks at
 * every world time 1000, 2000, ... The daemon runs `--asset bridge --domain D --delta-usec 1000`
 * with two connections from one shm source (this process writes the domain's channel R/0) to
 * one tcp destination (a server endpoint in this process):
 *  - ct: a ticker of 10 ms, listed first, so it has stored a value when ci has forwarded it;
 *  - ci: immediate.
 *
 * Checks: the bridge is listed by the domain as an asset; ticker sends follow world time (after
 * the world ran W ms, W / 10 sends, +-1: the first tick only arms the timer and the last world
 * step may be unticked when a stop lands between the world's advance and the bridge's step), read
 * from the daemon's control socket once the run stopped (at a stop time, or by hako_domain_stop);
 * stop and reset are acknowledged while the daemon runs (state back to stopped), and tickers go
 * on following world time after a reset, when world time starts again from 0; SIGTERM ends the
 * daemon with exit 0 and statistics, and unregisters it, both while the simulation is stopped and
 * while it runs; a daemon whose conductor went away exits 1. Nothing is asserted on wall-clock
 * time.
 *
 * argv[1]: the hako-bridge executable. */
#define _GNU_SOURCE

#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/endpoint.h"
#include "bridge_asset_kit.h"
#include "bridge_stats.h"
#include "hako_test_util.h"

/* The daemon's line once its connections run. */
#define READY     "node 'n1': 2 connection(s), 2 endpoint(s), world time (asset)"
#define PDU_SIZE  32
#define DELTA     1000
#define TICK_USEC 10000 /* the ticker's intervalMs, in us */

static const char *tool;

struct fx {
	bak_t k;            /* dir, dom_name, sock, log, dom, rx, pid, ctl_fd, starts */
	hako_channel_t *ch; /* the bridge's source: R/0 */
};

static atomic_int rx_count;
static _Atomic uint64_t rx_last;

static void on_rx(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)user;
	(void)key;
	uint64_t v = 0;
	if (len == PDU_SIZE) {
		memcpy(&v, data, sizeof(v));
	}
	atomic_store(&rx_last, v);
	atomic_fetch_add(&rx_count, 1);
}

/* ---- the files ---- */

static void write_config(struct fx *f, unsigned rx_port)
{
	bak_put(&f->k, "pdudef.json",
	        "{\"robots\": [{\"name\": \"R\", \"shm_pdu_readers\": [{\"type\": \"t/Data\", "
	        "\"org_name\": \"data\", \"channel_id\": 0, \"pdu_size\": %d}], "
	        "\"shm_pdu_writers\": []}]}\n",
	        PDU_SIZE);
	bak_put(&f->k, "cache.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n");
	bak_put(&f->k, "src_comm.json",
	        "{\"protocol\": \"shm\", \"impl_type\": \"callback\", \"asset_name\": \"bridge\",\n"
	        " \"io\": {\"robots\": [{\"name\": \"R\", \"pdu\": [{\"name\": \"data\", "
	        "\"notify_on_recv\": true}]}]}}\n");
	bak_write_endpoints(&f->k, rx_port);
	bak_put(&f->k, "bridge.json",
	        "{\"version\": \"2.0.0\",\n"
	        " \"transferPolicies\": {\"tick\": {\"type\": \"ticker\", \"intervalMs\": %d},\n"
	        "                      \"imm\": {\"type\": \"immediate\"}},\n"
	        " \"nodes\": [{\"id\": \"n1\"}],\n"
	        " \"endpoints_config_path\": \"container.json\",\n"
	        " \"pduKeyGroups\": {\"g\": [{\"id\": \"R.data\", \"robot_name\": \"R\", "
	        "\"pdu_name\": \"data\"}]},\n"
	        " \"connections\": [\n"
	        "  {\"id\": \"ct\", \"nodeId\": \"n1\", \"source\": {\"endpointId\": \"src\"},\n"
	        "   \"destinations\": [{\"endpointId\": \"dst\"}],\n"
	        "   \"transferPdus\": [{\"pduKeyGroupId\": \"g\", \"policyId\": \"tick\"}]},\n"
	        "  {\"id\": \"ci\", \"nodeId\": \"n1\", \"source\": {\"endpointId\": \"src\"},\n"
	        "   \"destinations\": [{\"endpointId\": \"dst\"}],\n"
	        "   \"transferPdus\": [{\"pduKeyGroupId\": \"g\", \"policyId\": \"imm\"}]}]}\n",
	        TICK_USEC / 1000);
}

/* ---- the daemon ---- */

static uint64_t fwd(struct fx *f, const char *conn)
{
	return bst_stat_of(bak_ctl_stats(&f->k), conn, "forwarded");
}

/* Write value v to the source channel and wait until the immediate connection forwarded it
 * (its forwarded count reaches `want`): the ticker, listed first, then holds v too. rx seeing a
 * peer does not mean the daemon's client side already counts as connected: a send that failed
 * for that (send_failed grew) is written again. */
static void write_src(struct fx *f, uint64_t v, uint64_t want)
{
	uint8_t buf[PDU_SIZE];
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &v, sizeof(v));
	hako_time_t deadline = hako_now_usec() + HTU_TIMEOUT_USEC;
	for (;;) {
		uint64_t failed = bst_stat_of(bak_ctl_stats(&f->k), "ci", "send_failed");
		assert_int_equal(hako_channel_write(f->ch, buf, sizeof(buf)), 0);
		int ok;
		HTU_WAIT_UNTIL(ok,
		               fwd(f, "ci") == want ||
		                   bst_stat_of(bak_ctl_stats(&f->k), "ci", "send_failed") > failed,
		               HTU_TIMEOUT_USEC);
		if (fwd(f, "ci") == want) {
			return;
		}
		if (!ok || hako_now_usec() > deadline) {
			fail_msg("ci did not forward value %" PRIu64 ":\n%s", v,
			         bak_ctl_stats(&f->k));
		}
		htu_sleep_usec(10000);
	}
}

/* The asset "bridge" of the domain; 0 if it is not listed. */
static int find_bridge(struct fx *f, hako_asset_info_t *out)
{
	hako_asset_info_t a[8];
	int n = 0;
	assert_int_equal(hako_domain_list_assets(f->k.dom, a, 8, &n), 0);
	for (int i = 0; i < n && i < 8; i++) {
		if (strcmp(a[i].name, "bridge") == 0) {
			*out = a[i];
			return 1;
		}
	}
	return 0;
}

/* Ticker sends over a run of the world from `from` to `to` (us): one per 10 ms, +-1. */
static void expect_ticks(uint64_t got, hako_time_t from, hako_time_t to)
{
	int64_t want = (int64_t)((to - from) / TICK_USEC);
	if ((int64_t)got < want - 1 || (int64_t)got > want + 1) {
		fail_msg("ticker sent %" PRIu64 " over world time %" PRId64 "..%" PRId64
		         " us; expected %" PRId64 " +-1",
		         got, (int64_t)from, (int64_t)to, want);
	}
	print_message("ticker: %" PRIu64 " sends over %" PRId64 " ms of world time\n", got,
	              (int64_t)((to - from) / 1000));
}

/* A run to a stop time: start, the master stops it at `stop_at`; the ticker sends of the run. */
static uint64_t run_until(struct fx *f, hako_time_t stop_at)
{
	uint64_t before = fwd(f, "ct");
	hako_time_t t0 = hako_domain_world_time(f->k.dom);
	assert_int_equal(hako_domain_set_stop_time(f->k.dom, stop_at), 0);
	assert_int_equal(hako_domain_start(f->k.dom), 0);
	bak_expect_state(&f->k, HAKO_STATE_STOPPED);
	hako_time_t w = hako_domain_world_time(f->k.dom);
	assert_int_equal(w, stop_at);
	hako_asset_info_t a;
	assert_true(find_bridge(f, &a));
	assert_int_equal(a.time_usec, w); /* it ran every step that fits */
	uint64_t n = fwd(f, "ct") - before;
	expect_ticks(n, t0, w);
	return n;
}

/* Every PDU the daemon forwarded reached rx (tcp), and the last one carries `v`. */
static void expect_rx(struct fx *f, uint64_t v)
{
	const char *st = bak_ctl_stats(&f->k);
	uint64_t total = bst_stat_of(st, "ct", "forwarded") + bst_stat_of(st, "ci", "forwarded");
	assert_int_equal(bst_stat_of(st, "ct", "send_failed"), 0); /* connected before any tick */
	int ok;
	HTU_WAIT_UNTIL(ok, (uint64_t)atomic_load(&rx_count) == total, HTU_TIMEOUT_USEC);
	if (!ok) {
		fail_msg("rx got %d PDUs, the daemon forwarded %" PRIu64, atomic_load(&rx_count),
		         total);
	}
	assert_int_equal(atomic_load(&rx_last), v);
}

/* SIGTERM: exit 0, the log with its final statistics. */
static char *term_daemon(struct fx *f)
{
	if (f->k.ctl_fd >= 0) {
		close(f->k.ctl_fd);
	}
	assert_int_equal(kill(f->k.pid, SIGTERM), 0);
	int status = 0;
	assert_int_equal(htu_wait_child(f->k.pid, HTU_TIMEOUT_USEC, &status), 0);
	f->k.pid = 0;
	char *log = htu_slurp(f->k.log);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fail_msg("hako-bridge: no clean exit (status 0x%x):\n%s", status, log);
	}
	assert_non_null(strstr(log, "hako-bridge: connection ct: forwarded="));
	assert_non_null(strstr(log, "hako-bridge: connection ci: forwarded="));
	assert_int_equal(access(f->k.sock, F_OK), -1);
	hako_asset_info_t a;
	assert_false(find_bridge(f, &a));
	return log;
}

/* ---- the tests ---- */

static void test_asset_runs(void **state)
{
	struct fx *f = *state;
	bak_start_daemon(&f->k, tool, READY, NULL);

	/* (1) registered as an asset of the domain, with its delta */
	hako_asset_info_t a;
	assert_true(find_bridge(f, &a));
	assert_int_equal(a.delta_usec, DELTA);
	assert_int_equal(a.time_usec, 0);
	assert_int_equal(hako_domain_state(f->k.dom), HAKO_STATE_STOPPED);

	/* immediate forwards on arrival, whatever the state; the ticker waits for world time */
	write_src(f, 1, 1);
	assert_int_equal(fwd(f, "ct"), 0);

	/* (2) ticker sends follow world time: 200 ms -> 20 (the first tick arms: 19) */
	run_until(f, 200000);
	expect_rx(f, 1);
	/* stopped: nothing ticks */
	uint64_t ct = fwd(f, "ct");
	assert_int_equal(hako_domain_state(f->k.dom), HAKO_STATE_STOPPED);

	/* a second run without a reset goes on from the world time reached */
	run_until(f, 350000);

	/* (3) reset while the daemon runs: acknowledged, back to stopped at world time 0 */
	uint32_t resets = hako_domain_reset_count(f->k.dom);
	assert_int_equal(hako_domain_reset(f->k.dom), 0);
	bak_expect_state(&f->k, HAKO_STATE_STOPPED);
	assert_int_equal(hako_domain_world_time(f->k.dom), 0);
	assert_int_equal(hako_domain_reset_count(f->k.dom), resets + 1);
	assert_true(find_bridge(f, &a));
	assert_int_equal(a.time_usec, 0);

	/* after the reset world time starts again from 0: tickers still follow it */
	write_src(f, 2, 2);
	run_until(f, 100000);
	expect_rx(f, 2);

	/* stop by hand in the middle of a free run: acknowledged, stopped, ticks match */
	ct = fwd(f, "ct");
	hako_time_t t0 = hako_domain_world_time(f->k.dom);
	assert_int_equal(hako_domain_start(f->k.dom), 0);
	assert_int_equal(hako_domain_wait_world_time(f->k.dom, t0 + 150000, HTU_TIMEOUT_USEC), 0);
	assert_int_equal(hako_domain_stop(f->k.dom), 0);
	bak_expect_state(&f->k, HAKO_STATE_STOPPED);
	hako_time_t w = hako_domain_world_time(f->k.dom);
	expect_ticks(fwd(f, "ct") - ct, t0, w);
	assert_true(find_bridge(f, &a));
	assert_true(a.time_usec == w || a.time_usec == w - DELTA);

	/* and a reset after a stop by hand */
	assert_int_equal(hako_domain_reset(f->k.dom), 0);
	bak_expect_state(&f->k, HAKO_STATE_STOPPED);
	assert_int_equal(hako_domain_world_time(f->k.dom), 0);
	run_until(f, 50000);
	expect_rx(f, 2);

	/* (4) SIGTERM while stopped: exit 0, statistics, unregistered */
	const char *st = bak_ctl_stats(&f->k);
	uint64_t ct_end = bst_stat_of(st, "ct", "forwarded");
	uint64_t ci_end = bst_stat_of(st, "ci", "forwarded");
	char *log = term_daemon(f);
	char want[200];
	snprintf(want, sizeof(want), "connection ct: forwarded=%" PRIu64 " ", ct_end);
	assert_non_null(strstr(log, want));
	snprintf(want, sizeof(want), "connection ci: forwarded=%" PRIu64 " ", ci_end);
	assert_non_null(strstr(log, want));
	assert_int_equal(hako_domain_state(f->k.dom), HAKO_STATE_STOPPED);
}

/* SIGTERM while the simulation runs: the daemon leaves cleanly (exit 0, statistics,
 * unregistered) and the domain is not put in error; it can be stopped and reset. */
static void test_term_while_running(void **state)
{
	struct fx *f = *state;
	bak_start_daemon(&f->k, tool, READY, NULL);
	write_src(f, 7, 1);
	assert_int_equal(hako_domain_start(f->k.dom), 0);
	assert_int_equal(hako_domain_wait_world_time(f->k.dom, 50000, HTU_TIMEOUT_USEC), 0);
	assert_true(fwd(f, "ct") >= 3);
	term_daemon(f);
	int st = hako_domain_state(f->k.dom);
	if (st != HAKO_STATE_RUNNING) {
		hako_domain_info_t info;
		hako_domain_get_info(f->k.dom, &info);
		fail_msg("state %s after the bridge left a running simulation (%s)",
		         hako_state_name(st), info.error_reason);
	}
	assert_int_equal(hako_domain_stop(f->k.dom), 0);
	bak_expect_state(&f->k, HAKO_STATE_STOPPED);
	assert_int_equal(hako_domain_reset(f->k.dom), 0);
	bak_expect_state(&f->k, HAKO_STATE_STOPPED);
	/* the name is free again: a new daemon registers */
	bak_start_daemon(&f->k, tool, READY, NULL);
	hako_asset_info_t a;
	assert_true(find_bridge(f, &a));
	term_daemon(f);
}

/* The conductor goes away (its master stops): the daemon notices, says so and exits 1 instead
 * of idling for ever on a domain nobody drives. */
static void test_conductor_gone(void **state)
{
	struct fx *f = *state;
	bak_start_daemon(&f->k, tool, READY, NULL);
	hako_master_stop(f->k.master);
	f->k.master = NULL;
	int status = 0;
	assert_int_equal(htu_wait_child(f->k.pid, HTU_TIMEOUT_USEC, &status), 0);
	f->k.pid = 0;
	char *log = htu_slurp(f->k.log);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 1) {
		fail_msg("hako-bridge: expected exit 1 (status 0x%x):\n%s", status, log);
	}
	assert_non_null(strstr(log, "the conductor"));
	assert_non_null(strstr(log, "is gone"));
	assert_non_null(strstr(log, "hako-bridge: connection ct: forwarded=0 "));
}

/* ---- fixture ---- */

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	*state = f;
	f->k.ctl_fd = -1;
	atomic_store(&rx_count, 0);
	atomic_store(&rx_last, 0);
	bak_open(&f->k, "brasset");
	assert_int_equal(hako_channel_create(f->k.dom, "R", 0, PDU_SIZE, &f->ch), 0);

	/* rx: this process's tcp server, the bridge's destination */
	hako_error_t err;
	bak_put(&f->k, "pdudef.json",
	        "{\"robots\": [{\"name\": \"R\", \"shm_pdu_readers\": [{\"type\": \"t/Data\", "
	        "\"org_name\": \"data\", \"channel_id\": 0, \"pdu_size\": %d}], "
	        "\"shm_pdu_writers\": []}]}\n",
	        PDU_SIZE);
	bak_put(&f->k, "cache.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n");
	bak_write_tcp_endpoint(&f->k, "rx", 1, 0);
	assert_int_equal(hako_endpoint_open(bak_path(&f->k, "rx.json"), &f->k.rx, &err), 0);
	assert_int_equal(hako_endpoint_subscribe_by_name(f->k.rx, "R", "data", on_rx, NULL, NULL),
	                 0);
	assert_int_equal(hako_endpoint_start(f->k.rx, &err), 0);
	unsigned port = hako_endpoint_local_port(f->k.rx);
	assert_true(port != 0);
	write_config(f, port);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->k.pid > 0 && !htu_child_exited(f->k.pid)) {
		fprintf(stderr, "daemon log:\n%s\n", htu_slurp(f->k.log));
	}
	bak_close(&f->k);
	free(f);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH_TO_HAKO_BRIDGE\n", argv[0]);
		return 2;
	}
	tool = argv[1];
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_asset_runs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_term_while_running, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_conductor_gone, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
