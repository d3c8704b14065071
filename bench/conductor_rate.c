/* conductor_rate: world steps per wall second of conductor federations on loopback, against
 * the same assets in one domain, measured in the same run.
 *
 * Each node is a forked process: its own domain, its master (delta 1000 us, Dmax = 1, 10 or 20
 * deltas, free running), a conductor node (hako/conductor.h: ZeroMQ and its time link over tcp on
 * 127.0.0.1, publish mode immediate) and one asset in its main thread that loops
 * hako_member_step_wait / hako_member_step_done with no work in the step. The bench process
 * opens every domain, starts the server's, and after a warm-up counts the world steps of each
 * node over a fixed wall time: `ops_per_s` is the rate of the slowest node. The assets time the
 * grant latency (hako_member_step_done of step k until hako_member_step_wait of step k + 1
 * returns) and the wall time between two grants. Baseline, interleaved: `single` / `single-n4`,
 * the same assets (one a process) in one domain, lock-step, no conductor. `relay5-dmax20` puts a
 * hako-relay with a one-way delay L between the client and the server, where the rule bounds
 * the real-time factor by Dmax / L. Last, the CPU of the processes of a stopped federation.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

#include <zmq.h>

#include "bench_common.h"
#include "bench_keys.h"
#include "hako/conductor.h"
#include "hako/domain.h"
#include "hako/log.h"

#ifndef HAKO_RELAY_EXE
#define HAKO_RELAY_EXE ""
#endif

#define DELTA_USEC  1000
#define MAX_NODES   4
#define MAX_ROUNDS  64
#define SAMPLE_CAP  (1u << 20) /* per node and kind */
#define WAIT_USEC   30000000
#define SNAPSHOT_NS 2000000 /* the drift checker's period */
#define SERVER_ID   "srv-01"

/* What a node process reports. */
struct node_report {
	_Atomic int ready;       /* its asset registered (a server: listening) */
	_Atomic int stopped;     /* its domain Stopped, its statistics below */
	int listen_failed;       /* a server whose ports another process took */
	_Atomic uint64_t zsteps; /* zmq-lockstep: the steps done */
	int npeers;
	hako_conductor_peer_stats_t peers[MAX_NODES - 1];
	bench_cpu_t idle_cpu; /* between the bench's 'i' and the end */
	int64_t idle_wall_ns;
	uint64_t ngrant, nperiod;
	uint32_t grant[SAMPLE_CAP];  /* ns: step_done -> the next step_wait returned */
	uint32_t period[SAMPLE_CAP]; /* ns: one step_wait return to the next */
};

struct shared {
	_Atomic int measuring;
	_Atomic int go, quit; /* zmq-lockstep: start, stop */
	char error[256];
	struct node_report node[MAX_NODES];
};

struct variant {
	const char *name;
	int nodes;      /* processes: nodes of a federation, or assets of one domain */
	int conductor;  /* 0: one domain, no conductor */
	int dmax_steps; /* Dmax / delta */
	int relay;      /* a hako-relay of one-way delay g_relay_ms between client and server */
	int zmq;        /* no domain: two processes in lock-step over a ZeroMQ PAIR */
	int noauth;     /* "auth": "none": the control plane without CURVE (its cost) */
};

static const struct variant g_variants[] = {
    {"single", 2, 0, 1, 0, 0, 0},         {"zmq-lockstep", 2, 0, 1, 0, 1, 0},
    {"n2-lock", 2, 1, 1, 0, 0, 0},        {"n2-dmax10", 2, 1, 10, 0, 0, 0},
    {"n2-dmax20", 2, 1, 20, 0, 0, 0},     {"single-n4", 4, 0, 1, 0, 0, 0},
    {"n4-lock", 4, 1, 1, 0, 0, 0},        {"n4-dmax20", 4, 1, 20, 0, 0, 0},
    {"relay5-dmax20", 2, 1, 20, 1, 0, 0}, {"n2-lock-noauth", 2, 1, 1, 0, 0, 1},
};
#define NVARIANTS ((int)(sizeof(g_variants) / sizeof(g_variants[0])))

/* The results of one variant, all rounds. */
struct cell {
	uint64_t steps; /* the slowest node's world steps */
	int64_t wall_ns;
	bench_cpu_t cpu; /* all node processes over the timed windows */
	uint64_t ctx;    /* their context switches (every thread) over the windows */
	bench_samples_t grant, period;
	double round_rate[MAX_ROUNDS];
	int rounds;
	/* drift: the conductors' own statistics (max over rounds) and the checker's snapshots */
	int npeer[MAX_NODES];
	hako_conductor_peer_stats_t peer[MAX_NODES][MAX_NODES - 1];
	hako_time_t snap_sc, snap_cc;
	uint64_t snaps;
};

static char g_domain[MAX_NODES][64];
static char g_keys[64]; /* the nodes' keys (bench_keys.h) */
static pid_t g_nodes[MAX_NODES];
static int g_cmd[MAX_NODES] = {-1, -1, -1, -1}; /* write ends: 'i', then EOF = quit */
static bench_relay_t g_relay = BENCH_RELAY_INIT;
static struct shared *g_sh;
static int g_verbose;
static double g_relay_ms = 5.0;
static const char *g_relay_exe;

static void cleanup(void)
{
	for (int i = 0; i < MAX_NODES; i++) {
		if (g_nodes[i] > 0) {
			kill(g_nodes[i], SIGKILL);
			waitpid(g_nodes[i], NULL, 0);
			g_nodes[i] = 0;
		}
	}
	bench_relay_stop(&g_relay);
	for (int i = 0; i < MAX_NODES; i++) {
		if (g_domain[i][0] != '\0') {
			hako_domain_remove(g_domain[i]);
		}
	}
	bench_keys_remove(g_keys);
	g_keys[0] = '\0';
}

