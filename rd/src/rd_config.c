/* The RD config loader: JSON (docs/rd.md, configs/schema/rd.schema.json) checked value by value,
 * every error reported as file:line:column: path: what. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/log.h"
#include "hako/pdudef.h"
#include "hakoi/json_pos.h"
#include "rd_internal.h"

#define DEFAULT_TIMEOUT_USEC 2000000
#define MAX_TIMEOUT_USEC     86400000000LL /* a day of world time */
#define MAX_EU_ID            65535
#define COUNT(a)             (sizeof(a) / sizeof((a)[0]))

struct ctx {
	hakoi_jctx_t j; /* file, text, path: errors point at file:line:column */
	hako_rd_config_t *cfg;
	hako_pdudef_t *def;
	hako_msg_registry_t *reg;
	hakoi_rd_types_t types;
};

/* The shared place-in-document helpers of json_pos.h. */
#define push_key(c, key)             hakoi_jctx_push_key(&(c)->j, (key))
#define push_index(c, index)         hakoi_jctx_push_index(&(c)->j, (index))
#define pop(c)                       hakoi_jctx_pop(&(c)->j)
#define report(c, at, code, what)    hakoi_jctx_report(&(c)->j, (at), (code), (what))
#define fail(c, ...)                 hakoi_jctx_fail(&(c)->j, __VA_ARGS__)
#define fail_missing(c, expected)    hakoi_jctx_fail_missing(&(c)->j, (expected))
#define fail_oom(c)                  hakoi_jctx_fail_oom(&(c)->j)
#define check_keys(c, obj, known, n) hakoi_jctx_check_keys(&(c)->j, (obj), (known), (n))

/* A non-empty string shorter than size bytes. */
static int get_string(struct ctx *c, json_t *obj, const char *key, char *out, size_t size)
{
	json_t *v = json_object_get(obj, key);
	push_key(c, key);
	if (v == NULL) {
		return fail_missing(c, "a string");
	}
	if (!json_is_string(v)) {
		return fail(c, "must be a string");
	}
	size_t n = json_string_length(v);
	if (n == 0) {
		return fail(c, "must not be empty");
	}
	if (strlen(json_string_value(v)) != n) {
		return fail(c, "must not contain a NUL character");
	}
	if (n >= size) {
		return fail(c, "is %zu bytes long; the limit is %zu", n, size - 1);
	}
	memcpy(out, json_string_value(v), n + 1);
	pop(c);
	return 0;
}

/* An integer in [min, max]; an absent optional member leaves *out alone. */
static int get_int(struct ctx *c, json_t *obj, const char *key, int required, json_int_t min,
                   json_int_t max, json_int_t *out)
{
	long long v = 0;
	int r = hakoi_jctx_get_int(&c->j, obj, key, required, min, max, &v);
	if (r == 0 && json_object_get(obj, key) != NULL) {
		*out = (json_int_t)v;
	}
	return r;
}

/* A finite number (integer or real) >= min; an absent optional member leaves *out alone. */
static int get_number(struct ctx *c, json_t *obj, const char *key, int required, double min,
                      double *out)
{
	json_t *v = json_object_get(obj, key);
	push_key(c, key);
	if (v == NULL) {
		if (required) {
			return fail_missing(c, "a number");
		}
		pop(c);
		return 0;
	}
	if (!json_is_number(v) || !isfinite(json_number_value(v))) {
		return fail(c, "must be a number");
	}
	if (json_number_value(v) < min) {
		return fail(c, "is %g; must be >= %g", json_number_value(v), min);
	}
	*out = json_number_value(v);
	pop(c);
	return 0;
}

static int node_index(const hako_rd_config_t *cfg, json_int_t id)
{
	for (size_t i = 0; i < cfg->node_count; i++) {
		if (cfg->node_ids[i] == id) {
			return (int)i;
		}
	}
	return -1;
}

