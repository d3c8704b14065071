/* viewer-probe: the client side of the hako-viewer tests, on plain sockets (so that it can send
 * what a browser never would, and stop reading when told).
 *
 *   get PORT PATH               HTTP GET PATH as is; prints "status N" and the body
 *   state PORT                  the first JSON state message of a WebSocket session
 *   cmd PORT JSON               send a text message, print the reply
 *   send PORT BYTES             send a text message of BYTES bytes; "closed CODE" or "open"
 *   v2read PORT ROBOT CHANNEL   DECLARE_READ as a Hakoniwa client; prints the PDU_DATA frame
 *   stall PORT SECONDS          open a session and never read from it
 *   load PORT SESSIONS SECONDS [DOMAIN [ROUNDS]]
 *                               the real-time factor of DOMAIN with no session and with
 *                               SESSIONS reading ones, interleaved (a benchmark, not a test);
 *                               a session asks what a page does: half of them the dashboard
 *                               (the values of the first 50 channels, the RD part), half the
 *                               map (the positions)
 *   fox-load PORT SESSIONS SECONDS [DOMAIN [ROUNDS [DRONES]]]
 *                               as load, with Foxglove sessions (foxglove.websocket.v1) each
 *                               subscribed to every channel whose topic ends in /pos (DRONES
 *                               of them, default 256) and reading everything
 *   twist DOMAIN ROBOTS SECONDS  write geometry_msgs/Twist PDUs Drone1..N/0 moving on circles
 *                               (the map's demo data; not an asset, paced by the wall clock)
 *   cdp DEVTOOLS_PORT URL UNTIL TIMEOUT_S [DOM_FILE [PNG_FILE]]
 *                               drive a headless Chromium over its DevTools protocol: open URL,
 *                               wait until the JavaScript expression UNTIL is true, save the
 *                               DOM and a screenshot
 * Exit status: 0 done, 1 failed (said why on stderr), 2 usage.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "hako/domain.h"
#include "hako/frame.h"

static int die(const char *fmt, const char *arg)
{
	fprintf(stderr, "viewer-probe: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	return 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int tcp_connect(int port, int rcvbuf)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		return -1;
	}
	if (rcvbuf > 0) {
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n <= 0) {
			if (n < 0 && errno == EINTR) {
				continue;
			}
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_full(int fd, void *buf, size_t len, int timeout_ms)
{
	char *p = buf;
	while (len > 0) {
		struct pollfd pf = {fd, POLLIN, 0};
		if (poll(&pf, 1, timeout_ms) <= 0) {
			return -1;
		}
		ssize_t n = recv(fd, p, len, 0);
		if (n <= 0) {
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- HTTP ---- */

