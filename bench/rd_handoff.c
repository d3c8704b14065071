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
 *
 * RD-Full (docs/rd.md, "RD-Full: across nodes"): the same EU hosted on the two clients of a
 * federation (a server and two client nodes, each a forked process with its own domain and
 * conductor), moved back and forth by requests to the server, on loopback and through a
 * hako-relay of one-way delay L: wall time request -> commit reply and request -> the new owner's
 * first step, world time from the request's server world time to that step, and the world time
 * the EU went without a stepper. Baselines: the RD-Light hand-off above and a refused request
 * (the conductor's round trip), in the same run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "bench_common.h"
#include "bench_keys.h"
#include "hako/conductor.h"
#include "hako/rd_full.h"
#include "hako/domain.h"
#include "hako/log.h"
#include "hako/msg.h"
#include "hako/pdu.h"
#include "hako/rd.h"

#ifndef HAKO_RELAY_EXE
#define HAKO_RELAY_EXE ""
#endif

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
static struct shared *g_sh;
static int g_verbose;
static long g_count; /* timed hand-offs (and plain steps), all rounds */
static int g_rounds;
static size_t g_ctx_bytes;

static void rdf_cleanup(void);

static void cleanup(void)
{
	rdf_cleanup();
	bench_children_kill();
	if (g_domain[0] != '\0') {
		hako_domain_remove(g_domain);
	}
	if (g_dir[0] != '\0') {
		char p[160];
		snprintf(p, sizeof(p), "%s/rd.json", g_dir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/rdfull.json", g_dir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/pdudef.json", g_dir);
		unlink(p);
		rmdir(g_dir);
	}
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
		bench_child_fail("%s: open/register: %s", name, hako_strerror(r));
	}
	if ((r = hako_rd_config_load(g_rd_path, &cfg, &err)) != 0) {
		bench_child_fail("%s: %s:%d: %s", name, err.file, err.line, err.message);
	}
	if ((r = hako_rd_node_open(dom, cfg, id, NULL, &node)) != 0) {
		bench_child_fail("%s: rd node: %s", name, hako_strerror(r));
	}
	if (hako_msg_registry_create(&reg) != 0 ||
	    hako_msg_registry_get(reg, "geometry_msgs/Twist", &twist, &err) != 0) {
		bench_child_fail("%s: type geometry_msgs/Twist", name);
	}
	uint8_t *ctx = malloc(g_ctx_bytes);
	uint8_t *got = malloc(g_ctx_bytes);
	if (ctx == NULL || got == NULL) {
		bench_child_fail("out of memory");
	}
	for (size_t i = 0; i < g_ctx_bytes; i++) {
		ctx[i] = (uint8_t)(i * 31 + id);
	}
	atomic_fetch_add(&g_sh->ready, 1);
	int ev = 0;
	if ((r = hako_member_wait_event(m, WAIT_USEC, &ev)) != 0 || ev != HAKO_EVENT_START) {
		bench_child_fail("%s: no start (%s, event %d)", name, hako_strerror(r), ev);
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
			bench_child_fail("%s: poll: %s", name, hako_strerror(r));
		}
		if (rev == HAKO_RD_EV_ACTIVATE) {
			if (act.ctx_len != g_ctx_bytes || got[1] != (uint8_t)(31 + other)) {
				bench_child_fail("%s: context of %zu bytes is not the other host's",
				                 name, act.ctx_len);
			}
			model_step = act.model_step;
			if ((r = hako_rd_activate(node, EU, 1, now)) != 0) {
				bench_child_fail("%s: activate: %s", name, hako_strerror(r));
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
				bench_child_fail("%s: write: %s", name, hako_strerror(r));
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
					bench_child_fail("%s: release: %s", name, hako_strerror(r));
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
	pid_t hosts[2];
	for (int i = 0; i < 2; i++) {
		if ((hosts[i] = bench_children_fork()) == 0) {
			host_main((uint8_t)(i + 1));
		}
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
	while (!atomic_load(&g_sh->done) && g_sh->error[0] == '\0') {
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
		int status;
		if (bench_children_wait(hosts[i], &status) != 0) {
			bench_die("host %d failed (status 0x%x)", i + 1, status);
		}
	}
	hako_master_stop(master);
	hako_domain_close(dom);
	hako_domain_remove(g_domain);
	g_domain[0] = '\0';
}

/* ---- RD-Full: hand-offs across the nodes of a federation ----
 *
 * A server node and two client nodes, each a forked process with its own domain, its master
 * (delta 1000 us, Dmax of the variant, free running) and a conductor node (ZeroMQ tcp on
 * 127.0.0.1, publish immediate) whose rd_config_path names an RD config of mode "full" with
 * nodes cli-01 and cli-02. The server's main thread is a plain asset; each client's is the
 * executor of the EU (RD node 1 or 2, test/conductor/test_federation_rd.c's loop: a model whose
 * steps are exact, a --context-byte context). This process is the requester: it asks the
 * server (hako_rd_full_request, on the server's own address) to move the EU to the other
 * client, waits until the new owner activated and the old one saw RELEASED, and again. The
 * relay variants put a hako-relay (one-way delay L) between the clients and the server. */

#define RDF_NODES   3 /* srv-01, cli-01, cli-02 */
#define RDF_SERVER  "srv-01"
#define RDF_WARM    2   /* hand-offs per federation not counted */
#define RDF_MAX_FED 200 /* counted hand-offs per federation: the epoch is one byte */
#define RDF_WAIT_NS 10000000000ll
#define RDF_REQ_MS  5000
/* The largest RD-Full context this bench sends (the RD config's max_context_bytes follows). */
#define RDF_CTX_MAX (1u << 20)

/* One hand-off, by its epoch. The executors fill it; `activated` and `released` publish it. */
struct rdf_slot {
	/* the old owner, at its first step whose status shows the commit (its conductor wrote
	 * the announcement into its domain) */
	int64_t announce_wall_ns;
	/* the old owner, at the poll that gave COMMIT */
	hako_time_t commit_now; /* its world time then: the commit point, unless it overran */
	int64_t commit_wall_ns;
	uint64_t last_step; /* its last model step (run up to the commit point) */
	int overrun;        /* it had run model steps past the commit point before it knew */
	/* the new owner, at the poll that gave ACTIVATE */
	hako_time_t act_now;
	int64_t act_wall_ns;
	uint64_t first_step; /* the first model step it ran */
	uint64_t late_steps; /* model steps it ran at that poll (1 if on time) */
	_Atomic int activated;
	_Atomic int released; /* the old owner saw RELEASED */
};

struct rdf_shared {
	_Atomic int watch; /* a request is on its way: the owner looks for its announcement */
	_Atomic int ready[RDF_NODES];
	_Atomic int stopped[RDF_NODES];
	int listen_failed; /* the server could not listen on its ports */
	struct rdf_slot slot[256];
};

struct rdf_variant {
	char name[48];
	hako_time_t dmax;
	int relay;
};

/* The results of one variant, all rounds (samples in ns; world times: us * 1000). */
struct rdf_cell {
	bench_samples_t reply, refused, refused_relay, zfresh, zkept, wall, announce, to_commit,
	    ctx_path, world, gap;
	bench_cpu_t cpu;
	int64_t timed_ns;
	uint64_t n, b_in_window, overruns, step_breaks, late, over_bound, commit_off;
	hako_time_t gap_max, commit_off_max; /* world us */
	double round_p50[MAX_ROUNDS];
	int rounds;
};

static struct rdf_shared *g_fx;
static size_t g_fctx_bytes; /* the RD-Full context: --context, at most RDF_CTX_MAX */
static char g_fdom[RDF_NODES][64];
static char g_fd_path[128]; /* the RD-Full config */
static char g_keys[64];     /* the nodes' keys (bench_keys.h) */
static pid_t g_fnodes[RDF_NODES];
static int g_fcmd[RDF_NODES] = {-1, -1, -1}; /* write ends: EOF = tear down */
static pid_t g_echo;                         /* the ZeroMQ echo of the baselines */
static bench_relay_t g_relay = BENCH_RELAY_INIT;
static const char *g_relay_exe = HAKO_RELAY_EXE;
static double g_relay_ms = 1.0;

static void rdf_cleanup(void)
{
	bench_keys_remove(g_keys);
	g_keys[0] = '\0';
	for (int i = 0; i < RDF_NODES; i++) {
		if (g_fnodes[i] > 0) {
			kill(g_fnodes[i], SIGKILL);
			waitpid(g_fnodes[i], NULL, 0);
			g_fnodes[i] = 0;
		}
		if (g_fcmd[i] >= 0) {
			close(g_fcmd[i]);
			g_fcmd[i] = -1;
		}
	}
	if (g_echo > 0) {
		kill(g_echo, SIGKILL);
		waitpid(g_echo, NULL, 0);
		g_echo = 0;
	}
	bench_relay_stop(&g_relay);
	for (int i = 0; i < RDF_NODES; i++) {
		if (g_fdom[i][0] != '\0') {
			hako_domain_remove(g_fdom[i]);
		}
	}
}

static void write_full_config(size_t ctx_bytes)
{
	snprintf(g_fd_path, sizeof(g_fd_path), "%s/rdfull.json", g_dir);
	FILE *f = fopen(g_fd_path, "w");
	if (f == NULL) {
		bench_die("%s: %s", g_fd_path, strerror(errno));
	}
	fprintf(f,
	        "{\"mode\": \"full\", \"pdudef\": \"pdudef.json\",\n"
	        " \"nodes\": [{\"id\": 1, \"name\": \"cli-01\"}, {\"id\": 2, \"name\": "
	        "\"cli-02\"}],\n"
	        " \"handoff_timeout_usec\": 1000000,\n"
	        " \"execution_units\": [{\"id\": 0, \"name\": \"bench\", \"robot\": \"bench\",\n"
	        "   \"writes\": [\"pos\"], \"candidates\": [1, 2], \"initial_owner\": 1,\n"
	        "   \"max_context_bytes\": %zu, \"status\": \"status\", \"context\": "
	        "\"context\"}]}\n",
	        ctx_bytes);
	fclose(f);
}

static const char *rdf_node_id(int idx)
{
	static const char *const ids[RDF_NODES] = {RDF_SERVER, "cli-01", "cli-02"};
	return ids[idx];
}

static void rdf_config(hako_conductor_config_t *c, int idx, const struct rdf_variant *v,
                       const char *ctl, const char *tim)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "rd_handoff:%s", v->name);
	c->role = idx == 0 ? HAKO_CONDUCTOR_SERVER : HAKO_CONDUCTOR_CLIENT;
	snprintf(c->node_id, sizeof(c->node_id), "%s", rdf_node_id(idx));
	snprintf(c->server_id, sizeof(c->server_id), RDF_SERVER);
	if (idx == 0) {
		c->client_count = RDF_NODES - 1;
		for (int i = 1; i < RDF_NODES; i++) {
			snprintf(c->clients[i - 1], sizeof(c->clients[i - 1]), "%s",
			         rdf_node_id(i));
		}
	}
	snprintf(c->domain, sizeof(c->domain), "%s", g_fdom[idx]);
	c->delta_usec = DELTA_USEC;
	c->max_delay_usec = v->dmax;
	c->publish_mode = HAKO_PUBLISH_IMMEDIATE;
	c->publish_interval_usec = DELTA_USEC;
	snprintf(c->control_address, sizeof(c->control_address), "%s", ctl);
	snprintf(c->time_address, sizeof(c->time_address), "%s", tim);
	c->heartbeat_ms = 100;
	/* Loss detection is not what this measures: a machine loaded by other test suites (a
	 * Debug build at load 14 did) may leave a node unscheduled for a second. */
	c->peer_timeout_ms = 5000;
	c->on_client_loss = HAKO_CLIENT_LOSS_ERROR;
	snprintf(c->rd_config_path, sizeof(c->rd_config_path), "%s", g_fd_path);
	snprintf(c->keys_dir, sizeof(c->keys_dir), "%s", g_keys);
	/* what every node must agree on (FNV-1a, as conductor_rate) */
	char text[64];
	int n =
	    snprintf(text, sizeof(text), "%s|%d|%lld", RDF_SERVER, DELTA_USEC, (long long)v->dmax);
	uint32_t h = 2166136261u;
	for (int i = 0; i < n; i++) {
		h = (h ^ (unsigned char)text[i]) * 16777619u;
	}
	c->config_hash = h;
}

/* ---- a node process ---- */

/* The EU's model: its state depends on every step before it, so a step run twice or skipped
 * shows (test_federation_rd.c). The context is the model, then filler up to --context bytes. */
struct model {
	uint64_t step;
	uint64_t state;
};

static void model_step(struct model *md)
{
	md->step++;
	md->state = md->state * 6364136223846793005ull + 1442695040888963407ull + md->step;
}

/* A client's asset: hosts EU 0 as RD node id, runs the model while it owns it, hands over at
 * the commit point, and stamps each hand-off in its slot. */
static void executor_loop(hako_domain_t *dom, hako_member_t *m, uint8_t id)
{
	hako_rd_config_t *cfg;
	hako_rd_node_t *node;
	hako_msg_registry_t *reg;
	const hako_msg_type_t *twist;
	hako_error_t err;
	int r;
	if ((r = hako_rd_config_load(g_fd_path, &cfg, &err)) != 0) {
		bench_child_fail("cli-%02u: %s:%d: %s", id, err.file, err.line, err.message);
	}
	if ((r = hako_rd_node_open(dom, cfg, id, NULL, &node)) != 0) {
		bench_child_fail("cli-%02u: rd node: %s", id, hako_strerror(r));
	}
	if (hako_msg_registry_create(&reg) != 0 ||
	    hako_msg_registry_get(reg, "geometry_msgs/Twist", &twist, &err) != 0) {
		bench_child_fail("cli-%02u: type geometry_msgs/Twist", id);
	}
	uint8_t *ctx = calloc(1, g_fctx_bytes), *got = malloc(g_fctx_bytes);
	if (ctx == NULL || got == NULL) {
		bench_child_fail("out of memory");
	}
	for (size_t i = sizeof(struct model); i < g_fctx_bytes; i++) {
		ctx[i] = (uint8_t)(i * 31);
	}
	atomic_store(&g_fx->ready[id], 1);
	int ev = 0;
	if ((r = hako_member_wait_event(m, WAIT_USEC, &ev)) != 0 || ev != HAKO_EVENT_START) {
		bench_child_fail("cli-%02u: no start (%s, event %d)", id, hako_strerror(r), ev);
	}
	hako_member_ack(m, HAKO_EVENT_START);
	struct model md = {0, 0};
	int released_epoch = -1;
	while (hako_member_step_wait(m) == 0) {
		hako_time_t now = hako_member_time(m) + DELTA_USEC;
		hako_rd_event_t rev;
		hako_rd_activation_t act;
		if ((r = hako_rd_poll(node, EU, now, &rev, got, g_fctx_bytes, &act)) != 0) {
			bench_child_fail("cli-%02u: poll: %s", id, hako_strerror(r));
		}
		int64_t wall = bench_now_ns();
		hako_time_t upto = now;
		struct rdf_slot *fresh = NULL;
		if (rev == HAKO_RD_EV_ACTIVATE) {
			struct model in;
			memcpy(&in, got, sizeof(in));
			if (act.ctx_len != g_fctx_bytes || in.step != act.model_step ||
			    (g_fctx_bytes > sizeof(in) + 1 &&
			     got[sizeof(in) + 1] != (uint8_t)((sizeof(in) + 1) * 31))) {
				bench_child_fail(
				    "cli-%02u: a context of %zu bytes, model step %llu, is not "
				    "the other node's",
				    id, act.ctx_len, (unsigned long long)act.model_step);
			}
			md = in;
			if ((r = hako_rd_activate(node, EU, 1, now)) != 0) {
				bench_child_fail("cli-%02u: activate: %s", id, hako_strerror(r));
			}
			fresh = &g_fx->slot[act.epoch];
			fresh->act_now = now;
			fresh->act_wall_ns = wall;
			fresh->first_step = md.step + 1;
		} else if (rev == HAKO_RD_EV_COMMIT) {
			upto = act.release_time_usec;
			struct rdf_slot *s = &g_fx->slot[act.epoch];
			s->commit_now = now;
			s->commit_wall_ns = wall;
			s->overrun = (hako_time_t)md.step * DELTA_USEC > upto;
			released_epoch = act.epoch;
		} else if (rev == HAKO_RD_EV_RELEASED && released_epoch >= 0) {
			atomic_store(&g_fx->slot[released_epoch].released, 1);
			released_epoch = -1;
		} else if (rev == HAKO_RD_EV_RECLAIMED) {
			bench_child_fail(
			    "cli-%02u: the EU came back (the new owner did not activate in "
			    "time)",
			    id);
		}
		if (atomic_load_explicit(&g_fx->watch, memory_order_relaxed) &&
		    hako_rd_is_owner(node, EU)) {
			hako_rd_eu_state_t st;
			if (hako_rd_get_state(node, EU, &st) == 0 &&
			    st.status == HAKO_RD_OWNER_RELEASING &&
			    g_fx->slot[st.epoch].announce_wall_ns == 0) {
				g_fx->slot[st.epoch].announce_wall_ns = wall;
			}
		}
		if (hako_rd_is_owner(node, EU)) {
			uint64_t before = md.step;
			while ((hako_time_t)(md.step + 1) * DELTA_USEC <= upto) {
				model_step(&md);
			}
			if (fresh != NULL) {
				fresh->late_steps = md.step - before;
				atomic_store(&fresh->activated, 1);
			}
			uint8_t pdu[128];
			hako_pdu_writer_t w;
			size_t len;
			hako_pdu_writer_init(&w, twist, pdu, sizeof(pdu));
			double x = (double)md.step;
			memcpy(hako_pdu_base(pdu), &x, sizeof(x));
			hako_pdu_writer_finish(&w, &len);
			if ((r = hako_rd_write(node, EU, 0, pdu, len, upto)) != 0) {
				bench_child_fail("cli-%02u: write: %s", id, hako_strerror(r));
			}
			if (rev == HAKO_RD_EV_COMMIT) {
				memcpy(ctx, &md, sizeof(md));
				g_fx->slot[act.epoch].last_step = md.step;
				if ((r = hako_rd_release(node, EU, 0, ctx, g_fctx_bytes, md.step,
				                         now)) != 0) {
					bench_child_fail("cli-%02u: release: %s", id,
					                 hako_strerror(r));
				}
			}
		}
		hako_member_step_done(m);
	}
	free(ctx);
	free(got);
	hako_rd_node_close(node);
	hako_rd_config_free(cfg);
	hako_msg_registry_destroy(reg);
}

static void rdf_node_main(int idx, const struct rdf_variant *v, const char *ctl, const char *tim,
                          int cmd_fd)
{
	const char *id = rdf_node_id(idx);
	char msg[1200];
	hako_domain_t *dom;
	hako_master_t *master;
	hako_conductor_node_t *cn;
	hako_member_t *m;
	int r;
	hako_domain_config_t dc;
	hako_domain_config_default(&dc);
	dc.max_assets = 8;
	dc.max_channels = 8;
	dc.arena_bytes = 1u << 20;
	if ((r = hako_domain_create(g_fdom[idx], &dc, &dom)) != 0) {
		bench_child_fail("%s: create domain %s: %s", id, g_fdom[idx], hako_strerror(r));
	}
	hako_master_config_t mc = {DELTA_USEC, v->dmax, 0.0};
	if ((r = hako_master_start(dom, &mc, &master)) != 0) {
		bench_child_fail("%s: master: %s", id, hako_strerror(r));
	}
	hako_conductor_config_t cfg;
	hako_error_t err;
	rdf_config(&cfg, idx, v, ctl, tim);
	if (hako_rd_full_node_start(&cfg, dom, &cn, &err) != 0) {
		if (idx == 0 && strstr(err.message, "cannot listen") != NULL) {
			g_fx->listen_failed = 1; /* the bench tries other ports */
			hako_master_stop(master);
			hako_domain_close(dom);
			hako_domain_remove(g_fdom[idx]);
			_exit(5);
		}
		bench_child_fail("%s: %s", id, hako_error_format(&err, msg, sizeof(msg)));
	}
	if ((r = hako_member_register(dom, idx == 0 ? "asset" : "executor", DELTA_USEC, &m)) != 0) {
		bench_child_fail("%s: register: %s", id, hako_strerror(r));
	}
	int ev = 0;
	if (idx == 0) {
		atomic_store(&g_fx->ready[0], 1);
		if ((r = hako_member_wait_event(m, WAIT_USEC, &ev)) != 0 ||
		    ev != HAKO_EVENT_START) {
			bench_child_fail("%s: no start (%s, event %d)", id, hako_strerror(r), ev);
		}
		hako_member_ack(m, HAKO_EVENT_START);
		while (hako_member_step_wait(m) == 0) {
			hako_member_step_done(m);
		}
	} else {
		executor_loop(dom, m, (uint8_t)idx);
	}
	if ((r = hako_member_wait_event(m, WAIT_USEC, &ev)) != 0 || ev != HAKO_EVENT_STOP) {
		hako_domain_info_t info;
		hako_domain_get_info(dom, &info);
		bench_child_fail("%s: no stop event (%s, event %d; domain %s: %s)", id,
		                 hako_strerror(r), ev, hako_state_name(info.state),
		                 info.error_reason);
	}
	hako_member_ack(m, HAKO_EVENT_STOP);
	if ((r = hako_domain_wait_state(dom, HAKO_STATE_STOPPED, WAIT_USEC)) != 0) {
		bench_child_fail("%s: not stopped: %s", id, hako_strerror(r));
	}
	atomic_store(&g_fx->stopped[idx], 1);
	/* Leave only once every node stopped: a client leaving a running federation is an
	 * error there. */
	char c;
	while (read(cmd_fd, &c, 1) < 0 && errno == EINTR) {
	}
	hako_member_unregister(m);
	hako_conductor_node_stop(cn);
	hako_master_stop(master);
	hako_domain_close(dom);
	hako_domain_remove(g_fdom[idx]);
	_exit(0);
}

/* ---- the bench process: one federation ---- */

static void rdf_check_children(const char *what)
{
	if (g_sh->error[0] != '\0') {
		bench_die("%s: a node failed", what);
	}
	for (int i = 0; i < RDF_NODES; i++) {
		int status = 0;
		if (g_fnodes[i] > 0 && waitpid(g_fnodes[i], &status, WNOHANG) == g_fnodes[i]) {
			g_fnodes[i] = 0;
			bench_die("%s: node %s ended early (status 0x%x)", what, rdf_node_id(i),
			          status);
		}
	}
	if (g_relay.pid > 0 && waitpid(g_relay.pid, NULL, WNOHANG) == g_relay.pid) {
		g_relay.pid = 0;
		bench_die("%s: hako-relay ended early", what);
	}
}

struct rdf_node_args {
	int idx;
	const struct rdf_variant *v;
	const char *ctl, *tim;
};

static void rdf_node_entry(void *arg, int cmd_fd)
{
	const struct rdf_node_args *a = arg;
	rdf_node_main(a->idx, a->v, a->ctl, a->tim, cmd_fd);
}

static void rdf_fork_node(int idx, const struct rdf_variant *v, const char *ctl, const char *tim)
{
	struct rdf_node_args a = {idx, v, ctl, tim};
	g_fnodes[idx] = bench_fork_commanded(g_fcmd, RDF_NODES, rdf_node_entry, &a, &g_fcmd[idx]);
}

/* Wait until node idx is ready: 1, or 0 if the server ended for want of its ports. */
static int rdf_wait_ready(int idx, const char *what)
{
	int64_t deadline = bench_now_ns() + (int64_t)WAIT_USEC * 1000;
	while (!atomic_load(&g_fx->ready[idx])) {
		int status = 0;
		if (waitpid(g_fnodes[idx], &status, WNOHANG) == g_fnodes[idx]) {
			g_fnodes[idx] = 0;
			if (g_fx->listen_failed) {
				return 0;
			}
			bench_die("%s: node %s ended (status 0x%x)", what, rdf_node_id(idx),
			          status);
		}
		rdf_check_children(what);
		if (bench_now_ns() > deadline) {
			bench_die("%s: node %s not ready", what, rdf_node_id(idx));
		}
		usleep(500);
	}
	return 1;
}

/* Fork the server (on fresh ports until it can listen; a relay in front of it for the clients
 * if v has one), then the clients. The requester's addresses: the server's own, and the
 * clients' (through the relay). */
static void rdf_start(const struct rdf_variant *v, char *req_ctl, char *req_ctl_relay, size_t len)
{
	char ctl[64], tim[64], cctl[64], ctim[64];
	static hako_conductor_config_t cfgs[RDF_NODES]; /* the same ids every time: kept */
	for (int i = 0; i < RDF_NODES; i++) {
		rdf_config(&cfgs[i], i, v, "tcp://127.0.0.1:1", "tcp://127.0.0.1:2");
	}
	bench_keys_make(cfgs, RDF_NODES, g_keys);
	for (int attempt = 0;; attempt++) {
		int cp = bench_free_port(), tp = bench_free_port();
		if (cp == tp) {
			continue;
		}
		snprintf(ctl, sizeof(ctl), "tcp://127.0.0.1:%d", cp);
		snprintf(tim, sizeof(tim), "tcp://127.0.0.1:%d", tp);
		snprintf(cctl, sizeof(cctl), "%s", ctl);
		snprintf(ctim, sizeof(ctim), "%s", tim);
		if (v->relay) {
			int to[2] = {cp, tp}, rp[2];
			bench_relay_start(&g_relay, g_relay_exe, g_relay_ms, to, rp);
			snprintf(cctl, sizeof(cctl), "tcp://127.0.0.1:%d", rp[0]);
			snprintf(ctim, sizeof(ctim), "tcp://127.0.0.1:%d", rp[1]);
		}
		g_fx->listen_failed = 0;
		rdf_fork_node(0, v, ctl, tim);
		if (rdf_wait_ready(0, v->name)) {
			break;
		}
		close(g_fcmd[0]);
		g_fcmd[0] = -1;
		bench_relay_stop(&g_relay);
		if (attempt == 4) {
			bench_die("%s: no free ports for the server after 5 tries", v->name);
		}
	}
	for (int i = 1; i < RDF_NODES; i++) {
		rdf_fork_node(i, v, cctl, ctim);
	}
	for (int i = 1; i < RDF_NODES; i++) {
		rdf_wait_ready(i, v->name);
	}
	snprintf(req_ctl, len, "%s", ctl);
	snprintf(req_ctl_relay, len, "%s", cctl);
}

/* Wait for *flag, dying with what if the nodes fail or it takes RDF_WAIT_NS. */
static void rdf_wait_flag(_Atomic int *flag, hako_domain_t **dom, const char *variant,
                          const char *what, int k)
{
	int64_t deadline = bench_now_ns() + RDF_WAIT_NS;
	while (!atomic_load(flag)) {
		rdf_check_children(variant);
		if (bench_now_ns() > deadline) {
			bench_die("%s: hand-off %d: %s did not happen (world times: server %lld, "
			          "cli-01 %lld, cli-02 %lld us)",
			          variant, k, what, (long long)hako_domain_world_time(dom[0]),
			          (long long)hako_domain_world_time(dom[1]),
			          (long long)hako_domain_world_time(dom[2]));
		}
		usleep(100);
	}
}

/* ---- the ZeroMQ baselines: what a request's round trip costs without the conductor ---- */

#define ECHO_BYTES 384 /* about a conductor frame */

/* A ROUTER on 127.0.0.1:port sending every message back: the server's socket, no logic. */
static void echo_main(int port)
{
	char addr[64];
	snprintf(addr, sizeof(addr), "tcp://127.0.0.1:%d", port);
	void *ctx = zmq_ctx_new();
	void *r = ctx != NULL ? zmq_socket(ctx, ZMQ_ROUTER) : NULL;
	if (r == NULL || zmq_bind(r, addr) != 0) {
		_exit(5);
	}
	for (;;) {
		zmq_msg_t id, m;
		zmq_msg_init(&id);
		zmq_msg_init(&m);
		if (zmq_msg_recv(&id, r, 0) < 0 || zmq_msg_recv(&m, r, 0) < 0) {
			_exit(6);
		}
		zmq_msg_send(&id, r, ZMQ_SNDMORE);
		zmq_msg_send(&m, r, 0);
	}
}

static void echo_start(char *addr, size_t len)
{
	int port = bench_free_port();
	pid_t pid = bench_fork();
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		echo_main(port);
	}
	g_echo = pid;
	snprintf(addr, len, "tcp://127.0.0.1:%d", port);
}

