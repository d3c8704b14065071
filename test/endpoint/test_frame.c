/* Wire frames v1/v2: exact bytes against hand-written headers, round trips, every refusal with
 * its message, and stream framing with hako_frame_needed fed one byte at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/frame.h"

#define BODY_LEN 72u

static uint8_t body72[BODY_LEN];

static hako_frame_t drone_frame(void)
{
	hako_frame_t f;
	memset(&f, 0, sizeof(f));
	strcpy(f.robot, "Drone");
	f.channel_id = 1;
	f.request_type = HAKO_FRAME_PDU_DATA;
	f.hako_time_us = 0x0000000100000002ull;
	f.asset_time_us = 1000000u; /* 0x000F4240 */
	f.real_time_us = 0x0102030405060708ull;
	for (unsigned i = 0; i < BODY_LEN; i++) {
		body72[i] = (uint8_t)(0xA0u + i);
	}
	f.body = body72;
	f.body_len = BODY_LEN;
	return f;
}

static void test_v2_header_bytes(void **state)
{
	(void)state;
	/* Written out by offset from the layout table, not from the encoder. */
	/* clang-format off */
	static const uint8_t expected[304] = {
	    [0] = 'D', [1] = 'r', [2] = 'o', [3] = 'n', [4] = 'e',
	    /* magic 0x48414B4F little-endian: "OKAH" */
	    [128] = 0x4F, [129] = 0x4B, [130] = 0x41, [131] = 0x48,
	    /* version 2 */
	    [132] = 0x02, [133] = 0x00,
	    /* meta_request_type 0x42555043 */
	    [140] = 0x43, [141] = 0x50, [142] = 0x55, [143] = 0x42,
	    /* total_len 172 + 72 = 244 */
	    [144] = 0xF4, [145] = 0x00, [146] = 0x00, [147] = 0x00,
	    /* body_len 72 */
	    [148] = 0x48, [149] = 0x00, [150] = 0x00, [151] = 0x00,
	    /* hako_time_us 0x0000000100000002 */
	    [152] = 0x02, [153] = 0x00, [154] = 0x00, [155] = 0x00,
	    [156] = 0x01, [157] = 0x00, [158] = 0x00, [159] = 0x00,
	    /* asset_time_us 1000000 = 0x0F4240 */
	    [160] = 0x40, [161] = 0x42, [162] = 0x0F, [163] = 0x00,
	    [164] = 0x00, [165] = 0x00, [166] = 0x00, [167] = 0x00,
	    /* real_time_us 0x0102030405060708 */
	    [168] = 0x08, [169] = 0x07, [170] = 0x06, [171] = 0x05,
	    [172] = 0x04, [173] = 0x03, [174] = 0x02, [175] = 0x01,
	    /* channel_id 1 */
	    [176] = 0x01, [177] = 0x00, [178] = 0x00, [179] = 0x00,
	    /* everything else (name padding, reserved @134, padding @180) is zero */
	};
	/* clang-format on */
	hako_frame_t f = drone_frame();
	uint8_t buf[304 + BODY_LEN + 16];
	memset(buf, 0xEE, sizeof(buf));
	size_t len = 0;
	assert_int_equal(hako_frame_size(HAKO_FRAME_V2, "Drone", BODY_LEN), 376);
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V2, &f, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 376);
	assert_memory_equal(buf, expected, 304);
	assert_memory_equal(buf + 304, body72, BODY_LEN);
	assert_int_equal(buf[376], 0xEE); /* nothing written past the frame */
}

static void test_v1_header_bytes(void **state)
{
	(void)state;
	static const uint8_t expected[17] = {
	    0x55, 0x00, 0x00, 0x00,      /* header_len = 4 + 5 + 4 + 72 = 85 */
	    0x05, 0x00, 0x00, 0x00,      /* name_len */
	    'D',  'r',  'o',  'n',  'e', /* name, no NUL */
	    0x01, 0x00, 0x00, 0x00,      /* channel_id */
	};
	hako_frame_t f = drone_frame();
	uint8_t buf[17 + BODY_LEN];
	size_t len = 0;
	assert_int_equal(hako_frame_size(HAKO_FRAME_V1, "Drone", BODY_LEN), 89);
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V1, &f, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 89);
	assert_memory_equal(buf, expected, 17);
	assert_memory_equal(buf + 17, body72, BODY_LEN);
}

