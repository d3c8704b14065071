/* record_fleet: what hako-record costs the simulation it records (issue 25).
 *
 * A fleet of --drones drones (samples/fleet, 4 PDUs per drone written every 1 ms step: 1,024
 * PDUs a step for 256) stepped as fast as possible by one host (an asset in this process) in a
 * domain of its own (free-running master, delta = Dmax = 1 ms), for --seconds of world time:
 *   plain    nothing else runs;
 *   record   hako-record (the program, --record-exe) follows the domain at full rate (every
 *            write it sees, CDR with the fleet's ros2msg schemas, zstd) into a file in /tmp.
 * The two alternate, --rounds times, in one invocation. ops_per_s = world steps per wall second
 * (the real-time factor is ops_per_s / 1000); the latency columns are the wall time of a world
 * step of the host; CPU: the host's process (and, for record, hako-record's). Comment lines: the
 * median real-time factor of each, their ratio (the goal: record >= 0.90 of plain), and what
 * hako-record says it recorded, missed and dropped. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"
#include "fleet_host.h"
#include "hako/domain.h"

#define DELTA_USEC 1000
#define MAX_ROUNDS 15

static char g_domain[64];
static char g_poll[16] = "100"; /* hako-record --poll-usec */
static char g_dir[64];

static void cleanup(void)
{
	if (g_domain[0] != '\0') {
		hako_domain_remove(g_domain);
	}
	if (g_dir[0] != '\0') {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
		if (system(cmd) != 0) {
			fprintf(stderr, "record_fleet: could not remove %s\n", g_dir);
		}
	}
}

static void on_signal(int sig)
{
	(void)sig;
	cleanup();
	_exit(130);
}

/* The fleet's pdudef (compact form) for hako-record: each drone's four PDUs, their types and the
 * sizes the host created. */
static int write_pdudef(hako_domain_t *dom, size_t n)
{
	static const struct {
		int32_t id;
		const char *name, *type;
	} pdus[FLEET_CHANNELS] = {
	    {FLEET_CH_MOTOR, "motor", "hako_mavlink_msgs/HakoHilActuatorControls"},
	    {FLEET_CH_POS, "pos", "geometry_msgs/Twist"},
	    {FLEET_CH_VELOCITY, "velocity", "geometry_msgs/Twist"},
	    {FLEET_CH_STATUS, "status", "hako_msgs/DroneStatus"}};
	char path[128];
	snprintf(path, sizeof(path), "%s/pdutypes.json", g_dir);
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		return -1;
	}
	fprintf(f, "[\n");
	for (int i = 0; i < FLEET_CHANNELS; i++) {
		hako_channel_t *ch;
		if (hako_channel_lookup(dom, "Drone-1", pdus[i].id, &ch) != 0) {
			fclose(f);
			return -1;
		}
		fprintf(f,
		        "  {\"channel_id\": %d, \"pdu_size\": %zu, \"name\": \"%s\", \"type\": "
		        "\"%s\"}%s\n",
		        (int)pdus[i].id, hako_channel_size(ch), pdus[i].name, pdus[i].type,
		        i + 1 < FLEET_CHANNELS ? "," : "");
	}
	fprintf(f, "]\n");
	fclose(f);
	snprintf(path, sizeof(path), "%s/pdudef.json", g_dir);
	if ((f = fopen(path, "w")) == NULL) {
		return -1;
	}
	fprintf(
	    f, "{\"paths\": [{\"id\": \"drone\", \"path\": \"pdutypes.json\"}],\n \"robots\": [\n");
	for (size_t k = 1; k <= n; k++) {
		fprintf(f, "  {\"name\": \"Drone-%zu\", \"pdutypes_id\": \"drone\"}%s\n", k,
		        k < n ? "," : "");
	}
	fprintf(f, "]}\n");
	fclose(f);
	return 0;
}

