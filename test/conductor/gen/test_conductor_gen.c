/* hako-conductor gen: data-driven cases (cases/<name>/eu-input.json + expected.txt).
 *
 * expected.txt is the exact error line, or "ok" followed by the federation as read
 * (hakoi_gen_dump), the warnings ("warning: file:line:column: ..."), and then, for the files the
 * case generated into a temporary folder, what hako's own loaders made of each: every node's
 * conductor file (hako_conductor_config_load), pdudef (hako_pdudef_load), endpoint container
 * (hako_endpoint_container_load), bridge file (hako_bridge_config_load) and launch file, and the
 * federation file (the hako-launch loader, which also checks the nodes against each other). A
 * file that does not load fails the case with the loader's error line. With mode "rd", every
 * node's RD config too (hako_rd_config_load): the same bytes on every node, named by every
 * conductor file, and no bridge connection that hako-bridge --rd would refuse; the launch files'
 * processes are printed with their arguments and environment (the output folder as "DIR").
 *
 * The hako-launch files are also held to hako_launch_keys.h, the keys gen and hako-launch share:
 * a launch or federation file gen writes holds no key the header does not name, and every key
 * the header names is written by some case, so that the reader, which refuses a key it does not
 * know, has loaded each of them (every_launch_key_written, after the cases).
 *
 * The environment is fixed: PATH=/usr/bin:/bin (units' commands such as "true" are found
 * there), hako-bridge and hako-rd are found in the build tree (HAKO_BRIDGE_DIR, HAKO_RD_DIR).
 * Shared inputs (pdutypes, a pdudef) are in fixtures/, next to cases/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conductor_gen.h"
#include "hako/bridge_config.h"
#include "hako/endpoint_config.h"
#include "hako/rd.h"
#include "hako_cases.h"
#include "hako_launch_keys.h"
#include "hako_test_util.h"
#include "launch_config.h"

#define MIN_CASES 20

#ifndef HAKO_BRIDGE_DIR
#error "HAKO_BRIDGE_DIR: the folder of hako-bridge"
#endif
#ifndef HAKO_RD_DIR
#error "HAKO_RD_DIR: the folder of hako-rd"
#endif

static const char *cases_dir = "cases";

struct collect {
	char *out;
	size_t len;
	char lines[8192];
};

static void on_warning(void *user, const char *line)
{
	struct collect *c = user;
	htc_append(c->lines, sizeof(c->lines), "warning: %s\n", line);
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* Load one generated file with its loader; a failure is the case's failure, with the line. */
static void must(int r, const hako_error_t *err, const char *what)
{
	if (r != 0) {
		char msg[1200];
		print_error("%s does not load: %s\n", what,
		            hako_error_format(err, msg, sizeof(msg)));
		fail();
	}
}

/* snprintf's result: the whole text fitted. */
static int fits(int n, size_t size)
{
	return n >= 0 && (size_t)n < size;
}

/* s after prefix, with the output folder dir written "DIR". */
static void append_in_dir(char *out, size_t len, const char *prefix, const char *s, const char *dir)
{
	size_t n = strlen(dir);
	if (strncmp(s, dir, n) == 0) {
		htc_append(out, len, "%sDIR%s", prefix, s + n);
	} else {
		htc_append(out, len, "%s%s", prefix, s);
	}
}

/* The keys of hako_launch_keys.h, by the object gen writes them in; written: by some case. */
static struct launch_key {
	const char *in;
	const char *key;
	int written;
} launch_keys[] = {
    {"launch file", HAKOI_LAUNCH_KEY_LOG_DIR, 0},
    {"launch file", HAKOI_LAUNCH_KEY_PATH, 0},
    {"launch file", HAKOI_LAUNCH_KEY_CONDUCTOR, 0},
    {"launch file", HAKOI_LAUNCH_KEY_PROCESSES, 0},
    {"conductor", HAKOI_LAUNCH_KEY_CONDUCTOR_FILE, 0},
    {"conductor", HAKOI_LAUNCH_KEY_REAL_TIME_FACTOR, 0},
    {"conductor", HAKOI_LAUNCH_KEY_STOP_AT_USEC, 0},
    {"process", HAKOI_LAUNCH_KEY_PROC_NAME, 0},
    {"process", HAKOI_LAUNCH_KEY_PROC_COMMAND, 0},
    {"process", HAKOI_LAUNCH_KEY_PROC_ARGS, 0},
    {"process", HAKOI_LAUNCH_KEY_PROC_ENV, 0},
    {"process", HAKOI_LAUNCH_KEY_PROC_WAIT_FOR, 0},
    {"wait_for", HAKOI_LAUNCH_KEY_WAIT_ASSET, 0},
    {"wait_for", HAKOI_LAUNCH_KEY_WAIT_LOG, 0},
    {"federation file", HAKOI_LAUNCH_KEY_FEDERATION, 0},
    {"federation file", HAKOI_LAUNCH_KEY_LOG_DIR, 0},
    {"federation", HAKOI_LAUNCH_KEY_NODES, 0},
};

