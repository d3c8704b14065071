/* Bridge config loader: data-driven cases (cases/<name>/bridge.json, the container, endpoint,
 * cache, comm and pdudef files it names, and expected.txt) and the API around them.
 *
 * A case loads bridge.json for node "node1", unless its folder holds loads.txt: one load per
 * line, "<node> [<container file>]" (the container file, relative to the case folder, overrides
 * endpoints_config_path). expected.txt is "ok" followed by what each load gave, or the exact
 * error line of the first load that failed, with file paths written relative to the case
 * folder.
 *
 * fixtures/ holds the endpoint set most cases name (see hako_cases.h): endpoints.json and node1's
 * endpoint files. node2's entries there name files that do not exist, on purpose: a load for node1
 * must not open another node's endpoints. endpoints_two_nodes.json is the same set with node2's
 * files (node2_*.json), for the cases that load both nodes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/bridge_config.h"
#include "hako_cases.h"

#define MIN_CASES 25

static const char *cases_dir = "cases";

static const char *const types[] = {"immediate", "throttle", "ticker"};

static void format_config(const hako_bridge_config_t *cfg, char *buf, size_t len)
{
	htc_append(buf, len, "node %s\n", cfg->node);
	htc_append(buf, len, "  time_source_type=%s endpoints_config_path=%s\n",
	           cfg->time_source_type, cfg->endpoints_config_path);
	for (size_t i = 0; i < cfg->policy_count; i++) {
		const hako_bridge_policy_cfg_t *p = &cfg->policies[i];
		htc_append(buf, len, "  policy %s %s atomic=%d interval_ms=%u\n", p->id,
		           types[p->type], p->atomic, p->interval_ms);
	}
	htc_append(buf, len, "  nodes");
	for (size_t i = 0; i < cfg->node_count; i++) {
		htc_append(buf, len, " %s", cfg->nodes[i]);
	}
	htc_append(buf, len, "\n");
	for (size_t i = 0; i < cfg->wire_link_count; i++) {
		htc_append(buf, len, "  wire %s -> %s\n", cfg->wire_links[i].from,
		           cfg->wire_links[i].to);
	}
	for (size_t i = 0; i < cfg->group_count; i++) {
		const hako_bridge_group_cfg_t *g = &cfg->groups[i];
		htc_append(buf, len, "  group %s:", g->id);
		for (size_t j = 0; j < g->count; j++) {
			htc_append(buf, len, " %s=%s/%s", g->pdus[j].id, g->pdus[j].robot,
			           g->pdus[j].pdu);
		}
		htc_append(buf, len, "\n");
	}
	const hako_endpoint_container_t *ct = cfg->endpoints;
	htc_append(buf, len, "  container %s node=%s:", ct->path, ct->node_id);
	for (size_t i = 0; i < ct->count; i++) {
		htc_append(buf, len, " %s", ct->entries[i].id);
	}
	htc_append(buf, len, "\n");
	for (size_t i = 0; i < cfg->connection_count; i++) {
		const hako_bridge_connection_cfg_t *cc = &cfg->connections[i];
		htc_append(buf, len, "  connection %s node=%s source=%s epoch_validation=%d\n",
		           cc->id, cc->node_id, cc->source, cc->epoch_validation);
		for (size_t j = 0; j < cc->dest_count; j++) {
			htc_append(buf, len, "    destination %s\n", cc->destinations[j]);
		}
		for (size_t j = 0; j < cc->transfer_count; j++) {
			const hako_bridge_transfer_cfg_t *t = &cc->transfers[j];
			htc_append(buf, len, "    transfer group=%s policy=%s\n",
			           cfg->groups[t->group].id, cfg->policies[t->policy].id);
		}
	}
}

/* One load; returns 0 when it succeeded (and appended its dump). */
static int run_load(const char *case_dir, const char *input, const char *node,
                    const char *container, unsigned flags, char *actual, size_t len)
{
	char override[1100];
	hako_bridge_config_t *cfg = NULL;
	hako_error_t err;
	if (container != NULL) {
		snprintf(override, sizeof(override), "%s/%s", case_dir, container);
	}
	int rc = hako_bridge_config_load_flags(input, node, container != NULL ? override : NULL,
	                                       flags, &cfg, &err);
	if (rc != 0) {
		assert_null(cfg);
		assert_true(rc == HAKO_ECONFIG || rc == HAKO_ENOENT);
		hako_error_format(&err, actual, len);
		return rc;
	}
	assert_non_null(cfg);
	assert_non_null(cfg->endpoints);
	assert_string_equal(cfg->path, input);
	format_config(cfg, actual, len);
	hako_bridge_config_free(cfg);
	return 0;
}

