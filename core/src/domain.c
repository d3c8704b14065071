/* The simulation state machine of a domain: start / stop / reset with acknowledgement by every
 * asset, Error with a reason, and the liveness of registered assets. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hako/log.h"
#include "hakoi/assert.h"
#include "internal.h"

const char *hako_state_name(int state)
{
	static const char *const names[] = {"stopped",  "runnable",  "running",
	                                    "stopping", "resetting", "error"};
	if (state < 0 || state > HAKO_STATE_ERROR) {
		return "unknown";
	}
	return names[state];
}

void hakoi_wake_assets(hako_domain_t *dom)
{
	hakoi_notify(&dom->hdr->seq, &dom->hdr->waiters);
	hakoi_notify(&dom->hdr->watch_seq, &dom->hdr->watch_waiters);
}

__thread int hakoi_unwatched;

void hakoi_wake_stepped(hako_domain_t *dom, hako_time_t world)
{
	struct hakoi_header *h = dom->hdr;
	hakoi_notify(&h->seq, &h->waiters);
	if (hakoi_unwatched) {
		return; /* the caller sends the world time itself */
	}
	/* The watchers only once the world passed the lowest of their thresholds; then the
	 * threshold is cleared and each one that waits on sets its own again. */
	if (atomic_load(&h->watch_waiters) != 0 && world > atomic_load(&h->watch_beyond)) {
		atomic_store(&h->watch_beyond, INT64_MAX);
		hakoi_notify(&h->watch_seq, &h->watch_waiters);
	}
}

void hakoi_wake_master(hako_domain_t *dom)
{
	hakoi_notify(&dom->hdr->master_seq, &dom->hdr->master_waiters);
}

/* The state machine (ARCHITECTURE section 2): Stopped -> Runnable -> Running -> Stopping ->
 * Stopped, and a stop while Runnable; Stopped or Error -> Resetting -> Stopped; any -> Error. */
static int transition_legal(uint32_t from, uint32_t to)
{
	switch (to) {
	case HAKO_STATE_RUNNABLE: return from == HAKO_STATE_STOPPED;
	case HAKO_STATE_RUNNING: return from == HAKO_STATE_RUNNABLE;
	case HAKO_STATE_STOPPING: return from == HAKO_STATE_RUNNABLE || from == HAKO_STATE_RUNNING;
	case HAKO_STATE_STOPPED: return from == HAKO_STATE_STOPPING || from == HAKO_STATE_RESETTING;
	case HAKO_STATE_RESETTING: return from == HAKO_STATE_STOPPED || from == HAKO_STATE_ERROR;
	case HAKO_STATE_ERROR: return 1;
	default: return 0;
	}
}

/* Lock held; `from` is the state the caller found under it. */
static void set_state(hako_domain_t *dom, uint32_t from, uint32_t state)
{
	HAKO_ASSERT(hakoi_lock_held(dom));
	HAKO_ASSERT_MSG(transition_legal(from, state), "%s -> %s", hako_state_name((int)from),
	                hako_state_name((int)state));
	uint32_t old = atomic_exchange(&dom->hdr->state, state);
	if (old != state) {
		HAKO_INFO("domain '%s': %s -> %s", dom->name, hako_state_name((int)old),
		          hako_state_name((int)state));
		hakoi_log_event(dom, "%s -> %s", hako_state_name((int)old),
		                hako_state_name((int)state));
	}
	hakoi_wake_assets(dom);
	hakoi_wake_master(dom);
}

void hakoi_publish_event(hako_domain_t *dom, uint32_t event)
{
	HAKO_ASSERT(hakoi_lock_held(dom));
	HAKO_ASSERT_MSG(event > HAKO_EVENT_NONE && event <= HAKO_EVENT_ERROR, "event %u", event);
	uint32_t hwm = hakoi_asset_hwm(dom);
	for (uint32_t i = 0; i < hwm; i++) {
		struct hakoi_asset *a = &dom->assets[i];
		if (atomic_load(&a->in_use) && !atomic_load(&a->dead)) {
			atomic_store(&a->feedback, 0);
			atomic_store(&a->event, event);
		}
	}
}

static int all_acked(hako_domain_t *dom)
{
	uint32_t hwm = hakoi_asset_hwm(dom);
	for (uint32_t i = 0; i < hwm; i++) {
		struct hakoi_asset *a = &dom->assets[i];
		if (atomic_load(&a->in_use) && !atomic_load(&a->dead) &&
		    !atomic_load(&a->feedback)) {
			return 0;
		}
	}
	return 1;
}

