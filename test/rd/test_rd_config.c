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

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hako/rd.h"
#include "rd_internal.h"

#define MIN_CASES 20

static const char *cases_dir = "cases";

struct test_case {
	char name[256];
	char dir[1024];
};

static char *read_all(const char *path, size_t *len_out)
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

static void append_ref(char *buf, size_t len, const char *what, const hako_rd_pdu_ref_t *r)
{
	append(buf, len, "    %s %s/%s ch=%" PRId32 " size=%" PRIu32 " type=%s\n", what, r->robot,
	       r->name, r->channel_id, r->pdu_size, r->type);
}

/* What a loaded config holds, one fact per line (paths and the hash are left out: the hash is
 * tested on its own). */
static void format_config(const hako_rd_config_t *cfg, char *buf, size_t len)
{
	buf[0] = '\0';
	append(buf, len, "ok\n");
	for (size_t i = 0; i < cfg->node_count; i++) {
		append(buf, len, "node %u %s\n", cfg->node_ids[i], cfg->node_names[i]);
	}
	append(buf, len, "handoff_timeout_usec %" PRId64 "\n", (int64_t)cfg->handoff_timeout_usec);
	const hako_rd_trigger_t *t = &cfg->trigger;
	if (strcmp(t->type, "boundary") == 0) {
		append(
		    buf, len,
		    "trigger boundary axis=%s boundary=%g v_max=%g hysteresis=%g cooldown=%" PRId64
		    " low=%u high=%u\n",
		    t->axis, t->boundary, t->v_max, t->hysteresis, (int64_t)t->cooldown_usec,
		    t->low_owner, t->high_owner);
	} else {
		append(buf, len, "trigger %s\n", t->type);
	}
	for (size_t i = 0; i < cfg->eu_count; i++) {
		const hako_rd_eu_config_t *eu = &cfg->eus[i];
		append(buf, len, "eu %" PRIu32 " %s robot=%s initial=%u max_context=%" PRIu32 "\n",
		       eu->id, eu->name, eu->robot, eu->initial_owner, eu->max_context_bytes);
		append(buf, len, "    candidates");
		for (size_t j = 0; j < eu->candidate_count; j++) {
			append(buf, len, " %u", eu->candidates[j]);
		}
		append(buf, len, "\n");
		append_ref(buf, len, "status", &eu->status);
		append_ref(buf, len, "context", &eu->context);
		for (size_t j = 0; j < eu->write_count; j++) {
			append_ref(buf, len, "writes", &eu->writes[j]);
		}
	}
}

static void run_case(void **state)
{
	const struct test_case *tc = *state;
	char input[1100], expected_path[1100], prefix[1100];
	snprintf(input, sizeof(input), "%s/rd.json", tc->dir);
	snprintf(expected_path, sizeof(expected_path), "%s/expected.txt", tc->dir);
	snprintf(prefix, sizeof(prefix), "%s/", tc->dir);

	char *expected = read_all(expected_path, NULL);
	assert_non_null(expected);
	trim_end(expected);

	static char actual[65536];
	hako_rd_config_t *cfg = NULL;
	hako_error_t err;
	int rc = hako_rd_config_load(input, &cfg, &err);
	if (rc == 0) {
		assert_non_null(cfg);
		assert_string_equal(cfg->path, input);
		format_config(cfg, actual, sizeof(actual));
	} else {
		assert_null(cfg);
		assert_true(rc == HAKO_ECONFIG || rc == HAKO_ENOENT);
		hako_error_format(&err, actual, sizeof(actual));
		strip_all(actual, prefix);
	}
	trim_end(actual);
	hako_rd_config_free(cfg);

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

static size_t find_cases(struct test_case **out)
{
	DIR *dir = opendir(cases_dir);
	size_t count = 0, cap = 0;
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
			struct test_case *n = realloc(cases, cap * sizeof(*cases));
			if (n == NULL) {
				break;
			}
			cases = n;
		}
		cases[count++] = tc;
	}
	closedir(dir);
	qsort(cases, count, sizeof(*cases), by_name);
	*out = cases;
	return count;
}

/* config_hash is FNV-1a 32 of the file's bytes; any edit changes it. */
static void test_config_hash(void **state)
{
	(void)state;
	char path[1100];
	size_t len;
	snprintf(path, sizeof(path), "%s/ok_forklift/rd.json", cases_dir);
	char *text = read_all(path, &len);
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
	int failed = _cmocka_run_group_tests("rd_config_cases", tests, count, NULL, NULL);
	free(tests);
	free(cases);
	const struct CMUnitTest api[] = {
	    cmocka_unit_test(test_config_hash),
	    cmocka_unit_test(test_errors),
	};
	failed += cmocka_run_group_tests(api, NULL, NULL);
	return failed;
}