#define LAUNCH_KEY_COUNT (sizeof(launch_keys) / sizeof(launch_keys[0]))

/* Every member of obj (the object `in` of file) is a key of hako_launch_keys.h there. */
static void check_keys(json_t *obj, const char *in, const char *file)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		size_t i = 0;
		while (i < LAUNCH_KEY_COUNT && (strcmp(launch_keys[i].in, in) != 0 ||
		                                strcmp(launch_keys[i].key, key) != 0)) {
			i++;
		}
		if (i == LAUNCH_KEY_COUNT) {
			print_error("%s: %s: key \"%s\" is not in hako_launch_keys.h\n", file, in,
			            key);
			fail();
		}
		launch_keys[i].written = 1;
	}
}

/* The keys of a launch file gen wrote (federation: of the federation file). */
static void check_launch_keys(const char *path, int federation)
{
	json_error_t jerr;
	json_t *doc = json_load_file(path, 0, &jerr);
	assert_non_null(doc);
	if (federation) {
		check_keys(doc, "federation file", path);
		check_keys(json_object_get(doc, HAKOI_LAUNCH_KEY_FEDERATION), "federation", path);
		json_decref(doc);
		return;
	}
	check_keys(doc, "launch file", path);
	check_keys(json_object_get(doc, HAKOI_LAUNCH_KEY_CONDUCTOR), "conductor", path);
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(doc, HAKOI_LAUNCH_KEY_PROCESSES), i, p)
	{
		check_keys(p, "process", path);
		check_keys(json_object_get(p, HAKOI_LAUNCH_KEY_PROC_WAIT_FOR), "wait_for", path);
	}
	json_decref(doc);
}

/* The EU whose writes hold robot.pdu, or -1. */
static int eu_of(const hako_rd_config_t *rd, const char *robot, const char *pdu)
{
	for (size_t e = 0; e < rd->eu_count; e++) {
		const hako_rd_eu_config_t *eu = &rd->eus[e];
		for (size_t k = 0; k < eu->write_count; k++) {
			if (strcmp(eu->robot, robot) == 0 && strcmp(eu->writes[k].name, pdu) == 0) {
				return (int)e;
			}
		}
	}
	return -1;
}

/* What hako-bridge --rd refuses (hako/rd_route.h): a connection that carries an EU's PDUs
 * without epoch_validation, or with PDUs of another EU or of none. */
static void check_rd_routes(const hako_bridge_config_t *b, const char *dir, const char *id)
{
	char path[PATH_MAX];
	hako_error_t err;
	hako_rd_config_t *rd = NULL;
	assert_true(fits(snprintf(path, sizeof(path), "%s/%s/rd.json", dir, id), sizeof(path)));
	must(hako_rd_config_load(path, &rd, &err), &err, path);
	for (size_t i = 0; i < b->connection_count; i++) {
		const hako_bridge_connection_cfg_t *cn = &b->connections[i];
		int eu = -2; /* -2: no PDU seen yet */
		for (size_t t = 0; t < cn->transfer_count; t++) {
			const hako_bridge_group_cfg_t *gr = &b->groups[cn->transfers[t].group];
			for (size_t k = 0; k < gr->count; k++) {
				int e = eu_of(rd, gr->pdus[k].robot, gr->pdus[k].pdu);
				if (eu != -2 && e != eu) {
					print_error(
					    "%s: connection %s mixes PDUs of EU %d and %d\n", id,
					    cn->id, eu, e);
					fail();
				}
				eu = e;
			}
		}
		if (eu >= 0 && !cn->epoch_validation) {
			print_error("%s: connection %s carries EU %d without epoch_validation\n",
			            id, cn->id, eu);
			fail();
		}
	}
	hako_rd_config_free(rd);
}

