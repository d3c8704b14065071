/* hako-cmd start, stop, reset (Hakoniwa's commands, waiting for the new state), status, ls
 * and info. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako_cmd.h"

static const char *event_name(int ev)
{
	static const char *const names[] = {"-", "start", "stop", "reset", "error"};
	return ev >= 0 && ev <= HAKO_EVENT_ERROR ? names[ev] : "?";
}

static const char *policy_name(hako_liveness_policy_t p)
{
	return p == HAKO_LIVENESS_REMOVE ? "remove" : "error";
}

/* "is running", "is in error" */
static const char *state_phrase(int state, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s", state == HAKO_STATE_ERROR ? "is in" : "is",
	         hako_state_name(state));
	return buf;
}

/* ---- start / stop / reset ---- */

struct transition {
	const char *verb;
	int (*fire)(hako_domain_t *dom);
	int target;
	int event; /* what the assets must acknowledge */
};

static const char *state_hint(const struct transition *t, int state)
{
	if (state == HAKO_STATE_ERROR) {
		return strcmp(t->verb, "reset") == 0 ? "" : " (leave it with: hako-cmd reset)";
	}
	if (state == HAKO_STATE_STOPPING || state == HAKO_STATE_RESETTING ||
	    state == HAKO_STATE_RUNNABLE) {
		return " (a transition is in progress; see: hako-cmd ls)";
	}
	if (strcmp(t->verb, "reset") == 0 && state == HAKO_STATE_RUNNING) {
		return " (stop it first: hako-cmd stop)";
	}
	return "";
}

/* Names the assets that have not acknowledged `event` yet. */
static void print_pending(hako_domain_t *dom, int event)
{
	int n = 0, shown = 0;
	hako_asset_info_t *a = hakoi_cmd_list_assets(dom, &n);
	if (a == NULL) {
		return;
	}
	for (int i = 0; i < n; i++) {
		if (a[i].event != event) {
			continue;
		}
		fprintf(stderr, "%s%s (pid %d%s)",
		        shown == 0 ? "  not acknowledged yet by: " : ", ", a[i].name, a[i].pid,
		        a[i].alive ? "" : ", dead");
		shown++;
	}
	if (shown > 0) {
		fputc('\n', stderr);
	}
	free(a);
}

/* start: wait for running. A run may be over before this process looks (a stop time a step
 * away, a busy machine): it ran when the world stepped, or a reset came, since the start was
 * asked; then `ended` says how it is now and the wait succeeds. HAKO_ETIMEDOUT, or
 * HAKO_ESTATE in Error. */
static int wait_started(hako_domain_t *dom, const hako_domain_info_t *info0, int64_t timeout_ms,
                        char *ended, size_t len)
{
	hako_time_t end = hako_now_usec() + timeout_ms * 1000;
	for (;;) {
		uint32_t seen = hako_domain_changes(dom);
		hako_domain_info_t i;
		hako_domain_get_info(dom, &i);
		if (i.state == HAKO_STATE_RUNNING) {
			return 0;
		}
		if (i.state == HAKO_STATE_ERROR) {
			return HAKO_ESTATE;
		}
		if (i.state != HAKO_STATE_RUNNABLE &&
		    (i.world_steps != info0->world_steps || i.reset_count != info0->reset_count)) {
			if (i.reset_count != info0->reset_count) {
				snprintf(ended, len, "stopped and reset: the run is over");
			} else {
				snprintf(ended, len, "%s at world time %.3f s: the run is over",
				         hako_state_name(i.state), (double)i.world_time / 1e6);
			}
			return 0;
		}
		hako_time_t left = end - hako_now_usec();
		if (left <= 0) {
			return HAKO_ETIMEDOUT;
		}
		hako_domain_wait_change(dom, seen, left);
	}
}

