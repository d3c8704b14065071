/* The udp comm: one frame per datagram, one socket (ep_comm.h).
 *
 * Receiving: the socket is one of the fds of its endpoint set's I/O loop (ep_loop.h), from
 * start to stop; each time it is readable the loop reads what is there (at most RX_BATCH
 * datagrams, so that the set's other comms are served under a flood) and delivers it. Sends go
 * out directly with sendto() on the non-blocking socket from the caller's thread: a datagram
 * socket has no per-peer queue to bound, so option "blocking" changes nothing and a send never
 * waits (a full socket buffer drops the PDU: HAKO_EAGAIN, counted). timeout_ms (Hakoniwa's
 * receive timeout) is read and has no use: nothing waits on a receive. */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ep_comm.h"
#include "ep_loop.h"
#include "ep_net.h"
#include "hako/log.h"

#define UDP_RX_BUF      65536u /* > the largest UDP payload (65527) */
#define UDP_MAX_V4      65507u
#define UDP_MAX_V6      65527u
#define UDP_RCVBUF_MIN  (4u << 20)
#define UDP_SNDBUF_MIN  (256u << 10)
#define UDP_WARN_SLOTS  16
#define RX_BATCH        256 /* datagrams per turn of the loop */
#define UDP_WARN_GAP_MS 1000

typedef struct warn_slot {
	struct sockaddr_storage from;
	uint64_t last_ms;
	uint64_t suppressed;
	int used;
} warn_slot_t;

typedef struct udp_comm {
	hakoi_comm_ctx_t ctx;
	const hako_comm_config_t *cfg;
	const hako_comm_udp_options_t *opt;
	int fd;
	int family;
	uint16_t port;
	hakoi_loop_t *loop;
	hakoi_io_t io; /* the socket on the loop (start .. stop) */
	int started;
	int attach_err;

	struct sockaddr_storage remote;
	socklen_t remote_len;
	int has_remote;

	pthread_mutex_t lock; /* last sender */
	struct sockaddr_storage last;
	socklen_t last_len;
	int has_last;

	atomic_int toobig_logged;
	atomic_int senderr_logged;
	warn_slot_t warn[UDP_WARN_SLOTS]; /* loop thread only */
	uint8_t *rx;
} udp_comm_t;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family) {
		return 0;
	}
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return x->sin6_port == y->sin6_port &&
	       memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
}

/* A malformed datagram: counted always, logged at most once a second per sender (a flood of
 * garbage must not flood the log). */
static void refuse(udp_comm_t *u, const struct sockaddr_storage *from, const char *why)
{
	hakoi_count(&u->ctx.ctr->rejected, 1);
	uint64_t t = now_ms();
	warn_slot_t *s = NULL, *oldest = &u->warn[0];
	for (int i = 0; i < UDP_WARN_SLOTS; i++) {
		warn_slot_t *w = &u->warn[i];
		if (w->used && same_addr(&w->from, from)) {
			s = w;
			break;
		}
		if (!w->used || w->last_ms < oldest->last_ms) {
			oldest = w;
		}
	}
	if (s == NULL) {
		s = oldest;
		memset(s, 0, sizeof(*s));
		s->from = *from;
		s->used = 1;
	} else if (t - s->last_ms < UDP_WARN_GAP_MS) {
		s->suppressed++;
		return;
	}
	char a[80];
	hakoi_sockaddr_str((const struct sockaddr *)from, a, sizeof(a));
	if (s->suppressed > 0) {
		HAKO_WARN("endpoint '%s': udp datagram from %s refused: %s (%llu more from it "
		          "not logged)",
		          u->ctx.ep_name, a, why, (unsigned long long)s->suppressed);
	} else {
		HAKO_WARN("endpoint '%s': udp datagram from %s refused: %s", u->ctx.ep_name, a,
		          why);
	}
	s->last_ms = t;
	s->suppressed = 0;
}

