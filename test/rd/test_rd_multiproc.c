/* Two host processes (fork) hosting the same EU in lock-step: a deterministic model (x moves
 * at +-2 m/s between 0 and 2 m, 1 ms steps) handed back and forth by the boundary trigger at
 * x = 1 m. Afterwards the traces pass hako_rd_check, every model step ran exactly once, and
 * the trajectory is bit for bit the one of a single process without RD.
 *
 * Second case: the standby dies (SIGKILL) when it is offered the EU; with the core's liveness
 * policy "remove" the run goes on, the owner takes the EU back at its timeout, and the trace
 * never shows two owners.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako/log.h"
#include "hako/msg.h"
#include "hako/pdu.h"
#include "hako/rd.h"
#include "hako_test_util.h"

#ifndef HAKO_RD_TEST_DATA
#define HAKO_RD_TEST_DATA "data"
#endif

#define DELTA     1000
#define EU        0
#define POS       0
#define SPEED     4.0 /* the trigger's v_max in data/rd.json */
#define MAX_STEPS 20000

/* The model and its whole state: the RD context. */
struct model {
	uint32_t version;
	uint32_t pad;
	uint64_t step;
	double x;
	double v;
};

static void model_step(struct model *m)
{
	m->x += m->v * (double)DELTA / 1e6;
	if (m->x >= 2.0) {
		m->x = 2.0;
		m->v = -SPEED;
	} else if (m->x <= 0.0) {
		m->x = 0.0;
		m->v = SPEED;
	}
	m->step++;
}

struct shared {
	_Atomic int ready[3];
	_Atomic int runs[MAX_STEPS + 1]; /* how often model step k ran */
	double xs[MAX_STEPS + 1];
	_Atomic int activations[3];
	_Atomic int reclaims[3];
};

struct host_args {
	hako_time_t dmax;
	const char *domain;
	const char *trace;
	uint8_t node;
	int die_on_activate;
	struct shared *sh;
};

static void host_main(void *arg)
{
	struct host_args *a = arg;
	hako_domain_t *dom;
	hako_member_t *m;
	hako_rd_config_t *cfg;
	hako_rd_node_t *node;
	char name[16];
	snprintf(name, sizeof(name), "host-%u", a->node);
	HTU_CHECK_RC(hako_domain_open(a->domain, &dom), 0);
	HTU_CHECK_RC(hako_member_register(dom, name, DELTA, &m), 0);
	HTU_CHECK_RC(hako_rd_config_load(HAKO_RD_TEST_DATA "/rd.json", &cfg, NULL), 0);
	HTU_CHECK_RC(hako_rd_node_open(dom, cfg, a->node, a->trace, &node), 0);
	hako_msg_registry_t *reg;
	const hako_msg_type_t *twist;
	HTU_CHECK_RC(hako_msg_registry_create(&reg), 0);
	HTU_CHECK_RC(hako_msg_registry_get(reg, "geometry_msgs/Twist", &twist, NULL), 0);
	atomic_store(&a->sh->ready[a->node], 1);

	int ev = 0;
	HTU_CHECK_RC(hako_member_wait_event(m, HTU_TIMEOUT_USEC, &ev), 0);
	HTU_CHECK_RC(ev, HAKO_EVENT_START);
	HTU_CHECK_RC(hako_member_ack(m, HAKO_EVENT_START), 0);

	struct model model = {1, 0, 0, 0.0, SPEED};
	hako_rd_trigger_state_t trig;
	hako_rd_trigger_reset(&trig, model.x, 0);
	uint8_t ctx[4096];
	while (hako_member_step_wait(m) == 0) {
		hako_time_t now = hako_member_time(m) + DELTA;
		hako_rd_event_t rev;
		hako_rd_activation_t act;
		HTU_CHECK_RC(hako_rd_poll(node, EU, now, &rev, ctx, sizeof(ctx), &act), 0);
		if (rev == HAKO_RD_EV_ACTIVATE) {
			if (a->die_on_activate) {
				raise(SIGKILL);
			}
			int ok = act.ctx_len == sizeof(model);
			if (ok) {
				memcpy(&model, ctx, sizeof(model));
				ok = model.version == 1 && model.step == act.model_step;
			}
			HTU_CHECK_RC(hako_rd_activate(node, EU, ok, now), 0);
			HTU_CHECK(ok);
			hako_rd_trigger_reset(&trig, model.x, now);
			atomic_fetch_add(&a->sh->activations[a->node], 1);
		} else if (rev == HAKO_RD_EV_RECLAIMED) {
			hako_rd_trigger_reset(&trig, model.x, now);
			atomic_fetch_add(&a->sh->reclaims[a->node], 1);
		}
		if (hako_rd_is_owner(node, EU)) {
			/* every model step up to this world time, the missed ones included */
			while ((hako_time_t)(model.step + 1) * DELTA <= now) {
				model_step(&model);
				HTU_CHECK(model.step <= MAX_STEPS);
				atomic_fetch_add(&a->sh->runs[model.step], 1);
				a->sh->xs[model.step] = model.x;
				hako_rd_trace_step(node, EU, model.step,
				                   (hako_time_t)model.step * DELTA);
			}
			uint8_t pdu[128];
			hako_pdu_writer_t w;
			size_t len;
			hako_pdu_writer_init(&w, twist, pdu, sizeof(pdu));
			memcpy(hako_pdu_base(pdu), &model.x, sizeof(double));
			HTU_CHECK_RC(hako_pdu_writer_finish(&w, &len), 0);
			HTU_CHECK_RC(hako_rd_write(node, EU, POS, pdu, len, now), 0);
			uint8_t to = hako_rd_trigger_boundary(&cfg->trigger, &trig, a->node,
			                                      model.x, model.v, now, a->dmax);
			if (to != 0) {
				HTU_CHECK_RC(hako_rd_release(node, EU, to, &model, sizeof(model),
				                             model.step, now),
				             0);
			}
		}
		hako_member_step_done(m);
	}
	if (hako_member_wait_event(m, HTU_TIMEOUT_USEC, &ev) == 0 && ev != HAKO_EVENT_NONE) {
		hako_member_ack(m, ev);
	}
	hako_rd_node_close(node);
	hako_rd_config_free(cfg);
	hako_msg_registry_destroy(reg);
	hako_member_unregister(m);
	hako_domain_close(dom);
}

