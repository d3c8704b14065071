/* Hakoniwa's service API, the client side: claiming a client slot, sending a request, polling
 * for the response (or the server's death), cancelling, all through the channels and the table
 * of compat_service.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compat_service.h"
#include "hako/log.h"

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
	pthread_mutex_lock(&hakoi_services.lock);
	int id = hakoi_svc_find(who, serviceName);
	if (id < 0) {
		pthread_mutex_unlock(&hakoi_services.lock);
		return -1;
	}
	struct svc *s = &hakoi_services.svcs[id];
	for (int i = 0; i < s->max_clients; i++) {
		if (s->clients[i] != NULL && strcmp(s->clients[i]->name, clientName) == 0) {
			*handle = s->clients[i]->handle;
			pthread_mutex_unlock(&hakoi_services.lock);
			return 0;
		}
	}
	struct claim cl = {.name = clientName, .slot = -1};
	if (hakoi_svc_table_update(s, claim_client, &cl) != 0) {
		pthread_mutex_unlock(&hakoi_services.lock);
		return -1;
	}
	struct client *c = calloc(1, sizeof(*c));
	if (c != NULL) {
		c->tmp = malloc(s->res_size);
		c->request = calloc(1, s->req_size);
		c->response = calloc(1, s->res_size);
	}
	if (c == NULL || c->tmp == NULL || c->request == NULL || c->response == NULL) {
		hakoi_svc_client_free(c);
		pthread_mutex_unlock(&hakoi_services.lock);
		return failf("%s: out of memory", who);
	}
	c->handle = (HakoServiceHandleType){.service_id = id, .client_id = cl.slot};
	snprintf(c->name, sizeof(c->name), "%s", clientName);
	c->seen = hako_channel_seq(s->res[cl.slot]);
	c->resets = hako_domain_reset_count(hakoi_services.dom);
	s->clients[cl.slot] = c;
	*handle = c->handle;
	pthread_mutex_unlock(&hakoi_services.lock);
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
	struct svc *s = hakoi_svc_of(who, h->service_id);
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
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s;
	struct client *c = client_of(who, handle, &s);
	if (c != NULL) {
		request_header(s, c, c->request, opcode, poll_interval_msec);
		*packet = (char *)c->request;
		*packet_len = s->req_size;
	}
	pthread_mutex_unlock(&hakoi_services.lock);
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
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s;
	struct client *c = client_of(who, handle, &s);
	int r = -1;
	if (c == NULL) {
		goto out;
	}
	uint32_t resets = hako_domain_reset_count(hakoi_services.dom);
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
	if (hakoi_svc_table_update(s, reclaim_slot, c) != 0) {
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
	pthread_mutex_unlock(&hakoi_services.lock);
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
	uint8_t *t = hakoi_svc_table_copy(s);
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
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s;
	struct client *c = client_of(who, handle, &s);
	int event = HAKO_SERVICE_CLIENT_API_EVENT_NONE;
	if (c == NULL) {
		pthread_mutex_unlock(&hakoi_services.lock);
		return -1;
	}
	uint32_t resets = hako_domain_reset_count(hakoi_services.dom);
	if (resets != c->resets) { /* the request went with the reset */
		c->resets = resets;
		c->seen = 0;
		c->state = ST_IDLE;
	}
	if (c->state == ST_IDLE) {
		pthread_mutex_unlock(&hakoi_services.lock);
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
		pthread_mutex_unlock(&hakoi_services.lock);
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
	pthread_mutex_unlock(&hakoi_services.lock);
	return event;
}

int hako_asset_service_client_get_channel_id(int service_id, int *request_channel_id,
                                             int *response_channel_id)
{
	const char *who = "hako_asset_service_client_get_channel_id";
	if (request_channel_id == NULL || response_channel_id == NULL) {
		return failf("%s: NULL channel id pointer", who);
	}
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s = hakoi_svc_of(who, service_id);
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
	pthread_mutex_unlock(&hakoi_services.lock);
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
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s;
	struct client *c = client_of(who, handle, &s);
	if (c != NULL) {
		*request_channel_id = 2 * c->handle.client_id;
		*response_channel_id = 2 * c->handle.client_id + 1;
	}
	pthread_mutex_unlock(&hakoi_services.lock);
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
	pthread_mutex_lock(&hakoi_services.lock);
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
	pthread_mutex_unlock(&hakoi_services.lock);
	return r;
}

int hako_asset_service_client_cancel_request(const HakoServiceHandleType *handle)
{
	const char *who = "hako_asset_service_client_cancel_request";
	pthread_mutex_lock(&hakoi_services.lock);
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
	pthread_mutex_unlock(&hakoi_services.lock);
	return r;
}

int hako_asset_service_client_get_progress(const HakoServiceHandleType *handle)
{
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s;
	struct client *c = client_of("hako_asset_service_client_get_progress", handle, &s);
	int r = c != NULL ? c->percentage : -1;
	pthread_mutex_unlock(&hakoi_services.lock);
	return r;
}

int hako_asset_service_client_status(const HakoServiceHandleType *handle, int *status)
{
	if (status == NULL) {
		return failf("hako_asset_service_client_status: NULL status pointer");
	}
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s;
	struct client *c = client_of("hako_asset_service_client_status", handle, &s);
	if (c != NULL) {
		*status = c->state;
	}
	pthread_mutex_unlock(&hakoi_services.lock);
	return c != NULL ? 0 : -1;
}
