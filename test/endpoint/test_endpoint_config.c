/* Endpoint config loaders: data-driven cases (cases/<name>/endpoint.json, the cache, comm and
 * pdudef files it names, and expected.txt) and the API around them. A case folder holding
 * container.json loads that container for node "node1" instead. The caches, pdudef and shm comm
 * that many cases use are in fixtures/ (see hako_cases.h); test_tool.sh copies them along.
 *
 * expected.txt is either "ok" followed by what was loaded, or the exact error line with file
 * paths written relative to the case folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hako/endpoint_config.h"
#include "hako_cases.h"

#define MIN_CASES 25

static const char *cases_dir = "cases";

static const char *const protocols[] = {"tcp", "udp", "shm", "websocket", "storage", "mqtt"};
static const char *const dirs[] = {"?", "in", "out", "inout"};
static const char *const roles[] = {"none", "server", "client"};

static void format_addr(char *buf, size_t len, const char *what, const hako_comm_addr_t *a)
{
	if (!a->present) {
		return;
	}
	htc_append(buf, len, "  %s address=%s host=%s port=%u path=%s", what, a->address, a->host,
	           a->port, a->path);
	if (a->node[0] != '\0') {
		htc_append(buf, len, " node=%s", a->node);
	}
	htc_append(buf, len, "\n");
}

static void format_comm(const hako_comm_config_t *cc, char *buf, size_t len)
{
	htc_append(buf, len, "comm %s protocol=%s direction=%s v%d role=%s\n", cc->name,
	           protocols[cc->protocol], dirs[cc->direction], cc->raw_version, roles[cc->role]);
	if (cc->node_map[0] != '\0') {
		htc_append(buf, len, "  node_map %s from %s\n", cc->node_map, cc->node_map_from);
	}
	format_addr(buf, len, "local", &cc->local);
	format_addr(buf, len, "remote", &cc->remote);
	const hako_comm_tcp_options_t *t = hako_comm_tcp_options(cc);
	const hako_comm_udp_options_t *u = hako_comm_udp_options(cc);
	const hako_comm_ws_options_t *w = hako_comm_ws_options(cc);
	const hako_comm_shm_options_t *s = hako_comm_shm_options(cc);
	const hako_comm_storage_options_t *st = hako_comm_storage_options(cc);
	const hako_comm_mqtt_options_t *m = hako_comm_mqtt_options(cc);
	/* Exactly one getter answers: the one of the config's protocol. */
	assert_int_equal(
	    (t != NULL) + (u != NULL) + (w != NULL) + (s != NULL) + (st != NULL) + (m != NULL), 1);
	assert_string_equal(hako_comm_protocol_name(cc), protocols[cc->protocol]);
	if (t != NULL) {
		htc_append(buf, len,
		           "  tcp backlog=%u connect=%u read=%u write=%u blocking=%d reuse=%d "
		           "keepalive=%d no_delay=%d rcvbuf=%u sndbuf=%u linger=%d/%u\n",
		           t->backlog, t->connect_timeout_ms, t->read_timeout_ms,
		           t->write_timeout_ms, t->blocking, t->reuse_address, t->keepalive,
		           t->no_delay, t->recv_buffer_size, t->send_buffer_size, t->linger_enabled,
		           t->linger_timeout_sec);
		if (t->expected_clients > 0) {
			htc_append(buf, len, "  tcp mux expected_clients=%u\n",
			           t->expected_clients);
		}
	}
	if (u != NULL) {
		htc_append(buf, len,
		           "  udp buffer=%u timeout=%u blocking=%d reuse=%d broadcast=%d "
		           "multicast=%d group=%s interface=%s ttl=%u\n",
		           u->buffer_size, u->timeout_ms, u->blocking, u->reuse_address,
		           u->broadcast, u->multicast_enabled, u->multicast_group,
		           u->multicast_interface, u->multicast_ttl);
	}
	if (w != NULL) {
		htc_append(buf, len,
		           "  websocket ping=%u handshake=%u connect=%u read=%u write=%u "
		           "blocking=%d\n",
		           w->ping_interval_sec, w->handshake_timeout_ms, w->connect_timeout_ms,
		           w->read_timeout_ms, w->write_timeout_ms, w->blocking);
	}
	if (st != NULL) {
		const char *base = strrchr(st->path, '/');
		htc_append(buf, len, "  storage backend=file mode=%s path=.../%s\n",
		           st->mode == HAKO_STORAGE_LATEST ? "latest" : "queue",
		           base != NULL ? base + 1 : st->path);
	}
	if (m != NULL) {
		htc_append(buf, len,
		           "  mqtt broker=%s host=%s port=%u prefix=%s client_id=%s qos=%d "
		           "retain=%d\n  mqtt keepalive=%u reconnect=%u..%u write=%u blocking=%d "
		           "pending_max=%u user=%s\n",
		           m->broker, m->host, m->port, m->topic_prefix, m->client_id, m->qos,
		           m->retain, m->keepalive_sec, m->reconnect_min_ms, m->reconnect_max_ms,
		           m->write_timeout_ms, m->blocking, m->pending_max, m->username);
	}
	if (s != NULL) {
		htc_append(buf, len, "  shm impl=%s asset=%s\n",
		           s->impl == HAKO_SHM_POLL ? "poll" : "callback", s->asset_name);
		for (size_t i = 0; i < s->robot_count; i++) {
			const hako_comm_shm_robot_t *r = &s->robots[i];
			htc_append(buf, len, "  robot %s\n", r->name);
			for (size_t j = 0; j < r->pdu_count; j++) {
				htc_append(buf, len,
				           "    pdu %s ch=%" PRId32 " size=%" PRIu32 " notify=%d\n",
				           r->pdus[j].name, r->pdus[j].channel_id,
				           r->pdus[j].pdu_size, r->pdus[j].notify_on_recv);
			}
		}
	}
	if (cc->protocol != HAKO_COMM_SHM) {
		htc_append(buf, len, "  max_body_bytes=%u send_queue_depth=%u\n",
		           cc->max_body_bytes, cc->send_queue_depth);
	}
	if (cc->protocol == HAKO_COMM_TCP || cc->protocol == HAKO_COMM_WEBSOCKET) {
		htc_append(buf, len, "  max_clients=%u max_buffered_bytes=%u frame_timeout_ms=%u\n",
		           cc->max_clients, cc->max_buffered_bytes, cc->frame_timeout_ms);
	}
}

