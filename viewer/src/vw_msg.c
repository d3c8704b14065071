/* See vw_msg.h. */
#include "vw_msg.h"

#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

vw_msg_t *vw_msg_new(const void *data, size_t len, int binary)
{
	vw_msg_t *m = malloc(sizeof(*m) + LWS_PRE + len);
	if (m == NULL) {
		return NULL;
	}
	m->refs = 1;
	m->binary = binary;
	m->len = len;
	if (data != NULL) {
		memcpy(m->buf + LWS_PRE, data, len);
	}
	return m;
}

vw_msg_t *vw_msg_ref(vw_msg_t *m)
{
	if (m != NULL) {
		m->refs++;
	}
	return m;
}

void vw_msg_unref(vw_msg_t *m)
{
	if (m != NULL && --m->refs == 0) {
		free(m);
	}
}

unsigned char *vw_msg_payload(vw_msg_t *m)
{
	return m->buf + LWS_PRE;
}

int vw_msg_put(vw_msg_t **slot, vw_msg_t *m)
{
	int dropped = *slot != NULL;
	vw_msg_unref(*slot);
	*slot = vw_msg_ref(m);
	return dropped;
}

int vw_msg_write(struct lws *wsi, vw_msg_t *m)
{
	int n =
	    lws_write(wsi, m->buf + LWS_PRE, m->len, m->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
	return n < (int)m->len ? -1 : 0;
}

int vw_rx_add(vw_rx_t *rx, struct lws *wsi, const void *in, size_t len, size_t max)
{
	if (lws_is_first_fragment(wsi) && rx->len == 0) {
		rx->binary = lws_frame_is_binary(wsi);
	}
	size_t need = rx->len + len + lws_remaining_packet_payload(wsi);
	if (need > max) {
		static const char why[] = "message too large";
		lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, (unsigned char *)why,
		                 sizeof(why) - 1);
		return VW_RX_TOO_BIG;
	}
	if (need + 1 > rx->cap) {
		unsigned char *p = realloc(rx->buf, need + 1);
		if (p == NULL) {
			return -1;
		}
		rx->buf = p;
		rx->cap = need + 1;
	}
	memcpy(rx->buf + rx->len, in, len);
	rx->len += len;
	if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi) > 0) {
		return 0;
	}
	rx->buf[rx->len] = '\0';
	return 1;
}

void vw_rx_next(vw_rx_t *rx)
{
	rx->len = 0;
	if (rx->cap > VW_RX_KEEP) {
		vw_rx_free(rx);
	}
}

void vw_rx_free(vw_rx_t *rx)
{
	free(rx->buf);
	rx->buf = NULL;
	rx->cap = 0;
	rx->len = 0;
}
