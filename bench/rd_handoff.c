/* rd_handoff: RD hand-off latency, from the owner's release request to the first PDU the new
 * owner writes, in world time and in wall time, with a 4 KiB context.
 *
 * The bench process creates a domain and runs its master (delta = Dmax = 1000 us, free
 * running); two forked host processes register a member each (delta 1000 us, pinned to CPUs 0
 * and 1) and open RD nodes 1 and 2 of one EU. The owner, at each of its steps, writes the EU's
 * PDU and releases the EU to the other host with a context of --context bytes; the other host
 * activates it at its next step that may (restoring the context), writes the PDU, and hands it
 * back: ping-pong. Baseline in the same run, interleaved: the same two hosts in lock-step with
 * the owner writing the PDU at every step but never releasing (`lockstep-step`: the wall time of
 * one world step).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "hako/domain.h"
#include "hako/log.h"
#include "hako/msg.h"
#include "hako/pdu.h"
#include "hako/rd.h"

#define DELTA_USEC  1000
#define EU          0
#define MAX_SAMPLES 200000
#define MAX_ROUNDS  64
#define WAIT_USEC   60000000

enum { PH_HANDOFF = 0, PH_STEP = 1, PH_DONE = 2 };

/* Shared with the hosts. The phase moves forward only; whoever owns the EU moves it. */
struct shared {
	_Atomic int ready;
	_Atomic int phase; /* round * 2 + PH_HANDOFF / PH_STEP, or rounds * 2 when done */
	_Atomic int done;
	char error[200];
	/* the hand-off in flight: written by the releasing host before hako_rd_release, read by
	 * the new owner after it saw the release (the status channel orders them) */
	hako_time_t rel_world;
	int64_t rel_wall_ns;
	uint64_t warm_left;
	/* samples: hand-offs (world us, wall ns) and plain steps (wall ns) */
	uint64_t n_handoff, n_step;
	int64_t handoff_world[MAX_SAMPLES];
	int64_t handoff_wall[MAX_SAMPLES];
	int64_t step_wall[MAX_SAMPLES];
	uint64_t round_handoffs[MAX_ROUNDS];
	int64_t round_handoff_wall_ns[MAX_ROUNDS]; /* sum of the samples' wall time */
	/* timed wall and CPU per phase kind, summed over the hosts */
	int64_t phase_wall_ns[2];
	bench_cpu_t phase_cpu[2];
};

static char g_domain[64];
static char g_dir[64];
static char g_rd_path[128];
static pid_t g_children[2];
static struct shared *g_sh;
static int g_verbose;
static long g_count; /* timed hand-offs (and plain steps), all rounds */
static int g_rounds;
static size_t g_ctx_bytes;

static void cleanup(void)
{
	for (int i = 0; i < 2; i++) {
		if (g_children[i] > 0) {
			kill(g_children[i], SIGKILL);
			waitpid(g_children[i], NULL, 0);
			g_children[i] = 0;
		}
	}
	if (g_domain[0] != '\0') {
		hako_domain_remove(g_domain);
	}
	if (g_dir[0] != '\0') {
		char p[160];
		snprintf(p, sizeof(p), "%s/rd.json", g_dir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/pdudef.json", g_dir);
		unlink(p);
		rmdir(g_dir);
	}
}

static void host_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void host_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g_sh->error, sizeof(g_sh->error), fmt, ap);
	va_end(ap);
	atomic_store(&g_sh->done, 1);
	_exit(4);
}

