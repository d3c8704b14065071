/* The lab file: tables for the config walker (hakoi/cfg.h) and the rules between addresses.
 *
 * Two forms. hako's own:
 *   {"subnet": "10.201.0.0/24", "switch": "10.201.0.1",
 *    "nodes": [{"name": "srv-01", "address": "10.201.0.11"}, ...]}
 * and Hakoniwa's node-ip-map.json, so that a federation's own file builds its lab:
 *   {"nodes": {"srv-01": "10.201.0.11", ...}}
 * Without "subnet" the nodes' subnet is the first address's (its /N, else /24); without "switch"
 * the switch (where the bridge and a relay live) is the subnet's first address. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hakoi/cfg.h"
#include "netlab.h"

struct ctx {
	nl_lab_t *lab;
	int renumber;     /* addresses come from --subnet, not from the file */
	int subnet_known; /* from "subnet" or the first node */
	int switch_given;
	int is_map; /* "nodes" is a node-ip-map object */
};

const char *nl_ip_text(uint32_t ip, char buf[16])
{
	snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
	return buf;
}

int nl_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n >= NL_NAME_MAX || name[0] == '.' || name[0] == '-') {
		return 0;
	}
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
	       n;
}

static uint32_t prefix_mask(int prefix)
{
	return prefix == 0 ? 0 : 0xffffffffu << (32 - prefix);
}

/* "a.b.c.d" or "a.b.c.d/N" (N in [8, 30]; -1 when absent). 0 or -1. */
static int parse_addr(const char *s, uint32_t *ip, int *prefix)
{
	char host[32];
	const char *slash = strchr(s, '/');
	size_t n = slash != NULL ? (size_t)(slash - s) : strlen(s);
	if (n == 0 || n >= sizeof(host)) {
		return -1;
	}
	memcpy(host, s, n);
	host[n] = '\0';
	struct in_addr a;
	if (inet_pton(AF_INET, host, &a) != 1) {
		return -1;
	}
	*ip = ntohl(a.s_addr);
	*prefix = -1;
	if (slash != NULL) {
		char *end;
		long p = strtol(slash + 1, &end, 10);
		if (slash[1] == '\0' || *end != '\0' || p < 8 || p > 30) {
			return -1;
		}
		*prefix = (int)p;
	}
	return 0;
}

static void set_subnet(nl_lab_t *lab, uint32_t net, int prefix)
{
	char b[16];
	lab->prefix = prefix;
	lab->mask = prefix_mask(prefix);
	lab->net = net & lab->mask;
	snprintf(lab->subnet_text, sizeof(lab->subnet_text), "%s/%d", nl_ip_text(lab->net, b),
	         prefix);
}

static int read_subnet(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct ctx *c = w->user;
	const char *s = json_string_value(v);
	uint32_t ip;
	int prefix;
	if (s == NULL || parse_addr(s, &ip, &prefix) != 0 || prefix < 0) {
		return hakoi_walk_fail_must(w, "a CIDR \"a.b.c.d/N\" with N in [8, 30]");
	}
	if ((ip & ~prefix_mask(prefix)) != 0) {
		char b[16];
		return hakoi_walk_fail(w, "\"%s\" has host bits set; the subnet is %s/%d", s,
		                       nl_ip_text(ip & prefix_mask(prefix), b), prefix);
	}
	set_subnet(c->lab, ip, prefix);
	c->subnet_known = 1;
	return 0;
}

/* What every address of the lab must be: in the subnet, neither its first (the network) nor its
 * last (broadcast) address, not loopback. 0 or the error at the current path. */
static int address_ok(hakoi_walk_t *w, const nl_lab_t *lab, const char *s, uint32_t ip)
{
	if ((ip >> 24) == 127) {
		return hakoi_walk_fail(
		    w,
		    "\"%s\" is a loopback address; a lab node needs an address of "
		    "its own (or number the nodes with --subnet CIDR)",
		    s);
	}
	if ((ip & lab->mask) != lab->net) {
		return hakoi_walk_fail(w, "\"%s\" is not in the lab's subnet %s", s,
		                       lab->subnet_text);
	}
	if (ip == lab->net || ip == (lab->net | ~lab->mask)) {
		return hakoi_walk_fail(w, "\"%s\" is the %s address of %s", s,
		                       ip == lab->net ? "network" : "broadcast", lab->subnet_text);
	}
	return 0;
}

