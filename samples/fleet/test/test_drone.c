/* The fleet drone: it takes off, flies to a point within its limits, holds, lands; it is
 * deterministic and a context hand-off changes nothing; its commands, parameters and context
 * refuse what they must; a fleet of 64 reaches its formation; and what a step costs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "drone.h"
#include "hako/error.h"

#define STEPS_PER_S 1000
#define DEG         0.017453292519943295

static void run(drone_t *d, const drone_params_t *p, int steps)
{
	for (int i = 0; i < steps; i++) {
		drone_step(d, p);
	}
}

static double dist(const drone_t *d, double x, double y, double z)
{
	return sqrt((d->pos[0] - x) * (d->pos[0] - x) + (d->pos[1] - y) * (d->pos[1] - y) +
	            (d->pos[2] - z) * (d->pos[2] - z));
}

static double speed(const drone_t *d)
{
	double v[3];
	drone_velocity_world(d, v);
	return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* A drone at (x, y) with heading yaw that took off to altitude and has 8 s to get there. */
static void airborne(drone_t *d, const drone_params_t *p, double x, double y, double yaw,
                     double altitude)
{
	drone_init(d, x, y, yaw);
	assert_int_equal(drone_takeoff(d, altitude), 0);
	run(d, p, 8 * STEPS_PER_S);
	assert_int_equal(drone_mode(d), DRONE_HOLD);
}

static void test_takeoff(void **state)
{
	(void)state;
	drone_params_t p;
	drone_params_default(&p);
	drone_t d;
	drone_init(&d, 1.0, -2.0, 0.5);
	assert_int_equal(drone_mode(&d), DRONE_IDLE);
	/* IDLE: nothing moves, the rotors stay off. */
	run(&d, &p, 500);
	assert_true(d.pos[2] == 0 && d.rotor[0] == 0 && d.duty[0] == 0);
	assert_int_equal(drone_takeoff(&d, 4.0), 0);
	assert_int_equal(drone_mode(&d), DRONE_TAKEOFF);
	double zmax = 0;
	for (int i = 0; i < 8 * STEPS_PER_S; i++) {
		drone_step(&d, &p);
		zmax = fmax(zmax, d.pos[2]);
	}
	assert_true(fabs(d.pos[2] - 4.0) < 0.05);
	assert_true(fabs(d.pos[0] - 1.0) < 0.05);
	assert_true(fabs(d.pos[1] + 2.0) < 0.05);
	assert_true(speed(&d) < 0.05);
	assert_true(zmax < 4.5);
	assert_int_equal(drone_mode(&d), DRONE_HOLD);
	assert_true(drone_arrived(&d, &p));
	assert_int_equal(d.step, 8 * STEPS_PER_S + 500);
	/* Hovering: each rotor carries a quarter of the weight, duty = sqrt(m g / T_max). */
	double u[4];
	drone_motor_controls(&d, u);
	double hover = sqrt(p.mass * p.gravity / (4 * p.c_t * p.omega_max * p.omega_max));
	for (int i = 0; i < 4; i++) {
		assert_true(fabs(u[i] - hover) < 1e-3);
	}
	assert_true(hover > sqrt(0.5) && hover < sqrt(0.6)); /* 50-60 % of full thrust */
}

