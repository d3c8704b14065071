/* The tcp comm's connections: its peers (added, shut, removed), the client's connection kept
 * with back-off, the server's accept, and serving a peer on the loop thread (reading, writing
 * its queue, its deadlines, dropping it). See comm_tcp.h for the whole.
 *
 * Limits across peers (a server's memory must not be linear in hostile peers): at most
 * max_clients peers, and the receive buffers of all peers together, beyond the RX_CHUNK each
 * reads into (so small frames are always served), stay within max_buffered_bytes: a peer whose
 * buffer would have to grow past it, once the buffers kept by idle peers are released, is
 * dropped (rejected, with the reason). A listening socket's backlog is SOMAXCONN unless the
 * file sets one.
 * Places that idle peers cannot hold (server): connections that never send a frame must not
 * lock out the peers that do.
 *  - First frame: a peer of a server that takes input (direction in or inout) must have sent a
 *    whole frame FIRST_FRAME_MS after it connected, or it is dropped (disconnects); a first
 *    frame in progress then has frame_timeout_ms from its first byte instead, if that is set.
 *    A peer that sent nothing at all may be a client that only listens: it is kept while the
 *    server is less than half full (then it gives way like any idle peer, below). A server
 *    that only sends (out) waits for nothing from its peers.
 *  - Per address: one address (IPv6: one /64) holds at most per_addr peers, half of
 *    max_clients (at least PER_ADDR_MIN, or max_clients if smaller), so that a single host
 *    cannot take every place.
 *  - Making room: a connection that finds its address's places or all places taken takes the
 *    place of an idle peer (of its address, or of any): one that never sent a frame and
 *    connected EVICT_NEW_MS ago or more (the oldest; those with nothing of a frame first),
 *    else one whose last frame is EVICT_IDLE_MS old or more (the longest idle). A peer that
 *    streams, or one that just connected, never gives way. With no such peer, the connection
 *    is accepted and closed at once (rejected). All peers may share one address (127.0.0.1 in
 *    tests, a proxy): a new client of it still gets in, in the place of its oldest idle peer.
 * Each of these is logged once (until a peer sends its first frame), then at debug level.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm_tcp.h"
#include "hako/log.h"

/* ---- peers ---- */

