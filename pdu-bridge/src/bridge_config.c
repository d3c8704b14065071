/* The bridge file loader: Hakoniwa's bridge JSON as tables of the config toolkit (hakoi/cfg.h),
 * with callbacks that resolve every reference (policies, groups, nodes, endpoints, the source
 * endpoint's pdudef). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/bridge_config.h"
#include "hakoi/cfg.h"

#define MAX_MS 3600000 /* an hour */

/* The walk's context (w->user). */
struct ctx {
	hako_bridge_config_t *cfg;
	json_t *root;
	const char *node;
	const char *container_path; /* the loader's override, or NULL */
};

static hako_bridge_config_t *config_of(const hakoi_walk_t *w)
{
	return ((const struct ctx *)w->user)->cfg;
}

/* The connection being read: the walker counts it in connection_count while it reads it. */
static hako_bridge_connection_cfg_t *current_connection(const hakoi_walk_t *w)
{
	const hako_bridge_config_t *cfg = config_of(w);
	return &cfg->connections[cfg->connection_count - 1];
}

/* Connections of the loaded node are checked against its endpoints. */
static int is_mine(const hakoi_walk_t *w)
{
	return strcmp(current_connection(w)->node_id, ((const struct ctx *)w->user)->node) == 0;
}

/* A map's entry (a policy, a group) takes its id from its key. */
static int entry_id(hakoi_walk_t *w, char *id)
{
	const char *key = hakoi_walk_key(w);
	return hakoi_walk_string(w, key, strlen(key), 0, id, HAKO_NAME_MAX);
}

/* ---- transferPolicies ---- */

static const char *const policy_types[] = {"immediate", "throttle", "ticker", NULL};

static const hakoi_field_t policy_fields[] = {
    HAKOI_ENUM("type", HAKOI_F_REQUIRED, hako_bridge_policy_cfg_t, type, policy_types, NULL),
    HAKOI_BOOL("atomic", 0, hako_bridge_policy_cfg_t, atomic),
    HAKOI_INT("intervalMs", HAKOI_F_UNSIGNED, hako_bridge_policy_cfg_t, interval_ms, 1, MAX_MS),
    HAKOI_END,
};

static const hakoi_field_t policy_elem = {.kind = HAKOI_K_OBJECT,
                                          .fields = policy_fields,
                                          .expect = "an object {type, atomic?, intervalMs?}"};

/* What a policy's type allows of its other members. */
static int policy_entry(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hako_bridge_policy_cfg_t *p = base;
	int immediate = p->type == HAKO_BRIDGE_IMMEDIATE;
	(void)f;
	int r = entry_id(w, p->id);
	if (r != 0) {
		return r;
	}
	if (!immediate && json_object_get(v, "atomic") != NULL) {
		hakoi_walk_push_key(w, "atomic");
		return hakoi_walk_fail(w, "only an \"immediate\" policy can be atomic");
	}
	if (immediate && json_object_get(v, "intervalMs") != NULL) {
		hakoi_walk_push_key(w, "intervalMs");
		return hakoi_walk_fail(w,
		                       "not allowed for \"immediate\" (it forwards every arrival)");
	}
	if (!immediate && json_object_get(v, "intervalMs") == NULL) {
		char expected[160], what[200];
		hakoi_field_expect(&policy_fields[2], expected, sizeof(expected));
		snprintf(what, sizeof(what), "%s for \"throttle\" and \"ticker\"", expected);
		hakoi_walk_push_key(w, "intervalMs");
		return hakoi_walk_fail_missing(w, what);
	}
	return 0;
}

/* ---- nodes, wireLinks ---- */

static const hakoi_field_t node_fields[] = {
    {.key = "id", .kind = HAKOI_K_STRING, .flags = HAKOI_F_REQUIRED, .size = HAKO_NAME_MAX},
    HAKOI_END,
};

static const hakoi_field_t node_elem = {
    .kind = HAKOI_K_OBJECT, .fields = node_fields, .expect = "an object {id}"};

