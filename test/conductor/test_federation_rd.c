/* RD-Full across nodes, end to end: a server and two clients (real hako-conductor processes,
 * one domain each, rd_config_path in every conductor file), an executor asset on each client
 * hosting EU 0 (a deterministic model: its state is a function of its step count), hand-offs
 * requested from the server (hako_rd_full_request, what hako-rd move calls) while the
 * federation runs. Checked: each request is committed at a commit point ahead of every node,
 * the EU moves cli-01 -> cli-02 -> cli-01 -> cli-02 -> cli-01, the traces of both nodes pass
 * hako-rd check (one writer at any world time, every model step once), the final model state is the
 * one a run without hand-offs gives, and a request during a hand-off is refused with the
 * reason. Also: the owner's node killed at 20 moments of a hand-off (kill_trials), and the
 * server, the commit authority, killed (master_lost). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fed_util.h"
#include "hako/conductor.h"
#include "hako/rd_full.h"
#include "hako/log.h"
#include "hako/msg.h"
#include "hako/pdu.h"
#include "hako/rd.h"
#include "hako/rd_master.h"

#define SEC      1000000ll
#define DELTA    1000
#define DMAX     10000
#define MIN_RUN  (1 * SEC) /* world time the run goes on after the last hand-off */
#define EU       0
#define HANDOFFS 4

static fed_t F;
static char rd_path[600];
static hako_conductor_config_t *srv_cfg;

/* What the executors tell the test. */
struct exec_stats {
	_Atomic int ready;
	_Atomic int quit;
	_Atomic int owner; /* 1 while this node owns the EU */
	_Atomic int activations;
	_Atomic int releases;
	_Atomic long long last_step;
	_Atomic unsigned long long state; /* the model's state at last_step */
	_Atomic int error;
};
static struct exec_stats *xs[3];
static pid_t xpid[3];

/* The model: a value that depends on every step before it, so a step run twice or skipped
 * shows in the result. */
struct model {
	uint64_t step;
	uint64_t state;
};

static void model_step(struct model *m)
{
	m->step++;
	m->state = m->state * 6364136223846793005ull + 1442695040888963407ull + m->step;
}

#define PDUDEF                                                                                     \
	"{\"robots\": [{\"name\": \"eu\", \"shm_pdu_readers\": [], \"rpc_pdu_readers\": [],"       \
	" \"rpc_pdu_writers\": [], \"shm_pdu_writers\": ["                                         \
	"{\"type\": \"geometry_msgs/Twist\", \"org_name\": \"pos\", \"name\": \"eu_pos\","         \
	" \"channel_id\": 0, \"pdu_size\": 72, \"write_cycle\": 1, \"method_type\": \"SHM\"},"     \
	"{\"type\": \"hako_msgs/ExecutionUnitRuntimeStatus\", \"org_name\": \"status\","           \
	" \"name\": \"eu_status\", \"channel_id\": 1, \"pdu_size\": 128, \"write_cycle\": 1,"      \
	" \"method_type\": \"SHM\"},"                                                              \
	"{\"type\": \"hako_msgs/ExecutionUnitRuntimeContext\", \"org_name\": \"context\","         \
	" \"name\": \"eu_context\", \"channel_id\": 2, \"pdu_size\": 256, \"write_cycle\": 1,"     \
	" \"method_type\": \"SHM\"}]}]}\n"

#define RDCFG_T(timeout)                                                                           \
	"{\"mode\": \"full\", \"pdudef\": \"pdudef.json\",\n"                                      \
	" \"nodes\": [{\"id\": 1, \"name\": \"cli-01\"}, {\"id\": 2, \"name\": \"cli-02\"}],\n"    \
	" \"handoff_timeout_usec\": " #timeout ",\n"                                               \
	" \"execution_units\": [{\"id\": 0, \"name\": \"eu\", \"robot\": \"eu\","                  \
	" \"writes\": [\"pos\"], \"candidates\": [1, 2], \"initial_owner\": 1,"                    \
	" \"max_context_bytes\": 64, \"status\": \"status\", \"context\": \"context\"}]}\n"
#define RDCFG RDCFG_T(500000)

static int teardown(void **state)
{
	(void)state;
	hako_conductor_config_free(srv_cfg);
	srv_cfg = NULL;
	for (int i = 1; i < 3; i++) {
		if (xs[i] != NULL) {
			atomic_store(&xs[i]->quit, 1);
		}
	}
	fed_teardown(&F);
	return 0;
}

