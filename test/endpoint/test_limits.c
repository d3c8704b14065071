/* Memory held by slow peers is bounded across connections (pdu-endpoint/src/comm_tcp*.c,
 * comm_ws.c): 200 hostile peers against one server with the default limits, and the resident
 * memory of this process (server included) stays under baseline + RSS_BOUND; a good client is
 * served afterwards.
 *  - tcp: each peer announces a frame of 15 MiB and sends 2 MiB of it, then nothing;
 *  - websocket: each session sends 2 MiB of non-final fragments of a message that announces
 *    15 MiB, then nothing.
 * read_timeout_ms is 0 (no stall timeout, Hakoniwa's recommended setting) so that what bounds
 * the memory here is max_clients and max_buffered_bytes, not how fast a timer fires.
 *
 * "Sent" must mean "read by the server": the peers' send buffers are small and so is the tcp
 * server's receive buffer (recv_buffer_size), so a peer that has written its 2 MiB had the
 * server read all but ~160 KiB of it; a websocket peer ends with a PING and waits for the PONG,
 * which lws sends only after it has read (and handed us) everything before the PING. */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
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

#define NPEERS     200
#define SENT_BYTES (2u << 20)  /* body bytes each hostile peer sends */
#define ANNOUNCED  (15u << 20) /* the body its frame header announces */
#define FRAGMENT   (256u << 10)
/* Unbounded, the 200 peers below would hold 400-800 MiB (2 MiB each, in buffers that double);
 * bounded, the server holds at most max_buffered_bytes (64 MiB) + max_clients x 128 KiB. The
 * rest of the bound is room for the allocator (freed buffers it keeps resident). */
#define RSS_BOUND    (192u << 20)
#define PEER_SNDBUF  16384
#define PUMP_WAIT_MS 60000

/* ASan keeps freed blocks in a quarantine (256 MiB by default) that stays resident: it would
 * count every buffer the server freed. A small quarantine keeps RSS about what is held. */
#if defined(__SANITIZE_ADDRESS__)
#define HAKO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAKO_ASAN 1
#endif
#endif
#ifdef HAKO_ASAN
/* Exported: the project builds with -fvisibility=hidden, and the ASan runtime (a shared
 * library) only sees this hook in the dynamic symbol table. */
__attribute__((visibility("default"))) const char *__asan_default_options(void);
__attribute__((visibility("default"))) const char *__asan_default_options(void)
{
	return "quarantine_size_mb=16";
}
#endif

#define TCP_SERVER                                                                                 \
	"{\"protocol\":\"tcp\",\"role\":\"server\",\"direction\":\"inout\","                       \
	"\"local\":{\"address\":\"127.0.0.1\",\"port\":LPORT},"                                    \
	"\"options\":{\"read_timeout_ms\":0,\"recv_buffer_size\":65536}}"
#define TCP_CLIENT                                                                                 \
	"{\"protocol\":\"tcp\",\"role\":\"client\",\"direction\":\"inout\","                       \
	"\"remote\":{\"address\":\"127.0.0.1\",\"port\":RPORT}}"
#define WS_SERVER                                                                                  \
	"{\"protocol\":\"websocket\",\"role\":\"server\",\"direction\":\"inout\","                 \
	"\"local\":{\"address\":\"127.0.0.1\",\"port\":LPORT},\"options\":{\"read_timeout_ms\":0}" \
	"}"
#define WS_CLIENT                                                                                  \
	"{\"protocol\":\"websocket\",\"role\":\"client\",\"direction\":\"inout\","                 \
	"\"remote\":{\"host\":\"127.0.0.1\",\"port\":RPORT,\"path\":\"/\"}}"

enum { H_SENDING, H_SENT, H_CLOSED };

typedef struct hostile {
	int fd;
	size_t off; /* bytes of the stream sent */
	int state;
} hostile_t;

static hostile_t g_h[NPEERS];

static int close_hostiles(void **state)
{
	for (int i = 0; i < NPEERS; i++) {
		if (g_h[i].fd > 0) {
			close(g_h[i].fd);
		}
		g_h[i].fd = -1;
	}
	return ept_close_all(state);
}

/* ---- memory of this process ---- */

static size_t rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	assert_non_null(f);
	unsigned long size = 0, res = 0;
	assert_int_equal(fscanf(f, "%lu %lu", &size, &res), 2);
	fclose(f);
	return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

