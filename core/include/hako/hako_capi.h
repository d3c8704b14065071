/* Hakoniwa's older C API (its hako_capi.h, deprecated there but still used by foreign hosts such
 * as Unity plugins): a master driven from outside, polling assets that read their events and
 * report their own clocks, PDUs by asset name, and the sim-event controller. Each function has
 * Hakoniwa's signature and truth value: bool functions return true on success.
 *
 * A thin layer over the handle API (hako/domain.h) with one process-default domain, apart from
 * the one of hako_asset.h. What does not map onto hako's core, and why, is in
 * docs/hakoniwa-compat.md:
 *   - hako_asset_unregister(name) is not declared here: hako's hako_asset.h has an
 *     hako_asset_unregister(void) already, and C has one function per name. Use
 *     hako_capi_asset_unregister(name), which has Hakoniwa's meaning.
 *   - hako_asset_create_pdu_channel(id, size) (a channel without a robot name) always fails:
 *     every hako channel is keyed by a robot name and a channel id.
 * Assets are the ones this process registered through this API (or through hako_asset.h):
 * hako never writes another process's clock or acknowledgements. The reason of the last
 * failure of this thread is in hako_capi_last_error().
 */
#ifndef HAKO_CAPI_H
#define HAKO_CAPI_H

#include "hako/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hako/domain.h"
#include "hako/hako_simevent.h" /* hako_simevent_init/get_state/start/stop/reset */

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t HakoPduChannelIdType; /* as in hako_asset.h (Hakoniwa: int) */

/* Called from a thread of this process when the asset gets the START, STOP or RESET event;
 * each acknowledges it with the matching hako_asset_*_feedback. */
typedef struct {
	void (*start)(void);
	void (*stop)(void);
	void (*reset)(void);
} hako_asset_callback_t;

/* ---- master ---- */

/* Create the domain HAKO_DOMAIN (default "default") and run its master in a thread of this
 * process, with a world step and max delay of 1000 us until hako_master_set_config_simtime.
 * false if a live conductor has the domain already. */
HAKO_API bool hako_master_init(void);
/* The master runs in its own thread and the assets advance the world clock themselves, so this
 * only reports: true if the world time moved since the previous call. */
HAKO_API bool hako_master_execute(void);
/* Set Dmax and the world step (1 <= delta <= max_delay; anything else is refused and logged). */
HAKO_API void hako_master_set_config_simtime(hako_time_t max_delay_time_usec,
                                             hako_time_t delta_time_usec);
HAKO_API hako_time_t hako_master_get_max_deltay_time_usec(void); /* Hakoniwa's spelling */
HAKO_API hako_time_t hako_master_get_delta_time_usec(void);

/* ---- assets ---- */

/* Attach to the domain (a conductor must run). Again after attaching: true. */
HAKO_API bool hako_asset_init(void);
HAKO_API bool hako_asset_endpoint_attach_core(void);
/* Register an asset of this process (attaching first if needed). callbacks NULL: a polling
 * asset, which reads its events with hako_asset_get_event. Its clock is what it reports with
 * hako_asset_notify_simtime. */
HAKO_API bool hako_capi_asset_register(const char *name, hako_asset_callback_t *callbacks);
HAKO_API bool hako_asset_register_polling(const char *name);
/* The event pending for the asset (0 none, 1 start, 2 stop, 3 reset, 4 error: Hakoniwa's
 * numbers); 4 for an asset the domain does not have. */
HAKO_API int hako_asset_get_event(const char *name);
/* Unregister an asset this process registered (Hakoniwa's hako_asset_unregister(name)). */
HAKO_API bool hako_capi_asset_unregister(const char *name);
/* Set the asset's clock t_i (and its heartbeat); the world may advance. */
HAKO_API void hako_asset_notify_simtime(const char *name, hako_time_t simtime);
HAKO_API hako_time_t hako_asset_get_worldtime(void);
HAKO_API hako_time_t hako_asset_get_min_asset_time(void);

