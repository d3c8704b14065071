/* The follower's CPU budget (record_budget.h). */
#include "record_budget.h"

#include <stdlib.h>
#include <string.h>

#include "hako/log.h"

void rec_budget_init(rec_budget_t *b, double cpus)
{
	memset(b, 0, sizeof(*b));
	b->automatic = cpus < 0;
	b->cpus = b->automatic ? REC_AUTO_START : cpus;
	rec_budget_pause(b);
}

void rec_budget_pause(rec_budget_t *b)
{
	b->acct_wall0 = -1;
	b->win_wall0 = -1;
	b->quiet = 0;
	b->settled = 0;
	b->sub = 0;
	b->nactive = 0;
}

int rec_budget_may_read(const rec_budget_t *b)
{
	return !b->quiet;
}

static void window_start(rec_budget_t *b, int64_t now, int64_t world, int quiet)
{
	b->quiet = quiet;
	b->settled = 0;
	b->win_wall0 = now;
	b->win_world0 = world;
	b->win_end = now + REC_WINDOW_USEC;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, c = *(const double *)y;
	return a < c ? -1 : a > c;
}

static double median(const double *v, int n)
{
	double s[REC_CYCLE > REC_RATIOS ? REC_CYCLE : REC_RATIOS];
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Once REC_RATIOS cycles were measured with the budget as it is: it is cut when the recording
 * costs more than 1 - REC_AUTO_LOW of the world's speed (by half when it costs more than the
 * goal allows by 5 points), and grows while it costs less than 1 - REC_AUTO_HIGH. */
static void decide(rec_budget_t *b, int64_t now, int64_t cpu)
{
	if (b->nratios < REC_RATIOS) {
		return;
	}
	double r = median(b->ratios, b->nratios);
	double was = b->cpus;
	b->ratio = r;
	b->changes++;
	b->cpus_sum += b->cpus;
	b->nratios = 0;
	if (r < REC_AUTO_LOW) {
		b->cpus *= r < REC_AUTO_GOAL - 0.05 ? 0.5 : 0.7;
	} else if (r > REC_AUTO_HIGH) {
		b->cpus *= 1.25;
	}
	b->cpus = b->cpus < REC_AUTO_MIN   ? REC_AUTO_MIN
	          : b->cpus > REC_AUTO_MAX ? REC_AUTO_MAX
	                                   : b->cpus;
	HAKO_DEBUG("hako-record: budget: world speed %.3f of its speed without reads: %.3f CPUs", r,
	           b->cpus);
	if (b->cpus != was) { /* the new budget starts even */
		b->acct_wall0 = now;
		b->acct_cpu0 = cpu;
	}
}

/* The end of a cycle (its quiet window, or its last active one in a paced run). */
static void cycle_end(rec_budget_t *b, double rtf, double quiet_speed)
{
	double ref = rtf > 0 ? rtf : quiet_speed;
	if (b->nactive >= 3 && ref > 0) {
		b->ratios[b->nratios++] = median(b->active_speed, b->nactive) / ref;
	}
	b->nactive = 0;
}

/* Automatic: move between the windows; a quiet window returns how long to sleep (>= 0), else
 * -1. */
static int64_t windows(rec_budget_t *b, int64_t now, int64_t cpu, int64_t world, double rtf)
{
	if (b->win_wall0 < 0 || world < b->win_world0) { /* a start, or a reset went back */
		window_start(b, now, world, 0);
		b->nactive = 0;
		return -1;
	}
	if (b->quiet && !b->settled) {
		if (now < b->win_wall0 + REC_SETTLE_USEC) {
			return (b->win_wall0 + REC_SETTLE_USEC - now) * 1000;
		}
		window_start(b, now, world, 1); /* its speed is measured from here */
		b->settled = 1;
	}
	if (now >= b->win_end) {
		double speed = (double)(world - b->win_world0) / (double)(now - b->win_wall0);
		int was_quiet = b->quiet;
		if (!was_quiet && b->nactive < REC_CYCLE) {
			b->active_speed[b->nactive++] = speed;
		}
		b->sub = (b->sub + 1) % REC_CYCLE;
		if (b->sub == 0) {
			cycle_end(b, rtf, was_quiet ? speed : -1);
			decide(b, now, cpu);
		}
		if (was_quiet) { /* the CPU time it saved there is not spent later at once */
			b->acct_wall0 = now;
			b->acct_cpu0 = cpu;
		}
		/* The last window of a cycle is quiet; a paced run is compared with its pace. */
		window_start(b, now, world, b->sub == REC_CYCLE - 1 && rtf <= 0);
	}
	if (!b->quiet) {
		return -1;
	}
	if (!b->settled) {
		return REC_SETTLE_USEC * 1000;
	}
	int64_t left = (b->win_end - now) * 1000;
	return left < 1000000 ? left : 1000000; /* nothing to read: look at the world each ms */
}

int64_t rec_budget_nap(rec_budget_t *b, int64_t now_usec, int64_t cpu_ns, int64_t world_usec,
                       double rtf, int64_t poll_ns)
{
	if (b->acct_wall0 < 0) {
		b->acct_wall0 = now_usec;
		b->acct_cpu0 = cpu_ns;
	}
	if (b->automatic) {
		int64_t q = windows(b, now_usec, cpu_ns, world_usec, rtf);
		if (q >= 0) {
			return q;
		}
	}
	if (b->cpus <= 0) {
		return poll_ns;
	}
	/* Its CPU time (sampler and writer) against the wall time since the accounting began:
	 * over budget, it sleeps until it is back under (at most 100 ms at a time, to see the
	 * run stop). */
	int64_t over = cpu_ns - b->acct_cpu0 -
	               (int64_t)(b->cpus * (double)(now_usec - b->acct_wall0) * 1000.0);
	if (over > 0) {
		int64_t need = (int64_t)((double)over / b->cpus);
		return need > poll_ns ? (need < 100000000 ? need : 100000000) : poll_ns;
	}
	return poll_ns;
}
