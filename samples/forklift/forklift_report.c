/* forklift-report: what happened in a forklift RD-Light run, checked.
 *
 *   forklift-report [--dir DIR] [--rd FILE]
 *
 * Run after the simulation (hako-launch's "after" phase). It reads the step records and the RD
 * traces the hosts wrote into DIR, and:
 *   - merges the records: every model step from 1 to the last was run exactly once;
 *   - runs the same model in this process, without RD, from the same mission for as many steps,
 *     and compares every step bit for bit (every field, and a hash of the whole packed state);
 *   - runs hako_rd_check on the traces (one writer per PDU at any time, current epochs only, no
 *     step run twice or skipped);
 *   - writes forklift-trace.csv, forklift-x.svg and forklift-summary.json into DIR;
 *   - prints a summary, and the absolute path of the plot as its last line.
 * Exit status 0 when continuity is exact and the trace check passed, 1 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <glob.h>
#include <string.h>
#include <unistd.h>

#include "forklift.h"
#include "forklift_plot.h"
#include "forklift_records.h"
#include "hako/rd.h"

struct report {
	const char *dir;
	char dir_abs[PATH_MAX];
	hako_rd_config_t *cfg;
	const hako_rd_eu_config_t *eu;
	forklift_steps_t files[HAKO_RD_MAX_NODES];
	size_t nfiles;
	forklift_mission_t mission;
	hako_time_t delta, dmax;
	char domain[128];
	double margin;
	forklift_run_t run;
	int merged;
	char merge_error[512];
	size_t identical;
	char mismatch[512];
	int exact;
	hako_rd_check_result_t check;
	int check_read;
	char check_error[1200];
	hako_time_t longest_gap;
	size_t longest_at; /* index in run.handoffs */
	/* --bridges N: the statistics the bridges of the nodes wrote (hako-bridge --stats-json,
	 * bridge-<node>.json in dir) */
	int bridges_wanted;
	size_t bridge_count;
	struct bridge_node {
		char node[64];
		uint64_t forwarded, stale, paused;
	} bridge[HAKO_RD_MAX_NODES + 1];
	char bridge_error[512];
	char csv[PATH_MAX], svg[PATH_MAX], summary[PATH_MAX];
};

static int load_records(struct report *R)
{
	char why[512];
	int have_mission = 0;
	for (size_t i = 0; i < R->eu->candidate_count; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/" FORKLIFT_STEPS_FMT, R->dir,
		         R->eu->candidates[i]);
		forklift_steps_t *f = &R->files[R->nfiles];
		if (forklift_steps_load(path, f, why, sizeof(why)) != 0) {
			fprintf(stderr, "forklift-report: %s\n", why);
			return -1;
		}
		if (why[0] != '\0') {
			printf("forklift-report: %s\n", why); /* a last line cut short, skipped */
		}
		R->nfiles++;
		if (R->nfiles == 1) {
			snprintf(R->domain, sizeof(R->domain), "%s", f->info.domain);
			R->delta = f->info.delta_usec;
			R->dmax = f->info.dmax_usec;
		} else if ((R->cfg->mode != HAKO_RD_MODE_FULL &&
		            strcmp(f->info.domain, R->domain) != 0) ||
		           f->info.dmax_usec != R->dmax) {
			/* RD-Full: each host is on its own node, in its own domain. */
			fprintf(
			    stderr,
			    "forklift-report: %s is from another run (domain %s, the others: %s)\n",
			    path, f->info.domain, R->domain);
			return -1;
		}
		if (f->info.have_mission) {
			R->mission = f->info.mission;
			have_mission++;
		}
	}
	if (have_mission != 1) {
		fprintf(stderr,
		        "forklift-report: %s the mission (the initial owner's record starts with "
		        "it)\n",
		        have_mission == 0 ? "no record has" : "more than one record has");
		return -1;
	}
	if (R->delta != FORKLIFT_DT_USEC) {
		fprintf(stderr,
		        "forklift-report: the records say delta %" PRId64 " us, the model "
		        "steps %d us\n",
		        (int64_t)R->delta, FORKLIFT_DT_USEC);
		return -1;
	}
	return 0;
}

