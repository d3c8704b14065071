/* The mqtt comm: PDUs as MQTT messages through a broker, on libmosquitto (ep_comm.h).
 *
 * Hakoniwa's comm_mqtt: the file's "mqtt" object holds broker, topic_prefix, qos, retain and
 * client_id; a PDU of robot R, channel C is one message on topic "<prefix>/R/C" whose payload
 * is the PDU's bytes as they are (no hako frame), so a Hakoniwa endpoint and a hako endpoint
 * on one broker read each other. An in or inout comm subscribes to "<prefix>/#".
 *
 * Threads: libmosquitto's network I/O runs in one thread of this comm (not the set's I/O loop:
 * the library owns its socket, packets and keep-alive timers), which also connects, and after
 * a broker is lost or refuses us reconnects with a back-off doubling from reconnect_min_ms to
 * reconnect_max_ms. Received messages are delivered in that thread. Sends come from any
 * thread: mosquitto_publish only queues and wakes it.
 *
 * Memory is bounded both ways:
 *  - connected: at most send_queue_depth messages are in flight (handed to libmosquitto and
 *    not yet written, QoS 0, or not yet acknowledged, QoS 1 and 2). A send that finds the
 *    window full waits up to write_timeout_ms (blocking, the default), so a burst at QoS 1 is
 *    lossless and in order; non-blocking, or timed out, it is dropped and counted;
 *  - disconnected: a send keeps the newest PDU of its channel (latest value) and returns 0;
 *    at most pending_max channels and max_buffered_bytes bytes are kept, more is dropped and
 *    counted. After the reconnect they are published first, in the order their channels were
 *    first written, before any newer send. The newest PDU published on each channel is kept
 *    too: what libmosquitto held when the connection broke is dropped with its client state
 *    (resent, it would arrive behind newer PDUs) and that copy is published again instead.
 *
 * Input is hostile: a message whose topic is not "<prefix>/<robot>/<channel id>", of a channel
 * the pdudef lacks, empty, larger than the channel (pdudef) or than max_body_bytes is dropped,
 * counted in rejected, and logged once per kind. */
#define _GNU_SOURCE

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ep_comm.h"
#include "hako/log.h"

#ifdef HAKO_HAVE_MQTT
#include <mosquitto.h>
#endif

typedef hako_comm_mqtt_options_t mqtt_opts_t;

/* ---- the comm file ---- */

#define MQTT_DEFAULT_PORT 1883

static void mqtt_defaults(hako_comm_config_t *cc)
{
	*(mqtt_opts_t *)cc->opts = (mqtt_opts_t){.qos = 0,
	                                         .keepalive_sec = 30,
	                                         .reconnect_min_ms = 100,
	                                         .reconnect_max_ms = 2000,
	                                         .write_timeout_ms = 1000,
	                                         .blocking = 1,
	                                         .pending_max = 1024};
}

/* broker: "tcp://host:port" (Hakoniwa's, paho's URI), "mqtt://host:port", "host:port",
 * "host"; an IPv6 literal in brackets. TLS and websockets are refused by name. */
static int parse_broker(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hako_comm_config_t *cc = base;
	mqtt_opts_t *o = cc->opts;
	const char *s = o->broker;
	(void)v;
	const char *rest = s;
	const char *sep = strstr(s, "://");
	if (sep != NULL) {
		size_t n = (size_t)(sep - s);
		if ((n == 3 && strncmp(s, "tcp", 3) == 0) ||
		    (n == 4 && strncmp(s, "mqtt", 4) == 0)) {
			rest = sep + 3;
		} else if ((n == 3 && strncmp(s, "ssl", 3) == 0) ||
		           (n == 5 && strncmp(s, "mqtts", 5) == 0) ||
		           (n == 2 && strncmp(s, "ws", 2) == 0) ||
		           (n == 3 && strncmp(s, "wss", 3) == 0)) {
			return hakoi_walk_fail(w,
			                       "is \"%.200s\"; TLS and MQTT over websockets are "
			                       "not supported (use tcp://host:port)",
			                       s);
		} else {
			return hakoi_walk_fail(w,
			                       "is \"%.200s\"; must be tcp://host:port, "
			                       "mqtt://host:port or host:port",
			                       s);
		}
	}
	const char *host = rest, *hend, *port = NULL;
	if (*rest == '[') {
		host = rest + 1;
		hend = strchr(host, ']');
		if (hend == NULL || (hend[1] != '\0' && hend[1] != ':')) {
			return hakoi_walk_fail(w, "is \"%.200s\"; an IPv6 address needs its ']'",
			                       s);
		}
		port = hend[1] == ':' ? hend + 2 : NULL;
	} else {
		hend = strrchr(rest, ':');
		if (hend != NULL) {
			port = hend + 1;
		} else {
			hend = rest + strlen(rest);
		}
	}
	size_t hl = (size_t)(hend - host);
	if (hl == 0 || hl >= sizeof(o->host) || memchr(host, '/', hl) != NULL) {
		return hakoi_walk_fail(w, "is \"%.200s\"; names no host (must be tcp://host:port)",
		                       s);
	}
	memcpy(o->host, host, hl);
	o->host[hl] = '\0';
	o->port = MQTT_DEFAULT_PORT;
	if (port != NULL) {
		char *end = NULL;
		errno = 0;
		unsigned long p = strtoul(port, &end, 10);
		if (*port < '0' || *port > '9' || *end != '\0' || errno != 0 || p < 1 ||
		    p > 65535) {
			return hakoi_walk_fail(w,
			                       "is \"%.200s\"; the port must be an integer in "
			                       "[1, 65535]",
			                       s);
		}
		o->port = (uint16_t)p;
	}
	return 0;
}

