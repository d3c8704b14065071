/* The time link (link.h): a plain stream socket, its hand-shake and its sealed frames. */
#define _GNU_SOURCE
#include "link.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <zmq.h>

#include "hako/domain.h"

/* What a writer may leave unwritten before frames are dropped (a peer that stopped reading,
 * a partitioned link): times are sent again, and a link this far behind ends at the peer's
 * timeout anyway. */
#define WBUF_SLACK (1u << 20)

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--) {
		v = v << 8 | p[i];
	}
	return v;
}

static int fail(char *why, size_t len, const char *fmt, const char *arg)
{
	if (why != NULL && len > 0) {
		snprintf(why, len, fmt, arg);
	}
	return -1;
}

int hakoi_link_resolve(const char *address, int listener, struct sockaddr_storage *sa,
                       unsigned *salen, char *why, size_t why_len)
{
	memset(sa, 0, sizeof(*sa));
	if (strncmp(address, "ipc://", 6) == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)sa;
		const char *path = address + 6;
		if (path[0] == '\0' || strlen(path) >= sizeof(un->sun_path)) {
			return fail(why, why_len,
			            "%s: no path, or a path too long for a Unix socket", address);
		}
		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, path, strlen(path) + 1);
		*salen = (unsigned)sizeof(*un);
		return 0;
	}
	if (strncmp(address, "tcp://", 6) != 0) {
		return fail(why, why_len, "%s: the time address takes tcp:// or ipc://", address);
	}
	char host[256];
	snprintf(host, sizeof(host), "%s", address + 6);
	char *colon = strrchr(host, ':');
	if (colon == NULL || colon[1] == '\0') {
		return fail(why, why_len, "%s: no port", address);
	}
	*colon = '\0';
	const char *port = colon + 1;
	char *h = host;
	if (h[0] == '[') { /* [::1] */
		h++;
		char *end = strchr(h, ']');
		if (end != NULL) {
			*end = '\0';
		}
	}
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (listener ? AI_PASSIVE : 0);
	int any = listener && (strcmp(h, "*") == 0 || h[0] == '\0');
	if (getaddrinfo(any ? NULL : h, port, &hints, &res) != 0 || res == NULL) {
		return fail(why, why_len, "%s: cannot resolve its host", address);
	}
	memcpy(sa, res->ai_addr, res->ai_addrlen);
	*salen = (unsigned)res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void stream_options(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* fails on ipc: fine */
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
}

int hakoi_link_listen(const char *address, char *why, size_t why_len)
{
	struct sockaddr_storage sa;
	unsigned salen;
	if (hakoi_link_resolve(address, 1, &sa, &salen, why, why_len) != 0) {
		errno = EINVAL;
		return -1;
	}
	int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return fail(why, why_len, "socket: %s", strerror(errno));
	}
	int one = 1;
	if (sa.ss_family == AF_UNIX) {
		unlink(((struct sockaddr_un *)&sa)->sun_path); /* as ZeroMQ's ipc:// does */
	} else {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	}
	if (bind(fd, (struct sockaddr *)&sa, salen) != 0 || listen(fd, 64) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return fail(why, why_len, "%s", strerror(e));
	}
	return fd;
}

void hakoi_link_unlisten(int fd, const char *address)
{
	if (fd < 0) {
		return;
	}
	close(fd);
	if (strncmp(address, "ipc://", 6) == 0) {
		unlink(address + 6);
	}
}

void hakoi_link_init(hakoi_link_t *l, size_t payload_max)
{
	memset(l, 0, sizeof(*l));
	l->fd = -1;
	l->frame_max = HAKOI_LINK_MAC + HAKOI_LINK_INNER + 4096 + payload_max;
}

void hakoi_link_close(hakoi_link_t *l)
{
	if (l->fd >= 0) {
		close(l->fd);
	}
	l->fd = -1;
	l->state = HAKOI_LINK_NONE;
	l->rlen = l->rtake = l->wlen = 0;
	l->n_tx = l->n_rx = 0;
	l->peer_incarnation = 0;
	l->peer[0] = '\0';
	sodium_memzero(l->key_tx, sizeof(l->key_tx));
	sodium_memzero(l->key_rx, sizeof(l->key_rx));
	sodium_memzero(l->eph_sk, sizeof(l->eph_sk));
}

void hakoi_link_free(hakoi_link_t *l)
{
	hakoi_link_close(l);
	sodium_memzero(l->statik, sizeof(l->statik));
	free(l->rbuf);
	free(l->wbuf);
	l->rbuf = l->wbuf = NULL;
	l->rcap = l->wcap = 0;
}

