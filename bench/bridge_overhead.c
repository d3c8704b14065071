/* bridge_overhead: what the bridge path shm -> bridge -> tcp -> bridge -> shm costs against a
 * direct tcp endpoint pair, measured side by side in one run, per transfer policy.
 *
 * Bridged variants (immediate, atomic, throttle, ticker): this process writes PDUs into domain
 * A's channels; bridge node1 (a child process: shm endpoint on A -> tcp client) forwards them to
 * bridge node2 (a child process: tcp server -> shm endpoint on domain B); this process reads
 * them from domain B's channels. The bridges run the library the way the hako-bridge daemon does
 * (hako_bridge_config_load, hako_endpoint_set_open_container on its endpoints with
 * HAKO_CACHE_STORE_READ, set_start, hako_bridge_create on the wall clock,
 * then tick / sleep until next_due or the tick period), one process per node as deployed.
 * direct: this process sends on a tcp client endpoint to a tcp server endpoint of its own whose
 * subscriber (in the comm's thread) hands the PDU to the waiting main thread.
 *
 * Latency (one-way, CLOCK_MONOTONIC, one machine): stop-and-wait on one key; the time from just
 * before the write / send until the main thread, woken (channel futex / futex of the direct
 * subscriber), has the PDU in hand. Throughput: a window of K keys (default 8), each key one
 * PDU in flight: PDU i goes to key i mod K once key's previous PDU has arrived. shm is state
 * sharing (a channel keeps only its latest write), so an unacknowledged writer would overwrite
 * PDUs the bridge has not read yet; the window keeps every PDU (none is lost, every one is
 * checked) while K of them are in flight. direct runs the same window over the same keys.
 *
 * Rounds interleave the variants (for each round, for each payload, every variant, each with
 * fresh bridges) and the samples of all rounds are pooled. See bench/README.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "hako/bridge.h"
#include "hako/domain.h"
#include "hako/endpoint.h"

#define BENCH "bridge_overhead"

enum { V_DIRECT, V_IMMEDIATE, V_ATOMIC, V_THROTTLE, V_TICKER, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"direct", "immediate", "atomic", "throttle",
                                                     "ticker"};

#define MAX_PAYLOADS 8
#define MAX_ROUNDS   64
#define K_MAX        32
#define COMP_SIZE    64  /* the atomic group's other member */
#define COMP_BASE    100 /* its channel ids */
#define WAIT_USEC    10000000
#define SETUP_MS     15000
#define MAX_FILES    32

/* ---- process-wide state and cleanup ---- */

static pid_t g_owner;
static char g_dir[256];
static char g_files[MAX_FILES][400];
static int g_nfiles;
static char g_dom_name[2][HAKO_NAME_MAX];
static volatile pid_t g_kids[2];
static int g_verbose;

/* Async-signal-safe: kill, waitpid, shm_unlink (hako_domain_remove), unlink, rmdir. */
static void cleanup(void)
{
	if (getpid() != g_owner) {
		return;
	}
	for (int i = 0; i < 2; i++) {
		if (g_kids[i] > 0) {
			kill(g_kids[i], SIGKILL);
			waitpid(g_kids[i], NULL, 0);
			g_kids[i] = 0;
		}
	}
	for (int i = 0; i < 2; i++) {
		if (g_dom_name[i][0] != '\0') {
			hako_domain_remove(g_dom_name[i]);
			g_dom_name[i][0] = '\0';
		}
	}
	for (int i = 0; i < g_nfiles; i++) {
		unlink(g_files[i]);
	}
	g_nfiles = 0;
	if (g_dir[0] != '\0') {
		rmdir(g_dir);
		g_dir[0] = '\0';
	}
}

static const char *file_path(const char *name)
{
	static char p[4][400];
	static int i;
	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", g_dir, name);
	return p[i];
}

static void write_file(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void write_file(const char *name, const char *fmt, ...)
{
	const char *path = file_path(name);
	int known = 0;
	for (int i = 0; i < g_nfiles && !known; i++) {
		known = strcmp(g_files[i], path) == 0;
	}
	if (!known) {
		if (g_nfiles == MAX_FILES) {
			bench_die("too many files");
		}
		snprintf(g_files[g_nfiles++], sizeof(g_files[0]), "%s", path);
	}
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		bench_die("%s: %s", path, strerror(errno));
	}
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	if (fclose(f) != 0) {
		bench_die("%s: %s", path, strerror(errno));
	}
}

static void die_err(const char *what, const hako_error_t *err)
{
	char buf[1200];
	bench_die("%s: %s", what, hako_error_format(err, buf, sizeof(buf)));
}

/* ---- the config files of one (variant, payload) ---- */

static void write_shm_endpoint(const char *name, const char *robot, int k, int with_comp,
                               int notify)
{
	char pdus[4096];
	size_t used = 0;
	for (int i = 0; i < k; i++) {
		used += (size_t)snprintf(pdus + used, sizeof(pdus) - used,
		                         "%s{\"name\": \"d%d\", \"notify_on_recv\": %s}",
		                         i > 0 ? ", " : "", i, notify ? "true" : "false");
		if (with_comp) {
			used += (size_t)snprintf(pdus + used, sizeof(pdus) - used,
			                         ", {\"name\": \"c%d\", \"notify_on_recv\": %s}", i,
			                         notify ? "true" : "false");
		}
	}
	char comm[128], ep[128];
	snprintf(comm, sizeof(comm), "%s_comm.json", name);
	snprintf(ep, sizeof(ep), "%s.json", name);
	write_file(comm,
	           "{\"protocol\": \"shm\", \"impl_type\": \"callback\", \"asset_name\": \"%s\",\n"
	           " \"io\": {\"robots\": [{\"name\": \"%s\", \"pdu\": [%s]}]}}\n",
	           name, robot, pdus);
	write_file(ep,
	           "{\"name\": \"%s\", \"cache\": \"cache.json\", \"comm\": \"%s\", "
	           "\"pdu_def_path\": \"pdudef.json\"}\n",
	           name, comm);
}