struct fx {
	char name[HAKO_NAME_MAX];
	char dir[256];
	char trace[2][300];
	hako_domain_t *dom;
	hako_master_t *master;
	struct shared *sh;
	struct host_args args[2];
	pid_t pid[2];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name("rdmp", f->name, sizeof(f->name));
	htu_tmpdir(f->dir, sizeof(f->dir));
	f->sh = htu_shared_alloc(sizeof(*f->sh));
	assert_non_null(f->sh);
	hako_domain_config_t dc;
	hako_domain_config_default(&dc);
	dc.max_assets = 4;
	dc.max_channels = 16;
	dc.arena_bytes = 1 << 20;
	dc.heartbeat_timeout_usec = 0; /* the pid check only: slow sanitizer runs are fine */
	dc.liveness_policy = HAKO_LIVENESS_REMOVE;
	assert_int_equal(hako_domain_create(f->name, &dc, &f->dom), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	hako_master_stop(f->master);
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	htu_shared_free(f->sh, sizeof(*f->sh));
	htu_remove_tmpdirs();
	free(f);
	return 0;
}

/* Run both hosts until world time stop_usec, their clocks at most dmax apart. */
static void run(struct fx *f, hako_time_t dmax, int shared_trace, int kill_standby,
                hako_time_t stop_usec)
{
	for (int i = 0; i < 2; i++) {
		snprintf(f->trace[i], sizeof(f->trace[i]), "%s/trace-%d.jsonl", f->dir,
		         shared_trace ? 0 : i + 1);
		f->args[i] = (struct host_args){
		    dmax, f->name, f->trace[i], (uint8_t)(i + 1), kill_standby && i == 1, f->sh};
		f->pid[i] = htu_fork(host_main, &f->args[i]);
		assert_true(f->pid[i] > 0);
	}
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&f->sh->ready[1]) && atomic_load(&f->sh->ready[2]),
	               HTU_TIMEOUT_USEC);
	assert_true(ok);
	hako_master_config_t mc = {DELTA, dmax, 0};
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), 0);
	assert_int_equal(hako_domain_set_stop_time(f->dom, stop_usec), 0);
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_RUNNING, HTU_TIMEOUT_USEC), 0);
	HTU_WAIT_UNTIL(ok, hako_domain_state(f->dom) == HAKO_STATE_STOPPED, 60000000);
	if (!ok) {
		fail_msg("the run did not stop (state %s, world time %lld us)",
		         hako_state_name(hako_domain_state(f->dom)),
		         (long long)hako_domain_world_time(f->dom));
	}
}

