/* Runtime delegation, RD-Light: one execution unit (EU) has instances in several processes of
 * one domain; exactly one of them, the owner, steps the model and writes the EU's PDUs, and
 * hands the EU over with its context. World time decides each hand-off, so no lock is needed
 * between processes and there is never more than one owner; epochs (in byte 20 of every PDU
 * the owner writes) fence off anything the old owner still writes. The control-plane PDUs, the
 * protocol and why it holds, the trace `hako-rd check` verifies: docs/rd.md.
 *
 * World times (`now`): the time the asset's clock has once the current step is done, i.e.
 * hako_member_time() + hako_member_delta() after hako_member_step_wait() returned. Functions
 * taking `uint32_t eu` take the EU's id from the config. A node handle is not thread-safe: one
 * thread per handle.
 */
#ifndef HAKO_RD_H
#define HAKO_RD_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/domain.h"
#include "hako/error.h"
#include "hako/msg.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_RD_MAX_EUS    65536 /* a bound; the EU table is sized to the file's count */
#define HAKO_RD_MAX_NODES  32
#define HAKO_RD_MAX_PDUS   16 /* PDUs one EU writes */
#define HAKO_RD_GRID_LINES 15 /* grid trigger: boundaries along one axis (16 cells) */

typedef enum hako_rd_status {
	HAKO_RD_OWNER_STABLE = 0,
	HAKO_RD_OWNER_RELEASING = 1,
	HAKO_RD_OWNER_ACTIVATING = 2,
} hako_rd_status_t;

/* ---- Config ---- */

typedef struct hako_rd_pdu_ref {
	char robot[HAKO_NAME_MAX];
	char name[HAKO_NAME_MAX];     /* PDU name in the pdudef */
	char type[HAKO_MSG_FULL_MAX]; /* resolved from the pdudef, e.g. "geometry_msgs/Twist" */
	int32_t channel_id;           /* resolved from the pdudef */
	uint32_t pdu_size;            /* resolved from the pdudef */
} hako_rd_pdu_ref_t;

typedef struct hako_rd_eu_config {
	uint32_t id;
	char name[HAKO_NAME_MAX];
	char robot[HAKO_NAME_MAX];
	size_t write_count;
	hako_rd_pdu_ref_t writes[HAKO_RD_MAX_PDUS]; /* the PDUs only the owner writes */
	size_t candidate_count;
	uint8_t candidates[HAKO_RD_MAX_NODES]; /* node ids that may own the EU */
	uint8_t initial_owner;
	uint32_t max_context_bytes; /* application bytes, RD header excluded */
	hako_rd_pdu_ref_t status;   /* hako_msgs/ExecutionUnitRuntimeStatus */
	hako_rd_pdu_ref_t context;  /* hako_msgs/ExecutionUnitRuntimeContext */
} hako_rd_eu_config_t;

/* The trigger policy (ExMonitor of RD-Light), interpreted by the application; the RD library
 * only validates it and offers hako_rd_trigger_boundary() and hako_rd_trigger_grid(). */
typedef struct hako_rd_trigger {
	char type[32];     /* "manual", "boundary", "grid" or "timetable" */
	char axis[8];      /* boundary: the state variable compared, e.g. "x" */
	double boundary;   /* boundary: where ownership changes (1.0 m in the forklift demo) */
	double v_max;      /* boundary, grid: maximum speed along axis (along x and y) (m/s) */
	double hysteresis; /* boundary, grid: distance an owner moves before it may release (m) */
	hako_time_t cooldown_usec; /* minimum world time between two releases of one EU */
	uint8_t low_owner;         /* boundary: node owning the EU while axis < boundary */
	uint8_t high_owner;        /* boundary: node owning the EU while axis >= boundary */
	hako_time_t period_usec;   /* timetable: the EU moves to its next candidate every period
	                              of world time (RD-Full: hako-rd monitor asks for it) */
	/* grid: cells over x and y split at the boundaries grid_x (grid_nx of them, increasing)
	 * and grid_y; cell (i, j) is x in [grid_x[i - 1], grid_x[i]), y likewise (the outer cells
	 * unbounded), owned by node grid_owner[j][i]. */
	size_t grid_nx, grid_ny;
	double grid_x[HAKO_RD_GRID_LINES];
	double grid_y[HAKO_RD_GRID_LINES];
	uint8_t grid_owner[HAKO_RD_GRID_LINES + 1][HAKO_RD_GRID_LINES + 1];
} hako_rd_trigger_t;

