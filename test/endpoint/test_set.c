/* An endpoint set serves its network comms from one I/O loop (pdu-endpoint/src/ep_loop.c): a set
 * of tcp servers, tcp clients connected to them and a udp endpoint runs one thread while started
 * and none once stopped; clients and servers of the same set talk through that one thread; one
 * endpoint of the set stops and starts again while the others are served on; a subscriber of one
 * endpoint forwarding a burst to another endpoint of the set (a bridge) loses nothing to a slow
 * peer with blocking sends, although both run on the one loop. An endpoint opened on its own has
 * a loop (a thread) of its own. Threads are counted in /proc/self/task. */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/endpoint.h"
#include "hako/frame.h"

#include "ep_test_util.h"

#define NPAIRS 3

static int thread_count(void)
{
	int n = htu_thread_count();
	assert_true(n > 0);
	return n;
}

/* A port free now: the servers of a set are written before it is opened. Taken below the
 * ephemeral range (32768 and up), where no bind to port 0 and no outgoing connection of a
 * test running alongside can take it in between; spread by the pid so that two runs of this
 * test start apart, and checked free by a bind. */
static uint16_t free_port(void)
{
	static unsigned next;
	if (next == 0) {
		next = 20000u + ((unsigned)getpid() * 61u) % 12000u;
	}
	for (int tries = 0; tries < 1000; tries++) {
		uint16_t port = (uint16_t)next;
		next = next + 1 < 32000u ? next + 1 : 20000u;
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fd >= 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
		                        .sin_port = htons(port),
		                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		int ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(fd);
		if (ok) {
			return port;
		}
	}
	fail_msg("no free port in 20000..31999");
	return 0;
}

static void write_endpoint(const char *id, const char *comm)
{
	char name[64], text[512];
	snprintf(name, sizeof(name), "%s.comm.json", id);
	ept_write_file(name, comm);
	snprintf(name, sizeof(name), "%s.json", id);
	snprintf(text, sizeof(text),
	         "{\"name\": \"%s\", \"cache\": \"cache.json\", \"comm\": \"%s.comm.json\", "
	         "\"pdu_def_path\": null}",
	         id, id);
	ept_write_file(name, text);
}

/* s0..s2 (tcp servers), c0..c2 (tcp clients of them), u (udp in), all of node1. */
static void write_set(void)
{
	char comm[512], list[2048] = "";
	ept_write_file("cache.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"queue\", "
	                             "\"depth\": 64}}");
	for (int i = 0; i < NPAIRS; i++) {
		uint16_t port = free_port();
		char id[8];
		snprintf(comm, sizeof(comm),
		         "{\"protocol\": \"tcp\", \"role\": \"server\", \"local\": {\"address\": "
		         "\"127.0.0.1\", \"port\": %u}}",
		         (unsigned)port);
		snprintf(id, sizeof(id), "s%d", i);
		write_endpoint(id, comm);
		snprintf(comm, sizeof(comm),
		         "{\"protocol\": \"tcp\", \"role\": \"client\", \"remote\": {\"address\": "
		         "\"127.0.0.1\", \"port\": %u}}",
		         (unsigned)port);
		snprintf(id, sizeof(id), "c%d", i);
		write_endpoint(id, comm);
		size_t used = strlen(list);
		snprintf(list + used, sizeof(list) - used,
		         "%s{\"id\": \"s%d\", \"config_path\": \"s%d.json\"}, "
		         "{\"id\": \"c%d\", \"config_path\": \"c%d.json\"}",
		         i == 0 ? "" : ", ", i, i, i, i);
	}
	write_endpoint("u", "{\"protocol\": \"udp\", \"direction\": \"in\", \"local\": "
	                    "{\"address\": \"127.0.0.1\", \"port\": 0}}");
	char text[2600];
	snprintf(text, sizeof(text),
	         "[{\"nodeId\": \"node1\", \"endpoints\": [%s, {\"id\": \"u\", \"config_path\": "
	         "\"u.json\"}]}]",
	         list);
	ept_write_file("container.json", text);
}

