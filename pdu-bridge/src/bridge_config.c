/* The bridge file loader: Hakoniwa's bridge JSON checked value by value, every reference
 * resolved, every error reported as file:line:column: path: what. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/bridge_config.h"
#include "hakoi/json_pos.h"

#define COUNT(a)       (sizeof(a) / sizeof((a)[0]))
#define MAX_MS         3600000 /* an hour */
#define BRIDGE_VERSION "2.0.0"

struct ctx {
	hakoi_jctx_t j; /* file, text, path: errors point at file:line:column */
	hako_bridge_config_t *cfg;
	const char *node;
	const char *container_path; /* the loader's override, or NULL */
};

#define push_key(c, key)             hakoi_jctx_push_key(&(c)->j, (key))
#define push_index(c, index)         hakoi_jctx_push_index(&(c)->j, (index))
#define pop(c)                       hakoi_jctx_pop(&(c)->j)
#define report(c, at, code, what)    hakoi_jctx_report(&(c)->j, (at), (code), (what))
#define fail(c, ...)                 hakoi_jctx_fail(&(c)->j, __VA_ARGS__)
#define fail_missing(c, expected)    hakoi_jctx_fail_missing(&(c)->j, (expected))
#define fail_oom(c)                  hakoi_jctx_fail_oom(&(c)->j)
#define check_keys(c, obj, known, n) hakoi_jctx_check_keys(&(c)->j, (obj), (known), (n))

/* ---- values ---- */

/* An id of at most size - 1 bytes at the current path: object keys are ids too. */
static int id_value(struct ctx *c, const char *s, size_t n, char *out, size_t size)
{
	if (n == 0) {
		return fail(c, "must not be empty");
	}
	if (strlen(s) != n) {
		return fail(c, "must not contain a NUL character");
	}
	if (n >= size) {
		return fail(c, "is %zu bytes long; the limit is %zu", n, size - 1);
	}
	memcpy(out, s, n + 1);
	return 0;
}

/* A non-empty string shorter than size bytes; an absent optional member leaves out alone. */
static int get_string(struct ctx *c, json_t *obj, const char *key, int required, char *out,
                      size_t size)
{
	json_t *v = json_object_get(obj, key);
	push_key(c, key);
	if (v == NULL) {
		if (required) {
			return fail_missing(c, "a string");
		}
		pop(c);
		return 0;
	}
	if (!json_is_string(v)) {
		return fail(c, "must be a string");
	}
	int r = id_value(c, json_string_value(v), json_string_length(v), out, size);
	if (r == 0) {
		pop(c);
	}
	return r;
}

/* true or false; an absent member leaves *out alone. */
static int get_bool(struct ctx *c, json_t *obj, const char *key, int *out)
{
	json_t *v = json_object_get(obj, key);
	if (v == NULL) {
		return 0;
	}
	if (!json_is_boolean(v)) {
		push_key(c, key);
		return fail(c, "must be true or false");
	}
	*out = json_is_true(v);
	return 0;
}

/* A member of obj that must be an object (is_array 0) or an array with at least one element
 * (is_array 1); an absent optional member is NULL with *rc = 0. The key stays pushed when the
 * value is returned: the caller pops it. */
static json_t *get_container(struct ctx *c, json_t *obj, const char *key, int is_array,
                             int required, const char *expected, int *rc)
{
	json_t *v = json_object_get(obj, key);
	*rc = 0;
	push_key(c, key);
	if (v == NULL) {
		if (required) {
			*rc = fail_missing(c, expected);
		} else {
			pop(c);
		}
		return NULL;
	}
	if (is_array ? !json_is_array(v) : !json_is_object(v)) {
		*rc = fail(c, "must be %s", expected);
		return NULL;
	}
	if (is_array ? json_array_size(v) == 0 : json_object_size(v) == 0) {
		*rc = fail(c, "must not be empty");
		return NULL;
	}
	return v;
}

