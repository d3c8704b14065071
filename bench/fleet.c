/* fleet: drones stepped by hako at 1 ms, as fast as possible (issue 15's benchmark).
 *
 * Variants, for each fleet size N (--drones):
 *   plain-d<N>        the floor: the N drones (samples/fleet/drone.h, with the fleet's mission)
 *                     stepped in one plain C loop in this process; no hako, no PDUs;
 *   d<N>-p<P>-n1      one domain (sized for the fleet: fleet_host_channels / _bytes), its
 *                     master free-running with delta = Dmax = 1 ms, P forked host processes
 *                     (fleet_host.h) each a member stepping N/P drones every world step and
 *                     writing each drone's 4 PDUs (motor, pos, velocity, status) every step.
 * Each run covers --seconds of world time (steps of 1 ms) from the start, --rounds times.
 * ops_per_s = world steps per wall second (so the real-time factor is ops_per_s / 1000); the
 * latency columns are the wall time of one world step (plain: of one loop over the N drones);
 * CPU: every process of the variant. Comment lines: the real-time factor and hako's cost
 * against the floor (ratio of the step rates), per size.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"
#include "drone.h"
#include "fleet_host.h"
#include "hako/domain.h"

#define MAX_PROCS  16
#define MAX_SIZES  16
#define MAX_STEPS  (1u << 20)
#define WAIT_USEC  60000000
#define DELTA_USEC 1000

struct shared {
	_Atomic int done;
	int64_t t_start, t_end; /* host 0's clock, ns */
	uint64_t steps;
	char error[200];
	bench_cpu_t cpu[MAX_PROCS];
	uint32_t step_ns[MAX_STEPS];
};

static char g_domain[64];
static pid_t g_children[MAX_PROCS];
static int g_nchildren;
static struct shared *g_sh;
static int g_verbose;

static void cleanup(void)
{
	for (int i = 0; i < g_nchildren; i++) {
		if (g_children[i] > 0) {
			kill(g_children[i], SIGKILL);
		}
	}
	if (g_domain[0] != '\0') {
		hako_domain_remove(g_domain);
	}
}

static void child_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void child_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g_sh->error, sizeof(g_sh->error), fmt, ap);
	va_end(ap);
	_exit(4);
}

struct cell {
	bench_samples_t s;
	uint64_t steps;
	int64_t wall_ns;
	bench_cpu_t cpu;
	double round_rate[64];
	int rounds;
};

static double rate(const struct cell *c)
{
	return c->wall_ns > 0 ? (double)c->steps * 1e9 / (double)c->wall_ns : 0;
}

/* ---- the floor: one plain loop ---- */

