/* Endpoint config loaders: endpoint, cache, comm and container files, checked value by value,
 * every error reported as file:line:column: path: what. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/endpoint_config.h"
#include "hakoi/json_pos.h"
#include "hako/log.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_MS   3600000 /* an hour */
#define MAX_BUF  (1 << 30)

struct ctx {
	hakoi_jctx_t j;           /* file, text, path: errors point at file:line:column */
	const hako_pdudef_t *def; /* comm files: the endpoint's pdudef, or NULL */
	void *out;
};

typedef int (*load_fn)(struct ctx *c, json_t *root);

/* The shared place-in-document helpers of json_pos.h. */
#define push_key(c, key)             hakoi_jctx_push_key(&(c)->j, (key))
#define push_index(c, index)         hakoi_jctx_push_index(&(c)->j, (index))
#define pop(c)                       hakoi_jctx_pop(&(c)->j)
#define report(c, at, code, what)    hakoi_jctx_report(&(c)->j, (at), (code), (what))
#define fail(c, ...)                 hakoi_jctx_fail(&(c)->j, __VA_ARGS__)
#define fail_missing(c, expected)    hakoi_jctx_fail_missing(&(c)->j, (expected))
#define fail_oom(c)                  hakoi_jctx_fail_oom(&(c)->j)
#define check_keys(c, obj, known, n) hakoi_jctx_check_keys(&(c)->j, (obj), (known), (n))

/* An object member; absent optional members return NULL with *rc = 0. The key stays pushed when
 * the object is returned: the caller pops it. */
static json_t *get_object(struct ctx *c, json_t *obj, const char *key, int required, int *rc)
{
	json_t *v = json_object_get(obj, key);
	*rc = 0;
	push_key(c, key);
	if (v == NULL) {
		if (required) {
			*rc = fail_missing(c, "an object");
		} else {
			pop(c);
		}
		return NULL;
	}
	if (!json_is_object(v)) {
		*rc = fail(c, "must be an object");
		return NULL;
	}
	return v;
}

static int string_value(struct ctx *c, json_t *v, char *out, size_t size)
{
	if (!json_is_string(v)) {
		return fail(c, "must be a string");
	}
	size_t n = json_string_length(v);
	if (n == 0) {
		return fail(c, "must not be empty");
	}
	if (strlen(json_string_value(v)) != n) {
		return fail(c, "must not contain a NUL character");
	}
	if (n >= size) {
		return fail(c, "is %zu bytes long; the limit is %zu", n, size - 1);
	}
	memcpy(out, json_string_value(v), n + 1);
	return 0;
}

/* A non-empty string shorter than size bytes; an absent optional member leaves out alone. */
static int get_string(struct ctx *c, json_t *obj, const char *key, int required, char *out,
                      size_t size)
{
	json_t *v = json_object_get(obj, key);
	push_key(c, key);
	if (v == NULL) {
		if (required) {
			return fail_missing(c, "a string");
		}
		pop(c);
		return 0;
	}
	int r = string_value(c, v, out, size);
	if (r == 0) {
		pop(c);
	}
	return r;
}

/* One of names[] (stored as its index); an absent optional member leaves *out alone. */
static int get_enum(struct ctx *c, json_t *obj, const char *key, int required,
                    const char *const *names, size_t n, int *out)
{
	char expected[128] = "";
	for (size_t i = 0; i < n; i++) {
		size_t used = strlen(expected);
		snprintf(expected + used, sizeof(expected) - used, "%s\"%s\"",
		         i == 0 ? "" : (i + 1 == n ? " or " : ", "), names[i]);
	}
	json_t *v = json_object_get(obj, key);
	push_key(c, key);
	if (v == NULL) {
		if (required) {
			return fail_missing(c, expected);
		}
		pop(c);
		return 0;
	}
	if (!json_is_string(v)) {
		return fail(c, "must be %s", expected);
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(json_string_value(v), names[i]) == 0) {
			*out = (int)i;
			pop(c);
			return 0;
		}
	}
	return fail(c, "is \"%s\"; must be %s", json_string_value(v), expected);
}

/* An integer in [min, max]; an absent optional member leaves *out alone. */
static int get_uint(struct ctx *c, json_t *obj, const char *key, int required, json_int_t min,
                    json_int_t max, uint32_t *out)
{
	long long v = 0;
	int r = hakoi_jctx_get_int(&c->j, obj, key, required, min, max, &v);
	if (r == 0 && json_object_get(obj, key) != NULL) {
		*out = (uint32_t)v;
	}
	return r;
}

/* true or false; an absent member leaves *out alone. */
static int get_bool(struct ctx *c, json_t *obj, const char *key, int *out)
{
	json_t *v = json_object_get(obj, key);
	if (v == NULL) {
		return 0;
	}
	if (!json_is_boolean(v)) {
		push_key(c, key);
		return fail(c, "must be true or false");
	}
	*out = json_is_true(v);
	return 0;
}

/* A string or null (*present = 0). */
static int get_path_or_null(struct ctx *c, json_t *obj, const char *key, int required, char *out,
                            size_t size, int *present)
{
	json_t *v = json_object_get(obj, key);
	*present = 0;
	if (v == NULL && !required) {
		return 0;
	}
	push_key(c, key);
	if (v == NULL) {
		return fail_missing(c, "a path or null");
	}
	if (json_is_null(v)) {
		pop(c);
		return 0;
	}
	if (!json_is_string(v)) {
		return fail(c, "must be a path or null");
	}
	int r = string_value(c, v, out, size);
	if (r == 0) {
		*present = 1;
		pop(c);
	}
	return r;
}

