/* The fleet's formations (formation.h). */
#include "formation.h"

#include <math.h>

/* A stroke of a letter, in the letter's frame: x 0..2 m, y 0..4 m. */
struct stroke {
	double x0, y0, x1, y1;
};

#define O_SEGMENTS 16
#define LETTER_GAP 3.0 /* m from one letter's left edge to the next one's */
#define LETTERS    4

/* H, A, K as straight strokes; O is an ellipse made of O_SEGMENTS chords (built on first use). */
static const struct stroke H[] = {{0, 0, 0, 4}, {2, 0, 2, 4}, {0, 2, 2, 2}};
static const struct stroke A[] = {{0, 0, 1, 4}, {1, 4, 2, 0}, {0.5, 2, 1.5, 2}};
static const struct stroke K[] = {{0, 0, 0, 4}, {0, 2, 2, 4}, {0, 2, 2, 0}};

static size_t letter_strokes(int letter, struct stroke *out)
{
	const struct stroke *src = letter == 0 ? H : letter == 1 ? A : K;
	if (letter == 3) {
		for (int k = 0; k < O_SEGMENTS; k++) {
			double a0 = 2 * M_PI * k / O_SEGMENTS, a1 = 2 * M_PI * (k + 1) / O_SEGMENTS;
			out[k] = (struct stroke){1 + cos(a0), 2 + 2 * sin(a0), 1 + cos(a1),
			                         2 + 2 * sin(a1)};
		}
		return O_SEGMENTS;
	}
	for (int k = 0; k < 3; k++) {
		out[k] = src[k];
	}
	return 3;
}

static double stroke_len(const struct stroke *s)
{
	return hypot(s->x1 - s->x0, s->y1 - s->y0);
}

static void hako_point(size_t i, size_t n, double xyz[3])
{
	struct stroke st[LETTERS][O_SEGMENTS];
	size_t count[LETTERS];
	double total = 0;
	for (int l = 0; l < LETTERS; l++) {
		count[l] = letter_strokes(l, st[l]);
		for (size_t k = 0; k < count[l]; k++) {
			total += stroke_len(&st[l][k]);
		}
	}
	double s = ((double)i + 0.5) * total / (double)n;
	/* The field's middle: the four letters span 3 * LETTER_GAP + 2 m by 4 m. */
	const double ox = -(3 * LETTER_GAP + 2) / 2, oy = -2;
	for (int l = 0; l < LETTERS; l++) {
		for (size_t k = 0; k < count[l]; k++) {
			const struct stroke *p = &st[l][k];
			double len = stroke_len(p);
			int last = l == LETTERS - 1 && k == count[l] - 1;
			if (s <= len || last) {
				double u = len > 0 ? s / len : 0;
				u = u > 1 ? 1 : u;
				xyz[0] = ox + l * LETTER_GAP + p->x0 + u * (p->x1 - p->x0);
				xyz[1] = oy + p->y0 + u * (p->y1 - p->y0);
				xyz[2] = FLEET_ALTITUDE;
				return;
			}
			s -= len;
		}
	}
}

void fleet_formation_point(fleet_formation_t f, size_t i, size_t n, double xyz[3])
{
	if (n == 0) {
		n = 1;
	}
	if (f == FLEET_HAKO) {
		hako_point(i, n, xyz);
		return;
	}
	if (f == FLEET_CIRCLE) {
		double r = 0.4 * (double)n / (2 * M_PI);
		r = r < 3 ? 3 : r;
		double a = 2 * M_PI * (double)i / (double)n;
		xyz[0] = r * cos(a);
		xyz[1] = r * sin(a);
		xyz[2] = FLEET_ALTITUDE;
		return;
	}
	size_t cols = (size_t)ceil(sqrt((double)n));
	size_t rows = (n + cols - 1) / cols;
	const double gap = 1.5;
	xyz[0] = ((double)(i % cols) - (double)(cols - 1) / 2) * gap;
	xyz[1] = ((double)(i / cols) - (double)(rows - 1) / 2) * gap;
	xyz[2] = 0;
}

const char *fleet_formation_name(fleet_formation_t f)
{
	return f == FLEET_HAKO ? "hako" : f == FLEET_CIRCLE ? "circle" : "grid";
}