/* An element or member that must be an object, with only the keys known[]. */
static int object_with(struct ctx *c, json_t *v, const char *const *known, size_t n,
                       const char *expected)
{
	if (!json_is_object(v)) {
		return fail(c, "must be an object %s", expected);
	}
	return check_keys(c, v, known, n);
}

/* ---- transferPolicies ---- */

static int load_policy(struct ctx *c, json_t *v, hako_bridge_policy_cfg_t *p)
{
	static const char *const keys[] = {"type", "atomic", "intervalMs"};
	static const char *const types[] = {"immediate", "throttle", "ticker"};
	const char *expected = "\"immediate\", \"throttle\" or \"ticker\"";
	int r;
	if ((r = object_with(c, v, keys, COUNT(keys), "{type, atomic?, intervalMs?}")) != 0) {
		return r;
	}
	json_t *t = json_object_get(v, "type");
	push_key(c, "type");
	if (t == NULL) {
		return fail_missing(c, expected);
	}
	size_t i = 0;
	while (json_is_string(t) && i < COUNT(types) &&
	       strcmp(json_string_value(t), types[i]) != 0) {
		i++;
	}
	if (!json_is_string(t)) {
		return fail(c, "must be %s", expected);
	}
	if (i == COUNT(types)) {
		return fail(c, "is \"%s\"; must be %s", json_string_value(t), expected);
	}
	pop(c);
	p->type = (hako_bridge_policy_type_t)i;
	if ((r = get_bool(c, v, "atomic", &p->atomic)) != 0) {
		return r;
	}
	if (p->type != HAKO_BRIDGE_IMMEDIATE && json_object_get(v, "atomic") != NULL) {
		push_key(c, "atomic");
		return fail(c, "only an \"immediate\" policy can be atomic");
	}
	json_t *iv = json_object_get(v, "intervalMs");
	if (p->type == HAKO_BRIDGE_IMMEDIATE) {
		if (iv != NULL) {
			push_key(c, "intervalMs");
			return fail(c, "not allowed for \"immediate\" (it forwards every arrival)");
		}
		return 0;
	}
	if (iv == NULL) {
		push_key(c, "intervalMs");
		return report(c, c->j.depth - 1, HAKO_ECONFIG,
		              "missing (\"throttle\" and \"ticker\" need an interval in ms)");
	}
	long long ms = 0;
	if ((r = hakoi_jctx_get_int(&c->j, v, "intervalMs", 1, 1, MAX_MS, &ms)) != 0) {
		return r;
	}
	p->interval_ms = (uint32_t)ms;
	return 0;
}

static int load_policies(struct ctx *c, json_t *root)
{
	hako_bridge_config_t *cfg = c->cfg;
	const char *key;
	json_t *v;
	int r;
	json_t *o = get_container(c, root, "transferPolicies", 0, 1, "an object {id: policy}", &r);
	if (o == NULL) {
		return r;
	}
	if ((cfg->policies = calloc(json_object_size(o), sizeof(*cfg->policies))) == NULL) {
		return fail_oom(c);
	}
	json_object_foreach(o, key, v)
	{
		hako_bridge_policy_cfg_t *p = &cfg->policies[cfg->policy_count++];
		push_key(c, key);
		if ((r = id_value(c, key, strlen(key), p->id, sizeof(p->id))) != 0 ||
		    (r = load_policy(c, v, p)) != 0) {
			return r;
		}
		pop(c);
	}
	pop(c);
	return 0;
}

/* ---- nodes, wireLinks ---- */

