/* PDU <-> JSON: exact output for the corner cases (number formats, strings, non-finite floats),
 * refusals with exact messages, and the round trip of every built-in type with each variable
 * array at length 0, 1 and 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/pdu.h"
#include "test_pdu_types.h"

static char *to_json(const hako_msg_type_t *type, const uint8_t *pdu, size_t len, int flags)
{
	char *json = NULL;
	hako_error_t err = {0};
	int rc = hako_pdu_to_json(type, pdu, len, flags, &json, &err);
	if (rc != 0) {
		fail_msg("to_json %s: %d %s", type->full_name, rc, err.message);
	}
	return json;
}

/* from_json into a fresh buffer of the size it asks for; *len is its size. */
static uint8_t *from_json(const hako_msg_type_t *type, const char *json, size_t *len)
{
	hako_error_t err = {0};
	char line[1200];
	int rc = hako_pdu_from_json(type, json, strlen(json), NULL, 0, len, &err);
	if (rc != HAKO_ETOOBIG) {
		fail_msg("from_json %s sizing: %d %s", type->full_name, rc,
		         hako_error_format(&err, line, sizeof(line)));
	}
	uint8_t *buf = malloc(*len);
	assert_non_null(buf);
	memset(buf, 0x5A, *len);
	size_t got = 0;
	rc = hako_pdu_from_json(type, json, strlen(json), buf, *len, &got, &err);
	if (rc != 0) {
		fail_msg("from_json %s: %d %s", type->full_name, rc,
		         hako_error_format(&err, line, sizeof(line)));
	}
	assert_int_equal(got, *len);
	return buf;
}

/* A test/Scalars PDU with the given values. */
struct scalars {
	int32_t b;
	uint8_t by, ch;
	int8_t i8;
	uint8_t u8;
	int16_t i16;
	uint16_t u16;
	int32_t i32;
	uint32_t u32;
	int64_t i64;
	uint64_t u64;
	float f32;
	double f64;
	const char *s;
};

#define SCALARS_SIZE 208u

static void scalars_pdu(uint8_t b[SCALARS_SIZE], const struct scalars *v)
{
	hako_pdu_writer_t w;
	size_t len;
	assert_int_equal(hako_pdu_writer_init(&w, &t_scalars, b, SCALARS_SIZE), 0);
	uint8_t *p = hako_pdu_base(b);
	memcpy(p + 0, &v->b, 4);
	p[4] = v->by;
	p[5] = v->ch;
	memcpy(p + 6, &v->i8, 1);
	p[7] = v->u8;
	memcpy(p + 8, &v->i16, 2);
	memcpy(p + 10, &v->u16, 2);
	memcpy(p + 12, &v->i32, 4);
	memcpy(p + 16, &v->u32, 4);
	memcpy(p + 24, &v->i64, 8);
	memcpy(p + 32, &v->u64, 8);
	memcpy(p + 40, &v->f32, 4);
	memcpy(p + 48, &v->f64, 8);
	if (v->s != NULL) {
		memcpy(p + 56, v->s, strlen(v->s));
	}
	assert_int_equal(hako_pdu_writer_finish(&w, &len), 0);
	assert_int_equal(len, SCALARS_SIZE);
}