static void format_endpoint(const hako_endpoint_config_t *cfg, char *buf, size_t len)
{
	htc_append(buf, len, "endpoint %s\n", cfg->name);
	htc_append(buf, len, "cache %s name=%s mode=%s depth=%u\n", cfg->cache.path,
	           cfg->cache.name, cfg->cache.mode == HAKO_CACHE_QUEUE ? "queue" : "latest",
	           cfg->cache.depth);
	if (cfg->pdudef != NULL) {
		htc_append(buf, len, "pdudef %s robots=%zu\n", cfg->pdudef->path,
		           cfg->pdudef->robot_count);
	}
	if (cfg->comm != NULL) {
		htc_append(buf, len, "comm_path %s\n", cfg->comm->path);
		format_comm(cfg->comm, buf, len);
	} else {
		htc_append(buf, len, "comm none\n");
	}
}

static void report_error(int rc, const hako_error_t *err, char *actual, size_t len)
{
	assert_true(rc == HAKO_ECONFIG || rc == HAKO_ENOENT);
	hako_error_format(err, actual, len);
}

static void run_case(const char *case_dir, const char *input, char *actual, size_t len, void *arg)
{
	(void)arg;
	char container[1100];
	hako_error_t err;
	actual[0] = '\0';
	snprintf(container, sizeof(container), "%s/container.json", case_dir);
	if (access(container, F_OK) == 0) {
		hako_endpoint_container_t *ct = NULL;
		int rc = hako_endpoint_container_load(container, "node1", &ct, &err);
		if (rc != 0) {
			assert_null(ct);
			report_error(rc, &err, actual, len);
			return;
		}
		htc_append(actual, len, "ok\n");
		for (size_t i = 0; i < ct->count; i++) {
			const hako_endpoint_entry_t *en = &ct->entries[i];
			htc_append(actual, len, "entry %s %s direction=%s mode=%s\n", en->id,
			           en->config_path, en->direction, en->mode);
			format_endpoint(en->config, actual, len);
		}
		hako_endpoint_container_free(ct);
		return;
	}
	hako_endpoint_config_t *cfg = NULL;
	int rc = hako_endpoint_config_load(input, &cfg, &err);
	if (rc == 0) {
		assert_non_null(cfg);
		assert_string_equal(cfg->path, input);
		htc_append(actual, len, "ok\n");
		format_endpoint(cfg, actual, len);
	} else {
		assert_null(cfg);
		report_error(rc, &err, actual, len);
	}
	hako_endpoint_config_free(cfg);
}