/* Every node's RD config: the same bytes (the runtime compares their hash), and what the RD
 * loader made of it. */
static void check_rd(const hakoi_gen_t *g, const char *dir, char *out, size_t len)
{
	char path[PATH_MAX];
	char *first = NULL;
	size_t first_len = 0;
	for (size_t n = 0; n < g->node_count; n++) {
		assert_true(fits(snprintf(path, sizeof(path), "%s/%s/rd.json", dir, g->nodes[n].id),
		                 sizeof(path)));
		size_t l = 0;
		char *text = htc_read_all(path, &l);
		assert_non_null(text);
		if (first == NULL) {
			first = text;
			first_len = l;
			continue;
		}
		assert_int_equal(l, first_len);
		assert_memory_equal(text, first, l);
		free(text);
	}
	free(first);
	hako_error_t err;
	hako_rd_config_t *rd = NULL;
	assert_true(
	    fits(snprintf(path, sizeof(path), "%s/%s/rd.json", dir, g->nodes[0].id), sizeof(path)));
	must(hako_rd_config_load(path, &rd, &err), &err, path);
	assert_int_equal(rd->mode, HAKO_RD_MODE_FULL);
	htc_append(out, len, "rd.json: the same %zu bytes on %zu nodes; trigger %s, timeout %lld,",
	           first_len, g->node_count, rd->trigger.type, (long long)rd->handoff_timeout_usec);
	for (size_t i = 0; i < rd->node_count; i++) {
		htc_append(out, len, " node %u %s", rd->node_ids[i], rd->node_names[i]);
	}
	htc_append(out, len, "\n");
	for (size_t e = 0; e < rd->eu_count; e++) {
		const hako_rd_eu_config_t *eu = &rd->eus[e];
		htc_append(out, len, "rd.json: eu %u %s robot %s writes", eu->id, eu->name,
		           eu->robot);
		for (size_t k = 0; k < eu->write_count; k++) {
			htc_append(out, len, "%s%s(ch %d)", k > 0 ? "," : " ", eu->writes[k].name,
			           (int)eu->writes[k].channel_id);
		}
		htc_append(out, len, " candidates");
		for (size_t k = 0; k < eu->candidate_count; k++) {
			htc_append(out, len, "%s%u", k > 0 ? "," : " ", eu->candidates[k]);
		}
		htc_append(out, len,
		           " initial %u context %u bytes; status %s(ch %d, %u bytes) context "
		           "%s(ch %d, %u bytes)\n",
		           eu->initial_owner, eu->max_context_bytes, eu->status.name,
		           (int)eu->status.channel_id, eu->status.pdu_size, eu->context.name,
		           (int)eu->context.channel_id, eu->context.pdu_size);
	}
	hako_rd_config_free(rd);
}

