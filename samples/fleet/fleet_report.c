/* fleet-report: after a fleet run, read the hosts' trajectories (DIR/fleet-host-*.csv, written
 * by fleet-host --out DIR), check the formations and draw them.
 *
 * Checks, per formation of the mission (fleet_host.h): at the last sample before the next
 * command (17.9 s for "HAKO", 32.9 s for the circle) every drone within --tolerance of its
 * target. Prints one line per check and the drones per host; writes DIR/fleet-xy.svg, the
 * trajectories seen from above, each drone's line coloured by the host that ran it, with the
 * targets of the letters marked. Exit status: 0 when every drone of every sampled formation
 * was within tolerance, 1 otherwise, 2 on a usage error.
 *
 * A host killed during the run leaves its file's last line cut short: that line is skipped,
 * and said. Its drones have no sample from the kill until another host takes them over: at a
 * check in between they are said and not counted, provided another host flies them later. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formation.h"

#define PROG "fleet-report"

struct sample {
	double t, x, y, z;
	unsigned drone, host;
};

static struct sample *g_s;
static size_t g_n, g_cap;

static int load(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return -1;
	}
	char line[256];
	size_t lineno = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			fprintf(stderr, PROG ": %s:%zu: line too long\n", path, lineno);
			fclose(f);
			return -1;
		}
		if (strchr(line, '\n') == NULL) {
			/* fleet-host writes whole lines: one without its newline at the end was cut
			 * short by a kill, and may parse with a number cut (z=0.0 of 0.012). */
			printf(PROG
			       ": %s:%zu: the last line is cut short (its host was killed while "
			       "writing it): skipped\n",
			       path, lineno);
			break;
		}
		if (lineno == 1) {
			if (strncmp(line, "t,drone,x,y,z,host", 18) != 0) {
				fprintf(stderr, PROG ": %s:1: not a fleet-host trajectory file\n",
				        path);
				fclose(f);
				return -1;
			}
			continue;
		}
		struct sample s;
		if (sscanf(line, "%lf,%u,%lf,%lf,%lf,%u", &s.t, &s.drone, &s.x, &s.y, &s.z,
		           &s.host) != 6 ||
		    s.drone == 0 || !isfinite(s.x) || !isfinite(s.y) || !isfinite(s.z)) {
			fprintf(stderr, PROG ": %s:%zu: not a sample (t,drone,x,y,z,host)\n", path,
			        lineno);
			fclose(f);
			return -1;
		}
		if (g_n == g_cap) {
			g_cap = g_cap ? g_cap * 2 : 65536;
			struct sample *p = realloc(g_s, g_cap * sizeof(*g_s));
			if (p == NULL) {
				fclose(f);
				return -1;
			}
			g_s = p;
		}
		g_s[g_n++] = s;
	}
	fclose(f);
	return 0;
}

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};

/* Hosts by their first drone, in order of appearance. */
static unsigned g_hosts[64];
static size_t g_nhosts;

static size_t host_index(unsigned h)
{
	for (size_t i = 0; i < g_nhosts; i++) {
		if (g_hosts[i] == h) {
			return i;
		}
	}
	if (g_nhosts < 64) {
		g_hosts[g_nhosts] = h;
		return g_nhosts++;
	}
	return 63;
}

static int by_drone_time(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;
	if (x->drone != y->drone) {
		return x->drone < y->drone ? -1 : 1;
	}
	return x->t < y->t ? -1 : x->t > y->t;
}

/* The time of each host's last sample. */
static struct host_end {
	unsigned host;
	double last;
} g_ends[64];
static size_t g_nends;

static double host_last(unsigned h)
{
	for (size_t i = 0; i < g_nends; i++) {
		if (g_ends[i].host == h) {
			return g_ends[i].last;
		}
	}
	return -1;
}

static void note_host_ends(void)
{
	for (size_t i = 0; i < g_n; i++) {
		size_t k = 0;
		while (k < g_nends && g_ends[k].host != g_s[i].host) {
			k++;
		}
		if (k == g_nends && g_nends < 64) {
			g_ends[g_nends++] = (struct host_end){g_s[i].host, g_s[i].t};
		} else if (k < g_nends && g_s[i].t > g_ends[k].last) {
			g_ends[k].last = g_s[i].t;
		}
	}
}

