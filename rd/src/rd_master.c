/* RD-Full's commit authority (hako/rd_master.h): the EUs' state as the conductor's server node
 * decides it. Pure logic; the proofs are in the header and docs/rd.md. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/error.h"
#include "hako/log.h"
#include "hako/rd_master.h"
#include "hakoi/assert.h"

struct mnode {
	uint8_t id;
	int alive;
	hako_time_t world;   /* last reported, -1 before */
	hako_time_t lost_at; /* server world time it was found lost, -1 if alive */
};

struct meu {
	const hako_rd_eu_config_t *cfg;
	hako_rd_commit_t st;
	hako_time_t barrier; /* b of the current announcement, -1 if it holds nothing */
	uint32_t *acked;     /* per node (index in m->nodes): the highest seq acknowledged */
	int ctx_sent;        /* the owner's context of the hand-off in progress was stored */
	uint8_t *ctx;        /* the last committed context PDU */
	size_t ctx_len;
	hako_time_t owner_lost_at; /* STABLE with a lost owner: since when, -1 otherwise */
};

struct hako_rd_master {
	const hako_rd_config_t *cfg;
	hako_time_t delta;
	hako_time_t dmax;
	size_t node_count;
	struct mnode nodes[HAKO_RD_MAX_NODES];
	size_t eu_count;
	struct meu eus[];
};

static double sec(hako_time_t t)
{
	return (double)t / 1e6;
}

static struct mnode *node_of(hako_rd_master_t *m, uint8_t id)
{
	for (size_t i = 0; i < m->node_count; i++) {
		if (m->nodes[i].id == id) {
			return &m->nodes[i];
		}
	}
	return NULL;
}

static struct meu *eu_of(const hako_rd_master_t *m, uint32_t eu)
{
	for (size_t i = 0; i < m->eu_count; i++) {
		if (m->eus[i].cfg->id == eu) {
			return (struct meu *)&m->eus[i];
		}
	}
	return NULL;
}

static int is_candidate(const hako_rd_eu_config_t *eu, uint8_t id)
{
	for (size_t i = 0; i < eu->candidate_count; i++) {
		if (eu->candidates[i] == id) {
			return 1;
		}
	}
	return 0;
}

static int alive(hako_rd_master_t *m, uint8_t id)
{
	struct mnode *n = node_of(m, id);
	return n != NULL && n->alive;
}

int hako_rd_master_create(const hako_rd_config_t *cfg, hako_time_t delta_usec,
                          hako_time_t dmax_usec, hako_rd_master_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (cfg == NULL || out == NULL || delta_usec <= 0 || dmax_usec < delta_usec) {
		return HAKO_EINVAL;
	}
	hako_rd_master_t *m = calloc(1, sizeof(*m) + cfg->eu_count * sizeof(struct meu));
	if (m == NULL) {
		return HAKO_ENOMEM;
	}
	m->cfg = cfg;
	m->delta = delta_usec;
	m->dmax = dmax_usec;
	m->node_count = cfg->node_count;
	for (size_t i = 0; i < cfg->node_count; i++) {
		m->nodes[i] = (struct mnode){cfg->node_ids[i], 1, -1, -1};
	}
	m->eu_count = cfg->eu_count;
	for (size_t i = 0; i < cfg->eu_count; i++) {
		struct meu *e = &m->eus[i];
		e->cfg = &cfg->eus[i];
		e->st = (hako_rd_commit_t){.eu = e->cfg->id,
		                           .seq = 1,
		                           .status = HAKO_RD_OWNER_STABLE,
		                           .epoch = 0,
		                           .curr = e->cfg->initial_owner,
		                           .next = e->cfg->initial_owner,
		                           .commit_usec = -1};
		e->barrier = -1;
		e->owner_lost_at = -1;
		e->acked = calloc(cfg->node_count, sizeof(*e->acked));
		if (e->acked == NULL) {
			m->eu_count = i + 1;
			hako_rd_master_destroy(m);
			return HAKO_ENOMEM;
		}
	}
	*out = m;
	return 0;
}