static hako_endpoint_t *member(hako_endpoint_set_t *s, const char *fmt, int i)
{
	char id[16];
	snprintf(id, sizeof(id), fmt, i);
	hako_endpoint_t *ep = hako_endpoint_set_get(s, id);
	assert_non_null(ep);
	return ep;
}

static void expect(hako_endpoint_t *ep, const hako_pdu_key_t *k, const char *msg)
{
	char got[256];
	size_t len = 0;
	assert_int_equal(ept_recv_wait(ep, k, got, sizeof(got), &len), 0);
	assert_int_equal(len, strlen(msg));
	assert_memory_equal(got, msg, len);
}

/* Each client to its server and back, through the set's one loop. */
static void exchange(hako_endpoint_set_t *s, int i, int round)
{
	hako_endpoint_t *srv = member(s, "s%d", i), *cli = member(s, "c%d", i);
	hako_pdu_key_t k = ept_key("Drone", i);
	char msg[64];
	EPT_WAIT_FOR(ept_stats(srv).peers == 1 && ept_stats(cli).peers == 1);
	snprintf(msg, sizeof(msg), "c%d to s%d, round %d", i, i, round);
	assert_int_equal(hako_endpoint_send(cli, &k, msg, strlen(msg)), 0);
	expect(srv, &k, msg);
	snprintf(msg, sizeof(msg), "s%d to c%d, round %d", i, i, round);
	assert_int_equal(hako_endpoint_send(srv, &k, msg, strlen(msg)), 0);
	expect(cli, &k, msg);
}

/* A datagram to the set's udp endpoint, from a plain socket. */
static void udp_exchange(hako_endpoint_set_t *s, int round)
{
	hako_endpoint_t *u = hako_endpoint_set_get(s, "u");
	assert_non_null(u);
	char msg[64];
	snprintf(msg, sizeof(msg), "datagram, round %d", round);
	hako_frame_t f = {.channel_id = 7,
	                  .request_type = HAKO_FRAME_PDU_DATA,
	                  .body = (const uint8_t *)msg,
	                  .body_len = (uint32_t)strlen(msg)};
	snprintf(f.robot, sizeof(f.robot), "Rover");
	uint8_t buf[1024];
	size_t n = 0;
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V2, &f, buf, sizeof(buf), &n), 0);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons(hako_endpoint_local_port(u)),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(sendto(fd, buf, n, 0, (struct sockaddr *)&a, sizeof(a)), (ssize_t)n);
	close(fd);
	hako_pdu_key_t k = ept_key("Rover", 7);
	expect(u, &k, msg);
}

static void test_set_one_thread(void **state)
{
	(void)state;
	hako_error_t err;
	hako_endpoint_set_t *s = NULL;
	char path[600];
	write_set();
	snprintf(path, sizeof(path), "%s/container.json", ept_dir());
	int base = htu_thread_count_settled();
	assert_int_equal(hako_endpoint_set_open(path, "node1", &s, &err), 0);
	assert_int_equal(hako_endpoint_set_count(s), 2 * NPAIRS + 1);
	assert_int_equal(thread_count(), base); /* opened, not started: no thread */
	assert_int_equal(hako_endpoint_set_start(s, &err), 0);
	assert_int_equal(thread_count(), base + 1); /* 7 network comms, 1 loop thread */
	for (int i = 0; i < NPAIRS; i++) {
		exchange(s, i, 1);
	}
	udp_exchange(s, 1);
	assert_int_equal(thread_count(), base + 1);

	/* One endpoint stops (its peer sees the connection end) while the others are served. */
	hako_endpoint_t *s0 = member(s, "s%d", 0), *c0 = member(s, "c%d", 0);
	assert_int_equal(hako_endpoint_stop(s0), 0);
	EPT_WAIT_FOR(ept_stats(c0).disconnects == 1 && ept_stats(c0).peers == 0);
	assert_int_equal(thread_count(), base + 1);
	exchange(s, 1, 2);
	assert_int_equal(hako_endpoint_start(s0, &err), 0);
	EPT_WAIT_FOR(ept_stats(c0).reconnects == 1);
	exchange(s, 0, 2);

	hako_endpoint_set_stop(s);
	assert_int_equal(htu_thread_count_reaches(base), base);
	for (int i = 0; i < NPAIRS; i++) {
		assert_int_equal(ept_stats(member(s, "s%d", i)).peers, 0);
		assert_int_equal(ept_stats(member(s, "c%d", i)).peers, 0);
	}
	/* Started again: one thread again, and every pair talks again. */
	assert_int_equal(hako_endpoint_set_start(s, &err), 0);
	assert_int_equal(thread_count(), base + 1);
	for (int i = 0; i < NPAIRS; i++) {
		exchange(s, i, 3);
	}
	udp_exchange(s, 3);
	hako_endpoint_set_close(s);
	assert_int_equal(htu_thread_count_reaches(base), base);
}

