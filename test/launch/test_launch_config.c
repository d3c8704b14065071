/* hako-launch's loader: data-driven cases (cases/<name>/launch.json + expected.txt).
 *
 * expected.txt is either "ok" followed by the dump of the loaded config, or the exact error
 * line. Each case is loaded from inside its folder, so file names read "launch.json:3:5: ...";
 * absolute paths in a dump are written relative to the case folder ("." for the folder).
 *
 * The environment is fixed for every case: PATH=/nonexistent-launch-path (so that commands come
 * from the folders the cases name: most run the stub ../../fixtures/tool, see hako_cases.h),
 * LAUNCH_TEST_VAR=value, LAUNCH_TEST_EMPTY="", LAUNCH_TEST_UNSET and HAKO_DOMAIN unset; the
 * default domain is "launch-test".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hako_cases.h"
#include "launch_config.h"

#define MIN_CASES 20

static const char *cases_dir = "cases";

static void run_case(const char *case_dir, const char *input, char *actual, size_t len, void *arg)
{
	(void)input;
	(void)arg;
	char old[PATH_MAX];
	assert_non_null(getcwd(old, sizeof(old)));
	assert_int_equal(chdir(case_dir), 0);

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

	FILE *out = fmemopen(actual, len, "w");
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
		/* HAKO_ENOENT: a file the launch file names is missing */
		assert_true(rc == HAKO_ECONFIG || rc == HAKO_ENOENT);
		fprintf(out, "%s\n", hako_error_format(&err, msg, sizeof(msg)));
	}
	fclose(out);
	hakoi_launch_free(cfg);
	assert_int_equal(chdir(old), 0);
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
	                    "/nonexistent/launch.json: cannot open: No such file or directory");
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		cases_dir = argv[1];
	}
	int rc = htc_run_cases("launch_config", cases_dir, "launch.json", MIN_CASES, HTC_EVERY_DIR,
	                       run_case, NULL);
	const struct CMUnitTest api[] = {
	    cmocka_unit_test(missing_file),
	};
	rc += cmocka_run_group_tests_name("launch_config_api", api, NULL, NULL);
	return rc;
}