void hako_rd_master_destroy(hako_rd_master_t *m)
{
	if (m == NULL) {
		return;
	}
	for (size_t i = 0; i < m->eu_count; i++) {
		free(m->eus[i].acked);
		free(m->eus[i].ctx);
	}
	free(m);
}

int hako_rd_master_get(const hako_rd_master_t *m, uint32_t eu, hako_rd_commit_t *out)
{
	struct meu *e = m != NULL ? eu_of(m, eu) : NULL;
	if (e == NULL || out == NULL) {
		return HAKO_EINVAL;
	}
	*out = e->st;
	return 0;
}

/* The first world step at or after t. */
static hako_time_t step_at_or_after(hako_rd_master_t *m, hako_time_t t)
{
	return (t + m->delta - 1) / m->delta * m->delta;
}

/* Announce a hand-off of e to `to` at the server's world time now.
 *
 * held: the caller held the server's world from before it read now (hako_rd_master_request):
 * the server is at now, or one step further (an advance that was under way when the hold
 * began), and stays there until every node acknowledged; a client runs at most Dmax ahead of
 * the server's last published time, so no node gets past now + step + Dmax: the commit point
 * is the step after that. Otherwise (a decision of the tick, held only after it) the server may
 * have gone on a little since now: one Dmax more. */
static void commit(hako_rd_master_t *m, struct meu *e, uint8_t to, hako_time_t now, int stored,
                   int held)
{
	/* Near the start a hold cannot keep the server below Dmax (the member's clock is >= 0). */
	hako_time_t base = now > m->dmax ? now : m->dmax;
	e->st.seq++;
	e->st.status = HAKO_RD_OWNER_RELEASING;
	e->st.epoch = (uint8_t)(e->st.epoch + 1);
	e->st.next = to;
	e->st.commit_usec = held ? step_at_or_after(m, base + m->dmax + 2 * m->delta)
	                         : step_at_or_after(m, now + 2 * m->dmax);
	e->st.from_stored = stored;
	e->barrier = now;
	e->ctx_sent = 0;
	e->owner_lost_at = -1;
}

/* Settle e on node `owner` (a reclaim): a new epoch, so nothing of the abandoned one passes. */
static void settle(struct meu *e, uint8_t owner)
{
	e->st.seq++;
	e->st.status = HAKO_RD_OWNER_STABLE;
	e->st.epoch = (uint8_t)(e->st.epoch + 1);
	e->st.curr = owner;
	e->st.next = owner;
	e->st.commit_usec = -1;
	e->st.from_stored = 0;
	e->barrier = -1;
	e->owner_lost_at = -1;
}

