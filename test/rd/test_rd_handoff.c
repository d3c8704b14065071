/* RD hand-off sequences with a fake world: two nodes (1 and 2) of one process on a real domain
 * with a master (delta 1 ms, Dmax 3 ms), and the world times given to the API directly. After
 * every poll, at most one of the two is the owner. The traces they write pass hako_rd_check.
 *
 * Config (data/rd.json): EU 0 "forklift", candidates 1 and 2, initial owner 1, timeout 200 ms,
 * so a releasing node takes the EU back at t + 200 ms + Dmax + delta = t + 204 ms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako/log.h"
#include "hako/msg.h"
#include "hako/pdu.h"
#include "hako/rd.h"
#include "hako_test_util.h"
#include "rd_internal.h"

#ifndef HAKO_RD_TEST_DATA
#define HAKO_RD_TEST_DATA "data"
#endif

#define DELTA   1000
#define DMAX    3000
#define TIMEOUT 200000
#define GUARD   (DMAX + DELTA)
#define EU      0
#define POS     0 /* writes[0] = "pos" (geometry_msgs/Twist) */
#define CTX_MAX 4096

struct fx {
	char name[HAKO_NAME_MAX];
	char dir[256];
	char trace[300];
	hako_domain_t *dom;
	hako_master_t *master;
	hako_rd_config_t *cfg;
	hako_rd_node_t *a; /* node 1 */
	hako_rd_node_t *b; /* node 2 */
	hako_msg_registry_t *reg;
	hakoi_rd_types_t types;
	const hako_msg_type_t *twist;
	uint8_t ctx[CTX_MAX];
	uint8_t got[CTX_MAX];
};

static int setup_domain(void **state, const char *test)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name(test, f->name, sizeof(f->name));
	htu_tmpdir(f->dir, sizeof(f->dir));
	snprintf(f->trace, sizeof(f->trace), "%s/trace.jsonl", f->dir);
	hako_domain_config_t dc;
	hako_domain_config_default(&dc);
	dc.max_assets = 4;
	dc.max_channels = 16;
	dc.arena_bytes = 1 << 20;
	assert_int_equal(hako_domain_create(f->name, &dc, &f->dom), 0);
	hako_master_config_t mc = {DELTA, DMAX, 0};
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), 0);
	hako_error_t err;
	int r = hako_rd_config_load(HAKO_RD_TEST_DATA "/rd.json", &f->cfg, &err);
	if (r != 0) {
		fail_msg("%s:%d:%d: %s", err.file, err.line, err.column, err.message);
	}
	assert_int_equal(hako_msg_registry_create(&f->reg), 0);
	assert_int_equal(hakoi_rd_types_get(f->reg, &f->types, &err), 0);
	assert_int_equal(hako_msg_registry_get(f->reg, "geometry_msgs/Twist", &f->twist, &err), 0);
	for (size_t i = 0; i < CTX_MAX; i++) {
		f->ctx[i] = (uint8_t)(i * 7 + 3);
	}
	*state = f;
	return 0;
}

static void open_nodes(struct fx *f)
{
	assert_int_equal(hako_rd_node_open(f->dom, f->cfg, 1, f->trace, &f->a), 0);
	assert_int_equal(hako_rd_node_open(f->dom, f->cfg, 2, f->trace, &f->b), 0);
}

static int setup(void **state)
{
	setup_domain(state, "rdh");
	open_nodes(*state);
	return 0;
}

static int setup_bare(void **state)
{
	return setup_domain(state, "rdh");
}

static int teardown(void **state)
{
	struct fx *f = *state;
	hako_rd_node_close(f->a);
	hako_rd_node_close(f->b);
	hako_rd_config_free(f->cfg);
	hako_msg_registry_destroy(f->reg);
	hako_master_stop(f->master);
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	htu_remove_tmpdirs();
	free(f);
	return 0;
}

/* ---- helpers ---- */

static void assert_one_owner(struct fx *f)
{
	int a = hako_rd_is_owner(f->a, EU), b = hako_rd_is_owner(f->b, EU);
	if (a && b) {
		fail_msg("two owners");
	}
}

/* Poll `node` at world time t; returns the event, after checking there are not two owners. */
static hako_rd_event_t poll_at(struct fx *f, hako_rd_node_t *node, hako_time_t t,
                               hako_rd_activation_t *act)
{
	hako_rd_event_t ev = HAKO_RD_EV_NONE;
	hako_rd_activation_t dummy;
	memset(f->got, 0, sizeof(f->got));
	assert_int_equal(
	    hako_rd_poll(node, EU, t, &ev, f->got, sizeof(f->got), act != NULL ? act : &dummy), 0);
	assert_one_owner(f);
	return ev;
}

static void expect_state(struct fx *f, hako_rd_node_t *node, hako_rd_status_t status, uint8_t epoch,
                         uint8_t curr, uint8_t next, int local)
{
	hako_rd_eu_state_t st;
	assert_int_equal(hako_rd_get_state(node, EU, &st), 0);
	assert_int_equal(st.status, status);
	assert_int_equal(st.epoch, epoch);
	assert_int_equal(st.curr_owner, curr);
	assert_int_equal(st.next_owner, next);
	assert_int_equal(st.local, local);
	(void)f;
}

/* A Twist PDU with linear.x = x. */
static size_t make_pos(struct fx *f, uint8_t *buf, size_t cap, double x)
{
	hako_pdu_writer_t w;
	size_t len = 0;
	assert_int_equal(hako_pdu_writer_init(&w, f->twist, buf, cap), 0);
	memcpy(hako_pdu_base(buf), &x, sizeof(x));
	assert_int_equal(hako_pdu_writer_finish(&w, &len), 0);
	return len;
}

static int write_pos(struct fx *f, hako_rd_node_t *node, double x, hako_time_t t)
{
	uint8_t buf[128];
	size_t len = make_pos(f, buf, sizeof(buf), x);
	return hako_rd_write(node, EU, POS, buf, len, t);
}

static void expect_trace_ok(struct fx *f, uint64_t handoffs, uint64_t reclaims)
{
	const char *paths[1] = {f->trace};
	hako_rd_check_result_t res;
	hako_error_t err;
	assert_int_equal(hako_rd_check(paths, 1, &res, &err), 0);
	if (res.violations != 0) {
		fail_msg("trace: %llu violations, first: %s", (unsigned long long)res.violations,
		         res.first_violation);
	}
	assert_int_equal(res.handoffs, handoffs);
	assert_int_equal(res.reclaims, reclaims);
}

