/* The TCP mux (a tcp server file with expected_clients, Hakoniwa's mux; comm_tcp*.c), in one
 * process, on ports the kernel picks (port 0, then hako_endpoint_local_port):
 *  - streams: two plain tcp clients, each its own stream of PDUs into the one port, both
 *    arrive whole and in order; the server's PDUs reach both; the endpoint is ready once the
 *    expected clients are connected;
 *  - named client: a client that introduces itself by name before its frames (Hakoniwa's mux
 *    clients send no name: nothing on the wire names them) is refused with a log line that says
 *    so, and the server keeps serving the valid stream and new clients;
 *  - reconnect: a client that goes away and connects again gets its stream back (the PDUs it
 *    sends arrive under the same keys, what the server sends reaches it);
 *  - flood: 1,000 connections (garbage, half a header, nothing; then closed) against the mux
 *    while two clients stream: every PDU of both arrives, the server stays up, and once the flood
 *    is closed the process holds no more descriptors than before it.
 * The conformance suite of the stream comms also runs against the mux (test_pairs.c,
 * endpoint.pairs.tcp_mux_*). */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
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
#include "hako/endpoint_config.h"
#include "hako/frame.h"

#include "ep_test_util.h"

#define FLOOD    1000
#define PDU_SIZE 64
#define MAX_KEYS 4

/* Hakoniwa's mux file (no role), and its plain tcp clients. */
#define MUX(n)                                                                                     \
	"{\"protocol\":\"tcp\",\"name\":\"mux\",\"direction\":\"inout\",\"expected_clients\":" #n  \
	",\"local\":{\"address\":\"127.0.0.1\",\"port\":LPORT},"                                   \
	"\"options\":{\"read_timeout_ms\":1000,\"write_timeout_ms\":5000}}"
#define CLIENT                                                                                     \
	"{\"protocol\":\"tcp\",\"role\":\"client\",\"direction\":\"inout\","                       \
	"\"remote\":{\"address\":\"127.0.0.1\",\"port\":RPORT},"                                   \
	"\"options\":{\"write_timeout_ms\":5000,\"send_queue_depth\":4096}}"

/* What a subscriber saw of each stream (robot "s0".."s3": its PDUs numbered from 0). */
typedef struct streams {
	atomic_uint count[MAX_KEYS];
	atomic_int bad; /* a PDU out of order, of another size, or of another robot */
} streams_t;

static streams_t g_seen;
static int g_raw[FLOOD + 8];
static int g_nraw;
static int g_saved_stderr = -1;

static void stderr_restore(void)
{
	if (g_saved_stderr >= 0) {
		fflush(stderr);
		dup2(g_saved_stderr, 2);
		close(g_saved_stderr);
		g_saved_stderr = -1;
	}
}

static int teardown(void **state)
{
	stderr_restore();
	for (int i = 0; i < g_nraw; i++) {
		if (g_raw[i] >= 0) {
			close(g_raw[i]);
		}
	}
	g_nraw = 0;
	return ept_close_all(state);
}

static void on_pdu(void *user, const hako_pdu_key_t *k, const void *data, size_t len)
{
	streams_t *s = user;
	unsigned i = (unsigned)(k->robot[1] - '0');
	uint32_t v = 0;
	if (k->robot[0] != 's' || i >= MAX_KEYS || k->robot[2] != '\0' || len != PDU_SIZE) {
		atomic_store(&s->bad, 1);
		return;
	}
	memcpy(&v, data, sizeof(v));
	if (v != atomic_load(&s->count[i])) {
		atomic_store(&s->bad, 1);
	}
	atomic_fetch_add(&s->count[i], 1);
}

static void watch(hako_endpoint_t *ep, streams_t *s)
{
	memset(s, 0, sizeof(*s));
	assert_int_equal(hako_endpoint_subscribe(ep, NULL, on_pdu, s, NULL), 0);
}

/* PDU seq of stream i, sent by ep (a blocking send: it waits for room, never drops). */
static void send_seq(hako_endpoint_t *ep, unsigned i, uint32_t seq)
{
	char robot[4] = {'s', (char)('0' + i), '\0', '\0'};
	hako_pdu_key_t k = ept_key(robot, 1);
	uint8_t pdu[PDU_SIZE];
	memset(pdu, 0xA5, sizeof(pdu));
	memcpy(pdu, &seq, sizeof(seq));
	int r = hako_endpoint_send(ep, &k, pdu, sizeof(pdu));
	if (r != 0) {
		fail_msg("stream %u, PDU %u: send failed: %s", i, (unsigned)seq, hako_strerror(r));
	}
}

static uint32_t expected_clients(const hako_endpoint_t *ep)
{
	const hako_comm_tcp_options_t *o = hako_comm_tcp_options(hako_endpoint_config(ep)->comm);
	assert_non_null(o);
	return o->expected_clients;
}

