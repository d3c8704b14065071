/* A follower's CPU budget (docs/hako-record.md, Speed): how long the sampler sleeps between two
 * looks so that hako-record (sampler and writer thread) uses at most a given CPU time per wall
 * time, or, automatic, as much as keeps the world at REC_AUTO_GOAL of the speed it has while
 * nothing is read. Pure arithmetic on the times it is given, so that it can be tested. */
#ifndef HAKO_RECORD_BUDGET_H
#define HAKO_RECORD_BUDGET_H

#include <stdint.h>

/* Automatic: the world's speed is measured in windows of REC_WINDOW_USEC of wall time; one in
 * REC_CYCLE is quiet (nothing read, after REC_SETTLE_USEC for the writer thread to finish what
 * it has) in a free run. Each cycle gives a ratio: the median speed of its active windows over
 * the speed of its quiet one (a paced run: over its real-time factor), so that a load that comes
 * and goes on the machine counts on both sides. Once REC_RATIOS cycles were made with the
 * budget as it is, their median ratio moves it. */
#define REC_WINDOW_USEC 50000
#define REC_SETTLE_USEC 5000
#define REC_CYCLE       10
#define REC_RATIOS      3
#define REC_AUTO_START  0.1  /* CPUs: the fixed default, known to cost a free fleet little */
#define REC_AUTO_MIN    0.01 /* never less: a slower run's slack is found again */
#define REC_AUTO_MAX    1.0  /* a CPU */
#define REC_AUTO_GOAL   0.90 /* the world's speed while recording / while not, at least */
#define REC_AUTO_LOW    0.93 /* under it the budget shrinks (a margin for the noise), */
#define REC_AUTO_HIGH   0.97 /* over it it grows */

typedef struct rec_budget {
	double cpus; /* allowed now; 0: no limit */
	int automatic;
	int64_t acct_wall0, acct_cpu0; /* CPU accounting since (wall us, CPU ns); -1: not started */
	/* automatic */
	int quiet, settled;             /* in a quiet window; its settling time is over */
	int sub;                        /* window number within the cycle */
	int64_t win_wall0, win_end;     /* the window began, ends (wall us) */
	int64_t win_world0;             /* world time when it began */
	double active_speed[REC_CYCLE]; /* this cycle's */
	int nactive;
	double ratios[REC_RATIOS]; /* the cycles' since the budget last moved */
	int nratios;
	double ratio;     /* the median of the last decision; 0: none yet */
	uint32_t changes; /* decisions made */
	double cpus_sum;  /* the budget at each, for the mean said at the end */
} rec_budget_t;

/* cpus: at most this many CPUs (0: no limit, < 0: automatic). */
void rec_budget_init(rec_budget_t *b, double cpus);

/* The run is not running: the windows begin again with the next look while it runs. */
void rec_budget_pause(rec_budget_t *b);

/* A look, made while the run runs: 1 if the sampler is to read the channels now (0 in a quiet
 * window). */
int rec_budget_may_read(const rec_budget_t *b);

/* After a look at wall time now_usec, with the process's CPU time cpu_ns, the world time
 * world_usec and the domain's real-time factor rtf (0: free-running): how long to sleep before
 * the next look (ns), poll_ns at least unless a window begins sooner. */
int64_t rec_budget_nap(rec_budget_t *b, int64_t now_usec, int64_t cpu_ns, int64_t world_usec,
                       double rtf, int64_t poll_ns);

#endif
