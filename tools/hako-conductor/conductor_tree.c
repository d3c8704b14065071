/* hako-conductor tree: every file of a tree written by Hakoniwa's gen (hakoniwa-conductor), each
 * loaded by the hako loader that takes it, or parsed and its shape checked when hako has no
 * feature for it (docs/hakoniwa-compat.md, "A generated tree, file by file"). No format is
 * parsed here a second time: the loaders decide; this file only knows which loader takes which
 * path, and peeks at the names (nodes, pdutypes files) to call them with. */
#define _GNU_SOURCE
#include "conductor_tree.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hako/bridge_config.h"
#include "hako/conductor.h"
#include "hako/endpoint_config.h"
#include "hako/pdudef.h"
#include "hakoi/cfg.h"

typedef enum { T_NONE, T_LOADED, T_READ, T_REFUSED, T_UNKNOWN } tree_status_t;

typedef struct tree_file {
	char rel[512];
	char real[PATH_MAX];
	tree_status_t status;
	char text[1400];
} tree_file_t;

typedef struct tree {
	tree_file_t *f;
	size_t n, cap;
	char tmp[64]; /* a folder for the one-line endpoint files of lone comm / cache files */
} tree_t;

#define NAMES_MAX 16

/* ---- the files ---- */

static int add_file(tree_t *t, const char *rel)
{
	if (t->n == t->cap) {
		size_t cap = t->cap == 0 ? 64 : t->cap * 2;
		tree_file_t *f = realloc(t->f, cap * sizeof(*f));
		if (f == NULL) {
			return -1;
		}
		t->f = f;
		t->cap = cap;
	}
	tree_file_t *e = &t->f[t->n];
	memset(e, 0, sizeof(*e));
	snprintf(e->rel, sizeof(e->rel), "%s", rel);
	if (realpath(rel, e->real) == NULL) {
		snprintf(e->real, sizeof(e->real), "%s", rel);
	}
	t->n++;
	return 0;
}

/* Every regular file under dir ("" for the tree's root, the current folder). */
static int collect(tree_t *t, const char *dir)
{
	DIR *d = opendir(dir[0] != '\0' ? dir : ".");
	if (d == NULL) {
		return -1;
	}
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
			continue;
		}
		char rel[512];
		if (snprintf(rel, sizeof(rel), "%s%s%s", dir, dir[0] != '\0' ? "/" : "",
		             de->d_name) >= (int)sizeof(rel)) {
			continue;
		}
		struct stat st;
		if (stat(rel, &st) != 0) {
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			r = collect(t, rel);
		} else if (S_ISREG(st.st_mode)) {
			r = add_file(t, rel);
		}
	}
	closedir(d);
	return r;
}

static int by_rel(const void *a, const void *b)
{
	return strcmp(((const tree_file_t *)a)->rel, ((const tree_file_t *)b)->rel);
}

static tree_file_t *find(tree_t *t, const char *path)
{
	char real[PATH_MAX];
	if (path == NULL || path[0] == '\0' || realpath(path, real) == NULL) {
		return NULL;
	}
	for (size_t i = 0; i < t->n; i++) {
		if (strcmp(t->f[i].real, real) == 0) {
			return &t->f[i];
		}
	}
	return NULL;
}

static tree_file_t *find_rel(tree_t *t, const char *rel)
{
	for (size_t i = 0; i < t->n; i++) {
		if (strcmp(t->f[i].rel, rel) == 0) {
			return &t->f[i];
		}
	}
	return NULL;
}