static int node_unique(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_bridge_config_t *cfg = config_of(w);
	const char *id = base;
	(void)v;
	(void)f;
	for (size_t j = 0; j < hakoi_walk_index(w); j++) {
		if (strcmp(cfg->nodes[j], id) == 0) {
			hakoi_walk_push_key(w, "id");
			return hakoi_walk_fail_dup(w, j, "id \"%s\"", id);
		}
	}
	return 0;
}

static int node_listed(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_bridge_config_t *cfg = base;
	const char *node = ((const struct ctx *)w->user)->node;
	(void)v;
	(void)f;
	for (size_t i = 0; i < cfg->node_count; i++) {
		if (strcmp(cfg->nodes[i], node) == 0) {
			return 0;
		}
	}
	hakoi_walk_push_key(w, "nodes");
	return hakoi_walk_fail(w, "node \"%s\" is not listed", node);
}

static const hakoi_field_t wire_fields[] = {
    HAKOI_STRING("from", HAKOI_F_REQUIRED, hako_bridge_wire_link_t, from),
    HAKOI_STRING("to", HAKOI_F_REQUIRED, hako_bridge_wire_link_t, to),
    HAKOI_END,
};

static const hakoi_field_t wire_elem = {
    .kind = HAKOI_K_OBJECT, .fields = wire_fields, .expect = "an object {from, to}"};

/* ---- pduKeyGroups ---- */

static const hakoi_field_t member_fields[] = {
    HAKOI_STRING("id", HAKOI_F_REQUIRED, hako_bridge_pdu_ref_t, id),
    HAKOI_STRING("robot_name", HAKOI_F_REQUIRED, hako_bridge_pdu_ref_t, robot),
    HAKOI_STRING("pdu_name", HAKOI_F_REQUIRED, hako_bridge_pdu_ref_t, pdu),
    HAKOI_END,
};

static const hakoi_field_t member_elem = {.kind = HAKOI_K_OBJECT,
                                          .fields = member_fields,
                                          .expect = "an object {id, robot_name, pdu_name}"};

static int member_unique(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_bridge_config_t *cfg = config_of(w);
	const hako_bridge_group_cfg_t *g = &cfg->groups[cfg->group_count - 1];
	const hako_bridge_pdu_ref_t *m = base;
	(void)v;
	(void)f;
	for (size_t j = 0; j < hakoi_walk_index(w); j++) {
		if (strcmp(g->pdus[j].id, m->id) == 0) {
			hakoi_walk_push_key(w, "id");
			return hakoi_walk_fail_dup(w, j, "id \"%s\"", m->id);
		}
	}
	return 0;
}

static const hakoi_field_t group_elem = {.kind = HAKOI_K_ARRAY,
                                         .min = 1,
                                         HAKOI_ELEMS_NEW(hako_bridge_group_cfg_t, pdus, count),
                                         .elem = &member_elem,
                                         .check = member_unique,
                                         .expect = "an array of {id, robot_name, pdu_name}"};

static int group_entry(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	return entry_id(w, ((hako_bridge_group_cfg_t *)base)->id);
}

/* ---- the endpoint container ---- */

/* The node's endpoints, from the first of: the loader's container_path, the file's
 * endpoints_config_path, the file's inline "endpoints" block (a container file's array, inline;
 * its config_paths are relative to the bridge file). A file with both endpoints_config_path and
 * "endpoints" is refused: which one the bridge would use is not clear. */
