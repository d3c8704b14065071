/* The udp comm: pairs of endpoints in this process on 127.0.0.1 (ports picked by the kernel),
 * both directions in v2 and v1, replies to the last sender, oversize PDUs refused at send,
 * multicast on loopback, malformed datagrams counted and survived. */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/endpoint.h"
#include "hako/frame.h"

#define WAIT_MS 10000

static char g_dir[256];
static hako_endpoint_t *g_eps[8]; /* open ones: a failed test's are closed by its teardown */

static void track(hako_endpoint_t *ep)
{
	for (int i = 0; i < 8; i++) {
		if (g_eps[i] == NULL) {
			g_eps[i] = ep;
			return;
		}
	}
	fail_msg("too many endpoints");
}

static void close_ep(hako_endpoint_t *ep)
{
	for (int i = 0; i < 8; i++) {
		if (g_eps[i] == ep) {
			g_eps[i] = NULL;
		}
	}
	hako_endpoint_close(ep);
}

static int close_all(void **state)
{
	(void)state;
	for (int i = 0; i < 8; i++) {
		hako_endpoint_close(g_eps[i]);
		g_eps[i] = NULL;
	}
	return 0;
}

static void write_file(const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", g_dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* comm with LPORT replaced by local_port (<= 0: 0, any free port) and RPORT by remote_port. */
static void put_ports(const char *comm, int local_port, int remote_port, char *out, size_t cap)
{
	size_t n = 0;
	while (*comm != '\0') {
		int lp = strncmp(comm, "LPORT", 5) == 0;
		if (lp || strncmp(comm, "RPORT", 5) == 0) {
			int v = lp ? (local_port > 0 ? local_port : 0) : remote_port;
			n += (size_t)snprintf(out + n, cap - n, "%d", v);
			comm += 5;
		} else if (n + 1 < cap) {
			out[n++] = *comm++;
		}
		assert_true(n + 1 < cap);
	}
	out[n] = '\0';
}

/* Write <name>.json (+ cache, comm with its ports put in: put_ports), load it and open. */
static int open_ep(const char *name, const char *comm, int local_port, int remote_port,
                   hako_endpoint_t **out, hako_error_t *err)
{
	char buf[1024], file[300];
	snprintf(file, sizeof(file), "%s_comm.json", name);
	put_ports(comm, local_port, remote_port, buf, sizeof(buf));
	write_file(file, buf);
	snprintf(file, sizeof(file), "%s_cache.json", name);
	write_file(file, "{\"type\":\"buffer\",\"store\":{\"mode\":\"queue\",\"depth\":64}}");
	snprintf(buf, sizeof(buf),
	         "{\"name\":\"%s\",\"cache\":\"%s_cache.json\",\"comm\":\"%s_comm.json\","
	         "\"pdu_def_path\":null}",
	         name, name, name);
	snprintf(file, sizeof(file), "%s.json", name);
	write_file(file, buf);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.json", g_dir, name);
	hako_endpoint_config_t *cfg = NULL;
	int r = hako_endpoint_config_load(path, &cfg, err);
	if (r != 0) {
		return r;
	}
	r = hako_endpoint_open_config(cfg, out, err);
	if (r == 0) {
		track(*out);
	}
	return r;
}

static hako_endpoint_t *must_open(const char *name, const char *comm, int lport, int rport)
{
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	hako_error_clear(&err);
	int r = open_ep(name, comm, lport, rport, &ep, &err);
	if (r != 0) {
		fprintf(stderr, "open %s: %s: %s\n", name, hako_strerror(r), err.message);
	}
	assert_int_equal(r, 0);
	assert_int_equal(hako_endpoint_start(ep, &err), 0);
	return ep;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static hako_pdu_key_t key(const char *robot, int32_t ch)
{
	hako_pdu_key_t k;
	memset(&k, 0, sizeof(k));
	snprintf(k.robot, sizeof(k.robot), "%s", robot);
	k.channel_id = ch;
	return k;
}

/* Poll the cache up to 10 s. */
static int recv_wait(hako_endpoint_t *ep, const hako_pdu_key_t *k, void *buf, size_t cap,
                     size_t *len)
{
	uint64_t end = now_ms() + WAIT_MS;
	int r;
	while ((r = hako_endpoint_recv(ep, k, buf, cap, len)) == HAKO_EAGAIN && now_ms() < end) {
		usleep(2000);
	}
	return r;
}

static hako_endpoint_stats_t stats(const hako_endpoint_t *ep)
{
	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(ep, &st);
	return st;
}

#define WAIT_FOR(cond)                                                                             \
	do {                                                                                       \
		uint64_t end_ = now_ms() + WAIT_MS;                                                \
		while (!(cond) && now_ms() < end_) {                                               \
			usleep(2000);                                                              \
		}                                                                                  \
	} while (0)

static int setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/tmp/hako_udp_XXXXXX");
	return mkdtemp(g_dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void one_way_and_reply(const char *ver)
{
	char comm[512];
	/* A: inout, no remote (replies go to the last sender). */
	snprintf(comm, sizeof(comm),
	         "{\"protocol\":\"udp\",\"direction\":\"inout\",\"comm_raw_version\":\"%s\","
	         "\"local\":{\"address\":\"127.0.0.1\",\"port\":LPORT}}",
	         ver);
	hako_endpoint_t *a = must_open("a", comm, 0, 0);
	uint16_t pa = hako_endpoint_local_port(a);
	assert_true(pa != 0);
	snprintf(comm, sizeof(comm),
	         "{\"protocol\":\"udp\",\"direction\":\"inout\",\"comm_raw_version\":\"%s\","
	         "\"local\":{\"address\":\"127.0.0.1\",\"port\":LPORT},"
	         "\"remote\":{\"address\":\"127.0.0.1\",\"port\":RPORT}}",
	         ver);
	hako_endpoint_t *b = must_open("b", comm, 0, pa);
	assert_true(hako_endpoint_local_port(b) != 0);
	assert_true(hako_endpoint_local_port(b) != pa);

	hako_pdu_key_t k = key("Drone", 3);
	char msg[200], got[256];
	size_t len = 0;
	/* A has heard nobody yet. */
	assert_int_equal(hako_endpoint_send(a, &k, "x", 1), HAKO_ENOTCONN);
	assert_int_equal(stats(a).send_dropped, 1);

	for (int i = 0; i < 5; i++) {
		snprintf(msg, sizeof(msg), "b to a %d (%s)", i, ver);
		assert_int_equal(hako_endpoint_send(b, &k, msg, strlen(msg)), 0);
		assert_int_equal(recv_wait(a, &k, got, sizeof(got), &len), 0);
		assert_int_equal(len, strlen(msg));
		assert_memory_equal(got, msg, len);
	}
	/* A replies to its last sender. */
	hako_pdu_key_t k2 = key("Other", -7);
	snprintf(msg, sizeof(msg), "a to b (%s)", ver);
	assert_int_equal(hako_endpoint_send(a, &k2, msg, strlen(msg)), 0);
	assert_int_equal(recv_wait(b, &k2, got, sizeof(got), &len), 0);
	assert_int_equal(len, strlen(msg));
	assert_memory_equal(got, msg, len);
	/* An empty PDU is a PDU. */
	assert_int_equal(hako_endpoint_send(b, &k, NULL, 0), 0);
	assert_int_equal(recv_wait(a, &k, got, sizeof(got), &len), 0);
	assert_int_equal(len, 0);

	hako_endpoint_stats_t sa = stats(a), sb = stats(b);
	assert_int_equal(sa.frames_in, 6);
	assert_int_equal(sa.frames_out, 1);
	assert_int_equal(sb.frames_out, 6);
	assert_int_equal(sb.frames_in, 1);
	assert_int_equal(sa.bytes_out, strlen(msg));
	assert_int_equal(sa.rejected, 0);

	/* stop keeps the port; start again receives again. */
	assert_int_equal(hako_endpoint_stop(a), 0);
	assert_int_equal(hako_endpoint_local_port(a), pa);
	assert_int_equal(hako_endpoint_start(a, NULL), 0);
	assert_int_equal(hako_endpoint_send(b, &k, "again", 5), 0);
	assert_int_equal(recv_wait(a, &k, got, sizeof(got), &len), 0);
	assert_int_equal(len, 5);
	close_ep(b);
	close_ep(a);
}

static void test_v2_both_ways(void **state)
{
	(void)state;
	one_way_and_reply("v2");
}

static void test_v1_both_ways(void **state)
{
	(void)state;
	one_way_and_reply("v1");
}

static void test_directions(void **state)
{
	(void)state;
	hako_endpoint_t *in = must_open(
	    "in",
	    "{\"protocol\":\"udp\",\"direction\":\"in\",\"local\":{\"address\":\"127.0.0.1\","
	    "\"port\":LPORT}}",
	    0, 0);
	uint16_t pin = hako_endpoint_local_port(in);
	hako_endpoint_t *out = must_open("out",
	                                 "{\"protocol\":\"udp\",\"direction\":\"out\","
	                                 "\"remote\":{\"address\":\"127.0.0.1\",\"port\":RPORT}}",
	                                 -1, pin);
	assert_int_equal(hako_endpoint_local_port(out), 0);
	hako_pdu_key_t k = key("r", 1);
	char got[16];
	size_t len;
	assert_int_equal(hako_endpoint_send(in, &k, "no", 2), HAKO_EPERM);
	assert_int_equal(hako_endpoint_send(out, &k, "yes", 3), 0);
	assert_int_equal(recv_wait(in, &k, got, sizeof(got), &len), 0);
	assert_int_equal(len, 3);
	close_ep(out);
	close_ep(in);
}

static void test_oversize(void **state)
{
	(void)state;
	hako_endpoint_t *a = must_open(
	    "big_a",
	    "{\"protocol\":\"udp\",\"direction\":\"in\",\"local\":{\"address\":\"127.0.0.1\","
	    "\"port\":LPORT}}",
	    0, 0);
	uint16_t pa = hako_endpoint_local_port(a);
	hako_endpoint_t *b = must_open("big_b",
	                               "{\"protocol\":\"udp\",\"direction\":\"out\","
	                               "\"remote\":{\"address\":\"127.0.0.1\",\"port\":RPORT}}",
	                               -1, pa);
	hako_endpoint_t *c = must_open(
	    "big_c",
	    "{\"protocol\":\"udp\",\"direction\":\"out\",\"remote\":{\"address\":\"127.0.0.1\","
	    "\"port\":RPORT},\"options\":{\"max_body_bytes\":1000}}",
	    -1, pa);
	size_t fit = 65507 - HAKO_FRAME_V2_HEADER_SIZE;
	uint8_t *buf = calloc(1, 70000), *got = calloc(1, 70000);
	assert_non_null(buf);
	assert_non_null(got);
	for (size_t i = 0; i < fit + 1; i++) {
		buf[i] = (uint8_t)(i * 7);
	}
	hako_pdu_key_t k = key("big", 0);
	assert_int_equal(hako_endpoint_send(b, &k, buf, fit + 1), HAKO_ETOOBIG);
	assert_int_equal(hako_endpoint_send(b, &k, buf, 200000), HAKO_ETOOBIG);
	assert_int_equal(stats(b).send_dropped, 2);
	assert_int_equal(stats(b).frames_out, 0);
	assert_int_equal(hako_endpoint_send(c, &k, buf, 1001), HAKO_ETOOBIG);
	assert_int_equal(stats(c).send_dropped, 1);
	/* The largest that fits goes through whole. */
	assert_int_equal(hako_endpoint_send(b, &k, buf, fit), 0);
	size_t len = 0;
	assert_int_equal(recv_wait(a, &k, got, 70000, &len), 0);
	assert_int_equal(len, fit);
	assert_memory_equal(got, buf, fit);
	assert_int_equal(hako_endpoint_send(c, &k, buf, 1000), 0);
	assert_int_equal(recv_wait(a, &k, got, 70000, &len), 0);
	assert_int_equal(len, 1000);
	assert_int_equal(stats(a).rejected, 0);
	free(buf);
	free(got);
	close_ep(c);
	close_ep(b);
	close_ep(a);
}

static void test_multicast(void **state)
{
	(void)state;
	const char *group = "239.255.42.99";
	char comm[600];
	snprintf(comm, sizeof(comm),
	         "{\"protocol\":\"udp\",\"direction\":\"in\",\"local\":{\"address\":\"0.0.0.0\","
	         "\"port\":LPORT},\"options\":{\"multicast\":{\"enabled\":true,\"group\":\"%s\","
	         "\"interface\":\"0.0.0.0\",\"ttl\":1}}}",
	         group);
	hako_endpoint_t *a = NULL;
	hako_error_t err;
	hako_error_clear(&err);
	int r = open_ep("mc_a", comm, 0, 0, &a, &err);
	if (r == HAKO_EIO) {
		fprintf(stderr, "multicast: the kernel refuses (%s): skipped\n", err.message);
		skip();
	}
	assert_int_equal(r, 0);
	assert_int_equal(hako_endpoint_start(a, NULL), 0);
	uint16_t pa = hako_endpoint_local_port(a);
	snprintf(comm, sizeof(comm),
	         "{\"protocol\":\"udp\",\"direction\":\"out\",\"remote\":{\"address\":\"%s\","
	         "\"port\":RPORT},\"options\":{\"multicast\":{\"enabled\":true,\"group\":\"%s\","
	         "\"ttl\":1}}}",
	         group, group);
	hako_endpoint_t *b = NULL;
	r = open_ep("mc_b", comm, -1, pa, &b, &err);
	if (r == HAKO_EIO) {
		close_ep(a);
		fprintf(stderr, "multicast: the kernel refuses (%s): skipped\n", err.message);
		skip();
	}
	assert_int_equal(r, 0);
	assert_int_equal(hako_endpoint_start(b, NULL), 0);
	hako_pdu_key_t k = key("mc", 9);
	r = hako_endpoint_send(b, &k, "group", 5);
	if (r == HAKO_EIO) {
		close_ep(b);
		close_ep(a);
		fprintf(stderr, "multicast: no route for the group in this sandbox: skipped\n");
		skip();
	}
	assert_int_equal(r, 0);
	char got[16];
	size_t len = 0;
	/* Sent more than once: a group join may take effect a moment after open. */
	uint64_t end = now_ms() + WAIT_MS;
	while ((r = hako_endpoint_recv(a, &k, got, sizeof(got), &len)) == HAKO_EAGAIN &&
	       now_ms() < end) {
		usleep(50000);
		hako_endpoint_send(b, &k, "group", 5);
	}
	assert_int_equal(r, 0);
	assert_int_equal(len, 5);
	assert_memory_equal(got, "group", 5);
	close_ep(b);
	close_ep(a);
}

static void raw_send(int fd, uint16_t port, const void *p, size_t n)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(sendto(fd, p, n, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)n);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void test_malformed(void **state)
{
	(void)state;
	hako_endpoint_t *a = must_open(
	    "mal_a",
	    "{\"protocol\":\"udp\",\"direction\":\"in\",\"local\":{\"address\":\"127.0.0.1\","
	    "\"port\":LPORT}}",
	    0, 0);
	uint16_t pa = hako_endpoint_local_port(a);
	hako_endpoint_t *b = must_open("mal_b",
	                               "{\"protocol\":\"udp\",\"direction\":\"out\","
	                               "\"remote\":{\"address\":\"127.0.0.1\",\"port\":RPORT}}",
	                               -1, pa);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);

	uint8_t good[400];
	hako_frame_t f;
	memset(&f, 0, sizeof(f));
	strcpy(f.robot, "evil");
	f.channel_id = 1;
	f.request_type = HAKO_FRAME_PDU_DATA;
	f.body = (const uint8_t *)"abcd";
	f.body_len = 4;
	size_t n = 0;
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V2, &f, good, sizeof(good), &n), 0);

	raw_send(fd, pa, "garbage", 7);
	raw_send(fd, pa, good, 100); /* truncated header */
	uint8_t bad[400];
	memcpy(bad, good, n);
	put_u32(bad + 148, 0x80000000u); /* body_len 2^31 */
	put_u32(bad + 144, 172u + 0x80000000u);
	raw_send(fd, pa, bad, n);
	memcpy(bad, good, n);
	put_u32(bad + 128, 0x12345678u); /* bad magic */
	raw_send(fd, pa, bad, n);
	raw_send(fd, pa, good, n - 1); /* shorter than it says */

	WAIT_FOR(stats(a).rejected >= 5);
	assert_int_equal(stats(a).rejected, 5);
	assert_int_equal(stats(a).frames_in, 0);

	/* A good sender is still heard, and so is the raw one once it behaves. */
	hako_pdu_key_t k = key("good", 2);
	char got[16];
	size_t len;
	assert_int_equal(hako_endpoint_send(b, &k, "fine", 4), 0);
	assert_int_equal(recv_wait(a, &k, got, sizeof(got), &len), 0);
	assert_int_equal(len, 4);
	raw_send(fd, pa, good, n);
	hako_pdu_key_t ke = key("evil", 1);
	assert_int_equal(recv_wait(a, &ke, got, sizeof(got), &len), 0);
	assert_memory_equal(got, "abcd", 4);
	assert_int_equal(stats(a).rejected, 5);
	close(fd);
	close_ep(b);
	close_ep(a);
}