/* Every model step from 1 to the last one ran once, at the reference trajectory; returns the
 * last step. */
static uint64_t check_model(struct fx *f)
{
	struct model ref = {1, 0, 0, 0.0, SPEED};
	uint64_t last = 0;
	for (uint64_t k = 1; k <= MAX_STEPS; k++) {
		if (atomic_load(&f->sh->runs[k]) != 0) {
			last = k;
		}
	}
	for (uint64_t k = 1; k <= last; k++) {
		model_step(&ref);
		int runs = atomic_load(&f->sh->runs[k]);
		if (runs != 1) {
			fail_msg("model step %llu ran %d times", (unsigned long long)k, runs);
		}
		if (memcmp(&f->sh->xs[k], &ref.x, sizeof(double)) != 0) {
			fail_msg("model step %llu: x = %.17g, the run without RD has %.17g",
			         (unsigned long long)k, f->sh->xs[k], ref.x);
		}
	}
	return last;
}

static hako_rd_check_result_t check_traces(struct fx *f, size_t n)
{
	const char *paths[2] = {f->trace[0], f->trace[1]};
	hako_rd_check_result_t res;
	hako_error_t err;
	int r = hako_rd_check(paths, n, &res, &err);
	if (r != 0) {
		fail_msg("%s:%d: %s", err.file, err.line, err.message);
	}
	if (res.violations != 0) {
		fail_msg("%llu violations, first: %s", (unsigned long long)res.violations,
		         res.first_violation);
	}
	return res;
}

static void handoffs(struct fx *f, hako_time_t dmax)
{
	const hako_time_t stop = 8000000;
	run(f, dmax, 1, 0, stop);
	for (int i = 0; i < 2; i++) {
		assert_true(htu_join_child(f->pid[i], HTU_TIMEOUT_USEC));
	}
	uint64_t last = check_model(f);
	/* the run may end inside a hand-off: a few steps not run yet */
	assert_true(last + 20 >= (uint64_t)(stop / DELTA));
	hako_rd_check_result_t res = check_traces(f, 1);
	print_message("%llu hand-offs, %llu model steps, %llu writes\n",
	              (unsigned long long)res.handoffs, (unsigned long long)res.steps,
	              (unsigned long long)res.writes);
	assert_true(res.handoffs >= 10);
	assert_int_equal(res.reclaims, 0);
	assert_int_equal(res.steps, last);
	assert_int_equal(res.handoffs,
	                 atomic_load(&f->sh->activations[1]) + atomic_load(&f->sh->activations[2]));
}

/* Dmax = delta: the two hosts in strict lock-step. */
static void test_handoffs(void **state)
{
	handoffs(*state, DELTA);
}

/* Dmax = 20 deltas: the standby's clock may be behind or ahead of the owner's. */
static void test_handoffs_drift(void **state)
{
	handoffs(*state, 20 * DELTA);
}

static void test_standby_killed(void **state)
{
	struct fx *f = *state;
	const hako_time_t stop = 3000000;
	run(f, DELTA, 0, 1, stop);
	assert_true(htu_join_child(f->pid[0], HTU_TIMEOUT_USEC));
	int status = 0;
	assert_int_equal(htu_wait_child(f->pid[1], HTU_TIMEOUT_USEC, &status), 0);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	uint64_t last = check_model(f);
	/* the run may end while node 1 waits for the dead node: up to timeout + Dmax + delta */
	assert_true(last + 210 >= (uint64_t)(stop / DELTA));
	hako_rd_check_result_t res = check_traces(f, 2);
	print_message("%llu reclaims, %llu model steps\n", (unsigned long long)res.reclaims,
	              (unsigned long long)res.steps);
	assert_true(res.reclaims >= 1);
	assert_int_equal(res.handoffs, 0);
	assert_int_equal(res.reclaims, atomic_load(&f->sh->reclaims[1]));
	assert_int_equal(res.steps, last);
}

int main(void)
{
	htu_init();
	if (getenv("HAKO_LOG") == NULL) {
		hako_log_set_level(HAKO_LOG_ERROR);
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_handoffs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_handoffs_drift, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_standby_killed, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
