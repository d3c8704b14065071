/* A node's conductor file: Hakoniwa's srv-NN.json (a server: "clients") or cli-NN.json (a
 * client: "node_id"), as its generator writes them, plus hako's own fields. A table for the
 * config toolkit (hakoi/cfg.h). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/conductor.h"
#include "hakoi/cfg.h"

#define MAX_USEC (1ll << 40)
#define MAX_MS   3600000

static const char *const publish_names[] = {"immediate", "delta_boundary", NULL};
static const char *const loss_names[] = {"error", "drop", NULL};
static const char *const auth_names[] = {"curve", "none", NULL};
static const char *const time_source_names[] = {"hakoniwa_poll", "hakoniwa_callback", "hakoniwa",
                                                "real",          "virtual",           NULL};

/* What is read into, beside the config itself. */
struct load {
	hako_conductor_config_t *cfg;
	int is_server;
};

static hako_time_t gcd(hako_time_t a, hako_time_t b)
{
	while (b != 0) {
		hako_time_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

int hako_conductor_check_timing(hako_time_t delta, hako_time_t dmax, hako_conductor_publish_t mode,
                                hako_time_t interval, char *why, size_t why_len)
{
	if (delta < 1 || dmax < delta) {
		snprintf(
		    why, why_len,
		    "max_delay_time_usec (%lld) must be >= delta_time_usec (%lld): a node's world "
		    "may run at most Dmax ahead of another's, and it moves by delta",
		    (long long)dmax, (long long)delta);
		return HAKO_ECONFIG;
	}
	if (mode == HAKO_PUBLISH_DELTA_BOUNDARY) {
		/* A node's time is sent when it crosses a multiple of the interval, so the time a
		 * peer knows lags by up to interval - gcd(delta, interval); a node can always step
		 * while that lag + delta <= Dmax. */
		hako_time_t lag = interval - gcd(delta, interval);
		if (interval < 1 || delta + lag > dmax) {
			snprintf(
			    why, why_len,
			    "with simtime_publish_interval_usec %lld a node's known time lags by "
			    "up to "
			    "%lld us, and delta %lld + %lld > Dmax %lld: the nodes would wait for "
			    "each other for ever; use an interval <= Dmax - delta (or a divisor of "
			    "delta)",
			    (long long)interval, (long long)lag, (long long)delta, (long long)lag,
			    (long long)dmax);
			return HAKO_ECONFIG;
		}
	}
	return 0;
}

static uint32_t fnv1a(uint32_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		h = (h ^ p[i]) * 16777619u;
	}
	return h;
}

/* What every node of a federation must agree on. */
static uint32_t federation_hash(const hako_conductor_config_t *c)
{
	char text[256];
	int n = snprintf(
	    text, sizeof(text), "%s|%lld|%lld|%d|%lld", c->server_id, (long long)c->delta_usec,
	    (long long)c->max_delay_usec, (int)c->publish_mode,
	    c->publish_mode == HAKO_PUBLISH_DELTA_BOUNDARY ? (long long)c->publish_interval_usec
	                                                   : 0ll);
	return fnv1a(2166136261u, text, (size_t)n);
}

/* A client entry of a server file: its node id (the rest is the generator's wiring). */
struct client_entry {
	char client[HAKO_CONDUCTOR_ID_MAX];
	char server_node[HAKO_CONDUCTOR_ID_MAX];
};

static int client_store(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const struct client_entry *e = base;
	struct load *l = w->user;
	hako_conductor_config_t *c = l->cfg;
	size_t i = hakoi_walk_index(w);
	for (size_t j = 0; j < c->client_count; j++) {
		if (strcmp(c->clients[j], e->client) == 0) {
			hakoi_walk_push_key(w, "client_node_id");
			return hakoi_walk_fail_dup(w, j, "client \"%s\"", e->client);
		}
	}
	if (i >= HAKO_CONDUCTOR_MAX_CLIENTS) {
		return hakoi_walk_fail(w, "a server takes at most %d clients",
		                       HAKO_CONDUCTOR_MAX_CLIENTS);
	}
	snprintf(c->clients[c->client_count++], HAKO_CONDUCTOR_ID_MAX, "%s", e->client);
	return 0;
}

static const hakoi_field_t client_fields[] = {
    HAKOI_STRING("client_node_id", HAKOI_F_REQUIRED, struct client_entry, client),
    HAKOI_STRING("server_node_id", 0, struct client_entry, server_node),
    HAKOI_IGNORE("srv_to_client_endpoint_id"),
    HAKOI_IGNORE("client_to_srv_endpoint_id"),
    HAKOI_IGNORE("bridge_monitor_runtime_config_path"),
    HAKOI_END,
};

static int read_clients(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	static const hakoi_field_t elem = {.kind = HAKOI_K_OBJECT,
	                                   .fields = client_fields,
	                                   .size = sizeof(struct client_entry),
	                                   .check = client_store};
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of {client_node_id, ...}");
	}
	if (json_array_size(v) == 0) {
		return hakoi_walk_fail(w, "must not be empty: a server has clients");
	}
	for (size_t i = 0; i < json_array_size(v); i++) {
		struct client_entry e;
		memset(&e, 0, sizeof(e));
		hakoi_walk_push_index(w, i);
		/* elem.check stores it (client_store) */
		int r = hakoi_walk_value(w, json_array_get(v, i), &elem, &e);
		if (r != 0) {
			return r;
		}
		hakoi_walk_pop(w);
	}
	((struct load *)w->user)->is_server = 1;
	return 0;
}