/* One round trip of ECHO_BYTES on s (0: no answer within 5 s). */
static int64_t echo_rt(void *s)
{
	char buf[ECHO_BYTES];
	memset(buf, 0x5a, sizeof(buf));
	int64_t t0 = bench_now_ns();
	if (zmq_send(s, buf, sizeof(buf), 0) != (int)sizeof(buf)) {
		return 0;
	}
	zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
	if (zmq_poll(&it, 1, 5000) != 1 || zmq_recv(s, buf, sizeof(buf), 0) != (int)sizeof(buf)) {
		return 0;
	}
	return bench_now_ns() - t0;
}

static void *echo_dealer(void *ctx, const char *addr)
{
	void *s = zmq_socket(ctx, ZMQ_DEALER);
	int zero = 0;
	if (s == NULL) {
		bench_die("zmq_socket: %s", zmq_strerror(errno));
	}
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	if (zmq_connect(s, addr) != 0) {
		bench_die("zmq_connect %s: %s", addr, zmq_strerror(errno));
	}
	return s;
}

/* What a requester that is not kept does around its message (hako_rd_full_request did, before
 * it kept its connection): a context, a socket and a connection of its own, closed after the
 * answer. */
static int64_t echo_fresh(const char *addr)
{
	int64_t t0 = bench_now_ns();
	void *ctx = zmq_ctx_new();
	if (ctx == NULL) {
		bench_die("zmq_ctx_new failed");
	}
	void *s = echo_dealer(ctx, addr);
	int64_t rt = echo_rt(s);
	zmq_close(s);
	zmq_ctx_term(ctx);
	return rt > 0 ? bench_now_ns() - t0 : 0;
}

