/* hako-relay, the delaying lossy link of the network tests: bytes arrive intact, in order and
 * no earlier than the delay; cut, hold and restore do what they say; udp loses about the share
 * it is told to. The relay runs as a child; the ends of the link are sockets of this process. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
#include <unistd.h>

#include <cmocka.h>

#include "hako_test_util.h"
#include "relay_util.h"

#ifndef HAKO_RELAY_EXE
#error "HAKO_RELAY_EXE: the path of hako-relay"
#endif

#define WAIT_MS 10000 /* a bound for what must happen; never a performance figure */

struct fx {
	char dir[256];
	relay_t relay;
	int target; /* listening tcp socket, or the udp socket the relay forwards to */
	int target_port;
};

static int setup(void **state)
{
	static struct fx f;
	memset(&f, 0, sizeof(f));
	f.target = -1;
	if (htu_tmpdir(f.dir, sizeof(f.dir)) == NULL) {
		return -1;
	}
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	relay_stop(&f->relay);
	if (f->target >= 0) {
		close(f->target);
	}
	htu_kill_children();
	htu_remove_tmpdirs();
	return 0;
}

static int bound_socket(int type, int *port)
{
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	if (type == SOCK_STREAM) {
		assert_int_equal(listen(fd, 16), 0);
	}
	*port = ntohs(a.sin_port);
	return fd;
}

/* The relay from 127.0.0.1:0 to the fixture's target with these options. */
static void start_relay(struct fx *f, int udp, const char *const *opts)
{
	char listen_spec[] = "127.0.0.1:0", to[64];
	snprintf(to, sizeof(to), "127.0.0.1:%d", f->target_port);
	const char *args[16] = {udp ? "--udp" : "--tcp", "--listen", listen_spec, "--to", to};
	int n = 5;
	for (int i = 0; opts[i] != NULL && n < 15; i++) {
		args[n++] = opts[i];
	}
	args[n] = NULL;
	assert_int_equal(relay_start(&f->relay, HAKO_RELAY_EXE, f->dir, args), 0);
	assert_int_equal(f->relay.nroutes, 1);
	assert_true(f->relay.port[0] > 0);
}