static void test_bind_busy(void **state)
{
	(void)state;
	hako_endpoint_t *a = must_open(
	    "busy_a",
	    "{\"protocol\":\"udp\",\"direction\":\"in\",\"local\":{\"address\":\"127.0.0.1\","
	    "\"port\":LPORT},\"options\":{\"reuse_address\":false}}",
	    0, 0);
	uint16_t pa = hako_endpoint_local_port(a);
	hako_endpoint_t *b = NULL;
	hako_error_t err;
	hako_error_clear(&err);
	int r = open_ep("busy_b",
	                "{\"protocol\":\"udp\",\"direction\":\"in\",\"local\":{\"address\":"
	                "\"127.0.0.1\",\"port\":LPORT},\"options\":{\"reuse_address\":false}}",
	                pa, 0, &b, &err);
	assert_int_equal(r, HAKO_EBUSY);
	assert_null(b);
	assert_non_null(strstr(err.file, "busy_b_comm.json"));
	assert_non_null(strstr(err.message, "127.0.0.1"));
	close_ep(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_v2_both_ways, close_all),
	    cmocka_unit_test_teardown(test_v1_both_ways, close_all),
	    cmocka_unit_test_teardown(test_directions, close_all),
	    cmocka_unit_test_teardown(test_oversize, close_all),
	    cmocka_unit_test_teardown(test_multicast, close_all),
	    cmocka_unit_test_teardown(test_malformed, close_all),
	    cmocka_unit_test_teardown(test_bind_busy, close_all),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
