/* pdudef loader: data-driven cases (cases/<name>/input.json + expected.txt) and the lookup API.
 *
 * expected.txt is either "ok" followed by the loaded robots and PDUs, or the exact error line
 * with file paths written relative to the case folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hako/pdudef.h"

#ifndef HAKO_PDUDEF_CASES
#define HAKO_PDUDEF_CASES "cases"
#endif

#define MIN_CASES 20

static const char *cases_dir = HAKO_PDUDEF_CASES;

struct test_case {
	char name[256];
	char dir[1024];
};

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		return NULL;
	}
	size_t cap = 4096;
	size_t used = 0;
	char *buf = malloc(cap);
	size_t n;
	while (buf != NULL && (n = fread(buf + used, 1, cap - used - 1, f)) > 0) {
		used += n;
		if (cap - used < 2) {
			cap *= 2;
			char *nbuf = realloc(buf, cap);
			if (nbuf == NULL) {
				free(buf);
			}
			buf = nbuf;
		}
	}
	fclose(f);
	if (buf != NULL) {
		buf[used] = '\0';
	}
	return buf;
}

static void trim_end(char *s)
{
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ')) {
		s[--n] = '\0';
	}
}

/* Remove every occurrence of prefix from s, so paths read relative to the case folder. */
static void strip_all(char *s, const char *prefix)
{
	size_t plen = strlen(prefix);
	char *hit;
	while (plen > 0 && (hit = strstr(s, prefix)) != NULL) {
		memmove(hit, hit + plen, strlen(hit + plen) + 1);
	}
}

static void append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	if (used >= len) {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

static void format_def(const hako_pdudef_t *def, char *buf, size_t len)
{
	buf[0] = '\0';
	append(buf, len, "ok\n");
	for (size_t i = 0; i < def->robot_count; i++) {
		const hako_pdudef_robot_t *r = &def->robots[i];
		append(buf, len, "robot %s\n", r->name);
		for (size_t j = 0; j < r->pdu_count; j++) {
			const hako_pdudef_pdu_t *p = &r->pdus[j];
			append(buf, len, "  pdu %s ch=%d size=%u type=%s r=%d w=%d\n", p->name,
			       (int)p->channel_id, (unsigned)p->pdu_size, p->type, p->is_reader,
			       p->is_writer);
		}
	}
}

static void run_case(void **state)
{
	const struct test_case *tc = *state;
	char input[1100];
	char expected_path[1100];
	char prefix[1100];
	snprintf(input, sizeof(input), "%s/input.json", tc->dir);
	snprintf(expected_path, sizeof(expected_path), "%s/expected.txt", tc->dir);
	snprintf(prefix, sizeof(prefix), "%s/", tc->dir);

	char *expected = read_all(expected_path);
	assert_non_null(expected);
	trim_end(expected);

	static char actual[65536];
	hako_pdudef_t *def = NULL;
	hako_error_t err;
	int rc = hako_pdudef_load(input, &def, &err);
	if (rc == 0) {
		assert_non_null(def);
		assert_string_equal(def->path, input);
		format_def(def, actual, sizeof(actual));
	} else {
		assert_null(def);
		assert_true(rc == HAKO_ECONFIG || rc == HAKO_ENOENT);
		hako_error_format(&err, actual, sizeof(actual));
		strip_all(actual, prefix);
	}
	trim_end(actual);
	hako_pdudef_free(def);

	int same = strcmp(expected, actual) == 0;
	if (!same) {
		print_error("case %s\n--- expected\n%s\n--- actual\n%s\n", tc->name, expected,
		            actual);
	}
	free(expected);
	assert_true(same);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct test_case *)a)->name, ((const struct test_case *)b)->name);
}

/* Every folder under cases_dir that holds an expected.txt, sorted by name. */
static size_t find_cases(struct test_case **out)
{
	DIR *dir = opendir(cases_dir);
	size_t count = 0;
	size_t cap = 0;
	struct test_case *cases = NULL;
	struct dirent *de;
	*out = NULL;
	if (dir == NULL) {
		return 0;
	}
	while ((de = readdir(dir)) != NULL) {
		struct test_case tc;
		char expected[1100];
		struct stat st;
		if (de->d_name[0] == '.') {
			continue;
		}
		snprintf(tc.name, sizeof(tc.name), "%s", de->d_name);
		snprintf(tc.dir, sizeof(tc.dir), "%s/%s", cases_dir, de->d_name);
		snprintf(expected, sizeof(expected), "%s/expected.txt", tc.dir);
		if (stat(expected, &st) != 0) {
			continue;
		}
		if (count == cap) {
			cap = cap > 0 ? cap * 2 : 64;
			struct test_case *ncases = realloc(cases, cap * sizeof(*cases));
			if (ncases == NULL) {
				break;
			}
			cases = ncases;
		}
		cases[count++] = tc;
	}
	closedir(dir);
	qsort(cases, count, sizeof(*cases), by_name);
	*out = cases;
	return count;
}

static void case_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s/input.json", cases_dir, name);
}

