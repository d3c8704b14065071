/* Endpoint config loaders: endpoint, cache, comm and container files, each a table of fields
 * walked by the config toolkit (hakoi/cfg.h), so every error reads file:line:column: path: what
 * in the walker's wording. A comm file's table is its comm's own (ep_comm.h): this file reads
 * "protocol", finds the comm and walks the file with that comm's table; the pieces every comm
 * table shares (common members, addresses, limits) are defined here. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_comm.h"
#include "hako/endpoint_config.h"
#include "hako/log.h"
#include "hakoi/cfg.h"
#include "node_map.h"

/* Read path and walk it with fn(w, root, arg) (arg is the walk's user). */
typedef int (*walk_fn)(hakoi_walk_t *w, json_t *root, void *arg);

static int walk_file(const char *path, hako_error_t *err, walk_fn fn, void *arg)
{
	json_t *root = NULL;
	char *text = NULL;
	size_t len = 0;
	int r = hakoi_cfg_load(path, err, &root, &text, &len);
	if (r != 0) {
		return r;
	}
	hakoi_walk_t w;
	hakoi_walk_init(&w, err, path, text, len, arg);
	r = fn(&w, root, arg);
	json_decref(root);
	free(text);
	return r;
}

/* A path that fits: HAKO_ENAMETOOLONG otherwise. */
static int check_path(const char *path, size_t size, hako_error_t *err)
{
	if (strlen(path) >= size) {
		return hako_error_set(err, HAKO_ENAMETOOLONG, path, 0, 0,
		                      "path is too long (limit %zu bytes)", size - 1);
	}
	return 0;
}

/* A string value naming a file, resolved against the folder of the file being walked. */
static int path_value(hakoi_walk_t *w, json_t *v, const char *expect, char *out, size_t size)
{
	if (!json_is_string(v)) {
		return hakoi_walk_fail_must(w, expect);
	}
	int r = hakoi_walk_string(w, json_string_value(v), json_string_length(v), 0, NULL, 0);
	return r != 0 ? r : hakoi_walk_resolve(w, json_string_value(v), out, size);
}

/* ---- what the comm tables share (ep_comm.h) ---- */

const char *const hakoi_comm_dir_names[] = {"in", "out", "inout", NULL};
const int hakoi_comm_dir_values[] = {HAKO_COMM_IN, HAKO_COMM_OUT, HAKO_COMM_INOUT};
const char *const hakoi_comm_version_names[] = {"v1", "v2", NULL};
const int hakoi_comm_version_values[] = {1, 2};
const char *const hakoi_comm_role_names[] = {"server", "client", NULL};
const int hakoi_comm_role_values[] = {HAKO_COMM_SERVER, HAKO_COMM_CLIENT};

static int ip_family(const char *s)
{
	struct in6_addr a;
	if (inet_pton(AF_INET, s, &a) == 1) {
		return AF_INET;
	}
	return inet_pton(AF_INET6, s, &a) == 1 ? AF_INET6 : 0;
}

int hakoi_comm_check_ip(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	const char *s = json_string_value(v);
	if (s == NULL || ip_family(s) == 0) {
		return hakoi_walk_fail(w, "\"%s\" is not an IPv4 or IPv6 address",
		                       s != NULL ? s : "");
	}
	return 0;
}

/* ---- node names (Hakoniwa's name_resolver and node-ip-map.json) ---- */

#define NODE_MAP_ENV "HAKO_NODE_IP_MAP"

/* The map at path, named by from, becomes the walk's map. */
static int use_map(hakoi_walk_t *w, hakoi_comm_load_t *ld, const char *path, const char *from)
{
	hako_error_t sub;
	int r = hakoi_node_map_load(path, &ld->map, &sub);
	if (r == HAKO_ENOENT && sub.line == 0 && strcmp(from, NODE_MAP_ENV) == 0) {
		return hakoi_walk_fail(w, "cannot open node map %s (from %s): %s", path, from,
		                       strerror(ENOENT));
	}
	if (r != 0) {
		return hakoi_walk_sub_error(w, r, &sub, path);
	}
	snprintf(ld->cc->node_map, sizeof(ld->cc->node_map), "%s", path);
	snprintf(ld->cc->node_map_from, sizeof(ld->cc->node_map_from), "%s", from);
	return 0;
}

