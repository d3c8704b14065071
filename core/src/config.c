/* Domain capacities and policies: defaults, environment, core config JSON. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/log.h"
#include "internal.h"
#include "hakoi/json_pos.h"

/* One variable into *dst; 0, or HAKO_ECONFIG with the variable named in err. */
static int env_u64(const char *name, uint64_t *dst, uint64_t min, uint64_t max, hako_error_t *err)
{
	const char *s = getenv(name);
	if (s == NULL || s[0] == '\0') {
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || s[0] == '-' || v < min || v > max) {
		return hako_error_set(err, HAKO_ECONFIG, name, 0, 0,
		                      "'%.64s' is not an integer in [%llu, %llu]", s,
		                      (unsigned long long)min, (unsigned long long)max);
	}
	*dst = v;
	return 0;
}

void hako_domain_config_init(hako_domain_config_t *cfg)
{
	cfg->max_assets = HAKO_DEFAULT_MAX_ASSETS;
	cfg->max_channels = HAKO_DEFAULT_MAX_CHANNELS;
	cfg->arena_bytes = HAKO_DEFAULT_ARENA_BYTES;
	cfg->heartbeat_timeout_usec = HAKO_DEFAULT_HEARTBEAT_TIMEOUT_USEC;
	cfg->liveness_policy = HAKO_LIVENESS_ERROR;
}

int hako_domain_config_from_env(hako_domain_config_t *cfg, hako_error_t *err)
{
	uint64_t assets = cfg->max_assets, channels = cfg->max_channels;
	uint64_t arena = cfg->arena_bytes, hb = (uint64_t)cfg->heartbeat_timeout_usec;
	int r;
	hako_error_clear(err);
	if ((r = env_u64("HAKO_MAX_ASSETS", &assets, 1, HAKO_MAX_ASSETS_LIMIT, err)) != 0 ||
	    (r = env_u64("HAKO_MAX_CHANNELS", &channels, 1, HAKO_MAX_CHANNELS_LIMIT, err)) != 0 ||
	    (r = env_u64("HAKO_ARENA_BYTES", &arena, 4096, HAKO_ARENA_BYTES_LIMIT, err)) != 0 ||
	    (r = env_u64("HAKO_HEARTBEAT_TIMEOUT_USEC", &hb, 0, HAKOI_MAX_STEP_USEC, err)) != 0) {
		return r;
	}
	const char *p = getenv("HAKO_LIVENESS_POLICY");
	if (p != NULL && p[0] != '\0') {
		if (strcmp(p, "remove") == 0) {
			cfg->liveness_policy = HAKO_LIVENESS_REMOVE;
		} else if (strcmp(p, "error") == 0) {
			cfg->liveness_policy = HAKO_LIVENESS_ERROR;
		} else {
			return hako_error_set(err, HAKO_ECONFIG, "HAKO_LIVENESS_POLICY", 0, 0,
			                      "'%.64s' is not \"error\" or \"remove\"", p);
		}
	}
	cfg->max_assets = (uint32_t)assets;
	cfg->max_channels = (uint32_t)channels;
	cfg->arena_bytes = arena;
	cfg->heartbeat_timeout_usec = (hako_time_t)hb;
	return 0;
}

int hako_domain_config_default(hako_domain_config_t *cfg)
{
	hako_error_t err;
	char msg[600];
	hako_domain_config_init(cfg);
	int r = hako_domain_config_from_env(cfg, &err);
	if (r != 0) {
		HAKO_ERROR("%s", hako_error_format(&err, msg, sizeof(msg)));
	}
	return r;
}

/* Report key's value (or the top level object) at its line and column. */
static int fail_at(hako_error_t *err, const char *path, const char *text, size_t len,
                   const char *key, const char *fmt, const char *detail)
{
	hakoi_json_seg_t seg = {.key = key};
	int line = 1, column = 1;
	if (key != NULL) {
		hakoi_json_pos(text, len, &seg, 1, &line, &column);
	}
	return hako_error_set(err, HAKO_ECONFIG, path, line, column, fmt, key ? key : "", detail);
}

