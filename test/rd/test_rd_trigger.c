/* The grid trigger (hako_rd_trigger_grid): cells of a 2 x 2 and a 3 x 1 grid, each edge and
 * corner crossed both ways with the release margin, hysteresis, cooldown, a standing EU, no
 * ping-pong of an EU wobbling on an edge, and the same answers as the boundary trigger for a
 * grid of one boundary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hako/rd.h"

static const hako_time_t dmax = 100000; /* margin v_max * Dmax = 0.05 */

/* x = [0], y = [0]: node 1 south-west, 2 south-east, 3 north-west, 4 north-east (x north is
 * "up" in x here: the grid does not care which way the world frame points). */
static hako_rd_trigger_t grid2x2(void)
{
	hako_rd_trigger_t tr = {.type = "grid",
	                        .v_max = 0.5,
	                        .hysteresis = 0.05,
	                        .cooldown_usec = 100000,
	                        .grid_nx = 1,
	                        .grid_ny = 1,
	                        .grid_x = {0.0},
	                        .grid_y = {0.0},
	                        .grid_owner = {{1, 2}, {3, 4}}};
	return tr;
}

/* An armed state: the owner got the EU far away and long ago. */
static hako_rd_trigger_state_t armed(void)
{
	hako_rd_trigger_state_t st;
	hako_rd_trigger_reset_xy(&st, -100.0, -100.0, 0);
	return st;
}

static uint8_t ask(const hako_rd_trigger_t *tr, uint8_t owner, double x, double y, double vx,
                   double vy)
{
	hako_rd_trigger_state_t st = armed();
	return hako_rd_trigger_grid(tr, &st, owner, x, y, vx, vy, 1000000, dmax);
}

static void test_cells(void **state)
{
	(void)state;
	hako_rd_trigger_t tr = grid2x2();
	assert_int_equal(hako_rd_trigger_grid_owner(&tr, -1.0, -1.0), 1);
	assert_int_equal(hako_rd_trigger_grid_owner(&tr, 1.0, -1.0), 2);
	assert_int_equal(hako_rd_trigger_grid_owner(&tr, -1.0, 1.0), 3);
	assert_int_equal(hako_rd_trigger_grid_owner(&tr, 1.0, 1.0), 4);
	/* a boundary belongs to the cell above it, as the boundary trigger's high side */
	assert_int_equal(hako_rd_trigger_grid_owner(&tr, 0.0, 0.0), 4);
	assert_int_equal(hako_rd_trigger_grid_owner(&tr, -1e-9, 0.0), 3);
	hako_rd_trigger_t line = {
	    .type = "grid", .grid_nx = 2, .grid_x = {-2.0, 2.0}, .grid_owner = {{1, 2, 3}}};
	assert_int_equal(hako_rd_trigger_grid_owner(&line, -5.0, 7.0), 1);
	assert_int_equal(hako_rd_trigger_grid_owner(&line, 0.0, -7.0), 2);
	assert_int_equal(hako_rd_trigger_grid_owner(&line, 2.0, 0.0), 3);
	hako_rd_trigger_t manual = {.type = "manual"};
	assert_int_equal(hako_rd_trigger_grid_owner(&manual, 0.0, 0.0), 0);
}

/* Each of the four edges, both ways: released within the margin (0.05) of the edge while
 * moving across it, not at 0.06, not when moving away, not by a node that does not own the
 * side it is on. */
static void test_edges(void **state)
{
	(void)state;
	hako_rd_trigger_t tr = grid2x2();
	static const struct {
		uint8_t from, to;
		double x, y, vx, vy; /* at the edge minus the margin, moving across */
	} cases[] = {
	    {1, 2, -0.05, -1.0, 0.5, 0.0}, {2, 1, 0.05, -1.0, -0.5, 0.0},
	    {3, 4, -0.05, 1.0, 0.5, 0.0},  {4, 3, 0.05, 1.0, -0.5, 0.0},
	    {1, 3, -1.0, -0.05, 0.0, 0.5}, {3, 1, -1.0, 0.05, 0.0, -0.5},
	    {2, 4, 1.0, -0.05, 0.0, 0.5},  {4, 2, 1.0, 0.05, 0.0, -0.5},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		double x = cases[k].x, y = cases[k].y, vx = cases[k].vx, vy = cases[k].vy;
		double fx = vx != 0 ? (vx > 0 ? -0.01 : 0.01) : 0.0; /* 0.06 from the edge */
		double fy = vy != 0 ? (vy > 0 ? -0.01 : 0.01) : 0.0;
		assert_int_equal(ask(&tr, cases[k].from, x, y, vx, vy), cases[k].to);
		assert_int_equal(ask(&tr, cases[k].from, x + fx, y + fy, vx, vy), 0);
		assert_int_equal(ask(&tr, cases[k].from, x, y, -vx, -vy), 0);
		/* the other side's owner keeps it while it comes */
		assert_int_equal(ask(&tr, cases[k].to, x, y, vx, vy), 0);
	}
}

