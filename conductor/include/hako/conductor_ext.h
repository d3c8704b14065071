/* Extensions of a conductor node (libhako_conductor): modules above the conductor that ride
 * its control plane. The conductor owns time and the lifecycle of the federation; an extension
 * (RD-Full, hako/rd_full.h, is one) adds messages of its own and reacts to the federation's
 * events through the ops table below, without the conductor knowing what the messages mean.
 * See docs/conductor.md, "Extensions".
 *
 * Threads. Every op but wants_tick and before_publish runs on the node's main thread (the one
 * that owns the control socket), one at a time, so an extension needs no lock for the state
 * only those ops touch. wants_tick runs on the watcher thread; before_publish on either, under
 * the node's send lock; state they share with the main thread needs the extension's own lock,
 * taken after the send lock (never call a send while holding it).
 *
 * Messages. An extension message is one frame of the conductor's wire (kind EXT: the
 * extension's id, a result code and a body of at most HAKO_CONDUCTOR_EXT_BODY_MAX bytes), with
 * an optional second part (the payload, at most the extension's payload_max bytes). It is
 * authenticated like every conductor message: a client's messages speak for that client only;
 * a tool (hako_conductor_session_open, a connection with a node's key that names no node)
 * speaks to the server only, and the server's extension answers it with
 * hako_conductor_ext_reply. Bodies are the extension's to check: they come from the network.
 */
#ifndef HAKO_CONDUCTOR_EXT_H
#define HAKO_CONDUCTOR_EXT_H

#include <stddef.h>
#include <stdint.h>

#include "hako/api.h"
#include "hako/conductor.h"
#include "hako/domain.h"
#include "hako/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_CONDUCTOR_EXT_BODY_MAX    256u        /* an extension message's body, bytes */
#define HAKO_CONDUCTOR_EXT_PAYLOAD_MAX (16u << 20) /* its second part, bytes */
#define HAKO_CONDUCTOR_EXT_MAX         8           /* extensions per node */

/* A received extension message. */
typedef struct hako_conductor_ext_msg {
	uint16_t ext;     /* the extension's id */
	int32_t result;   /* 0; or the conductor's refusal (HAKO_ENOTSUP: no such extension
	                     there), the body then a NUL-terminated reason */
	const char *peer; /* the sender's node id; NULL: a tool (server only) */
	const void *body;
	size_t len;
	const void *payload; /* the second part; NULL when there is none */
	size_t payload_len;
	const void *reply_to; /* for hako_conductor_ext_reply; the conductor's */
} hako_conductor_ext_msg_t;

typedef struct hako_conductor_ext_ops {
	const char *name;   /* in log lines: "rd-full" */
	uint16_t id;        /* the tag of its messages on the wire, 1..65535: one per extension */
	size_t payload_max; /* the largest second part it takes (0: none) */
	/* Node start, after the node's sockets and proxies, before its threads: set *state up
	 * (it is passed to every other op). Non-zero (with err set) fails the start. */
	int (*open)(hako_conductor_node_t *node, void **state, hako_error_t *err);
	/* Node stop, after its threads ended and before its sockets close. */
	void (*close)(void *state);
	/* Server: client `peer` joined (or joined again after a loss or a restart). Messages
	 * sent to it from here on reach it after its join reply. */
	void (*joined)(void *state, const char *peer);
	/* A message for this extension (m->ext == id). */
	void (*on_message)(void *state, const hako_conductor_ext_msg_t *m);
	/* Every round of the main thread: at least every 100 ms, and at once after wants_tick
	 * said so or a message came. */
	void (*tick)(void *state);
	/* A joined peer's world time message (also the heartbeats that repeat one). */
	void (*peer_time)(void *state, const char *peer, hako_time_t world);
	/* Server: client `peer` timed out (peer_timeout_ms without a message). */
	void (*peer_lost)(void *state, const char *peer);
	/* Under the send lock, after the node read its world time and before it sends it (any
	 * thread): what hako_conductor_ext_send_ordered sends from here reaches the server before
	 * that time and every later one. NULL: nothing to send. */
	void (*before_publish)(void *state);
	/* Watcher thread, when the domain changed: non-zero to have tick run now (a member of the
	 * extension's with an event to acknowledge). NULL: never. */
	int (*wants_tick)(void *state);
} hako_conductor_ext_ops_t;

/* hako_conductor_node_start with extensions (at most HAKO_CONDUCTOR_EXT_MAX, distinct ids):
 * each one's open runs before the node's threads start, in order; a failing one fails the
 * start (the ones opened are closed). */
HAKO_API int hako_conductor_node_start_ext(const hako_conductor_config_t *cfg, hako_domain_t *dom,
                                           const hako_conductor_ext_ops_t *const *exts, size_t next,
                                           hako_conductor_node_t **out, hako_error_t *err);

/* What an extension reads of its node (valid from open until close). */
HAKO_API const hako_conductor_config_t *
hako_conductor_node_config(const hako_conductor_node_t *node);
HAKO_API hako_domain_t *hako_conductor_node_domain(const hako_conductor_node_t *node);

/* Main thread: send to `peer` (server: a client's node id; client: NULL or the server's). Never
 * blocks; a peer that cannot take it misses it, so an extension's protocol retries or
 * acknowledges. 0; HAKO_ESTATE: the peer has not joined (server) or this node has not joined
 * (client); HAKO_EINVAL: too long, unknown peer; HAKO_EIO: the socket refused it. */
HAKO_API int hako_conductor_ext_send(hako_conductor_node_t *node, uint16_t ext, const char *peer,
                                     const void *body, size_t len, const void *payload,
                                     size_t payload_len);
/* Client, from before_publish only: send to the server on the time path, so that it arrives
 * before the world time this node is about to send (and every later one). */
HAKO_API int hako_conductor_ext_send_ordered(hako_conductor_node_t *node, uint16_t ext,
                                             const void *body, size_t len, const void *payload,
                                             size_t payload_len);
/* Server, from on_message: answer the sender of m (a tool or a node). */
HAKO_API int hako_conductor_ext_reply(hako_conductor_node_t *node,
                                      const hako_conductor_ext_msg_t *m, const void *body,
                                      size_t len);

/* A tool's connection to a federation's server (any node's conductor file names it), with the
 * key of the node whose file it is: it speaks to the server's extensions. One thread at a time
 * per session. */
typedef struct hako_conductor_session hako_conductor_session_t;
HAKO_API int hako_conductor_session_open(const hako_conductor_config_t *cfg,
                                         hako_conductor_session_t **out, hako_error_t *err);
HAKO_API const char *hako_conductor_session_address(const hako_conductor_session_t *s);
HAKO_API int hako_conductor_session_send(hako_conductor_session_t *s, uint16_t ext,
                                         const void *body, size_t len);
/* The next extension message from the server, waiting at most timeout_ms (0: what has come).
 * 0 with *m filled (its body valid until the next call); HAKO_ETIMEDOUT. Frames that are not
 * well-formed extension messages are skipped. */
HAKO_API int hako_conductor_session_recv(hako_conductor_session_t *s, int timeout_ms,
                                         hako_conductor_ext_msg_t *m);
HAKO_API void hako_conductor_session_close(hako_conductor_session_t *s);

#ifdef __cplusplus
}
#endif
#endif
