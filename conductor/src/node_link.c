/* A conductor node's time links (link.h): the server listens on its time address and takes a
 * link from each client; a client connects to it, again after a link ended (100 ms, doubling
 * to 1 s, as ZeroMQ's reconnects). The main thread reads them (hakoi_dispatch, as a ZeroMQ
 * frame); both threads write them under send_lock (hakoi_publish_time). While a client's link
 * is down it sends its times on ZeroMQ as before; the server's times reach a client on its
 * link only (the link is up before the client's join is answered, in practice). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "conductor_internal.h"
#include "hako/log.h"

#define LINK_RETRY_MIN    100000  /* us */
#define LINK_RETRY_MAX    1000000 /* us */
#define LINK_HANDSHAKE    2000000 /* us: a link not up by then is closed */
#define LINK_SERVER_EXTRA 8       /* server: slots beyond two a client (hand-shakes, restarts) */

static int server_of(const hako_conductor_node_t *n)
{
	return n->cfg.role == HAKO_CONDUCTOR_SERVER;
}

/* Server: the static secret of a client by its id. */
static int client_key(void *ctx, const char *id, uint8_t *statik)
{
	hako_conductor_node_t *n = ctx;
	if (hakoi_peer_by_id(n, id) == NULL) {
		return -1;
	}
	if (!n->auth.on) {
		memset(statik, 0, HAKOI_LINK_KEY);
		return 0;
	}
	for (size_t i = 0; i < n->auth.nkeys; i++) {
		if (strcmp(n->auth.keys[i].id, id) == 0) {
			return hakoi_link_static(n->auth.secret_key, n->auth.keys[i].key, statik);
		}
	}
	return -1;
}

int hakoi_links_open(hako_conductor_node_t *n, hako_error_t *err)
{
	const hako_conductor_config_t *c = &n->cfg;
	n->listen_fd = -1;
	n->nlinks = server_of(n) ? 2 * n->npeers + LINK_SERVER_EXTRA : 1;
	n->links = calloc(n->nlinks, sizeof(*n->links));
	if (n->links == NULL) {
		n->nlinks = 0;
		return hako_error_set(err, HAKO_ENOMEM, "", 0, 0, "out of memory");
	}
	for (size_t i = 0; i < n->nlinks; i++) {
		hakoi_link_init(&n->links[i], n->ext_payload_max);
	}
	char why[192];
	if (server_of(n)) {
		n->listen_fd = hakoi_link_listen(c->time_address, why, sizeof(why));
		if (n->listen_fd < 0) {
			return hako_error_set(err, HAKO_EIO, c->path, 0, 0,
			                      "cannot listen on %s: %s", c->time_address, why);
		}
		return 0;
	}
	struct sockaddr_storage sa;
	unsigned salen;
	if (hakoi_link_resolve(c->time_address, 0, &sa, &salen, why, sizeof(why)) != 0) {
		return hako_error_set(err, HAKO_ECONFIG, c->path, 0, 0, "time_address: %s", why);
	}
	uint8_t statik[HAKOI_LINK_KEY] = {0};
	uint8_t server_pub[32];
	if (n->auth.on && (zmq_z85_decode(server_pub, n->auth.server_key) == NULL ||
	                   hakoi_link_static(n->auth.secret_key, server_pub, statik) != 0)) {
		return hako_error_set(err, HAKO_ECONFIG, c->path, 0, 0,
		                      "the keys do not make a shared secret with the server's");
	}
	memcpy(n->links[0].statik, statik, sizeof(statik));
	n->link_backoff = LINK_RETRY_MIN;
	n->link_retry_at = 0;
	return 0;
}

void hakoi_links_close(hako_conductor_node_t *n)
{
	for (size_t i = 0; i < n->nlinks; i++) {
		hakoi_link_free(&n->links[i]);
	}
	free(n->links);
	n->links = NULL;
	n->nlinks = 0;
	if (n->listen_fd >= 0) {
		hakoi_link_unlisten(n->listen_fd, n->cfg.time_address);
		n->listen_fd = -1;
	}
}

