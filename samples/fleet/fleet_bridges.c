/* The hako-bridge files of a fleet across nodes (fleet_bridges.h). */
#include "fleet_bridges.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fleet_share.h"

#define MAX_ID 64

/* dir/bridge/name, written from fmt. 0, or -1 with errno. */
static int put(const char *dir, const char *name, const char *fmt, ...)
{
	char path[4400];
	if (snprintf(path, sizeof(path), "%s/bridge/%s", dir, name) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		return -1;
	}
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	return fclose(f) != 0 ? -1 : 0;
}

/* A node id goes into file names and JSON strings unquoted: letters, digits, - _ . only. */
static int valid_id(const char *s, size_t n)
{
	if (n == 0 || n >= MAX_ID) {
		return 0;
	}
	for (size_t k = 0; k < n; k++) {
		char c = s[k];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.')) {
			return 0;
		}
	}
	return 1;
}

/* "n1,n2,...": the client node ids. Their number (2..FLEET_MAX_HOSTS), or 0. */
static size_t split_ids(const char *list, char ids[FLEET_MAX_HOSTS][MAX_ID])
{
	size_t n = 0;
	const char *p = list;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
		if (n == FLEET_MAX_HOSTS || !valid_id(p, len)) {
			return 0;
		}
		memcpy(ids[n], p, len);
		ids[n++][len] = '\0';
		if (end == NULL) {
			break;
		}
		p = end + 1;
	}
	return n >= 2 ? n : 0;
}

/* An endpoint: its file and its comm file, named after its id. */
static int endpoint(const char *dir, const char *id, const char *comm_fmt, ...)
{
	char name[MAX_ID + 32], comm[2048];
	va_list ap;
	va_start(ap, comm_fmt);
	vsnprintf(comm, sizeof(comm), comm_fmt, ap);
	va_end(ap);
	snprintf(name, sizeof(name), "%s_comm.json", id);
	if (put(dir, name, "%s", comm) != 0) {
		return -1;
	}
	snprintf(name, sizeof(name), "%s.json", id);
	return put(dir, name,
	           "{\"name\": \"%s\", \"cache\": \"cache.json\", \"comm\": \"%s_comm.json\", "
	           "\"pdu_def_path\": \"fleet_share_pdudef.json\"}\n",
	           id, id);
}

/* The shm io list of the load records: of host k alone, or (k == 0) of every host. */
static void load_io(char *out, size_t len, size_t hosts, size_t k, const char *notify)
{
	int at = 0;
	for (size_t j = 1; j <= hosts; j++) {
		if (k != 0 && j != k) {
			continue;
		}
		at += snprintf(out + at, len - (size_t)at,
		               "%s{\"name\": \"" FLEET_LOAD_ROBOT "%zu\", \"pdu\": [{\"name\": "
		               "\"load\"%s}]}",
		               at > 0 ? ", " : "", j, notify);
	}
}

/* A node of the endpoint container, after sep: its tcp endpoint (the wire), its endpoint of the
 * load records (`local`: the server's "loads", a client's "load") and that of the orders. */
static int container_node(char *buf, size_t len, const char *sep, const char *node,
                          const char *local)
{
	return snprintf(buf, len,
	                "%s  {\"nodeId\": \"%s\", \"endpoints\": [\n"
	                "    {\"id\": \"%s_tcp\", \"mode\": \"wire\", \"config_path\": "
	                "\"%s_tcp.json\"},\n"
	                "    {\"id\": \"%s_%s\", \"mode\": \"local\", \"config_path\": "
	                "\"%s_%s.json\"},\n"
	                "    {\"id\": \"%s_orders\", \"mode\": \"local\", \"config_path\": "
	                "\"%s_orders.json\"}]}",
	                sep, node, node, node, node, local, node, local, node, node);
}

/* A connection of the bridge file, after sep: on node, from its endpoint node_from to node_to,
 * the key groups of pdus (JSON objects). */
static int connection(char *buf, size_t len, const char *sep, const char *id, const char *node,
                      const char *from, const char *to, const char *pdus)
{
	return snprintf(buf, len,
	                "%s    {\"id\": \"%s\", \"nodeId\": \"%s\", \"source\": {\"endpointId\": "
	                "\"%s_%s\"},\n"
	                "     \"destinations\": [{\"endpointId\": \"%s_%s\"}],\n"
	                "     \"transferPdus\": [%s]}",
	                sep, id, node, node, from, node, to, pdus);
}