typedef struct hako_rd_config {
	char path[512];
	char pdudef_path[512]; /* resolved relative to the RD config */
	uint32_t config_hash;  /* FNV-1a of the file bytes: both sides must load the same file */
	size_t node_count;
	uint8_t node_ids[HAKO_RD_MAX_NODES];
	char node_names[HAKO_RD_MAX_NODES][HAKO_NAME_MAX];
	size_t eu_count;
	hako_rd_eu_config_t *eus; /* eu_count of them (hako_rd_config_free frees them) */
	hako_rd_trigger_t trigger;
	hako_time_t handoff_timeout_usec; /* world time a standby has to activate */
	int mode;                         /* HAKO_RD_MODE_* */
} hako_rd_config_t;

enum {
	HAKO_RD_MODE_LIGHT = 0, /* one domain: the owners hand over themselves (RD-Light) */
	HAKO_RD_MODE_FULL = 1,  /* a federation: the conductor's server commits (RD-Full) */
};

/* Load and validate an RD config JSON (format: docs/rd.md, schema configs/schema/rd.schema.json).
 * Errors: HAKO_ENOENT, HAKO_ECONFIG with err = file:line:column: path: what. */
HAKO_API int hako_rd_config_load(const char *path, hako_rd_config_t **out, hako_error_t *err);
HAKO_API void hako_rd_config_free(hako_rd_config_t *cfg);
HAKO_API const hako_rd_eu_config_t *hako_rd_config_eu(const hako_rd_config_t *cfg,
                                                      const char *name);

/* The boundary trigger of the forklift demo (ExMonitor policy of RD-Light). The EU belongs to
 * low_owner while the position is below the boundary and to high_owner above it. Because a
 * hand-off completes only when the next owner's clock gets there, up to Dmax of world time later,
 * an owner releases early by margin = v_max * Dmax:
 *   low_owner releases to high_owner when pos >= boundary - margin while moving up (vel > 0);
 *   high_owner releases to low_owner when pos <= boundary + margin while moving down (vel < 0).
 * Against flapping: an owner is armed only once it moved `hysteresis` away from where it got
 * the EU, a standing EU (|vel| <= 1e-3) never moves, and two releases are at least
 * cooldown_usec of world time apart. */
typedef struct hako_rd_trigger_state {
	int armed;
	double acquired_at;
	hako_time_t acquired_usec;
	double acquired_y; /* grid: y where the owner got the EU (acquired_at is x) */
} hako_rd_trigger_state_t;

/* Call when this node becomes the owner (start, activation, reclaim). */
HAKO_API void hako_rd_trigger_reset(hako_rd_trigger_state_t *st, double pos, hako_time_t now);
/* The same for the grid trigger, at (x, y). */
HAKO_API void hako_rd_trigger_reset_xy(hako_rd_trigger_state_t *st, double x, double y,
                                       hako_time_t now);
/* The node to release to now, or 0 to keep the EU. */
HAKO_API uint8_t hako_rd_trigger_boundary(const hako_rd_trigger_t *tr, hako_rd_trigger_state_t *st,
                                          uint8_t owner, double pos, double vel, hako_time_t now,
                                          hako_time_t max_delay_usec);
/* The grid trigger: the boundary trigger's rules on each axis of a grid of cells. The cell the
 * EU enters is found per axis as the boundary trigger finds its side: moving up along x
 * (vx > 1e-3) it counts the x boundaries b with x >= b - margin, moving down those with
 * x > b + margin, else those with x >= b (its cell); y likewise. If that cell's owner is not
 * `owner`, the EU is released to it (a corner crossed diagonally goes straight to the diagonal
 * cell's owner). An owner is armed once the EU is `hysteresis` (Euclidean, in x and y) away
 * from where it got it (hako_rd_trigger_reset_xy), a standing EU (|vx|, |vy| <= 1e-3) never
 * moves, and an owner keeps the EU at least cooldown_usec. The node to release to, or 0. */
HAKO_API uint8_t hako_rd_trigger_grid(const hako_rd_trigger_t *tr, hako_rd_trigger_state_t *st,
                                      uint8_t owner, double x, double y, double vx, double vy,
                                      hako_time_t now, hako_time_t max_delay_usec);
/* The owner of the cell holding (x, y) (no margin), or 0 if tr is not a grid. */
HAKO_API uint8_t hako_rd_trigger_grid_owner(const hako_rd_trigger_t *tr, double x, double y);
/* margin = v_max * Dmax, in the units of pos. */
HAKO_API double hako_rd_trigger_margin(const hako_rd_trigger_t *tr, hako_time_t max_delay_usec);

/* ---- A process hosting EU instances for one node ---- */

typedef struct hako_rd_node hako_rd_node_t;

