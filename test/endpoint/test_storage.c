/* The storage comm (pdu-endpoint/src/comm_storage.c): Hakoniwa's file layout byte by byte, a
 * writer and a reader on one file (queue: every record once, in order, also those appended
 * after the reader started; latest: each new write of a slot), reopening a file, files cut off
 * or corrupted, and the comm file's errors. Waits poll with a generous limit. */
#define _GNU_SOURCE

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/endpoint.h"
#include "hako/frame.h"

#include "ep_test_util.h"

#define QUEUE_OUT                                                                                  \
	"{\"protocol\":\"storage\",\"direction\":\"out\",\"storage\":{\"mode\":\"queue\","         \
	"\"path\":\"q.bin\"}}"
#define QUEUE_IN "{\"protocol\":\"storage\",\"direction\":\"in\",\"storage\":{\"path\":\"q.bin\"}}"

static char g_path[600];

static int setup(void **state)
{
	(void)state;
	snprintf(g_path, sizeof(g_path), "%s/q.bin", ept_dir());
	unlink(g_path);
	snprintf(g_path, sizeof(g_path), "%s/l.bin", ept_dir());
	unlink(g_path);
	snprintf(g_path, sizeof(g_path), "%s/q.bin", ept_dir());
	return 0;
}

static hako_endpoint_t *open_started(const char *name, const char *comm)
{
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	assert_int_equal(ept_open(name, comm, 256, &ep, &err), 0);
	ept_track(ep);
	assert_int_equal(hako_endpoint_start(ep, &err), 0);
	return ep;
}

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--) {
		v = v << 8 | p[i];
	}
	return v;
}