static void test_goto(void **state)
{
	(void)state;
	drone_params_t p;
	drone_params_default(&p);
	drone_t d;
	airborne(&d, &p, 0, 0, 0, 4.0);
	double tx = 0, ty = 4.0, tz = 4.0; /* 4 m to the left of the heading */
	assert_int_equal(drone_goto(&d, tx, ty, tz), 0);
	assert_int_equal(drone_mode(&d), DRONE_GOTO);
	double tilt_max = 0, vh_max = 0;
	int arrived_at = -1;
	for (int i = 0; i < 10 * STEPS_PER_S && arrived_at < 0; i++) {
		drone_step(&d, &p);
		tilt_max = fmax(tilt_max, drone_tilt(&d));
		vh_max = fmax(vh_max, hypot(d.vel[0], d.vel[1]));
		if (drone_arrived(&d, &p)) {
			arrived_at = i + 1;
		}
	}
	printf("goto 4 m: arrived after %.3f s, tilt max %.2f deg, speed max %.3f m/s\n",
	       arrived_at / (double)STEPS_PER_S, tilt_max / DEG, vh_max);
	assert_true(arrived_at > 0);
	assert_true(arrived_at >= 2 * STEPS_PER_S); /* 4 m at 2 m/s at most */
	assert_true(dist(&d, tx, ty, tz) < 0.1);
	assert_true(tilt_max < p.tilt_max + 2 * DEG);
	assert_true(vh_max < 1.1 * p.v_max);
	/* Then it holds. */
	for (int i = 0; i < 5 * STEPS_PER_S; i++) {
		drone_step(&d, &p);
		assert_true(dist(&d, tx, ty, tz) < 0.05);
	}
	assert_int_equal(drone_mode(&d), DRONE_HOLD);
	/* 25 deg is more than this leg asks for; at 10 deg the limit works. */
	drone_params_t gentle = p;
	gentle.tilt_max = 10 * DEG;
	assert_int_equal(drone_params_update(&gentle), 0);
	assert_int_equal(drone_goto(&d, 0, 0, 4.0), 0);
	tilt_max = 0;
	for (int i = 0; i < 10 * STEPS_PER_S; i++) {
		drone_step(&d, &gentle);
		tilt_max = fmax(tilt_max, drone_tilt(&d));
	}
	assert_true(tilt_max > 9 * DEG && tilt_max < 12 * DEG);
	assert_true(drone_arrived(&d, &gentle));
}

static void test_land(void **state)
{
	(void)state;
	drone_params_t p;
	drone_params_default(&p);
	drone_t d;
	airborne(&d, &p, 3.0, 2.0, -1.0, 4.0);
	assert_int_equal(drone_land(&d), 0);
	assert_int_equal(drone_mode(&d), DRONE_LAND);
	double vz_min = 0;
	int i;
	for (i = 0; i < 15 * STEPS_PER_S && drone_mode(&d) != DRONE_LANDED; i++) {
		drone_step(&d, &p);
		vz_min = fmin(vz_min, d.vel[2]);
		assert_true(d.pos[2] >= 0);
	}
	assert_int_equal(drone_mode(&d), DRONE_LANDED);
	assert_true(vz_min > -(p.vz_down + 0.1));
	run(&d, &p, STEPS_PER_S); /* the rotors spin down */
	assert_true(d.pos[2] == 0);
	assert_true(fabs(d.pos[0] - 3.0) < 0.05 && fabs(d.pos[1] - 2.0) < 0.05);
	for (int r = 0; r < 4; r++) {
		assert_true(d.rotor[r] == 0);
		assert_true(d.duty[r] == 0);
	}
	assert_true(speed(&d) == 0);
	assert_false(drone_arrived(&d, &p));
	double rpy[3];
	drone_euler(&d, rpy);
	assert_true(rpy[0] == 0 && rpy[1] == 0);
	assert_true(fabs(rpy[2] + 1.0) < 0.01);
	/* And takes off again. */
	assert_int_equal(drone_takeoff(&d, 2.0), 0);
	run(&d, &p, 6 * STEPS_PER_S);
	assert_true(fabs(d.pos[2] - 2.0) < 0.05);
}

