/* Loader of hako-launch files: JSON -> hakoi_launch_config_t, every field checked and every
 * error placed at its line and column (see launch_config.h and docs/hako-launch.md). */
#include "launch_config.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hakoi/json_pos.h"

/* The file being checked, the path of the value being checked and the variables known so far.
 * After an error the path is left as it was: nothing reads it again. */
struct ctx {
	hakoi_jctx_t j; /* file, text, path: errors point at file:line:column */
	const hakoi_launch_options_t *opt;
	hakoi_launch_config_t *cfg;
	char cwd[PATH_MAX];
	/* Set by hako-launch for every process; NULL until known. */
	const char *var_domain;
	const char *var_dir;
	const char *var_log_dir;
};

#define push_key(c, key)     hakoi_jctx_push_key(&(c)->j, (key))
#define push_index(c, index) hakoi_jctx_push_index(&(c)->j, (index))
#define pop(c)               hakoi_jctx_pop(&(c)->j)
#define fail_oom(c)          hakoi_jctx_fail_oom(&(c)->j)

/* Report the value at the current path, positioned at its first `at` segments (json_pos.h). */
static int fail_at(struct ctx *c, size_t at, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_at(struct ctx *c, size_t at, int code, const char *fmt, ...)
{
	char what[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return hakoi_jctx_report(&c->j, at, code, what);
}

#define fail(c, ...)       fail_at((c), (c)->j.depth, HAKO_ECONFIG, __VA_ARGS__)
#define fail_missing(c, e) fail_at((c), (c)->j.depth - 1, HAKO_ECONFIG, "missing (must be %s)", (e))

/* ---- small checks ---- */

/* Refuse members of obj that are not in known[] (NULL-terminated), naming the known ones. */
static int check_keys(struct ctx *c, json_t *obj, const char *const *known)
{
	const char *key;
	json_t *val;
	json_object_foreach(obj, key, val)
	{
		size_t i = 0;
		while (known[i] != NULL && strcmp(known[i], key) != 0) {
			i++;
		}
		if (known[i] == NULL) {
			char list[512] = "";
			for (i = 0; known[i] != NULL; i++) {
				size_t used = strlen(list);
				snprintf(list + used, sizeof(list) - used, "%s%s",
				         i > 0 ? ", " : "", known[i]);
			}
			push_key(c, key);
			return fail(c, "unknown key (known: %s)", list);
		}
	}
	return 0;
}

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

/* ${NAME} from the environment, $$ = '$'; anything else after '$' is an error. The value at
 * the current path is `in`; *out is malloc'ed. */
static int expand(struct ctx *c, const char *in, char **out)
{
	struct buf b = {NULL, 0, 0};
	*out = NULL;
	if (buf_add(&b, "", 0) != 0) {
		return fail_oom(c);
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
			return fail(c, "a '$' must start ${NAME} or be doubled ($$ is a '$')");
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
			return fail(c,
			            "\"%.*s\" is not a variable reference ${NAME} (NAME: letters, "
			            "digits, '_')",
			            n, dollar);
		}
		char var[256];
		size_t vlen = (size_t)(end - name);
		if (vlen >= sizeof(var)) {
			free(b.p);
			return fail(c, "variable name too long");
		}
		memcpy(var, name, vlen);
		var[vlen] = '\0';
		const char *val = lookup_var(c, var);
		if (val == NULL) {
			free(b.p);
			return fail(c, "${%s} is not set in the environment", var);
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
	return fail_oom(c);
}

/* A string member, raw (*out points into the JSON). Absent: *out = NULL, or an error when
 * required. Empty strings are refused. */
static int get_raw_string(struct ctx *c, json_t *obj, const char *key, int required,
                          const char **out)
{
	json_t *v = json_object_get(obj, key);
	*out = NULL;
	push_key(c, key);
	if (v == NULL) {
		if (required) {
			return fail_missing(c, "a string");
		}
	} else if (!json_is_string(v)) {
		return fail(c, "must be a string");
	} else if (json_string_length(v) == 0) {
		return fail(c, "must not be empty");
	} else if (strlen(json_string_value(v)) != json_string_length(v)) {
		return fail(c, "must not hold a NUL character");
	} else {
		*out = json_string_value(v);
	}
	pop(c);
	return 0;
}

/* As get_raw_string, expanded into a malloc'ed copy. */
static int get_string(struct ctx *c, json_t *obj, const char *key, int required, char **out)
{
	const char *raw;
	int r = get_raw_string(c, obj, key, required, &raw);
	*out = NULL;
	if (r != 0 || raw == NULL) {
		return r;
	}
	push_key(c, key);
	if ((r = expand(c, raw, out)) != 0) {
		return r;
	}
	pop(c);
	return 0;
}

/* An optional integer member in [min, max]; `expected` says what it must be. */
static int get_int(struct ctx *c, json_t *obj, const char *key, long long min, long long max,
                   const char *expected, long long *out)
{
	json_t *v = json_object_get(obj, key);
	if (v == NULL) {
		return 0;
	}
	push_key(c, key);
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		return fail(c, "must be %s", expected);
	}
	*out = json_integer_value(v);
	pop(c);
	return 0;
}

static int get_bool(struct ctx *c, json_t *obj, const char *key, int *out)
{
	json_t *v = json_object_get(obj, key);
	if (v == NULL) {
		return 0;
	}
	push_key(c, key);
	if (!json_is_boolean(v)) {
		return fail(c, "must be true or false");
	}
	*out = json_is_true(v);
	pop(c);
	return 0;
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

/* The executable of a command (at the current path); *exe is malloc'ed and absolute. */
static int resolve_command(struct ctx *c, const char *name, const char *cmd, char **exe)
{
	*exe = NULL;
	if (strchr(cmd, '/') != NULL) {
		char *p = join(c->cfg->dir, cmd);
		if (p == NULL) {
			return fail_oom(c);
		}
		if (!is_exe(p)) {
			int r = fail(c, "process \"%s\": %s %s", name, p,
			             access(p, F_OK) != 0 ? "does not exist"
			                                  : "is not an executable file");
			free(p);
			return r;
		}
		*exe = p;
		return 0;
	}
	char looked[2048] = "";
	const hakoi_launch_options_t *o = c->opt;
	for (size_t i = 0; o != NULL && i < o->search_count && *exe == NULL; i++) {
		char *d = abs_dir(c->cwd, o->search[i]);
		if (d == NULL) {
			return fail_oom(c);
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
		return fail_oom(c);
	}
	char *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d != NULL && *exe == NULL;
	     d = strtok_r(NULL, ":", &save)) {
		char *a = abs_dir(c->cwd, d);
		if (a == NULL) {
			free(copy);
			return fail_oom(c);
		}
		*exe = find_in(a, cmd, looked, sizeof(looked));
		free(a);
	}
	free(copy);
	if (*exe == NULL) {
		return fail(c, "process \"%s\": \"%s\" not found (looked in %s)", name, cmd,
		            looked[0] != '\0' ? looked : "no folder");
	}
	return 0;
}

/* ---- sections ---- */

static int valid_domain(const char *s)
{
	return strlen(s) < HAKO_NAME_MAX && strchr(s, '/') == NULL;
}

static int load_conductor(struct ctx *c, json_t *root)
{
	static const char *const known[] = {"delta_usec",   "max_delay_usec", "real_time_factor",
	                                    "stop_at_usec", "core_config",    NULL};
	hakoi_launch_config_t *cfg = c->cfg;
	json_t *obj = json_object_get(root, "conductor");
	int r;
	cfg->master.delta_usec = 1000;
	cfg->master.max_delay_usec = 0;
	cfg->master.real_time_factor = 0.0;
	hako_domain_config_init(&cfg->core);
	if ((r = hako_domain_config_from_env(&cfg->core, c->j.err)) != 0) {
		return r; /* the conductor runs in hako-launch: its environment counts too */
	}
	if (obj == NULL) {
		cfg->master.max_delay_usec = cfg->master.delta_usec;
		return 0;
	}
	push_key(c, "conductor");
	if (!json_is_object(obj)) {
		return fail(c, "must be an object");
	}
	if ((r = check_keys(c, obj, known)) != 0) {
		return r;
	}
	long long delta = 1000, dmax = 0, stop = 0;
	if ((r = get_int(c, obj, "delta_usec", 1, 3600000000LL, "an integer >= 1 (microseconds)",
	                 &delta)) != 0 ||
	    (r = get_int(c, obj, "max_delay_usec", 1, 3600000000LL,
	                 "an integer >= 1 (microseconds)", &dmax)) != 0 ||
	    (r = get_int(c, obj, "stop_at_usec", 0, INT64_MAX / 2,
	                 "an integer >= 0 (world time in microseconds; 0 = none)", &stop)) != 0) {
		return r;
	}
	if (dmax == 0) {
		dmax = delta;
	} else if (dmax < delta) {
		push_key(c, "max_delay_usec");
		return fail(c, "%lld is less than delta_usec (%lld)", dmax, delta);
	}
	if (stop % delta != 0) {
		/* The world clock moves in steps of delta and halts at the stop time: it would
		 * never get there. */
		push_key(c, "stop_at_usec");
		return fail(c, "%lld is not a multiple of delta_usec (%lld)", stop, delta);
	}
	cfg->master.delta_usec = delta;
	cfg->master.max_delay_usec = dmax;
	cfg->stop_at_usec = stop;
	json_t *f = json_object_get(obj, "real_time_factor");
	if (f != NULL) {
		push_key(c, "real_time_factor");
		if (!json_is_number(f) || !(json_number_value(f) >= 0.0) ||
		    json_number_value(f) > 1e6) {
			return fail(c,
			            "must be a number in [0, 1000000] (0 = as fast as possible)");
		}
		cfg->master.real_time_factor = json_number_value(f);
		pop(c);
	}
	char *core = NULL;
	if ((r = get_string(c, obj, "core_config", 0, &core)) != 0) {
		return r;
	}
	if (core != NULL) {
		cfg->core_config = join(cfg->dir, core);
		free(core);
		if (cfg->core_config == NULL) {
			return fail_oom(c);
		}
		hako_error_t sub;
		int lr = hako_domain_config_load(&cfg->core, cfg->core_config, &sub);
		if (lr != 0) {
			char msg[1200];
			push_key(c, "core_config");
			return fail(c, "%s", hako_error_format(&sub, msg, sizeof(msg)));
		}
	}
	pop(c);
	return 0;
}

static int load_path(struct ctx *c, json_t *root)
{
	json_t *arr = json_object_get(root, "path");
	if (arr == NULL) {
		return 0;
	}
	push_key(c, "path");
	if (!json_is_array(arr)) {
		return fail(c, "must be an array of folders");
	}
	c->cfg->path = calloc(json_array_size(arr) + 1, sizeof(char *));
	if (c->cfg->path == NULL) {
		return fail_oom(c);
	}
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
	{
		push_index(c, i);
		if (!json_is_string(v) || json_string_length(v) == 0) {
			return fail(c, "must be a non-empty string");
		}
		char *e;
		int r = expand(c, json_string_value(v), &e);
		if (r != 0) {
			return r;
		}
		char *d = abs_dir(c->cfg->dir, e);
		free(e);
		if (d == NULL) {
			return fail_oom(c);
		}
		c->cfg->path[c->cfg->path_count++] = d;
		if (!is_dir(d)) {
			return fail(c, "%s is not a folder", d);
		}
		pop(c);
	}
	pop(c);
	return 0;
}

static int valid_proc_name(const char *name)
{
	if (!isalnum((unsigned char)name[0]) || strlen(name) >= HAKOI_LAUNCH_PROC_NAME_MAX) {
		return 0;
	}
	for (const char *s = name; *s != '\0'; s++) {
		if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-') {
			return 0;
		}
	}
	return strcmp(name, "hako-launch") != 0; /* the log of hako-launch itself */
}

static int load_args(struct ctx *c, json_t *obj, hakoi_launch_proc_t *p)
{
	json_t *arr = json_object_get(obj, "args");
	size_t n = arr != NULL && json_is_array(arr) ? json_array_size(arr) : 0;
	p->argv = calloc(n + 2, sizeof(char *));
	if (p->argv == NULL) {
		return fail_oom(c);
	}
	p->argv[0] = strdup(p->command);
	if (p->argv[0] == NULL) {
		return fail_oom(c);
	}
	p->argc = 1;
	if (arr == NULL) {
		return 0;
	}
	push_key(c, "args");
	if (!json_is_array(arr)) {
		return fail(c, "must be an array of strings");
	}
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
	{
		push_index(c, i);
		if (!json_is_string(v)) {
			return fail(c, "must be a string");
		}
		if (strlen(json_string_value(v)) != json_string_length(v)) {
			return fail(c, "must not hold a NUL character");
		}
		int r = expand(c, json_string_value(v), &p->argv[p->argc]);
		if (r != 0) {
			return r;
		}
		p->argc++;
		pop(c);
	}
	pop(c);
	return 0;
}

static int reserved_env(const char *key)
{
	return strcmp(key, "HAKO_DOMAIN") == 0 || strcmp(key, "HAKO_LAUNCH_DIR") == 0 ||
	       strcmp(key, "HAKO_LAUNCH_LOG_DIR") == 0;
}

static int load_env(struct ctx *c, json_t *obj, hakoi_launch_proc_t *p)
{
	json_t *env = json_object_get(obj, "env");
	if (env == NULL) {
		return 0;
	}
	push_key(c, "env");
	if (!json_is_object(env)) {
		return fail(c, "must be an object of strings");
	}
	p->env = calloc(json_object_size(env) + 1, sizeof(*p->env));
	if (p->env == NULL) {
		return fail_oom(c);
	}
	const char *key;
	json_t *v;
	json_object_foreach(env, key, v)
	{
		push_key(c, key);
		const char *k = key;
		int ok = is_var_start((unsigned char)*k);
		for (; *k != '\0' && ok; k++) {
			ok = is_var_char((unsigned char)*k);
		}
		if (!ok) {
			return fail(c, "not a variable name (letters, digits, '_'; not a digit "
			               "first)");
		}
		if (reserved_env(key)) {
			return fail(c, "is set by hako-launch for every process%s",
			            strcmp(key, "HAKO_DOMAIN") == 0 ? " (set \"domain\" instead)"
			                                            : "");
		}
		if (!json_is_string(v)) {
			return fail(c, "must be a string");
		}
		if (strlen(json_string_value(v)) != json_string_length(v)) {
			return fail(c, "must not hold a NUL character");
		}
		hakoi_launch_env_t *e = &p->env[p->env_count];
		e->key = strdup(key);
		if (e->key == NULL) {
			return fail_oom(c);
		}
		p->env_count++;
		int r = expand(c, json_string_value(v), &e->value);
		if (r != 0) {
			return r;
		}
		pop(c);
	}
	pop(c);
	return 0;
}

static int load_wait_for(struct ctx *c, json_t *obj, hakoi_launch_proc_t *p, size_t index)
{
	static const char *const known[] = {"asset", "log", "timeout_ms", NULL};
	json_t *w = json_object_get(obj, "wait_for");
	int r;
	p->wait_for = HAKOI_LAUNCH_WAIT_NOTHING;
	p->timeout_ms = HAKOI_LAUNCH_DEFAULT_TIMEOUT;
	if (w == NULL) {
		return 0;
	}
	push_key(c, "wait_for");
	if (json_is_string(w) && strcmp(json_string_value(w), "nothing") == 0) {
		pop(c);
		return 0;
	}
	if (!json_is_object(w)) {
		return fail(c, "must be \"nothing\", {\"asset\": NAME} or {\"log\": TEXT}");
	}
	if ((r = check_keys(c, w, known)) != 0) {
		return r;
	}
	json_t *asset = json_object_get(w, "asset");
	json_t *log = json_object_get(w, "log");
	if (asset != NULL && log != NULL) {
		push_key(c, "log");
		return fail(c, "only one of \"asset\" and \"log\" may be given");
	}
	if (asset == NULL && log == NULL) {
		return fail(c, "must have \"asset\" (an asset name) or \"log\" (a text)");
	}
	const char *what;
	if (asset != NULL) {
		if ((r = get_raw_string(c, w, "asset", 1, &what)) != 0) {
			return r;
		}
		if (strlen(what) >= HAKO_NAME_MAX) {
			push_key(c, "asset");
			return fail(c, "asset names have at most %d characters", HAKO_NAME_MAX - 1);
		}
		for (size_t j = 0; j < index; j++) {
			const hakoi_launch_proc_t *o = &c->cfg->procs[j];
			if (o->wait_for == HAKOI_LAUNCH_WAIT_ASSET &&
			    strcmp(o->wait_what, what) == 0) {
				push_key(c, "asset");
				return fail(
				    c, "asset \"%s\" is awaited already by processes[%zu] (%s)",
				    what, j, o->name);
			}
		}
		p->wait_for = HAKOI_LAUNCH_WAIT_ASSET;
	} else {
		if ((r = get_raw_string(c, w, "log", 1, &what)) != 0) {
			return r;
		}
		p->wait_for = HAKOI_LAUNCH_WAIT_LOG;
	}
	p->wait_what = strdup(what);
	if (p->wait_what == NULL) {
		return fail_oom(c);
	}
	if ((r = get_int(c, w, "timeout_ms", 1, 86400000, "an integer in [1, 86400000] (ms)",
	                 &p->timeout_ms)) != 0) {
		return r;
	}
	pop(c);
	return 0;
}

static int load_policy(struct ctx *c, json_t *obj, hakoi_launch_proc_t *p)
{
	const char *s;
	int r;
	long long max = HAKOI_LAUNCH_DEFAULT_RESTART;
	if ((r = get_raw_string(c, obj, "phase", 0, &s)) != 0) {
		return r;
	}
	if (s != NULL && strcmp(s, "after") == 0) {
		p->phase = HAKOI_LAUNCH_PHASE_AFTER;
	} else if (s != NULL && strcmp(s, "run") != 0) {
		push_key(c, "phase");
		return fail(c, "must be \"run\" or \"after\"");
	}
	if ((r = get_raw_string(c, obj, "restart", 0, &s)) != 0) {
		return r;
	}
	if (s != NULL && strcmp(s, "on-failure") == 0) {
		p->restart_on_failure = 1;
	} else if (s != NULL && strcmp(s, "never") != 0) {
		push_key(c, "restart");
		return fail(c, "must be \"never\" or \"on-failure\"");
	}
	if ((r = get_int(c, obj, "max_restarts", 0, 1000, "an integer in [0, 1000]", &max)) != 0) {
		return r;
	}
	if (json_object_get(obj, "max_restarts") != NULL && !p->restart_on_failure) {
		push_key(c, "max_restarts");
		return fail(c, "needs \"restart\": \"on-failure\"");
	}
	p->max_restarts = (int)max;
	if (p->phase == HAKOI_LAUNCH_PHASE_AFTER) {
		if (p->restart_on_failure) {
			push_key(c, "restart");
			return fail(c, "a process of phase \"after\" is never restarted");
		}
		if (p->wait_for != HAKOI_LAUNCH_WAIT_NOTHING) {
			push_key(c, "wait_for");
			return fail(c,
			            "a process of phase \"after\" runs to its end; nothing to wait "
			            "for");
		}
	}
	return 0;
}

static int load_process(struct ctx *c, json_t *obj, size_t index)
{
	static const char *const known[] = {"name",         "command",  "args",  "env",
	                                    "cwd",          "wait_for", "phase", "restart",
	                                    "max_restarts", "echo",     NULL};
	hakoi_launch_proc_t *p = &c->cfg->procs[index];
	const char *name;
	int r;
	p->echo = 1;
	if (!json_is_object(obj)) {
		return fail(c, "must be an object");
	}
	if ((r = check_keys(c, obj, known)) != 0 ||
	    (r = get_raw_string(c, obj, "name", 1, &name)) != 0) {
		return r;
	}
	if (!valid_proc_name(name)) {
		push_key(c, "name");
		return fail(c,
		            "\"%s\": a name has 1 to %d letters, digits, '.', '_' or '-', starts "
		            "with a letter or digit and is not \"hako-launch\"",
		            name, HAKOI_LAUNCH_PROC_NAME_MAX - 1);
	}
	for (size_t j = 0; j < index; j++) {
		if (strcmp(c->cfg->procs[j].name, name) == 0) {
			push_key(c, "name");
			return fail(c, "\"%s\" is the name of processes[%zu] already", name, j);
		}
	}
	if ((p->name = strdup(name)) == NULL) {
		return fail_oom(c);
	}
	if ((r = get_string(c, obj, "command", 1, &p->command)) != 0) {
		return r;
	}
	push_key(c, "command");
	if ((r = resolve_command(c, p->name, p->command, &p->exe)) != 0) {
		return r;
	}
	pop(c);
	char *cwd = NULL;
	if ((r = load_args(c, obj, p)) != 0 || (r = load_env(c, obj, p)) != 0 ||
	    (r = get_string(c, obj, "cwd", 0, &cwd)) != 0) {
		return r;
	}
	if (cwd != NULL) {
		p->cwd = abs_dir(c->cfg->dir, cwd);
		free(cwd);
		if (p->cwd == NULL) {
			return fail_oom(c);
		}
		if (!is_dir(p->cwd)) {
			push_key(c, "cwd");
			return fail(c, "%s is not a folder", p->cwd);
		}
	}
	if ((r = load_wait_for(c, obj, p, index)) != 0 || (r = load_policy(c, obj, p)) != 0 ||
	    (r = get_bool(c, obj, "echo", &p->echo)) != 0) {
		return r;
	}
	return 0;
}

static int load_processes(struct ctx *c, json_t *root)
{
	json_t *arr = json_object_get(root, "processes");
	push_key(c, "processes");
	if (arr == NULL) {
		return fail_missing(c, "an array of processes");
	}
	if (!json_is_array(arr)) {
		return fail(c, "must be an array of processes");
	}
	if (json_array_size(arr) == 0) {
		return fail(c, "must list at least one process");
	}
	c->cfg->procs = calloc(json_array_size(arr), sizeof(*c->cfg->procs));
	if (c->cfg->procs == NULL) {
		return fail_oom(c);
	}
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
	{
		c->cfg->proc_count = i + 1; /* so that free() sees what was filled */
		push_index(c, i);
		int r = load_process(c, v, i);
		if (r != 0) {
			return r;
		}
		pop(c);
	}
	pop(c);
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

static int load_root(struct ctx *c, json_t *root)
{
	static const char *const known[] = {"$schema", "domain",   "conductor", "log_dir",
	                                    "path",    "grace_ms", "processes", NULL};
	hakoi_launch_config_t *cfg = c->cfg;
	int r;
	if (!json_is_object(root)) {
		return fail(c, "must be an object");
	}
	if ((r = check_keys(c, root, known)) != 0 ||
	    (r = get_string(c, root, "domain", 0, &cfg->domain)) != 0) {
		return r;
	}
	if (cfg->domain != NULL && !valid_domain(cfg->domain)) {
		push_key(c, "domain");
		return fail(c, "\"%s\": a domain name has at most %d characters and no '/'",
		            cfg->domain, HAKO_NAME_MAX - 1);
	}
	if (cfg->domain == NULL) {
		const char *d = c->opt != NULL && c->opt->default_domain != NULL
		                    ? c->opt->default_domain
		                    : hako_domain_default_name();
		if ((cfg->domain = strdup(d)) == NULL) {
			return fail_oom(c);
		}
	}
	c->var_domain = cfg->domain;
	c->var_dir = cfg->dir;
	if ((r = load_conductor(c, root)) != 0 ||
	    (r = get_string(c, root, "log_dir", 0, &cfg->log_dir)) != 0) {
		return r;
	}
	if (cfg->log_dir == NULL && (cfg->log_dir = default_log_dir(cfg->file)) == NULL) {
		return fail_oom(c);
	}
	if ((cfg->log_dir_abs = join(c->cwd, cfg->log_dir)) == NULL) {
		return fail_oom(c);
	}
	c->var_log_dir = cfg->log_dir_abs;
	cfg->grace_ms = HAKOI_LAUNCH_DEFAULT_GRACE;
	if ((r = get_int(c, root, "grace_ms", 0, 3600000, "an integer in [0, 3600000] (ms)",
	                 &cfg->grace_ms)) != 0 ||
	    (r = load_path(c, root)) != 0 || (r = load_processes(c, root)) != 0) {
		return r;
	}
	return 0;
}

int hakoi_launch_load(const char *file, const hakoi_launch_options_t *opt,
                      hakoi_launch_config_t **out, hako_error_t *err)
{
	struct ctx c;
	char *text = NULL;
	size_t len = 0;
	json_error_t je;
	int r;
	memset(&c, 0, sizeof(c));
	c.j.err = err;
	c.j.file = file;
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
	int e = hakoi_read_file(file, &text, &len);
	if (e != 0) {
		return hako_error_set(err, e == ENOENT ? HAKO_ENOENT : HAKO_EIO, file, 0, 0,
		                      "cannot read: %s", hakoi_read_file_strerror(e));
	}
	c.j.text = text;
	c.j.len = len;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL) {
		r = hako_error_set(err, HAKO_ECONFIG, file, je.line > 0 ? je.line : 0,
		                   je.line > 0 ? je.column : 0, "invalid JSON: %s", je.text);
		free(text);
		return r;
	}
	hakoi_launch_config_t *cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL || (cfg->file = strdup(file)) == NULL) {
		free(cfg);
		r = fail_oom(&c);
		goto out;
	}
	c.cfg = cfg;
	char *slash = strrchr(cfg->file, '/');
	char *folder =
	    slash == NULL ? strdup(".") : strndup(cfg->file, (size_t)(slash - cfg->file));
	cfg->dir = folder != NULL ? abs_dir(c.cwd, folder[0] != '\0' ? folder : "/") : NULL;
	free(folder);
	if (cfg->dir == NULL) {
		r = fail_oom(&c);
		hakoi_launch_free(cfg);
		goto out;
	}
	r = load_root(&c, root);
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

void hakoi_launch_free(hakoi_launch_config_t *cfg)
{
	if (cfg == NULL) {
		return;
	}
	for (size_t i = 0; i < cfg->proc_count; i++) {
		hakoi_launch_proc_t *p = &cfg->procs[i];
		free(p->name);
		free(p->command);
		free(p->exe);
		for (size_t j = 0; p->argv != NULL && j < p->argc; j++) {
			free(p->argv[j]);
		}
		free(p->argv);
		for (size_t j = 0; j < p->env_count; j++) {
			free(p->env[j].key);
			free(p->env[j].value);
		}
		free(p->env);
		free(p->cwd);
		free(p->wait_what);
	}
	free(cfg->procs);
	for (size_t i = 0; i < cfg->path_count; i++) {
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

void hakoi_launch_dump(const hakoi_launch_config_t *cfg, FILE *out)
{
	static const char *const waits[] = {"nothing", "asset", "log"};
	fprintf(out, "domain %s\n", cfg->domain);
	fprintf(out, "conductor delta_usec=%lld max_delay_usec=%lld real_time_factor=%g",
	        (long long)cfg->master.delta_usec, (long long)cfg->master.max_delay_usec,
	        cfg->master.real_time_factor);
	fprintf(out, " stop_at_usec=%lld\n", (long long)cfg->stop_at_usec);
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
			fprintf(out, "  env %s=", p->env[j].key);
			dump_quoted(out, p->env[j].value);
			fputc('\n', out);
		}
		fprintf(out, "  cwd %s\n", p->cwd != NULL ? p->cwd : "(inherited)");
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
	}
}
