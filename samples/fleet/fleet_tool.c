/* The fleet programs' shared pieces (fleet_tool.h). */
#define _GNU_SOURCE
#include "fleet_tool.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "hako/error.h"

volatile sig_atomic_t fleet_quit;

static void on_quit(int sig)
{
	(void)sig;
	fleet_quit = 1;
}

void fleet_tool_start(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_quit;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int64_t fleet_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double fleet_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

int fleet_open_domain(const char *prog, hako_domain_t **dom)
{
	const char *name = hako_domain_default_name();
	int r = hako_domain_open(name, dom);
	if (r != 0) {
		fprintf(stderr, "%s: domain '%s': %s (is a conductor running?)\n", prog, name,
		        hako_strerror(r));
	}
	return r;
}

int fleet_asset_next(hako_member_t *m, const char *prog, int *running)
{
	while (!fleet_quit) {
		int ev = hako_member_event(m);
		if (ev < 0) {
			fprintf(stderr, "%s: removed from the domain\n", prog);
			return -1;
		}
		if (ev != HAKO_EVENT_NONE) {
			hako_member_ack(m, ev);
			*running = ev == HAKO_EVENT_START;
			if (ev == HAKO_EVENT_STOP) {
				return 0;
			}
			continue;
		}
		if (!*running) {
			hako_member_wait_event(m, 100000, &ev);
			continue;
		}
		int r = hako_member_step_wait(m);
		if (r == HAKO_EINTR) {
			continue; /* the event follows */
		}
		if (r != 0) {
			fprintf(stderr, "%s: step: %s\n", prog, hako_strerror(r));
			return -1;
		}
		return 1;
	}
	return 0;
}
