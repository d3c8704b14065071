/* The drone of the fleet sample: a deterministic 1 ms quadrotor model with its own controller.
 *
 * Frames and units (SI: m, s, kg, N, rad). World W: x north, y west, z up (right-handed; the
 * frame of Hakoniwa's `pos` Twist PDU, which its physics fills from NED with y and z negated),
 * origin on the floor. Body B: x forward, y left, z up (FLU). Attitude: unit quaternion
 * q = (w, x, y, z) rotating B into W, R = R(q). Euler angles are ZYX (yaw about z, then pitch,
 * then roll), yaw counter-clockwise from north. Hakoniwa's physics works in NED and writes
 * pos = (x, -y_ned, -z_ned, roll, -pitch_ned, -yaw_ned): that is exactly this model's world
 * pose, so drone_pose() fills the PDU as it is; drone_pose_ned() gives the NED pose.
 *
 * Rotors, quad X, PX4 order (actuator controls[0..3]), a = arm / sqrt(2):
 *   0 front right (+a, -a) CCW    1 rear left  (-a, +a) CCW
 *   2 front left  (+a, +a) CW     3 rear right (-a, -a) CW
 *
 * Plant, one step of dt = 1 ms. Thrust and torques come from the rotor speeds at the start of
 * the step; the body moves by semi-implicit Euler (rates, then attitude, then velocity, then
 * position, each from the value just updated); the rotors follow their commands:
 *   rotor      d_i in [0, 1] (duty), w_i += dt/T_r * (w_max d_i - w_i), so 0 <= w_i <= w_max
 *              (a rotor without command stops below w_max / 1000)
 *   thrust     T = C_T sum w_i^2 along +z_B
 *   torques    tx = a C_T (-w0^2 + w1^2 + w2^2 - w3^2)
 *              ty = a C_T (-w0^2 + w1^2 - w2^2 + w3^2)
 *              tz = C_Q (-w0^2 - w1^2 + w2^2 + w3^2)     (CCW rotors push the body CW)
 *   rotation   J dW/dt = tau - W x J W - k_w W           (J diagonal, W body rates)
 *              dq/dt = q (x) (0, W) / 2, q renormalised (one Newton step, no sqrt)
 *   motion     m dv/dt = T R e_z - k_d v - m g e_z
 *   floor      z >= 0; at z = 0 moving down or resting, the ground stops the drone: v = 0,
 *              W = 0, and the attitude keeps its yaw only (it stands level).
 *
 * Controller (in the same step, before the plant), cascaded, all in W:
 *   v_sp  = K_p (target - p), horizontal norm <= v_max, vertical in [-vz_down, vz_up]
 *   a_sp  = K_v (v_sp - v) + K_i I + k_d v / m          (I: position-error integral, only
 *           in HOLD; the last term cancels the drag)
 *           a_z limited to [-0.6 g, 0.8 T_max / m - g], |a_xy| <= (g + a_z) tan(tilt_max)
 *   F     = m (a_sp + g e_z): desired body z b3 = F / |F|, desired heading b1 from the yaw
 *           set point (geometric controller, Lee et al. 2010), collective T = F . R e_z
 *   tau   = J (-K_R e_R - K_W W) + W x J W,  e_R = vee(R_d^T R - R^T R_d) / 2
 *   mixer = the inverse of the torque equations above, each rotor thrust clamped to
 *           [0, C_T w_max^2], then d_i = sqrt(T_i / C_T) / w_max.
 * Modes: IDLE (on the ground, rotors off) -> TAKEOFF (to the altitude above the start) -> HOLD;
 * GOTO (a 3-D point) -> HOLD when arrived; LAND (hold x, y, descend at
 * clamp(K_p,z z, land_speed, vz_down)) -> LANDED (rotors off) after 100 ms on the floor.
 *
 * Simplified against Hakoniwa's drone physics (hakoniwa-drone-core): no battery, no sensors or
 * their noise, no wind/disturbance, impulse or collision input; no rotor inertia term J_r dw/dt
 * in the anti-torque; a plain floor instead of ground contact physics; one geometric attitude
 * controller instead of the 12 Euler-angle PIDs; isotropic linear drag. Same 1 ms step, same
 * first-order rotor lag with a duty in [0, 1] (K_r = w_max) and C_T w^2 / C_Q w^2 rotors.
 *
 * Determinism: drone_step() uses only + - * / and sqrt on doubles (no libm call, no
 * randomness, no hidden state), and the library is built with -ffp-contract=off; the trig of
 * drone_init(), drone_set_heading() and drone_params_update() is computed by the model itself
 * from the same operations. A run is thus a pure function of the parameters, the commands and
 * the step at which each was given, bit for bit with the same binary, and with any IEEE-754
 * double target in principle (gcc and clang, -O0 to -O3, with or without -march=native give
 * the same bits here; letting the compiler fuse a*b+c does not). Only the getters of angles
 * call libm (atan2, asin, acos), and their results never feed back into the state.
 */
