/* Per-drone commands (fleet_cmds.h). */
#include "fleet_cmds.h"

#include <stdio.h>
#include <string.h>

#include "hako/error.h"
#include "hako/msgs/hako_msgs/HakoDroneCmdLand.h"
#include "hako/msgs/hako_msgs/HakoDroneCmdMove.h"
#include "hako/msgs/hako_msgs/HakoDroneCmdTakeoff.h"

#define CACHELINE 64u

static const int32_t ids[FLEET_DCMD_CHANNELS] = {FLEET_CH_CMD_TAKEOFF, FLEET_CH_CMD_MOVE,
                                                 FLEET_CH_CMD_LAND};
static const size_t sizes[FLEET_DCMD_CHANNELS] = {HAKO_PDU_SIZE_HAKO_MSGS_HAKODRONECMDTAKEOFF,
                                                  HAKO_PDU_SIZE_HAKO_MSGS_HAKODRONECMDMOVE,
                                                  HAKO_PDU_SIZE_HAKO_MSGS_HAKODRONECMDLAND};
/* The largest of the three PDUs. */
#define PDU_MAX HAKO_PDU_SIZE_HAKO_MSGS_HAKODRONECMDMOVE

int fleet_dcmd_open(hako_domain_t *dom, size_t k, fleet_dcmd_io_t *io)
{
	char robot[32];
	snprintf(robot, sizeof(robot), "Drone-%zu", k + 1);
	for (int c = 0; c < FLEET_DCMD_CHANNELS; c++) {
		int r = hako_channel_create(dom, robot, ids[c], sizes[c], &io->ch[c]);
		if (r != 0) {
			return r;
		}
	}
	return 0;
}

size_t fleet_dcmd_channels(size_t n)
{
	return n * FLEET_DCMD_CHANNELS;
}

size_t fleet_dcmd_bytes(size_t n)
{
	size_t per = 0;
	for (int c = 0; c < FLEET_DCMD_CHANNELS; c++) {
		per += 2 * ((sizes[c] + CACHELINE - 1) / CACHELINE * CACHELINE);
	}
	return n * per;
}

/* The header of any of the three: the same first member of each base. */
static Hako_hako_msgs_HakoDroneCmdHeader *header(void *pdu)
{
	return &hako_pdu_hako_msgs_HakoDroneCmdMove_base(pdu)->header;
}

/* A well-formed PDU of channel k's type. */
static int valid(int k, const void *pdu, size_t len)
{
	switch (k) {
	case FLEET_DCMD_TAKEOFF:
		return hako_pdu_hako_msgs_HakoDroneCmdTakeoff_get(pdu, len) != NULL;
	case FLEET_DCMD_MOVE: return hako_pdu_hako_msgs_HakoDroneCmdMove_get(pdu, len) != NULL;
	default: return hako_pdu_hako_msgs_HakoDroneCmdLand_get(pdu, len) != NULL;
	}
}

int fleet_dcmd_poll(const fleet_dcmd_io_t *io, fleet_dcmd_t *c, int64_t now, int64_t dmax)
{
	int taken = 0;
	for (int k = 0; k < FLEET_DCMD_CHANNELS; k++) {
		if (hako_channel_seq(io->ch[k]) == c->seq[k]) {
			continue; /* the common case: one load */
		}
		uint8_t pdu[PDU_MAX];
		size_t len = 0;
		uint64_t seq = 0;
		if (hako_channel_read(io->ch[k], pdu, sizeof(pdu), &len, &seq) != 0) {
			continue;
		}
		c->seq[k] = seq;
		if (!valid(k, pdu, len) || !header(pdu)->request) {
			continue; /* an answer (ours, or the client's "done") or not a PDU */
		}
		if (c->state == FLEET_DCMD_PENDING || c->state == FLEET_DCMD_ACTIVE) {
			if (c->kind != (uint32_t)k) {
				c->state = FLEET_DCMD_REPLY; /* cancelled: answered below */
				c->result_code = -1;
				fleet_dcmd_reply(io, c);
			}
		}
		memset(c->arg, 0, sizeof(c->arg));
		if (k == FLEET_DCMD_TAKEOFF) {
			c->arg[0] = hako_pdu_hako_msgs_HakoDroneCmdTakeoff_base(pdu)->height;
		} else if (k == FLEET_DCMD_MOVE) {
			const Hako_hako_msgs_HakoDroneCmdMove *m =
			    hako_pdu_hako_msgs_HakoDroneCmdMove_base(pdu);
			c->arg[0] = m->x;
			c->arg[1] = m->y;
			c->arg[2] = m->z;
		}
		c->kind = (uint32_t)k;
		c->state = FLEET_DCMD_PENDING;
		c->at_usec =
		    (now + dmax) / FLEET_DCMD_QUANTUM * FLEET_DCMD_QUANTUM + FLEET_DCMD_QUANTUM;
		c->result_code = 0;
		taken = 1;
	}
	return taken;
}