static void test_scalars_exact(void **state)
{
	(void)state;
	uint8_t b[SCALARS_SIZE];
	const struct scalars v = {
	    .b = 1,
	    .by = 255,
	    .ch = 65,
	    .i8 = INT8_MIN,
	    .u8 = 200,
	    .i16 = INT16_MIN,
	    .u16 = UINT16_MAX,
	    .i32 = INT32_MIN,
	    .u32 = UINT32_MAX,
	    .i64 = INT64_MIN,
	    .u64 = UINT64_MAX,
	    .f32 = 0.1f,
	    .f64 = 0.1,
	    .s = "a\"b\\c/\n\t\x01\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
	};
	static const char want[] =
	    "{\"b\":true,\"by\":255,\"ch\":65,\"i8\":-128,\"u8\":200,\"i16\":-32768,\"u16\":65535,"
	    "\"i32\":-2147483648,\"u32\":4294967295,\"i64\":-9223372036854775808,"
	    "\"u64\":\"18446744073709551615\",\"f32\":0.1,\"f64\":0.1,"
	    "\"s\":\"a\\\"b\\\\c/\\n\\t\\u0001\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}";
	scalars_pdu(b, &v);
	char *json = to_json(&t_scalars, b, sizeof(b), 0);
	assert_string_equal(json, want);
	size_t len;
	uint8_t *back = from_json(&t_scalars, json, &len);
	assert_int_equal(len, sizeof(b));
	assert_memory_equal(back, b, sizeof(b));
	free(back);
	free(json);

	/* the other side of the limits; uint64 is a number up to INT64_MAX */
	const struct scalars w = {
	    .i64 = INT64_MAX, .u64 = (uint64_t)INT64_MAX, .f32 = -0.0f, .f64 = -0.0, .s = ""};
	scalars_pdu(b, &w);
	json = to_json(&t_scalars, b, sizeof(b), 0);
	assert_string_equal(json,
	                    "{\"b\":false,\"by\":0,\"ch\":0,\"i8\":0,\"u8\":0,\"i16\":0,"
	                    "\"u16\":0,\"i32\":0,\"u32\":0,\"i64\":9223372036854775807,"
	                    "\"u64\":9223372036854775807,\"f32\":-0.0,\"f64\":-0.0,\"s\":\"\"}");
	back = from_json(&t_scalars, json, &len);
	assert_memory_equal(back, b, sizeof(b));
	free(back);
	free(json);

	/* a nonzero bool other than 1 is true (Hakoniwa's bool is an int) */
	const struct scalars x = {.b = 7, .u64 = (uint64_t)INT64_MAX + 1};
	scalars_pdu(b, &x);
	json = to_json(&t_scalars, b, sizeof(b), 0);
	assert_non_null(strstr(json, "\"b\":true,"));
	assert_non_null(strstr(json, "\"u64\":\"9223372036854775808\","));
	free(json);
}

/* Not valid UTF-8: each offending byte is \udcXX ("surrogateescape"), so the JSON stays valid
 * and reads back as the same bytes. */
static void test_invalid_utf8(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		const char *want;
	} cases[] = {
	    {"\xff"
	     "a\xc3",
	     "\\udcffa\\udcc3"},
	    {"\xc0\xaf", "\\udcc0\\udcaf"},                       /* overlong '/' */
	    {"\xed\xa0\x80", "\\udced\\udca0\\udc80"},            /* a surrogate */
	    {"\xf4\x90\x80\x80", "\\udcf4\\udc90\\udc80\\udc80"}, /* past U+10FFFF */
	    {"\xe2\x82", "\\udce2\\udc82"},                       /* cut short */
	    {"\xe2\x82\xac\x80", "\xe2\x82\xac\\udc80"},          /* a stray continuation */
	    {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},
	};
	uint8_t b[SCALARS_SIZE];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct scalars v = {.s = cases[i].s};
		char want[256];
		scalars_pdu(b, &v);
		char *json = to_json(&t_scalars, b, sizeof(b), 0);
		snprintf(want, sizeof(want), "\"s\":\"%s\"}", cases[i].want);
		assert_string_equal(json + strlen(json) - strlen(want), want);
		size_t len;
		uint8_t *back = from_json(&t_scalars, json, &len);
		assert_memory_equal(back, b, sizeof(b));
		free(back);
		free(json);
	}
	/* 127 such bytes still fit */
	char s127[128];
	memset(s127, 0xfe, 127);
	s127[127] = '\0';
	const struct scalars v = {.s = s127};
	scalars_pdu(b, &v);
	char *json = to_json(&t_scalars, b, sizeof(b), HAKO_PDU_JSON_PRETTY);
	size_t len;
	uint8_t *back = from_json(&t_scalars, json, &len);
	assert_memory_equal(back, b, sizeof(b));
	free(back);
	free(json);
}