/* topic_prefix: Hakoniwa takes trailing '/' off and uses "hakoniwa" for an empty one. A
 * wildcard would make the subscription match what the topics of sends cannot be. */
static int check_prefix(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	mqtt_opts_t *o = ((hako_comm_config_t *)base)->opts;
	if (strpbrk(o->topic_prefix, "+#") != NULL) {
		return hakoi_walk_fail(w, "is \"%.200s\"; must not hold the wildcards + or #",
		                       o->topic_prefix);
	}
	size_t n = strlen(o->topic_prefix);
	while (n > 0 && o->topic_prefix[n - 1] == '/') {
		o->topic_prefix[--n] = '\0';
	}
	if (n == 0) {
		snprintf(o->topic_prefix, sizeof(o->topic_prefix), "hakoniwa");
	}
	return 0;
}

static int check_reconnect(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const mqtt_opts_t *o = ((hako_comm_config_t *)base)->opts;
	if (o->reconnect_max_ms < o->reconnect_min_ms) {
		return hakoi_walk_fail(w, "is %u; must be at least reconnect_min_ms (%u)",
		                       (unsigned)o->reconnect_max_ms,
		                       (unsigned)o->reconnect_min_ms);
	}
	return 0;
}

/* client_id: Hakoniwa's default is the comm file's name without its extension. */
static int mqtt_check_file(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hako_comm_config_t *cc = base;
	mqtt_opts_t *o = cc->opts;
	if (o->client_id[0] == '\0') {
		const char *file = w->j.file != NULL ? w->j.file : "";
		const char *name = strrchr(file, '/');
		name = name != NULL ? name + 1 : file;
		size_t n = strlen(name);
		const char *dot = strrchr(name, '.');
		if (dot != NULL && dot != name) {
			n = (size_t)(dot - name);
		}
		if (n == 0) {
			snprintf(o->client_id, sizeof(o->client_id), "hakoniwa_pdu_endpoint_mqtt");
		} else {
			snprintf(o->client_id, sizeof(o->client_id), "%.*s", (int)n, name);
		}
	}
	return 0;
}

static const hakoi_field_t mqtt_broker_fields[] = {
    {.key = "broker",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_COMM_AT(mqtt_opts_t, broker),
     .check = parse_broker},
    {.key = "topic_prefix",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED | HAKOI_F_EMPTY_OK,
     HAKOI_COMM_AT(mqtt_opts_t, topic_prefix),
     .check = check_prefix},
    {.key = "client_id", .kind = HAKOI_K_STRING, HAKOI_COMM_AT(mqtt_opts_t, client_id)},
    {.key = "qos", .kind = HAKOI_K_INT, HAKOI_COMM_AT(mqtt_opts_t, qos), .min = 0, .max = 2},
    HAKOI_COMM_BOOL("retain", mqtt_opts_t, retain),
    HAKOI_END,
};

static const hakoi_field_t mqtt_option_fields[] = {
    HAKOI_COMM_INT("keepalive_sec", mqtt_opts_t, keepalive_sec, 5, 3600),
    HAKOI_COMM_INT("reconnect_min_ms", mqtt_opts_t, reconnect_min_ms, 10, HAKOI_COMM_MAX_MS),
    {.key = "reconnect_max_ms",
     .kind = HAKOI_K_INT,
     .flags = HAKOI_F_UNSIGNED,
     HAKOI_COMM_AT(mqtt_opts_t, reconnect_max_ms),
     .min = 10,
     .max = HAKOI_COMM_MAX_MS,
     .check = check_reconnect},
    HAKOI_COMM_INT("write_timeout_ms", mqtt_opts_t, write_timeout_ms, 0, HAKOI_COMM_MAX_MS),
    HAKOI_COMM_BOOL("blocking", mqtt_opts_t, blocking),
    HAKOI_COMM_INT("pending_max", mqtt_opts_t, pending_max, 1, 65536),
    {.key = "username", .kind = HAKOI_K_STRING, HAKOI_COMM_AT(mqtt_opts_t, username)},
    {.key = "password",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_EMPTY_OK,
     HAKOI_COMM_AT(mqtt_opts_t, password)},
    HAKOI_COMM_NET_OPTIONS,
    HAKOI_END,
};

#ifndef HAKO_HAVE_MQTT
/* A build without libmosquitto knows the protocol and says so, at "protocol", before anything
 * else of the file. */
