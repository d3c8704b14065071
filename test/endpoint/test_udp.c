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

#include "ep_test_util.h"

static void one_way_and_reply(const char *ver)
{
	char comm[512];
	/* A: inout, no remote (replies go to the last sender). */
	snprintf(comm, sizeof(comm),
	         "{\"protocol\":\"udp\",\"direction\":\"inout\",\"comm_raw_version\":\"%s\","
	         "\"local\":{\"address\":\"127.0.0.1\",\"port\":LPORT}}",
	         ver);
	hako_endpoint_t *a = ept_must_open("a", comm, 0, 0);
	uint16_t pa = hako_endpoint_local_port(a);
	assert_true(pa != 0);
	snprintf(comm, sizeof(comm),
	         "{\"protocol\":\"udp\",\"direction\":\"inout\",\"comm_raw_version\":\"%s\","
	         "\"local\":{\"address\":\"127.0.0.1\",\"port\":LPORT},"
	         "\"remote\":{\"address\":\"127.0.0.1\",\"port\":RPORT}}",
	         ver);
	hako_endpoint_t *b = ept_must_open("b", comm, 0, pa);
	assert_true(hako_endpoint_local_port(b) != 0);
	assert_true(hako_endpoint_local_port(b) != pa);

	hako_pdu_key_t k = ept_key("Drone", 3);
	char msg[200], got[256];
	size_t len = 0;
	/* A has heard nobody yet. */
	assert_int_equal(hako_endpoint_send(a, &k, "x", 1), HAKO_ENOTCONN);
	assert_int_equal(ept_stats(a).send_dropped, 1);

	for (int i = 0; i < 5; i++) {
		snprintf(msg, sizeof(msg), "b to a %d (%s)", i, ver);
		assert_int_equal(hako_endpoint_send(b, &k, msg, strlen(msg)), 0);
		assert_int_equal(ept_recv_wait(a, &k, got, sizeof(got), &len), 0);
		assert_int_equal(len, strlen(msg));
		assert_memory_equal(got, msg, len);
	}
	/* A replies to its last sender. */
	hako_pdu_key_t k2 = ept_key("Other", -7);
	snprintf(msg, sizeof(msg), "a to b (%s)", ver);
	assert_int_equal(hako_endpoint_send(a, &k2, msg, strlen(msg)), 0);
	assert_int_equal(ept_recv_wait(b, &k2, got, sizeof(got), &len), 0);
	assert_int_equal(len, strlen(msg));
	assert_memory_equal(got, msg, len);
	/* An empty PDU is a PDU. */
	assert_int_equal(hako_endpoint_send(b, &k, NULL, 0), 0);
	assert_int_equal(ept_recv_wait(a, &k, got, sizeof(got), &len), 0);
	assert_int_equal(len, 0);

	hako_endpoint_stats_t sa = ept_stats(a), sb = ept_stats(b);
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
	assert_int_equal(ept_recv_wait(a, &k, got, sizeof(got), &len), 0);
	assert_int_equal(len, 5);
	ept_close(b);
	ept_close(a);
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
	hako_endpoint_t *in = ept_must_open(
	    "in",
	    "{\"protocol\":\"udp\",\"direction\":\"in\",\"local\":{\"address\":\"127.0.0.1\","
	    "\"port\":LPORT}}",
	    0, 0);
	uint16_t pin = hako_endpoint_local_port(in);
	hako_endpoint_t *out =
	    ept_must_open("out",
	                  "{\"protocol\":\"udp\",\"direction\":\"out\","
	                  "\"remote\":{\"address\":\"127.0.0.1\",\"port\":RPORT}}",
	                  -1, pin);
	assert_int_equal(hako_endpoint_local_port(out), 0);
	hako_pdu_key_t k = ept_key("r", 1);
	char got[16];
	size_t len;
	assert_int_equal(hako_endpoint_send(in, &k, "no", 2), HAKO_EPERM);
	assert_int_equal(hako_endpoint_send(out, &k, "yes", 3), 0);
	assert_int_equal(ept_recv_wait(in, &k, got, sizeof(got), &len), 0);
	assert_int_equal(len, 3);
	ept_close(out);
	ept_close(in);
}