static int load_nodes(struct ctx *c, json_t *root)
{
	static const char *const keys[] = {"id"};
	hako_bridge_config_t *cfg = c->cfg;
	int r, found = 0;
	json_t *a = get_container(c, root, "nodes", 1, 1, "an array of {id}", &r);
	if (a == NULL) {
		return r;
	}
	if ((cfg->nodes = calloc(json_array_size(a), sizeof(*cfg->nodes))) == NULL) {
		return fail_oom(c);
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		char *id = cfg->nodes[i];
		push_index(c, i);
		if ((r = object_with(c, json_array_get(a, i), keys, COUNT(keys), "{id}")) != 0 ||
		    (r = get_string(c, json_array_get(a, i), "id", 1, id, HAKO_BRIDGE_ID_MAX)) !=
		        0) {
			return r;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(cfg->nodes[j], id) == 0) {
				push_key(c, "id");
				return fail(c, "id \"%s\" is already used by nodes[%zu]", id, j);
			}
		}
		cfg->node_count = i + 1;
		found |= strcmp(id, c->node) == 0;
		pop(c);
	}
	if (!found) {
		return fail(c, "node \"%s\" is not listed", c->node);
	}
	pop(c);
	return 0;
}

static int load_wire_links(struct ctx *c, json_t *root)
{
	static const char *const keys[] = {"from", "to"};
	hako_bridge_config_t *cfg = c->cfg;
	int r;
	json_t *a = json_object_get(root, "wireLinks");
	push_key(c, "wireLinks");
	if (a == NULL) {
		pop(c);
		return 0;
	}
	if (!json_is_array(a)) {
		return fail(c, "must be an array of {from, to}");
	}
	if (json_array_size(a) > 0 &&
	    (cfg->wire_links = calloc(json_array_size(a), sizeof(*cfg->wire_links))) == NULL) {
		return fail_oom(c);
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *w = json_array_get(a, i);
		hako_bridge_wire_link_t *l = &cfg->wire_links[i];
		push_index(c, i);
		if ((r = object_with(c, w, keys, COUNT(keys), "{from, to}")) != 0 ||
		    (r = get_string(c, w, "from", 1, l->from, sizeof(l->from))) != 0 ||
		    (r = get_string(c, w, "to", 1, l->to, sizeof(l->to))) != 0) {
			return r;
		}
		cfg->wire_link_count = i + 1;
		pop(c);
	}
	pop(c);
	return 0;
}

/* ---- pduKeyGroups ---- */

static int load_group(struct ctx *c, json_t *a, hako_bridge_group_cfg_t *g)
{
	static const char *const keys[] = {"id", "robot_name", "pdu_name"};
	int r;
	if (!json_is_array(a)) {
		return fail(c, "must be an array of {id, robot_name, pdu_name}");
	}
	if (json_array_size(a) == 0) {
		return fail(c, "must not be empty");
	}
	if ((g->pdus = calloc(json_array_size(a), sizeof(*g->pdus))) == NULL) {
		return fail_oom(c);
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *m = json_array_get(a, i);
		hako_bridge_pdu_ref_t *p = &g->pdus[i];
		push_index(c, i);
		if ((r = object_with(c, m, keys, COUNT(keys), "{id, robot_name, pdu_name}")) != 0 ||
		    (r = get_string(c, m, "id", 1, p->id, sizeof(p->id))) != 0 ||
		    (r = get_string(c, m, "robot_name", 1, p->robot, sizeof(p->robot))) != 0 ||
		    (r = get_string(c, m, "pdu_name", 1, p->pdu, sizeof(p->pdu))) != 0) {
			return r;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(g->pdus[j].id, p->id) == 0) {
				push_key(c, "id");
				return fail(c, "id \"%s\" is already used by pduKeyGroups.%s[%zu]",
				            p->id, g->id, j);
			}
		}
		g->count = i + 1;
		pop(c);
	}
	return 0;
}

static int load_groups(struct ctx *c, json_t *root)
{
	hako_bridge_config_t *cfg = c->cfg;
	const char *key;
	json_t *v;
	int r;
	json_t *o = get_container(c, root, "pduKeyGroups", 0, 1, "an object {id: [pdu key]}", &r);
	if (o == NULL) {
		return r;
	}
	if ((cfg->groups = calloc(json_object_size(o), sizeof(*cfg->groups))) == NULL) {
		return fail_oom(c);
	}
	json_object_foreach(o, key, v)
	{
		hako_bridge_group_cfg_t *g = &cfg->groups[cfg->group_count++];
		push_key(c, key);
		if ((r = id_value(c, key, strlen(key), g->id, sizeof(g->id))) != 0 ||
		    (r = load_group(c, v, g)) != 0) {
			return r;
		}
		pop(c);
	}
	pop(c);
	return 0;
}

