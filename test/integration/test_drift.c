/* Clock drift across processes: a master (free running, dT_c = 1000, Dmax = 3000) and three
 * asset processes with dt = 1000 / 2000 / 1000 step for a few thousand world steps.
 *
 * What the rules guarantee (ARCHITECTURE section 2) and what is checked:
 *  - asset rule t_i + dt_i <= T_c when a step begins: each asset records (t_i, W) at every step,
 *    W read after the wait let it step, so W >= T_c then: t_i + dt_i <= W;
 *  - master rule T_c <= min t_j + Dmax at all times: at that W (before step_done, t_i fixed),
 *    W - t_i <= Dmax;
 *  - |t_i - t_j| <= Dmax: a monitor reads W1, all t_i (hako_domain_list_assets), W2. Clocks only
 *    grow, so each t_i read in between lies in [W1 - Dmax, W2], hence pairwise differences are
 *    <= Dmax + (W2 - W1): exact when the world did not move during the snapshot. After stop the
 *    state is frozen and the exact bound is checked once more. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako_test_util.h"

#define NASSETS 3
#define DELTA   1000
#define DMAX    3000
#define TARGET  20000000 /* world time to reach: 20000 world steps */
#define MAXREC  32768

struct rec {
	int64_t t; /* t_i when the step began */
	int64_t w; /* world time read right after the wait allowed the step */
};

struct trace {
	_Atomic int registered;
	_Atomic int done;
	_Atomic int quit; /* set by the test once it looked at the stopped domain */
	_Atomic int end_rc;
	_Atomic uint64_t n; /* steps (records beyond MAXREC are not stored) */
	struct rec r[MAXREC];
};

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_master_t *master;
	struct trace *tr; /* NASSETS, shared */
};

struct child {
	struct fx *f;
	int i;
};

static const hako_time_t deltas[NASSETS] = {1000, 2000, 1000};

static void asset_main(void *p)
{
	struct child *c = p;
	struct trace *tr = &c->f->tr[c->i];
	char name[16];
	snprintf(name, sizeof(name), "asset%d", c->i);
	hako_domain_t *dom;
	hako_member_t *m;
	HTU_CHECK_RC(hako_domain_open(c->f->name, &dom), 0);
	HTU_CHECK_RC(hako_member_register(dom, name, deltas[c->i], &m), 0);
	atomic_store(&tr->registered, 1);
	int ev = 0;
	HTU_CHECK_RC(hako_member_wait_event(m, HTU_TIMEOUT_USEC, &ev), 0);
	HTU_CHECK_RC(ev, HAKO_EVENT_START);
	HTU_CHECK_RC(hako_member_ack(m, ev), 0);
	int r;
	while ((r = hako_member_step_wait(m)) == 0) {
		uint64_t n = atomic_load(&tr->n);
		if (n < MAXREC) {
			tr->r[n].t = hako_member_time(m);
			tr->r[n].w = hako_domain_world_time(dom);
		}
		hako_member_step_done(m);
		atomic_store(&tr->n, n + 1);
	}
	atomic_store(&tr->end_rc, r);
	HTU_CHECK_RC(hako_member_wait_event(m, HTU_TIMEOUT_USEC, &ev), 0);
	HTU_CHECK_RC(ev, HAKO_EVENT_STOP);
	HTU_CHECK_RC(hako_member_ack(m, ev), 0);
	atomic_store(&tr->done, 1);
	while (!atomic_load(&tr->quit)) {
		htu_sleep_usec(1000);
	}
	hako_member_unregister(m);
	hako_domain_close(dom);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name("drift", f->name, sizeof(f->name));
	f->tr = htu_shared_alloc(NASSETS * sizeof(struct trace));
	assert_non_null(f->tr);
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 8;
	cfg.max_channels = 4;
	cfg.arena_bytes = 1 << 16;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
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
	htu_shared_free(f->tr, NASSETS * sizeof(struct trace));
	free(f);
	return 0;
}

static void check_snapshot(hako_time_t w1, const hako_asset_info_t *a, int n, hako_time_t w2)
{
	hako_time_t min = INT64_MAX, max = INT64_MIN;
	for (int i = 0; i < n; i++) {
		hako_time_t t = a[i].time_usec;
		if (t > w2 || t < w1 - DMAX) {
			fail_msg("%s: t=%lld outside [%lld - Dmax, %lld]", a[i].name, (long long)t,
			         (long long)w1, (long long)w2);
		}
		min = t < min ? t : min;
		max = t > max ? t : max;
	}
	if (max - min > DMAX + (w2 - w1)) {
		fail_msg("assets %lld apart with the world at %lld..%lld (Dmax %d)",
		         (long long)(max - min), (long long)w1, (long long)w2, DMAX);
	}
}