/* A node id declared in "nodes", at the current path (already pushed). */
static int node_value(struct ctx *c, json_t *v, uint8_t *out)
{
	if (v == NULL) {
		return fail_missing(c, "a node id");
	}
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 255) {
		return fail(c, "must be a node id (an integer in [1, 255])");
	}
	if (node_index(c->cfg, json_integer_value(v)) < 0) {
		return fail(c, "node %" JSON_INTEGER_FORMAT " is not in nodes",
		            json_integer_value(v));
	}
	*out = (uint8_t)json_integer_value(v);
	return 0;
}

static int get_node(struct ctx *c, json_t *obj, const char *key, uint8_t *out)
{
	push_key(c, key);
	int r = node_value(c, json_object_get(obj, key), out);
	if (r == 0) {
		pop(c);
	}
	return r;
}

/* An array member with min..max elements. */
static json_t *get_array(struct ctx *c, json_t *obj, const char *key, size_t min, size_t max,
                         int *rc)
{
	json_t *v = json_object_get(obj, key);
	push_key(c, key);
	if (v == NULL) {
		*rc = fail_missing(c, "an array");
		return NULL;
	}
	if (!json_is_array(v)) {
		*rc = fail(c, "must be an array");
		return NULL;
	}
	if (json_array_size(v) < min) {
		*rc = fail(c, "must not be empty");
		return NULL;
	}
	if (json_array_size(v) > max) {
		*rc = fail(c, "has %zu entries; the limit is %zu", json_array_size(v), max);
		return NULL;
	}
	*rc = 0;
	return v; /* the key stays pushed: the caller pops it */
}

/* ---- nodes ---- */

static int load_nodes(struct ctx *c, json_t *root)
{
	static const char *const keys[] = {"id", "name"};
	hako_rd_config_t *cfg = c->cfg;
	int r;
	json_t *nodes = get_array(c, root, "nodes", 1, HAKO_RD_MAX_NODES, &r);
	if (nodes == NULL) {
		return r;
	}
	for (size_t i = 0; i < json_array_size(nodes); i++) {
		json_t *n = json_array_get(nodes, i);
		json_int_t id = 0;
		char *name = cfg->node_names[i];
		push_index(c, i);
		if (!json_is_object(n)) {
			return fail(c, "must be an object");
		}
		if ((r = check_keys(c, n, keys, COUNT(keys))) != 0 ||
		    (r = get_int(c, n, "id", 1, 1, 255, &id)) != 0 ||
		    (r = get_string(c, n, "name", name, sizeof(cfg->node_names[i]))) != 0) {
			return r;
		}
		for (size_t j = 0; j < i; j++) {
			if (cfg->node_ids[j] == id) {
				push_key(c, "id");
				return fail(c,
				            "node id %" JSON_INTEGER_FORMAT
				            " is already used by nodes[%zu]",
				            id, j);
			}
			if (strcmp(cfg->node_names[j], name) == 0) {
				push_key(c, "name");
				return fail(c, "name \"%s\" is already used by nodes[%zu]", name,
				            j);
			}
		}
		cfg->node_ids[i] = (uint8_t)id;
		cfg->node_count = i + 1;
		pop(c);
	}
	pop(c);
	return 0;
}

/* ---- pdudef and the control-plane types ---- */

static int load_pdudef(struct ctx *c, json_t *root)
{
	hako_rd_config_t *cfg = c->cfg;
	char rel[sizeof(cfg->pdudef_path)];
	int r = get_string(c, root, "pdudef", rel, sizeof(rel));
	if (r != 0) {
		return r;
	}
	push_key(c, "pdudef");
	const char *slash = strrchr(c->j.file, '/');
	int dir_len = rel[0] == '/' || slash == NULL ? 0 : (int)(slash - c->j.file + 1);
	int n =
	    snprintf(cfg->pdudef_path, sizeof(cfg->pdudef_path), "%.*s%s", dir_len, c->j.file, rel);
	if (n < 0 || (size_t)n >= sizeof(cfg->pdudef_path)) {
		return fail(c, "resolved path is too long (limit %zu bytes)",
		            sizeof(cfg->pdudef_path) - 1);
	}
	hako_error_t perr;
	r = hako_pdudef_load(cfg->pdudef_path, &c->def, &perr);
	if (r != 0) {
		/* Missing: reported here; else the pdudef's own error (in the pdudef or its
		 * pdutypes). */
		return hakoi_jctx_sub_error(&c->j, r, &perr, cfg->pdudef_path);
	}
	pop(c);
	return 0;
}