/* ---- the endpoint container ---- */

/* The node's endpoints, from the first of: the loader's container_path, the file's
 * endpoints_config_path, the file's inline "endpoints" block (a container file's array, inline;
 * its config_paths are relative to the bridge file). A file with both endpoints_config_path and
 * "endpoints" is refused: which one the bridge would use is not clear. */
static int load_container(struct ctx *c, json_t *root)
{
	const char *key = "endpoints_config_path";
	hako_bridge_config_t *cfg = c->cfg;
	json_t *inline_block = json_object_get(root, "endpoints");
	char rel[HAKO_ENDPOINT_PATH_MAX] = "";
	hako_error_t sub;
	int r;
	if ((r = get_string(c, root, key, 0, rel, sizeof(rel))) != 0) {
		return r;
	}
	if (rel[0] != '\0' && inline_block != NULL) {
		push_key(c, "endpoints");
		return fail(c, "not allowed with endpoints_config_path (give the node's endpoints "
		               "one way: the container file or this inline block)");
	}
	push_key(c, key);
	if (rel[0] != '\0') {
		const char *slash = strrchr(c->j.file, '/');
		int dir_len = rel[0] == '/' || slash == NULL ? 0 : (int)(slash - c->j.file + 1);
		int n = snprintf(cfg->endpoints_config_path, sizeof(cfg->endpoints_config_path),
		                 "%.*s%s", dir_len, c->j.file, rel);
		if (n < 0 || (size_t)n >= sizeof(cfg->endpoints_config_path)) {
			return fail(c, "resolved path is too long (limit %zu bytes)",
			            sizeof(cfg->endpoints_config_path) - 1);
		}
	}
	if (c->container_path != NULL) {
		r = hako_endpoint_container_load(c->container_path, c->node, &cfg->endpoints, &sub);
		if (r != 0) {
			if (c->j.err != NULL) {
				*c->j.err = sub;
			}
			return r;
		}
		pop(c);
		return 0;
	}
	if (inline_block != NULL) {
		pop(c);
		push_key(c, "endpoints");
		r = hako_endpoint_container_load_at(c->j.file, "endpoints", c->node,
		                                    &cfg->endpoints, c->j.err);
		if (r != 0) {
			return r;
		}
		pop(c);
		return 0;
	}
	if (rel[0] == '\0') {
		return report(c, c->j.depth - 1, HAKO_ECONFIG,
		              "missing (must be the path of the endpoint container file, unless "
		              "the file has an inline \"endpoints\" block)");
	}
	r = hako_endpoint_container_load(cfg->endpoints_config_path, c->node, &cfg->endpoints,
	                                 &sub);
	if (r != 0) {
		return hakoi_jctx_sub_error(&c->j, r, &sub, cfg->endpoints_config_path);
	}
	pop(c);
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

/* {endpointId} into id; for the loaded node's connections the endpoint must be in the
 * container (*entry). */
static int load_endpoint_ref(struct ctx *c, json_t *o, int mine, char *id,
                             const hako_endpoint_entry_t **entry)
{
	static const char *const keys[] = {"endpointId"};
	const hako_endpoint_container_t *ct = c->cfg->endpoints;
	int r;
	if ((r = object_with(c, o, keys, COUNT(keys), "{endpointId}")) != 0 ||
	    (r = get_string(c, o, "endpointId", 1, id, HAKO_BRIDGE_ID_MAX)) != 0) {
		return r;
	}
	if (mine && (*entry = find_endpoint(ct, id)) == NULL) {
		push_key(c, "endpointId");
		return fail(c, "\"%s\" is not an endpoint of node \"%s\" in %s", id, c->node,
		            ct->path);
	}
	return 0;
}

static int load_destinations(struct ctx *c, json_t *conn, hako_bridge_connection_cfg_t *cc,
                             int mine)
{
	const hako_endpoint_entry_t *entry = NULL;
	int r;
	json_t *a = get_container(c, conn, "destinations", 1, 1, "an array of {endpointId}", &r);
	if (a == NULL) {
		return r;
	}
	if ((cc->destinations = calloc(json_array_size(a), sizeof(*cc->destinations))) == NULL) {
		return fail_oom(c);
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		char *id = cc->destinations[i];
		push_index(c, i);
		if ((r = load_endpoint_ref(c, json_array_get(a, i), mine, id, &entry)) != 0) {
			return r;
		}
		push_key(c, "endpointId");
		if (strcmp(id, cc->source) == 0) {
			return fail(c, "\"%s\" is the connection's source", id);
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(cc->destinations[j], id) == 0) {
				return fail(c, "\"%s\" is already listed at destinations[%zu]", id,
				            j);
			}
		}
		pop(c);
		cc->dest_count = i + 1;
		pop(c);
	}
	pop(c);
	return 0;
}