static void write_tcp_endpoint(const char *name, int server, unsigned port)
{
	char comm[128], ep[128];
	snprintf(comm, sizeof(comm), "%s_comm.json", name);
	snprintf(ep, sizeof(ep), "%s.json", name);
	write_file(comm,
	           "{\"protocol\": \"tcp\", \"name\": \"%s\", \"direction\": \"inout\", "
	           "\"role\": \"%s\", \"%s\": {\"address\": \"127.0.0.1\", \"port\": %u}, "
	           "\"options\": {\"connect_timeout_ms\": 200}}\n",
	           name, server ? "server" : "client", server ? "local" : "remote", port);
	write_file(ep,
	           "{\"name\": \"%s\", \"cache\": \"cache.json\", \"comm\": \"%s\", "
	           "\"pdu_def_path\": \"pdudef.json\"}\n",
	           name, comm);
}

static void write_pdudef(const char *robot, size_t payload, int k)
{
	char pdus[8192];
	size_t used = 0;
	for (int i = 0; i < k; i++) {
		used += (size_t)snprintf(
		    pdus + used, sizeof(pdus) - used,
		    "%s{\"type\": \"t/Data\", \"org_name\": \"d%d\", \"channel_id\": %d, "
		    "\"pdu_size\": %zu}, "
		    "{\"type\": \"t/Comp\", \"org_name\": \"c%d\", \"channel_id\": %d, "
		    "\"pdu_size\": %d}",
		    i > 0 ? ", " : "", i, i, payload, i, COMP_BASE + i, COMP_SIZE);
	}
	write_file("pdudef.json",
	           "{\"robots\": [{\"name\": \"%s\", \"shm_pdu_readers\": [%s], "
	           "\"shm_pdu_writers\": []}]}\n",
	           robot, pdus);
}

/* bridge.json + container.json (node1's tcp client file is written once node2's port is
 * known). */
static void write_bridge(int v, const char *robot, int k, uint32_t interval_ms)
{
	char policy[128], groups[8192], transfers[4096];
	size_t g = 0, t = 0;
	switch (v) {
	case V_IMMEDIATE: snprintf(policy, sizeof(policy), "{\"type\": \"immediate\"}"); break;
	case V_ATOMIC:
		snprintf(policy, sizeof(policy), "{\"type\": \"immediate\", \"atomic\": true}");
		break;
	case V_THROTTLE:
		snprintf(policy, sizeof(policy), "{\"type\": \"throttle\", \"intervalMs\": %u}",
		         interval_ms);
		break;
	default:
		snprintf(policy, sizeof(policy), "{\"type\": \"ticker\", \"intervalMs\": %u}",
		         interval_ms);
		break;
	}
	if (v == V_ATOMIC) {
		/* one frame per key: {companion, data}, in that order: data is written last */
		for (int i = 0; i < k; i++) {
			g += (size_t)snprintf(
			    groups + g, sizeof(groups) - g,
			    "%s\"f%d\": [{\"id\": \"c%d\", \"robot_name\": \"%s\", "
			    "\"pdu_name\": \"c%d\"}, {\"id\": \"d%d\", "
			    "\"robot_name\": \"%s\", \"pdu_name\": \"d%d\"}]",
			    i > 0 ? ", " : "", i, i, robot, i, i, robot, i);
			t += (size_t)snprintf(transfers + t, sizeof(transfers) - t,
			                      "%s{\"pduKeyGroupId\": \"f%d\", \"policyId\": \"p\"}",
			                      i > 0 ? ", " : "", i);
		}
	} else {
		g += (size_t)snprintf(groups + g, sizeof(groups) - g, "\"g\": [");
		for (int i = 0; i < k; i++) {
			g += (size_t)snprintf(groups + g, sizeof(groups) - g,
			                      "%s{\"id\": \"d%d\", \"robot_name\": \"%s\", "
			                      "\"pdu_name\": \"d%d\"}",
			                      i > 0 ? ", " : "", i, robot, i);
		}
		snprintf(groups + g, sizeof(groups) - g, "]");
		snprintf(transfers, sizeof(transfers),
		         "{\"pduKeyGroupId\": \"g\", \"policyId\": \"p\"}");
	}
	write_file("container.json",
	           "[{\"nodeId\": \"n1\", \"endpoints\": [\n"
	           "   {\"id\": \"n1_src\", \"config_path\": \"n1_src.json\"},\n"
	           "   {\"id\": \"n1_dst\", \"config_path\": \"n1_dst.json\"}]},\n"
	           " {\"nodeId\": \"n2\", \"endpoints\": [\n"
	           "   {\"id\": \"n2_src\", \"config_path\": \"n2_src.json\"},\n"
	           "   {\"id\": \"n2_dst\", \"config_path\": \"n2_dst.json\"}]}]\n");
	write_file(
	    "bridge.json",
	    "{\"version\": \"2.0.0\",\n"
	    " \"transferPolicies\": {\"p\": %s},\n"
	    " \"nodes\": [{\"id\": \"n1\"}, {\"id\": \"n2\"}],\n"
	    " \"endpoints_config_path\": \"container.json\",\n"
	    " \"pduKeyGroups\": {%s},\n"
	    " \"connections\": [\n"
	    "  {\"id\": \"c1\", \"nodeId\": \"n1\", \"source\": {\"endpointId\": \"n1_src\"},\n"
	    "   \"destinations\": [{\"endpointId\": \"n1_dst\"}],\n"
	    "   \"transferPdus\": [%s]},\n"
	    "  {\"id\": \"c2\", \"nodeId\": \"n2\", \"source\": {\"endpointId\": \"n2_src\"},\n"
	    "   \"destinations\": [{\"endpointId\": \"n2_dst\"}],\n"
	    "   \"transferPdus\": [%s]}]}\n",
	    policy, groups, transfers, transfers);
}

