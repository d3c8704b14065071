/* The websocket comm: a server and clients in this process on 127.0.0.1 (ports picked by the
 * kernel): both directions with two clients, a client reconnecting to a server closed and
 * opened again, hostile sessions (raw sockets speaking the upgrade, then bad messages) closed
 * while a good client goes on, static files over HTTP, flow control (a burst arrives whole, a
 * session that never reads is closed), the limits (max_clients, read and frame timeouts) and
 * the loopback default address. */
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/endpoint.h"
#include "hako/frame.h"

#include "ep_test_util.h"

#define SERVER_COMM                                                                                \
	"{\"protocol\":\"websocket\",\"role\":\"server\",\"direction\":\"inout\","                 \
	"\"local\":{\"address\":\"127.0.0.1\",\"port\":LPORT}"
#define CLIENT_COMM                                                                                \
	"{\"protocol\":\"websocket\",\"role\":\"client\",\"direction\":\"inout\","                 \
	"\"remote\":{\"host\":\"127.0.0.1\",\"port\":RPORT,\"path\":\"/pdu\"}}"

static void expect_pdu(hako_endpoint_t *ep, const hako_pdu_key_t *k, const char *msg)
{
	char got[256];
	size_t len = 0;
	assert_int_equal(ept_recv_wait(ep, k, got, sizeof(got), &len), 0);
	assert_int_equal(len, strlen(msg));
	assert_memory_equal(got, msg, len);
}

static void test_two_clients(void **state)
{
	(void)state;
	hako_endpoint_t *s = ept_must_open("srv", SERVER_COMM "}", 0, 0);
	uint16_t port = hako_endpoint_local_port(s);
	assert_true(port != 0);
	hako_pdu_key_t k = ept_key("Drone", 1);
	/* Nobody there yet. */
	assert_int_equal(hako_endpoint_send(s, &k, "x", 1), HAKO_ENOTCONN);
	assert_int_equal(ept_stats(s).send_dropped, 1);
	hako_endpoint_t *c1 = ept_must_open("c1", CLIENT_COMM, -1, port);
	hako_endpoint_t *c2 = ept_must_open("c2", CLIENT_COMM, -1, port);
	EPT_WAIT_UNTIL(ept_stats(s).peers == 2 && ept_stats(c1).peers == 1 &&
	               ept_stats(c2).peers == 1);
	assert_int_equal(ept_stats(s).peers, 2);
	assert_int_equal(ept_stats(s).accepted, 2);
	assert_int_equal(ept_stats(c1).connects, 1);
	assert_int_equal(ept_stats(c1).reconnects, 0);

	/* Server to both. */
	assert_int_equal(hako_endpoint_send(s, &k, "to all", 6), 0);
	expect_pdu(c1, &k, "to all");
	expect_pdu(c2, &k, "to all");
	EPT_WAIT_UNTIL(ept_stats(s).frames_out == 2);
	assert_int_equal(ept_stats(s).frames_out, 2);
	assert_int_equal(ept_stats(s).bytes_out, 12);
	/* Both to the server. */
	hako_pdu_key_t k1 = ept_key("c1", 5), k2 = ept_key("c2", 6);
	assert_int_equal(hako_endpoint_send(c1, &k1, "from c1", 7), 0);
	assert_int_equal(hako_endpoint_send(c2, &k2, "from c2", 7), 0);
	expect_pdu(s, &k1, "from c1");
	expect_pdu(s, &k2, "from c2");

	/* A large PDU (many lws chunks, a fragmented receive). */
	size_t big = 3u << 20;
	uint8_t *buf = malloc(big), *got = malloc(big);
	assert_non_null(buf);
	assert_non_null(got);
	for (size_t i = 0; i < big; i++) {
		buf[i] = (uint8_t)(i * 13 + (i >> 12));
	}
	assert_int_equal(hako_endpoint_send(c1, &k1, buf, big), 0);
	size_t len = 0;
	assert_int_equal(ept_recv_wait(s, &k1, got, big, &len), 0);
	assert_int_equal(len, big);
	assert_memory_equal(got, buf, big);
	assert_int_equal(hako_endpoint_send(s, &k, buf, big), 0);
	assert_int_equal(ept_recv_wait(c2, &k, got, big, &len), 0);
	assert_int_equal(len, big);
	assert_memory_equal(got, buf, big);
	free(buf);
	free(got);

	/* A client that leaves is a disconnect; the other one is served on. */
	ept_close(c1);
	EPT_WAIT_UNTIL(ept_stats(s).peers == 1);
	assert_int_equal(ept_stats(s).peers, 1);
	assert_int_equal(ept_stats(s).disconnects, 1);
	assert_int_equal(hako_endpoint_send(s, &k, "only c2", 7), 0);
	expect_pdu(c2, &k, "only c2");
	assert_int_equal(ept_stats(s).rejected, 0);

	/* Server stop closes the sessions and keeps the port. */
	assert_int_equal(hako_endpoint_stop(s), 0);
	assert_int_equal(hako_endpoint_local_port(s), port);
	EPT_WAIT_UNTIL(ept_stats(c2).disconnects == 1);
	assert_int_equal(ept_stats(c2).disconnects, 1);
	assert_int_equal(hako_endpoint_start(s, NULL), 0);
	EPT_WAIT_UNTIL(ept_stats(c2).reconnects == 1 && ept_stats(s).peers == 1);
	assert_int_equal(ept_stats(c2).reconnects, 1);
	assert_int_equal(hako_endpoint_send(c2, &k2, "back", 4), 0);
	expect_pdu(s, &k2, "back");
	ept_close(c2);
	ept_close(s);
}