/* rel resolved under the folder of the current file, at the current path (pushed). */
static int resolve(struct ctx *c, const char *rel, char *out, size_t size)
{
	const char *slash = strrchr(c->j.file, '/');
	int dir_len = rel[0] == '/' || slash == NULL ? 0 : (int)(slash - c->j.file + 1);
	int n = snprintf(out, size, "%.*s%s", dir_len, c->j.file, rel);
	if (n < 0 || (size_t)n >= size) {
		return fail(c, "resolved path is too long (limit %zu bytes)", size - 1);
	}
	return 0;
}

/* Read and parse path, then fn(root). */
static int load_file(const char *path, hako_error_t *err, const hako_pdudef_t *def, load_fn fn,
                     void *out)
{
	char *text = NULL;
	size_t len = 0;
	int e = hakoi_read_file(path, &text, &len);
	if (e != 0) {
		return hako_error_set(err, e == ENOENT || e == ENOTDIR ? HAKO_ENOENT : HAKO_EIO,
		                      path, 0, 0, "cannot open: %s", hakoi_read_file_strerror(e));
	}
	json_error_t jerr;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	int r;
	struct ctx c = {
	    .j = {.err = err, .file = path, .text = text, .len = len}, .def = def, .out = out};
	if (root == NULL) {
		r = hako_error_set(err, HAKO_ECONFIG, path, jerr.line > 0 ? jerr.line : 0,
		                   jerr.column > 0 ? jerr.column : 0, "invalid JSON: %s",
		                   jerr.text);
	} else {
		r = fn(&c, root);
	}
	json_decref(root);
	free(text);
	return r;
}

/* ---- cache ---- */

static int load_cache_root(struct ctx *c, json_t *root)
{
	static const char *const keys[] = {"$schema", "type", "name", "store"};
	static const char *const store_keys[] = {"mode", "depth"};
	static const char *const types[] = {"buffer"};
	static const char *const modes[] = {"latest", "queue"};
	hako_cache_config_t *cc = c->out;
	int type = 0, mode = 0, r;
	if (!json_is_object(root)) {
		return fail(c, "must be an object");
	}
	if ((r = check_keys(c, root, keys, COUNT(keys))) != 0 ||
	    (r = get_enum(c, root, "type", 0, types, COUNT(types), &type)) != 0 ||
	    (r = get_string(c, root, "name", 0, cc->name, sizeof(cc->name))) != 0) {
		return r;
	}
	json_t *store = get_object(c, root, "store", 1, &r);
	if (store == NULL) {
		return r;
	}
	cc->depth = 1;
	if ((r = check_keys(c, store, store_keys, COUNT(store_keys))) != 0 ||
	    (r = get_enum(c, store, "mode", 1, modes, COUNT(modes), &mode)) != 0 ||
	    (r = get_uint(c, store, "depth", 0, 1, HAKO_CACHE_MAX_DEPTH, &cc->depth)) != 0) {
		return r;
	}
	cc->mode = mode == 0 ? HAKO_CACHE_LATEST : HAKO_CACHE_QUEUE;
	if (cc->mode == HAKO_CACHE_LATEST && cc->depth != 1) {
		push_key(c, "depth");
		return fail(c, "is %u; latest keeps one PDU per key (use mode \"queue\")",
		            cc->depth);
	}
	pop(c);
	return 0;
}

/* ---- comm ---- */

static int address_value(struct ctx *c, json_t *obj, const char *key, int required, char *out,
                         size_t size, int *family)
{
	int r = get_string(c, obj, key, required, out, size);
	if (r != 0 || json_object_get(obj, key) == NULL) {
		return r;
	}
	struct in6_addr a;
	if (inet_pton(AF_INET, out, &a) == 1) {
		*family = AF_INET;
	} else if (inet_pton(AF_INET6, out, &a) == 1) {
		*family = AF_INET6;
	} else {
		push_key(c, key);
		return fail(c, "\"%s\" is not an IPv4 or IPv6 address", out);
	}
	return 0;
}

static int is_multicast(const char *addr)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, addr, &a4) == 1) {
		return (ntohl(a4.s_addr) >> 28) == 0xe;
	}
	return inet_pton(AF_INET6, addr, &a6) == 1 && a6.s6_addr[0] == 0xff;
}