int hakoi_links_queue(hako_conductor_node_t *n, const void *part1, size_t len1, const void *part2,
                      size_t len2)
{
	int sent = -1;
	for (size_t i = 0; i < n->nlinks; i++) {
		hakoi_link_t *l = &n->links[i];
		if (l->state == HAKOI_LINK_UP &&
		    hakoi_link_queue(l, part1, len1, part2, len2) == 0) {
			sent = 0;
		}
	}
	return server_of(n) ? 0 : sent;
}

void hakoi_links_flush(hako_conductor_node_t *n)
{
	for (size_t i = 0; i < n->nlinks; i++) {
		hakoi_link_t *l = &n->links[i];
		if (l->state == HAKOI_LINK_UP && l->wlen > 0) {
			/* An error ends the link in the main thread, which sees it on the socket.
			 */
			(void)hakoi_link_flush(l);
		}
	}
}

size_t hakoi_links_poll_items(hako_conductor_node_t *n, void *items_v, size_t max)
{
	zmq_pollitem_t *items = items_v;
	size_t k = 0;
	if (n->listen_fd >= 0 && k < max) {
		items[k++] = (zmq_pollitem_t){NULL, n->listen_fd, ZMQ_POLLIN, 0};
	}
	pthread_mutex_lock(&n->send_lock);
	for (size_t i = 0; i < n->nlinks && k < max; i++) {
		hakoi_link_t *l = &n->links[i];
		if (l->fd < 0) {
			continue;
		}
		short ev = l->state == HAKOI_LINK_CONNECTING ? ZMQ_POLLOUT : ZMQ_POLLIN;
		if (l->state == HAKOI_LINK_UP && l->wlen > 0) {
			ev |= ZMQ_POLLOUT;
		}
		items[k++] = (zmq_pollitem_t){NULL, l->fd, ev, 0};
	}
	pthread_mutex_unlock(&n->send_lock);
	return k;
}

static hakoi_link_t *link_of_fd(hako_conductor_node_t *n, int fd)
{
	for (size_t i = 0; i < n->nlinks; i++) {
		if (n->links[i].fd == fd) {
			return &n->links[i];
		}
	}
	return NULL;
}

/* The main thread ends a link (under send_lock: the writers look at it). */
static void end_link(hako_conductor_node_t *n, hakoi_link_t *l, const char *why)
{
	int up = l->state == HAKOI_LINK_UP;
	char peer[64];
	snprintf(peer, sizeof(peer), "%s", server_of(n) ? l->peer : n->peers[0].id);
	pthread_mutex_lock(&n->send_lock);
	hakoi_link_close(l);
	pthread_mutex_unlock(&n->send_lock);
	if (up) {
		HAKO_INFO("conductor %s: the time link with %s ended: %s", n->cfg.node_id,
		          peer[0] != '\0' ? peer : "a peer", why);
	} else if (server_of(n)) {
		/* A refused hand-shake: counted, logged once per peer (or once for strangers). */
		char what[256];
		snprintf(what, sizeof(what), "refused a time link: %s", why);
		hakoi_count_garbage(n, peer[0] != '\0' ? hakoi_peer_by_id(n, peer) : NULL,
		                    peer[0] != '\0' ? peer : "an unknown address", what);
	} else {
		HAKO_DEBUG("conductor %s: time link to %s: %s", n->cfg.node_id, peer, why);
	}
	if (!server_of(n)) {
		n->link_retry_at = hako_now_usec() + n->link_backoff;
		n->link_backoff =
		    n->link_backoff * 2 < LINK_RETRY_MAX ? n->link_backoff * 2 : LINK_RETRY_MAX;
	}
}

