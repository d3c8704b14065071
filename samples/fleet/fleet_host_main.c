/* fleet-host: one asset process stepping drones [first, first + count) of a fleet of `total`
 * at 1 ms (fleet_host.h), writing every drone's PDUs every step, with the fleet's mission.
 *
 * It prints one status line a second of wall time (world time, real-time factor, step time
 * p50 / p99, CPU) and a summary at the end; with --out DIR it writes its drones' positions every
 * 100 ms of world time to DIR/fleet-host-<first>.csv (t,drone,x,y,z,host; host: its first drone, or
 * its zone), which fleet-report draws. Exit status: 0 after the run stopped (or SIGINT / SIGTERM),
 * 1 on an error, 2 on a usage error. */
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

#include "fleet_bridges.h"
#include "fleet_cmds.h"
#include "fleet_host.h"
#include "fleet_share.h"
#include "fleet_tool.h"
#include "fleet_zones.h"
#include "hako/domain.h"

#define PROG         "fleet-host"
#define SAMPLE_EVERY 100000 /* us of world time between two trajectory samples */
#define WINDOW       4096   /* step times kept for the status line's percentiles */

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

/* The drones this process has: a slice of the fleet (fleet_host), or, with --zones, every
 * drone, of which it steps those it owns. */
static fleet_host_t *g_h;
static fleet_zones_t *g_z;
static long g_first;

static size_t n_slots(void)
{
	return g_z != NULL ? fleet_zones_total(g_z) : fleet_host_count(g_h);
}

static const drone_t *slot_drone(size_t i)
{
	return g_z != NULL ? fleet_zones_drone(g_z, i) : fleet_host_drone(g_h, i);
}

static int slot_owned(size_t i)
{
	return g_z != NULL ? fleet_zones_owns(g_z, i) : 1;
}

static size_t slot_index(size_t i)
{
	return g_z != NULL ? i : (size_t)g_first + i;
}

/* What this host needs of the domain: its drones' channels and their PDU bytes; in zones the
 * whole fleet's, plus each drone's RD status and context and the monitor's and controller's
 * channels. */
static void needs(int zones, int cmds, long total, long count, size_t *ch, size_t *bytes)
{
	size_t n = (size_t)(zones ? total : count);
	*ch = fleet_host_channels(n) + 1; /* + the controller's */
	*bytes = fleet_host_bytes(n) + 4096;
	if (cmds) {
		*ch += fleet_dcmd_channels(n);
		*bytes += fleet_dcmd_bytes(n);
	}
	if (zones) {
		*ch += fleet_zones_extra_channels(n);
		*bytes += fleet_zones_extra_bytes(n);
	}
}

/* --balance K[,K2...]: the first hosts' drones, the last host the rest. The number of hosts,
 * or 0 if the list is not one. */
static size_t balance_counts(const char *list, size_t total, size_t counts[FLEET_MAX_HOSTS])
{
	size_t hosts = 0, sum = 0;
	const char *p = list;
	for (;;) {
		char *end;
		errno = 0;
		long k = strtol(p, &end, 10);
		if (end == p || errno != 0 || k < 1 || (size_t)k >= total - sum ||
		    hosts + 1 >= FLEET_MAX_HOSTS || (*end != ',' && *end != '\0')) {
			return 0;
		}
		counts[hosts++] = (size_t)k;
		sum += (size_t)k;
		if (*end == '\0') {
			break;
		}
		p = end + 1;
	}
	counts[hosts++] = total - sum;
	return hosts;
}

/* --zones-grid CxR, or --hosts K as the squarest grid of K cells (more columns than rows). 1,
 * or 0 if it is not one. */
static int grid_size(const char *grid, long hosts, size_t *cols, size_t *rows)
{
	if (grid != NULL) {
		char *end;
		long c = strtol(grid, &end, 10), r = 0;
		if (end != grid && (*end == 'x' || *end == 'X')) {
			const char *p = end + 1;
			r = strtol(p, &end, 10);
			if (end == p || *end != '\0') {
				r = 0;
			}
		}
		if (c < 1 || r < 1 || c > 16 || r > 16) {
			return 0;
		}
		*cols = (size_t)c;
		*rows = (size_t)r;
		return c * r >= 2 && c * r <= FLEET_MAX_HOSTS;
	}
	if (hosts < 2 || hosts > FLEET_MAX_HOSTS) {
		return 0;
	}
	size_t r = 1;
	for (size_t k = 1; k * k <= (size_t)hosts; k++) {
		r = (size_t)hosts % k == 0 ? k : r;
	}
	*rows = r;
	*cols = (size_t)hosts / r;
	return 1;
}