/* Start hako-record on the domain and wait until it says it records (its channels listed, its
 * wait-set watching them): its pid, and its output on *out (to read its last line from). */
static pid_t start_recorder(const char *exe, FILE **out)
{
	int p[2];
	if (pipe(p) != 0) {
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		char file[128], def[128];
		snprintf(file, sizeof(file), "%s/fleet.mcap", g_dir);
		snprintf(def, sizeof(def), "%s/pdudef.json", g_dir);
		execl(exe, "hako-record", "-d", g_domain, "-o", file, "--pdudef", def,
		      (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*out = fdopen(p[0], "r");
	char line[512];
	while (*out != NULL && fgets(line, sizeof(line), *out) != NULL) {
		if (strstr(line, "recording domain") != NULL) {
			return pid;
		}
	}
	fprintf(stderr, "record_fleet: %s ended before it recorded\n", exe);
	return -1;
}

typedef struct run_result {
	double rtf;
	bench_stats_t st;
	uint64_t steps;
	bench_cpu_t cpu;
	char rec_line[512];
} run_result_t;

static int run_once(size_t drones, uint64_t steps, const char *exe, int record, run_result_t *res)
{
	memset(res, 0, sizeof(*res));
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	size_t need = fleet_host_channels(drones) + 64;
	if (cfg.max_channels < need) {
		cfg.max_channels = (uint32_t)need;
	}
	hako_domain_t *dom;
	int r = hako_domain_create(g_domain, &cfg, &dom);
	if (r != 0) {
		fprintf(stderr, "record_fleet: create %s: %s\n", g_domain, hako_strerror(r));
		return -1;
	}
	hako_master_config_t mc = {DELTA_USEC, DELTA_USEC, 0};
	hako_master_t *master;
	fleet_host_t *h;
	hako_member_t *m;
	if ((r = hako_master_start(dom, &mc, &master)) != 0 ||
	    (r = fleet_host_open(dom, 0, drones, drones, &h)) != 0 ||
	    (r = hako_member_register(dom, "host", DELTA_USEC, &m)) != 0) {
		fprintf(stderr, "record_fleet: set-up: %s\n", hako_strerror(r));
		return -1;
	}
	pid_t rec = -1;
	FILE *rec_out = NULL;
	if (record &&
	    (write_pdudef(dom, drones) != 0 || (rec = start_recorder(exe, &rec_out)) < 0)) {
		fprintf(stderr, "record_fleet: cannot start %s\n", exe);
		return -1;
	}
	bench_samples_t s = {0};
	bench_cpu_t c0 = bench_cpu_self();
	hako_domain_start(dom);
	int ev = 0;
	hako_member_wait_event(m, 10000000, &ev);
	hako_member_ack(m, HAKO_EVENT_START);
	int64_t t0 = 0, prev = 0;
	uint64_t k = 0;
	while (k < steps && hako_member_step_wait(m) == 0) {
		int64_t now = hako_member_time(m) + DELTA_USEC;
		fleet_host_step(h, now);
		hako_member_step_done(m);
		int64_t t = bench_now_ns();
		if (k == 0) {
			t0 = t;
		} else {
			bench_samples_push(&s, (uint64_t)(t - prev));
		}
		prev = t;
		k++;
	}
	int64_t wall = prev - t0;
	res->cpu = bench_cpu_sub(bench_cpu_self(), c0);
	res->steps = k;
	res->rtf = wall > 0 ? (double)(k - 1) * DELTA_USEC * 1000.0 / (double)wall : 0;
	res->st = bench_stats(&s, 1.0);
	bench_samples_free(&s);
	hako_domain_stop(dom);
	if (hako_member_wait_event(m, 10000000, &ev) == 0) {
		hako_member_ack(m, ev);
	}
	if (rec > 0) {
		bench_cpu_t rc = bench_proc_cpu(rec);
		res->cpu.user += rc.user;
		res->cpu.sys += rc.sys;
		kill(rec, SIGTERM);
		FILE *f = rec_out;
		char line[512];
		while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
			if (strstr(line, "hako-record: done") != NULL) {
				line[strcspn(line, "\n")] = '\0';
				snprintf(res->rec_line, sizeof(res->rec_line), "%s", line);
			}
		}
		if (f != NULL) {
			fclose(f);
		}
		waitpid(rec, NULL, 0);
	}
	hako_member_unregister(m);
	fleet_host_close(h);
	hako_master_stop(master);
	hako_domain_close(dom);
	hako_domain_remove(g_domain);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	size_t drones = 256;
	double seconds = 10;
	int rounds = 3;
	const char *exe = HAKO_RECORD_EXE;
	static const struct option opts[] = {
	    {"drones", required_argument, NULL, 'n'}, {"seconds", required_argument, NULL, 's'},
	    {"rounds", required_argument, NULL, 'r'}, {"record-exe", required_argument, NULL, 'e'},
	    {"quick", no_argument, NULL, 'q'},        {"poll-usec", required_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n': drones = (size_t)strtoul(optarg, NULL, 10); break;
		case 's': seconds = strtod(optarg, NULL); break;
		case 'r': rounds = atoi(optarg); break;
		case 'e': exe = optarg; break;
		case 'p':
			snprintf(g_poll, sizeof(g_poll), "%d",
			         atoi(optarg) > 0 ? atoi(optarg) : 100);
			break;
		case 'q':
			drones = 64;
			seconds = 1;
			rounds = 1;
			break;
		default:
			printf("usage: record_fleet [--drones N] [--seconds S] [--rounds R] "
			       "[--record-exe PATH] [--poll-usec N] [--quick]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (drones < 1 || seconds <= 0 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "record_fleet: bad arguments\n");
		return 2;
	}
	snprintf(g_domain, sizeof(g_domain), "bench-rec-%d", (int)getpid());
	snprintf(g_dir, sizeof(g_dir), "/tmp/bench-rec-%d", (int)getpid());
	if (mkdir(g_dir, 0700) != 0) {
		fprintf(stderr, "record_fleet: mkdir %s: %s\n", g_dir, strerror(errno));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	atexit(cleanup);
	uint64_t steps = (uint64_t)(seconds * 1e6 / DELTA_USEC);
	double rtf[2][MAX_ROUNDS];
	printf("bench,variant,payload_bytes,count,min_us,mean_us,p50_us,p90_us,p99_us,max_us,"
	       "ops_per_s,cpu_user_s,cpu_sys_s\n");
	char variant[2][64];
	snprintf(variant[0], sizeof(variant[0]), "d%zu-plain", drones);
	snprintf(variant[1], sizeof(variant[1]), "d%zu-record", drones);
	for (int i = 0; i < rounds; i++) {
		for (int j = 0; j < 2; j++) {
			int v = (i % 2) ? 1 - j : j; /* alternate which goes first */
			run_result_t res;
			if (run_once(drones, steps, exe, v, &res) != 0) {
				return 1;
			}
			rtf[v][i] = res.rtf;
			bench_print_row("record_fleet", variant[v], 0, res.steps, &res.st,
			                res.rtf * 1000.0, res.cpu);
			if (v == 1) {
				printf("# round %d: %s\n", i + 1, res.rec_line);
			}
			fflush(stdout);
		}
	}
	double p = median(rtf[0], rounds), r = median(rtf[1], rounds);
	printf("# %zu drones (%zu PDUs a step), %.1f s of world time, %d rounds: real-time factor "
	       "median plain %.2f, with hako-record %.2f: ratio %.3f (goal >= 0.90: %s)\n",
	       drones, drones * FLEET_CHANNELS, seconds, rounds, p, r, p > 0 ? r / p : 0,
	       p > 0 && r / p >= 0.90 ? "PASS" : "MISS");
	return 0;
}
