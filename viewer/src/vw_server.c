/* The HTTP + WebSocket server of hako-viewer, on libwebsockets, in one thread.
 *
 * A timer samples the domain (vw_sampler) and hands every session what it asked for: the state
 * (small: no channel values; the RD part at most every RD_MIN_USEC), the channel list when it
 * changed, the map's positions (if asked: "view"), the values of the channels it watches (at
 * most VW_WATCH_MAX: "watch"). Each shared message is encoded once per sample, each value
 * converted once per write, however many sessions want it.
 *
 * Bounded: a session holds at most one message of each kind and one frame per subscribed
 * channel; one a slow client did not take is replaced (counted as dropped), never queued
 * behind. A session spends at most session_budget bytes a second (a token bucket): past it, it
 * skips samples (counted as throttled). The sampling rate itself drops while the viewer uses
 * more than cpu_max of a core (measured each second), and climbs back when it uses less. So
 * neither a client that stops reading nor fifty greedy ones can take the simulation's CPU, and
 * nothing here ever makes a writer of the domain wait.
 *
 * Binary messages are Hakoniwa's v2 frames (hako/frame.h, decoded and encoded by the endpoint
 * library): DECLARE_READ / REQUEST_READ subscribe a channel, whose PDU then comes as PDU_DATA
 * frames when it changes (at the sampling rate); PDU_DATA and DECLARE_WRITE from a client need
 * the token (in the URL of the WebSocket: ?token=...).
 *
 * Who may ask: a request (a page, a WebSocket) is served only if its Host is a name of this
 * viewer (loopback's, the bind address, --allow-host; any address when bound to all) and its
 * Origin, if it has one, is the viewer's own page. A page of another site whose name was made to
 * resolve to this machine (DNS rebinding) names its own host, and is refused with 403.
 *
 * What a peer makes us log is rationed per kind: a few lines each LOG_WINDOW, then one line
 * with the count of those not logged, so that no client can fill the disk with refusals.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "hako/frame.h"
#include "hako/log.h"

#include "vw_fox.h"
#include "vw_msg.h"
#include "vw_server.h"

#define VW_SUB_MAX    512       /* channels one session may subscribe (a fleet of 256 drones) */
#define VW_SEND_LIMIT (1 << 20) /* bytes written per WRITEABLE callback at most */
#define RD_MIN_USEC   500000    /* the RD part goes to a session at 2 Hz at most */
#define CPU_WINDOW    1000000   /* the viewer's CPU use is measured over this (us) */
#define LOG_BURST     5         /* lines of one kind a peer may make us log in a window */
#define LOG_WINDOW    10000000  /* us; then one line counts those not logged */
#define VW_HOST_MAX   256       /* a host name, an address */

typedef struct vw_sub {
	char robot[HAKO_FRAME_ROBOT_MAX];
	int32_t id;
	uint64_t sent_seq;
	int force; /* send the current value even if it did not change */
	int index; /* where the channel was in the sampler's list, -1 = not looked up yet */
	vw_msg_t *pending;
} vw_sub_t;

typedef struct vw_watch {
	vw_key_t key;
	int index; /* as vw_sub_t.index */
} vw_watch_t;

/* The kinds of lines a peer can make us log, each rationed on its own. */
enum { LOG_HOST, LOG_SESSIONS, LOG_TOKEN, LOG_MESSAGE, LOG_PATH, LOG_COMMAND, LOG_KINDS };

static const char *const log_kind[LOG_KINDS] = {
    "requests for another host",
    "sessions over --max-sessions",
    "requests without the token",
    "bad messages",
    "bad paths",
    "commands and PDU writes",
};

typedef struct vw_ration {
	hako_time_t since; /* the window began */
	int lines;         /* logged in this window */
	uint64_t held;     /* not logged in this window */
	char last[64];     /* the peer of the last one held */
} vw_ration_t;

/* A session's pending messages, written in this order. */
enum { SLOT_REPLY, SLOT_LIST, SLOT_STATE, SLOT_POSITIONS, SLOT_VALUES, SLOTS };

typedef struct vw_sess {
	struct vw_sess *next;
	struct lws *wsi;
	char peer[64];
	int authorized; /* the upgrade request carried the token */
	vw_msg_t *slot[SLOTS];
	uint64_t tag[SLOTS]; /* LIST: its version + 1; STATE: the RD version + 1 it carries, or 0 */
	uint64_t list_sent;  /* the list version + 1 the client has, 0 none */
	uint64_t rd_sent;    /* the RD version + 1 the client has, 0 none */
	hako_time_t rd_sent_at;
	int want_rd;        /* the RD part (EUs, hand-offs); default yes */
	int want_positions; /* the map's positions; default no */
	vw_watch_t watch[VW_WATCH_MAX];
	int nwatch;
	double credit; /* bytes it may still be sent (token bucket of session_budget a second) */
	vw_sub_t subs[VW_SUB_MAX];
	int nsubs;
	int sub_next;
	vw_rx_t rx;
} vw_sess_t;

struct vw_server {
	vw_server_config_t cfg;
	char www[PATH_MAX];
	struct lws_context *lws;
	struct lws_vhost *vh;
	struct lws_protocols protocols[3];
	lws_sorted_usec_list_t tick;
	vw_fox_t *fox;                   /* the Foxglove sessions (vw_fox.h) */
	lws_sorted_usec_list_t fox_tick; /* their pace: --foxglove-rate-hz */
	int fox_ticking;
	hako_time_t fox_last;
	vw_sess_t *sessions;
	int nsessions;
	int port;
	vw_stats_t stats;
	vw_msg_t *list_msg; /* the channel list, encoded once per version */
	uint64_t list_msg_version;
	vw_msg_t **frames; /* this sample's PDU_DATA frame of each channel, shared by sessions */
	int frames_cap;
	double hz; /* the sampling rate now */
	hako_time_t last_tick;
	hako_time_t cpu_wall;
	double cpu_used; /* s of CPU at cpu_wall */
	double cpu;      /* fraction of a core over the last window */
	vw_ration_t ration[LOG_KINDS];
	int bound_all;                         /* bound to every address (0.0.0.0, ::) */
	char bind[VW_HOST_MAX];                /* the bind address, lowercase */
	char hostname[VW_HOST_MAX];            /* gethostname(), lowercase; "" if none */
	char allow[VW_ALLOW_MAX][VW_HOST_MAX]; /* --allow-host, lowercase */
	int nallow;
};

