/* The forklift model and its context. See forklift_model.h. */
#include "forklift_model.h"

#include <math.h>
#include <string.h>

#include "hako/error.h"

#define DT (FORKLIFT_DT_USEC * 1e-6)

/* Drive: acceleration = A_MAX * effort - DRAG * v; the effort follows the PID's command with the
 * time constant TAU_DRIVE. */
#define A_MAX     1.5  /* m/s^2 at full effort */
#define DRAG      0.3  /* 1/s */
#define TAU_DRIVE 0.05 /* s */
#define SPEED_KP  6.0
#define SPEED_KI  3.0
#define SPEED_KD  0.0

/* Position profile: never faster than what stops at the target with A_DEC, and linear in the
 * last centimetres so the forklift creeps in instead of oscillating around the target. */
#define A_DEC     0.5 /* m/s^2 */
#define K_POS     3.0 /* 1/s */
#define POS_TOL   0.01
#define SPEED_TOL 0.02
#define HOLD      100 /* steps the goal must be met before the next phase (0.1 s) */

/* Heading: a wheel mismatch turns the forklift by BIAS rad per metre; the heading PID steers
 * against it. */
#define BIAS      0.04
#define YAW_KP    4.0
#define YAW_KI    2.0
#define YAW_KD    0.05
#define OMEGA_MAX 0.5 /* rad/s */

/* Lift: the PID commands a fork speed, the actuator follows with TAU_LIFT. */
#define LIFT_KP    5.0
#define LIFT_KI    0.2
#define LIFT_KD    0.02
#define LIFT_V_MAX 0.4  /* m/s */
#define TAU_LIFT   0.05 /* s */
#define LIFT_MAX   1.0  /* m */
#define LIFT_TOL   0.005

static const char *const phase_names[FORKLIFT_PHASE_COUNT] = {"forward", "lift-up", "backward",
                                                              "lift-down", "done"};

const char *forklift_phase_name(int phase)
{
	return phase >= 0 && phase < FORKLIFT_PHASE_COUNT ? phase_names[phase] : "?";
}

void forklift_mission_default(forklift_mission_t *m)
{
	m->forward_m = 2.0;
	m->backward_m = 2.0;
	m->speed = FORKLIFT_V_MAX;
	m->lift_height = 0.4;
	m->loops = 0;
}

int forklift_mission_check(const forklift_mission_t *m)
{
	if (!(isfinite(m->forward_m) && m->forward_m >= 0 && m->forward_m <= 100) ||
	    !(isfinite(m->backward_m) && m->backward_m >= 0 && m->backward_m <= 100) ||
	    !(isfinite(m->speed) && m->speed > 0 && m->speed <= 10) ||
	    !(isfinite(m->lift_height) && m->lift_height >= 0 && m->lift_height <= LIFT_MAX)) {
		return -1;
	}
	return 0;
}

