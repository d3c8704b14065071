/* fleet-host: one asset process stepping drones [first, first + count) of a fleet of `total`
 * at 1 ms (fleet_host.h), writing every drone's PDUs every step, with the fleet's mission.
 *
 * It prints one status line a second of wall time (world time, real-time factor, step time
 * p50 / p99, CPU) and a summary at the end; with --out DIR it writes its drones' positions every
 * 100 ms of world time to DIR/fleet-host-<first>.csv (t,drone,x,y,z,host), which fleet-report
 * draws. Exit status: 0 after the run stopped (or SIGINT / SIGTERM), 1 on an error, 2 on a
 * usage error. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "fleet_host.h"
#include "hako/domain.h"

#define PROG         "fleet-host"
#define SAMPLE_EVERY 100000 /* us of world time between two trajectory samples */
#define WINDOW       4096   /* step times kept for the status line's percentiles */

static volatile sig_atomic_t g_quit;

static void on_quit(int sig)
{
	(void)sig;
	g_quit = 1;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* p50 and p99 of the last n step times (ns), in ms. */
static void percentiles(const uint32_t *w, size_t n, double *p50, double *p99)
{
	static uint32_t tmp[WINDOW];
	memcpy(tmp, w, n * sizeof(*w));
	qsort(tmp, n, sizeof(*tmp), cmp_u32);
	*p50 = n > 0 ? tmp[n / 2] / 1e6 : 0;
	*p99 = n > 0 ? tmp[(n * 99) / 100] / 1e6 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG
	           " --drones TOTAL [--first K] [--count N] [--asset NAME] [--out DIR]\n"
	           "  --drones TOTAL  the fleet's size (the mission's formations depend on it)\n"
	           "  --first K       the first drone this host steps (default 0)\n"
	           "  --count N       how many (default: TOTAL - K)\n"
	           "  --asset NAME    its asset name (default fleet-host-K)\n"
	           "  --out DIR       write DIR/fleet-host-K.csv: its drones every 100 ms\n"
	           "  --final FILE    at the end, write its drones' states (their contexts, in\n"
	           "                  order): runs with other splits of the fleet compare them\n"
	           "The domain is $HAKO_DOMAIN (hako-launch sets it).\n");
}

