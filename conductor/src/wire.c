/* The conductor's control-plane frames (wire.h): encode and check-then-decode. */
#include "wire.h"

#include <stdio.h>
#include <string.h>

#include "hako/error.h"
#include "hakoi/bytes.h"

/* Body layouts, by type (offsets from the body start; node id first in every body). */
enum {
	B_NODE = 0,
	B_REST = HAKOI_WIRE_ID,
	LEN_JOIN = HAKOI_WIRE_ID + 8,                           /* hash, pad */
	LEN_JOIN_REPLY = HAKOI_WIRE_ID + 8 + HAKOI_WIRE_REASON, /* hash, result, reason */
	LEN_TIME = HAKOI_WIRE_ID + 32,                          /* time, steps, state, seq, sent */
	/* op, request, result, pad, stop time, reason */
	LEN_OP = HAKOI_WIRE_ID + 24 + HAKOI_WIRE_REASON,
	LEN_NODE = HAKOI_WIRE_ID,           /* LEAVE, GET_SIM_STATE */
	LEN_SIM_STATE = HAKOI_WIRE_ID + 24, /* state, joined, clients, pad, world time */
	LEN_FAILED = HAKOI_WIRE_ID + HAKOI_WIRE_REASON,
	/* ext, pad, result, length, pad, then the extension's body (variable) */
	LEN_EXT = HAKOI_WIRE_ID + HAKOI_WIRE_EXT_FIXED,
	LEN_EXT_MAX = LEN_EXT + HAKO_CONDUCTOR_EXT_BODY_MAX,
};

static size_t body_len(uint16_t type)
{
	switch (type) {
	case HAKOI_MSG_JOIN: return LEN_JOIN;
	case HAKOI_MSG_JOIN_REPLY: return LEN_JOIN_REPLY;
	case HAKOI_MSG_TIME: return LEN_TIME;
	case HAKOI_MSG_SIM_CONTROL:
	case HAKOI_MSG_EVENT:
	case HAKOI_MSG_ACK_EVENT: return LEN_OP;
	case HAKOI_MSG_LEAVE:
	case HAKOI_MSG_GET_SIM_STATE: return LEN_NODE;
	case HAKOI_MSG_SIM_STATE: return LEN_SIM_STATE;
	case HAKOI_MSG_FAILED: return LEN_FAILED;
	case HAKOI_MSG_EXT: return LEN_EXT; /* + the body */
	default: return 0;
	}
}

size_t hakoi_wire_max(void)
{
	return HAKOI_WIRE_FRAME_MAX;
}

/* A NUL-padded string field of n bytes. */
static void put_str(uint8_t *p, const char *s, size_t n)
{
	memset(p, 0, n);
	size_t len = strnlen(s, n - 1);
	memcpy(p, s, len);
}

/* 0 if the field holds a NUL within its n bytes (then copied), else -1. */
static int get_str(const uint8_t *p, char *out, size_t n)
{
	const uint8_t *nul = memchr(p, 0, n);
	if (nul == NULL) {
		return -1;
	}
	memcpy(out, p, (size_t)(nul - p) + 1);
	return 0;
}

