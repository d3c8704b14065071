/* Between the fleet's hosts (RD mode, fleet_zones.h) and its monitor (fleet-monitor): two raw
 * channels of the fleet's domain, outside RD (the monitor never owns a drone).
 *
 *   robot "FleetHost-<node>", channel 0: the host's load, written every 100 ms of world time;
 *   robot "FleetMonitor", channel 0: the monitor's last order, which one host carries out.
 *
 * An order has a number; a host carries out an order once (the load record says which order it
 * did last), and the monitor gives the next order only after that. */
#ifndef FLEET_SHARE_H
#define FLEET_SHARE_H

#include <stdint.h>

#define FLEET_LOAD_ROBOT  "FleetHost-"
#define FLEET_ORDER_ROBOT "FleetMonitor"
#define FLEET_SHARE_MAGIC 0x464c5431u /* "FLT1" */
#define FLEET_LOAD_EVERY  100000      /* us of world time between two load records */
#define FLEET_CKPT_EVERY  100000      /* us of world time between two checkpoints */
#define FLEET_MAX_HOSTS   16          /* hosts of a fleet's RD config (balance; zones: 2) */

typedef struct fleet_load {
	uint32_t magic;
	uint32_t node;
	uint32_t owned;       /* drones this host owns */
	uint32_t order_done;  /* the number of the last order it carried out (0: none) */
	int64_t world;        /* the world time of the record (us) */
	uint64_t busy_p50_ns; /* the time it spends on its drones a step: p50, p99 of the steps */
	uint64_t busy_p99_ns; /* since the last record */
	uint64_t cpu_ns;      /* its process's CPU time so far */
	uint64_t releases; /* drones it handed over, took over (hand-off), took from a lost host */
	uint64_t activations;
	uint64_t takeovers;
} fleet_load_t;

enum { FLEET_ORDER_MOVE = 1, FLEET_ORDER_TAKE_OVER = 2 };

typedef struct fleet_order {
	uint32_t magic;
	uint32_t number; /* 1, 2, ... */
	uint32_t kind;   /* FLEET_ORDER_* */
	uint32_t from;   /* MOVE: the host that hands drones over; TAKE_OVER: the lost host */
	uint32_t to;     /* the host that gets them */
	uint32_t count;  /* MOVE: how many */
} fleet_order_t;

/* The fleet controller's commands (fleet-controller), robot "FleetController", channel 0: one
 * command for the whole fleet at a time, each drone taking its own target from the formation
 * and its index. A command says the world time it takes effect at, always a multiple of the
 * controller's step P ahead of when it was written (P > Dmax + 1 ms): every host has read it
 * before any drone's model reaches that time, whichever host runs the drone and however the
 * processes interleave, so the flight is the same bits in any split of the fleet. */
#define FLEET_CONTROLLER_ROBOT "FleetController"

enum { FLEET_CMD_TAKEOFF = 1, FLEET_CMD_GOTO = 2, FLEET_CMD_LAND = 3 };

typedef struct fleet_command {
	uint32_t magic;
	uint32_t number;    /* 1, 2, ... */
	uint32_t kind;      /* FLEET_CMD_* */
	uint32_t formation; /* GOTO: fleet_formation_t */
	int64_t at_usec;    /* the model time the command takes effect at */
	double altitude;    /* TAKEOFF: m */
} fleet_command_t;

#endif