/* ---- a bridge node (child process) ---- */

struct bridge_msg {
	int status; /* 0 ok, else the error text */
	unsigned port;
	uint64_t forwarded, send_failed, dropped_policy;
	char error[400];
};

static volatile sig_atomic_t g_child_quit;

static void child_on_term(int sig)
{
	(void)sig;
	g_child_quit = 1;
}

static void child_send(int wfd, struct bridge_msg *m)
{
	if (bench_write_full(wfd, m, sizeof(*m)) != 0) {
		_exit(3);
	}
}

static void child_fail(int wfd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void child_fail(int wfd, const char *fmt, ...)
{
	struct bridge_msg m;
	memset(&m, 0, sizeof(m));
	m.status = 1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m.error, sizeof(m.error), fmt, ap);
	va_end(ap);
	child_send(wfd, &m);
	_exit(1);
}

static void child_fail_err(int wfd, const hako_error_t *err)
{
	char buf[1200];
	child_fail(wfd, "%s", hako_error_format(err, buf, sizeof(buf)));
}

/* What hako-bridge does on the wall clock: tick, then sleep until the next due time or the
 * tick period. node1 reports ready once its tcp client is connected. */
static void bridge_child(const char *node, const char *domain, hako_time_t delta, int wfd)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = child_on_term; /* no SA_RESTART: the sleep ends at once */
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGINT, SIG_IGN); /* the parent cleans up on ^C */
	signal(SIGPIPE, SIG_IGN);
	hako_error_t err;
	hako_bridge_config_t *cfg = NULL;
	hako_endpoint_set_t *eps = NULL;
	hako_domain_t *dom = NULL;
	hako_bridge_t *b = NULL;
	if (hako_bridge_config_load(file_path("bridge.json"), node, NULL, &cfg, &err) != 0 ||
	    hako_endpoint_set_open_container(cfg->endpoints, &eps, &err) != 0) {
		child_fail_err(wfd, &err);
	}
	for (size_t i = 0; i < hako_endpoint_set_count(eps); i++) {
		hako_endpoint_set_store(hako_endpoint_set_at(eps, i), HAKO_CACHE_STORE_READ);
	}
	int r = hako_domain_open(domain, &dom);
	if (r != 0) {
		child_fail(wfd, "domain %s: %s", domain, hako_strerror(r));
	}
	hako_endpoint_set_set_domain(eps, dom);
	if (hako_endpoint_set_start(eps, &err) != 0 ||
	    hako_bridge_create(cfg, eps, hako_bridge_clock_wall, NULL, &b, &err) != 0) {
		child_fail_err(wfd, &err);
	}
	struct bridge_msg m;
	memset(&m, 0, sizeof(m));
	hako_endpoint_t *srv = hako_endpoint_set_get(eps, "n2_src");
	hako_endpoint_t *cli = hako_endpoint_set_get(eps, "n1_dst");
	if (srv != NULL) {
		m.port = hako_endpoint_local_port(srv);
	}
	if (cli != NULL) {
		hako_endpoint_stats_t st;
		hako_time_t deadline = hako_now_usec() + (hako_time_t)SETUP_MS * 1000;
		for (;;) {
			hako_endpoint_get_stats(cli, &st);
			if (st.peers > 0) {
				break;
			}
			if (hako_now_usec() > deadline) {
				child_fail(wfd, "n1_dst: not connected after %d ms", SETUP_MS);
			}
			usleep(1000);
		}
	}
	child_send(wfd, &m);
	while (!g_child_quit) {
		hako_bridge_tick(b);
		hako_time_t now = hako_now_usec();
		hako_time_t wake = now + delta;
		hako_time_t due = hako_bridge_next_due(b);
		if (due >= 0 && due < wake) {
			wake = due;
		}
		if (wake > now) {
			struct timespec ts = {.tv_sec = (wake - now) / 1000000,
			                      .tv_nsec = (long)((wake - now) % 1000000) * 1000};
			nanosleep(&ts, NULL);
		}
	}
	hako_endpoint_set_stop(eps);
	hako_bridge_conn_stats_t st;
	if (hako_bridge_get_stats(b, 0, &st) == 0) {
		m.forwarded = st.forwarded;
		m.send_failed = st.send_failed;
		m.dropped_policy = st.dropped_policy;
	}
	child_send(wfd, &m);
	hako_bridge_destroy(b);
	hako_endpoint_set_close(eps);
	hako_domain_close(dom);
	hako_bridge_config_free(cfg);
	_exit(0);
}

struct kid {
	pid_t pid;
	int rfd;
	int slot;
};

static void read_msg(struct kid *k, const char *node, struct bridge_msg *m)
{
	struct pollfd p = {.fd = k->rfd, .events = POLLIN};
	int r;
	do {
		r = poll(&p, 1, SETUP_MS);
	} while (r < 0 && errno == EINTR);
	if (r <= 0 || bench_read_full(k->rfd, m, sizeof(*m)) != 0) {
		bench_die("bridge %s: no answer (%s)", node, r == 0 ? "timeout" : "it exited");
	}
	if (m->status != 0) {
		bench_die("bridge %s: %s", node, m->error);
	}
}

