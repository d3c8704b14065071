/* A conductor node: proxies in the local domain, the ZeroMQ control plane, two threads.
 *
 * The watcher thread follows the local domain (hako_domain_wait_change) and sends this node's
 * world time as soon as it moves (or at each publish boundary), and at least every heartbeat;
 * it owns the time socket (server: PUB; client: a DEALER of its own), so the latency path is
 * one futex wake-up and one send. It tells the main thread (eventfd) when the state changed or
 * a proxy has an event. The main thread owns the control socket: it sets the proxies' clocks
 * from the times it receives, carries the lifecycle (a server forwards its proxies' events to
 * the clients and acknowledges them when the clients did; a client carries out the server's
 * events in its domain), joins, detects lost peers, and keeps the statistics.
 *
 * Times only ever hold a clock back: a proxy's time is the peer's world time as last heard, so
 * a late, lost or reordered message delays a node, it never lets it run ahead. Frames are
 * checked before they are read (wire.c); a bad one is counted and logged once per peer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "conductor_internal.h"
#include "hako/log.h"

static int64_t now_real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

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

/* ---- statistics ---- */

void hakoi_ring_push(hakoi_ring_t *r, hako_time_t x)
{
	if (r->v == NULL) {
		r->v = malloc(HAKOI_DRIFT_SAMPLES * sizeof(*r->v));
		if (r->v == NULL) {
			return;
		}
	}
	r->v[r->next] = x;
	r->next = (r->next + 1) % HAKOI_DRIFT_SAMPLES;
	if (r->n < HAKOI_DRIFT_SAMPLES) {
		r->n++;
	}
	r->total++;
	if (r->total == 1 || x > r->max) {
		r->max = x;
	}
}

/* The k-th smallest of a[0..n) (k < n), reordering a: quickselect with a median-of-three
 * pivot, O(n) on average. */
static hako_time_t select_kth(hako_time_t *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		hako_time_t x = a[lo], y = a[mid], z = a[hi];
		hako_time_t pivot =
		    x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
		size_t i = lo, j = hi;
		while (i <= j) {
			while (a[i] < pivot) {
				i++;
			}
			while (a[j] > pivot) {
				j--;
			}
			if (i <= j) {
				hako_time_t t = a[i];
				a[i] = a[j];
				a[j] = t;
				i++;
				if (j == 0) {
					break;
				}
				j--;
			}
		}
		/* a[lo..j] <= pivot <= a[i..hi], and a[j+1..i-1] == pivot */
		if (k <= j) {
			hi = j;
		} else if (k >= i) {
			lo = i;
		} else {
			return a[k];
		}
	}
	return a[k];
}

static size_t rank_of(size_t n, double p)
{
	size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return i < n ? i : n - 1;
}

hako_time_t hakoi_ring_percentile(const hakoi_ring_t *r, double p)
{
	if (r->n == 0) {
		return 0;
	}
	hako_time_t *s = malloc(r->n * sizeof(*s));
	if (s == NULL) {
		return 0;
	}
	memcpy(s, r->v, r->n * sizeof(*s));
	hako_time_t v = select_kth(s, r->n, rank_of(r->n, p));
	free(s);
	return v;
}

void hakoi_ring_p50_p95(hakoi_ring_t *r, int exact, hako_time_t *p50, hako_time_t *p95)
{
	if (r->n == 0) {
		*p50 = *p95 = 0;
		return;
	}
	uint64_t fresh = r->total - r->cached_total, enough = r->n / 64 > 0 ? r->n / 64 : 1;
	if (r->cached_total > r->total || fresh >= (exact ? 1 : enough)) {
		hako_time_t *s = malloc(r->n * sizeof(*s));
		if (s == NULL) {
			*p50 = *p95 = 0;
			return;
		}
		memcpy(s, r->v, r->n * sizeof(*s));
		r->cached_p50 = select_kth(s, r->n, rank_of(r->n, 50));
		r->cached_p95 = select_kth(s, r->n, rank_of(r->n, 95));
		r->cached_total = r->total;
		free(s);
	}
	*p50 = r->cached_p50;
	*p95 = r->cached_p95;
}

void hakoi_ring_free(hakoi_ring_t *r)
{
	free(r->v);
	memset(r, 0, sizeof(*r));
}

/* ---- sending ---- */

struct hakoi_peer *hakoi_peer_by_id(hako_conductor_node_t *n, const char *id)
{
	for (size_t i = 0; i < n->npeers; i++) {
		if (strcmp(n->peers[i].id, id) == 0) {
			return &n->peers[i];
		}
	}
	return NULL;
}

/* Send m on socket s (to `to` through a ROUTER when not NULL). Never blocks: a peer that cannot
 * take it misses it (times are sent again, requests are retried). 0 or -1. */
