/* A ticker whose shm source PDU is not listed with notify_on_recv (Hakoniwa's web bridge
 * config): nothing ever arrives from the shm comm for it, so the bridge reads the channel on
 * every tick, as Hakoniwa's bridge does. One process: a domain, an shm endpoint (callback
 * mode) whose PDU `pos` is not notified, a comm-less destination, a bridge on a clock this test
 * moves. Checks: nothing before the first write; every tick after it forwards the channel's
 * latest value (a new write is seen at the next tick); the same PDU listed with notify_on_recv
 * forwards the same way. */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hako/bridge.h"
#include "hako/pdu.h"
#include "hako_test_util.h"

static char dir[256];

static struct {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_bridge_config_t *cfg;
	hako_endpoint_set_t *eps;
	hako_bridge_t *b;
	hako_time_t now;
	uint64_t got[64];
	int ngot;
} g;

static void put(const char *name, const char *text)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(htu_write_file(p, text), 0);
}

static hako_time_t clock_now(void *user)
{
	(void)user;
	return g.now;
}

static void on_dst(void *user, const hako_pdu_key_t *k, const void *data, size_t len)
{
	(void)user;
	(void)k;
	uint64_t v = 0;
	if (len >= 32 && g.ngot < 64) {
		memcpy(&v, (const uint8_t *)data + 24, 8);
		g.got[g.ngot++] = v;
	}
}

static void write_files(int notify)
{
	put("pdudef.json", "{\"robots\": [{\"name\": \"Drone\", \"shm_pdu_readers\": [],"
	                   " \"shm_pdu_writers\": [{\"type\": \"std_msgs/UInt64\", "
	                   "\"org_name\": \"pos\", \"channel_id\": 0, \"pdu_size\": 32}]}]}\n");
	put("latest.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n");
	char comm[512];
	snprintf(comm, sizeof(comm),
	         "{\"protocol\": \"shm\", \"name\": \"shm\", \"impl_type\": \"callback\", "
	         "\"asset_name\": \"web_bridge\", \"io\": {\"robots\": [{\"name\": \"Drone\", "
	         "\"pdu\": [{\"name\": \"pos\", \"notify_on_recv\": %s}]}]}}\n",
	         notify ? "true" : "false");
	put("comm_shm.json", comm);
	put("src.json", "{\"name\": \"src\", \"cache\": \"latest.json\", \"comm\": "
	                "\"comm_shm.json\", \"pdu_def_path\": \"pdudef.json\"}\n");
	put("dst.json", "{\"name\": \"dst\", \"cache\": \"latest.json\", \"comm\": null, "
	                "\"pdu_def_path\": \"pdudef.json\"}\n");
	put("bridge.json",
	    "{\"version\": \"2.0.0\",\n"
	    " \"transferPolicies\": {\"ticker_20ms\": {\"type\": \"ticker\", \"intervalMs\": "
	    "20}},\n"
	    " \"nodes\": [{\"id\": \"web_bridge_node1\"}],\n"
	    " \"endpoints\": [{\"nodeId\": \"web_bridge_node1\", \"endpoints\": [\n"
	    "   {\"id\": \"ep_shm\", \"config_path\": \"src.json\"},\n"
	    "   {\"id\": \"ep_ws\", \"config_path\": \"dst.json\"}]}],\n"
	    " \"pduKeyGroups\": {\"drone\": [\n"
	    "   {\"id\": \"Drone.pos\", \"robot_name\": \"Drone\", \"pdu_name\": \"pos\"}]},\n"
	    " \"connections\": [{\"id\": \"shm_to_ws\", \"nodeId\": \"web_bridge_node1\",\n"
	    "   \"source\": {\"endpointId\": \"ep_shm\"},\n"
	    "   \"destinations\": [{\"endpointId\": \"ep_ws\"}],\n"
	    "   \"transferPdus\": [{\"pduKeyGroupId\": \"drone\", \"policyId\": "
	    "\"ticker_20ms\"}]}]}\n");
}