static int not_built_in(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)base;
	(void)f;
	hakoi_walk_push_key(w, "protocol");
	int r = hakoi_walk_fail(w, "mqtt: not built in (this hako was built without libmosquitto: "
	                           "install libmosquitto-dev and build with HAKO_WITH_MQTT=ON)");
	hakoi_walk_pop(w);
	return r;
}

#endif

static const hakoi_field_t mqtt_fields[] = {
#ifndef HAKO_HAVE_MQTT
    HAKOI_CHECK(not_built_in),
#endif
    HAKOI_COMM_COMMON_FIELDS,
    HAKOI_COMM_OBJECT("mqtt", HAKOI_F_REQUIRED, mqtt_broker_fields),
    HAKOI_COMM_OBJECT("options", 0, mqtt_option_fields),
    HAKOI_CHECK(mqtt_check_file),
    HAKOI_END,
};

const hako_comm_mqtt_options_t *hako_comm_mqtt_options(const hako_comm_config_t *cc)
{
	return cc != NULL && cc->protocol == HAKO_COMM_MQTT ? cc->opts : NULL;
}

#ifndef HAKO_HAVE_MQTT

/* Never reached: the file is refused at load (mqtt_check_file). */
static int mqtt_open_none(const hakoi_comm_ctx_t *ctx, void **impl, hako_error_t *err)
{
	(void)ctx;
	(void)impl;
	hako_error_set(err, HAKO_ENOTSUP, ctx->cfg->path, 0, 0, "mqtt: not built in");
	return HAKO_ENOTSUP;
}

const hakoi_comm_t hakoi_comm_mqtt = {
    .name = "mqtt",
    .protocol = HAKO_COMM_MQTT,
    .opts_size = sizeof(mqtt_opts_t),
    .defaults = mqtt_defaults,
    .fields = mqtt_fields,
    .open = mqtt_open_none,
};

#else

/* ---- the comm ---- */

#define MQTT_TOPIC_MAX (256 + HAKO_NAME_MAX + 16)

/* Kinds of refused input, each logged once. */
enum refusal {
	R_OUTSIDE,    /* topic not under the prefix */
	R_BAD_TOPIC,  /* not <prefix>/<robot>/<channel id> */
	R_UNKNOWN,    /* a channel the pdudef does not have */
	R_EMPTY,      /* no payload (also a retained message being deleted) */
	R_TOO_BIG,    /* larger than the channel's pdu_size */
	R_OVER_LIMIT, /* larger than max_body_bytes */
	R_KINDS
};

static const char *const refusal_words[R_KINDS] = {
    "topic outside the prefix",           "topic not <prefix>/<robot>/<channel id>",
    "a channel the pdudef does not have", "empty payload",
    "payload larger than its channel",    "payload larger than max_body_bytes",
};

/* The newest PDU of a channel: the last published (to publish again after a lost connection)
 * or, pending, one that waits for the connection. */
typedef struct chan {
	hako_pdu_key_t key;
	void *data;
	size_t len, cap;
	int pending;
} chan_t;

typedef struct mqtt_comm {
	hakoi_comm_ctx_t ctx;
	const hako_comm_config_t *cfg;
	const mqtt_opts_t *opt;
	struct mosquitto *mosq;
	char sub_topic[MQTT_TOPIC_MAX];
	char where[300]; /* "broker 127.0.0.1:1883" for log lines */

	pthread_t thread;
	int started;          /* start .. stop (the caller's) */
	atomic_int thread_up; /* set by the thread itself, with loop_tid */
	pthread_t loop_tid;
	atomic_int stopping;

	/* lock: connected, the pending PDUs, the back-off wait; publishes are made under it so
	 * that the pending ones go out before newer ones. */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int connected; /* CONNACK accepted, not lost since */
	int ever_up;   /* connected once: a later connect is a reconnect */
	chan_t *chans; /* pending_max, in the order channels were first sent */
	size_t chan_count;
	size_t chan_bytes;
	uint32_t *chan_index; /* open addressing: slot + 1, 0 = free; chan_hcap entries */
	size_t chan_hcap;
	int reinit;         /* the connection was lost: libmosquitto's old queue is to be dropped */
	char last_err[256]; /* the last connection error logged (logged again when it changes) */
	unsigned failures;  /* attempts since the last success */
	int refused_now;    /* this attempt's CONNACK said no (logged by on_connect) */

	/* The in-flight window: counted up by publish, down by on_publish. */
	atomic_int inflight;
	pthread_mutex_t room_lock;
	pthread_cond_t room;
	atomic_int room_waiters;

	_Atomic uint64_t refused[R_KINDS];
	atomic_int refused_logged[R_KINDS];
	atomic_int pend_full_logged;
} mqtt_comm_t;

static uint64_t refused_total(mqtt_comm_t *m)
{
	uint64_t n = 0;
	for (int i = 0; i < R_KINDS; i++) {
		n += atomic_load_explicit(&m->refused[i], memory_order_relaxed);
	}
	return n;
}