/* ---- the executor: an asset in node i's domain hosting EU 0 ---- */

static uint8_t g_node; /* the child's RD node id */

static void executor_main(void *arg)
{
	int i = (int)(intptr_t)arg;
	g_node = (uint8_t)i;
	struct exec_stats *st = xs[i];
	hako_domain_t *dom = NULL;
	hako_member_t *m = NULL;
	hako_rd_config_t *cfg = NULL;
	hako_rd_node_t *node = NULL;
	hako_error_t err;
	HTU_CHECK_RC(hako_domain_open(F.node[i].domain, &dom), 0);
	HTU_CHECK_RC(hako_member_register(dom, "executor", DELTA, &m), 0);
	HTU_CHECK_RC(hako_rd_config_load(rd_path, &cfg, &err), 0);
	char trace[700];
	snprintf(trace, sizeof(trace), "%s/trace-%d.jsonl", F.dir, i);
	HTU_CHECK_RC(hako_rd_node_open(dom, cfg, (uint8_t)i, trace, &node), 0);
	hako_msg_registry_t *reg = NULL;
	const hako_msg_type_t *twist = NULL;
	HTU_CHECK_RC(hako_msg_registry_create(&reg), 0);
	HTU_CHECK_RC(hako_msg_registry_get(reg, "geometry_msgs/Twist", &twist, &err), 0);
	struct model md = {0, 0};
	atomic_store(&st->ready, 1);
	int started = 0;
	while (!atomic_load(&st->quit)) {
		int ev = 0;
		int r = hako_member_wait_event(m, 100000, &ev);
		if (r == HAKO_ETIMEDOUT) {
			continue;
		}
		HTU_CHECK_RC(r, 0);
		if (ev != HAKO_EVENT_START) {
			if (ev != HAKO_EVENT_NONE) {
				hako_member_ack(m, ev);
			}
			continue;
		}
		hako_member_ack(m, ev);
		started = 1;
		while (hako_member_step_wait(m) == 0) {
			hako_time_t now = hako_member_time(m) + hako_member_delta(m);
			hako_rd_event_t rev;
			hako_rd_activation_t act;
			struct model got;
			HTU_CHECK_RC(hako_rd_poll(node, EU, now, &rev, &got, sizeof(got), &act), 0);
			hako_time_t upto = now;
			if (rev == HAKO_RD_EV_ACTIVATE) {
				if (act.ctx_len == 0) { /* a restart with no committed context */
					HTU_CHECK_RC(act.from, 0);
					got = (struct model){0, 0};
				}
				HTU_CHECK_RC(got.step, act.model_step);
				md = got;
				HTU_CHECK_RC(hako_rd_activate(node, EU, 1, now), 0);
				atomic_fetch_add(&st->activations, 1);
			} else if (rev == HAKO_RD_EV_COMMIT) {
				upto = act.release_time_usec;
			}
			if (hako_rd_is_owner(node, EU)) {
				atomic_store(&st->owner, 1);
				while ((hako_time_t)(md.step + 1) * DELTA <= upto) {
					model_step(&md);
					hako_rd_trace_step(node, EU, md.step,
					                   (hako_time_t)md.step * DELTA);
				}
				atomic_store(&st->last_step, (long long)md.step);
				atomic_store(&st->state, md.state);
				uint8_t pdu[72];
				hako_pdu_writer_t w;
				size_t len = 0;
				HTU_CHECK_RC(hako_pdu_writer_init(&w, twist, pdu, sizeof(pdu)), 0);
				double x = (double)md.step;
				memcpy(hako_pdu_base(pdu), &x, sizeof(x));
				HTU_CHECK_RC(hako_pdu_writer_finish(&w, &len), 0);
				HTU_CHECK_RC(hako_rd_write(node, EU, 0, pdu, len, upto), 0);
				if (rev == HAKO_RD_EV_COMMIT) {
					HTU_CHECK_RC(hako_rd_release(node, EU, 0, &md, sizeof(md),
					                             md.step, now),
					             0);
					atomic_fetch_add(&st->releases, 1);
					atomic_store(&st->owner, 0);
				}
			} else {
				atomic_store(&st->owner, 0);
			}
			hako_member_step_done(m);
		}
	}
	HTU_CHECK(started);
	hako_rd_node_close(node);
	hako_msg_registry_destroy(reg);
	hako_rd_config_free(cfg);
	hako_member_unregister(m);
	hako_domain_close(dom);
	_exit(0);
}