static void child_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void child_fail(const char *fmt, ...)
{
	char msg[sizeof(g_sh->error)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (g_sh->error[0] == '\0') { /* the first failure is the one that matters */
		memcpy(g_sh->error, msg, sizeof(msg));
	}
	_exit(4);
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = {ns / 1000000000, ns % 1000000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

static const char *node_id(int idx, char *buf, size_t len)
{
	if (idx == 0) {
		snprintf(buf, len, SERVER_ID);
	} else {
		snprintf(buf, len, "cli-%02d", idx);
	}
	return buf;
}

/* ---- a node process ---- */

/* Every node of a federation agrees on it; another variant has another one. */
static uint32_t config_hash(const struct variant *v)
{
	char text[64];
	int n = snprintf(text, sizeof(text), "%s|%d|%d", SERVER_ID, DELTA_USEC,
	                 v->dmax_steps * DELTA_USEC);
	uint32_t h = 2166136261u;
	for (int i = 0; i < n; i++) {
		h = (h ^ (unsigned char)text[i]) * 16777619u;
	}
	return h;
}

static void fill_config(hako_conductor_config_t *c, int idx, const struct variant *v,
                        const char *ctl, const char *tim)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "conductor_rate:%s", v->name);
	c->role = idx == 0 ? HAKO_CONDUCTOR_SERVER : HAKO_CONDUCTOR_CLIENT;
	node_id(idx, c->node_id, sizeof(c->node_id));
	snprintf(c->server_id, sizeof(c->server_id), SERVER_ID);
	if (idx == 0) {
		c->client_count = (size_t)(v->nodes - 1);
		for (int i = 1; i < v->nodes; i++) {
			node_id(i, c->clients[i - 1], sizeof(c->clients[i - 1]));
		}
	}
	snprintf(c->domain, sizeof(c->domain), "%s", g_domain[idx]);
	c->delta_usec = DELTA_USEC;
	c->max_delay_usec = (hako_time_t)v->dmax_steps * DELTA_USEC;
	c->publish_mode = HAKO_PUBLISH_IMMEDIATE;
	c->publish_interval_usec = DELTA_USEC;
	snprintf(c->control_address, sizeof(c->control_address), "%s", ctl);
	snprintf(c->time_address, sizeof(c->time_address), "%s", tim);
	c->heartbeat_ms = 100;
	c->peer_timeout_ms = 1000;
	c->on_client_loss = HAKO_CLIENT_LOSS_ERROR;
	c->config_hash = config_hash(v);
	snprintf(c->keys_dir, sizeof(c->keys_dir), "%s", g_keys);
	c->auth = v->noauth ? HAKO_CONDUCTOR_AUTH_NONE : HAKO_CONDUCTOR_AUTH_CURVE;
}

/* The asset: as fast as the clock allows, timing the grants while the bench measures. */
static void step_loop(hako_member_t *m, struct node_report *rep)
{
	int64_t done_at = 0, granted_at = 0;
	for (;;) {
		int r = hako_member_step_wait(m);
		int64_t now = bench_now_ns();
		if (r != 0) {
			if (r != HAKO_EINTR) {
				child_fail("step_wait: %s", hako_strerror(r));
			}
			return; /* the run stopped */
		}
		if (atomic_load_explicit(&g_sh->measuring, memory_order_relaxed)) {
			if (done_at != 0 && rep->ngrant < SAMPLE_CAP) {
				rep->grant[rep->ngrant++] = (uint32_t)(now - done_at);
			}
			if (granted_at != 0 && rep->nperiod < SAMPLE_CAP) {
				rep->period[rep->nperiod++] = (uint32_t)(now - granted_at);
			}
		}
		granted_at = now;
		done_at = bench_now_ns();
		hako_member_step_done(m);
	}
}

/* Block until the bench closes the command pipe; 'i' opens the idle measurement. */
static void idle_until_quit(struct node_report *rep, int cmd_fd)
{
	bench_cpu_t c0 = {0, 0};
	int64_t w0 = 0;
	for (;;) {
		char c;
		ssize_t k = read(cmd_fd, &c, 1);
		if (k == 1 && c == 'i') {
			c0 = bench_cpu_self();
			w0 = bench_now_ns();
		} else if (!(k < 0 && errno == EINTR)) {
			break;
		}
	}
	if (w0 != 0) {
		rep->idle_cpu = bench_cpu_sub(bench_cpu_self(), c0);
		rep->idle_wall_ns = bench_now_ns() - w0;
	}
}

/* zmq-lockstep, one side: send step k, wait for the other's step k, and again. The floor of a
 * lock-step over ZeroMQ tcp: each side's I/O thread on the path, no domain, no conductor. */
static void zmq_main(int idx, const char *addr, int cmd_fd)
{
	struct node_report *rep = &g_sh->node[idx];
	void *ctx = zmq_ctx_new();
	void *s = ctx != NULL ? zmq_socket(ctx, ZMQ_PAIR) : NULL;
	int zero = 0, timeout_ms = 100;
	if (s == NULL) {
		child_fail("zmq-lockstep %d: zmq_socket: %s", idx, zmq_strerror(errno));
	}
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeout_ms, sizeof(timeout_ms));
	if (idx == 0 && zmq_bind(s, addr) != 0) {
		rep->listen_failed = 1;
		_exit(5);
	}
	if (idx != 0 && zmq_connect(s, addr) != 0) {
		child_fail("zmq-lockstep: connect %s: %s", addr, zmq_strerror(errno));
	}
	atomic_store(&rep->ready, 1);
	while (!atomic_load(&g_sh->go)) {
		usleep(200);
	}
	int64_t granted_at = 0;
	for (uint64_t k = 1; !atomic_load(&g_sh->quit); k++) {
		int64_t sent_at = bench_now_ns();
		if (zmq_send(s, &k, sizeof(k), 0) != (int)sizeof(k)) {
			child_fail("zmq-lockstep %d: send: %s", idx, zmq_strerror(errno));
		}
		uint64_t peer = 0;
		int got;
		while ((got = zmq_recv(s, &peer, sizeof(peer), 0)) < 0 &&
		       (errno == EAGAIN || errno == EINTR) && !atomic_load(&g_sh->quit)) {
		}
		if (got < 0) {
			break; /* stopped */
		}
		if (got != (int)sizeof(peer) || peer != k) {
			child_fail("zmq-lockstep %d: step %llu got %llu", idx,
			           (unsigned long long)k, (unsigned long long)peer);
		}
		int64_t now = bench_now_ns();
		if (atomic_load_explicit(&g_sh->measuring, memory_order_relaxed)) {
			if (rep->ngrant < SAMPLE_CAP) {
				rep->grant[rep->ngrant++] = (uint32_t)(now - sent_at);
			}
			if (granted_at != 0 && rep->nperiod < SAMPLE_CAP) {
				rep->period[rep->nperiod++] = (uint32_t)(now - granted_at);
			}
		}
		granted_at = now;
		atomic_store_explicit(&rep->zsteps, k, memory_order_relaxed);
	}
	atomic_store(&rep->stopped, 1);
	idle_until_quit(rep, cmd_fd);
	zmq_close(s);
	zmq_ctx_term(ctx);
	_exit(0);
}