static void check_traces(struct report *R)
{
	char paths[HAKO_RD_MAX_NODES][PATH_MAX];
	const char *list[HAKO_RD_MAX_NODES];
	size_t n = 0;
	for (size_t i = 0; i < R->eu->candidate_count; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/" FORKLIFT_TRACE_FMT, R->dir,
		         R->eu->candidates[i]);
		list[n++] = paths[i];
	}
	/* The controller's reads, when it traced them (--trace). */
	char ctl[PATH_MAX + 32];
	snprintf(ctl, sizeof(ctl), "%s/controller.trace.jsonl", R->dir);
	if (access(ctl, R_OK) == 0 && n < HAKO_RD_MAX_NODES) {
		list[n++] = ctl;
	}
	hako_error_t err;
	int r = hako_rd_check(list, n, &R->check, &err);
	R->check_read = r == 0;
	if (r != 0) {
		hako_error_format(&err, R->check_error, sizeof(R->check_error));
	}
}

/* One node's bridge statistics; -1 (and R->bridge_error) if the file is not usable. */
static int load_bridge(struct report *R, const char *path)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	json_t *conns = root != NULL ? json_object_get(root, "connections") : NULL;
	const char *node = root != NULL ? json_string_value(json_object_get(root, "node")) : NULL;
	if (node == NULL || !json_is_array(conns) || R->bridge_count >= HAKO_RD_MAX_NODES + 1) {
		snprintf(R->bridge_error, sizeof(R->bridge_error), "%.300s: %.150s", path,
		         root == NULL ? je.text : "not the statistics of hako-bridge --stats-json");
		json_decref(root);
		return -1;
	}
	struct bridge_node *b = &R->bridge[R->bridge_count++];
	memset(b, 0, sizeof(*b));
	snprintf(b->node, sizeof(b->node), "%s", node);
	size_t i;
	json_t *c;
	json_array_foreach(conns, i, c)
	{
		b->forwarded += (uint64_t)json_integer_value(json_object_get(c, "forwarded"));
		b->stale += (uint64_t)json_integer_value(json_object_get(c, "dropped_epoch"));
		b->paused += (uint64_t)json_integer_value(json_object_get(c, "dropped_paused"));
	}
	json_decref(root);
	return 0;
}

/* The nodes' bridges write their statistics when their node stops, about when this report
 * starts: wait up to 5 s for the N files. */
static void load_bridges(struct report *R)
{
	if (R->bridges_wanted <= 0) {
		return;
	}
	char pattern[PATH_MAX + 32];
	snprintf(pattern, sizeof(pattern), "%s/bridge-*.json", R->dir);
	for (int tries = 0; tries < 50; tries++) {
		glob_t g;
		size_t n = glob(pattern, 0, NULL, &g) == 0 ? g.gl_pathc : 0;
		if ((int)n >= R->bridges_wanted || tries == 49) {
			R->bridge_count = 0;
			for (size_t i = 0; i < n; i++) {
				load_bridge(R, g.gl_pathv[i]);
			}
			globfree(&g);
			if ((int)n < R->bridges_wanted) {
				snprintf(R->bridge_error, sizeof(R->bridge_error),
				         "%zu of %d bridge statistics files (%.300s) after 5 s", n,
				         R->bridges_wanted, pattern);
			}
			return;
		}
		globfree(&g);
		usleep(100000);
	}
}

static void print_bridges(const struct report *R)
{
	if (R->bridges_wanted <= 0) {
		return;
	}
	if (R->bridge_error[0] != '\0') {
		printf("  bridges        %s\n", R->bridge_error);
		return;
	}
	uint64_t fwd = 0;
	char stale[256] = "", paused[256] = "";
	size_t ns = 0, np = 0;
	for (size_t i = 0; i < R->bridge_count; i++) {
		const struct bridge_node *b = &R->bridge[i];
		fwd += b->forwarded;
		ns += (size_t)snprintf(stale + ns, ns < sizeof(stale) ? sizeof(stale) - ns : 0,
		                       "%s%s %" PRIu64, i > 0 ? ", " : "", b->node, b->stale);
		np += (size_t)snprintf(paused + np, np < sizeof(paused) ? sizeof(paused) - np : 0,
		                       "%s%s %" PRIu64, i > 0 ? ", " : "", b->node, b->paused);
	}
	printf("  bridges        %" PRIu64 " PDUs forwarded; dropped as of an older epoch: %s\n",
	       fwd, stale);
	printf("                 not sent from a node that did not own the EU: %s\n", paused);
}

static int write_csv(struct report *R)
{
	FILE *f = fopen(R->csv, "w");
	if (f == NULL) {
		return -1;
	}
	fputs("t,x,y,yaw,v,lift,phase,owner,epoch\n", f);
	for (size_t k = 0; k < R->run.steps; k++) {
		const forklift_record_t *r = &R->run.rec[k];
		fprintf(f, "%.3f,%.6f,%.6f,%.6f,%.6f,%.6f,%s,%u,%u\n", r->model_usec / 1e6, r->x,
		        r->y, r->yaw, r->v, r->lift, forklift_phase_name(r->phase), r->node,
		        r->epoch);
	}
	int bad = ferror(f);
	return fclose(f) != 0 || bad ? -1 : 0;
}

