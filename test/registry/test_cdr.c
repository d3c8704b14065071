/* ROS 2 CDR: round trips of every built-in type, hand-computed bytes, hostile input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdr_fill.h"
#include "hako/cdr.h"
#include "hako/pdu.h"

static hako_msg_registry_t *reg;

static int setup(void **state)
{
	(void)state;
	hako_error_t err;
	if (hako_msg_registry_create(&reg) != 0) {
		return -1;
	}
	/* the alignment cases: a uint8 then a float64; a string then an int32; a sequence of
	 * structs between a uint8 and a float64 */
	static const struct {
		const char *name;
		const char *text;
	} types[] = {
	    {"U8F64", "uint8 a\nfloat64 b\n"},
	    {"StrI32", "string s\nint32 i\n"},
	    {"P", "int16 a\nuint8 b\n"},
	    {"Seq", "uint8 tag\nP[] pts\nfloat64 z\n"},
	    {"Flags", "bool[] f\nbool g\n"},
	    {"Names", "string[2] n\nstring[] m\n"},
	    {"Empty", ""},
	    {"HasEmpty", "Empty e\nuint8 a\nEmpty[] es\n"},
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (hako_msg_registry_add_text(reg, "cdrtest", types[i].name, types[i].text,
		                               types[i].name, NULL, &err) != 0) {
			fprintf(stderr, "%s: %s\n", types[i].name, err.message);
			return -1;
		}
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hako_msg_registry_destroy(reg);
	return 0;
}

static const hako_msg_type_t *type_of(const char *name)
{
	const hako_msg_type_t *t = NULL;
	hako_error_t err;
	int rc = hako_msg_registry_get(reg, name, &t, &err);
	if (rc != 0) {
		fail_msg("%s: %s", name, err.message);
	}
	return t;
}

static uint8_t *pdu_of_json(const hako_msg_type_t *t, const char *json, size_t *len)
{
	static uint8_t buf[4096];
	hako_error_t err;
	int rc = hako_pdu_from_json(t, json, strlen(json), buf, sizeof(buf), len, &err);
	if (rc != 0) {
		fail_msg("%s: %s", json, err.message);
	}
	return buf;
}

/* encode gives `want`; decoding `want` gives the PDU back, byte for byte */
static void check_bytes(const char *type, const char *json, const uint8_t *want, size_t want_len)
{
	const hako_msg_type_t *t = type_of(type);
	size_t plen;
	uint8_t *pdu = pdu_of_json(t, json, &plen);
	uint8_t out[256];
	size_t len;
	hako_error_t err;
	assert_int_equal(hako_cdr_encode(t, pdu, plen, out, sizeof(out), &len, &err), 0);
	assert_int_equal(len, want_len);
	assert_memory_equal(out, want, want_len);
	uint8_t back[4096];
	size_t blen;
	assert_int_equal(hako_cdr_decode(t, want, want_len, back, sizeof(back), &blen, &err), 0);
	assert_int_equal(blen, plen);
	assert_memory_equal(back, pdu, plen);
}

static void test_u8_f64(void **state)
{
	(void)state;
	static const uint8_t want[] = {0x00, 0x01, 0x00, 0x00, 0x11, 0, 0, 0, 0,    0,
	                               0,    0,    0,    0,    0,    0, 0, 0, 0xf0, 0x3f};
	check_bytes("cdrtest/U8F64", "{\"a\": 17, \"b\": 1.0}", want, sizeof(want));
}

static void test_string_i32(void **state)
{
	(void)state;
	static const uint8_t want[] = {0x00, 0x01, 0x00, 0x00, 3,    0,    0,    0,
	                               'a',  'b',  0,    0,    0xfe, 0xff, 0xff, 0xff};
	check_bytes("cdrtest/StrI32", "{\"s\": \"ab\", \"i\": -2}", want, sizeof(want));
	static const uint8_t empty[] = {0x00, 0x01, 0x00, 0x00, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0};
	check_bytes("cdrtest/StrI32", "{\"s\": \"\", \"i\": 7}", empty, sizeof(empty));
}

