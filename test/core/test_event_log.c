/* The domain's event log (hako_domain_read_events, hako-cmd plog): what a run leaves in it, in
 * order; following it with `next`; a ring that keeps the latest 256 events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako_test_util.h"

#define RING 256

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_master_t *master;
	hako_domain_event_t ev[RING + 8];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name("event_log", f->name, sizeof(f->name));
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 8;
	cfg.arena_bytes = 64 * 1024;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	hako_master_stop(f->master);
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	free(f);
	return 0;
}

/* The events from `from` on; fails unless they are numbered one after the other. */
static int read_all(struct fx *f, uint32_t from, uint32_t *next)
{
	int n = -1;
	assert_int_equal(hako_domain_read_events(f->dom, from, f->ev, RING + 8, &n, next), 0);
	for (int i = 1; i < n; i++) {
		assert_int_equal(f->ev[i].number, f->ev[i - 1].number + 1);
	}
	return n;
}

static void expect(const hako_domain_event_t *ev, const char *text)
{
	if (strstr(ev->text, text) == NULL) {
		fail_msg("event %u is '%s', expected '%s'", ev->number, ev->text, text);
	}
}

static void test_a_run_in_order(void **state)
{
	struct fx *f = *state;
	hako_master_config_t mc = {1000, 1000, 0};
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), 0);
	hako_member_t *m = NULL;
	hako_channel_t *ch = NULL;
	assert_int_equal(hako_member_register(f->dom, "rover", 1000, &m), 0);
	assert_int_equal(hako_channel_create(f->dom, "Rover", 1, 72, &ch), 0);
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_member_ack(m, HAKO_EVENT_START), 0);
	assert_int_equal(hako_domain_stop(f->dom), 0);
	assert_int_equal(hako_member_ack(m, HAKO_EVENT_STOP), 0);
	hako_member_unregister(m);

	uint32_t next = 0;
	int n = read_all(f, 0, &next);
	static const char *const want[] = {
	    "domain created: 4 assets, 8 channels",
	    "master started: delta 1000 us, max delay 1000 us",
	    "asset 'rover' registered (pid",
	    "channel Rover/1 created: 72 bytes, real id 0",
	    "stopped -> runnable",
	    "runnable -> running",
	    "running -> stopping",
	    "stopping -> stopped",
	    "asset 'rover' (pid",
	};
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	assert_int_equal(next, (uint32_t)n);
	for (int i = 0; i < n; i++) {
		expect(&f->ev[i], want[i]);
		assert_int_equal(f->ev[i].number, i);
		assert_int_equal(f->ev[i].pid, getpid());
		assert_true(f->ev[i].wall_usec > 1600000000ll * 1000000);
	}
	expect(&f->ev[n - 1], "unregistered");

	/* Following: only what came after `next`. */
	assert_int_equal(read_all(f, next, &next), 0);
	assert_int_equal(hako_domain_reset(f->dom), 0);
	n = read_all(f, next, &next);
	assert_int_equal(n, 2);
	expect(&f->ev[0], "stopped -> resetting");
	expect(&f->ev[1], "resetting -> stopped");
}

static void test_ring_keeps_the_latest(void **state)
{
	struct fx *f = *state;
	/* Each round logs two events (registered, unregistered). */
	for (int i = 0; i < 200; i++) {
		hako_member_t *m = NULL;
		assert_int_equal(hako_member_register_proxy(f->dom, "p", &m), 0);
		hako_member_unregister(m);
	}
	uint32_t next = 0;
	int n = read_all(f, 0, &next);
	assert_int_equal(n, RING);
	assert_int_equal(next, 401); /* "domain created" + 400 */
	assert_int_equal(f->ev[0].number, 401 - RING);
	expect(&f->ev[RING - 1], "unregistered");
	/* a small buffer: the rest on the next call */
	int got = 0;
	assert_int_equal(hako_domain_read_events(f->dom, 0, f->ev, 10, &got, &next), 0);
	assert_int_equal(got, 10);
	assert_int_equal(next, 401 - RING + 10);
	assert_int_equal(hako_domain_read_events(f->dom, 0, NULL, 1, &got, &next), HAKO_EINVAL);
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_a_run_in_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ring_keeps_the_latest, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