static void test_oversize(void **state)
{
	(void)state;
	hako_endpoint_t *a = ept_must_open(
	    "big_a",
	    "{\"protocol\":\"udp\",\"direction\":\"in\",\"local\":{\"address\":\"127.0.0.1\","
	    "\"port\":LPORT}}",
	    0, 0);
	uint16_t pa = hako_endpoint_local_port(a);
	hako_endpoint_t *b = ept_must_open("big_b",
	                                   "{\"protocol\":\"udp\",\"direction\":\"out\","
	                                   "\"remote\":{\"address\":\"127.0.0.1\",\"port\":RPORT}}",
	                                   -1, pa);
	hako_endpoint_t *c = ept_must_open(
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
	hako_pdu_key_t k = ept_key("big", 0);
	assert_int_equal(hako_endpoint_send(b, &k, buf, fit + 1), HAKO_ETOOBIG);
	assert_int_equal(hako_endpoint_send(b, &k, buf, 200000), HAKO_ETOOBIG);
	assert_int_equal(ept_stats(b).send_dropped, 2);
	assert_int_equal(ept_stats(b).frames_out, 0);
	assert_int_equal(hako_endpoint_send(c, &k, buf, 1001), HAKO_ETOOBIG);
	assert_int_equal(ept_stats(c).send_dropped, 1);
	/* The largest that fits goes through whole. */
	assert_int_equal(hako_endpoint_send(b, &k, buf, fit), 0);
	size_t len = 0;
	assert_int_equal(ept_recv_wait(a, &k, got, 70000, &len), 0);
	assert_int_equal(len, fit);
	assert_memory_equal(got, buf, fit);
	assert_int_equal(hako_endpoint_send(c, &k, buf, 1000), 0);
	assert_int_equal(ept_recv_wait(a, &k, got, 70000, &len), 0);
	assert_int_equal(len, 1000);
	assert_int_equal(ept_stats(a).rejected, 0);
	free(buf);
	free(got);
	ept_close(c);
	ept_close(b);
	ept_close(a);
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
	int r = ept_open_ports("mc_a", comm, 0, 0, &a, &err);
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
	r = ept_open_ports("mc_b", comm, -1, pa, &b, &err);
	if (r == HAKO_EIO) {
		ept_close(a);
		fprintf(stderr, "multicast: the kernel refuses (%s): skipped\n", err.message);
		skip();
	}
	assert_int_equal(r, 0);
	assert_int_equal(hako_endpoint_start(b, NULL), 0);
	hako_pdu_key_t k = ept_key("mc", 9);
	r = hako_endpoint_send(b, &k, "group", 5);
	if (r == HAKO_EIO) {
		ept_close(b);
		ept_close(a);
		fprintf(stderr, "multicast: no route for the group in this sandbox: skipped\n");
		skip();
	}
	assert_int_equal(r, 0);
	char got[16];
	size_t len = 0;
	/* Sent more than once: a group join may take effect a moment after open. */
	uint64_t end = ept_now_ms() + EPT_WAIT_MS;
	while ((r = hako_endpoint_recv(a, &k, got, sizeof(got), &len)) == HAKO_EAGAIN &&
	       ept_now_ms() < end) {
		usleep(50000);
		hako_endpoint_send(b, &k, "group", 5);
	}
	assert_int_equal(r, 0);
	assert_int_equal(len, 5);
	assert_memory_equal(got, "group", 5);
	ept_close(b);
	ept_close(a);
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
	hako_endpoint_t *a = ept_must_open(
	    "mal_a",
	    "{\"protocol\":\"udp\",\"direction\":\"in\",\"local\":{\"address\":\"127.0.0.1\","
	    "\"port\":LPORT}}",
	    0, 0);
	uint16_t pa = hako_endpoint_local_port(a);
	hako_endpoint_t *b = ept_must_open("mal_b",
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

	EPT_WAIT_UNTIL(ept_stats(a).rejected >= 5);
	assert_int_equal(ept_stats(a).rejected, 5);
	assert_int_equal(ept_stats(a).frames_in, 0);

	/* A good sender is still heard, and so is the raw one once it behaves. */
	hako_pdu_key_t k = ept_key("good", 2);
	char got[16];
	size_t len;
	assert_int_equal(hako_endpoint_send(b, &k, "fine", 4), 0);
	assert_int_equal(ept_recv_wait(a, &k, got, sizeof(got), &len), 0);
	assert_int_equal(len, 4);
	raw_send(fd, pa, good, n);
	hako_pdu_key_t ke = ept_key("evil", 1);
	assert_int_equal(ept_recv_wait(a, &ke, got, sizeof(got), &len), 0);
	assert_memory_equal(got, "abcd", 4);
	assert_int_equal(ept_stats(a).rejected, 5);
	close(fd);
	ept_close(b);
	ept_close(a);
}

static void test_bind_busy(void **state)
{
	(void)state;
	hako_endpoint_t *a = ept_must_open(
	    "busy_a",
	    "{\"protocol\":\"udp\",\"direction\":\"in\",\"local\":{\"address\":\"127.0.0.1\","
	    "\"port\":LPORT},\"options\":{\"reuse_address\":false}}",
	    0, 0);
	uint16_t pa = hako_endpoint_local_port(a);
	hako_endpoint_t *b = NULL;
	hako_error_t err;
	hako_error_clear(&err);
	int r =
	    ept_open_ports("busy_b",
	                   "{\"protocol\":\"udp\",\"direction\":\"in\",\"local\":{\"address\":"
	                   "\"127.0.0.1\",\"port\":LPORT},\"options\":{\"reuse_address\":false}}",
	                   pa, 0, &b, &err);
	assert_int_equal(r, HAKO_EBUSY);
	assert_null(b);
	assert_non_null(strstr(err.file, "busy_b.comm.json"));
	assert_non_null(strstr(err.message, "127.0.0.1"));
	ept_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_v2_both_ways, ept_close_all),
	    cmocka_unit_test_teardown(test_v1_both_ways, ept_close_all),
	    cmocka_unit_test_teardown(test_directions, ept_close_all),
	    cmocka_unit_test_teardown(test_oversize, ept_close_all),
	    cmocka_unit_test_teardown(test_multicast, ept_close_all),
	    cmocka_unit_test_teardown(test_malformed, ept_close_all),
	    cmocka_unit_test_teardown(test_bind_busy, ept_close_all),
	};
	return cmocka_run_group_tests(tests, ept_group_setup, ept_group_teardown);
}
