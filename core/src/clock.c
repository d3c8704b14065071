/* The world clock and the asset clocks.
 *
 * Rules (ARCHITECTURE section 2): the world advances T_c -> T_c + dT_c only if
 * T_c + dT_c - t_i <= Dmax for every registered asset i, and only once every asset has checked
 * in at the start barrier; an asset steps t_i -> t_i + dt_i only if t_i + dt_i <= T_c.
 *
 * In free-running mode nobody waits for a master: the asset that publishes its clock evaluates
 * the world rule and advances T_c with a compare-and-swap, so a lock-step round costs one
 * cache-line hand-off instead of two. With a real-time factor the master paces the world and
 * assets only wake it.
 */
#include <stdio.h>

#include "hako/log.h"
#include "hakoi/assert.h"
#include "internal.h"

/* 1 if T_c may move from `world` to `world + delta` now. */
static int world_may_advance(hako_domain_t *dom, hako_time_t world, hako_time_t delta,
                             hako_time_t dmax)
{
	struct hakoi_header *h = dom->hdr;
	hako_time_t stop_at = atomic_load(&h->stop_at);
	if (stop_at > 0 && world + delta > stop_at) {
		return 0; /* the master stops the run there */
	}
	/* The master stops the run before it clears the stop time: seen cleared, seen stopping. */
	if (atomic_load(&h->state) != HAKO_STATE_RUNNING) {
		return 0;
	}
	uint32_t hwm = hakoi_asset_hwm(dom);
	uint32_t seen = 0;
	for (uint32_t i = 0; i < hwm; i++) {
		struct hakoi_asset *a = &dom->assets[i];
		if (!atomic_load(&a->in_use)) {
			continue;
		}
		seen++;
		if (!atomic_load(&a->checked_in)) {
			return 0; /* start barrier */
		}
		if (world + delta - atomic_load(&a->time_usec) > dmax) {
			return 0;
		}
	}
	/* With no asset there is nothing to keep in step with; free-running would spin. */
	return seen > 0;
}

static int advance_from(hako_domain_t *dom, hako_time_t world, hako_time_t delta)
{
	struct hakoi_header *h = dom->hdr;
	int64_t expected = world; /* the segment's type: hako_time_t is Hakoniwa's long long */
	if (!atomic_compare_exchange_strong(&h->world_time, &expected, world + delta)) {
		return 0;
	}
	atomic_fetch_add_explicit(&h->world_steps, 1, memory_order_relaxed);
	hakoi_wake_stepped(dom, world + delta);
	hako_time_t stop_at = atomic_load_explicit(&h->stop_at, memory_order_relaxed);
	if (stop_at > 0 && world + 2 * delta > stop_at) {
		hakoi_wake_master(dom); /* no further step fits: the run may be complete */
	}
	return 1;
}

void hakoi_try_advance(hako_domain_t *dom)
{
	struct hakoi_header *h = dom->hdr;
	if (atomic_load(&h->state) != HAKO_STATE_RUNNING) {
		return;
	}
	if (atomic_load_explicit(&h->rtf_milli, memory_order_relaxed) != 0) {
		hakoi_wake_master(dom); /* the master paces; it may be waiting for this report */
		return;
	}
	hako_time_t delta = atomic_load_explicit(&h->delta_usec, memory_order_relaxed);
	hako_time_t dmax = atomic_load_explicit(&h->max_delay_usec, memory_order_relaxed);
	if (delta <= 0) {
		return; /* no master configured the clock yet */
	}
	for (;;) {
		hako_time_t world = atomic_load(&h->world_time);
		if (!world_may_advance(dom, world, delta, dmax)) {
			return;
		}
		/* A lost race means another process advanced: look again from the new time. */
		advance_from(dom, world, delta);
		if (atomic_load(&h->state) != HAKO_STATE_RUNNING) {
			return;
		}
	}
}

int hakoi_advance_once(hako_domain_t *dom)
{
	struct hakoi_header *h = dom->hdr;
	if (atomic_load(&h->state) != HAKO_STATE_RUNNING) {
		return 0;
	}
	hako_time_t delta = atomic_load(&h->delta_usec);
	hako_time_t world = atomic_load(&h->world_time);
	if (!world_may_advance(dom, world, delta, atomic_load(&h->max_delay_usec))) {
		return 0;
	}
	return advance_from(dom, world, delta);
}

static int mine(const hako_member_t *m)
{
	return atomic_load(&m->slot->in_use) && atomic_load(&m->slot->generation) == m->generation;
}

