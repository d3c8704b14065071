/* RD-Full on the conductor's extension seam (hako/rd_full.h, docs/rd.md "RD-Full"): the server
 * node runs the commit authority (hako/rd_master.h) and holds its domain's world with a
 * barrier member while a commit is not acknowledged; every node writes the authority's state
 * of each EU into its own domain (hako_rd_mirror) and relays what its executors write there:
 * an owner's context, an activation. A client relays on the conductor's ordered path
 * (before_publish, hako_conductor_ext_send_ordered), before the time it sends next, so that
 * the server has every activation of a node before any world time of that node that could let
 * it take the EU back.
 *
 * Threads: every op runs on the node's main thread but before_publish (either thread, under
 * the node's send lock) and wants_tick (the watcher); the mirror, which before_publish scans,
 * is under mirror_lock. */
#include <inttypes.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/log.h"
#include "hako/rd_full.h"
#include "rd_full_wire.h"

#define BARRIER_FREE (1ll << 60) /* the barrier member's time when it holds nothing */

struct rdf_peer {
	char id[HAKO_CONDUCTOR_ID_MAX];
	uint8_t rd_id; /* its node id in the RD config (0: it hosts no EU) */
};

typedef struct rdf {
	hako_conductor_node_t *node;
	const hako_conductor_config_t *cfg;
	hako_domain_t *dom;
	hako_rd_config_t *rd;   /* NULL: no rd_config_path, requests are refused */
	uint8_t self;           /* this node's id in the RD config, 0 if none */
	struct rdf_peer *peers; /* server: its clients; client: the server */
	size_t npeers;
	hako_rd_master_t *auth;   /* server: the commit authority */
	hako_rd_mirror_t *mirror; /* this domain's EU channels (under mirror_lock) */
	pthread_mutex_t mirror_lock;
	hako_member_t *barrier; /* server: holds the world while a commit is unacknowledged */
	hako_time_t barrier_at;
	/* Client: holds this node's world at a commit point whose new owner is here until the
	 * owner's context arrived (per EU, by index in the RD config: the commit point and epoch
	 * waited for, -1 if none; and when the wait began, wall time). */
	hako_member_t *hold;
	hako_time_t hold_at;
	hako_time_t *wait_commit;
	uint8_t *wait_epoch;
	hako_time_t *wait_since;
	uint32_t *changed;
	/* Server: the world time at which the authority has a lost node's EU to give to another
	 * (hako_rd_master_next_due), -1 if none: the watcher asks for a tick then (wants_tick),
	 * not at the main thread's next round, up to 100 ms of wall time later. */
	_Atomic hako_time_t due;
	uint32_t resets; /* a reset ends every wait */
} rdf_t;

static uint8_t rd_id_of(const hako_rd_config_t *rd, const char *name)
{
	for (size_t i = 0; i < rd->node_count; i++) {
		if (strcmp(rd->node_names[i], name) == 0) {
			return rd->node_ids[i];
		}
	}
	return 0;
}

static const struct rdf_peer *peer_of_rd(const rdf_t *f, uint8_t id)
{
	for (size_t i = 0; i < f->npeers && id != 0; i++) {
		if (f->peers[i].rd_id == id) {
			return &f->peers[i];
		}
	}
	return NULL;
}

static uint8_t rd_id_of_peer(const rdf_t *f, const char *peer)
{
	for (size_t i = 0; peer != NULL && i < f->npeers; i++) {
		if (strcmp(f->peers[i].id, peer) == 0) {
			return f->peers[i].rd_id;
		}
	}
	return 0;
}

static int is_server(const rdf_t *f)
{
	return f->cfg->role == HAKO_CONDUCTOR_SERVER;
}

/* ---- open / close ---- */

static void rdf_close(void *state)
{
	rdf_t *f = state;
	if (f == NULL) {
		return;
	}
	hako_rd_mirror_close(f->mirror);
	hako_member_unregister(f->barrier);
	hako_member_unregister(f->hold);
	hako_rd_master_destroy(f->auth);
	hako_rd_config_free(f->rd);
	free(f->wait_commit);
	free(f->wait_epoch);
	free(f->wait_since);
	free(f->changed);
	free(f->peers);
	pthread_mutex_destroy(&f->mirror_lock);
	free(f);
}

