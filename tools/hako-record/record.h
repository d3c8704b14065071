/* hako-record: the PDUs of a domain into an MCAP file (docs/hako-record.md). */
#ifndef HAKO_RECORD_H
#define HAKO_RECORD_H

#include <signal.h>
#include <stdint.h>

#include "hako/domain.h"
#include "mcap.h"

#define REC_MAX_FILTERS 64

/* A PDU chosen by --pdu or --pdu-rate: "robot/name", "robot:id", "name" (any robot) or
 * ROBOT followed by a slash and a star (every PDU of ROBOT); rate_hz 0: every write. */
typedef struct rec_pdu_spec {
	char robot[HAKO_NAME_MAX]; /* "" = any */
	char name[HAKO_NAME_MAX];  /* "" = by id, "*" = any */
	int32_t id;                /* -1 = by name */
	double rate_hz;
} rec_pdu_spec_t;

typedef struct rec_opts {
	const char *domain;
	const char *out;
	const char *pdudef;
	const char *robots[REC_MAX_FILTERS];
	int nrobots;
	const char *types[REC_MAX_FILTERS];
	int ntypes;
	rec_pdu_spec_t pdus[REC_MAX_FILTERS]; /* --pdu: which */
	int npdus;
	rec_pdu_spec_t rates[REC_MAX_FILTERS]; /* --pdu-rate: how often */
	int nrates;
	double rate_hz;      /* every PDU, 0 = every write */
	size_t buffer_bytes; /* between the sampler and the writer */
	hako_mcap_compression_t compression;
	size_t chunk_size;
	int skip_unknown; /* channels without a type in the pdudef: not recorded */
	int until_stop;   /* end when the run stops */
	int wait_ms;      /* for the domain to appear */
	int quiet;
	int poll_usec;         /* running: look again after this much wall time */
	double cpu_budget;     /* a follower's CPU time per wall time at most (0: no limit, < 0:
	                        * automatic, what keeps the world at AUTO_GOAL of its speed) */
	int wake_on_write;     /* running: wake at each write instead (costs every writer) */
	int idle;              /* a follower: SCHED_IDLE while it records */
	const char *asset;     /* non-NULL: read at each step of an asset of this name (docs) */
	int test_stall_writer; /* tests: the writer thread waits for the end (forces drops) */
} rec_opts_t;

/* Record until *stop is set (a signal), the run stops (until_stop), or the domain's conductor
 * goes away. 0, or the first error (said on stderr). */
int rec_run(const rec_opts_t *o, volatile sig_atomic_t *stop);

#endif
