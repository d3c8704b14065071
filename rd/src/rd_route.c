/* A node's bridge following the EUs' ownership (hako/rd_route.h). */
#include "hako/rd_route.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/log.h"

struct route {
	const hako_bridge_connection_cfg_t *conn;
	const hako_rd_eu_config_t *eu;
	int gated;
	int applied; /* epoch and active below were applied at least once */
	uint8_t epoch;
	int next_ok;
	int active;
	uint64_t changes;
};

struct hako_rd_router {
	hako_domain_t *dom;
	const hako_rd_config_t *rd;
	uint8_t node;
	hako_bridge_t *b;
	hako_rd_node_t *obs;
	uint32_t resets;
	size_t count;
	struct route routes[];
};

/* The EU that writes robot/name, or NULL. */
static const hako_rd_eu_config_t *eu_writing(const hako_rd_config_t *rd, const char *robot,
                                             const char *name)
{
	for (size_t e = 0; e < rd->eu_count; e++) {
		const hako_rd_eu_config_t *eu = &rd->eus[e];
		for (size_t w = 0; w < eu->write_count; w++) {
			if (strcmp(eu->writes[w].robot, robot) == 0 &&
			    strcmp(eu->writes[w].name, name) == 0) {
				return eu;
			}
		}
	}
	return NULL;
}

static int is_candidate(const hako_rd_eu_config_t *eu, uint8_t node)
{
	for (size_t i = 0; i < eu->candidate_count; i++) {
		if (eu->candidates[i] == node) {
			return node != 0;
		}
	}
	return 0;
}

/* Local to the node: an shm endpoint (the node's domain). */
static int source_is_local(hako_endpoint_set_t *eps, const char *id)
{
	const hako_endpoint_t *ep = eps != NULL ? hako_endpoint_set_get(eps, id) : NULL;
	const hako_endpoint_config_t *ec = ep != NULL ? hako_endpoint_config(ep) : NULL;
	return ec != NULL && ec->comm != NULL && ec->comm->protocol == HAKO_COMM_SHM;
}

/* The EU connection c carries (0, *eu may be NULL: none), or HAKO_ECONFIG with err. */
static int classify(const hako_rd_config_t *rd, const hako_bridge_config_t *bcfg,
                    const hako_bridge_connection_cfg_t *c, const hako_rd_eu_config_t **eu,
                    hako_error_t *err)
{
	*eu = NULL;
	const char *other = NULL; /* a PDU of no EU, "robot/name" */
	char other_buf[2 * HAKO_NAME_MAX + 2];
	for (size_t t = 0; t < c->transfer_count; t++) {
		const hako_bridge_group_cfg_t *g = &bcfg->groups[c->transfers[t].group];
		for (size_t i = 0; i < g->count; i++) {
			const hako_bridge_pdu_ref_t *p = &g->pdus[i];
			const hako_rd_eu_config_t *x = eu_writing(rd, p->robot, p->pdu);
			if (x == NULL) {
				if (other == NULL) {
					snprintf(other_buf, sizeof(other_buf), "%s/%s", p->robot,
					         p->pdu);
					other = other_buf;
				}
				continue;
			}
			if (*eu != NULL && *eu != x) {
				return hako_error_set(
				    err, HAKO_ECONFIG, bcfg->path, 0, 0,
				    "connection '%s' carries PDUs of EU '%s' and of EU '%s' "
				    "(%s/%s); "
				    "its epoch follows one EU: give each EU its own connection",
				    c->id, (*eu)->name, x->name, p->robot, p->pdu);
			}
			*eu = x;
		}
	}
	if (*eu == NULL) {
		return 0;
	}
	if (other != NULL) {
		return hako_error_set(err, HAKO_ECONFIG, bcfg->path, 0, 0,
		                      "connection '%s' carries PDUs of EU '%s' and %s, which no "
		                      "EU writes; its epoch follows the EU, so %s would be "
		                      "dropped: give it a connection of its own",
		                      c->id, (*eu)->name, other, other);
	}
	if (!c->epoch_validation) {
		return hako_error_set(err, HAKO_ECONFIG, bcfg->path, 0, 0,
		                      "connection '%s' carries PDUs of EU '%s' (%s): it needs "
		                      "\"epoch_validation\": true, or an old owner's PDUs would "
		                      "pass after a hand-off",
		                      c->id, (*eu)->name, rd->path);
	}
	return 0;
}

