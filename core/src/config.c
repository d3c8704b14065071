/* Domain capacities and policies: defaults, environment, core config JSON. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/log.h"
#include "internal.h"
#include "hakoi/cfg.h"

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

static const char *const liveness_names[] = {"error", "remove", NULL};
static const int liveness_values[] = {HAKO_LIVENESS_ERROR, HAKO_LIVENESS_REMOVE};

/* The JSON limits are the environment's (hako_domain_config_from_env). */
static const hakoi_field_t config_fields[] = {
    HAKOI_INT("max_assets", HAKOI_F_UNSIGNED, hako_domain_config_t, max_assets, 1,
              HAKO_MAX_ASSETS_LIMIT),
    HAKOI_INT("max_channels", HAKOI_F_UNSIGNED, hako_domain_config_t, max_channels, 1,
              HAKO_MAX_CHANNELS_LIMIT),
    HAKOI_INT("arena_bytes", HAKOI_F_UNSIGNED, hako_domain_config_t, arena_bytes, 4096,
              HAKO_ARENA_BYTES_LIMIT),
    HAKOI_INT("heartbeat_timeout_usec", 0, hako_domain_config_t, heartbeat_timeout_usec, 0,
              HAKOI_MAX_STEP_USEC),
    HAKOI_ENUM("liveness_policy", 0, hako_domain_config_t, liveness_policy, liveness_names,
               liveness_values),
    HAKOI_END,
};

int hako_domain_config_load(hako_domain_config_t *cfg, const char *path, hako_error_t *err)
{
	hako_error_clear(err);
	if (cfg == NULL || path == NULL) {
		return HAKO_EINVAL;
	}
	json_t *root;
	char *text;
	size_t len;
	int r = hakoi_cfg_load(path, err, &root, &text, &len);
	if (r != 0) {
		return r;
	}
	/* Read into a copy: on an error nothing of the file is applied. */
	hako_domain_config_t next = *cfg;
	hakoi_walk_t w;
	hakoi_walk_init(&w, err, path, text, len, NULL);
	r = hakoi_walk_object(&w, root, config_fields, &next);
	if (r == 0) {
		*cfg = next;
	}
	json_decref(root);
	free(text);
	return r;
}