/* A ZeroMQ address only this machine can reach. */
static int is_loopback(const char *a)
{
	static const char *const local[] = {
	    "tcp://127.", "tcp://localhost:", "tcp://[::1]:", "ipc://", "inproc://", NULL};
	for (int i = 0; local[i] != NULL; i++) {
		if (strncmp(a, local[i], strlen(local[i])) == 0) {
			return 1;
		}
	}
	return 0;
}

static int check_all(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)base;
	(void)f;
	struct load *l = w->user;
	hako_conductor_config_t *c = l->cfg;
	char why[400];
	if (l->is_server == (c->node_id[0] != '\0')) {
		return hakoi_walk_fail(w, "%s",
		                       l->is_server ? "has both \"clients\" (a server's file) and "
		                                      "\"node_id\" (a client's file)"
		                                    : "a server's file has \"clients\", a client's "
		                                      "\"node_id\": neither is here");
	}
	c->role = l->is_server ? HAKO_CONDUCTOR_SERVER : HAKO_CONDUCTOR_CLIENT;
	if (c->publish_mode == HAKO_PUBLISH_DELTA_BOUNDARY && c->publish_interval_usec == 0) {
		c->publish_interval_usec = c->delta_usec;
	}
	if (l->is_server) {
		snprintf(c->node_id, sizeof(c->node_id), "%s", c->server_id);
	}
	if (hako_conductor_check_timing(c->delta_usec, c->max_delay_usec, c->publish_mode,
	                                c->publish_interval_usec, why, sizeof(why)) != 0) {
		return hakoi_walk_fail(w, "%s", why);
	}
	/* Default addresses from the server's id, so that its clients find it without a word. */
	unsigned port =
	    40000u + (fnv1a(2166136261u, c->server_id, strlen(c->server_id)) % 9000u) * 2u;
	if (c->control_address[0] == '\0') {
		snprintf(c->control_address, sizeof(c->control_address), "tcp://127.0.0.1:%u",
		         port);
	}
	if (c->time_address[0] == '\0') {
		snprintf(c->time_address, sizeof(c->time_address), "tcp://127.0.0.1:%u", port + 1);
	}
	if (c->peer_timeout_ms <= c->heartbeat_ms) {
		return hakoi_walk_fail(w,
		                       "peer_timeout_ms (%u) must be more than heartbeat_ms (%u)",
		                       c->peer_timeout_ms, c->heartbeat_ms);
	}
	if (c->auth == HAKO_CONDUCTOR_AUTH_NONE &&
	    (!is_loopback(c->control_address) || !is_loopback(c->time_address))) {
		int ctl = !is_loopback(c->control_address);
		hakoi_walk_push_key(w, "auth");
		return hakoi_walk_fail(
		    w,
		    "\"none\" is for a federation on loopback only, and %s %s is "
		    "not loopback: anyone who reaches it could drive the federation",
		    ctl ? "control_address" : "time_address",
		    ctl ? c->control_address : c->time_address);
	}
	if (c->keys_dir[0] == '\0') {
		int r = hakoi_walk_resolve(w, "keys", c->keys_dir, sizeof(c->keys_dir));
		if (r != 0) {
			return r;
		}
	}
	c->config_hash = federation_hash(c);
	return 0;
}