static void node_main(int idx, const struct variant *v, const char *ctl, const char *tim,
                      int cmd_fd)
{
	if (v->zmq) {
		zmq_main(idx, ctl, cmd_fd);
	}
	struct node_report *rep = &g_sh->node[idx];
	int owner = v->conductor || idx == 0;
	const char *dname = g_domain[v->conductor ? idx : 0];
	char id[16], msg[1200];
	hako_domain_t *dom;
	hako_master_t *master = NULL;
	hako_conductor_node_t *cn = NULL;
	hako_member_t *m;
	int r;
	node_id(idx, id, sizeof(id));
	if (owner) {
		hako_domain_config_t dc;
		hako_domain_config_default(&dc);
		dc.max_assets = 16;
		dc.max_channels = 16;
		dc.arena_bytes = 1u << 20;
		if ((r = hako_domain_create(dname, &dc, &dom)) != 0) {
			child_fail("%s: create domain %s: %s", id, dname, hako_strerror(r));
		}
		hako_master_config_t mc = {DELTA_USEC, (hako_time_t)v->dmax_steps * DELTA_USEC,
		                           0.0};
		if ((r = hako_master_start(dom, &mc, &master)) != 0) {
			child_fail("%s: master: %s", id, hako_strerror(r));
		}
	} else if ((r = hako_domain_open(dname, &dom)) != 0) {
		child_fail("%s: open domain %s: %s", id, dname, hako_strerror(r));
	}
	if (v->conductor) {
		hako_conductor_config_t cfg;
		hako_error_t err;
		fill_config(&cfg, idx, v, ctl, tim);
		if (hako_conductor_node_start(&cfg, dom, &cn, &err) != 0) {
			if (idx == 0 && strstr(err.message, "cannot listen") != NULL) {
				rep->listen_failed = 1; /* the bench tries other ports */
				hako_master_stop(master);
				hako_domain_close(dom);
				hako_domain_remove(dname);
				_exit(5);
			}
			child_fail("%s: %s", id, hako_error_format(&err, msg, sizeof(msg)));
		}
	}
	char name[32];
	snprintf(name, sizeof(name), "asset-%d", idx);
	if ((r = hako_member_register(dom, name, DELTA_USEC, &m)) != 0) {
		child_fail("%s: register: %s", id, hako_strerror(r));
	}
	atomic_store(&rep->ready, 1);

	int ev = 0;
	if ((r = hako_member_wait_event(m, WAIT_USEC, &ev)) != 0 || ev != HAKO_EVENT_START) {
		child_fail("%s: no start event (%s, event %d)", id, hako_strerror(r), ev);
	}
	if ((r = hako_member_ack(m, HAKO_EVENT_START)) != 0) {
		child_fail("%s: ack start: %s", id, hako_strerror(r));
	}
	step_loop(m, rep);
	if ((r = hako_member_wait_event(m, WAIT_USEC, &ev)) != 0 || ev != HAKO_EVENT_STOP) {
		hako_domain_info_t info;
		hako_domain_get_info(dom, &info);
		child_fail("%s: no stop event (%s, event %d; domain %s: %s)", id, hako_strerror(r),
		           ev, hako_state_name(info.state), info.error_reason);
	}
	hako_member_ack(m, HAKO_EVENT_STOP);
	if (owner && (r = hako_domain_wait_state(dom, HAKO_STATE_STOPPED, WAIT_USEC)) != 0) {
		child_fail("%s: not stopped: %s", id, hako_strerror(r));
	}
	if (owner && hako_domain_state(dom) != HAKO_STATE_STOPPED) {
		child_fail("%s: the domain is %s, not stopped", id,
		           hako_state_name(hako_domain_state(dom)));
	}
	if (cn != NULL) {
		hako_conductor_node_stats(cn, rep->peers, MAX_NODES - 1, &rep->npeers);
	}
	atomic_store(&rep->stopped, 1);

	idle_until_quit(rep, cmd_fd);
	hako_member_unregister(m);
	hako_conductor_node_stop(cn);
	hako_master_stop(master);
	hako_domain_close(dom);
	if (owner) {
		hako_domain_remove(dname);
	}
	_exit(0);
}

/* ---- the bench process: processes, ports, /proc ---- */

/* Die if a child failed or ended before its time. */
static void check_children(const char *what)
{
	if (g_sh->error[0] != '\0') {
		bench_die("%s: a node failed", what);
	}
	for (int i = 0; i < MAX_NODES; i++) {
		int status = 0;
		if (g_nodes[i] > 0 && waitpid(g_nodes[i], &status, WNOHANG) == g_nodes[i]) {
			g_nodes[i] = 0;
			bench_die("%s: node %d ended early (status 0x%x)", what, i, status);
		}
	}
	if (g_relay.pid > 0 && waitpid(g_relay.pid, NULL, WNOHANG) == g_relay.pid) {
		g_relay.pid = 0;
		bench_die("%s: hako-relay ended early", what);
	}
}

struct node_args {
	int idx;
	const struct variant *v;
	const char *ctl, *tim;
};

