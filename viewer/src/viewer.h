/* hako-viewer internals: the pure pieces (request paths, tokens, commands, the JSON state) that
 * the unit tests check without a server, the sampler that reads a domain, and the server.
 *
 * Everything here runs in one thread (the lws service thread): nothing is locked.
 */
#ifndef HAKO_VIEWER_H
#define HAKO_VIEWER_H

#include <stddef.h>
#include <stdint.h>

#include "hako/conductor.h"
#include "hako/domain.h"

/* ---- a growing text buffer ---- */

typedef struct vw_buf {
	char *data; /* NUL-terminated while not NULL */
	size_t len;
	size_t cap;
	int oom; /* an allocation failed: the content is incomplete */
} vw_buf_t;

void vw_buf_free(vw_buf_t *b);
void vw_buf_put(vw_buf_t *b, const char *s, size_t n);
void vw_buf_puts(vw_buf_t *b, const char *s);
void vw_buf_printf(vw_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a JSON string, quotes included; bytes below 0x20 escaped, others as they are. */
void vw_buf_json_str(vw_buf_t *b, const char *s);

/* ---- request paths ---- */

#define VW_PATH_MAX 256

/* Map the path of an HTTP request (as the server got it, query removed) to a file name relative
 * to the static folder: "/" -> "index.html", "/app.js" -> "app.js". Only flat names made of
 * [A-Za-z0-9._-], not starting with '.', are served: no folder, no "..", no '%' (a decoded
 * request holds none; one that still does was encoded twice), nothing longer than
 * VW_PATH_MAX. 0, or HAKO_EPERM with why set. */
int vw_path_check(const char *path, char *rel, size_t cap, const char **why);

/* The Content-Type of a file name served from the static folder. */
const char *vw_mime(const char *rel);

/* ---- tokens ---- */

#define VW_TOKEN_LEN 32 /* hex characters: 128 random bits */

/* A fresh token from getrandom(2). 0 or HAKO_EIO. */
int vw_token_new(char out[VW_TOKEN_LEN + 1]);
/* 1 if got equals want (compared in time independent of where they differ), else 0; an empty
 * or NULL got, or an empty want, never matches. */
int vw_token_equal(const char *want, const char *got);
/* The value of `name` in a query string "a=1&token=xyz" (percent-decoded) in out: 0, HAKO_ENOENT
 * if absent, HAKO_ETOOBIG if it does not fit. */
int vw_query_arg(const char *query, const char *name, char *out, size_t cap);

/* ---- commands from the page ---- */

typedef enum vw_cmd {
	VW_CMD_NONE = 0,
	VW_CMD_START,
	VW_CMD_STOP,
	VW_CMD_RESET,
	VW_CMD_WATCH, /* the channels whose values the session wants */
	VW_CMD_VIEW,  /* the parts of the state the session wants */
} vw_cmd_t;

#define VW_WATCH_MAX 64 /* channels one session may watch: a page of rows and the plot */

typedef struct vw_key {
	char robot[HAKO_NAME_MAX];
	int32_t id;
} vw_key_t;

typedef struct vw_command {
	vw_cmd_t cmd;
	char token[VW_TOKEN_LEN * 2 + 1]; /* "" if the message has none */
	vw_key_t watch[VW_WATCH_MAX];     /* VW_CMD_WATCH */
	int nwatch;
	int rd;        /* VW_CMD_VIEW: send the RD part (-1: unchanged) */
	int positions; /* VW_CMD_VIEW: send the map's positions (-1: unchanged) */
} vw_command_t;

/* Parse {"cmd": "start"|"stop"|"reset", "token": "..."},
 * {"cmd": "watch", "channels": [["robot", id], ...]} (at most VW_WATCH_MAX) or
 * {"cmd": "view", "rd": bool, "positions": bool}: 0, or HAKO_EPROTO with why set. */
int vw_command_parse(const char *text, size_t len, vw_command_t *out, const char **why);
const char *vw_cmd_name(vw_cmd_t cmd);

/* ---- the state sent to the page ---- */

#define VW_VALUE_MAX 16384 /* a channel's JSON value longer than this is sent as null */

typedef struct vw_channel {
	char robot[HAKO_NAME_MAX];
	int32_t id;
	char name[HAKO_NAME_MAX]; /* pdudef name, "" if none */
	char type[128];           /* "" if unknown */
	uint32_t size;
	uint64_t seq;
	double rate_hz; /* writes per wall-clock second, smoothed */
	int position;   /* a Twist drawn on the map (of a robot with pos/position/pose: that one) */
	/* read on demand (vw_sampler_read, vw_sampler_json): only what a session asks for */
	uint8_t *raw; /* the PDU bytes of write raw_seq (len raw_len) */
	size_t raw_len;
	uint64_t raw_seq;
	char *json; /* raw as JSON, NULL if none or unknown (owned) */
	uint64_t json_seq;
	int json_done; /* json is the conversion of raw_seq */
	int too_big;   /* the value was longer than VW_VALUE_MAX */
	/* sampler only */
	hako_channel_t *ch;
	uint64_t rate_seq;
	hako_time_t rate_wall;
	int eu; /* index in vw_state_t.eus of the robot's EU, -1 none (a hint, checked) */
} vw_channel_t;

typedef struct vw_eu {
	char name[HAKO_NAME_MAX];
	char robot[HAKO_NAME_MAX];
	uint32_t id;
	int status; /* hako_rd_status_t */
	int epoch;
	int owner;
	int next_owner;
} vw_eu_t;

#define VW_HANDOFFS 32

typedef struct vw_handoff {
	hako_time_t world_time;
	uint32_t eu;
	int from;
	int to;
	int epoch;
} vw_handoff_t;

/* The Foxglove sessions' counters (vw_fox.h). */
typedef struct vw_fox_stats {
	int sessions;
	int channels;              /* advertised now */
	uint64_t messages_sent;    /* message and time frames */
	uint64_t messages_dropped; /* replaced before a slow client took them */
	uint64_t throttled;        /* session samples skipped: the byte budget was spent */
	uint64_t refused;          /* bad messages, refused publishes */
	uint64_t published;        /* PDUs written for clients */
	uint64_t pending_max;      /* the most one session ever had queued (bytes) */
} vw_fox_stats_t;

typedef struct vw_stats {
	int sessions;
	uint64_t frames_sent;
	uint64_t frames_dropped;   /* replaced before a slow client took them */
	uint64_t frames_throttled; /* not made: the session had spent its byte budget */
	uint64_t pending_bytes;    /* queued for every session now */
	uint64_t pending_max;      /* the most one session ever had queued */
	uint64_t refused_path;
	uint64_t refused_message;
	uint64_t refused_token;
	vw_fox_stats_t fox;
} vw_stats_t;

#define VW_FEDERATION_MAX HAKO_CONDUCTOR_STATUS_BYTES /* the status as JSON (hako/conductor.h) */

typedef struct vw_state {
	int attached; /* a domain is open */
	hako_domain_info_t info;
	double rtf; /* world time per wall time over the last sample, -1 unknown */
	hako_asset_info_t *assets;
	int nassets;
	vw_channel_t *channels;
	int nchannels;
	vw_eu_t *eus;
	int neus;
	vw_handoff_t handoffs[VW_HANDOFFS]; /* ring, newest at (nhandoffs - 1) % VW_HANDOFFS */
	uint64_t nhandoffs;
	uint64_t list_version; /* bumped when the channel list changes */
	uint64_t rd_version;   /* bumped when an EU or the hand-offs change */
	vw_stats_t stats;
	int control;       /* the server accepts commands (always 1: a token exists) */
	double sample_hz;  /* the sampling rate now (lowered when sampling costs too much) */
	int sample_hz_max; /* the configured one */
	double cpu;        /* the viewer's CPU use over the last second, fraction of a core */
	/* A federation node's conductor status (its node, role, Dmax and each peer's drift), as
	 * the conductor writes it in its domain: checked JSON text, "" if the domain has none. */
	char federation[VW_FEDERATION_MAX];
} vw_state_t;

/* The JSON "state" message (docs/viewer.md): domain, assets, the viewer; the RD part (EUs,
 * hand-offs) only if with_rd. Its size does not grow with the channels. */
void vw_state_encode(const vw_state_t *st, int with_rd, vw_buf_t *out);
/* The "channels" message: the channel list's metadata (no values), sent when it changes. */
void vw_list_encode(const vw_state_t *st, vw_buf_t *out);
/* The "positions" message: [robot, id, x, y, owner] of each readable position channel. */
void vw_positions_encode(const vw_state_t *st, vw_buf_t *out);
/* One entry of a "values" message: {"robot","id","seq","rate_hz","value"[,"too_big"]}. */
void vw_value_encode(const vw_channel_t *c, vw_buf_t *out);
/* The position (linear.x, linear.y) of a Twist's PDU bytes: 0, or -1 if they hold none. */
int vw_twist_xy(const uint8_t *raw, size_t len, double *x, double *y);

/* ---- the sampler ---- */

typedef struct vw_sampler vw_sampler_t;

typedef struct vw_sampler_config {
	const char *domain;
	const char *pdudef; /* NULL: none */
	const char *rd;     /* NULL: none */
} vw_sampler_config_t;

int vw_sampler_create(const vw_sampler_config_t *cfg, vw_sampler_t **out, char *why, size_t len);
void vw_sampler_destroy(vw_sampler_t *s);
/* Read the domain now (attaching if it was not, letting go if its conductor is gone). */
void vw_sampler_tick(vw_sampler_t *s);
vw_state_t *vw_sampler_state(vw_sampler_t *s);
/* The open domain, NULL if none. */
hako_domain_t *vw_sampler_domain(vw_sampler_t *s);
/* The channel (robot, id) of the last sample, NULL if none. */
vw_channel_t *vw_sampler_channel(vw_sampler_t *s, const char *robot, int32_t id);
/* Read a channel's PDU bytes if it was written since they were read; 0 if c->raw holds its
 * latest value. Once per write, however many sessions want it. */
int vw_sampler_read(vw_sampler_t *s, vw_channel_t *c);
/* Between two ticks, cheaply: a channel's write number now (c->seq), the world time now
 * (st->info.world_time, also returned). For a faster pace than the full sample's. */
void vw_sampler_refresh(vw_sampler_t *s, vw_channel_t *c);
hako_time_t vw_sampler_world_time(vw_sampler_t *s);
/* Read and convert to JSON (through the registry) once per write: c->json, NULL if unknown. */
const char *vw_sampler_json(vw_sampler_t *s, vw_channel_t *c);

#endif
