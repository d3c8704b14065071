/* The eu-input file of hako-conductor gen (conductor_gen.h): Hakoniwa's form, read with tables
 * for the config walker. What Hakoniwa's schema allows and hako does not use is accepted with a
 * warning at its place; what hako cannot map (several servers, automatic unit lists) is refused
 * at its place with the reason. Cross-references (a group's PDUs in the pdudef, a unit's type, a
 * placement's node) are checked where they are written, which is why the table reads the members
 * in dependency order, not in the file's. Mode "rd" makes every writing unit an RD execution unit
 * (conductor_gen.h); those checks come at the end (hakoi_gen_rd_units), once every unit is placed.
 *
 * This file: the top-level table, mode, load and free, and the helpers every part uses
 * (warnings at their place, names, node ids). Each group of members has its own file
 * (gen_input.h lists them). */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_input.h"

/* ---- warnings ---- */

void hakoi_gen_warn_at(hakoi_walk_t *w, const char *key, const char *fmt, ...)
{
	const hakoi_gen_options_t *o = &ld_of(w)->g->opt;
	if (o->warn == NULL) {
		return;
	}
	if (key != NULL) {
		hakoi_walk_push_key(w, key);
	}
	int line = 0, column = 0;
	size_t depth = w->j.depth < HAKOI_JCTX_DEPTH ? w->j.depth : HAKOI_JCTX_DEPTH;
	if (hakoi_json_pos(w->j.text, w->j.len, w->j.path, depth, &line, &column) != 0) {
		line = column = 0;
	}
	char where[256], what[600], msg[1400];
	hakoi_json_path_format(w->j.path, depth, where, sizeof(where));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(msg, sizeof(msg), "%s:%d:%d: %s: %s", w->j.file, line, column,
	         where[0] != '\0' ? where : "top level", what);
	if (key != NULL) {
		hakoi_walk_pop(w);
	}
	o->warn(o->warn_user, msg);
}

static int known_key(const hakoi_field_t *fields, const char *key)
{
	for (const hakoi_field_t *f = fields; f->key != NULL; f++) {
		if (f->kind != HAKOI_K_OTHERS && f->kind != HAKOI_K_CHECK &&
		    strcmp(f->key, key) == 0) {
			return 1;
		}
	}
	return 0;
}

/* Members Hakoniwa's schema lets through and hako does not read. */
void hakoi_gen_warn_others(hakoi_walk_t *w, json_t *obj, const hakoi_field_t *fields)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		if (!known_key(fields, key)) {
			hakoi_gen_warn_at(w, key, "not used by hako-conductor gen (ignored)");
		}
	}
}

/* An object whose table ends with HAKOI_OTHERS: walked, then its other members warned about. */
int hakoi_gen_walk_lenient(hakoi_walk_t *w, json_t *v, const hakoi_field_t *fields, void *base)
{
	int r = hakoi_walk_object(w, v, fields, base);
	if (r == 0) {
		hakoi_gen_warn_others(w, v, fields);
	}
	return r;
}

/* ---- small checks ---- */

/* Node ids and unit names name files, domains, processes and logs. */
int hakoi_gen_valid_name(const char *s)
{
	if (!isalnum((unsigned char)s[0])) {
		return 0;
	}
	for (; *s != '\0'; s++) {
		if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-') {
			return 0;
		}
	}
	return 1;
}

/* A string array element, as a JSON string of 1..size-1 bytes, into dst. */
int hakoi_gen_get_string(hakoi_walk_t *w, json_t *v, char *dst, size_t size)
{
	if (!json_is_string(v)) {
		return hakoi_walk_fail_must(w, "a string");
	}
	return hakoi_walk_string(w, json_string_value(v), json_string_length(v), 0, dst, size);
}

