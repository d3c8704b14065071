/* Internal: what the network comms (tcp, udp, websocket) share: socket addresses from the config,
 * frame encoding into an owned buffer, a bounded per-peer queue of frames and the wait for room
 * in it. (Their I/O loop is ep_loop.h.) */
#ifndef HAKOI_EP_NET_H
#define HAKOI_EP_NET_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "hako/endpoint_cache.h"
#include "hako/endpoint_config.h"
#include "hako/frame.h"

/* sockaddr of a config address (tcp/udp: address + port). HAKO_EINVAL if not present. */
int hakoi_sockaddr(const hako_comm_addr_t *a, struct sockaddr_storage *ss, socklen_t *len);
/* "127.0.0.1:54001" / "[::1]:54001" of a sockaddr, for log lines. */
const char *hakoi_sockaddr_str(const struct sockaddr *sa, char *buf, size_t len);
int hakoi_set_nonblock(int fd);
/* What a peer's address counts as for a server's per-address limit (tcp, websocket): an IPv4
 * address (also one mapped into IPv6) as such, an IPv6 address by its /64, what one host or
 * site is given. */
void hakoi_addr_key(const struct sockaddr *sa, uint8_t key[16]);

/* A well-formed frame from peer that is not PDU data (a declaration, a read request, an RPC
 * frame): never stored. Logged at debug; the caller counts it in recv_ignored. A peer's
 * declaration needs no answer: a server sends every PDU to every peer, so a reader that
 * declared gets what is sent. */
void hakoi_frame_log_ignored(const char *ep_name, const char *peer, const hako_frame_t *fr);

/* A frame: the encoded bytes with `headroom` free bytes before them (websocket needs
 * LWS_PRE). refs counts the peer queues holding it (a send to N peers encodes once). The last
 * unref calls release when set (a comm's pool of buffers takes it back), else free(). */
typedef struct hakoi_frame_buf {
	int refs; /* atomic */
	size_t len;
	uint8_t *data; /* = storage + headroom */
	void (*release)(struct hakoi_frame_buf *f);
	void *owner; /* release's: the pool it goes back to */
	uint8_t storage[];
} hakoi_frame_buf_t;

/* Encode one PDU; NULL on ENOMEM / a name too long (r says which: HAKO_ENOMEM,
 * HAKO_ENAMETOOLONG). */
hakoi_frame_buf_t *hakoi_frame_buf_new(hako_frame_version_t v, const hako_pdu_key_t *key,
                                       const void *data, size_t len, size_t headroom, int *r);
void hakoi_frame_buf_ref(hakoi_frame_buf_t *f);
void hakoi_frame_buf_unref(hakoi_frame_buf_t *f);

/* A bounded FIFO of frames for one peer (not locked: the caller holds the peer's lock). The head
 * may be partly written (off). Push on a full queue drops the oldest frame that is not partly
 * written and returns 1 (0 otherwise; -1 if it cannot: depth 1 with the head partly written,
 * then the new frame is not queued). */
typedef struct hakoi_frameq {
	hakoi_frame_buf_t **items;
	uint32_t cap;
	uint32_t head;
	uint32_t count;
	size_t off; /* bytes of the head already written */
} hakoi_frameq_t;

int hakoi_frameq_init(hakoi_frameq_t *q, uint32_t cap);
void hakoi_frameq_free(hakoi_frameq_t *q);                      /* unrefs what is left */
int hakoi_frameq_push(hakoi_frameq_t *q, hakoi_frame_buf_t *f); /* takes a reference */
hakoi_frame_buf_t *hakoi_frameq_head(const hakoi_frameq_t *q);
void hakoi_frameq_pop(hakoi_frameq_t *q); /* unrefs the head, off = 0 */
/* Take the head off the queue with its reference (the caller unrefs it), off = 0. */
hakoi_frame_buf_t *hakoi_frameq_take(hakoi_frameq_t *q);

/* Flow control of a full queue (tcp's and websocket's blocking mode). With m held and q full,
 * wait on room for up to timeout_ms (0: not at all) until q has room or gone(peer) says the
 * peer went away (closed, declared stuck). *waiters counts the threads waiting, so that whoever
 * takes frames off the queue (or closes the peer) knows to broadcast room. Returns 1 when q has
 * room and the peer is there, else 0. room uses CLOCK_MONOTONIC (hakoi_cond_init). */
typedef int (*hakoi_gone_fn)(const void *peer);
int hakoi_frameq_wait_room(const hakoi_frameq_t *q, pthread_mutex_t *m, pthread_cond_t *room,
                           int *waiters, uint32_t timeout_ms, hakoi_gone_fn gone, const void *peer);
/* A condition variable whose timed waits use CLOCK_MONOTONIC. */
void hakoi_cond_init(pthread_cond_t *cv);

#endif