static void test_corners(void **state)
{
	(void)state;
	hako_rd_trigger_t tr = grid2x2();
	/* diagonally into the corner: straight to the diagonal cell's owner */
	assert_int_equal(ask(&tr, 1, -0.04, -0.04, 0.3, 0.3), 4);
	assert_int_equal(ask(&tr, 4, 0.04, 0.04, -0.3, -0.3), 1);
	assert_int_equal(ask(&tr, 2, 0.04, -0.04, -0.3, 0.3), 3);
	assert_int_equal(ask(&tr, 3, -0.04, 0.04, 0.3, -0.3), 2);
	/* near the corner but within the margin along one axis only */
	assert_int_equal(ask(&tr, 1, -0.04, -0.5, 0.3, 0.3), 2);
	assert_int_equal(ask(&tr, 1, -0.5, -0.04, 0.3, 0.3), 3);
	/* moving along x only: the y cell is where it is */
	assert_int_equal(ask(&tr, 1, -0.04, -0.04, 0.3, 0.0), 2);
	/* past the corner already, owned by the wrong node: to the cell's owner */
	assert_int_equal(ask(&tr, 2, 0.5, 0.5, 0.3, 0.3), 4);
}

static void test_standing_hysteresis_cooldown(void **state)
{
	(void)state;
	hako_rd_trigger_t tr = grid2x2();
	hako_rd_trigger_state_t st = armed();
	/* standing: never released, even in another node's cell */
	assert_int_equal(
	    hako_rd_trigger_grid(&tr, &st, 1, 1.0, 1.0, 0.0005, -0.0005, 1000000, dmax), 0);
	/* node 2 got the EU at (0.02, -1) at 1 s, moving on +x */
	hako_rd_trigger_reset_xy(&st, 0.02, -1.0, 1000000);
	/* turning back within the hysteresis: kept */
	assert_int_equal(hako_rd_trigger_grid(&tr, &st, 2, 0.03, -1.0, -0.5, 0.0, 1200000, dmax),
	                 0);
	/* 0.05 away (the hysteresis) but still in the cooldown: armed, kept */
	assert_int_equal(hako_rd_trigger_grid(&tr, &st, 2, 0.02, -0.95, -0.5, 0.0, 1050000, dmax),
	                 0);
	assert_int_equal(st.armed, 1);
	/* after the cooldown, moving back across: released */
	assert_int_equal(hako_rd_trigger_grid(&tr, &st, 2, 0.05, -0.95, -0.5, 0.0, 1100000, dmax),
	                 1);
	/* another trigger type: nothing */
	hako_rd_trigger_t manual = {.type = "manual"};
	assert_int_equal(hako_rd_trigger_grid(&manual, &st, 2, 0.0, 0.0, -0.5, 0.0, 2000000, dmax),
	                 0);
}

/* An EU flown in steps of 1 ms by whichever node owns it; the new owner gets it at once (the
 * hand-off itself is not modelled) and resets its state there. The hand-offs counted. */
static int fly(const hako_rd_trigger_t *tr, double (*path)(int64_t, double *, double *),
               int64_t steps)
{
	double x, y, vx = 0, vy = 0;
	path(0, &x, &y);
	uint8_t owner = hako_rd_trigger_grid_owner(tr, x, y);
	hako_rd_trigger_state_t st;
	hako_rd_trigger_reset_xy(&st, x, y, 0);
	int handoffs = 0;
	for (int64_t t = 1; t <= steps; t++) {
		double px = x, py = y;
		path(t, &x, &y);
		vx = (x - px) * 1000.0;
		vy = (y - py) * 1000.0;
		uint8_t next = hako_rd_trigger_grid(tr, &st, owner, x, y, vx, vy, t * 1000, dmax);
		if (next != 0) {
			owner = next;
			hako_rd_trigger_reset_xy(&st, x, y, t * 1000);
			handoffs++;
		}
	}
	return handoffs;
}