static void test_sequence_of_structs(void **state)
{
	(void)state;
	static const uint8_t want[] = {
	    0x00, 0x01, 0x00, 0x00,                /* header */
	    9,    0,    0,    0,                   /* tag, 3 bytes padding */
	    2,    0,    0,    0,                   /* count */
	    1,    0,    2,    0,                   /* pts[0].a, pts[0].b, 1 byte padding */
	    3,    0,    4,    0,                   /* pts[1].a, pts[1].b, 1 byte padding */
	    0,    0,    0,    0,    0, 0, 0, 0x40, /* z = 2.0 */
	};
	check_bytes(
	    "cdrtest/Seq",
	    "{\"tag\": 9, \"pts\": [{\"a\": 1, \"b\": 2}, {\"a\": 3, \"b\": 4}], \"z\": 2.0}", want,
	    sizeof(want));
	/* an empty sequence: no padding after its count */
	static const uint8_t none[] = {0x00, 0x01, 0x00, 0x00, 9, 0, 0, 0, 0, 0,
	                               0,    0,    0,    0,    0, 0, 0, 0, 0, 0x40};
	check_bytes("cdrtest/Seq", "{\"tag\": 9, \"pts\": [], \"z\": 2.0}", none, sizeof(none));
}

static void test_bools_and_string_arrays(void **state)
{
	(void)state;
	static const uint8_t flags[] = {0x00, 0x01, 0x00, 0x00, 3, 0, 0, 0, 1, 0, 1, 1};
	check_bytes("cdrtest/Flags", "{\"f\": [true, false, true], \"g\": true}", flags,
	            sizeof(flags));
	static const uint8_t names[] = {0x00, 0x01, 0x00, 0x00, 2, 0, 0, 0, 'x', 0,
	                                0,    0,    1,    0,    0, 0, 0, 0, 0,   0,
	                                1,    0,    0,    0,    2, 0, 0, 0, 'y', 0};
	check_bytes("cdrtest/Names", "{\"n\": [\"x\", \"\"], \"m\": [\"y\"]}", names,
	            sizeof(names));
	/* a bool byte other than 0 or 1 is true */
	const hako_msg_type_t *t = type_of("cdrtest/Flags");
	static const uint8_t two[] = {0x00, 0x01, 0x00, 0x00, 1, 0, 0, 0, 2, 5};
	uint8_t pdu[256];
	size_t plen;
	hako_error_t err;
	assert_int_equal(hako_cdr_decode(t, two, sizeof(two), pdu, sizeof(pdu), &plen, &err), 0);
	char *json = NULL;
	assert_int_equal(hako_pdu_to_json(t, pdu, plen, 0, &json, &err), 0);
	assert_string_equal(json, "{\"f\":[true],\"g\":true}");
	free(json);
}

static void test_twist(void **state)
{
	(void)state;
	uint8_t want[4 + 48] = {0x00, 0x01, 0x00, 0x00};
	for (int i = 0; i < 6; i++) {
		double v = i + 0.5;
		memcpy(want + 4 + 8 * i, &v, 8);
	}
	check_bytes("geometry_msgs/Twist",
	            "{\"linear\": {\"x\": 0.5, \"y\": 1.5, \"z\": 2.5}, "
	            "\"angular\": {\"x\": 3.5, \"y\": 4.5, \"z\": 5.5}}",
	            want, sizeof(want));
}

