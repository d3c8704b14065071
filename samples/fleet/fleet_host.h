/* A fleet host: one process stepping many drones (drone.h) and writing each drone's PDUs into
 * the domain's channels every step, as Hakoniwa's drone fleet lays them out, so a Hakoniwa
 * viewer or the Python client can read any drone:
 *
 *   robot "Drone-<k>" (k = 1 + the drone's index in the fleet), channels
 *     0  motor     hako_mavlink_msgs/HakoHilActuatorControls  (controls[0..3]: rotor duty 0..1)
 *     1  pos       geometry_msgs/Twist  (linear: position, angular: roll, pitch, yaw; the
 *                  drone's world frame, x north, y west, z up, as Hakoniwa's pos PDU)
 *     5  velocity  geometry_msgs/Twist  (linear: the world velocity in that frame)
 *    18  status    hako_msgs/DroneStatus  (flight_mode: the drone's mode)
 *
 * Sizing: 4 channels per drone and their PDU bytes (fleet_host_bytes) in the arena.
 *
 * The mission is a schedule in world time, the same in every process (a pure function of the
 * drone's index, the fleet size and the time): take off to 4 m at 0 s, fly to the "HAKO"
 * letters at 3 s, to a circle at 18 s, land at 33 s (formation.h). */
#ifndef FLEET_HOST_H
#define FLEET_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "drone.h"
#include "hako/domain.h"

#define FLEET_CH_MOTOR    0
#define FLEET_CH_POS      1
#define FLEET_CH_VELOCITY 5
#define FLEET_CH_STATUS   18
#define FLEET_CHANNELS    4 /* per drone */

typedef struct fleet_host fleet_host_t;

/* Drones [first, first + count) of a fleet of `total`, their channels created in dom. Errors:
 * HAKO_EINVAL, HAKO_ENOMEM, and hako_channel_create's (HAKO_ENOSPC: the domain is too small:
 * fleet_host_channels / fleet_host_bytes say what it needs). */
int fleet_host_open(hako_domain_t *dom, size_t first, size_t count, size_t total,
                    fleet_host_t **out);
void fleet_host_close(fleet_host_t *h);

/* One 1 ms step of every drone ending at world time now (us), then their PDUs written. 0, or
 * the first channel error. */
int fleet_host_step(fleet_host_t *h, int64_t now);

/* Step the drones only, no PDUs (the floor of bench/fleet). */
void fleet_host_step_plain(fleet_host_t *h, int64_t now);

size_t fleet_host_count(const fleet_host_t *h);
const drone_t *fleet_host_drone(const fleet_host_t *h, size_t i);

/* Drone i of a fleet of n as the mission starts it: on the floor at its place in the grid,
 * heading north, IDLE, step 0. */
void fleet_drone_start(drone_t *d, size_t i, size_t n);

/* Fill drone d's four PDUs at model time t into pdu[0..3] (motor, pos, velocity, status, each
 * a buffer of its type's PDU size), as the table above says. */
void fleet_drone_pdus(const drone_t *d, int64_t t, void *const pdu[FLEET_CHANNELS]);

/* What a fleet of n drones needs in a domain: channels, and arena bytes for their PDUs. */
size_t fleet_host_channels(size_t n);
size_t fleet_host_bytes(size_t n);

/* The mission: the command drone i of n gets at world time t (us), applied when the schedule
 * reaches it. */
void fleet_mission_apply(drone_t *d, size_t i, size_t n, int64_t t);

/* The mission from fleet-controller instead (fleet_share.h): the commands it writes, read once
 * a host step, each applied to every drone when the drone's model reaches its time. */
typedef struct fleet_plan fleet_plan_t;
/* Errors: hako_channel_create's, HAKO_ENOMEM. */
int fleet_plan_open(hako_domain_t *dom, fleet_plan_t **out);
void fleet_plan_close(fleet_plan_t *p);
/* Read a new command (the host's world time now: one that takes effect at or before it came
 * too late and is said so once on stderr). */
void fleet_plan_poll(fleet_plan_t *p, int64_t now);
/* What drone i of n does at model time t: the plan's commands, or, with p NULL, the built-in
 * schedule (fleet_mission_apply). */
void fleet_plan_apply(const fleet_plan_t *p, drone_t *d, size_t i, size_t n, int64_t t);
uint32_t fleet_plan_commands(const fleet_plan_t *p);
/* Per-drone commands (fleet_cmds.h) for this host's drones: their drone_cmd channels. 0 or a
 * channel error. */
int fleet_host_enable_cmds(fleet_host_t *h);
/* Per-drone commands taken and answered. */
void fleet_host_cmd_counts(const fleet_host_t *h, uint64_t *taken, uint64_t *answered);
/* Use plan p (NULL: the built-in schedule) for this host's drones. */
void fleet_host_set_plan(fleet_host_t *h, const fleet_plan_t *p);

#endif
