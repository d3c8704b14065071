/* The websocket comm (libwebsockets): one binary message = one frame (ep_comm.h).
 *
 * One lws context per comm, made in open (a server binds there and keeps its port until close)
 * and served by one thread between start and stop. lws is not thread-safe: every lws call but
 * lws_cancel_service() happens in that thread (or in open/close while it does not run). A send
 * from another thread encodes the frame once (LWS_PRE headroom), pushes it on every session's
 * bounded queue and wakes the thread, which writes the queued messages at each WRITEABLE
 * callback as long as the socket takes them (lws_send_pipe_choked) and lws buffers nothing.
 * A send holds a reference on each session it hands the frame to (sessions are freed by the
 * last of the service thread and those senders), so it may wait for room (blocking, below).
 *
 * This comm keeps its own thread rather than join its endpoint set's I/O loop (ep_loop.h): to
 * run lws in another loop, lws must hand over its fds (LWS_CALLBACK_ADD_POLL_FD & co) and the
 * deadlines of its timers, which it does only when built with LWS_WITH_EXTERNAL_POLL; the
 * libwebsockets 4.1 of the distribution is not (no ADD_POLL_FD callback comes, even for a
 * listening vhost). It also keeps blocking sends from the loop's thread (a bridge forwarding
 * from a tcp endpoint of the set) able to wait for room: this thread writes meanwhile.
 *
 * Buffer sizes (lws's defaults make big PDUs crawl): lws reads a connection pt_serv_buf_size
 * bytes per POLLIN (default 4 KiB: 256 passes of the service loop per MiB), so the context gets
 * WS_SERV_BUF; a protocol's rx_buffer_size bounds the chunks handed to the RECEIVE callback and
 * is allocated per session (WS_RX_BUF); tx_packet_size bounds one send() (0 means
 * rx_buffer_size, after which lws copies the rest of the message aside and sends it in
 * further passes): WS_TX_PACKET lets one send() offer the socket a whole message. lws disables
 * Nagle on its sockets itself; sess_open sets TCP_NODELAY too, in case a build does not.
 *
 * Options (hako_comm_ws_options_t):
 *  - ping_interval_sec: lws's validity policy (lws_retry_bo_t on the vhost and the client
 *    connection): a PING after that many idle seconds, the connection hung up when nothing
 *    validates it (a PONG or any data) within 3 intervals. 0 = no pings, no idle hang-up.
 *  - handshake_timeout_ms: the context's timeout_secs (rounded up to seconds), which lws
 *    applies to its network round trips: the HTTP upgrade request / response, the close
 *    handshake (lws 4.1 reads it from the context, not from the vhost). A server also closes a
 *    connection with no whole message that long after it was accepted (max_clients below).
 *  - connect_timeout_ms: the vhost's connect_timeout_secs (client; rounded up to seconds).
 *  - read_timeout_ms: a message begun (a fragment, or part of one, delivered) with no byte of
 *    it for that long closes the session; frame_timeout_ms: a message not whole that long after
 *    its first bytes closes it, however it trickles. A quiet peer with no message begun is not
 *    an error (liveness is ping_interval_sec's job). One lws timer per session (armed while a
 *    message is partial) checks both.
 *  - write_timeout_ms: how long stop (and close) waits for the sessions' queues and the bytes
 *    lws buffered to go out (0: 1 s), and, with blocking (the default, as tcp's), how long a
 *    send waits for room in a full queue before that session is declared stuck and closed
 *    (the frame counted in send_dropped). blocking false: the oldest queued frame is dropped
 *    (counted). A send from the service thread itself (a subscriber) cannot wait for it: it
 *    drops the oldest.
 *  - max_clients (server): connections at once, upgraded or not (each is a socket, and lws's
 *    buffers once upgraded). A server keeps a record of every connection it accepted
 *    (ws_conn_t: SERVER_NEW_CLIENT_INSTANTIATED .. WSI_DESTROY) so that idle ones cannot hold
 *    the places, as tcp's peers (comm_tcp_conn.c):
 *     - first message: a connection must have upgraded and sent a whole message
 *       handshake_timeout_ms after it was accepted, or it is closed (a session: counted in
 *       disconnects); a message in progress then has frame_timeout_ms instead, if set. A
 *       session upgraded and silent (a client that only listens) is kept while fewer than
 *       half of max_clients places are taken (listener). A server that only sends (direction
 *       out) asks only for the upgrade. One lws timer
 *       (first_sul) runs to the next of these deadlines;
 *     - per address: one address (IPv6: one /64) holds at most per_addr connections, half of
 *       max_clients (at least WS_PER_ADDR_MIN, or max_clients if smaller);
 *     - making room: a connection that finds its address's places or all places taken takes
 *       the place of an idle one (of its address, or of any), decided in
 *       FILTER_NETWORK_CONNECTION: one that never sent a message and is WS_EVICT_NEW_MS old or
 *       more (the oldest; not upgraded first, then upgraded with nothing of a message, then
 *       with part of one), else one whose last message is WS_EVICT_IDLE_MS old or more (the
 *       longest idle). With no such connection, it is closed as lws accepts it (rejected).
 *    Each is logged once (until a session sends its first message), then at debug level.
 *  - max_buffered_bytes: the sessions' message buffers together, beyond the first WS_RX_CHUNK
 *    of each (so small messages are always served): a session whose message would need more,
 *    once idle sessions' kept buffers are freed, is refused (rejected). lws's own per-session
 *    buffer (WS_RX_BUF) is bounded by max_clients.
 *  - static_dir: an lws file mount on "/" (default index.html) on the server's port; without
 *    it every plain HTTP request gets 404. WebSocket upgrades on any path are PDU sessions.
 *  - max_body_bytes: a message longer than the frame header + this is refused while it
 *    arrives (also across fragments), as are text messages and frames that do not decode.
 * A client reconnects with back-off (50 ms doubling to 1 s) as long as it runs.
 *
 * Counting and stopping. lws_write hands lws the whole message but may send only part of it
 * (at most rx_buffer_size per call, and what the socket takes): it keeps the rest and reports
 * the full length; lws_partial_buffered() tells, and the next WRITEABLE callback comes only once
 * that rest is out. So frames_out / bytes_out count a message at that point, not at lws_write.
 * Stop first lets every session write its queue and lws its buffered bytes (bounded by
 * write_timeout_ms), then closes each session from its WRITEABLE callback with a close frame
 * (going away) and waits for the peers' replies (WS_CLOSE_WAIT_MS). Only then are the sessions
 * still there killed: a kill by timeout is lws's "violent" close, which drops the buffered bytes
 * and sends no close frame.
 */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <libwebsockets.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ep_comm.h"
#include "ep_net.h"
#include "hako/log.h"

#define WS_PROTOCOL     "hako-pdu"
#define WS_RX_CHUNK     65536u
#define WS_SERV_BUF     (256u << 10) /* lws's per-thread service buffer: bytes per read */
#define WS_RX_BUF       (256u << 10) /* per session: RECEIVE callback chunks */
#define WS_TX_PACKET    (16u << 20)  /* one send() may offer this much */
#define WS_WRITE_BUDGET (4u << 20)   /* bytes written per WRITEABLE callback at most */
/* Receive buffer (per session): grown to the message; kept for the next one up to WS_RX_KEEP
 * (a fresh big buffer is freshly mapped memory: ~256 page faults per MiB), freed after a larger
 * message or after WS_RX_SHRINK messages in a row that fit in WS_RX_CHUNK. */
#define WS_RX_KEEP       (4u << 20)
#define WS_RX_SHRINK     256u
#define WS_BACKOFF_MIN   50u
#define WS_BACKOFF_MAX   1000u
#define WS_FD_LIMIT      4096u
#define WS_CLOSE_WAIT_MS 1000u
#define WS_DRAIN_WAIT_MS 1000u  /* write_timeout_ms 0 */
#define WS_STOP_TICK_US  5000   /* stop's service loop wakes at least this often */
#define WS_EVICT_NEW_MS  1000u  /* a connection with no message yet is idle after this ... */
#define WS_EVICT_IDLE_MS 30000u /* ... one that sent messages after this long without one */
#define WS_PER_ADDR_MIN  16u    /* connections per address: max_clients / 2, at least this */