static void test_reconnect(void **state)
{
	(void)state;
	hako_endpoint_t *s = ept_must_open("rs", SERVER_COMM "}", 0, 0);
	uint16_t port = hako_endpoint_local_port(s);
	hako_endpoint_t *c = ept_must_open("rc", CLIENT_COMM, -1, port);
	EPT_WAIT_UNTIL(ept_stats(c).peers == 1);
	assert_int_equal(ept_stats(c).connects, 1);
	ept_close(s);
	EPT_WAIT_UNTIL(ept_stats(c).disconnects == 1 && ept_stats(c).peers == 0);
	assert_int_equal(ept_stats(c).disconnects, 1);
	hako_pdu_key_t k = ept_key("r", 1);
	assert_int_equal(hako_endpoint_send(c, &k, "lost", 4), HAKO_ENOTCONN);

	/* The same port again (the client keeps trying meanwhile). */
	hako_error_t err;
	int r;
	uint64_t end = ept_now_ms() + EPT_WAIT_MS;
	do {
		s = NULL;
		hako_error_clear(&err);
		r = ept_open_ports("rs", SERVER_COMM "}", port, 0, &s, &err);
	} while (r == HAKO_EBUSY && ept_now_ms() < end && usleep(50000) == 0);
	assert_int_equal(r, 0);
	assert_int_equal(hako_endpoint_local_port(s), port);
	assert_int_equal(hako_endpoint_start(s, NULL), 0);
	EPT_WAIT_UNTIL(ept_stats(c).peers == 1 && ept_stats(s).peers == 1);
	assert_int_equal(ept_stats(c).reconnects, 1);
	assert_int_equal(ept_stats(c).connects, 2);
	assert_int_equal(hako_endpoint_send(c, &k, "again", 5), 0);
	expect_pdu(s, &k, "again");
	assert_int_equal(hako_endpoint_send(s, &k, "back", 4), 0);
	expect_pdu(c, &k, "back");
	ept_close(c);
	ept_close(s);
}

static void test_port_busy(void **state)
{
	(void)state;
	hako_endpoint_t *s = ept_must_open("bs", SERVER_COMM "}", 0, 0);
	hako_endpoint_t *t = NULL;
	hako_error_t err;
	hako_error_clear(&err);
	assert_int_equal(
	    ept_open_ports("bt", SERVER_COMM "}", hako_endpoint_local_port(s), 0, &t, &err),
	    HAKO_EBUSY);
	assert_null(t);
	assert_non_null(strstr(err.file, "bt.comm.json"));
	assert_non_null(strstr(err.message, "127.0.0.1"));
	ept_close(s);
}

/* ---- raw sockets ---- */

static int tcp_connect(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		assert_true(w > 0);
		b += w;
		n -= (size_t)w;
	}
}