static void node_entry(void *arg, int cmd_fd)
{
	const struct node_args *a = arg;
	node_main(a->idx, a->v, a->ctl, a->tim, cmd_fd);
}

static pid_t fork_node(int idx, const struct variant *v, const char *ctl, const char *tim)
{
	struct node_args a = {idx, v, ctl, tim};
	g_nodes[idx] = bench_fork_commanded(g_cmd, MAX_NODES, node_entry, &a, &g_cmd[idx]);
	return g_nodes[idx];
}

/* Wait until node idx reported ready: 1, or 0 if it ended for want of its ports. */
static int wait_ready(int idx, const char *what)
{
	int64_t deadline = bench_now_ns() + (int64_t)WAIT_USEC * 1000;
	while (!atomic_load(&g_sh->node[idx].ready)) {
		int status = 0;
		if (waitpid(g_nodes[idx], &status, WNOHANG) == g_nodes[idx]) {
			g_nodes[idx] = 0;
			if (g_sh->node[idx].listen_failed) {
				return 0;
			}
			bench_die("%s: node %d ended (status 0x%x)", what, idx, status);
		}
		check_children(what);
		if (bench_now_ns() > deadline) {
			bench_die("%s: node %d not ready", what, idx);
		}
		usleep(500);
	}
	return 1;
}

/* Voluntary + involuntary context switches of every thread of a process. */
static uint64_t proc_ctx(pid_t pid)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	uint64_t sum = 0;
	if (d == NULL) {
		return 0;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.') {
			continue;
		}
		char line[128];
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/status", (int)pid, e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL) {
			continue;
		}
		while (fgets(line, sizeof(line), f) != NULL) {
			unsigned long long v;
			if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
			    sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1) {
				sum += v;
			}
		}
		fclose(f);
	}
	closedir(d);
	return sum;
}

/* One consistent look at every node's world time: the server's unchanged around the others. */
static int snapshot(hako_domain_t **dom, int n, hako_time_t *t)
{
	for (int tries = 0; tries < 100; tries++) {
		hako_time_t before = hako_domain_world_time(dom[0]);
		for (int i = 1; i < n; i++) {
			t[i] = hako_domain_world_time(dom[i]);
		}
		if (hako_domain_world_time(dom[0]) == before) {
			t[0] = before;
			return 1;
		}
	}
	return 0;
}

static hako_time_t absdiff(hako_time_t a, hako_time_t b)
{
	return a > b ? a - b : b - a;
}

/* ---- one run of a variant ---- */

struct idle_result {
	int nodes;
	double seconds;
	double pct_rusage[MAX_NODES]; /* the node's own getrusage (us resolution) */
	double pct_proc[MAX_NODES];   /* /proc/<pid>/stat utime + stime (10 ms resolution) */
};

/* The steps node i has done: its domain's world steps, or its zmq-lockstep steps. */
static int64_t progress(const struct variant *v, hako_domain_t **dom, int i)
{
	if (v->zmq) {
		return (int64_t)atomic_load(&g_sh->node[i].zsteps);
	}
	return hako_domain_world_time(dom[i]) / DELTA_USEC;
}

/* Fork the nodes of v, the server first (on fresh ports until it can listen), with a relay
 * in front of it if v has one. */
static void start_nodes(const struct variant *v)
{
	char ctl[64] = "", tim[64] = "", cctl[64] = "", ctim[64] = "";
	if (v->conductor && !v->noauth) { /* the same ids in every variant: made once, kept */
		static hako_conductor_config_t cfgs[MAX_NODES];
		for (int i = 0; i < v->nodes; i++) {
			fill_config(&cfgs[i], i, v, "tcp://127.0.0.1:1", "tcp://127.0.0.1:2");
		}
		bench_keys_make(cfgs, v->nodes, g_keys);
	}
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
		fork_node(0, v, ctl, tim);
		if (wait_ready(0, v->name)) {
			break;
		}
		close(g_cmd[0]);
		g_cmd[0] = -1;
		bench_relay_stop(&g_relay);
		if (attempt == 4) {
			bench_die("%s: no free ports for the server after 5 tries", v->name);
		}
	}
	for (int i = 1; i < v->nodes; i++) {
		fork_node(i, v, cctl, ctim);
	}
	for (int i = 1; i < v->nodes; i++) {
		wait_ready(i, v->name);
	}
}

/* Start the run (the server's or the single domain; zmq-lockstep: go) and wait until every
 * node moves. */
static void start_run(const struct variant *v, hako_domain_t **dom, int ndom)
{
	int64_t deadline = bench_now_ns() + (int64_t)WAIT_USEC * 1000;
	int r;
	if (v->zmq) {
		atomic_store(&g_sh->go, 1);
		for (int i = 0; i < v->nodes; i++) {
			while (atomic_load(&g_sh->node[i].zsteps) == 0) {
				check_children(v->name);
				if (bench_now_ns() > deadline) {
					bench_die("%s: no steps", v->name);
				}
				usleep(500);
			}
		}
		return;
	}
	if ((r = hako_domain_start(dom[0])) != 0) {
		bench_die("%s: start: %s", v->name, hako_strerror(r));
	}
	for (int i = 0; i < ndom; i++) {
		while (hako_domain_state(dom[i]) != HAKO_STATE_RUNNING) {
			check_children(v->name);
			if (bench_now_ns() > deadline ||
			    hako_domain_state(dom[i]) == HAKO_STATE_ERROR) {
				bench_die("%s: domain %s is %s, not running", v->name, g_domain[i],
				          hako_state_name(hako_domain_state(dom[i])));
			}
			usleep(500);
		}
	}
}

