/* hako-bridge --asset at a stop and a reset: nothing written before the stop is lost (issue 21,
 * the samples.bridge flake "node B's last counter is 2997, node A's writer's 3000").
 *
 * This process creates a private domain, runs its master (free-running) and a tcp server (rx),
 * the bridge's destination. The daemon runs `--asset bridge` with one shm source (callback
 * mode, notified on R/count, R/thr, R/tick) and three connections to rx:
 *  - c_imm: R/count, immediate;
 *  - c_thr: R/thr, throttle 100 ms (of world time: the first value of a run is sent, the next
 *    ones are held inside the window);
 *  - c_tick: R/tick, ticker 10 s (never due in these short runs).
 * Its shm watcher is made late, as the scheduler may leave it: HAKO_TEST_SHM_WATCH_DELAY_USEC
 * = 30000, so it reads the channels 30 ms after it is woken.
 *
 * Each of 100 rounds does what hako-launch does at the end of a run: start, write N values to
 * each channel (this process writes them), stop, wait for stopped, reset, wait for stopped.
 * Then every PDU the daemon forwarded has reached rx (its counters, read from the control
 * socket), and rx's last value of each PDU is the last one written. Before the fix the daemon
 * acknowledged the stop and the reset at once: the reset zeroed the channels before the late
 * watcher read them (c_imm lost its last values), and the throttle and the ticker held theirs.
 * Nothing is asserted on wall-clock time.
 *
 * argv[1]: the hako-bridge executable. */
#define _GNU_SOURCE

#include <inttypes.h>
#include <setjmp.h>
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
#define READY    "node 'n1': 3 connection(s), 2 endpoint(s), world time (asset)"
#define PDU_SIZE 32
#define DELTA    1000
#define NPDUS    3   /* R/count, R/thr, R/tick: channels 0, 1, 2 */
#define ROUNDS   100 /* stop + reset, as hako-launch does them */
#define WRITES   5   /* values written to each channel right before each stop */
#define LATE     "30000"

static const char *tool;
static const char *const conns[NPDUS] = {"c_imm", "c_thr", "c_tick"};

struct fx {
	bak_t k; /* dir, dom_name, sock, log, dom, rx, pid, ctl_fd, starts */
	hako_channel_t *ch[NPDUS];
};

static atomic_int rx_count;
static _Atomic uint64_t rx_last[NPDUS];

static void on_rx(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)user;
	uint64_t v = 0;
	if (len == PDU_SIZE) {
		memcpy(&v, data, sizeof(v));
	}
	if (key->channel_id >= 0 && key->channel_id < NPDUS) {
		atomic_store(&rx_last[key->channel_id], v);
	}
	atomic_fetch_add(&rx_count, 1);
}

/* ---- the files ---- */

static void write_common(struct fx *f)
{
	bak_put(
	    &f->k, "pdudef.json",
	    "{\"robots\": [{\"name\": \"R\", \"shm_pdu_readers\": [\n"
	    "  {\"type\": \"t/Data\", \"org_name\": \"count\", \"channel_id\": 0, \"pdu_size\": "
	    "%d},\n"
	    "  {\"type\": \"t/Data\", \"org_name\": \"thr\", \"channel_id\": 1, \"pdu_size\": "
	    "%d},\n"
	    "  {\"type\": \"t/Data\", \"org_name\": \"tick\", \"channel_id\": 2, \"pdu_size\": "
	    "%d}],\n"
	    " \"shm_pdu_writers\": []}]}\n",
	    PDU_SIZE, PDU_SIZE, PDU_SIZE);
	bak_put(&f->k, "cache.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n");
}

static void write_config(struct fx *f, unsigned rx_port)
{
	bak_put(&f->k, "src_comm.json",
	        "{\"protocol\": \"shm\", \"impl_type\": \"callback\", \"asset_name\": \"bridge\",\n"
	        " \"io\": {\"robots\": [{\"name\": \"R\", \"pdu\": [\n"
	        "   {\"name\": \"count\", \"notify_on_recv\": true},\n"
	        "   {\"name\": \"thr\", \"notify_on_recv\": true},\n"
	        "   {\"name\": \"tick\", \"notify_on_recv\": true}]}]}}\n");
	bak_write_endpoints(&f->k, rx_port);
	bak_put(
	    &f->k, "bridge.json",
	    "{\"version\": \"2.0.0\",\n"
	    " \"transferPolicies\": {\"imm\": {\"type\": \"immediate\"},\n"
	    "   \"thr\": {\"type\": \"throttle\", \"intervalMs\": 100},\n"
	    "   \"tick\": {\"type\": \"ticker\", \"intervalMs\": 10000}},\n"
	    " \"nodes\": [{\"id\": \"n1\"}],\n"
	    " \"endpoints_config_path\": \"container.json\",\n"
	    " \"pduKeyGroups\": {\n"
	    "   \"g_count\": [{\"id\": \"R.count\", \"robot_name\": \"R\", \"pdu_name\": "
	    "\"count\"}],\n"
	    "   \"g_thr\": [{\"id\": \"R.thr\", \"robot_name\": \"R\", \"pdu_name\": \"thr\"}],\n"
	    "   \"g_tick\": [{\"id\": \"R.tick\", \"robot_name\": \"R\", \"pdu_name\": "
	    "\"tick\"}]},\n"
	    " \"connections\": [\n"
	    "  {\"id\": \"c_imm\", \"nodeId\": \"n1\", \"source\": {\"endpointId\": \"src\"},\n"
	    "   \"destinations\": [{\"endpointId\": \"dst\"}],\n"
	    "   \"transferPdus\": [{\"pduKeyGroupId\": \"g_count\", \"policyId\": \"imm\"}]},\n"
	    "  {\"id\": \"c_thr\", \"nodeId\": \"n1\", \"source\": {\"endpointId\": \"src\"},\n"
	    "   \"destinations\": [{\"endpointId\": \"dst\"}],\n"
	    "   \"transferPdus\": [{\"pduKeyGroupId\": \"g_thr\", \"policyId\": \"thr\"}]},\n"
	    "  {\"id\": \"c_tick\", \"nodeId\": \"n1\", \"source\": {\"endpointId\": \"src\"},\n"
	    "   \"destinations\": [{\"endpointId\": \"dst\"}],\n"
	    "   \"transferPdus\": [{\"pduKeyGroupId\": \"g_tick\", \"policyId\": \"tick\"}]}]}\n");
}

