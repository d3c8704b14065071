/* "viewer" of a launch file (launch_config.c has the loader): hako-viewer on the launch's
 * domain, found beside hako-launch, as a process of the launch that is never awaited. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch_config_internal.h"

/* ---- the viewer ---- */

/* viewer.pdudef, viewer.rd: a file, relative to the launch file, that must exist. */
static int parse_viewer_file(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	char *rel = NULL;
	int r = hakoi_launch_parse_expanded(w, v, &rel, &(hakoi_field_t){.flags = 0});
	if (r != 0) {
		return r;
	}
	char **dst = (char **)(void *)((char *)base + f->offset);
	free(*dst);
	*dst = hakoi_launch_join(ctx_of(w)->cfg->dir, rel);
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

/* The program `name`: beside hako-launch (the build tree's bin/, or the installed bin/), else
 * where any command is looked for. */
static int find_beside(hakoi_walk_t *w, const char *name, char **exe)
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
	int r = hakoi_launch_resolve_command_in(w, NULL, name, (const char *const *)&first, nfirst,
	                                        exe);
	free(first);
	return r;
}

/* A process that the launch adds itself (the viewer, the recorder): named `name`, so its log is
 * <name>.log and no process of the file may have that name; run by `program`, found beside
 * hako-launch, with room for max_args arguments; never awaited. */
static int own_process(hakoi_walk_t *w, hakoi_launch_proc_t *p, const char *name,
                       const char *program, size_t max_args)
{
	const hakoi_launch_config_t *cfg = ctx_of(w)->cfg;
	for (size_t i = 0; i < cfg->proc_count; i++) {
		if (strcmp(cfg->procs[i].name, name) == 0) {
			return hakoi_walk_fail(w,
			                       "its log is %s.log, as is the log of "
			                       "processes[%zu] (\"%s\"): rename that process",
			                       name, i, name);
		}
	}
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->phase = HAKOI_LAUNCH_PHASE_RUN;
	p->wait_for = HAKOI_LAUNCH_WAIT_NOTHING;
	if ((p->command = strdup(program)) == NULL ||
	    (p->args = calloc(max_args, sizeof(char *))) == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	return find_beside(w, program, &p->exe);
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
	p->viewer = 1;
	p->echo = 0; /* its URLs are said by hako-launch */
	int r = own_process(w, p, "viewer", "hako-viewer", 12);
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
	return hakoi_launch_set_argv(w, p);
}

const hakoi_field_t hakoi_launch_viewer_fields[] = {
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

/* ---- the recorder ---- */

/* record.file: a file name under the log folder (no "..": the recording stays there). */
static int check_record_file(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	const char *s = *(char **)(void *)((char *)base + f->offset);
	if (s[0] == '\0' || s[0] == '/' || strstr(s, "..") != NULL) {
		return hakoi_walk_fail(w, "'%s': a file name under the log folder, without '..'",
		                       s);
	}
	return 0;
}

/* The recorder as a process of the launch: hako-record -d <domain> -o <log_dir>/<file>
 * [--pdudef ...] [--pdu ...]... [--robot ...]... [--rate-hz ...] [--asset NAME --until-stop],
 * its output in <log_dir>/record.log. */
static int check_record(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_launch_record_t *rc = base;
	const hakoi_launch_config_t *cfg = ctx_of(w)->cfg;
	hakoi_launch_proc_t *p = &rc->proc;
	rc->enabled = 1;
	p->recorder = 1;
	p->echo = 1;
	int r =
	    own_process(w, p, "record", "hako-record", 16 + 2 * (rc->pdu_count + rc->robot_count));
	if (r != 0) {
		return r;
	}
	char *out =
	    hakoi_launch_join(cfg->log_dir_abs, rc->file != NULL ? rc->file : "record.mcap");
	if (out == NULL || add_arg(p, "-d") != 0 || add_arg(p, cfg->domain) != 0 ||
	    add_arg(p, "-o") != 0 || add_arg(p, out) != 0 ||
	    (rc->pdudef != NULL && (add_arg(p, "--pdudef") != 0 || add_arg(p, rc->pdudef) != 0))) {
		free(out);
		return hakoi_walk_fail_oom(w);
	}
	free(out);
	for (size_t i = 0; i < rc->pdu_count; i++) {
		if (add_arg(p, "--pdu") != 0 || add_arg(p, rc->pdus[i]) != 0) {
			return hakoi_walk_fail_oom(w);
		}
	}
	for (size_t i = 0; i < rc->robot_count; i++) {
		if (add_arg(p, "--robot") != 0 || add_arg(p, rc->robots[i]) != 0) {
			return hakoi_walk_fail_oom(w);
		}
	}
	if (rc->rate_hz > 0) {
		char num[64];
		snprintf(num, sizeof(num), "%.17g", rc->rate_hz);
		if (add_arg(p, "--rate-hz") != 0 || add_arg(p, num) != 0) {
			return hakoi_walk_fail_oom(w);
		}
	}
	if (rc->asset != NULL && (add_arg(p, "--asset") != 0 || add_arg(p, rc->asset) != 0 ||
	                          add_arg(p, "--until-stop") != 0)) {
		return hakoi_walk_fail_oom(w);
	}
	return hakoi_launch_set_argv(w, p);
}

static const hakoi_field_t record_str_elem = {.kind = HAKOI_K_CUSTOM,
                                              .parse = hakoi_launch_parse_expanded};

const hakoi_field_t hakoi_launch_record_fields[] = {
    {.key = "file",
     .kind = HAKOI_K_CUSTOM,
     .offset = offsetof(hakoi_launch_record_t, file),
     .parse = hakoi_launch_parse_expanded,
     .check = check_record_file,
     .expect = "a string"},
    {.key = "pdudef",
     .kind = HAKOI_K_CUSTOM,
     .offset = offsetof(hakoi_launch_record_t, pdudef),
     .parse = parse_viewer_file,
     .expect = "a string"},
    {.key = "pdus",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hakoi_launch_record_t, pdus, pdu_count),
     .elem = &record_str_elem,
     .expect = "an array of strings (ROBOT/NAME, ROBOT:ID or NAME)"},
    {.key = "robots",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hakoi_launch_record_t, robots, robot_count),
     .elem = &record_str_elem,
     .expect = "an array of strings (robot names)"},
    {.key = "rate_hz",
     .kind = HAKOI_K_NUMBER,
     HAKOI_AT(hakoi_launch_record_t, rate_hz),
     .dmin = 0,
     .dmax = 1e6,
     .expect = "a number in [0, 1000000] (messages per PDU per second of world time)"},
    {.key = "asset",
     .kind = HAKOI_K_CUSTOM,
     .offset = offsetof(hakoi_launch_record_t, asset),
     .parse = hakoi_launch_parse_expanded,
     .expect = "a string (the recorder's asset name)"},
    HAKOI_CHECK(check_record),
    HAKOI_END,
};