static void round_trip(hako_frame_version_t v, const hako_frame_t *f)
{
	size_t size = hako_frame_size(v, f->robot, f->body_len);
	assert_true(size > 0);
	/* Odd offset: the codec must not depend on alignment. */
	uint8_t *mem = malloc(size + 1);
	assert_non_null(mem);
	uint8_t *buf = mem + 1;
	size_t len = 0;
	assert_int_equal(hako_frame_encode(v, f, buf, size, &len), 0);
	assert_int_equal(len, size);
	size_t needed = 1;
	hako_error_t err;
	assert_int_equal(hako_frame_needed(v, buf, len, HAKO_FRAME_DEFAULT_MAX_BODY, &needed, &err),
	                 0);
	assert_int_equal(needed, size);
	hako_frame_t out;
	assert_int_equal(hako_frame_decode(v, buf, len, HAKO_FRAME_DEFAULT_MAX_BODY, &out, &err),
	                 0);
	assert_string_equal(out.robot, f->robot);
	assert_int_equal(out.channel_id, f->channel_id);
	assert_int_equal(out.body_len, f->body_len);
	assert_ptr_equal(out.body, buf + size - f->body_len);
	if (f->body_len > 0) {
		assert_memory_equal(out.body, f->body, f->body_len);
	}
	assert_int_equal(out.request_type,
	                 v == HAKO_FRAME_V2 ? f->request_type : HAKO_FRAME_PDU_DATA);
	if (v == HAKO_FRAME_V2) {
		assert_true(out.hako_time_us == f->hako_time_us);
		assert_true(out.asset_time_us == f->asset_time_us);
		assert_true(out.real_time_us == f->real_time_us);
	} else {
		assert_true(out.hako_time_us == 0 && out.asset_time_us == 0 &&
		            out.real_time_us == 0);
	}
	free(mem);
}

static void test_round_trips(void **state)
{
	(void)state;
	hako_frame_t f = drone_frame();
	round_trip(HAKO_FRAME_V2, &f);
	round_trip(HAKO_FRAME_V1, &f);

	f.channel_id = -7;
	f.body_len = 0;
	f.body = NULL;
	round_trip(HAKO_FRAME_V2, &f);
	round_trip(HAKO_FRAME_V1, &f);

	memset(f.robot, 'r', 127); /* the longest name */
	f.robot[127] = '\0';
	f.channel_id = INT32_MIN;
	f.request_type = HAKO_FRAME_RPC_REPLY;
	f.hako_time_us = UINT64_MAX;
	f.body = body72;
	f.body_len = 5;
	round_trip(HAKO_FRAME_V2, &f);
	f.request_type = HAKO_FRAME_PDU_DATA;
	round_trip(HAKO_FRAME_V1, &f);

	f.robot[0] = '\0'; /* empty name */
	round_trip(HAKO_FRAME_V2, &f);
	round_trip(HAKO_FRAME_V1, &f);
}

static void test_encode_errors(void **state)
{
	(void)state;
	hako_frame_t f = drone_frame();
	uint8_t buf[512];
	size_t len = 0;
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V2, &f, buf, 375, &len), HAKO_ETOOBIG);
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V1, &f, buf, 88, &len), HAKO_ETOOBIG);
	f.request_type = HAKO_FRAME_DECLARE_READ;
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V1, &f, buf, sizeof(buf), &len), HAKO_EINVAL);
	f.request_type = HAKO_FRAME_PDU_DATA;
	memset(f.robot, 'x', sizeof(f.robot)); /* 128 bytes, no NUL */
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V2, &f, buf, sizeof(buf), &len),
	                 HAKO_ENAMETOOLONG);
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V1, &f, buf, sizeof(buf), &len),
	                 HAKO_ENAMETOOLONG);
	assert_int_equal(hako_frame_size(HAKO_FRAME_V2, f.robot, 1), 0);
	f = drone_frame();
	f.body = NULL;
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V2, &f, buf, sizeof(buf), &len), HAKO_EINVAL);
	assert_int_equal(hako_frame_size(HAKO_FRAME_V2, "a", UINT32_MAX), 0);
	assert_int_equal(hako_frame_size(HAKO_FRAME_V1, "a", UINT32_MAX - 8), 0);
	assert_int_equal(hako_frame_size(HAKO_FRAME_V1, "a", UINT32_MAX - 9),
	                 (size_t)UINT32_MAX + 4);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* A valid encoded Drone frame in buf; returns its size. */
