/* The RD config loader (docs/rd.md, configs/schema/rd.schema.json): tables of the config toolkit
 * (hakoi/cfg.h), with callbacks for the cross-references: node ids declared in "nodes", robots
 * and PDUs in the pdudef, control-plane PDUs of the right type and size, no PDU used twice. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/log.h"
#include "hako/pdudef.h"
#include "hakoi/cfg.h"
#include "rd_internal.h"

#define DEFAULT_TIMEOUT_USEC 2000000
#define MAX_TIMEOUT_USEC     86400000000LL /* a day of world time */
#define MAX_EU_ID            65535
#define NODE_ID              "an integer node id in [1, 255]"

/* The walk's context (w->user). */
struct ctx {
	hako_rd_config_t *cfg;
	hako_pdudef_t *def;
	hako_msg_registry_t *reg;
	hakoi_rd_types_t types;
};

/* The execution unit being read: the walker counts it in eu_count while it reads it. */
static hako_rd_eu_config_t *current_eu(const hakoi_walk_t *w, size_t *index)
{
	const struct ctx *c = w->user;
	*index = c->cfg->eu_count - 1;
	return &c->cfg->eus[*index];
}

/* ---- nodes ---- */

static int node_declared(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_rd_config_t *cfg = ((const struct ctx *)w->user)->cfg;
	(void)base;
	(void)f;
	for (size_t i = 0; i < cfg->node_count; i++) {
		if (cfg->node_ids[i] == json_integer_value(v)) {
			return 0;
		}
	}
	return hakoi_walk_fail(w, "node %" JSON_INTEGER_FORMAT " is not in nodes",
	                       json_integer_value(v));
}

#define NODE(key_, T, M)                                                                           \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_INT, .flags = HAKOI_F_REQUIRED | HAKOI_F_UNSIGNED,  \
		HAKOI_AT(T, M), .min = 1, .max = 255, .expect = NODE_ID, .check = node_declared    \
	}

struct node {
	uint8_t id;
	char name[HAKOI_MEMBER_SIZE(hako_rd_config_t, node_names[0])];
};

static const hakoi_field_t node_fields[] = {
    HAKOI_INT("id", HAKOI_F_REQUIRED | HAKOI_F_UNSIGNED, struct node, id, 1, 255),
    HAKOI_STRING("name", HAKOI_F_REQUIRED, struct node, name),
    HAKOI_END,
};

/* Ids and names are kept in two arrays of the config: an element is read, then stored. */
static int node_entry(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hako_rd_config_t *cfg = base;
	size_t i = hakoi_walk_index(w);
	struct node n;
	(void)f;
	int r = hakoi_walk_object(w, v, node_fields, &n);
	if (r != 0) {
		return r;
	}
	for (size_t j = 0; j < i; j++) {
		if (cfg->node_ids[j] == n.id) {
			hakoi_walk_push_key(w, "id");
			return hakoi_walk_fail_dup(w, j, "node id %u", n.id);
		}
		if (strcmp(cfg->node_names[j], n.name) == 0) {
			hakoi_walk_push_key(w, "name");
			return hakoi_walk_fail_dup(w, j, "name \"%s\"", n.name);
		}
	}
	cfg->node_ids[i] = n.id;
	memcpy(cfg->node_names[i], n.name, sizeof(n.name));
	return 0;
}

/* ---- trigger ---- */

static int owners_differ(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_rd_trigger_t *tr = base;
	(void)v;
	(void)f;
	if (tr->low_owner == tr->high_owner) {
		hakoi_walk_push_key(w, "high_owner");
		return hakoi_walk_fail(w, "must differ from low_owner");
	}
	return 0;
}

static const hakoi_field_t manual_fields[] = {
    HAKOI_IGNORE("type"),
    HAKOI_END,
};

