/* hako-replay: an MCAP recording written back into a domain at its world times, as an asset
 * (docs/hako-record.md). */
#ifndef HAKO_REPLAY_H
#define HAKO_REPLAY_H

#include <signal.h>
#include <stdint.h>

#include "hako/domain.h"

#define REP_MAX_FILTERS 64

typedef struct rep_remap {
	const char *from, *to;
} rep_remap_t;

typedef struct rep_opts {
	const char *file;
	const char *domain;
	const char *asset;
	const char *pdudef;
	hako_time_t delta_usec; /* 0: the domain's */
	double speed;           /* recorded time per world time */
	int loop;
	int64_t start_offset_ns; /* recorded time at world time 0 */
	const char *robots[REP_MAX_FILTERS];
	int nrobots;
	const char *pdus[REP_MAX_FILTERS]; /* topics (/robot/name), robot/name or name */
	int npdus;
	rep_remap_t remaps[REP_MAX_FILTERS];
	int nremaps;
	int wait_ms;
	int check; /* only open and read the file, say what it holds and what was skipped */
	int dump;  /* with check: a line per message (log time, robot:id, a hash of its values) */
	int quiet;
} rep_opts_t;

int rep_run(const rep_opts_t *o, volatile sig_atomic_t *stop);

#endif