static void handle_datagram(udp_comm_t *u, size_t n, const struct sockaddr_storage *from,
                            socklen_t from_len)
{
	if (n > UDP_RX_BUF) {
		refuse(u, from, "larger than a datagram buffer");
		return;
	}
	hako_frame_t fr;
	hako_error_t e;
	hako_error_clear(&e);
	int r = hako_frame_decode_message((hako_frame_version_t)u->cfg->raw_version, u->rx, n,
	                                  u->cfg->max_body_bytes, &fr, &e);
	if (r != 0) {
		refuse(u, from, e.message[0] != '\0' ? e.message : hako_strerror(r));
		return;
	}
	/* Only a well-formed frame may redirect replies. */
	pthread_mutex_lock(&u->lock);
	u->last = *from;
	u->last_len = from_len;
	u->has_last = 1;
	pthread_mutex_unlock(&u->lock);
	if (fr.request_type != HAKO_FRAME_PDU_DATA || u->cfg->direction == HAKO_COMM_OUT) {
		hakoi_count(&u->ctx.ctr->recv_ignored, 1);
		if (fr.request_type != HAKO_FRAME_PDU_DATA && hako_log_enabled(HAKO_LOG_DEBUG)) {
			char a[80];
			hakoi_sockaddr_str((const struct sockaddr *)from, a, sizeof(a));
			hakoi_frame_log_ignored(u->ctx.ep_name, a, &fr);
		}
		return;
	}
	hako_pdu_key_t key;
	memset(&key, 0, sizeof(key));
	memcpy(key.robot, fr.robot, sizeof(key.robot));
	key.channel_id = fr.channel_id;
	u->ctx.deliver(u->ctx.ep, &key, fr.body, fr.body_len);
}

/* The socket is readable (loop thread): what is there, bounded. */
static void udp_rx(hakoi_io_t *io, short revents)
{
	(void)revents;
	udp_comm_t *u = io->arg;
	for (int i = 0; i < RX_BATCH; i++) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		memset(&from, 0, sizeof(from));
		ssize_t got = recvfrom(u->fd, u->rx, UDP_RX_BUF, MSG_DONTWAIT | MSG_TRUNC,
		                       (struct sockaddr *)&from, &fl);
		if (got < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNREFUSED) {
				HAKO_DEBUG("endpoint '%s': udp recv: %s", u->ctx.ep_name,
				           strerror(errno));
			}
			break;
		}
		handle_datagram(u, (size_t)got, &from, fl);
	}
}

static void udp_attach(void *arg)
{
	udp_comm_t *u = arg;
	u->io = (hakoi_io_t){.fd = u->fd, .events = POLLIN, .cb = udp_rx, .arg = u, .owner = u};
	u->attach_err = hakoi_io_add(u->loop, &u->io);
}

static void udp_detach(void *arg)
{
	udp_comm_t *u = arg;
	hakoi_io_del(u->loop, &u->io);
}

static int sockopt(int fd, int level, int name, int v)
{
	return setsockopt(fd, level, name, &v, sizeof(v));
}

static int join_group(udp_comm_t *u, hako_error_t *err)
{
	const hako_comm_udp_options_t *o = u->opt;
	const char *ifa = o->multicast_interface[0] != '\0' ? o->multicast_interface : "0.0.0.0";
	if (u->family == AF_INET) {
		struct ip_mreq m;
		memset(&m, 0, sizeof(m));
		struct in_addr ifaddr;
		if (inet_pton(AF_INET, o->multicast_group, &m.imr_multiaddr) != 1 ||
		    inet_pton(AF_INET, ifa, &ifaddr) != 1) {
			return hako_error_set(err, HAKO_EINVAL, u->cfg->path, 0, 0,
			                      "multicast group %s / interface %s: not IPv4",
			                      o->multicast_group, ifa);
		}
		m.imr_interface = ifaddr;
		if (setsockopt(u->fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)) != 0) {
			return hako_error_set(err, HAKO_EIO, u->cfg->path, 0, 0,
			                      "cannot join multicast group %s on %s: %s",
			                      o->multicast_group, ifa, strerror(errno));
		}
		if (ifaddr.s_addr != htonl(INADDR_ANY) &&
		    setsockopt(u->fd, IPPROTO_IP, IP_MULTICAST_IF, &ifaddr, sizeof(ifaddr)) != 0) {
			return hako_error_set(err, HAKO_EIO, u->cfg->path, 0, 0,
			                      "multicast interface %s: %s", ifa, strerror(errno));
		}
		sockopt(u->fd, IPPROTO_IP, IP_MULTICAST_TTL, (int)o->multicast_ttl);
		sockopt(u->fd, IPPROTO_IP, IP_MULTICAST_LOOP, 1);
		return 0;
	}
	struct ipv6_mreq m;
	memset(&m, 0, sizeof(m));
	if (inet_pton(AF_INET6, o->multicast_group, &m.ipv6mr_multiaddr) != 1) {
		return hako_error_set(err, HAKO_EINVAL, u->cfg->path, 0, 0,
		                      "multicast group %s: not IPv6", o->multicast_group);
	}
	m.ipv6mr_interface = 0; /* the kernel's choice: an IPv6 interface is named, not addressed */
	if (setsockopt(u->fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof(m)) != 0) {
		return hako_error_set(err, HAKO_EIO, u->cfg->path, 0, 0,
		                      "cannot join multicast group %s: %s", o->multicast_group,
		                      strerror(errno));
	}
	sockopt(u->fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, (int)o->multicast_ttl);
	sockopt(u->fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 1);
	return 0;
}

