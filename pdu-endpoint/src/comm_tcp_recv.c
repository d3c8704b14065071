/* The tcp comm's receive side (loop thread): a peer's bytes read, framed and delivered, and the
 * receive buffers kept within max_buffered_bytes. See comm_tcp.h for the whole.
 *
 * Receive path. Per peer one buffer read in big chunks; hako_frame_needed frames the stream. The
 * buffer grows as a frame's bytes arrive (doubled when full, never past the announced frame:
 * header + at most max_body_bytes, rounded up to a page), so a peer holds memory for what it
 * sent, not for what its header announced. A protocol error closes that peer (rejected); a
 * frame that stays incomplete with no byte arriving for read_timeout_ms, or that is not whole
 * frame_timeout_ms after its first byte (a trickle does not extend that), drops the peer (an
 * idle peer without a partial frame is kept, once it has sent a frame: comm_tcp_conn.c).
 * Receive buffer policy (memory per peer): RX_CHUNK (128 KiB) at least; a buffer grown for a big
 * frame is kept for the next one as long as it is at most RX_KEEP_MAX (4 MiB), because a freshly
 * allocated big buffer is freshly mapped memory (glibc mmaps allocations above its threshold):
 * ~256 page faults per MiB, which made 1 MiB frames cost several times raw tcp. It goes back to
 * RX_CHUNK after RX_SHRINK_FRAMES frames in a row that all fit in RX_CHUNK, or once the peer has
 * sent nothing for RX_IDLE_MS with no partial frame, or when another peer needs the room under
 * max_buffered_bytes. A buffer above RX_KEEP_MAX (frames larger than 4 MiB) is shrunk right
 * after its frame. So a peer holds at most 4 MiB, or for a bigger frame twice what arrived of it
 * (at most the size of the frame before it while that one's buffer is reused), and 128 KiB once
 * its big frames stop.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "comm_tcp.h"
#include "hako/log.h"

/* ---- receive (loop thread) ---- */

static void handle_frame(tcp_comm_t *c, tcp_peer_t *p, const hako_frame_t *fr)
{
	if (p->frame_ns == 0) {
		/* A peer speaks the protocol: the next limit that strikes is said again. */
		c->quiet_logged = 0;
		c->evict_logged = 0;
	}
	p->frame_ns = p->rx_ns;
	if (fr->request_type != HAKO_FRAME_PDU_DATA) {
		hakoi_count(&c->ctx.ctr->recv_ignored, 1);
		hakoi_frame_log_ignored(c->ctx.ep_name, p->addr, fr);
		return;
	}
	if (c->cfg->direction == HAKO_COMM_OUT) {
		hakoi_count(&c->ctx.ctr->recv_ignored, 1);
		return;
	}
	hako_pdu_key_t key;
	memset(&key, 0, sizeof(key));
	memcpy(key.robot, fr->robot, sizeof(key.robot));
	key.robot[sizeof(key.robot) - 1] = '\0';
	key.channel_id = fr->channel_id;
	c->ctx.deliver(c->ctx.ep, &key, fr->body, fr->body_len);
}

static size_t rx_round(size_t n)
{
	return (n + RX_ROUND - 1) / RX_ROUND * RX_ROUND;
}

/* Release the buffers of the peers but p that hold no partial frame (they allocate RX_CHUNK
 * again on their next bytes): the room under max_buffered_bytes goes to frames in progress. */
static void rx_reclaim(tcp_comm_t *c, const tcp_peer_t *p)
{
	for (size_t i = 0; i < c->npeers; i++) {
		tcp_peer_t *q = c->peers[i];
		if (q != p && q->rcap > RX_CHUNK && q->rlen == 0) {
			c->rx_total -= rx_held(q->rcap);
			free(q->rbuf);
			q->rbuf = NULL;
			q->rcap = 0;
			q->rx_small = 0;
		}
	}
}

/* p's receive buffer := want bytes (keeping its rlen bytes), within max_buffered_bytes over all
 * peers. RX_OK, RX_REJECT (no room: a peer that wants more than the endpoint gives) or RX_LOST
 * (out of memory), with why. */
static int rx_resize(tcp_comm_t *c, tcp_peer_t *p, size_t want, char *why, size_t why_len)
{
	if (rx_held(want) > rx_held(p->rcap)) {
		size_t more = rx_held(want) - rx_held(p->rcap);
		size_t cap = c->cfg->max_buffered_bytes;
		if (c->rx_total + more > cap) {
			rx_reclaim(c, p);
		}
		if (c->rx_total + more > cap) {
			snprintf(why, why_len,
			         "its frame needs a buffer of %zu bytes, more than the other "
			         "peers' frames leave of max_buffered_bytes (%zu of %zu)",
			         want, cap - c->rx_total, cap);
			return RX_REJECT;
		}
	}
	uint8_t *nb = realloc(p->rbuf, want);
	if (nb == NULL) {
		snprintf(why, why_len, "out of memory for a receive buffer of %zu bytes", want);
		return RX_LOST;
	}
	c->rx_total = c->rx_total - rx_held(p->rcap) + rx_held(want);
	p->rbuf = nb;
	p->rcap = want;
	return RX_OK;
}