/* What the loaders say about node n's files, one line each. */
static void check_node(const hakoi_gen_t *g, size_t n, const char *dir, char *out, size_t len)
{
	const char *id = g->nodes[n].id;
	char path[PATH_MAX];
	hako_error_t err;

	assert_true(fits(snprintf(path, sizeof(path), "%s/%s/conductor/%s.json", dir, id, id),
	                 sizeof(path)));
	hako_conductor_config_t *cc = NULL;
	must(hako_conductor_config_load(path, &cc, &err), &err, path);
	assert_string_equal(cc->node_id, id);
	assert_int_equal(cc->role, n == 0 ? HAKO_CONDUCTOR_SERVER : HAKO_CONDUCTOR_CLIENT);
	htc_append(out, len, "node %s: conductor %s delta %lld dmax %lld control %s time %s", id,
	           cc->role == HAKO_CONDUCTOR_SERVER ? "server" : "client",
	           (long long)cc->delta_usec, (long long)cc->max_delay_usec, cc->control_address,
	           cc->time_address);
	for (size_t i = 0; i < cc->client_count; i++) {
		htc_append(out, len, "%s%s", i == 0 ? " clients " : ",", cc->clients[i]);
	}
	htc_append(out, len, "\n");
	/* mode "rd": the node's own RD config, resolved against the conductor file */
	char rd[PATH_MAX];
	assert_true(
	    fits(snprintf(rd, sizeof(rd), "%s/%s/conductor/../rd.json", dir, id), sizeof(rd)));
	assert_string_equal(cc->rd_config_path, g->rd ? rd : "");
	hako_conductor_config_free(cc);

	assert_true(
	    fits(snprintf(path, sizeof(path), "%s/%s/%s", dir, id, g->pdudef_name), sizeof(path)));
	if (exists(path)) {
		hako_pdudef_t *def = NULL;
		must(hako_pdudef_load(path, &def, &err), &err, path);
		htc_append(out, len, "node %s: pdudef %zu robots\n", id, def->robot_count);
		hako_pdudef_free(def);
	}

	assert_true(
	    fits(snprintf(path, sizeof(path), "%s/%s/endpoints.json", dir, id), sizeof(path)));
	if (exists(path)) {
		hako_endpoint_container_t *c = NULL;
		must(hako_endpoint_container_load(path, id, &c, &err), &err, path);
		htc_append(out, len, "node %s: endpoints", id);
		for (size_t i = 0; i < c->count; i++) {
			const hako_comm_config_t *cm = c->entries[i].config->comm;
			htc_append(out, len, " %s(%s", c->entries[i].id,
			           hako_comm_protocol_name(cm));
			if (cm->role != HAKO_COMM_ROLE_NONE) {
				htc_append(out, len, " %s %s:%u",
				           cm->role == HAKO_COMM_SERVER ? "listens" : "connects",
				           cm->role == HAKO_COMM_SERVER ? cm->local.address
				                                        : cm->remote.address,
				           cm->role == HAKO_COMM_SERVER ? cm->local.port
				                                        : cm->remote.port);
			}
			const hako_comm_shm_options_t *shm = hako_comm_shm_options(cm);
			for (size_t r = 0; shm != NULL && r < shm->robot_count; r++) {
				for (size_t k = 0; k < shm->robots[r].pdu_count; k++) {
					htc_append(out, len, " %s.%s%s", shm->robots[r].name,
					           shm->robots[r].pdus[k].name,
					           shm->robots[r].pdus[k].notify_on_recv ? "!"
					                                                 : "");
				}
			}
			htc_append(out, len, ")");
		}
		htc_append(out, len, "\n");
		hako_endpoint_container_free(c);

		assert_true(
		    fits(snprintf(path, sizeof(path), "%s/%s/bridge.json", dir, id), sizeof(path)));
		hako_bridge_config_t *b = NULL;
		must(hako_bridge_config_load(path, id, NULL, &b, &err), &err, path);
		for (size_t i = 0; i < b->connection_count; i++) {
			const hako_bridge_connection_cfg_t *cn = &b->connections[i];
			htc_append(out, len, "node %s: bridge %s:", id, cn->id);
			for (size_t d = 0; d < cn->dest_count; d++) {
				htc_append(out, len, " %s", cn->destinations[d]);
			}
			for (size_t t = 0; t < cn->transfer_count; t++) {
				const hako_bridge_policy_cfg_t *p =
				    &b->policies[cn->transfers[t].policy];
				htc_append(out, len, " [%s %s%s %u]",
				           b->groups[cn->transfers[t].group].id,
				           p->type == HAKO_BRIDGE_IMMEDIATE  ? "immediate"
				           : p->type == HAKO_BRIDGE_THROTTLE ? "throttle"
				                                             : "ticker",
				           p->atomic ? " atomic" : "", p->interval_ms);
			}
			htc_append(out, len, "%s\n", cn->epoch_validation ? " epoch" : "");
		}
		if (g->rd) {
			check_rd_routes(b, dir, id);
		}
		hako_bridge_config_free(b);
	}

	assert_true(fits(snprintf(path, sizeof(path), "%s/%s/launch.json", dir, id), sizeof(path)));
	const char *search[] = {HAKO_BRIDGE_DIR, HAKO_RD_DIR};
	hakoi_launch_options_t opt = {"gen-test", search, 2};
	hakoi_launch_config_t *lc = NULL;
	check_launch_keys(path, 0);
	must(hakoi_launch_load(path, &opt, &lc, &err), &err, path);
	for (size_t i = 0; i < lc->path_count; i++) {
		htc_append(out, len, "node %s: launch path %s\n", id, lc->path[i]);
	}
	htc_append(out, len, "node %s: launch log_dir %s stop_at %lld rtf %g processes", id,
	           lc->log_dir, (long long)lc->stop_at_usec, lc->master.real_time_factor);
	for (size_t i = 0; i < lc->proc_count; i++) {
		htc_append(out, len, " %s", lc->procs[i].name);
		if (lc->procs[i].wait_for == HAKOI_LAUNCH_WAIT_ASSET) {
			htc_append(out, len, "(asset %s)", lc->procs[i].wait_what);
		}
	}
	htc_append(out, len, "\n");
	for (size_t i = 0; g->rd && i < lc->proc_count; i++) {
		const hakoi_launch_proc_t *p = &lc->procs[i];
		htc_append(out, len, "node %s: process %s: %s", id, p->name, p->command);
		for (size_t a = 0; a < p->arg_count; a++) {
			append_in_dir(out, len, " ", p->args[a], dir);
		}
		for (size_t e = 0; e < p->env_count; e++) {
			htc_append(out, len, " %s%s=", e == 0 ? "env " : "", p->env[e].key);
			append_in_dir(out, len, "", p->env[e].value, dir);
		}
		htc_append(out, len, "\n");
	}
	hakoi_launch_free(lc);
}

