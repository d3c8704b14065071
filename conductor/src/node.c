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
	uint8_t buf[HAKOI_WIRE_FRAME_MAX];
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

/* ---- the main thread: receiving ---- */

void hakoi_count_garbage(hako_conductor_node_t *n, struct hakoi_peer *p, const char *from,
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

void hakoi_note_peer(struct hakoi_peer *p, const char *fmt, ...)
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

/* One frame from `from` (a ROUTER routing id, or the server for a client); user: the node
 * whose key the connection proved (ZAP's User-Id; NULL without authentication). */
void hakoi_dispatch(hako_conductor_node_t *n, const char *from, const char *user,
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
		hakoi_count_garbage(n, p, who[0] != '\0' ? who : "an unnamed peer", why);
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
		hakoi_count_garbage(n, hakoi_peer_by_id(n, user != NULL ? user : ""),
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
		hakoi_count_garbage(n, p, who, why);
		return;
	}
	if (server && m.type == HAKOI_MSG_GET_SIM_STATE) {
		hakoi_on_get_sim_state(n, from);
		return;
	}
	if (server && m.type == HAKOI_MSG_EXT && tool) {
		hakoi_ext_dispatch(n, NULL, from, &m);
		return;
	}
	if (server && m.type == HAKOI_MSG_JOIN) {
		if (strcmp(m.node, who) != 0) {
			hakoi_count_garbage(n, p, who, "a JOIN whose node id is not its sender's");
			return;
		}
		hakoi_on_join(n, from, &m);
		return;
	}
	if (p == NULL || strcmp(m.node, p->id) != 0) {
		hakoi_count_garbage(n, p, who, "a message from a node that is no peer of this one");
		return;
	}
	/* Everything else only from a joined peer of the right role. */
	switch (m.type) {
	case HAKOI_MSG_TIME: hakoi_on_time(n, p, &m); return;
	case HAKOI_MSG_JOIN_REPLY:
		if (!server) {
			hakoi_on_join_reply(n, p, &m);
			return;
		}
		break;
	case HAKOI_MSG_EVENT:
		if (!server && p->joined) {
			hakoi_on_event(n, p, &m);
			return;
		}
		break;
	case HAKOI_MSG_ACK_EVENT:
		if (server && p->joined) {
			hakoi_on_ack(n, p, &m);
			return;
		}
		break;
	case HAKOI_MSG_SIM_CONTROL:
		if (server && p->joined) {
			hakoi_on_sim_control(n, &m);
			return;
		}
		break;
	case HAKOI_MSG_FAILED:
		if (server && p->joined) {
			hakoi_on_failed(n, &m);
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
		hakoi_note_peer(p, "left");
		return;
	default: break;
	}
	hakoi_count_garbage(n, p, who, "a message this node does not take in its role or state");
}

/* Drain a socket: server ROUTER frames come as [identity][frame]. */
void hakoi_drain(hako_conductor_node_t *n, void *s, int routed)
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
		hakoi_dispatch(n, routed ? from : NULL, user, zmq_msg_data(&part),
		               zmq_msg_size(&part));
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

/* The node whose main thread this is (HAKO_ASSERT only). */
static __thread const hako_conductor_node_t *tl_main;

int hakoi_on_main_thread(const hako_conductor_node_t *n)
{
	return tl_main == n;
}

static void *net_main(void *arg)
{
	hako_conductor_node_t *n = arg;
	tl_main = n;
	int server = n->cfg.role == HAKO_CONDUCTOR_SERVER;
	/* ctl, the wake-up, ZAP, the monitor, then the time links (node_link.c). */
	size_t cap = 4 + 1 + n->nlinks;
	zmq_pollitem_t *items = calloc(cap, sizeof(*items));
	if (items == NULL) {
		HAKO_ERROR("conductor %s: out of memory", n->cfg.node_id);
		return NULL;
	}
	while (!atomic_load(&n->stop)) {
		size_t k = 0;
		items[k++] = (zmq_pollitem_t){n->ctl, 0, ZMQ_POLLIN, 0};
		items[k++] = (zmq_pollitem_t){NULL, n->wake_fd, ZMQ_POLLIN, 0};
		/* Without authentication a node has neither ZAP nor monitor. */
		size_t auth_at = k;
		if (n->auth.zap != NULL) {
			items[k++] = (zmq_pollitem_t){n->auth.zap, 0, ZMQ_POLLIN, 0};
		}
		if (n->auth.monitor != NULL) {
			items[k++] = (zmq_pollitem_t){n->auth.monitor, 0, ZMQ_POLLIN, 0};
		}
		size_t links_at = k;
		k += hakoi_links_poll_items(n, items + k, cap - k);
		int rc = zmq_poll(items, (int)k, HAKOI_NET_POLL_MS);
		if (rc < 0 && errno != EINTR) {
			HAKO_ERROR("conductor %s: zmq_poll: %s", n->cfg.node_id,
			           zmq_strerror(errno));
			break;
		}
		if (rc > 0) {
			hakoi_links_serve(n, items + links_at, k - links_at);
		}
		if (items[1].revents & ZMQ_POLLIN) {
			uint64_t v;
			ssize_t r = read(n->wake_fd, &v, sizeof(v));
			(void)r;
		}
		if (items[0].revents & ZMQ_POLLIN) {
			hakoi_drain(n, n->ctl, server);
		}
		int auth_ready = 0;
		for (size_t i = auth_at; i < links_at; i++) {
			auth_ready |= (items[i].revents & ZMQ_POLLIN) != 0;
		}
		if (auth_ready) {
			pthread_mutex_lock(&n->stats_lock); /* the status reads the counts */
			hakoi_auth_zap_serve(&n->auth);
			hakoi_auth_monitor_serve(&n->auth);
			pthread_mutex_unlock(&n->stats_lock);
		}
		if (server) {
			hakoi_server_progress(n);
		} else {
			hakoi_client_progress(n);
		}
		hakoi_ext_tick(n);
		hako_time_t now = hako_now_usec();
		hakoi_links_tick(n, now);
		hakoi_check_peers(n, now);
		/* A proxy's heartbeat is this process's business, not its peer's: its liveness
		 * is peer_timeout_ms's decision (check_peers), not the core's heartbeat timeout,
		 * which a long outage or a peer idling at one world time would otherwise trip. */
		for (size_t i = 0; i < n->npeers; i++) {
			hako_member_heartbeat(n->peers[i].proxy);
		}
		/* A reset clears the status channel: written again at once, not 200 ms later. */
		if (now >= n->next_status ||
		    (n->status != NULL && hako_channel_seq(n->status) == 0)) {
			hakoi_write_status(n);
			n->next_status = now + HAKOI_STATUS_PERIOD;
			if (n->trace != NULL) {
				fflush(n->trace);
			}
		}
	}
	free(items);
	return NULL;
}

/* ---- start / stop ---- */

/* Messages a socket queues for a peer (each way) before it drops: a join's state of every EU
 * of an RD config as large as HAKO_RD_MAX_EUS (65,536); a few hundred bytes each. */
#define HAKOI_QUEUE_MESSAGES 65536

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
	/* Sends never block (ZMQ_DONTWAIT), so a message past the queue's bound is lost. libzmq's
	 * default bound, 1000 messages a peer, is below what a join brings with RD-Full: a state
	 * and its acknowledgement per EU (1,024 for the drone show), and the start's
	 * acknowledgement behind them was lost with them (the show's start then failed after
	 * 10 s, "not acknowledged by 'proxy:cli-01'", now and then). */
	int hwm = HAKOI_QUEUE_MESSAGES;
	zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof(hwm));
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
		if ((n->ctl = socket_or(n, ZMQ_ROUTER, err, &r)) == NULL) {
			return r;
		}
		/* Not ZMQ_ROUTER_HANDOVER: a connection never takes another's route (a second
		 * process of a client's id has routes of its own and is refused at its join). */
		zmq_setsockopt(n->ctl, ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
		if (hakoi_auth_server_socket(&n->auth, n->ctl) != 0) {
			return hako_error_set(err, HAKO_EIO, c->path, 0, 0, "CURVE: %s",
			                      zmq_strerror(errno));
		}
		if (hakoi_auth_monitor_open(&n->auth, n->zctx, n->ctl) != 0) {
			return hako_error_set(err, HAKO_EIO, c->path, 0, 0,
			                      "zmq_socket_monitor: %s", zmq_strerror(errno));
		}
		if (zmq_bind(n->ctl, c->control_address) != 0) {
			return hako_error_set(err, HAKO_EIO, c->path, 0, 0,
			                      "cannot listen on %s: %s", c->control_address,
			                      zmq_strerror(errno));
		}
		/* The times: a link of its own with each client on the time address. */
		return hakoi_links_open(n, err);
	}
	char cid[HAKOI_ROUTE_MAX], tid[HAKOI_ROUTE_MAX];
	snprintf(cid, sizeof(cid), "%s#c%016llx", c->node_id, (unsigned long long)n->incarnation);
	snprintf(tid, sizeof(tid), "%s#t%016llx", c->node_id, (unsigned long long)n->incarnation);
	if ((n->ctl = socket_or(n, ZMQ_DEALER, err, &r)) == NULL ||
	    (n->tout = socket_or(n, ZMQ_DEALER, err, &r)) == NULL) {
		return r;
	}
	if (hakoi_auth_client_socket(&n->auth, n->ctl) != 0 ||
	    hakoi_auth_client_socket(&n->auth, n->tout) != 0) {
		return hako_error_set(err, HAKO_EIO, c->path, 0, 0, "CURVE: %s",
		                      zmq_strerror(errno));
	}
	zmq_setsockopt(n->ctl, ZMQ_ROUTING_ID, cid, strlen(cid));
	if (hakoi_auth_monitor_open(&n->auth, n->zctx, n->ctl) != 0) {
		return hako_error_set(err, HAKO_EIO, c->path, 0, 0, "zmq_socket_monitor: %s",
		                      zmq_strerror(errno));
	}
	zmq_setsockopt(n->tout, ZMQ_ROUTING_ID, tid, strlen(tid));
	int ivl = 100, ivl_max = 1000;
	for (int i = 0; i < 2; i++) {
		void *s = i == 0 ? n->ctl : n->tout;
		zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &ivl, sizeof(ivl));
		zmq_setsockopt(s, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof(ivl_max));
	}
	if (zmq_connect(n->ctl, c->control_address) != 0 ||
	    zmq_connect(n->tout, c->control_address) != 0) {
		return hako_error_set(err, HAKO_EIO, c->path, 0, 0, "cannot connect to %s: %s",
		                      c->control_address, zmq_strerror(errno));
	}
	/* The server's times, and this node's while it is up: the time link (main thread). */
	return hakoi_links_open(n, err);
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
	hakoi_links_close(n);
	void *socks[] = {n->ctl, n->tout};
	for (int i = 0; i < 2; i++) {
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
	n->listen_fd = -1;
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
		hakoi_note_peer(
		    p, "%s", cfg->role == HAKO_CONDUCTOR_SERVER ? "not joined" : "not joined yet");
	}
	if (hako_channel_create(dom, HAKO_CONDUCTOR_STATUS_ROBOT, 0, HAKO_CONDUCTOR_STATUS_BYTES,
	                        &n->status) != 0) {
		n->status = NULL; /* a status nobody can see; the node still works */
	}
	if ((r = open_sockets(n, err)) != 0 || (r = hakoi_ext_open_all(n, err)) != 0) {
		free_node(n);
		return r;
	}
	if (pthread_create(&n->watch_thread, NULL, hakoi_watch_main, n) != 0) {
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