static int refuse(char *why, size_t len, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse(char *why, size_t len, int code, const char *fmt, ...)
{
	if (why != NULL && len > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return code;
}

int hako_rd_master_request(hako_rd_master_t *m, uint32_t eu, uint8_t to, hako_time_t now, char *why,
                           size_t why_len)
{
	if (why != NULL && why_len > 0) {
		why[0] = '\0';
	}
	struct meu *e = m != NULL ? eu_of(m, eu) : NULL;
	if (e == NULL) {
		return refuse(why, why_len, HAKO_EINVAL, "no EU %" PRIu32, eu);
	}
	const char *name = e->cfg->name;
	if (node_of(m, to) == NULL || !is_candidate(e->cfg, to)) {
		return refuse(why, why_len, HAKO_EINVAL, "node %u is not a candidate of EU %s", to,
		              name);
	}
	if (e->st.status != HAKO_RD_OWNER_STABLE) {
		return refuse(why, why_len, HAKO_EBUSY,
		              "EU %s is being handed from node %u to node %u (epoch %u, commit at "
		              "%.6f s)",
		              name, e->st.curr, e->st.next, e->st.epoch, sec(e->st.commit_usec));
	}
	if (e->st.curr == to) {
		return refuse(why, why_len, HAKO_EEXIST, "EU %s is on node %u already", name, to);
	}
	if (!alive(m, to)) {
		return refuse(why, why_len, HAKO_ECRASHED, "node %u is lost", to);
	}
	if (!alive(m, e->st.curr)) {
		return refuse(why, why_len, HAKO_ECRASHED,
		              "the owner of EU %s, node %u, is lost: the EU is being reclaimed",
		              name, e->st.curr);
	}
	commit(m, e, to, now, 0, 1);
	HAKO_INFO("rd: EU %s: node %u -> node %u committed at epoch %u, commit point %.6f s "
	          "(requested at %.6f s)",
	          name, e->st.curr, to, e->st.epoch, sec(e->st.commit_usec), sec(now));
	return 0;
}

void hako_rd_master_ack(hako_rd_master_t *m, uint8_t node, uint32_t eu, uint32_t seq)
{
	struct meu *e = m != NULL ? eu_of(m, eu) : NULL;
	if (e == NULL) {
		return;
	}
	for (size_t i = 0; i < m->node_count; i++) {
		if (m->nodes[i].id == node && seq > e->acked[i]) {
			e->acked[i] = seq;
		}
	}
}

/* 1 if every live node acknowledged e's current announcement. */
static int all_acked(const hako_rd_master_t *m, const struct meu *e)
{
	for (size_t i = 0; i < m->node_count; i++) {
		if (m->nodes[i].alive && e->acked[i] < e->st.seq) {
			return 0;
		}
	}
	return 1;
}

hako_time_t hako_rd_master_barrier(const hako_rd_master_t *m)
{
	hako_time_t b = -1;
	for (size_t i = 0; m != NULL && i < m->eu_count; i++) {
		const struct meu *e = &m->eus[i];
		/* Only an announcement in progress holds the world (commit; every way back to
		 * Stable clears it). */
		HAKO_ASSERT(e->barrier < 0 || e->st.status == HAKO_RD_OWNER_RELEASING);
		if (e->barrier >= 0 && !all_acked(m, e) && (b < 0 || e->barrier < b)) {
			b = e->barrier;
		}
	}
	return b;
}

int hako_rd_master_activated(hako_rd_master_t *m, uint8_t node, uint32_t eu, uint8_t epoch)
{
	struct meu *e = m != NULL ? eu_of(m, eu) : NULL;
	if (e == NULL) {
		return HAKO_EINVAL;
	}
	if (e->st.status != HAKO_RD_OWNER_RELEASING || e->st.next != node || e->st.epoch != epoch) {
		HAKO_DEBUG(
		    "rd: EU %s: activation by node %u at epoch %u ignored (state %u, epoch %u, "
		    "next %u)",
		    e->cfg->name, node, epoch, e->st.status, e->st.epoch, e->st.next);
		return HAKO_ESTATE;
	}
	e->st.seq++;
	e->st.status = HAKO_RD_OWNER_STABLE;
	e->st.curr = node;
	e->st.commit_usec = -1;
	e->st.from_stored = 0;
	e->barrier = -1;
	HAKO_INFO("rd: EU %s: node %u owns it at epoch %u", e->cfg->name, node, epoch);
	return 0;
}

/* A copy of the context PDU becomes e's last committed context. */
static int keep_context(struct meu *e, const void *pdu, size_t len)
{
	uint8_t *copy = malloc(len > 0 ? len : 1);
	if (copy == NULL) {
		return HAKO_ENOMEM;
	}
	memcpy(copy, pdu, len);
	free(e->ctx);
	e->ctx = copy;
	e->ctx_len = len;
	return 0;
}

int hako_rd_master_store_context(hako_rd_master_t *m, uint32_t eu, uint8_t epoch, const void *pdu,
                                 size_t len)
{
	struct meu *e = m != NULL ? eu_of(m, eu) : NULL;
	if (e == NULL || (pdu == NULL && len > 0)) {
		return HAKO_EINVAL;
	}
	if (e->st.status != HAKO_RD_OWNER_RELEASING || e->st.epoch != epoch || e->st.from_stored) {
		return HAKO_ESTATE;
	}
	int r = keep_context(e, pdu, len);
	e->ctx_sent = r == 0;
	return r;
}

int hako_rd_master_store_checkpoint(hako_rd_master_t *m, uint32_t eu, uint8_t node, uint8_t epoch,
                                    const void *pdu, size_t len)
{
	struct meu *e = m != NULL ? eu_of(m, eu) : NULL;
	if (e == NULL || (pdu == NULL && len > 0)) {
		return HAKO_EINVAL;
	}
	/* The owner's, of its ownership: Stable at its epoch, or announced to be released (epoch
	 * + 1) while its own hand-off context has not come yet. Anything else is a late one of an
	 * ownership that ended: a restart must not start from it. */
	int stable = e->st.status == HAKO_RD_OWNER_STABLE && e->st.epoch == epoch;
	int releasing = e->st.status == HAKO_RD_OWNER_RELEASING &&
	                (uint8_t)(e->st.epoch - 1) == epoch && !e->st.from_stored && !e->ctx_sent;
	if (e->st.curr != node || !(stable || releasing)) {
		return HAKO_ESTATE;
	}
	return keep_context(e, pdu, len);
}

const void *hako_rd_master_context(const hako_rd_master_t *m, uint32_t eu, size_t *len)
{
	struct meu *e = m != NULL ? eu_of(m, eu) : NULL;
	if (len != NULL) {
		*len = e != NULL ? e->ctx_len : 0;
	}
	return e != NULL ? e->ctx : NULL;
}

void hako_rd_master_node_time(hako_rd_master_t *m, uint8_t node, hako_time_t world)
{
	struct mnode *n = m != NULL ? node_of(m, node) : NULL;
	if (n != NULL) {
		n->world = world;
	}
}

void hako_rd_master_node_lost(hako_rd_master_t *m, uint8_t node, hako_time_t now)
{
	struct mnode *n = m != NULL ? node_of(m, node) : NULL;
	if (n == NULL || !n->alive) {
		return;
	}
	n->alive = 0;
	n->lost_at = now;
	for (size_t i = 0; i < m->eu_count; i++) {
		struct meu *e = &m->eus[i];
		if (e->st.status == HAKO_RD_OWNER_STABLE && e->st.curr == node) {
			e->owner_lost_at = now;
		}
	}
}

void hako_rd_master_node_back(hako_rd_master_t *m, uint8_t node)
{
	struct mnode *n = m != NULL ? node_of(m, node) : NULL;
	if (n != NULL) {
		n->alive = 1;
		n->lost_at = -1;
		n->world = -1;
	}
}

/* A live candidate of e other than `not`, in the config's order of candidates; 0 if none. */
static uint8_t live_candidate(hako_rd_master_t *m, const struct meu *e, uint8_t not )
{
	for (size_t i = 0; i < e->cfg->candidate_count; i++) {
		uint8_t c = e->cfg->candidates[i];
		if (c != not &&alive(m, c)) {
			return c;
		}
	}
	return 0;
}

/* Give e to a live candidate from the last committed context; 1 if it changed. */
static int restart_elsewhere(hako_rd_master_t *m, struct meu *e, uint8_t not, hako_time_t now,
                             int held)
{
	uint8_t to = live_candidate(m, e, not );
	if (to == 0) {
		return 0; /* nobody can take it: it waits for a node to come back */
	}
	uint8_t from = e->st.curr;
	commit(m, e, to, now, 1, held);
	HAKO_WARN("rd: EU %s: node %u is lost; node %u restarts it from the last committed context "
	          "(%zu bytes) at epoch %u, commit point %.6f s",
	          e->cfg->name, from, to, e->ctx_len, e->st.epoch, sec(e->st.commit_usec));
	return 1;
}

static int tick_eu(hako_rd_master_t *m, struct meu *e, hako_time_t now, int held)
{
	const hako_time_t timeout = m->cfg->handoff_timeout_usec;
	if (e->st.status == HAKO_RD_OWNER_STABLE) {
		if (e->owner_lost_at < 0 || alive(m, e->st.curr) ||
		    now < e->owner_lost_at + timeout) {
			return 0;
		}
		return restart_elsewhere(m, e, e->st.curr, now, held);
	}
	/* The authority holds an EU Stable or Releasing: Activating is a node's word. */
	HAKO_ASSERT_MSG(e->st.status == HAKO_RD_OWNER_RELEASING, "status %u", e->st.status);
	struct mnode *next = node_of(m, e->st.next);
	int next_alive = next != NULL && next->alive;
	struct mnode *curr = node_of(m, e->st.curr);
	if (!e->st.from_stored && !e->ctx_sent && curr != NULL && !curr->alive && next_alive &&
	    now >= curr->lost_at + timeout) {
		/* The owner was lost before it handed its context over: the new owner starts from
		 * the last committed one instead. */
		uint8_t to = e->st.next;
		commit(m, e, to, now, 1, held);
		HAKO_WARN(
		    "rd: EU %s: node %u was lost before its release; node %u restarts it from "
		    "the last committed context (%zu bytes) at epoch %u, commit point %.6f s",
		    e->cfg->name, e->st.curr, to, e->ctx_len, e->st.epoch, sec(e->st.commit_usec));
		return 1;
	}
	/* The new owner's window closed without an activation: its node reported a world time
	 * past C + timeout + Dmax, after relaying whatever its assets wrote before. */
	int window_closed = next_alive && next->world > e->st.commit_usec + timeout + m->dmax;
	/* A lost new owner: if it never had the context it cannot have activated; if it had, what
	 * it did is void (its node is gone, and the new epoch fences its PDUs off). */
	int next_gone = !next_alive && next != NULL && now >= next->lost_at + timeout;
	if (!window_closed && !next_gone) {
		return 0;
	}
	if (!e->st.from_stored && alive(m, e->st.curr)) {
		HAKO_WARN(
		    "rd: EU %s: node %u did not activate it within %.3f s of world time after "
		    "the commit point %.6f s%s; node %u takes it back at epoch %u",
		    e->cfg->name, e->st.next, sec(timeout), sec(e->st.commit_usec),
		    next_alive ? "" : " (the node is lost)", e->st.curr,
		    (uint8_t)(e->st.epoch + 1));
		settle(e, e->st.curr);
		return 1;
	}
	return restart_elsewhere(m, e, e->st.next, now, held);
}

hako_time_t hako_rd_master_next_due(const hako_rd_master_t *m)
{
	hako_time_t due = -1;
	for (size_t i = 0; m != NULL && i < m->eu_count; i++) {
		const struct meu *e = &m->eus[i];
		hako_time_t t = -1;
		if (e->st.status == HAKO_RD_OWNER_STABLE) {
			t = e->owner_lost_at;
		} else {
			/* Releasing: whichever of the two nodes is lost. */
			for (int k = 0; k < 2; k++) {
				const struct mnode *n = node_of((hako_rd_master_t *)m,
				                                k == 0 ? e->st.curr : e->st.next);
				if (n != NULL && !n->alive && (t < 0 || n->lost_at < t)) {
					t = n->lost_at;
				}
			}
		}
		if (t >= 0) {
			t += m->cfg->handoff_timeout_usec;
			due = due < 0 || t < due ? t : due;
		}
	}
	return due;
}

static int tick_all(hako_rd_master_t *m, hako_time_t now, int held, uint32_t *changed, int max)
{
	int n = 0;
	for (size_t i = 0; m != NULL && i < m->eu_count; i++) {
		if (tick_eu(m, &m->eus[i], now, held) && changed != NULL && n < max) {
			changed[n++] = m->eus[i].cfg->id;
		}
	}
	return n;
}

int hako_rd_master_tick(hako_rd_master_t *m, hako_time_t now, uint32_t *changed, int max)
{
	return tick_all(m, now, 0, changed, max);
}

int hako_rd_master_tick_held(hako_rd_master_t *m, hako_time_t now, uint32_t *changed, int max)
{
	return tick_all(m, now, 1, changed, max);
}
