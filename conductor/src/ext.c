/* The conductor's extension seam (hako/conductor_ext.h): the node calls its extensions' ops at
 * the points of its life they name, carries their messages (wire kind EXT), and lets a tool
 * speak to a server's extensions over a session of its own. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "conductor_internal.h"
#include "hako/log.h"
#include "hakoi/assert.h"

/* ---- the ops, called by the node ---- */

static struct hakoi_ext *ext_of(hako_conductor_node_t *n, uint16_t id)
{
	for (size_t i = 0; i < n->next; i++) {
		if (n->exts[i].opened && n->exts[i].ops->id == id) {
			return &n->exts[i];
		}
	}
	return NULL;
}

int hakoi_ext_open_all(hako_conductor_node_t *n, hako_error_t *err)
{
	for (size_t i = 0; i < n->next; i++) {
		struct hakoi_ext *e = &n->exts[i];
		if (e->ops->open != NULL) {
			int r = e->ops->open(n, &e->state, err);
			if (r != 0) {
				return r; /* the ones opened are closed with the node */
			}
		}
		e->opened = 1;
	}
	return 0;
}

void hakoi_ext_close_all(hako_conductor_node_t *n)
{
	for (size_t i = n->next; i-- > 0;) {
		struct hakoi_ext *e = &n->exts[i];
		if (e->opened && e->ops->close != NULL) {
			e->ops->close(e->state);
		}
		e->opened = 0;
		e->state = NULL;
	}
}

void hakoi_ext_tick(hako_conductor_node_t *n)
{
	for (size_t i = 0; i < n->next; i++) {
		if (n->exts[i].opened && n->exts[i].ops->tick != NULL) {
			n->exts[i].ops->tick(n->exts[i].state);
		}
	}
}

void hakoi_ext_joined(hako_conductor_node_t *n, struct hakoi_peer *p)
{
	for (size_t i = 0; i < n->next; i++) {
		if (n->exts[i].opened && n->exts[i].ops->joined != NULL) {
			n->exts[i].ops->joined(n->exts[i].state, p->id);
		}
	}
}

void hakoi_ext_peer_time(hako_conductor_node_t *n, struct hakoi_peer *p, hako_time_t world)
{
	for (size_t i = 0; i < n->next; i++) {
		if (n->exts[i].opened && n->exts[i].ops->peer_time != NULL) {
			n->exts[i].ops->peer_time(n->exts[i].state, p->id, world);
		}
	}
}

void hakoi_ext_peer_lost(hako_conductor_node_t *n, struct hakoi_peer *p)
{
	for (size_t i = 0; i < n->next; i++) {
		if (n->exts[i].opened && n->exts[i].ops->peer_lost != NULL) {
			n->exts[i].ops->peer_lost(n->exts[i].state, p->id);
		}
	}
}

void hakoi_ext_before_publish(hako_conductor_node_t *n)
{
	HAKO_ASSERT(hakoi_publishing(n));
	for (size_t i = 0; i < n->next; i++) {
		if (n->exts[i].opened && n->exts[i].ops->before_publish != NULL) {
			n->exts[i].ops->before_publish(n->exts[i].state);
		}
	}
}

int hakoi_ext_wants_tick(hako_conductor_node_t *n)
{
	for (size_t i = 0; i < n->next; i++) {
		if (n->exts[i].opened && n->exts[i].ops->wants_tick != NULL &&
		    n->exts[i].ops->wants_tick(n->exts[i].state)) {
			return 1;
		}
	}
	return 0;
}

/* An EXT message to the sender `to` (a ROUTER route, or NULL on a DEALER). */
static void ext_msg(hako_conductor_node_t *n, hakoi_msg_t *m, uint16_t ext, int32_t result,
                    const void *body, size_t len)
{
	hakoi_base_msg(n, m, HAKOI_MSG_EXT);
	m->ext = ext;
	m->result = result;
	m->ext_len = (uint32_t)len;
	if (len > 0) {
		memcpy(m->ext_body, body, len);
	}
}

int hakoi_ext_dispatch(hako_conductor_node_t *n, struct hakoi_peer *p, const char *from,
                       const hakoi_msg_t *m)
{
	HAKO_ASSERT(hakoi_on_main_thread(n));
	struct hakoi_ext *e = ext_of(n, m->ext);
	if (e == NULL) {
		if (p == NULL && from != NULL) {
			char why[HAKO_CONDUCTOR_EXT_BODY_MAX];
			int len = snprintf(why, sizeof(why), "node %s runs no extension %u",
			                   n->cfg.node_id, (unsigned)m->ext);
			hakoi_msg_t r;
			ext_msg(n, &r, m->ext, HAKO_ENOTSUP, why, (size_t)len + 1);
			hakoi_send_msg(n->ctl, from, &r);
			return 0;
		}
		return -1;
	}
	if (e->ops->on_message == NULL) {
		return -1;
	}
	hako_conductor_ext_msg_t x = {
	    .ext = m->ext,
	    .result = m->result,
	    .peer = p != NULL ? p->id : NULL,
	    .body = m->ext_body,
	    .len = m->ext_len,
	    .payload = n->payload,
	    .payload_len = n->payload_len,
	    .reply_to = from,
	};
	e->ops->on_message(e->state, &x);
	return 0;
}

