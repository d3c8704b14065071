/* A fleet host (fleet_host.h). */
#include "fleet_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_cmds.h"
#include "fleet_share.h"
#include "formation.h"
#include "hako/error.h"
#include "hako/msgs/geometry_msgs/Twist.h"
#include "hako/msgs/hako_mavlink_msgs/HakoHilActuatorControls.h"
#include "hako/msgs/hako_msgs/DroneStatus.h"

#define CACHELINE 64u

struct drone_io {
	hako_channel_t *ch[FLEET_CHANNELS]; /* motor, pos, velocity, status */
};

struct fleet_host {
	hako_domain_t *dom;
	drone_params_t params;
	size_t first, count, total;
	drone_t *drones;
	struct drone_io *io;
	hako_channel_batch_t *batch; /* every drone's channels, drone i's at [4 i, 4 i + 4) */
	const fleet_plan_t *plan;
	fleet_dcmd_io_t *dio; /* per-drone commands (NULL: off) */
	fleet_dcmd_t *cmd;
	int64_t dmax;
	uint64_t dcmd_taken, dcmd_answered;
};

static const int32_t channel_ids[FLEET_CHANNELS] = {FLEET_CH_MOTOR, FLEET_CH_POS, FLEET_CH_VELOCITY,
                                                    FLEET_CH_STATUS};
static const size_t channel_sizes[FLEET_CHANNELS] = {
    HAKO_PDU_SIZE_HAKO_MAVLINK_MSGS_HAKOHILACTUATORCONTROLS, HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST,
    HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST, HAKO_PDU_SIZE_HAKO_MSGS_DRONESTATUS};

size_t fleet_host_channels(size_t n)
{
	return n * FLEET_CHANNELS;
}

size_t fleet_host_bytes(size_t n)
{
	size_t per = 0;
	for (int c = 0; c < FLEET_CHANNELS; c++) {
		/* A channel is two buffers of its size rounded up to a cache line
		 * (core/src/channel.c). */
		per += 2 * ((channel_sizes[c] + CACHELINE - 1) / CACHELINE * CACHELINE);
	}
	return n * per;
}

int fleet_host_open(hako_domain_t *dom, size_t first, size_t count, size_t total,
                    fleet_host_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (dom == NULL || out == NULL || count == 0 || first + count > total) {
		return HAKO_EINVAL;
	}
	fleet_host_t *h = calloc(1, sizeof(*h));
	if (h == NULL) {
		return HAKO_ENOMEM;
	}
	h->dom = dom;
	h->first = first;
	h->count = count;
	h->total = total;
	drone_params_default(&h->params);
	/* One block for the drones: they are stepped in order, so they stay in the caches. */
	h->drones = aligned_alloc(CACHELINE, (count * sizeof(drone_t) + CACHELINE - 1) / CACHELINE *
	                                         CACHELINE);
	h->io = calloc(count, sizeof(*h->io));
	if (h->drones == NULL || h->io == NULL) {
		fleet_host_close(h);
		return HAKO_ENOMEM;
	}
	int r = 0;
	for (size_t i = 0; i < count && r == 0; i++) {
		size_t k = first + i;
		fleet_drone_start(&h->drones[i], k, total);
		char robot[32];
		snprintf(robot, sizeof(robot), "Drone-%zu", k + 1);
		for (int c = 0; c < FLEET_CHANNELS && r == 0; c++) {
			r = hako_channel_create(dom, robot, channel_ids[c], channel_sizes[c],
			                        &h->io[i].ch[c]);
		}
	}
	if (r == 0) {
		/* The batch's members: drone by drone, channel by channel. */
		hako_channel_t **chs = calloc(count * FLEET_CHANNELS, sizeof(*chs));
		for (size_t i = 0; chs != NULL && i < count; i++) {
			for (int c = 0; c < FLEET_CHANNELS; c++) {
				chs[i * FLEET_CHANNELS + (size_t)c] = h->io[i].ch[c];
			}
		}
		r = chs != NULL ? hako_channel_batch_create(chs, count * FLEET_CHANNELS, &h->batch)
		                : HAKO_ENOMEM;
		free(chs);
	}
	if (r != 0) {
		fleet_host_close(h);
		return r;
	}
	*out = h;
	return 0;
}

void fleet_drone_start(drone_t *d, size_t i, size_t n)
{
	double start[3];
	fleet_formation_point(FLEET_GRID, i, n, start);
	drone_init(d, start[0], start[1], 0.0);
}

void fleet_host_close(fleet_host_t *h)
{
	if (h == NULL) {
		return;
	}
	hako_channel_batch_destroy(h->batch);
	free(h->drones);
	free(h->io);
	free(h->dio);
	free(h->cmd);
	free(h);
}

size_t fleet_host_count(const fleet_host_t *h)
{
	return h != NULL ? h->count : 0;
}

const drone_t *fleet_host_drone(const fleet_host_t *h, size_t i)
{
	return h != NULL && i < h->count ? &h->drones[i] : NULL;
}

/* The mission's schedule, in world time. */
#define T_HAKO   3000000
#define T_CIRCLE 18000000
#define T_LAND   33000000