/* name_resolver.path: the map, relative to the comm file, loaded now so that a missing or bad
 * map is an error whatever the addresses are; HAKO_NODE_IP_MAP, when set, replaces it. */
static int resolver_path(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	hakoi_comm_load_t *ld = w->user;
	char resolved[HAKO_ENDPOINT_PATH_MAX];
	int r = path_value(w, v, f->expect, resolved, sizeof(resolved));
	const char *env = getenv(NODE_MAP_ENV);
	if (r != 0 || (env != NULL && env[0] != '\0')) {
		return r;
	}
	return use_map(w, ld, resolved, "name_resolver.path");
}

static const char *const resolver_types[] = {"file", NULL};

/* strict is read and checked: hako never asks DNS, a name the map lacks is always an error. */
const hakoi_field_t hakoi_comm_resolver_fields[] = {
    {.key = "type", .kind = HAKOI_K_ENUM, .flags = HAKOI_F_REQUIRED, .names = resolver_types},
    HAKOI_CUSTOM("path", HAKOI_F_REQUIRED, resolver_path, "a path"),
    {.key = "strict", .kind = HAKOI_K_BOOL},
    HAKOI_END,
};

/* Only digits, dots, hex and colons: meant as an IP literal, so no word about node names. */
static int looks_numeric(const char *s)
{
	return s[0] != '\0' && strspn(s, "0123456789abcdefABCDEF.:") == strlen(s) &&
	       strpbrk(s, ".:") != NULL;
}

/* A node name (or localhost) in place of an address: resolved into a, through the map. */
static int resolve_node(hakoi_walk_t *w, hakoi_comm_load_t *ld, hako_comm_addr_t *a, const char *s)
{
	const char *env = getenv(NODE_MAP_ENV);
	if (ld->map == NULL && env != NULL && env[0] != '\0' && !looks_numeric(s)) {
		int r = use_map(w, ld, env, NODE_MAP_ENV);
		if (r != 0) {
			return r;
		}
	}
	const char *ip = hakoi_node_map_find(ld->map, s);
	if (ip == NULL && strcmp(s, "localhost") == 0) {
		ip = "127.0.0.1";
	}
	if (ip != NULL) {
		snprintf(a->node, sizeof(a->node), "%s", s);
		snprintf(a->address, sizeof(a->address), "%s", ip);
		a->family = ip_family(ip);
		return 0;
	}
	if (ld->map != NULL) {
		char names[400];
		hakoi_node_map_names(ld->map, names, sizeof(names));
		return hakoi_walk_fail(
		    w, "\"%s\" is not an IP address nor a node of %s (its nodes: %s)", s,
		    ld->cc->node_map, names);
	}
	if (looks_numeric(s)) {
		return hakoi_walk_fail(w, "\"%s\" is not an IPv4 or IPv6 address", s);
	}
	return hakoi_walk_fail(w,
	                       "\"%s\" is not an IPv4 or IPv6 address, and there is no node map "
	                       "to resolve it as a node name (name_resolver in the file, "
	                       "--node-map or " NODE_MAP_ENV ")",
	                       s);
}

/* The address of a hako_comm_addr_t (base): its family is the one of the literal; a node name
 * of a comm file is resolved (the walk's user is then a hakoi_comm_load_t). */
static int check_addr_ip(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hako_comm_addr_t *a = base;
	const char *s = json_string_value(v);
	a->family = s != NULL ? ip_family(s) : 0;
	return a->family != 0 ? 0 : resolve_node(w, w->user, a, s != NULL ? s : "");
}

static int check_url_path(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	return json_string_value(v)[0] == '/' ? 0 : hakoi_walk_fail(w, "must start with '/'");
}

/* A local port 0 binds any free port (hako_endpoint_local_port tells which). */
const hakoi_field_t hakoi_comm_ip_local_fields[] = {
    {.key = "address",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hako_comm_addr_t, address),
     .check = check_addr_ip},
    HAKOI_INT("port", HAKOI_F_REQUIRED | HAKOI_F_UNSIGNED, hako_comm_addr_t, port, 0, 65535),
    HAKOI_END,
};

