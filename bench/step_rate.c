/* step_rate: lock-step world steps per wall second with k asset processes.
 *
 * The bench process creates a domain and runs its master (delta = Dmax = 1000 us, free running);
 * k forked asset processes register a member each (delta 1000 us) and loop
 * hako_member_step_wait / hako_member_step_done with no work in the step. Asset 0 times the
 * run: from the first step it is granted (world time moving) until the world has advanced the
 * target number of steps or the time budget is spent, and samples the duration of one world
 * step (1 in SAMPLE_STRIDE steps). Baseline in the same run: `pipe-lockstep`, a coordinator
 * and 2 workers doing the same lock-step round over pipes. Last, `idle`: 2 assets blocked in
 * step_wait while a third member never steps; the CPU of all processes over a wall interval.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "hako/domain.h"

#define DELTA_USEC    1000
#define MAX_K         64
#define MAX_ROUNDS    64
#define SAMPLE_STRIDE 8 /* power of two */
#define SAMPLE_CAP    (1u << 21)
#define WAIT_USEC     30000000

/* Shared with the forked children. */
struct shared {
	_Atomic int done;
	int64_t t_start, t_end; /* ns, asset 0's clock */
	hako_time_t w_start, w_end;
	uint64_t nsamples;
	char error[160];
	struct {
		bench_cpu_t cpu;
		int64_t wall_ns;
		long vcsw, ivcsw; /* context switches of the stepping loop */
	} proc[MAX_K];
	uint32_t samples[SAMPLE_CAP]; /* ns per world step */
};

struct cell {
	bench_samples_t s; /* ns per world step */
	uint64_t steps;
	int64_t wall_ns;
	bench_cpu_t cpu;      /* all processes, all rounds */
	double sim_seconds;   /* simulated seconds covered by `cpu` */
	double idle_fraction; /* idle: CPU / wall summed over the processes */
	double round_rate[MAX_ROUNDS];
	int rounds;
	uint64_t all_steps; /* world steps of every asset loop, warm-up and tail included */
	long vcsw, ivcsw;   /* the assets' context switches over those steps */
};

_Static_assert(MAX_K <= BENCH_MAX_CHILDREN, "k assets are k children");

static char g_domain[64];
static struct shared *g_sh;
static int g_verbose;

static void cleanup(void)
{
	bench_children_kill();
	if (g_domain[0] != '\0') {
		hako_domain_remove(g_domain);
	}
}

