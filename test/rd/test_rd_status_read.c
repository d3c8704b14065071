/* hako_rd_status_read: the owner status of every EU of a domain, read without a config. A
 * domain holds the status PDU an initial owner wrote (data/rd.json, node 1), one written by
 * hand, a channel never written and one holding something else: the two status PDUs are
 * found, in channel order, and nothing else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako/log.h"
#include "hako/msg.h"
#include "hako/rd.h"
#include "hako_test_util.h"
#include "rd_internal.h"

#ifndef HAKO_RD_TEST_DATA
#define HAKO_RD_TEST_DATA "data"
#endif

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_rd_config_t *cfg;
	hako_rd_node_t *node;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name("rdsr", f->name, sizeof(f->name));
	hako_domain_config_t dc;
	hako_domain_config_default(&dc);
	dc.max_assets = 4;
	dc.max_channels = 16;
	dc.arena_bytes = 1 << 20;
	assert_int_equal(hako_domain_create(f->name, &dc, &f->dom), 0);
	hako_error_t err;
	int r = hako_rd_config_load(HAKO_RD_TEST_DATA "/rd.json", &f->cfg, &err);
	if (r != 0) {
		fail_msg("%s:%d:%d: %s", err.file, err.line, err.column, err.message);
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	hako_rd_node_close(f->node);
	hako_rd_config_free(f->cfg);
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	htu_remove_tmpdirs();
	free(f);
	return 0;
}

/* A status PDU of another config (hash 7), written by hand into robot "x", channel 9. */
static void write_status_by_hand(struct fx *f)
{
	hako_msg_registry_t *reg;
	hakoi_rd_types_t types;
	hako_error_t err;
	assert_int_equal(hako_msg_registry_create(&reg), 0);
	assert_int_equal(hakoi_rd_types_get(reg, &types, &err), 0);
	uint32_t size = hakoi_rd_status_size(&types);
	uint8_t *buf = calloc(1, size);
	assert_non_null(buf);
	hakoi_rd_status_t st = {
	    .config_hash = 7, .status = HAKO_RD_OWNER_RELEASING, .epoch = 3, .curr = 1, .next = 2};
	size_t len = 0;
	assert_int_equal(hakoi_rd_status_encode(&types, &st, buf, size, &len), 0);
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "x", 9, size, &ch), 0);
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	free(buf);
	hako_msg_registry_destroy(reg);
}

static void test_empty_domain(void **state)
{
	struct fx *f = *state;
	size_t n = 99;
	assert_int_equal(hako_rd_status_read(f->dom, NULL, 0, &n), 0);
	assert_int_equal(n, 0);
}

static void test_finds_the_status_pdus_only(void **state)
{
	struct fx *f = *state;
	/* The initial owner writes Stable, epoch 0, owner 1, at open. */
	assert_int_equal(hako_rd_node_open(f->dom, f->cfg, 1, NULL, &f->node), 0);
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "other", 7, 64, &ch), 0); /* never written */
	uint8_t junk[64];
	memset(junk, 0xab, sizeof(junk));
	assert_int_equal(hako_channel_create(f->dom, "other", 8, sizeof(junk), &ch), 0);
	assert_int_equal(hako_channel_write(ch, junk, sizeof(junk)), 0);
	write_status_by_hand(f);

	hako_rd_status_entry_t got[4];
	size_t n = 0;
	assert_int_equal(hako_rd_status_read(f->dom, got, 4, &n), 0);
	assert_int_equal(n, 2);
	const hako_rd_eu_config_t *eu = &f->cfg->eus[0];
	assert_string_equal(got[0].robot, eu->status.robot);
	assert_int_equal(got[0].channel_id, eu->status.channel_id);
	assert_int_equal(got[0].config_hash, f->cfg->config_hash);
	assert_int_equal(got[0].status, HAKO_RD_OWNER_STABLE);
	assert_int_equal(got[0].epoch, 0);
	assert_int_equal(got[0].curr_owner, 1);
	assert_string_equal(got[1].robot, "x");
	assert_int_equal(got[1].channel_id, 9);
	assert_int_equal(got[1].config_hash, 7);
	assert_int_equal(got[1].status, HAKO_RD_OWNER_RELEASING);
	assert_int_equal(got[1].epoch, 3);
	assert_int_equal(got[1].curr_owner, 1);
	assert_int_equal(got[1].next_owner, 2);

	/* Room for one: the first is written, the count says there are two. */
	memset(got, 0x5a, sizeof(got));
	assert_int_equal(hako_rd_status_read(f->dom, got, 1, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(got[0].robot, eu->status.robot);
	assert_int_equal(got[1].channel_id, 0x5a5a5a5a);
}

static void test_bad_arguments(void **state)
{
	struct fx *f = *state;
	hako_rd_status_entry_t got[1];
	size_t n;
	assert_int_equal(hako_rd_status_read(NULL, got, 1, &n), HAKO_EINVAL);
	assert_int_equal(hako_rd_status_read(f->dom, got, 1, NULL), HAKO_EINVAL);
	assert_int_equal(hako_rd_status_read(f->dom, NULL, 1, &n), HAKO_EINVAL);
}

/* A status type on HAKO_MSG_PATH without the fields RD reads: the registry's error. */
static void test_unusable_status_type(void **state)
{
	struct fx *f = *state;
	char dir[256], path[512];
	htu_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/hako_msgs", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/hako_msgs/ExecutionUnitRuntimeStatus.msg", dir);
	assert_int_equal(htu_write_file(path, "uint32 config_hash\n"), 0);
	setenv("HAKO_MSG_PATH", dir, 1);
	hako_log_set_level(HAKO_LOG_OFF);
	size_t n = 99;
	int r = hako_rd_status_read(f->dom, NULL, 0, &n);
	unsetenv("HAKO_MSG_PATH");
	assert_int_equal(r, HAKO_EPROTO);
	assert_int_equal(n, 0);
}

int main(void)
{
	unsetenv("HAKO_MSG_PATH");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_empty_domain, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_finds_the_status_pdus_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unusable_status_type, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
