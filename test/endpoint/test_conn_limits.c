/* Connection limits that idle peers cannot exhaust (pdu-endpoint/src/comm_tcp*.c, comm_ws.c):
 *  - flood: 64, then 1,000 more idle connections against a tcp and a websocket server (raw
 *    sockets that connect and send nothing, send part of a frame header or of the HTTP upgrade,
 *    or upgrade and then say nothing) while a legitimate client connects and streams PDUs: it
 *    gets in, and every PDU it sends arrives, in order;
 *  - silent: a connection that has sent part of a frame and no whole one (websocket: no
 *    upgrade, or part of one) is closed by the server after the first-frame deadline, one that
 *    sent a frame is kept; one that sent nothing at all (websocket: upgraded and silent) may be
 *    a client that only listens: it is kept while the server has room, and gets what the
 *    server sends; a tcp server that only sends (direction "out") keeps its silent peers.
 * Every peer is 127.0.0.1: the legitimate client shares its address with the idle ones, so it
 * gets in by taking the place of the oldest idle connection of that address.
 *
 * The servers run with read_timeout_ms and frame_timeout_ms 0 (Hakoniwa's recommended
 * setting): before the limits, nothing ever closed an idle connection, and max_clients (64)
 * idle ones locked every other peer out for as long as they stayed. Waits are for what can be
 * observed (a PDU delivered, a connection closed), with generous limits. */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/endpoint.h"
#include "hako/frame.h"

#include "ep_test_util.h"

#define FIRST_IDLE  64   /* max_clients by default */
#define MORE_IDLE   1000 /* then these */
#define MAX_RAW     (FIRST_IDLE + MORE_IDLE + 16)
#define SEND_EVERY  8   /* the client sends a PDU after every SEND_EVERY idle connections */
#define STREAM_EDGE 100 /* PDUs streamed before and after the idle connections */
#define PDU_SIZE    64
#define ADMIT_MS    60000 /* for the client to get in; the limits let it in within ~1 s */
#define CLOSE_MS    30000 /* for a silent connection to be closed (tcp: after 5 s) */
#define PER_ADDR    32    /* the per-address limit with max_clients 64 */

#define TCP_SERVER                                                                                 \
	"{\"protocol\":\"tcp\",\"role\":\"server\",\"direction\":\"inout\","                       \
	"\"local\":{\"address\":\"127.0.0.1\",\"port\":LPORT},"                                    \
	"\"options\":{\"read_timeout_ms\":0,\"frame_timeout_ms\":0}}"
#define TCP_OUT_SERVER                                                                             \
	"{\"protocol\":\"tcp\",\"role\":\"server\",\"direction\":\"out\","                         \
	"\"local\":{\"address\":\"127.0.0.1\",\"port\":LPORT}}"
#define TCP_CLIENT                                                                                 \
	"{\"protocol\":\"tcp\",\"role\":\"client\",\"direction\":\"inout\","                       \
	"\"remote\":{\"address\":\"127.0.0.1\",\"port\":RPORT}}"
#define WS_SERVER                                                                                  \
	"{\"protocol\":\"websocket\",\"role\":\"server\",\"direction\":\"inout\","                 \
	"\"local\":{\"address\":\"127.0.0.1\",\"port\":LPORT},"                                    \
	"\"options\":{\"read_timeout_ms\":0,\"frame_timeout_ms\":0}}"
#define WS_SERVER_SHORT                                                                            \
	"{\"protocol\":\"websocket\",\"role\":\"server\",\"direction\":\"inout\","                 \
	"\"local\":{\"address\":\"127.0.0.1\",\"port\":LPORT},"                                    \
	"\"options\":{\"read_timeout_ms\":0,\"frame_timeout_ms\":0,\"handshake_timeout_ms\":1000}" \
	"}"
#define WS_CLIENT                                                                                  \
	"{\"protocol\":\"websocket\",\"role\":\"client\",\"direction\":\"inout\","                 \
	"\"remote\":{\"host\":\"127.0.0.1\",\"port\":RPORT,\"path\":\"/\"}}"

static const char upgrade_req[] =
    "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
    "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Sec-WebSocket-Version: 13\r\n\r\n";

/* The raw sockets of a test, closed by its teardown. */
static int g_fd[MAX_RAW];
static int g_nfd;

/* What the server's subscriber saw of the stream. */
typedef struct seen {
	atomic_uint probes;
	atomic_uint count; /* PDUs of the stream, in order */
	atomic_int bad;    /* one out of order or of another size */
} seen_t;

static seen_t g_seen;

static int teardown(void **state)
{
	for (int i = 0; i < g_nfd; i++) {
		close(g_fd[i]);
	}
	g_nfd = 0;
	return ept_close_all(state);
}

