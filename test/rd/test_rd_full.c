/* RD-Full's data path without the network: node 1 and node 2 each in its own domain (as in a
 * federation), the commit authority (hako_rd_master) and each node's mirror driven by this
 * test the way the conductors drive them, and the executors (hako_rd_node in full mode) given
 * world times directly. Checks the hand-off at the commit point, the context relayed to the
 * new owner, the activation settling it, the authority taking an EU back, and what an owner
 * may not do (release before the commit point or without one, write past it). The traces of
 * both nodes pass hako_rd_check together.
 *
 * Config: data/rd.json with "mode": "full" (EU 0 "forklift", candidates 1 and 2, initial owner
 * 1, timeout 200 ms); world step 1 ms, Dmax 3 ms, so a commit point is the request + 5 ms
 * (Dmax + 2 steps; 8 ms at the start: the request counts from Dmax at least). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako/msg.h"
#include "hako/pdu.h"
#include "hako/rd.h"
#include "hako/rd_master.h"
#include "hako_test_util.h"

#ifndef HAKO_RD_TEST_DATA
#define HAKO_RD_TEST_DATA "data"
#endif

#define DELTA   1000
#define DMAX    3000
#define TIMEOUT 200000
#define EU      0
#define CTX_LEN 512

struct side {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_master_t *master;
	hako_rd_node_t *node;
	hako_rd_mirror_t *mirror;
	char trace[300];
};

struct fx {
	char dir[256];
	char cfg_path[300];
	hako_rd_config_t *cfg;
	hako_rd_master_t *auth;
	struct side s[2]; /* node 1, node 2 */
	uint8_t ctx[CTX_LEN];
	uint8_t got[4096];
	uint32_t acked_seq;
};