static int load_container(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const struct ctx *c = w->user;
	hako_bridge_config_t *cfg = base;
	int has_path = cfg->endpoints_config_path[0] != '\0';
	int has_inline = json_object_get(c->root, "endpoints") != NULL;
	hako_error_t sub;
	int r;
	(void)v;
	(void)f;
	if (has_path && has_inline) {
		hakoi_walk_push_key(w, "endpoints");
		return hakoi_walk_fail(w, "not allowed with endpoints_config_path (give the node's "
		                          "endpoints one way: the container file or this inline "
		                          "block)");
	}
	if (c->container_path != NULL) {
		r = hako_endpoint_container_load(c->container_path, c->node, &cfg->endpoints, &sub);
		if (r != 0 && w->j.err != NULL) {
			*w->j.err = sub;
		}
		return r;
	}
	if (has_inline) {
		return hako_endpoint_container_load_at(w->j.file, "endpoints", c->node,
		                                       &cfg->endpoints, w->j.err);
	}
	hakoi_walk_push_key(w, "endpoints_config_path");
	if (!has_path) {
		return hakoi_walk_fail_missing(w, "the path of the endpoint container file, unless "
		                                  "the file has an inline \"endpoints\" block");
	}
	r = hako_endpoint_container_load(cfg->endpoints_config_path, c->node, &cfg->endpoints,
	                                 &sub);
	if (r != 0) {
		return hakoi_walk_sub_error(w, r, &sub, cfg->endpoints_config_path);
	}
	hakoi_walk_pop(w);
	return 0;
}

/* ---- connections ---- */

static const hako_endpoint_entry_t *find_endpoint(const hako_endpoint_container_t *ct,
                                                  const char *id)
{
	for (size_t i = 0; i < ct->count; i++) {
		if (strcmp(ct->entries[i].id, id) == 0) {
			return &ct->entries[i];
		}
	}
	return NULL;
}

/* Connection ids are unique per node, as Hakoniwa's loader and runtime scope them: a node
 * builds only its own connections and finds them by id, so its published bridge files list
 * one link's id for both of its ends (once per node). Two connections of one node with the same
 * id are refused: the node's control and statistics could not tell them apart. Runs once
 * nodeId is read; the error points at the id. */
static int conn_id_unique(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_bridge_config_t *cfg = config_of(w);
	const hako_bridge_connection_cfg_t *cc = base;
	(void)v;
	(void)f;
	for (size_t j = 0; j < hakoi_walk_index(w); j++) {
		const hako_bridge_connection_cfg_t *o = &cfg->connections[j];
		if (strcmp(o->id, cc->id) == 0 && strcmp(o->node_id, cc->node_id) == 0) {
			hakoi_walk_push_key(w, "id");
			return hakoi_walk_fail(
			    w,
			    "id \"%s\" is already used by connections[%zu], of the "
			    "same node \"%s\" (ids are unique per node)",
			    cc->id, j, cc->node_id);
		}
	}
	return 0;
}

static int conn_node(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_bridge_config_t *cfg = config_of(w);
	const hako_bridge_connection_cfg_t *cc = base;
	(void)v;
	(void)f;
	for (size_t n = 0; n < cfg->node_count; n++) {
		if (strcmp(cfg->nodes[n], cc->node_id) == 0) {
			return 0;
		}
	}
	return hakoi_walk_fail(w, "\"%s\" is not in nodes", cc->node_id);
}

/* An endpointId of the loaded node's connections is in its container. */
static int endpoint_known(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const struct ctx *c = w->user;
	const hako_endpoint_container_t *ct = c->cfg->endpoints;
	const char *id = base;
	(void)v;
	(void)f;
	if (is_mine(w) && find_endpoint(ct, id) == NULL) {
		return hakoi_walk_fail(w, "\"%s\" is not an endpoint of node \"%s\" in %s", id,
		                       c->node, ct->path);
	}
	return 0;
}

static const hakoi_field_t endpoint_ref_fields[] = {
    {.key = "endpointId",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     .size = HAKO_NAME_MAX,
     .check = endpoint_known},
    HAKOI_END,
};

static const hakoi_field_t destination_elem = {
    .kind = HAKOI_K_OBJECT, .fields = endpoint_ref_fields, .expect = "an object {endpointId}"};

static int destination_check(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_bridge_connection_cfg_t *cc = current_connection(w);
	const char *id = base;
	(void)v;
	(void)f;
	hakoi_walk_push_key(w, "endpointId");
	if (strcmp(id, cc->source) == 0) {
		return hakoi_walk_fail(w, "\"%s\" is the connection's source", id);
	}
	for (size_t j = 0; j < hakoi_walk_index(w); j++) {
		if (strcmp(cc->destinations[j], id) == 0) {
			return hakoi_walk_fail_dup(w, j, "\"%s\"", id);
		}
	}
	hakoi_walk_pop(w);
	return 0;
}