static void test_lookups(void **state)
{
	(void)state;
	char path[1100];
	case_path(path, sizeof(path), "ok_legacy_drone");
	hako_pdudef_t *def = NULL;
	hako_error_t err;
	assert_int_equal(hako_pdudef_load(path, &def, &err), 0);

	const hako_pdudef_robot_t *r = hako_pdudef_robot(def, "Drone");
	assert_non_null(r);
	assert_int_equal(r->pdu_count, 2);
	assert_null(hako_pdudef_robot(def, "drone"));

	const hako_pdudef_pdu_t *motor = hako_pdudef_find(def, "Drone", "motor");
	assert_non_null(motor);
	assert_int_equal(motor->channel_id, 0);
	assert_int_equal(motor->pdu_size, 112);
	assert_ptr_equal(hako_pdudef_find_channel(def, "Drone", 0), motor);

	const hako_pdudef_pdu_t *pos = hako_pdudef_find_channel(def, "Drone", 1);
	assert_non_null(pos);
	assert_string_equal(pos->name, "pos");
	assert_string_equal(pos->type, "geometry_msgs/Twist");

	/* lookups go by the short name, not the legacy "Drone_pos" */
	assert_null(hako_pdudef_find(def, "Drone", "Drone_pos"));
	assert_null(hako_pdudef_find(def, "Drone", "nope"));
	assert_null(hako_pdudef_find(def, "Other", "motor"));
	assert_null(hako_pdudef_find_channel(def, "Drone", 2));
	assert_null(hako_pdudef_find_channel(def, "Drone", -1));
	hako_pdudef_free(def);
}

static void test_compact_robots_own_their_pdus(void **state)
{
	(void)state;
	char path[1100];
	case_path(path, sizeof(path), "ok_compact_two_robots");
	hako_pdudef_t *def = NULL;
	assert_int_equal(hako_pdudef_load(path, &def, NULL), 0);
	const hako_pdudef_robot_t *r1 = hako_pdudef_robot(def, "Drone-1");
	const hako_pdudef_robot_t *r2 = hako_pdudef_robot(def, "Drone-2");
	assert_non_null(r1);
	assert_non_null(r2);
	assert_int_equal(r1->pdu_count, r2->pdu_count);
	assert_ptr_not_equal(r1->pdus, r2->pdus);
	assert_non_null(hako_pdudef_find(def, "Drone-2", "pos"));
	hako_pdudef_free(def);
}

static void test_null_arguments(void **state)
{
	(void)state;
	static hako_pdudef_t stale;
	hako_pdudef_t *def = &stale; /* must be reset to NULL */
	hako_error_t err;
	assert_int_equal(hako_pdudef_load(NULL, &def, &err), HAKO_EINVAL);
	assert_null(def);
	assert_int_equal(hako_pdudef_load("x.json", NULL, &err), HAKO_EINVAL);
	hako_pdudef_free(NULL);

	char path[1100];
	case_path(path, sizeof(path), "ok_legacy_drone");
	assert_int_equal(hako_pdudef_load(path, &def, NULL), 0);
	assert_null(hako_pdudef_robot(NULL, "Drone"));
	assert_null(hako_pdudef_robot(def, NULL));
	assert_null(hako_pdudef_find(NULL, "Drone", "motor"));
	assert_null(hako_pdudef_find(def, NULL, "motor"));
	assert_null(hako_pdudef_find(def, "Drone", NULL));
	assert_null(hako_pdudef_find_channel(NULL, "Drone", 0));
	assert_null(hako_pdudef_find_channel(def, NULL, 0));
	hako_pdudef_free(def);
}

static void test_error_codes(void **state)
{
	(void)state;
	char path[1100];
	hako_pdudef_t *def = NULL;
	hako_error_t err;

	case_path(path, sizeof(path), "err_file_missing");
	assert_int_equal(hako_pdudef_load(path, &def, &err), HAKO_ENOENT);
	assert_null(def);
	assert_string_equal(err.file, path);
	assert_int_equal(err.line, 0);
	/* a NULL error record is allowed */
	assert_int_equal(hako_pdudef_load(path, &def, NULL), HAKO_ENOENT);

	case_path(path, sizeof(path), "err_compact_pdutypes_missing");
	assert_int_equal(hako_pdudef_load(path, &def, &err), HAKO_ENOENT);
	assert_string_equal(err.file, path);
	assert_true(err.line > 0);

	case_path(path, sizeof(path), "err_syntax_trailing_comma_object");
	assert_int_equal(hako_pdudef_load(path, &def, &err), HAKO_ECONFIG);
	assert_true(err.line > 0 && err.column > 0);

	case_path(path, sizeof(path), "err_pdu_size_zero");
	assert_int_equal(hako_pdudef_load(path, &def, &err), HAKO_ECONFIG);
	assert_null(def);
}

static void test_path_too_long(void **state)
{
	(void)state;
	char path[600];
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	hako_pdudef_t *def = NULL;
	hako_error_t err;
	assert_int_equal(hako_pdudef_load(path, &def, &err), HAKO_ENAMETOOLONG);
	assert_null(def);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		cases_dir = argv[1];
	}
	struct test_case *cases;
	size_t count = find_cases(&cases);
	if (count < MIN_CASES) {
		fprintf(stderr, "only %zu cases found in %s\n", count, cases_dir);
		free(cases);
		return 1;
	}
	struct CMUnitTest *tests = calloc(count, sizeof(*tests));
	if (tests == NULL) {
		free(cases);
		return 1;
	}
	for (size_t i = 0; i < count; i++) {
		tests[i].name = cases[i].name;
		tests[i].test_func = run_case;
		tests[i].initial_state = &cases[i];
	}
	int failed = _cmocka_run_group_tests("pdudef_cases", tests, count, NULL, NULL);
	free(tests);
	free(cases);

	const struct CMUnitTest api[] = {
	    cmocka_unit_test(test_lookups),
	    cmocka_unit_test(test_compact_robots_own_their_pdus),
	    cmocka_unit_test(test_null_arguments),
	    cmocka_unit_test(test_error_codes),
	    cmocka_unit_test(test_path_too_long),
	};
	failed += cmocka_run_group_tests_name("pdudef_api", api, NULL, NULL);
	return failed != 0;
}