/* ---- the test ---- */

static int owner_node(void)
{
	int o1 = atomic_load(&xs[1]->owner), o2 = atomic_load(&xs[2]->owner);
	return o1 && !o2 ? 1 : o2 && !o1 ? 2 : 0;
}

static void cmd_ok(int i, const char *verb)
{
	char out[512];
	int rc = fed_hako_cmd(&F, i, verb, NULL, out, sizeof(out));
	if (rc != 0) {
		fail_msg("hako-cmd %s exited %d:\n%s", verb, rc, htu_slurp(out));
	}
}

/* F (fed_init done): the pdudef and RD config rdcfg next to the conductor files, which name it
 * (plus `more` fields in every node's; a server that drops a lost client when `more` is not
 * empty), every node started with an asset, and an executor on each client. */
static void start_federation(const char *rdcfg, const char *more)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/pdudef.json", F.dir);
	assert_int_equal(htu_write_file(path, PDUDEF), 0);
	snprintf(rd_path, sizeof(rd_path), "%s/rd.json", F.dir);
	assert_int_equal(htu_write_file(rd_path, rdcfg), 0);
	for (int i = 0; i < F.n; i++) {
		/* Next to the conductor files: resolved against their folder. */
		snprintf(F.node[i].extra, sizeof(F.node[i].extra),
		         "\"rd_config_path\": \"rd.json\"%s%s", more,
		         i == 0 && more[0] != '\0' ? ", \"on_client_loss\": \"drop\"" : "");
	}
	assert_int_equal(fed_start(&F, -1, 0), 0);
	for (int i = 0; i < F.n; i++) {
		assert_int_equal(fed_start_asset(&F, i), 0);
	}
	for (int i = 1; i < 3; i++) {
		xs[i] = htu_shared_alloc(sizeof(*xs[i]));
		assert_non_null(xs[i]);
		xpid[i] = htu_fork(executor_main, (void *)(intptr_t)i);
		assert_true(xpid[i] > 0);
		int ok;
		HTU_WAIT_UNTIL(ok, atomic_load(&xs[i]->ready), FED_WAIT_USEC);
		assert_true(ok);
	}
}

/* hako-rd check over both clients' traces: the counts, or a failure naming the first
 * violation (what: the scenario, for the message). */
static hako_rd_check_result_t check_traces(const char *what)
{
	char t1[700], t2[700];
	snprintf(t1, sizeof(t1), "%s/trace-1.jsonl", F.dir);
	snprintf(t2, sizeof(t2), "%s/trace-2.jsonl", F.dir);
	const char *paths[2] = {t1, t2};
	hako_rd_check_result_t res;
	hako_error_t err;
	assert_int_equal(hako_rd_check(paths, 2, &res, &err), 0);
	if (res.violations != 0) {
		fail_msg("%s: hako-rd check: %llu violations, first: %s", what,
		         (unsigned long long)res.violations, res.first_violation);
	}
	return res;
}