/* Frame and deliver what the buffer holds; keep the partial rest. RX_REJECT with why. */
static int rx_parse(tcp_comm_t *c, tcp_peer_t *p, char *why, size_t why_len)
{
	size_t pos = 0;
	size_t needed = 0;
	int rc = RX_OK;
	hako_error_t e;
	for (;;) {
		size_t avail = p->rlen - pos;
		needed = 0;
		if (hako_frame_needed(c->ver, p->rbuf + pos, avail, c->cfg->max_body_bytes, &needed,
		                      &e) != 0) {
			snprintf(why, why_len, "%s", e.message);
			rc = RX_REJECT;
			break;
		}
		if (needed == 0 || avail < needed) {
			break;
		}
		hako_frame_t fr;
		if (hako_frame_decode(c->ver, p->rbuf + pos, needed, c->cfg->max_body_bytes, &fr,
		                      &e) != 0) {
			snprintf(why, why_len, "%s", e.message);
			rc = RX_REJECT;
			break;
		}
		handle_frame(c, p, &fr);
		pos += needed;
		p->rx_small = needed <= RX_CHUNK ? p->rx_small + (p->rx_small < UINT32_MAX) : 0;
	}
	if (rc != RX_OK) {
		return rc;
	}
	if (pos > 0) {
		memmove(p->rbuf, p->rbuf + pos, p->rlen - pos);
		p->rlen -= pos;
	}
	p->rneed = needed;
	/* The frame deadline runs from the first bytes of a frame: one that began in this read if
	 * frames ended in it (rx_ns is this read's time). */
	if (p->rlen == 0) {
		p->fstart_ns = 0;
	} else if (pos > 0 || p->fstart_ns == 0) {
		p->fstart_ns = p->rx_ns;
	}
	/* Grow when full, by doubling up to the frame the header announced (bounded by
	 * max_body_bytes): memory follows the bytes that arrived. Shrink per the top comment. */
	size_t want = p->rcap;
	if (needed > p->rcap) {
		if (p->rlen == p->rcap) {
			want = rx_round(needed < p->rcap * 2 ? needed : p->rcap * 2);
		}
	} else if (p->rcap > RX_CHUNK &&
	           (p->rcap > RX_KEEP_MAX || p->rx_small >= RX_SHRINK_FRAMES)) {
		want = needed > RX_CHUNK ? rx_round(needed) : RX_CHUNK;
	}
	if (want > p->rcap) {
		return rx_resize(c, p, want, why, why_len);
	}
	if (want < p->rcap) {
		rx_resize(c, p, want, why, why_len); /* a failed shrink keeps the bigger buffer */
		why[0] = '\0';
	}
	return RX_OK;
}

/* The peer has been quiet for RX_IDLE_MS with nothing partial: give its big buffer back. */
void hakoi_tcp_rx_idle_shrink(tcp_comm_t *c, tcp_peer_t *p)
{
	char why[64]; /* unused (a failed shrink keeps the buffer); room for gcc's truncation check
	               */
	if (p->rcap <= RX_CHUNK || p->rlen > RX_CHUNK) {
		return;
	}
	rx_resize(c, p, RX_CHUNK, why, sizeof(why));
}

int hakoi_tcp_rx_peer(tcp_comm_t *c, tcp_peer_t *p, char *why, size_t why_len)
{
	if (p->rbuf == NULL) {
		int rc = rx_resize(c, p, RX_CHUNK, why, why_len);
		if (rc != RX_OK) {
			return rc;
		}
	}
	for (int i = 0; i < 8; i++) {
		size_t space = p->rcap - p->rlen;
		if (p->rneed > RX_CHUNK && p->rneed > p->rlen && p->rneed - p->rlen < space) {
			/* A big frame: read up to its end only, or the start of the next one would
			 * be moved down (up to a kept buffer's size) after it. */
			space = p->rneed - p->rlen;
		}
		ssize_t r = recv(p->fd, p->rbuf + p->rlen, space, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR) {
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				return RX_OK;
			}
			snprintf(why, why_len, "%s", strerror(errno));
			return RX_LOST;
		}
		if (r == 0) {
			if (p->rlen > 0) {
				snprintf(why, why_len,
				         "end of stream in the middle of a frame (%zu bytes of it)",
				         p->rlen);
				return RX_REJECT;
			}
			return RX_EOF;
		}
		p->rlen += (size_t)r;
		p->rx_ns = now_ns();
		int rc = rx_parse(c, p, why, why_len);
		if (rc != RX_OK) {
			return rc;
		}
		if ((size_t)r < space) {
			return RX_OK; /* drained: the next read would say EAGAIN */
		}
	}
	return RX_OK;
}
