/* SVG plot of the forklift's x over world time. See forklift_plot.h. */
#include "forklift_plot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define W            960.0
#define H            590.0
#define PLOT_L       78.0
#define PLOT_R       930.0
#define PLOT_T       96.0
#define PLOT_B       480.0
#define MAX_PTS      2400 /* points per plot at most: the line stays smooth, the file small */
#define FONT         "DejaVu Sans, Helvetica, Arial, sans-serif"
#define C_NODE_A     "#1f6fb4"
#define C_NODE_B     "#e8730c"
#define C_OTHER      "#7a4fb0"
#define C_BAND       "#f2c230"
#define C_TEXT       "#222"
#define C_MUTED      "#666"
#define C_GRID       "#e6e6e6"
#define C_LIFT       "#8c8c8c"
#define LIFT_OPACITY 0.22

struct scale {
	double t0, t1; /* seconds */
	double x0, x1; /* metres */
};

static double px(const struct scale *s, double t)
{
	return PLOT_L + (t - s->t0) / (s->t1 - s->t0) * (PLOT_R - PLOT_L);
}

static double py(const struct scale *s, double x)
{
	return PLOT_B - (x - s->x0) / (s->x1 - s->x0) * (PLOT_B - PLOT_T);
}

/* 1, 2 or 5 times a power of ten, giving about `want` intervals over range. */
static double nice_step(double range, int want)
{
	double raw = range / want;
	double p = pow(10.0, floor(log10(raw)));
	double f = raw / p;
	return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * p;
}

static const char *node_color(const forklift_plot_t *p, uint8_t node)
{
	return node == p->nodes[0] ? C_NODE_A : node == p->nodes[1] ? C_NODE_B : C_OTHER;
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		default: fputc(*s, f); break;
		}
	}
}

static void axes(FILE *f, const struct scale *s)
{
	double ts = nice_step(s->t1 - s->t0, 10);
	double xs = nice_step(s->x1 - s->x0, 6);
	fprintf(f, "<g font-family=\"%s\" font-size=\"12\" fill=\"%s\">\n", FONT, C_MUTED);
	for (double t = ceil(s->t0 / ts) * ts; t <= s->t1 + 1e-9; t += ts) {
		double x = px(s, t);
		fprintf(f,
		        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n"
		        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n"
		        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
		        x, PLOT_T, x, PLOT_B, C_GRID, x, PLOT_B, x, PLOT_B + 5, C_MUTED, x,
		        PLOT_B + 20, fabs(t) < 1e-9 ? 0.0 : t);
	}
	for (double v = ceil(s->x0 / xs) * xs; v <= s->x1 + 1e-9; v += xs) {
		double y = py(s, v);
		fprintf(f,
		        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n"
		        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n"
		        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n",
		        PLOT_L, y, PLOT_R, y, C_GRID, PLOT_L - 5, y, PLOT_L, y, C_MUTED, PLOT_L - 9,
		        y + 4, xs < 0.1 ? 2 : 1, fabs(v) < 1e-9 ? 0.0 : v);
	}
	fprintf(f,
	        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
	        "stroke=\"#999\"/>\n",
	        PLOT_L, PLOT_T, PLOT_R - PLOT_L, PLOT_B - PLOT_T);
	fprintf(f,
	        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"13\" "
	        "fill=\"%s\">world time (s)</text>\n",
	        (PLOT_L + PLOT_R) / 2, PLOT_B + 42, C_TEXT);
	fprintf(f,
	        "<text transform=\"translate(24 %.1f) rotate(-90)\" text-anchor=\"middle\" "
	        "font-size=\"13\" fill=\"%s\">x (m)</text>\n",
	        (PLOT_T + PLOT_B) / 2, C_TEXT);
	fputs("</g>\n", f);
}

static void band(FILE *f, const struct scale *s, const forklift_plot_t *p)
{
	double top = py(s, p->boundary + p->margin);
	double bottom = py(s, p->boundary - p->margin);
	if (bottom - top < 2.0) { /* keep a tiny margin visible */
		double mid = (top + bottom) / 2;
		top = mid - 1.0;
		bottom = mid + 1.0;
	}
	fprintf(f,
	        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
	        "fill-opacity=\"0.28\"/>\n",
	        PLOT_L, top, PLOT_R - PLOT_L, bottom - top, C_BAND);
	double y = py(s, p->boundary);
	fprintf(f,
	        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#8a6d00\" "
	        "stroke-width=\"1.2\" stroke-dasharray=\"7 4\"/>\n",
	        PLOT_L, y, PLOT_R, y);
}