static void udp_free(udp_comm_t *u)
{
	if (u->fd >= 0) {
		close(u->fd);
	}
	pthread_mutex_destroy(&u->lock);
	free(u->rx);
	free(u);
}

static int udp_open(const hakoi_comm_ctx_t *ctx, void **impl, hako_error_t *err)
{
	const hako_comm_config_t *cfg = ctx->cfg;
	if (ctx->loop == NULL) {
		return hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0, "udp: no I/O loop");
	}
	udp_comm_t *u = calloc(1, sizeof(*u));
	if (u == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
	}
	u->ctx = *ctx;
	u->cfg = cfg;
	u->opt = cfg->opts;
	u->loop = ctx->loop;
	u->fd = -1;
	pthread_mutex_init(&u->lock, NULL);
	int r = 0;
	struct sockaddr_storage local;
	socklen_t local_len = 0;
	char a[80];
	if (cfg->remote.present) {
		if (hakoi_sockaddr(&cfg->remote, &u->remote, &u->remote_len) != 0) {
			r = hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0,
			                   "remote address %s is not valid", cfg->remote.address);
			goto fail;
		}
		u->has_remote = 1;
		u->family = u->remote.ss_family;
	}
	if (cfg->local.present) {
		if (hakoi_sockaddr(&cfg->local, &local, &local_len) != 0) {
			r = hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0,
			                   "local address %s is not valid", cfg->local.address);
			goto fail;
		}
		u->family = local.ss_family;
	}
	if (u->family == 0) {
		r = hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0,
		                   "udp needs a local or a remote address");
		goto fail;
	}
	u->rx = malloc(UDP_RX_BUF);
	u->fd = socket(u->family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (u->rx == NULL || u->fd < 0) {
		r = hako_error_set(err, u->rx == NULL ? HAKO_ENOMEM : HAKO_EIO, cfg->path, 0, 0,
		                   "cannot create the udp socket: %s", strerror(errno));
		goto fail;
	}
	if (u->opt->reuse_address) {
		sockopt(u->fd, SOL_SOCKET, SO_REUSEADDR, 1);
	}
	/* Hakoniwa's buffer_size default (8192) holds one or two PDUs: a burst on loopback
	 * would be dropped by the kernel before the loop reads. Ask for at least 4 MiB to
	 * receive (the kernel caps it at net.core.rmem_max; memory is used only when a burst
	 * queues) and 256 KiB to send (room for a few maximal datagrams). */
	uint32_t bs = u->opt->buffer_size;
	sockopt(u->fd, SOL_SOCKET, SO_RCVBUF, (int)(bs > UDP_RCVBUF_MIN ? bs : UDP_RCVBUF_MIN));
	sockopt(u->fd, SOL_SOCKET, SO_SNDBUF, (int)(bs > UDP_SNDBUF_MIN ? bs : UDP_SNDBUF_MIN));
	if (u->opt->broadcast && sockopt(u->fd, SOL_SOCKET, SO_BROADCAST, 1) != 0) {
		r = hako_error_set(err, HAKO_EIO, cfg->path, 0, 0, "SO_BROADCAST: %s",
		                   strerror(errno));
		goto fail;
	}
	if (cfg->local.present) {
		if (bind(u->fd, (struct sockaddr *)&local, local_len) != 0) {
			int e = errno;
			r = hako_error_set(
			    err, e == EADDRINUSE ? HAKO_EBUSY : HAKO_EIO, cfg->path, 0, 0,
			    "cannot bind udp socket to %s: %s",
			    hakoi_sockaddr_str((struct sockaddr *)&local, a, sizeof(a)),
			    strerror(e));
			goto fail;
		}
		struct sockaddr_storage b;
		socklen_t bl = sizeof(b);
		if (getsockname(u->fd, (struct sockaddr *)&b, &bl) == 0) {
			u->port =
			    ntohs(b.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&b)->sin6_port
			                                  : ((struct sockaddr_in *)&b)->sin_port);
		}
	}
	if (u->opt->multicast_enabled && (r = join_group(u, err)) != 0) {
		goto fail;
	}
	*impl = u;
	return 0;
