/* RD-Full bridges following the ownership (hako/rd_route.h), without the network: node 1 and
 * node 2 each in its own domain, the commit authority and the mirrors driven as in
 * test_rd_full.c, and one bridge per node:
 *   node 2: "out2" carries the forklift's PDUs from node 2's shm channels to a comm-less
 *           endpoint "wire2" (what would be the network), and "other2" a PDU of no EU;
 *   node 1: "in1" carries them from a comm-less endpoint "wire1" (fed by the test with what
 *           wire2 got, or with forged PDUs) to a comm-less "sink1" the test records.
 * Checks: out2 forwards only while node 2 owns the EU (from the commit point on), in1 takes
 * the old owner's epoch until the commit point or the first PDU of the new one and never an
 * older one after, the drops are counted, a reset sets the epoch back, and the connections
 * the router refuses (no epoch validation, two EUs, an EU's PDUs mixed with others). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/bridge.h"
#include "hako/bridge_config.h"
#include "hako/domain.h"
#include "hako/endpoint.h"
#include "hako/pdu.h"
#include "hako/rd.h"
#include "hako/rd_master.h"
#include "hako/rd_route.h"
#include "hako_test_util.h"

#ifndef HAKO_RD_TEST_DATA
#define HAKO_RD_TEST_DATA "data"
#endif

#define DELTA 1000
#define DMAX  3000
#define EU    0

struct node {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_master_t *master;
	hako_rd_mirror_t *mirror;
	hako_rd_node_t *exec;
	hako_bridge_config_t *bcfg;
	hako_endpoint_set_t *eps;
	hako_bridge_t *b;
	hako_rd_router_t *router;
};

struct rec {
	int n;
	uint8_t epochs[64];
	double xs[64];
};

struct fx {
	char dir[256];
	hako_rd_config_t *cfg;
	hako_rd_master_t *auth;
	hako_msg_registry_t *reg;
	const hako_msg_type_t *twist;
	struct node n[2];
	struct rec sink; /* what in1 delivered on node 1 */
	struct rec wire; /* what out2 sent from node 2 */
};

static void put(struct fx *f, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	assert_int_equal(htu_write_file(path, text), 0);
}