/* ---- what an extension calls ---- */

const hako_conductor_config_t *hako_conductor_node_config(const hako_conductor_node_t *n)
{
	return n != NULL ? &n->cfg : NULL;
}

hako_domain_t *hako_conductor_node_domain(const hako_conductor_node_t *n)
{
	return n != NULL ? n->dom : NULL;
}

static int check_send(const hako_conductor_node_t *n, uint16_t ext, size_t len, const void *payload,
                      size_t payload_len)
{
	if (n == NULL || ext == 0 || len > HAKO_CONDUCTOR_EXT_BODY_MAX ||
	    (payload != NULL && payload_len > HAKO_CONDUCTOR_EXT_PAYLOAD_MAX)) {
		return HAKO_EINVAL;
	}
	return 0;
}

int hako_conductor_ext_send(hako_conductor_node_t *n, uint16_t ext, const char *peer,
                            const void *body, size_t len, const void *payload, size_t payload_len)
{
	int r = check_send(n, ext, len, payload, payload_len);
	if (r != 0) {
		return r;
	}
	/* The control socket is the main thread's (an extension's open and close run before and
	 * after the threads). */
	HAKO_ASSERT_MSG(hakoi_on_main_thread(n) || !n->threads,
	                "extension %u: a send off the node's main thread", (unsigned)ext);
	struct hakoi_peer *p;
	if (n->cfg.role == HAKO_CONDUCTOR_CLIENT) {
		p = &n->peers[0];
		if (peer != NULL && strcmp(peer, p->id) != 0) {
			return HAKO_EINVAL;
		}
	} else if (peer == NULL || (p = hakoi_peer_by_id(n, peer)) == NULL) {
		return HAKO_EINVAL;
	}
	if (!p->joined) {
		return HAKO_ESTATE;
	}
	hakoi_msg_t m;
	ext_msg(n, &m, ext, 0, body, len);
	/* A zero-length payload is still a second part: the receiver tells it from none. */
	return hakoi_send_ctl2(n, p, &m, payload, payload != NULL ? payload_len : 0) == 0
	           ? 0
	           : HAKO_EIO;
}

int hako_conductor_ext_send_ordered(hako_conductor_node_t *n, uint16_t ext, const void *body,
                                    size_t len, const void *payload, size_t payload_len)
{
	int r = check_send(n, ext, len, payload, payload_len);
	if (r != 0) {
		return r;
	}
	if (n->cfg.role != HAKO_CONDUCTOR_CLIENT) {
		return HAKO_EINVAL;
	}
	/* Only from before_publish: the time socket is shared under the send lock, and the
	 * order promised is the one of that publish. */
	HAKO_ASSERT_MSG(hakoi_publishing(n), "extension %u: an ordered send outside before_publish",
	                (unsigned)ext);
	hakoi_msg_t m;
	ext_msg(n, &m, ext, 0, body, len);
	/* On the time link when it is up (written with the time that follows), else on the
	 * ZeroMQ socket the times then take: either way before that time. */
	uint8_t buf[HAKOI_WIRE_FRAME_MAX];
	size_t flen = hakoi_wire_encode(&m, buf);
	if (hakoi_links_queue(n, buf, flen, payload, payload != NULL ? payload_len : 0) == 0) {
		return 0;
	}
	return hakoi_send_msg2(n->tout, NULL, &m, payload, payload != NULL ? payload_len : 0) == 0
	           ? 0
	           : HAKO_EIO;
}

int hako_conductor_ext_reply(hako_conductor_node_t *n, const hako_conductor_ext_msg_t *to,
                             const void *body, size_t len)
{
	if (to == NULL || to->reply_to == NULL) {
		return HAKO_EINVAL;
	}
	int r = check_send(n, to->ext, len, NULL, 0);
	if (r != 0) {
		return r;
	}
	if (n->cfg.role != HAKO_CONDUCTOR_SERVER) {
		return HAKO_EINVAL;
	}
	HAKO_ASSERT(hakoi_on_main_thread(n));
	hakoi_msg_t m;
	ext_msg(n, &m, to->ext, 0, body, len);
	return hakoi_send_msg(n->ctl, to->reply_to, &m) == 0 ? 0 : HAKO_EIO;
}

/* ---- a tool's session ---- */

struct hako_conductor_session {
	void *ctx;
	void *s;
	char address[HAKO_CONDUCTOR_ADDR_MAX];
	hakoi_msg_t in;
};

void hako_conductor_session_close(hako_conductor_session_t *s)
{
	if (s == NULL) {
		return;
	}
	if (s->s != NULL) {
		zmq_close(s->s);
	}
	if (s->ctx != NULL) {
		zmq_ctx_term(s->ctx);
	}
	free(s);
}

