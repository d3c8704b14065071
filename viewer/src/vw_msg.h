/* What the viewer's two WebSocket protocols (the page's, vw_server.c; Foxglove's,
 * vw_foxglove.c) share about their sessions' traffic: messages encoded once and queued by
 * reference for every session that wants them, a session's one-message slots that a newer
 * message replaces, and a client message assembled from its fragments within a limit.
 *
 * Runs in the server's one thread: nothing is locked.
 */
#ifndef HAKO_VW_MSG_H
#define HAKO_VW_MSG_H

#include <stddef.h>

struct lws;

typedef struct vw_msg {
	int refs;
	int binary;
	size_t len;
	unsigned char buf[]; /* LWS_PRE bytes of headroom, then the payload */
} vw_msg_t;

/* A message of len bytes (copied from data unless NULL), one reference; NULL out of memory. */
vw_msg_t *vw_msg_new(const void *data, size_t len, int binary);
vw_msg_t *vw_msg_ref(vw_msg_t *m); /* m may be NULL */
void vw_msg_unref(vw_msg_t *m);    /* m may be NULL */
/* The payload (after the headroom). */
unsigned char *vw_msg_payload(vw_msg_t *m);

/* Put a reference to m in a session's slot. One a slow client did not take is dropped: 1 then
 * (the caller counts it), else 0. */
int vw_msg_put(vw_msg_t **slot, vw_msg_t *m);

/* m as one WebSocket message on wsi: 0, or -1 if the socket took less (close the session). */
int vw_msg_write(struct lws *wsi, vw_msg_t *m);

/* ---- what a client sends ---- */

#define VW_RX_KEEP 65536u /* a receive buffer larger than this is freed after its message */

typedef struct vw_rx {
	unsigned char *buf; /* NUL-terminated once whole */
	size_t len;
	size_t cap;
	int binary;
} vw_rx_t;

/* A fragment (LWS_CALLBACK_RECEIVE) of at most max bytes in all: 1 the message is whole in
 * rx, 0 more is to come, VW_RX_TOO_BIG (the close reason is set: close the session) or -1 out
 * of memory. */
#define VW_RX_TOO_BIG (-2)
int vw_rx_add(vw_rx_t *rx, struct lws *wsi, const void *in, size_t len, size_t max);
/* After a whole message: empty again, and a large buffer freed. */
void vw_rx_next(vw_rx_t *rx);
void vw_rx_free(vw_rx_t *rx);

#endif
