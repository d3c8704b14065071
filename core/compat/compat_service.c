/* Hakoniwa's service API: the services of this process. Loading the service file, making the
 * channels of each service (hako_asset_service_initialize), the table of clients and server
 * every process reads, and finding a service by name or id. The server side is in
 * compat_service_server.c, the client side in compat_service_client.c; compat_service.h says how
 * the channels and the table are used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat_service.h"
#include "hakoi/cfg.h"
#include "hako/log.h"
#include "hako/msg.h"

struct hakoi_services hakoi_services = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- the service file ---- */

struct load {
	struct svc *svcs;
	size_t count;
	long long meta;
	hako_msg_registry_t *reg;
};

#define SVC struct svc
static const hakoi_field_t size_server_fields[] = {
    HAKOI_INT("baseSize", HAKOI_F_REQUIRED, SVC, server_base, 0, 1 << 30),
    HAKOI_INT("heapSize", 0, SVC, server_heap, 0, 1 << 30),
    HAKOI_END,
};
static const hakoi_field_t size_client_fields[] = {
    HAKOI_INT("baseSize", HAKOI_F_REQUIRED, SVC, client_base, 0, 1 << 30),
    HAKOI_INT("heapSize", 0, SVC, client_heap, 0, 1 << 30),
    HAKOI_END,
};
static const hakoi_field_t size_fields[] = {
    {.key = "server",
     .kind = HAKOI_K_OBJECT,
     .flags = HAKOI_F_REQUIRED,
     .fields = size_server_fields},
    {.key = "client",
     .kind = HAKOI_K_OBJECT,
     .flags = HAKOI_F_REQUIRED,
     .fields = size_client_fields},
    HAKOI_END,
};

/* The base size of <type><suffix> from the registry, or 0 when the registry does not know it
 * (then the service file's size stands). */
static uint32_t packet_fixed(struct load *l, const char *type, const char *suffix)
{
	char full[2 * HAKO_NAME_MAX];
	const hako_msg_type_t *t = NULL;
	hako_error_t err;
	snprintf(full, sizeof(full), "%s%s", type, suffix);
	if (l->reg == NULL || hako_msg_registry_get(l->reg, full, &t, &err) != 0) {
		return 0;
	}
	return hako_msg_pdu_fixed_size(t);
}

static int service_check(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	struct load *l = w->user;
	struct svc *s = base;
	size_t i = hakoi_walk_index(w);
	for (size_t j = 0; j < i; j++) {
		if (strcmp(l->svcs[j].name, s->name) == 0) {
			hakoi_walk_push_key(w, "name");
			return hakoi_walk_fail_dup(w, j, "\"%s\"", s->name);
		}
	}
	long long req = l->meta + s->server_base + s->server_heap;
	long long res = l->meta + s->client_base + s->client_heap;
	/* Without the type in the registry, the packet is as long as the file says. */
	uint32_t rq = packet_fixed(l, s->type, "RequestPacket");
	uint32_t rs = packet_fixed(l, s->type, "ResponsePacket");
	s->req_fixed = rq != 0 ? rq : (uint32_t)((l->meta + s->server_base + 7) / 8 * 8);
	s->res_fixed = rs != 0 ? rs : (uint32_t)((l->meta + s->client_base + 7) / 8 * 8);
	if (s->req_fixed > req || s->req_fixed < HAKO_PDU_META_SIZE + HDR_SIZE) {
		hakoi_walk_push_key(w, "pduSize");
		hakoi_walk_push_key(w, "server");
		return hakoi_walk_fail(
		    w,
		    "%lld bytes (pduMetaDataSize + baseSize + heapSize) cannot hold "
		    "a request: %s%s needs %u",
		    req, rq != 0 ? s->type : "a ServiceRequestHeader",
		    rq != 0 ? "RequestPacket" : "", rq != 0 ? rq : HAKO_PDU_META_SIZE + HDR_SIZE);
	}
	if (s->res_fixed > res || s->res_fixed < HAKO_PDU_META_SIZE + HDR_SIZE) {
		hakoi_walk_push_key(w, "pduSize");
		hakoi_walk_push_key(w, "client");
		return hakoi_walk_fail(
		    w,
		    "%lld bytes (pduMetaDataSize + baseSize + heapSize) cannot hold "
		    "a response: %s%s needs %u",
		    res, rs != 0 ? s->type : "a ServiceResponseHeader",
		    rs != 0 ? "ResponsePacket" : "", rs != 0 ? rs : HAKO_PDU_META_SIZE + HDR_SIZE);
	}
	s->req_size = (uint32_t)req;
	s->res_size = (uint32_t)res;
	return 0;
}