void fleet_mission_apply(drone_t *d, size_t i, size_t n, int64_t t)
{
	double p[3];
	if (t == DRONE_DT_USEC) {
		drone_takeoff(d, FLEET_ALTITUDE);
	} else if (t == T_HAKO) {
		fleet_formation_point(FLEET_HAKO, i, n, p);
		drone_goto(d, p[0], p[1], p[2]);
	} else if (t == T_CIRCLE) {
		fleet_formation_point(FLEET_CIRCLE, i, n, p);
		drone_goto(d, p[0], p[1], p[2]);
	} else if (t == T_LAND) {
		drone_land(d);
	}
}

#define PLAN_RING 16

struct fleet_plan {
	hako_channel_t *ch;
	uint64_t seq;
	fleet_command_t q[PLAN_RING]; /* the last PLAN_RING commands, q[k % PLAN_RING] */
	uint32_t count;
	int64_t min_at, max_at; /* of those in q */
	int late_said;
};

int fleet_plan_open(hako_domain_t *dom, fleet_plan_t **out)
{
	*out = NULL;
	fleet_plan_t *p = calloc(1, sizeof(*p));
	if (p == NULL) {
		return HAKO_ENOMEM;
	}
	int r =
	    hako_channel_create(dom, FLEET_CONTROLLER_ROBOT, 0, sizeof(fleet_command_t), &p->ch);
	if (r != 0) {
		free(p);
		return r;
	}
	/* A command of an earlier run is not this run's: only what is written from now on. */
	p->seq = hako_channel_seq(p->ch);
	p->min_at = INT64_MAX;
	p->max_at = INT64_MIN;
	*out = p;
	return 0;
}

void fleet_plan_close(fleet_plan_t *p)
{
	free(p);
}

void fleet_plan_poll(fleet_plan_t *p, int64_t now)
{
	if (p == NULL || hako_channel_seq(p->ch) == p->seq) {
		return;
	}
	fleet_command_t c;
	size_t len = 0;
	uint64_t seq = 0;
	if (hako_channel_read(p->ch, &c, sizeof(c), &len, &seq) != 0) {
		return;
	}
	p->seq = seq;
	if (len != sizeof(c) || c.magic != FLEET_SHARE_MAGIC || c.number <= p->count ||
	    c.kind < FLEET_CMD_TAKEOFF || c.kind > FLEET_CMD_LAND) {
		return;
	}
	if (c.at_usec <= now - DRONE_DT_USEC && !p->late_said) {
		p->late_said = 1;
		fprintf(stderr,
		        "fleet: command %u (for %.3f s) arrived at %.3f s, too late for drones "
		        "already past it: the controller's step must exceed Dmax + 1 ms\n",
		        c.number, c.at_usec / 1e6, now / 1e6);
	}
	p->q[p->count % PLAN_RING] = c;
	p->count++;
	p->min_at = INT64_MAX;
	p->max_at = INT64_MIN;
	for (uint32_t k = 0; k < p->count && k < PLAN_RING; k++) {
		p->min_at = p->q[k].at_usec < p->min_at ? p->q[k].at_usec : p->min_at;
		p->max_at = p->q[k].at_usec > p->max_at ? p->q[k].at_usec : p->max_at;
	}
}

void fleet_plan_apply(const fleet_plan_t *p, drone_t *d, size_t i, size_t n, int64_t t)
{
	if (p == NULL) {
		fleet_mission_apply(d, i, n, t);
		return;
	}
	if (t < p->min_at || t > p->max_at) {
		return; /* the common case: one compare */
	}
	for (uint32_t k = 0; k < p->count && k < PLAN_RING; k++) {
		const fleet_command_t *c = &p->q[k];
		if (c->at_usec != t) {
			continue;
		}
		double xyz[3];
		switch (c->kind) {
		case FLEET_CMD_TAKEOFF: drone_takeoff(d, c->altitude); break;
		case FLEET_CMD_GOTO:
			fleet_formation_point((fleet_formation_t)c->formation, i, n, xyz);
			drone_goto(d, xyz[0], xyz[1], xyz[2]);
			break;
		case FLEET_CMD_LAND: drone_land(d); break;
		default: break;
		}
	}
}

uint32_t fleet_plan_commands(const fleet_plan_t *p)
{
	return p != NULL ? p->count : 0;
}

void fleet_host_set_plan(fleet_host_t *h, const fleet_plan_t *p)
{
	h->plan = p;
}

void fleet_host_step_plain(fleet_host_t *h, int64_t now)
{
	for (size_t i = 0; i < h->count; i++) {
		fleet_mission_apply(&h->drones[i], h->first + i, h->total, now);
		drone_step(&h->drones[i], &h->params);
	}
}

