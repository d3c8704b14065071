/* RD config loader: data-driven cases (cases/<name>/rd.json, the pdudef files it names, and
 * expected.txt) and the API around it.
 *
 * expected.txt is either "ok" followed by what was loaded, or the exact error line with file
 * paths written relative to the case folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/rd.h"
#include "rd_internal.h"
#include "hako_cases.h"

#define MIN_CASES 20

static const char *cases_dir = "cases";

static void append_ref(char *buf, size_t len, const char *what, const hako_rd_pdu_ref_t *r)
{
	htc_append(buf, len, "    %s %s/%s ch=%" PRId32 " size=%" PRIu32 " type=%s\n", what,
	           r->robot, r->name, r->channel_id, r->pdu_size, r->type);
}

/* What a loaded config holds, one fact per line (paths and the hash are left out: the hash is
 * tested on its own). */
static void format_config(const hako_rd_config_t *cfg, char *buf, size_t len)
{
	buf[0] = '\0';
	htc_append(buf, len, "ok\n");
	for (size_t i = 0; i < cfg->node_count; i++) {
		htc_append(buf, len, "node %u %s\n", cfg->node_ids[i], cfg->node_names[i]);
	}
	htc_append(buf, len, "handoff_timeout_usec %" PRId64 "\n",
	           (int64_t)cfg->handoff_timeout_usec);
	const hako_rd_trigger_t *t = &cfg->trigger;
	if (strcmp(t->type, "boundary") == 0) {
		htc_append(
		    buf, len,
		    "trigger boundary axis=%s boundary=%g v_max=%g hysteresis=%g cooldown=%" PRId64
		    " low=%u high=%u\n",
		    t->axis, t->boundary, t->v_max, t->hysteresis, (int64_t)t->cooldown_usec,
		    t->low_owner, t->high_owner);
	} else if (strcmp(t->type, "grid") == 0) {
		htc_append(buf, len, "trigger grid v_max=%g hysteresis=%g cooldown=%" PRId64 "\n",
		           t->v_max, t->hysteresis, (int64_t)t->cooldown_usec);
		htc_append(buf, len, "    x");
		for (size_t i = 0; i < t->grid_nx; i++) {
			htc_append(buf, len, " %g", t->grid_x[i]);
		}
		htc_append(buf, len, "\n    y");
		for (size_t i = 0; i < t->grid_ny; i++) {
			htc_append(buf, len, " %g", t->grid_y[i]);
		}
		htc_append(buf, len, "\n");
		for (size_t j = 0; j <= t->grid_ny; j++) {
			htc_append(buf, len, "    owners[%zu]", j);
			for (size_t i = 0; i <= t->grid_nx; i++) {
				htc_append(buf, len, " %u", t->grid_owner[j][i]);
			}
			htc_append(buf, len, "\n");
		}
	} else {
		htc_append(buf, len, "trigger %s\n", t->type);
	}
	for (size_t i = 0; i < cfg->eu_count; i++) {
		const hako_rd_eu_config_t *eu = &cfg->eus[i];
		htc_append(buf, len,
		           "eu %" PRIu32 " %s robot=%s initial=%u max_context=%" PRIu32 "\n",
		           eu->id, eu->name, eu->robot, eu->initial_owner, eu->max_context_bytes);
		htc_append(buf, len, "    candidates");
		for (size_t j = 0; j < eu->candidate_count; j++) {
			htc_append(buf, len, " %u", eu->candidates[j]);
		}
		htc_append(buf, len, "\n");
		append_ref(buf, len, "status", &eu->status);
		append_ref(buf, len, "context", &eu->context);
		for (size_t j = 0; j < eu->write_count; j++) {
			append_ref(buf, len, "writes", &eu->writes[j]);
		}
	}
}

static void run_case(const char *case_dir, const char *input, char *actual, size_t len, void *arg)
{
	(void)case_dir;
	(void)arg;
	hako_rd_config_t *cfg = NULL;
	hako_error_t err;
	int rc = hako_rd_config_load(input, &cfg, &err);
	if (rc == 0) {
		assert_non_null(cfg);
		assert_string_equal(cfg->path, input);
		format_config(cfg, actual, len);
	} else {
		assert_null(cfg);
		assert_true(rc == HAKO_ECONFIG || rc == HAKO_ENOENT);
		hako_error_format(&err, actual, len);
	}
	hako_rd_config_free(cfg);
}