/* The same commands at the same steps for every drone of the list. */
static void script(drone_t *ds[], int n, const drone_params_t *p, int from, int to)
{
	for (int i = from; i < to; i++) {
		for (int k = 0; k < n; k++) {
			drone_t *d = ds[k];
			switch (i) {
			case 0: assert_int_equal(drone_takeoff(d, 3.0), 0); break;
			case 3000: assert_int_equal(drone_goto(d, 0.5, 1.0, 3.5), 0); break;
			case 6000: assert_int_equal(drone_goto(d, 2.5, -1.5, 4.0), 0); break;
			case 9000: assert_int_equal(drone_set_heading(d, 2.0), 0); break;
			case 11000: assert_int_equal(drone_goto(d, -1.0, 3.0, 2.0), 0); break;
			case 16000: assert_int_equal(drone_land(d), 0); break;
			default: break;
			}
			drone_step(d, p);
		}
	}
}

static void test_deterministic(void **state)
{
	(void)state;
	drone_params_t p;
	drone_params_default(&p);
	drone_t a, b;
	drone_init(&a, 0.3, 0.7, 0.2);
	drone_init(&b, 0.3, 0.7, 0.2);
	drone_t *both[] = {&a, &b};
	script(both, 2, &p, 0, 20 * STEPS_PER_S);
	assert_memory_equal(&a, &b, sizeof(a));
	/* The script really flew: it went up, away, and came down. */
	assert_int_equal(a.step, 20 * STEPS_PER_S);
	assert_true(drone_mode(&a) == DRONE_LAND || drone_mode(&a) == DRONE_LANDED);
}

static void test_handoff(void **state)
{
	(void)state;
	drone_params_t p;
	drone_params_default(&p);
	drone_t stay, moved;
	drone_init(&stay, -0.4, 1.2, 0.9);
	drone_t *one[] = {&stay};
	script(one, 1, &p, 0, 7300); /* t = 7.3 s: on the way to the first point */
	assert_int_equal(drone_mode(&stay), DRONE_GOTO);
	/* No value is 0, so that the comparisons below see each one restored. */
	const double *v = (const double *)&stay;
	for (size_t i = 0; i < offsetof(drone_t, step) / sizeof(double); i++) {
		assert_true(v[i] != 0);
	}
	uint8_t ctx[DRONE_CONTEXT_SIZE + 8];
	size_t n = drone_context_pack(&stay, ctx, sizeof(ctx));
	assert_int_equal(n, DRONE_CONTEXT_SIZE);
	memset(&moved, 0xa5, sizeof(moved));
	assert_int_equal(drone_context_unpack(&moved, ctx, n), 0);
	assert_memory_equal(&moved, &stay, sizeof(stay));
	drone_t *two[] = {&stay, &moved};
	script(two, 2, &p, 7300, 17300);
	assert_memory_equal(&moved, &stay, sizeof(stay));
	/* A second hand-off, back, as it touches down (the landing counter runs). */
	int s = 17300;
	for (; stay.ground_steps == 0 && s < 25000; s++) {
		script(two, 2, &p, s, s + 1);
	}
	assert_int_equal(drone_mode(&stay), DRONE_LAND);
	assert_true(stay.ground_steps > 0);
	assert_int_equal(drone_context_pack(&moved, ctx, sizeof(ctx)), DRONE_CONTEXT_SIZE);
	memset(&moved, 0x5a, sizeof(moved));
	assert_int_equal(drone_context_unpack(&moved, ctx, DRONE_CONTEXT_SIZE), 0);
	assert_memory_equal(&moved, &stay, sizeof(stay));
	script(two, 2, &p, s, 25000);
	assert_memory_equal(&moved, &stay, sizeof(stay));
	assert_int_equal(drone_mode(&stay), DRONE_LANDED);
}

