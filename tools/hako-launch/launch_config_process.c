/* A process of a launch file (launch_config.c has the loader): its name, command, args,
 * environment, folder, what to wait for, phase and restarts, and the rules between them. The
 * checks are Hakoniwa's assets' too. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "launch_config_internal.h"

/* ---- a process ---- */

int hakoi_launch_valid_proc_name(const char *name)
{
	if (!isalnum((unsigned char)name[0])) {
		return 0;
	}
	for (const char *s = name; *s != '\0'; s++) {
		if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-') {
			return 0;
		}
	}
	return strcmp(name, "hako-launch") != 0; /* the log of hako-launch itself */
}

int hakoi_launch_check_proc_name(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hakoi_launch_proc_t *p = base;
	const hakoi_launch_config_t *cfg = ctx_of(w)->cfg;
	if (!hakoi_launch_valid_proc_name(p->name)) {
		return hakoi_walk_fail(
		    w,
		    "\"%s\": a name has 1 to %d letters, digits, '.', '_' or '-', "
		    "starts with a letter or digit and is not \"hako-launch\"",
		    p->name, HAKOI_LAUNCH_PROC_NAME_MAX - 1);
	}
	for (size_t j = 0; j < hakoi_walk_index(w); j++) {
		if (strcmp(cfg->procs[j].name, p->name) == 0) {
			return hakoi_walk_fail_dup(w, j, "\"%s\"", p->name);
		}
	}
	return 0;
}

static int parse_command(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hakoi_launch_proc_t *p = base;
	int r = hakoi_launch_parse_expanded(w, v, base, f);
	return r != 0 ? r : hakoi_launch_resolve_command(w, p->name, p->command, &p->exe);
}

static int parse_cwd(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hakoi_launch_parse_folder(w, v, &((hakoi_launch_proc_t *)base)->cwd);
}

int hakoi_launch_reserved_env(const char *key)
{
	return strcmp(key, "HAKO_DOMAIN") == 0 || strcmp(key, "HAKO_LAUNCH_DIR") == 0 ||
	       strcmp(key, "HAKO_LAUNCH_LOG_DIR") == 0;
}