static void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void vlog(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "hako-viewer: %s\n", line);
}

/* Say how many lines of a kind were held back, and begin a new window. */
static void ration_flush(vw_server_t *v, int kind, hako_time_t now)
{
	vw_ration_t *r = &v->ration[kind];
	if (r->held > 0) {
		vlog("%llu more %s in the last %lld s, not logged (the last from %s)",
		     (unsigned long long)r->held, log_kind[kind],
		     (long long)((now - r->since + 999999) / 1000000), r->last);
	}
	r->since = now;
	r->lines = 0;
	r->held = 0;
}

/* A line a peer made us log: at most LOG_BURST of a kind per LOG_WINDOW, the rest counted. */
static void plog(vw_server_t *v, int kind, const char *peer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void plog(vw_server_t *v, int kind, const char *peer, const char *fmt, ...)
{
	hako_time_t now = hako_now_usec();
	vw_ration_t *r = &v->ration[kind];
	if (now - r->since >= LOG_WINDOW) {
		ration_flush(v, kind, now);
	}
	if (r->lines >= LOG_BURST) {
		r->held++;
		snprintf(r->last, sizeof(r->last), "%s", peer);
		return;
	}
	r->lines++;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	vlog("%s", line);
}

/* The counts held back by windows that have ended (each tick), or by all (at the end). */
static void ration_check(vw_server_t *v, hako_time_t now, int all)
{
	for (int k = 0; k < LOG_KINDS; k++) {
		if (v->ration[k].held > 0 && (all || now - v->ration[k].since >= LOG_WINDOW)) {
			ration_flush(v, k, now);
		}
	}
}

/* ---- messages ---- */

static uint64_t sess_pending(const vw_sess_t *s)
{
	uint64_t n = 0;
	for (int k = 0; k < SLOTS; k++) {
		n += s->slot[k] != NULL ? s->slot[k]->len : 0;
	}
	for (int i = 0; i < s->nsubs; i++) {
		n += s->subs[i].pending != NULL ? s->subs[i].pending->len : 0;
	}
	return n;
}

/* Replace a pending message; one a slow client never took is dropped. */
static int slot_put(vw_server_t *v, vw_msg_t **slot, vw_msg_t *m)
{
	int dropped = vw_msg_put(slot, m);
	v->stats.frames_dropped += (uint64_t)dropped;
	return dropped;
}

static void reply(vw_server_t *v, vw_sess_t *s, const char *cmd, int ok, const char *error)
{
	vw_buf_t b = {0};
	vw_buf_puts(&b, "{\"type\":\"reply\",\"cmd\":");
	vw_buf_json_str(&b, cmd);
	vw_buf_printf(&b, ",\"ok\":%s", ok ? "true" : "false");
	if (error != NULL) {
		vw_buf_puts(&b, ",\"error\":");
		vw_buf_json_str(&b, error);
	}
	vw_buf_puts(&b, "}");
	if (!b.oom) {
		vw_msg_t *m = vw_msg_new(b.data, b.len, 0);
		if (m != NULL) {
			slot_put(v, &s->slot[SLOT_REPLY], m);
			vw_msg_unref(m);
			lws_callback_on_writable(s->wsi);
		}
	}
	vw_buf_free(&b);
}

/* ---- sampling ---- */

static vw_msg_t *pdu_frame(const vw_state_t *st, const vw_channel_t *c)
{
	hako_frame_t f;
	memset(&f, 0, sizeof(f));
	snprintf(f.robot, sizeof(f.robot), "%s", c->robot);
	f.channel_id = c->id;
	f.request_type = HAKO_FRAME_PDU_DATA;
	f.hako_time_us = (uint64_t)st->info.world_time;
	f.body = c->raw;
	f.body_len = (uint32_t)c->raw_len;
	size_t size = hako_frame_size(HAKO_FRAME_V2, c->robot, f.body_len), len = 0;
	vw_msg_t *m = size > 0 ? vw_msg_new(NULL, size, 1) : NULL;
	if (m != NULL && hako_frame_encode(HAKO_FRAME_V2, &f, vw_msg_payload(m), size, &len) != 0) {
		vw_msg_unref(m);
		m = NULL;
	}
	return m;
}

/* A subscription's channel, found where it was last time: the list changes only when the
 * sampler attaches again, and a fleet has thousands of channels to search each sample. */
static vw_channel_t *sub_channel(vw_server_t *v, vw_state_t *st, vw_sub_t *sub)
{
	if (sub->index >= 0 && sub->index < st->nchannels) {
		vw_channel_t *c = &st->channels[sub->index];
		if (c->id == sub->id && strcmp(c->robot, sub->robot) == 0) {
			return c;
		}
	}
	vw_channel_t *c = vw_sampler_channel(v->cfg.sampler, sub->robot, sub->id);
	sub->index = c != NULL ? (int)(c - st->channels) : -1;
	return c;
}

static vw_msg_t *buf_msg(vw_buf_t *b)
{
	vw_msg_t *m = !b->oom && b->data != NULL ? vw_msg_new(b->data, b->len, 0) : NULL;
	vw_buf_free(b);
	return m;
}

static vw_channel_t *watch_channel(vw_server_t *v, vw_state_t *st, vw_watch_t *w)
{
	if (w->index >= 0 && w->index < st->nchannels) {
		vw_channel_t *c = &st->channels[w->index];
		if (c->id == w->key.id && strcmp(c->robot, w->key.robot) == 0) {
			return c;
		}
	}
	vw_channel_t *c = vw_sampler_channel(v->cfg.sampler, w->key.robot, w->key.id);
	w->index = c != NULL ? (int)(c - st->channels) : -1;
	return c;
}

/* The values of the channels a session watches: each read and converted once per write (the
 * sampler caches it), only copied here. */
static vw_msg_t *values_msg(vw_server_t *v, vw_state_t *st, vw_sess_t *s)
{
	vw_buf_t b = {0};
	vw_buf_printf(&b, "{\"type\":\"values\",\"world_time_usec\":%lld,\"values\":[",
	              (long long)st->info.world_time);
	int n = 0;
	for (int i = 0; i < s->nwatch; i++) {
		vw_channel_t *c = watch_channel(v, st, &s->watch[i]);
		if (c == NULL) {
			continue;
		}
		vw_sampler_json(v->cfg.sampler, c);
		if (n++ > 0) {
			vw_buf_puts(&b, ",");
		}
		vw_value_encode(c, &b);
	}
	vw_buf_puts(&b, "]}");
	return buf_msg(&b);
}

static vw_msg_t *positions_msg(vw_server_t *v, vw_state_t *st)
{
	for (int i = 0; i < st->nchannels; i++) {
		if (st->channels[i].position) {
			vw_sampler_read(v->cfg.sampler, &st->channels[i]);
		}
	}
	vw_buf_t b = {0};
	vw_positions_encode(st, &b);
	return buf_msg(&b);
}

static vw_msg_t *list_msg(vw_server_t *v, vw_state_t *st)
{
	if (v->list_msg == NULL || v->list_msg_version != st->list_version) {
		vw_msg_unref(v->list_msg);
		vw_buf_t b = {0};
		vw_list_encode(st, &b);
		v->list_msg = buf_msg(&b);
		v->list_msg_version = st->list_version;
	}
	return v->list_msg;
}

/* A PDU_DATA frame of channel c, made once per sample for all the sessions subscribing it. */
static vw_msg_t *shared_frame(vw_server_t *v, vw_state_t *st, vw_channel_t *c)
{
	int i = (int)(c - st->channels);
	if (v->frames_cap < st->nchannels) {
		vw_msg_t **f = realloc(v->frames, (size_t)st->nchannels * sizeof(*f));
		if (f == NULL) {
			return NULL;
		}
		memset(f + v->frames_cap, 0, (size_t)(st->nchannels - v->frames_cap) * sizeof(*f));
		v->frames = f;
		v->frames_cap = st->nchannels;
	}
	if (v->frames[i] == NULL) {
		v->frames[i] = pdu_frame(st, c);
	}
	return v->frames[i];
}

static void frames_release(vw_server_t *v)
{
	for (int i = 0; i < v->frames_cap; i++) {
		vw_msg_unref(v->frames[i]);
		v->frames[i] = NULL;
	}
}

static void queue_subs(vw_server_t *v, vw_state_t *st, vw_sess_t *s)
{
	for (int i = 0; i < s->nsubs; i++) {
		vw_sub_t *sub = &s->subs[i];
		vw_channel_t *c = sub_channel(v, st, sub);
		if (c == NULL || (c->seq == sub->sent_seq && !sub->force) ||
		    vw_sampler_read(v->cfg.sampler, c) != 0 || c->raw_len == 0) {
			continue;
		}
		vw_msg_t *f = shared_frame(v, st, c);
		if (f != NULL) {
			slot_put(v, &sub->pending, f);
			sub->sent_seq = c->seq;
			sub->force = 0;
		}
	}
}

/* The sampling rate follows the viewer's CPU use: down in proportion when it used more than
 * cpu_max of a core over the last second, back up slowly when it uses much less. */
static void adapt_rate(vw_server_t *v, hako_time_t now)
{
	if (now - v->cpu_wall < CPU_WINDOW) {
		return;
	}
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0) {
		return;
	}
	double used = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	              (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	if (v->cpu_wall > 0) {
		v->cpu = (used - v->cpu_used) * 1e6 / (double)(now - v->cpu_wall);
		double max = v->cfg.cpu_max, hz = v->hz;
		if (v->cpu > max) {
			hz = hz * max / v->cpu * 0.9;
		} else if (v->cpu < max * 0.5) {
			hz = hz * 1.25 + 0.25;
		}
		hz = hz < 1.0 ? 1.0 : hz > v->cfg.rate_hz ? v->cfg.rate_hz : hz;
		if ((int)(hz * 10) != (int)(v->hz * 10) && (hz < v->hz * 0.8 || hz == 1.0)) {
			HAKO_INFO("hako-viewer: %.0f %% of a core: sampling at %.1f Hz",
			          v->cpu * 100, hz);
		}
		v->hz = hz;
	}
	v->cpu_used = used;
	v->cpu_wall = now;
}

static void tick_cb(lws_sorted_usec_list_t *sul)
{
	vw_server_t *v = lws_container_of(sul, vw_server_t, tick);
	hako_time_t now = hako_now_usec();
	adapt_rate(v, now);
	ration_check(v, now, 0);
	double dt = v->last_tick > 0 ? (double)(now - v->last_tick) / 1e6 : 0.0;
	v->last_tick = now;
	vw_sampler_tick(v->cfg.sampler);
	vw_state_t *st = vw_sampler_state(v->cfg.sampler);
	uint64_t pending = 0;
	for (vw_sess_t *s = v->sessions; s != NULL; s = s->next) {
		pending += sess_pending(s);
	}
	v->stats.sessions = v->nsessions;
	v->stats.pending_bytes = pending;
	st->stats = v->stats;
	st->stats.fox = vw_fox_stats(v->fox);
	st->sample_hz = v->hz;
	st->sample_hz_max = v->cfg.rate_hz;
	st->cpu = v->cpu;

	vw_msg_t *state[2] = {NULL, NULL}, *positions = NULL;
	double budget = (double)v->cfg.session_budget;
	for (vw_sess_t *s = v->sessions; s != NULL; s = s->next) {
		s->credit += budget * dt;
		s->credit = s->credit > budget ? budget : s->credit;
		if (s->credit <= 0) {
			v->stats.frames_throttled++;
			continue;
		}
		uint64_t lv = st->list_version + 1;
		if (st->attached && s->list_sent != lv && s->tag[SLOT_LIST] != lv) {
			vw_msg_t *m = list_msg(v, st);
			if (m != NULL) {
				slot_put(v, &s->slot[SLOT_LIST], m);
				s->tag[SLOT_LIST] = lv;
			}
		}
		uint64_t rv = st->rd_version + 1;
		int rd = s->want_rd && s->rd_sent != rv &&
		         (s->rd_sent == 0 || now - s->rd_sent_at >= RD_MIN_USEC);
		if (state[rd] == NULL) {
			vw_buf_t b = {0};
			vw_state_encode(st, rd, &b);
			state[rd] = buf_msg(&b);
		}
		if (state[rd] != NULL) {
			slot_put(v, &s->slot[SLOT_STATE], state[rd]);
			s->tag[SLOT_STATE] = rd ? rv : 0;
		}
		if (s->want_positions && st->attached) {
			positions = positions != NULL ? positions : positions_msg(v, st);
			if (positions != NULL) {
				slot_put(v, &s->slot[SLOT_POSITIONS], positions);
			}
		}
		if (s->nwatch > 0 && st->attached) {
			vw_msg_t *m = values_msg(v, st, s);
			if (m != NULL) {
				slot_put(v, &s->slot[SLOT_VALUES], m);
				vw_msg_unref(m);
			}
		}
		queue_subs(v, st, s);
		uint64_t p = sess_pending(s);
		v->stats.pending_max = p > v->stats.pending_max ? p : v->stats.pending_max;
		lws_callback_on_writable(s->wsi);
	}
	vw_msg_unref(state[0]);
	vw_msg_unref(state[1]);
	vw_msg_unref(positions);
	frames_release(v);
	lws_sul_schedule(v->lws, 0, &v->tick, tick_cb, (lws_usec_t)(1e6 / v->hz));
}

/* ---- sessions ---- */

/* ---- who may ask ---- */

/* What a client sent, fit for a log line: bytes a terminal would act on become '?'. */
static void printable(char *text)
{
	for (unsigned char *c = (unsigned char *)text; *c != '\0'; c++) {
		*c = *c < 0x20 || *c >= 0x7f ? '?' : *c;
	}
}

static int is_ipv4(const char *name)
{
	struct in_addr a;
	return inet_pton(AF_INET, name, &a) == 1;
}

static int is_ipv6(const char *name)
{
	struct in6_addr a;
	return inet_pton(AF_INET6, name, &a) == 1;
}

/* The name of a Host header's value ("name", "name:port", "[v6]", "[v6]:port"), lowercase and
 * without the port (an IPv6 address without its brackets): 0, or -1 if it is none. */
static int host_name(const char *host, char *name, size_t cap)
{
	const char *end, *rest;
	int bracketed = host[0] == '[';
	if (bracketed) {
		host++;
		end = strchr(host, ']');
		if (end == NULL) {
			return -1;
		}
		rest = end + 1;
	} else {
		end = host + strcspn(host, ":");
		rest = end;
	}
	if (*rest == ':') {
		size_t digits = strspn(rest + 1, "0123456789");
		if (digits < 1 || digits > 5 || rest[1 + digits] != '\0') {
			return -1;
		}
	} else if (*rest != '\0') {
		return -1;
	}
	size_t n = (size_t)(end - host);
	if (n == 0 || n >= cap) {
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)host[i];
		if (!isalnum(c) && c != '.' && c != '-' && c != '_' && c != ':') {
			return -1;
		}
		name[i] = (char)tolower(c);
	}
	name[n] = '\0';
	/* brackets hold an IPv6 address, and only they may hold a ':' */
	return bracketed ? (is_ipv6(name) ? 0 : -1) : (strchr(name, ':') == NULL ? 0 : -1);
}