static void refuse(mqtt_comm_t *m, enum refusal kind, const char *topic, size_t len)
{
	hakoi_count(&m->ctx.ctr->rejected, 1);
	hakoi_count(&m->refused[kind], 1);
	if (atomic_exchange(&m->refused_logged[kind], 1) == 0) {
		HAKO_WARN(
		    "endpoint '%s': mqtt message on \"%.200s\" (%zu bytes) dropped: %s (counted "
		    "in rejected; further ones of this kind are not logged)",
		    m->ctx.ep_name, topic, len, refusal_words[kind]);
	}
}

static void room_signal(mqtt_comm_t *m)
{
	if (atomic_load(&m->room_waiters) > 0) {
		pthread_mutex_lock(&m->room_lock);
		pthread_cond_broadcast(&m->room);
		pthread_mutex_unlock(&m->room_lock);
	}
}

static int topic_of(const mqtt_comm_t *m, const hako_pdu_key_t *key, char *buf, size_t cap)
{
	int n =
	    snprintf(buf, cap, "%s/%s/%d", m->opt->topic_prefix, key->robot, (int)key->channel_id);
	return n > 0 && (size_t)n < cap ? 0 : HAKO_ENAMETOOLONG;
}

/* Publish under m->lock, connected. */
static int publish_locked(mqtt_comm_t *m, const hako_pdu_key_t *key, const void *data, size_t len)
{
	char topic[MQTT_TOPIC_MAX];
	if (topic_of(m, key, topic, sizeof(topic)) != 0) {
		return HAKO_ENAMETOOLONG;
	}
	atomic_fetch_add(&m->inflight, 1);
	int rc = mosquitto_publish(m->mosq, NULL, topic, (int)len, data, m->opt->qos,
	                           m->opt->retain != 0);
	if (rc != MOSQ_ERR_SUCCESS) {
		atomic_fetch_sub(&m->inflight, 1);
		if (rc == MOSQ_ERR_NO_CONN) {
			return HAKO_ENOTCONN; /* lost a moment ago: the caller keeps it pending */
		}
		hakoi_count(&m->ctx.ctr->send_dropped, 1);
		if (rc == MOSQ_ERR_INVAL || rc == MOSQ_ERR_MALFORMED_UTF8 ||
		    rc == MOSQ_ERR_PAYLOAD_SIZE) {
			return HAKO_EINVAL; /* a robot name with + or #, bad UTF-8 */
		}
		return HAKO_EIO;
	}
	hakoi_count(&m->ctx.ctr->bytes_out, len);
	return 0;
}

static size_t chan_hash(const hako_pdu_key_t *key)
{
	uint64_t h = 1469598103934665603ull ^ (uint32_t)key->channel_id;
	for (const char *c = key->robot; *c != '\0'; c++) {
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	}
	return (size_t)(h ^ (h >> 29));
}

/* The channel's slot, added when absent (NULL when pending_max channels are known). */
static chan_t *chan_get(mqtt_comm_t *m, const hako_pdu_key_t *key)
{
	size_t mask = m->chan_hcap - 1;
	for (size_t i = chan_hash(key) & mask;; i = (i + 1) & mask) {
		uint32_t v = m->chan_index[i];
		if (v == 0) {
			if (m->chan_count >= m->opt->pending_max) {
				return NULL;
			}
			chan_t *c = &m->chans[m->chan_count++];
			c->key = *key;
			m->chan_index[i] = (uint32_t)m->chan_count;
			return c;
		}
		chan_t *c = &m->chans[v - 1];
		if (c->key.channel_id == key->channel_id && strcmp(c->key.robot, key->robot) == 0) {
			return c;
		}
	}
}

/* Keep a copy of the channel's newest PDU; 0, or HAKO_ENOSPC past pending_max channels or
 * max_buffered_bytes bytes. */
static int chan_keep(mqtt_comm_t *m, const hako_pdu_key_t *key, const void *data, size_t len)
{
	chan_t *c = chan_get(m, key);
	if (c == NULL) {
		return HAKO_ENOSPC;
	}
	if (len > c->cap) {
		if (m->chan_bytes - c->cap + len > m->cfg->max_buffered_bytes) {
			return HAKO_ENOSPC;
		}
		void *d = realloc(c->data, len);
		if (d == NULL) {
			return HAKO_ENOMEM;
		}
		m->chan_bytes = m->chan_bytes - c->cap + len;
		c->data = d;
		c->cap = len;
	}
	memcpy(c->data, data, len);
	c->len = len;
	return 0;
}

/* Disconnected: keep the newest PDU of the channel for the reconnect. */
static int keep_pending(mqtt_comm_t *m, const hako_pdu_key_t *key, const void *data, size_t len)
{
	int r = chan_keep(m, key, data, len);
	if (r != 0) {
		hakoi_count(&m->ctx.ctr->send_dropped, 1);
		if (atomic_exchange(&m->pend_full_logged, 1) == 0) {
			HAKO_WARN(
			    "endpoint '%s': %s unreachable and %zu channels (%zu bytes) already "
			    "wait for it: PDU of %s/%d dropped (counted in send_dropped)",
			    m->ctx.ep_name, m->where, m->chan_count, m->chan_bytes, key->robot,
			    (int)key->channel_id);
		}
		return r == HAKO_ENOMEM ? r : HAKO_ENOTCONN;
	}
	chan_get(m, key)->pending = 1;
	return 0;
}

