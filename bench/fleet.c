/* fleet: drones stepped by hako at 1 ms, as fast as possible (issue 15's benchmark).
 *
 * Variants, for each fleet size N (--drones):
 *   plain-d<N>        the floor: the N drones (samples/fleet/drone.h, with the fleet's mission)
 *                     stepped in one plain C loop in this process; no hako, no PDUs;
 *   d<N>-p<P>-n1      one domain (sized for the fleet: fleet_host_channels / _bytes), its
 *                     master free-running with delta = Dmax = 1 ms, P forked host processes
 *                     (fleet_host.h) each a member stepping N/P drones every world step and
 *                     writing each drone's 4 PDUs (motor, pos, velocity, status) every step;
 *   d<N>-p<P>-n2      the same P hosts split over the two nodes of a federation: two forked
 *                     node processes, each its own domain (sized for its half), master (delta
 *                     1 ms, Dmax --dmax-usec) and conductor node (hako/conductor.h: the server
 *                     and one client, ZeroMQ tcp on 127.0.0.1), P/2 hosts in each;
 *   d<N>-p2-n1-zones  two hosts of one domain in zones (samples/fleet/fleet_zones.h): the
 *                     airspace split at x = 0, each drone an RD-Light execution unit handed to
 *                     the other host as it crosses (its context released, activated there),
 *                     over --zones-seconds of world time (default 8: the drones take off,
 *                     then cross as they fly to the "HAKO" formation from 3 s on). Besides
 *                     its row, two rows split its steps: -handoff, the world steps in which a
 *                     host released or activated a drone (and the step after: the other host
 *                     waits for it), and -quiet, the others; ops_per_s of each = its steps
 *                     per wall second of those steps. The comment compares their p50.
 * Each run covers --seconds of world time (steps of 1 ms) from the start, --rounds times: from
 * the first step of the first host to the moment the last host finished its steps (in one
 * domain the hosts are in lock-step; across nodes the client may run up to Dmax ahead).
 * ops_per_s = world steps per wall second (so the real-time factor is ops_per_s / 1000); the
 * latency columns are the wall time of one world step of host 0 (plain: of one loop over the N
 * drones); CPU: every process of the variant. Comment lines: the real-time factor and hako's
 * cost against the floor (ratio of the step rates), per size; for n2 the drift the conductors
 * held.
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
#include "bench_keys.h"
#include "drone.h"
#include "fleet_host.h"
#include "fleet_zones.h"
#include "hako/conductor.h"
#include "hako/rd_full.h"
#include "hako/domain.h"

#define MAX_PROCS  16
#define MAX_SIZES  16
#define MAX_STEPS  (1u << 20)
#define WAIT_USEC  60000000
#define DELTA_USEC 1000
#define NODES      2 /* of the federation variants */

/* A node process of the federation variants, as it reports to the bench. */
struct node_report {
	_Atomic int ready;
	_Atomic int listen_failed; /* the server could not listen: the bench tries other ports */
	hako_time_t drift_max;     /* against its peer, as its conductor saw it */
	uint64_t drift_samples;
	bench_cpu_t cpu; /* from the bench's 'c' to the end of the run */
};

struct shared {
	int64_t t_first[MAX_PROCS], t_end[MAX_PROCS]; /* each host's clock, ns */
	char error[200];
	bench_cpu_t cpu[MAX_PROCS];
	struct node_report node[NODES];
	uint32_t step_ns[MAX_STEPS];        /* host 0's */
	_Atomic uint8_t handoff[MAX_STEPS]; /* zones: a host released or activated a drone */
	_Atomic uint64_t handoffs;          /* zones: releases, both hosts */
};

static char g_domain[64];
static char g_node_domain[NODES][64];
static pid_t g_children[MAX_PROCS];
static int g_nchildren;
static pid_t g_nodes[NODES];
static int g_cmd[NODES] = {-1, -1};
static struct shared *g_sh;
static int g_verbose;
static hako_time_t g_dmax_usec = 10000;
static pid_t g_bench_pid;
static char g_zones_dir[64]; /* the zones variant's RD config, written once */
static char g_keys[64];      /* the nodes' keys (bench_keys.h) */
static char g_zones_rd[600];

