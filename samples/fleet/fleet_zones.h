/* Zones: the fleet's airspace split at x = 0 between two hosts of one domain, each drone an
 * execution unit of RD-Light (hako/rd.h): the host of a drone's zone owns it; a drone that
 * crosses the boundary (with the margin v_max * Dmax, hysteresis and cooldown of the RD
 * config's boundary trigger) is released by its owner with its exact state (its context) and
 * activated by the other host, which steps it from there. One writer per drone at any time,
 * every model step once (hako-rd check on the hosts' traces), the same bits as a fleet that
 * never moved.
 *
 * fleet_zones_write_config writes the files both hosts load: the drones' pdutypes (the four
 * PDUs of fleet_host.h plus rd_status 30 and rd_context 31), a pdudef of robots Drone-1..N and
 * the RD config (nodes 1 and 2; drone k starts with the host of its start position's zone).
 *
 * The same hosts do load balancing when the RD config's trigger is "manual": fleet-monitor
 * (the ExMonitor) orders a host to hand a number of its drones to another (fleet_share.h).
 * Every owner checkpoints its drones' contexts every 100 ms of world time; when the monitor
 * finds a host lost, it orders the other to take its drones over from those contexts
 * (hako_rd_take_over): the steps after the checkpoint are run again, to the same bits. */
#ifndef FLEET_ZONES_H
#define FLEET_ZONES_H

#include <stddef.h>
#include <stdint.h>

#include "drone.h"
#include "fleet_host.h"
#include "fleet_share.h"
#include "hako/domain.h"

typedef struct fleet_zones fleet_zones_t;

/* Write dir/drone_pdutypes.json, dir/fleet_pdudef.json and dir/fleet_rd.json for `total`
 * drones in zones (a boundary trigger at x = 0); rd_path gets the RD config's path. full:
 * "west,east", the node ids of two client nodes of a federation: RD-Full zones across them
 * (NULL: RD-Light, one domain). 0, or -1 with errno. */
int fleet_zones_write_config(const char *dir, size_t total, const char *full, char *rd_path,
                             size_t len);
/* The same files for zones on a grid of cols x rows cells (2..FLEET_MAX_HOSTS in all, a grid
 * trigger): the airspace of the mission's formations split evenly along x and y, cell i along
 * x in row j along y owned by node 1 + i + cols * j; drone k starts with the owner of its start
 * position's cell. full: "n1,n2,...", cols * rows node ids of client nodes of a federation
 * (RD-Full), in that order; NULL: RD-Light. 0, or -1 with errno (EINVAL: a bad grid or list). */
int fleet_zones_write_grid(const char *dir, size_t total, size_t cols, size_t rows,
                           const char *full, char *rd_path, size_t len);
/* The same files for load balancing among `hosts` hosts (2..FLEET_MAX_HOSTS, nodes 1..hosts
 * of the RD config, every drone a candidate of each): host k starts with counts[k - 1] drones,
 * in drone order; the counts add up to total. full: "n1,n2,...", `hosts` node ids of client
 * nodes of a federation (RD-Full: host k on node nk; the server commits every move); NULL:
 * RD-Light. 0, or -1 with errno (EINVAL: bad counts or list). */
int fleet_zones_write_balance(const char *dir, size_t total, const size_t *counts, size_t hosts,
                              const char *full, char *rd_path, size_t len);
/* Remove the files fleet_zones_write_config / _balance wrote in dir, and dir if it is then
 * empty. 0, or -1 with errno (a file that is not there is not an error). */
int fleet_zones_remove_config(const char *dir);
/* What an RD-mode fleet of n drones needs of its domain besides the drones' PDU channels
 * (fleet_host_channels / fleet_host_bytes): each drone's RD status and context, the monitor's
 * order channel and every possible host's load record. */
size_t fleet_zones_extra_channels(size_t n);
size_t fleet_zones_extra_bytes(size_t n);
/* Per-drone commands (fleet_cmds.h): the drone_cmd channels of every drone, read for the drones
 * this host owns. 0, or HAKO_ECONFIG (the RD config's contexts have no room for the command
 * state) or a channel error, with why. */
int fleet_zones_enable_cmds(fleet_zones_t *z, char *why, size_t why_len);
/* Per-drone commands taken and answered by this host. */
void fleet_zones_cmd_counts(const fleet_zones_t *z, uint64_t *taken, uint64_t *answered);
/* 1 if the RD config's trigger is a grid (zones are its cells; any number of hosts). */
int fleet_zones_grid(const fleet_zones_t *z);
/* 1 if the RD config is RD-Full (zones across the nodes of a federation). */
int fleet_zones_full(const fleet_zones_t *z);
/* RD-Full: the node's conductor file, whose server this host asks to move its drones across
 * the boundary (the server commits each move; the owner releases at the commit point). 0, or
 * a hako error with why. */
int fleet_zones_set_conductor(fleet_zones_t *z, const char *path, char *why, size_t why_len);

/* Host `node` (1 or 2) of the fleet of rd_path in dom; trace: its RD trace (NULL: none; model
 * steps and ownership only, no record per PDU write). Errors: hako errors; why says more. */
int fleet_zones_open(hako_domain_t *dom, const char *rd_path, uint8_t node, const char *trace,
                     fleet_zones_t **out, char *why, size_t why_len);
void fleet_zones_close(fleet_zones_t *z);

/* The step ending at world time now: every drone's hand-off events, then the owned drones
 * stepped up to now (a drone activated here runs the steps it has not run yet), their PDUs
 * written, and a release for each owned drone across the boundary. 0, or a hako error. */
int fleet_zones_step(fleet_zones_t *z, int64_t now);

size_t fleet_zones_total(const fleet_zones_t *z);
int fleet_zones_owns(fleet_zones_t *z, size_t i);
const drone_t *fleet_zones_drone(const fleet_zones_t *z, size_t i);
uint64_t fleet_zones_releases(const fleet_zones_t *z);
uint64_t fleet_zones_activations(const fleet_zones_t *z);
uint64_t fleet_zones_takeovers(const fleet_zones_t *z);
/* Use plan p (fleet_host.h; NULL: the built-in schedule) for the drones this host steps. */
void fleet_zones_set_plan(fleet_zones_t *z, const fleet_plan_t *p);
/* 1: load balancing (the monitor moves drones), 0: zones. */
int fleet_zones_balancing(const fleet_zones_t *z);
size_t fleet_zones_owned(fleet_zones_t *z);

/* Write this host's load record (fleet_share.h) for the monitor: the drones it owns, the time
 * it spent on them a step (p50, p99 in ns), its CPU time. 0, or a channel error. */
int fleet_zones_publish(fleet_zones_t *z, int64_t now, uint64_t busy_p50_ns, uint64_t busy_p99_ns);

#endif
