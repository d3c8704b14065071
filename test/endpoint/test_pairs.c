/* Endpoints between processes: each test starts ep_peer processes (ep_peer.c) on endpoint files
 * it writes into a temporary folder, and checks what they say and how they end. Servers (and
 * udp endpoints) bind 127.0.0.1 port 0 and print the port; the clients' files are written after.
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
#include "hako/frame.h"
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

/* <tmp>/<name>.json naming <name>.comm.json (comm_fmt, printf-style) and the latest cache. */
static const char *endpoint(const char *name, const char *comm_fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *endpoint(const char *name, const char *comm_fmt, ...)
{
	static char paths[8][700];
	static int next;
	char comm[4096], fname[300];
	va_list ap;
	va_start(ap, comm_fmt);
	vsnprintf(comm, sizeof(comm), comm_fmt, ap);
	va_end(ap);
	snprintf(fname, sizeof(fname), "%s.comm.json", name);
	write_file(fname, "%s", comm);
	snprintf(fname, sizeof(fname), "%s.json", name);
	write_file(fname,
	           "{\"name\": \"%s\", \"cache\": \"cache.json\", \"comm\": \"%s.comm.json\", "
	           "\"pdu_def_path\": %s}",
	           name, name, strstr(comm, "\"shm\"") != NULL ? "\"pdudef.json\"" : "null");
	char *p = paths[next++ % 8];
	snprintf(p, 700, "%s/%s.json", tmp, name);
	return p;
}

static const char tcp_options[] =
    "\"options\": {\"write_timeout_ms\": 10000, \"send_queue_depth\": "
    "4096, \"connect_timeout_ms\": 1000}";

/* port 0: any free one (the server prints which: peer_port). */
static const char *tcp_server(const char *name, const char *version, unsigned port)
{
	return endpoint(name,
	                "{\"protocol\": \"tcp\", \"name\": \"%s\", \"role\": \"server\", "
	                "\"comm_raw_version\": \"%s\", \"local\": {\"address\": \"127.0.0.1\", "
	                "\"port\": %u}, %s}",
	                name, version, port, tcp_options);
}

static const char *tcp_client(const char *name, const char *version, unsigned port)
{
	return endpoint(name,
	                "{\"protocol\": \"tcp\", \"name\": \"%s\", \"role\": \"client\", "
	                "\"comm_raw_version\": \"%s\", \"remote\": {\"address\": \"127.0.0.1\", "
	                "\"port\": %u}, %s}",
	                name, version, port, tcp_options);
}

static const char *ws_server(const char *name, const char *version, unsigned port)
{
	return endpoint(name,
	                "{\"protocol\": \"websocket\", \"name\": \"%s\", \"role\": \"server\", "
	                "\"comm_raw_version\": \"%s\", \"local\": {\"address\": \"127.0.0.1\", "
	                "\"port\": %u}, \"options\": {\"send_queue_depth\": 4096}}",
	                name, version, port);
}

static const char *ws_client(const char *name, const char *version, unsigned port)
{
	return endpoint(name,
	                "{\"protocol\": \"websocket\", \"name\": \"%s\", \"role\": \"client\", "
	                "\"comm_raw_version\": \"%s\", \"remote\": {\"host\": \"127.0.0.1\", "
	                "\"port\": %u, \"path\": \"/\"}, \"options\": {\"send_queue_depth\": "
	                "4096}}",
	                name, version, port);
}

/* ---- the conformance suite of the stream comms ----
 *
 * What every connection-oriented comm promises, written once and run against each (tcp and
 * websocket, v1 and v2 frames): both ways at once with the last PDU out before close (pair),
 * one server and three clients (fanout), a client that outlives a killed server and receives
 * from its successor on the same port (reconnect), 10,000 PDUs with none lost and order kept
 * (burst). udp and shm have their own tests: neither has connections, udp may drop, shm keeps
 * only the latest write. */
typedef struct stream_comm {
	const char *name; /* the ctest names: endpoint.pairs.<name>_<scenario> */
	const char *version;
	const char *(*server)(const char *name, const char *version, unsigned port);
	const char *(*client)(const char *name, const char *version, unsigned port);
} stream_comm_t;

static const stream_comm_t stream_comms[] = {
    {"tcp_v2", "v2", tcp_server, tcp_client},
    {"tcp_v1", "v1", tcp_server, tcp_client},
    {"websocket_v2", "v2", ws_server, ws_client},
    {"websocket_v1", "v1", ws_server, ws_client},
};
static const stream_comm_t *sc; /* the one main() picked */

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

/* ---- fixtures ---- */

static int setup(void **state)
{
	(void)state;
	htu_init();
	htu_tmpdir(tmp, sizeof(tmp));
	/* Written once: a running peer may be reading it when the next endpoint is written. */
	write_file("cache.json", "{\"type\": \"buffer\", \"name\": \"latest\", "
	                         "\"store\": {\"mode\": \"latest\"}}");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
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
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
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

/* A websocket connection upgraded by hand; -1 if the server refused the upgrade. */
static int ws_connect(unsigned port)
{
	int fd = tcp_connect(port);
	char req[512];
	int n = snprintf(req, sizeof(req),
	                 "GET / HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nUpgrade: websocket\r\n"
	                 "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	                 "Sec-WebSocket-Version: 13\r\n\r\n",
	                 port);
	send_all(fd, (const uint8_t *)req, (size_t)n);
	char resp[2048];
	size_t used = 0;
	hako_time_t deadline = hako_now_usec() + WAIT_USEC;
	while (strstr(resp, "\r\n\r\n") == NULL && used + 1 < sizeof(resp)) {
		resp[used] = '\0';
		if (strstr(resp, "\r\n\r\n") != NULL || hako_now_usec() >= deadline) {
			break;
		}
		struct pollfd pfd = {fd, POLLIN, 0};
		if (poll(&pfd, 1, 100) <= 0) {
			continue;
		}
		ssize_t r =
		    recv(fd, resp + used, 1, 0); /* byte by byte: stop at the headers' end */
		if (r <= 0) {
			break;
		}
		used++;
		resp[used] = '\0';
	}
	if (strncmp(resp, "HTTP/1.1 101", 12) != 0) {
		fprintf(stderr, "websocket upgrade refused: %s\n", resp);
		close(fd);
		return -1;
	}
	return fd;
}

/* One masked binary websocket message. */
static void ws_send_binary(int fd, const uint8_t *p, size_t len)
{
	uint8_t hdr[14], mask[4] = {0x12, 0x34, 0x56, 0x78}, body[600];
	size_t h = 0;
	hdr[h++] = 0x82;
	if (len < 126) {
		hdr[h++] = (uint8_t)(0x80 | len);
	} else {
		hdr[h++] = 0x80 | 126;
		hdr[h++] = (uint8_t)(len >> 8);
		hdr[h++] = (uint8_t)len;
	}
	memcpy(hdr + h, mask, 4);
	h += 4;
	for (size_t i = 0; i < len; i++) {
		body[i] = p[i] ^ mask[i % 4];
	}
	send_all(fd, hdr, h);
	send_all(fd, body, len);
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
