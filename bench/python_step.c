/* python_step: what stepping and PDU calls cost from Python (hakopy) against the same in C, in
 * one run.
 *
 * Calls: hakopy.pdu_write / hakopy.pdu_read of a 64 B PDU (python_step.py calls, a child
 * running the interpreter hakopy was built for), beside the C calls hako_asset_pdu_write /
 * hako_asset_pdu_read (a forked child) and Python's own floor: an empty Python function called
 * with the same four arguments, and a bytearray(64) copy (what pdu_read returns). Each sample
 * is a batch of calls timed together; a row's p50 is the median of the batch means.
 *
 * Lock-step: two assets of one domain (delta = Dmax = 1000 us, free running, Hakoniwa's
 * hako_asset_start with on_simulation_step), each reading the other's 64 B PDU and writing its
 * own every step, until the stop time ends the run after a fixed number of steps: asset "a" in
 * C with a Python asset (python_step.py lockstep), against a with a C asset b. a, C in both,
 * times the run: world steps / wall time from its first step to its last. Solo: one asset
 * alone (C, or Python), the same step reading back its own PDU: the cost of a step without
 * anyone to wait for, so the Python asset's own cost per step is the difference.
 *
 * Rounds interleave the variants; every run has fresh processes and a fresh domain.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "hako/domain.h"
#include "hako/hako_asset.h"

#define ROBOT       "bench"
#define PDU_BYTES   64
#define DELTA_USEC  1000
#define CALLS       1000 /* calls per batch */
#define MAX_BATCHES 100000
#define MAX_ROUNDS  16
#define SAMPLE_CAP  (1u << 21)
#define WAIT_USEC   30000000

enum {
	V_C_WRITE,
	V_C_READ,
	V_PY_WRITE,
	V_PY_READ,
	V_PY_EMPTY,
	V_PY_COPY,
	V_LOCK_CC,
	V_LOCK_PYC,
	V_SOLO_C,
	V_SOLO_PY,
	NVARIANTS
};
static const char *const variant_names[NVARIANTS] = {
    "c-pdu-write",       "c-pdu-read",   "py-pdu-write",  "py-pdu-read", "py-empty-call",
    "py-bytearray-copy", "c-c-lockstep", "py-c-lockstep", "c-solo",      "py-solo"};

/* Shared with the forked children. */
struct shared {
	char error[200];
	/* the C call child: batch totals in ns */
	uint32_t ncalls;
	uint64_t call_ns[2][MAX_BATCHES];
	bench_cpu_t call_cpu;
	/* the lock-step and solo assets: [0] = a, [1] = b (Python: from its result line) */
	struct {
		uint64_t steps, bad;
		bench_cpu_t cpu;
	} asset[2];
	int64_t t_first, t_last; /* a's first and last step, ns (py-solo: the Python asset's) */
	uint64_t nsamples;
	uint32_t samples[SAMPLE_CAP]; /* ns between a's steps */
};

struct cell {
	bench_samples_t s;
	uint64_t count;
	bench_cpu_t cpu;
	int64_t wall_ns;
	double round_rate[MAX_ROUNDS];
	int rounds;
	uint64_t bad;
};

static char g_domain[64];
static struct shared *g_sh;
static int g_verbose;
static char g_python[PATH_MAX], g_pythonpath[PATH_MAX], g_script[PATH_MAX], g_pdudef[PATH_MAX];

static void cleanup(void)
{
	bench_children_kill();
	if (g_domain[0] != '\0') {
		hako_domain_remove(g_domain);
	}
}

static void reap(pid_t pid, const char *what)
{
	int status;
	if (bench_children_wait(pid, &status) != 0) {
		bench_die("%s: child %d failed (status 0x%x)", what, (int)pid, status);
	}
}

/* Run python_step.py with args; its stdout comes back in *out. */
static pid_t spawn_python(const char *const *args, FILE **out)
{
	int p[2];
	if (pipe(p) != 0) {
		bench_die("pipe: %s", strerror(errno));
	}
	pid_t pid = bench_children_fork();
	if (pid == 0) {
		close(p[0]);
		if (dup2(p[1], STDOUT_FILENO) < 0) {
			_exit(127);
		}
		close(p[1]);
		setenv("PYTHONPATH", g_pythonpath, 1);
		setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
		char *argv[8];
		int n = 0;
		argv[n++] = g_python;
		argv[n++] = g_script;
		for (int i = 0; args[i] != NULL && n < 7; i++) {
			argv[n++] = (char *)args[i];
		}
		argv[n] = NULL;
		execv(g_python, argv);
		fprintf(stderr, "python_step: cannot run %s: %s\n", g_python, strerror(errno));
		_exit(127);
	}
	close(p[1]);
	*out = fdopen(p[0], "r");
	if (*out == NULL) {
		bench_die("fdopen: %s", strerror(errno));
	}
	return pid;
}