void hakoi_tcp_peer_unref(tcp_peer_t *p)
{
	if (atomic_fetch_sub(&p->refs, 1) != 1) {
		return;
	}
	hakoi_frameq_free(&p->q);
	free(p->rbuf);
	pthread_cond_destroy(&p->room);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static void set_sockopts(const tcp_comm_t *c, int fd)
{
	const hako_comm_tcp_options_t *o = c->opt;
	int one = 1;
	if (o->no_delay) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	if (o->keepalive) {
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	}
	if (o->recv_buffer_size > 0) {
		int v = (int)o->recv_buffer_size;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	}
	if (o->send_buffer_size > 0) {
		int v = (int)o->send_buffer_size;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	}
	if (o->linger_enabled) {
		struct linger l = {.l_onoff = 1, .l_linger = (int)o->linger_timeout_sec};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
}

static void peer_io(hakoi_io_t *io, short revents);
static void peer_timer(hakoi_timer_t *t);

/* Add a connected socket as a peer (loop thread). NULL on ENOMEM (fd closed then). */
static tcp_peer_t *peer_add(tcp_comm_t *c, int fd, const struct sockaddr *sa)
{
	tcp_peer_t *p = calloc(1, sizeof(*p));
	if (p == NULL || hakoi_frameq_init(&p->q, c->cfg->send_queue_depth) != 0) {
		free(p);
		close(fd);
		return NULL;
	}
	atomic_init(&p->refs, 1);
	p->fd = fd;
	p->comm = c;
	hakoi_sockaddr_str(sa, p->addr, sizeof(p->addr));
	hakoi_addr_key(sa, p->akey);
	pthread_mutex_init(&p->lock, NULL);
	hakoi_cond_init(&p->room);
	p->rx_ns = now_ns();
	p->since_ns = p->rx_ns;
	p->io = (hakoi_io_t){.fd = fd, .events = POLLIN, .cb = peer_io, .arg = p, .owner = c};
	p->timer = (hakoi_timer_t){.cb = peer_timer, .arg = p, .owner = c};

	pthread_mutex_lock(&c->peers_lock);
	int r = 0;
	if (c->npeers == c->peers_cap) {
		size_t cap = c->peers_cap ? c->peers_cap * 2 : 8;
		tcp_peer_t **n = realloc(c->peers, cap * sizeof(*n));
		if (n == NULL) {
			r = HAKO_ENOMEM;
		} else {
			c->peers = n;
			c->peers_cap = cap;
		}
	}
	if (r == 0 && (r = hakoi_io_add(c->loop, &p->io)) == 0 &&
	    (r = hakoi_timer_add(c->loop, &p->timer)) != 0) {
		hakoi_io_del(c->loop, &p->io);
	}
	if (r != 0) {
		pthread_mutex_unlock(&c->peers_lock);
		close(fd);
		p->fd = -1;
		hakoi_tcp_peer_unref(p);
		return NULL;
	}
	p->index = c->npeers;
	c->peers[c->npeers++] = p;
	pthread_mutex_unlock(&c->peers_lock);
	atomic_fetch_add_explicit(&c->ctx.ctr->peers, 1, memory_order_relaxed);
	return p;
}

/* Close the socket and free what is queued (counted as dropped). abortive: do not linger. */
static void peer_shut(tcp_comm_t *c, tcp_peer_t *p, int abortive)
{
	pthread_mutex_lock(&p->lock);
	if (!p->closed) {
		p->closed = 1;
		if (abortive) {
			struct linger l = {.l_onoff = 0, .l_linger = 0};
			setsockopt(p->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		}
		close(p->fd);
		p->fd = -1;
		if (p->q.count > 0) {
			hakoi_count(&c->ctx.ctr->send_dropped, p->q.count);
		}
		while (p->q.count > 0) {
			hakoi_frameq_pop(&p->q);
		}
		pthread_cond_broadcast(&p->room);
	}
	pthread_mutex_unlock(&p->lock);
}

/* Take p off the loop and the array, close it and drop the array's reference. */
void hakoi_tcp_peer_remove(tcp_comm_t *c, tcp_peer_t *p, int abortive)
{
	/* No-ops once the comm left the loop (stop removes them on the loop thread first). */
	hakoi_io_del(c->loop, &p->io);
	hakoi_timer_del(c->loop, &p->timer);
	pthread_mutex_lock(&c->peers_lock);
	tcp_peer_t *last = c->peers[--c->npeers];
	c->peers[p->index] = last;
	last->index = p->index;
	pthread_mutex_unlock(&c->peers_lock);
	atomic_fetch_sub_explicit(&c->ctx.ctr->peers, 1, memory_order_relaxed);
	/* The receive side is the loop thread's (or stop's, after it): give the room back now, a
	 * sender may still hold a reference on p. */
	c->rx_total -= rx_held(p->rcap);
	free(p->rbuf);
	p->rbuf = NULL;
	p->rcap = 0;
	p->rlen = 0;
	peer_shut(c, p, abortive);
	hakoi_tcp_peer_unref(p);
}

/* ---- client connection (loop thread) ---- */

static void client_schedule_retry(tcp_comm_t *c, uint64_t now)
{
	hakoi_timer_set(c->loop, &c->ctimer, now + (uint64_t)c->backoff_ms * 1000000u);
	c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
}

/* The connecting socket off the loop (closed unless handed on). */
static void client_unwatch(tcp_comm_t *c, int close_it)
{
	hakoi_io_del(c->loop, &c->lio);
	hakoi_timer_cancel(c->loop, &c->ctimer);
	if (close_it && c->cfd >= 0) {
		close(c->cfd);
	}
	c->cfd = -1;
}

static void client_fail(tcp_comm_t *c, int e, uint64_t now)
{
	client_unwatch(c, 1);
	if (!c->fail_logged) {
		HAKO_INFO("endpoint '%s': cannot connect to %s: %s; retrying", c->ctx.ep_name,
		          c->raddr_str, strerror(e));
		c->fail_logged = 1;
	} else {
		HAKO_DEBUG("endpoint '%s': connect to %s: %s", c->ctx.ep_name, c->raddr_str,
		           strerror(e));
	}
	client_schedule_retry(c, now);
}

static void client_connected(tcp_comm_t *c)
{
	int fd = c->cfd;
	client_unwatch(c, 0);
	if (peer_add(c, fd, (const struct sockaddr *)&c->raddr) == NULL) {
		client_fail(c, ENOMEM, now_ns());
		return;
	}
	hakoi_count(&c->ctx.ctr->connects, 1);
	if (c->ever_connected) {
		hakoi_count(&c->ctx.ctr->reconnects, 1);
	}
	c->ever_connected = 1;
	c->fail_logged = 0;
	c->backoff_ms = BACKOFF_MIN_MS;
	HAKO_INFO("endpoint '%s': connected to %s", c->ctx.ep_name, c->raddr_str);
}

static void client_connect_io(hakoi_io_t *io, short revents)
{
	(void)revents;
	tcp_comm_t *c = io->arg;
	int e = 0;
	socklen_t l = sizeof(e);
	if (getsockopt(c->cfd, SOL_SOCKET, SO_ERROR, &e, &l) != 0) {
		e = errno;
	}
	if (e != 0) {
		client_fail(c, e, now_ns());
		return;
	}
	client_connected(c);
}

void hakoi_tcp_client_try_connect(tcp_comm_t *c, uint64_t now)
{
	int fd = socket(c->raddr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		client_fail(c, errno, now);
		return;
	}
	set_sockopts(c, fd);
	c->cfd = fd;
	if (connect(fd, (const struct sockaddr *)&c->raddr, c->raddr_len) == 0) {
		client_connected(c);
		return;
	}
	if (errno != EINPROGRESS) {
		client_fail(c, errno, now);
		return;
	}
	c->lio = (hakoi_io_t){
	    .fd = fd, .events = POLLOUT, .cb = client_connect_io, .arg = c, .owner = c};
	if (hakoi_io_add(c->loop, &c->lio) != 0) {
		client_fail(c, ENOMEM, now);
		return;
	}
	uint32_t t = c->opt->connect_timeout_ms ? c->opt->connect_timeout_ms : DEFAULT_CONN_TOUT;
	hakoi_timer_set(c->loop, &c->ctimer, now + (uint64_t)t * 1000000u);
}

/* ---- server accept (loop thread) ---- */

static uint64_t peer_deadline(const tcp_comm_t *c, const tcp_peer_t *p);

/* Close p for one of the limits on idle peers (counted in disconnects). The first of each kind
 * (*said) is a warning, the next ones are debug lines until a peer sends its first frame. */
static void limit_drop(tcp_comm_t *c, tcp_peer_t *p, int *said, const char *why)
{
	if (!*said) {
		HAKO_WARN("endpoint '%s': peer %s: %s; connection closed (more of these at debug "
		          "level)",
		          c->ctx.ep_name, p->addr, why);
		*said = 1;
	} else {
		HAKO_DEBUG("endpoint '%s': peer %s: %s; connection closed", c->ctx.ep_name, p->addr,
		           why);
	}
	hakoi_count(&c->ctx.ctr->disconnects, 1);
	hakoi_tcp_peer_remove(c, p, 1);
}

/* Whether p may give way to a new peer (it is idle: see the top comment), and its place in the
 * order in which idle peers give way: *tier (peers that never sent a frame, those with nothing
 * of one first; then those that did), then *t, the oldest first. */
static int idle_order(const tcp_peer_t *p, uint64_t now, int *tier, uint64_t *t)
{
	if (p->frame_ns == 0) {
		*tier = p->rlen > 0;
		*t = p->since_ns;
		return now - p->since_ns >= MS_NS(EVICT_NEW_MS);
	}
	*tier = 2;
	*t = p->frame_ns;
	return now - p->frame_ns >= MS_NS(EVICT_IDLE_MS);
}

/* Whether a connection from key may come in: 1 with *victim NULL (there is room) or the peer
 * whose place it takes (of its address when that one holds per_addr peers), 0 if it may not. */
static int admit(tcp_comm_t *c, const uint8_t key[16], uint64_t now, tcp_peer_t **victim)
{
	size_t same = 0;
	for (size_t i = 0; i < c->npeers; i++) {
		same += memcmp(c->peers[i]->akey, key, 16) == 0;
	}
	int addr_full = same >= c->per_addr;
	*victim = NULL;
	if (!addr_full && c->npeers < c->cfg->max_clients) {
		return 1;
	}
	int best_tier = 0;
	uint64_t best_t = 0;
	for (size_t i = 0; i < c->npeers; i++) {
		tcp_peer_t *p = c->peers[i];
		int tier;
		uint64_t t;
		if ((addr_full && memcmp(p->akey, key, 16) != 0) ||
		    !idle_order(p, now, &tier, &t)) {
			continue;
		}
		if (*victim == NULL || tier < best_tier || (tier == best_tier && t < best_t)) {
			*victim = p;
			best_tier = tier;
			best_t = t;
		}
	}
	return *victim != NULL;
}

/* A connection refused (accepted and closed at once rather than left in the backlog: a connect
 * that hangs tells its program nothing). */
static void refuse(tcp_comm_t *c, int fd, const char *addr)
{
	close(fd);
	hakoi_count(&c->ctx.ctr->rejected, 1);
	if (!c->full_logged) {
		HAKO_WARN("endpoint '%s': peer %s closed at once: %zu peers connected (max_clients "
		          "%u, %u per address) and none idle long enough to give way (more of "
		          "these at debug level)",
		          c->ctx.ep_name, addr, c->npeers, (unsigned)c->cfg->max_clients,
		          (unsigned)c->per_addr);
		c->full_logged = 1;
	} else {
		HAKO_DEBUG("endpoint '%s': peer %s closed at once: no place", c->ctx.ep_name, addr);
	}
}

/* A TCP mux names its sessions as Hakoniwa's names the endpoints it makes of them,
 * <endpoint>_<n> in accept order: a client sends nothing that names it. */
static void mux_session_begins(tcp_comm_t *c, tcp_peer_t *p)
{
	const uint32_t want = c->opt->expected_clients;
	p->session = ++c->sessions;
	HAKO_INFO("endpoint '%s': session %s_%llu: client %s connected (%zu of %u expected)",
	          c->ctx.ep_name, c->ctx.ep_name, (unsigned long long)p->session, p->addr,
	          c->npeers, (unsigned)want);
	if (c->npeers >= want && !c->ready_logged) {
		HAKO_INFO("endpoint '%s': the %u expected clients are connected", c->ctx.ep_name,
		          (unsigned)want);
		c->ready_logged = 1;
	} else if (c->npeers < want) {
		c->ready_logged = 0;
	}
}

static void server_accept(tcp_comm_t *c)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(c->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED) {
				continue;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				HAKO_WARN("endpoint '%s': accept: %s", c->ctx.ep_name,
				          strerror(errno));
				/* Out of fds & co: pause, do not spin on the socket. */
				hakoi_io_events(c->loop, &c->lio, 0);
				hakoi_timer_set(c->loop, &c->ctimer,
				                now_ns() + ACCEPT_PAUSE_MS * 1000000ull);
			}
			return;
		}
		char addr[64];
		uint8_t key[16];
		uint64_t now = now_ns();
		tcp_peer_t *victim = NULL;
		hakoi_sockaddr_str((const struct sockaddr *)&ss, addr, sizeof(addr));
		hakoi_addr_key((const struct sockaddr *)&ss, key);
		if (!admit(c, key, now, &victim)) {
			refuse(c, fd, addr);
			continue;
		}
		if (victim != NULL) {
			char why[160];
			if (victim->frame_ns == 0) {
				snprintf(
				    why, sizeof(why),
				    "no frame in the %llu ms since it connected; its place goes "
				    "to %s",
				    (unsigned long long)((now - victim->since_ns) / 1000000u),
				    addr);
			} else {
				snprintf(why, sizeof(why),
				         "no frame for %llu ms; its place goes to %s",
				         (unsigned long long)((now - victim->frame_ns) / 1000000u),
				         addr);
			}
			limit_drop(c, victim, &c->evict_logged, why);
		} else {
			c->full_logged = 0;
		}
		set_sockopts(c, fd);
		tcp_peer_t *p = peer_add(c, fd, (const struct sockaddr *)&ss);
		if (p == NULL) {
			HAKO_WARN("endpoint '%s': out of memory for a new peer", c->ctx.ep_name);
			continue;
		}
		uint64_t d = peer_deadline(c, p);
		if (d != 0) {
			hakoi_timer_set(c->loop, &p->timer, d);
		}
		hakoi_count(&c->ctx.ctr->accepted, 1);
		if (c->opt->expected_clients > 0) {
			mux_session_begins(c, p);
		} else {
			HAKO_INFO("endpoint '%s': peer %s connected", c->ctx.ep_name, p->addr);
		}
	}
}