static int load_types(struct ctx *c)
{
	hako_error_t terr;
	int r = hako_msg_registry_create(&c->reg);
	if (r == 0) {
		r = hakoi_rd_types_get(c->reg, &c->types, &terr);
		if (r != 0) {
			char buf[1200];
			hako_error_format(&terr, buf, sizeof(buf));
			return hako_error_set(c->j.err, r, c->j.file, 0, 0,
			                      "the RD control-plane types cannot be used: %s", buf);
		}
	}
	return r == 0 ? 0 : fail_oom(c);
}

/* ---- trigger ---- */

static int load_trigger(struct ctx *c, json_t *root)
{
	static const char *const manual_keys[] = {"type"};
	static const char *const boundary_keys[] = {"type",      "axis",       "boundary",
	                                            "v_max",     "hysteresis", "cooldown_usec",
	                                            "low_owner", "high_owner"};
	hako_rd_trigger_t *tr = &c->cfg->trigger;
	json_t *t = json_object_get(root, "trigger");
	snprintf(tr->type, sizeof(tr->type), "manual");
	if (t == NULL) {
		return 0;
	}
	push_key(c, "trigger");
	if (!json_is_object(t)) {
		return fail(c, "must be an object");
	}
	int r = get_string(c, t, "type", tr->type, sizeof(tr->type));
	if (r != 0) {
		return r;
	}
	if (strcmp(tr->type, "manual") == 0) {
		if ((r = check_keys(c, t, manual_keys, COUNT(manual_keys))) != 0) {
			return r;
		}
		pop(c);
		return 0;
	}
	if (strcmp(tr->type, "boundary") != 0) {
		push_key(c, "type");
		return fail(c, "must be \"manual\" or \"boundary\"");
	}
	json_int_t cooldown = 0;
	if ((r = check_keys(c, t, boundary_keys, COUNT(boundary_keys))) != 0 ||
	    (r = get_string(c, t, "axis", tr->axis, sizeof(tr->axis))) != 0 ||
	    (r = get_number(c, t, "boundary", 1, -INFINITY, &tr->boundary)) != 0 ||
	    (r = get_number(c, t, "v_max", 1, 0.0, &tr->v_max)) != 0 ||
	    (r = get_number(c, t, "hysteresis", 0, 0.0, &tr->hysteresis)) != 0 ||
	    (r = get_int(c, t, "cooldown_usec", 0, 0, MAX_TIMEOUT_USEC, &cooldown)) != 0 ||
	    (r = get_node(c, t, "low_owner", &tr->low_owner)) != 0 ||
	    (r = get_node(c, t, "high_owner", &tr->high_owner)) != 0) {
		return r;
	}
	tr->cooldown_usec = cooldown;
	if (tr->low_owner == tr->high_owner) {
		push_key(c, "high_owner");
		return fail(c, "must differ from low_owner");
	}
	pop(c);
	return 0;
}

/* ---- execution units ---- */

/* Where a PDU is used already, for the "is already ... of execution_units[i]" errors. */
static const char *pdu_role(const hako_rd_eu_config_t *eu, const char *robot, const char *name)
{
	if (strcmp(eu->robot, robot) != 0) {
		return NULL;
	}
	if (strcmp(eu->status.name, name) == 0) {
		return "the status PDU of";
	}
	if (strcmp(eu->context.name, name) == 0) {
		return "the context PDU of";
	}
	for (size_t i = 0; i < eu->write_count; i++) {
		if (strcmp(eu->writes[i].name, name) == 0) {
			return "written by";
		}
	}
	return NULL;
}

