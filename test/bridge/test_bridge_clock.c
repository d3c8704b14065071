/* The world clock of a bridge run as an asset (hako_bridge_world_clock_*): world time that does not
 * go back at a reset, so that tickers and throttles on it go on in the new run. One process: a
 * domain with its master, this thread as its only asset (each step moves the world by 1 ms), and a
 * bridge over comm-less endpoints, loaded from a bridge file with an inline "endpoints" block,
 * ticked once per step as hako-bridge --asset does. */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hako/bridge.h"
#include "hako/pdu.h"
#include "hako_test_util.h"

#define STEP 1000 /* world step and the asset's, us */

static char dir[256];

static struct {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_master_t *master;
	hako_member_t *m;
	hako_bridge_config_t *cfg;
	hako_endpoint_set_t *eps;
	hako_bridge_world_clock_t *wc;
	hako_bridge_t *b;
	atomic_int ticker_sends;   /* arrivals at d1 (ticker) */
	atomic_int throttle_sends; /* arrivals at d2 (throttle) */
} g;

static void put(const char *name, const char *text)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(htu_write_file(p, text), 0);
}

static void on_d1(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)user;
	(void)key;
	(void)data;
	(void)len;
	atomic_fetch_add(&g.ticker_sends, 1);
}

static void on_d2(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)user;
	(void)key;
	(void)data;
	(void)len;
	atomic_fetch_add(&g.throttle_sends, 1);
}

static void write_files(void)
{
	put("pdudef.json", "{\"robots\": [{\"name\": \"R\", \"shm_pdu_readers\": ["
	                   "{\"type\": \"std_msgs/UInt64\", \"org_name\": \"a\", "
	                   "\"channel_id\": 1, \"pdu_size\": 32},"
	                   "{\"type\": \"std_msgs/UInt64\", \"org_name\": \"b\", "
	                   "\"channel_id\": 2, \"pdu_size\": 32}], \"shm_pdu_writers\": []}]}\n");
	put("latest.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n");
	const char *names[] = {"src", "d1", "d2"};
	for (int i = 0; i < 3; i++) {
		char f[64], text[256];
		snprintf(f, sizeof(f), "%s.json", names[i]);
		snprintf(text, sizeof(text),
		         "{\"name\": \"%s\", \"cache\": \"latest.json\", \"comm\": null, "
		         "\"pdu_def_path\": \"pdudef.json\"}\n",
		         names[i]);
		put(f, text);
	}
	put("bridge.json",
	    "{\"version\": \"2.0.0\",\n"
	    " \"transferPolicies\": {\"t10\": {\"type\": \"ticker\", \"intervalMs\": 10},\n"
	    "   \"th10\": {\"type\": \"throttle\", \"intervalMs\": 10}},\n"
	    " \"nodes\": [{\"id\": \"n1\"}],\n"
	    " \"endpoints\": [{\"nodeId\": \"n1\", \"endpoints\": [\n"
	    "   {\"id\": \"src\", \"config_path\": \"src.json\"},\n"
	    "   {\"id\": \"d1\", \"config_path\": \"d1.json\"},\n"
	    "   {\"id\": \"d2\", \"config_path\": \"d2.json\"}]}],\n"
	    " \"pduKeyGroups\": {\n"
	    "   \"ga\": [{\"id\": \"R.a\", \"robot_name\": \"R\", \"pdu_name\": \"a\"}],\n"
	    "   \"gb\": [{\"id\": \"R.b\", \"robot_name\": \"R\", \"pdu_name\": \"b\"}]},\n"
	    " \"connections\": [\n"
	    "   {\"id\": \"tick\", \"nodeId\": \"n1\", \"source\": {\"endpointId\": \"src\"},\n"
	    "    \"destinations\": [{\"endpointId\": \"d1\"}],\n"
	    "    \"transferPdus\": [{\"pduKeyGroupId\": \"ga\", \"policyId\": \"t10\"}]},\n"
	    "   {\"id\": \"thr\", \"nodeId\": \"n1\", \"source\": {\"endpointId\": \"src\"},\n"
	    "    \"destinations\": [{\"endpointId\": \"d2\"}],\n"
	    "    \"transferPdus\": [{\"pduKeyGroupId\": \"gb\", \"policyId\": \"th10\"}]}]}\n");
}