/* The mux and n clients, all connected (the mux is ready: as many sessions as it expects). */
static hako_endpoint_t *mux_with_clients(hako_endpoint_t **cli, int n)
{
	char comm[600];
	snprintf(comm, sizeof(comm), "%s", n == 2 ? MUX(2) : MUX(1));
	hako_endpoint_t *mux = ept_must_open("mux", comm, 0, 0);
	uint16_t port = hako_endpoint_local_port(mux);
	assert_true(port != 0);
	assert_int_equal(expected_clients(mux), (uint32_t)n);
	assert_int_equal(hako_endpoint_config(mux)->comm->role, HAKO_COMM_SERVER);
	for (int i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "cli%d", i);
		cli[i] = ept_must_open(name, CLIENT, -1, port);
	}
	EPT_WAIT_FOR(ept_stats(mux).peers >= expected_clients(mux));
	for (int i = 0; i < n; i++) {
		EPT_WAIT_FOR(ept_stats(cli[i]).peers == 1);
	}
	return mux;
}

static int raw_connect(uint16_t port)
{
	assert_true(g_nraw < (int)(sizeof(g_raw) / sizeof(g_raw[0])));
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		fail_msg("connect to 127.0.0.1:%u: %s", (unsigned)port, strerror(errno));
	}
	g_raw[g_nraw++] = fd;
	return fd;
}

static void raw_send(int fd, const void *b, size_t n)
{
	(void)!send(fd, b, n, MSG_NOSIGNAL); /* the server may have closed it already */
}

static size_t open_fds(void)
{
	size_t n = 0;
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	while (readdir(d) != NULL) {
		n++;
	}
	closedir(d);
	return n;
}

/* ---- tests ---- */

/* Two clients, one port, two streams: each arrives whole and in order; the mux's PDUs reach
 * both clients. */
static void test_mux_streams(void **state)
{
	(void)state;
	hako_endpoint_t *cli[2];
	hako_endpoint_t *mux = mux_with_clients(cli, 2);
	watch(mux, &g_seen);
	const unsigned n = 2000;
	for (uint32_t s = 0; s < n; s++) {
		send_seq(cli[0], 0, s);
		send_seq(cli[1], 1, s);
	}
	EPT_WAIT_FOR(atomic_load(&g_seen.count[0]) == n && atomic_load(&g_seen.count[1]) == n);
	assert_int_equal(atomic_load(&g_seen.bad), 0);
	streams_t back[2];
	watch(cli[0], &back[0]);
	watch(cli[1], &back[1]);
	for (uint32_t s = 0; s < 100; s++) {
		send_seq(mux, 2, s);
	}
	EPT_WAIT_FOR(atomic_load(&back[0].count[2]) == 100 &&
	             atomic_load(&back[1].count[2]) == 100);
	assert_int_equal(atomic_load(&back[0].bad) + atomic_load(&back[1].bad), 0);
	hako_endpoint_stats_t st = ept_stats(mux);
	assert_int_equal(st.accepted, 2);
	assert_int_equal(st.rejected + st.disconnects + st.send_dropped, 0);
}

/* A client that names itself first: refused with a line that says why, the valid stream and
 * a new client served on. */
static void test_mux_named_client_refused(void **state)
{
	(void)state;
	char log_path[700];
	snprintf(log_path, sizeof(log_path), "%s/mux.stderr", ept_dir());
	hako_endpoint_t *cli[1];
	hako_endpoint_t *mux = mux_with_clients(cli, 1);
	watch(mux, &g_seen);
	for (uint32_t s = 0; s < 500; s++) {
		send_seq(cli[0], 0, s);
	}
	/* The library logs to stderr: catch it in a file for the test's duration. */
	fflush(stderr);
	g_saved_stderr = dup(2);
	int lf = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(g_saved_stderr >= 0 && lf >= 0);
	dup2(lf, 2);
	close(lf);
	int fd = raw_connect(hako_endpoint_local_port(mux));
	static const char hello[] = "{\"client_name\": \"intruder\"}\n";
	raw_send(fd, hello, sizeof(hello) - 1);
	for (uint32_t s = 500; s < 1000; s++) {
		send_seq(cli[0], 0, s);
	}
	EPT_WAIT_FOR(ept_stats(mux).rejected + ept_stats(mux).disconnects == 1);
	stderr_restore();
	char *log = htu_slurp(log_path);
	assert_non_null(log);
	int said = strstr(log, "endpoint 'mux': session mux_2: client 127.0.0.1:") != NULL &&
	           strstr(log, "refused: ") != NULL && strstr(log, "does not name itself") != NULL;
	if (!said) {
		fprintf(stderr, "log:\n%s", log);
	}

	assert_true(said);
	EPT_WAIT_FOR(atomic_load(&g_seen.count[0]) == 1000);
	assert_int_equal(atomic_load(&g_seen.bad), 0);
	assert_int_equal(ept_stats(cli[0]).disconnects, 0);
	/* The server is up: another client comes in and is heard. */
	hako_endpoint_t *late = ept_must_open("late", CLIENT, -1, hako_endpoint_local_port(mux));
	EPT_WAIT_FOR(ept_stats(late).peers == 1);
	send_seq(late, 1, 0);
	EPT_WAIT_FOR(atomic_load(&g_seen.count[1]) == 1);
	assert_int_equal(ept_stats(mux).peers, 2);
}