static void write_configs(size_t ctx_bytes)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/hako-bench-rd-XXXXXX");
	if (mkdtemp(g_dir) == NULL) {
		g_dir[0] = '\0';
		bench_die("mkdtemp: %s", strerror(errno));
	}
	char path[160];
	snprintf(path, sizeof(path), "%s/pdudef.json", g_dir);
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		bench_die("%s: %s", path, strerror(errno));
	}
	/* context PDU: 40 bytes of meta and base + 24-byte RD header + the context */
	fprintf(
	    f,
	    "{\"robots\": [{\"name\": \"bench\", \"shm_pdu_writers\": [\n"
	    "  {\"type\": \"geometry_msgs/Twist\", \"org_name\": \"pos\", \"channel_id\": 0, "
	    "\"pdu_size\": 72},\n"
	    "  {\"type\": \"hako_msgs/ExecutionUnitRuntimeStatus\", \"org_name\": \"status\", "
	    "\"channel_id\": 1, \"pdu_size\": 128},\n"
	    "  {\"type\": \"hako_msgs/ExecutionUnitRuntimeContext\", \"org_name\": \"context\", "
	    "\"channel_id\": 2, \"pdu_size\": %zu}]}]}\n",
	    40 + 24 + ctx_bytes);
	fclose(f);
	snprintf(g_rd_path, sizeof(g_rd_path), "%s/rd.json", g_dir);
	f = fopen(g_rd_path, "w");
	if (f == NULL) {
		bench_die("%s: %s", g_rd_path, strerror(errno));
	}
	fprintf(
	    f,
	    "{\"pdudef\": \"pdudef.json\",\n"
	    " \"nodes\": [{\"id\": 1, \"name\": \"host-1\"}, {\"id\": 2, \"name\": \"host-2\"}],\n"
	    " \"handoff_timeout_usec\": 10000000,\n"
	    " \"execution_units\": [{\"id\": 0, \"name\": \"bench\", \"robot\": \"bench\",\n"
	    "   \"writes\": [\"pos\"], \"candidates\": [1, 2], \"initial_owner\": 1,\n"
	    "   \"max_context_bytes\": %zu, \"status\": \"status\", \"context\": \"context\"}]}\n",
	    ctx_bytes);
	fclose(f);
}

/* ---- a host process ---- */

/* Hand-offs (and plain steps) timed in round r: the count spread over the rounds. */
static uint64_t quota(int r)
{
	return (uint64_t)(g_count / g_rounds + (r < g_count % g_rounds ? 1 : 0));
}

static uint64_t quota_upto(int r)
{
	uint64_t n = 0;
	for (int i = 0; i <= r; i++) {
		n += quota(i);
	}
	return n;
}

static int phase_kind(int phase)
{
	return phase >= g_rounds * 2 ? PH_DONE : phase % 2;
}

/* The owner moves the phase on once its quota is reached. */
static void next_phase(int phase)
{
	atomic_compare_exchange_strong(&g_sh->phase, &phase, phase + 1);
	if (phase + 1 >= g_rounds * 2) {
		atomic_store(&g_sh->done, 1);
	}
}