int main(int argc, char **argv)
{
	long total = -1, first = 0, count = -1;
	const char *asset = NULL, *out = NULL, *final = NULL;
	static const struct option longopts[] = {
	    {"drones", required_argument, NULL, 'd'}, {"first", required_argument, NULL, 'f'},
	    {"count", required_argument, NULL, 'c'},  {"asset", required_argument, NULL, 'a'},
	    {"out", required_argument, NULL, 'o'},    {"final", required_argument, NULL, 'F'},
	    {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': total = strtol(optarg, NULL, 10); break;
		case 'f': first = strtol(optarg, NULL, 10); break;
		case 'c': count = strtol(optarg, NULL, 10); break;
		case 'a': asset = optarg; break;
		case 'o': out = optarg; break;
		case 'F': final = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (count < 0) {
		count = total - first;
	}
	if (total <= 0 || total > 65536 || first < 0 || count <= 0 || first + count > total ||
	    optind < argc) {
		fprintf(stderr, PROG ": --drones 1..65536, 0 <= --first, --first + --count <= "
		                     "--drones, nothing else\n");
		usage(stderr);
		return 2;
	}
	char name[64];
	if (asset == NULL) {
		snprintf(name, sizeof(name), "fleet-host-%ld", first);
		asset = name;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_quit;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	hako_domain_t *dom = NULL;
	const char *dname = hako_domain_default_name();
	int r = hako_domain_open(dname, &dom);
	if (r != 0) {
		fprintf(stderr, PROG ": domain '%s': %s (is a conductor running?)\n", dname,
		        hako_strerror(r));
		return 1;
	}
	/* Sizing: refuse up front, with the numbers, what the domain cannot hold. */
	hako_domain_info_t info;
	if (hako_domain_get_info(dom, &info) == 0) {
		size_t need_ch = fleet_host_channels((size_t)count);
		size_t need_b = fleet_host_bytes((size_t)count);
		if (info.channel_count + need_ch > info.max_channels ||
		    info.arena_used + need_b > info.arena_bytes) {
			fprintf(
			    stderr,
			    PROG
			    ": domain '%s' cannot hold %ld drones: they need %zu channels "
			    "and %zu arena bytes, it has %u of %u channels and %llu of %llu bytes "
			    "free; create it bigger (max_channels, arena_bytes in the core "
			    "config)\n",
			    dname, count, need_ch, need_b, info.max_channels - info.channel_count,
			    info.max_channels,
			    (unsigned long long)(info.arena_bytes - info.arena_used),
			    (unsigned long long)info.arena_bytes);
			hako_domain_close(dom);
			return 1;
		}
	}
	fleet_host_t *h = NULL;
	if ((r = fleet_host_open(dom, (size_t)first, (size_t)count, (size_t)total, &h)) != 0) {
		fprintf(stderr, PROG ": drones %ld..%ld: %s\n", first + 1, first + count,
		        hako_strerror(r));
		hako_domain_close(dom);
		return 1;
	}
	hako_member_t *m = NULL;
	if ((r = hako_member_register(dom, asset, 1000, &m)) != 0) {
		fprintf(stderr, PROG ": asset '%s': %s\n", asset, hako_strerror(r));
		fleet_host_close(h);
		hako_domain_close(dom);
		return 1;
	}
	FILE *csv = NULL;
	if (out != NULL) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/fleet-host-%ld.csv", out, first);
		if ((csv = fopen(path, "w")) == NULL) {
			fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
			hako_member_unregister(m);
			fleet_host_close(h);
			hako_domain_close(dom);
			return 1;
		}
		fputs("t,drone,x,y,z,host\n", csv);
	}
	printf("%s: drones %ld..%ld of %ld, 4 PDUs each every 1 ms step\n", asset, first + 1,
	       first + count, total);

	static uint32_t window[WINDOW];
	size_t wn = 0, wpos = 0;
	uint64_t steps = 0;
	int64_t t_run = 0, t_last_line = now_ns(), prev = 0;
	hako_time_t w_last_line = 0;
	double cpu_last = cpu_s();
	int rc = 0, running = 0;
	while (!g_quit) {
		int ev = hako_member_event(m);
		if (ev < 0) {
			fprintf(stderr, PROG ": asset '%s' removed from the domain\n", asset);
			rc = 1;
			break;
		}
		if (ev != HAKO_EVENT_NONE) {
			hako_member_ack(m, ev);
			running = ev == HAKO_EVENT_START;
			if (ev == HAKO_EVENT_STOP) {
				break;
			}
			continue;
		}
		if (!running) {
			hako_member_wait_event(m, 100000, &ev);
			continue;
		}
		r = hako_member_step_wait(m);
		if (r == HAKO_EINTR) {
			continue; /* the event follows */
		}
		if (r != 0) {
			fprintf(stderr, PROG ": step: %s\n", hako_strerror(r));
			rc = 1;
			break;
		}
		hako_time_t now = hako_member_time(m) + 1000;
		int64_t t0 = now_ns();
		if (t_run == 0) {
			t_run = t0;
		}
		if ((r = fleet_host_step(h, now)) != 0) {
			fprintf(stderr, PROG ": writing the PDUs: %s\n", hako_strerror(r));
			rc = 1;
			hako_member_step_done(m);
			break;
		}
		if (csv != NULL && now % SAMPLE_EVERY == 0) {
			for (size_t i = 0; i < (size_t)count; i++) {
				double p[6];
				drone_pose(fleet_host_drone(h, i), p);
				fprintf(csv, "%.1f,%zu,%.3f,%.3f,%.3f,%ld\n", now / 1e6,
				        (size_t)first + i + 1, p[0], p[1], p[2], first);
			}
		}
		hako_member_step_done(m);
		steps++;
		int64_t t1 = now_ns();
		if (prev != 0) {
			window[wpos] = (uint32_t)(t1 - prev);
			wpos = (wpos + 1) % WINDOW;
			wn += wn < WINDOW;
		}
		prev = t1;
		if (t1 - t_last_line >= 1000000000) {
			double p50, p99, cpu = cpu_s();
			percentiles(window, wn, &p50, &p99);
			double rtf =
			    (double)(now - w_last_line) * 1000.0 / (double)(t1 - t_last_line);
			printf(
			    "%s: t=%6.2f s  RTF %5.2f  %ld drones  step p50 %.3f ms p99 %.3f ms  "
			    "CPU %3.0f %%\n",
			    asset, now / 1e6, rtf, count, p50, p99,
			    100.0 * (cpu - cpu_last) * 1e9 / (double)(t1 - t_last_line));
			t_last_line = t1;
			w_last_line = now;
			cpu_last = cpu;
		}
	}
	if (steps > 0) {
		double wall = (double)(now_ns() - t_run) / 1e9;
		double p50, p99;
		percentiles(window, wn, &p50, &p99);
		printf("%s: done: %llu steps (%.3f s of world time) in %.2f s: RTF %.2f, step p50 "
		       "%.3f ms p99 %.3f ms, CPU %.2f s\n",
		       asset, (unsigned long long)steps, steps / 1000.0, wall,
		       wall > 0 ? steps / 1000.0 / wall : 0.0, p50, p99, cpu_s());
	}
	if (final != NULL) {
		FILE *f = fopen(final, "wb");
		uint8_t ctx[DRONE_CONTEXT_SIZE];
		for (size_t i = 0; f != NULL && i < (size_t)count; i++) {
			size_t n = drone_context_pack(fleet_host_drone(h, i), ctx, sizeof(ctx));
			if (n == 0 || fwrite(ctx, 1, n, f) != n) {
				fclose(f);
				f = NULL;
			}
		}
		if (f == NULL || fclose(f) != 0) {
			fprintf(stderr, PROG ": %s: cannot write the final states\n", final);
			rc = 1;
		}
	}
	if (csv != NULL && fclose(csv) != 0) {
		fprintf(stderr, PROG ": writing the trajectories: %s\n", strerror(errno));
		rc = 1;
	}
	hako_member_unregister(m);
	fleet_host_close(h);
	hako_domain_close(dom);
	return rc;
}