static int write_summary(struct report *R)
{
	json_t *check = json_pack(
	    "{s:b, s:I, s:I, s:I, s:I, s:I, s:s}", "ok", R->check_read && R->check.violations == 0,
	    "writes", (json_int_t)R->check.writes, "steps", (json_int_t)R->check.steps, "handoffs",
	    (json_int_t)R->check.handoffs, "reclaims", (json_int_t)R->check.reclaims, "violations",
	    (json_int_t)R->check.violations, "first_violation",
	    R->check_read ? R->check.first_violation : R->check_error);
	size_t handoffs = R->run.handoff_count - R->run.reclaims;
	json_t *root = json_pack(
	    "{s:s, s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:s, s:I, s:s, s:o, s:s, s:s}", "domain",
	    R->domain, "steps", (json_int_t)R->run.steps, "simulated_usec",
	    (json_int_t)(R->run.steps * (uint64_t)R->delta), "dmax_usec", (json_int_t)R->dmax,
	    "margin_m", R->margin, "handoffs", (json_int_t)handoffs, "reclaims",
	    (json_int_t)R->run.reclaims, "longest_gap_usec", (json_int_t)R->longest_gap,
	    "continuity", R->exact ? "exact" : "broken", "identical_steps",
	    (json_int_t)R->identical, "first_mismatch", R->merged ? R->mismatch : R->merge_error,
	    "check", check, "csv", R->csv, "svg", R->svg);
	if (root == NULL) {
		return -1;
	}
	if (R->bridges_wanted > 0) {
		json_t *bs = json_array();
		for (size_t i = 0; i < R->bridge_count; i++) {
			const struct bridge_node *b = &R->bridge[i];
			json_array_append_new(bs,
			                      json_pack("{s:s, s:I, s:I, s:I}", "node", b->node,
			                                "forwarded", (json_int_t)b->forwarded,
			                                "dropped_epoch", (json_int_t)b->stale,
			                                "dropped_paused", (json_int_t)b->paused));
		}
		json_object_set_new(root, "bridges", bs);
	}
	int r = json_dump_file(root, R->summary, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	return r;
}

static void figures(struct report *R, char *buf, size_t len)
{
	size_t handoffs = R->run.handoff_count - R->run.reclaims;
	int n = snprintf(buf, len, "%zu hand-off%s", handoffs, handoffs == 1 ? "" : "s");
	if (R->run.reclaims > 0) {
		n += snprintf(buf + n, len - (size_t)n, ", %zu reclaim%s", R->run.reclaims,
		              R->run.reclaims == 1 ? "" : "s");
	}
	if (R->run.handoff_count > 0) {
		n += snprintf(buf + n, len - (size_t)n, " \xc2\xb7 longest gap %.0f ms",
		              R->longest_gap / 1e3);
	}
	n += snprintf(buf + n, len - (size_t)n, " \xc2\xb7 continuity %s (%zu/%zu steps)",
	              R->exact ? "exact" : "BROKEN", R->identical, R->run.steps);
	n += snprintf(buf + n, len - (size_t)n, " \xc2\xb7 hako-rd check %s",
	              R->check_read && R->check.violations == 0 ? "ok" : "FAILED");
	if (R->cfg->mode == HAKO_RD_MODE_FULL && strcmp(R->cfg->trigger.type, "boundary") != 0) {
		snprintf(buf + n, len - (size_t)n,
		         " \xc2\xb7 Dmax %.0f ms \xc2\xb7 a move every %.0f s", R->dmax / 1e3,
		         (double)R->cfg->trigger.period_usec / 1e6);
	} else {
		snprintf(buf + n, len - (size_t)n,
		         " \xc2\xb7 Dmax %.0f ms \xe2\x86\x92 margin %.1f cm", R->dmax / 1e3,
		         R->margin * 100);
	}
}

static void print_summary(struct report *R)
{
	size_t handoffs = R->run.handoff_count - R->run.reclaims;
	size_t to[2] = {0, 0};
	for (size_t i = 0; i < R->run.handoff_count; i++) {
		const forklift_handoff_t *h = &R->run.handoffs[i];
		if (!h->reclaim) {
			to[h->to == R->eu->candidates[0] ? 0 : 1]++;
		}
	}
	if (R->cfg->mode == HAKO_RD_MODE_FULL && strcmp(R->cfg->trigger.type, "boundary") == 0) {
		printf(
		    "forklift RD-Full: %.3f s simulated across nodes, Dmax %.0f ms, the conductor "
		    "committing a move at the x = %.3f m boundary\n",
		    R->run.steps * (double)R->delta / 1e6, R->dmax / 1e3, R->cfg->trigger.boundary);
	} else if (R->cfg->mode == HAKO_RD_MODE_FULL) {
		printf(
		    "forklift RD-Full: %.3f s simulated across nodes, Dmax %.0f ms, the conductor "
		    "committing a move every %.3f s\n",
		    R->run.steps * (double)R->delta / 1e6, R->dmax / 1e3,
		    (double)R->cfg->trigger.period_usec / 1e6);
	} else {
		printf(
		    "forklift RD-Light: %.3f s simulated in domain %s, Dmax %.0f ms, margin %.1f "
		    "cm\n",
		    R->run.steps * (double)R->delta / 1e6, R->domain, R->dmax / 1e3,
		    R->margin * 100);
	}
	printf("  hand-offs      %zu (%u -> %u: %zu, %u -> %u: %zu), %zu reclaim%s\n", handoffs,
	       R->eu->candidates[0], R->eu->candidates[1], to[1], R->eu->candidates[1],
	       R->eu->candidates[0], to[0], R->run.reclaims, R->run.reclaims == 1 ? "" : "s");
	if (R->run.handoff_count > 0 && R->longest_gap == 0) {
		printf(
		    "  longest gap    0 ms: every new owner ran the next step right after the old "
		    "owner's last\n");
	} else if (R->run.handoff_count > 0) {
		const forklift_handoff_t *h = &R->run.handoffs[R->longest_at];
		printf("  longest gap    %.0f ms of world time without a stepping owner (epoch %u, "
		       "t=%.3f s)\n",
		       R->longest_gap / 1e3, h->epoch, h->t_usec / 1e6);
	}
	if (R->merged && R->run.lost > 0) {
		printf("  lost records   %zu: %s; filled in from the single-process run\n",
		       R->run.lost, R->run.lost_note);
	}
	if (!R->merged) {
		printf("  continuity     BROKEN: %s\n", R->merge_error);
	} else if (R->exact) {
		printf("  continuity     exact: %zu of %zu steps identical to the single-process "
		       "run\n",
		       R->identical, R->run.steps);
	} else {
		printf("  continuity     BROKEN after %zu identical steps: %s\n", R->identical,
		       R->mismatch);
	}
	if (!R->check_read) {
		printf("  hako-rd check  cannot read the traces: %s\n", R->check_error);
	} else if (R->check.violations == 0) {
		printf("  hako-rd check  ok: %" PRIu64 " PDU writes, %" PRIu64 " steps, %" PRIu64
		       " hand-offs, %" PRIu64 " reads, 0 violations\n",
		       R->check.writes, R->check.steps, R->check.handoffs, R->check.reads);
	} else {
		printf("  hako-rd check  FAILED: %" PRIu64 " violations, the first: %s\n",
		       R->check.violations, R->check.first_violation);
	}
	print_bridges(R);
	printf("  files          %s, %s in %s\n", FORKLIFT_OUT_CSV, FORKLIFT_OUT_SUMMARY,
	       R->dir_abs);
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: forklift-report [--dir DIR] [--rd FILE] [--bridges N]\n\n"
	        "Check and plot a forklift RD-Light run: reads the hosts' records and RD traces\n"
	        "in DIR, replays the model in one process and compares every step, runs the RD\n"
	        "trace check, writes %s, %s and %s into DIR.\n\n"
	        "options:\n"
	        "  --dir DIR   folder of the run (default: the current folder)\n"
	        "  --rd FILE   RD config (default: %s next to this program)\n"
	        "  --bridges N RD-Full: wait (up to 5 s) for the statistics of N bridges,\n"
	        "              DIR/bridge-*.json (hako-bridge --stats-json), and report them\n"
	        "  -h, --help  show this help\n\n"
	        "exit status: 0 continuity exact and trace check ok, 1 otherwise.\n",
	        FORKLIFT_OUT_CSV, FORKLIFT_OUT_SVG, FORKLIFT_OUT_SUMMARY, FORKLIFT_RD_CONFIG);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"dir", required_argument, NULL, 'd'},
	                                         {"rd", required_argument, NULL, 'r'},
	                                         {"bridges", required_argument, NULL, 'b'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	static struct report R;
	char rd_default[PATH_MAX];
	const char *rd_path = NULL;
	int c;
	R.dir = ".";
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': R.dir = optarg; break;
		case 'r': rd_path = optarg; break;
		case 'b': R.bridges_wanted = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "forklift-report: %s '%s'\n",
			        c == ':' ? "missing value for" : "unknown option",
			        argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "forklift-report: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (realpath(R.dir, R.dir_abs) == NULL) {
		fprintf(stderr, "forklift-report: %s: %s\n", R.dir, strerror(errno));
		return 1;
	}
	R.dir = R.dir_abs;
	if (rd_path == NULL) {
		rd_path = forklift_config_path(FORKLIFT_RD_CONFIG, rd_default, sizeof(rd_default));
	}
	hako_error_t err;
	char msg[1200];
	if (hako_rd_config_load(rd_path, &R.cfg, &err) != 0) {
		fprintf(stderr, "forklift-report: %s\n", hako_error_format(&err, msg, sizeof(msg)));
		return 1;
	}
	int rc = 1;
	R.eu = hako_rd_config_eu(R.cfg, FORKLIFT_EU);
	if (R.eu == NULL || R.eu->candidate_count != 2) {
		fprintf(stderr, "forklift-report: %s: no EU \"%s\" with two candidate nodes\n",
		        rd_path, FORKLIFT_EU);
		goto out;
	}
	if (load_records(&R) != 0) {
		goto out;
	}
	/* RD-Full: the ExMonitor's margin between two client nodes, v_max * 2 Dmax. */
	R.margin = hako_rd_trigger_margin(&R.cfg->trigger,
	                                  (R.cfg->mode == HAKO_RD_MODE_FULL ? 2 : 1) * R.dmax);

	R.merged = forklift_run_merge(R.files, R.nfiles, &R.run, R.merge_error,
	                              sizeof(R.merge_error)) == 0;
	if (R.merged) {
		R.identical =
		    forklift_run_replay(&R.run, &R.mission, R.mismatch, sizeof(R.mismatch));
		R.exact = R.identical == R.run.steps && R.run.steps > 0;
		if (R.run.steps == 0) {
			snprintf(R.mismatch, sizeof(R.mismatch), "no model step was run");
		}
		for (size_t i = 0; i < R.run.handoff_count; i++) {
			hako_time_t gap = R.run.handoffs[i].gap_usec - R.delta;
			if (gap > R.longest_gap || i == 0) {
				R.longest_gap = gap > 0 ? gap : 0;
				R.longest_at = i;
			}
		}
	}
	check_traces(&R);
	load_bridges(&R);

	snprintf(R.csv, sizeof(R.csv), "%s/%s", R.dir, FORKLIFT_OUT_CSV);
	snprintf(R.svg, sizeof(R.svg), "%s/%s", R.dir, FORKLIFT_OUT_SVG);
	snprintf(R.summary, sizeof(R.summary), "%s/%s", R.dir, FORKLIFT_OUT_SUMMARY);
	print_summary(&R);
	if (write_summary(&R) != 0) {
		fprintf(stderr, "forklift-report: cannot write %s\n", R.summary);
		goto out;
	}
	if (!R.merged) {
		goto out; /* no run to draw */
	}
	char fig[512];
	figures(&R, fig, sizeof(fig));
	forklift_plot_t plot = {&R.run,
	                        R.cfg->trigger.boundary,
	                        R.margin,
	                        R.cfg->mode == HAKO_RD_MODE_FULL
	                            ? "Forklift RD-Full: x over world time, coloured by owner node"
	                            : "Forklift RD-Light: x over world time, coloured by owner",
	                        fig,
	                        {R.eu->candidates[0], R.eu->candidates[1]},
	                        strcmp(R.cfg->trigger.type, "boundary") != 0,
	                        R.cfg->mode == HAKO_RD_MODE_FULL};
	if (write_csv(&R) != 0 || forklift_plot_svg(R.svg, &plot) != 0) {
		fprintf(stderr, "forklift-report: cannot write into %s: %s\n", R.dir,
		        strerror(errno));
		goto out;
	}
	rc = R.exact && R.check_read && R.check.violations == 0 ? 0 : 1;
	printf("%s\n", R.svg);
out:
	forklift_run_free(&R.run);
	for (size_t i = 0; i < R.nfiles; i++) {
		forklift_steps_free(&R.files[i]);
	}
	hako_rd_config_free(R.cfg);
	return rc;
}