/* Read until the peer closes (or cap bytes, or 10 s). Returns bytes read. */
static size_t read_until_close(int fd, char *buf, size_t cap, int *closed)
{
	size_t n = 0;
	*closed = 0;
	uint64_t end = ept_now_ms() + EPT_WAIT_MS;
	while (ept_now_ms() < end && n < cap) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 100) <= 0) {
			continue;
		}
		ssize_t r = recv(fd, buf + n, cap - n, 0);
		if (r <= 0) {
			*closed = 1;
			break;
		}
		n += (size_t)r;
	}
	return n;
}

/* Read an HTTP response head (up to the blank line) into buf. */
static size_t read_head(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	uint64_t end = ept_now_ms() + EPT_WAIT_MS;
	buf[0] = '\0';
	while (ept_now_ms() < end && n + 1 < cap && strstr(buf, "\r\n\r\n") == NULL) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 100) <= 0) {
			continue;
		}
		ssize_t r = recv(fd, buf + n, 1, 0);
		if (r <= 0) {
			break;
		}
		n += (size_t)r;
		buf[n] = '\0';
	}
	return n;
}

/* An upgraded raw session, or -1 if the server closed the connection instead. */
static int ws_try_upgrade(uint16_t port)
{
	int fd = tcp_connect(port);
	const char *req = "GET /any/path HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
	                  "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	                  "Sec-WebSocket-Version: 13\r\n\r\n";
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		close(fd);
		return -1;
	}
	char head[2048];
	read_head(fd, head, sizeof(head));
	if (strstr(head, " 101 ") == NULL) {
		close(fd);
		return -1;
	}
	return fd;
}

static int ws_upgrade(uint16_t port)
{
	int fd = ws_try_upgrade(port);
	assert_true(fd >= 0);
	return fd;
}

/* One masked client frame: fin 0 = a fragment that more follow; opcode 2 binary, 1 text,
 * 0 continuation. */
static void ws_frame(int fd, int fin, int opcode, const uint8_t *p, size_t n)
{
	uint8_t h[14];
	size_t hl = 0;
	h[hl++] = (uint8_t)((fin ? 0x80 : 0) | opcode);
	if (n < 126) {
		h[hl++] = (uint8_t)(0x80 | n);
	} else if (n < 65536) {
		h[hl++] = 0x80 | 126;
		h[hl++] = (uint8_t)(n >> 8);
		h[hl++] = (uint8_t)n;
	} else {
		h[hl++] = 0x80 | 127;
		for (int i = 7; i >= 0; i--) {
			h[hl++] = (uint8_t)((uint64_t)n >> (8 * i));
		}
	}
	const uint8_t mask[4] = {0x12, 0x34, 0x56, 0x78};
	memcpy(h + hl, mask, 4);
	hl += 4;
	send_all(fd, h, hl);
	uint8_t *m = malloc(n + 1);
	assert_non_null(m);
	for (size_t i = 0; i < n; i++) {
		m[i] = p[i] ^ mask[i & 3];
	}
	send_all(fd, m, n);
	free(m);
}

