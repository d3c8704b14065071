/* hako_endpoint_drain on the shm comm (pdu-endpoint/src/comm_shm.c): what the watcher has not
 * delivered yet is delivered in the caller's thread, once.
 *
 * The watcher is made late (HAKO_TEST_SHM_WATCH_DELAY_USEC = 30000: it reads the channels
 * 30 ms after it is woken), as the scheduler may leave it. Checks: after writes, a drain has
 * delivered the last one when it returns, and the watcher does not deliver it again (seen once
 * the watcher has delivered a later write of another channel); a drain after a domain reset
 * delivers no zeroed content; in poll mode a drain delivers what changed, once; a drain of an
 * endpoint that is not running delivers nothing. Nothing is asserted on wall-clock time. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/endpoint.h"
#include "hako_test_util.h"

#define POS_SIZE    64
#define STATUS_SIZE 32
#define LATE        "30000"

static const char PDUDEF[] =
    "{\"robots\": [{\"name\": \"Drone\",\n"
    " \"shm_pdu_readers\": [],\n"
    " \"shm_pdu_writers\": [\n"
    "  {\"type\": \"t/Pos\", \"org_name\": \"pos\", \"channel_id\": 1, \"pdu_size\": 64},\n"
    "  {\"type\": \"t/Status\", \"org_name\": \"status\", \"channel_id\": 2, \"pdu_size\": 32}]\n"
    "}]}\n";

static const char CACHE[] = "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n";

struct fx {
	char domain[HAKO_NAME_MAX];
	char dir[256];
	hako_domain_t *dom;
	hako_endpoint_t *ep;
	hako_channel_t *pos;
	hako_channel_t *status;
};

/* What the subscriber saw, per channel id (1: pos, 2: status). */
static atomic_int got_count[3];
static _Atomic uint64_t got_last[3];
static atomic_int got_zero;       /* deliveries of an all-zero PDU (reset content) */
static atomic_int got_value_five; /* deliveries of pos value 5 */

static void on_pdu(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)user;
	uint64_t v = 0;
	if (len >= sizeof(v)) {
		memcpy(&v, data, sizeof(v));
	}
	if (v == 0) {
		atomic_fetch_add(&got_zero, 1);
	}
	if (key->channel_id == 1 && v == 5) {
		atomic_fetch_add(&got_value_five, 1);
	}
	if (key->channel_id >= 1 && key->channel_id <= 2) {
		atomic_store(&got_last[key->channel_id], v);
		atomic_fetch_add(&got_count[key->channel_id], 1);
	}
}

static void open_endpoint(struct fx *f, const char *impl)
{
	char file[512], text[2048], path[512];
	snprintf(file, sizeof(file), "%s/ep_comm.json", f->dir);
	snprintf(text, sizeof(text),
	         "{\"protocol\": \"shm\", \"impl_type\": \"%s\", \"asset_name\": \"ep\",\n"
	         " \"io\": {\"robots\": [{\"name\": \"Drone\", \"pdu\": [\n"
	         "   {\"name\": \"pos\", \"notify_on_recv\": true},\n"
	         "   {\"name\": \"status\", \"notify_on_recv\": true}]}]}}\n",
	         impl);
	assert_int_equal(htu_write_file(file, text), 0);
	snprintf(path, sizeof(path), "%s/ep.json", f->dir);
	assert_int_equal(htu_write_file(path, "{\"name\": \"ep\", \"cache\": \"cache.json\", "
	                                      "\"comm\": \"ep_comm.json\", "
	                                      "\"pdu_def_path\": \"pdudef.json\"}\n"),
	                 0);
	hako_error_t err;
	char msg[1200];
	if (hako_endpoint_open(path, &f->ep, &err) != 0) {
		fail_msg("open %s: %s", path, hako_error_format(&err, msg, sizeof(msg)));
	}
	assert_int_equal(hako_endpoint_set_domain(f->ep, f->dom), 0);
	assert_int_equal(hako_endpoint_subscribe(f->ep, NULL, on_pdu, NULL, NULL), 0);
}

/* Start with a late watcher. */
static void start_late(struct fx *f)
{
	hako_error_t err;
	char msg[1200];
	assert_int_equal(setenv("HAKO_TEST_SHM_WATCH_DELAY_USEC", LATE, 1), 0);
	int r = hako_endpoint_start(f->ep, &err);
	assert_int_equal(unsetenv("HAKO_TEST_SHM_WATCH_DELAY_USEC"), 0);
	if (r != 0) {
		fail_msg("start: %s", hako_error_format(&err, msg, sizeof(msg)));
	}
}

static void write_value(hako_channel_t *ch, size_t size, uint64_t v)
{
	uint8_t buf[POS_SIZE];
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &v, sizeof(v));
	assert_int_equal(hako_channel_write(ch, buf, size), 0);
}