/* Drones with no sample at time t that were being taken over from a lost host: the last
 * sample before t is from a host whose samples end before t (killed), the first after t
 * from another host. Its drones have no owner from the kill until the takeover. */
static size_t taken_over_at(double t)
{
	size_t n = 0;
	for (size_t i = 0; i < g_n;) {
		size_t j = i, before = SIZE_MAX, after = SIZE_MAX;
		int at = 0;
		for (; j < g_n && g_s[j].drone == g_s[i].drone; j++) {
			if (fabs(g_s[j].t - t) <= 1e-6) {
				at = 1;
			} else if (g_s[j].t < t) {
				before = j;
			} else if (after == SIZE_MAX) {
				after = j;
			}
		}
		n += !at && before != SIZE_MAX && after != SIZE_MAX &&
		     g_s[before].host != g_s[after].host && host_last(g_s[before].host) < t;
		i = j;
	}
	return n;
}

/* Every drone at time t within tol of its target in formation f. Prints the line. */
static int check(fleet_formation_t f, double t, size_t total, double tol)
{
	size_t seen = 0, within = 0;
	double worst = 0;
	for (size_t i = 0; i < g_n; i++) {
		if (fabs(g_s[i].t - t) > 1e-6) {
			continue;
		}
		double p[3];
		fleet_formation_point(f, g_s[i].drone - 1, total, p);
		double d = sqrt((g_s[i].x - p[0]) * (g_s[i].x - p[0]) +
		                (g_s[i].y - p[1]) * (g_s[i].y - p[1]) +
		                (g_s[i].z - p[2]) * (g_s[i].z - p[2]));
		seen++;
		within += d <= tol;
		worst = d > worst ? d : worst;
	}
	if (seen == 0) {
		printf("  %-8s not reached (the run ended before %.1f s)\n",
		       fleet_formation_name(f), t);
		return 0;
	}
	size_t taken = taken_over_at(t);
	printf("  %-8s at %.1f s: %zu of %zu drones within %.2f m of their targets (worst %.3f "
	       "m)",
	       fleet_formation_name(f), t, within, seen, tol, worst);
	if (taken > 0) {
		printf("; %zu more without a sample then, being taken over from a lost host",
		       taken);
	}
	printf("\n");
	return within == seen && seen + taken == total ? 0 : -1;
}

static int write_svg(const char *path, size_t total)
{
	double x0 = 1e9, x1 = -1e9, y0 = 1e9, y1 = -1e9;
	for (size_t i = 0; i < g_n; i++) {
		x0 = fmin(x0, g_s[i].x);
		x1 = fmax(x1, g_s[i].x);
		y0 = fmin(y0, g_s[i].y);
		y1 = fmax(y1, g_s[i].y);
	}
	const double W = 900, H = 900, M = 40;
	double span = fmax(x1 - x0, y1 - y0) + 1e-9, k = (W - 2 * M) / span;
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		return -1;
	}
	fprintf(
	    f,
	    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
	    "viewBox=\"0 0 %.0f %.0f\">\n<rect width=\"100%%\" height=\"100%%\" "
	    "fill=\"#fff\"/>\n<text x=\"%.0f\" y=\"24\" font-family=\"sans-serif\" "
	    "font-size=\"15\">Fleet of %zu drones seen from above (x north to the right), coloured "
	    "by host</text>\n",
	    W, H, W, H, M, total);
	/* One polyline per drone and host: a drone handed over changes colour where it happened. */
	size_t i = 0;
	while (i < g_n) {
		size_t j = i;
		while (j < g_n && g_s[j].drone == g_s[i].drone && g_s[j].host == g_s[i].host) {
			j++;
		}
		fprintf(f,
		        "<polyline fill=\"none\" stroke-width=\"0.7\" stroke-opacity=\"0.6\" "
		        "stroke=\"%s\" points=\"",
		        palette[host_index(g_s[i].host) % 8]);
		/* From the drone's previous sample (the other host's last), so the line is whole.
		 */
		size_t from = i > 0 && g_s[i - 1].drone == g_s[i].drone ? i - 1 : i;
		for (size_t k2 = from; k2 < j; k2++) {
			fprintf(f, "%.1f,%.1f ", M + (g_s[k2].x - x0) * k,
			        H - M - (g_s[k2].y - y0) * k);
		}
		fputs("\"/>\n", f);
		i = j;
	}
	for (size_t d = 0; d < total; d++) {
		double p[3];
		fleet_formation_point(FLEET_HAKO, d, total, p);
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.5\" fill=\"#000\"/>\n",
		        M + (p[0] - x0) * k, H - M - (p[1] - y0) * k);
	}
	for (size_t h = 0; h < g_nhosts; h++) {
		fprintf(f,
		        "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"4\" fill=\"%s\"/><text "
		        "x=\"%.0f\" y=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">host "
		        "%u</text>\n",
		        M + 120.0 * (double)h, H - 16, palette[h % 8], M + 120.0 * (double)h + 20,
		        H - 11, g_hosts[h]);
	}
	fputs("</svg>\n", f);
	return fclose(f);
}