size_t hakoi_wire_encode(const hakoi_msg_t *m, uint8_t *buf)
{
	size_t len = body_len(m->type);
	if (m->type == HAKOI_MSG_EXT) {
		len += m->ext_len <= HAKO_CONDUCTOR_EXT_BODY_MAX ? m->ext_len : 0;
	}
	uint8_t *b = buf + HAKOI_WIRE_HEADER;
	memset(buf, 0, HAKOI_WIRE_HEADER + len);
	hakoi_put_le32(buf, HAKOI_WIRE_MAGIC);
	buf[4] = (uint8_t)HAKOI_WIRE_VERSION;
	buf[5] = (uint8_t)(HAKOI_WIRE_VERSION >> 8);
	buf[6] = (uint8_t)m->type;
	buf[7] = (uint8_t)(m->type >> 8);
	hakoi_put_le32(buf + 8, (uint32_t)len);
	hakoi_put_le64(buf + 12, m->incarnation);
	put_str(b + B_NODE, m->node, HAKOI_WIRE_ID);
	uint8_t *r = b + B_REST;
	switch (m->type) {
	case HAKOI_MSG_JOIN: hakoi_put_le32(r, m->config_hash); break;
	case HAKOI_MSG_JOIN_REPLY:
		hakoi_put_le32(r, m->config_hash);
		hakoi_put_le32(r + 4, (uint32_t)m->result);
		put_str(r + 8, m->reason, HAKOI_WIRE_REASON);
		break;
	case HAKOI_MSG_TIME:
		hakoi_put_le64(r, (uint64_t)m->world_time);
		hakoi_put_le64(r + 8, m->world_steps);
		hakoi_put_le32(r + 16, m->state);
		hakoi_put_le32(r + 20, m->seq);
		hakoi_put_le64(r + 24, (uint64_t)m->sent_real_ns);
		break;
	case HAKOI_MSG_SIM_CONTROL:
	case HAKOI_MSG_EVENT:
	case HAKOI_MSG_ACK_EVENT:
		hakoi_put_le32(r, m->op);
		hakoi_put_le32(r + 4, m->request);
		hakoi_put_le32(r + 8, (uint32_t)m->result);
		hakoi_put_le64(r + 16, (uint64_t)m->stop_time);
		put_str(r + 24, m->reason, HAKOI_WIRE_REASON);
		break;
	case HAKOI_MSG_SIM_STATE:
		hakoi_put_le32(r, m->state);
		hakoi_put_le32(r + 4, m->joined);
		hakoi_put_le32(r + 8, m->clients);
		hakoi_put_le64(r + 16, (uint64_t)m->world_time);
		break;
	case HAKOI_MSG_FAILED: put_str(r, m->reason, HAKOI_WIRE_REASON); break;
	case HAKOI_MSG_EXT:
		r[0] = (uint8_t)m->ext;
		r[1] = (uint8_t)(m->ext >> 8);
		hakoi_put_le32(r + 4, (uint32_t)m->result);
		hakoi_put_le32(r + 8, (uint32_t)(len - LEN_EXT));
		memcpy(r + 16, m->ext_body, len - LEN_EXT);
		break;
	default: break;
	}
	return HAKOI_WIRE_HEADER + len;
}

static int bad(char *why, size_t n, const char *what)
{
	snprintf(why, n, "%s", what);
	return HAKO_EPROTO;
}