static size_t encode_drone(hako_frame_version_t v, uint8_t *buf, size_t cap)
{
	hako_frame_t f = drone_frame();
	size_t len = 0;
	assert_int_equal(hako_frame_encode(v, &f, buf, cap, &len), 0);
	return len;
}

/* decode must refuse with HAKO_EPROTO and exactly this message, leaving out untouched. */
static void refused(hako_frame_version_t v, const uint8_t *buf, size_t len, uint32_t max_body,
                    const char *message)
{
	hako_frame_t out;
	memset(&out, 0x5A, sizeof(out));
	hako_error_t err;
	memset(&err, 0, sizeof(err));
	err.line = 99;
	assert_int_equal(hako_frame_decode(v, buf, len, max_body, &out, &err), HAKO_EPROTO);
	assert_string_equal(err.message, message);
	assert_string_equal(err.file, "");
	assert_int_equal(err.line, 0);
	assert_int_equal(err.column, 0);
	assert_int_equal(((const uint8_t *)&out)[0], 0x5A);
}

/* needed must refuse the same header with the same message. */
static void needed_refused(hako_frame_version_t v, const uint8_t *buf, size_t len,
                           uint32_t max_body, const char *message)
{
	hako_error_t err;
	size_t needed = 123;
	assert_int_equal(hako_frame_needed(v, buf, len, max_body, &needed, &err), HAKO_EPROTO);
	assert_string_equal(err.message, message);
}

static void test_v2_refusals(void **state)
{
	(void)state;
	const uint32_t max = HAKO_FRAME_DEFAULT_MAX_BODY;
	uint8_t buf[512];
	size_t n = encode_drone(HAKO_FRAME_V2, buf, sizeof(buf));

	refused(HAKO_FRAME_V2, buf, 0, max, "v2 frame: empty buffer");
	refused(HAKO_FRAME_V2, NULL, 0, max, "v2 frame: empty buffer");
	refused(HAKO_FRAME_V2, buf, 303, max, "v2 frame: truncated header: 303 of 304 bytes");
	refused(HAKO_FRAME_V2, buf, 1, max, "v2 frame: truncated header: 1 of 304 bytes");
	refused(HAKO_FRAME_V2, buf, n - 1, max,
	        "v2 frame: truncated body: frame is 376 bytes, buffer has 375");
	buf[n] = 0;
	refused(HAKO_FRAME_V2, buf, n + 1, max,
	        "v2 frame: 1 trailing bytes after a frame of 376 bytes");
	/* body_len > max_body */
	refused(HAKO_FRAME_V2, buf, n, 71, "v2 frame: body_len 72 exceeds the limit of 71 bytes");
	needed_refused(HAKO_FRAME_V2, buf, 304, 71,
	               "v2 frame: body_len 72 exceeds the limit of 71 bytes");

	uint8_t bad[512];
	memcpy(bad, buf, n);
	put32(bad + 148, 0x80000000u); /* body_len 2^31 */
	refused(HAKO_FRAME_V2, bad, n, max,
	        "v2 frame: body_len 2147483648 exceeds the limit of 16777216 bytes");
	needed_refused(HAKO_FRAME_V2, bad, 304, max,
	               "v2 frame: body_len 2147483648 exceeds the limit of 16777216 bytes");

	memcpy(bad, buf, n);
	bad[128] = 'X';
	refused(HAKO_FRAME_V2, bad, n, max,
	        "v2 frame: bad magic 0x48414b58 (expected 0x48414b4f \"HAKO\")");
	needed_refused(HAKO_FRAME_V2, bad, 304, max,
	               "v2 frame: bad magic 0x48414b58 (expected 0x48414b4f \"HAKO\")");

	memcpy(bad, buf, n);
	bad[132] = 1;
	refused(HAKO_FRAME_V2, bad, n, max, "v2 frame: unsupported version 1 (expected 2)");
	bad[132] = 2;
	bad[133] = 1; /* 258 */
	refused(HAKO_FRAME_V2, bad, n, max, "v2 frame: unsupported version 258 (expected 2)");

	memcpy(bad, buf, n);
	memset(bad, 'N', 128);
	refused(HAKO_FRAME_V2, bad, n, max, "v2 frame: robot name has no NUL within 128 bytes");
	needed_refused(HAKO_FRAME_V2, bad, 304, max,
	               "v2 frame: robot name has no NUL within 128 bytes");
	bad[127] = '\0'; /* 127 chars: the longest valid name */
	hako_frame_t out;
	hako_error_t err;
	assert_int_equal(hako_frame_decode(HAKO_FRAME_V2, bad, n, max, &out, &err), 0);
	assert_int_equal(strlen(out.robot), 127);

	/* total_len is informational: a wrong one is neither trusted nor an error. */
	memcpy(bad, buf, n);
	put32(bad + 144, 0xFFFFFFFFu);
	assert_int_equal(hako_frame_decode(HAKO_FRAME_V2, bad, n, max, &out, &err), 0);
	assert_int_equal(out.body_len, 72);
}

