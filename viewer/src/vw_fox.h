/* The Foxglove side of hako-viewer: the Foxglove WebSocket protocol (subprotocol
 * foxglove.websocket.v1, as @foxglove/ws-protocol speaks it) over the server's sampler
 * (docs/viewer.md, "Foxglove"). The server owns the sockets and the checks made before a
 * session opens (Host, Origin, --max-sessions, the token in the URL); this part owns the
 * channels, the sessions' subscriptions and their bounded queues.
 *
 * Runs in the server's one thread: nothing is locked.
 */
#ifndef HAKO_VW_FOX_H
#define HAKO_VW_FOX_H

#include <stddef.h>
#include <stdint.h>

#include "viewer.h"

struct lws;

#define VW_FOX_PROTOCOL "foxglove.websocket.v1"

/* The lines a Foxglove client can make us log, rationed by the server per kind. */
enum { VW_FOX_LOG_TOKEN, VW_FOX_LOG_MESSAGE, VW_FOX_LOG_COMMAND };

typedef struct vw_fox_config {
	vw_sampler_t *sampler; /* borrowed */
	const char *token;     /* what clientPublish needs (borrowed) */
	int rate_hz;           /* the most messages a second per channel and session */
	size_t session_budget; /* bytes a second one session may be sent */
	size_t max_message;    /* bytes a client message may have */
	/* A line a peer made us log (rationed by the caller). */
	void (*log)(void *ctx, int kind, const char *peer, const char *line);
	void *log_ctx;
} vw_fox_config_t;

typedef struct vw_fox vw_fox_t;
typedef struct vw_fox_sess vw_fox_sess_t;

int vw_fox_create(const vw_fox_config_t *cfg, vw_fox_t **out);
void vw_fox_destroy(vw_fox_t *f);
/* A session that passed the server's checks; authorized: its URL had the token. */
int vw_fox_open(vw_fox_t *f, struct lws *wsi, const char *peer, int authorized,
                vw_fox_sess_t **out);
void vw_fox_close(vw_fox_t *f, vw_fox_sess_t *s);
/* A fragment of a client message (LWS_CALLBACK_RECEIVE): -1 closes the session. */
int vw_fox_rx(vw_fox_t *f, vw_fox_sess_t *s, const void *in, size_t len);
/* LWS_CALLBACK_SERVER_WRITEABLE: -1 closes the session. */
int vw_fox_write(vw_fox_t *f, vw_fox_sess_t *s);
/* After a sample (vw_sampler_tick): advertise what appeared, unadvertise what went, queue the
 * time and each subscribed channel that was written since it was last sent. */
void vw_fox_tick(vw_fox_t *f, double dt);
int vw_fox_sessions(const vw_fox_t *f);
vw_fox_stats_t vw_fox_stats(const vw_fox_t *f);

/* ---- pure pieces (unit-tested) ---- */

/* "geometry_msgs/Twist" -> "geometry_msgs/msg/Twist" (the name Foxglove's ros2 decoding and
 * MCAP's ros2 profile use); 0, or -1 if it does not fit or is no pkg/Type. */
int vw_fox_schema_name(const char *type, char *out, size_t cap);
/* Whether a client's schemaName names `type` ("pkg/Type" or "pkg/msg/Type"). */
int vw_fox_same_type(const char *schema_name, const char *type);

#endif