/* PDU -> CDR -> PDU is the identity for every built-in type, and the sizes are exact */
static void test_roundtrip_builtins(void **state)
{
	(void)state;
	size_t cap = 1 << 20;
	uint8_t *pdu = malloc(cap);
	uint8_t *cdr = malloc(cap);
	uint8_t *back = malloc(cap);
	assert_non_null(pdu);
	assert_non_null(cdr);
	assert_non_null(back);
	size_t n = hako_msg_builtin_count();
	assert_true(n >= 259);
	for (size_t i = 0; i < n; i++) {
		const char *pkg;
		const char *name;
		hako_msg_builtin_at(i, &pkg, &name);
		char full[HAKO_MSG_FULL_MAX];
		snprintf(full, sizeof(full), "%s/%s", pkg, name);
		const hako_msg_type_t *t = type_of(full);
		for (uint32_t seed = 0; seed < 3; seed++) {
			size_t plen;
			size_t clen;
			size_t need;
			size_t blen;
			hako_error_t err;
			assert_int_equal(cdr_fill(t, seed * 7u + (uint32_t)i, pdu, cap, &plen), 0);
			assert_int_equal(hako_cdr_encode(t, pdu, plen, NULL, 0, &need, &err),
			                 HAKO_ETOOBIG);
			int rc = hako_cdr_encode(t, pdu, plen, cdr, need, &clen, &err);
			if (rc != 0) {
				fail_msg("%s: encode: %s", full, err.message);
			}
			assert_int_equal(clen, need);
			assert_int_equal(hako_cdr_encode(t, pdu, plen, cdr, need - 1, &clen, &err),
			                 HAKO_ETOOBIG);
			assert_int_equal(hako_cdr_encode(t, pdu, plen, cdr, need, &clen, &err), 0);
			assert_int_equal(hako_cdr_decode(t, cdr, clen, NULL, 0, &need, &err),
			                 HAKO_ETOOBIG);
			assert_int_equal(need, plen);
			assert_int_equal(hako_cdr_decode(t, cdr, clen, back, plen - 1, &blen, &err),
			                 HAKO_ETOOBIG);
			rc = hako_cdr_decode(t, cdr, clen, back, plen, &blen, &err);
			if (rc != 0) {
				fail_msg("%s: decode: %s", full, err.message);
			}
			assert_int_equal(blen, plen);
			if (memcmp(back, pdu, plen) != 0) {
				fail_msg("%s (seed %u): PDU -> CDR -> PDU differs", full, seed);
			}
		}
	}
	free(pdu);
	free(cdr);
	free(back);
}

/* a CDR cut short anywhere is refused, and nothing past its end is read (sanitizers) */
static void test_truncated(void **state)
{
	(void)state;
	static const char *types[] = {"sensor_msgs/PointCloud2", "cdrtest/Seq",
	                              "cdrtest/Names",           "std_msgs/Float64MultiArray",
	                              "nav_msgs/Odometry",       "trajectory_msgs/JointTrajectory"};
	uint8_t pdu[65536];
	uint8_t cdr[65536];
	uint8_t back[65536];
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
		const hako_msg_type_t *t = type_of(types[k]);
		size_t plen;
		size_t clen;
		hako_error_t err;
		assert_int_equal(cdr_fill(t, 3, pdu, sizeof(pdu), &plen), 0);
		assert_int_equal(hako_cdr_encode(t, pdu, plen, cdr, sizeof(cdr), &clen, &err), 0);
		for (size_t cut = 0; cut < clen; cut++) {
			uint8_t *copy = malloc(cut > 0 ? cut : 1);
			assert_non_null(copy);
			memcpy(copy, cdr, cut);
			size_t blen;
			hako_error_clear(&err);
			int rc = hako_cdr_decode(t, copy, cut, back, sizeof(back), &blen, &err);
			free(copy);
			if (rc != HAKO_EPROTO) {
				fail_msg("%s cut at %zu of %zu: %d", types[k], cut, clen, rc);
			}
			assert_non_null(strstr(err.message, types[k]));
		}
	}
}

static void expect_refused(const char *type, const uint8_t *cdr, size_t len, const char *why)
{
	const hako_msg_type_t *t = type_of(type);
	uint8_t *copy = malloc(len);
	assert_non_null(copy);
	memcpy(copy, cdr, len);
	uint8_t pdu[4096];
	size_t plen;
	hako_error_t err;
	hako_error_clear(&err);
	int rc = hako_cdr_decode(t, copy, len, pdu, sizeof(pdu), &plen, &err);
	free(copy);
	assert_int_equal(rc, HAKO_EPROTO);
	if (strstr(err.message, why) == NULL) {
		fail_msg("\"%s\" does not say \"%s\"", err.message, why);
	}
}

