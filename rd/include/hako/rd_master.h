/* RD-Full: the commit authority of runtime delegation across nodes.
 *
 * In a federation (docs/conductor.md) each node is its own domain, and the conductor's server
 * node is the authority over every EU: it owns the EU's state (ExecutionUnitRuntimeStatus),
 * accepts or refuses a hand-off request, and fixes epoch N+1 at a commit point, a world time
 * every node will reach and none has reached when it learns it. This is that authority's
 * logic, without I/O: the conductor feeds it requests, the nodes' world times, their
 * acknowledgements, activations and losses, and sends what it decides (docs/rd.md, "RD-Full").
 *
 * Why a commit point is announced before any node reaches it: the conductor holds the
 * server's world (a barrier member) from before it reads the world time b of a request until
 * every node acknowledged the announcement (hako_rd_master_barrier: the world stays at b, or
 * one step further, an advance already under way), and every client stays within Dmax of the
 * server's last published time (the conductor's proxies). The commit point is b + Dmax + 2
 * steps: no node gets there before the barrier is lifted, and the barrier is lifted once every
 * live node acknowledged the announcement. A commit the authority decides by itself (a restart
 * after a node was lost, in hako_rd_master_tick) is held only after it: b + 2 Dmax.
 *
 * Why there are never two owners: the old owner stops at the commit point C; the new owner
 * activates only after C and not after C + timeout; the authority takes the EU back (or gives
 * it elsewhere) only once the new owner's node reported a world time past C + timeout + Dmax,
 * which it does only after its assets are all past C + timeout, and after relaying any
 * activation they wrote before (the node sends its relays and its times in one ordered
 * stream). So an activation and a reclaim of the same hand-off never both happen.
 *
 * Not thread-safe: one thread (the conductor's network thread) drives it.
 */
#ifndef HAKO_RD_MASTER_H
#define HAKO_RD_MASTER_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/domain.h"
#include "hako/rd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hako_rd_master hako_rd_master_t;

/* What the authority says about one EU; every change gets a higher seq (per EU). */
typedef struct hako_rd_commit {
	uint32_t eu;
	uint32_t seq;
	hako_rd_status_t status; /* STABLE or RELEASING (ACTIVATING is a node's own step) */
	uint8_t epoch;
	uint8_t curr;            /* the owner; RELEASING: the node handing over (0: none alive) */
	uint8_t next;            /* RELEASING: the node taking over; STABLE: = curr */
	hako_time_t commit_usec; /* RELEASING: the commit point; -1 otherwise */
	/* RELEASING from the last committed context (the owner was lost): the context to restore
	 * comes from the authority, not from the owner. */
	int from_stored;
} hako_rd_commit_t;

/* The authority over cfg's EUs for a federation with world step delta and Dmax (the
 * conductor's delta_time_usec and max_delay_time_usec). Every node of cfg starts alive; the
 * initial owners own their EUs at epoch 0. */
HAKO_API int hako_rd_master_create(const hako_rd_config_t *cfg, hako_time_t delta_usec,
                                   hako_time_t dmax_usec, hako_rd_master_t **out);
HAKO_API void hako_rd_master_destroy(hako_rd_master_t *m);

/* The EU's state now. HAKO_EINVAL for an unknown EU. */
HAKO_API int hako_rd_master_get(const hako_rd_master_t *m, uint32_t eu, hako_rd_commit_t *out);

/* Ask for EU to move to node `to` at the server's world time now (an ExMonitor, hako-rd move,
 * an owner's trigger). The caller holds the server's world from before it read now until the
 * barrier below takes over. 0: committed (hako_rd_master_get has the announcement); otherwise
 * refused, why says the reason: HAKO_EINVAL (unknown EU or node, not a candidate), HAKO_EEXIST
 * (it is there already), HAKO_EBUSY (a hand-off of this EU is in progress), HAKO_ECRASHED
 * (node `to` or the owner is lost). */
HAKO_API int hako_rd_master_request(hako_rd_master_t *m, uint32_t eu, uint8_t to, hako_time_t now,
                                    char *why, size_t why_len);

/* Node `node` has the announcement seq of EU in its domain. */
HAKO_API void hako_rd_master_ack(hako_rd_master_t *m, uint8_t node, uint32_t eu, uint32_t seq);

/* The world time the server's world must not pass (the lowest b of the commits not yet
 * acknowledged by every live node), or -1 when nothing holds the world. A barrier member (a
 * proxy) at b - Dmax holds it there. */
HAKO_API hako_time_t hako_rd_master_barrier(const hako_rd_master_t *m);

/* Node `node` activated EU at epoch (its executor wrote Activating). 0 (the EU is Stable at
 * the node now), or HAKO_ESTATE if that is not the hand-off in progress (a late or duplicate
 * report: ignored). */
HAKO_API int hako_rd_master_activated(hako_rd_master_t *m, uint8_t node, uint32_t eu,
                                      uint8_t epoch);

/* The owner released: its context of the hand-off (epoch) is stored as the EU's last committed
 * context (a node that restores after the owner is lost gets it). HAKO_ESTATE if epoch is not
 * the hand-off in progress; HAKO_ENOMEM. */