int hakoi_send_msg2(void *s, const char *to, hakoi_msg_t *m, const void *payload, size_t len)
{
	uint8_t buf[HAKOI_WIRE_HEADER + HAKOI_WIRE_ID + 16 + HAKO_CONDUCTOR_EXT_BODY_MAX];
	size_t flen = hakoi_wire_encode(m, buf);
	if (to != NULL && zmq_send(s, to, strlen(to), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
		return -1;
	}
	if (payload == NULL) {
		return zmq_send(s, buf, flen, ZMQ_DONTWAIT) < 0 ? -1 : 0;
	}
	if (zmq_send(s, buf, flen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
		return -1;
	}
	return zmq_send(s, payload, len, ZMQ_DONTWAIT) < 0 ? -1 : 0;
}

int hakoi_send_msg(void *s, const char *to, hakoi_msg_t *m)
{
	return hakoi_send_msg2(s, to, m, NULL, 0);
}

void hakoi_base_msg(hako_conductor_node_t *n, hakoi_msg_t *m, uint16_t type)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	snprintf(m->node, sizeof(m->node), "%s", n->cfg.node_id);
	m->incarnation = n->incarnation;
	m->config_hash = n->cfg.config_hash;
}

/* Main thread: a control message to a peer (server: through the ROUTER to the client). */
int hakoi_send_ctl2(hako_conductor_node_t *n, struct hakoi_peer *p, hakoi_msg_t *m,
                    const void *payload, size_t len)
{
	int r = hakoi_send_msg2(n->ctl, n->cfg.role == HAKO_CONDUCTOR_SERVER ? p->route : NULL, m,
	                        payload, len);
	pthread_mutex_lock(&n->stats_lock);
	p->messages_out += r == 0;
	pthread_mutex_unlock(&n->stats_lock);
	return r;
}

int hakoi_send_ctl(hako_conductor_node_t *n, struct hakoi_peer *p, hakoi_msg_t *m)
{
	return hakoi_send_ctl2(n, p, m, NULL, 0);
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
static void publish_time(hako_conductor_node_t *n)
{
	const hako_time_t beat = (hako_time_t)n->cfg.heartbeat_ms * 1000;
	pthread_mutex_lock(&n->send_lock);
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
		m.sent_real_ns = now_real_ns();
		hakoi_send_msg(n->tout, NULL, &m);
		n->last_sent = world;
		n->last_sent_state = st;
		n->last_send_at = now;
	}
	pthread_mutex_unlock(&n->send_lock);
}

static void *watch_main(void *arg)
{
	hako_conductor_node_t *n = arg;
	uint32_t last_state = UINT32_MAX, last_resets = UINT32_MAX;
	uint32_t seen = hako_domain_watch_changes(n->dom);
	const hako_time_t beat = (hako_time_t)n->cfg.heartbeat_ms * 1000;
	while (!atomic_load(&n->stop)) {
		publish_time(n);
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

/* ---- the main thread: receiving ---- */

static void count_garbage(hako_conductor_node_t *n, struct hakoi_peer *p, const char *from,
                          const char *why)
{
	pthread_mutex_lock(&n->stats_lock);
	int first;
	if (p != NULL) {
		p->garbage++;
		first = !p->garbage_logged;
		p->garbage_logged = 1;
	} else {
		first = n->garbage_unknown++ == 0;
	}
	pthread_mutex_unlock(&n->stats_lock);
	if (first) {
		HAKO_WARN("conductor %s: dropped a message from %s: %s (further ones are counted, "
		          "not logged)",
		          n->cfg.node_id, from, why);
	}
}

static void note_peer(struct hakoi_peer *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note_peer(struct hakoi_peer *p, const char *fmt, ...)
{
	char note[96];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(note, sizeof(note), fmt, ap);
	va_end(ap);
	if (p->proxy != NULL) {
		hako_member_set_note(p->proxy, note);
	}
}

static void on_time(hako_conductor_node_t *n, struct hakoi_peer *p, const hakoi_msg_t *m)
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
		note_peer(p, "server restarted: resetting to rejoin");
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
	p->last_heard = now;
	if (p->lost_reported) {
		p->lost_reported = 0;
		HAKO_INFO("conductor %s: %s is back", n->cfg.node_id, p->id);
		note_peer(p, "%s", "");
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
		publish_time(n);
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
	hako_time_t age = (now_real_ns() - m->sent_real_ns) / 1000;
	pthread_mutex_lock(&n->stats_lock);
	p->messages_in++;
	if (same_run) {
		hakoi_ring_push(&p->drift, own - m->world_time);
	}
	hakoi_ring_push(&p->age, age);
	pthread_mutex_unlock(&n->stats_lock);
	if (n->trace != NULL && same_run) {
		fprintf(n->trace, "%" PRId64 ",%s,%lld,%s,%lld,%lld\n", now_real_ns(),
		        n->cfg.node_id, (long long)own, p->id, (long long)m->world_time,
		        (long long)age);
	}
}

/* Server: a JOIN from a client. */
static void on_join(hako_conductor_node_t *n, const char *from, const hakoi_msg_t *m)
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
		note_peer(p, "%s", "");
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
static void on_join_reply(hako_conductor_node_t *n, struct hakoi_peer *p, const hakoi_msg_t *m)
{
	if (m->result != 0) {
		/* The join is retried: the refusal is logged once per reason. */
		if (strcmp(m->reason, p->refusal) != 0) {
			HAKO_ERROR("conductor %s: server %s refused to join: %s", n->cfg.node_id,
			           m->node, m->reason);
			copy_reason(p->refusal, m->reason);
		}
		note_peer(p, "refused by the server: %.60s", m->reason);
		return;
	}
	p->refusal[0] = '\0';
	if (!p->joined) {
		HAKO_INFO("conductor %s: joined server %s", n->cfg.node_id, m->node);
	}
	p->joined = 1;
	p->incarnation = m->incarnation;
	p->last_heard = hako_now_usec();
	note_peer(p, "%s", "");
}

/* Client: the server asks for a lifecycle operation here. */
static void on_event(hako_conductor_node_t *n, struct hakoi_peer *p, const hakoi_msg_t *m)
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
static void on_ack(hako_conductor_node_t *n, struct hakoi_peer *p, const hakoi_msg_t *m)
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
static void on_sim_control(hako_conductor_node_t *n, const hakoi_msg_t *m)
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

static void on_failed(hako_conductor_node_t *n, const hakoi_msg_t *m)
{
	char why[320];
	snprintf(why, sizeof(why), "node '%s': %s", m->node, m->reason);
	if (hako_domain_state(n->dom) != HAKO_STATE_ERROR) {
		hako_domain_fail(n->dom, why);
	}
}

static void on_get_sim_state(hako_conductor_node_t *n, const char *from)
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

/* One frame from `from` (a ROUTER routing id, or the server for a client); user: the node
 * whose key the connection proved (ZAP's User-Id; NULL without authentication). */
static void dispatch(hako_conductor_node_t *n, const char *from, const char *user,
                     const uint8_t *buf, size_t len)
{
	hakoi_msg_t m;
	char why[256];
	/* The sender as it named itself at the socket level: "<id>#c..." or "<id>#t...". */
	char who[HAKOI_ROUTE_MAX] = "";
	snprintf(who, sizeof(who), "%s", from != NULL ? from : n->peers[0].id);
	char *hash = strchr(who, '#');
	if (hash != NULL) {
		*hash = '\0';
	}
	struct hakoi_peer *p = hakoi_peer_by_id(n, who);
	if (hakoi_wire_decode(buf, len, &m, why, sizeof(why)) != 0) {
		count_garbage(n, p, who[0] != '\0' ? who : "an unnamed peer", why);
		return;
	}
	int server = n->cfg.role == HAKO_CONDUCTOR_SERVER;
	/* With authentication the connection proved a node's key: a message speaks for that
	 * node only. A tool (GET_SIM_STATE; EXT from a session: routing id and node id both
	 * "#...") needs a node's key but names none. */
	int tool = who[0] == '\0' && m.node[0] == '#';
	if (server && n->auth.on &&
	    (user == NULL || user[0] == '\0' ||
	     (m.type != HAKOI_MSG_GET_SIM_STATE && !(m.type == HAKOI_MSG_EXT && tool) &&
	      (strcmp(user, m.node) != 0 || strcmp(user, who) != 0)))) {
		snprintf(why, sizeof(why),
		         "claims node '%.60s' on a connection with the key of '%.60s'", m.node,
		         user != NULL ? user : "nobody");
		count_garbage(n, hakoi_peer_by_id(n, user != NULL ? user : ""),
		              user != NULL && user[0] ? user : who, why);
		return;
	}
	/* A message of another process of a joined peer's id (an earlier run, a second one):
	 * not the one that joined. A client's server that restarted is told by its times. */
	if (p != NULL && p->joined && m.incarnation != p->incarnation && m.type != HAKOI_MSG_JOIN &&
	    (server || m.type != HAKOI_MSG_TIME)) {
		snprintf(why, sizeof(why),
		         "a message of incarnation %016llx of '%.60s', which joined as %016llx",
		         (unsigned long long)m.incarnation, p->id,
		         (unsigned long long)p->incarnation);
		count_garbage(n, p, who, why);
		return;
	}
	if (server && m.type == HAKOI_MSG_GET_SIM_STATE) {
		on_get_sim_state(n, from);
		return;
	}
	if (server && m.type == HAKOI_MSG_EXT && tool) {
		hakoi_ext_dispatch(n, NULL, from, &m);
		return;
	}
	if (server && m.type == HAKOI_MSG_JOIN) {
		if (strcmp(m.node, who) != 0) {
			count_garbage(n, p, who, "a JOIN whose node id is not its sender's");
			return;
		}
		on_join(n, from, &m);
		return;
	}
	if (p == NULL || strcmp(m.node, p->id) != 0) {
		count_garbage(n, p, who, "a message from a node that is no peer of this one");
		return;
	}
	/* Everything else only from a joined peer of the right role. */
	switch (m.type) {
	case HAKOI_MSG_TIME: on_time(n, p, &m); return;
	case HAKOI_MSG_JOIN_REPLY:
		if (!server) {
			on_join_reply(n, p, &m);
			return;
		}
		break;
	case HAKOI_MSG_EVENT:
		if (!server && p->joined) {
			on_event(n, p, &m);
			return;
		}
		break;
	case HAKOI_MSG_ACK_EVENT:
		if (server && p->joined) {
			on_ack(n, p, &m);
			return;
		}
		break;
	case HAKOI_MSG_SIM_CONTROL:
		if (server && p->joined) {
			on_sim_control(n, &m);
			return;
		}
		break;
	case HAKOI_MSG_FAILED:
		if (server && p->joined) {
			on_failed(n, &m);
			return;
		}
		break;
	case HAKOI_MSG_EXT:
		if (p->joined && hakoi_ext_dispatch(n, p, from, &m) == 0) {
			return;
		}
		break;
	case HAKOI_MSG_LEAVE:
		HAKO_INFO("conductor %s: %s left", n->cfg.node_id, p->id);
		p->joined = 0;
		note_peer(p, "left");
		return;
	default: break;
	}
	count_garbage(n, p, who, "a message this node does not take in its role or state");
}

/* Drain a socket: server ROUTER frames come as [identity][frame]. */
static void drain(hako_conductor_node_t *n, void *s, int routed)
{
	for (;;) {
		char from[HAKOI_ROUTE_MAX] = "";
		zmq_msg_t part;
		if (routed) {
			zmq_msg_init(&part);
			if (zmq_msg_recv(&part, s, ZMQ_DONTWAIT) < 0) {
				zmq_msg_close(&part);
				return;
			}
			size_t l = zmq_msg_size(&part);
			if (l >= sizeof(from) || memchr(zmq_msg_data(&part), 0, l) != NULL) {
				l = 0; /* an identity we did not give: not one of ours */
			}
			memcpy(from, zmq_msg_data(&part), l);
			from[l] = '\0';
			zmq_msg_close(&part);
		}
		zmq_msg_init(&part);
		if (zmq_msg_recv(&part, s, routed ? 0 : ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&part);
			return;
		}
		int more = zmq_msg_more(&part);
		/* An extension's message may carry a second part (bounded before it is used). */
		const uint8_t *head = zmq_msg_data(&part);
		zmq_msg_t payload;
		zmq_msg_init(&payload);
		n->payload = NULL;
		n->payload_len = 0;
		if (more && zmq_msg_size(&part) > 7 && (head[6] | head[7] << 8) == HAKOI_MSG_EXT) {
			if (zmq_msg_recv(&payload, s, 0) >= 0 &&
			    zmq_msg_size(&payload) <= n->ext_payload_max) {
				n->payload = zmq_msg_data(&payload);
				n->payload_len = zmq_msg_size(&payload);
			}
			more = zmq_msg_more(&payload);
		}
		/* The node whose key the connection proved (a server's sockets, authenticated). */
		const char *user = routed && n->auth.on ? zmq_msg_gets(&part, "User-Id") : NULL;
		dispatch(n, routed ? from : NULL, user, zmq_msg_data(&part), zmq_msg_size(&part));
		n->payload = NULL;
		n->payload_len = 0;
		zmq_msg_close(&payload);
		zmq_msg_close(&part);
		while (more) { /* a peer that sent more parts than a message has: drop the rest */
			zmq_msg_init(&part);
			if (zmq_msg_recv(&part, s, 0) < 0) {
				more = 0;
			} else {
				more = zmq_msg_more(&part);
			}
			zmq_msg_close(&part);
		}
	}
}

/* ---- the main thread: the local domain ---- */

/* Server: forward the proxies' events to the clients; acknowledge what needs no client. */
static void server_progress(hako_conductor_node_t *n)
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
				note_peer(p, "not joined: the start waits for it");
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
static void client_progress(hako_conductor_node_t *n)
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
static void check_peers(hako_conductor_node_t *n, hako_time_t now)
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
			note_peer(p, "server unreachable for %.1f s: world clock held",
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
		drain(n, n->ctl, 1);
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
			note_peer(p, "lost");
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

static int node_stats(hako_conductor_node_t *n, hako_conductor_peer_stats_t *out, int max,
                      int *count, int exact);

static void write_status(hako_conductor_node_t *n)
{
	if (n->status == NULL) {
		return;
	}
	static __thread hako_conductor_status_t st;
	static __thread char buf[HAKO_CONDUCTOR_STATUS_BYTES];
	memset(&st, 0, sizeof(st));
	node_stats(n, st.peers, HAKO_CONDUCTOR_MAX_CLIENTS, &st.peer_count, 0);
	if (st.peer_count > HAKO_CONDUCTOR_MAX_CLIENTS) {
		st.peer_count = HAKO_CONDUCTOR_MAX_CLIENTS;
	}
	snprintf(st.node_id, sizeof(st.node_id), "%s", n->cfg.node_id);
	snprintf(st.server_id, sizeof(st.server_id), "%s", n->cfg.server_id);
	st.role = n->cfg.role;
	st.dmax_usec = n->cfg.max_delay_usec;
	st.world_time_usec = hako_domain_world_time(n->dom);
	st.auth = n->auth.on ? HAKO_CONDUCTOR_AUTH_CURVE : HAKO_CONDUCTOR_AUTH_NONE;
	pthread_mutex_lock(&n->stats_lock);
	st.garbage_unknown = n->garbage_unknown;
	st.auth_refused = n->auth.refused;
	pthread_mutex_unlock(&n->stats_lock);
	size_t len = 0;
	if (hako_conductor_status_format(&st, buf, sizeof(buf), &len) == 0) {
		hako_channel_write(n->status, buf, len + 1);
	}
}

static void *net_main(void *arg)
{
	hako_conductor_node_t *n = arg;
	int server = n->cfg.role == HAKO_CONDUCTOR_SERVER;
	while (!atomic_load(&n->stop)) {
		zmq_pollitem_t items[4] = {
		    {n->ctl, 0, ZMQ_POLLIN, 0},
		    {NULL, n->wake_fd, ZMQ_POLLIN, 0},
		    {server ? n->auth.zap : n->tsub, 0, ZMQ_POLLIN, 0},
		    {n->auth.monitor, 0, ZMQ_POLLIN, 0},
		};
		/* Without authentication a server has neither ZAP nor monitor: 2 items. */
		int nitems = items[2].socket == NULL ? 2 : items[3].socket == NULL ? 3 : 4;
		int rc = zmq_poll(items, nitems, HAKOI_NET_POLL_MS);
		if (rc < 0 && errno != EINTR) {
			HAKO_ERROR("conductor %s: zmq_poll: %s", n->cfg.node_id,
			           zmq_strerror(errno));
			break;
		}
		if (items[1].revents & ZMQ_POLLIN) {
			uint64_t v;
			ssize_t r = read(n->wake_fd, &v, sizeof(v));
			(void)r;
		}
		if (items[0].revents & ZMQ_POLLIN) {
			drain(n, n->ctl, server);
		}
		if (!server && (items[2].revents & ZMQ_POLLIN)) {
			drain(n, n->tsub, 0);
		}
		if ((server && (items[2].revents & ZMQ_POLLIN)) ||
		    (nitems == 4 && (items[3].revents & ZMQ_POLLIN))) {
			pthread_mutex_lock(&n->stats_lock); /* the status reads the counts */
			hakoi_auth_zap_serve(&n->auth);
			hakoi_auth_monitor_serve(&n->auth);
			pthread_mutex_unlock(&n->stats_lock);
		}
		if (server) {
			server_progress(n);
		} else {
			client_progress(n);
		}
		hakoi_ext_tick(n);
		hako_time_t now = hako_now_usec();
		check_peers(n, now);
		/* A proxy's heartbeat is this process's business, not its peer's: its liveness
		 * is peer_timeout_ms's decision (check_peers), not the core's heartbeat timeout,
		 * which a long outage or a peer idling at one world time would otherwise trip. */
		for (size_t i = 0; i < n->npeers; i++) {
			hako_member_heartbeat(n->peers[i].proxy);
		}
		/* A reset clears the status channel: written again at once, not 200 ms later. */
		if (now >= n->next_status ||
		    (n->status != NULL && hako_channel_seq(n->status) == 0)) {
			write_status(n);
			n->next_status = now + HAKOI_STATUS_PERIOD;
			if (n->trace != NULL) {
				fflush(n->trace);
			}
		}
	}
	return NULL;
}

/* ---- start / stop ---- */

static void *socket_or(hako_conductor_node_t *n, int type, hako_error_t *err, int *r)
{
	void *s = zmq_socket(n->zctx, type);
	if (s == NULL) {
		*r = hako_error_set(err, HAKO_EIO, n->cfg.path, 0, 0, "zmq_socket: %s",
		                    zmq_strerror(errno));
		return NULL;
	}
	int zero = 0;
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	/* Our frames are a few hundred bytes. Without a bound libzmq allocates whatever length a
	 * peer announces before a byte of it arrived (garbage on the port: gigabytes, or an
	 * abort); with one it drops that peer. */
	/* An extension's message may have a second part of up to its payload_max. */
	int64_t max = 4096 + (int64_t)n->ext_payload_max;
	zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max, sizeof(max));
	return s;
}

static int open_sockets(hako_conductor_node_t *n, hako_error_t *err)
{
	const hako_conductor_config_t *c = &n->cfg;
	int r = 0, one = 1;
	if ((r = hakoi_auth_load(c, &n->auth, err)) != 0) {
		return r;
	}
	n->zctx = zmq_ctx_new();
	if (n->zctx == NULL) {
		return hako_error_set(err, HAKO_EIO, c->path, 0, 0, "zmq_ctx_new failed");
	}
	if (c->role == HAKO_CONDUCTOR_SERVER) {
		/* The ZAP handler first: a CURVE socket that listens before it would let anyone
		 * with the server's public key in. */
		if (hakoi_auth_zap_open(&n->auth, n->zctx) != 0) {
			return hako_error_set(err, HAKO_EIO, c->path, 0, 0,
			                      "cannot start the authentication handler: %s",
			                      zmq_strerror(errno));
		}
		if ((n->ctl = socket_or(n, ZMQ_ROUTER, err, &r)) == NULL ||
		    (n->tout = socket_or(n, ZMQ_PUB, err, &r)) == NULL) {
			return r;
		}
		/* Not ZMQ_ROUTER_HANDOVER: a connection never takes another's route (a second
		 * process of a client's id has routes of its own and is refused at its join). */
		zmq_setsockopt(n->ctl, ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
		if (hakoi_auth_server_socket(&n->auth, n->ctl) != 0 ||
		    hakoi_auth_server_socket(&n->auth, n->tout) != 0) {
			return hako_error_set(err, HAKO_EIO, c->path, 0, 0, "CURVE: %s",
			                      zmq_strerror(errno));
		}
		if (hakoi_auth_monitor_open(&n->auth, n->zctx, n->ctl) != 0) {
			return hako_error_set(err, HAKO_EIO, c->path, 0, 0,
			                      "zmq_socket_monitor: %s", zmq_strerror(errno));
		}
		if (zmq_bind(n->ctl, c->control_address) != 0 ||
		    zmq_bind(n->tout, c->time_address) != 0) {
			return hako_error_set(err, HAKO_EIO, c->path, 0, 0,
			                      "cannot listen on %s / %s: %s", c->control_address,
			                      c->time_address, zmq_strerror(errno));
		}
		return 0;
	}
	char cid[HAKOI_ROUTE_MAX], tid[HAKOI_ROUTE_MAX];
	snprintf(cid, sizeof(cid), "%s#c%016llx", c->node_id, (unsigned long long)n->incarnation);
	snprintf(tid, sizeof(tid), "%s#t%016llx", c->node_id, (unsigned long long)n->incarnation);
	if ((n->ctl = socket_or(n, ZMQ_DEALER, err, &r)) == NULL ||
	    (n->tout = socket_or(n, ZMQ_DEALER, err, &r)) == NULL ||
	    (n->tsub = socket_or(n, ZMQ_SUB, err, &r)) == NULL) {
		return r;
	}
	if (hakoi_auth_client_socket(&n->auth, n->ctl) != 0 ||
	    hakoi_auth_client_socket(&n->auth, n->tout) != 0 ||
	    hakoi_auth_client_socket(&n->auth, n->tsub) != 0) {
		return hako_error_set(err, HAKO_EIO, c->path, 0, 0, "CURVE: %s",
		                      zmq_strerror(errno));
	}
	zmq_setsockopt(n->ctl, ZMQ_ROUTING_ID, cid, strlen(cid));
	if (hakoi_auth_monitor_open(&n->auth, n->zctx, n->ctl) != 0) {
		return hako_error_set(err, HAKO_EIO, c->path, 0, 0, "zmq_socket_monitor: %s",
		                      zmq_strerror(errno));
	}
	zmq_setsockopt(n->tout, ZMQ_ROUTING_ID, tid, strlen(tid));
	/* Only the newest time matters, but drain() reads every publication queued and an older
	 * one says less than the newest. Not ZMQ_CONFLATE: libzmq 4.3.4 leaks the message it
	 * holds when the socket closes. */
	zmq_setsockopt(n->tsub, ZMQ_SUBSCRIBE, "", 0);
	int ivl = 100, ivl_max = 1000;
	for (int i = 0; i < 3; i++) {
		void *s = i == 0 ? n->ctl : i == 1 ? n->tout : n->tsub;
		zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &ivl, sizeof(ivl));
		zmq_setsockopt(s, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof(ivl_max));
	}
	if (zmq_connect(n->ctl, c->control_address) != 0 ||
	    zmq_connect(n->tout, c->control_address) != 0 ||
	    zmq_connect(n->tsub, c->time_address) != 0) {
		return hako_error_set(err, HAKO_EIO, c->path, 0, 0, "cannot connect to %s / %s: %s",
		                      c->control_address, c->time_address, zmq_strerror(errno));
	}
	return 0;
}

static void free_node(hako_conductor_node_t *n)
{
	hakoi_ext_close_all(n);
	for (size_t i = 0; i < n->npeers; i++) {
		hako_member_unregister(n->peers[i].proxy);
		hakoi_ring_free(&n->peers[i].drift);
		hakoi_ring_free(&n->peers[i].age);
	}
	free(n->peers);
	void *socks[] = {n->ctl, n->tsub, n->tout};
	for (int i = 0; i < 3; i++) {
		if (socks[i] != NULL) {
			zmq_close(socks[i]);
		}
	}
	hakoi_auth_close(&n->auth);
	if (n->zctx != NULL) {
		zmq_ctx_term(n->zctx);
	}
	if (n->wake_fd >= 0) {
		close(n->wake_fd);
	}
	if (n->trace != NULL) {
		fclose(n->trace);
	}
	pthread_mutex_destroy(&n->stats_lock);
	pthread_mutex_destroy(&n->send_lock);
	free(n);
}

int hako_conductor_node_start(const hako_conductor_config_t *cfg, hako_domain_t *dom,
                              hako_conductor_node_t **out, hako_error_t *err)
{
	if (cfg != NULL && cfg->rd_config_path[0] != '\0') {
		hako_error_clear(err);
		if (out != NULL) {
			*out = NULL;
		}
		return hako_error_set(err, HAKO_ECONFIG, cfg->path, 0, 0,
		                      "rd_config_path: RD-Full is an extension of the conductor in "
		                      "libhako_rd: start this node with hako_rd_full_node_start");
	}
	return hako_conductor_node_start_ext(cfg, dom, NULL, 0, out, err);
}

int hako_conductor_node_start_ext(const hako_conductor_config_t *cfg, hako_domain_t *dom,
                                  const hako_conductor_ext_ops_t *const *exts, size_t next,
                                  hako_conductor_node_t **out, hako_error_t *err)
{
	hako_error_clear(err);
	if (out != NULL) {
		*out = NULL;
	}
	if (cfg == NULL || dom == NULL || out == NULL || (next > 0 && exts == NULL)) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0, "no config, domain or result");
	}
	if (next > HAKO_CONDUCTOR_EXT_MAX) {
		return hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0,
		                      "%zu extensions: a node takes at most %d", next,
		                      HAKO_CONDUCTOR_EXT_MAX);
	}
	for (size_t i = 0; i < next; i++) {
		int bad = exts[i] == NULL || exts[i]->id == 0;
		for (size_t j = 0; j < i && !bad; j++) {
			bad = exts[j]->id == exts[i]->id;
		}
		if (bad) {
			return hako_error_set(
			    err, HAKO_EINVAL, cfg->path, 0, 0,
			    "extension %zu: no ops, id 0 or an id another one has", i);
		}
	}
	hako_domain_info_t info;
	int r = hako_domain_get_info(dom, &info);
	if (r == 0 &&
	    (info.delta_usec != cfg->delta_usec || info.max_delay_usec != cfg->max_delay_usec)) {
		return hako_error_set(err, HAKO_ECONFIG, cfg->path, 0, 0,
		                      "domain '%s' runs with delta %lld us and Dmax %lld us, the "
		                      "conductor file says %lld and %lld",
		                      info.name, (long long)info.delta_usec,
		                      (long long)info.max_delay_usec, (long long)cfg->delta_usec,
		                      (long long)cfg->max_delay_usec);
	}
	hako_conductor_node_t *n = calloc(1, sizeof(*n));
	if (n == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, "", 0, 0, "out of memory");
	}
	n->cfg = *cfg;
	n->dom = dom;
	n->wake_fd = -1;
	for (size_t i = 0; i < next; i++) {
		n->exts[i].ops = exts[i];
		if (exts[i]->payload_max > n->ext_payload_max) {
			n->ext_payload_max = exts[i]->payload_max <= HAKO_CONDUCTOR_EXT_PAYLOAD_MAX
			                         ? exts[i]->payload_max
			                         : HAKO_CONDUCTOR_EXT_PAYLOAD_MAX;
		}
	}
	n->next = next;
	/* Random: an earlier process, or a second one, of the same node never has it. */
	if (getrandom(&n->incarnation, sizeof(n->incarnation), 0) != sizeof(n->incarnation)) {
		n->incarnation = ((uint64_t)getpid() << 40) ^ (uint64_t)hako_now_usec();
	}
	pthread_mutex_init(&n->stats_lock, NULL);
	pthread_mutex_init(&n->send_lock, NULL);
	n->last_sent = -1;
	atomic_init(&n->peer_need, INT64_MIN);
	atomic_init(&n->watching, INT64_MIN);
	n->last_sent_state = UINT32_MAX;
	n->npeers = cfg->role == HAKO_CONDUCTOR_SERVER ? cfg->client_count : 1;
	n->peers = calloc(n->npeers > 0 ? n->npeers : 1, sizeof(*n->peers));
	n->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (n->peers == NULL || n->wake_fd < 0) {
		free_node(n);
		return hako_error_set(err, HAKO_ENOMEM, "", 0, 0, "out of memory");
	}
	for (size_t i = 0; i < n->npeers; i++) {
		struct hakoi_peer *p = &n->peers[i];
		snprintf(p->id, sizeof(p->id), "%s",
		         cfg->role == HAKO_CONDUCTOR_SERVER ? cfg->clients[i] : cfg->server_id);
		p->known_time = -1;
		char name[HAKO_NAME_MAX];
		snprintf(name, sizeof(name), "proxy:%s", p->id);
		/* Registered now, not at join: the domain cannot start without the other side. */
		r = hako_member_register_proxy(dom, name, &p->proxy);
		if (r != 0) {
			free_node(n);
			return hako_error_set(err, r, cfg->path, 0, 0,
			                      "cannot register the proxy '%s' in domain '%s': %s",
			                      name, hako_domain_name(dom), hako_strerror(r));
		}
		note_peer(p, "%s",
		          cfg->role == HAKO_CONDUCTOR_SERVER ? "not joined" : "not joined yet");
	}
	if (hako_channel_create(dom, HAKO_CONDUCTOR_STATUS_ROBOT, 0, HAKO_CONDUCTOR_STATUS_BYTES,
	                        &n->status) != 0) {
		n->status = NULL; /* a status nobody can see; the node still works */
	}
	if ((r = open_sockets(n, err)) != 0 || (r = hakoi_ext_open_all(n, err)) != 0) {
		free_node(n);
		return r;
	}
	if (pthread_create(&n->watch_thread, NULL, watch_main, n) != 0) {
		free_node(n);
		return hako_error_set(err, HAKO_ENOMEM, "", 0, 0, "cannot start a thread");
	}
	if (pthread_create(&n->main_thread, NULL, net_main, n) != 0) {
		atomic_store(&n->stop, 1);
		pthread_join(n->watch_thread, NULL);
		free_node(n);
		return hako_error_set(err, HAKO_ENOMEM, "", 0, 0, "cannot start a thread");
	}
	n->threads = 1;
	HAKO_INFO("conductor %s (%s) linked to domain '%s': control %s, times %s", cfg->node_id,
	          cfg->role == HAKO_CONDUCTOR_SERVER ? "server" : "client", hako_domain_name(dom),
	          cfg->control_address, cfg->time_address);
	*out = n;
	return 0;
}

