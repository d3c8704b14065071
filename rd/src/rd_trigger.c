/* The boundary trigger (ExMonitor policy of RD-Light): release early by v_max * Dmax so the
 * hand-off completes near the boundary, with hysteresis and a cooldown against flapping. */
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
	st->acquired_usec = now;
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