void fleet_dcmd_apply(fleet_dcmd_t *c, drone_t *d, int64_t mt, int fleet_changed)
{
	if (c->state == FLEET_DCMD_ACTIVE && fleet_changed) {
		c->state = FLEET_DCMD_REPLY; /* the fleet-wide command replaced it */
		c->result_code = -1;
	}
	if (c->state != FLEET_DCMD_PENDING || c->at_usec != mt) {
		return;
	}
	int r = 0;
	switch (c->kind) {
	case FLEET_DCMD_TAKEOFF: r = drone_takeoff(d, c->arg[0]); break;
	case FLEET_DCMD_MOVE: r = drone_goto(d, c->arg[0], c->arg[1], c->arg[2]); break;
	default: r = drone_land(d); break;
	}
	c->state = r == 0 ? FLEET_DCMD_ACTIVE : FLEET_DCMD_REPLY;
	c->result_code = r == 0 ? 0 : -1;
}

void fleet_dcmd_check(fleet_dcmd_t *c, const drone_t *d)
{
	if (c->state != FLEET_DCMD_ACTIVE) {
		return;
	}
	drone_mode_t m = drone_mode(d);
	if ((c->kind == FLEET_DCMD_LAND && m == DRONE_LANDED) ||
	    (c->kind != FLEET_DCMD_LAND && m == DRONE_HOLD)) {
		c->state = FLEET_DCMD_REPLY;
		c->result_code = 0;
	}
}

int fleet_dcmd_reply(const fleet_dcmd_io_t *io, fleet_dcmd_t *c)
{
	if (c->state != FLEET_DCMD_REPLY) {
		return 0;
	}
	uint8_t pdu[PDU_MAX];
	size_t len = sizes[c->kind];
	switch (c->kind) {
	case FLEET_DCMD_TAKEOFF:
		hako_pdu_hako_msgs_HakoDroneCmdTakeoff_init(pdu, len);
		hako_pdu_hako_msgs_HakoDroneCmdTakeoff_base(pdu)->height = c->arg[0];
		break;
	case FLEET_DCMD_MOVE:
		hako_pdu_hako_msgs_HakoDroneCmdMove_init(pdu, len);
		hako_pdu_hako_msgs_HakoDroneCmdMove_base(pdu)->x = c->arg[0];
		hako_pdu_hako_msgs_HakoDroneCmdMove_base(pdu)->y = c->arg[1];
		hako_pdu_hako_msgs_HakoDroneCmdMove_base(pdu)->z = c->arg[2];
		break;
	default: hako_pdu_hako_msgs_HakoDroneCmdLand_init(pdu, len); break;
	}
	Hako_hako_msgs_HakoDroneCmdHeader *h = header(pdu);
	h->request = 0;
	h->result = 1;
	h->result_code = c->result_code;
	c->state = FLEET_DCMD_NONE;
	int r = hako_channel_write(io->ch[c->kind], pdu, len);
	return r != 0 ? r : 1;
}

static void put_u(uint8_t **o, uint64_t v, int n)
{
	for (int k = 0; k < n; k++) {
		*(*o)++ = (uint8_t)(v >> (8 * k));
	}
}

static uint64_t get_u(const uint8_t **in, int n)
{
	uint64_t v = 0;
	for (int k = 0; k < n; k++) {
		v |= (uint64_t) * (*in)++ << (8 * k);
	}
	return v;
}

size_t fleet_dcmd_pack(const fleet_dcmd_t *c, void *buf, size_t cap)
{
	if (cap < FLEET_DCMD_CTX_SIZE) {
		return 0;
	}
	uint8_t *o = buf;
	for (int k = 0; k < FLEET_DCMD_CHANNELS; k++) {
		put_u(&o, c->seq[k], 8);
	}
	put_u(&o, c->kind, 4);
	put_u(&o, c->state, 4);
	put_u(&o, (uint64_t)c->at_usec, 8);
	for (int k = 0; k < 3; k++) {
		uint64_t bits;
		memcpy(&bits, &c->arg[k], sizeof(bits));
		put_u(&o, bits, 8);
	}
	put_u(&o, (uint32_t)c->result_code, 4);
	put_u(&o, 0, 4);
	/* The fields above are the whole size, no more: the context's room is counted on it. */
	return (size_t)(o - (uint8_t *)buf) == FLEET_DCMD_CTX_SIZE ? FLEET_DCMD_CTX_SIZE : 0;
}

int fleet_dcmd_unpack(fleet_dcmd_t *out, const void *buf, size_t len)
{
	if (len != FLEET_DCMD_CTX_SIZE) {
		return HAKO_EPROTO;
	}
	const uint8_t *in = buf;
	fleet_dcmd_t c;
	memset(&c, 0, sizeof(c));
	for (int k = 0; k < FLEET_DCMD_CHANNELS; k++) {
		c.seq[k] = get_u(&in, 8);
	}
	c.kind = (uint32_t)get_u(&in, 4);
	c.state = (uint32_t)get_u(&in, 4);
	c.at_usec = (int64_t)get_u(&in, 8);
	for (int k = 0; k < 3; k++) {
		uint64_t bits = get_u(&in, 8);
		memcpy(&c.arg[k], &bits, sizeof(bits));
	}
	c.result_code = (int32_t)(uint32_t)get_u(&in, 4);
	if (get_u(&in, 4) != 0 || (size_t)(in - (const uint8_t *)buf) != FLEET_DCMD_CTX_SIZE ||
	    c.kind >= FLEET_DCMD_CHANNELS || c.state > FLEET_DCMD_REPLY) {
		return HAKO_EPROTO;
	}
	*out = c;
	return 0;
}

int fleet_dcmd_changed(const drone_t *before, const drone_t *after)
{
	return before->mode != after->mode ||
	       memcmp(before->target, after->target, sizeof(before->target)) != 0;
}