static void test_context_refused(void **state)
{
	(void)state;
	drone_params_t p;
	drone_params_default(&p);
	drone_t d, out;
	airborne(&d, &p, 0, 0, 0, 1.0);
	uint8_t ctx[DRONE_CONTEXT_SIZE], bad[DRONE_CONTEXT_SIZE];
	assert_int_equal(drone_context_pack(&d, ctx, sizeof(ctx) - 1), 0);
	assert_int_equal(drone_context_pack(&d, ctx, sizeof(ctx)), DRONE_CONTEXT_SIZE);
	drone_init(&out, 9, 9, 0);
	drone_t before = out;

	memcpy(bad, ctx, sizeof(bad));
	bad[0] ^= 1; /* magic */
	assert_int_equal(drone_context_unpack(&out, bad, sizeof(bad)), HAKO_EPROTO);
	memcpy(bad, ctx, sizeof(bad));
	bad[4] = 2; /* version */
	assert_int_equal(drone_context_unpack(&out, bad, sizeof(bad)), HAKO_EVERSION);
	assert_int_equal(drone_context_unpack(&out, ctx, sizeof(ctx) - 1), HAKO_EPROTO);
	assert_int_equal(drone_context_unpack(&out, ctx, 4), HAKO_EPROTO);
	memcpy(bad, ctx, sizeof(bad));
	bad[16] = DRONE_MODE_COUNT; /* mode */
	assert_int_equal(drone_context_unpack(&out, bad, sizeof(bad)), HAKO_EPROTO);
	memcpy(bad, ctx, sizeof(bad));
	memset(bad + 24, 0xff, 8); /* pos[0] = NaN */
	assert_int_equal(drone_context_unpack(&out, bad, sizeof(bad)), HAKO_EPROTO);
	memcpy(bad, ctx, sizeof(bad));
	bad[24 + 6 * 8 + 6] ^= 0x08; /* q[0] off by a quarter or a half: not a unit quaternion */
	assert_int_equal(drone_context_unpack(&out, bad, sizeof(bad)), HAKO_EPROTO);
	assert_memory_equal(&out, &before, sizeof(out));

	assert_int_equal(drone_context_unpack(&out, ctx, sizeof(ctx)), 0);
	assert_memory_equal(&out, &d, sizeof(out));
}

static void test_commands(void **state)
{
	(void)state;
	drone_params_t p;
	drone_params_default(&p);
	drone_t d;
	drone_init(&d, 0, 0, 0);
	assert_int_equal(drone_goto(&d, 1, 1, 1), HAKO_ESTATE);
	assert_int_equal(drone_land(&d), 0);
	assert_int_equal(drone_mode(&d), DRONE_IDLE);
	assert_int_equal(drone_takeoff(&d, 0), HAKO_EINVAL);
	assert_int_equal(drone_takeoff(&d, NAN), HAKO_EINVAL);
	assert_int_equal(drone_set_heading(&d, INFINITY), HAKO_EINVAL);
	assert_int_equal(drone_takeoff(&d, 2), 0);
	assert_int_equal(drone_takeoff(&d, 3), HAKO_ESTATE);
	assert_int_equal(drone_goto(&d, NAN, 0, 1), HAKO_EINVAL);
	assert_int_equal(drone_goto(&d, 0, 0, -1), HAKO_EINVAL);
	assert_int_equal(drone_mode(&d), DRONE_TAKEOFF);
	assert_string_equal(drone_mode_name(DRONE_HOLD), "hold");
	assert_string_equal(drone_mode_name(DRONE_MODE_COUNT), "?");
}

static void test_params(void **state)
{
	(void)state;
	drone_params_t p, q;
	drone_params_default(&p);
	assert_int_equal(drone_params_update(&p), 0);
	assert_true(fabs(p.k.tan_tilt - tan(p.tilt_max)) < 1e-15);
	q = p;
	q.mass = 0;
	assert_int_equal(drone_params_update(&q), HAKO_EINVAL);
	q = p;
	q.t_rotor = 0.5 * DRONE_DT;
	assert_int_equal(drone_params_update(&q), HAKO_EINVAL);
	q = p;
	q.tilt_max = 70 * DEG;
	assert_int_equal(drone_params_update(&q), HAKO_EINVAL);
	q = p;
	q.mass = 1.7; /* 16.7 N of 18: no margin left to steer */
	assert_int_equal(drone_params_update(&q), HAKO_EINVAL);
	assert_memory_equal(&q.k, &p.k, sizeof(p.k));
	/* A heavier drone flies with its own parameters. */
	q = p;
	q.mass = 1.3;
	assert_int_equal(drone_params_update(&q), 0);
	drone_t d;
	airborne(&d, &q, 0, 0, 0, 2.0);
	assert_true(fabs(d.pos[2] - 2.0) < 0.05);
}

