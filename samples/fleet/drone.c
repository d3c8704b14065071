/* The fleet drone: parameters, commands, the 1 ms step and the context (see drone.h). */
#include "drone.h"

#include <math.h>
#include <string.h>

#include "hako/error.h"

/* memcmp of two states compares their values: no padding byte may hide a difference. */
_Static_assert(sizeof(drone_t) == 29 * sizeof(double) + 16, "drone_t has padding");

#define DEG 0.017453292519943295 /* rad */

/* Steps on the floor before LAND becomes LANDED. */
#define LAND_SETTLE_STEPS 100

/* sin and cos from + - * / only: the values a command stores are then the same on every
 * IEEE-754 target, where libm's may differ in the last bit. |a| <= 1e6. */
static void det_sincos(double a, double *s, double *c)
{
	const double pi_2_hi = 1.5707963267948966; /* pi/2 = hi + lo */
	const double pi_2_lo = 6.123233995736766e-17;
	long long n = (long long)(a / pi_2_hi + (a >= 0 ? 0.5 : -0.5));
	double r = (a - (double)n * pi_2_hi) - (double)n * pi_2_lo; /* |r| <= pi/4 (+ulps) */
	double r2 = r * r;
	/* Taylor to r^15 and r^16 (the first term left out is below 5e-17 on |r| <= pi/4),
	 * Horner from the innermost factor: sin r = r (1 - r^2/(2 3) (1 - r^2/(4 5) (...))). */
	double sr = 1, cr = 1;
	for (int k = 8; k >= 1; k--) {
		if (k < 8) {
			sr = 1 - r2 / ((2 * k) * (2 * k + 1)) * sr;
		}
		cr = 1 - r2 / ((2 * k - 1) * (2 * k)) * cr;
	}
	sr *= r;
	switch (n & 3) {
	case 0: *s = sr, *c = cr; break;
	case 1: *s = cr, *c = -sr; break;
	case 2: *s = -sr, *c = -cr; break;
	default: *s = -cr, *c = sr; break;
	}
}

const char *drone_mode_name(int mode)
{
	static const char *const names[DRONE_MODE_COUNT] = {
	    "idle", "takeoff", "goto", "hold", "land", "landed",
	};
	return mode >= 0 && mode < DRONE_MODE_COUNT ? names[mode] : "?";
}

void drone_params_default(drone_params_t *p)
{
	memset(p, 0, sizeof(*p));
	p->mass = 1.0;
	p->gravity = 9.81;
	p->inertia[0] = 0.01;
	p->inertia[1] = 0.01;
	p->inertia[2] = 0.02;
	p->arm = 0.2;
	p->drag = 0.2;
	p->ang_drag = 0.002;
	p->c_t = 4.5e-6; /* 4 x 4.5 N at w_max: 18 N for 9.81 N of weight */
	p->c_q = 1.0e-7;
	p->omega_max = 1000.0;
	p->t_rotor = 0.025;
	p->kp_xy = 1.0;
	p->kp_z = 1.0;
	p->kv_xy = 3.0;
	p->kv_z = 4.0;
	p->ki_xy = 1.0;
	p->ki_z = 1.0;
	p->i_max = 0.5;
	p->v_max = 2.0;
	p->vz_up = 1.0;
	p->vz_down = 1.0;
	p->land_speed = 0.4;
	p->tilt_max = 25 * DEG;
	p->k_att[0] = 60.0;
	p->k_att[1] = 60.0;
	p->k_att[2] = 10.0;
	p->k_rate[0] = 12.0;
	p->k_rate[1] = 12.0;
	p->k_rate[2] = 4.0;
	p->arrive_tol = 0.05;
	p->arrive_speed = 0.05;
	(void)drone_params_update(p);
}

static bool positive(double v)
{
	return isfinite(v) && v > 0;
}

static bool non_negative(double v)
{
	return isfinite(v) && v >= 0;
}