static int is_loopback(const char *name)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (strcmp(name, "localhost") == 0) {
		return 1;
	}
	if (inet_pton(AF_INET, name, &a4) == 1) {
		return (ntohl(a4.s_addr) >> 24) == 127;
	}
	return inet_pton(AF_INET6, name, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* The same name, or the same address however it is written ("::1", "0:0::1"). */
static int same_host(const char *a, const char *b)
{
	unsigned char x[sizeof(struct in6_addr)], y[sizeof(struct in6_addr)];
	if (strcasecmp(a, b) == 0) {
		return 1;
	}
	return (inet_pton(AF_INET6, a, x) == 1 && inet_pton(AF_INET6, b, y) == 1 &&
	        memcmp(x, y, sizeof(struct in6_addr)) == 0) ||
	       (inet_pton(AF_INET, a, x) == 1 && inet_pton(AF_INET, b, y) == 1 &&
	        memcmp(x, y, sizeof(struct in_addr)) == 0);
}

/* Whether a Host names this viewer. Only a name can be made to point here by someone else's
 * DNS: loopback's names and addresses, the bind address, the machine's own name and the names
 * the user gave are ours; when bound to all addresses, so is any address (a page at
 * http://192.0.2.7:8080/ is this viewer's own). The port is not checked: a tunnel
 * (ssh -L 9000:localhost:8080) changes it. */
static int host_ok(const vw_server_t *v, const char *host)
{
	char name[VW_HOST_MAX];
	if (host_name(host, name, sizeof(name)) != 0) {
		return 0;
	}
	if (is_loopback(name) || same_host(name, v->bind)) {
		return 1;
	}
	if (v->bound_all && (is_ipv4(name) || is_ipv6(name) || strcmp(name, v->hostname) == 0)) {
		return 1;
	}
	for (int i = 0; i < v->nallow; i++) {
		if (same_host(name, v->allow[i])) {
			return 1;
		}
	}
	return 0;
}

/* A Foxglove app in a browser opens its WebSocket from its own page: an Origin in
 * --foxglove-origin (https://app.foxglove.dev by default) may open a Foxglove session, not the
 * viewer's page's. */
static int fox_origin_ok(const vw_server_t *v, struct lws *wsi, const char *origin)
{
	char proto[256] = "";
	if (lws_hdr_copy(wsi, proto, sizeof(proto), WSI_TOKEN_PROTOCOL) <= 0 ||
	    strstr(proto, VW_FOX_PROTOCOL) == NULL) {
		return 0;
	}
	for (int i = 0; i < v->cfg.nfox_origins; i++) {
		if (strcasecmp(origin, v->cfg.fox_origins[i]) == 0) {
			return 1;
		}
	}
	return 0;
}

/* Whether a request may be served: why not in `why` (for the log). A browser always sends
 * Host, and Origin on a WebSocket: the page that opens it must be the viewer's own
 * (http://<Host>), so another site open in the same browser cannot watch, nor one that made its
 * name resolve to this machine (its Host is its own name). A client that is no browser sends no
 * Origin. */
static int request_ok(const vw_server_t *v, struct lws *wsi, char *why, size_t len)
{
	char origin[VW_HOST_MAX + 16] = "", host[VW_HOST_MAX] = "";
	if (lws_hdr_total_length(wsi, WSI_TOKEN_HOST) <= 0) {
		snprintf(why, len, "no Host header");
		return 0;
	}
	if (lws_hdr_copy(wsi, host, sizeof(host), WSI_TOKEN_HOST) < 0) {
		snprintf(why, len, "a Host header of more than %d bytes", VW_HOST_MAX - 1);
		return 0;
	}
	printable(host);
	if (!host_ok(v, host)) {
		snprintf(why, len,
		         "Host %.100s is not a name of this viewer (bound to %s; --allow-host adds "
		         "one)",
		         host, v->bind);
		return 0;
	}
	if (lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) <= 0) {
		return 1;
	}
	if (lws_hdr_copy(wsi, origin, sizeof(origin), WSI_TOKEN_ORIGIN) < 0) {
		snprintf(why, len, "an Origin header of more than %d bytes",
		         (int)sizeof(origin) - 1);
		return 0;
	}
	printable(origin);
	const char *o = strncmp(origin, "http://", 7) == 0    ? origin + 7
	                : strncmp(origin, "https://", 8) == 0 ? origin + 8
	                                                      : NULL;
	if (o != NULL && strcasecmp(o, host) == 0) {
		return 1;
	}
	if (fox_origin_ok(v, wsi, origin)) {
		return 1;
	}
	snprintf(why, len, "Origin %.100s is not this viewer's page (Host %.100s)", origin, host);
	return 0;
}