/* Node 1 releases EU 0 to node 2 at world time t with model step `step`. */
static void release_a_to_b(struct fx *f, hako_time_t t, uint64_t step)
{
	assert_int_equal(hako_rd_release(f->a, EU, 2, f->ctx, CTX_MAX, step, t), 0);
	assert_one_owner(f);
	assert_false(hako_rd_is_owner(f->a, EU));
	expect_state(f, f->a, HAKO_RD_OWNER_RELEASING, 1, 1, 2, HAKO_RD_LOCAL_RELEASING);
}

/* ---- tests ---- */

static void test_initial_state(void **state)
{
	struct fx *f = *state;
	assert_true(hako_rd_is_owner(f->a, EU));
	assert_false(hako_rd_is_owner(f->b, EU));
	expect_state(f, f->a, HAKO_RD_OWNER_STABLE, 0, 1, 1, HAKO_RD_LOCAL_OWNER);
	expect_state(f, f->b, HAKO_RD_OWNER_STABLE, 0, 1, 1, HAKO_RD_LOCAL_STANDBY);
	assert_int_equal(hako_rd_node_id(f->b), 2);
	assert_int_equal(poll_at(f, f->a, 1000, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->b, 1000, NULL), HAKO_RD_EV_NONE);
	/* an EU id the config does not have */
	hako_rd_event_t ev;
	assert_int_equal(hako_rd_poll(f->a, 7, 1000, &ev, NULL, 0, NULL), HAKO_EINVAL);
	assert_false(hako_rd_is_owner(f->a, 7));
}

