/* The eu-input's unit_placement (gen_input.c reads the file): the units on the nodes, by name
 * (mode "manual") or round robin (mode "auto"). */
#define _GNU_SOURCE
#include <string.h>

#include "gen_input.h"

/* ---- unit_placement ---- */

struct placement_in {
	int mode; /* 0 manual, 1 auto */
	json_t *nodes;
	int strategy_set;
	int strategy;
	json_t *targets;
	long long block_size;
	int block_size_set;
};

static const char *const placement_modes[] = {"manual", "auto", NULL};
static const char *const strategies[] = {"round_robin", NULL};

static int place(hakoi_walk_t *w, int node, const char *unit, const char *node_key, size_t index)
{
	struct ld *l = ld_of(w);
	hakoi_gen_t *g = l->g;
	int k = hakoi_gen_unit_of(g, unit);
	if (k < 0) {
		return hakoi_walk_fail(w, "unit \"%s\" is not in execution_units", unit);
	}
	hakoi_gen_unit_t *u = &g->units[k];
	if (u->node >= 0) {
		return hakoi_walk_fail(w, "unit \"%s\" is already placed on \"%s\"", unit,
		                       g->nodes[u->node].id);
	}
	if (!g->nodes[node].executes) {
		return hakoi_walk_fail(w, "node \"%s\" is not in execution_nodes",
		                       g->nodes[node].id);
	}
	u->node = node;
	l->place_src[k] = (struct place_src){node_key, index};
	return 0;
}

static int place_manual(hakoi_walk_t *w, json_t *nodes)
{
	struct ld *l = ld_of(w);
	const char *key;
	json_t *list;
	hakoi_walk_push_key(w, "nodes");
	if (!json_is_object(nodes)) {
		return hakoi_walk_fail_must(w, "an object of node id: [unit names]");
	}
	json_object_foreach(nodes, key, list)
	{
		hakoi_walk_push_key(w, key);
		int node = hakoi_gen_node_of(l, key);
		if (node < 0) {
			return hakoi_gen_fail_not_node(w, key);
		}
		if (!json_is_array(list)) {
			return hakoi_walk_fail_must(w, "an array of unit names");
		}
		for (size_t i = 0; i < json_array_size(list); i++) {
			char unit[HAKO_NAME_MAX];
			hakoi_walk_push_index(w, i);
			int r =
			    hakoi_gen_get_string(w, json_array_get(list, i), unit, sizeof(unit));
			if (r != 0 || (r = place(w, node, unit, key, i)) != 0) {
				return r;
			}
			hakoi_walk_pop(w);
		}
		hakoi_walk_pop(w);
	}
	hakoi_walk_pop(w);
	return 0;
}

/* Round robin over the targets (default: execution_nodes in file order), block_size units at a
 * time, in execution_units order. */
static int place_auto(hakoi_walk_t *w, const struct placement_in *p)
{
	struct ld *l = ld_of(w);
	hakoi_gen_t *g = l->g;
	int targets[HAKOI_GEN_MAX_NODES];
	size_t n = 0;
	if (p->targets != NULL) {
		hakoi_walk_push_key(w, "targets");
		if (!json_is_array(p->targets) || json_array_size(p->targets) == 0) {
			return json_is_array(p->targets)
			           ? hakoi_walk_fail(w, "must not be empty")
			           : hakoi_walk_fail_must(w, "an array of node ids");
		}
		for (size_t i = 0; i < json_array_size(p->targets); i++) {
			char id[HAKO_NAME_MAX];
			hakoi_walk_push_index(w, i);
			int r =
			    hakoi_gen_get_string(w, json_array_get(p->targets, i), id, sizeof(id));
			if (r != 0) {
				return r;
			}
			int k = hakoi_gen_node_of(l, id);
			if (k < 0) {
				return hakoi_gen_fail_not_node(w, id);
			}
			if (!g->nodes[k].executes) {
				return hakoi_walk_fail(w, "node \"%s\" is not in execution_nodes",
				                       id);
			}
			if (n < HAKOI_GEN_MAX_NODES) {
				targets[n++] = k;
			}
			hakoi_walk_pop(w);
		}
		hakoi_walk_pop(w);
	} else {
		for (size_t i = 0; i < g->node_count; i++) {
			if (g->nodes[i].executes) {
				targets[n++] = (int)i;
			}
		}
	}
	long long block = p->block_size_set ? p->block_size : 1;
	for (size_t i = 0; i < g->unit_count; i++) {
		g->units[i].node = targets[(i / (size_t)block) % n];
		l->place_src[i] = (struct place_src){NULL, i};
	}
	return 0;
}

static int check_placement(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const struct placement_in *p = base;
	if (p->mode == 0) {
		static const char *const auto_only[] = {"strategy", "targets", "block_size"};
		int given[3] = {p->strategy_set, p->targets != NULL, p->block_size_set};
		for (int i = 0; i < 3; i++) {
			if (given[i]) {
				hakoi_walk_push_key(w, auto_only[i]);
				return hakoi_walk_fail(w, "only with mode \"auto\"");
			}
		}
		if (p->nodes == NULL) {
			hakoi_walk_push_key(w, "nodes");
			return hakoi_walk_fail_missing(
			    w, "an object of node id: [unit names] with mode "
			       "\"manual\"");
		}
		return place_manual(w, p->nodes);
	}
	if (p->nodes != NULL) {
		hakoi_walk_push_key(w, "nodes");
		return hakoi_walk_fail(w, "only with mode \"manual\"");
	}
	return place_auto(w, p);
}

static const hakoi_field_t placement_fields[] = {
    HAKOI_ENUM("mode", HAKOI_F_REQUIRED, struct placement_in, mode, placement_modes, NULL),
    {.key = "nodes",
     .kind = HAKOI_K_CUSTOM,
     .offset = offsetof(struct placement_in, nodes),
     .parse = hakoi_gen_keep_json},
    {.key = "strategy",
     .kind = HAKOI_K_ENUM,
     HAKOI_AT(struct placement_in, strategy),
     .names = strategies,
     .present = HAKOI_PRESENT(struct placement_in, strategy_set)},
    {.key = "targets",
     .kind = HAKOI_K_CUSTOM,
     .offset = offsetof(struct placement_in, targets),
     .parse = hakoi_gen_keep_json},
    {.key = "block_size",
     .kind = HAKOI_K_INT,
     HAKOI_AT(struct placement_in, block_size),
     .min = 1,
     .max = 1000000,
     .present = HAKOI_PRESENT(struct placement_in, block_size_set)},
    HAKOI_CHECK(check_placement),
    HAKOI_END,
};

int hakoi_gen_parse_placement(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct placement_in p;
	memset(&p, 0, sizeof(p));
	ld_of(w)->placement_given = 1;
	return hakoi_walk_value(
	    w, v, &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = placement_fields}, &p);
}