HAKO_API int hako_rd_master_store_context(hako_rd_master_t *m, uint32_t eu, uint8_t epoch,
                                          const void *pdu, size_t len);
/* The owner (node) checkpointed its EU (hako_rd_checkpoint, relayed by its conductor): the
 * context (epoch: the one of its ownership) becomes the EU's last committed context, so that a
 * restart after the owner is lost runs again only the steps after it. HAKO_ESTATE if node does
 * not own the EU at that epoch (a late checkpoint of an ownership that ended), or the
 * owner's hand-off context of the release under way was stored already; HAKO_ENOMEM. */
HAKO_API int hako_rd_master_store_checkpoint(hako_rd_master_t *m, uint32_t eu, uint8_t node,
                                             uint8_t epoch, const void *pdu, size_t len);
/* The last committed context PDU of EU (NULL, 0 if none: the initial owner's start). */
HAKO_API const void *hako_rd_master_context(const hako_rd_master_t *m, uint32_t eu, size_t *len);

/* A node's world time, as its conductor reported it (after everything it relayed before). */
HAKO_API void hako_rd_master_node_time(hako_rd_master_t *m, uint8_t node, hako_time_t world);
/* A node is lost (its conductor stopped answering) or back. */
HAKO_API void hako_rd_master_node_lost(hako_rd_master_t *m, uint8_t node, hako_time_t now);
HAKO_API void hako_rd_master_node_back(hako_rd_master_t *m, uint8_t node);

/* Take the decisions due at the server's world time now: hand-offs whose new owner did not
 * activate in time go back to the old owner (or, if it is lost, to another live candidate from
 * the last committed context); EUs whose owner was lost go to a live candidate. Puts the ids of
 * the EUs that changed in changed (up to max; the count is returned). */
HAKO_API int hako_rd_master_tick(hako_rd_master_t *m, hako_time_t now, uint32_t *changed, int max);
/* The same with the server's world held from before it read now (hako_rd_master_request's
 * case): the commit points of what it decides are Dmax nearer (now + Dmax + 2 steps). */
HAKO_API int hako_rd_master_tick_held(hako_rd_master_t *m, hako_time_t now, uint32_t *changed,
                                      int max);
/* The earliest world time at which hako_rd_master_tick has the EU of a lost node to give to
 * another (its owner or its new owner lost that long ago), or -1 if none waits: the caller
 * ticks then, not at its next round. */
HAKO_API hako_time_t hako_rd_master_next_due(const hako_rd_master_t *m);

/* ---- The conductor's hands in a node's domain ----
 *
 * Every node's conductor writes the authority's announcements into its own domain's status and
 * context channels of each EU (the executors, hako_rd_node_t in full mode, read them there),
 * and relays what its executors write: an owner's context at its release, a new owner's
 * activation. */

typedef struct hako_rd_mirror hako_rd_mirror_t;

/* Open (creating them if needed) the status and context channels of cfg's EUs in dom, for
 * node node_id (the conductor's node; 0 for a node that hosts no EU and only shows the state). */
HAKO_API int hako_rd_mirror_open(hako_domain_t *dom, const hako_rd_config_t *cfg, uint8_t node_id,
                                 hako_rd_mirror_t **out);
HAKO_API void hako_rd_mirror_close(hako_rd_mirror_t *mr);

/* Write an announcement: for RELEASING, first a context that announces the commit point (no
 * owner's bytes yet), then the status; for STABLE, the status. */
HAKO_API int hako_rd_mirror_apply(hako_rd_mirror_t *mr, const hako_rd_commit_t *c);

/* Write a context PDU received from the authority (an owner's, relayed to the new owner's
 * node; or the last committed one for a restart), after checking it: HAKO_EPROTO if it is not
 * a context PDU of this config. With epoch >= 0 and release_usec >= 0 they replace the PDU's
 * (a restart from the last committed context happens at a new epoch and commit point, and its
 * context then names no owner: node 0, the authority);
 * pdu == NULL writes an empty context (the initial state, model step 0). */
HAKO_API int hako_rd_mirror_put_context(hako_rd_mirror_t *mr, uint32_t eu, const void *pdu,
                                        size_t len, int epoch, hako_time_t release_usec);

/* What this node's executors wrote since the last scan. */
typedef struct hako_rd_relay {
	uint32_t eu;
	int kind; /* HAKO_RD_RELAY_* */
	uint8_t epoch;
	const void *pdu; /* CONTEXT: the context PDU (valid until the next call on mr) */
	size_t len;
} hako_rd_relay_t;

enum {
	HAKO_RD_RELAY_CONTEXT = 1,   /* the owner released: its context of the hand-off */
	HAKO_RD_RELAY_ACTIVATED = 2, /* this node activated the EU at epoch */
};

/* Look for new writes of this node's executors; calls fn for each (in EU order). */
HAKO_API int hako_rd_mirror_scan(hako_rd_mirror_t *mr,
                                 void (*fn)(void *arg, const hako_rd_relay_t *r), void *arg);

#ifdef __cplusplus
}
#endif
#endif