/* local or remote; websocket: local {port, address?}, remote {host, port, path?}. */
static int load_addr(struct ctx *c, json_t *comm, const char *key, hako_comm_addr_t *a)
{
	static const char *const net_keys[] = {"address", "port"};
	static const char *const ws_local_keys[] = {"address", "port"};
	static const char *const ws_remote_keys[] = {"host", "port", "path"};
	hako_comm_config_t *cc = c->out;
	int r, ws = cc->protocol == HAKO_COMM_WEBSOCKET, remote = key[0] == 'r';
	uint32_t port = 0;
	json_t *o = get_object(c, comm, key, 0, &r);
	if (o == NULL) {
		return r;
	}
	if (!ws) {
		r = check_keys(c, o, net_keys, COUNT(net_keys));
		if (r == 0) {
			r = address_value(c, o, "address", 1, a->address, sizeof(a->address),
			                  &a->family);
		}
	} else if (!remote) {
		/* Loopback unless the file names an address: a server reachable from other hosts is
		 * a choice, not a default (Hakoniwa's binds 0.0.0.0). */
		snprintf(a->address, sizeof(a->address), "127.0.0.1");
		a->family = AF_INET;
		r = check_keys(c, o, ws_local_keys, COUNT(ws_local_keys));
		if (r == 0) {
			r = address_value(c, o, "address", 0, a->address, sizeof(a->address),
			                  &a->family);
		}
	} else {
		snprintf(a->path, sizeof(a->path), "/");
		if ((r = check_keys(c, o, ws_remote_keys, COUNT(ws_remote_keys))) == 0 &&
		    (r = get_string(c, o, "host", 1, a->host, sizeof(a->host))) == 0 &&
		    (r = get_string(c, o, "path", 0, a->path, sizeof(a->path))) == 0 &&
		    a->path[0] != '/') {
			push_key(c, "path");
			r = fail(c, "must start with '/'");
		}
	}
	/* A local port 0 binds any free port (hako_endpoint_local_port tells which). */
	if (r != 0 || (r = get_uint(c, o, "port", 1, remote ? 1 : 0, 65535, &port)) != 0) {
		return r;
	}
	a->port = (uint16_t)port;
	a->present = 1;
	pop(c);
	return 0;
}

/* The options every network protocol has. */
static int load_net_options(struct ctx *c, json_t *o, hako_comm_config_t *cc)
{
	int r;
	if ((r = get_uint(c, o, "max_body_bytes", 0, 1, HAKO_ENDPOINT_MAX_BODY,
	                  &cc->max_body_bytes)) != 0 ||
	    (r = get_uint(c, o, "send_queue_depth", 0, 1, HAKO_ENDPOINT_MAX_SENDQ,
	                  &cc->send_queue_depth)) != 0) {
		return r;
	}
	return 0;
}

/* The limits of the stream protocols (tcp, websocket) against peers that hold memory. */
static int load_stream_options(struct ctx *c, json_t *o, hako_comm_config_t *cc)
{
	int r;
	if ((r = get_uint(c, o, "max_clients", 0, 1, HAKO_ENDPOINT_MAX_CLIENTS,
	                  &cc->max_clients)) != 0 ||
	    (r = get_uint(c, o, "max_buffered_bytes", 0, HAKO_ENDPOINT_BUFFERED_SLACK, UINT32_MAX,
	                  &cc->max_buffered_bytes)) != 0 ||
	    (r = get_uint(c, o, "frame_timeout_ms", 0, 0, MAX_MS, &cc->frame_timeout_ms)) != 0) {
		return r;
	}
	if (cc->role != HAKO_COMM_SERVER && json_object_get(o, "max_clients") != NULL) {
		push_key(c, "max_clients");
		return fail(c, "only a server has clients");
	}
	/* One frame of max_body_bytes must fit, or such a frame could never be received. */
	uint64_t least = (uint64_t)cc->max_body_bytes + HAKO_ENDPOINT_BUFFERED_SLACK;
	if (cc->max_buffered_bytes != 0 && cc->max_buffered_bytes < least) {
		push_key(c, "max_buffered_bytes");
		return fail(c, "is %u; must be at least max_body_bytes + 1 MiB (%llu)",
		            cc->max_buffered_bytes, (unsigned long long)least);
	}
	return 0;
}

/* What a stream comm's limits are when the file does not say (after its options). */
static void stream_defaults(hako_comm_config_t *cc)
{
	if (cc->max_buffered_bytes == 0) {
		uint64_t least = (uint64_t)cc->max_body_bytes + HAKO_ENDPOINT_BUFFERED_SLACK;
		cc->max_buffered_bytes = least > HAKO_ENDPOINT_DEFAULT_BUFFERED
		                             ? (uint32_t)least
		                             : HAKO_ENDPOINT_DEFAULT_BUFFERED;
	}
}

static int load_tcp_options(struct ctx *c, json_t *o, hako_comm_config_t *cc)
{
	static const char *const keys[] = {"backlog",
	                                   "connect_timeout_ms",
	                                   "read_timeout_ms",
	                                   "write_timeout_ms",
	                                   "blocking",
	                                   "reuse_address",
	                                   "keepalive",
	                                   "no_delay",
	                                   "recv_buffer_size",
	                                   "send_buffer_size",
	                                   "linger",
	                                   "max_body_bytes",
	                                   "send_queue_depth",
	                                   "max_clients",
	                                   "max_buffered_bytes",
	                                   "frame_timeout_ms"};
	static const char *const linger_keys[] = {"enabled", "timeout_sec"};
	hako_comm_tcp_options_t *t = &cc->tcp;
	int r;
	if ((r = check_keys(c, o, keys, COUNT(keys))) != 0 ||
	    (r = get_uint(c, o, "backlog", 0, 1, 65535, &t->backlog)) != 0 ||
	    (r = get_uint(c, o, "connect_timeout_ms", 0, 0, MAX_MS, &t->connect_timeout_ms)) != 0 ||
	    (r = get_uint(c, o, "read_timeout_ms", 0, 0, MAX_MS, &t->read_timeout_ms)) != 0 ||
	    (r = get_uint(c, o, "write_timeout_ms", 0, 0, MAX_MS, &t->write_timeout_ms)) != 0 ||
	    (r = get_bool(c, o, "blocking", &t->blocking)) != 0 ||
	    (r = get_bool(c, o, "reuse_address", &t->reuse_address)) != 0 ||
	    (r = get_bool(c, o, "keepalive", &t->keepalive)) != 0 ||
	    (r = get_bool(c, o, "no_delay", &t->no_delay)) != 0 ||
	    (r = get_uint(c, o, "recv_buffer_size", 0, 1, MAX_BUF, &t->recv_buffer_size)) != 0 ||
	    (r = get_uint(c, o, "send_buffer_size", 0, 1, MAX_BUF, &t->send_buffer_size)) != 0 ||
	    (r = load_net_options(c, o, cc)) != 0 || (r = load_stream_options(c, o, cc)) != 0) {
		return r;
	}
	json_t *l = get_object(c, o, "linger", 0, &r);
	if (l == NULL) {
		return r;
	}
	if ((r = check_keys(c, l, linger_keys, COUNT(linger_keys))) != 0 ||
	    (r = get_bool(c, l, "enabled", &t->linger_enabled)) != 0 ||
	    (r = get_uint(c, l, "timeout_sec", 0, 0, 65535, &t->linger_timeout_sec)) != 0) {
		return r;
	}
	pop(c);
	return 0;
}