int hakoi_wire_decode(const uint8_t *buf, size_t len, hakoi_msg_t *m, char *why, size_t why_len)
{
	memset(m, 0, sizeof(*m));
	if (len < HAKOI_WIRE_HEADER) {
		return bad(why, why_len, "shorter than a header");
	}
	if (hakoi_get_le32(buf) != HAKOI_WIRE_MAGIC) {
		return bad(why, why_len, "not a hako conductor message (magic)");
	}
	uint16_t version = (uint16_t)(buf[4] | buf[5] << 8);
	if (version != HAKOI_WIRE_VERSION) {
		snprintf(why, why_len, "version %u (this conductor speaks %u)", version,
		         HAKOI_WIRE_VERSION);
		return HAKO_EPROTO;
	}
	m->type = (uint16_t)(buf[6] | buf[7] << 8);
	size_t want = body_len(m->type);
	if (want == 0) {
		snprintf(why, why_len, "unknown type %u", m->type);
		return HAKO_EPROTO;
	}
	uint32_t blen = hakoi_get_le32(buf + 8);
	/* An extension's body is variable, up to its bound; every other one is fixed. */
	if (m->type == HAKOI_MSG_EXT && blen > want && blen <= LEN_EXT_MAX) {
		want = blen;
	}
	if (blen != want || len != HAKOI_WIRE_HEADER + want) {
		snprintf(why, why_len, "type %u: body of %u bytes in a frame of %zu (expected %zu)",
		         m->type, blen, len, want);
		return HAKO_EPROTO;
	}
	m->incarnation = hakoi_get_le64(buf + 12);
	const uint8_t *b = buf + HAKOI_WIRE_HEADER;
	const uint8_t *r = b + B_REST;
	if (get_str(b + B_NODE, m->node, HAKOI_WIRE_ID) != 0 || m->node[0] == '\0') {
		return bad(why, why_len, "a node id that is empty or not terminated");
	}
	switch (m->type) {
	case HAKOI_MSG_JOIN: m->config_hash = hakoi_get_le32(r); break;
	case HAKOI_MSG_JOIN_REPLY:
		m->config_hash = hakoi_get_le32(r);
		m->result = (int32_t)hakoi_get_le32(r + 4);
		if (get_str(r + 8, m->reason, HAKOI_WIRE_REASON) != 0) {
			return bad(why, why_len, "a reason that is not terminated");
		}
		break;
	case HAKOI_MSG_TIME:
		m->world_time = (int64_t)hakoi_get_le64(r);
		m->world_steps = hakoi_get_le64(r + 8);
		m->state = hakoi_get_le32(r + 16);
		m->seq = hakoi_get_le32(r + 20);
		m->sent_real_ns = (int64_t)hakoi_get_le64(r + 24);
		if (m->world_time < 0 || m->world_time > (1ll << 60) || m->state > 16) {
			return bad(why, why_len, "a world time or state out of range");
		}
		break;
	case HAKOI_MSG_SIM_CONTROL:
	case HAKOI_MSG_EVENT:
	case HAKOI_MSG_ACK_EVENT:
		m->op = hakoi_get_le32(r);
		m->request = hakoi_get_le32(r + 4);
		m->result = (int32_t)hakoi_get_le32(r + 8);
		m->stop_time = (int64_t)hakoi_get_le64(r + 16);
		if (m->op < HAKOI_OP_START || m->op > HAKOI_OP_ERROR) {
			return bad(why, why_len, "an unknown operation");
		}
		if (m->stop_time < 0 || m->stop_time > (1ll << 60)) {
			return bad(why, why_len, "a stop time out of range");
		}
		if (get_str(r + 24, m->reason, HAKOI_WIRE_REASON) != 0) {
			return bad(why, why_len, "a reason that is not terminated");
		}
		break;
	case HAKOI_MSG_SIM_STATE:
		m->state = hakoi_get_le32(r);
		m->joined = hakoi_get_le32(r + 4);
		m->clients = hakoi_get_le32(r + 8);
		m->world_time = (int64_t)hakoi_get_le64(r + 16);
		break;
	case HAKOI_MSG_FAILED:
		if (get_str(r, m->reason, HAKOI_WIRE_REASON) != 0) {
			return bad(why, why_len, "a reason that is not terminated");
		}
		break;
	case HAKOI_MSG_EXT:
		m->ext = (uint16_t)(r[0] | r[1] << 8);
		m->result = (int32_t)hakoi_get_le32(r + 4);
		m->ext_len = hakoi_get_le32(r + 8);
		if (m->ext == 0 || m->ext_len != blen - LEN_EXT) {
			return bad(why, why_len,
			           "an extension message with id 0 or a wrong length");
		}
		memcpy(m->ext_body, r + 16, m->ext_len);
		break;
	default: break;
	}
	return 0;
}

const char *hakoi_op_name(uint32_t op)
{
	switch (op) {
	case HAKOI_OP_START: return "start";
	case HAKOI_OP_STOP: return "stop";
	case HAKOI_OP_RESET: return "reset";
	case HAKOI_OP_ERROR: return "error";
	default: return "?";
	}
}