/* ---- raw peers ---- */

static int raw_connect(uint16_t port)
{
	assert_true(g_nfd < MAX_RAW);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		fail_msg("connect to 127.0.0.1:%u: %s", (unsigned)port, strerror(errno));
	}
	g_fd[g_nfd++] = fd;
	return fd;
}

/* Best effort: the server may have closed the connection already. */
static void raw_send(int fd, const void *b, size_t n)
{
	ssize_t w = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)w;
}

/* Whether the server closed fd within ms: EOF, a reset, or (websocket) a close frame. */
static int closed_within(int fd, unsigned ms)
{
	uint64_t end = ept_now_ms() + ms;
	while (ept_now_ms() < end) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 100) <= 0) {
			continue;
		}
		uint8_t b[256];
		ssize_t r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			return 1;
		}
		if (r >= 2 && (b[0] & 0x0f) == 0x8) {
			return 1; /* a websocket close frame, the server's first word on the way out
			           */
		}
	}
	return 0;
}

static size_t v2_frame(uint8_t *buf, size_t cap, const char *robot)
{
	uint8_t body[8] = {0};
	hako_frame_t f;
	memset(&f, 0, sizeof(f));
	snprintf(f.robot, sizeof(f.robot), "%s", robot);
	f.request_type = HAKO_FRAME_PDU_DATA;
	f.body = body;
	f.body_len = sizeof(body);
	size_t len = 0;
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V2, &f, buf, cap, &len), 0);
	return len;
}

/* An idle tcp peer: odd ones send the first 100 bytes of a frame header, even ones nothing. */
static void tcp_idle(uint16_t port, int i)
{
	int fd = raw_connect(port);
	if (i % 2 == 1) {
		uint8_t hdr[HAKO_FRAME_V2_HEADER_SIZE + 8];
		v2_frame(hdr, sizeof(hdr), "idle");
		raw_send(fd, hdr, 100);
	}
}

/* The server's answer to an upgrade request on fd: 1 upgraded (101), 0 refused (closed). The
 * response head is read byte by byte so nothing after it is taken. */
static int ws_upgraded(int fd)
{
	char head[1024];
	size_t n = 0;
	uint64_t end = ept_now_ms() + EPT_WAIT_MS;
	head[0] = '\0';
	while (n + 1 < sizeof(head) && strstr(head, "\r\n\r\n") == NULL && ept_now_ms() < end) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 100) <= 0) {
			continue;
		}
		if (recv(fd, head + n, 1, 0) != 1) {
			break;
		}
		head[++n] = '\0';
	}
	return strstr(head, " 101 ") != NULL;
}

/* An upgraded raw session that says nothing; -1 if the server refused it. */
static int ws_silent_session(uint16_t port)
{
	int fd = raw_connect(port);
	raw_send(fd, upgrade_req, sizeof(upgrade_req) - 1);
	return ws_upgraded(fd) ? fd : -1;
}

/* An idle websocket peer: an upgraded session that says nothing (the first FIRST_IDLE, which
 * held every place before the limits, then i % 3 == 0), half of the upgrade request (1), or a
 * connection and nothing (2). */
static void ws_idle(uint16_t port, int i)
{
	if (i < FIRST_IDLE || i % 3 == 0) {
		ws_silent_session(port);
		return;
	}
	int fd = raw_connect(port);
	if (i % 3 == 1) {
		raw_send(fd, upgrade_req, 40);
	}
}

/* ---- the legitimate client ---- */

static void on_pdu(void *user, const hako_pdu_key_t *k, const void *data, size_t len)
{
	seen_t *s = user;
	if (strcmp(k->robot, "probe") == 0) {
		atomic_fetch_add(&s->probes, 1);
		return;
	}
	uint32_t v = 0;
	if (len != PDU_SIZE) {
		atomic_store(&s->bad, 1);
		return;
	}
	memcpy(&v, data, sizeof(v));
	unsigned n = atomic_load(&s->count);
	if (v != n) {
		atomic_store(&s->bad, 1);
	}
	atomic_store(&s->count, n + 1);
}

static void subscribe_all(hako_endpoint_t *srv)
{
	atomic_init(&g_seen.probes, 0);
	atomic_init(&g_seen.count, 0);
	atomic_init(&g_seen.bad, 0);
	assert_int_equal(hako_endpoint_subscribe(srv, NULL, on_pdu, &g_seen, NULL), 0);
}

static void say_stats(const char *what, hako_endpoint_t *srv)
{
	hako_endpoint_stats_t st = ept_stats(srv);
	printf("%s: server peers %u, accepted %llu, rejected %llu, disconnects %llu\n", what,
	       (unsigned)st.peers, (unsigned long long)st.accepted, (unsigned long long)st.rejected,
	       (unsigned long long)st.disconnects);
	fflush(stdout);
}

