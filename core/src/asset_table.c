/* Members: assets registered in a domain, their events and acknowledgements. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hako/log.h"
#include "internal.h"

/* delta_usec 0: a proxy (hako_member_register_proxy). */
static int member_register(hako_domain_t *dom, const char *name, hako_time_t delta_usec,
                           hako_member_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (dom == NULL || out == NULL || delta_usec < 0 || delta_usec > HAKOI_MAX_STEP_USEC) {
		return HAKO_EINVAL;
	}
	int r = hakoi_valid_name(name, HAKO_NAME_MAX);
	if (r != 0) {
		return r;
	}
	hako_member_t *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		return HAKO_ENOMEM;
	}
	if ((r = hakoi_lock(dom)) != 0) {
		free(m);
		return r;
	}
	struct hakoi_header *h = dom->hdr;
	int free_slot = -1;
	if (!hakoi_master_alive(dom)) {
		r = HAKO_ENOMASTER;
		goto fail;
	}
	if (atomic_load(&h->state) != HAKO_STATE_STOPPED) {
		r = HAKO_ESTATE;
		goto fail;
	}
	if (delta_usec > 0 && (r = hakoi_check_step(dom, name, delta_usec)) != 0) {
		goto fail;
	}
	for (uint32_t i = 0; i < dom->max_assets; i++) {
		struct hakoi_asset *a = &dom->assets[i];
		if (!atomic_load(&a->in_use)) {
			if (free_slot < 0) {
				free_slot = (int)i;
			}
			continue;
		}
		if (strncmp(a->name, name, sizeof(a->name)) == 0) {
			if (hakoi_proc_alive(a->pid, a->start_time) && !atomic_load(&a->dead)) {
				r = HAKO_EEXIST;
				goto fail;
			}
			/* The holder of the name died: its slot is reclaimed. */
			HAKO_INFO("domain '%s': reclaiming asset '%s' of dead pid %d", dom->name,
			          name, a->pid);
			hakoi_free_slot(dom, a);
			if (free_slot < 0 || (int)i < free_slot) {
				free_slot = (int)i;
			}
		}
	}
	if (free_slot < 0) {
		r = HAKO_ENOSPC;
		goto fail;
	}
	struct hakoi_asset *a = &dom->assets[free_slot];
	snprintf(a->name, sizeof(a->name), "%s", name);
	a->pid = getpid();
	a->start_time = hakoi_proc_start_time(a->pid);
	a->delta_usec = delta_usec;
	atomic_store(&a->proxy, delta_usec == 0);
	a->note[0] = '\0';
	atomic_store(&a->event, HAKO_EVENT_NONE);
	atomic_store(&a->feedback, 0);
	atomic_store(&a->checked_in, 0);
	atomic_store(&a->dead, 0);
	atomic_store(&a->steps, 0);
	atomic_store(&a->heartbeat, hako_now_usec());
	/* A late joiner (stopped, not reset) starts at the current world time. */
	atomic_store(&a->time_usec, atomic_load(&h->world_time));
	atomic_store(&a->in_use, 1);
	atomic_fetch_add(&h->asset_count, 1);
	if (delta_usec == 0) {
		atomic_fetch_add(&h->proxy_count, 1);
	}
	if (atomic_load(&h->asset_hwm) < (uint32_t)free_slot + 1) {
		atomic_store(&h->asset_hwm, (uint32_t)free_slot + 1);
	}
	m->dom = dom;
	m->slot = a;
	m->id = free_slot;
	m->generation = atomic_load(&a->generation);
	m->delta = delta_usec;
	snprintf(m->name, sizeof(m->name), "%s", name);
	hakoi_unlock(dom);
	hakoi_wake_master(dom);
	HAKO_INFO("domain '%s': asset '%s' registered (id %d, delta %lld us)", dom->name, name,
	          free_slot, (long long)delta_usec);
	if (delta_usec > 0) {
		hakoi_log_event(dom, "asset '%s' registered (pid %d, id %d, step %lld us)", name,
		                a->pid, free_slot, (long long)delta_usec);
	} else {
		hakoi_log_event(dom, "proxy '%s' registered (pid %d, id %d)", name, a->pid,
		                free_slot);
	}
	*out = m;
	return 0;
fail:
	hakoi_unlock(dom);
	free(m);
	return r;
}

static int mine(const hako_member_t *m)
{
	return atomic_load(&m->slot->in_use) && atomic_load(&m->slot->generation) == m->generation;
}

void hako_member_unregister(hako_member_t *m)
{
	if (m == NULL) {
		return;
	}
	hako_domain_t *dom = m->dom;
	if (hakoi_lock(dom) == 0) {
		if (mine(m)) {
			hakoi_free_slot(dom, m->slot);
			/* A pending transition may have been waiting for this asset only. */
			hakoi_try_transition(dom);
			hakoi_try_advance(dom);
		}
		hakoi_unlock(dom);
	}
	hakoi_wake_master(dom);
	hakoi_wake_assets(dom);
	free(m);
}