/* config_hash is FNV-1a 32 of the file's bytes; any edit changes it. */
static void test_config_hash(void **state)
{
	(void)state;
	char path[1100];
	size_t len;
	snprintf(path, sizeof(path), "%s/ok_forklift/rd.json", cases_dir);
	char *text = htc_read_all(path, &len);
	assert_non_null(text);
	hako_rd_config_t *cfg;
	assert_int_equal(hako_rd_config_load(path, &cfg, NULL), 0);
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++) {
		h = (h ^ (uint8_t)text[i]) * 16777619u;
	}
	assert_int_equal(cfg->config_hash, h);
	assert_int_equal(hakoi_rd_fnv1a("a", 1), 0xe40c292cu); /* published test vector */
	assert_ptr_equal(hako_rd_config_eu(cfg, "forklift"), &cfg->eus[0]);
	assert_null(hako_rd_config_eu(cfg, "nope"));
	assert_null(hako_rd_config_eu(NULL, "forklift"));
	hako_rd_config_free(cfg);
	free(text);
}

/* The EU table is sized to the file: 300 EUs (more than the 64 of old) load. */
static void test_many_eus(void **state)
{
	(void)state;
	enum { N = 300 };
	char dir[] = "/tmp/test-rd-many-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/types.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("[{\"channel_id\": 1, \"pdu_size\": 72, \"name\": \"pos\", "
	      "\"type\": \"geometry_msgs/Twist\"},\n"
	      " {\"channel_id\": 4, \"pdu_size\": 256, \"name\": \"st\", "
	      "\"type\": \"hako_msgs/ExecutionUnitRuntimeStatus\"},\n"
	      " {\"channel_id\": 5, \"pdu_size\": 128, \"name\": \"cx\", "
	      "\"type\": \"hako_msgs/ExecutionUnitRuntimeContext\"}]\n",
	      f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/pdudef.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"paths\": [{\"id\": \"t\", \"path\": \"types.json\"}], \"robots\": [", f);
	for (int i = 0; i < N; i++) {
		fprintf(f, "%s{\"name\": \"r%d\", \"pdutypes_id\": \"t\"}", i ? ", " : "", i);
	}
	fputs("]}\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/rd.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"pdudef\": \"pdudef.json\", \"nodes\": [{\"id\": 1, \"name\": \"a\"}, "
	      "{\"id\": 2, \"name\": \"b\"}],\n \"execution_units\": [",
	      f);
	for (int i = 0; i < N; i++) {
		fprintf(f,
		        "%s{\"id\": %d, \"name\": \"eu%d\", \"robot\": \"r%d\", \"writes\": "
		        "[\"pos\"], \"candidates\": [1, 2], \"initial_owner\": %d, "
		        "\"max_context_bytes\": 64, \"status\": \"st\", \"context\": \"cx\"}",
		        i ? ",\n  " : "", i, i, i, 1 + i % 2);
	}
	fputs("]}\n", f);
	fclose(f);
	hako_rd_config_t *cfg = NULL;
	hako_error_t err;
	int r = hako_rd_config_load(path, &cfg, &err);
	if (r != 0) {
		char buf[1200];
		fail_msg("%s", hako_error_format(&err, buf, sizeof(buf)));
	}
	assert_int_equal(cfg->eu_count, N);
	assert_string_equal(cfg->eus[N - 1].name, "eu299");
	assert_int_equal(cfg->eus[N - 1].initial_owner, 2);
	assert_ptr_equal(hako_rd_config_eu(cfg, "eu150"), &cfg->eus[150]);
	hako_rd_config_free(cfg);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_errors(void **state)
{
	(void)state;
	hako_rd_config_t *cfg = (hako_rd_config_t *)&cfg; /* must be reset to NULL */
	hako_error_t err;
	assert_int_equal(hako_rd_config_load("/nonexistent/rd.json", &cfg, &err), HAKO_ENOENT);
	assert_null(cfg);
	assert_string_equal(err.file, "/nonexistent/rd.json");
	assert_int_equal(hako_rd_config_load(NULL, &cfg, &err), HAKO_EINVAL);
	assert_int_equal(hako_rd_config_load("x", NULL, &err), HAKO_EINVAL);
	char path[1100];
	snprintf(path, sizeof(path), "%s/err_pdudef_missing/rd.json", cases_dir);
	assert_int_equal(hako_rd_config_load(path, &cfg, &err), HAKO_ENOENT);
	assert_true(err.line > 0);
	snprintf(path, sizeof(path), "%s/err_node_id_zero/rd.json", cases_dir);
	assert_int_equal(hako_rd_config_load(path, &cfg, NULL), HAKO_ECONFIG);
	hako_rd_config_free(NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		cases_dir = argv[1];
	}
	int failed =
	    htc_run_cases("rd_config_cases", cases_dir, "rd.json", MIN_CASES, 0, run_case, NULL);
	const struct CMUnitTest api[] = {
	    cmocka_unit_test(test_config_hash),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_many_eus),
	};
	failed += cmocka_run_group_tests(api, NULL, NULL);
	return failed;
}
