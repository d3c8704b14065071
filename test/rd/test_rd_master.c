/* RD-Full's commit authority (hako/rd_master.h) driven by hand: requests, commit points,
 * acknowledgements and the barrier, activations, the timeouts that take an EU back, lost
 * nodes. A federation of three nodes (1 = the server's, 2 and 3 clients), world step 1 ms,
 * Dmax 10 ms, hand-off timeout 1 s; EU 0 is on node 2 at epoch 0, EU 1 on node 3. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/rd_master.h"

#define DELTA   1000
#define DMAX    10000
#define TIMEOUT 1000000

static hako_rd_config_t *config(void)
{
	hako_rd_config_t *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	c->node_count = 3;
	for (uint8_t i = 0; i < 3; i++) {
		c->node_ids[i] = (uint8_t)(i + 1);
		snprintf(c->node_names[i], sizeof(c->node_names[i]), "node-%u", i + 1);
	}
	c->handoff_timeout_usec = TIMEOUT;
	c->eu_count = 2;
	c->eus = calloc(2, sizeof(*c->eus));
	assert_non_null(c->eus);
	for (uint32_t i = 0; i < 2; i++) {
		hako_rd_eu_config_t *e = &c->eus[i];
		e->id = i;
		snprintf(e->name, sizeof(e->name), "eu%u", i);
		e->candidate_count = 2;
		e->candidates[0] = 2;
		e->candidates[1] = 3;
		e->initial_owner = (uint8_t)(2 + i);
		e->max_context_bytes = 64;
	}
	return c;
}

struct fx {
	hako_rd_config_t *cfg;
	hako_rd_master_t *m;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->cfg = config();
	assert_int_equal(hako_rd_master_create(f->cfg, DELTA, DMAX, &f->m), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	hako_rd_master_destroy(f->m);
	free(f->cfg->eus);
	free(f->cfg);
	free(f);
	return 0;
}

static hako_rd_commit_t get(struct fx *f, uint32_t eu)
{
	hako_rd_commit_t c;
	assert_int_equal(hako_rd_master_get(f->m, eu, &c), 0);
	return c;
}

static void ack_all(struct fx *f, uint32_t eu)
{
	uint32_t seq = get(f, eu).seq;
	for (uint8_t n = 1; n <= 3; n++) {
		hako_rd_master_ack(f->m, n, eu, seq);
	}
}

/* After a node was lost at world time `at`: ticks (held: with the world held) change nothing
 * until the timeout has passed, then `n` EUs. */
static void tick_past_timeout(struct fx *f, hako_time_t at, int held, int n)
{
	int (*tick)(hako_rd_master_t *, hako_time_t, uint32_t *, int) =
	    held ? hako_rd_master_tick_held : hako_rd_master_tick;
	uint32_t changed[4];
	assert_int_equal(tick(f->m, at + TIMEOUT - 1, changed, 4), 0);
	assert_int_equal(tick(f->m, at + TIMEOUT, changed, 4), n);
}

/* The EU's commit is a restart on node `next` at `epoch`, from the last committed context. */
static hako_rd_commit_t expect_restart(struct fx *f, uint32_t eu, uint8_t next, uint32_t epoch)
{
	hako_rd_commit_t s = get(f, eu);
	assert_int_equal(s.status, HAKO_RD_OWNER_RELEASING);
	assert_int_equal(s.next, next);
	assert_int_equal(s.epoch, epoch);
	assert_int_equal(s.from_stored, 1);
	return s;
}

static void test_initial(void **state)
{
	struct fx *f = *state;
	hako_rd_commit_t c = get(f, 0);
	assert_int_equal(c.status, HAKO_RD_OWNER_STABLE);
	assert_int_equal(c.epoch, 0);
	assert_int_equal(c.curr, 2);
	assert_int_equal(c.next, 2);
	assert_int_equal(c.commit_usec, -1);
	assert_int_equal(get(f, 1).curr, 3);
	assert_int_equal(hako_rd_master_barrier(f->m), -1);
	hako_rd_commit_t x;
	assert_int_equal(hako_rd_master_get(f->m, 7, &x), HAKO_EINVAL);
	size_t len = 99;
	assert_null(hako_rd_master_context(f->m, 0, &len));
	assert_int_equal(len, 0);
}

/* A request commits epoch 1 at now + Dmax + 2 steps (a step boundary): the caller held the
 * server's world before it read now, and the barrier holds it at the request's time until
 * every node acknowledged; the activation settles it. */