/* Reset the peak (VmHWM) to the current RSS; 0 if the kernel allows it. */
static int peak_reset(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);
	if (fd < 0) {
		return -1;
	}
	int ok = write(fd, "5", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

static size_t peak_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	assert_non_null(f);
	char line[256];
	size_t kb = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "VmHWM: %zu kB", &kb) == 1) {
			break;
		}
	}
	fclose(f);
	return kb * 1024u;
}

/* The growth over baseline: the peak since peak_reset when it worked, else the current RSS. */
static size_t grown(size_t baseline, int have_peak)
{
	size_t now = rss_bytes();
	size_t top = have_peak ? peak_bytes() : now;
	if (top < now) {
		top = now;
	}
	return top > baseline ? top - baseline : 0;
}

/* ---- hostile peers ---- */

static int connect_small(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	int sb = PEER_SNDBUF;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		fail_msg("connect to 127.0.0.1:%u: %s", (unsigned)port, strerror(errno));
	}
	return fd;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL, 0);
	assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

/* Write stream to every peer still H_SENDING until each has written it all or was closed by
 * the server (a send error: its RST). */
static void pump(const uint8_t *stream, size_t len)
{
	struct pollfd pfd[NPEERS];
	int who[NPEERS];
	uint64_t end = ept_now_ms() + PUMP_WAIT_MS;
	for (;;) {
		int n = 0;
		for (int i = 0; i < NPEERS; i++) {
			if (g_h[i].state == H_SENDING) {
				pfd[n] = (struct pollfd){.fd = g_h[i].fd, .events = POLLOUT};
				who[n++] = i;
			}
		}
		if (n == 0) {
			return;
		}
		if (ept_now_ms() >= end) {
			fail_msg("%d peers still had bytes to write after %d ms", n, PUMP_WAIT_MS);
		}
		if (poll(pfd, (nfds_t)n, 100) <= 0) {
			continue;
		}
		for (int j = 0; j < n; j++) {
			hostile_t *h = &g_h[who[j]];
			if (pfd[j].revents == 0) {
				continue;
			}
			ssize_t w =
			    send(h->fd, stream + h->off, len - h->off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0) {
				h->off += (size_t)w;
				if (h->off == len) {
					h->state = H_SENT;
				}
			} else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
			           errno != EINTR) {
				h->state = H_CLOSED;
			}
		}
	}
}

static void count_states(int *sent, int *closed)
{
	*sent = *closed = 0;
	for (int i = 0; i < NPEERS; i++) {
		*sent += g_h[i].state == H_SENT;
		*closed += g_h[i].state == H_CLOSED;
	}
}

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* A v2 header announcing ANNOUNCED body bytes. */
static void announce(uint8_t *hdr)
{
	hako_frame_t f;
	memset(&f, 0, sizeof(f));
	snprintf(f.robot, sizeof(f.robot), "slow");
	f.request_type = HAKO_FRAME_PDU_DATA;
	size_t n = 0;
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V2, &f, hdr, HAKO_FRAME_V2_HEADER_SIZE, &n),
	                 0);
	assert_int_equal(n, HAKO_FRAME_V2_HEADER_SIZE);
	put_u32(hdr + 144, 172u + ANNOUNCED); /* total_len */
	put_u32(hdr + 148, ANNOUNCED);        /* body_len */
}

static void report(const char *what, size_t delta, const hako_endpoint_stats_t *st)
{
	printf("%s: %d hostile peers: resident memory +%.1f MiB (bound %u MiB); server: peers %u, "
	       "accepted %llu, rejected %llu, disconnects %llu\n",
	       what, NPEERS, (double)delta / (1024.0 * 1024.0), RSS_BOUND >> 20,
	       (unsigned)st->peers, (unsigned long long)st->accepted,
	       (unsigned long long)st->rejected, (unsigned long long)st->disconnects);
	fflush(stdout);
}

static void check_bound(const char *when, size_t delta)
{
	if (delta >= RSS_BOUND) {
		fail_msg("%s: resident memory grew by %.1f MiB, the bound is %u MiB", when,
		         (double)delta / (1024.0 * 1024.0), RSS_BOUND >> 20);
	}
}