int hako_rd_router_create(hako_domain_t *dom, const hako_rd_config_t *rd, uint8_t node_id,
                          const hako_bridge_config_t *bcfg, hako_bridge_t *b,
                          hako_endpoint_set_t *eps, hako_rd_router_t **out, hako_error_t *err)
{
	if (out != NULL) {
		*out = NULL;
	}
	hako_error_clear(err);
	if (dom == NULL || rd == NULL || bcfg == NULL || b == NULL || out == NULL) {
		return HAKO_EINVAL;
	}
	int known = node_id == 0;
	for (size_t i = 0; i < rd->node_count; i++) {
		known |= rd->node_ids[i] == node_id;
	}
	if (!known) {
		return hako_error_set(err, HAKO_EINVAL, rd->path, 0, 0, "node %u is not in nodes",
		                      node_id);
	}
	hako_rd_router_t *r = calloc(1, sizeof(*r) + bcfg->connection_count * sizeof(r->routes[0]));
	if (r == NULL) {
		return HAKO_ENOMEM;
	}
	r->dom = dom;
	r->rd = rd;
	r->node = node_id;
	r->b = b;
	r->resets = hako_domain_reset_count(dom);
	int rc = 0;
	for (size_t i = 0; i < bcfg->connection_count; i++) {
		const hako_bridge_connection_cfg_t *c = &bcfg->connections[i];
		const hako_rd_eu_config_t *eu = NULL;
		if ((rc = classify(rd, bcfg, c, &eu, err)) != 0) {
			goto fail;
		}
		if (eu == NULL) {
			continue;
		}
		struct route *rt = &r->routes[r->count++];
		rt->conn = c;
		rt->eu = eu;
		rt->gated = is_candidate(eu, node_id) && source_is_local(eps, c->source);
		rt->active = 1; /* a bridge starts with every connection active */
	}
	/* An observer: reads the status, never owns, writes no trace. */
	if ((rc = hako_rd_node_open(dom, rd, 0, NULL, &r->obs)) != 0) {
		hako_error_set(err, rc, rd->path, 0, 0, "cannot read the EUs' status: %s",
		               hako_strerror(rc));
		goto fail;
	}
	*out = r;
	return 0;
fail:
	hako_rd_router_destroy(r);
	return rc;
}

void hako_rd_router_destroy(hako_rd_router_t *r)
{
	if (r == NULL) {
		return;
	}
	hako_rd_node_close(r->obs);
	free(r);
}

/* What the connections of eu should be at world time `world`. */
static void wanted(const hako_rd_eu_state_t *st, hako_time_t world, uint8_t *epoch, int *next_ok,
                   uint8_t *owner)
{
	if (st->status == HAKO_RD_OWNER_RELEASING && st->release_time_usec >= 0 &&
	    world < st->release_time_usec) {
		*epoch = (uint8_t)(st->epoch - 1); /* the old owner's, until the commit point */
		*next_ok = 1;
		*owner = st->curr_owner;
	} else if (st->status == HAKO_RD_OWNER_RELEASING) {
		*epoch = st->epoch;
		*next_ok = 0;
		*owner = st->next_owner;
	} else {
		*epoch = st->epoch;
		*next_ok = 0;
		*owner = st->curr_owner;
	}
}

int hako_rd_router_update(hako_rd_router_t *r)
{
	if (r == NULL) {
		return HAKO_EINVAL;
	}
	return hako_rd_router_update_at(r, hako_domain_world_time(r->dom));
}

int hako_rd_router_update_at(hako_rd_router_t *r, hako_time_t world)
{
	if (r == NULL) {
		return HAKO_EINVAL;
	}
	uint32_t resets = hako_domain_reset_count(r->dom);
	int reset = resets != r->resets;
	r->resets = resets;
	int changed = 0;
	for (size_t i = 0; i < r->count; i++) {
		struct route *rt = &r->routes[i];
		hako_rd_eu_state_t st;
		int rc = hako_rd_get_state(r->obs, rt->eu->id, &st);
		if (rc != 0) {
			return rc;
		}
		uint8_t epoch = 0, owner = 0, now = 0;
		int next_ok = 0;
		wanted(&st, world, &epoch, &next_ok, &owner);
		if (reset) {
			rc = hako_bridge_set_epoch(r->b, rt->conn->id, epoch);
			now = epoch;
		} else {
			rc = hako_bridge_follow_epoch(r->b, rt->conn->id, epoch, next_ok, &now);
		}
		if (rc != 0) {
			return rc;
		}
		int active = rt->gated ? owner == r->node : 1;
		if (rt->gated && (!rt->applied || active != rt->active)) {
			if ((rc = hako_bridge_set_active(r->b, rt->conn->id, active)) != 0) {
				return rc;
			}
		}
		if (rt->applied &&
		    (now != rt->epoch || active != rt->active || next_ok != rt->next_ok)) {
			rt->changes++;
			changed++;
			HAKO_INFO(
			    "rd route: connection '%s' (EU %s) at world time %.6f s: epoch %u%s, "
			    "%s",
			    rt->conn->id, rt->eu->name, (double)world / 1e6, now,
			    next_ok && now == epoch ? " (or the next)" : "",
			    active ? "active" : "paused (this node does not own the EU)");
		}
		rt->applied = 1;
		rt->epoch = now;
		rt->next_ok = next_ok;
		rt->active = active;
	}
	return changed;
}

size_t hako_rd_router_count(const hako_rd_router_t *r)
{
	return r != NULL ? r->count : 0;
}

int hako_rd_router_get(const hako_rd_router_t *r, size_t i, hako_rd_route_t *out)
{
	if (r == NULL || out == NULL) {
		return HAKO_EINVAL;
	}
	if (i >= r->count) {
		return HAKO_ENOENT;
	}
	const struct route *rt = &r->routes[i];
	memset(out, 0, sizeof(*out));
	snprintf(out->connection, sizeof(out->connection), "%s", rt->conn->id);
	snprintf(out->eu, sizeof(out->eu), "%s", rt->eu->name);
	out->gated = rt->gated;
	out->epoch = rt->epoch;
	out->active = rt->active;
	out->changes = rt->changes;
	return 0;
}