static int get_uint(json_t *root, const char *key, uint64_t min, uint64_t max, uint64_t *dst,
                    const char *path, const char *text, size_t len, hako_error_t *err)
{
	json_t *v = json_object_get(root, key);
	if (v == NULL) {
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) < min || (uint64_t)json_integer_value(v) > max) {
		char range[96];
		snprintf(range, sizeof(range), "[%llu, %llu]", (unsigned long long)min,
		         (unsigned long long)max);
		return fail_at(err, path, text, len, key, "%s: must be an integer in %s", range);
	}
	*dst = (uint64_t)json_integer_value(v);
	return 0;
}

int hako_domain_config_load(hako_domain_config_t *cfg, const char *path, hako_error_t *err)
{
	static const char *const known[] = {"max_assets", "max_channels", "arena_bytes",
	                                    "heartbeat_timeout_usec", "liveness_policy"};
	json_error_t je;
	char *text = NULL;
	size_t len = 0;
	hako_error_clear(err);
	if (cfg == NULL || path == NULL) {
		return HAKO_EINVAL;
	}
	int e = hakoi_read_file(path, &text, &len);
	if (e != 0) {
		return hako_error_set(err, e == ENOENT ? HAKO_ENOENT : HAKO_EIO, path, 0, 0,
		                      "cannot read: %s", hakoi_read_file_strerror(e));
	}
	json_t *root = json_loadb(text, len, 0, &je);
	if (root == NULL) {
		free(text);
		return hako_error_set(err, HAKO_ECONFIG, path, je.line > 0 ? je.line : 0,
		                      je.line > 0 ? je.column : 0, "invalid JSON: %s", je.text);
	}
	int r = 0;
	if (!json_is_object(root)) {
		r = fail_at(err, path, text, len, NULL, "%stop level: must be an object%s", "");
		goto out;
	}
	const char *key;
	json_t *val;
	json_object_foreach(root, key, val)
	{
		size_t i = 0;
		while (i < sizeof(known) / sizeof(known[0]) && strcmp(known[i], key) != 0) {
			i++;
		}
		if (i == sizeof(known) / sizeof(known[0])) {
			r = fail_at(err, path, text, len, key, "%s: unknown key%s", "");
			goto out;
		}
	}
	uint64_t assets = cfg->max_assets, channels = cfg->max_channels, arena = cfg->arena_bytes;
	uint64_t hb = (uint64_t)cfg->heartbeat_timeout_usec;
	if ((r = get_uint(root, "max_assets", 1, 4096, &assets, path, text, len, err)) != 0 ||
	    (r = get_uint(root, "max_channels", 1, 1u << 24, &channels, path, text, len, err)) !=
	        0 ||
	    (r = get_uint(root, "arena_bytes", 4096, 1ull << 40, &arena, path, text, len, err)) !=
	        0 ||
	    (r = get_uint(root, "heartbeat_timeout_usec", 0, 1ull << 40, &hb, path, text, len,
	                  err)) != 0) {
		goto out;
	}
	json_t *pol = json_object_get(root, "liveness_policy");
	if (pol != NULL) {
		const char *s = json_string_value(pol);
		if (s != NULL && strcmp(s, "error") == 0) {
			cfg->liveness_policy = HAKO_LIVENESS_ERROR;
		} else if (s != NULL && strcmp(s, "remove") == 0) {
			cfg->liveness_policy = HAKO_LIVENESS_REMOVE;
		} else {
			r = fail_at(err, path, text, len, "liveness_policy",
			            "%s: must be \"error\" or \"remove\"%s", "");
			goto out;
		}
	}
	cfg->max_assets = (uint32_t)assets;
	cfg->max_channels = (uint32_t)channels;
	cfg->arena_bytes = arena;
	cfg->heartbeat_timeout_usec = (hako_time_t)hb;
out:
	json_decref(root);
	free(text);
	return r;
}