/* The node an id names: a client, the server machine, or one of its server nodes. */
int hakoi_gen_node_of(const struct ld *l, const char *id)
{
	const hakoi_gen_t *g = l->g;
	for (size_t i = 0; i < g->node_count; i++) {
		if (strcmp(g->nodes[i].id, id) == 0) {
			return (int)i;
		}
	}
	for (size_t i = 0; i < l->pair_count; i++) {
		if (strcmp(l->server_nodes[i], id) == 0) {
			return 0;
		}
	}
	return -1;
}

int hakoi_gen_fail_not_node(hakoi_walk_t *w, const char *id)
{
	const hakoi_gen_t *g = ld_of(w)->g;
	char clients[512] = "";
	for (size_t i = 1; i < g->node_count; i++) {
		size_t n = strlen(clients);
		snprintf(clients + n, sizeof(clients) - n, "%s%s", i > 1 ? ", " : "",
		         g->nodes[i].id);
	}
	return hakoi_walk_fail(w,
	                       "\"%s\" is not a node of connection_pairs (the server is \"%s\", "
	                       "the clients %s)",
	                       id, g->nodes[0].id, clients);
}

/* A member kept as it is (the document holds it), for a check that reads it later. */
int hakoi_gen_keep_json(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)w;
	*(json_t **)(void *)((char *)base + f->offset) = v;
	return 0;
}

/* ---- mode ---- */

static int parse_mode(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_gen_t *g = base;
	const char *s = json_string_value(v);
	if (s != NULL && (strcmp(s, "simple") == 0 || strcmp(s, "rd") == 0)) {
		g->rd = strcmp(s, "rd") == 0;
		return 0;
	}
	return s != NULL ? hakoi_walk_fail(w, "is \"%.64s\"; must be \"simple\" or \"rd\"", s)
	                 : hakoi_walk_fail_must(w, "\"simple\" or \"rd\"");
}

/* ---- the top level ---- */

static int refuse_bridge_key(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)base;
	(void)f;
	return hakoi_walk_fail(w, "belongs to a bridge file, not to an eu-input: describe the PDUs "
	                          "with pdu_groups or pdu_type_groups");
}

static const hakoi_field_t top_fields[] = {
    HAKOI_IGNORE("$schema"),
    HAKOI_CUSTOM("mode", HAKOI_F_REQUIRED, parse_mode, "\"simple\" or \"rd\""),
    HAKOI_CUSTOM("connection_pairs", HAKOI_F_REQUIRED, hakoi_gen_parse_pairs,
                 "an array of {client_node_id, server_node_id}"),
    HAKOI_CUSTOM("execution_nodes", HAKOI_F_REQUIRED, hakoi_gen_parse_exec_nodes,
                 "an array of node ids"),
    HAKOI_CUSTOM("node_addresses", 0, hakoi_gen_parse_addresses, "an object of node id: address"),
    HAKOI_CUSTOM("comm_defaults", 0, hakoi_gen_parse_comm, "an object"),
    HAKOI_CUSTOM("conductor_defaults", 0, hakoi_gen_parse_conductor, "an object"),
    HAKOI_CUSTOM("rd", 0, hakoi_gen_parse_rd, "an object"),
    HAKOI_CUSTOM("robot_types", 0, hakoi_gen_parse_rtypes, "an object of type: {pdutypes}"),
    HAKOI_CUSTOM("robots", 0, hakoi_gen_parse_robots, "an array of {name, type}"),
    HAKOI_CUSTOM("pdudef", 0, hakoi_gen_parse_pdudef, "a string"),
    HAKOI_CHECK(hakoi_gen_build_pdudef),
    HAKOI_CUSTOM("pdu_groups", 0, hakoi_gen_parse_groups, "an array of groups"),
    HAKOI_CUSTOM("pdu_type_groups", 0, hakoi_gen_parse_type_groups, "an array of groups"),
    HAKOI_CHECK(hakoi_gen_check_groups),
    HAKOI_CUSTOM("eu_types", 0, hakoi_gen_parse_etypes, "an object of type: {writes, reads}"),
    HAKOI_CUSTOM("execution_units", 0, hakoi_gen_parse_units, "an array of units"),
    HAKOI_CUSTOM("execution_units_auto", 0, hakoi_gen_refuse_auto_units, "an array"),
    HAKOI_CUSTOM("eu_pdu_bindings", 0, hakoi_gen_parse_bindings, "an array of {eu, writes, reads}"),
    HAKOI_CUSTOM("unit_placement", 0, hakoi_gen_parse_placement, "an object"),
    HAKOI_CUSTOM("pduKeyGroups", 0, refuse_bridge_key, NULL),
    HAKOI_CUSTOM("bridge_connections", 0, refuse_bridge_key, NULL),
    HAKOI_OTHERS,
    HAKOI_CHECK(hakoi_gen_finish),
    HAKOI_END,
};