static void test_v1_refusals(void **state)
{
	(void)state;
	const uint32_t max = HAKO_FRAME_DEFAULT_MAX_BODY;
	uint8_t buf[512];
	size_t n = encode_drone(HAKO_FRAME_V1, buf, sizeof(buf));
	assert_int_equal(n, 89);

	refused(HAKO_FRAME_V1, buf, 0, max, "v1 frame: empty buffer");
	refused(HAKO_FRAME_V1, buf, 7, max, "v1 frame: truncated header: 7 of at least 12 bytes");
	refused(HAKO_FRAME_V1, buf, 12, max,
	        "v1 frame: truncated body: frame is 89 bytes, buffer has 12");
	buf[n] = buf[n + 1] = 0;
	refused(HAKO_FRAME_V1, buf, n + 2, max,
	        "v1 frame: 2 trailing bytes after a frame of 89 bytes");
	refused(HAKO_FRAME_V1, buf, n, 71, "v1 frame: body_len 72 exceeds the limit of 71 bytes");

	uint8_t bad[512];
	memcpy(bad, buf, n);
	put32(bad, 4 + 5 + 4 + 0x80000000u); /* body_len 2^31 */
	refused(HAKO_FRAME_V1, bad, n, max,
	        "v1 frame: body_len 2147483648 exceeds the limit of 16777216 bytes");
	needed_refused(HAKO_FRAME_V1, bad, 8, max,
	               "v1 frame: body_len 2147483648 exceeds the limit of 16777216 bytes");
	put32(bad, UINT32_MAX); /* the largest header_len must not wrap anything */
	refused(HAKO_FRAME_V1, bad, n, UINT32_MAX,
	        "v1 frame: truncated body: frame is 4294967299 bytes, buffer has 89");

	memcpy(bad, buf, n);
	put32(bad + 4, 200);
	refused(HAKO_FRAME_V1, bad, n, max, "v1 frame: name_len 200 exceeds 127");
	needed_refused(HAKO_FRAME_V1, bad, 8, max, "v1 frame: name_len 200 exceeds 127");

	memcpy(bad, buf, n);
	put32(bad, 12); /* < 4 + 5 + 4 */
	refused(HAKO_FRAME_V1, bad, 16, max,
	        "v1 frame: header_len 12 is smaller than name_len + 8 = 13");
	needed_refused(HAKO_FRAME_V1, bad, 8, max,
	               "v1 frame: header_len 12 is smaller than name_len + 8 = 13");

	memcpy(bad, buf, n);
	bad[8 + 2] = '\0'; /* "Dr\0ne" */
	refused(HAKO_FRAME_V1, bad, n, max, "v1 frame: robot name contains a NUL byte");
}

static void test_bad_arguments(void **state)
{
	(void)state;
	uint8_t buf[8] = {0};
	hako_frame_t out;
	hako_error_t err;
	size_t needed;
	assert_int_equal(hako_frame_decode((hako_frame_version_t)3, buf, 8, 100, &out, &err),
	                 HAKO_EINVAL);
	assert_int_equal(hako_frame_decode(HAKO_FRAME_V1, NULL, 8, 100, &out, &err), HAKO_EINVAL);
	assert_int_equal(hako_frame_needed((hako_frame_version_t)0, buf, 8, 100, &needed, &err),
	                 HAKO_EINVAL);
	assert_int_equal(hako_frame_needed(HAKO_FRAME_V1, buf, 8, 100, NULL, &err), HAKO_EINVAL);
	/* err may be NULL */
	assert_int_equal(hako_frame_decode(HAKO_FRAME_V1, buf, 8, 100, &out, NULL), HAKO_EPROTO);
}