static void test_floats(void **state)
{
	(void)state;
	static const struct {
		double f64;
		float f32;
		const char *want; /* "f32":..,"f64":.. */
	} cases[] = {
	    {NAN, NAN, "\"f32\":\"nan\",\"f64\":\"nan\""},
	    {INFINITY, -INFINITY, "\"f32\":\"-inf\",\"f64\":\"inf\""},
	    {-INFINITY, INFINITY, "\"f32\":\"inf\",\"f64\":\"-inf\""},
	    {1e300, 1e30f, "\"f32\":1e+30,\"f64\":1e+300"},
	    {5e-324, 1e-45f, "\"f32\":1e-45,\"f64\":5e-324"},
	    {DBL_MAX, FLT_MAX, "\"f32\":3.4028235e+38,\"f64\":1.7976931348623157e+308"},
	    {1.0 / 3, 1.0f / 3, "\"f32\":0.33333334,\"f64\":0.3333333333333333"},
	    {9007199254740992.0, 16777216.0f, "\"f32\":16777216.0,\"f64\":9007199254740992.0"},
	    {-12345.0, 0.5f, "\"f32\":0.5,\"f64\":-12345.0"},
	    {123456789012.5, 3.14159274f, "\"f32\":3.1415927,\"f64\":123456789012.5"},
	};
	uint8_t b[SCALARS_SIZE];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct scalars v = {.f32 = cases[i].f32, .f64 = cases[i].f64};
		scalars_pdu(b, &v);
		char *json = to_json(&t_scalars, b, sizeof(b), 0);
		if (strstr(json, cases[i].want) == NULL) {
			fail_msg("case %zu: %s lacks %s", i, json, cases[i].want);
		}
		size_t len;
		uint8_t *back = from_json(&t_scalars, json, &len);
		float f;
		double d;
		memcpy(&f, back + 24 + 40, 4);
		memcpy(&d, back + 24 + 48, 8);
		if (isnan(cases[i].f64)) {
			assert_true(isnan(f) && isnan(d));
		} else {
			assert_memory_equal(back, b, sizeof(b));
		}
		free(back);
		free(json);
	}
}

/* Besides what to_json writes: integral reals for integers, integers for floats, uint64 as a
 * decimal string, missing fields (zero). */
static void test_from_json_accepts(void **state)
{
	(void)state;
	size_t len;
	uint8_t want[SCALARS_SIZE];
	const struct scalars v = {.u8 = 7,
	                          .i64 = -5,
	                          .u64 = 10000000000000000000u,
	                          .f32 = 3,
	                          .f64 = -2,
	                          .u32 = 42,
	                          .s = "x"};
	scalars_pdu(want, &v);
	/* "42" for a uint32 is not taken: only uint64 has the string form */
	hako_error_t err = {0};
	uint8_t buf[SCALARS_SIZE];
	assert_int_equal(
	    hako_pdu_from_json(&t_scalars, "{\"u32\": \"42\"}", 13, buf, sizeof(buf), &len, &err),
	    HAKO_ECONFIG);
	uint8_t *b =
	    from_json(&t_scalars,
	              "{\"u8\": 7.0, \"i64\": -5e0, \"u64\": 1e19, \"f32\": 3, \"f64\": -2, "
	              "\"u32\": 42, \"s\": \"x\"}",
	              &len);
	assert_memory_equal(b, want, sizeof(want));
	free(b);
	b = from_json(&t_scalars,
	              "{\"u64\": \"10000000000000000000\", \"u8\": 7, \"i64\": -5, "
	              "\"f32\": 3.0, \"f64\": -2.0, \"u32\": 42, \"s\": \"x\"}",
	              &len);
	assert_memory_equal(b, want, sizeof(want));
	free(b);

	/* everything missing: all zero */
	b = from_json(&t_point_cloud2, "{}", &len);
	assert_int_equal(len, 200);
	uint8_t zero[176] = {0};
	assert_memory_equal(b + 24, zero, sizeof(zero));
	assert_int_equal(hako_pdu_validate(&t_point_cloud2, b, len, NULL), 0);
	free(b);
}

/* ---- refusals ---- */

struct refusal {
	const hako_msg_type_t *type;
	const char *json;
	const char *want; /* hako_error_format of the error */
};

