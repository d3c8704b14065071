/* The eu-input file of hako-conductor gen (conductor_gen.h): Hakoniwa's form, read with tables
 * for the config walker. What Hakoniwa's schema allows and hako does not use is accepted with a
 * warning at its place; what hako cannot map (several servers, automatic unit lists) is refused
 * at its place with the reason. Cross-references (a group's PDUs in the pdudef, a unit's type, a
 * placement's node) are checked where they are written, which is why the table reads the members
 * in dependency order, not in the file's. Mode "rd" makes every writing unit an RD execution unit
 * (conductor_gen.h); those checks come at the end (rd_units), once every unit is placed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conductor_gen.h"
#include "hakoi/cfg.h"

#define MAX_USEC (1ll << 40)
/* mode "rd": the RD config's bounds (rd/src/rd_config.c) and gen's own for the context */
#define RD_MAX_TIMEOUT_USEC  86400000000LL /* a day of world time */
#define RD_MAX_CONTEXT_BYTES 65536
#define RD_DEFAULT_TIMEOUT   2000000
#define RD_DEFAULT_CONTEXT   4096
#define RD_STATUS_TYPE       "hako_msgs/ExecutionUnitRuntimeStatus"
#define RD_CONTEXT_TYPE      "hako_msgs/ExecutionUnitRuntimeContext"
#define RD_STATUS_SIZE       256 /* unit_count 1 needs 68 bytes */
#define RD_CONTEXT_OVERHEAD  64  /* 24-byte meta, 16-byte base, 24-byte RD header */

/* A robot type: its pdutypes file. */
struct rtype {
	char name[HAKO_NAME_MAX];
	char pdutypes[512];
};

struct robot {
	char name[HAKO_NAME_MAX];
	char type[HAKO_NAME_MAX];
};

/* An eu_types entry: the groups it writes and reads (one flag per group). */
struct etype {
	char name[HAKO_NAME_MAX];
	unsigned char *writes;
	unsigned char *reads;
};

/* Where a group was declared, for what is found about it at the end. */
struct group_src {
	const char *array; /* "pdu_groups" or "pdu_type_groups" */
	size_t index;
};

/* Where a unit was placed (unit_placement.nodes.<node>[index]), for the same reason. */
struct place_src {
	const char *node_key; /* NULL: placed by mode "auto" */
	size_t index;
};

struct ld {
	hakoi_gen_t *g;
	/* connection_pairs, as read */
	size_t pair_count;
	const char *server_nodes[HAKOI_GEN_MAX_NODES]; /* each pair's server_node_id (JSON) */
	int exec_given;
	size_t rtype_count;
	struct rtype *rtypes;
	size_t robot_count;
	struct robot *robots;
	int robots_given;
	int pdudef_given;
	int groups_given, type_groups_given;
	struct group_src *group_src;
	size_t etype_count;
	struct etype *etypes;
	struct place_src *place_src; /* per unit */
	int placement_given;
	int base_port_given;
};

static struct ld *ld_of(hakoi_walk_t *w)
{
	return w->user;
}

/* ---- warnings ---- */

static void warn_at(hakoi_walk_t *w, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn_at(hakoi_walk_t *w, const char *key, const char *fmt, ...)
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
static void warn_others(hakoi_walk_t *w, json_t *obj, const hakoi_field_t *fields)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		if (!known_key(fields, key)) {
			warn_at(w, key, "not used by hako-conductor gen (ignored)");
		}
	}
}

/* An object whose table ends with HAKOI_OTHERS: walked, then its other members warned about. */
static int walk_lenient(hakoi_walk_t *w, json_t *v, const hakoi_field_t *fields, void *base)
{
	int r = hakoi_walk_object(w, v, fields, base);
	if (r == 0) {
		warn_others(w, v, fields);
	}
	return r;
}

/* ---- small checks ---- */

/* Node ids and unit names name files, domains, processes and logs. */
static int valid_name(const char *s)
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

static int check_node_id(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	const char *s = (const char *)base + f->offset;
	if (!valid_name(s)) {
		return hakoi_walk_fail(w,
		                       "\"%s\": a node id has 1 to %d letters, digits, '.', '_' or "
		                       "'-' and starts with a letter or digit (it names the node's "
		                       "folder, domain and process)",
		                       s, HAKO_CONDUCTOR_ID_MAX - 1);
	}
	return 0;
}