static const hakoi_field_t boundary_fields[] = {
    HAKOI_IGNORE("type"),
    HAKOI_STRING("axis", HAKOI_F_REQUIRED, hako_rd_trigger_t, axis),
    HAKOI_NUMBER("boundary", HAKOI_F_REQUIRED, hako_rd_trigger_t, boundary, -INFINITY, INFINITY),
    HAKOI_NUMBER("v_max", HAKOI_F_REQUIRED, hako_rd_trigger_t, v_max, 0.0, INFINITY),
    HAKOI_NUMBER("hysteresis", 0, hako_rd_trigger_t, hysteresis, 0.0, INFINITY),
    HAKOI_INT("cooldown_usec", 0, hako_rd_trigger_t, cooldown_usec, 0, MAX_TIMEOUT_USEC),
    NODE("low_owner", hako_rd_trigger_t, low_owner),
    NODE("high_owner", hako_rd_trigger_t, high_owner),
    HAKOI_CHECK(owners_differ),
    HAKOI_END,
};

/* grid: boundaries strictly increasing along each axis. */
static int grid_increasing(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	size_t i = hakoi_walk_index(w);
	const double *b = base;
	(void)v;
	if (i > 0 && !(b[0] > b[-1])) {
		return hakoi_walk_fail(w, "must be greater than %s[%zu] (%g): boundaries increase",
		                       f->key, i - 1, b[-1]);
	}
	return 0;
}

static const hakoi_field_t grid_line_elem = {
    .kind = HAKOI_K_NUMBER, .size = sizeof(double), .dmin = -INFINITY, .dmax = INFINITY};
static const hakoi_field_t grid_owner_elem = {.kind = HAKOI_K_INT,
                                              .flags = HAKOI_F_UNSIGNED,
                                              .size = sizeof(uint8_t),
                                              .min = 1,
                                              .max = 255,
                                              .expect = NODE_ID,
                                              .check = node_declared};

/* owners[j][i]: the node of cell i along x in row j along y; x and y are read before it. */
static int grid_owners(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hako_rd_trigger_t *tr = base;
	size_t rows = tr->grid_ny + 1, cols = tr->grid_nx + 1;
	(void)f;
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of rows (one per cell along y)");
	}
	if (json_array_size(v) != rows) {
		return hakoi_walk_fail(w,
		                       "has %zu rows; must have %zu, one per cell along y (y has "
		                       "%zu boundar%s)",
		                       json_array_size(v), rows, tr->grid_ny,
		                       tr->grid_ny == 1 ? "y" : "ies");
	}
	for (size_t j = 0; j < rows; j++) {
		json_t *row = json_array_get(v, j);
		hakoi_walk_push_index(w, j);
		if (!json_is_array(row)) {
			return hakoi_walk_fail_must(w,
			                            "an array of node ids (one per cell along x)");
		}
		if (json_array_size(row) != cols) {
			return hakoi_walk_fail(
			    w,
			    "has %zu owners; must have %zu, one per cell along x "
			    "(x has %zu boundar%s)",
			    json_array_size(row), cols, tr->grid_nx,
			    tr->grid_nx == 1 ? "y" : "ies");
		}
		for (size_t i = 0; i < cols; i++) {
			hakoi_walk_push_index(w, i);
			int r = hakoi_walk_value(w, json_array_get(row, i), &grid_owner_elem,
			                         &tr->grid_owner[j][i]);
			if (r != 0) {
				return r;
			}
			hakoi_walk_pop(w);
		}
		hakoi_walk_pop(w);
	}
	return 0;
}

static int grid_cells(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_rd_trigger_t *tr = base;
	(void)v;
	(void)f;
	if (tr->grid_nx + tr->grid_ny == 0) {
		hakoi_walk_push_key(w, "x");
		return hakoi_walk_fail(w, "a grid needs at least one boundary in x or y");
	}
	return 0;
}