static void spawn_bridge(struct kid *k, int slot, const char *node, const char *domain,
                         hako_time_t delta)
{
	int fds[2];
	if (pipe(fds) != 0) {
		bench_die("pipe: %s", strerror(errno));
	}
	fflush(stdout);
	fflush(stderr);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		bench_die("fork: %s", strerror(errno));
	}
	if (pid == 0) {
		close(fds[0]);
		bench_child_init(parent);
		bridge_child(node, domain, delta, fds[1]);
	}
	close(fds[1]);
	k->pid = pid;
	k->rfd = fds[0];
	k->slot = slot;
	g_kids[slot] = pid;
}

static void stop_bridge(struct kid *k, const char *node, struct bridge_msg *m)
{
	kill(k->pid, SIGTERM);
	read_msg(k, node, m);
	int status = 0;
	int64_t deadline = bench_now_ns() + 5000000000LL;
	pid_t r;
	while ((r = waitpid(k->pid, &status, WNOHANG)) == 0 && bench_now_ns() < deadline) {
		usleep(1000);
	}
	if (r == 0) {
		kill(k->pid, SIGKILL);
		waitpid(k->pid, &status, 0);
	}
	g_kids[k->slot] = 0;
	close(k->rfd);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		bench_die("bridge %s: exit status 0x%x", node, status);
	}
}

/* CPU time of another process (/proc/PID/stat utime, stime). */
static bench_cpu_t cpu_of(pid_t pid)
{
	bench_cpu_t c = {0, 0};
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return c;
	}
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	unsigned long ut = 0, st = 0;
	/* after ")": state(3) ... utime(14) stime(15) */
	if (p != NULL &&
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2) {
		double hz = (double)sysconf(_SC_CLK_TCK);
		c.user = (double)ut / hz;
		c.sys = (double)st / hz;
	}
	return c;
}

/* ---- the direct pair's wake-up ---- */

static _Atomic uint64_t g_rx_last[K_MAX];
static _Atomic uint32_t g_rx_word;
static atomic_int g_rx_waiting;
static atomic_int g_rx_bad;
static size_t g_rx_payload;