static void test_refusals(void **state)
{
	(void)state;
#define A16 "aaaaaaaaaaaaaaaa"
	static const char long_string[] = "{\"s\": \"" A16 A16 A16 A16 A16 A16 A16 A16 "\"}";
	static const struct refusal cases[] = {
	    {&t_scalars, "{\"u8\": 300}", "<input>:1:8: u8: 300 is out of range for uint8"},
	    {&t_scalars, "{\"i8\": -129}", "<input>:1:8: i8: -129 is out of range for int8"},
	    {&t_scalars, "{\"by\": 256}", "<input>:1:8: by: 256 is out of range for byte"},
	    {&t_scalars, "{\"u16\": 65536}", "<input>:1:9: u16: 65536 is out of range for uint16"},
	    {&t_scalars, "{\"i32\": 2147483648}",
	     "<input>:1:9: i32: 2147483648 is out of range for int32"},
	    {&t_scalars, "{\"u32\": -1}", "<input>:1:9: u32: -1 is out of range for uint32"},
	    {&t_scalars, "{\"u64\": -1}", "<input>:1:9: u64: -1 is out of range for uint64"},
	    {&t_scalars, "{\"u64\": 2e19}", "<input>:1:9: u64: 2e19 is out of range for uint64"},
	    {&t_scalars, "{\"i64\": 9.3e18}", "<input>:1:9: i64: 9.3e18 is out of range for int64"},
	    {&t_scalars, "{\"u64\": \"18446744073709551616\"}",
	     "<input>:1:9: u64: \"18446744073709551616\" is out of range for uint64"},
	    {&t_scalars, "{\"u64\": \"12a\"}", "<input>:1:9: u64: must be an integer (uint64)"},
	    {&t_scalars, "{\"u64\": \"+1\"}", "<input>:1:9: u64: must be an integer (uint64)"},
	    {&t_scalars, "{\"i32\": 1.5}", "<input>:1:9: i32: must be an integer (int32)"},
	    {&t_scalars, "{\"i32\": \"1\"}", "<input>:1:9: i32: must be an integer (int32)"},
	    {&t_scalars, "{\"ch\": [65]}", "<input>:1:8: ch: must be an integer (char)"},
	    {&t_scalars, "{\"b\": 1}", "<input>:1:7: b: must be true or false"},
	    {&t_scalars, "{\"f32\": 1e300}", "<input>:1:9: f32: 1e300 is out of range for float32"},
	    {&t_scalars, "{\"f64\": \"NaN\"}",
	     "<input>:1:9: f64: must be a number (or \"nan\", \"inf\", \"-inf\")"},
	    {&t_scalars, "{\"f64\": null}",
	     "<input>:1:9: f64: must be a number (or \"nan\", \"inf\", \"-inf\")"},
	    {&t_scalars, "{\"s\": 5}", "<input>:1:7: s: must be a string"},
	    {&t_scalars, long_string, "<input>:1:7: s: is 128 bytes long; the limit is 127"},
	    {&t_scalars, "{\"u8\": 1,\n \"nope\": 1}",
	     "<input>:2:10: nope: unknown field (test/Scalars has no such field)"},
	    {&t_scalars, "[]", "<input>:1:1: top level: must be an object"},
	    {&t_scalars, "{\"u8\": 1, \"u8\": 2}", "<input>:1:17: u8: given twice"},
	    {&t_scalars, "{\"s\": \"a\\u0000b\"}", "<input>:1:7: s: \\u0000 cannot be in a string"},
	    /* not JSON */
	    {&t_scalars, "{\"u8\": 1,}", "<input>:1:10: invalid JSON: expected a field name"},
	    {&t_scalars, "", "<input>:1:1: invalid JSON: unexpected end of input"},
	    {&t_scalars, " {\"u8\": 1", "<input>:1:10: invalid JSON: unexpected end of input"},
	    {&t_scalars, "{\"u8\": 1} x",
	     "<input>:1:11: invalid JSON: text after the end of the value"},
	    {&t_scalars, "{\"u8\" 1}", "<input>:1:7: invalid JSON: expected ':'"},
	    {&t_scalars, "{\"u8\": 1 \"i8\": 2}",
	     "<input>:1:10: invalid JSON: expected ',' or '}'"},
	    {&t_scalars, "{\"u8\": 01}", "<input>:1:9: invalid JSON: expected ',' or '}'"},
	    {&t_scalars, "{\"f64\": 1.}",
	     "<input>:1:9: f64: must be a number (or \"nan\", \"inf\", \"-inf\")"},
	    {&t_scalars, "{\"f64\": 1e400}", "<input>:1:9: f64: 1e400 is out of range for float64"},
	    {&t_scalars, "{\"s\": \"a\\qb\"}",
	     "<input>:1:9: invalid JSON: invalid escape in a string"},
	    {&t_scalars, "{\"s\": \"\\ud800x\"}",
	     "<input>:1:8: invalid JSON: invalid \\u escape (lone surrogate)"},
	    {&t_scalars, "{\"s\": \"\\udc41\"}",
	     "<input>:1:8: invalid JSON: invalid \\u escape (lone surrogate)"},
	    {&t_scalars, "{\"s\": \"\\u12g4\"}", "<input>:1:8: invalid JSON: invalid \\u escape"},
	    {&t_scalars, "{\"s\": \"a\tb\"}",
	     "<input>:1:9: invalid JSON: control character in a string"},
	    {&t_scalars, "{\"s\": \"\xc3\xa9\xff\"}",
	     "<input>:1:9: invalid JSON: invalid UTF-8 in a string"},
	    {&t_scalars, "{\"s\": \"abc", "<input>:1:11: invalid JSON: unexpected end of input"},
	    {&t_poly, "{\"k\": [1, 2", "<input>:1:12: invalid JSON: unexpected end of input"},
	    {&t_poly, "{\"points\": [{}, {}",
	     "<input>:1:19: invalid JSON: unexpected end of input"},
	    {&t_poly, "{\"points\": [{} {}]}", "<input>:1:16: invalid JSON: expected ',' or ']'"},
	    {&t_poly, "{\"w\": [1, 2]}", "<input>:1:7: w: must have 3 elements, not 2"},
	    {&t_poly, "{\"w\": 1}", "<input>:1:7: w: must be an array"},
	    {&t_poly, "{\"points\": {}}", "<input>:1:12: points: must be an array"},
	    {&t_poly, "{\"points\": [5]}", "<input>:1:13: points[0]: must be an object"},
	    {&t_poly,
	     "{\n  \"points\": [\n    {\"data\": [1, 2]},\n    {\"data\": [1, 256]}\n  ]\n}",
	     "<input>:4:18: points[1].data[1]: 256 is out of range for uint8"},
	    {&t_poly, "{\"pair\": [{}, {\"name\": 3}]}",
	     "<input>:1:24: pair[1].name: must be a string"},
	    {&t_poly, "{\"points\": [{\"extra\": 1}]}",
	     "<input>:1:23: points[0].extra: unknown field (test/Seg has no such field)"},
	    {&t_poly, "{\"k\": [1, -32769]}",
	     "<input>:1:11: k[1]: -32769 is out of range for int16"},
	    {&t_point_cloud2, "{\"header\": {\"stamp\": {\"sec\": 2147483648}}}",
	     "<input>:1:30: header.stamp.sec: 2147483648 is out of range for int32"},
	    {&t_point_cloud2, "{\"header\": {\"stamp\": 1}}",
	     "<input>:1:22: header.stamp: must be an object"},
	};
	uint8_t buf[2048];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hako_error_t err = {0};
		char line[1200];
		size_t len = 77;
		memset(buf, 0x5A, sizeof(buf));
		int rc = hako_pdu_from_json(cases[i].type, cases[i].json, strlen(cases[i].json),
		                            buf, sizeof(buf), &len, &err);
		if (rc != HAKO_ECONFIG ||
		    strcmp(hako_error_format(&err, line, sizeof(line)), cases[i].want) != 0) {
			fail_msg("case %zu (%s): %d \"%s\", want \"%s\"", i, cases[i].json, rc,
			         hako_error_format(&err, line, sizeof(line)), cases[i].want);
		}
		/* the buffer is not touched */
		for (size_t k = 0; k < sizeof(buf); k++) {
			assert_int_equal(buf[k], 0x5A);
		}
	}
}