int drone_params_update(drone_params_t *p)
{
	const double must_be_positive[] = {
	    p->mass,      p->gravity,    p->inertia[0], p->inertia[1], p->inertia[2],
	    p->arm,       p->c_t,        p->c_q,        p->omega_max,  p->kp_xy,
	    p->kp_z,      p->kv_xy,      p->kv_z,       p->v_max,      p->vz_up,
	    p->vz_down,   p->land_speed, p->k_att[0],   p->k_att[1],   p->k_att[2],
	    p->k_rate[0], p->k_rate[1],  p->k_rate[2],  p->arrive_tol, p->arrive_speed,
	};
	const double must_be_non_negative[] = {
	    p->drag, p->ang_drag, p->ki_xy, p->ki_z, p->i_max,
	};
	for (size_t i = 0; i < sizeof(must_be_positive) / sizeof(double); i++) {
		if (!positive(must_be_positive[i])) {
			return HAKO_EINVAL;
		}
	}
	for (size_t i = 0; i < sizeof(must_be_non_negative) / sizeof(double); i++) {
		if (!non_negative(must_be_non_negative[i])) {
			return HAKO_EINVAL;
		}
	}
	if (!isfinite(p->t_rotor) || p->t_rotor < DRONE_DT || !positive(p->tilt_max) ||
	    p->tilt_max > 60 * DEG) {
		return HAKO_EINVAL;
	}
	drone_derived_t k;
	k.inv_mass = 1 / p->mass;
	for (int i = 0; i < 3; i++) {
		k.inv_inertia[i] = 1 / p->inertia[i];
	}
	k.drag_per_mass = p->drag / p->mass;
	k.arm_x = p->arm * 0.7071067811865476;
	k.inv_arm_x = 1 / k.arm_x;
	k.lag = DRONE_DT / p->t_rotor;
	k.thrust_rotor_max = p->c_t * p->omega_max * p->omega_max;
	k.duty_per_thrust = 1 / k.thrust_rotor_max;
	k.yaw_per_torque = p->c_t / p->c_q;
	double s, c;
	det_sincos(p->tilt_max, &s, &c);
	k.tan_tilt = s / c;
	k.az_min = -0.6 * p->gravity;
	k.az_max = 0.8 * 4 * k.thrust_rotor_max * k.inv_mass - p->gravity;
	k.arrive_tol2 = p->arrive_tol * p->arrive_tol;
	k.arrive_speed2 = p->arrive_speed * p->arrive_speed;
	k.rotor_stopped = 1e-3 * p->omega_max;
	/* Hovering at up to 90 % of full thrust leaves the attitude loop some authority. */
	if (p->mass * p->gravity > 0.9 * 4 * k.thrust_rotor_max || !(k.az_max > 0)) {
		return HAKO_EINVAL;
	}
	p->k = k;
	return 0;
}

/* ---- commands ---- */

void drone_init(drone_t *d, double x, double y, double yaw)
{
	memset(d, 0, sizeof(*d));
	d->pos[0] = x;
	d->pos[1] = y;
	double s, c;
	det_sincos(0.5 * yaw, &s, &c);
	d->q[0] = c;
	d->q[3] = s;
	det_sincos(yaw, &d->heading[1], &d->heading[0]);
	d->target[0] = x;
	d->target[1] = y;
	d->mode = DRONE_IDLE;
}

static bool on_ground_mode(const drone_t *d)
{
	return d->mode == DRONE_IDLE || d->mode == DRONE_LANDED;
}

int drone_takeoff(drone_t *d, double altitude)
{
	if (!positive(altitude)) {
		return HAKO_EINVAL;
	}
	if (!on_ground_mode(d)) {
		return HAKO_ESTATE;
	}
	d->target[0] = d->pos[0];
	d->target[1] = d->pos[1];
	d->target[2] = altitude;
	memset(d->integ, 0, sizeof(d->integ));
	d->ground_steps = 0;
	d->mode = DRONE_TAKEOFF;
	return 0;
}

int drone_goto(drone_t *d, double x, double y, double z)
{
	if (!isfinite(x) || !isfinite(y) || !non_negative(z)) {
		return HAKO_EINVAL;
	}
	if (on_ground_mode(d)) {
		return HAKO_ESTATE;
	}
	d->target[0] = x;
	d->target[1] = y;
	d->target[2] = z;
	d->mode = DRONE_GOTO;
	return 0;
}

int drone_land(drone_t *d)
{
	if (on_ground_mode(d) || d->mode == DRONE_LAND) {
		return 0;
	}
	d->target[0] = d->pos[0];
	d->target[1] = d->pos[1];
	d->target[2] = 0;
	d->ground_steps = 0;
	d->mode = DRONE_LAND;
	return 0;
}

