/* Loader of hako-launch files (launch_config.h): tables for the config walker (hakoi/cfg.h),
 * plus what a table cannot say: ${NAME} expansion, commands found on the search path, folders
 * made absolute, and the rules between members.
 *
 * This file: which of the three forms a file has (hako's launch file, a federation file,
 * Hakoniwa's launcher file), what holds when it does not say, load and free. Each form, and
 * each kind of value, has its own file (launch_config_internal.h lists them). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch_config_internal.h"

/* What holds when the file does not say. The conductor runs in hako-launch: its environment
 * counts for the core's capacities too. */
static int set_defaults(hakoi_launch_config_t *cfg, hako_error_t *err)
{
	cfg->master.delta_usec = 1000;
	cfg->master.max_delay_usec = 0; /* the delta, once it is known */
	cfg->master.real_time_factor = 0.0;
	cfg->grace_ms = HAKOI_LAUNCH_DEFAULT_GRACE;
	cfg->start_timeout_ms = HAKOI_LAUNCH_DEFAULT_START;
	cfg->viewer.port = HAKOI_LAUNCH_VIEWER_PORT;
	hako_domain_config_init(&cfg->core);
	return hako_domain_config_from_env(&cfg->core, err);
}

int hakoi_launch_load(const char *file, const hakoi_launch_options_t *opt,
                      hakoi_launch_config_t **out, hako_error_t *err)
{
	return hakoi_launch_read(file, opt, 0, out, err);
}

int hakoi_launch_read(const char *file, const hakoi_launch_options_t *opt, int nested,
                      hakoi_launch_config_t **out, hako_error_t *err)
{
	struct ctx c;
	memset(&c, 0, sizeof(c));
	c.opt = opt;
	hako_error_clear(err);
	if (out == NULL || file == NULL) {
		return HAKO_EINVAL;
	}
	*out = NULL;
	if (getcwd(c.cwd, sizeof(c.cwd)) == NULL) {
		return hako_error_set(err, HAKO_EIO, file, 0, 0,
		                      "cannot get the current directory: %s", strerror(errno));
	}
	json_t *root;
	char *text;
	size_t len;
	int r = hakoi_cfg_load(file, err, &root, &text, &len);
	if (r != 0) {
		return r;
	}
	hakoi_walk_t w;
	hakoi_walk_init(&w, err, file, text, len, &c);
	hakoi_launch_config_t *cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL || (cfg->file = strdup(file)) == NULL) {
		free(cfg);
		r = hakoi_walk_fail_oom(&w);
		goto out;
	}
	c.cfg = cfg;
	char *slash = strrchr(cfg->file, '/');
	char *folder =
	    slash == NULL ? strdup(".") : strndup(cfg->file, (size_t)(slash - cfg->file));
	cfg->dir =
	    folder != NULL ? hakoi_launch_abs_dir(c.cwd, folder[0] != '\0' ? folder : "/") : NULL;
	free(folder);
	c.var_dir = cfg->dir;
	int federation =
	    json_is_object(root) && json_object_get(root, HAKOI_LAUNCH_KEY_FEDERATION) != NULL;
	int hakoniwa = json_is_object(root) && json_object_get(root, "assets") != NULL &&
	               json_object_get(root, HAKOI_LAUNCH_KEY_PROCESSES) == NULL && !federation;
	c.hk_root = root;
	if (cfg->dir == NULL) {
		r = hakoi_walk_fail_oom(&w);
	} else if (federation && nested) {
		hakoi_walk_push_key(&w, HAKOI_LAUNCH_KEY_FEDERATION);
		r = hakoi_walk_fail(&w, "a federation file is not a node of another federation");
	} else if ((r = set_defaults(cfg, err)) == 0 && federation) {
		cfg->grace_ms = HAKOI_LAUNCH_DEFAULT_FED_GRACE;
		r = hakoi_walk_object(&w, root, hakoi_launch_federation_top_fields, cfg);
	} else if (r == 0 && hakoniwa) {
		if ((r = hakoi_walk_object(&w, root, hakoi_launch_hk_top_fields, cfg)) == 0) {
			cfg->master.max_delay_usec = cfg->master.delta_usec;
		}
	} else if (r == 0 && (r = hakoi_walk_object(&w, root, hakoi_launch_top_fields, cfg)) == 0 &&
	           cfg->master.max_delay_usec == 0) {
		cfg->master.max_delay_usec = cfg->master.delta_usec;
	}
	if (r != 0) {
		hakoi_launch_free(cfg);
	} else {
		*out = cfg;
	}
out:
	json_decref(root);
	free(text);
	return r;
}

static void free_proc(hakoi_launch_proc_t *p)
{
	free(p->command);
	free(p->exe);
	for (size_t j = 0; p->args != NULL && j < p->arg_count; j++) {
		free(p->args[j]);
	}
	free(p->args);
	for (size_t j = 0; p->needs_args != NULL && j < p->needs_count; j++) {
		free(p->needs_args[j]);
	}
	free(p->needs_args);
	free(p->argv); /* borrows command and args */
	for (size_t j = 0; p->env != NULL && j < p->env_count; j++) {
		free(p->env[j].key);
		free(p->env[j].value);
	}
	free(p->env);
	free(p->cwd);
	free(p->wait_what);
	free(p->domain);
}

void hakoi_launch_free(hakoi_launch_config_t *cfg)
{
	if (cfg == NULL) {
		return;
	}
	for (size_t i = 0; cfg->procs != NULL && i < cfg->proc_count; i++) {
		free_proc(&cfg->procs[i]);
	}
	free(cfg->procs);
	free_proc(&cfg->viewer.proc);
	free(cfg->viewer.bind);
	free(cfg->viewer.pdudef);
	free(cfg->viewer.rd);
	free_proc(&cfg->record.proc);
	free(cfg->record.file);
	free(cfg->record.pdudef);
	free(cfg->record.asset);
	for (size_t i = 0; i < cfg->record.pdu_count; i++) {
		free(cfg->record.pdus[i]);
	}
	free(cfg->record.pdus);
	for (size_t i = 0; i < cfg->record.robot_count; i++) {
		free(cfg->record.robots[i]);
	}
	free(cfg->record.robots);
	for (size_t i = 0; cfg->nodes != NULL && i < cfg->node_count; i++) {
		free(cfg->nodes[i].file);
		free(cfg->nodes[i].domain);
		hakoi_launch_free(cfg->nodes[i].cfg);
	}
	free(cfg->nodes);
	free(cfg->prefix);
	hako_conductor_config_free(cfg->federation);
	free(cfg->federation_file);
	free(cfg->trace_file);
	for (size_t i = 0; cfg->path != NULL && i < cfg->path_count; i++) {
		free(cfg->path[i]);
	}
	free(cfg->path);
	free(cfg->file);
	free(cfg->dir);
	free(cfg->domain);
	free(cfg->core_config);
	free(cfg->log_dir);
	free(cfg->log_dir_abs);
	free(cfg);
}