/* One whole masked client message. */
static void ws_message(int fd, int opcode, const uint8_t *p, size_t n)
{
	ws_frame(fd, 1, opcode, p, n);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void hostile(uint16_t port, int opcode, const uint8_t *p, size_t n)
{
	int fd = ws_upgrade(port);
	ws_message(fd, opcode, p, n);
	char buf[4096];
	int closed = 0;
	read_until_close(fd, buf, sizeof(buf), &closed);
	close(fd);
	assert_true(closed);
}

static void test_hostile(void **state)
{
	(void)state;
	hako_endpoint_t *s =
	    ept_must_open("hs", SERVER_COMM ",\"options\":{\"max_body_bytes\":100000}}", 0, 0);
	uint16_t port = hako_endpoint_local_port(s);
	hako_endpoint_t *c = ept_must_open("hc", CLIENT_COMM, -1, port);
	EPT_WAIT_UNTIL(ept_stats(s).peers == 1);

	uint8_t good[400];
	hako_frame_t f;
	memset(&f, 0, sizeof(f));
	strcpy(f.robot, "raw");
	f.channel_id = 4;
	f.request_type = HAKO_FRAME_PDU_DATA;
	f.body = (const uint8_t *)"abcd";
	f.body_len = 4;
	size_t n = 0;
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V2, &f, good, sizeof(good), &n), 0);
	uint8_t bad[400];

	hostile(port, 2, (const uint8_t *)"garbage", 7);
	memcpy(bad, good, n);
	put_u32(bad + 128, 0xdeadbeefu); /* bad magic */
	hostile(port, 2, bad, n);
	memcpy(bad, good, n);
	put_u32(bad + 148, 0x80000000u); /* announces 2^31 bytes */
	put_u32(bad + 144, 172u + 0x80000000u);
	hostile(port, 2, bad, n);
	hostile(port, 1, good, n); /* a text message */
	/* A valid header (body 100000 bytes: the limit) in a message longer than that. */
	uint8_t *huge = calloc(1, 200000);
	assert_non_null(huge);
	memcpy(huge, good, HAKO_FRAME_V2_HEADER_SIZE);
	put_u32(huge + 148, 100000u);
	put_u32(huge + 144, 172u + 100000u);
	hostile(port, 2, huge, 200000);
	free(huge);
	EPT_WAIT_UNTIL(ept_stats(s).rejected == 5);
	assert_int_equal(ept_stats(s).rejected, 5);
	assert_int_equal(ept_stats(s).frames_in, 0);

	/* The good client goes on both ways; a raw session that behaves is a peer like any. */
	hako_pdu_key_t k = ept_key("good", 1);
	assert_int_equal(hako_endpoint_send(c, &k, "still", 5), 0);
	expect_pdu(s, &k, "still");
	EPT_WAIT_UNTIL(ept_stats(s).peers == 1);
	assert_int_equal(hako_endpoint_send(s, &k, "here", 4), 0);
	expect_pdu(c, &k, "here");
	int fd = ws_upgrade(port);
	ws_message(fd, 2, good, n);
	hako_pdu_key_t kr = ept_key("raw", 4);
	expect_pdu(s, &kr, "abcd");
	close(fd);
	assert_int_equal(ept_stats(s).rejected, 5);
	ept_close(c);
	ept_close(s);
}