static const hakoi_field_t grid_fields[] = {
    HAKOI_IGNORE("type"),
    {.key = "x",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_IN(hako_rd_trigger_t, grid_x, grid_nx),
     .elem = &grid_line_elem,
     .check = grid_increasing},
    {.key = "y",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_IN(hako_rd_trigger_t, grid_y, grid_ny),
     .elem = &grid_line_elem,
     .check = grid_increasing},
    HAKOI_CUSTOM("owners", HAKOI_F_REQUIRED, grid_owners, "an array of rows of node ids"),
    HAKOI_NUMBER("v_max", HAKOI_F_REQUIRED, hako_rd_trigger_t, v_max, 0.0, INFINITY),
    HAKOI_NUMBER("hysteresis", 0, hako_rd_trigger_t, hysteresis, 0.0, INFINITY),
    HAKOI_INT("cooldown_usec", 0, hako_rd_trigger_t, cooldown_usec, 0, MAX_TIMEOUT_USEC),
    HAKOI_CHECK(grid_cells),
    HAKOI_END,
};

static const hakoi_field_t timetable_fields[] = {
    HAKOI_IGNORE("type"),
    HAKOI_INT("period_usec", HAKOI_F_REQUIRED, hako_rd_trigger_t, period_usec, 1000,
              MAX_TIMEOUT_USEC),
    HAKOI_END,
};

/* The type selects the table of the other members. */
static int trigger(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	static const char *const names[] = {"manual", "boundary", "timetable", "grid", NULL};
	static const hakoi_field_t *const tables[] = {manual_fields, boundary_fields,
	                                              timetable_fields, grid_fields};
	static const hakoi_field_t type = {.key = "type",
	                                   .kind = HAKOI_K_ENUM,
	                                   .flags = HAKOI_F_REQUIRED,
	                                   .size = sizeof(int),
	                                   .names = names};
	hako_rd_trigger_t *tr = &((hako_rd_config_t *)base)->trigger;
	int kind = 0;
	(void)f;
	if (!json_is_object(v)) {
		return hakoi_walk_fail_must(w, "an object");
	}
	int r = hakoi_walk_member(w, v, &type, &kind);
	if (r != 0) {
		return r;
	}
	snprintf(tr->type, sizeof(tr->type), "%s", names[kind]);
	return hakoi_walk_object(w, v, tables[kind], tr);
}

/* ---- pdudef and the control-plane types ---- */

static int load_pdudef(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	struct ctx *c = w->user;
	const hako_rd_config_t *cfg = base;
	hako_error_t sub;
	(void)v;
	(void)f;
	int r = hako_pdudef_load(cfg->pdudef_path, &c->def, &sub);
	if (r != 0) {
		/* Missing: reported here; else the pdudef's own error (in the pdudef or its
		 * pdutypes). */
		return hakoi_walk_sub_error(w, r, &sub, cfg->pdudef_path);
	}
	if ((r = hako_msg_registry_create(&c->reg)) != 0) {
		return hakoi_walk_fail_oom(w);
	}
	if ((r = hakoi_rd_types_get(c->reg, &c->types, &sub)) != 0) {
		char buf[1200];
		hako_error_format(&sub, buf, sizeof(buf));
		return hako_error_set(w->j.err, r, w->j.file, 0, 0,
		                      "the RD control-plane types cannot be used: %s", buf);
	}
	return 0;
}

/* ---- execution units ---- */

static int eu_id_unique(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_rd_config_t *cfg = ((const struct ctx *)w->user)->cfg;
	const hako_rd_eu_config_t *eu = base;
	size_t index;
	(void)v;
	(void)f;
	current_eu(w, &index);
	for (size_t j = 0; j < index; j++) {
		if (cfg->eus[j].id == eu->id) {
			return hakoi_walk_fail_dup(w, j, "id %" PRIu32, eu->id);
		}
	}
	return 0;
}

static int eu_name_unique(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_rd_config_t *cfg = ((const struct ctx *)w->user)->cfg;
	const hako_rd_eu_config_t *eu = base;
	size_t index;
	(void)v;
	(void)f;
	current_eu(w, &index);
	for (size_t j = 0; j < index; j++) {
		if (strcmp(cfg->eus[j].name, eu->name) == 0) {
			return hakoi_walk_fail_dup(w, j, "name \"%s\"", eu->name);
		}
	}
	return 0;
}