static void cleanup(void)
{
	for (int i = 0; i < g_nchildren; i++) {
		if (g_children[i] > 0) {
			kill(g_children[i], SIGKILL);
		}
	}
	for (int i = 0; i < NODES; i++) {
		if (g_nodes[i] > 0) {
			kill(g_nodes[i], SIGKILL);
		}
	}
	if (g_domain[0] != '\0') {
		hako_domain_remove(g_domain);
	}
	for (int i = 0; i < NODES; i++) {
		if (g_node_domain[i][0] != '\0') {
			hako_domain_remove(g_node_domain[i]);
		}
	}
	if (getpid() == g_bench_pid) {
		bench_keys_remove(g_keys);
		g_keys[0] = '\0';
	}
	if (g_zones_dir[0] != '\0' && getpid() == g_bench_pid) {
		if (fleet_zones_remove_config(g_zones_dir) != 0) {
			fprintf(stderr, "fleet: removing %s: %s\n", g_zones_dir, strerror(errno));
		}
		g_zones_dir[0] = '\0';
	}
}

static void child_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void child_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char msg[sizeof(g_sh->error)];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (g_sh->error[0] == '\0') { /* the first failure is the one that matters */
		memcpy(g_sh->error, msg, sizeof(msg));
	}
	_exit(4);
}

struct cell {
	bench_samples_t s;
	uint64_t steps;
	int64_t wall_ns;
	bench_cpu_t cpu;
	double round_rate[64];
	int rounds;
	hako_time_t drift_max; /* n2: the largest drift a conductor saw */
	uint64_t drift_samples;
	uint64_t handoffs; /* zones: drones released by a host to the other */
};

/* Samples of another cell's steps, and their count and wall time. */
static void cell_add_step(struct cell *c, uint32_t ns)
{
	bench_samples_push(&c->s, ns);
	c->steps++;
	c->wall_ns += ns;
}

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

/* The hand-offs (releases and activations) this zones host has made. */
static uint64_t zone_moves(const fleet_zones_t *z)
{
	return z != NULL ? fleet_zones_releases(z) + fleet_zones_activations(z) : 0;
}

/* Host idx of nprocs, in domain dname: drones [N idx / P, N (idx + 1) / P), or with zones
 * (g_zones_rd, two hosts) the drones of zone idx + 1. Reports its first step and the end of
 * its `steps` steps; host 0 also each step's wall time; a zones host the steps it handed a
 * drone over in. */
