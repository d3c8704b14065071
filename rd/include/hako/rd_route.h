/* RD-Full: a node's bridge following the ownership of the EUs (ARCHITECTURE section 7: "bridges
 * are re-routed at the commit point"). The router reads the EUs' status in the node's domain
 * (what the conductor wrote there) and the node's world time, and moves the bridge's
 * connections with them:
 *
 *  - A connection follows EU X when every PDU of its transfer groups is one of X's writes
 *    (robot and PDU name of the RD config). Such a connection must have epoch_validation on,
 *    and may not carry PDUs of another EU or of none: the epoch is the connection's, so those
 *    would be dropped. Both are refused at create, naming the connection.
 *  - Its epoch is the EU's epoch at this node's world time: before a commit point C of epoch
 *    N+1 it is N, and a PDU of N+1 is accepted too (the new owner may be ahead of this node by
 *    up to 2 Dmax) and moves the connection to N+1 (hako_bridge_follow_epoch); from C on only
 *    N+1 passes. A PDU of an older epoch is dropped and counted (dropped_epoch): no PDU of
 *    epoch N is delivered after this node saw the commit of N+1, nor after the first of N+1.
 *  - A connection whose source is local to the node (an shm endpoint) on a node that is one
 *    of X's candidates carries what X's owner wrote here: it is active only
 *    while this node owns X (from the activation's commit point until the next one), so a
 *    standby's stale copy never leaves the node. A network source, or a node that is not a
 *    candidate (a relay), is only epoch-checked.
 *  - A reset of the domain starts the epochs again: the connections are set (not followed) to
 *    the status's epoch.
 *
 * Not thread-safe: one thread calls update (the bridge daemon's loop, every tick). The bridge
 * calls it makes are thread-safe against arrivals. */
#ifndef HAKO_RD_ROUTE_H
#define HAKO_RD_ROUTE_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/bridge.h"
#include "hako/bridge_config.h"
#include "hako/domain.h"
#include "hako/endpoint.h"
#include "hako/error.h"
#include "hako/rd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hako_rd_router hako_rd_router_t;

/* Follow the EUs of rd (mode "full" or "light") in dom, as node node_id (an RD node id, or 0
 * for a node that is no EU's candidate), with the connections of bcfg running in b over eps.
 * dom, rd, bcfg, b and eps are not owned and must outlive the router. Errors: HAKO_EINVAL
 * (NULL, node_id not in rd), HAKO_ECONFIG (a connection as above; err names the bridge file
 * and the connection), HAKO_ENOMEM, and those of hako_rd_node_open. Connections that carry no
 * EU's PDUs are left alone. */
HAKO_API int hako_rd_router_create(hako_domain_t *dom, const hako_rd_config_t *rd, uint8_t node_id,
                                   const hako_bridge_config_t *bcfg, hako_bridge_t *b,
                                   hako_endpoint_set_t *eps, hako_rd_router_t **out,
                                   hako_error_t *err);
HAKO_API void hako_rd_router_destroy(hako_rd_router_t *r);

/* Apply the EUs' state at the domain's world time now. Returns the number of connections whose
 * epoch or activity changed (>= 0), or a negative hako error. Each change is logged (info). */
HAKO_API int hako_rd_router_update(hako_rd_router_t *r);
/* The same at a given world time of this node (a bridge on its own clock, a test). */
HAKO_API int hako_rd_router_update_at(hako_rd_router_t *r, hako_time_t world);

typedef struct hako_rd_route {
	char connection[HAKO_NAME_MAX];
	char eu[HAKO_NAME_MAX];
	int gated;     /* active only while this node owns the EU */
	uint8_t epoch; /* the connection's epoch now */
	int active;
	uint64_t changes; /* epoch or activity changes applied so far */
} hako_rd_route_t;

/* The connections that follow an EU, in bridge-file order. get: HAKO_ENOENT past the end. */
HAKO_API size_t hako_rd_router_count(const hako_rd_router_t *r);
HAKO_API int hako_rd_router_get(const hako_rd_router_t *r, size_t i, hako_rd_route_t *out);

#ifdef __cplusplus
}
#endif
#endif