/* The names a request may give, from the config: HAKO_EINVAL with why for a bad one. */
static int hosts_init(vw_server_t *v, const vw_server_config_t *cfg, char *why, size_t len)
{
	char *b = v->bind;
	snprintf(b, sizeof(v->bind), "%s", cfg->bind);
	for (; *b != '\0'; b++) {
		*b = (char)tolower((unsigned char)*b);
	}
	v->bound_all = strcmp(v->bind, "0.0.0.0") == 0 || strcmp(v->bind, "::") == 0;
	if (gethostname(v->hostname, sizeof(v->hostname)) == 0) {
		v->hostname[sizeof(v->hostname) - 1] = '\0';
		for (b = v->hostname; *b != '\0'; b++) {
			*b = (char)tolower((unsigned char)*b);
		}
	}
	if (cfg->nallow_hosts > VW_ALLOW_MAX) {
		snprintf(why, len, "more than %d --allow-host names", VW_ALLOW_MAX);
		return HAKO_EINVAL;
	}
	for (int i = 0; i < cfg->nallow_hosts; i++) {
		const char *a = cfg->allow_hosts[i];
		char host[VW_HOST_MAX + 2];
		size_t n = strlen(a);
		/* an IPv6 address may come with or without its brackets; nothing comes with a port
		 */
		int ok = n > 0 && n < VW_HOST_MAX;
		if (ok && is_ipv6(a)) {
			snprintf(host, sizeof(host), "[%s]", a);
		} else if (ok && (strchr(a, ':') == NULL || (a[0] == '[' && a[n - 1] == ']'))) {
			snprintf(host, sizeof(host), "%s", a);
		} else {
			ok = 0;
		}
		if (!ok || host_name(host, v->allow[v->nallow], VW_HOST_MAX) != 0) {
			snprintf(
			    why, len,
			    "--allow-host %.100s: not a host name or address (give it without a "
			    "port: any port is accepted)",
			    a);
			return HAKO_EINVAL;
		}
		v->nallow++;
	}
	return 0;
}

