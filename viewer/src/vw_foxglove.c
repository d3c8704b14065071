/* The Foxglove WebSocket protocol (foxglove.websocket.v1) over the viewer's sampler.
 *
 * Channels: one per domain channel of a type the pdudef names and the registry knows, topic
 * /<robot>/<pdu name>, CDR with the type's ros2msg schema; plus /tf (tf2_msgs/msg/TFMessage),
 * every position channel (a robot's pos Twist, as the map draws it) as a transform from "world"
 * to a frame named after the robot, so Foxglove's 3D panel shows a fleet. The list follows the
 * sampler's: what appears is advertised, what goes (a channel, a domain reset or recreated) is
 * unadvertised; a channel id is never reused.
 *
 * Bounded: a channel's message is encoded once per write (CDR, through the registry) and shared
 * by every session subscribing it (the subscription id is written into the shared frame just
 * before it is handed to the socket). A session holds at most one message per subscription and
 * one time frame: a newer one replaces what a slow client did not take. Each tick (at most
 * rate_hz) queues a channel only if it was written since it was last sent; a session past its
 * byte budget skips ticks. Control messages (advertise, status) queue up to CTRL_MAX bytes;
 * statuses are dropped past STATUS_ROOM, and a client that lets advertisements pile past
 * CTRL_MAX is closed. So 200 clients that stop reading cost bounded memory, and the sim never
 * waits: the sampler only reads the seqlock channels.
 *
 * Hostile input: every client message is parsed with bounds; anything wrong (JSON, op, types,
 * unknown channel, binary garbage) gets a status of level error and the session goes on. A
 * message over max_message closes the session (1009), as the page's do.
 */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

#include "hako/cdr.h"
#include "hako/log.h"
#include "hako/msg.h"

#include "vw_fox.h"
#include "vw_msg.h"

#define SUB_MAX     4096         /* subscriptions one session may hold */
#define CLIENT_MAX  256          /* channels one client may advertise */
#define CTRL_MAX    (4u << 20)   /* queued control bytes past which a session is closed */
#define STATUS_ROOM 65536u       /* statuses are queued only below this many control bytes */
#define SEND_LIMIT  (256u << 10) /* bytes written per WRITEABLE callback at most */
#define MSG_HDR     13           /* opcode u8, subscription id u32, timestamp u64 */
#define TF_TOPIC    "/tf"
#define TF_TYPE     "tf2_msgs/TFMessage"
#define WORLD_FRAME "world"
#define SCHEMA_MAX  (256u << 10)

typedef struct fox_chan {
	uint32_t id;
	int tf; /* the /tf channel, made of all position channels */
	char robot[HAKO_NAME_MAX];
	int32_t ch_id;
	int index; /* where the channel was in the sampler's list (checked before use) */
	char topic[2 * HAKO_NAME_MAX + 4];
	char type[128]; /* pkg/Type */
	const hako_msg_type_t *mt;
	char *schema;
	int master_pid;  /* the conductor it was advertised under */
	vw_msg_t *frame; /* the latest message (header + CDR), shared by the sessions */
	uint64_t frame_seq;
	uint64_t tick; /* the tick frame and frame_seq were last looked at */
	int bad;       /* its PDU does not encode: said once */
	int keep;
} fox_chan_t;

typedef struct fox_sub {
	uint32_t sub_id;
	uint32_t chan_id;
	int chan; /* index in f->chans, checked against chan_id */
	uint64_t sent_seq;
	int force;
	vw_msg_t *pending;
} fox_sub_t;

typedef struct fox_client_chan {
	uint32_t id;
	char topic[2 * HAKO_NAME_MAX + 4];
} fox_client_chan_t;

typedef struct fox_q {
	struct fox_q *next;
	vw_msg_t *m;
} fox_q_t;

struct vw_fox_sess {
	struct vw_fox_sess *next;
	struct lws *wsi;
	char peer[64];
	int authorized;
	int closing;
	fox_q_t *ctrl, *ctrl_tail;
	size_t ctrl_bytes;
	vw_msg_t *time;
	fox_sub_t *subs;
	int nsubs, subs_cap;
	int sub_next;
	fox_client_chan_t clients[CLIENT_MAX];
	int nclients;
	double credit;
	vw_rx_t rx;
	unsigned char *batch; /* LWS_PRE + SEND_LIMIT: frames written in one go */
	vw_msg_t *held;       /* taken, but did not fit the last batch: the next one's first */
	uint32_t held_sub;
};

struct vw_fox {
	vw_fox_config_t cfg;
	hako_msg_registry_t *reg;
	fox_chan_t *chans;
	int nchans;
	uint32_t next_id;
	uint64_t list_version; /* the sampler's list version + 1 the channels follow; 0 none */
	int master_pid;
	int attached;
	vw_fox_sess_t *sessions;
	vw_fox_stats_t stats;
	char session_id[40];
	hako_time_t last_world;
	uint64_t tf_seq;
	int warned_unknown; /* the count of unknown-type channels last said */
	uint64_t tick;      /* ticks so far */
};

/* ---- pure pieces ---- */

int vw_fox_schema_name(const char *type, char *out, size_t cap)
{
	const char *slash = strchr(type, '/');
	if (slash == NULL || slash == type || slash[1] == '\0' || strchr(slash + 1, '/') != NULL) {
		return -1;
	}
	int n = snprintf(out, cap, "%.*s/msg/%s", (int)(slash - type), type, slash + 1);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

int vw_fox_same_type(const char *schema_name, const char *type)
{
	char full[300];
	if (strcmp(schema_name, type) == 0) {
		return 1;
	}
	return vw_fox_schema_name(type, full, sizeof(full)) == 0 && strcmp(schema_name, full) == 0;
}

/* ---- messages ---- */

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++) {
		p[i] = (unsigned char)(v >> (8 * i));
	}
}

