/* RD-Full in the conductor (docs/rd.md, "RD-Full"): the server node runs the commit authority
 * (hako/rd_master.h) and holds its domain's world with a barrier member while a commit is not
 * acknowledged; every node writes the authority's state of each EU into its own domain
 * (hako_rd_mirror) and relays what its executors write there: an owner's context, an
 * activation. A client relays on its time socket, before the time it sends next, so that the
 * server has every activation of a node before any world time of that node that could let it
 * take the EU back. */
#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "conductor_internal.h"
#include "hako/log.h"

#define BARRIER_FREE (1ll << 60) /* the barrier member's time when it holds nothing */

static uint8_t rd_id_of(const hako_rd_config_t *rd, const char *name)
{
	for (size_t i = 0; i < rd->node_count; i++) {
		if (strcmp(rd->node_names[i], name) == 0) {
			return rd->node_ids[i];
		}
	}
	return 0;
}

static struct hakoi_peer *peer_of_rd(hako_conductor_node_t *n, uint8_t id)
{
	for (size_t i = 0; i < n->npeers; i++) {
		if (n->peers[i].rd_id == id && id != 0) {
			return &n->peers[i];
		}
	}
	return NULL;
}

int hakoi_rd_link_open(hako_conductor_node_t *n, hako_error_t *err)
{
	const hako_conductor_config_t *c = &n->cfg;
	if (c->rd_config_path[0] == '\0') {
		return 0;
	}
	int r = hako_rd_config_load(c->rd_config_path, &n->rd, err);
	if (r != 0) {
		return r;
	}
	if (n->rd->mode != HAKO_RD_MODE_FULL) {
		return hako_error_set(err, HAKO_ECONFIG, c->path, 0, 0,
		                      "rd_config_path: %s is an RD-Light config; a federation's "
		                      "needs \"mode\": \"full\"",
		                      c->rd_config_path);
	}
	n->rd_self = rd_id_of(n->rd, c->node_id);
	for (size_t i = 0; i < n->npeers; i++) {
		n->peers[i].rd_id = rd_id_of(n->rd, n->peers[i].id);
	}
	if (c->role == HAKO_CONDUCTOR_SERVER) {
		/* Every candidate must be a client: the server's own executors would need the
		 * relay's ordering inside this process, which it does not have yet. */
		for (size_t e = 0; e < n->rd->eu_count; e++) {
			const hako_rd_eu_config_t *eu = &n->rd->eus[e];
			for (size_t k = 0; k < eu->candidate_count; k++) {
				if (peer_of_rd(n, eu->candidates[k]) == NULL) {
					return hako_error_set(
					    err, HAKO_ECONFIG, c->rd_config_path, 0, 0,
					    "EU %s: candidate node %u is not a client of server %s "
					    "(an EU runs on the client nodes; the node names of "
					    "the RD "
					    "config are the conductor node ids)",
					    eu->name, eu->candidates[k], c->node_id);
				}
			}
		}
		if ((r = hako_rd_master_create(n->rd, c->delta_usec, c->max_delay_usec,
		                               &n->rd_auth)) != 0 ||
		    (r = hako_member_register_proxy(n->dom, "rd:barrier", &n->rd_barrier)) != 0) {
			return hako_error_set(err, r, c->path, 0, 0,
			                      "RD-Full: cannot set up the commit authority: %s",
			                      hako_strerror(r));
		}
		hako_member_set_time(n->rd_barrier, BARRIER_FREE);
		n->rd_barrier_at = BARRIER_FREE;
	}
	if (c->role == HAKO_CONDUCTOR_CLIENT && n->rd_self != 0) {
		if ((r = hako_member_register_proxy(n->dom, "rd:hold", &n->rd_hold)) != 0) {
			return hako_error_set(err, r, c->path, 0, 0,
			                      "RD-Full: cannot register the hold member: %s",
			                      hako_strerror(r));
		}
		hako_member_set_time(n->rd_hold, BARRIER_FREE);
		n->rd_hold_at = BARRIER_FREE;
	}
	size_t neu = n->rd->eu_count;
	n->rd_wait_commit = malloc(neu * sizeof(*n->rd_wait_commit));
	n->rd_wait_epoch = calloc(neu, sizeof(*n->rd_wait_epoch));
	n->rd_wait_since = calloc(neu, sizeof(*n->rd_wait_since));
	n->rd_changed = calloc(neu, sizeof(*n->rd_changed));
	if (n->rd_wait_commit == NULL || n->rd_wait_epoch == NULL || n->rd_wait_since == NULL ||
	    n->rd_changed == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, c->rd_config_path, 0, 0,
		                      "RD-Full: out of memory for %zu EUs", neu);
	}
	for (size_t e = 0; e < neu; e++) {
		n->rd_wait_commit[e] = -1;
	}
	r = hako_rd_mirror_open(n->dom, n->rd, n->rd_self, &n->rd_mirror);
	if (r != 0) {
		return hako_error_set(err, r, c->rd_config_path, 0, 0,
		                      "RD-Full: cannot open the EUs' channels: %s",
		                      hako_strerror(r));
	}
	for (size_t e = 0; n->rd_auth != NULL && e < n->rd->eu_count; e++) {
		hako_rd_commit_t st;
		hako_rd_master_get(n->rd_auth, n->rd->eus[e].id, &st);
		hako_rd_mirror_apply(n->rd_mirror, &st);
	}
	HAKO_INFO("conductor %s: RD-Full over %zu EUs (%s, node %u)", c->node_id, n->rd->eu_count,
	          c->rd_config_path, n->rd_self);
	return 0;
}