static void run_case_text(const char *case_dir, const char *input, char *actual, size_t len);

/* With GEN_CASES_ACTUAL set, each case's output also goes to <case>/actual.txt, paths relative
 * to the case as in expected.txt: to review a change, and copy over expected.txt. */
static void run_case(const char *case_dir, const char *input, char *actual, size_t len, void *arg)
{
	(void)arg;
	run_case_text(case_dir, input, actual, len);
	if (getenv("GEN_CASES_ACTUAL") == NULL) {
		return;
	}
	char path[PATH_MAX + 16];
	assert_true(fits(snprintf(path, sizeof(path), "%s/actual.txt", case_dir), sizeof(path)));
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	char prefix[PATH_MAX + 2];
	snprintf(prefix, sizeof(prefix), "%s/", case_dir);
	size_t pl = strlen(prefix);
	for (const char *p = actual; *p != '\0'; p++) {
		if (strncmp(p, prefix, pl) == 0) {
			p += pl - 1; /* as hako_cases.c does: "<case>/x" is "x" */
			continue;
		}
		fputc(*p, f);
	}
	fclose(f);
}

static void run_case_text(const char *case_dir, const char *input, char *actual, size_t len)
{
	setenv("PATH", "/usr/bin:/bin", 1);
	unsetenv("HAKO_DOMAIN");
	struct collect c = {actual, len, ""};
	hakoi_gen_options_t opt = {.warn = on_warning, .warn_user = &c};
	/* Options a case may ask for in its folder: stop time and pace of the launch files, and
	 * a "path" folder, relative to the case, made absolute as hako-conductor gen --path does.
	 */
	char opts[PATH_MAX], rel[256], joined[PATH_MAX + 256], abs_path[PATH_MAX];
	const char *paths[1] = {abs_path};
	snprintf(opts, sizeof(opts), "%s/options.txt", case_dir);
	char *text = htc_read_all(opts, NULL);
	if (text != NULL) {
		int n =
		    sscanf(text, "base_port=%d stop_at_usec=%lld real_time_factor=%lf path=%255s",
		           &opt.base_port, &opt.stop_at_usec, &opt.real_time_factor, rel);
		assert_true(n == 3 || n == 4);
		free(text);
		if (n == 4) {
			snprintf(joined, sizeof(joined), "%s/%s", case_dir, rel);
			assert_non_null(realpath(joined, abs_path));
			opt.path = paths;
			opt.path_count = 1;
		}
	}
	hakoi_gen_t *g = NULL;
	hako_error_t err;
	char msg[1200];
	actual[0] = '\0';
	int r = hakoi_gen_load(input, &opt, &g, &err);
	if (r != 0) {
		assert_null(g);
		assert_true(r == HAKO_ECONFIG || r == HAKO_ENOENT);
		snprintf(actual, len, "%s\n%s", hako_error_format(&err, msg, sizeof(msg)), c.lines);
		return;
	}
	FILE *out = fmemopen(actual, len, "w");
	assert_non_null(out);
	fprintf(out, "ok\n");
	hakoi_gen_dump(g, out);
	fputs(c.lines, out);
	fclose(out);

	char dir[PATH_MAX];
	assert_non_null(htu_tmpdir(dir, sizeof(dir)));
	size_t files = 0;
	must(hakoi_gen_write(g, dir, &files, &err), &err, "the generated files");
	htc_append(actual, len, "files %zu\n", files);
	for (size_t n = 0; n < g->node_count; n++) {
		check_node(g, n, dir, actual, len);
	}
	if (g->rd) {
		check_rd(g, dir, actual, len);
	}
	/* The federation file: every node's launch file again, and the checks between them. */
	char path[PATH_MAX + 32];
	assert_true(fits(snprintf(path, sizeof(path), "%s/federation.json", dir), sizeof(path)));
	const char *search[] = {HAKO_BRIDGE_DIR, HAKO_RD_DIR};
	hakoi_launch_options_t lopt = {"gen-test", search, 2};
	hakoi_launch_config_t *fed = NULL;
	check_launch_keys(path, 1);
	must(hakoi_launch_load(path, &lopt, &fed, &err), &err, path);
	htc_append(actual, len, "federation %zu nodes:", fed->node_count);
	for (size_t i = 0; i < fed->node_count; i++) {
		htc_append(actual, len, " %s", fed->nodes[i].domain);
	}
	htc_append(actual, len, "\n");
	hakoi_launch_free(fed);
	hakoi_gen_free(g);
	htu_remove_tmpdirs();
}

