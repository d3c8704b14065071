/* The Hakoniwa-compatible API (hako_asset.h, hako_asset_service.h, hako_capi.h,
 * hako_conductor.h, hako_simevent.h): a layer above the core's handle API, in a folder of its
 * own, built into libhako_core. Private to hako_core.
 *
 * Why in libhako_core and not a library of its own: programs written for Hakoniwa, the samples,
 * hako-cmd, the pkg-config and CMake packages and ctypes bindings find these functions in
 * libhako_core.so.0, and moving them would break every binary built against it. And it is not
 * only a client of the public API: besides the handle API it uses these of the core's insides
 * (internal.h), which a library of its own could not reach:
 *  - compat_capi.c (Hakoniwa's polling assets and master): the assets' slots in the segment
 *    (their clocks, steps, check-ins and events, read and set) and a member handle's slot, the
 *    header's world step, max delay and stop time, the asset table's high-water mark, the
 *    clock bounds (HAKOI_MAX_*), hakoi_try_advance and hakoi_wake_master;
 *  - compat_asset.c: hakoi_member_step_wait_forced (the _no_wait calls);
 *  - compat_service*.c: the domain lock around the table of clients (hakoi_lock), and
 *    hakoi_self_pid / hakoi_proc_alive / hakoi_proc_start_time for its owners.
 * The core never calls into this folder. Its process globals (the default domain and asset,
 * the capi's assets and readers, the conductor, the sim-event controller, the services) are
 * the documented ones behind the compatible API.
 */
#ifndef HAKOI_COMPAT_H
#define HAKOI_COMPAT_H

#include "internal.h"

/* compat_asset.c: set the message and code of hako_asset_last_error (and log it); returns the
 * errno value Hakoniwa's calls return for that code. */
int hakoi_compat_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* compat_service.c: drop this process's services (their channels go with the domain). */
void hakoi_service_forget(void);

#endif