/* A bridge forwards PDUs of the source pdudef's size: every member of a group it forwards
 * must be in that pdudef. The error points at the member. */
static int check_members(struct ctx *c, const hako_bridge_group_cfg_t *g,
                         const hako_endpoint_entry_t *src, const char *conn_id)
{
	const hako_pdudef_t *def = src->config != NULL ? src->config->pdudef : NULL;
	for (size_t i = 0; def != NULL && i < g->count; i++) {
		const hako_bridge_pdu_ref_t *m = &g->pdus[i];
		int no_robot = hako_pdudef_robot(def, m->robot) == NULL;
		if (!no_robot && hako_pdudef_find(def, m->robot, m->pdu) != NULL) {
			continue;
		}
		c->j.depth = 0;
		push_key(c, "pduKeyGroups");
		push_key(c, g->id);
		push_index(c, i);
		push_key(c, no_robot ? "robot_name" : "pdu_name");
		if (no_robot) {
			return fail(
			    c,
			    "robot \"%s\" is not in %s (the pdudef of \"%s\", the source of "
			    "connection \"%s\")",
			    m->robot, def->path, src->id, conn_id);
		}
		return fail(
		    c,
		    "robot \"%s\" has no PDU \"%s\" in %s (the pdudef of \"%s\", the source "
		    "of connection \"%s\")",
		    m->robot, m->pdu, def->path, src->id, conn_id);
	}
	return 0;
}

static int load_transfers(struct ctx *c, json_t *conn, hako_bridge_connection_cfg_t *cc,
                          const hako_endpoint_entry_t *src)
{
	static const char *const keys[] = {"pduKeyGroupId", "policyId"};
	const hako_bridge_config_t *cfg = c->cfg;
	char group[HAKO_BRIDGE_ID_MAX], policy[HAKO_BRIDGE_ID_MAX];
	int r;
	json_t *a = get_container(c, conn, "transferPdus", 1, 1,
	                          "an array of {pduKeyGroupId, policyId}", &r);
	if (a == NULL) {
		return r;
	}
	if ((cc->transfers = calloc(json_array_size(a), sizeof(*cc->transfers))) == NULL) {
		return fail_oom(c);
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *t = json_array_get(a, i);
		hako_bridge_transfer_cfg_t *tr = &cc->transfers[i];
		push_index(c, i);
		if ((r = object_with(c, t, keys, COUNT(keys), "{pduKeyGroupId, policyId}")) != 0 ||
		    (r = get_string(c, t, "pduKeyGroupId", 1, group, sizeof(group))) != 0 ||
		    (r = get_string(c, t, "policyId", 1, policy, sizeof(policy))) != 0) {
			return r;
		}
		tr->group = 0;
		while (tr->group < cfg->group_count &&
		       strcmp(cfg->groups[tr->group].id, group) != 0) {
			tr->group++;
		}
		if (tr->group == cfg->group_count) {
			push_key(c, "pduKeyGroupId");
			return fail(c, "\"%s\" is not in pduKeyGroups", group);
		}
		tr->policy = 0;
		while (tr->policy < cfg->policy_count &&
		       strcmp(cfg->policies[tr->policy].id, policy) != 0) {
			tr->policy++;
		}
		if (tr->policy == cfg->policy_count) {
			push_key(c, "policyId");
			return fail(c, "\"%s\" is not in transferPolicies", policy);
		}
		if (src != NULL &&
		    (r = check_members(c, &cfg->groups[tr->group], src, cc->id)) != 0) {
			return r;
		}
		cc->transfer_count = i + 1;
		pop(c);
	}
	pop(c);
	return 0;
}