static void http_get(uint16_t port, const char *path, char *head, size_t hcap, char *body,
                     size_t bcap, size_t *blen)
{
	int fd = tcp_connect(port);
	char req[512];
	snprintf(req, sizeof(req),
	         "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
	send_all(fd, req, strlen(req));
	read_head(fd, head, hcap);
	*blen = 0;
	const char *cl = strcasestr(head, "content-length:");
	if (cl != NULL && body != NULL) {
		size_t want = (size_t)strtoul(cl + 15, NULL, 10);
		int closed;
		*blen = read_until_close(fd, body, want < bcap ? want : bcap, &closed);
	}
	close(fd);
}

static void test_static(void **state)
{
	(void)state;
	char p[600];
	snprintf(p, sizeof(p), "%s/www", ept_dir());
	assert_int_equal(mkdir(p, 0755), 0);
	ept_write_file("www/index.html", "<html>hako index</html>\n");
	ept_write_file("www/data.txt", "some text data\n");
	ept_write_file("secret", "TOP SECRET\n");
	hako_endpoint_t *s =
	    ept_must_open("ss", SERVER_COMM ",\"options\":{\"static_dir\":\"www\"}}", 0, 0);
	uint16_t port = hako_endpoint_local_port(s);
	char head[4096], body[4096];
	size_t blen;

	http_get(port, "/data.txt", head, sizeof(head), body, sizeof(body), &blen);
	assert_non_null(strstr(head, " 200 "));
	assert_int_equal(blen, strlen("some text data\n"));
	assert_memory_equal(body, "some text data\n", blen);

	http_get(port, "/", head, sizeof(head), body, sizeof(body), &blen);
	assert_non_null(strstr(head, " 200 "));
	assert_int_equal(blen, strlen("<html>hako index</html>\n"));
	assert_memory_equal(body, "<html>hako index</html>\n", blen);

	http_get(port, "/missing.txt", head, sizeof(head), body, sizeof(body), &blen);
	assert_non_null(strstr(head, " 404 "));

	const char *trav[] = {"/../secret", "/%2e%2e/secret", "/www/../../secret", "/..%2fsecret"};
	for (size_t i = 0; i < sizeof(trav) / sizeof(trav[0]); i++) {
		memset(body, 0, sizeof(body));
		http_get(port, trav[i], head, sizeof(head), body, sizeof(body) - 1, &blen);
		assert_null(strstr(head, " 200 "));
		assert_null(strstr(body, "TOP SECRET"));
	}

	/* WebSocket upgrades on that port are still PDU sessions. */
	hako_endpoint_t *c = ept_must_open("sc", CLIENT_COMM, -1, port);
	EPT_WAIT_UNTIL(ept_stats(s).peers == 1);
	hako_pdu_key_t k = ept_key("web", 2);
	assert_int_equal(hako_endpoint_send(s, &k, "pdu", 3), 0);
	expect_pdu(c, &k, "pdu");
	ept_close(c);
	ept_close(s);

	/* Without static_dir: 404 for any HTTP request. */
	s = ept_must_open("ns", SERVER_COMM "}", 0, 0);
	http_get(hako_endpoint_local_port(s), "/", head, sizeof(head), NULL, 0, &blen);
	assert_non_null(strstr(head, " 404 "));
	ept_close(s);
}

static void test_queue_overflow_counted(void **state)
{
	(void)state;
	/* A raw session that never reads: sends queue (depth 4) and with blocking false (the
	 * opt-in) the oldest are dropped. */
	hako_endpoint_t *s = ept_must_open(
	    "qs", SERVER_COMM ",\"options\":{\"send_queue_depth\":4,\"blocking\":false}}", 0, 0);
	uint16_t port = hako_endpoint_local_port(s);
	int fd = ws_upgrade(port);
	int rcv = 4096;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	EPT_WAIT_UNTIL(ept_stats(s).peers == 1);
	uint8_t *buf = calloc(1, 1u << 20);
	assert_non_null(buf);
	hako_pdu_key_t k = ept_key("q", 1);
	for (int i = 0; i < 64; i++) {
		assert_int_equal(hako_endpoint_send(s, &k, buf, 1u << 20), 0);
	}
	EPT_WAIT_UNTIL(ept_stats(s).send_dropped > 0);
	hako_endpoint_stats_t st = ept_stats(s);
	assert_true(st.send_dropped > 0);
	assert_true(st.send_dropped + st.frames_out <= 64);
	free(buf);
	close(fd);
	ept_close(s);
}

typedef struct seq_check {
	atomic_uint count;
	atomic_int bad;
} seq_check_t;

static void on_seq(void *user, const hako_pdu_key_t *k, const void *data, size_t len)
{
	(void)k;
	seq_check_t *sc = user;
	uint32_t v = 0;
	if (len != 64) {
		atomic_store(&sc->bad, 1);
		return;
	}
	memcpy(&v, data, sizeof(v));
	unsigned n = atomic_load(&sc->count);
	if (v != n) {
		atomic_store(&sc->bad, 1);
	}
	atomic_store(&sc->count, n + 1);
}

/* A burst with the default options arrives whole and in order: a full queue waits for the
 * service thread (blocking, as tcp's) instead of dropping the oldest. */
static void test_burst_10000(void **state)
{
	(void)state;
	hako_endpoint_t *s = ept_must_open("bs", SERVER_COMM "}", 0, 0);
	hako_endpoint_t *c = ept_must_open("bc", CLIENT_COMM, -1, hako_endpoint_local_port(s));
	EPT_WAIT_UNTIL(ept_stats(s).peers == 1 && ept_stats(c).peers == 1);
	seq_check_t sc;
	atomic_init(&sc.count, 0);
	atomic_init(&sc.bad, 0);
	hako_pdu_key_t k = ept_key("burst", 3);
	assert_int_equal(hako_endpoint_subscribe(c, &k, on_seq, &sc, NULL), 0);
	uint8_t pdu[64];
	memset(pdu, 0xA5, sizeof(pdu));
	for (uint32_t i = 0; i < 10000; i++) {
		memcpy(pdu, &i, sizeof(i));
		assert_int_equal(hako_endpoint_send(s, &k, pdu, sizeof(pdu)), 0);
	}
	EPT_WAIT_UNTIL(atomic_load(&sc.count) == 10000);
	assert_int_equal(atomic_load(&sc.count), 10000);
	assert_int_equal(atomic_load(&sc.bad), 0);
	EPT_WAIT_UNTIL(ept_stats(s).frames_out == 10000);
	assert_int_equal(ept_stats(s).frames_out, 10000);
	assert_int_equal(ept_stats(s).send_dropped, 0);
	assert_int_equal(ept_stats(c).frames_in, 10000);
}

/* Blocking: a session that never reads has its send waited for up to write_timeout_ms, then
 * it is closed as stuck (counted), and sends say ENOTCONN. */
static void test_stuck_session_blocking(void **state)
{
	(void)state;
	hako_endpoint_t *s = ept_must_open(
	    "ks", SERVER_COMM ",\"options\":{\"send_queue_depth\":2,\"write_timeout_ms\":100}}", 0,
	    0);
	int fd = ws_upgrade(hako_endpoint_local_port(s));
	int rcv = 4096;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	EPT_WAIT_UNTIL(ept_stats(s).peers == 1);
	uint8_t *buf = calloc(1, 1u << 20);
	assert_non_null(buf);
	hako_pdu_key_t k = ept_key("k", 1);
	int r = 0;
	for (int i = 0; i < 1000 && r == 0; i++) {
		r = hako_endpoint_send(s, &k, buf, 1u << 20);
	}
	free(buf);
	assert_int_equal(r, HAKO_ENOTCONN);
	EPT_WAIT_UNTIL(ept_stats(s).peers == 0);
	assert_int_equal(ept_stats(s).peers, 0);
	assert_int_equal(ept_stats(s).disconnects, 1);
	assert_true(ept_stats(s).send_dropped >= 1);
	close(fd);
}

/* max_clients: a connection over it is closed as it is accepted (rejected, no upgrade); a
 * place that frees is taken again. */
static void test_max_clients(void **state)
{
	(void)state;
	hako_endpoint_t *s =
	    ept_must_open("ms", SERVER_COMM ",\"options\":{\"max_clients\":2}}", 0, 0);
	uint16_t port = hako_endpoint_local_port(s);
	int a = ws_upgrade(port);
	int b = ws_upgrade(port);
	EPT_WAIT_UNTIL(ept_stats(s).peers == 2);
	assert_int_equal(ws_try_upgrade(port), -1);
	EPT_WAIT_UNTIL(ept_stats(s).rejected == 1);
	assert_int_equal(ept_stats(s).rejected, 1);
	assert_int_equal(ept_stats(s).peers, 2);
	close(a);
	EPT_WAIT_UNTIL(ept_stats(s).peers == 1);
	hako_endpoint_t *c = ept_must_open("mc", CLIENT_COMM, -1, port);
	EPT_WAIT_UNTIL(ept_stats(s).peers == 2 && ept_stats(c).peers == 1);
	hako_pdu_key_t k = ept_key("m", 1);
	assert_int_equal(hako_endpoint_send(c, &k, "in", 2), 0);
	expect_pdu(s, &k, "in");
	assert_int_equal(ept_stats(s).rejected, 1);
	close(b);
}

/* A v2 header announcing body bytes. */
static size_t announce(uint8_t *buf, size_t cap, uint32_t body)
{
	hako_frame_t f;
	memset(&f, 0, sizeof(f));
	strcpy(f.robot, "slow");
	f.request_type = HAKO_FRAME_PDU_DATA;
	size_t n = 0;
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V2, &f, buf, cap, &n), 0);
	put_u32(buf + 144, 172u + body);
	put_u32(buf + 148, body);
	return n;
}