int hakoi_link_static(const char *secret_z85, const uint8_t *peer_public, uint8_t *out)
{
	uint8_t sk[32], shared[32];
	if (sodium_init() < 0 || zmq_z85_decode(sk, secret_z85) == NULL) {
		return -1;
	}
	int r = crypto_scalarmult(shared, sk, peer_public);
	if (r == 0) {
		crypto_generichash(out, HAKOI_LINK_KEY, shared, sizeof(shared),
		                   (const uint8_t *)"hako-link-static", 16);
	}
	sodium_memzero(sk, sizeof(sk));
	sodium_memzero(shared, sizeof(shared));
	return r == 0 ? 0 : -1;
}

int hakoi_link_connect(hakoi_link_t *l, const char *address, const uint8_t *statik,
                       const char *node_id, uint64_t incarnation)
{
	hakoi_link_close(l);
	struct sockaddr_storage sa;
	unsigned salen;
	if (sodium_init() < 0 || hakoi_link_resolve(address, 0, &sa, &salen, NULL, 0) != 0) {
		return -1;
	}
	int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return -1;
	}
	stream_options(fd);
	if (connect(fd, (struct sockaddr *)&sa, salen) != 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	l->fd = fd;
	l->client = 1;
	memcpy(l->statik, statik, HAKOI_LINK_KEY);
	crypto_box_keypair(l->eph_pk, l->eph_sk);
	uint8_t *h = l->hello;
	memset(h, 0, HAKOI_LINK_HELLO_LEN);
	put32(h, HAKOI_LINK_MAGIC);
	put32(h + 4, HAKOI_LINK_VERSION);
	snprintf((char *)h + 8, 64, "%s", node_id);
	put64(h + 72, incarnation);
	memcpy(h + 80, l->eph_pk, 32);
	l->state = HAKOI_LINK_CONNECTING;
	l->since = hako_now_usec();
	return 0;
}

void hakoi_link_accepted(hakoi_link_t *l, int fd)
{
	hakoi_link_close(l);
	stream_options(fd);
	l->fd = fd;
	l->client = 0;
	l->state = HAKOI_LINK_HELLO;
	l->since = hako_now_usec();
}

/* The session from the static secret, both ephemeral keys and the hand-shake's bytes: the
 * WELCOME's MAC and the two directions' keys. */
static int derive(hakoi_link_t *l, const uint8_t *peer_eph, const uint8_t *welcome_head,
                  uint8_t *mac)
{
	uint8_t eph[32], master[32];
	if (crypto_scalarmult(eph, l->eph_sk, peer_eph) != 0) {
		return -1;
	}
	crypto_generichash_state st;
	crypto_generichash_init(&st, l->statik, HAKOI_LINK_KEY, sizeof(master));
	crypto_generichash_update(&st, eph, sizeof(eph));
	crypto_generichash_update(&st, l->hello, HAKOI_LINK_HELLO_LEN);
	crypto_generichash_update(&st, welcome_head, HAKOI_LINK_WELCOME_LEN - 32);
	crypto_generichash_final(&st, master, sizeof(master));
	uint8_t c2s[32], s2c[32];
	crypto_generichash(mac, 32, (const uint8_t *)"welcome", 7, master, sizeof(master));
	crypto_generichash(c2s, 32, (const uint8_t *)"client->server", 14, master, sizeof(master));
	crypto_generichash(s2c, 32, (const uint8_t *)"server->client", 14, master, sizeof(master));
	memcpy(l->key_tx, l->client ? c2s : s2c, 32);
	memcpy(l->key_rx, l->client ? s2c : c2s, 32);
	sodium_memzero(eph, sizeof(eph));
	sodium_memzero(master, sizeof(master));
	sodium_memzero(c2s, sizeof(c2s));
	sodium_memzero(s2c, sizeof(s2c));
	sodium_memzero(l->eph_sk, sizeof(l->eph_sk));
	return 0;
}

static void nonce_of(uint8_t *nonce, uint64_t n)
{
	memset(nonce, 0, crypto_secretbox_NONCEBYTES);
	put64(nonce, n);
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap) {
		return 0;
	}
	size_t c = *cap > 0 ? *cap : 4096;
	while (c < need) {
		c *= 2;
	}
	uint8_t *b = realloc(*buf, c);
	if (b == NULL) {
		return -1;
	}
	*buf = b;
	*cap = c;
	return 0;
}

