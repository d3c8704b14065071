/* Shared runner for data-driven loader cases; see hako_cases.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hako_cases.h"

struct htc_case {
	char name[256];
	char dir[PATH_MAX];
};

/* The group being run: cmocka's test functions take only the case. */
static const char *run_input_name;
static htc_case_fn run_fn;
static void *run_arg;

char *htc_read_all(const char *path, size_t *len_out)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		return NULL;
	}
	size_t cap = 4096, used = 0, n;
	char *buf = malloc(cap);
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
	if (len_out != NULL) {
		*len_out = used;
	}
	return buf;
}

void htc_append(char *buf, size_t len, const char *fmt, ...)
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

static void trim_end(char *s)
{
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ')) {
		s[--n] = '\0';
	}
}

/* Replace every occurrence of from in s with to (not longer than from). */
static void replace_all(char *s, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);
	char *hit = s;
	while (fl > 0 && (hit = strstr(hit, from)) != NULL) {
		memmove(hit + tl, hit + fl, strlen(hit + fl) + 1);
		memcpy(hit, to, tl);
		hit += tl;
	}
}

static void run_case(void **state)
{
	const struct htc_case *tc = *state;
	char real[PATH_MAX], prefix[PATH_MAX + 1], input[PATH_MAX + 256],
	    expected_path[PATH_MAX + 16];
	snprintf(expected_path, sizeof(expected_path), "%s/expected.txt", tc->dir);
	char *expected = htc_read_all(expected_path, NULL);
	assert_non_null(expected);
	trim_end(expected);
	assert_non_null(realpath(tc->dir, real));
	snprintf(prefix, sizeof(prefix), "%s/", real);
	snprintf(input, sizeof(input), "%s/%s", real, run_input_name);

	static char actual[65536];
	actual[0] = '\0';
	run_fn(real, input, actual, sizeof(actual), run_arg);
	replace_all(actual, prefix, "");
	replace_all(actual, real, ".");
	trim_end(actual);

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
	return strcmp(((const struct htc_case *)a)->name, ((const struct htc_case *)b)->name);
}

/* The case folders under cases_dir, sorted by name. */
static size_t find_cases(const char *cases_dir, unsigned flags, struct htc_case **out)
{
	DIR *dir = opendir(cases_dir);
	size_t count = 0, cap = 0;
	struct htc_case *cases = NULL;
	struct dirent *de;
	*out = NULL;
	if (dir == NULL) {
		return 0;
	}
	while ((de = readdir(dir)) != NULL) {
		char expected[PATH_MAX + 16];
		struct stat st;
		if (de->d_name[0] == '.') {
			continue;
		}
		if (count == cap) {
			cap = cap > 0 ? cap * 2 : 64;
			struct htc_case *n = realloc(cases, cap * sizeof(*cases));
			if (n == NULL) {
				break;
			}
			cases = n;
		}
		struct htc_case *tc = &cases[count];
		snprintf(tc->name, sizeof(tc->name), "%s", de->d_name);
		snprintf(tc->dir, sizeof(tc->dir), "%s/%s", cases_dir, de->d_name);
		snprintf(expected, sizeof(expected), "%s/expected.txt", tc->dir);
		if ((flags & HTC_EVERY_DIR) == 0 && stat(expected, &st) != 0) {
			continue;
		}
		count++;
	}
	closedir(dir);
	if (count > 0) {
		qsort(cases, count, sizeof(*cases), by_name);
	}
	*out = cases;
	return count;
}

int htc_run_cases(const char *group, const char *cases_dir, const char *input_name,
                  size_t min_cases, unsigned flags, htc_case_fn fn, void *arg)
{
	struct htc_case *cases;
	size_t count = find_cases(cases_dir, flags, &cases);
	if (count < min_cases || count == 0) {
		fprintf(stderr, "only %zu cases found in %s (expected at least %zu)\n", count,
		        cases_dir, min_cases);
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
	run_input_name = input_name;
	run_fn = fn;
	run_arg = arg;
	int failed = _cmocka_run_group_tests(group, tests, count, NULL, NULL);
	free(tests);
	free(cases);
	return failed;
}