/* A -> B -> A: epochs 0 -> 1 -> 2, the context bytes arrive intact both ways. */
static void test_handoff_a_b_a(void **state)
{
	struct fx *f = *state;
	hako_rd_activation_t act;
	assert_int_equal(poll_at(f, f->a, 10000, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(write_pos(f, f->a, 0.5, 10000), 0);
	hako_rd_trace_step(f->a, EU, 10, 10000);
	release_a_to_b(f, 10000, 10);
	expect_state(f, f->b, HAKO_RD_OWNER_RELEASING, 1, 1, 2, HAKO_RD_LOCAL_STANDBY);

	/* B's clock has not passed the release yet. */
	assert_int_equal(poll_at(f, f->b, 9000, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->b, 10000, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->a, 11000, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->b, 11000, &act), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(act.epoch, 1);
	assert_int_equal(act.from, 1);
	assert_int_equal(act.release_time_usec, 10000);
	assert_int_equal(act.model_step, 10);
	assert_int_equal(act.ctx_len, CTX_MAX);
	assert_memory_equal(f->got, f->ctx, CTX_MAX);
	assert_false(hako_rd_is_owner(f->b, EU)); /* not before activate */
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 11000), 0);
	assert_one_owner(f);
	assert_true(hako_rd_is_owner(f->b, EU));
	expect_state(f, f->b, HAKO_RD_OWNER_STABLE, 1, 2, 2, HAKO_RD_LOCAL_OWNER);
	hako_rd_trace_step(f->b, EU, 11, 11000);
	assert_int_equal(write_pos(f, f->b, 0.6, 11000), 0);

	assert_int_equal(poll_at(f, f->a, 12000, NULL), HAKO_RD_EV_RELEASED);
	expect_state(f, f->a, HAKO_RD_OWNER_STABLE, 1, 2, 2, HAKO_RD_LOCAL_STANDBY);
	assert_int_equal(poll_at(f, f->a, 13000, NULL), HAKO_RD_EV_NONE);

	/* and back, with other bytes */
	for (size_t i = 0; i < CTX_MAX; i++) {
		f->ctx[i] = (uint8_t)(255 - i);
	}
	assert_int_equal(poll_at(f, f->b, 20000, NULL), HAKO_RD_EV_NONE);
	hako_rd_trace_step(f->b, EU, 12, 12000);
	assert_int_equal(hako_rd_release(f->b, EU, 1, f->ctx, 100, 12, 20000), 0);
	assert_one_owner(f);
	expect_state(f, f->a, HAKO_RD_OWNER_RELEASING, 2, 2, 1, HAKO_RD_LOCAL_STANDBY);
	assert_int_equal(poll_at(f, f->a, 21000, &act), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(act.epoch, 2);
	assert_int_equal(act.from, 2);
	assert_int_equal(act.model_step, 12);
	assert_int_equal(act.ctx_len, 100);
	assert_memory_equal(f->got, f->ctx, 100);
	assert_int_equal(hako_rd_activate(f->a, EU, 1, 21000), 0);
	assert_one_owner(f);
	assert_int_equal(poll_at(f, f->b, 21000, NULL), HAKO_RD_EV_RELEASED);
	expect_state(f, f->b, HAKO_RD_OWNER_STABLE, 2, 1, 1, HAKO_RD_LOCAL_STANDBY);
	assert_true(hako_rd_is_owner(f->a, EU));
	hako_rd_trace_step(f->a, EU, 13, 13000);
	assert_int_equal(write_pos(f, f->a, 0.7, 21000), 0);
	expect_trace_ok(f, 2, 0);
}

/* The context in the channel is of another epoch than the status: never used; A takes the EU
 * back at its timeout. */
static void test_context_epoch_mismatch(void **state)
{
	struct fx *f = *state;
	release_a_to_b(f, 10000, 10);
	/* A context of epoch 7 written by hand over A's (epoch 1). */
	const hako_rd_eu_config_t *eu = &f->cfg->eus[0];
	hako_channel_t *ch;
	assert_int_equal(
	    hako_channel_lookup(f->dom, eu->context.robot, eu->context.channel_id, &ch), 0);
	static uint8_t buf[8192];
	hakoi_rd_context_t cx = {f->cfg->config_hash, 7, 1, 10000, 10, f->ctx, 64};
	size_t len = 0;
	assert_int_equal(hakoi_rd_context_encode(&f->types, &cx, buf, sizeof(buf), &len), 0);
	assert_int_equal(hako_channel_write(ch, buf, len), 0);

	for (hako_time_t t = 11000; t < 10000 + TIMEOUT + GUARD; t += DELTA) {
		assert_int_equal(poll_at(f, f->b, t, NULL), HAKO_RD_EV_NONE);
		assert_int_equal(poll_at(f, f->a, t, NULL), HAKO_RD_EV_NONE);
		assert_false(hako_rd_is_owner(f->b, EU));
	}
	assert_int_equal(poll_at(f, f->a, 10000 + TIMEOUT + GUARD, NULL), HAKO_RD_EV_RECLAIMED);
	expect_state(f, f->b, HAKO_RD_OWNER_STABLE, 2, 1, 1, HAKO_RD_LOCAL_STANDBY);
	assert_true(hako_rd_is_owner(f->a, EU));
	expect_trace_ok(f, 0, 1);
}

/* A context that is not an RD context at all (bad magic) is not used either. */
static void test_context_malformed(void **state)
{
	struct fx *f = *state;
	release_a_to_b(f, 10000, 10);
	const hako_rd_eu_config_t *eu = &f->cfg->eus[0];
	hako_channel_t *ch;
	assert_int_equal(
	    hako_channel_lookup(f->dom, eu->context.robot, eu->context.channel_id, &ch), 0);
	uint8_t buf[8192];
	size_t len;
	hakoi_rd_context_t cx = {f->cfg->config_hash, 1, 1, 10000, 10, f->ctx, 64};
	assert_int_equal(hakoi_rd_context_encode(&f->types, &cx, buf, sizeof(buf), &len), 0);
	buf[HAKO_PDU_META_SIZE + 16] ^= 0xff; /* the first byte of the RD header's magic */
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	assert_int_equal(poll_at(f, f->b, 11000, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->b, 12000, NULL), HAKO_RD_EV_NONE);
	/* a good one of the right epoch arrives later, still in time: used */
	assert_int_equal(hakoi_rd_context_encode(&f->types, &cx, buf, sizeof(buf), &len), 0);
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	assert_int_equal(poll_at(f, f->b, 13000, NULL), HAKO_RD_EV_ACTIVATE);
	assert_memory_equal(f->got, f->ctx, 64);
}

/* B cannot restore: it writes nothing, never owns, and A takes the EU back exactly at
 * t + timeout + Dmax + delta with epoch e + 2 (e = 0 before the release, 1 during it). */
static void test_restore_failure(void **state)
{
	struct fx *f = *state;
	release_a_to_b(f, 10000, 10);
	assert_int_equal(poll_at(f, f->b, 11000, NULL), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->b, EU, 0, 11000), 0);
	assert_false(hako_rd_is_owner(f->b, EU));
	expect_state(f, f->b, HAKO_RD_OWNER_RELEASING, 1, 1, 2, HAKO_RD_LOCAL_STANDBY);
	/* a second activate without a new ACTIVATE event is refused */
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 12000), HAKO_ESTATE);
	const hako_time_t reclaim = 10000 + TIMEOUT + GUARD;
	for (hako_time_t t = 12000; t < reclaim; t += DELTA) {
		assert_int_equal(poll_at(f, f->b, t, NULL), HAKO_RD_EV_NONE); /* no retry */
		assert_int_equal(poll_at(f, f->a, t, NULL), HAKO_RD_EV_NONE);
	}
	assert_int_equal(poll_at(f, f->a, reclaim - 1, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->a, reclaim, NULL), HAKO_RD_EV_RECLAIMED);
	assert_true(hako_rd_is_owner(f->a, EU));
	expect_state(f, f->a, HAKO_RD_OWNER_STABLE, 2, 1, 1, HAKO_RD_LOCAL_OWNER);
	assert_int_equal(poll_at(f, f->b, reclaim, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->a, reclaim + DELTA, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(write_pos(f, f->a, 1.0, reclaim + DELTA), 0);
	assert_int_equal(write_pos(f, f->b, 1.0, reclaim + DELTA), HAKO_ENOTOWNER);
	/* the next hand-off works (epoch 3) */
	assert_int_equal(hako_rd_release(f->a, EU, 2, f->ctx, 8, 20, reclaim + DELTA), 0);
	hako_rd_activation_t act;
	assert_int_equal(poll_at(f, f->b, reclaim + 2 * DELTA, &act), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(act.epoch, 3);
	assert_int_equal(hako_rd_activate(f->b, EU, 1, reclaim + 2 * DELTA), 0);
	assert_int_equal(poll_at(f, f->a, reclaim + 2 * DELTA, NULL), HAKO_RD_EV_RELEASED);
	expect_trace_ok(f, 1, 1);
}

/* The reclaim waits Dmax + the largest step of the domain's assets, here a 5 ms one. */
static void test_reclaim_uses_largest_step(void **state)
{
	struct fx *f = *state;
	hako_member_t *slow, *fast;
	assert_int_equal(hako_member_register(f->dom, "slow", DMAX, &slow), 0);
	assert_int_equal(hako_member_register(f->dom, "fast", 500, &fast), 0);
	release_a_to_b(f, 10000, 10);
	const hako_time_t reclaim = 10000 + TIMEOUT + DMAX + DMAX;
	assert_int_equal(poll_at(f, f->a, 10000 + TIMEOUT + GUARD, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->a, reclaim - 1, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->a, reclaim, NULL), HAKO_RD_EV_RECLAIMED);
	hako_member_unregister(slow);
	hako_member_unregister(fast);
}

/* A standby whose clock is past t + timeout when it first looks does not activate. */
static void test_late_standby(void **state)
{
	struct fx *f = *state;
	release_a_to_b(f, 10000, 10);
	assert_int_equal(poll_at(f, f->b, 10000 + TIMEOUT + 1, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->b, 10000 + TIMEOUT + DELTA, NULL), HAKO_RD_EV_NONE);
	assert_false(hako_rd_is_owner(f->b, EU));
	assert_int_equal(poll_at(f, f->a, 10000 + TIMEOUT + GUARD - 1, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->a, 10000 + TIMEOUT + GUARD, NULL), HAKO_RD_EV_RECLAIMED);
	expect_trace_ok(f, 0, 1);
}

/* At exactly t + timeout the standby may still activate, and the old owner sees it at its
 * reclaim time instead of taking the EU back. */
static void test_activation_at_deadline(void **state)
{
	struct fx *f = *state;
	release_a_to_b(f, 10000, 10);
	assert_int_equal(poll_at(f, f->b, 10000 + TIMEOUT, NULL), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 10000 + TIMEOUT), 0);
	assert_int_equal(poll_at(f, f->a, 10000 + TIMEOUT + GUARD, NULL), HAKO_RD_EV_RELEASED);
	assert_true(hako_rd_is_owner(f->b, EU));
	expect_trace_ok(f, 1, 0);
}

/* ACTIVATE seen in time, but activate() called after the deadline: refused. */
static void test_activate_too_late(void **state)
{
	struct fx *f = *state;
	release_a_to_b(f, 10000, 10);
	assert_int_equal(poll_at(f, f->b, 10000 + TIMEOUT - DELTA, NULL), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 10000 + TIMEOUT + DELTA), HAKO_ETIMEDOUT);
	assert_false(hako_rd_is_owner(f->b, EU));
	assert_int_equal(poll_at(f, f->b, 10000 + TIMEOUT + 2 * DELTA, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->a, 10000 + TIMEOUT + GUARD, NULL), HAKO_RD_EV_RECLAIMED);
	expect_trace_ok(f, 0, 1);
}