struct ws_conn;

typedef struct ws_sess {
	struct ws_sess *next;
	struct lws *wsi;
	/* Under the comm's lock. */
	hakoi_frameq_t q;
	int refs;  /* the session list + senders holding it */
	int gone;  /* closed: off the list, queue freed */
	int stuck; /* 1: a sender found its queue full for write_timeout_ms; 2: being closed */
	/* Service thread only. */
	uint8_t *rx;
	size_t rx_len;
	size_t rx_cap;
	int hdr_ok;
	uint32_t rx_small;    /* messages in a row that fit in WS_RX_CHUNK */
	uint64_t rx_start_ms; /* the partial message's first bytes */
	uint64_t rx_last_ms;  /* its last bytes */
	int timer_on;         /* the lws timer checking those is armed */
	int dropping;         /* closing for a timeout: its bytes are ignored */
	int rejected;
	int bye;              /* stop: close it at its next WRITEABLE (service thread) */
	int unflushed;        /* a message lws took but has partly buffered, not counted yet */
	size_t unflushed_b;   /* its body bytes */
	struct ws_conn *conn; /* server: its connection's record */
	char peer[80];
} ws_sess_t;

/* A connection a server accepted, upgraded or not (service thread): for the limits on idle
 * connections (see the top comment). */
typedef struct ws_conn {
	struct lws *wsi;
	ws_sess_t *sess;   /* once upgraded, until the session closes */
	uint64_t since_ms; /* accepted */
	uint64_t msg_ms;   /* last whole message (0: none yet) */
	uint8_t akey[16];  /* its address for the per-address limit (hakoi_addr_key) */
	int killed;        /* lws was asked to close it */
	int listener;      /* upgraded, silent at its deadline while there was room: kept */
	char peer[80];
} ws_conn_t;

typedef struct ws_comm {
	hakoi_comm_ctx_t ctx;
	const hako_comm_config_t *cfg;
	const hako_comm_ws_options_t *opt;
	int client;
	struct lws_context *lws;
	struct lws_vhost *vh;
	struct lws_protocols protocols[2];
	struct lws_http_mount mount;
	struct lws_protocol_vhost_options mime[4];
	lws_retry_bo_t policy;
	uint16_t port;
	size_t msg_limit;
	pthread_t thread;
	int thread_on;
	atomic_int stopping;
	atomic_int wake_pending; /* a send signalled the thread and on_wake has not run since */

	pthread_mutex_t lock; /* sessions and their queues */
	pthread_cond_t room;  /* a queue has room, or a session went */
	int waiters;          /* senders waiting on room */
	ws_sess_t *sessions;
	uint32_t nsess;

	/* service thread only */
	int closing;
	struct lws *client_wsi;
	lws_sorted_usec_list_t retry_sul;
	lws_sorted_usec_list_t tick_sul;
	int retry_pending;
	uint32_t backoff_ms;
	int ever_connected;
	size_t rx_total;  /* ws_held of the sessions' message buffers together */
	int full_logged;  /* a connection refused for the limits, and said so */
	int quiet_logged; /* a connection closed for no first message, and said so */
	int evict_logged; /* a connection closed to make room, and said so */
	/* Server (service thread): the connections it accepted. */
	ws_conn_t **conns;
	size_t nconn;
	size_t conn_cap;
	uint32_t per_addr;                /* connections one address may hold */
	lws_sorted_usec_list_t first_sul; /* the next first-message deadline */
	int first_armed;
} ws_comm_t;

/* The comm whose service thread this is (a send from inside a subscriber must not wait). */
static _Thread_local const ws_comm_t *tl_svc_comm;

static void log_emit(int level, const char *line)
{
	size_t n = strlen(line);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) {
		n--;
	}
	if (level & LLL_ERR) {
		HAKO_WARN("libwebsockets: %.*s", (int)n, line);
	} else {
		HAKO_INFO("libwebsockets: %.*s", (int)n, line);
	}
}

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static void log_init(void)
{
	lws_set_log_level(LLL_ERR | LLL_WARN, log_emit);
}

