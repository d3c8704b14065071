/* The master ("conductor inside the core"): liveness of the assets, real-time pacing of the
 * world clock, and the clock parameters. It sleeps on its own futex word, so free-running
 * steps never wake it. */
#include <math.h>
#include <stdlib.h>

#include "hako/log.h"
#include "internal.h"

struct hako_master {
	hako_domain_t *dom;
	pthread_t thread;
	_Atomic int stop;
};

/* `seen` is the futex word as read before the conditions were checked: a report that bumps it
 * afterwards, while no waiter was announced yet, makes the wait return at once. */
static void master_sleep(hako_master_t *m, hako_time_t usec, uint32_t seen)
{
	struct hakoi_header *h = m->dom->hdr;
	atomic_fetch_add(&h->master_waiters, 1);
	if (!atomic_load(&m->stop) && usec > 0) {
		hakoi_futex_wait(&h->master_seq, seen, usec);
	}
	atomic_fetch_sub(&h->master_waiters, 1);
}

/* At the stop time (the world cannot take another step without passing it, so a stop time
 * that is not a multiple of the world step stops at the last step before it): no asset can
 * step any more (t_i + dt_i > stop_at for all i), so every
 * asset has run exactly the steps that fit before the stop time. A proxy (another node's
 * clock, stepped by no one here) is not waited for: that node stops at the same stop time
 * by itself (the conductor gives every node the server's). */
static int all_assets_done(hako_domain_t *dom, hako_time_t stop_at)
{
	uint32_t hwm = hakoi_asset_hwm(dom);
	for (uint32_t i = 0; i < hwm; i++) {
		struct hakoi_asset *a = &dom->assets[i];
		if (atomic_load(&a->in_use) && !atomic_load(&a->dead) && !atomic_load(&a->proxy) &&
		    atomic_load(&a->time_usec) + a->delta_usec <= stop_at) {
			return 0;
		}
	}
	return 1;
}

static void *master_main(void *arg)
{
	hako_master_t *m = arg;
	hako_domain_t *dom = m->dom;
	struct hakoi_header *h = dom->hdr;
	hako_time_t next_liveness = 0, next_tick = 0;
	while (!atomic_load(&m->stop)) {
		uint32_t seen = atomic_load(&h->master_seq);
		hako_time_t now = hako_now_usec();
		if (now >= next_liveness) {
			hakoi_check_liveness(dom, now);
			next_liveness = now + HAKOI_LIVENESS_PERIOD_USEC;
		}
		hako_time_t sleep_until = next_liveness;
		hako_time_t stop_at = atomic_load(&h->stop_at);
		if (stop_at > 0 && atomic_load(&h->state) == HAKO_STATE_RUNNING &&
		    atomic_load(&h->world_time) + atomic_load(&h->delta_usec) > stop_at &&
		    all_assets_done(dom, stop_at)) {
			HAKO_INFO("domain '%s': stop time %lld us reached", dom->name,
			          (long long)stop_at);
			/* The state first: an asset that reads the cleared stop time then sees
			 * that the run is stopping (world_may_advance) and takes no step past it.
			 */
			hako_domain_stop(dom);
			atomic_store(&h->stop_at, 0);
			continue;
		}
		uint64_t rtf_milli = atomic_load(&h->rtf_milli);
		if (rtf_milli != 0 && atomic_load(&h->state) == HAKO_STATE_RUNNING) {
			hako_time_t period =
			    atomic_load(&h->delta_usec) * 1000 / (hako_time_t)rtf_milli;
			if (period < 1) {
				period = 1;
			}
			if (next_tick == 0) {
				next_tick = now;
			}
			if (now >= next_tick) {
				if (hakoi_advance_once(dom)) {
					next_tick += period;
					/* After a stall (a slow asset) keep the pace from now on
					 * instead of running fast to catch up with the wall clock.
					 */
					if (now - next_tick > 100000) {
						next_tick = now;
					}
					continue;
				}
				/* Blocked by the rule: an asset's report wakes us. */
			} else if (next_tick < sleep_until) {
				sleep_until = next_tick;
			}
		} else {
			next_tick = 0;
		}
		master_sleep(m, sleep_until - now, seen);
	}
	return NULL;
}

int hako_master_start(hako_domain_t *dom, const hako_master_config_t *cfg, hako_master_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (dom == NULL || cfg == NULL || out == NULL) {
		return HAKO_EINVAL;
	}
	if (!dom->is_creator) {
		HAKO_ERROR("domain '%s': the master runs in the process that created the domain",
		           dom->name);
		return HAKO_EPERM;
	}
	if (cfg->delta_usec < 1 || cfg->delta_usec > HAKOI_MAX_STEP_USEC ||
	    cfg->max_delay_usec < cfg->delta_usec || cfg->max_delay_usec > HAKOI_MAX_STEP_USEC ||
	    !(cfg->real_time_factor >= 0.0) || cfg->real_time_factor > 1e6 ||
	    (cfg->real_time_factor > 0.0 && cfg->real_time_factor < 0.001)) {
		HAKO_ERROR(
		    "master: need 1 us <= delta <= max_delay <= 2^40 us, real_time_factor 0 or "
		    "in [0.001, 1e6] "
		    "(got %lld, %lld, %g)",
		    (long long)cfg->delta_usec, (long long)cfg->max_delay_usec,
		    cfg->real_time_factor);
		return HAKO_EINVAL;
	}
	if (atomic_exchange(&dom->hdr->master_running, 1) != 0) {
		return HAKO_EBUSY;
	}
	hako_master_t *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		atomic_store(&dom->hdr->master_running, 0);
		return HAKO_ENOMEM;
	}
	m->dom = dom;
	atomic_store(&dom->hdr->delta_usec, cfg->delta_usec);
	atomic_store(&dom->hdr->max_delay_usec, cfg->max_delay_usec);
	atomic_store(&dom->hdr->rtf_milli, (uint64_t)llround(cfg->real_time_factor * 1000.0));
	if (pthread_create(&m->thread, NULL, master_main, m) != 0) {
		atomic_store(&dom->hdr->master_running, 0);
		free(m);
		return HAKO_ENOMEM;
	}
	HAKO_INFO("domain '%s': master started (delta %lld us, max delay %lld us, factor %g)",
	          dom->name, (long long)cfg->delta_usec, (long long)cfg->max_delay_usec,
	          cfg->real_time_factor);
	hakoi_log_event(dom, "master started: delta %lld us, max delay %lld us, factor %g",
	                (long long)cfg->delta_usec, (long long)cfg->max_delay_usec,
	                cfg->real_time_factor);
	*out = m;
	return 0;
}

void hako_master_stop(hako_master_t *m)
{
	if (m == NULL) {
		return;
	}
	atomic_store(&m->stop, 1);
	hakoi_wake_master(m->dom);
	pthread_join(m->thread, NULL);
	atomic_store(&m->dom->hdr->master_running, 0);
	hakoi_log_event(m->dom, "master stopped");
	free(m);
}