static void test_write_not_owner(void **state)
{
	struct fx *f = *state;
	assert_int_equal(write_pos(f, f->b, 1.0, 1000), HAKO_ENOTOWNER);
	assert_int_equal(write_pos(f, f->a, 1.0, 1000), 0);
	release_a_to_b(f, 2000, 2);
	assert_int_equal(write_pos(f, f->a, 1.0, 2000), HAKO_ENOTOWNER); /* releasing */
	assert_int_equal(write_pos(f, f->b, 1.0, 2000), HAKO_ENOTOWNER); /* not activated */
	assert_int_equal(hako_rd_release(f->b, EU, 1, NULL, 0, 0, 2000), HAKO_ENOTOWNER);
	assert_int_equal(hako_rd_release(f->a, EU, 2, NULL, 0, 0, 2000), HAKO_ENOTOWNER);
	/* an observer (node 0) never owns */
	hako_rd_node_t *obs;
	assert_int_equal(hako_rd_node_open(f->dom, f->cfg, 0, NULL, &obs), 0);
	hako_rd_event_t ev;
	assert_int_equal(hako_rd_poll(obs, EU, 3000, &ev, NULL, 0, NULL), 0);
	assert_int_equal(ev, HAKO_RD_EV_NONE);
	assert_int_equal(write_pos(f, obs, 1.0, 3000), HAKO_ENOTOWNER);
	hako_rd_node_close(obs);
	/* a write of something that is not a valid Twist PDU is refused */
	uint8_t junk[72] = {1, 2, 3};
	assert_int_equal(hako_rd_write(f->a, EU, POS, junk, sizeof(junk), 3000), HAKO_ENOTOWNER);
	assert_int_equal(poll_at(f, f->b, 3000, NULL), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 3000), 0);
	assert_int_equal(hako_rd_write(f->b, EU, POS, junk, sizeof(junk), 3000), HAKO_EPROTO);
	assert_int_equal(hako_rd_write(f->b, EU, 9, junk, sizeof(junk), 3000), HAKO_EINVAL);
}

/* A PDU of `type` into buf (cap bytes) with its first 8 bytes of data = v; its length. */
static size_t make_pdu(struct fx *f, const char *type, void *buf, size_t cap, double v)
{
	const hako_msg_type_t *t;
	hako_error_t err;
	hako_pdu_writer_t w;
	size_t len = 0;
	assert_int_equal(hako_msg_registry_get(f->reg, type, &t, &err), 0);
	assert_int_equal(hako_pdu_writer_init(&w, t, buf, cap), 0);
	if (strcmp(type, "std_msgs/Int32") == 0) {
		int32_t i = (int32_t)v;
		memcpy(hako_pdu_base(buf), &i, sizeof(i));
	} else {
		memcpy(hako_pdu_base(buf), &v, sizeof(v));
	}
	assert_int_equal(hako_pdu_writer_finish(&w, &len), 0);
	return len;
}

/* The EU's three PDUs (pos, height, phase: data/rd.json) written in place, as a host of many
 * EUs does: only the owner loans, the commit checks and stamps each one as hako_rd_write does
 * and publishes them all, a failed commit publishes none. */