/* A string array element, as a JSON string of 1..size-1 bytes, into dst. */
static int get_string(hakoi_walk_t *w, json_t *v, char *dst, size_t size)
{
	if (!json_is_string(v)) {
		return hakoi_walk_fail_must(w, "a string");
	}
	return hakoi_walk_string(w, json_string_value(v), json_string_length(v), 0, dst, size);
}

/* The node an id names: a client, the server machine, or one of its server nodes. */
static int node_of(const struct ld *l, const char *id)
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

static int fail_not_node(hakoi_walk_t *w, const char *id)
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

static int parse_pairs(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
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
		if (strcmp(p.client, g->nodes[0].id) == 0 || node_of(l, p.client) == 0 ||
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

static int parse_exec_nodes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
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
		int r = get_string(w, json_array_get(v, i), id, sizeof(id));
		if (r != 0) {
			return r;
		}
		int k = node_of(l, id);
		if (k < 0) {
			return fail_not_node(w, id);
		}
		for (size_t j = 0; j < i; j++) {
			if (node_of(l, json_string_value(json_array_get(v, j))) == k) {
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
	int k = node_of(l, id);
	if (k < 0) {
		return fail_not_node(w, id);
	}
	char addr[64];
	int r = get_string(w, v, addr, sizeof(addr));
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

static int parse_addresses(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
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
	int r = walk_lenient(w, v, tcp_fields, l->g);
	l->base_port_given = r == 0 && port != NULL;
	return r;
}

static const hakoi_field_t comm_fields[] = {
    HAKOI_CUSTOM("tcp", 0, parse_tcp, "an object"),
    HAKOI_OTHERS,
    HAKOI_END,
};

static int parse_comm(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	if (!json_is_object(v)) {
		return hakoi_walk_fail_must(w, "an object");
	}
	return walk_lenient(w, v, comm_fields, base);
}

static const char *const publish_names[] = {"immediate", "delta_boundary", NULL};
static const char *const loss_names[] = {"error", "drop", NULL};

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
    HAKOI_ENUM("on_client_loss", 0, hakoi_gen_t, on_client_loss, loss_names, NULL),
    HAKOI_OTHERS,
    HAKOI_CHECK(check_timing),
    HAKOI_END,
};

static int parse_conductor(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	if (!json_is_object(v)) {
		return hakoi_walk_fail_must(w, "an object");
	}
	return walk_lenient(w, v, conductor_fields, base);
}

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

static int parse_rd(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
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

/* ---- robot_types, robots, pdudef: the PDUs ---- */

/* A pdutypes file that exists, made absolute: the temporary pdudef that names it is elsewhere. */
static int check_readable(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	char *path = (char *)base + f->offset;
	char real[PATH_MAX];
	if (access(path, R_OK) != 0 || realpath(path, real) == NULL) {
		return hakoi_walk_fail(w, "cannot open %s: %s", path, strerror(errno));
	}
	if (strlen(real) >= f->size) {
		return hakoi_walk_fail(w, "%s: path too long", real);
	}
	memcpy(path, real, strlen(real) + 1);
	return 0;
}

static const hakoi_field_t rtype_fields[] = {
    {.key = "pdutypes",
     .kind = HAKOI_K_PATH,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(struct rtype, pdutypes),
     .check = check_readable},
    HAKOI_END,
};

static int parse_rtype(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	struct rtype *t = base;
	int r = hakoi_walk_string(w, hakoi_walk_key(w), strlen(hakoi_walk_key(w)), 0, t->name,
	                          sizeof(t->name));
	return r != 0
	           ? r
	           : hakoi_walk_value(
	                 w, v, &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = rtype_fields}, t);
}

static int check_robot(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	struct ld *l = ld_of(w);
	const struct robot *rb = base;
	size_t i = hakoi_walk_index(w);
	for (size_t j = 0; j < i; j++) {
		if (strcmp(l->robots[j].name, rb->name) == 0) {
			hakoi_walk_push_key(w, "name");
			return hakoi_walk_fail_dup(w, j, "robot \"%s\"", rb->name);
		}
	}
	for (size_t j = 0; j < l->rtype_count; j++) {
		if (strcmp(l->rtypes[j].name, rb->type) == 0) {
			return 0;
		}
	}
	hakoi_walk_push_key(w, "type");
	return hakoi_walk_fail(w, "robot type \"%s\" is not in robot_types", rb->type);
}

static const hakoi_field_t robot_fields[] = {
    HAKOI_STRING("name", HAKOI_F_REQUIRED, struct robot, name),
    HAKOI_STRING("type", HAKOI_F_REQUIRED, struct robot, type),
    HAKOI_END,
};

static const hakoi_field_t robot_elem = {.kind = HAKOI_K_OBJECT, .fields = robot_fields};

static const hakoi_field_t rtype_map = {.kind = HAKOI_K_MAP,
                                        HAKOI_ELEMS_NEW(struct ld, rtypes, rtype_count),
                                        .parse = parse_rtype,
                                        .expect = "an object of type: {pdutypes}"};

static int parse_rtypes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	return hakoi_walk_value(w, v, &rtype_map, ld_of(w));
}

static int parse_robots(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	static const hakoi_field_t arr = {.kind = HAKOI_K_ARRAY,
	                                  HAKOI_ELEMS_NEW(struct ld, robots, robot_count),
	                                  .elem = &robot_elem,
	                                  .check = check_robot,
	                                  .expect = "an array of {name, type}"};
	struct ld *l = ld_of(w);
	l->robots_given = 1;
	return hakoi_walk_value(w, v, &arr, l);
}

/* With robot_types and robots, "pdudef" names the file Hakoniwa's generator writes: each node's
 * copy gets that name. Without them, it is the pdudef to read (relative to the eu-input). */
static int parse_pdudef(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_gen_t *g = base;
	struct ld *l = ld_of(w);
	char name[sizeof(g->pdudef_name)], path[512];
	int r = get_string(w, v, name, sizeof(name));
	if (r != 0) {
		return r;
	}
	l->pdudef_given = 1;
	if (l->robots_given) {
		if (strchr(name, '/') != NULL || strcmp(name, ".") == 0 ||
		    strcmp(name, "..") == 0) {
			return hakoi_walk_fail(
			    w,
			    "\"%s\": with robot_types and robots, pdudef names the "
			    "generated file: a file name without '/'",
			    name);
		}
		if (strcmp(name, "launch.json") == 0 || strcmp(name, "bridge.json") == 0 ||
		    strcmp(name, "endpoints.json") == 0) {
			return hakoi_walk_fail(w, "\"%s\" is the name of another file of each node",
			                       name);
		}
		snprintf(g->pdudef_name, sizeof(g->pdudef_name), "%s", name);
		return 0;
	}
	if ((r = hakoi_walk_resolve(w, name, path, sizeof(path))) != 0) {
		return r;
	}
	hako_error_t sub;
	r = hako_pdudef_load(path, &g->pdudef, &sub);
	return r != 0 ? hakoi_walk_sub_error(w, r, &sub, path) : 0;
}

static void json_quote(FILE *f, const char *s)
{
	json_t *j = json_string(s);
	char *t = j != NULL ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	fputs(t != NULL ? t : "\"\"", f);
	free(t);
	json_decref(j);
}

/* robot_types + robots as a compact pdudef in a temporary file, loaded by the registry: the
 * registry reads the pdutypes files, and its errors name them. */
static int build_pdudef(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_gen_t *g = base;
	struct ld *l = ld_of(w);
	if (!l->robots_given || l->robot_count == 0) {
		return 0;
	}
	const char *tmpdir = getenv("TMPDIR");
	char tmp[512];
	snprintf(tmp, sizeof(tmp), "%s/hako-gen-pdudef-XXXXXX.json",
	         tmpdir != NULL && tmpdir[0] != '\0' ? tmpdir : "/tmp");
	int fd = mkstemps(tmp, 5);
	FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (out == NULL) {
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		hakoi_walk_push_key(w, "robots");
		return hakoi_walk_fail(w, "cannot write a temporary pdudef in %s: %s",
		                       tmpdir != NULL ? tmpdir : "/tmp", strerror(errno));
	}
	fputs("{\"paths\": [", out);
	for (size_t i = 0; i < l->rtype_count; i++) {
		fputs(i > 0 ? ", {\"id\": " : "{\"id\": ", out);
		json_quote(out, l->rtypes[i].name);
		fputs(", \"path\": ", out);
		json_quote(out, l->rtypes[i].pdutypes);
		fputs("}", out);
	}
	fputs("], \"robots\": [", out);
	for (size_t i = 0; i < l->robot_count; i++) {
		fputs(i > 0 ? ", {\"name\": " : "{\"name\": ", out);
		json_quote(out, l->robots[i].name);
		fputs(", \"pdutypes_id\": ", out);
		json_quote(out, l->robots[i].type);
		fputs("}", out);
	}
	fputs("]}\n", out);
	int bad = ferror(out);
	bad |= fclose(out) != 0;
	hako_error_t sub;
	int r = bad ? HAKO_EIO : hako_pdudef_load(tmp, &g->pdudef, &sub);
	unlink(tmp);
	if (r == 0) {
		return 0;
	}
	hakoi_walk_push_key(w, "robots");
	if (bad) {
		return hakoi_walk_fail(w, "cannot write a temporary pdudef %s", tmp);
	}
	if (strcmp(sub.file, tmp) == 0) { /* about the robots, not inside a pdutypes file */
		return hakoi_walk_fail(w, "%s", sub.message);
	}
	return hakoi_walk_sub_error(w, r, &sub, tmp);
}

/* ---- PDU groups ---- */

static const char *const ticker_names[] = {"rd-ctrl-ticker", NULL};

/* The transfer policies gen knows: Hakoniwa's template ids, and throttle-/ticker-<N>ms. */
static int valid_policy(const char *id)
{
	if (strcmp(id, "immediate") == 0 || strcmp(id, "immediate-atomic") == 0 ||
	    strcmp(id, ticker_names[0]) == 0) {
		return 1;
	}
	const char *num = strncmp(id, "throttle-", 9) == 0 ? id + 9
	                  : strncmp(id, "ticker-", 7) == 0 ? id + 7
	                                                   : NULL;
	if (num == NULL || !isdigit((unsigned char)*num) || *num == '0') {
		return 0;
	}
	char *end;
	long ms = strtol(num, &end, 10);
	return strcmp(end, "ms") == 0 && ms >= 1 && ms <= 3600000;
}

static int check_policy(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	const char *id = (const char *)base + f->offset;
	if (!valid_policy(id)) {
		return hakoi_walk_fail(w,
		                       "\"%s\" is not a transfer policy hako-conductor gen knows: "
		                       "\"immediate\", \"immediate-atomic\", \"throttle-<N>ms\", "
		                       "\"ticker-<N>ms\" or \"rd-ctrl-ticker\"",
		                       id);
	}
	return 0;
}

/* A new group id, unique among both kinds of groups. */
static int add_group(hakoi_walk_t *w, const char *id, const char *array, size_t index,
                     hakoi_gen_group_t **out)
{
	struct ld *l = ld_of(w);
	hakoi_gen_t *g = l->g;
	for (size_t i = 0; i < g->group_count; i++) {
		if (strcmp(g->groups[i].id, id) == 0) {
			hakoi_walk_push_key(w, "id");
			return hakoi_walk_fail(w, "group \"%s\" is already used by %s[%zu]", id,
			                       l->group_src[i].array, l->group_src[i].index);
		}
	}
	hakoi_gen_group_t *gr = realloc(g->groups, (g->group_count + 1) * sizeof(*gr));
	if (gr == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	g->groups = gr;
	struct group_src *src = realloc(l->group_src, (g->group_count + 1) * sizeof(*src));
	if (src == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	l->group_src = src;
	src[g->group_count] = (struct group_src){array, index};
	gr = &g->groups[g->group_count++];
	memset(gr, 0, sizeof(*gr));
	snprintf(gr->id, sizeof(gr->id), "%s", id);
	snprintf(gr->policy, sizeof(gr->policy), "immediate");
	gr->writer = -1;
	gr->eu = -1;
	*out = gr;
	return 0;
}

/* robot.pdu into the group: in the pdudef, and in no other group (a bridge would forward it
 * twice). */
static int add_key(hakoi_walk_t *w, hakoi_gen_group_t *gr, const char *robot, const char *pdu)
{
	const hakoi_gen_t *g = ld_of(w)->g;
	if (g->pdudef == NULL) {
		return hakoi_walk_fail(w,
		                       "robot \"%s\": no PDUs are declared (give \"pdudef\", or "
		                       "\"robot_types\" and \"robots\")",
		                       robot);
	}
	if (hako_pdudef_robot(g->pdudef, robot) == NULL) {
		return hakoi_walk_fail(w, "robot \"%s\" is not declared (pdudef or robots)", robot);
	}
	if (hako_pdudef_find(g->pdudef, robot, pdu) == NULL) {
		return hakoi_walk_fail(w, "robot \"%s\" has no PDU \"%s\"", robot, pdu);
	}
	for (size_t i = 0; i < g->group_count; i++) {
		const hakoi_gen_group_t *o = &g->groups[i];
		for (size_t k = 0; k < o->key_count; k++) {
			if (strcmp(o->keys[k].robot, robot) == 0 &&
			    strcmp(o->keys[k].pdu, pdu) == 0) {
				return hakoi_walk_fail(w, "%s.%s is already in group \"%s\"", robot,
				                       pdu, o->id);
			}
		}
	}
	hakoi_gen_key_t *k = realloc(gr->keys, (gr->key_count + 1) * sizeof(*k));
	if (k == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	gr->keys = k;
	snprintf(k[gr->key_count].robot, sizeof(k->robot), "%s", robot);
	snprintf(k[gr->key_count].pdu, sizeof(k->pdu), "%s", pdu);
	gr->key_count++;
	return 0;
}

struct key_in {
	char robot[HAKO_NAME_MAX];
	char name[HAKO_NAME_MAX];
};

static const hakoi_field_t key_fields[] = {
    HAKOI_STRING("robot", HAKOI_F_REQUIRED, struct key_in, robot),
    HAKOI_STRING("name", HAKOI_F_REQUIRED, struct key_in, name),
    HAKOI_END,
};

struct group_in {
	char id[HAKO_NAME_MAX];
	char policy[HAKO_NAME_MAX];
	char transport[16];
	json_t *keys;
};

static int keep_keys(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of {robot, name}");
	}
	if (json_array_size(v) == 0) {
		return hakoi_walk_fail(w, "must not be empty");
	}
	((struct group_in *)base)->keys = v;
	return 0;
}

static int check_transport(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	const char *t = (const char *)base + f->offset;
	return strcmp(t, "tcp") == 0
	           ? 0
	           : hakoi_walk_fail(w, "\"%s\": the generated bridges carry groups over tcp only",
	                             t);
}

static const hakoi_field_t group_fields[] = {
    HAKOI_STRING("id", HAKOI_F_REQUIRED, struct group_in, id),
    {.key = "transfer_policy_id",
     .kind = HAKOI_K_STRING,
     HAKOI_AT(struct group_in, policy),
     .check = check_policy},
    {.key = "transport",
     .kind = HAKOI_K_STRING,
     HAKOI_AT(struct group_in, transport),
     .check = check_transport},
    HAKOI_IGNORE("pdudef"),
    HAKOI_CUSTOM("pdu_keys", HAKOI_F_REQUIRED, keep_keys, "an array of {robot, name}"),
    HAKOI_OTHERS,
    HAKOI_END,
};

static int parse_groups(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct ld *l = ld_of(w);
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of {id, pdu_keys, transfer_policy_id}");
	}
	l->groups_given = 1;
	for (size_t i = 0; i < json_array_size(v); i++) {
		struct group_in in;
		memset(&in, 0, sizeof(in));
		hakoi_walk_push_index(w, i);
		json_t *e = json_array_get(v, i);
		if (!json_is_object(e)) {
			return hakoi_walk_fail_must(w, "an object");
		}
		int r = walk_lenient(w, e, group_fields, &in);
		hakoi_gen_group_t *gr;
		if (r != 0 || (r = add_group(w, in.id, "pdu_groups", i, &gr)) != 0) {
			return r;
		}
		if (in.policy[0] != '\0') {
			snprintf(gr->policy, sizeof(gr->policy), "%s", in.policy);
		}
		hakoi_walk_push_key(w, "pdu_keys");
		for (size_t k = 0; k < json_array_size(in.keys); k++) {
			struct key_in key;
			memset(&key, 0, sizeof(key));
			hakoi_walk_push_index(w, k);
			r = hakoi_walk_value(
			    w, json_array_get(in.keys, k),
			    &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = key_fields}, &key);
			if (r != 0) {
				return r;
			}
			hakoi_walk_push_key(w, "name");
			if ((r = add_key(w, gr, key.robot, key.name)) != 0) {
				return r;
			}
			hakoi_walk_pop(w);
			hakoi_walk_pop(w);
		}
		hakoi_walk_pop(w);
		hakoi_walk_pop(w);
	}
	return 0;
}

struct type_group_in {
	char id[HAKO_NAME_MAX];
	char policy[HAKO_NAME_MAX];
	json_t *types;
};

static int keep_types(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of {robot_type, pdu_names}");
	}
	if (json_array_size(v) == 0) {
		return hakoi_walk_fail(w, "must not be empty");
	}
	((struct type_group_in *)base)->types = v;
	return 0;
}

static const hakoi_field_t type_group_fields[] = {
    HAKOI_STRING("id", HAKOI_F_REQUIRED, struct type_group_in, id),
    HAKOI_CUSTOM("robot_types", HAKOI_F_REQUIRED, keep_types,
                 "an array of {robot_type, pdu_names}"),
    {.key = "transfer_policy_id",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(struct type_group_in, policy),
     .check = check_policy},
    HAKOI_END,
};

static int keep_json(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)w;
	*(json_t **)(void *)((char *)base + f->offset) = v;
	return 0;
}

