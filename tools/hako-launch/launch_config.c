/* Loader of hako-launch files: tables for the config walker (hakoi/cfg.h), plus what a table
 * cannot say: ${NAME} expansion, commands found on the search path, folders made absolute, and
 * the rules between members. */
#include "launch_config.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hakoi/cfg.h"

/* The walk's own context (hakoi_walk_t.user): what variables are known so far. */
struct ctx {
	const hakoi_launch_options_t *opt;
	hakoi_launch_config_t *cfg;
	char cwd[PATH_MAX];
	/* Set by hako-launch for every process; NULL until known. */
	const char *var_domain;
	const char *var_dir;
	const char *var_log_dir;
	/* Hakoniwa's launcher format: its "defaults" object (NULL: none), the document */
	json_t *hk_defaults;
	json_t *hk_root;
};

static struct ctx *ctx_of(hakoi_walk_t *w)
{
	return w->user;
}

/* ---- ${NAME} ---- */

static int is_var_start(int ch)
{
	return isalpha(ch) || ch == '_';
}

static int is_var_char(int ch)
{
	return isalnum(ch) || ch == '_';
}

static const char *lookup_var(const struct ctx *c, const char *name)
{
	if (strcmp(name, "HAKO_DOMAIN") == 0 && c->var_domain != NULL) {
		return c->var_domain;
	}
	if (strcmp(name, "HAKO_LAUNCH_DIR") == 0 && c->var_dir != NULL) {
		return c->var_dir;
	}
	if (strcmp(name, "HAKO_LAUNCH_LOG_DIR") == 0 && c->var_log_dir != NULL) {
		return c->var_log_dir;
	}
	return getenv(name);
}

struct buf {
	char *p;
	size_t len;
	size_t cap;
};

static int buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap > 0 ? b->cap : 64;
		while (b->len + n + 1 > cap) {
			cap *= 2;
		}
		char *p = realloc(b->p, cap);
		if (p == NULL) {
			return -1;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* ${NAME} from the environment, $$ = '$'; anything else after '$' is an error at the current
 * path. *out is malloc'ed. */
static int expand(hakoi_walk_t *w, const char *in, char **out)
{
	struct buf b = {NULL, 0, 0};
	*out = NULL;
	if (buf_add(&b, "", 0) != 0) {
		return hakoi_walk_fail_oom(w);
	}
	const char *p = in;
	while (*p != '\0') {
		const char *dollar = strchr(p, '$');
		if (dollar == NULL) {
			dollar = p + strlen(p);
		}
		if (buf_add(&b, p, (size_t)(dollar - p)) != 0) {
			goto oom;
		}
		if (*dollar == '\0') {
			break;
		}
		if (dollar[1] == '$') {
			if (buf_add(&b, "$", 1) != 0) {
				goto oom;
			}
			p = dollar + 2;
			continue;
		}
		if (dollar[1] != '{') {
			free(b.p);
			return hakoi_walk_fail(
			    w, "a '$' must start ${NAME} or be doubled ($$ is a '$')");
		}
		const char *name = dollar + 2;
		const char *end = name;
		while (is_var_char((unsigned char)*end)) {
			end++;
		}
		if (*end != '}' || end == name || !is_var_start((unsigned char)*name)) {
			const char *close = strchr(name, '}');
			int n = close != NULL ? (int)(close - dollar + 1) : (int)strlen(dollar);
			free(b.p);
			return hakoi_walk_fail(
			    w,
			    "\"%.*s\" is not a variable reference ${NAME} (NAME: "
			    "letters, digits, '_')",
			    n, dollar);
		}
		char var[256];
		size_t vlen = (size_t)(end - name);
		if (vlen >= sizeof(var)) {
			free(b.p);
			return hakoi_walk_fail(w, "variable name too long");
		}
		memcpy(var, name, vlen);
		var[vlen] = '\0';
		const char *val = lookup_var(ctx_of(w), var);
		if (val == NULL) {
			free(b.p);
			return hakoi_walk_fail(w, "${%s} is not set in the environment", var);
		}
		if (buf_add(&b, val, strlen(val)) != 0) {
			goto oom;
		}
		p = end + 1;
	}
	*out = b.p;
	return 0;
oom:
	free(b.p);
	return hakoi_walk_fail_oom(w);
}

/* A string member (HAKOI_F_EMPTY_OK: "" too) expanded into the char * at base + f->offset. */
static int parse_expanded(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	if (!json_is_string(v)) {
		return hakoi_walk_fail_must(w, "a string");
	}
	int r =
	    hakoi_walk_string(w, json_string_value(v), json_string_length(v), f->flags, NULL, 0);
	if (r != 0) {
		return r;
	}
	char **dst = (char **)(void *)((char *)base + f->offset);
	free(*dst);
	*dst = NULL;
	return expand(w, json_string_value(v), dst);
}

/* Table entries the shorthands of cfg.h do not cover. */
#define INT_FIELD(key_, T, M, lo, hi, expect_)                                                     \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_INT, HAKOI_AT(T, M), .min = (lo), .max = (hi),      \
		.expect = (expect_)                                                                \
	}
#define EXPANDED(key_, flags_, T, M)                                                               \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_CUSTOM, .flags = (flags_),                          \
		.offset = offsetof(T, M), .parse = parse_expanded, .expect = "a string"            \
	}

/* ---- paths ---- */