static int transition(const hako_cli_command_t *cmd, const struct transition *t, int argc,
                      char **argv)
{
	static const struct option longopts[] = {{"no-wait", no_argument, NULL, 'n'},
	                                         {"timeout-ms", required_argument, NULL, 't'},
	                                         {"until-usec", required_argument, NULL, 'u'},
	                                         HAKOI_CMD_LONG_OPTIONS,
	                                         {NULL, 0, NULL, 0}};
	int no_wait = 0, c, r;
	int64_t timeout_ms = HAKOI_CMD_WAIT_MS;
	int64_t until_usec = 0;
	while ((c = getopt_long(argc, argv, ":d:ht:", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			no_wait = 1;
			r = -1;
			break;
		case 't':
			r = hakoi_cmd_parse_i64(cmd, "--timeout-ms", optarg, 0, &timeout_ms);
			break;
		case 'u':
			r = t->event == HAKO_EVENT_START
			        ? hakoi_cmd_parse_i64(cmd, "--until-usec", optarg, 1, &until_usec)
			        : hako_cli_usage_error(cmd, "--until-usec is an option of start");
			break;
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
	if (hakoi_cmd_open_domain(&dom) != 0) {
		return 1;
	}
	int before = hako_domain_state(dom);
	int rc = 1;
	hako_domain_info_t info0;
	hako_domain_get_info(dom, &info0);
	if (until_usec > 0 && before == HAKO_STATE_STOPPED &&
	    (r = hako_domain_set_stop_time(dom, until_usec)) != 0) {
		hakoi_cmd_errf("cannot set the stop time of domain '%s': %s", hakoi_cmd_domain(),
		               hako_strerror(r));
		goto out;
	}
	r = t->fire(dom);
	if (r == HAKO_ESTATE) {
		int now = hako_domain_state(dom);
		char phrase[32];
		hakoi_cmd_errf("cannot %s: domain '%s' %s%s", t->verb, hakoi_cmd_domain(),
		               state_phrase(now, phrase, sizeof(phrase)), state_hint(t, now));
		goto out;
	}
	if (r == HAKO_ENOMASTER) {
		hako_domain_info_t info;
		hako_domain_get_info(dom, &info);
		hakoi_cmd_errf(
		    "cannot %s: the conductor of domain '%s' (pid %d) is not running; start one "
		    "with: hako-cmd conductor",
		    t->verb, hakoi_cmd_domain(), info.master_pid);
		goto out;
	}
	if (r != 0) {
		hakoi_cmd_errf("cannot %s domain '%s': %s", t->verb, hakoi_cmd_domain(),
		               hako_strerror(r));
		goto out;
	}
	if (no_wait) {
		printf("domain '%s': %s requested (now %s)\n", hakoi_cmd_domain(), t->verb,
		       hako_state_name(hako_domain_state(dom)));
		rc = 0;
		goto out;
	}
	char ended[96] = "";
	r = t->event == HAKO_EVENT_START
	        ? wait_started(dom, &info0, timeout_ms, ended, sizeof(ended))
	        : hako_domain_wait_state(dom, t->target, timeout_ms * 1000);
	int now = hako_domain_state(dom);
	if (r == 0 && ended[0] != '\0') {
		printf("domain '%s': %s -> running -> %s\n", hakoi_cmd_domain(),
		       hako_state_name(before), ended);
		rc = 0;
	} else if (r == 0) {
		/* A reset passes through resetting: say so, "stopped -> stopped" reads like nothing
		 * happened. */
		printf("domain '%s': %s -> %s%s\n", hakoi_cmd_domain(), hako_state_name(before),
		       t->event == HAKO_EVENT_RESET ? "resetting -> " : "", hako_state_name(now));
		rc = 0;
	} else if (now == HAKO_STATE_ERROR) {
		hako_domain_info_t info;
		hako_domain_get_info(dom, &info);
		hakoi_cmd_errf(
		    "%s failed: domain '%s' went to error: %s", t->verb, hakoi_cmd_domain(),
		    info.error_reason[0] != '\0' ? info.error_reason : "(no reason recorded)");
	} else {
		hakoi_cmd_errf("%s: timed out after %.1f s: domain '%s' is still %s", t->verb,
		               (double)timeout_ms / 1000.0, hakoi_cmd_domain(),
		               hako_state_name(now));
		print_pending(dom, t->event);
	}
out:
	hako_domain_close(dom);
	return rc;
}

int hakoi_cmd_start(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct transition t = {"start", hako_domain_start, HAKO_STATE_RUNNING,
	                                    HAKO_EVENT_START};
	return transition(cmd, &t, argc, argv);
}

int hakoi_cmd_stop(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct transition t = {"stop", hako_domain_stop, HAKO_STATE_STOPPED,
	                                    HAKO_EVENT_STOP};
	return transition(cmd, &t, argc, argv);
}

int hakoi_cmd_reset(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct transition t = {"reset", hako_domain_reset, HAKO_STATE_STOPPED,
	                                    HAKO_EVENT_RESET};
	return transition(cmd, &t, argc, argv);
}

static void print_conductor(const hako_domain_info_t *info)
{
	if (info->master_pid == 0) {
		printf("none\n");
	} else {
		printf("pid %d, %s\n", info->master_pid,
		       info->master_alive ? "alive" : "DEAD (start a new one: hako-cmd conductor)");
	}
}

int hakoi_cmd_status(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int r = hakoi_cmd_simple_options(cmd, argc, argv);
	if (r >= 0) {
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
	int n = 0, alive = 0;
	hako_asset_info_t *a = hakoi_cmd_list_assets(dom, &n);
	for (int i = 0; a != NULL && i < n; i++) {
		alive += a[i].alive != 0;
	}
	printf("status=%s\n", hako_state_name(info.state));
	printf("domain      %s\n", info.name);
	printf("world time  %.3f s (%" PRIu64 " steps)\n", hakoi_cmd_sec(info.world_time),
	       info.world_steps);
	printf("assets      %d", n);
	if (alive != n) {
		printf(" (%d alive)", alive);
	}
	printf("\nconductor   ");
	print_conductor(&info);
	if (info.state == HAKO_STATE_ERROR) {
		printf("error       %s\n",
		       info.error_reason[0] != '\0' ? info.error_reason : "(no reason recorded)");
	}
	/* What members' processes say of them: a conductor's proxy that lost its peer. */
	for (int i = 0; a != NULL && i < n; i++) {
		if (a[i].note[0] != '\0') {
			printf("note        %s: %s\n", a[i].name, a[i].note);
		}
	}
	free(a);
	hako_domain_close(dom);
	return 0;
}

int hakoi_cmd_ls(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int r = hakoi_cmd_simple_options(cmd, argc, argv);
	if (r >= 0) {
		return r;
	}
	hako_domain_t *dom;
	if (hakoi_cmd_open_domain(&dom) != 0) {
		return 1;
	}
	int n = 0;
	hako_asset_info_t *a = hakoi_cmd_list_assets(dom, &n);
	hako_domain_close(dom);
	if (a == NULL) {
		return 1;
	}
	if (n == 0) {
		printf("no assets registered in domain '%s'\n", hakoi_cmd_domain());
		free(a);
		return 0;
	}
	int w = 4;
	for (int i = 0; i < n; i++) {
		int len = (int)strlen(a[i].name);
		w = len > w ? len : w;
	}
	printf("%-*s  %3s  %7s  %5s  %10s  %9s  %8s  %10s  %13s  %7s\n", w, "NAME", "ID", "PID",
	       "ALIVE", "TIME[s]", "DELTA[us]", "LAG[ms]", "STEPS", "HEARTBEAT[ms]", "PENDING");
	for (int i = 0; i < n; i++) {
		char delta[24];
		/* A proxy (a conductor's stand-in for another node) has no step of its own. */
		if (a[i].proxy) {
			snprintf(delta, sizeof(delta), "proxy");
		} else {
			snprintf(delta, sizeof(delta), "%lld", (long long)a[i].delta_usec);
		}
		printf("%-*s  %3d  %7d  %5s  %10.3f  %9s  %8.3f  %10" PRIu64 "  %13lld  %7s%s%s\n",
		       w, a[i].name, a[i].id, a[i].pid, a[i].alive ? "yes" : "NO",
		       hakoi_cmd_sec(a[i].time_usec), delta, hakoi_cmd_msec(a[i].lag_usec),
		       a[i].steps, (long long)(a[i].heartbeat_age_usec / 1000),
		       event_name(a[i].event), a[i].note[0] != '\0' ? "  " : "", a[i].note);
	}
	free(a);
	return 0;
}

int hakoi_cmd_info(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int r = hakoi_cmd_simple_options(cmd, argc, argv);
	if (r >= 0) {
		return r;
	}
	hako_domain_t *dom;
	hako_domain_info_t info;
	char b1[32], b2[32];
	if (hakoi_cmd_open_domain(&dom) != 0) {
		return 1;
	}
	if (hakoi_cmd_get_info(dom, &info) != 0) {
		hako_domain_close(dom);
		return 1;
	}
	int nch = 0;
	hako_channel_info_t *ch = hakoi_cmd_list_channels(dom, &nch);
	hako_domain_close(dom);
	if (ch == NULL) {
		return 1;
	}
	printf("domain          %s (/dev/shm/hako.%s)\n", info.name, info.name);
	printf("layout version  %u\n", info.layout_version);
	printf("assets          %u of %u\n", info.asset_count, info.max_assets);
	printf("channels        %u of %u\n", info.channel_count, info.max_channels);
	printf("PDU arena       %" PRIu64 " of %" PRIu64 " bytes used (%s of %s)\n",
	       info.arena_used, info.arena_bytes,
	       hakoi_cmd_human_bytes(info.arena_used, b1, sizeof(b1)),
	       hakoi_cmd_human_bytes(info.arena_bytes, b2, sizeof(b2)));
	printf("segment         %" PRIu64 " bytes (%s, pages backed only when touched)\n",
	       info.segment_bytes, hakoi_cmd_human_bytes(info.segment_bytes, b1, sizeof(b1)));
	printf("conductor       ");
	print_conductor(&info);
	if (info.heartbeat_timeout_usec > 0) {
		printf("heartbeat       timeout %lld ms\n",
		       (long long)(info.heartbeat_timeout_usec / 1000));
	} else {
		printf("heartbeat       off (only the pid is checked)\n");
	}
	printf("liveness        %s (%s)\n", policy_name(info.liveness_policy),
	       info.liveness_policy == HAKO_LIVENESS_REMOVE
	           ? "a dead asset is removed and the simulation goes on"
	           : "a dead asset puts the domain in error");
	printf("clock           delta %lld us, max delay %lld us, real-time factor ",
	       (long long)info.delta_usec, (long long)info.max_delay_usec);
	hakoi_cmd_print_factor(stdout, info.real_time_factor);
	printf("\nstate           %s\n", hako_state_name(info.state));
	if (info.state == HAKO_STATE_ERROR) {
		printf("error           %s\n", info.error_reason);
	}
	printf("world time      %.3f s (%" PRIu64 " steps)\n", hakoi_cmd_sec(info.world_time),
	       info.world_steps);
	if (nch == 0) {
		printf("\nno channels\n");
		free(ch);
		return 0;
	}
	int w = 5;
	for (int i = 0; i < nch; i++) {
		int len = (int)strlen(ch[i].robot);
		w = len > w ? len : w;
	}
	printf("\n%-*s  %6s  %10s  %10s\n", w, "ROBOT", "ID", "SIZE", "SEQ");
	for (int i = 0; i < nch; i++) {
		printf("%-*s  %6d  %10u  %10" PRIu64 "\n", w, ch[i].robot, ch[i].channel_id,
		       ch[i].size, ch[i].seq);
	}
	free(ch);
	return 0;
}