static void set(tree_file_t *e, tree_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set(tree_file_t *e, tree_status_t st, const char *fmt, ...)
{
	/* The first word on a file stays, but a refusal is never hidden by an earlier load. */
	if (e == NULL || (e->status != T_NONE && (st != T_REFUSED || e->status == T_REFUSED))) {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
	e->status = st;
}

/* A loader's error: the file it points into is refused with it (its path as the tree names it);
 * the file the load began with, when another, is refused for it. */
static void refuse(tree_t *t, const char *top, hako_error_t *err)
{
	tree_file_t *at = find(t, err->file);
	if (at != NULL) {
		snprintf(err->file, sizeof(err->file), "%s", at->rel);
	}
	char line[1300];
	hako_error_format(err, line, sizeof(line));
	set(at, T_REFUSED, "refused: %s", line);
	tree_file_t *first = find(t, top);
	if (first != NULL && first != at) {
		set(first, T_REFUSED, "refused: a file it names is: %s", line);
	}
}

/* ---- peeks: the names the loaders are called with ---- */

static json_t *peek(const char *path)
{
	hako_error_t err;
	json_t *root = NULL;
	char *text = NULL;
	size_t len = 0;
	if (hakoi_cfg_load(path, &err, &root, &text, &len) != 0) {
		return NULL;
	}
	free(text);
	return root;
}

/* The string member key of every element of the array root[arr] (root itself when arr is NULL). */
static size_t peek_names(json_t *root, const char *arr, const char *key, char names[][128],
                         size_t max)
{
	json_t *a = arr != NULL ? json_object_get(root, arr) : root;
	size_t n = 0, i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		const char *s = json_string_value(json_object_get(v, key));
		if (s != NULL && n < max) {
			snprintf(names[n++], 128, "%s", s);
		}
	}
	return n;
}

static void join(char names[][128], size_t n, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0, used = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i > 0 ? ", " : "", names[i]);
		used += w > 0 ? (size_t)w : 0;
	}
}

/* ---- the loaders ---- */

static void mark_endpoint(tree_t *t, const hako_endpoint_config_t *c, const char *who)
{
	set(find(t, c->path), T_LOADED, "loaded (endpoint %s, %s)", c->name, who);
	set(find(t, c->cache.path), T_LOADED, "loaded (cache of endpoint %s)", c->name);
	if (c->comm != NULL) {
		set(find(t, c->comm->path), T_LOADED, "loaded (comm %s of endpoint %s)",
		    hako_comm_protocol_name(c->comm), c->name);
	}
}

static void mark_container(tree_t *t, const hako_endpoint_container_t *c, const char *who)
{
	for (size_t i = 0; i < c->count; i++) {
		if (c->entries[i].config != NULL) {
			mark_endpoint(t, c->entries[i].config, who);
		}
	}
}

static void load_node_map(tree_t *t, tree_file_t *e)
{
	hako_error_t err;
	size_t n = 0;
	if (hako_endpoint_node_map_check(e->rel, &n, &err) != 0) {
		refuse(t, e->rel, &err);
		return;
	}
	/* The loaders read it where an endpoint's comm names a node (docs/endpoint.md). */
	setenv("HAKO_NODE_IP_MAP", e->rel, 1);
	set(e, T_LOADED, "loaded (node map, %zu node%s: HAKO_NODE_IP_MAP of the endpoint files)", n,
	    n == 1 ? "" : "s");
}

static void load_conductor(tree_t *t, tree_file_t *e)
{
	hako_error_t err;
	hako_conductor_config_t *c = NULL;
	if (hako_conductor_config_load(e->rel, &c, &err) != 0) {
		refuse(t, e->rel, &err);
		return;
	}
	set(e, T_LOADED, "loaded (conductor file, %s %s)",
	    c->role == HAKO_CONDUCTOR_SERVER ? "server" : "client", c->node_id);
	hako_conductor_config_free(c);
}

static void load_pdudef(tree_t *t, tree_file_t *e)
{
	hako_error_t err;
	hako_pdudef_t *d = NULL;
	if (hako_pdudef_load(e->rel, &d, &err) != 0) {
		refuse(t, e->rel, &err);
		return;
	}
	set(e, T_LOADED, "loaded (pdudef, %zu robot%s)", d->robot_count,
	    d->robot_count == 1 ? "" : "s");
	hako_pdudef_free(d);
	/* Its pdutypes files were read with it: the names it gives them. */
	json_t *root = peek(e->rel);
	char names[NAMES_MAX][128];
	size_t n = peek_names(root, "paths", "path", names, NAMES_MAX);
	json_decref(root);
	char dir[512];
	snprintf(dir, sizeof(dir), "%s", e->rel);
	char *slash = strrchr(dir, '/');
	if (slash != NULL) {
		slash[1] = '\0';
	} else {
		dir[0] = '\0';
	}
	for (size_t i = 0; i < n; i++) {
		char p[700];
		snprintf(p, sizeof(p), "%.511s%.127s", names[i][0] == '/' ? "" : dir, names[i]);
		set(find(t, p), T_LOADED, "loaded (PDU types, by %s)", e->rel);
	}
}