static double clamp(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* A PID whose integral stops growing while the output saturates (anti-windup). */
static double pid(forklift_pid_t *p, double error, double kp, double ki, double kd, double lim)
{
	double deriv = (error - p->prev_error) / DT;
	p->prev_error = error;
	double u = kp * error + ki * (p->integral + error * DT) + kd * deriv;
	if (u > -lim && u < lim) {
		p->integral += error * DT;
	}
	return clamp(u, -lim, lim);
}

static void enter_phase(forklift_state_t *s, int32_t phase)
{
	const forklift_mission_t *m = &s->mission;
	s->phase = phase;
	s->hold = 0;
	switch (phase) {
	case FORKLIFT_FORWARD: s->target_x = s->home_x + m->forward_m; break;
	case FORKLIFT_BACKWARD: s->target_x = s->home_x + m->forward_m - m->backward_m; break;
	case FORKLIFT_LIFT_UP: s->target_lift = m->lift_height; break;
	case FORKLIFT_LIFT_DOWN: s->target_lift = 0.0; break;
	default: break;
	}
}

void forklift_model_init(forklift_state_t *s, const forklift_mission_t *mission)
{
	memset(s, 0, sizeof(*s));
	s->mission = *mission;
	s->home_x = 0.0;
	enter_phase(s, FORKLIFT_FORWARD);
}

/* The speed set point of a drive phase: cruise, then the braking curve sqrt(2 a d), then
 * linear in the last centimetres. */
static double profile_speed(const forklift_state_t *s)
{
	double d = s->target_x - s->x;
	double ad = fabs(d);
	double cruise = s->mission.speed < FORKLIFT_V_MAX ? s->mission.speed : FORKLIFT_V_MAX;
	double v = sqrt(2.0 * A_DEC * ad);
	if (K_POS * ad < v) {
		v = K_POS * ad;
	}
	if (cruise < v) {
		v = cruise;
	}
	return d >= 0 ? v : -v;
}

/* Goal of the current phase met long enough: on to the next one. */
static void advance_phase(forklift_state_t *s)
{
	int met = 0;
	switch (s->phase) {
	case FORKLIFT_FORWARD:
	case FORKLIFT_BACKWARD:
		met = fabs(s->target_x - s->x) < POS_TOL && fabs(s->v) < SPEED_TOL;
		break;
	case FORKLIFT_LIFT_UP:
	case FORKLIFT_LIFT_DOWN:
		met = fabs(s->target_lift - s->lift) < LIFT_TOL && fabs(s->lift_v) < SPEED_TOL;
		break;
	default: return;
	}
	s->hold = met ? s->hold + 1 : 0;
	if (s->hold < HOLD) {
		return;
	}
	switch (s->phase) {
	case FORKLIFT_FORWARD: enter_phase(s, FORKLIFT_LIFT_UP); break;
	case FORKLIFT_LIFT_UP: enter_phase(s, FORKLIFT_BACKWARD); break;
	case FORKLIFT_BACKWARD: enter_phase(s, FORKLIFT_LIFT_DOWN); break;
	case FORKLIFT_LIFT_DOWN:
		s->loop++;
		if (s->mission.loops != 0 && s->loop >= s->mission.loops) {
			enter_phase(s, FORKLIFT_DONE);
		} else {
			enter_phase(s, FORKLIFT_FORWARD);
		}
		break;
	default: break;
	}
}

void forklift_model_step(forklift_state_t *s)
{
	/* Outside the drive phases the profile holds the forklift at its last target. */
	s->target_v = s->phase == FORKLIFT_DONE ? 0.0 : profile_speed(s);

	/* Drive: PID effort plus the feed-forward that holds the target speed against drag. */
	double ff = DRAG * s->target_v / A_MAX;
	s->drive_cmd =
	    clamp(ff + pid(&s->speed_pid, s->target_v - s->v, SPEED_KP, SPEED_KI, SPEED_KD, 1.0),
	          -1.0, 1.0);
	s->drive += (s->drive_cmd - s->drive) * (DT / TAU_DRIVE);
	/* The motor's governor: the speed never exceeds FORKLIFT_V_MAX, which the RD trigger's
	 * margin relies on. */
	s->v = clamp(s->v + (A_MAX * s->drive - DRAG * s->v) * DT, -FORKLIFT_V_MAX, FORKLIFT_V_MAX);

	/* Heading. */
	double omega_cmd =
	    pid(&s->yaw_pid, s->target_yaw - s->yaw, YAW_KP, YAW_KI, YAW_KD, OMEGA_MAX);
	s->omega = omega_cmd + BIAS * s->v;
	s->yaw += s->omega * DT;
	s->x += s->v * cos(s->yaw) * DT;
	s->y += s->v * sin(s->yaw) * DT;

	/* Lift. */
	s->lift_cmd =
	    pid(&s->lift_pid, s->target_lift - s->lift, LIFT_KP, LIFT_KI, LIFT_KD, LIFT_V_MAX);
	s->lift_v += (s->lift_cmd - s->lift_v) * (DT / TAU_LIFT);
	s->lift = clamp(s->lift + s->lift_v * DT, 0.0, LIFT_MAX);

	advance_phase(s);
	s->step++;
}

/* ---- Context: explicit little-endian fields, in this order ---- */

struct cursor {
	uint8_t *p;
	const uint8_t *q;
	size_t off;
	size_t len;
};

static void put_u(struct cursor *c, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++) {
		c->p[c->off++] = (uint8_t)(v >> (8 * i));
	}
}

static void put_f64(struct cursor *c, double d)
{
	uint64_t v;
	memcpy(&v, &d, sizeof(v));
	put_u(c, v, 8);
}

static uint64_t get_u(struct cursor *c, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++) {
		v |= (uint64_t)c->q[c->off++] << (8 * i);
	}
	return v;
}