/* read_timeout_ms: a message begun (a non-final fragment) and then nothing closes that
 * session; a session with no message begun is kept. */
static void test_read_timeout(void **state)
{
	(void)state;
	hako_endpoint_t *s =
	    ept_must_open("rs", SERVER_COMM ",\"options\":{\"read_timeout_ms\":200}}", 0, 0);
	uint16_t port = hako_endpoint_local_port(s);
	hako_endpoint_t *c = ept_must_open("rc", CLIENT_COMM, -1, port);
	int fd = ws_upgrade(port);
	EPT_WAIT_UNTIL(ept_stats(s).peers == 2);
	uint8_t frag[1024] = {0};
	announce(frag, sizeof(frag), 100000);
	ws_frame(fd, 0, 2, frag, sizeof(frag));
	char buf[256];
	int closed = 0;
	read_until_close(fd, buf, sizeof(buf), &closed);
	close(fd);
	assert_true(closed);
	EPT_WAIT_UNTIL(ept_stats(s).peers == 1);
	assert_int_equal(ept_stats(s).peers, 1);
	assert_int_equal(ept_stats(s).disconnects, 1);
	assert_int_equal(ept_stats(s).frames_in, 0);
	hako_pdu_key_t k = ept_key("idle", 1);
	assert_int_equal(hako_endpoint_send(s, &k, "kept", 4), 0);
	expect_pdu(c, &k, "kept");
}

