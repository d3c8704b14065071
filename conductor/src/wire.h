/* The conductor's control-plane messages on ZeroMQ: one frame each, a fixed header (magic
 * "HKCD", version, type, body length, the sender's incarnation) and a fixed-size body per type,
 * little-endian. The incarnation (a random number drawn when a node process starts) is in every
 * message, so that a message of an earlier or a second process of the same node is told apart
 * from the live one's (version 2; version 1 had it in JOIN and TIME only). Version 3: the
 * six RD-Full kinds gave way to one extension kind (EXT), whose body the extension reads. Every
 * received frame is checked (size, magic, version, type, body length, strings terminated)
 * before a field is read; a frame that fails is counted and dropped by the caller.
 *
 * The operations carry Hakoniwa's remote API names: Join, SimControl, GetEvent (the event the
 * server sends a client), AckEvent, GetSimState; TimeSync is the world-time exchange. */
#ifndef HAKOI_CONDUCTOR_WIRE_H
#define HAKOI_CONDUCTOR_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "hako/conductor_ext.h"
#include "hako/domain.h"

#define HAKOI_WIRE_MAGIC   0x44434b48u /* "HKCD" */
#define HAKOI_WIRE_VERSION 3u
#define HAKOI_WIRE_HEADER  20u
#define HAKOI_WIRE_ID      64u /* node ids on the wire: NUL-padded, at most 63 bytes */
#define HAKOI_WIRE_REASON  192u

typedef enum hakoi_msg_type {
	HAKOI_MSG_JOIN = 1,          /* client -> server */
	HAKOI_MSG_JOIN_REPLY = 2,    /* server -> client */
	HAKOI_MSG_TIME = 3,          /* TimeSync, both ways; also the heartbeat */
	HAKOI_MSG_SIM_CONTROL = 4,   /* client -> server: a request to start/stop/reset all */
	HAKOI_MSG_EVENT = 5,         /* GetEvent: server -> client, do start/stop/reset/error */
	HAKOI_MSG_ACK_EVENT = 6,     /* client -> server: the event is done (or failed) */
	HAKOI_MSG_LEAVE = 7,         /* either way: this node goes away */
	HAKOI_MSG_GET_SIM_STATE = 8, /* any -> server: what is the federation doing */
	HAKOI_MSG_SIM_STATE = 9,     /* server -> asker */
	HAKOI_MSG_FAILED = 10,       /* client -> server: this node went to Error (reason) */
	/* An extension's message (hako/conductor_ext.h), either way, + an optional second part:
	 * the extension's id, a result, a body the extension reads. */
	HAKOI_MSG_EXT = 11,
	HAKOI_MSG_TYPES
} hakoi_msg_type_t;

/* Lifecycle operations (SimControl, GetEvent, AckEvent). */
typedef enum hakoi_op {
	HAKOI_OP_START = 1,
	HAKOI_OP_STOP = 2,
	HAKOI_OP_RESET = 3,
	HAKOI_OP_ERROR = 4,
} hakoi_op_t;

typedef struct hakoi_msg {
	uint16_t type;
	char node[HAKOI_WIRE_ID]; /* the sender */
	uint64_t incarnation;     /* every message: the sender's process (random per process) */
	/* JOIN, JOIN_REPLY */
	uint32_t config_hash;
	int32_t result; /* JOIN_REPLY, ACK_EVENT: 0 or a HAKO_E* code */
	char reason[HAKOI_WIRE_REASON];
	/* TIME */
	int64_t world_time;
	uint64_t world_steps;
	uint32_t state;
	uint32_t seq;         /* TIME: per sender, +1 per message */
	int64_t sent_real_ns; /* CLOCK_REALTIME at the sender */
	/* SIM_CONTROL, EVENT, ACK_EVENT */
	uint32_t op;
	uint32_t request;
	int64_t stop_time; /* EVENT start: the server's stop time (0: none); EVENT stop: the
	                      world time the server stopped at. Every node stops there. */
	/* SIM_STATE */
	uint32_t joined;  /* clients joined */
	uint32_t clients; /* clients configured */
	/* EXT (result above: 0, or the conductor's refusal with a reason as the body) */
	uint16_t ext;
	uint32_t ext_len;
	uint8_t ext_body[HAKO_CONDUCTOR_EXT_BODY_MAX];
} hakoi_msg_t;

/* An EXT body: ext, pad, result, length, pad (16 bytes), then the extension's bytes. */
#define HAKOI_WIRE_EXT_FIXED 16u
/* The largest frame: an EXT with the largest body (every other kind is shorter). */
#define HAKOI_WIRE_FRAME_MAX                                                                       \
	(HAKOI_WIRE_HEADER + HAKOI_WIRE_ID + HAKOI_WIRE_EXT_FIXED + HAKO_CONDUCTOR_EXT_BODY_MAX)

/* Encode m into buf (at least HAKOI_WIRE_FRAME_MAX bytes): the frame's length. */
size_t hakoi_wire_encode(const hakoi_msg_t *m, uint8_t *buf);
size_t hakoi_wire_max(void);
/* Decode a received frame: 0, or HAKO_EPROTO with why (for the once-per-peer log line). */
int hakoi_wire_decode(const uint8_t *buf, size_t len, hakoi_msg_t *m, char *why, size_t why_len);

const char *hakoi_op_name(uint32_t op);

#endif
