/* The node's status record (hako/conductor.h): what the node writes (hako_conductor_status_
 * format) is what the programs read back (hako_conductor_status_read), field by field; and a
 * domain without a node, a status not written yet, a channel of someone else's and too small
 * a buffer each get their own answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hako/conductor.h"
#include "hako/domain.h"
#include "hako_test_util.h"

static char g_name[HAKO_NAME_MAX];
static hako_domain_t *g_dom;

static int setup(void **state)
{
	(void)state;
	htu_domain_name("status", g_name, sizeof(g_name));
	hako_domain_remove(g_name);
	hako_domain_config_t dc;
	hako_domain_config_default(&dc);
	dc.max_channels = 4;
	assert_int_equal(hako_domain_create(g_name, &dc, &g_dom), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hako_domain_close(g_dom);
	hako_domain_remove(g_name);
	return 0;
}

static hako_conductor_status_t sample(void)
{
	hako_conductor_status_t st;
	memset(&st, 0, sizeof(st));
	snprintf(st.node_id, sizeof(st.node_id), "srv-01");
	snprintf(st.server_id, sizeof(st.server_id), "srv-01");
	st.role = HAKO_CONDUCTOR_SERVER;
	st.dmax_usec = 20000;
	st.world_time_usec = 123456789;
	st.garbage_unknown = 3;
	st.auth = HAKO_CONDUCTOR_AUTH_NONE;
	st.auth_refused = 4;
	st.peer_count = HAKO_CONDUCTOR_MAX_CLIENTS;
	for (int i = 0; i < st.peer_count; i++) {
		hako_conductor_peer_stats_t *p = &st.peers[i];
		snprintf(p->node_id, sizeof(p->node_id), "cli-%02d \"q\"", i); /* escaped in JSON */
		p->joined = i % 2;
		p->connected = i % 3 == 0;
		p->known_time = 1000 * i;
		p->last_heard_usec = i == 0 ? -1 : 17 * i;
		p->samples = 65536u * (uint64_t)i;
		p->drift_p50_usec = -i;
		p->drift_p95_usec = 2 * i;
		p->drift_max_usec = 3 * i;
		p->age_p50_usec = 4 * i;
		p->age_max_usec = 5 * i;
		p->messages_in = 6u * (uint64_t)i;
		p->messages_out = 7u * (uint64_t)i;
		p->garbage = (uint64_t)i;
		p->restarts = (uint32_t)i / 7;
	}
	return st;
}

static void test_round_trip(void **state)
{
	(void)state;
	static hako_conductor_status_t st, back;
	static char buf[HAKO_CONDUCTOR_STATUS_BYTES];
	assert_int_equal(hako_conductor_status_read(g_dom, &back), HAKO_ENOENT);
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(g_dom, HAKO_CONDUCTOR_STATUS_ROBOT, 0,
	                                     HAKO_CONDUCTOR_STATUS_BYTES, &ch),
	                 0);
	assert_int_equal(hako_conductor_status_read(g_dom, &back), HAKO_EAGAIN);
	st = sample();
	size_t len = 0;
	assert_int_equal(hako_conductor_status_format(&st, buf, sizeof(buf), &len), 0);
	assert_int_equal(strlen(buf), len);
	assert_int_equal(hako_channel_write(ch, buf, len + 1), 0);
	assert_int_equal(hako_conductor_status_read(g_dom, &back), 0);
	assert_true(back.seq != 0);
	back.seq = 0;
	assert_memory_equal(&st, &back, sizeof(st));
	/* Too small a buffer: said, not cut. */
	assert_int_equal(hako_conductor_status_format(&st, buf, 100, NULL), HAKO_ETOOBIG);
	/* Someone else's text in the channel: not read as a status. */
	const char *junk[] = {"not json", "[1,2]", "{\"peers\":[]}", "{\"node\":\"x\"}"};
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		assert_int_equal(hako_channel_write(ch, junk[i], strlen(junk[i])), 0);
		assert_int_equal(hako_conductor_status_read(g_dom, &back), HAKO_EPROTO);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