/* frame_timeout_ms: a message that trickles in (a 1-byte fragment every few ms, so
 * read_timeout_ms would never fire) is dropped that long after its first bytes. */
static void test_frame_timeout(void **state)
{
	(void)state;
	hako_endpoint_t *s = ept_must_open(
	    "fs", SERVER_COMM ",\"options\":{\"read_timeout_ms\":0,\"frame_timeout_ms\":300}}", 0,
	    0);
	int fd = ws_upgrade(hako_endpoint_local_port(s));
	EPT_WAIT_UNTIL(ept_stats(s).peers == 1);
	uint8_t hdr[HAKO_FRAME_V2_HEADER_SIZE];
	announce(hdr, sizeof(hdr), 4096);
	ws_frame(fd, 0, 2, hdr, sizeof(hdr));
	int closed = 0;
	uint64_t end = ept_now_ms() + EPT_WAIT_MS;
	while (!closed && ept_now_ms() < end) {
		uint8_t m[7] = {0x00, 0x81, 1, 2, 3, 4, 'x' ^ 1}; /* continuation, masked, 1 byte */
		if (send(fd, m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
			closed = 1;
			break;
		}
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 20) > 0) {
			char b[64];
			ssize_t r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
			closed = r >= 0 || errno != EAGAIN; /* EOF, a reset, or a close frame */
		}
	}
	close(fd);
	assert_true(closed);
	EPT_WAIT_UNTIL(ept_stats(s).peers == 0);
	assert_int_equal(ept_stats(s).disconnects, 1);
	assert_int_equal(ept_stats(s).frames_in, 0);
}

static int connect_to(const char *ip, uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	int r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return r;
}

/* A server without local.address listens on loopback only (127.0.0.2 is loopback too but not
 * the bound address); "0.0.0.0" in the file listens everywhere. */
static void test_bind_loopback_default(void **state)
{
	(void)state;
	hako_endpoint_t *s = ept_must_open("ls",
	                                   "{\"protocol\":\"websocket\",\"role\":\"server\","
	                                   "\"local\":{\"port\":0}}",
	                                   0, 0);
	uint16_t port = hako_endpoint_local_port(s);
	assert_int_equal(connect_to("127.0.0.1", port), 0);
	assert_int_equal(connect_to("127.0.0.2", port), -1);
	assert_int_equal(errno, ECONNREFUSED);
	ept_close(s);
	s = ept_must_open("as",
	                  "{\"protocol\":\"websocket\",\"role\":\"server\","
	                  "\"local\":{\"address\":\"0.0.0.0\",\"port\":0}}",
	                  0, 0);
	assert_int_equal(connect_to("127.0.0.2", hako_endpoint_local_port(s)), 0);
	ept_close(s);
}

/* v1 in a WebSocket message, as Hakoniwa's clients write it: the Python and JavaScript ones
 * with header_len = name_len + 8 and the body after it (the body runs to the message's end),
 * the C++ one with the body counted in header_len. Both arrive; a header_len longer than the
 * message is refused. */
static size_t v1_message(uint8_t *m, uint32_t header_len, const char *name, uint32_t ch,
                         const char *body)
{
	size_t nl = strlen(name), bl = strlen(body);
	put_u32(m, header_len);
	put_u32(m + 4, (uint32_t)nl);
	memcpy(m + 8, name, nl);
	put_u32(m + 8 + nl, ch);
	memcpy(m + 12 + nl, body, bl);
	return 12 + nl + bl;
}

