/* The files of hako-conductor gen (conductor_gen.h), one folder per node:
 *
 *   federation.json                   every node on this machine (hako-launch)
 *   <node>/launch.json                the node: conductor, bridge, units (hako-launch)
 *   <node>/conductor/<node>.json      srv-NN.json / cli-NN.json (hako-conductor run, too)
 *   <node>/<pdudef>                   the PDUs (legacy form: one file, no pdutypes beside it)
 *   <node>/bridge.json                the node's connections (when it moves PDUs)
 *   <node>/endpoints.json             its endpoint container
 *   <node>/endpoint/...               shm endpoint, a tcp endpoint per link, the cache
 *   <node>/rd.json                    mode "rd": the RD config, the same bytes on every node
 *
 * A node's folder names nothing outside itself, so it can be copied to its machine as it is.
 * The keys of the two hako-launch files are spelled once, in hako_launch_keys.h, for gen and for
 * hako-launch's reader. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conductor_gen.h"
#include "hako_launch_keys.h"
#include "hakoi/file.h"

struct out {
	const hakoi_gen_t *g;
	const char *dir;
	size_t files;
	hako_error_t *err;
};

/* Write doc (taken) to dir/rel, creating the folders on the way. */
static int put(struct out *o, const char *rel, json_t *doc)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", o->dir, rel);
	if (doc == NULL) {
		return hako_error_set(o->err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	char *slash = strrchr(path, '/');
	*slash = '\0';
	int bad = hakoi_mkdirs(path, 0755);
	*slash = '/';
	if (bad) {
		int e = errno;
		json_decref(doc);
		return hako_error_set(o->err, HAKO_EIO, path, 0, 0, "cannot create its folder: %s",
		                      strerror(e));
	}
	int r = json_dump_file(doc, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (r != 0) {
		return hako_error_set(o->err, HAKO_EIO, path, 0, 0, "cannot write: %s",
		                      strerror(errno));
	}
	o->files++;
	return 0;
}

/* ---- routes ---- */

/* How node n handles group j from one source (-1: the node's shm endpoint, or a peer's link)
 * and where it sends it. dest_shm: into the node's domain; dest_link[i]: to node i over their
 * link. */
struct hop {
	int source; /* -1: shm; else the peer node whose link it comes from */
	int dest_shm;
	unsigned char dest_link[HAKOI_GEN_MAX_NODES];
};

/* Whether node from sends group j to node to over their link: a client sends what its units
 * may write to the server when anyone else gets it; the server sends a client what it gets
 * when another node may write it. */
static int sends(const hakoi_gen_t *g, size_t j, int from, int to)
{
	const hakoi_gen_group_t *gr = &g->groups[j];
	if ((from == 0) == (to == 0) || !(from == 0 ? gr->dest[to] : gr->src[from])) {
		return 0;
	}
	for (size_t i = 0; i < g->node_count; i++) {
		if (from == 0 ? (int)i != to && gr->src[i] : (int)i != from && gr->dest[i]) {
			return 1;
		}
	}
	return 0;
}

/* Node n's hops for group j, one per source (its shm first, then the peers in node order);
 * the count. The server passes what a client sends on to every other client that gets it. */
static size_t hops_of(const hakoi_gen_t *g, int n, size_t j, struct hop *hops)
{
	const hakoi_gen_group_t *gr = &g->groups[j];
	size_t count = 0;
	for (int p = -1; p < (int)g->node_count; p++) {
		if (p == n || (p < 0 ? !gr->src[n] : !sends(g, j, p, n))) {
			continue;
		}
		struct hop *h = &hops[count];
		memset(h, 0, sizeof(*h));
		h->source = p;
		h->dest_shm = p >= 0 && gr->dest[n];
		int any = h->dest_shm;
		for (size_t i = 0; i < g->node_count; i++) {
			h->dest_link[i] = (int)i != p && sends(g, j, n, (int)i);
			any |= h->dest_link[i];
		}
		count += any != 0;
	}
	return count;
}

/* The links node n uses (link[i]: to node i) and whether it moves anything. */
static int links_of(const hakoi_gen_t *g, int n, unsigned char *link)
{
	struct hop hops[HAKOI_GEN_MAX_NODES + 1];
	memset(link, 0, HAKOI_GEN_MAX_NODES);
	int any = 0;
	for (size_t j = 0; j < g->group_count; j++) {
		size_t count = hops_of(g, n, j, hops);
		for (size_t k = 0; k < count; k++) {
			any = 1;
			if (hops[k].source >= 0) {
				link[hops[k].source] = 1;
			}
			for (size_t i = 0; i < g->node_count; i++) {
				link[i] |= hops[k].dest_link[i];
			}
		}
	}
	return any;
}

static void endpoint_id(const hakoi_gen_t *g, int n, int peer, char *buf, size_t len)
{
	if (peer < 0) {
		snprintf(buf, len, "%s-shm", g->nodes[n].id);
	} else {
		snprintf(buf, len, "%s-tcp-%s", g->nodes[n].id, g->nodes[peer].id);
	}
}

/* ---- pieces ---- */

static json_t *policy_json(const char *id)
{
	if (strcmp(id, "immediate") == 0) {
		return json_pack("{s:s}", "type", "immediate");
	}
	if (strcmp(id, "immediate-atomic") == 0) {
		return json_pack("{s:s, s:b}", "type", "immediate", "atomic", 1);
	}
	if (strcmp(id, "rd-ctrl-ticker") == 0) {
		return json_pack("{s:s, s:i}", "type", "ticker", "intervalMs", 10);
	}
	int throttle = strncmp(id, "throttle-", 9) == 0;
	long ms = strtol(id + (throttle ? 9 : 7), NULL, 10);
	return json_pack("{s:s, s:I}", "type", throttle ? "throttle" : "ticker", "intervalMs",
	                 (json_int_t)ms);
}

static json_t *pdu_entry(const char *robot, const hako_pdudef_pdu_t *p)
{
	char name[2 * HAKO_NAME_MAX + 2];
	snprintf(name, sizeof(name), "%s_%s", robot, p->name);
	return json_pack("{s:s, s:s, s:s, s:i, s:I, s:i, s:s}", "type", p->type, "org_name",
	                 p->name, "name", name, "channel_id", (int)p->channel_id, "pdu_size",
	                 (json_int_t)p->pdu_size, "write_cycle", 1, "method_type", "SHM");
}

/* The whole pdudef in the legacy form, which needs no file beside it. */
static json_t *pdudef_json(const hako_pdudef_t *def)
{
	json_t *robots = json_array();
	for (size_t i = 0; robots != NULL && i < def->robot_count; i++) {
		const hako_pdudef_robot_t *rb = &def->robots[i];
		json_t *readers = json_array(), *writers = json_array();
		for (size_t k = 0; readers != NULL && writers != NULL && k < rb->pdu_count; k++) {
			json_array_append_new(readers, pdu_entry(rb->name, &rb->pdus[k]));
			json_array_append_new(writers, pdu_entry(rb->name, &rb->pdus[k]));
		}
		json_array_append_new(robots, json_pack("{s:s, s:[], s:[], s:o, s:o}", "name",
		                                        rb->name, "rpc_pdu_readers",
		                                        "rpc_pdu_writers", "shm_pdu_readers",
		                                        readers, "shm_pdu_writers", writers));
	}
	return robots != NULL ? json_pack("{s:o}", "robots", robots) : NULL;
}

static void add_timing(const hakoi_gen_t *g, json_t *c)
{
	json_object_set_new(c, "delta_time_usec", json_integer(g->delta_usec));
	json_object_set_new(c, "max_delay_time_usec", json_integer(g->max_delay_usec));
	if (g->real_sleep_set) {
		json_object_set_new(c, "real_sleep_msec", json_integer(g->real_sleep_msec));
	}
	if (g->publish_mode_set || g->interval_set) {
		json_object_set_new(c, "simtime_publish_mode",
		                    json_string(g->publish_mode == HAKO_PUBLISH_DELTA_BOUNDARY
		                                    ? "delta_boundary"
		                                    : "immediate"));
	}
	if (g->interval_set) {
		json_object_set_new(c, "simtime_publish_interval_usec",
		                    json_integer(g->interval_usec));
	}
	/* hako's own: where the server listens, and the fault policy if given */
	const hakoi_gen_node_t *s = &g->nodes[0];
	int port = g->base_port + (int)g->node_count - 1;
	const char *fmt = strchr(s->address, ':') != NULL ? "tcp://[%s]:%d" : "tcp://%s:%d";
	char addr[128];
	snprintf(addr, sizeof(addr), fmt, s->address, port);
	json_object_set_new(c, "control_address", json_string(addr));
	snprintf(addr, sizeof(addr), fmt, s->address, port + 1);
	json_object_set_new(c, "time_address", json_string(addr));
	if (g->heartbeat_ms > 0) {
		json_object_set_new(c, "heartbeat_ms", json_integer(g->heartbeat_ms));
	}
	if (g->peer_timeout_ms > 0) {
		json_object_set_new(c, "peer_timeout_ms", json_integer(g->peer_timeout_ms));
	}
	if (g->on_client_loss >= 0) {
		json_object_set_new(
		    c, "on_client_loss",
		    json_string(g->on_client_loss == HAKO_CLIENT_LOSS_DROP ? "drop" : "error"));
	}
}

static json_t *conductor_json(const hakoi_gen_t *g, int n)
{
	json_t *c = json_object();
	if (c == NULL) {
		return NULL;
	}
	if (n == 0) {
		json_object_set_new(c, "server_machine_id", json_string(g->nodes[0].id));
		json_t *clients = json_array();
		for (size_t i = 1; i < g->node_count; i++) {
			json_array_append_new(clients, json_pack("{s:s, s:s}", "server_node_id",
			                                         g->nodes[i].server_node,
			                                         "client_node_id", g->nodes[i].id));
		}
		json_object_set_new(c, "clients", clients);
	} else {
		json_object_set_new(c, "node_id", json_string(g->nodes[n].id));
		json_object_set_new(c, "server_machine_id", json_string(g->nodes[0].id));
	}
	add_timing(g, c);
	if (g->rd) { /* relative to this file: <node>/conductor/<node>.json */
		json_object_set_new(c, "rd_config_path", json_string("../" HAKOI_GEN_RD_FILE));
	}
	return c;
}

/* ---- the RD config (mode "rd") ---- */

/* One document for every node: the runtime compares a hash of the file's bytes across nodes.
 * The RD nodes are the clients, their node index their id. */
static json_t *rd_json(const hakoi_gen_t *g)
{
	json_t *nodes = json_array(), *eus = json_array();
	json_t *trigger = g->rd_trigger != NULL ? json_deep_copy(g->rd_trigger)
	                                        : json_pack("{s:s}", "type", "manual");
	json_t *rd =
	    json_pack("{s:s, s:s, s:o, s:I, s:o, s:o}", "mode", "full", "pdudef", g->pdudef_name,
	              "nodes", nodes, "handoff_timeout_usec", (json_int_t)g->rd_timeout_usec,
	              "trigger", trigger, "execution_units", eus);
	if (rd == NULL) {
		return NULL;
	}
	for (size_t i = 1; i < g->node_count; i++) {
		json_array_append_new(
		    nodes, json_pack("{s:i, s:s}", "id", (int)i, "name", g->nodes[i].id));
	}
	for (size_t e = 0; e < g->eu_count; e++) {
		const hakoi_gen_eu_t *eu = &g->eus[e];
		const hakoi_gen_unit_t *u = &g->units[eu->unit];
		json_t *writes = json_array(), *candidates = json_array();
		for (size_t k = 0; k < eu->write_count; k++) {
			json_array_append_new(writes, json_string(eu->writes[k]));
		}
		for (size_t k = 0; k < u->candidate_count; k++) {
			json_array_append_new(candidates, json_integer(u->candidates[k]));
		}
		json_array_append_new(
		    eus, json_pack("{s:i, s:s, s:s, s:o, s:o, s:i, s:I, s:s, s:s}", "id", (int)e,
		                   "name", u->name, "robot", eu->robot, "writes", writes,
		                   "candidates", candidates, "initial_owner", u->node,
		                   "max_context_bytes", (json_int_t)g->rd_context_bytes, "status",
		                   eu->status, "context", eu->context));
	}
	return rd;
}

/* Write the RD config into every node's folder, and load one copy with hako's RD loader: what
 * gen checked of the eu-input is what the runtime checks of the RD config. */
static int write_rd(struct out *o)
{
	const hakoi_gen_t *g = o->g;
	char file[PATH_MAX];
	json_t *rd = rd_json(g);
	int r = 0;
	for (size_t i = 0; r == 0 && i < g->node_count; i++) {
		snprintf(file, sizeof(file), "%s/%s", g->nodes[i].id, HAKOI_GEN_RD_FILE);
		r = put(o, file, json_incref(rd));
	}
	json_decref(rd);
	if (r != 0) {
		return r;
	}
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s/%s", o->dir, g->nodes[0].id, HAKOI_GEN_RD_FILE);
	hako_rd_config_t *cfg = NULL;
	hako_error_t sub;
	if ((r = hako_rd_config_load(path, &cfg, &sub)) != 0) {
		char msg[1200];
		return hako_error_set(o->err, r, path, 0, 0, "the RD config does not load: %s",
		                      hako_error_format(&sub, msg, sizeof(msg)));
	}
	hako_rd_config_free(cfg);
	return 0;
}

/* ---- a node's bridge and endpoints ---- */

static json_t *shm_comm_json(const hakoi_gen_t *g, int n)
{
	json_t *robots = json_array();
	for (size_t j = 0; robots != NULL && j < g->group_count; j++) {
		const hakoi_gen_group_t *gr = &g->groups[j];
		int writes = gr->src[n], gets = gr->writer >= 0 && gr->dest[n];
		if (!writes && !gets) {
			continue;
		}
		for (size_t k = 0; k < gr->key_count; k++) {
			json_t *rb = NULL;
			for (size_t i = 0; i < json_array_size(robots) && rb == NULL; i++) {
				json_t *e = json_array_get(robots, i);
				if (strcmp(json_string_value(json_object_get(e, "name")),
				           gr->keys[k].robot) == 0) {
					rb = e;
				}
			}
			if (rb == NULL) {
				rb = json_pack("{s:s, s:[]}", "name", gr->keys[k].robot, "pdu");
				json_array_append_new(robots, rb);
			}
			/* Only what this node's units write wakes the bridge: what it writes into
			 * the domain itself must not come back to it. */
			json_array_append_new(json_object_get(rb, "pdu"),
			                      json_pack("{s:s, s:b}", "name", gr->keys[k].pdu,
			                                "notify_on_recv", writes));
		}
	}
	return robots != NULL
	           ? json_pack("{s:s, s:s, s:s, s:{s:o}}", "protocol", "shm", "impl_type",
	                       "callback", "direction", "inout", "io", "robots", robots)
	           : NULL;
}

static json_t *tcp_comm_json(const hakoi_gen_t *g, int n, int peer)
{
	int client = n == 0 ? peer : n;
	const hakoi_gen_node_t *c = &g->nodes[client];
	int listens = n == 0 ? !c->listens : c->listens;
	char name[2 * HAKO_CONDUCTOR_ID_MAX + 8];
	endpoint_id(g, n, peer, name, sizeof(name));
	if (listens) {
		return json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:i}, s:{s:i, s:i}}", "protocol",
		                 "tcp", "name", name, "direction", "inout", "role", "server",
		                 "local", "address", g->nodes[n].address, "port", c->port,
		                 "options", "read_timeout_ms", 1000, "write_timeout_ms", 1000);
	}
	return json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:i}, s:{s:i, s:i, s:i}}", "protocol", "tcp",
	                 "name", name, "direction", "inout", "role", "client", "remote", "address",
	                 g->nodes[peer].address, "port", c->port, "options", "connect_timeout_ms",
	                 1000, "read_timeout_ms", 1000, "write_timeout_ms", 1000);
}

