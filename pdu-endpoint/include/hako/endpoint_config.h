/* Endpoint config files (Hakoniwa's formats, so existing configs load unchanged): the endpoint
 * file, the cache and comm files it names, the optional pdudef, and the container file that lists
 * the endpoints of each node. Schemas: configs/schema/{endpoint,cache,comm,
 * endpoint_container}.schema.json.
 *
 * Every key of these files is either stored here (and honoured by the endpoint) or refused with
 * a message: unknown keys are errors. Fields stored beyond what Hakoniwa's own endpoint reads:
 *  - websocket options secure (only false: "TLS is not supported"), ping_interval_sec,
 *    handshake_timeout_ms, connect/read/write_timeout_ms;
 *  - tcp/udp options blocking (false = a full send queue drops, never waits), every tcp
 *    option, linger, udp broadcast and multicast;
 *  - hako's own websocket option static_dir (a server serves that folder's files);
 *  - hako's own options max_body_bytes (default 16 MiB, 1..1 GiB) and send_queue_depth
 *    (default 256, 1..65536) of tcp, udp and websocket;
 *  - hako's own limits of tcp and websocket: max_clients (a server's peers at once, default
 *    64), max_buffered_bytes (the receive buffers of all peers together, default 64 MiB) and
 *    frame_timeout_ms (the time one frame may take to arrive, default 10 s); websocket
 *    blocking (as tcp's: a full send queue waits up to write_timeout_ms, the default);
 *  - container entries' direction and mode.
 *  - tcp expected_clients (Hakoniwa's TCP mux: a server whose file may leave out role).
 *
 * Paths in a file are relative to the folder of that file. Errors fill a hako_error_t with
 * file:line:column of the offending value and "path: what" (the config walker's wording, as in
 * every file hako reads); an error inside a referenced file names that file; a key given twice
 * in an object is an error.
 *
 * A comm file has the members every protocol shares (hako_comm_config_t) and the protocol's own;
 * each comm reads its part with its own table (pdu-endpoint/src/comm_<protocol>.c), so the
 * config keeps that part opaque and the getters hako_comm_<protocol>_options() show it.
 */
#ifndef HAKO_ENDPOINT_CONFIG_H
#define HAKO_ENDPOINT_CONFIG_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/endpoint_cache.h"
#include "hako/error.h"
#include "hako/pdudef.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_ENDPOINT_NAME_MAX         257 /* bytes including the NUL: names are 1..256 chars */
#define HAKO_ENDPOINT_PATH_MAX         512
#define HAKO_ENDPOINT_MAX_BODY         (1u << 30)
#define HAKO_ENDPOINT_DEFAULT_BODY     (16u << 20)
#define HAKO_ENDPOINT_DEFAULT_SENDQ    256u
#define HAKO_ENDPOINT_MAX_SENDQ        65536u
#define HAKO_ENDPOINT_DEFAULT_CLIENTS  64u
#define HAKO_ENDPOINT_MAX_CLIENTS      4096u
#define HAKO_ENDPOINT_DEFAULT_BUFFERED (64u << 20)
#define HAKO_ENDPOINT_BUFFERED_SLACK   (1u << 20) /* max_buffered_bytes >= max_body_bytes + this */
#define HAKO_ENDPOINT_DEFAULT_FRAME_MS 10000u

typedef enum hako_comm_protocol {
	HAKO_COMM_TCP = 0,
	HAKO_COMM_UDP = 1,
	HAKO_COMM_SHM = 2,
	HAKO_COMM_WEBSOCKET = 3,
	HAKO_COMM_STORAGE = 4,
	HAKO_COMM_MQTT = 5, /* only in a build with libmosquitto (HAKO_WITH_MQTT) */
} hako_comm_protocol_t;

typedef enum hako_comm_direction {
	HAKO_COMM_IN = 1,
	HAKO_COMM_OUT = 2,
	HAKO_COMM_INOUT = 3, /* the default */
} hako_comm_direction_t;

typedef enum hako_comm_role {
	HAKO_COMM_ROLE_NONE = 0, /* udp, shm */
	HAKO_COMM_SERVER = 1,
	HAKO_COMM_CLIENT = 2,
} hako_comm_role_t;

