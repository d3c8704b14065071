/* Domain configuration: defaults, environment overrides and the core config JSON loader. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako_test_util.h"

static const char *const env_vars[] = {"HAKO_MAX_ASSETS", "HAKO_MAX_CHANNELS", "HAKO_ARENA_BYTES",
                                       "HAKO_HEARTBEAT_TIMEOUT_USEC", "HAKO_LIVENESS_POLICY"};

struct fx {
	char dir[256];
	char path[512];
};

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++) {
		unsetenv(env_vars[i]);
	}
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_non_null(htu_tmpdir(f->dir, sizeof(f->dir)));
	snprintf(f->path, sizeof(f->path), "%s/core.json", f->dir);
	clear_env();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	clear_env();
	htu_remove_tmpdirs();
	free(*state);
	return 0;
}

/* A config with every field set to something no default has. */
static hako_domain_config_t marked(void)
{
	hako_domain_config_t cfg;
	cfg.max_assets = 11;
	cfg.max_channels = 22;
	cfg.arena_bytes = 333 * 4096;
	cfg.heartbeat_timeout_usec = 4444;
	cfg.liveness_policy = HAKO_LIVENESS_REMOVE;
	return cfg;
}

static void assert_cfg_equal(const hako_domain_config_t *a, const hako_domain_config_t *b)
{
	assert_int_equal(a->max_assets, b->max_assets);
	assert_int_equal(a->max_channels, b->max_channels);
	assert_int_equal(a->arena_bytes, b->arena_bytes);
	assert_int_equal(a->heartbeat_timeout_usec, b->heartbeat_timeout_usec);
	assert_int_equal(a->liveness_policy, b->liveness_policy);
}

static void test_defaults(void **state)
{
	(void)state;
	hako_domain_config_t cfg = marked();
	hako_domain_config_default(&cfg);
	assert_int_equal(cfg.max_assets, HAKO_DEFAULT_MAX_ASSETS);
	assert_int_equal(cfg.max_channels, HAKO_DEFAULT_MAX_CHANNELS);
	assert_int_equal(cfg.arena_bytes, HAKO_DEFAULT_ARENA_BYTES);
	assert_int_equal(cfg.heartbeat_timeout_usec, HAKO_DEFAULT_HEARTBEAT_TIMEOUT_USEC);
	assert_int_equal(cfg.liveness_policy, HAKO_LIVENESS_ERROR);
}

static void test_env_overrides(void **state)
{
	(void)state;
	setenv("HAKO_MAX_ASSETS", "7", 1);
	setenv("HAKO_MAX_CHANNELS", "9", 1);
	setenv("HAKO_ARENA_BYTES", "1048576", 1);
	setenv("HAKO_HEARTBEAT_TIMEOUT_USEC", "5000", 1);
	setenv("HAKO_LIVENESS_POLICY", "remove", 1);
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	assert_int_equal(cfg.max_assets, 7);
	assert_int_equal(cfg.max_channels, 9);
	assert_int_equal(cfg.arena_bytes, 1048576);
	assert_int_equal(cfg.heartbeat_timeout_usec, 5000);
	assert_int_equal(cfg.liveness_policy, HAKO_LIVENESS_REMOVE);

	setenv("HAKO_LIVENESS_POLICY", "error", 1);
	setenv("HAKO_HEARTBEAT_TIMEOUT_USEC", "0", 1); /* 0 = pid check only, allowed */
	hako_domain_config_default(&cfg);
	assert_int_equal(cfg.liveness_policy, HAKO_LIVENESS_ERROR);
	assert_int_equal(cfg.heartbeat_timeout_usec, 0);
}

static void test_env_invalid_ignored(void **state)
{
	(void)state;
	setenv("HAKO_MAX_ASSETS", "abc", 1);
	setenv("HAKO_MAX_CHANNELS", "0", 1);
	setenv("HAKO_ARENA_BYTES", "12", 1); /* below one page */
	setenv("HAKO_HEARTBEAT_TIMEOUT_USEC", "-5", 1);
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	assert_int_equal(cfg.max_assets, HAKO_DEFAULT_MAX_ASSETS);
	assert_int_equal(cfg.max_channels, HAKO_DEFAULT_MAX_CHANNELS);
	assert_int_equal(cfg.arena_bytes, HAKO_DEFAULT_ARENA_BYTES);
	assert_int_equal(cfg.heartbeat_timeout_usec, HAKO_DEFAULT_HEARTBEAT_TIMEOUT_USEC);
	setenv("HAKO_MAX_ASSETS", "99999", 1); /* above the limit */
	setenv("HAKO_MAX_CHANNELS", "12x", 1);
	hako_domain_config_default(&cfg);
	assert_int_equal(cfg.max_assets, HAKO_DEFAULT_MAX_ASSETS);
	assert_int_equal(cfg.max_channels, HAKO_DEFAULT_MAX_CHANNELS);
}