const hakoi_field_t hakoi_comm_ip_remote_fields[] = {
    {.key = "address",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hako_comm_addr_t, address),
     .check = check_addr_ip},
    HAKOI_INT("port", HAKOI_F_REQUIRED | HAKOI_F_UNSIGNED, hako_comm_addr_t, port, 1, 65535),
    HAKOI_END,
};

const hakoi_field_t hakoi_comm_ws_local_fields[] = {
    {.key = "address",
     .kind = HAKOI_K_STRING,
     HAKOI_AT(hako_comm_addr_t, address),
     .check = check_addr_ip},
    HAKOI_INT("port", HAKOI_F_REQUIRED | HAKOI_F_UNSIGNED, hako_comm_addr_t, port, 0, 65535),
    HAKOI_END,
};

/* Hakoniwa's websocket client files carry remote.secure (wss://); false is plain ws. */
static int remote_secure(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	return json_is_true(v) ? hakoi_walk_fail(w, "TLS (wss://) is not supported: give false, "
	                                            "or reach the server over ws:// (a TLS "
	                                            "terminating proxy in front of it)")
	                       : 0;
}

const hakoi_field_t hakoi_comm_ws_remote_fields[] = {
    HAKOI_STRING("host", HAKOI_F_REQUIRED, hako_comm_addr_t, host),
    {.key = "secure", .kind = HAKOI_K_BOOL, .check = remote_secure},
    HAKOI_INT("port", HAKOI_F_REQUIRED | HAKOI_F_UNSIGNED, hako_comm_addr_t, port, 1, 65535),
    {.key = "path",
     .kind = HAKOI_K_STRING,
     HAKOI_AT(hako_comm_addr_t, path),
     .check = check_url_path},
    HAKOI_END,
};

int hakoi_comm_check_max_clients(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hako_comm_config_t *cc = base;
	return cc->role == HAKO_COMM_SERVER ? 0 : hakoi_walk_fail(w, "only a server has clients");
}

/* One frame of max_body_bytes must fit, or such a frame could never be received. */
int hakoi_comm_check_buffered(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hako_comm_config_t *cc = base;
	uint64_t least = (uint64_t)cc->max_body_bytes + HAKO_ENDPOINT_BUFFERED_SLACK;
	if (cc->max_buffered_bytes < least) {
		return hakoi_walk_fail(w, "is %u; must be at least max_body_bytes + 1 MiB (%llu)",
		                       cc->max_buffered_bytes, (unsigned long long)least);
	}
	return 0;
}

int hakoi_comm_check_addrs(hakoi_walk_t *w, const hako_comm_config_t *cc, const char *need,
                           const char *refuse, const char *why)
{
	if (need != NULL && !(need[0] == 'l' ? cc->local.present : cc->remote.present)) {
		hakoi_walk_push_key(w, need);
		return hakoi_walk_fail(w, "missing (%s needs %s)", why, need);
	}
	if (refuse != NULL && (refuse[0] == 'l' ? cc->local.present : cc->remote.present)) {
		hakoi_walk_push_key(w, refuse);
		return hakoi_walk_fail(w, "not used by %s", why);
	}
	return 0;
}

/* ---- comm ---- */

/* "protocol": the comm whose table reads the rest of the file (base: where it goes). */
static int read_protocol(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const char *s = json_string_value(v);
	const hakoi_comm_t *comm = hakoi_comm_find(s);
	if (s == NULL) {
		return hakoi_walk_fail_must(w, f->expect);
	}
	if (comm == NULL) {
		return hakoi_walk_fail(w, "is \"%.64s\"; must be %s", s, f->expect);
	}
	*(const hakoi_comm_t **)base = comm;
	return 0;
}

static void comm_free(hako_comm_config_t *cc)
{
	if (cc == NULL) {
		return;
	}
	const hakoi_comm_t *comm = hakoi_comm_of(cc->protocol);
	if (comm != NULL && comm->free_opts != NULL) {
		comm->free_opts(cc->opts);
	}
	free(cc);
}

