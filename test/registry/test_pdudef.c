/* pdudef loader: data-driven cases (cases/<name>/input.json + expected.txt) and the lookup API.
 *
 * expected.txt is either "ok" followed by the loaded robots and PDUs, or the exact error line
 * with file paths written relative to the case folder; then what the loader logged (warnings),
 * one line each without the logger's "hako[<pid>] " prefix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "hako/log.h"
#include "hako/pdudef.h"
#include "hako_cases.h"

#ifndef HAKO_PDUDEF_CASES
#define HAKO_PDUDEF_CASES "cases"
#endif

#define MIN_CASES 20

static const char *cases_dir = HAKO_PDUDEF_CASES;

static void format_def(const hako_pdudef_t *def, char *buf, size_t len)
{
	buf[0] = '\0';
	htc_append(buf, len, "ok\n");
	for (size_t i = 0; i < def->robot_count; i++) {
		const hako_pdudef_robot_t *r = &def->robots[i];
		htc_append(buf, len, "robot %s\n", r->name);
		for (size_t j = 0; j < r->pdu_count; j++) {
			const hako_pdudef_pdu_t *p = &r->pdus[j];
			htc_append(buf, len, "  pdu %s ch=%d size=%u type=%s r=%d w=%d\n", p->name,
			           (int)p->channel_id, (unsigned)p->pdu_size, p->type, p->is_reader,
			           p->is_writer);
		}
	}
}

/* hako_pdudef_load with what the library logged to stderr captured into log. */
static int load_logged(const char *input, hako_pdudef_t **def, hako_error_t *err, char *log,
                       size_t len)
{
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	int rc = hako_pdudef_load(input, def, err);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	size_t n = fread(log, 1, len - 1, tmp);
	log[n] = '\0';
	fclose(tmp);
	return rc;
}

/* Each logged line on a line of its own, without its "hako[<pid>] " prefix. */
static void append_log(char *buf, size_t len, char *log)
{
	for (char *line = strtok(log, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		const char *text = line;
		if (strncmp(line, "hako[", 5) == 0 && strstr(line, "] ") != NULL) {
			text = strstr(line, "] ") + 2;
		}
		size_t n = strlen(buf);
		htc_append(buf, len, "%s%s\n", n > 0 && buf[n - 1] != '\n' ? "\n" : "", text);
	}
}

static void run_case(const char *case_dir, const char *input, char *actual, size_t len, void *arg)
{
	(void)case_dir;
	(void)arg;
	hako_pdudef_t *def = NULL;
	hako_error_t err;
	char log[4096];
	int rc = load_logged(input, &def, &err, log, sizeof(log));
	if (rc == 0) {
		assert_non_null(def);
		assert_string_equal(def->path, input);
		format_def(def, actual, len);
	} else {
		assert_null(def);
		assert_true(rc == HAKO_ECONFIG || rc == HAKO_ENOENT);
		hako_error_format(&err, actual, len);
	}
	append_log(actual, len, log);
	hako_pdudef_free(def);
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
	hako_log_set_level(HAKO_LOG_WARN); /* the cases' expected.txt hold the warnings */
	int failed =
	    htc_run_cases("pdudef_cases", cases_dir, "input.json", MIN_CASES, 0, run_case, NULL);

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
