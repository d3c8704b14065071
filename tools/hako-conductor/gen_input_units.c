/* The eu-input's units (gen_input.c reads the file): eu_types, execution_units (with hako's own
 * command, args, asset and candidates), and eu_pdu_bindings, the older form of a unit's
 * groups. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_input.h"

/* ---- units ---- */

static int group_index(const hakoi_gen_t *g, const char *id)
{
	for (size_t i = 0; i < g->group_count; i++) {
		if (strcmp(g->groups[i].id, id) == 0) {
			return (int)i;
		}
	}
	return -1;
}

/* An array of group ids into flags (one per group). */
static int parse_group_list(hakoi_walk_t *w, json_t *v, unsigned char *flags)
{
	const hakoi_gen_t *g = ld_of(w)->g;
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of group ids");
	}
	for (size_t i = 0; i < json_array_size(v); i++) {
		char id[HAKO_NAME_MAX];
		hakoi_walk_push_index(w, i);
		int r = hakoi_gen_get_string(w, json_array_get(v, i), id, sizeof(id));
		if (r != 0) {
			return r;
		}
		int k = group_index(g, id);
		if (k < 0) {
			return hakoi_walk_fail(w, "group \"%s\" is not in %s", id,
			                       ld_of(w)->type_groups_given ? "pdu_type_groups"
			                                                   : "pdu_groups");
		}
		flags[k] = 1;
		hakoi_walk_pop(w);
	}
	return 0;
}

static int parse_writes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return parse_group_list(w, v, *(unsigned char **)base);
}

static int parse_reads(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return parse_group_list(w, v, ((unsigned char **)base)[1]);
}

static const hakoi_field_t etype_fields[] = {
    HAKOI_CUSTOM("writes", HAKOI_F_REQUIRED, parse_writes, "an array of group ids"),
    HAKOI_CUSTOM("reads", HAKOI_F_REQUIRED, parse_reads, "an array of group ids"),
    HAKOI_END,
};

static unsigned char *group_flags(const hakoi_gen_t *g)
{
	return calloc(g->group_count > 0 ? g->group_count : 1, 1);
}

static int parse_etype(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	struct etype *t = base;
	const hakoi_gen_t *g = ld_of(w)->g;
	int r = hakoi_walk_string(w, hakoi_walk_key(w), strlen(hakoi_walk_key(w)), 0, t->name,
	                          sizeof(t->name));
	if (r != 0) {
		return r;
	}
	t->writes = group_flags(g);
	t->reads = group_flags(g);
	if (t->writes == NULL || t->reads == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	unsigned char *lists[2] = {t->writes, t->reads};
	return hakoi_walk_value(
	    w, v, &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = etype_fields}, lists);
}

int hakoi_gen_parse_etypes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	static const hakoi_field_t map = {.kind = HAKOI_K_MAP,
	                                  HAKOI_ELEMS_NEW(struct ld, etypes, etype_count),
	                                  .parse = parse_etype,
	                                  .expect = "an object of type: {writes, reads}"};
	return hakoi_walk_value(w, v, &map, ld_of(w));
}

static const struct etype *etype_of(const struct ld *l, const char *name)
{
	for (size_t i = 0; i < l->etype_count; i++) {
		if (strcmp(l->etypes[i].name, name) == 0) {
			return &l->etypes[i];
		}
	}
	return NULL;
}

int hakoi_gen_unit_of(const hakoi_gen_t *g, const char *name)
{
	for (size_t i = 0; i < g->unit_count; i++) {
		if (strcmp(g->units[i].name, name) == 0) {
			return (int)i;
		}
	}
	return -1;
}

static int check_unit_name(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	const char *s = (const char *)base + f->offset;
	if (!hakoi_gen_valid_name(s)) {
		return hakoi_walk_fail(
		    w,
		    "\"%s\": a unit's name has 1 to %d letters, digits, '.', '_' "
		    "or '-' and starts with a letter or digit (it names its "
		    "process and log)",
		    s, HAKOI_GEN_NAME_MAX - 1);
	}
	if (strcmp(s, "hako-bridge") == 0) {
		return hakoi_walk_fail(w,
		                       "\"hako-bridge\" is the name of each node's bridge process");
	}
	return 0;
}