#ifndef FLEET_DRONE_H
#define FLEET_DRONE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DRONE_DT_USEC 1000  /* one step */
#define DRONE_DT      0.001 /* s */
#define DRONE_ROTORS  4

typedef enum drone_mode {
	DRONE_IDLE = 0,    /* on the ground, rotors off, never flown */
	DRONE_TAKEOFF = 1, /* climbing to the take-off altitude */
	DRONE_GOTO = 2,    /* flying to a point */
	DRONE_HOLD = 3,    /* holding the target */
	DRONE_LAND = 4,    /* descending */
	DRONE_LANDED = 5,  /* on the ground again, rotors off */
	DRONE_MODE_COUNT = 6,
} drone_mode_t;

/* "idle", "takeoff", "goto", "hold", "land", "landed" ("?" for another value). */
const char *drone_mode_name(int mode);

/* What drone_params_update() derives from the fields; never set by hand. */
typedef struct drone_derived {
	double inv_mass;
	double inv_inertia[3];
	double drag_per_mass; /* k_d / m */
	double arm_x;         /* arm / sqrt(2), the roll and pitch lever */
	double inv_arm_x;
	double lag;              /* dt / T_r */
	double thrust_rotor_max; /* C_T w_max^2, N */
	double duty_per_thrust;  /* 1 / (C_T w_max^2) */
	double yaw_per_torque;   /* C_T / C_Q */
	double tan_tilt;         /* tan(tilt_max) */
	double az_min, az_max;   /* m/s^2, vertical acceleration set point limits */
	double arrive_tol2;      /* arrive_tol^2 */
	double arrive_speed2;    /* arrive_speed^2 */
	double rotor_stopped;    /* rad/s: below this a rotor without command is stopped */
} drone_derived_t;

typedef struct drone_params {
	/* airframe */
	double mass;       /* kg */
	double gravity;    /* m/s^2 */
	double inertia[3]; /* kg m^2, about body x, y, z */
	double arm;        /* m, centre to rotor axis */
	double drag;       /* k_d, N/(m/s) */
	double ang_drag;   /* k_w, N m/(rad/s) */
	/* rotors */
	double c_t;       /* N/(rad/s)^2 */
	double c_q;       /* N m/(rad/s)^2 */
	double omega_max; /* rad/s */
	double t_rotor;   /* s, lag time constant (>= dt) */
	/* position and velocity loops */
	double kp_xy, kp_z; /* 1/s */
	double kv_xy, kv_z; /* 1/s */
	double ki_xy, ki_z; /* 1/s^3, in HOLD only */
	double i_max;       /* m s: integral clamp */
	double v_max;       /* m/s, horizontal */
	double vz_up;       /* m/s */
	double vz_down;     /* m/s */
	double land_speed;  /* m/s, final descent */
	double tilt_max;    /* rad */
	/* attitude loop */
	double k_att[3];  /* K_R, 1/s^2, roll pitch yaw */
	double k_rate[3]; /* K_W, 1/s */
	/* "arrived" */
	double arrive_tol;   /* m */
	double arrive_speed; /* m/s */
	drone_derived_t k;
} drone_params_t;

/* A 1 kg, 0.2 m-arm quadrotor lifting 1.83 g (hover at 55 % of full thrust), v_max 2 m/s,
 * tilt_max 25 deg; derived values computed. */
void drone_params_default(drone_params_t *p);
/* Check the fields and compute p->k: call after changing a field. 0, or HAKO_EINVAL (a value
 * not finite or out of range: mass <= 0, t_rotor < dt, tilt_max not in (0, 60 deg], no hover
 * possible below 0.9 of full thrust, ...); p->k is untouched then. */