/* Fold node i's report of this run into the cell. */
static void collect_node(struct cell *cell, int i, struct idle_result *idle)
{
	struct node_report *rep = &g_sh->node[i];
	for (uint64_t k = 0; k < rep->ngrant; k++) {
		bench_samples_push(&cell->grant, rep->grant[k]);
	}
	for (uint64_t k = 0; k < rep->nperiod; k++) {
		bench_samples_push(&cell->period, rep->period[k]);
	}
	cell->npeer[i] = rep->npeers < MAX_NODES - 1 ? rep->npeers : MAX_NODES - 1;
	for (int p = 0; p < cell->npeer[i]; p++) {
		hako_conductor_peer_stats_t *a = &cell->peer[i][p];
		const hako_conductor_peer_stats_t *b = &rep->peers[p];
		if (a->samples == 0) {
			*a = *b;
			continue;
		}
		a->samples += b->samples;
		a->messages_in += b->messages_in;
		a->messages_out += b->messages_out;
		a->drift_p50_usec =
		    b->drift_p50_usec > a->drift_p50_usec ? b->drift_p50_usec : a->drift_p50_usec;
		a->drift_p95_usec =
		    b->drift_p95_usec > a->drift_p95_usec ? b->drift_p95_usec : a->drift_p95_usec;
		a->drift_max_usec =
		    b->drift_max_usec > a->drift_max_usec ? b->drift_max_usec : a->drift_max_usec;
	}
	if (idle != NULL && rep->idle_wall_ns > 0) {
		idle->pct_rusage[i] = (rep->idle_cpu.user + rep->idle_cpu.sys) * 1e9 /
		                      (double)rep->idle_wall_ns * 100.0;
	}
}

static void run_variant(const struct variant *v, int64_t warm_ns, int64_t window_ns,
                        struct cell *cell, int64_t idle_ns, struct idle_result *idle)
{
	const int n = v->nodes;
	const int ndom = v->zmq ? 0 : v->conductor ? n : 1;
	const int nprog = v->zmq ? n : ndom; /* the nodes whose progress counts */
	memset(g_sh->error, 0, sizeof(g_sh->error));
	atomic_store(&g_sh->measuring, 0);
	atomic_store(&g_sh->go, 0);
	atomic_store(&g_sh->quit, 0);
	for (int i = 0; i < MAX_NODES; i++) {
		memset(&g_sh->node[i], 0, offsetof(struct node_report, grant));
	}
	start_nodes(v);
	hako_domain_t *dom[MAX_NODES];
	int r;
	for (int i = 0; i < ndom; i++) {
		if ((r = hako_domain_open(g_domain[i], &dom[i])) != 0) {
			bench_die("%s: open domain %s: %s", v->name, g_domain[i], hako_strerror(r));
		}
	}
	start_run(v, dom, ndom);
	sleep_ns(warm_ns);
	check_children(v->name);

	/* The timed window. */
	int64_t p0[MAX_NODES], p1[MAX_NODES];
	hako_time_t t[MAX_NODES];
	bench_cpu_t c0[MAX_NODES];
	uint64_t x0 = 0, x1 = 0;
	for (int i = 0; i < n; i++) {
		c0[i] = bench_proc_cpu(g_nodes[i]);
		x0 += proc_ctx(g_nodes[i]);
	}
	atomic_store(&g_sh->measuring, 1);
	int64_t t0 = bench_now_ns();
	for (int i = 0; i < nprog; i++) {
		p0[i] = progress(v, dom, i);
	}
	int64_t t1;
	while ((t1 = bench_now_ns()) - t0 < window_ns) {
		if (v->conductor && snapshot(dom, n, t)) {
			for (int i = 1; i < n; i++) {
				hako_time_t d = absdiff(t[0], t[i]);
				cell->snap_sc = d > cell->snap_sc ? d : cell->snap_sc;
				for (int j = i + 1; j < n; j++) {
					d = absdiff(t[i], t[j]);
					cell->snap_cc = d > cell->snap_cc ? d : cell->snap_cc;
				}
			}
			cell->snaps++;
		}
		int64_t left = window_ns - (t1 - t0);
		sleep_ns(left < SNAPSHOT_NS ? left : SNAPSHOT_NS);
	}
	for (int i = 0; i < nprog; i++) {
		p1[i] = progress(v, dom, i);
	}
	t1 = bench_now_ns();
	atomic_store(&g_sh->measuring, 0);
	for (int i = 0; i < n; i++) {
		bench_cpu_t c = bench_cpu_sub(bench_proc_cpu(g_nodes[i]), c0[i]);
		cell->cpu.user += c.user;
		cell->cpu.sys += c.sys;
		x1 += proc_ctx(g_nodes[i]);
	}
	for (int i = 0; i < ndom; i++) {
		if (hako_domain_state(dom[i]) != HAKO_STATE_RUNNING) {
			check_children(v->name);
			bench_die("%s: domain %s left Running during the measurement (%s)", v->name,
			          g_domain[i], hako_state_name(hako_domain_state(dom[i])));
		}
	}

