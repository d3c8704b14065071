/* The tcp comm: a server that serves any number of clients, or a client that keeps (re)connecting
 * to one server (comm_tcp.h says how its files share the work). This file: its life cycle, on
 * and off the I/O loop, and its comm file.
 *
 * Stop. The comm first leaves the loop (its fds and timers are removed on the loop thread, the
 * set's other comms are served on), then the stopping thread writes what the peers have queued
 * (bounded by write_timeout_ms, 0: STOP_DRAIN_MS), ends each drained peer's stream (FIN after the
 * data) and reads until the peer's EOF within the same bound: close() over unread bytes would
 * reset the connection and the peer could lose what is still in flight. Peers that could not
 * take their queue in time are closed abortively, the rest counted in send_dropped. (Stopped
 * from a callback of its loop, the drain runs there and holds up the loop meanwhile.)
 */
#define _GNU_SOURCE

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm_tcp.h"
#include "hako/log.h"

/* Start serving (loop thread): the listening socket, or the first connection attempt. */
static void tcp_attach(void *arg)
{
	tcp_comm_t *c = arg;
	c->attached = 1;
	c->full_logged = 0;
	c->quiet_logged = 0;
	c->evict_logged = 0;
	c->ctimer = (hakoi_timer_t){.cb = hakoi_tcp_comm_timer, .arg = c, .owner = c};
	c->fctimer = (hakoi_timer_t){.cb = hakoi_tcp_fcache_timer, .arg = c, .owner = c};
	int r = hakoi_timer_add(c->loop, &c->ctimer);
	if (r == 0) {
		r = hakoi_timer_add(c->loop, &c->fctimer);
	}
	if (r == 0 && c->server) {
		c->lio = (hakoi_io_t){.fd = c->lfd,
		                      .events = POLLIN,
		                      .cb = hakoi_tcp_server_listen_io,
		                      .arg = c,
		                      .owner = c};
		r = hakoi_io_add(c->loop, &c->lio);
	}
	c->attach_err = r;
	if (r == 0 && !c->server) {
		c->backoff_ms = BACKOFF_MIN_MS;
		c->fail_logged = 0;
		hakoi_tcp_client_try_connect(c, now_ns());
	}
}

/* Stop serving (loop thread): nothing of the comm stays on the loop; its peers stay open for
 * stop's drain. */
static void tcp_detach(void *arg)
{
	tcp_comm_t *c = arg;
	c->attached = 0;
	hakoi_io_del(c->loop, &c->lio);
	if (!c->server && c->cfd >= 0) {
		close(c->cfd);
		c->cfd = -1;
	}
	hakoi_timer_del(c->loop, &c->ctimer);
	hakoi_timer_del(c->loop, &c->fctimer);
	for (size_t i = 0; i < c->npeers; i++) {
		hakoi_io_del(c->loop, &c->peers[i]->io);
		hakoi_timer_del(c->loop, &c->peers[i]->timer);
	}
	hakoi_loop_cancel(c->loop, &c->work);
}

static int ms_until(uint64_t when, uint64_t now)
{
	if (when <= now) {
		return 0;
	}
	uint64_t ms = (when - now + 999999u) / 1000000u;
	return ms > 60000u ? 60000 : (int)ms;
}