/* One member of "env", into its hakoi_launch_env_t. */
static int parse_env(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_launch_env_t *e = base;
	const char *key = hakoi_walk_key(w);
	int ok = hakoi_launch_is_var_start((unsigned char)*key);
	for (const char *k = key; *k != '\0' && ok; k++) {
		ok = hakoi_launch_is_var_char((unsigned char)*k);
	}
	if (!ok) {
		return hakoi_walk_fail(w, "not a variable name (letters, digits, '_'; not a digit "
		                          "first)");
	}
	if (hakoi_launch_reserved_env(key)) {
		return hakoi_walk_fail(w, "is set by hako-launch for every process%s",
		                       strcmp(key, "HAKO_DOMAIN") == 0 ? " (set \"domain\" instead)"
		                                                       : "");
	}
	if ((e->key = strdup(key)) == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	return hakoi_launch_parse_expanded(
	    w, v, e,
	    &(hakoi_field_t){.flags = HAKOI_F_EMPTY_OK,
	                     .offset = offsetof(hakoi_launch_env_t, value)});
}

/* wait_for.asset or wait_for.log: the one thing to wait for. */
static int parse_wait(hakoi_walk_t *w, json_t *v, hakoi_launch_proc_t *p, hakoi_launch_wait_t kind)
{
	if (p->wait_for != HAKOI_LAUNCH_WAIT_NOTHING) {
		return hakoi_walk_fail(w, "only one of \"asset\" and \"log\" may be given");
	}
	if (!json_is_string(v)) {
		return hakoi_walk_fail_must(w, "a string");
	}
	const char *s = json_string_value(v);
	char asset[HAKO_NAME_MAX];
	int r = kind == HAKOI_LAUNCH_WAIT_ASSET
	            ? hakoi_walk_string(w, s, json_string_length(v), 0, asset, sizeof(asset))
	            : hakoi_walk_string(w, s, json_string_length(v), 0, NULL, 0);
	if (r != 0) {
		return r;
	}
	if (kind == HAKOI_LAUNCH_WAIT_ASSET) {
		const hakoi_launch_config_t *cfg = ctx_of(w)->cfg;
		for (size_t j = 0; j < hakoi_walk_index(w); j++) {
			const hakoi_launch_proc_t *o = &cfg->procs[j];
			if (o->wait_for == HAKOI_LAUNCH_WAIT_ASSET &&
			    strcmp(o->wait_what, s) == 0) {
				return hakoi_walk_fail_dup(w, j, "asset \"%s\"", s);
			}
		}
	}
	p->wait_for = kind;
	p->wait_what = strdup(s);
	return p->wait_what != NULL ? 0 : hakoi_walk_fail_oom(w);
}

static int parse_wait_asset(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return parse_wait(w, v, base, HAKOI_LAUNCH_WAIT_ASSET);
}

static int parse_wait_log(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return parse_wait(w, v, base, HAKOI_LAUNCH_WAIT_LOG);
}

static int check_wait(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hakoi_launch_proc_t *p = base;
	return p->wait_for != HAKOI_LAUNCH_WAIT_NOTHING
	           ? 0
	           : hakoi_walk_fail(w, "must have \"asset\" (an asset name) or \"log\" (a text)");
}

static const hakoi_field_t wait_fields[] = {
    HAKOI_CUSTOM(HAKOI_LAUNCH_KEY_WAIT_ASSET, 0, parse_wait_asset, "a string"),
    HAKOI_CUSTOM(HAKOI_LAUNCH_KEY_WAIT_LOG, 0, parse_wait_log, "a string"),
    INT_FIELD("timeout_ms", hakoi_launch_proc_t, timeout_ms, 1, 86400000,
              "an integer in [1, 86400000] (ms)"),
    HAKOI_CHECK(check_wait),
    HAKOI_END,
};

/* "nothing", or an object of wait_fields. */
static int parse_wait_for(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	if (json_is_string(v) && strcmp(json_string_value(v), "nothing") == 0) {
		return 0;
	}
	if (!json_is_object(v)) {
		return hakoi_walk_fail_must(w, f->expect);
	}
	return hakoi_walk_object(w, v, wait_fields, base);
}

/* argv: the command, then the args (borrowed from them), NULL-terminated. */
int hakoi_launch_set_argv(hakoi_walk_t *w, hakoi_launch_proc_t *p)
{
	p->argv = calloc(p->arg_count + 2, sizeof(char *));
	if (p->argv == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	p->argv[0] = p->command;
	for (size_t i = 0; i < p->arg_count; i++) {
		p->argv[i + 1] = p->args[i];
	}
	p->argc = p->arg_count + 1;
	return 0;
}

/* The rules between members, and argv: the command, then the args. */
int hakoi_launch_check_process(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_launch_proc_t *p = base;
	if (p->max_restarts_set && !p->restart_on_failure) {
		hakoi_walk_push_key(w, "max_restarts");
		return hakoi_walk_fail(w, "needs \"restart\": \"on-failure\"");
	}
	if (p->continue_on_failure &&
	    (p->restart_on_failure || p->phase == HAKOI_LAUNCH_PHASE_AFTER)) {
		hakoi_walk_push_key(w, "on_failure");
		return hakoi_walk_fail(w,
		                       "\"continue\" is for a process of phase \"run\" that is not "
		                       "restarted");
	}
	if (p->phase == HAKOI_LAUNCH_PHASE_AFTER && p->restart_on_failure) {
		hakoi_walk_push_key(w, "restart");
		return hakoi_walk_fail(w, "a process of phase \"after\" is never restarted");
	}
	if (ctx_of(w)->cfg->federation != NULL && p->restart_on_failure &&
	    p->wait_for == HAKOI_LAUNCH_WAIT_ASSET) {
		/* Restarting an asset restarts the simulation from world time 0: a node cannot do
		 * that alone, the other nodes' worlds would go on. */
		hakoi_walk_push_key(w, "restart");
		return hakoi_walk_fail(w, "an asset of a federation node is never restarted (the "
		                          "simulation would restart on this node alone)");
	}
	if (p->phase == HAKOI_LAUNCH_PHASE_AFTER && p->wait_for != HAKOI_LAUNCH_WAIT_NOTHING) {
		hakoi_walk_push_key(w, HAKOI_LAUNCH_KEY_PROC_WAIT_FOR);
		return hakoi_walk_fail(w,
		                       "a process of phase \"after\" runs to its end; nothing to "
		                       "wait for");
	}
	return hakoi_launch_set_argv(w, p);
}

static const char *const phase_names[] = {"run", "after", NULL};
static const int phase_values[] = {HAKOI_LAUNCH_PHASE_RUN, HAKOI_LAUNCH_PHASE_AFTER};
static const char *const restart_names[] = {"never", "on-failure", NULL};
static const char *const on_failure_names[] = {"stop", "continue", NULL};

const hakoi_field_t hakoi_launch_arg_elem = {
    .kind = HAKOI_K_CUSTOM, .flags = HAKOI_F_EMPTY_OK, .parse = hakoi_launch_parse_expanded};

static const hakoi_field_t proc_fields[] = {
    {.key = HAKOI_LAUNCH_KEY_PROC_NAME,
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hakoi_launch_proc_t, name),
     .check = hakoi_launch_check_proc_name},
    {.key = HAKOI_LAUNCH_KEY_PROC_COMMAND,
     .kind = HAKOI_K_CUSTOM,
     .flags = HAKOI_F_REQUIRED,
     .offset = offsetof(hakoi_launch_proc_t, command),
     .parse = parse_command,
     .expect = "a string"},
    {.key = HAKOI_LAUNCH_KEY_PROC_ARGS,
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hakoi_launch_proc_t, args, arg_count),
     .elem = &hakoi_launch_arg_elem,
     .expect = "an array of strings"},
    {.key = "domain_needs",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hakoi_launch_proc_t, needs_args, needs_count),
     .elem = &hakoi_launch_arg_elem,
     .expect = "an array of strings (the arguments that make the command print its needs)"},
    {.key = HAKOI_LAUNCH_KEY_PROC_ENV,
     .kind = HAKOI_K_MAP,
     HAKOI_ELEMS_NEW(hakoi_launch_proc_t, env, env_count),
     .parse = parse_env,
     .expect = "an object of strings"},
    HAKOI_CUSTOM("cwd", 0, parse_cwd, "a string"),
    HAKOI_CUSTOM(HAKOI_LAUNCH_KEY_PROC_WAIT_FOR, 0, parse_wait_for,
                 "\"nothing\", {\"asset\": NAME} or {\"log\": TEXT}"),
    HAKOI_ENUM("phase", 0, hakoi_launch_proc_t, phase, phase_names, phase_values),
    HAKOI_ENUM("restart", 0, hakoi_launch_proc_t, restart_on_failure, restart_names, NULL),
    HAKOI_ENUM("on_failure", 0, hakoi_launch_proc_t, continue_on_failure, on_failure_names, NULL),
    {.key = "max_restarts",
     .kind = HAKOI_K_INT,
     HAKOI_AT(hakoi_launch_proc_t, max_restarts),
     .min = 0,
     .max = 1000,
     .present = HAKOI_PRESENT(hakoi_launch_proc_t, max_restarts_set)},
    HAKOI_BOOL("echo", 0, hakoi_launch_proc_t, echo),
    HAKOI_CHECK(hakoi_launch_check_process),
    HAKOI_END,
};

/* An element of "processes": the defaults, then the table. */
int hakoi_launch_parse_process(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_launch_proc_t *p = base;
	p->echo = 1;
	p->timeout_ms = HAKOI_LAUNCH_DEFAULT_TIMEOUT;
	p->max_restarts = HAKOI_LAUNCH_DEFAULT_RESTART;
	return hakoi_walk_object(w, v, proc_fields, p);
}
