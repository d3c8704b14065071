#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bench_cpu_t bench_cpu_self(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	bench_cpu_t c = {
	    (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
	    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6,
	};
	return c;
}

bench_cpu_t bench_cpu_sub(bench_cpu_t b, bench_cpu_t a)
{
	bench_cpu_t c = {b.user - a.user, b.sys - a.sys};
	return c;
}

void bench_samples_push(bench_samples_t *s, uint64_t ns)
{
	if (s->n == s->cap) {
		size_t cap = s->cap != 0 ? s->cap * 2 : 4096;
		uint64_t *v = realloc(s->v, cap * sizeof(*v));
		if (v == NULL) {
			fprintf(stderr, "bench: out of memory for samples\n");
			exit(2);
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = ns;
}

void bench_samples_free(bench_samples_t *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

double bench_percentile(const bench_samples_t *sorted, double p, double scale)
{
	if (sorted->n == 0) {
		return 0.0;
	}
	/* Nearest rank: the smallest sample with at least p % of the samples at or below it. */
	size_t rank = (size_t)ceil(p / 100.0 * (double)sorted->n);
	if (rank < 1) {
		rank = 1;
	}
	if (rank > sorted->n) {
		rank = sorted->n;
	}
	return (double)sorted->v[rank - 1] * scale / 1000.0;
}

bench_stats_t bench_stats(bench_samples_t *s, double scale)
{
	bench_stats_t st = {0};
	if (s->n == 0) {
		return st;
	}
	qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
	double sum = 0.0;
	for (size_t i = 0; i < s->n; i++) {
		sum += (double)s->v[i];
	}
	st.min = (double)s->v[0] * scale / 1000.0;
	st.max = (double)s->v[s->n - 1] * scale / 1000.0;
	st.mean = sum / (double)s->n * scale / 1000.0;
	st.p50 = bench_percentile(s, 50, scale);
	st.p90 = bench_percentile(s, 90, scale);
	st.p99 = bench_percentile(s, 99, scale);
	return st;
}

void bench_print_row(const char *bench, const char *variant, size_t payload, uint64_t count,
                     const bench_stats_t *st, double ops_per_s, bench_cpu_t cpu)
{
	printf("%s,%s,%zu,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.1f,%.3f,%.3f\n", bench, variant,
	       payload, (unsigned long long)count, st->min, st->mean, st->p50, st->p90, st->p99,
	       st->max, ops_per_s, cpu.user, cpu.sys);
	fflush(stdout);
}

int bench_ncpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) != 0) {
		return 1;
	}
	return CPU_COUNT(&set);
}

int bench_pin_cpu(int cpu)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 2 || cpu >= n) {
		return 1;
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0 ? 0 : 1;
}

void bench_child_init(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) {
		_exit(3); /* the parent died before we armed the signal */
	}
	signal(SIGINT, SIG_IGN); /* the parent cleans up and kills us */
}

/* Read by bench_children_kill from a signal handler: a pid is stored before the count grows. */
static volatile pid_t g_children[BENCH_MAX_CHILDREN];
static volatile sig_atomic_t g_nchildren;

pid_t bench_fork(void)
{
	pid_t parent = getpid();
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		bench_die("fork: %s", strerror(errno));
	}
	if (pid == 0) {
		bench_child_init(parent);
	}
	return pid;
}

pid_t bench_children_fork(void)
{
	if (g_nchildren >= BENCH_MAX_CHILDREN) {
		bench_die("more than %d children", BENCH_MAX_CHILDREN);
	}
	pid_t pid = bench_fork();
	if (pid == 0) {
		return 0;
	}
	g_children[g_nchildren] = pid;
	g_nchildren++;
	return pid;
}

/* Take pid off the list, keeping the others in the order forked. */
static void children_forget(pid_t pid)
{
	int n = g_nchildren;
	for (int i = 0; i < n; i++) {
		if (g_children[i] == pid) {
			for (int j = i; j + 1 < n; j++) {
				g_children[j] = g_children[j + 1];
			}
			g_nchildren = n - 1;
			return;
		}
	}
}

int bench_children_wait(pid_t pid, int *status)
{
	int st = 0;
	int r = waitpid(pid, &st, 0);
	children_forget(pid);
	if (status != NULL) {
		*status = st;
	}
	return r >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

void bench_children_wait_all(const char *what)
{
	for (int i = 0; g_nchildren > 0; i++) {
		int status;
		if (bench_children_wait(g_children[0], &status) != 0) {
			bench_die("%s: child %d failed (status 0x%x)", what, i, status);
		}
	}
}

void bench_children_kill(void)
{
	for (int i = 0; i < g_nchildren; i++) {
		kill(g_children[i], SIGKILL);
	}
	for (int i = 0; i < g_nchildren; i++) {
		waitpid(g_children[i], NULL, 0);
	}
	g_nchildren = 0;
}

static char *g_fail_buf;
static size_t g_fail_cap;

void bench_child_fail_init(char *buf, size_t cap)
{
	g_fail_buf = buf;
	g_fail_cap = cap;
}

void bench_child_fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (g_fail_buf != NULL && g_fail_cap > 0 && g_fail_buf[0] == '\0') {
		snprintf(g_fail_buf, g_fail_cap, "%s", msg);
	}
	_exit(4);
}