int drone_set_heading(drone_t *d, double yaw)
{
	if (!isfinite(yaw) || fabs(yaw) > 1e6) {
		return HAKO_EINVAL;
	}
	det_sincos(yaw, &d->heading[1], &d->heading[0]);
	return 0;
}

/* ---- the step ---- */

static double clamp(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* R(q), row-major: column j is body axis j in W. */
static void rotation(const double q[4], double r[9])
{
	double w = q[0], x = q[1], y = q[2], z = q[3];
	r[0] = 1 - 2 * (y * y + z * z);
	r[1] = 2 * (x * y - w * z);
	r[2] = 2 * (x * z + w * y);
	r[3] = 2 * (x * y + w * z);
	r[4] = 1 - 2 * (x * x + z * z);
	r[5] = 2 * (y * z - w * x);
	r[6] = 2 * (x * z - w * y);
	r[7] = 2 * (y * z + w * x);
	r[8] = 1 - 2 * (x * x + y * y);
}

static bool arrived(const drone_t *d, const drone_params_t *p)
{
	double ex = d->target[0] - d->pos[0];
	double ey = d->target[1] - d->pos[1];
	double ez = d->target[2] - d->pos[2];
	double v2 = d->vel[0] * d->vel[0] + d->vel[1] * d->vel[1] + d->vel[2] * d->vel[2];
	return ex * ex + ey * ey + ez * ez < p->k.arrive_tol2 && v2 < p->k.arrive_speed2;
}

/* The acceleration set point of the position and velocity loops (W, m/s^2). */
static void position_loop(drone_t *d, const drone_params_t *p, double acc[3])
{
	const drone_derived_t *k = &p->k;
	double e[3], vsp[3];
	for (int i = 0; i < 3; i++) {
		e[i] = d->target[i] - d->pos[i];
	}
	vsp[0] = p->kp_xy * e[0];
	vsp[1] = p->kp_xy * e[1];
	double h2 = vsp[0] * vsp[0] + vsp[1] * vsp[1];
	if (h2 > p->v_max * p->v_max) {
		double f = p->v_max / sqrt(h2);
		vsp[0] *= f;
		vsp[1] *= f;
	}
	if (d->mode == DRONE_LAND) {
		vsp[2] = -clamp(p->kp_z * d->pos[2], p->land_speed, p->vz_down);
	} else {
		vsp[2] = clamp(p->kp_z * e[2], -p->vz_down, p->vz_up);
	}
	/* The integral absorbs what the controller's model misses (a push, a wrong mass). In
	 * HOLD only: charged on the way to a target it would overshoot it. */
	for (int i = 0; d->mode == DRONE_HOLD && i < 3; i++) {
		d->integ[i] = clamp(d->integ[i] + e[i] * DRONE_DT, -p->i_max, p->i_max);
	}
	acc[0] =
	    p->kv_xy * (vsp[0] - d->vel[0]) + p->ki_xy * d->integ[0] + k->drag_per_mass * d->vel[0];
	acc[1] =
	    p->kv_xy * (vsp[1] - d->vel[1]) + p->ki_xy * d->integ[1] + k->drag_per_mass * d->vel[1];
	acc[2] =
	    p->kv_z * (vsp[2] - d->vel[2]) + p->ki_z * d->integ[2] + k->drag_per_mass * d->vel[2];
	acc[2] = clamp(acc[2], k->az_min, k->az_max);
	double lim = (p->gravity + acc[2]) * k->tan_tilt;
	h2 = acc[0] * acc[0] + acc[1] * acc[1];
	if (h2 > lim * lim) {
		double f = lim / sqrt(h2);
		acc[0] *= f;
		acc[1] *= f;
	}
}

/* Thrust and torques for acc, then the rotor duties through the mixer. */
static void attitude_loop(drone_t *d, const drone_params_t *p, const double r[9],
                          const double acc[3])
{
	const drone_derived_t *k = &p->k;
	/* Desired body z along the desired force; desired body x toward the heading. */
	double f[3] = {p->mass * acc[0], p->mass * acc[1], p->mass * (acc[2] + p->gravity)};
	double thrust = f[0] * r[2] + f[1] * r[5] + f[2] * r[8];
	double n = 1 / sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
	double b3[3] = {f[0] * n, f[1] * n, f[2] * n};
	double hc = d->heading[0], hs = d->heading[1];
	double b2[3] = {-b3[2] * hs, b3[2] * hc, b3[0] * hs - b3[1] * hc};
	n = 1 / sqrt(b2[0] * b2[0] + b2[1] * b2[1] + b2[2] * b2[2]);
	b2[0] *= n;
	b2[1] *= n;
	b2[2] *= n;
	double b1[3] = {b2[1] * b3[2] - b2[2] * b3[1], b2[2] * b3[0] - b2[0] * b3[2],
	                b2[0] * b3[1] - b2[1] * b3[0]};
	/* e_R = vee(M - M^T) / 2 with M = R_d^T R, M_ij = b_i . (column j of R). */
#define DOT_COL(b, j) ((b)[0] * r[(j)] + (b)[1] * r[3 + (j)] + (b)[2] * r[6 + (j)])
	double er[3] = {
	    0.5 * (DOT_COL(b3, 1) - DOT_COL(b2, 2)),
	    0.5 * (DOT_COL(b1, 2) - DOT_COL(b3, 0)),
	    0.5 * (DOT_COL(b2, 0) - DOT_COL(b1, 1)),
	};
#undef DOT_COL
	const double *w = d->rate;
	double jw[3] = {p->inertia[0] * w[0], p->inertia[1] * w[1], p->inertia[2] * w[2]};
	double tau[3];
	for (int i = 0; i < 3; i++) {
		tau[i] = p->inertia[i] * (-p->k_att[i] * er[i] - p->k_rate[i] * w[i]);
	}
	tau[0] += w[1] * jw[2] - w[2] * jw[1];
	tau[1] += w[2] * jw[0] - w[0] * jw[2];
	tau[2] += w[0] * jw[1] - w[1] * jw[0];
	/* The inverse of the rotor equations of drone.h, per-rotor thrust in N. */
	double tt = thrust > 0 ? thrust : 0;
	double tx = tau[0] * k->inv_arm_x, ty = tau[1] * k->inv_arm_x;
	double tz = tau[2] * k->yaw_per_torque;
	double ti[4] = {
	    0.25 * (tt - tx - ty - tz),
	    0.25 * (tt + tx + ty - tz),
	    0.25 * (tt + tx - ty + tz),
	    0.25 * (tt - tx + ty + tz),
	};
	for (int i = 0; i < 4; i++) {
		d->duty[i] = sqrt(clamp(ti[i] * k->duty_per_thrust, 0, 1));
	}
}

static void control(drone_t *d, const drone_params_t *p, const double r[9])
{
	switch (d->mode) {
	case DRONE_TAKEOFF:
	case DRONE_GOTO:
		if (arrived(d, p)) {
			d->mode = DRONE_HOLD;
		}
		break;
	case DRONE_LAND:
		d->ground_steps = d->pos[2] > 0 ? 0 : d->ground_steps + 1;
		if (d->ground_steps >= LAND_SETTLE_STEPS) {
			d->mode = DRONE_LANDED;
			memset(d->integ, 0, sizeof(d->integ));
		}
		break;
	default: break;
	}
	if (on_ground_mode(d)) {
		memset(d->duty, 0, sizeof(d->duty));
		return;
	}
	double acc[3];
	position_loop(d, p, acc);
	attitude_loop(d, p, r, acc);
}

static void plant(drone_t *d, const drone_params_t *p)
{
	const drone_derived_t *k = &p->k;
	const double dt = DRONE_DT;
	/* Forces from the rotor speeds at the start of the step (explicit for the rotors): the
	 * body's update then does not wait for the controller's, and the two run in parallel. */
	double s[4];
	for (int i = 0; i < 4; i++) {
		s[i] = d->rotor[i] * d->rotor[i];
		double cmd = p->omega_max * d->duty[i];
		double w = d->rotor[i] + k->lag * (cmd - d->rotor[i]);
		/* An exponential decay never reaches 0 and ends in subnormals, which are slow. */
		if (cmd == 0 && w < k->rotor_stopped) {
			w = 0;
		}
		d->rotor[i] = w;
	}
	double thrust = p->c_t * (s[0] + s[1] + s[2] + s[3]);
	double lever = p->c_t * k->arm_x;
	double tau[3] = {
	    lever * (-s[0] + s[1] + s[2] - s[3]),
	    lever * (-s[0] + s[1] - s[2] + s[3]),
	    p->c_q * (-s[0] - s[1] + s[2] + s[3]),
	};
	double *w = d->rate;
	double jw[3] = {p->inertia[0] * w[0], p->inertia[1] * w[1], p->inertia[2] * w[2]};
	double gyro[3] = {w[1] * jw[2] - w[2] * jw[1], w[2] * jw[0] - w[0] * jw[2],
	                  w[0] * jw[1] - w[1] * jw[0]};
	for (int i = 0; i < 3; i++) {
		w[i] += dt * k->inv_inertia[i] * (tau[i] - gyro[i] - p->ang_drag * w[i]);
	}
	double *q = d->q;
	double qw = q[0], qx = q[1], qy = q[2], qz = q[3];
	double h = 0.5 * dt;
	qw += h * (-q[1] * w[0] - q[2] * w[1] - q[3] * w[2]);
	qx += h * (q[0] * w[0] + q[2] * w[2] - q[3] * w[1]);
	qy += h * (q[0] * w[1] - q[1] * w[2] + q[3] * w[0]);
	qz += h * (q[0] * w[2] + q[1] * w[1] - q[2] * w[0]);
	/* |q|^2 = 1 + e with e ~ (dt |W| / 2)^2: one Newton step toward 1 / |q| leaves an error of
	 * order e^2 that the next step corrects again, without a sqrt and a division. */
	double n = 1.5 - 0.5 * (qw * qw + qx * qx + qy * qy + qz * qz);
	q[0] = qw * n;
	q[1] = qx * n;
	q[2] = qy * n;
	q[3] = qz * n;
	/* Body z in W, from the new attitude. */
	double bz[3] = {2 * (q[1] * q[3] + q[0] * q[2]), 2 * (q[2] * q[3] - q[0] * q[1]),
	                1 - 2 * (q[1] * q[1] + q[2] * q[2])};
	double tm = thrust * k->inv_mass;
	double *v = d->vel;
	v[0] += dt * (tm * bz[0] - k->drag_per_mass * v[0]);
	v[1] += dt * (tm * bz[1] - k->drag_per_mass * v[1]);
	v[2] += dt * (tm * bz[2] - k->drag_per_mass * v[2] - p->gravity);
	for (int i = 0; i < 3; i++) {
		d->pos[i] += dt * v[i];
	}
	if (d->pos[2] <= 0 && v[2] <= 0) {
		/* On the floor and not lifting off: the ground holds the drone level. */
		d->pos[2] = 0;
		memset(d->vel, 0, sizeof(d->vel));
		memset(d->rate, 0, sizeof(d->rate));
		double nn = q[0] * q[0] + q[3] * q[3];
		if (nn > 0) {
			nn = 1 / sqrt(nn);
			q[0] *= nn;
			q[3] *= nn;
		} else {
			q[0] = 1;
			q[3] = 0;
		}
		q[1] = q[2] = 0;
	} else if (d->pos[2] < 0) {
		d->pos[2] = 0;
	}
}

void drone_step(drone_t *d, const drone_params_t *p)
{
	d->step++;
	/* Standing with the rotors stopped: nothing moves (the floor zeroed the rest). */
	if (on_ground_mode(d) && d->pos[2] == 0 && d->rotor[0] == 0 && d->rotor[1] == 0 &&
	    d->rotor[2] == 0 && d->rotor[3] == 0) {
		return;
	}
	double r[9];
	rotation(d->q, r);
	control(d, p, r);
	plant(d, p);
}

/* ---- getters ---- */

drone_mode_t drone_mode(const drone_t *d)
{
	return (drone_mode_t)d->mode;
}

bool drone_arrived(const drone_t *d, const drone_params_t *p)
{
	return !on_ground_mode(d) && d->pos[2] > 0 && arrived(d, p);
}

void drone_euler(const drone_t *d, double rpy[3])
{
	double r[9];
	rotation(d->q, r);
	rpy[0] = atan2(r[7], r[8]);
	rpy[1] = asin(clamp(-r[6], -1, 1));
	rpy[2] = atan2(r[3], r[0]);
}

double drone_tilt(const drone_t *d)
{
	const double *q = d->q;
	return acos(clamp(1 - 2 * (q[1] * q[1] + q[2] * q[2]), -1, 1));
}

void drone_velocity_world(const drone_t *d, double v[3])
{
	memcpy(v, d->vel, sizeof(d->vel));
}

void drone_velocity_body(const drone_t *d, double v[3])
{
	double r[9];
	rotation(d->q, r);
	for (int j = 0; j < 3; j++) {
		v[j] = r[j] * d->vel[0] + r[3 + j] * d->vel[1] + r[6 + j] * d->vel[2];
	}
}

void drone_motor_controls(const drone_t *d, double controls[4])
{
	memcpy(controls, d->duty, sizeof(d->duty));
}

void drone_pose(const drone_t *d, double pose[6])
{
	memcpy(pose, d->pos, sizeof(d->pos));
	drone_euler(d, pose + 3);
}

void drone_pose_ned(const drone_t *d, double pose[6])
{
	drone_pose(d, pose);
	pose[1] = -pose[1];
	pose[2] = -pose[2];
	pose[4] = -pose[4];
	pose[5] = -pose[5];
}

/* ---- context ---- */

/* The double arrays of the state, in context order. */
#define STATE_ARRAYS 9
struct span {
	size_t offset;
	size_t count;
};
static const struct span state_arrays[STATE_ARRAYS] = {
    {offsetof(drone_t, pos), 3},    {offsetof(drone_t, vel), 3},     {offsetof(drone_t, q), 4},
    {offsetof(drone_t, rate), 3},   {offsetof(drone_t, rotor), 4},   {offsetof(drone_t, duty), 4},
    {offsetof(drone_t, target), 3}, {offsetof(drone_t, heading), 2}, {offsetof(drone_t, integ), 3},
};

static void put_u(uint8_t **p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++) {
		*(*p)++ = (uint8_t)(v >> (8 * i));
	}
}

