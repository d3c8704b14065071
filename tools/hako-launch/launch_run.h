/* A launch from start to end: the domain created with its conductor in this process, the
 * processes started in order (each awaited as the file says), the simulation run with a status
 * line, everything stopped together (at the stop time, on a signal or when a process fails:
 * stop, reset so that Hakoniwa-style assets finish their cycle, a grace period, SIGTERM,
 * SIGKILL), then the "after" processes. docs/hako-launch.md tells it from the user's side. */
#ifndef HAKOI_LAUNCH_RUN_H
#define HAKOI_LAUNCH_RUN_H

#include "launch_config.h"

#define HAKOI_LAUNCH_EXIT_FAILED 1
#define HAKOI_LAUNCH_EXIT_USAGE  2

/* Run cfg (taken: freed before it returns); the console is set up. Returns the exit status:
 * 0, HAKOI_LAUNCH_EXIT_FAILED (the last line says why) or 128 + the signal that stopped it. */
int hakoi_launch_run(hakoi_launch_config_t *cfg);

#endif