/* The files of both bridges; `extra` is spliced into node 2's connections (refusal cases). */
static void write_files(struct fx *f, const char *extra)
{
	char text[4096];
	put(f, "cache.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}");
	put(f, "shm_in.json",
	    "{\"protocol\": \"shm\", \"impl_type\": \"callback\", \"direction\": \"in\",\n"
	    " \"io\": {\"robots\": [{\"name\": \"forklift\", \"pdu\": [\n"
	    "   {\"name\": \"pos\", \"notify_on_recv\": true},\n"
	    "   {\"name\": \"phase\", \"notify_on_recv\": true}]}]}}");
	snprintf(text, sizeof(text),
	         "{\"name\": \"n2_shm\", \"cache\": \"cache.json\", \"comm\": \"shm_in.json\", "
	         "\"pdu_def_path\": \"%s/pdudef.json\"}",
	         HAKO_RD_TEST_DATA);
	put(f, "n2_shm.json", text);
	const char *bare[] = {"wire2", "wire1", "sink1"};
	for (int i = 0; i < 3; i++) {
		char name[64];
		snprintf(text, sizeof(text),
		         "{\"name\": \"%s\", \"cache\": \"cache.json\", \"pdu_def_path\": "
		         "\"%s/pdudef.json\"}",
		         bare[i], HAKO_RD_TEST_DATA);
		snprintf(name, sizeof(name), "%s.json", bare[i]);
		put(f, name, text);
	}
	put(f, "container.json",
	    "[{\"nodeId\": \"n1\", \"endpoints\": [\n"
	    "   {\"id\": \"wire1\", \"mode\": \"wire\", \"config_path\": \"wire1.json\"},\n"
	    "   {\"id\": \"sink1\", \"mode\": \"local\", \"config_path\": \"sink1.json\"}]},\n"
	    " {\"nodeId\": \"n2\", \"endpoints\": [\n"
	    "   {\"id\": \"n2_shm\", \"mode\": \"local\", \"config_path\": \"n2_shm.json\"},\n"
	    "   {\"id\": \"wire2\", \"mode\": \"wire\", \"config_path\": \"wire2.json\"}]}]");
	snprintf(
	    text, sizeof(text),
	    "{\"version\": \"2.0.0\",\n"
	    " \"transferPolicies\": {\"imm\": {\"type\": \"immediate\"}},\n"
	    " \"nodes\": [{\"id\": \"n1\"}, {\"id\": \"n2\"}],\n"
	    " \"endpoints_config_path\": \"container.json\",\n"
	    " \"pduKeyGroups\": {\n"
	    "   \"fk\": [{\"id\": \"p\", \"robot_name\": \"forklift\", \"pdu_name\": \"pos\"},\n"
	    "          {\"id\": \"h\", \"robot_name\": \"forklift\", \"pdu_name\": \"phase\"}],\n"
	    "   \"st\": [{\"id\": \"s\", \"robot_name\": \"forklift\", \"pdu_name\": "
	    "\"runtime_status\"}]},\n"
	    " \"connections\": [\n"
	    "   {\"id\": \"out2\", \"nodeId\": \"n2\", \"epoch_validation\": true,\n"
	    "    \"source\": {\"endpointId\": \"n2_shm\"}, \"destinations\": [{\"endpointId\": "
	    "\"wire2\"}],\n"
	    "    \"transferPdus\": [{\"pduKeyGroupId\": \"fk\", \"policyId\": \"imm\"}]},\n"
	    "   {\"id\": \"other2\", \"nodeId\": \"n2\",\n"
	    "    \"source\": {\"endpointId\": \"n2_shm\"}, \"destinations\": [{\"endpointId\": "
	    "\"wire2\"}],\n"
	    "    \"transferPdus\": [{\"pduKeyGroupId\": \"st\", \"policyId\": \"imm\"}]},\n"
	    "%s"
	    "   {\"id\": \"in1\", \"nodeId\": \"n1\", \"epoch_validation\": true,\n"
	    "    \"source\": {\"endpointId\": \"wire1\"}, \"destinations\": [{\"endpointId\": "
	    "\"sink1\"}],\n"
	    "    \"transferPdus\": [{\"pduKeyGroupId\": \"fk\", \"policyId\": \"imm\"}]}]}",
	    extra);
	put(f, "bridge.json", text);
}

static void on_pdu(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	struct rec *r = user;
	(void)key;
	uint8_t e = 0;
	double x = 0;
	if (r->n < 64 && hako_pdu_get_epoch(data, len, &e) == 0 && len >= 24 + 8) {
		memcpy(&x, hako_pdu_base((void *)data), sizeof(x));
		r->epochs[r->n] = e;
		r->xs[r->n] = x;
		r->n++;
	}
}

static int open_bridge(struct fx *f, int i, hako_error_t *err)
{
	struct node *nd = &f->n[i];
	char path[512];
	snprintf(path, sizeof(path), "%s/bridge.json", f->dir);
	int r = hako_bridge_config_load(path, i == 0 ? "n1" : "n2", NULL, &nd->bcfg, err);
	if (r == 0) {
		r = hako_endpoint_set_open_container(nd->bcfg->endpoints, &nd->eps, err);
	}
	if (r == 0) {
		hako_endpoint_set_set_domain(nd->eps, nd->dom);
		r = hako_endpoint_set_start(nd->eps, err);
	}
	if (r == 0) {
		r = hako_bridge_create(nd->bcfg, nd->eps, hako_bridge_clock_wall, NULL, &nd->b,
		                       err);
	}
	if (r == 0) {
		r = hako_rd_router_create(nd->dom, f->cfg, (uint8_t)(i + 1), nd->bcfg, nd->b,
		                          nd->eps, &nd->router, err);
	}
	return r;
}

