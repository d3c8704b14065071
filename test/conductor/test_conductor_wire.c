/* The conductor's frames: every type round-trips, and what a hostile or foreign peer sends
 * (short, long, other magic, version or type, bad body lengths, strings without a NUL, times
 * out of range, random bytes) is refused with a reason, never read past its end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/error.h"
#include "wire.h"

static hakoi_msg_t sample(uint16_t type)
{
	hakoi_msg_t m;
	memset(&m, 0, sizeof(m));
	m.type = type;
	strcpy(m.node, "cli-01");
	m.config_hash = 0xdeadbeef;
	m.incarnation = 0x0123456789abcdefull;
	m.result = HAKO_ECONFIG;
	strcpy(m.reason, "because");
	m.world_time = 123456789;
	m.state = 2;
	m.seq = 77;
	m.sent_real_ns = 1700000000123456789ll;
	m.op = HAKOI_OP_RESET;
	m.request = 9;
	m.stop_time = 38000000;
	m.joined = 2;
	m.clients = 3;
	m.ext = 0x1234;
	m.ext_len = 5;
	memcpy(m.ext_body, "he\0lo", 5); /* bytes, not a string */
	return m;
}

static void test_round_trip(void **state)
{
	(void)state;
	uint8_t buf[1024];
	for (uint16_t t = HAKOI_MSG_JOIN; t < HAKOI_MSG_TYPES; t++) {
		hakoi_msg_t m = sample(t), d;
		size_t len = hakoi_wire_encode(&m, buf);
		assert_true(len <= hakoi_wire_max());
		char why[160] = "";
		assert_int_equal(hakoi_wire_decode(buf, len, &d, why, sizeof(why)), 0);
		assert_int_equal(d.type, t);
		assert_string_equal(d.node, "cli-01");
		switch (t) {
		case HAKOI_MSG_JOIN:
			assert_int_equal(d.config_hash, 0xdeadbeef);
			assert_true(d.incarnation == m.incarnation);
			break;
		case HAKOI_MSG_JOIN_REPLY:
			assert_int_equal(d.result, HAKO_ECONFIG);
			assert_string_equal(d.reason, "because");
			break;
		case HAKOI_MSG_TIME:
			assert_int_equal(d.world_time, 123456789);
			assert_int_equal(d.seq, 77);
			assert_true(d.sent_real_ns == m.sent_real_ns);
			assert_true(d.incarnation == m.incarnation);
			break;
		case HAKOI_MSG_EVENT:
		case HAKOI_MSG_ACK_EVENT:
		case HAKOI_MSG_SIM_CONTROL:
			assert_int_equal(d.op, HAKOI_OP_RESET);
			assert_int_equal(d.request, 9);
			assert_int_equal(d.stop_time, 38000000);
			break;
		case HAKOI_MSG_SIM_STATE:
			assert_int_equal(d.joined, 2);
			assert_int_equal(d.clients, 3);
			break;
		case HAKOI_MSG_EXT:
			assert_int_equal(d.ext, 0x1234);
			assert_int_equal(d.ext_len, 5);
			assert_memory_equal(d.ext_body, "he\0lo", 5);
			assert_int_equal(d.result, HAKO_ECONFIG);
			break;
		default: break;
		}
	}
}

static void expect_bad(const uint8_t *buf, size_t len, const char *what)
{
	hakoi_msg_t d;
	char why[160] = "";
	/* An exact-size copy, so a read past the end is an ASan report. */
	uint8_t *copy = malloc(len > 0 ? len : 1);
	assert_non_null(copy);
	memcpy(copy, buf, len);
	assert_int_equal(hakoi_wire_decode(copy, len, &d, why, sizeof(why)), HAKO_EPROTO);
	free(copy);
	if (strstr(why, what) == NULL) {
		fail_msg("expected \"%s\" in \"%s\"", what, why);
	}
}

