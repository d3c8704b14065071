/* Hakoniwa-compatible asset API: the names and meanings of Hakoniwa's hako_asset.h, over the
 * handle API of hako/domain.h with one process-default domain and asset.
 *
 * Return values follow Hakoniwa: 0 on success, otherwise a positive errno (EINVAL, ENOENT, EIO,
 * EINTR, ...). hako_asset_last_error() gives the hako error code and a message for the last
 * failure of this thread.
 */
#ifndef HAKO_ASSET_H
#define HAKO_ASSET_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/domain.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t HakoPduChannelIdType;

typedef enum {
	HAKO_ASSET_MODEL_PLANT = 0,
	HAKO_ASSET_MODEL_CONTROLLER = 1,
} HakoAssetModelType;

#define HAKO_ASSET_MIN_DELTA_TIME_USEC 1

typedef struct {
	void *user_data; /* always NULL, as in Hakoniwa */
} hako_asset_context_t;

typedef struct hako_asset_callbacks_s {
	int (*on_initialize)(hako_asset_context_t *ctx);
	int (*on_simulation_step)(hako_asset_context_t *ctx);
	int (*on_manual_timing_control)(hako_asset_context_t *ctx);
	int (*on_reset)(hako_asset_context_t *ctx);
} hako_asset_callbacks_t;

/* Register this process's asset in the domain HAKO_DOMAIN (default "default") and create the
 * channels of the pdudef at config_path (NULL: none). A conductor must run. */
HAKO_API int hako_asset_register(const char *asset_name, const char *config_path,
                                 hako_asset_callbacks_t *callbacks, hako_time_t delta_usec,
                                 HakoAssetModelType model);
/* Unregister (Hakoniwa's hako_asset.h has no such call; hako adds it). Not the
 * hako_asset_unregister(name) of Hakoniwa's deprecated hako_capi.h: see hako/hako_capi.h. */
HAKO_API int hako_asset_unregister(void);

/* Attach to the domain without registering an asset (tools, bridges, viewers): PDU read,
 * write, create and recv events work; usleep is a no-op. 0 (also when attached or registered
 * already), or EIO: no conductor runs for the domain. */
HAKO_API int hako_asset_attach_core(void);
/* As hako_asset_attach_core, but EIO when this process is attached or registered already, as
 * Hakoniwa's. */
HAKO_API int hako_initialize_for_external(void);
/* Attach as hako_asset_attach_core, under an asset name and with its pdudef, without
 * registering: the pdudef must load (ENOENT: no such file, EINVAL: malformed), its channels are
 * not created (the registered asset of that name does that). 0 when attached already. */
HAKO_API int hako_asset_attach_core_with_name(const char *asset_name, const char *config_path);

/* Run the lifecycle once: wait for START, on_initialize, ack, then on_manual_timing_control
 * once or on_simulation_step each step until stop; ack STOP, wait for RESET, on_reset, ack.
 * Returns EINTR after a stop/reset cycle (call it again for the next run). */
HAKO_API int hako_asset_start(void);
/* As hako_asset_start, but is_force_stop() returning non-zero makes it return EINTR. */
HAKO_API int hako_asset_start_no_wait(int (*is_force_stop)(void));

/* Advance this asset's clock by ceil(us / delta) steps (0 = one step) under the clock rules.
 * 0, or EINTR when the simulation stops. A no-op (0) for a process that only attached. */
HAKO_API int hako_asset_usleep(hako_time_t sleep_time_usec);
/* As hako_asset_usleep, and EINTR as soon as is_force_stop() returns non-zero (looked at before
 * each step and every 100 ms while waiting for the world clock; NULL: never). */
HAKO_API int hako_asset_usleep_no_wait(hako_time_t sleep_time_usec, int (*is_force_stop)(void));

HAKO_API hako_time_t hako_asset_simulation_time(void); /* world time T_c */
HAKO_API hako_time_t hako_asset_current_time(void);    /* this asset's time t_i */
HAKO_API hako_time_t hako_asset_min_asset_time(void);  /* min over registered assets */

HAKO_API int hako_asset_pdu_create(const char *robo_name, HakoPduChannelIdType lchannel,
                                   size_t pdu_size);
HAKO_API int hako_asset_pdu_read(const char *robo_name, HakoPduChannelIdType lchannel, char *buffer,
                                 size_t buffer_len);
HAKO_API int hako_asset_pdu_write(const char *robo_name, HakoPduChannelIdType lchannel,
                                  const char *buffer, size_t buffer_len);

/* Subscribe to writes on a channel: on_recv(recv_event_id) runs in this process at the start of
 * the next step; NULL = flag mode, polled with hako_asset_check_data_recv_event. */
HAKO_API int hako_asset_register_data_recv_event(const char *robo_name,
                                                 HakoPduChannelIdType lchannel,
                                                 void (*on_recv)(int), int *recv_event_id);
/* 0 if the channel was written since the last check (consumes it), otherwise ENOENT (also
 * while the subscription is pending). */
HAKO_API int hako_asset_check_data_recv_event(const char *robo_name, HakoPduChannelIdType lchannel);
/* Hold a subscription's notifications (its callback does not run, its flag does not show);
 * writes meanwhile are kept and notify once on resume. 0, EINVAL (not attached, id < 0) or
 * ENOENT (no such subscription). */
HAKO_API int hako_asset_set_data_recv_event_pending(int recv_event_id);
HAKO_API int hako_asset_set_data_recv_event_resume(int recv_event_id);

#define HAKO_TRIGGER_EVENT_ID_START 0
#define HAKO_TRIGGER_EVENT_ID_STOP  1
#define HAKO_TRIGGER_EVENT_ID_RESET 2
HAKO_API int hako_trigger_event(int trigger_event);

/* The hako error code (HAKO_E*) of this thread's last failed call, and its message. */
HAKO_API int hako_asset_last_error(const char **message);

/* The handles under the compatible API (NULL before register). */
HAKO_API hako_domain_t *hako_asset_domain(void);
HAKO_API hako_member_t *hako_asset_member(void);

#ifdef __cplusplus
}
#endif
#endif
