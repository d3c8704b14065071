/* Hakoniwa-compatible conductor API: run the master of the domain HAKO_DOMAIN (default
 * "default") in a thread of this process. The core config JSON named by HAKO_CORE_CONFIG, if
 * set, gives the capacities; HAKO_REAL_TIME_FACTOR the pacing (0 = as fast as possible). */
#ifndef HAKO_CONDUCTOR_H
#define HAKO_CONDUCTOR_H

#include "hako/api.h"

#include "hako/domain.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 0 on success, -1 on failure (logged; hako_asset_last_error gives the reason). */
HAKO_API int hako_conductor_start(hako_time_t delta_usec, hako_time_t max_delay_usec);
HAKO_API void hako_conductor_stop(void);

#ifdef __cplusplus
}
#endif
#endif