static void test_heading_and_frames(void **state)
{
	(void)state;
	drone_params_t p;
	drone_params_default(&p);
	drone_t d;
	double rpy[3];
	/* The model's own sin and cos (no libm in the state) agree with libm's, in every
	 * quadrant and after the reduction of large angles. */
	const double yaws[] = {-1000.3, -7.0, -2.5, -1.6, -0.7, 0.0, 0.7, 1.6, 2.4, 3.1, 100.0};
	for (size_t i = 0; i < sizeof(yaws) / sizeof(yaws[0]); i++) {
		drone_init(&d, 0, 0, yaws[i]);
		drone_euler(&d, rpy);
		assert_true(fabs(rpy[2] - remainder(yaws[i], 2 * M_PI)) < 1e-12);
		assert_true(fabs(d.heading[0] - cos(yaws[i])) < 1e-13);
		assert_true(fabs(d.heading[1] - sin(yaws[i])) < 1e-13);
		assert_true(fabs(rpy[0]) < 1e-15 && fabs(rpy[1]) < 1e-15);
	}
	drone_init(&d, 0, 0, 0.25);
	assert_int_equal(drone_takeoff(&d, 3.0), 0);
	run(&d, &p, 6 * STEPS_PER_S);
	/* Turn left to face west (+y), counter-clockwise seen from above. */
	assert_int_equal(drone_set_heading(&d, M_PI / 2), 0);
	run(&d, &p, 5 * STEPS_PER_S);
	drone_euler(&d, rpy);
	assert_true(fabs(rpy[2] - M_PI / 2) < 0.01);
	assert_true(dist(&d, 0, 0, 3.0) < 0.05);
	/* Fly west: that is forward in the body frame. */
	assert_int_equal(drone_goto(&d, 0, 10, 3.0), 0);
	run(&d, &p, 3 * STEPS_PER_S);
	double vb[3];
	drone_velocity_body(&d, vb);
	assert_true(fabs(vb[0] - p.v_max) < 0.02); /* cruising: the drag is compensated */
	assert_true(fabs(vb[1]) < 0.05 && fabs(vb[2]) < 0.1);
	/* The pos PDU is the pose in W; NED flips y, z, pitch and yaw. */
	assert_int_equal(drone_goto(&d, 0, 0, 3.0), 0);
	run(&d, &p, 300); /* braking hard: pitched */
	double pose[6], ned[6];
	drone_pose(&d, pose);
	drone_pose_ned(&d, ned);
	drone_euler(&d, rpy);
	assert_true(pose[0] == d.pos[0] && pose[1] == d.pos[1] && pose[2] == d.pos[2]);
	assert_true(pose[3] == rpy[0] && pose[4] == rpy[1] && pose[5] == rpy[2]);
	assert_true(fabs(pose[4]) > 5 * DEG);
	double sign[6] = {1, -1, -1, 1, -1, -1};
	for (int i = 0; i < 6; i++) {
		assert_true(ned[i] == sign[i] * pose[i]);
	}
	/* Braking while flying forward (+x_B): the nose goes up, a negative pitch about y_B
	 * (FLU; NED sees a positive one). */
	assert_true(pose[4] < 0);
}

/* 64 drones on an 8 x 8 grid, 2 m apart, take off to 3 m and form the grid turned by 90 deg,
 * 4 m away at 5 m. */
#define FLEET_SIDE 8
#define FLEET      (FLEET_SIDE * FLEET_SIDE)