static void load_container(tree_t *t, tree_file_t *e)
{
	json_t *root = peek(e->rel);
	char nodes[NAMES_MAX][128];
	size_t n = peek_names(root, NULL, "nodeId", nodes, NAMES_MAX);
	json_decref(root);
	for (size_t i = 0; i < n || i == 0; i++) {
		hako_error_t err;
		hako_endpoint_container_t *c = NULL;
		/* No node at all: the loader says what is wrong with the file. */
		if (hako_endpoint_container_load(e->rel, n > 0 ? nodes[i] : "-", &c, &err) != 0) {
			refuse(t, e->rel, &err);
			return;
		}
		char who[700];
		snprintf(who, sizeof(who), "node %.127s, by %.511s", nodes[i], e->rel);
		mark_container(t, c, who);
		hako_endpoint_container_free(c);
	}
	char list[600];
	join(nodes, n, list, sizeof(list));
	set(e, T_LOADED, "loaded (endpoint container, nodes %s)", list);
}

static void load_bridge(tree_t *t, tree_file_t *e)
{
	json_t *root = peek(e->rel);
	char nodes[NAMES_MAX][128];
	size_t n = peek_names(root, "nodes", "id", nodes, NAMES_MAX);
	/* Hakoniwa's bridge.json names no endpoints: its node's endpoints are the tree's
	 * container's, as for Hakoniwa's bridge (hako-bridge --container). */
	const char *container = NULL;
	if (root != NULL && json_object_get(root, "endpoints_config_path") == NULL &&
	    json_object_get(root, "endpoints") == NULL &&
	    find_rel(t, "endpoint/endpoint_container.json") != NULL) {
		container = "endpoint/endpoint_container.json";
	}
	json_decref(root);
	for (size_t i = 0; i < n || i == 0; i++) {
		hako_error_t err;
		hako_bridge_config_t *c = NULL;
		if (hako_bridge_config_load(e->rel, n > 0 ? nodes[i] : "-", container, &c, &err) !=
		    0) {
			refuse(t, e->rel, &err);
			return;
		}
		char who[700];
		snprintf(who, sizeof(who), "node %.127s, by %.511s", nodes[i], e->rel);
		mark_container(t, c->endpoints, who);
		hako_bridge_config_free(c);
	}
	char list[600];
	join(nodes, n, list, sizeof(list));
	set(e, T_LOADED, "loaded (bridge, per node: %s%s%s)", list,
	    container != NULL ? "; endpoints of " : "", container != NULL ? container : "");
}

static void load_endpoint(tree_t *t, tree_file_t *e, const char *who)
{
	hako_error_t err;
	hako_endpoint_config_t *c = NULL;
	if (hako_endpoint_config_load(e->rel, &c, &err) != 0) {
		refuse(t, e->rel, &err);
		return;
	}
	mark_endpoint(t, c, who);
	hako_endpoint_config_free(c);
}

/* A comm or cache file no endpoint of the tree names (gen writes a node's udp and websocket comm
 * files beside the tcp one it uses): loaded through a one-line endpoint file that names it. */