static void reset_clocks(hako_domain_t *dom)
{
	struct hakoi_header *h = dom->hdr;
	atomic_store(&h->world_time, 0);
	atomic_store(&h->world_steps, 0);
	atomic_store(&h->stop_at, 0);
	uint32_t hwm = hakoi_asset_hwm(dom);
	for (uint32_t i = 0; i < hwm; i++) {
		atomic_store(&dom->assets[i].time_usec, 0);
		atomic_store(&dom->assets[i].steps, 0);
		atomic_store(&dom->assets[i].checked_in, 0);
	}
	hakoi_channels_reset(dom);
}

void hakoi_try_transition(hako_domain_t *dom)
{
	HAKO_ASSERT(hakoi_lock_held(dom));
	uint32_t st = atomic_load(&dom->hdr->state);
	if (st != HAKO_STATE_RUNNABLE && st != HAKO_STATE_STOPPING && st != HAKO_STATE_RESETTING) {
		return;
	}
	if (!all_acked(dom)) {
		return;
	}
	switch (st) {
	case HAKO_STATE_RUNNABLE:
		set_state(dom, st, HAKO_STATE_RUNNING);
		/* Whoever checks in last at the barrier advances the clock; with no asset at all
		 * nobody would, and the paced master does it on its own. */
		hakoi_try_advance(dom);
		break;
	case HAKO_STATE_STOPPING: set_state(dom, st, HAKO_STATE_STOPPED); break;
	case HAKO_STATE_RESETTING:
		reset_clocks(dom);
		atomic_fetch_add(&dom->hdr->reset_count, 1);
		set_state(dom, st, HAKO_STATE_STOPPED);
		break;
	}
}

void hakoi_set_error(hako_domain_t *dom, const char *fmt, ...)
{
	HAKO_ASSERT(hakoi_lock_held(dom));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dom->hdr->error_reason, sizeof(dom->hdr->error_reason), fmt, ap);
	va_end(ap);
	HAKO_ERROR("domain '%s': error: %s", dom->name, dom->hdr->error_reason);
	hakoi_log_event(dom, "error: %s", dom->hdr->error_reason);
	hakoi_publish_event(dom, HAKO_EVENT_ERROR);
	set_state(dom, atomic_load(&dom->hdr->state), HAKO_STATE_ERROR); /* from any state */
}

void hakoi_free_slot(hako_domain_t *dom, struct hakoi_asset *a)
{
	HAKO_ASSERT(hakoi_lock_held(dom));
	if (!atomic_load(&a->in_use)) {
		return;
	}
	hakoi_log_event(dom, "asset '%.*s' (pid %d) unregistered", (int)sizeof(a->name) - 1,
	                a->name, a->pid);
	atomic_store(&a->event, HAKO_EVENT_NONE);
	atomic_store(&a->checked_in, 0);
	atomic_store(&a->dead, 0);
	atomic_fetch_add(&a->generation, 1);
	atomic_store(&a->in_use, 0);
	atomic_fetch_sub(&dom->hdr->asset_count, 1);
	if (atomic_load(&a->proxy)) {
		atomic_fetch_sub(&dom->hdr->proxy_count, 1);
	}
}

int hako_domain_state(hako_domain_t *dom)
{
	if (dom == NULL) {
		return HAKO_EINVAL;
	}
	return (int)atomic_load(&dom->hdr->state);
}

int hako_domain_set_stop_time(hako_domain_t *dom, hako_time_t world_usec)
{
	if (dom == NULL || world_usec < 0 || world_usec > HAKOI_MAX_TIME_USEC) {
		return HAKO_EINVAL;
	}
	atomic_store(&dom->hdr->stop_at, world_usec);
	hakoi_wake_master(dom);
	hakoi_wake_assets(dom);
	return 0;
}

hako_time_t hako_domain_stop_time(hako_domain_t *dom)
{
	return dom != NULL ? atomic_load(&dom->hdr->stop_at) : 0;
}

struct world_wait {
	hako_domain_t *dom;
	hako_time_t t;
};

static int world_reached(void *arg)
{
	struct world_wait *w = arg;
	if (atomic_load(&w->dom->hdr->world_time) >= w->t) {
		return 1;
	}
	uint32_t st = atomic_load(&w->dom->hdr->state);
	return st == HAKO_STATE_RUNNING || st == HAKO_STATE_RUNNABLE ? 0 : HAKO_EINTR;
}

int hako_domain_wait_world_time(hako_domain_t *dom, hako_time_t world_usec,
                                hako_time_t timeout_usec)
{
	if (dom == NULL) {
		return HAKO_EINVAL;
	}
	struct world_wait w = {dom, world_usec};
	int r = hakoi_wait(&dom->hdr->seq, &dom->hdr->waiters, world_reached, &w, 0, timeout_usec,
	                   NULL, NULL);
	return r == 1 ? 0 : r;
}