static int check_eu_type(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	const char *s = (const char *)base + f->offset;
	return etype_of(ld_of(w), s) != NULL
	           ? 0
	           : hakoi_walk_fail(w, "unit type \"%s\" is not in eu_types", s);
}

static int parse_command(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_gen_unit_t *u = base;
	int r = hakoi_gen_get_string(w, v, NULL, 0);
	if (r == 0 && (u->command = strdup(json_string_value(v))) == NULL) {
		r = hakoi_walk_fail_oom(w);
	}
	return r;
}

static int parse_arg(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	if (!json_is_string(v)) {
		return hakoi_walk_fail_must(w, "a string");
	}
	char **a = base;
	*a = strdup(json_string_value(v));
	return *a != NULL ? 0 : hakoi_walk_fail_oom(w);
}

/* hako's own, with mode "rd": the client nodes that may own the unit (default: every client in
 * execution_nodes). */
static int parse_candidates(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	struct ld *l = ld_of(w);
	const hakoi_gen_t *g = l->g;
	hakoi_gen_unit_t *u = base;
	if (!g->rd) {
		return hakoi_walk_fail(w, "only with mode \"rd\"");
	}
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of client node ids");
	}
	if (json_array_size(v) == 0) {
		return hakoi_walk_fail(w, "must not be empty");
	}
	for (size_t i = 0; i < json_array_size(v); i++) {
		char id[HAKO_NAME_MAX];
		hakoi_walk_push_index(w, i);
		int r = hakoi_gen_get_string(w, json_array_get(v, i), id, sizeof(id));
		if (r != 0) {
			return r;
		}
		int k = hakoi_gen_node_of(l, id);
		if (k < 0) {
			return hakoi_gen_fail_not_node(w, id);
		}
		if (k == 0) {
			return hakoi_walk_fail(
			    w,
			    "\"%s\" is the server: RD-Full: an execution unit runs "
			    "on client nodes; the server is the commit authority",
			    id);
		}
		if (!g->nodes[k].executes) {
			return hakoi_walk_fail(w, "node \"%s\" is not in execution_nodes", id);
		}
		for (size_t j = 0; j < i; j++) {
			if (u->candidates[j] == k) {
				return hakoi_walk_fail_dup(w, j, "node \"%s\"", id);
			}
		}
		u->candidates[u->candidate_count++] = k;
		hakoi_walk_pop(w);
	}
	return 0;
}

static const hakoi_field_t arg_elem = {.kind = HAKOI_K_CUSTOM, .parse = parse_arg};

/* robot_bindings, as Hakoniwa's schema has them: checked, not used (a unit's robots are those
 * of the groups it writes and reads). */
static const hakoi_field_t binding_of_robot_fields[] = {
    {.key = "robot_name", .kind = HAKOI_K_STRING, .flags = HAKOI_F_REQUIRED},
    {.key = "robot_type", .kind = HAKOI_K_STRING, .flags = HAKOI_F_REQUIRED},
    HAKOI_END,
};
static const hakoi_field_t binding_of_robot = {.kind = HAKOI_K_OBJECT,
                                               .fields = binding_of_robot_fields};

static const hakoi_field_t unit_fields[] = {
    {.key = "name",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hakoi_gen_unit_t, name),
     .check = check_unit_name},
    {.key = "eu_type",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hakoi_gen_unit_t, type),
     .check = check_eu_type},
    {.key = "robot_bindings",
     .kind = HAKOI_K_ARRAY,
     .elem = &binding_of_robot,
     .expect = "an array of {robot_name, robot_type}"},
    /* hako's own: what runs the unit */
    HAKOI_CUSTOM("command", 0, parse_command, "a string"),
    {.key = "args",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(hakoi_gen_unit_t, args, arg_count),
     .elem = &arg_elem,
     .expect = "an array of strings"},
    HAKOI_STRING("asset", 0, hakoi_gen_unit_t, asset),
    HAKOI_CUSTOM("candidates", 0, parse_candidates, "an array of client node ids"),
    HAKOI_OTHERS,
    HAKOI_END,
};