static int robot_in_pdudef(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const struct ctx *c = w->user;
	const hako_rd_eu_config_t *eu = base;
	(void)v;
	(void)f;
	if (hako_pdudef_robot(c->def, eu->robot) == NULL) {
		return hakoi_walk_fail(w, "robot \"%s\" is not in %s", eu->robot,
		                       c->cfg->pdudef_path);
	}
	return 0;
}

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

/* ref->name, a PDU of the current EU's robot used by no earlier EU: the rest of ref is filled
 * from the pdudef. */
static int resolve_pdu(hakoi_walk_t *w, hako_rd_pdu_ref_t *ref, const hako_pdudef_pdu_t **out)
{
	const struct ctx *c = w->user;
	size_t index;
	const hako_rd_eu_config_t *eu = current_eu(w, &index);
	const hako_pdudef_pdu_t *p = hako_pdudef_find(c->def, eu->robot, ref->name);
	if (p == NULL) {
		return hakoi_walk_fail(w, "\"%s\" is not a PDU of robot \"%s\" in %s", ref->name,
		                       eu->robot, c->cfg->pdudef_path);
	}
	for (size_t k = 0; k < index; k++) {
		const char *role = pdu_role(&c->cfg->eus[k], eu->robot, ref->name);
		if (role != NULL) {
			return hakoi_walk_fail(w, "\"%s\" is already %s execution_units[%zu]",
			                       ref->name, role, k);
		}
	}
	snprintf(ref->robot, sizeof(ref->robot), "%s", eu->robot);
	snprintf(ref->type, sizeof(ref->type), "%s", p->type);
	ref->channel_id = p->channel_id;
	ref->pdu_size = p->pdu_size;
	*out = p;
	return 0;
}

static int control_pdu(hakoi_walk_t *w, hako_rd_eu_config_t *eu, int is_status)
{
	const struct ctx *c = w->user;
	const char *type = is_status ? HAKOI_RD_STATUS_TYPE : HAKOI_RD_CONTEXT_TYPE;
	hako_rd_pdu_ref_t *ref = is_status ? &eu->status : &eu->context;
	const hako_pdudef_pdu_t *p;
	if (!is_status && strcmp(ref->name, eu->status.name) == 0) {
		return hakoi_walk_fail(w, "must differ from status");
	}
	int r = resolve_pdu(w, ref, &p);
	if (r != 0) {
		return r;
	}
	if (strcmp(p->type, type) != 0) {
		return hakoi_walk_fail(w, "\"%s\" has type %s in %s; must be %s", ref->name,
		                       p->type, c->cfg->pdudef_path, type);
	}
	if (is_status && p->pdu_size < hakoi_rd_status_size(&c->types)) {
		return hakoi_walk_fail(w,
		                       "\"%s\" has pdu_size %" PRIu32 " in %s; a status PDU with "
		                       "unit_count 1 needs %" PRIu32,
		                       ref->name, p->pdu_size, c->cfg->pdudef_path,
		                       hakoi_rd_status_size(&c->types));
	}
	uint32_t need = hakoi_rd_context_size(&c->types, eu->max_context_bytes);
	if (!is_status && p->pdu_size < need) {
		return hakoi_walk_fail(
		    w,
		    "\"%s\" has pdu_size %" PRIu32 " in %s; max_context_bytes %" PRIu32
		    " needs %" PRIu32 " (%" PRIu32 " bytes of meta and base + %u-byte RD header + "
		    "%" PRIu32 ")",
		    ref->name, p->pdu_size, c->cfg->pdudef_path, eu->max_context_bytes, need,
		    need - HAKOI_RD_CTX_HDR_SIZE - eu->max_context_bytes, HAKOI_RD_CTX_HDR_SIZE,
		    eu->max_context_bytes);
	}
	return 0;
}

static int status_pdu(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	return control_pdu(w, base, 1);
}

static int context_pdu(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	return control_pdu(w, base, 0);
}

