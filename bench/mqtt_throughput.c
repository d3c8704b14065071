/* mqtt_throughput: messages/s of 64-byte PDUs through a local mosquitto broker at QoS 0, from
 * one mqtt endpoint (direction out) to another (direction in) in this process, against the
 * mosquitto clients' own rate in the same run: mosquitto_pub -l reading N lines of the same
 * size into mosquitto_sub -C N.
 *
 * mqtt-endpoint: the receiver's subscription is in place once a probe PDU arrives; then N
 * PDUs are sent back to back (the comm's in-flight window, blocking); rate = PDUs received /
 * (last arrival - first send).
 * mosquitto-clients: mosquitto_sub is subscribed once the broker's log says so; rate = N /
 * (mosquitto_sub's exit - mosquitto_pub's start), so the baseline also pays its connect.
 *
 * Rounds interleave the two; a row per variant pools the rounds (samples: time per message of
 * each round); "# ratio" compares the medians. Needs /usr/sbin/mosquitto and the clients
 * (Debian mosquitto, mosquitto-clients). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "hako/endpoint.h"

enum { V_EP, V_CLI, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"mqtt-endpoint", "mosquitto-clients"};

#define PAYLOAD    64
#define TOPIC      "bench/c"
#define PREFIX     "benchep"
#define WAIT_MS    60000
#define STALL_MS   5000
#define PROBE_BYTE 0xff /* in a probe's last byte; a counted PDU's is 0 */

static char g_dir[256];
static pid_t g_broker = -1;
static int g_port;
static char g_broker_log[300];

static void cleanup(void)
{
	if (g_broker > 0) {
		kill(g_broker, SIGKILL);
		waitpid(g_broker, NULL, 0);
		g_broker = -1;
	}
	if (g_dir[0] != '\0') {
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
		if (system(cmd) != 0) {
			fprintf(stderr, "mqtt_throughput: cannot remove %s\n", g_dir);
		}
		g_dir[0] = '\0';
	}
}

static const char *tool(const char *name)
{
	static char buf[4][256];
	static int i;
	static const char *const dirs[] = {"/usr/sbin", "/usr/bin", "/usr/local/sbin",
	                                   "/usr/local/bin"};
	char *b = buf[i++ % 4];
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		snprintf(b, 256, "%s/%s", dirs[d], name);
		if (access(b, X_OK) == 0) {
			return b;
		}
	}
	bench_die("%s not found (apt-get install mosquitto mosquitto-clients)", name);
}

/* fork + exec argv with stdin from in (or /dev/null) and stdout to out (or /dev/null). */
static pid_t spawn(char *const argv[], const char *in, const char *out)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		bench_die("fork: %s", strerror(errno));
	}
	if (pid == 0) {
		bench_child_init(getppid());
		signal(SIGTERM, SIG_DFL);
		int i = open(in != NULL ? in : "/dev/null", O_RDONLY);
		int o = open(out != NULL ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (i < 0 || o < 0) {
			_exit(126);
		}
		dup2(i, 0);
		dup2(o, 1);
		dup2(o, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int port_open(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0) {
		close(fd);
	}
	return ok;
}

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &l) != 0) {
		bench_die("no free port: %s", strerror(errno));
	}
	close(fd);
	return ntohs(a.sin_port);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
		bench_die("cannot write %s", path);
	}
}

static int file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return 0;
	}
	char line[512];
	int found = 0;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		found = strstr(line, needle) != NULL;
	}
	fclose(f);
	return found;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void broker_start(void)
{
	char conf[300], text[600];
	g_port = free_port();
	snprintf(conf, sizeof(conf), "%s/mosquitto.conf", g_dir);
	snprintf(g_broker_log, sizeof(g_broker_log), "%s/broker.log", g_dir);
	/* The subscribe lines tell when mosquitto_sub is subscribed. */
	snprintf(text, sizeof(text),
	         "listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n"
	         "max_queued_messages 0\nlog_dest file %s\nlog_type error\nlog_type warning\n"
	         "log_type subscribe\n",
	         g_port, g_broker_log);
	write_text(conf, text);
	/* Run as root, mosquitto drops to its own user before it opens the log. */
	write_text(g_broker_log, "");
	if (chmod(g_dir, 0755) != 0 || chmod(g_broker_log, 0666) != 0) {
		bench_die("chmod %s: %s", g_dir, strerror(errno));
	}
	char *argv[] = {(char *)tool("mosquitto"), "-c", conf, NULL};
	g_broker = spawn(argv, NULL, NULL);
	int64_t dl = bench_now_ns() + 10000000000LL;
	while (!port_open(g_port)) {
		if (bench_now_ns() > dl || waitpid(g_broker, NULL, WNOHANG) == g_broker) {
			bench_die("mosquitto did not start on port %d", g_port);
		}
		sleep_ms(5);
	}
}