typedef enum hako_shm_impl {
	HAKO_SHM_CALLBACK = 0,
	HAKO_SHM_POLL = 1,
} hako_shm_impl_t;

/* local / remote. tcp, udp: address (IPv4/IPv6 literal, family AF_INET/AF_INET6) + port; a
 * node name in the file ("srv-01") or "localhost" is resolved at load (node map, see
 * hako_comm_config_t.node_map) and kept in node, address holding its IP.
 * websocket local: port (address "127.0.0.1" unless given: Hakoniwa binds 0.0.0.0, hako listens
 * on other hosts only when the file says so); remote: host + port + path ("/"). */
typedef struct hako_comm_addr {
	int present;
	int family;
	char address[64];
	char node[64]; /* the name the file gave for address; "" when it gave the IP */
	char host[256];
	char path[256];
	uint16_t port;
} hako_comm_addr_t;

/* The options of each protocol, read through the getters below (NULL for a comm of another
 * protocol): a comm config keeps them in its opaque part (hako_comm_config_t.opts), which only
 * that comm's code knows the layout of. */
typedef struct hako_comm_tcp_options {
	uint32_t backlog;            /* 0 = not in the file: SOMAXCONN (Hakoniwa's code: 5) */
	uint32_t connect_timeout_ms; /* 1000 */
	uint32_t read_timeout_ms;    /* 1000 */
	uint32_t write_timeout_ms;   /* 1000 */
	int blocking;                /* 1 */
	int reuse_address;           /* 1 */
	int keepalive;               /* 1 */
	int no_delay;                /* 1 */
	/* SO_RCVBUF / SO_SNDBUF when set in the file. Hakoniwa's code default is 8192, which would
	 * cap a loopback connection's window at 16 KiB; hako leaves the kernel's auto-tuning (0)
	 * unless the file gives a size. */
	uint32_t recv_buffer_size;   /* 0 = kernel default */
	uint32_t send_buffer_size;   /* 0 = kernel default */
	int linger_enabled;          /* 0 */
	uint32_t linger_timeout_sec; /* 0 */
	/* Hakoniwa's TCP mux: a server (its file needs no role) that expects this many clients
	 * on its one port, each its own session (docs/endpoint.md, "TCP mux"). 0: not a mux. */
	uint32_t expected_clients;
} hako_comm_tcp_options_t;

typedef struct hako_comm_udp_options {
	uint32_t buffer_size; /* 8192 */
	uint32_t timeout_ms;  /* 1000; no use: nothing waits on a receive (the I/O loop reads) */
	int blocking;         /* 1 */
	int reuse_address;    /* 1 */
	int broadcast;        /* 0 */
	int multicast_enabled;
	char multicast_group[64];     /* a multicast address, required when enabled */
	char multicast_interface[64]; /* "0.0.0.0" */
	uint32_t multicast_ttl;       /* 1 */
} hako_comm_udp_options_t;

typedef struct hako_comm_ws_options {
	uint32_t ping_interval_sec;    /* 0 = no pings */
	uint32_t handshake_timeout_ms; /* 5000 */
	uint32_t connect_timeout_ms;   /* 1000 */
	uint32_t read_timeout_ms;      /* 1000: a message may stall this long (0 = no limit) */
	uint32_t write_timeout_ms;     /* 1000 */
	int blocking;                  /* 1: a full send queue waits (tcp's blocking) */
	/* hako's own: a server serves the files of this folder over HTTP (GET); "" = none.
	 * Resolved against the comm file's folder. */
	char static_dir[HAKO_ENDPOINT_PATH_MAX];
} hako_comm_ws_options_t;

/* Hakoniwa's storage comm (docs/endpoint.md, "storage"): PDU frames kept in a file, appended
 * (queue) or one slot per PDU of the pdudef (latest). */
typedef enum hako_storage_mode {
	HAKO_STORAGE_QUEUE = 1,
	HAKO_STORAGE_LATEST = 2,
} hako_storage_mode_t;

typedef struct hako_comm_storage_options {
	int backend;                       /* 0: "file", the only one (as Hakoniwa's) */
	int mode;                          /* hako_storage_mode_t; queue by default */
	char path[HAKO_ENDPOINT_PATH_MAX]; /* resolved against the comm file's folder */
} hako_comm_storage_options_t;