/* One PDU each way between a good client and the server, each side told what went wrong. */
static void exchange(hako_endpoint_t *srv, hako_endpoint_t *cli)
{
	hako_pdu_key_t k = ept_key("good", 1);
	const char *msg[2] = {"to server", "to client"};
	hako_endpoint_t *from[2] = {cli, srv}, *to[2] = {srv, cli};
	for (int i = 0; i < 2; i++) {
		char got[64];
		size_t len = 0;
		int rc = hako_endpoint_send(from[i], &k, msg[i], 9);
		if (rc != 0) {
			hako_endpoint_stats_t st = ept_stats(srv);
			fail_msg(
			    "good client, %s: send failed (%d); server peers %u, rejected %llu",
			    msg[i], rc, (unsigned)st.peers, (unsigned long long)st.rejected);
		}
		rc = ept_recv_wait(to[i], &k, got, sizeof(got), &len);
		if (rc != 0) {
			hako_endpoint_stats_t st = ept_stats(srv);
			fail_msg("good client, %s: nothing received (%d); server peers %u, "
			         "rejected %llu",
			         msg[i], rc, (unsigned)st.peers, (unsigned long long)st.rejected);
		}
		assert_int_equal(len, 9);
		assert_memory_equal(got, msg[i], 9);
	}
}

static void test_tcp_slow_peers(void **state)
{
	(void)state;
	hako_endpoint_t *srv = ept_must_open("tsrv", TCP_SERVER, 0, 0);
	uint16_t port = hako_endpoint_local_port(srv);
	size_t len = HAKO_FRAME_V2_HEADER_SIZE + SENT_BYTES;
	uint8_t *stream = calloc(1, len);
	assert_non_null(stream);
	announce(stream);
	size_t baseline = rss_bytes();
	int have_peak = peak_reset() == 0 && peak_bytes() > 0;

	for (int i = 0; i < NPEERS; i++) {
		g_h[i] = (hostile_t){.fd = connect_small(port), .state = H_SENDING};
		set_nonblock(g_h[i].fd);
	}
	pump(stream, len);
	free(stream);
	size_t delta = grown(baseline, have_peak);
	int sent, closed;
	count_states(&sent, &closed);
	hako_endpoint_stats_t st = ept_stats(srv);
	report("tcp", delta, &st);
	printf("tcp: %d peers wrote their 2 MiB, %d were closed by the server\n", sent, closed);
	fflush(stdout);
	check_bound("tcp, after the hostile peers", delta);

	/* Still serving: a good client while the hostile peers are connected. */
	hako_endpoint_t *cli = ept_must_open("tcli", TCP_CLIENT, -1, port);
	EPT_WAIT_UNTIL(ept_stats(cli).peers == 1);
	exchange(srv, cli);
	check_bound("tcp, after the good client", grown(baseline, have_peak));
}

/* ---- websocket ---- */

static int ws_upgrade(uint16_t port)
{
	int fd = connect_small(port);
	const char *req = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
	                  "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	                  "Sec-WebSocket-Version: 13\r\n\r\n";
	size_t rl = strlen(req);
	if (send(fd, req, rl, MSG_NOSIGNAL) != (ssize_t)rl) {
		close(fd);
		return -1;
	}
	/* The response head, byte by byte (nothing of the stream after it is consumed). */
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
			break; /* refused: closed at once */
		}
		head[++n] = '\0';
	}
	if (strstr(head, " 101 ") == NULL) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A masked client frame header + payload into out; returns its length. */
static size_t ws_frame(uint8_t *out, int fin, int opcode, const uint8_t *p, size_t n)
{
	static const uint8_t mask[4] = {0x12, 0x34, 0x56, 0x78};
	size_t hl = 0;
	out[hl++] = (uint8_t)((fin ? 0x80 : 0) | opcode);
	if (n < 126) {
		out[hl++] = (uint8_t)(0x80 | n);
	} else if (n < 65536) {
		out[hl++] = 0x80 | 126;
		out[hl++] = (uint8_t)(n >> 8);
		out[hl++] = (uint8_t)n;
	} else {
		out[hl++] = 0x80 | 127;
		for (int i = 7; i >= 0; i--) {
			out[hl++] = (uint8_t)((uint64_t)n >> (8 * i));
		}
	}
	memcpy(out + hl, mask, 4);
	hl += 4;
	for (size_t i = 0; i < n; i++) {
		out[hl + i] = p[i] ^ mask[i & 3];
	}
	return hl + n;
}