static const hakoi_field_t service_fields[] = {
    HAKOI_STRING("name", HAKOI_F_REQUIRED, SVC, name),
    HAKOI_STRING("type", HAKOI_F_REQUIRED, SVC, type),
    HAKOI_INT("maxClients", HAKOI_F_REQUIRED, SVC, max_clients, 1, HAKO_SERVICE_MAX_CLIENTS),
    {.key = "pduSize", .kind = HAKOI_K_OBJECT, .flags = HAKOI_F_REQUIRED, .fields = size_fields},
    HAKOI_END,
};
#undef SVC

static const hakoi_field_t service_elem = {.kind = HAKOI_K_OBJECT, .fields = service_fields};

#define LOAD struct load
static const hakoi_field_t file_fields[] = {
    /* Every size in the file counts it; hako's meta header is 24 bytes, like Hakoniwa's. */
    HAKOI_INT("pduMetaDataSize", HAKOI_F_REQUIRED, LOAD, meta, HAKO_PDU_META_SIZE,
              HAKO_PDU_META_SIZE),
    {.key = "services",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_ELEMS_NEW(LOAD, svcs, count),
     .elem = &service_elem,
     .check = service_check},
    HAKOI_IGNORE("pdu_config_path"),
    HAKOI_IGNORE("nodes"),
    HAKOI_IGNORE("$schema"),
    HAKOI_END,
};
#undef LOAD

static int load_file(const char *path, struct load *l)
{
	hako_error_t err;
	char msg[1200];
	json_t *root = NULL;
	char *text = NULL;
	size_t len = 0;
	memset(l, 0, sizeof(*l));
	int r = hakoi_cfg_load(path, &err, &root, &text, &len);
	if (r == 0) {
		if (hako_msg_registry_create(&l->reg) != 0) {
			l->reg = NULL;
		}
		hakoi_walk_t w;
		hakoi_walk_init(&w, &err, path, text, len, l);
		r = hakoi_walk_object(&w, root, file_fields, l);
		hako_msg_registry_destroy(l->reg);
		l->reg = NULL;
		json_decref(root);
		free(text);
	}
	if (r != 0) {
		free(l->svcs);
		l->svcs = NULL;
		return failf("hako_asset_service_initialize: %s",
		             hako_error_format(&err, msg, sizeof(msg)));
	}
	return 0;
}

/* ---- the table of clients and server ---- */

/* Read the table; a never-written (or reset) one comes back empty and set up. */
static int table_read(struct svc *s, uint8_t *buf)
{
	size_t size = table_size(s->max_clients);
	size_t len = 0;
	int r = hako_channel_read(s->table, buf, size, &len, NULL);
	if (r != 0 && r != HAKO_ETOOBIG) {
		return r;
	}
	struct table_head h;
	memcpy(&h, buf, sizeof(h));
	if (len != size || h.magic != TABLE_MAGIC || h.version != TABLE_VERSION ||
	    h.max_clients != (uint32_t)s->max_clients) {
		memset(buf, 0, size);
		h = (struct table_head){.magic = TABLE_MAGIC,
		                        .version = TABLE_VERSION,
		                        .max_clients = (uint32_t)s->max_clients};
		memcpy(buf, &h, sizeof(h));
	}
	return 0;
}

/* Change the table under the domain lock: fn edits buf and returns 0 (write it), 1 (leave it)
 * or -1 (fail; it set the message). */
