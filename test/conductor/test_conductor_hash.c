/* What the conductor's config hash covers: the fields every node of a federation must agree
 * on (server, delta, Dmax, how times are published) and none of a node's own settings, so that
 * a join is refused exactly when the files disagree (test_federation.c, scenario hash). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hako/conductor.h"
#include "hako_test_util.h"

struct files {
	char dir[256];
	int n;
};

/* A conductor file with fields; loaded, its hash. */
static uint32_t hash_of(struct files *fs, const char *fields)
{
	char path[512], text[2048];
	snprintf(path, sizeof(path), "%s/c%d.json", fs->dir, fs->n++);
	snprintf(text, sizeof(text), "{%s}", fields);
	assert_int_equal(htu_write_file(path, text), 0);
	hako_conductor_config_t *c = NULL;
	hako_error_t err;
	if (hako_conductor_config_load(path, &c, &err) != 0) {
		char msg[600];
		fail_msg("%s", hako_error_format(&err, msg, sizeof(msg)));
	}
	uint32_t h = c->config_hash;
	hako_conductor_config_free(c);
	return h;
}

#define SRV  "\"server_machine_id\": \"srv-01\", \"clients\": [{\"client_node_id\": \"cli-01\"}]"
#define CLI  "\"server_machine_id\": \"srv-01\", \"node_id\": \"cli-01\""
#define TIME "\"delta_time_usec\": 1000, \"max_delay_time_usec\": 2000"

static void test_config_hash(void **state)
{
	(void)state;
	struct files fs = {.n = 0};
	assert_non_null(htu_tmpdir(fs.dir, sizeof(fs.dir)));
	uint32_t srv = hash_of(&fs, SRV ", " TIME);
	/* The two sides of one federation agree, whatever their own settings. */
	assert_int_equal(hash_of(&fs, CLI ", " TIME), srv);
	assert_int_equal(hash_of(&fs, CLI ", " TIME ", \"heartbeat_ms\": 50, \"peer_timeout_ms\": "
	                                  "3000, \"control_address\": \"tcp://10.0.0.1:5000\", "
	                                  "\"domain\": \"elsewhere\", \"real_sleep_msec\": 10"),
	                 srv);
	assert_int_equal(hash_of(&fs, SRV ", " TIME ", \"on_client_loss\": \"drop\""), srv);
	/* What the clocks of all nodes depend on changes it. */
	const char *other[] = {
	    CLI ", \"delta_time_usec\": 1000, \"max_delay_time_usec\": 3000",
	    CLI ", \"delta_time_usec\": 500, \"max_delay_time_usec\": 2000",
	    "\"server_machine_id\": \"srv-02\", \"node_id\": \"cli-01\", " TIME,
	    CLI ", " TIME ", \"simtime_publish_mode\": \"delta_boundary\"",
	};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		if (hash_of(&fs, other[i]) == srv) {
			fail_msg("same hash for {%s}", other[i]);
		}
	}
	/* delta_boundary: the interval is part of it. */
	assert_int_not_equal(
	    hash_of(&fs, CLI ", " TIME ", \"simtime_publish_mode\": "
	                     "\"delta_boundary\", \"simtime_publish_interval_usec\": "
	                     "1000"),
	    hash_of(&fs, CLI ", " TIME ", \"simtime_publish_mode\": "
	                     "\"delta_boundary\", \"simtime_publish_interval_usec\": "
	                     "500"));
	htu_remove_tmpdirs();
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config_hash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