/* A client goes away and connects again: its stream goes on under the same keys, and what the
 * mux sends reaches it. */
static void test_mux_reconnect(void **state)
{
	(void)state;
	hako_endpoint_t *cli[1];
	hako_endpoint_t *mux = mux_with_clients(cli, 1);
	uint16_t port = hako_endpoint_local_port(mux);
	watch(mux, &g_seen);
	for (uint32_t s = 0; s < 300; s++) {
		send_seq(cli[0], 0, s);
	}
	ept_close(cli[0]); /* writes what is queued, then ends the connection in order */
	EPT_WAIT_FOR(ept_stats(mux).peers == 0);
	assert_int_equal(atomic_load(&g_seen.count[0]), 300);
	hako_endpoint_t *again = ept_must_open("cli0", CLIENT, -1, port);
	EPT_WAIT_FOR(ept_stats(mux).peers == 1 && ept_stats(again).peers == 1);
	for (uint32_t s = 300; s < 600; s++) {
		send_seq(again, 0, s);
	}
	EPT_WAIT_FOR(atomic_load(&g_seen.count[0]) == 600);
	assert_int_equal(atomic_load(&g_seen.bad), 0);
	streams_t back;
	watch(again, &back);
	send_seq(mux, 3, 0);
	EPT_WAIT_FOR(atomic_load(&back.count[3]) == 1);
	assert_int_equal(ept_stats(mux).accepted, 2);
}

/* 1,000 connections against the mux while two clients stream. */
static void test_mux_flood(void **state)
{
	(void)state;
	hako_endpoint_t *cli[2];
	hako_endpoint_t *mux = mux_with_clients(cli, 2);
	uint16_t port = hako_endpoint_local_port(mux);
	watch(mux, &g_seen);
	size_t before = open_fds();
	uint8_t hdr[HAKO_FRAME_V2_HEADER_SIZE];
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr + 4, "HAKO", 4);
	uint32_t seq = 0;
	for (int i = 0; i < FLOOD; i++) {
		int fd = raw_connect(port);
		if (i % 3 == 0) {
			raw_send(fd, "garbage garbage garbage garbage", 31);
		} else if (i % 3 == 1) {
			raw_send(fd, hdr, 100);
		}
		if (i % 4 == 3) {
			send_seq(cli[0], 0, seq);
			send_seq(cli[1], 1, seq);
			seq++;
		}
	}
	for (int i = 0; i < g_nraw; i++) {
		close(g_raw[i]);
		g_raw[i] = -1;
	}
	g_nraw = 0;
	for (int i = 0; i < 100; i++, seq++) {
		send_seq(cli[0], 0, seq);
		send_seq(cli[1], 1, seq);
	}
	EPT_WAIT_FOR(atomic_load(&g_seen.count[0]) == seq && atomic_load(&g_seen.count[1]) == seq);
	assert_int_equal(atomic_load(&g_seen.bad), 0);
	assert_int_equal(ept_stats(cli[0]).disconnects + ept_stats(cli[1]).disconnects, 0);
	/* Every flood connection ended on the server's side too: no descriptor left behind. */
	EPT_WAIT_FOR(ept_stats(mux).peers == 2 && open_fds() <= before);
	hako_endpoint_stats_t st = ept_stats(mux);
	printf("flood: accepted %llu, rejected %llu, disconnects %llu\n",
	       (unsigned long long)st.accepted, (unsigned long long)st.rejected,
	       (unsigned long long)st.disconnects);
	assert_true(st.accepted + st.rejected >= FLOOD + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_mux_streams, teardown),
	    cmocka_unit_test_teardown(test_mux_named_client_refused, teardown),
	    cmocka_unit_test_teardown(test_mux_reconnect, teardown),
	    cmocka_unit_test_teardown(test_mux_flood, teardown),
	};
	return cmocka_run_group_tests_name("endpoint.tcp_mux", tests, ept_group_setup_many_fds,
	                                   ept_group_teardown);
}