static size_t read_file(const char *path, uint8_t *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	size_t n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

static void append_bytes(const char *path, const void *b, size_t n)
{
	int fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	close(fd);
}

static void send_u64(hako_endpoint_t *ep, const char *robot, int ch, uint64_t v)
{
	hako_pdu_key_t k = ept_key(robot, ch);
	assert_int_equal(hako_endpoint_send(ep, &k, &v, sizeof(v)), 0);
}

/* The next PDU of the reader's queue: its key and value. */
static uint64_t next_u64(hako_endpoint_t *ep, hako_pdu_key_t *k)
{
	uint64_t v = 0;
	size_t len = 0;
	int r;
	EPT_WAIT_UNTIL((r = hako_endpoint_recv_next(ep, k, &v, sizeof(v), &len)) == 0);
	assert_int_equal(r, 0);
	assert_int_equal(len, sizeof(v));
	return v;
}

static void test_queue_layout(void **state)
{
	(void)state;
	hako_endpoint_t *w = open_started("w", QUEUE_OUT);
	send_u64(w, "Robot", 3, 0x1122334455667788ull);
	send_u64(w, "Drone-1", 0, 7);
	uint8_t b[4096];
	size_t n = read_file(g_path, b, sizeof(b));
	size_t frame = HAKO_FRAME_V2_HEADER_SIZE + 8;
	assert_int_equal(n, 56 + 2 * (4 + frame));
	assert_int_equal(le(b, 4), 0x53445048u); /* "HPDS" */
	assert_int_equal(le(b + 4, 2), 1);       /* version */
	assert_int_equal(le(b + 6, 2), 1);       /* queue */
	assert_int_equal(le(b + 8, 2), 2);       /* v2 frames */
	assert_int_equal(le(b + 24, 8), 0);      /* key_count */
	assert_int_equal(le(b + 32, 8), 56);     /* index_offset */
	assert_int_equal(le(b + 40, 8), 56);     /* data_offset */
	assert_int_equal(le(b + 48, 8), n);      /* file_size */
	assert_int_equal(le(b + 56, 4), frame);
	hako_frame_t f;
	hako_error_t err;
	assert_int_equal(hako_frame_decode(HAKO_FRAME_V2, b + 60, frame, 1024, &f, &err), 0);
	assert_string_equal(f.robot, "Robot");
	assert_int_equal(f.channel_id, 3);
	assert_int_equal(le(f.body, 8), 0x1122334455667788ull);
	assert_int_equal(le(b + 60 + frame, 4), frame);
	hako_endpoint_stats_t st = ept_stats(w);
	assert_int_equal(st.frames_out, 2);
}

static void test_queue_reader_follows(void **state)
{
	(void)state;
	hako_endpoint_t *w = open_started("w", QUEUE_OUT);
	for (uint64_t i = 1; i <= 3; i++) {
		send_u64(w, i == 2 ? "B" : "A", 0, i);
	}
	hako_endpoint_t *r = open_started("r", QUEUE_IN);
	hako_pdu_key_t k;
	for (uint64_t i = 1; i <= 3; i++) {
		assert_int_equal(next_u64(r, &k), i);
		assert_string_equal(k.robot, i == 2 ? "B" : "A");
	}
	/* Appended while the reader runs: woken by the file's change. */
	for (uint64_t i = 4; i <= 200; i++) {
		send_u64(w, "A", 0, i);
	}
	for (uint64_t i = 4; i <= 200; i++) {
		assert_int_equal(next_u64(r, &k), i);
	}
	/* A writer opened again appends after what is there. */
	ept_close(w);
	w = open_started("w2", QUEUE_OUT);
	send_u64(w, "A", 0, 201);
	assert_int_equal(next_u64(r, &k), 201);
	assert_int_equal(ept_stats(r).frames_in, 201);
}

static void test_queue_cut_off(void **state)
{
	(void)state;
	hako_endpoint_t *w = open_started("w", QUEUE_OUT);
	send_u64(w, "A", 0, 1);
	ept_close(w);
	/* Half a record: a writer that died in the middle of one. */
	uint8_t part[20] = {0};
	part[0] = (uint8_t)(HAKO_FRAME_V2_HEADER_SIZE + 8);
	part[1] = (uint8_t)((HAKO_FRAME_V2_HEADER_SIZE + 8) >> 8);
	append_bytes(g_path, part, sizeof(part));
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	assert_int_equal(ept_open("w2", QUEUE_OUT, 8, &ep, &err), HAKO_EPROTO);
	assert_non_null(strstr(err.message, "storage file"));
	assert_non_null(strstr(err.message, "offset 372 is cut off"));
	/* A reader takes the whole records and waits for the rest. */
	hako_endpoint_t *r = open_started("r", QUEUE_IN);
	hako_pdu_key_t k;
	assert_int_equal(next_u64(r, &k), 1);
	uint64_t v;
	size_t len;
	assert_int_equal(hako_endpoint_recv_next(r, &k, &v, sizeof(v), &len), HAKO_EAGAIN);
	assert_int_equal(ept_stats(r).rejected, 0);
}

static void test_queue_hostile(void **state)
{
	(void)state;
	hako_endpoint_t *w = open_started("w", QUEUE_OUT);
	send_u64(w, "A", 0, 1);
	ept_close(w);
	/* A length no frame has, then a record whose frame is garbage. */
	uint8_t bad[8] = {0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
	append_bytes(g_path, bad, sizeof(bad));
	hako_endpoint_t *r = open_started("r", QUEUE_IN);
	hako_pdu_key_t k;
	assert_int_equal(next_u64(r, &k), 1);
	EPT_WAIT_FOR(ept_stats(r).rejected == 1);
	assert_int_equal(ept_stats(r).frames_in, 1);
}

static void test_queue_garbage_frame(void **state)
{
	(void)state;
	hako_endpoint_t *w = open_started("w", QUEUE_OUT);
	send_u64(w, "A", 0, 1);
	ept_close(w);
	uint8_t junk[4 + 40];
	memset(junk, 0x5a, sizeof(junk));
	junk[0] = 40;
	junk[1] = junk[2] = junk[3] = 0;
	append_bytes(g_path, junk, sizeof(junk));
	w = NULL;
	hako_error_t err;
	/* The writer refuses nothing here: the record is whole (the reader judges frames). */
	assert_int_equal(ept_open("w2", QUEUE_OUT, 8, &w, &err), 0);
	ept_track(w);
	assert_int_equal(hako_endpoint_start(w, &err), 0);
	send_u64(w, "A", 0, 2);
	hako_endpoint_t *r = open_started("r", QUEUE_IN);
	hako_pdu_key_t k;
	assert_int_equal(next_u64(r, &k), 1);
	assert_int_equal(next_u64(r, &k), 2); /* the garbage frame skipped, not the rest */
	assert_int_equal(ept_stats(r).rejected, 1);
}

static void test_not_a_storage_file(void **state)
{
	(void)state;
	FILE *f = fopen(g_path, "wb");
	assert_non_null(f);
	fputs("{\"this is\": \"json, not a storage file, and long enough for a header\"}", f);
	fclose(f);
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	assert_int_equal(ept_open("r", QUEUE_IN, 8, &ep, &err), HAKO_EPROTO);
	assert_non_null(strstr(err.message, "not a storage file (magic"));
	unlink(g_path);
	assert_int_equal(ept_open("r", QUEUE_IN, 8, &ep, &err), HAKO_ENOENT);
	assert_non_null(strstr(err.message, "does not exist"));
}

static void test_v1_and_mode_mismatch(void **state)
{
	(void)state;
	hako_endpoint_t *w = open_started(
	    "w", "{\"protocol\":\"storage\",\"direction\":\"out\",\"comm_raw_version\":\"v1\","
	         "\"storage\":{\"path\":\"q.bin\"}}");
	send_u64(w, "A", 5, 9);
	uint8_t b[512];
	size_t n = read_file(g_path, b, sizeof(b));
	assert_int_equal(le(b + 8, 2), 1);
	assert_int_equal(n, 56 + 4 + 4 + 4 + 1 + 4 + 8); /* v1: len words, "A", channel, body */
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	assert_int_equal(ept_open("r", QUEUE_IN, 8, &ep, &err), HAKO_EPROTO);
	assert_non_null(strstr(err.message, "frames of version v1, the comm file says v2"));
	assert_int_equal(
	    ept_open("r2",
	             "{\"protocol\":\"storage\",\"direction\":\"in\",\"storage\":{\"mode\":"
	             "\"latest\",\"path\":\"q.bin\"}}",
	             8, &ep, &err),
	    HAKO_EINVAL);
	assert_non_null(strstr(err.message, "needs the endpoint's pdudef"));
}

/* ---- latest: slots of the pdudef ---- */

static hako_endpoint_t *open_latest(const char *name, const char *dir)
{
	char buf[600];
	ept_write_file("types.json", "[{\"channel_id\": 0, \"pdu_size\": 8, \"name\": \"count\", "
	                             "\"type\": \"std_msgs/UInt64\"}, {\"channel_id\": 2, "
	                             "\"pdu_size\": 8, \"name\": \"other\", \"type\": "
	                             "\"std_msgs/UInt64\"}]");
	ept_write_file("pdudef.json",
	               "{\"paths\": [{\"id\": \"T\", \"path\": \"types.json\"}], \"robots\": "
	               "[{\"name\": \"Zeta\", \"pdutypes_id\": \"T\"}, {\"name\": \"Alpha\", "
	               "\"pdutypes_id\": \"T\"}]}");
	snprintf(buf, sizeof(buf),
	         "{\"protocol\":\"storage\",\"direction\":\"%s\",\"storage\":{\"backend\":\"file\","
	         "\"mode\":\"latest\",\"path\":\"l.bin\"}}",
	         dir);
	snprintf(buf + 300, 200, "%s.comm.json", name);
	ept_write_file(buf + 300, buf);
	ept_write_file("c.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}");
	snprintf(buf, sizeof(buf),
	         "{\"name\": \"%s\", \"cache\": \"c.json\", \"comm\": \"%s.comm.json\", "
	         "\"pdu_def_path\": \"pdudef.json\"}",
	         name, name);
	char file[300];
	snprintf(file, sizeof(file), "%s.json", name);
	ept_write_file(file, buf);
	char path[700];
	snprintf(path, sizeof(path), "%s/%s.json", ept_dir(), name);
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	int r = hako_endpoint_open(path, &ep, &err);
	if (r != 0) {
		fprintf(stderr, "%s: %s\n", name, err.message);
	}
	assert_int_equal(r, 0);
	ept_track(ep);
	assert_int_equal(hako_endpoint_start(ep, &err), 0);
	return ep;
}

static void test_latest(void **state)
{
	(void)state;
	hako_endpoint_t *w = open_latest("w", "out");
	char lpath[600];
	snprintf(lpath, sizeof(lpath), "%s/l.bin", ept_dir());
	uint8_t b[8192];
	size_t n = read_file(lpath, b, sizeof(b));
	size_t slot5 = HAKO_FRAME_V2_HEADER_SIZE + 8;  /* robot names are in the v2 header */
	assert_int_equal(le(b + 6, 2), 2);             /* latest */
	assert_int_equal(le(b + 24, 8), 4);            /* key_count */
	assert_int_equal(le(b + 40, 8), 56 + 4 * 160); /* data_offset */
	assert_int_equal(n, 56 + 4 * 160 + 4 * slot5);
	/* Sorted by robot, then channel: Alpha/0, Alpha/2, Zeta/0, Zeta/2. */
	assert_string_equal((const char *)b + 56, "Alpha");
	assert_int_equal(le(b + 56 + 128, 4), 0);
	assert_int_equal(le(b + 56 + 160 + 128, 4), 2);
	assert_string_equal((const char *)b + 56 + 2 * 160, "Zeta");
	assert_int_equal(le(b + 56 + 136, 8), 0); /* never written */
	assert_int_equal(le(b + 56 + 144, 8), 56 + 4 * 160);
	assert_int_equal(le(b + 56 + 152, 4), slot5);

	send_u64(w, "Zeta", 2, 42);
	n = read_file(lpath, b, sizeof(b));
	assert_true(le(b + 56 + 3 * 160 + 136, 8) != 0);
	hako_endpoint_t *r = open_latest("r", "in");
	hako_pdu_key_t k = ept_key("Zeta", 2);
	uint64_t v = 0;
	size_t len;
	assert_int_equal(ept_recv_wait(r, &k, &v, sizeof(v), &len), 0);
	assert_int_equal(v, 42);
	k = ept_key("Alpha", 0);
	assert_int_equal(hako_endpoint_recv(r, &k, &v, sizeof(v), &len), HAKO_EAGAIN);
	/* Each new write of a slot is delivered. */
	send_u64(w, "Zeta", 2, 43);
	k = ept_key("Zeta", 2);
	EPT_WAIT_FOR(hako_endpoint_recv(r, &k, &v, sizeof(v), &len) == 0 && v == 43);
	assert_int_equal(ept_stats(r).frames_in, 2);
	/* Not a PDU of the pdudef, or not its size: refused. */
	k = ept_key("Beta", 0);
	assert_int_equal(hako_endpoint_send(w, &k, &v, sizeof(v)), HAKO_ENOENT);
	k = ept_key("Zeta", 0);
	assert_int_equal(hako_endpoint_send(w, &k, &v, 4), HAKO_ESIZE);
	/* A file of another pdudef is refused with what differs. */
	ept_close(w);
	ept_close(r);
	ept_write_file("types.json", "[{\"channel_id\": 0, \"pdu_size\": 8, \"name\": \"count\", "
	                             "\"type\": \"std_msgs/UInt64\"}]");
	char path[700];
	snprintf(path, sizeof(path), "%s/w.json", ept_dir());
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	assert_int_equal(hako_endpoint_open(path, &ep, &err), HAKO_EPROTO);
	assert_non_null(strstr(err.message, "4 PDUs (the pdudef has 2)"));
}

static void test_config_errors(void **state)
{
	(void)state;
	static const struct {
		const char *comm, *msg;
	} cases[] = {
	    {"{\"protocol\":\"storage\",\"direction\":\"in\"}", "storage"},
	    {"{\"protocol\":\"storage\",\"storage\":{\"backend\":\"s3\",\"path\":\"x\"}}",
	     "backend"},
	    {"{\"protocol\":\"storage\",\"storage\":{\"mode\":\"ring\",\"path\":\"x\"}}", "mode"},
	    {"{\"protocol\":\"storage\",\"storage\":{\"mode\":\"queue\"}}", "path"},
	    {"{\"protocol\":\"storage\",\"storage\":{\"path\":\"x\",\"depth\":3}}", "depth"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hako_endpoint_t *ep = NULL;
		hako_error_t err;
		assert_int_equal(ept_open("bad", cases[i].comm, 8, &ep, &err), HAKO_ECONFIG);
		if (strstr(err.message, cases[i].msg) == NULL) {
			fail_msg("case %zu: '%s' lacks '%s'", i, err.message, cases[i].msg);
		}
		assert_true(err.line > 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_queue_layout, setup, ept_close_all),
	    cmocka_unit_test_setup_teardown(test_queue_reader_follows, setup, ept_close_all),
	    cmocka_unit_test_setup_teardown(test_queue_cut_off, setup, ept_close_all),
	    cmocka_unit_test_setup_teardown(test_queue_hostile, setup, ept_close_all),
	    cmocka_unit_test_setup_teardown(test_queue_garbage_frame, setup, ept_close_all),
	    cmocka_unit_test_setup_teardown(test_not_a_storage_file, setup, ept_close_all),
	    cmocka_unit_test_setup_teardown(test_v1_and_mode_mismatch, setup, ept_close_all),
	    cmocka_unit_test_setup_teardown(test_latest, setup, ept_close_all),
	    cmocka_unit_test_setup_teardown(test_config_errors, setup, ept_close_all),
	};
	return cmocka_run_group_tests(tests, ept_group_setup, ept_group_teardown);
}
