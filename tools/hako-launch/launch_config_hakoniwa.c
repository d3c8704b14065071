/* Hakoniwa's launcher file (launch_config.c has the loader): its assets as processes, its
 * defaults, depends_on as the start order, notify checked. Its env operations are in
 * launch_config_hakoniwa_env.c. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch_config_internal.h"

/* ---- Hakoniwa's launcher format ----
 *
 * hakoniwa-core-pro's launcher file: {version, defaults {cwd, stdout, stderr, env,
 * start_grace_sec, delay_sec}, assets [{name, command, args, cwd, env, stdout, stderr,
 * delay_sec, depends_on, start_grace_sec}], notify}. Each asset becomes a process of phase run,
 * started in depends_on order (the file's order otherwise), each followed by its delay_sec;
 * env is Hakoniwa's {set, prepend, append, unset} ("lib_path" is the library search path,
 * LD_LIBRARY_PATH here), the defaults' first. What hako-launch does its own way is accepted
 * and said once at load: stdout / stderr (the output goes to <log_dir>/<name>.log and is
 * echoed), start_grace_sec (no use yet upstream either), notify (not run). hako-launch is the
 * conductor: delta and Dmax are its defaults (1 ms). */

static int hk_seconds(hakoi_walk_t *w, json_t *v, long long *ms)
{
	if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 86400) {
		return hakoi_walk_fail_must(w, "a number of seconds in [0, 86400]");
	}
	*ms = (long long)(json_number_value(v) * 1000.0 + 0.5);
	return 0;
}

static int hk_delay(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hk_seconds(w, v, &((hakoi_launch_proc_t *)base)->delay_ms);
}

static int hk_grace(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	long long ms;
	return hk_seconds(w, v, &ms);
}

/* A relative command with a '/' is found from the asset's folder, as Hakoniwa's launcher
 * runs it there; a bare name on the search path, as hako's. */
static int hk_command(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hakoi_launch_proc_t *p = base;
	int r = hakoi_launch_parse_expanded(w, v, base, f);
	if (r != 0) {
		return r;
	}
	if (p->cwd == NULL || p->command[0] == '/' || strchr(p->command, '/') == NULL) {
		return hakoi_launch_resolve_command(w, p->name, p->command, &p->exe);
	}
	char *exe = hakoi_launch_join(p->cwd, p->command);
	if (exe == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	if (!hakoi_launch_is_exe(exe)) {
		r = hakoi_walk_fail(w, "asset \"%s\": %s %s", p->name, exe,
		                    access(exe, F_OK) != 0 ? "does not exist"
		                                           : "is not an executable file");
		free(exe);
		return r;
	}
	p->exe = exe;
	return 0;
}

static int hk_depends_on(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of asset names");
	}
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item)
	{
		if (!json_is_string(item)) {
			hakoi_walk_push_index(w, i);
			return hakoi_walk_fail_must(w, "an asset name");
		}
	}
	return 0; /* checked against the names, and ordered, once all assets are read */
}

/* The defaults' members an asset does not give: cwd and env here (env ops of the defaults
 * first), delay_sec in hk_asset. */
static int hk_apply_defaults(hakoi_walk_t *w, hakoi_launch_proc_t *p, json_t *asset)
{
	json_t *d = ctx_of(w)->hk_defaults;
	if (d == NULL) {
		return 0;
	}
	size_t depth = w->j.depth;
	w->j.depth = 0;
	hakoi_walk_push_key(w, "defaults");
	int r = 0;
	json_t *v;
	if (json_object_get(asset, "cwd") == NULL && (v = json_object_get(d, "cwd")) != NULL) {
		hakoi_walk_push_key(w, "cwd");
		r = hakoi_launch_parse_folder(w, v, &p->cwd);
		hakoi_walk_pop(w);
	}
	if (r == 0 && (v = json_object_get(d, "env")) != NULL) {
		hakoi_walk_push_key(w, "env");
		r = hakoi_launch_hk_env(w, v, p, NULL);
		hakoi_walk_pop(w);
	}
	if (r == 0 && json_object_get(asset, "delay_sec") == NULL &&
	    (v = json_object_get(d, "delay_sec")) != NULL) {
		hakoi_walk_push_key(w, "delay_sec");
		r = hk_seconds(w, v, &p->delay_ms);
		hakoi_walk_pop(w);
	}
	if (r == 0) {
		w->j.depth = depth;
	}
	return r;
}

