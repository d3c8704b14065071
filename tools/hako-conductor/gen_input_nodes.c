/* The eu-input's nodes (gen_input.c reads the file): connection_pairs (one server, its
 * clients), execution_nodes, node_addresses, comm_defaults (the links' ports, who connects), and
 * conductor_defaults, the timing every node's conductor file gets. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "gen_input.h"

#define MAX_USEC (1ll << 40)

static int check_node_id(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	const char *s = (const char *)base + f->offset;
	if (!hakoi_gen_valid_name(s)) {
		return hakoi_walk_fail(w,
		                       "\"%s\": a node id has 1 to %d letters, digits, '.', '_' or "
		                       "'-' and starts with a letter or digit (it names the node's "
		                       "folder, domain and process)",
		                       s, HAKO_CONDUCTOR_ID_MAX - 1);
	}
	/* Its folder would be the federation file, which gen writes last (gen_write.c). */
	if (strcmp(s, HAKOI_GEN_FEDERATION_FILE) == 0) {
		return hakoi_walk_fail(w,
		                       "\"%s\" is the name of the federation file beside the "
		                       "nodes' folders",
		                       s);
	}
	return 0;
}

/* ---- connection_pairs: the nodes ---- */

struct pair_in {
	char client[HAKO_CONDUCTOR_ID_MAX];
	char server_node[HAKO_CONDUCTOR_ID_MAX];
	char machine[HAKO_CONDUCTOR_ID_MAX];
};

static const hakoi_field_t pair_fields[] = {
    {.key = "client_node_id",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(struct pair_in, client),
     .check = check_node_id},
    HAKOI_STRING("server_node_id", HAKOI_F_REQUIRED, struct pair_in, server_node),
    {.key = "server_machine_id",
     .kind = HAKOI_K_STRING,
     HAKOI_AT(struct pair_in, machine),
     .check = check_node_id},
    HAKOI_END,
};

/* Hakoniwa names the server nodes of one server machine "<machine>-NN" ("srv-01-01" on
 * "srv-01"); without server_machine_id, that suffix is taken off when what is left still has a
 * '-' ("srv-01-01" -> "srv-01", but "srv-01" stays). */
static void machine_of(const struct pair_in *p, char *out, size_t len)
{
	if (p->machine[0] != '\0') {
		snprintf(out, len, "%s", p->machine);
		return;
	}
	snprintf(out, len, "%s", p->server_node);
	char *dash = strrchr(out, '-');
	if (dash == NULL || dash[1] == '\0') {
		return;
	}
	for (const char *d = dash + 1; *d != '\0'; d++) {
		if (!isdigit((unsigned char)*d)) {
			return;
		}
	}
	*dash = '\0';
	if (strchr(out, '-') == NULL) {
		*dash = '-';
	}
}

