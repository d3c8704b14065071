/* Hakoniwa's service API (hako_asset_service.h) over PDU channels of the process-default domain
 * of hako_asset.h.
 *
 * Each client slot i of a service has two channels, as in Hakoniwa: (service, 2i) carries its
 * requests, (service, 2i+1) the server's responses. A request or response is "new" when the
 * channel's write number moved since this side last looked, so nothing has to be consumed and
 * a request waiting while the server works on another client's stays in its channel until the
 * server's turn comes to it.
 *
 * Which process holds which slot, and which serves the service, is kept in a third channel
 * (service, HAKO_SERVICE_CLIENTS_CHANNEL): a small table changed only under the domain lock
 * (claims are rare) and read by anyone. A reset zeroes it with the other channels; the server
 * and the clients of this process write their entries back when they next use the service.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hakoi/cfg.h"
#include "hako/hako_asset.h"
#include "hako/hako_asset_service.h"
#include "hako/log.h"
#include "hako/msg.h"
#include "hako/pdu.h"
#include "internal.h"

/* ServiceRequestHeader / ServiceResponseHeader (hako_srv_msgs), at the start of a packet's
 * base: the offsets of Hakoniwa's layout (a test compares them with the registry's). */
#define HDR_REQUEST_ID   0u
#define HDR_SERVICE_NAME 4u
#define HDR_CLIENT_NAME  132u
#define HDR_NAME_LEN     128u
#define HDR_OPCODE       260u /* request */
#define HDR_POLL_MSEC    264u /* request: int32 */
#define HDR_STATUS       260u /* response */
#define HDR_PERCENTAGE   261u /* response */
#define HDR_RESULT_CODE  264u /* response: int32 */
#define HDR_SIZE         268u

#define TABLE_MAGIC   0x43565348u /* "HSVC" */
#define TABLE_VERSION 1u

struct table_owner {
	uint32_t pid;
	uint32_t pad;
	uint64_t start; /* the process's start time, against pid reuse */
};

struct table_head {
	uint32_t magic;
	uint32_t version;
	uint32_t max_clients;
	uint32_t pad;
	struct table_owner server;
};

struct table_slot {
	struct table_owner owner;
	char name[HAKO_SERVICE_CLIENT_NAME_MAX + 8];
};

enum { ST_IDLE = 0, ST_DOING = 1, ST_CANCELING = 2 };

/* One service of the service file, with its channels in this process. */
struct svc {
	char name[HAKO_NAME_MAX];
	char type[HAKO_NAME_MAX];
	int max_clients;
	long long server_base, server_heap, client_base, client_heap;
	uint32_t req_size, res_size;   /* channel sizes: whole packets */
	uint32_t req_fixed, res_fixed; /* meta + packet base rounded up to 8 */
	hako_channel_t *table;
	hako_channel_t **req; /* per slot */
	hako_channel_t **res;
	struct server *server;
	struct client **clients; /* per slot: the client of this process holding it, or NULL */
};

struct server {
	int current;                /* the slot being served, or looked at next */
	int *state;                 /* per slot */
	struct table_owner *holder; /* per slot: the client process of the request in progress */
	uint64_t *seen;
	uint32_t resets;
	uint8_t *tmp; /* a request just read */
	uint8_t *request;
	uint8_t *response;
	uint8_t *answer; /* a header-only answer (refusal, busy, progress, cancel) */
	int percentage;
	hako_time_t progress_at; /* world time of the last progress report, -1: none yet */
	char asset[HAKO_NAME_MAX];
};

struct client {
	HakoServiceHandleType handle;
	char name[HAKO_SERVICE_CLIENT_NAME_MAX + 1];
	int state;
	uint32_t request_id;
	uint64_t seen;
	uint32_t resets;
	int timeout_msec;
	int poll_msec;
	int percentage;
	hako_time_t heard_at;       /* world time of the request or the last word from the server */
	struct timespec checked_at; /* when the server's process was last looked at */
	uint32_t dead_server;       /* the pid found dead for the request in progress, 0: none */
	uint8_t *tmp;
	uint8_t *request;
	uint8_t *response;
	size_t response_len;
};