/* The line, one polyline per run of steps by the same node, thinned to MAX_PTS points. */
static void trajectory(FILE *f, const struct scale *s, const forklift_plot_t *p)
{
	const forklift_run_t *run = p->run;
	size_t every = run->steps / MAX_PTS + 1;
	size_t start = 0;
	while (start < run->steps) {
		size_t end = start;
		while (end + 1 < run->steps && run->rec[end + 1].node == run->rec[start].node) {
			end++;
		}
		fprintf(f,
		        "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2.4\" "
		        "stroke-linejoin=\"round\" stroke-linecap=\"round\" points=\"",
		        node_color(p, run->rec[start].node));
		/* Begin at the previous segment's last point so the line has no hole. */
		size_t first = start > 0 ? start - 1 : start;
		for (size_t k = first; k <= end; k++) {
			if (k != first && k != end && k % every != 0) {
				continue;
			}
			const forklift_record_t *r = &run->rec[k];
			fprintf(f, "%.1f,%.1f ", px(s, r->model_usec / 1e6), py(s, r->x));
		}
		fputs("\"/>\n", f);
		start = end + 1;
	}
}

static void handoffs(FILE *f, const struct scale *s, const forklift_plot_t *p)
{
	const forklift_run_t *run = p->run;
	fprintf(f, "<g font-family=\"%s\" font-size=\"11\">\n", FONT);
	double last_label = -1e9;
	int row = 0;
	for (size_t i = 0; i < run->handoff_count; i++) {
		const forklift_handoff_t *h = &run->handoffs[i];
		double x = px(s, h->t_usec / 1e6);
		double y = py(s, h->x);
		const char *c = node_color(p, h->to);
		fprintf(f,
		        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
		        "stroke-width=\"1\" stroke-dasharray=\"2 3\" opacity=\"0.8\"/>\n",
		        x, PLOT_T + 16, x, PLOT_B, c);
		fprintf(f,
		        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#fff\" stroke=\"%s\" "
		        "stroke-width=\"2.2\"/>\n",
		        x, y, c);
		/* Labels of close hand-offs go on alternate rows. */
		row = x - last_label < 34 ? !row : 0;
		last_label = x;
		fprintf(f,
		        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"%s\" "
		        "font-weight=\"bold\">%s%u</text>\n",
		        x, PLOT_T + 12 - row * 11.0, c, h->reclaim ? "r" : "e", h->epoch);
	}
	fputs("</g>\n", f);
}

/* Two rows under the axis label: who owns the EU and the fork; then the marks. */
static void legend(FILE *f, const forklift_plot_t *p)
{
	double lx = PLOT_L, ly = H - 38;
	fprintf(f, "<g font-family=\"%s\" font-size=\"12\" fill=\"%s\">\n", FONT, C_TEXT);
	for (int i = 0; i < 2; i++) {
		fprintf(f,
		        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
		        "stroke-width=\"3\"/>\n<text x=\"%.1f\" y=\"%.1f\">x while forklift-%u "
		        "(node %u) owns the EU</text>\n",
		        lx, ly - 4, lx + 26, ly - 4, i == 0 ? C_NODE_A : C_NODE_B, lx + 32, ly,
		        p->nodes[i], p->nodes[i]);
		lx += 310;
	}
	fprintf(f,
	        "<rect x=\"%.1f\" y=\"%.1f\" width=\"26\" height=\"12\" fill=\"%s\" "
	        "fill-opacity=\"%.2f\" stroke=\"%s\"/>\n<text x=\"%.1f\" y=\"%.1f\">fork "
	        "height (m)</text>\n",
	        lx, ly - 10, C_LIFT, LIFT_OPACITY, C_LIFT, lx + 32, ly);
	lx = PLOT_L;
	ly = H - 16;
	fprintf(f,
	        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#fff\" stroke=\"#555\" "
	        "stroke-width=\"2\"/>\n<text x=\"%.1f\" y=\"%.1f\">hand-off: %s; "
	        "e<tspan font-style=\"italic\">n</tspan> = the new epoch</text>\n",
	        lx + 13, ly - 4, lx + 32, ly,
	        p->commit_points ? "the commit point, the old owner's last step"
	                         : "the old owner's last step");
	lx += 410;
	if (p->no_boundary) {
		fputs("</g>\n", f);
		return;
	}
	fprintf(f,
	        "<rect x=\"%.1f\" y=\"%.1f\" width=\"26\" height=\"12\" fill=\"%s\" "
	        "fill-opacity=\"0.35\"/>\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
	        "stroke=\"#8a6d00\" stroke-dasharray=\"7 4\"/>\n"
	        "<text x=\"%.1f\" y=\"%.1f\">boundary x = %.2f m &#177; margin %.1f cm "
	        "(v_max &#183; Dmax)</text>\n",
	        lx, ly - 10, C_BAND, lx, ly - 4, lx + 26, ly - 4, lx + 32, ly, p->boundary,
	        p->margin * 100);
	fputs("</g>\n", f);
}

