/* The conductor across nodes (libhako_conductor): one server node and any number of client
 * nodes, each its own core domain, whose world clocks never drift apart by more than Dmax
 * (server - client) and 2 Dmax (client - client), started, stopped and reset as one simulation.
 * (hako/hako_conductor.h is Hakoniwa's in-process conductor of one domain; this one links
 * domains.) See docs/conductor.md.
 *
 * Each side stands for the other in its own domain as a proxy member (hako/domain.h) whose clock
 * is the other side's last known world time, so the core's rule bounds the drift whatever the
 * network does: a late message holds a clock back, it never lets one run ahead. The control
 * plane (join, time exchange, lifecycle, heartbeat, leave) runs on ZeroMQ.
 */
#ifndef HAKO_CONDUCTOR_H
#define HAKO_CONDUCTOR_H

#include <stdint.h>

#include "hako/api.h"
#include "hako/domain.h"
#include "hako/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_CONDUCTOR_ID_MAX      64 /* node ids: 1..63 bytes */
#define HAKO_CONDUCTOR_ADDR_MAX    256
#define HAKO_CONDUCTOR_PATH_MAX    512
#define HAKO_CONDUCTOR_MAX_CLIENTS 60

typedef enum hako_conductor_role {
	HAKO_CONDUCTOR_SERVER = 0,
	HAKO_CONDUCTOR_CLIENT = 1,
} hako_conductor_role_t;

typedef enum hako_conductor_publish {
	HAKO_PUBLISH_IMMEDIATE = 0,      /* every world step */
	HAKO_PUBLISH_DELTA_BOUNDARY = 1, /* when the world crosses a multiple of the interval */
} hako_conductor_publish_t;

typedef enum hako_conductor_client_loss {
	HAKO_CLIENT_LOSS_ERROR = 0, /* the federation goes to Error naming the client (default) */
	HAKO_CLIENT_LOSS_DROP = 1,  /* the client's proxy leaves; the others go on */
} hako_conductor_client_loss_t;

typedef enum hako_conductor_auth {
	HAKO_CONDUCTOR_AUTH_CURVE = 0, /* ZeroMQ CURVE, a key pair per node (default) */
	HAKO_CONDUCTOR_AUTH_NONE = 1,  /* no authentication: loopback addresses only */
} hako_conductor_auth_t;

/* One node's conductor file: Hakoniwa's srv-NN.json / cli-NN.json, with hako's own fields (the
 * ZeroMQ addresses and the fault policy) defaulted. */
typedef struct hako_conductor_config {
	char path[HAKO_CONDUCTOR_PATH_MAX];
	hako_conductor_role_t role;
	char node_id[HAKO_CONDUCTOR_ID_MAX];   /* this node ("srv-01" for a server) */
	char server_id[HAKO_CONDUCTOR_ID_MAX]; /* the server node (a client's server_machine_id) */
	size_t client_count;                   /* server: its clients */
	char clients[HAKO_CONDUCTOR_MAX_CLIENTS][HAKO_CONDUCTOR_ID_MAX];
	char domain[HAKO_NAME_MAX]; /* the node's core domain ("" = HAKO_DOMAIN or the node id) */
	hako_time_t delta_usec;     /* delta_time_usec: the world step of every node */
	hako_time_t max_delay_usec; /* max_delay_time_usec: Dmax */
	uint32_t real_sleep_msec;   /* accepted; hako's nodes are event-driven (docs) */
	hako_conductor_publish_t publish_mode;
	hako_time_t publish_interval_usec; /* simtime_publish_interval_usec (delta_boundary) */
	/* hako's own */
	char control_address[HAKO_CONDUCTOR_ADDR_MAX]; /* ZeroMQ: the server's ROUTER */
	char time_address[HAKO_CONDUCTOR_ADDR_MAX];    /* ZeroMQ: the server's PUB */
	uint32_t heartbeat_ms;                         /* 100: a node's time is sent at least so
	                                                  often */
	uint32_t peer_timeout_ms;                      /* 1000: no message for so long = lost */
	hako_conductor_client_loss_t on_client_loss;
	/* "rd_config_path": an RD config of mode "full" whose nodes are named by the conductor's
	 * node ids ("" = none), resolved against the conductor file's folder. Read by RD-Full, an
	 * extension above the conductor (hako/rd_full.h, libhako_rd): a node of such a file is
	 * started with hako_rd_full_node_start; hako_conductor_node_start refuses it. */
	char rd_config_path[HAKO_CONDUCTOR_PATH_MAX];
	/* "auth": "curve" (default) or "none"; "keys_dir": where keys/<id>.key and <peer>.pub
	 * are (default "keys" beside the file), resolved. docs/conductor.md, threat model. */
	hako_conductor_auth_t auth;
	char keys_dir[HAKO_CONDUCTOR_PATH_MAX];
	uint32_t config_hash; /* of what all nodes must agree on (docs/conductor.md) */
} hako_conductor_config_t;

/* Load a node's conductor file; errors as file:line:column: path: what. A configuration that
 * cannot make progress is refused with the rule and the numbers: Dmax < delta, or a publish
 * interval that lets a node's known time lag by more than Dmax - delta. */
HAKO_API int hako_conductor_config_load(const char *path, hako_conductor_config_t **out,
                                        hako_error_t *err);
HAKO_API void hako_conductor_config_free(hako_conductor_config_t *cfg);
/* 0 if the timing fields let every node progress, else HAKO_ECONFIG with why. */
HAKO_API int hako_conductor_check_timing(hako_time_t delta_usec, hako_time_t max_delay_usec,
                                         hako_conductor_publish_t mode, hako_time_t interval_usec,
                                         char *why, size_t why_len);