/* pduKeyGroupId and policyId: ids resolved to indexes. */
static int find_id(hakoi_walk_t *w, json_t *v,
                   const char *(*id_at)(const hako_bridge_config_t *, size_t), size_t count,
                   const char *where, size_t *out)
{
	static const hakoi_field_t id_field = {.kind = HAKOI_K_STRING, .size = HAKO_NAME_MAX};
	char id[HAKO_NAME_MAX];
	int r = hakoi_walk_value(w, v, &id_field, id);
	if (r != 0) {
		return r;
	}
	for (*out = 0; *out < count; (*out)++) {
		if (strcmp(id_at(config_of(w), *out), id) == 0) {
			return 0;
		}
	}
	return hakoi_walk_fail(w, "\"%s\" is not in %s", id, where);
}

static const char *group_id(const hako_bridge_config_t *cfg, size_t i)
{
	return cfg->groups[i].id;
}

static const char *policy_id(const hako_bridge_config_t *cfg, size_t i)
{
	return cfg->policies[i].id;
}

static int group_ref(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return find_id(w, v, group_id, config_of(w)->group_count, "pduKeyGroups",
	               &((hako_bridge_transfer_cfg_t *)base)->group);
}

static int policy_ref(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return find_id(w, v, policy_id, config_of(w)->policy_count, "transferPolicies",
	               &((hako_bridge_transfer_cfg_t *)base)->policy);
}

/* A bridge forwards PDUs of the source pdudef's size: every member of a group the loaded node
 * forwards must be in that pdudef. The error points at the member. */
static int transfer_members(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_bridge_config_t *cfg = config_of(w);
	const hako_bridge_connection_cfg_t *cc = current_connection(w);
	const hako_bridge_group_cfg_t *g =
	    &cfg->groups[((hako_bridge_transfer_cfg_t *)base)->group];
	(void)v;
	(void)f;
	if (!is_mine(w)) {
		return 0;
	}
	const hako_endpoint_entry_t *src = find_endpoint(cfg->endpoints, cc->source);
	const hako_pdudef_t *def = src->config != NULL ? src->config->pdudef : NULL;
	for (size_t i = 0; def != NULL && i < g->count; i++) {
		const hako_bridge_pdu_ref_t *m = &g->pdus[i];
		int no_robot = hako_pdudef_robot(def, m->robot) == NULL;
		if (!no_robot && hako_pdudef_find(def, m->robot, m->pdu) != NULL) {
			continue;
		}
		hakoi_jctx_t at = w->j; /* the path of the walk, put back after a warning */
		w->j.depth = 0;
		hakoi_walk_push_key(w, "pduKeyGroups");
		hakoi_walk_push_key(w, g->id);
		hakoi_walk_push_index(w, i);
		hakoi_walk_push_key(w, no_robot ? "robot_name" : "pdu_name");
		if (w->lenient) {
			hakoi_walk_warn(w,
			                "%s/%s is not in %s (the pdudef of \"%s\", the source of "
			                "connection \"%s\"): the bridge will skip it",
			                m->robot, m->pdu, def->path, src->id, cc->id);
			w->j = at;
			continue;
		}
		if (no_robot) {
			return hakoi_walk_fail(
			    w,
			    "robot \"%s\" is not in %s (the pdudef of \"%s\", the "
			    "source of connection \"%s\")",
			    m->robot, def->path, src->id, cc->id);
		}
		return hakoi_walk_fail(
		    w,
		    "robot \"%s\" has no PDU \"%s\" in %s (the pdudef of \"%s\", "
		    "the source of connection \"%s\")",
		    m->robot, m->pdu, def->path, src->id, cc->id);
	}
	return 0;
}