static struct {
	pthread_mutex_t lock;
	hako_domain_t *dom;
	struct svc *svcs;
	size_t count;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int failf(const char *fmt, ...)
{
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hakoi_compat_fail(HAKO_EINVAL, "%s", msg);
	return -1;
}

/* ---- little-endian-agnostic field access (the host's order, as the channels carry it) ---- */

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static int32_t get_i32(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

static void put_i32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
}

static void put_name(uint8_t *base, uint32_t off, const char *s)
{
	memset(base + off, 0, HDR_NAME_LEN);
	size_t n = strlen(s);
	memcpy(base + off, s, n < HDR_NAME_LEN - 1 ? n : HDR_NAME_LEN - 1);
}

/* 1 if the NUL-terminated header string at off equals s. */
static int name_is(const uint8_t *base, uint32_t off, const char *s)
{
	const char *f = (const char *)base + off;
	return memchr(f, '\0', HDR_NAME_LEN) != NULL && strcmp(f, s) == 0;
}

/* A packet of `fixed` bytes in a buffer of `size`: meta header, zeroed base. */
static void packet_init(uint8_t *buf, uint32_t size, uint32_t fixed)
{
	memset(buf, 0, size);
	put_u32(buf + 0, HAKO_PDU_MAGIC);
	put_u32(buf + 4, HAKO_PDU_VERSION);
	put_u32(buf + 8, HAKO_PDU_META_SIZE);
	put_u32(buf + 12, fixed);
	put_u32(buf + 16, fixed);
}

static hako_time_t world_now(void)
{
	return S.dom != NULL ? hako_domain_world_time(S.dom) : 0;
}

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

static size_t table_size(int max_clients)
{
	return sizeof(struct table_head) + (size_t)max_clients * sizeof(struct table_slot);
}

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

static struct table_slot *table_slot(uint8_t *buf, int i)
{
	return (struct table_slot *)(void *)(buf + sizeof(struct table_head) +
	                                     (size_t)i * sizeof(struct table_slot));
}

static struct table_owner self_owner(void)
{
	uint32_t pid = hakoi_self_pid();
	return (struct table_owner){.pid = pid, .start = hakoi_proc_start_time((int)pid)};
}

static int owner_alive(const struct table_owner *o)
{
	return o->pid != 0 && hakoi_proc_alive((int)o->pid, o->start);
}

static int owner_is_self(const struct table_owner *o)
{
	return o->pid == hakoi_self_pid();
}

/* Change the table under the domain lock: fn edits buf and returns 0 (write it), 1 (leave it)
 * or -1 (fail; it set the message). */
static int table_update(struct svc *s, int (*fn)(struct svc *, uint8_t *, void *), void *arg)
{
	size_t size = table_size(s->max_clients);
	uint8_t *buf = malloc(size);
	if (buf == NULL) {
		return failf("service %s: out of memory", s->name);
	}
	int r = hakoi_lock(S.dom);
	if (r != 0) {
		free(buf);
		return failf("service %s: cannot lock domain '%s': %s", s->name,
		             hako_domain_name(S.dom), hako_strerror(r));
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
	hakoi_unlock(S.dom);
	free(buf);
	return r < 0 ? -1 : 0;
}

/* Read the table outside the lock (for checks on the data path). */
static uint8_t *table_copy(struct svc *s)
{
	uint8_t *buf = malloc(table_size(s->max_clients));
	if (buf != NULL && table_read(s, buf) != 0) {
		free(buf);
		buf = NULL;
	}
	return buf;
}

/* ---- initialize ---- */

static void server_free(struct server *sv)
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

static void client_free(struct client *c)
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
	server_free(s->server);
	for (int i = 0; s->clients != NULL && i < s->max_clients; i++) {
		client_free(s->clients[i]);
	}
	free(s->clients);
	free(s->req);
	free(s->res);
	memset(s, 0, sizeof(*s));
}

void hakoi_service_forget(void)
{
	pthread_mutex_lock(&S.lock);
	for (size_t i = 0; i < S.count; i++) {
		svc_free(&S.svcs[i]);
	}
	free(S.svcs);
	S.svcs = NULL;
	S.count = 0;
	S.dom = NULL;
	pthread_mutex_unlock(&S.lock);
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
	pthread_mutex_lock(&S.lock);
	S.dom = dom;
	for (size_t i = 0; i < l.count && rc == 0; i++) {
		struct svc *s = &l.svcs[i];
		struct svc *known = NULL;
		for (size_t j = 0; j < S.count; j++) {
			if (strcmp(S.svcs[j].name, s->name) == 0) {
				known = &S.svcs[j];
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
		struct svc *n = realloc(S.svcs, (S.count + 1) * sizeof(*n));
		if (n == NULL) {
			rc = failf("hako_asset_service_initialize: out of memory");
			break;
		}
		S.svcs = n;
		S.svcs[S.count] = *s;
		rc = svc_open(dom, &S.svcs[S.count]);
		S.count++; /* counted also on failure: svc_free releases what it opened */
	}
	pthread_mutex_unlock(&S.lock);
	free(l.svcs);
	return rc;
}

/* The service of an id, or NULL with the message set. Called under S.lock. */
static struct svc *svc_of(const char *who, int service_id)
{
	if (S.dom == NULL || S.dom != hako_asset_domain()) {
		failf("%s: call hako_asset_service_initialize first", who);
		return NULL;
	}
	if (service_id < 0 || (size_t)service_id >= S.count) {
		failf("%s: no service with id %d (%zu services)", who, service_id, S.count);
		return NULL;
	}
	return &S.svcs[service_id];
}

static int svc_find(const char *who, const char *name)
{
	if (S.dom == NULL || S.dom != hako_asset_domain()) {
		return failf("%s: call hako_asset_service_initialize first", who);
	}
	if (name == NULL || name[0] == '\0') {
		return failf("%s: no service name", who);
	}
	for (size_t i = 0; i < S.count; i++) {
		if (strcmp(S.svcs[i].name, name) == 0) {
			return (int)i;
		}
	}
	return failf("%s: no service \"%s\" in the service files read", who, name);
}

/* ---- server ---- */

static int claim_server(struct svc *s, uint8_t *buf, void *arg)
{
	(void)arg;
	struct table_head h;
	memcpy(&h, buf, sizeof(h));
	if (owner_is_self(&h.server)) {
		return 1;
	}
	if (owner_alive(&h.server)) {
		return failf("hako_asset_service_server_create: service %s is served by process %u "
		             "already",
		             s->name, h.server.pid);
	}
	h.server = self_owner();
	memcpy(buf, &h, sizeof(h));
	return 0;
}

int hako_asset_service_server_create(const char *assetName, const char *serviceName)
{
	const char *who = "hako_asset_service_server_create";
	pthread_mutex_lock(&S.lock);
	int id = svc_find(who, serviceName);
	if (id < 0) {
		pthread_mutex_unlock(&S.lock);
		return -1;
	}
	struct svc *s = &S.svcs[id];
	if (s->server != NULL) { /* Hakoniwa gives the same id again */
		pthread_mutex_unlock(&S.lock);
		return id;
	}
	if (table_update(s, claim_server, NULL) != 0) {
		pthread_mutex_unlock(&S.lock);
		return -1;
	}
	struct server *sv = calloc(1, sizeof(*sv));
	if (sv != NULL) {
		sv->state = calloc((size_t)s->max_clients, sizeof(*sv->state));
		sv->seen = calloc((size_t)s->max_clients, sizeof(*sv->seen));
		sv->holder = calloc((size_t)s->max_clients, sizeof(*sv->holder));
		sv->tmp = malloc(s->req_size);
		sv->request = calloc(1, s->req_size);
		sv->response = calloc(1, s->res_size);
		sv->answer = malloc(s->res_size);
	}
	if (sv == NULL || sv->state == NULL || sv->seen == NULL || sv->holder == NULL ||
	    sv->tmp == NULL || sv->request == NULL || sv->response == NULL || sv->answer == NULL) {
		server_free(sv);
		pthread_mutex_unlock(&S.lock);
		return failf("%s: out of memory", who);
	}
	/* Requests written before the server existed are not taken (Hakoniwa registers its
	 * receive events here too): their clients time out or ask again. */
	for (int i = 0; i < s->max_clients; i++) {
		sv->seen[i] = hako_channel_seq(s->req[i]);
	}
	sv->resets = hako_domain_reset_count(S.dom);
	sv->progress_at = -1;
	snprintf(sv->asset, sizeof(sv->asset), "%s", assetName != NULL ? assetName : "");
	s->server = sv;
	pthread_mutex_unlock(&S.lock);
	HAKO_INFO("service %s: served by %s (pid %u), %d client slots", s->name,
	          assetName != NULL ? assetName : "an attached process", hakoi_self_pid(),
	          s->max_clients);
	return id;
}

static struct server *server_of(const char *who, int service_id, struct svc **out)
{
	struct svc *s = svc_of(who, service_id);
	if (s == NULL) {
		return NULL;
	}
	if (s->server == NULL) {
		failf("%s: this process does not serve %s (hako_asset_service_server_create)", who,
		      s->name);
		return NULL;
	}
	*out = s;
	return s->server;
}

/* Fill buf's meta and header as the answer to the request packet req. */
static void response_header(struct svc *s, const struct server *sv, const uint8_t *req,
                            uint8_t *buf, int status, int result)
{
	packet_init(buf, s->res_size, s->res_fixed);
	uint8_t *b = buf + HAKO_PDU_META_SIZE;
	const uint8_t *q = req + HAKO_PDU_META_SIZE;
	put_u32(b + HDR_REQUEST_ID, get_u32(q + HDR_REQUEST_ID));
	put_name(b, HDR_SERVICE_NAME, s->name);
	memcpy(b + HDR_CLIENT_NAME, q + HDR_CLIENT_NAME, HDR_NAME_LEN);
	b[HDR_CLIENT_NAME + HDR_NAME_LEN - 1] = '\0';
	b[HDR_STATUS] = (uint8_t)status;
	b[HDR_PERCENTAGE] = (uint8_t)sv->percentage;
	put_i32(b + HDR_RESULT_CODE, result);
}

/* Answer slot i with a header only (an error, busy, a progress report, a cancel), about the
 * request in `req` (the one in progress, or one refused). */
static void answer(struct svc *s, struct server *sv, int i, const uint8_t *req, int status,
                   int result)
{
	/* Not sv->response: the application may be filling that one meanwhile. */
	response_header(s, sv, req, sv->answer, status, result);
	if (hako_channel_write(s->res[i], sv->answer, s->res_size) != 0) {
		HAKO_WARN("service %s: cannot answer client slot %d", s->name, i);
	}
}

/* Check a request read from slot i: 0, or why it is refused (logged by the caller). */
static const char *request_problem(struct svc *s, int i, const uint8_t *pkt, size_t len,
                                   struct table_owner *holder, char *why, size_t why_len)
{
	hako_pdu_meta_t m;
	if (len < HAKO_PDU_META_SIZE + HDR_SIZE || hako_pdu_meta_read(pkt, len, &m) != 0) {
		snprintf(why, why_len, "not a PDU with a ServiceRequestHeader (%zu bytes)", len);
		return why;
	}
	const uint8_t *b = pkt + HAKO_PDU_META_SIZE;
	if (!name_is(b, HDR_SERVICE_NAME, s->name)) {
		snprintf(why, why_len, "service_name is not \"%s\"", s->name);
		return why;
	}
	if (b[HDR_OPCODE] > HAKO_SERVICE_CLIENT_API_OPCODE_CANCEL) {
		snprintf(why, why_len, "opcode %u is neither 0 (request) nor 1 (cancel)",
		         b[HDR_OPCODE]);
		return why;
	}
	uint8_t *t = table_copy(s);
	if (t == NULL) {
		snprintf(why, why_len, "cannot read the table of clients");
		return why;
	}
	struct table_slot *slot = table_slot(t, i);
	const char *problem = NULL;
	*holder = slot->owner;
	if (slot->name[0] == '\0') {
		/* After a reset: the client writes its entry back before its next request. */
		problem = NULL;
	} else if (!name_is(b, HDR_CLIENT_NAME, slot->name)) {
		snprintf(why, why_len, "client_name is not \"%s\", the client of slot %d",
		         slot->name, i);
		problem = why;
	}
	free(t);
	return problem;
}

/* The next new packet on slot i: 1 (in sv->tmp), 0 none. */
static int take_request(struct svc *s, struct server *sv, int i, size_t *len)
{
	uint64_t seq = hako_channel_seq(s->req[i]);
	if (seq == sv->seen[i]) {
		return 0;
	}
	uint64_t got = 0;
	int r = hako_channel_read(s->req[i], sv->tmp, s->req_size, len, &got);
	if (r != 0 && r != HAKO_ETOOBIG) {
		return 0;
	}
	sv->seen[i] = got > seq ? got : seq;
	return *len > 0;
}

int hako_asset_service_server_poll(int service_id)
{
	const char *who = "hako_asset_service_server_poll";
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct server *sv = server_of(who, service_id, &s);
	if (sv == NULL) {
		pthread_mutex_unlock(&S.lock);
		return -1;
	}
	uint32_t resets = hako_domain_reset_count(S.dom);
	if (resets != sv->resets) { /* the channels were zeroed: every write number restarts */
		sv->resets = resets;
		memset(sv->seen, 0, (size_t)s->max_clients * sizeof(*sv->seen));
		memset(sv->state, 0, (size_t)s->max_clients * sizeof(*sv->state));
		table_update(s, claim_server, NULL);
	}
	int event = HAKO_SERVICE_SERVER_API_EVENT_NONE;
	char why[200];
	/* In progress: only the current client's channel (its cancel); otherwise the slots in
	 * turn from the current one, so that every client is served. */
	int n = sv->state[sv->current] == ST_IDLE ? s->max_clients : 1;
	for (int k = 0; k < n && event == HAKO_SERVICE_SERVER_API_EVENT_NONE; k++) {
		int i = (sv->current + k) % s->max_clients;
		size_t len = 0;
		if (!take_request(s, sv, i, &len)) {
			continue;
		}
		struct table_owner holder = {0};
		const char *problem =
		    request_problem(s, i, sv->tmp, len, &holder, why, sizeof(why));
		if (problem != NULL) {
			HAKO_WARN("service %s: request on client slot %d refused: %s", s->name, i,
			          problem);
			answer(s, sv, i, sv->tmp, HAKO_SERVICE_API_STATUS_ERROR,
			       HAKO_SERVICE_API_RESULT_CODE_INVALID);
			continue;
		}
		int opcode = sv->tmp[HAKO_PDU_META_SIZE + HDR_OPCODE];
		if (sv->state[i] == ST_IDLE && opcode == HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST) {
			memcpy(sv->request, sv->tmp, len < s->req_size ? len : s->req_size);
			if (len < s->req_size) {
				memset(sv->request + len, 0, s->req_size - len);
			}
			sv->current = i;
			sv->holder[i] = holder;
			sv->state[i] = ST_DOING;
			sv->percentage = 0;
			sv->progress_at = -1;
			event = HAKO_SERVICE_SERVER_API_REQUEST_IN;
		} else if (sv->state[i] == ST_IDLE) {
			/* A cancel of a request never taken (it was replaced before the server
			 * looked, or the server started after it): say it is cancelled. */
			answer(s, sv, i, sv->tmp, HAKO_SERVICE_API_STATUS_DONE,
			       HAKO_SERVICE_API_RESULT_CODE_CANCELED);
		} else if (holder.pid != sv->holder[i].pid || holder.start != sv->holder[i].start) {
			/* The slot changed hands while its request was in progress (its client
			 * process died or restarted, another took the slot): that request is
			 * cancelled, and the new holder's is left unread, to be taken when the
			 * server is free. */
			sv->seen[i] = 0;
			if (sv->state[i] == ST_DOING) {
				sv->state[i] = ST_CANCELING;
				event = HAKO_SERVICE_SERVER_API_REQUEST_CANCEL;
			}
		} else if (sv->state[i] == ST_DOING &&
		           opcode == HAKO_SERVICE_CLIENT_API_OPCODE_CANCEL) {
			sv->state[i] = ST_CANCELING;
			event = HAKO_SERVICE_SERVER_API_REQUEST_CANCEL;
		} else {
			answer(s, sv, i, sv->tmp,
			       sv->state[i] == ST_DOING ? HAKO_SERVICE_API_STATUS_DOING
			                                : HAKO_SERVICE_API_STATUS_CANCELING,
			       HAKO_SERVICE_API_RESULT_CODE_BUSY);
		}
	}
	/* Progress reports, every status_poll_interval_msec of world time. */
	if (event == HAKO_SERVICE_SERVER_API_EVENT_NONE && sv->state[sv->current] == ST_DOING) {
		int32_t every = get_i32(sv->request + HAKO_PDU_META_SIZE + HDR_POLL_MSEC);
		hako_time_t now = world_now();
		if (every > 0 &&
		    (sv->progress_at < 0 || now - sv->progress_at >= (hako_time_t)every * 1000)) {
			answer(s, sv, sv->current, sv->request, HAKO_SERVICE_API_STATUS_DOING,
			       HAKO_SERVICE_API_RESULT_CODE_OK);
			sv->progress_at = now;
		}
	}
	pthread_mutex_unlock(&S.lock);
	return event;
}

int hako_asset_service_server_get_current_client_id(int service_id)
{
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct server *sv =
	    server_of("hako_asset_service_server_get_current_client_id", service_id, &s);
	int r = sv != NULL ? sv->current : -1;
	pthread_mutex_unlock(&S.lock);
	return r;
}

int hako_asset_service_server_get_current_channel_id(int service_id, int *request_channel_id,
                                                     int *response_channel_id)
{
	const char *who = "hako_asset_service_server_get_current_channel_id";
	if (request_channel_id == NULL || response_channel_id == NULL) {
		return failf("%s: NULL channel id pointer", who);
	}
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct server *sv = server_of(who, service_id, &s);
	if (sv != NULL) {
		*request_channel_id = 2 * sv->current;
		*response_channel_id = 2 * sv->current + 1;
	}
	pthread_mutex_unlock(&S.lock);
	return sv != NULL ? 0 : -1;
}

int hako_asset_service_server_status(int service_id, int *status)
{
	if (status == NULL) {
		return failf("hako_asset_service_server_status: NULL status pointer");
	}
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct server *sv = server_of("hako_asset_service_server_status", service_id, &s);
	if (sv != NULL) {
		*status = sv->state[sv->current];
	}
	pthread_mutex_unlock(&S.lock);
	return sv != NULL ? 0 : -1;
}

int hako_asset_service_server_get_request(int service_id, char **packet, size_t *packet_len)
{
	const char *who = "hako_asset_service_server_get_request";
	if (packet == NULL || packet_len == NULL) {
		return failf("%s: NULL packet pointer", who);
	}
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct server *sv = server_of(who, service_id, &s);
	int r = -1;
	if (sv != NULL && sv->state[sv->current] == ST_IDLE) {
		failf("%s: %s has no request in progress", who, s->name);
	} else if (sv != NULL) {
		*packet = (char *)sv->request;
		*packet_len = s->req_size;
		r = 0;
	}
	pthread_mutex_unlock(&S.lock);
	return r;
}

int hako_asset_service_server_get_response_buffer(int service_id, char **packet, size_t *packet_len,
                                                  int status, int result_code)
{
	const char *who = "hako_asset_service_server_get_response_buffer";
	if (packet == NULL || packet_len == NULL) {
		return failf("%s: NULL packet pointer", who);
	}
	if (status < HAKO_SERVICE_API_STATUS_NONE || status > HAKO_SERVICE_API_STATUS_ERROR ||
	    result_code < HAKO_SERVICE_API_RESULT_CODE_OK ||
	    result_code > HAKO_SERVICE_API_RESULT_CODE_BUSY) {
		return failf("%s: status %d / result code %d out of range", who, status,
		             result_code);
	}
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct server *sv = server_of(who, service_id, &s);
	int r = -1;
	if (sv != NULL && sv->state[sv->current] == ST_IDLE) {
		failf("%s: %s has no request in progress", who, s->name);
	} else if (sv != NULL) {
		response_header(s, sv, sv->request, sv->response, status, result_code);
		*packet = (char *)sv->response;
		*packet_len = s->res_size;
		r = 0;
	}
	pthread_mutex_unlock(&S.lock);
	return r;
}

int hako_asset_service_server_put_response(int service_id, char *packet, size_t packet_len)
{
	const char *who = "hako_asset_service_server_put_response";
	if (packet == NULL || packet_len == 0) {
		return failf("%s: no packet", who);
	}
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct server *sv = server_of(who, service_id, &s);
	int r = -1;
	if (sv == NULL) {
		goto out;
	}
	int i = sv->current;
	if (sv->state[i] == ST_IDLE) {
		failf("%s: %s has no request in progress", who, s->name);
		goto out;
	}
	if (packet_len > s->res_size) {
		failf("%s: %s: %zu bytes, the response channel holds %u", who, s->name, packet_len,
		      s->res_size);
		goto out;
	}
	int w = hako_channel_write(s->res[i], packet, packet_len);
	if (w != 0) {
		failf("%s: %s: cannot write the response: %s", who, s->name, hako_strerror(w));
		goto out;
	}
	sv->state[i] = ST_IDLE;
	sv->current = (i + 1) % s->max_clients;
	r = 0;
out:
	pthread_mutex_unlock(&S.lock);
	return r;
}

int hako_asset_service_server_is_canceled(int service_id)
{
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct server *sv = server_of("hako_asset_service_server_is_canceled", service_id, &s);
	int r = sv == NULL ? -1 : sv->state[sv->current] == ST_CANCELING;
	pthread_mutex_unlock(&S.lock);
	return r;
}

int hako_asset_service_server_set_progress(int service_id, int percentage)
{
	const char *who = "hako_asset_service_server_set_progress";
	if (percentage < 0 || percentage > 100) {
		return failf("%s: %d is not a percentage", who, percentage);
	}
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct server *sv = server_of(who, service_id, &s);
	if (sv != NULL) {
		sv->percentage = percentage;
	}
	pthread_mutex_unlock(&S.lock);
	return sv != NULL ? 0 : -1;
}

/* ---- client ---- */

struct claim {
	const char *name;
	int slot;
};

/* Take the slot of this name, or a free one, or one whose holder died. */
static int claim_client(struct svc *s, uint8_t *buf, void *arg)
{
	struct claim *c = arg;
	int free_slot = -1;
	int dead_slot = -1;
	for (int i = 0; i < s->max_clients; i++) {
		struct table_slot *t = table_slot(buf, i);
		if (t->name[0] != '\0' && memchr(t->name, '\0', sizeof(t->name)) != NULL &&
		    strcmp(t->name, c->name) == 0) {
			if (owner_alive(&t->owner) && !owner_is_self(&t->owner)) {
				return failf("hako_asset_service_client_create: %s: client \"%s\" "
				             "is held by process %u",
				             s->name, c->name, t->owner.pid);
			}
			c->slot = i;
			break;
		}
		if (t->name[0] == '\0' && free_slot < 0) {
			free_slot = i;
		} else if (t->name[0] != '\0' && dead_slot < 0 && !owner_alive(&t->owner)) {
			dead_slot = i;
		}
	}
	if (c->slot < 0) {
		c->slot = free_slot >= 0 ? free_slot : dead_slot;
	}
	if (c->slot < 0) {
		return failf(
		    "hako_asset_service_client_create: %s: all %d client slots are held by "
		    "live processes (maxClients in the service file)",
		    s->name, s->max_clients);
	}
	struct table_slot *t = table_slot(buf, c->slot);
	memset(t, 0, sizeof(*t));
	t->owner = self_owner();
	snprintf(t->name, sizeof(t->name), "%s", c->name);
	return 0;
}

int hako_asset_service_client_create(const char *assetName, const char *serviceName,
                                     const char *clientName, HakoServiceHandleType *handle)
{
	(void)assetName;
	const char *who = "hako_asset_service_client_create";
	if (handle == NULL) {
		return failf("%s: NULL handle", who);
	}
	if (clientName == NULL || clientName[0] == '\0' ||
	    strlen(clientName) > HAKO_SERVICE_CLIENT_NAME_MAX) {
		return failf("%s: a client name has 1 to %d bytes", who,
		             HAKO_SERVICE_CLIENT_NAME_MAX);
	}
	pthread_mutex_lock(&S.lock);
	int id = svc_find(who, serviceName);
	if (id < 0) {
		pthread_mutex_unlock(&S.lock);
		return -1;
	}
	struct svc *s = &S.svcs[id];
	for (int i = 0; i < s->max_clients; i++) {
		if (s->clients[i] != NULL && strcmp(s->clients[i]->name, clientName) == 0) {
			*handle = s->clients[i]->handle;
			pthread_mutex_unlock(&S.lock);
			return 0;
		}
	}
	struct claim cl = {.name = clientName, .slot = -1};
	if (table_update(s, claim_client, &cl) != 0) {
		pthread_mutex_unlock(&S.lock);
		return -1;
	}
	struct client *c = calloc(1, sizeof(*c));
	if (c != NULL) {
		c->tmp = malloc(s->res_size);
		c->request = calloc(1, s->req_size);
		c->response = calloc(1, s->res_size);
	}
	if (c == NULL || c->tmp == NULL || c->request == NULL || c->response == NULL) {
		client_free(c);
		pthread_mutex_unlock(&S.lock);
		return failf("%s: out of memory", who);
	}
	c->handle = (HakoServiceHandleType){.service_id = id, .client_id = cl.slot};
	snprintf(c->name, sizeof(c->name), "%s", clientName);
	c->seen = hako_channel_seq(s->res[cl.slot]);
	c->resets = hako_domain_reset_count(S.dom);
	s->clients[cl.slot] = c;
	*handle = c->handle;
	pthread_mutex_unlock(&S.lock);
	HAKO_INFO("service %s: client \"%s\" (pid %u) has slot %d", s->name, clientName,
	          hakoi_self_pid(), cl.slot);
	return 0;
}

static struct client *client_of(const char *who, const HakoServiceHandleType *h, struct svc **out)
{
	if (h == NULL) {
		failf("%s: NULL handle", who);
		return NULL;
	}
	struct svc *s = svc_of(who, h->service_id);
	if (s == NULL) {
		return NULL;
	}
	if (h->client_id < 0 || h->client_id >= s->max_clients ||
	    s->clients[h->client_id] == NULL) {
		failf("%s: %s: this process has no client %d (hako_asset_service_client_create)",
		      who, s->name, h->client_id);
		return NULL;
	}
	*out = s;
	return s->clients[h->client_id];
}

/* Write the request header into buf. */
static void request_header(struct svc *s, struct client *c, uint8_t *buf, int opcode, int poll_msec)
{
	packet_init(buf, s->req_size, s->req_fixed);
	uint8_t *b = buf + HAKO_PDU_META_SIZE;
	put_u32(b + HDR_REQUEST_ID, c->request_id);
	put_name(b, HDR_SERVICE_NAME, s->name);
	put_name(b, HDR_CLIENT_NAME, c->name);
	b[HDR_OPCODE] = (uint8_t)opcode;
	put_i32(b + HDR_POLL_MSEC, poll_msec);
}

int hako_asset_service_client_get_request_buffer(const HakoServiceHandleType *handle, char **packet,
                                                 size_t *packet_len, int opcode,
                                                 int poll_interval_msec)
{
	const char *who = "hako_asset_service_client_get_request_buffer";
	if (packet == NULL || packet_len == NULL) {
		return failf("%s: NULL packet pointer", who);
	}
	if (opcode != HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST &&
	    opcode != HAKO_SERVICE_CLIENT_API_OPCODE_CANCEL) {
		return failf("%s: opcode %d is neither 0 (request) nor 1 (cancel)", who, opcode);
	}
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct client *c = client_of(who, handle, &s);
	if (c != NULL) {
		request_header(s, c, c->request, opcode, poll_interval_msec);
		*packet = (char *)c->request;
		*packet_len = s->req_size;
	}
	pthread_mutex_unlock(&S.lock);
	return c != NULL ? 0 : -1;
}

/* Put this client's entry back into the table if a reset emptied it. */
static int reclaim_slot(struct svc *s, uint8_t *buf, void *arg)
{
	struct client *c = arg;
	struct table_slot *t = table_slot(buf, c->handle.client_id);
	if (t->name[0] != '\0' && strcmp(t->name, c->name) == 0) {
		return 1;
	}
	if (t->name[0] != '\0' && owner_alive(&t->owner)) {
		return failf(
		    "%s: client slot %d was taken by \"%.64s\" (process %u) after a reset; "
		    "create the client again",
		    s->name, c->handle.client_id, t->name, t->owner.pid);
	}
	memset(t, 0, sizeof(*t));
	t->owner = self_owner();
	snprintf(t->name, sizeof(t->name), "%s", c->name);
	return 0;
}

int hako_asset_service_client_call_request(const HakoServiceHandleType *handle, char *packet,
                                           size_t packet_len, int timeout_msec)
{
	const char *who = "hako_asset_service_client_call_request";
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct client *c = client_of(who, handle, &s);
	int r = -1;
	if (c == NULL) {
		goto out;
	}
	uint32_t resets = hako_domain_reset_count(S.dom);
	if (resets != c->resets) {
		c->resets = resets;
		c->seen = 0;
		c->state = ST_IDLE;
	}
	if (c->state != ST_IDLE) {
		failf("%s: %s: client \"%s\" has a request in progress", who, s->name, c->name);
		goto out;
	}
	hako_pdu_meta_t m;
	if (packet == NULL || packet_len < HAKO_PDU_META_SIZE + HDR_SIZE ||
	    packet_len > s->req_size || hako_pdu_meta_read(packet, packet_len, &m) != 0) {
		failf("%s: %s: not a request packet of at most %u bytes (use "
		      "hako_asset_service_client_get_request_buffer)",
		      who, s->name, s->req_size);
		goto out;
	}
	const uint8_t *b = (const uint8_t *)packet + HAKO_PDU_META_SIZE;
	if (!name_is(b, HDR_CLIENT_NAME, c->name) || !name_is(b, HDR_SERVICE_NAME, s->name)) {
		failf("%s: %s: the packet's header names another service or client", who, s->name);
		goto out;
	}
	if (table_update(s, reclaim_slot, c) != 0) {
		goto out;
	}
	int w = hako_channel_write(s->req[c->handle.client_id], packet, packet_len);
	if (w != 0) {
		failf("%s: %s: cannot write the request: %s", who, s->name, hako_strerror(w));
		goto out;
	}
	if (packet != (char *)c->request) { /* kept for a cancel */
		memcpy(c->request, packet, packet_len);
	}
	c->poll_msec = get_i32(b + HDR_POLL_MSEC);
	c->timeout_msec = timeout_msec;
	c->heard_at = world_now();
	clock_gettime(CLOCK_MONOTONIC, &c->checked_at);
	c->percentage = 0;
	c->dead_server = 0;
	c->state = ST_DOING;
	r = 0;
out:
	pthread_mutex_unlock(&S.lock);
	return r;
}

/* 1 if the server of s is known to be gone (looked at most every 50 ms of wall time, unless
 * forced). */
static int server_gone(struct svc *s, struct client *c, uint32_t *pid, int force)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long long ms = (now.tv_sec - c->checked_at.tv_sec) * 1000LL +
	               (now.tv_nsec - c->checked_at.tv_nsec) / 1000000;
	if (ms < 50 && !force) {
		return 0;
	}
	c->checked_at = now;
	uint8_t *t = table_copy(s);
	if (t == NULL) {
		return 0;
	}
	struct table_head h;
	memcpy(&h, t, sizeof(h));
	free(t);
	*pid = h.server.pid;
	return h.server.pid != 0 && !owner_alive(&h.server);
}

int hako_asset_service_client_poll(const HakoServiceHandleType *handle)
{
	const char *who = "hako_asset_service_client_poll";
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct client *c = client_of(who, handle, &s);
	int event = HAKO_SERVICE_CLIENT_API_EVENT_NONE;
	if (c == NULL) {
		pthread_mutex_unlock(&S.lock);
		return -1;
	}
	uint32_t resets = hako_domain_reset_count(S.dom);
	if (resets != c->resets) { /* the request went with the reset */
		c->resets = resets;
		c->seen = 0;
		c->state = ST_IDLE;
	}
	if (c->state == ST_IDLE) {
		pthread_mutex_unlock(&S.lock);
		return event;
	}
	hako_channel_t *ch = s->res[c->handle.client_id];
	uint64_t seq = hako_channel_seq(ch);
	size_t len = 0;
	uint64_t got = 0;
	if (seq != c->seen && hako_channel_read(ch, c->tmp, s->res_size, &len, &got) == 0 &&
	    len > 0) {
		c->seen = got > seq ? got : seq;
		hako_pdu_meta_t m;
		const uint8_t *b = c->tmp + HAKO_PDU_META_SIZE;
		uint32_t want = get_u32(c->request + HAKO_PDU_META_SIZE + HDR_REQUEST_ID);
		if (len < HAKO_PDU_META_SIZE + HDR_SIZE ||
		    hako_pdu_meta_read(c->tmp, len, &m) != 0 ||
		    !name_is(b, HDR_SERVICE_NAME, s->name) ||
		    !name_is(b, HDR_CLIENT_NAME, c->name)) {
			HAKO_WARN("service %s: client \"%s\": a response that is not for it was "
			          "ignored",
			          s->name, c->name);
		} else if (get_u32(b + HDR_REQUEST_ID) != want) {
			HAKO_DEBUG(
			    "service %s: client \"%s\": a response to request %u ignored (%u "
			    "in progress)",
			    s->name, c->name, get_u32(b + HDR_REQUEST_ID), want);
		} else {
			c->heard_at = world_now();
			int status = b[HDR_STATUS];
			int result = get_i32(b + HDR_RESULT_CODE);
			if (status == HAKO_SERVICE_API_STATUS_DONE ||
			    status == HAKO_SERVICE_API_STATUS_ERROR) {
				memcpy(c->response, c->tmp, len);
				if (len < s->res_size) {
					memset(c->response + len, 0, s->res_size - len);
				}
				c->response_len = s->res_size;
				c->state = ST_IDLE;
				c->request_id++;
				event = result == HAKO_SERVICE_API_RESULT_CODE_CANCELED
				            ? HAKO_SERVICE_CLIENT_API_REQUEST_CANCEL_DONE
				            : HAKO_SERVICE_CLIENT_API_RESPONSE_IN;
			} else if (status == HAKO_SERVICE_API_STATUS_DOING &&
			           result == HAKO_SERVICE_API_RESULT_CODE_OK) {
				c->percentage = b[HDR_PERCENTAGE] <= 100 ? b[HDR_PERCENTAGE] : 100;
			}
		}
		pthread_mutex_unlock(&S.lock);
		return event;
	}
	uint32_t pid = 0;
	/* A timeout is looked at first: if the server died meanwhile, that is the reason to give
	 * (the world may run far faster than the 50 ms between looks). */
	int timed_out = c->state == ST_DOING && c->timeout_msec > 0 &&
	                world_now() - c->heard_at > (hako_time_t)c->timeout_msec * 1000;
	if (c->dead_server != 0 || server_gone(s, c, &pid, timed_out)) {
		if (c->dead_server == 0) { /* said once per request */
			c->dead_server = pid;
			hakoi_compat_fail(HAKO_ECRASHED, "service %s: the server (process %u) died",
			                  s->name, pid);
		}
		if (c->state == ST_CANCELING) {
			c->state = ST_IDLE;
			c->request_id++;
			event = HAKO_SERVICE_CLIENT_API_REQUEST_CANCEL_DONE;
		} else {
			event = HAKO_SERVICE_CLIENT_API_REQUEST_TIMEOUT;
		}
	} else if (timed_out) {
		event = HAKO_SERVICE_CLIENT_API_REQUEST_TIMEOUT;
	}
	pthread_mutex_unlock(&S.lock);
	return event;
}

int hako_asset_service_client_get_channel_id(int service_id, int *request_channel_id,
                                             int *response_channel_id)
{
	const char *who = "hako_asset_service_client_get_channel_id";
	if (request_channel_id == NULL || response_channel_id == NULL) {
		return failf("%s: NULL channel id pointer", who);
	}
	pthread_mutex_lock(&S.lock);
	struct svc *s = svc_of(who, service_id);
	int r = -1;
	for (int i = 0; s != NULL && i < s->max_clients; i++) {
		if (s->clients[i] != NULL) {
			*request_channel_id = 2 * i;
			*response_channel_id = 2 * i + 1;
			r = 0;
			break;
		}
	}
	if (s != NULL && r != 0) {
		failf("%s: this process has no client of %s", who, s->name);
	}
	pthread_mutex_unlock(&S.lock);
	return r;
}

int hako_asset_service_client_get_channel_id_by_handle(const HakoServiceHandleType *handle,
                                                       int *request_channel_id,
                                                       int *response_channel_id)
{
	const char *who = "hako_asset_service_client_get_channel_id_by_handle";
	if (request_channel_id == NULL || response_channel_id == NULL) {
		return failf("%s: NULL channel id pointer", who);
	}
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct client *c = client_of(who, handle, &s);
	if (c != NULL) {
		*request_channel_id = 2 * c->handle.client_id;
		*response_channel_id = 2 * c->handle.client_id + 1;
	}
	pthread_mutex_unlock(&S.lock);
	return c != NULL ? 0 : -1;
}

int hako_asset_service_client_get_response(const HakoServiceHandleType *handle, char **packet,
                                           size_t *packet_len, int timeout)
{
	(void)timeout;
	const char *who = "hako_asset_service_client_get_response";
	if (packet == NULL || packet_len == NULL) {
		return failf("%s: NULL packet pointer", who);
	}
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct client *c = client_of(who, handle, &s);
	int r = -1;
	if (c != NULL && c->response_len == 0) {
		failf("%s: %s: client \"%s\" has received no response yet", who, s->name, c->name);
	} else if (c != NULL) {
		*packet = (char *)c->response;
		*packet_len = c->response_len;
		r = 0;
	}
	pthread_mutex_unlock(&S.lock);
	return r;
}

int hako_asset_service_client_cancel_request(const HakoServiceHandleType *handle)
{
	const char *who = "hako_asset_service_client_cancel_request";
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct client *c = client_of(who, handle, &s);
	int r = -1;
	if (c == NULL) {
		goto out;
	}
	if (c->state != ST_DOING) {
		failf("%s: %s: client \"%s\" has no request in progress", who, s->name, c->name);
		goto out;
	}
	uint8_t *buf = malloc(s->req_size);
	if (buf == NULL) {
		failf("%s: out of memory", who);
		goto out;
	}
	request_header(s, c, buf, HAKO_SERVICE_CLIENT_API_OPCODE_CANCEL, -1);
	int w = hako_channel_write(s->req[c->handle.client_id], buf, s->req_size);
	free(buf);
	if (w != 0) {
		failf("%s: %s: cannot write the cancel: %s", who, s->name, hako_strerror(w));
		goto out;
	}
	c->state = ST_CANCELING;
	r = 0;
out:
	pthread_mutex_unlock(&S.lock);
	return r;
}

int hako_asset_service_client_get_progress(const HakoServiceHandleType *handle)
{
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct client *c = client_of("hako_asset_service_client_get_progress", handle, &s);
	int r = c != NULL ? c->percentage : -1;
	pthread_mutex_unlock(&S.lock);
	return r;
}

int hako_asset_service_client_status(const HakoServiceHandleType *handle, int *status)
{
	if (status == NULL) {
		return failf("hako_asset_service_client_status: NULL status pointer");
	}
	pthread_mutex_lock(&S.lock);
	struct svc *s;
	struct client *c = client_of("hako_asset_service_client_status", handle, &s);
	if (c != NULL) {
		*status = c->state;
	}
	pthread_mutex_unlock(&S.lock);
	return c != NULL ? 0 : -1;
}