static uint32_t ms_to_secs(uint32_t ms)
{
	return ms == 0 ? 0 : (ms + 999u) / 1000u;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The PDU bytes of an encoded frame, for bytes_out. */
static size_t frame_body_len(const ws_comm_t *c, const hakoi_frame_buf_t *f)
{
	if (c->cfg->raw_version == HAKO_FRAME_V1) {
		const uint8_t *p = f->data + 4;
		size_t name =
		    (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
		return f->len - 12 - name;
	}
	return f->len - HAKO_FRAME_V2_HEADER_SIZE;
}

/* ---- client connection (service thread) ---- */

static void connect_now(ws_comm_t *c);

static void retry_cb(lws_sorted_usec_list_t *sul)
{
	ws_comm_t *c = lws_container_of(sul, ws_comm_t, retry_sul);
	c->retry_pending = 0;
	if (!c->closing && !atomic_load(&c->stopping)) {
		connect_now(c);
	}
}

static void schedule_retry(ws_comm_t *c)
{
	if (!c->client || c->closing || c->retry_pending || c->client_wsi != NULL ||
	    atomic_load(&c->stopping)) {
		return;
	}
	c->retry_pending = 1;
	lws_sul_schedule(c->lws, 0, &c->retry_sul, retry_cb,
	                 (lws_usec_t)c->backoff_ms * LWS_US_PER_MS);
	c->backoff_ms = c->backoff_ms * 2 > WS_BACKOFF_MAX ? WS_BACKOFF_MAX : c->backoff_ms * 2;
}

static void connect_now(ws_comm_t *c)
{
	const hako_comm_addr_t *r = &c->cfg->remote;
	struct lws_client_connect_info i;
	memset(&i, 0, sizeof(i));
	i.context = c->lws;
	i.vhost = c->vh;
	i.address = r->host;
	i.port = r->port;
	i.path = r->path[0] != '\0' ? r->path : "/";
	i.host = r->host;
	i.origin = r->host;
	i.local_protocol_name = WS_PROTOCOL;
	i.retry_and_idle_policy = &c->policy;
	i.pwsi = &c->client_wsi;
	c->client_wsi = NULL;
	if (lws_client_connect_via_info(&i) == NULL) {
		c->client_wsi = NULL;
		schedule_retry(c);
	}
}

/* ---- connections of a server, the limits on idle ones (service thread) ---- */

static void rx_free(ws_comm_t *c, ws_sess_t *s);

static ws_conn_t *conn_find(const ws_comm_t *c, const struct lws *wsi)
{
	for (size_t i = 0; i < c->nconn; i++) {
		if (c->conns[i]->wsi == wsi) {
			return c->conns[i];
		}
	}
	return NULL;
}

/* When k must have sent its first message (0: it need not, or did; see the top comment). */
static uint64_t first_deadline(const ws_comm_t *c, const ws_conn_t *k)
{
	const ws_sess_t *s = k->sess;
	if (k->killed || k->msg_ms != 0 || k->listener) {
		return 0;
	}
	if (s != NULL && (c->cfg->direction == HAKO_COMM_OUT || s->dropping || s->rejected ||
	                  (s->rx_len > 0 && c->cfg->frame_timeout_ms > 0))) {
		return 0;
	}
	return k->since_ms + c->opt->handshake_timeout_ms;
}

/* Close k for one of the limits on idle connections. The first of each kind (*said) is a
 * warning, the next ones are debug lines until a session sends its first message. */
static void conn_kill(ws_comm_t *c, ws_conn_t *k, int *said, const char *why)
{
	if (!*said) {
		HAKO_WARN("endpoint '%s': websocket peer %s: %s; connection closed (more of these "
		          "at debug level)",
		          c->ctx.ep_name, k->peer, why);
		*said = 1;
	} else {
		HAKO_DEBUG("endpoint '%s': websocket peer %s: %s; connection closed",
		           c->ctx.ep_name, k->peer, why);
	}
	k->killed = 1;
	if (k->sess != NULL) {
		k->sess->dropping = 1; /* what lws still hands over is ignored */
		rx_free(c, k->sess);
	}
	lws_set_timeout(k->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

static void first_cb(lws_sorted_usec_list_t *sul);

/* The first-message timer at the earliest deadline of the connections (none: not armed). */
static void first_arm(ws_comm_t *c, uint64_t now)
{
	uint64_t next = 0;
	for (size_t i = 0; i < c->nconn; i++) {
		uint64_t d = first_deadline(c, c->conns[i]);
		if (d != 0 && (next == 0 || d < next)) {
			next = d;
		}
	}
	c->first_armed = next != 0;
	lws_sul_schedule(c->lws, 0, &c->first_sul, first_cb,
	                 next == 0     ? LWS_SET_TIMER_USEC_CANCEL
	                 : next <= now ? 1
	                               : (lws_usec_t)(next - now) * LWS_US_PER_MS);
}

/* Close the connections past their first-message deadline. */
static void first_cb(lws_sorted_usec_list_t *sul)
{
	ws_comm_t *c = lws_container_of(sul, ws_comm_t, first_sul);
	uint64_t now = now_ms();
	c->first_armed = 0;
	for (size_t i = 0; i < c->nconn; i++) {
		ws_conn_t *k = c->conns[i];
		uint64_t d = first_deadline(c, k);
		if (d == 0 || now < d) {
			continue;
		}
		/* Upgraded and silent (a client that only listens, as to an inout server): kept
		 * while the server has room; an idle one gives way to a new connection anyway. */
		if (k->sess != NULL && k->sess->rx_len == 0 && c->nconn * 2 < c->cfg->max_clients) {
			k->listener = 1;
			continue;
		}
		char why[128];
		snprintf(why, sizeof(why), "%s within %u ms of connecting (handshake_timeout_ms)",
		         k->sess == NULL ? "no websocket upgrade" : "no whole message",
		         (unsigned)c->opt->handshake_timeout_ms);
		conn_kill(c, k, &c->quiet_logged, why); /* off the list at WSI_DESTROY */
	}
	first_arm(c, now);
}

/* Whether k may give way to a new connection (it is idle), and its place in the order in which
 * idle ones give way: *tier (no message yet: not upgraded, upgraded with nothing of a message,
 * with part of one; then those that sent messages), then *t, the oldest first. */
static int idle_order(const ws_conn_t *k, uint64_t now, int *tier, uint64_t *t)
{
	if (k->msg_ms == 0) {
		*tier = k->sess == NULL ? 0 : k->sess->rx_len > 0 ? 2 : 1;
		*t = k->since_ms;
		return now - k->since_ms >= WS_EVICT_NEW_MS;
	}
	*tier = 3;
	*t = k->msg_ms;
	return now - k->msg_ms >= WS_EVICT_IDLE_MS;
}

/* FILTER_NETWORK_CONNECTION of a server: whether a connection from sa may come in, in the
 * place of an idle one if need be (closed then); refused ones are counted and said once. */
static int admit(ws_comm_t *c, const struct sockaddr *sa)
{
	char peer[80] = "?";
	uint8_t key[16];
	uint64_t now = now_ms();
	hakoi_sockaddr_str(sa, peer, sizeof(peer));
	hakoi_addr_key(sa, key);
	size_t live = 0;
	size_t same = 0;
	for (size_t i = 0; i < c->nconn; i++) {
		if (!c->conns[i]->killed) {
			live++;
			same += memcmp(c->conns[i]->akey, key, 16) == 0;
		}
	}
	int addr_full = same >= c->per_addr;
	if (!addr_full && live < c->cfg->max_clients) {
		c->full_logged = 0;
		return 1;
	}
	ws_conn_t *victim = NULL;
	int best_tier = 0;
	uint64_t best_t = 0;
	for (size_t i = 0; i < c->nconn; i++) {
		ws_conn_t *k = c->conns[i];
		int tier;
		uint64_t t;
		if (k->killed || (addr_full && memcmp(k->akey, key, 16) != 0) ||
		    !idle_order(k, now, &tier, &t)) {
			continue;
		}
		if (victim == NULL || tier < best_tier || (tier == best_tier && t < best_t)) {
			victim = k;
			best_tier = tier;
			best_t = t;
		}
	}
	if (victim != NULL) {
		char why[160];
		if (victim->msg_ms == 0) {
			snprintf(
			    why, sizeof(why),
			    "no message in the %llu ms since it connected; its place goes to %s",
			    (unsigned long long)(now - victim->since_ms), peer);
		} else {
			snprintf(why, sizeof(why), "no message for %llu ms; its place goes to %s",
			         (unsigned long long)(now - victim->msg_ms), peer);
		}
		conn_kill(c, victim, &c->evict_logged, why);
		return 1;
	}
	hakoi_count(&c->ctx.ctr->rejected, 1);
	if (!c->full_logged) {
		HAKO_WARN(
		    "endpoint '%s': websocket peer %s closed at once: %zu connections (max_clients "
		    "%u, %u per address) and none idle long enough to give way (more of these "
		    "at debug level)",
		    c->ctx.ep_name, peer, live, (unsigned)c->cfg->max_clients,
		    (unsigned)c->per_addr);
		c->full_logged = 1;
	} else {
		HAKO_DEBUG("endpoint '%s': websocket peer %s closed at once: no place",
		           c->ctx.ep_name, peer);
	}
	return 0;
}

/* SERVER_NEW_CLIENT_INSTANTIATED: the record of an accepted connection. -1 (lws closes it)
 * when out of memory. */
static int conn_add(ws_comm_t *c, struct lws *wsi)
{
	ws_conn_t *k = calloc(1, sizeof(*k));
	if (k == NULL) {
		return -1;
	}
	if (c->nconn == c->conn_cap) {
		size_t cap = c->conn_cap ? c->conn_cap * 2 : 16;
		ws_conn_t **n = realloc(c->conns, cap * sizeof(*n));
		if (n == NULL) {
			free(k);
			return -1;
		}
		c->conns = n;
		c->conn_cap = cap;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	memset(&ss, 0, sizeof(ss));
	snprintf(k->peer, sizeof(k->peer), "?");
	if (getpeername(lws_get_socket_fd(wsi), (struct sockaddr *)&ss, &sl) == 0) {
		hakoi_sockaddr_str((struct sockaddr *)&ss, k->peer, sizeof(k->peer));
		hakoi_addr_key((struct sockaddr *)&ss, k->akey);
	}
	k->wsi = wsi;
	k->since_ms = now_ms();
	c->conns[c->nconn++] = k;
	if (!c->first_armed) {
		/* Armed, it runs to an earlier deadline than this one's. */
		first_arm(c, k->since_ms);
	}
	return 0;
}

/* WSI_DESTROY: the connection is gone. */
static void conn_remove(ws_comm_t *c, const struct lws *wsi)
{
	for (size_t i = 0; i < c->nconn; i++) {
		ws_conn_t *k = c->conns[i];
		if (k->wsi == wsi) {
			if (k->sess != NULL) {
				k->sess->conn = NULL;
			}
			c->conns[i] = c->conns[--c->nconn];
			free(k);
			return;
		}
	}
}

/* ---- sessions (service thread) ---- */

static int sess_open(ws_comm_t *c, struct lws *wsi, ws_sess_t **pss)
{
	if (c->closing || pss == NULL) {
		return -1;
	}
	char peer[80] = "?";
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	memset(&ss, 0, sizeof(ss));
	if (getpeername(lws_get_socket_fd(wsi), (struct sockaddr *)&ss, &sl) == 0) {
		hakoi_sockaddr_str((struct sockaddr *)&ss, peer, sizeof(peer));
	}
	/* A server's connection has its place since it was accepted (admit), unless it gave it
	 * up meanwhile. */
	ws_conn_t *k = NULL;
	if (!c->client && ((k = conn_find(c, wsi)) == NULL || k->killed)) {
		return -1;
	}
	ws_sess_t *s = calloc(1, sizeof(*s));
	if (s == NULL || hakoi_frameq_init(&s->q, c->cfg->send_queue_depth) != 0) {
		free(s);
		HAKO_WARN("endpoint '%s': out of memory for a websocket session", c->ctx.ep_name);
		return -1;
	}
	s->wsi = wsi;
	s->refs = 1;
	s->conn = k;
	if (k != NULL) {
		k->sess = s;
	}
	memcpy(s->peer, peer, sizeof(s->peer));
	int one = 1;
	setsockopt(lws_get_socket_fd(wsi), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	pthread_mutex_lock(&c->lock);
	s->next = c->sessions;
	c->sessions = s;
	c->nsess++;
	pthread_mutex_unlock(&c->lock);
	*pss = s;
	hakoi_ep_counters_t *ctr = c->ctx.ctr;
	atomic_fetch_add_explicit(&ctr->peers, 1, memory_order_relaxed);
	if (c->client) {
		hakoi_count(&ctr->connects, 1);
		if (c->ever_connected) {
			hakoi_count(&ctr->reconnects, 1);
		}
		c->ever_connected = 1;
		c->backoff_ms = WS_BACKOFF_MIN;
	} else {
		hakoi_count(&ctr->accepted, 1);
	}
	HAKO_DEBUG("endpoint '%s': websocket session with %s", c->ctx.ep_name, s->peer);
	return 0;
}

/* What a message buffer counts under max_buffered_bytes: beyond the WS_RX_CHUNK any session
 * may use (bounded by max_clients), so a session with small messages is always served. */
static size_t ws_held(size_t cap)
{
	return cap > WS_RX_CHUNK ? cap - WS_RX_CHUNK : 0;
}

static void rx_free(ws_comm_t *c, ws_sess_t *s)
{
	c->rx_total -= ws_held(s->rx_cap);
	free(s->rx);
	s->rx = NULL;
	s->rx_cap = 0;
	s->rx_len = 0;
	s->hdr_ok = 0;
}

/* Drop the list's reference (lock held); the last one frees. */
static void sess_unref_locked(ws_sess_t *s)
{
	if (--s->refs == 0) {
		free(s);
	}
}

static void sess_close(ws_comm_t *c, ws_sess_t **pss)
{
	ws_sess_t *s = pss != NULL ? *pss : NULL;
	if (s == NULL) {
		return;
	}
	*pss = NULL;
	rx_free(c, s);
	if (s->conn != NULL) {
		s->conn->sess = NULL;
		s->conn = NULL;
	}
	pthread_mutex_lock(&c->lock);
	for (ws_sess_t **pp = &c->sessions; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			c->nsess--;
			break;
		}
	}
	/* Senders holding s see it gone and stop waiting for it. */
	s->gone = 1;
	uint32_t queued = s->q.count;
	hakoi_frameq_free(&s->q);
	if (c->waiters > 0) {
		pthread_cond_broadcast(&c->room);
	}
	pthread_mutex_unlock(&c->lock);
	hakoi_ep_counters_t *ctr = c->ctx.ctr;
	atomic_fetch_sub_explicit(&ctr->peers, 1, memory_order_relaxed);
	if (queued > 0) {
		hakoi_count(&ctr->send_dropped, queued);
	}
	if (!c->closing && !s->rejected) {
		hakoi_count(&ctr->disconnects, 1);
	}
	HAKO_DEBUG("endpoint '%s': websocket session with %s closed", c->ctx.ep_name, s->peer);
	pthread_mutex_lock(&c->lock);
	sess_unref_locked(s);
	pthread_mutex_unlock(&c->lock);
}

static int reject(ws_comm_t *c, struct lws *wsi, ws_sess_t *s, enum lws_close_status st,
                  const char *why)
{
	HAKO_WARN("endpoint '%s': websocket peer %s refused: %s; closing that session",
	          c->ctx.ep_name, s->peer, why);
	hakoi_count(&c->ctx.ctr->rejected, 1);
	s->rejected = 1;
	rx_free(c, s); /* now: the close handshake may take a while */
	static const char reason[] = "hako: protocol error";
	lws_close_reason(wsi, st, (unsigned char *)reason, sizeof(reason) - 1);
	return -1;
}

/* Free the kept buffers of the sessions but s that have no message begun: the room under
 * max_buffered_bytes goes to messages in progress. */
static void rx_reclaim(ws_comm_t *c, const ws_sess_t *s)
{
	pthread_mutex_lock(&c->lock);
	for (ws_sess_t *o = c->sessions; o != NULL; o = o->next) {
		if (o != s && o->rx_len == 0 && o->rx_cap > WS_RX_CHUNK) {
			rx_free(c, o);
		}
	}
	pthread_mutex_unlock(&c->lock);
}

/* Grow s's message buffer to hold need bytes (doubling, at most msg_limit) within
 * max_buffered_bytes. 0, or reject's -1. */
static int rx_grow(ws_comm_t *c, struct lws *wsi, ws_sess_t *s, size_t need)
{
	size_t cap = s->rx_cap > 0 ? s->rx_cap : WS_RX_CHUNK;
	while (cap < need) {
		cap *= 2;
	}
	if (cap > c->msg_limit) {
		cap = c->msg_limit;
	}
	size_t limit = c->cfg->max_buffered_bytes;
	if (ws_held(cap) > ws_held(s->rx_cap)) {
		size_t more = ws_held(cap) - ws_held(s->rx_cap);
		if (c->rx_total + more > limit) {
			rx_reclaim(c, s);
		}
		if (c->rx_total + more > limit) {
			char why[200];
			snprintf(
			    why, sizeof(why),
			    "its message needs a buffer of %zu bytes, more than the %zu bytes left "
			    "of max_buffered_bytes (%zu) by the messages of the other sessions",
			    cap, limit - c->rx_total, limit);
			return reject(c, wsi, s, LWS_CLOSE_STATUS_POLICY_VIOLATION, why);
		}
	}
	uint8_t *p = realloc(s->rx, cap);
	if (p == NULL) {
		return reject(c, wsi, s, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE,
		              "out of memory for its message");
	}
	c->rx_total = c->rx_total - ws_held(s->rx_cap) + ws_held(cap);
	s->rx = p;
	s->rx_cap = cap;
	return 0;
}

/* The first of the partial message's deadlines (read_timeout_ms since its last bytes,
 * frame_timeout_ms since its first); 0 if neither applies. */
static uint64_t rx_deadline(const ws_comm_t *c, const ws_sess_t *s)
{
	uint64_t d = 0;
	if (c->opt->read_timeout_ms > 0) {
		d = s->rx_last_ms + c->opt->read_timeout_ms;
	}
	if (c->cfg->frame_timeout_ms > 0) {
		uint64_t f = s->rx_start_ms + c->cfg->frame_timeout_ms;
		d = d == 0 || f < d ? f : d;
	}
	return d;
}

static void rx_arm(const ws_comm_t *c, struct lws *wsi, ws_sess_t *s, uint64_t now)
{
	uint64_t d = rx_deadline(c, s);
	if (d == 0) {
		return;
	}
	s->timer_on = 1;
	lws_set_timer_usecs(wsi, (lws_usec_t)(d > now ? d - now : 0) * LWS_US_PER_MS);
}

/* LWS_CALLBACK_TIMER: close a session whose partial message is late, else check again at the
 * next deadline. */
static void rx_timer(ws_comm_t *c, struct lws *wsi, ws_sess_t *s)
{
	if (s == NULL) {
		return;
	}
	s->timer_on = 0;
	if (s->rx_len == 0 || s->dropping || s->rejected) {
		return;
	}
	uint64_t now = now_ms();
	uint64_t d = rx_deadline(c, s);
	if (d == 0 || now < d) {
		rx_arm(c, wsi, s, now);
		return;
	}
	const uint32_t rto = c->opt->read_timeout_ms;
	if (rto > 0 && now >= s->rx_last_ms + rto) {
		HAKO_WARN("endpoint '%s': websocket peer %s: no byte of its message for %u ms "
		          "(read_timeout_ms; %zu bytes of it received); closing that session",
		          c->ctx.ep_name, s->peer, (unsigned)rto, s->rx_len);
	} else {
		HAKO_WARN("endpoint '%s': websocket peer %s: a message not whole %u ms after its "
		          "first bytes (frame_timeout_ms; %zu bytes of it received); closing that "
		          "session",
		          c->ctx.ep_name, s->peer, (unsigned)c->cfg->frame_timeout_ms, s->rx_len);
	}
	s->dropping = 1;
	rx_free(c, s);
	lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

static int sess_rx(ws_comm_t *c, struct lws *wsi, ws_sess_t *s, const void *in, size_t len)
{
	if (s == NULL) {
		return -1;
	}
	if (s->dropping) {
		return 0; /* being closed: lws may still hand over what it had read */
	}
	if (!lws_frame_is_binary(wsi)) {
		return reject(c, wsi, s, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE,
		              "a text message (PDU frames are binary)");
	}
	if (len > c->msg_limit - s->rx_len) {
		char why[128];
		snprintf(why, sizeof(why), "a message longer than %zu bytes (max_body_bytes %u)",
		         c->msg_limit, c->cfg->max_body_bytes);
		return reject(c, wsi, s, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, why);
	}
	if (s->rx_len + len > s->rx_cap && rx_grow(c, wsi, s, s->rx_len + len) != 0) {
		return -1;
	}
	uint64_t now = now_ms();
	if (s->rx_len == 0) {
		s->rx_start_ms = now;
	}
	s->rx_last_ms = now;
	if (len > 0) {
		memcpy(s->rx + s->rx_len, in, len);
		s->rx_len += len;
	}
	hako_frame_version_t v = (hako_frame_version_t)c->cfg->raw_version;
	hako_error_t e;
	hako_error_clear(&e);
	if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi) > 0) {
		/* Refuse a bad header as soon as it is here, not after its announced body. */
		size_t needed = 0;
		if (!s->hdr_ok) {
			if (hako_frame_needed(v, s->rx, s->rx_len, c->cfg->max_body_bytes, &needed,
			                      &e) != 0) {
				return reject(c, wsi, s, LWS_CLOSE_STATUS_POLICY_VIOLATION,
				              e.message);
			}
			s->hdr_ok = needed > 0;
		}
		if (!s->timer_on) {
			rx_arm(c, wsi, s, now);
		}
		return 0;
	}
	size_t n = s->rx_len;
	s->rx_len = 0;
	s->hdr_ok = 0;
	hako_frame_t fr;
	int r = hako_frame_decode_message(v, s->rx, n, c->cfg->max_body_bytes, &fr, &e);
	if (r != 0) {
		return reject(c, wsi, s, LWS_CLOSE_STATUS_POLICY_VIOLATION,
		              e.message[0] != '\0' ? e.message : hako_strerror(r));
	}
	if (s->conn != NULL) {
		if (s->conn->msg_ms == 0) {
			/* A peer speaks the protocol: the next limit that strikes is said again. */
			c->quiet_logged = 0;
			c->evict_logged = 0;
		}
		s->conn->msg_ms = now;
	}
	if (fr.request_type != HAKO_FRAME_PDU_DATA || c->cfg->direction == HAKO_COMM_OUT) {
		hakoi_count(&c->ctx.ctr->recv_ignored, 1);
		if (fr.request_type != HAKO_FRAME_PDU_DATA) {
			hakoi_frame_log_ignored(c->ctx.ep_name, s->peer, &fr);
		}
	} else {
		hako_pdu_key_t key;
		memset(&key, 0, sizeof(key));
		memcpy(key.robot, fr.robot, sizeof(key.robot));
		key.channel_id = fr.channel_id;
		c->ctx.deliver(c->ctx.ep, &key, fr.body, fr.body_len);
	}
	s->rx_small = n <= WS_RX_CHUNK ? s->rx_small + (s->rx_small < UINT32_MAX) : 0;
	if (s->rx_cap > WS_RX_KEEP || (s->rx_cap > WS_RX_CHUNK && s->rx_small >= WS_RX_SHRINK)) {
		rx_free(c, s);
	}
	return 0;
}

/* The previous message lws buffered in part is out now: count it. */
static void count_flushed(ws_comm_t *c, struct lws *wsi, ws_sess_t *s)
{
	if (s->unflushed && !lws_partial_buffered(wsi)) {
		s->unflushed = 0;
		hakoi_count(&c->ctx.ctr->frames_out, 1);
		hakoi_count(&c->ctx.ctr->bytes_out, s->unflushed_b);
	}
}

static int sess_write(ws_comm_t *c, struct lws *wsi, ws_sess_t *s)
{
	if (s == NULL) {
		return 0;
	}
	count_flushed(c, wsi, s);
	if (s->bye) {
		/* Stop: queue and buffer are out (or the wait is over): a clean close. */
		lws_close_reason(wsi, LWS_CLOSE_STATUS_GOINGAWAY, NULL, 0);
		return -1;
	}
	if (s->unflushed) {
		/* lws still holds part of the previous message: wait for it to go. */
		lws_callback_on_writable(wsi);
		return 0;
	}
	/* Several messages per callback while the socket takes them: one per callback costs a
	 * pass of the service loop (a poll) per message. */
	uint64_t frames = 0;
	uint64_t bytes = 0;
	size_t budget = WS_WRITE_BUDGET;
	int rc = 0;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		hakoi_frame_buf_t *f = hakoi_frameq_head(&s->q);
		if (f != NULL) {
			hakoi_frame_buf_ref(f);
			hakoi_frameq_pop(&s->q);
			if (c->waiters > 0) {
				pthread_cond_broadcast(&c->room);
			}
		}
		int more = s->q.count > 0;
		pthread_mutex_unlock(&c->lock);
		if (f == NULL) {
			break;
		}
		/* lws writes its header into the LWS_PRE bytes before data (and a client masks the
		 * payload in place): fine, every write of a shared frame happens in this thread,
		 * and a client has one session. */
		size_t body = frame_body_len(c, f);
		int n = lws_write(wsi, f->data, f->len, LWS_WRITE_BINARY);
		size_t flen = f->len;
		hakoi_frame_buf_unref(f);
		if (n < 0 || (size_t)n < flen) {
			HAKO_WARN(
			    "endpoint '%s': websocket write to %s failed; closing that session",
			    c->ctx.ep_name, s->peer);
			hakoi_count(&c->ctx.ctr->send_dropped, 1);
			rc = -1;
			break;
		}
		if (lws_partial_buffered(wsi)) {
			/* lws sends the rest when the socket takes it, then calls WRITEABLE. */
			s->unflushed = 1;
			s->unflushed_b = body;
			lws_callback_on_writable(wsi);
			break;
		}
		frames++;
		bytes += body;
		if (!more) {
			break;
		}
		budget = flen < budget ? budget - flen : 0;
		if (budget == 0 || lws_send_pipe_choked(wsi)) {
			lws_callback_on_writable(wsi);
			break;
		}
	}
	if (frames > 0) {
		hakoi_count(&c->ctx.ctr->frames_out, frames);
		hakoi_count(&c->ctx.ctr->bytes_out, bytes);
	}
	return rc;
}

static void on_wake(ws_comm_t *c)
{
	/* Senders signal again from here on; what they queued before is seen below. */
	atomic_store(&c->wake_pending, 0);
	pthread_mutex_lock(&c->lock);
	for (ws_sess_t *s = c->sessions; s != NULL; s = s->next) {
		if (s->stuck == 1) {
			/* A sender gave up on it (send_to_session): no close handshake through a
			 * queue that does not move. */
			s->stuck = 2;
			lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
		} else if (s->q.count > 0 && !s->stuck) {
			lws_callback_on_writable(s->wsi);
		}
	}
	pthread_mutex_unlock(&c->lock);
}

static int ws_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                 size_t len)
{
	struct lws_context *lc = lws_get_context(wsi);
	ws_comm_t *c = lc != NULL ? lws_context_user(lc) : NULL;
	ws_sess_t **pss = user;
	if (c == NULL) {
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
	switch (reason) {
	case LWS_CALLBACK_FILTER_NETWORK_CONNECTION: {
		/* user is lws_filter_network_conn_args here, not a session. */
		const struct lws_filter_network_conn_args *a = user;
		if (c->client || a == NULL) {
			return 0;
		}
		return admit(c, (const struct sockaddr *)&a->cli_addr) ? 0 : -1;
	}
	case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED: return c->client ? 0 : conn_add(c, wsi);
	case LWS_CALLBACK_TIMER: rx_timer(c, wsi, pss != NULL ? *pss : NULL); return 0;
	case LWS_CALLBACK_ESTABLISHED:
	case LWS_CALLBACK_CLIENT_ESTABLISHED: return sess_open(c, wsi, pss);
	case LWS_CALLBACK_CLOSED:
	case LWS_CALLBACK_CLIENT_CLOSED:
		sess_close(c, pss);
		if (c->client && wsi == c->client_wsi) {
			c->client_wsi = NULL;
			schedule_retry(c);
		}
		return 0;
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		HAKO_DEBUG("endpoint '%s': websocket connect to %s:%u failed: %s", c->ctx.ep_name,
		           c->cfg->remote.host, (unsigned)c->cfg->remote.port,
		           in != NULL ? (const char *)in : "?");
		if (wsi == c->client_wsi) {
			c->client_wsi = NULL;
		}
		schedule_retry(c);
		return 0;
	case LWS_CALLBACK_WSI_DESTROY:
		if (!c->client) {
			conn_remove(c, wsi);
		}
		if (c->client && wsi == c->client_wsi) {
			c->client_wsi = NULL;
			schedule_retry(c);
		}
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	case LWS_CALLBACK_RECEIVE:
	case LWS_CALLBACK_CLIENT_RECEIVE:
		return sess_rx(c, wsi, pss != NULL ? *pss : NULL, in, len);
	case LWS_CALLBACK_SERVER_WRITEABLE:
	case LWS_CALLBACK_CLIENT_WRITEABLE: return sess_write(c, wsi, pss != NULL ? *pss : NULL);
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED: on_wake(c); return 0;
	case LWS_CALLBACK_HTTP:
		/* Reached only without a static_dir mount. */
		if (lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, NULL) != 0) {
			return -1;
		}
		return lws_http_transaction_completed(wsi) != 0 ? -1 : 0;
	default: return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

/* ---- the service thread ---- */

/* sync: kill every session now. Else ask each (not yet asked, not rejected) to close at its next
 * WRITEABLE callback. */
static void close_sessions(ws_comm_t *c, int sync)
{
	struct lws *list[64];
	size_t n;
	int rounds = 0;
	do {
		n = 0;
		pthread_mutex_lock(&c->lock);
		for (ws_sess_t *s = c->sessions; s != NULL && n < 64; s = s->next) {
			if (!sync && (s->rejected || s->bye)) {
				continue;
			}
			list[n++] = s->wsi;
			s->bye = 1;
		}
		pthread_mutex_unlock(&c->lock);
		for (size_t i = 0; i < n; i++) {
			if (sync) {
				lws_set_timeout(list[i], PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
			} else {
				lws_callback_on_writable(list[i]);
			}
		}
	} while (n == 64 && ++rounds < 1000);
}

static uint32_t session_count(ws_comm_t *c)
{
	pthread_mutex_lock(&c->lock);
	uint32_t n = c->nsess;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* Sessions with frames queued or bytes lws still buffers (service thread). Asks each of them
 * for a WRITEABLE callback (a send may have queued since the last wake-up). */
static uint32_t sessions_pending(ws_comm_t *c)
{
	uint32_t n = 0;
	pthread_mutex_lock(&c->lock);
	for (ws_sess_t *s = c->sessions; s != NULL; s = s->next) {
		if (s->rejected) {
			continue;
		}
		if (s->q.count > 0 || s->unflushed || lws_partial_buffered(s->wsi)) {
			lws_callback_on_writable(s->wsi);
			n++;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}

static void tick_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul; /* only wakes lws_service */
}

/* One round of service that returns within WS_STOP_TICK_US when nothing happens. */
static void service_tick(ws_comm_t *c)
{
	lws_sul_schedule(c->lws, 0, &c->tick_sul, tick_cb, WS_STOP_TICK_US);
	lws_service(c->lws, 0);
}

static void *svc_thread(void *arg)
{
	ws_comm_t *c = arg;
	tl_svc_comm = c;
	c->closing = 0;
	c->full_logged = 0;
	c->quiet_logged = 0;
	c->evict_logged = 0;
	if (c->client) {
		c->backoff_ms = WS_BACKOFF_MIN;
		connect_now(c);
	}
	while (!atomic_load(&c->stopping)) {
		lws_service(c->lws, 0);
	}
	/* Stop: no new sessions or connection attempts from here. */
	c->closing = 1;
	if (c->retry_pending) {
		lws_sul_schedule(c->lws, 0, &c->retry_sul, retry_cb, LWS_SET_TIMER_USEC_CANCEL);
		c->retry_pending = 0;
	}
	if (c->client_wsi != NULL && session_count(c) == 0) {
		/* A connection attempt: nothing to write on it. */
		lws_set_timeout(c->client_wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
	}
	/* Write out what the sessions have queued and what lws buffered. */
	uint32_t drain_ms =
	    c->opt->write_timeout_ms > 0 ? c->opt->write_timeout_ms : WS_DRAIN_WAIT_MS;
	uint64_t deadline = now_ms() + drain_ms;
	uint32_t left;
	while ((left = sessions_pending(c)) > 0 && now_ms() < deadline) {
		service_tick(c);
	}
	if (left > 0) {
		HAKO_WARN("endpoint '%s': websocket stop: %u session(s) did not take what was "
		          "queued within %u ms; closing them anyway",
		          c->ctx.ep_name, (unsigned)left, (unsigned)drain_ms);
	}
	/* Close each session cleanly (close frame, the peer's reply), then kill what is left. */
	close_sessions(c, 0);
	deadline = now_ms() + WS_CLOSE_WAIT_MS;
	while ((session_count(c) > 0 || c->client_wsi != NULL) && now_ms() < deadline) {
		service_tick(c);
	}
	lws_sul_schedule(c->lws, 0, &c->tick_sul, tick_cb, LWS_SET_TIMER_USEC_CANCEL);
	close_sessions(c, 1);
	if (c->client_wsi != NULL) {
		lws_set_timeout(c->client_wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
		c->client_wsi = NULL;
	}
	return NULL;
}

/* ---- ops ---- */

static void ws_free(ws_comm_t *c)
{
	if (c->lws != NULL) {
		lws_context_destroy(c->lws);
	}
	pthread_mutex_lock(&c->lock);
	ws_sess_t *s = c->sessions;
	c->sessions = NULL;
	pthread_mutex_unlock(&c->lock);
	while (s != NULL) { /* lws closed them all; only a safety net */
		ws_sess_t *next = s->next;
		hakoi_frameq_free(&s->q);
		free(s->rx);
		free(s);
		s = next;
	}
	for (size_t i = 0; i < c->nconn; i++) { /* the same */
		free(c->conns[i]);
	}
	free(c->conns);
	pthread_cond_destroy(&c->room);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* lws reports a failed listen without the reason: try the address first, to tell the user
 * "address in use" or why else. */
static int probe_bind(const ws_comm_t *c, hako_error_t *err)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char a[80];
	if (hakoi_sockaddr(&c->cfg->local, &ss, &sl) != 0) {
		return hako_error_set(err, HAKO_EINVAL, c->cfg->path, 0, 0,
		                      "local address %s is not valid", c->cfg->local.address);
	}
	if (c->cfg->local.port == 0) {
		return 0;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return hako_error_set(err, HAKO_EIO, c->cfg->path, 0, 0, "socket: %s",
		                      strerror(errno));
	}
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	int r = 0;
	if (bind(fd, (struct sockaddr *)&ss, sl) != 0) {
		int e = errno;
		r = hako_error_set(err, e == EADDRINUSE ? HAKO_EBUSY : HAKO_EIO, c->cfg->path, 0, 0,
		                   "cannot listen on %s (websocket): %s",
		                   hakoi_sockaddr_str((struct sockaddr *)&ss, a, sizeof(a)),
		                   strerror(e));
	}
	close(fd);
	return r;
}

static int ws_open(const hakoi_comm_ctx_t *ctx, void **impl, hako_error_t *err)
{
	const hako_comm_config_t *cfg = ctx->cfg;
	pthread_once(&log_once, log_init);
	ws_comm_t *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
	}
	c->ctx = *ctx;
	c->cfg = cfg;
	c->opt = cfg->opts;
	c->client = cfg->role == HAKO_COMM_CLIENT;
	c->per_addr = cfg->max_clients / 2;
	if (c->per_addr < WS_PER_ADDR_MIN) {
		c->per_addr =
		    cfg->max_clients < WS_PER_ADDR_MIN ? cfg->max_clients : WS_PER_ADDR_MIN;
	}
	pthread_mutex_init(&c->lock, NULL);
	hakoi_cond_init(&c->room);
	c->msg_limit = (size_t)cfg->max_body_bytes + (cfg->raw_version == HAKO_FRAME_V1
	                                                  ? 12u + HAKO_FRAME_ROBOT_MAX
	                                                  : HAKO_FRAME_V2_HEADER_SIZE);
	int r = 0;
	if (!c->client && (!cfg->local.present || (r = probe_bind(c, err)) != 0)) {
		if (r == 0) {
			r = hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0,
			                   "a websocket server needs local");
		}
		goto fail;
	}
	if (c->client && !cfg->remote.present) {
		r = hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0,
		                   "a websocket client needs remote");
		goto fail;
	}
	c->protocols[0] = (struct lws_protocols){
	    .name = WS_PROTOCOL,
	    .callback = ws_cb,
	    .per_session_data_size = sizeof(ws_sess_t *),
	    .rx_buffer_size = WS_RX_BUF,
	    .tx_packet_size = WS_TX_PACKET,
	};
	if (c->opt->ping_interval_sec > 0) {
		uint32_t hup = c->opt->ping_interval_sec * 3u;
		c->policy.secs_since_valid_ping = (uint16_t)c->opt->ping_interval_sec;
		c->policy.secs_since_valid_hangup = (uint16_t)(hup > 65535u ? 65535u : hup);
	}

	struct lws_context_creation_info info;
	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.fd_limit_per_thread = WS_FD_LIMIT;
	info.pt_serv_buf_size = WS_SERV_BUF;
	info.timeout_secs = ms_to_secs(c->opt->handshake_timeout_ms);
	info.user = c;
	info.gid = -1;
	info.uid = -1;
	c->lws = lws_create_context(&info);
	if (c->lws == NULL) {
		r = hako_error_set(err, HAKO_EIO, cfg->path, 0, 0,
		                   "cannot create the libwebsockets context");
		goto fail;
	}

	memset(&info, 0, sizeof(info));
	info.protocols = c->protocols;
	info.user = c;
	info.vhost_name = "hako";
	info.retry_and_idle_policy = &c->policy;
	info.timeout_secs = ms_to_secs(c->opt->handshake_timeout_ms);
	info.connect_timeout_secs = ms_to_secs(c->opt->connect_timeout_ms);
	if (c->client) {
		info.port = CONTEXT_PORT_NO_LISTEN;
	} else {
		const char *addr = cfg->local.address;
		info.port = cfg->local.port;
		info.iface = strcmp(addr, "0.0.0.0") == 0 || strcmp(addr, "::") == 0 || addr[0] == 0
		                 ? NULL
		                 : addr;
		if (cfg->local.family != AF_INET6) {
			info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
		}
		if (c->opt->static_dir[0] != '\0') {
			static const char *const types[][2] = {
			    {".json", "application/json"},
			    {".wasm", "application/wasm"},
			    {".bin", "application/octet-stream"},
			    {".csv", "text/csv"},
			};
			for (size_t i = 0; i < 4; i++) {
				c->mime[i].next = i + 1 < 4 ? &c->mime[i + 1] : NULL;
				c->mime[i].name = types[i][0];
				c->mime[i].value = types[i][1];
			}
			c->mount.mountpoint = "/";
			c->mount.mountpoint_len = 1;
			c->mount.origin = c->opt->static_dir;
			c->mount.def = "index.html";
			c->mount.origin_protocol = LWSMPRO_FILE;
			c->mount.extra_mimetypes = c->mime;
			info.mounts = &c->mount;
		}
	}
	c->vh = lws_create_vhost(c->lws, &info);
	if (c->vh == NULL) {
		r = hako_error_set(err, HAKO_EIO, cfg->path, 0, 0,
		                   c->client ? "cannot create the websocket client"
		                             : "cannot listen on %s port %u (websocket)",
		                   cfg->local.address, (unsigned)cfg->local.port);
		goto fail;
	}
	if (!c->client) {
		int p = lws_get_vhost_listen_port(c->vh);
		if (p <= 0) {
			r = hako_error_set(err, HAKO_EIO, cfg->path, 0, 0,
			                   "cannot listen on %s port %u (websocket)",
			                   cfg->local.address, (unsigned)cfg->local.port);
			goto fail;
		}
		c->port = (uint16_t)p;
	}
	*impl = c;
	return 0;
fail:
	ws_free(c);
	return r;
}

static int ws_start(void *impl, hako_domain_t *dom, hako_error_t *err)
{
	(void)dom;
	ws_comm_t *c = impl;
	atomic_store(&c->stopping, 0);
	atomic_store(&c->wake_pending, 0);
	int e = pthread_create(&c->thread, NULL, svc_thread, c);
	if (e != 0) {
		return hako_error_set(err, HAKO_EIO, c->cfg->path, 0, 0,
		                      "cannot start the websocket thread: %s", strerror(e));
	}
	c->thread_on = 1;
	return 0;
}

static void ws_stop(void *impl)
{
	ws_comm_t *c = impl;
	if (!c->thread_on) {
		return;
	}
	atomic_store(&c->stopping, 1);
	lws_cancel_service(c->lws);
	pthread_join(c->thread, NULL);
	c->thread_on = 0;
}

static void ws_close(void *impl)
{
	ws_comm_t *c = impl;
	if (c == NULL) {
		return;
	}
	ws_stop(c);
	ws_free(c);
}

static int sess_gone(const void *arg)
{
	const ws_sess_t *s = arg;
	return s->gone || s->stuck;
}

/* Queue f for one session (lock held; it may be released while waiting). 1 = queued. *dropped
 * counts the frames dropped (f, or the oldest queued); *wake: the service thread has a session
 * to close. */
static int send_to_session(ws_comm_t *c, ws_sess_t *s, hakoi_frame_buf_t *f, int may_wait,
                           uint64_t *dropped, int *wake)
{
	const hako_comm_ws_options_t *o = c->opt;
	if (s->gone || s->stuck) {
		(*dropped)++;
		return 0;
	}
	if (may_wait && s->q.count >= s->q.cap &&
	    !hakoi_frameq_wait_room(&s->q, &c->lock, &c->room, &c->waiters, o->write_timeout_ms,
	                            sess_gone, s)) {
		if (!sess_gone(s)) {
			HAKO_WARN(
			    "endpoint '%s': websocket peer %s: send queue full (%u frames) for %u "
			    "ms; closing that session",
			    c->ctx.ep_name, s->peer, (unsigned)s->q.cap,
			    (unsigned)o->write_timeout_ms);
			s->stuck = 1;
			*wake = 1;
		}
		(*dropped)++;
		return 0;
	}
	if (hakoi_frameq_push(&s->q, f) != 0) {
		(*dropped)++; /* the oldest (never partly written here: sess_write pops first) */
	}
	return 1;
}

static int ws_send(void *impl, const hako_pdu_key_t *key, const void *data, size_t len)
{
	ws_comm_t *c = impl;
	hakoi_ep_counters_t *ctr = c->ctx.ctr;
	if (len > c->cfg->max_body_bytes) {
		hakoi_count(&ctr->send_dropped, 1);
		return HAKO_ETOOBIG;
	}
	int r = 0;
	hakoi_frame_buf_t *f = hakoi_frame_buf_new((hako_frame_version_t)c->cfg->raw_version, key,
	                                           data, len, LWS_PRE, &r);
	if (f == NULL) {
		hakoi_count(&ctr->send_dropped, 1);
		return r;
	}
	/* Blocking (tcp's flow control): a full queue waits for the service thread, which a
	 * send from that thread cannot do; there, and without blocking, the oldest goes. */
	int may_wait = c->opt->blocking && tl_svc_comm != c;
	ws_sess_t *stack[16];
	ws_sess_t **snap = stack;
	uint64_t dropped = 0;
	uint32_t n = 0, handed = 0;
	int wake = 0;
	pthread_mutex_lock(&c->lock);
	if (c->nsess > sizeof(stack) / sizeof(stack[0])) {
		snap = malloc(c->nsess * sizeof(*snap));
	}
	if (snap == NULL) {
		pthread_mutex_unlock(&c->lock);
		hakoi_frame_buf_unref(f);
		hakoi_count(&ctr->send_dropped, 1);
		return HAKO_ENOMEM;
	}
	/* References: a session that closes while this send waits for another stays valid. */
	for (ws_sess_t *s = c->sessions; s != NULL; s = s->next) {
		if (!s->rejected) {
			s->refs++;
			snap[n++] = s;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		handed += (uint32_t)send_to_session(c, snap[i], f, may_wait, &dropped, &wake);
	}
	for (uint32_t i = 0; i < n; i++) {
		sess_unref_locked(snap[i]);
	}
	pthread_mutex_unlock(&c->lock);
	if (snap != stack) {
		free(snap);
	}
	hakoi_frame_buf_unref(f);
	if (n == 0) {
		hakoi_count(&ctr->send_dropped, 1);
		return HAKO_ENOTCONN;
	}
	if (dropped > 0) {
		hakoi_count(&ctr->send_dropped, dropped);
	}
	/* One wake-up (a pipe write and a pass of the service loop) per batch of sends, not one per
	 * PDU: the first send after on_wake signals, the next ones find their frames queued. A
	 * stuck session needs one whatever. */
	if (wake || (handed > 0 && !atomic_exchange(&c->wake_pending, 1))) {
		lws_cancel_service(c->lws);
	}
	return handed > 0 ? 0 : HAKO_ENOTCONN;
}

static uint16_t ws_local_port(void *impl)
{
	return ((ws_comm_t *)impl)->port;
}

/* ---- the comm file ---- */

typedef hako_comm_ws_options_t ws_opts_t;

static void ws_defaults(hako_comm_config_t *cc)
{
	*(ws_opts_t *)cc->opts = (ws_opts_t){.handshake_timeout_ms = 5000,
	                                     .connect_timeout_ms = 1000,
	                                     .read_timeout_ms = 1000,
	                                     .write_timeout_ms = 1000,
	                                     .blocking = 1};
	/* Loopback unless the file names an address: a server reachable from other hosts is a
	 * choice, not a default (Hakoniwa's binds 0.0.0.0). */
	snprintf(cc->local.address, sizeof(cc->local.address), "127.0.0.1");
	cc->local.family = AF_INET;
	snprintf(cc->remote.path, sizeof(cc->remote.path), "/");
}

static int refuse_tls(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	return json_is_true(v) ? hakoi_walk_fail(w, "TLS is not supported") : 0;
}

static int check_static_dir(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hako_comm_config_t *cc = base;
	return cc->role == HAKO_COMM_SERVER ? 0 : hakoi_walk_fail(w, "only a server serves files");
}

static int ws_check_addrs(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hako_comm_config_t *cc = base;
	int server = cc->role == HAKO_COMM_SERVER;
	return hakoi_comm_check_addrs(w, cc, server ? "local" : "remote",
	                              server ? "remote" : "local",
	                              server ? "a server" : "a client");
}

static const hakoi_field_t ws_option_fields[] = {
    {.key = "secure", .kind = HAKOI_K_BOOL, .check = refuse_tls},
    HAKOI_COMM_INT("ping_interval_sec", ws_opts_t, ping_interval_sec, 0, 3600),
    HAKOI_COMM_INT("handshake_timeout_ms", ws_opts_t, handshake_timeout_ms, 1, HAKOI_COMM_MAX_MS),
    HAKOI_COMM_INT("connect_timeout_ms", ws_opts_t, connect_timeout_ms, 0, HAKOI_COMM_MAX_MS),
    HAKOI_COMM_INT("read_timeout_ms", ws_opts_t, read_timeout_ms, 0, HAKOI_COMM_MAX_MS),
    HAKOI_COMM_INT("write_timeout_ms", ws_opts_t, write_timeout_ms, 0, HAKOI_COMM_MAX_MS),
    HAKOI_COMM_BOOL("blocking", ws_opts_t, blocking),
    HAKOI_COMM_NET_OPTIONS,
    HAKOI_COMM_STREAM_OPTIONS,
    {.key = "static_dir",
     .kind = HAKOI_K_PATH,
     .flags = HAKOI_F_NULL_OK,
     HAKOI_COMM_AT(ws_opts_t, static_dir),
     .check = check_static_dir},
    HAKOI_END,
};

static const hakoi_field_t ws_fields[] = {
    HAKOI_COMM_COMMON_FIELDS,
    HAKOI_COMM_ROLE_FIELD,
    HAKOI_COMM_ADDR_FIELD("local", local, hakoi_comm_ws_local_fields),
    HAKOI_COMM_ADDR_FIELD("remote", remote, hakoi_comm_ws_remote_fields),
    HAKOI_CHECK(ws_check_addrs),
    HAKOI_COMM_OBJECT("options", 0, ws_option_fields),
    HAKOI_END,
};

const hako_comm_ws_options_t *hako_comm_ws_options(const hako_comm_config_t *cc)
{
	return cc != NULL && cc->protocol == HAKO_COMM_WEBSOCKET ? cc->opts : NULL;
}

const hakoi_comm_t hakoi_comm_ws = {
    .name = "websocket",
    .protocol = HAKO_COMM_WEBSOCKET,
    .opts_size = sizeof(ws_opts_t),
    .defaults = ws_defaults,
    .fields = ws_fields,
    .open = ws_open,
    .start = ws_start,
    .stop = ws_stop,
    .close = ws_close,
    .send = ws_send,
    .local_port = ws_local_port,
};