	if (v->zmq) {
		atomic_store(&g_sh->quit, 1);
	} else if ((r = hako_domain_stop(dom[0])) != 0) {
		bench_die("%s: stop: %s", v->name, hako_strerror(r));
	}
	int64_t deadline = bench_now_ns() + (int64_t)WAIT_USEC * 1000;
	for (int i = 0; i < n; i++) {
		while (!atomic_load(&g_sh->node[i].stopped)) {
			check_children(v->name);
			if (bench_now_ns() > deadline) {
				bench_die("%s: node %d did not stop", v->name, i);
			}
			usleep(1000);
		}
	}
	if (idle != NULL) {
		bench_cpu_t i0[MAX_NODES];
		sleep_ns(200000000); /* let the stop settle */
		for (int i = 0; i < n; i++) {
			if (bench_write_full(g_cmd[i], "i", 1) != 0) {
				bench_die("idle: node %d: %s", i, strerror(errno));
			}
			i0[i] = bench_proc_cpu(g_nodes[i]);
		}
		int64_t s0 = bench_now_ns();
		sleep_ns(idle_ns);
		int64_t wall = bench_now_ns() - s0;
		idle->nodes = n;
		idle->seconds = (double)wall / 1e9;
		for (int i = 0; i < n; i++) {
			bench_cpu_t c = bench_cpu_sub(bench_proc_cpu(g_nodes[i]), i0[i]);
			idle->pct_proc[i] = (c.user + c.sys) * 1e9 / (double)wall * 100.0;
		}
	}
	for (int i = 0; i < n; i++) {
		close(g_cmd[i]);
		g_cmd[i] = -1;
	}
	deadline = bench_now_ns() + (int64_t)WAIT_USEC * 1000;
	for (int i = 0; i < n; i++) {
		int status = 0;
		pid_t w;
		while ((w = waitpid(g_nodes[i], &status, WNOHANG)) == 0) {
			if (bench_now_ns() > deadline) {
				bench_die("%s: node %d did not end", v->name, i);
			}
			usleep(1000);
		}
		g_nodes[i] = 0;
		if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			bench_die("%s: node %d failed (status 0x%x)", v->name, i, status);
		}
	}
	bench_relay_stop(&g_relay);
	for (int i = 0; i < ndom; i++) {
		hako_domain_close(dom[i]);
		hako_domain_remove(g_domain[i]); /* gone already, unless a node could not */
	}

	/* The slowest node's steps over the window. */
	uint64_t steps = UINT64_MAX;
	for (int i = 0; i < nprog; i++) {
		uint64_t s = (uint64_t)(p1[i] - p0[i]);
		steps = s < steps ? s : steps;
	}
	int64_t wall = t1 - t0;
	cell->steps += steps;
	cell->wall_ns += wall;
	cell->ctx += x1 - x0;
	if (cell->rounds < MAX_ROUNDS) {
		cell->round_rate[cell->rounds++] = (double)steps * 1e9 / (double)wall;
	}
	for (int i = 0; i < n; i++) {
		collect_node(cell, i, idle);
	}
	if (g_verbose) {
		fprintf(stderr, "  %-14s %8llu steps in %.3f s: %9.0f steps/s (nodes:", v->name,
		        (unsigned long long)steps, (double)wall / 1e9,
		        (double)steps * 1e9 / (double)wall);
		for (int i = 0; i < nprog; i++) {
			fprintf(stderr, " %lld", (long long)(p1[i] - p0[i]));
		}
		fprintf(stderr, ")\n");
	}
}

/* ---- output ---- */

static double rate(const struct cell *c)
{
	return c->wall_ns > 0 ? (double)c->steps * 1e9 / (double)c->wall_ns : 0.0;
}

static int find_variant(const char *name)
{
	for (int i = 0; i < NVARIANTS; i++) {
		if (strcmp(g_variants[i].name, name) == 0) {
			return i;
		}
	}
	return -1;
}

static void print_cell(const char *variant, struct cell *c)
{
	bench_stats_t st = bench_stats(&c->period, 1.0);
	if (c->steps > 0) {
		st.mean = (double)c->wall_ns / (double)c->steps / 1000.0;
	}
	bench_print_row("conductor_rate", variant, 0, c->steps, &st, rate(c), c->cpu);
}

static void usage(FILE *f)
{
	fprintf(
	    f, "usage: conductor_rate [options]\n"
	       "  --quick            short runs (CI smoke run)\n"
	       "  --rounds R         interleaved rounds (default 3)\n"
	       "  --seconds S        timed wall time per variant and round (default 1)\n"
	       "  --warmup S         wall time from Running to the timed window (default 0.3)\n"
	       "  --variants LIST    of single,zmq-lockstep,n2-lock,n2-dmax10,n2-dmax20,\n"
	       "                     single-n4,n4-lock,n4-dmax20,relay5-dmax20,n2-lock-noauth\n"
	       "                     (default all)\n"
	       "  --relay PATH       hako-relay (default: the one of the build tree)\n"
	       "  --relay-ms L       its one-way delay (default 5)\n"
	       "  --idle-seconds S   CPU of stopped 4-node federations over S s (default 3; 0 = "
	       "skip)\n"
	       "  --idle-variant V   the federation of the second idle measurement, stopped after\n"
	       "                     the warm-up and the timed window (default n4-dmax20)\n"
	       "  -v, --verbose      progress on stderr\n");
}

