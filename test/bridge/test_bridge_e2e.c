/* End to end over two hako-bridge daemons (issue 6): domain A (this process writes) -> daemon
 * node1 (source: shm endpoint on domain A; destination: tcp client) -> daemon node2 (source: tcp
 * server; destination: shm endpoint on domain B) -> domain B (this process reads). Both daemons
 * are separate processes of the real tool (one bridge.json and one container file with both
 * nodes; each daemon gets its domain with --domain); this process is the writer on A and the
 * reader on B.
 *
 *  - immediate: 10,000 PDUs, each arrives at B exactly once, in order, with every byte intact;
 *    the daemons' exit statistics agree with what B saw;
 *  - a dead destination: node1's connection has two tcp destinations, one whose server does not
 *    run; the live one still gets every PDU, the daemon counts send failures (control socket,
 *    exit statistics) and logs the failure once; when the server comes up, the client connects
 *    and that destination receives too.
 *
 * Flow control. shm is state sharing (a channel keeps the latest write; node1's shm watcher
 * delivers the value it finds when it wakes, so several writes between two wake-ups coalesce).
 * "No loss" therefore needs end-to-end flow control: the writer writes PDU i into A's channel
 * and waits until B's channel shows PDU i before it writes i + 1 (stop-and-wait). It is the
 * simplest scheme under which every PDU must arrive, and it gives a total order to check: a
 * window of K channels would pipeline, but the bridge forwards each channel from its own
 * watcher thread, so order would only hold per channel. With stop-and-wait, B's channel
 * sequence number must go up by exactly one per PDU: a duplicate or a stray write shows as a
 * jump.
 *
 * Start-up: node2's tcp server binds port 0 (the daemon logs the port with -v); node1's tcp
 * client file is written with that port before node1 starts. Whether node1's client is
 * connected is not visible from outside, so the writer first sends probe PDUs (a marker bit in
 * the value) until one reaches B, then waits for the last probe written, and only then starts.
 *
 * argv[1]: the hako-bridge executable. */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/endpoint.h"
#include "bridge_stats.h"
#include "hako_test_util.h"

#define PDU_SIZE  128
#define N_PDUS    10000
#define N_DEAD    1000
#define N_REVIVED 100
#define PROBE     ((uint64_t)1 << 63)

static const char *tool;

struct daemon {
	pid_t pid;
	char log[400];
};

struct fx {
	char dir[256];
	char dom_a[HAKO_NAME_MAX];
	char dom_b[HAKO_NAME_MAX];
	hako_domain_t *a;
	hako_domain_t *b;
	hako_channel_t *ch_a; /* the writer's */
	hako_channel_t *ch_b; /* the reader's */
	uint64_t seen_b;      /* B's sequence number last looked at */
	uint64_t probe;       /* probes written */
	struct daemon n1, n2;
	int ctl_fd;
};

static const char *path_in(struct fx *f, const char *name)
{
	static char p[4][400];
	static int i;
	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", f->dir, name);
	return p[i];
}