/* Read and dispatch what link l has. */
static void serve_link(hako_conductor_node_t *n, hakoi_link_t *l, short revents)
{
	if ((revents & ZMQ_POLLOUT) && l->state == HAKOI_LINK_UP) {
		pthread_mutex_lock(&n->send_lock);
		int r = hakoi_link_flush(l);
		pthread_mutex_unlock(&n->send_lock);
		if (r != 0) {
			end_link(n, l, "cannot write");
			return;
		}
		if (!(revents & (ZMQ_POLLIN | ZMQ_POLLERR))) {
			return;
		}
	}
	for (;;) {
		hakoi_link_frame_t f;
		char why[192] = "";
		pthread_mutex_lock(&n->send_lock);
		int r = hakoi_link_read(l, n->incarnation, client_key, n, &f, why, sizeof(why));
		pthread_mutex_unlock(&n->send_lock);
		if (r == 0) {
			return;
		}
		if (r < 0) {
			end_link(n, l, why);
			return;
		}
		if (r == 2) {
			HAKO_DEBUG("conductor %s: time link with %s up", n->cfg.node_id,
			           server_of(n) ? l->peer : n->peers[0].id);
			if (!server_of(n)) {
				n->link_backoff = LINK_RETRY_MIN;
			}
			/* This node's time at once: a client learns the server's incarnation. */
			pthread_mutex_lock(&n->send_lock);
			n->last_send_at = 0;
			pthread_mutex_unlock(&n->send_lock);
			hakoi_publish_time(n);
			continue;
		}
		char from[HAKOI_ROUTE_MAX];
		snprintf(from, sizeof(from), "%s#t%016llx", l->peer,
		         (unsigned long long)l->peer_incarnation);
		const uint8_t *head = f.part1;
		n->payload = NULL;
		n->payload_len = 0;
		if (f.part2 != NULL && f.len1 > 7 && (head[6] | head[7] << 8) == HAKOI_MSG_EXT &&
		    f.len2 <= n->ext_payload_max) {
			n->payload = f.part2;
			n->payload_len = f.len2;
		}
		hakoi_dispatch(n, server_of(n) ? from : NULL,
		               server_of(n) && n->auth.on ? l->peer : NULL, f.part1, f.len1);
		n->payload = NULL;
		n->payload_len = 0;
		if (l->fd < 0) {
			return;
		}
	}
}

static void accept_links(hako_conductor_node_t *n)
{
	for (;;) {
		int fd = accept4(n->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			return;
		}
		hakoi_link_t *l = NULL;
		for (size_t i = 0; i < n->nlinks && l == NULL; i++) {
			if (n->links[i].state == HAKOI_LINK_NONE) {
				l = &n->links[i];
			}
		}
		if (l == NULL) {
			close(fd); /* every slot taken: hand-shakes time out and free theirs */
			continue;
		}
		pthread_mutex_lock(&n->send_lock);
		hakoi_link_accepted(l, fd);
		pthread_mutex_unlock(&n->send_lock);
	}
}

void hakoi_links_serve(hako_conductor_node_t *n, const void *items_v, size_t count)
{
	const zmq_pollitem_t *items = items_v;
	for (size_t i = 0; i < count; i++) {
		if (items[i].revents == 0) {
			continue;
		}
		if (items[i].fd == n->listen_fd) {
			accept_links(n);
			continue;
		}
		hakoi_link_t *l = link_of_fd(n, items[i].fd);
		if (l != NULL) {
			serve_link(n, l, items[i].revents);
		}
	}
}

void hakoi_links_tick(hako_conductor_node_t *n, hako_time_t now)
{
	for (size_t i = 0; i < n->nlinks; i++) {
		hakoi_link_t *l = &n->links[i];
		if (l->fd >= 0 && l->state != HAKOI_LINK_UP && now - l->since > LINK_HANDSHAKE) {
			end_link(n, l, "no hand-shake in time");
		}
	}
	if (!server_of(n) && n->links[0].fd < 0 && now >= n->link_retry_at) {
		hakoi_link_t *l = &n->links[0];
		uint8_t statik[HAKOI_LINK_KEY];
		memcpy(statik, l->statik, sizeof(statik));
		pthread_mutex_lock(&n->send_lock);
		int r = hakoi_link_connect(l, n->cfg.time_address, statik, n->cfg.node_id,
		                           n->incarnation);
		pthread_mutex_unlock(&n->send_lock);
		if (r != 0) {
			end_link(n, l, "cannot connect");
		}
	}
}