static void test_handoff(void **state)
{
	struct fx *f = *state;
	uint32_t seq0 = get(f, 0).seq;
	char why[200];
	assert_int_equal(hako_rd_master_request(f->m, 0, 3, 500500, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	hako_rd_commit_t c = get(f, 0);
	assert_int_equal(c.status, HAKO_RD_OWNER_RELEASING);
	assert_int_equal(c.epoch, 1);
	assert_int_equal(c.curr, 2);
	assert_int_equal(c.next, 3);
	assert_int_equal(c.commit_usec, 513000); /* 500.5 ms + 10 ms + 2 ms, up to a step */
	assert_int_equal(c.from_stored, 0);
	assert_true(c.seq > seq0);
	assert_int_equal(hako_rd_master_barrier(f->m), 500500);
	/* Two of three acknowledgements: still held; an old seq counts for nothing. */
	hako_rd_master_ack(f->m, 1, 0, c.seq);
	hako_rd_master_ack(f->m, 2, 0, c.seq);
	hako_rd_master_ack(f->m, 3, 0, c.seq - 1);
	assert_int_equal(hako_rd_master_barrier(f->m), 500500);
	hako_rd_master_ack(f->m, 3, 0, c.seq);
	assert_int_equal(hako_rd_master_barrier(f->m), -1);
	/* The owner's context is stored as the last committed one. */
	const char pdu[] = "context-of-epoch-1";
	assert_int_equal(hako_rd_master_store_context(f->m, 0, 0, pdu, sizeof(pdu)), HAKO_ESTATE);
	assert_int_equal(hako_rd_master_store_context(f->m, 0, 1, pdu, sizeof(pdu)), 0);
	size_t len = 0;
	const void *got = hako_rd_master_context(f->m, 0, &len);
	assert_int_equal(len, sizeof(pdu));
	assert_memory_equal(got, pdu, sizeof(pdu));
	/* Activations of another node or epoch are ignored. */
	assert_int_equal(hako_rd_master_activated(f->m, 2, 0, 1), HAKO_ESTATE);
	assert_int_equal(hako_rd_master_activated(f->m, 3, 0, 0), HAKO_ESTATE);
	assert_int_equal(get(f, 0).status, HAKO_RD_OWNER_RELEASING);
	assert_int_equal(hako_rd_master_activated(f->m, 3, 0, 1), 0);
	hako_rd_commit_t s = get(f, 0);
	assert_int_equal(s.status, HAKO_RD_OWNER_STABLE);
	assert_int_equal(s.epoch, 1);
	assert_int_equal(s.curr, 3);
	assert_int_equal(s.next, 3);
	assert_int_equal(s.commit_usec, -1);
	assert_true(s.seq > c.seq);
	/* A duplicate is ignored; EU 1 was never touched. */
	assert_int_equal(hako_rd_master_activated(f->m, 3, 0, 1), HAKO_ESTATE);
	assert_int_equal(get(f, 1).epoch, 0);
	/* And back. */
	assert_int_equal(hako_rd_master_request(f->m, 0, 2, 2000000, NULL, 0), 0);
	assert_int_equal(get(f, 0).epoch, 2);
	assert_int_equal(get(f, 0).commit_usec, 2012000);
}

static void expect_refused(struct fx *f, uint32_t eu, uint8_t to, int code, const char *words)
{
	char why[300];
	hako_rd_commit_t before = get(f, eu < 2 ? eu : 0);
	assert_int_equal(hako_rd_master_request(f->m, eu, to, 1000, why, sizeof(why)), code);
	if (strstr(why, words) == NULL) {
		fail_msg("refusal '%s' lacks '%s'", why, words);
	}
	hako_rd_commit_t after = get(f, eu < 2 ? eu : 0);
	assert_int_equal(after.seq, before.seq);
}

static void test_refusals(void **state)
{
	struct fx *f = *state;
	expect_refused(f, 9, 3, HAKO_EINVAL, "no EU 9");
	expect_refused(f, 0, 1, HAKO_EINVAL, "not a candidate");
	expect_refused(f, 0, 4, HAKO_EINVAL, "not a candidate");
	expect_refused(f, 0, 2, HAKO_EEXIST, "on node 2 already");
	assert_int_equal(hako_rd_master_request(f->m, 0, 3, 1000, NULL, 0), 0);
	/* A hand-off during another one is refused with the one in progress. */
	expect_refused(f, 0, 2, HAKO_EBUSY, "from node 2 to node 3");
	expect_refused(f, 0, 3, HAKO_EBUSY, "commit at 0.022000 s");
	hako_rd_master_node_lost(f->m, 2, 5000);
	expect_refused(f, 1, 2, HAKO_ECRASHED, "node 2 is lost");
	hako_rd_master_node_back(f->m, 2);
	hako_rd_master_node_lost(f->m, 3, 5000);
	expect_refused(f, 1, 2, HAKO_ECRASHED, "owner of EU eu1, node 3, is lost");
}

/* The new owner never activates: the EU goes back to the old owner at a new epoch, but only
 * once the new owner's node reported a world time past C + timeout + Dmax. */
static void test_reclaim_after_window(void **state)
{
	struct fx *f = *state;
	assert_int_equal(hako_rd_master_request(f->m, 0, 3, 0, NULL, 0), 0);
	hako_rd_commit_t c = get(f, 0);
	hako_time_t closes = c.commit_usec + TIMEOUT + DMAX;
	uint32_t changed[4];
	/* The server's own time does not decide: node 3 may be behind it. */
	assert_int_equal(hako_rd_master_tick(f->m, closes + 5 * TIMEOUT, changed, 4), 0);
	hako_rd_master_node_time(f->m, 3, closes);
	assert_int_equal(hako_rd_master_tick(f->m, closes + 5 * TIMEOUT, changed, 4), 0);
	hako_rd_master_node_time(f->m, 3, closes + DELTA);
	assert_int_equal(hako_rd_master_tick(f->m, closes + 5 * TIMEOUT, changed, 4), 1);
	assert_int_equal(changed[0], 0);
	hako_rd_commit_t s = get(f, 0);
	assert_int_equal(s.status, HAKO_RD_OWNER_STABLE);
	assert_int_equal(s.curr, 2);
	assert_int_equal(s.epoch, 2); /* never epoch 1 again: the abandoned one is fenced off */
	/* A late activation of the abandoned hand-off changes nothing. */
	assert_int_equal(hako_rd_master_activated(f->m, 3, 0, 1), HAKO_ESTATE);
	assert_int_equal(get(f, 0).curr, 2);
}

/* The new owner's node is lost before the owner released: it cannot have activated, so the
 * old owner keeps the EU once the timeout passed. */
static void test_next_lost(void **state)
{
	struct fx *f = *state;
	assert_int_equal(hako_rd_master_request(f->m, 0, 3, 0, NULL, 0), 0);
	hako_rd_master_node_lost(f->m, 3, 10000);
	/* Lost nodes acknowledge nothing and hold nothing. */
	hako_rd_master_ack(f->m, 1, 0, get(f, 0).seq);
	hako_rd_master_ack(f->m, 2, 0, get(f, 0).seq);
	assert_int_equal(hako_rd_master_barrier(f->m), -1);
	/* EU 0 back to node 2; EU 1, owned by the lost node, restarts on node 2. */
	tick_past_timeout(f, 10000, 0, 2);
	hako_rd_commit_t s = get(f, 0);
	assert_int_equal(s.status, HAKO_RD_OWNER_STABLE);
	assert_int_equal(s.curr, 2);
	assert_int_equal(s.epoch, 2);
}

/* The owner's node is lost while it owns the EU: after the timeout a live candidate restarts
 * it from the last committed context. */
static void test_owner_lost(void **state)
{
	struct fx *f = *state;
	/* A hand-off 2 -> 3 with its context, so there is a committed one. */
	assert_int_equal(hako_rd_master_request(f->m, 0, 3, 0, NULL, 0), 0);
	assert_int_equal(hako_rd_master_store_context(f->m, 0, 1, "ctx1", 4), 0);
	assert_int_equal(hako_rd_master_activated(f->m, 3, 0, 1), 0);
	hako_rd_master_node_lost(f->m, 3, 100000);
	tick_past_timeout(f, 100000, 0, 2);
	hako_rd_commit_t s = expect_restart(f, 0, 2, 2);
	assert_int_equal(s.curr, 3);
	assert_int_equal(s.commit_usec, 100000 + TIMEOUT + 2 * DMAX);
	size_t len = 0;
	assert_memory_equal(hako_rd_master_context(f->m, 0, &len), "ctx1", 4);
	/* EU 1 (initial owner 3, never handed over) restarts from nothing on node 2. */
	hako_rd_commit_t s1 = get(f, 1);
	assert_int_equal(s1.next, 2);
	assert_int_equal(s1.from_stored, 1);
	assert_null(hako_rd_master_context(f->m, 1, &len));
	/* The restart does not store a context of its own; node 2 activates. */
	assert_int_equal(hako_rd_master_store_context(f->m, 0, 2, "x", 1), HAKO_ESTATE);
	assert_int_equal(hako_rd_master_activated(f->m, 2, 0, 2), 0);
	assert_int_equal(get(f, 0).curr, 2);
}

/* The owner's checkpoints become the last committed context: a restart after its node is
 * lost starts from the latest one; checkpoints of anyone else, of another epoch, or after the
 * hand-off context was stored are refused. */
static void test_checkpoint(void **state)
{
	struct fx *f = *state;
	/* EU 0: initial owner node 2, epoch 0. */
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 0, 3, 0, "bad", 3), HAKO_ESTATE);
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 0, 2, 1, "bad", 3), HAKO_ESTATE);
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 0, 2, 0, "ck1", 3), 0);
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 0, 2, 0, "ck22", 4), 0);
	size_t len = 0;
	const void *ctx = hako_rd_master_context(f->m, 0, &len);
	assert_int_equal(len, 4);
	assert_memory_equal(ctx, "ck22", 4);
	/* A hand-off 2 -> 3 announced (epoch 1): the owner's checkpoint of epoch 0 still counts
	 * until its hand-off context comes; then the hand-off context is the committed one. */
	assert_int_equal(hako_rd_master_request(f->m, 0, 3, 0, NULL, 0), 0);
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 0, 2, 0, "ck3", 3), 0);
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 0, 2, 1, "bad", 3), HAKO_ESTATE);
	assert_int_equal(hako_rd_master_store_context(f->m, 0, 1, "hand", 4), 0);
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 0, 2, 0, "late", 4), HAKO_ESTATE);
	assert_memory_equal(hako_rd_master_context(f->m, 0, &len), "hand", 4);
	assert_int_equal(hako_rd_master_activated(f->m, 3, 0, 1), 0);
	/* The old owner's late checkpoint is refused; the new owner's is kept. */
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 0, 2, 0, "late", 4), HAKO_ESTATE);
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 0, 3, 1, "ck3b", 4), 0);
	/* Node 3 is lost: node 2 restarts the EU from node 3's checkpoint. */
	hako_rd_master_node_lost(f->m, 3, 50000);
	tick_past_timeout(f, 50000, 0, 2);
	expect_restart(f, 0, 2, 2);
	assert_memory_equal(hako_rd_master_context(f->m, 0, &len), "ck3b", 4);
	/* During the restart nothing replaces the context it sends. */
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 0, 3, 1, "late", 4), HAKO_ESTATE);
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 0, 3, 2, "late", 4), HAKO_ESTATE);
	assert_int_equal(hako_rd_master_activated(f->m, 2, 0, 2), 0);
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 0, 2, 2, "ck4", 3), 0);
	assert_int_equal(hako_rd_master_store_checkpoint(NULL, 0, 2, 2, "x", 1), HAKO_EINVAL);
	assert_int_equal(hako_rd_master_store_checkpoint(f->m, 99, 2, 2, "x", 1), HAKO_EINVAL);
}