static void test_write_loan(void **state)
{
	struct fx *f = *state;
	static const char *const types[3] = {"geometry_msgs/Twist", "std_msgs/Float64",
	                                     "std_msgs/Int32"};
	void *bufs[3];
	size_t lens[3];
	assert_int_equal(hako_rd_write_loan(f->b, EU, bufs, 3), HAKO_ENOTOWNER);
	assert_int_equal(hako_rd_write_loan(f->a, EU, bufs, 2), HAKO_EINVAL); /* too few */
	assert_int_equal(hako_rd_write_commit(f->a, EU, lens, 1000), HAKO_ESTATE);
	assert_int_equal(hako_rd_write_cancel(f->a, EU), HAKO_ESTATE);
	assert_int_equal(hako_rd_write_loan(f->a, EU, bufs, 3), 0);
	void *again[3];
	assert_int_equal(hako_rd_write_loan(f->a, EU, again, 3), HAKO_ESTATE);
	for (int k = 0; k < 3; k++) {
		lens[k] = make_pdu(f, types[k], bufs[k], 32 + 40 * (k == 0), 1.5 + k);
	}
	assert_int_equal(hako_rd_write_commit(f->a, EU, lens, 1000), 0);
	assert_int_equal(hako_rd_write_commit(f->a, EU, lens, 1000), HAKO_ESTATE);
	/* read back through node 2: the owner's epoch, the data written */
	for (size_t k = 0; k < 3; k++) {
		uint8_t out[128];
		size_t len = 0;
		uint8_t epoch = 0;
		assert_int_equal(hako_rd_read_at(f->b, EU, k, out, sizeof(out), &len, 1000), 0);
		assert_int_equal(len, lens[k]);
		assert_int_equal(hako_pdu_get_epoch(out, len, &epoch), 0);
		assert_int_equal(epoch, 0); /* the initial ownership's */
		double v = 0;
		int32_t i = 0;
		if (k == 2) {
			memcpy(&i, hako_pdu_base(out), sizeof(i));
			assert_int_equal(i, 3);
		} else {
			memcpy(&v, hako_pdu_base(out), sizeof(v));
			assert_true(v == 1.5 + (double)k);
		}
	}
	hako_channel_t *pos;
	assert_int_equal(hako_channel_lookup(f->dom, "forklift", 1, &pos), 0);
	uint64_t seq = hako_channel_seq(pos);
	/* an invalid PDU: nothing published, the loan ended */
	assert_int_equal(hako_rd_write_loan(f->a, EU, bufs, 3), 0);
	for (int k = 0; k < 3; k++) {
		lens[k] = make_pdu(f, types[k], bufs[k], 32 + 40 * (k == 0), 9.0);
	}
	memset(bufs[2], 0x5a, 8); /* the phase PDU's meta header broken */
	assert_int_equal(hako_rd_write_commit(f->a, EU, lens, 2000), HAKO_EPROTO);
	assert_int_equal(hako_channel_seq(pos), seq);
	assert_int_equal(hako_rd_write_cancel(f->a, EU), HAKO_ESTATE);
	/* too long: the same */
	assert_int_equal(hako_rd_write_loan(f->a, EU, bufs, 3), 0);
	lens[0] = 73;
	assert_int_equal(hako_rd_write_commit(f->a, EU, lens, 2000), HAKO_ETOOBIG);
	assert_int_equal(hako_channel_seq(pos), seq);
	/* a cancelled loan: the readers keep the last write */
	assert_int_equal(hako_rd_write_loan(f->a, EU, bufs, 3), 0);
	memset(bufs[0], 0, 72);
	assert_int_equal(hako_rd_write_cancel(f->a, EU), 0);
	assert_int_equal(hako_channel_seq(pos), seq);
	uint8_t out[128];
	size_t len = 0;
	assert_int_equal(hako_rd_read_at(f->b, EU, 0, out, sizeof(out), &len, 2000), 0);
	double v = 0;
	memcpy(&v, hako_pdu_base(out), sizeof(v));
	assert_true(v == 1.5);
	/* released: no longer the owner's to loan */
	release_a_to_b(f, 3000, 3);
	assert_int_equal(hako_rd_write_loan(f->a, EU, bufs, 3), HAKO_ENOTOWNER);
	assert_int_equal(poll_at(f, f->b, 4000, NULL), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 4000), 0);
	assert_int_equal(hako_rd_write_loan(f->b, EU, bufs, 3), 0);
	for (int k = 0; k < 3; k++) {
		lens[k] = make_pdu(f, types[k], bufs[k], 32 + 40 * (k == 0), 7.0);
	}
	assert_int_equal(hako_rd_write_commit(f->b, EU, lens, 4000), 0);
	uint8_t epoch = 0;
	assert_int_equal(hako_rd_read_at(f->a, EU, 1, out, sizeof(out), &len, 4000), 0);
	assert_int_equal(hako_pdu_get_epoch(out, len, &epoch), 0);
	assert_int_equal(epoch, 1); /* node 2's, after the hand-off */
	expect_trace_ok(f, 1, 0);
}

/* Readers drop PDUs of another epoch than the status's. */
static void test_stale_epoch_dropped(void **state)
{
	struct fx *f = *state;
	hako_rd_node_t *obs;
	uint8_t buf[128];
	size_t len = 0;
	uint8_t epoch = 99;
	assert_int_equal(hako_rd_node_open(f->dom, f->cfg, 0, NULL, &obs), 0);
	assert_int_equal(hako_rd_read(obs, EU, POS, buf, sizeof(buf), &len), HAKO_EAGAIN);
	assert_int_equal(hako_rd_stale_drops(obs), 0); /* never written is not stale */
	assert_int_equal(write_pos(f, f->a, 0.25, 1000), 0);
	assert_int_equal(hako_rd_read(obs, EU, POS, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 72);
	assert_int_equal(hako_pdu_get_epoch(buf, len, &epoch), 0);
	assert_int_equal(epoch, 0);

	release_a_to_b(f, 2000, 2); /* status epoch 1: A's epoch-0 PDU is stale now */
	assert_int_equal(hako_rd_read(obs, EU, POS, buf, sizeof(buf), &len), HAKO_EAGAIN);
	assert_int_equal(hako_rd_stale_drops(obs), 1);
	assert_int_equal(poll_at(f, f->b, 3000, NULL), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 3000), 0);
	assert_int_equal(hako_rd_read(obs, EU, POS, buf, sizeof(buf), &len), HAKO_EAGAIN);
	assert_int_equal(hako_rd_stale_drops(obs), 2);
	assert_int_equal(write_pos(f, f->b, 0.5, 3000), 0);
	assert_int_equal(hako_rd_read(obs, EU, POS, buf, sizeof(buf), &len), 0);
	assert_int_equal(hako_pdu_get_epoch(buf, len, &epoch), 0);
	assert_int_equal(epoch, 1);
	double x;
	memcpy(&x, buf + HAKO_PDU_META_SIZE, sizeof(x));
	assert_true(x == 0.5);

	/* a PDU of a stale epoch written behind RD's back */
	const hako_rd_eu_config_t *eu = &f->cfg->eus[0];
	hako_channel_t *ch;
	assert_int_equal(
	    hako_channel_lookup(f->dom, eu->writes[POS].robot, eu->writes[POS].channel_id, &ch), 0);
	len = make_pos(f, buf, sizeof(buf), 9.0);
	assert_int_equal(hako_pdu_set_epoch(buf, len, 0), 0);
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	assert_int_equal(hako_rd_read(f->a, EU, POS, buf, sizeof(buf), &len), HAKO_EAGAIN);
	assert_int_equal(hako_rd_stale_drops(f->a), 1);
	assert_int_equal(hako_rd_stale_drops(obs), 2);
	hako_rd_node_close(obs);
}