fail:
	udp_free(u);
	return r;
}

static int udp_start(void *impl, hako_domain_t *dom, hako_error_t *err)
{
	(void)dom;
	udp_comm_t *u = impl;
	if (u->started) {
		return hako_error_set(err, HAKO_ESTATE, u->cfg->path, 0, 0, "already started");
	}
	if (hakoi_loop_hold(u->loop) != 0) {
		return hako_error_set(err, HAKO_EIO, u->cfg->path, 0, 0,
		                      "cannot start the I/O loop's thread");
	}
	hakoi_loop_call(u->loop, udp_attach, u);
	if (u->attach_err != 0) {
		hakoi_loop_release(u->loop);
		return hako_error_set(err, u->attach_err, u->cfg->path, 0, 0,
		                      "cannot serve the udp comm: %s",
		                      hako_strerror(u->attach_err));
	}
	u->started = 1;
	return 0;
}

static void udp_stop(void *impl)
{
	udp_comm_t *u = impl;
	if (!u->started) {
		return;
	}
	hakoi_loop_call(u->loop, udp_detach, u);
	u->started = 0;
	hakoi_loop_release(u->loop);
}

static void udp_close(void *impl)
{
	udp_comm_t *u = impl;
	if (u == NULL) {
		return;
	}
	udp_stop(u);
	udp_free(u);
}

static int udp_send(void *impl, const hako_pdu_key_t *key, const void *data, size_t len)
{
	udp_comm_t *u = impl;
	hakoi_ep_counters_t *ctr = u->ctx.ctr;
	struct sockaddr_storage to;
	socklen_t to_len;
	if (u->has_remote) {
		to = u->remote;
		to_len = u->remote_len;
	} else {
		pthread_mutex_lock(&u->lock);
		int have = u->has_last;
		to = u->last;
		to_len = u->last_len;
		pthread_mutex_unlock(&u->lock);
		if (!have) {
			hakoi_count(&ctr->send_dropped, 1);
			return HAKO_ENOTCONN;
		}
	}
	hako_frame_version_t v = (hako_frame_version_t)u->cfg->raw_version;
	size_t limit = to.ss_family == AF_INET6 ? UDP_MAX_V6 : UDP_MAX_V4;
	size_t n = len <= UINT32_MAX ? hako_frame_size(v, key->robot, (uint32_t)len) : 0;
	if (len > u->cfg->max_body_bytes || n == 0 || n > limit) {
		hakoi_count(&ctr->send_dropped, 1);
		if (!atomic_exchange(&u->toobig_logged, 1)) {
			HAKO_WARN("endpoint '%s': a PDU of %s/%d (%zu bytes) does not fit a udp "
			          "datagram (at most %zu bytes with the frame header) or "
			          "max_body_bytes %u: not sent (logged once)",
			          u->ctx.ep_name, key->robot, (int)key->channel_id, len, limit,
			          u->cfg->max_body_bytes);
		}
		return HAKO_ETOOBIG;
	}
	int r = 0;
	hakoi_frame_buf_t *f = hakoi_frame_buf_new(v, key, data, len, 0, &r);
	if (f == NULL) {
		hakoi_count(&ctr->send_dropped, 1);
		return r;
	}
	ssize_t w;
	do {
		w = sendto(u->fd, f->data, f->len, MSG_DONTWAIT | MSG_NOSIGNAL,
		           (struct sockaddr *)&to, to_len);
	} while (w < 0 && errno == EINTR);
	int e = errno;
	hakoi_frame_buf_unref(f);
	if (w < 0) {
		hakoi_count(&ctr->send_dropped, 1);
		if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS) {
			return HAKO_EAGAIN;
		}
		if (!atomic_exchange(&u->senderr_logged, 1)) {
			char a[80];
			HAKO_WARN("endpoint '%s': udp send to %s: %s (logged once)", u->ctx.ep_name,
			          hakoi_sockaddr_str((struct sockaddr *)&to, a, sizeof(a)),
			          strerror(e));
		}
		return e == EMSGSIZE ? HAKO_ETOOBIG : HAKO_EIO;
	}
	hakoi_count(&ctr->frames_out, 1);
	hakoi_count(&ctr->bytes_out, len);
	return 0;
}

static uint16_t udp_local_port(void *impl)
{
	return ((udp_comm_t *)impl)->port;
}

/* ---- the comm file ---- */

typedef hako_comm_udp_options_t udp_opts_t;

