/* Shared helpers of the hako benchmarks: clocks, CPU accounting, sample statistics and the CSV
 * row format of ARCHITECTURE section 8. */
#ifndef HAKO_BENCH_COMMON_H
#define HAKO_BENCH_COMMON_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#define BENCH_CSV_HEADER                                                                           \
	"bench,variant,payload_bytes,count,min_us,mean_us,p50_us,p90_us,p99_us,max_us,"            \
	"ops_per_s,cpu_user_s,cpu_sys_s"

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t bench_now_ns(void);

/* CPU time of this process (all its threads), in seconds. */
typedef struct bench_cpu {
	double user;
	double sys;
} bench_cpu_t;
bench_cpu_t bench_cpu_self(void);
/* b - a */
bench_cpu_t bench_cpu_sub(bench_cpu_t b, bench_cpu_t a);

/* A growable array of samples in nanoseconds. */
typedef struct bench_samples {
	uint64_t *v;
	size_t n;
	size_t cap;
} bench_samples_t;
void bench_samples_push(bench_samples_t *s, uint64_t ns);
void bench_samples_free(bench_samples_t *s);

/* Percentiles of sorted samples, in microseconds after multiplying each sample by `scale`
 * (0.5 turns round trips into one-way latencies). Sorts s in place. */
typedef struct bench_stats {
	double min, mean, p50, p90, p99, max;
} bench_stats_t;
bench_stats_t bench_stats(bench_samples_t *s, double scale);
/* The p-th percentile (0..100, nearest rank) of sorted samples, in us after scale. */
double bench_percentile(const bench_samples_t *sorted, double p, double scale);

/* One CSV row. */
void bench_print_row(const char *bench, const char *variant, size_t payload, uint64_t count,
                     const bench_stats_t *st, double ops_per_s, bench_cpu_t cpu);

/* Pin the calling process to one CPU when the machine has more than one. 0 on success,
 * 1 if not pinned (one CPU, or the CPU is not in our affinity mask). */
int bench_pin_cpu(int cpu);
/* Number of CPUs this process may run on. */
int bench_ncpus(void);

/* In a freshly forked child: die with the parent (PR_SET_PDEATHSIG), so a killed benchmark
 * never leaves busy-spinning children behind. */
void bench_child_init(pid_t parent);
/* Fork (stdout and stderr flushed first, so the child does not print them again; bench_die on
 * failure) a child that dies with this process: 0 in the child, after bench_child_init; the
 * pid in the parent. */
pid_t bench_fork(void);

/* Fork a child that is told what to do over a pipe. The child (bench_child_init, SIGTERM back to
 * its default: the cleanup is the parent's) closes the nsib write ends in siblings (-1: none; a
 * sibling's EOF must not wait for this child), then runs fn(arg, its read end), which must not
 * return. The parent gets the write end in *cmd. The pid (bench_die on failure). */
pid_t bench_fork_commanded(const int *siblings, int nsib, void (*fn)(void *arg, int cmd_fd),
                           void *arg, int *cmd);

/* Write / read exactly n bytes (loops on partial transfers and EINTR). 0, or -1 on error/EOF. */
int bench_write_full(int fd, const void *buf, size_t n);
int bench_read_full(int fd, void *buf, size_t n);

/* Anonymous MAP_SHARED memory, zeroed, shared with children forked afterwards. */
void *bench_shared_alloc(size_t bytes);
void bench_shared_free(void *p, size_t bytes);

/* Parse "a,b,c" of positive integers into out (at most max). Returns the count, -1 on error. */
int bench_parse_list(const char *s, long *out, int max);

/* The default number of round trips of a latency benchmark for a payload: 20000 up to 1 KiB,
 * 5000 up to 64 KiB, 1000 above. */
long bench_default_round_trips(size_t payload);

/* "64 B", "1 KiB", "64 KiB", "1 MiB" (else the bytes). */
const char *bench_size_str(size_t b, char *out, size_t cap);

/* The statistics of the samples from index first on (one round of several pooled in s), as
 * bench_stats; s is left as it is. */
bench_stats_t bench_stats_since(const bench_samples_t *s, size_t first, double scale);

/* ---- forked children and the error they leave ---- */

/* The children a benchmark forked with bench_children_fork and has not reaped yet, which
 * bench_children_kill ends. */
