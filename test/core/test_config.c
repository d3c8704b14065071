/* Domain configuration: defaults, environment overrides and the core config JSON loader. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* A variable that is set but invalid is refused, named, never silently ignored. */
static void test_env_invalid_refused(void **state)
{
	(void)state;
	static const struct {
		const char *var, *value;
	} bad[] = {
	    {"HAKO_MAX_ASSETS", "abc"},         {"HAKO_MAX_ASSETS", "99999"},
	    {"HAKO_MAX_CHANNELS", "0"},         {"HAKO_MAX_CHANNELS", "12x"},
	    {"HAKO_ARENA_BYTES", "12"},         {"HAKO_HEARTBEAT_TIMEOUT_USEC", "-5"},
	    {"HAKO_LIVENESS_POLICY", "remvoe"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv(bad[i].var, bad[i].value, 1);
		hako_domain_config_t cfg = marked(), want = marked();
		hako_error_t err;
		assert_int_equal(hako_domain_config_from_env(&cfg, &err), HAKO_ECONFIG);
		assert_string_equal(err.file, bad[i].var);
		assert_non_null(strstr(err.message, bad[i].value));
		assert_cfg_equal(&cfg, &want);
		assert_int_equal(hako_domain_config_default(&cfg), HAKO_ECONFIG);
		/* ... and a domain is not created with defaults behind the user's back. */
		hako_domain_t *dom = NULL;
		assert_int_equal(hako_domain_create("t-env-invalid-never-created", NULL, &dom),
		                 HAKO_ECONFIG);
		assert_null(dom);
		unsetenv(bad[i].var);
	}
}

/* Config files are regular files of bounded size: a FIFO would block the loader, /dev/zero
 * would fill the memory. */
static void test_load_not_regular(void **state)
{
	struct fx *f = *state;
	hako_domain_config_t cfg = marked();
	hako_error_t err;
	char fifo[600];
	snprintf(fifo, sizeof(fifo), "%s/fifo.json", f->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(hako_domain_config_load(&cfg, fifo, &err), HAKO_EIO);
	assert_non_null(strstr(err.message, "not a regular file"));
	unlink(fifo);
	assert_int_equal(hako_domain_config_load(&cfg, "/dev/zero", &err), HAKO_EIO);
	assert_non_null(strstr(err.message, "not a regular file"));
	assert_int_equal(hako_domain_config_load(&cfg, f->dir, &err), HAKO_EIO);
	assert_non_null(strstr(err.message, "is a directory"));
	/* A sparse file just over the limit costs nothing to make. */
	int fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (64 << 20) + 1), 0);
	close(fd);
	assert_int_equal(hako_domain_config_load(&cfg, f->path, &err), HAKO_EIO);
	assert_non_null(strstr(err.message, "larger than 64 MiB"));
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

/* One duplicate-key policy for every file: a key given twice is refused where it repeats, and
 * an unknown key names the known ones. */
static void test_load_duplicate_key(void **state)
{
	struct fx *f = *state;
	expect_config_error(f, "{\n  \"max_assets\": 4,\n  \"max_assets\": 5\n}\n",
	                    "duplicate object key", 3, 14);
	expect_config_error(f, "{\"liveness\": \"error\"}", "known: max_assets, max_channels", 1,
	                    14);
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
	    T(defaults),          T(env_overrides),      T(env_invalid_refused),
	    T(load_not_regular),  T(load_good),          T(load_partial_overlays),
	    T(load_unknown_key),  T(load_duplicate_key), T(load_wrong_type),
	    T(load_out_of_range), T(load_not_object),    T(load_syntax_error),
	    T(load_empty_file),   T(load_missing_file),  T(load_then_create),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