void hakoi_rd_link_close(hako_conductor_node_t *n)
{
	hako_rd_mirror_close(n->rd_mirror);
	hako_member_unregister(n->rd_barrier);
	hako_member_unregister(n->rd_hold);
	n->rd_hold = NULL;
	hako_rd_master_destroy(n->rd_auth);
	hako_rd_config_free(n->rd);
	free(n->rd_wait_commit);
	free(n->rd_wait_epoch);
	free(n->rd_wait_since);
	free(n->rd_changed);
	n->rd_wait_commit = NULL;
	n->rd_wait_epoch = NULL;
	n->rd_wait_since = NULL;
	n->rd_changed = NULL;
	n->rd_mirror = NULL;
	n->rd_barrier = NULL;
	n->rd_auth = NULL;
	n->rd = NULL;
}

/* [to][frame][payload] on s (a DEALER: to NULL). */
static int send_with_payload(void *s, const char *to, hakoi_msg_t *m, const void *payload,
                             size_t len)
{
	uint8_t buf[512];
	size_t flen = hakoi_wire_encode(m, buf);
	if (to != NULL && zmq_send(s, to, strlen(to), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
		return -1;
	}
	if (zmq_send(s, buf, flen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
		return -1;
	}
	return zmq_send(s, payload != NULL ? payload : "", len, ZMQ_DONTWAIT) < 0 ? -1 : 0;
}

static void state_msg(hako_conductor_node_t *n, hakoi_msg_t *m, const hako_rd_commit_t *c)
{
	hakoi_base_msg(n, m, HAKOI_MSG_RD_STATE);
	m->rd_eu = c->eu;
	m->rd_seq = c->seq;
	m->rd_status = (uint32_t)c->status;
	m->rd_epoch = c->epoch;
	m->rd_curr = c->curr;
	m->rd_next = c->next;
	m->rd_from_stored = (uint32_t)c->from_stored;
	m->rd_commit = c->commit_usec;
}

/* The barrier member holding the server's world at the lowest unacknowledged commit's request
 * time b (a member at b - Dmax: the world rule stops the world at b), or free. */
static void update_barrier(hako_conductor_node_t *n)
{
	hako_time_t b = hako_rd_master_barrier(n->rd_auth);
	hako_time_t t = b < 0                       ? BARRIER_FREE
	                : b > n->cfg.max_delay_usec ? b - n->cfg.max_delay_usec
	                                            : 0;
	if (t != n->rd_barrier_at) {
		hako_member_set_time(n->rd_barrier, t);
		n->rd_barrier_at = t;
	}
}

/* Server: the authority's state of eu into this domain and to every joined client. */
static void broadcast(hako_conductor_node_t *n, uint32_t eu)
{
	hako_rd_commit_t c;
	if (hako_rd_master_get(n->rd_auth, eu, &c) != 0) {
		return;
	}
	pthread_mutex_lock(&n->send_lock);
	hako_rd_mirror_apply(n->rd_mirror, &c);
	pthread_mutex_unlock(&n->send_lock);
	if (n->rd_self != 0) {
		hako_rd_master_ack(n->rd_auth, n->rd_self, eu, c.seq);
	}
	for (size_t i = 0; i < n->npeers; i++) {
		struct hakoi_peer *p = &n->peers[i];
		if (p->joined) {
			hakoi_msg_t m;
			state_msg(n, &m, &c);
			hakoi_send_ctl(n, p, &m);
		}
	}
	update_barrier(n);
}

/* Server: a context for the new owner's node. */
static void send_context(hako_conductor_node_t *n, uint32_t eu, uint8_t to, const void *pdu,
                         size_t len, int epoch, hako_time_t release)
{
	struct hakoi_peer *p = peer_of_rd(n, to);
	if (p == NULL || !p->joined) {
		HAKO_WARN("conductor %s: EU %" PRIu32
		          ": node %u is not joined; its context waits for "
		          "the authority's timeout",
		          n->cfg.node_id, eu, to);
		return;
	}
	hakoi_msg_t m;
	hakoi_base_msg(n, &m, HAKOI_MSG_RD_CONTEXT);
	m.rd_eu = eu;
	m.rd_epoch = epoch;
	m.rd_release = release;
	m.rd_commit = -1;
	if (send_with_payload(n->ctl, p->route, &m, pdu, len) != 0) {
		HAKO_WARN("conductor %s: EU %" PRIu32 ": cannot send the context to %s: %s",
		          n->cfg.node_id, eu, p->id, zmq_strerror(errno));
	}
}

void hakoi_rd_joined(hako_conductor_node_t *n, struct hakoi_peer *p)
{
	if (n->rd_auth == NULL) {
		return;
	}
	if (p->rd_id != 0) {
		hako_rd_master_node_back(n->rd_auth, p->rd_id);
	}
	for (size_t e = 0; e < n->rd->eu_count; e++) {
		hako_rd_commit_t c;
		hako_rd_master_get(n->rd_auth, n->rd->eus[e].id, &c);
		hakoi_msg_t m;
		state_msg(n, &m, &c);
		hakoi_send_ctl(n, p, &m);
	}
}

static void reply(hako_conductor_node_t *n, const char *to, const hakoi_msg_t *req, int r,
                  const char *why)
{
	hakoi_msg_t m;
	hakoi_base_msg(n, &m, HAKOI_MSG_RD_REPLY);
	m.rd_eu = req->rd_eu;
	m.rd_to = req->rd_to;
	m.result = r;
	m.rd_commit = -1;
	m.rd_release = -1;
	m.rd_epoch = -1;
	if (r == 0) {
		hako_rd_commit_t c;
		hako_rd_master_get(n->rd_auth, req->rd_eu, &c);
		m.rd_seq = c.seq;
		m.rd_epoch = c.epoch;
		m.rd_commit = c.commit_usec;
	}
	snprintf(m.reason, sizeof(m.reason), "%s", why);
	hakoi_send_msg(n->ctl, to, &m);
}

void hakoi_rd_server_msg(hako_conductor_node_t *n, struct hakoi_peer *p, const char *from,
                         const hakoi_msg_t *m)
{
	if (n->rd_auth == NULL) {
		if (m->type == HAKOI_MSG_RD_REQUEST && from != NULL) {
			reply(n, from, m, HAKO_ESTATE, "this federation has no rd_config_path");
		}
		return;
	}
	char why[HAKOI_WIRE_REASON] = "";
	int r;
	switch (m->type) {
	case HAKOI_MSG_RD_REQUEST:
		/* Hold the world first (a member at 0 stops it wherever it is past Dmax), then read
		 * it: the commit point is computed from a world time that no longer moves. */
		hako_member_set_time(n->rd_barrier, 0);
		n->rd_barrier_at = 0;
		r = hako_rd_master_request(n->rd_auth, m->rd_eu, (uint8_t)m->rd_to,
		                           hako_domain_world_time(n->dom), why, sizeof(why));
		if (r == 0) {
			broadcast(n, m->rd_eu); /* which sets the barrier */
		} else {
			update_barrier(n);
			HAKO_INFO("conductor %s: RD request of EU %" PRIu32
			          " to node %u refused: %s",
			          n->cfg.node_id, m->rd_eu, m->rd_to, why);
		}
		if (from != NULL) {
			reply(n, from, m, r, why);
		}
		return;
	case HAKOI_MSG_RD_ACK:
		hako_rd_master_ack(n->rd_auth, p->rd_id, m->rd_eu, m->rd_seq);
		update_barrier(n);
		return;
	case HAKOI_MSG_RD_CONTEXT: {
		if (m->rd_epoch < 0 ||
		    hako_rd_master_store_context(n->rd_auth, m->rd_eu, (uint8_t)m->rd_epoch,
		                                 n->rd_payload, n->rd_payload_len) != 0) {
			HAKO_WARN("conductor %s: a context of EU %" PRIu32
			          " (epoch %d) from %s is not "
			          "for the hand-off in progress: dropped",
			          n->cfg.node_id, m->rd_eu, m->rd_epoch, p->id);
			return;
		}
		hako_rd_commit_t c;
		hako_rd_master_get(n->rd_auth, m->rd_eu, &c);
		send_context(n, m->rd_eu, c.next, n->rd_payload, n->rd_payload_len, -1, -1);
		return;
	}
	case HAKOI_MSG_RD_ACTIVATED:
		if (m->rd_epoch >= 0 && hako_rd_master_activated(n->rd_auth, p->rd_id, m->rd_eu,
		                                                 (uint8_t)m->rd_epoch) == 0) {
			broadcast(n, m->rd_eu);
		}
		return;
	default: return;
	}
}

void hakoi_rd_tick(hako_conductor_node_t *n)
{
	if (n->rd_auth == NULL) {
		return;
	}
	/* The barrier stands for no peer: it acknowledges every event at once. */
	int ev = hako_member_event(n->rd_barrier);
	if (ev > HAKO_EVENT_NONE) {
		hako_member_ack(n->rd_barrier, ev);
	}
	hako_member_heartbeat(n->rd_barrier);
	uint32_t *changed = n->rd_changed;
	int k = hako_rd_master_tick(n->rd_auth, hako_domain_world_time(n->dom), changed,
	                            (int)n->rd->eu_count);
	for (int i = 0; i < k; i++) {
		broadcast(n, changed[i]);
		hako_rd_commit_t c;
		hako_rd_master_get(n->rd_auth, changed[i], &c);
		if (c.status == HAKO_RD_OWNER_RELEASING && c.from_stored) {
			size_t len = 0;
			const void *pdu = hako_rd_master_context(n->rd_auth, changed[i], &len);
			send_context(n, changed[i], c.next, pdu, len, c.epoch, c.commit_usec);
		}
	}
	update_barrier(n);
}

void hakoi_rd_peer_time(hako_conductor_node_t *n, struct hakoi_peer *p, hako_time_t world)
{
	if (n->rd_auth != NULL && p->rd_id != 0) {
		hako_rd_master_node_time(n->rd_auth, p->rd_id, world);
	}
}

void hakoi_rd_peer_lost(hako_conductor_node_t *n, struct hakoi_peer *p)
{
	if (n->rd_auth != NULL && p->rd_id != 0) {
		hako_rd_master_node_lost(n->rd_auth, p->rd_id, hako_domain_world_time(n->dom));
		update_barrier(n);
	}
}

void hakoi_rd_peer_back(hako_conductor_node_t *n, struct hakoi_peer *p)
{
	if (n->rd_auth != NULL && p->rd_id != 0) {
		hako_rd_master_node_back(n->rd_auth, p->rd_id);
	}
}

/* Client: the hold member at the lowest commit point waited for, or free. A new owner's
 * world may reach its commit point C and one step beyond, not further, until the context
 * arrived (h = C + 2 delta - Dmax: T + delta - h <= Dmax stops T at C + delta): a context that
 * comes in time is there at its first poll after C (its first model step is the one after C),
 * a later one at the poll after that. */
static void update_hold(hako_conductor_node_t *n)
{
	if (n->rd_hold == NULL) {
		return;
	}
	hako_time_t h = BARRIER_FREE;
	for (size_t e = 0; e < n->rd->eu_count; e++) {
		if (n->rd_wait_commit[e] >= 0) {
			hako_time_t t =
			    n->rd_wait_commit[e] + 2 * n->cfg.delta_usec - n->cfg.max_delay_usec;
			if (t < h) {
				h = t < 0 ? 0 : t;
			}
		}
	}
	if (h != n->rd_hold_at) {
		hako_member_set_time(n->rd_hold, h);
		n->rd_hold_at = h;
	}
}

static int eu_index(const hako_rd_config_t *rd, uint32_t eu)
{
	for (size_t e = 0; e < rd->eu_count; e++) {
		if (rd->eus[e].id == eu) {
			return (int)e;
		}
	}
	return -1;
}

/* A context is only waited for so long (a lost owner, a lost message): then the node goes
 * on, and the authority's rules, in world time, decide. */
#define HOLD_MAX_USEC 2000000

void hakoi_rd_client_tick(hako_conductor_node_t *n)
{
	if (n->rd_hold == NULL) {
		return;
	}
	int ev = hako_member_event(n->rd_hold);
	if (ev > HAKO_EVENT_NONE) {
		hako_member_ack(n->rd_hold, ev);
	}
	hako_member_heartbeat(n->rd_hold);
	uint32_t resets = hako_domain_reset_count(n->dom);
	if (resets != n->rd_resets) {
		n->rd_resets = resets;
		for (size_t e = 0; e < n->rd->eu_count; e++) {
			n->rd_wait_commit[e] = -1;
		}
	}
	hako_time_t now = hako_now_usec();
	for (size_t e = 0; e < n->rd->eu_count; e++) {
		if (n->rd_wait_commit[e] >= 0 && now - n->rd_wait_since[e] > HOLD_MAX_USEC) {
			HAKO_WARN(
			    "conductor %s: EU %s: no context for the hand-off at %.6f s after %.1f "
			    "s: the node goes on without it",
			    n->cfg.node_id, n->rd->eus[e].name, (double)n->rd_wait_commit[e] / 1e6,
			    (double)HOLD_MAX_USEC / 1e6);
			n->rd_wait_commit[e] = -1;
		}
	}
	update_hold(n);
}

void hakoi_rd_client_msg(hako_conductor_node_t *n, const hakoi_msg_t *m)
{
	if (n->rd_mirror == NULL) {
		return;
	}
	switch (m->type) {
	case HAKOI_MSG_RD_STATE: {
		hako_rd_commit_t c = {m->rd_eu,
		                      m->rd_seq,
		                      (hako_rd_status_t)m->rd_status,
		                      (uint8_t)(m->rd_epoch < 0 ? 0 : m->rd_epoch),
		                      (uint8_t)m->rd_curr,
		                      (uint8_t)m->rd_next,
		                      m->rd_commit,
		                      (int)m->rd_from_stored};
		/* The new owner's node waits at the commit point for the context (HOLD). */
		int k = eu_index(n->rd, m->rd_eu);
		if (k >= 0 && n->rd_hold != NULL) {
			if (c.status == HAKO_RD_OWNER_RELEASING && c.next == n->rd_self &&
			    c.commit_usec >= 0) {
				if (n->rd_wait_commit[k] < 0 || n->rd_wait_epoch[k] != c.epoch) {
					n->rd_wait_commit[k] = c.commit_usec;
					n->rd_wait_epoch[k] = c.epoch;
					n->rd_wait_since[k] = hako_now_usec();
				}
			} else {
				n->rd_wait_commit[k] = -1;
			}
			update_hold(n);
		}
		pthread_mutex_lock(&n->send_lock);
		int r = hako_rd_mirror_apply(n->rd_mirror, &c);
		pthread_mutex_unlock(&n->send_lock);
		if (r != 0) {
			HAKO_WARN("conductor %s: cannot write the state of EU %" PRIu32 ": %s",
			          n->cfg.node_id, m->rd_eu, hako_strerror(r));
			return;
		}
		hakoi_msg_t a;
		hakoi_base_msg(n, &a, HAKOI_MSG_RD_ACK);
		a.rd_eu = m->rd_eu;
		a.rd_seq = m->rd_seq;
		a.rd_epoch = -1;
		a.rd_commit = -1;
		a.rd_release = -1;
		hakoi_send_ctl(n, &n->peers[0], &a);
		return;
	}
	case HAKOI_MSG_RD_CONTEXT: {
		pthread_mutex_lock(&n->send_lock);
		int r = hako_rd_mirror_put_context(n->rd_mirror, m->rd_eu,
		                                   n->rd_payload_len > 0 ? n->rd_payload : NULL,
		                                   n->rd_payload_len, m->rd_epoch, m->rd_release);
		pthread_mutex_unlock(&n->send_lock);
		int k = eu_index(n->rd, m->rd_eu);
		if (r == 0 && k >= 0) { /* it is here: the world may go on */
			n->rd_wait_commit[k] = -1;
			update_hold(n);
		}
		return;
	}
	case HAKOI_MSG_RD_REPLY:
		HAKO_INFO("conductor %s: RD request of EU %" PRIu32 ": %s", n->cfg.node_id,
		          m->rd_eu, m->result == 0 ? "committed" : m->reason);
		return;
	default: return;
	}
}

static void relay_one(void *arg, const hako_rd_relay_t *rl)
{
	hako_conductor_node_t *n = arg;
	hakoi_msg_t m;
	hakoi_base_msg(n, &m,
	               rl->kind == HAKO_RD_RELAY_CONTEXT ? HAKOI_MSG_RD_CONTEXT
	                                                 : HAKOI_MSG_RD_ACTIVATED);
	m.rd_eu = rl->eu;
	m.rd_epoch = rl->epoch;
	m.rd_commit = -1;
	m.rd_release = -1;
	int r = rl->kind == HAKO_RD_RELAY_CONTEXT
	            ? send_with_payload(n->tout, NULL, &m, rl->pdu, rl->len)
	            : hakoi_send_msg(n->tout, NULL, &m);
	if (r != 0) {
		HAKO_WARN("conductor %s: cannot relay EU %" PRIu32 "'s %s: %s", n->cfg.node_id,
		          rl->eu, rl->kind == HAKO_RD_RELAY_CONTEXT ? "context" : "activation",
		          zmq_strerror(errno));
	}
}

void hakoi_rd_relay(hako_conductor_node_t *n)
{
	if (n->rd_mirror != NULL && n->cfg.role == HAKO_CONDUCTOR_CLIENT) {
		hako_rd_mirror_scan(n->rd_mirror, relay_one, n);
	}
}

struct hako_conductor_rd_requester {
	void *ctx;
	void *s;
	char address[HAKO_CONDUCTOR_ADDR_MAX];
};

void hako_conductor_rd_requester_close(hako_conductor_rd_requester_t *rq)
{
	if (rq == NULL) {
		return;
	}
	if (rq->s != NULL) {
		zmq_close(rq->s);
	}
	if (rq->ctx != NULL) {
		zmq_ctx_term(rq->ctx);
	}
	free(rq);
}

int hako_conductor_rd_requester_open(const hako_conductor_config_t *cfg,
                                     hako_conductor_rd_requester_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (cfg == NULL || out == NULL) {
		return HAKO_EINVAL;
	}
	hako_conductor_rd_requester_t *rq = calloc(1, sizeof(*rq));
	if (rq == NULL) {
		return HAKO_ENOMEM;
	}
	snprintf(rq->address, sizeof(rq->address), "%s", cfg->control_address);
	rq->ctx = zmq_ctx_new();
	rq->s = rq->ctx != NULL ? zmq_socket(rq->ctx, ZMQ_DEALER) : NULL;
	if (rq->s == NULL) {
		hako_conductor_rd_requester_close(rq);
		return HAKO_ENOMEM;
	}
	/* "#rd..." is nobody's node id: the server answers it like a tool. */
	static _Atomic unsigned next;
	char id[64];
	snprintf(id, sizeof(id), "#rd-%d-%u", (int)getpid(), atomic_fetch_add(&next, 1));
	int linger = 0;
	zmq_setsockopt(rq->s, ZMQ_ROUTING_ID, id, strlen(id));
	zmq_setsockopt(rq->s, ZMQ_LINGER, &linger, sizeof(linger));
	/* The server takes requests from the holders of a node's key only: this node's. */
	hakoi_auth_t auth;
	hako_error_t err;
	hako_error_clear(&err);
	int r = hakoi_auth_load(cfg, &auth, &err);
	if (r == 0 && hakoi_auth_client_socket(&auth, rq->s) != 0) {
		r = HAKO_EIO;
	}
	hakoi_auth_close(&auth);
	if (r != 0) {
		char line[1600];
		HAKO_ERROR("%s", hako_error_format(&err, line, sizeof(line)));
		hako_conductor_rd_requester_close(rq);
		return r;
	}
	if (zmq_connect(rq->s, cfg->control_address) != 0) {
		hako_conductor_rd_requester_close(rq);
		return HAKO_EIO;
	}
	*out = rq;
	return 0;
}

int hako_conductor_rd_requester_ask(hako_conductor_rd_requester_t *rq, uint32_t eu, uint8_t to,
                                    int timeout_ms, hako_rd_commit_t *out, char *why,
                                    size_t why_len)
{
	if (why != NULL && why_len > 0) {
		why[0] = '\0';
	}
	if (rq == NULL) {
		return HAKO_EINVAL;
	}
	/* Answers to an earlier request that timed out may still come: dropped. */
	uint8_t in[1024];
	while (zmq_recv(rq->s, in, sizeof(in), ZMQ_DONTWAIT) >= 0) {
	}
	hakoi_msg_t m;
	memset(&m, 0, sizeof(m));
	m.type = HAKOI_MSG_RD_REQUEST;
	snprintf(m.node, sizeof(m.node), "#rd");
	m.rd_eu = eu;
	m.rd_to = to;
	m.rd_epoch = -1;
	m.rd_commit = -1;
	m.rd_release = -1;
	uint8_t buf[512];
	size_t len = hakoi_wire_encode(&m, buf);
	if (zmq_send(rq->s, buf, len, 0) < 0) {
		return HAKO_EIO;
	}
	hako_time_t until = hako_now_usec() + (hako_time_t)timeout_ms * 1000;
	for (;;) {
		hako_time_t left = until - hako_now_usec();
		if (left <= 0) {
			if (why != NULL) {
				snprintf(why, why_len,
				         "no answer from the server at %s within %d ms",
				         rq->address, timeout_ms);
			}
			return HAKO_ETIMEDOUT;
		}
		zmq_pollitem_t it = {rq->s, 0, ZMQ_POLLIN, 0};
		if (zmq_poll(&it, 1, (long)(left / 1000) + 1) <= 0) {
			continue;
		}
		int n = zmq_recv(rq->s, in, sizeof(in), ZMQ_DONTWAIT);
		hakoi_msg_t rep;
		char bad[160];
		if (n < 0 || (size_t)n > sizeof(in) ||
		    hakoi_wire_decode(in, (size_t)n, &rep, bad, sizeof(bad)) != 0 ||
		    rep.type != HAKOI_MSG_RD_REPLY || rep.rd_eu != eu || rep.rd_to != to) {
			continue; /* not the answer */
		}
		if (why != NULL) {
			snprintf(why, why_len, "%s", rep.reason);
		}
		if (rep.result == 0 && out != NULL) {
			*out = (hako_rd_commit_t){
			    .eu = eu,
			    .seq = rep.rd_seq,
			    .status = HAKO_RD_OWNER_RELEASING,
			    .epoch = (uint8_t)(rep.rd_epoch < 0 ? 0 : rep.rd_epoch),
			    .next = to,
			    .commit_usec = rep.rd_commit};
		}
		return rep.result;
	}
}

int hako_conductor_rd_request(const hako_conductor_config_t *cfg, uint32_t eu, uint8_t to,
                              int timeout_ms, hako_rd_commit_t *out, char *why, size_t why_len)
{
	hako_conductor_rd_requester_t *rq = NULL;
	int r = hako_conductor_rd_requester_open(cfg, &rq);
	if (r != 0) {
		if (why != NULL && why_len > 0) {
			snprintf(why, why_len, "cannot connect to %s: %s",
			         cfg != NULL ? cfg->control_address : "?", hako_strerror(r));
		}
		return r;
	}
	r = hako_conductor_rd_requester_ask(rq, eu, to, timeout_ms, out, why, why_len);
	hako_conductor_rd_requester_close(rq);
	return r;
}
