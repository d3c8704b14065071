/* The SVG plot of forklift-report: x over world time, the line coloured by the node that ran
 * each step, hand-offs marked with their epoch, the boundary and its margin band shaded. */
#ifndef FORKLIFT_PLOT_H
#define FORKLIFT_PLOT_H

#include "forklift_records.h"

typedef struct forklift_plot {
	const forklift_run_t *run;
	double boundary;     /* m */
	double margin;       /* m: v_max * Dmax */
	const char *title;   /* top line */
	const char *figures; /* second line: the key figures */
	uint8_t nodes[2];    /* the two candidate nodes, in legend order */
	int no_boundary;     /* RD-Full's timetable: no boundary band, no margin */
	int commit_points;   /* RD-Full: a hand-off is at the conductor's commit point */
} forklift_plot_t;

/* Write the plot to path. 0, or -1 with errno set. */
int forklift_plot_svg(const char *path, const forklift_plot_t *p);

#endif