/* Open node `node_id` of cfg in domain dom: looks up / creates the control and data channels;
 * the initial owner writes the first Status (Stable, epoch 0) if the channel was never written.
 * node_id 0 opens an observer (a controller, a viewer, hako-rd status): it reads the state and
 * the EU's PDUs (hako_rd_read drops stale epochs) and never owns anything; its trace, if any,
 * has what it read.
 * trace_path: JSON-lines trace appended to (NULL: no trace; an observer writes none).
 * HAKO_EINVAL if node_id is not in cfg's nodes, HAKO_ESIZE if a channel exists with another
 * size, HAKO_EIO if the trace cannot be opened. */
HAKO_API int hako_rd_node_open(hako_domain_t *dom, const hako_rd_config_t *cfg, uint8_t node_id,
                               const char *trace_path, hako_rd_node_t **out);
HAKO_API void hako_rd_node_close(hako_rd_node_t *node);
HAKO_API uint8_t hako_rd_node_id(const hako_rd_node_t *node);

typedef struct hako_rd_eu_state {
	hako_rd_status_t status;
	uint8_t epoch;
	uint8_t curr_owner;
	uint8_t next_owner;
	int local;                     /* this node: HAKO_RD_LOCAL_* */
	hako_time_t release_time_usec; /* of the hand-off in progress, -1 if none (RD-Full: the
	                                  commit point, for any node and observer) */
} hako_rd_eu_state_t;

enum {
	HAKO_RD_LOCAL_STANDBY = 0,
	HAKO_RD_LOCAL_OWNER = 1,
	HAKO_RD_LOCAL_RELEASING = 2, /* released, waiting for the next owner or the timeout */
};

/* The EU's state as the status channel says, and this node's role. */
HAKO_API int hako_rd_get_state(hako_rd_node_t *node, uint32_t eu, hako_rd_eu_state_t *st);
/* 1 if this node owns the EU (may step it and write its PDUs), else 0. */
HAKO_API int hako_rd_is_owner(hako_rd_node_t *node, uint32_t eu);

/* RD-Full (mode "full"): the owner releases only after HAKO_RD_EV_COMMIT, at the commit point
 * the conductor committed (next: that node, or 0); HAKO_ESTATE without a commit or before it.
 * The context is written with the commit point as its release time; the status is the
 * conductor's to write.
 *
 * Owner only: hand the EU to node `next`. ctx = the application's state after its last model
 * step; model_step = how many model steps it has run; now = world time of that step. From now
 * on this node is RELEASING: it neither steps the EU nor writes its PDUs.
 * HAKO_ENOTOWNER, HAKO_ETOOBIG (ctx larger than max_context_bytes), HAKO_EINVAL (next is not a
 * candidate, or is this node). */
HAKO_API int hako_rd_release(hako_rd_node_t *node, uint32_t eu, uint8_t next, const void *ctx,
                             size_t ctx_len, uint64_t model_step, hako_time_t now);

typedef enum hako_rd_event {
	HAKO_RD_EV_NONE = 0,
	HAKO_RD_EV_ACTIVATE = 1,  /* standby: restore the context, then call hako_rd_activate (also
	                             given to a releasing node the EU came straight back to: its
	                             RELEASED is implied) */
	HAKO_RD_EV_RELEASED = 2,  /* old owner: the next owner took over; this node is standby */
	HAKO_RD_EV_RECLAIMED = 3, /* old owner: nobody took over in time; this node owns it again */
	HAKO_RD_EV_COMMIT = 4,    /* RD-Full owner: the clock reached the commit point of a hand-off
	                             the conductor committed (act->release_time_usec, act->epoch,
	                             act->from = the node taking over): run the model up to that
	                             time, not beyond, and hako_rd_release there */
	HAKO_RD_EV_HOLD = 5,      /* RD-Full owner that checkpoints: a hand-off is committed and
	                             its commit point is not known here yet (the owner's own
	                             checkpoint replaced the announcement; the conductor writes it
	                             again): do not step the model this time, poll again */
} hako_rd_event_t;

typedef struct hako_rd_activation {
	uint8_t epoch;
	uint8_t from;
	hako_time_t release_time_usec;
	uint64_t model_step; /* steps the context has run */
	size_t ctx_len;      /* bytes copied to the caller's buffer */
} hako_rd_activation_t;

/* Drive the EU's state machine for this node at world/asset time now (call once per asset step,
 * before stepping the model). *ev says what happened; for HAKO_RD_EV_ACTIVATE the context is
 * copied to ctx (cap bytes) and described in *act. HAKO_ETOOBIG if the context does not fit
 * in cap (nothing happens; poll again with a bigger buffer). */