/* ---- mqtt-endpoint ---- */

typedef struct rx {
	_Atomic uint64_t count;
	_Atomic int probed;
	_Atomic int64_t last_ns;
} rx_t;

static void on_pdu(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)key;
	rx_t *r = user;
	if (len == PAYLOAD && ((const uint8_t *)data)[PAYLOAD - 1] == PROBE_BYTE) {
		atomic_store(&r->probed, 1);
		return;
	}
	atomic_store_explicit(&r->last_ns, bench_now_ns(), memory_order_relaxed);
	atomic_fetch_add_explicit(&r->count, 1, memory_order_relaxed);
}

static hako_endpoint_t *open_ep(const char *name, const char *dir)
{
	char path[400], text[800];
	snprintf(path, sizeof(path), "%s/%s.comm.json", g_dir, name);
	snprintf(text, sizeof(text),
	         "{\"protocol\": \"mqtt\", \"direction\": \"%s\", \"mqtt\": {\"broker\": "
	         "\"tcp://127.0.0.1:%d\", \"topic_prefix\": \"" PREFIX "\", \"qos\": 0, "
	         "\"client_id\": \"%s\"}}",
	         dir, g_port, name);
	write_text(path, text);
	snprintf(path, sizeof(path), "%s/%s.cache.json", g_dir, name);
	write_text(path, "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}");
	snprintf(path, sizeof(path), "%s/%s.json", g_dir, name);
	snprintf(text, sizeof(text),
	         "{\"name\": \"%s\", \"cache\": \"%s.cache.json\", \"comm\": \"%s.comm.json\", "
	         "\"pdu_def_path\": null}",
	         name, name, name);
	write_text(path, text);
	hako_endpoint_t *ep;
	hako_error_t err;
	char msg[1200];
	if (hako_endpoint_open(path, &ep, &err) != 0 || hako_endpoint_start(ep, &err) != 0) {
		bench_die("endpoint %s: %s", name, hako_error_format(&err, msg, sizeof(msg)));
	}
	return ep;
}

static uint32_t peers(hako_endpoint_t *ep)
{
	hako_endpoint_stats_t s;
	hako_endpoint_get_stats(ep, &s);
	return s.peers;
}