static void test_handoffs(void **state)
{
	(void)state;
	assert_int_equal(fed_init(&F, "rdfull", 2, DELTA, DMAX), 0);
	start_federation(RDCFG, "");
	hako_conductor_config_t *srv = NULL;
	hako_error_t err;
	assert_int_equal(hako_conductor_config_load(F.node[0].config, &srv, &err), 0);
	srv_cfg = srv; /* freed by teardown if a check fails */
	cmd_ok(0, "start");
	/* cli-01 owns the EU from the start. */
	int ok;
	HTU_WAIT_UNTIL(ok, owner_node() == 1 && atomic_load(&xs[1]->last_step) > 0, FED_WAIT_USEC);
	assert_true(ok);
	for (int k = 0; k < HANDOFFS; k++) {
		uint8_t to = (uint8_t)(k % 2 == 0 ? 2 : 1);
		hako_time_t asked = fed_world(&F, 0);
		hako_rd_commit_t c;
		char why[256];
		if (k == 0) {
			/* Node 2's executor held: the hand-off cannot complete meanwhile. */
			assert_int_equal(kill(xpid[2], SIGSTOP), 0);
		}
		int r;
		if (k == 1) {
			/* From the shell, through a client's conductor file, by names. */
			char out[700];
			const char *argv[] = {
			    HAKO_RD_EXE, "move",   "--conductor", F.node[1].config,
			    "eu",        "cli-01", NULL};
			r = fed_run(&F, out, sizeof(out), argv);
			const char *said = htu_slurp(out);
			if (r != 0 ||
			    strstr(said, "committed: EU eu to node 1 (cli-01) at epoch 2") ==
			        NULL) {
				fail_msg("hako-rd move exited %d:\n%s", r, said);
			}
			c.epoch = 2;
			c.commit_usec = asked + DMAX + 2 * DELTA; /* the trace checks it */
		} else {
			r = hako_rd_full_request(srv, EU, to, 5000, &c, why, sizeof(why));
		}
		if (r != 0) {
			fail_msg("request %d (to node %u): %s: %s", k, to, hako_strerror(r), why);
		}
		assert_int_equal(c.epoch, k + 1);
		/* The commit point is ahead of the request by Dmax and two steps, on a step. */
		assert_true(c.commit_usec >= asked + DMAX + 2 * DELTA);
		assert_int_equal(c.commit_usec % DELTA, 0);
		if (k == 0) {
			/* A hand-off during this one is refused, saying why. */
			r = hako_rd_full_request(srv, EU, 1, 5000, NULL, why, sizeof(why));
			assert_int_equal(r, HAKO_EBUSY);
			if (strstr(why, "being handed from node 1 to node 2") == NULL) {
				fail_msg("refusal: %s", why);
			}
			assert_int_equal(kill(xpid[2], SIGCONT), 0);
		}
		HTU_WAIT_UNTIL(ok, owner_node() == to && atomic_load(&xs[to]->activations) > k / 2,
		               FED_WAIT_USEC);
		if (!ok) {
			fail_msg("hand-off %d to node %u did not complete (owner %d, world %lld)",
			         k, to, owner_node(), (long long)fed_world(&F, 0));
		}
		/* Some world time in the new owner's hands before the next request. */
		hako_time_t w = fed_world(&F, 0);
		HTU_WAIT_UNTIL(ok, fed_world(&F, 0) >= w + 200000, FED_WAIT_USEC);
		assert_true(ok);
	}
	/* Refusals: the node it is on, a node that is no candidate. */
	char why[256];
	assert_int_equal(hako_rd_full_request(srv, EU, 1, 5000, NULL, why, sizeof(why)),
	                 HAKO_EEXIST);
	assert_int_equal(hako_rd_full_request(srv, EU, 9, 5000, NULL, why, sizeof(why)),
	                 HAKO_EINVAL);
	/* No stop time: however slow this process is against the free-running federation (a
	 * sanitizer build), the hand-offs above are not cut short. Then a while, then stop. */
	hako_time_t w = fed_world(&F, 0);
	HTU_WAIT_UNTIL(ok, fed_world(&F, 0) >= w + MIN_RUN, FED_WAIT_USEC);
	assert_true(ok);
	cmd_ok(0, "stop");
	HTU_WAIT_UNTIL(ok, fed_all_in(&F, HAKO_STATE_STOPPED), FED_WAIT_USEC * 2);
	assert_true(ok);
	for (int i = 1; i < 3; i++) {
		atomic_store(&xs[i]->quit, 1);
	}
	/* 1 -> 2 -> 1 -> 2 -> 1: each node released and activated twice. */
	for (int i = 1; i < 3; i++) {
		assert_int_equal(atomic_load(&xs[i]->releases), HANDOFFS / 2);
		assert_int_equal(atomic_load(&xs[i]->activations), HANDOFFS / 2);
	}
	/* The last owner's model ran every step once: the state a plain run gives. */
	long long steps = atomic_load(&xs[1]->last_step);
	assert_true(steps > MIN_RUN / DELTA);
	struct model ref = {0, 0};
	while ((long long)ref.step < steps) {
		model_step(&ref);
	}
	assert_int_equal(atomic_load(&xs[1]->state), ref.state);
	/* One writer at any world time, every step once, epochs one by one. */
	hako_rd_check_result_t res = check_traces("handoffs");
	assert_int_equal(res.handoffs, HANDOFFS);
	assert_int_equal(res.reclaims, 0);
	srv_cfg = NULL;
	hako_conductor_config_free(srv);
	F.passed = 1;
}

/* ---- the owner's node killed ---- */

#define TRIALS 20