HAKO_API int hako_rd_poll(hako_rd_node_t *node, uint32_t eu, hako_time_t now, hako_rd_event_t *ev,
                          void *ctx, size_t cap, hako_rd_activation_t *act);

/* After HAKO_RD_EV_ACTIVATE, in the same asset step: ok != 0 once the context is restored
 * (writes Activating then Stable: this node owns the EU); ok == 0 if the restore failed
 * (writes nothing; the old owner takes the EU back at its timeout). HAKO_ESTATE without a
 * pending ACTIVATE, HAKO_ETIMEDOUT if now is outside (release time, release time + timeout]. */
HAKO_API int hako_rd_activate(hako_rd_node_t *node, uint32_t eu, int ok, hako_time_t now);

/* Owner only: publish the EU's context (ctx: the state after model step model_step, at world
 * time now) in its context channel, so that the EU can be taken over should this process or
 * its node die. The lost steps are those after the last checkpoint: the new owner runs them
 * again.
 * - RD-Light: a candidate takes it from there (hako_rd_take_over).
 * - RD-Full: the node's conductor relays it to the authority, which keeps it as the EU's last
 *   committed context and restarts the EU from it on a live candidate when the owner's node
 *   is lost. While a hand-off of the EU is committed nothing is written (0): its release
 *   context follows. An owner that checkpoints handles HAKO_RD_EV_HOLD.
 * HAKO_ENOTOWNER, HAKO_ETOOBIG. */
HAKO_API int hako_rd_checkpoint(hako_rd_node_t *node, uint32_t eu, const void *ctx, size_t ctx_len,
                                uint64_t model_step, hako_time_t now);

/* RD-Light: the EU's owner, node `lost`, is dead (the caller knows it: its asset left the
 * domain, its process exited) and this node, a candidate, takes the EU over at world time now
 * from the last context of that ownership: its last checkpoint, or the hand-off context it
 * started from, or the initial state (model step 0, no context) if the EU never moved and
 * was never checkpointed. The context is copied to ctx (cap bytes) and described in *act
 * (act->from = 0, act->model_step: the steps it has run; run the model from there). This
 * node owns the EU at once, at a new epoch: anything the lost node still wrote is fenced
 * off, and if it was not dead after all, its next poll sees the new owner and stops the EU.
 * The trace says "restart" (lost node, model step), so hako-rd check runs the lost node's
 * steps after that context against the new owner's, not twice. Only one node may decide a
 * take-over (an ExMonitor): two nodes taking the same EU over would both own it.
 * HAKO_ESTATE: RD-Full, this node is not standby, or `lost` does not own the EU (a hand-off
 * to a live node is under way: it activates); HAKO_ENOENT: no usable context of that
 * ownership; HAKO_ETOOBIG: cap too small; HAKO_EINVAL: not a candidate. */
HAKO_API int hako_rd_take_over(hako_rd_node_t *node, uint32_t eu, uint8_t lost, hako_time_t now,
                               void *ctx, size_t cap, hako_rd_activation_t *act);

/* Owner only: write PDU `pdu` (index in the EU's writes) of the EU, stamping the current epoch
 * in its meta byte 20 (pdu must be a valid registry PDU of its type: HAKO_EPROTO otherwise).
 * HAKO_ENOTOWNER unless owner. model_time = world time of the model step the data belongs to
 * (for the trace; the record's world time is the `now` of this step's poll). */
HAKO_API int hako_rd_write(hako_rd_node_t *node, uint32_t eu, size_t pdu, void *data, size_t len,
                           hako_time_t model_time);

/* Owner only: every PDU the EU writes, written in place and published together, as a host of
 * many EUs writes each one's PDUs every step. hako_rd_write_loan lends bufs[i] (n >= the EU's
 * write count) = the buffer of write PDU i, of its PDU size, previous content undefined;
 * hako_rd_write_commit checks each in place as hako_rd_write does (length, a valid PDU of its
 * type, the ownership and RD-Full's commit point at model_time), stamps the epoch in its meta
 * byte 20 and publishes them all with one fence (hako_channel_batch_commit); lens[i] = PDU i's
 * length. A commit that fails (HAKO_ENOTOWNER, HAKO_ETOOBIG, HAKO_EPROTO or a registry error
 * of a PDU) publishes none and ends the loan; hako_rd_write_cancel ends it too. In between the
 * loan rules of hako_channel_loan hold for each channel. HAKO_ENOTOWNER: loan unless owner;
 * HAKO_ESTATE: a loan while one is held, a commit or cancel without one; HAKO_EINVAL: an EU
 * whose writes name a channel twice (write it with hako_rd_write). */