static int sess_open(vw_server_t *v, struct lws *wsi, vw_sess_t **pss)
{
	char peer[64] = "?", why[256];
	lws_get_peer_simple(wsi, peer, sizeof(peer));
	if (v->nsessions >= v->cfg.max_sessions) {
		plog(v, LOG_SESSIONS, peer,
		     "refused a session from %s: %d sessions already (--max-sessions)", peer,
		     v->nsessions);
		return -1;
	}
	if (!request_ok(v, wsi, why, sizeof(why))) {
		plog(v, LOG_HOST, peer, "refused a WebSocket from %s: %s", peer, why);
		return -1;
	}
	vw_sess_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return -1;
	}
	s->wsi = wsi;
	snprintf(s->peer, sizeof(s->peer), "%s", peer);
	s->want_rd = 1;
	s->credit = (double)v->cfg.session_budget;
	char args[512], token[128];
	if (lws_hdr_copy(wsi, args, sizeof(args), WSI_TOKEN_HTTP_URI_ARGS) > 0 &&
	    vw_query_arg(args, "token", token, sizeof(token)) == 0) {
		s->authorized = vw_token_equal(v->cfg.token, token);
		if (!s->authorized) {
			v->stats.refused_token++;
			plog(v, LOG_TOKEN, peer, "session from %s: bad token in its URL, read-only",
			     peer);
		}
	}
	s->next = v->sessions;
	v->sessions = s;
	v->nsessions++;
	*pss = s;
	return 0;
}

static void sess_close(vw_server_t *v, vw_sess_t **pss)
{
	vw_sess_t *s = *pss;
	if (s == NULL) {
		return;
	}
	for (vw_sess_t **p = &v->sessions; *p != NULL; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			break;
		}
	}
	v->nsessions--;
	for (int k = 0; k < SLOTS; k++) {
		vw_msg_unref(s->slot[k]);
	}
	for (int i = 0; i < s->nsubs; i++) {
		vw_msg_unref(s->subs[i].pending);
	}
	vw_rx_free(&s->rx);
	free(s);
	*pss = NULL;
}

static vw_msg_t **next_pending(vw_sess_t *s, int *kind)
{
	for (int k = 0; k < SLOTS; k++) {
		if (s->slot[k] != NULL) {
			*kind = k;
			return &s->slot[k];
		}
	}
	for (int k = 0; k < s->nsubs; k++) {
		int i = (s->sub_next + k) % s->nsubs;
		if (s->subs[i].pending != NULL) {
			s->sub_next = (i + 1) % s->nsubs;
			*kind = SLOTS;
			return &s->subs[i].pending;
		}
	}
	return NULL;
}