/* A missing eu-input is HAKO_ENOENT with the file named. */
static void missing_file(void **state)
{
	(void)state;
	hakoi_gen_t *g = NULL;
	hako_error_t err;
	char msg[1200];
	assert_int_equal(hakoi_gen_load("/nonexistent/eu-input.json", NULL, &g, &err), HAKO_ENOENT);
	assert_null(g);
	assert_string_equal(hako_error_format(&err, msg, sizeof(msg)),
	                    "/nonexistent/eu-input.json: cannot open: No such file or directory");
}

/* The output folder cannot be made: the error names the file. */
static void unwritable_dir(void **state)
{
	(void)state;
	char dir[PATH_MAX], input[PATH_MAX + 32], blocker[PATH_MAX + 32];
	assert_non_null(htu_tmpdir(dir, sizeof(dir)));
	snprintf(input, sizeof(input), "%s/eu-input.json", dir);
	assert_int_equal(htu_write_file(input,
	                                "{\"mode\": \"simple\", \"execution_nodes\": [\"c\"],"
	                                " \"connection_pairs\": [{\"client_node_id\": \"c\","
	                                " \"server_node_id\": \"s\"}], \"pdu_groups\": []}"),
	                 0);
	snprintf(blocker, sizeof(blocker), "%s/out", dir);
	assert_int_equal(htu_write_file(blocker, "a file where a folder should be"), 0);
	hakoi_gen_t *g = NULL;
	hako_error_t err;
	assert_int_equal(hakoi_gen_load(input, NULL, &g, &err), 0);
	assert_int_equal(hakoi_gen_write(g, blocker, NULL, &err), HAKO_EIO);
	assert_non_null(strstr(err.message, "cannot create its folder"));
	hakoi_gen_free(g);
	htu_remove_tmpdirs();
}

/* After the cases: each key of hako_launch_keys.h was written by one, so the reader has loaded
 * it (a key no case writes could be misspelt in the writer and no case would fail). */
static void every_launch_key_written(void **state)
{
	(void)state;
	size_t missing = 0;
	for (size_t i = 0; i < LAUNCH_KEY_COUNT; i++) {
		if (!launch_keys[i].written) {
			print_error("no case writes %s key \"%s\"\n", launch_keys[i].in,
			            launch_keys[i].key);
			missing++;
		}
	}
	assert_int_equal(missing, 0);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		cases_dir = argv[1];
	}
	htu_init();
	int rc = htc_run_cases("conductor_gen", cases_dir, "eu-input.json", MIN_CASES,
	                       HTC_EVERY_DIR, run_case, NULL);
	const struct CMUnitTest api[] = {
	    cmocka_unit_test(missing_file),
	    cmocka_unit_test(unwritable_dir),
	    cmocka_unit_test(every_launch_key_written),
	};
	rc += cmocka_run_group_tests_name("conductor_gen_api", api, NULL, NULL);
	return rc;
}