void fleet_drone_pdus(const drone_t *d, int64_t t, void *const pdu[FLEET_CHANNELS])
{
	/* motor: the rotors' duty */
	void *buf = pdu[0];
	hako_pdu_hako_mavlink_msgs_HakoHilActuatorControls_init(
	    buf, HAKO_PDU_SIZE_HAKO_MAVLINK_MSGS_HAKOHILACTUATORCONTROLS);
	Hako_hako_mavlink_msgs_HakoHilActuatorControls *m =
	    hako_pdu_hako_mavlink_msgs_HakoHilActuatorControls_base(buf);
	double duty[4];
	drone_motor_controls(d, duty);
	m->time_usec = (uint64_t)t;
	for (int k = 0; k < 4; k++) {
		m->controls[k] = (float)duty[k];
	}
	/* pos: Hakoniwa's pos PDU is the drone's world pose as drone_pose gives it (x north,
	 * y west, z up; roll, pitch, yaw) */
	double pose[6];
	drone_pose(d, pose);
	hako_pdu_geometry_msgs_Twist_init(pdu[1], HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST);
	Hako_Twist *tw = hako_pdu_geometry_msgs_Twist_base(pdu[1]);
	tw->linear = (Hako_geometry_msgs_Vector3){pose[0], pose[1], pose[2]};
	tw->angular = (Hako_geometry_msgs_Vector3){pose[3], pose[4], pose[5]};
	/* velocity: the world velocity, in the frame of pos */
	double v[3];
	drone_velocity_world(d, v);
	hako_pdu_geometry_msgs_Twist_init(pdu[2], HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST);
	hako_pdu_geometry_msgs_Twist_base(pdu[2])->linear =
	    (Hako_geometry_msgs_Vector3){v[0], v[1], v[2]};
	/* status */
	hako_pdu_hako_msgs_DroneStatus_init(pdu[3], HAKO_PDU_SIZE_HAKO_MSGS_DRONESTATUS);
	hako_pdu_hako_msgs_DroneStatus_base(pdu[3])->flight_mode = (int32_t)drone_mode(d);
}

int fleet_host_enable_cmds(fleet_host_t *h)
{
	hako_domain_info_t info;
	h->dmax = hako_domain_get_info(h->dom, &info) == 0 ? info.max_delay_usec : 1000;
	h->dio = calloc(h->count, sizeof(*h->dio));
	h->cmd = calloc(h->count, sizeof(*h->cmd));
	if (h->dio == NULL || h->cmd == NULL) {
		return HAKO_ENOMEM;
	}
	for (size_t i = 0; i < h->count; i++) {
		int r = fleet_dcmd_open(h->dom, h->first + i, &h->dio[i]);
		if (r != 0) {
			return r;
		}
	}
	return 0;
}

void fleet_host_cmd_counts(const fleet_host_t *h, uint64_t *taken, uint64_t *answered)
{
	*taken = h != NULL ? h->dcmd_taken : 0;
	*answered = h != NULL ? h->dcmd_answered : 0;
}

/* Drone i's step with its per-drone command (fleet_cmds.h), as fleet_zones.c runs it. */
static int step_with_cmd(fleet_host_t *h, size_t i, int64_t now)
{
	drone_t *d = &h->drones[i];
	fleet_dcmd_t *c = &h->cmd[i];
	h->dcmd_taken += (uint64_t)fleet_dcmd_poll(&h->dio[i], c, now, h->dmax);
	drone_t before = *d;
	fleet_plan_apply(h->plan, d, h->first + i, h->total, now);
	fleet_dcmd_apply(c, d, now, fleet_dcmd_changed(&before, d));
	drone_step(d, &h->params);
	fleet_dcmd_check(c, d);
	int r = fleet_dcmd_reply(&h->dio[i], c);
	h->dcmd_answered += r > 0;
	return r < 0 ? r : 0;
}

int fleet_host_step(fleet_host_t *h, int64_t now)
{
	/* Each drone's four PDUs written in place right after its step: one batch loan and one
	 * commit (one fence) for its channels, not a loan, a commit and a fence a PDU. After the
	 * step, not before: the loan's locked instructions wait for the channels' lines, and the
	 * step's arithmetic would wait behind them (larger chunks of drones, loaned before their
	 * steps, measured slower than the loan a PDU this replaces). */
	void *buf[FLEET_CHANNELS];
	for (size_t i = 0; i < h->count; i++) {
		drone_t *d = &h->drones[i];
		int r;
		if (h->dio != NULL) {
			if ((r = step_with_cmd(h, i, now)) != 0) {
				return r;
			}
		} else {
			fleet_plan_apply(h->plan, d, h->first + i, h->total, now);
			drone_step(d, &h->params);
		}
		if ((r = hako_channel_batch_loan(h->batch, i * FLEET_CHANNELS, FLEET_CHANNELS,
		                                 buf)) != 0) {
			return r;
		}
		fleet_drone_pdus(d, now, buf);
		/* lens NULL: each channel's size, which is its PDU's (fleet_host_open) */
		if ((r = hako_channel_batch_commit(h->batch, i * FLEET_CHANNELS, FLEET_CHANNELS,
		                                   NULL)) != 0) {
			/* what is still loaned is dropped: the next step loans again */
			hako_channel_batch_cancel(h->batch, i * FLEET_CHANNELS, FLEET_CHANNELS);
			return r;
		}
	}
	return 0;
}