/* ---- forwarding inside a set ---- */

#define FWD_COUNT 64
#define FWD_BODY  65536

static int connect_to(uint16_t port, int rcvbuf)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	if (rcvbuf > 0) {
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	}
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons(port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

typedef struct fwd {
	hako_endpoint_t *dst;
	atomic_int failed;
} fwd_t;

/* On the set's loop, as hako-bridge forwards. */
static void forward(void *user, const hako_pdu_key_t *k, const void *data, size_t len)
{
	fwd_t *f = user;
	if (hako_endpoint_send(f->dst, k, data, len) != 0) {
		atomic_fetch_add(&f->failed, 1);
	}
}

typedef struct slow_reader {
	int fd;
	size_t want;
	size_t got;
} slow_reader_t;

/* A slow peer: takes nothing for 300 ms (the forwarder's queue fills), then all it is owed. */
static void *read_slowly(void *arg)
{
	slow_reader_t *r = arg;
	static uint8_t buf[65536];
	struct timespec ts = {0, 300000000};
	nanosleep(&ts, NULL);
	uint64_t end = ept_now_ms() + EPT_WAIT_MS;
	while (r->got < r->want && ept_now_ms() < end) {
		struct pollfd p = {.fd = r->fd, .events = POLLIN};
		if (poll(&p, 1, 100) <= 0) {
			continue;
		}
		ssize_t n = read(r->fd, buf, sizeof(buf));
		if (n <= 0) {
			break;
		}
		r->got += (size_t)n;
	}
	return NULL;
}

static void test_forward_in_set_blocking(void **state)
{
	(void)state;
	hako_error_t err;
	hako_endpoint_set_t *s = NULL;
	char comm[512], path[600];
	uint16_t p_src = free_port(), p_dst = free_port();
	snprintf(comm, sizeof(comm),
	         "{\"protocol\": \"tcp\", \"role\": \"server\", \"local\": {\"address\": "
	         "\"127.0.0.1\", \"port\": %u}}",
	         (unsigned)p_src);
	write_endpoint("src", comm);
	/* A small queue and socket buffer: the burst cannot hide in them. */
	snprintf(comm, sizeof(comm),
	         "{\"protocol\": \"tcp\", \"role\": \"server\", \"local\": {\"address\": "
	         "\"127.0.0.1\", \"port\": %u}, \"options\": {\"send_queue_depth\": 4, "
	         "\"send_buffer_size\": 4096, \"write_timeout_ms\": 10000}}",
	         (unsigned)p_dst);
	write_endpoint("dst", comm);
	ept_write_file("cache.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"queue\", "
	                             "\"depth\": 64}}");
	ept_write_file("fwd.json", "[{\"nodeId\": \"node1\", \"endpoints\": ["
	                           "{\"id\": \"src\", \"config_path\": \"src.json\"}, "
	                           "{\"id\": \"dst\", \"config_path\": \"dst.json\"}]}]");
	snprintf(path, sizeof(path), "%s/fwd.json", ept_dir());
	assert_int_equal(hako_endpoint_set_open(path, "node1", &s, &err), 0);
	assert_int_equal(hako_endpoint_set_start(s, &err), 0);
	hako_endpoint_t *src = hako_endpoint_set_get(s, "src");
	hako_endpoint_t *dst = hako_endpoint_set_get(s, "dst");
	fwd_t f = {.dst = dst};
	atomic_init(&f.failed, 0);
	hako_pdu_key_t k = ept_key("R", 1);
	assert_int_equal(hako_endpoint_subscribe(src, &k, forward, &f, NULL), 0);

	size_t fsize = hako_frame_size(HAKO_FRAME_V2, "R", FWD_BODY);
	slow_reader_t r = {.fd = connect_to(p_dst, 4096), .want = FWD_COUNT * fsize};
	EPT_WAIT_FOR(ept_stats(dst).peers == 1);
	int in = connect_to(p_src, 0);
	EPT_WAIT_FOR(ept_stats(src).peers == 1);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, read_slowly, &r), 0);

	static uint8_t body[FWD_BODY], frame[FWD_BODY + 1024];
	for (int i = 0; i < FWD_COUNT; i++) {
		memset(body, i, sizeof(body));
		hako_frame_t fr = {.channel_id = 1,
		                   .request_type = HAKO_FRAME_PDU_DATA,
		                   .body = body,
		                   .body_len = FWD_BODY};
		snprintf(fr.robot, sizeof(fr.robot), "R");
		size_t n = 0;
		assert_int_equal(hako_frame_encode(HAKO_FRAME_V2, &fr, frame, sizeof(frame), &n),
		                 0);
		assert_int_equal(n, fsize);
		for (size_t off = 0; off < n;) {
			ssize_t w = write(in, frame + off, n - off);
			assert_true(w > 0);
			off += (size_t)w;
		}
	}
	pthread_join(t, NULL);
	assert_int_equal(r.got, r.want); /* every frame, none dropped for the 300 ms stall */
	/* The loop counts a frame once its write returned: the reader may have its last bytes
	 * first. */
	EPT_WAIT_FOR(ept_stats(dst).frames_out == FWD_COUNT);
	hako_endpoint_stats_t st = ept_stats(dst);
	assert_int_equal(st.send_dropped, 0);
	assert_int_equal(st.frames_out, FWD_COUNT);
	assert_int_equal(atomic_load(&f.failed), 0);
	close(in);
	close(r.fd);
	hako_endpoint_set_close(s);
}