void hako_conductor_node_stop(hako_conductor_node_t *n)
{
	if (n == NULL) {
		return;
	}
	if (n->threads) {
		atomic_store(&n->stop, 1);
		/* The watcher sleeps on the domain: a heartbeat at most. */
		pthread_join(n->main_thread, NULL);
		pthread_join(n->watch_thread, NULL);
	}
	/* Tell the peers, so that a server does not wait for a lost-peer timeout. */
	for (size_t i = 0; i < n->npeers; i++) {
		if (n->peers[i].joined) {
			hakoi_msg_t m;
			hakoi_base_msg(n, &m, HAKOI_MSG_LEAVE);
			hakoi_send_ctl(n, &n->peers[i], &m);
		}
	}
	free_node(n);
}

void hako_conductor_node_hold_rejoin(hako_conductor_node_t *n, int hold)
{
	if (n != NULL) {
		atomic_store(&n->hold_rejoin, hold != 0);
		if (!hold) {
			atomic_store(&n->join_held, 0);
		}
	}
}

void hako_conductor_node_rejoin(hako_conductor_node_t *n)
{
	if (n != NULL) {
		atomic_store(&n->join_held, 0);
	}
}

static int node_stats(hako_conductor_node_t *n, hako_conductor_peer_stats_t *out, int max,
                      int *count, int exact)
{
	if (n == NULL || (out == NULL && max > 0)) {
		return HAKO_EINVAL;
	}
	hako_time_t now = hako_now_usec();
	pthread_mutex_lock(&n->stats_lock);
	for (size_t i = 0; i < n->npeers && (int)i < max; i++) {
		struct hakoi_peer *p = &n->peers[i];
		hako_conductor_peer_stats_t *o = &out[i];
		memset(o, 0, sizeof(*o));
		snprintf(o->node_id, sizeof(o->node_id), "%s", p->id);
		o->joined = p->joined;
		o->connected =
		    p->joined && now - p->last_heard <= (hako_time_t)n->cfg.peer_timeout_ms * 1000;
		o->known_time = p->known_time;
		o->last_heard_usec = p->last_heard > 0 ? now - p->last_heard : -1;
		o->samples = p->drift.total;
		hako_time_t unused;
		hakoi_ring_p50_p95(&p->drift, exact, &o->drift_p50_usec, &o->drift_p95_usec);
		o->drift_max_usec = p->drift.max;
		hakoi_ring_p50_p95(&p->age, exact, &o->age_p50_usec, &unused);
		o->age_max_usec = p->age.max;
		o->messages_in = p->messages_in;
		o->messages_out = p->messages_out;
		o->garbage = p->garbage;
		o->restarts = p->restarts;
	}
	pthread_mutex_unlock(&n->stats_lock);
	if (count != NULL) {
		*count = (int)n->npeers;
	}
	return 0;
}

int hako_conductor_node_stats(hako_conductor_node_t *n, hako_conductor_peer_stats_t *out, int max,
                              int *count)
{
	return node_stats(n, out, max, count, 1);
}

int hako_conductor_node_trace(hako_conductor_node_t *n, const char *path)
{
	if (n == NULL || path == NULL) {
		return HAKO_EINVAL;
	}
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		return HAKO_EIO;
	}
	fprintf(f, "wall_ns,node,world_usec,peer,peer_world_usec,age_usec\n");
	n->trace = f; /* read by the main thread from its next message on */
	return 0;
}