/* ---- load, free ---- */

static void free_ld(struct ld *l)
{
	for (size_t i = 0; l->etypes != NULL && i < l->etype_count; i++) {
		free(l->etypes[i].writes);
		free(l->etypes[i].reads);
	}
	free(l->etypes);
	free(l->rtypes);
	free(l->robots);
	free(l->group_src);
	free(l->place_src);
}

int hakoi_gen_load(const char *path, const hakoi_gen_options_t *opt, hakoi_gen_t **out,
                   hako_error_t *err)
{
	hako_error_clear(err);
	*out = NULL;
	if (strlen(path) >= sizeof(((hakoi_gen_t *)0)->input)) {
		return hako_error_set(err, HAKO_ENAMETOOLONG, path, 0, 0, "path too long");
	}
	json_t *root;
	char *text;
	size_t len;
	int r = hakoi_cfg_load(path, err, &root, &text, &len);
	if (r != 0) {
		return r;
	}
	hakoi_gen_t *g = calloc(1, sizeof(*g));
	if (g == NULL) {
		json_decref(root);
		free(text);
		return hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	snprintf(g->input, sizeof(g->input), "%s", path);
	const char *slash = strrchr(path, '/');
	snprintf(g->input_dir, sizeof(g->input_dir), "%.*s",
	         slash != NULL ? (int)(slash - path) : 1, slash != NULL ? path : ".");
	if (opt != NULL) {
		g->opt = *opt;
	}
	g->base_port = HAKOI_GEN_DEFAULT_BASE_PORT;
	g->client_initiates = 1; /* the clients connect to the server, as a conductor client does */
	g->delta_usec = 1000;
	g->on_client_loss = -1;
	g->publish_mode = HAKO_PUBLISH_IMMEDIATE;
	g->rd_timeout_usec = RD_DEFAULT_TIMEOUT;
	g->rd_context_bytes = RD_DEFAULT_CONTEXT;
	snprintf(g->rd_trigger_type, sizeof(g->rd_trigger_type), "manual");
	struct ld l;
	memset(&l, 0, sizeof(l));
	l.g = g;
	hakoi_walk_t w;
	hakoi_walk_init(&w, err, path, text, len, &l);
	r = hakoi_walk_object(&w, root, top_fields, g);
	if (r == 0) {
		hakoi_gen_warn_others(&w, root, top_fields);
	}
	free_ld(&l);
	json_decref(root);
	free(text);
	if (r != 0) {
		hakoi_gen_free(g);
		return r;
	}
	*out = g;
	return 0;
}

void hakoi_gen_free(hakoi_gen_t *g)
{
	if (g == NULL) {
		return;
	}
	for (size_t i = 0; g->groups != NULL && i < g->group_count; i++) {
		free(g->groups[i].keys);
	}
	free(g->groups);
	for (size_t i = 0; g->units != NULL && i < g->unit_count; i++) {
		hakoi_gen_unit_t *u = &g->units[i];
		free(u->command);
		for (size_t j = 0; u->args != NULL && j < u->arg_count; j++) {
			free(u->args[j]);
		}
		free(u->args);
		free(u->writes);
		free(u->reads);
	}
	free(g->units);
	hako_pdudef_free(g->pdudef);
	json_decref(g->rd_trigger);
	free(g);
}
