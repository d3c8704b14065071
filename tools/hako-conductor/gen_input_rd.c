/* The eu-input's mode "rd" (gen_input.c reads the file): the "rd" member (the trigger, the
 * handoff timeout, the context's size), and, once every unit is placed, the execution units:
 * every placed unit that writes a group, with its candidates and its control PDUs
 * (hakoi_gen_rd_units). */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_input.h"

/* ---- rd: hako's own, with mode "rd" ---- */

/* rd.trigger, read as the RD config reads it (rd/src/rd_config.c) and copied into it as given.
 * The ExMonitor gen launches (hako-rd monitor) compares linear.x, .y or .z of a Twist: the
 * boundary's axis is one of them. */
struct trigger_in {
	int type;
	int axis;
	double boundary, v_max, hysteresis;
	long long cooldown_usec, period_usec;
	long long low_owner, high_owner;
};

static const char *const trigger_types[] = {"manual", "boundary", "timetable", NULL};
static const char *const axes[] = {"x", "y", "z", NULL};

/* The RD nodes are the clients, numbered in connection_pairs order from 1. */
static int check_owners(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hakoi_gen_t *g = ld_of(w)->g;
	const struct trigger_in *t = base;
	const long long owners[2] = {t->low_owner, t->high_owner};
	static const char *const keys[2] = {"low_owner", "high_owner"};
	for (int k = 0; k < 2; k++) {
		if (owners[k] >= (long long)g->node_count) {
			hakoi_walk_push_key(w, keys[k]);
			return hakoi_walk_fail(w,
			                       "node %lld is not an RD node: the RD nodes are the "
			                       "clients, 1 (\"%s\") to %zu (\"%s\")",
			                       owners[k], g->nodes[1].id, g->node_count - 1,
			                       g->nodes[g->node_count - 1].id);
		}
	}
	if (t->low_owner == t->high_owner) {
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
    HAKOI_ENUM("axis", HAKOI_F_REQUIRED, struct trigger_in, axis, axes, NULL),
    HAKOI_NUMBER("boundary", HAKOI_F_REQUIRED, struct trigger_in, boundary, -INFINITY, INFINITY),
    HAKOI_NUMBER("v_max", HAKOI_F_REQUIRED, struct trigger_in, v_max, 0.0, INFINITY),
    HAKOI_NUMBER("hysteresis", 0, struct trigger_in, hysteresis, 0.0, INFINITY),
    HAKOI_INT("cooldown_usec", 0, struct trigger_in, cooldown_usec, 0, RD_MAX_TIMEOUT_USEC),
    HAKOI_INT("low_owner", HAKOI_F_REQUIRED, struct trigger_in, low_owner, 1, 255),
    HAKOI_INT("high_owner", HAKOI_F_REQUIRED, struct trigger_in, high_owner, 1, 255),
    HAKOI_CHECK(check_owners),
    HAKOI_END,
};

static const hakoi_field_t timetable_fields[] = {
    HAKOI_IGNORE("type"),
    HAKOI_INT("period_usec", HAKOI_F_REQUIRED, struct trigger_in, period_usec, 1000,
              RD_MAX_TIMEOUT_USEC),
    HAKOI_END,
};

/* The type selects the table of the other members. */
static int parse_trigger(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	static const hakoi_field_t *const tables[] = {manual_fields, boundary_fields,
	                                              timetable_fields};
	static const hakoi_field_t type = {.key = "type",
	                                   .kind = HAKOI_K_ENUM,
	                                   .flags = HAKOI_F_REQUIRED,
	                                   HAKOI_AT(struct trigger_in, type),
	                                   .names = trigger_types};
	(void)f;
	hakoi_gen_t *g = base;
	struct trigger_in t;
	memset(&t, 0, sizeof(t));
	if (!json_is_object(v)) {
		return hakoi_walk_fail_must(w, "an object {type, ...}");
	}
	int r = hakoi_walk_member(w, v, &type, &t);
	if (r != 0 || (r = hakoi_walk_object(w, v, tables[t.type], &t)) != 0) {
		return r;
	}
	snprintf(g->rd_trigger_type, sizeof(g->rd_trigger_type), "%s", trigger_types[t.type]);
	json_decref(g->rd_trigger);
	g->rd_trigger = json_deep_copy(v);
	return g->rd_trigger != NULL ? 0 : hakoi_walk_fail_oom(w);
}

static const hakoi_field_t rd_fields[] = {
    HAKOI_INT("handoff_timeout_usec", 0, hakoi_gen_t, rd_timeout_usec, 1, RD_MAX_TIMEOUT_USEC),
    HAKOI_INT("max_context_bytes", 0, hakoi_gen_t, rd_context_bytes, 1, RD_MAX_CONTEXT_BYTES),
    HAKOI_CUSTOM("trigger", 0, parse_trigger, "an object {type, ...}"),
    HAKOI_END,
};

int hakoi_gen_parse_rd(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	const hakoi_gen_t *g = base;
	if (!g->rd) {
		return hakoi_walk_fail(w, "only with mode \"rd\"");
	}
	if (!json_is_object(v)) {
		return hakoi_walk_fail_must(w, "an object");
	}
	return hakoi_walk_object(w, v, rd_fields, base);
}

/* ---- mode "rd": the execution units ---- */

/* The unit's entry in execution_units, for a message about what the unit is. */
static void push_entry(hakoi_walk_t *w, const hakoi_gen_unit_t *u)
{
	hakoi_walk_push_key(w, "execution_units");
	hakoi_walk_push_index(w, u->index);
}

static int is_candidate(const hakoi_gen_unit_t *u, int node)
{
	for (size_t i = 0; i < u->candidate_count; i++) {
		if (u->candidates[i] == node) {
			return 1;
		}
	}
	return 0;
}

/* The EU's status and context PDUs, added to its robot after the robot's highest channel id.
 * The context holds the registry's meta and base, the RD header and max_context_bytes
 * (docs/rd.md, "Control-plane PDUs"). */
static int add_control_pdus(hakoi_walk_t *w, const hakoi_gen_eu_t *eu)
{
	hakoi_gen_t *g = ld_of(w)->g;
	hako_pdudef_robot_t *rb = NULL;
	for (size_t i = 0; i < g->pdudef->robot_count && rb == NULL; i++) {
		if (strcmp(g->pdudef->robots[i].name, eu->robot) == 0) {
			rb = &g->pdudef->robots[i];
		}
	}
	int32_t top = -1;
	for (size_t i = 0; i < rb->pdu_count; i++) {
		top = rb->pdus[i].channel_id > top ? rb->pdus[i].channel_id : top;
	}
	hako_pdudef_pdu_t *p = realloc(rb->pdus, (rb->pdu_count + 2) * sizeof(*p));
	if (p == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	rb->pdus = p;
	p += rb->pdu_count;
	memset(p, 0, 2 * sizeof(*p));
	snprintf(p[0].name, sizeof(p[0].name), "%s", eu->status);
	snprintf(p[0].type, sizeof(p[0].type), "%s", RD_STATUS_TYPE);
	p[0].pdu_size = RD_STATUS_SIZE;
	snprintf(p[1].name, sizeof(p[1].name), "%s", eu->context);
	snprintf(p[1].type, sizeof(p[1].type), "%s", RD_CONTEXT_TYPE);
	p[1].pdu_size = (uint32_t)((RD_CONTEXT_OVERHEAD + g->rd_context_bytes + 7) & ~7ll);
	for (int k = 0; k < 2; k++) {
		p[k].channel_id = top + 1 + k;
		p[k].is_reader = p[k].is_writer = 1;
	}
	rb->pdu_count += 2;
	return 0;
}

/* The PDUs of the groups unit k writes, all of one robot, into eu. */
static int eu_writes(hakoi_walk_t *w, size_t k, hakoi_gen_eu_t *eu)
{
	struct ld *l = ld_of(w);
	const hakoi_gen_t *g = l->g;
	const hakoi_gen_unit_t *u = &g->units[k];
	const char *first = NULL; /* the group of the first PDU */
	for (size_t j = 0; j < g->group_count; j++) {
		const hakoi_gen_group_t *gr = &g->groups[j];
		if (!u->writes[j]) {
			continue;
		}
		if (gr->eu >= 0) {
			hakoi_gen_push_unit(w, l, k);
			return hakoi_walk_fail(
			    w,
			    "unit \"%s\" writes group \"%s\", which unit \"%s\" "
			    "writes too: an execution unit's PDUs have one writer",
			    u->name, gr->id, g->units[g->eus[gr->eu].unit].name);
		}
		for (size_t i = 0; i < gr->key_count; i++) {
			const hakoi_gen_key_t *key = &gr->keys[i];
			if (first == NULL) {
				first = gr->id;
				snprintf(eu->robot, sizeof(eu->robot), "%s", key->robot);
			} else if (strcmp(eu->robot, key->robot) != 0) {
				push_entry(w, u);
				return hakoi_walk_fail(
				    w,
				    "unit \"%s\" writes %s.%s (group \"%s\") and %s.%s (group "
				    "\"%s\"): an execution unit writes the PDUs of one robot (the "
				    "RD "
				    "config gives each its robot)",
				    u->name, eu->robot, eu->writes[0], first, key->robot, key->pdu,
				    gr->id);
			}
			if (eu->write_count == HAKO_RD_MAX_PDUS) {
				push_entry(w, u);
				return hakoi_walk_fail(
				    w,
				    "unit \"%s\" writes more than %d PDUs (%s.%s of "
				    "group \"%s\" is the %dth): an execution unit "
				    "writes at most %d (HAKO_RD_MAX_PDUS)",
				    u->name, HAKO_RD_MAX_PDUS, key->robot, key->pdu, gr->id,
				    HAKO_RD_MAX_PDUS + 1, HAKO_RD_MAX_PDUS);
			}
			snprintf(eu->writes[eu->write_count++], sizeof(eu->writes[0]), "%s",
			         key->pdu);
		}
	}
	return 0;
}

/* Unit k, placed and writing, as an EU: on a client, among its candidates, with its control
 * PDUs. */
static int add_eu(hakoi_walk_t *w, size_t k)
{
	struct ld *l = ld_of(w);
	hakoi_gen_t *g = l->g;
	hakoi_gen_unit_t *u = &g->units[k];
	if (u->node == 0) {
		size_t j = 0;
		while (!u->writes[j]) {
			j++;
		}
		hakoi_gen_push_unit(w, l, k);
		return hakoi_walk_fail(
		    w,
		    "unit \"%s\" writes group \"%s\", so it is an execution unit: "
		    "RD-Full: an execution unit runs on client nodes; the server "
		    "is the commit authority",
		    u->name, g->groups[j].id);
	}
	if (g->eu_count == HAKOI_GEN_MAX_EUS) {
		push_entry(w, u);
		return hakoi_walk_fail(w,
		                       "unit \"%s\" would be execution unit %d: gen writes at "
		                       "most %d",
		                       u->name, HAKOI_GEN_MAX_EUS + 1, HAKOI_GEN_MAX_EUS);
	}
	hakoi_gen_eu_t *eu = &g->eus[g->eu_count];
	memset(eu, 0, sizeof(*eu));
	eu->unit = k;
	int r = eu_writes(w, k, eu);
	if (r != 0) {
		return r;
	}
	if (u->candidate_count == 0) {
		for (size_t i = 1; i < g->node_count; i++) {
			if (g->nodes[i].executes) {
				u->candidates[u->candidate_count++] = (int)i;
			}
		}
	} else if (!is_candidate(u, u->node)) {
		char list[512] = "";
		for (size_t i = 0; i < u->candidate_count; i++) {
			size_t n = strlen(list);
			snprintf(list + n, sizeof(list) - n, "%s%s", i > 0 ? ", " : "",
			         g->nodes[u->candidates[i]].id);
		}
		hakoi_gen_push_unit(w, l, k);
		return hakoi_walk_fail(w,
		                       "unit \"%s\" is placed on \"%s\", which is not one of its "
		                       "candidates (%s): the node it starts on owns it first",
		                       u->name, g->nodes[u->node].id, list);
	}
	snprintf(eu->status, sizeof(eu->status), "rd_status_%s", u->name);
	snprintf(eu->context, sizeof(eu->context), "rd_context_%s", u->name);
	const char *names[2] = {eu->status, eu->context};
	for (int i = 0; i < 2; i++) {
		if (hako_pdudef_find(g->pdudef, eu->robot, names[i]) != NULL) {
			push_entry(w, u);
			return hakoi_walk_fail(
			    w,
			    "robot \"%s\" has a PDU \"%s\" already: gen adds it as "
			    "the %s PDU of execution unit \"%s\"",
			    eu->robot, names[i], i == 0 ? "status" : "context", u->name);
		}
	}
	if ((r = add_control_pdus(w, eu)) != 0) {
		return r;
	}
	u->eu = (int)g->eu_count++;
	for (size_t j = 0; j < g->group_count; j++) {
		if (u->writes[j]) {
			g->groups[j].eu = u->eu;
		}
	}
	return 0;
}

/* The boundary trigger's owners are candidates of every EU, and the ExMonitor reads
 * linear.<axis> of each EU's first write, a Twist. */
static int check_boundary(hakoi_walk_t *w)
{
	const hakoi_gen_t *g = ld_of(w)->g;
	static const char *const owners[2] = {"low_owner", "high_owner"};
	if (strcmp(g->rd_trigger_type, "boundary") != 0) {
		return 0;
	}
	for (size_t e = 0; e < g->eu_count; e++) {
		const hakoi_gen_eu_t *eu = &g->eus[e];
		const hakoi_gen_unit_t *u = &g->units[eu->unit];
		const hako_pdudef_pdu_t *p = hako_pdudef_find(g->pdudef, eu->robot, eu->writes[0]);
		if (strcmp(p->type, "geometry_msgs/Twist") != 0) {
			push_entry(w, u);
			return hakoi_walk_fail(
			    w,
			    "unit \"%s\" writes %s.%s (%s) first: with the boundary "
			    "trigger, hako-rd monitor reads linear.<axis> of each "
			    "execution unit's first PDU, a geometry_msgs/Twist",
			    u->name, eu->robot, p->name, p->type);
		}
		for (int k = 0; k < 2; k++) {
			json_int_t id =
			    json_integer_value(json_object_get(g->rd_trigger, owners[k]));
			if (!is_candidate(u, (int)id)) {
				hakoi_walk_push_key(w, "rd");
				hakoi_walk_push_key(w, "trigger");
				hakoi_walk_push_key(w, owners[k]);
				return hakoi_walk_fail(
				    w,
				    "node %d (\"%s\") is not a candidate of unit "
				    "\"%s\": the trigger's owners are candidates of "
				    "every execution unit",
				    (int)id, g->nodes[id].id, u->name);
			}
		}
	}
	return 0;
}

/* Mode "rd": every placed unit that writes a group is an EU. */
int hakoi_gen_rd_units(hakoi_walk_t *w)
{
	hakoi_gen_t *g = ld_of(w)->g;
	for (size_t k = 0; k < g->unit_count; k++) {
		const hakoi_gen_unit_t *u = &g->units[k];
		int writes = 0;
		for (size_t j = 0; j < g->group_count; j++) {
			writes |= u->writes[j];
		}
		int r = u->node >= 0 && writes ? add_eu(w, k) : 0;
		if (r != 0) {
			return r;
		}
	}
	if (g->eu_count == 0) {
		hakoi_walk_push_key(w, "mode");
		return hakoi_walk_fail(w, "\"rd\": no placed unit writes a group, so there is no "
		                          "execution unit to delegate; use \"simple\"");
	}
	return check_boundary(w);
}