static void run_plain(size_t n, uint64_t steps, struct cell *cell)
{
	drone_params_t p;
	drone_params_default(&p);
	drone_t *d = calloc(n, sizeof(*d));
	if (d == NULL) {
		bench_die("plain: out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		drone_init(&d[i], (double)(i % 32) * 1.5, (double)(i / 32) * 1.5, 0.0);
	}
	bench_cpu_t c0 = bench_cpu_self();
	int64_t t0 = bench_now_ns(), prev = t0;
	for (uint64_t k = 1; k <= steps; k++) {
		int64_t now_us = (int64_t)k * DELTA_USEC;
		for (size_t i = 0; i < n; i++) {
			fleet_mission_apply(&d[i], i, n, now_us);
			drone_step(&d[i], &p);
		}
		int64_t t = bench_now_ns();
		bench_samples_push(&cell->s, (uint64_t)(t - prev));
		prev = t;
	}
	int64_t wall = bench_now_ns() - t0;
	bench_cpu_t c = bench_cpu_sub(bench_cpu_self(), c0);
	cell->cpu.user += c.user;
	cell->cpu.sys += c.sys;
	cell->steps += steps;
	cell->wall_ns += wall;
	if (cell->rounds < 64) {
		cell->round_rate[cell->rounds++] = (double)steps * 1e9 / (double)wall;
	}
	free(d);
}

/* ---- a host process ---- */

static void host_main(int idx, int nprocs, size_t n, uint64_t steps, int ready_fd, int done_fd)
{
	hako_domain_t *dom;
	int r = hako_domain_open(g_domain, &dom);
	if (r != 0) {
		child_fail("host %d: open domain: %s", idx, hako_strerror(r));
	}
	size_t first = n * (size_t)idx / (size_t)nprocs;
	size_t last = n * (size_t)(idx + 1) / (size_t)nprocs;
	fleet_host_t *h;
	if ((r = fleet_host_open(dom, first, last - first, n, &h)) != 0) {
		child_fail("host %d: %zu drones: %s", idx, last - first, hako_strerror(r));
	}
	char name[32];
	snprintf(name, sizeof(name), "host-%d", idx);
	hako_member_t *m;
	if ((r = hako_member_register(dom, name, DELTA_USEC, &m)) != 0) {
		child_fail("host %d: register: %s", idx, hako_strerror(r));
	}
	if (bench_write_full(ready_fd, "r", 1) != 0) {
		child_fail("host %d: ready pipe", idx);
	}
	int ev = 0;
	if ((r = hako_member_wait_event(m, WAIT_USEC, &ev)) != 0 || ev != HAKO_EVENT_START) {
		child_fail("host %d: no start event (%s, event %d)", idx, hako_strerror(r), ev);
	}
	hako_member_ack(m, HAKO_EVENT_START);
	bench_cpu_t c0 = bench_cpu_self();
	int64_t prev = 0;
	uint64_t k = 0;
	while ((r = hako_member_step_wait(m)) == 0) {
		int64_t now = hako_member_time(m) + DELTA_USEC;
		if ((r = fleet_host_step(h, now)) != 0) {
			child_fail("host %d: PDU write: %s", idx, hako_strerror(r));
		}
		if (idx == 0 && !atomic_load(&g_sh->done)) {
			int64_t t = bench_now_ns();
			if (k == 0) {
				g_sh->t_start = t;
			} else if (k - 1 < MAX_STEPS) {
				g_sh->step_ns[k - 1] = (uint32_t)(t - prev);
			}
			prev = t;
			if (++k > steps) {
				g_sh->t_end = t;
				g_sh->steps = steps;
				atomic_store(&g_sh->done, 1);
				if (bench_write_full(done_fd, "d", 1) != 0) {
					child_fail("host %d: done pipe", idx);
				}
			}
		}
		hako_member_step_done(m);
	}
	g_sh->cpu[idx] = bench_cpu_sub(bench_cpu_self(), c0);
	if (r != HAKO_EINTR) {
		child_fail("host %d: step_wait: %s", idx, hako_strerror(r));
	}
	if (hako_member_wait_event(m, WAIT_USEC, &ev) == 0 && ev != HAKO_EVENT_NONE) {
		hako_member_ack(m, ev);
	}
	hako_member_unregister(m);
	fleet_host_close(h);
	hako_domain_close(dom);
	_exit(0);
}

static void run_hosts(size_t n, int nprocs, uint64_t steps, struct cell *cell)
{
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = (uint32_t)nprocs + 8;
	cfg.max_channels = (uint32_t)(fleet_host_channels(n) + 16);
	cfg.arena_bytes = fleet_host_bytes(n) + (1u << 20);
	hako_domain_t *dom;
	int r = hako_domain_create(g_domain, &cfg, &dom);
	if (r != 0) {
		bench_die("create domain %s: %s", g_domain, hako_strerror(r));
	}
	int ready[2], done[2];
	if (pipe(ready) != 0 || pipe(done) != 0) {
		bench_die("pipe: %s", strerror(errno));
	}
	memset(g_sh, 0, offsetof(struct shared, step_ns));
	pid_t parent = getpid();
	fflush(stdout);
	for (int i = 0; i < nprocs; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			bench_die("fork: %s", strerror(errno));
		}
		if (pid == 0) {
			bench_child_init(parent);
			close(ready[0]);
			close(done[0]);
			host_main(i, nprocs, n, steps, ready[1], done[1]);
		}
		g_children[g_nchildren++] = pid;
	}
	close(ready[1]);
	close(done[1]);
	hako_master_config_t mc = {DELTA_USEC, DELTA_USEC, 0.0};
	hako_master_t *master;
	if ((r = hako_master_start(dom, &mc, &master)) != 0) {
		bench_die("master start: %s", hako_strerror(r));
	}
	for (int i = 0; i < nprocs; i++) {
		char c;
		if (bench_read_full(ready[0], &c, 1) != 0) {
			bench_die("d%zu-p%d: a host did not start: %s", n, nprocs, g_sh->error);
		}
	}
	close(ready[0]);
	bench_cpu_t c0 = bench_cpu_self();
	if ((r = hako_domain_start(dom)) != 0) {
		bench_die("start: %s", hako_strerror(r));
	}
	struct pollfd pfd = {done[0], POLLIN, 0};
	int pr;
	while ((pr = poll(&pfd, 1, WAIT_USEC / 1000)) < 0 && errno == EINTR) {
	}
	if (pr <= 0) {
		bench_die("d%zu-p%d: no end (world time %lld us): %s", n, nprocs,
		          (long long)hako_domain_world_time(dom), g_sh->error);
	}
	if ((r = hako_domain_stop(dom)) != 0 ||
	    (r = hako_domain_wait_state(dom, HAKO_STATE_STOPPED, WAIT_USEC)) != 0) {
		bench_die("stop: %s", hako_strerror(r));
	}
	bench_cpu_t mine = bench_cpu_sub(bench_cpu_self(), c0);
	for (int i = 0; i < g_nchildren; i++) {
		int status = 0;
		if (waitpid(g_children[i], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			g_children[i] = 0;
			bench_die("d%zu-p%d: host %d failed (status 0x%x): %s", n, nprocs, i,
			          status, g_sh->error);
		}
		g_children[i] = 0;
	}
	g_nchildren = 0;
	close(done[0]);
	hako_master_stop(master);
	hako_domain_close(dom);
	hako_domain_remove(g_domain);
	cell->cpu.user += mine.user;
	cell->cpu.sys += mine.sys;
	for (int i = 0; i < nprocs; i++) {
		cell->cpu.user += g_sh->cpu[i].user;
		cell->cpu.sys += g_sh->cpu[i].sys;
	}
	int64_t wall = g_sh->t_end - g_sh->t_start;
	cell->steps += g_sh->steps;
	cell->wall_ns += wall;
	for (uint64_t i = 0; i < g_sh->steps && i < MAX_STEPS; i++) {
		bench_samples_push(&cell->s, g_sh->step_ns[i]);
	}
	if (cell->rounds < 64) {
		cell->round_rate[cell->rounds++] = (double)g_sh->steps * 1e9 / (double)wall;
	}
	if (g_verbose) {
		fprintf(stderr, "  d%zu-p%d: %llu steps in %.3f s: RTF %.2f\n", n, nprocs,
		        (unsigned long long)g_sh->steps, (double)wall / 1e9,
		        (double)g_sh->steps * 1e6 / (double)wall);
	}
}

static void print_cell(const char *variant, size_t n, struct cell *c)
{
	bench_stats_t st = bench_stats(&c->s, 1.0);
	bench_print_row("fleet", variant, n, c->steps, &st, rate(c), c->cpu);
	if (c->rounds > 1) {
		printf("# rounds %s RTF:", variant);
		for (int i = 0; i < c->rounds; i++) {
			printf(" %.2f", c->round_rate[i] / 1000.0);
		}
		printf("\n");
	}
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: fleet [--drones LIST] [--procs LIST] [--seconds S] [--rounds R] [--quick] "
	        "[-v]\n"
	        "  --drones LIST  fleet sizes (default 128,256,512,1024,2048)\n"
	        "  --procs LIST   host processes on one node (default 1,2,4)\n"
	        "  --seconds S    world seconds per run (default 2)\n"
	        "  --rounds R     runs of each variant (default 3)\n"
	        "  --quick        128 and 1024 drones, 1 and 2 processes, 0.3 s, 1 round\n");
}