static void open_all(int notify)
{
	memset(&g, 0, sizeof(g));
	htu_tmpdir(dir, sizeof(dir));
	write_files(notify);
	htu_domain_name("bridge_shm_ticker", g.name, sizeof(g.name));
	hako_domain_config_t dc;
	hako_domain_config_default(&dc);
	dc.max_assets = 4;
	dc.max_channels = 4;
	dc.arena_bytes = 1 << 16;
	assert_int_equal(hako_domain_create(g.name, &dc, &g.dom), 0);
	char path[700];
	snprintf(path, sizeof(path), "%s/bridge.json", dir);
	hako_error_t err;
	char msg[1200];
	if (hako_bridge_config_load(path, "web_bridge_node1", NULL, &g.cfg, &err) != 0 ||
	    hako_endpoint_set_open_container(g.cfg->endpoints, &g.eps, &err) != 0) {
		fail_msg("%s", hako_error_format(&err, msg, sizeof(msg)));
	}
	assert_int_equal(hako_endpoint_set_set_domain(g.eps, g.dom), 0);
	if (hako_endpoint_set_start(g.eps, &err) != 0) {
		fail_msg("%s", hako_error_format(&err, msg, sizeof(msg)));
	}
	assert_int_equal(hako_endpoint_subscribe_by_name(hako_endpoint_set_get(g.eps, "ep_ws"),
	                                                 "Drone", "pos", on_dst, NULL, NULL),
	                 0);
	if (hako_bridge_create(g.cfg, g.eps, clock_now, NULL, &g.b, &err) != 0) {
		fail_msg("%s", hako_error_format(&err, msg, sizeof(msg)));
	}
}

static int close_all(void **state)
{
	(void)state;
	hako_endpoint_set_stop(g.eps);
	hako_bridge_destroy(g.b);
	hako_endpoint_set_close(g.eps);
	hako_bridge_config_free(g.cfg);
	hako_domain_close(g.dom);
	htu_remove_domain(g.name);
	htu_remove_tmpdirs();
	return 0;
}

/* What another asset does: a write into the channel, nothing else. */
static void write_channel(uint64_t v)
{
	hako_channel_t *ch = NULL;
	assert_int_equal(hako_channel_create(g.dom, "Drone", 0, 32, &ch), 0);
	uint8_t pdu[32];
	memset(pdu, 0, sizeof(pdu));
	uint32_t meta[5] = {HAKO_PDU_MAGIC, HAKO_PDU_VERSION, 24, 32, 32};
	memcpy(pdu, meta, sizeof(meta));
	memcpy(pdu + 24, &v, 8);
	assert_int_equal(hako_channel_write(ch, pdu, sizeof(pdu)), 0);
}

static void tick_at(hako_time_t t)
{
	g.now = t;
	hako_bridge_tick(g.b);
}

static void ticker_reads_the_channel(int notify)
{
	open_all(notify);
	tick_at(0); /* arms the ticker */
	tick_at(20000);
	assert_int_equal(g.ngot, 0); /* never written: nothing to forward */
	write_channel(7);
	tick_at(30000); /* not due */
	assert_int_equal(g.ngot, 0);
	tick_at(40000);
	tick_at(60000);
	assert_int_equal(g.ngot, 2);
	assert_int_equal(g.got[0], 7);
	assert_int_equal(g.got[1], 7); /* a ticker repeats the latest value */
	write_channel(8);
	tick_at(80000);
	assert_int_equal(g.ngot, 3);
	assert_int_equal(g.got[2], 8);
	hako_bridge_conn_stats_t st;
	assert_int_equal(hako_bridge_get_stats(g.b, 0, &st), 0);
	assert_string_equal(st.id, "shm_to_ws");
	assert_int_equal(st.forwarded, 3);
}

static void test_not_notified(void **state)
{
	(void)state;
	ticker_reads_the_channel(0);
}

static void test_notified(void **state)
{
	(void)state;
	ticker_reads_the_channel(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_not_notified, close_all),
	    cmocka_unit_test_teardown(test_notified, close_all),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