static const hakoi_field_t transfer_fields[] = {
    HAKOI_CUSTOM("pduKeyGroupId", HAKOI_F_REQUIRED, group_ref, "a string"),
    HAKOI_CUSTOM("policyId", HAKOI_F_REQUIRED, policy_ref, "a string"),
    HAKOI_CHECK(transfer_members),
    HAKOI_END,
};

static const hakoi_field_t transfer_elem = {.kind = HAKOI_K_OBJECT,
                                            .fields = transfer_fields,
                                            .expect = "an object {pduKeyGroupId, policyId}"};

static const hakoi_field_t connection_fields[] = {
    {.key = "id",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hako_bridge_connection_cfg_t, id)},
    {.key = "nodeId",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hako_bridge_connection_cfg_t, node_id),
     .check = conn_node},
    HAKOI_CHECK(conn_id_unique),
    {.key = "source",
     .kind = HAKOI_K_OBJECT,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hako_bridge_connection_cfg_t, source),
     .fields = endpoint_ref_fields,
     .expect = "an object {endpointId}"},
    {.key = "destinations",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     .min = 0, /* none: a monitor of its source, as Hakoniwa allows */
     HAKOI_ELEMS_NEW(hako_bridge_connection_cfg_t, destinations, dest_count),
     .elem = &destination_elem,
     .check = destination_check,
     .expect = "an array of {endpointId}"},
    {.key = "transferPdus",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     .min = 1,
     HAKOI_ELEMS_NEW(hako_bridge_connection_cfg_t, transfers, transfer_count),
     .elem = &transfer_elem,
     .expect = "an array of {pduKeyGroupId, policyId}"},
    HAKOI_BOOL("epoch_validation", 0, hako_bridge_connection_cfg_t, epoch_validation),
    HAKOI_END,
};

static const hakoi_field_t connection_elem = {
    .kind = HAKOI_K_OBJECT,
    .fields = connection_fields,
    .expect = "an object {id, nodeId, source, destinations, transferPdus}"};

static void connection_free(hako_bridge_connection_cfg_t *cc)
{
	free(cc->destinations);
	free(cc->transfers);
	memset(cc, 0, sizeof(*cc));
}

/* Every connection is checked; only the loaded node's are kept. */
static int keep_own_connections(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hako_bridge_config_t *cfg = base;
	const char *node = ((const struct ctx *)w->user)->node;
	size_t kept = 0;
	(void)v;
	(void)f;
	for (size_t i = 0; i < cfg->connection_count; i++) {
		if (strcmp(cfg->connections[i].node_id, node) != 0) {
			connection_free(&cfg->connections[i]);
		} else {
			cfg->connections[kept++] = cfg->connections[i];
		}
	}
	cfg->connection_count = kept;
	return 0;
}

/* ---- the file ---- */

static const char *const versions[] = {"2.0.0", NULL};
/* Stored as written: Hakoniwa's time source names (its create_time_source() takes these). */
static const char *const time_sources[] = {"real",          "virtual",           "hakoniwa",
                                           "hakoniwa_poll", "hakoniwa_callback", NULL};

static int time_source(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hako_bridge_config_t *cfg = base;
	(void)w;
	(void)f;
	snprintf(cfg->time_source_type, sizeof(cfg->time_source_type), "%s", json_string_value(v));
	return 0;
}