static int write_endpoint(struct out *o, int n, int peer, json_t *entries)
{
	const hakoi_gen_t *g = o->g;
	char id[2 * HAKO_CONDUCTOR_ID_MAX + 8], file[PATH_MAX], comm[PATH_MAX], ep[PATH_MAX];
	char pdudef[160];
	endpoint_id(g, n, peer, id, sizeof(id));
	const char *base = peer < 0 ? "shm" : id + strlen(g->nodes[n].id) + 1; /* "tcp-<peer>" */
	snprintf(file, sizeof(file), "%s/endpoint/%s_comm.json", g->nodes[n].id, base);
	int r = put(o, file, peer < 0 ? shm_comm_json(g, n) : tcp_comm_json(g, n, peer));
	if (r != 0) {
		return r;
	}
	snprintf(comm, sizeof(comm), "%s_comm.json", base);
	snprintf(ep, sizeof(ep), "%s/endpoint/%s.json", g->nodes[n].id, base);
	snprintf(pdudef, sizeof(pdudef), "../%s", g->pdudef_name);
	r = put(o, ep,
	        json_pack("{s:s, s:s, s:s, s:s}", "name", id, "cache", "cache.json", "comm", comm,
	                  "pdu_def_path", pdudef));
	if (r != 0) {
		return r;
	}
	snprintf(file, sizeof(file), "endpoint/%s.json", base);
	json_array_append_new(entries, json_pack("{s:s, s:s, s:s}", "id", id, "mode",
	                                         peer < 0 ? "local" : "wire", "config_path", file));
	return 0;
}