static int load_udp_options(struct ctx *c, json_t *o, hako_comm_config_t *cc)
{
	static const char *const keys[] = {"buffer_size",    "timeout_ms",      "blocking",
	                                   "reuse_address",  "broadcast",       "multicast",
	                                   "max_body_bytes", "send_queue_depth"};
	static const char *const mc_keys[] = {"enabled", "group", "interface", "ttl"};
	hako_comm_udp_options_t *u = &cc->udp;
	int r, family = 0;
	if ((r = check_keys(c, o, keys, COUNT(keys))) != 0 ||
	    (r = get_uint(c, o, "buffer_size", 0, 1, MAX_BUF, &u->buffer_size)) != 0 ||
	    (r = get_uint(c, o, "timeout_ms", 0, 0, MAX_MS, &u->timeout_ms)) != 0 ||
	    (r = get_bool(c, o, "blocking", &u->blocking)) != 0 ||
	    (r = get_bool(c, o, "reuse_address", &u->reuse_address)) != 0 ||
	    (r = get_bool(c, o, "broadcast", &u->broadcast)) != 0 ||
	    (r = load_net_options(c, o, cc)) != 0) {
		return r;
	}
	json_t *m = get_object(c, o, "multicast", 0, &r);
	if (m == NULL) {
		return r;
	}
	if ((r = check_keys(c, m, mc_keys, COUNT(mc_keys))) != 0 ||
	    (r = get_bool(c, m, "enabled", &u->multicast_enabled)) != 0) {
		return r;
	}
	if (u->multicast_enabled && json_object_get(m, "group") == NULL) {
		push_key(c, "group");
		return report(c, c->j.depth - 1, HAKO_ECONFIG,
		              "missing (a multicast address is required when enabled)");
	}
	if ((r = address_value(c, m, "group", 0, u->multicast_group, sizeof(u->multicast_group),
	                       &family)) != 0 ||
	    (r = address_value(c, m, "interface", 0, u->multicast_interface,
	                       sizeof(u->multicast_interface), &family)) != 0 ||
	    (r = get_uint(c, m, "ttl", 0, 0, 255, &u->multicast_ttl)) != 0) {
		return r;
	}
	if (u->multicast_group[0] != '\0' && !is_multicast(u->multicast_group)) {
		push_key(c, "group");
		return fail(c, "\"%s\" is not a multicast address", u->multicast_group);
	}
	pop(c);
	return 0;
}

static int load_ws_options(struct ctx *c, json_t *o, hako_comm_config_t *cc)
{
	static const char *const keys[] = {
	    "secure",          "ping_interval_sec", "handshake_timeout_ms", "connect_timeout_ms",
	    "read_timeout_ms", "write_timeout_ms",  "max_body_bytes",       "send_queue_depth",
	    "static_dir",      "blocking",          "max_clients",          "max_buffered_bytes",
	    "frame_timeout_ms"};
	hako_comm_ws_options_t *w = &cc->ws;
	int r, secure = 0;
	if ((r = check_keys(c, o, keys, COUNT(keys))) != 0 ||
	    (r = get_bool(c, o, "secure", &secure)) != 0) {
		return r;
	}
	if (secure) {
		push_key(c, "secure");
		return fail(c, "TLS is not supported");
	}
	if ((r = get_uint(c, o, "ping_interval_sec", 0, 0, 3600, &w->ping_interval_sec)) != 0 ||
	    (r = get_uint(c, o, "handshake_timeout_ms", 0, 1, MAX_MS, &w->handshake_timeout_ms)) !=
	        0 ||
	    (r = get_uint(c, o, "connect_timeout_ms", 0, 0, MAX_MS, &w->connect_timeout_ms)) != 0 ||
	    (r = get_uint(c, o, "read_timeout_ms", 0, 0, MAX_MS, &w->read_timeout_ms)) != 0 ||
	    (r = get_uint(c, o, "write_timeout_ms", 0, 0, MAX_MS, &w->write_timeout_ms)) != 0 ||
	    (r = get_bool(c, o, "blocking", &w->blocking)) != 0 ||
	    (r = load_net_options(c, o, cc)) != 0 || (r = load_stream_options(c, o, cc)) != 0) {
		return r;
	}
	char rel[HAKO_ENDPOINT_PATH_MAX];
	int present = 0;
	if ((r = get_path_or_null(c, o, "static_dir", 0, rel, sizeof(rel), &present)) != 0) {
		return r;
	}
	if (present) {
		if (cc->role != HAKO_COMM_SERVER) {
			push_key(c, "static_dir");
			return fail(c, "only a server serves files");
		}
		push_key(c, "static_dir");
		if ((r = resolve(c, rel, w->static_dir, sizeof(w->static_dir))) != 0) {
			return r;
		}
		pop(c);
	}
	return 0;
}