static int sess_write(vw_server_t *v, vw_sess_t *s)
{
	size_t budget = VW_SEND_LIMIT;
	vw_msg_t **slot;
	int kind;
	while ((slot = next_pending(s, &kind)) != NULL) {
		vw_msg_t *m = *slot;
		*slot = NULL;
		size_t len = m->len;
		int w = vw_msg_write(s->wsi, m);
		vw_msg_unref(m);
		if (w != 0) {
			return -1;
		}
		/* What the client now has: the list and RD part are sent again only when they
		 * change (or were replaced before it took them). */
		if (kind == SLOT_LIST) {
			s->list_sent = s->tag[SLOT_LIST];
		} else if (kind == SLOT_STATE && s->tag[SLOT_STATE] != 0) {
			s->rd_sent = s->tag[SLOT_STATE];
			s->rd_sent_at = hako_now_usec();
		}
		if (kind < SLOTS) {
			s->tag[kind] = 0;
		}
		s->credit -= (double)len;
		v->stats.frames_sent++;
		budget = len < budget ? budget - len : 0;
		if (budget == 0 || lws_partial_buffered(s->wsi) || lws_send_pipe_choked(s->wsi)) {
			break;
		}
	}
	if (next_pending(s, &kind) != NULL) {
		lws_callback_on_writable(s->wsi);
	}
	return 0;
}

static void do_command(vw_server_t *v, vw_sess_t *s, const char *text, size_t len)
{
	vw_command_t c;
	const char *why = NULL;
	if (vw_command_parse(text, len, &c, &why) != 0) {
		plog(v, LOG_MESSAGE, s->peer, "ignored a message from %s: %s", s->peer, why);
		reply(v, s, "?", 0, why);
		return;
	}
	if (c.cmd == VW_CMD_WATCH) {
		for (int i = 0; i < c.nwatch; i++) {
			s->watch[i].key = c.watch[i];
			s->watch[i].index = -1;
		}
		s->nwatch = c.nwatch;
		return;
	}
	if (c.cmd == VW_CMD_VIEW) {
		s->want_rd = c.rd >= 0 ? c.rd : s->want_rd;
		s->want_positions = c.positions >= 0 ? c.positions : s->want_positions;
		if (s->want_rd && s->tag[SLOT_STATE] == 0) {
			s->rd_sent = 0; /* the page shows it again: send it at the next sample */
		}
		return;
	}
	const char *name = vw_cmd_name(c.cmd);
	int ok = c.token[0] != '\0' ? vw_token_equal(v->cfg.token, c.token) : s->authorized;
	if (!ok) {
		v->stats.refused_token++;
		plog(v, LOG_TOKEN, s->peer, "refused %s from %s: %s", name, s->peer,
		     c.token[0] != '\0' ? "bad token" : "no token (read-only)");
		reply(v, s, name, 0,
		      c.token[0] != '\0' ? "refused: bad token" : "refused: no token");
		return;
	}
	hako_domain_t *dom = vw_sampler_domain(v->cfg.sampler);
	if (dom == NULL) {
		reply(v, s, name, 0, "no domain attached");
		return;
	}
	int r = c.cmd == VW_CMD_START  ? hako_domain_start(dom)
	        : c.cmd == VW_CMD_STOP ? hako_domain_stop(dom)
	                               : hako_domain_reset(dom);
	plog(v, LOG_COMMAND, s->peer, "%s from %s: %s", name, s->peer,
	     r == 0 ? "requested" : hako_strerror(r));
	reply(v, s, name, r == 0, r == 0 ? NULL : hako_strerror(r));
}

static int do_frame(vw_server_t *v, vw_sess_t *s, const unsigned char *buf, size_t len)
{
	hako_frame_t f;
	hako_error_t err;
	if (hako_frame_decode_message(HAKO_FRAME_V2, buf, len, (uint32_t)v->cfg.max_message, &f,
	                              &err) != 0) {
		v->stats.refused_message++;
		plog(v, LOG_MESSAGE, s->peer,
		     "refused a binary message from %s: not a v2 frame: %s (closing)", s->peer,
		     err.message);
		return -1;
	}
	if (f.request_type == HAKO_FRAME_DECLARE_READ ||
	    f.request_type == HAKO_FRAME_REQUEST_READ) {
		for (int i = 0; i < s->nsubs; i++) {
			if (s->subs[i].id == f.channel_id &&
			    strcmp(s->subs[i].robot, f.robot) == 0) {
				s->subs[i].force = 1;
				return 0;
			}
		}
		if (s->nsubs >= VW_SUB_MAX) {
			v->stats.refused_message++;
			plog(v, LOG_MESSAGE, s->peer,
			     "refused a subscription from %s: %d channels already", s->peer,
			     VW_SUB_MAX);
			return 0;
		}
		vw_sub_t *sub = &s->subs[s->nsubs++];
		memset(sub, 0, sizeof(*sub));
		snprintf(sub->robot, sizeof(sub->robot), "%s", f.robot);
		sub->id = f.channel_id;
		sub->force = 1;
		sub->index = -1;
		return 0;
	}
	if (f.request_type == HAKO_FRAME_DECLARE_WRITE || f.request_type == HAKO_FRAME_PDU_DATA) {
		if (!s->authorized) {
			v->stats.refused_token++;
			plog(v, LOG_TOKEN, s->peer,
			     "refused a PDU write to %s/%d from %s: no token (read-only)", f.robot,
			     (int)f.channel_id, s->peer);
			return 0;
		}
		hako_domain_t *dom = vw_sampler_domain(v->cfg.sampler);
		hako_channel_t *ch = NULL;
		int r = dom == NULL ? HAKO_ENOENT
		                    : hako_channel_lookup(dom, f.robot, f.channel_id, &ch);
		if (r == 0 && f.request_type == HAKO_FRAME_PDU_DATA) {
			r = hako_channel_write(ch, f.body, f.body_len);
		}
		if (r != 0) {
			plog(v, LOG_COMMAND, s->peer, "PDU %s/%d from %s not written: %s", f.robot,
			     (int)f.channel_id, s->peer, hako_strerror(r));
		}
		return 0;
	}
	HAKO_DEBUG("hako-viewer: ignored a frame of type 0x%08x from %s", f.request_type, s->peer);
	return 0;
}

static int sess_rx(vw_server_t *v, struct lws *wsi, vw_sess_t *s, const void *in, size_t len)
{
	if (s == NULL) {
		return -1;
	}
	int r = vw_rx_add(&s->rx, wsi, in, len, v->cfg.max_message);
	if (r == VW_RX_TOO_BIG) {
		v->stats.refused_message++;
		plog(v, LOG_MESSAGE, s->peer,
		     "refused a message of more than %zu bytes from %s (limit %zu; closing)",
		     v->cfg.max_message, s->peer, v->cfg.max_message);
	}
	if (r <= 0) {
		return r == 0 ? 0 : -1;
	}
	r = 0;
	if (s->rx.binary) {
		r = do_frame(v, s, s->rx.buf, s->rx.len);
	} else {
		do_command(v, s, (const char *)s->rx.buf, s->rx.len);
	}
	vw_rx_next(&s->rx);
	return r;
}