static void close_bridge(struct node *nd)
{
	hako_rd_router_destroy(nd->router);
	nd->router = NULL;
	if (nd->eps != NULL) {
		hako_endpoint_set_stop(nd->eps);
	}
	hako_bridge_destroy(nd->b);
	nd->b = NULL;
	hako_endpoint_set_close(nd->eps);
	nd->eps = NULL;
	hako_bridge_config_free(nd->bcfg);
	nd->bcfg = NULL;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_non_null(htu_tmpdir(f->dir, sizeof(f->dir)));
	/* data/rd.json in full mode, its pdudef by absolute path. */
	char *text = htu_slurp(HAKO_RD_TEST_DATA "/rd.json");
	assert_non_null(text);
	const char *at = strstr(text, "\"pdudef.json\"");
	assert_non_null(at);
	char cfg[4096];
	snprintf(cfg, sizeof(cfg), "{\"mode\": \"full\",\n%.*s\"%s/pdudef.json\"%s",
	         (int)(at - text - 1), text + 1, HAKO_RD_TEST_DATA, at + strlen("\"pdudef.json\""));
	put(f, "rd.json", cfg);
	char path[512];
	snprintf(path, sizeof(path), "%s/rd.json", f->dir);
	hako_error_t err;
	if (hako_rd_config_load(path, &f->cfg, &err) != 0) {
		fail_msg("%s:%d:%d: %s", err.file, err.line, err.column, err.message);
	}
	assert_int_equal(hako_rd_master_create(f->cfg, DELTA, DMAX, &f->auth), 0);
	assert_int_equal(hako_msg_registry_create(&f->reg), 0);
	assert_int_equal(hako_msg_registry_get(f->reg, "geometry_msgs/Twist", &f->twist, &err), 0);
	for (int i = 0; i < 2; i++) {
		struct node *nd = &f->n[i];
		char tag[16];
		snprintf(tag, sizeof(tag), "rdr%d", i + 1);
		htu_domain_name(tag, nd->name, sizeof(nd->name));
		hako_domain_config_t dc;
		hako_domain_config_default(&dc);
		dc.max_assets = 4;
		dc.max_channels = 16;
		dc.arena_bytes = 1 << 20;
		assert_int_equal(hako_domain_create(nd->name, &dc, &nd->dom), 0);
		hako_master_config_t mc = {DELTA, DMAX, 0};
		assert_int_equal(hako_master_start(nd->dom, &mc, &nd->master), 0);
		assert_int_equal(
		    hako_rd_mirror_open(nd->dom, f->cfg, (uint8_t)(i + 1), &nd->mirror), 0);
		assert_int_equal(
		    hako_rd_node_open(nd->dom, f->cfg, (uint8_t)(i + 1), NULL, &nd->exec), 0);
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	for (int i = 0; i < 2; i++) {
		struct node *nd = &f->n[i];
		close_bridge(nd);
		hako_rd_node_close(nd->exec);
		hako_rd_mirror_close(nd->mirror);
		hako_master_stop(nd->master);
		hako_domain_close(nd->dom);
		htu_remove_domain(nd->name);
	}
	hako_msg_registry_destroy(f->reg);
	hako_rd_master_destroy(f->auth);
	hako_rd_config_free(f->cfg);
	htu_remove_tmpdirs();
	free(f);
	return 0;
}

static void start_bridges(struct fx *f)
{
	write_files(f, "");
	for (int i = 0; i < 2; i++) {
		hako_error_t err;
		if (open_bridge(f, i, &err) != 0) {
			char buf[1400];
			fail_msg("%s", hako_error_format(&err, buf, sizeof(buf)));
		}
	}
	assert_int_equal(
	    hako_endpoint_subscribe_by_name(hako_endpoint_set_get(f->n[0].eps, "sink1"), "forklift",
	                                    "pos", on_pdu, &f->sink, NULL),
	    0);
	assert_int_equal(
	    hako_endpoint_subscribe_by_name(hako_endpoint_set_get(f->n[1].eps, "wire2"), "forklift",
	                                    "pos", on_pdu, &f->wire, NULL),
	    0);
	assert_int_equal(hako_rd_router_count(f->n[0].router), 1); /* in1 */
	assert_int_equal(hako_rd_router_count(f->n[1].router), 1); /* out2; other2 is no EU's */
}

/* The authority's state into both domains, acknowledged. */
static void announce(struct fx *f)
{
	hako_rd_commit_t c;
	assert_int_equal(hako_rd_master_get(f->auth, EU, &c), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(hako_rd_mirror_apply(f->n[i].mirror, &c), 0);
		hako_rd_master_ack(f->auth, (uint8_t)(i + 1), EU, c.seq);
	}
}

static size_t make_pos(struct fx *f, uint8_t *buf, size_t cap, double x, uint8_t epoch)
{
	hako_pdu_writer_t w;
	size_t len = 0;
	assert_int_equal(hako_pdu_writer_init(&w, f->twist, buf, cap), 0);
	memcpy(hako_pdu_base(buf), &x, sizeof(x));
	assert_int_equal(hako_pdu_writer_finish(&w, &len), 0);
	assert_int_equal(hako_pdu_set_epoch(buf, len, epoch), 0);
	return len;
}

/* A PDU arriving on node 1's wire (the bridge runs in this call). */
static void arrive1(struct fx *f, double x, uint8_t epoch)
{
	uint8_t buf[128];
	size_t len = make_pos(f, buf, sizeof(buf), x, epoch);
	assert_int_equal(hako_endpoint_send_by_name(hako_endpoint_set_get(f->n[0].eps, "wire1"),
	                                            "forklift", "pos", buf, len),
	                 0);
}

static hako_bridge_conn_stats_t stats(struct node *nd, const char *id)
{
	hako_bridge_conn_stats_t st;
	for (size_t i = 0; hako_bridge_get_stats(nd->b, i, &st) == 0; i++) {
		if (strcmp(st.id, id) == 0) {
			return st;
		}
	}
	fail_msg("no connection %s", id);
	return st;
}

/* Node 2's shm comm forwards in its own thread (and reads only the latest value of a channel
 * when it wakes): wait for out2's counters to reach what is expected, then check them. */
static void wait_out2(struct fx *f, uint64_t forwarded, uint64_t paused, uint64_t stale)
{
	hako_bridge_conn_stats_t st;
	for (int i = 0; i < 5000; i++) {
		st = stats(&f->n[1], "out2");
		if (st.forwarded >= forwarded && st.dropped_paused >= paused &&
		    st.dropped_epoch >= stale) {
			break;
		}
		usleep(1000);
	}
	if (st.forwarded != forwarded || st.dropped_paused != paused || st.dropped_epoch != stale) {
		fail_msg("out2: forwarded %llu (want %llu), dropped_paused %llu (want %llu), "
		         "dropped_epoch %llu (want %llu)",
		         (unsigned long long)st.forwarded, (unsigned long long)forwarded,
		         (unsigned long long)st.dropped_paused, (unsigned long long)paused,
		         (unsigned long long)st.dropped_epoch, (unsigned long long)stale);
	}
}

static void expect_route(struct node *nd, uint8_t epoch, int active)
{
	hako_rd_route_t rt;
	assert_int_equal(hako_rd_router_get(nd->router, 0, &rt), 0);
	assert_int_equal(rt.epoch, epoch);
	assert_int_equal(rt.active, active);
	hako_bridge_conn_stats_t st = stats(nd, rt.connection);
	assert_int_equal(st.epoch, epoch);
	assert_int_equal(st.active, active);
}

/* ---- tests ---- */

/* The hand-off 1 -> 2 and back, as both bridges see it. */
static void test_follow_handoffs(void **state)
{
	struct fx *f = *state;
	start_bridges(f);
	announce(f);
	assert_int_equal(hako_rd_router_update_at(f->n[0].router, 1000), 0);
	assert_int_equal(hako_rd_router_update_at(f->n[1].router, 1000), 0);
	expect_route(&f->n[0], 0, 1); /* in1: a network source, only epoch-checked */
	expect_route(&f->n[1], 0, 0); /* out2: node 2 does not own the EU */
	hako_rd_route_t rt;
	assert_int_equal(hako_rd_router_get(f->n[1].router, 0, &rt), 0);
	assert_string_equal(rt.connection, "out2");
	assert_string_equal(rt.eu, "forklift");
	assert_true(rt.gated);
	assert_int_equal(hako_rd_router_get(f->n[1].router, 1, &rt), HAKO_ENOENT);

	/* A standby's stale copy in node 2's channel never leaves: paused, counted. */
	uint8_t buf[128];
	size_t len = make_pos(f, buf, sizeof(buf), -1.0, 0);
	hako_channel_t *ch = NULL;
	assert_int_equal(hako_channel_create(f->n[1].dom, "forklift", 1, 72, &ch), 0);
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	wait_out2(f, 0, 1, 0);
	arrive1(f, 1.0, 0); /* node 1's wire: epoch 0 passes */

	/* Hand-off 1 -> 2 committed at 4 ms: commit point 9 ms (Dmax 3 ms + 2 steps). */
	assert_int_equal(hako_rd_master_request(f->auth, EU, 2, 4000, NULL, 0), 0);
	announce(f);
	assert_int_equal(hako_rd_router_update_at(f->n[0].router, 6000), 1); /* now "or next" */
	assert_int_equal(hako_rd_router_update_at(f->n[1].router, 6000), 1);
	expect_route(&f->n[0], 0, 1);
	expect_route(&f->n[1], 0, 0);
	arrive1(f, 2.0, 0); /* the old owner before the commit point: passes */
	arrive1(f, 3.0, 1); /* the new owner ahead of node 1's clock: passes, moves in1 */
	arrive1(f, 4.0, 0); /* the old owner after that: dropped */
	/* The router finds in1 moved on by the new owner's PDU, and does not move it back. */
	assert_int_equal(hako_rd_router_update_at(f->n[0].router, 8000), 1);
	expect_route(&f->n[0], 1, 1);
	arrive1(f, 5.0, 0);
	/* Node 2's world at the commit point: out2 active at epoch 1. */
	assert_int_equal(hako_rd_router_update_at(f->n[1].router, 9000), 1);
	expect_route(&f->n[1], 1, 1);
	len = make_pos(f, buf, sizeof(buf), 6.0, 0); /* the stale copy again: epoch-dropped */
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	wait_out2(f, 0, 1, 1);
	len = make_pos(f, buf, sizeof(buf), 7.0, 1); /* the new owner's */
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	wait_out2(f, 1, 1, 1);
	assert_int_equal(f->wire.n, 1);
	assert_int_equal(f->wire.epochs[0], 1);
	assert_true(f->wire.xs[0] == 7.0);

	/* What node 1 delivered: 1, 2 (epoch 0), 3 (epoch 1); 4 and 5 dropped. */
	assert_int_equal(f->sink.n, 3);
	assert_true(f->sink.xs[0] == 1.0 && f->sink.xs[1] == 2.0 && f->sink.xs[2] == 3.0);
	assert_int_equal(f->sink.epochs[2], 1);
	assert_int_equal(stats(&f->n[0], "in1").dropped_epoch, 2);

	/* The activation settles it; then the hand back 2 -> 1 (epoch 2, commit point 25 ms):
	 * out2 pauses at node 2's commit point, in1 takes epoch 2 there. */
	assert_int_equal(hako_rd_master_activated(f->auth, 2, EU, 1), 0);
	announce(f);
	assert_int_equal(hako_rd_router_update_at(f->n[1].router, 15000), 0);
	assert_int_equal(hako_rd_master_request(f->auth, EU, 1, 20000, NULL, 0), 0);
	announce(f);
	assert_int_equal(hako_rd_router_update_at(f->n[1].router, 24000), 1); /* "or the next" */
	expect_route(&f->n[1], 1, 1);
	assert_int_equal(hako_rd_router_update_at(f->n[1].router, 25000), 1);
	expect_route(&f->n[1], 2, 0);
	len = make_pos(f, buf, sizeof(buf), 8.0, 1); /* a late write of the old owner */
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	wait_out2(f, 1, 2, 1);
	assert_int_equal(hako_rd_router_update_at(f->n[0].router, 25000), 1);
	expect_route(&f->n[0], 2, 1);
	arrive1(f, 9.0, 1);
	assert_int_equal(f->sink.n, 3);
	assert_int_equal(stats(&f->n[0], "in1").dropped_epoch, 3);

	/* A reset starts the epochs again: out2 is set back (not followed) to the status's. */
	assert_int_equal(hako_domain_reset(f->n[1].dom), 0);
	assert_int_equal(hako_domain_wait_state(f->n[1].dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC),
	                 0);
	assert_int_equal(hako_rd_router_update_at(f->n[1].router, 0), 1);
	expect_route(&f->n[1], 0, 0);
}

/* What the router refuses, with the connection named. */
static void test_refused(void **state)
{
	struct fx *f = *state;
	static const struct {
		const char *extra;
		const char *want;
	} cases[] = {
	    {"   {\"id\": \"noval\", \"nodeId\": \"n2\",\n"
	     "    \"source\": {\"endpointId\": \"n2_shm\"}, \"destinations\": [{\"endpointId\": "
	     "\"wire2\"}],\n"
	     "    \"transferPdus\": [{\"pduKeyGroupId\": \"fk\", \"policyId\": \"imm\"}]},\n",
	     "connection 'noval' carries PDUs of EU 'forklift'"},
	    {"   {\"id\": \"mixed\", \"nodeId\": \"n2\", \"epoch_validation\": true,\n"
	     "    \"source\": {\"endpointId\": \"n2_shm\"}, \"destinations\": [{\"endpointId\": "
	     "\"wire2\"}],\n"
	     "    \"transferPdus\": [{\"pduKeyGroupId\": \"fk\", \"policyId\": \"imm\"},\n"
	     "                     {\"pduKeyGroupId\": \"st\", \"policyId\": \"imm\"}]},\n",
	     "connection 'mixed' carries PDUs of EU 'forklift' and forklift/runtime_status"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		write_files(f, cases[k].extra);
		hako_error_t err;
		int r = open_bridge(f, 1, &err);
		close_bridge(&f->n[1]);
		assert_int_equal(r, HAKO_ECONFIG);
		if (strstr(err.message, cases[k].want) == NULL) {
			fail_msg("case %zu: '%s' does not say '%s'", k, err.message, cases[k].want);
		}
		assert_non_null(strstr(err.file, "bridge.json"));
	}
	/* A node id that is not in the RD file. */
	write_files(f, "");
	hako_error_t err;
	assert_int_equal(open_bridge(f, 0, &err), 0);
	hako_rd_router_t *r = NULL;
	assert_int_equal(hako_rd_router_create(f->n[0].dom, f->cfg, 9, f->n[0].bcfg, f->n[0].b,
	                                       f->n[0].eps, &r, &err),
	                 HAKO_EINVAL);
	assert_null(r);
	assert_non_null(strstr(err.message, "node 9 is not in nodes"));
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_follow_handoffs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