static void on_direct_rx(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)key;
	size_t k = (size_t)(uintptr_t)user;
	uint64_t v = 0, tail = 1;
	if (len == g_rx_payload) {
		memcpy(&v, data, sizeof(v));
		memcpy(&tail, (const uint8_t *)data + len - sizeof(tail), sizeof(tail));
	}
	if (len != g_rx_payload || tail != v) {
		atomic_store(&g_rx_bad, 1);
	}
	atomic_store(&g_rx_last[k], v);
	atomic_fetch_add(&g_rx_word, 1);
	if (atomic_load(&g_rx_waiting)) {
		syscall(SYS_futex, &g_rx_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
}

/* ---- one run: a variant at a payload ---- */

struct ctx {
	int v;
	size_t payload;
	int k;
	uint8_t *buf;  /* payload bytes, sent */
	uint8_t *rbuf; /* received */
	uint8_t comp[COMP_SIZE];
	uint64_t next;
	uint64_t last_sent[K_MAX];
	/* bridged */
	hako_channel_t *a_data[K_MAX], *a_comp[K_MAX], *b_data[K_MAX], *b_comp[K_MAX];
	uint64_t b_seen[K_MAX]; /* B's sequence number at the last read */
	uint64_t b_got[K_MAX];  /* the value of that read */
	/* direct */
	hako_endpoint_t *tx, *rx;
	hako_pdu_key_t keys[K_MAX];
};

static void stamp(uint8_t *buf, size_t len, uint64_t v)
{
	memcpy(buf, &v, sizeof(v));
	memcpy(buf + len - sizeof(v), &v, sizeof(v));
}

static void send_value(struct ctx *c, int k)
{
	uint64_t v = ++c->next;
	stamp(c->buf, c->payload, v);
	int r;
	if (c->v == V_DIRECT) {
		r = hako_endpoint_send(c->tx, &c->keys[k], c->buf, c->payload);
		if (r != 0) {
			bench_die("direct send: %s", hako_strerror(r));
		}
	} else {
		if (c->v == V_ATOMIC) {
			stamp(c->comp, sizeof(c->comp), v);
			if ((r = hako_channel_write(c->a_comp[k], c->comp, sizeof(c->comp))) != 0) {
				bench_die("write: %s", hako_strerror(r));
			}
		}
		if ((r = hako_channel_write(c->a_data[k], c->buf, c->payload)) != 0) {
			bench_die("write: %s", hako_strerror(r));
		}
	}
	c->last_sent[k] = v;
}

/* Until key k's last PDU is in hand. */
static void wait_delivered(struct ctx *c, int k)
{
	uint64_t want = c->last_sent[k];
	if (want == 0) {
		return;
	}
	if (c->v == V_DIRECT) {
		while (atomic_load(&g_rx_last[k]) != want) {
			uint32_t w = atomic_load(&g_rx_word);
			if (atomic_load(&g_rx_last[k]) == want) {
				break;
			}
			atomic_store(&g_rx_waiting, 1);
			struct timespec to = {WAIT_USEC / 1000000, 0};
			long r =
			    syscall(SYS_futex, &g_rx_word, FUTEX_WAIT_PRIVATE, w, &to, NULL, 0);
			atomic_store(&g_rx_waiting, 0);
			if (r != 0 && errno == ETIMEDOUT) {
				bench_die("direct: PDU %llu of key %d not received in %d s",
				          (unsigned long long)want, k, WAIT_USEC / 1000000);
			}
		}
		if (atomic_load(&g_rx_bad)) {
			bench_die("direct: a PDU arrived damaged");
		}
		return;
	}
	hako_channel_t *ch = c->b_data[k];
	if (c->b_got[k] == want) {
		return;
	}
	for (;;) {
		if (hako_channel_seq(ch) != c->b_seen[k]) {
			size_t len = 0;
			uint64_t seq = 0, v = 0, tail = 1;
			int r = hako_channel_read(ch, c->rbuf, c->payload, &len, &seq);
			if (r != 0 || len != c->payload) {
				bench_die("read B: %s (len %zu)", hako_strerror(r), len);
			}
			c->b_seen[k] = seq;
			memcpy(&v, c->rbuf, sizeof(v));
			c->b_got[k] = v;
			memcpy(&tail, c->rbuf + len - sizeof(tail), sizeof(tail));
			if (tail != v || v > want) {
				bench_die("%s: key %d: PDU %llu arrived as %llu / %llu",
				          variant_names[c->v], k, (unsigned long long)want,
				          (unsigned long long)v, (unsigned long long)tail);
			}
			if (v == want && c->v == V_ATOMIC) {
				/* the frame's other member came with it (it is sent first) */
				uint8_t comp[COMP_SIZE];
				uint64_t cv = 0;
				r = hako_channel_read(c->b_comp[k], comp, sizeof(comp), &len, NULL);
				memcpy(&cv, comp, sizeof(cv));
				if (r != 0 || len != COMP_SIZE || cv != want) {
					bench_die(
					    "atomic: key %d: PDU %llu came with companion %llu", k,
					    (unsigned long long)want, (unsigned long long)cv);
				}
			}
			if (v == want) {
				return;
			}
		}
		int r = hako_channel_wait(ch, c->b_seen[k], 0, WAIT_USEC);
		if (r != 0) {
			bench_die(
			    "%s: key %d: PDU %llu not in domain B after %d s (%s; writes to A "
			    "%llu, "
			    "to B %llu)",
			    variant_names[c->v], k, (unsigned long long)want, WAIT_USEC / 1000000,
			    hako_strerror(r), (unsigned long long)hako_channel_seq(c->a_data[k]),
			    (unsigned long long)hako_channel_seq(ch));
		}
	}
}

struct cell {
	bench_samples_t s; /* one-way latencies, ns */
	uint64_t tp_count;
	int64_t tp_ns;
	bench_cpu_t cpu;
	double round_p50[MAX_ROUNDS];
	double round_ops[MAX_ROUNDS];
	int rounds;
	uint64_t fwd1, fwd2, failed, dropped_policy;
};

struct opts {
	long payloads[MAX_PAYLOADS];
	int npayloads;
	int rounds;
	long lat_fast, lat_timed, tp_fast, tp_timed; /* per variant and payload, all rounds */
	int k;
	uint32_t interval_ms;
	hako_time_t delta;
};

static long share(long total, int rounds)
{
	long n = (total + rounds - 1) / rounds;
	return n < 1 ? 1 : n;
}

static void phases(struct ctx *c, struct cell *cell, long n_lat, long n_tp, pid_t *kids, int nkids)
{
	/* warm-up: connections, caches, page faults */
	long warm = n_lat / 10 < 10 ? 10 : n_lat / 10;
	for (long i = 0; i < warm; i++) {
		send_value(c, 0);
		wait_delivered(c, 0);
	}
	bench_cpu_t c0 = bench_cpu_self();
	bench_cpu_t k0[2] = {{0, 0}, {0, 0}};
	for (int i = 0; i < nkids; i++) {
		k0[i] = cpu_of(kids[i]);
	}
	bench_samples_t round;
	memset(&round, 0, sizeof(round));
	for (long i = 0; i < n_lat; i++) {
		int64_t t0 = bench_now_ns();
		send_value(c, 0);
		wait_delivered(c, 0);
		uint64_t dt = (uint64_t)(bench_now_ns() - t0);
		bench_samples_push(&cell->s, dt);
		bench_samples_push(&round, dt);
	}
	int64_t t0 = bench_now_ns();
	for (long i = 0; i < n_tp; i++) {
		int k = (int)(i % c->k);
		wait_delivered(c, k);
		send_value(c, k);
	}
	for (int k = 0; k < c->k; k++) {
		wait_delivered(c, k);
	}
	int64_t dt = bench_now_ns() - t0;
	cell->tp_count += (uint64_t)n_tp;
	cell->tp_ns += dt;
	bench_cpu_t d = bench_cpu_sub(bench_cpu_self(), c0);
	for (int i = 0; i < nkids; i++) {
		bench_cpu_t kd = bench_cpu_sub(cpu_of(kids[i]), k0[i]);
		d.user += kd.user;
		d.sys += kd.sys;
	}
	cell->cpu.user += d.user;
	cell->cpu.sys += d.sys;
	if (cell->rounds < MAX_ROUNDS) {
		bench_stats_t st = bench_stats(&round, 1.0);
		cell->round_p50[cell->rounds] = st.p50;
		cell->round_ops[cell->rounds] = dt > 0 ? (double)n_tp * 1e9 / (double)dt : 0;
		cell->rounds++;
	}
	bench_samples_free(&round);
}

static void run_direct(struct ctx *c, struct cell *cell, long n_lat, long n_tp)
{
	hako_error_t err;
	write_tcp_endpoint("d_rx", 1, 0);
	if (hako_endpoint_open(file_path("d_rx.json"), &c->rx, &err) != 0) {
		die_err("direct rx", &err);
	}
	g_rx_payload = c->payload;
	atomic_store(&g_rx_bad, 0);
	for (int k = 0; k < c->k; k++) {
		atomic_store(&g_rx_last[k], 0);
		if (hako_endpoint_subscribe(c->rx, &c->keys[k], on_direct_rx, (void *)(uintptr_t)k,
		                            NULL) != 0) {
			bench_die("direct rx: subscribe");
		}
	}
	if (hako_endpoint_start(c->rx, &err) != 0) {
		die_err("direct rx", &err);
	}
	write_tcp_endpoint("d_tx", 0, hako_endpoint_local_port(c->rx));
	if (hako_endpoint_open(file_path("d_tx.json"), &c->tx, &err) != 0 ||
	    hako_endpoint_start(c->tx, &err) != 0) {
		die_err("direct tx", &err);
	}
	hako_endpoint_stats_t st1, st2;
	int64_t deadline = bench_now_ns() + (int64_t)SETUP_MS * 1000000;
	do {
		usleep(1000);
		hako_endpoint_get_stats(c->tx, &st1);
		hako_endpoint_get_stats(c->rx, &st2);
		if (bench_now_ns() > deadline) {
			bench_die("direct: not connected after %d ms", SETUP_MS);
		}
	} while (st1.peers == 0 || st2.peers == 0);
	pid_t none[1] = {0};
	phases(c, cell, n_lat, n_tp, none, 0);
	/* closed: no thread of ours runs when the bridges are forked */
	hako_endpoint_close(c->tx);
	hako_endpoint_close(c->rx);
	c->tx = c->rx = NULL;
}

static void run_bridged(struct ctx *c, struct cell *cell, const char *robot, long n_lat, long n_tp,
                        const struct opts *o)
{
	write_bridge(c->v, robot, c->k, o->interval_ms);
	struct kid n1, n2;
	struct bridge_msg m1, m2;
	spawn_bridge(&n2, 1, "n2", g_dom_name[1], o->delta);
	read_msg(&n2, "n2", &m2);
	write_tcp_endpoint("n1_dst", 0, m2.port);
	spawn_bridge(&n1, 0, "n1", g_dom_name[0], o->delta);
	read_msg(&n1, "n1", &m1);
	pid_t kids[2] = {n1.pid, n2.pid};
	for (int k = 0; k < c->k; k++) {
		c->b_seen[k] = hako_channel_seq(c->b_data[k]);
	}
	phases(c, cell, n_lat, n_tp, kids, 2);
	stop_bridge(&n1, "n1", &m1);
	stop_bridge(&n2, "n2", &m2);
	cell->fwd1 += m1.forwarded;
	cell->fwd2 += m2.forwarded;
	cell->failed += m1.send_failed + m2.send_failed;
	cell->dropped_policy += m1.dropped_policy + m2.dropped_policy;
}

/* ---- main ---- */

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: " BENCH " [options]\n\n"
	        "One-way latency (stop-and-wait) and windowed throughput of PDUs through\n"
	        "shm -> bridge -> tcp -> bridge -> shm (two bridge processes, two domains), per\n"
	        "policy, against a direct tcp endpoint pair in the same run. CSV on stdout,\n"
	        "ratios and goals on stderr.\n\n"
	        "  --quick            small counts, 1 round (the ctest smoke run)\n"
	        "  --rounds R         interleaved rounds (default 3)\n"
	        "  --payloads LIST    payload bytes, >= 16 (default 64,65536)\n"
	        "  --count-lat N      latency samples per variant and payload, all rounds\n"
	        "                     (default 10000; throttle and ticker: N/5)\n"
	        "  --count-tp N       PDUs of the throughput phase, all rounds (default 60000 at\n"
	        "                     <= 1 KiB, 12000 above; throttle and ticker: 16000 / 4000,\n"
	        "                     or 2N/5 with this option)\n"
	        "  --window K         keys in flight in the throughput phase (default 8, <= %d)\n"
	        "  --interval-ms N    throttle / ticker interval (default 1)\n"
	        "  --delta-usec N     bridge tick period (default 1000, hako-bridge's)\n"
	        "  --variants LIST    of direct,immediate,atomic,throttle,ticker (default all;\n"
	        "                     the ratios need direct)\n"
	        "  -v, --verbose      progress on stderr\n"
	        "  -h, --help\n",
	        K_MAX);
}