static void test_too_big(void **state)
{
	(void)state;
	static const char json[] = "{\"points\": [{\"data\": [1, 2, 3]}], \"k\": [5]}";
	uint8_t buf[600];
	size_t len = 0;
	hako_error_t err = {0};
	memset(buf, 0x5A, sizeof(buf));
	/* 328 + 136 + 3 + 2 */
	assert_int_equal(hako_pdu_from_json(&t_poly, json, strlen(json), buf, 468, &len, &err),
	                 HAKO_ETOOBIG);
	assert_int_equal(len, 469);
	assert_string_equal(err.message, "the PDU needs 469 bytes; the buffer has 468");
	for (size_t k = 0; k < sizeof(buf); k++) {
		assert_int_equal(buf[k], 0x5A);
	}
	assert_int_equal(hako_pdu_from_json(&t_poly, json, strlen(json), NULL, 0, &len, &err),
	                 HAKO_ETOOBIG);
	assert_int_equal(len, 469);
	assert_int_equal(hako_pdu_from_json(&t_poly, json, strlen(json), buf, 469, &len, &err), 0);
	assert_int_equal(len, 469);
	assert_int_equal(buf[469], 0x5A);
	assert_int_equal(hako_pdu_validate(&t_poly, buf, len, NULL), 0);
	/* bad arguments */
	assert_int_equal(hako_pdu_from_json(NULL, json, strlen(json), buf, 469, &len, &err),
	                 HAKO_EINVAL);
	assert_int_equal(hako_pdu_from_json(&t_poly, json, strlen(json), NULL, 469, &len, &err),
	                 HAKO_EINVAL);
	char *out = NULL;
	assert_int_equal(hako_pdu_to_json(&t_poly, buf, len, 4, &out, &err), HAKO_EINVAL);
	assert_null(out);
}