/* PDU `key` (or writes[i]) of the EU's robot, at the current path: resolved into ref. */
static int resolve_pdu(struct ctx *c, const hako_rd_eu_config_t *eu, const char *name,
                       hako_rd_pdu_ref_t *ref, const hako_pdudef_pdu_t **out)
{
	const hako_pdudef_pdu_t *p = hako_pdudef_find(c->def, eu->robot, name);
	if (p == NULL) {
		return fail(c, "\"%s\" is not a PDU of robot \"%s\" in %s", name, eu->robot,
		            c->cfg->pdudef_path);
	}
	for (size_t k = 0; k < c->cfg->eu_count; k++) {
		const char *role = pdu_role(&c->cfg->eus[k], eu->robot, name);
		if (role != NULL) {
			return fail(c, "\"%s\" is already %s execution_units[%zu]", name, role, k);
		}
	}
	snprintf(ref->robot, sizeof(ref->robot), "%s", eu->robot);
	snprintf(ref->name, sizeof(ref->name), "%s", name);
	snprintf(ref->type, sizeof(ref->type), "%s", p->type);
	ref->channel_id = p->channel_id;
	ref->pdu_size = p->pdu_size;
	*out = p;
	return 0;
}

static int load_control_pdu(struct ctx *c, json_t *e, hako_rd_eu_config_t *eu, int is_status)
{
	const char *key = is_status ? "status" : "context";
	const char *type = is_status ? HAKOI_RD_STATUS_TYPE : HAKOI_RD_CONTEXT_TYPE;
	hako_rd_pdu_ref_t *ref = is_status ? &eu->status : &eu->context;
	char name[sizeof(ref->name)];
	const hako_pdudef_pdu_t *p;
	int r = get_string(c, e, key, name, sizeof(name));
	if (r != 0) {
		return r;
	}
	push_key(c, key);
	if (!is_status && strcmp(name, eu->status.name) == 0) {
		return fail(c, "must differ from status");
	}
	if ((r = resolve_pdu(c, eu, name, ref, &p)) != 0) {
		return r;
	}
	if (strcmp(p->type, type) != 0) {
		return fail(c, "\"%s\" has type %s in %s; must be %s", name, p->type,
		            c->cfg->pdudef_path, type);
	}
	if (is_status && p->pdu_size < hakoi_rd_status_size(&c->types)) {
		return fail(c,
		            "\"%s\" has pdu_size %" PRIu32 " in %s; a status PDU with "
		            "unit_count 1 needs %" PRIu32,
		            name, p->pdu_size, c->cfg->pdudef_path,
		            hakoi_rd_status_size(&c->types));
	}
	uint32_t need = hakoi_rd_context_size(&c->types, eu->max_context_bytes);
	if (!is_status && p->pdu_size < need) {
		return fail(c,
		            "\"%s\" has pdu_size %" PRIu32 " in %s; max_context_bytes %" PRIu32
		            " needs %" PRIu32 " (%" PRIu32
		            " bytes of meta and base + %u-byte RD header + "
		            "%" PRIu32 ")",
		            name, p->pdu_size, c->cfg->pdudef_path, eu->max_context_bytes, need,
		            need - HAKOI_RD_CTX_HDR_SIZE - eu->max_context_bytes,
		            HAKOI_RD_CTX_HDR_SIZE, eu->max_context_bytes);
	}
	pop(c);
	return 0;
}

static int load_writes(struct ctx *c, json_t *e, hako_rd_eu_config_t *eu)
{
	int r;
	json_t *w = get_array(c, e, "writes", 1, HAKO_RD_MAX_PDUS, &r);
	if (w == NULL) {
		return r;
	}
	for (size_t i = 0; i < json_array_size(w); i++) {
		json_t *v = json_array_get(w, i);
		const hako_pdudef_pdu_t *p;
		push_index(c, i);
		if (!json_is_string(v) || json_string_length(v) == 0) {
			return fail(c, "must be a PDU name (a non-empty string)");
		}
		const char *name = json_string_value(v);
		if (strcmp(name, eu->status.name) == 0 || strcmp(name, eu->context.name) == 0) {
			return fail(c, "\"%s\" is the EU's %s PDU; only RD writes it", name,
			            strcmp(name, eu->status.name) == 0 ? "status" : "context");
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(eu->writes[j].name, name) == 0) {
				return fail(c, "\"%s\" is already listed as writes[%zu]", name, j);
			}
		}
		if ((r = resolve_pdu(c, eu, name, &eu->writes[i], &p)) != 0) {
			return r;
		}
		eu->write_count = i + 1;
		pop(c);
	}
	pop(c);
	return 0;
}

