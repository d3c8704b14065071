/* A PDU endpoint: a cache (what arrived) + a comm (shm, tcp, udp, websocket, or none) + an
 * optional pdudef (names <-> channel ids and sizes), opened from Hakoniwa's endpoint JSON
 * (hako/endpoint_config.h), and the container of a node's endpoints.
 *
 * Life cycle: open (files loaded, cache made, server sockets bound: a port in use is reported
 * here) -> start (the comm is served, clients connect) -> stop -> start again ... -> close. The
 * tcp and udp comms of an endpoint set are served by one I/O loop thread for the whole set (an
 * endpoint opened on its own has its own), websocket by its service thread, shm by its watcher.
 *
 * Sending never blocks the caller on a slow or dead peer: a PDU is framed and written at once
 * when the peer's socket takes it, else queued on that peer's bounded queue (options
 * send_queue_depth); a full queue either waits up to write_timeout_ms (tcp option
 * blocking: true, then the stuck peer is disconnected) or drops the oldest queued PDU (blocking:
 * false; udp, websocket). Every dropped PDU is counted in the statistics.
 *
 * Receiving: the comm's thread decodes frames, stores the PDU in the cache and then calls the
 * key's subscribers in that thread (keep them short; they may call hako_endpoint_send). An
 * endpoint whose PDUs a subscriber forwards and nobody reads (hako-bridge's) can skip the
 * store: hako_endpoint_set_store. Frames that are not PDU data, from a peer that breaks the
 * protocol (bad magic or version, a body longer than max_body_bytes, garbage) make the
 * endpoint log the reason and drop that peer; the others are served on.
 *
 * A comm-less endpoint (comm null) is an in-process bus: send writes the cache and calls the
 * subscribers.
 */
#ifndef HAKO_ENDPOINT_H
#define HAKO_ENDPOINT_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/domain.h"
#include "hako/endpoint_cache.h"
#include "hako/endpoint_config.h"
#include "hako/frame.h"
#include "hako/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hako_endpoint hako_endpoint_t;

/* Load the endpoint file and open the endpoint. Errors as hako_endpoint_config_load, plus
 * HAKO_EIO (a socket could not be bound: err says which address and why), HAKO_EBUSY (address
 * in use). */
HAKO_API int hako_endpoint_open(const char *config_path, hako_endpoint_t **out, hako_error_t *err);
/* Same from a loaded config; the endpoint takes cfg (it is freed with the endpoint, also when
 * this fails). */
HAKO_API int hako_endpoint_open_config(hako_endpoint_config_t *cfg, hako_endpoint_t **out,
                                       hako_error_t *err);
/* Stop (if running) and free everything. Accepts NULL. */
HAKO_API void hako_endpoint_close(hako_endpoint_t *ep);

/* shm comm: the domain whose channels to use (before start; the endpoint does not own it).
 * Without it, start opens the domain named by HAKO_DOMAIN ("default"). */
HAKO_API int hako_endpoint_set_domain(hako_endpoint_t *ep, hako_domain_t *dom);

/* Start the comm (served by its I/O loop or threads, client connection attempts, shm
 * channels). HAKO_ESTATE if running. */
HAKO_API int hako_endpoint_start(hako_endpoint_t *ep, hako_error_t *err);
/* Stop the comm: off its loop, threads joined, connections closed (a server keeps its bound
 * port). */
HAKO_API int hako_endpoint_stop(hako_endpoint_t *ep);
HAKO_API int hako_endpoint_is_running(const hako_endpoint_t *ep);

HAKO_API const char *hako_endpoint_name(const hako_endpoint_t *ep);
HAKO_API const hako_endpoint_config_t *hako_endpoint_config(const hako_endpoint_t *ep);

/* The port a server or udp socket is bound to (useful with port 0). 0 if none. */
HAKO_API uint16_t hako_endpoint_local_port(const hako_endpoint_t *ep);