static int open_rd(rdf_t *f, hako_error_t *err)
{
	const hako_conductor_config_t *c = f->cfg;
	int r = hako_rd_config_load(c->rd_config_path, &f->rd, err);
	if (r != 0) {
		return r;
	}
	if (f->rd->mode != HAKO_RD_MODE_FULL) {
		return hako_error_set(err, HAKO_ECONFIG, c->path, 0, 0,
		                      "rd_config_path: %s is an RD-Light config; a federation's "
		                      "needs \"mode\": \"full\"",
		                      c->rd_config_path);
	}
	f->self = rd_id_of(f->rd, c->node_id);
	for (size_t i = 0; i < f->npeers; i++) {
		f->peers[i].rd_id = rd_id_of(f->rd, f->peers[i].id);
	}
	if (is_server(f)) {
		/* Every candidate must be a client: the server's own executors would need the
		 * relay's ordering inside this process, which it does not have yet. */
		for (size_t e = 0; e < f->rd->eu_count; e++) {
			const hako_rd_eu_config_t *eu = &f->rd->eus[e];
			for (size_t k = 0; k < eu->candidate_count; k++) {
				if (peer_of_rd(f, eu->candidates[k]) == NULL) {
					return hako_error_set(
					    err, HAKO_ECONFIG, c->rd_config_path, 0, 0,
					    "EU %s: candidate node %u is not a client of server %s "
					    "(an EU runs on the client nodes; the node names of "
					    "the RD config are the conductor node ids)",
					    eu->name, eu->candidates[k], c->node_id);
				}
			}
		}
		if ((r = hako_rd_master_create(f->rd, c->delta_usec, c->max_delay_usec,
		                               &f->auth)) != 0 ||
		    (r = hako_member_register_proxy(f->dom, "rd:barrier", &f->barrier)) != 0) {
			return hako_error_set(err, r, c->path, 0, 0,
			                      "RD-Full: cannot set up the commit authority: %s",
			                      hako_strerror(r));
		}
		hako_member_set_time(f->barrier, BARRIER_FREE);
		f->barrier_at = BARRIER_FREE;
	}
	if (!is_server(f) && f->self != 0) {
		if ((r = hako_member_register_proxy(f->dom, "rd:hold", &f->hold)) != 0) {
			return hako_error_set(err, r, c->path, 0, 0,
			                      "RD-Full: cannot register the hold member: %s",
			                      hako_strerror(r));
		}
		hako_member_set_time(f->hold, BARRIER_FREE);
		f->hold_at = BARRIER_FREE;
	}
	size_t neu = f->rd->eu_count;
	f->wait_commit = malloc(neu * sizeof(*f->wait_commit));
	f->wait_epoch = calloc(neu, sizeof(*f->wait_epoch));
	f->wait_since = calloc(neu, sizeof(*f->wait_since));
	f->changed = calloc(neu, sizeof(*f->changed));
	if (f->wait_commit == NULL || f->wait_epoch == NULL || f->wait_since == NULL ||
	    f->changed == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, c->rd_config_path, 0, 0,
		                      "RD-Full: out of memory for %zu EUs", neu);
	}
	for (size_t e = 0; e < neu; e++) {
		f->wait_commit[e] = -1;
	}
	r = hako_rd_mirror_open(f->dom, f->rd, f->self, &f->mirror);
	if (r != 0) {
		return hako_error_set(err, r, c->rd_config_path, 0, 0,
		                      "RD-Full: cannot open the EUs' channels: %s",
		                      hako_strerror(r));
	}
	for (size_t e = 0; f->auth != NULL && e < f->rd->eu_count; e++) {
		hako_rd_commit_t st;
		hako_rd_master_get(f->auth, f->rd->eus[e].id, &st);
		hako_rd_mirror_apply(f->mirror, &st);
	}
	HAKO_INFO("conductor %s: RD-Full over %zu EUs (%s, node %u)", c->node_id, f->rd->eu_count,
	          c->rd_config_path, f->self);
	return 0;
}