static void put(struct fx *f, const char *name, const char *fmt, ...)
{
	char text[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	assert_int_equal(htu_write_file(path_in(f, name), text), 0);
}

/* A port nobody listens on now (bound to port 0, then released; the kernel hands ports out in
 * turn, so it is not handed out again at once). For the dead destination only: live servers
 * bind port 0 themselves. */
static unsigned free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	socklen_t len = sizeof(sa);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* ---- the files ---- */

static void write_shm_endpoint(struct fx *f, const char *name, int notify)
{
	char comm[64], ep[64];
	snprintf(comm, sizeof(comm), "%s_comm.json", name);
	snprintf(ep, sizeof(ep), "%s.json", name);
	put(f, comm,
	    "{\"protocol\": \"shm\", \"impl_type\": \"callback\", \"asset_name\": \"%s\",\n"
	    " \"io\": {\"robots\": [{\"name\": \"R\", \"pdu\": [{\"name\": \"data\", "
	    "\"notify_on_recv\": %s}]}]}}\n",
	    name, notify ? "true" : "false");
	put(f, ep,
	    "{\"name\": \"%s\", \"cache\": \"cache.json\", \"comm\": \"%s\", "
	    "\"pdu_def_path\": \"pdudef.json\"}\n",
	    name, comm);
}

static void write_tcp_endpoint(struct fx *f, const char *name, int server, unsigned port)
{
	char comm[64], ep[64];
	snprintf(comm, sizeof(comm), "%s_comm.json", name);
	snprintf(ep, sizeof(ep), "%s.json", name);
	put(f, comm,
	    "{\"protocol\": \"tcp\", \"name\": \"%s\", \"direction\": \"inout\", \"role\": \"%s\", "
	    "\"%s\": {\"address\": \"127.0.0.1\", \"port\": %u}, "
	    "\"options\": {\"connect_timeout_ms\": 200}}\n",
	    name, server ? "server" : "client", server ? "local" : "remote", port);
	put(f, ep,
	    "{\"name\": \"%s\", \"cache\": \"cache.json\", \"comm\": \"%s\", "
	    "\"pdu_def_path\": \"pdudef.json\"}\n",
	    name, comm);
}

/* The one connection id of both ends of the link, as Hakoniwa's conductor writes its bridge
 * files: ids are unique per node, and each daemon runs and reports only its own node's. */
#define LINK "n1-to-n2-conn"

/* Everything but node1's tcp client files (they need node2's port). with_dead: node1's
 * connection also sends to "n1_dead". */
static void write_config(struct fx *f, int with_dead)
{
	put(f, "pdudef.json",
	    "{\"robots\": [{\"name\": \"R\", \"shm_pdu_readers\": [{\"type\": \"t/Data\", "
	    "\"org_name\": \"data\", \"channel_id\": 0, \"pdu_size\": %d}], "
	    "\"shm_pdu_writers\": []}]}\n",
	    PDU_SIZE);
	put(f, "cache.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n");
	write_shm_endpoint(f, "n1_src", 1);
	write_shm_endpoint(f, "n2_dst", 0);
	write_tcp_endpoint(f, "n2_src", 1, 0); /* port 0: the daemon logs the one it got */
	put(f, "container.json",
	    "[{\"nodeId\": \"n1\", \"endpoints\": [\n"
	    "   {\"id\": \"n1_src\", \"config_path\": \"n1_src.json\"},\n"
	    "%s"
	    "   {\"id\": \"n1_dst\", \"config_path\": \"n1_dst.json\"}]},\n"
	    " {\"nodeId\": \"n2\", \"endpoints\": [\n"
	    "   {\"id\": \"n2_src\", \"config_path\": \"n2_src.json\"},\n"
	    "   {\"id\": \"n2_dst\", \"config_path\": \"n2_dst.json\"}]}]\n",
	    with_dead ? "   {\"id\": \"n1_dead\", \"config_path\": \"n1_dead.json\"},\n" : "");
	put(f, "bridge.json",
	    "{\"version\": \"2.0.0\",\n"
	    " \"transferPolicies\": {\"imm\": {\"type\": \"immediate\"}},\n"
	    " \"nodes\": [{\"id\": \"n1\"}, {\"id\": \"n2\"}],\n"
	    " \"endpoints_config_path\": \"container.json\",\n"
	    " \"wireLinks\": [{\"from\": \"n1_dst\", \"to\": \"n2_src\"}],\n"
	    " \"pduKeyGroups\": {\"g\": [{\"id\": \"R.data\", \"robot_name\": \"R\", "
	    "\"pdu_name\": \"data\"}]},\n"
	    " \"connections\": [\n"
	    "  {\"id\": \"" LINK
	    "\", \"nodeId\": \"n1\", \"source\": {\"endpointId\": \"n1_src\"},\n"
	    "   \"destinations\": [%s{\"endpointId\": \"n1_dst\"}],\n"
	    "   \"transferPdus\": [{\"pduKeyGroupId\": \"g\", \"policyId\": \"imm\"}]},\n"
	    "  {\"id\": \"" LINK
	    "\", \"nodeId\": \"n2\", \"source\": {\"endpointId\": \"n2_src\"},\n"
	    "   \"destinations\": [{\"endpointId\": \"n2_dst\"}],\n"
	    "   \"transferPdus\": [{\"pduKeyGroupId\": \"g\", \"policyId\": \"imm\"}]}]}\n",
	    with_dead ? "{\"endpointId\": \"n1_dead\"}, " : "");
}

/* ---- the daemons ---- */

static void start_daemon(struct fx *f, struct daemon *d, const char *node, const char *domain,
                         const char *control)
{
	snprintf(d->log, sizeof(d->log), "%s/%s.log", f->dir, node);
	htu_exec_t x;
	memset(&x, 0, sizeof(x));
	const char *args[] = {tool,       path_in(f, "bridge.json"),
	                      "--node",   node,
	                      "--domain", domain,
	                      "-v",       control != NULL ? "--control" : NULL,
	                      control,    NULL};
	for (int i = 0; args[i] != NULL; i++) {
		x.argv[i] = (char *)args[i];
	}
	x.log = d->log;
	d->pid = htu_fork(htu_exec_main, &x);
	assert_true(d->pid > 0);
}

/* Wait for `what` in the daemon's log; a pointer just past it. Fails if the daemon exits. */
static const char *wait_log(struct daemon *d, const char *what)
{
	const char *at = NULL;
	int ok;
	HTU_WAIT_UNTIL(ok,
	               (at = strstr(htu_slurp(d->log), what)) != NULL || htu_child_exited(d->pid),
	               HTU_TIMEOUT_USEC);
	if (!ok || at == NULL) {
		fail_msg("no '%s' in %s:\n%s", what, d->log, htu_slurp(d->log));
	}
	return at + strlen(what);
}

/* SIGTERM, exit 0, the log. */
static char *stop_daemon(struct daemon *d)
{
	assert_int_equal(kill(d->pid, SIGTERM), 0);
	int status = 0;
	assert_int_equal(htu_wait_child(d->pid, HTU_TIMEOUT_USEC, &status), 0);
	d->pid = 0;
	char *log = htu_slurp(d->log);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fail_msg("%s: no clean exit (status 0x%x):\n%s", d->log, status, log);
	}
	return log;
}

