/* A conductor node's time path (node.c has the node): the watcher thread sends this node's
 * world time as soon as it moves (or at each publish boundary, and at least every heartbeat),
 * and the main thread takes a peer's time into its proxy (hakoi_on_time), then sends this
 * node's own at once when the world moved on it. Times only ever hold a clock back: a proxy's
 * time is the peer's world time as last heard. */
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

/* ---- the watcher thread: this node's world time out ---- */

/* Whether a time change is worth a message now. */
/* The world time after `last` (the last one sent) up to which this node need not publish.
 * interval: the next boundary. immediate: every step while Dmax allows no slack (lock-step);
 * with slack, once the world moved Dmax/2 - delta past `last`, or as soon as a peer needs
 * it: a peer at K may step only while K + delta - (our time as it knows it) <= Dmax. Two
 * nodes can then never both wait on times the other has not sent (each would have to be
 * more than Dmax - slack ahead of the other), and the node stepping its world pays no
 * wake-up for the steps in between (hako_domain_wait_watch). */
static hako_time_t publish_beyond(hako_conductor_node_t *n, hako_time_t last)
{
	const hako_conductor_config_t *c = &n->cfg;
	if (c->publish_mode != HAKO_PUBLISH_IMMEDIATE) {
		return (last / c->publish_interval_usec + 1) * c->publish_interval_usec - 1;
	}
	hako_time_t slack = c->max_delay_usec / 2 - c->delta_usec;
	hako_time_t beyond = last + (slack > 0 ? slack : 0);
	int64_t need = atomic_load_explicit(&n->peer_need, memory_order_relaxed);
	if (need > last && need - 1 < beyond) {
		beyond = need - 1;
	}
	return beyond;
}

static int publish_due(hako_conductor_node_t *n, hako_time_t last, hako_time_t now)
{
	if (last < 0 || now < last) {
		return 1; /* the first one, or after a reset */
	}
	return now > publish_beyond(n, last);
}

/* Main thread, after a peer's time changed: what the peers need of this node now. */
static void update_need(hako_conductor_node_t *n)
{
	int64_t need = INT64_MIN;
	for (size_t i = 0; i < n->npeers; i++) {
		const struct hakoi_peer *p = &n->peers[i];
		if (p->proxy != NULL && p->joined) {
			hako_time_t v = p->known_time + n->cfg.delta_usec - n->cfg.max_delay_usec;
			if (need == INT64_MIN || v < need) {
				need = v;
			}
		}
	}
	atomic_store_explicit(&n->peer_need, need, memory_order_relaxed);
}

/* The events of the proxies or the state moved: the main thread has work. */
static int needs_main(hako_conductor_node_t *n, uint32_t *last_state, uint32_t *last_resets)
{
	uint32_t st = (uint32_t)hako_domain_state(n->dom);
	uint32_t resets = hako_domain_reset_count(n->dom);
	int work = st != *last_state || resets != *last_resets;
	*last_state = st;
	*last_resets = resets;
	/* The main thread drops and registers proxies while this (the watcher) looks at them:
	 * under stats_lock, or it would read a member the drop just freed. */
	pthread_mutex_lock(&n->stats_lock);
	for (size_t i = 0; i < n->npeers && !work; i++) {
		struct hakoi_peer *p = &n->peers[i];
		work = p->proxy != NULL && hako_member_event(p->proxy) > HAKO_EVENT_NONE;
	}
	pthread_mutex_unlock(&n->stats_lock);
	return work || hakoi_ext_wants_tick(n);
}

/* Send this node's world time if it moved (by the publish mode), the state changed, or a
 * heartbeat is due. Both threads call it: the watcher when the domain changed, the main thread
 * right after a peer's time let the world advance, which saves the watcher's wake-up on the
 * lock-step path; the time socket is shared under send_lock (ZeroMQ allows a socket to change
 * threads behind a full barrier). */
/* The node whose send lock this thread holds in hakoi_publish_time (HAKO_ASSERT only). */
static __thread const hako_conductor_node_t *tl_publishing;

int hakoi_publishing(const hako_conductor_node_t *n)
{
	return tl_publishing == n;
}

void hakoi_publish_time(hako_conductor_node_t *n)
{
	const hako_time_t beat = (hako_time_t)n->cfg.heartbeat_ms * 1000;
	pthread_mutex_lock(&n->send_lock);
	tl_publishing = n;
	hako_time_t world = hako_domain_world_time(n->dom);
	/* After the world time is read: what an extension sends now (hako_conductor_ext_send_
	 * ordered, e.g. what RD-Full's executors wrote before the world got there) goes before
	 * that time. */
	hakoi_ext_before_publish(n);
	uint32_t st = (uint32_t)hako_domain_state(n->dom);
	hako_time_t now = hako_now_usec();
	if (publish_due(n, n->last_sent, world) || st != n->last_sent_state ||
	    now - n->last_send_at >= beat) {
		hakoi_msg_t m;
		hakoi_base_msg(n, &m, HAKOI_MSG_TIME);
		m.world_time = world;
		m.state = st;
		m.seq = ++n->time_seq;
		m.sent_real_ns = hakoi_now_real_ns();
		/* On the time links, behind what before_publish queued there: one write. A
		 * client whose link is down sends on ZeroMQ. */
		uint8_t buf[HAKOI_WIRE_FRAME_MAX];
		size_t len = hakoi_wire_encode(&m, buf);
		if (hakoi_links_queue(n, buf, len, NULL, 0) != 0 && n->tout != NULL) {
			hakoi_send_msg(n->tout, NULL, &m);
		}
		n->last_sent = world;
		n->last_sent_state = st;
		n->last_send_at = now;
	}
	hakoi_links_flush(n);
	tl_publishing = NULL;
	pthread_mutex_unlock(&n->send_lock);
}

