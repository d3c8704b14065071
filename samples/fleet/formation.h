/* The fleet's formations: where drone i of n goes, in the drones' world frame (drone.h: x
 * north, y west, z up; a letter's x runs along x, its height along y), metres, the origin at
 * the middle of the field.
 *
 *  - grid: the start positions on the ground, rows of ceil(sqrt(n)) drones 1.5 m apart;
 *  - hako: the letters "HAKO" seen from above at 4 m altitude, each letter 2 m wide and 4 m
 *    tall (y), 1 m apart: drone i at the arc length (i + 1/2) L / n along the letters' strokes
 *    (L their total length), so the drones spread evenly over them;
 *  - circle: a circle at 4 m altitude whose circumference gives each drone 0.4 m (at least
 *    6 m across).
 *
 * Pure functions of (i, n): every process computes the same targets (same arithmetic, the
 * same binary), so a fleet controller and the checks of a test agree bit for bit. */
#ifndef FLEET_FORMATION_H
#define FLEET_FORMATION_H

#include <stddef.h>

#define FLEET_ALTITUDE 4.0 /* m: the formations' height */

typedef enum fleet_formation {
	FLEET_GRID = 0,
	FLEET_HAKO = 1,
	FLEET_CIRCLE = 2,
} fleet_formation_t;

/* The target of drone i (0 <= i < n) in formation f, into xyz[3]. n >= 1. */
void fleet_formation_point(fleet_formation_t f, size_t i, size_t n, double xyz[3]);

/* "grid", "hako", "circle". */
const char *fleet_formation_name(fleet_formation_t f);

#endif