/* Endpoints opened on their own: one loop, one thread each. */
static void test_standalone_own_loop(void **state)
{
	(void)state;
	int base = htu_thread_count_settled();
	hako_endpoint_t *srv = ept_must_open(
	    "srv",
	    "{\"protocol\":\"tcp\",\"role\":\"server\",\"local\":{\"address\":\"127.0.0.1\","
	    "\"port\":LPORT}}",
	    0, 0);
	assert_int_equal(thread_count(), base + 1);
	hako_endpoint_t *cli = ept_must_open(
	    "cli",
	    "{\"protocol\":\"tcp\",\"role\":\"client\",\"remote\":{\"address\":\"127.0.0.1\","
	    "\"port\":RPORT}}",
	    0, hako_endpoint_local_port(srv));
	assert_int_equal(thread_count(), base + 2);
	hako_pdu_key_t k = ept_key("Drone", 1);
	/* Both ends: the server may count the peer before the client's loop saw its connect
	 * complete, and a send before that is HAKO_ENOTCONN. */
	EPT_WAIT_FOR(ept_stats(srv).peers == 1 && ept_stats(cli).peers == 1);
	assert_int_equal(hako_endpoint_send(cli, &k, "x", 1), 0);
	expect(srv, &k, "x");
	hako_endpoint_stop(cli);
	assert_int_equal(htu_thread_count_reaches(base + 1), base + 1);
	ept_close(cli);
	ept_close(srv);
	assert_int_equal(htu_thread_count_reaches(base), base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_set_one_thread, ept_close_all),
	    cmocka_unit_test_teardown(test_forward_in_set_blocking, ept_close_all),
	    cmocka_unit_test_teardown(test_standalone_own_loop, ept_close_all),
	};
	return cmocka_run_group_tests(tests, ept_group_setup, ept_group_teardown);
}
