/* RD-Full's message bodies (rd/src/rd_full_wire.c), carried in the conductor's extension
 * messages: every kind round-trips, and a body with a field out of range, a reason without a
 * NUL, a reason on a message that is no reply, a wrong length or an unknown kind is refused
 * with a reason, never read past its end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/error.h"
#include "rd_full_wire.h"

static hakoi_rdf_msg_t sample(uint8_t kind)
{
	hakoi_rdf_msg_t m;
	hakoi_rdf_init(&m, kind);
	m.eu = 7;
	m.seq = 41;
	m.status = 1;
	m.epoch = 254;
	m.curr = 1;
	m.next = 2;
	m.to = 3;
	m.from_stored = 1;
	m.result = HAKO_EBUSY;
	m.commit = 2520000;
	m.release = -1;
	if (kind == HAKOI_RDF_REPLY) {
		strcpy(m.reason, "because");
	}
	return m;
}

static void expect_bad(const uint8_t *buf, size_t len, const char *what)
{
	hakoi_rdf_msg_t d;
	char why[160] = "";
	uint8_t *copy = malloc(len > 0 ? len : 1); /* exact size: a read past it is reported */
	assert_non_null(copy);
	memcpy(copy, buf, len);
	assert_int_equal(hakoi_rdf_decode(copy, len, &d, why, sizeof(why)), HAKO_EPROTO);
	free(copy);
	if (strstr(why, what) == NULL) {
		fail_msg("expected \"%s\" in \"%s\"", what, why);
	}
}

static void test_round_trip(void **state)
{
	(void)state;
	for (uint8_t k = HAKOI_RDF_REQUEST; k <= HAKOI_RDF_ACTIVATED; k++) {
		hakoi_rdf_msg_t m = sample(k), d;
		uint8_t buf[HAKOI_RDF_MAX];
		size_t len = hakoi_rdf_encode(&m, buf);
		assert_int_equal(len, k == HAKOI_RDF_REPLY ? HAKOI_RDF_FIXED + 8 : HAKOI_RDF_FIXED);
		char why[160] = "";
		assert_int_equal(hakoi_rdf_decode(buf, len, &d, why, sizeof(why)), 0);
		assert_int_equal(d.kind, k);
		assert_int_equal(d.eu, 7);
		assert_int_equal(d.seq, 41);
		assert_int_equal(d.status, 1);
		assert_int_equal(d.epoch, 254);
		assert_int_equal(d.curr, 1);
		assert_int_equal(d.next, 2);
		assert_int_equal(d.to, 3);
		assert_int_equal(d.from_stored, 1);
		assert_int_equal(d.result, HAKO_EBUSY);
		assert_int_equal(d.commit, 2520000);
		assert_int_equal(d.release, -1);
		assert_string_equal(d.reason, k == HAKOI_RDF_REPLY ? "because" : "");
	}
	/* The longest reason is cut to fit, and still terminated. */
	hakoi_rdf_msg_t m = sample(HAKOI_RDF_REPLY), d;
	memset(m.reason, 'r', sizeof(m.reason));
	uint8_t buf[HAKOI_RDF_MAX];
	size_t len = hakoi_rdf_encode(&m, buf);
	assert_int_equal(len, HAKOI_RDF_MAX);
	char why[160];
	assert_int_equal(hakoi_rdf_decode(buf, len, &d, why, sizeof(why)), 0);
	assert_int_equal(strlen(d.reason), HAKOI_RDF_REASON - 1);
}

static void test_hostile(void **state)
{
	(void)state;
	uint8_t buf[HAKOI_RDF_MAX + 8], bad[HAKOI_RDF_MAX + 8];
	hakoi_rdf_msg_t m = sample(HAKOI_RDF_STATE);
	size_t len = hakoi_rdf_encode(&m, buf);
	expect_bad(buf, 0, "of 0 bytes");
	expect_bad(buf, len - 1, "bytes");
	memcpy(bad, buf, len);
	bad[len] = 0;
	expect_bad(bad, len + 1, "reason on a message that is no reply");
	memcpy(bad, buf, len);
	bad[0] = 0;
	expect_bad(bad, len, "unknown kind 0");
	bad[0] = 7;
	expect_bad(bad, len, "unknown kind 7");
	/* Fields out of range: curr, next, to, status, epoch, from_stored. */
	const size_t offs[] = {20, 24, 28, 12, 16, 32};
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		memcpy(bad, buf, len);
		bad[offs[i] + 1] = 0x7f; /* 0x7fxx: no node id, status or epoch is */
		expect_bad(bad, len, "field out of range");
	}
	memcpy(bad, buf, len);
	memset(bad + 40, 0xff, 7); /* a commit point of about -2^56 */
	bad[47] = 0x80;
	expect_bad(bad, len, "field out of range");
	memcpy(bad, buf, len);
	bad[55] = 0x20; /* a release time past 2^60 */
	expect_bad(bad, len, "field out of range");
	/* A reply: a reason without its NUL; none at all; too long a body. */
	hakoi_rdf_msg_t r = sample(HAKOI_RDF_REPLY);
	len = hakoi_rdf_encode(&r, buf);
	memcpy(bad, buf, len);
	bad[len - 1] = 'x';
	expect_bad(bad, len, "not terminated");
	expect_bad(buf, HAKOI_RDF_FIXED, "none on a reply");
	memset(bad, 0, sizeof(bad));
	memcpy(bad, buf, len);
	expect_bad(bad, HAKOI_RDF_MAX + 1, "bytes");
}

/* Random bodies: refused or decoded, never a crash (the sanitizer build watches the reads). */
static void test_random(void **state)
{
	(void)state;
	uint32_t x = 4242;
	uint8_t buf[HAKOI_RDF_MAX + 16];
	int decoded = 0;
	for (int i = 0; i < 200000; i++) {
		size_t len = (size_t)(x % sizeof(buf));
		for (size_t k = 0; k < len; k++) {
			x = x * 1103515245u + 12345u;
			buf[k] = (uint8_t)(x >> 16);
		}
		if (i & 1) { /* half of them start as a good message, one byte changed */
			hakoi_rdf_msg_t m = sample((uint8_t)(1 + x % 6));
			len = hakoi_rdf_encode(&m, buf);
			buf[x % len] ^= (uint8_t)(1u << (x % 8));
		}
		uint8_t *copy = malloc(len > 0 ? len : 1);
		memcpy(copy, buf, len);
		hakoi_rdf_msg_t d;
		char why[160];
		decoded += hakoi_rdf_decode(copy, len, &d, why, sizeof(why)) == 0;
		free(copy);
	}
	assert_true(decoded > 0);
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