static int load_connection(struct ctx *c, json_t *all, size_t index,
                           hako_bridge_connection_cfg_t *cc, int *mine)
{
	static const char *const keys[] = {"id",           "nodeId",       "source",
	                                   "destinations", "transferPdus", "epoch_validation"};
	const hako_bridge_config_t *cfg = c->cfg;
	const hako_endpoint_entry_t *src = NULL;
	json_t *conn = json_array_get(all, index);
	int r;
	if ((r = object_with(c, conn, keys, COUNT(keys),
	                     "{id, nodeId, source, destinations, transferPdus}")) != 0 ||
	    (r = get_string(c, conn, "id", 1, cc->id, sizeof(cc->id))) != 0 ||
	    (r = get_string(c, conn, "nodeId", 1, cc->node_id, sizeof(cc->node_id))) != 0) {
		return r;
	}
	for (size_t j = 0; j < index; j++) {
		json_t *other = json_object_get(json_array_get(all, j), "id");
		if (strcmp(json_string_value(other), cc->id) == 0) {
			push_key(c, "id");
			return fail(c, "id \"%s\" is already used by connections[%zu]", cc->id, j);
		}
	}
	size_t n = 0;
	while (n < cfg->node_count && strcmp(cfg->nodes[n], cc->node_id) != 0) {
		n++;
	}
	if (n == cfg->node_count) {
		push_key(c, "nodeId");
		return fail(c, "\"%s\" is not in nodes", cc->node_id);
	}
	*mine = strcmp(cc->node_id, c->node) == 0;
	json_t *s = get_container(c, conn, "source", 0, 1, "an object {endpointId}", &r);
	if (s == NULL) {
		return r;
	}
	if ((r = load_endpoint_ref(c, s, *mine, cc->source, &src)) != 0) {
		return r;
	}
	pop(c);
	if ((r = load_destinations(c, conn, cc, *mine)) != 0 ||
	    (r = load_transfers(c, conn, cc, src)) != 0 ||
	    (r = get_bool(c, conn, "epoch_validation", &cc->epoch_validation)) != 0) {
		return r;
	}
	return 0;
}

static void connection_free(hako_bridge_connection_cfg_t *cc)
{
	free(cc->destinations);
	free(cc->transfers);
	memset(cc, 0, sizeof(*cc));
}

/* Every connection is checked; only the loaded node's are kept. */
static int load_connections(struct ctx *c, json_t *root)
{
	hako_bridge_config_t *cfg = c->cfg;
	int r;
	json_t *a = get_container(c, root, "connections", 1, 1, "an array of connections", &r);
	if (a == NULL) {
		return r;
	}
	if ((cfg->connections = calloc(json_array_size(a), sizeof(*cfg->connections))) == NULL) {
		return fail_oom(c);
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		hako_bridge_connection_cfg_t *cc = &cfg->connections[cfg->connection_count++];
		int mine = 0;
		push_index(c, i);
		if ((r = load_connection(c, a, i, cc, &mine)) != 0) {
			return r;
		}
		if (!mine) {
			connection_free(cc);
			cfg->connection_count--;
		}
		pop(c);
	}
	pop(c);
	return 0;
}

/* ---- the file ---- */

