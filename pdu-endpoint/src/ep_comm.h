/* Internal: the interface between an endpoint and its comm (shm, tcp, udp, websocket).
 *
 * The endpoint owns the config, the cache and the counters; a comm gets a context with them and
 * a deliver function. Threads: a comm runs its own thread(s) between start and stop; deliver
 * may be called from any of them; send may be called from any thread, the comm's own thread
 * included (from inside a subscriber).
 */
#ifndef HAKOI_EP_COMM_H
#define HAKOI_EP_COMM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hako/domain.h"
#include "hako/endpoint.h"
#include "hako/endpoint_config.h"
#include "hako/error.h"

/* Counters of hako_endpoint_stats_t (relaxed atomics; bumped by comm threads). */
typedef struct hakoi_ep_counters {
	_Atomic uint64_t frames_in;
	_Atomic uint64_t bytes_in;
	_Atomic uint64_t frames_out;
	_Atomic uint64_t bytes_out;
	_Atomic uint64_t send_dropped;
	_Atomic uint64_t recv_ignored;
	_Atomic uint64_t rejected;
	_Atomic uint64_t accepted;
	_Atomic uint64_t connects;
	_Atomic uint64_t reconnects;
	_Atomic uint64_t disconnects;
	_Atomic uint32_t peers;
} hakoi_ep_counters_t;

static inline void hakoi_count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

typedef struct hakoi_comm_ctx {
	const char *ep_name;           /* for log lines: "endpoint 'x': ..." */
	const hako_comm_config_t *cfg; /* lives as long as the comm */
	const hako_pdudef_t *pdudef;   /* NULL when the endpoint has none */
	hakoi_ep_counters_t *ctr;      /* the endpoint's */
	/* Store one received PDU: cache write, subscribers, frames_in/bytes_in. The comm checks
	 * direction (an "out" comm never delivers: it counts recv_ignored). */
	void (*deliver)(void *ep, const hako_pdu_key_t *key, const void *data, size_t len);
	/* The same with the PDU produced by fill straight into the cache (hako_cache_write_fill):
	 * no staging copy. Returns fill's error (nothing stored) or 0 with *len. */
	int (*deliver_fill)(void *ep, const hako_pdu_key_t *key, size_t cap,
	                    hako_cache_fill_fn fill, void *arg, size_t *len);
	void *ep;
} hakoi_comm_ctx_t;

typedef struct hakoi_comm_ops {
	/* Allocate; servers and udp bind here (a port in use is an error here). The ctx is copied;
	 * what it points to outlives the comm. */
	int (*open)(const hakoi_comm_ctx_t *ctx, void **impl, hako_error_t *err);
	/* Threads start; a client begins connecting (never fails for an absent server: it keeps
	 * retrying with back-off). dom: the domain for shm (may be NULL = open the default). */
	int (*start)(void *impl, hako_domain_t *dom, hako_error_t *err);
	/* Threads joined, peers closed; start may be called again. */
	void (*stop)(void *impl);
	void (*close)(void *impl);
	/* Frame and send to the peers; return codes of hako_endpoint_send. Never blocks on a peer
	 * beyond what the comm's options allow. Only called between start and stop. */
	int (*send)(void *impl, const hako_pdu_key_t *key, const void *data, size_t len);
	/* Optional (shm): read the PDU directly when the cache has none. */
	int (*recv_direct)(void *impl, const hako_pdu_key_t *key, void *buf, size_t cap,
	                   size_t *len);
	/* Optional (shm poll): deliver changed channels; returns the count delivered. */
	int (*process)(void *impl);
	/* Optional (shm): zero-copy send, see hako_endpoint_loan. Without them the endpoint lends
	 * a heap buffer and commit sends it. */
	int (*loan)(void *impl, const hako_pdu_key_t *key, size_t size, void **buf);
	int (*commit)(void *impl, const hako_pdu_key_t *key, size_t len);
	int (*cancel)(void *impl, const hako_pdu_key_t *key);
	/* Optional: bound port (server, udp). */
	uint16_t (*local_port)(void *impl);
} hakoi_comm_ops_t;

extern const hakoi_comm_ops_t hakoi_comm_tcp_ops;
extern const hakoi_comm_ops_t hakoi_comm_udp_ops;
extern const hakoi_comm_ops_t hakoi_comm_ws_ops;
extern const hakoi_comm_ops_t hakoi_comm_shm_ops;

#endif