static void test_load_good(void **state)
{
	struct fx *f = *state;
	assert_int_equal(htu_write_file(f->path, "{\n"
	                                         "  \"max_assets\": 5,\n"
	                                         "  \"max_channels\": 17,\n"
	                                         "  \"arena_bytes\": 65536,\n"
	                                         "  \"heartbeat_timeout_usec\": 2000000,\n"
	                                         "  \"liveness_policy\": \"remove\"\n"
	                                         "}\n"),
	                 0);
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	hako_error_t err;
	assert_int_equal(hako_domain_config_load(&cfg, f->path, &err), 0);
	assert_int_equal(cfg.max_assets, 5);
	assert_int_equal(cfg.max_channels, 17);
	assert_int_equal(cfg.arena_bytes, 65536);
	assert_int_equal(cfg.heartbeat_timeout_usec, 2000000);
	assert_int_equal(cfg.liveness_policy, HAKO_LIVENESS_REMOVE);
	/* err is cleared on success */
	assert_int_equal(err.line, 0);
	assert_string_equal(err.message, "");
}

static void test_load_partial_overlays(void **state)
{
	struct fx *f = *state;
	assert_int_equal(htu_write_file(f->path, "{\"max_channels\": 3}"), 0);
	hako_domain_config_t cfg = marked(), want = marked();
	want.max_channels = 3;
	assert_int_equal(hako_domain_config_load(&cfg, f->path, NULL), 0);
	assert_cfg_equal(&cfg, &want);

	assert_int_equal(htu_write_file(f->path, "{}"), 0);
	cfg = marked();
	want = marked();
	assert_int_equal(hako_domain_config_load(&cfg, f->path, NULL), 0);
	assert_cfg_equal(&cfg, &want);
}

/* Loads `text`: HAKO_ECONFIG at line:column (the offending value), `needle` in the message,
 * and cfg left unchanged. */
static void expect_config_error(struct fx *f, const char *text, const char *needle, int line,
                                int column)
{
	assert_int_equal(htu_write_file(f->path, text), 0);
	hako_domain_config_t cfg = marked(), want = marked();
	hako_error_t err;
	assert_int_equal(hako_domain_config_load(&cfg, f->path, &err), HAKO_ECONFIG);
	assert_string_equal(err.file, f->path);
	if (strstr(err.message, needle) == NULL) {
		fail_msg("message '%s' does not mention '%s'", err.message, needle);
	}
	if (err.line != line || err.column != column) {
		fail_msg("'%s' reported at %d:%d, expected %d:%d", err.message, err.line,
		         err.column, line, column);
	}
	assert_cfg_equal(&cfg, &want);
	char buf[1200], prefix[600];
	snprintf(prefix, sizeof(prefix), "%s:%d:%d: ", f->path, line, column);
	hako_error_format(&err, buf, sizeof(buf));
	if (strncmp(buf, prefix, strlen(prefix)) != 0) {
		fail_msg("formatted as '%s'", buf);
	}
}

static void test_load_unknown_key(void **state)
{
	expect_config_error(*state, "{\n  \"max_assets\": 4,\n  \"max_asets\": 4\n}\n", "max_asets",
	                    3, 16);
}

static void test_load_wrong_type(void **state)
{
	struct fx *f = *state;
	expect_config_error(f, "{\n  \"max_channels\": 9,\n    \"max_assets\": \"three\"\n}",
	                    "max_assets", 3, 19);
	expect_config_error(f, "{\"arena_bytes\": 1.5}", "arena_bytes", 1, 17);
	expect_config_error(f, "{\n\n\"heartbeat_timeout_usec\": true}", "heartbeat_timeout_usec",
	                    3, 27);
	expect_config_error(f, "{\"liveness_policy\": 1}", "liveness_policy", 1, 21);
}

