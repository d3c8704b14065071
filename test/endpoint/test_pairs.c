/* Endpoints between processes: each test starts ep_peer processes (ep_peer.c) on endpoint files
 * it writes into a temporary folder, and checks what they say and how they end. Servers (and
 * udp endpoints) bind 127.0.0.1 port 0 and print the port; the clients' files are written after.
 * The cases that check a server's statistics (hostile, overflow, stop_drain) open both ends in
 * this process the same way (hako_endpoint_local_port), with raw sockets for hostile peers.
 *
 *   test_endpoint_pairs EP_PEER [TEST]   (TEST: one of the names below; default: all)
 *
 * Every child is tracked by hako_test_util: killed and reaped, temporary folders and domains
 * removed, also when an assertion fails. Waits are generous; nothing asserts on timing.
 */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako/endpoint.h"
#include "hako/frame.h"
#include "ep_test_util.h"
#include "hako_test_util.h"

#define WAIT_USEC    60000000 /* generous: never a timing assertion */
#define PEER_OUT_MAX (4u << 20)

static const char *ep_peer_path;

/* ---- ep_peer processes ---- */

typedef struct peer {
	pid_t pid;
	int out_fd; /* its stdout */
	char *buf;  /* all it printed (PEER_OUT_MAX at most) */
	size_t used;
	char err_path[600]; /* its stderr */
	char name[64];
} peer_t;

/* What the peers of the running test hold (they live on its stack), released at teardown. */
#define MAX_PEERS 16
static struct {
	int fd;
	char *buf;
	peer_t *peer; /* only looked at while the test runs */
} held[MAX_PEERS];
static int nheld;

static void peers_release(void)
{
	for (int i = 0; i < nheld; i++) {
		close(held[i].fd);
		free(held[i].buf);
	}
	nheld = 0;
}

struct exec_args {
	int out_fd;
	int err_fd;
	char **argv;
};

static void exec_child(void *arg)
{
	struct exec_args *a = arg;
	dup2(a->out_fd, 1);
	dup2(a->err_fd, 2);
	execv(a->argv[0], a->argv);
	fprintf(stderr, "exec %s: %s\n", a->argv[0], strerror(errno));
	_exit(127);
}

/* Start `ep_peer config args...` (NULL-terminated). */
static void peer_start(peer_t *p, const char *dir, const char *name, const char *config, ...)
{
	char *argv[40];
	int n = 0;
	argv[n++] = (char *)ep_peer_path;
	argv[n++] = (char *)config;
	va_list ap;
	va_start(ap, config);
	const char *s;
	while ((s = va_arg(ap, const char *)) != NULL && n < 39) {
		argv[n++] = (char *)s;
	}
	va_end(ap);
	argv[n] = NULL;

	memset(p, 0, sizeof(*p));
	p->buf = calloc(1, PEER_OUT_MAX);
	assert_non_null(p->buf);
	assert_true(nheld < MAX_PEERS);
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->err_path, sizeof(p->err_path), "%s/%s.stderr", dir, name);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	int err_fd = open(p->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	assert_true(err_fd >= 0);
	struct exec_args a = {fds[1], err_fd, argv};
	p->pid = htu_fork(exec_child, &a);
	assert_true(p->pid > 0);
	close(fds[1]);
	close(err_fd);
	p->out_fd = fds[0];
	fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
	held[nheld].peer = p;
	held[nheld].fd = p->out_fd;
	held[nheld++].buf = p->buf;
}

static void peer_dump(const peer_t *p)
{
	fprintf(stderr, "---- %s stdout:\n%.*s", p->name, (int)p->used, p->buf);
	FILE *f = fopen(p->err_path, "r");
	if (f != NULL) {
		char line[1024];
		fprintf(stderr, "---- %s stderr:\n", p->name);
		while (fgets(line, sizeof(line), f) != NULL) {
			fputs(line, stderr);
		}
		fclose(f);
	}
}

/* Read what the peer printed: 1 read some, 0 at EOF, -1 nothing yet (or the buffer is full). */
static int peer_read(peer_t *p, int wait_ms)
{
	struct pollfd pfd = {p->out_fd, POLLIN, 0};
	if (p->out_fd < 0 || poll(&pfd, 1, wait_ms) <= 0 || p->used + 1 >= PEER_OUT_MAX) {
		return -1;
	}
	ssize_t n = read(p->out_fd, p->buf + p->used, PEER_OUT_MAX - 1 - p->used);
	if (n > 0) {
		p->used += (size_t)n;
		p->buf[p->used] = '\0';
	}
	return n > 0 ? 1 : n == 0 ? 0 : -1;
}

/* Wait for a line starting with prefix, after offset *from (updated past it). The line, or
 * fails the test. */
static const char *peer_expect(peer_t *p, const char *prefix, size_t *from)
{
	static char line[256];
	size_t start = from != NULL ? *from : 0;
	hako_time_t deadline = hako_now_usec() + WAIT_USEC;
	int eof = 0;
	for (;;) {
		p->buf[p->used] = '\0';
		for (char *l = p->buf + start; l < p->buf + p->used;) {
			char *nl = strchr(l, '\n');
			if (nl == NULL) {
				break;
			}
			if (strncmp(l, prefix, strlen(prefix)) == 0) {
				snprintf(line, sizeof(line), "%.*s", (int)(nl - l), l);
				if (from != NULL) {
					*from = (size_t)(nl + 1 - p->buf);
				}
				return line;
			}
			l = nl + 1;
		}
		if (eof || hako_now_usec() >= deadline) {
			fprintf(stderr, "%s: no line '%s...'\n", p->name, prefix);
			peer_dump(p);
			fail();
		}
		eof = peer_read(p, 100) == 0; /* after EOF the lines are scanned once more */
	}
}

static uint16_t peer_port(peer_t *p)
{
	unsigned port = 0;
	assert_int_equal(sscanf(peer_expect(p, "port ", NULL), "port %u", &port), 1);
	assert_true(port > 0 && port < 65536);
	return (uint16_t)port;
}

/* The peer exits with 0 within the wait. */
static void peer_join_ok(peer_t *p)
{
	int status = 0;
	int r = htu_wait_child(p->pid, WAIT_USEC, &status);
	while (peer_read(p, 0) > 0 && p->used + 1 < PEER_OUT_MAX) {
	}
	if (r != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s: %s (status %d)\n", p->name,
		        r != 0 ? "did not exit in time" : "failed", status);
		for (int i = 0; i < nheld; i++) {
			while (peer_read(held[i].peer, 0) > 0) {
			}
			peer_dump(held[i].peer);
		}
		if (r != 0) {
			htu_kill_child(p->pid);
		}
		fail();
	}
}

/* SIGTERM, then as peer_join_ok. */
static void peer_stop_ok(peer_t *p)
{
	kill(p->pid, SIGTERM);
	peer_join_ok(p);
}

static void peer_kill(peer_t *p)
{
	htu_kill_child(p->pid);
}

/* The text of path from byte `from` on contains needle. */
static int file_contains(const char *path, long from, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return 0;
	}
	char line[2048];
	int found = 0;
	fseek(f, from, SEEK_SET);
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		found = strstr(line, needle) != NULL;
	}
	fclose(f);
	return found;
}

static long file_size(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return 0;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fclose(f);
	return n;
}

/* ---- config files ---- */

static char tmp[512];

