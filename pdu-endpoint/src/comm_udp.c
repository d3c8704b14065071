/* The udp comm: one frame per datagram, one socket, one receive thread (ep_comm.h).
 *
 * Sends go out directly with sendto() on the non-blocking socket from the caller's thread: a
 * datagram socket has no per-peer queue to bound, so option "blocking" changes nothing and a
 * send never waits (a full socket buffer drops the PDU: HAKO_EAGAIN, counted). timeout_ms is
 * the receive thread's poll timeout; stop wakes the thread at once through an eventfd. */
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
#include "ep_net.h"
#include "hako/log.h"

#define UDP_RX_BUF      65536u /* > the largest UDP payload (65527) */
#define UDP_MAX_V4      65507u
#define UDP_MAX_V6      65527u
#define UDP_RCVBUF_MIN  (4u << 20)
#define UDP_SNDBUF_MIN  (256u << 10)
#define UDP_WARN_SLOTS  16
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
	int fd;
	int wake;
	int family;
	uint16_t port;
	pthread_t thread;
	int thread_on;
	atomic_int stopping;

	struct sockaddr_storage remote;
	socklen_t remote_len;
	int has_remote;

	pthread_mutex_t lock; /* last sender */
	struct sockaddr_storage last;
	socklen_t last_len;
	int has_last;

	atomic_int toobig_logged;
	atomic_int senderr_logged;
	warn_slot_t warn[UDP_WARN_SLOTS]; /* receive thread only */
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
	int r = hako_frame_decode((hako_frame_version_t)u->cfg->raw_version, u->rx, n,
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
		return;
	}
	hako_pdu_key_t key;
	memset(&key, 0, sizeof(key));
	memcpy(key.robot, fr.robot, sizeof(key.robot));
	key.channel_id = fr.channel_id;
	u->ctx.deliver(u->ctx.ep, &key, fr.body, fr.body_len);
}

static void *rx_thread(void *arg)
{
	udp_comm_t *u = arg;
	int timeout = u->cfg->udp.timeout_ms > 0 ? (int)u->cfg->udp.timeout_ms : 1000;
	struct pollfd p[2] = {{.fd = u->fd, .events = POLLIN}, {.fd = u->wake, .events = POLLIN}};
	while (!atomic_load(&u->stopping)) {
		int n = poll(p, 2, timeout);
		if (n < 0 && errno != EINTR) {
			HAKO_WARN("endpoint '%s': udp poll: %s", u->ctx.ep_name, strerror(errno));
			break;
		}
		if (n <= 0) {
			continue;
		}
		if (p[1].revents != 0) {
			hakoi_wake_drain(u->wake);
		}
		/* Drain what is there; bounded so stop is seen under a flood. */
		for (int i = 0; i < 256 && !atomic_load(&u->stopping); i++) {
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
	return NULL;
}

static int sockopt(int fd, int level, int name, int v)
{
	return setsockopt(fd, level, name, &v, sizeof(v));
}

static int join_group(udp_comm_t *u, hako_error_t *err)
{
	const hako_comm_udp_options_t *o = &u->cfg->udp;
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
	if (u->wake >= 0) {
		close(u->wake);
	}
	pthread_mutex_destroy(&u->lock);
	free(u->rx);
	free(u);
}

static int udp_open(const hakoi_comm_ctx_t *ctx, void **impl, hako_error_t *err)
{
	const hako_comm_config_t *cfg = ctx->cfg;
	udp_comm_t *u = calloc(1, sizeof(*u));
	if (u == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
	}
	u->ctx = *ctx;
	u->cfg = cfg;
	u->fd = -1;
	u->wake = -1;
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
	u->wake = hakoi_wake_open();
	u->fd = socket(u->family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (u->rx == NULL || u->wake < 0 || u->fd < 0) {
		r = hako_error_set(err, u->rx == NULL ? HAKO_ENOMEM : HAKO_EIO, cfg->path, 0, 0,
		                   "cannot create the udp socket: %s", strerror(errno));
		goto fail;
	}
	if (cfg->udp.reuse_address) {
		sockopt(u->fd, SOL_SOCKET, SO_REUSEADDR, 1);
	}
	/* Hakoniwa's buffer_size default (8192) holds one or two PDUs: a burst on loopback
	 * would be dropped by the kernel before the thread runs. Ask for at least 4 MiB to
	 * receive (the kernel caps it at net.core.rmem_max; memory is used only when a burst
	 * queues) and 256 KiB to send (room for a few maximal datagrams). */
	uint32_t bs = cfg->udp.buffer_size;
	sockopt(u->fd, SOL_SOCKET, SO_RCVBUF, (int)(bs > UDP_RCVBUF_MIN ? bs : UDP_RCVBUF_MIN));
	sockopt(u->fd, SOL_SOCKET, SO_SNDBUF, (int)(bs > UDP_SNDBUF_MIN ? bs : UDP_SNDBUF_MIN));
	if (cfg->udp.broadcast && sockopt(u->fd, SOL_SOCKET, SO_BROADCAST, 1) != 0) {
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
	if (cfg->udp.multicast_enabled && (r = join_group(u, err)) != 0) {
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
	atomic_store(&u->stopping, 0);
	hakoi_wake_drain(u->wake);
	int e = pthread_create(&u->thread, NULL, rx_thread, u);
	if (e != 0) {
		return hako_error_set(err, HAKO_EIO, u->cfg->path, 0, 0,
		                      "cannot start the udp thread: %s", strerror(e));
	}
	u->thread_on = 1;
	return 0;
}

static void udp_stop(void *impl)
{
	udp_comm_t *u = impl;
	if (!u->thread_on) {
		return;
	}
	atomic_store(&u->stopping, 1);
	hakoi_wake_signal(u->wake);
	pthread_join(u->thread, NULL);
	u->thread_on = 0;
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

const hakoi_comm_ops_t hakoi_comm_udp_ops = {
    .open = udp_open,
    .start = udp_start,
    .stop = udp_stop,
    .close = udp_close,
    .send = udp_send,
    .local_port = udp_local_port,
};