int main(int argc, char **argv)
{
	long rounds = 3;
	double seconds = 1.0, warmup = 0.3, idle_seconds = 3.0;
	int quick = 0, enabled[NVARIANTS], nenabled = NVARIANTS;
	int idle_variant = find_variant("n4-dmax20");
	for (int i = 0; i < NVARIANTS; i++) {
		enabled[i] = 1;
	}
	g_relay_exe = HAKO_RELAY_EXE;
	static const struct option opts[] = {
	    {"quick", no_argument, NULL, 'q'},
	    {"rounds", required_argument, NULL, 'r'},
	    {"seconds", required_argument, NULL, 's'},
	    {"warmup", required_argument, NULL, 'w'},
	    {"variants", required_argument, NULL, 'V'},
	    {"relay", required_argument, NULL, 'R'},
	    {"relay-ms", required_argument, NULL, 'L'},
	    {"idle-seconds", required_argument, NULL, 'i'},
	    {"idle-variant", required_argument, NULL, 'I'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int o;
	while ((o = getopt_long(argc, argv, "qr:s:w:V:R:L:i:I:vh", opts, NULL)) != -1) {
		switch (o) {
		case 'q': quick = 1; break;
		case 'r': rounds = atol(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'w': warmup = atof(optarg); break;
		case 'V': {
			char list[256], *save = NULL;
			snprintf(list, sizeof(list), "%s", optarg);
			memset(enabled, 0, sizeof(enabled));
			nenabled = 0;
			for (char *tok = strtok_r(list, ",", &save); tok != NULL;
			     tok = strtok_r(NULL, ",", &save)) {
				int k = find_variant(tok);
				if (k < 0) {
					fprintf(stderr, "conductor_rate: unknown variant '%s'\n",
					        tok);
					usage(stderr);
					return 2;
				}
				nenabled += !enabled[k];
				enabled[k] = 1;
			}
			break;
		}
		case 'R': g_relay_exe = optarg; break;
		case 'L': g_relay_ms = atof(optarg); break;
		case 'i': idle_seconds = atof(optarg); break;
		case 'I':
			idle_variant = find_variant(optarg);
			if (idle_variant < 0 || !g_variants[idle_variant].conductor) {
				fprintf(stderr,
				        "conductor_rate: --idle-variant: not a federation\n");
				return 2;
			}
			break;
		case 'v': g_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (quick) {
		rounds = 1;
		seconds = 0.1;
		warmup = 0.05;
		idle_seconds = 0.3;
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || !(seconds > 0) || !(warmup >= 0) ||
	    !(idle_seconds >= 0) || !(g_relay_ms > 0) || nenabled == 0) {
		usage(stderr);
		return 2;
	}
	int relay_idx = find_variant("relay5-dmax20");
	if (enabled[relay_idx] && (g_relay_exe[0] == '\0' || access(g_relay_exe, X_OK) != 0)) {
		fprintf(stderr,
		        "conductor_rate: hako-relay not found%s%s (build the tests, or --relay "
		        "PATH): relay5-dmax20 skipped\n",
		        g_relay_exe[0] != '\0' ? " at " : "", g_relay_exe);
		enabled[relay_idx] = 0;
	}
	if (getenv("HAKO_LOG") == NULL) {
		hako_log_set_level(HAKO_LOG_ERROR); /* the nodes' joins and leaves */
	}
	for (int i = 0; i < MAX_NODES; i++) {
		snprintf(g_domain[i], sizeof(g_domain[i]), "bench-cr-%d-%d", (int)getpid(), i);
	}
	bench_exit_init("conductor_rate", cleanup, 1);
	signal(SIGPIPE, SIG_IGN);
	g_sh = bench_shared_alloc(sizeof(*g_sh));
	bench_die_detail("node", g_sh->error);

	int64_t warm_ns = (int64_t)(warmup * 1e9), window_ns = (int64_t)(seconds * 1e9);
	static struct cell cells[NVARIANTS];
	for (long rd = 0; rd < rounds; rd++) {
		if (g_verbose) {
			fprintf(stderr, "round %ld/%ld\n", rd + 1, rounds);
		}
		for (int k = 0; k < NVARIANTS; k++) {
			if (enabled[k]) {
				run_variant(&g_variants[k], warm_ns, window_ns, &cells[k], 0, NULL);
			}
		}
	}
	/* Idle: a federation stopped right after its start (its drift rings almost empty), and
	 * one stopped after a run as long as the others (rings of up to 65536 samples a peer). */
	struct idle_result idle[2];
	static struct cell idle_cell[2];
	const char *idle_what[2];
	char idle_desc[2][96];
	memset(idle, 0, sizeof(idle));
	if (idle_seconds > 0) {
		int fresh = find_variant("n4-lock");
		run_variant(&g_variants[fresh], 0, 50000000, &idle_cell[0],
		            (int64_t)(idle_seconds * 1e9), &idle[0]);
		run_variant(&g_variants[idle_variant], warm_ns, window_ns, &idle_cell[1],
		            (int64_t)(idle_seconds * 1e9), &idle[1]);
		for (int k = 0; k < 2; k++) {
			const struct cell *c = &idle_cell[k];
			uint64_t samples = 0;
			for (int p = 0; p < c->npeer[0]; p++) {
				samples += c->peer[0][p].samples;
			}
			idle_what[k] = g_variants[k == 0 ? fresh : idle_variant].name;
			snprintf(
			    idle_desc[k], sizeof(idle_desc[k]),
			    "%s stopped after %.2f s of running, %llu world steps, server drift "
			    "samples %llu",
			    idle_what[k], (double)(k == 0 ? 50000000 : warm_ns + window_ns) / 1e9,
			    (unsigned long long)c->steps, (unsigned long long)samples);
		}
	}

	/* ---- CSV ---- */
	puts(BENCH_CSV_HEADER);
	for (int k = 0; k < NVARIANTS; k++) {
		if (enabled[k]) {
			print_cell(g_variants[k].name, &cells[k]);
		}
	}
	int lock = find_variant("n2-lock");
	struct cell *lc = &cells[lock];
	if (enabled[lock]) {
		bench_stats_t st = bench_stats(&lc->grant, 1.0);
		bench_print_row("conductor_rate", "grant-n2-lock", 0, lc->grant.n, &st, 0.0,
		                (bench_cpu_t){0, 0});
	}

	const char *spin = getenv("HAKO_SPIN_USEC");
	printf("# method: nodes = forked processes, each its own domain + master + conductor node "
	       "(control on ZeroMQ tcp, times on the time link, a plain tcp socket, both on "
	       "127.0.0.1; publish immediate, heartbeat 100 ms) + one asset "
	       "stepping %d us world steps with no work; delta = %d us; %ld interleaved rounds, "
	       "each variant %.2f s timed after %.2f s of warm-up; steps/s = world steps of the "
	       "slowest node / wall time; latency columns = wall time between two grants of an "
	       "asset (all nodes pooled), grant-n2-lock = step_done -> next step_wait return; "
	       "cpu = all node processes (/proc, 10 ms resolution); single = the same assets, one "
	       "process each, in one domain with delta = Dmax, no conductor; zmq-lockstep = 2 "
	       "processes sending step k on a ZeroMQ PAIR (tcp) and waiting for the other's step "
	       "k, no domain; HAKO_SPIN_USEC=%s; "
	       "%d CPUs\n",
	       DELTA_USEC, DELTA_USEC, rounds, seconds, warmup,
	       spin != NULL ? spin : "(core default)", bench_ncpus());
	for (int k = 0; k < NVARIANTS; k++) {
		if (!enabled[k]) {
			continue;
		}
		printf("# round steps/s %s:", g_variants[k].name);
		for (int j = 0; j < cells[k].rounds; j++) {
			printf(" %.0f", cells[k].round_rate[j]);
		}
		printf("\n");
	}
	for (int k = 0; k < NVARIANTS; k++) {
		struct cell *c = &cells[k];
		if (!enabled[k] || c->steps == 0) {
			continue;
		}
		bench_stats_t g = bench_stats(&c->grant, 1.0);
		printf("# per world step %s: grant p50/p90/p99 %.1f/%.1f/%.1f us, cpu %.1f us (all "
		       "nodes), %.2f context switches (all threads of all nodes)\n",
		       g_variants[k].name, g.p50, g.p90, g.p99,
		       (c->cpu.user + c->cpu.sys) * 1e6 / (double)c->steps,
		       (double)c->ctx / (double)c->steps);
	}
	int single = find_variant("single"), single4 = find_variant("single-n4");
	for (int k = 0; k < NVARIANTS; k++) {
		const struct variant *v = &g_variants[k];
		int base = v->nodes == 2 ? single : single4;
		if (!enabled[k] || !v->conductor || v->relay || !enabled[base] ||
		    rate(&cells[base]) <= 0) {
			continue;
		}
		printf("# ratio %s/%s steps/s: %.3f\n", v->name, g_variants[base].name,
		       rate(&cells[k]) / rate(&cells[base]));
	}
	int zl = find_variant("zmq-lockstep");
	if (enabled[lock] && enabled[zl] && rate(&cells[zl]) > 0) {
		printf("# ratio n2-lock/zmq-lockstep steps/s: %.3f (the ZeroMQ lock-step floor)\n",
		       rate(&cells[lock]) / rate(&cells[zl]));
	}
	int na = find_variant("n2-lock-noauth");
	if (enabled[lock] && enabled[na] && rate(&cells[na]) > 0) {
		printf("# ratio n2-lock/n2-lock-noauth steps/s: %.3f (what CURVE costs in "
		       "lock-step)\n",
		       rate(&cells[lock]) / rate(&cells[na]));
	}
	const double relay_dmax = (double)g_variants[relay_idx].dmax_steps * DELTA_USEC;
	double rtf = 0, bound = relay_dmax / (g_relay_ms * 1000.0);
	if (enabled[relay_idx]) {
		struct cell *c = &cells[relay_idx];
		rtf = rate(c) * DELTA_USEC / 1e6;
		printf(
		    "# relay5-dmax20: real-time factor %.3f (world us per wall us), bound Dmax / L "
		    "= %.0f us / %.0f us = %.3f, ratio %.3f\n",
		    rtf, relay_dmax, g_relay_ms * 1000.0, bound, rtf / bound);
	}
	for (int k = 0; k < NVARIANTS; k++) {
		const struct variant *v = &g_variants[k];
		struct cell *c = &cells[k];
		if (!enabled[k] || !v->conductor) {
			continue;
		}
		hako_time_t dmax = (hako_time_t)v->dmax_steps * DELTA_USEC, worst = 0;
		printf(
		    "# drift %s (Dmax %lld us): conductors' own (max over rounds) p50/p95/max us:",
		    v->name, (long long)dmax);
		for (int i = 0; i < v->nodes; i++) {
			char id[16];
			node_id(i, id, sizeof(id));
			for (int p = 0; p < c->npeer[i]; p++) {
				hako_conductor_peer_stats_t *s = &c->peer[i][p];
				printf(" %s-%s %lld/%lld/%lld", id, s->node_id,
				       (long long)s->drift_p50_usec, (long long)s->drift_p95_usec,
				       (long long)s->drift_max_usec);
				worst = s->drift_max_usec > worst ? s->drift_max_usec : worst;
			}
		}
		int held = worst <= dmax && c->snap_sc <= dmax && c->snap_cc <= 2 * dmax;
		printf("; checker (%llu snapshots) max |Ts - Tc| %lld us",
		       (unsigned long long)c->snaps, (long long)c->snap_sc);
		if (v->nodes > 2) {
			printf(", max |Tci - Tcj| %lld us (bound %lld)", (long long)c->snap_cc,
			       (long long)(2 * dmax));
		}
		printf(": %s\n", held ? "held" : "EXCEEDED");
	}
	if (idle[0].nodes > 0) {
		double worst = 0;
		int worst_k = 0;
		for (int k = 0; k < 2; k++) {
			printf(
			    "# idle CPU per node process over %.1f s (getrusage / /proc stat), %s:",
			    idle[k].seconds, idle_desc[k]);
			for (int i = 0; i < idle[k].nodes; i++) {
				char id[16];
				node_id(i, id, sizeof(id));
				printf(" %s %.3f %% / %.2f %%", id, idle[k].pct_rusage[i],
				       idle[k].pct_proc[i]);
				if (idle[k].pct_rusage[i] > worst) {
					worst = idle[k].pct_rusage[i];
					worst_k = k;
				}
			}
			printf("\n");
		}
		printf("# goal idle < 1 %% of one core per node: worst %.3f %% (%s) %s\n", worst,
		       worst_k == 0 ? "fresh" : "after a run", worst < 1.0 ? "PASS" : "MISS");
	}
	if (enabled[lock]) {
		printf("# goal n2-lock >= 10000 steps/s: %.0f %s\n", rate(lc),
		       rate(lc) >= 10000 ? "PASS" : "MISS");
	}
	int d20 = find_variant("n2-dmax20");
	if (enabled[d20]) {
		printf("# goal n2-dmax20 >= 100000 steps/s: %.0f %s\n", rate(&cells[d20]),
		       rate(&cells[d20]) >= 100000 ? "PASS" : "MISS");
	}
	if (enabled[relay_idx]) {
		printf("# goal relay5-dmax20 real-time factor >= 0.8 x Dmax / L = %.2f: %.3f %s\n",
		       0.8 * bound, rtf, rtf >= 0.8 * bound ? "PASS" : "MISS");
	}
	fflush(stdout);
	for (int k = 0; k < NVARIANTS; k++) {
		bench_samples_free(&cells[k].grant);
		bench_samples_free(&cells[k].period);
	}
	for (int k = 0; k < 2; k++) {
		bench_samples_free(&idle_cell[k].grant);
		bench_samples_free(&idle_cell[k].period);
	}
	cleanup();
	bench_die_detail(NULL, NULL);
	bench_shared_free(g_sh, sizeof(*g_sh));
	return 0;
}