static void test_context_too_big(void **state)
{
	struct fx *f = *state;
	static uint8_t big[CTX_MAX + 1];
	assert_int_equal(hako_rd_release(f->a, EU, 2, big, sizeof(big), 1, 1000), HAKO_ETOOBIG);
	assert_true(hako_rd_is_owner(f->a, EU));
	expect_state(f, f->b, HAKO_RD_OWNER_STABLE, 0, 1, 1, HAKO_RD_LOCAL_STANDBY);
	assert_int_equal(poll_at(f, f->b, 2000, NULL), HAKO_RD_EV_NONE);
	/* exactly the limit is fine */
	assert_int_equal(hako_rd_release(f->a, EU, 2, big, CTX_MAX, 1, 1000), 0);
	/* a standby buffer smaller than the context */
	hako_rd_event_t ev;
	uint8_t small[16];
	assert_int_equal(hako_rd_poll(f->b, EU, 2000, &ev, small, sizeof(small), NULL),
	                 HAKO_ETOOBIG);
	assert_int_equal(ev, HAKO_RD_EV_NONE);
	assert_false(hako_rd_is_owner(f->b, EU));
}

static void test_release_bad_next(void **state)
{
	struct fx *f = *state;
	assert_int_equal(hako_rd_release(f->a, EU, 1, f->ctx, 8, 1, 1000), HAKO_EINVAL);
	assert_int_equal(hako_rd_release(f->a, EU, 3, f->ctx, 8, 1, 1000), HAKO_EINVAL);
	assert_int_equal(hako_rd_release(f->a, EU, 0, f->ctx, 8, 1, 1000), HAKO_EINVAL);
	assert_true(hako_rd_is_owner(f->a, EU));
	hako_rd_node_t *n3;
	assert_int_equal(hako_rd_node_open(f->dom, f->cfg, 3, NULL, &n3), HAKO_EINVAL);
}

/* B activates and hands the EU straight back before A looked: A's next poll offers it again
 * (ACTIVATE, the RELEASED is implied). */
static void test_quick_return(void **state)
{
	struct fx *f = *state;
	release_a_to_b(f, 10000, 10);
	assert_int_equal(poll_at(f, f->b, 11000, NULL), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 11000), 0);
	assert_int_equal(hako_rd_release(f->b, EU, 1, f->ctx, 16, 11, 11000), 0);
	/* A's clock is not past B's release yet: only RELEASED */
	assert_int_equal(poll_at(f, f->a, 11000, NULL), HAKO_RD_EV_RELEASED);
	expect_state(f, f->a, HAKO_RD_OWNER_RELEASING, 2, 2, 1, HAKO_RD_LOCAL_STANDBY);
	hako_rd_activation_t act;
	assert_int_equal(poll_at(f, f->a, 12000, &act), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(act.epoch, 2);
	assert_int_equal(hako_rd_activate(f->a, EU, 1, 12000), 0);
	assert_int_equal(poll_at(f, f->b, 13000, NULL), HAKO_RD_EV_RELEASED);

	/* and again, A's first look after B's quick return already may activate */
	assert_int_equal(hako_rd_release(f->a, EU, 2, f->ctx, 16, 12, 13000), 0);
	assert_int_equal(poll_at(f, f->b, 14000, NULL), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 14000), 0);
	assert_int_equal(hako_rd_release(f->b, EU, 1, f->ctx, 16, 14, 14000), 0);
	assert_int_equal(poll_at(f, f->a, 15000, &act), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(act.epoch, 4);
	assert_int_equal(hako_rd_activate(f->a, EU, 1, 15000), 0);
	assert_int_equal(poll_at(f, f->b, 15000, NULL), HAKO_RD_EV_RELEASED);
	/* B's reclaim time passes: it does not take the EU back */
	assert_int_equal(poll_at(f, f->b, 11000 + TIMEOUT + GUARD, NULL), HAKO_RD_EV_NONE);
	assert_true(hako_rd_is_owner(f->a, EU));
	expect_trace_ok(f, 4, 0);
}

/* A status of another config, or one that is not a status at all, is ignored. */
static void test_foreign_status_ignored(void **state)
{
	struct fx *f = *state;
	const hako_rd_eu_config_t *eu = &f->cfg->eus[0];
	hako_channel_t *ch;
	assert_int_equal(hako_channel_lookup(f->dom, eu->status.robot, eu->status.channel_id, &ch),
	                 0);
	uint8_t buf[256];
	size_t len;
	hakoi_rd_status_t st = {f->cfg->config_hash + 1, HAKO_RD_OWNER_STABLE, 9, 2, 2};
	assert_int_equal(hakoi_rd_status_encode(&f->types, &st, buf, sizeof(buf), &len), 0);
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	expect_state(f, f->b, HAKO_RD_OWNER_STABLE, 0, 1, 1, HAKO_RD_LOCAL_STANDBY);
	assert_int_equal(poll_at(f, f->a, 1000, NULL), HAKO_RD_EV_NONE);
	assert_true(hako_rd_is_owner(f->a, EU));
	len = make_pos(f, buf, sizeof(buf), 1.0);
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	assert_int_equal(poll_at(f, f->a, 2000, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->b, 2000, NULL), HAKO_RD_EV_NONE);
	expect_state(f, f->a, HAKO_RD_OWNER_STABLE, 0, 1, 1, HAKO_RD_LOCAL_OWNER);
	/* a good status again is taken: here an outside writer moves the EU to node 2, and
	 * node 1 stops owning it (fencing) */
	st.config_hash = f->cfg->config_hash;
	assert_int_equal(hakoi_rd_status_encode(&f->types, &st, buf, sizeof(buf), &len), 0);
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	assert_int_equal(poll_at(f, f->a, 3000, NULL), HAKO_RD_EV_RELEASED);
	assert_false(hako_rd_is_owner(f->a, EU));
}

/* A status left by an earlier run (world time 0, not reset): the initial owner starts one
 * epoch later. */
static void test_status_of_earlier_run(void **state)
{
	struct fx *f = *state;
	const hako_rd_eu_config_t *eu = &f->cfg->eus[0];
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, eu->status.robot, eu->status.channel_id,
	                                     eu->status.pdu_size, &ch),
	                 0);
	uint8_t buf[256];
	size_t len;
	hakoi_rd_status_t st = {f->cfg->config_hash, HAKO_RD_OWNER_RELEASING, 5, 1, 2};
	assert_int_equal(hakoi_rd_status_encode(&f->types, &st, buf, sizeof(buf), &len), 0);
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	/* the standby opens first: it does not take the stale release to itself */
	assert_int_equal(hako_rd_node_open(f->dom, f->cfg, 2, f->trace, &f->b), 0);
	assert_false(hako_rd_is_owner(f->b, EU));
	assert_int_equal(hako_rd_node_open(f->dom, f->cfg, 1, f->trace, &f->a), 0);
	assert_true(hako_rd_is_owner(f->a, EU));
	expect_state(f, f->b, HAKO_RD_OWNER_STABLE, 6, 1, 1, HAKO_RD_LOCAL_STANDBY);
	assert_int_equal(poll_at(f, f->b, 1000, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(hako_rd_release(f->a, EU, 2, f->ctx, 8, 1, 1000), 0);
	hako_rd_activation_t act;
	assert_int_equal(poll_at(f, f->b, 2000, &act), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(act.epoch, 7);
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 2000), 0);
	expect_trace_ok(f, 1, 0);
}

