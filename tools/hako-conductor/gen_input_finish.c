/* The whole federation, once every member of the eu-input is read (gen_input.c reads the file):
 * the links' ports, the execution units of mode "rd", who writes each group and where it goes,
 * and the warnings about what is moved or started by nobody. */
#define _GNU_SOURCE
#include <stdio.h>

#include "gen_input.h"

/* The unit's place, for a message about it: its placement, or its entry. */
void hakoi_gen_push_unit(hakoi_walk_t *w, const struct ld *l, size_t k)
{
	if (l->place_src[k].node_key != NULL) {
		hakoi_walk_push_key(w, "unit_placement");
		hakoi_walk_push_key(w, "nodes");
		hakoi_walk_push_key(w, l->place_src[k].node_key);
		hakoi_walk_push_index(w, l->place_src[k].index);
	} else {
		hakoi_walk_push_key(w, "execution_units");
		hakoi_walk_push_index(w, l->g->units[k].index);
	}
}

static void pop_n(hakoi_walk_t *w, int n)
{
	while (n-- > 0) {
		hakoi_walk_pop(w);
	}
}

/* Who writes each group and where it goes: to every node with a reader; with none elsewhere,
 * from a client to the server and from the server to every client. An EU's group may be
 * written on each of its candidates and goes to the server and to every node with a reader,
 * the candidates too (one of them owns it at a time). */
static int route(hakoi_walk_t *w)
{
	struct ld *l = ld_of(w);
	hakoi_gen_t *g = l->g;
	for (size_t k = 0; k < g->unit_count; k++) {
		const hakoi_gen_unit_t *u = &g->units[k];
		if (u->node < 0) {
			continue;
		}
		for (size_t j = 0; j < g->group_count; j++) {
			hakoi_gen_group_t *gr = &g->groups[j];
			if (u->eu >= 0) { /* it runs on every candidate */
				for (size_t c = 0; c < u->candidate_count; c++) {
					gr->read[u->candidates[c]] |= u->reads[j];
					gr->src[u->candidates[c]] |= u->writes[j];
				}
				gr->writer = u->writes[j] ? u->node : gr->writer;
				continue;
			}
			gr->read[u->node] |= u->reads[j];
			if (!u->writes[j]) {
				continue;
			}
			if (gr->writer >= 0 && gr->writer != u->node) {
				hakoi_gen_push_unit(w, l, k);
				return hakoi_walk_fail(
				    w,
				    "unit \"%s\" writes group \"%s\" on \"%s\", which is "
				    "written on \"%s\" too: a PDU has one writer",
				    u->name, gr->id, g->nodes[u->node].id, g->nodes[gr->writer].id);
			}
			gr->writer = u->node;
			gr->src[u->node] = 1;
		}
	}
	for (size_t j = 0; j < g->group_count; j++) {
		hakoi_gen_group_t *gr = &g->groups[j];
		if (gr->writer < 0) {
			hakoi_walk_push_key(w, l->group_src[j].array);
			hakoi_walk_push_index(w, l->group_src[j].index);
			hakoi_gen_warn_at(
			    w, NULL,
			    "group \"%s\" is written by no placed unit: no bridge moves it",
			    gr->id);
			pop_n(w, 2);
			continue;
		}
		if (gr->eu >= 0) {
			for (size_t i = 0; i < g->node_count; i++) {
				gr->dest[i] = gr->read[i] || i == 0;
			}
			continue;
		}
		int any = 0;
		for (size_t i = 0; i < g->node_count; i++) {
			gr->dest[i] = gr->read[i] && (int)i != gr->writer;
			any |= gr->dest[i];
		}
		for (size_t i = 0; i < g->node_count && !any; i++) {
			gr->dest[i] = (int)i != gr->writer && (gr->writer == 0 || i == 0);
		}
	}
	return 0;
}

int hakoi_gen_finish(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	struct ld *l = ld_of(w);
	hakoi_gen_t *g = base;
	if (g->max_delay_usec == 0) {
		g->max_delay_usec =
		    g->delta_usec; /* lock-step unless told, as without conductor_defaults */
	}
	if (g->opt.base_port > 0) {
		g->base_port = g->opt.base_port;
	}
	int clients = (int)g->node_count - 1;
	if (g->base_port + clients + 1 > 65535) {
		if (l->base_port_given && g->opt.base_port <= 0) {
			hakoi_walk_push_key(w, "comm_defaults");
			hakoi_walk_push_key(w, "tcp");
			hakoi_walk_push_key(w, "base_port");
		}
		return hakoi_walk_fail(
		    w,
		    "base port %d: the federation needs %d ports from it (a link "
		    "per client, then the conductor's two), past 65535",
		    g->base_port, clients + 2);
	}
	for (int i = 1; i <= clients; i++) {
		g->nodes[i].port = g->base_port + i - 1;
		g->nodes[i].listens = !g->client_initiates;
	}
	if (!l->exec_given) {
		for (size_t i = 0; i < g->node_count; i++) {
			g->nodes[i].executes = 1;
		}
	}
	int r = g->rd ? hakoi_gen_rd_units(w) : 0;
	if (r != 0 || (r = route(w)) != 0) {
		return r;
	}
	for (size_t k = 0; k < g->unit_count; k++) {
		const hakoi_gen_unit_t *u = &g->units[k];
		hakoi_walk_push_key(w, "execution_units");
		hakoi_walk_push_index(w, u->index);
		if (u->node < 0) {
			hakoi_gen_warn_at(
			    w, NULL,
			    "unit \"%s\" is placed on no node (unit_placement): not started",
			    u->name);
		} else if (u->command == NULL) {
			hakoi_gen_warn_at(
			    w, NULL,
			    "unit \"%s\" has no \"command\" (hako's own key: the program that runs "
			    "it): the launch file of \"%s\" does not start it",
			    u->name, g->nodes[u->node].id);
		}
		pop_n(w, 2);
	}
	if (g->pdudef_name[0] == '\0') {
		snprintf(g->pdudef_name, sizeof(g->pdudef_name), "pdudef.json");
	}
	return 0;
}