/* ---- names (need pdu_def_path) ---- */

/* Key and PDU size of (robot, pdu name). HAKO_ENOENT if unknown or no pdudef. size may be NULL. */
HAKO_API int hako_endpoint_resolve(const hako_endpoint_t *ep, const char *robot,
                                   const char *pdu_name, hako_pdu_key_t *key, size_t *size);
/* The PDU name of a key, NULL if unknown. */
HAKO_API const char *hako_endpoint_pdu_name(const hako_endpoint_t *ep, const hako_pdu_key_t *key);

/* ---- data ---- */

/* Send a PDU to the peers (comm-less: into the cache). 0 = handed to at least one peer
 * (queued or written); HAKO_ENOTCONN = no peer connected (counted as dropped); HAKO_EPERM =
 * the comm's direction is "in"; HAKO_ETOOBIG = larger than max_body_bytes, or than a datagram
 * (udp), or than the channel (shm); HAKO_ESTATE = not started (comm endpoints). */
HAKO_API int hako_endpoint_send(hako_endpoint_t *ep, const hako_pdu_key_t *key, const void *data,
                                size_t len);
HAKO_API int hako_endpoint_send_by_name(hako_endpoint_t *ep, const char *robot,
                                        const char *pdu_name, const void *data, size_t len);

/* Zero-copy send: lend a buffer of at least `size` bytes for the PDU of key, to fill in place and
 * then send with hako_endpoint_commit(len) or drop with hako_endpoint_cancel. shm: the buffer is
 * the channel's own back buffer (hako_channel_loan), so the PDU is never copied on the writing
 * side (a 1 MiB camera image rendered straight into it costs no copy); until commit or cancel
 * every other writer of that channel waits, readers see the previous PDU. Other comms (and
 * comm-less endpoints): a heap buffer that commit sends as hako_endpoint_send would.
 * One loan per key at a time (HAKO_EBUSY); commit or cancel it promptly, before stopping the
 * endpoint (stop cancels what is left) and without sending that key (shm: that waits for ever)
 * in between. The buffer's content is undefined at loan and the buffer is invalid after commit
 * or cancel. Errors as hako_endpoint_send (shm: HAKO_ETOOBIG if size exceeds the channel,
 * HAKO_ENOENT if key is not in the pdudef). commit / cancel without a loan: HAKO_ESTATE;
 * commit with len > size: HAKO_ETOOBIG and the loan stays open. */
HAKO_API int hako_endpoint_loan(hako_endpoint_t *ep, const hako_pdu_key_t *key, size_t size,
                                void **buf);
HAKO_API int hako_endpoint_commit(hako_endpoint_t *ep, const hako_pdu_key_t *key, size_t len);
HAKO_API int hako_endpoint_cancel(hako_endpoint_t *ep, const hako_pdu_key_t *key);

/* The cached PDU of key (latest: a copy, queue: pops). HAKO_EAGAIN if none; HAKO_ETOOBIG with
 * *len = its size if cap is too small. shm: when the cache has nothing, the channel is read.
 * Marks the key read (hako_endpoint_set_store). */
HAKO_API int hako_endpoint_recv(hako_endpoint_t *ep, const hako_pdu_key_t *key, void *buf,
                                size_t cap, size_t *len);
/* The PDU of key where it lives, not from the cache (nothing is consumed or marked read): an
 * shm endpoint reads its channel, the latest write, whether or not the PDU is listed with
 * notify_on_recv (Hakoniwa's bridge reads its shm sources this way on every tick). HAKO_EAGAIN
 * if never written, HAKO_ETOOBIG with *len as hako_endpoint_recv, HAKO_ESTATE when the
 * endpoint is not started, HAKO_ENOTSUP for the comms whose PDUs only come as arrivals (tcp,
 * udp, websocket, none). */
