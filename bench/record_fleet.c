/* record_fleet: what hako-record costs the simulation it records (issue 25).
 *
 * A fleet of --drones drones (samples/fleet, 4 PDUs per drone written every 1 ms step: 1,024
 * PDUs a step for 256) stepped as fast as possible by one host (an asset in this process) in a
 * domain of its own (free-running master, delta = Dmax = 1 ms), for --seconds of world time:
 *   plain    nothing else runs;
 *   record   hako-record (the program, --record-exe) follows the domain (every write it sees
 *            within its budget, CDR with the fleet's ros2msg schemas, zstd) into a file in
 *            /tmp; NAME, from --record NAME="ARGS": hako-record with those arguments;
 *   spin     a plain busy loop in a child process (--neighbour spin): what any busy neighbour
 *            costs the fleet on this machine;
 *   mem      a child streaming through 64 MiB (--neighbour mem): a memory-bandwidth neighbour;
 *   seq      a child reading every channel's write number in a loop without pause (--neighbour
 *            seq): the cache lines the host writes, read from the other core;
 *   read     the same with a whole seqlock read of each channel (--neighbour read).
 * The variants take turns (the order rotates every round), --rounds times, in one invocation.
 * ops_per_s = world steps per wall second (the real-time factor is ops_per_s / 1000); the
 * latency columns are the wall time of a world step of the host; CPU: the host's process (and,
 * for record, hako-record's). Comment lines: the host thread's own CPU time per step (the work
 * of a step, apart from the time it waited for a CPU), what hako-record says it recorded, missed
 * and dropped, the fraction of the writes it recorded, the median real-time factor of each variant
 * and its ratio to plain (the goal: record >= 0.90 of plain). */
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
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "fleet_host.h"
#include "hako/domain.h"

#define DELTA_USEC 1000
#define MAX_ROUNDS 15

static char g_domain[64];
static char g_dir[64];
static volatile uint64_t g_sink; /* what the neighbours read: kept, so that it is read */

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

#define MAX_VARIANTS 8
#define MAX_ARGS     24

/* A variant: the fleet alone, beside hako-record (with its arguments) or beside a hog. */
typedef enum { V_PLAIN, V_RECORD, V_SPIN, V_MEM, V_SEQ, V_READ } vkind_t;
typedef struct variant {
	vkind_t kind;
	char name[32];
	char *argv[MAX_ARGS]; /* hako-record's extra arguments */
	int argc;
	double rtf[MAX_ROUNDS];
	double frac[MAX_ROUNDS]; /* of the writes, the fraction recorded */
	double host_cpu_us[MAX_ROUNDS];
} variant_t;

/* Start hako-record on the domain and wait until it says it records (its channels listed, its
 * wait-set watching them): its pid, and its output on *out (to read its last line from). */
static pid_t start_recorder(const char *exe, const variant_t *v, FILE **out)
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
		char *argv[MAX_ARGS + 16] = {"hako-record", "-d",       g_domain, "-o",
		                             file,          "--pdudef", def};
		int n = 7;
		for (int i = 0; i < v->argc; i++) {
			argv[n++] = v->argv[i];
		}
		argv[n] = NULL;
		execv(exe, argv);
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

/* seq / read: look at every channel of the fleet without a pause, as a recorder that never
 * rests would: the write number only (one line per channel), or the whole seqlock read. */
static void reader_hog(vkind_t kind)
{
	hako_domain_t *dom;
	int n = 0;
	if (hako_domain_open(g_domain, &dom) != 0 ||
	    hako_domain_list_channels(dom, NULL, 0, &n) != 0) {
		_exit(1);
	}
	hako_channel_info_t *list = calloc((size_t)n + 1, sizeof(*list));
	hako_channel_t **chs = calloc((size_t)n + 1, sizeof(*chs));
	if (list == NULL || chs == NULL || hako_domain_list_channels(dom, list, n, &n) != 0) {
		_exit(1);
	}
	for (int i = 0; i < n; i++) {
		if (hako_channel_lookup(dom, list[i].robot, list[i].channel_id, &chs[i]) != 0) {
			_exit(1);
		}
	}
	static uint8_t buf[65536];
	for (;;) {
		for (int i = 0; i < n; i++) {
			size_t len;
			uint64_t seq = 0;
			if (kind == V_SEQ) {
				seq = hako_channel_seq(chs[i]);
			} else {
				hako_channel_read(chs[i], buf, sizeof(buf), &len, &seq);
			}
			g_sink += seq;
		}
	}
}

/* A neighbour until it is killed: one that only burns CPU (spin), streams through memory far
 * larger than the caches (mem), or reads the fleet's channels (seq, read). */