/* The next line of a Python child (without its newline), or bench_die at its end. */
static const char *python_line(FILE *f, const char *what)
{
	static char *line;
	static size_t cap;
	ssize_t n = getline(&line, &cap, f);
	if (n < 0) {
		bench_die("%s: the Python child ended early (its error is above)", what);
	}
	if (n > 0 && line[n - 1] == '\n') {
		line[n - 1] = '\0';
	}
	return line;
}

/* A domain of its own with the two 64 B channels of robot "bench". */
static hako_domain_t *domain_create(void)
{
	hako_domain_config_t cfg;
	hako_domain_config_init(&cfg);
	cfg.max_assets = 8;
	cfg.max_channels = 16;
	cfg.arena_bytes = 1u << 20;
	hako_domain_t *dom;
	hako_channel_t *ch;
	int r = hako_domain_create(g_domain, &cfg, &dom);
	for (int i = 0; r == 0 && i < 2; i++) {
		r = hako_channel_create(dom, ROBOT, i, PDU_BYTES, &ch);
	}
	if (r != 0) {
		bench_die("domain %s: %s", g_domain, hako_strerror(r));
	}
	return dom;
}

static void domain_destroy(hako_domain_t *dom)
{
	hako_domain_close(dom);
	hako_domain_remove(g_domain);
}

/* ---- call costs ---- */