/* The fork's height as a grey area over y = 0, on the same metre axis. */
static void lift(FILE *f, const struct scale *s, const forklift_plot_t *p)
{
	const forklift_run_t *run = p->run;
	if (run->steps == 0) {
		return;
	}
	size_t every = run->steps / MAX_PTS + 1;
	double y0 = py(s, 0.0);
	fprintf(f,
	        "<polygon fill=\"%s\" fill-opacity=\"%.2f\" stroke=\"%s\" stroke-width=\"1\" "
	        "stroke-linejoin=\"round\" points=\"%.1f,%.1f ",
	        C_LIFT, LIFT_OPACITY, C_LIFT, px(s, run->rec[0].model_usec / 1e6), y0);
	for (size_t k = 0; k < run->steps; k++) {
		if (k % every == 0 || k + 1 == run->steps) {
			const forklift_record_t *r = &run->rec[k];
			fprintf(f, "%.1f,%.1f ", px(s, r->model_usec / 1e6), py(s, r->lift));
		}
	}
	fprintf(f, "%.1f,%.1f\"/>\n", px(s, run->rec[run->steps - 1].model_usec / 1e6), y0);
}

int forklift_plot_svg(const char *path, const forklift_plot_t *p)
{
	const forklift_run_t *run = p->run;
	struct scale s = {0.0, 1.0, 0.0, 1.0};
	if (run->steps > 0) {
		s.t1 = run->rec[run->steps - 1].model_usec / 1e6;
		double lo = p->boundary - p->margin, hi = p->boundary + p->margin;
		if (p->no_boundary) {
			lo = hi = run->rec[0].x;
		}
		for (size_t k = 0; k < run->steps; k++) {
			lo = fmin(lo, run->rec[k].x);
			hi = fmax(hi, run->rec[k].x);
		}
		/* Bounds on half ticks: room around the line, not a whole empty tick. */
		double pad = (hi - lo) * 0.04 + 1e-3;
		double half = nice_step(hi - lo + 2 * pad, 6) / 2;
		s.x0 = floor((lo - pad) / half) * half;
		s.x1 = ceil((hi + pad) / half) * half;
	}
	if (s.t1 <= s.t0) {
		s.t1 = s.t0 + 1.0;
	}
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		return -1;
	}
	fprintf(f,
	        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
	        "viewBox=\"0 0 %.0f %.0f\">\n"
	        "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
	        W, H, W, H);
	fprintf(f,
	        "<text x=\"%.1f\" y=\"32\" font-family=\"%s\" font-size=\"19\" "
	        "font-weight=\"bold\" fill=\"%s\">",
	        PLOT_L, FONT, C_TEXT);
	xml_text(f, p->title);
	fprintf(f,
	        "</text>\n<text x=\"%.1f\" y=\"56\" font-family=\"%s\" font-size=\"13\" "
	        "fill=\"%s\">",
	        PLOT_L, FONT, C_MUTED);
	xml_text(f, p->figures);
	fputs("</text>\n", f);
	if (!p->no_boundary) {
		band(f, &s, p);
	}
	axes(f, &s);
	lift(f, &s, p);
	trajectory(f, &s, p);
	handoffs(f, &s, p);
	legend(f, p);
	fputs("</svg>\n", f);
	int bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		return -1;
	}
	return 0;
}
