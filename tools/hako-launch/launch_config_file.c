/* hako's own launch file (launch_config.c has the loader): the top level (domain, log_dir,
 * path, grace_ms, processes, viewer) and "conductor", the clock of the launch's domain: its
 * step, Dmax, pace and stop, or a federation node's conductor file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "launch_config_internal.h"

/* ---- the conductor ---- */

static int parse_core_config(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hakoi_launch_config_t *cfg = base;
	char *rel = NULL;
	int r = hakoi_launch_parse_expanded(w, v, &rel, &(hakoi_field_t){.flags = f->flags});
	if (r != 0) {
		return r;
	}
	cfg->core_config = hakoi_launch_join(cfg->dir, rel);
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
	int r = hakoi_launch_parse_expanded(w, v, &rel, &(hakoi_field_t){.flags = f->flags});
	if (r != 0) {
		return r;
	}
	cfg->federation_file = hakoi_launch_join(cfg->dir, rel);
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

/* conductor.trace: the node's drift samples as CSV (hako_conductor_node_trace), for
 * hako-conductor check; relative to the launch file. */
static int parse_trace(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hakoi_launch_config_t *cfg = base;
	char *rel = NULL;
	int r = only_federation(w, v, base, f);
	if (r != 0 || (r = hakoi_launch_parse_expanded(w, v, &rel,
	                                               &(hakoi_field_t){.flags = f->flags})) != 0) {
		return r;
	}
	free(cfg->trace_file);
	cfg->trace_file = hakoi_launch_join(cfg->dir, rel);
	free(rel);
	return cfg->trace_file == NULL ? hakoi_walk_fail_oom(w) : 0;
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
		hakoi_walk_push_key(w, HAKOI_LAUNCH_KEY_STOP_AT_USEC);
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
		hakoi_walk_push_key(w, HAKOI_LAUNCH_KEY_STOP_AT_USEC);
		return hakoi_walk_fail(w, "%lld is not a multiple of delta_usec (%lld)",
		                       (long long)cfg->stop_at_usec, delta);
	}
	return 0;
}

static const hakoi_field_t conductor_fields[] = {
    HAKOI_CUSTOM(HAKOI_LAUNCH_KEY_CONDUCTOR_FILE, 0, parse_federation, "a string"),
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
    {.key = HAKOI_LAUNCH_KEY_REAL_TIME_FACTOR,
     .kind = HAKOI_K_NUMBER,
     HAKOI_AT(hakoi_launch_config_t, master.real_time_factor),
     .dmin = 0.0,
     .dmax = 1e6,
     .expect = "a number in [0, 1000000] (0 = as fast as possible)"},
    INT_FIELD(HAKOI_LAUNCH_KEY_STOP_AT_USEC, hakoi_launch_config_t, stop_at_usec, 0, INT64_MAX / 2,
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
    {.key = "trace",
     .kind = HAKOI_K_CUSTOM,
     .parse = parse_trace,
     .expect = "a string (a file, relative to the launch file)"},
    HAKOI_END,
};

/* ---- the top level ---- */

int hakoi_launch_check_domain(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
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
int hakoi_launch_check_log_dir(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_launch_config_t *cfg = base;
	struct ctx *c = ctx_of(w);
	if (cfg->log_dir == NULL && (cfg->log_dir = default_log_dir(cfg->file)) == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	if ((cfg->log_dir_abs = hakoi_launch_join(c->cwd, cfg->log_dir)) == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	c->var_log_dir = cfg->log_dir_abs;
	return 0;
}

static int parse_path_elem(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hakoi_launch_parse_folder(w, v, base);
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
	hakoi_walk_push_key(w, HAKOI_LAUNCH_KEY_PROCESSES);
	return cfg->procs_given ? hakoi_walk_fail(w, "must not be empty")
	                        : hakoi_walk_fail_missing(w, "an array of processes");
}

static const hakoi_field_t path_elem = {.kind = HAKOI_K_CUSTOM, .parse = parse_path_elem};
static const hakoi_field_t process_elem = {.kind = HAKOI_K_CUSTOM,
                                           .parse = hakoi_launch_parse_process};

const hakoi_field_t hakoi_launch_top_fields[] = {
    HAKOI_IGNORE("$schema"),
    EXPANDED("domain", 0, hakoi_launch_config_t, domain),
    HAKOI_CHECK(hakoi_launch_check_domain),
    {.key = HAKOI_LAUNCH_KEY_CONDUCTOR, .kind = HAKOI_K_OBJECT, .fields = conductor_fields},
    EXPANDED(HAKOI_LAUNCH_KEY_LOG_DIR, 0, hakoi_launch_config_t, log_dir),
    HAKOI_CHECK(hakoi_launch_check_log_dir),
    {.key = HAKOI_LAUNCH_KEY_PATH,
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hakoi_launch_config_t, path, path_count),
     .elem = &path_elem,
     .expect = "an array of folders"},
    INT_FIELD("grace_ms", hakoi_launch_config_t, grace_ms, 0, 3600000,
              "an integer in [0, 3600000] (ms)"),
    {.key = HAKOI_LAUNCH_KEY_PROCESSES,
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hakoi_launch_config_t, procs, proc_count),
     .elem = &process_elem,
     .present = HAKOI_PRESENT(hakoi_launch_config_t, procs_given),
     .expect = "an array of processes"},
    HAKOI_CHECK(check_processes),
    HAKOI_OBJECT("viewer", 0, hakoi_launch_config_t, viewer, hakoi_launch_viewer_fields),
    HAKOI_OBJECT("record", 0, hakoi_launch_config_t, record, hakoi_launch_record_fields),
    HAKOI_END,
};