static int comm_root(hakoi_walk_t *w, json_t *root, void *arg)
{
	hakoi_comm_load_t *ld = arg;
	char names[200] = "";
	for (size_t i = 0; hakoi_comms[i] != NULL; i++) {
		size_t used = strlen(names);
		snprintf(names + used, sizeof(names) - used, "%s\"%s\"",
		         i == 0 ? "" : (hakoi_comms[i + 1] == NULL ? " or " : ", "),
		         hakoi_comms[i]->name);
	}
	const hakoi_field_t protocol = {.key = "protocol",
	                                .kind = HAKOI_K_CUSTOM,
	                                .flags = HAKOI_F_REQUIRED,
	                                .parse = read_protocol,
	                                .expect = names};
	const hakoi_comm_t *comm = NULL;
	if (!json_is_object(root)) {
		return hakoi_walk_fail_must(w, "an object");
	}
	int r = hakoi_walk_member(w, root, &protocol, &comm);
	if (r != 0) {
		return r;
	}
	hako_comm_config_t *cc = calloc(1, HAKOI_COMM_OPTS_AT + comm->opts_size);
	if (cc == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	ld->cc = cc;
	cc->opts = (char *)cc + HAKOI_COMM_OPTS_AT;
	cc->protocol = comm->protocol;
	cc->direction = HAKO_COMM_INOUT;
	cc->raw_version = 2;
	cc->max_body_bytes = HAKO_ENDPOINT_DEFAULT_BODY;
	cc->send_queue_depth = HAKO_ENDPOINT_DEFAULT_SENDQ;
	cc->max_clients = HAKO_ENDPOINT_DEFAULT_CLIENTS;
	cc->max_buffered_bytes = 0; /* below, once max_body_bytes is known */
	cc->frame_timeout_ms = HAKO_ENDPOINT_DEFAULT_FRAME_MS;
	if (comm->defaults != NULL) {
		comm->defaults(cc);
	}
	if ((r = hakoi_walk_object(w, root, comm->fields, cc)) != 0) {
		return r;
	}
	if (cc->max_buffered_bytes == 0) {
		uint64_t least = (uint64_t)cc->max_body_bytes + HAKO_ENDPOINT_BUFFERED_SLACK;
		cc->max_buffered_bytes = least > HAKO_ENDPOINT_DEFAULT_BUFFERED
		                             ? (uint32_t)least
		                             : HAKO_ENDPOINT_DEFAULT_BUFFERED;
	}
	return 0;
}

/* Load a comm file (def: the endpoint's pdudef, or NULL). */
static int comm_load(const char *path, const hako_pdudef_t *def, hako_comm_config_t **out,
                     hako_error_t *err)
{
	hakoi_comm_load_t ld = {.def = def};
	*out = NULL;
	int r = check_path(path, sizeof(ld.cc->path), err);
	if (r == 0) {
		r = walk_file(path, err, comm_root, &ld);
	}
	hakoi_node_map_free(ld.map);
	if (r != 0) {
		comm_free(ld.cc);
		return r;
	}
	snprintf(ld.cc->path, sizeof(ld.cc->path), "%s", path);
	*out = ld.cc;
	return 0;
}

/* ---- cache ---- */

static const char *const cache_types[] = {"buffer", NULL};
static const char *const cache_modes[] = {"latest", "queue", NULL};
static const int cache_mode_values[] = {HAKO_CACHE_LATEST, HAKO_CACHE_QUEUE};

static int cache_check(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hako_cache_config_t *cc = base;
	if (cc->mode == HAKO_CACHE_LATEST && cc->depth != 1) {
		hakoi_walk_push_key(w, "depth");
		return hakoi_walk_fail(
		    w, "is %u; latest keeps one PDU per key (use mode \"queue\")", cc->depth);
	}
	return 0;
}

static const hakoi_field_t cache_store_fields[] = {
    HAKOI_ENUM("mode", HAKOI_F_REQUIRED, hako_cache_config_t, mode, cache_modes, cache_mode_values),
    HAKOI_INT("depth", HAKOI_F_UNSIGNED, hako_cache_config_t, depth, 1, HAKO_CACHE_MAX_DEPTH),
    HAKOI_CHECK(cache_check),
    HAKOI_END,
};

static const hakoi_field_t cache_fields[] = {
    HAKOI_IGNORE("$schema"),
    {.key = "type", .kind = HAKOI_K_ENUM, .names = cache_types}, /* checked, one value */
    HAKOI_STRING("name", 0, hako_cache_config_t, name),
    {.key = "store",
     .kind = HAKOI_K_OBJECT,
     .flags = HAKOI_F_REQUIRED,
     .fields = cache_store_fields},
    HAKOI_END,
};

static int cache_root(hakoi_walk_t *w, json_t *root, void *arg)
{
	hako_cache_config_t *cc = arg;
	cc->depth = 1;
	return hakoi_walk_object(w, root, cache_fields, cc);
}

/* ---- endpoint ---- */

/* pdudef first: the comm's shm robots are checked against it. */
static int ep_pdudef(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hako_endpoint_config_t *cfg = base;
	char resolved[HAKO_ENDPOINT_PATH_MAX];
	hako_error_t sub;
	int r = path_value(w, v, f->expect, resolved, sizeof(resolved));
	if (r != 0) {
		return r;
	}
	r = hako_pdudef_load(resolved, &cfg->pdudef, &sub);
	return r != 0 ? hakoi_walk_sub_error(w, r, &sub, resolved) : 0;
}

static int ep_cache(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hako_endpoint_config_t *cfg = base;
	hako_error_t sub;
	if (json_is_null(v)) {
		return hakoi_walk_fail(w, "must be a path (an endpoint always has a cache)");
	}
	int r = path_value(w, v, f->expect, cfg->cache.path, sizeof(cfg->cache.path));
	if (r != 0) {
		return r;
	}
	r = walk_file(cfg->cache.path, &sub, cache_root, &cfg->cache);
	return r != 0 ? hakoi_walk_sub_error(w, r, &sub, cfg->cache.path) : 0;
}

static int ep_comm(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	hako_endpoint_config_t *cfg = base;
	char resolved[HAKO_ENDPOINT_PATH_MAX];
	hako_error_t sub;
	int r = path_value(w, v, f->expect, resolved, sizeof(resolved));
	if (r != 0) {
		return r;
	}
	r = comm_load(resolved, cfg->pdudef, &cfg->comm, &sub);
	if (r != 0) {
		return hakoi_walk_sub_error(w, r, &sub, resolved);
	}
	if (cfg->comm->protocol == HAKO_COMM_SHM && cfg->pdudef == NULL) {
		return hakoi_walk_fail(w, "an shm comm needs pdu_def_path");
	}
	return 0;
}

static const hakoi_field_t endpoint_fields[] = {
    HAKOI_IGNORE("$schema"),
    HAKOI_STRING("name", HAKOI_F_REQUIRED, hako_endpoint_config_t, name),
    HAKOI_CUSTOM("pdu_def_path", HAKOI_F_NULL_OK, ep_pdudef, "a path or null"),
    HAKOI_CUSTOM("cache", HAKOI_F_REQUIRED, ep_cache, "a path or null"),
    HAKOI_CUSTOM("comm", HAKOI_F_NULL_OK, ep_comm, "a path or null"),
    HAKOI_END,
};

static int endpoint_root(hakoi_walk_t *w, json_t *root, void *arg)
{
	return hakoi_walk_object(w, root, endpoint_fields, arg);
}

void hako_endpoint_config_free(hako_endpoint_config_t *cfg)
{
	if (cfg == NULL) {
		return;
	}
	comm_free(cfg->comm);
	hako_pdudef_free(cfg->pdudef);
	free(cfg);
}

int hako_endpoint_config_load(const char *path, hako_endpoint_config_t **out, hako_error_t *err)
{
	hako_error_clear(err);
	if (out != NULL) {
		*out = NULL;
	}
	if (path == NULL || out == NULL) {
		return hako_error_set(err, HAKO_EINVAL, path, 0, 0, "no path or no result pointer");
	}
	hako_endpoint_config_t *cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	int r = check_path(path, sizeof(cfg->path), err);
	if (r == 0) {
		snprintf(cfg->path, sizeof(cfg->path), "%s", path);
		r = walk_file(path, err, endpoint_root, cfg);
	}
	if (r != 0) {
		hako_endpoint_config_free(cfg);
		return r;
	}
	HAKO_DEBUG("endpoint config %s: %s, cache %s depth %u, comm %s", path, cfg->name,
	           cfg->cache.mode == HAKO_CACHE_QUEUE ? "queue" : "latest", cfg->cache.depth,
	           cfg->comm != NULL ? cfg->comm->path : "none");
	*out = cfg;
	return 0;
}

/* ---- container ---- */

typedef struct ct_load {
	hako_endpoint_container_t *ct;
	const char *node_id;
	long found; /* node_id's index in the array, -1 until seen */
} ct_load_t;

static const char *const entry_dirs[] = {"in", "out", "inout", NULL};

/* direction is kept as its text ("" when absent). */
static int entry_direction(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hako_endpoint_entry_t *en = base;
	const hakoi_field_t as_enum = {
	    .kind = HAKOI_K_ENUM, .size = sizeof(int), .names = entry_dirs};
	int d = 0;
	int r = hakoi_walk_value(w, v, &as_enum, &d);
	if (r == 0) {
		snprintf(en->direction, sizeof(en->direction), "%s", entry_dirs[d]);
	}
	return r;
}

static const hakoi_field_t entry_fields[] = {
    HAKOI_STRING("id", HAKOI_F_REQUIRED, hako_endpoint_entry_t, id),
    HAKOI_PATH("config_path", HAKOI_F_REQUIRED, hako_endpoint_entry_t, config_path),
    HAKOI_CUSTOM("direction", 0, entry_direction, "\"in\", \"out\" or \"inout\""),
    HAKOI_STRING("mode", 0, hako_endpoint_entry_t, mode),
    HAKOI_END,
};

static const hakoi_field_t entry_elem = {.kind = HAKOI_K_OBJECT, .fields = entry_fields};

/* An entry of node_id: its id is unique there, its endpoint file is loaded. */
static int entry_load(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	ct_load_t *l = w->user;
	hako_endpoint_entry_t *en = base;
	size_t i = hakoi_walk_index(w);
	for (size_t j = 0; j < i; j++) {
		if (strcmp(l->ct->entries[j].id, en->id) == 0) {
			hakoi_walk_push_key(w, "id");
			return hakoi_walk_fail_dup(w, j, "id \"%s\"", en->id);
		}
	}
	hako_error_t sub;
	hakoi_walk_push_key(w, "config_path");
	int r = hako_endpoint_config_load(en->config_path, &en->config, &sub);
	if (r != 0) {
		return hakoi_walk_sub_error(w, r, &sub, en->config_path);
	}
	hakoi_walk_pop(w);
	return 0;
}

/* An entry of another node: checked, not loaded. */
static int entry_other(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	hako_endpoint_entry_t scratch;
	memset(&scratch, 0, sizeof(scratch));
	return hakoi_walk_value(w, v, &entry_elem, &scratch);
}

static const hakoi_field_t node_mine_fields[] = {
    {.key = "nodeId", .kind = HAKOI_K_STRING, .flags = HAKOI_F_REQUIRED}, /* read by node() */
    {.key = "endpoints",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_ELEMS_NEW(hako_endpoint_container_t, entries, count),
     .elem = &entry_elem,
     .check = entry_load},
    HAKOI_END,
};

static const hakoi_field_t node_other_fields[] = {
    {.key = "nodeId", .kind = HAKOI_K_STRING, .flags = HAKOI_F_REQUIRED},
    {.key = "endpoints", .kind = HAKOI_K_ARRAY, .flags = HAKOI_F_REQUIRED, .parse = entry_other},
    HAKOI_END,
};

/* Every node is checked; only node_id's endpoints are loaded. */
static int node(hakoi_walk_t *w, json_t *n, void *base, const hakoi_field_t *f)
{
	(void)f;
	ct_load_t *l = w->user;
	json_t *id = json_is_object(n) ? json_object_get(n, "nodeId") : NULL;
	int mine = json_is_string(id) && strcmp(json_string_value(id), l->node_id) == 0;
	if (mine && l->found >= 0) {
		hakoi_walk_push_key(w, "nodeId");
		return hakoi_walk_fail_dup(w, (size_t)l->found, "node \"%s\"", l->node_id);
	}
	const hakoi_field_t as_object = {.kind = HAKOI_K_OBJECT,
	                                 .fields = mine ? node_mine_fields : node_other_fields};
	int r = hakoi_walk_value(w, n, &as_object, base);
	if (r == 0 && mine) {
		l->found = (long)hakoi_walk_index(w);
	}
	return r;
}

/* The container: an array of {nodeId, endpoints} at the walk's current path. */
static int container_walk(hakoi_walk_t *w, json_t *value, void *arg)
{
	ct_load_t *l = arg;
	const hakoi_field_t nodes = {
	    .kind = HAKOI_K_ARRAY, .parse = node, .expect = "an array of {nodeId, endpoints}"};
	int r = hakoi_walk_value(w, value, &nodes, l->ct);
	if (r == 0 && l->found < 0) {
		r = hakoi_walk_fail(w, "node \"%s\" is not in the container", l->node_id);
	}
	return r;
}

void hako_endpoint_container_free(hako_endpoint_container_t *ct)
{
	if (ct == NULL) {
		return;
	}
	for (size_t i = 0; i < ct->count; i++) {
		hako_endpoint_config_free(ct->entries[i].config);
	}
	free(ct->entries);
	free(ct);
}

/* A container for node_id, its path set: 0 or the error (in err). */
static int container_new(const char *path, const char *node_id, hako_endpoint_container_t **out,
                         hako_error_t *err)
{
	*out = NULL;
	int r = check_path(path, sizeof((*out)->path), err);
	if (r == 0) {
		r = check_path(node_id, sizeof((*out)->node_id), err);
	}
	if (r != 0) {
		return r;
	}
	hako_endpoint_container_t *ct = calloc(1, sizeof(*ct));
	if (ct == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	snprintf(ct->path, sizeof(ct->path), "%s", path);
	snprintf(ct->node_id, sizeof(ct->node_id), "%s", node_id);
	*out = ct;
	return 0;
}

int hako_endpoint_container_load(const char *path, const char *node_id,
                                 hako_endpoint_container_t **out, hako_error_t *err)
{
	hako_error_clear(err);
	if (out != NULL) {
		*out = NULL;
	}
	if (path == NULL || node_id == NULL || out == NULL) {
		return hako_error_set(err, HAKO_EINVAL, path, 0, 0,
		                      "no path, no node id or no result pointer");
	}
	hako_endpoint_container_t *ct = NULL;
	int r = container_new(path, node_id, &ct, err);
	if (r != 0) {
		return r;
	}
	ct_load_t l = {.ct = ct, .node_id = node_id, .found = -1};
	r = walk_file(path, err, container_walk, &l);
	if (r != 0) {
		hako_endpoint_container_free(ct);
		return r;
	}
	*out = ct;
	return 0;
}

int hako_endpoint_container_load_at(const char *file, const char *key, const char *node_id,
                                    hako_endpoint_container_t **out, hako_error_t *err)
{
	hako_error_clear(err);
	if (out != NULL) {
		*out = NULL;
	}
	if (file == NULL || key == NULL || node_id == NULL || out == NULL) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0,
		                      "no file, no key, no node id or no result pointer");
	}
	json_t *root = NULL;
	char *text = NULL;
	size_t len = 0;
	int r = hakoi_cfg_load(file, err, &root, &text, &len);
	if (r != 0) {
		return r;
	}
	json_t *value = json_is_object(root) ? json_object_get(root, key) : NULL;
	hako_endpoint_container_t *ct = NULL;
	if (value == NULL) {
		r = hako_error_set(err, HAKO_ECONFIG, file, 0, 0, "%s: missing", key);
	} else if ((r = container_new(file, node_id, &ct, err)) == 0) {
		ct_load_t l = {.ct = ct, .node_id = node_id, .found = -1};
		hakoi_walk_t w;
		hakoi_walk_init(&w, err, file, text, len, &l);
		hakoi_walk_push_key(&w, key);
		r = container_walk(&w, value, &l);
	}
	json_decref(root);
	free(text);
	if (r != 0) {
		hako_endpoint_container_free(ct);
		return r;
	}
	*out = ct;
	return 0;
}