static void load_lone(tree_t *t, tree_file_t *e, const char *member, const char *why)
{
	if (t->tmp[0] == '\0') {
		snprintf(t->tmp, sizeof(t->tmp), "/tmp/hako-tree-XXXXXX");
		if (mkdtemp(t->tmp) == NULL) {
			t->tmp[0] = '\0';
			set(e, T_REFUSED, "refused: no temporary folder to load it in");
			return;
		}
	}
	char ep[128];
	snprintf(ep, sizeof(ep), "%s/endpoint.json", t->tmp);
	tree_file_t *pd = find_rel(t, "pdudef.json");
	json_t *doc = json_pack("{s:s, s:n, s:n, s:n}", "name", "tree-check", "cache", "comm",
	                        "pdu_def_path");
	json_object_set_new(doc, member, json_string(e->real));
	if (pd != NULL) {
		json_object_set_new(doc, "pdu_def_path", json_string(pd->real));
	}
	/* An endpoint always has a cache: a comm file gets the first cache file of the tree. */
	for (size_t i = 0; i < t->n && strcmp(member, "comm") == 0; i++) {
		if (strncmp(t->f[i].text, "loaded (cache", 13) == 0) {
			json_object_set_new(doc, "cache", json_string(t->f[i].real));
			break;
		}
	}
	int w = json_dump_file(doc, ep, 0);
	json_decref(doc);
	if (w != 0) {
		set(e, T_REFUSED, "refused: cannot write %s to load it", ep);
		return;
	}
	hako_error_t err;
	hako_endpoint_config_t *c = NULL;
	if (hako_endpoint_config_load(ep, &c, &err) != 0) {
		refuse(t, e->rel, &err);
	} else if (c->comm != NULL && strcmp(member, "comm") == 0) {
		set(e, T_LOADED, "loaded (comm %s, on its own: %s)",
		    hako_comm_protocol_name(c->comm), why);
	} else {
		set(e, T_LOADED, "loaded (cache, on its own: %s)", why);
	}
	hako_endpoint_config_free(c);
	unlink(ep);
}

/* ---- files hako reads and has no feature for: their shape, and why ---- */

typedef struct shape {
	char s[256];
	long long i;
	int b;
} shape_t;

static const hakoi_field_t any_fields[] = {HAKOI_OTHERS, HAKOI_END};
static const hakoi_field_t any_object = {.kind = HAKOI_K_OBJECT, .fields = any_fields};

#define ARRAY_OF_OBJECTS(key_, flags_)                                                             \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_ARRAY, .flags = (flags_), .elem = &any_object,      \
		.expect = "an array of objects"                                                    \
	}

static const hakoi_field_t eu_fields[] = {
    ARRAY_OF_OBJECTS("execution_nodes", HAKOI_F_REQUIRED),
    ARRAY_OF_OBJECTS("connection_pairs", HAKOI_F_REQUIRED),
    HAKOI_OTHERS,
    HAKOI_END,
};

static const hakoi_field_t policy_fields[] = {
    HAKOI_STRING("type", HAKOI_F_REQUIRED, shape_t, s),
    HAKOI_OTHERS,
    HAKOI_END,
};
static const hakoi_field_t policy_elem = {.kind = HAKOI_K_OBJECT, .fields = policy_fields};
static const hakoi_field_t policy_map[] = {
    {.key = "(policies)", .kind = HAKOI_K_MAP, .elem = &policy_elem},
    HAKOI_END,
};

static const hakoi_field_t remote_api_fields[] = {
    ARRAY_OF_OBJECTS("participants", HAKOI_F_REQUIRED),
    ARRAY_OF_OBJECTS("servers", HAKOI_F_REQUIRED),
    HAKOI_OTHERS,
    HAKOI_END,
};

static const hakoi_field_t rpc_fields[] = {
    ARRAY_OF_OBJECTS("services", HAKOI_F_REQUIRED),
    HAKOI_OTHERS,
    HAKOI_END,
};

static const hakoi_field_t runtime_fields[] = {
    HAKOI_STRING("control_robot", HAKOI_F_REQUIRED, shape_t, s),
    HAKOI_INT("control_request_channel", HAKOI_F_REQUIRED, shape_t, i, 0, INT32_MAX),
    HAKOI_INT("control_response_channel", HAKOI_F_REQUIRED, shape_t, i, 0, INT32_MAX),
    HAKOI_BOOL("enable_ondemand", 0, shape_t, b),
    HAKOI_STRING("ondemand_mux_config_path", 0, shape_t, s),
    HAKOI_OTHERS,
    HAKOI_END,
};

