/* Internal: what a comm (shm, tcp, udp, websocket) is to the endpoint and to the config loader.
 *
 * A comm is one table, hakoi_comm_t, registered in the list of comm_list.c: its protocol name,
 * the fields of its comm file for the config walker (hakoi/cfg.h) with the checks between them,
 * and its life cycle (open, start, stop, close, send, ...). Adding a protocol is a comm_<name>.c
 * that defines such a table, one line in comm_list.c and a value of hako_comm_protocol_t.
 *
 * The endpoint owns the config, the cache and the counters; a comm gets a context with them and
 * a deliver function. Threads: the network comms are served by the I/O loop their endpoint was
 * given (ep_loop.h; one per endpoint set, or the endpoint's own), websocket by its own service
 * thread, shm by its watcher thread (or threads); deliver may be called from any of them; send may
 * be called from any thread, the loop's included (from inside a subscriber).
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
#include "hakoi/cfg.h"

typedef struct hakoi_loop hakoi_loop_t;

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
	/* The I/O loop serving the comm (comms with uses_loop): its set's or its own. */
	hakoi_loop_t *loop;
} hakoi_comm_ctx_t;

/* ---- reading a comm file ---- */

/* The protocol's options follow the common part in the one allocation of a comm config
 * (hako_comm_config_t.opts points there), so that one walk over the comm file fills both: a
 * comm's table is relative to the hako_comm_config_t, its own members at HAKOI_COMM_AT. */
#define HAKOI_COMM_OPTS_AT                                                                         \
	((sizeof(hako_comm_config_t) + _Alignof(max_align_t) - 1) / _Alignof(max_align_t) *        \
	 _Alignof(max_align_t))
#define HAKOI_COMM_AT(T, M)                                                                        \
	.offset = HAKOI_COMM_OPTS_AT + offsetof(T, M), .size = HAKOI_MEMBER_SIZE(T, M)
/* An array of the options whose elements the walker allocates (HAKOI_ELEMS_NEW's). */
#define HAKOI_COMM_ELEMS_NEW(T, P, N)                                                              \
	.offset = HAKOI_COMM_OPTS_AT + offsetof(T, P), .size = sizeof(*((T *)0)->P),               \
	.count = HAKOI_COMM_OPTS_AT + offsetof(T, N) + 1, .alloc = 1

/* Entries of the protocol's own members (T its options struct). */
#define HAKOI_COMM_INT(key_, T, M, lo, hi)                                                         \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_INT, .flags = HAKOI_F_UNSIGNED,                     \
		HAKOI_COMM_AT(T, M), .min = (lo), .max = (hi)                                      \
	}
#define HAKOI_COMM_BOOL(key_, T, M)                                                                \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_BOOL, HAKOI_COMM_AT(T, M)                           \
	}
/* A nested object whose members are read into the same config (the table's entries say where). */
#define HAKOI_COMM_OBJECT(key_, flags_, table)                                                     \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_OBJECT, .flags = (flags_), .fields = (table)        \
	}

#define HAKOI_COMM_MAX_MS  3600000 /* an hour: the longest timeout an option takes */
#define HAKOI_COMM_MAX_BUF (1 << 30)

/* The members of every comm file ("protocol" was read first, to choose the comm's table). */
extern const char *const hakoi_comm_dir_names[];
extern const int hakoi_comm_dir_values[];
extern const char *const hakoi_comm_version_names[];
extern const int hakoi_comm_version_values[];
extern const char *const hakoi_comm_role_names[];
extern const int hakoi_comm_role_values[];
#define HAKOI_COMM_COMMON_FIELDS                                                                   \
	HAKOI_IGNORE("$schema"), HAKOI_IGNORE("protocol"),                                         \
	    HAKOI_STRING("name", 0, hako_comm_config_t, name),                                     \
	    HAKOI_ENUM("direction", 0, hako_comm_config_t, direction, hakoi_comm_dir_names,        \
	               hakoi_comm_dir_values),                                                     \
	    HAKOI_ENUM("comm_raw_version", 0, hako_comm_config_t, raw_version,                     \
	               hakoi_comm_version_names, hakoi_comm_version_values)