static void test_api_errors(void **state)
{
	(void)state;
	hako_endpoint_config_t *cfg = (hako_endpoint_config_t *)&cfg; /* must be reset to NULL */
	hako_endpoint_container_t *ct = (hako_endpoint_container_t *)&ct;
	hako_error_t err;
	assert_int_equal(hako_endpoint_config_load("/nonexistent/endpoint.json", &cfg, &err),
	                 HAKO_ENOENT);
	assert_null(cfg);
	assert_string_equal(err.file, "/nonexistent/endpoint.json");
	assert_int_equal(hako_endpoint_config_load(NULL, &cfg, &err), HAKO_EINVAL);
	assert_int_equal(hako_endpoint_config_load("x", NULL, &err), HAKO_EINVAL);
	assert_int_equal(hako_endpoint_container_load("x", NULL, &ct, &err), HAKO_EINVAL);
	assert_null(ct);
	char path[1100];
	snprintf(path, sizeof(path), "%s/err_cache_missing/endpoint.json", cases_dir);
	assert_int_equal(hako_endpoint_config_load(path, &cfg, &err), HAKO_ENOENT);
	assert_true(err.line > 0);
	snprintf(path, sizeof(path), "%s/err_unknown_key/endpoint.json", cases_dir);
	assert_int_equal(hako_endpoint_config_load(path, &cfg, NULL), HAKO_ECONFIG);
	hako_endpoint_config_free(NULL);
	hako_endpoint_container_free(NULL);
}

/* The defaults of the reference, when a file gives no options. */
static void test_defaults(void **state)
{
	(void)state;
	char path[1100];
	hako_endpoint_config_t *cfg;
	snprintf(path, sizeof(path), "%s/ok_inmemory/endpoint.json", cases_dir);
	assert_int_equal(hako_endpoint_config_load(path, &cfg, NULL), 0);
	assert_null(cfg->comm);
	assert_null(cfg->pdudef);
	assert_int_equal(cfg->cache.mode, HAKO_CACHE_LATEST);
	assert_int_equal(cfg->cache.depth, 1);
	hako_endpoint_config_free(cfg);
	snprintf(path, sizeof(path), "%s/ok_udp_defaults/endpoint.json", cases_dir);
	assert_int_equal(hako_endpoint_config_load(path, &cfg, NULL), 0);
	assert_int_equal(cfg->comm->raw_version, 2);
	assert_int_equal(cfg->comm->max_body_bytes, 16u << 20);
	assert_int_equal(cfg->comm->send_queue_depth, 256);
	const hako_comm_udp_options_t *u = hako_comm_udp_options(cfg->comm);
	assert_non_null(u);
	assert_null(hako_comm_tcp_options(cfg->comm));
	assert_int_equal(u->buffer_size, 8192);
	assert_int_equal(u->multicast_ttl, 1);
	assert_string_equal(u->multicast_interface, "0.0.0.0");
	hako_endpoint_config_free(cfg);
}

/* HAKO_NODE_IP_MAP (what the tools' --node-map sets) resolves names in a file without a
 * name_resolver block, and replaces the map a block names. */
