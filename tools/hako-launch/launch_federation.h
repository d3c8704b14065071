/* The run of a federation file (docs/hako-launch.md, "A federation"): every node started as a
 * hako-launch of its own on its launch file, in its own domain; their output echoed as
 * "[node] line"; all of them stopped together when one fails or on Ctrl-C; then the last line
 * of each. */
#ifndef HAKOI_LAUNCH_FEDERATION_H
#define HAKOI_LAUNCH_FEDERATION_H

#include "launch_config.h"
#include "launch_run.h"

/* Run cfg (a federation file, taken: freed before it returns); the console is set up. Returns
 * the exit status: 0 when every node exited 0, HAKOI_LAUNCH_EXIT_FAILED (the last line says
 * which node and how) or 128 + the signal that stopped it. */
int hakoi_launch_run_federation(hakoi_launch_config_t *cfg);

#endif