/* Connected again: the newest PDU of every channel that has one waiting (sent while
 * disconnected, or in flight when the connection broke), in the order channels were first
 * sent, before any newer send. */
static void flush_pending_locked(mqtt_comm_t *m)
{
	for (size_t i = 0; i < m->chan_count; i++) {
		chan_t *c = &m->chans[i];
		if (!c->pending) {
			continue;
		}
		c->pending = 0;
		if (publish_locked(m, &c->key, c->data, c->len) == HAKO_ENOTCONN) {
			hakoi_count(&m->ctx.ctr->send_dropped, 1); /* lost again at once */
		}
	}
	atomic_store(&m->pend_full_logged, 0);
}

static int mqtt_send(void *impl, const hako_pdu_key_t *key, const void *data, size_t len)
{
	mqtt_comm_t *m = impl;
	if (len > m->cfg->max_body_bytes) {
		hakoi_count(&m->ctx.ctr->send_dropped, 1);
		return HAKO_ETOOBIG;
	}
	int on_loop = atomic_load(&m->thread_up) && pthread_equal(pthread_self(), m->loop_tid);
	int depth = (int)m->cfg->send_queue_depth;
	if (atomic_load(&m->inflight) >= depth && !on_loop && m->opt->blocking &&
	    m->opt->write_timeout_ms > 0) {
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		uint64_t ns = (uint64_t)dl.tv_nsec + (uint64_t)m->opt->write_timeout_ms * 1000000u;
		dl.tv_sec += (time_t)(ns / 1000000000u);
		dl.tv_nsec = (long)(ns % 1000000000u);
		pthread_mutex_lock(&m->room_lock);
		atomic_fetch_add(&m->room_waiters, 1);
		int r = 0;
		while (atomic_load(&m->inflight) >= depth && r == 0 && !atomic_load(&m->stopping)) {
			pthread_mutex_lock(&m->lock);
			int up = m->connected;
			pthread_mutex_unlock(&m->lock);
			if (!up) {
				break;
			}
			r = pthread_cond_timedwait(&m->room, &m->room_lock, &dl);
		}
		atomic_fetch_sub(&m->room_waiters, 1);
		pthread_mutex_unlock(&m->room_lock);
	}
	pthread_mutex_lock(&m->lock);
	int rc;
	if (!m->connected) {
		rc = keep_pending(m, key, data, len);
	} else if (atomic_load(&m->inflight) >= depth && !on_loop) {
		hakoi_count(&m->ctx.ctr->send_dropped, 1);
		rc = HAKO_ETIMEDOUT;
	} else {
		rc = publish_locked(m, key, data, len);
		if (rc == HAKO_ENOTCONN) {
			rc = keep_pending(m, key, data, len);
		} else if (rc == 0) {
			/* To publish again if the connection breaks before it is through; past the
			 * bounds the channel just is not republished. */
			(void)chan_keep(m, key, data, len);
		}
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

/* ---- libmosquitto's callbacks (its thread) ---- */

static void log_conn_error(mqtt_comm_t *m, const char *why)
{
	pthread_mutex_lock(&m->lock);
	m->failures++;
	int fresh = strcmp(m->last_err, why) != 0;
	if (fresh) {
		snprintf(m->last_err, sizeof(m->last_err), "%s", why);
	}
	pthread_mutex_unlock(&m->lock);
	if (fresh) {
		HAKO_ERROR(
		    "endpoint '%s': mqtt: cannot connect to %s: %s (retrying every %u..%u ms; "
		    "sends keep the newest PDU of each channel meanwhile)",
		    m->ctx.ep_name, m->where, why, (unsigned)m->opt->reconnect_min_ms,
		    (unsigned)m->opt->reconnect_max_ms);
	}
}

static void on_connect(struct mosquitto *mosq, void *arg, int rc)
{
	mqtt_comm_t *m = arg;
	if (rc != 0) {
		char why[200];
		snprintf(why, sizeof(why), "the broker refused the connection: %s",
		         mosquitto_connack_string(rc));
		log_conn_error(m, why);
		pthread_mutex_lock(&m->lock);
		m->refused_now = 1;
		pthread_mutex_unlock(&m->lock);
		return; /* the broker closes; the thread retries */
	}
	if (m->cfg->direction != HAKO_COMM_OUT) {
		int s = mosquitto_subscribe(mosq, NULL, m->sub_topic, m->opt->qos);
		if (s != MOSQ_ERR_SUCCESS) {
			HAKO_ERROR("endpoint '%s': mqtt: cannot subscribe to \"%s\": %s",
			           m->ctx.ep_name, m->sub_topic, mosquitto_strerror(s));
		}
	}
	pthread_mutex_lock(&m->lock);
	m->connected = 1;
	if (m->ever_up) {
		hakoi_count(&m->ctx.ctr->reconnects, 1);
	}
	hakoi_count(&m->ctx.ctr->connects, 1);
	if (m->failures > 0 || m->ever_up) {
		HAKO_INFO("endpoint '%s': mqtt: connected to %s%s", m->ctx.ep_name, m->where,
		          m->ever_up ? " again" : "");
	}
	m->ever_up = 1;
	m->failures = 0;
	m->last_err[0] = '\0';
	atomic_fetch_add_explicit(&m->ctx.ctr->peers, 1, memory_order_relaxed);
	flush_pending_locked(m);
	pthread_mutex_unlock(&m->lock);
}

static void went_down(mqtt_comm_t *m, const char *why)
{
	pthread_mutex_lock(&m->lock);
	int was = m->connected;
	m->connected = 0;
	if (was) {
		/* The loss is logged here; the thread's loop reports the same reason after. */
		snprintf(m->last_err, sizeof(m->last_err), "%s", why);
		if (!atomic_load(&m->stopping)) {
			/* What libmosquitto held for the old connection (QoS 0 packets not written,
			 * QoS 1/2 not acknowledged) would go out after the reconnect behind newer
			 * PDUs: it is dropped (the thread reinitialises the client) and the newest
			 * PDU of each channel is published again instead. */
			for (size_t i = 0; i < m->chan_count; i++) {
				m->chans[i].pending = 1;
			}
			m->reinit = 1;
		}
	}
	pthread_mutex_unlock(&m->lock);
	if (was) {
		atomic_fetch_sub_explicit(&m->ctx.ctr->peers, 1, memory_order_relaxed);
		hakoi_count(&m->ctx.ctr->disconnects, 1);
		atomic_store(&m->inflight, 0); /* the window starts afresh */
		room_signal(m);
		if (!atomic_load(&m->stopping)) {
			HAKO_WARN(
			    "endpoint '%s': mqtt: lost the connection to %s: %s (reconnecting)",
			    m->ctx.ep_name, m->where, why);
		}
	}
}

static void on_disconnect(struct mosquitto *mosq, void *arg, int rc)
{
	(void)mosq;
	went_down(arg, rc == 0 ? "disconnected" : mosquitto_strerror(rc));
}

static void on_publish(struct mosquitto *mosq, void *arg, int mid)
{
	(void)mosq;
	(void)mid;
	mqtt_comm_t *m = arg;
	hakoi_count(&m->ctx.ctr->frames_out, 1);
	if (atomic_fetch_sub(&m->inflight, 1) <= 0) {
		atomic_store(&m->inflight, 0); /* a resend of a message of a lost connection */
	}
	room_signal(m);
}

static int parse_topic(const mqtt_comm_t *m, const char *topic, hako_pdu_key_t *key, int *outside)
{
	size_t pl = strlen(m->opt->topic_prefix);
	*outside = strncmp(topic, m->opt->topic_prefix, pl) != 0 || topic[pl] != '/';
	if (*outside) {
		return -1;
	}
	const char *robot = topic + pl + 1;
	const char *slash = strrchr(robot, '/');
	if (slash == NULL || slash == robot || slash[1] == '\0') {
		return -1;
	}
	size_t rl = (size_t)(slash - robot);
	if (rl >= sizeof(key->robot)) {
		return -1;
	}
	const char *d = slash + 1;
	long long ch = 0;
	for (; *d != '\0'; d++) {
		if (*d < '0' || *d > '9' || ch > INT32_MAX / 10) {
			return -1;
		}
		ch = ch * 10 + (*d - '0');
	}
	if (ch > INT32_MAX || d - slash > 11) {
		return -1;
	}
	memset(key, 0, sizeof(*key));
	memcpy(key->robot, robot, rl);
	key->channel_id = (int32_t)ch;
	return 0;
}

static void on_message(struct mosquitto *mosq, void *arg, const struct mosquitto_message *msg)
{
	(void)mosq;
	mqtt_comm_t *m = arg;
	size_t len = msg->payloadlen > 0 ? (size_t)msg->payloadlen : 0;
	hako_pdu_key_t key;
	int outside = 0;
	if (m->cfg->direction == HAKO_COMM_OUT) {
		hakoi_count(&m->ctx.ctr->recv_ignored, 1);
		return;
	}
	if (parse_topic(m, msg->topic, &key, &outside) != 0) {
		refuse(m, outside ? R_OUTSIDE : R_BAD_TOPIC, msg->topic, len);
		return;
	}
	if (len == 0) {
		refuse(m, R_EMPTY, msg->topic, len);
		return;
	}
	if (len > m->cfg->max_body_bytes) {
		refuse(m, R_OVER_LIMIT, msg->topic, len);
		return;
	}
	if (m->ctx.pdudef != NULL) {
		const hako_pdudef_pdu_t *p =
		    hako_pdudef_find_channel(m->ctx.pdudef, key.robot, key.channel_id);
		if (p == NULL) {
			refuse(m, R_UNKNOWN, msg->topic, len);
			return;
		}
		if (len > p->pdu_size) {
			refuse(m, R_TOO_BIG, msg->topic, len);
			return;
		}
	}
	m->ctx.deliver(m->ctx.ep, &key, msg->payload, len);
}

/* ---- the connection thread ---- */

static void client_setup(mqtt_comm_t *m);

static void backoff_wait(mqtt_comm_t *m, unsigned ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	uint64_t ns = (uint64_t)dl.tv_nsec + (uint64_t)ms * 1000000u;
	dl.tv_sec += (time_t)(ns / 1000000000u);
	dl.tv_nsec = (long)(ns % 1000000000u);
	pthread_mutex_lock(&m->lock);
	while (!atomic_load(&m->stopping)) {
		if (pthread_cond_timedwait(&m->wake, &m->lock, &dl) != 0) {
			break;
		}
	}
	pthread_mutex_unlock(&m->lock);
}

static void *mqtt_thread(void *arg)
{
	mqtt_comm_t *m = arg;
	/* Before any callback can run a subscriber that sends (mqtt_send must not wait here). */
	m->loop_tid = pthread_self();
	atomic_store(&m->thread_up, 1);
	unsigned delay = m->opt->reconnect_min_ms;
	int first = 1, sock_up = 0;
	while (!atomic_load(&m->stopping)) {
		if (!sock_up) {
			pthread_mutex_lock(&m->lock);
			m->refused_now = 0;
			if (m->reinit) {
				/* No sender publishes now (connected is 0, under this lock). */
				mosquitto_reinitialise(m->mosq, m->opt->client_id, true, m);
				client_setup(m);
				m->reinit = 0;
				first = 1;
			}
			pthread_mutex_unlock(&m->lock);
			errno = 0;
			int rc = first
			             ? mosquitto_connect_async(m->mosq, m->opt->host, m->opt->port,
			                                       (int)m->opt->keepalive_sec)
			             : mosquitto_reconnect_async(m->mosq);
			first = 0;
			if (rc != MOSQ_ERR_SUCCESS) {
				char why[200];
				snprintf(why, sizeof(why), "%s",
				         rc == MOSQ_ERR_ERRNO ? strerror(errno)
				                              : mosquitto_strerror(rc));
				log_conn_error(m, why);
				backoff_wait(m, delay);
				delay = delay * 2 < m->opt->reconnect_max_ms
				            ? delay * 2
				            : m->opt->reconnect_max_ms;
				continue;
			}
			sock_up = 1;
		}
		int rc = mosquitto_loop(m->mosq, 1000, 1);
		pthread_mutex_lock(&m->lock);
		int up = m->connected, refused = m->refused_now;
		pthread_mutex_unlock(&m->lock);
		if (up) {
			delay = m->opt->reconnect_min_ms;
		}
		if (rc != MOSQ_ERR_SUCCESS) {
			const char *why =
			    rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc);
			if (up) {
				went_down(m, why);
			} else if (!atomic_load(&m->stopping) && rc != MOSQ_ERR_NO_CONN &&
			           !refused) {
				log_conn_error(m, why);
			}
			sock_up = 0;
			if (atomic_load(&m->stopping)) {
				break;
			}
			backoff_wait(m, delay);
			delay = delay * 2 < m->opt->reconnect_max_ms ? delay * 2
			                                             : m->opt->reconnect_max_ms;
		}
	}
	return NULL;
}

/* ---- life cycle ---- */

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static void lib_init(void)
{
	mosquitto_lib_init();
}

static void mqtt_free(mqtt_comm_t *m)
{
	if (m->mosq != NULL) {
		mosquitto_destroy(m->mosq);
	}
	for (size_t i = 0; i < m->chan_count; i++) {
		free(m->chans[i].data);
	}
	free(m->chans);
	free(m->chan_index);
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->room_lock);
	pthread_cond_destroy(&m->room);
	free(m);
}