/* role, required: "server" or "client". */
#define HAKOI_COMM_ROLE_FIELD                                                                      \
	HAKOI_ENUM("role", HAKOI_F_REQUIRED, hako_comm_config_t, role, hakoi_comm_role_names,      \
	           hakoi_comm_role_values)
/* local / remote as an IPv4 or IPv6 address and a port (tcp, udp), and as websocket has them
 * (local: port and an optional address, 127.0.0.1 unless given; remote: host, port, path). */
extern const hakoi_field_t hakoi_comm_ip_local_fields[];
extern const hakoi_field_t hakoi_comm_ip_remote_fields[];
extern const hakoi_field_t hakoi_comm_ws_local_fields[];
extern const hakoi_field_t hakoi_comm_ws_remote_fields[];
/* Hakoniwa's "name_resolver" block (tcp, udp): {type: "file", path: the node map, relative to
 * the comm file; strict: a boolean}. Before local / remote in a table: the map it names
 * resolves the node names of the addresses read after it. */
extern const hakoi_field_t hakoi_comm_resolver_fields[];
#define HAKOI_COMM_RESOLVER_FIELD                                                                  \
	{                                                                                          \
		.key = "name_resolver", .kind = HAKOI_K_OBJECT,                                    \
		.fields = hakoi_comm_resolver_fields                                               \
	}
#define HAKOI_COMM_ADDR_FIELD(key_, M, table)                                                      \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_OBJECT, HAKOI_AT(hako_comm_config_t, M),            \
		.fields = (table), .present = HAKOI_PRESENT(hako_comm_config_t, M.present)         \
	}
/* Options of every network comm, and the limits of the stream comms (tcp, websocket) against
 * peers that hold memory; a stream comm's options table also ends with HAKOI_COMM_STREAM_CHECK. */