HAKO_API int hako_endpoint_read_direct(hako_endpoint_t *ep, const hako_pdu_key_t *key, void *buf,
                                       size_t cap, size_t *len);
HAKO_API int hako_endpoint_recv_by_name(hako_endpoint_t *ep, const char *robot,
                                        const char *pdu_name, void *buf, size_t cap, size_t *len);
/* The next pending PDU of any key (hako_cache_read_next). Marks every key read
 * (hako_endpoint_set_store). */
HAKO_API int hako_endpoint_recv_next(hako_endpoint_t *ep, hako_pdu_key_t *key, void *buf,
                                     size_t cap, size_t *len);
/* Wait until a PDU arrives after the last call of recv_next found nothing, i.e. until
 * recv_next may succeed. 0, or HAKO_ETIMEDOUT after timeout_usec (< 0: forever). */
HAKO_API int hako_endpoint_wait(hako_endpoint_t *ep, hako_time_t timeout_usec);

/* A subscription: hako_endpoint_subscribe makes it, hako_endpoint_unsubscribe ends it. */
typedef hako_cache_sub_t hako_endpoint_sub_t;

/* Call cb(user, key, data, len) on every PDU of key that arrives, of every key when key is NULL
 * (in the thread that delivers it: the comm's, the sender's for a comm-less endpoint, the
 * caller of hako_endpoint_process_recv_events in shm poll mode). data is valid during the call
 * only. The subscribers of the key are called first, then those of every key, each in the order
 * they subscribed. *sub gets the handle; sub may be NULL for a subscription that lasts as long
 * as the endpoint. HAKO_EINVAL, HAKO_ENOMEM; by name also HAKO_ENOENT. */
HAKO_API int hako_endpoint_subscribe(hako_endpoint_t *ep, const hako_pdu_key_t *key,
                                     hako_cache_cb_t cb, void *user, hako_endpoint_sub_t **sub);
HAKO_API int hako_endpoint_subscribe_by_name(hako_endpoint_t *ep, const char *robot,
                                             const char *pdu_name, hako_cache_cb_t cb, void *user,
                                             hako_endpoint_sub_t **sub);
/* End a subscription and free its handle (libuv's uv_close contract). When it returns, cb is
 * not called again for it and no call of it is still running, so user may be freed; it waits
 * for a running call to finish (do not call it holding a lock that cb takes).
 * From inside a callback of the same endpoint (in the thread delivering to it: a subscriber
 * that ends itself or another subscription of that endpoint) it cannot wait for the calls on
 * its own thread's stack: it marks the subscription and returns at once. The current call
 * finishes and no other call begins, with one exception: when several threads deliver at once
 * (a comm-less endpoint sent to from several threads, a subscription to every key of an shm
 * endpoint in callback mode), a call another thread had begun also finishes after it returns.
 * Once per handle. hako_endpoint_close ends the subscriptions left (their handles become
 * invalid). Accepts NULL. */
HAKO_API void hako_endpoint_unsubscribe(hako_endpoint_sub_t *sub);

/* What the cache stores (hako/endpoint_cache.h has the rule). HAKO_CACHE_STORE_ALL, the default:
 * every PDU that arrives. HAKO_CACHE_STORE_READ: a PDU of a key that has a subscriber is only
 * handed to the subscribers, unless the key has been read (hako_endpoint_recv of it, or any
 * hako_endpoint_recv_next, marks it for good): for an endpoint whose PDUs are forwarded and
 * that nobody reads, the PDUs cost no copy into the cache and a queue cache counts no drops.
 * hako-bridge sets it on its endpoints. Any time; HAKO_EINVAL. */
HAKO_API int hako_endpoint_set_store(hako_endpoint_t *ep, hako_cache_store_t store);

/* shm comm with impl_type "poll": check the notify_on_recv channels and deliver what changed.
 * Returns the number of PDUs delivered (>= 0). Other comms: 0. */
HAKO_API int hako_endpoint_process_recv_events(hako_endpoint_t *ep);

