/* The handle API of the hako core: one shared-memory domain per node, assets registered in it
 * with their own clocks, PDU channels, the world clock and the simulation state machine.
 *
 * The Hakoniwa-compatible APIs (hako_asset.h, hako_conductor.h, hako_simevent.h) are thin layers
 * over this one. A process may open several domains and register several assets.
 */
#ifndef HAKO_DOMAIN_H
#define HAKO_DOMAIN_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/error.h"
#include "hako/limits.h" /* HAKO_NAME_MAX: domain, asset and robot names */

#ifdef __cplusplus
extern "C" {
#endif

/* Microseconds. World time, asset time and every delta use it. Declared as Hakoniwa declares
 * it (hako_primitive_types.h), so that its examples, which print it with %lld, compile without
 * format warnings; 64 bits wherever hako runs. */
typedef long long int hako_time_t;

#define HAKO_DEFAULT_MAX_ASSETS             64
#define HAKO_DEFAULT_MAX_CHANNELS           4096
#define HAKO_DEFAULT_ARENA_BYTES            (256ull << 20)
#define HAKO_DEFAULT_HEARTBEAT_TIMEOUT_USEC 30000000
/* The largest capacities a domain may be created with. */
#define HAKO_MAX_ASSETS_LIMIT   4096
#define HAKO_MAX_CHANNELS_LIMIT (1u << 24)
#define HAKO_ARENA_BYTES_LIMIT  (1ull << 40)
#define HAKO_WAITSET_MAX        64 /* wait-sets per domain */

typedef enum hako_state {
	HAKO_STATE_STOPPED = 0,
	HAKO_STATE_RUNNABLE = 1,
	HAKO_STATE_RUNNING = 2,
	HAKO_STATE_STOPPING = 3,
	HAKO_STATE_RESETTING = 4,
	HAKO_STATE_ERROR = 5,
} hako_state_t;

/* "stopped", "runnable", ... */
HAKO_API const char *hako_state_name(int state);

/* What the domain does when an asset dies or stops heartbeating while it is registered. */
typedef enum hako_liveness_policy {
	HAKO_LIVENESS_ERROR = 0,  /* the domain goes to Error naming the asset (default) */
	HAKO_LIVENESS_REMOVE = 1, /* the asset is unregistered and the simulation goes on */
} hako_liveness_policy_t;

/* Capacities and policies fixed when a domain segment is created. */
typedef struct hako_domain_config {
	uint32_t max_assets;
	uint32_t max_channels;
	uint64_t arena_bytes;               /* PDU memory; sparse, only touched pages cost */
	hako_time_t heartbeat_timeout_usec; /* 0 = only the pid check */
	hako_liveness_policy_t liveness_policy;
} hako_domain_config_t;

/* The compiled defaults. */
HAKO_API void hako_domain_config_init(hako_domain_config_t *cfg);

/* Overlay HAKO_MAX_ASSETS, HAKO_MAX_CHANNELS, HAKO_ARENA_BYTES, HAKO_HEARTBEAT_TIMEOUT_USEC,
 * HAKO_LIVENESS_POLICY ("error" | "remove") from the environment. A variable that is set but
 * invalid is refused: HAKO_ECONFIG, err names it (err->file) and says why; cfg is unchanged. */
HAKO_API int hako_domain_config_from_env(hako_domain_config_t *cfg, hako_error_t *err);

/* init + from_env; an invalid variable is logged and HAKO_ECONFIG returned (cfg then holds the
 * defaults). */
HAKO_API int hako_domain_config_default(hako_domain_config_t *cfg);

/* Overlay a core config JSON file onto cfg ({"max_assets", "max_channels", "arena_bytes",
 * "heartbeat_timeout_usec", "liveness_policy": "error"|"remove"}). Unknown keys are refused. */
HAKO_API int hako_domain_config_load(hako_domain_config_t *cfg, const char *path,
                                     hako_error_t *err);

/* The domain name to use: HAKO_DOMAIN, or "default". */
HAKO_API const char *hako_domain_default_name(void);

typedef struct hako_domain hako_domain_t;

/* Create the segment of a domain as its master (conductor). An existing segment whose master
 * is dead is replaced; one whose master lives gives HAKO_EBUSY. */
HAKO_API int hako_domain_create(const char *name, const hako_domain_config_t *cfg,
                                hako_domain_t **out);

/* Attach to an existing domain. HAKO_ENOENT if there is none, HAKO_EMAGIC / HAKO_EVERSION if
 * the segment is not a hako segment of this layout, HAKO_ECORRUPT if its header does not agree
 * with its size and layout (each field is checked before anything is read through it),
 * HAKO_EPERM if it belongs to another user (unless HAKO_ALLOW_FOREIGN_DOMAIN=1: the owner's
 * processes drive the clock and write the PDUs of every member). The reason is logged. */
HAKO_API int hako_domain_open(const char *name, hako_domain_t **out);

/* The uid that owns the segment of a domain: 0, HAKO_ENOENT or HAKO_EIO. */
HAKO_API int hako_domain_owner(const char *name, unsigned *uid);

/* Detach (unregisters nothing by itself: close the members first). Accepts NULL. */
HAKO_API void hako_domain_close(hako_domain_t *dom);

/* Remove the segment of a domain (hako-cmd clean) without reading it. HAKO_ENOENT if there is
 * none. */
HAKO_API int hako_domain_remove(const char *name);

HAKO_API const char *hako_domain_name(const hako_domain_t *dom);

typedef struct hako_domain_info {
	char name[HAKO_NAME_MAX];
	uint32_t layout_version;
	uint32_t max_assets;
	uint32_t max_channels;
	uint64_t arena_bytes;
	uint64_t arena_used;
	uint64_t segment_bytes;
	uint32_t asset_count;
	uint32_t channel_count;
	int master_pid;     /* 0 when no master runs */
	int master_alive;   /* the process that created the domain is alive */
	int master_running; /* ... and its master thread runs */
	hako_time_t delta_usec;
	hako_time_t max_delay_usec;
	double real_time_factor;
	hako_time_t heartbeat_timeout_usec;
	hako_liveness_policy_t liveness_policy;
	int state;              /* hako_state_t */
	hako_time_t world_time; /* T_c */
	uint64_t world_steps;   /* times T_c advanced since the last reset */
	uint32_t reset_count;   /* resets completed since creation */
	hako_time_t stop_at;    /* world time at which the run stops, 0 = none */
	char error_reason[256]; /* why the domain is in Error ("" otherwise) */
} hako_domain_info_t;

HAKO_API int hako_domain_get_info(hako_domain_t *dom, hako_domain_info_t *info);

/* ---- Simulation control (hako-cmd, hako_simevent.h) ---- */

HAKO_API int hako_domain_state(hako_domain_t *dom);
HAKO_API hako_time_t hako_domain_world_time(hako_domain_t *dom);
/* Resets completed since creation: channel sequence numbers restart from 0 at each, so a reader
 * remembering a sequence number also remembers this. */
HAKO_API uint32_t hako_domain_reset_count(hako_domain_t *dom);
/* Stopped -> Runnable; Running when every asset acknowledged. */
HAKO_API int hako_domain_start(hako_domain_t *dom);
/* Running (or Runnable) -> Stopping; Stopped when every asset acknowledged. */
HAKO_API int hako_domain_stop(hako_domain_t *dom);
/* Stopped -> Resetting -> Stopped (clocks and channels back to zero); Error -> Resetting:
 * dead assets are removed first. */
HAKO_API int hako_domain_reset(hako_domain_t *dom);
/* Let the world clock advance up to world_usec and no further. Once the world cannot take
 * another step without passing it (it reached world_usec, or the last multiple of its step
 * before it) and every asset has run the steps that fit before it, the master stops the run
 * (Running -> Stopping) and clears the stop time. 0 = no stop time. Cleared by reset. */
HAKO_API int hako_domain_set_stop_time(hako_domain_t *dom, hako_time_t world_usec);
HAKO_API hako_time_t hako_domain_stop_time(hako_domain_t *dom);
/* Wait until world time >= world_usec. HAKO_EINTR if the run stops or fails first,
 * HAKO_ETIMEDOUT after timeout_usec (< 0: forever). */
HAKO_API int hako_domain_wait_world_time(hako_domain_t *dom, hako_time_t world_usec,
                                         hako_time_t timeout_usec);
/* The domain's change counter: it moves whenever the world clock advances, the state changes
 * or an event is published. A process that follows the domain (a conductor publishing its world
 * time, a viewer) waits for it to move instead of polling. */
HAKO_API uint32_t hako_domain_changes(hako_domain_t *dom);
/* Wait until the change counter differs from `seen`: 0, or HAKO_ETIMEDOUT after timeout_usec
 * (< 0: forever). */
HAKO_API int hako_domain_wait_change(hako_domain_t *dom, uint32_t seen, hako_time_t timeout_usec);
/* The same for a follower that needs the world time only in coarse steps (a conductor node
 * publishing its time every few steps): hako_domain_watch_changes is a counter that moves with
 * hako_domain_changes except for world steps that leave the world time at or below the
 * `beyond` of the watchers waiting, and such steps cost the stepping process no wake-up call.
 * hako_domain_wait_watch returns 0 once the counter differs from `seen` or the world time is
 * past `beyond`, HAKO_ETIMEDOUT after timeout_usec (< 0: forever). Watchers in several
 * processes: a step past the lowest `beyond` wakes them all (the others find their own not
 * passed, or the counter moved, and return; call again with a new `seen`). */
HAKO_API uint32_t hako_domain_watch_changes(hako_domain_t *dom);
HAKO_API int hako_domain_wait_watch(hako_domain_t *dom, uint32_t seen, hako_time_t beyond,
                                    hako_time_t timeout_usec);
/* Move the watch counter and wake the watchers (one whose threshold is to change). */
HAKO_API void hako_domain_watch_wake(hako_domain_t *dom);
/* Put the domain in Error with a reason (from outside the assets: a conductor that lost a peer
 * node). Every asset gets the ERROR event; reset recovers. HAKO_ESTATE if already in Error. */
HAKO_API int hako_domain_fail(hako_domain_t *dom, const char *reason);
/* Wait until the state is `state` (or Error). HAKO_ETIMEDOUT after timeout_usec (< 0: forever). */
HAKO_API int hako_domain_wait_state(hako_domain_t *dom, int state, hako_time_t timeout_usec);

/* ---- The domain's event log (hako-cmd plog) ---- */

/* What happened in a domain, kept in its segment: creation, masters started and stopped,
 * state changes, assets registered and removed (and why), channels created, errors. The
 * latest 256 events; older ones are overwritten. */
#define HAKO_DOMAIN_EVENT_TEXT 104
typedef struct hako_domain_event {
	uint32_t number;        /* 0, 1, 2, ... since the domain was created */
	int pid;                /* the process that logged it */
	hako_time_t wall_usec;  /* CLOCK_REALTIME, microseconds since the epoch */
	hako_time_t world_time; /* T_c then */
	char text[HAKO_DOMAIN_EVENT_TEXT];
} hako_domain_event_t;

/* Copy up to max events, oldest first, from event number `from` on (or from the oldest still
 * kept, if `from` was overwritten): *count of them. *next gets the number to ask for next
 * time (follow the log by passing it back). Either pointer may be NULL. */
HAKO_API int hako_domain_read_events(hako_domain_t *dom, uint32_t from, hako_domain_event_t *out,
                                     int max, int *count, uint32_t *next);

typedef struct hako_asset_info {
	char name[HAKO_NAME_MAX];
	int id;
	int pid;
	int alive;
	hako_time_t time_usec;  /* t_i */
	hako_time_t delta_usec; /* dt_i */
	hako_time_t lag_usec;   /* T_c - t_i */
	hako_time_t heartbeat_age_usec;
	uint64_t steps;
	int checked_in; /* passed the start barrier */
	int event;      /* hako_event_t pending, 0 = none */
	int proxy;      /* a proxy member (hako_member_register_proxy): delta_usec is 0 */
	char note[96];  /* what its process says of it (hako_member_set_note), "" if nothing */
} hako_asset_info_t;

/* Fill up to max entries; *count gets the number of registered assets (may exceed max). */
HAKO_API int hako_domain_list_assets(hako_domain_t *dom, hako_asset_info_t *out, int max,
                                     int *count);

/* ---- Wait-sets: one waiter on many channels ---- */

/* A thread that serves many channels (an endpoint's shm comm, a bridge) waits on one wait-set
 * instead of one thread per channel: a write to any channel in the set wakes it once, and it
 * learns which channels were written since it last looked (iceoryx's wait-set). A writer pays
 * nothing extra when no wait-set watches its channel, and no syscall when its wait-sets are
 * awake. Up to HAKO_WAITSET_MAX wait-sets per domain, in any processes; a wait-set is used by
 * one thread at a time, except hako_waitset_wake, which any thread may call. */
typedef struct hako_waitset hako_waitset_t;
typedef struct hako_channel hako_channel_t; /* below */

typedef struct hako_waitset_event {
	hako_channel_t *channel;
	void *user;   /* as given to hako_waitset_add */
	uint64_t seq; /* the channel's newest write number when it was seen */
} hako_waitset_event_t;

/* HAKO_ENOSPC when the domain's HAKO_WAITSET_MAX wait-sets are taken (by live processes). */
HAKO_API int hako_waitset_create(hako_domain_t *dom, hako_waitset_t **out);
/* Stop watching every channel and free the slot. Accepts NULL. */
HAKO_API void hako_waitset_destroy(hako_waitset_t *ws);
/* Watch a channel of the wait-set's domain. Writes before this call are not reported. HAKO_EEXIST
 * if it is watched already. */
HAKO_API int hako_waitset_add(hako_waitset_t *ws, hako_channel_t *ch, void *user);
HAKO_API int hako_waitset_remove(hako_waitset_t *ws, hako_channel_t *ch);
/* Wait until a watched channel was written since it was last reported (or a reset of the
 * domain cleared its writes: not an event), then fill up to max events (*count of them; the
 * rest are reported by the next call). 0 with *count = 0 after hako_waitset_wake;
 * HAKO_ETIMEDOUT after timeout_usec (< 0: forever; 0: just look). */
HAKO_API int hako_waitset_wait(hako_waitset_t *ws, hako_time_t timeout_usec,
                               hako_waitset_event_t *events, int max, int *count);
/* End a wait of this wait-set now (or the next one, if none is waiting). */
HAKO_API void hako_waitset_wake(hako_waitset_t *ws);

/* ---- Master (conductor inside the core) ---- */

typedef struct hako_master_config {
	hako_time_t delta_usec;     /* dT_c, > 0 */
	hako_time_t max_delay_usec; /* Dmax, >= delta_usec */
	double real_time_factor;    /* 0 = as fast as possible; 1 = wall-clock pace; 4 = 4x */
} hako_master_config_t;

typedef struct hako_master hako_master_t;

/* 0 if an asset whose step is dt can always take its next step under a master with world step
 * delta and max delay dmax; HAKO_EINVAL (why filled with the rule and the numbers) if it would
 * wait for ever at some time. dt <= dmax is enough when dt is a multiple of delta. Registration
 * and start refuse such an asset. */
HAKO_API int hako_step_fits(hako_time_t dt, hako_time_t delta, hako_time_t dmax, char *why,
                            size_t len);

/* Start the master of a created domain in a thread of this process: it handles state
 * transitions, liveness, and real-time pacing. In free-running mode (factor 0) the clock is
 * advanced by whichever asset reports last, so the master is not on the step path. */
HAKO_API int hako_master_start(hako_domain_t *dom, const hako_master_config_t *cfg,
                               hako_master_t **out);
/* Stop the thread and free the handle. Accepts NULL. */
HAKO_API void hako_master_stop(hako_master_t *m);

/* ---- Members: assets registered in a domain ---- */

typedef enum hako_event {
	HAKO_EVENT_NONE = 0,
	HAKO_EVENT_START = 1,
	HAKO_EVENT_STOP = 2,
	HAKO_EVENT_RESET = 3,
	HAKO_EVENT_ERROR = 4,
} hako_event_t;

typedef struct hako_member hako_member_t;

/* Register an asset (names are unique, 1..127 chars). Allowed in Stopped only, like Hakoniwa.
 * Errors: HAKO_ENAMETOOLONG, HAKO_EEXIST, HAKO_ENOSPC, HAKO_ESTATE, HAKO_ENOMASTER, and
 * HAKO_EINVAL for a step the running master's clock can never grant (hako_step_fits). */
HAKO_API int hako_member_register(hako_domain_t *dom, const char *name, hako_time_t delta_usec,
                                  hako_member_t **out);
/* A proxy member stands in this domain for a clock that runs elsewhere (a conductor's peer
 * node: ARCHITECTURE section 6). It is never stepped: its clock t_i is set from outside with
 * hako_member_set_time, and the world rule (T_c + dT_c - t_i <= Dmax) bounds this domain's
 * world time by it as by any asset, so the domain never runs more than Dmax ahead of the last
 * time reported for the other side. It acknowledges events like an asset (hako_member_ack); its
 * START acknowledgement is its check-in at the start barrier. Liveness and the name rules are
 * an asset's; hako_member_step_* refuse it (HAKO_EINVAL). */
HAKO_API int hako_member_register_proxy(hako_domain_t *dom, const char *name, hako_member_t **out);
/* Set a proxy's clock (any time in [0, 2^60] us: the other side's world time, which may also
 * move back after a reset there). Heartbeats, and lets the world advance if the rule now
 * allows. HAKO_EINVAL for an asset that is not a proxy. */
HAKO_API int hako_member_set_time(hako_member_t *m, hako_time_t t_usec);
/* The same for the process that follows the world with hako_domain_wait_watch and sends the
 * world time itself right after this call (a conductor's network thread): a world step this
 * call makes, in this thread, does not wake the watchers (the rest of the domain's waiters are
 * woken as always). */
HAKO_API int hako_member_set_time_unwatched(hako_member_t *m, hako_time_t t_usec);
/* A short note shown with the member by hako-cmd ls / status ("server unreachable for 2.1 s:
 * world clock held"); NULL or "" clears it. Truncated to 95 bytes. */
HAKO_API int hako_member_set_note(hako_member_t *m, const char *note);
/* Unregister and free. Accepts NULL. */
HAKO_API void hako_member_unregister(hako_member_t *m);

HAKO_API const char *hako_member_name(const hako_member_t *m);
HAKO_API int hako_member_id(const hako_member_t *m);
HAKO_API hako_time_t hako_member_time(const hako_member_t *m);  /* t_i */
HAKO_API hako_time_t hako_member_delta(const hako_member_t *m); /* dt_i */

/* The pending event (START / STOP / RESET / ERROR) or NONE; it stays pending until acked. */
HAKO_API int hako_member_event(hako_member_t *m);
/* Wait for an event. HAKO_ETIMEDOUT after timeout_usec (< 0: forever). */
HAKO_API int hako_member_wait_event(hako_member_t *m, hako_time_t timeout_usec, int *event);
/* Acknowledge the pending event (the feedback of Hakoniwa). For RESET this also sets t_i = 0. */
HAKO_API int hako_member_ack(hako_member_t *m, int event);

/* Wait until this asset may step (t_i + dt_i <= T_c, state Running, start barrier passed).
 * Returns 0, or HAKO_EINTR when the state left Running (stop, reset, error). The first call
 * after start checks the asset in at the start barrier. */
HAKO_API int hako_member_step_wait(hako_member_t *m);
/* Non-blocking variant: 0 if it may step now, HAKO_EAGAIN if not yet, HAKO_EINTR as above. */
HAKO_API int hako_member_step_poll(hako_member_t *m);
/* Publish t_i += dt_i after the step ran; may advance the world clock. */
HAKO_API void hako_member_step_done(hako_member_t *m);
/* Refresh the heartbeat (done by every wait and step; call it in long computations). */
HAKO_API void hako_member_heartbeat(hako_member_t *m);

/* ---- PDU channels ---- */

/* A channel handle belongs to the domain handle it came from: nothing to free, valid until
 * hako_domain_close of that handle (docs/conventions.md). */
typedef struct hako_channel hako_channel_t;

/* Create (or find) the channel (robot, channel_id) of `size` bytes. Creating an existing channel
 * with the same size returns it; another size gives HAKO_ESIZE. Allowed in any state. */
HAKO_API int hako_channel_create(hako_domain_t *dom, const char *robot, int32_t channel_id,
                                 size_t size, hako_channel_t **out);
/* Find an existing channel. HAKO_ENOENT if there is none. */
HAKO_API int hako_channel_lookup(hako_domain_t *dom, const char *robot, int32_t channel_id,
                                 hako_channel_t **out);
HAKO_API size_t hako_channel_size(const hako_channel_t *ch);
HAKO_API int hako_channel_index(const hako_channel_t *ch);
HAKO_API const char *hako_channel_robot(const hako_channel_t *ch);
HAKO_API int32_t hako_channel_id(const hako_channel_t *ch);

/* Write len (<= size) bytes. Never waits for readers. Concurrent writers are serialised. */
HAKO_API int hako_channel_write(hako_channel_t *ch, const void *data, size_t len);
/* Zero-copy write: lend the buffer the next write goes to (*cap = the channel size; cap may be
 * NULL), to be filled in place and published by hako_channel_commit(len), or dropped by
 * hako_channel_cancel. In between the channel's writer lock is held: every other writer of the
 * channel (in any process) waits, readers keep reading the previous write. Commit or cancel
 * promptly, from the process that took the loan, and never write the channel (write, loan,
 * reset) from the same process in between: that would wait for ever. A loaner killed before
 * committing cannot wedge the channel: the next writer takes the lock over and the loaned write
 * is lost. The buffer's previous content is undefined. commit / cancel without a loan held by
 * this process: HAKO_ESTATE; commit with len > size: HAKO_ETOOBIG (the loan stays open). */
HAKO_API int hako_channel_loan(hako_channel_t *ch, void **buf, size_t *cap);
HAKO_API int hako_channel_commit(hako_channel_t *ch, size_t len);
HAKO_API int hako_channel_cancel(hako_channel_t *ch);
/* Read the latest PDU (never torn). *len_out gets its length (0 if never written), *seq_out
 * the number of the write that produced it (0 = never written); successive reads never go back
 * to an older write. Either pointer may be NULL. A buffer smaller
 * than the PDU gives HAKO_ETOOBIG (the first `cap` bytes are copied). */
HAKO_API int hako_channel_read(hako_channel_t *ch, void *buf, size_t cap, size_t *len_out,
                               uint64_t *seq_out);
/* Zero-copy read (a read loan): the newest PDU where it lies, in the channel's buffer, without a
 * copy. hako_channel_read_loan fills *loan (data, len, seq as hako_channel_read's) and always
 * succeeds on a sane channel; hako_channel_read_release ends the loan and says whether the data
 * stayed intact: 0 if no writer touched the buffer since the loan (everything read through
 * loan->data in between was the PDU `seq`, never torn), HAKO_EAGAIN if a writer overwrote it (what
 * was read is void: loan again, or copy with hako_channel_read). Nothing is locked and nothing is
 * stored in the segment: a writer never waits for a reader, and a reader killed holding a loan
 * leaves nothing behind. The loaned buffer survives the next write (which goes to the channel's
 * other buffer) and is overwritten by the one after it. Rules while the loan is held: only read
 * (data is const), and only within len; treat every byte as unconfirmed until release returns 0
 * (bounds-check any length or offset found in the PDU before using it, do nothing that cannot be
 * undone with what was read); keep the domain handle open. The loan is the caller's memory: any
 * number may be held, by any threads. Release: HAKO_EINVAL for NULL arguments or a loan of
 * another channel, HAKO_ESTATE for a loan already released. Loan: HAKO_EINVAL for NULL
 * arguments, HAKO_ECORRUPT as hako_channel_read. */
typedef struct hako_channel_read_loan {
	const void *data; /* the PDU, read only (never NULL after a loan) */
	size_t len;       /* its length, <= the channel size (0 if never written) */
	uint64_t seq;     /* the number of the write that produced it (0 = never written) */
	/* private */
	const hako_channel_t *ch_;
	uint32_t word_; /* the buffer's sequence word when lent */
	uint32_t buf_;
} hako_channel_read_loan_t;
HAKO_API int hako_channel_read_loan(hako_channel_t *ch, hako_channel_read_loan_t *loan);
HAKO_API int hako_channel_read_release(hako_channel_t *ch, hako_channel_read_loan_t *loan);
/* Write sequence number: how many writes since creation or the last reset. */
HAKO_API uint64_t hako_channel_seq(const hako_channel_t *ch);
/* Wait until the sequence number differs from `seen`. spin_usec bounds the busy phase before
 * sleeping on a futex (0 = sleep at once). HAKO_ETIMEDOUT after timeout_usec (< 0: forever). */
HAKO_API int hako_channel_wait(hako_channel_t *ch, uint64_t seen, hako_time_t spin_usec,
                               hako_time_t timeout_usec);

/* Batch writes: a fixed set of channels of one domain that one writer writes together, as a
 * fleet host writes every PDU of its drones each step. A loan of a range of members is
 * hako_channel_loan of each (its writer lock taken, the buffer its next write goes to lent);
 * the commit publishes the range with one memory fence for all its members instead of one per
 * channel, then wakes the readers and wait-sets that sleep on any of them. Readers see each
 * member as after hako_channel_commit: its new write whole, or the one before; members are
 * published one by one, not as one atomic set. The loan rules of hako_channel_loan hold for
 * every loaned member (commit or cancel promptly, from the same process; a loaner killed
 * before committing leaves nothing wedged: the next writer takes over and the loaned writes
 * are lost). A batch is used by one thread at a time.
 * create: every member a channel of the same domain, none twice (else HAKO_EINVAL); the batch
 *   keeps no reference to chs.
 * loan: members [first, first + n), bufs[k] = the buffer of member first + k (its channel's
 *   size; the previous content is undefined). All or none: on an error no member of the range
 *   stays loaned by this call (HAKO_ESTATE: a member is loaned already; HAKO_EBUSY: a member's
 *   writer lock was held too long by another writer).
 * commit: publish members [first, first + n), member first + k with lens[k] bytes (lens NULL:
 *   each one's channel size). All or none: HAKO_ESTATE if a member of the range is not loaned,
 *   HAKO_ETOOBIG if a length exceeds its channel's size; the loans stay then.
 * cancel: drop the loans of members [first, first + n) (those not loaned are left as they
 *   are); their readers keep the previous write. */
typedef struct hako_channel_batch hako_channel_batch_t;
HAKO_API int hako_channel_batch_create(hako_channel_t *const *chs, size_t n,
                                       hako_channel_batch_t **out);
/* Cancels what is still loaned, then frees the batch. Accepts NULL. */
HAKO_API void hako_channel_batch_destroy(hako_channel_batch_t *b);
HAKO_API size_t hako_channel_batch_count(const hako_channel_batch_t *b);
HAKO_API int hako_channel_batch_loan(hako_channel_batch_t *b, size_t first, size_t n, void **bufs);
HAKO_API int hako_channel_batch_commit(hako_channel_batch_t *b, size_t first, size_t n,
                                       const size_t *lens);
HAKO_API int hako_channel_batch_cancel(hako_channel_batch_t *b, size_t first, size_t n);

/* Channel listing (hako-cmd info / pdu). */
typedef struct hako_channel_info {
	char robot[HAKO_NAME_MAX];
	int32_t channel_id;
	uint32_t size;
	uint64_t seq;
	int index;
} hako_channel_info_t;
HAKO_API int hako_domain_list_channels(hako_domain_t *dom, hako_channel_info_t *out, int max,
                                       int *count);

/* ---- Small helpers ---- */

/* CLOCK_MONOTONIC in microseconds. */
HAKO_API hako_time_t hako_now_usec(void);

#ifdef __cplusplus
}
#endif
#endif