void *hakoi_watch_main(void *arg)
{
	hako_conductor_node_t *n = arg;
	uint32_t last_state = UINT32_MAX, last_resets = UINT32_MAX;
	uint32_t seen = hako_domain_watch_changes(n->dom);
	const hako_time_t beat = (hako_time_t)n->cfg.heartbeat_ms * 1000;
	while (!atomic_load(&n->stop)) {
		hakoi_publish_time(n);
		if (needs_main(n, &last_state, &last_resets)) {
			uint64_t one = 1;
			ssize_t w = write(n->wake_fd, &one, sizeof(one));
			(void)w;
		}
		pthread_mutex_lock(&n->send_lock);
		hako_time_t beyond = n->last_sent < 0 ? -1 : publish_beyond(n, n->last_sent);
		pthread_mutex_unlock(&n->send_lock);
		atomic_store_explicit(&n->watching, beyond, memory_order_relaxed);
		hako_domain_wait_watch(n->dom, seen, beyond, beat);
		atomic_store_explicit(&n->watching, INT64_MIN, memory_order_relaxed);
		seen = hako_domain_watch_changes(n->dom);
	}
	return NULL;
}

void hakoi_on_time(hako_conductor_node_t *n, struct hakoi_peer *p, const hakoi_msg_t *m)
{
	hako_time_t now = hako_now_usec();
	if (n->cfg.role == HAKO_CONDUCTOR_CLIENT && p->joined && m->incarnation != p->incarnation) {
		/* A new server process: the federation we joined is gone. */
		HAKO_WARN(
		    "conductor %s: server %s restarted; stopping and resetting to join it again",
		    n->cfg.node_id, p->id);
		p->joined = 0;
		atomic_store(&n->join_held, atomic_load(&n->hold_rejoin));
		pthread_mutex_lock(&n->stats_lock);
		p->restarts++;
		pthread_mutex_unlock(&n->stats_lock);
		hakoi_note_peer(p, "server restarted: resetting to rejoin");
		int st = hako_domain_state(n->dom);
		if (st == HAKO_STATE_RUNNING || st == HAKO_STATE_RUNNABLE) {
			hako_domain_stop(n->dom);
		}
		p->pending_op = HAKOI_OP_RESET; /* carried out once stopped (client_progress) */
		p->pending_req = 0;
		return;
	}
	if (!p->joined) {
		return; /* a client that has not joined yet, or a server we wait for */
	}
	/* A client's times take its link, or its ZeroMQ socket while the link is down: one that
	 * ZeroMQ held through an outage may come after newer ones. It says less than they did
	 * (and its drift sample would be of the past): dropped. */
	if (m->incarnation == p->seq_incarnation && (int32_t)(m->seq - p->last_seq) <= 0) {
		return;
	}
	p->seq_incarnation = m->incarnation;
	p->last_heard = now;
	if (p->lost_reported) {
		p->lost_reported = 0;
		HAKO_INFO("conductor %s: %s is back", n->cfg.node_id, p->id);
		hakoi_note_peer(p, "%s", "");
	}
	p->last_seq = m->seq;
	hakoi_ext_peer_time(n, p, m->world_time);
	if (m->world_time != p->known_time && p->proxy != NULL) {
		p->known_time = m->world_time;
		update_need(n);
		hako_member_set_time_unwatched(p->proxy, m->world_time);
		/* The world may have moved on this message, or a peer may need more of it:
		 * say so now. A watcher waiting for a higher threshold than the one that now
		 * holds is woken to wait for this one. */
		hakoi_publish_time(n);
		int64_t watching = atomic_load_explicit(&n->watching, memory_order_relaxed);
		if (watching != INT64_MIN) {
			pthread_mutex_lock(&n->send_lock);
			hako_time_t beyond =
			    n->last_sent < 0 ? -1 : publish_beyond(n, n->last_sent);
			pthread_mutex_unlock(&n->send_lock);
			if (beyond < watching) {
				hako_domain_watch_wake(n->dom);
			}
		}
	}
	/* A drift sample compares two clocks of one run. While either side resets, one is back
	 * at 0 and the other is not yet: that would read as a lead of the whole run. */
	uint32_t resets = hako_domain_reset_count(n->dom);
	hako_time_t own = hako_domain_world_time(n->dom);
	int same_run = m->state != HAKO_STATE_RESETTING &&
	               hako_domain_state(n->dom) != HAKO_STATE_RESETTING &&
	               hako_domain_reset_count(n->dom) == resets;
	hako_time_t age = (hakoi_now_real_ns() - m->sent_real_ns) / 1000;
	pthread_mutex_lock(&n->stats_lock);
	p->messages_in++;
	if (same_run) {
		hakoi_ring_push(&p->drift, own - m->world_time);
	}
	hakoi_ring_push(&p->age, age);
	pthread_mutex_unlock(&n->stats_lock);
	if (n->trace != NULL && same_run) {
		fprintf(n->trace, "%" PRId64 ",%s,%lld,%s,%lld,%lld\n", hakoi_now_real_ns(),
		        n->cfg.node_id, (long long)own, p->id, (long long)m->world_time,
		        (long long)age);
	}
}
