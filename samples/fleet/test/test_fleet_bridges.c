/* fleet_bridges_write: the bridge files of a fleet across nodes, loaded back by the bridge's own
 * loader (strict: no unknown key, every endpoint, group and PDU reference checked) for the
 * server node and each client node; as many client nodes as the fleet takes with the longest
 * ids; and the lists, ids and addresses it refuses. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet_bridges.h"
#include "fleet_share.h"
#include "hako/bridge_config.h"
#include "hako/error.h"
#include "hako_test_util.h"

static char g_dir[256];

static int setup(void **state)
{
	(void)state;
	return htu_tmpdir(g_dir, sizeof(g_dir)) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	htu_remove_tmpdirs();
	return 0;
}

/* The bridge file loaded for node; fails the test with the loader's message if it does not. */
static hako_bridge_config_t *load(const char *node)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/bridge/fleet_bridge.json", g_dir);
	hako_bridge_config_t *cfg = NULL;
	hako_error_t err;
	int r =
	    hako_bridge_config_load_flags(path, node, NULL, HAKO_BRIDGE_LOAD_STRICT, &cfg, &err);
	if (r != 0) {
		char why[1200];
		hako_error_format(&err, why, sizeof(why));
		fail_msg("%s", why);
	}
	return cfg;
}

static const hako_bridge_connection_cfg_t *conn(const hako_bridge_config_t *cfg, const char *id)
{
	for (size_t k = 0; k < cfg->connection_count; k++) {
		if (strcmp(cfg->connections[k].id, id) == 0) {
			return &cfg->connections[k];
		}
	}
	fail_msg("no connection %s on node %s", id, cfg->node);
	return NULL;
}

static void test_three(void **state)
{
	(void)state;
	assert_int_equal(
	    fleet_bridges_write(g_dir, "srv-01", "cli-01,cli-02,cli-03", "127.0.0.1", 47000), 0);
	hako_bridge_config_t *cfg = load("srv-01");
	assert_int_equal(cfg->connection_count, 2);
	/* The load records of the three hosts in, the orders out. */
	const hako_bridge_connection_cfg_t *c = conn(cfg, "loads");
	assert_string_equal(c->source, "srv-01_tcp");
	assert_int_equal(c->transfer_count, 3);
	c = conn(cfg, "orders");
	assert_string_equal(c->source, "srv-01_orders");
	assert_string_equal(c->destinations[0], "srv-01_tcp");
	hako_bridge_config_free(cfg);
	const char *clients[] = {"cli-01", "cli-02", "cli-03"};
	for (size_t k = 0; k < 3; k++) {
		cfg = load(clients[k]);
		assert_int_equal(cfg->connection_count, 2);
		c = conn(cfg, "load");
		assert_int_equal(c->transfer_count, 1);
		/* host k + 1's record, and no other */
		const hako_bridge_group_cfg_t *g = &cfg->groups[c->transfers[0].group];
		char robot[32];
		snprintf(robot, sizeof(robot), FLEET_LOAD_ROBOT "%zu", k + 1);
		assert_string_equal(g->pdus[0].robot, robot);
		c = conn(cfg, "orders");
		assert_int_equal(c->dest_count, 1);
		hako_bridge_config_free(cfg);
	}
}

static void test_most(void **state)
{
	(void)state;
	/* FLEET_MAX_HOSTS client nodes with ids of 63 bytes: every file still whole. */
	char list[FLEET_MAX_HOSTS * 64 + 1] = "", ids[FLEET_MAX_HOSTS][64];
	for (size_t k = 0; k < FLEET_MAX_HOSTS; k++) {
		memset(ids[k], 'n', 63);
		snprintf(ids[k] + 60, 4, "%03zu", k);
		strcat(list, k > 0 ? "," : "");
		strcat(list, ids[k]);
	}
	assert_int_equal(fleet_bridges_write(g_dir, "srv-01", list, "10.0.0.1", 1), 0);
	hako_bridge_config_t *cfg = load("srv-01");
	assert_int_equal(conn(cfg, "loads")->transfer_count, FLEET_MAX_HOSTS);
	hako_bridge_config_free(cfg);
	cfg = load(ids[FLEET_MAX_HOSTS - 1]);
	assert_int_equal(cfg->connection_count, 2);
	hako_bridge_config_free(cfg);
}

static void test_refused(void **state)
{
	(void)state;
	static const struct {
		const char *server, *clients, *addr;
		int port;
	} bad[] = {
	    {"srv-01", "cli-01", "127.0.0.1", 47000},                /* one client */
	    {"srv-01", "cli-01,,cli-03", "127.0.0.1", 47000},        /* an empty id */
	    {"srv-01", "cli-01,srv-01", "127.0.0.1", 47000},         /* the server runs no host */
	    {"srv-01", "cli-01,cli\"02", "127.0.0.1", 47000},        /* not an id */
	    {"srv 01", "cli-01,cli-02", "127.0.0.1", 47000},         /* not an id */
	    {"srv-01", "cli-01,cli-02", "127.0.0.1", 0},             /* no port */
	    {"srv-01", "cli-01,cli-02", "127.0.0.1", 65536},         /* no port */
	    {"srv-01", "cli-01,cli-02", "", 47000},                  /* no address */
	    {"srv-01", "cli-01,cli-02", "a\"b", 47000},              /* not an address */
	    {"srv-01", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", "h", 1}, /* 17 hosts */
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		errno = 0;
		assert_int_equal(fleet_bridges_write(g_dir, bad[k].server, bad[k].clients,
		                                     bad[k].addr, bad[k].port),
		                 -1);
		assert_int_equal(errno, EINVAL);
	}
	errno = 0;
	assert_int_equal(fleet_bridges_write("/nonexistent/dir", "srv-01", "a,b", "h", 1), -1);
	assert_int_equal(errno, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_three, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_most, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