static void test_node_map_env(void **state)
{
	(void)state;
	char path[1100], map[1100];
	hako_endpoint_config_t *cfg = NULL;
	hako_error_t err;
	snprintf(map, sizeof(map), "%s/../fixtures/node-ip-map.json", cases_dir);
	assert_int_equal(setenv("HAKO_NODE_IP_MAP", map, 1), 0);
	snprintf(path, sizeof(path), "%s/err_node_name_without_map/endpoint.json", cases_dir);
	assert_int_equal(hako_endpoint_config_load(path, &cfg, &err), 0);
	assert_string_equal(cfg->comm->remote.address, "127.0.0.2");
	assert_string_equal(cfg->comm->remote.node, "beta-01");
	assert_string_equal(cfg->comm->node_map, map);
	assert_string_equal(cfg->comm->node_map_from, "HAKO_NODE_IP_MAP");
	hako_endpoint_config_free(cfg);
	/* The block names a map that does not exist: the environment's is the one read. */
	snprintf(path, sizeof(path), "%s/err_node_map_missing/endpoint.json", cases_dir);
	assert_int_equal(hako_endpoint_config_load(path, &cfg, &err), 0);
	assert_string_equal(cfg->comm->node_map_from, "HAKO_NODE_IP_MAP");
	hako_endpoint_config_free(cfg);
	/* An IP literal needs no map: a map that does not exist is never opened. */
	assert_int_equal(setenv("HAKO_NODE_IP_MAP", "/nonexistent/map.json", 1), 0);
	snprintf(path, sizeof(path), "%s/ok_tcp_client/endpoint.json", cases_dir);
	assert_int_equal(hako_endpoint_config_load(path, &cfg, &err), 0);
	assert_string_equal(cfg->comm->node_map, "");
	hako_endpoint_config_free(cfg);
	snprintf(path, sizeof(path), "%s/err_node_name_without_map/endpoint.json", cases_dir);
	assert_int_equal(hako_endpoint_config_load(path, &cfg, &err), HAKO_ECONFIG);
	char msg[1200];
	hako_error_format(&err, msg, sizeof(msg));
	assert_non_null(strstr(msg, "remote.address: cannot open node map /nonexistent/map.json "
	                            "(from HAKO_NODE_IP_MAP): No such file or directory"));
	unsetenv("HAKO_NODE_IP_MAP");
}

/* hako_endpoint_node_map_check: the comm loaders' map loader on its own (hako-conductor tree). */
static void test_node_map_check(void **state)
{
	(void)state;
	char map[1100];
	size_t n = 0;
	hako_error_t err;
	snprintf(map, sizeof(map), "%s/../fixtures/node-ip-map.json", cases_dir);
	assert_int_equal(hako_endpoint_node_map_check(map, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(hako_endpoint_node_map_check(map, NULL, &err), 0);
	snprintf(map, sizeof(map), "%s/err_node_map_bad_address/node-ip-map.json", cases_dir);
	assert_int_equal(hako_endpoint_node_map_check(map, &n, &err), HAKO_ECONFIG);
	assert_int_equal(err.line, 4);
	assert_int_equal(err.column, 16);
	assert_non_null(strstr(err.message, "\"10.0.0.256\" is not an IPv4 or IPv6 address"));
	assert_int_equal(hako_endpoint_node_map_check("/nonexistent/map.json", &n, &err),
	                 HAKO_ENOENT);
	assert_int_equal(hako_endpoint_node_map_check(NULL, &n, &err), HAKO_EINVAL);
}

int main(int argc, char **argv)
{
	/* A second folder: the cases of a comm that a build may leave out (mqtt), run alone. */
	if (argc > 2) {
		return htc_run_cases("endpoint_config_cases", argv[2], "endpoint.json", 1,
		                     HTC_EVERY_DIR, run_case, NULL);
	}
	if (argc > 1) {
		cases_dir = argv[1];
	}
	int failed = htc_run_cases("endpoint_config_cases", cases_dir, "endpoint.json", MIN_CASES,
	                           HTC_EVERY_DIR, run_case, NULL);
	const struct CMUnitTest api[] = {
	    cmocka_unit_test(test_api_errors),
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_node_map_env),
	    cmocka_unit_test(test_node_map_check),
	};
	failed += cmocka_run_group_tests(api, NULL, NULL);
	return failed;
}
