/* Simulation control of the domain HAKO_DOMAIN (default "default"), as Hakoniwa's sim-event
 * controller: state, start, stop, reset, and the list of assets with their clocks.
 *
 * The five functions Hakoniwa has (hako_capi.h) keep its signatures and truth values:
 * init, start, stop and reset return true on success, so `if (!hako_simevent_start())` reads
 * as it does with Hakoniwa; get_state returns the state or -1. The others are hako's. The
 * reason of the last failure of this thread is in hako_simevent_last_error().
 */
#ifndef HAKO_SIMEVENT_H
#define HAKO_SIMEVENT_H

#include "hako/api.h"

#include <stdbool.h>

#include "hako/domain.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Attach to the domain (again, after hako_simevent_fini). false: no domain, or one this process
 * may not open (the reason is logged). The other calls attach on first use. */
HAKO_API bool hako_simevent_init(void);
/* hako_state_t (HAKO_STATE_STOPPED = 0 ... HAKO_STATE_ERROR = 5, Hakoniwa's numbers), or -1. */
HAKO_API int hako_simevent_get_state(void);
/* Stopped -> Runnable (Running once every asset acknowledged). false if the domain is not
 * stopped, or has no live conductor. */
HAKO_API bool hako_simevent_start(void);
/* Running (or Runnable) -> Stopping (Stopped once every asset acknowledged). */
HAKO_API bool hako_simevent_stop(void);
/* Stopped -> Resetting -> Stopped; Error -> Resetting (dead assets removed). */
HAKO_API bool hako_simevent_reset(void);

/* hako's additions. */
/* Detach. The next call attaches again. */
HAKO_API void hako_simevent_fini(void);
/* The world time T_c, 0 without a domain. */
HAKO_API hako_time_t hako_simevent_world_time(void);
/* Fill up to max entries; *count gets the number of registered assets. 0 or a negative HAKO_E*
 * code, as the handle API (this is not one of Hakoniwa's functions). */
HAKO_API int hako_simevent_list_assets(hako_asset_info_t *out, int max, int *count);
/* The HAKO_E* code of this thread's last failed call above (0 if none failed yet). */
HAKO_API int hako_simevent_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