static void host_main(uint8_t id)
{
	hako_domain_t *dom;
	hako_member_t *m;
	hako_rd_config_t *cfg;
	hako_rd_node_t *node;
	hako_msg_registry_t *reg;
	const hako_msg_type_t *twist;
	hako_error_t err;
	char name[16];
	int r;
	bench_pin_cpu(id - 1);
	snprintf(name, sizeof(name), "host-%u", id);
	if ((r = hako_domain_open(g_domain, &dom)) != 0 ||
	    (r = hako_member_register(dom, name, DELTA_USEC, &m)) != 0) {
		host_fail("%s: open/register: %s", name, hako_strerror(r));
	}
	if ((r = hako_rd_config_load(g_rd_path, &cfg, &err)) != 0) {
		host_fail("%s: %s:%d: %s", name, err.file, err.line, err.message);
	}
	if ((r = hako_rd_node_open(dom, cfg, id, NULL, &node)) != 0) {
		host_fail("%s: rd node: %s", name, hako_strerror(r));
	}
	if (hako_msg_registry_create(&reg) != 0 ||
	    hako_msg_registry_get(reg, "geometry_msgs/Twist", &twist, &err) != 0) {
		host_fail("%s: type geometry_msgs/Twist", name);
	}
	uint8_t *ctx = malloc(g_ctx_bytes);
	uint8_t *got = malloc(g_ctx_bytes);
	if (ctx == NULL || got == NULL) {
		host_fail("out of memory");
	}
	for (size_t i = 0; i < g_ctx_bytes; i++) {
		ctx[i] = (uint8_t)(i * 31 + id);
	}
	atomic_fetch_add(&g_sh->ready, 1);
	int ev = 0;
	if ((r = hako_member_wait_event(m, WAIT_USEC, &ev)) != 0 || ev != HAKO_EVENT_START) {
		host_fail("%s: no start (%s, event %d)", name, hako_strerror(r), ev);
	}
	hako_member_ack(m, HAKO_EVENT_START);

	uint8_t other = id == 1 ? 2 : 1;
	uint64_t model_step = 0;
	int fresh = 0;            /* activated, first PDU not written yet */
	int64_t last_step_ns = 0; /* PH_STEP: wall time of the previous owned step */
	int my_phase = atomic_load(&g_sh->phase);
	bench_cpu_t c0 = bench_cpu_self();
	int64_t w0 = bench_now_ns();
	while (hako_member_step_wait(m) == 0) {
		int64_t step_ns = bench_now_ns();
		hako_time_t now = hako_member_time(m) + DELTA_USEC;
		int phase = atomic_load(&g_sh->phase);
		if (phase != my_phase) {
			bench_cpu_t c1 = bench_cpu_self();
			if (phase_kind(my_phase) != PH_DONE) {
				bench_cpu_t d = bench_cpu_sub(c1, c0);
				g_sh->phase_cpu[phase_kind(my_phase)].user += d.user;
				g_sh->phase_cpu[phase_kind(my_phase)].sys += d.sys;
				g_sh->phase_wall_ns[phase_kind(my_phase)] += step_ns - w0;
			}
			c0 = c1;
			w0 = step_ns;
			my_phase = phase;
			last_step_ns = 0;
		}
		hako_rd_event_t rev;
		hako_rd_activation_t act;
		if ((r = hako_rd_poll(node, EU, now, &rev, got, g_ctx_bytes, &act)) != 0) {
			host_fail("%s: poll: %s", name, hako_strerror(r));
		}
		if (rev == HAKO_RD_EV_ACTIVATE) {
			if (act.ctx_len != g_ctx_bytes || got[1] != (uint8_t)(31 + other)) {
				host_fail("%s: context of %zu bytes is not the other host's", name,
				          act.ctx_len);
			}
			model_step = act.model_step;
			if ((r = hako_rd_activate(node, EU, 1, now)) != 0) {
				host_fail("%s: activate: %s", name, hako_strerror(r));
			}
			fresh = 1;
		}
		if (hako_rd_is_owner(node, EU) && phase_kind(phase) != PH_DONE) {
			model_step = (uint64_t)(now / DELTA_USEC);
			uint8_t pdu[128];
			hako_pdu_writer_t w;
			size_t len;
			hako_pdu_writer_init(&w, twist, pdu, sizeof(pdu));
			double x = (double)model_step;
			memcpy(hako_pdu_base(pdu), &x, sizeof(x));
			hako_pdu_writer_finish(&w, &len);
			if ((r = hako_rd_write(node, EU, 0, pdu, len, now)) != 0) {
				host_fail("%s: write: %s", name, hako_strerror(r));
			}
			if (fresh) {
				int64_t wall = bench_now_ns() - g_sh->rel_wall_ns;
				hako_time_t world = now - g_sh->rel_world;
				fresh = 0;
				if (g_sh->warm_left > 0) {
					g_sh->warm_left--;
				} else if (phase_kind(phase) == PH_HANDOFF &&
				           g_sh->n_handoff < MAX_SAMPLES) {
					uint64_t k = g_sh->n_handoff++;
					g_sh->handoff_world[k] = world;
					g_sh->handoff_wall[k] = wall;
					g_sh->round_handoffs[phase / 2]++;
					g_sh->round_handoff_wall_ns[phase / 2] += wall;
					if (g_sh->round_handoffs[phase / 2] >= quota(phase / 2)) {
						next_phase(
						    phase); /* keep the EU: plain steps now */
						phase++;
					}
				}
			}
			if (phase_kind(phase) == PH_HANDOFF) {
				g_sh->rel_world = now;
				g_sh->rel_wall_ns = bench_now_ns();
				if ((r = hako_rd_release(node, EU, other, ctx, g_ctx_bytes,
				                         model_step, now)) != 0) {
					host_fail("%s: release: %s", name, hako_strerror(r));
				}
			} else if (phase_kind(phase) == PH_STEP) {
				if (last_step_ns != 0 && g_sh->n_step < MAX_SAMPLES) {
					g_sh->step_wall[g_sh->n_step++] = step_ns - last_step_ns;
					if (g_sh->n_step >= quota_upto(phase / 2)) {
						next_phase(phase);
						last_step_ns = 0;
						step_ns = 0;
					}
				}
				last_step_ns = step_ns;
			}
		}
		hako_member_step_done(m);
	}
	bench_cpu_t c1 = bench_cpu_self();
	if (phase_kind(my_phase) != PH_DONE) {
		bench_cpu_t d = bench_cpu_sub(c1, c0);
		g_sh->phase_cpu[phase_kind(my_phase)].user += d.user;
		g_sh->phase_cpu[phase_kind(my_phase)].sys += d.sys;
		g_sh->phase_wall_ns[phase_kind(my_phase)] += bench_now_ns() - w0;
	}
	if (hako_member_wait_event(m, WAIT_USEC, &ev) == 0 && ev != HAKO_EVENT_NONE) {
		hako_member_ack(m, ev);
	}
	free(ctx);
	free(got);
	hako_rd_node_close(node);
	hako_rd_config_free(cfg);
	hako_msg_registry_destroy(reg);
	hako_member_unregister(m);
	hako_domain_close(dom);
	_exit(0);
}