static int read_switch(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct ctx *c = w->user;
	const char *s = json_string_value(v);
	uint32_t ip;
	int prefix;
	if (s == NULL || parse_addr(s, &ip, &prefix) != 0 || prefix >= 0) {
		return hakoi_walk_fail_must(w, "an address \"a.b.c.d\"");
	}
	if (!c->subnet_known) {
		return hakoi_walk_fail(w, "needs \"subnet\"");
	}
	snprintf(c->lab->switch_text, sizeof(c->lab->switch_text), "%s", s);
	c->lab->sw_ip = ip;
	c->switch_given = 1;
	return c->renumber ? 0 : address_ok(w, c->lab, s, ip);
}

/* Each node, once read: its name, then (unless renumbered) its address. */
static int check_node(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	struct ctx *c = w->user;
	nl_node_t *node = base;
	nl_lab_t *lab = c->lab;
	size_t i = (size_t)(node - lab->nodes);
	int is_map = c->is_map;
	if (is_map) { /* node-ip-map: the name is the key */
		const char *key = hakoi_walk_key(w);
		int r = hakoi_walk_string(w, key, strlen(key), 0, node->name, sizeof(node->name));
		if (r != 0) {
			return r;
		}
	}
	if (!nl_name_ok(node->name) || strcmp(node->name, NL_SWITCH) == 0) {
		if (!is_map) {
			hakoi_walk_push_key(w, "name");
		}
		return hakoi_walk_fail(w,
		                       "\"%s\" is not a node name (1-31 of A-Z a-z 0-9 _ . -, not "
		                       "starting with . or -, and not \"" NL_SWITCH "\")",
		                       node->name);
	}
	for (size_t j = 0; j < i; j++) {
		if (strcmp(lab->nodes[j].name, node->name) == 0) {
			hakoi_walk_push_key(w, "name");
			return hakoi_walk_fail_dup(w, j, "node \"%s\"", node->name);
		}
	}
	if (c->renumber) {
		return 0;
	}
	if (!is_map) {
		hakoi_walk_push_key(w, "address");
	}
	uint32_t ip;
	int prefix;
	if (parse_addr(node->address, &ip, &prefix) != 0) {
		return hakoi_walk_fail(
		    w, "is \"%s\"; must be an address \"a.b.c.d\" or \"a.b.c.d/N\"", node->address);
	}
	if (!c->subnet_known) {
		set_subnet(lab, ip, prefix >= 0 ? prefix : 24);
		c->subnet_known = 1;
	} else if (prefix >= 0 && prefix != lab->prefix) {
		return hakoi_walk_fail(w, "\"%s\": the lab's subnet is %s", node->address,
		                       lab->subnet_text);
	}
	int r = address_ok(w, lab, node->address, ip);
	if (r != 0) {
		return r;
	}
	for (size_t j = 0; j < i; j++) {
		if (lab->nodes[j].ip == ip) {
			return hakoi_walk_fail(w, "\"%s\" is already the address of node \"%s\"",
			                       node->address, lab->nodes[j].name);
		}
	}
	node->ip = ip;
	if (!is_map) {
		hakoi_walk_pop(w);
	}
	return 0;
}

static const hakoi_field_t node_fields[] = {
    HAKOI_STRING("name", HAKOI_F_REQUIRED, nl_node_t, name),
    HAKOI_STRING("address", HAKOI_F_REQUIRED, nl_node_t, address),
    HAKOI_END,
};
static const hakoi_field_t node_obj = {.kind = HAKOI_K_OBJECT, .fields = node_fields};
static const hakoi_field_t node_str = HAKOI_STRING(NULL, 0, nl_node_t, address);

static const hakoi_field_t nodes_array = {.key = "nodes",
                                          .kind = HAKOI_K_ARRAY,
                                          .min = 1,
                                          .max = NL_MAX_NODES,
                                          HAKOI_ELEMS_NEW(nl_lab_t, nodes, nnodes),
                                          .elem = &node_obj,
                                          .check = check_node,
                                          .expect = "an array of {name, address}"};