static void write_file(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void write_file(const char *name, const char *fmt, ...)
{
	char path[700], text[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	assert_int_equal(htu_write_file(path, text), 0);
}

/* <tmp>/<name>.json naming <name>.comm.json (comm_fmt, printf-style) and the cache file cache
 * (in tmp). */
static const char *vendpoint(const char *name, const char *cache, const char *comm_fmt, va_list ap)
{
	static char paths[8][700];
	static int next;
	char comm[4096], fname[300];
	vsnprintf(comm, sizeof(comm), comm_fmt, ap);
	snprintf(fname, sizeof(fname), "%s.comm.json", name);
	write_file(fname, "%s", comm);
	snprintf(fname, sizeof(fname), "%s.json", name);
	write_file(fname,
	           "{\"name\": \"%s\", \"cache\": \"%s\", \"comm\": \"%s.comm.json\", "
	           "\"pdu_def_path\": %s}",
	           name, cache, name, strstr(comm, "\"shm\"") != NULL ? "\"pdudef.json\"" : "null");
	char *p = paths[next++ % 8];
	snprintf(p, 700, "%s/%s.json", tmp, name);
	return p;
}

/* The same with the latest cache (cache.json). */
static const char *endpoint(const char *name, const char *comm_fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *endpoint(const char *name, const char *comm_fmt, ...)
{
	va_list ap;
	va_start(ap, comm_fmt);
	const char *p = vendpoint(name, "cache.json", comm_fmt, ap);
	va_end(ap);
	return p;
}

static const char *endpoint_cached(const char *name, const char *cache, const char *comm_fmt, ...)
    __attribute__((format(printf, 3, 4)));
static const char *endpoint_cached(const char *name, const char *cache, const char *comm_fmt, ...)
{
	va_list ap;
	va_start(ap, comm_fmt);
	const char *p = vendpoint(name, cache, comm_fmt, ap);
	va_end(ap);
	return p;
}

enum { TCP, WS };

typedef struct stream_comm stream_comm_t;
static const stream_comm_t *sc; /* the one main() picked */
static int sc_mux(void);

/* A tcp or websocket endpoint: a server on 127.0.0.1 port (0: any free one, the server prints
 * which: peer_port) or a client of that port, with the cache file cache and more comm options
 * (more: "" or ", \"key\": value..."). A tcp server of the mux's runs is a mux file as
 * Hakoniwa writes it: expected_clients and no role. */
static const char *stream_endpoint(int proto, int server, const char *name, const char *version,
                                   unsigned port, const char *cache, const char *more)
{
	char addr[200];
	if (server) {
		snprintf(addr, sizeof(addr),
		         "\"local\": {\"address\": \"127.0.0.1\", \"port\": %u}", port);
	} else if (proto == WS) {
		snprintf(addr, sizeof(addr),
		         "\"remote\": {\"host\": \"127.0.0.1\", \"port\": %u, \"path\": \"/\"}",
		         port);
	} else {
		snprintf(addr, sizeof(addr),
		         "\"remote\": {\"address\": \"127.0.0.1\", \"port\": %u}", port);
	}
	/* tcp: a generous write timeout, a deep queue, a quick first reconnect; websocket: its
	 * defaults but the queue. */
	const char *opts = proto == WS ? "\"send_queue_depth\": 4096"
	                               : "\"write_timeout_ms\": 10000, \"send_queue_depth\": 4096, "
	                                 "\"connect_timeout_ms\": 1000";
	char role[64];
	snprintf(role, sizeof(role), "\"role\": \"%s\"", server ? "server" : "client");
	if (server && proto == TCP && sc_mux()) {
		snprintf(role, sizeof(role), "\"expected_clients\": 3");
	}
	return endpoint_cached(name, cache,
	                       "{\"protocol\": \"%s\", \"name\": \"%s\", %s, "
	                       "\"comm_raw_version\": \"%s\", %s, \"options\": {%s%s}}",
	                       proto == WS ? "websocket" : "tcp", name, role, version, addr, opts,
	                       more);
}

static const char *tcp_server(const char *name, const char *version, unsigned port)
{
	return stream_endpoint(TCP, 1, name, version, port, "cache.json", "");
}

static const char *tcp_client(const char *name, const char *version, unsigned port)
{
	return stream_endpoint(TCP, 0, name, version, port, "cache.json", "");
}

static const char *ws_server(const char *name, const char *version, unsigned port)
{
	return stream_endpoint(WS, 1, name, version, port, "cache.json", "");
}

static const char *ws_client(const char *name, const char *version, unsigned port)
{
	return stream_endpoint(WS, 0, name, version, port, "cache.json", "");
}

/* ---- the conformance suite of the stream comms ----
 *
 * What every connection-oriented comm promises, written once and run against each (tcp and
 * websocket, v1 and v2 frames): both ways at once with the last PDU out before close (pair),
 * one server and three clients (fanout), a client that outlives a killed server and receives
 * from its successor on the same port (reconnect), 10,000 PDUs with none lost and order kept
 * (burst); and, counted in the statistics, hostile raw peers dropped while a good client is
 * served on (hostile), a queue cache that overflows (overflow), PDUs queued when the sender is
 * stopped (stop_drain). udp and shm have their own tests: neither has connections, udp may drop,
 * shm keeps only the latest write. The TCP mux (a tcp server file with expected_clients) is
 * run as a comm of its own: its clients are plain tcp clients, as Hakoniwa's are. */
struct stream_comm {
	const char *name; /* the ctest names: endpoint.pairs.<name>_<scenario> */
	const char *version;
	const char *(*server)(const char *name, const char *version, unsigned port);
	const char *(*client)(const char *name, const char *version, unsigned port);
	int proto; /* TCP, WS */
	hako_frame_version_t ver;
	int mux; /* tcp servers are TCP mux files */
};

static const stream_comm_t stream_comms[] = {
    {"tcp_v2", "v2", tcp_server, tcp_client, TCP, HAKO_FRAME_V2, 0},
    {"tcp_v1", "v1", tcp_server, tcp_client, TCP, HAKO_FRAME_V1, 0},
    {"websocket_v2", "v2", ws_server, ws_client, WS, HAKO_FRAME_V2, 0},
    {"websocket_v1", "v1", ws_server, ws_client, WS, HAKO_FRAME_V1, 0},
    {"tcp_mux_v2", "v2", tcp_server, tcp_client, TCP, HAKO_FRAME_V2, 1},
    {"tcp_mux_v1", "v1", tcp_server, tcp_client, TCP, HAKO_FRAME_V1, 1},
};

static int sc_mux(void)
{
	return sc != NULL && sc->mux;
}

/* local_port 0: any free one (ep_peer prints which); remote_port 0: no remote (replies go to
 * the last sender). */
static const char *udp_endpoint(const char *name, unsigned local_port, unsigned remote_port)
{
	char remote[200] = "";
	if (remote_port != 0) {
		snprintf(remote, sizeof(remote),
		         ", \"remote\": {\"address\": \"127.0.0.1\", \"port\": %u}", remote_port);
	}
	return endpoint(name,
	                "{\"protocol\": \"udp\", \"name\": \"%s\", \"direction\": \"inout\", "
	                "\"local\": {\"address\": \"127.0.0.1\", \"port\": %u}%s, \"options\": "
	                "{\"buffer_size\": 65536}}",
	                name, local_port, remote);
}

/* ---- endpoints and raw sockets in this process ----
 *
 * The cases that count what a server saw (hostile, overflow, stop_drain) open both ends here and
 * read their statistics; raw sockets play the hostile peers. Teardown closes whatever a failed
 * test left open. */

#define MAX_RAW 8

static int raw_fds[MAX_RAW];

/* Open and start the endpoint of the file at path (closed at teardown: ept_close_all). */
static hako_endpoint_t *ep_start(const char *path)
{
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	hako_error_clear(&err);
	int r = hako_endpoint_open(path, &ep, &err);
	if (r != 0) {
		fail_msg("open %s: %s: %s", path, hako_strerror(r), err.message);
	}
	ept_track(ep);
	r = hako_endpoint_start(ep, &err);
	if (r != 0) {
		fail_msg("start %s: %s: %s", path, hako_strerror(r), err.message);
	}
	return ep;
}

static int raw_track(int fd)
{
	for (int i = 0; i < MAX_RAW; i++) {
		if (raw_fds[i] < 0) {
			raw_fds[i] = fd;
			return fd;
		}
	}
	close(fd);
	fail_msg("more than %d raw sockets", MAX_RAW);
	return -1;
}

static void raw_close(int fd)
{
	for (int i = 0; i < MAX_RAW; i++) {
		if (raw_fds[i] == fd) {
			raw_fds[i] = -1;
		}
	}
	close(fd);
}

static void raws_close_all(void)
{
	for (int i = 0; i < MAX_RAW; i++) {
		if (raw_fds[i] >= 0) {
			close(raw_fds[i]);
		}
		raw_fds[i] = -1;
	}
}

/* Both ends connected: a client's PDU sent before the server took it would be dropped. */
static void wait_connected(const hako_endpoint_t *srv, const hako_endpoint_t *cli)
{
	EPT_WAIT_UNTIL(ept_stats(srv).peers == 1 && ept_stats(cli).peers == 1);
	assert_int_equal(ept_stats(srv).peers, 1);
	assert_int_equal(ept_stats(cli).peers, 1);
}

/* A PDU body: its sequence number, then bytes that depend on it. */
static void fill(uint8_t *b, size_t n, uint32_t seq)
{
	for (size_t i = 0; i < n; i++) {
		b[i] = (uint8_t)(seq * 131u + i * 7u + 1u);
	}
	if (n >= 4) {
		memcpy(b, &seq, 4);
	}
}

static int body_ok(const uint8_t *b, size_t n, uint32_t seq)
{
	uint8_t want[256];
	for (size_t off = 0; off < n; off += sizeof(want)) {
		size_t k = n - off < sizeof(want) ? n - off : sizeof(want);
		for (size_t i = 0; i < k; i++) {
			want[i] = (uint8_t)(seq * 131u + (off + i) * 7u + 1u);
		}
		if (off == 0 && n >= 4) {
			memcpy(want, &seq, 4);
		}
		if (memcmp(b + off, want, k) != 0) {
			return 0;
		}
	}
	return 1;
}

static hako_pdu_key_t key(const char *robot, int32_t ch)
{
	hako_pdu_key_t k;
	memset(&k, 0, sizeof(k));
	snprintf(k.robot, sizeof(k.robot), "%s", robot);
	k.channel_id = ch;
	return k;
}

/* The next PDU of k on ep (waited for) is n bytes of fill(seq). */
static void recv_expect(hako_endpoint_t *ep, const hako_pdu_key_t *k, size_t n, uint32_t seq)
{
	static uint8_t got[256u << 10];
	size_t len = 0;
	int r;
	hako_time_t deadline = hako_now_usec() + WAIT_USEC;
	while ((r = hako_endpoint_recv(ep, k, got, sizeof(got), &len)) == HAKO_EAGAIN &&
	       hako_now_usec() < deadline) {
		htu_sleep_usec(1000);
	}
	assert_int_equal(r, 0);
	assert_int_equal(len, n);
	if (!body_ok(got, len, seq)) {
		uint32_t s = 0;
		memcpy(&s, got, len >= 4 ? 4 : 0);
		fail_msg("%s/%d: got PDU %u, want %u (or its bytes differ)", k->robot,
		         (int)k->channel_id, (unsigned)s, (unsigned)seq);
	}
}

/* ---- fixtures ---- */

static int setup(void **state)
{
	(void)state;
	htu_init();
	htu_tmpdir(tmp, sizeof(tmp));
	for (int i = 0; i < MAX_RAW; i++) {
		raw_fds[i] = -1;
	}
	/* Written once: a running peer may be reading it when the next endpoint is written. */
	write_file("cache.json", "{\"type\": \"buffer\", \"name\": \"latest\", "
	                         "\"store\": {\"mode\": \"latest\"}}");
	return 0;
}

static void gates_release(void);

static int teardown(void **state)
{
	(void)state;
	gates_release();
	ept_close_all(NULL);
	raws_close_all();
	htu_kill_children();
	peers_release();
	unsetenv("HAKO_DOMAIN");
	htu_remove_all_domains();
	htu_remove_tmpdirs();
	return 0;
}

/* ---- pairs ---- */

/* Server and client send to each other at once; each checks what it got. Each exits as soon as
 * it has received everything and its own PDUs were written: stop/close must get the last PDU
 * out (queued or half-written) before closing, or the other side comes up one short. */
static void test_pair(void **state)
{
	(void)state;
	peer_t s, c;
	peer_start(&s, tmp, "server", sc->server("server", sc->version, 0), "--recv", "300", "R",
	           "2", "send", "300", "R", "1", "70000", NULL);
	unsigned port = peer_port(&s);
	peer_start(&c, tmp, "client", sc->client("client", sc->version, port), "--recv", "300", "R",
	           "1", "send", "300", "R", "2", "100", NULL);
	peer_join_ok(&c);
	peer_join_ok(&s);
	assert_non_null(strstr(s.buf, "recv ok 300"));
	assert_non_null(strstr(c.buf, "recv ok 300"));
}

/* udp: an echo process and a pinging one (each round trip crosses both ways). Both bind port
 * 0; the ping sends to its remote (the echo's port), the echo replies to the last sender. */
static void test_udp_v2(void **state)
{
	(void)state;
	peer_t e, p;
	peer_start(&e, tmp, "echo", udp_endpoint("echo", 0, 0), "echo", "100", "R", "1", NULL);
	unsigned eport = peer_port(&e);
	peer_expect(&e, "ready", NULL);
	peer_start(&p, tmp, "ping", udp_endpoint("ping", 0, eport), "ping", "100", "R", "1", "1000",
	           "R", "1", NULL);
	peer_join_ok(&p);
	peer_join_ok(&e);
	assert_non_null(strstr(p.buf, "ping ok 100"));
	assert_non_null(strstr(e.buf, "echoed 100"));
}

/* shm: two processes on one private domain; echo R/0 -> R/1, pinged over R/0. */
static void test_shm(void **state)
{
	(void)state;
	char dom_name[64];
	hako_domain_t *dom = NULL;
	hako_domain_config_t cfg;
	htu_domain_name("eppairs", dom_name, sizeof(dom_name));
	hako_domain_config_default(&cfg);
	assert_int_equal(hako_domain_create(dom_name, &cfg, &dom), 0);
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(dom, "R", 0, 1024, &ch), 0);
	assert_int_equal(hako_channel_create(dom, "R", 1, 1024, &ch), 0);
	setenv("HAKO_DOMAIN", dom_name, 1);
	write_file("pdudef.json",
	           "{\"robots\": [{\"name\": \"R\", \"shm_pdu_readers\": [], \"shm_pdu_writers\": "
	           "[{\"type\": \"std_msgs/UInt8MultiArray\", \"org_name\": \"ping\", "
	           "\"channel_id\": 0, \"pdu_size\": 1024}, {\"type\": "
	           "\"std_msgs/UInt8MultiArray\", \"org_name\": \"pong\", \"channel_id\": 1, "
	           "\"pdu_size\": 1024}]}]}");
	const char *shm_fmt =
	    "{\"protocol\": \"shm\", \"name\": \"shm\", \"impl_type\": \"%s\", "
	    "\"asset_name\": \"%s\", \"io\": {\"robots\": [{\"name\": \"R\", "
	    "\"pdu\": [{\"name\": \"ping\", \"notify_on_recv\": true}, {\"name\": "
	    "\"pong\", \"notify_on_recv\": true}]}]}}";
	peer_t e, p;
	peer_start(&e, tmp, "echo", endpoint("echo", shm_fmt, "callback", "EchoAsset"), "--to", "R",
	           "1", "echo", "50", "R", "0", NULL);
	peer_expect(&e, "ready", NULL);
	peer_start(&p, tmp, "ping", endpoint("ping", shm_fmt, "poll", "PingAsset"), "ping", "50",
	           "R", "0", "512", "R", "1", NULL);
	peer_join_ok(&p);
	peer_join_ok(&e);
	unsetenv("HAKO_DOMAIN");
	hako_domain_close(dom);
	htu_remove_domain(dom_name);
	assert_non_null(strstr(p.buf, "ping ok 50"));
}

/* One server, three clients: every client gets all the server sends; the server gets all
 * three clients' PDUs. */
static void test_fanout(void **state)
{
	(void)state;
	peer_t s, c[3];
	peer_start(&s, tmp, "server", sc->server("server", sc->version, 0), "--peers", "3",
	           "--recv", "200", "R", "11", "--recv", "200", "R", "12", "--recv", "200", "R",
	           "13", "send", "200", "R", "1", "1000", NULL);
	unsigned port = peer_port(&s);
	for (int i = 0; i < 3; i++) {
		char name[16], ch[8];
		snprintf(name, sizeof(name), "client%d", i);
		snprintf(ch, sizeof(ch), "%d", 11 + i);
		peer_start(&c[i], tmp, name, sc->client(name, sc->version, port), "--recv", "200",
		           "R", "1", "send", "200", "R", ch, "500", NULL);
	}
	for (int i = 0; i < 3; i++) {
		peer_join_ok(&c[i]);
		assert_non_null(strstr(c[i].buf, "recv ok 200"));
	}
	peer_join_ok(&s);
	assert_non_null(strstr(s.buf, "recv ok 600"));
}

/* The server process is killed and started again on its port; the client process keeps
 * running and receives from the new one. */
static void test_reconnect(void **state)
{
	(void)state;
	peer_t s1, s2, c;
	peer_start(&s1, tmp, "server1", sc->server("server1", sc->version, 0), "--interval-ms",
	           "20", "send", "0", "R", "1", "64", NULL);
	unsigned port = peer_port(&s1);
	peer_start(&c, tmp, "client", sc->client("client", sc->version, port), "--print", "recv",
	           "0", "R", "1", NULL);
	size_t at = 0;
	peer_expect(&c, "seq ", &at);
	peer_kill(&s1);
	/* Sequence numbers of the second server continue above the first's. */
	peer_start(&s2, tmp, "server2", sc->server("server2", sc->version, port), "--interval-ms",
	           "20", "--first-seq", "1000000", "send", "0", "R", "1", "64", NULL);
	assert_int_equal(peer_port(&s2), port);
	peer_expect(&c, "seq 100000", &at);
	assert_false(htu_child_exited(c.pid));
	peer_stop_ok(&c);
	peer_stop_ok(&s2);
}

/* 10,000 PDUs in a burst: none lost, order kept (the receiver checks every sequence number;
 * the sender waits until all were written). */
static void test_burst(void **state)
{
	(void)state;
	peer_t s, c;
	peer_start(&s, tmp, "server", sc->server("server", sc->version, 0), "recv", "10000", "R",
	           "1", NULL);
	unsigned port = peer_port(&s);
	peer_start(&c, tmp, "client", sc->client("client", sc->version, port), "send", "10000", "R",
	           "1", "256", NULL);
	peer_join_ok(&c);
	peer_join_ok(&s);
	assert_non_null(strstr(s.buf, "recv ok 10000"));
}

/* ---- hostile input ---- */

enum bad_kind { BAD_GARBAGE, BAD_TRUNCATED, BAD_HUGE_BODY, BAD_MAGIC, BAD_COUNT };
static const char *const bad_names[] = {"garbage", "truncated header", "body length 2^31",
                                        "wrong magic"};

/* Bytes of one bad input; *len its length. */
static void bad_bytes(enum bad_kind k, uint8_t *buf, size_t *len)
{
	memset(buf, 0, HAKO_FRAME_V2_HEADER_SIZE);
	strcpy((char *)buf, "R");
	uint32_t magic = HAKO_FRAME_MAGIC, type = HAKO_FRAME_PDU_DATA, body = 16;
	uint16_t version = HAKO_FRAME_V2_VERSION;
	switch (k) {
	case BAD_GARBAGE:
		for (size_t i = 0; i < 400; i++) {
			buf[i] = (uint8_t)(0xA5 ^ (i * 13));
		}
		*len = 400;
		return;
	case BAD_TRUNCATED: *len = 100; return;
	case BAD_HUGE_BODY: body = 1u << 31; break;
	case BAD_MAGIC: magic = 0x4B4F4A41; break;
	case BAD_COUNT: break;
	}
	memcpy(buf + 128, &magic, 4);
	memcpy(buf + 132, &version, 2);
	memcpy(buf + 140, &type, 4);
	uint32_t total = 172 + body;
	memcpy(buf + 144, &total, 4);
	memcpy(buf + 148, &body, 4);
	*len = HAKO_FRAME_V2_HEADER_SIZE + (k == BAD_MAGIC ? 16 : 0);
}

static int tcp_connect(unsigned port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_true(fd >= 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		int e = errno;
		close(fd);
		fail_msg("connect to 127.0.0.1:%u: %s", port, strerror(e));
	}
	return fd;
}

static void send_all(int fd, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n <= 0) {
			return; /* the peer may already have dropped us */
		}
		p += n;
		len -= (size_t)n;
	}
}