int hakoi_comm_check_max_clients(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_comm_check_buffered(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
#define HAKOI_COMM_NET_OPTIONS                                                                     \
	HAKOI_INT("max_body_bytes", HAKOI_F_UNSIGNED, hako_comm_config_t, max_body_bytes, 1,       \
	          HAKO_ENDPOINT_MAX_BODY),                                                         \
	    HAKOI_INT("send_queue_depth", HAKOI_F_UNSIGNED, hako_comm_config_t, send_queue_depth,  \
	              1, HAKO_ENDPOINT_MAX_SENDQ)
#define HAKOI_COMM_STREAM_OPTIONS                                                                  \
	{.key = "max_clients",                                                                     \
	 .kind = HAKOI_K_INT,                                                                      \
	 .flags = HAKOI_F_UNSIGNED,                                                                \
	 HAKOI_AT(hako_comm_config_t, max_clients),                                                \
	 .min = 1,                                                                                 \
	 .max = HAKO_ENDPOINT_MAX_CLIENTS,                                                         \
	 .check = hakoi_comm_check_max_clients},                                                   \
	    {.key = "max_buffered_bytes",                                                          \
	     .kind = HAKOI_K_INT,                                                                  \
	     .flags = HAKOI_F_UNSIGNED,                                                            \
	     HAKOI_AT(hako_comm_config_t, max_buffered_bytes),                                     \
	     .min = HAKO_ENDPOINT_BUFFERED_SLACK,                                                  \
	     .max = UINT32_MAX,                                                                    \
	     .check = hakoi_comm_check_buffered},                                                  \
	    HAKOI_INT("frame_timeout_ms", HAKOI_F_UNSIGNED, hako_comm_config_t, frame_timeout_ms,  \
	              0, HAKOI_COMM_MAX_MS)

/* Which of local / remote a comm file must have, and which it may not: an error at the comm
 * file's top level naming why ("a server", "direction \"out\""). need / refuse may be NULL. */
int hakoi_comm_check_addrs(hakoi_walk_t *w, const hako_comm_config_t *cc, const char *need,
                           const char *refuse, const char *why);
/* An IPv4 or IPv6 literal (a field's check: the family goes to the hako_comm_addr_t at base when
 * the field is its address). */
int hakoi_comm_check_ip(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);

typedef struct hakoi_node_map hakoi_node_map_t;

/* The walk's user: the config being read and the endpoint's pdudef (NULL if none). */
typedef struct hakoi_comm_load {
	hako_comm_config_t *cc;
	const hako_pdudef_t *def;
	void *cur; /* a comm's own scratch during its walk (shm: the robot being read) */
	/* The node map (cc->node_map), loaded by the name_resolver block or at the first node
	 * name when HAKO_NODE_IP_MAP is set; freed once the file is read. */
	hakoi_node_map_t *map;
} hakoi_comm_load_t;

/* ---- a comm ---- */

typedef struct hakoi_comm {
	const char *name; /* the comm file's "protocol" */
	hako_comm_protocol_t protocol;
	/* Served by the endpoint's I/O loop (ctx.loop is set for it). */
	int uses_loop;

	/* The comm file. opts_size: the protocol's options (hako_comm_config_t.opts). defaults: its
	 * options (and common values it differs in) before the walk. fields: every member of its
	 * file, relative to the config (HAKOI_COMM_COMMON_FIELDS, its own at HAKOI_COMM_AT), with
	 * HAKOI_CHECK entries for the rules between members. free_opts (optional): what its options
	 * hold (not the options themselves). */
	size_t opts_size;
	void (*defaults)(hako_comm_config_t *cc);
	const hakoi_field_t *fields;
	void (*free_opts)(void *opts);

	/* Allocate; servers and udp bind here (a port in use is an error here). The ctx is copied;
	 * what it points to outlives the comm. */
	int (*open)(const hakoi_comm_ctx_t *ctx, void **impl, hako_error_t *err);
	/* Serving begins; a client begins connecting (never fails for an absent server: it keeps
	 * retrying with back-off). dom: the domain for shm (may be NULL = open the default). */
	int (*start)(void *impl, hako_domain_t *dom, hako_error_t *err);
	/* Serving ended, peers closed; start may be called again. */
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
	/* Optional (shm): deliver now, in the caller's thread, what reached the comm and its
	 * threads have not delivered yet (hako_endpoint_drain); returns the count delivered. */
	int (*drain)(void *impl);
	/* Optional (shm): zero-copy send, see hako_endpoint_loan. Without them the endpoint lends
	 * a heap buffer and commit sends it. */
	int (*loan)(void *impl, const hako_pdu_key_t *key, size_t size, void **buf);
	int (*commit)(void *impl, const hako_pdu_key_t *key, size_t len);
	int (*cancel)(void *impl, const hako_pdu_key_t *key);
	/* Optional: bound port (server, udp). */
	uint16_t (*local_port)(void *impl);
} hakoi_comm_t;

extern const hakoi_comm_t hakoi_comm_tcp;
extern const hakoi_comm_t hakoi_comm_udp;
extern const hakoi_comm_t hakoi_comm_ws;
extern const hakoi_comm_t hakoi_comm_shm;
extern const hakoi_comm_t hakoi_comm_storage;
extern const hakoi_comm_t hakoi_comm_mqtt; /* a stub that refuses its files without libmosquitto */

/* The registered comms (comm_list.c), NULL-terminated, in the order error messages list them. */
extern const hakoi_comm_t *const hakoi_comms[];
/* The comm of a protocol name or value; NULL if none. */
const hakoi_comm_t *hakoi_comm_find(const char *name);
const hakoi_comm_t *hakoi_comm_of(hako_comm_protocol_t protocol);

#endif