static void test_hostile(void **state)
{
	(void)state;
	static const uint8_t be[] = {0x00, 0x00, 0x00, 0x00, 1, 0, 0, 0, 0, 0, 0, 0};
	expect_refused("cdrtest/StrI32", be, sizeof(be), "big-endian");
	static const uint8_t x2[] = {0x00, 0x07, 0x00, 0x00, 1, 0, 0, 0, 0, 0, 0, 0};
	expect_refused("cdrtest/StrI32", x2, sizeof(x2), "XCDR2");
	expect_refused("cdrtest/StrI32", x2, 3, "shorter than the 4-byte CDR header");
	static const uint8_t count[] = {0x00, 0x01, 0x00, 0x00, 9, 0, 0, 0,
	                                0xff, 0xff, 0xff, 0xff, 1, 0, 2, 0};
	expect_refused("cdrtest/Seq", count, sizeof(count),
	               "cdrtest/Seq: pts: count 4294967295 needs at least");
	static const uint8_t slen[] = {0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff, 0x7f, 'a', 0};
	expect_refused("cdrtest/StrI32", slen, sizeof(slen), "s: string length 2147483647");
	uint8_t big[4 + 4 + 200 + 4] = {0x00, 0x01, 0x00, 0x00, 201, 0, 0, 0};
	memset(big + 8, 'x', 200);
	big[8 + 200] = 0;
	expect_refused("cdrtest/StrI32", big, sizeof(big), "does not fit a 128-byte PDU string");
	static const uint8_t nonul[] = {0x00, 0x01, 0x00, 0x00, 2, 0, 0, 0,
	                                'a',  'b',  0,    0,    1, 0, 0, 0};
	expect_refused("cdrtest/StrI32", nonul, sizeof(nonul), "does not end with a NUL");
	static const uint8_t inner[] = {0x00, 0x01, 0x00, 0x00, 3, 0, 0, 0,
	                                'a',  0,    0,    0,    1, 0, 0, 0};
	expect_refused("cdrtest/StrI32", inner, sizeof(inner), "NUL byte inside");
	/* an element's field in the path */
	static const uint8_t elem[] = {0x00, 0x01, 0x00, 0x00, 2, 0, 0, 0, 'x', 0, 0, 0, 1, 0,   0,
	                               0,    0,    0,    0,    0, 1, 0, 0, 0,   9, 0, 0, 0, 'y', 0};
	expect_refused("cdrtest/Names", elem, sizeof(elem), "m[0]: string length 9");
}

/* NaN payloads, infinities and -0.0 pass through both ways bit for bit */
static void test_float_bits(void **state)
{
	(void)state;
	const hako_msg_type_t *t = type_of("cdrtest/U8F64");
	uint8_t cdr[20] = {0x00, 0x01, 0x00, 0x00, 1};
	const uint64_t bits[] = {UINT64_C(0x7ff0000000000123), UINT64_C(0xfff8000000000001),
	                         UINT64_C(0x7ff0000000000000), UINT64_C(0x8000000000000000)};
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		memcpy(cdr + 12, &bits[i], 8);
		uint8_t pdu[256];
		uint8_t out[64];
		size_t plen;
		size_t clen;
		hako_error_t err;
		assert_int_equal(
		    hako_cdr_decode(t, cdr, sizeof(cdr), pdu, sizeof(pdu), &plen, &err), 0);
		assert_int_equal(hako_cdr_encode(t, pdu, plen, out, sizeof(out), &clen, &err), 0);
		assert_int_equal(clen, sizeof(cdr));
		assert_memory_equal(out, cdr, sizeof(cdr));
	}
}

/* a PDU that fails validation is not encoded */
static void test_bad_pdu(void **state)
{
	(void)state;
	const hako_msg_type_t *t = type_of("cdrtest/Seq");
	size_t plen;
	uint8_t *pdu = pdu_of_json(t, "{\"tag\": 1, \"pts\": [{\"a\": 1, \"b\": 2}]}", &plen);
	int32_t huge = 1000;
	memcpy(pdu + HAKO_PDU_META_SIZE + t->fields[1].offset, &huge, 4);
	uint8_t out[256];
	size_t len;
	hako_error_t err;
	assert_int_equal(hako_cdr_encode(t, pdu, plen, out, sizeof(out), &len, &err), HAKO_EPROTO);
	assert_non_null(strstr(err.message, "pts"));
	assert_int_equal(hako_cdr_encode(NULL, pdu, plen, out, sizeof(out), &len, &err),
	                 HAKO_EINVAL);
}