static int load_shm_pdu(struct ctx *c, json_t *p, hako_comm_shm_robot_t *rb, size_t j)
{
	static const char *const keys[] = {"name", "notify_on_recv"};
	hako_comm_shm_pdu_t *pdu = &rb->pdus[j];
	int r;
	if (!json_is_object(p)) {
		return fail(c, "must be an object");
	}
	if ((r = check_keys(c, p, keys, COUNT(keys))) != 0 ||
	    (r = get_string(c, p, "name", 1, pdu->name, sizeof(pdu->name))) != 0 ||
	    (r = get_bool(c, p, "notify_on_recv", &pdu->notify_on_recv)) != 0) {
		return r;
	}
	for (size_t k = 0; k < j; k++) {
		if (strcmp(rb->pdus[k].name, pdu->name) == 0) {
			push_key(c, "name");
			return fail(c, "PDU \"%s\" is already listed", pdu->name);
		}
	}
	if (c->def != NULL) {
		const hako_pdudef_pdu_t *d = hako_pdudef_find(c->def, rb->name, pdu->name);
		if (d == NULL) {
			push_key(c, "name");
			return fail(c, "PDU \"%s\" of robot \"%s\" is not in %s", pdu->name,
			            rb->name, c->def->path);
		}
		pdu->channel_id = d->channel_id;
		pdu->pdu_size = d->pdu_size;
	}
	return 0;
}

static int load_shm_robot(struct ctx *c, json_t *o, size_t i)
{
	static const char *const keys[] = {"name", "pdu"};
	hako_comm_config_t *cc = c->out;
	hako_comm_shm_robot_t *rb = &cc->robots[i];
	int r;
	if (!json_is_object(o)) {
		return fail(c, "must be an object");
	}
	if ((r = check_keys(c, o, keys, COUNT(keys))) != 0 ||
	    (r = get_string(c, o, "name", 1, rb->name, sizeof(rb->name))) != 0) {
		return r;
	}
	for (size_t k = 0; k < i; k++) {
		if (strcmp(cc->robots[k].name, rb->name) == 0) {
			push_key(c, "name");
			return fail(c, "robot \"%s\" is already listed", rb->name);
		}
	}
	if (c->def != NULL && hako_pdudef_robot(c->def, rb->name) == NULL) {
		push_key(c, "name");
		return fail(c, "robot \"%s\" is not in %s", rb->name, c->def->path);
	}
	json_t *a = json_object_get(o, "pdu");
	push_key(c, "pdu");
	if (a == NULL) {
		return fail_missing(c, "an array");
	}
	if (!json_is_array(a)) {
		return fail(c, "must be an array");
	}
	if (json_array_size(a) > 0 &&
	    (rb->pdus = calloc(json_array_size(a), sizeof(*rb->pdus))) == NULL) {
		return fail_oom(c);
	}
	for (size_t j = 0; j < json_array_size(a); j++) {
		push_index(c, j);
		if ((r = load_shm_pdu(c, json_array_get(a, j), rb, j)) != 0) {
			return r;
		}
		rb->pdu_count = j + 1;
		pop(c);
	}
	pop(c);
	return 0;
}

static int load_shm(struct ctx *c, json_t *root, hako_comm_config_t *cc)
{
	static const char *const io_keys[] = {"robots"};
	static const char *const impls[] = {"callback", "poll"};
	int r, impl = 0;
	if ((r = get_enum(c, root, "impl_type", 1, impls, COUNT(impls), &impl)) != 0 ||
	    (r = get_string(c, root, "asset_name", impl == HAKO_SHM_POLL, cc->asset_name,
	                    sizeof(cc->asset_name))) != 0) {
		return r;
	}
	cc->shm_impl = (hako_shm_impl_t)impl;
	json_t *io = get_object(c, root, "io", 1, &r);
	if (io == NULL) {
		return r;
	}
	if ((r = check_keys(c, io, io_keys, COUNT(io_keys))) != 0) {
		return r;
	}
	json_t *a = json_object_get(io, "robots");
	push_key(c, "robots");
	if (a == NULL) {
		return fail_missing(c, "an array");
	}
	if (!json_is_array(a)) {
		return fail(c, "must be an array");
	}
	if (json_array_size(a) > 0 &&
	    (cc->robots = calloc(json_array_size(a), sizeof(*cc->robots))) == NULL) {
		return fail_oom(c);
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		push_index(c, i);
		cc->robot_count = i + 1; /* counted first: its pdus are freed on error too */
		if ((r = load_shm_robot(c, json_array_get(a, i), i)) != 0) {
			return r;
		}
		pop(c);
	}
	pop(c);
	pop(c);
	return 0;
}