static inline void escape(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static void c_calls_child(long batches)
{
	if (hako_asset_attach_core() != 0) {
		bench_child_fail("attach: %s", hako_strerror(hako_asset_last_error(NULL)));
	}
	static char src[PDU_BYTES], dst[PDU_BYTES];
	memset(src, 0x5a, sizeof(src));
	bench_cpu_t c0 = bench_cpu_self();
	for (long b = -1; b < batches; b++) { /* batch -1: warm-up */
		for (int v = 0; v < 2; v++) {
			int64_t t0 = bench_now_ns();
			for (int i = 0; i < CALLS; i++) {
				src[0] = (char)i;
				int r = v == 0 ? hako_asset_pdu_write(ROBOT, 0, src, PDU_BYTES)
				               : hako_asset_pdu_read(ROBOT, 0, dst, PDU_BYTES);
				if (r != 0) {
					bench_child_fail("%s: %d", variant_names[v], r);
				}
				escape(dst);
			}
			if (b >= 0) {
				g_sh->call_ns[v][b] = (uint64_t)(bench_now_ns() - t0);
			}
		}
	}
	g_sh->call_cpu = bench_cpu_sub(bench_cpu_self(), c0);
	g_sh->ncalls = (uint32_t)batches;
	hako_asset_unregister();
	_exit(0);
}

static void run_calls(long batches, int with_c, int with_python, struct cell *cells)
{
	hako_domain_t *dom = domain_create();
	if (with_c) {
		pid_t pid = bench_children_fork();
		if (pid == 0) {
			c_calls_child(batches);
		}
		reap(pid, "c calls");
	}
	for (int v = 0; with_c && v < 2; v++) {
		for (uint32_t b = 0; b < g_sh->ncalls; b++) {
			bench_samples_push(&cells[V_C_WRITE + v].s, g_sh->call_ns[v][b]);
		}
		cells[V_C_WRITE + v].count += (uint64_t)g_sh->ncalls * CALLS;
		cells[V_C_WRITE + v].cpu.user += g_sh->call_cpu.user / 2;
		cells[V_C_WRITE + v].cpu.sys += g_sh->call_cpu.sys / 2;
	}
	if (with_python) {
		char nb[32], nc[32];
		snprintf(nb, sizeof(nb), "%ld", batches);
		snprintf(nc, sizeof(nc), "%d", CALLS);
		const char *args[] = {"calls", nb, nc, NULL};
		FILE *f;
		pid_t pid = spawn_python(args, &f);
		bench_cpu_t c0 = bench_proc_cpu(pid);
		for (;;) {
			const char *line = python_line(f, "python calls");
			if (strcmp(line, "done") == 0) {
				break;
			}
			char name[32];
			unsigned long long ns;
			if (sscanf(line, "sample %31s %llu", name, &ns) != 2) {
				bench_die("python calls: unexpected line '%s'", line);
			}
			for (int v = V_PY_WRITE; v <= V_PY_COPY; v++) {
				if (strcmp(name, variant_names[v]) == 0) {
					bench_samples_push(&cells[v].s, ns);
					cells[v].count += CALLS;
				}
			}
		}
		bench_cpu_t c = bench_cpu_sub(bench_proc_cpu(pid), c0);
		for (int v = V_PY_WRITE; v <= V_PY_COPY; v++) {
			cells[v].cpu.user += c.user / 4;
			cells[v].cpu.sys += c.sys / 4;
		}
		fclose(f);
		reap(pid, "python calls");
	}
	domain_destroy(dom);
}

/* ---- lock-step ---- */

/* A C asset: reads channel `in`, writes channel `out`; `record`: times the run (asset a). */
static struct {
	int slot, in, out, record;
	uint64_t count, bad;
	char buf[PDU_BYTES];
} A;

static int c_step(hako_asset_context_t *ctx)
{
	(void)ctx;
	if (A.record) {
		int64_t now = bench_now_ns();
		if (A.count == 0) {
			g_sh->t_first = now;
		} else if (g_sh->nsamples < SAMPLE_CAP) {
			g_sh->samples[g_sh->nsamples++] = (uint32_t)(now - g_sh->t_last);
		}
		g_sh->t_last = now;
	}
	A.count++;
	char in[PDU_BYTES];
	uint64_t v;
	hako_asset_pdu_read(ROBOT, A.in, in, PDU_BYTES);
	memcpy(&v, in, sizeof(v));
	if (v != A.count && v != A.count - 1) {
		A.bad++;
	}
	memcpy(A.buf, &A.count, sizeof(A.count));
	hako_asset_pdu_write(ROBOT, A.out, A.buf, PDU_BYTES);
	return 0;
}

static void c_asset_child(const char *name, int slot, int in, int out, int record, int ready_fd)
{
	A.slot = slot;
	A.in = in;
	A.out = out;
	A.record = record;
	hako_asset_callbacks_t cb = {.on_simulation_step = c_step};
	if (hako_asset_register(name, NULL, &cb, DELTA_USEC, HAKO_ASSET_MODEL_PLANT) != 0) {
		const char *msg;
		hako_asset_last_error(&msg);
		bench_child_fail("asset %s: register: %s", name, msg);
	}
	if (bench_write_full(ready_fd, "r", 1) != 0) {
		bench_child_fail("asset %s: ready pipe", name);
	}
	bench_cpu_t c0 = bench_cpu_self();
	hako_asset_start(); /* returns after the stop time and the driver's reset */
	g_sh->asset[slot].cpu = bench_cpu_sub(bench_cpu_self(), c0);
	g_sh->asset[slot].steps = A.count;
	g_sh->asset[slot].bad = A.bad;
	hako_asset_unregister();
	_exit(0);
}

/* One run of V_LOCK_CC (a and b in C), V_LOCK_PYC (a in C, b in Python), V_SOLO_C (a alone) or
 * V_SOLO_PY (b in Python alone). A pair's assets read each other's channel; a solo asset reads
 * back what it wrote the step before (the same check holds: step k reads k - 1). */
static void run_assets(int v, uint64_t steps, struct cell *cell)
{
	const char *what = variant_names[v];
	int has_c_b = v == V_LOCK_CC, has_py = v == V_LOCK_PYC || v == V_SOLO_PY;
	int has_a = v != V_SOLO_PY;
	memset(g_sh, 0, offsetof(struct shared, samples));
	hako_domain_t *dom = domain_create();
	int r = hako_domain_set_stop_time(dom, (hako_time_t)steps * DELTA_USEC);
	if (r != 0) {
		bench_die("stop time: %s", hako_strerror(r));
	}
	int ready[2];
	if (pipe(ready) != 0) {
		bench_die("pipe: %s", strerror(errno));
	}
	/* Fork before the master thread exists. */
	pid_t pa = 0, pb = 0;
	if (has_a && (pa = bench_children_fork()) == 0) {
		close(ready[0]);
		int in = v == V_SOLO_C ? 0 : 1;
		c_asset_child("a", 0, in, 0, 1, ready[1]);
	}
	FILE *pyout = NULL;
	if (has_py) {
		char n[32];
		snprintf(n, sizeof(n), "%llu", (unsigned long long)steps);
		const char *in = v == V_SOLO_PY ? "1" : "0";
		const char *args[] = {"lockstep", g_pdudef, n, in, "1", NULL};
		pb = spawn_python(args, &pyout);
	} else if (has_c_b && (pb = bench_children_fork()) == 0) {
		close(ready[0]);
		c_asset_child("b", 1, 0, 1, 0, ready[1]);
	}
	close(ready[1]);
	hako_master_config_t mc = {DELTA_USEC, DELTA_USEC, 0.0};
	hako_master_t *master;
	if ((r = hako_master_start(dom, &mc, &master)) != 0) {
		bench_die("master start: %s", hako_strerror(r));
	}
	for (int i = 0; i < has_a + has_c_b; i++) {
		char c;
		if (bench_read_full(ready[0], &c, 1) != 0) {
			bench_die("%s: a C asset did not register", what);
		}
	}
	close(ready[0]);
	if (has_py && strcmp(python_line(pyout, what), "ready") != 0) {
		bench_die("%s: the Python asset did not say ready", what);
	}
	bench_cpu_t c0 = bench_cpu_self();
	if ((r = hako_domain_start(dom)) != 0) {
		bench_die("%s: start: %s", what, hako_strerror(r));
	}
	/* Looked at every 2 ms, not waited for: hako_domain_wait_state sleeps on the word each
	 * world step bumps, so a waiter there would cost the stepping process a FUTEX_WAKE a step.
	 */
	int64_t deadline = bench_now_ns() + ((int64_t)steps * 100 + WAIT_USEC) * 1000; /* 10 k/s */
	int st;
	while ((st = hako_domain_state(dom)) != HAKO_STATE_STOPPED && st != HAKO_STATE_ERROR &&
	       bench_now_ns() < deadline) {
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	if (st != HAKO_STATE_STOPPED) {
		hako_domain_info_t info;
		hako_domain_get_info(dom, &info);
		bench_die("%s: the run did not stop by itself (state %s, world time %lld us%s%s)",
		          what, hako_state_name(hako_domain_state(dom)),
		          (long long)hako_domain_world_time(dom), info.error_reason[0] ? ": " : "",
		          info.error_reason);
	}
	bench_cpu_t mine = bench_cpu_sub(bench_cpu_self(), c0);
	if ((r = hako_domain_reset(dom)) != 0) {
		bench_die("%s: reset: %s", what, hako_strerror(r));
	}
	if (has_py) {
		const char *line = python_line(pyout, what);
		unsigned long long n, b;
		long long first, last;
		bench_cpu_t c;
		if (sscanf(line, "result steps=%llu bad=%llu user=%lf sys=%lf first=%lld last=%lld",
		           &n, &b, &c.user, &c.sys, &first, &last) != 6) {
			bench_die("%s: unexpected line '%s'", what, line);
		}
		g_sh->asset[1].steps = n;
		g_sh->asset[1].bad = b;
		g_sh->asset[1].cpu = c;
		if (!has_a) { /* solo: the Python asset timed itself (the same clock) */
			g_sh->t_first = first;
			g_sh->t_last = last;
		}
		fclose(pyout);
	}
	if (has_a) {
		reap(pa, what);
	}
	if (pb > 0) {
		reap(pb, what);
	}
	hako_master_stop(master);
	domain_destroy(dom);

	for (int i = 0; i < 2; i++) {
		if ((i == 0 ? has_a : has_py || has_c_b) && g_sh->asset[i].steps != steps) {
			bench_die("%s: asset %s ran %llu steps, not %llu", what, i == 0 ? "a" : "b",
			          (unsigned long long)g_sh->asset[i].steps,
			          (unsigned long long)steps);
		}
		cell->bad += g_sh->asset[i].bad;
		cell->cpu.user += g_sh->asset[i].cpu.user;
		cell->cpu.sys += g_sh->asset[i].cpu.sys;
	}
	cell->cpu.user += mine.user;
	cell->cpu.sys += mine.sys;
	int64_t wall = g_sh->t_last - g_sh->t_first;
	cell->count += steps - 1;
	for (uint64_t i = 0; i < g_sh->nsamples; i++) {
		bench_samples_push(&cell->s, g_sh->samples[i]);
	}
	cell->wall_ns += wall;
	double rate = wall > 0 ? (double)(steps - 1) * 1e9 / (double)wall : 0;
	if (cell->rounds < MAX_ROUNDS) {
		cell->round_rate[cell->rounds++] = rate;
	}
	if (g_verbose) {
		fprintf(stderr, "  %s: %llu steps in %.3f s: %.0f steps/s\n", what,
		        (unsigned long long)steps, (double)wall / 1e9, rate);
	}
}

/* ---- where the Python side is ---- */

/* The folder of this executable (the build tree's bench/), "" if unknown. */
static void exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	char *slash = strrchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
	} else {
		buf[0] = '\0';
	}
}

