/* The tcp comm's send path on the wire (pdu-endpoint/src/comm_tcp_send.c): what a server writes
 * to raw client sockets is, byte for byte, hako_frame_encode of each PDU in send order, whatever
 * path a frame took: a direct write, a queued frame in a pooled buffer with the sending thread's
 * last header reused, a malloc'd one (over 4 KiB) or a cached big one. PDUs of several keys and
 * lengths are sent back to back (so most are queued and batched), from one thread to a v1 and a
 * v2 server in turn (the reused header must follow the key, the length and the version), each
 * with two readers (a frame shared by two queues goes back to the pool once both wrote it).
 * Readers are threads reading their socket to the expected length; nothing asserts timing. */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
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

#define SERVER_COMM                                                                                \
	"{\"protocol\": \"tcp\", \"direction\": \"inout\", \"role\": \"server\", "                 \
	"\"comm_raw_version\": \"%s\", \"local\": {\"address\": \"127.0.0.1\", \"port\": LPORT}, " \
	"\"options\": {\"send_queue_depth\": %u}}"

#define NREADERS 2
#define ROUNDS   200

/* One raw client socket of a server, read to the end of what it should get. */
typedef struct reader {
	int fd;
	uint8_t *buf;
	size_t want;
	size_t got;
	int err; /* errno of a failed read, ETIMEDOUT, or -1 at EOF */
	pthread_t th;
} reader_t;

static void *read_all(void *arg)
{
	reader_t *r = arg;
	uint64_t deadline = ept_now_ms() + EPT_WAIT_MS;
	while (r->got < r->want) {
		uint64_t now = ept_now_ms();
		if (now >= deadline) {
			r->err = ETIMEDOUT;
			break;
		}
		struct pollfd p = {.fd = r->fd, .events = POLLIN};
		if (poll(&p, 1, (int)(deadline - now)) <= 0) {
			continue;
		}
		ssize_t n = recv(r->fd, r->buf + r->got, r->want - r->got, 0);
		if (n == 0) {
			r->err = -1;
			break;
		}
		if (n < 0 && errno != EINTR && errno != EAGAIN) {
			r->err = errno;
			break;
		}
		r->got += n > 0 ? (size_t)n : 0;
	}
	return NULL;
}

static int raw_connect(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* The PDUs of one round, in order: keys and lengths around the pool's classes (a v2 frame is
 * 304 bytes of header and the body; classes of 512 B .. 4 KiB), past its largest, and one big
 * frame of the cached kind in some rounds. */
typedef struct pdu_spec {
	const char *robot;
	int32_t ch;
	size_t len;
} pdu_spec_t;

static const pdu_spec_t k_round[] = {
    {"drone", 1, 64},   {"drone", 1, 64},   {"drone", 2, 64},   {"rover-with-a-long-name", 1, 64},
    {"drone", 1, 0},    {"drone", 1, 1},    {"drone", 1, 208},  {"drone", 1, 209},
    {"drone", 1, 1000}, {"rover", 7, 1000}, {"drone", 1, 3700}, {"drone", 1, 3800},
    {"drone", 1, 5000}, {"drone", 1, 64},   {"drone", -3, 64},  {"drone", 1, 64},
};
#define BIG_LEN   (200u << 10)
#define BIG_EVERY 50 /* rounds */

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1u;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

/* Append the encoded frame of one PDU to out (grown as needed). */
static void expect_frame(hako_frame_version_t v, const char *robot, int32_t ch, const uint8_t *body,
                         size_t len, uint8_t **out, size_t *n, size_t *cap)
{
	size_t need = hako_frame_size(v, robot, (uint32_t)len);
	assert_true(need > 0);
	if (*n + need > *cap) {
		*cap = (*n + need) * 2;
		*out = realloc(*out, *cap);
		assert_non_null(*out);
	}
	hako_frame_t fr;
	memset(&fr, 0, sizeof(fr));
	snprintf(fr.robot, sizeof(fr.robot), "%s", robot);
	fr.channel_id = ch;
	fr.request_type = HAKO_FRAME_PDU_DATA;
	fr.body = body;
	fr.body_len = (uint32_t)len;
	size_t w = 0;
	assert_int_equal(hako_frame_encode(v, &fr, *out + *n, *cap - *n, &w), 0);
	assert_int_equal(w, need);
	*n += w;
}

typedef struct server {
	hako_frame_version_t ver;
	hako_endpoint_t *ep;
	reader_t rd[NREADERS];
	uint8_t *expect;
	size_t expect_len;
	size_t expect_cap;
} server_t;

