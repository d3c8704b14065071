#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench_common.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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