uint32_t hako_domain_reset_count(hako_domain_t *dom)
{
	return dom != NULL ? atomic_load(&dom->hdr->reset_count) : 0;
}

hako_time_t hako_domain_world_time(hako_domain_t *dom)
{
	return dom != NULL ? atomic_load(&dom->hdr->world_time) : 0;
}

/* Every registered asset's step fits the clock (an asset may have registered before the master
 * set it). Lock held. */
static int steps_fit(hako_domain_t *dom)
{
	HAKO_ASSERT(hakoi_lock_held(dom));
	uint32_t hwm = hakoi_asset_hwm(dom);
	for (uint32_t i = 0; i < hwm; i++) {
		struct hakoi_asset *a = &dom->assets[i];
		char name[HAKO_NAME_MAX];
		snprintf(name, sizeof(name), "%.*s", (int)sizeof(a->name) - 1, a->name);
		if (atomic_load(&a->in_use) && !atomic_load(&a->proxy) &&
		    hakoi_check_step(dom, name, a->delta_usec) != 0) {
			return HAKO_EINVAL;
		}
	}
	return 0;
}

int hako_domain_start(hako_domain_t *dom)
{
	if (dom == NULL) {
		return HAKO_EINVAL;
	}
	int r = hakoi_lock(dom);
	if (r != 0) {
		return r;
	}
	if (atomic_load(&dom->hdr->state) != HAKO_STATE_STOPPED) {
		r = HAKO_ESTATE;
	} else if (!hakoi_master_alive(dom)) {
		r = HAKO_ENOMASTER;
	} else if ((r = steps_fit(dom)) != 0) {
		/* logged: a run that could never advance is not started */
	} else {
		dom->hdr->error_reason[0] = '\0';
		uint32_t hwm = hakoi_asset_hwm(dom);
		for (uint32_t i = 0; i < hwm; i++) {
			atomic_store(&dom->assets[i].checked_in, 0); /* the start barrier */
		}
		hakoi_publish_event(dom, HAKO_EVENT_START);
		set_state(dom, HAKO_STATE_STOPPED, HAKO_STATE_RUNNABLE);
		hakoi_try_transition(dom);
	}
	hakoi_unlock(dom);
	return r;
}

int hako_domain_stop(hako_domain_t *dom)
{
	if (dom == NULL) {
		return HAKO_EINVAL;
	}
	int r = hakoi_lock(dom);
	if (r != 0) {
		return r;
	}
	uint32_t st = atomic_load(&dom->hdr->state);
	if (st != HAKO_STATE_RUNNING && st != HAKO_STATE_RUNNABLE) {
		r = HAKO_ESTATE;
	} else {
		hakoi_publish_event(dom, HAKO_EVENT_STOP);
		set_state(dom, st, HAKO_STATE_STOPPING);
		hakoi_try_transition(dom);
	}
	hakoi_unlock(dom);
	return r;
}

int hako_domain_reset(hako_domain_t *dom)
{
	if (dom == NULL) {
		return HAKO_EINVAL;
	}
	int r = hakoi_lock(dom);
	if (r != 0) {
		return r;
	}
	uint32_t st = atomic_load(&dom->hdr->state);
	if (st != HAKO_STATE_STOPPED && st != HAKO_STATE_ERROR) {
		r = HAKO_ESTATE;
	} else {
		if (st == HAKO_STATE_ERROR) {
			/* Dead assets leave now, so their names can register again. */
			uint32_t hwm = hakoi_asset_hwm(dom);
			for (uint32_t i = 0; i < hwm; i++) {
				struct hakoi_asset *a = &dom->assets[i];
				if (atomic_load(&a->in_use) &&
				    (atomic_load(&a->dead) ||
				     !hakoi_proc_alive(a->pid, a->start_time))) {
					HAKO_INFO("domain '%s': removing dead asset '%.*s'",
					          dom->name, (int)sizeof(a->name) - 1, a->name);
					hakoi_free_slot(dom, a);
				}
			}
			dom->hdr->error_reason[0] = '\0';
		}
		hakoi_publish_event(dom, HAKO_EVENT_RESET);
		set_state(dom, st, HAKO_STATE_RESETTING);
		hakoi_try_transition(dom);
	}
	hakoi_unlock(dom);
	return r;
}

uint32_t hako_domain_changes(hako_domain_t *dom)
{
	return dom != NULL ? atomic_load(&dom->hdr->seq) : 0;
}