int drone_params_update(drone_params_t *p);

/* The whole state of one drone: 248 bytes, no padding, no pointer. Read it through the
 * functions below; write it only through them. */
typedef struct drone {
	double pos[3];         /* m, W */
	double vel[3];         /* m/s, W */
	double q[4];           /* w, x, y, z: B -> W */
	double rate[3];        /* rad/s, B */
	double rotor[4];       /* rad/s */
	double duty[4];        /* the controller's last commands, 0..1 */
	double target[3];      /* m, W */
	double heading[2];     /* cos, sin of the yaw set point */
	double integ[3];       /* m s, position-error integral */
	uint64_t step;         /* steps run: the drone's time is step * DRONE_DT_USEC */
	int32_t mode;          /* drone_mode_t */
	uint32_t ground_steps; /* LAND: consecutive steps on the floor */
} drone_t;

/* A drone standing on the floor at (x, y) with heading yaw, rotors off, IDLE, step 0. */
void drone_init(drone_t *d, double x, double y, double yaw);

/* Climb to altitude (m above the floor) over the current x, y, then HOLD. From IDLE or LANDED
 * only: HAKO_ESTATE otherwise; HAKO_EINVAL if altitude is not finite or <= 0. */
int drone_takeoff(drone_t *d, double altitude);
/* Fly to (x, y, z) at up to v_max, then HOLD there. In the air only (TAKEOFF, GOTO, HOLD,
 * LAND): HAKO_ESTATE on the ground; HAKO_EINVAL if a value is not finite or z < 0. */
int drone_goto(drone_t *d, double x, double y, double z);
/* Descend over the current x, y and stop the rotors on the floor (LANDED). Nothing to do on
 * the ground (0). */
int drone_land(drone_t *d);
/* Turn to yaw (rad, counter-clockwise from north) and keep it. Any mode; HAKO_EINVAL if yaw is
 * not finite or |yaw| > 1e6. */
int drone_set_heading(drone_t *d, double yaw);

/* One step of DRONE_DT: the controller, then the plant. */
void drone_step(drone_t *d, const drone_params_t *p);

drone_mode_t drone_mode(const drone_t *d);
/* Within arrive_tol of the target and slower than arrive_speed (false on the ground). */
bool drone_arrived(const drone_t *d, const drone_params_t *p);
/* roll, pitch, yaw (rad; ZYX, W frame). */
void drone_euler(const drone_t *d, double rpy[3]);
/* Angle between body z and world z (rad). */
double drone_tilt(const drone_t *d);
/* Velocity in W (m/s). */
void drone_velocity_world(const drone_t *d, double v[3]);
/* Velocity in B (m/s): R^T v. */
void drone_velocity_body(const drone_t *d, double v[3]);
/* The rotor commands d_i in [0, 1], PX4 order: HakoHilActuatorControls.controls[0..3]. */
void drone_motor_controls(const drone_t *d, double controls[4]);
/* x, y, z, roll, pitch, yaw in W: Hakoniwa's `pos` Twist (linear, angular) as it is. */
void drone_pose(const drone_t *d, double pose[6]);
/* The same pose in NED: x, -y, -z, roll, -pitch, -yaw. */
void drone_pose_ned(const drone_t *d, double pose[6]);

/* ---- The context of runtime delegation ---- */

#define DRONE_CONTEXT_MAGIC   0x434e5244u /* "DRNC" little-endian */
#define DRONE_CONTEXT_VERSION 1u
#define DRONE_CONTEXT_SIZE    256u /* bytes of a packed state of this version */

/* Serialise the whole state, little-endian, after an 8-byte header (magic, version, size).
 * Returns DRONE_CONTEXT_SIZE, or 0 if cap is smaller. The parameters are not in it: both sides
 * of a hand-off must step with the same drone_params_t. */
size_t drone_context_pack(const drone_t *d, void *buf, size_t cap);
/* Restore a state packed by drone_context_pack, byte for byte. 0, or HAKO_EPROTO (not a drone
 * context, wrong length, a value out of range), HAKO_EVERSION (another version); *d is left
 * untouched on failure. */
int drone_context_unpack(drone_t *d, const void *buf, size_t len);

#endif