int hakoi_svc_table_update(struct svc *s, int (*fn)(struct svc *, uint8_t *, void *), void *arg)
{
	size_t size = table_size(s->max_clients);
	uint8_t *buf = malloc(size);
	if (buf == NULL) {
		return failf("service %s: out of memory", s->name);
	}
	int r = hakoi_lock(hakoi_services.dom);
	if (r != 0) {
		free(buf);
		return failf("service %s: cannot lock domain '%s': %s", s->name,
		             hako_domain_name(hakoi_services.dom), hako_strerror(r));
	}
	r = table_read(s, buf);
	if (r == 0) {
		r = fn(s, buf, arg);
		if (r == 0 && hako_channel_write(s->table, buf, size) != 0) {
			r = failf("service %s: cannot write its table of clients", s->name);
		}
	} else {
		r = failf("service %s: cannot read its table of clients: %s", s->name,
		          hako_strerror(r));
	}
	hakoi_unlock(hakoi_services.dom);
	free(buf);
	return r < 0 ? -1 : 0;
}

/* Read the table outside the lock (for checks on the data path). */
uint8_t *hakoi_svc_table_copy(struct svc *s)
{
	uint8_t *buf = malloc(table_size(s->max_clients));
	if (buf != NULL && table_read(s, buf) != 0) {
		free(buf);
		buf = NULL;
	}
	return buf;
}

/* ---- initialize ---- */

void hakoi_svc_server_free(struct server *sv)
{
	if (sv != NULL) {
		free(sv->state);
		free(sv->seen);
		free(sv->holder);
		free(sv->tmp);
		free(sv->request);
		free(sv->response);
		free(sv->answer);
		free(sv);
	}
}

void hakoi_svc_client_free(struct client *c)
{
	if (c != NULL) {
		free(c->tmp);
		free(c->request);
		free(c->response);
		free(c);
	}
}

static void svc_free(struct svc *s)
{
	hakoi_svc_server_free(s->server);
	for (int i = 0; s->clients != NULL && i < s->max_clients; i++) {
		hakoi_svc_client_free(s->clients[i]);
	}
	free(s->clients);
	free(s->req);
	free(s->res);
	memset(s, 0, sizeof(*s));
}

void hakoi_service_forget(void)
{
	pthread_mutex_lock(&hakoi_services.lock);
	for (size_t i = 0; i < hakoi_services.count; i++) {
		svc_free(&hakoi_services.svcs[i]);
	}
	free(hakoi_services.svcs);
	hakoi_services.svcs = NULL;
	hakoi_services.count = 0;
	hakoi_services.dom = NULL;
	pthread_mutex_unlock(&hakoi_services.lock);
}

static int create_channel(hako_domain_t *dom, const struct svc *s, int32_t id, size_t size,
                          hako_channel_t **ch)
{
	int r = hako_channel_create(dom, s->name, id, size, ch);
	if (r != 0) {
		return failf(
		    "hako_asset_service_initialize: service %s: channel %d (%zu bytes): %s%s",
		    s->name, id, size, hako_strerror(r),
		    r == HAKO_ESIZE    ? " (it exists with another size: every process must "
		                         "use the same service file)"
		    : r == HAKO_ENOSPC ? " (the domain is full: start the conductor with larger "
		                         "max_channels / arena_bytes)"
		                       : "");
	}
	return 0;
}

static int svc_open(hako_domain_t *dom, struct svc *s)
{
	s->req = calloc((size_t)s->max_clients, sizeof(*s->req));
	s->res = calloc((size_t)s->max_clients, sizeof(*s->res));
	s->clients = calloc((size_t)s->max_clients, sizeof(*s->clients));
	if (s->req == NULL || s->res == NULL || s->clients == NULL) {
		return failf("hako_asset_service_initialize: out of memory");
	}
	for (int i = 0; i < s->max_clients; i++) {
		if (create_channel(dom, s, 2 * i, s->req_size, &s->req[i]) != 0 ||
		    create_channel(dom, s, 2 * i + 1, s->res_size, &s->res[i]) != 0) {
			return -1;
		}
	}
	return create_channel(dom, s, HAKO_SERVICE_CLIENTS_CHANNEL, table_size(s->max_clients),
	                      &s->table);
}

