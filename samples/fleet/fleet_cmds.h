/* Per-drone commands, beside the fleet-wide command of fleet-controller: Hakoniwa's drone
 * command PDUs, in each drone's robot "Drone-<k>" as hakoniwa-drone-core lays them out:
 *
 *     6  drone_cmd_takeoff  hako_msgs/HakoDroneCmdTakeoff  (height)
 *     7  drone_cmd_move     hako_msgs/HakoDroneCmdMove     (x, y, z in the pos frame)
 *     8  drone_cmd_land     hako_msgs/HakoDroneCmdLand
 *
 * As with Hakoniwa's drone: a client writes the PDU with header.request = true (result false,
 * result_code 0); when the drone has done it (taken off, arrived, landed) its host writes the
 * PDU back with request = false, result = true, result_code 0, or -1 if it was refused (a move
 * on the ground) or cancelled (a fleet-wide command or another per-drone command came first).
 * speed and yaw_deg are not used.
 *
 * Determinism: the drone's owner reads a channel only when its sequence changed, and gives the
 * command its effective model time T = the first multiple of FLEET_DCMD_QUANTUM after
 * now + Dmax (now: the owner's world time when it read it; the drone's model is not past now
 * then). Only the owner stamps, and the stamp, the command and the channel sequences it has
 * read travel with the drone (fleet_dcmd_pack: in its RD context), so whichever host runs the
 * drone applies the command at T. A writer that is an asset writing at T - Q/2 (Q the quantum)
 * with its step + 2 Dmax < Q/2 is read by the owner, whichever host that is, within the same
 * quantum: the same T in any split of the fleet. A command applies at T after the fleet-wide
 * command of the same time, and stays the drone's until the next fleet-wide command. */
#ifndef FLEET_CMDS_H
#define FLEET_CMDS_H

#include <stddef.h>
#include <stdint.h>

#include "drone.h"
#include "hako/domain.h"

#define FLEET_CH_CMD_TAKEOFF 6
#define FLEET_CH_CMD_MOVE    7
#define FLEET_CH_CMD_LAND    8
#define FLEET_DCMD_CHANNELS  3
#define FLEET_DCMD_QUANTUM   100000 /* us of world time */
#define FLEET_DCMD_CTX_SIZE  72     /* bytes of fleet_dcmd_pack */

enum { FLEET_DCMD_TAKEOFF = 0, FLEET_DCMD_MOVE = 1, FLEET_DCMD_LAND = 2 };
enum {
	FLEET_DCMD_NONE = 0,
	FLEET_DCMD_PENDING = 1, /* waits for its time */
	FLEET_DCMD_ACTIVE = 2,  /* applied, not done yet */
	FLEET_DCMD_REPLY = 3,   /* done, refused or cancelled: the answer is to be written */
};

/* One drone's per-drone command state: what travels with the drone. */
typedef struct fleet_dcmd {
	uint64_t seq[FLEET_DCMD_CHANNELS]; /* the channel writes already taken */
	uint32_t kind;                     /* FLEET_DCMD_TAKEOFF.. */
	uint32_t state;                    /* FLEET_DCMD_NONE.. */
	int64_t at_usec;                   /* the model time it takes effect at */
	double arg[3];                     /* move: x, y, z; takeoff: height */
	int32_t result_code;               /* REPLY: 0 done, -1 refused or cancelled */
	uint32_t pad;
} fleet_dcmd_t;

/* One drone's three channels. */
typedef struct fleet_dcmd_io {
	hako_channel_t *ch[FLEET_DCMD_CHANNELS];
} fleet_dcmd_io_t;

/* The channels of drone k (0-based) of the fleet, created in dom. 0 or a channel error. */
int fleet_dcmd_open(hako_domain_t *dom, size_t k, fleet_dcmd_io_t *io);
/* Channels and arena bytes n drones' commands need. */
size_t fleet_dcmd_channels(size_t n);
size_t fleet_dcmd_bytes(size_t n);

/* The owner's read at world time now (Dmax of the domain): a new request is stamped and
 * becomes the drone's pending command (one still pending or active on another channel is
 * answered as cancelled). 1 if a request was taken, else 0. */
int fleet_dcmd_poll(const fleet_dcmd_io_t *io, fleet_dcmd_t *c, int64_t now, int64_t dmax);
/* Model step at time mt, after the fleet-wide command of mt (fleet_changed: it changed the
 * drone's mode or target) and before drone_step: apply the pending command at its time, cancel
 * an active one a fleet-wide command replaced. */
void fleet_dcmd_apply(fleet_dcmd_t *c, drone_t *d, int64_t mt, int fleet_changed);
/* After drone_step: an active command done becomes an answer to write. */
void fleet_dcmd_check(fleet_dcmd_t *c, const drone_t *d);
/* Write the answer, if there is one. 1 if written, 0 if none, or a channel error. */
int fleet_dcmd_reply(const fleet_dcmd_io_t *io, fleet_dcmd_t *c);

/* FLEET_DCMD_CTX_SIZE bytes, little-endian; unpack: 0 or HAKO_EPROTO. */
size_t fleet_dcmd_pack(const fleet_dcmd_t *c, void *buf, size_t cap);
int fleet_dcmd_unpack(fleet_dcmd_t *c, const void *buf, size_t len);

/* A drone's fleet-wide command changed it: mode or target differ from before. */
int fleet_dcmd_changed(const drone_t *before, const drone_t *after);

#endif