static json_t *key_group_json(const hakoi_gen_group_t *gr)
{
	json_t *members = json_array();
	for (size_t k = 0; members != NULL && k < gr->key_count; k++) {
		char id[2 * HAKO_NAME_MAX + 2];
		snprintf(id, sizeof(id), "%s.%s", gr->keys[k].robot, gr->keys[k].pdu);
		json_array_append_new(members,
		                      json_pack("{s:s, s:s, s:s}", "id", id, "robot_name",
		                                gr->keys[k].robot, "pdu_name", gr->keys[k].pdu));
	}
	return members;
}

/* The connection of one hop: one group from one source. An EU's group is checked for the
 * EU's epoch (hako-bridge --rd moves the epoch with the EU and pauses a standby's sending). */
static json_t *connection_json(const hakoi_gen_t *g, int n, const hakoi_gen_group_t *gr,
                               const struct hop *h)
{
	char src[160], id[400];
	endpoint_id(g, n, h->source, src, sizeof(src));
	json_t *dests = json_array();
	if (h->dest_shm) {
		char shm[160];
		endpoint_id(g, n, -1, shm, sizeof(shm));
		json_array_append_new(dests, json_pack("{s:s}", "endpointId", shm));
	}
	for (size_t i = 0; i < g->node_count; i++) {
		if (h->dest_link[i]) {
			char ep[160];
			endpoint_id(g, n, (int)i, ep, sizeof(ep));
			json_array_append_new(dests, json_pack("{s:s}", "endpointId", ep));
		}
	}
	snprintf(id, sizeof(id), "%s@%s", gr->id, src);
	json_t *c = json_pack("{s:s, s:s, s:{s:s}, s:o, s:[{s:s, s:s}]}", "id", id, "nodeId",
	                      g->nodes[n].id, "source", "endpointId", src, "destinations", dests,
	                      "transferPdus", "pduKeyGroupId", gr->id, "policyId", gr->policy);
	if (c != NULL && gr->eu >= 0) {
		json_object_set_new(c, "epoch_validation", json_true());
	}
	return c;
}