/* "" when Python can run: the script imports hakopy. Otherwise why not. */
static const char *python_missing(void)
{
	static char why[2 * PATH_MAX + 100];
	if (g_python[0] == '\0' || g_pythonpath[0] == '\0') {
		return "hakopy was not built (configure with -DHAKO_BUILD_PYTHON=ON; it needs "
		       "python3-dev)";
	}
	if (access(g_script, R_OK) != 0 || access(g_pdudef, R_OK) != 0) {
		snprintf(why, sizeof(why), "%s or %s is missing", g_script, g_pdudef);
		return why;
	}
	const char *args[] = {"probe", NULL};
	FILE *f;
	pid_t pid = spawn_python(args, &f);
	char line[64] = "";
	if (fgets(line, sizeof(line), f) == NULL) {
		line[0] = '\0';
	}
	fclose(f);
	int status;
	bench_children_wait(pid, &status);
	if (strcmp(line, "ok\n") != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(why, sizeof(why), "%s cannot import hakopy from %s (its error is above)",
		         g_python, g_pythonpath);
		return why;
	}
	return "";
}

/* ---- results ---- */

static double median(double *v, int n)
{
	for (int i = 1; i < n; i++) { /* insertion sort: a few rounds */
		double x = v[i];
		int j = i - 1;
		for (; j >= 0 && v[j] > x; j--) {
			v[j + 1] = v[j];
		}
		v[j + 1] = x;
	}
	return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: python_step [options]\n"
	        "  --quick          short runs (CI smoke run)\n"
	        "  --rounds R       interleaved rounds (default 3)\n"
	        "  --steps N        world steps of each lock-step or solo run (default 200000)\n"
	        "  --batches N      batches of %d calls per call variant and round (default 300)\n"
	        "  --variants LIST  of c-pdu-write,c-pdu-read,py-pdu-write,py-pdu-read,\n"
	        "                   py-empty-call,py-bytearray-copy,c-c-lockstep,py-c-lockstep,\n"
	        "                   c-solo,py-solo (default: all)\n"
	        "  --python EXE     the interpreter (default: the one hakopy was built for)\n"
	        "  --pythonpath DIR where hakopy is (default: the build tree's python/)\n"
	        "  -v, --verbose    progress on stderr\n",
	        CALLS);
}

