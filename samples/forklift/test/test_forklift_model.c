/* The forklift model: deterministic, its context round-trips exactly, a hand-off in the middle
 * of a run changes nothing, and a context of another version or a damaged one is refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "forklift.h"
#include "forklift_model.h"
#include "hako/error.h"

#define STEPS 25000 /* a whole loop and more: every phase is visited */

static void run(forklift_state_t *s, int steps)
{
	for (int i = 0; i < steps; i++) {
		forklift_model_step(s);
	}
}

static void test_deterministic(void **state)
{
	(void)state;
	forklift_mission_t m;
	forklift_mission_default(&m);
	forklift_state_t a, b;
	forklift_model_init(&a, &m);
	forklift_model_init(&b, &m);
	for (int i = 0; i < STEPS; i++) {
		forklift_model_step(&a);
		forklift_model_step(&b);
		assert_int_equal(forklift_state_hash(&a), forklift_state_hash(&b));
	}
	assert_int_equal(a.step, STEPS);
}

/* The mission really runs: forward to 2 m, lift, back to 0, lift down, again. */
static void test_mission_phases(void **state)
{
	(void)state;
	forklift_mission_t m;
	forklift_mission_default(&m);
	forklift_state_t s;
	forklift_model_init(&s, &m);
	int seen[FORKLIFT_PHASE_COUNT] = {0};
	double xmin = 0, xmax = 0, vmax = 0, liftmax = 0;
	for (int i = 0; i < STEPS; i++) {
		forklift_model_step(&s);
		seen[s.phase] = 1;
		xmin = fmin(xmin, s.x);
		xmax = fmax(xmax, s.x);
		vmax = fmax(vmax, fabs(s.v));
		liftmax = fmax(liftmax, s.lift);
	}
	for (int p = FORKLIFT_FORWARD; p <= FORKLIFT_LIFT_DOWN; p++) {
		assert_true(seen[p]);
	}
	assert_false(seen[FORKLIFT_DONE]);
	assert_true(s.loop >= 2);
	assert_true(xmax > 1.98 && xmax < 2.05);
	assert_true(xmin > -0.05);
	assert_true(vmax <= FORKLIFT_V_MAX);
	assert_true(vmax > FORKLIFT_V_MAX * 0.99);
	assert_true(liftmax > 0.39 && liftmax < 0.42);
}

static void test_mission_loops_end(void **state)
{
	(void)state;
	forklift_mission_t m;
	forklift_mission_default(&m);
	m.loops = 1;
	forklift_state_t s;
	forklift_model_init(&s, &m);
	run(&s, 20000);
	assert_int_equal(s.phase, FORKLIFT_DONE);
	assert_int_equal(s.loop, 1);
}

static void test_pack_round_trip(void **state)
{
	(void)state;
	forklift_mission_t m;
	forklift_mission_default(&m);
	m.loops = 7;
	forklift_state_t s, r;
	forklift_model_init(&s, &m);
	run(&s, 12345); /* somewhere in the lift-up phase with non-zero PID terms */
	uint8_t buf[FORKLIFT_CONTEXT_SIZE + 16];
	size_t n = forklift_context_pack(&s, buf, sizeof(buf));
	assert_int_equal(n, FORKLIFT_CONTEXT_SIZE);
	memset(&r, 0xa5, sizeof(r));
	assert_int_equal(forklift_context_unpack(&r, buf, n), 0);
	/* Every field: the in-memory struct too, padding aside. */
	assert_int_equal(r.step, s.step);
	assert_int_equal(r.phase, s.phase);
	assert_int_equal(r.loop, s.loop);
	assert_int_equal(r.hold, s.hold);
	assert_int_equal(r.mission.loops, 7);
	assert_memory_equal(&r.home_x, &s.home_x,
	                    offsetof(forklift_state_t, lift_pid) + sizeof(forklift_pid_t) -
	                        offsetof(forklift_state_t, home_x));
	assert_memory_equal(&r.mission, &s.mission, offsetof(forklift_mission_t, loops));
	uint8_t again[FORKLIFT_CONTEXT_SIZE];
	assert_int_equal(forklift_context_pack(&r, again, sizeof(again)), n);
	assert_memory_equal(again, buf, n);
	/* Little-endian header: magic "FKLC", version, size. */
	assert_memory_equal(buf, "FKLC", 4);
	assert_int_equal(buf[4] | buf[5] << 8, FORKLIFT_CONTEXT_VERSION);
	assert_int_equal(buf[6] | buf[7] << 8, FORKLIFT_CONTEXT_SIZE);
	/* Step counter right after the header, little-endian. */
	assert_int_equal(buf[8] | buf[9] << 8, 12345 & 0xffff);
	assert_int_equal(forklift_context_pack(&s, buf, FORKLIFT_CONTEXT_SIZE - 1), 0);
}

/* A hand-off in the middle (pack, unpack into a fresh struct, go on) gives the same run bit
 * for bit, wherever it happens. */