/* --write-bridges HOST:PORT: the bridge files of a fleet across nodes, into dir/bridge. */
static int write_bridges_files(const char *dir, const char *server, const char *full,
                               const char *where)
{
	char host[256];
	const char *colon = strrchr(where, ':');
	long port = colon != NULL ? strtol(colon + 1, NULL, 10) : 0;
	if (full == NULL || colon == NULL || colon == where ||
	    (size_t)(colon - where) >= sizeof(host)) {
		fprintf(stderr, PROG ": --write-bridges HOST:PORT needs --full N1,N2,...\n");
		return -1;
	}
	memcpy(host, where, (size_t)(colon - where));
	host[colon - where] = '\0';
	if (fleet_bridges_write(dir, server, full, host, (int)port) != 0) {
		fprintf(stderr, PROG ": --write-bridges %s (server %s, clients %s): %s\n", where,
		        server, full, strerror(errno));
		return -1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(
	    f, "usage: " PROG " --drones TOTAL [--first K] [--count N] [--asset NAME] [--out DIR]\n"
	       "  --drones TOTAL  the fleet's size (the mission's formations depend on it)\n"
	       "  --first K       the first drone this host steps (default 0)\n"
	       "  --count N       how many (default: TOTAL - K)\n"
	       "  --asset NAME    its asset name (default fleet-host-K)\n"
	       "  --out DIR       write DIR/fleet-host-K.csv: its drones every 100 ms\n"
	       "  --final FILE    at the end, write its drones' states (drone number and\n"
	       "                  context in hex, a line each): runs with other splits of\n"
	       "                  the fleet compare them\n"
	       "  --zones RD      zones instead of a slice: the fleet's RD config (written\n"
	       "                  by fleet-host --write-zones DIR); the airspace is split at\n"
	       "                  x = 0 between --node 1 (west) and --node 2 (east), drones\n"
	       "                  handed over when they cross (RD-Light)\n"
	       "  --node K        with --zones: this host, 1 or 2 (a grid: 1..C*R)\n"
	       "  --trace FILE    with --zones: its RD trace (model steps, ownership)\n"
	       "  --write-zones DIR  write DIR/fleet_rd.json (+ pdudef) for --drones, exit\n"
	       "  --zones-grid CxR  with --write-zones: zones on a grid of C columns (along\n"
	       "                  x) and R rows (along y), one host a cell, 2..16 cells: the\n"
	       "                  formations' airspace split evenly; --node 1 + i + C * j owns\n"
	       "                  cell i along x in row j along y\n"
	       "  --hosts K       with --write-zones: the same on the squarest grid of K cells\n"
	       "  --full W,E      with --write-zones: zones across two client nodes of a\n"
	       "                  federation (RD-Full), W and E their node ids (a grid: one\n"
	       "                  node id a cell, N1,N2,...; --balance: one a host; a MOVE\n"
	       "                  order is then one ask of the server a drone)\n"
	       "  --write-bridges HOST:PORT  with --write-zones and --full: also the\n"
	       "                  hako-bridge files (DIR/bridge/fleet_bridge.json) that carry\n"
	       "                  the hosts' load records to fleet-monitor on the server node\n"
	       "                  and its orders back: its bridge listens on HOST:PORT\n"
	       "  --server ID     with --write-bridges: the server node's id (srv-01)\n"
	       "  --conductor F   with RD-Full --zones: this node's conductor file (its\n"
	       "                  server commits the moves)\n"
	       "  --print-needs   print what this host needs of the domain as JSON\n"
	       "                  ({\"channels\", \"arena_bytes\"}: hako-launch's\n"
	       "                  \"domain_needs\") and exit\n"
	       "  --controller    fly what fleet-controller commands instead of the\n"
	       "                  built-in mission\n"
	       "  --balance K[,K2...]  with --write-zones: load balancing instead of\n"
	       "                  zones (fleet-monitor moves drones): host 1 starts with the\n"
	       "                  first K drones, host 2 with the next K2, and so on; one\n"
	       "                  host more than counts given starts with the rest (up to\n"
	       "                  16 hosts)\n"
	       "The domain is $HAKO_DOMAIN (hako-launch sets it).\n");
}

int main(int argc, char **argv)
{
	long total = -1, first = 0, count = -1, node = 0;
	const char *balance = NULL;
	int controlled = 0, print_needs = 0, drone_cmds = 0;
	const char *full = NULL, *conductor = NULL;
	const char *asset = NULL, *out = NULL, *final = NULL, *zones = NULL, *trace = NULL;
	const char *write_zones = NULL, *zones_grid = NULL;
	const char *write_bridges = NULL, *server = "srv-01";
	long grid_hosts = 0;
	static const struct option longopts[] = {{"drones", required_argument, NULL, 'd'},
	                                         {"first", required_argument, NULL, 'f'},
	                                         {"count", required_argument, NULL, 'c'},
	                                         {"asset", required_argument, NULL, 'a'},
	                                         {"out", required_argument, NULL, 'o'},
	                                         {"final", required_argument, NULL, 'F'},
	                                         {"zones", required_argument, NULL, 'z'},
	                                         {"node", required_argument, NULL, 'n'},
	                                         {"trace", required_argument, NULL, 't'},
	                                         {"write-zones", required_argument, NULL, 'W'},
	                                         {"balance", required_argument, NULL, 'B'},
	                                         {"controller", no_argument, NULL, 'C'},
	                                         {"print-needs", no_argument, NULL, 'P'},
	                                         {"full", required_argument, NULL, 'U'},
	                                         {"conductor", required_argument, NULL, 'N'},
	                                         {"zones-grid", required_argument, NULL, 'G'},
	                                         {"hosts", required_argument, NULL, 'K'},
	                                         {"drone-cmds", no_argument, NULL, 'D'},
	                                         {"write-bridges", required_argument, NULL, 'R'},
	                                         {"server", required_argument, NULL, 'S'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': total = strtol(optarg, NULL, 10); break;
		case 'f': first = strtol(optarg, NULL, 10); break;
		case 'c': count = strtol(optarg, NULL, 10); break;
		case 'a': asset = optarg; break;
		case 'o': out = optarg; break;
		case 'F': final = optarg; break;
		case 'z': zones = optarg; break;
		case 'n': node = strtol(optarg, NULL, 10); break;
		case 't': trace = optarg; break;
		case 'W': write_zones = optarg; break;
		case 'B': balance = optarg; break;
		case 'C': controlled = 1; break;
		case 'P': print_needs = 1; break;
		case 'U': full = optarg; break;
		case 'N': conductor = optarg; break;
		case 'G': zones_grid = optarg; break;
		case 'K': grid_hosts = strtol(optarg, NULL, 10); break;
		case 'D': drone_cmds = 1; break;
		case 'R': write_bridges = optarg; break;
		case 'S': server = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (write_zones != NULL) {
		char rd[4200];
		size_t counts[FLEET_MAX_HOSTS];
		size_t hosts = 0;
		if (total <= 0 || total > 65536 ||
		    (balance != NULL &&
		     (hosts = balance_counts(balance, (size_t)total, counts)) == 0)) {
			fprintf(stderr,
			        PROG
			        ": --write-zones needs --drones 1..65536 (and --balance K[,K2...]: "
			        "at least one drone a host, at most %d hosts, fewer drones than "
			        "--drones)\n",
			        FLEET_MAX_HOSTS);
			return 2;
		}
		size_t cols = 0, rows = 0;
		int grid = zones_grid != NULL || grid_hosts != 0;
		if (grid && (balance != NULL || !grid_size(zones_grid, grid_hosts, &cols, &rows))) {
			fprintf(stderr,
			        PROG ": --zones-grid CxR or --hosts K: 2..%d cells (at most 16 "
			             "along an axis), not with --balance\n",
			        FLEET_MAX_HOSTS);
			return 2;
		}
		if ((hosts > 0 ? fleet_zones_write_balance(write_zones, (size_t)total, counts,
		                                           hosts, full, rd, sizeof(rd))
		     : grid ? fleet_zones_write_grid(write_zones, (size_t)total, cols, rows, full,
		                                     rd, sizeof(rd))
		            : fleet_zones_write_config(write_zones, (size_t)total, full, rd,
		                                       sizeof(rd))) != 0) {
			fprintf(stderr, PROG ": --write-zones %s: %s\n", write_zones,
			        strerror(errno));
			return 1;
		}
		if (write_bridges != NULL &&
		    write_bridges_files(write_zones, server, full, write_bridges) != 0) {
			return 1;
		}
		printf("%s\n", rd);
		return 0;
	}
	if (zones != NULL && (node < 1 || node > FLEET_MAX_HOSTS)) {
		fprintf(stderr, PROG ": --zones needs --node 1..%d (a node of the RD config)\n",
		        FLEET_MAX_HOSTS);
		return 2;
	}
	if (zones != NULL) {
		first = node; /* names the asset and the files: one host per zone */
		count = total;
	}
	if (count < 0) {
		count = total - first;
	}
	g_first = first;
	if (total <= 0 || total > 65536 || first < 0 || count <= 0 ||
	    (zones == NULL && first + count > total) || optind < argc) {
		fprintf(stderr, PROG ": --drones 1..65536, 0 <= --first, --first + --count <= "
		                     "--drones, nothing else\n");
		usage(stderr);
		return 2;
	}
	if (print_needs) {
		size_t ch, bytes;
		needs(zones != NULL, drone_cmds, total, count, &ch, &bytes);
		printf("{\"channels\": %zu, \"arena_bytes\": %zu, \"assets\": 1}\n", ch, bytes);
		return 0;
	}
	char name[64];
	if (asset == NULL) {
		snprintf(name, sizeof(name), zones != NULL ? "fleet-zone-%ld" : "fleet-host-%ld",
		         first);
		asset = name;
	}
	fleet_tool_start();

	hako_domain_t *dom = NULL;
	const char *dname = hako_domain_default_name();
	int r = fleet_open_domain(PROG, &dom);
	if (r != 0) {
		return 1;
	}
	/* Sizing: refuse up front, with the numbers, what the domain cannot hold. */
	hako_domain_info_t info;
	if (hako_domain_get_info(dom, &info) == 0) {
		size_t need_ch, need_b;
		needs(zones != NULL, drone_cmds, total, count, &need_ch, &need_b);
		/* Zones: the first host creates every channel, so the domain must hold them all
		 * (the others find some made already). */
		size_t have_ch = info.max_channels - info.channel_count;
		size_t have_b = info.arena_bytes - info.arena_used;
		if (zones != NULL) {
			have_ch = info.max_channels;
			have_b = info.arena_bytes;
		}
		if (need_ch > have_ch || need_b > have_b) {
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
	if (zones != NULL) {
		char why[1300] = "";
		if ((r = fleet_zones_open(dom, zones, (uint8_t)node, trace, &g_z, why,
		                          sizeof(why))) != 0) {
			fprintf(stderr, PROG ": --zones %s: %s\n", zones,
			        why[0] ? why : hako_strerror(r));
			hako_domain_close(dom);
			return 1;
		}
		if (fleet_zones_full(g_z) &&
		    (conductor == NULL ||
		     (r = fleet_zones_set_conductor(g_z, conductor, why, sizeof(why))) != 0)) {
			fprintf(stderr, PROG ": --zones %s is RD-Full: %s\n", zones,
			        conductor == NULL ? "it needs --conductor FILE (this node's)"
			                          : why);
			fleet_zones_close(g_z);
			hako_domain_close(dom);
			return 1;
		}
		if ((long)fleet_zones_total(g_z) != total) {
			fprintf(stderr, PROG ": --zones %s has %zu drones, --drones says %ld\n",
			        zones, fleet_zones_total(g_z), total);
			fleet_zones_close(g_z);
			hako_domain_close(dom);
			return 1;
		}
	} else if ((r = fleet_host_open(dom, (size_t)first, (size_t)count, (size_t)total, &h)) !=
	           0) {
		fprintf(stderr, PROG ": drones %ld..%ld: %s\n", first + 1, first + count,
		        hako_strerror(r));
		hako_domain_close(dom);
		return 1;
	}
	g_h = h;
	if (drone_cmds) {
		char why[1300] = "";
		r = g_z != NULL ? fleet_zones_enable_cmds(g_z, why, sizeof(why))
		                : fleet_host_enable_cmds(h);
		if (r != 0) {
			fprintf(stderr, PROG ": --drone-cmds: %s\n",
			        why[0] ? why : hako_strerror(r));
			fleet_host_close(h);
			fleet_zones_close(g_z);
			hako_domain_close(dom);
			return 1;
		}
	}
	fleet_plan_t *plan = NULL;
	if (controlled && (r = fleet_plan_open(dom, &plan)) != 0) {
		fprintf(stderr, PROG ": the controller's channel: %s\n", hako_strerror(r));
		fleet_host_close(h);
		fleet_zones_close(g_z);
		hako_domain_close(dom);
		return 1;
	}
	if (g_z != NULL) {
		fleet_zones_set_plan(g_z, plan);
	} else {
		fleet_host_set_plan(h, plan);
	}
	hako_member_t *m = NULL;
	if ((r = hako_member_register(dom, asset, 1000, &m)) != 0) {
		fprintf(stderr, PROG ": asset '%s': %s\n", asset, hako_strerror(r));
		fleet_host_close(h);
		fleet_zones_close(g_z);
		fleet_plan_close(plan);
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
			fleet_zones_close(g_z);
			fleet_plan_close(plan);
			hako_domain_close(dom);
			return 1;
		}
		fputs("t,drone,x,y,z,host\n", csv);
	}
	if (g_z != NULL && fleet_zones_balancing(g_z)) {
		printf("%s: host %ld of %ld drones, %zu at the start, 4 PDUs each every 1 ms step; "
		       "fleet-monitor moves them\n",
		       asset, node, total, fleet_zones_owned(g_z));
	} else if (g_z != NULL && fleet_zones_grid(g_z)) {
		printf(
		    "%s: zone %ld of a grid, %zu of %ld drones at the start, 4 PDUs each every 1 "
		    "ms step\n",
		    asset, node, fleet_zones_owned(g_z), total);
	} else if (g_z != NULL) {
		printf("%s: the %s zone (x %s 0) of %ld drones, 4 PDUs each every 1 ms step\n",
		       asset, node == 1 ? "west" : "east", node == 1 ? "<" : ">=", total);
	} else {
		printf("%s: drones %ld..%ld of %ld, 4 PDUs each every 1 ms step\n", asset,
		       first + 1, first + count, total);
	}

	static uint32_t window[WINDOW];
	static uint32_t busy[WINDOW]; /* time on the drones a step, since the last load record */
	size_t bn = 0;
	size_t wn = 0, wpos = 0;
	uint64_t steps = 0;
	int64_t t_run = 0, t_last_line = fleet_now_ns(), prev = 0;
	hako_time_t w_last_line = 0;
	double cpu_last = fleet_cpu_s();
	int rc = 0, running = 0;
	while ((r = fleet_asset_next(m, asset, &running)) > 0) {
		hako_time_t now = hako_member_time(m) + 1000;
		int64_t t0 = fleet_now_ns();
		if (t_run == 0) {
			t_run = t0;
		}
		fleet_plan_poll(plan, now);
		r = g_z != NULL ? fleet_zones_step(g_z, now) : fleet_host_step(h, now);
		if (bn < WINDOW) {
			busy[bn++] = (uint32_t)(fleet_now_ns() - t0);
		}
		if (r == 0 && g_z != NULL && now % FLEET_LOAD_EVERY == 0) {
			double b50, b99;
			percentiles(busy, bn, &b50, &b99);
			r = fleet_zones_publish(g_z, now, (uint64_t)(b50 * 1e6),
			                        (uint64_t)(b99 * 1e6));
			bn = 0;
		}
		if (r != 0) {
			fprintf(stderr, PROG ": writing the PDUs: %s\n", hako_strerror(r));
			rc = 1;
			hako_member_step_done(m);
			break;
		}
		if (csv != NULL && now % SAMPLE_EVERY == 0) {
			for (size_t i = 0; i < n_slots(); i++) {
				if (!slot_owned(i)) {
					continue;
				}
				double p[6];
				drone_pose(slot_drone(i), p);
				fprintf(csv, "%.1f,%zu,%.3f,%.3f,%.3f,%ld\n", now / 1e6,
				        slot_index(i) + 1, p[0], p[1], p[2], first);
			}
		}
		hako_member_step_done(m);
		steps++;
		int64_t t1 = fleet_now_ns();
		if (prev != 0) {
			window[wpos] = (uint32_t)(t1 - prev);
			wpos = (wpos + 1) % WINDOW;
			wn += wn < WINDOW;
		}
		prev = t1;
		if (t1 - t_last_line >= 1000000000) {
			double p50, p99, cpu = fleet_cpu_s();
			percentiles(window, wn, &p50, &p99);
			double rtf =
			    (double)(now - w_last_line) * 1000.0 / (double)(t1 - t_last_line);
			printf(
			    "%s: t=%6.2f s  RTF %5.2f  %ld drones  step p50 %.3f ms p99 %.3f ms  "
			    "CPU %3.0f %%\n",
			    asset, now / 1e6, rtf,
			    g_z != NULL ? (long)fleet_zones_owned(g_z) : count, p50, p99,
			    100.0 * (cpu - cpu_last) * 1e9 / (double)(t1 - t_last_line));
			t_last_line = t1;
			w_last_line = now;
			cpu_last = cpu;
		}
	}
	if (r < 0) {
		rc = 1; /* said by fleet_asset_next, or above */
	}
	if (steps > 0) {
		double wall = (double)(fleet_now_ns() - t_run) / 1e9;
		double p50, p99;
		percentiles(window, wn, &p50, &p99);
		printf("%s: done: %llu steps (%.3f s of world time) in %.2f s: RTF %.2f, step p50 "
		       "%.3f ms p99 %.3f ms, CPU %.2f s\n",
		       asset, (unsigned long long)steps, steps / 1000.0, wall,
		       wall > 0 ? steps / 1000.0 / wall : 0.0, p50, p99, fleet_cpu_s());
	}
	if (final != NULL) {
		FILE *f = fopen(final, "w");
		uint8_t ctx[DRONE_CONTEXT_SIZE];
		for (size_t i = 0; f != NULL && i < n_slots(); i++) {
			if (!slot_owned(i)) {
				continue;
			}
			size_t n = drone_context_pack(slot_drone(i), ctx, sizeof(ctx));
			fprintf(f, "%zu ", slot_index(i) + 1);
			for (size_t k = 0; k < n; k++) {
				fprintf(f, "%02x", ctx[k]);
			}
			if (n == 0 || fputc('\n', f) == EOF) {
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
	if (g_z != NULL && fleet_zones_balancing(g_z)) {
		printf("%s: %llu drones handed to other hosts, %llu taken over from them, %llu "
		       "taken from a lost host; %zu drones at the end\n",
		       asset, (unsigned long long)fleet_zones_releases(g_z),
		       (unsigned long long)fleet_zones_activations(g_z),
		       (unsigned long long)fleet_zones_takeovers(g_z), fleet_zones_owned(g_z));
	} else if (g_z != NULL && fleet_zones_grid(g_z)) {
		printf("%s: %llu drones handed to other zones, %llu taken over from them, %llu "
		       "taken from a lost host; %zu drones at the end\n",
		       asset, (unsigned long long)fleet_zones_releases(g_z),
		       (unsigned long long)fleet_zones_activations(g_z),
		       (unsigned long long)fleet_zones_takeovers(g_z), fleet_zones_owned(g_z));
	} else if (g_z != NULL) {
		printf("%s: %llu drones handed to the other zone, %llu taken over from it, %llu "
		       "taken from a lost host; %zu drones at the end\n",
		       asset, (unsigned long long)fleet_zones_releases(g_z),
		       (unsigned long long)fleet_zones_activations(g_z),
		       (unsigned long long)fleet_zones_takeovers(g_z), fleet_zones_owned(g_z));
	}
	if (drone_cmds) {
		uint64_t taken, answered;
		if (g_z != NULL) {
			fleet_zones_cmd_counts(g_z, &taken, &answered);
		} else {
			fleet_host_cmd_counts(h, &taken, &answered);
		}
		printf("%s: %llu per-drone commands taken, %llu answered\n", asset,
		       (unsigned long long)taken, (unsigned long long)answered);
	}
	if (plan != NULL) {
		printf("%s: %u commands of fleet-controller flown\n", asset,
		       fleet_plan_commands(plan));
	}
	hako_member_unregister(m);
	fleet_host_close(h);
	fleet_zones_close(g_z);
	fleet_plan_close(plan);
	hako_domain_close(dom);
	return rc;
}