/* In the order the references need: what a connection names is read before connections. */
static const hakoi_field_t root_fields[] = {
    HAKOI_IGNORE("$schema"),
    {.key = "version", .kind = HAKOI_K_ENUM, .flags = HAKOI_F_REQUIRED, .names = versions},
    {.key = "time_source_type", .kind = HAKOI_K_ENUM, .names = time_sources, .check = time_source},
    {.key = "transferPolicies",
     .kind = HAKOI_K_MAP,
     .flags = HAKOI_F_REQUIRED,
     .min = 1,
     HAKOI_ELEMS_NEW(hako_bridge_config_t, policies, policy_count),
     .elem = &policy_elem,
     .check = policy_entry,
     .expect = "an object {id: policy}"},
    {.key = "nodes",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     .min = 1,
     HAKOI_ELEMS_NEW(hako_bridge_config_t, nodes, node_count),
     .elem = &node_elem,
     .check = node_unique,
     .expect = "an array of {id}"},
    HAKOI_CHECK(node_listed),
    {.key = "wireLinks",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hako_bridge_config_t, wire_links, wire_link_count),
     .elem = &wire_elem,
     .expect = "an array of {from, to}"},
    {.key = "pduKeyGroups",
     .kind = HAKOI_K_MAP,
     .flags = HAKOI_F_REQUIRED,
     .min = 1,
     HAKOI_ELEMS_NEW(hako_bridge_config_t, groups, group_count),
     .elem = &group_elem,
     .check = group_entry,
     .expect = "an object {id: [pdu key]}"},
    HAKOI_PATH("endpoints_config_path", 0, hako_bridge_config_t, endpoints_config_path),
    HAKOI_IGNORE("endpoints"), /* the endpoint loader reads it (load_container) */
    HAKOI_CHECK(load_container),
    {.key = "connections",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     .min = 1,
     HAKOI_ELEMS_NEW(hako_bridge_config_t, connections, connection_count),
     .elem = &connection_elem,
     .expect = "an array of connections"},
    HAKOI_CHECK(keep_own_connections),
    HAKOI_END,
};

void hako_bridge_config_free(hako_bridge_config_t *cfg)
{
	if (cfg == NULL) {
		return;
	}
	free(cfg->policies);
	free(cfg->nodes);
	free(cfg->wire_links);
	for (size_t i = 0; i < cfg->group_count; i++) {
		free(cfg->groups[i].pdus);
	}
	free(cfg->groups);
	for (size_t i = 0; i < cfg->connection_count; i++) {
		connection_free(&cfg->connections[i]);
	}
	free(cfg->connections);
	hako_endpoint_container_free(cfg->endpoints);
	free(cfg);
}

int hako_bridge_config_load(const char *path, const char *node, const char *container_path,
                            hako_bridge_config_t **out, hako_error_t *err)
{
	return hako_bridge_config_load_flags(path, node, container_path, 0, out, err);
}

int hako_bridge_config_load_flags(const char *path, const char *node, const char *container_path,
                                  unsigned flags, hako_bridge_config_t **out, hako_error_t *err)
{
	hako_error_clear(err);
	if (out != NULL) {
		*out = NULL;
	}
	if (path == NULL || node == NULL || out == NULL) {
		return hako_error_set(err, HAKO_EINVAL, path != NULL ? path : "", 0, 0,
		                      "no path, no node or no result pointer");
	}
	if (strlen(path) >= HAKO_ENDPOINT_PATH_MAX ||
	    (container_path != NULL && strlen(container_path) >= HAKO_ENDPOINT_PATH_MAX)) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0,
		                      "path is too long (limit %d bytes)",
		                      HAKO_ENDPOINT_PATH_MAX - 1);
	}
	if (node[0] == '\0' || strlen(node) >= HAKO_NAME_MAX) {
		return hako_error_set(err, HAKO_EINVAL, path, 0, 0,
		                      "node id must be 1..%d characters", HAKO_NAME_MAX - 1);
	}
	hako_bridge_config_t *cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	snprintf(cfg->path, sizeof(cfg->path), "%s", path);
	snprintf(cfg->node, sizeof(cfg->node), "%s", node);
	cfg->strict = (flags & HAKO_BRIDGE_LOAD_STRICT) != 0;
	json_t *root;
	char *text;
	size_t len;
	int r = hakoi_cfg_load(path, err, &root, &text, &len);
	if (r == 0) {
		struct ctx c = {
		    .cfg = cfg, .root = root, .node = node, .container_path = container_path};
		hakoi_walk_t w;
		hakoi_walk_init(&w, err, path, text, len, &c);
		w.lenient = !cfg->strict;
		r = hakoi_walk_object(&w, root, root_fields, cfg);
		json_decref(root);
		free(text);
	}
	if (r != 0) {
		hako_bridge_config_free(cfg);
		return r;
	}
	*out = cfg;
	return 0;
}
