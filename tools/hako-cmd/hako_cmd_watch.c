/* hako-cmd watch: a live view of the clocks and their drift. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hako/conductor.h"
#include "hako_cmd.h"

struct drift {
	char name[HAKO_NAME_MAX];
	hako_time_t max;
};

static struct drift *drift_of(struct drift *d, int cap, const hako_asset_info_t *a)
{
	if (a->id < 0 || a->id >= cap) {
		return NULL;
	}
	struct drift *e = &d[a->id];
	if (strcmp(e->name, a->name) != 0) { /* a new asset in this slot */
		snprintf(e->name, sizeof(e->name), "%s", a->name);
		e->max = 0;
	}
	return e;
}

static void watch_block(const hako_domain_info_t *info, const hako_asset_info_t *a, int n,
                        struct drift *d, int cap, double rate, int64_t interval_ms)
{
	time_t now = time(NULL);
	char clock[16];
	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&now));
	printf("domain '%s'  %s  world %.3f s (%" PRIu64 " steps)", info->name,
	       hako_state_name(info->state), hakoi_cmd_sec(info->world_time), info->world_steps);
	if (rate >= 0.0 && info->state == HAKO_STATE_RUNNING) {
		printf("  %.2fx real time", rate);
	}
	printf("\n%s  every %lld ms, Ctrl-C to quit  Dmax %.3f ms\n", clock, (long long)interval_ms,
	       hakoi_cmd_msec(info->max_delay_usec));
	if (info->state == HAKO_STATE_ERROR) {
		printf("error: %s\n", info->error_reason);
	}
	if (n == 0) {
		printf("no assets\n");
		return;
	}
	int w = 5;
	for (int i = 0; i < n; i++) {
		int len = (int)strlen(a[i].name);
		w = len > w ? len : w;
	}
	printf("%-*s  %10s  %10s  %14s  %10s  %5s\n", w, "ASSET", "TIME[s]", "DRIFT[ms]",
	       "MAX DRIFT[ms]", "STEPS", "ALIVE");
	for (int i = 0; i < n; i++) {
		struct drift *e = drift_of(d, cap, &a[i]);
		hako_time_t max = 0;
		if (e != NULL) {
			e->max = a[i].lag_usec > e->max ? a[i].lag_usec : e->max;
			max = e->max;
		}
		printf("%-*s  %10.3f  %10.3f  %14.3f  %10" PRIu64 "  %5s\n", w, a[i].name,
		       hakoi_cmd_sec(a[i].time_usec), hakoi_cmd_msec(a[i].lag_usec),
		       hakoi_cmd_msec(max), a[i].steps, a[i].alive ? "yes" : "NO");
	}
}

/* A conductor linked to this domain keeps its status there (hako/conductor.h): its peers,
 * their known times and the drift it held (docs/conductor.md). */
static void watch_federation(hako_domain_t *dom)
{
	static hako_conductor_status_t st;
	if (hako_conductor_status_read(dom, &st) != 0) {
		return;
	}
	printf("\nfederation: node %s (%s), Dmax %.3f ms\n", st.node_id,
	       st.role == HAKO_CONDUCTOR_SERVER ? "server" : "client",
	       hakoi_cmd_msec(st.dmax_usec));
	printf("%-16s  %6s  %12s  %14s  %14s  %14s  %12s\n", "PEER", "STATE", "KNOWN[s]",
	       "DRIFT p50[ms]", "DRIFT p95[ms]", "DRIFT max[ms]", "AGE p50[ms]");
	for (int i = 0; i < st.peer_count; i++) {
		const hako_conductor_peer_stats_t *p = &st.peers[i];
		printf("%-16s  %6s  %12.3f  %14.3f  %14.3f  %14.3f  %12.3f\n", p->node_id,
		       !p->joined     ? "-"
		       : p->connected ? "ok"
		                      : "LOST",
		       hakoi_cmd_sec(p->known_time), hakoi_cmd_msec(p->drift_p50_usec),
		       hakoi_cmd_msec(p->drift_p95_usec), hakoi_cmd_msec(p->drift_max_usec),
		       hakoi_cmd_msec(p->age_p50_usec));
	}
}