static void test_drift(void **state)
{
	struct fx *f = *state;
	struct child c[NASSETS];
	pid_t pids[NASSETS];
	for (int i = 0; i < NASSETS; i++) {
		c[i] = (struct child){f, i};
		pids[i] = htu_fork(asset_main, &c[i]);
		assert_true(pids[i] > 0);
	}
	hako_master_config_t mc = {DELTA, DMAX, 0};
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), 0);
	int ok;
	HTU_WAIT_UNTIL(ok,
	               atomic_load(&f->tr[0].registered) && atomic_load(&f->tr[1].registered) &&
	                   atomic_load(&f->tr[2].registered),
	               HTU_TIMEOUT_USEC);
	assert_true(ok);
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_RUNNING, HTU_TIMEOUT_USEC), 0);

	/* Monitor until the target world time. */
	long snapshots = 0, stable = 0;
	hako_time_t deadline = hako_now_usec() + 3 * HTU_TIMEOUT_USEC / 2;
	for (;;) {
		hako_asset_info_t a[NASSETS];
		int n = 0;
		hako_time_t w1 = hako_domain_world_time(f->dom);
		assert_int_equal(hako_domain_list_assets(f->dom, a, NASSETS, &n), 0);
		hako_time_t w2 = hako_domain_world_time(f->dom);
		assert_int_equal(n, NASSETS);
		check_snapshot(w1, a, n, w2);
		snapshots++;
		stable += w1 == w2;
		if (w2 >= TARGET) {
			break;
		}
		if (hako_now_usec() > deadline) {
			fail_msg("world time only reached %lld", (long long)w2);
		}
		htu_sleep_usec(200);
	}
	assert_int_equal(hako_domain_stop(f->dom), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);

	/* Frozen: the exact rules. */
	hako_asset_info_t a[NASSETS];
	int n = 0;
	hako_time_t w = hako_domain_world_time(f->dom);
	assert_int_equal(hako_domain_list_assets(f->dom, a, NASSETS, &n), 0);
	assert_int_equal(n, NASSETS);
	check_snapshot(w, a, n, w);
	hako_time_t min = INT64_MAX;
	for (int i = 0; i < n; i++) {
		min = a[i].time_usec < min ? a[i].time_usec : min;
	}
	assert_true(w <= min + DMAX);
	print_message("world %lld us after %lld snapshots (%ld with a still world)\n", (long long)w,
	              (long long)snapshots, stable);

	for (int i = 0; i < NASSETS; i++) {
		atomic_store(&f->tr[i].quit, 1);
	}
	/* Each asset saw its step wait end with EINTR, acked STOP and left cleanly. */
	for (int i = 0; i < NASSETS; i++) {
		assert_true(htu_join_child(pids[i], HTU_TIMEOUT_USEC));
		assert_int_equal(atomic_load(&f->tr[i].end_rc), HAKO_EINTR);
	}

	/* The traces. */
	for (int i = 0; i < NASSETS; i++) {
		struct trace *tr = &f->tr[i];
		uint64_t steps = atomic_load(&tr->n);
		assert_int_equal(atomic_load(&tr->done), 1);
		if ((hako_time_t)steps * deltas[i] < TARGET - DMAX) {
			fail_msg("asset%d made only %llu steps", i, (unsigned long long)steps);
		}
		uint64_t nrec = steps < MAXREC ? steps : MAXREC;
		for (uint64_t k = 0; k < nrec; k++) {
			const struct rec *r = &tr->r[k];
			if (r->t != (hako_time_t)k * deltas[i]) {
				fail_msg("asset%d step %llu began at %lld", i,
				         (unsigned long long)k, (long long)r->t);
			}
			if (r->t + deltas[i] > r->w) {
				fail_msg("asset%d stepped from %lld by %lld with the world at %lld",
				         i, (long long)r->t, (long long)deltas[i], (long long)r->w);
			}
			if (r->w - r->t > DMAX) {
				fail_msg("asset%d at %lld lagged the world %lld by more than Dmax",
				         i, (long long)r->t, (long long)r->w);
			}
		}
	}
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_drift, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