int hako_member_step_poll(hako_member_t *m)
{
	if (m == NULL || m->delta == 0) {
		return HAKO_EINVAL; /* a proxy is never stepped */
	}
	struct hakoi_asset *a = m->slot;
	uint32_t st = atomic_load(&m->dom->hdr->state);
	if (st != HAKO_STATE_RUNNING) {
		/* Runnable: started, waiting for the others' acknowledgement. */
		return st == HAKO_STATE_RUNNABLE && mine(m) ? HAKO_EAGAIN : HAKO_EINTR;
	}
	if (!atomic_load_explicit(&a->checked_in, memory_order_relaxed)) {
		if (!mine(m)) {
			return HAKO_EINTR;
		}
		atomic_store(&a->checked_in, 1);
		hako_member_heartbeat(m);
		hakoi_try_advance(m->dom); /* the last one in opens the barrier */
	}
	hako_time_t t = atomic_load_explicit(&a->time_usec, memory_order_relaxed);
	if (t + m->delta <= atomic_load(&m->dom->hdr->world_time)) {
		return 0;
	}
	return HAKO_EAGAIN;
}

static int may_step(void *arg)
{
	int r = hako_member_step_poll(arg);
	return r == HAKO_EAGAIN ? 0 : (r == 0 ? 1 : r);
}

/* Every 100 ms of waiting or stepping: heartbeat, and make sure the conductor still runs. */
static int step_slice(void *arg)
{
	hako_member_t *m = arg;
	struct hakoi_header *h = m->dom->hdr;
	hako_member_heartbeat(m);
	int alive = hakoi_master_alive(m->dom);
	if (alive && atomic_load(&h->master_running)) {
		return 0;
	}
	if (hakoi_lock(m->dom) == 0) {
		uint32_t st = atomic_load(&h->state);
		if (st != HAKO_STATE_ERROR && st != HAKO_STATE_STOPPED) {
			if (alive) {
				hakoi_set_error(m->dom, "conductor (pid %d) stopped its master",
				                h->creator_pid);
			} else {
				hakoi_set_error(m->dom, "conductor (pid %d) died", h->creator_pid);
			}
		}
		hakoi_unlock(m->dom);
	}
	return HAKO_EINTR;
}

/* Wait until m may step: spin while every asset has a CPU of its own; with more assets than
 * CPUs, yield the CPU to the others for a while (they are the ones that move the world), then
 * sleep on the world's futex word. Yielding pays only when the world moves within the budget:
 * after a longer wait (assets doing real work, a stalled world) the next wait sleeps at once,
 * until a wait is short again. */
static int step_wait(hako_member_t *m, hakoi_cond_fn slice, void *slice_arg)
{
	int r = may_step(m);
	if (r != 0) {
		return r == 1 ? 0 : r;
	}
	hako_time_t spin = hakoi_spin_budget(m->dom);
	hako_time_t start = hako_now_usec();
	if (spin == 0) {
		hako_time_t yield = hakoi_yield_budget(m->dom);
		if (m->last_wait_usec <= yield) {
			r = hakoi_yield_wait(may_step, m, yield);
		}
	}
	if (r == 0) {
		r = hakoi_wait(&m->dom->hdr->seq, &m->dom->hdr->waiters, may_step, m, spin, -1,
		               slice, slice_arg);
	}
	m->last_wait_usec = hako_now_usec() - start;
	return r == 1 ? 0 : r;
}

int hako_member_step_wait(hako_member_t *m)
{
	if (m == NULL || m->delta == 0) {
		return HAKO_EINVAL;
	}
	return step_wait(m, step_slice, m);
}

struct forced_stop {
	hako_member_t *m;
	int (*is_force_stop)(void);
};

/* step_slice, and the caller's own reason to stop (Hakoniwa's is_force_stop), looked at as
 * often: a forced stop ends a wait within one slice. */
static int step_slice_or_forced(void *arg)
{
	struct forced_stop *s = arg;
	int r = step_slice(s->m);
	if (r == 0 && s->is_force_stop()) {
		r = HAKO_EINTR;
	}
	return r;
}

int hakoi_member_step_wait_forced(hako_member_t *m, int (*is_force_stop)(void))
{
	if (is_force_stop == NULL) {
		return hako_member_step_wait(m);
	}
	if (m == NULL || m->delta == 0) {
		return HAKO_EINVAL;
	}
	if (is_force_stop()) {
		return HAKO_EINTR;
	}
	struct forced_stop s = {m, is_force_stop};
	return step_wait(m, step_slice_or_forced, &s);
}

