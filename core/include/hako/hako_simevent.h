/* Simulation control of the domain HAKO_DOMAIN (default "default"), as Hakoniwa's sim-event
 * controller: state, start, stop, reset, and the list of assets with their clocks.
 * Functions return 0 or a negative HAKO_E* code. */
#ifndef HAKO_SIMEVENT_H
#define HAKO_SIMEVENT_H

#include "hako/api.h"

#include "hako/domain.h"

#ifdef __cplusplus
extern "C" {
#endif

HAKO_API int hako_simevent_init(void);
HAKO_API void hako_simevent_fini(void);
HAKO_API int hako_simevent_get_state(void); /* hako_state_t, or a negative error */
HAKO_API int hako_simevent_start(void);
HAKO_API int hako_simevent_stop(void);
HAKO_API int hako_simevent_reset(void);
HAKO_API hako_time_t hako_simevent_world_time(void);
HAKO_API int hako_simevent_list_assets(hako_asset_info_t *out, int max, int *count);

#ifdef __cplusplus
}
#endif
#endif