/* mqtt: Hakoniwa's keys are in the file's "mqtt" object, hako's own in "options". */
typedef struct hako_comm_mqtt_options {
	char broker[256];       /* as the file gives it: "tcp://host:port" (Hakoniwa's form),
	                           "mqtt://host:port", "host:port" or "host" */
	char host[256];         /* parsed from broker */
	uint16_t port;          /* parsed from broker; 1883 when it names none */
	char topic_prefix[256]; /* trailing '/' taken off; "hakoniwa" when empty (as Hakoniwa) */
	char client_id[HAKO_ENDPOINT_NAME_MAX]; /* default: the comm file's name without .json */
	int qos;                                /* 0 (default), 1 or 2 */
	int retain;                             /* 0 */
	/* hako's own (options): */
	uint32_t keepalive_sec;    /* 30 */
	uint32_t reconnect_min_ms; /* 100: the first retry's delay, doubled up to the max */
	uint32_t reconnect_max_ms; /* 2000 */
	uint32_t write_timeout_ms; /* 1000: how long a blocking send waits for room */
	int blocking;              /* 1: a send waits for room in the in-flight window */
	uint32_t pending_max;      /* 1024: channels whose newest PDU is kept while disconnected */
	char username[128];        /* "" = none */
	char password[128];
} hako_comm_mqtt_options_t;

typedef struct hako_comm_shm_pdu {
	char name[HAKO_NAME_MAX];
	int notify_on_recv;
	int32_t channel_id; /* from the pdudef */
	uint32_t pdu_size;  /* from the pdudef */
} hako_comm_shm_pdu_t;

typedef struct hako_comm_shm_robot {
	char name[HAKO_NAME_MAX];
	size_t pdu_count;
	hako_comm_shm_pdu_t *pdus;
} hako_comm_shm_robot_t;

typedef struct hako_comm_shm_options {
	hako_shm_impl_t impl;
	char asset_name[HAKO_ENDPOINT_NAME_MAX]; /* "" when absent (required for poll) */
	size_t robot_count;
	hako_comm_shm_robot_t *robots;
} hako_comm_shm_options_t;

/* What every comm file says, whatever its protocol, and the protocol's own part. */
typedef struct hako_comm_config {
	char path[HAKO_ENDPOINT_PATH_MAX];
	char name[HAKO_ENDPOINT_NAME_MAX]; /* "" when absent */
	hako_comm_protocol_t protocol;
	hako_comm_direction_t direction;
	int raw_version;       /* 1 or 2 (default) */
	hako_comm_role_t role; /* tcp, websocket */
	hako_comm_addr_t local;
	hako_comm_addr_t remote;
	/* tcp, udp: the node map node names were resolved through ("" when none was needed),
	 * and who named it: "name_resolver.path" (the comm file's block, relative to the file)
	 * or "HAKO_NODE_IP_MAP" (the environment; the tools' --node-map sets it; it wins over
	 * the block). */
	char node_map[HAKO_ENDPOINT_PATH_MAX];
	char node_map_from[32];
	/* tcp, udp, websocket */
	uint32_t max_body_bytes;
	uint32_t send_queue_depth;
	/* tcp and websocket (hako's own; see docs/endpoint.md). max_clients: a server's peers at
	 * once (one address: at most half); one more takes the place of an idle peer, or is
	 * accepted and closed at once. max_buffered_bytes: the receive buffers of
	 * all peers together (partial frames, websocket fragments, buffers kept for reuse); a peer
	 * that would need more is dropped. frame_timeout_ms: once a frame (message) has begun, all
	 * of it must be there within this (0 = no limit); a trickle of bytes does not extend it. */
	uint32_t max_clients;        /* 64 */
	uint32_t max_buffered_bytes; /* 64 MiB, at least max_body_bytes + 1 MiB */
	uint32_t frame_timeout_ms;   /* 10000 */
	/* The protocol's options (the getters below), allocated and freed with the config. */
	void *opts;
} hako_comm_config_t;