/* One trial: a federation whose owner node (cli-01: its conductor, its executor, its asset)
 * is killed with SIGKILL at a moment that depends on `trial`: while it owns the EU; right
 * after a hand-off to cli-02 was requested; during a hand-off whose owner cannot release (its
 * executor held with SIGSTOP); or a few ms after the request. The EU must run again on cli-02
 * (a hand-off that completed, or a restart from the last committed context) within bounded
 * time, and the traces must show one writer at a time. */
static void kill_trial(int trial, int *restarts, int *handoffs)
{
	char name[32];
	snprintf(name, sizeof(name), "rdkill%d", trial);
	assert_int_equal(fed_init(&F, name, 2, DELTA, DMAX), 0);
	/* A lost node is found after peer_timeout_ms of silence: long enough that a loaded
	 * machine (CI runs tests side by side) does not take a slow live node for a dead one; with
	 * on_client_loss "drop" that node could not come back, and the EU would have no live
	 * candidate left. */
	start_federation(RDCFG_T(100000), ", \"heartbeat_ms\": 50, \"peer_timeout_ms\": 1500");
	hako_conductor_config_t *srv = NULL;
	hako_error_t err;
	assert_int_equal(hako_conductor_config_load(F.node[0].config, &srv, &err), 0);
	srv_cfg = srv; /* freed by teardown if a check fails */
	cmd_ok(0, "start");
	int ok;
	HTU_WAIT_UNTIL(ok, owner_node() == 1 && atomic_load(&xs[1]->last_step) > 50, FED_WAIT_USEC);
	assert_true(ok);
	int mode = trial % 4;
	if (mode == 2) {
		/* The owner cannot release: killed during the hand-off, before its context. */
		assert_int_equal(kill(xpid[1], SIGSTOP), 0);
	}
	if (mode >= 1) {
		char why[256];
		int r = hako_rd_full_request(srv, EU, 2, 5000, NULL, why, sizeof(why));
		if (r != 0) {
			fail_msg("trial %d: request: %s", trial, why);
		}
		if (mode == 3) {
			htu_sleep_usec((hako_time_t)(trial % 7) * 700);
		}
	}
	hako_time_t killed_at = fed_world(&F, 0);
	/* The node's conductor first: killed after its assets, it could see one dead and report
	 * an asset death, which stops the whole federation (a node that dies at once cannot). */
	fed_kill_node(&F, 1);
	kill(xpid[1], SIGKILL);
	fed_kill_asset(&F, 1);
	/* The EU runs again on cli-02: it owns it and steps on. */
	HTU_WAIT_UNTIL(ok, atomic_load(&xs[2]->owner) && atomic_load(&xs[2]->last_step) > 0,
	               FED_WAIT_USEC);
	if (!ok) {
		fail_msg(
		    "trial %d (mode %d): the EU did not run again on cli-02 (server world %lld, "
		    "killed at %lld)",
		    trial, mode, (long long)fed_world(&F, 0), (long long)killed_at);
	}
	long long from = atomic_load(&xs[2]->last_step);
	HTU_WAIT_UNTIL(ok, atomic_load(&xs[2]->last_step) > from + 100, FED_WAIT_USEC);
	assert_true(ok);
	cmd_ok(0, "stop");
	HTU_WAIT_UNTIL(ok, fed_state(&F, 0) == HAKO_STATE_STOPPED, FED_WAIT_USEC);
	atomic_store(&xs[2]->quit, 1);
	char what[64];
	snprintf(what, sizeof(what), "trial %d (mode %d)", trial, mode);
	hako_rd_check_result_t res = check_traces(what);
	assert_true(res.restarts + res.handoffs == 1);
	*restarts += (int)res.restarts;
	*handoffs += (int)res.handoffs;
	srv_cfg = NULL;
	hako_conductor_config_free(srv);
	F.passed = 1;
	fed_teardown(&F);
	for (int i = 1; i < 3; i++) {
		htu_shared_free(xs[i], sizeof(*xs[i]));
		xs[i] = NULL;
	}
}

static void test_kill_trials(void **state)
{
	(void)state;
	int restarts = 0, handoffs = 0;
	for (int t = 0; t < TRIALS; t++) {
		kill_trial(t, &restarts, &handoffs);
	}
	printf("%d trials: the EU ran again every time, one writer at a time; %d restarts from "
	       "the last committed context, %d hand-offs that completed before the kill\n",
	       TRIALS, restarts, handoffs);
	assert_true(restarts > 0);
}