static void host_main(const char *dname, int idx, int nprocs, size_t n, int zones, uint64_t steps,
                      int ready_fd, int done_fd)
{
	hako_domain_t *dom;
	int r = hako_domain_open(dname, &dom);
	if (r != 0) {
		child_fail("host %d: open domain %s: %s", idx, dname, hako_strerror(r));
	}
	size_t first = n * (size_t)idx / (size_t)nprocs;
	size_t last = n * (size_t)(idx + 1) / (size_t)nprocs;
	fleet_host_t *h = NULL;
	fleet_zones_t *z = NULL;
	if (zones) {
		char why[200] = "";
		if ((r = fleet_zones_open(dom, g_zones_rd, (uint8_t)(idx + 1), NULL, &z, why,
		                          sizeof(why))) != 0) {
			child_fail("host %d: zones %s: %s (%s)", idx, g_zones_rd, hako_strerror(r),
			           why);
		}
	} else if ((r = fleet_host_open(dom, first, last - first, n, &h)) != 0) {
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
	int done = 0;
	while ((r = hako_member_step_wait(m)) == 0) {
		int64_t now = hako_member_time(m) + DELTA_USEC;
		uint64_t moves = zone_moves(z);
		if ((r = z != NULL ? fleet_zones_step(z, now) : fleet_host_step(h, now)) != 0) {
			child_fail("host %d: step: %s", idx, hako_strerror(r));
		}
		if (!done) {
			int64_t t = bench_now_ns();
			if (k == 0) {
				g_sh->t_first[idx] = t;
			} else if (k - 1 < MAX_STEPS) {
				if (idx == 0) {
					g_sh->step_ns[k - 1] = (uint32_t)(t - prev);
				}
				if (zone_moves(z) != moves) {
					atomic_store_explicit(&g_sh->handoff[k - 1], 1,
					                      memory_order_relaxed);
				}
			}
			prev = t;
			if (++k > steps) {
				g_sh->t_end[idx] = t;
				done = 1;
				if (z != NULL) {
					atomic_fetch_add(&g_sh->handoffs, fleet_zones_releases(z));
				}
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
	fleet_zones_close(z);
	hako_domain_close(dom);
	_exit(0);
}

/* The node (0 or 1) of a federation variant's host idx of nprocs. */
static int node_of(int idx, int nprocs)
{
	return idx * NODES / nprocs;
}

/* The drones of node j: those of its hosts. */
static size_t node_drones(size_t n, int nprocs, int j)
{
	size_t sum = 0;
	for (int i = 0; i < nprocs; i++) {
		if (node_of(i, nprocs) == j) {
			sum +=
			    n * (size_t)(i + 1) / (size_t)nprocs - n * (size_t)i / (size_t)nprocs;
		}
	}
	return sum;
}

/* zones: what RD adds (each drone's status and context, the monitor's and hosts' channels). */
static void size_domain(hako_domain_config_t *cfg, size_t drones, int assets, int zones)
{
	hako_domain_config_default(cfg);
	cfg->max_assets = (uint32_t)assets + 8;
	cfg->max_channels = (uint32_t)(fleet_host_channels(drones) + 16 +
	                               (zones ? fleet_zones_extra_channels(drones) : 0));
	cfg->arena_bytes =
	    fleet_host_bytes(drones) + (1u << 20) + (zones ? fleet_zones_extra_bytes(drones) : 0);
}

/* ---- a node process of the federation variants ---- */

static const char *node_id(int idx)
{
	return idx == 0 ? "srv-01" : "cli-01";
}

static void fill_conductor(hako_conductor_config_t *c, int idx, const char *ctl, const char *tim)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "bench-fleet:%s", node_id(idx));
	c->role = idx == 0 ? HAKO_CONDUCTOR_SERVER : HAKO_CONDUCTOR_CLIENT;
	snprintf(c->node_id, sizeof(c->node_id), "%s", node_id(idx));
	snprintf(c->server_id, sizeof(c->server_id), "%s", node_id(0));
	if (idx == 0) {
		c->client_count = 1;
		snprintf(c->clients[0], sizeof(c->clients[0]), "%s", node_id(1));
	}
	snprintf(c->domain, sizeof(c->domain), "%s", g_node_domain[idx]);
	c->delta_usec = DELTA_USEC;
	c->max_delay_usec = g_dmax_usec;
	c->publish_mode = HAKO_PUBLISH_IMMEDIATE;
	c->publish_interval_usec = DELTA_USEC;
	snprintf(c->control_address, sizeof(c->control_address), "%s", ctl);
	snprintf(c->time_address, sizeof(c->time_address), "%s", tim);
	c->heartbeat_ms = 100;
	c->peer_timeout_ms = 1000;
	c->on_client_loss = HAKO_CLIENT_LOSS_ERROR;
	c->config_hash = 0x666c6565u ^ (uint32_t)g_dmax_usec; /* the same on both nodes */
	snprintf(c->keys_dir, sizeof(c->keys_dir), "%s", g_keys);
}

struct node_args {
	int idx;
	size_t drones;
	int hosts;
	const char *ctl, *tim;
};

/* A node: its domain, master and conductor; then it waits for the bench's commands ('c': the
 * run starts, count the CPU from here) until the bench closes the pipe, after the run. */
static void node_entry(void *arg, int cmd_fd)
{
	const struct node_args *a = arg;
	struct node_report *rep = &g_sh->node[a->idx];
	const char *dname = g_node_domain[a->idx];
	hako_domain_config_t dc;
	size_domain(&dc, a->drones, a->hosts + 1, 0);
	hako_domain_t *dom;
	int r;
	if ((r = hako_domain_create(dname, &dc, &dom)) != 0) {
		child_fail("%s: create domain %s: %s", node_id(a->idx), dname, hako_strerror(r));
	}
	hako_master_config_t mc = {DELTA_USEC, g_dmax_usec, 0.0};
	hako_master_t *master;
	if ((r = hako_master_start(dom, &mc, &master)) != 0) {
		child_fail("%s: master: %s", node_id(a->idx), hako_strerror(r));
	}
	hako_conductor_config_t cfg;
	hako_error_t err;
	hako_conductor_node_t *cn;
	fill_conductor(&cfg, a->idx, a->ctl, a->tim);
	if (hako_rd_full_node_start(&cfg, dom, &cn, &err) != 0) {
		if (a->idx == 0 && strstr(err.message, "cannot listen") != NULL) {
			atomic_store(&rep->listen_failed, 1);
			hako_master_stop(master);
			hako_domain_close(dom);
			hako_domain_remove(dname);
			_exit(5);
		}
		char msg[160];
		child_fail("%s: %s", node_id(a->idx), hako_error_format(&err, msg, sizeof(msg)));
	}
	atomic_store(&rep->ready, 1);
	bench_cpu_t c0 = bench_cpu_self();
	for (;;) {
		char c;
		ssize_t k = read(cmd_fd, &c, 1);
		if (k == 1 && c == 'c') {
			c0 = bench_cpu_self();
		} else if (!(k < 0 && errno == EINTR)) {
			break;
		}
	}
	rep->cpu = bench_cpu_sub(bench_cpu_self(), c0);
	hako_conductor_peer_stats_t peer;
	int npeers = 0;
	if (hako_conductor_node_stats(cn, &peer, 1, &npeers) == 0 && npeers == 1) {
		rep->drift_max = peer.drift_max_usec;
		rep->drift_samples = peer.samples;
	}
	hako_conductor_node_stop(cn);
	hako_master_stop(master);
	hako_domain_close(dom);
	hako_domain_remove(dname);
	_exit(0);
}

/* Wait until node idx reported ready: 1, or 0 if it ended for want of its ports. */
static int node_ready(int idx, const char *what)
{
	int64_t deadline = bench_now_ns() + (int64_t)WAIT_USEC * 1000;
	while (!atomic_load(&g_sh->node[idx].ready)) {
		int status = 0;
		if (waitpid(g_nodes[idx], &status, WNOHANG) == g_nodes[idx]) {
			g_nodes[idx] = 0;
			if (atomic_load(&g_sh->node[idx].listen_failed)) {
				return 0;
			}
			bench_die("%s: node %s ended (status 0x%x): %s", what, node_id(idx), status,
			          g_sh->error);
		}
		if (bench_now_ns() > deadline) {
			bench_die("%s: node %s not ready: %s", what, node_id(idx), g_sh->error);
		}
		usleep(500);
	}
	return 1;
}

/* Fork the two nodes, the server first (on fresh ports until it can listen). */
static void start_nodes(size_t n, int nprocs, const char *what)
{
	char ctl[64], tim[64];
	struct node_args a[NODES];
	memset(g_sh->node, 0, sizeof(g_sh->node));
	if (g_keys[0] == '\0') { /* made once: the same two nodes in every variant */
		hako_conductor_config_t cfgs[NODES];
		for (int j = 0; j < NODES; j++) {
			fill_conductor(&cfgs[j], j, "tcp://127.0.0.1:1", "tcp://127.0.0.1:2");
		}
		bench_keys_make(cfgs, NODES, g_keys);
	}
	for (int j = 0; j < NODES; j++) {
		a[j].idx = j;
		a[j].drones = node_drones(n, nprocs, j);
		a[j].hosts = nprocs / NODES;
		a[j].ctl = ctl;
		a[j].tim = tim;
	}
	for (int attempt = 0;; attempt++) {
		int cp = bench_free_port(), tp = bench_free_port();
		if (cp == tp) {
			continue;
		}
		snprintf(ctl, sizeof(ctl), "tcp://127.0.0.1:%d", cp);
		snprintf(tim, sizeof(tim), "tcp://127.0.0.1:%d", tp);
		g_nodes[0] = bench_fork_commanded(g_cmd, NODES, node_entry, &a[0], &g_cmd[0]);
		if (node_ready(0, what)) {
			break;
		}
		close(g_cmd[0]);
		g_cmd[0] = -1;
		atomic_store(&g_sh->node[0].listen_failed, 0);
		if (attempt == 4) {
			bench_die("%s: no free ports for the server after 5 tries", what);
		}
	}
	g_nodes[1] = bench_fork_commanded(g_cmd, NODES, node_entry, &a[1], &g_cmd[1]);
	node_ready(1, what);
}

/* Close the nodes' command pipes (they leave the federation and remove their domains) and
 * reap them. */
static void stop_nodes(const char *what)
{
	for (int j = 0; j < NODES; j++) {
		close(g_cmd[j]);
		g_cmd[j] = -1;
	}
	for (int j = 0; j < NODES; j++) {
		int status = 0;
		if (waitpid(g_nodes[j], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			g_nodes[j] = 0;
			bench_die("%s: node %s failed (status 0x%x): %s", what, node_id(j), status,
			          g_sh->error);
		}
		g_nodes[j] = 0;
	}
}

/* ---- one run of a variant ---- */

/* P hosts on `nodes` nodes (1: one domain whose master runs in this process; 2: a federation
 * of two node processes); zones: two hosts in zones, one node. */
static void run_hosts(size_t n, int nprocs, int nodes, int zones, uint64_t steps, struct cell *cell,
                      struct cell *hand, struct cell *quiet)
{
	char what[64];
	snprintf(what, sizeof(what), "d%zu-p%d-n%d%s", n, nprocs, nodes, zones ? "-zones" : "");
	hako_domain_t *dom[NODES] = {NULL, NULL};
	hako_master_t *master = NULL;
	int ndom = nodes == 1 ? 1 : NODES;
	int r;
	memset(g_sh, 0, offsetof(struct shared, step_ns));
	memset((void *)g_sh->handoff, 0, sizeof(g_sh->handoff));
	atomic_store(&g_sh->handoffs, 0);
	if (nodes == 1) {
		hako_domain_config_t cfg;
		size_domain(&cfg, n, nprocs, zones);
		if ((r = hako_domain_create(g_domain, &cfg, &dom[0])) != 0) {
			bench_die("create domain %s: %s", g_domain, hako_strerror(r));
		}
	} else {
		start_nodes(n, nprocs, what);
		for (int j = 0; j < NODES; j++) {
			if ((r = hako_domain_open(g_node_domain[j], &dom[j])) != 0) {
				bench_die("%s: open domain %s: %s", what, g_node_domain[j],
				          hako_strerror(r));
			}
		}
	}
	int ready[2], done[2];
	if (pipe(ready) != 0 || pipe(done) != 0) {
		bench_die("pipe: %s", strerror(errno));
	}
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
			host_main(nodes == 1 ? g_domain : g_node_domain[node_of(i, nprocs)], i,
			          nprocs, n, zones, steps, ready[1], done[1]);
		}
		g_children[g_nchildren++] = pid;
	}
	close(ready[1]);
	close(done[1]);
	if (nodes == 1) {
		hako_master_config_t mc = {DELTA_USEC, DELTA_USEC, 0.0};
		if ((r = hako_master_start(dom[0], &mc, &master)) != 0) {
			bench_die("master start: %s", hako_strerror(r));
		}
	}
	for (int i = 0; i < nprocs; i++) {
		char c;
		if (bench_read_full(ready[0], &c, 1) != 0) {
			bench_die("%s: a host did not start: %s", what, g_sh->error);
		}
	}
	close(ready[0]);
	for (int j = 0; nodes > 1 && j < NODES; j++) {
		if (bench_write_full(g_cmd[j], "c", 1) != 0) {
			bench_die("%s: node %s: %s", what, node_id(j), strerror(errno));
		}
	}
	bench_cpu_t c0 = bench_cpu_self();
	/* One domain: its start; a federation: the server's, which starts the client's. */
	if ((r = hako_domain_start(dom[0])) != 0) {
		bench_die("%s: start: %s", what, hako_strerror(r));
	}
	for (int i = 0; i < nprocs; i++) {
		struct pollfd pfd = {done[0], POLLIN, 0};
		int pr;
		char c;
		while ((pr = poll(&pfd, 1, WAIT_USEC / 1000)) < 0 && errno == EINTR) {
		}
		if (pr <= 0 || bench_read_full(done[0], &c, 1) != 0) {
			bench_die("%s: no end (world time %lld us): %s", what,
			          (long long)hako_domain_world_time(dom[0]), g_sh->error);
		}
	}
	if ((r = hako_domain_stop(dom[0])) != 0) {
		bench_die("%s: stop: %s", what, hako_strerror(r));
	}
	for (int j = 0; j < ndom; j++) {
		if ((r = hako_domain_wait_state(dom[j], HAKO_STATE_STOPPED, WAIT_USEC)) != 0) {
			bench_die("%s: stop of domain %d: %s", what, j, hako_strerror(r));
		}
	}
	bench_cpu_t mine = bench_cpu_sub(bench_cpu_self(), c0);
	for (int i = 0; i < g_nchildren; i++) {
		int status = 0;
		if (waitpid(g_children[i], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			g_children[i] = 0;
			bench_die("%s: host %d failed (status 0x%x): %s", what, i, status,
			          g_sh->error);
		}
		g_children[i] = 0;
	}
	g_nchildren = 0;
	close(done[0]);
	if (nodes == 1) {
		hako_master_stop(master);
		hako_domain_close(dom[0]);
		hako_domain_remove(g_domain);
	} else {
		for (int j = 0; j < NODES; j++) {
			hako_domain_close(dom[j]);
		}
		stop_nodes(what);
		for (int j = 0; j < NODES; j++) {
			const struct node_report *rep = &g_sh->node[j];
			mine.user += rep->cpu.user;
			mine.sys += rep->cpu.sys;
			if (rep->drift_max > cell->drift_max) {
				cell->drift_max = rep->drift_max;
			}
			cell->drift_samples += rep->drift_samples;
		}
	}
	cell->cpu.user += mine.user;
	cell->cpu.sys += mine.sys;
	int64_t t0 = g_sh->t_first[0], t1 = g_sh->t_end[0];
	for (int i = 0; i < nprocs; i++) {
		cell->cpu.user += g_sh->cpu[i].user;
		cell->cpu.sys += g_sh->cpu[i].sys;
		t0 = g_sh->t_first[i] < t0 ? g_sh->t_first[i] : t0;
		t1 = g_sh->t_end[i] > t1 ? g_sh->t_end[i] : t1;
	}
	int64_t wall = t1 - t0;
	cell->steps += steps;
	cell->wall_ns += wall;
	for (uint64_t i = 0; i < steps && i < MAX_STEPS; i++) {
		bench_samples_push(&cell->s, g_sh->step_ns[i]);
		if (zones && i > 0) {
			/* host 0's step i: its own hand-offs, or the other host's in the step
			 * before (host 0 waited for it at this step's barrier) */
			int moved =
			    atomic_load(&g_sh->handoff[i]) || atomic_load(&g_sh->handoff[i - 1]);
			cell_add_step(moved ? hand : quiet, g_sh->step_ns[i]);
		}
	}
	cell->handoffs += atomic_load(&g_sh->handoffs);
	if (cell->rounds < 64) {
		cell->round_rate[cell->rounds++] = (double)steps * 1e9 / (double)wall;
	}
	if (g_verbose) {
		fprintf(stderr, "  %s: %llu steps in %.3f s: RTF %.2f\n", what,
		        (unsigned long long)steps, (double)wall / 1e9,
		        (double)steps * 1e6 / (double)wall);
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

/* The zones variant's rows and what its hand-offs cost: step p50 with and without one. */
static void print_zones(size_t n, struct cell *z, struct cell *hand, struct cell *quiet,
                        const struct cell *slices)
{
	char variant[64], sub[80];
	snprintf(variant, sizeof(variant), "d%zu-p2-n1-zones", n);
	print_cell(variant, n, z);
	snprintf(sub, sizeof(sub), "%s-handoff", variant);
	print_cell(sub, n, hand);
	snprintf(sub, sizeof(sub), "%s-quiet", variant);
	print_cell(sub, n, quiet);
	bench_stats_t h = bench_stats(&hand->s, 1.0), q = bench_stats(&quiet->s, 1.0);
	printf("# %s: RTF %.2f (fixed slices d%zu-p2-n1: %.2f); %llu hand-offs in %d round(s), "
	       "in %llu of %llu steps; step p50 %.1f us in those, %.1f us in the others",
	       variant, rate(z) / 1000.0, n, rate(slices) / 1000.0, (unsigned long long)z->handoffs,
	       z->rounds, (unsigned long long)hand->steps,
	       (unsigned long long)(hand->steps + quiet->steps), h.p50, q.p50);
	if (hand->steps > 0 && q.p50 > 0) {
		printf(" (ratio %.3f)", h.p50 / q.p50);
	}
	printf("\n");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: fleet [--drones LIST] [--procs LIST] [--nodes LIST] [--dmax-usec D]\n"
	           "             [--seconds S] [--zones-seconds Z] [--rounds R] [--quick] [-v]\n"
	           "  --drones LIST   fleet sizes (default 128,256,512,1024,2048)\n"
	           "  --procs LIST    host processes (default 1,2,4)\n"
	           "  --nodes LIST    1: one domain; 2: a federation of two nodes, half the hosts\n"
	           "                  on each (only even process counts); default 1,2\n"
	           "  --dmax-usec D   Dmax of the two-node federation (default 10000; >= 1000)\n"
	           "  --seconds S     world seconds per run (default 2)\n"
	           "  --zones-seconds Z  world seconds of the zones variant (d<N>-p2-n1-zones,\n"
	           "                  run when the process counts have 2 and the node counts 1;\n"
	           "                  default 8; 0: none)\n"
	           "  --rounds R      runs of each variant (default 3)\n"
	           "  --quick         128 and 1024 drones, 1 and 2 processes, 0.3 s (zones: 4 s\n"
	           "                  of 128 drones), 1 round\n");
}

/* The variants of one size: every process count on one node, the even ones on two. */
struct variant {
	int procs, nodes;
};

int main(int argc, char **argv)
{
	long sizes[MAX_SIZES] = {128, 256, 512, 1024, 2048}, procs[MAX_PROCS] = {1, 2, 4};
	long nodes[NODES] = {1, 2};
	long dmax = 10000;
	int nsizes = 5, nprocs = 3, nnodes = 2, rounds = 3;
	double seconds = 2.0, zones_seconds = 8.0;
	size_t zones_max = 65536; /* the largest fleet the zones variant runs */
	static const struct option longopts[] = {{"drones", required_argument, NULL, 'd'},
	                                         {"procs", required_argument, NULL, 'p'},
	                                         {"nodes", required_argument, NULL, 'n'},
	                                         {"dmax-usec", required_argument, NULL, 'D'},
	                                         {"seconds", required_argument, NULL, 's'},
	                                         {"rounds", required_argument, NULL, 'r'},
	                                         {"zones-seconds", required_argument, NULL, 'z'},
	                                         {"quick", no_argument, NULL, 'q'},
	                                         {"verbose", no_argument, NULL, 'v'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': nsizes = bench_parse_list(optarg, sizes, MAX_SIZES); break;
		case 'p': nprocs = bench_parse_list(optarg, procs, MAX_PROCS); break;
		case 'n': nnodes = bench_parse_list(optarg, nodes, NODES); break;
		case 'D': dmax = strtol(optarg, NULL, 10); break;
		case 's': seconds = atof(optarg); break;
		case 'z': zones_seconds = atof(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'q':
			sizes[0] = 128;
			sizes[1] = 1024;
			nsizes = 2;
			procs[0] = 1;
			procs[1] = 2;
			nprocs = 2;
			seconds = 0.3;
			zones_seconds = 4.0;
			zones_max = 128;
			rounds = 1;
			break;
		case 'v': g_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (nsizes <= 0 || nprocs <= 0 || nnodes <= 0 || seconds <= 0 || seconds > 1000 ||
	    zones_seconds < 0 || zones_seconds > 1000 || rounds <= 0 || rounds > 64 ||
	    dmax < DELTA_USEC || dmax > 1000000) {
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
	struct variant vars[MAX_PROCS * NODES];
	int nvars = 0, p2n1 = -1; /* the variant the zones one is compared with */
	for (int ni = 0; ni < nnodes; ni++) {
		if (nodes[ni] != 1 && nodes[ni] != NODES) {
			fprintf(stderr, "fleet: --nodes %ld: 1 or %d\n", nodes[ni], NODES);
			return 2;
		}
		for (int pi = 0; pi < nprocs; pi++) {
			if (procs[pi] % nodes[ni] == 0) {
				p2n1 = procs[pi] == 2 && nodes[ni] == 1 ? nvars : p2n1;
				vars[nvars].procs = (int)procs[pi];
				vars[nvars++].nodes = (int)nodes[ni];
			}
		}
	}
	g_dmax_usec = dmax;
	uint64_t steps = (uint64_t)(seconds * 1000.0);
	uint64_t zsteps = p2n1 >= 0 ? (uint64_t)(zones_seconds * 1000.0) : 0;
	steps = steps > MAX_STEPS ? MAX_STEPS : steps;
	zsteps = zsteps > MAX_STEPS ? MAX_STEPS : zsteps;
	snprintf(g_domain, sizeof(g_domain), "bench-fleet-%d", (int)getpid());
	for (int j = 0; j < NODES; j++) {
		snprintf(g_node_domain[j], sizeof(g_node_domain[j]), "bench-fleet-%d-%s",
		         (int)getpid(), node_id(j));
	}
	g_bench_pid = getpid();
	bench_exit_init("fleet", cleanup, 1);
	g_sh = bench_shared_alloc(sizeof(*g_sh));
	if (g_sh == NULL) {
		bench_die("shared memory");
	}
	if (zsteps > 0) {
		snprintf(g_zones_dir, sizeof(g_zones_dir), "/tmp/bench-fleet-XXXXXX");
		if (mkdtemp(g_zones_dir) == NULL) {
			g_zones_dir[0] = '\0';
			bench_die("mkdtemp: %s", strerror(errno));
		}
	}
	printf("# fleet: drones stepped at 1 ms by hako host processes (4 PDUs per drone per step) "
	       "against the same drones in one plain loop; %.1f s of world time, %d round(s); "
	       "n2 = two nodes federated by conductors over tcp on 127.0.0.1, Dmax %ld us; "
	       "RTF = ops_per_s / 1000; zones: %.1f s; %d CPUs\n",
	       seconds, rounds, dmax, (double)zsteps / 1000.0, bench_ncpus());
	puts(BENCH_CSV_HEADER);
	for (int si = 0; si < nsizes; si++) {
		size_t n = (size_t)sizes[si];
		struct cell plain = {0}, zones = {0}, hand = {0}, quiet = {0};
		struct cell hosts[MAX_PROCS * NODES];
		memset(hosts, 0, sizeof(hosts));
		int zoned = zsteps > 0 && n <= zones_max;
		if (zoned && fleet_zones_write_config(g_zones_dir, n, NULL, g_zones_rd,
		                                      sizeof(g_zones_rd)) != 0) {
			bench_die("zones: write the RD config in %s: %s", g_zones_dir,
			          strerror(errno));
		}
		/* Rounds interleave the variants: a slow moment of the machine hits them all. */
		for (int r = 0; r < rounds; r++) {
			run_plain(n, steps, &plain);
			for (int vi = 0; vi < nvars; vi++) {
				run_hosts(n, vars[vi].procs, vars[vi].nodes, 0, steps, &hosts[vi],
				          NULL, NULL);
			}
			if (zoned) {
				run_hosts(n, 2, 1, 1, zsteps, &zones, &hand, &quiet);
			}
		}
		char variant[64];
		snprintf(variant, sizeof(variant), "plain-d%zu", n);
		print_cell(variant, n, &plain);
		for (int vi = 0; vi < nvars; vi++) {
			struct cell *h = &hosts[vi];
			snprintf(variant, sizeof(variant), "d%zu-p%d-n%d", n, vars[vi].procs,
			         vars[vi].nodes);
			print_cell(variant, n, h);
			printf("# %s: RTF %.2f (floor, one plain loop on one core: %.2f); "
			       "hako/floor step rate %.2f; %.0f PDU writes/s",
			       variant, rate(h) / 1000.0, rate(&plain) / 1000.0,
			       rate(&plain) > 0 ? rate(h) / rate(&plain) : 0.0,
			       rate(h) * (double)n * FLEET_CHANNELS);
			if (vars[vi].nodes > 1) {
				printf("; drift max %lld us (Dmax %ld), %llu samples",
				       (long long)h->drift_max, dmax,
				       (unsigned long long)h->drift_samples);
			}
			printf("\n");
		}
		if (zoned) {
			print_zones(n, &zones, &hand, &quiet, &hosts[p2n1]);
		}
		bench_samples_free(&plain.s);
		bench_samples_free(&zones.s);
		bench_samples_free(&hand.s);
		bench_samples_free(&quiet.s);
		for (int vi = 0; vi < nvars; vi++) {
			bench_samples_free(&hosts[vi].s);
		}
		fflush(stdout);
	}
	bench_shared_free(g_sh, sizeof(*g_sh));
	cleanup(); /* the zones' RD config */
	return 0;
}
