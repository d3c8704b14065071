/* RD-Full: runtime delegation across the nodes of a federation, as an extension of the
 * conductor (hako/conductor_ext.h). The server node runs the commit authority
 * (hako/rd_master.h) and holds its domain's world with a barrier member while a commit is not
 * acknowledged; every node writes the authority's state of each EU into its own domain and
 * relays what its executors write there (an owner's context, an activation) on the conductor's
 * ordered path, so the server has every activation of a node before any later world time of
 * that node. docs/rd.md, "RD-Full".
 *
 * Its messages are the conductor's extension messages with id HAKO_RD_FULL_EXT_ID: request,
 * reply, state, acknowledgement, context (with the context PDU as the second part),
 * activated. */
#ifndef HAKO_RD_FULL_H
#define HAKO_RD_FULL_H

#include <stddef.h>
#include <stdint.h>

#include "hako/api.h"
#include "hako/conductor.h"
#include "hako/conductor_ext.h"
#include "hako/rd_master.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_RD_FULL_EXT_ID 1

/* The extension, for hako_conductor_node_start_ext. It reads the node's
 * cfg->rd_config_path (an RD config of mode "full" whose node names are the conductor's node
 * ids); without one it only answers requests, with a refusal. */
HAKO_API const hako_conductor_ext_ops_t *hako_rd_full_ext(void);

/* Start a conductor node with RD-Full: what a program that runs federation nodes calls
 * (hako-conductor, hako-launch), with or without an rd_config_path. */
HAKO_API int hako_rd_full_node_start(const hako_conductor_config_t *cfg, hako_domain_t *dom,
                                     hako_conductor_node_t **out, hako_error_t *err);

/* Ask the server of cfg's federation (any node's conductor file names it) to move EU `eu` to
 * the RD node `to` (hako-rd move, an ExMonitor). 0: committed (*out, if not NULL, has the
 * epoch and the commit point); a HAKO_E* code and why otherwise (the server's refusal: a
 * hand-off in progress, not a candidate, a lost node, no RD-Full there...; HAKO_ETIMEDOUT: no
 * answer within timeout_ms). */
HAKO_API int hako_rd_full_request(const hako_conductor_config_t *cfg, uint32_t eu, uint8_t to,
                                  int timeout_ms, hako_rd_commit_t *out, char *why, size_t why_len);

/* The same on a connection of the caller's, for a requester that asks more than once (an
 * ExMonitor). hako_rd_full_request keeps one too, per process, for the last config it was
 * given (a connection costs more than the request itself: a ZeroMQ context and a CURVE
 * handshake, bench/README.md); a call while another thread's is in flight, or in a forked
 * child, opens its own, and a request without an answer drops it. One thread at a time per
 * requester. */
typedef struct hako_rd_full_requester hako_rd_full_requester_t;
HAKO_API int hako_rd_full_requester_open(const hako_conductor_config_t *cfg,
                                         hako_rd_full_requester_t **out);
HAKO_API int hako_rd_full_requester_ask(hako_rd_full_requester_t *rq, uint32_t eu, uint8_t to,
                                        int timeout_ms, hako_rd_commit_t *out, char *why,
                                        size_t why_len);
HAKO_API void hako_rd_full_requester_close(hako_rd_full_requester_t *rq);

#ifdef __cplusplus
}
#endif
#endif