/* The options of a comm config of that protocol; NULL for NULL or another protocol. */
HAKO_API const hako_comm_tcp_options_t *hako_comm_tcp_options(const hako_comm_config_t *cc);
HAKO_API const hako_comm_udp_options_t *hako_comm_udp_options(const hako_comm_config_t *cc);
HAKO_API const hako_comm_storage_options_t *hako_comm_storage_options(const hako_comm_config_t *cc);
HAKO_API const hako_comm_ws_options_t *hako_comm_ws_options(const hako_comm_config_t *cc);
HAKO_API const hako_comm_mqtt_options_t *hako_comm_mqtt_options(const hako_comm_config_t *cc);
HAKO_API const hako_comm_shm_options_t *hako_comm_shm_options(const hako_comm_config_t *cc);
/* "tcp", "udp", "shm", "websocket", "mqtt": the comm file's protocol; "" for NULL. */
HAKO_API const char *hako_comm_protocol_name(const hako_comm_config_t *cc);

typedef struct hako_cache_config {
	char path[HAKO_ENDPOINT_PATH_MAX];
	char name[HAKO_ENDPOINT_NAME_MAX]; /* "" when absent */
	hako_cache_mode_t mode;
	uint32_t depth; /* 1..1024; 1 for latest */
} hako_cache_config_t;

typedef struct hako_endpoint_config {
	char path[HAKO_ENDPOINT_PATH_MAX];
	char name[HAKO_ENDPOINT_NAME_MAX];
	hako_cache_config_t cache;
	hako_comm_config_t *comm; /* NULL: in-process only */
	hako_pdudef_t *pdudef;    /* NULL: no pdu_def_path */
} hako_endpoint_config_t;

/* Load an endpoint file and the files it names. Returns 0, HAKO_ECONFIG, HAKO_ENOENT (a file is
 * missing), HAKO_EIO, HAKO_ENOMEM, HAKO_ENAMETOOLONG or HAKO_EINVAL (NULL argument); *out is NULL
 * on error. */
HAKO_API int hako_endpoint_config_load(const char *path, hako_endpoint_config_t **out,
                                       hako_error_t *err);
HAKO_API void hako_endpoint_config_free(hako_endpoint_config_t *cfg);

typedef struct hako_endpoint_entry {
	char id[HAKO_ENDPOINT_NAME_MAX];          /* the endpoint's name once opened */
	char config_path[HAKO_ENDPOINT_PATH_MAX]; /* resolved */
	char direction[8];                        /* "" when absent, else in | out | inout */
	char mode[64];                            /* "" when absent (e.g. local, wire) */
	hako_endpoint_config_t *config;
} hako_endpoint_entry_t;

typedef struct hako_endpoint_container {
	char path[HAKO_ENDPOINT_PATH_MAX];
	char node_id[HAKO_ENDPOINT_NAME_MAX];
	size_t count;
	hako_endpoint_entry_t *entries;
} hako_endpoint_container_t;

/* Load the endpoints of node_id from a container file (an array of {nodeId, endpoints[]}); every
 * node's entries are checked, only node_id's endpoint files are loaded. Same errors as
 * hako_endpoint_config_load; a node_id that is not in the file is HAKO_ECONFIG. */
HAKO_API int hako_endpoint_container_load(const char *path, const char *node_id,
                                          hako_endpoint_container_t **out, hako_error_t *err);
/* node_id's endpoints from a container held inline in another file: the array found at the
 * top-level member `key` of the JSON file `file` (a bridge file's "endpoints" block). It is
 * checked as a container file is; config_path resolves under the folder of file; errors point
 * into file ("bridge.json:12:9: endpoints[0].endpoints[1].config_path: ..."). */
HAKO_API int hako_endpoint_container_load_at(const char *file, const char *key, const char *node_id,
                                             hako_endpoint_container_t **out, hako_error_t *err);
HAKO_API void hako_endpoint_container_free(hako_endpoint_container_t *c);

/* Load and check a node map (Hakoniwa's node-ip-map.json) as the comm loaders do when a tcp / udp
 * file names a node: 0 and *count (may be NULL) the number of nodes, or HAKO_ECONFIG, HAKO_ENOENT,
 * HAKO_EIO, HAKO_ENOMEM with err at the map's file:line:column. For tools that check a file tree;
 * an endpoint never needs it (HAKO_NODE_IP_MAP, name_resolver). */
HAKO_API int hako_endpoint_node_map_check(const char *path, size_t *count, hako_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