/* ---- the bench process ---- */

static void run(void)
{
	hako_domain_config_t dc;
	hako_domain_config_default(&dc);
	dc.max_assets = 4;
	dc.max_channels = 8;
	dc.arena_bytes = 1u << 20;
	hako_domain_t *dom;
	int r = hako_domain_create(g_domain, &dc, &dom);
	if (r != 0) {
		bench_die("create domain %s: %s", g_domain, hako_strerror(r));
	}
	pid_t parent = getpid();
	fflush(stdout);
	for (int i = 0; i < 2; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			bench_die("fork: %s", strerror(errno));
		}
		if (pid == 0) {
			bench_child_init(parent);
			host_main((uint8_t)(i + 1));
		}
		g_children[i] = pid;
	}
	int64_t deadline = bench_now_ns() + (int64_t)WAIT_USEC * 1000;
	while (atomic_load(&g_sh->ready) < 2) {
		if (g_sh->error[0] != '\0' || bench_now_ns() > deadline) {
			bench_die("the hosts did not start");
		}
		usleep(1000);
	}
	hako_master_config_t mc = {DELTA_USEC, DELTA_USEC, 0.0};
	hako_master_t *master;
	if ((r = hako_master_start(dom, &mc, &master)) != 0) {
		bench_die("master start: %s", hako_strerror(r));
	}
	if ((r = hako_domain_start(dom)) != 0) {
		bench_die("start: %s", hako_strerror(r));
	}
	while (!atomic_load(&g_sh->done)) {
		if (bench_now_ns() > deadline || hako_domain_state(dom) == HAKO_STATE_ERROR) {
			bench_die("no progress: phase %d, %llu hand-offs, world time %lld us",
			          atomic_load(&g_sh->phase), (unsigned long long)g_sh->n_handoff,
			          (long long)hako_domain_world_time(dom));
		}
		usleep(2000);
	}
	if (g_sh->error[0] != '\0') {
		bench_die("a host failed");
	}
	hako_domain_stop(dom);
	if ((r = hako_domain_wait_state(dom, HAKO_STATE_STOPPED, WAIT_USEC)) != 0) {
		bench_die("not stopped: %s", hako_strerror(r));
	}
	for (int i = 0; i < 2; i++) {
		int status = 0;
		if (waitpid(g_children[i], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			g_children[i] = 0;
			bench_die("host %d failed (status 0x%x)", i + 1, status);
		}
		g_children[i] = 0;
	}
	hako_master_stop(master);
	hako_domain_close(dom);
	hako_domain_remove(g_domain);
	g_domain[0] = '\0';
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: rd_handoff [options]\n"
	        "  --quick          a short run (CI smoke run): 50 hand-offs, 1 round\n"
	        "  --count N        timed hand-offs (and plain steps), all rounds (default 1000)\n"
	        "  --rounds R       interleaved rounds (default 3)\n"
	        "  --context BYTES  context size (default 4096)\n"
	        "  -v, --verbose    progress on stderr\n");
}