static void run_case(const char *case_dir, const char *input, char *actual, size_t len, void *arg)
{
	(void)arg;
	char path[1100], loads[1024] = "node1\n";
	snprintf(path, sizeof(path), "%s/loads.txt", case_dir);
	char *text = htc_read_all(path, NULL);
	if (text != NULL) {
		snprintf(loads, sizeof(loads), "%s", text);
		free(text);
	}
	snprintf(actual, len, "ok\n");
	char *save = NULL;
	for (char *l = strtok_r(loads, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
		char *arg_save = NULL;
		char *node = strtok_r(l, " \t\r", &arg_save);
		char *container = strtok_r(NULL, " \t\r", &arg_save);
		if (node == NULL) {
			continue;
		}
		/* Strict first (what the case's expected.txt says); then the default, as
		 * Hakoniwa's loader: where it loads what strict refuses, its dump follows. */
		size_t used = strlen(actual);
		char lenient[8192] = "";
		int strict_rc = run_load(case_dir, input, node, container, HAKO_BRIDGE_LOAD_STRICT,
		                         actual + used, len - used);
		int lenient_rc =
		    run_load(case_dir, input, node, container, 0, lenient, sizeof(lenient));
		if (strict_rc != 0) {
			memmove(actual, actual + used, strlen(actual + used) + 1);
			if (lenient_rc == 0) {
				htc_append(actual, len, "\nwithout --strict: ok\n%s", lenient);
			}
			return;
		}
		assert_int_equal(lenient_rc, 0); /* what loads strictly loads by default */
	}
}

static void case_path(char *buf, size_t len, const char *name, const char *file)
{
	snprintf(buf, len, "%s/%s/%s", cases_dir, name, file);
}

static void test_api_errors(void **state)
{
	(void)state;
	hako_bridge_config_t *cfg = (hako_bridge_config_t *)&cfg; /* must be reset to NULL */
	hako_error_t err;
	char path[1100];
	assert_int_equal(
	    hako_bridge_config_load("/nonexistent/bridge.json", "node1", NULL, &cfg, &err),
	    HAKO_ENOENT);
	assert_null(cfg);
	assert_string_equal(err.file, "/nonexistent/bridge.json");
	assert_int_equal(hako_bridge_config_load(NULL, "node1", NULL, &cfg, &err), HAKO_EINVAL);
	assert_int_equal(hako_bridge_config_load("x", NULL, NULL, &cfg, &err), HAKO_EINVAL);
	assert_int_equal(hako_bridge_config_load("x", "node1", NULL, NULL, &err), HAKO_EINVAL);
	assert_int_equal(hako_bridge_config_load("x", "", NULL, &cfg, &err), HAKO_EINVAL);
	char long_node[HAKO_NAME_MAX + 1];
	memset(long_node, 'n', sizeof(long_node) - 1);
	long_node[sizeof(long_node) - 1] = '\0';
	case_path(path, sizeof(path), "ok_tcp_two_nodes", "bridge.json");
	assert_int_equal(hako_bridge_config_load(path, long_node, NULL, &cfg, &err), HAKO_EINVAL);
	assert_null(cfg);
	/* a NULL error record is allowed */
	case_path(path, sizeof(path), "err_bad_version", "bridge.json");
	assert_int_equal(hako_bridge_config_load(path, "node1", NULL, &cfg, NULL), HAKO_ECONFIG);
	assert_null(cfg);
	case_path(path, sizeof(path), "err_container_missing", "bridge.json");
	assert_int_equal(hako_bridge_config_load(path, "node1", NULL, &cfg, &err), HAKO_ENOENT);
	assert_true(err.line > 0);
	hako_bridge_config_free(NULL);
}

/* What the runtime relies on: indices, the container's entries and their pdudefs. */
static void test_loaded_structure(void **state)
{
	(void)state;
	char path[1100];
	hako_bridge_config_t *cfg = NULL;
	case_path(path, sizeof(path), "ok_web_bridge", "bridge.json");
	assert_int_equal(hako_bridge_config_load(path, "node1", NULL, &cfg, NULL), 0);
	assert_int_equal(cfg->policy_count, 2);
	assert_int_equal(cfg->policies[1].type, HAKO_BRIDGE_TICKER);
	assert_int_equal(cfg->policies[1].interval_ms, 20);
	assert_int_equal(cfg->connection_count, 2);
	const hako_bridge_connection_cfg_t *cc = &cfg->connections[0];
	assert_int_equal(cc->transfer_count, 2);
	assert_string_equal(cfg->groups[cc->transfers[1].group].id, "state_slow");
	assert_int_equal(cc->transfers[1].policy, 1);
	assert_int_equal(cfg->endpoints->count, 2);
	assert_non_null(cfg->endpoints->entries[0].config->pdudef);
	hako_bridge_config_free(cfg);
	/* the inline block: entries loaded as from a container file, paths under the bridge's */
	case_path(path, sizeof(path), "ok_inline_endpoints", "bridge.json");
	assert_int_equal(hako_bridge_config_load(path, "node1", NULL, &cfg, NULL), 0);
	assert_string_equal(cfg->endpoints_config_path, "");
	assert_string_equal(cfg->endpoints->path, path);
	assert_int_equal(cfg->endpoints->count, 2);
	const hako_endpoint_entry_t *e = &cfg->endpoints->entries[1];
	assert_string_equal(e->mode, "wire");
	assert_non_null(strstr(e->config_path, "ok_inline_endpoints/endpoint/ep_client.json"));
	assert_non_null(e->config->comm);
	assert_non_null(e->config->pdudef);
	hako_bridge_config_free(cfg);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		cases_dir = argv[1];
	}
	int failed = htc_run_cases("bridge_config_cases", cases_dir, "bridge.json", MIN_CASES,
	                           HTC_EVERY_DIR, run_case, NULL);
	const struct CMUnitTest api[] = {
	    cmocka_unit_test(test_api_errors),
	    cmocka_unit_test(test_loaded_structure),
	};
	failed += cmocka_run_group_tests(api, NULL, NULL);
	return failed;
}