struct change_wait {
	hako_domain_t *dom;
	uint32_t seen;
};

static int changed(void *arg)
{
	struct change_wait *w = arg;
	return atomic_load(&w->dom->hdr->seq) != w->seen;
}

int hako_domain_wait_change(hako_domain_t *dom, uint32_t seen, hako_time_t timeout_usec)
{
	if (dom == NULL) {
		return HAKO_EINVAL;
	}
	struct change_wait w = {dom, seen};
	int r = hakoi_wait(&dom->hdr->seq, &dom->hdr->waiters, changed, &w, 0, timeout_usec, NULL,
	                   NULL);
	return r < 0 ? r : 0;
}

uint32_t hako_domain_watch_changes(hako_domain_t *dom)
{
	return dom != NULL ? atomic_load(&dom->hdr->watch_seq) : 0;
}

void hako_domain_watch_wake(hako_domain_t *dom)
{
	if (dom != NULL) {
		hakoi_notify(&dom->hdr->watch_seq, &dom->hdr->watch_waiters);
	}
}

struct watch_wait {
	hako_domain_t *dom;
	uint32_t seen;
	hako_time_t beyond;
};

static int watched(void *arg)
{
	struct watch_wait *w = arg;
	struct hakoi_header *h = w->dom->hdr;
	/* Register the threshold (the lowest of the waiters wins) before reading the world: a
	 * step after this read sees it (hakoi_wake_stepped; all seq_cst). */
	int64_t cur = atomic_load(&h->watch_beyond);
	while (w->beyond < cur &&
	       !atomic_compare_exchange_weak(&h->watch_beyond, &cur, w->beyond)) {
	}
	return atomic_load(&h->watch_seq) != w->seen || atomic_load(&h->world_time) > w->beyond;
}

int hako_domain_wait_watch(hako_domain_t *dom, uint32_t seen, hako_time_t beyond,
                           hako_time_t timeout_usec)
{
	if (dom == NULL) {
		return HAKO_EINVAL;
	}
	struct watch_wait w = {dom, seen, beyond};
	int r = hakoi_wait(&dom->hdr->watch_seq, &dom->hdr->watch_waiters, watched, &w, 0,
	                   timeout_usec, NULL, NULL);
	return r < 0 ? r : 0;
}

int hako_domain_fail(hako_domain_t *dom, const char *reason)
{
	if (dom == NULL || reason == NULL) {
		return HAKO_EINVAL;
	}
	int r = hakoi_lock(dom);
	if (r != 0) {
		return r;
	}
	if (atomic_load(&dom->hdr->state) == HAKO_STATE_ERROR) {
		r = HAKO_ESTATE;
	} else {
		hakoi_set_error(dom, "%s", reason);
	}
	hakoi_unlock(dom);
	return r;
}

struct state_wait {
	hako_domain_t *dom;
	int state;
};

static int state_reached(void *arg)
{
	struct state_wait *w = arg;
	int st = (int)atomic_load(&w->dom->hdr->state);
	return st == w->state || (st == HAKO_STATE_ERROR && w->state != HAKO_STATE_ERROR);
}

int hako_domain_wait_state(hako_domain_t *dom, int state, hako_time_t timeout_usec)
{
	if (dom == NULL) {
		return HAKO_EINVAL;
	}
	struct state_wait w = {dom, state};
	int r = hakoi_wait(&dom->hdr->seq, &dom->hdr->waiters, state_reached, &w, 0, timeout_usec,
	                   NULL, NULL);
	if (r < 0) {
		return r;
	}
	return (int)atomic_load(&dom->hdr->state) == state ? 0 : HAKO_ESTATE;
}

int hako_domain_get_info(hako_domain_t *dom, hako_domain_info_t *info)
{
	if (dom == NULL || info == NULL) {
		return HAKO_EINVAL;
	}
	struct hakoi_header *h = dom->hdr;
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s", dom->name);
	info->layout_version = h->layout_version;
	info->max_assets = dom->max_assets;
	info->max_channels = dom->max_channels;
	info->arena_bytes = dom->arena_bytes;
	info->arena_used = atomic_load(&h->arena_used);
	info->segment_bytes = dom->size;
	info->asset_count = atomic_load(&h->asset_count);
	info->channel_count = hakoi_channel_count(dom);
	info->master_pid = h->creator_pid;
	info->master_alive = hakoi_master_alive(dom);
	info->master_running = info->master_alive && atomic_load(&h->master_running);
	info->stop_at = atomic_load(&h->stop_at);
	info->delta_usec = atomic_load(&h->delta_usec);
	info->max_delay_usec = atomic_load(&h->max_delay_usec);
	info->real_time_factor = (double)atomic_load(&h->rtf_milli) / 1000.0;
	info->heartbeat_timeout_usec = h->heartbeat_timeout_usec;
	info->liveness_policy = (hako_liveness_policy_t)h->liveness_policy;
	info->state = (int)atomic_load(&h->state);
	info->world_time = atomic_load(&h->world_time);
	info->world_steps = atomic_load(&h->world_steps);
	info->reset_count = atomic_load(&h->reset_count);
	if (hakoi_lock(dom) == 0) {
		snprintf(info->error_reason, sizeof(info->error_reason), "%.*s",
		         (int)sizeof(h->error_reason) - 1, h->error_reason);
		hakoi_unlock(dom);
	}
	return 0;
}

