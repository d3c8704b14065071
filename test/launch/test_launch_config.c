/* hako-launch's loader: data-driven cases (cases/<name>/launch.json + expected.txt).
 *
 * expected.txt is either "ok" followed by the dump of the loaded config, or the exact error
 * line. Each case is loaded from inside its folder, so file names read "launch.json:3:5: ...";
 * absolute paths in a dump are written relative to the case folder ("." for the folder).
 *
 * The environment is fixed for every case: PATH=/nonexistent-launch-path (so that commands come
 * from the case's own folders), LAUNCH_TEST_VAR=value, LAUNCH_TEST_EMPTY="", LAUNCH_TEST_UNSET
 * and HAKO_DOMAIN unset; the default domain is "launch-test".
 */
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
#include <unistd.h>

#include "launch_config.h"

#define MIN_CASES 20

static const char *cases_dir = "cases";

struct test_case {
	char name[256];
	char dir[PATH_MAX];
};

static char *read_all(const char *path)
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
	return buf;
}

static void trim_end(char *s)
{
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ')) {
		s[--n] = '\0';
	}
}

/* Replace every occurrence of from in s (of capacity cap) with to (not longer than from). */
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
	const struct test_case *tc = *state;
	char expected_path[PATH_MAX + 16], real[PATH_MAX], prefix[PATH_MAX + 1], old[PATH_MAX];
	snprintf(expected_path, sizeof(expected_path), "%s/expected.txt", tc->dir);
	char *expected = read_all(expected_path);
	assert_non_null(expected);
	trim_end(expected);
	assert_non_null(realpath(tc->dir, real));
	snprintf(prefix, sizeof(prefix), "%s/", real);
	assert_non_null(getcwd(old, sizeof(old)));
	assert_int_equal(chdir(real), 0);

	setenv("PATH", "/nonexistent-launch-path", 1);
	setenv("LAUNCH_TEST_VAR", "value", 1);
	setenv("LAUNCH_TEST_EMPTY", "", 1);
	unsetenv("LAUNCH_TEST_UNSET");
	unsetenv("HAKO_DOMAIN");
	unsetenv("HAKO_CORE_CONFIG");
	const char *search[] = {"search"};
	struct stat st;
	hakoi_launch_options_t opt = {"launch-test", search,
	                              stat("search", &st) == 0 && S_ISDIR(st.st_mode) ? 1u : 0u};

	char *actual = NULL;
	size_t actual_len = 0;
	FILE *out = open_memstream(&actual, &actual_len);
	assert_non_null(out);
	hakoi_launch_config_t *cfg = NULL;
	hako_error_t err;
	int rc = hakoi_launch_load("launch.json", &opt, &cfg, &err);
	if (rc == 0) {
		assert_non_null(cfg);
		fprintf(out, "ok\n");
		hakoi_launch_dump(cfg, out);
	} else {
		char msg[2048];
		assert_null(cfg);
		assert_int_equal(rc, HAKO_ECONFIG);
		fprintf(out, "%s\n", hako_error_format(&err, msg, sizeof(msg)));
	}
	fclose(out);
	hakoi_launch_free(cfg);
	assert_int_equal(chdir(old), 0);
	replace_all(actual, prefix, "");
	replace_all(actual, real, ".");
	trim_end(actual);

	int same = strcmp(expected, actual) == 0;
	if (!same) {
		print_error("case %s\n--- expected\n%s\n--- actual\n%s\n", tc->name, expected,
		            actual);
	}
	free(expected);
	free(actual);
	assert_true(same);
}

/* A missing file is HAKO_ENOENT with the file named. */
static void missing_file(void **state)
{
	(void)state;
	hakoi_launch_config_t *cfg = NULL;
	hako_error_t err;
	char msg[1200];
	assert_int_equal(hakoi_launch_load("/nonexistent/launch.json", NULL, &cfg, &err),
	                 HAKO_ENOENT);
	assert_null(cfg);
	assert_string_equal(hako_error_format(&err, msg, sizeof(msg)),
	                    "/nonexistent/launch.json: cannot read: No such file or directory");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct test_case *)a)->name, ((const struct test_case *)b)->name);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		cases_dir = argv[1];
	}
	DIR *d = opendir(cases_dir);
	if (d == NULL) {
		fprintf(stderr, "cannot open %s\n", cases_dir);
		return 1;
	}
	size_t cap = 64, n = 0;
	struct test_case *cases = calloc(cap, sizeof(*cases));
	struct dirent *e;
	while (cases != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.') {
			continue;
		}
		if (n == cap) {
			cap *= 2;
			struct test_case *nc = realloc(cases, cap * sizeof(*cases));
			if (nc == NULL) {
				break;
			}
			cases = nc;
		}
		snprintf(cases[n].name, sizeof(cases[n].name), "%s", e->d_name);
		snprintf(cases[n].dir, sizeof(cases[n].dir), "%s/%s", cases_dir, e->d_name);
		n++;
	}
	closedir(d);
	if (cases == NULL || n < MIN_CASES) {
		fprintf(stderr, "only %zu cases in %s (expected at least %d)\n", n, cases_dir,
		        MIN_CASES);
		free(cases);
		return 1;
	}
	qsort(cases, n, sizeof(*cases), by_name);
	struct CMUnitTest *tests = calloc(n + 1, sizeof(*tests));
	if (tests == NULL) {
		free(cases);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		tests[i] = (struct CMUnitTest){cases[i].name, run_case, NULL, NULL, &cases[i]};
	}
	tests[n] = (struct CMUnitTest){"missing_file", missing_file, NULL, NULL, NULL};
	int rc = _cmocka_run_group_tests("launch_config", tests, n + 1, NULL, NULL);
	free(tests);
	free(cases);
	return rc;
}