static int rdf_open(hako_conductor_node_t *node, void **state, hako_error_t *err)
{
	rdf_t *f = calloc(1, sizeof(*f));
	if (f == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, "", 0, 0, "out of memory");
	}
	pthread_mutex_init(&f->mirror_lock, NULL);
	atomic_init(&f->due, -1);
	f->node = node;
	f->cfg = hako_conductor_node_config(node);
	f->dom = hako_conductor_node_domain(node);
	f->npeers = is_server(f) ? f->cfg->client_count : 1;
	f->peers = calloc(f->npeers > 0 ? f->npeers : 1, sizeof(*f->peers));
	if (f->peers == NULL) {
		rdf_close(f);
		return hako_error_set(err, HAKO_ENOMEM, "", 0, 0, "out of memory");
	}
	for (size_t i = 0; i < f->npeers; i++) {
		snprintf(f->peers[i].id, sizeof(f->peers[i].id), "%s",
		         is_server(f) ? f->cfg->clients[i] : f->cfg->server_id);
	}
	int r = f->cfg->rd_config_path[0] != '\0' ? open_rd(f, err) : 0;
	if (r != 0) {
		rdf_close(f);
		return r;
	}
	*state = f;
	return 0;
}

/* ---- sending ---- */

static int send_rdf(rdf_t *f, const char *peer, const hakoi_rdf_msg_t *m, const void *payload,
                    size_t len)
{
	uint8_t buf[HAKOI_RDF_MAX];
	size_t blen = hakoi_rdf_encode(m, buf);
	return hako_conductor_ext_send(f->node, HAKO_RD_FULL_EXT_ID, peer, buf, blen, payload, len);
}

static void state_msg(hakoi_rdf_msg_t *m, const hako_rd_commit_t *c)
{
	hakoi_rdf_init(m, HAKOI_RDF_STATE);
	m->eu = c->eu;
	m->seq = c->seq;
	m->status = (uint32_t)c->status;
	m->epoch = c->epoch;
	m->curr = c->curr;
	m->next = c->next;
	m->from_stored = (uint32_t)c->from_stored;
	m->commit = c->commit_usec;
}

static void mirror_apply(rdf_t *f, const hako_rd_commit_t *c, int *r)
{
	pthread_mutex_lock(&f->mirror_lock);
	int k = hako_rd_mirror_apply(f->mirror, c);
	pthread_mutex_unlock(&f->mirror_lock);
	if (r != NULL) {
		*r = k;
	}
}

/* ---- server ---- */

/* The barrier member holding the server's world at the lowest unacknowledged commit's request
 * time b (a member at b - Dmax: the world rule stops the world at b), or free. */
static void update_barrier(rdf_t *f)
{
	hako_time_t b = hako_rd_master_barrier(f->auth);
	hako_time_t t = b < 0                        ? BARRIER_FREE
	                : b > f->cfg->max_delay_usec ? b - f->cfg->max_delay_usec
	                                             : 0;
	if (t != f->barrier_at) {
		hako_member_set_time(f->barrier, t);
		f->barrier_at = t;
	}
}

/* The authority's state of eu into this domain and to every joined client. */
static void broadcast(rdf_t *f, uint32_t eu)
{
	hako_rd_commit_t c;
	if (hako_rd_master_get(f->auth, eu, &c) != 0) {
		return;
	}
	mirror_apply(f, &c, NULL);
	if (f->self != 0) {
		hako_rd_master_ack(f->auth, f->self, eu, c.seq);
	}
	hakoi_rdf_msg_t m;
	state_msg(&m, &c);
	for (size_t i = 0; i < f->npeers; i++) {
		send_rdf(f, f->peers[i].id, &m, NULL, 0); /* HAKO_ESTATE: not joined */
	}
	update_barrier(f);
}