static void put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		p[i] = (unsigned char)(v >> (8 * i));
	}
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void say(vw_fox_t *f, int kind, const char *peer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void say(vw_fox_t *f, int kind, const char *peer, const char *fmt, ...)
{
	char line[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (f->cfg.log != NULL) {
		f->cfg.log(f->cfg.log_ctx, kind, peer, line);
	}
}

static void ctrl_push(vw_fox_sess_t *s, vw_msg_t *m)
{
	if (s->closing) { /* going: it does not read, and nothing more is kept for it */
		vw_msg_unref(m);
		return;
	}
	fox_q_t *q = malloc(sizeof(*q));
	if (q == NULL) {
		vw_msg_unref(m);
		return;
	}
	q->next = NULL;
	q->m = m;
	if (s->ctrl_tail != NULL) {
		s->ctrl_tail->next = q;
	} else {
		s->ctrl = q;
	}
	s->ctrl_tail = q;
	s->ctrl_bytes += m->len;
	if (s->ctrl_bytes > CTRL_MAX) {
		/* It does not read what it must have: let it go, now (a client that does not read
		 * never makes its socket writable, where the close would otherwise happen). */
		s->closing = 1;
		lws_set_timeout(s->wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
	}
	lws_callback_on_writable(s->wsi);
}

/* j (consumed) as a text message; NULL if it could not be made. */
static vw_msg_t *json_msg(json_t *j)
{
	if (j == NULL) {
		return NULL;
	}
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (text == NULL) {
		return NULL;
	}
	vw_msg_t *m = vw_msg_new(text, strlen(text), 0);
	free(text);
	return m;
}

static void send_json(vw_fox_sess_t *s, json_t *j)
{
	vw_msg_t *m = json_msg(j);
	if (m != NULL) {
		ctrl_push(s, m);
	}
}

/* j (consumed), encoded once, to one session, or to every session if s is NULL. */
static void send_json_to(vw_fox_t *f, vw_fox_sess_t *s, json_t *j)
{
	vw_msg_t *m = json_msg(j);
	if (m == NULL) {
		return;
	}
	for (vw_fox_sess_t *t = s != NULL ? s : f->sessions; t != NULL;
	     t = s != NULL ? NULL : t->next) {
		ctrl_push(t, vw_msg_ref(m));
	}
	vw_msg_unref(m);
}

/* A status to one client (level 2: error), unless its queue is long: then it is dropped. */
static void status(vw_fox_sess_t *s, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void status(vw_fox_sess_t *s, int level, const char *fmt, ...)
{
	if (s->ctrl_bytes > STATUS_ROOM) {
		return;
	}
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	send_json(s, json_pack("{s:s,s:i,s:s}", "op", "status", "level", level, "message", text));
}

/* A refusal: a status of level error to the client and a (rationed) line in the log. */
static void refuse(vw_fox_t *f, vw_fox_sess_t *s, int kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void refuse(vw_fox_t *f, vw_fox_sess_t *s, int kind, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	/* It quotes the client (topics, types, ops): nothing a terminal acts on goes to the log,
	 * and no UTF-8 sequence cut short by a precision goes into the JSON. */
	for (unsigned char *c = (unsigned char *)text; *c != '\0'; c++) {
		*c = *c < 0x20 || *c >= 0x7f ? '?' : *c;
	}
	f->stats.refused++;
	status(s, 2, "%s", text);
	say(f, kind, s->peer, "foxglove client %s: %s", s->peer, text);
}

/* ---- channels ---- */

static json_t *chan_json(const fox_chan_t *c)
{
	char name[300];
	if (vw_fox_schema_name(c->type, name, sizeof(name)) != 0) {
		snprintf(name, sizeof(name), "%s", c->type);
	}
	return json_pack("{s:I,s:s,s:s,s:s,s:s,s:s}", "id", (json_int_t)c->id, "topic", c->topic,
	                 "encoding", HAKO_CDR_MESSAGE_ENCODING, "schemaName", name, "schema",
	                 c->schema, "schemaEncoding", HAKO_CDR_SCHEMA_ENCODING);
}

/* Advertise the channels f->chans[which[0..n)] in messages of about 256 KiB at most, encoded
 * once: to session s, or to every session if s is NULL. */
static void advertise(vw_fox_t *f, vw_fox_sess_t *s, const int *which, int n)
{
	int i = 0;
	while (i < n) {
		json_t *arr = json_array();
		size_t bytes = 0;
		for (; i < n && bytes < (256u << 10); i++) {
			const fox_chan_t *c = &f->chans[which[i]];
			json_array_append_new(arr, chan_json(c));
			bytes += strlen(c->schema) + 200;
		}
		send_json_to(f, s, json_pack("{s:s,s:o}", "op", "advertise", "channels", arr));
	}
}

static void chan_free(fox_chan_t *c)
{
	free(c->schema);
	vw_msg_unref(c->frame);
	memset(c, 0, sizeof(*c));
}

static int chan_schema(vw_fox_t *f, fox_chan_t *c)
{
	hako_error_t err;
	size_t len = 0;
	if (hako_msg_registry_get(f->reg, c->type, &c->mt, &err) != 0 ||
	    hako_cdr_schema(c->mt, NULL, 0, &len) != HAKO_ETOOBIG || len > SCHEMA_MAX) {
		return -1;
	}
	c->schema = malloc(len + 1);
	if (c->schema == NULL || hako_cdr_schema(c->mt, c->schema, len + 1, &len) != 0) {
		free(c->schema);
		c->schema = NULL;
		return -1;
	}
	return 0;
}

static int same_chan(const fox_chan_t *c, const vw_channel_t *vc, int master_pid)
{
	return !c->tf && c->master_pid == master_pid && c->ch_id == vc->id &&
	       strcmp(c->robot, vc->robot) == 0 && strcmp(c->type, vc->type) == 0;
}

static void drop_subs_of(vw_fox_sess_t *s, uint32_t chan_id)
{
	for (int i = 0; i < s->nsubs;) {
		if (s->subs[i].chan_id == chan_id) {
			vw_msg_unref(s->subs[i].pending);
			s->subs[i] = s->subs[--s->nsubs];
		} else {
			i++;
		}
	}
}

/* Follow the sampler's channel list: keep what stays (same ids), unadvertise what went,
 * advertise what came. */
static void sync_chans(vw_fox_t *f, const vw_state_t *st)
{
	int master = st->attached ? st->info.master_pid : 0;
	uint64_t lv = st->list_version + 1;
	if (f->list_version == lv && f->master_pid == master && f->attached == st->attached) {
		return;
	}
	f->list_version = lv;
	f->master_pid = master;
	f->attached = st->attached;
	int n = st->attached ? st->nchannels : 0, cap = n + 1, nn = 0, unknown = 0, positions = 0;
	fox_chan_t *next = calloc((size_t)cap, sizeof(*next));
	int *added = calloc((size_t)cap, sizeof(*added));
	uint32_t *removed = calloc((size_t)f->nchans + 1, sizeof(*removed));
	int nadded = 0, nremoved = 0;
	if (next == NULL || added == NULL || removed == NULL) {
		free(next);
		free(added);
		free(removed);
		f->list_version = 0; /* again next tick */
		return;
	}
	char unknown_list[256] = "";
	for (int j = 0; j < f->nchans; j++) {
		f->chans[j].keep = 0;
	}
	for (int i = 0; i < n; i++) {
		const vw_channel_t *vc = &st->channels[i];
		positions += vc->position;
		fox_chan_t *c = &next[nn];
		int found = 0;
		for (int j = 0; j < f->nchans && !found; j++) {
			if (!f->chans[j].keep && same_chan(&f->chans[j], vc, master)) {
				*c = f->chans[j];
				f->chans[j].keep = 1;
				found = 1;
			}
		}
		if (found) {
			c->keep = 0;
			c->index = i;
			nn++;
			continue;
		}
		snprintf(c->robot, sizeof(c->robot), "%s", vc->robot);
		c->ch_id = vc->id;
		c->index = i;
		c->master_pid = master;
		snprintf(c->type, sizeof(c->type), "%s", vc->type);
		if (vc->name[0] != '\0') {
			snprintf(c->topic, sizeof(c->topic), "/%s/%s", vc->robot, vc->name);
		} else {
			snprintf(c->topic, sizeof(c->topic), "/%s/%d", vc->robot, (int)vc->id);
		}
		if (vc->type[0] == '\0' || chan_schema(f, c) != 0) {
			if (unknown++ < 4) {
				size_t l = strlen(unknown_list);
				snprintf(unknown_list + l, sizeof(unknown_list) - l, "%s%s/%d",
				         l > 0 ? ", " : "", vc->robot, (int)vc->id);
			}
			memset(c, 0, sizeof(*c));
			continue;
		}
		c->id = ++f->next_id;
		added[nadded++] = nn++;
	}
	if (positions > 0) {
		fox_chan_t *c = &next[nn], *old = NULL;
		for (int j = 0; j < f->nchans; j++) {
			if (f->chans[j].tf && f->chans[j].master_pid == master) {
				old = &f->chans[j];
			}
		}
		if (old != NULL) {
			*c = *old;
			old->keep = 1;
			c->keep = 0;
			nn++;
		} else {
			c->tf = 1;
			c->ch_id = -1;
			c->index = -1;
			c->master_pid = master;
			snprintf(c->topic, sizeof(c->topic), "%s", TF_TOPIC);
			snprintf(c->type, sizeof(c->type), "%s", TF_TYPE);
			if (chan_schema(f, c) == 0) {
				c->id = ++f->next_id;
				added[nadded++] = nn++;
			} else {
				memset(c, 0, sizeof(*c));
			}
		}
	}
	for (int j = 0; j < f->nchans; j++) {
		if (!f->chans[j].keep) {
			removed[nremoved++] = f->chans[j].id;
			chan_free(&f->chans[j]);
		}
	}
	free(f->chans);
	f->chans = next;
	f->nchans = nn;
	f->stats.channels = nn;
	if (unknown != f->warned_unknown && unknown > 0) {
		HAKO_WARN(
		    "hako-viewer: foxglove: %d channel%s of no known type not advertised (%s%s; "
		    "--pdudef names the types)",
		    unknown, unknown > 1 ? "s" : "", unknown_list, unknown > 4 ? ", ..." : "");
	}
	f->warned_unknown = unknown;
	if (nremoved > 0 && f->sessions != NULL) {
		json_t *ids = json_array();
		for (int k = 0; k < nremoved; k++) {
			json_array_append_new(ids, json_integer(removed[k]));
		}
		send_json_to(f, NULL,
		             json_pack("{s:s,s:o}", "op", "unadvertise", "channelIds", ids));
	}
	if (nadded > 0 && f->sessions != NULL) {
		advertise(f, NULL, added, nadded);
	}
	for (vw_fox_sess_t *s = f->sessions; s != NULL; s = s->next) {
		for (int k = 0; k < nremoved; k++) {
			drop_subs_of(s, removed[k]);
		}
		for (int k = 0; k < s->nsubs; k++) {
			s->subs[k].chan = -1; /* indexes changed */
		}
	}
	free(added);
	free(removed);
}

static fox_chan_t *chan_by_id(vw_fox_t *f, uint32_t id, int *hint)
{
	if (*hint >= 0 && *hint < f->nchans && f->chans[*hint].id == id) {
		return &f->chans[*hint];
	}
	for (int i = 0; i < f->nchans; i++) {
		if (f->chans[i].id == id) {
			*hint = i;
			return &f->chans[i];
		}
	}
	*hint = -1;
	return NULL;
}

/* The sampler's channel behind c, found where it was (the list changes rarely). */
static vw_channel_t *chan_source(vw_fox_t *f, vw_state_t *st, fox_chan_t *c)
{
	if (c->index >= 0 && c->index < st->nchannels) {
		vw_channel_t *vc = &st->channels[c->index];
		if (vc->id == c->ch_id && strcmp(vc->robot, c->robot) == 0) {
			return vc;
		}
	}
	vw_channel_t *vc = vw_sampler_channel(f->cfg.sampler, c->robot, c->ch_id);
	c->index = vc != NULL ? (int)(vc - st->channels) : -1;
	return vc;
}

/* A little CDR writer for /tf: positions are relative to the first byte after the header. */
typedef struct cdr_out {
	unsigned char *p;
	size_t len, cap;
} cdr_out_t;

static void cdr_put(cdr_out_t *o, const void *v, size_t n, size_t align)
{
	size_t pad = (align - (o->len - 4) % align) % align;
	if (o->len + pad + n <= o->cap) {
		memset(o->p + o->len, 0, pad);
		memcpy(o->p + o->len + pad, v, n);
	}
	o->len += pad + n;
}

static void cdr_string(cdr_out_t *o, const char *s)
{
	uint32_t n = (uint32_t)strlen(s) + 1;
	cdr_put(o, &n, 4, 4);
	cdr_put(o, s, n, 1);
}

static void cdr_f64(cdr_out_t *o, double v)
{
	cdr_put(o, &v, 8, 8);
}

/* tf2_msgs/TFMessage: every position channel as world -> <robot>, its linear part the
 * translation, its angular part (roll, pitch, yaw; ZYX, as the fleet and Hakoniwa write it)
 * the rotation. */
static size_t tf_encode(vw_fox_t *f, vw_state_t *st, unsigned char *out, size_t cap)
{
	cdr_out_t o = {out, 0, cap};
	static const unsigned char hdr[4] = {0, 1, 0, 0};
	if (cap >= 4) {
		memcpy(out, hdr, 4);
	}
	o.len = 4;
	uint32_t count = 0;
	for (int i = 0; i < st->nchannels; i++) {
		vw_channel_t *vc = &st->channels[i];
		count += vc->position && vc->raw_len > 0 && vc->raw_seq > 0;
	}
	cdr_put(&o, &count, 4, 4);
	int32_t sec = (int32_t)(st->info.world_time / 1000000);
	uint32_t nsec = (uint32_t)(st->info.world_time % 1000000) * 1000u;
	for (int i = 0; i < st->nchannels; i++) {
		vw_channel_t *vc = &st->channels[i];
		double x = 0, y = 0;
		if (!vc->position || vc->raw_len == 0 || vc->raw_seq == 0) {
			continue;
		}
		double v[6] = {0};
		if (vw_twist_xy(vc->raw, vc->raw_len, &x, &y) == 0 && vc->raw_len >= 24 + 48) {
			memcpy(v, vc->raw + 24, sizeof(v)); /* Twist: linear xyz, angular xyz */
		}
		cdr_put(&o, &sec, 4, 4);
		cdr_put(&o, &nsec, 4, 4);
		cdr_string(&o, WORLD_FRAME);
		cdr_string(&o, vc->robot);
		cdr_f64(&o, v[0]);
		cdr_f64(&o, v[1]);
		cdr_f64(&o, v[2]);
		double cr = cos(v[3] / 2), sr = sin(v[3] / 2), cp = cos(v[4] / 2),
		       sp = sin(v[4] / 2);
		double cy = cos(v[5] / 2), sy = sin(v[5] / 2);
		cdr_f64(&o, sr * cp * cy - cr * sp * sy);
		cdr_f64(&o, cr * sp * cy + sr * cp * sy);
		cdr_f64(&o, cr * cp * sy - sr * sp * cy);
		cdr_f64(&o, cr * cp * cy + sr * sp * sy);
	}
	(void)f;
	return o.len;
}

static vw_msg_t *frame_new(size_t payload, hako_time_t world)
{
	vw_msg_t *m = vw_msg_new(NULL, MSG_HDR + payload, 1);
	if (m != NULL) {
		unsigned char *p = m->buf + LWS_PRE;
		p[0] = 1;
		put_u32(p + 1, 0);
		put_u64(p + 5, (uint64_t)(world > 0 ? world : 0) * 1000u);
	}
	return m;
}

static vw_msg_t *tf_frame(vw_fox_t *f, vw_state_t *st, fox_chan_t *c, uint64_t *seq)
{
	uint64_t sum = 0;
	for (int i = 0; i < st->nchannels; i++) {
		vw_channel_t *vc = &st->channels[i];
		if (!vc->position) {
			continue;
		}
		vw_sampler_refresh(f->cfg.sampler, vc);
		if (vw_sampler_read(f->cfg.sampler, vc) == 0) {
			sum += vc->raw_seq;
		}
	}
	*seq = sum;
	if (c->frame != NULL && c->frame_seq == sum) {
		return c->frame;
	}
	size_t need = tf_encode(f, st, NULL, 0);
	vw_msg_t *m = frame_new(need, st->info.world_time);
	if (m == NULL) {
		return NULL;
	}
	tf_encode(f, st, m->buf + LWS_PRE + MSG_HDR, need);
	vw_msg_unref(c->frame);
	c->frame = m;
	c->frame_seq = sum;
	return m;
}

/* The latest message of a channel: encoded once per write, shared by the sessions. *seq: the
 * write it carries. */
static vw_msg_t *chan_encode(vw_fox_t *f, vw_state_t *st, fox_chan_t *c, uint64_t *seq)
{
	if (c->tf) {
		return tf_frame(f, st, c, seq);
	}
	vw_channel_t *vc = chan_source(f, st, c);
	if (vc == NULL) {
		return NULL;
	}
	vw_sampler_refresh(f->cfg.sampler, vc);
	if (vw_sampler_read(f->cfg.sampler, vc) != 0 || vc->raw_len == 0) {
		return NULL;
	}
	*seq = vc->raw_seq;
	if (c->frame != NULL && c->frame_seq == vc->raw_seq) {
		return c->frame;
	}
	hako_error_t err;
	size_t need = 0;
	int r = hako_cdr_encode(c->mt, vc->raw, vc->raw_len, NULL, 0, &need, &err);
	vw_msg_t *m = r == HAKO_ETOOBIG ? frame_new(need, st->info.world_time) : NULL;
	if (m == NULL || hako_cdr_encode(c->mt, vc->raw, vc->raw_len, m->buf + LWS_PRE + MSG_HDR,
	                                 need, &need, &err) != 0) {
		vw_msg_unref(m);
		if (!c->bad) {
			HAKO_WARN("hako-viewer: foxglove: %s: write %llu does not encode as %s: %s",
			          c->topic, (unsigned long long)vc->raw_seq, c->type,
			          r == HAKO_ETOOBIG || r == 0 ? err.message : hako_strerror(r));
			c->bad = 1;
		}
		return NULL;
	}
	vw_msg_unref(c->frame);
	c->frame = m;
	c->frame_seq = vc->raw_seq;
	return m;
}

/* As chan_encode, looked at once a tick however many sessions subscribe the channel. */
static vw_msg_t *chan_frame(vw_fox_t *f, vw_state_t *st, fox_chan_t *c, uint64_t *seq)
{
	if (c->tick != f->tick) {
		c->tick = f->tick;
		uint64_t q = 0;
		if (chan_encode(f, st, c, &q) == NULL) {
			c->frame_seq = 0;
			vw_msg_unref(c->frame);
			c->frame = NULL;
		}
	}
	*seq = c->frame_seq;
	return c->frame;
}

/* ---- sessions ---- */

int vw_fox_create(const vw_fox_config_t *cfg, vw_fox_t **out)
{
	vw_fox_t *f = calloc(1, sizeof(*f));
	if (f == NULL) {
		return HAKO_ENOMEM;
	}
	f->cfg = *cfg;
	int r = hako_msg_registry_create(&f->reg);
	if (r != 0) {
		free(f);
		return r;
	}
	char tok[VW_TOKEN_LEN + 1];
	if (vw_token_new(tok) != 0) {
		snprintf(tok, sizeof(tok), "%lld", (long long)hako_now_usec());
	}
	snprintf(f->session_id, sizeof(f->session_id), "%.16s", tok);
	f->last_world = -1;
	*out = f;
	return 0;
}

void vw_fox_destroy(vw_fox_t *f)
{
	if (f == NULL) {
		return;
	}
	for (int i = 0; i < f->nchans; i++) {
		chan_free(&f->chans[i]);
	}
	free(f->chans);
	hako_msg_registry_destroy(f->reg);
	free(f);
}

int vw_fox_open(vw_fox_t *f, struct lws *wsi, const char *peer, int authorized, vw_fox_sess_t **out)
{
	vw_fox_sess_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return -1;
	}
	s->batch = malloc(LWS_PRE + SEND_LIMIT);
	if (s->batch == NULL) {
		free(s);
		return -1;
	}
	s->wsi = wsi;
	snprintf(s->peer, sizeof(s->peer), "%s", peer);
	s->authorized = authorized;
	s->credit = (double)f->cfg.session_budget;
	vw_state_t *st = vw_sampler_state(f->cfg.sampler);
	sync_chans(f, st); /* the list as it is now, before this session is one to tell */
	s->next = f->sessions;
	f->sessions = s;
	f->stats.sessions++;
	json_t *caps = json_pack("[s,s]", "clientPublish", "time");
	json_t *meta = json_pack("{s:s,s:s}", "domain", st->info.name, "publish",
	                         authorized ? "allowed" : "refused: no token in the URL");
	send_json(s, json_pack("{s:s,s:s,s:o,s:[s],s:o,s:s}", "op", "serverInfo", "name",
	                       "hako-viewer", "capabilities", caps, "supportedEncodings",
	                       HAKO_CDR_MESSAGE_ENCODING, "metadata", meta, "sessionId",
	                       f->session_id));
	if (f->nchans > 0) {
		int *all = malloc((size_t)f->nchans * sizeof(*all));
		for (int i = 0; all != NULL && i < f->nchans; i++) {
			all[i] = i;
		}
		if (all != NULL) {
			advertise(f, s, all, f->nchans);
		}
		free(all);
	}
	*out = s;
	return 0;
}

void vw_fox_close(vw_fox_t *f, vw_fox_sess_t *s)
{
	if (s == NULL) {
		return;
	}
	for (vw_fox_sess_t **p = &f->sessions; *p != NULL; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			break;
		}
	}
	f->stats.sessions--;
	if (s->closing) {
		say(f, VW_FOX_LOG_MESSAGE, s->peer,
		    "foxglove client %s closed: more than %u bytes of advertisements not taken",
		    s->peer, CTRL_MAX);
	}
	while (s->ctrl != NULL) {
		fox_q_t *q = s->ctrl;
		s->ctrl = q->next;
		vw_msg_unref(q->m);
		free(q);
	}
	vw_msg_unref(s->time);
	vw_msg_unref(s->held);
	for (int i = 0; i < s->nsubs; i++) {
		vw_msg_unref(s->subs[i].pending);
	}
	free(s->subs);
	vw_rx_free(&s->rx);
	free(s->batch);
	free(s);
}

int vw_fox_sessions(const vw_fox_t *f)
{
	return f->stats.sessions;
}

vw_fox_stats_t vw_fox_stats(const vw_fox_t *f)
{
	return f->stats;
}

static void slot_put(vw_fox_t *f, vw_msg_t **slot, vw_msg_t *m)
{
	f->stats.messages_dropped += (uint64_t)vw_msg_put(slot, m);
}

static size_t sess_pending(const vw_fox_sess_t *s)
{
	size_t n = s->ctrl_bytes + (s->time != NULL ? s->time->len : 0) +
	           (s->held != NULL ? s->held->len : 0);
	for (int i = 0; i < s->nsubs; i++) {
		n += s->subs[i].pending != NULL ? s->subs[i].pending->len : 0;
	}
	return n;
}

void vw_fox_tick(vw_fox_t *f, double dt)
{
	vw_state_t *st = vw_sampler_state(f->cfg.sampler);
	sync_chans(f, st);
	f->tick++;
	if (st->attached) {
		vw_sampler_world_time(f->cfg.sampler);
	}
	vw_msg_t *time = NULL;
	if (st->attached && st->info.world_time != f->last_world) {
		unsigned char t[9];
		t[0] = 2;
		put_u64(t + 1,
		        (uint64_t)(st->info.world_time > 0 ? st->info.world_time : 0) * 1000u);
		time = vw_msg_new(t, sizeof(t), 1);
		f->last_world = st->info.world_time;
	}
	double budget = (double)f->cfg.session_budget;
	for (vw_fox_sess_t *s = f->sessions; s != NULL; s = s->next) {
		s->credit += budget * dt;
		s->credit = s->credit > budget ? budget : s->credit;
		if (s->credit <= 0) {
			f->stats.throttled++;
			continue;
		}
		if (time != NULL) {
			slot_put(f, &s->time, time);
		}
		for (int i = 0; i < s->nsubs; i++) {
			fox_sub_t *sub = &s->subs[i];
			fox_chan_t *c = chan_by_id(f, sub->chan_id, &sub->chan);
			uint64_t seq = 0;
			vw_msg_t *m = c != NULL ? chan_frame(f, st, c, &seq) : NULL;
			if (m == NULL || (seq == sub->sent_seq && !sub->force)) {
				continue;
			}
			slot_put(f, &sub->pending, m);
			sub->sent_seq = seq;
			sub->force = 0;
		}
		uint64_t p = sess_pending(s);
		f->stats.pending_max = p > f->stats.pending_max ? p : f->stats.pending_max;
		lws_callback_on_writable(s->wsi);
	}
	vw_msg_unref(time);
}

/* A WebSocket frame header (server to client: unmasked) for len bytes; its size. */
static size_t ws_header(unsigned char *h, size_t len, int binary)
{
	h[0] = (unsigned char)(0x80 | (binary ? 2 : 1));
	if (len < 126) {
		h[1] = (unsigned char)len;
		return 2;
	}
	if (len < 65536) {
		h[1] = 126;
		h[2] = (unsigned char)(len >> 8);
		h[3] = (unsigned char)len;
		return 4;
	}
	h[1] = 127;
	for (int i = 0; i < 8; i++) {
		h[2 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
	}
	return 10;
}

/* The next message to write, taken out of its slot (the caller owns the reference). */
static vw_msg_t *next_msg(vw_fox_sess_t *s, uint32_t *sub_id)
{
	*sub_id = UINT32_MAX;
	if (s->held != NULL) {
		vw_msg_t *m = s->held;
		s->held = NULL;
		*sub_id = s->held_sub;
		return m;
	}
	if (s->ctrl != NULL) {
		fox_q_t *q = s->ctrl;
		vw_msg_t *m = q->m;
		s->ctrl = q->next;
		if (s->ctrl == NULL) {
			s->ctrl_tail = NULL;
		}
		s->ctrl_bytes -= m->len;
		free(q);
		return m;
	}
	if (s->time != NULL) {
		vw_msg_t *m = s->time;
		s->time = NULL;
		return m;
	}
	for (int k = 0; k < s->nsubs; k++) {
		int i = (s->sub_next + k) % s->nsubs;
		if (s->subs[i].pending != NULL) {
			vw_msg_t *m = s->subs[i].pending;
			s->subs[i].pending = NULL;
			s->sub_next = (i + 1) % s->nsubs;
			*sub_id = s->subs[i].sub_id;
			return m;
		}
	}
	return NULL;
}

static int has_pending(const vw_fox_sess_t *s)
{
	if (s->held != NULL || s->ctrl != NULL || s->time != NULL) {
		return 1;
	}
	for (int i = 0; i < s->nsubs; i++) {
		if (s->subs[i].pending != NULL) {
			return 1;
		}
	}
	return 0;
}

/* Many small messages (256 drones at 30 Hz) would each cost a system call through lws_write:
 * they are framed here, many to a buffer, and handed to the socket in one raw write. One write
 * per callback: lws takes what the socket does not (and then asks for no more until it is
 * sent), so a second write could find it still holding the first. A message larger than the
 * buffer goes alone through lws_write. */
int vw_fox_write(vw_fox_t *f, vw_fox_sess_t *s)
{
	if (s->closing) {
		return -1;
	}
	unsigned char *b = s->batch + LWS_PRE;
	size_t n = 0;
	vw_msg_t *m;
	uint32_t sub_id;
	while (n < SEND_LIMIT / 2 && (m = next_msg(s, &sub_id)) != NULL) {
		unsigned char *payload = vw_msg_payload(m);
		if (sub_id != UINT32_MAX) {
			put_u32(payload + 1, sub_id);
		}
		if (m->len + 10 > SEND_LIMIT - n) {
			if (n > 0) { /* the next callback's */
				s->held = m;
				s->held_sub = sub_id;
				break;
			}
			size_t len = m->len;
			int w = vw_msg_write(s->wsi, m);
			vw_msg_unref(m);
			if (w != 0) {
				return -1;
			}
			s->credit -= (double)len;
			f->stats.messages_sent++;
			break;
		}
		n += ws_header(b + n, m->len, m->binary);
		memcpy(b + n, payload, m->len);
		n += m->len;
		s->credit -= (double)m->len;
		f->stats.messages_sent++;
		vw_msg_unref(m);
	}
	if (n > 0 && lws_write(s->wsi, b, n, LWS_WRITE_RAW) < (int)n) {
		return -1;
	}
	if (has_pending(s)) {
		lws_callback_on_writable(s->wsi);
	}
	return 0;
}

/* ---- what clients send ---- */

static void do_subscribe(vw_fox_t *f, vw_fox_sess_t *s, json_t *msg)
{
	json_t *subs = json_object_get(msg, "subscriptions"), *e;
	size_t i;
	if (!json_is_array(subs)) {
		refuse(f, s, VW_FOX_LOG_MESSAGE, "subscribe: \"subscriptions\" must be an array");
		return;
	}
	json_array_foreach(subs, i, e)
	{
		json_t *jid = json_object_get(e, "id"), *jch = json_object_get(e, "channelId");
		if (!json_is_integer(jid) || !json_is_integer(jch) || json_integer_value(jid) < 0 ||
		    json_integer_value(jid) > UINT32_MAX || json_integer_value(jch) < 0 ||
		    json_integer_value(jch) > UINT32_MAX) {
			refuse(
			    f, s, VW_FOX_LOG_MESSAGE,
			    "subscribe: subscriptions[%zu]: needs integer \"id\" and \"channelId\"",
			    i);
			return;
		}
		uint32_t id = (uint32_t)json_integer_value(jid);
		uint32_t ch = (uint32_t)json_integer_value(jch);
		int hint = -1;
		if (chan_by_id(f, ch, &hint) == NULL) {
			refuse(f, s, VW_FOX_LOG_MESSAGE, "subscribe: channel %u is not advertised",
			       ch);
			continue;
		}
		int dup = 0;
		for (int k = 0; k < s->nsubs && !dup; k++) {
			dup = s->subs[k].sub_id == id;
		}
		if (dup) {
			refuse(f, s, VW_FOX_LOG_MESSAGE, "subscribe: subscription id %u is in use",
			       id);
			continue;
		}
		if (s->nsubs >= SUB_MAX) {
			refuse(f, s, VW_FOX_LOG_MESSAGE, "subscribe: %d subscriptions at most",
			       SUB_MAX);
			return;
		}
		if (s->nsubs == s->subs_cap) {
			int cap = s->subs_cap ? s->subs_cap * 2 : 64;
			fox_sub_t *p = realloc(s->subs, (size_t)cap * sizeof(*p));
			if (p == NULL) {
				return;
			}
			s->subs = p;
			s->subs_cap = cap;
		}
		s->subs[s->nsubs++] = (fox_sub_t){id, ch, hint, 0, 1, NULL};
	}
}

static void do_unsubscribe(vw_fox_t *f, vw_fox_sess_t *s, json_t *msg)
{
	json_t *ids = json_object_get(msg, "subscriptionIds"), *e;
	size_t i;
	if (!json_is_array(ids)) {
		refuse(f, s, VW_FOX_LOG_MESSAGE,
		       "unsubscribe: \"subscriptionIds\" must be an array");
		return;
	}
	json_array_foreach(ids, i, e)
	{
		int found = 0;
		for (int k = 0; json_is_integer(e) && k < s->nsubs; k++) {
			if ((json_int_t)s->subs[k].sub_id == json_integer_value(e)) {
				vw_msg_unref(s->subs[k].pending);
				s->subs[k] = s->subs[--s->nsubs];
				found = 1;
				break;
			}
		}
		if (!found) {
			refuse(f, s, VW_FOX_LOG_MESSAGE,
			       "unsubscribe: subscriptionIds[%zu] is no subscription", i);
		}
	}
}

static fox_chan_t *chan_by_topic(vw_fox_t *f, const char *topic)
{
	for (int i = 0; i < f->nchans; i++) {
		if (!f->chans[i].tf && strcmp(f->chans[i].topic, topic) == 0) {
			return &f->chans[i];
		}
	}
	return NULL;
}

static void do_advertise(vw_fox_t *f, vw_fox_sess_t *s, json_t *msg)
{
	json_t *chans = json_object_get(msg, "channels"), *e;
	size_t i;
	if (!s->authorized) {
		refuse(f, s, VW_FOX_LOG_TOKEN,
		       "clientPublish refused: no token (connect with ?token=... in the URL)");
		return;
	}
	if (!json_is_array(chans)) {
		refuse(f, s, VW_FOX_LOG_MESSAGE, "advertise: \"channels\" must be an array");
		return;
	}
	json_array_foreach(chans, i, e)
	{
		json_t *jid = json_object_get(e, "id");
		const char *topic = json_string_value(json_object_get(e, "topic"));
		const char *enc = json_string_value(json_object_get(e, "encoding"));
		const char *schema = json_string_value(json_object_get(e, "schemaName"));
		if (!json_is_integer(jid) || json_integer_value(jid) < 0 ||
		    json_integer_value(jid) > UINT32_MAX || topic == NULL || enc == NULL ||
		    schema == NULL) {
			refuse(f, s, VW_FOX_LOG_MESSAGE,
			       "advertise: channels[%zu]: needs \"id\", \"topic\", \"encoding\", "
			       "\"schemaName\"",
			       i);
			continue;
		}
		fox_chan_t *c = chan_by_topic(f, topic);
		if (strcmp(enc, HAKO_CDR_MESSAGE_ENCODING) != 0) {
			refuse(f, s, VW_FOX_LOG_MESSAGE, "advertise: %.100s: encoding must be cdr",
			       topic);
			continue;
		}
		if (c == NULL) {
			refuse(f, s, VW_FOX_LOG_MESSAGE,
			       "advertise: %.100s: no such PDU (a topic the server advertises)",
			       topic);
			continue;
		}
		if (!vw_fox_same_type(schema, c->type)) {
			refuse(f, s, VW_FOX_LOG_MESSAGE,
			       "advertise: %.100s: its type is %s, not %.100s", topic, c->type,
			       schema);
			continue;
		}
		uint32_t id = (uint32_t)json_integer_value(jid);
		int k = 0;
		while (k < s->nclients && s->clients[k].id != id) {
			k++;
		}
		if (k == CLIENT_MAX) {
			refuse(f, s, VW_FOX_LOG_MESSAGE, "advertise: %d channels at most",
			       CLIENT_MAX);
			return;
		}
		s->clients[k].id = id;
		snprintf(s->clients[k].topic, sizeof(s->clients[k].topic), "%s", topic);
		s->nclients = k == s->nclients ? k + 1 : s->nclients;
	}
}

static void do_unadvertise(vw_fox_t *f, vw_fox_sess_t *s, json_t *msg)
{
	json_t *ids = json_object_get(msg, "channelIds"), *e;
	size_t i;
	if (!json_is_array(ids)) {
		refuse(f, s, VW_FOX_LOG_MESSAGE, "unadvertise: \"channelIds\" must be an array");
		return;
	}
	json_array_foreach(ids, i, e)
	{
		for (int k = 0; json_is_integer(e) && k < s->nclients; k++) {
			if ((json_int_t)s->clients[k].id == json_integer_value(e)) {
				s->clients[k] = s->clients[--s->nclients];
				break;
			}
		}
	}
}

static void do_text(vw_fox_t *f, vw_fox_sess_t *s, const char *text, size_t len)
{
	json_error_t jerr;
	json_t *msg = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (msg == NULL) {
		refuse(f, s, VW_FOX_LOG_MESSAGE, "not JSON: %s (line %d, column %d)", jerr.text,
		       jerr.line, jerr.column);
		return;
	}
	const char *op = json_string_value(json_object_get(msg, "op"));
	if (!json_is_object(msg) || op == NULL) {
		refuse(f, s, VW_FOX_LOG_MESSAGE, "a message needs \"op\" (a string)");
	} else if (strcmp(op, "subscribe") == 0) {
		do_subscribe(f, s, msg);
	} else if (strcmp(op, "unsubscribe") == 0) {
		do_unsubscribe(f, s, msg);
	} else if (strcmp(op, "advertise") == 0) {
		do_advertise(f, s, msg);
	} else if (strcmp(op, "unadvertise") == 0) {
		do_unadvertise(f, s, msg);
	} else {
		char shown[64];
		snprintf(shown, sizeof(shown), "%s", op);
		for (char *c = shown; *c != '\0'; c++) {
			*c = *c < 0x20 || *c >= 0x7f ? '?' : *c;
		}
		refuse(f, s, VW_FOX_LOG_MESSAGE, "op %s is not supported", shown);
	}
	json_decref(msg);
}

/* Client opcode 1: a message on a channel the client advertised: written into the PDU. */
static void do_publish(vw_fox_t *f, vw_fox_sess_t *s, const unsigned char *buf, size_t len)
{
	if (len < 5) {
		refuse(f, s, VW_FOX_LOG_MESSAGE, "binary message of %zu bytes: too short", len);
		return;
	}
	if (!s->authorized) {
		refuse(f, s, VW_FOX_LOG_TOKEN,
		       "clientPublish refused: no token (connect with ?token=... in the URL)");
		return;
	}
	uint32_t id = get_u32(buf + 1);
	int k = 0;
	while (k < s->nclients && s->clients[k].id != id) {
		k++;
	}
	fox_chan_t *c = k < s->nclients ? chan_by_topic(f, s->clients[k].topic) : NULL;
	if (c == NULL) {
		refuse(f, s, VW_FOX_LOG_MESSAGE, "message on channel %u: not advertised", id);
		return;
	}
	vw_state_t *st = vw_sampler_state(f->cfg.sampler);
	vw_channel_t *vc = chan_source(f, st, c);
	if (vc == NULL || vc->ch == NULL) {
		refuse(f, s, VW_FOX_LOG_MESSAGE, "message on %s: the channel is gone", c->topic);
		return;
	}
	unsigned char *pdu = malloc(vc->size ? vc->size : 1);
	size_t pdu_len = 0;
	hako_error_t err;
	memset(&err, 0, sizeof(err));
	int r = pdu == NULL
	            ? HAKO_ENOMEM
	            : hako_cdr_decode(c->mt, buf + 5, len - 5, pdu, vc->size, &pdu_len, &err);
	if (r == 0) {
		r = hako_channel_write(vc->ch, pdu, pdu_len);
	}
	free(pdu);
	if (r != 0) {
		refuse(f, s, VW_FOX_LOG_MESSAGE, "message on %s not written: %s", c->topic,
		       r == HAKO_EPROTO ? err.message : hako_strerror(r));
		return;
	}
	f->stats.published++;
	say(f, VW_FOX_LOG_COMMAND, s->peer, "foxglove client %s wrote %s", s->peer, c->topic);
}

int vw_fox_rx(vw_fox_t *f, vw_fox_sess_t *s, const void *in, size_t len)
{
	int r = vw_rx_add(&s->rx, s->wsi, in, len, f->cfg.max_message);
	if (r == VW_RX_TOO_BIG) {
		f->stats.refused++;
		say(f, VW_FOX_LOG_MESSAGE, s->peer,
		    "foxglove client %s: a message of more than %zu bytes (closing)", s->peer,
		    f->cfg.max_message);
	}
	if (r <= 0) {
		return r == 0 ? 0 : -1;
	}
	const unsigned char *buf = s->rx.buf;
	if (!s->rx.binary) {
		do_text(f, s, (const char *)buf, s->rx.len);
	} else if (s->rx.len > 0 && buf[0] == 1) {
		do_publish(f, s, buf, s->rx.len);
	} else {
		refuse(f, s, VW_FOX_LOG_MESSAGE, "binary opcode %d is not supported",
		       s->rx.len > 0 ? buf[0] : -1);
	}
	vw_rx_next(&s->rx);
	return 0;
}