int hako_asset_service_initialize(const char *service_config_path)
{
	hako_domain_t *dom = hako_asset_domain();
	if (dom == NULL) {
		return failf(
		    "hako_asset_service_initialize: register the asset (hako_asset_register) "
		    "or attach (hako_asset_attach_core) first");
	}
	if (service_config_path == NULL || service_config_path[0] == '\0') {
		return failf("hako_asset_service_initialize: no service file");
	}
	struct load l;
	if (load_file(service_config_path, &l) != 0) {
		return -1;
	}
	int rc = 0;
	pthread_mutex_lock(&hakoi_services.lock);
	hakoi_services.dom = dom;
	for (size_t i = 0; i < l.count && rc == 0; i++) {
		struct svc *s = &l.svcs[i];
		struct svc *known = NULL;
		for (size_t j = 0; j < hakoi_services.count; j++) {
			if (strcmp(hakoi_services.svcs[j].name, s->name) == 0) {
				known = &hakoi_services.svcs[j];
			}
		}
		if (known != NULL) { /* initialized twice: the same service must be the same */
			if (known->max_clients != s->max_clients ||
			    known->req_size != s->req_size || known->res_size != s->res_size) {
				rc = failf("hako_asset_service_initialize: %s: service %s was "
				           "initialized before with other sizes or maxClients",
				           service_config_path, s->name);
			}
			continue;
		}
		struct svc *n =
		    realloc(hakoi_services.svcs, (hakoi_services.count + 1) * sizeof(*n));
		if (n == NULL) {
			rc = failf("hako_asset_service_initialize: out of memory");
			break;
		}
		hakoi_services.svcs = n;
		hakoi_services.svcs[hakoi_services.count] = *s;
		rc = svc_open(dom, &hakoi_services.svcs[hakoi_services.count]);
		/* Counted also on failure: svc_free releases what it opened. */
		hakoi_services.count++;
	}
	pthread_mutex_unlock(&hakoi_services.lock);
	free(l.svcs);
	return rc;
}

/* The service of an id, or NULL with the message set. Called under hakoi_services.lock. */
struct svc *hakoi_svc_of(const char *who, int service_id)
{
	if (hakoi_services.dom == NULL || hakoi_services.dom != hako_asset_domain()) {
		failf("%s: call hako_asset_service_initialize first", who);
		return NULL;
	}
	if (service_id < 0 || (size_t)service_id >= hakoi_services.count) {
		failf("%s: no service with id %d (%zu services)", who, service_id,
		      hakoi_services.count);
		return NULL;
	}
	return &hakoi_services.svcs[service_id];
}

int hakoi_svc_find(const char *who, const char *name)
{
	if (hakoi_services.dom == NULL || hakoi_services.dom != hako_asset_domain()) {
		return failf("%s: call hako_asset_service_initialize first", who);
	}
	if (name == NULL || name[0] == '\0') {
		return failf("%s: no service name", who);
	}
	for (size_t i = 0; i < hakoi_services.count; i++) {
		if (strcmp(hakoi_services.svcs[i].name, name) == 0) {
			return (int)i;
		}
	}
	return failf("%s: no service \"%s\" in the service files read", who, name);
}

int hako_asset_service_get_channel_id(int service_id, int client_id, int *request_channel_id,
                                      int *response_channel_id)
{
	const char *who = "hako_asset_service_get_channel_id";
	if (request_channel_id == NULL || response_channel_id == NULL) {
		return failf("%s: NULL channel id pointer", who);
	}
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s = hakoi_svc_of(who, service_id);
	int r = -1;
	if (s != NULL && (client_id < 0 || client_id >= s->max_clients)) {
		failf("%s: %s has client slots 0..%d, not %d", who, s->name, s->max_clients - 1,
		      client_id);
	} else if (s != NULL) {
		*request_channel_id = 2 * client_id;
		*response_channel_id = 2 * client_id + 1;
		r = 0;
	}
	pthread_mutex_unlock(&hakoi_services.lock);
	return r;
}