void hako_member_step_done(hako_member_t *m)
{
	if (m == NULL) {
		return;
	}
	struct hakoi_asset *a = m->slot;
	if (!mine(m) || m->delta == 0) {
		return; /* removed (dead by liveness) meanwhile: the slot may be someone else's */
	}
	hako_time_t t = atomic_load_explicit(&a->time_usec, memory_order_relaxed) + m->delta;
	/* seq_cst store: pairs with the loads in world_may_advance of the other assets, so of two
	 * assets finishing together at least one sees both clocks and advances the world. */
	atomic_store(&a->time_usec, t);
	atomic_store_explicit(&a->steps, atomic_load_explicit(&a->steps, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
	hako_time_t now = hako_now_usec();
	atomic_store_explicit(&a->heartbeat, now, memory_order_relaxed);
	hakoi_try_advance(m->dom);
	hako_time_t stop_at = atomic_load_explicit(&m->dom->hdr->stop_at, memory_order_relaxed);
	if (stop_at > 0 && t + m->delta > stop_at) {
		hakoi_wake_master(m->dom); /* this asset is done: the run may be complete */
	}
	/* Assets that never sleep never reach the wait slices that look for a dead conductor. */
	if (now - m->last_master_check >= HAKOI_WAIT_SLICE_USEC) {
		m->last_master_check = now;
		step_slice(m);
	}
}

static hako_time_t floor_div(hako_time_t a, hako_time_t b)
{
	return a / b;
}

static hako_time_t ceil_div(hako_time_t a, hako_time_t b)
{
	return (a + b - 1) / b;
}

static hako_time_t gcd(hako_time_t a, hako_time_t b)
{
	while (b != 0) {
		hako_time_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Whether an asset at t_i (t_i mod delta = r) can take its next step: it needs T_c >= t_i + dt,
 * and T_c, a multiple of delta, may reach at most t_i + dmax. */
static int fits_at(hako_time_t r, hako_time_t dt, hako_time_t delta, hako_time_t dmax)
{
	return ceil_div(r + dt, delta) <= floor_div(r + dmax, delta);
}

int hako_step_fits(hako_time_t dt, hako_time_t delta, hako_time_t dmax, char *why, size_t len)
{
	if (dt < 1 || delta < 1 || dmax < delta || dt > HAKOI_MAX_STEP_USEC ||
	    dmax > HAKOI_MAX_STEP_USEC) {
		snprintf(why, len, "need 1 <= step, 1 <= world step <= max delay <= 2^40 us");
		return HAKO_EINVAL;
	}
	/* An asset starts at a multiple of delta and moves by dt, so t_i mod delta takes the
	 * multiples of g = gcd(dt, delta) below delta. fits_at changes value only where r + dt
	 * crosses a multiple of delta or r + dmax reaches one, so checking the members of that
	 * set next to each crossing (and both ends) checks them all. */
	hako_time_t g = gcd(dt, delta);
	hako_time_t b = dt % delta, d = dmax % delta;
	hako_time_t edges[] = {0, delta - g, delta - b, delta - b + 1, delta - d, delta - d - 1};
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		hako_time_t e = edges[i] < 0 ? 0 : edges[i] > delta - g ? delta - g : edges[i];
		hako_time_t lo = e / g * g, hi = ceil_div(e, g) * g;
		if (hi > delta - g) {
			hi = delta - g;
		}
		/* Members of the set: multiples of g in [0, delta - g] (g divides delta). */
		HAKO_ASSERT_MSG(lo % g == 0 && hi % g == 0 && 0 <= lo && lo <= hi &&
		                    hi <= delta - g,
		                "lo %lld hi %lld g %lld delta %lld", (long long)lo, (long long)hi,
		                (long long)g, (long long)delta);
		if (!fits_at(lo, dt, delta, dmax) || !fits_at(hi, dt, delta, dmax)) {
			snprintf(
			    why, len,
			    "a step of %lld us can never be taken with a world step of %lld us "
			    "and a max delay of %lld us: the world runs at most max delay ahead "
			    "of an asset, and an asset steps only to a world time already "
			    "reached (at %lld us past a world step it would need %lld us); "
			    "use a step <= max delay that is a multiple of the world step",
			    (long long)dt, (long long)delta, (long long)dmax, (long long)lo,
			    (long long)(ceil_div(lo + dt, delta) * delta - lo));
			return HAKO_EINVAL;
		}
	}
	return 0;
}

int hakoi_check_step(hako_domain_t *dom, const char *asset, hako_time_t dt)
{
	hako_time_t delta = atomic_load(&dom->hdr->delta_usec);
	hako_time_t dmax = atomic_load(&dom->hdr->max_delay_usec);
	char why[400];
	if (delta <= 0) {
		return 0; /* checked again at start */
	}
	if (hako_step_fits(dt, delta, dmax, why, sizeof(why)) != 0) {
		HAKO_ERROR("domain '%s': asset '%s': %s", dom->name, asset, why);
		return HAKO_EINVAL;
	}
	return 0;
}