int main(int argc, char **argv)
{
	long count = 1000, rounds = 3, ctx_bytes = 4096;
	static const struct option opts[] = {
	    {"quick", no_argument, NULL, 'q'},
	    {"count", required_argument, NULL, 'n'},
	    {"rounds", required_argument, NULL, 'r'},
	    {"context", required_argument, NULL, 'c'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int o, quick = 0;
	while ((o = getopt_long(argc, argv, "qn:r:c:vh", opts, NULL)) != -1) {
		switch (o) {
		case 'q': quick = 1; break;
		case 'n': count = atol(optarg); break;
		case 'r': rounds = atol(optarg); break;
		case 'c': ctx_bytes = atol(optarg); break;
		case 'v': g_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (quick) {
		count = 50;
		rounds = 1;
	}
	if (count < 1 || rounds < 1 || rounds > MAX_ROUNDS || count < rounds ||
	    count > MAX_SAMPLES || ctx_bytes < 1 || ctx_bytes > (16 << 20)) {
		usage(stderr);
		return 2;
	}
	if (getenv("HAKO_LOG") == NULL) {
		hako_log_set_level(HAKO_LOG_ERROR);
	}
	g_rounds = (int)rounds;
	g_count = count;
	g_ctx_bytes = (size_t)ctx_bytes;
	snprintf(g_domain, sizeof(g_domain), "bench-rd-%d", (int)getpid());
	bench_exit_init("rd_handoff", cleanup, 1);
	g_sh = bench_shared_alloc(sizeof(*g_sh));
	bench_die_detail("host", g_sh->error);
	g_sh->warm_left = (uint64_t)(count / 10 > 10 ? count / 10 : 10);
	write_configs(g_ctx_bytes);
	run();
	if (g_verbose) {
		fprintf(stderr, "rd_handoff: %llu hand-offs and %llu plain steps timed\n",
		        (unsigned long long)g_sh->n_handoff, (unsigned long long)g_sh->n_step);
	}

	bench_samples_t world = {0}, wall = {0}, step = {0};
	for (uint64_t i = 0; i < g_sh->n_handoff; i++) {
		bench_samples_push(&world, (uint64_t)g_sh->handoff_world[i] * 1000); /* us -> ns */
		bench_samples_push(&wall, (uint64_t)g_sh->handoff_wall[i]);
	}
	for (uint64_t i = 0; i < g_sh->n_step; i++) {
		bench_samples_push(&step, (uint64_t)g_sh->step_wall[i]);
	}
	double handoff_wall_s = (double)g_sh->phase_wall_ns[PH_HANDOFF] / 1e9;
	double step_wall_s = (double)g_sh->phase_wall_ns[PH_STEP] / 1e9;
	/* both hosts measured the same wall interval: one of them is the phase's duration */
	double handoffs_per_s = handoff_wall_s > 0 ? (double)world.n * 2.0 / handoff_wall_s : 0.0;
	double steps_per_s = step_wall_s > 0 ? (double)step.n * 2.0 / step_wall_s : 0.0;
	bench_stats_t sw = bench_stats(&world, 1.0), sl = bench_stats(&wall, 1.0),
	              ss = bench_stats(&step, 1.0);
	puts(BENCH_CSV_HEADER);
	bench_print_row("rd_handoff", "world-time", g_ctx_bytes, world.n, &sw, handoffs_per_s,
	                g_sh->phase_cpu[PH_HANDOFF]);
	bench_print_row("rd_handoff", "wall-time", g_ctx_bytes, wall.n, &sl, handoffs_per_s,
	                g_sh->phase_cpu[PH_HANDOFF]);
	bench_print_row("rd_handoff", "lockstep-step", 0, step.n, &ss, steps_per_s,
	                g_sh->phase_cpu[PH_STEP]);
	printf("# method: 2 host processes (CPUs 0, 1) in lock-step, delta = Dmax = %d us, free "
	       "running; the owner writes a PDU and releases the EU with a %zu-byte context at "
	       "every step, the other activates it at its next step and writes; latency = release "
	       "request -> the new owner's first PDU written; %d interleaved rounds of ~%ld "
	       "hand-offs then as many plain lock-step steps (the baseline), %ld warm-up "
	       "hand-offs discarded; %d CPUs\n",
	       DELTA_USEC, g_ctx_bytes, g_rounds, g_count / g_rounds,
	       g_count / 10 > 10 ? g_count / 10 : 10, bench_ncpus());
	printf("# round mean wall-time us:");
	for (int i = 0; i < g_rounds; i++) {
		printf(" %.1f", g_sh->round_handoffs[i] > 0
		                    ? (double)g_sh->round_handoff_wall_ns[i] /
		                          (double)g_sh->round_handoffs[i] / 1000.0
		                    : 0.0);
	}
	printf("\n");
	if (ss.p50 > 0) {
		printf(
		    "# ratio wall-time/lockstep-step p50: %.2f (a hand-off costs this many plain "
		    "world steps of wall time)\n",
		    sl.p50 / ss.p50);
	}
	printf("# world-time p50 in steps of delta: %.2f\n", sw.p50 / DELTA_USEC);
	fflush(stdout);
	bench_samples_free(&world);
	bench_samples_free(&wall);
	bench_samples_free(&step);
	cleanup();
	bench_die_detail(NULL, NULL);
	bench_shared_free(g_sh, sizeof(*g_sh));
	return 0;
}