struct type_entry_in {
	char type[HAKO_NAME_MAX];
	json_t *names;
};

static const hakoi_field_t type_entry_fields[] = {
    HAKOI_STRING("robot_type", HAKOI_F_REQUIRED, struct type_entry_in, type),
    {.key = "pdu_names",
     .kind = HAKOI_K_CUSTOM,
     .flags = HAKOI_F_REQUIRED,
     .offset = offsetof(struct type_entry_in, names),
     .parse = keep_json,
     .expect = "an array of PDU names"},
    HAKOI_END,
};

/* One {robot_type, pdu_names} of a type group: those PDUs of every robot of that type. */
static int expand_type(hakoi_walk_t *w, json_t *e, hakoi_gen_group_t *gr)
{
	struct ld *l = ld_of(w);
	struct type_entry_in in;
	memset(&in, 0, sizeof(in));
	int r = hakoi_walk_value(
	    w, e, &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = type_entry_fields}, &in);
	if (r != 0) {
		return r;
	}
	size_t robots = 0;
	int known = 0;
	for (size_t i = 0; i < l->robot_count; i++) {
		robots += strcmp(l->robots[i].type, in.type) == 0;
	}
	for (size_t i = 0; i < l->rtype_count; i++) {
		known |= strcmp(l->rtypes[i].name, in.type) == 0;
	}
	hakoi_walk_push_key(w, "robot_type");
	if (!known) {
		return hakoi_walk_fail(w, "robot type \"%s\" is not in robot_types", in.type);
	}
	if (robots == 0) {
		warn_at(w, NULL, "no robot is of type \"%s\": nothing to move for it", in.type);
	}
	hakoi_walk_pop(w);
	hakoi_walk_push_key(w, "pdu_names");
	if (!json_is_array(in.names) || json_array_size(in.names) == 0) {
		return json_is_array(in.names) ? hakoi_walk_fail(w, "must not be empty")
		                               : hakoi_walk_fail_must(w, "an array of PDU names");
	}
	for (size_t k = 0; k < json_array_size(in.names); k++) {
		char pdu[HAKO_NAME_MAX];
		hakoi_walk_push_index(w, k);
		if ((r = get_string(w, json_array_get(in.names, k), pdu, sizeof(pdu))) != 0) {
			return r;
		}
		for (size_t i = 0; i < l->robot_count; i++) {
			if (strcmp(l->robots[i].type, in.type) == 0 &&
			    (r = add_key(w, gr, l->robots[i].name, pdu)) != 0) {
				return r;
			}
		}
		hakoi_walk_pop(w);
	}
	hakoi_walk_pop(w);
	return 0;
}