/* ---- HTTP ---- */

static int http_refuse(struct lws *wsi, unsigned status)
{
	if (lws_return_http_status(wsi, status, NULL) != 0) {
		return -1;
	}
	return lws_http_transaction_completed(wsi) != 0 ? -1 : 0;
}

/* A WebSocket from a page that is not the viewer's own is refused before the handshake: 403,
 * as a GET would be. 0 upgrades, 1 refused (answered), -1 hang up. */
static int upgrade_ok(vw_server_t *v, struct lws *wsi)
{
	char peer[64] = "?", why[512];
	if (request_ok(v, wsi, why, sizeof(why))) {
		return 0;
	}
	lws_get_peer_simple(wsi, peer, sizeof(peer));
	plog(v, LOG_HOST, peer, "refused a WebSocket from %s: %s", peer, why);
	return lws_return_http_status(wsi, HTTP_STATUS_FORBIDDEN, NULL) != 0 ? -1 : 1;
}

static int http_get(vw_server_t *v, struct lws *wsi, const char *path)
{
	char rel[VW_PATH_MAX + 1], full[PATH_MAX * 2], real[PATH_MAX], peer[64] = "?";
	char shown[201], host_why[512];
	const char *why = NULL;
	lws_get_peer_simple(wsi, peer, sizeof(peer));
	snprintf(shown, sizeof(shown), "%s", path);
	printable(shown);
	if (!request_ok(v, wsi, host_why, sizeof(host_why))) {
		plog(v, LOG_HOST, peer, "refused GET %s from %s: %s", shown, peer, host_why);
		return http_refuse(wsi, HTTP_STATUS_FORBIDDEN);
	}
	if (vw_path_check(path, rel, sizeof(rel), &why) != 0) {
		v->stats.refused_path++;
		plog(v, LOG_PATH, peer, "refused GET %s from %s: %s", shown, peer, why);
		return http_refuse(wsi, HTTP_STATUS_FORBIDDEN);
	}
	snprintf(full, sizeof(full), "%s/%s", v->www, rel);
	struct stat sb;
	/* Also the file's real path must lie in the folder: a symbolic link may point out of it. */
	size_t wl = strlen(v->www);
	if (realpath(full, real) == NULL || stat(real, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		HAKO_DEBUG("hako-viewer: GET %.200s from %s: no such file", path, peer);
		return http_refuse(wsi, HTTP_STATUS_NOT_FOUND);
	}
	if (strncmp(real, v->www, wl) != 0 || real[wl] != '/') {
		v->stats.refused_path++;
		plog(v, LOG_PATH, peer,
		     "refused GET %s from %s: its file lies outside the static folder", shown,
		     peer);
		return http_refuse(wsi, HTTP_STATUS_FORBIDDEN);
	}
	static const char extra[] = "Cache-Control: no-store\x0d\x0a"
	                            "X-Content-Type-Options: nosniff\x0d\x0a";
	int n = lws_serve_http_file(wsi, real, vw_mime(rel), extra, (int)sizeof(extra) - 1);
	if (n < 0 || (n > 0 && lws_http_transaction_completed(wsi) != 0)) {
		return -1;
	}
	return 0;
}

static int vw_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                 size_t len)
{
	struct lws_context *lc = lws_get_context(wsi);
	vw_server_t *v = lc != NULL ? lws_context_user(lc) : NULL;
	vw_sess_t **pss = user;
	if (v == NULL) {
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
	switch (reason) {
	case LWS_CALLBACK_HTTP: return http_get(v, wsi, in != NULL ? (const char *)in : "");
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: return upgrade_ok(v, wsi);
	case LWS_CALLBACK_HTTP_FILE_COMPLETION:
		return lws_http_transaction_completed(wsi) != 0 ? -1 : 0;
	case LWS_CALLBACK_ESTABLISHED: return sess_open(v, wsi, pss);
	case LWS_CALLBACK_CLOSED: sess_close(v, pss); return 0;
	case LWS_CALLBACK_RECEIVE: return sess_rx(v, wsi, pss != NULL ? *pss : NULL, in, len);
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return pss != NULL && *pss != NULL ? sess_write(v, *pss) : 0;
	default: return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

/* ---- Foxglove (vw_foxglove.c) ---- */

static void fox_log(void *ctx, int kind, const char *peer, const char *line)
{
	vw_server_t *v = ctx;
	int k = kind == VW_FOX_LOG_TOKEN     ? LOG_TOKEN
	        : kind == VW_FOX_LOG_COMMAND ? LOG_COMMAND
	                                     : LOG_MESSAGE;
	if (kind == VW_FOX_LOG_TOKEN) {
		v->stats.refused_token++;
	} else if (kind == VW_FOX_LOG_MESSAGE) {
		v->stats.refused_message++;
	}
	plog(v, k, peer, "%s", line);
}

/* The Foxglove sessions' own pace (a 256-drone fleet at 30 Hz), apart from the page's: it
 * samples the domain too, and runs only while a Foxglove session is open. */
static void fox_tick_cb(lws_sorted_usec_list_t *sul)
{
	vw_server_t *v = lws_container_of(sul, vw_server_t, fox_tick);
	hako_time_t now = hako_now_usec();
	if (vw_fox_sessions(v->fox) == 0) {
		v->fox_ticking = 0;
		return;
	}
	double dt = v->fox_last > 0 ? (double)(now - v->fox_last) / 1e6 : 0.0;
	v->fox_last = now;
	/* The channel list comes from the page's tick (it always runs, at --rate-hz); this one
	 * only looks at the write numbers of what is subscribed, and the world time. */
	vw_fox_tick(v->fox, dt);
	lws_sul_schedule(v->lws, 0, &v->fox_tick, fox_tick_cb,
	                 (lws_usec_t)(1e6 / v->cfg.foxglove_rate_hz));
}

static int fox_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len)
{
	struct lws_context *lc = lws_get_context(wsi);
	vw_server_t *v = lc != NULL ? lws_context_user(lc) : NULL;
	vw_fox_sess_t **pss = user;
	if (v == NULL) {
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
	switch (reason) {
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: return upgrade_ok(v, wsi);
	case LWS_CALLBACK_ESTABLISHED: {
		char peer[64] = "?", why[256], args[512], token[128];
		lws_get_peer_simple(wsi, peer, sizeof(peer));
		if (v->nsessions + vw_fox_sessions(v->fox) >= v->cfg.max_sessions) {
			plog(v, LOG_SESSIONS, peer,
			     "refused a Foxglove session from %s: %d sessions already "
			     "(--max-sessions)",
			     peer, v->nsessions + vw_fox_sessions(v->fox));
			return -1;
		}
		if (!request_ok(v, wsi, why, sizeof(why))) {
			plog(v, LOG_HOST, peer, "refused a WebSocket from %s: %s", peer, why);
			return -1;
		}
		int authorized = 0;
		if (lws_hdr_copy(wsi, args, sizeof(args), WSI_TOKEN_HTTP_URI_ARGS) > 0 &&
		    vw_query_arg(args, "token", token, sizeof(token)) == 0) {
			authorized = vw_token_equal(v->cfg.token, token);
			if (!authorized) {
				v->stats.refused_token++;
				plog(v, LOG_TOKEN, peer,
				     "Foxglove session from %s: bad token in its URL, read-only",
				     peer);
			}
		}
		if (vw_fox_open(v->fox, wsi, peer, authorized, pss) != 0) {
			return -1;
		}
		if (!v->fox_ticking) {
			v->fox_ticking = 1;
			v->fox_last = 0;
			lws_sul_schedule(v->lws, 0, &v->fox_tick, fox_tick_cb, 1);
		}
		return 0;
	}
	case LWS_CALLBACK_CLOSED:
		if (pss != NULL && *pss != NULL) {
			vw_fox_close(v->fox, *pss);
			*pss = NULL;
		}
		return 0;
	case LWS_CALLBACK_RECEIVE:
		return pss != NULL && *pss != NULL ? vw_fox_rx(v->fox, *pss, in, len) : -1;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return pss != NULL && *pss != NULL ? vw_fox_write(v->fox, *pss) : 0;
	default: return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

/* ---- the server ---- */

int vw_server_create(const vw_server_config_t *cfg, vw_server_t **out, char *why, size_t len)
{
	vw_server_t *v = calloc(1, sizeof(*v));
	if (v == NULL) {
		snprintf(why, len, "out of memory");
		return HAKO_ENOMEM;
	}
	v->cfg = *cfg;
	int r = hosts_init(v, cfg, why, len);
	if (r != 0) {
		free(v);
		return r;
	}
	if (realpath(cfg->www, v->www) == NULL) {
		snprintf(why, len, "static folder %s: not found", cfg->www);
		free(v);
		return HAKO_ENOENT;
	}
	lws_set_log_level(LLL_ERR, NULL);
	v->protocols[0] = (struct lws_protocols){
	    .name = "hako-viewer",
	    .callback = vw_cb,
	    .per_session_data_size = sizeof(vw_sess_t *),
	    .rx_buffer_size = 65536,
	};
	/* Foxglove on the same port: the client names the subprotocol, lws picks the table. */
	v->protocols[1] = (struct lws_protocols){
	    .name = VW_FOX_PROTOCOL,
	    .callback = fox_cb,
	    .per_session_data_size = sizeof(vw_fox_sess_t *),
	    .rx_buffer_size = 65536,
	};
	vw_fox_config_t fc = {
	    .sampler = cfg->sampler,
	    .token = cfg->token,
	    .rate_hz = cfg->foxglove_rate_hz,
	    .session_budget = cfg->session_budget,
	    .max_message = cfg->max_message,
	    .log = fox_log,
	    .log_ctx = v,
	};
	if (v->cfg.foxglove_rate_hz <= 0) {
		v->cfg.foxglove_rate_hz = 30;
		fc.rate_hz = 30;
	}
	if (vw_fox_create(&fc, &v->fox) != 0) {
		snprintf(why, len, "out of memory");
		free(v);
		return HAKO_ENOMEM;
	}
	struct lws_context_creation_info info;
	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.user = v;
	info.gid = -1;
	info.uid = -1;
	v->lws = lws_create_context(&info);
	if (v->lws == NULL) {
		snprintf(why, len, "cannot create the libwebsockets context");
		vw_fox_destroy(v->fox);
		free(v);
		return HAKO_EIO;
	}
	memset(&info, 0, sizeof(info));
	info.protocols = v->protocols;
	info.user = v;
	info.vhost_name = "hako-viewer";
	info.port = cfg->port;
	info.iface =
	    strcmp(cfg->bind, "0.0.0.0") == 0 || strcmp(cfg->bind, "::") == 0 ? NULL : cfg->bind;
	if (strchr(cfg->bind, ':') == NULL) {
		info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
	}
	info.timeout_secs = 10;
	v->vh = lws_create_vhost(v->lws, &info);
	int port = v->vh != NULL ? lws_get_vhost_listen_port(v->vh) : -1;
	if (port <= 0) {
		snprintf(why, len, "cannot listen on %s port %d", cfg->bind, cfg->port);
		lws_context_destroy(v->lws);
		vw_fox_destroy(v->fox);
		free(v);
		return HAKO_EIO;
	}
	v->port = port;
	v->hz = cfg->rate_hz;
	lws_sul_schedule(v->lws, 0, &v->tick, tick_cb, 1);
	*out = v;
	return 0;
}

int vw_server_port(const vw_server_t *v)
{
	return v->port;
}

void vw_server_run(vw_server_t *v, volatile sig_atomic_t *stop)
{
	/* The sampling timer wakes the loop at least every 1/rate s: the flag is seen soon. */
	while (!*stop) {
		if (lws_service(v->lws, 0) < 0) {
			break;
		}
	}
}

void vw_server_destroy(vw_server_t *v)
{
	if (v == NULL) {
		return;
	}
	lws_sul_schedule(v->lws, 0, &v->tick, tick_cb, LWS_SET_TIMER_USEC_CANCEL);
	lws_sul_schedule(v->lws, 0, &v->fox_tick, fox_tick_cb, LWS_SET_TIMER_USEC_CANCEL);
	lws_context_destroy(v->lws); /* closes the sessions: CLOSED frees each */
	vw_fox_destroy(v->fox);
	ration_check(v, hako_now_usec(), 1);
	vw_msg_unref(v->list_msg);
	frames_release(v);
	free(v->frames);
	free(v);
}