static int load_candidates(struct ctx *c, json_t *e, hako_rd_eu_config_t *eu)
{
	int r;
	json_t *a = get_array(c, e, "candidates", 1, HAKO_RD_MAX_NODES, &r);
	if (a == NULL) {
		return r;
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		uint8_t id = 0;
		push_index(c, i);
		if ((r = node_value(c, json_array_get(a, i), &id)) != 0) {
			return r;
		}
		for (size_t j = 0; j < i; j++) {
			if (eu->candidates[j] == id) {
				return fail(c, "node %u is already listed as candidates[%zu]", id,
				            j);
			}
		}
		eu->candidates[i] = id;
		eu->candidate_count = i + 1;
		pop(c);
	}
	const hako_rd_trigger_t *tr = &c->cfg->trigger;
	if (strcmp(tr->type, "boundary") == 0) {
		const uint8_t owners[2] = {tr->low_owner, tr->high_owner};
		for (int k = 0; k < 2; k++) {
			size_t j = 0;
			while (j < eu->candidate_count && eu->candidates[j] != owners[k]) {
				j++;
			}
			if (j == eu->candidate_count) {
				return fail(c, "must include node %u, the trigger's %s", owners[k],
				            k == 0 ? "low_owner" : "high_owner");
			}
		}
	}
	pop(c);
	return 0;
}

static int load_eu(struct ctx *c, json_t *e, size_t index)
{
	static const char *const keys[] = {"id",
	                                   "name",
	                                   "robot",
	                                   "writes",
	                                   "candidates",
	                                   "initial_owner",
	                                   "max_context_bytes",
	                                   "status",
	                                   "context"};
	hako_rd_config_t *cfg = c->cfg;
	hako_rd_eu_config_t *eu = &cfg->eus[index];
	json_int_t id = 0, max_ctx = 0;
	int r;
	if (!json_is_object(e)) {
		return fail(c, "must be an object");
	}
	if ((r = check_keys(c, e, keys, COUNT(keys))) != 0 ||
	    (r = get_int(c, e, "id", 1, 0, MAX_EU_ID, &id)) != 0 ||
	    (r = get_string(c, e, "name", eu->name, sizeof(eu->name))) != 0) {
		return r;
	}
	for (size_t j = 0; j < index; j++) {
		if (cfg->eus[j].id == id) {
			push_key(c, "id");
			return fail(c,
			            "id %" JSON_INTEGER_FORMAT " is already used by "
			            "execution_units[%zu]",
			            id, j);
		}
		if (strcmp(cfg->eus[j].name, eu->name) == 0) {
			push_key(c, "name");
			return fail(c, "name \"%s\" is already used by execution_units[%zu]",
			            eu->name, j);
		}
	}
	eu->id = (uint32_t)id;
	if ((r = get_string(c, e, "robot", eu->robot, sizeof(eu->robot))) != 0) {
		return r;
	}
	if (hako_pdudef_robot(c->def, eu->robot) == NULL) {
		push_key(c, "robot");
		return fail(c, "robot \"%s\" is not in %s", eu->robot, cfg->pdudef_path);
	}
	if ((r = get_int(c, e, "max_context_bytes", 1, 1, HAKOI_RD_MAX_CONTEXT, &max_ctx)) != 0) {
		return r;
	}
	eu->max_context_bytes = (uint32_t)max_ctx;
	if ((r = load_control_pdu(c, e, eu, 1)) != 0 || (r = load_control_pdu(c, e, eu, 0)) != 0 ||
	    (r = load_writes(c, e, eu)) != 0 || (r = load_candidates(c, e, eu)) != 0 ||
	    (r = get_node(c, e, "initial_owner", &eu->initial_owner)) != 0) {
		return r;
	}
	size_t j = 0;
	while (j < eu->candidate_count && eu->candidates[j] != eu->initial_owner) {
		j++;
	}
	if (j == eu->candidate_count) {
		push_key(c, "initial_owner");
		return fail(c, "node %u is not one of the candidates", eu->initial_owner);
	}
	return 0;
}

