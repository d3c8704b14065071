/* Hakoniwa's service API, the server side: claiming a service, taking the clients' requests in
 * turn, answering (a response, busy, progress, a cancel), all through the channels and the table
 * of compat_service.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat_service.h"
#include "hako/log.h"

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
	pthread_mutex_lock(&hakoi_services.lock);
	int id = hakoi_svc_find(who, serviceName);
	if (id < 0) {
		pthread_mutex_unlock(&hakoi_services.lock);
		return -1;
	}
	struct svc *s = &hakoi_services.svcs[id];
	if (s->server != NULL) { /* Hakoniwa gives the same id again */
		pthread_mutex_unlock(&hakoi_services.lock);
		return id;
	}
	if (hakoi_svc_table_update(s, claim_server, NULL) != 0) {
		pthread_mutex_unlock(&hakoi_services.lock);
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
		hakoi_svc_server_free(sv);
		pthread_mutex_unlock(&hakoi_services.lock);
		return failf("%s: out of memory", who);
	}
	/* Requests written before the server existed are not taken (Hakoniwa registers its
	 * receive events here too): their clients time out or ask again. */
	for (int i = 0; i < s->max_clients; i++) {
		sv->seen[i] = hako_channel_seq(s->req[i]);
	}
	sv->resets = hako_domain_reset_count(hakoi_services.dom);
	sv->progress_at = -1;
	snprintf(sv->asset, sizeof(sv->asset), "%s", assetName != NULL ? assetName : "");
	s->server = sv;
	pthread_mutex_unlock(&hakoi_services.lock);
	HAKO_INFO("service %s: served by %s (pid %u), %d client slots", s->name,
	          assetName != NULL ? assetName : "an attached process", hakoi_self_pid(),
	          s->max_clients);
	return id;
}

static struct server *server_of(const char *who, int service_id, struct svc **out)
{
	struct svc *s = hakoi_svc_of(who, service_id);
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
	uint8_t *t = hakoi_svc_table_copy(s);
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
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s;
	struct server *sv = server_of(who, service_id, &s);
	if (sv == NULL) {
		pthread_mutex_unlock(&hakoi_services.lock);
		return -1;
	}
	uint32_t resets = hako_domain_reset_count(hakoi_services.dom);
	if (resets != sv->resets) { /* the channels were zeroed: every write number restarts */
		sv->resets = resets;
		memset(sv->seen, 0, (size_t)s->max_clients * sizeof(*sv->seen));
		memset(sv->state, 0, (size_t)s->max_clients * sizeof(*sv->state));
		hakoi_svc_table_update(s, claim_server, NULL);
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
	pthread_mutex_unlock(&hakoi_services.lock);
	return event;
}

int hako_asset_service_server_get_current_client_id(int service_id)
{
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s;
	struct server *sv =
	    server_of("hako_asset_service_server_get_current_client_id", service_id, &s);
	int r = sv != NULL ? sv->current : -1;
	pthread_mutex_unlock(&hakoi_services.lock);
	return r;
}

int hako_asset_service_server_get_current_channel_id(int service_id, int *request_channel_id,
                                                     int *response_channel_id)
{
	const char *who = "hako_asset_service_server_get_current_channel_id";
	if (request_channel_id == NULL || response_channel_id == NULL) {
		return failf("%s: NULL channel id pointer", who);
	}
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s;
	struct server *sv = server_of(who, service_id, &s);
	if (sv != NULL) {
		*request_channel_id = 2 * sv->current;
		*response_channel_id = 2 * sv->current + 1;
	}
	pthread_mutex_unlock(&hakoi_services.lock);
	return sv != NULL ? 0 : -1;
}

int hako_asset_service_server_status(int service_id, int *status)
{
	if (status == NULL) {
		return failf("hako_asset_service_server_status: NULL status pointer");
	}
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s;
	struct server *sv = server_of("hako_asset_service_server_status", service_id, &s);
	if (sv != NULL) {
		*status = sv->state[sv->current];
	}
	pthread_mutex_unlock(&hakoi_services.lock);
	return sv != NULL ? 0 : -1;
}

int hako_asset_service_server_get_request(int service_id, char **packet, size_t *packet_len)
{
	const char *who = "hako_asset_service_server_get_request";
	if (packet == NULL || packet_len == NULL) {
		return failf("%s: NULL packet pointer", who);
	}
	pthread_mutex_lock(&hakoi_services.lock);
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
	pthread_mutex_unlock(&hakoi_services.lock);
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
	pthread_mutex_lock(&hakoi_services.lock);
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
	pthread_mutex_unlock(&hakoi_services.lock);
	return r;
}

int hako_asset_service_server_put_response(int service_id, char *packet, size_t packet_len)
{
	const char *who = "hako_asset_service_server_put_response";
	if (packet == NULL || packet_len == 0) {
		return failf("%s: no packet", who);
	}
	pthread_mutex_lock(&hakoi_services.lock);
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
	pthread_mutex_unlock(&hakoi_services.lock);
	return r;
}

int hako_asset_service_server_is_canceled(int service_id)
{
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s;
	struct server *sv = server_of("hako_asset_service_server_is_canceled", service_id, &s);
	int r = sv == NULL ? -1 : sv->state[sv->current] == ST_CANCELING;
	pthread_mutex_unlock(&hakoi_services.lock);
	return r;
}

int hako_asset_service_server_set_progress(int service_id, int percentage)
{
	const char *who = "hako_asset_service_server_set_progress";
	if (percentage < 0 || percentage > 100) {
		return failf("%s: %d is not a percentage", who, percentage);
	}
	pthread_mutex_lock(&hakoi_services.lock);
	struct svc *s;
	struct server *sv = server_of(who, service_id, &s);
	if (sv != NULL) {
		sv->percentage = percentage;
	}
	pthread_mutex_unlock(&hakoi_services.lock);
	return sv != NULL ? 0 : -1;
}