void hakoi_tcp_server_listen_io(hakoi_io_t *io, short revents)
{
	(void)revents;
	server_accept(io->arg);
}

/* The comm's timer: the end of an accept pause (server); a connect's deadline or the next
 * attempt (client). */
void hakoi_tcp_comm_timer(hakoi_timer_t *t)
{
	tcp_comm_t *c = t->arg;
	uint64_t now = now_ns();
	if (c->server) {
		hakoi_io_events(c->loop, &c->lio, POLLIN);
	} else if (c->cfd >= 0) {
		client_fail(c, ETIMEDOUT, now);
	} else if (c->npeers == 0) {
		hakoi_tcp_client_try_connect(c, now);
	}
}

/* ---- serving the peers (loop thread) ---- */

/* A mux session dropped for what it sent: named, and, before its first frame, with what a mux
 * client must send (a client that names itself or says hello first is refused here). */
static void mux_session_refused(tcp_comm_t *c, tcp_peer_t *p, const char *why)
{
	const char *name = c->ctx.ep_name;
	HAKO_WARN("endpoint '%s': session %s_%llu: client %s refused: %s; connection closed%s",
	          name, name, (unsigned long long)p->session, p->addr, why,
	          p->frame_ns != 0 ? ""
	                           : " (a TCP mux client sends v1/v2 frames from its first byte; "
	                             "it does not name itself)");
}