/* The server closes the connection within the wait: read gives EOF or an error, or (ws) a
 * websocket close frame arrives (the server then waits for our close reply; we do not send it). */
static int closed_by_peer(int fd, int ws)
{
	hako_time_t deadline = hako_now_usec() + WAIT_USEC;
	uint8_t b[4096];
	while (hako_now_usec() < deadline) {
		struct pollfd pfd = {fd, POLLIN, 0};
		if (poll(&pfd, 1, 100) <= 0) {
			continue;
		}
		ssize_t n = recv(fd, b, sizeof(b), 0);
		if (n <= 0 || (ws && (b[0] & 0x0f) == 0x8)) {
			return 1;
		}
	}
	return 0;
}

/* A well-behaved client keeps sending to the server while bad inputs arrive: after each the
 * server's log names the reason (reasons[kind]) and it still receives from the client, every
 * PDU intact (the server's recv checks). inject(port, kind) delivers one bad input and returns 1
 * when the server dropped that peer. */
static void hostile(const char *server_cfg_name, const char *server_cfg,
                    const char *(*client_cfg)(unsigned port), int (*inject)(unsigned, int),
                    const char *const *reasons)
{
	peer_t s, c;
	peer_start(&s, tmp, "server", server_cfg, "--print", "recv", "0", "R", "1", NULL);
	unsigned port = peer_port(&s);
	peer_expect(&s, "ready", NULL);
	peer_start(&c, tmp, "client", client_cfg(port), "--interval-ms", "10", "send", "0", "R",
	           "1", "128", NULL);
	size_t at = 0;
	peer_expect(&s, "seq ", &at);
	for (int k = 0; k < BAD_COUNT; k++) {
		long before = file_size(s.err_path);
		if (!inject(port, k)) {
			peer_dump(&s);
			fail_msg("%s: %s: the server did not drop the peer", server_cfg_name,
			         bad_names[k]);
		}
		int logged = 0;
		HTU_WAIT_UNTIL(logged, file_contains(s.err_path, before, reasons[k]), WAIT_USEC);
		if (!logged) {
			peer_dump(&s);
			fail_msg("%s: %s: the log lacks '%s'", server_cfg_name, bad_names[k],
			         reasons[k]);
		}
		/* The well-behaved client is still served. */
		peer_expect(&s, "seq ", &at);
		peer_expect(&s, "seq ", &at);
	}
	assert_false(htu_child_exited(c.pid));
	peer_stop_ok(&s);
	peer_stop_ok(&c);
	if (getenv("EP_PAIRS_VERBOSE") != NULL) {
		peer_dump(&s);
	}
	(void)server_cfg_name;
}