/* "a,b" of variant names into on[]; 0, or -1 naming the unknown one on stderr. */
static int parse_variants(const char *list, int *on)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", list);
	memset(on, 0, sizeof(int) * NVARIANTS);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t != NULL;
	     t = strtok_r(NULL, ",", &save)) {
		int v = 0;
		while (v < NVARIANTS && strcmp(t, variant_names[v]) != 0) {
			v++;
		}
		if (v == NVARIANTS) {
			fprintf(stderr, "python_step: unknown variant '%s'\n", t);
			return -1;
		}
		on[v] = 1;
	}
	return 0;
}

static void print_rounds(const struct cell *c, const char *name)
{
	printf("# round steps/s %s:", name);
	for (int j = 0; j < c->rounds; j++) {
		printf(" %.0f", c->round_rate[j]);
	}
	printf("; reads of a PDU not from step k-1 or k: %llu\n", (unsigned long long)c->bad);
}

int main(int argc, char **argv)
{
	long rounds = 3, batches = 300;
	uint64_t steps = 200000;
	int quick = 0;
	int on[NVARIANTS];
	for (int v = 0; v < NVARIANTS; v++) {
		on[v] = 1;
	}
#ifdef HAKO_PYTHON
	snprintf(g_python, sizeof(g_python), "%s", HAKO_PYTHON);
	snprintf(g_pythonpath, sizeof(g_pythonpath), "%s", HAKO_PYTHON_DIR);
#endif
	static const struct option opts[] = {
	    {"quick", no_argument, NULL, 'q'},
	    {"rounds", required_argument, NULL, 'r'},
	    {"steps", required_argument, NULL, 'n'},
	    {"batches", required_argument, NULL, 'b'},
	    {"variants", required_argument, NULL, 'V'},
	    {"python", required_argument, NULL, 'p'},
	    {"pythonpath", required_argument, NULL, 'P'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int o;
	while ((o = getopt_long(argc, argv, "qr:n:b:V:p:P:vh", opts, NULL)) != -1) {
		switch (o) {
		case 'q': quick = 1; break;
		case 'r': rounds = atol(optarg); break;
		case 'n': steps = strtoull(optarg, NULL, 10); break;
		case 'b': batches = atol(optarg); break;
		case 'V':
			if (parse_variants(optarg, on) != 0) {
				usage(stderr);
				return 2;
			}
			break;
		case 'p': snprintf(g_python, sizeof(g_python), "%s", optarg); break;
		case 'P': snprintf(g_pythonpath, sizeof(g_pythonpath), "%s", optarg); break;
		case 'v': g_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (quick) {
		rounds = 1;
		steps = 5000;
		batches = 10;
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || steps < 2 || steps > 1000000000 || batches < 1 ||
	    batches > MAX_BATCHES) {
		usage(stderr);
		return 2;
	}
	char dir[PATH_MAX];
	exe_dir(dir, sizeof(dir));
	if (snprintf(g_script, sizeof(g_script), "%s/python_step.py", dir) >=
	        (int)sizeof(g_script) ||
	    snprintf(g_pdudef, sizeof(g_pdudef), "%s/python_step_pdudef.json", dir) >=
	        (int)sizeof(g_pdudef)) {
		fprintf(stderr, "python_step: the folder of this program is too long: %s\n", dir);
		return 1;
	}
	snprintf(g_domain, sizeof(g_domain), "bench-py-%d", (int)getpid());
	setenv("HAKO_DOMAIN", g_domain, 1); /* the compatible API's domain, in every child */
	bench_exit_init("python_step", cleanup, 1);
	g_sh = bench_shared_alloc(sizeof(*g_sh));
	bench_die_detail("child", g_sh->error);
	bench_child_fail_init(g_sh->error, sizeof(g_sh->error));

	const char *missing = python_missing();
	int py = missing[0] == '\0';
	if (!py) {
		fprintf(stderr, "python_step: skipped: the Python variants: %s\n", missing);
		on[V_PY_WRITE] = on[V_PY_READ] = on[V_PY_EMPTY] = on[V_PY_COPY] = 0;
		on[V_LOCK_PYC] = on[V_SOLO_PY] = 0;
	}
	static struct cell cells[NVARIANTS];
	int c_calls = on[V_C_WRITE] || on[V_C_READ];
	int py_calls = on[V_PY_WRITE] || on[V_PY_READ] || on[V_PY_EMPTY] || on[V_PY_COPY];
	for (long rd = 0; rd < rounds; rd++) {
		if (g_verbose) {
			fprintf(stderr, "round %ld/%ld\n", rd + 1, rounds);
		}
		if (c_calls || py_calls) {
			run_calls(batches, c_calls, py_calls, cells);
		}
		for (int v = V_LOCK_CC; v <= V_SOLO_PY; v++) {
			if (on[v]) {
				run_assets(v, steps, &cells[v]);
			}
		}
	}

	puts(BENCH_CSV_HEADER);
	bench_stats_t st[NVARIANTS];
	double rate[NVARIANTS] = {0};
	memset(st, 0, sizeof(st));
	for (int v = 0; v < NVARIANTS; v++) {
		struct cell *c = &cells[v];
		if (!on[v] || c->count == 0) {
			continue;
		}
		if (v < V_LOCK_CC) {
			st[v] = bench_stats(&c->s, 1.0 / CALLS);
			rate[v] = st[v].p50 > 0 ? 1e6 / st[v].p50 : 0;
		} else {
			double mean = (double)c->wall_ns / (double)c->count / 1000.0;
			if (c->s.n > 0) {
				st[v] = bench_stats(&c->s, 1.0);
			} else { /* py-solo: timed as a whole by the Python asset */
				st[v] = (bench_stats_t){mean, mean, mean, mean, mean, mean};
			}
			st[v].mean = mean;
			double r[MAX_ROUNDS];
			memcpy(r, c->round_rate, sizeof(r));
			rate[v] = median(r, c->rounds);
		}
		bench_print_row("python_step", variant_names[v], PDU_BYTES, c->count, &st[v],
		                rate[v], c->cpu);
	}
	printf(
	    "# method: calls: batches of %d calls timed together (python: time.perf_counter_ns "
	    "around a for loop, the callable bound to a local name), %ld batches per variant "
	    "and round, row p50 = median of the batch means; lock-step (two assets) and solo "
	    "(one): Hakoniwa's hako_asset_start / hakopy.start, each step reads one 64 B PDU and "
	    "writes one, delta = Dmax = %d us, free running, %llu steps per run ending at the "
	    "stop time, steps/s = median of the rounds' rates, timed by the C asset a from its "
	    "first step to its last (py-solo: by the Python asset, and its percentiles are the "
	    "mean), latency = a's step-to-step time; %ld interleaved rounds; %d CPUs\n",
	    CALLS, batches, DELTA_USEC, (unsigned long long)steps, rounds, bench_ncpus());
	if (!py) {
		printf("# skipped: the Python variants: %s\n", missing);
	}
	printf("# ns per call p50:");
	for (int v = 0; v < V_LOCK_CC; v++) {
		if (on[v] && cells[v].count > 0) {
			printf(" %s %.0f", variant_names[v], st[v].p50 * 1e3);
		}
	}
	printf("\n");
	for (int v = V_LOCK_CC; v <= V_SOLO_PY; v++) {
		if (on[v] && cells[v].rounds > 0) {
			print_rounds(&cells[v], variant_names[v]);
		}
	}
	if (on[V_SOLO_C] && on[V_SOLO_PY] && rate[V_SOLO_C] > 0 && rate[V_SOLO_PY] > 0) {
		printf("# solo step: py-solo %.0f ns, c-solo %.0f ns: the Python asset's own cost "
		       "per step (GIL, the callback, two hakopy calls, struct) %+.0f ns\n",
		       1e9 / rate[V_SOLO_PY], 1e9 / rate[V_SOLO_C],
		       1e9 / rate[V_SOLO_PY] - 1e9 / rate[V_SOLO_C]);
	}
	if (on[V_PY_WRITE] && on[V_PY_EMPTY] && on[V_PY_READ] && on[V_PY_COPY]) {
		printf(
		    "# hakopy over Python's floor p50: pdu_write - empty call %+.0f ns, pdu_read - "
		    "bytearray copy %+.0f ns\n",
		    (st[V_PY_WRITE].p50 - st[V_PY_EMPTY].p50) * 1e3,
		    (st[V_PY_READ].p50 - st[V_PY_COPY].p50) * 1e3);
	}
	if (on[V_PY_WRITE] && on[V_C_WRITE] && on[V_PY_READ] && on[V_C_READ]) {
		printf("# ratio py-pdu-write/c-pdu-write p50: %.1f; py-pdu-read/c-pdu-read p50: "
		       "%.1f\n",
		       st[V_PY_WRITE].p50 / st[V_C_WRITE].p50,
		       st[V_PY_READ].p50 / st[V_C_READ].p50);
	}
	if (on[V_LOCK_PYC] && on[V_LOCK_CC] && rate[V_LOCK_CC] > 0) {
		printf("# ratio py-c-lockstep/c-c-lockstep steps/s: %.2f\n",
		       rate[V_LOCK_PYC] / rate[V_LOCK_CC]);
	}
	for (int v = V_PY_WRITE; v <= V_PY_READ; v++) {
		if (on[v]) {
			printf("# goal %s p50 <= 1 us: %.3f us %s\n", variant_names[v], st[v].p50,
			       st[v].p50 <= 1.0 ? "PASS" : "MISS");
		}
	}
	if (on[V_LOCK_PYC]) {
		printf("# goal py-c-lockstep >= 100000 steps/s: %.0f %s\n", rate[V_LOCK_PYC],
		       rate[V_LOCK_PYC] >= 100000 ? "PASS" : "MISS");
	}
	fflush(stdout);
	for (int v = 0; v < NVARIANTS; v++) {
		bench_samples_free(&cells[v].s);
	}
	bench_die_detail(NULL, NULL);
	bench_shared_free(g_sh, sizeof(*g_sh));
	return 0;
}