/* Acknowledge START (in Runnable), STOP (in Stopping), RESET (in Resetting; sets t_i to 0).
 * false in another state, or for an asset this process did not register. isOk false: not
 * acknowledged (the transition waits, as Hakoniwa's). */
HAKO_API bool hako_asset_start_feedback(const char *asset_name, bool isOk);
HAKO_API bool hako_asset_stop_feedback(const char *asset_name, bool isOk);
HAKO_API bool hako_asset_reset_feedback(const char *asset_name, bool isOk);

/* ---- PDU channels ---- */

/* Always false: see above. */
HAKO_API bool hako_asset_create_pdu_channel(HakoPduChannelIdType channel_id, size_t pdu_size);
/* Create (or find, with the same size) the channel (robo_name, channel_id). */
HAKO_API bool hako_asset_create_pdu_lchannel(const char *robo_name, HakoPduChannelIdType channel_id,
                                             size_t pdu_size);
/* The channel's index in the domain (Hakoniwa's "real channel id", hako-cmd real_cid), or -1. */
HAKO_API HakoPduChannelIdType hako_asset_get_pdu_channel(const char *robo_name,
                                                         HakoPduChannelIdType channel_id);
/* Written since the asset last read it with hako_asset_read_pdu. */
HAKO_API bool hako_asset_is_pdu_dirty(const char *asset_name, const char *robo_name,
                                      HakoPduChannelIdType channel_id);
/* Write / read len bytes (at most the channel size; a read of a shorter PDU is zero-filled) as
 * the asset (a registered asset of the domain). */
HAKO_API bool hako_asset_write_pdu(const char *asset_name, const char *robo_name,
                                   HakoPduChannelIdType channel_id, const char *pdu_data,
                                   size_t len);
HAKO_API bool hako_asset_read_pdu(const char *asset_name, const char *robo_name,
                                  HakoPduChannelIdType channel_id, char *pdu_data, size_t len);
/* The same without an asset. hako's channels never tear and never block a writer, so there is
 * no lock to leave out: these are as safe as the others. */
HAKO_API bool hako_asset_write_pdu_nolock(const char *robo_name, HakoPduChannelIdType channel_id,
                                          const char *pdu_data, size_t len);
HAKO_API bool hako_asset_read_pdu_nolock(const char *robo_name, HakoPduChannelIdType channel_id,
                                         char *pdu_data, size_t len);
/* Nothing to do (as in Hakoniwa). */
HAKO_API void hako_asset_notify_read_pdu_done(const char *asset_name);
/* The asset wrote its first PDUs of the run: it checks in at the start barrier (the world
 * clock moves once every asset has). */
HAKO_API void hako_asset_notify_write_pdu_done(const char *asset_name);
/* Running, and this asset has not checked in yet: write the first PDUs, then
 * hako_asset_notify_write_pdu_done. */
HAKO_API bool hako_asset_is_pdu_sync_mode(const char *asset_name);
/* Running, and every asset has checked in: the world clock may move. */
HAKO_API bool hako_asset_is_simulation_mode(void);
/* Attached: hako's channels exist from their creation on, in every state. */
HAKO_API bool hako_asset_is_pdu_created(void);

/* ---- receive events (flag mode) ---- */

/* Subscribe this process to writes of the channel. */
HAKO_API bool hako_capi_asset_register_data_recv_event(const char *robo_name,
                                                       HakoPduChannelIdType lchannel);
/* true if the channel was written since the last check (consumes it); false while pending. */
HAKO_API bool hako_capi_asset_check_data_recv_event(const char *asset_name, const char *robo_name,
                                                    HakoPduChannelIdType lchannel);
/* Hold / release the subscription: writes meanwhile show once on resume. */
HAKO_API bool hako_capi_asset_set_data_recv_event_pending(const char *robo_name,
                                                          HakoPduChannelIdType lchannel);
HAKO_API bool hako_capi_asset_set_data_recv_event_resume(const char *robo_name,
                                                         HakoPduChannelIdType lchannel);

/* The HAKO_E* code of this thread's last failed call above, and a message (may be NULL). */
HAKO_API int hako_capi_last_error(const char **message);

#ifdef __cplusplus
}
#endif
#endif