static const hakoi_field_t hk_asset_fields[] = {
    {.key = "name",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hakoi_launch_proc_t, name),
     .check = hakoi_launch_check_proc_name},
    HAKOI_IGNORE("cwd"), /* read first, by hk_asset: a relative command is found from it */
    {.key = "command",
     .kind = HAKOI_K_CUSTOM,
     .flags = HAKOI_F_REQUIRED,
     .offset = offsetof(hakoi_launch_proc_t, command),
     .parse = hk_command,
     .expect = "a string"},
    {.key = "args",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hakoi_launch_proc_t, args, arg_count),
     .elem = &hakoi_launch_arg_elem,
     .expect = "an array of strings"},
    HAKOI_CUSTOM("env", 0, hakoi_launch_hk_env, "an object {set, prepend, append, unset}"),
    HAKOI_IGNORE("stdout"),
    HAKOI_IGNORE("stderr"),
    HAKOI_CUSTOM("delay_sec", 0, hk_delay, "a number of seconds"),
    HAKOI_CUSTOM("start_grace_sec", 0, hk_grace, "a number of seconds"),
    HAKOI_CUSTOM("depends_on", 0, hk_depends_on, "an array of asset names"),
    HAKOI_CHECK(hakoi_launch_check_process),
    HAKOI_END,
};

static int hk_asset(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_launch_proc_t *p = base;
	p->echo = 1;
	p->timeout_ms = HAKOI_LAUNCH_DEFAULT_TIMEOUT;
	p->max_restarts = HAKOI_LAUNCH_DEFAULT_RESTART;
	if (!json_is_object(v)) {
		return hakoi_walk_fail_must(w, "an object {name, command, ...}");
	}
	/* cwd before command (a relative command is found from it), defaults before env. */
	json_t *cwd = json_object_get(v, "cwd");
	if (cwd != NULL) {
		hakoi_walk_push_key(w, "cwd");
		int r = hakoi_launch_parse_folder(w, cwd, &p->cwd);
		if (r != 0) {
			return r;
		}
		hakoi_walk_pop(w);
	}
	int r = hk_apply_defaults(w, p, v);
	return r != 0 ? r : hakoi_walk_object(w, v, hk_asset_fields, p);
}

/* notify: checked, not run. */
static const char *const hk_notify_types[] = {"exec", "webhook", NULL};
static const hakoi_field_t hk_notify_fields[] = {
    {.key = "type", .kind = HAKOI_K_ENUM, .flags = HAKOI_F_REQUIRED, .names = hk_notify_types},
    HAKOI_IGNORE("command"),
    HAKOI_IGNORE("args"),
    HAKOI_IGNORE("url"),
    HAKOI_IGNORE("secret"),
    HAKOI_END,
};

static int hk_notify(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	int r = hakoi_walk_object(w, v, hk_notify_fields, base);
	if (r == 0) {
		ctx_of(w)->cfg->hakoniwa_notify = 1;
	}
	return r;
}

static const hakoi_field_t hk_defaults_fields[] = {
    HAKOI_IGNORE("cwd"), /* read with each asset */
    HAKOI_IGNORE("stdout"),
    HAKOI_IGNORE("stderr"),
    HAKOI_CUSTOM("env", 0, hakoi_launch_hk_env, "an object {set, prepend, append, unset}"),
    HAKOI_CUSTOM("start_grace_sec", 0, hk_grace, "a number of seconds"),
    HAKOI_CUSTOM("delay_sec", 0, hk_delay, "a number of seconds"),
    HAKOI_END,
};

/* Checked here once (positions), applied to each asset by hk_apply_defaults. */
static int hk_defaults(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	hakoi_launch_proc_t scratch;
	memset(&scratch, 0, sizeof(scratch));
	int r = hakoi_walk_object(w, v, hk_defaults_fields, &scratch);
	json_t *cwd = json_object_get(v, "cwd");
	if (r == 0 && cwd != NULL) {
		hakoi_walk_push_key(w, "cwd");
		r = hakoi_launch_parse_folder(w, cwd, &scratch.cwd);
		hakoi_walk_pop(w);
	}
	free(scratch.cwd);
	for (size_t i = 0; i < scratch.env_count; i++) {
		free(scratch.env[i].key);
		free(scratch.env[i].value);
	}
	free(scratch.env);
	if (r == 0) {
		ctx_of(w)->hk_defaults = v;
	}
	return r;
}

