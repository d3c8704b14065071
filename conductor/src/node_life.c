/* A conductor node's membership and lifecycle (node.c has the node): joins, the start, stop,
 * reset and error of the federation carried between the server and its clients (a server
 * forwards its proxies' events and acknowledges them when the clients did; a client carries out
 * the server's events in its domain), and lost peers. Main thread only. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "conductor_internal.h"
#include "hako/log.h"

static int event_of(uint32_t op)
{
	switch (op) {
	case HAKOI_OP_START: return HAKO_EVENT_START;
	case HAKOI_OP_STOP: return HAKO_EVENT_STOP;
	case HAKOI_OP_RESET: return HAKO_EVENT_RESET;
	default: return HAKO_EVENT_ERROR;
	}
}

static uint32_t op_of(int event)
{
	switch (event) {
	case HAKO_EVENT_START: return HAKOI_OP_START;
	case HAKO_EVENT_STOP: return HAKOI_OP_STOP;
	case HAKO_EVENT_RESET: return HAKOI_OP_RESET;
	case HAKO_EVENT_ERROR: return HAKOI_OP_ERROR;
	default: return 0;
	}
}

/* A reason for the wire (HAKOI_WIRE_REASON bytes), cut if longer. */
static void copy_reason(char *dst, const char *src)
{
	size_t n = strnlen(src, HAKOI_WIRE_REASON - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void send_op(hako_conductor_node_t *n, struct hakoi_peer *p, uint16_t type, uint32_t op,
                    uint32_t request, int32_t result, const char *reason)
{
	hakoi_msg_t m;
	hakoi_base_msg(n, &m, type);
	/* A start carries the server's stop time, a stop the world time the server stopped at:
	 * every node's master stops its world there, not when it hears of the stop (a client
	 * may be up to Dmax ahead or behind). */
	if (type == HAKOI_MSG_EVENT && op == HAKOI_OP_START) {
		m.stop_time = (int64_t)hako_domain_stop_time(n->dom);
	} else if (type == HAKOI_MSG_EVENT && op == HAKOI_OP_STOP) {
		m.stop_time =
		    (int64_t)hako_domain_world_time(n->dom); /* where the server stopped */
	}
	m.op = op;
	m.request = request;
	m.result = result;
	snprintf(m.reason, sizeof(m.reason), "%s", reason != NULL ? reason : "");
	hakoi_send_ctl(n, p, &m);
}

/* Server: a JOIN from a client. */
void hakoi_on_join(hako_conductor_node_t *n, const char *from, const hakoi_msg_t *m)
{
	struct hakoi_peer *p = hakoi_peer_by_id(n, m->node);
	hakoi_msg_t r;
	hakoi_base_msg(n, &r, HAKOI_MSG_JOIN_REPLY);
	if (p == NULL) {
		r.result = HAKO_EPERM;
		snprintf(r.reason, sizeof(r.reason), "node '%s' is not a client of server '%s'",
		         m->node, n->cfg.node_id);
	} else if (m->config_hash != n->cfg.config_hash) {
		r.result = HAKO_ECONFIG;
		snprintf(r.reason, sizeof(r.reason),
		         "config hash 0x%08x of '%.40s' differs from 0x%08x of server '%.40s': the "
		         "conductor files disagree",
		         m->config_hash, m->node, n->cfg.config_hash, n->cfg.node_id);
	} else if (p->joined && p->incarnation != m->incarnation &&
	           hako_now_usec() - p->last_heard <= (hako_time_t)n->cfg.peer_timeout_ms * 1000) {
		/* Another process with the id of a live client (the same file run twice, or an
		 * impostor with its key): refused; the live one goes on. */
		r.result = HAKO_EBUSY;
		snprintf(r.reason, sizeof(r.reason),
		         "node '%s' is joined already and alive (heard %lld ms ago): a second "
		         "process with its id is refused",
		         p->id, (long long)((hako_now_usec() - p->last_heard) / 1000));
	} else if ((p->joined && p->incarnation != m->incarnation) || p->proxy == NULL) {
		/* A restarted client (or a dropped one): only into a federation that is stopped
		 * and reset, the only place its fresh world can start from. */
		int st = hako_domain_state(n->dom);
		if (st != HAKO_STATE_STOPPED || hako_domain_world_time(n->dom) != 0) {
			r.result = HAKO_ESTATE;
			snprintf(
			    r.reason, sizeof(r.reason),
			    "the federation is %s at world time %lld us: a restarted client joins "
			    "after stop and reset",
			    hako_state_name(st), (long long)hako_domain_world_time(n->dom));
		} else if (p->proxy == NULL) {
			char name[HAKO_NAME_MAX];
			snprintf(name, sizeof(name), "proxy:%s", p->id);
			hako_member_t *proxy = NULL;
			r.result = hako_member_register_proxy(n->dom, name, &proxy);
			pthread_mutex_lock(&n->stats_lock); /* the watcher reads it (needs_main) */
			p->proxy = proxy;
			pthread_mutex_unlock(&n->stats_lock);
			if (r.result != 0) {
				snprintf(r.reason, sizeof(r.reason),
				         "cannot register its proxy: %s", hako_strerror(r.result));
			}
		}
	}
	if (r.result == 0) {
		if (!p->joined || p->incarnation != m->incarnation) {
			HAKO_INFO("conductor %s: client %s joined", n->cfg.node_id, p->id);
		}
		if (p->incarnation != 0 && p->incarnation != m->incarnation) {
			pthread_mutex_lock(&n->stats_lock);
			p->restarts++;
			pthread_mutex_unlock(&n->stats_lock);
		}
		p->joined = 1;
		p->dropped = 0;
		p->incarnation = m->incarnation;
		snprintf(p->route, sizeof(p->route), "%s", from);
		p->last_heard = hako_now_usec();
		p->known_time = -1;
		p->pending_op = 0;
		hakoi_note_peer(p, "%s", "");
	} else if (p == NULL || p->refused_incarnation != m->incarnation) {
		/* Once per claimant: a refused node retries its join every few hundred ms. */
		HAKO_WARN("conductor %s: refused %s: %s", n->cfg.node_id, m->node, r.reason);
		if (p != NULL) {
			p->refused_incarnation = m->incarnation;
		}
	}
	hakoi_send_msg(n->ctl, from, &r);
	if (r.result == 0) {
		hakoi_ext_joined(n, p); /* after the reply: what they send comes after it */
	}
}

/* Client: the server answered our JOIN. */
void hakoi_on_join_reply(hako_conductor_node_t *n, struct hakoi_peer *p, const hakoi_msg_t *m)
{
	if (m->result != 0) {
		/* The join is retried: the refusal is logged once per reason. */
		if (strcmp(m->reason, p->refusal) != 0) {
			HAKO_ERROR("conductor %s: server %s refused to join: %s", n->cfg.node_id,
			           m->node, m->reason);
			copy_reason(p->refusal, m->reason);
		}
		hakoi_note_peer(p, "refused by the server: %.60s", m->reason);
		return;
	}
	p->refusal[0] = '\0';
	if (!p->joined) {
		HAKO_INFO("conductor %s: joined server %s", n->cfg.node_id, m->node);
	}
	p->joined = 1;
	p->incarnation = m->incarnation;
	p->last_heard = hako_now_usec();
	hakoi_note_peer(p, "%s", "");
}

/* Client: the server asks for a lifecycle operation here. */
void hakoi_on_event(hako_conductor_node_t *n, struct hakoi_peer *p, const hakoi_msg_t *m)
{
	int st = hako_domain_state(n->dom);
	p->pending_op = m->op;
	p->pending_req = m->request;
	switch (m->op) {
	case HAKOI_OP_START:
		if (st == HAKO_STATE_STOPPED) {
			n->fed_stop = m->stop_time;
			if (m->stop_time > 0) {
				hako_domain_set_stop_time(n->dom, m->stop_time);
			}
			hako_domain_start(n->dom);
		}
		break;
	case HAKOI_OP_STOP:
		/* The server stopped at world time m->stop_time. A node behind it, or at it, runs
		 * up to there and its master stops it there (the server's time lets it), so that
		 * every node ends at the same world time; a node past it stops at once. */
		if (st == HAKO_STATE_RUNNING || st == HAKO_STATE_RUNNABLE) {
			/* At the stop time already (the world may be up to Dmax ahead of the
			 * assets): the master still lets every asset run the steps up to it. */
			if (m->stop_time > 0 && m->stop_time >= hako_domain_world_time(n->dom) &&
			    hako_domain_set_stop_time(n->dom, m->stop_time) == 0) {
				n->fed_stop = m->stop_time;
			} else {
				hako_domain_stop(n->dom);
			}
		}
		break;
	case HAKOI_OP_RESET:
		if (st == HAKO_STATE_STOPPED || st == HAKO_STATE_ERROR) {
			hako_domain_reset(n->dom);
		}
		break;
	case HAKOI_OP_ERROR:
		if (st != HAKO_STATE_ERROR) {
			char why[300];
			snprintf(why, sizeof(why), "federation error (from %.60s): %.180s", m->node,
			         m->reason);
			hako_domain_fail(n->dom, why);
		}
		break;
	}
	/* Our proxy of the server has the same event from our own domain: acknowledged, since
	 * the server is the one doing it. */
	if (p->proxy != NULL && hako_member_event(p->proxy) == event_of(m->op)) {
		hako_member_ack(p->proxy, event_of(m->op));
	}
	p->requested_op = 0;
}

/* Server: a client did (or could not do) what we asked. */
void hakoi_on_ack(hako_conductor_node_t *n, struct hakoi_peer *p, const hakoi_msg_t *m)
{
	if (m->op != p->pending_op || m->request != p->pending_req) {
		return; /* an answer to an earlier request */
	}
	p->pending_op = 0;
	if (m->result != 0) {
		char why[320];
		snprintf(why, sizeof(why), "node '%s' could not %s: %s", p->id,
		         hakoi_op_name(m->op), m->reason);
		hako_domain_fail(n->dom, why);
		return;
	}
	if (p->proxy != NULL) {
		hako_member_ack(p->proxy, event_of(m->op));
	}
}

/* Server: a client asks to start / stop / reset the federation. */
void hakoi_on_sim_control(hako_conductor_node_t *n, const hakoi_msg_t *m)
{
	int r = 0;
	switch (m->op) {
	case HAKOI_OP_START: r = hako_domain_start(n->dom); break;
	case HAKOI_OP_STOP: r = hako_domain_stop(n->dom); break;
	case HAKOI_OP_RESET: r = hako_domain_reset(n->dom); break;
	default: break;
	}
	if (r != 0 && r != HAKO_ESTATE) {
		HAKO_WARN("conductor %s: %s requested by %s: %s", n->cfg.node_id,
		          hakoi_op_name(m->op), m->node, hako_strerror(r));
	}
}

void hakoi_on_failed(hako_conductor_node_t *n, const hakoi_msg_t *m)
{
	char why[320];
	snprintf(why, sizeof(why), "node '%s': %s", m->node, m->reason);
	if (hako_domain_state(n->dom) != HAKO_STATE_ERROR) {
		hako_domain_fail(n->dom, why);
	}
}

void hakoi_on_get_sim_state(hako_conductor_node_t *n, const char *from)
{
	hakoi_msg_t r;
	hakoi_base_msg(n, &r, HAKOI_MSG_SIM_STATE);
	r.state = (uint32_t)hako_domain_state(n->dom);
	r.world_time = hako_domain_world_time(n->dom);
	r.clients = (uint32_t)n->npeers;
	for (size_t i = 0; i < n->npeers; i++) {
		r.joined += n->peers[i].joined;
	}
	hakoi_send_msg(n->ctl, from, &r);
}

/* ---- the main thread: the local domain ---- */

/* Server: forward the proxies' events to the clients; acknowledge what needs no client. */
void hakoi_server_progress(hako_conductor_node_t *n)
{
	for (size_t i = 0; i < n->npeers; i++) {
		struct hakoi_peer *p = &n->peers[i];
		if (p->proxy == NULL) {
			continue;
		}
		int ev = hako_member_event(p->proxy);
		uint32_t op = op_of(ev);
		if (op == 0 || p->pending_op == op) {
			continue;
		}
		if (!p->joined) {
			if (ev == HAKO_EVENT_ERROR || ev == HAKO_EVENT_STOP ||
			    ev == HAKO_EVENT_RESET) {
				/* Nothing runs there to stop, reset or fail: it catches up at its
				 * join. */
				hako_member_ack(p->proxy, ev);
			} else {
				hakoi_note_peer(p, "not joined: the start waits for it");
			}
			continue;
		}
		char reason[HAKOI_WIRE_REASON] = "";
		if (ev == HAKO_EVENT_ERROR) {
			hako_domain_info_t info;
			if (hako_domain_get_info(n->dom, &info) == 0) {
				copy_reason(reason, info.error_reason);
			}
		}
		p->pending_op = op;
		p->pending_req = ++n->request_seq;
		send_op(n, p, HAKOI_MSG_EVENT, op, p->pending_req, 0, reason);
	}
}

/* Client: finish what the server asked for, forward what was asked here. */
void hakoi_client_progress(hako_conductor_node_t *n)
{
	struct hakoi_peer *p = &n->peers[0];
	int st = hako_domain_state(n->dom);
	if (p->pending_op != 0) {
		int done = 0, failed = 0;
		switch (p->pending_op) {
		case HAKOI_OP_START:
			done = st == HAKO_STATE_RUNNING;
			failed = st == HAKO_STATE_ERROR || st == HAKO_STATE_STOPPED;
			break;
		case HAKOI_OP_STOP:
			done = st == HAKO_STATE_STOPPED || st == HAKO_STATE_ERROR;
			break;
		case HAKOI_OP_RESET:
			if (st == HAKO_STATE_STOPPED && hako_domain_world_time(n->dom) != 0) {
				hako_domain_reset(
				    n->dom); /* after a stop the server's restart asked for */
			}
			done = st == HAKO_STATE_STOPPED && hako_domain_world_time(n->dom) == 0;
			break;
		case HAKOI_OP_ERROR: done = st == HAKO_STATE_ERROR; break;
		}
		if (done || failed) {
			char reason[HAKOI_WIRE_REASON] = "";
			if (failed) {
				hako_domain_info_t info;
				snprintf(reason, sizeof(reason), "%s is %s", n->cfg.node_id,
				         hako_state_name(st));
				if (hako_domain_get_info(n->dom, &info) == 0 &&
				    info.error_reason[0]) {
					copy_reason(reason, info.error_reason);
				}
			}
			if (p->pending_req != 0) { /* 0: our own (a server restart) */
				send_op(n, p, HAKOI_MSG_ACK_EVENT, p->pending_op, p->pending_req,
				        failed ? HAKO_ESTATE : 0, reason);
			}
			p->pending_op = 0;
		}
	}
	/* Errors of this node's own assets go to the server, which fails the federation. */
	if (st == HAKO_STATE_ERROR && n->last_state != HAKO_STATE_ERROR && p->joined &&
	    p->pending_op != HAKOI_OP_ERROR) {
		hako_domain_info_t info;
		char reason[HAKOI_WIRE_REASON] = "";
		if (hako_domain_get_info(n->dom, &info) == 0) {
			copy_reason(reason, info.error_reason);
		}
		hakoi_msg_t m;
		hakoi_base_msg(n, &m, HAKOI_MSG_FAILED);
		snprintf(m.reason, sizeof(m.reason), "%s", reason);
		hakoi_send_ctl(n, p, &m);
	}
	n->last_state = (uint32_t)st;
	/* An event of our proxy that the server did not send: a user started (stopped, reset)
	 * this node. The server does it for all; its event then acknowledges ours. */
	if (p->proxy != NULL) {
		int ev = hako_member_event(p->proxy);
		uint32_t op = op_of(ev);
		if (ev == HAKO_EVENT_ERROR) {
			hako_member_ack(p->proxy, ev);
		} else if (op != 0 && p->pending_op == op && p->pending_req == 0) {
			/* Our own reset after the server restarted (on_time): no server event will
			 * acknowledge it, and the domain stays Resetting until someone does. */
			hako_member_ack(p->proxy, ev);
		} else if (ev == HAKO_EVENT_STOP && n->fed_stop > 0 &&
		           hako_domain_world_time(n->dom) >= n->fed_stop) {
			/* The server's stop time, reached here too: the server stops there itself.
			 */
			hako_member_ack(p->proxy, ev);
		} else if (op != 0 && p->pending_op != op && p->requested_op != op) {
			if (p->joined) {
				p->requested_op = op;
				send_op(n, p, HAKOI_MSG_SIM_CONTROL, op, ++n->request_seq, 0, "");
			} else if (ev != HAKO_EVENT_START) {
				hako_member_ack(p->proxy,
				                ev); /* no server: stop and reset are local */
			}
		}
	}
}

/* Timers: joins, lost peers. */
void hakoi_check_peers(hako_conductor_node_t *n, hako_time_t now)
{
	const hako_time_t timeout = (hako_time_t)n->cfg.peer_timeout_ms * 1000;
	if (n->cfg.role == HAKO_CONDUCTOR_CLIENT) {
		struct hakoi_peer *p = &n->peers[0];
		if (p->joined && now - p->last_heard > timeout) {
			if (!p->lost_reported) {
				HAKO_WARN(
				    "conductor %s: server %s unreachable for %lld ms: world clock "
				    "held",
				    n->cfg.node_id, p->id,
				    (long long)((now - p->last_heard) / 1000));
				p->lost_reported = 1;
			}
			hakoi_note_peer(p, "server unreachable for %.1f s: world clock held",
			                (double)(now - p->last_heard) / 1e6);
		}
		if (!p->joined && now >= n->next_join && !atomic_load(&n->join_held)) {
			hakoi_msg_t m;
			hakoi_base_msg(n, &m, HAKOI_MSG_JOIN);
			hakoi_send_ctl(n, p, &m);
			n->next_join = now + HAKOI_JOIN_RETRY_USEC;
		}
		return;
	}
	for (size_t i = 0; i < n->npeers; i++) {
		struct hakoi_peer *p = &n->peers[i];
		if (!p->joined || now - p->last_heard <= timeout) {
			continue;
		}
		/* This process may itself have been stopped (SIGSTOP, a stalled machine): what
		 * arrived meanwhile is read before a peer is declared lost. */
		hakoi_drain(n, n->ctl, 1);
		if (now - p->last_heard <= timeout) {
			continue;
		}
		int st = hako_domain_state(n->dom);
		HAKO_WARN("conductor %s: client %s lost (no message for %lld ms)", n->cfg.node_id,
		          p->id, (long long)((now - p->last_heard) / 1000));
		p->joined = 0;
		hakoi_ext_peer_lost(n, p);
		p->pending_op = 0;
		if (st == HAKO_STATE_STOPPED || st == HAKO_STATE_ERROR) {
			hakoi_note_peer(p, "lost");
		} else if (n->cfg.on_client_loss == HAKO_CLIENT_LOSS_DROP) {
			HAKO_WARN("conductor %s: dropping client %s (on_client_loss: drop)",
			          n->cfg.node_id, p->id);
			/* Under stats_lock: the watcher thread looks at the proxies (needs_main).
			 */
			pthread_mutex_lock(&n->stats_lock);
			hako_member_unregister(p->proxy);
			p->proxy = NULL;
			pthread_mutex_unlock(&n->stats_lock);
			p->dropped = 1;
		} else {
			char why[160];
			snprintf(why, sizeof(why), "client '%s' lost: no message for %lld ms",
			         p->id, (long long)((now - p->last_heard) / 1000));
			hako_domain_fail(n->dom, why);
		}
	}
}