/* Voluntary and involuntary context switches of this process so far. */
static void csw_self(long *v, long *iv)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*v = ru.ru_nvcsw;
	*iv = ru.ru_nivcsw;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = {ns / 1000000000, ns % 1000000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

/* ---- an asset process ---- */

static void asset_main(int idx, int record, uint64_t target_steps, int64_t limit_ns, int ready_fd,
                       int done_fd)
{
	hako_domain_t *dom;
	hako_member_t *m;
	char name[32];
	int r = hako_domain_open(g_domain, &dom);
	if (r != 0) {
		bench_child_fail("asset %d: open domain: %s", idx, hako_strerror(r));
	}
	snprintf(name, sizeof(name), "asset-%d", idx);
	if ((r = hako_member_register(dom, name, DELTA_USEC, &m)) != 0) {
		bench_child_fail("asset %d: register: %s", idx, hako_strerror(r));
	}
	if (bench_write_full(ready_fd, "r", 1) != 0) {
		bench_child_fail("asset %d: ready pipe", idx);
	}
	int ev = 0;
	if ((r = hako_member_wait_event(m, WAIT_USEC, &ev)) != 0 || ev != HAKO_EVENT_START) {
		bench_child_fail("asset %d: no start event (%s, event %d)", idx, hako_strerror(r),
		                 ev);
	}
	if ((r = hako_member_ack(m, HAKO_EVENT_START)) != 0) {
		bench_child_fail("asset %d: ack start: %s", idx, hako_strerror(r));
	}
	bench_cpu_t c0 = bench_cpu_self();
	long v0, iv0;
	csw_self(&v0, &iv0);
	int64_t w0 = bench_now_ns();
	hako_time_t w_target = 0;
	int64_t prev = 0;
	for (uint64_t i = 0;; i++) {
		if ((r = hako_member_step_wait(m)) != 0) {
			break; /* HAKO_EINTR: stopped */
		}
		if (record) {
			int finish = 0;
			if (i == 0) {
				g_sh->t_start = bench_now_ns();
				g_sh->w_start = hako_domain_world_time(dom);
				w_target = g_sh->w_start + (hako_time_t)target_steps * DELTA_USEC;
			} else if ((i & (SAMPLE_STRIDE - 1)) == SAMPLE_STRIDE - 1) {
				prev = bench_now_ns();
			} else if ((i & (SAMPLE_STRIDE - 1)) == 0) {
				int64_t now = bench_now_ns();
				if (g_sh->nsamples < SAMPLE_CAP) {
					g_sh->samples[g_sh->nsamples++] = (uint32_t)(now - prev);
				}
				finish = now - g_sh->t_start >= limit_ns;
			}
			if (finish || hako_domain_world_time(dom) >= w_target) {
				g_sh->t_end = bench_now_ns();
				g_sh->w_end = hako_domain_world_time(dom);
				record = 0;
				atomic_store(&g_sh->done, 1);
				if (bench_write_full(done_fd, "d", 1) != 0) {
					bench_child_fail("asset %d: done pipe", idx);
				}
			}
		}
		hako_member_step_done(m);
	}
	g_sh->proc[idx].cpu = bench_cpu_sub(bench_cpu_self(), c0);
	g_sh->proc[idx].wall_ns = bench_now_ns() - w0;
	long v1, iv1;
	csw_self(&v1, &iv1);
	g_sh->proc[idx].vcsw = v1 - v0;
	g_sh->proc[idx].ivcsw = iv1 - iv0;
	if (r != HAKO_EINTR) {
		bench_child_fail("asset %d: step_wait: %s", idx, hako_strerror(r));
	}
	/* Acknowledge the stop (or whatever ended the run) so the domain reaches Stopped. */
	if (hako_member_wait_event(m, WAIT_USEC, &ev) == 0 && ev != HAKO_EVENT_NONE) {
		hako_member_ack(m, ev);
	}
	hako_member_unregister(m);
	hako_domain_close(dom);
	_exit(0);
}

/* ---- one run of k assets (or the idle measurement) ---- */

static void run_assets(int k, int idle, uint64_t target_steps, int64_t limit_ns, int64_t idle_ns,
                       struct cell *cell)
{
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = (uint32_t)(k + 8 > 40 ? k + 8 : 40);
	cfg.max_channels = 16;
	cfg.arena_bytes = 1u << 20;
	hako_domain_t *dom;
	int r = hako_domain_create(g_domain, &cfg, &dom);
	if (r != 0) {
		bench_die("create domain %s: %s", g_domain, hako_strerror(r));
	}
	int ready[2], done[2];
	if (pipe(ready) != 0 || pipe(done) != 0) {
		bench_die("pipe: %s", strerror(errno));
	}
	memset(g_sh, 0, offsetof(struct shared, samples));
	/* Fork before the master thread exists. */
	for (int i = 0; i < k; i++) {
		if (bench_children_fork() == 0) {
			close(ready[0]);
			close(done[0]);
			asset_main(i, !idle && i == 0, target_steps, limit_ns, ready[1], done[1]);
		}
	}
	close(ready[1]);
	close(done[1]);
	hako_master_config_t mc = {DELTA_USEC, DELTA_USEC, 0.0};
	hako_master_t *master;
	if ((r = hako_master_start(dom, &mc, &master)) != 0) {
		bench_die("master start: %s", hako_strerror(r));
	}
	for (int i = 0; i < k; i++) {
		char c;
		if (bench_read_full(ready[0], &c, 1) != 0) {
			bench_die("k=%d: an asset did not register", k);
		}
	}
	close(ready[0]);
	hako_member_t *holder = NULL;
	if (idle && (r = hako_member_register(dom, "idle-holder", DELTA_USEC, &holder)) != 0) {
		bench_die("register holder: %s", hako_strerror(r));
	}

	bench_cpu_t c0 = bench_cpu_self();
	if ((r = hako_domain_start(dom)) != 0) {
		bench_die("start: %s", hako_strerror(r));
	}
	if (idle && (r = hako_member_ack(holder, HAKO_EVENT_START)) != 0) {
		bench_die("holder ack start: %s", hako_strerror(r));
	}
	if ((r = hako_domain_wait_state(dom, HAKO_STATE_RUNNING, WAIT_USEC)) != 0) {
		bench_die("k=%d: not running: %s", k, hako_strerror(r));
	}
	bench_cpu_t p_idle = {0, 0};
	int64_t p_idle_wall = 0;
	if (idle) {
		sleep_ns(100000000); /* let the assets settle in their waits */
		bench_cpu_t i0 = bench_cpu_self();
		int64_t t0 = bench_now_ns();
		sleep_ns(idle_ns);
		p_idle = bench_cpu_sub(bench_cpu_self(), i0);
		p_idle_wall = bench_now_ns() - t0;
	} else {
		struct pollfd pfd = {done[0], POLLIN, 0};
		int timeout_ms = (int)(limit_ns / 1000000) + 60000;
		int pr;
		while ((pr = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR) {
		}
		if (pr <= 0) {
			bench_die("k=%d: no progress report from asset 0 (world time %lld us)", k,
			          (long long)hako_domain_world_time(dom));
		}
	}
	if ((r = hako_domain_stop(dom)) != 0) {
		bench_die("stop: %s", hako_strerror(r));
	}
	if (idle && (r = hako_member_ack(holder, HAKO_EVENT_STOP)) != 0) {
		bench_die("holder ack stop: %s", hako_strerror(r));
	}
	if ((r = hako_domain_wait_state(dom, HAKO_STATE_STOPPED, WAIT_USEC)) != 0) {
		bench_die("k=%d: not stopped: %s", k, hako_strerror(r));
	}
	bench_cpu_t c1 = bench_cpu_self();
	hako_time_t world_end = hako_domain_world_time(dom);
	bench_children_wait_all(idle ? "idle" : "k run");
	close(done[0]);
	hako_member_unregister(holder);
	hako_master_stop(master);
	hako_domain_close(dom);
	hako_domain_remove(g_domain);

	if (idle) {
		double frac =
		    p_idle_wall > 0 ? (p_idle.user + p_idle.sys) * 1e9 / (double)p_idle_wall : 0.0;
		cell->cpu.user += p_idle.user;
		cell->cpu.sys += p_idle.sys;
		for (int i = 0; i < k; i++) {
			bench_cpu_t c = g_sh->proc[i].cpu;
			cell->cpu.user += c.user;
			cell->cpu.sys += c.sys;
			if (g_sh->proc[i].wall_ns > 0) {
				frac += (c.user + c.sys) * 1e9 / (double)g_sh->proc[i].wall_ns;
			}
		}
		cell->idle_fraction = frac;
		if (g_verbose) {
			fprintf(stderr, "  idle: bench process %.4f s cpu in %.3f s",
			        p_idle.user + p_idle.sys, (double)p_idle_wall / 1e9);
			for (int i = 0; i < k; i++) {
				fprintf(stderr, "; asset %d %.4f s in %.3f s", i,
				        g_sh->proc[i].cpu.user + g_sh->proc[i].cpu.sys,
				        (double)g_sh->proc[i].wall_ns / 1e9);
			}
			fprintf(stderr, "\n");
		}
		cell->wall_ns += p_idle_wall;
		return;
	}
	bench_cpu_t mine = bench_cpu_sub(c1, c0);
	cell->cpu.user += mine.user;
	cell->cpu.sys += mine.sys;
	for (int i = 0; i < k; i++) {
		cell->cpu.user += g_sh->proc[i].cpu.user;
		cell->cpu.sys += g_sh->proc[i].cpu.sys;
		cell->vcsw += g_sh->proc[i].vcsw;
		cell->ivcsw += g_sh->proc[i].ivcsw;
	}
	cell->all_steps += (uint64_t)(world_end / DELTA_USEC);
	cell->sim_seconds += (double)world_end / 1e6;
	uint64_t steps = (uint64_t)((g_sh->w_end - g_sh->w_start) / DELTA_USEC);
	int64_t wall = g_sh->t_end - g_sh->t_start;
	cell->steps += steps;
	cell->wall_ns += wall;
	for (uint64_t i = 0; i < g_sh->nsamples; i++) {
		bench_samples_push(&cell->s, g_sh->samples[i]);
	}
	if (cell->rounds < MAX_ROUNDS) {
		cell->round_rate[cell->rounds++] =
		    wall > 0 ? (double)steps * 1e9 / (double)wall : 0;
	}
	if (g_verbose) {
		fprintf(stderr, "  k=%-3d %10llu steps in %.3f s: %.0f steps/s\n", k,
		        (unsigned long long)steps, (double)wall / 1e9,
		        wall > 0 ? (double)steps * 1e9 / (double)wall : 0.0);
	}
}

/* ---- the baseline: lock-step over pipes, a coordinator and `workers` processes ---- */

static void run_pipe_lockstep(int workers, uint64_t target_steps, int64_t limit_ns,
                              struct cell *cell)
{
	int to[MAX_K][2], from[MAX_K][2];
	memset(g_sh, 0, offsetof(struct shared, samples));
	for (int i = 0; i < workers; i++) {
		if (pipe(to[i]) != 0 || pipe(from[i]) != 0) {
			bench_die("pipe: %s", strerror(errno));
		}
		if (bench_children_fork() == 0) {
			/* The parent's ends of every pipe made so far (it already closed the
			 * workers' ends of the earlier ones). */
			for (int j = 0; j <= i; j++) {
				close(to[j][1]);
				close(from[j][0]);
			}
			bench_cpu_t c0 = bench_cpu_self();
			long v0, iv0;
			csw_self(&v0, &iv0);
			int64_t w0 = bench_now_ns();
			char c;
			while (bench_read_full(to[i][0], &c, 1) == 0) {
				if (bench_write_full(from[i][1], &c, 1) != 0) {
					bench_child_fail("pipe worker %d: write", i);
				}
			}
			g_sh->proc[i].cpu = bench_cpu_sub(bench_cpu_self(), c0);
			g_sh->proc[i].wall_ns = bench_now_ns() - w0;
			long v1, iv1;
			csw_self(&v1, &iv1);
			g_sh->proc[i].vcsw = v1 - v0;
			g_sh->proc[i].ivcsw = iv1 - iv0;
			_exit(0);
		}
		close(to[i][0]);
		close(from[i][1]);
	}
	char c = 's';
	const uint64_t warm = 200;
	bench_cpu_t c0 = bench_cpu_self();
	long v0, iv0;
	csw_self(&v0, &iv0);
	int64_t t_start = 0, prev = 0, now = 0;
	uint64_t steps = 0;
	for (uint64_t i = 0;; i++) {
		for (int w = 0; w < workers; w++) {
			if (bench_write_full(to[w][1], &c, 1) != 0) {
				bench_die("pipe-lockstep: write");
			}
		}
		for (int w = 0; w < workers; w++) {
			if (bench_read_full(from[w][0], &c, 1) != 0) {
				bench_die("pipe-lockstep: read");
			}
		}
		now = bench_now_ns();
		if (i == warm) {
			t_start = now;
		} else if (i > warm) {
			bench_samples_push(&cell->s, (uint64_t)(now - prev));
			steps++;
			if (steps >= target_steps || now - t_start >= limit_ns) {
				break;
			}
		}
		prev = now;
	}
	for (int w = 0; w < workers; w++) {
		close(to[w][1]);
		close(from[w][0]);
	}
	bench_children_wait_all("pipe-lockstep");
	bench_cpu_t mine = bench_cpu_sub(bench_cpu_self(), c0);
	long v1, iv1;
	csw_self(&v1, &iv1);
	cell->vcsw += v1 - v0;
	cell->ivcsw += iv1 - iv0;
	cell->cpu.user += mine.user;
	cell->cpu.sys += mine.sys;
	for (int i = 0; i < workers; i++) {
		cell->cpu.user += g_sh->proc[i].cpu.user;
		cell->cpu.sys += g_sh->proc[i].cpu.sys;
		cell->vcsw += g_sh->proc[i].vcsw;
		cell->ivcsw += g_sh->proc[i].ivcsw;
	}
	cell->all_steps += steps + warm + 1;
	/* One round stands for one world step of DELTA_USEC (warm-up rounds included, as the
	 * CPU covers them too). */
	cell->sim_seconds += (double)(steps + warm + 1) * DELTA_USEC / 1e6;
	int64_t wall = now - t_start;
	cell->steps += steps;
	cell->wall_ns += wall;
	if (cell->rounds < MAX_ROUNDS) {
		cell->round_rate[cell->rounds++] =
		    wall > 0 ? (double)steps * 1e9 / (double)wall : 0;
	}
	if (g_verbose) {
		fprintf(stderr, "  pipe-lockstep %10llu steps in %.3f s\n",
		        (unsigned long long)steps, (double)wall / 1e9);
	}
}

static double rate(const struct cell *c)
{
	return c->wall_ns > 0 ? (double)c->steps * 1e9 / (double)c->wall_ns : 0.0;
}

static void print_cell(const char *variant, struct cell *c)
{
	bench_stats_t st = bench_stats(&c->s, 1.0);
	if (c->steps > 0) {
		st.mean = (double)c->wall_ns / (double)c->steps / 1000.0;
	}
	bench_print_row("step_rate", variant, 0, c->steps, &st, rate(c), c->cpu);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: step_rate [options]\n"
	           "  --quick          short runs (CI smoke run)\n"
	           "  --rounds R       interleaved rounds (default 3)\n"
	           "  --seconds S      wall-time budget per variant, all rounds (default 2)\n"
	           "  --steps N        world-step cap per variant, all rounds (default 50000000)\n"
	           "  --k LIST         asset counts (default 1,2,8,32)\n"
	           "  --idle-seconds S wall time of the idle measurement (default 2; 0 = skip)\n"
	           "  -v, --verbose    progress on stderr\n");
}

int main(int argc, char **argv)
{
	long ks[16] = {1, 2, 8, 32};
	int nk = 4;
	long rounds = 3;
	double seconds = 2.0, idle_seconds = 2.0;
	uint64_t steps_cap = 50000000;
	int quick = 0;
	static const struct option opts[] = {
	    {"quick", no_argument, NULL, 'q'},
	    {"rounds", required_argument, NULL, 'r'},
	    {"seconds", required_argument, NULL, 's'},
	    {"steps", required_argument, NULL, 'n'},
	    {"k", required_argument, NULL, 'k'},
	    {"idle-seconds", required_argument, NULL, 'i'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int o;
	while ((o = getopt_long(argc, argv, "qr:s:n:k:i:vh", opts, NULL)) != -1) {
		switch (o) {
		case 'q': quick = 1; break;
		case 'r': rounds = atol(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'n': steps_cap = strtoull(optarg, NULL, 10); break;
		case 'k':
			nk = bench_parse_list(optarg, ks, 16);
			if (nk <= 0) {
				usage(stderr);
				return 2;
			}
			break;
		case 'i': idle_seconds = atof(optarg); break;
		case 'v': g_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (quick) {
		seconds = 0.15;
		idle_seconds = 0.3;
		steps_cap = 100000;
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || seconds <= 0 || steps_cap < 1 ||
	    idle_seconds < 0) {
		usage(stderr);
		return 2;
	}
	for (int i = 0; i < nk; i++) {
		if (ks[i] > MAX_K - 1) {
			fprintf(stderr, "k must be at most %d\n", MAX_K - 1);
			return 2;
		}
	}
	snprintf(g_domain, sizeof(g_domain), "bench-step-%d", (int)getpid());
	bench_exit_init("step_rate", cleanup, 1);
	g_sh = bench_shared_alloc(sizeof(*g_sh));
	bench_die_detail("child", g_sh->error);
	bench_child_fail_init(g_sh->error, sizeof(g_sh->error));

	int64_t limit_ns = (int64_t)(seconds * 1e9 / (double)rounds);
	uint64_t target = (steps_cap + (uint64_t)rounds - 1) / (uint64_t)rounds;
	static struct cell cells[16], pipe_cell, idle_cell;
	for (long rd = 0; rd < rounds; rd++) {
		if (g_verbose) {
			fprintf(stderr, "round %ld/%ld\n", rd + 1, rounds);
		}
		for (int i = 0; i < nk; i++) {
			run_assets((int)ks[i], 0, target, limit_ns, 0, &cells[i]);
			if (ks[i] == 2) {
				run_pipe_lockstep(2, target, limit_ns, &pipe_cell);
			}
		}
	}
	int have_pipe = pipe_cell.rounds > 0;
	if (!have_pipe) { /* k=2 not asked for: still measure the baseline */
		for (long rd = 0; rd < rounds; rd++) {
			run_pipe_lockstep(2, target, limit_ns, &pipe_cell);
		}
	}
	int have_idle = idle_seconds > 0;
	if (have_idle) {
		run_assets(2, 1, 0, 0, (int64_t)(idle_seconds * 1e9), &idle_cell);
	}

	puts(BENCH_CSV_HEADER);
	char name[32];
	for (int i = 0; i < nk; i++) {
		snprintf(name, sizeof(name), "k=%ld", ks[i]);
		print_cell(name, &cells[i]);
	}
	print_cell("pipe-lockstep", &pipe_cell);
	if (have_idle) {
		bench_stats_t zero = {0};
		bench_print_row("step_rate", "idle", 0, 0, &zero, 0.0, idle_cell.cpu);
	}

	const char *spin = getenv("HAKO_SPIN_USEC");
	printf("# method: %ld interleaved rounds of <= %.2f s or %llu steps per variant; delta = "
	       "Dmax = %d us, free running; steps/s = world steps / wall time from the first "
	       "granted step; percentiles from 1 in %d step durations timed by asset 0; "
	       "HAKO_SPIN_USEC=%s; %d CPUs\n",
	       rounds, (double)limit_ns / 1e9, (unsigned long long)target, DELTA_USEC,
	       SAMPLE_STRIDE, spin != NULL ? spin : "(core default)", bench_ncpus());
	for (int i = 0; i < nk; i++) {
		printf("# round steps/s k=%ld:", ks[i]);
		for (int j = 0; j < cells[i].rounds; j++) {
			printf(" %.0f", cells[i].round_rate[j]);
		}
		printf("\n");
	}
	printf("# round steps/s pipe-lockstep:");
	for (int j = 0; j < pipe_cell.rounds; j++) {
		printf(" %.0f", pipe_cell.round_rate[j]);
	}
	printf("\n");
	for (int i = 0; i < nk; i++) {
		struct cell *c = &cells[i];
		if (c->sim_seconds > 0) {
			printf("# cpu per simulated second k=%ld: %.4f s (user %.4f, sys %.4f)\n",
			       ks[i], (c->cpu.user + c->cpu.sys) / c->sim_seconds,
			       c->cpu.user / c->sim_seconds, c->cpu.sys / c->sim_seconds);
		}
	}
	for (int i = 0; i < nk; i++) {
		struct cell *c = &cells[i];
		if (c->all_steps > 0) {
			printf("# assets' context switches per world step k=%ld: %.2f voluntary, "
			       "%.2f involuntary\n",
			       ks[i], (double)c->vcsw / (double)c->all_steps,
			       (double)c->ivcsw / (double)c->all_steps);
		}
	}
	if (pipe_cell.all_steps > 0) {
		printf("# context switches per round pipe-lockstep (coordinator and workers): %.2f "
		       "voluntary, %.2f involuntary\n",
		       (double)pipe_cell.vcsw / (double)pipe_cell.all_steps,
		       (double)pipe_cell.ivcsw / (double)pipe_cell.all_steps);
	}
	if (pipe_cell.sim_seconds > 0) {
		printf("# cpu per simulated second pipe-lockstep: %.4f s (user %.4f, sys %.4f)\n",
		       (pipe_cell.cpu.user + pipe_cell.cpu.sys) / pipe_cell.sim_seconds,
		       pipe_cell.cpu.user / pipe_cell.sim_seconds,
		       pipe_cell.cpu.sys / pipe_cell.sim_seconds);
	}
	printf("# reference original Hakoniwa on this machine kind (from the issue, not run here): "
	       "1 asset 77000 steps/s, 2 assets 174 steps/s\n");
	for (int i = 0; i < nk; i++) {
		if (ks[i] == 1) {
			printf("# ratio k=1/hakoniwa-1-asset steps/s: %.2f\n",
			       rate(&cells[i]) / 77000.0);
		}
		if (ks[i] == 2) {
			printf("# ratio k=2/hakoniwa-2-assets steps/s: %.1f\n",
			       rate(&cells[i]) / 174.0);
			if (rate(&pipe_cell) > 0) {
				printf("# ratio k=2/pipe-lockstep steps/s: %.2f\n",
				       rate(&cells[i]) / rate(&pipe_cell));
			}
		}
	}
	for (int i = 0; i < nk; i++) {
		if (ks[i] == 2 || ks[i] == 8) {
			double goal = ks[i] == 2 ? 100000 : 10000;
			printf("# goal k=%ld >= %.0f steps/s: %.0f %s\n", ks[i], goal,
			       rate(&cells[i]), rate(&cells[i]) >= goal ? "PASS" : "MISS");
		}
	}
	if (have_idle) {
		double pct = idle_cell.idle_fraction * 100.0;
		printf("# idle CPU: %.3f %% of one core (goal < 1 %%) %s\n", pct,
		       pct < 1.0 ? "PASS" : "MISS");
	}
	fflush(stdout);
	for (int i = 0; i < nk; i++) {
		bench_samples_free(&cells[i].s);
	}
	bench_samples_free(&pipe_cell.s);
	bench_die_detail(NULL, NULL);
	bench_shared_free(g_sh, sizeof(*g_sh));
	return 0;
}