static void test_pretty(void **state)
{
	(void)state;
	static const char compact[] = "{\"points\":[{\"data\":[1,2],\"name\":\"a\"},{\"data\":[],"
	                              "\"name\":\"\"}],\"w\":[0.5,1.0,2.0],\"pair\":[{\"data\":[],"
	                              "\"name\":\"\"},{\"data\":[3],\"name\":\"b\"}],\"k\":[]}";
	static const char pretty[] = "{\n"
	                             "  \"points\": [\n"
	                             "    {\n"
	                             "      \"data\": [1, 2],\n"
	                             "      \"name\": \"a\"\n"
	                             "    },\n"
	                             "    {\n"
	                             "      \"data\": [],\n"
	                             "      \"name\": \"\"\n"
	                             "    }\n"
	                             "  ],\n"
	                             "  \"w\": [0.5, 1.0, 2.0],\n"
	                             "  \"pair\": [\n"
	                             "    {\n"
	                             "      \"data\": [],\n"
	                             "      \"name\": \"\"\n"
	                             "    },\n"
	                             "    {\n"
	                             "      \"data\": [3],\n"
	                             "      \"name\": \"b\"\n"
	                             "    }\n"
	                             "  ],\n"
	                             "  \"k\": []\n"
	                             "}";
	size_t len;
	uint8_t *b = from_json(&t_poly, compact, &len);
	char *c = to_json(&t_poly, b, len, 0);
	char *p = to_json(&t_poly, b, len, HAKO_PDU_JSON_PRETTY);
	assert_string_equal(c, compact);
	assert_string_equal(p, pretty);
	size_t len2;
	uint8_t *b2 = from_json(&t_poly, pretty, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(b2, b, len);
	free(b2);
	free(b);
	free(c);
	free(p);
}

/* ---- round trip of every type, values from a deterministic filler ---- */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Valid UTF-8 mostly, and bytes that are not (they round-trip too). */
static void fill_string(uint8_t *dst, uint64_t *s)
{
	static const char *const pieces[] = {"a",
	                                     "Z",
	                                     "0",
	                                     " ",
	                                     "\"",
	                                     "\\",
	                                     "/",
	                                     "\n",
	                                     "\x01",
	                                     "\x7f",
	                                     "\xc3\xa9",
	                                     "\xe2\x82\xac",
	                                     "\xf0\x9f\x98\x80",
	                                     "xyz",
	                                     "\xff",
	                                     "\xc3"};
	size_t want = rnd(s) % 8 == 0 ? 127 : rnd(s) % 24;
	size_t n = 0;
	for (;;) {
		const char *p = pieces[rnd(s) % (sizeof(pieces) / sizeof(pieces[0]))];
		size_t k = strlen(p);
		if (n + k > want) {
			break;
		}
		if (dst != NULL) {
			memcpy(dst + n, p, k);
		}
		n += k;
	}
}

static void fill_scalar(hako_msg_kind_t kind, uint8_t *dst, uint64_t *s)
{
	uint64_t r = rnd(s);
	if (dst == NULL) {
		return;
	}
	switch (kind) {
	case HAKO_MSG_BOOL: {
		int32_t v = (int32_t)(r & 1);
		memcpy(dst, &v, 4);
		break;
	}
	case HAKO_MSG_BYTE:
	case HAKO_MSG_CHAR:
	case HAKO_MSG_INT8:
	case HAKO_MSG_UINT8: *dst = (uint8_t)r; break;
	case HAKO_MSG_INT16:
	case HAKO_MSG_UINT16: memcpy(dst, &r, 2); break;
	case HAKO_MSG_INT32:
	case HAKO_MSG_UINT32: memcpy(dst, &r, 4); break;
	case HAKO_MSG_INT64:
	case HAKO_MSG_UINT64: memcpy(dst, &r, 8); break;
	case HAKO_MSG_FLOAT32: {
		float f;
		uint32_t bits = (uint32_t)r;
		memcpy(&f, &bits, 4);
		if (r >> 62 == 0 || !isfinite(f)) {
			f = (float)(int32_t)(r >> 40) / 64.0f; /* a friendly value */
		}
		memcpy(dst, &f, 4);
		break;
	}
	case HAKO_MSG_FLOAT64: {
		double d;
		memcpy(&d, &r, 8);
		if (r >> 62 == 0 || !isfinite(d)) {
			d = (double)(int32_t)(r >> 20) / 1024.0;
		}
		memcpy(dst, &d, 8);
		break;
	}
	case HAKO_MSG_STRING: fill_string(dst, s); break;
	case HAKO_MSG_STRUCT: break;
	}
}

static void fill_struct(hako_pdu_writer_t *w, const hako_msg_type_t *t, uint8_t *dst, uint32_t n,
                        uint64_t *s);

static void fill_element(hako_pdu_writer_t *w, const hako_msg_field_t *f, uint8_t *dst, uint32_t n,
                         uint64_t *s)
{
	if (f->kind == HAKO_MSG_STRUCT) {
		fill_struct(w, f->type, dst, n, s);
	} else {
		fill_scalar(f->kind, dst, s);
	}
}

/* Every variable array, at any depth, gets n elements. dst NULL: a sizing pass. */
static void fill_struct(hako_pdu_writer_t *w, const hako_msg_type_t *t, uint8_t *dst, uint32_t n,
                        uint64_t *s)
{
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		uint8_t *at = dst != NULL ? dst + f->offset : NULL;
		if (f->form == HAKO_MSG_SINGLE) {
			fill_element(w, f, at, n, s);
		} else if (f->form == HAKO_MSG_ARRAY) {
			for (uint32_t k = 0; k < f->count; k++) {
				fill_element(w, f, at != NULL ? at + k * f->elem_size : NULL, n, s);
			}
		} else {
			uint8_t *e = hako_pdu_writer_varray(w, at, n, f->elem_size);
			for (uint32_t k = 0; k < n; k++) {
				fill_element(w, f, e != NULL ? e + k * f->elem_size : NULL, n, s);
			}
		}
	}
}