static int write_pdu(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	size_t index, i = hakoi_walk_index(w);
	hako_rd_eu_config_t *eu = current_eu(w, &index);
	hako_rd_pdu_ref_t *ref = base;
	const hako_pdudef_pdu_t *p;
	(void)v;
	(void)f;
	if (strcmp(ref->name, eu->status.name) == 0 || strcmp(ref->name, eu->context.name) == 0) {
		return hakoi_walk_fail(w, "\"%s\" is the EU's %s PDU; only RD writes it", ref->name,
		                       strcmp(ref->name, eu->status.name) == 0 ? "status"
		                                                               : "context");
	}
	for (size_t j = 0; j < i; j++) {
		if (strcmp(eu->writes[j].name, ref->name) == 0) {
			return hakoi_walk_fail_dup(w, j, "\"%s\"", ref->name);
		}
	}
	return resolve_pdu(w, ref, &p);
}

static int candidate_unique(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	size_t index, i = hakoi_walk_index(w);
	const hako_rd_eu_config_t *eu = current_eu(w, &index);
	uint8_t id = *(const uint8_t *)base;
	(void)v;
	(void)f;
	for (size_t j = 0; j < i; j++) {
		if (eu->candidates[j] == id) {
			return hakoi_walk_fail_dup(w, j, "node %u", id);
		}
	}
	return 0;
}

static int is_candidate(const hako_rd_eu_config_t *eu, uint8_t node)
{
	for (size_t j = 0; j < eu->candidate_count; j++) {
		if (eu->candidates[j] == node) {
			return 1;
		}
	}
	return 0;
}

/* The owners the EU may start with or be handed to by the trigger are among its candidates. */
static int eu_owners(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const hako_rd_eu_config_t *eu = base;
	const hako_rd_trigger_t *tr = &((const struct ctx *)w->user)->cfg->trigger;
	(void)v;
	(void)f;
	if (strcmp(tr->type, "boundary") == 0) {
		const uint8_t owners[2] = {tr->low_owner, tr->high_owner};
		for (int k = 0; k < 2; k++) {
			if (!is_candidate(eu, owners[k])) {
				hakoi_walk_push_key(w, "candidates");
				return hakoi_walk_fail(w, "must include node %u, the trigger's %s",
				                       owners[k],
				                       k == 0 ? "low_owner" : "high_owner");
			}
		}
	}
	for (size_t j = 0; strcmp(tr->type, "grid") == 0 && j <= tr->grid_ny; j++) {
		for (size_t i = 0; i <= tr->grid_nx; i++) {
			if (!is_candidate(eu, tr->grid_owner[j][i])) {
				hakoi_walk_push_key(w, "candidates");
				return hakoi_walk_fail(
				    w,
				    "must include node %u, the trigger's owner of "
				    "cell owners[%zu][%zu]",
				    tr->grid_owner[j][i], j, i);
			}
		}
	}
	if (!is_candidate(eu, eu->initial_owner)) {
		hakoi_walk_push_key(w, "initial_owner");
		return hakoi_walk_fail(w, "node %u is not one of the candidates",
		                       eu->initial_owner);
	}
	return 0;
}

static const hakoi_field_t write_elem = {
    .kind = HAKOI_K_STRING, HAKOI_AT(hako_rd_pdu_ref_t, name), .expect = "a PDU name (a string)"};
static const hakoi_field_t candidate_elem = {.kind = HAKOI_K_INT,
                                             .flags = HAKOI_F_UNSIGNED,
                                             .size = sizeof(uint8_t),
                                             .min = 1,
                                             .max = 255,
                                             .expect = NODE_ID,
                                             .check = node_declared};