static void test_hostile(void **state)
{
	(void)state;
	uint8_t buf[1024];
	hakoi_msg_t m = sample(HAKOI_MSG_TIME);
	size_t len = hakoi_wire_encode(&m, buf);
	expect_bad(buf, 0, "shorter than a header");
	expect_bad(buf, 11, "shorter than a header");
	expect_bad(buf, len - 1, "body of");
	uint8_t longer[1024];
	memcpy(longer, buf, len);
	longer[len] = 0;
	expect_bad(longer, len + 1, "body of");
	memcpy(longer, buf, len);
	longer[0] ^= 0xff;
	expect_bad(longer, len, "magic");
	memcpy(longer, buf, len);
	longer[4] = 9;
	expect_bad(longer, len, "version 9");
	memcpy(longer, buf, len);
	longer[6] = 200;
	expect_bad(longer, len, "unknown type 200");
	memcpy(longer, buf, len);
	longer[8] = 3; /* a body length that lies */
	expect_bad(longer, len, "body of 3 bytes");
	memcpy(longer, buf, len);
	memset(longer + HAKOI_WIRE_HEADER, 'x', HAKOI_WIRE_ID); /* a node id without a NUL */
	expect_bad(longer, len, "node id");
	memcpy(longer, buf, len);
	longer[HAKOI_WIRE_HEADER] = 0; /* an empty node id */
	expect_bad(longer, len, "node id");
	memcpy(longer, buf, len);
	memset(longer + HAKOI_WIRE_HEADER + HAKOI_WIRE_ID, 0xff, 8); /* a negative world time */
	expect_bad(longer, len, "out of range");

	hakoi_msg_t e = sample(HAKOI_MSG_EVENT);
	len = hakoi_wire_encode(&e, buf);
	memcpy(longer, buf, len);
	longer[HAKOI_WIRE_HEADER + HAKOI_WIRE_ID] = 99; /* op */
	expect_bad(longer, len, "unknown operation");
	memcpy(longer, buf, len);
	memset(longer + HAKOI_WIRE_HEADER + HAKOI_WIRE_ID + 24, 'r', HAKOI_WIRE_REASON);
	expect_bad(longer, len, "reason");
	memcpy(longer, buf, len);
	longer[HAKOI_WIRE_HEADER + HAKOI_WIRE_ID + 23] = 0x80; /* a negative stop time */
	expect_bad(longer, len, "stop time out of range");

	/* Extension messages: a body of any length up to the bound, its length field the
	 * frame's; id 0 is nobody's. */
	hakoi_msg_t x = sample(HAKOI_MSG_EXT);
	const size_t fixed = HAKOI_WIRE_HEADER + HAKOI_WIRE_ID + 16;
	for (uint32_t n = 0; n <= HAKO_CONDUCTOR_EXT_BODY_MAX; n += 64) {
		hakoi_msg_t d;
		char why[160] = "";
		x.ext_len = n;
		memset(x.ext_body, 0xab, n);
		len = hakoi_wire_encode(&x, buf);
		assert_int_equal(len, fixed + n);
		assert_int_equal(hakoi_wire_decode(buf, len, &d, why, sizeof(why)), 0);
		assert_int_equal(d.ext_len, n);
	}
	x.ext_len = 16;
	len = hakoi_wire_encode(&x, buf);
	memcpy(longer, buf, len);
	longer[HAKOI_WIRE_HEADER + HAKOI_WIRE_ID] = 0; /* id 0 */
	longer[HAKOI_WIRE_HEADER + HAKOI_WIRE_ID + 1] = 0;
	expect_bad(longer, len, "id 0");
	memcpy(longer, buf, len);
	longer[HAKOI_WIRE_HEADER + HAKOI_WIRE_ID + 8] = 17; /* the body's own length lies */
	expect_bad(longer, len, "wrong length");
	/* A body beyond the bound: the frame's length field says so, the frame is that long. */
	uint8_t huge[HAKOI_WIRE_FRAME_MAX + 1];
	x.ext_len = HAKO_CONDUCTOR_EXT_BODY_MAX;
	len = hakoi_wire_encode(&x, huge);
	huge[len] = 0;
	uint32_t blen = (uint32_t)(len + 1 - HAKOI_WIRE_HEADER);
	memcpy(huge + 8, &blen, 4); /* little-endian machines only: the test's own shortcut */
	expect_bad(huge, len + 1, "body of");
}

/* Random frames: refused or decoded, never a crash (the sanitizer build watches the reads). */
static void test_random(void **state)
{
	(void)state;
	uint32_t x = 12345;
	uint8_t buf[512];
	int decoded = 0;
	for (int i = 0; i < 200000; i++) {
		size_t len = (size_t)(x % sizeof(buf));
		for (size_t k = 0; k < len; k++) {
			x = x * 1103515245u + 12345u;
			buf[k] = (uint8_t)(x >> 16);
		}
		if (len >= HAKOI_WIRE_HEADER && (i & 1)) { /* half of them look like frames */
			hakoi_msg_t m = sample((uint16_t)(1 + x % (HAKOI_MSG_TYPES - 1)));
			uint8_t good[1024];
			size_t gl = hakoi_wire_encode(&m, good);
			memcpy(buf, good, HAKOI_WIRE_HEADER);
			len = gl;
			buf[HAKOI_WIRE_HEADER + (x % 7)] = 0;
		}
		uint8_t *copy = malloc(len > 0 ? len : 1);
		memcpy(copy, buf, len);
		hakoi_msg_t d;
		char why[160];
		decoded += hakoi_wire_decode(copy, len, &d, why, sizeof(why)) == 0;
		free(copy);
	}
	assert_true(decoded > 0); /* the frame-like half gets past the header checks at times */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