int hakoi_cmd_watch(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"interval-ms", required_argument, NULL, 'i'},
	                                         {"count", required_argument, NULL, 'n'},
	                                         HAKOI_CMD_LONG_OPTIONS,
	                                         {NULL, 0, NULL, 0}};
	int64_t interval_ms = HAKOI_CMD_WATCH_MS, count = 0;
	int c, r;
	while ((c = getopt_long(argc, argv, ":d:hi:n:", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			r = hakoi_cmd_parse_i64(cmd, "--interval-ms", optarg, 10, &interval_ms);
			break;
		case 'n': r = hakoi_cmd_parse_i64(cmd, "--count", optarg, 0, &count); break;
		default: r = hakoi_cmd_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if ((r = hakoi_cmd_no_operands(cmd, argc, argv)) >= 0) {
		return r;
	}
	hako_domain_t *dom;
	hako_domain_info_t info;
	if (hakoi_cmd_open_domain(&dom) != 0) {
		return 1;
	}
	if (hakoi_cmd_get_info(dom, &info) != 0) {
		hako_domain_close(dom);
		return 1;
	}
	int cap = (int)info.max_assets;
	struct drift *d = calloc((size_t)cap, sizeof(*d));
	if (d == NULL) {
		hakoi_cmd_errf("out of memory");
		hako_domain_close(dom);
		return 1;
	}
	sigset_t sigs;
	hakoi_cmd_stop_signals(&sigs, 0);
	int tty = isatty(STDOUT_FILENO);
	int rc = 0;
	hako_time_t prev_world = -1, prev_wall = 0;
	for (int64_t iter = 1;; iter++) {
		int n = 0;
		if (hakoi_cmd_get_info(dom, &info) != 0) {
			rc = 1;
			break;
		}
		hako_asset_info_t *a = hakoi_cmd_list_assets(dom, &n);
		if (a == NULL) {
			rc = 1;
			break;
		}
		hako_time_t wall = hako_now_usec();
		double rate = -1.0;
		if (prev_world >= 0 && wall > prev_wall && info.world_time >= prev_world) {
			rate = (double)(info.world_time - prev_world) / (double)(wall - prev_wall);
		}
		prev_world = info.world_time;
		prev_wall = wall;
		if (tty) {
			printf("\033[H\033[2J"); /* home, clear screen */
		} else if (iter > 1) {
			putchar('\n');
		}
		watch_block(&info, a, n, d, cap, rate, interval_ms);
		watch_federation(dom);
		free(a);
		fflush(stdout);
		if (!info.master_alive) {
			hakoi_cmd_errf("the conductor of domain '%s' (pid %d) is gone",
			               hakoi_cmd_domain(), info.master_pid);
			rc = 1;
			break;
		}
		if (count > 0 && iter >= count) {
			break;
		}
		struct timespec ts = {(time_t)(interval_ms / 1000),
		                      (long)(interval_ms % 1000) * 1000000};
		if (sigtimedwait(&sigs, NULL, &ts) > 0) {
			if (tty) {
				putchar('\n');
			}
			break;
		}
	}
	/* The summary stays on screen after the live view. */
	int shown = 0;
	for (int i = 0; i < cap; i++) {
		if (d[i].name[0] != '\0') {
			printf("%s%s %.3f ms", shown == 0 ? "max drift seen: " : ", ", d[i].name,
			       hakoi_cmd_msec(d[i].max));
			shown++;
		}
	}
	if (shown > 0) {
		printf(" (Dmax %.3f ms)\n", hakoi_cmd_msec(info.max_delay_usec));
	}
	free(d);
	hako_domain_close(dom);
	return rc;
}