static void comm_defaults(hako_comm_config_t *cc)
{
	cc->direction = HAKO_COMM_INOUT;
	cc->raw_version = 2;
	cc->max_body_bytes = HAKO_ENDPOINT_DEFAULT_BODY;
	cc->send_queue_depth = HAKO_ENDPOINT_DEFAULT_SENDQ;
	cc->max_clients = HAKO_ENDPOINT_DEFAULT_CLIENTS;
	cc->max_buffered_bytes = 0; /* stream_defaults, once max_body_bytes is known */
	cc->frame_timeout_ms = HAKO_ENDPOINT_DEFAULT_FRAME_MS;
	/* backlog 0: not in the file, SOMAXCONN (Hakoniwa's 5 made a burst of connects wait for
	 * SYN retransmits, ~1 s each). */
	cc->tcp = (hako_comm_tcp_options_t){.backlog = 0,
	                                    .connect_timeout_ms = 1000,
	                                    .read_timeout_ms = 1000,
	                                    .write_timeout_ms = 1000,
	                                    .blocking = 1,
	                                    .reuse_address = 1,
	                                    .keepalive = 1,
	                                    .no_delay = 1,
	                                    .recv_buffer_size = 0,
	                                    .send_buffer_size = 0};
	cc->udp = (hako_comm_udp_options_t){.buffer_size = 8192,
	                                    .timeout_ms = 1000,
	                                    .blocking = 1,
	                                    .reuse_address = 1,
	                                    .multicast_interface = "0.0.0.0",
	                                    .multicast_ttl = 1};
	cc->ws = (hako_comm_ws_options_t){.handshake_timeout_ms = 5000,
	                                  .connect_timeout_ms = 1000,
	                                  .read_timeout_ms = 1000,
	                                  .write_timeout_ms = 1000,
	                                  .blocking = 1};
}

/* Which of local / remote the role or direction needs, and which it may not have. */
static int check_addrs(struct ctx *c, json_t *root, hako_comm_config_t *cc)
{
	const char *need = NULL, *refuse = NULL, *why = NULL;
	if (cc->protocol == HAKO_COMM_UDP) {
		need = cc->direction == HAKO_COMM_OUT ? "remote" : "local";
		why = cc->direction == HAKO_COMM_IN    ? "direction \"in\""
		      : cc->direction == HAKO_COMM_OUT ? "direction \"out\""
		                                       : "direction \"inout\"";
		refuse = cc->direction == HAKO_COMM_IN ? "remote" : NULL;
	} else {
		need = cc->role == HAKO_COMM_SERVER ? "local" : "remote";
		refuse = cc->role == HAKO_COMM_SERVER ? "remote" : "local";
		why = cc->role == HAKO_COMM_SERVER ? "a server" : "a client";
	}
	if (json_object_get(root, need) == NULL) {
		char what[128];
		push_key(c, need);
		snprintf(what, sizeof(what), "missing (%s needs %s)", why, need);
		return report(c, c->j.depth - 1, HAKO_ECONFIG, what);
	}
	if (refuse != NULL && json_object_get(root, refuse) != NULL) {
		push_key(c, refuse);
		return fail(c, "not used by %s", why);
	}
	return 0;
}

static int load_comm_root(struct ctx *c, json_t *root)
{
	static const char *const protocols[] = {"tcp", "udp", "shm", "websocket"};
	static const char *const dirs[] = {"in", "out", "inout"};
	static const char *const versions[] = {"v1", "v2"};
	static const char *const roles[] = {"server", "client"};
	static const char *const net_keys[] = {"$schema", "protocol",         "name",  "direction",
	                                       "role",    "comm_raw_version", "local", "remote",
	                                       "options", "expected_clients"};
	static const char *const udp_keys[] = {"$schema",          "protocol", "name",
	                                       "direction",        "local",    "remote",
	                                       "comm_raw_version", "options"};
	static const char *const shm_keys[] = {"$schema",          "protocol",  "name",
	                                       "direction",        "impl_type", "asset_name",
	                                       "comm_raw_version", "io"};
	hako_comm_config_t *cc = c->out;
	int r, proto = 0, dir = 2, ver = 1, role = 0;
	if (!json_is_object(root)) {
		return fail(c, "must be an object");
	}
	comm_defaults(cc);
	if ((r = get_enum(c, root, "protocol", 1, protocols, COUNT(protocols), &proto)) != 0) {
		return r;
	}
	cc->protocol = (hako_comm_protocol_t)proto;
	switch (cc->protocol) {
	case HAKO_COMM_UDP: r = check_keys(c, root, udp_keys, COUNT(udp_keys)); break;
	case HAKO_COMM_SHM: r = check_keys(c, root, shm_keys, COUNT(shm_keys)); break;
	default: r = check_keys(c, root, net_keys, COUNT(net_keys)); break;
	}
	if (r != 0) {
		return r;
	}
	if (json_object_get(root, "expected_clients") != NULL) {
		push_key(c, "expected_clients");
		return fail(c, "TCP mux (expected_clients) is not supported");
	}
	if ((r = get_string(c, root, "name", 0, cc->name, sizeof(cc->name))) != 0 ||
	    (r = get_enum(c, root, "direction", 0, dirs, COUNT(dirs), &dir)) != 0 ||
	    (r = get_enum(c, root, "comm_raw_version", 0, versions, COUNT(versions), &ver)) != 0) {
		return r;
	}
	cc->direction = (hako_comm_direction_t)(dir + 1);
	cc->raw_version = ver + 1;
	if (cc->protocol == HAKO_COMM_SHM) {
		return load_shm(c, root, cc);
	}
	if (cc->protocol != HAKO_COMM_UDP) {
		if ((r = get_enum(c, root, "role", 1, roles, COUNT(roles), &role)) != 0) {
			return r;
		}
		cc->role = (hako_comm_role_t)(role + 1);
	}
	if ((r = load_addr(c, root, "local", &cc->local)) != 0 ||
	    (r = load_addr(c, root, "remote", &cc->remote)) != 0 ||
	    (r = check_addrs(c, root, cc)) != 0) {
		return r;
	}
	json_t *o = get_object(c, root, "options", 0, &r);
	if (o == NULL && r != 0) {
		return r;
	}
	if (o != NULL) {
		r = cc->protocol == HAKO_COMM_TCP   ? load_tcp_options(c, o, cc)
		    : cc->protocol == HAKO_COMM_UDP ? load_udp_options(c, o, cc)
		                                    : load_ws_options(c, o, cc);
		if (r != 0) {
			return r;
		}
		pop(c);
	}
	if (cc->protocol != HAKO_COMM_UDP) {
		stream_defaults(cc);
	}
	return 0;
}