static void test_schema(void **state)
{
	(void)state;
	const hako_msg_type_t *t = type_of("geometry_msgs/TwistStamped");
	static const char rule[] = "========================================"
	                           "========================================\n";
	char want[1024];
	snprintf(want, sizeof(want),
	         "std_msgs/Header header\n"
	         "geometry_msgs/Twist twist\n"
	         "%sMSG: std_msgs/Header\n"
	         "builtin_interfaces/Time stamp\n"
	         "string frame_id\n"
	         "%sMSG: builtin_interfaces/Time\n"
	         "int32 sec\n"
	         "uint32 nanosec\n"
	         "%sMSG: geometry_msgs/Twist\n"
	         "geometry_msgs/Vector3 linear\n"
	         "geometry_msgs/Vector3 angular\n"
	         "%sMSG: geometry_msgs/Vector3\n"
	         "float64 x\n"
	         "float64 y\n"
	         "float64 z\n",
	         rule, rule, rule, rule);
	size_t len;
	assert_int_equal(hako_cdr_schema(t, NULL, 0, &len), HAKO_ETOOBIG);
	assert_int_equal(len, strlen(want));
	char out[1024];
	assert_int_equal(hako_cdr_schema(t, out, len, &len), HAKO_ETOOBIG);
	assert_int_equal(hako_cdr_schema(t, out, len + 1, &len), 0);
	assert_string_equal(out, want);
	t = type_of("cdrtest/Names");
	assert_int_equal(hako_cdr_schema(t, out, sizeof(out), &len), 0);
	assert_string_equal(out, "string[2] n\nstring[] m\n");
}

/* ROS 2 gives an empty struct one uint8 (0), alone, nested or as an element */
static void test_empty(void **state)
{
	(void)state;
	static const uint8_t alone[] = {0x00, 0x01, 0x00, 0x00, 0};
	check_bytes("cdrtest/Empty", "{}", alone, sizeof(alone));
	static const uint8_t nested[] = {0x00, 0x01, 0x00, 0x00, 0, 5, 0, 0, 2, 0, 0, 0, 0, 0};
	check_bytes("cdrtest/HasEmpty", "{\"e\": {}, \"a\": 5, \"es\": [{}, {}]}", nested,
	            sizeof(nested));
	/* its byte must be there */
	static const uint8_t cut[] = {0x00, 0x01, 0x00, 0x00, 0, 5, 0, 0, 2, 0, 0, 0, 0};
	expect_refused("cdrtest/HasEmpty", cut, sizeof(cut), "es: count 2 needs at least 2 bytes");
	expect_refused("cdrtest/Empty", alone, 4, "top level: empty struct's byte");
}

/* the types whose CDR is their C bytes, copied in one piece */
static void test_plain(void **state)
{
	(void)state;
	assert_int_equal(type_of("geometry_msgs/Vector3")->cdr_plain, 24);
	assert_int_equal(type_of("geometry_msgs/Twist")->cdr_plain, 48);
	assert_int_equal(type_of("geometry_msgs/Pose")->cdr_plain, 56);
	assert_int_equal(type_of("cdrtest/U8F64")->cdr_plain, 0); /* padding after a */
	assert_int_equal(type_of("cdrtest/P")->cdr_plain, 3);     /* tail padding is not CDR */
	assert_int_equal(type_of("cdrtest/Flags")->cdr_plain, 0);
	assert_int_equal(type_of("std_msgs/Header")->cdr_plain, 0);
	/* P[2] is not plain: the second P starts after the first one's tail padding in C */
	const hako_msg_type_t *t = NULL;
	hako_error_t err;
	assert_int_equal(
	    hako_msg_registry_add_text(reg, "cdrtest", "P2", "P[2] p\n", "P2", &t, &err), 0);
	assert_int_equal(t->cdr_plain, 0);
	static const uint8_t want[] = {0x00, 0x01, 0x00, 0x00, 1, 0, 2, 0, 3, 0, 4};
	check_bytes("cdrtest/P2", "{\"p\": [{\"a\": 1, \"b\": 2}, {\"a\": 3, \"b\": 4}]}", want,
	            sizeof(want));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_u8_f64),
	    cmocka_unit_test(test_string_i32),
	    cmocka_unit_test(test_sequence_of_structs),
	    cmocka_unit_test(test_bools_and_string_arrays),
	    cmocka_unit_test(test_twist),
	    cmocka_unit_test(test_roundtrip_builtins),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_float_bits),
	    cmocka_unit_test(test_bad_pdu),
	    cmocka_unit_test(test_schema),
	    cmocka_unit_test(test_plain),
	    cmocka_unit_test(test_empty),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
