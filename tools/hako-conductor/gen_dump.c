/* What the eu-input loader made of a file (hakoi_gen_dump, conductor_gen.h), one item a line:
 * hako-conductor gen --dry-run prints it, and the data-driven tests compare it. */
#include <stdio.h>
#include <stdlib.h>

#include "gen_input.h"

static const char *const publish_text[] = {"immediate", "delta_boundary"};

static void dump_rd(const hakoi_gen_t *g, FILE *out)
{
	char *trigger = g->rd_trigger != NULL ? json_dumps(g->rd_trigger, JSON_COMPACT) : NULL;
	fprintf(out, "rd trigger %s%s%s handoff_timeout_usec %lld max_context_bytes %lld\n",
	        g->rd_trigger_type, trigger != NULL ? " " : "", trigger != NULL ? trigger : "",
	        g->rd_timeout_usec, g->rd_context_bytes);
	free(trigger);
	for (size_t i = 1; i < g->node_count; i++) {
		fprintf(out, "rd node %zu %s\n", i, g->nodes[i].id);
	}
	for (size_t e = 0; e < g->eu_count; e++) {
		const hakoi_gen_eu_t *eu = &g->eus[e];
		const hakoi_gen_unit_t *u = &g->units[eu->unit];
		fprintf(out, "rd eu %zu %s robot %s writes", e, u->name, eu->robot);
		for (size_t k = 0; k < eu->write_count; k++) {
			fprintf(out, "%s%s", k > 0 ? "," : " ", eu->writes[k]);
		}
		fprintf(out, " candidates");
		for (size_t k = 0; k < u->candidate_count; k++) {
			fprintf(out, "%s%d", k > 0 ? "," : " ", u->candidates[k]);
		}
		fprintf(out, " initial %d status %s context %s\n", u->node, eu->status,
		        eu->context);
	}
}

void hakoi_gen_dump(const hakoi_gen_t *g, FILE *out)
{
	const hakoi_gen_node_t *s = &g->nodes[0];
	int n = (int)g->node_count - 1;
	fprintf(out, "server %s address %s control port %d time port %d%s\n", s->id, s->address,
	        g->base_port + n, g->base_port + n + 1, s->executes ? " executes" : "");
	for (size_t i = 1; i < g->node_count; i++) {
		const hakoi_gen_node_t *c = &g->nodes[i];
		fprintf(out, "client %s (server node %s) address %s link port %d, %s listens%s\n",
		        c->id, c->server_node, c->address, c->port, c->listens ? c->id : s->id,
		        c->executes ? " executes" : "");
	}
	fprintf(out, "timing delta %lld dmax %lld publish %s", g->delta_usec, g->max_delay_usec,
	        publish_text[g->publish_mode]);
	if (g->interval_set) {
		fprintf(out, "/%lld", g->interval_usec);
	}
	if (g->real_sleep_set) {
		fprintf(out, " real_sleep_msec %lld", g->real_sleep_msec);
	}
	if (g->heartbeat_ms || g->peer_timeout_ms || g->on_client_loss >= 0) {
		fprintf(out, " heartbeat %lld timeout %lld loss %s", g->heartbeat_ms,
		        g->peer_timeout_ms,
		        g->on_client_loss < 0 ? "-" : hakoi_gen_loss_names[g->on_client_loss]);
	}
	fputc('\n', out);
	if (g->pdudef != NULL) {
		fprintf(out, "pdudef %s:", g->pdudef_name);
		for (size_t i = 0; i < g->pdudef->robot_count; i++) {
			fprintf(out, " %s(%zu)", g->pdudef->robots[i].name,
			        g->pdudef->robots[i].pdu_count);
		}
		fputc('\n', out);
	}
	for (size_t j = 0; j < g->group_count; j++) {
		const hakoi_gen_group_t *gr = &g->groups[j];
		fprintf(out, "group %s policy %s keys", gr->id, gr->policy);
		for (size_t k = 0; k < gr->key_count; k++) {
			fprintf(out, " %s.%s", gr->keys[k].robot, gr->keys[k].pdu);
		}
		if (gr->writer < 0) {
			fprintf(out, " not written\n");
			continue;
		}
		fprintf(out, " from");
		for (size_t i = 0, n = 0; i < g->node_count; i++) {
			if (gr->src[i]) {
				fprintf(out, "%s%s", n++ > 0 ? "," : " ", g->nodes[i].id);
			}
		}
		fprintf(out, " to");
		for (size_t i = 0; i < g->node_count; i++) {
			if (gr->dest[i]) {
				fprintf(out, " %s", g->nodes[i].id);
			}
		}
		fputc('\n', out);
	}
	for (size_t k = 0; k < g->unit_count; k++) {
		const hakoi_gen_unit_t *u = &g->units[k];
		fprintf(out, "unit %s type %s on %s", u->name, u->type[0] ? u->type : "-",
		        u->node >= 0 ? g->nodes[u->node].id : "-");
		if (u->command != NULL) {
			fprintf(out, " command %s", u->command);
			for (size_t j = 0; j < u->arg_count; j++) {
				fprintf(out, " %s", u->args[j]);
			}
			fprintf(out, " asset %s", u->asset);
		}
		fputc('\n', out);
	}
	if (g->rd) {
		dump_rd(g, out);
	}
}