static void open_server(server_t *s, const char *name, hako_frame_version_t v, unsigned depth)
{
	char comm[512];
	snprintf(comm, sizeof(comm), SERVER_COMM, v == HAKO_FRAME_V1 ? "v1" : "v2", depth);
	s->ver = v;
	s->ep = ept_must_open(name, comm, 0, 0);
	uint16_t port = hako_endpoint_local_port(s->ep);
	for (int i = 0; i < NREADERS; i++) {
		s->rd[i].fd = raw_connect(port);
	}
	EPT_WAIT_FOR(ept_stats(s->ep).peers == NREADERS);
}

static void start_readers(server_t *s)
{
	for (int i = 0; i < NREADERS; i++) {
		reader_t *r = &s->rd[i];
		r->want = s->expect_len;
		r->buf = malloc(r->want);
		assert_non_null(r->buf);
		assert_int_equal(pthread_create(&r->th, NULL, read_all, r), 0);
	}
}

static void check_readers(server_t *s)
{
	for (int i = 0; i < NREADERS; i++) {
		reader_t *r = &s->rd[i];
		pthread_join(r->th, NULL);
		assert_int_equal(r->err, 0);
		assert_int_equal(r->got, s->expect_len);
		assert_memory_equal(r->buf, s->expect, s->expect_len);
		free(r->buf);
		close(r->fd);
	}
	free(s->expect);
}

/* Every PDU of every round, to the servers in turn from this thread. */
static void stream(server_t *srv, int nsrv)
{
	static uint8_t body[BIG_LEN];
	/* What each reader will get, computed first: the readers read while the sends go. */
	for (int r = 0; r < ROUNDS; r++) {
		for (size_t i = 0; i < sizeof(k_round) / sizeof(k_round[0]); i++) {
			const pdu_spec_t *p = &k_round[i];
			fill(body, p->len, (unsigned)(r * 100 + (int)i));
			for (int s = 0; s < nsrv; s++) {
				expect_frame(srv[s].ver, p->robot, p->ch, body, p->len,
				             &srv[s].expect, &srv[s].expect_len,
				             &srv[s].expect_cap);
			}
		}
		if (r % BIG_EVERY == 0) {
			fill(body, BIG_LEN, (unsigned)r);
			for (int s = 0; s < nsrv; s++) {
				expect_frame(srv[s].ver, "drone", 9, body, BIG_LEN, &srv[s].expect,
				             &srv[s].expect_len, &srv[s].expect_cap);
			}
		}
	}
	for (int s = 0; s < nsrv; s++) {
		start_readers(&srv[s]);
	}
	for (int r = 0; r < ROUNDS; r++) {
		for (size_t i = 0; i < sizeof(k_round) / sizeof(k_round[0]); i++) {
			const pdu_spec_t *p = &k_round[i];
			hako_pdu_key_t k = ept_key(p->robot, p->ch);
			fill(body, p->len, (unsigned)(r * 100 + (int)i));
			for (int s = 0; s < nsrv; s++) {
				assert_int_equal(hako_endpoint_send(srv[s].ep, &k, body, p->len),
				                 0);
			}
		}
		if (r % BIG_EVERY == 0) {
			hako_pdu_key_t k = ept_key("drone", 9);
			fill(body, BIG_LEN, (unsigned)r);
			for (int s = 0; s < nsrv; s++) {
				assert_int_equal(hako_endpoint_send(srv[s].ep, &k, body, BIG_LEN),
				                 0);
			}
		}
	}
	for (int s = 0; s < nsrv; s++) {
		check_readers(&srv[s]);
		hako_endpoint_stats_t st = ept_stats(srv[s].ep);
		assert_int_equal(st.send_dropped, 0);
	}
}

/* v1 and v2 servers fed in turn by one thread, deep queues (mostly queued, batched writes). */
static void test_frames_on_the_wire(void **state)
{
	(void)state;
	server_t srv[2];
	memset(srv, 0, sizeof(srv));
	open_server(&srv[0], "v2srv", HAKO_FRAME_V2, 4096);
	open_server(&srv[1], "v1srv", HAKO_FRAME_V1, 4096);
	stream(srv, 2);
}

/* A shallow queue: senders wait for room (blocking) while the loop writes; nothing is lost. */
static void test_frames_shallow_queue(void **state)
{
	(void)state;
	server_t srv[1];
	memset(srv, 0, sizeof(srv));
	open_server(&srv[0], "v2srv", HAKO_FRAME_V2, 4);
	stream(srv, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_frames_on_the_wire, ept_close_all),
	    cmocka_unit_test_teardown(test_frames_shallow_queue, ept_close_all),
	};
	return cmocka_run_group_tests(tests, ept_group_setup, ept_group_teardown);
}
