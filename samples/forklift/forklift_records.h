/* The step records of the forklift demo: each host writes one line per model step it ran
 * (forklift-<node>.steps.csv), exact enough (%.17g and a hash of the whole packed state) for
 * forklift-report to compare the run bit for bit with a single-process run.
 *
 *   # forklift steps v1
 *   # node=1 domain=launch-4242 delta_usec=1000 dmax_usec=50000
 *   step,model_usec,world_usec,node,epoch,phase,x,y,yaw,v,lift,hash
 *   # mission forward=2 backward=2 speed=0.69999999999999996 lift=0.40000000000000002 loops=0
 *   1,1000,1000,1,0,0,7.0000000000000007e-07,...,9f3a...
 *
 * The mission line (anywhere among the comments) is written by the host that started the model
 * (the initial owner) when it starts it. model_usec is the world time the step belongs to,
 * world_usec the world clock when the host ran it.
 */
#ifndef FORKLIFT_RECORDS_H
#define FORKLIFT_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "forklift_model.h"
#include "hako/domain.h"

typedef struct forklift_record {
	uint64_t step;
	hako_time_t model_usec; /* step * delta: the world time the step belongs to */
	hako_time_t world_usec; /* the world clock when the host ran it */
	uint8_t node;
	uint8_t epoch;
	int32_t phase;
	double x, y, yaw, v, lift;
	uint64_t hash; /* forklift_state_hash after the step */
	uint8_t lost;  /* 1: not recorded, lost with a killed host (see forklift_run_t) */
} forklift_record_t;

typedef struct forklift_steps_info {
	unsigned node;
	char domain[128];
	hako_time_t delta_usec;
	hako_time_t dmax_usec;
	int have_mission;
	forklift_mission_t mission;
} forklift_steps_info_t;

/* ---- Writing (forklift-host) ---- */

void forklift_steps_write_header(FILE *f, const forklift_steps_info_t *info);
void forklift_steps_write_mission(FILE *f, const forklift_mission_t *m);
void forklift_steps_write(FILE *f, const forklift_state_t *s, hako_time_t world_usec, uint8_t node,
                          uint8_t epoch);
void forklift_record_of(forklift_record_t *r, const forklift_state_t *s, hako_time_t world_usec,
                        uint8_t node, uint8_t epoch);

/* ---- Reading (forklift-report) ---- */

typedef struct forklift_steps {
	forklift_steps_info_t info;
	forklift_record_t *rec;
	size_t count;
	int cut_line; /* a last line cut short, skipped (0: the file ends with a whole line) */
} forklift_steps_t;

/* Load a steps file. 0, or -1 with why = "file:line: what". A host writes whole lines, so a
 * last line without its newline was cut short by a kill: it is skipped (cut_line) and why
 * says so, "file:line: the last line is cut short (...): skipped"; why is "" otherwise. A
 * malformed whole line is an error wherever it is. */
int forklift_steps_load(const char *path, forklift_steps_t *out, char *why, size_t len);
void forklift_steps_free(forklift_steps_t *s);

/* ---- The run as a whole ---- */

typedef struct forklift_handoff {
	size_t index;       /* first record of the new owner */
	uint8_t from, to;   /* equal for a reclaim */
	uint8_t epoch;      /* the new owner's epoch */
	int reclaim;        /* the old owner took the EU back after a timeout */
	hako_time_t t_usec; /* model time of the old owner's last step */
	double x;           /* x there */
	hako_time_t
	    gap_usec; /* world time between the old owner's last step and the new one's first */
} forklift_handoff_t;

typedef struct forklift_run {
	forklift_record_t *rec; /* rec[k] = step k + 1 */
	size_t steps;
	forklift_handoff_t *handoffs; /* hand-offs and reclaims, in order */
	size_t handoff_count;
	size_t reclaims;
	size_t lost;         /* steps whose records were lost with a killed host */
	char lost_note[256]; /* the first such stretch, said ("" if none) */
} forklift_run_t;

/* Merge the hosts' records: every step from 1 to the last must have been run exactly once.
 * 0, or -1 with why ("step 1234 was run twice: by node 1 (epoch 2) and node 2 (epoch 3)").
 * A host writes its records through a buffer, so a host killed loses the last ones it ran:
 * steps without a record right after the last record of a file cut short (cut_line) are
 * those, not steps never run. They are counted in `lost`, marked `lost` and filled in by
 * forklift_run_replay; any other step without a record is an error. */
int forklift_run_merge(const forklift_steps_t *files, size_t count, forklift_run_t *run, char *why,
                       size_t len);
void forklift_run_free(forklift_run_t *run);

/* Run the model from the mission in this process, without RD, for run->steps steps and compare
 * every step with the record: the hash of the whole packed state and every field, exactly.
 * Returns the number of identical steps before the first mismatch (run->steps if none); why
 * describes the first mismatch. Lost records are filled in from this run instead: the killed
 * host computed the same (the next owner started from its context, and its first record is
 * compared). */
size_t forklift_run_replay(forklift_run_t *run, const forklift_mission_t *m, char *why, size_t len);

#endif