/* One connection per (source, group), each with its own destinations. */
static json_t *bridge_json(const hakoi_gen_t *g, int n, const unsigned char *link)
{
	json_t *policies = json_object(), *nodes = json_array(), *wires = json_array();
	json_t *groups = json_object(), *conns = json_array();
	json_t *b =
	    json_pack("{s:s, s:o, s:o, s:s, s:o, s:o, s:o}", "version", "2.0.0", "transferPolicies",
	              policies, "nodes", nodes, "endpoints_config_path", "endpoints.json",
	              "wireLinks", wires, "pduKeyGroups", groups, "connections", conns);
	if (b == NULL) {
		return NULL;
	}
	for (size_t i = 0; i < g->node_count; i++) {
		json_array_append_new(nodes, json_pack("{s:s}", "id", g->nodes[i].id));
		if (link[i]) {
			char from[160], to[160];
			endpoint_id(g, n, (int)i, from, sizeof(from));
			endpoint_id(g, (int)i, n, to, sizeof(to));
			json_array_append_new(wires,
			                      json_pack("{s:s, s:s}", "from", from, "to", to));
		}
	}
	struct hop hops[HAKOI_GEN_MAX_NODES + 1];
	for (size_t j = 0; j < g->group_count; j++) {
		const hakoi_gen_group_t *gr = &g->groups[j];
		size_t count = hops_of(g, n, j, hops);
		if (count == 0) {
			continue;
		}
		if (json_object_get(policies, gr->policy) == NULL) {
			json_object_set_new(policies, gr->policy, policy_json(gr->policy));
		}
		json_object_set_new(groups, gr->id, key_group_json(gr));
		for (size_t k = 0; k < count; k++) {
			json_array_append_new(conns, connection_json(g, n, gr, &hops[k]));
		}
	}
	return b;
}