#define BENCH_MAX_CHILDREN 128

/* bench_fork, the child listed (bench_die when BENCH_MAX_CHILDREN are). */
pid_t bench_children_fork(void);
/* Wait for a listed child and take it off the list. 0 if it exited with 0, else -1; *status
 * (may be NULL) is its wait status, 0 if waitpid failed. */
int bench_children_wait(pid_t pid, int *status);
/* Wait for every listed child in the order forked; bench_die "<what>: child <i> failed (status
 * 0x..)" at the first that did not exit with 0, i counting from 0 in that order. */
void bench_children_wait_all(const char *what);
/* SIGKILL every listed child and reap it: for a cleanup (async-signal-safe). */
void bench_children_kill(void);

/* Where bench_child_fail writes: a buffer in memory shared with the children
 * (bench_shared_alloc) that the parent reads, e.g. through bench_die_detail. */
void bench_child_fail_init(char *buf, size_t cap);
/* In a child: the message into that buffer unless it holds one already (the first failure is
 * the one that matters; clear it before each run), then _exit(4). */
void bench_child_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---- processes and ports of the federation benchmarks ---- */

/* A tcp port of 127.0.0.1 the kernel just gave out (bound, then released for a server to
 * take: another process may take it meanwhile, so a server that cannot listen tries again). */
int bench_free_port(void);

/* utime + stime of a process (all its threads) from /proc/<pid>/stat; 10 ms resolution. Zero
 * if the process is gone. */
bench_cpu_t bench_proc_cpu(pid_t pid);

/* A hako-relay (test/relay) child: two tcp routes, each delayed by delay_ms one way. */
typedef struct bench_relay {
	pid_t pid; /* 0: not running */
	int out;   /* its stdout, -1: none */
} bench_relay_t;
#define BENCH_RELAY_INIT                                                                           \
	{                                                                                          \
		0, -1                                                                              \
	}

/* Start exe forwarding 127.0.0.1:listen[i] (ports of its own, port 0) to 127.0.0.1:to[i] for
 * i = 0, 1; returns once it printed ready, with its ports in listen. bench_die on failure (r is
 * set before it waits, so the cleanup can stop it). */
void bench_relay_start(bench_relay_t *r, const char *exe, double delay_ms, const int to[2],
                       int listen[2]);
/* SIGTERM, then SIGKILL after 2 s; accepts a relay that is not running. */
void bench_relay_stop(bench_relay_t *r);

/* ---- the command line of the payload x variant benchmarks ---- */

#define BENCH_MAX_PAYLOADS 16
#define BENCH_MAX_VARIANTS 8

typedef struct bench_opts {
	long payloads[BENCH_MAX_PAYLOADS]; /* default 64, 1K, 64K, 1M */
	int npayloads;
	int payloads_given;              /* --payloads was given */
	int enabled[BENCH_MAX_VARIANTS]; /* default: all */
	long rounds;                     /* default 3 */
	long count;                      /* default 0 */
	int quick, verbose, no_pin;
} bench_opts_t;

/* Parse --quick, --rounds R, --count N, --payloads LIST, --variants LIST (of names[0..n-1]),
 * -v/--verbose, -h/--help (usage on stdout) and, with allow_no_pin, --no-pin. Nothing is checked
 * beyond the lists. Returns -1 to go on, else the exit code (0 help, 2 usage error: usage or
 * "unknown variant" on stderr). */
int bench_parse_opts(int argc, char **argv, const char *const *names, int n, int allow_no_pin,
                     void (*usage)(FILE *out), bench_opts_t *o);

/* ---- dying and cleaning up ---- */

/* The benchmark's name (bench_die's prefix) and its cleanup (bench_die, signals); with
 * catch_signals, SIGINT and SIGTERM run bench_on_signal. */
void bench_exit_init(const char *prog, void (*cleanup)(void), int catch_signals);
/* A signal handler: the cleanup, then _exit(128 + sig). */
void bench_on_signal(int sig);
/* bench_die adds " (<label>: <text>)" while *text is not empty (NULL: nothing). text is read
 * when bench_die runs. */
void bench_die_detail(const char *label, const char *text);
/* "<prog>: <message>[ (detail)]" on stderr, the cleanup, exit(1). */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