pid_t bench_fork_commanded(const int *siblings, int nsib, void (*fn)(void *arg, int cmd_fd),
                           void *arg, int *cmd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		bench_die("pipe: %s", strerror(errno));
	}
	pid_t pid = bench_fork();
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		for (int i = 0; i < nsib; i++) {
			if (siblings[i] >= 0) {
				close(siblings[i]);
			}
		}
		close(p[1]);
		fn(arg, p[0]);
		_exit(1); /* fn must not return */
	}
	close(p[0]);
	*cmd = p[1];
	return pid;
}

int bench_write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR) {
				continue;
			}
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int bench_read_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	while (n > 0) {
		ssize_t r = read(fd, p, n);
		if (r < 0) {
			if (errno == EINTR) {
				continue;
			}
			return -1;
		}
		if (r == 0) {
			return -1;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

void *bench_shared_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "bench: mmap %zu bytes: %s\n", bytes, strerror(errno));
		exit(2);
	}
	return p;
}

void bench_shared_free(void *p, size_t bytes)
{
	if (p != NULL) {
		munmap(p, bytes);
	}
}

int bench_parse_list(const char *s, long *out, int max)
{
	int n = 0;
	const char *p = s;
	while (*p != '\0') {
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (end == p || errno != 0 || v <= 0 || n >= max) {
			return -1;
		}
		/* Optional K / M suffix (binary). */
		if (*end == 'k' || *end == 'K') {
			v <<= 10;
			end++;
		} else if (*end == 'm' || *end == 'M') {
			v <<= 20;
			end++;
		}
		out[n++] = v;
		if (*end == ',') {
			end++;
		} else if (*end != '\0') {
			return -1;
		}
		p = end;
	}
	return n;
}

const char *bench_size_str(size_t b, char *out, size_t cap)
{
	if (b >= (1u << 20) && b % (1u << 20) == 0) {
		snprintf(out, cap, "%zu MiB", b >> 20);
	} else if (b >= 1024 && b % 1024 == 0) {
		snprintf(out, cap, "%zu KiB", b >> 10);
	} else {
		snprintf(out, cap, "%zu B", b);
	}
	return out;
}

bench_stats_t bench_stats_since(const bench_samples_t *s, size_t first, double scale)
{
	bench_samples_t copy = {0};
	for (size_t i = first; i < s->n; i++) {
		bench_samples_push(&copy, s->v[i]);
	}
	bench_stats_t st = bench_stats(&copy, scale);
	bench_samples_free(&copy);
	return st;
}

/* 0, or -1 after "unknown variant" on stderr. */
static int parse_variants(const char *list, const char *const *names, int n, int *enabled)
{
	memset(enabled, 0, sizeof(int) * BENCH_MAX_VARIANTS);
	char *dup = strdup(list), *save = NULL;
	if (dup == NULL) {
		return -1;
	}
	for (char *t = strtok_r(dup, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
		int found = 0;
		for (int v = 0; v < n; v++) {
			if (strcmp(t, names[v]) == 0) {
				enabled[v] = found = 1;
			}
		}
		if (!found) {
			fprintf(stderr, "unknown variant '%s'\n", t);
			free(dup);
			return -1;
		}
	}
	free(dup);
	return 0;
}

int bench_parse_opts(int argc, char **argv, const char *const *names, int n, int allow_no_pin,
                     void (*usage)(FILE *out), bench_opts_t *o)
{
	static const long def_payloads[] = {64, 1024, 65536, 1048576};
	static const struct option opts[] = {
	    {"quick", no_argument, NULL, 'q'},
	    {"rounds", required_argument, NULL, 'r'},
	    {"count", required_argument, NULL, 'n'},
	    {"payloads", required_argument, NULL, 'p'},
	    {"variants", required_argument, NULL, 'V'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"no-pin", no_argument, NULL, 'P'},
	    {NULL, 0, NULL, 0},
	};
	static const struct option opts_pinned[] = {
	    {"quick", no_argument, NULL, 'q'},          {"rounds", required_argument, NULL, 'r'},
	    {"count", required_argument, NULL, 'n'},    {"payloads", required_argument, NULL, 'p'},
	    {"variants", required_argument, NULL, 'V'}, {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof(*o));
	memcpy(o->payloads, def_payloads, sizeof(def_payloads));
	o->npayloads = 4;
	for (int v = 0; v < n && v < BENCH_MAX_VARIANTS; v++) {
		o->enabled[v] = 1;
	}
	o->rounds = 3;
	int c;
	while ((c = getopt_long(argc, argv, "qr:n:p:V:vh", allow_no_pin ? opts : opts_pinned,
	                        NULL)) != -1) {
		switch (c) {
		case 'P': o->no_pin = 1; break;
		case 'q': o->quick = 1; break;
		case 'r': o->rounds = atol(optarg); break;
		case 'n': o->count = atol(optarg); break;
		case 'p':
			o->npayloads = bench_parse_list(optarg, o->payloads, BENCH_MAX_PAYLOADS);
			o->payloads_given = 1;
			if (o->npayloads <= 0) {
				usage(stderr);
				return 2;
			}
			break;
		case 'V':
			if (parse_variants(optarg, names, n, o->enabled) != 0) {
				return 2;
			}
			break;
		case 'v': o->verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	return -1;
}

static const char *g_prog = "bench";
static void (*g_cleanup)(void);
static const char *g_detail_label;
static const char *g_detail;

void bench_exit_init(const char *prog, void (*cleanup)(void), int catch_signals)
{
	g_prog = prog;
	g_cleanup = cleanup;
	if (catch_signals) {
		signal(SIGINT, bench_on_signal);
		signal(SIGTERM, bench_on_signal);
	}
}

void bench_on_signal(int sig)
{
	if (g_cleanup != NULL) {
		g_cleanup();
	}
	_exit(128 + sig);
}

void bench_die_detail(const char *label, const char *text)
{
	g_detail_label = label;
	g_detail = text;
}

void bench_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", g_prog);
	vfprintf(stderr, fmt, ap);
	if (g_detail != NULL && g_detail[0] != '\0') {
		fprintf(stderr, " (%s: %s)", g_detail_label, g_detail);
	}
	fprintf(stderr, "\n");
	va_end(ap);
	if (g_cleanup != NULL) {
		g_cleanup();
	}
	exit(1);
}

long bench_default_round_trips(size_t payload)
{
	if (payload <= 1024) {
		return 20000;
	}
	if (payload <= 65536) {
		return 5000;
	}
	return 1000;
}

int bench_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		bench_die("socket: %s", strerror(errno));
	}
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
		close(fd);
		bench_die("bind 127.0.0.1:0: %s", strerror(errno));
	}
	close(fd);
	return ntohs(a.sin_port);
}