/* Start node2, learn its port, write node1's client file(s), start node1. */
static void start_bridges(struct fx *f, int dead_port, const char *n1_control)
{
	start_daemon(f, &f->n2, "n2", f->dom_b, NULL);
	const char *p = wait_log(&f->n2, "endpoint 'n2_src' bound to port ");
	unsigned port = (unsigned)strtoul(p, NULL, 10);
	assert_true(port > 0 && port < 65536);
	write_tcp_endpoint(f, "n1_dst", 0, port);
	if (dead_port > 0) {
		write_tcp_endpoint(f, "n1_dead", 0, (unsigned)dead_port);
	}
	start_daemon(f, &f->n1, "n1", f->dom_a, n1_control);
	wait_log(&f->n1, "node 'n1': 1 connection(s)");
	wait_log(&f->n2, "node 'n2': 1 connection(s)");
}

/* ---- writer and reader ---- */

/* A PDU whose bytes all derive from v. */
static void fill(uint8_t *buf, uint64_t v)
{
	memcpy(buf, &v, sizeof(v));
	for (size_t i = sizeof(v); i < PDU_SIZE; i++) {
		buf[i] = (uint8_t)(v * 131u + i * 7u);
	}
}

static void write_a(struct fx *f, uint64_t v)
{
	uint8_t buf[PDU_SIZE];
	fill(buf, v);
	assert_int_equal(hako_channel_write(f->ch_a, buf, sizeof(buf)), 0);
}

/* Wait until B's channel changes (up to timeout_usec); its value, sequence number and bytes.
 * 0, or HAKO_ETIMEDOUT. */
static int read_b(struct fx *f, hako_time_t timeout_usec, uint64_t *v, uint64_t *seq, uint8_t *buf)
{
	int r = hako_channel_wait(f->ch_b, f->seen_b, 0, timeout_usec);
	if (r != 0) {
		return r;
	}
	size_t len = 0;
	assert_int_equal(hako_channel_read(f->ch_b, buf, PDU_SIZE, &len, seq), 0);
	assert_int_equal(len, PDU_SIZE);
	memcpy(v, buf, sizeof(*v));
	return 0;
}

/* Probes until one reaches B, then wait for the last probe written: from then on the path is
 * connected and nothing of ours is in flight. */
static void probe_path(struct fx *f)
{
	uint8_t buf[PDU_SIZE];
	uint64_t v = 0, seq = 0;
	hako_time_t deadline = hako_now_usec() + HTU_TIMEOUT_USEC;
	int got = 0;
	while (!got) {
		if (hako_now_usec() > deadline) {
			fail_msg("no probe reached domain B in 10 s\nn1:\n%s",
			         htu_slurp(f->n1.log));
		}
		write_a(f, PROBE | ++f->probe);
		got = read_b(f, 20000, &v, &seq, buf) == 0;
		if (got) {
			f->seen_b = seq;
		}
	}
	while (v != (PROBE | f->probe)) {
		assert_true((v & PROBE) != 0);
		int r = read_b(f, HTU_TIMEOUT_USEC, &v, &seq, buf);
		if (r != 0) {
			fail_msg("probe %" PRIu64 " never reached B (last seen %" PRIu64 ")",
			         f->probe, v & ~PROBE);
		}
		f->seen_b = seq;
	}
}

/* PDUs first..last, one at a time (see the top comment): each must arrive exactly once, in
 * order, intact. */