/* A status of another config found at open: the last known state is the initial one. */
static void test_foreign_status_at_open(void **state)
{
	struct fx *f = *state;
	const hako_rd_eu_config_t *eu = &f->cfg->eus[0];
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, eu->status.robot, eu->status.channel_id,
	                                     eu->status.pdu_size, &ch),
	                 0);
	uint8_t buf[256];
	size_t len;
	hakoi_rd_status_t st = {f->cfg->config_hash ^ 1, HAKO_RD_OWNER_STABLE, 9, 2, 2};
	assert_int_equal(hakoi_rd_status_encode(&f->types, &st, buf, sizeof(buf), &len), 0);
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	assert_int_equal(hako_rd_node_open(f->dom, f->cfg, 2, f->trace, &f->b), 0);
	expect_state(f, f->b, HAKO_RD_OWNER_STABLE, 0, 1, 1, HAKO_RD_LOCAL_STANDBY);
	assert_int_equal(hako_rd_node_open(f->dom, f->cfg, 1, f->trace, &f->a), 0);
	assert_true(hako_rd_is_owner(f->a, EU));
	expect_state(f, f->b, HAKO_RD_OWNER_STABLE, 1, 1, 1, HAKO_RD_LOCAL_STANDBY);
	assert_int_equal(write_pos(f, f->a, 0.0, 1000), 0);
	expect_trace_ok(f, 0, 0);
}

/* A domain reset zeroes the channels: both nodes start over from the config. */
static void test_domain_reset(void **state)
{
	struct fx *f = *state;
	release_a_to_b(f, 10000, 10);
	assert_int_equal(poll_at(f, f->b, 11000, NULL), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 11000), 0);
	assert_int_equal(poll_at(f, f->a, 11000, NULL), HAKO_RD_EV_RELEASED);
	assert_true(hako_rd_is_owner(f->b, EU));
	assert_int_equal(hako_domain_reset(f->dom), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	assert_false(hako_rd_is_owner(f->b, EU)); /* the standby notices first */
	expect_state(f, f->b, HAKO_RD_OWNER_STABLE, 0, 1, 1, HAKO_RD_LOCAL_STANDBY);
	assert_true(hako_rd_is_owner(f->a, EU));
	expect_state(f, f->a, HAKO_RD_OWNER_STABLE, 0, 1, 1, HAKO_RD_LOCAL_OWNER);
	assert_int_equal(poll_at(f, f->a, 1000, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, f->b, 1000, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(write_pos(f, f->a, 0.0, 1000), 0);
	expect_trace_ok(f, 1, 0);
}

/* Node 1 dies (closed without a word) after a checkpoint at model step 20 and two more steps:
 * node 2 takes the EU over from that checkpoint at a new epoch, runs steps 21.. again, and
 * hako-rd check counts the lost node's steps 21 and 22 as lost, not run twice. A node that was
 * not dead after all is fenced off: its next poll stops the EU. */
static void test_take_over_lost_owner(void **state)
{
	struct fx *f = *state;
	hako_rd_activation_t act;
	/* Nothing to take over while node 1 owns it from the start and node 2 is the owner. */
	assert_int_equal(hako_rd_take_over(f->a, EU, 1, 1000, f->got, CTX_MAX, &act), HAKO_EINVAL);
	for (uint64_t k = 1; k <= 22; k++) {
		assert_int_equal(poll_at(f, f->a, (hako_time_t)k * 1000, NULL), HAKO_RD_EV_NONE);
		hako_rd_trace_step(f->a, EU, k, (hako_time_t)k * 1000);
		if (k == 20) {
			assert_int_equal(hako_rd_checkpoint(f->a, EU, f->ctx, 64, k, 20000), 0);
		}
	}
	assert_int_equal(hako_rd_checkpoint(f->b, EU, f->ctx, 64, 1, 20000), HAKO_ENOTOWNER);
	assert_int_equal(hako_rd_checkpoint(f->a, EU, f->ctx, CTX_MAX + 1, 1, 20000), HAKO_ETOOBIG);
	/* A checkpoint is no hand-off: the standby is not offered it. */
	assert_int_equal(poll_at(f, f->b, 23000, NULL), HAKO_RD_EV_NONE);
	memset(f->got, 0, sizeof(f->got));
	assert_int_equal(hako_rd_take_over(f->b, EU, 1, 30000, f->got, CTX_MAX, &act), 0);
	assert_int_equal(act.epoch, 1);
	assert_int_equal(act.from, 0);
	assert_int_equal(act.model_step, 20);
	assert_int_equal(act.release_time_usec, 20000);
	assert_int_equal(act.ctx_len, 64);
	assert_memory_equal(f->got, f->ctx, 64);
	assert_true(hako_rd_is_owner(f->b, EU));
	expect_state(f, f->b, HAKO_RD_OWNER_STABLE, 1, 2, 2, HAKO_RD_LOCAL_OWNER);
	for (uint64_t k = 21; k <= 30; k++) {
		hako_rd_trace_step(f->b, EU, k, (hako_time_t)k * 1000);
	}
	assert_int_equal(write_pos(f, f->b, 1.0, 30000), 0);
	/* Twice, or from a node that does not own it: refused. */
	assert_int_equal(hako_rd_take_over(f->b, EU, 1, 30000, f->got, CTX_MAX, &act), HAKO_ESTATE);
	/* Node 1 was only frozen: the status fences it off at its next poll. */
	assert_int_equal(poll_at(f, f->a, 31000, NULL), HAKO_RD_EV_RELEASED);
	assert_false(hako_rd_is_owner(f->a, EU));
	assert_int_equal(write_pos(f, f->a, 2.0, 31000), HAKO_ENOTOWNER);
	expect_trace_ok(f, 0, 0);
}

/* The lost owner never checkpointed and got the EU by a hand-off: the hand-off's context is the
 * state to take over from. Without any context of that ownership: HAKO_ENOENT. */
static void test_take_over_from_handoff_context(void **state)
{
	struct fx *f = *state;
	hako_rd_activation_t act;
	assert_int_equal(poll_at(f, f->a, 10000, NULL), HAKO_RD_EV_NONE);
	hako_rd_trace_step(f->a, EU, 10, 10000);
	release_a_to_b(f, 10000, 10);
	assert_int_equal(poll_at(f, f->b, 11000, &act), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 11000), 0);
	assert_int_equal(poll_at(f, f->a, 11000, NULL), HAKO_RD_EV_RELEASED);
	hako_rd_trace_step(f->b, EU, 11, 11000);
	/* node 2 dies; node 1 takes the EU back from the context node 2 got at step 10 */
	assert_int_equal(hako_rd_take_over(f->a, EU, 2, 15000, f->got, CTX_MAX, &act), 0);
	assert_int_equal(act.model_step, 10);
	assert_int_equal(act.epoch, 2);
	assert_memory_equal(f->got, f->ctx, CTX_MAX);
	hako_rd_trace_step(f->a, EU, 11, 11000);
	expect_trace_ok(f, 1, 0);
}

/* The context in the channel is not of the lost owner's ownership (another config wrote it):
 * nothing to take over from, HAKO_ENOENT, and the EU stays with the lost node. */
static void test_take_over_without_context(void **state)
{
	struct fx *f = *state;
	hako_rd_activation_t act;
	assert_int_equal(poll_at(f, f->a, 10000, NULL), HAKO_RD_EV_NONE);
	release_a_to_b(f, 10000, 10);
	assert_int_equal(poll_at(f, f->b, 11000, &act), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->b, EU, 1, 11000), 0);
	assert_int_equal(poll_at(f, f->a, 11000, NULL), HAKO_RD_EV_RELEASED);
	hakoi_rd_context_t cx = {f->cfg->config_hash ^ 1u, 1, 1, 15000, 11, f->ctx, 8};
	uint8_t buf[CTX_MAX + 512];
	size_t len = 0;
	assert_int_equal(hakoi_rd_context_encode(&f->types, &cx, buf, sizeof(buf), &len), 0);
	hako_channel_t *ch = NULL;
	const hako_rd_eu_config_t *eu = &f->cfg->eus[0];
	assert_int_equal(
	    hako_channel_lookup(f->dom, eu->context.robot, eu->context.channel_id, &ch), 0);
	assert_int_equal(hako_channel_write(ch, buf, len), 0);
	assert_int_equal(hako_rd_take_over(f->a, EU, 2, 16000, f->got, CTX_MAX, &act), HAKO_ENOENT);
	assert_false(hako_rd_is_owner(f->a, EU));
	expect_state(f, f->a, HAKO_RD_OWNER_STABLE, 1, 2, 2, HAKO_RD_LOCAL_STANDBY);
}

