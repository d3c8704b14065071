/* The bridge: forwards PDUs from a connection's source endpoint to its destinations under
 * transfer policies (ARCHITECTURE section 5, Hakoniwa's bridge core).
 *
 * One policy instance per (connection, destination, PDU) -- or per (connection, destination,
 * group) for atomic groups -- never shared:
 *  - immediate: forwarded on arrival, in the thread that received it (the source comm's thread);
 *  - immediate + atomic: a group is forwarded, in group order, once every member has arrived
 *    since the last forward; the marks then reset;
 *  - throttle(interval): at most one forward per interval; an arrival inside the window is kept
 *    (the latest one) and sent when the window ends, so the final value always arrives;
 *  - ticker(interval): the current value (the last that arrived) is sent every interval, also
 *    when unchanged; nothing before the first arrival. The first tick only arms the timer.
 *
 * Time is injected (hako_bridge_clock_fn, microseconds): wall clock, world time kept across
 * resets (hako_bridge_world_clock_now), or a fake clock in tests; the library never sleeps.
 * hako_bridge_tick() drives the time-based part (throttle trailing sends, tickers) and the sources'
 * poll-mode receive events; the daemon calls it every delta.
 *
 * Epochs: each connection has an epoch (uint8, starts 0). With epoch_validation on, a PDU whose
 * registry meta epoch (hako_pdu_get_epoch) differs, or that has no valid meta, is dropped and
 * counted; the bridge never rewrites epochs. In an atomic group one mismatch drops the frame.
 * A paused connection drops (and counts) what arrives and ticks nothing.
 *
 * Thread-safe: arrivals come from comm threads, tick and the control calls from another.
 */
#ifndef HAKO_BRIDGE_H
#define HAKO_BRIDGE_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/bridge_config.h"
#include "hako/domain.h"
#include "hako/endpoint.h"
#include "hako/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef hako_time_t (*hako_bridge_clock_fn)(void *user);

typedef struct hako_bridge hako_bridge_t;

/* Build the bridge of cfg->node over the endpoints of `eps` (opened by the caller, e.g. with
 * hako_endpoint_set_open_container(cfg->endpoints, ...); not owned). cfg must outlive the
 * bridge. Subscribes to the sources, one subscription per (source, key). Errors name the
 * connection and endpoint. */
HAKO_API int hako_bridge_create(const hako_bridge_config_t *cfg, hako_endpoint_set_t *eps,
                                hako_bridge_clock_fn clock, void *clock_user, hako_bridge_t **out,
                                hako_error_t *err);
/* Ends the bridge's subscriptions to its sources (hako_endpoint_unsubscribe: it waits for an
 * arrival running in a source's thread to finish), then frees. When it returns no arrival runs
 * in the bridge and none will, so the endpoints may go on, or be closed, in any order; not from
 * inside a callback of its sources. Accepts NULL. */
HAKO_API void hako_bridge_destroy(hako_bridge_t *b);

/* Time-based work due at clock() now, and process_recv_events of the source endpoints. Returns
 * the number of PDUs forwarded (>= 0). */
HAKO_API int hako_bridge_tick(hako_bridge_t *b);

/* Let nothing reach its destinations late: what the sources have not delivered yet is delivered
 * (hako_endpoint_drain: an shm source reads every channel written since its watcher last read
 * it), then every value a policy holds back is sent at once, whatever the time: a throttle's
 * trailing value (its window starts again now), a ticker's value that changed since its last
 * send (a ticker over an shm source also reads the channel; its timer does not move). An atomic
 * frame still missing members is kept, and a paused connection keeps what it holds. When it
 * returns, the last PDU written to each source before the call has been handed to the
 * destinations (hako_endpoint_send; sent to the peer or queued for it). hako-bridge --asset
 * calls it before it acknowledges a stop or a reset, and when it exits. Returns the number of
 * PDUs forwarded (>= 0), HAKO_EINVAL. Not from inside a callback of its sources. */
HAKO_API int hako_bridge_flush(hako_bridge_t *b);

/* The earliest time a tick has work to do (a throttle window end or a ticker), or -1 if none:
 * the daemon may sleep until then. */
HAKO_API hako_time_t hako_bridge_next_due(hako_bridge_t *b);

/* Connection control. HAKO_ENOENT for an unknown id. */
HAKO_API int hako_bridge_set_epoch(hako_bridge_t *b, const char *connection, uint8_t epoch);
HAKO_API int hako_bridge_bump_epoch(hako_bridge_t *b, const char *connection, uint8_t *new_epoch);
HAKO_API int hako_bridge_get_epoch(hako_bridge_t *b, const char *connection, uint8_t *epoch);
/* For a follower of an EU's ownership (hako/rd_route.h): move the connection forward to
 * `epoch`, never back (a connection up to 127 epochs ahead, mod 256, stays where it is). With
 * next_ok, a PDU of epoch + 1 is accepted too, and the first one moves the connection to
 * epoch + 1 (then only that epoch passes): during a hand-off the old owner's PDUs pass until
 * the new owner's first one, never after it. *now (may be NULL) gets the connection's epoch
 * after the call. set_epoch and bump_epoch clear next_ok. */
HAKO_API int hako_bridge_follow_epoch(hako_bridge_t *b, const char *connection, uint8_t epoch,
                                      int next_ok, uint8_t *now);
HAKO_API int hako_bridge_set_active(hako_bridge_t *b, const char *connection, int active);

typedef struct hako_bridge_conn_stats {
	char id[HAKO_NAME_MAX];
	uint64_t forwarded;      /* PDUs handed to a destination (once per destination) */
	uint64_t bytes;          /* their bytes */
	uint64_t dropped_policy; /* arrivals a throttle replaced inside its window */
	uint64_t dropped_epoch;  /* PDUs (atomic: frames' members) dropped by epoch validation */
	uint64_t dropped_paused; /* arrivals while paused */
	uint64_t send_failed;    /* destination send errors (not connected, too big, ...) */
	uint8_t epoch;
	int active;
} hako_bridge_conn_stats_t;

HAKO_API size_t hako_bridge_connection_count(const hako_bridge_t *b);
/* Statistics of connection i (file order). HAKO_ENOENT past the end. */
HAKO_API int hako_bridge_get_stats(hako_bridge_t *b, size_t i, hako_bridge_conn_stats_t *st);

/* Clocks (hako_bridge_clock_fn). hako_bridge_clock_wall: CLOCK_MONOTONIC (user unused). */
HAKO_API hako_time_t hako_bridge_clock_wall(void *user);

/* World time of a domain for a bridge run as an asset, kept from going back at a reset: a reset
 * sets world time to 0, but a ticker's next send and a throttle's last send are absolute times,
 * so with raw world time every ticker would stay silent (and every throttle hold its PDUs) until
 * the new run reached the world time of the old one. This clock is world time plus the world
 * time reached before each reset (the last value it read then: read it at every step), so
 * tickers and throttles go on every interval of world time in the new run.
 * create: HAKO_EINVAL, HAKO_ENOMEM; dom is not owned and must outlive the clock. Thread-safe. */
typedef struct hako_bridge_world_clock hako_bridge_world_clock_t;
HAKO_API int hako_bridge_world_clock_create(hako_domain_t *dom, hako_bridge_world_clock_t **out);
HAKO_API void hako_bridge_world_clock_destroy(hako_bridge_world_clock_t *wc);
/* The clock function: user = the hako_bridge_world_clock_t *. */
HAKO_API hako_time_t hako_bridge_world_clock_now(void *user);

#ifdef __cplusplus
}
#endif
#endif