static int mqtt_open(const hakoi_comm_ctx_t *ctx, void **impl, hako_error_t *err)
{
	pthread_once(&lib_once, lib_init);
	mqtt_comm_t *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		return HAKO_ENOMEM;
	}
	m->ctx = *ctx;
	m->cfg = ctx->cfg;
	m->opt = ctx->cfg->opts;
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&m->room_lock, NULL);
	pthread_cond_init(&m->room, NULL);
	snprintf(m->sub_topic, sizeof(m->sub_topic), "%s/#", m->opt->topic_prefix);
	snprintf(m->where, sizeof(m->where), "broker %s:%u", m->opt->host, (unsigned)m->opt->port);
	m->chans = calloc(m->opt->pending_max, sizeof(*m->chans));
	m->chan_hcap = 2;
	while (m->chan_hcap < 2u * m->opt->pending_max) {
		m->chan_hcap *= 2;
	}
	m->chan_index = calloc(m->chan_hcap, sizeof(*m->chan_index));
	m->mosq = mosquitto_new(m->opt->client_id, true, m);
	if (m->chans == NULL || m->chan_index == NULL || m->mosq == NULL) {
		hako_error_set(err, HAKO_ENOMEM, m->cfg->path, 0, 0,
		               "mqtt: cannot create the client: %s",
		               m->mosq == NULL ? strerror(errno) : "out of memory");
		mqtt_free(m);
		return HAKO_ENOMEM;
	}
	client_setup(m);
	*impl = m;
	return 0;
}

