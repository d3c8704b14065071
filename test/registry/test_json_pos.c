/* json_pos: finding a value's line and column by path in a JSON text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "hakoi/json_pos.h"

#define KEY(k)                                                                                     \
	{                                                                                          \
		.key = (k)                                                                         \
	}
#define INDEX(i)                                                                                   \
	{                                                                                          \
		.index = (i)                                                                       \
	}

/* "line:column" of path in text, or "none". */
static const char *pos(const char *text, size_t len, const hakoi_json_seg_t *path, size_t depth)
{
	static char buf[32];
	int line = 0;
	int column = 0;
	if (hakoi_json_pos(text, len, path, depth, &line, &column) != 0) {
		return "none";
	}
	snprintf(buf, sizeof(buf), "%d:%d", line, column);
	return buf;
}

#define POS(text, ...)                                                                             \
	pos((text), strlen(text), (const hakoi_json_seg_t[]){__VA_ARGS__},                         \
	    sizeof((const hakoi_json_seg_t[]){__VA_ARGS__}) / sizeof(hakoi_json_seg_t))

static void test_objects_and_arrays(void **state)
{
	(void)state;
	const char *text = "{\n  \"a\": [1, {\"b\": \"x\"}, [true, null]],\n  \"c\": -2.5e3\n}";
	assert_string_equal(pos(text, strlen(text), NULL, 0), "1:1");
	assert_string_equal(POS(text, KEY("a")), "2:8");
	assert_string_equal(POS(text, KEY("a"), INDEX(0)), "2:9");
	assert_string_equal(POS(text, KEY("a"), INDEX(1), KEY("b")), "2:18");
	assert_string_equal(POS(text, KEY("a"), INDEX(2), INDEX(1)), "2:31");
	assert_string_equal(POS(text, KEY("c")), "3:8");
}

static void test_not_found(void **state)
{
	(void)state;
	const char *text = "{\"name\": [1, 2], \"empty\": {}, \"list\": []}";
	assert_string_equal(POS(text, KEY("nam")), "none");
	assert_string_equal(POS(text, KEY("names")), "none");
	assert_string_equal(POS(text, KEY("name"), INDEX(2)), "none");
	assert_string_equal(POS(text, KEY("name"), KEY("x")), "none");
	assert_string_equal(POS(text, KEY("name"), INDEX(0), INDEX(0)), "none");
	assert_string_equal(POS(text, KEY("empty"), KEY("x")), "none");
	assert_string_equal(POS(text, KEY("list"), INDEX(0)), "none");
	assert_string_equal(POS(text, INDEX(0)), "none");
}

static void test_escaped_keys(void **state)
{
	(void)state;
	/* \u005f is '_', \ud83d\ude81 a surrogate pair (U+1F681), \" and \\ plain escapes */
	const char *text =
	    "{\"a\\u005fb\": 1, \"\\ud83d\\ude81\": 2, \"q\\\"\\\\\": 3, \"t\\tab\": 4}";
	assert_string_equal(POS(text, KEY("a_b")), "1:14");
	assert_string_equal(POS(text, KEY("\xf0\x9f\x9a\x81")), "1:33");
	assert_string_equal(POS(text, KEY("q\"\\")), "1:45");
	assert_string_equal(POS(text, KEY("t\tab")), "1:57");
	assert_string_equal(POS(text, KEY("a\\u005fb")), "none");
}

static void test_repeated_key_is_the_last(void **state)
{
	(void)state;
	const char *text = "{\"k\": 1, \"k\": {\"x\": 2}}";
	assert_string_equal(POS(text, KEY("k")), "1:15");
	assert_string_equal(POS(text, KEY("k"), KEY("x")), "1:21");
}

static void test_columns_count_characters(void **state)
{
	(void)state;
	/* a 3-byte and a 4-byte UTF-8 character before the value: columns, not bytes */
	const char *text = "{\"\xe5\x9e\x8b\": \"\xf0\x9f\x9a\x81\", \"v\": 0}";
	assert_string_equal(POS(text, KEY("v")), "1:17");
}

static void test_strings_with_brackets_are_skipped(void **state)
{
	(void)state;
	const char *text = "[\"]\", \"\\\"}\", {\"a\": \"[{\"}, 4]";
	assert_string_equal(POS(text, INDEX(3)), "1:27");
	assert_string_equal(POS(text, INDEX(2), KEY("a")), "1:20");
}

static void test_nul_and_truncated_text(void **state)
{
	(void)state;
	/* a NUL inside a key must not match the end of the wanted key (found by fuzzing) */
	static const char nul_key[] = "{\"robots\0x\": 1}";
	assert_string_equal(
	    pos(nul_key, sizeof(nul_key) - 1, (const hakoi_json_seg_t[]){KEY("robots")}, 1),
	    "none");
	static const char nul_esc[] = "{\"a\\u0000\": 1}";
	assert_string_equal(POS(nul_esc, KEY("a")), "none");
	/* a repeated key may follow, so an object is read to its end before its member is entered
	 */
	const char *cut = "{\"a\": [1, 2";
	assert_string_equal(POS(cut, KEY("a"), INDEX(1)), "none");
	assert_string_equal(POS("[1, 2", INDEX(1)), "1:5");
	assert_string_equal(POS("[1, 2", INDEX(2)), "none");
	assert_string_equal(POS("{\"a\": ", KEY("a")), "none");
	assert_string_equal(POS("{\"a", KEY("a")), "none");
	assert_string_equal(pos(NULL, 0, NULL, 0), "none");
}

static void test_path_format(void **state)
{
	(void)state;
	const hakoi_json_seg_t path[] = {KEY("robots"), INDEX(0), KEY("shm_pdu_readers"), INDEX(12),
	                                 KEY("pdu_size")};
	char buf[64];
	hakoi_json_path_format(path, 5, buf, sizeof(buf));
	assert_string_equal(buf, "robots[0].shm_pdu_readers[12].pdu_size");
	hakoi_json_path_format(path + 1, 2, buf, sizeof(buf));
	assert_string_equal(buf, "[0].shm_pdu_readers");
	hakoi_json_path_format(path, 0, buf, sizeof(buf));
	assert_string_equal(buf, "");
	hakoi_json_path_format(path, 5, buf, 10);
	assert_string_equal(buf, "robots[0]");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_objects_and_arrays),
	    cmocka_unit_test(test_not_found),
	    cmocka_unit_test(test_escaped_keys),
	    cmocka_unit_test(test_repeated_key_is_the_last),
	    cmocka_unit_test(test_columns_count_characters),
	    cmocka_unit_test(test_strings_with_brackets_are_skipped),
	    cmocka_unit_test(test_nul_and_truncated_text),
	    cmocka_unit_test(test_path_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