static int inject_tcp(unsigned port, int kind)
{
	uint8_t buf[512];
	size_t len;
	bad_bytes((enum bad_kind)kind, buf, &len);
	int fd = tcp_connect(port);
	send_all(fd, buf, len);
	if (kind == BAD_TRUNCATED) {
		shutdown(fd, SHUT_WR); /* the rest of the header never comes */
	}
	int closed = closed_by_peer(fd, 0);
	close(fd);
	return closed;
}

static const char *tcp_good_client(unsigned port)
{
	return tcp_client("client", "v2", port);
}

static void test_tcp_hostile(void **state)
{
	(void)state;
	static const char *const reasons[] = {"bad magic 0x023f2825", "middle of a frame",
	                                      "body_len 2147483648 exceeds the limit",
	                                      "bad magic 0x4b4f4a41"};
	hostile("tcp", tcp_server("server", "v2", 0), tcp_good_client, inject_tcp, reasons);
}

static int inject_udp(unsigned port, int kind)
{
	uint8_t buf[512];
	size_t len;
	bad_bytes((enum bad_kind)kind, buf, &len);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_true(fd >= 0);
	ssize_t n = sendto(fd, buf, len, 0, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return n == (ssize_t)len; /* a datagram: dropping it is all the server can do */
}

static const char *udp_good_client(unsigned port)
{
	return udp_endpoint("client", 0, port);
}

static void test_udp_hostile(void **state)
{
	(void)state;
	static const char *const reasons[] = {"bad magic 0x023f2825", "truncated header",
	                                      "body_len 2147483648 exceeds the limit",
	                                      "bad magic 0x4b4f4a41"};
	hostile("udp", udp_endpoint("server", 0, 0), udp_good_client, inject_udp, reasons);
}

/* Upgrade the connection fd to a websocket session by hand: 0, or -1 if the server refused.
 * The response is read byte by byte: whatever follows its head stays in the socket. */
static int ws_upgrade(int fd, unsigned port)
{
	char req[512];
	int n = snprintf(req, sizeof(req),
	                 "GET / HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nUpgrade: websocket\r\n"
	                 "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	                 "Sec-WebSocket-Version: 13\r\n\r\n",
	                 port);
	send_all(fd, (const uint8_t *)req, (size_t)n);
	char resp[2048];
	size_t used = 0;
	resp[0] = '\0';
	hako_time_t deadline = hako_now_usec() + WAIT_USEC;
	while (strstr(resp, "\r\n\r\n") == NULL && used + 1 < sizeof(resp) &&
	       hako_now_usec() < deadline) {
		struct pollfd pfd = {fd, POLLIN, 0};
		if (poll(&pfd, 1, 100) <= 0) {
			continue;
		}
		if (recv(fd, resp + used, 1, 0) <= 0) {
			break;
		}
		resp[++used] = '\0';
	}
	if (strncmp(resp, "HTTP/1.1 101", 12) != 0) {
		fprintf(stderr, "websocket upgrade refused: %s\n", resp);
		return -1;
	}
	return 0;
}

/* A websocket connection upgraded by hand; -1 if the server refused the upgrade. */
static int ws_connect(unsigned port)
{
	int fd = tcp_connect(port);
	if (ws_upgrade(fd, port) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One masked websocket frame (fin set) of opcode whose header announces `announced` payload
 * bytes, followed by the first len of them (len < announced: a frame cut short). */
static void ws_send_frame(int fd, int opcode, const uint8_t *p, size_t len, size_t announced)
{
	uint8_t hdr[14], mask[4] = {0x12, 0x34, 0x56, 0x78}, chunk[4096];
	size_t h = 0;
	hdr[h++] = (uint8_t)(0x80 | opcode);
	if (announced < 126) {
		hdr[h++] = (uint8_t)(0x80 | announced);
	} else if (announced < 65536) {
		hdr[h++] = 0x80 | 126;
		hdr[h++] = (uint8_t)(announced >> 8);
		hdr[h++] = (uint8_t)announced;
	} else {
		hdr[h++] = 0x80 | 127;
		for (int i = 7; i >= 0; i--) {
			hdr[h++] = (uint8_t)((uint64_t)announced >> (8 * i));
		}
	}
	memcpy(hdr + h, mask, 4);
	h += 4;
	send_all(fd, hdr, h);
	for (size_t off = 0; off < len; off += sizeof(chunk)) {
		size_t k = len - off < sizeof(chunk) ? len - off : sizeof(chunk);
		for (size_t i = 0; i < k; i++) {
			chunk[i] = p[off + i] ^ mask[(off + i) % 4];
		}
		send_all(fd, chunk, k);
	}
}

/* One masked binary websocket message. */
static void ws_send_binary(int fd, const uint8_t *p, size_t len)
{
	ws_send_frame(fd, 0x2, p, len, len);
}

static int inject_ws(unsigned port, int kind)
{
	uint8_t buf[512];
	size_t len;
	bad_bytes((enum bad_kind)kind, buf, &len);
	int fd = ws_connect(port);
	if (fd < 0) {
		return 0;
	}
	ws_send_binary(fd, buf, len);
	int closed = closed_by_peer(fd, 1);
	close(fd);
	return closed;
}

static const char *ws_good_client(unsigned port)
{
	return ws_client("client", "v2", port);
}

static void test_websocket_hostile(void **state)
{
	(void)state;
	static const char *const reasons[] = {"bad magic 0x023f2825", "truncated header",
	                                      "body_len 2147483648 exceeds the limit",
	                                      "bad magic 0x4b4f4a41"};
	hostile("websocket", ws_server("server", "v2", 0), ws_good_client, inject_ws, reasons);
}

/* ---- the conformance suite, counted: hostile peers, queue overflow, stop ---- */

/* hostile: one server (max_body_bytes HOSTILE_MAX_BODY) and a well-behaved client of it, both
 * in this process; one raw socket after another connects (websocket: upgraded by hand, but for
 * the garbage sent instead of the request) and does one thing. After each the server runs, has
 * counted exactly what the table says (accepted, rejected, disconnects, recv_ignored, frames_in),
 * has dropped the raw peer (peers back to 1) and exchanges PDUs both ways with the client, whose
 * connection never broke. Which counter moves:
 *  - rejected: a frame that does not decode (bad magic or version, v1 lengths that do not add up,
 *    random bytes), a header declaring a body over max_body_bytes (refused from the header, the
 *    body is never waited for), a websocket message holding part of a frame; tcp: a stream that
 *    ends inside a frame;
 *  - disconnects: a peer that closes (after a good frame, or websocket: inside a message, or after
 *    bytes that are no websocket frame: the websocket layer, not the frame decoder, refuses them);
 *  - recv_ignored: a well-formed frame that is not PDU data (v2), the peer is kept;
 *  - nothing: garbage instead of the HTTP upgrade (websocket: no session was opened). */
#define HOSTILE_MAX_BODY 65536u
#define RAW_ROBOT        "raw"
#define RAW_CH           3
#define CUT_MISSING      10 /* bytes a cut frame lacks */

enum fault {
	F_BAD_MAGIC,      /* v1: name_len 200 (over 127) */
	F_BAD_VERSION,    /* v1: header_len smaller than name_len + 8 */
	F_OVER_LIMIT,     /* the header of a frame of max_body_bytes + 1 (no body) */
	F_AT_LIMIT,       /* a whole frame of max_body_bytes: delivered */
	F_NOT_DATA,       /* v2: a declare-read frame, then a PDU: one ignored, one delivered */
	F_CUT,            /* a frame without its last bytes, then the peer's end of stream */
	F_CUT_MESSAGE,    /* websocket: a whole message holding a frame without its last bytes */
	F_RANDOM,         /* random bytes (tcp: then end of stream; websocket: one message) */
	F_WS_GARBAGE,     /* websocket: random bytes after the upgrade, no websocket frame */
	F_WS_PRE_UPGRADE, /* websocket: random bytes and a blank line instead of the request */
	F_COUNT
};

/* What the server counts for one fault, on one transport; run 0: not for it. delivered: PDUs
 * the server delivers (checked), after which the raw peer closes the connection itself; else
 * the server must close it. */
typedef struct outcome {
	int run, accepted, rejected, disconnects, ignored, delivered;
} outcome_t;

static const struct {
	const char *name;
	int v2_only;
	outcome_t o[2]; /* [TCP], [WS] */
} faults[F_COUNT] = {
    [F_BAD_MAGIC] = {"bad magic / v1 name_len", 0, {{1, 1, 1, 0, 0, 0}, {1, 1, 1, 0, 0, 0}}},
    [F_BAD_VERSION] = {"bad version / v1 header_len", 0, {{1, 1, 1, 0, 0, 0}, {1, 1, 1, 0, 0, 0}}},
    [F_OVER_LIMIT] = {"body over max_body_bytes", 0, {{1, 1, 1, 0, 0, 0}, {1, 1, 1, 0, 0, 0}}},
    [F_AT_LIMIT] = {"body of max_body_bytes", 0, {{1, 1, 0, 1, 0, 1}, {1, 1, 0, 1, 0, 1}}},
    [F_NOT_DATA] = {"not PDU data", 1, {{1, 1, 0, 1, 1, 1}, {1, 1, 0, 1, 1, 1}}},
    [F_CUT] = {"frame cut, then close", 0, {{1, 1, 1, 0, 0, 0}, {1, 1, 0, 1, 0, 0}}},
    [F_CUT_MESSAGE] = {"message of a cut frame", 0, {{0}, {1, 1, 1, 0, 0, 0}}},
    [F_RANDOM] = {"random bytes", 0, {{1, 1, 1, 0, 0, 0}, {1, 1, 1, 0, 0, 0}}},
    [F_WS_GARBAGE] = {"no websocket frame", 0, {{0}, {1, 1, 0, 1, 0, 0}}},
    [F_WS_PRE_UPGRADE] = {"garbage for the upgrade", 0, {{0}, {1, 0, 0, 0, 0, 0}}},
};

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	put_u16(p, (uint16_t)v);
	put_u16(p + 2, (uint16_t)(v >> 16));
}

static size_t encode(hako_frame_version_t v, uint32_t type, const uint8_t *body, uint32_t n,
                     uint8_t *buf, size_t cap)
{
	hako_frame_t f;
	memset(&f, 0, sizeof(f));
	strcpy(f.robot, RAW_ROBOT);
	f.channel_id = RAW_CH;
	f.request_type = type;
	f.body = body;
	f.body_len = n;
	size_t len = 0;
	assert_int_equal(hako_frame_encode(v, &f, buf, cap, &len), 0);
	return len;
}

/* The same bytes on every run: a failure can be replayed. They begin 19 3e 3a b5: on a websocket
 * an unmasked, fragmented ping with RSV3 set (three violations of RFC 6455); in a v2 header a bad
 * magic, in v1 a name_len over 127. */
static void random_bytes(uint8_t *b, size_t n)
{
	uint32_t x = 0x9E3779B9u;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (uint8_t)x;
	}
}

/* The bytes of fault f in version v: one frame (websocket: message), or two (F_NOT_DATA, the
 * second at buf + lens[0]). seq: the body of a PDU to be delivered. */
static void fault_bytes(enum fault f, hako_frame_version_t v, uint32_t seq, uint8_t *buf,
                        size_t cap, size_t lens[2])
{
	static uint8_t body[HOSTILE_MAX_BODY];
	const uint32_t name_len = (uint32_t)strlen(RAW_ROBOT);
	const int v2 = v == HAKO_FRAME_V2;
	static const uint8_t data = 0x5A; /* the body of the frames never delivered */
	lens[1] = 0;
	switch (f) {
	case F_BAD_MAGIC:
		lens[0] = encode(v, HAKO_FRAME_PDU_DATA, &data, 1, buf, cap);
		put_u32(buf + (v2 ? 128 : 4), v2 ? 0x4B4F4A41u : 200u);
		return;
	case F_BAD_VERSION:
		lens[0] = encode(v, HAKO_FRAME_PDU_DATA, &data, 1, buf, cap);
		if (v2) {
			put_u16(buf + 132, 3);
		} else {
			put_u32(buf, name_len + 8 - 1);
		}
		return;
	case F_OVER_LIMIT:
		lens[0] = encode(v, HAKO_FRAME_PDU_DATA, NULL, 0, buf, cap);
		if (v2) {
			put_u32(buf + 144, 172u + HOSTILE_MAX_BODY + 1);
			put_u32(buf + 148, HOSTILE_MAX_BODY + 1);
		} else {
			put_u32(buf, 8 + name_len + HOSTILE_MAX_BODY + 1);
		}
		return;
	case F_AT_LIMIT:
		fill(body, HOSTILE_MAX_BODY, seq);
		lens[0] = encode(v, HAKO_FRAME_PDU_DATA, body, HOSTILE_MAX_BODY, buf, cap);
		return;
	case F_NOT_DATA:
		lens[0] = encode(v, HAKO_FRAME_DECLARE_READ, &data, 1, buf, cap);
		fill(body, 100, seq);
		lens[1] = encode(v, HAKO_FRAME_PDU_DATA, body, 100, buf + lens[0], cap - lens[0]);
		return;
	case F_CUT:
	case F_CUT_MESSAGE:
		fill(body, 100, seq);
		lens[0] = encode(v, HAKO_FRAME_PDU_DATA, body, 100, buf, cap) - CUT_MISSING;
		return;
	case F_RANDOM:
	case F_WS_GARBAGE: lens[0] = 1000; break;
	case F_WS_PRE_UPGRADE: lens[0] = 404; break;
	case F_COUNT: fail();
	}
	assert_true(lens[0] <= cap);
	random_bytes(buf, lens[0]);
	if (f == F_WS_PRE_UPGRADE) {
		memcpy(buf + 400, "\r\n\r\n", 4);
	}
}

/* The server ends the connection within the wait: EOF or an error. A websocket close frame gets
 * its reply, so the server need not wait for it. */
static int wait_closed(int fd, int ws)
{
	hako_time_t deadline = hako_now_usec() + WAIT_USEC;
	int replied = 0;
	uint8_t b[4096];
	while (hako_now_usec() < deadline) {
		struct pollfd pfd = {fd, POLLIN, 0};
		if (poll(&pfd, 1, 100) <= 0) {
			continue;
		}
		ssize_t n = recv(fd, b, sizeof(b), 0);
		if (n <= 0) {
			return 1;
		}
		if (ws && !replied && b[0] == 0x88) {
			static const uint8_t bye[6] = {0x88, 0x80, 0, 0, 0, 0};
			send_all(fd, bye, sizeof(bye));
			replied = 1;
		}
	}
	return 0;
}

/* The server's counters are want (waited for: they move on its thread). */
static void expect_counts(const hako_endpoint_t *srv, const outcome_t *want, uint64_t frames_in,
                          const char *what)
{
	hako_endpoint_stats_t st;
	int ok;
	HTU_WAIT_UNTIL(ok,
	               (st = ept_stats(srv), st.peers == 1 &&
	                                         st.accepted == (uint64_t)want->accepted &&
	                                         st.rejected == (uint64_t)want->rejected &&
	                                         st.disconnects == (uint64_t)want->disconnects &&
	                                         st.recv_ignored == (uint64_t)want->ignored &&
	                                         st.frames_in == frames_in),
	               WAIT_USEC);
	if (!ok) {
		fail_msg(
		    "%s %s: after '%s': peers %u (want 1), accepted %llu (%d), rejected %llu "
		    "(%d), disconnects %llu (%d), recv_ignored %llu (%d), frames_in %llu (%llu)",
		    sc->name, hako_endpoint_name(srv), what, (unsigned)st.peers,
		    (unsigned long long)st.accepted, want->accepted,
		    (unsigned long long)st.rejected, want->rejected,
		    (unsigned long long)st.disconnects, want->disconnects,
		    (unsigned long long)st.recv_ignored, want->ignored,
		    (unsigned long long)st.frames_in, (unsigned long long)frames_in);
	}
}

/* The client sends seq to the server and the server seq back, both checked. */
static void exchange(hako_endpoint_t *srv, hako_endpoint_t *cli, uint32_t seq)
{
	const hako_pdu_key_t up = key("good", 1), down = key("good", 2);
	uint8_t b[300];
	fill(b, sizeof(b), seq);
	assert_int_equal(hako_endpoint_send(cli, &up, b, sizeof(b)), 0);
	recv_expect(srv, &up, sizeof(b), seq);
	assert_int_equal(hako_endpoint_send(srv, &down, b, sizeof(b)), 0);
	recv_expect(cli, &down, sizeof(b), seq);
}

/* One raw peer does fault f: it connects (websocket: and upgrades, unless the fault replaces the
 * request), sends the fault's bytes (websocket: as messages, unless the fault is about raw
 * bytes) and, for a cut frame or tcp's random bytes, ends its stream. Then the server delivers
 * what the fault's table row says, or must close the connection. */
static void inject(hako_endpoint_t *srv, unsigned port, enum fault f, uint32_t seq)
{
	static uint8_t buf[HOSTILE_MAX_BODY + 2048];
	const int ws = sc->proto == WS;
	const outcome_t *o = &faults[f].o[sc->proto];
	size_t lens[2];
	fault_bytes(f, sc->ver, seq, buf, sizeof(buf), lens);
	int fd = raw_track(tcp_connect(port));
	if (ws && f != F_WS_PRE_UPGRADE) {
		assert_int_equal(ws_upgrade(fd, port), 0);
	}
	if (!ws || f == F_WS_GARBAGE || f == F_WS_PRE_UPGRADE) {
		send_all(fd, buf, lens[0] + lens[1]);
	} else if (f == F_CUT) {
		ws_send_frame(fd, 0x2, buf, lens[0], lens[0] + CUT_MISSING);
	} else {
		ws_send_binary(fd, buf, lens[0]);
		if (lens[1] > 0) {
			ws_send_binary(fd, buf + lens[0], lens[1]);
		}
	}
	if (f == F_CUT || (f == F_RANDOM && !ws)) {
		shutdown(fd, SHUT_WR); /* the end of the stream, the rest never comes */
	}
	if (o->delivered) {
		hako_pdu_key_t k = key(RAW_ROBOT, RAW_CH);
		recv_expect(srv, &k, f == F_AT_LIMIT ? HOSTILE_MAX_BODY : 100, seq);
	} else if (!wait_closed(fd, ws)) {
		fail_msg("%s: after '%s' the server did not close the connection", sc->name,
		         faults[f].name);
	}
	raw_close(fd);
}

static void test_hostile(void **state)
{
	(void)state;
	/* Queues: every PDU is read once, in order. */
	write_file("queue.json", "{\"type\": \"buffer\", \"name\": \"queue\", \"store\": "
	                         "{\"mode\": \"queue\", \"depth\": 16}}");
	char more[100];
	snprintf(more, sizeof(more), ", \"max_body_bytes\": %u", HOSTILE_MAX_BODY);
	hako_endpoint_t *srv =
	    ep_start(stream_endpoint(sc->proto, 1, "server", sc->version, 0, "queue.json", more));
	unsigned port = hako_endpoint_local_port(srv);
	hako_endpoint_t *cli =
	    ep_start(stream_endpoint(sc->proto, 0, "client", sc->version, port, "queue.json", ""));
	wait_connected(srv, cli);
	uint32_t seq = 1;
	exchange(srv, cli, seq++);
	outcome_t want = {1, 1, 0, 0, 0, 0};
	uint64_t frames_in = 1;
	for (int f = 0; f < F_COUNT; f++) {
		const outcome_t *o = &faults[f].o[sc->proto];
		if (!o->run || (faults[f].v2_only && sc->ver != HAKO_FRAME_V2)) {
			continue;
		}
		inject(srv, port, (enum fault)f, seq++);
		want.accepted += o->accepted;
		want.rejected += o->rejected;
		want.disconnects += o->disconnects;
		want.ignored += o->ignored;
		frames_in += (uint64_t)o->delivered;
		expect_counts(srv, &want, frames_in, faults[f].name);
		assert_true(hako_endpoint_is_running(srv));
		exchange(srv, cli, seq++);
		expect_counts(srv, &want, ++frames_in, faults[f].name);
	}
	/* The client was served all along on its first connection; the server sent to it only.
	 * A sender counts a frame once its write returned, which may be after the receiver
	 * counted it: wait for the two counts to meet before comparing them. */
	EPT_WAIT_UNTIL(ept_stats(srv).frames_out == ept_stats(cli).frames_in);
	hako_endpoint_stats_t c = ept_stats(cli), s = ept_stats(srv);
	assert_int_equal(c.connects, 1);
	assert_int_equal(c.reconnects + c.disconnects + c.rejected + c.send_dropped, 0);
	assert_int_equal(s.frames_out, c.frames_in);
	assert_int_equal(s.send_dropped + s.recv_dropped + c.recv_dropped, 0);
}

/* overflow: the receiver's cache is a queue of OVF_DEPTH per key; OVF_SENT PDUs of one key and
 * OVF_DEPTH - 1 of another arrive before it reads. Once all arrived (frames_in), the cache has
 * counted exactly OVF_SENT - OVF_DEPTH drops (recv_dropped), keeps the latest OVF_DEPTH of the
 * first key in order and all of the second; the sender dropped nothing (send_dropped). Client to
 * server, then server to client. */
#define OVF_DEPTH 4
#define OVF_SENT  20
#define OVF_SIZE  200

static void overflow_one_way(hako_endpoint_t *from, hako_endpoint_t *to)
{
	const hako_endpoint_stats_t f0 = ept_stats(from), t0 = ept_stats(to);
	const hako_pdu_key_t a = key("ovf", 1), b = key("ovf", 2);
	uint8_t body[OVF_SIZE];
	for (uint32_t i = 0; i < OVF_SENT; i++) {
		fill(body, sizeof(body), i);
		assert_int_equal(hako_endpoint_send(from, &a, body, sizeof(body)), 0);
	}
	for (uint32_t i = 0; i < OVF_DEPTH - 1; i++) {
		fill(body, sizeof(body), 1000 + i);
		assert_int_equal(hako_endpoint_send(from, &b, body, sizeof(body)), 0);
	}
	const uint64_t n = OVF_SENT + OVF_DEPTH - 1;
	/* The sender counts a frame once its write returned, maybe after the receiver did. */
	EPT_WAIT_UNTIL(ept_stats(to).frames_in - t0.frames_in == n &&
	               ept_stats(to).recv_dropped - t0.recv_dropped == OVF_SENT - OVF_DEPTH &&
	               ept_stats(from).frames_out - f0.frames_out == n);
	hako_endpoint_stats_t f = ept_stats(from), t = ept_stats(to);
	assert_int_equal(f.frames_out - f0.frames_out, n);
	assert_int_equal(f.send_dropped - f0.send_dropped, 0);
	assert_int_equal(t.frames_in - t0.frames_in, n);
	assert_int_equal(t.recv_dropped - t0.recv_dropped, OVF_SENT - OVF_DEPTH);
	assert_int_equal(t.recv_ignored + t.rejected, 0);
	for (uint32_t i = 0; i < OVF_DEPTH; i++) {
		recv_expect(to, &a, OVF_SIZE, OVF_SENT - OVF_DEPTH + i);
	}
	size_t len;
	assert_int_equal(hako_endpoint_recv(to, &a, body, sizeof(body), &len), HAKO_EAGAIN);
	for (uint32_t i = 0; i < OVF_DEPTH - 1; i++) {
		recv_expect(to, &b, OVF_SIZE, 1000 + i);
	}
	assert_int_equal(hako_endpoint_recv(to, &b, body, sizeof(body), &len), HAKO_EAGAIN);
	/* Reading drops nothing more. */
	assert_int_equal(ept_stats(to).recv_dropped - t0.recv_dropped, OVF_SENT - OVF_DEPTH);
}

static void test_overflow(void **state)
{
	(void)state;
	write_file("queue4.json",
	           "{\"type\": \"buffer\", \"name\": \"queue\", \"store\": {\"mode\": \"queue\", "
	           "\"depth\": %d}}",
	           OVF_DEPTH);
	hako_endpoint_t *srv =
	    ep_start(stream_endpoint(sc->proto, 1, "server", sc->version, 0, "queue4.json", ""));
	unsigned port = hako_endpoint_local_port(srv);
	hako_endpoint_t *cli =
	    ep_start(stream_endpoint(sc->proto, 0, "client", sc->version, port, "queue4.json", ""));
	wait_connected(srv, cli);
	overflow_one_way(cli, srv);
	overflow_one_way(srv, cli);
}

/* stop_drain: DRAIN_PDUS PDUs of DRAIN_SIZE (16 MiB, more than loopback socket buffers hold)
 * are sent and the sender is stopped at once. The receiver's subscriber holds up its thread on
 * the first PDU until the sender is no longer running (stop has begun), so most of them are
 * still queued on the sender when stop runs. Stop must write them out (write_timeout_ms 10 s)
 * and then end the connection: the sender counts every PDU written or dropped
 * (frames_out + send_dropped == sent; here none dropped), the receiver gets all that were
 * written, intact and in order, and then sees the connection end (disconnects). Client to
 * server, then (the client started again) server to client. */
#define DRAIN_PDUS 256
#define DRAIN_SIZE (64u << 10)

typedef struct drain_rx {
	const hako_endpoint_t *sender;
	atomic_uint count;
	atomic_int bad;
	atomic_int gate_timeout;
} drain_rx_t;

static drain_rx_t drain_rx[2];
/* teardown: gated subscribers return and none reads its sender any more (the sender may be
 * closed next). in_gate: subscribers between their check of gate_open and the end of the gate. */
static atomic_int gate_open;
static atomic_int in_gate;

static void gates_release(void)
{
	atomic_store(&gate_open, 1);
	while (atomic_load(&in_gate) > 0) {
		htu_sleep_usec(1000);
	}
}

static void on_drain(void *user, const hako_pdu_key_t *k, const void *data, size_t len)
{
	(void)k;
	drain_rx_t *r = user;
	unsigned n = atomic_load(&r->count);
	if (n == 0) {
		atomic_fetch_add(&in_gate, 1);
		hako_time_t deadline = hako_now_usec() + WAIT_USEC;
		while (!atomic_load(&gate_open) && hako_endpoint_is_running(r->sender)) {
			if (hako_now_usec() >= deadline) {
				atomic_store(&r->gate_timeout, 1);
				break;
			}
			htu_sleep_usec(1000);
		}
		atomic_fetch_sub(&in_gate, 1);
	}
	if (len != DRAIN_SIZE || !body_ok(data, len, n)) {
		atomic_store(&r->bad, 1);
	}
	atomic_store(&r->count, n + 1);
}

static void drain_one_way(hako_endpoint_t *from, hako_endpoint_t *to, drain_rx_t *rx)
{
	const hako_endpoint_stats_t f0 = ept_stats(from), t0 = ept_stats(to);
	const hako_pdu_key_t k = key("drain", 1);
	rx->sender = from;
	assert_int_equal(hako_endpoint_subscribe(to, &k, on_drain, rx, NULL), 0);
	static uint8_t body[DRAIN_SIZE];
	for (uint32_t i = 0; i < DRAIN_PDUS; i++) {
		fill(body, sizeof(body), i);
		assert_int_equal(hako_endpoint_send(from, &k, body, sizeof(body)), 0);
	}
	assert_int_equal(hako_endpoint_stop(from), 0);
	hako_endpoint_stats_t f = ept_stats(from);
	assert_int_equal(f.frames_out + f.send_dropped - f0.frames_out - f0.send_dropped,
	                 DRAIN_PDUS);
	assert_int_equal(f.send_dropped - f0.send_dropped, 0);
	EPT_WAIT_UNTIL(ept_stats(to).frames_in - t0.frames_in == DRAIN_PDUS &&
	               ept_stats(to).disconnects - t0.disconnects == 1 &&
	               atomic_load(&rx->count) == DRAIN_PDUS);
	hako_endpoint_stats_t t = ept_stats(to);
	assert_int_equal(t.frames_in - t0.frames_in, f.frames_out - f0.frames_out);
	assert_int_equal(atomic_load(&rx->count), DRAIN_PDUS);
	assert_int_equal(atomic_load(&rx->bad), 0);
	assert_int_equal(atomic_load(&rx->gate_timeout), 0);
	assert_int_equal(t.disconnects - t0.disconnects, 1);
	assert_int_equal(t.rejected - t0.rejected, 0);
}

static void test_stop_drain(void **state)
{
	(void)state;
	atomic_store(&gate_open, 0);
	for (int i = 0; i < 2; i++) {
		drain_rx[i].sender = NULL;
		atomic_store(&drain_rx[i].count, 0);
		atomic_store(&drain_rx[i].bad, 0);
		atomic_store(&drain_rx[i].gate_timeout, 0);
	}
	/* websocket: stop's drain waits write_timeout_ms (tcp's file says 10 s already). */
	const char *more = sc->proto == WS ? ", \"write_timeout_ms\": 10000" : "";
	hako_endpoint_t *srv =
	    ep_start(stream_endpoint(sc->proto, 1, "server", sc->version, 0, "cache.json", more));
	unsigned port = hako_endpoint_local_port(srv);
	hako_endpoint_t *cli = ep_start(
	    stream_endpoint(sc->proto, 0, "client", sc->version, port, "cache.json", more));
	wait_connected(srv, cli);
	drain_one_way(cli, srv, &drain_rx[0]);
	hako_error_t err;
	hako_error_clear(&err);
	assert_int_equal(hako_endpoint_start(cli, &err), 0);
	wait_connected(srv, cli);
	drain_one_way(srv, cli, &drain_rx[1]);
}

/* argv: EP_PEER [TEST], TEST one of the tests below or <stream comm>_<scenario> (tcp_v2_pair,
 * websocket_v1_reconnect, ...). */
int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_endpoint_pairs EP_PEER [TEST]\n");
		return 2;
	}
	ep_peer_path = argv[1];
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_shm, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_udp_v2, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tcp_hostile, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_udp_hostile, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_websocket_hostile, setup, teardown),
	};
	const struct CMUnitTest suite[] = {
	    cmocka_unit_test_setup_teardown(test_pair, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fanout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reconnect, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_burst, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_overflow, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stop_drain, setup, teardown),
	};
	if (argc > 2) {
		/* A name that matches no test would run none and pass: refuse it. */
		char want[128];
		snprintf(want, sizeof(want), "test_%s", argv[2]);
		int known = 0;
		for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
			known |= strcmp(tests[i].name, want) == 0;
		}
		for (size_t i = 0; i < sizeof(stream_comms) / sizeof(stream_comms[0]); i++) {
			size_t n = strlen(stream_comms[i].name);
			for (size_t j = 0; j < sizeof(suite) / sizeof(suite[0]); j++) {
				known |= strncmp(argv[2], stream_comms[i].name, n) == 0 &&
				         argv[2][n] == '_' &&
				         strcmp(suite[j].name + 5, argv[2] + n + 1) == 0;
			}
		}
		if (!known) {
			fprintf(stderr, "test_endpoint_pairs: no test '%s'\n", argv[2]);
			return 2;
		}
		for (size_t i = 0; i < sizeof(stream_comms) / sizeof(stream_comms[0]); i++) {
			size_t n = strlen(stream_comms[i].name);
			if (strncmp(argv[2], stream_comms[i].name, n) == 0 && argv[2][n] == '_') {
				char pattern[128];
				snprintf(pattern, sizeof(pattern), "test_%s", argv[2] + n + 1);
				cmocka_set_test_filter(pattern);
				sc = &stream_comms[i];
				return cmocka_run_group_tests_name(stream_comms[i].name, suite,
				                                   NULL, NULL);
			}
		}
		char pattern[128];
		snprintf(pattern, sizeof(pattern), "test_%s", argv[2]);
		cmocka_set_test_filter(pattern);
		return cmocka_run_group_tests(tests, NULL, NULL);
	}
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	for (size_t i = 0; i < sizeof(stream_comms) / sizeof(stream_comms[0]); i++) {
		sc = &stream_comms[i];
		failed += cmocka_run_group_tests_name(stream_comms[i].name, suite, NULL, NULL);
	}
	return failed;
}