static int write_bridge(struct out *o, int n, const unsigned char *link)
{
	const hakoi_gen_t *g = o->g;
	char file[PATH_MAX];
	json_t *entries = json_array();
	if (entries == NULL) {
		return hako_error_set(o->err, HAKO_ENOMEM, o->dir, 0, 0, "out of memory");
	}
	int r = write_endpoint(o, n, -1, entries);
	for (size_t i = 0; r == 0 && i < g->node_count; i++) {
		if (link[i]) {
			r = write_endpoint(o, n, (int)i, entries);
		}
	}
	if (r != 0) {
		json_decref(entries);
		return r;
	}
	snprintf(file, sizeof(file), "%s/endpoint/cache.json", g->nodes[n].id);
	if ((r = put(o, file,
	             json_pack("{s:s, s:{s:s}}", "type", "buffer", "store", "mode", "latest"))) !=
	    0) {
		json_decref(entries);
		return r;
	}
	snprintf(file, sizeof(file), "%s/endpoints.json", g->nodes[n].id);
	r = put(o, file, json_pack("[{s:s, s:o}]", "nodeId", g->nodes[n].id, "endpoints", entries));
	if (r != 0) {
		return r;
	}
	snprintf(file, sizeof(file), "%s/bridge.json", g->nodes[n].id);
	return put(o, file, bridge_json(g, n, link));
}

