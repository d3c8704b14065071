/* The forklift of the RD-Light demo: a deterministic 1 ms model without a physics engine.
 *
 * A planar vehicle (x, y, yaw) driven along x with a speed v that follows a drive effort through a
 * first-order lag; a PID computes that effort from the target speed. A heading PID fights a small
 * wheel mismatch (a yaw rate proportional to v), so y and yaw move a little. A lift (height) with
 * a PID and a first-order actuator. A phase machine runs the mission: forward, lift up, back,
 * lift down, repeat, with a deceleration profile toward each target.
 *
 * The model has no input but its own state: the mission is part of it (set once by
 * forklift_model_init), so a run is a pure function of the mission and the number of steps, and a
 * process that restores the packed state continues the run exactly (same binary code, same floats).
 * The whole state is the RD context: forklift_context_pack/unpack serialise it, little-endian,
 * with a magic and a version that unpack checks.
 */
#ifndef FORKLIFT_MODEL_H
#define FORKLIFT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define FORKLIFT_DT_USEC 1000 /* one model step */
#define FORKLIFT_V_MAX   0.7  /* m/s: no commanded speed exceeds it */

typedef enum forklift_phase {
	FORKLIFT_FORWARD = 0,   /* drive to home_x + forward_m */
	FORKLIFT_LIFT_UP = 1,   /* raise the fork to lift_height */
	FORKLIFT_BACKWARD = 2,  /* drive back by backward_m */
	FORKLIFT_LIFT_DOWN = 3, /* lower the fork to 0 */
	FORKLIFT_DONE = 4,      /* all loops done: stand still */
	FORKLIFT_PHASE_COUNT = 5,
} forklift_phase_t;

/* "forward", "lift-up", ... ("?" for another value). */
const char *forklift_phase_name(int phase);

typedef struct forklift_mission {
	double forward_m;   /* distance of the forward leg */
	double backward_m;  /* distance of the way back */
	double speed;       /* cruise speed, m/s (capped at FORKLIFT_V_MAX) */
	double lift_height; /* m */
	uint32_t loops;     /* 0 = repeat forever */
} forklift_mission_t;

/* forward 2 m, back 2 m, 0.7 m/s, lift 0.5 m, forever: the demo's mission. */
void forklift_mission_default(forklift_mission_t *m);
/* 0, or -1 if a value is out of range (negative, not finite, speed 0, ...). */
int forklift_mission_check(const forklift_mission_t *m);

typedef struct forklift_pid {
	double integral;
	double prev_error;
} forklift_pid_t;

typedef struct forklift_state {
	uint64_t step; /* steps run; the model's time is step * FORKLIFT_DT_USEC */
	forklift_mission_t mission;
	int32_t phase;
	uint32_t loop; /* loops completed */
	uint32_t hold; /* consecutive steps the phase's goal has been met */
	double home_x;
	double target_x;    /* goal of the current drive phase */
	double target_v;    /* speed set point, from the deceleration profile */
	double target_yaw;  /* heading set point */
	double target_lift; /* fork set point */
	double x, y, yaw;   /* m, m, rad */
	double v;           /* m/s along the heading */
	double omega;       /* rad/s */
	double drive_cmd;   /* speed PID output, effort in [-1, 1] */
	double drive;       /* effort applied, drive_cmd through the drive lag */
	double lift;        /* fork height, m */
	double lift_v;      /* fork speed, m/s */
	double lift_cmd;    /* lift PID output, m/s */
	forklift_pid_t speed_pid;
	forklift_pid_t yaw_pid;
	forklift_pid_t lift_pid;
} forklift_state_t;

/* A forklift at rest at x = y = 0 with the fork down, about to start the mission. */
void forklift_model_init(forklift_state_t *s, const forklift_mission_t *mission);
/* Advance by one step of FORKLIFT_DT_USEC. */
void forklift_model_step(forklift_state_t *s);

/* ---- The RD context ---- */

#define FORKLIFT_CONTEXT_MAGIC   0x434c4b46u /* "FKLC" little-endian */
#define FORKLIFT_CONTEXT_VERSION 1u
#define FORKLIFT_CONTEXT_SIZE    232u /* bytes of a packed state of this version */

/* Serialise the whole state into buf (cap >= FORKLIFT_CONTEXT_SIZE). Returns the length, or 0
 * if cap is too small. */
size_t forklift_context_pack(const forklift_state_t *s, void *buf, size_t cap);
/* Restore a state packed by forklift_context_pack. 0, or HAKO_EPROTO (not a forklift context,
 * wrong length, a value out of range), HAKO_EVERSION (another version). *s is left untouched on
 * failure. */
int forklift_context_unpack(forklift_state_t *s, const void *buf, size_t len);

/* FNV-1a 64 of the packed state: equal hashes at every step = bit-identical runs. */
uint64_t forklift_state_hash(const forklift_state_t *s);

#endif