static int parse_type_groups(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct ld *l = ld_of(w);
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of {id, robot_types, transfer_policy_id}");
	}
	l->type_groups_given = 1;
	for (size_t i = 0; i < json_array_size(v); i++) {
		struct type_group_in in;
		memset(&in, 0, sizeof(in));
		hakoi_walk_push_index(w, i);
		int r = hakoi_walk_value(
		    w, json_array_get(v, i),
		    &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = type_group_fields}, &in);
		hakoi_gen_group_t *gr;
		if (r != 0 || (r = add_group(w, in.id, "pdu_type_groups", i, &gr)) != 0) {
			return r;
		}
		snprintf(gr->policy, sizeof(gr->policy), "%s", in.policy);
		hakoi_walk_push_key(w, "robot_types");
		for (size_t k = 0; k < json_array_size(in.types); k++) {
			hakoi_walk_push_index(w, k);
			if ((r = expand_type(w, json_array_get(in.types, k), gr)) != 0) {
				return r;
			}
			hakoi_walk_pop(w);
		}
		hakoi_walk_pop(w);
		hakoi_walk_pop(w);
	}
	return 0;
}

/* Hakoniwa's schema: exactly one of the two. */
static int check_groups(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)base;
	(void)f;
	struct ld *l = ld_of(w);
	if (l->groups_given && l->type_groups_given) {
		hakoi_walk_push_key(w, "pdu_type_groups");
		return hakoi_walk_fail(w, "not allowed with pdu_groups: give the groups one way");
	}
	if (!l->groups_given && !l->type_groups_given) {
		hakoi_walk_push_key(w, "pdu_groups");
		return hakoi_walk_fail_missing(w, "an array of groups; or give pdu_type_groups");
	}
	return 0;
}

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
		int r = get_string(w, json_array_get(v, i), id, sizeof(id));
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

