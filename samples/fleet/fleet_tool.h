/* What the fleet's programs (fleet-host, fleet-controller, fleet-monitor) share: ending on
 * SIGINT / SIGTERM, their clocks, and an asset's loop over the domain's events and steps. */
#ifndef FLEET_TOOL_H
#define FLEET_TOOL_H

#include <signal.h>
#include <stdint.h>

#include "hako/domain.h"

/* Set by SIGINT / SIGTERM once fleet_tool_start() ran. */
extern volatile sig_atomic_t fleet_quit;

/* SIGINT and SIGTERM set fleet_quit; stdout is line-buffered (hako-launch echoes lines). */
void fleet_tool_start(void);
int64_t fleet_now_ns(void); /* CLOCK_MONOTONIC */
double fleet_cpu_s(void);   /* this process's CPU time (user + system) */

/* Open the domain $HAKO_DOMAIN names (hako-launch sets it): 0, or the error, said on stderr
 * after `prog: `. */
int fleet_open_domain(const char *prog, hako_domain_t **dom);

/* The next step of asset m: acknowledges its events (START runs, STOP ends) and waits for the
 * step. 1: a step is there (hako_member_step_done after it); 0: the run ended (STOP, or
 * fleet_quit); -1: an error, said on stderr after `prog: `. *running: between START and STOP
 * (0 before the first call). */
int fleet_asset_next(hako_member_t *m, const char *prog, int *running);

#endif