HAKO_API int hako_rd_write_loan(hako_rd_node_t *node, uint32_t eu, void **bufs, size_t n);
HAKO_API int hako_rd_write_commit(hako_rd_node_t *node, uint32_t eu, const size_t *lens,
                                  hako_time_t model_time);
HAKO_API int hako_rd_write_cancel(hako_rd_node_t *node, uint32_t eu);

/* Read PDU `pdu` of the EU at this node's world time; HAKO_EAGAIN if never written or its epoch
 * is not one the EU's owner writes at that time (a stale PDU of a previous owner is dropped and
 * counted). During a hand-off to epoch N+1 with a known release time (RD-Full: the commit
 * point C) a PDU of epoch N is read until the world reaches it, of N+1 from the new owner on;
 * from C on only N+1: no PDU of epoch N is delivered after the commit of N+1. With a trace
 * (observers too, hako_rd_node_open), every PDU delivered is traced ("read") for hako-rd
 * check. */
HAKO_API int hako_rd_read(hako_rd_node_t *node, uint32_t eu, size_t pdu, void *buf, size_t cap,
                          size_t *len);
/* The same at a given world time of this node (a test, a process on its own clock). */
HAKO_API int hako_rd_read_at(hako_rd_node_t *node, uint32_t eu, size_t pdu, void *buf, size_t cap,
                             size_t *len, hako_time_t world);
HAKO_API uint64_t hako_rd_stale_drops(const hako_rd_node_t *node);
/* Trace (1, the default) or not (0) a record per hako_rd_write: a host of many EUs writing
 * every step keeps its trace to the ownership events and model steps. */
HAKO_API void hako_rd_trace_writes(hako_rd_node_t *node, int on);

/* Record in the trace that this node ran model step `step` of the EU, covering world time
 * [model_time - delta, model_time]. */
HAKO_API void hako_rd_trace_step(hako_rd_node_t *node, uint32_t eu, uint64_t step,
                                 hako_time_t model_time);

/* ---- A domain's status PDUs, without a config (hako-rd status) ---- */

/* One EU's status PDU (hako_msgs/ExecutionUnitRuntimeStatus) as a domain's channel holds it. */
typedef struct hako_rd_status_entry {
	char robot[HAKO_NAME_MAX]; /* the channel that holds it */
	int32_t channel_id;
	uint32_t config_hash; /* of the RD config its writer loaded */
	hako_rd_status_t status;
	uint8_t epoch;
	uint8_t curr_owner;
	uint8_t next_owner; /* the node taking over, while not HAKO_RD_OWNER_STABLE */
} hako_rd_status_entry_t;

/* The owner status of every EU of domain dom, read from the domain alone (no config, no node
 * opened): each channel that was written and holds a valid status PDU of one EU, in the
 * domain's channel order; any other channel is skipped. Only reads: writes nothing, opens
 * nothing in dom. The first `cap` found go to out[]; *count says how many were found, which
 * may be more than cap (call again with room for *count). HAKO_EINVAL (dom or count NULL, out
 * NULL with cap > 0), HAKO_ENOMEM; the registry's error (HAKO_EPROTO, HAKO_ECONFIG, ...) if the
 * status type cannot be used: a type of that name on HAKO_MSG_PATH that is malformed or lacks
 * the fields RD reads (the reason is logged). */
HAKO_API int hako_rd_status_read(hako_domain_t *dom, hako_rd_status_entry_t *out, size_t cap,
                                 size_t *count);

/* ---- Trace check (hako-rd check) ---- */

typedef struct hako_rd_check_result {
	uint64_t writes;
	uint64_t steps;
	uint64_t handoffs;
	uint64_t reclaims;
	uint64_t restarts; /* RD-Full: restarts from the authority's context after a lost owner */
	uint64_t reads;    /* PDUs delivered to readers with a trace (observers) */
	uint64_t violations;
	char first_violation[512];
} hako_rd_check_result_t;

/* Verify the invariants on the JSON-lines traces (one or several files, e.g. one per node):
 * at most one writer per PDU at any world time, every write carries the epoch of its writer's
 * ownership and that ownership was current, no model step run twice or skipped (docs/rd.md).
 * 0 if the traces could be read (look at res->violations; first_violation is the earliest in
 * world time, "file:line: what"; each violation is also logged at info level), else an error
 * naming the file and line. */
HAKO_API int hako_rd_check(const char *const *paths, size_t count, hako_rd_check_result_t *res,
                           hako_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