/* A refused request (to the node that owns the EU already): the conductor's round trip. */
static int64_t rdf_refused(const hako_conductor_config_t *req, uint8_t owner, const char *variant)
{
	char why[256];
	int64_t t0 = bench_now_ns();
	int r = hako_rd_full_request(req, EU, owner, RDF_REQ_MS, NULL, why, sizeof(why));
	int64_t t1 = bench_now_ns();
	if (r != HAKO_EEXIST) {
		bench_die("%s: a request to the owner (node %u) via %s: %s (%s), not refused as "
		          "there already",
		          variant, owner, req->control_address, hako_strerror(r), why);
	}
	return t1 - t0;
}

static void rdf_run(const struct rdf_variant *v, long count, struct rdf_cell *cell)
{
	memset(g_fx, 0, sizeof(*g_fx));
	memset(g_sh->error, 0, sizeof(g_sh->error));
	for (int i = 0; i < RDF_NODES; i++) {
		snprintf(g_fdom[i], sizeof(g_fdom[i]), "bench-rdf-%d-%d", (int)getpid(), i);
	}
	hako_conductor_config_t *req = calloc(2, sizeof(*req));
	if (req == NULL) {
		bench_die("out of memory");
	}
	char ctl[HAKO_CONDUCTOR_ADDR_MAX], ctl_relay[HAKO_CONDUCTOR_ADDR_MAX];
	rdf_start(v, ctl, ctl_relay, sizeof(ctl));
	/* The requests go with the server's key, as hako-rd monitor on the server's file does. */
	for (int i = 0; i < 2; i++) {
		rdf_config(&req[i], 0, v, i == 0 ? ctl : ctl_relay, "tcp://127.0.0.1:1");
	}
	/* The hand-offs are asked on a kept connection (hako_rd_full_requester), as an
	 * ExMonitor does; the refused-reply baseline goes through hako_rd_full_request, which
	 * keeps one of its own per process. */
	hako_rd_full_requester_t *rq = NULL;
	if (hako_rd_full_requester_open(&req[0], &rq) != 0) {
		bench_die("%s: cannot open a requester to %s", v->name, ctl);
	}
	hako_domain_t *dom[RDF_NODES];
	int r;
	for (int i = 0; i < RDF_NODES; i++) {
		if ((r = hako_domain_open(g_fdom[i], &dom[i])) != 0) {
			bench_die("%s: open domain %s: %s", v->name, g_fdom[i], hako_strerror(r));
		}
	}
	if ((r = hako_domain_start(dom[0])) != 0) {
		bench_die("%s: start: %s", v->name, hako_strerror(r));
	}
	int64_t deadline = bench_now_ns() + (int64_t)WAIT_USEC * 1000;
	for (int i = 0; i < RDF_NODES; i++) {
		while (hako_domain_state(dom[i]) != HAKO_STATE_RUNNING) {
			rdf_check_children(v->name);
			if (bench_now_ns() > deadline ||
			    hako_domain_state(dom[i]) == HAKO_STATE_ERROR) {
				bench_die("%s: domain %s is %s, not running", v->name, g_fdom[i],
				          hako_state_name(hako_domain_state(dom[i])));
			}
			usleep(500);
		}
	}

	char echo_addr[64];
	echo_start(echo_addr, sizeof(echo_addr));
	void *zctx = zmq_ctx_new();
	if (zctx == NULL) {
		bench_die("zmq_ctx_new failed");
	}
	void *kept = echo_dealer(zctx, echo_addr);
	for (int tries = 0; echo_rt(kept) == 0; tries++) {
		rdf_check_children(v->name);
		if (waitpid(g_echo, NULL, WNOHANG) == g_echo) {
			g_echo = 0;
			bench_die("%s: the ZeroMQ echo could not listen on %s", v->name, echo_addr);
		}
		if (tries == 4) {
			bench_die("%s: the ZeroMQ echo at %s does not answer", v->name, echo_addr);
		}
	}

	uint8_t owner = 1;
	int prev_epoch = -1;
	size_t first = cell->wall.n;
	bench_cpu_t c0[RDF_NODES];
	int64_t t_start = 0;
	for (long k = 0; k < count + RDF_WARM; k++) {
		if (k == RDF_WARM) {
			for (int i = 0; i < RDF_NODES; i++) {
				c0[i] = bench_proc_cpu(g_fnodes[i]);
			}
			t_start = bench_now_ns();
		}
		if (prev_epoch >= 0) {
			rdf_wait_flag(&g_fx->slot[prev_epoch].released, dom, v->name,
			              "RELEASED at the old owner", (int)k - 1);
		}
		/* Between two hand-offs: the baselines, and 2 Dmax of world time in the
		 * owner's hands so that each request finds the federation in its steady state. */
		hako_time_t settled = hako_domain_world_time(dom[0]);
		int64_t refused = rdf_refused(&req[0], owner, v->name);
		int64_t refused_relay = v->relay ? rdf_refused(&req[1], owner, v->name) : 0;
		int64_t zfresh = echo_fresh(echo_addr), zkept = echo_rt(kept);
		if (zfresh == 0 || zkept == 0) {
			bench_die("%s: the ZeroMQ echo did not answer", v->name);
		}
		int64_t until = bench_now_ns() + RDF_WAIT_NS;
		while (hako_domain_world_time(dom[0]) < settled + 2 * v->dmax) {
			rdf_check_children(v->name);
			if (bench_now_ns() > until) {
				bench_die("%s: the world does not move", v->name);
			}
			usleep(100);
		}

		uint8_t to = owner == 1 ? 2 : 1;
		hako_rd_commit_t c;
		char why[256];
		atomic_store(&g_fx->watch, 1);
		hako_time_t before = hako_domain_world_time(dom[0]);
		int64_t t0 = bench_now_ns();
		r = hako_rd_full_requester_ask(rq, EU, to, RDF_REQ_MS, &c, why, sizeof(why));
		int64_t t1 = bench_now_ns();
		hako_time_t after = hako_domain_world_time(dom[0]);
		if (r != 0) {
			bench_die("%s: hand-off %ld to node %u: %s: %s", v->name, k, to,
			          hako_strerror(r), why);
		}
		struct rdf_slot *s = &g_fx->slot[c.epoch];
		rdf_wait_flag(&s->activated, dom, v->name, "the activation", (int)k);
		atomic_store(&g_fx->watch, 0);
		owner = to;
		prev_epoch = c.epoch;
		if (k < RDF_WARM) {
			continue;
		}
		/* The request's server world time b: the authority commits at b + Dmax + 2
		 * steps rounded up to the step, and b is on a step. */
		hako_time_t b = c.commit_usec - v->dmax - 2 * DELTA_USEC;
		hako_time_t gap = s->act_now - DELTA_USEC - c.commit_usec;
		cell->n++;
		cell->b_in_window += b >= before && b <= after;
		cell->commit_off += s->commit_now != c.commit_usec;
		if (s->commit_now - c.commit_usec > cell->commit_off_max) {
			cell->commit_off_max = s->commit_now - c.commit_usec;
		}
		cell->overruns += s->overrun;
		cell->step_breaks += s->first_step != s->last_step + 1 ||
		                     (hako_time_t)s->last_step * DELTA_USEC != c.commit_usec;
		cell->late += gap > 0;
		cell->over_bound += gap > 2 * v->dmax;
		cell->gap_max = gap > cell->gap_max ? gap : cell->gap_max;
		bench_samples_push(&cell->reply, (uint64_t)(t1 - t0));
		bench_samples_push(&cell->refused, (uint64_t)refused);
		if (v->relay) {
			bench_samples_push(&cell->refused_relay, (uint64_t)refused_relay);
		}
		bench_samples_push(&cell->zfresh, (uint64_t)zfresh);
		bench_samples_push(&cell->zkept, (uint64_t)zkept);
		bench_samples_push(&cell->wall, (uint64_t)(s->act_wall_ns - t0));
		if (s->announce_wall_ns > t0) {
			bench_samples_push(&cell->announce, (uint64_t)(s->announce_wall_ns - t0));
		}
		bench_samples_push(&cell->to_commit, (uint64_t)(s->commit_wall_ns - t0));
		bench_samples_push(&cell->ctx_path, (uint64_t)(s->act_wall_ns - s->commit_wall_ns));
		bench_samples_push(&cell->world, (uint64_t)(s->act_now - b) * 1000);
		bench_samples_push(&cell->gap, (uint64_t)(gap > 0 ? gap : 0) * 1000);
	}
	rdf_wait_flag(&g_fx->slot[prev_epoch].released, dom, v->name, "RELEASED at the old owner",
	              (int)count + RDF_WARM - 1);
	cell->timed_ns += bench_now_ns() - t_start;
	for (int i = 0; i < RDF_NODES; i++) {
		bench_cpu_t d = bench_cpu_sub(bench_proc_cpu(g_fnodes[i]), c0[i]);
		cell->cpu.user += d.user;
		cell->cpu.sys += d.sys;
	}
	if (cell->rounds < MAX_ROUNDS) {
		cell->round_p50[cell->rounds++] = bench_stats_since(&cell->wall, first, 1.0).p50;
	}
	if (g_verbose) {
		fprintf(stderr, "  %-26s %ld hand-offs, wall p50 %.0f us\n", v->name, count,
		        cell->round_p50[cell->rounds - 1]);
	}

	zmq_close(kept);
	zmq_ctx_term(zctx);
	kill(g_echo, SIGKILL);
	waitpid(g_echo, NULL, 0);
	g_echo = 0;

	/* Stop, let every node see it, then let them leave. */
	if ((r = hako_domain_stop(dom[0])) != 0) {
		bench_die("%s: stop: %s", v->name, hako_strerror(r));
	}
	deadline = bench_now_ns() + (int64_t)WAIT_USEC * 1000;
	for (int i = 0; i < RDF_NODES; i++) {
		while (!atomic_load(&g_fx->stopped[i])) {
			rdf_check_children(v->name);
			if (bench_now_ns() > deadline) {
				bench_die("%s: node %s did not stop", v->name, rdf_node_id(i));
			}
			usleep(1000);
		}
	}
	for (int i = 0; i < RDF_NODES; i++) {
		close(g_fcmd[i]);
		g_fcmd[i] = -1;
	}
	deadline = bench_now_ns() + (int64_t)WAIT_USEC * 1000;
	for (int i = 0; i < RDF_NODES; i++) {
		int status = 0;
		pid_t w;
		while ((w = waitpid(g_fnodes[i], &status, WNOHANG)) == 0) {
			if (bench_now_ns() > deadline) {
				bench_die("%s: node %s did not end", v->name, rdf_node_id(i));
			}
			usleep(1000);
		}
		g_fnodes[i] = 0;
		if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			bench_die("%s: node %s failed (status 0x%x)", v->name, rdf_node_id(i),
			          status);
		}
	}
	bench_relay_stop(&g_relay);
	for (int i = 0; i < RDF_NODES; i++) {
		hako_domain_close(dom[i]);
		hako_domain_remove(g_fdom[i]); /* gone already, unless a node could not */
		g_fdom[i][0] = '\0';
	}
	hako_rd_full_requester_close(rq);
	free(req);
}