static void test_v1_message(void **state)
{
	(void)state;
	hako_endpoint_t *s =
	    ept_must_open("srv", SERVER_COMM ",\"comm_raw_version\":\"v1\"}", 0, 0);
	uint16_t port = hako_endpoint_local_port(s);
	hako_pdu_key_t k = ept_key("Drone", 3);
	uint8_t m[128];
	int fd = ws_upgrade(port);
	/* Python / JavaScript: header_len = 4 + 5 + 4 */
	ws_message(fd, 2, m, v1_message(m, 13, "Drone", 3, "from python"));
	expect_pdu(s, &k, "from python");
	/* C++: header_len covers the body too */
	ws_message(fd, 2, m, v1_message(m, 13 + 8, "Drone", 3, "from c++"));
	expect_pdu(s, &k, "from c++");
	assert_int_equal(ept_stats(s).rejected, 0);
	/* header_len beyond the message: refused, the session closed */
	ws_message(fd, 2, m, v1_message(m, 200, "Drone", 3, "short"));
	char buf[256];
	int closed = 0;
	read_until_close(fd, buf, sizeof(buf), &closed);
	close(fd);
	assert_true(closed);
	EPT_WAIT_UNTIL(ept_stats(s).rejected == 1);
	assert_int_equal(ept_stats(s).rejected, 1);
}

/* hakoniwa-pdu-python's v1 declarations (declare_pdu_for_read / _write): a v1 message whose body
 * is the magic, "DPER" or "DPPW". They are declarations, not PDUs: before, the queue cache took
 * them as 4-byte PDUs of the key, around the real 72-byte one (and a latest cache, or a bridge
 * forwarding the key, had the 72-byte Twist overwritten with 4 bytes). */
static void test_v1_declare(void **state)
{
	(void)state;
	hako_endpoint_t *s =
	    ept_must_open("srv", SERVER_COMM ",\"comm_raw_version\":\"v1\"}", 0, 0);
	hako_pdu_key_t k = ept_key("Drone", 3);
	uint8_t m[128];
	char twist[73];
	memset(twist, 'T', 72);
	twist[72] = '\0';
	int fd = ws_upgrade(hako_endpoint_local_port(s));
	ws_message(fd, 2, m, v1_message(m, 13, "Drone", 3, "DPER"));
	ws_message(fd, 2, m, v1_message(m, 13, "Drone", 3, twist));
	ws_message(fd, 2, m, v1_message(m, 13, "Drone", 3, "DPPW"));
	EPT_WAIT_FOR(ept_stats(s).recv_ignored == 2);
	assert_int_equal(ept_stats(s).frames_in, 1);
	expect_pdu(s, &k, twist); /* the first and only PDU of the key */
	char buf[128];
	size_t len = 0;
	assert_int_equal(hako_endpoint_recv(s, &k, buf, sizeof(buf), &len), HAKO_EAGAIN);
	assert_int_equal(ept_stats(s).rejected, 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_two_clients, ept_close_all),
	    cmocka_unit_test_teardown(test_reconnect, ept_close_all),
	    cmocka_unit_test_teardown(test_port_busy, ept_close_all),
	    cmocka_unit_test_teardown(test_hostile, ept_close_all),
	    cmocka_unit_test_teardown(test_static, ept_close_all),
	    cmocka_unit_test_teardown(test_queue_overflow_counted, ept_close_all),
	    cmocka_unit_test_teardown(test_burst_10000, ept_close_all),
	    cmocka_unit_test_teardown(test_stuck_session_blocking, ept_close_all),
	    cmocka_unit_test_teardown(test_max_clients, ept_close_all),
	    cmocka_unit_test_teardown(test_read_timeout, ept_close_all),
	    cmocka_unit_test_teardown(test_frame_timeout, ept_close_all),
	    cmocka_unit_test_teardown(test_bind_loopback_default, ept_close_all),
	    cmocka_unit_test_teardown(test_v1_message, ept_close_all),
	    cmocka_unit_test_teardown(test_v1_declare, ept_close_all),
	};
	return cmocka_run_group_tests(tests, ept_group_setup, ept_group_teardown);
}