static void test_drain_callback(void **state)
{
	struct fx *f = *state;
	open_endpoint(f, "callback");
	start_late(f);
	for (uint64_t v = 1; v <= 5; v++) {
		write_value(f->pos, POS_SIZE, v);
	}
	int n = hako_endpoint_drain(f->ep);
	assert_true(n >= 0 && n <= 1); /* 0: the watcher was quicker after all */
	assert_int_equal(atomic_load(&got_last[1]), 5);
	assert_int_equal(atomic_load(&got_value_five), 1);

	/* the watcher delivers a later write of another channel: it has looked at pos by then,
	 * and did not deliver 5 again */
	write_value(f->status, STATUS_SIZE, 9);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&got_last[2]) == 9, HTU_TIMEOUT_USEC);
	assert_true(ok);
	assert_int_equal(atomic_load(&got_value_five), 1);
	assert_int_equal(atomic_load(&got_last[1]), 5);

	/* nothing new: nothing delivered */
	assert_int_equal(hako_endpoint_drain(f->ep), 0);
	assert_int_equal(atomic_load(&got_zero), 0);
}

/* A reset zeroes the channels: a drain after it delivers no zeroed content. */
static void test_drain_after_reset(void **state)
{
	struct fx *f = *state;
	open_endpoint(f, "callback");
	start_late(f);
	write_value(f->pos, POS_SIZE, 7);
	assert_int_equal(hako_domain_reset(f->dom), 0); /* no asset: done at once */
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_STOPPED);
	assert_int_equal(hako_endpoint_drain(f->ep), 0);
	assert_int_equal(atomic_load(&got_zero), 0);
	/* writes after the reset are delivered */
	write_value(f->pos, POS_SIZE, 8);
	assert_int_equal(hako_endpoint_drain(f->ep) >= 0, 1);
	assert_int_equal(atomic_load(&got_last[1]), 8);
	assert_int_equal(atomic_load(&got_zero), 0);
}

static void test_drain_poll(void **state)
{
	struct fx *f = *state;
	open_endpoint(f, "poll");
	assert_int_equal(hako_endpoint_drain(f->ep), 0); /* not running */
	start_late(f);
	write_value(f->pos, POS_SIZE, 3);
	write_value(f->status, STATUS_SIZE, 4);
	assert_int_equal(hako_endpoint_drain(f->ep), 2);
	assert_int_equal(atomic_load(&got_last[1]), 3);
	assert_int_equal(atomic_load(&got_last[2]), 4);
	assert_int_equal(hako_endpoint_drain(f->ep), 0);
	assert_int_equal(hako_endpoint_process_recv_events(f->ep), 0);
	write_value(f->pos, POS_SIZE, 5);
	assert_int_equal(hako_endpoint_process_recv_events(f->ep), 1);
	assert_int_equal(hako_endpoint_drain(f->ep), 0);
	assert_int_equal(atomic_load(&got_count[1]), 2);
	assert_int_equal(hako_endpoint_stop(f->ep), 0);
	write_value(f->pos, POS_SIZE, 6);
	assert_int_equal(hako_endpoint_drain(f->ep), 0); /* stopped */
	assert_int_equal(hako_endpoint_drain(NULL), HAKO_EINVAL);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	*state = f;
	for (int i = 0; i < 3; i++) {
		atomic_store(&got_count[i], 0);
		atomic_store(&got_last[i], 0);
	}
	atomic_store(&got_zero, 0);
	atomic_store(&got_value_five, 0);
	htu_domain_name("epdrain", f->domain, sizeof(f->domain));
	assert_non_null(htu_tmpdir(f->dir, sizeof(f->dir)));
	char file[512];
	snprintf(file, sizeof(file), "%s/pdudef.json", f->dir);
	assert_int_equal(htu_write_file(file, PDUDEF), 0);
	snprintf(file, sizeof(file), "%s/cache.json", f->dir);
	assert_int_equal(htu_write_file(file, CACHE), 0);
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 8;
	cfg.arena_bytes = 1 << 20;
	assert_int_equal(hako_domain_create(f->domain, &cfg, &f->dom), 0);
	assert_int_equal(hako_channel_create(f->dom, "Drone", 1, POS_SIZE, &f->pos), 0);
	assert_int_equal(hako_channel_create(f->dom, "Drone", 2, STATUS_SIZE, &f->status), 0);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	hako_endpoint_close(f->ep);
	hako_domain_close(f->dom);
	htu_remove_domain(f->domain);
	htu_remove_tmpdirs();
	free(f);
	return 0;
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_drain_callback, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_drain_after_reset, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_drain_poll, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