/* Until a probe from cli reaches the server: cli is in, past every limit. A connection the
 * server refuses is closed at once and the client connects again. */
static void await_admitted(hako_endpoint_t *srv, hako_endpoint_t *cli)
{
	hako_pdu_key_t k = ept_key("probe", 0);
	uint64_t end = ept_now_ms() + ADMIT_MS;
	while (atomic_load(&g_seen.probes) == 0) {
		if (ept_now_ms() >= end) {
			hako_endpoint_stats_t st = ept_stats(srv);
			fail_msg(
			    "the client did not get in within %d ms: server peers %u, rejected "
			    "%llu, accepted %llu; client connects %llu",
			    ADMIT_MS, (unsigned)st.peers, (unsigned long long)st.rejected,
			    (unsigned long long)st.accepted,
			    (unsigned long long)ept_stats(cli).connects);
		}
		if (ept_stats(cli).peers == 1) {
			hako_endpoint_send(cli, &k, "p", 1);
		}
		int ok;
		HTU_WAIT_UNTIL(ok, atomic_load(&g_seen.probes) > 0, 20000);
		(void)ok;
	}
}

static unsigned g_sent;

static void stream_one(hako_endpoint_t *cli)
{
	hako_pdu_key_t k = ept_key("stream", 1);
	uint8_t pdu[PDU_SIZE];
	memset(pdu, 0x5A, sizeof(pdu));
	memcpy(pdu, &g_sent, sizeof(g_sent));
	int r = hako_endpoint_send(cli, &k, pdu, sizeof(pdu));
	if (r != 0) {
		fail_msg("PDU %u: send failed (%d): the client lost its connection", g_sent, r);
	}
	g_sent++;
}

/* The flood: FIRST_IDLE idle connections, the client gets in and streams, MORE_IDLE more idle
 * connections while it streams, then the rest of the stream; all of it arrives. */
static void flood(const char *srv_comm, const char *cli_comm, void (*idle)(uint16_t, int))
{
	hako_endpoint_t *srv = ept_must_open("srv", srv_comm, 0, 0);
	uint16_t port = hako_endpoint_local_port(srv);
	subscribe_all(srv);
	g_sent = 0;
	for (int i = 0; i < FIRST_IDLE; i++) {
		idle(port, i);
	}
	say_stats("after the first idle connections", srv);
	hako_endpoint_t *cli = ept_must_open("cli", cli_comm, -1, port);
	await_admitted(srv, cli);
	say_stats("client in", srv);
	/* Connections refused until then ended at once; the one that got in must last. */
	uint64_t lost = ept_stats(cli).disconnects;
	for (int i = 0; i < STREAM_EDGE; i++) {
		stream_one(cli);
	}
	for (int i = 0; i < MORE_IDLE; i++) {
		idle(port, FIRST_IDLE + i);
		if (i % SEND_EVERY == SEND_EVERY - 1) {
			stream_one(cli);
		}
	}
	for (int i = 0; i < STREAM_EDGE; i++) {
		stream_one(cli);
	}
	EPT_WAIT_UNTIL(atomic_load(&g_seen.count) == g_sent);
	say_stats("after the stream", srv);
	assert_int_equal(atomic_load(&g_seen.count), g_sent);
	assert_int_equal(atomic_load(&g_seen.bad), 0);
	assert_int_equal(ept_stats(cli).disconnects, lost);
	/* One address holds at most PER_ADDR places (the client's among them). */
	EPT_WAIT_FOR(ept_stats(srv).peers <= PER_ADDR);
}

static void test_tcp_flood(void **state)
{
	(void)state;
	flood(TCP_SERVER, TCP_CLIENT, tcp_idle);
}

static void test_ws_flood(void **state)
{
	(void)state;
	flood(WS_SERVER, WS_CLIENT, ws_idle);
}

/* ---- silent connections are closed ---- */

/* A tcp server that takes input closes a peer that sent part of a header and no whole frame
 * within 5 s of its connect, and keeps one that sent a frame, and one that sent nothing (a
 * listener, while there is room: connected first, its deadline passed before the partial one's
 * close, and it still gets the server's PDUs); a server that only sends keeps its silent
 * peers (they have nothing to say). */