static int load_eus(struct ctx *c, json_t *root)
{
	int r;
	json_t *a = get_array(c, root, "execution_units", 1, HAKO_RD_MAX_EUS, &r);
	if (a == NULL) {
		return r;
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		push_index(c, i);
		if ((r = load_eu(c, json_array_get(a, i), i)) != 0) {
			return r;
		}
		c->cfg->eu_count = i + 1;
		pop(c);
	}
	pop(c);
	return 0;
}

static int load_root(struct ctx *c, json_t *root)
{
	static const char *const keys[] = {
	    "$schema", "pdudef", "nodes", "handoff_timeout_usec", "trigger", "execution_units"};
	json_int_t timeout = DEFAULT_TIMEOUT_USEC;
	int r;
	if (!json_is_object(root)) {
		return fail(c, "must be an object");
	}
	if ((r = check_keys(c, root, keys, COUNT(keys))) != 0 || (r = load_nodes(c, root)) != 0 ||
	    (r = get_int(c, root, "handoff_timeout_usec", 0, 1, MAX_TIMEOUT_USEC, &timeout)) != 0 ||
	    (r = load_trigger(c, root)) != 0 || (r = load_pdudef(c, root)) != 0 ||
	    (r = load_types(c)) != 0 || (r = load_eus(c, root)) != 0) {
		return r;
	}
	c->cfg->handoff_timeout_usec = timeout;
	return 0;
}

int hako_rd_config_load(const char *path, hako_rd_config_t **out, hako_error_t *err)
{
	hako_error_clear(err);
	if (out != NULL) {
		*out = NULL;
	}
	if (path == NULL || out == NULL) {
		return hako_error_set(err, HAKO_EINVAL, path, 0, 0, "no path or no result pointer");
	}
	hako_rd_config_t *cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	if (strlen(path) >= sizeof(cfg->path)) {
		free(cfg);
		return hako_error_set(err, HAKO_ENAMETOOLONG, path, 0, 0,
		                      "path is too long (limit %zu bytes)", sizeof(cfg->path) - 1);
	}
	snprintf(cfg->path, sizeof(cfg->path), "%s", path);
	char *text = NULL;
	size_t len = 0;
	int e = hakoi_read_file(path, &text, &len);
	if (e != 0) {
		free(cfg);
		return hako_error_set(err, e == ENOENT || e == ENOTDIR ? HAKO_ENOENT : HAKO_EIO,
		                      path, 0, 0, "cannot open: %s", hakoi_read_file_strerror(e));
	}
	cfg->config_hash = hakoi_rd_fnv1a(text, len);
	json_error_t jerr;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	int r;
	struct ctx c = {.j = {.err = err, .file = path, .text = text, .len = len}, .cfg = cfg};
	if (root == NULL) {
		r = hako_error_set(err, HAKO_ECONFIG, path, jerr.line > 0 ? jerr.line : 0,
		                   jerr.column > 0 ? jerr.column : 0, "invalid JSON: %s",
		                   jerr.text);
	} else {
		r = load_root(&c, root);
	}
	json_decref(root);
	hako_pdudef_free(c.def);
	hako_msg_registry_destroy(c.reg);
	free(text);
	if (r != 0) {
		free(cfg);
		return r;
	}
	HAKO_DEBUG("rd config %s: %zu nodes, %zu execution units, hash 0x%08" PRIx32, path,
	           cfg->node_count, cfg->eu_count, cfg->config_hash);
	*out = cfg;
	return 0;
}

void hako_rd_config_free(hako_rd_config_t *cfg)
{
	free(cfg);
}

const hako_rd_eu_config_t *hako_rd_config_eu(const hako_rd_config_t *cfg, const char *name)
{
	if (cfg == NULL || name == NULL) {
		return NULL;
	}
	for (size_t i = 0; i < cfg->eu_count; i++) {
		if (strcmp(cfg->eus[i].name, name) == 0) {
			return &cfg->eus[i];
		}
	}
	return NULL;
}
