/* cmake/embed_msgs.cmake: the table it compiles from msg_embed/ holds every file's exact bytes
 * (quotes, backslashes, '?', tabs, CMake's own specials, UTF-8 in a literal; CRLF and a text
 * longer than one literal as bytes),
 * sorted by package, then type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg_internal.h"

#ifndef HAKO_MSG_EMBED_DIR
#define HAKO_MSG_EMBED_DIR "msg_embed"
#endif

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		return NULL;
	}
	char *buf = malloc(1 << 16);
	*len = buf != NULL ? fread(buf, 1, (1 << 16) - 1, f) : 0;
	fclose(f);
	if (buf != NULL) {
		buf[*len] = '\0';
	}
	return buf;
}

static void test_table_is_sorted_and_complete(void **state)
{
	(void)state;
	static const char *const expected[][2] = {
	    {"a", "B"},   {"a", "B2"},      {"a", "B_c"},           {"aB", "A"},
	    {"a_b", "A"}, {"long", "Long"}, {"quotes", "Specials"}, {"quotes", "Tricky"},
	};
	size_t n = sizeof(expected) / sizeof(expected[0]);
	assert_int_equal(hakoi_builtin_msg_count, n);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(hakoi_builtin_msgs[i].pkg, expected[i][0]);
		assert_string_equal(hakoi_builtin_msgs[i].name, expected[i][1]);
	}
}

static void test_texts_are_the_files(void **state)
{
	(void)state;
	for (size_t i = 0; i < hakoi_builtin_msg_count; i++) {
		const struct hakoi_builtin_msg *m = &hakoi_builtin_msgs[i];
		char path[1024];
		size_t len = 0;
		snprintf(path, sizeof(path), "%s/%s/%s.msg", HAKO_MSG_EMBED_DIR, m->pkg, m->name);
		char *file = read_all(path, &len);
		assert_non_null(file);
		if (strlen(m->text) != len || memcmp(m->text, file, len) != 0) {
			print_error("%s differs:\n--- file\n%s\n--- table\n%s\n", path, file,
			            m->text);
			fail();
		}
		free(file);
	}
}

static void test_long_text_is_whole(void **state)
{
	(void)state;
	const char *text = hakoi_builtin_msgs[5].text;
	assert_true(strlen(text) > 4095);
	assert_non_null(strstr(text, "float64 field_119"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table_is_sorted_and_complete),
	    cmocka_unit_test(test_texts_are_the_files),
	    cmocka_unit_test(test_long_text_is_whole),
	};
	return cmocka_run_group_tests_name("msg_embed", tests, NULL, NULL);
}