/* A context for the new owner's node. */
static void send_context(rdf_t *f, uint32_t eu, uint8_t to, const void *pdu, size_t len, int epoch,
                         hako_time_t release)
{
	const struct rdf_peer *p = peer_of_rd(f, to);
	hakoi_rdf_msg_t m;
	hakoi_rdf_init(&m, HAKOI_RDF_CONTEXT);
	m.eu = eu;
	m.epoch = epoch;
	m.release = release;
	int r = p != NULL ? send_rdf(f, p->id, &m, pdu != NULL ? pdu : "", len) : HAKO_ESTATE;
	if (r == HAKO_ESTATE) {
		HAKO_WARN("conductor %s: EU %" PRIu32
		          ": node %u is not joined; its context waits for the authority's timeout",
		          f->cfg->node_id, eu, to);
	} else if (r != 0) {
		HAKO_WARN("conductor %s: EU %" PRIu32 ": cannot send the context to %s: %s",
		          f->cfg->node_id, eu, p->id, hako_strerror(r));
	}
}

static void rdf_joined(void *state, const char *peer)
{
	rdf_t *f = state;
	if (f->auth == NULL) {
		return;
	}
	uint8_t id = rd_id_of_peer(f, peer);
	if (id != 0) {
		hako_rd_master_node_back(f->auth, id);
	}
	for (size_t e = 0; e < f->rd->eu_count; e++) {
		hako_rd_commit_t c;
		hako_rd_master_get(f->auth, f->rd->eus[e].id, &c);
		hakoi_rdf_msg_t m;
		state_msg(&m, &c);
		send_rdf(f, peer, &m, NULL, 0);
	}
}

static void reply(rdf_t *f, const hako_conductor_ext_msg_t *to, const hakoi_rdf_msg_t *req, int r,
                  const char *why)
{
	hakoi_rdf_msg_t m;
	hakoi_rdf_init(&m, HAKOI_RDF_REPLY);
	m.eu = req->eu;
	m.to = req->to;
	m.result = r;
	if (r == 0) {
		hako_rd_commit_t c;
		hako_rd_master_get(f->auth, req->eu, &c);
		m.seq = c.seq;
		m.epoch = c.epoch;
		m.commit = c.commit_usec;
	}
	snprintf(m.reason, sizeof(m.reason), "%s", why);
	uint8_t buf[HAKOI_RDF_MAX];
	size_t len = hakoi_rdf_encode(&m, buf);
	hako_conductor_ext_reply(f->node, to, buf, len);
}

static void server_msg(rdf_t *f, const hako_conductor_ext_msg_t *x, const hakoi_rdf_msg_t *m)
{
	if (f->auth == NULL) {
		if (m->kind == HAKOI_RDF_REQUEST) {
			reply(f, x, m, HAKO_ESTATE, "this federation has no rd_config_path");
		}
		return;
	}
	uint8_t from = rd_id_of_peer(f, x->peer);
	char why[HAKOI_RDF_REASON] = "";
	int r;
	switch (m->kind) {
	case HAKOI_RDF_REQUEST:
		/* Hold the world first (a member at 0 stops it wherever it is past Dmax), then read
		 * it: the commit point is computed from a world time that no longer moves. */
		hako_member_set_time(f->barrier, 0);
		f->barrier_at = 0;
		r = hako_rd_master_request(f->auth, m->eu, (uint8_t)m->to,
		                           hako_domain_world_time(f->dom), why, sizeof(why));
		if (r == 0) {
			broadcast(f, m->eu); /* which sets the barrier */
		} else {
			update_barrier(f);
			HAKO_INFO("conductor %s: RD request of EU %" PRIu32
			          " to node %u refused: %s",
			          f->cfg->node_id, m->eu, m->to, why);
		}
		reply(f, x, m, r, why);
		return;
	case HAKOI_RDF_ACK:
		if (x->peer != NULL) {
			hako_rd_master_ack(f->auth, from, m->eu, m->seq);
			update_barrier(f);
		}
		return;
	case HAKOI_RDF_CONTEXT: {
		if (x->peer != NULL && m->epoch >= 0 &&
		    hako_rd_master_store_checkpoint(f->auth, m->eu, from, (uint8_t)m->epoch,
		                                    x->payload, x->payload_len) == 0) {
			return; /* the owner's checkpoint: kept for a restart, sent nowhere */
		}
		if (x->peer == NULL || m->epoch < 0 ||
		    hako_rd_master_store_context(f->auth, m->eu, (uint8_t)m->epoch, x->payload,
		                                 x->payload_len) != 0) {
			HAKO_WARN(
			    "conductor %s: a context of EU %" PRIu32
			    " (epoch %d) from %s is not for the hand-off in progress: dropped",
			    f->cfg->node_id, m->eu, m->epoch, x->peer != NULL ? x->peer : "a tool");
			return;
		}
		hako_rd_commit_t c;
		hako_rd_master_get(f->auth, m->eu, &c);
		send_context(f, m->eu, c.next, x->payload, x->payload_len, -1, -1);
		return;
	}
	case HAKOI_RDF_ACTIVATED:
		if (x->peer != NULL && m->epoch >= 0 &&
		    hako_rd_master_activated(f->auth, from, m->eu, (uint8_t)m->epoch) == 0) {
			broadcast(f, m->eu);
		}
		return;
	default: return;
	}
}