static void test_load_out_of_range(void **state)
{
	struct fx *f = *state;
	expect_config_error(f, "{\"max_assets\": 0}", "max_assets", 1, 16);
	expect_config_error(f, "{\"max_assets\": 5000}", "max_assets", 1, 16);
	expect_config_error(f, "{\"max_channels\": -1}", "max_channels", 1, 18);
	expect_config_error(f, "{\"arena_bytes\": 100}", "arena_bytes", 1, 17);
	expect_config_error(f, "{\"liveness_policy\": \"ignore\"}", "liveness_policy", 1, 21);
	/* A valid key before the bad one is not applied either (nothing is). */
	expect_config_error(f, "{\"max_channels\": 9,\n \"max_assets\": 0}", "max_assets", 2, 16);
}

static void test_load_not_object(void **state)
{
	expect_config_error(*state, "[1, 2]", "object", 1, 1);
}

static void test_load_syntax_error(void **state)
{
	struct fx *f = *state;
	assert_int_equal(htu_write_file(f->path, "{\n"
	                                         "  \"max_assets\": 3,\n"
	                                         "  oops\n"
	                                         "}\n"),
	                 0);
	hako_domain_config_t cfg = marked(), want = marked();
	hako_error_t err;
	assert_int_equal(hako_domain_config_load(&cfg, f->path, &err), HAKO_ECONFIG);
	assert_string_equal(err.file, f->path);
	assert_int_equal(err.line, 3);
	assert_true(err.column >= 1);
	assert_true(err.message[0] != '\0');
	assert_cfg_equal(&cfg, &want);
	char buf[1200], prefix[600];
	snprintf(prefix, sizeof(prefix), "%s:3:%d: ", f->path, err.column);
	hako_error_format(&err, buf, sizeof(buf));
	assert_true(strncmp(buf, prefix, strlen(prefix)) == 0);
}

static void test_load_empty_file(void **state)
{
	struct fx *f = *state;
	/* Present but empty is a broken file, not a missing one. */
	assert_int_equal(htu_write_file(f->path, ""), 0);
	hako_domain_config_t cfg = marked();
	hako_error_t err;
	assert_int_equal(hako_domain_config_load(&cfg, f->path, &err), HAKO_ECONFIG);
}

static void test_load_missing_file(void **state)
{
	struct fx *f = *state;
	char path[600];
	snprintf(path, sizeof(path), "%s/nope.json", f->dir);
	hako_domain_config_t cfg = marked(), want = marked();
	hako_error_t err;
	assert_int_equal(hako_domain_config_load(&cfg, path, &err), HAKO_ENOENT);
	assert_string_equal(err.file, path);
	assert_cfg_equal(&cfg, &want);
	assert_int_equal(hako_domain_config_load(NULL, path, &err), HAKO_EINVAL);
	assert_int_equal(hako_domain_config_load(&cfg, NULL, &err), HAKO_EINVAL);
}

/* A domain created from a loaded config has those capacities. */
static void test_load_then_create(void **state)
{
	struct fx *f = *state;
	char name[HAKO_NAME_MAX];
	htu_domain_name("load_then_create", name, sizeof(name));
	assert_int_equal(htu_write_file(f->path, "{\"max_assets\": 2, \"max_channels\": 6, "
	                                         "\"arena_bytes\": 8192, "
	                                         "\"liveness_policy\": \"remove\", "
	                                         "\"heartbeat_timeout_usec\": 0}"),
	                 0);
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	assert_int_equal(hako_domain_config_load(&cfg, f->path, NULL), 0);
	hako_domain_t *dom = NULL;
	assert_int_equal(hako_domain_create(name, &cfg, &dom), 0);
	hako_domain_info_t info;
	int r = hako_domain_get_info(dom, &info);
	hako_domain_close(dom);
	htu_remove_domain(name);
	assert_int_equal(r, 0);
	assert_int_equal(info.max_assets, 2);
	assert_int_equal(info.max_channels, 6);
	assert_int_equal(info.arena_bytes, 8192);
	assert_int_equal(info.liveness_policy, HAKO_LIVENESS_REMOVE);
	assert_int_equal(info.heartbeat_timeout_usec, 0);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup, teardown)

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    T(defaults),          T(env_overrides),         T(env_invalid_ignored),
	    T(load_good),         T(load_partial_overlays), T(load_unknown_key),
	    T(load_wrong_type),   T(load_out_of_range),     T(load_not_object),
	    T(load_syntax_error), T(load_empty_file),       T(load_missing_file),
	    T(load_then_create),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