/* Up x at about 1 m/s to 0.01 m past the edge, then a wobble of +-0.02 m (less than the
 * hysteresis) there, period 40 ms: one hand-off, then none. */
static double wobble(int64_t t, double *x, double *y)
{
	*y = -1.0;
	if (t < 1000) {
		*x = -1.0 + 0.00101 * (double)t;
		return 0;
	}
	int64_t ph = t % 40;
	double tri = (ph < 20 ? (double)ph : (double)(40 - ph)) / 20.0; /* 0..1..0 */
	*x = 0.01 + 0.02 * (2.0 * tri - 1.0);
	return 0;
}

/* Round the corner: a square of side 2 around (0, 0) at 1 m/s, 8 s a lap. */
static double square(int64_t t, double *x, double *y)
{
	double s = (double)(t % 8000) / 1000.0; /* 0..8 */
	if (s < 2) {
		*x = -1.0 + s, *y = -1.0;
	} else if (s < 4) {
		*x = 1.0, *y = -1.0 + (s - 2);
	} else if (s < 6) {
		*x = 1.0 - (s - 4), *y = 1.0;
	} else {
		*x = -1.0, *y = 1.0 - (s - 6);
	}
	return 0;
}

static void test_no_ping_pong(void **state)
{
	(void)state;
	hako_rd_trigger_t tr = grid2x2();
	tr.hysteresis = 0.1;
	assert_int_equal(fly(&tr, wobble, 5000), 1);
	/* four edges a lap, two laps: eight hand-offs, each edge once a lap */
	assert_int_equal(fly(&tr, square, 16000), 8);
}

/* A grid of one x boundary is the boundary trigger. */
static void test_same_as_boundary(void **state)
{
	(void)state;
	hako_rd_trigger_t b = {.type = "boundary",
	                       .boundary = 1.0,
	                       .v_max = 0.5,
	                       .hysteresis = 0.05,
	                       .cooldown_usec = 100000,
	                       .low_owner = 1,
	                       .high_owner = 2};
	hako_rd_trigger_t g = {.type = "grid",
	                       .v_max = 0.5,
	                       .hysteresis = 0.05,
	                       .cooldown_usec = 100000,
	                       .grid_nx = 1,
	                       .grid_x = {1.0},
	                       .grid_owner = {{1, 2}}};
	static const double vels[] = {-0.5, -0.0005, 0.0, 0.0005, 0.5};
	int n = 0;
	for (int owner = 1; owner <= 2; owner++) {
		for (int k = 0; k <= 100; k++) {
			double x = 0.9 + 0.002 * k;
			for (size_t v = 0; v < sizeof(vels) / sizeof(vels[0]); v++) {
				if (x < 1.0 && owner == 2 && vels[v] > 0) {
					continue; /* the boundary trigger never releases these */
				}
				if (x >= 1.0 && owner == 1 && vels[v] < 0) {
					continue;
				}
				hako_rd_trigger_state_t sb, sg;
				hako_rd_trigger_reset(&sb, -100.0, 0);
				hako_rd_trigger_reset_xy(&sg, -100.0, 0.0, 0);
				uint8_t rb = hako_rd_trigger_boundary(&b, &sb, (uint8_t)owner, x,
				                                      vels[v], 1000000, dmax);
				uint8_t rg = hako_rd_trigger_grid(&g, &sg, (uint8_t)owner, x, 0.0,
				                                  vels[v], 0.0, 1000000, dmax);
				assert_int_equal(rb, rg);
				n += rb != 0;
			}
		}
	}
	assert_true(n > 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cells),
	    cmocka_unit_test(test_edges),
	    cmocka_unit_test(test_corners),
	    cmocka_unit_test(test_standing_hysteresis_cooldown),
	    cmocka_unit_test(test_no_ping_pong),
	    cmocka_unit_test(test_same_as_boundary),
	};
	return cmocka_run_group_tests_name("rd_trigger", tests, NULL, NULL);
}