/* Make the keys of a federation whose nodes' files are cfgs (every node of it, or those that
 * run on this machine): each node's own key pair in its keys_dir (<id>.key, mode 0600; one that
 * exists is kept) and the public key of every node in every node's keys_dir (<id>.pub). The
 * folder of a node then holds all that node needs; copy it to the node's machine. *created:
 * the pairs made. */
HAKO_API int hako_conductor_keygen(const hako_conductor_config_t *const *cfgs, size_t n,
                                   int *created, hako_error_t *err);

/* A running node: its proxies in the domain, its ZeroMQ sockets, its threads. */
typedef struct hako_conductor_node hako_conductor_node_t;

/* Link the domain dom (created by this process, its master running with cfg's delta and Dmax)
 * into the federation: register the proxies (a client's server, a server's clients) and start
 * the node's threads. The domain cannot run before every proxy acknowledged its start, so a
 * server does not start before its clients joined. */
HAKO_API int hako_conductor_node_start(const hako_conductor_config_t *cfg, hako_domain_t *dom,
                                       hako_conductor_node_t **out, hako_error_t *err);
/* A client whose server restarted stops and resets its domain and joins the new server: at once
 * (the default), or, with hold on, only once hako_conductor_node_rejoin is called. hako-launch
 * holds it to start the node's processes again first, as a node joins only once its assets are
 * ready. No effect on a server. */
HAKO_API void hako_conductor_node_hold_rejoin(hako_conductor_node_t *node, int hold);
HAKO_API void hako_conductor_node_rejoin(hako_conductor_node_t *node);

/* Leave the federation (peers are told), unregister the proxies, free. Accepts NULL. */
HAKO_API void hako_conductor_node_stop(hako_conductor_node_t *node);

typedef struct hako_conductor_peer_stats {
	char node_id[HAKO_CONDUCTOR_ID_MAX];
	int joined;
	int connected;               /* heard from within peer_timeout_ms */
	hako_time_t known_time;      /* the peer's last world time received */
	hako_time_t last_heard_usec; /* age of the last message */
	/* own world time - the peer's world time as known here, sampled every time message */
	uint64_t samples;
	hako_time_t drift_p50_usec, drift_p95_usec, drift_max_usec;
	hako_time_t age_p50_usec, age_max_usec; /* message age on arrival (sender's clock) */
	uint64_t messages_in, messages_out, garbage;
	/* The peer's processes after the first one this node saw: a client counts its server's
	 * restarts (it stops, resets and joins the new one), a server its clients' (rejoined). */
	uint32_t restarts;
} hako_conductor_peer_stats_t;

HAKO_API int hako_conductor_node_stats(hako_conductor_node_t *node,
                                       hako_conductor_peer_stats_t *out, int max, int *count);

/* The status a node writes into its own domain: channel (HAKO_CONDUCTOR_STATUS_ROBOT, 0), JSON
 * text, rewritten every 200 ms and at once after a reset. The contract between the node and
 * the programs that show it (hako-conductor status, hako-cmd watch, hako-viewer): they read it
 * with hako_conductor_status_read, never by parsing the channel themselves. The JSON keys are
 * the fields' names ("node", "role", "server", "dmax_usec", "world_time_usec",
 * "garbage_unknown", "auth", "auth_refused", "peers": [{"id", "joined", "connected",
 * "known_time_usec", "last_heard_usec", "samples", "drift_p50_usec", "drift_p95_usec",
 * "drift_max_usec", "age_p50_usec", "age_max_usec", "in", "out", "garbage", "restarts"}]),
 * what hako-viewer's page reads too (docs/conductor.md, "Status"). */
#define HAKO_CONDUCTOR_STATUS_ROBOT "_hako_conductor"
#define HAKO_CONDUCTOR_STATUS_BYTES 16384

typedef struct hako_conductor_status {
	char node_id[HAKO_CONDUCTOR_ID_MAX];
	hako_conductor_role_t role;
	char server_id[HAKO_CONDUCTOR_ID_MAX];
	hako_time_t dmax_usec;
	hako_time_t world_time_usec;
	uint64_t garbage_unknown; /* frames from senders that are no peer of the node */
	hako_conductor_auth_t auth;
	uint64_t auth_refused; /* connections refused for their key */
	int peer_count;
	hako_conductor_peer_stats_t peers[HAKO_CONDUCTOR_MAX_CLIENTS];
	uint64_t seq; /* the channel's write sequence: another value, another status */
} hako_conductor_status_t;

/* The status of the node linked to dom. 0; HAKO_ENOENT: no conductor node linked to it;
 * HAKO_EAGAIN: not written yet (right after a reset, the node writes it again at once);
 * HAKO_EPROTO: not a status this library reads. */
HAKO_API int hako_conductor_status_read(hako_domain_t *dom, hako_conductor_status_t *out);
/* st as the JSON text the node writes (NUL-terminated); HAKO_ETOOBIG if len is too small. */
HAKO_API int hako_conductor_status_format(const hako_conductor_status_t *st, char *buf, size_t len,
                                          size_t *out_len);

/* Write a trace of the node's samples (CSV: wall_ns, own world, peer, peer world known,
 * message age) to path until the node stops. */
HAKO_API int hako_conductor_node_trace(hako_conductor_node_t *node, const char *path);

#ifdef __cplusplus
}
#endif
#endif