static void client_setup(mqtt_comm_t *m)
{
	mosquitto_threaded_set(m->mosq, true);
	mosquitto_int_option(m->mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
	/* The window is ours (send_queue_depth); libmosquitto's own (20 by default) would only
	 * queue the rest of it unbounded inside the library. */
	mosquitto_int_option(m->mosq, MOSQ_OPT_SEND_MAXIMUM,
	                     m->cfg->send_queue_depth < 65535 ? (int)m->cfg->send_queue_depth
	                                                      : 65535);
	if (m->opt->username[0] != '\0') {
		mosquitto_username_pw_set(m->mosq, m->opt->username,
		                          m->opt->password[0] != '\0' ? m->opt->password : NULL);
	}
	mosquitto_connect_callback_set(m->mosq, on_connect);
	mosquitto_disconnect_callback_set(m->mosq, on_disconnect);
	mosquitto_publish_callback_set(m->mosq, on_publish);
	mosquitto_message_callback_set(m->mosq, on_message);
}

static int mqtt_start(void *impl, hako_domain_t *dom, hako_error_t *err)
{
	(void)dom;
	mqtt_comm_t *m = impl;
	atomic_store(&m->stopping, 0);
	int r = pthread_create(&m->thread, NULL, mqtt_thread, m);
	if (r != 0) {
		hako_error_set(err, HAKO_ENOMEM, m->cfg->path, 0, 0,
		               "mqtt: cannot start its thread: %s", strerror(r));
		return HAKO_ENOMEM;
	}
	m->started = 1;
	return 0;
}

/* What was handed to the broker connection goes out first (QoS 0: written; QoS 1/2:
 * acknowledged), within write_timeout_ms; then a clean DISCONNECT. */
static void mqtt_stop(void *impl)
{
	mqtt_comm_t *m = impl;
	if (!m->started) {
		return;
	}
	uint32_t wait_ms = m->opt->write_timeout_ms > 0 ? m->opt->write_timeout_ms : 1000;
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	uint64_t ns = (uint64_t)dl.tv_nsec + (uint64_t)wait_ms * 1000000u;
	dl.tv_sec += (time_t)(ns / 1000000000u);
	dl.tv_nsec = (long)(ns % 1000000000u);
	pthread_mutex_lock(&m->room_lock);
	atomic_fetch_add(&m->room_waiters, 1);
	for (;;) {
		pthread_mutex_lock(&m->lock);
		int up = m->connected;
		pthread_mutex_unlock(&m->lock);
		if (!up || atomic_load(&m->inflight) <= 0 ||
		    pthread_cond_timedwait(&m->room, &m->room_lock, &dl) != 0) {
			break;
		}
	}
	atomic_fetch_sub(&m->room_waiters, 1);
	pthread_mutex_unlock(&m->room_lock);

	pthread_mutex_lock(&m->lock);
	atomic_store(&m->stopping, 1);
	pthread_cond_broadcast(&m->wake);
	pthread_mutex_unlock(&m->lock);
	mosquitto_disconnect(m->mosq); /* wakes the thread's loop; it then ends */
	pthread_join(m->thread, NULL);
	atomic_store(&m->thread_up, 0);
	m->started = 0;
	went_down(m, "stopped");
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->chan_count; i++) {
		m->chans[i].pending = 0; /* what still waited is dropped with the stop */
	}
	pthread_mutex_unlock(&m->lock);
	uint64_t refused = refused_total(m);
	if (refused > 0) {
		HAKO_INFO(
		    "endpoint '%s': mqtt: %llu messages refused (outside the prefix %llu, bad "
		    "topic %llu, unknown channel %llu, empty %llu, too big for the channel "
		    "%llu, over max_body_bytes %llu)",
		    m->ctx.ep_name, (unsigned long long)refused,
		    (unsigned long long)m->refused[R_OUTSIDE],
		    (unsigned long long)m->refused[R_BAD_TOPIC],
		    (unsigned long long)m->refused[R_UNKNOWN],
		    (unsigned long long)m->refused[R_EMPTY],
		    (unsigned long long)m->refused[R_TOO_BIG],
		    (unsigned long long)m->refused[R_OVER_LIMIT]);
	}
}

static void mqtt_close(void *impl)
{
	mqtt_comm_t *m = impl;
	mqtt_stop(m);
	mqtt_free(m);
}

const hakoi_comm_t hakoi_comm_mqtt = {
    .name = "mqtt",
    .protocol = HAKO_COMM_MQTT,
    .opts_size = sizeof(mqtt_opts_t),
    .defaults = mqtt_defaults,
    .fields = mqtt_fields,
    .open = mqtt_open,
    .start = mqtt_start,
    .stop = mqtt_stop,
    .close = mqtt_close,
    .send = mqtt_send,
};

#endif