/* run[v] := whether LIST (comma-separated names) has variant v. -1 for an unknown name. */
static int parse_variants(const char *list, int *run)
{
	for (int v = 0; v < NVARIANTS; v++) {
		run[v] = 0;
	}
	const char *p = list;
	while (*p != '\0') {
		size_t n = strcspn(p, ",");
		int found = 0;
		for (int v = 0; v < NVARIANTS; v++) {
			if (strlen(variant_names[v]) == n && strncmp(p, variant_names[v], n) == 0) {
				run[v] = found = 1;
			}
		}
		if (!found) {
			fprintf(stderr, BENCH ": unknown variant '%.*s'\n", (int)n, p);
			return -1;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

int main(int argc, char **argv)
{
	bench_exit_init(BENCH, cleanup, 0);
	struct opts o;
	memset(&o, 0, sizeof(o));
	o.rounds = 3;
	o.k = 8;
	o.interval_ms = 1;
	o.delta = 1000;
	long lat = -1, tp = -1;
	int quick = 0;
	int run_v[NVARIANTS];
	for (int v = 0; v < NVARIANTS; v++) {
		run_v[v] = 1;
	}
	enum {
		O_QUICK = 256,
		O_ROUNDS,
		O_PAYLOADS,
		O_LAT,
		O_TP,
		O_WINDOW,
		O_INTERVAL,
		O_DELTA,
		O_VARIANTS
	};
	static const struct option longopts[] = {
	    {"quick", no_argument, NULL, O_QUICK},
	    {"rounds", required_argument, NULL, O_ROUNDS},
	    {"payloads", required_argument, NULL, O_PAYLOADS},
	    {"count-lat", required_argument, NULL, O_LAT},
	    {"count-tp", required_argument, NULL, O_TP},
	    {"window", required_argument, NULL, O_WINDOW},
	    {"interval-ms", required_argument, NULL, O_INTERVAL},
	    {"delta-usec", required_argument, NULL, O_DELTA},
	    {"variants", required_argument, NULL, O_VARIANTS},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (ch) {
		case O_QUICK: quick = 1; break;
		case O_ROUNDS: o.rounds = atoi(optarg); break;
		case O_PAYLOADS:
			o.npayloads = bench_parse_list(optarg, o.payloads, MAX_PAYLOADS);
			if (o.npayloads <= 0) {
				usage(stderr);
				return 2;
			}
			break;
		case O_LAT: lat = atol(optarg); break;
		case O_TP: tp = atol(optarg); break;
		case O_WINDOW: o.k = atoi(optarg); break;
		case O_INTERVAL: o.interval_ms = (uint32_t)atol(optarg); break;
		case O_DELTA: o.delta = atol(optarg); break;
		case O_VARIANTS:
			if (parse_variants(optarg, run_v) != 0) {
				usage(stderr);
				return 2;
			}
			break;
		case 'v': g_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (o.npayloads == 0) {
		o.payloads[0] = 64;
		o.payloads[1] = 65536;
		o.npayloads = 2;
	}
	if (quick) {
		o.rounds = 1;
	}
	int bad = o.rounds < 1 || o.rounds > MAX_ROUNDS || o.k < 1 || o.k > K_MAX ||
	          o.interval_ms < 1 || o.delta < 1 || lat == 0 || tp == 0;
	for (int i = 0; i < o.npayloads; i++) {
		bad |= o.payloads[i] < 16 || o.payloads[i] > (16L << 20);
	}
	if (bad) {
		usage(stderr);
		return 2;
	}

	g_owner = getpid();
	atexit(cleanup);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = bench_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	const char *tmp = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
	snprintf(g_dir, sizeof(g_dir), "%s/" BENCH "-XXXXXX", tmp);
	if (mkdtemp(g_dir) == NULL) {
		g_dir[0] = '\0';
		bench_die("mkdtemp: %s", strerror(errno));
	}
	write_file("cache.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n");

	/* the two domains, sized for every payload's channels */
	hako_domain_t *dom[2] = {NULL, NULL};
	uint64_t arena = 1 << 20;
	for (int i = 0; i < o.npayloads; i++) {
		arena += (uint64_t)o.k * 2 * ((uint64_t)o.payloads[i] + COMP_SIZE) + 4096u * o.k;
	}
	for (int i = 0; i < 2; i++) {
		snprintf(g_dom_name[i], sizeof(g_dom_name[i]), "bench-br%c-%d", 'a' + i,
		         (int)getpid());
		hako_domain_config_t dc;
		hako_domain_config_default(&dc);
		dc.max_assets = 4;
		dc.max_channels = (uint32_t)(2 * o.k * o.npayloads + 8);
		dc.arena_bytes = arena * 2;
		int r = hako_domain_create(g_dom_name[i], &dc, &dom[i]);
		if (r != 0) {
			g_dom_name[i][0] = '\0';
			bench_die("domain: %s", hako_strerror(r));
		}
	}

	struct cell cells[MAX_PAYLOADS][NVARIANTS];
	memset(cells, 0, sizeof(cells));
	struct ctx c;
	memset(&c, 0, sizeof(c));
	c.k = o.k;

	for (int round = 0; round < o.rounds; round++) {
		for (int pi = 0; pi < o.npayloads; pi++) {
			size_t payload = (size_t)o.payloads[pi];
			char robot[32];
			snprintf(robot, sizeof(robot), "P%zu", payload);
			/* the files and channels of this payload */
			write_pdudef(robot, payload, o.k);
			write_shm_endpoint("n1_src", robot, o.k, 1, 1);
			write_shm_endpoint("n2_dst", robot, o.k, 1, 0);
			write_tcp_endpoint("n2_src", 1, 0);
			c.payload = payload;
			free(c.buf);
			free(c.rbuf);
			c.buf = calloc(1, payload);
			c.rbuf = calloc(1, payload);
			if (c.buf == NULL || c.rbuf == NULL) {
				bench_die("out of memory");
			}
			for (size_t i = 0; i < payload; i++) {
				c.buf[i] = (uint8_t)(i * 7u);
			}
			for (int k = 0; k < o.k; k++) {
				memset(&c.keys[k], 0, sizeof(c.keys[k]));
				snprintf(c.keys[k].robot, sizeof(c.keys[k].robot), "%s", robot);
				c.keys[k].channel_id = k;
				int r = 0;
				for (int d = 0; d < 2 && r == 0; d++) {
					hako_channel_t *dc = NULL, *cc = NULL;
					r = hako_channel_create(dom[d], robot, k, payload, &dc);
					if (r == 0) {
						r = hako_channel_create(
						    dom[d], robot, COMP_BASE + k, COMP_SIZE, &cc);
					}
					if (d == 0) {
						c.a_data[k] = dc;
						c.a_comp[k] = cc;
					} else {
						c.b_data[k] = dc;
						c.b_comp[k] = cc;
					}
				}
				if (r != 0) {
					bench_die("channel: %s", hako_strerror(r));
				}
			}
			int big = payload > 1024;
			for (int v = 0; v < NVARIANTS; v++) {
				if (!run_v[v]) {
					continue;
				}
				int timed = v == V_THROTTLE || v == V_TICKER;
				long nl = lat > 0 ? (timed ? (lat + 4) / 5 : lat)
				          : quick ? (timed ? 40 : 100)
				                  : (timed ? 2000 : 10000);
				long nt = tp > 0  ? (timed ? (tp * 2 + 4) / 5 : tp)
				          : quick ? (timed ? 200 : 400)
				          : timed ? (big ? 4000 : 16000)
				                  : (big ? 12000 : 60000);
				nl = share(nl, o.rounds);
				nt = share(nt, o.rounds);
				if (g_verbose) {
					fprintf(stderr, "# round %d: %s at %zu B (%ld + %ld)\n",
					        round + 1, variant_names[v], payload, nl, nt);
				}
				c.v = v;
				memset(c.last_sent, 0, sizeof(c.last_sent));
				/* values keep growing over runs: B's channels still hold the old */
				if (v == V_DIRECT) {
					run_direct(&c, &cells[pi][v], nl, nt);
				} else {
					run_bridged(&c, &cells[pi][v], robot, nl, nt, &o);
				}
			}
		}
	}

	printf("%s\n", BENCH_CSV_HEADER);
	for (int pi = 0; pi < o.npayloads; pi++) {
		for (int v = 0; v < NVARIANTS; v++) {
			struct cell *cell = &cells[pi][v];
			if (!run_v[v]) {
				continue;
			}
			bench_stats_t st = bench_stats(&cell->s, 1.0);
			double ops = cell->tp_ns > 0
			                 ? (double)cell->tp_count * 1e9 / (double)cell->tp_ns
			                 : 0;
			bench_print_row(BENCH, variant_names[v], (size_t)o.payloads[pi], cell->s.n,
			                &st, ops, cell->cpu);
		}
	}
	printf("# method: one-way latency = stop-and-wait on one key, write/send -> the reader "
	       "has the PDU (CLOCK_MONOTONIC, one process at both ends); ops_per_s = windowed "
	       "delivery, %d keys in flight, every PDU checked; %d interleaved round(s); "
	       "throttle/ticker interval %u ms; bridge tick period %lld us\n",
	       o.k, o.rounds, o.interval_ms, (long long)o.delta);
	for (int pi = 0; pi < o.npayloads; pi++) {
		for (int v = 0; v < NVARIANTS; v++) {
			struct cell *cell = &cells[pi][v];
			if (!run_v[v]) {
				continue;
			}
			printf("# round p50 us / ops/s %s at %ld B:", variant_names[v],
			       o.payloads[pi]);
			for (int r = 0; r < cell->rounds; r++) {
				printf(" %.1f/%.0f", cell->round_p50[r], cell->round_ops[r]);
			}
			printf("\n");
			if (v != V_DIRECT) {
				printf("# bridge stats %s at %ld B: node1 forwarded=%llu node2 "
				       "forwarded=%llu send_failed=%llu dropped_policy=%llu\n",
				       variant_names[v], o.payloads[pi],
				       (unsigned long long)cell->fwd1,
				       (unsigned long long)cell->fwd2,
				       (unsigned long long)cell->failed,
				       (unsigned long long)cell->dropped_policy);
			}
		}
	}
	fflush(stdout); /* the CSV and its # lines before the ratios on stderr */
	for (int pi = 0; pi < o.npayloads; pi++) {
		struct cell *d = &cells[pi][V_DIRECT];
		bench_stats_t sd = bench_stats(&d->s, 1.0);
		double dops = d->tp_ns > 0 ? (double)d->tp_count * 1e9 / (double)d->tp_ns : 0;
		for (int v = V_IMMEDIATE; v < NVARIANTS; v++) {
			struct cell *cell = &cells[pi][v];
			if (!run_v[v] || !run_v[V_DIRECT]) {
				continue;
			}
			bench_stats_t s = bench_stats(&cell->s, 1.0);
			double ops = cell->tp_ns > 0
			                 ? (double)cell->tp_count * 1e9 / (double)cell->tp_ns
			                 : 0;
			double rl = sd.p50 > 0 ? s.p50 / sd.p50 : 0;
			double ro = dops > 0 ? ops / dops : 0;
			if (v == V_IMMEDIATE) {
				fprintf(stderr,
				        "# ratio immediate/direct p50 at %ld B: %.2f (goal <= 1.2: "
				        "%s)\n",
				        o.payloads[pi], rl, rl <= 1.2 ? "PASS" : "MISS");
				fprintf(
				    stderr,
				    "# ratio immediate/direct ops/s at %ld B: %.2f (goal >= 0.8: "
				    "%s)\n",
				    o.payloads[pi], ro, ro >= 0.8 ? "PASS" : "MISS");
			} else {
				fprintf(stderr,
				        "# ratio %s/direct at %ld B: p50 %.2f, ops/s %.2f "
				        "(no goal)\n",
				        variant_names[v], o.payloads[pi], rl, ro);
			}
		}
	}
	fflush(stdout);
	for (int pi = 0; pi < o.npayloads; pi++) {
		for (int v = 0; v < NVARIANTS; v++) {
			bench_samples_free(&cells[pi][v].s);
		}
	}
	free(c.buf);
	free(c.rbuf);
	hako_domain_close(dom[0]);
	hako_domain_close(dom[1]);
	cleanup();
	return 0;
}