/* Several frames of both sizes back to back, fed one byte at a time as a stream reader would. */
static void stream(hako_frame_version_t v)
{
	static const char *robots[] = {"Drone", "", "arm-2", "Drone"};
	static const uint32_t lens[] = {72, 0, 1, 300};
	enum { COUNT = 4 };
	uint8_t payload[300];
	for (unsigned i = 0; i < sizeof(payload); i++) {
		payload[i] = (uint8_t)(i * 7u);
	}
	uint8_t wire[4096];
	size_t sizes[COUNT];
	size_t total = 0;
	for (int i = 0; i < COUNT; i++) {
		hako_frame_t f;
		memset(&f, 0, sizeof(f));
		strcpy(f.robot, robots[i]);
		f.channel_id = i;
		f.request_type = HAKO_FRAME_PDU_DATA;
		f.body = payload;
		f.body_len = lens[i];
		assert_int_equal(
		    hako_frame_encode(v, &f, wire + total, sizeof(wire) - total, &sizes[i]), 0);
		total += sizes[i];
	}

	const size_t known_at = v == HAKO_FRAME_V2 ? 304 : 8;
	uint8_t rx[4096];
	size_t have = 0;
	int frames = 0;
	for (size_t fed = 0; fed < total; fed++) {
		rx[have++] = wire[fed];
		size_t needed = 999;
		hako_error_t err;
		assert_int_equal(
		    hako_frame_needed(v, rx, have, HAKO_FRAME_DEFAULT_MAX_BODY, &needed, &err), 0);
		if (have < known_at) {
			assert_int_equal(needed, 0);
			continue;
		}
		assert_int_equal(needed, sizes[frames]);
		if (have < needed) {
			continue;
		}
		hako_frame_t out;
		assert_int_equal(
		    hako_frame_decode(v, rx, needed, HAKO_FRAME_DEFAULT_MAX_BODY, &out, &err), 0);
		assert_string_equal(out.robot, robots[frames]);
		assert_int_equal(out.channel_id, frames);
		assert_int_equal(out.body_len, lens[frames]);
		assert_memory_equal(out.body, payload, lens[frames]);
		memmove(rx, rx + needed, have - needed);
		have -= needed;
		frames++;
	}
	assert_int_equal(frames, COUNT);
	assert_int_equal(have, 0);
}

static void test_needed_stream_v2(void **state)
{
	(void)state;
	stream(HAKO_FRAME_V2);
}

static void test_needed_stream_v1(void **state)
{
	(void)state;
	stream(HAKO_FRAME_V1);
}

/* One message holding one v1 frame (hako_frame_decode_message): the body runs to the end of
 * the message whether header_len counts it (C++) or not (Python, JavaScript). */
static void test_v1_message(void **state)
{
	(void)state;
	uint8_t m[64];
	const uint8_t py[] = {13,  0,   0, 0, 5, 0, 0,   0,   'D', 'r', 'o',
	                      'n', 'e', 7, 0, 0, 0, 'b', 'o', 'd', 'y'};
	hako_frame_t f;
	hako_error_t e;
	assert_int_equal(hako_frame_decode_message(HAKO_FRAME_V1, py, sizeof(py), 1024, &f, &e), 0);
	assert_string_equal(f.robot, "Drone");
	assert_int_equal(f.channel_id, 7);
	assert_int_equal(f.body_len, 4);
	assert_memory_equal(f.body, "body", 4);
	/* as a stream frame it is 17 bytes followed by 4 others */
	assert_int_equal(hako_frame_decode(HAKO_FRAME_V1, py, sizeof(py), 1024, &f, &e),
	                 HAKO_EPROTO);
	assert_non_null(strstr(e.message, "trailing"));
	/* C++: header_len = 13 + 4 */
	memcpy(m, py, sizeof(py));
	m[0] = 17;
	assert_int_equal(hako_frame_decode_message(HAKO_FRAME_V1, m, sizeof(py), 1024, &f, &e), 0);
	assert_int_equal(f.body_len, 4);
	/* no body at all */
	assert_int_equal(hako_frame_decode_message(HAKO_FRAME_V1, py, 17, 1024, &f, &e), 0);
	assert_int_equal(f.body_len, 0);
	/* header_len past the message, below name_len + 8, a body over max_body */
	m[0] = 22;
	assert_int_equal(hako_frame_decode_message(HAKO_FRAME_V1, m, sizeof(py), 1024, &f, &e),
	                 HAKO_EPROTO);
	assert_non_null(strstr(e.message, "the message has 21"));
	m[0] = 12;
	assert_int_equal(hako_frame_decode_message(HAKO_FRAME_V1, m, sizeof(py), 1024, &f, &e),
	                 HAKO_EPROTO);
	assert_int_equal(hako_frame_decode_message(HAKO_FRAME_V1, py, sizeof(py), 3, &f, &e),
	                 HAKO_EPROTO);
	assert_non_null(strstr(e.message, "body_len 4"));
	/* name_len past the message, a truncated prefix */
	memcpy(m, py, sizeof(py));
	m[4] = 100;
	assert_int_equal(hako_frame_decode_message(HAKO_FRAME_V1, m, sizeof(py), 1024, &f, &e),
	                 HAKO_EPROTO);
	assert_int_equal(hako_frame_decode_message(HAKO_FRAME_V1, py, 7, 1024, &f, &e),
	                 HAKO_EPROTO);
}