/* Stored as written: Hakoniwa's time source names (its create_time_source() takes these). */
static int load_time_source(struct ctx *c, json_t *root)
{
	static const char *const names[] = {"real", "virtual", "hakoniwa", "hakoniwa_poll",
	                                    "hakoniwa_callback"};
	const char *expected =
	    "\"real\", \"virtual\", \"hakoniwa\", \"hakoniwa_poll\" or \"hakoniwa_callback\"";
	json_t *v = json_object_get(root, "time_source_type");
	if (v == NULL) {
		return 0;
	}
	push_key(c, "time_source_type");
	if (!json_is_string(v)) {
		return fail(c, "must be %s", expected);
	}
	for (size_t i = 0; i < COUNT(names); i++) {
		if (strcmp(json_string_value(v), names[i]) == 0) {
			snprintf(c->cfg->time_source_type, sizeof(c->cfg->time_source_type), "%s",
			         names[i]);
			pop(c);
			return 0;
		}
	}
	return fail(c, "is \"%s\"; must be %s", json_string_value(v), expected);
}

static int load_root(struct ctx *c, json_t *root)
{
	static const char *const keys[] = {"$schema",          "version",   "time_source_type",
	                                   "transferPolicies", "nodes",     "endpoints_config_path",
	                                   "endpoints",        "wireLinks", "pduKeyGroups",
	                                   "connections"};
	int r;
	if (!json_is_object(root)) {
		return fail(c, "must be an object");
	}
	if ((r = check_keys(c, root, keys, COUNT(keys))) != 0) {
		return r;
	}
	json_t *v = json_object_get(root, "version");
	push_key(c, "version");
	if (v == NULL) {
		return fail_missing(c, "\"" BRIDGE_VERSION "\"");
	}
	if (!json_is_string(v)) {
		return fail(c, "must be \"" BRIDGE_VERSION "\"");
	}
	if (strcmp(json_string_value(v), BRIDGE_VERSION) != 0) {
		return fail(c, "is \"%s\"; must be \"" BRIDGE_VERSION "\"", json_string_value(v));
	}
	pop(c);
	if ((r = load_time_source(c, root)) != 0 || (r = load_policies(c, root)) != 0 ||
	    (r = load_nodes(c, root)) != 0 || (r = load_wire_links(c, root)) != 0 ||
	    (r = load_groups(c, root)) != 0 || (r = load_container(c, root)) != 0 ||
	    (r = load_connections(c, root)) != 0) {
		return r;
	}
	return 0;
}

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

static int load_file(struct ctx *c, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	int e = hakoi_read_file(path, &text, &len);
	if (e != 0) {
		return hako_error_set(c->j.err,
		                      e == ENOENT || e == ENOTDIR ? HAKO_ENOENT : HAKO_EIO, path, 0,
		                      0, "cannot open: %s", hakoi_read_file_strerror(e));
	}
	json_error_t jerr;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	int r;
	c->j.text = text;
	c->j.len = len;
	if (root == NULL) {
		r = hako_error_set(c->j.err, HAKO_ECONFIG, path, jerr.line > 0 ? jerr.line : 0,
		                   jerr.column > 0 ? jerr.column : 0, "invalid JSON: %s",
		                   jerr.text);
	} else {
		r = load_root(c, root);
	}
	json_decref(root);
	free(text);
	return r;
}

int hako_bridge_config_load(const char *path, const char *node, const char *container_path,
                            hako_bridge_config_t **out, hako_error_t *err)
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
	if (node[0] == '\0' || strlen(node) >= HAKO_BRIDGE_ID_MAX) {
		return hako_error_set(err, HAKO_EINVAL, path, 0, 0,
		                      "node id must be 1..%d characters", HAKO_BRIDGE_ID_MAX - 1);
	}
	hako_bridge_config_t *cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	snprintf(cfg->path, sizeof(cfg->path), "%s", path);
	snprintf(cfg->node, sizeof(cfg->node), "%s", node);
	struct ctx c = {.j = {.err = err, .file = path},
	                .cfg = cfg,
	                .node = node,
	                .container_path = container_path};
	int r = load_file(&c, path);
	if (r != 0) {
		hako_bridge_config_free(cfg);
		return r;
	}
	*out = cfg;
	return 0;
}