static void test_handoff_continuity(void **state)
{
	(void)state;
	forklift_mission_t m;
	forklift_mission_default(&m);
	forklift_state_t ref;
	forklift_model_init(&ref, &m);
	run(&ref, STEPS);
	uint64_t want = forklift_state_hash(&ref);
	const int at[] = {1, 1372, 3999, 5000, 7777, 12000, 24999};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		forklift_state_t a, b;
		forklift_model_init(&a, &m);
		run(&a, at[i]);
		uint8_t buf[FORKLIFT_CONTEXT_SIZE];
		size_t n = forklift_context_pack(&a, buf, sizeof(buf));
		memset(&a, 0xff, sizeof(a)); /* the old owner's copy is gone */
		memset(&b, 0x5a, sizeof(b));
		assert_int_equal(forklift_context_unpack(&b, buf, n), 0);
		run(&b, STEPS - at[i]);
		assert_int_equal(b.step, STEPS);
		assert_int_equal(forklift_state_hash(&b), want);
		assert_true(b.x == ref.x && b.v == ref.v && b.lift == ref.lift && b.yaw == ref.yaw);
	}
}

/* The hash sees every field: change any one byte of the packed state and it changes. */
static void test_hash_sensitive(void **state)
{
	(void)state;
	forklift_mission_t m;
	forklift_mission_default(&m);
	forklift_state_t s, t;
	forklift_model_init(&s, &m);
	run(&s, 3000);
	t = s;
	t.speed_pid.integral = nextafter(t.speed_pid.integral, 1e9);
	assert_int_not_equal(forklift_state_hash(&s), forklift_state_hash(&t));
	t = s;
	t.hold++;
	assert_int_not_equal(forklift_state_hash(&s), forklift_state_hash(&t));
}

static void test_unpack_refuses(void **state)
{
	(void)state;
	forklift_mission_t m;
	forklift_mission_default(&m);
	forklift_state_t s, r;
	forklift_model_init(&s, &m);
	run(&s, 500);
	uint8_t good[FORKLIFT_CONTEXT_SIZE], buf[FORKLIFT_CONTEXT_SIZE + 8];
	size_t n = forklift_context_pack(&s, good, sizeof(good));
	forklift_model_init(&r, &m);
	uint64_t before = forklift_state_hash(&r);

	memcpy(buf, good, n);
	buf[4] = FORKLIFT_CONTEXT_VERSION + 1; /* another version */
	assert_int_equal(forklift_context_unpack(&r, buf, n), HAKO_EVERSION);
	memcpy(buf, good, n);
	buf[0] ^= 1; /* not a forklift context */
	assert_int_equal(forklift_context_unpack(&r, buf, n), HAKO_EPROTO);
	assert_int_equal(forklift_context_unpack(&r, good, n - 1), HAKO_EPROTO); /* truncated */
	assert_int_equal(forklift_context_unpack(&r, good, 3), HAKO_EPROTO);
	memcpy(buf, good, n);
	memset(buf + n, 0, 8);
	assert_int_equal(forklift_context_unpack(&r, buf, n + 8), HAKO_EPROTO); /* too long */
	memcpy(buf, good, n);
	buf[52] = 9; /* phase: after header 8, step 8, mission 4 doubles and loops */
	assert_int_equal(forklift_context_unpack(&r, buf, n), HAKO_EPROTO);
	memcpy(buf, good, n);
	memset(buf + n - 8, 0xff, 8); /* a NaN in the last double */
	assert_int_equal(forklift_context_unpack(&r, buf, n), HAKO_EPROTO);
	/* Nothing of a refused context reached the state. */
	assert_int_equal(forklift_state_hash(&r), before);
	assert_int_equal(forklift_context_unpack(&r, good, n), 0);
	assert_int_equal(forklift_state_hash(&r), forklift_state_hash(&s));
}

static void test_mission_pdu(void **state)
{
	(void)state;
	forklift_mission_t m = {1.5, 1.25, 0.5, 0.3, 4}, r;
	uint8_t pdu[128];
	size_t len = 0;
	assert_int_equal(forklift_mission_encode(&m, pdu, sizeof(pdu), &len), 0);
	assert_int_equal(len, FORKLIFT_MISSION_PDU_SIZE);
	assert_int_equal(forklift_mission_decode(pdu, len, &r), 0);
	assert_true(r.forward_m == 1.5 && r.backward_m == 1.25 && r.speed == 0.5 &&
	            r.lift_height == 0.3 && r.loops == 4);
	assert_int_equal(forklift_mission_encode(&m, pdu, 60, &len), HAKO_ETOOBIG);
	memset(pdu, 0, sizeof(pdu));
	assert_int_equal(forklift_mission_decode(pdu, sizeof(pdu), &r), HAKO_EAGAIN);
	m.speed = -1; /* out of range: refused by the reader */
	assert_int_equal(forklift_mission_encode(&m, pdu, sizeof(pdu), &len), 0);
	assert_int_equal(forklift_mission_decode(pdu, len, &r), HAKO_EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_deterministic),      cmocka_unit_test(test_mission_phases),
	    cmocka_unit_test(test_mission_loops_end),  cmocka_unit_test(test_pack_round_trip),
	    cmocka_unit_test(test_handoff_continuity), cmocka_unit_test(test_hash_sensitive),
	    cmocka_unit_test(test_unpack_refuses),     cmocka_unit_test(test_mission_pdu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