/* Stop (after the comm left the loop): see the top comment. */
static void drain_on_stop(tcp_comm_t *c)
{
	size_t np = c->npeers;
	if (np == 0) {
		return;
	}
	struct pollfd *pfds = calloc(np, sizeof(*pfds));
	tcp_peer_t **who = calloc(np, sizeof(*who));
	if (pfds == NULL || who == NULL) {
		free(pfds);
		free(who);
		return;
	}
	uint32_t ms = c->opt->write_timeout_ms > 0 ? c->opt->write_timeout_ms : STOP_DRAIN_MS;
	uint64_t deadline = now_ns() + (uint64_t)ms * 1000000u;
	char sink[4096];
	for (;;) {
		size_t k = 0;
		for (size_t i = 0; i < np; i++) {
			tcp_peer_t *p = c->peers[i];
			short ev = 0;
			pthread_mutex_lock(&p->lock);
			if (!p->closed && !p->dead && !p->bye) {
				if (p->q.count > 0) {
					hakoi_tcp_flush_locked(c, p);
				}
				if (p->q.count > 0 && !p->dead) {
					ev = POLLOUT;
				} else if (!p->dead) {
					shutdown(p->fd, SHUT_WR);
					p->bye = 1;
				}
			}
			if (p->bye && !p->eof) {
				ev = POLLIN;
			}
			if (ev != 0) {
				pfds[k] = (struct pollfd){.fd = p->fd, .events = ev};
				who[k++] = p;
			}
			pthread_mutex_unlock(&p->lock);
		}
		uint64_t now = now_ns();
		if (k == 0 || now >= deadline) {
			break;
		}
		if (poll(pfds, k, ms_until(deadline, now)) <= 0) {
			continue;
		}
		for (size_t j = 0; j < k; j++) {
			tcp_peer_t *p = who[j];
			if (!p->bye || pfds[j].revents == 0) {
				continue;
			}
			/* Read and drop what the peer still sends, up to its EOF. */
			for (;;) {
				ssize_t r = recv(p->fd, sink, sizeof(sink), MSG_DONTWAIT);
				if (r > 0) {
					continue;
				}
				if (r == 0 ||
				    (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
					p->eof = 1;
				}
				if (r == 0 || errno != EINTR) {
					break;
				}
			}
		}
	}
	free(pfds);
	free(who);
}

/* ---- life cycle ---- */

static int tcp_listen(tcp_comm_t *c, hako_error_t *err)
{
	const hako_comm_config_t *cfg = c->cfg;
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	if (hakoi_sockaddr(&cfg->local, &ss, &sl) != 0) {
		return hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0,
		                      "tcp server: invalid local address '%s'", cfg->local.address);
	}
	const char *host = cfg->local.address[0] != '\0' ? cfg->local.address : "0.0.0.0";
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return hako_error_set(err, HAKO_EIO, cfg->path, 0, 0,
		                      "cannot create a tcp socket for %s:%u: %s", host,
		                      (unsigned)cfg->local.port, strerror(errno));
	}
	int one = 1;
	if (c->opt->reuse_address) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	}
	int backlog = c->opt->backlog > 0 ? (int)c->opt->backlog : SOMAXCONN;
	if (bind(fd, (const struct sockaddr *)&ss, sl) != 0 || listen(fd, backlog) != 0) {
		int e = errno;
		close(fd);
		return hako_error_set(err, e == EADDRINUSE ? HAKO_EBUSY : HAKO_EIO, cfg->path, 0, 0,
		                      "cannot listen on %s:%u: %s", host, (unsigned)cfg->local.port,
		                      strerror(e));
	}
	struct sockaddr_storage bound;
	socklen_t bl = sizeof(bound);
	c->port = cfg->local.port;
	if (getsockname(fd, (struct sockaddr *)&bound, &bl) == 0) {
		c->port = bound.ss_family == AF_INET6
		              ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
		              : ntohs(((struct sockaddr_in *)&bound)->sin_port);
	}
	c->lfd = fd;
	return 0;
}

static void tcp_close(void *impl);

static int tcp_open(const hakoi_comm_ctx_t *ctx, void **impl, hako_error_t *err)
{
	const hako_comm_config_t *cfg = ctx->cfg;
	*impl = NULL;
	if (ctx->loop == NULL) {
		return hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0, "tcp: no I/O loop");
	}
	tcp_comm_t *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
	}
	c->ctx = *ctx;
	c->cfg = cfg;
	c->opt = cfg->opts;
	c->ver = cfg->raw_version == 1 ? HAKO_FRAME_V1 : HAKO_FRAME_V2;
	c->server = cfg->role == HAKO_COMM_SERVER;
	c->per_addr = cfg->max_clients / 2;
	if (c->per_addr < PER_ADDR_MIN) {
		c->per_addr = cfg->max_clients < PER_ADDR_MIN ? cfg->max_clients : PER_ADDR_MIN;
	}
	c->lfd = -1;
	c->cfd = -1;
	c->loop = ctx->loop;
	c->work = (hakoi_task_t){.fn = hakoi_tcp_work, .arg = c, .owner = c};
	pthread_mutex_init(&c->peers_lock, NULL);
	pthread_mutex_init(&c->fc_lock, NULL);
	pthread_mutex_init(&c->pool_lock, NULL);
	pthread_mutex_init(&c->cb_lock, NULL);
	int r = 0;
	if (c->server) {
		r = tcp_listen(c, err);
	} else if (hakoi_sockaddr(&cfg->remote, &c->raddr, &c->raddr_len) != 0) {
		r = hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0,
		                   "tcp client: invalid remote address '%s'", cfg->remote.address);
	} else {
		hakoi_sockaddr_str((const struct sockaddr *)&c->raddr, c->raddr_str,
		                   sizeof(c->raddr_str));
	}
	if (r != 0) {
		tcp_close(c);
		return r;
	}
	*impl = c;
	return 0;
}