/* Deliver now, in the calling thread, what reached the endpoint and is not delivered yet. shm
 * (callback or poll): every notified channel written since the endpoint last read it is read
 * and delivered (its latest write, once: the watcher does not deliver it again). A watcher
 * thread may lag behind the writers, and a domain reset zeroes the channels: when this returns,
 * the last write made to each notified channel before the call has been delivered, by this
 * call or before it. A bridge asset drains its sources before it acknowledges a stop or a
 * reset. Other comms deliver as they read their sockets: nothing to do. Returns the number of
 * PDUs delivered (>= 0; 0 when the endpoint is not running), HAKO_EINVAL. Not from inside a
 * callback of the endpoint. */
HAKO_API int hako_endpoint_drain(hako_endpoint_t *ep);

/* ---- statistics ---- */

typedef struct hako_endpoint_stats {
	uint64_t frames_in;    /* PDUs received (stored, or handed to the subscribers only) */
	uint64_t bytes_in;     /* their body bytes */
	uint64_t frames_out;   /* PDUs written to a peer (once per peer) */
	uint64_t bytes_out;    /* their body bytes */
	uint64_t send_dropped; /* PDUs not delivered to a peer: queue full, stuck peer, none */
	uint64_t recv_dropped; /* queue-mode cache: stored PDUs dropped unread (overflow) */
	uint64_t recv_ignored; /* well-formed frames not stored: not PDU data, or direction out */
	uint64_t rejected;     /* peers dropped for a protocol error (bad frame) */
	uint64_t accepted;     /* connections accepted (server) */
	uint64_t connects;     /* connections made (client), the first one included */
	uint64_t reconnects;   /* connections made again after a loss (client) */
	uint64_t disconnects;  /* connections lost or closed by a peer */
	uint32_t peers;        /* connected now */
} hako_endpoint_stats_t;
HAKO_API void hako_endpoint_get_stats(const hako_endpoint_t *ep, hako_endpoint_stats_t *st);

/* ---- container: the endpoints of one node ---- */

typedef struct hako_endpoint_set hako_endpoint_set_t;

/* Load the container file for node_id and open every endpoint (their ids become their names).
 * On error nothing stays open. */
HAKO_API int hako_endpoint_set_open(const char *container_path, const char *node_id,
                                    hako_endpoint_set_t **out, hako_error_t *err);
/* The same from a container already loaded (e.g. a bridge config's `endpoints`, whichever way
 * the bridge file gave them), so the files are read once. The endpoints take the entries'
 * configs (an entry's config becomes NULL once taken; on error the ones taken are freed and
 * the others stay); c itself stays the caller's. */
HAKO_API int hako_endpoint_set_open_container(hako_endpoint_container_t *c,
                                              hako_endpoint_set_t **out, hako_error_t *err);
/* Start all (in file order); on an error the ones started are stopped again. */
HAKO_API int hako_endpoint_set_start(hako_endpoint_set_t *s, hako_error_t *err);
HAKO_API void hako_endpoint_set_stop(hako_endpoint_set_t *s);
HAKO_API void hako_endpoint_set_close(hako_endpoint_set_t *s);
/* The endpoint with this id, NULL if none. */
HAKO_API hako_endpoint_t *hako_endpoint_set_get(const hako_endpoint_set_t *s, const char *id);
HAKO_API size_t hako_endpoint_set_count(const hako_endpoint_set_t *s);
HAKO_API hako_endpoint_t *hako_endpoint_set_at(const hako_endpoint_set_t *s, size_t i);
HAKO_API const char *hako_endpoint_set_node(const hako_endpoint_set_t *s);
/* shm comms of the set: the domain to use (before start). */
HAKO_API int hako_endpoint_set_set_domain(hako_endpoint_set_t *s, hako_domain_t *dom);

#ifdef __cplusplus
}
#endif
#endif