static void comm_free(hako_comm_config_t *cc)
{
	if (cc == NULL) {
		return;
	}
	for (size_t i = 0; i < cc->robot_count; i++) {
		free(cc->robots[i].pdus);
	}
	free(cc->robots);
	free(cc);
}

/* ---- endpoint ---- */

static int load_endpoint_root(struct ctx *c, json_t *root)
{
	static const char *const keys[] = {"$schema", "name", "cache", "comm", "pdu_def_path"};
	hako_endpoint_config_t *cfg = c->out;
	char rel[HAKO_ENDPOINT_PATH_MAX], resolved[HAKO_ENDPOINT_PATH_MAX];
	hako_error_t sub;
	int r, present = 0;
	if (!json_is_object(root)) {
		return fail(c, "must be an object");
	}
	if ((r = check_keys(c, root, keys, COUNT(keys))) != 0 ||
	    (r = get_string(c, root, "name", 1, cfg->name, sizeof(cfg->name))) != 0) {
		return r;
	}
	/* pdudef first: the comm's shm robots are checked against it */
	if ((r = get_path_or_null(c, root, "pdu_def_path", 0, rel, sizeof(rel), &present)) != 0) {
		return r;
	}
	if (present) {
		push_key(c, "pdu_def_path");
		if ((r = resolve(c, rel, resolved, sizeof(resolved))) != 0) {
			return r;
		}
		r = hako_pdudef_load(resolved, &cfg->pdudef, &sub);
		if (r != 0) {
			return hakoi_jctx_sub_error(&c->j, r, &sub, resolved);
		}
		pop(c);
	}
	if ((r = get_path_or_null(c, root, "cache", 1, rel, sizeof(rel), &present)) != 0) {
		return r;
	}
	push_key(c, "cache");
	if (!present) {
		return fail(c, "must be a path (an endpoint always has a cache)");
	}
	if ((r = resolve(c, rel, cfg->cache.path, sizeof(cfg->cache.path))) != 0) {
		return r;
	}
	r = load_file(cfg->cache.path, &sub, NULL, load_cache_root, &cfg->cache);
	if (r != 0) {
		return hakoi_jctx_sub_error(&c->j, r, &sub, cfg->cache.path);
	}
	pop(c);
	if ((r = get_path_or_null(c, root, "comm", 0, rel, sizeof(rel), &present)) != 0) {
		return r;
	}
	if (!present) {
		return 0;
	}
	push_key(c, "comm");
	if ((cfg->comm = calloc(1, sizeof(*cfg->comm))) == NULL) {
		return fail_oom(c);
	}
	if ((r = resolve(c, rel, cfg->comm->path, sizeof(cfg->comm->path))) != 0) {
		return r;
	}
	r = load_file(cfg->comm->path, &sub, cfg->pdudef, load_comm_root, cfg->comm);
	if (r != 0) {
		return hakoi_jctx_sub_error(&c->j, r, &sub, cfg->comm->path);
	}
	if (cfg->comm->protocol == HAKO_COMM_SHM && cfg->pdudef == NULL) {
		return fail(c, "an shm comm needs pdu_def_path");
	}
	pop(c);
	return 0;
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
		r = load_file(path, err, NULL, load_endpoint_root, cfg);
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

struct container_arg {
	hako_endpoint_container_t *ct;
	const char *node_id;
};

static int load_entry(struct ctx *c, json_t *e, hako_endpoint_entry_t *en, int load)
{
	static const char *const keys[] = {"id", "config_path", "direction", "mode"};
	static const char *const dirs[] = {"in", "out", "inout"};
	char rel[HAKO_ENDPOINT_PATH_MAX];
	int r, dir = -1;
	if (!json_is_object(e)) {
		return fail(c, "must be an object");
	}
	if ((r = check_keys(c, e, keys, COUNT(keys))) != 0 ||
	    (r = get_string(c, e, "id", 1, en->id, sizeof(en->id))) != 0 ||
	    (r = get_string(c, e, "config_path", 1, rel, sizeof(rel))) != 0 ||
	    (r = get_enum(c, e, "direction", 0, dirs, COUNT(dirs), &dir)) != 0 ||
	    (r = get_string(c, e, "mode", 0, en->mode, sizeof(en->mode))) != 0) {
		return r;
	}
	if (dir >= 0) {
		snprintf(en->direction, sizeof(en->direction), "%s", dirs[dir]);
	}
	push_key(c, "config_path");
	if ((r = resolve(c, rel, en->config_path, sizeof(en->config_path))) != 0) {
		return r;
	}
	if (load) {
		hako_error_t sub;
		r = hako_endpoint_config_load(en->config_path, &en->config, &sub);
		if (r != 0) {
			return hakoi_jctx_sub_error(&c->j, r, &sub, en->config_path);
		}
	}
	pop(c);
	return 0;
}

static int load_node(struct ctx *c, json_t *n, int mine)
{
	static const char *const keys[] = {"nodeId", "endpoints"};
	struct container_arg *arg = c->out;
	hako_endpoint_container_t *ct = arg->ct;
	hako_endpoint_entry_t scratch;
	char node[HAKO_ENDPOINT_NAME_MAX];
	int r;
	if (!json_is_object(n)) {
		return fail(c, "must be an object");
	}
	if ((r = check_keys(c, n, keys, COUNT(keys))) != 0 ||
	    (r = get_string(c, n, "nodeId", 1, node, sizeof(node))) != 0) {
		return r;
	}
	json_t *a = json_object_get(n, "endpoints");
	push_key(c, "endpoints");
	if (a == NULL) {
		return fail_missing(c, "an array");
	}
	if (!json_is_array(a)) {
		return fail(c, "must be an array");
	}
	if (mine && json_array_size(a) > 0 &&
	    (ct->entries = calloc(json_array_size(a), sizeof(*ct->entries))) == NULL) {
		return fail_oom(c);
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		hako_endpoint_entry_t *en = mine ? &ct->entries[i] : &scratch;
		memset(&scratch, 0, sizeof(scratch));
		push_index(c, i);
		if (mine) {
			ct->count = i + 1;
		}
		if ((r = load_entry(c, json_array_get(a, i), en, mine)) != 0) {
			return r;
		}
		for (size_t j = 0; mine && j < i; j++) {
			if (strcmp(ct->entries[j].id, en->id) == 0) {
				push_key(c, "id");
				return fail(c, "id \"%s\" is already used by endpoints[%zu]",
				            en->id, j);
			}
		}
		pop(c);
	}
	pop(c);
	return 0;
}

static int load_container_root(struct ctx *c, json_t *root)
{
	struct container_arg *arg = c->out;
	int r, found = -1;
	if (!json_is_array(root)) {
		return fail(c, "must be an array of {nodeId, endpoints}");
	}
	for (size_t i = 0; i < json_array_size(root); i++) {
		json_t *n = json_array_get(root, i);
		json_t *id = json_is_object(n) ? json_object_get(n, "nodeId") : NULL;
		int mine = json_is_string(id) && strcmp(json_string_value(id), arg->node_id) == 0;
		push_index(c, i);
		if (mine && found >= 0) {
			push_key(c, "nodeId");
			return fail(c, "node \"%s\" is already listed at [%d]", arg->node_id,
			            found);
		}
		if ((r = load_node(c, n, mine)) != 0) {
			return r;
		}
		if (mine) {
			found = (int)i;
		}
		pop(c);
	}
	if (found < 0) {
		return fail(c, "node \"%s\" is not in the container", arg->node_id);
	}
	return 0;
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
	hako_endpoint_container_t *ct = calloc(1, sizeof(*ct));
	if (ct == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	int r = check_path(path, sizeof(ct->path), err);
	if (r == 0) {
		r = check_path(node_id, sizeof(ct->node_id), err);
	}
	if (r == 0) {
		struct container_arg arg = {.ct = ct, .node_id = node_id};
		snprintf(ct->path, sizeof(ct->path), "%s", path);
		snprintf(ct->node_id, sizeof(ct->node_id), "%s", node_id);
		r = load_file(path, err, NULL, load_container_root, &arg);
	}
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
	char *text = NULL;
	size_t len = 0;
	int e = hakoi_read_file(file, &text, &len);
	if (e != 0) {
		return hako_error_set(err, hakoi_read_file_code(e), file, 0, 0, "cannot open: %s",
		                      hakoi_read_file_strerror(e));
	}
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	json_t *value = json_is_object(root) ? json_object_get(root, key) : NULL;
	hako_endpoint_container_t *ct = NULL;
	int r = 0;
	if (root == NULL) {
		r = hako_error_set(err, HAKO_ECONFIG, file, je.line, je.column, "invalid JSON: %s",
		                   je.text);
	} else if (value == NULL) {
		r = hako_error_set(err, HAKO_ECONFIG, file, 0, 0, "%s: missing", key);
	} else if ((ct = calloc(1, sizeof(*ct))) == NULL) {
		r = hako_error_set(err, HAKO_ENOMEM, file, 0, 0, "out of memory");
	} else if ((r = check_path(file, sizeof(ct->path), err)) == 0 &&
	           (r = check_path(node_id, sizeof(ct->node_id), err)) == 0) {
		struct container_arg arg = {.ct = ct, .node_id = node_id};
		struct ctx c = {.j = {.err = err, .file = file, .text = text, .len = len},
		                .def = NULL,
		                .out = &arg};
		snprintf(ct->path, sizeof(ct->path), "%s", file);
		snprintf(ct->node_id, sizeof(ct->node_id), "%s", node_id);
		push_key(&c, key);
		r = load_container_root(&c, value);
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