typedef struct unused_kind {
	const char *name; /* the file's name in the tree */
	const hakoi_field_t *fields;
	const char *why;
} unused_kind_t;

static const unused_kind_t unused_kinds[] = {
    {"execution-unit.json", eu_fields,
     "gen's resolved copy of its eu-input (execution_nodes as {nodeId}); hako-conductor gen "
     "reads the eu-input itself, and what this file decides is in the conductor files and "
     "bridge.json, loaded here"},
    {"transfer-policy-template.json", policy_map,
     "the transfer policies gen copies into bridge.json's transferPolicies, which the bridge "
     "loader reads; hako-conductor gen writes its policies itself"},
    {"remote-api.json", remote_api_fields,
     "the participants and servers of Hakoniwa's remote API (assets on other nodes joining "
     "through RPC); hako has no remote API / RPC gateway"},
    {"rpc.json", rpc_fields,
     "the RPC services of that remote API (service.json's form with endpoints); hako has no "
     "remote API / RPC gateway: its services (hako_asset_service.h) run within a domain"},
    {"runtime.json", runtime_fields,
     "the bridge monitor's runtime: Hakoniwa's bridge answers a control robot's requests and "
     "opens the mux endpoint it names on demand for a monitor; hako's bridge has no control "
     "channel (its counters: hako-bridge stats); the monitor's endpoint files load"},
};

static void read_unused(tree_t *t, tree_file_t *e, const unused_kind_t *k)
{
	hako_error_t err;
	json_t *root = NULL;
	char *text = NULL;
	size_t len = 0;
	if (hakoi_cfg_load(e->rel, &err, &root, &text, &len) != 0) {
		refuse(t, e->rel, &err);
		return;
	}
	hakoi_walk_t w;
	hakoi_walk_init(&w, &err, e->rel, text, len, NULL);
	shape_t sh;
	memset(&sh, 0, sizeof(sh));
	int r;
	if (k->fields == policy_map) {
		/* A map at the top level: walked as the value of one member. */
		r = json_is_object(root) ? hakoi_walk_value(&w, root, &policy_map[0], &sh)
		                         : hakoi_walk_fail(&w, "must be an object");
	} else {
		r = hakoi_walk_object(&w, root, k->fields, &sh);
	}
	json_decref(root);
	free(text);
	if (r != 0) {
		refuse(t, e->rel, &err);
		return;
	}
	set(e, T_READ, "read, not used: %s", k->why);
}

/* ---- which loader takes which path ---- */

static const char *base_name(const char *rel)
{
	const char *s = strrchr(rel, '/');
	return s != NULL ? s + 1 : rel;
}

static int depth(const char *rel)
{
	int d = 0;
	for (; *rel != '\0'; rel++) {
		d += *rel == '/';
	}
	return d;
}