static void drop_peer(tcp_comm_t *c, tcp_peer_t *p, int kind, const char *why)
{
	const char *name = c->ctx.ep_name;
	if (kind == RX_REJECT) {
		hakoi_count(&c->ctx.ctr->rejected, 1);
		if (p->session > 0) {
			mux_session_refused(c, p, why);
		} else {
			HAKO_WARN("endpoint '%s': peer %s: %s; connection closed", name, p->addr,
			          why);
		}
	} else {
		hakoi_count(&c->ctx.ctr->disconnects, 1);
		if (!c->server) {
			HAKO_WARN("endpoint '%s': connection to %s lost: %s", name, c->raddr_str,
			          kind == RX_EOF ? "closed by the server"
			          : why != NULL  ? why
			                         : "send queue stuck");
		} else if (kind == RX_EOF && p->session > 0) {
			HAKO_INFO("endpoint '%s': session %s_%llu: client %s disconnected", name,
			          name, (unsigned long long)p->session, p->addr);
		} else if (kind == RX_EOF) {
			HAKO_INFO("endpoint '%s': peer %s disconnected", name, p->addr);
		} else if (why != NULL && p->session > 0) {
			mux_session_refused(c, p, why);
		} else if (why != NULL) {
			HAKO_WARN("endpoint '%s': peer %s: %s; connection closed", name, p->addr,
			          why);
		}
	}
	hakoi_tcp_peer_remove(c, p, kind != RX_EOF);
	if (!c->server) {
		client_schedule_retry(c, now_ns());
	}
}