int hako_member_register(hako_domain_t *dom, const char *name, hako_time_t delta_usec,
                         hako_member_t **out)
{
	if (delta_usec < 1) {
		if (out != NULL) {
			*out = NULL;
		}
		return HAKO_EINVAL;
	}
	return member_register(dom, name, delta_usec, out);
}

int hako_member_register_proxy(hako_domain_t *dom, const char *name, hako_member_t **out)
{
	return member_register(dom, name, 0, out);
}

int hako_member_set_time_unwatched(hako_member_t *m, hako_time_t t)
{
	hakoi_unwatched = 1;
	int r = hako_member_set_time(m, t);
	hakoi_unwatched = 0;
	return r;
}

int hako_member_set_time(hako_member_t *m, hako_time_t t)
{
	if (m == NULL || m->delta != 0 || t < 0 || t > HAKOI_MAX_TIME_USEC) {
		return HAKO_EINVAL;
	}
	if (!mine(m)) {
		return HAKO_ENOENT;
	}
	/* seq_cst, as an asset's step_done: pairs with the loads of world_may_advance. */
	atomic_store(&m->slot->time_usec, t);
	hako_member_heartbeat(m);
	hakoi_try_advance(m->dom);
	return 0;
}

int hako_member_set_note(hako_member_t *m, const char *note)
{
	if (m == NULL) {
		return HAKO_EINVAL;
	}
	int r = hakoi_lock(m->dom);
	if (r != 0) {
		return r;
	}
	if (!mine(m)) {
		r = HAKO_ENOENT;
	} else {
		snprintf(m->slot->note, sizeof(m->slot->note), "%s", note != NULL ? note : "");
	}
	hakoi_unlock(m->dom);
	return r;
}

const char *hako_member_name(const hako_member_t *m)
{
	return m != NULL ? m->name : "";
}

int hako_member_id(const hako_member_t *m)
{
	return m != NULL ? m->id : -1;
}

hako_time_t hako_member_time(const hako_member_t *m)
{
	return m != NULL ? atomic_load(&m->slot->time_usec) : 0;
}

hako_time_t hako_member_delta(const hako_member_t *m)
{
	return m != NULL ? m->delta : 0;
}

void hako_member_heartbeat(hako_member_t *m)
{
	if (m != NULL) {
		atomic_store_explicit(&m->slot->heartbeat, hako_now_usec(), memory_order_relaxed);
	}
}

int hako_member_event(hako_member_t *m)
{
	if (m == NULL) {
		return HAKO_EINVAL;
	}
	if (!mine(m)) {
		return HAKO_ENOENT;
	}
	return (int)atomic_load(&m->slot->event);
}

static int event_pending(void *arg)
{
	hako_member_t *m = arg;
	if (!mine(m)) {
		return HAKO_ENOENT;
	}
	return atomic_load(&m->slot->event) != HAKO_EVENT_NONE;
}

static int member_slice(void *arg)
{
	hako_member_t *m = arg;
	hako_member_heartbeat(m);
	if (!hakoi_master_alive(m->dom)) {
		return HAKO_ENOMASTER;
	}
	return 0;
}

int hako_member_wait_event(hako_member_t *m, hako_time_t timeout_usec, int *event)
{
	if (m == NULL) {
		return HAKO_EINVAL;
	}
	hako_member_heartbeat(m);
	int r = hakoi_wait(&m->dom->hdr->seq, &m->dom->hdr->waiters, event_pending, m, 0,
	                   timeout_usec, member_slice, m);
	if (r < 0) {
		return r;
	}
	if (event != NULL) {
		*event = (int)atomic_load(&m->slot->event);
	}
	return 0;
}

int hako_member_ack(hako_member_t *m, int event)
{
	if (m == NULL || event <= HAKO_EVENT_NONE || event > HAKO_EVENT_ERROR) {
		return HAKO_EINVAL;
	}
	hako_domain_t *dom = m->dom;
	int r = hakoi_lock(dom);
	if (r != 0) {
		return r;
	}
	if (!mine(m)) {
		r = HAKO_ENOENT;
	} else if ((int)atomic_load(&m->slot->event) != event) {
		r = HAKO_ESTATE;
	} else {
		if (event == HAKO_EVENT_RESET) {
			atomic_store(&m->slot->time_usec, 0);
		}
		if (event == HAKO_EVENT_START && m->delta == 0) {
			/* A proxy never waits for a step: its START acknowledgement (given once
			 * the side it stands for runs) is its check-in at the start barrier. */
			atomic_store(&m->slot->checked_in, 1);
		}
		atomic_store(&m->slot->heartbeat, hako_now_usec());
		atomic_store(&m->slot->event, HAKO_EVENT_NONE);
		atomic_store(&m->slot->feedback, 1);
		hakoi_try_transition(dom);
	}
	hakoi_unlock(dom);
	hakoi_wake_master(dom);
	return r;
}