static int tcp_start(void *impl, hako_domain_t *dom, hako_error_t *err)
{
	(void)dom;
	tcp_comm_t *c = impl;
	if (c->started) {
		return hako_error_set(err, HAKO_ESTATE, c->cfg->path, 0, 0, "already started");
	}
	if (hakoi_loop_hold(c->loop) != 0) {
		return hako_error_set(err, HAKO_EIO, c->cfg->path, 0, 0,
		                      "cannot start the I/O loop's thread");
	}
	hakoi_loop_call(c->loop, tcp_attach, c);
	if (c->attach_err != 0) {
		hakoi_loop_call(c->loop, tcp_detach, c);
		hakoi_loop_release(c->loop);
		return hako_error_set(err, c->attach_err, c->cfg->path, 0, 0,
		                      "cannot serve the tcp comm: %s",
		                      hako_strerror(c->attach_err));
	}
	c->started = 1;
	return 0;
}

static void tcp_stop(void *impl)
{
	tcp_comm_t *c = impl;
	if (!c->started) {
		return;
	}
	hakoi_loop_call(c->loop, tcp_detach, c);
	drain_on_stop(c);
	while (c->npeers > 0) {
		/* Drained ones end in order; the others (stuck, broken) at once. */
		tcp_peer_t *p = c->peers[c->npeers - 1];
		hakoi_tcp_peer_remove(c, p, !p->bye);
	}
	c->started = 0;
	hakoi_loop_release(c->loop);
}

static void tcp_close(void *impl)
{
	tcp_comm_t *c = impl;
	if (c == NULL) {
		return;
	}
	tcp_stop(c);
	if (c->loop != NULL) {
		/* A send that raced with stop may have posted the task again. */
		hakoi_loop_cancel(c->loop, &c->work);
	}
	if (c->lfd >= 0) {
		close(c->lfd);
	}
	free(c->peers);
	hakoi_tcp_frame_cache_clear(c);
	hakoi_tcp_pool_clear(c);
	for (int i = 0; i < POOL_CLASSES; i++) {
		free(c->pool[i]);
	}
	pthread_mutex_destroy(&c->pool_lock);
	hakoi_tcp_cbuf_clear(c);
	pthread_mutex_destroy(&c->cb_lock);
	pthread_mutex_destroy(&c->fc_lock);
	pthread_mutex_destroy(&c->peers_lock);
	free(c);
}

static uint16_t tcp_local_port(void *impl)
{
	tcp_comm_t *c = impl;
	return c->server ? c->port : 0;
}

/* ---- the comm file ---- */

typedef hako_comm_tcp_options_t tcp_opts_t;

static void tcp_defaults(hako_comm_config_t *cc)
{
	/* backlog 0: not in the file, SOMAXCONN (Hakoniwa's 5 made a burst of connects wait for
	 * SYN retransmits, ~1 s each). */
	*(tcp_opts_t *)cc->opts = (tcp_opts_t){.backlog = 0,
	                                       .connect_timeout_ms = 1000,
	                                       .read_timeout_ms = 1000,
	                                       .write_timeout_ms = 1000,
	                                       .blocking = 1,
	                                       .reuse_address = 1,
	                                       .keepalive = 1,
	                                       .no_delay = 1};
}

/* Hakoniwa's TCP mux file has expected_clients and local, and no role: it is a server. A role
 * given with it must say so. Read before role and the options, whose checks look at the role. */
static int tcp_mux_role(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hako_comm_config_t *cc = base;
	const tcp_opts_t *o = cc->opts;
	int r = 0;
	hakoi_walk_push_key(w, "role");
	if (cc->role == 0 && o->expected_clients > 0) {
		cc->role = HAKO_COMM_SERVER;
	} else if (cc->role == 0) {
		r = hakoi_walk_fail_missing(w, "\"server\" or \"client\"");
	} else if (cc->role != HAKO_COMM_SERVER && o->expected_clients > 0) {
		r = hakoi_walk_fail(w, "is \"client\"; a TCP mux (expected_clients) is a server");
	}
	hakoi_walk_pop(w);
	return r;
}