static int parse_etypes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
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

static int unit_of(const hakoi_gen_t *g, const char *name)
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
	if (!valid_name(s)) {
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
	int r = get_string(w, v, NULL, 0);
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
		int r = get_string(w, json_array_get(v, i), id, sizeof(id));
		if (r != 0) {
			return r;
		}
		int k = node_of(l, id);
		if (k < 0) {
			return fail_not_node(w, id);
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
    HAKOI_IGNORE("robot_bindings"),
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

static int parse_units(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
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
			r = get_string(w, e, u->name, sizeof(u->name));
			if (r == 0) {
				r = check_unit_name(
				    w, e, u,
				    &(hakoi_field_t){.offset = offsetof(hakoi_gen_unit_t, name)});
			}
		} else if (json_is_object(e)) {
			r = walk_lenient(w, e, unit_fields, u);
		} else {
			r = hakoi_walk_fail_must(w, "a unit name or {name, eu_type}");
		}
		if (r != 0) {
			return r;
		}
		int k = unit_of(g, u->name);
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

static int refuse_auto_units(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
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
	int k = unit_of(g, b->eu);
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

static int parse_bindings(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
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
	int k = unit_of(g, unit);
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
		int node = node_of(l, key);
		if (node < 0) {
			return fail_not_node(w, key);
		}
		if (!json_is_array(list)) {
			return hakoi_walk_fail_must(w, "an array of unit names");
		}
		for (size_t i = 0; i < json_array_size(list); i++) {
			char unit[HAKO_NAME_MAX];
			hakoi_walk_push_index(w, i);
			int r = get_string(w, json_array_get(list, i), unit, sizeof(unit));
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
			int r = get_string(w, json_array_get(p->targets, i), id, sizeof(id));
			if (r != 0) {
				return r;
			}
			int k = node_of(l, id);
			if (k < 0) {
				return fail_not_node(w, id);
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
     .parse = keep_json},
    {.key = "strategy",
     .kind = HAKOI_K_ENUM,
     HAKOI_AT(struct placement_in, strategy),
     .names = strategies,
     .present = HAKOI_PRESENT(struct placement_in, strategy_set)},
    {.key = "targets",
     .kind = HAKOI_K_CUSTOM,
     .offset = offsetof(struct placement_in, targets),
     .parse = keep_json},
    {.key = "block_size",
     .kind = HAKOI_K_INT,
     HAKOI_AT(struct placement_in, block_size),
     .min = 1,
     .max = 1000000,
     .present = HAKOI_PRESENT(struct placement_in, block_size_set)},
    HAKOI_CHECK(check_placement),
    HAKOI_END,
};

static int parse_placement(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct placement_in p;
	memset(&p, 0, sizeof(p));
	ld_of(w)->placement_given = 1;
	return hakoi_walk_value(
	    w, v, &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = placement_fields}, &p);
}

static int refuse_bridge_key(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)base;
	(void)f;
	return hakoi_walk_fail(w, "belongs to a bridge file, not to an eu-input: describe the PDUs "
	                          "with pdu_groups or pdu_type_groups");
}

/* ---- the whole federation ---- */

/* The unit's place, for a message about it: its placement, or its entry. */
static void push_unit(hakoi_walk_t *w, const struct ld *l, size_t k)
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
			push_unit(w, l, k);
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
		push_unit(w, l, k);
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
		push_unit(w, l, k);
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
static int rd_units(hakoi_walk_t *w)
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
				push_unit(w, l, k);
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
			warn_at(w, NULL,
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

static int finish(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
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
	int r = g->rd ? rd_units(w) : 0;
	if (r != 0 || (r = route(w)) != 0) {
		return r;
	}
	for (size_t k = 0; k < g->unit_count; k++) {
		const hakoi_gen_unit_t *u = &g->units[k];
		hakoi_walk_push_key(w, "execution_units");
		hakoi_walk_push_index(w, u->index);
		if (u->node < 0) {
			warn_at(w, NULL,
			        "unit \"%s\" is placed on no node (unit_placement): not started",
			        u->name);
		} else if (u->command == NULL) {
			warn_at(
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

static const hakoi_field_t top_fields[] = {
    HAKOI_IGNORE("$schema"),
    HAKOI_CUSTOM("mode", HAKOI_F_REQUIRED, parse_mode, "\"simple\" or \"rd\""),
    HAKOI_CUSTOM("connection_pairs", HAKOI_F_REQUIRED, parse_pairs,
                 "an array of {client_node_id, server_node_id}"),
    HAKOI_CUSTOM("execution_nodes", HAKOI_F_REQUIRED, parse_exec_nodes, "an array of node ids"),
    HAKOI_CUSTOM("node_addresses", 0, parse_addresses, "an object of node id: address"),
    HAKOI_CUSTOM("comm_defaults", 0, parse_comm, "an object"),
    HAKOI_CUSTOM("conductor_defaults", 0, parse_conductor, "an object"),
    HAKOI_CUSTOM("rd", 0, parse_rd, "an object"),
    HAKOI_CUSTOM("robot_types", 0, parse_rtypes, "an object of type: {pdutypes}"),
    HAKOI_CUSTOM("robots", 0, parse_robots, "an array of {name, type}"),
    HAKOI_CUSTOM("pdudef", 0, parse_pdudef, "a string"),
    HAKOI_CHECK(build_pdudef),
    HAKOI_CUSTOM("pdu_groups", 0, parse_groups, "an array of groups"),
    HAKOI_CUSTOM("pdu_type_groups", 0, parse_type_groups, "an array of groups"),
    HAKOI_CHECK(check_groups),
    HAKOI_CUSTOM("eu_types", 0, parse_etypes, "an object of type: {writes, reads}"),
    HAKOI_CUSTOM("execution_units", 0, parse_units, "an array of units"),
    HAKOI_CUSTOM("execution_units_auto", 0, refuse_auto_units, "an array"),
    HAKOI_CUSTOM("eu_pdu_bindings", 0, parse_bindings, "an array of {eu, writes, reads}"),
    HAKOI_CUSTOM("unit_placement", 0, parse_placement, "an object"),
    HAKOI_CUSTOM("pduKeyGroups", 0, refuse_bridge_key, NULL),
    HAKOI_CUSTOM("bridge_connections", 0, refuse_bridge_key, NULL),
    HAKOI_OTHERS,
    HAKOI_CHECK(finish),
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
		warn_others(&w, root, top_fields);
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

/* ---- dump ---- */

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
		        g->on_client_loss < 0 ? "-" : loss_names[g->on_client_loss]);
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