static void server_tick(rdf_t *f)
{
	/* The barrier stands for no peer: it acknowledges every event at once. */
	int ev = hako_member_event(f->barrier);
	if (ev > HAKO_EVENT_NONE) {
		hako_member_ack(f->barrier, ev);
	}
	hako_member_heartbeat(f->barrier);
	uint32_t *changed = f->changed;
	/* A lost node's EUs are due: hold the world first (as for a request), then read it, so
	 * that their restarts' commit points come Dmax sooner. The barrier's update below lets
	 * it go again, or holds it at the commits. */
	hako_time_t due = atomic_load(&f->due);
	int held = due >= 0 && hako_domain_world_time(f->dom) >= due;
	if (held) {
		hako_member_set_time(f->barrier, 0);
		f->barrier_at = 0;
	}
	hako_time_t now = hako_domain_world_time(f->dom);
	int k = held ? hako_rd_master_tick_held(f->auth, now, changed, (int)f->rd->eu_count)
	             : hako_rd_master_tick(f->auth, now, changed, (int)f->rd->eu_count);
	/* Still due after the tick: nobody can take it now (no live candidate); the rounds look
	 * again, the watcher does not. */
	due = hako_rd_master_next_due(f->auth);
	atomic_store(&f->due, due >= 0 && due <= now ? -1 : due);
	for (int i = 0; i < k; i++) {
		broadcast(f, changed[i]);
		hako_rd_commit_t c;
		hako_rd_master_get(f->auth, changed[i], &c);
		if (c.status == HAKO_RD_OWNER_RELEASING && c.from_stored) {
			size_t len = 0;
			const void *pdu = hako_rd_master_context(f->auth, changed[i], &len);
			send_context(f, changed[i], c.next, pdu, len, c.epoch, c.commit_usec);
		}
	}
	update_barrier(f);
}

static void rdf_peer_time(void *state, const char *peer, hako_time_t world)
{
	rdf_t *f = state;
	uint8_t id = f->auth != NULL ? rd_id_of_peer(f, peer) : 0;
	if (id != 0) {
		hako_rd_master_node_time(f->auth, id, world);
	}
}

static void rdf_peer_lost(void *state, const char *peer)
{
	rdf_t *f = state;
	uint8_t id = f->auth != NULL ? rd_id_of_peer(f, peer) : 0;
	if (id != 0) {
		hako_rd_master_node_lost(f->auth, id, hako_domain_world_time(f->dom));
		atomic_store(&f->due, hako_rd_master_next_due(f->auth));
		update_barrier(f);
	}
}

/* ---- client ---- */

/* The hold member at the lowest commit point waited for, or free. A new owner's world may
 * reach its commit point C and one step beyond, not further, until the context arrived
 * (h = C + 2 delta - Dmax: T + delta - h <= Dmax stops T at C + delta): a context that comes
 * in time is there at its first poll after C (its first model step is the one after C), a
 * later one at the poll after that. */