static void open_side(struct fx *f, struct side *sd, uint8_t id, const char *test)
{
	char tag[64];
	snprintf(tag, sizeof(tag), "%s%u", test, id);
	htu_domain_name(tag, sd->name, sizeof(sd->name));
	hako_domain_config_t dc;
	hako_domain_config_default(&dc);
	dc.max_assets = 4;
	dc.max_channels = 16;
	dc.arena_bytes = 1 << 20;
	assert_int_equal(hako_domain_create(sd->name, &dc, &sd->dom), 0);
	hako_master_config_t mc = {DELTA, DMAX, 0};
	assert_int_equal(hako_master_start(sd->dom, &mc, &sd->master), 0);
	snprintf(sd->trace, sizeof(sd->trace), "%s/trace-%u.jsonl", f->dir, id);
	assert_int_equal(hako_rd_mirror_open(sd->dom, f->cfg, id, &sd->mirror), 0);
	assert_int_equal(hako_rd_node_open(sd->dom, f->cfg, id, sd->trace, &sd->node), 0);
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
	char *cfg = malloc(strlen(text) + 600);
	assert_non_null(cfg);
	snprintf(cfg, strlen(text) + 600, "{\"mode\": \"full\",\n%.*s\"%s/pdudef.json\"%s",
	         (int)(at - text - 1), text + 1, HAKO_RD_TEST_DATA, at + strlen("\"pdudef.json\""));
	snprintf(f->cfg_path, sizeof(f->cfg_path), "%s/rd.json", f->dir);
	assert_int_equal(htu_write_file(f->cfg_path, cfg), 0);
	free(cfg);
	hako_error_t err;
	if (hako_rd_config_load(f->cfg_path, &f->cfg, &err) != 0) {
		fail_msg("%s:%d:%d: %s", err.file, err.line, err.column, err.message);
	}
	assert_int_equal(f->cfg->mode, HAKO_RD_MODE_FULL);
	assert_int_equal(hako_rd_master_create(f->cfg, DELTA, DMAX, &f->auth), 0);
	open_side(f, &f->s[0], 1, "rdf");
	open_side(f, &f->s[1], 2, "rdf");
	for (size_t i = 0; i < CTX_LEN; i++) {
		f->ctx[i] = (uint8_t)(i * 13 + 5);
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	for (int i = 0; i < 2; i++) {
		hako_rd_node_close(f->s[i].node);
		hako_rd_mirror_close(f->s[i].mirror);
		hako_master_stop(f->s[i].master);
		hako_domain_close(f->s[i].dom);
		htu_remove_domain(f->s[i].name);
	}
	hako_rd_master_destroy(f->auth);
	hako_rd_config_free(f->cfg);
	htu_remove_tmpdirs();
	free(f);
	return 0;
}

/* ---- the conductors' part ---- */

/* Every node writes the authority's state of the EU; each acknowledges. */
static void announce(struct fx *f)
{
	hako_rd_commit_t c;
	assert_int_equal(hako_rd_master_get(f->auth, EU, &c), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(hako_rd_mirror_apply(f->s[i].mirror, &c), 0);
		hako_rd_master_ack(f->auth, (uint8_t)(i + 1), EU, c.seq);
	}
	f->acked_seq = c.seq;
}

struct relay_ctx {
	struct fx *f;
	uint8_t from;
	int contexts;
	int activations;
};

static void on_relay(void *arg, const hako_rd_relay_t *r)
{
	struct relay_ctx *rc = arg;
	struct fx *f = rc->f;
	if (r->kind == HAKO_RD_RELAY_CONTEXT) {
		rc->contexts++;
		assert_int_equal(
		    hako_rd_master_store_context(f->auth, r->eu, r->epoch, r->pdu, r->len), 0);
		hako_rd_commit_t c;
		assert_int_equal(hako_rd_master_get(f->auth, r->eu, &c), 0);
		/* To the new owner's node. */
		assert_int_equal(hako_rd_mirror_put_context(f->s[c.next - 1].mirror, r->eu, r->pdu,
		                                            r->len, -1, -1),
		                 0);
	} else if (r->kind == HAKO_RD_RELAY_ACTIVATED) {
		rc->activations++;
		if (hako_rd_master_activated(f->auth, rc->from, r->eu, r->epoch) == 0) {
			announce(f);
		}
	}
}

/* Both nodes' conductors look at their domains once; returns contexts + activations seen. */
static int relay(struct fx *f)
{
	int n = 0;
	for (int i = 0; i < 2; i++) {
		struct relay_ctx rc = {f, (uint8_t)(i + 1), 0, 0};
		assert_int_equal(hako_rd_mirror_scan(f->s[i].mirror, on_relay, &rc), 0);
		n += rc.contexts + rc.activations;
	}
	return n;
}

/* ---- the executors' part ---- */

static void assert_one_owner(struct fx *f)
{
	if (hako_rd_is_owner(f->s[0].node, EU) && hako_rd_is_owner(f->s[1].node, EU)) {
		fail_msg("two owners");
	}
}

static hako_rd_event_t poll_at(struct fx *f, int side, hako_time_t t, hako_rd_activation_t *act)
{
	hako_rd_event_t ev = HAKO_RD_EV_NONE;
	hako_rd_activation_t dummy;
	memset(f->got, 0, sizeof(f->got));
	assert_int_equal(hako_rd_poll(f->s[side].node, EU, t, &ev, f->got, sizeof(f->got),
	                              act != NULL ? act : &dummy),
	                 0);
	assert_one_owner(f);
	return ev;
}

static void expect_local(struct fx *f, int side, int local, uint8_t epoch, uint8_t curr)
{
	hako_rd_eu_state_t st;
	assert_int_equal(hako_rd_get_state(f->s[side].node, EU, &st), 0);
	assert_int_equal(st.local, local);
	assert_int_equal(st.epoch, epoch);
	assert_int_equal(st.curr_owner, curr);
}

static void expect_trace_ok(struct fx *f, uint64_t handoffs, uint64_t reclaims)
{
	const char *paths[2] = {f->s[0].trace, f->s[1].trace};
	hako_rd_check_result_t res;
	hako_error_t err;
	assert_int_equal(hako_rd_check(paths, 2, &res, &err), 0);
	if (res.violations != 0) {
		fail_msg("trace: %llu violations, first: %s", (unsigned long long)res.violations,
		         res.first_violation);
	}
	assert_int_equal(res.handoffs, handoffs);
	assert_int_equal(res.reclaims, reclaims);
}

/* Node 1 runs model steps up to `to` (1 ms each) from step *step. */
static void run_steps(struct fx *f, int side, uint64_t *step, hako_time_t to)
{
	while ((hako_time_t)(*step + 1) * DELTA <= to) {
		(*step)++;
		hako_rd_trace_step(f->s[side].node, EU, *step, (hako_time_t)*step * DELTA);
	}
}

/* ---- tests ---- */

/* The hand-off 1 -> 2: the owner keeps the EU until the commit point, stops exactly there, its
 * context reaches node 2 through the relay, node 2 activates after the commit point, and the
 * authority's settlement tells node 1 it was released. */
static void test_handoff(void **state)
{
	struct fx *f = *state;
	uint64_t step = 0;
	announce(f); /* the initial state, as the conductors write it at start */
	expect_local(f, 0, HAKO_RD_LOCAL_OWNER, 0, 1);
	expect_local(f, 1, HAKO_RD_LOCAL_STANDBY, 0, 1);
	assert_int_equal(poll_at(f, 0, 10000, NULL), HAKO_RD_EV_NONE);
	run_steps(f, 0, &step, 10000);
	/* Without a commit, an RD-Full owner cannot release by itself. */
	assert_int_equal(hako_rd_release(f->s[0].node, EU, 2, f->ctx, CTX_LEN, step, 10000),
	                 HAKO_ESTATE);
	char why[200];
	assert_int_equal(hako_rd_master_request(f->auth, EU, 2, 11000, why, sizeof(why)), 0);
	announce(f);
	hako_rd_commit_t c;
	assert_int_equal(hako_rd_master_get(f->auth, EU, &c), 0);
	assert_int_equal(c.commit_usec, 16000);
	/* Every node sees the commit point, standbys too (hako-rd status shows it). */
	hako_rd_eu_state_t st;
	assert_int_equal(hako_rd_get_state(f->s[1].node, EU, &st), 0);
	assert_int_equal(st.status, HAKO_RD_OWNER_RELEASING);
	assert_int_equal(st.release_time_usec, 16000);
	/* Before the commit point the owner runs on and writes. */
	hako_rd_activation_t act;
	assert_int_equal(poll_at(f, 0, 12000, &act), HAKO_RD_EV_NONE);
	assert_true(hako_rd_is_owner(f->s[0].node, EU));
	run_steps(f, 0, &step, 12000);
	assert_int_equal(hako_rd_release(f->s[0].node, EU, 2, f->ctx, CTX_LEN, step, 12000),
	                 HAKO_ESTATE);
	assert_int_equal(poll_at(f, 1, 12000, NULL), HAKO_RD_EV_NONE);
	/* The step that reaches past it: COMMIT, the model runs to 16 ms, not 17. */
	assert_int_equal(poll_at(f, 0, 17000, &act), HAKO_RD_EV_COMMIT);
	assert_int_equal(act.release_time_usec, 16000);
	assert_int_equal(act.epoch, 1);
	assert_int_equal(act.from, 2);
	run_steps(f, 0, &step, act.release_time_usec);
	assert_int_equal(step, 16);
	assert_int_equal(hako_rd_release(f->s[0].node, EU, 3, f->ctx, CTX_LEN, step, 17000),
	                 HAKO_EINVAL);
	assert_int_equal(hako_rd_release(f->s[0].node, EU, 0, f->ctx, CTX_LEN, step, 17000), 0);
	expect_local(f, 0, HAKO_RD_LOCAL_RELEASING, 1, 1);
	/* Node 2 has only the announcement until the context is relayed. */
	assert_int_equal(poll_at(f, 1, 17000, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(relay(f), 1);
	assert_int_equal(relay(f), 0);                                 /* nothing twice */
	assert_int_equal(poll_at(f, 1, 16000, NULL), HAKO_RD_EV_NONE); /* not after C yet */
	assert_int_equal(poll_at(f, 1, 17000, &act), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(act.epoch, 1);
	assert_int_equal(act.from, 1);
	assert_int_equal(act.release_time_usec, 16000);
	assert_int_equal(act.model_step, 16);
	assert_int_equal(act.ctx_len, CTX_LEN);
	assert_memory_equal(f->got, f->ctx, CTX_LEN);
	assert_int_equal(hako_rd_activate(f->s[1].node, EU, 1, 17000), 0);
	run_steps(f, 1, &step, 17000);
	assert_true(hako_rd_is_owner(f->s[1].node, EU));
	assert_int_equal(relay(f), 1);
	assert_int_equal(hako_rd_master_get(f->auth, EU, &c), 0);
	assert_int_equal(c.status, HAKO_RD_OWNER_STABLE);
	assert_int_equal(c.curr, 2);
	assert_int_equal(poll_at(f, 0, 18000, NULL), HAKO_RD_EV_RELEASED);
	expect_local(f, 0, HAKO_RD_LOCAL_STANDBY, 1, 2);
	expect_local(f, 1, HAKO_RD_LOCAL_OWNER, 1, 2);
	/* The authority's copy is the owner's context of epoch 1. */
	size_t len = 0;
	assert_non_null(hako_rd_master_context(f->auth, EU, &len));
	assert_true(len > CTX_LEN);
	expect_trace_ok(f, 1, 0);
}

/* Node 2 cannot restore: it does not activate, and once its world time is past the window the
 * authority gives the EU back to node 1, which resumes at epoch 2 from where it stopped. */
static void test_taken_back(void **state)
{
	struct fx *f = *state;
	uint64_t step = 0;
	announce(f);
	assert_int_equal(hako_rd_master_request(f->auth, EU, 2, 4000, NULL, 0), 0);
	announce(f);
	hako_rd_activation_t act;
	assert_int_equal(poll_at(f, 0, 11000, &act), HAKO_RD_EV_COMMIT);
	run_steps(f, 0, &step, act.release_time_usec);
	assert_int_equal(hako_rd_release(f->s[0].node, EU, 2, f->ctx, 8, step, 11000), 0);
	assert_int_equal(relay(f), 1);
	assert_int_equal(poll_at(f, 1, 11000, &act), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->s[1].node, EU, 0, 11000), 0); /* restore failed */
	assert_int_equal(relay(f), 0);
	/* Node 2's world passes C + timeout + Dmax: only then is the EU taken back. */
	uint32_t changed[2];
	hako_rd_master_node_time(f->auth, 2, act.release_time_usec + TIMEOUT + DMAX);
	assert_int_equal(hako_rd_master_tick(f->auth, 400000, changed, 2), 0);
	hako_rd_master_node_time(f->auth, 2, act.release_time_usec + TIMEOUT + DMAX + DELTA);
	assert_int_equal(hako_rd_master_tick(f->auth, 400000, changed, 2), 1);
	announce(f);
	assert_int_equal(poll_at(f, 1, 215000, NULL), HAKO_RD_EV_NONE);
	assert_int_equal(poll_at(f, 0, 215000, NULL), HAKO_RD_EV_RECLAIMED);
	expect_local(f, 0, HAKO_RD_LOCAL_OWNER, 2, 1);
	expect_local(f, 1, HAKO_RD_LOCAL_STANDBY, 2, 1);
	run_steps(f, 0, &step, 215000);
	expect_trace_ok(f, 0, 1);
}

/* The owner ran to its commit point but never released (its application did not, or it
 * never saw the announcement): the candidate never gets a context, and once the window closed
 * the authority settles the EU on the owner again. The owner keeps it at the new epoch, writes
 * past the abandoned commit point again, and the traces pass with one reclaim. */
static void test_owner_settled_back(void **state)
{
	struct fx *f = *state;
	uint64_t step = 0;
	announce(f);
	assert_int_equal(hako_rd_master_request(f->auth, EU, 2, 4000, NULL, 0), 0);
	announce(f);
	hako_rd_activation_t act;
	assert_int_equal(poll_at(f, 0, 11000, &act), HAKO_RD_EV_COMMIT);
	run_steps(f, 0, &step, act.release_time_usec);
	assert_int_equal(relay(f), 0); /* no context goes out */
	assert_int_equal(poll_at(f, 1, 12000, NULL), HAKO_RD_EV_NONE);
	uint32_t changed[2];
	hako_rd_master_node_time(f->auth, 2, act.release_time_usec + TIMEOUT + DMAX + DELTA);
	assert_int_equal(hako_rd_master_tick(f->auth, 400000, changed, 2), 1);
	announce(f);
	assert_int_equal(poll_at(f, 0, 215000, NULL), HAKO_RD_EV_RECLAIMED);
	expect_local(f, 0, HAKO_RD_LOCAL_OWNER, 2, 1);
	assert_int_equal(poll_at(f, 0, 216000, NULL), HAKO_RD_EV_NONE); /* once */
	assert_int_equal(poll_at(f, 1, 216000, NULL), HAKO_RD_EV_NONE);
	expect_local(f, 1, HAKO_RD_LOCAL_STANDBY, 2, 1);
	/* A Twist (the EU's first PDU) of a model time past the abandoned commit point. */
	hako_msg_registry_t *reg = NULL;
	const hako_msg_type_t *twist = NULL;
	hako_error_t err;
	assert_int_equal(hako_msg_registry_create(&reg), 0);
	assert_int_equal(hako_msg_registry_get(reg, "geometry_msgs/Twist", &twist, &err), 0);
	uint8_t pdu[128];
	hako_pdu_writer_t w;
	size_t len = 0;
	assert_int_equal(hako_pdu_writer_init(&w, twist, pdu, sizeof(pdu)), 0);
	assert_int_equal(hako_pdu_writer_finish(&w, &len), 0);
	assert_int_equal(hako_rd_write(f->s[0].node, EU, 0, pdu, len, 216000), 0);
	hako_msg_registry_destroy(reg);
	run_steps(f, 0, &step, 216000);
	expect_trace_ok(f, 0, 1);
}

/* What a reader on the old owner's node is given around the commit point: the old owner's
 * PDUs until the world reaches C, none of its epoch from C on; its trace ("read") passes
 * hako-rd check with the owners', and a read of the old epoch after C is a violation. */
static void test_reads_until_commit(void **state)
{
	struct fx *f = *state;
	uint64_t step = 0;
	char obs_trace[320];
	snprintf(obs_trace, sizeof(obs_trace), "%s/trace-observer.jsonl", f->dir);
	hako_rd_node_t *obs = NULL;
	assert_int_equal(hako_rd_node_open(f->s[0].dom, f->cfg, 0, obs_trace, &obs), 0);
	announce(f);
	hako_msg_registry_t *reg = NULL;
	const hako_msg_type_t *twist = NULL;
	hako_error_t err;
	assert_int_equal(hako_msg_registry_create(&reg), 0);
	assert_int_equal(hako_msg_registry_get(reg, "geometry_msgs/Twist", &twist, &err), 0);
	uint8_t pdu[128], got[128];
	hako_pdu_writer_t w;
	size_t len = 0, n = 0;
	assert_int_equal(hako_pdu_writer_init(&w, twist, pdu, sizeof(pdu)), 0);
	assert_int_equal(hako_pdu_writer_finish(&w, &len), 0);
	assert_int_equal(poll_at(f, 0, 10000, NULL), HAKO_RD_EV_NONE);
	run_steps(f, 0, &step, 10000);
	assert_int_equal(hako_rd_write(f->s[0].node, EU, 0, pdu, len, 10000), 0);
	assert_int_equal(hako_rd_read_at(obs, EU, 0, got, sizeof(got), &n, 10000), 0);
	assert_int_equal(n, len);
	/* Committed at 11 ms: C = 16 ms. The old owner's PDU is read before C, not from C on. */
	assert_int_equal(hako_rd_master_request(f->auth, EU, 2, 11000, NULL, 0), 0);
	announce(f);
	assert_int_equal(hako_rd_read_at(obs, EU, 0, got, sizeof(got), &n, 15000), 0);
	uint64_t stale = hako_rd_stale_drops(obs);
	assert_int_equal(hako_rd_read_at(obs, EU, 0, got, sizeof(got), &n, 16000), HAKO_EAGAIN);
	assert_int_equal(hako_rd_stale_drops(obs), stale + 1);
	/* The hand-off completes. */
	hako_rd_activation_t act;
	assert_int_equal(poll_at(f, 0, 17000, &act), HAKO_RD_EV_COMMIT);
	run_steps(f, 0, &step, act.release_time_usec);
	assert_int_equal(hako_rd_release(f->s[0].node, EU, 0, f->ctx, 8, step, 17000), 0);
	assert_int_equal(relay(f), 1);
	assert_int_equal(poll_at(f, 1, 17000, &act), HAKO_RD_EV_ACTIVATE);
	assert_int_equal(hako_rd_activate(f->s[1].node, EU, 1, 17000), 0);
	hako_rd_node_close(obs);
	hako_msg_registry_destroy(reg);
	const char *paths[3] = {f->s[0].trace, f->s[1].trace, obs_trace};
	hako_rd_check_result_t res;
	assert_int_equal(hako_rd_check(paths, 3, &res, &err), 0);
	if (res.violations != 0) {
		fail_msg("trace: %s", res.first_violation);
	}
	assert_int_equal(res.reads, 2);
	assert_int_equal(res.handoffs, 1);
	/* A read of epoch 0 after the commit of epoch 1: found. */
	FILE *t = fopen(obs_trace, "a");
	assert_non_null(t);
	fputs("{\"t\":17000,\"node\":0,\"eu\":0,\"epoch\":0,\"ev\":\"read\",\"pdu\":\"pos\"}\n", t);
	fclose(t);
	assert_int_equal(hako_rd_check(paths, 3, &res, &err), 0);
	assert_int_equal(res.violations, 1);
	if (strstr(res.first_violation, "read \"pos\" of epoch 0 at world time 17000 us, after the "
	                                "commit of epoch 1 at 16000 us") == NULL) {
		fail_msg("violation: %s", res.first_violation);
	}
}

/* An owner that learned its commit point cannot write data of a later model time. */
static void test_no_write_past_commit(void **state)
{
	struct fx *f = *state;
	announce(f);
	assert_int_equal(hako_rd_master_request(f->auth, EU, 2, 0, NULL, 0), 0);
	announce(f);
	assert_int_equal(poll_at(f, 0, 3000, NULL), HAKO_RD_EV_NONE); /* learns C = 8 ms */
	uint8_t pdu[4096] = {0};
	size_t len = f->cfg->eus[0].writes[0].pdu_size;
	assert_true(len <= sizeof(pdu));
	assert_int_equal(hako_rd_write(f->s[0].node, EU, 0, pdu, len, 9000), HAKO_ENOTOWNER);
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_handoff, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_taken_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner_settled_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reads_until_commit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_write_past_commit, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