static pid_t start_hog(vkind_t kind)
{
	pid_t pid = bench_fork();
	if (pid != 0) {
		return pid;
	}
	if (kind == V_SEQ || kind == V_READ) {
		reader_hog(kind);
	}
	if (kind == V_SPIN) {
		volatile uint64_t x = 0;
		for (;;) {
			x++;
		}
	}
	size_t n = (size_t)64 << 20;
	char *a = malloc(n), *b = malloc(n);
	if (a == NULL || b == NULL) {
		_exit(1);
	}
	memset(a, 1, n);
	for (;;) {
		memcpy(b, a, n);
		memcpy(a, b, n);
	}
}
typedef struct run_result {
	double rtf;
	double host_cpu_us; /* the host thread's CPU time per step */
	bench_stats_t st;
	uint64_t steps;
	bench_cpu_t cpu;
	char rec_line[512];
	char budget_line[512]; /* --cpu-budget auto: what it settled on */
} run_result_t;

/* CPU time of this thread: what the host's steps cost it, whether or not it kept its CPU. */
static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int run_once(size_t drones, uint64_t steps, const char *exe, const variant_t *v,
                    run_result_t *res)
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
	pid_t rec = -1, hog = -1;
	FILE *rec_out = NULL;
	if (v->kind == V_RECORD &&
	    (write_pdudef(dom, drones) != 0 || (rec = start_recorder(exe, v, &rec_out)) < 0)) {
		fprintf(stderr, "record_fleet: cannot start %s\n", exe);
		return -1;
	}
	if (v->kind != V_PLAIN && v->kind != V_RECORD) {
		hog = start_hog(v->kind);
	}
	bench_samples_t s = {0};
	bench_cpu_t c0 = bench_cpu_self();
	hako_domain_start(dom);
	int ev = 0;
	hako_member_wait_event(m, 10000000, &ev);
	hako_member_ack(m, HAKO_EVENT_START);
	int64_t t0 = 0, prev = 0, cpu0 = 0;
	uint64_t k = 0;
	while (k < steps && hako_member_step_wait(m) == 0) {
		int64_t now = hako_member_time(m) + DELTA_USEC;
		fleet_host_step(h, now);
		hako_member_step_done(m);
		int64_t t = bench_now_ns();
		if (k == 0) {
			t0 = t;
			cpu0 = thread_cpu_ns();
		} else {
			bench_samples_push(&s, (uint64_t)(t - prev));
		}
		prev = t;
		k++;
	}
	int64_t wall = prev - t0;
	res->host_cpu_us = k > 1 ? (double)(thread_cpu_ns() - cpu0) / 1000.0 / (double)(k - 1) : 0;
	res->cpu = bench_cpu_sub(bench_cpu_self(), c0);
	res->steps = k;
	res->rtf = wall > 0 ? (double)(k - 1) * DELTA_USEC * 1000.0 / (double)wall : 0;
	res->st = bench_stats(&s, 1.0);
	bench_samples_free(&s);
	if (hog > 0) {
		kill(hog, SIGKILL);
		waitpid(hog, NULL, 0);
	}
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
			line[strcspn(line, "\n")] = '\0';
			if (strstr(line, "hako-record: done") != NULL) {
				snprintf(res->rec_line, sizeof(res->rec_line), "%s", line);
			} else if (strstr(line, "hako-record: automatic budget") != NULL) {
				snprintf(res->budget_line, sizeof(res->budget_line), "%s", line);
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

/* The fraction of the writes the done line says were recorded: recorded / (recorded + missed +
 * dropped + decimated); -1 if the line is not there. */
static double recorded_fraction(const char *line)
{
	unsigned long long rec = 0, miss = 0, drop = 0, dec = 0;
	const char *p = strstr(line, "): ");
	if (p == NULL || sscanf(p, "): %llu messages", &rec) != 1) {
		return -1;
	}
	const char *m = strstr(p, "channels, ");
	if (m == NULL || sscanf(m,
	                        "channels, %llu missed (sequence gaps), %llu dropped (buffer "
	                        "full), %llu decimated",
	                        &miss, &drop, &dec) != 3) {
		return -1;
	}
	unsigned long long all = rec + miss + drop + dec;
	return all > 0 ? (double)rec / (double)all : 0;
}

/* --record NAME="ARGS": a record variant whose hako-record gets ARGS (split at spaces). */
static int add_record_variant(variant_t *v, const char *spec)
{
	const char *eq = strchr(spec, '=');
	size_t len = eq != NULL ? (size_t)(eq - spec) : strlen(spec);
	if (len == 0 || len >= sizeof(v->name)) {
		return -1;
	}
	memset(v, 0, sizeof(*v));
	v->kind = V_RECORD;
	memcpy(v->name, spec, len);
	char *args = strdup(eq != NULL ? eq + 1 : "");
	for (char *save = NULL, *t = strtok_r(args, " ", &save); t != NULL;
	     t = strtok_r(NULL, " ", &save)) {
		if (v->argc == MAX_ARGS) {
			return -1;
		}
		v->argv[v->argc++] = t;
	}
	return 0; /* args stays allocated: the variant points into it until exit */
}

int main(int argc, char **argv)
{
	size_t drones = 256;
	double seconds = 10;
	int rounds = 3;
	const char *exe = HAKO_RECORD_EXE;
	static variant_t vs[MAX_VARIANTS];
	int nv = 1, nrec = 0;
	vs[0].kind = V_PLAIN;
	snprintf(vs[0].name, sizeof(vs[0].name), "plain");
	static const struct option opts[] = {{"drones", required_argument, NULL, 'n'},
	                                     {"seconds", required_argument, NULL, 's'},
	                                     {"rounds", required_argument, NULL, 'r'},
	                                     {"record-exe", required_argument, NULL, 'e'},
	                                     {"quick", no_argument, NULL, 'q'},
	                                     {"record", required_argument, NULL, 'R'},
	                                     {"neighbour", required_argument, NULL, 'N'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n': drones = (size_t)strtoul(optarg, NULL, 10); break;
		case 's': seconds = strtod(optarg, NULL); break;
		case 'r': rounds = atoi(optarg); break;
		case 'e': exe = optarg; break;
		case 'R':
			if (nv == MAX_VARIANTS || add_record_variant(&vs[nv++], optarg) != 0) {
				fprintf(stderr, "record_fleet: --record %s: NAME=\"ARGS\"\n",
				        optarg);
				return 2;
			}
			nrec++;
			break;
		case 'N':
			vs[nv].kind = strcmp(optarg, "spin") == 0   ? V_SPIN
			              : strcmp(optarg, "mem") == 0  ? V_MEM
			              : strcmp(optarg, "seq") == 0  ? V_SEQ
			              : strcmp(optarg, "read") == 0 ? V_READ
			                                            : V_PLAIN;
			if (nv == MAX_VARIANTS || vs[nv].kind == V_PLAIN) {
				fprintf(stderr, "record_fleet: --neighbour spin|mem|seq|read\n");
				return 2;
			}
			snprintf(vs[nv].name, sizeof(vs[nv].name), "%s", optarg);
			nv++;
			break;
		case 'q':
			drones = 64;
			seconds = 1;
			rounds = 1;
			break;
		default:
			printf("usage: record_fleet [--drones N] [--seconds S] [--rounds R] "
			       "[--record-exe PATH] [--record NAME=\"ARGS\"]... "
			       "[--neighbour spin|mem|seq|read]... [--quick]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (nrec == 0 && nv == 1) { /* the default comparison: hako-record as it comes */
		vs[nv].kind = V_RECORD;
		snprintf(vs[nv].name, sizeof(vs[nv].name), "record");
		nv++;
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
	printf("bench,variant,payload_bytes,count,min_us,mean_us,p50_us,p90_us,p99_us,max_us,"
	       "ops_per_s,cpu_user_s,cpu_sys_s\n");
	for (int i = 0; i < rounds; i++) {
		for (int j = 0; j < nv; j++) {
			variant_t *v = &vs[(i + j) % nv]; /* which goes first rotates */
			run_result_t res;
			if (run_once(drones, steps, exe, v, &res) != 0) {
				return 1;
			}
			v->rtf[i] = res.rtf;
			v->host_cpu_us[i] = res.host_cpu_us;
			char name[64];
			snprintf(name, sizeof(name), "d%zu-%s", drones, v->name);
			bench_print_row("record_fleet", name, 0, res.steps, &res.st,
			                res.rtf * 1000.0, res.cpu);
			if (v->kind == V_RECORD) {
				v->frac[i] = recorded_fraction(res.rec_line);
				printf("# round %d %s: %s (%.1f %% of the writes recorded)\n",
				       i + 1, v->name, res.rec_line, v->frac[i] * 100);
				if (res.budget_line[0] != '\0') {
					printf("# round %d %s: %s\n", i + 1, v->name,
					       res.budget_line);
				}
			}
			fflush(stdout);
		}
	}
	double p = median(vs[0].rtf, rounds), pc = median(vs[0].host_cpu_us, rounds);
	for (int k = 1; k < nv; k++) {
		double r = median(vs[k].rtf, rounds);
		double rc = median(vs[k].host_cpu_us, rounds);
		printf("# %zu drones (%zu PDUs a step), %.1f s of world time, %d rounds: real-time "
		       "factor median plain %.2f, %s %.2f: ratio %.3f; host CPU per step plain "
		       "%.1f us, %s %.1f us",
		       drones, drones * FLEET_CHANNELS, seconds, rounds, p, vs[k].name, r,
		       p > 0 ? r / p : 0, pc, vs[k].name, rc);
		if (vs[k].kind == V_RECORD) {
			printf(", %.1f %% of the writes recorded (median) (goal >= 0.90: %s)\n",
			       median(vs[k].frac, rounds) * 100,
			       p > 0 && r / p >= 0.90 ? "PASS" : "MISS");
		} else {
			printf(" (a neighbour, not hako-record)\n");
		}
	}
	return 0;
}