/* ---- a node's launch file ---- */

#define RD_CONFIG_VAR "${HAKO_LAUNCH_DIR}/" HAKOI_GEN_RD_FILE

/* Unit u's process on node n, or NULL when it does not run there. An EU runs on each of its
 * candidates, the owner and the standbys, told which node and EU it is by its environment. */
static json_t *unit_process(const hakoi_gen_unit_t *u, int n)
{
	int runs = u->node == n;
	for (size_t c = 0; u->eu >= 0 && c < u->candidate_count; c++) {
		runs |= u->candidates[c] == n;
	}
	if (!runs || u->command == NULL) {
		return NULL;
	}
	json_t *args = json_array();
	for (size_t j = 0; args != NULL && j < u->arg_count; j++) {
		json_array_append_new(args, json_string(u->args[j]));
	}
	json_t *p =
	    json_pack("{s:s, s:s, s:o}", HAKOI_LAUNCH_KEY_PROC_NAME, u->name,
	              HAKOI_LAUNCH_KEY_PROC_COMMAND, u->command, HAKOI_LAUNCH_KEY_PROC_ARGS, args);
	if (p != NULL && u->eu >= 0) {
		char id[16];
		snprintf(id, sizeof(id), "%d", n);
		json_object_set_new(p, HAKOI_LAUNCH_KEY_PROC_ENV,
		                    json_pack("{s:s, s:s, s:s}", "HAKO_RD_CONFIG", RD_CONFIG_VAR,
		                              "HAKO_RD_NODE", id, "HAKO_RD_EU", u->name));
	}
	if (p != NULL) {
		json_object_set_new(p, HAKOI_LAUNCH_KEY_PROC_WAIT_FOR,
		                    json_pack("{s:s}", HAKOI_LAUNCH_KEY_WAIT_ASSET, u->asset));
	}
	return p;
}