/* Every expected client needs a place (max_clients bounds the peers of any server). */
static int tcp_check_expected(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hako_comm_config_t *cc = base;
	const tcp_opts_t *o = cc->opts;
	if (o->expected_clients <= cc->max_clients) {
		return 0;
	}
	hakoi_walk_push_key(w, "expected_clients");
	int r = hakoi_walk_fail(w, "is %u; must be at most options.max_clients (%u)",
	                        (unsigned)o->expected_clients, (unsigned)cc->max_clients);
	hakoi_walk_pop(w);
	return r;
}

static int tcp_check_addrs(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hako_comm_config_t *cc = base;
	int server = cc->role == HAKO_COMM_SERVER;
	return hakoi_comm_check_addrs(w, cc, server ? "local" : "remote",
	                              server ? "remote" : "local",
	                              server ? "a server" : "a client");
}

static const hakoi_field_t tcp_linger_fields[] = {
    HAKOI_COMM_BOOL("enabled", tcp_opts_t, linger_enabled),
    HAKOI_COMM_INT("timeout_sec", tcp_opts_t, linger_timeout_sec, 0, 65535),
    HAKOI_END,
};

static const hakoi_field_t tcp_option_fields[] = {
    HAKOI_COMM_INT("backlog", tcp_opts_t, backlog, 1, 65535),
    HAKOI_COMM_INT("connect_timeout_ms", tcp_opts_t, connect_timeout_ms, 0, HAKOI_COMM_MAX_MS),
    HAKOI_COMM_INT("read_timeout_ms", tcp_opts_t, read_timeout_ms, 0, HAKOI_COMM_MAX_MS),
    HAKOI_COMM_INT("write_timeout_ms", tcp_opts_t, write_timeout_ms, 0, HAKOI_COMM_MAX_MS),
    HAKOI_COMM_BOOL("blocking", tcp_opts_t, blocking),
    HAKOI_COMM_BOOL("reuse_address", tcp_opts_t, reuse_address),
    HAKOI_COMM_BOOL("keepalive", tcp_opts_t, keepalive),
    HAKOI_COMM_BOOL("no_delay", tcp_opts_t, no_delay),
    HAKOI_COMM_INT("recv_buffer_size", tcp_opts_t, recv_buffer_size, 1, HAKOI_COMM_MAX_BUF),
    HAKOI_COMM_INT("send_buffer_size", tcp_opts_t, send_buffer_size, 1, HAKOI_COMM_MAX_BUF),
    HAKOI_COMM_OBJECT("linger", 0, tcp_linger_fields),
    HAKOI_COMM_NET_OPTIONS,
    HAKOI_COMM_STREAM_OPTIONS,
    HAKOI_END,
};

static const hakoi_field_t tcp_fields[] = {
    HAKOI_COMM_COMMON_FIELDS,
    HAKOI_COMM_INT("expected_clients", tcp_opts_t, expected_clients, 1, HAKO_ENDPOINT_MAX_CLIENTS),
    HAKOI_ENUM("role", 0, hako_comm_config_t, role, hakoi_comm_role_names, hakoi_comm_role_values),
    HAKOI_CHECK(tcp_mux_role),
    HAKOI_COMM_RESOLVER_FIELD, /* before the addresses: their node names need its map */
    HAKOI_COMM_ADDR_FIELD("local", local, hakoi_comm_ip_local_fields),
    HAKOI_COMM_ADDR_FIELD("remote", remote, hakoi_comm_ip_remote_fields),
    HAKOI_CHECK(tcp_check_addrs),
    HAKOI_COMM_OBJECT("options", 0, tcp_option_fields),
    HAKOI_CHECK(tcp_check_expected),
    HAKOI_END,
};

const hako_comm_tcp_options_t *hako_comm_tcp_options(const hako_comm_config_t *cc)
{
	return cc != NULL && cc->protocol == HAKO_COMM_TCP ? cc->opts : NULL;
}

const hakoi_comm_t hakoi_comm_tcp = {
    .name = "tcp",
    .protocol = HAKO_COMM_TCP,
    .uses_loop = 1,
    .opts_size = sizeof(tcp_opts_t),
    .defaults = tcp_defaults,
    .fields = tcp_fields,
    .open = tcp_open,
    .start = tcp_start,
    .stop = tcp_stop,
    .close = tcp_close,
    .send = hakoi_tcp_send,
    .local_port = tcp_local_port,
};