/* When p must have sent its first frame (0: it need not, or did): see the top comment. */
static uint64_t first_deadline(const tcp_comm_t *c, const tcp_peer_t *p)
{
	if (!c->server || c->cfg->direction == HAKO_COMM_OUT || p->frame_ns != 0 || p->listener ||
	    (p->rlen > 0 && c->cfg->frame_timeout_ms > 0)) {
		return 0;
	}
	return p->since_ns + MS_NS(FIRST_FRAME_MS);
}

/* The next time p's timer has something to check (0: none): its first frame's or partial
 * frame's deadlines, or the release of an idle big buffer. */
static uint64_t peer_deadline(const tcp_comm_t *c, const tcp_peer_t *p)
{
	const uint64_t rto_ns = (uint64_t)c->opt->read_timeout_ms * 1000000u;
	const uint64_t fto_ns = (uint64_t)c->cfg->frame_timeout_ms * 1000000u;
	uint64_t d = 0;
	if (p->rlen > 0) {
		if (rto_ns > 0) {
			d = p->rx_ns + rto_ns;
		}
		if (fto_ns > 0 && (d == 0 || p->fstart_ns + fto_ns < d)) {
			d = p->fstart_ns + fto_ns;
		}
	} else if (p->rcap > RX_CHUNK) {
		d = p->rx_ns + RX_IDLE_NS;
	}
	uint64_t first = first_deadline(c, p);
	if (first != 0 && (d == 0 || first < d)) {
		d = first;
	}
	return d;
}

/* Serve p: read what revents says, write its queue, check that it is alive and its deadlines,
 * then poll and time it for what is left. A peer that fails is dropped (and may be freed). */