/* hakoniwa-pdu-python's v1 declarations: a v1 frame whose body is the request's magic, u32
 * little-endian ("DPER" read, "DPPW" write, "EPPW" request-read), header_len = name_len + 8.
 * Hakoniwa's endpoint reads a v1 body that starts with one of these as that request, not as
 * PDU data; so does hako: request_type is the magic and the body is what follows it. */
static void test_v1_declare(void **state)
{
	(void)state;
	static const struct {
		const char magic[4];
		uint32_t type;
	} kinds[] = {
	    {{'D', 'P', 'E', 'R'}, HAKO_FRAME_DECLARE_READ},
	    {{'D', 'P', 'P', 'W'}, HAKO_FRAME_DECLARE_WRITE},
	    {{'E', 'P', 'P', 'W'}, HAKO_FRAME_REQUEST_READ},
	};
	uint8_t m[21] = {13, 0, 0, 0, 5, 0, 0, 0, 'D', 'r', 'o', 'n', 'e', 1, 0, 0, 0};
	hako_frame_t f;
	hako_error_t e;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		memcpy(m + 17, kinds[i].magic, 4);
		m[0] = 13; /* Python: header_len leaves the body out (a message) */
		assert_int_equal(hako_frame_decode_message(HAKO_FRAME_V1, m, 21, 1024, &f, &e), 0);
		assert_int_equal(f.request_type, kinds[i].type);
		assert_string_equal(f.robot, "Drone");
		assert_int_equal(f.channel_id, 1);
		assert_int_equal(f.body_len, 0);
		m[0] = 17; /* C++: header_len counts the body (a stream frame too) */
		assert_int_equal(hako_frame_decode(HAKO_FRAME_V1, m, 21, 1024, &f, &e), 0);
		assert_int_equal(f.request_type, kinds[i].type);
		assert_int_equal(f.body_len, 0);
	}
	/* the magic is read at the start of any body of 4 bytes or more, as Hakoniwa does */
	uint8_t big[17 + 8];
	memcpy(big, m, 17);
	big[0] = 21;
	memcpy(big + 17, "DPERtail", 8);
	assert_int_equal(hako_frame_decode(HAKO_FRAME_V1, big, sizeof(big), 1024, &f, &e), 0);
	assert_int_equal(f.request_type, HAKO_FRAME_DECLARE_READ);
	assert_int_equal(f.body_len, 4);
	assert_memory_equal(f.body, "tail", 4);
	/* anything else is PDU data: another first word, a body shorter than 4 bytes */
	memcpy(big + 17, "DPEQtail", 8);
	assert_int_equal(hako_frame_decode(HAKO_FRAME_V1, big, sizeof(big), 1024, &f, &e), 0);
	assert_int_equal(f.request_type, HAKO_FRAME_PDU_DATA);
	assert_int_equal(f.body_len, 8);
	m[0] = 16;
	assert_int_equal(hako_frame_decode(HAKO_FRAME_V1, m, 20, 1024, &f, &e), 0);
	assert_int_equal(f.request_type, HAKO_FRAME_PDU_DATA);
	assert_int_equal(f.body_len, 3);
	/* the v1 encoder still writes PDU data only */
	f.request_type = HAKO_FRAME_DECLARE_READ;
	size_t len;
	assert_int_equal(hako_frame_encode(HAKO_FRAME_V1, &f, big, sizeof(big), &len), HAKO_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v2_header_bytes),  cmocka_unit_test(test_v1_header_bytes),
	    cmocka_unit_test(test_round_trips),      cmocka_unit_test(test_encode_errors),
	    cmocka_unit_test(test_v2_refusals),      cmocka_unit_test(test_v1_refusals),
	    cmocka_unit_test(test_bad_arguments),    cmocka_unit_test(test_needed_stream_v2),
	    cmocka_unit_test(test_needed_stream_v1), cmocka_unit_test(test_v1_message),
	    cmocka_unit_test(test_v1_declare),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