static int connect_to(int type, int port)
{
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static int readable(int fd, int ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	return poll(&p, 1, ms) == 1;
}

static int accept_within(int lfd, int ms)
{
	assert_true(readable(lfd, ms));
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

/* Read exactly len bytes (or fail the test). */
static void read_all(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		assert_true(readable(fd, WAIT_MS));
		ssize_t n = recv(fd, (char *)buf + got, len - got, 0);
		assert_true(n > 0);
		got += (size_t)n;
	}
}

/* What a reset or closed connection reads: 0 (EOF) or ECONNRESET, within the bound. */
static void expect_closed(int fd)
{
	char c;
	assert_true(readable(fd, WAIT_MS));
	ssize_t n = recv(fd, &c, 1, 0);
	assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
}

static unsigned char pattern(size_t i, unsigned salt)
{
	return (unsigned char)((i * 7u + salt + i / 251u) % 251u);
}

/* 1 byte each way through a fresh relayed connection: the delay is a lower bound. */
static void one_byte_each_way(int a, int b, hako_time_t min_usec)
{
	char c = 'x';
	hako_time_t t0 = hako_now_usec();
	assert_int_equal(send(a, &c, 1, 0), 1);
	read_all(b, &c, 1);
	assert_true(hako_now_usec() - t0 >= min_usec);
	t0 = hako_now_usec();
	assert_int_equal(send(b, "y", 1, 0), 1);
	read_all(a, &c, 1);
	assert_int_equal(c, 'y');
	assert_true(hako_now_usec() - t0 >= min_usec);
}

/* tcp: the delay holds every byte back by at least delay; 2 MB each way at once, with a jitter
 * that would reorder chunks if order were not kept, arrive intact; EOF is passed on. */
static void test_tcp_delay_order(void **state)
{
	struct fx *f = *state;
	f->target = bound_socket(SOCK_STREAM, &f->target_port);
	const char *opts[] = {"--delay-ms", "30", "--jitter-ms", "10", "--seed", "1", NULL};
	start_relay(f, 0, opts);
	int cli = connect_to(SOCK_STREAM, f->relay.port[0]);
	int srv = accept_within(f->target, WAIT_MS);
	one_byte_each_way(cli, srv, 30000);

	enum { TOTAL = 2 << 20, PIECE = 1500 };
	unsigned char *in[2] = {malloc(TOTAL), malloc(TOTAL)};
	size_t sent[2] = {0, 0}, got[2] = {0, 0};
	int fds[2] = {cli, srv}; /* 0: client -> target, 1: target -> client */
	assert_non_null(in[0]);
	assert_non_null(in[1]);
	while (got[0] < TOTAL || got[1] < TOTAL) {
		struct pollfd p[2];
		for (int i = 0; i < 2; i++) {
			p[i] = (struct pollfd){fds[i], POLLIN | (sent[i] < TOTAL ? POLLOUT : 0), 0};
		}
		assert_true(poll(p, 2, WAIT_MS) > 0);
		for (int i = 0; i < 2; i++) {
			if ((p[i].revents & POLLOUT) && sent[i] < TOTAL) {
				unsigned char out[PIECE];
				size_t n = TOTAL - sent[i] < PIECE ? TOTAL - sent[i] : PIECE;
				for (size_t k = 0; k < n; k++) {
					out[k] = pattern(sent[i] + k, (unsigned)i);
				}
				ssize_t w = send(fds[i], out, n, MSG_DONTWAIT);
				assert_true(w > 0 || errno == EAGAIN);
				sent[i] += w > 0 ? (size_t)w : 0;
			}
			if (p[i].revents & POLLIN) {
				int from = 1 - i; /* what fds[i] reads was sent by the other end */
				ssize_t r = recv(fds[i], in[from] + got[from], TOTAL - got[from],
				                 MSG_DONTWAIT);
				assert_true(r > 0 || errno == EAGAIN);
				got[from] += r > 0 ? (size_t)r : 0;
			}
		}
	}
	for (int d = 0; d < 2; d++) {
		size_t bad = TOTAL;
		for (size_t k = 0; k < TOTAL && bad == TOTAL; k++) {
			if (in[d][k] != pattern(k, (unsigned)d)) {
				bad = k;
			}
		}
		if (bad != TOTAL) {
			fail_msg("direction %d: byte %zu differs", d, bad);
		}
	}
	free(in[0]);
	free(in[1]);
	/* An orderly end is passed on, after the queued bytes. */
	assert_int_equal(shutdown(cli, SHUT_WR), 0);
	expect_closed(srv);
	close(srv);
	expect_closed(cli);
	close(cli);
	assert_int_equal(relay_stat(&f->relay, "broken"), 0);
}

/* cut resets the connections and refuses new ones (they never reach the target); restore
 * lets new ones through. SIGUSR1 / SIGUSR2 do the same. */
static void test_tcp_cut_restore(void **state)
{
	struct fx *f = *state;
	f->target = bound_socket(SOCK_STREAM, &f->target_port);
	const char *opts[] = {"--delay-ms", "1", NULL};
	start_relay(f, 0, opts);
	int cli = connect_to(SOCK_STREAM, f->relay.port[0]);
	int srv = accept_within(f->target, WAIT_MS);
	one_byte_each_way(cli, srv, 1000);

	char reply[512];
	assert_int_equal(relay_cmd(&f->relay, "cut", reply, sizeof(reply)), 0);
	expect_closed(cli);
	expect_closed(srv);
	close(cli);
	close(srv);
	int refused = connect_to(SOCK_STREAM, f->relay.port[0]); /* the backlog takes it */
	expect_closed(refused);
	close(refused);
	assert_int_equal(relay_stat(&f->relay, "refused"), 1);
	assert_int_equal(relay_stat(&f->relay, "accepted"), 1);

	assert_int_equal(relay_cmd(&f->relay, "restore", reply, sizeof(reply)), 0);
	cli = connect_to(SOCK_STREAM, f->relay.port[0]);
	srv = accept_within(f->target, WAIT_MS);
	one_byte_each_way(cli, srv, 1000);

	int ok;
	kill(f->relay.pid, SIGUSR1);
	HTU_WAIT_UNTIL(ok,
	               relay_cmd(&f->relay, "stats", reply, sizeof(reply)) == 0 &&
	                   strstr(reply, " mode=cut ") != NULL,
	               HTU_TIMEOUT_USEC);
	assert_true(ok);
	expect_closed(cli);
	kill(f->relay.pid, SIGUSR2);
	HTU_WAIT_UNTIL(ok,
	               relay_cmd(&f->relay, "stats", reply, sizeof(reply)) == 0 &&
	                   strstr(reply, " mode=open ") != NULL,
	               HTU_TIMEOUT_USEC);
	assert_true(ok);
	close(cli);
	close(srv);
	cli = connect_to(SOCK_STREAM, f->relay.port[0]);
	srv = accept_within(f->target, WAIT_MS);
	one_byte_each_way(cli, srv, 0);
	close(cli);
	close(srv);
}

/* hold stalls without losing: nothing arrives while held, everything after restore. */
static void test_tcp_hold(void **state)
{
	struct fx *f = *state;
	f->target = bound_socket(SOCK_STREAM, &f->target_port);
	const char *opts[] = {NULL};
	start_relay(f, 0, opts);
	int cli = connect_to(SOCK_STREAM, f->relay.port[0]);
	int srv = accept_within(f->target, WAIT_MS);
	one_byte_each_way(cli, srv, 0);

	assert_int_equal(relay_cmd(&f->relay, "hold", NULL, 0), 0);
	enum { N = 10000 };
	static unsigned char out[N], in[N];
	for (size_t k = 0; k < N; k++) {
		out[k] = pattern(k, 5);
	}
	assert_int_equal(send(cli, out, N, 0), N);
	/* Without the hold (no delay) the bytes would be there at once. */
	assert_false(readable(srv, 300));
	assert_int_equal(relay_cmd(&f->relay, "restore", NULL, 0), 0);
	read_all(srv, in, N);
	assert_memory_equal(in, out, N);
	close(cli);
	close(srv);
}

/* tcp --loss: a lossy link breaks the connection (both ends reset), it never drops bytes. */
static void test_tcp_loss_breaks(void **state)
{
	struct fx *f = *state;
	f->target = bound_socket(SOCK_STREAM, &f->target_port);
	const char *opts[] = {"--loss", "1", NULL};
	start_relay(f, 0, opts);
	int cli = connect_to(SOCK_STREAM, f->relay.port[0]);
	int srv = accept_within(f->target, WAIT_MS);
	assert_int_equal(send(cli, "z", 1, 0), 1);
	expect_closed(cli);
	expect_closed(srv);
	assert_int_equal(relay_stat(&f->relay, "broken"), 1);
	close(cli);
	close(srv);
}

static int udp_socket_to(int port)
{
	return connect_to(SOCK_DGRAM, port);
}

/* udp: delayed both ways, the reply finds the client; cut drops, restore lets through. */
static void test_udp_delay_reply(void **state)
{
	struct fx *f = *state;
	f->target = bound_socket(SOCK_DGRAM, &f->target_port);
	const char *opts[] = {"--delay-ms", "20", "--jitter-ms", "5", NULL};
	start_relay(f, 1, opts);
	int cli = udp_socket_to(f->relay.port[0]);
	char buf[64];
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	hako_time_t t0 = hako_now_usec();
	assert_int_equal(send(cli, "ping", 4, 0), 4);
	assert_true(readable(f->target, WAIT_MS));
	assert_int_equal(recvfrom(f->target, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen),
	                 4);
	hako_time_t t1 = hako_now_usec();
	assert_true(t1 - t0 >= 20000);
	assert_memory_equal(buf, "ping", 4);
	assert_int_equal(sendto(f->target, "pong", 4, 0, (struct sockaddr *)&from, flen), 4);
	assert_true(readable(cli, WAIT_MS));
	assert_int_equal(recv(cli, buf, sizeof(buf), 0), 4);
	assert_true(hako_now_usec() - t1 >= 20000);
	assert_memory_equal(buf, "pong", 4);

	assert_int_equal(relay_cmd(&f->relay, "cut", NULL, 0), 0);
	assert_int_equal(send(cli, "lost", 4, 0), 4);
	int ok;
	HTU_WAIT_UNTIL(ok, relay_stat(&f->relay, "dgrams_dropped") == 1, HTU_TIMEOUT_USEC);
	assert_true(ok);
	assert_int_equal(relay_cmd(&f->relay, "restore", NULL, 0), 0);
	assert_int_equal(send(cli, "back", 4, 0), 4);
	assert_true(readable(f->target, WAIT_MS));
	assert_int_equal(recv(f->target, buf, sizeof(buf), 0), 4);
	assert_memory_equal(buf, "back", 4); /* not "lost": the cut dropped it */
	close(cli);
}

static long long drain_udp(int fd)
{
	long long n = 0;
	uint32_t v;
	while (recv(fd, &v, sizeof(v), MSG_DONTWAIT) > 0) {
		n++;
	}
	return n;
}

/* udp --loss 0.5 over 10,000 datagrams: between 40 % and 60 % are lost (the chance of a fair
 * draw landing outside is about 1e-89), and every one not lost arrives. */
static void test_udp_loss_rate(void **state)
{
	struct fx *f = *state;
	f->target = bound_socket(SOCK_DGRAM, &f->target_port);
	const char *opts[] = {"--loss", "0.5", "--seed", "7", NULL};
	start_relay(f, 1, opts);
	int cli = udp_socket_to(f->relay.port[0]);
	enum { TOTAL = 10000, BATCH = 100 };
	long long received = 0;
	for (int sent = 0; sent < TOTAL;) {
		for (int k = 0; k < BATCH; k++, sent++) {
			uint32_t v = (uint32_t)sent;
			assert_int_equal(send(cli, &v, sizeof(v), 0), (ssize_t)sizeof(v));
		}
		/* Paced by batches so that no socket buffer overflows: every datagram is either
		 * dropped by the relay on purpose or received here. */
		int ok;
		long long dropped = 0;
		HTU_WAIT_UNTIL(
		    ok,
		    (received += drain_udp(f->target),
		     (dropped = relay_stat(&f->relay, "dgrams_dropped")) + received == sent),
		    HTU_TIMEOUT_USEC);
		if (!ok) {
			fail_msg("after %d datagrams: %lld received, %lld dropped", sent, received,
			         dropped);
		}
	}
	long long dropped = relay_stat(&f->relay, "dgrams_dropped");
	printf("udp loss 0.5: %lld of %d dropped\n", dropped, TOTAL);
	assert_in_range(dropped, TOTAL * 4 / 10, TOTAL * 6 / 10);
	assert_int_equal(received, TOTAL - dropped);
	close(cli);
}

/* The control socket: changes show in stats, bad lines get an error line. */
static void test_control(void **state)
{
	struct fx *f = *state;
	f->target = bound_socket(SOCK_DGRAM, &f->target_port);
	const char *opts[] = {NULL};
	start_relay(f, 1, opts);
	char reply[512];
	assert_int_equal(relay_cmd(&f->relay, "delay 5", reply, sizeof(reply)), 0);
	assert_int_equal(relay_cmd(&f->relay, "jitter 0.5", reply, sizeof(reply)), 0);
	assert_int_equal(relay_cmd(&f->relay, "loss 0.25", reply, sizeof(reply)), 0);
	assert_int_equal(relay_cmd(&f->relay, "stats", reply, sizeof(reply)), 0);
	assert_non_null(strstr(reply, " delay_ms=5.000 jitter_ms=0.500 loss=0.25\n"));
	assert_int_equal(relay_cmd(&f->relay, "loss 2", reply, sizeof(reply)), -1);
	assert_non_null(strstr(reply, "error: 'loss 2'"));
	assert_int_equal(relay_cmd(&f->relay, "bogus", reply, sizeof(reply)), -1);
	assert_non_null(strstr(reply, "error: 'bogus'"));
	/* quit ends it: exit 0 */
	assert_int_equal(relay_cmd(&f->relay, "quit", reply, sizeof(reply)), 0);
	assert_true(htu_join_child(f->relay.pid, HTU_TIMEOUT_USEC));
	f->relay.pid = 0;
}

int main(void)
{
	htu_init();
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_tcp_delay_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tcp_cut_restore, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tcp_hold, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tcp_loss_breaks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_udp_delay_reply, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_udp_loss_rate, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_control, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
