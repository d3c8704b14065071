/* Hakoniwa's service API (hako_asset_service.h) over PDU channels of the process-default domain
 * of hako_asset.h: what its files share. Private to hako_core.
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
 *
 * Files: compat_service.c, the services of this process (the service file, initialize, the table
 * of clients and server); compat_service_server.c, the server side; compat_service_client.c,
 * the client side.
 */
#ifndef HAKOI_COMPAT_SERVICE_H
#define HAKOI_COMPAT_SERVICE_H

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hako/hako_asset.h"
#include "hako/hako_asset_service.h"
#include "hako/pdu.h"
#include "compat.h"

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

/* The services this process initialized (hako_asset_service_initialize; a service's id is its
 * index in svcs) and the domain they are in. */
struct hakoi_services {
	pthread_mutex_t lock;
	hako_domain_t *dom;
	struct svc *svcs;
	size_t count;
};
extern struct hakoi_services hakoi_services;

/* Set the message of hako_asset_last_error (HAKO_EINVAL); -1, what the service calls return. */
static inline int failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int failf(const char *fmt, ...)
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

static inline uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static inline int32_t get_i32(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline void put_i32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
}

static inline void put_name(uint8_t *base, uint32_t off, const char *s)
{
	memset(base + off, 0, HDR_NAME_LEN);
	size_t n = strlen(s);
	memcpy(base + off, s, n < HDR_NAME_LEN - 1 ? n : HDR_NAME_LEN - 1);
}

/* 1 if the NUL-terminated header string at off equals s. */
static inline int name_is(const uint8_t *base, uint32_t off, const char *s)
{
	const char *f = (const char *)base + off;
	return memchr(f, '\0', HDR_NAME_LEN) != NULL && strcmp(f, s) == 0;
}

/* A packet of `fixed` bytes in a buffer of `size`: meta header, zeroed base. */
static inline void packet_init(uint8_t *buf, uint32_t size, uint32_t fixed)
{
	memset(buf, 0, size);
	put_u32(buf + 0, HAKO_PDU_MAGIC);
	put_u32(buf + 4, HAKO_PDU_VERSION);
	put_u32(buf + 8, HAKO_PDU_META_SIZE);
	put_u32(buf + 12, fixed);
	put_u32(buf + 16, fixed);
}

static inline hako_time_t world_now(void)
{
	return hakoi_services.dom != NULL ? hako_domain_world_time(hakoi_services.dom) : 0;
}

static inline size_t table_size(int max_clients)
{
	return sizeof(struct table_head) + (size_t)max_clients * sizeof(struct table_slot);
}

static inline struct table_slot *table_slot(uint8_t *buf, int i)
{
	return (struct table_slot *)(void *)(buf + sizeof(struct table_head) +
	                                     (size_t)i * sizeof(struct table_slot));
}

static inline struct table_owner self_owner(void)
{
	uint32_t pid = hakoi_self_pid();
	return (struct table_owner){.pid = pid, .start = hakoi_proc_start_time((int)pid)};
}

static inline int owner_alive(const struct table_owner *o)
{
	return o->pid != 0 && hakoi_proc_alive((int)o->pid, o->start);
}

static inline int owner_is_self(const struct table_owner *o)
{
	return o->pid == hakoi_self_pid();
}

/* compat_service.c */
/* Change the table under the domain lock: fn edits buf and returns 0 (write it), 1 (leave it)
 * or -1 (fail; it set the message). 0 or -1. */
int hakoi_svc_table_update(struct svc *s, int (*fn)(struct svc *, uint8_t *, void *), void *arg);
/* Read the table outside the lock (for checks on the data path); NULL if it cannot. */
uint8_t *hakoi_svc_table_copy(struct svc *s);
/* The service of an id, or NULL with the message set. Called under hakoi_services.lock. */
struct svc *hakoi_svc_of(const char *who, int service_id);
/* The id of the service of this name, or -1 with the message set. Under the lock too. */
int hakoi_svc_find(const char *who, const char *name);
void hakoi_svc_server_free(struct server *sv);
void hakoi_svc_client_free(struct client *c);

#endif