static uint64_t get_u(const uint8_t **p, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++) {
		v |= (uint64_t) * (*p)++ << (8 * i);
	}
	return v;
}

size_t drone_context_pack(const drone_t *d, void *buf, size_t cap)
{
	if (cap < DRONE_CONTEXT_SIZE) {
		return 0;
	}
	uint8_t *o = buf;
	put_u(&o, DRONE_CONTEXT_MAGIC, 4);
	put_u(&o, DRONE_CONTEXT_VERSION, 2);
	put_u(&o, DRONE_CONTEXT_SIZE, 2);
	put_u(&o, d->step, 8);
	put_u(&o, (uint32_t)d->mode, 4);
	put_u(&o, d->ground_steps, 4);
	for (int a = 0; a < STATE_ARRAYS; a++) {
		const double *v = (const double *)((const char *)d + state_arrays[a].offset);
		for (size_t i = 0; i < state_arrays[a].count; i++) {
			uint64_t bits;
			memcpy(&bits, &v[i], sizeof(bits));
			put_u(&o, bits, 8);
		}
	}
	return (size_t)(o - (uint8_t *)buf);
}

int drone_context_unpack(drone_t *out, const void *buf, size_t len)
{
	const uint8_t *in = buf;
	if (len < 8 || get_u(&in, 4) != DRONE_CONTEXT_MAGIC) {
		return HAKO_EPROTO;
	}
	if (get_u(&in, 2) != DRONE_CONTEXT_VERSION) {
		return HAKO_EVERSION;
	}
	if (get_u(&in, 2) != DRONE_CONTEXT_SIZE || len != DRONE_CONTEXT_SIZE) {
		return HAKO_EPROTO;
	}
	drone_t d;
	memset(&d, 0, sizeof(d));
	d.step = get_u(&in, 8);
	d.mode = (int32_t)(uint32_t)get_u(&in, 4);
	d.ground_steps = (uint32_t)get_u(&in, 4);
	for (int a = 0; a < STATE_ARRAYS; a++) {
		double *v = (double *)((char *)&d + state_arrays[a].offset);
		for (size_t i = 0; i < state_arrays[a].count; i++) {
			uint64_t bits = get_u(&in, 8);
			memcpy(&v[i], &bits, sizeof(bits));
			if (!isfinite(v[i])) {
				return HAKO_EPROTO;
			}
		}
	}
	double qn = d.q[0] * d.q[0] + d.q[1] * d.q[1] + d.q[2] * d.q[2] + d.q[3] * d.q[3];
	if (d.mode < 0 || d.mode >= DRONE_MODE_COUNT || fabs(qn - 1) > 1e-6 || d.pos[2] < 0) {
		return HAKO_EPROTO;
	}
	*out = d;
	return 0;
}