int hako_conductor_session_open(const hako_conductor_config_t *cfg, hako_conductor_session_t **out,
                                hako_error_t *err)
{
	hako_error_clear(err);
	if (out != NULL) {
		*out = NULL;
	}
	if (cfg == NULL || out == NULL) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0, "no config or result");
	}
	hako_conductor_session_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, "", 0, 0, "out of memory");
	}
	snprintf(s->address, sizeof(s->address), "%s", cfg->control_address);
	s->ctx = zmq_ctx_new();
	s->s = s->ctx != NULL ? zmq_socket(s->ctx, ZMQ_DEALER) : NULL;
	if (s->s == NULL) {
		hako_conductor_session_close(s);
		return hako_error_set(err, HAKO_ENOMEM, "", 0, 0, "cannot make a ZeroMQ socket");
	}
	/* "#..." is nobody's node id: the server answers it as a tool. The id must be unique
	 * among every process that reaches the server: pids repeat across machines (and pid
	 * namespaces: every node's first process is pid 5 or so), and the server's ROUTER drops
	 * a second peer that comes with an id in use. So the node id and the clock too. */
	static _Atomic unsigned next;
	char id[128];
	snprintf(id, sizeof(id), "#tool-%.24s-%d-%llx-%u", cfg->node_id, (int)getpid(),
	         (unsigned long long)hako_now_usec(), atomic_fetch_add(&next, 1));
	int linger = 0;
	int64_t max = 4096;
	zmq_setsockopt(s->s, ZMQ_ROUTING_ID, id, strlen(id));
	zmq_setsockopt(s->s, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_setsockopt(s->s, ZMQ_MAXMSGSIZE, &max, sizeof(max));
	/* The server takes a tool's messages from the holders of a node's key only: this
	 * node's. */
	hakoi_auth_t auth;
	int r = hakoi_auth_load(cfg, &auth, err);
	if (r == 0 && hakoi_auth_client_socket(&auth, s->s) != 0) {
		r = hako_error_set(err, HAKO_EIO, cfg->path, 0, 0, "CURVE: %s",
		                   zmq_strerror(errno));
	}
	hakoi_auth_close(&auth);
	if (r == 0 && zmq_connect(s->s, cfg->control_address) != 0) {
		r = hako_error_set(err, HAKO_EIO, cfg->path, 0, 0, "cannot connect to %s: %s",
		                   cfg->control_address, zmq_strerror(errno));
	}
	if (r != 0) {
		hako_conductor_session_close(s);
		return r;
	}
	*out = s;
	return 0;
}

const char *hako_conductor_session_address(const hako_conductor_session_t *s)
{
	return s != NULL ? s->address : "";
}

int hako_conductor_session_send(hako_conductor_session_t *s, uint16_t ext, const void *body,
                                size_t len)
{
	if (s == NULL || ext == 0 || len > HAKO_CONDUCTOR_EXT_BODY_MAX) {
		return HAKO_EINVAL;
	}
	hakoi_msg_t m;
	memset(&m, 0, sizeof(m));
	m.type = HAKOI_MSG_EXT;
	snprintf(m.node, sizeof(m.node), "#tool");
	m.ext = ext;
	m.ext_len = (uint32_t)len;
	if (len > 0) {
		memcpy(m.ext_body, body, len);
	}
	return hakoi_send_msg(s->s, NULL, &m) == 0 ? 0 : HAKO_EIO;
}

int hako_conductor_session_recv(hako_conductor_session_t *s, int timeout_ms,
                                hako_conductor_ext_msg_t *out)
{
	if (s == NULL || out == NULL) {
		return HAKO_EINVAL;
	}
	hako_time_t until = hako_now_usec() + (hako_time_t)timeout_ms * 1000;
	for (;;) {
		uint8_t in[HAKOI_WIRE_FRAME_MAX];
		int len = zmq_recv(s->s, in, sizeof(in), ZMQ_DONTWAIT);
		if (len < 0) {
			hako_time_t left = until - hako_now_usec();
			if (left <= 0) {
				return HAKO_ETIMEDOUT;
			}
			zmq_pollitem_t it = {s->s, 0, ZMQ_POLLIN, 0};
			zmq_poll(&it, 1, (long)(left / 1000) + 1);
			continue;
		}
		char why[160];
		if ((size_t)len > sizeof(in) ||
		    hakoi_wire_decode(in, (size_t)len, &s->in, why, sizeof(why)) != 0 ||
		    s->in.type != HAKOI_MSG_EXT) {
			continue; /* not an extension's answer */
		}
		*out = (hako_conductor_ext_msg_t){
		    .ext = s->in.ext,
		    .result = s->in.result,
		    .peer = s->in.node,
		    .body = s->in.ext_body,
		    .len = s->in.ext_len,
		};
		return 0;
	}
}