int hakoi_link_queue(hakoi_link_t *l, const void *part1, size_t len1, const void *part2,
                     size_t len2)
{
	size_t body = HAKOI_LINK_MAC + HAKOI_LINK_INNER + len1 + len2;
	if (l->state != HAKOI_LINK_UP || body > l->frame_max ||
	    l->wlen + 4 + body > l->frame_max + WBUF_SLACK ||
	    grow(&l->wbuf, &l->wcap, l->wlen + 4 + body) != 0) {
		return -1;
	}
	uint8_t *out = l->wbuf + l->wlen;
	uint8_t *inner = out + 4 + HAKOI_LINK_MAC;
	put32(out, (uint32_t)body);
	inner[0] = part2 != NULL ? 1 : 0;
	put32(inner + 1, (uint32_t)len1);
	if (len1 > 0) {
		memcpy(inner + HAKOI_LINK_INNER, part1, len1);
	}
	if (part2 != NULL && len2 > 0) {
		memcpy(inner + HAKOI_LINK_INNER + len1, part2, len2);
	}
	uint8_t nonce[crypto_secretbox_NONCEBYTES];
	nonce_of(nonce, l->n_tx++);
	crypto_secretbox_easy(out + 4, inner, HAKOI_LINK_INNER + len1 + len2, nonce, l->key_tx);
	l->wlen += 4 + body;
	return 0;
}

int hakoi_link_flush(hakoi_link_t *l)
{
	size_t off = 0;
	while (off < l->wlen) {
		ssize_t w = send(l->fd, l->wbuf + off, l->wlen - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR) {
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				break;
			}
			return -1;
		}
		off += (size_t)w;
	}
	if (off > 0) {
		memmove(l->wbuf, l->wbuf + off, l->wlen - off);
		l->wlen -= off;
	}
	return 0;
}

int hakoi_link_parse_inner(const uint8_t *body, size_t len, hakoi_link_frame_t *f)
{
	if (len < HAKOI_LINK_INNER || (body[0] & ~1u) != 0) {
		return -1;
	}
	size_t len1 = get32(body + 1);
	if (len1 > len - HAKOI_LINK_INNER || (!(body[0] & 1) && len1 != len - HAKOI_LINK_INNER)) {
		return -1;
	}
	f->part1 = body + HAKOI_LINK_INNER;
	f->len1 = len1;
	f->part2 = (body[0] & 1) ? body + HAKOI_LINK_INNER + len1 : NULL;
	f->len2 = (body[0] & 1) ? len - HAKOI_LINK_INNER - len1 : 0;
	return 0;
}

/* Write a hand-shake message whole (the first bytes on a fresh connection: the socket buffer
 * takes them), 0 or -1. */