/* ---- output ---- */

static void rdf_rows(const struct rdf_variant *v, struct rdf_cell *c)
{
	char name[96];
	double per_s = c->timed_ns > 0 ? (double)c->n * 1e9 / (double)c->timed_ns : 0.0;
	bench_cpu_t none = {0, 0};
	const struct {
		const char *what;
		bench_samples_t *s;
		int rate;
	} rows[] = {
	    {"world-time", &c->world, 1},
	    {"wall-time", &c->wall, 1},
	    {"commit-reply", &c->reply, 0},
	    {"refused-reply", &c->refused, 0},
	    {"refused-reply-relay", &c->refused_relay, 0},
	    {"zmq-fresh-rt", &c->zfresh, 0},
	    {"zmq-kept-rt", &c->zkept, 0},
	    {"announced", &c->announce, 0},
	    {"to-commit-point", &c->to_commit, 0},
	    {"context-path", &c->ctx_path, 0},
	    {"gap", &c->gap, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (rows[i].s->n == 0) {
			continue;
		}
		bench_stats_t st = bench_stats(rows[i].s, 1.0);
		snprintf(name, sizeof(name), "%s:%s", v->name, rows[i].what);
		bench_print_row("rd_handoff", name, g_fctx_bytes, rows[i].s->n, &st,
		                rows[i].rate ? per_s : 0.0, rows[i].rate ? c->cpu : none);
	}
}

/* The comment lines of one variant; light_wall_p50 = the RD-Light hand-off's (0: not run). The
 * samples are sorted (rdf_rows ran). */
static void rdf_comments(const struct rdf_variant *v, struct rdf_cell *c, double light_wall_p50)
{
	if (c->n == 0) {
		return;
	}
	bench_stats_t world = bench_stats(&c->world, 1.0), wall = bench_stats(&c->wall, 1.0),
	              reply = bench_stats(&c->reply, 1.0), ref = bench_stats(&c->refused, 1.0),
	              ann = bench_stats(&c->announce, 1.0), to_c = bench_stats(&c->to_commit, 1.0),
	              ctx = bench_stats(&c->ctx_path, 1.0);
	const double dmax = (double)v->dmax, delta = DELTA_USEC;
	printf("# round p50 wall-time us %s:", v->name);
	for (int i = 0; i < c->rounds; i++) {
		printf(" %.0f", c->round_p50[i]);
	}
	printf("\n");
	printf("# %s: commit point C = b + Dmax + 2 steps (%.0f us) in %llu/%llu hand-offs (b "
	       "within the "
	       "server's world time read around the request); the old owner's COMMIT at its "
	       "step ending at C in %llu/%llu (else up to %.0f us later), model steps past C "
	       "before it knew: %llu; model steps continuous (new owner's first = old owner's "
	       "last + 1, old owner's last ends at C) in %llu/%llu\n",
	       v->name, dmax + 2 * delta, (unsigned long long)c->b_in_window,
	       (unsigned long long)c->n, (unsigned long long)(c->n - c->commit_off),
	       (unsigned long long)c->n, (double)c->commit_off_max, (unsigned long long)c->overruns,
	       (unsigned long long)(c->n - c->step_breaks), (unsigned long long)c->n);
	printf("# %s: wall p50 split: request -> the old owner sees the commit %.0f us (%llu "
	       "seen), -> its clock at C %.0f us, C -> the new owner's first step %.0f us (the "
	       "context: old owner -> server -> new owner)\n",
	       v->name, ann.p50, (unsigned long long)c->announce.n, to_c.p50, ctx.p50);
	bench_stats_t gap = bench_stats(&c->gap, 1.0);
	printf("# gap %s: the new owner's first step began after C in %llu/%llu hand-offs; gap "
	       "p50 %.0f, p99 %.0f, max %.0f steps; bound one commit interval (2 Dmax = %.0f "
	       "steps): %s (%llu/%llu over)\n",
	       v->name, (unsigned long long)c->late, (unsigned long long)c->n, gap.p50 / delta,
	       gap.p99 / delta, (double)c->gap_max / delta, 2 * dmax / delta,
	       c->over_bound == 0 ? "held" : "EXCEEDED", (unsigned long long)c->over_bound,
	       (unsigned long long)c->n);
	if (light_wall_p50 > 0) {
		printf("# ratio %s wall-time / RD-Light wall-time p50: %.0f\n", v->name,
		       wall.p50 / light_wall_p50);
	}
	if (ref.p50 > 0) {
		printf("# ratio %s commit-reply / refused-reply p50: %.2f; wall-time / "
		       "refused-reply p50: %.1f\n",
		       v->name, reply.p50 / ref.p50, wall.p50 / ref.p50);
	}
	bench_stats_t zf = bench_stats(&c->zfresh, 1.0), zk = bench_stats(&c->zkept, 1.0);
	if (zf.p50 > 0 && zk.p50 > 0) {
		printf("# ratio %s refused-reply / zmq-kept-rt p50: %.2f (the conductor's part, "
		       "both on kept connections); zmq-fresh-rt / zmq-kept-rt p50: %.1f (a "
		       "connection per request would cost %.0f us)\n",
		       v->name, ref.p50 / zk.p50, zf.p50 / zk.p50, zf.p50 - zk.p50);
	}
	/* The new owner's first step begins at its clock A - delta; world-time = A - b. */
	double wp50 = world.p50 - delta, wmax = world.max - delta;
	printf("# goal %s world: the new owner's first step begins b + %.0f us (p50), max b + "
	       "%.0f us; <= 2 Dmax = %.0f us: %s (max: %s)\n",
	       v->name, wp50, wmax, 2 * dmax, wp50 <= 2 * dmax ? "PASS" : "MISS",
	       wmax <= 2 * dmax ? "PASS" : "MISS");
	double l_us = v->relay ? g_relay_ms * 1000.0 : 0.0, bound = 2 * l_us + 1000.0;
	printf("# goal %s wall: request -> new owner's first step p50 %.0f us (p99 %.0f); <= 2 "
	       "one-way delays + 1 ms = %.0f us: %s\n",
	       v->name, wall.p50, wall.p99, bound, wall.p50 <= bound ? "PASS" : "MISS");
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: rd_handoff [options]\n"
	        "  --quick          a short run (CI smoke run): 50 hand-offs, 1 round; RD-Full 10\n"
	        "  --count N        timed hand-offs (and plain steps), all rounds (default 1000)\n"
	        "  --rounds R       interleaved rounds (default 3)\n"
	        "  --context BYTES  context size (default 4096; RD-Full: at most 1 MiB)\n"
	        "  --handoffs N     RD-Full: timed hand-offs per variant, all rounds (default "
	        "100)\n"
	        "  --variants LIST  of light,rdfull-loopback,rdfull-loopback-dmax1,rdfull-relay,\n"
	        "                   rdfull-relay-dmax1 (default all)\n"
	        "  --relay PATH     hako-relay (default: the one of the build tree)\n"
	        "  --relay-ms L     its one-way delay (default 1)\n"
	        "  -v, --verbose    progress on stderr\n");
}