int main(int argc, char **argv)
{
	const char *dir = ".";
	double tol = 0.1;
	static const struct option longopts[] = {{"dir", required_argument, NULL, 'd'},
	                                         {"tolerance", required_argument, NULL, 't'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 't': tol = atof(optarg); break;
		case 'h': printf("usage: " PROG " [--dir DIR] [--tolerance M]\n"); return 0;
		default: fprintf(stderr, "usage: " PROG " [--dir DIR] [--tolerance M]\n"); return 2;
		}
	}
	if (optind < argc || !(tol > 0)) {
		fprintf(stderr, "usage: " PROG " [--dir DIR] [--tolerance M]\n");
		return 2;
	}
	char pattern[4200];
	snprintf(pattern, sizeof(pattern), "%s/fleet-host-*.csv", dir);
	glob_t g;
	if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc == 0) {
		fprintf(stderr, PROG ": no %s\n", pattern);
		return 1;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		if (load(g.gl_pathv[i]) != 0) {
			globfree(&g);
			return 1;
		}
	}
	globfree(&g);
	qsort(g_s, g_n, sizeof(*g_s), by_drone_time);
	note_host_ends();
	size_t total = 0;
	for (size_t i = 0; i < g_n; i++) {
		total = g_s[i].drone > total ? g_s[i].drone : total;
		host_index(g_s[i].host);
	}
	size_t per_host[64] = {0};
	for (size_t i = 0; i < g_n; i++) {
		if (i == 0 || g_s[i].drone != g_s[i - 1].drone) {
			per_host[host_index(g_s[i].host)]++;
		}
	}
	printf("fleet: %zu drones on %zu host(s), at the start:", total, g_nhosts);
	for (size_t h = 0; h < g_nhosts; h++) {
		printf(" %zu on host %u;", per_host[h], g_hosts[h]);
	}
	printf("\n");
	int bad = check(FLEET_HAKO, 17.9, total, tol) != 0;
	bad |= check(FLEET_CIRCLE, 32.9, total, tol) != 0;
	/* The last sample: landed once the mission is over (the land command comes at 33 s). */
	double last = 0;
	for (size_t i = 0; i < g_n; i++) {
		last = g_s[i].t > last ? g_s[i].t : last;
	}
	size_t on_ground = 0, at_last = 0;
	for (size_t i = 0; i < g_n; i++) {
		if (fabs(g_s[i].t - last) < 1e-6) {
			at_last++;
			on_ground += g_s[i].z <= 0.001;
		}
	}
	printf("  landed   at %.1f s: %zu of %zu drones on the ground\n", last, on_ground, at_last);
	if (last >= 38.0 && on_ground != total) {
		bad = 1;
	}
	char svg[4200];
	snprintf(svg, sizeof(svg), "%s/fleet-xy.svg", dir);
	if (write_svg(svg, total) != 0) {
		fprintf(stderr, PROG ": %s: %s\n", svg, strerror(errno));
		return 1;
	}
	printf("%s\n", svg);
	free(g_s);
	return bad ? 1 : 0;
}