int hako_domain_list_assets(hako_domain_t *dom, hako_asset_info_t *out, int max, int *count)
{
	if (dom == NULL || (out == NULL && max > 0)) {
		return HAKO_EINVAL;
	}
	int n = 0;
	hako_time_t now = hako_now_usec();
	hako_time_t world = atomic_load(&dom->hdr->world_time);
	int r = hakoi_lock(dom);
	if (r != 0) {
		return r;
	}
	uint32_t hwm = hakoi_asset_hwm(dom);
	for (uint32_t i = 0; i < hwm; i++) {
		struct hakoi_asset *a = &dom->assets[i];
		if (!atomic_load(&a->in_use)) {
			continue;
		}
		if (n < max) {
			hako_asset_info_t *o = &out[n];
			memset(o, 0, sizeof(*o));
			snprintf(o->name, sizeof(o->name), "%.*s", (int)sizeof(a->name) - 1,
			         a->name);
			o->id = (int)i;
			o->pid = a->pid;
			o->alive =
			    !atomic_load(&a->dead) && hakoi_proc_alive(a->pid, a->start_time);
			o->time_usec = atomic_load(&a->time_usec);
			o->delta_usec = a->delta_usec;
			o->lag_usec = world - o->time_usec;
			o->heartbeat_age_usec = now - atomic_load(&a->heartbeat);
			o->steps = atomic_load(&a->steps);
			o->checked_in = (int)atomic_load(&a->checked_in);
			o->proxy = (int)atomic_load(&a->proxy);
			snprintf(o->note, sizeof(o->note), "%.*s", (int)sizeof(a->note) - 1,
			         a->note);
			o->event = (int)atomic_load(&a->event);
		}
		n++;
	}
	hakoi_unlock(dom);
	if (count != NULL) {
		*count = n;
	}
	return 0;
}

int hakoi_check_liveness(hako_domain_t *dom, hako_time_t now)
{
	struct hakoi_header *h = dom->hdr;
	int found = 0;
	if (hakoi_lock(dom) != 0) {
		return 0;
	}
	uint32_t st = atomic_load(&h->state);
	uint32_t hwm = hakoi_asset_hwm(dom);
	for (uint32_t i = 0; i < hwm; i++) {
		struct hakoi_asset *a = &dom->assets[i];
		if (!atomic_load(&a->in_use) || atomic_load(&a->dead)) {
			continue;
		}
		char why[96];
		if (!hakoi_proc_alive(a->pid, a->start_time)) {
			snprintf(why, sizeof(why), "process %d died", a->pid);
		} else if (h->heartbeat_timeout_usec > 0 && st != HAKO_STATE_STOPPED &&
		           now - atomic_load(&a->heartbeat) > h->heartbeat_timeout_usec) {
			snprintf(why, sizeof(why), "no heartbeat for %lld ms (process %d)",
			         (long long)((now - atomic_load(&a->heartbeat)) / 1000), a->pid);
		} else {
			continue;
		}
		found++;
		if (st == HAKO_STATE_STOPPED || h->liveness_policy == HAKO_LIVENESS_REMOVE) {
			HAKO_WARN("domain '%s': asset '%.*s' removed: %s", dom->name,
			          (int)sizeof(a->name) - 1, a->name, why);
			hakoi_log_event(dom, "asset '%.*s' removed: %s", (int)sizeof(a->name) - 1,
			                a->name, why);
			hakoi_free_slot(dom, a);
			hakoi_try_transition(dom);
			hakoi_try_advance(dom);
		} else {
			atomic_store(&a->dead, 1);
			if (st != HAKO_STATE_ERROR) {
				hakoi_set_error(dom, "asset '%.*s' is dead: %s",
				                (int)sizeof(a->name) - 1, a->name, why);
				st = HAKO_STATE_ERROR;
			}
		}
	}
	hakoi_unlock(dom);
	return found;
}