static void udp_defaults(hako_comm_config_t *cc)
{
	*(udp_opts_t *)cc->opts = (udp_opts_t){.buffer_size = 8192,
	                                       .timeout_ms = 1000,
	                                       .blocking = 1,
	                                       .reuse_address = 1,
	                                       .multicast_interface = "0.0.0.0",
	                                       .multicast_ttl = 1};
}

static int is_multicast(const char *addr)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, addr, &a4) == 1) {
		return (ntohl(a4.s_addr) >> 28) == 0xe;
	}
	return inet_pton(AF_INET6, addr, &a6) == 1 && a6.s6_addr[0] == 0xff;
}

static int check_group(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	int r = hakoi_comm_check_ip(w, v, base, f);
	if (r == 0 && !is_multicast(json_string_value(v))) {
		r = hakoi_walk_fail(w, "\"%s\" is not a multicast address", json_string_value(v));
	}
	return r;
}

static int check_multicast(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hako_comm_config_t *cc = base;
	const udp_opts_t *o = cc->opts;
	if (o->multicast_enabled && o->multicast_group[0] == '\0') {
		hakoi_walk_push_key(w, "group");
		return hakoi_walk_fail(w, "missing (a multicast address is required when enabled)");
	}
	return 0;
}

/* Receiving needs local, sending needs remote; "in" has no use for remote. */
static int udp_check_addrs(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hako_comm_config_t *cc = base;
	const char *why = cc->direction == HAKO_COMM_IN    ? "direction \"in\""
	                  : cc->direction == HAKO_COMM_OUT ? "direction \"out\""
	                                                   : "direction \"inout\"";
	return hakoi_comm_check_addrs(w, cc, cc->direction == HAKO_COMM_OUT ? "remote" : "local",
	                              cc->direction == HAKO_COMM_IN ? "remote" : NULL, why);
}

static const hakoi_field_t udp_multicast_fields[] = {
    HAKOI_COMM_BOOL("enabled", udp_opts_t, multicast_enabled),
    {.key = "group",
     .kind = HAKOI_K_STRING,
     HAKOI_COMM_AT(udp_opts_t, multicast_group),
     .check = check_group},
    {.key = "interface",
     .kind = HAKOI_K_STRING,
     HAKOI_COMM_AT(udp_opts_t, multicast_interface),
     .check = hakoi_comm_check_ip},
    HAKOI_COMM_INT("ttl", udp_opts_t, multicast_ttl, 0, 255),
    HAKOI_CHECK(check_multicast),
    HAKOI_END,
};

static const hakoi_field_t udp_option_fields[] = {
    HAKOI_COMM_INT("buffer_size", udp_opts_t, buffer_size, 1, HAKOI_COMM_MAX_BUF),
    HAKOI_COMM_INT("timeout_ms", udp_opts_t, timeout_ms, 0, HAKOI_COMM_MAX_MS),
    HAKOI_COMM_BOOL("blocking", udp_opts_t, blocking),
    HAKOI_COMM_BOOL("reuse_address", udp_opts_t, reuse_address),
    HAKOI_COMM_BOOL("broadcast", udp_opts_t, broadcast),
    HAKOI_COMM_OBJECT("multicast", 0, udp_multicast_fields),
    HAKOI_COMM_NET_OPTIONS,
    HAKOI_END,
};

static const hakoi_field_t udp_fields[] = {
    HAKOI_COMM_COMMON_FIELDS,
    HAKOI_COMM_RESOLVER_FIELD, /* before the addresses: their node names need its map */
    HAKOI_COMM_ADDR_FIELD("local", local, hakoi_comm_ip_local_fields),
    HAKOI_COMM_ADDR_FIELD("remote", remote, hakoi_comm_ip_remote_fields),
    HAKOI_CHECK(udp_check_addrs),
    HAKOI_COMM_OBJECT("options", 0, udp_option_fields),
    HAKOI_END,
};

const hako_comm_udp_options_t *hako_comm_udp_options(const hako_comm_config_t *cc)
{
	return cc != NULL && cc->protocol == HAKO_COMM_UDP ? cc->opts : NULL;
}

const hakoi_comm_t hakoi_comm_udp = {
    .name = "udp",
    .protocol = HAKO_COMM_UDP,
    .uses_loop = 1,
    .opts_size = sizeof(udp_opts_t),
    .defaults = udp_defaults,
    .fields = udp_fields,
    .open = udp_open,
    .start = udp_start,
    .stop = udp_stop,
    .close = udp_close,
    .send = udp_send,
    .local_port = udp_local_port,
};