static int starts(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static int ends(const char *s, const char *x)
{
	size_t n = strlen(s), m = strlen(x);
	return n >= m && strcmp(s + n - m, x) == 0;
}

/* The second word of a path "<top>/<node>/..." into node. */
static void node_of(const char *rel, char *node, size_t len)
{
	const char *s = strchr(rel, '/');
	snprintf(node, len, "%s", s != NULL ? s + 1 : "");
	char *e = strchr(node, '/');
	if (e != NULL) {
		*e = '\0';
	}
}

static void classify(tree_t *t)
{
	tree_file_t *map = find_rel(t, "node-ip-map.json");
	if (map != NULL) {
		load_node_map(t, map);
	}
	for (size_t i = 0; i < t->n; i++) {
		tree_file_t *e = &t->f[i];
		const char *b = base_name(e->rel);
		if (starts(e->rel, "conductor/") && depth(e->rel) == 1 && ends(b, ".json")) {
			load_conductor(t, e);
		} else if (depth(e->rel) == 0 && starts(b, "pdudef") && ends(b, ".json")) {
			load_pdudef(t, e);
		}
	}
	tree_file_t *c = find_rel(t, "endpoint/endpoint_container.json");
	if (c != NULL) {
		load_container(t, c);
	}
	tree_file_t *br = find_rel(t, "bridge.json");
	if (br != NULL) {
		load_bridge(t, br);
	}
	for (size_t i = 0; i < t->n; i++) {
		tree_file_t *e = &t->f[i];
		const char *b = base_name(e->rel);
		char node[128], who[200];
		node_of(e->rel, node, sizeof(node));
		if (e->status != T_NONE) {
			continue;
		}
		if (starts(e->rel, "bridge-monitor/") && depth(e->rel) == 2 &&
		    ends(b, "_endpoint.json")) {
			snprintf(who, sizeof(who), "bridge monitor of node %s", node);
			load_endpoint(t, e, who);
		} else if (starts(e->rel, "endpoint/") && depth(e->rel) == 2 &&
		           starts(b, "endpoint") && ends(b, ".json")) {
			snprintf(who, sizeof(who), "node %s; no container entry names it", node);
			load_endpoint(t, e, who);
		}
	}
	for (size_t i = 0; i < t->n; i++) {
		tree_file_t *e = &t->f[i];
		const char *b = base_name(e->rel);
		for (size_t k = 0; k < sizeof(unused_kinds) / sizeof(unused_kinds[0]); k++) {
			int at = strcmp(b, "runtime.json") == 0
			             ? starts(e->rel, "bridge-monitor/") && depth(e->rel) == 2
			             : depth(e->rel) == 0;
			if (e->status == T_NONE && at && strcmp(b, unused_kinds[k].name) == 0) {
				read_unused(t, e, &unused_kinds[k]);
			}
		}
	}
	for (size_t i = 0; i < t->n; i++) {
		tree_file_t *e = &t->f[i];
		const char *b = base_name(e->rel);
		if (e->status != T_NONE) {
			continue;
		}
		int ep_dir = starts(e->rel, "endpoint/") && depth(e->rel) == 3;
		int mon_dir = starts(e->rel, "bridge-monitor/") && depth(e->rel) == 2;
		if (((ep_dir && strstr(e->rel, "/comm/") != NULL) ||
		     (mon_dir && strstr(b, "comm") != NULL)) &&
		    ends(b, ".json")) {
			load_lone(t, e, "comm", "no endpoint of the tree names it");
		} else if (((ep_dir && strstr(e->rel, "/cache/") != NULL) ||
		            (mon_dir && strstr(b, "cache") != NULL)) &&
		           ends(b, ".json")) {
			load_lone(t, e, "cache", "no endpoint of the tree names it");
		} else {
			set(e, T_UNKNOWN, "unknown: not a file Hakoniwa's gen writes");
		}
	}
}

int hakoi_tree_command(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {HAKO_CLI_HELP_VERSION, {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, ":hV", longopts, NULL)) != -1) {
		return hako_cli_common_option(cmd, c, argv);
	}
	if (optind + 1 != argc) {
		return hako_cli_usage_error(cmd, "one generated tree (a folder), please");
	}
	if (chdir(argv[optind]) != 0) {
		fprintf(stderr, "hako-conductor: %s: cannot enter: %s\n", argv[optind],
		        strerror(errno));
		return 1;
	}
	tree_t t;
	memset(&t, 0, sizeof(t));
	if (collect(&t, "") != 0) {
		fprintf(stderr, "hako-conductor: %s: cannot read the tree: %s\n", argv[optind],
		        strerror(errno));
		free(t.f);
		return 1;
	}
	qsort(t.f, t.n, sizeof(t.f[0]), by_rel);
	classify(&t);
	size_t count[T_UNKNOWN + 1] = {0};
	for (size_t i = 0; i < t.n; i++) {
		printf("%s: %s\n", t.f[i].rel, t.f[i].text);
		count[t.f[i].status]++;
	}
	printf("%zu files: %zu loaded, %zu read and not used, %zu refused, %zu unknown\n", t.n,
	       count[T_LOADED], count[T_READ], count[T_REFUSED], count[T_UNKNOWN]);
	if (t.tmp[0] != '\0') {
		rmdir(t.tmp);
	}
	free(t.f);
	return count[T_REFUSED] == 0 && count[T_UNKNOWN] == 0 ? 0 : 1;
}