int hakoi_gen_parse_pairs(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct ld *l = ld_of(w);
	hakoi_gen_t *g = l->g;
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of {client_node_id, server_node_id}");
	}
	size_t n = json_array_size(v);
	if (n == 0) {
		return hakoi_walk_fail(w, "must not be empty");
	}
	if (n > HAKO_CONDUCTOR_MAX_CLIENTS) {
		return hakoi_walk_fail(w,
		                       "has %zu entries; the limit is %d (the clients of a server)",
		                       n, HAKO_CONDUCTOR_MAX_CLIENTS);
	}
	if (g->rd && n > HAKO_RD_MAX_NODES) {
		return hakoi_walk_fail(w,
		                       "has %zu entries; with mode \"rd\" the limit is %d (each "
		                       "client is a node of the RD config: HAKO_RD_MAX_NODES)",
		                       n, HAKO_RD_MAX_NODES);
	}
	g->node_count = 1;
	for (size_t i = 0; i < n; i++) {
		struct pair_in p;
		memset(&p, 0, sizeof(p));
		json_t *e = json_array_get(v, i);
		hakoi_walk_push_index(w, i);
		int r = hakoi_walk_value(
		    w, e, &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = pair_fields}, &p);
		if (r != 0) {
			return r;
		}
		char machine[HAKO_CONDUCTOR_ID_MAX];
		machine_of(&p, machine, sizeof(machine));
		if (i == 0) {
			snprintf(g->nodes[0].id, sizeof(g->nodes[0].id), "%s", machine);
			g->nodes[0].server = 1;
		} else if (strcmp(machine, g->nodes[0].id) != 0) {
			hakoi_walk_push_key(w, p.machine[0] != '\0' ? "server_machine_id"
			                                            : "server_node_id");
			return hakoi_walk_fail(
			    w,
			    "server machine \"%s\" differs from \"%s\" of "
			    "connection_pairs[0]: a federation has one server, the "
			    "conductor server of all its clients",
			    machine, g->nodes[0].id);
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(g->nodes[j + 1].id, p.client) == 0) {
				hakoi_walk_push_key(w, "client_node_id");
				return hakoi_walk_fail_dup(w, j, "client \"%s\"", p.client);
			}
		}
		if (strcmp(p.client, g->nodes[0].id) == 0 || hakoi_gen_node_of(l, p.client) == 0 ||
		    strcmp(p.client, p.server_node) == 0) {
			hakoi_walk_push_key(w, "client_node_id");
			return hakoi_walk_fail(w, "\"%s\" is the server's id", p.client);
		}
		hakoi_gen_node_t *c = &g->nodes[g->node_count++];
		snprintf(c->id, sizeof(c->id), "%s", p.client);
		snprintf(c->server_node, sizeof(c->server_node), "%s", p.server_node);
		l->server_nodes[l->pair_count++] =
		    json_string_value(json_object_get(e, "server_node_id"));
		for (size_t j = 1; j + 1 < g->node_count; j++) {
			if (strcmp(g->nodes[j].id, p.server_node) == 0) {
				hakoi_walk_push_key(w, "server_node_id");
				return hakoi_walk_fail(w, "\"%s\" is a client's id", p.server_node);
			}
		}
		hakoi_walk_pop(w);
	}
	for (size_t i = 0; i < g->node_count; i++) {
		snprintf(g->nodes[i].address, sizeof(g->nodes[i].address), "127.0.0.1");
	}
	return 0;
}

/* ---- execution_nodes, node_addresses ---- */

int hakoi_gen_parse_exec_nodes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct ld *l = ld_of(w);
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of node ids");
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
		for (size_t j = 0; j < i; j++) {
			if (hakoi_gen_node_of(l, json_string_value(json_array_get(v, j))) == k) {
				return hakoi_walk_fail_dup(w, j, "node \"%s\"", l->g->nodes[k].id);
			}
		}
		l->g->nodes[k].executes = 1;
		hakoi_walk_pop(w);
	}
	l->exec_given = 1;
	return 0;
}

static int parse_address(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct ld *l = ld_of(w);
	const char *id = hakoi_walk_key(w);
	int k = hakoi_gen_node_of(l, id);
	if (k < 0) {
		return hakoi_gen_fail_not_node(w, id);
	}
	char addr[64];
	int r = hakoi_gen_get_string(w, v, addr, sizeof(addr));
	if (r != 0) {
		return r;
	}
	unsigned char buf[16];
	if (inet_pton(AF_INET, addr, buf) != 1 && inet_pton(AF_INET6, addr, buf) != 1) {
		return hakoi_walk_fail(w, "\"%s\" is not an IPv4 or IPv6 address", addr);
	}
	snprintf(l->g->nodes[k].address, sizeof(l->g->nodes[k].address), "%s", addr);
	return 0;
}

static const hakoi_field_t address_map = {
    .kind = HAKOI_K_MAP, .parse = parse_address, .expect = "an object of node id: address"};

int hakoi_gen_parse_addresses(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hakoi_walk_value(w, v, &address_map, base);
}

/* ---- comm_defaults, conductor_defaults ---- */

static const char *const initiators[] = {"server", "client", NULL};

static const hakoi_field_t tcp_fields[] = {
    HAKOI_INT("base_port", 0, hakoi_gen_t, base_port, 1, 65535),
    HAKOI_ENUM("connection_initiator", 0, hakoi_gen_t, client_initiates, initiators, NULL),
    HAKOI_OTHERS,
    HAKOI_END,
};