static void test_formation(void **state)
{
	(void)state;
	drone_params_t p;
	drone_params_default(&p);
	static drone_t fleet[FLEET];
	double target[FLEET][3];
	int arrived_at[FLEET];
	for (int i = 0; i < FLEET; i++) {
		int r = i / FLEET_SIDE, c = i % FLEET_SIDE;
		drone_init(&fleet[i], 2.0 * c, 2.0 * r, 0);
		target[i][0] = 4.0 + 2.0 * r;
		target[i][1] = 4.0 + 2.0 * (FLEET_SIDE - 1 - c);
		target[i][2] = 5.0;
		arrived_at[i] = -1;
		assert_int_equal(drone_takeoff(&fleet[i], 3.0), 0);
	}
	double longest = 0;
	for (int i = 0; i < FLEET; i++) {
		longest = fmax(longest, dist(&fleet[i], target[i][0], target[i][1], target[i][2]));
	}
	for (int s = 1; s <= 20 * STEPS_PER_S; s++) {
		for (int i = 0; i < FLEET; i++) {
			drone_t *d = &fleet[i];
			drone_step(d, &p);
			if (drone_mode(d) == DRONE_HOLD && d->target[2] != target[i][2]) {
				assert_int_equal(
				    drone_goto(d, target[i][0], target[i][1], target[i][2]), 0);
			} else if (arrived_at[i] < 0 && d->target[2] == target[i][2] &&
			           drone_arrived(d, &p)) {
				arrived_at[i] = s;
			}
		}
	}
	int last = 0;
	for (int i = 0; i < FLEET; i++) {
		assert_true(arrived_at[i] > 0);
		last = arrived_at[i] > last ? arrived_at[i] : last;
		assert_true(dist(&fleet[i], target[i][0], target[i][1], target[i][2]) < 0.1);
	}
	printf("formation: %d drones, longest leg %.1f m, all arrived after %.3f s\n", FLEET,
	       longest, last / (double)STEPS_PER_S);
}

/* Not a check: what a step costs, 1024 drones in flight, one thread. */
#define BENCH_DRONES 1024
#define BENCH_STEPS  1000

static void test_cost(void **state)
{
	(void)state;
	drone_params_t p;
	drone_params_default(&p);
	static drone_t fleet[BENCH_DRONES];
	for (int i = 0; i < BENCH_DRONES; i++) {
		drone_init(&fleet[i], 2.0 * (i % 32), 2.0 * (i / 32), 0.01 * i);
		assert_int_equal(drone_takeoff(&fleet[i], 3.0 + 0.1 * (i % 7)), 0);
	}
	for (int s = 0; s < 2 * STEPS_PER_S; s++) {
		for (int i = 0; i < BENCH_DRONES; i++) {
			drone_step(&fleet[i], &p);
		}
	}
	for (int i = 0; i < BENCH_DRONES; i++) {
		assert_int_equal(drone_goto(&fleet[i], fleet[i].pos[0] + 3, fleet[i].pos[1] - 2, 5),
		                 0);
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int s = 0; s < BENCH_STEPS; s++) {
		for (int i = 0; i < BENCH_DRONES; i++) {
			drone_step(&fleet[i], &p);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("cost: %.1f ns per drone step (%d drones in flight, %d steps, one thread, "
	       "%zu bytes of state each)\n",
	       ns / ((double)BENCH_STEPS * BENCH_DRONES), BENCH_DRONES, BENCH_STEPS,
	       sizeof(drone_t));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_takeoff),
	    cmocka_unit_test(test_goto),
	    cmocka_unit_test(test_land),
	    cmocka_unit_test(test_deterministic),
	    cmocka_unit_test(test_handoff),
	    cmocka_unit_test(test_context_refused),
	    cmocka_unit_test(test_commands),
	    cmocka_unit_test(test_params),
	    cmocka_unit_test(test_heading_and_frames),
	    cmocka_unit_test(test_formation),
	    cmocka_unit_test(test_cost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