#define CFG hako_conductor_config_t
static const hakoi_field_t fields[] = {
    /* Hakoniwa's */
    HAKOI_STRING("server_machine_id", HAKOI_F_REQUIRED, CFG, server_id),
    HAKOI_STRING("node_id", 0, CFG, node_id),
    HAKOI_CUSTOM("clients", 0, read_clients, "an array of {client_node_id, ...}"),
    HAKOI_INT("delta_time_usec", HAKOI_F_REQUIRED, CFG, delta_usec, 1, MAX_USEC),
    HAKOI_INT("max_delay_time_usec", HAKOI_F_REQUIRED, CFG, max_delay_usec, 1, MAX_USEC),
    HAKOI_INT("real_sleep_msec", HAKOI_F_UNSIGNED, CFG, real_sleep_msec, 0, MAX_MS),
    HAKOI_ENUM("simtime_publish_mode", 0, CFG, publish_mode, publish_names, NULL),
    HAKOI_INT("simtime_publish_interval_usec", 0, CFG, publish_interval_usec, 1, MAX_USEC),
    /* Checked, not stored: hako's nodes follow their domain by its change counter. */
    {.key = "time_source_type", .kind = HAKOI_K_ENUM, .names = time_source_names, .size = 0},
    HAKOI_IGNORE("srv_to_client_endpoint_id"),
    HAKOI_IGNORE("client_to_srv_endpoint_id"),
    HAKOI_IGNORE("endpoints_config_path"),
    HAKOI_IGNORE("remote_api_config_path"),
    HAKOI_IGNORE("bridge_config_path"),
    HAKOI_IGNORE("bridge_monitor_runtime_config_path"),
    HAKOI_IGNORE("$schema"),
    /* hako's own */
    HAKOI_STRING("domain", 0, CFG, domain),
    HAKOI_STRING("control_address", 0, CFG, control_address),
    HAKOI_STRING("time_address", 0, CFG, time_address),
    HAKOI_INT("heartbeat_ms", HAKOI_F_UNSIGNED, CFG, heartbeat_ms, 1, 60000),
    HAKOI_INT("peer_timeout_ms", HAKOI_F_UNSIGNED, CFG, peer_timeout_ms, 2, MAX_MS),
    HAKOI_ENUM("on_client_loss", 0, CFG, on_client_loss, loss_names, NULL),
    HAKOI_PATH("rd_config_path", 0, CFG, rd_config_path),
    HAKOI_ENUM("auth", 0, CFG, auth, auth_names, NULL),
    HAKOI_PATH("keys_dir", 0, CFG, keys_dir),
    HAKOI_CHECK(check_all),
    HAKOI_END,
};
#undef CFG

int hako_conductor_config_load(const char *path, hako_conductor_config_t **out, hako_error_t *err)
{
	hako_error_clear(err);
	if (out != NULL) {
		*out = NULL;
	}
	if (path == NULL || out == NULL) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0, "no path or no result pointer");
	}
	if (strlen(path) >= HAKO_CONDUCTOR_PATH_MAX) {
		return hako_error_set(err, HAKO_ENAMETOOLONG, path, 0, 0, "path too long");
	}
	json_t *root = NULL;
	char *text = NULL;
	size_t len = 0;
	int r = hakoi_cfg_load(path, err, &root, &text, &len);
	if (r != 0) {
		return r;
	}
	hako_conductor_config_t *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		json_decref(root);
		free(text);
		return hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->publish_mode = HAKO_PUBLISH_IMMEDIATE;
	c->publish_interval_usec = 0;
	c->heartbeat_ms = 100;
	c->peer_timeout_ms = 1000;
	c->on_client_loss = HAKO_CLIENT_LOSS_ERROR;
	struct load l = {.cfg = c};
	hakoi_walk_t w;
	hakoi_walk_init(&w, err, path, text, len, &l);
	r = hakoi_walk_object(&w, root, fields, c);
	json_decref(root);
	free(text);
	if (r != 0) {
		free(c);
		return r;
	}
	*out = c;
	return 0;
}

void hako_conductor_config_free(hako_conductor_config_t *cfg)
{
	free(cfg);
}