static const hakoi_field_t eu_fields[] = {
    {.key = "id",
     .kind = HAKOI_K_INT,
     .flags = HAKOI_F_REQUIRED | HAKOI_F_UNSIGNED,
     HAKOI_AT(hako_rd_eu_config_t, id),
     .min = 0,
     .max = MAX_EU_ID,
     .check = eu_id_unique},
    {.key = "name",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hako_rd_eu_config_t, name),
     .check = eu_name_unique},
    {.key = "robot",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hako_rd_eu_config_t, robot),
     .check = robot_in_pdudef},
    HAKOI_INT("max_context_bytes", HAKOI_F_REQUIRED | HAKOI_F_UNSIGNED, hako_rd_eu_config_t,
              max_context_bytes, 1, HAKOI_RD_MAX_CONTEXT),
    {.key = "status",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hako_rd_eu_config_t, status.name),
     .check = status_pdu},
    {.key = "context",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hako_rd_eu_config_t, context.name),
     .check = context_pdu},
    {.key = "writes",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     .min = 1,
     HAKOI_ELEMS_IN(hako_rd_eu_config_t, writes, write_count),
     .elem = &write_elem,
     .check = write_pdu},
    {.key = "candidates",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     .min = 1,
     HAKOI_ELEMS_IN(hako_rd_eu_config_t, candidates, candidate_count),
     .elem = &candidate_elem,
     .check = candidate_unique},
    NODE("initial_owner", hako_rd_eu_config_t, initial_owner),
    HAKOI_CHECK(eu_owners),
    HAKOI_END,
};

static const hakoi_field_t eu_elem = {.kind = HAKOI_K_OBJECT, .fields = eu_fields};

/* "light": the nodes of one domain hand EUs over themselves; "full": the conductor's server
 * node commits every hand-off (hako/rd_master.h). */
static const char *const mode_names[] = {"light", "full", NULL};

/* In the order the checks need: nodes before what names them, the pdudef before the EUs. */
static const hakoi_field_t root_fields[] = {
    HAKOI_IGNORE("$schema"),
    {.key = "nodes",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     .min = 1,
     .max = HAKO_RD_MAX_NODES,
     .count = HAKOI_COUNT(hako_rd_config_t, node_count),
     .parse = node_entry},
    HAKOI_ENUM("mode", 0, hako_rd_config_t, mode, mode_names, NULL),
    HAKOI_INT("handoff_timeout_usec", 0, hako_rd_config_t, handoff_timeout_usec, 1,
              MAX_TIMEOUT_USEC),
    HAKOI_CUSTOM("trigger", 0, trigger, "an object"),
    {.key = "pdudef",
     .kind = HAKOI_K_PATH,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hako_rd_config_t, pdudef_path),
     .check = load_pdudef},
    {.key = "execution_units",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     .min = 1,
     .max = HAKO_RD_MAX_EUS,
     HAKOI_ELEMS_NEW(hako_rd_config_t, eus, eu_count),
     .elem = &eu_elem},
    HAKOI_END,
};

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
	json_t *root;
	char *text;
	size_t len;
	int r = hakoi_cfg_load(path, err, &root, &text, &len);
	if (r != 0) {
		free(cfg);
		return r;
	}
	cfg->config_hash = hakoi_rd_fnv1a(text, len);
	cfg->handoff_timeout_usec = DEFAULT_TIMEOUT_USEC;
	snprintf(cfg->trigger.type, sizeof(cfg->trigger.type), "manual");
	struct ctx c = {.cfg = cfg};
	hakoi_walk_t w;
	hakoi_walk_init(&w, err, path, text, len, &c);
	r = hakoi_walk_object(&w, root, root_fields, cfg);
	json_decref(root);
	hako_pdudef_free(c.def);
	hako_msg_registry_destroy(c.reg);
	free(text);
	if (r != 0) {
		hako_rd_config_free(cfg); /* and the EU table the walker may have allocated */
		return r;
	}
	HAKO_DEBUG("rd config %s: %zu nodes, %zu execution units, hash 0x%08" PRIx32, path,
	           cfg->node_count, cfg->eu_count, cfg->config_hash);
	*out = cfg;
	return 0;
}

void hako_rd_config_free(hako_rd_config_t *cfg)
{
	if (cfg != NULL) {
		free(cfg->eus);
	}
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