static double get_f64(struct cursor *c)
{
	uint64_t v = get_u(c, 8);
	double d;
	memcpy(&d, &v, sizeof(d));
	return d;
}

/* The doubles of the state, in context order. */
#define STATE_DOUBLES 21
static void state_doubles(forklift_state_t *s, double *out[STATE_DOUBLES])
{
	double *const list[STATE_DOUBLES] = {
	    &s->home_x,
	    &s->target_x,
	    &s->target_v,
	    &s->target_yaw,
	    &s->target_lift,
	    &s->x,
	    &s->y,
	    &s->yaw,
	    &s->v,
	    &s->omega,
	    &s->drive_cmd,
	    &s->drive,
	    &s->lift,
	    &s->lift_v,
	    &s->lift_cmd,
	    &s->speed_pid.integral,
	    &s->speed_pid.prev_error,
	    &s->yaw_pid.integral,
	    &s->yaw_pid.prev_error,
	    &s->lift_pid.integral,
	    &s->lift_pid.prev_error,
	};
	memcpy(out, list, sizeof(list));
}

size_t forklift_context_pack(const forklift_state_t *s, void *buf, size_t cap)
{
	if (cap < FORKLIFT_CONTEXT_SIZE) {
		return 0;
	}
	struct cursor c = {(uint8_t *)buf, NULL, 0, cap};
	put_u(&c, FORKLIFT_CONTEXT_MAGIC, 4);
	put_u(&c, FORKLIFT_CONTEXT_VERSION, 2);
	put_u(&c, FORKLIFT_CONTEXT_SIZE, 2);
	put_u(&c, s->step, 8);
	put_f64(&c, s->mission.forward_m);
	put_f64(&c, s->mission.backward_m);
	put_f64(&c, s->mission.speed);
	put_f64(&c, s->mission.lift_height);
	put_u(&c, s->mission.loops, 4);
	put_u(&c, (uint32_t)s->phase, 4);
	put_u(&c, s->loop, 4);
	put_u(&c, s->hold, 4);
	double *d[STATE_DOUBLES];
	state_doubles((forklift_state_t *)s, d);
	for (int i = 0; i < STATE_DOUBLES; i++) {
		put_f64(&c, *d[i]);
	}
	return c.off;
}

int forklift_context_unpack(forklift_state_t *out, const void *buf, size_t len)
{
	if (len < 8) {
		return HAKO_EPROTO;
	}
	struct cursor c = {NULL, (const uint8_t *)buf, 0, len};
	if (get_u(&c, 4) != FORKLIFT_CONTEXT_MAGIC) {
		return HAKO_EPROTO;
	}
	if (get_u(&c, 2) != FORKLIFT_CONTEXT_VERSION) {
		return HAKO_EVERSION;
	}
	if (get_u(&c, 2) != FORKLIFT_CONTEXT_SIZE || len != FORKLIFT_CONTEXT_SIZE) {
		return HAKO_EPROTO;
	}
	forklift_state_t s;
	memset(&s, 0, sizeof(s));
	s.step = get_u(&c, 8);
	s.mission.forward_m = get_f64(&c);
	s.mission.backward_m = get_f64(&c);
	s.mission.speed = get_f64(&c);
	s.mission.lift_height = get_f64(&c);
	s.mission.loops = (uint32_t)get_u(&c, 4);
	s.phase = (int32_t)(uint32_t)get_u(&c, 4);
	s.loop = (uint32_t)get_u(&c, 4);
	s.hold = (uint32_t)get_u(&c, 4);
	double *d[STATE_DOUBLES];
	state_doubles(&s, d);
	for (int i = 0; i < STATE_DOUBLES; i++) {
		*d[i] = get_f64(&c);
		if (!isfinite(*d[i])) {
			return HAKO_EPROTO;
		}
	}
	if (s.phase < 0 || s.phase >= FORKLIFT_PHASE_COUNT || forklift_mission_check(&s.mission)) {
		return HAKO_EPROTO;
	}
	*out = s;
	return 0;
}

uint64_t forklift_state_hash(const forklift_state_t *s)
{
	uint8_t buf[FORKLIFT_CONTEXT_SIZE];
	size_t n = forklift_context_pack(s, buf, sizeof(buf));
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h = (h ^ buf[i]) * 1099511628211ull;
	}
	return h;
}