static json_t *launch_json(const hakoi_gen_t *g, int n, int bridged)
{
	const hakoi_gen_node_t *node = &g->nodes[n];
	char text[PATH_MAX];
	json_t *l = json_object(), *procs = json_array(), *cond = json_object();
	if (l == NULL || procs == NULL || cond == NULL) {
		json_decref(l);
		json_decref(procs);
		json_decref(cond);
		return NULL;
	}
	snprintf(text, sizeof(text), "logs/%s", node->id);
	json_object_set_new(l, HAKOI_LAUNCH_KEY_LOG_DIR, json_string(text));
	if (g->opt.path_count > 0) {
		json_t *path = json_array();
		for (size_t i = 0; i < g->opt.path_count; i++) {
			json_array_append_new(path, json_string(g->opt.path[i]));
		}
		json_object_set_new(l, HAKOI_LAUNCH_KEY_PATH, path);
	}
	snprintf(text, sizeof(text), "conductor/%s.json", node->id);
	json_object_set_new(cond, HAKOI_LAUNCH_KEY_CONDUCTOR_FILE, json_string(text));
	if (g->opt.real_time_factor > 0) {
		json_object_set_new(cond, HAKOI_LAUNCH_KEY_REAL_TIME_FACTOR,
		                    json_real(g->opt.real_time_factor));
	}
	if (n == 0 && g->opt.stop_at_usec > 0) {
		json_object_set_new(cond, HAKOI_LAUNCH_KEY_STOP_AT_USEC,
		                    json_integer(g->opt.stop_at_usec));
	}
	json_object_set_new(l, HAKOI_LAUNCH_KEY_CONDUCTOR, cond);
	if (bridged) {
		/* hako-bridge says this line once its endpoints are open and its connections made:
		 * the units start after it, so that nothing they write is missed. */
		json_t *args =
		    json_pack("[s, s, s]", "${HAKO_LAUNCH_DIR}/bridge.json", "--node", node->id);
		if (g->rd) { /* the connections of an EU's groups follow its owner */
			json_array_append_new(args, json_string("--rd"));
			json_array_append_new(args, json_string(RD_CONFIG_VAR));
		}
		json_array_append_new(args, json_string("-v"));
		json_array_append_new(procs, json_pack("{s:s, s:s, s:o, s:{s:s}}",
		                                       HAKOI_LAUNCH_KEY_PROC_NAME, "hako-bridge",
		                                       HAKOI_LAUNCH_KEY_PROC_COMMAND, "hako-bridge",
		                                       HAKOI_LAUNCH_KEY_PROC_ARGS, args,
		                                       HAKOI_LAUNCH_KEY_PROC_WAIT_FOR,
		                                       HAKOI_LAUNCH_KEY_WAIT_LOG, "connection(s)"));
	}
	if (n == 0 && g->rd &&
	    (strcmp(g->rd_trigger_type, "timetable") == 0 ||
	     strcmp(g->rd_trigger_type, "boundary") == 0)) {
		/* The ExMonitor: an asset of the server's domain that asks the server for the
		 * trigger's moves (docs/rd.md). */
		snprintf(text, sizeof(text), "${HAKO_LAUNCH_DIR}/conductor/%s.json", node->id);
		json_array_append_new(
		    procs, json_pack("{s:s, s:s, s:[s, s, s], s:{s:s}}", HAKOI_LAUNCH_KEY_PROC_NAME,
		                     "exmonitor", HAKOI_LAUNCH_KEY_PROC_COMMAND, "hako-rd",
		                     HAKOI_LAUNCH_KEY_PROC_ARGS, "monitor", "--conductor", text,
		                     HAKOI_LAUNCH_KEY_PROC_WAIT_FOR, HAKOI_LAUNCH_KEY_WAIT_LOG,
		                     "monitor: every"));
	}
	for (size_t k = 0; k < g->unit_count; k++) {
		json_t *p = unit_process(&g->units[k], n);
		if (p != NULL) {
			json_array_append_new(procs, p);
		}
	}
	json_object_set_new(l, HAKOI_LAUNCH_KEY_PROCESSES, procs);
	return l;
}