static char *http_get(int port, const char *path, int *status)
{
	int fd = tcp_connect(port, 0);
	if (fd < 0) {
		return NULL;
	}
	char req[2048];
	snprintf(req, sizeof(req),
	         "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", path, port);
	if (write_all(fd, req, strlen(req)) != 0) {
		close(fd);
		return NULL;
	}
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		struct pollfd pf = {fd, POLLIN, 0};
		if (poll(&pf, 1, 5000) <= 0) {
			break;
		}
		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
		ssize_t n = recv(fd, buf + len, cap - len, 0);
		if (n <= 0) {
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*status = 0;
	sscanf(buf, "HTTP/1.%*d %d", status);
	return buf;
}

/* ---- WebSocket (RFC 6455 client: masked frames out, unfragmented frames in) ---- */

/* A WebSocket session; proto: the subprotocol to ask for, NULL none. */
static int ws_open_proto(int port, const char *path, int rcvbuf, const char *proto)
{
	int fd = tcp_connect(port, rcvbuf);
	if (fd < 0) {
		return -1;
	}
	char req[2048], extra[256] = "";
	if (proto != NULL) {
		snprintf(extra, sizeof(extra), "Sec-WebSocket-Protocol: %s\r\n", proto);
	}
	snprintf(req, sizeof(req),
	         "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
	         "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	         "Sec-WebSocket-Version: 13\r\n%s\r\n",
	         path, port, extra);
	if (write_all(fd, req, strlen(req)) != 0) {
		close(fd);
		return -1;
	}
	/* The response ends with an empty line; read it byte by byte, frames may follow it. */
	char resp[4096];
	size_t n = 0;
	while (n + 1 < sizeof(resp)) {
		if (read_full(fd, resp + n, 1, 5000) != 0) {
			close(fd);
			return -1;
		}
		n++;
		if (n >= 4 && memcmp(resp + n - 4, "\r\n\r\n", 4) == 0) {
			break;
		}
	}
	resp[n] = '\0';
	if (strncmp(resp, "HTTP/1.1 101", 12) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int ws_open(int port, const char *path, int rcvbuf)
{
	return ws_open_proto(port, path, rcvbuf, NULL);
}

static int ws_send(int fd, int opcode, const void *data, size_t len)
{
	uint8_t h[14];
	size_t hl = 2;
	h[0] = (uint8_t)(0x80 | opcode);
	if (len < 126) {
		h[1] = (uint8_t)(0x80 | len);
	} else if (len < 65536) {
		h[1] = 0x80 | 126;
		h[2] = (uint8_t)(len >> 8);
		h[3] = (uint8_t)len;
		hl = 4;
	} else {
		h[1] = 0x80 | 127;
		for (int i = 0; i < 8; i++) {
			h[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
		}
		hl = 10;
	}
	static const uint8_t mask[4] = {0x12, 0x34, 0x56, 0x78};
	memcpy(h + hl, mask, 4);
	hl += 4;
	uint8_t *m = malloc(len ? len : 1);
	for (size_t i = 0; i < len; i++) {
		m[i] = ((const uint8_t *)data)[i] ^ mask[i % 4];
	}
	int r = write_all(fd, h, hl) != 0 || write_all(fd, m, len) != 0 ? -1 : 0;
	free(m);
	return r;
}

/* One message: its opcode (1 text, 2 binary, 8 close), malloc'd payload (NUL-terminated). */
static int ws_recv(int fd, int *opcode, uint8_t **out, size_t *len, int timeout_ms)
{
	for (;;) {
		uint8_t h[2];
		if (read_full(fd, h, 2, timeout_ms) != 0) {
			return -1;
		}
		uint64_t n = h[1] & 0x7f;
		if (n == 126 || n == 127) {
			uint8_t e[8];
			size_t el = n == 126 ? 2 : 8;
			if (read_full(fd, e, el, timeout_ms) != 0) {
				return -1;
			}
			n = 0;
			for (size_t i = 0; i < el; i++) {
				n = n << 8 | e[i];
			}
		}
		if (n > (256u << 20)) {
			return -1;
		}
		uint8_t *p = malloc((size_t)n + 1);
		if (p == NULL || read_full(fd, p, (size_t)n, timeout_ms) != 0) {
			free(p);
			return -1;
		}
		p[n] = '\0';
		int op = h[0] & 0x0f;
		if (op == 9 || op == 10) { /* ping, pong */
			free(p);
			continue;
		}
		*opcode = op;
		*out = p;
		*len = (size_t)n;
		return 0;
	}
}

/* The next text message whose "type" is `type` (or any, NULL). */
static json_t *ws_recv_json(int fd, const char *type, int timeout_ms)
{
	double end = now_s() + timeout_ms / 1000.0;
	while (now_s() < end) {
		int op;
		uint8_t *p;
		size_t len;
		if (ws_recv(fd, &op, &p, &len, timeout_ms) != 0) {
			return NULL;
		}
		if (op == 8) {
			free(p);
			return NULL;
		}
		json_t *j = op == 1 ? json_loadb((const char *)p, len, 0, NULL) : NULL;
		free(p);
		const char *t = json_string_value(json_object_get(j, "type"));
		if (j != NULL && (type == NULL || (t != NULL && strcmp(t, type) == 0))) {
			return j;
		}
		json_decref(j);
	}
	return NULL;
}

/* ---- commands ---- */

static int cmd_get(int port, const char *path)
{
	int status;
	char *body = http_get(port, path, &status);
	if (body == NULL) {
		return die("GET %s: no answer", path);
	}
	char *b = strstr(body, "\r\n\r\n");
	printf("status %d\n%s\n", status, b != NULL ? b + 4 : "");
	free(body);
	return 0;
}

static int cmd_state(int port)
{
	int fd = ws_open(port, "/ws", 0);
	if (fd < 0) {
		return die("no WebSocket session on port %s", "");
	}
	json_t *j = ws_recv_json(fd, "state", 5000);
	close(fd);
	if (j == NULL) {
		return die("no state message%s", "");
	}
	json_dumpf(j, stdout, JSON_COMPACT);
	printf("\n");
	json_decref(j);
	return 0;
}

static int cmd_cmd(int port, const char *text)
{
	int fd = ws_open(port, "/ws", 0);
	if (fd < 0 || ws_send(fd, 1, text, strlen(text)) != 0) {
		return die("cannot send %s", text);
	}
	json_t *j = ws_recv_json(fd, "reply", 5000);
	close(fd);
	if (j == NULL) {
		return die("no reply to %s", text);
	}
	json_dumpf(j, stdout, JSON_COMPACT);
	printf("\n");
	json_decref(j);
	return 0;
}

static int cmd_send(int port, long bytes)
{
	int fd = ws_open(port, "/ws", 0);
	if (fd < 0) {
		return die("no WebSocket session%s", "");
	}
	char *m = malloc((size_t)bytes);
	memset(m, 'x', (size_t)bytes);
	int wr = ws_send(fd, 1, m, (size_t)bytes);
	free(m);
	/* The server answers with a close frame (1009) or just closes; anything else: open. */
	double end = now_s() + 5.0;
	while (now_s() < end) {
		int op;
		uint8_t *p;
		size_t len;
		if (ws_recv(fd, &op, &p, &len, 5000) != 0) {
			printf("closed %s\n", wr == 0 ? "eof" : "write-failed");
			close(fd);
			return 0;
		}
		if (op == 8) {
			printf("closed %d\n", len >= 2 ? p[0] << 8 | p[1] : 0);
			free(p);
			close(fd);
			return 0;
		}
		free(p);
	}
	printf("open\n");
	close(fd);
	return 0;
}

static int cmd_v2read(int port, const char *robot, int channel)
{
	int fd = ws_open(port, "/", 0);
	if (fd < 0) {
		return die("no WebSocket session%s", "");
	}
	hako_frame_t f;
	memset(&f, 0, sizeof(f));
	snprintf(f.robot, sizeof(f.robot), "%s", robot);
	f.channel_id = channel;
	f.request_type = HAKO_FRAME_DECLARE_READ;
	uint8_t buf[HAKO_FRAME_V2_HEADER_SIZE];
	size_t len = 0;
	if (hako_frame_encode(HAKO_FRAME_V2, &f, buf, sizeof(buf), &len) != 0 ||
	    ws_send(fd, 2, buf, len) != 0) {
		close(fd);
		return die("cannot send DECLARE_READ%s", "");
	}
	double end = now_s() + 5.0;
	while (now_s() < end) {
		int op;
		uint8_t *p;
		size_t n;
		if (ws_recv(fd, &op, &p, &n, 5000) != 0) {
			break;
		}
		hako_frame_t in;
		hako_error_t err;
		if (op == 2 &&
		    hako_frame_decode_message(HAKO_FRAME_V2, p, n, 1u << 20, &in, &err) == 0) {
			printf("frame robot=%s channel=%d type=0x%08x body=%u world_us=%llu",
			       in.robot, (int)in.channel_id, in.request_type, in.body_len,
			       (unsigned long long)in.hako_time_us);
			if (in.body_len >= 32) {
				uint64_t v = 0;
				for (int i = 0; i < 8; i++) {
					v |= (uint64_t)in.body[24 + i] << (8 * i);
				}
				printf(" u64@24=%llu", (unsigned long long)v);
			}
			printf("\n");
			free(p);
			close(fd);
			return 0;
		}
		free(p);
	}
	close(fd);
	return die("no PDU_DATA frame%s", "");
}

static int cmd_stall(int port, long seconds)
{
	int fd = ws_open(port, "/ws", 1024);
	if (fd < 0) {
		return die("no WebSocket session%s", "");
	}
	printf("stalled\n");
	fflush(stdout);
	sleep((unsigned)seconds);
	close(fd);
	return 0;
}

/* ---- load: real-time factor with and without sessions ---- */

/* How the sessions read: 0, as soon as anything comes (poll); N > 0, every N ms, all that
 * came (a client that draws at a frame rate). $VIEWER_PROBE_READ_MS. */
static int read_period_ms(void)
{
	const char *e = getenv("VIEWER_PROBE_READ_MS");
	return e != NULL ? atoi(e) : 0;
}

static double rtf_over(hako_domain_t *dom, double seconds, int *fds, int nfds, long *msgs)
{
	hako_time_t w0 = hako_domain_world_time(dom);
	double t0 = now_s(), end = t0 + seconds;
	uint8_t buf[65536];
	int period = read_period_ms();
	while (now_s() < end) {
		if (period > 0 && nfds > 0) {
			usleep((useconds_t)period * 1000);
			for (int i = 0; i < nfds; i++) {
				ssize_t n;
				while ((n = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
					*msgs += n;
				}
			}
			continue;
		}
		if (nfds <= 0 || nfds > 256) {
			usleep(20000);
			continue;
		}
		struct pollfd pf[256];
		size_t nf = (size_t)nfds;
		for (size_t i = 0; i < nf; i++) {
			pf[i] = (struct pollfd){fds[i], POLLIN, 0};
		}
		if (poll(pf, nf, 20) > 0) {
			for (size_t i = 0; i < nf; i++) {
				if (pf[i].revents & POLLIN) {
					ssize_t n = recv(fds[i], buf, sizeof(buf), 0);
					*msgs += n > 0 ? n : 0;
				}
			}
		}
	}
	hako_time_t w1 = hako_domain_world_time(dom);
	return (double)(w1 - w0) / 1e6 / (now_s() - t0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* What the page asks for: on the dashboard the values of its 50 rows (the first channels) and
 * the RD part; on the map the positions. The list comes from a session of its own. */
static char *page_watch(int port)
{
	int fd = ws_open(port, "/ws", 0);
	json_t *j = fd >= 0 ? ws_recv_json(fd, "channels", 10000) : NULL;
	if (fd >= 0) {
		close(fd);
	}
	json_t *list = json_object_get(j, "channels"), *keys = json_array();
	for (size_t i = 0; i < json_array_size(list) && i < 50; i++) {
		json_t *c = json_array_get(list, i);
		json_array_append_new(keys, json_pack("[O,O]", json_object_get(c, "robot"),
		                                      json_object_get(c, "id")));
	}
	json_t *cmd = json_pack("{s:s,s:o}", "cmd", "watch", "channels", keys);
	char *text = json_dumps(cmd, JSON_COMPACT);
	json_decref(cmd);
	json_decref(j);
	return text;
}

static int page_open(int port, int map, const char *watch)
{
	static const char dash[] = "{\"cmd\":\"view\",\"rd\":true,\"positions\":false}";
	static const char mapv[] = "{\"cmd\":\"view\",\"rd\":false,\"positions\":true}";
	int fd = ws_open(port, "/ws", 0);
	if (fd < 0) {
		return -1;
	}
	const char *view = map ? mapv : dash;
	if (ws_send(fd, 1, view, strlen(view)) != 0 ||
	    (!map && ws_send(fd, 1, watch, strlen(watch)) != 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Rounds of (no session, then `sessions` reading ones), each phase `seconds` long: the two
 * alternate so that a drift of the machine's speed hits both alike; the medians compare. */
static int cmd_load(int port, int sessions, double seconds, const char *domain, int rounds)
{
	hako_domain_t *dom = NULL;
	if (hako_domain_open(domain, &dom) != 0) {
		return die("no domain %s", domain);
	}
	if (sessions > 256) {
		sessions = 256;
	}
	if (rounds < 1 || rounds > 100) {
		rounds = 3;
	}
	int fds[256];
	double r0s[100], r1s[100];
	char *watch = page_watch(port);
	if (watch == NULL) {
		return die("no channel list from the viewer%s", "");
	}
	printf("round,sessions,seconds,rtf,bytes_read\n");
	double sum0 = 0, sum1 = 0;
	for (int round = 0; round < rounds; round++) {
		long m0 = 0, m1 = 0;
		double r0 = rtf_over(dom, seconds, fds, 0, &m0);
		for (int i = 0; i < sessions; i++) {
			fds[i] = page_open(port, i % 2, watch);
			if (fds[i] < 0) {
				free(watch);
				return die("session refused%s", "");
			}
		}
		double r1 = rtf_over(dom, seconds, fds, sessions, &m1);
		for (int i = 0; i < sessions; i++) {
			close(fds[i]);
		}
		printf("%d,0,%.1f,%.4f,%ld\n%d,%d,%.1f,%.4f,%ld\n", round, seconds, r0, m0, round,
		       sessions, seconds, r1, m1);
		fflush(stdout);
		r0s[round] = r0;
		r1s[round] = r1;
		sum0 += r0;
		sum1 += r1;
	}
	printf("mean rtf without sessions %.4f, with %d sessions %.4f: ratio %.4f (%.2f %% drop)\n",
	       sum0 / rounds, sessions, sum1 / rounds, sum1 / sum0, 100.0 * (1.0 - sum1 / sum0));
	double med0 = median(r0s, rounds), med1 = median(r1s, rounds);
	printf("median rtf without sessions %.4f, with %d sessions %.4f: ratio %.4f (%.2f %% "
	       "drop)\n",
	       med0, sessions, med1, med1 / med0, 100.0 * (1.0 - med1 / med0));
	hako_domain_close(dom);
	free(watch);
	return 0;
}

/* A Foxglove session subscribed to every channel whose topic ends in `suffix` (the fleet's
 * /<drone>/pos): reads the advertisements until `want` such channels came, then subscribes
 * them all in one message. */
static int fox_open(int port, const char *suffix, int want)
{
	int fd = ws_open_proto(port, "/", 0, "foxglove.websocket.v1");
	if (fd < 0) {
		return -1;
	}
	json_t *subs = json_array();
	size_t sl = strlen(suffix);
	double end = now_s() + 20;
	while ((int)json_array_size(subs) < want && now_s() < end) {
		int op;
		uint8_t *p;
		size_t len;
		if (ws_recv(fd, &op, &p, &len, 5000) != 0) {
			break;
		}
		json_t *j = op == 1 ? json_loadb((const char *)p, len, 0, NULL) : NULL;
		free(p);
		const char *o = json_string_value(json_object_get(j, "op"));
		json_t *chans = json_object_get(j, "channels"), *c;
		size_t i;
		if (o != NULL && strcmp(o, "advertise") == 0) {
			json_array_foreach(chans, i, c)
			{
				const char *t = json_string_value(json_object_get(c, "topic"));
				size_t tl = t != NULL ? strlen(t) : 0;
				if (tl >= sl && strcmp(t + tl - sl, suffix) == 0) {
					json_array_append_new(
					    subs, json_pack("{s:I,s:O}", "id",
					                    (json_int_t)json_array_size(subs),
					                    "channelId", json_object_get(c, "id")));
				}
			}
		}
		json_decref(j);
	}
	json_t *msg = json_pack("{s:s,s:o}", "op", "subscribe", "subscriptions", subs);
	char *text = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (text == NULL || ws_send(fd, 1, text, strlen(text)) != 0) {
		free(text);
		close(fd);
		return -1;
	}
	free(text);
	return fd;
}

/* As cmd_load, with Foxglove sessions subscribed to every drone's pos. */
static int cmd_fox_load(int port, int sessions, double seconds, const char *domain, int rounds,
                        int drones)
{
	hako_domain_t *dom = NULL;
	if (hako_domain_open(domain, &dom) != 0) {
		return die("no domain %s", domain);
	}
	sessions = sessions > 256 ? 256 : sessions;
	rounds = rounds < 1 || rounds > 100 ? 3 : rounds;
	int fds[256];
	double r0s[100], r1s[100];
	printf("round,sessions,seconds,rtf,bytes_read\n");
	for (int round = 0; round < rounds; round++) {
		long m0 = 0, m1 = 0;
		double r0 = rtf_over(dom, seconds, fds, 0, &m0);
		for (int i = 0; i < sessions; i++) {
			fds[i] = fox_open(port, "/pos", drones);
			if (fds[i] < 0) {
				return die("Foxglove session refused%s", "");
			}
		}
		double r1 = rtf_over(dom, seconds, fds, sessions, &m1);
		for (int i = 0; i < sessions; i++) {
			close(fds[i]);
		}
		printf("%d,0,%.1f,%.4f,%ld\n%d,%d,%.1f,%.4f,%ld\n", round, seconds, r0, m0, round,
		       sessions, seconds, r1, m1);
		fflush(stdout);
		r0s[round] = r0;
		r1s[round] = r1;
	}
	double med0 = median(r0s, rounds), med1 = median(r1s, rounds);
	printf("median rtf without sessions %.4f, with %d Foxglove sessions %.4f: ratio %.4f "
	       "(%.2f %% drop)\n",
	       med0, sessions, med1, med1 / med0, 100.0 * (1.0 - med1 / med0));
	hako_domain_close(dom);
	return 0;
}

/* ---- Twist writer ---- */

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
}

static int cmd_twist(const char *domain, int robots, double seconds)
{
	hako_domain_t *dom = NULL;
	hako_channel_t *ch[16];
	if (robots < 1 || robots > 16 || hako_domain_open(domain, &dom) != 0) {
		return die("no domain %s (or 1..16 robots)", domain);
	}
	for (int i = 0; i < robots; i++) {
		char name[32];
		snprintf(name, sizeof(name), "Drone%d", i + 1);
		if (hako_channel_create(dom, name, 0, 72, &ch[i]) != 0) {
			hako_domain_close(dom);
			return die("cannot create the channel of %s", name);
		}
	}
	double t0 = now_s();
	while (now_s() - t0 < seconds) {
		double t = now_s() - t0;
		for (int i = 0; i < robots; i++) {
			uint8_t pdu[72] = {0};
			put_le(pdu, 0x12345678u, 4);
			put_le(pdu + 4, 1, 4);
			put_le(pdu + 8, 24, 4);
			put_le(pdu + 12, 72, 4);
			put_le(pdu + 16, 72, 4);
			double r = 1.0 + i, w = 0.6 / (1 + i), a = w * t + i * 2.1;
			double v[6] = {r * cos(a) + i * 0.5, r * sin(a), 0, 0, 0, w};
			memcpy(pdu + 24, v, sizeof(v)); /* little-endian doubles on this machine */
			hako_channel_write(ch[i], pdu, sizeof(pdu));
		}
		usleep(20000);
	}
	hako_domain_close(dom);
	return 0;
}

/* ---- Chromium over the DevTools protocol ---- */

static int cdp_id;

static json_t *cdp_call(int fd, const char *method, json_t *params)
{
	int id = ++cdp_id;
	json_t *req = json_pack("{s:i,s:s,s:o}", "id", id, "method", method, "params",
	                        params != NULL ? params : json_object());
	char *text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	int r = ws_send(fd, 1, text, strlen(text));
	free(text);
	if (r != 0) {
		return NULL;
	}
	for (;;) {
		int op;
		uint8_t *p;
		size_t len;
		if (ws_recv(fd, &op, &p, &len, 30000) != 0) {
			return NULL;
		}
		json_t *j = json_loadb((const char *)p, len, 0, NULL);
		free(p);
		if (j != NULL && json_integer_value(json_object_get(j, "id")) == id) {
			return j;
		}
		json_decref(j);
	}
}

static json_t *cdp_eval(int fd, const char *expr)
{
	json_t *r = cdp_call(fd, "Runtime.evaluate",
	                     json_pack("{s:s,s:b}", "expression", expr, "returnByValue", 1));
	json_t *v = json_incref(
	    json_object_get(json_object_get(json_object_get(r, "result"), "result"), "value"));
	json_decref(r);
	return v;
}

static size_t b64_decode(const char *in, uint8_t *out)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint32_t acc = 0;
	int bits = 0;
	size_t n = 0;
	for (const char *p = in; *p != '\0' && *p != '='; p++) {
		const char *q = strchr(tab, *p);
		if (q == NULL) {
			continue;
		}
		acc = acc << 6 | (uint32_t)(q - tab);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (uint8_t)(acc >> bits);
		}
	}
	return n;
}

static int cmd_cdp(int dport, const char *url, const char *until, double timeout, const char *dom,
                   const char *png)
{
	/* The page target's WebSocket, from /json/list, once Chromium listens. */
	char path[512] = "";
	double end = now_s() + 20.0;
	while (path[0] == '\0' && now_s() < end) {
		int status = 0;
		char *body = http_get(dport, "/json/list", &status);
		char *b = body != NULL ? strstr(body, "\r\n\r\n") : NULL;
		json_t *list = b != NULL ? json_loads(b + 4, 0, NULL) : NULL;
		for (size_t i = 0; i < json_array_size(list); i++) {
			json_t *t = json_array_get(list, i);
			const char *type = json_string_value(json_object_get(t, "type"));
			const char *ws =
			    json_string_value(json_object_get(t, "webSocketDebuggerUrl"));
			const char *p =
			    ws != NULL ? strchr(ws + 5, '/') : NULL; /* after ws://h:p */
			if (type != NULL && strcmp(type, "page") == 0 && p != NULL) {
				snprintf(path, sizeof(path), "%s", p);
				break;
			}
		}
		json_decref(list);
		free(body);
		if (path[0] == '\0') {
			usleep(100000);
		}
	}
	if (path[0] == '\0') {
		return die("no Chromium page target on the DevTools port (%s)",
		           "is chromium running?");
	}
	int fd = ws_open(dport, path, 0);
	if (fd < 0) {
		return die("cannot open the DevTools session %s", path);
	}
	json_decref(cdp_call(fd, "Emulation.setDeviceMetricsOverride",
	                     json_pack("{s:i,s:i,s:f,s:b}", "width", 1280, "height", 820,
	                               "deviceScaleFactor", 1.0, "mobile", 0)));
	json_decref(cdp_call(fd, "Page.navigate", json_pack("{s:s}", "url", url)));
	int ok = 0;
	end = now_s() + timeout;
	while (now_s() < end) {
		json_t *v = cdp_eval(fd, until);
		ok = json_is_true(v);
		json_decref(v);
		if (ok) {
			break;
		}
		usleep(100000);
	}
	if (dom != NULL) {
		json_t *v = cdp_eval(fd, "document.documentElement.outerHTML");
		FILE *f = fopen(dom, "w");
		if (f != NULL) {
			fputs(json_string_value(v) != NULL ? json_string_value(v) : "", f);
			fclose(f);
		}
		json_decref(v);
	}
	if (png != NULL) {
		json_t *r =
		    cdp_call(fd, "Page.captureScreenshot", json_pack("{s:s}", "format", "png"));
		const char *data =
		    json_string_value(json_object_get(json_object_get(r, "result"), "data"));
		if (data != NULL) {
			uint8_t *bin = malloc(strlen(data));
			size_t n = b64_decode(data, bin);
			FILE *f = fopen(png, "wb");
			if (f != NULL) {
				fwrite(bin, 1, n, f);
				fclose(f);
			}
			free(bin);
		}
		json_decref(r);
	}
	close(fd);
	if (!ok) {
		fprintf(stderr, "viewer-probe: %s never became true within %.0f s\n", until,
		        timeout);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr,
		        "usage: viewer-probe get|state|cmd|send|v2read|stall|load|cdp PORT ...\n");
		return 2;
	}
	const char *c = argv[1];
	int port = atoi(argv[2]);
	if (strcmp(c, "get") == 0 && argc == 4) {
		return cmd_get(port, argv[3]);
	}
	if (strcmp(c, "state") == 0 && argc == 3) {
		return cmd_state(port);
	}
	if (strcmp(c, "cmd") == 0 && argc == 4) {
		return cmd_cmd(port, argv[3]);
	}
	if (strcmp(c, "send") == 0 && argc == 4) {
		return cmd_send(port, atol(argv[3]));
	}
	if (strcmp(c, "v2read") == 0 && argc == 5) {
		return cmd_v2read(port, argv[3], atoi(argv[4]));
	}
	if (strcmp(c, "stall") == 0 && argc == 4) {
		return cmd_stall(port, atol(argv[3]));
	}
	if (strcmp(c, "load") == 0 && argc >= 5) {
		return cmd_load(port, atoi(argv[3]), atof(argv[4]),
		                argc > 5 ? argv[5] : hako_domain_default_name(),
		                argc > 6 ? atoi(argv[6]) : 3);
	}
	if (strcmp(c, "fox-load") == 0 && argc >= 5) {
		return cmd_fox_load(port, atoi(argv[3]), atof(argv[4]),
		                    argc > 5 ? argv[5] : hako_domain_default_name(),
		                    argc > 6 ? atoi(argv[6]) : 3, argc > 7 ? atoi(argv[7]) : 256);
	}
	if (strcmp(c, "twist") == 0 && argc == 5) {
		return cmd_twist(argv[2], atoi(argv[3]), atof(argv[4]));
	}
	if (strcmp(c, "cdp") == 0 && argc >= 6) {
		return cmd_cdp(port, argv[3], argv[4], atof(argv[5]), argc > 6 ? argv[6] : NULL,
		               argc > 7 ? argv[7] : NULL);
	}
	fprintf(stderr, "viewer-probe: bad arguments for '%s'\n", c);
	return 2;
}