int fleet_bridges_write(const char *dir, const char *server, const char *clients, const char *addr,
                        int port)
{
	char ids[FLEET_MAX_HOSTS][MAX_ID];
	size_t n = split_ids(clients, ids);
	if (n == 0 || !valid_id(server, strlen(server)) || port < 1 || port > 65535 ||
	    addr[0] == '\0' || strpbrk(addr, "\"\\") != NULL) {
		errno = EINVAL;
		return -1;
	}
	for (size_t k = 0; k < n; k++) {
		if (strcmp(ids[k], server) == 0) {
			errno = EINVAL; /* the server runs no host */
			return -1;
		}
	}
	char sub[4200];
	snprintf(sub, sizeof(sub), "%s/bridge", dir);
	if (mkdir(sub, 0777) != 0 && errno != EEXIST) {
		return -1;
	}
	/* The two raw channels as PDUs, of their structs' sizes. */
	char robots[8192];
	int at = 0;
	for (size_t k = 1; k <= n; k++) {
		at += snprintf(robots + at, sizeof(robots) - (size_t)at,
		               "  {\"name\": \"" FLEET_LOAD_ROBOT
		               "%zu\", \"shm_pdu_writers\": [{\"type\": \"fleet/FleetLoad\", "
		               "\"org_name\": \"load\", \"channel_id\": 0, \"pdu_size\": %zu}]},\n",
		               k, sizeof(fleet_load_t));
	}
	if (put(dir, "fleet_share_pdudef.json",
	        "{\"robots\": [\n%s  {\"name\": \"" FLEET_ORDER_ROBOT
	        "\", \"shm_pdu_writers\": [{\"type\": \"fleet/FleetOrder\", \"org_name\": "
	        "\"order\", \"channel_id\": 0, \"pdu_size\": %zu}]}\n]}\n",
	        robots, sizeof(fleet_order_t)) != 0 ||
	    put(dir, "cache.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n") !=
	        0) {
		return -1;
	}
	/* The server node: a tcp server every client connects to; the load records into its
	 * domain, its orders out of it. */
	char id[MAX_ID + 16], io[4096];
	snprintf(id, sizeof(id), "%s_tcp", server);
	if (endpoint(dir, id,
	             "{\"protocol\": \"tcp\", \"name\": \"%s\", \"direction\": \"inout\", "
	             "\"role\": \"server\", \"local\": {\"address\": \"%s\", \"port\": %d}}\n",
	             id, addr, port) != 0) {
		return -1;
	}
	load_io(io, sizeof(io), n, 0, "");
	snprintf(id, sizeof(id), "%s_loads", server);
	if (endpoint(dir, id,
	             "{\"protocol\": \"shm\", \"impl_type\": \"callback\", \"direction\": \"out\", "
	             "\"io\": {\"robots\": [%s]}}\n",
	             io) != 0) {
		return -1;
	}
	snprintf(id, sizeof(id), "%s_orders", server);
	if (endpoint(dir, id,
	             "{\"protocol\": \"shm\", \"impl_type\": \"callback\", \"direction\": \"in\", "
	             "\"io\": {\"robots\": [{\"name\": \"" FLEET_ORDER_ROBOT
	             "\", \"pdu\": [{\"name\": \"order\", \"notify_on_recv\": true}]}]}}\n") != 0) {
		return -1;
	}
	/* Each client node: a tcp client to the server; its host's load record out of its
	 * domain, the orders into it. */
	for (size_t k = 0; k < n; k++) {
		snprintf(id, sizeof(id), "%s_tcp", ids[k]);
		if (endpoint(
		        dir, id,
		        "{\"protocol\": \"tcp\", \"name\": \"%s\", \"direction\": \"inout\", "
		        "\"role\": \"client\", \"remote\": {\"address\": \"%s\", \"port\": %d}, "
		        "\"options\": {\"connect_timeout_ms\": 200}}\n",
		        id, addr, port) != 0) {
			return -1;
		}
		load_io(io, sizeof(io), n, k + 1, ", \"notify_on_recv\": true");
		snprintf(id, sizeof(id), "%s_load", ids[k]);
		if (endpoint(dir, id,
		             "{\"protocol\": \"shm\", \"impl_type\": \"callback\", \"direction\": "
		             "\"in\", \"io\": {\"robots\": [%s]}}\n",
		             io) != 0) {
			return -1;
		}
		snprintf(id, sizeof(id), "%s_orders", ids[k]);
		if (endpoint(dir, id,
		             "{\"protocol\": \"shm\", \"impl_type\": \"callback\", \"direction\": "
		             "\"out\", \"io\": {\"robots\": [{\"name\": \"" FLEET_ORDER_ROBOT
		             "\", \"pdu\": [{\"name\": \"order\"}]}]}}\n") != 0) {
			return -1;
		}
	}
	/* The container: each node's three endpoints. The buffers here hold FLEET_MAX_HOSTS
	 * client nodes with ids of MAX_ID - 1 bytes about twice over (test_fleet_bridges writes
	 * those; ids are checked above, so nothing longer comes). */
	char text[32768];
	at = container_node(text, sizeof(text), "[\n", server, "loads");
	for (size_t k = 0; k < n; k++) {
		at += container_node(text + at, sizeof(text) - (size_t)at, ",\n", ids[k], "load");
	}
	if (put(dir, "fleet_bridge_endpoints.json", "%s\n]\n", text) != 0) {
		return -1;
	}
	/* The bridge file: one key group a host's load record, one for the orders. */
	char nodes[4096], groups[8192], all[4096], conns[32768];
	int an = snprintf(nodes, sizeof(nodes), "{\"id\": \"%s\"}", server), ag = 0, aa = 0;
	for (size_t k = 0; k < n; k++) {
		an +=
		    snprintf(nodes + an, sizeof(nodes) - (size_t)an, ", {\"id\": \"%s\"}", ids[k]);
		ag += snprintf(groups + ag, sizeof(groups) - (size_t)ag,
		               "    \"load_%zu\": [{\"id\": \"" FLEET_LOAD_ROBOT
		               "%zu.load\", \"robot_name\": \"" FLEET_LOAD_ROBOT
		               "%zu\", \"pdu_name\": \"load\"}],\n",
		               k + 1, k + 1, k + 1);
		aa += snprintf(all + aa, sizeof(all) - (size_t)aa,
		               "%s{\"pduKeyGroupId\": \"load_%zu\", \"policyId\": \"immediate\"}",
		               k > 0 ? ",\n                      " : "", k + 1);
	}
	int ac = connection(conns, sizeof(conns), "", "loads", server, "tcp", "loads", all);
	ac += connection(conns + ac, sizeof(conns) - (size_t)ac, ",\n", "orders", server, "orders",
	                 "tcp", "{\"pduKeyGroupId\": \"order\", \"policyId\": \"ticker_100ms\"}");
	for (size_t k = 0; k < n; k++) {
		char load[80];
		snprintf(load, sizeof(load),
		         "{\"pduKeyGroupId\": \"load_%zu\", \"policyId\": \"immediate\"}", k + 1);
		ac += connection(conns + ac, sizeof(conns) - (size_t)ac, ",\n", "load", ids[k],
		                 "load", "tcp", load);
		ac += connection(conns + ac, sizeof(conns) - (size_t)ac, ",\n", "orders", ids[k],
		                 "tcp", "orders",
		                 "{\"pduKeyGroupId\": \"order\", \"policyId\": \"immediate\"}");
	}
	return put(dir, "fleet_bridge.json",
	           "{\n  \"version\": \"2.0.0\",\n"
	           "  \"transferPolicies\": {\"immediate\": {\"type\": \"immediate\"},\n"
	           "                       \"ticker_100ms\": {\"type\": \"ticker\", "
	           "\"intervalMs\": 100}},\n"
	           "  \"nodes\": [%s],\n"
	           "  \"endpoints_config_path\": \"fleet_bridge_endpoints.json\",\n"
	           "  \"pduKeyGroups\": {\n%s"
	           "    \"order\": [{\"id\": \"" FLEET_ORDER_ROBOT
	           ".order\", \"robot_name\": \"" FLEET_ORDER_ROBOT
	           "\", \"pdu_name\": \"order\"}]\n"
	           "  },\n"
	           "  \"connections\": [\n%s\n  ]\n}\n",
	           nodes, groups, conns);
}