int hakoi_gen_write(const hakoi_gen_t *g, const char *dir, size_t *count, hako_error_t *err)
{
	hako_error_clear(err);
	struct out o = {g, dir, 0, err};
	char file[PATH_MAX];
	json_t *nodes = json_array();
	if (nodes == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, dir, 0, 0, "out of memory");
	}
	int r = 0;
	for (size_t i = 0; r == 0 && i < g->node_count; i++) {
		int n = (int)i;
		const char *id = g->nodes[n].id;
		unsigned char link[HAKOI_GEN_MAX_NODES];
		int bridged = links_of(g, n, link);
		snprintf(file, sizeof(file), "%s/conductor/%s.json", id, id);
		r = put(&o, file, conductor_json(g, n));
		if (r == 0 && g->pdudef != NULL) {
			snprintf(file, sizeof(file), "%s/%s", id, g->pdudef_name);
			r = put(&o, file, pdudef_json(g->pdudef));
		}
		if (r == 0 && bridged) {
			r = write_bridge(&o, n, link);
		}
		if (r == 0) {
			snprintf(file, sizeof(file), "%s/launch.json", id);
			r = put(&o, file, launch_json(g, n, bridged));
			snprintf(file, sizeof(file), "%s/launch.json", id);
			json_array_append_new(nodes, json_string(file));
		}
	}
	if (r == 0 && g->rd) { /* after the pdudefs: the check loads the RD config's */
		r = write_rd(&o);
	}
	if (r == 0) {
		r = put(&o, HAKOI_GEN_FEDERATION_FILE,
		        json_pack("{s:{s:o}, s:s}", HAKOI_LAUNCH_KEY_FEDERATION,
		                  HAKOI_LAUNCH_KEY_NODES, nodes, HAKOI_LAUNCH_KEY_LOG_DIR,
		                  "logs/federation"));
	} else {
		json_decref(nodes);
	}
	if (count != NULL) {
		*count = o.files;
	}
	return r;
}