static void update_hold(rdf_t *f)
{
	if (f->hold == NULL) {
		return;
	}
	hako_time_t h = BARRIER_FREE;
	for (size_t e = 0; e < f->rd->eu_count; e++) {
		if (f->wait_commit[e] >= 0) {
			hako_time_t t =
			    f->wait_commit[e] + 2 * f->cfg->delta_usec - f->cfg->max_delay_usec;
			if (t < h) {
				h = t < 0 ? 0 : t;
			}
		}
	}
	if (h != f->hold_at) {
		hako_member_set_time(f->hold, h);
		f->hold_at = h;
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

static void client_tick(rdf_t *f)
{
	if (f->hold == NULL) {
		return;
	}
	int ev = hako_member_event(f->hold);
	if (ev > HAKO_EVENT_NONE) {
		hako_member_ack(f->hold, ev);
	}
	hako_member_heartbeat(f->hold);
	uint32_t resets = hako_domain_reset_count(f->dom);
	if (resets != f->resets) {
		f->resets = resets;
		for (size_t e = 0; e < f->rd->eu_count; e++) {
			f->wait_commit[e] = -1;
		}
	}
	hako_time_t now = hako_now_usec();
	for (size_t e = 0; e < f->rd->eu_count; e++) {
		if (f->wait_commit[e] >= 0 && now - f->wait_since[e] > HOLD_MAX_USEC) {
			HAKO_WARN(
			    "conductor %s: EU %s: no context for the hand-off at %.6f s after "
			    "%.1f s: the node goes on without it",
			    f->cfg->node_id, f->rd->eus[e].name, (double)f->wait_commit[e] / 1e6,
			    (double)HOLD_MAX_USEC / 1e6);
			f->wait_commit[e] = -1;
		}
	}
	update_hold(f);
}

static void client_msg(rdf_t *f, const hako_conductor_ext_msg_t *x, const hakoi_rdf_msg_t *m)
{
	if (f->mirror == NULL) {
		return;
	}
	switch (m->kind) {
	case HAKOI_RDF_STATE: {
		hako_rd_commit_t c = {m->eu,
		                      m->seq,
		                      (hako_rd_status_t)m->status,
		                      (uint8_t)(m->epoch < 0 ? 0 : m->epoch),
		                      (uint8_t)m->curr,
		                      (uint8_t)m->next,
		                      m->commit,
		                      (int)m->from_stored};
		/* The new owner's node waits at the commit point for the context (HOLD). */
		int k = eu_index(f->rd, m->eu);
		if (k >= 0 && f->hold != NULL) {
			if (c.status == HAKO_RD_OWNER_RELEASING && c.next == f->self &&
			    c.commit_usec >= 0) {
				if (f->wait_commit[k] < 0 || f->wait_epoch[k] != c.epoch) {
					f->wait_commit[k] = c.commit_usec;
					f->wait_epoch[k] = c.epoch;
					f->wait_since[k] = hako_now_usec();
				}
			} else {
				f->wait_commit[k] = -1;
			}
			update_hold(f);
		}
		int r;
		mirror_apply(f, &c, &r);
		if (r != 0) {
			HAKO_WARN("conductor %s: cannot write the state of EU %" PRIu32 ": %s",
			          f->cfg->node_id, m->eu, hako_strerror(r));
			return;
		}
		hakoi_rdf_msg_t a;
		hakoi_rdf_init(&a, HAKOI_RDF_ACK);
		a.eu = m->eu;
		a.seq = m->seq;
		send_rdf(f, NULL, &a, NULL, 0);
		return;
	}
	case HAKOI_RDF_CONTEXT: {
		pthread_mutex_lock(&f->mirror_lock);
		int r = hako_rd_mirror_put_context(f->mirror, m->eu,
		                                   x->payload_len > 0 ? x->payload : NULL,
		                                   x->payload_len, m->epoch, m->release);
		pthread_mutex_unlock(&f->mirror_lock);
		int k = eu_index(f->rd, m->eu);
		if (r == 0 && k >= 0) { /* it is here: the world may go on */
			f->wait_commit[k] = -1;
			update_hold(f);
		}
		return;
	}
	case HAKOI_RDF_REPLY:
		HAKO_INFO("conductor %s: RD request of EU %" PRIu32 ": %s", f->cfg->node_id, m->eu,
		          m->result == 0 ? "committed" : m->reason);
		return;
	default: return;
	}
}

static void relay_one(void *arg, const hako_rd_relay_t *rl)
{
	rdf_t *f = arg;
	hakoi_rdf_msg_t m;
	hakoi_rdf_init(&m,
	               rl->kind == HAKO_RD_RELAY_CONTEXT ? HAKOI_RDF_CONTEXT : HAKOI_RDF_ACTIVATED);
	m.eu = rl->eu;
	m.epoch = rl->epoch;
	uint8_t buf[HAKOI_RDF_MAX];
	size_t len = hakoi_rdf_encode(&m, buf);
	int r = hako_conductor_ext_send_ordered(
	    f->node, HAKO_RD_FULL_EXT_ID, buf, len,
	    rl->kind == HAKO_RD_RELAY_CONTEXT ? (rl->pdu != NULL ? rl->pdu : "") : NULL, rl->len);
	if (r != 0) {
		HAKO_WARN("conductor %s: cannot relay EU %" PRIu32 "'s %s: %s", f->cfg->node_id,
		          rl->eu, rl->kind == HAKO_RD_RELAY_CONTEXT ? "context" : "activation",
		          hako_strerror(r));
	}
}

/* ---- the ops ---- */

static void rdf_on_message(void *state, const hako_conductor_ext_msg_t *x)
{
	rdf_t *f = state;
	hakoi_rdf_msg_t m;
	char why[160];
	if (hakoi_rdf_decode(x->body, x->len, &m, why, sizeof(why)) != 0) {
		HAKO_WARN("conductor %s: dropped an RD-Full message from %s: %s", f->cfg->node_id,
		          x->peer != NULL ? x->peer : "a tool", why);
		return;
	}
	if (is_server(f)) {
		server_msg(f, x, &m);
	} else {
		client_msg(f, x, &m);
	}
}

static void rdf_tick(void *state)
{
	rdf_t *f = state;
	if (f->auth != NULL) {
		server_tick(f);
	} else if (f->rd != NULL) {
		client_tick(f);
	}
}

static void rdf_before_publish(void *state)
{
	rdf_t *f = state;
	if (f->mirror != NULL && !is_server(f)) {
		pthread_mutex_lock(&f->mirror_lock);
		hako_rd_mirror_scan(f->mirror, relay_one, f);
		pthread_mutex_unlock(&f->mirror_lock);
	}
}

static int rdf_wants_tick(void *state)
{
	rdf_t *f = state;
	hako_time_t due = atomic_load(&f->due);
	return (f->barrier != NULL && hako_member_event(f->barrier) > HAKO_EVENT_NONE) ||
	       (f->hold != NULL && hako_member_event(f->hold) > HAKO_EVENT_NONE) ||
	       (due >= 0 && hako_domain_world_time(f->dom) >= due);
}

static const hako_conductor_ext_ops_t rdf_ops = {
    .name = "rd-full",
    .id = HAKO_RD_FULL_EXT_ID,
    .payload_max = HAKO_CONDUCTOR_EXT_PAYLOAD_MAX,
    .open = rdf_open,
    .close = rdf_close,
    .joined = rdf_joined,
    .on_message = rdf_on_message,
    .tick = rdf_tick,
    .peer_time = rdf_peer_time,
    .peer_lost = rdf_peer_lost,
    .before_publish = rdf_before_publish,
    .wants_tick = rdf_wants_tick,
};

/* Without an RD config: requests are refused, and no message has a second part, so the
 * node's sockets keep their small bound on what a peer may announce. */
static const hako_conductor_ext_ops_t rdf_ops_bare = {
    .name = "rd-full",
    .id = HAKO_RD_FULL_EXT_ID,
    .payload_max = 0,
    .open = rdf_open,
    .close = rdf_close,
    .on_message = rdf_on_message,
};

const hako_conductor_ext_ops_t *hako_rd_full_ext(void)
{
	return &rdf_ops;
}

int hako_rd_full_node_start(const hako_conductor_config_t *cfg, hako_domain_t *dom,
                            hako_conductor_node_t **out, hako_error_t *err)
{
	const hako_conductor_ext_ops_t *exts[] = {
	    cfg != NULL && cfg->rd_config_path[0] != '\0' ? &rdf_ops : &rdf_ops_bare};
	return hako_conductor_node_start_ext(cfg, dom, exts, 1, out, err);
}