static double run_endpoint(long n, int round, double *cpu_u, double *cpu_s)
{
	char a[64], b[64];
	snprintf(a, sizeof(a), "rx%d", round);
	snprintf(b, sizeof(b), "tx%d", round);
	hako_endpoint_t *rx = open_ep(a, "in");
	hako_endpoint_t *tx = open_ep(b, "out");
	hako_endpoint_set_store(rx, HAKO_CACHE_STORE_READ);
	static rx_t r;
	memset(&r, 0, sizeof(r));
	hako_endpoint_sub_t *sub;
	if (hako_endpoint_subscribe(rx, NULL, on_pdu, &r, &sub) != 0) {
		bench_die("subscribe");
	}
	int64_t dl = bench_now_ns() + 10000000000LL;
	while (peers(rx) == 0 || peers(tx) == 0) {
		if (bench_now_ns() > dl) {
			bench_die("endpoints did not connect to the broker");
		}
		sleep_ms(1);
	}
	hako_pdu_key_t key;
	memset(&key, 0, sizeof(key));
	snprintf(key.robot, sizeof(key.robot), "Bench");
	key.channel_id = 0;
	uint8_t pdu[PAYLOAD];
	memset(pdu, PROBE_BYTE, sizeof(pdu));
	while (!atomic_load(&r.probed)) {
		if (bench_now_ns() > dl) {
			bench_die("the probe PDU never arrived");
		}
		hako_endpoint_send(tx, &key, pdu, sizeof(pdu));
		sleep_ms(2);
	}
	memset(pdu, 0, sizeof(pdu));
	bench_cpu_t c0 = bench_cpu_self();
	int64_t t0 = bench_now_ns();
	for (long i = 0; i < n; i++) {
		memcpy(pdu, &i, sizeof(i));
		hako_endpoint_send(tx, &key, pdu, sizeof(pdu));
	}
	uint64_t seen = 0;
	int64_t progress = bench_now_ns();
	while ((long)atomic_load(&r.count) < n) {
		uint64_t c = atomic_load(&r.count);
		if (c != seen) {
			seen = c;
			progress = bench_now_ns();
		} else if (bench_now_ns() - progress > (int64_t)STALL_MS * 1000000) {
			break; /* QoS 0 may lose: count what came */
		}
		sleep_ms(1);
	}
	bench_cpu_t c1 = bench_cpu_sub(bench_cpu_self(), c0);
	*cpu_u += c1.user;
	*cpu_s += c1.sys;
	uint64_t got = atomic_load(&r.count);
	int64_t t1 = atomic_load(&r.last_ns);
	hako_endpoint_stats_t ts, rs;
	hako_endpoint_get_stats(tx, &ts);
	hako_endpoint_get_stats(rx, &rs);
	if (got < (uint64_t)n) {
		fprintf(stderr, "# tx frames_out=%llu send_dropped=%llu rx frames_in=%llu\n",
		        (unsigned long long)ts.frames_out, (unsigned long long)ts.send_dropped,
		        (unsigned long long)rs.frames_in);
	}
	hako_endpoint_unsubscribe(sub);
	hako_endpoint_close(tx);
	hako_endpoint_close(rx);
	if (got < (uint64_t)n) {
		fprintf(stderr, "# mqtt-endpoint round %d: %llu of %ld arrived (QoS 0)\n", round,
		        (unsigned long long)got, n);
	}
	return got > 0 && t1 > t0 ? (double)got / ((double)(t1 - t0) / 1e9) : 0.0;
}

/* ---- mosquitto-clients ---- */

static double run_clients(long n, int round, const char *lines, double *cpu_u, double *cpu_s)
{
	char port[16], count[32], id[64], out[300], want[128];
	snprintf(port, sizeof(port), "%d", g_port);
	snprintf(count, sizeof(count), "%ld", n);
	snprintf(id, sizeof(id), "bench-sub-%d", round);
	snprintf(out, sizeof(out), "%s/sub.out", g_dir);
	snprintf(want, sizeof(want), "%s 0 " TOPIC, id);
	char *sargv[] = {(char *)tool("mosquitto_sub"),
	                 "-h",
	                 "127.0.0.1",
	                 "-p",
	                 port,
	                 "-i",
	                 id,
	                 "-t",
	                 TOPIC,
	                 "-q",
	                 "0",
	                 "-C",
	                 count,
	                 NULL};
	struct rusage u0, u1;
	getrusage(RUSAGE_CHILDREN, &u0);
	pid_t sub = spawn(sargv, NULL, out);
	int64_t dl = bench_now_ns() + 10000000000LL;
	while (!file_has(g_broker_log, want)) {
		if (bench_now_ns() > dl) {
			bench_die("mosquitto_sub did not subscribe (no \"%s\" in %s)", want,
			          g_broker_log);
		}
		sleep_ms(1);
	}
	char *pargv[] = {(char *)tool("mosquitto_pub"),
	                 "-h",
	                 "127.0.0.1",
	                 "-p",
	                 port,
	                 "-t",
	                 TOPIC,
	                 "-q",
	                 "0",
	                 "-l",
	                 NULL};
	int64_t t0 = bench_now_ns();
	pid_t pub = spawn(pargv, lines, NULL);
	int64_t t1 = 0;
	int st;
	dl = bench_now_ns() + (int64_t)WAIT_MS * 1000000;
	while (t1 == 0) {
		pid_t w = waitpid(sub, &st, WNOHANG);
		if (w == sub) {
			t1 = bench_now_ns();
		} else if (bench_now_ns() > dl) {
			kill(sub, SIGKILL);
			waitpid(sub, &st, 0);
			fprintf(stderr,
			        "# mosquitto-clients round %d: mosquitto_sub did not get %ld "
			        "messages within %d s\n",
			        round, n, WAIT_MS / 1000);
			break;
		} else {
			sleep_ms(1);
		}
	}
	waitpid(pub, NULL, 0);
	getrusage(RUSAGE_CHILDREN, &u1);
	*cpu_u += (double)(u1.ru_utime.tv_sec - u0.ru_utime.tv_sec) +
	          (double)(u1.ru_utime.tv_usec - u0.ru_utime.tv_usec) / 1e6;
	*cpu_s += (double)(u1.ru_stime.tv_sec - u0.ru_stime.tv_sec) +
	          (double)(u1.ru_stime.tv_usec - u0.ru_stime.tv_usec) / 1e6;
	return t1 > t0 ? (double)n / ((double)(t1 - t0) / 1e9) : 0.0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: mqtt_throughput [--quick] [--rounds R] [--count N] [--variants LIST]\n"
	        "  --quick            5,000 messages per run (CI smoke run)\n"
	        "  --rounds R         interleaved rounds (default 3)\n"
	        "  --count N          messages per run (default 100000)\n"
	        "  --variants LIST    of mqtt-endpoint,mosquitto-clients\n"
	        "64-byte messages at QoS 0 through a mosquitto broker of its own on loopback.\n");
}