static int setup(void **state)
{
	(void)state;
	memset(&g, 0, sizeof(g));
	htu_tmpdir(dir, sizeof(dir));
	write_files();
	htu_domain_name("bridge_clock", g.name, sizeof(g.name));
	hako_domain_config_t dc;
	hako_domain_config_default(&dc);
	dc.max_assets = 4;
	dc.max_channels = 4;
	dc.arena_bytes = 1 << 16;
	assert_int_equal(hako_domain_create(g.name, &dc, &g.dom), 0);
	hako_master_config_t mc = {STEP, STEP, 0};
	assert_int_equal(hako_master_start(g.dom, &mc, &g.master), 0);
	assert_int_equal(hako_member_register(g.dom, "bridge", STEP, &g.m), 0);

	char path[700];
	snprintf(path, sizeof(path), "%s/bridge.json", dir);
	hako_error_t err;
	char msg[1200];
	if (hako_bridge_config_load(path, "n1", NULL, &g.cfg, &err) != 0 ||
	    hako_endpoint_set_open_container(g.cfg->endpoints, &g.eps, &err) != 0) {
		fail_msg("%s", hako_error_format(&err, msg, sizeof(msg)));
	}
	assert_int_equal(hako_endpoint_set_start(g.eps, &err), 0);
	assert_int_equal(hako_endpoint_subscribe_by_name(hako_endpoint_set_get(g.eps, "d1"), "R",
	                                                 "a", on_d1, NULL, NULL),
	                 0);
	assert_int_equal(hako_endpoint_subscribe_by_name(hako_endpoint_set_get(g.eps, "d2"), "R",
	                                                 "b", on_d2, NULL, NULL),
	                 0);
	assert_int_equal(hako_bridge_world_clock_create(g.dom, &g.wc), 0);
	if (hako_bridge_create(g.cfg, g.eps, hako_bridge_world_clock_now, g.wc, &g.b, &err) != 0) {
		fail_msg("%s", hako_error_format(&err, msg, sizeof(msg)));
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hako_endpoint_set_stop(g.eps);
	hako_bridge_destroy(g.b);
	hako_bridge_world_clock_destroy(g.wc);
	hako_endpoint_set_close(g.eps);
	hako_bridge_config_free(g.cfg);
	hako_member_unregister(g.m);
	hako_master_stop(g.master);
	hako_domain_close(g.dom);
	htu_remove_domain(g.name);
	htu_remove_tmpdirs();
	return 0;
}

static void send_pdu(const char *name, uint64_t v)
{
	uint8_t pdu[32];
	memset(pdu, 0, sizeof(pdu));
	uint32_t meta[5] = {HAKO_PDU_MAGIC, HAKO_PDU_VERSION, 24, 32, 32};
	memcpy(pdu, meta, sizeof(meta));
	memcpy(pdu + 24, &v, 8);
	assert_int_equal(hako_endpoint_send_by_name(hako_endpoint_set_get(g.eps, "src"), "R", name,
	                                            pdu, sizeof(pdu)),
	                 0);
}

/* Acknowledge ev once the domain announced it. */
static void ack(int ev)
{
	int got = HAKO_EVENT_NONE;
	assert_int_equal(hako_member_wait_event(g.m, HTU_TIMEOUT_USEC, &got), 0);
	assert_int_equal(got, ev);
	assert_int_equal(hako_member_ack(g.m, ev), 0);
}

/* n steps of the asset, the bridge ticked in each, as hako-bridge --asset does. */
static void steps(int n)
{
	for (int done = 0, polls = 0; done < n; polls++) {
		assert_true(polls < 2 * n + 10); /* the only asset: it never waits on others */
		int r = hako_member_step_poll(g.m);
		if (r == HAKO_EAGAIN) {
			continue; /* the first poll of a run checks in at the start barrier */
		}
		assert_int_equal(r, 0);
		hako_bridge_tick(g.b);
		hako_member_step_done(g.m);
		done++;
	}
}

static void run(void)
{
	assert_int_equal(hako_domain_start(g.dom), 0);
	ack(HAKO_EVENT_START);
	assert_int_equal(hako_domain_state(g.dom), HAKO_STATE_RUNNING);
}

static void stop_and_reset(void)
{
	assert_int_equal(hako_domain_stop(g.dom), 0);
	ack(HAKO_EVENT_STOP);
	assert_int_equal(hako_domain_reset(g.dom), 0);
	ack(HAKO_EVENT_RESET);
	assert_int_equal(hako_domain_state(g.dom), HAKO_STATE_STOPPED);
}

static void test_ticker_and_throttle_across_reset(void **state)
{
	(void)state;
	hako_bridge_world_clock_t *none = (hako_bridge_world_clock_t *)&none;
	assert_int_equal(hako_bridge_world_clock_create(NULL, &none), HAKO_EINVAL);
	assert_null(none);

	send_pdu("a", 1); /* the ticker's value */
	run();
	send_pdu("b", 1); /* the throttle's first: sent at once */
	assert_int_equal(atomic_load(&g.throttle_sends), 1);
	steps(100);
	/* 100 ms of world time: a 10 ms ticker sends 10 times, give or take one */
	int first = atomic_load(&g.ticker_sends);
	assert_in_range(first, 9, 11);
	hako_time_t before = hako_bridge_world_clock_now(g.wc);
	assert_true(before >= 100 * STEP);

	stop_and_reset();
	assert_int_equal(hako_domain_world_time(g.dom), 0);
	/* the clock did not go back */
	assert_true(hako_bridge_world_clock_now(g.wc) >= before);
	run();
	/* the last throttle send was 100 ms of world time ago: sent at once, not held until the
	 * new run reaches the old one's time */
	send_pdu("b", 2);
	assert_int_equal(atomic_load(&g.throttle_sends), 2);
	steps(100);
	/* the ticker goes on every 10 ms of the new run, not silent until world time passes 100 ms
	 * again */
	assert_in_range(atomic_load(&g.ticker_sends) - first, 9, 11);
	hako_time_t after = hako_bridge_world_clock_now(g.wc);
	assert_true(after >= before + 100 * STEP);
	assert_true(after <= before + 102 * STEP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_ticker_and_throttle_across_reset, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
