/* viewer-hostile: what a hostile page or client sends hako-viewer, for viewer.hosts (plain
 * sockets to 127.0.0.1, so that any Host and Origin can be sent).
 *
 *   get PORT HOST [ORIGIN]      GET / with these headers ("-": no Host); prints "status N"
 *   upgrade PORT HOST [ORIGIN]  a WebSocket handshake on /ws; prints "status N" (101: upgraded)
 *   flood PORT N                one session sends N commands without the token, then one with
 *                               a bad token, and waits for that one's reply (the viewer took
 *                               them all); prints "flooded N"
 * Exit status: 0 done, 1 failed (said why on stderr), 2 usage.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TIMEOUT_MS 30000

static int fail(const char *what)
{
	fprintf(stderr, "viewer-hostile: %s\n", what);
	return 1;
}

static int dial(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int recv_some(int fd, void *buf, size_t len)
{
	struct pollfd pf = {fd, POLLIN, 0};
	if (poll(&pf, 1, TIMEOUT_MS) <= 0) {
		return -1;
	}
	ssize_t n = recv(fd, buf, len, 0);
	return n > 0 ? (int)n : -1;
}

static int recv_exact(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		int n = recv_some(fd, p, len);
		if (n < 0) {
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Send a request's head and read the status line and headers of the answer: the status, or -1
 * if none came. */
static int request(int fd, const char *path, const char *host, const char *origin, int upgrade)
{
	char req[2048];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n", path);
	if (strcmp(host, "-") != 0) {
		n += snprintf(req + n, sizeof(req) - (size_t)n, "Host: %s\r\n", host);
	}
	if (origin != NULL) {
		n += snprintf(req + n, sizeof(req) - (size_t)n, "Origin: %s\r\n", origin);
	}
	snprintf(req + n, sizeof(req) - (size_t)n, "%s\r\n",
	         upgrade ? "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	                   "Sec-WebSocket-Version: 13\r\n"
	                 : "Connection: close\r\n");
	if (send_all(fd, req, strlen(req)) != 0) {
		return -1;
	}
	/* byte by byte up to the empty line: WebSocket frames may follow it */
	char head[8192];
	size_t len = 0;
	while (len + 1 < sizeof(head) && (len < 4 || memcmp(head + len - 4, "\r\n\r\n", 4) != 0)) {
		if (recv_exact(fd, head + len, 1) != 0) {
			break;
		}
		len++;
	}
	head[len] = '\0';
	int status = -1;
	return sscanf(head, "HTTP/1.%*d %d", &status) == 1 ? status : -1;
}

static int cmd_status(int port, const char *host, const char *origin, int upgrade)
{
	int fd = dial(port);
	if (fd < 0) {
		return fail("cannot connect");
	}
	int status = request(fd, upgrade ? "/ws" : "/", host, origin, upgrade);
	close(fd);
	if (status < 0) {
		return fail("no answer");
	}
	printf("status %d\n", status);
	return 0;
}

/* A masked text frame (a client's). */
static int ws_text(int fd, const char *text)
{
	size_t len = strlen(text);
	unsigned char f[256];
	if (len >= 126 || len + 6 > sizeof(f)) {
		return -1;
	}
	static const unsigned char mask[4] = {0x5a, 0xa5, 0x3c, 0xc3};
	f[0] = 0x81;
	f[1] = (unsigned char)(0x80 | len);
	memcpy(f + 2, mask, 4);
	for (size_t i = 0; i < len; i++) {
		f[6 + i] = (unsigned char)text[i] ^ mask[i % 4];
	}
	return send_all(fd, f, len + 6);
}

/* The next text message (unmasked, from the server), NUL-terminated in buf; -1 on a close, an
 * error or the timeout. */
static int ws_next_text(int fd, char *buf, size_t cap)
{
	for (;;) {
		unsigned char h[2];
		if (recv_exact(fd, h, 2) != 0) {
			return -1;
		}
		uint64_t len = h[1] & 0x7f;
		if (len >= 126) {
			unsigned char e[8];
			size_t el = len == 126 ? 2 : 8;
			if (recv_exact(fd, e, el) != 0) {
				return -1;
			}
			len = 0;
			for (size_t i = 0; i < el; i++) {
				len = len << 8 | e[i];
			}
		}
		int op = h[0] & 0x0f;
		if (op == 8) {
			return -1;
		}
		/* keep what fits, skip the rest */
		size_t keep = len < cap - 1 ? (size_t)len : cap - 1;
		if (recv_exact(fd, buf, keep) != 0) {
			return -1;
		}
		buf[keep] = '\0';
		for (uint64_t left = len - keep; left > 0;) {
			char skip[4096];
			size_t n = left < sizeof(skip) ? (size_t)left : sizeof(skip);
			if (recv_exact(fd, skip, n) != 0) {
				return -1;
			}
			left -= n;
		}
		if (op == 1) {
			return 0;
		}
	}
}

static int cmd_flood(int port, long count)
{
	char host[64];
	snprintf(host, sizeof(host), "127.0.0.1:%d", port);
	int fd = dial(port);
	if (fd < 0 || request(fd, "/ws", host, NULL, 1) != 101) {
		return fail("no WebSocket session");
	}
	for (long i = 0; i < count; i++) {
		if (ws_text(fd, "{\"cmd\":\"stop\"}") != 0) {
			close(fd);
			return fail("the viewer hung up during the flood");
		}
	}
	/* Messages are taken in order: its reply says that the viewer took every one before. */
	if (ws_text(fd, "{\"cmd\":\"stop\",\"token\":\"0000000000000000ffffffffffffffff\"}") != 0) {
		close(fd);
		return fail("the viewer hung up after the flood");
	}
	char msg[65536];
	while (ws_next_text(fd, msg, sizeof(msg)) == 0) {
		if (strstr(msg, "\"type\":\"reply\"") != NULL &&
		    strstr(msg, "refused: bad token") != NULL) {
			close(fd);
			printf("flooded %ld\n", count);
			return 0;
		}
	}
	close(fd);
	return fail("no reply to the last command");
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "get") == 0) {
		return cmd_status(atoi(argv[2]), argv[3], argc > 4 ? argv[4] : NULL, 0);
	}
	if (argc >= 4 && strcmp(argv[1], "upgrade") == 0) {
		return cmd_status(atoi(argv[2]), argv[3], argc > 4 ? argv[4] : NULL, 1);
	}
	if (argc == 4 && strcmp(argv[1], "flood") == 0) {
		return cmd_flood(atoi(argv[2]), atol(argv[3]));
	}
	fprintf(stderr, "usage: viewer-hostile get|upgrade PORT HOST [ORIGIN] | flood PORT N\n");
	return 2;
}