/* A lost owner's EU is due once the timeout has passed (hako_rd_master_next_due), and a tick
 * with the world held commits its restart Dmax sooner than one without. */
static void test_due_and_held_restart(void **state)
{
	struct fx *f = *state;
	assert_int_equal(hako_rd_master_next_due(f->m), -1);
	hako_rd_master_node_lost(f->m, 3, 70000);
	assert_int_equal(hako_rd_master_next_due(f->m), 70000 + TIMEOUT);
	tick_past_timeout(f, 70000, 1, 1);
	hako_rd_commit_t s = expect_restart(f, 1, 2, 1);
	assert_int_equal(s.commit_usec, 70000 + TIMEOUT + DMAX + 2 * DELTA);
	/* Releasing to a live node from a lost one: still due until the new owner activates. */
	assert_int_equal(hako_rd_master_next_due(f->m), 70000 + TIMEOUT);
	assert_int_equal(hako_rd_master_activated(f->m, 2, 1, s.epoch), 0);
	assert_int_equal(hako_rd_master_next_due(f->m), -1);
}

/* The owner is lost during its hand-off, before it sent its context: the new owner starts
 * from the last committed context instead. */
static void test_owner_lost_before_release(void **state)
{
	struct fx *f = *state;
	assert_int_equal(hako_rd_master_request(f->m, 0, 3, 0, NULL, 0), 0);
	hako_rd_master_node_lost(f->m, 2, 15000);
	tick_past_timeout(f, 15000, 0, 1);
	expect_restart(f, 0, 3, 2);
	assert_int_equal(hako_rd_master_activated(f->m, 3, 0, 2), 0);
	assert_int_equal(get(f, 0).curr, 3);
}

/* Two commits at once: the barrier is the lower one until that one is acknowledged. */
static void test_barrier_lowest(void **state)
{
	struct fx *f = *state;
	assert_int_equal(hako_rd_master_request(f->m, 1, 2, 7000, NULL, 0), 0);
	assert_int_equal(hako_rd_master_request(f->m, 0, 3, 9000, NULL, 0), 0);
	assert_int_equal(hako_rd_master_barrier(f->m), 7000);
	ack_all(f, 1);
	assert_int_equal(hako_rd_master_barrier(f->m), 9000);
	ack_all(f, 0);
	assert_int_equal(hako_rd_master_barrier(f->m), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_initial, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_handoff, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reclaim_after_window, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_next_lost, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner_lost, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner_lost_before_release, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_checkpoint, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_due_and_held_restart, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_barrier_lowest, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