static const hakoi_field_t nodes_map = {.key = "nodes",
                                        .kind = HAKOI_K_MAP,
                                        .min = 1,
                                        .max = NL_MAX_NODES,
                                        HAKOI_ELEMS_NEW(nl_lab_t, nodes, nnodes),
                                        .elem = &node_str,
                                        .check = check_node,
                                        .expect = "an object of \"name\": \"address\""};

static int read_nodes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	struct ctx *c = w->user;
	c->is_map = json_is_object(v);
	if (json_is_array(v)) {
		return hakoi_walk_value(w, v, &nodes_array, base);
	}
	if (json_is_object(v)) {
		return hakoi_walk_value(w, v, &nodes_map, base);
	}
	return hakoi_walk_fail_must(
	    w, "an array of {name, address} or an object of \"name\": \"address\"");
}

static int check_lab(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	struct ctx *c = w->user;
	nl_lab_t *lab = base;
	if (c->renumber) {
		return 0;
	}
	if (!c->switch_given) {
		lab->sw_ip = lab->net + 1;
		nl_ip_text(lab->sw_ip, lab->switch_text);
	}
	for (size_t i = 0; i < lab->nnodes; i++) {
		if (lab->nodes[i].ip == lab->sw_ip) {
			hakoi_walk_push_key(w, "nodes");
			if (c->is_map) {
				hakoi_walk_push_key(w, lab->nodes[i].name);
			} else {
				hakoi_walk_push_index(w, i);
				hakoi_walk_push_key(w, "address");
			}
			return hakoi_walk_fail(
			    w, "\"%s\" is the switch's address (give \"switch\" another)",
			    lab->nodes[i].address);
		}
	}
	return 0;
}

static const hakoi_field_t lab_fields[] = {
    HAKOI_CUSTOM("subnet", 0, read_subnet, "a CIDR"),
    HAKOI_CUSTOM("switch", 0, read_switch, "an address"),
    HAKOI_CUSTOM("nodes", HAKOI_F_REQUIRED, read_nodes, "the nodes"),
    HAKOI_CHECK(check_lab),
    HAKOI_END,
};

static int renumber_nodes(nl_lab_t *lab, const char *cidr, const char *file, hako_error_t *err)
{
	uint32_t ip;
	int prefix;
	if (parse_addr(cidr, &ip, &prefix) != 0 || prefix < 0) {
		return hako_error_set(err, HAKO_EINVAL, NULL, 0, 0,
		                      "--subnet %s: must be a CIDR \"a.b.c.d/N\" with N in [8, 30]",
		                      cidr);
	}
	set_subnet(lab, ip, prefix);
	uint64_t hosts = (1ull << (32 - prefix)) - 2;
	if (lab->nnodes + 10 > hosts) {
		return hako_error_set(err, HAKO_EINVAL, file, 0, 0,
		                      "--subnet %s: too small for %zu nodes numbered from .11",
		                      cidr, lab->nnodes);
	}
	lab->sw_ip = lab->net + 1;
	nl_ip_text(lab->sw_ip, lab->switch_text);
	for (size_t i = 0; i < lab->nnodes; i++) {
		lab->nodes[i].ip = lab->net + 11 + (uint32_t)i;
	}
	return 0;
}

int nl_lab_load(const char *file, const char *renumber, nl_lab_t *lab, hako_error_t *err)
{
	memset(lab, 0, sizeof(*lab));
	hako_error_clear(err);
	json_t *root;
	char *text;
	size_t len;
	int r = hakoi_cfg_load(file, err, &root, &text, &len);
	if (r != 0) {
		return r;
	}
	struct ctx c = {.lab = lab, .renumber = renumber != NULL};
	hakoi_walk_t w;
	hakoi_walk_init(&w, err, file, text, len, &c);
	r = hakoi_walk_object(&w, root, lab_fields, lab);
	json_decref(root);
	free(text);
	if (r == 0 && renumber != NULL) {
		r = renumber_nodes(lab, renumber, file, err);
	}
	if (r != 0) {
		nl_lab_free(lab);
	}
	return r;
}

void nl_lab_free(nl_lab_t *lab)
{
	free(lab->nodes);
	lab->nodes = NULL;
	lab->nnodes = 0;
}