static int parse_tcp(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct ld *l = ld_of(w);
	if (!json_is_object(v)) {
		return hakoi_walk_fail_must(w, "an object");
	}
	/* whether the file gave base_port: an error about the port then points at it */
	json_t *port = json_object_get(v, "base_port");
	int r = hakoi_gen_walk_lenient(w, v, tcp_fields, l->g);
	l->base_port_given = r == 0 && port != NULL;
	return r;
}

static const hakoi_field_t comm_fields[] = {
    HAKOI_CUSTOM("tcp", 0, parse_tcp, "an object"),
    HAKOI_OTHERS,
    HAKOI_END,
};

int hakoi_gen_parse_comm(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	if (!json_is_object(v)) {
		return hakoi_walk_fail_must(w, "an object");
	}
	return hakoi_gen_walk_lenient(w, v, comm_fields, base);
}

static const char *const publish_names[] = {"immediate", "delta_boundary", NULL};
const char *const hakoi_gen_loss_names[] = {"error", "drop", NULL};

static int check_timing(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_gen_t *g = base;
	char why[400];
	if (!g->max_delay_usec) {
		g->max_delay_usec = g->delta_usec; /* lock-step unless told */
	}
	long long interval = g->interval_set ? g->interval_usec : g->delta_usec;
	if (hako_conductor_check_timing(g->delta_usec, g->max_delay_usec, g->publish_mode, interval,
	                                why, sizeof(why)) != 0) {
		return hakoi_walk_fail(w, "%s", why);
	}
	if (g->heartbeat_ms != 0 || g->peer_timeout_ms != 0) {
		long long beat = g->heartbeat_ms != 0 ? g->heartbeat_ms : 100;
		long long timeout = g->peer_timeout_ms != 0 ? g->peer_timeout_ms : 1000;
		if (timeout <= beat) {
			return hakoi_walk_fail(
			    w,
			    "peer_timeout_ms (%lld) must be more than heartbeat_ms "
			    "(%lld)",
			    timeout, beat);
		}
	}
	return 0;
}

static const hakoi_field_t conductor_fields[] = {
    HAKOI_INT("delta_time_usec", 0, hakoi_gen_t, delta_usec, 1, MAX_USEC),
    HAKOI_INT("max_delay_time_usec", 0, hakoi_gen_t, max_delay_usec, 1, MAX_USEC),
    {.key = "real_sleep_msec",
     .kind = HAKOI_K_INT,
     HAKOI_AT(hakoi_gen_t, real_sleep_msec),
     .min = 0,
     .max = 3600000,
     .present = HAKOI_PRESENT(hakoi_gen_t, real_sleep_set)},
    {.key = "simtime_publish_mode",
     .kind = HAKOI_K_ENUM,
     HAKOI_AT(hakoi_gen_t, publish_mode),
     .names = publish_names,
     .present = HAKOI_PRESENT(hakoi_gen_t, publish_mode_set)},
    {.key = "simtime_publish_interval_usec",
     .kind = HAKOI_K_INT,
     HAKOI_AT(hakoi_gen_t, interval_usec),
     .min = 1,
     .max = MAX_USEC,
     .present = HAKOI_PRESENT(hakoi_gen_t, interval_set)},
    /* hako's own, copied into every node's conductor file */
    HAKOI_INT("heartbeat_ms", 0, hakoi_gen_t, heartbeat_ms, 1, 60000),
    HAKOI_INT("peer_timeout_ms", 0, hakoi_gen_t, peer_timeout_ms, 2, 3600000),
    HAKOI_ENUM("on_client_loss", 0, hakoi_gen_t, on_client_loss, hakoi_gen_loss_names, NULL),
    HAKOI_OTHERS,
    HAKOI_CHECK(check_timing),
    HAKOI_END,
};

int hakoi_gen_parse_conductor(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	if (!json_is_object(v)) {
		return hakoi_walk_fail_must(w, "an object");
	}
	return hakoi_gen_walk_lenient(w, v, conductor_fields, base);
}