/* ---- the daemon ---- */

static void write_value(hako_channel_t *ch, uint64_t v)
{
	uint8_t buf[PDU_SIZE];
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &v, sizeof(v));
	assert_int_equal(hako_channel_write(ch, buf, sizeof(buf)), 0);
}

/* ---- the test ---- */

static void test_stop_reset_loses_nothing(void **state)
{
	struct fx *f = *state;
	bak_start_daemon(&f->k, tool, READY, "HAKO_TEST_SHM_WATCH_DELAY_USEC=" LATE);
	int lost = 0;
	for (int round = 0; round < ROUNDS; round++) {
		uint64_t last = (uint64_t)(round + 1) * WRITES;
		assert_int_equal(hako_domain_start(f->k.dom), 0);
		bak_expect_state(&f->k, HAKO_STATE_RUNNING);
		for (uint64_t v = last - WRITES + 1; v <= last; v++) {
			for (int p = 0; p < NPDUS; p++) {
				write_value(f->ch[p], v);
			}
		}
		/* hako-launch's shutdown: stop, then reset once stopped */
		assert_int_equal(hako_domain_stop(f->k.dom), 0);
		bak_expect_state(&f->k, HAKO_STATE_STOPPED);
		assert_int_equal(hako_domain_reset(f->k.dom), 0);
		bak_expect_state(&f->k, HAKO_STATE_STOPPED);

		/* what the daemon forwarded has reached rx */
		const char *st = bak_ctl_stats(&f->k);
		uint64_t total = 0;
		for (int p = 0; p < NPDUS; p++) {
			total += bst_stat_of(st, conns[p], "forwarded");
			assert_int_equal(bst_stat_of(st, conns[p], "send_failed"), 0);
		}
		int ok;
		HTU_WAIT_UNTIL(ok, (uint64_t)atomic_load(&rx_count) == total, HTU_TIMEOUT_USEC);
		if (!ok) {
			fail_msg("round %d: rx got %d PDUs, the daemon forwarded %" PRIu64, round,
			         atomic_load(&rx_count), total);
		}
		for (int p = 0; p < NPDUS; p++) {
			uint64_t got = atomic_load(&rx_last[p]);
			if (got != last) {
				print_error("round %d: %s: rx's last value %" PRIu64
				            ", the last written %" PRIu64 "\n",
				            round, conns[p], got, last);
				lost++;
			}
		}
	}
	if (lost > 0) {
		fail_msg("%d last value(s) lost at a stop + reset in %d rounds:\n%s", lost, ROUNDS,
		         bak_ctl_stats(&f->k));
	}
}

/* ---- fixture ---- */

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	*state = f;
	atomic_store(&rx_count, 0);
	for (int p = 0; p < NPDUS; p++) {
		atomic_store(&rx_last[p], 0);
	}
	bak_open(&f->k, "brstop");
	for (int p = 0; p < NPDUS; p++) {
		assert_int_equal(hako_channel_create(f->k.dom, "R", p, PDU_SIZE, &f->ch[p]), 0);
	}

	/* rx: this process's tcp server, the bridge's destination */
	hako_error_t err;
	write_common(f);
	bak_write_tcp_endpoint(&f->k, "rx", 1, 0);
	assert_int_equal(hako_endpoint_open(bak_path(&f->k, "rx.json"), &f->k.rx, &err), 0);
	assert_int_equal(hako_endpoint_subscribe(f->k.rx, NULL, on_rx, NULL, NULL), 0);
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
		kill(f->k.pid, SIGTERM);
		int status = 0;
		if (htu_wait_child(f->k.pid, HTU_TIMEOUT_USEC, &status) != 0 ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "daemon log:\n%s\n", htu_slurp(f->k.log));
		}
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
	    cmocka_unit_test_setup_teardown(test_stop_reset_loses_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