#define RDF_VARIANTS 4

int main(int argc, char **argv)
{
	long count = 1000, rounds = 3, ctx_bytes = 4096, handoffs = 100;
	const char *variants = NULL;
	static const struct option opts[] = {
	    {"quick", no_argument, NULL, 'q'},
	    {"count", required_argument, NULL, 'n'},
	    {"rounds", required_argument, NULL, 'r'},
	    {"context", required_argument, NULL, 'c'},
	    {"handoffs", required_argument, NULL, 'H'},
	    {"variants", required_argument, NULL, 'V'},
	    {"relay", required_argument, NULL, 'R'},
	    {"relay-ms", required_argument, NULL, 'L'},
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
		case 'H': handoffs = atol(optarg); break;
		case 'V': variants = optarg; break;
		case 'R': g_relay_exe = optarg; break;
		case 'L': g_relay_ms = atof(optarg); break;
		case 'v': g_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (quick) {
		count = 50;
		rounds = 1;
		handoffs = 10;
	}
	if (count < 1 || rounds < 1 || rounds > MAX_ROUNDS || count < rounds ||
	    count > MAX_SAMPLES || ctx_bytes < 16 || ctx_bytes > (16 << 20) || handoffs < rounds ||
	    (handoffs + rounds - 1) / rounds > RDF_MAX_FED || !(g_relay_ms > 0)) {
		usage(stderr);
		return 2;
	}
	static struct rdf_variant fv[RDF_VARIANTS] = {
	    {"rdfull-loopback", 10000, 0},
	    {"rdfull-loopback-dmax1", 1000, 0},
	    {"", 10000, 1},
	    {"", 1000, 1},
	};
	snprintf(fv[2].name, sizeof(fv[2].name), "rdfull-relay-%gms", g_relay_ms);
	snprintf(fv[3].name, sizeof(fv[3].name), "rdfull-relay-%gms-dmax1", g_relay_ms);
	static const char *const tokens[RDF_VARIANTS + 1] = {"light", "rdfull-loopback",
	                                                     "rdfull-loopback-dmax1",
	                                                     "rdfull-relay", "rdfull-relay-dmax1"};
	int enabled[RDF_VARIANTS + 1] = {1, 1, 1, 1, 1};
	if (variants != NULL) {
		char list[256], *save = NULL;
		snprintf(list, sizeof(list), "%s", variants);
		memset(enabled, 0, sizeof(enabled));
		for (char *t = strtok_r(list, ",", &save); t != NULL;
		     t = strtok_r(NULL, ",", &save)) {
			int k = 0;
			while (k <= RDF_VARIANTS && strcmp(tokens[k], t) != 0) {
				k++;
			}
			if (k > RDF_VARIANTS) {
				fprintf(stderr, "rd_handoff: unknown variant '%s'\n", t);
				usage(stderr);
				return 2;
			}
			enabled[k] = 1;
		}
	}
	if ((enabled[3] || enabled[4]) &&
	    (g_relay_exe[0] == '\0' || access(g_relay_exe, X_OK) != 0)) {
		fprintf(stderr,
		        "rd_handoff: hako-relay not found%s%s (build the tests, or --relay PATH): "
		        "the relay variants are skipped\n",
		        g_relay_exe[0] != '\0' ? " at " : "", g_relay_exe);
		enabled[3] = enabled[4] = 0;
	}
	if (getenv("HAKO_LOG") == NULL) {
		hako_log_set_level(HAKO_LOG_ERROR);
	}
	g_rounds = (int)rounds;
	g_count = count;
	g_ctx_bytes = (size_t)ctx_bytes;
	snprintf(g_domain, sizeof(g_domain), "bench-rd-%d", (int)getpid());
	bench_exit_init("rd_handoff", cleanup, 1);
	signal(SIGPIPE, SIG_IGN);
	g_sh = bench_shared_alloc(sizeof(*g_sh));
	g_fx = bench_shared_alloc(sizeof(*g_fx));
	bench_die_detail("host", g_sh->error);
	bench_child_fail_init(g_sh->error, sizeof(g_sh->error));
	g_sh->warm_left = (uint64_t)(count / 10 > 10 ? count / 10 : 10);
	write_configs(g_ctx_bytes);
	g_fctx_bytes = g_ctx_bytes < RDF_CTX_MAX ? g_ctx_bytes : RDF_CTX_MAX;
	write_full_config(g_fctx_bytes);
	if (enabled[0]) {
		run();
	} else {
		g_domain[0] = '\0';
	}
	if (g_verbose && enabled[0]) {
		fprintf(stderr, "rd_handoff: %llu hand-offs and %llu plain steps timed\n",
		        (unsigned long long)g_sh->n_handoff, (unsigned long long)g_sh->n_step);
	}
	static struct rdf_cell cells[RDF_VARIANTS];
	bench_die_detail("node", g_sh->error);
	for (long rd = 0; rd < rounds; rd++) {
		long share = handoffs / rounds + (rd < handoffs % rounds ? 1 : 0);
		if (g_verbose) {
			fprintf(stderr, "RD-Full round %ld/%ld\n", rd + 1, rounds);
		}
		for (int k = 0; k < RDF_VARIANTS; k++) {
			if (enabled[k + 1]) {
				rdf_run(&fv[k], share, &cells[k]);
			}
		}
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
	if (enabled[0]) {
		bench_print_row("rd_handoff", "world-time", g_ctx_bytes, world.n, &sw,
		                handoffs_per_s, g_sh->phase_cpu[PH_HANDOFF]);
		bench_print_row("rd_handoff", "wall-time", g_ctx_bytes, wall.n, &sl, handoffs_per_s,
		                g_sh->phase_cpu[PH_HANDOFF]);
		bench_print_row("rd_handoff", "lockstep-step", 0, step.n, &ss, steps_per_s,
		                g_sh->phase_cpu[PH_STEP]);
	}
	for (int k = 0; k < RDF_VARIANTS; k++) {
		if (enabled[k + 1]) {
			rdf_rows(&fv[k], &cells[k]);
		}
	}
	if (enabled[0]) {
		printf("# method: 2 host processes (CPUs 0, 1) in lock-step, delta = Dmax = %d us, "
		       "free running; the owner writes a PDU and releases the EU with a %zu-byte "
		       "context at every step, the other activates it at its next step and "
		       "writes; latency = release request -> the new owner's first PDU written; "
		       "%d interleaved rounds of ~%ld hand-offs then as many plain lock-step "
		       "steps (the baseline), %ld warm-up hand-offs discarded; %d CPUs\n",
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
			printf("# ratio wall-time/lockstep-step p50: %.2f (a hand-off costs this "
			       "many plain world steps of wall time)\n",
			       sl.p50 / ss.p50);
		}
		printf("# world-time p50 in steps of delta: %.2f\n", sw.p50 / DELTA_USEC);
	}
	if (enabled[1] || enabled[2] || enabled[3] || enabled[4]) {
		printf(
		    "# method RD-Full: a server and 2 client nodes, each a process with its own "
		    "domain, master (delta %d us, Dmax of the variant, free running), conductor "
		    "(ZeroMQ tcp + the time link on 127.0.0.1, publish immediate) and one asset; "
		    "each client's "
		    "asset hosts the EU (%zu-byte context%s, exact model steps); relay variants: a "
		    "hako-relay of %g ms one way between the clients and the server; the bench "
		    "process asks the server (its own address) to move the EU to the other client, "
		    "waits for the new owner's activation and the old owner's RELEASED, then 2 "
		    "Dmax "
		    "of world time; %d rounds, a fresh federation per round and variant, %d "
		    "hand-offs of each discarded; world-time = A - b (A: the new owner's clock "
		    "at the end of its first step, the `now` of its activation poll; b: the "
		    "server's world time at the request, = C - Dmax - 2 steps); wall-time = "
		    "request call "
		    "-> the new owner's activation poll; commit-reply = the request call; "
		    "announced = request -> the first step of the old owner whose status shows "
		    "the commit; "
		    "refused-reply (baseline) = a request to the owner, refused, the same path%s; "
		    "zmq-fresh-rt / zmq-kept-rt (baselines, libzmq) = a 384-byte round trip to a "
		    "ZeroMQ echo ROUTER (a process on 127.0.0.1) with a context, socket and "
		    "connection per call (what hako_rd_full_request made before it kept one) / "
		    "on a kept socket; "
		    "to-commit-point = request -> the old owner's COMMIT poll; context-path = that "
		    "-> the new owner's activation poll; gap = A - delta - C, world time the EU "
		    "was not stepped; cpu = the node processes over the timed hand-offs\n",
		    DELTA_USEC, g_fctx_bytes,
		    g_fctx_bytes < g_ctx_bytes ? ": the largest a conductor carries, its sockets "
		                                 "drop messages over 4096 bytes"
		                               : "",
		    g_relay_ms, g_rounds, RDF_WARM,
		    enabled[3] || enabled[4] ? "; refused-reply-relay: through the relay, as a "
		                               "requester on a client node pays"
		                             : "");
	}
	for (int k = 0; k < RDF_VARIANTS; k++) {
		if (enabled[k + 1]) {
			rdf_comments(&fv[k], &cells[k], enabled[0] ? sl.p50 : 0.0);
		}
	}
	fflush(stdout);
	bench_samples_free(&world);
	bench_samples_free(&wall);
	bench_samples_free(&step);
	for (int k = 0; k < RDF_VARIANTS; k++) {
		struct rdf_cell *c = &cells[k];
		bench_samples_t *all[] = {
		    &c->reply,    &c->refused,   &c->refused_relay, &c->zfresh, &c->zkept, &c->wall,
		    &c->announce, &c->to_commit, &c->ctx_path,      &c->world,  &c->gap};
		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
			bench_samples_free(all[i]);
		}
	}
	cleanup();
	bench_die_detail(NULL, NULL);
	bench_shared_free(g_fx, sizeof(*g_fx));
	bench_shared_free(g_sh, sizeof(*g_sh));
	return 0;
}
