/* Wait-sets: one waiter on many channels.
 *
 * Each wait-set owns a slot of the segment (a futex word and a waiter count). A channel carries
 * a bit mask of the slots watching it; a writer, after publishing, bumps the futex word of each
 * slot in the mask and wakes it if someone sleeps there. The waiter loads the word, scans its
 * channels' write numbers, and sleeps only if nothing moved: a write that lands after the scan
 * changes the word first, so the sleep returns at once (the futex compares the word).
 */
#include <stdlib.h>
#include <string.h>

#include "hako/log.h"
#include "hakoi/assert.h"
#include "internal.h"

struct watch {
	hako_channel_t *ch;
	void *user;
	uint64_t seen; /* write number last reported (or current when added) */
};

struct hako_waitset {
	hako_domain_t *dom;
	int slot;
	struct hakoi_waitslot *ws;
	struct watch *w;
	int n, cap;
	int next;        /* where the next scan starts: events beyond max are not starved */
	uint32_t resets; /* the domain's reset count when `seen` was taken */
	_Atomic uint32_t woken;
};

void hakoi_waitset_notify(hako_domain_t *dom, uint64_t mask)
{
	while (mask != 0) {
		int i = __builtin_ctzll(mask);
		mask &= mask - 1;
		struct hakoi_waitslot *s = &dom->waitsets[i];
		hakoi_notify(&s->seq, &s->waiters);
	}
}

/* Claim a free slot (or one whose owner is gone). Lock held. */
static int claim_slot(hako_domain_t *dom)
{
	HAKO_ASSERT(hakoi_lock_held(dom));
	uint32_t me = hakoi_self_pid();
	for (int i = 0; i < HAKO_WAITSET_MAX; i++) {
		struct hakoi_waitslot *s = &dom->waitsets[i];
		uint32_t owner = atomic_load(&s->owner_pid);
		if (owner != 0 && hakoi_proc_alive((int)owner, s->owner_start)) {
			continue;
		}
		/* A dead owner's bits may still be set in channel masks: its successor sees
		 * spurious wake-ups, which a scan absorbs. */
		s->owner_start = hakoi_proc_start_time((int)me);
		atomic_store(&s->waiters, 0);
		atomic_store(&s->owner_pid, me);
		return i;
	}
	return -1;
}

int hako_waitset_create(hako_domain_t *dom, hako_waitset_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (dom == NULL || out == NULL) {
		return HAKO_EINVAL;
	}
	hako_waitset_t *ws = calloc(1, sizeof(*ws));
	if (ws == NULL) {
		return HAKO_ENOMEM;
	}
	int r = hakoi_lock(dom);
	if (r != 0) {
		free(ws);
		return r;
	}
	int slot = claim_slot(dom);
	hakoi_unlock(dom);
	if (slot < 0) {
		HAKO_WARN("domain '%s': all %d wait-sets are in use", dom->name, HAKO_WAITSET_MAX);
		free(ws);
		return HAKO_ENOSPC;
	}
	ws->dom = dom;
	ws->slot = slot;
	ws->ws = &dom->waitsets[slot];
	ws->resets = hako_domain_reset_count(dom);
	*out = ws;
	return 0;
}

static void unwatch(hako_waitset_t *ws, struct watch *w)
{
	atomic_fetch_and(&w->ch->c->waitset_mask, ~(1ull << ws->slot));
}

void hako_waitset_destroy(hako_waitset_t *ws)
{
	if (ws == NULL) {
		return;
	}
	for (int i = 0; i < ws->n; i++) {
		unwatch(ws, &ws->w[i]);
	}
	if (hakoi_lock(ws->dom) == 0) {
		atomic_store(&ws->ws->owner_pid, 0);
		hakoi_unlock(ws->dom);
	}
	free(ws->w);
	free(ws);
}

static int find(const hako_waitset_t *ws, const hako_channel_t *ch)
{
	for (int i = 0; i < ws->n; i++) {
		if (ws->w[i].ch == ch) {
			return i;
		}
	}
	return -1;
}

int hako_waitset_add(hako_waitset_t *ws, hako_channel_t *ch, void *user)
{
	if (ws == NULL || ch == NULL || ch->dom != ws->dom) {
		return HAKO_EINVAL;
	}
	if (find(ws, ch) >= 0) {
		return HAKO_EEXIST;
	}
	if (ws->n == ws->cap) {
		int cap = ws->cap != 0 ? ws->cap * 2 : 16;
		struct watch *w = realloc(ws->w, (size_t)cap * sizeof(*w));
		if (w == NULL) {
			return HAKO_ENOMEM;
		}
		ws->w = w;
		ws->cap = cap;
	}
	/* The bit first, then the number: a write between them is reported (if after the bit)
	 * or already counted in `seen` (if before it), never lost. */
	atomic_fetch_or(&ch->c->waitset_mask, 1ull << ws->slot);
	ws->w[ws->n++] = (struct watch){ch, user, hako_channel_seq(ch)};
	return 0;
}

int hako_waitset_remove(hako_waitset_t *ws, hako_channel_t *ch)
{
	if (ws == NULL || ch == NULL) {
		return HAKO_EINVAL;
	}
	int i = find(ws, ch);
	if (i < 0) {
		return HAKO_ENOENT;
	}
	unwatch(ws, &ws->w[i]);
	ws->w[i] = ws->w[--ws->n];
	return 0;
}

void hako_waitset_wake(hako_waitset_t *ws)
{
	if (ws != NULL) {
		atomic_store(&ws->woken, 1);
		hakoi_notify(&ws->ws->seq, &ws->ws->waiters);
	}
}

struct scan {
	hako_waitset_t *ws;
	hako_waitset_event_t *ev;
	int max;
	int count;
};

/* Collect the channels written since they were last reported (cond of hakoi_wait). */
static int scan(void *arg)
{
	struct scan *sc = arg;
	hako_waitset_t *ws = sc->ws;
	uint32_t resets = hako_domain_reset_count(ws->dom);
	if (resets != ws->resets) {
		/* A reset restarts every channel's numbers at 0: what was seen is gone. */
		ws->resets = resets;
		for (int i = 0; i < ws->n; i++) {
			ws->w[i].seen = 0;
		}
	}
	for (int k = 0; k < ws->n && sc->count < sc->max; k++) {
		int i = (ws->next + k) % ws->n;
		struct watch *w = &ws->w[i];
		uint64_t seq = hako_channel_seq(w->ch);
		if (seq != w->seen && seq != 0) {
			w->seen = seq;
			sc->ev[sc->count++] = (hako_waitset_event_t){w->ch, w->user, seq};
			ws->next = (i + 1) % ws->n;
		}
	}
	if (sc->count > 0) {
		return 1;
	}
	return atomic_exchange(&ws->woken, 0) ? 2 : 0;
}

int hako_waitset_wait(hako_waitset_t *ws, hako_time_t timeout_usec, hako_waitset_event_t *events,
                      int max, int *count)
{
	if (count != NULL) {
		*count = 0;
	}
	if (ws == NULL || events == NULL || max < 1 || count == NULL) {
		return HAKO_EINVAL;
	}
	struct scan sc = {ws, events, max, 0};
	int r = hakoi_wait(&ws->ws->seq, &ws->ws->waiters, scan, &sc, hakoi_spin_budget(ws->dom),
	                   timeout_usec, NULL, NULL);
	*count = sc.count;
	return r < 0 ? r : 0;
}