static void test_tcp_silent_closed(void **state)
{
	(void)state;
	hako_endpoint_t *out = ept_must_open("out", TCP_OUT_SERVER, 0, 0);
	raw_connect(hako_endpoint_local_port(out)); /* connected first */
	EPT_WAIT_FOR(ept_stats(out).peers == 1);
	hako_endpoint_t *srv = ept_must_open("srv", TCP_SERVER, 0, 0);
	uint16_t port = hako_endpoint_local_port(srv);
	int silent = raw_connect(port);
	int partial = raw_connect(port);
	int framed = raw_connect(port);
	uint8_t frame[HAKO_FRAME_V2_HEADER_SIZE + 8];
	size_t n = v2_frame(frame, sizeof(frame), "framed");
	raw_send(partial, frame, 100);
	raw_send(framed, frame, n);
	hako_pdu_key_t k = ept_key("framed", 0);
	uint8_t got[16];
	size_t len = 0;
	assert_int_equal(ept_recv_wait(srv, &k, got, sizeof(got), &len), 0);
	assert_true(closed_within(partial, CLOSE_MS));
	EPT_WAIT_FOR(ept_stats(srv).peers == 2);
	assert_int_equal(ept_stats(srv).disconnects, 1);
	assert_int_equal(ept_stats(out).peers, 1);
	/* The framed peer is still served, and the listener gets what the server sends. */
	raw_send(framed, frame, n);
	EPT_WAIT_FOR(ept_stats(srv).frames_in == 2);
	uint8_t pdu[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	assert_int_equal(hako_endpoint_send(srv, &k, pdu, sizeof(pdu)), 0);
	uint8_t in[HAKO_FRAME_V2_HEADER_SIZE + 64];
	size_t have = 0;
	uint64_t end = ept_now_ms() + CLOSE_MS;
	while (have < n && ept_now_ms() < end) {
		struct pollfd pf = {.fd = silent, .events = POLLIN};
		if (poll(&pf, 1, 100) == 1) {
			ssize_t r = recv(silent, in + have, sizeof(in) - have, 0);
			assert_true(r > 0); /* not closed */
			have += (size_t)r;
		}
	}
	assert_int_equal(have, n);
	assert_int_equal(memcmp(in + n - sizeof(pdu), pdu, sizeof(pdu)), 0);
	assert_int_equal(ept_stats(srv).peers, 2);
}

/* A websocket server closes a connection that did not upgrade handshake_timeout_ms after it
 * connected (1 s here), and keeps a session that sent a message, and one that upgraded and
 * said nothing (a listener, while there is room: connected first, its deadline passed before
 * the others were closed). */
static void test_ws_silent_closed(void **state)
{
	(void)state;
	hako_endpoint_t *srv = ept_must_open("srv", WS_SERVER_SHORT, 0, 0);
	uint16_t port = hako_endpoint_local_port(srv);
	int framed = ws_silent_session(port);
	assert_true(framed >= 0);
	int session = ws_silent_session(port);
	assert_true(session >= 0);
	int raw = raw_connect(port);
	int half = raw_connect(port);
	raw_send(half, upgrade_req, 40);
	/* One whole binary message: a masked frame of a PDU. */
	uint8_t frame[HAKO_FRAME_V2_HEADER_SIZE + 8];
	size_t n = v2_frame(frame, sizeof(frame), "framed");
	uint8_t msg[sizeof(frame) + 8];
	static const uint8_t mask[4] = {1, 2, 3, 4};
	size_t hl = 0;
	msg[hl++] = 0x82;
	msg[hl++] = 0x80 | 126;
	msg[hl++] = (uint8_t)(n >> 8);
	msg[hl++] = (uint8_t)n;
	memcpy(msg + hl, mask, 4);
	hl += 4;
	for (size_t i = 0; i < n; i++) {
		msg[hl + i] = frame[i] ^ mask[i & 3];
	}
	raw_send(framed, msg, hl + n);
	hako_pdu_key_t k = ept_key("framed", 0);
	uint8_t got[16];
	size_t len = 0;
	assert_int_equal(ept_recv_wait(srv, &k, got, sizeof(got), &len), 0);
	assert_true(closed_within(raw, CLOSE_MS));
	assert_true(closed_within(half, CLOSE_MS));
	assert_int_equal(ept_stats(srv).peers, 2);
	assert_int_equal(ept_stats(srv).disconnects, 0); /* the others never were sessions */
	raw_send(framed, msg, hl + n);
	EPT_WAIT_FOR(ept_stats(srv).frames_in == 2);
	struct pollfd pf = {.fd = session, .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 0), 0); /* the listener is still open, nothing to read */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_tcp_flood, teardown),
	    cmocka_unit_test_teardown(test_ws_flood, teardown),
	    cmocka_unit_test_teardown(test_tcp_silent_closed, teardown),
	    cmocka_unit_test_teardown(test_ws_silent_closed, teardown),
	};
	/* Both ends of every connection are in this process: over 2,000 descriptors. */
	return cmocka_run_group_tests_name("endpoint.conn_limits", tests, ept_group_setup_many_fds,
	                                   ept_group_teardown);
}
