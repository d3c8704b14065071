/* The bridge file (Hakoniwa's bridge JSON, version "2.0.0", so an existing bridge config loads
 * unchanged): transfer policies, nodes, the endpoint container, wire links, PDU key groups and
 * connections. Schema: configs/schema/bridge.schema.json.
 *
 * Every reference is checked at load, with file:line:column of the offending value: a
 * connection's policy and group ids, its source and destination endpoint ids (in the container
 * file, for the connection's node), each group member's robot and PDU name (in the source
 * endpoint's pdudef, when it has one: a bridge forwards PDUs of the pdudef's size), duplicate
 * ids (policies, groups, members of a group, connections, nodes), a connection whose nodeId is
 * not a node, an interval missing (throttle, ticker) or present (immediate), atomic on anything
 * but immediate. Unknown keys are errors. Accepted beyond the published schema, as Hakoniwa's
 * loader does: per connection "epoch_validation" (bool, default false) and top-level
 * "time_source_type" (stored; the daemon's options choose the clock).
 *
 * Paths are relative to the bridge file's folder.
 */
#ifndef HAKO_BRIDGE_CONFIG_H
#define HAKO_BRIDGE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "hako/endpoint_config.h"
#include "hako/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_BRIDGE_ID_MAX 128 /* ids: 1..127 chars */

typedef enum hako_bridge_policy_type {
	HAKO_BRIDGE_IMMEDIATE = 0,
	HAKO_BRIDGE_THROTTLE = 1,
	HAKO_BRIDGE_TICKER = 2,
} hako_bridge_policy_type_t;

typedef struct hako_bridge_policy_cfg {
	char id[HAKO_BRIDGE_ID_MAX];
	hako_bridge_policy_type_t type;
	int atomic;           /* immediate only */
	uint32_t interval_ms; /* >= 1 for throttle and ticker; 0 for immediate */
} hako_bridge_policy_cfg_t;

typedef struct hako_bridge_pdu_ref {
	char id[HAKO_BRIDGE_ID_MAX];
	char robot[HAKO_BRIDGE_ID_MAX];
	char pdu[HAKO_BRIDGE_ID_MAX];
} hako_bridge_pdu_ref_t;

typedef struct hako_bridge_group_cfg {
	char id[HAKO_BRIDGE_ID_MAX];
	size_t count;
	hako_bridge_pdu_ref_t *pdus; /* in file order (the order of an atomic send) */
} hako_bridge_group_cfg_t;

typedef struct hako_bridge_transfer_cfg {
	size_t group;  /* index into groups */
	size_t policy; /* index into policies */
} hako_bridge_transfer_cfg_t;

typedef struct hako_bridge_connection_cfg {
	char id[HAKO_BRIDGE_ID_MAX];
	char node_id[HAKO_BRIDGE_ID_MAX];
	char source[HAKO_BRIDGE_ID_MAX]; /* endpoint id */
	size_t dest_count;
	char (*destinations)[HAKO_BRIDGE_ID_MAX];
	size_t transfer_count;
	hako_bridge_transfer_cfg_t *transfers;
	int epoch_validation;
} hako_bridge_connection_cfg_t;

typedef struct hako_bridge_wire_link {
	char from[HAKO_BRIDGE_ID_MAX];
	char to[HAKO_BRIDGE_ID_MAX];
} hako_bridge_wire_link_t;

typedef struct hako_bridge_config {
	char path[HAKO_ENDPOINT_PATH_MAX];
	char node[HAKO_BRIDGE_ID_MAX];                      /* the node loaded for */
	char endpoints_config_path[HAKO_ENDPOINT_PATH_MAX]; /* resolved; "" when absent */
	char time_source_type[64];                          /* "" when absent */
	size_t policy_count;
	hako_bridge_policy_cfg_t *policies;
	size_t node_count;
	char (*nodes)[HAKO_BRIDGE_ID_MAX];
	size_t wire_link_count;
	hako_bridge_wire_link_t *wire_links;
	size_t group_count;
	hako_bridge_group_cfg_t *groups;
	/* Only the connections whose nodeId is `node` (all connections are checked). */
	size_t connection_count;
	hako_bridge_connection_cfg_t *connections;
	/* The node's endpoints (the container file loaded for `node`), NULL when the file has no
	 * endpoints_config_path and a container path was not given to the loader. */
	hako_endpoint_container_t *endpoints;
} hako_bridge_config_t;

/* Load the bridge file for `node`. container_path overrides endpoints_config_path (NULL = use
 * the file's). Endpoint references are checked against the container; without any container
 * file that is HAKO_ECONFIG ("endpoints_config_path: missing"). Returns 0, HAKO_ECONFIG,
 * HAKO_ENOENT, HAKO_EIO, HAKO_ENOMEM, HAKO_EINVAL; *out NULL on error. A node that is not in
 * "nodes" is HAKO_ECONFIG. */
int hako_bridge_config_load(const char *path, const char *node, const char *container_path,
                            hako_bridge_config_t **out, hako_error_t *err);
void hako_bridge_config_free(hako_bridge_config_t *cfg);

#ifdef __cplusplus
}
#endif
#endif