/* Wait for each peer that wrote its stream: a PONG (the server read everything before its
 * PING), or the connection closed (a close frame, EOF, a reset). */
static void await_pongs(void)
{
	uint64_t end = ept_now_ms() + PUMP_WAIT_MS;
	for (int i = 0; i < NPEERS; i++) {
		hostile_t *h = &g_h[i];
		uint8_t buf[4096];
		size_t have = 0;
		int ponged = 0;
		while (h->state == H_SENT && !ponged) {
			if (ept_now_ms() >= end) {
				fail_msg("session %d: no PONG after %d ms", i, PUMP_WAIT_MS);
			}
			struct pollfd p = {.fd = h->fd, .events = POLLIN};
			if (poll(&p, 1, 100) <= 0) {
				continue;
			}
			ssize_t r = recv(h->fd, buf + have, sizeof(buf) - have, MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
				h->state = H_CLOSED;
				break;
			}
			if (r < 0) {
				continue;
			}
			have += (size_t)r;
			/* Server frames are unmasked with short payloads here. */
			while (have >= 2 && have >= 2u + (buf[1] & 0x7f)) {
				size_t fl = 2u + (buf[1] & 0x7f);
				int op = buf[0] & 0x0f;
				if (op == 0xA) {
					ponged = 1;
				} else if (op == 0x8) {
					h->state = H_CLOSED;
				}
				memmove(buf, buf + fl, have - fl);
				have -= fl;
			}
			assert_true(have < sizeof(buf));
		}
	}
}

static void test_ws_silent_sessions(void **state)
{
	(void)state;
	hako_endpoint_t *srv = ept_must_open("wsrv", WS_SERVER, 0, 0);
	uint16_t port = hako_endpoint_local_port(srv);
	/* The stream: a message announcing 15 MiB in FRAGMENT-sized non-final fragments up to
	 * SENT_BYTES, then a PING. */
	size_t cap = SENT_BYTES + (SENT_BYTES / FRAGMENT + 2) * 16;
	uint8_t *stream = malloc(cap), *payload = calloc(1, FRAGMENT);
	assert_non_null(stream);
	assert_non_null(payload);
	announce(payload);
	size_t len = 0;
	for (size_t sent = 0; sent < SENT_BYTES; sent += FRAGMENT) {
		len += ws_frame(stream + len, 0, sent == 0 ? 2 : 0, payload, FRAGMENT);
		memset(payload, 0, HAKO_FRAME_V2_HEADER_SIZE);
	}
	len += ws_frame(stream + len, 1, 9, (const uint8_t *)"sync", 4);
	assert_true(len <= cap);
	free(payload);
	size_t baseline = rss_bytes();
	int have_peak = peak_reset() == 0 && peak_bytes() > 0;

	int refused = 0;
	for (int i = 0; i < NPEERS; i++) {
		int fd = ws_upgrade(port);
		g_h[i] = (hostile_t){.fd = fd, .state = fd >= 0 ? H_SENDING : H_CLOSED};
		refused += fd < 0;
		if (fd >= 0) {
			set_nonblock(fd);
		}
	}
	pump(stream, len);
	free(stream);
	await_pongs();
	size_t delta = grown(baseline, have_peak);
	int sent, closed;
	count_states(&sent, &closed);
	hako_endpoint_stats_t st = ept_stats(srv);
	report("websocket", delta, &st);
	printf("websocket: %d sessions refused at the upgrade, %d wrote 2 MiB and are still "
	       "open, %d were closed by the server\n",
	       refused, sent, closed - refused);
	fflush(stdout);
	check_bound("websocket, after the hostile sessions", delta);

	hako_endpoint_t *cli = ept_must_open("wcli", WS_CLIENT, -1, port);
	EPT_WAIT_UNTIL(ept_stats(cli).peers == 1);
	exchange(srv, cli);
	check_bound("websocket, after the good client", grown(baseline, have_peak));
}

int main(void)
{
	for (int i = 0; i < NPEERS; i++) {
		g_h[i].fd = -1;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_tcp_slow_peers, close_hostiles),
	    cmocka_unit_test_teardown(test_ws_silent_sessions, close_hostiles),
	};
	/* 200 peers are 400 descriptors in this process (both ends). */
	return cmocka_run_group_tests_name("endpoint.limits", tests, ept_group_setup_many_fds,
	                                   ept_group_teardown);
}