static void send_and_check(struct fx *f, uint64_t first, uint64_t last)
{
	uint8_t want[PDU_SIZE], got[PDU_SIZE];
	hako_time_t t0 = hako_now_usec();
	for (uint64_t i = first; i <= last; i++) {
		write_a(f, i);
		uint64_t v = 0, seq = 0;
		int r = read_b(f, HTU_TIMEOUT_USEC, &v, &seq, got);
		if (r != 0) {
			fail_msg("PDU %" PRIu64 " did not reach domain B in 10 s", i);
		}
		if (seq != f->seen_b + 1) {
			fail_msg("PDU %" PRIu64 ": B's channel went from write %" PRIu64
			         " to %" PRIu64 " (a duplicate or a stray write)",
			         i, f->seen_b, seq);
		}
		if (v != i) {
			fail_msg("PDU %" PRIu64 ": B shows value %" PRIu64 " (order broken)", i, v);
		}
		fill(want, i);
		if (memcmp(want, got, PDU_SIZE) != 0) {
			fail_msg("PDU %" PRIu64 ": payload damaged", i);
		}
		f->seen_b = seq;
	}
	hako_time_t dt = hako_now_usec() - t0;
	uint64_t n = last - first + 1;
	print_message("%" PRIu64 " PDUs in %.3f s: %.1f us per PDU, stop-and-wait\n", n,
	              (double)dt / 1e6, (double)dt / (double)n);
}

/* Nothing more arrives at B (a late duplicate would). */
static void expect_quiet_b(struct fx *f)
{
	htu_sleep_usec(100000);
	assert_int_equal(hako_channel_seq(f->ch_b), f->seen_b);
}

/* ---- control socket ---- */

static void ctl_connect(struct fx *f, const char *path)
{
	int ok = 0;
	hako_time_t deadline = hako_now_usec() + HTU_TIMEOUT_USEC;
	while (!ok && hako_now_usec() < deadline) {
		f->ctl_fd = socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un sa;
		memset(&sa, 0, sizeof(sa));
		sa.sun_family = AF_UNIX;
		assert_true(strlen(path) < sizeof(sa.sun_path));
		memcpy(sa.sun_path, path, strlen(path) + 1);
		ok = connect(f->ctl_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (!ok) {
			close(f->ctl_fd);
			f->ctl_fd = -1;
			htu_sleep_usec(10000);
		}
	}
	assert_true(ok);
}

/* "stats": the answer up to its "ok" line. */
static const char *ctl_stats(struct fx *f)
{
	static char ans[4096];
	size_t used = 0;
	assert_int_equal(send(f->ctl_fd, "stats\n", 6, MSG_NOSIGNAL), 6);
	for (;;) {
		assert_true(used < sizeof(ans) - 1);
		ssize_t n = recv(f->ctl_fd, ans + used, sizeof(ans) - 1 - used, 0);
		assert_true(n > 0);
		used += (size_t)n;
		ans[used] = '\0';
		if (used >= 3 && strcmp(ans + used - 3, "ok\n") == 0) {
			return ans;
		}
	}
}

/* ---- the tests ---- */

static void test_immediate_10000(void **state)
{
	struct fx *f = *state;
	write_config(f, 0);
	start_bridges(f, 0, NULL);
	probe_path(f);
	uint64_t base = f->seen_b;
	send_and_check(f, 1, N_PDUS);
	expect_quiet_b(f);
	assert_int_equal(f->seen_b - base, N_PDUS);

	char *log2 = stop_daemon(&f->n2);
	uint64_t fwd2 = bst_stat_of(log2, LINK, "forwarded");
	assert_int_equal(bst_stat_of(log2, LINK, "send_failed"), 0);
	assert_int_equal(bst_stat_of(log2, LINK, "bytes"), fwd2 * PDU_SIZE);
	char *log1 = stop_daemon(&f->n1);
	uint64_t fwd1 = bst_stat_of(log1, LINK, "forwarded");
	/* every write node2 made is on B's channel; node1 forwarded exactly what node2 got */
	assert_int_equal(fwd2, f->seen_b);
	assert_int_equal(fwd1, fwd2);
	assert_int_equal(bst_stat_of(log1, LINK, "dropped_policy"), 0);
	/* each daemon reported one connection of that id: its own */
	assert_int_equal(bst_lines_of(log1, LINK), 1);
	assert_int_equal(bst_lines_of(log2, LINK), 1);
}

/* The revived destination's server: counts what it gets. */
static atomic_int revived_calls;
static _Atomic uint64_t revived_last;

static void on_revived(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)user;
	(void)key;
	uint64_t v = 0;
	if (len == PDU_SIZE) {
		memcpy(&v, data, sizeof(v));
	}
	atomic_store(&revived_last, v);
	atomic_fetch_add(&revived_calls, 1);
}