static uint8_t *fill_pdu(const hako_msg_type_t *t, uint32_t n, uint64_t seed, size_t *len)
{
	hako_pdu_writer_t w;
	uint64_t s = seed;
	hako_pdu_writer_init(&w, t, NULL, 0);
	fill_struct(&w, t, NULL, n, &s);
	assert_int_equal(hako_pdu_writer_finish(&w, len), HAKO_ETOOBIG);
	uint8_t *buf = malloc(*len);
	assert_non_null(buf);
	s = seed;
	assert_int_equal(hako_pdu_writer_init(&w, t, buf, *len), 0);
	fill_struct(&w, t, hako_pdu_base(buf), n, &s);
	size_t got;
	assert_int_equal(hako_pdu_writer_finish(&w, &got), 0);
	assert_int_equal(got, *len);
	return buf;
}

/* PDU -> JSON -> PDU gives the same bytes (padding included: both sides zero it), and JSON ->
 * PDU -> JSON the same text, compact and pretty. */
static void round_trip(const hako_msg_type_t *t)
{
	for (uint32_t n = 0; n <= 2; n++) {
		for (uint64_t seed = 1; seed <= 3; seed++) {
			size_t len;
			size_t len2;
			uint8_t *p1 = fill_pdu(t, n, seed * 0x9E3779B97F4A7C15u + n, &len);
			hako_error_t err = {0};
			if (hako_pdu_validate(t, p1, len, &err) != 0) {
				fail_msg("%s n=%u: %s", t->full_name, n, err.message);
			}
			for (int flags = 0; flags <= HAKO_PDU_JSON_PRETTY; flags++) {
				char *j1 = to_json(t, p1, len, flags);
				uint8_t *p2 = from_json(t, j1, &len2);
				if (len2 != len || memcmp(p1, p2, len) != 0) {
					fail_msg("%s n=%u: bytes differ after %s", t->full_name, n,
					         j1);
				}
				char *j2 = to_json(t, p2, len2, flags);
				assert_string_equal(j1, j2);
				free(j2);
				free(p2);
				free(j1);
			}
			free(p1);
		}
	}
}