int main(int argc, char **argv)
{
	long sizes[MAX_SIZES] = {128, 256, 512, 1024, 2048}, procs[MAX_PROCS] = {1, 2, 4};
	int nsizes = 5, nprocs = 3, rounds = 3;
	double seconds = 2.0;
	static const struct option longopts[] = {
	    {"drones", required_argument, NULL, 'd'},  {"procs", required_argument, NULL, 'p'},
	    {"seconds", required_argument, NULL, 's'}, {"rounds", required_argument, NULL, 'r'},
	    {"quick", no_argument, NULL, 'q'},         {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': nsizes = bench_parse_list(optarg, sizes, MAX_SIZES); break;
		case 'p': nprocs = bench_parse_list(optarg, procs, MAX_PROCS); break;
		case 's': seconds = atof(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'q':
			sizes[0] = 128;
			sizes[1] = 1024;
			nsizes = 2;
			procs[0] = 1;
			procs[1] = 2;
			nprocs = 2;
			seconds = 0.3;
			rounds = 1;
			break;
		case 'v': g_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (nsizes <= 0 || nprocs <= 0 || seconds <= 0 || seconds > 1000 || rounds <= 0 ||
	    rounds > 64) {
		usage(stderr);
		return 2;
	}
	for (int i = 0; i < nsizes; i++) {
		if (sizes[i] <= 0 || sizes[i] > 65536) {
			fprintf(stderr, "fleet: --drones %ld: 1..65536\n", sizes[i]);
			return 2;
		}
	}
	for (int i = 0; i < nprocs; i++) {
		if (procs[i] <= 0 || procs[i] > MAX_PROCS) {
			fprintf(stderr, "fleet: --procs %ld: 1..%d\n", procs[i], MAX_PROCS);
			return 2;
		}
	}
	uint64_t steps = (uint64_t)(seconds * 1000.0);
	if (steps > MAX_STEPS) {
		steps = MAX_STEPS;
	}
	snprintf(g_domain, sizeof(g_domain), "bench-fleet-%d", (int)getpid());
	bench_exit_init("fleet", cleanup, 1);
	g_sh = bench_shared_alloc(sizeof(*g_sh));
	if (g_sh == NULL) {
		bench_die("shared memory");
	}
	printf("# fleet: drones stepped at 1 ms by hako host processes (4 PDUs per drone per step) "
	       "against the same drones in one plain loop; %.1f s of world time, %d round(s); "
	       "RTF = ops_per_s / 1000; %d CPUs\n",
	       seconds, rounds, bench_ncpus());
	puts(BENCH_CSV_HEADER);
	for (int si = 0; si < nsizes; si++) {
		size_t n = (size_t)sizes[si];
		struct cell plain = {0};
		struct cell hosts[MAX_PROCS];
		memset(hosts, 0, sizeof(hosts));
		/* Rounds interleave the variants: a slow moment of the machine hits them all. */
		for (int r = 0; r < rounds; r++) {
			run_plain(n, steps, &plain);
			for (int pi = 0; pi < nprocs; pi++) {
				run_hosts(n, (int)procs[pi], steps, &hosts[pi]);
			}
		}
		char variant[64];
		snprintf(variant, sizeof(variant), "plain-d%zu", n);
		print_cell(variant, n, &plain);
		for (int pi = 0; pi < nprocs; pi++) {
			snprintf(variant, sizeof(variant), "d%zu-p%ld-n1", n, procs[pi]);
			print_cell(variant, n, &hosts[pi]);
			printf(
			    "# d%zu-p%ld-n1: RTF %.2f (floor, one plain loop on one core: %.2f); "
			    "hako/floor step rate %.2f; %.0f PDU writes/s\n",
			    n, procs[pi], rate(&hosts[pi]) / 1000.0, rate(&plain) / 1000.0,
			    rate(&plain) > 0 ? rate(&hosts[pi]) / rate(&plain) : 0.0,
			    rate(&hosts[pi]) * (double)n * FLEET_CHANNELS);
		}
		bench_samples_free(&plain.s);
		for (int pi = 0; pi < nprocs; pi++) {
			bench_samples_free(&hosts[pi].s);
		}
		fflush(stdout);
	}
	bench_shared_free(g_sh, sizeof(*g_sh));
	return 0;
}
