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
 * loader does: per connection "epoch_validation" (bool, default false) and
 * "endpoints_config_path". "time_source_type" is optional and one of Hakoniwa's time source
 * names: "real", "virtual", "hakoniwa", "hakoniwa_poll", "hakoniwa_callback" (stored; the
 * daemon's options choose the clock).
 *
 * The node's endpoints come from the first of: the loader's container_path, the file's
 * "endpoints_config_path" (a container file), the file's inline "endpoints" block (the
 * published schema's: the array of a container file, [{nodeId, endpoints: [{id, mode,
 * config_path}]}], checked as that file is, errors pointing into the bridge file). A file with
 * both endpoints_config_path and "endpoints" is refused (HAKO_ECONFIG); with a container_path,
 * neither is opened.
 *
 * Paths are relative to the bridge file's folder.
 */
#ifndef HAKO_BRIDGE_CONFIG_H
#define HAKO_BRIDGE_CONFIG_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/endpoint_config.h"
#include "hako/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_BRIDGE_ID_MAX HAKO_NAME_MAX /* ids: 1..127 chars (the old name of HAKO_NAME_MAX) */

typedef enum hako_bridge_policy_type {
	HAKO_BRIDGE_IMMEDIATE = 0,
	HAKO_BRIDGE_THROTTLE = 1,
	HAKO_BRIDGE_TICKER = 2,
} hako_bridge_policy_type_t;

typedef struct hako_bridge_policy_cfg {
	char id[HAKO_NAME_MAX];
	hako_bridge_policy_type_t type;
	int atomic;           /* immediate only */
	uint32_t interval_ms; /* >= 1 for throttle and ticker; 0 for immediate */
} hako_bridge_policy_cfg_t;

typedef struct hako_bridge_pdu_ref {
	char id[HAKO_NAME_MAX];
	char robot[HAKO_NAME_MAX];
	char pdu[HAKO_NAME_MAX];
} hako_bridge_pdu_ref_t;

typedef struct hako_bridge_group_cfg {
	char id[HAKO_NAME_MAX];
	size_t count;
	hako_bridge_pdu_ref_t *pdus; /* in file order (the order of an atomic send) */
} hako_bridge_group_cfg_t;

typedef struct hako_bridge_transfer_cfg {
	size_t group;  /* index into groups */
	size_t policy; /* index into policies */
} hako_bridge_transfer_cfg_t;

typedef struct hako_bridge_connection_cfg {
	char id[HAKO_NAME_MAX];
	char node_id[HAKO_NAME_MAX];
	char source[HAKO_NAME_MAX]; /* endpoint id */
	size_t dest_count;
	char (*destinations)[HAKO_NAME_MAX];
	size_t transfer_count;
	hako_bridge_transfer_cfg_t *transfers;
	int epoch_validation;
} hako_bridge_connection_cfg_t;

typedef struct hako_bridge_wire_link {
	char from[HAKO_NAME_MAX];
	char to[HAKO_NAME_MAX];
} hako_bridge_wire_link_t;

typedef struct hako_bridge_config {
	char path[HAKO_ENDPOINT_PATH_MAX];
	int strict;               /* loaded with HAKO_BRIDGE_LOAD_STRICT */
	char node[HAKO_NAME_MAX]; /* the node loaded for */
	char endpoints_config_path[HAKO_ENDPOINT_PATH_MAX]; /* resolved; "" when absent */
	char time_source_type[64]; /* "" when absent; else one of Hakoniwa's names (above) */
	size_t policy_count;
	hako_bridge_policy_cfg_t *policies;
	size_t node_count;
	char (*nodes)[HAKO_NAME_MAX];
	size_t wire_link_count;
	hako_bridge_wire_link_t *wire_links;
	size_t group_count;
	hako_bridge_group_cfg_t *groups;
	/* Only the connections whose nodeId is `node` (all connections are checked). */
	size_t connection_count;
	hako_bridge_connection_cfg_t *connections;
	/* The node's endpoints, loaded for `node`; never NULL on success. Its path is the
	 * container file's, or the bridge file's for the inline "endpoints" block. */
	hako_endpoint_container_t *endpoints;
} hako_bridge_config_t;

/* Load the bridge file for `node`. container_path, when not NULL, takes the place of the file's
 * endpoints_config_path or inline "endpoints" block. Endpoint references are checked against
 * the node's endpoints; a file without any source of them (and no container_path) is
 * HAKO_ECONFIG ("endpoints_config_path: missing"). A node that is not in "nodes" (or not in the
 * container) is HAKO_ECONFIG.
 *
 * Returns 0; HAKO_ECONFIG (a value of any of the files); HAKO_ENOENT, HAKO_EIO (a file cannot
 * be read: the bridge file, the container file, an endpoint file or a file it names);
 * HAKO_ENAMETOOLONG, passed through from the endpoint loaders (a path or node id too long for
 * the container); HAKO_ENOMEM; HAKO_EINVAL (NULL arguments, a path of HAKO_ENDPOINT_PATH_MAX
 * bytes or more, a node id empty or of HAKO_NAME_MAX bytes or more). *out is NULL on
 * error. */
HAKO_API int hako_bridge_config_load(const char *path, const char *node, const char *container_path,
                                     hako_bridge_config_t **out, hako_error_t *err);

/* hako_bridge_config_load loads a file as Hakoniwa's bridge does where hako would be
 * stricter, and logs a warning with the position for each such place: an unknown key
 * (Hakoniwa's files carry some, "time_source_config" for one) is ignored, and a group member
 * that is not in the source endpoint's pdudef is kept (the bridge skips it, or the atomic
 * transfer it is in, when it starts). With HAKO_BRIDGE_LOAD_STRICT both are errors. A
 * connection without destinations (a monitor of its source) is valid either way. */
#define HAKO_BRIDGE_LOAD_STRICT 1u
HAKO_API int hako_bridge_config_load_flags(const char *path, const char *node,
                                           const char *container_path, unsigned flags,
                                           hako_bridge_config_t **out, hako_error_t *err);
HAKO_API void hako_bridge_config_free(hako_bridge_config_t *cfg);

#ifdef __cplusplus
}
#endif
#endif