static void test_dead_destination(void **state)
{
	struct fx *f = *state;
	unsigned dead_port = free_port();
	write_config(f, 1);
	char sock[400]; /* path_in's buffers are reused */
	snprintf(sock, sizeof(sock), "%s", path_in(f, "n1.sock"));
	start_bridges(f, (int)dead_port, sock);
	ctl_connect(f, sock);
	probe_path(f);
	uint64_t base = f->seen_b;
	send_and_check(f, 1, N_DEAD);
	expect_quiet_b(f);
	assert_int_equal(f->seen_b - base, N_DEAD);

	/* the dead one failed every send (the live one too, while the probes were first) */
	const char *st = ctl_stats(f);
	uint64_t failed = bst_stat_of(st, LINK, "send_failed");
	uint64_t fwd = bst_stat_of(st, LINK, "forwarded");
	if (failed < N_DEAD) {
		fail_msg("send_failed %" PRIu64 " < %d:\n%s", failed, N_DEAD, st);
	}
	assert_int_equal(fwd, f->seen_b);
	/* logged once per failure streak, not once per PDU */
	const char *log = htu_slurp(f->n1.log);
	const char *warn = "destination 'n1_dead': R/0 not sent";
	const char *w = strstr(log, warn);
	assert_non_null(w);
	assert_null(strstr(w + 1, warn));

	/* the server comes up: the client connects (back-off <= 1 s) and gets PDUs from then on */
	hako_endpoint_t *srv = NULL;
	hako_error_t err;
	write_tcp_endpoint(f, "revived", 1, dead_port);
	assert_int_equal(hako_endpoint_open(path_in(f, "revived.json"), &srv, &err), 0);
	assert_int_equal(hako_endpoint_subscribe_by_name(srv, "R", "data", on_revived, NULL, NULL),
	                 0);
	assert_int_equal(hako_endpoint_start(srv, &err), 0);
	hako_endpoint_stats_t es;
	int ok;
	HTU_WAIT_UNTIL(ok, (hako_endpoint_get_stats(srv, &es), es.peers > 0), HTU_TIMEOUT_USEC);
	assert_true(ok);
	send_and_check(f, N_DEAD + 1, N_DEAD + N_REVIVED);
	HTU_WAIT_UNTIL(ok, atomic_load(&revived_last) == N_DEAD + N_REVIVED, HTU_TIMEOUT_USEC);
	assert_true(ok);
	/* it may have missed the first ones while the accept was on its way; no more */
	assert_true(atomic_load(&revived_calls) <= N_REVIVED);
	uint64_t failed_after = bst_stat_of(ctl_stats(f), LINK, "send_failed");
	close(f->ctl_fd);
	f->ctl_fd = -1;
	log = stop_daemon(&f->n1);
	assert_non_null(strstr(log, "destination 'n1_dead' accepts PDUs again"));
	assert_int_equal(bst_stat_of(log, LINK, "send_failed"), failed_after);
	assert_true(failed_after - failed <= N_REVIVED);
	stop_daemon(&f->n2);
	hako_endpoint_close(srv);
}

/* ---- fixture ---- */

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	*state = f;
	f->ctl_fd = -1;
	assert_non_null(htu_tmpdir(f->dir, sizeof(f->dir)));
	htu_domain_name("bre2e-a", f->dom_a, sizeof(f->dom_a));
	htu_domain_name("bre2e-b", f->dom_b, sizeof(f->dom_b));
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 8;
	cfg.arena_bytes = 1 << 20;
	assert_int_equal(hako_domain_create(f->dom_a, &cfg, &f->a), 0);
	assert_int_equal(hako_domain_create(f->dom_b, &cfg, &f->b), 0);
	/* the channels exist before the daemons: the size is the pdudef's */
	assert_int_equal(hako_channel_create(f->a, "R", 0, PDU_SIZE, &f->ch_a), 0);
	assert_int_equal(hako_channel_create(f->b, "R", 0, PDU_SIZE, &f->ch_b), 0);
	f->seen_b = hako_channel_seq(f->ch_b);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->ctl_fd >= 0) {
		close(f->ctl_fd);
	}
	htu_kill_children(); /* the daemons, when a test failed before stopping them */
	hako_domain_close(f->a);
	hako_domain_close(f->b);
	htu_remove_domain(f->dom_a);
	htu_remove_domain(f->dom_b);
	htu_remove_tmpdirs();
	free(f);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH_TO_HAKO_BRIDGE\n", argv[0]);
		return 2;
	}
	tool = argv[1];
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_immediate_10000, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dead_destination, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