int main(int argc, char **argv)
{
	bench_opts_t opt;
	int rc = bench_parse_opts(argc, argv, variant_names, NVARIANTS, 0, usage, &opt);
	if (rc >= 0) {
		return rc;
	}
	bench_exit_init("mqtt_throughput", cleanup, 1);
	long n = opt.count > 0 ? opt.count : (opt.quick ? 5000 : 100000);
	int rounds = opt.rounds > 0 && opt.rounds <= 64 ? (int)opt.rounds : 3;
	snprintf(g_dir, sizeof(g_dir), "/tmp/hako_bench_mqtt_XXXXXX");
	if (mkdtemp(g_dir) == NULL) {
		g_dir[0] = '\0';
		bench_die("mkdtemp: %s", strerror(errno));
	}
	/* mosquitto_pub -l: one message per line, the newline not sent. */
	char lines[300];
	snprintf(lines, sizeof(lines), "%s/lines.txt", g_dir);
	FILE *f = fopen(lines, "w");
	if (f == NULL) {
		bench_die("cannot write %s", lines);
	}
	for (long i = 0; i < n; i++) {
		fprintf(f, "%0*ld\n", PAYLOAD, i);
	}
	fclose(f);
	broker_start();

	double rate[NVARIANTS][64];
	double cu[NVARIANTS] = {0}, cs[NVARIANTS] = {0};
	for (int r = 0; r < rounds; r++) {
		for (int v = 0; v < NVARIANTS; v++) {
			if (!opt.enabled[v]) {
				continue;
			}
			rate[v][r] = v == V_EP ? run_endpoint(n, r, &cu[v], &cs[v])
			                       : run_clients(n, r, lines, &cu[v], &cs[v]);
			if (opt.verbose) {
				fprintf(stderr, "# round %d %s: %.0f msg/s\n", r, variant_names[v],
				        rate[v][r]);
			}
		}
	}
	printf("%s\n", BENCH_CSV_HEADER);
	double med[NVARIANTS] = {0};
	for (int v = 0; v < NVARIANTS; v++) {
		if (!opt.enabled[v]) {
			continue;
		}
		bench_samples_t s = {0};
		for (int r = 0; r < rounds; r++) {
			bench_samples_push(&s, rate[v][r] > 0 ? (uint64_t)(1e9 / rate[v][r]) : 0);
		}
		bench_stats_t st = bench_stats(&s, 1.0);
		double sorted[64];
		memcpy(sorted, rate[v], sizeof(double) * (size_t)rounds);
		qsort(sorted, (size_t)rounds, sizeof(double), cmp_d);
		med[v] = sorted[rounds / 2];
		bench_cpu_t cpu = {cu[v], cs[v]};
		bench_print_row("mqtt_throughput", variant_names[v], PAYLOAD, (uint64_t)n * rounds,
		                &st, med[v], cpu);
		bench_samples_free(&s);
	}
	if (opt.enabled[V_EP] && opt.enabled[V_CLI] && med[V_CLI] > 0) {
		printf(
		    "# ratio mqtt-endpoint/mosquitto-clients msg/s (medians of %d): %.2f (goal >= "
		    "0.5)\n",
		    rounds, med[V_EP] / med[V_CLI]);
	}
	cleanup();
	return 0;
}