static void peer_serve(tcp_comm_t *c, tcp_peer_t *p, short rev)
{
	const uint64_t rto_ns = (uint64_t)c->opt->read_timeout_ms * 1000000u;
	const uint64_t fto_ns = (uint64_t)c->cfg->frame_timeout_ms * 1000000u;
	char why[sizeof(((hako_error_t *)0)->message)];
	int kind = RX_OK;
	short ev = POLLIN;
	why[0] = '\0';
	if (rev & (POLLIN | POLLERR | POLLHUP)) {
		kind = hakoi_tcp_rx_peer(c, p, why, sizeof(why));
	}
	if (kind == RX_OK) {
		pthread_mutex_lock(&p->lock);
		if (p->q.count > 0 && !p->dead && (!p->want_out || (rev & (POLLOUT | POLLERR)))) {
			p->want_out = 0;
			hakoi_tcp_flush_locked(c, p);
		}
		if (p->dead == DEAD_BROKEN) {
			kind = RX_LOST;
			snprintf(why, sizeof(why), "%s", strerror(p->dead_errno));
		} else if (p->dead == DEAD_STUCK) {
			kind = RX_LOST;
		}
		if (p->want_out) {
			ev |= POLLOUT;
		}
		pthread_mutex_unlock(&p->lock);
	}
	uint64_t now = now_ns();
	if (kind == RX_OK && rto_ns > 0 && p->rlen > 0 && now >= p->rx_ns + rto_ns) {
		kind = RX_LOST;
		snprintf(why, sizeof(why),
		         "no complete frame for %u ms (%zu bytes of one received)",
		         (unsigned)c->opt->read_timeout_ms, p->rlen);
	}
	if (kind == RX_OK && fto_ns > 0 && p->rlen > 0 && now >= p->fstart_ns + fto_ns) {
		kind = RX_LOST;
		snprintf(why, sizeof(why),
		         "a frame not whole %u ms after its first byte "
		         "(frame_timeout_ms; %zu bytes of it received)",
		         (unsigned)c->cfg->frame_timeout_ms, p->rlen);
	}
	if (kind != RX_OK) {
		drop_peer(c, p, kind, why[0] != '\0' ? why : NULL);
		return;
	}
	uint64_t first = first_deadline(c, p);
	if (first != 0 && now >= first && p->rlen == 0 && c->npeers * 2 < c->cfg->max_clients) {
		/* Nothing at all (a client that only listens, as to an inout server): kept while
		 * the server has room; an idle peer gives way to a new connection anyway. */
		p->listener = 1;
		first = 0;
	}
	if (first != 0 && now >= first) {
		snprintf(why, sizeof(why),
		         "no whole frame within %u ms of connecting (%zu bytes of one received)",
		         FIRST_FRAME_MS, p->rlen);
		limit_drop(c, p, &c->quiet_logged, why);
		return;
	}
	if (p->rcap > RX_CHUNK && p->rlen == 0 && now >= p->rx_ns + RX_IDLE_NS) {
		hakoi_tcp_rx_idle_shrink(c, p);
	}
	if (ev != p->io.events) {
		hakoi_io_events(c->loop, &p->io, ev);
	}
	/* Lazily: a timer that fires early finds nothing due and is set again from here. */
	uint64_t d = peer_deadline(c, p);
	if (d != 0 && (!hakoi_timer_armed(&p->timer) || d < p->timer.when)) {
		hakoi_timer_set(c->loop, &p->timer, d);
	}
}

static void peer_io(hakoi_io_t *io, short revents)
{
	tcp_peer_t *p = io->arg;
	peer_serve(p->comm, p, revents);
}

static void peer_timer(hakoi_timer_t *t)
{
	tcp_peer_t *p = t->arg;
	peer_serve(p->comm, p, 0);
}

/* Posted by senders: write the queues they filled, drop the peers they found dead. Last to
 * first: dropping peers[i] moves the last (already served) into i. */
void hakoi_tcp_work(hakoi_task_t *t)
{
	tcp_comm_t *c = t->arg;
	if (!c->attached) {
		return; /* posted by a send that raced with stop */
	}
	for (size_t i = c->npeers; i-- > 0;) {
		tcp_peer_t *p = c->peers[i];
		pthread_mutex_lock(&p->lock);
		int todo = p->dead != DEAD_NONE || (p->q.count > 0 && !p->want_out);
		pthread_mutex_unlock(&p->lock);
		if (todo) {
			peer_serve(c, p, 0);
		}
	}
	hakoi_tcp_idle_arm(c);
}