/* ---- the master lost ---- */

/* The server (the commit authority) killed while cli-02 owns the EU: no hand-off starts (a
 * request gets no answer, saying so), the owner keeps the EU and the standby stays a standby
 * while both clients hold their clocks (the server's proxy stops them), and the traces stay
 * clean. */
static void test_master_lost(void **state)
{
	(void)state;
	assert_int_equal(fed_init(&F, "rdmaster", 2, DELTA, DMAX), 0);
	start_federation(RDCFG, ", \"heartbeat_ms\": 50, \"peer_timeout_ms\": 500");
	hako_conductor_config_t *srv = NULL;
	hako_error_t err;
	assert_int_equal(hako_conductor_config_load(F.node[0].config, &srv, &err), 0);
	srv_cfg = srv;
	cmd_ok(0, "start");
	int ok;
	HTU_WAIT_UNTIL(ok, owner_node() == 1 && atomic_load(&xs[1]->last_step) > 50, FED_WAIT_USEC);
	assert_true(ok);
	char why[256];
	hako_rd_commit_t c;
	int r = hako_rd_full_request(srv, EU, 2, 5000, &c, why, sizeof(why));
	if (r != 0) {
		fail_msg("request: %s: %s", hako_strerror(r), why);
	}
	HTU_WAIT_UNTIL(ok,
	               owner_node() == 2 && atomic_load(&xs[2]->last_step) > c.commit_usec / DELTA,
	               FED_WAIT_USEC);
	assert_true(ok);
	/* The server settled the hand-off (cli-01 knows it was released), then dies. */
	HTU_WAIT_UNTIL(ok, atomic_load(&xs[1]->releases) == 1, FED_WAIT_USEC);
	assert_true(ok);
	fed_kill_node(&F, 0);
	fed_kill_asset(&F, 0);
	/* No hand-off starts. */
	r = hako_rd_full_request(srv, EU, 1, 300, NULL, why, sizeof(why));
	assert_int_equal(r, HAKO_ETIMEDOUT);
	if (strstr(why, "no answer from the server") == NULL) {
		fail_msg("refusal without the reason: %s", why);
	}
	/* Both clients hold their clocks once they noticed; the owner keeps the EU meanwhile. */
	HTU_WAIT_UNTIL(ok, fed_stuck(&F, 1) && fed_stuck(&F, 2), FED_WAIT_USEC);
	assert_true(ok);
	long long held = atomic_load(&xs[2]->last_step);
	htu_sleep_usec(500000);
	assert_int_equal(owner_node(), 2);
	assert_int_equal(atomic_load(&xs[2]->last_step), held);
	assert_int_equal(atomic_load(&xs[2]->releases), 0);
	assert_int_equal(atomic_load(&xs[1]->activations), 0);
	for (int i = 1; i < 3; i++) {
		assert_int_equal(fed_state(&F, i), HAKO_STATE_RUNNING);
		assert_int_equal(atomic_load(&xs[i]->error), 0);
	}
	assert_int_equal(check_traces("master_lost").handoffs, 1);
	F.passed = 1;
}

int main(int argc, char **argv)
{
	htu_init();
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* One scenario by name (ctest runs each on its own), else all. */
	if (argc == 2 && strcmp(argv[1], "handoffs") == 0) {
		const struct CMUnitTest t[] = {cmocka_unit_test_teardown(test_handoffs, teardown)};
		return cmocka_run_group_tests_name("handoffs", t, NULL, NULL);
	}
	if (argc == 2 && strcmp(argv[1], "master_lost") == 0) {
		const struct CMUnitTest t[] = {
		    cmocka_unit_test_teardown(test_master_lost, teardown)};
		return cmocka_run_group_tests_name("master_lost", t, NULL, NULL);
	}
	if (argc == 2 && strcmp(argv[1], "kill_trials") == 0) {
		const struct CMUnitTest t[] = {
		    cmocka_unit_test_teardown(test_kill_trials, teardown)};
		return cmocka_run_group_tests_name("kill_trials", t, NULL, NULL);
	}
	const struct CMUnitTest all[] = {
	    cmocka_unit_test_teardown(test_handoffs, teardown),
	    cmocka_unit_test_teardown(test_kill_trials, teardown),
	    cmocka_unit_test_teardown(test_master_lost, teardown),
	};
	return cmocka_run_group_tests(all, NULL, NULL);
}