/* depends_on names assets of the file; the processes start in that order (Kahn's algorithm,
 * the file's order among the ready ones), a cycle refused. */
static int hk_order(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_launch_config_t *cfg = base;
	json_t *assets = json_object_get(ctx_of(w)->hk_root, "assets");
	size_t n = cfg->proc_count;
	size_t *indeg = calloc(n + 1, sizeof(size_t));
	size_t *order = calloc(n + 1, sizeof(size_t));
	unsigned char *done = calloc(n + 1, 1);
	if (indeg == NULL || order == NULL || done == NULL) {
		free(indeg);
		free(order);
		free(done);
		return hakoi_walk_fail_oom(w);
	}
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		json_t *deps = json_object_get(json_array_get(assets, i), "depends_on");
		size_t k;
		json_t *d;
		json_array_foreach(deps, k, d)
		{
			size_t j = 0;
			while (j < n && strcmp(cfg->procs[j].name, json_string_value(d)) != 0) {
				j++;
			}
			if (j == n || j == i) {
				hakoi_walk_push_key(w, "assets");
				hakoi_walk_push_index(w, i);
				hakoi_walk_push_key(w, "depends_on");
				hakoi_walk_push_index(w, k);
				r = hakoi_walk_fail(w,
				                    j == n ? "\"%s\" is not an asset of this file"
				                           : "\"%s\" is the asset itself",
				                    json_string_value(d));
				break;
			}
			indeg[i]++;
		}
	}
	size_t placed = 0;
	while (r == 0 && placed < n) {
		size_t pick = n;
		for (size_t i = 0; i < n && pick == n; i++) {
			if (!done[i] && indeg[i] == 0) {
				pick = i;
			}
		}
		if (pick == n) {
			for (size_t i = 0; i < n; i++) {
				if (!done[i]) {
					hakoi_walk_push_key(w, "assets");
					hakoi_walk_push_index(w, i);
					hakoi_walk_push_key(w, "depends_on");
					r = hakoi_walk_fail(
					    w, "asset \"%s\" is in a cycle of depends_on",
					    cfg->procs[i].name);
					break;
				}
			}
			break;
		}
		done[pick] = 1;
		order[placed++] = pick;
		for (size_t i = 0; i < n; i++) {
			json_t *deps = json_object_get(json_array_get(assets, i), "depends_on");
			size_t k;
			json_t *d;
			json_array_foreach(deps, k, d)
			{
				if (!done[i] &&
				    strcmp(json_string_value(d), cfg->procs[pick].name) == 0) {
					indeg[i]--;
				}
			}
		}
	}
	if (r == 0) {
		hakoi_launch_proc_t *sorted = malloc((n > 0 ? n : 1) * sizeof(*sorted));
		if (sorted == NULL) {
			r = hakoi_walk_fail_oom(w);
		} else {
			for (size_t i = 0; i < n; i++) {
				sorted[i] = cfg->procs[order[i]];
			}
			memcpy(cfg->procs, sorted, n * sizeof(*sorted));
			free(sorted);
		}
	}
	free(indeg);
	free(order);
	free(done);
	return r;
}

static int hk_said(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)w;
	(void)v;
	(void)f;
	((hakoi_launch_config_t *)base)->hakoniwa = 1;
	return 0;
}

static const hakoi_field_t hk_asset_elem = {.kind = HAKOI_K_CUSTOM, .parse = hk_asset};

const hakoi_field_t hakoi_launch_hk_top_fields[] = {
    HAKOI_IGNORE("$schema"),
    HAKOI_IGNORE("version"),
    HAKOI_CHECK(hakoi_launch_check_domain),
    HAKOI_CHECK(hakoi_launch_check_log_dir),
    HAKOI_CUSTOM("defaults", 0, hk_defaults, "an object"),
    {.key = "assets",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     .min = 1,
     HAKOI_ELEMS_NEW(hakoi_launch_config_t, procs, proc_count),
     .elem = &hk_asset_elem,
     .expect = "an array of assets"},
    HAKOI_CHECK(hk_order),
    HAKOI_CUSTOM("notify", 0, hk_notify, "an object {type, ...}"),
    HAKOI_CHECK(hk_said),
    HAKOI_END,
};