/* base + "/" + p unless p is absolute; malloc'ed, or NULL. */
static char *join(const char *base, const char *p)
{
	size_t n = strlen(base) + strlen(p) + 2;
	char *s = malloc(n);
	if (s == NULL) {
		return NULL;
	}
	if (p[0] == '/') {
		snprintf(s, n, "%s", p);
	} else if (strcmp(p, ".") == 0) {
		snprintf(s, n, "%s", base);
	} else {
		snprintf(s, n, "%s/%s", base, p[0] == '.' && p[1] == '/' ? p + 2 : p);
	}
	return s;
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_exe(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* An absolute folder: p resolved against base, then canonical if it exists. */
static char *abs_dir(const char *base, const char *p)
{
	char *j = join(base, p);
	char real[PATH_MAX];
	if (j != NULL && realpath(j, real) != NULL) {
		free(j);
		return strdup(real);
	}
	return j;
}

/* The expanded folder at the current path, made absolute against the launch file's folder;
 * it must exist. *out is malloc'ed (and set also when the folder does not exist). */
static int parse_folder(hakoi_walk_t *w, json_t *v, char **out)
{
	char *e = NULL;
	hakoi_field_t f = {.flags = 0};
	int r = parse_expanded(w, v, &e, &f);
	if (r != 0) {
		return r;
	}
	*out = abs_dir(ctx_of(w)->cfg->dir, e);
	free(e);
	if (*out == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	return is_dir(*out) ? 0 : hakoi_walk_fail(w, "%s is not a folder", *out);
}

/* Append dir to the list of folders looked in (for the error message), once. */
static void add_looked(char *looked, size_t len, const char *dir)
{
	size_t used = strlen(looked), n = strlen(dir);
	for (const char *hit = strstr(looked, dir); hit != NULL; hit = strstr(hit + 1, dir)) {
		if ((hit == looked || hit[-1] == ' ') && (hit[n] == ',' || hit[n] == '\0')) {
			return;
		}
	}
	if (used + 4 < len) {
		snprintf(looked + used, len - used, "%s%s", used > 0 ? ", " : "", dir);
	}
}

static char *find_in(const char *dir, const char *cmd, char *looked, size_t len)
{
	char *p = join(dir, cmd);
	add_looked(looked, len, dir);
	if (p != NULL && is_exe(p)) {
		return p;
	}
	free(p);
	return NULL;
}

/* The executable of a command (at the current path): with a '/', relative to the launch file;
 * else in the folders `first` (absolute), the --path folders, the file's "path", then $PATH.
 * *exe is malloc'ed and absolute. name: the process, for the error (NULL: none). */
static int resolve_command_in(hakoi_walk_t *w, const char *name, const char *cmd,
                              const char *const *first, size_t nfirst, char **exe)
{
	struct ctx *c = ctx_of(w);
	*exe = NULL;
	if (strchr(cmd, '/') != NULL) {
		char *p = join(c->cfg->dir, cmd);
		if (p == NULL) {
			return hakoi_walk_fail_oom(w);
		}
		if (!is_exe(p)) {
			int r = hakoi_walk_fail(w, "process \"%s\": %s %s", name, p,
			                        access(p, F_OK) != 0 ? "does not exist"
			                                             : "is not an executable file");
			free(p);
			return r;
		}
		*exe = p;
		return 0;
	}
	char looked[2048] = "";
	for (size_t i = 0; i < nfirst && *exe == NULL; i++) {
		*exe = find_in(first[i], cmd, looked, sizeof(looked));
	}
	const hakoi_launch_options_t *o = c->opt;
	for (size_t i = 0; o != NULL && i < o->search_count && *exe == NULL; i++) {
		char *d = abs_dir(c->cwd, o->search[i]);
		if (d == NULL) {
			return hakoi_walk_fail_oom(w);
		}
		*exe = find_in(d, cmd, looked, sizeof(looked));
		free(d);
	}
	for (size_t i = 0; i < c->cfg->path_count && *exe == NULL; i++) {
		*exe = find_in(c->cfg->path[i], cmd, looked, sizeof(looked));
	}
	const char *env = getenv("PATH");
	char *copy = strdup(env != NULL ? env : "/usr/local/bin:/usr/bin:/bin");
	if (copy == NULL) {
		free(*exe);
		*exe = NULL;
		return hakoi_walk_fail_oom(w);
	}
	char *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d != NULL && *exe == NULL;
	     d = strtok_r(NULL, ":", &save)) {
		char *a = abs_dir(c->cwd, d);
		if (a == NULL) {
			free(copy);
			return hakoi_walk_fail_oom(w);
		}
		*exe = find_in(a, cmd, looked, sizeof(looked));
		free(a);
	}
	free(copy);
	if (*exe == NULL) {
		return hakoi_walk_fail(w, "%s%s%s\"%s\" not found (looked in %s)",
		                       name != NULL ? "process \"" : "", name != NULL ? name : "",
		                       name != NULL ? "\": " : "", cmd,
		                       looked[0] != '\0' ? looked : "no folder");
	}
	return 0;
}

static int resolve_command(hakoi_walk_t *w, const char *name, const char *cmd, char **exe)
{
	return resolve_command_in(w, name, cmd, NULL, 0, exe);
}

/* ---- the conductor ---- */

static int parse_core_config(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hakoi_launch_config_t *cfg = base;
	char *rel = NULL;
	int r = parse_expanded(w, v, &rel, &(hakoi_field_t){.flags = f->flags});
	if (r != 0) {
		return r;
	}
	cfg->core_config = join(cfg->dir, rel);
	free(rel);
	if (cfg->core_config == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	hako_error_t sub;
	r = hako_domain_config_load(&cfg->core, cfg->core_config, &sub);
	return r != 0 ? hakoi_walk_sub_error(w, r, &sub, cfg->core_config) : 0;
}

/* conductor.federation: the node's conductor file (conductor.h), whose delta_time_usec and
 * max_delay_time_usec are the domain's step and Dmax: every node of a federation must agree on
 * them, so they are given once, there. */
static int parse_federation(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hakoi_launch_config_t *cfg = base;
	char *rel = NULL;
	int r = parse_expanded(w, v, &rel, &(hakoi_field_t){.flags = f->flags});
	if (r != 0) {
		return r;
	}
	cfg->federation_file = join(cfg->dir, rel);
	free(rel);
	if (cfg->federation_file == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	hako_error_t sub;
	r = hako_conductor_config_load(cfg->federation_file, &cfg->federation, &sub);
	if (r != 0) {
		return hakoi_walk_sub_error(w, r, &sub, cfg->federation_file);
	}
	cfg->master.delta_usec = cfg->federation->delta_usec;
	cfg->master.max_delay_usec = cfg->federation->max_delay_usec;
	return 0;
}

static int not_with_federation(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	const hakoi_launch_config_t *cfg = base;
	if (cfg->federation == NULL) {
		return 0;
	}
	int delta = strcmp(f->key, "delta_usec") == 0;
	return hakoi_walk_fail(
	    w, "not allowed with \"federation\": its conductor file gives %s (%lld)",
	    delta ? "delta_time_usec" : "max_delay_time_usec",
	    (long long)(delta ? cfg->federation->delta_usec : cfg->federation->max_delay_usec));
}

static int only_federation(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hakoi_launch_config_t *cfg = base;
	return cfg->federation != NULL
	           ? 0
	           : hakoi_walk_fail(w, "only for a federation node (with \"federation\")");
}

/* Dmax and the stop time against the step. */
static int check_clock(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_launch_config_t *cfg = base;
	long long delta = cfg->master.delta_usec, dmax = cfg->master.max_delay_usec;
	if (cfg->federation != NULL && cfg->federation->role == HAKO_CONDUCTOR_CLIENT &&
	    cfg->stop_at_usec > 0) {
		/* Its own stop would ask the server to stop the federation wherever the server's
		 * clock is: the stop time is the server's to keep. */
		hakoi_walk_push_key(w, "stop_at_usec");
		return hakoi_walk_fail(w,
		                       "a client node stops when its server stops the federation: "
		                       "give the stop time in the server's launch file");
	}
	if (dmax != 0 && dmax < delta) {
		hakoi_walk_push_key(w, "max_delay_usec");
		return hakoi_walk_fail(w, "%lld is less than delta_usec (%lld)", dmax, delta);
	}
	if (cfg->stop_at_usec % delta != 0) {
		/* The world clock moves in steps of delta and halts at the stop time: it would
		 * never get there. */
		hakoi_walk_push_key(w, "stop_at_usec");
		return hakoi_walk_fail(w, "%lld is not a multiple of delta_usec (%lld)",
		                       (long long)cfg->stop_at_usec, delta);
	}
	return 0;
}

static const hakoi_field_t conductor_fields[] = {
    HAKOI_CUSTOM("federation", 0, parse_federation, "a string"),
    {.key = "delta_usec",
     .kind = HAKOI_K_INT,
     HAKOI_AT(hakoi_launch_config_t, master.delta_usec),
     .min = 1,
     .max = 3600000000LL,
     .expect = "an integer in [1, 3600000000] (microseconds)",
     .check = not_with_federation},
    {.key = "max_delay_usec",
     .kind = HAKOI_K_INT,
     HAKOI_AT(hakoi_launch_config_t, master.max_delay_usec),
     .min = 1,
     .max = 3600000000LL,
     .expect = "an integer in [1, 3600000000] (microseconds)",
     .check = not_with_federation},
    {.key = "real_time_factor",
     .kind = HAKOI_K_NUMBER,
     HAKOI_AT(hakoi_launch_config_t, master.real_time_factor),
     .dmin = 0.0,
     .dmax = 1e6,
     .expect = "a number in [0, 1000000] (0 = as fast as possible)"},
    INT_FIELD("stop_at_usec", hakoi_launch_config_t, stop_at_usec, 0, INT64_MAX / 2,
              "an integer >= 0 (world time in microseconds; 0 = none)"),
    HAKOI_CHECK(check_clock),
    HAKOI_CUSTOM("core_config", 0, parse_core_config, "a string"),
    {.key = "start_timeout_ms",
     .kind = HAKOI_K_INT,
     HAKOI_AT(hakoi_launch_config_t, start_timeout_ms),
     .min = 0,
     .max = 86400000,
     .expect = "an integer in [0, 86400000] (ms; 0 = no limit)",
     .check = only_federation},
    HAKOI_END,
};

/* ---- a process ---- */

static int valid_proc_name(const char *name)
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

static int check_proc_name(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hakoi_launch_proc_t *p = base;
	const hakoi_launch_config_t *cfg = ctx_of(w)->cfg;
	if (!valid_proc_name(p->name)) {
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
	int r = parse_expanded(w, v, base, f);
	return r != 0 ? r : resolve_command(w, p->name, p->command, &p->exe);
}

static int parse_cwd(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return parse_folder(w, v, &((hakoi_launch_proc_t *)base)->cwd);
}

static int reserved_env(const char *key)
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
	int ok = is_var_start((unsigned char)*key);
	for (const char *k = key; *k != '\0' && ok; k++) {
		ok = is_var_char((unsigned char)*k);
	}
	if (!ok) {
		return hakoi_walk_fail(w, "not a variable name (letters, digits, '_'; not a digit "
		                          "first)");
	}
	if (reserved_env(key)) {
		return hakoi_walk_fail(w, "is set by hako-launch for every process%s",
		                       strcmp(key, "HAKO_DOMAIN") == 0 ? " (set \"domain\" instead)"
		                                                       : "");
	}
	if ((e->key = strdup(key)) == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	return parse_expanded(w, v, e,
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
    HAKOI_CUSTOM("asset", 0, parse_wait_asset, "a string"),
    HAKOI_CUSTOM("log", 0, parse_wait_log, "a string"),
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
static int set_argv(hakoi_walk_t *w, hakoi_launch_proc_t *p)
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
static int check_process(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
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
		hakoi_walk_push_key(w, "wait_for");
		return hakoi_walk_fail(w,
		                       "a process of phase \"after\" runs to its end; nothing to "
		                       "wait for");
	}
	return set_argv(w, p);
}

static const char *const phase_names[] = {"run", "after", NULL};
static const int phase_values[] = {HAKOI_LAUNCH_PHASE_RUN, HAKOI_LAUNCH_PHASE_AFTER};
static const char *const restart_names[] = {"never", "on-failure", NULL};
static const char *const on_failure_names[] = {"stop", "continue", NULL};

static const hakoi_field_t arg_elem = {
    .kind = HAKOI_K_CUSTOM, .flags = HAKOI_F_EMPTY_OK, .parse = parse_expanded};

static const hakoi_field_t proc_fields[] = {
    {.key = "name",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hakoi_launch_proc_t, name),
     .check = check_proc_name},
    {.key = "command",
     .kind = HAKOI_K_CUSTOM,
     .flags = HAKOI_F_REQUIRED,
     .offset = offsetof(hakoi_launch_proc_t, command),
     .parse = parse_command,
     .expect = "a string"},
    {.key = "args",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hakoi_launch_proc_t, args, arg_count),
     .elem = &arg_elem,
     .expect = "an array of strings"},
    {.key = "domain_needs",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hakoi_launch_proc_t, needs_args, needs_count),
     .elem = &arg_elem,
     .expect = "an array of strings (the arguments that make the command print its needs)"},
    {.key = "env",
     .kind = HAKOI_K_MAP,
     HAKOI_ELEMS_NEW(hakoi_launch_proc_t, env, env_count),
     .parse = parse_env,
     .expect = "an object of strings"},
    HAKOI_CUSTOM("cwd", 0, parse_cwd, "a string"),
    HAKOI_CUSTOM("wait_for", 0, parse_wait_for,
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
    HAKOI_CHECK(check_process),
    HAKOI_END,
};

/* An element of "processes": the defaults, then the table. */
static int parse_process(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_launch_proc_t *p = base;
	p->echo = 1;
	p->timeout_ms = HAKOI_LAUNCH_DEFAULT_TIMEOUT;
	p->max_restarts = HAKOI_LAUNCH_DEFAULT_RESTART;
	return hakoi_walk_object(w, v, proc_fields, p);
}

/* ---- the viewer ---- */

/* viewer.pdudef, viewer.rd: a file, relative to the launch file, that must exist. */
static int parse_viewer_file(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	char *rel = NULL;
	int r = parse_expanded(w, v, &rel, &(hakoi_field_t){.flags = 0});
	if (r != 0) {
		return r;
	}
	char **dst = (char **)(void *)((char *)base + f->offset);
	free(*dst);
	*dst = join(ctx_of(w)->cfg->dir, rel);
	free(rel);
	if (*dst == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	struct stat st;
	if (stat(*dst, &st) != 0 || !S_ISREG(st.st_mode)) {
		return hakoi_walk_fail(
		    w, "%s %s", *dst, access(*dst, F_OK) != 0 ? "does not exist" : "is not a file");
	}
	return 0;
}

/* hako-viewer: beside hako-launch (the build tree's bin/, or the installed bin/), else where
 * any command is looked for. */
static int find_viewer(hakoi_walk_t *w, char **exe)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *first = NULL;
	size_t nfirst = 0;
	if (len > 0) {
		self[len] = '\0';
		char *slash = strrchr(self, '/');
		if (slash != NULL && slash != self) {
			*slash = '\0';
			if ((first = strdup(self)) == NULL) {
				return hakoi_walk_fail_oom(w);
			}
			nfirst = 1;
		}
	}
	int r =
	    resolve_command_in(w, NULL, "hako-viewer", (const char *const *)&first, nfirst, exe);
	free(first);
	return r;
}

static int add_arg(hakoi_launch_proc_t *p, const char *a)
{
	return (p->args[p->arg_count++] = strdup(a)) != NULL ? 0 : -1;
}

static int add_arg_ll(hakoi_launch_proc_t *p, long long v)
{
	char num[32];
	snprintf(num, sizeof(num), "%lld", v);
	return add_arg(p, num);
}

/* The viewer as a process of the launch: hako-viewer -d <domain> --port <port> [--bind ...]
 * [--pdudef ...] [--rd ...] [--rate-hz ...], its output in <log_dir>/viewer.log. */
static int check_viewer(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_launch_viewer_t *vw = base;
	const hakoi_launch_config_t *cfg = ctx_of(w)->cfg;
	hakoi_launch_proc_t *p = &vw->proc;
	vw->enabled = 1;
	for (size_t i = 0; i < cfg->proc_count; i++) {
		if (strcmp(cfg->procs[i].name, "viewer") == 0) {
			return hakoi_walk_fail(w,
			                       "its log is viewer.log, as is the log of "
			                       "processes[%zu] (\"viewer\"): rename that process",
			                       i);
		}
	}
	snprintf(p->name, sizeof(p->name), "viewer");
	p->viewer = 1;
	p->phase = HAKOI_LAUNCH_PHASE_RUN;
	p->wait_for = HAKOI_LAUNCH_WAIT_NOTHING;
	p->echo = 0; /* its URLs are said by hako-launch */
	if ((p->command = strdup("hako-viewer")) == NULL ||
	    (p->args = calloc(12, sizeof(char *))) == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	int r = find_viewer(w, &p->exe);
	if (r != 0) {
		return r;
	}
	if (add_arg(p, "-d") != 0 || add_arg(p, cfg->domain) != 0 || add_arg(p, "--port") != 0 ||
	    add_arg_ll(p, vw->port) != 0 ||
	    (vw->bind != NULL && (add_arg(p, "--bind") != 0 || add_arg(p, vw->bind) != 0)) ||
	    (vw->pdudef != NULL && (add_arg(p, "--pdudef") != 0 || add_arg(p, vw->pdudef) != 0)) ||
	    (vw->rd != NULL && (add_arg(p, "--rd") != 0 || add_arg(p, vw->rd) != 0)) ||
	    (vw->rate_hz > 0 &&
	     (add_arg(p, "--rate-hz") != 0 || add_arg_ll(p, vw->rate_hz) != 0))) {
		return hakoi_walk_fail_oom(w);
	}
	return set_argv(w, p);
}

static const hakoi_field_t viewer_fields[] = {
    INT_FIELD("port", hakoi_launch_viewer_t, port, 0, 65535,
              "an integer in [0, 65535] (0 = any free port)"),
    EXPANDED("bind", 0, hakoi_launch_viewer_t, bind),
    {.key = "pdudef",
     .kind = HAKOI_K_CUSTOM,
     .offset = offsetof(hakoi_launch_viewer_t, pdudef),
     .parse = parse_viewer_file,
     .expect = "a string"},
    {.key = "rd",
     .kind = HAKOI_K_CUSTOM,
     .offset = offsetof(hakoi_launch_viewer_t, rd),
     .parse = parse_viewer_file,
     .expect = "a string"},
    INT_FIELD("rate_hz", hakoi_launch_viewer_t, rate_hz, 1, 100,
              "an integer in [1, 100] (samples a second)"),
    HAKOI_CHECK(check_viewer),
    HAKOI_END,
};

/* ---- the top level ---- */

static int check_domain(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_launch_config_t *cfg = base;
	struct ctx *c = ctx_of(w);
	if (cfg->domain != NULL) {
		cfg->domain_given = 1;
		if (strlen(cfg->domain) >= HAKO_NAME_MAX || strchr(cfg->domain, '/') != NULL) {
			hakoi_walk_push_key(w, "domain");
			return hakoi_walk_fail(
			    w,
			    "\"%s\": a domain name has at most %d characters and no "
			    "'/'",
			    cfg->domain, HAKO_NAME_MAX - 1);
		}
	} else {
		const char *d = c->opt != NULL && c->opt->default_domain != NULL
		                    ? c->opt->default_domain
		                    : hako_domain_default_name();
		if ((cfg->domain = strdup(d)) == NULL) {
			return hakoi_walk_fail_oom(w);
		}
	}
	c->var_domain = cfg->domain;
	return 0;
}

/* "logs/<file name without .json>" */
static char *default_log_dir(const char *file)
{
	const char *base = strrchr(file, '/');
	base = base != NULL ? base + 1 : file;
	size_t n = strlen(base);
	if (n > 5 && strcmp(base + n - 5, ".json") == 0) {
		n -= 5;
	}
	size_t len = n + 6;
	char *s = malloc(len);
	if (s != NULL) {
		snprintf(s, len, "logs/%.*s", (int)n, base);
	}
	return s;
}

/* The log folder is relative to the current directory (not the file's): logs go where the
 * user runs from. */
static int check_log_dir(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_launch_config_t *cfg = base;
	struct ctx *c = ctx_of(w);
	if (cfg->log_dir == NULL && (cfg->log_dir = default_log_dir(cfg->file)) == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	if ((cfg->log_dir_abs = join(c->cwd, cfg->log_dir)) == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	c->var_log_dir = cfg->log_dir_abs;
	return 0;
}

static int parse_path_elem(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return parse_folder(w, v, base);
}

/* A launch runs at least one process; a federation node may hold only its conductor (its
 * domain's clock, within Dmax of the others). */
static int check_processes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hakoi_launch_config_t *cfg = base;
	if (cfg->proc_count > 0 || cfg->federation != NULL) {
		return 0;
	}
	hakoi_walk_push_key(w, "processes");
	return cfg->procs_given ? hakoi_walk_fail(w, "must not be empty")
	                        : hakoi_walk_fail_missing(w, "an array of processes");
}

static const hakoi_field_t path_elem = {.kind = HAKOI_K_CUSTOM, .parse = parse_path_elem};
static const hakoi_field_t process_elem = {.kind = HAKOI_K_CUSTOM, .parse = parse_process};

static const hakoi_field_t top_fields[] = {
    HAKOI_IGNORE("$schema"),
    EXPANDED("domain", 0, hakoi_launch_config_t, domain),
    HAKOI_CHECK(check_domain),
    {.key = "conductor", .kind = HAKOI_K_OBJECT, .fields = conductor_fields},
    EXPANDED("log_dir", 0, hakoi_launch_config_t, log_dir),
    HAKOI_CHECK(check_log_dir),
    {.key = "path",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hakoi_launch_config_t, path, path_count),
     .elem = &path_elem,
     .expect = "an array of folders"},
    INT_FIELD("grace_ms", hakoi_launch_config_t, grace_ms, 0, 3600000,
              "an integer in [0, 3600000] (ms)"),
    {.key = "processes",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hakoi_launch_config_t, procs, proc_count),
     .elem = &process_elem,
     .present = HAKOI_PRESENT(hakoi_launch_config_t, procs_given),
     .expect = "an array of processes"},
    HAKOI_CHECK(check_processes),
    HAKOI_OBJECT("viewer", 0, hakoi_launch_config_t, viewer, viewer_fields),
    HAKOI_END,
};

/* ---- a federation file: every node of a federation, each its own hako-launch ---- */

static int load(const char *file, const hakoi_launch_options_t *opt, int nested,
                hakoi_launch_config_t **out, hako_error_t *err);

/* "<prefix>-<node id>", the domain of a node whose launch file does not name one; the prefix is
 * federation.name, else the domain hako-launch would use ($HAKO_DOMAIN or launch-<pid>). */
static int check_prefix(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_launch_config_t *cfg = base;
	const hakoi_launch_options_t *o = ctx_of(w)->opt;
	if (cfg->prefix == NULL) {
		const char *d = o != NULL && o->default_domain != NULL ? o->default_domain
		                                                       : hako_domain_default_name();
		if ((cfg->prefix = strdup(d)) == NULL) {
			return hakoi_walk_fail_oom(w);
		}
	} else if (strchr(cfg->prefix, '/') != NULL || strlen(cfg->prefix) > 60) {
		hakoi_walk_push_key(w, "name");
		return hakoi_walk_fail(w,
		                       "\"%s\": the nodes' domains are \"<name>-<node id>\": at "
		                       "most 60 characters and no '/'",
		                       cfg->prefix);
	}
	return 0;
}

/* Load a node's launch file for its domain; a node whose file names no domain gets
 * "<prefix>-<node id>", known once the file is read: it is read again with that default, so
 * that ${HAKO_DOMAIN} in it expands as it will in the node's own hako-launch. */
static int load_node(hakoi_walk_t *w, hakoi_launch_node_t *n, const char *prefix)
{
	const hakoi_launch_options_t *o = ctx_of(w)->opt;
	hakoi_launch_options_t opt = {prefix, o != NULL ? o->search : NULL,
	                              o != NULL ? o->search_count : 0};
	hako_error_t sub;
	int r = load(n->file, &opt, 1, &n->cfg, &sub);
	if (r != 0) {
		return hakoi_walk_sub_error(w, r, &sub, n->file);
	}
	if (n->cfg->federation == NULL) {
		return hakoi_walk_fail(w,
		                       "%s is not a federation node: its \"conductor\" has no "
		                       "\"federation\" file",
		                       n->file);
	}
	if (!n->cfg->domain_given) {
		char domain[HAKO_NAME_MAX];
		snprintf(domain, sizeof(domain), "%s-%s", prefix, n->cfg->federation->node_id);
		hakoi_launch_free(n->cfg);
		n->cfg = NULL;
		opt.default_domain = domain;
		if ((r = load(n->file, &opt, 1, &n->cfg, &sub)) != 0) {
			return hakoi_walk_sub_error(w, r, &sub, n->file);
		}
	}
	n->domain = strdup(n->cfg->domain);
	return n->domain != NULL ? 0 : hakoi_walk_fail_oom(w);
}

static int parse_node(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_launch_node_t *n = base;
	const hakoi_launch_config_t *cfg = ctx_of(w)->cfg;
	char *rel = NULL;
	int r = parse_expanded(w, v, &rel, &(hakoi_field_t){.flags = 0});
	if (r != 0) {
		return r;
	}
	n->file = join(cfg->dir, rel);
	free(rel);
	if (n->file == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	if ((r = load_node(w, n, cfg->prefix)) != 0) {
		return r;
	}
	const hako_conductor_config_t *me = n->cfg->federation;
	if (!valid_proc_name(me->node_id)) {
		return hakoi_walk_fail(w,
		                       "node id \"%s\" cannot name its process and log (letters, "
		                       "digits, '.', '_' or '-', starting with a letter or digit)",
		                       me->node_id);
	}
	for (size_t j = 0; j < hakoi_walk_index(w); j++) {
		const hakoi_launch_node_t *o = &cfg->nodes[j];
		if (strcmp(o->cfg->federation->node_id, me->node_id) == 0) {
			return hakoi_walk_fail_dup(w, j, "node \"%s\"", me->node_id);
		}
		if (strcmp(o->domain, n->domain) == 0) {
			return hakoi_walk_fail_dup(w, j, "domain \"%s\"", n->domain);
		}
		if (strcmp(o->cfg->log_dir_abs, n->cfg->log_dir_abs) == 0) {
			/* hako-launch.log and the processes' logs would overwrite each other */
			return hakoi_walk_fail_dup(w, j, "log_dir %s", n->cfg->log_dir);
		}
		const hakoi_launch_viewer_t *mv = &n->cfg->viewer, *ov = &o->cfg->viewer;
		if (mv->enabled && ov->enabled && mv->port != 0 && mv->port == ov->port) {
			/* the nodes run on this machine: the second viewer could not listen */
			return hakoi_walk_fail_dup(w, j, "viewer port %lld", mv->port);
		}
		if (me->role == HAKO_CONDUCTOR_SERVER &&
		    o->cfg->federation->role == HAKO_CONDUCTOR_SERVER) {
			return hakoi_walk_fail(
			    w,
			    "a second server (\"%s\" is nodes[%zu]): a federation "
			    "has one server",
			    o->cfg->federation->node_id, j);
		}
	}
	return 0;
}

static int node_index(const hakoi_launch_config_t *cfg, const char *id)
{
	for (size_t i = 0; i < cfg->node_count; i++) {
		if (strcmp(cfg->nodes[i].cfg->federation->node_id, id) == 0) {
			return (int)i;
		}
	}
	return -1;
}

/* One process per node: this hako-launch again, on the node's file, in the node's domain. */
static int node_process(hakoi_walk_t *w, hakoi_launch_proc_t *p, const hakoi_launch_node_t *n)
{
	struct ctx *c = ctx_of(w);
	const hakoi_launch_options_t *o = c->opt;
	size_t nsearch = o != NULL ? o->search_count : 0;
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0) {
		return hakoi_walk_fail(w, "cannot find this program (/proc/self/exe): %s",
		                       strerror(errno));
	}
	self[len] = '\0';
	snprintf(p->name, sizeof(p->name), "%s", n->cfg->federation->node_id);
	p->command = strdup("hako-launch");
	p->exe = strdup(self);
	p->domain = strdup(n->domain);
	p->args = calloc(2 * nsearch + 1, sizeof(char *));
	p->argv = calloc(2 * nsearch + 3, sizeof(char *));
	if (p->command == NULL || p->exe == NULL || p->domain == NULL || p->args == NULL ||
	    p->argv == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	/* The --path folders of this hako-launch count for the nodes too. */
	for (size_t i = 0; i < nsearch; i++) {
		p->args[p->arg_count++] = strdup("--path");
		p->args[p->arg_count++] = abs_dir(c->cwd, o->search[i]);
	}
	p->args[p->arg_count++] = strdup(n->file);
	p->argv[0] = p->command;
	for (size_t i = 0; i < p->arg_count; i++) {
		if (p->args[i] == NULL) {
			return hakoi_walk_fail_oom(w);
		}
		p->argv[i + 1] = p->args[i];
	}
	p->argc = p->arg_count + 1;
	p->echo = 1;
	p->phase = HAKOI_LAUNCH_PHASE_RUN;
	p->wait_for = HAKOI_LAUNCH_WAIT_NOTHING;
	return 0;
}

/* What holds between the nodes: one server, whose clients are the other nodes, all of them
 * agreeing on the timing (config hash). */
static int check_nodes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_launch_config_t *cfg = base;
	int server = -1;
	for (size_t i = 0; i < cfg->node_count; i++) {
		if (cfg->nodes[i].cfg->federation->role == HAKO_CONDUCTOR_SERVER) {
			server = (int)i;
		}
	}
	hakoi_walk_push_key(w, "nodes");
	if (server < 0) {
		return hakoi_walk_fail(w,
		                       "no server among the nodes (a node whose conductor file has "
		                       "\"clients\")");
	}
	const hako_conductor_config_t *s = cfg->nodes[server].cfg->federation;
	for (size_t i = 0; i < cfg->node_count; i++) {
		const hako_conductor_config_t *c = cfg->nodes[i].cfg->federation;
		hakoi_walk_push_index(w, i);
		if (c->role == HAKO_CONDUCTOR_CLIENT) {
			int listed = 0;
			for (size_t k = 0; k < s->client_count; k++) {
				listed |= strcmp(s->clients[k], c->node_id) == 0;
			}
			if (strcmp(c->server_id, s->node_id) != 0 || !listed) {
				return hakoi_walk_fail(
				    w,
				    "client \"%s\" is not a client of server \"%s\" "
				    "(nodes[%d])",
				    c->node_id, s->node_id, server);
			}
		}
		if (c->config_hash != s->config_hash) {
			return hakoi_walk_fail(
			    w,
			    "the conductor files of \"%s\" and of the server \"%s\" "
			    "disagree on delta, Dmax or the publish mode (config hash "
			    "0x%08x, the server's 0x%08x)",
			    c->node_id, s->node_id, c->config_hash, s->config_hash);
		}
		hakoi_walk_pop(w);
	}
	for (size_t k = 0; k < s->client_count; k++) {
		if (node_index(cfg, s->clients[k]) < 0) {
			hakoi_walk_push_index(w, (size_t)server);
			return hakoi_walk_fail(
			    w,
			    "server \"%s\" has client \"%s\", which is not among the "
			    "nodes: the federation could never start",
			    s->node_id, s->clients[k]);
		}
	}
	hakoi_walk_pop(w);
	cfg->procs = calloc(cfg->node_count, sizeof(*cfg->procs));
	if (cfg->procs == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	for (size_t i = 0; i < cfg->node_count; i++) {
		cfg->proc_count = i + 1;
		int r = node_process(w, &cfg->procs[i], &cfg->nodes[i]);
		if (r != 0) {
			return r;
		}
	}
	return 0;
}

static const hakoi_field_t node_elem = {.kind = HAKOI_K_CUSTOM, .parse = parse_node};

static const hakoi_field_t federation_fields[] = {
    EXPANDED("name", 0, hakoi_launch_config_t, prefix),
    HAKOI_CHECK(check_prefix),
    {.key = "nodes",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     .min = 1,
     .max = HAKO_CONDUCTOR_MAX_CLIENTS + 1,
     HAKOI_ELEMS_NEW(hakoi_launch_config_t, nodes, node_count),
     .elem = &node_elem,
     .expect = "an array of launch files"},
    HAKOI_CHECK(check_nodes),
    HAKOI_END,
};

static const hakoi_field_t federation_top_fields[] = {
    HAKOI_IGNORE("$schema"),
    {.key = "federation",
     .kind = HAKOI_K_OBJECT,
     .flags = HAKOI_F_REQUIRED,
     .fields = federation_fields},
    EXPANDED("log_dir", 0, hakoi_launch_config_t, log_dir),
    HAKOI_CHECK(check_log_dir),
    INT_FIELD("grace_ms", hakoi_launch_config_t, grace_ms, 0, 3600000,
              "an integer in [0, 3600000] (ms)"),
    HAKOI_END,
};

/* What holds when the file does not say. The conductor runs in hako-launch: its environment
 * counts for the core's capacities too. */
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

static const char *hk_env_key(const char *key)
{
	return strcmp(key, "lib_path") == 0 ? "LD_LIBRARY_PATH" : key;
}

/* The env entry of key in p (added, value NULL, when absent), or NULL when out of memory. */
static hakoi_launch_env_t *hk_env_slot(hakoi_launch_proc_t *p, const char *key)
{
	for (size_t i = 0; i < p->env_count; i++) {
		if (strcmp(p->env[i].key, key) == 0) {
			return &p->env[i];
		}
	}
	hakoi_launch_env_t *n = realloc(p->env, (p->env_count + 1) * sizeof(*n));
	if (n == NULL) {
		return NULL;
	}
	p->env = n;
	hakoi_launch_env_t *e = &n[p->env_count];
	if ((e->key = strdup(key)) == NULL) {
		return NULL;
	}
	e->value = NULL;
	p->env_count++;
	return e;
}

/* The value the process starts with so far: set by an earlier op, else hako-launch's own. */
static const char *hk_env_now(const hakoi_launch_env_t *e, int fresh)
{
	if (!fresh) {
		return e->value;
	}
	return getenv(e->key);
}

/* One "set" member: a string. */
static int hk_env_set(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_launch_proc_t *p = base;
	const char *key = hk_env_key(hakoi_walk_key(w));
	if (reserved_env(key)) {
		return hakoi_walk_fail(w, "is set by hako-launch for every process");
	}
	char *value = NULL;
	int r =
	    parse_expanded(w, v, &value, &(hakoi_field_t){.flags = HAKOI_F_EMPTY_OK, .offset = 0});
	if (r != 0) {
		return r;
	}
	hakoi_launch_env_t *e = hk_env_slot(p, key);
	if (e == NULL) {
		free(value);
		return hakoi_walk_fail_oom(w);
	}
	free(e->value);
	e->value = value;
	return 0;
}

/* One "prepend" / "append" member: an array of strings joined with ':' around the value. */
static int hk_env_join(hakoi_walk_t *w, json_t *v, hakoi_launch_proc_t *p, int prepend)
{
	const char *key = hk_env_key(hakoi_walk_key(w));
	if (reserved_env(key)) {
		return hakoi_walk_fail(w, "is set by hako-launch for every process");
	}
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of strings");
	}
	size_t n = 1, i;
	json_t *item;
	json_array_foreach(v, i, item)
	{
		if (!json_is_string(item)) {
			hakoi_walk_push_index(w, i);
			return hakoi_walk_fail_must(w, "a string");
		}
		n += json_string_length(item) + 1;
	}
	size_t before = p->env_count;
	hakoi_launch_env_t *e = hk_env_slot(p, key);
	if (e == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	const char *now = hk_env_now(e, p->env_count != before);
	n += now != NULL ? strlen(now) : 0;
	char *joined = malloc(n + 1);
	if (joined == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	joined[0] = '\0';
	if (!prepend && now != NULL && now[0] != '\0') {
		strcat(joined, now);
	}
	json_array_foreach(v, i, item)
	{
		if (joined[0] != '\0') {
			strcat(joined, ":");
		}
		strcat(joined, json_string_value(item));
	}
	if (prepend && now != NULL && now[0] != '\0') {
		strcat(joined, ":");
		strcat(joined, now);
	}
	free(e->value);
	e->value = joined;
	return 0;
}

static int hk_env_prepend(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hk_env_join(w, v, base, 1);
}

static int hk_env_append(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hk_env_join(w, v, base, 0);
}

/* "unset": an array of names; the process starts without them. */
static int hk_env_unset(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_launch_proc_t *p = base;
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of variable names");
	}
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item)
	{
		hakoi_walk_push_index(w, i);
		if (!json_is_string(item)) {
			return hakoi_walk_fail_must(w, "a string");
		}
		const char *key = hk_env_key(json_string_value(item));
		if (reserved_env(key)) {
			return hakoi_walk_fail(w, "is set by hako-launch for every process");
		}
		hakoi_launch_env_t *e = hk_env_slot(p, key);
		if (e == NULL) {
			return hakoi_walk_fail_oom(w);
		}
		free(e->value);
		e->value = NULL;
		hakoi_walk_pop(w);
	}
	return 0;
}

static int hk_env_map(hakoi_walk_t *w, json_t *v, void *base,
                      int (*one)(hakoi_walk_t *, json_t *, void *, const hakoi_field_t *))
{
	if (!json_is_object(v)) {
		return hakoi_walk_fail_must(w, "an object");
	}
	const char *key;
	json_t *item;
	json_object_foreach(v, key, item)
	{
		hakoi_walk_push_key(w, key);
		int r = one(w, item, base, NULL);
		if (r != 0) {
			return r;
		}
		hakoi_walk_pop(w);
	}
	return 0;
}

static int hk_env_set_map(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hk_env_map(w, v, base, hk_env_set);
}

static int hk_env_prepend_map(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hk_env_map(w, v, base, hk_env_prepend);
}

static int hk_env_append_map(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hk_env_map(w, v, base, hk_env_append);
}

static const hakoi_field_t hk_env_fields[] = {
    HAKOI_CUSTOM("set", 0, hk_env_set_map, "an object of strings"),
    HAKOI_CUSTOM("prepend", 0, hk_env_prepend_map, "an object of string arrays"),
    HAKOI_CUSTOM("append", 0, hk_env_append_map, "an object of string arrays"),
    HAKOI_CUSTOM("unset", 0, hk_env_unset, "an array of variable names"),
    HAKOI_END,
};

static int hk_env(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hakoi_walk_object(w, v, hk_env_fields, base);
}

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
	int r = parse_expanded(w, v, base, f);
	if (r != 0) {
		return r;
	}
	if (p->cwd == NULL || p->command[0] == '/' || strchr(p->command, '/') == NULL) {
		return resolve_command(w, p->name, p->command, &p->exe);
	}
	char *exe = join(p->cwd, p->command);
	if (exe == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	if (!is_exe(exe)) {
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
		r = parse_folder(w, v, &p->cwd);
		hakoi_walk_pop(w);
	}
	if (r == 0 && (v = json_object_get(d, "env")) != NULL) {
		hakoi_walk_push_key(w, "env");
		r = hk_env(w, v, p, NULL);
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
     .check = check_proc_name},
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
     .elem = &arg_elem,
     .expect = "an array of strings"},
    HAKOI_CUSTOM("env", 0, hk_env, "an object {set, prepend, append, unset}"),
    HAKOI_IGNORE("stdout"),
    HAKOI_IGNORE("stderr"),
    HAKOI_CUSTOM("delay_sec", 0, hk_delay, "a number of seconds"),
    HAKOI_CUSTOM("start_grace_sec", 0, hk_grace, "a number of seconds"),
    HAKOI_CUSTOM("depends_on", 0, hk_depends_on, "an array of asset names"),
    HAKOI_CHECK(check_process),
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
		int r = parse_folder(w, cwd, &p->cwd);
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
    HAKOI_CUSTOM("env", 0, hk_env, "an object {set, prepend, append, unset}"),
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
		r = parse_folder(w, cwd, &scratch.cwd);
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

static const hakoi_field_t hk_top_fields[] = {
    HAKOI_IGNORE("$schema"),
    HAKOI_IGNORE("version"),
    HAKOI_CHECK(check_domain),
    HAKOI_CHECK(check_log_dir),
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
	return load(file, opt, 0, out, err);
}

static int load(const char *file, const hakoi_launch_options_t *opt, int nested,
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
	cfg->dir = folder != NULL ? abs_dir(c.cwd, folder[0] != '\0' ? folder : "/") : NULL;
	free(folder);
	c.var_dir = cfg->dir;
	int federation = json_is_object(root) && json_object_get(root, "federation") != NULL;
	int hakoniwa = json_is_object(root) && json_object_get(root, "assets") != NULL &&
	               json_object_get(root, "processes") == NULL && !federation;
	c.hk_root = root;
	if (cfg->dir == NULL) {
		r = hakoi_walk_fail_oom(&w);
	} else if (federation && nested) {
		hakoi_walk_push_key(&w, "federation");
		r = hakoi_walk_fail(&w, "a federation file is not a node of another federation");
	} else if ((r = set_defaults(cfg, err)) == 0 && federation) {
		cfg->grace_ms = HAKOI_LAUNCH_DEFAULT_FED_GRACE;
		r = hakoi_walk_object(&w, root, federation_top_fields, cfg);
	} else if (r == 0 && hakoniwa) {
		if ((r = hakoi_walk_object(&w, root, hk_top_fields, cfg)) == 0) {
			cfg->master.max_delay_usec = cfg->master.delta_usec;
		}
	} else if (r == 0 && (r = hakoi_walk_object(&w, root, top_fields, cfg)) == 0 &&
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
	for (size_t i = 0; cfg->nodes != NULL && i < cfg->node_count; i++) {
		free(cfg->nodes[i].file);
		free(cfg->nodes[i].domain);
		hakoi_launch_free(cfg->nodes[i].cfg);
	}
	free(cfg->nodes);
	free(cfg->prefix);
	hako_conductor_config_free(cfg->federation);
	free(cfg->federation_file);
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

/* A string in double quotes with '"', '\\' and control characters escaped. */
static void dump_quoted(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') {
			fprintf(out, "\\%c", ch);
		} else if (ch < 0x20) {
			fprintf(out, "\\x%02x", ch);
		} else {
			fputc(ch, out);
		}
	}
	fputc('"', out);
}

static void dump_federation(const hakoi_launch_config_t *cfg, FILE *out)
{
	fprintf(out, "federation of %zu nodes, domains %s-<node id>\n", cfg->node_count,
	        cfg->prefix);
	fprintf(out, "log_dir %s\n", cfg->log_dir);
	fprintf(out, "grace_ms %lld\n", cfg->grace_ms);
	for (size_t i = 0; i < cfg->node_count; i++) {
		const hakoi_launch_node_t *n = &cfg->nodes[i];
		const hako_conductor_config_t *c = n->cfg->federation;
		fprintf(out, "node %s %s file %s domain %s log_dir %s\n", c->node_id,
		        c->role == HAKO_CONDUCTOR_SERVER ? "server" : "client", n->file, n->domain,
		        n->cfg->log_dir);
		fprintf(out, "  argv");
		for (size_t j = 0; j < cfg->procs[i].argc; j++) {
			fputc(' ', out);
			dump_quoted(out, cfg->procs[i].argv[j]);
		}
		fputc('\n', out);
		if (n->cfg->viewer.enabled) {
			fprintf(out, "  viewer port %lld\n", n->cfg->viewer.port);
		}
	}
}

static void dump_viewer(const hakoi_launch_config_t *cfg, FILE *out)
{
	const hakoi_launch_proc_t *p = &cfg->viewer.proc;
	fprintf(out, "viewer port=%lld log=%s/viewer.log\n", cfg->viewer.port, cfg->log_dir);
	fprintf(out, "  exe %s\n  argv", p->exe);
	for (size_t j = 0; j < p->argc; j++) {
		fputc(' ', out);
		dump_quoted(out, p->argv[j]);
	}
	fputc('\n', out);
}

void hakoi_launch_dump(const hakoi_launch_config_t *cfg, FILE *out)
{
	static const char *const waits[] = {"nothing", "asset", "log"};
	if (cfg->node_count > 0) {
		dump_federation(cfg, out);
		return;
	}
	fprintf(out, "domain %s\n", cfg->domain);
	fprintf(out, "conductor delta_usec=%lld max_delay_usec=%lld real_time_factor=%g",
	        (long long)cfg->master.delta_usec, (long long)cfg->master.max_delay_usec,
	        cfg->master.real_time_factor);
	fprintf(out, " stop_at_usec=%lld\n", (long long)cfg->stop_at_usec);
	if (cfg->federation != NULL) {
		const hako_conductor_config_t *c = cfg->federation;
		fprintf(out, "federation %s node %s %s", cfg->federation_file, c->node_id,
		        c->role == HAKO_CONDUCTOR_SERVER ? "server of" : "client of");
		if (c->role == HAKO_CONDUCTOR_SERVER) {
			for (size_t i = 0; i < c->client_count; i++) {
				fprintf(out, "%s%s", i > 0 ? "," : " ", c->clients[i]);
			}
		} else {
			fprintf(out, " %s", c->server_id);
		}
		fprintf(out, " start_timeout_ms=%lld\n", cfg->start_timeout_ms);
	}
	if (cfg->sized) {
		fprintf(out,
		        "domain sized to the processes' needs: max_assets=%u max_channels=%u "
		        "arena_bytes=%llu\n",
		        cfg->core.max_assets, cfg->core.max_channels,
		        (unsigned long long)cfg->core.arena_bytes);
	}
	if (cfg->core_config != NULL) {
		fprintf(out, "core_config %s max_assets=%u max_channels=%u liveness=%s\n",
		        cfg->core_config, cfg->core.max_assets, cfg->core.max_channels,
		        cfg->core.liveness_policy == HAKO_LIVENESS_REMOVE ? "remove" : "error");
	}
	fprintf(out, "log_dir %s\n", cfg->log_dir);
	fprintf(out, "grace_ms %lld\n", cfg->grace_ms);
	for (size_t i = 0; i < cfg->path_count; i++) {
		fprintf(out, "path %s\n", cfg->path[i]);
	}
	if (cfg->viewer.enabled) {
		dump_viewer(cfg, out);
	}
	for (size_t i = 0; i < cfg->proc_count; i++) {
		const hakoi_launch_proc_t *p = &cfg->procs[i];
		fprintf(out, "process %s phase=%s echo=%s\n", p->name,
		        p->phase == HAKOI_LAUNCH_PHASE_AFTER ? "after" : "run",
		        p->echo ? "true" : "false");
		fprintf(out, "  exe %s\n  argv", p->exe);
		for (size_t j = 0; j < p->argc; j++) {
			fputc(' ', out);
			dump_quoted(out, p->argv[j]);
		}
		fputc('\n', out);
		for (size_t j = 0; j < p->env_count; j++) {
			if (p->env[j].value == NULL) {
				fprintf(out, "  env %s unset\n", p->env[j].key);
				continue;
			}
			fprintf(out, "  env %s=", p->env[j].key);
			dump_quoted(out, p->env[j].value);
			fputc('\n', out);
		}
		fprintf(out, "  cwd %s\n", p->cwd != NULL ? p->cwd : "(inherited)");
		if (p->delay_ms > 0) {
			fprintf(out, "  delay_ms %lld\n", p->delay_ms);
		}
		fprintf(out, "  wait_for %s", waits[p->wait_for]);
		if (p->wait_for != HAKOI_LAUNCH_WAIT_NOTHING) {
			fputc(' ', out);
			dump_quoted(out, p->wait_what);
			fprintf(out, " timeout_ms=%lld", p->timeout_ms);
		}
		fputc('\n', out);
		if (p->restart_on_failure) {
			fprintf(out, "  restart on-failure max_restarts=%d\n", p->max_restarts);
		} else {
			fprintf(out, "  restart never\n");
		}
		if (p->continue_on_failure) {
			fprintf(out, "  on_failure continue\n");
		}
	}
}