int hakoi_gen_parse_units(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct ld *l = ld_of(w);
	hakoi_gen_t *g = l->g;
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of unit names or {name, eu_type}");
	}
	size_t n = json_array_size(v);
	g->units = calloc(n > 0 ? n : 1, sizeof(*g->units));
	l->place_src = calloc(n > 0 ? n : 1, sizeof(*l->place_src));
	if (g->units == NULL || l->place_src == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	for (size_t i = 0; i < n; i++) {
		hakoi_gen_unit_t *u = &g->units[i];
		json_t *e = json_array_get(v, i);
		u->node = -1;
		u->eu = -1;
		u->index = i;
		g->unit_count = i + 1; /* so that hakoi_gen_free sees what it holds */
		hakoi_walk_push_index(w, i);
		int r;
		if (json_is_string(e)) {
			r = hakoi_gen_get_string(w, e, u->name, sizeof(u->name));
			if (r == 0) {
				r = check_unit_name(
				    w, e, u,
				    &(hakoi_field_t){.offset = offsetof(hakoi_gen_unit_t, name)});
			}
		} else if (json_is_object(e)) {
			r = hakoi_gen_walk_lenient(w, e, unit_fields, u);
		} else {
			r = hakoi_walk_fail_must(w, "a unit name or {name, eu_type}");
		}
		if (r != 0) {
			return r;
		}
		int k = hakoi_gen_unit_of(g, u->name);
		if (k >= 0 && (size_t)k < i) {
			if (json_is_object(e)) {
				hakoi_walk_push_key(w, "name");
			}
			return hakoi_walk_fail(
			    w, "unit \"%s\" is already used by execution_units[%d]", u->name, k);
		}
		u->writes = group_flags(g);
		u->reads = group_flags(g);
		if (u->writes == NULL || u->reads == NULL) {
			return hakoi_walk_fail_oom(w);
		}
		const struct etype *t = u->type[0] != '\0' ? etype_of(l, u->type) : NULL;
		for (size_t j = 0; t != NULL && j < g->group_count; j++) {
			u->writes[j] = t->writes[j];
			u->reads[j] = t->reads[j];
		}
		if (u->asset[0] == '\0') {
			snprintf(u->asset, sizeof(u->asset), "%s", u->name);
		}
		hakoi_walk_pop(w);
	}
	return 0;
}

int hakoi_gen_refuse_auto_units(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	if (json_is_array(v) && json_array_size(v) == 0) {
		return 0;
	}
	return hakoi_walk_fail(w,
	                       "not generated: list the units in execution_units (unit_placement "
	                       "with mode \"auto\" spreads them over the nodes)");
}

/* eu_pdu_bindings (the older form of a unit's groups): [{eu, writes, reads}]. */
struct binding_in {
	char eu[HAKO_NAME_MAX];
	unsigned char *lists[2];
};

static int check_binding_eu(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	struct binding_in *b = base;
	const hakoi_gen_t *g = ld_of(w)->g;
	int k = hakoi_gen_unit_of(g, b->eu);
	if (k < 0) {
		return hakoi_walk_fail(w, "unit \"%s\" is not in execution_units", b->eu);
	}
	b->lists[0] = g->units[k].writes;
	b->lists[1] = g->units[k].reads;
	return 0;
}

static int binding_writes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return parse_group_list(w, v, ((struct binding_in *)base)->lists[0]);
}

static int binding_reads(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return parse_group_list(w, v, ((struct binding_in *)base)->lists[1]);
}

static const hakoi_field_t binding_fields[] = {
    {.key = "eu",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(struct binding_in, eu),
     .check = check_binding_eu},
    HAKOI_CUSTOM("writes", 0, binding_writes, "an array of group ids"),
    HAKOI_CUSTOM("reads", 0, binding_reads, "an array of group ids"),
    HAKOI_END,
};

int hakoi_gen_parse_bindings(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of {eu, writes, reads}");
	}
	for (size_t i = 0; i < json_array_size(v); i++) {
		struct binding_in b;
		memset(&b, 0, sizeof(b));
		hakoi_walk_push_index(w, i);
		int r = hakoi_walk_value(
		    w, json_array_get(v, i),
		    &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = binding_fields}, &b);
		if (r != 0) {
			return r;
		}
		hakoi_walk_pop(w);
	}
	return 0;
}