static void test_trigger_boundary(void **state)
{
	(void)state;
	hako_rd_trigger_t tr = {.type = "boundary",
	                        .boundary = 1.0,
	                        .v_max = 0.5,
	                        .hysteresis = 0.05,
	                        .cooldown_usec = 100000,
	                        .low_owner = 1,
	                        .high_owner = 2};
	const hako_time_t dmax = 100000; /* margin 0.05 */
	hako_rd_trigger_state_t st;
	assert_true(hako_rd_trigger_margin(&tr, dmax) == 0.05);
	hako_rd_trigger_reset(&st, 0.0, 0);
	/* too early (cooldown), then in range */
	assert_int_equal(hako_rd_trigger_boundary(&tr, &st, 1, 0.96, 0.5, 50000, dmax), 0);
	assert_int_equal(hako_rd_trigger_boundary(&tr, &st, 1, 0.94, 0.5, 200000, dmax), 0);
	assert_int_equal(hako_rd_trigger_boundary(&tr, &st, 1, 0.95, 0.5, 200000, dmax), 2);
	assert_int_equal(hako_rd_trigger_boundary(&tr, &st, 1, 0.96, -0.5, 200000, dmax), 0);
	assert_int_equal(hako_rd_trigger_boundary(&tr, &st, 1, 0.96, 0.0005, 200000, dmax), 0);
	assert_int_equal(hako_rd_trigger_boundary(&tr, &st, 2, 0.96, 0.5, 200000, dmax), 0);
	/* the high owner got it at 1.02 moving up: not armed until it moved 0.05 away */
	hako_rd_trigger_reset(&st, 1.02, 1000000);
	assert_int_equal(hako_rd_trigger_boundary(&tr, &st, 2, 1.0, -0.5, 1200000, dmax), 0);
	assert_int_equal(hako_rd_trigger_boundary(&tr, &st, 2, 1.07, 0.5, 1300000, dmax), 0);
	assert_int_equal(hako_rd_trigger_boundary(&tr, &st, 2, 1.06, -0.5, 1400000, dmax), 0);
	assert_int_equal(hako_rd_trigger_boundary(&tr, &st, 2, 1.05, -0.5, 1500000, dmax), 1);
	hako_rd_trigger_t manual = {.type = "manual"};
	assert_int_equal(hako_rd_trigger_boundary(&manual, &st, 2, 1.0, -0.5, 1500000, dmax), 0);
}

int main(void)
{
	htu_init();
	if (getenv("HAKO_LOG") == NULL) {
		hako_log_set_level(HAKO_LOG_OFF);
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_initial_state, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_handoff_a_b_a, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_context_epoch_mismatch, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_context_malformed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restore_failure, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reclaim_uses_largest_step, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_late_standby, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_activation_at_deadline, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_activate_too_late, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_not_owner, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stale_epoch_dropped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_context_too_big, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_release_bad_next, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_quick_return, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_foreign_status_ignored, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_status_of_earlier_run, setup_bare, teardown),
	    cmocka_unit_test_setup_teardown(test_foreign_status_at_open, setup_bare, teardown),
	    cmocka_unit_test_setup_teardown(test_domain_reset, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_take_over_lost_owner, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_loan, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_take_over_from_handoff_context, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_take_over_without_context, setup, teardown),
	    cmocka_unit_test(test_trigger_boundary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
