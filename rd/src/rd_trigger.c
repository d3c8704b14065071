/* The boundary and grid triggers (ExMonitor policies of RD-Light): release early by
 * v_max * Dmax so the hand-off completes near the boundary, with hysteresis and a cooldown
 * against flapping. */
#include <math.h>
#include <string.h>

#include "hako/rd.h"

#define STANDING_SPEED 1e-3 /* |vel| at or below this: the EU stands still */

double hako_rd_trigger_margin(const hako_rd_trigger_t *tr, hako_time_t max_delay_usec)
{
	if (tr == NULL || max_delay_usec <= 0) {
		return 0.0;
	}
	return tr->v_max * (double)max_delay_usec / 1e6;
}

void hako_rd_trigger_reset(hako_rd_trigger_state_t *st, double pos, hako_time_t now)
{
	if (st == NULL) {
		return;
	}
	st->armed = 0;
	st->acquired_at = pos;
	st->acquired_y = 0.0;
	st->acquired_usec = now;
}

void hako_rd_trigger_reset_xy(hako_rd_trigger_state_t *st, double x, double y, hako_time_t now)
{
	hako_rd_trigger_reset(st, x, now);
	if (st != NULL) {
		st->acquired_y = y;
	}
}

uint8_t hako_rd_trigger_boundary(const hako_rd_trigger_t *tr, hako_rd_trigger_state_t *st,
                                 uint8_t owner, double pos, double vel, hako_time_t now,
                                 hako_time_t max_delay_usec)
{
	if (tr == NULL || st == NULL || strcmp(tr->type, "boundary") != 0) {
		return 0;
	}
	if (!st->armed && fabs(pos - st->acquired_at) >= tr->hysteresis) {
		st->armed = 1;
	}
	if (!st->armed || fabs(vel) <= STANDING_SPEED ||
	    now - st->acquired_usec < tr->cooldown_usec) {
		return 0;
	}
	double margin = hako_rd_trigger_margin(tr, max_delay_usec);
	if (owner == tr->low_owner && vel > 0 && pos >= tr->boundary - margin) {
		return tr->high_owner;
	}
	if (owner == tr->high_owner && vel < 0 && pos <= tr->boundary + margin) {
		return tr->low_owner;
	}
	return 0;
}

/* The cell index along one axis of the boundaries b[0..n) the EU is entering: moving up, the
 * boundaries it is within margin of count as crossed; moving down, those within margin above
 * it count as not crossed (the boundary trigger's two rules). */
static size_t grid_cell(const double *b, size_t n, double pos, double vel, double margin)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int crossed = vel > STANDING_SPEED    ? pos >= b[i] - margin
		              : vel < -STANDING_SPEED ? pos > b[i] + margin
		                                      : pos >= b[i];
		k += crossed != 0;
	}
	return k;
}

uint8_t hako_rd_trigger_grid_owner(const hako_rd_trigger_t *tr, double x, double y)
{
	if (tr == NULL || strcmp(tr->type, "grid") != 0) {
		return 0;
	}
	return tr->grid_owner[grid_cell(tr->grid_y, tr->grid_ny, y, 0.0, 0.0)]
	                     [grid_cell(tr->grid_x, tr->grid_nx, x, 0.0, 0.0)];
}

uint8_t hako_rd_trigger_grid(const hako_rd_trigger_t *tr, hako_rd_trigger_state_t *st,
                             uint8_t owner, double x, double y, double vx, double vy,
                             hako_time_t now, hako_time_t max_delay_usec)
{
	if (tr == NULL || st == NULL || strcmp(tr->type, "grid") != 0) {
		return 0;
	}
	double dx = x - st->acquired_at, dy = y - st->acquired_y;
	if (!st->armed && dx * dx + dy * dy >= tr->hysteresis * tr->hysteresis) {
		st->armed = 1;
	}
	if (!st->armed || (fabs(vx) <= STANDING_SPEED && fabs(vy) <= STANDING_SPEED) ||
	    now - st->acquired_usec < tr->cooldown_usec) {
		return 0;
	}
	double margin = hako_rd_trigger_margin(tr, max_delay_usec);
	uint8_t next = tr->grid_owner[grid_cell(tr->grid_y, tr->grid_ny, y, vy, margin)]
	                             [grid_cell(tr->grid_x, tr->grid_nx, x, vx, margin)];
	return next != owner ? next : 0;
}