static int write_whole(int fd, const uint8_t *p, size_t len)
{
	ssize_t w;
	do {
		w = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (w < 0 && errno == EINTR);
	return w == (ssize_t)len ? 0 : -1;
}

/* Read what the socket has into rbuf (up to need bytes in all): 1 if need bytes are there, 0
 * if not yet, -1 at the end of the stream or an error. */
static int fill(hakoi_link_t *l, size_t need, char *why, size_t why_len)
{
	if (grow(&l->rbuf, &l->rcap, need) != 0) {
		return fail(why, why_len, "%s", "out of memory");
	}
	while (l->rlen < need) {
		/* Read ahead as far as the buffer goes: one call for many small frames. */
		ssize_t r = recv(l->fd, l->rbuf + l->rlen, l->rcap - l->rlen, MSG_DONTWAIT);
		if (r == 0) {
			return fail(why, why_len, "%s", "closed by the peer");
		}
		if (r < 0) {
			if (errno == EINTR) {
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				return 0;
			}
			return fail(why, why_len, "%s", strerror(errno));
		}
		l->rlen += (size_t)r;
	}
	return 1;
}

static void take(hakoi_link_t *l, size_t n)
{
	memmove(l->rbuf, l->rbuf + n, l->rlen - n);
	l->rlen -= n;
}

int hakoi_link_read(hakoi_link_t *l, uint64_t own_incarnation, hakoi_link_key_fn key_fn, void *ctx,
                    hakoi_link_frame_t *f, char *why, size_t why_len)
{
	if (l->rtake > 0) {
		take(l, l->rtake);
		l->rtake = 0;
	}
	if (l->fd < 0) {
		return fail(why, why_len, "%s", "not connected");
	}
	int r;
	switch (l->state) {
	case HAKOI_LINK_NONE: return fail(why, why_len, "%s", "not connected");
	case HAKOI_LINK_CONNECTING: {
		int e = 0;
		socklen_t el = sizeof(e);
		if (getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0 || e != 0) {
			return fail(why, why_len, "connect: %s", strerror(e != 0 ? e : errno));
		}
		if (write_whole(l->fd, l->hello, HAKOI_LINK_HELLO_LEN) != 0) {
			return fail(why, why_len, "%s", "cannot send the hand-shake");
		}
		l->state = HAKOI_LINK_HELLO;
		l->since = hako_now_usec();
		return 0;
	}
	case HAKOI_LINK_HELLO:
		if (l->client) { /* the server's WELCOME */
			if ((r = fill(l, HAKOI_LINK_WELCOME_LEN, why, why_len)) <= 0) {
				return r;
			}
			const uint8_t *w = l->rbuf;
			uint8_t mac[32];
			if (get32(w) != HAKOI_LINK_MAGIC || get32(w + 4) != HAKOI_LINK_VERSION) {
				return fail(why, why_len, "%s",
				            "not a hako time link (magic, version)");
			}
			if (derive(l, w + 16, w, mac) != 0 || sodium_memcmp(mac, w + 48, 32) != 0) {
				return fail(why, why_len, "%s",
				            "the server did not prove the federation's key");
			}
			l->peer_incarnation = get64(w + 8);
			take(l, HAKOI_LINK_WELCOME_LEN);
			/* The first frame, empty, proves this end's key to the server. */
			l->state = HAKOI_LINK_UP;
			if (hakoi_link_queue(l, NULL, 0, NULL, 0) != 0 ||
			    hakoi_link_flush(l) != 0) {
				return fail(why, why_len, "%s", "cannot send the hand-shake");
			}
			l->since = hako_now_usec();
			return 2;
		}
		if ((r = fill(l, HAKOI_LINK_HELLO_LEN, why, why_len)) <= 0) {
			return r;
		}
		{
			const uint8_t *h = l->rbuf;
			char id[64];
			if (get32(h) != HAKOI_LINK_MAGIC || get32(h + 4) != HAKOI_LINK_VERSION ||
			    memchr(h + 8, 0, 64) == NULL) {
				return fail(why, why_len, "%s",
				            "not a hako time link (magic, version)");
			}
			memcpy(id, h + 8, 64);
			if (id[0] == '\0' || key_fn(ctx, id, l->statik) != 0) {
				return fail(why, why_len,
				            "a link from '%.60s', no client of this node", id);
			}
			memcpy(l->peer, id, sizeof(l->peer));
			l->peer_incarnation = get64(h + 72);
			memcpy(l->hello, h, HAKOI_LINK_HELLO_LEN);
			take(l, HAKOI_LINK_HELLO_LEN);
			uint8_t wel[HAKOI_LINK_WELCOME_LEN];
			crypto_box_keypair(l->eph_pk, l->eph_sk);
			put32(wel, HAKOI_LINK_MAGIC);
			put32(wel + 4, HAKOI_LINK_VERSION);
			put64(wel + 8, own_incarnation);
			memcpy(wel + 16, l->eph_pk, 32);
			if (derive(l, l->hello + 80, wel, wel + 48) != 0 ||
			    write_whole(l->fd, wel, sizeof(wel)) != 0) {
				return fail(why, why_len, "%s", "cannot answer the hand-shake");
			}
			l->state = HAKOI_LINK_CONFIRM;
			l->since = hako_now_usec();
		}
		/* The client's first frame may be there already. */
		__attribute__((fallthrough));
	case HAKOI_LINK_CONFIRM:
	case HAKOI_LINK_UP:
		for (;;) {
			if ((r = fill(l, 4, why, why_len)) <= 0) {
				return r;
			}
			size_t body = get32(l->rbuf);
			if (body < HAKOI_LINK_MAC + HAKOI_LINK_INNER || body > l->frame_max) {
				return fail(why, why_len, "%s", "a frame of a length no frame has");
			}
			if ((r = fill(l, 4 + body, why, why_len)) <= 0) {
				return r;
			}
			uint8_t nonce[crypto_secretbox_NONCEBYTES];
			nonce_of(nonce, l->n_rx);
			uint8_t *c = l->rbuf + 4;
			if (crypto_secretbox_open_easy(c, c, body, nonce, l->key_rx) != 0) {
				return fail(
				    why, why_len, "%s",
				    l->state == HAKOI_LINK_CONFIRM
				        ? "the client did not prove the federation's key"
				        : "a frame that does not decrypt (altered or replayed)");
			}
			l->n_rx++;
			if (hakoi_link_parse_inner(c, body - HAKOI_LINK_MAC, f) != 0) {
				return fail(why, why_len, "%s",
				            "a frame whose parts do not add up");
			}
			if (l->state == HAKOI_LINK_CONFIRM) {
				l->state = HAKOI_LINK_UP;
				l->since = hako_now_usec();
				take(l, 4 + body);
				return 2;
			}
			if (f->len1 == 0 && f->part2 == NULL) {
				take(l, 4 + body); /* empty: the hand-shake's, or a keep-alive */
				continue;
			}
			l->rtake = 4 + body;
			return 1;
		}
	}
	return fail(why, why_len, "%s", "bad state");
}