bench_cpu_t bench_proc_cpu(pid_t pid)
{
	bench_cpu_t c = {0, 0};
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return c;
	}
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* after the command name, which may hold spaces */
	unsigned long long ut = 0, st = 0;
	if (p != NULL &&
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2) {
		double tick = (double)sysconf(_SC_CLK_TCK);
		c.user = (double)ut / tick;
		c.sys = (double)st / tick;
	}
	return c;
}

void bench_relay_stop(bench_relay_t *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGTERM);
		for (int i = 0; i < 200 && waitpid(r->pid, NULL, WNOHANG) == 0; i++) {
			usleep(10000);
		}
		kill(r->pid, SIGKILL); /* if it did not end */
		waitpid(r->pid, NULL, WNOHANG);
		r->pid = 0;
	}
	if (r->out >= 0) {
		close(r->out);
		r->out = -1;
	}
}

void bench_relay_start(bench_relay_t *r, const char *exe, double delay_ms, const int to[2],
                       int listen[2])
{
	char to0[48], to1[48], delay[32];
	snprintf(to0, sizeof(to0), "127.0.0.1:%d", to[0]);
	snprintf(to1, sizeof(to1), "127.0.0.1:%d", to[1]);
	snprintf(delay, sizeof(delay), "%g", delay_ms);
	char *argv[] = {(char *)exe,  "--tcp",    "--listen",    "127.0.0.1:0", "--to",
	                to0,          "--listen", "127.0.0.1:0", "--to",        to1,
	                "--delay-ms", delay,      "--jitter-ms", "0",           NULL};
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		bench_die("pipe: %s", strerror(errno));
	}
	pid_t pid = bench_fork();
	if (pid == 0) {
		dup2(p[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	r->pid = pid;
	r->out = p[0];
	/* "hako-relay: tcp 127.0.0.1:PORT -> ..." for each route, then "hako-relay: ready" */
	char buf[2048] = "";
	size_t len = 0;
	int64_t deadline = bench_now_ns() + 10000000000ll;
	while (strstr(buf, "hako-relay: ready\n") == NULL || len == 0) {
		struct pollfd pfd = {p[0], POLLIN, 0};
		if (bench_now_ns() > deadline || len >= sizeof(buf) - 1) {
			bench_die("hako-relay did not start: %s", buf);
		}
		if (poll(&pfd, 1, 100) > 0) {
			ssize_t k = read(p[0], buf + len, sizeof(buf) - 1 - len);
			if (k <= 0) {
				bench_die("hako-relay ended at start: %.*s", (int)len, buf);
			}
			len += (size_t)k;
		}
		buf[len] = '\0';
	}
	int n = 0;
	for (const char *s = buf; (s = strstr(s, "hako-relay: tcp ")) != NULL && n < 2; s++) {
		const char *arrow = strstr(s, " -> ");
		const char *colon = arrow;
		while (colon != NULL && colon > s && *colon != ':') {
			colon--;
		}
		if (colon == NULL || colon == s) {
			break;
		}
		listen[n++] = atoi(colon + 1);
	}
	if (n != 2 || listen[0] <= 0 || listen[1] <= 0) {
		bench_die("hako-relay: cannot read its ports from: %s", buf);
	}
}