static void test_round_trip_hand_types(void **state)
{
	(void)state;
	const hako_msg_type_t *types[] = {&t_twist, &t_point_cloud2, &t_eu_status,
	                                  &t_poly,  &t_scalars,      &t_empty};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		round_trip(types[i]);
	}
}

static void test_round_trip_builtins(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = NULL;
	assert_int_equal(hako_msg_registry_create(&reg), 0);
	size_t count = hako_msg_builtin_count();
	assert_true(count >= 40);
	for (size_t i = 0; i < count; i++) {
		const char *pkg;
		const char *name;
		char full[HAKO_MSG_FULL_MAX];
		const hako_msg_type_t *t = NULL;
		hako_error_t err = {0};
		hako_msg_builtin_at(i, &pkg, &name);
		snprintf(full, sizeof(full), "%s/%s", pkg, name);
		if (hako_msg_registry_get(reg, full, &t, &err) != 0) {
			fail_msg("%s: %s", full, err.message);
		}
		round_trip(t);
	}

	/* struct arrays whose elements have struct arrays with their own arrays */
	const hako_msg_type_t *t = NULL;
	hako_error_t err = {0};
	assert_int_equal(hako_msg_registry_add_text(reg, "rt", "Leaf",
	                                            "string[] tags\nfloat32[] v\nbool[2] on\n",
	                                            "rt/Leaf.msg", &t, &err),
	                 0);
	assert_int_equal(hako_msg_registry_add_text(reg, "rt", "Mid",
	                                            "Leaf[] leaves\nuint8 id\nLeaf[2] fixed\n",
	                                            "rt/Mid.msg", &t, &err),
	                 0);
	assert_int_equal(hako_msg_registry_add_text(reg, "rt", "Top",
	                                            "std_msgs/Header header\nMid[] mids\n"
	                                            "int64[] stamps\nMid one\n",
	                                            "rt/Top.msg", &t, &err),
	                 0);
	round_trip(t);
	hako_msg_registry_destroy(reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scalars_exact),
	    cmocka_unit_test(test_invalid_utf8),
	    cmocka_unit_test(test_floats),
	    cmocka_unit_test(test_from_json_accepts),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_too_big),
	    cmocka_unit_test(test_pretty),
	    cmocka_unit_test(test_round_trip_hand_types),
	    cmocka_unit_test(test_round_trip_builtins),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
