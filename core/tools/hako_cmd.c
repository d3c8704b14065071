/* hako-cmd: run the conductor of a domain and look at or drive it from the shell. The commands
 * of Hakoniwa's hako-cmd (start, stop, reset, status, ls) plus a foreground conductor, PDUs read
 * and written as JSON, the PDU types and their layout, domain info, live clock view and segment
 * removal.
 *
 * Exit codes: 0 success, 1 failure (message on stderr), 2 usage error.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hako/domain.h"
#include "hako/error.h"
#include "hako/log.h"
#include "hako/msg.h"
#include "hako/pdu.h"
#include "hako/pdudef.h"
#include "hako_cli.h"

#ifndef HAKO_VERSION
#define HAKO_VERSION "unknown"
#endif

#define DEFAULT_WAIT_MS    5000
#define DEFAULT_WATCH_MS   500
#define DEFAULT_DELTA_USEC 1000

static const char *opt_domain; /* -d / --domain, else HAKO_DOMAIN, else "default" */

static const char *dname(void)
{
	return opt_domain != NULL ? opt_domain : hako_domain_default_name();
}

static void errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void errf(const char *fmt, ...)
{
	va_list ap;
	fputs("hako-cmd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* The tool reports the errors it understands in its own words; the library's log lines would
 * only repeat them. HAKO_LOG set by the user always wins. */
static void library_quiet(int quiet)
{
	if (getenv("HAKO_LOG") == NULL) {
		hako_log_set_level(quiet ? HAKO_LOG_OFF : HAKO_LOG_WARN);
	}
}

/* ---- usage ---- */

static const char common_options[] =
    "  -d, --domain NAME     domain to act on (default: $HAKO_DOMAIN, else \"default\")\n"
    "  -h, --help            show this help\n";

/* ---- option parsing shared by the commands (tools/common/hako_cli) ---- */

/* clang-format off */
#define COMMON_LONG_OPTIONS {"domain", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'}
/* clang-format on */

/* Handles -d, -h and parse errors. Returns -1 to go on, else the exit code. */
static int common_option(const hako_cli_command_t *cmd, int c, char **argv)
{
	if (c != 'd') {
		return hako_cli_common_option(cmd, c, argv);
	}
	if (optarg[0] == '\0') {
		return hako_cli_usage_error(cmd, "the domain name must not be empty");
	}
	opt_domain = optarg;
	return -1;
}

static int parse_i64(const hako_cli_command_t *cmd, const char *opt, const char *s, int64_t min,
                     int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min) {
		return hako_cli_usage_error(cmd, "%s: '%s' is not an integer >= %lld", opt, s,
		                            (long long)min);
	}
	*out = v;
	return -1;
}

static int parse_double(const hako_cli_command_t *cmd, const char *opt, const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= 0.0)) {
		return hako_cli_usage_error(cmd, "%s: '%s' is not a number >= 0", opt, s);
	}
	*out = v;
	return -1;
}

static int no_operands(const hako_cli_command_t *cmd, int argc, char **argv)
{
	if (optind < argc) {
		return hako_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	}
	return -1;
}

/* ---- domain access ---- */

static int open_domain(hako_domain_t **dom)
{
	library_quiet(1);
	int r = hako_domain_open(dname(), dom);
	library_quiet(0);
	switch (r) {
	case 0: return 0;
	case HAKO_ENOENT:
		errf("no domain '%s' (is a conductor running? start one with: hako-cmd conductor)",
		     dname());
		break;
	case HAKO_EMAGIC:
	case HAKO_EVERSION:
		errf("domain '%s': /dev/shm/hako.%s is not a segment of this hako version (%s); "
		     "remove it with: hako-cmd clean",
		     dname(), dname(), hako_strerror(r));
		break;
	case HAKO_ECORRUPT:
		errf("domain '%s': /dev/shm/hako.%s is corrupted (run with HAKO_LOG=error to see "
		     "which field); remove it with: hako-cmd clean",
		     dname(), dname());
		break;
	case HAKO_EPERM: {
		unsigned uid = 0;
		if (hako_domain_owner(dname(), &uid) == 0 && uid != (unsigned)geteuid()) {
			errf("domain '%s': /dev/shm/hako.%s is owned by uid %u, not by you (uid "
			     "%u); "
			     "its conductor is that user's (HAKO_ALLOW_FOREIGN_DOMAIN=1 joins it "
			     "anyway)",
			     dname(), dname(), uid, (unsigned)geteuid());
		} else {
			errf("domain '%s': permission denied", dname());
		}
		break;
	}
	default: errf("cannot open domain '%s': %s", dname(), hako_strerror(r)); break;
	}
	return 1;
}

static int get_info(hako_domain_t *dom, hako_domain_info_t *info)
{
	int r = hako_domain_get_info(dom, info);
	if (r != 0) {
		errf("domain '%s': cannot read its header: %s", dname(), hako_strerror(r));
		return 1;
	}
	return 0;
}

typedef int (*lister_t)(hako_domain_t *dom, void *out, int max, int *count);

static int assets_lister(hako_domain_t *dom, void *out, int max, int *count)
{
	return hako_domain_list_assets(dom, out, max, count);
}

static int channels_lister(hako_domain_t *dom, void *out, int max, int *count)
{
	return hako_domain_list_channels(dom, out, max, count);
}

/* What a lister returns, in a malloc'ed array (*count entries), however many there are. */
static void *fetch_list(hako_domain_t *dom, lister_t lister, size_t elem, const char *what,
                        int *count)
{
	int max = 64;
	for (;;) {
		void *a = calloc((size_t)max, elem);
		int n = 0;
		if (a == NULL) {
			errf("out of memory");
			return NULL;
		}
		int r = lister(dom, a, max, &n);
		if (r != 0) {
			errf("domain '%s': cannot list the %s: %s", dname(), what,
			     hako_strerror(r));
			free(a);
			return NULL;
		}
		if (n <= max) {
			*count = n;
			return a;
		}
		free(a);
		max = n + 16; /* more registered meanwhile */
	}
}

static hako_asset_info_t *list_assets(hako_domain_t *dom, int *count)
{
	return fetch_list(dom, assets_lister, sizeof(hako_asset_info_t), "assets", count);
}

static hako_channel_info_t *list_channels(hako_domain_t *dom, int *count)
{
	return fetch_list(dom, channels_lister, sizeof(hako_channel_info_t), "channels", count);
}

static double sec(hako_time_t usec)
{
	return (double)usec / 1e6;
}

static double msec(hako_time_t usec)
{
	return (double)usec / 1e3;
}

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

static void print_factor(FILE *out, double factor)
{
	if (factor == 0.0) {
		fprintf(out, "0 = as fast as possible");
	} else {
		fprintf(out, "%g", factor);
	}
}

static const char *human_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;
	while (v >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	if (u == 0) {
		snprintf(buf, len, "%" PRIu64 " B", b);
	} else {
		snprintf(buf, len, "%.1f %s", v, units[u]);
	}
	return buf;
}

/* Block the signals that end a foreground command, for sigwait. A shell starts background
 * jobs of a script with SIGINT ignored, and an ignored signal is discarded even when blocked:
 * reset it so that `kill -INT` still works. SIGHUP stays ignored under nohup. */
static void stop_signals(sigset_t *set, int hup)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	struct sigaction old;
	if (hup && sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler != SIG_IGN) {
		sigaddset(set, SIGHUP);
	}
	pthread_sigmask(SIG_BLOCK, set, NULL);
}

/* ---- conductor ---- */

static int cmd_conductor(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"delta-usec", required_argument, NULL, 'D'},
	                                         {"max-delay-usec", required_argument, NULL, 'M'},
	                                         {"real-time-factor", required_argument, NULL, 'f'},
	                                         {"config", required_argument, NULL, 'c'},
	                                         {"quiet", no_argument, NULL, 'q'},
	                                         COMMON_LONG_OPTIONS,
	                                         {NULL, 0, NULL, 0}};
	hako_master_config_t mc = {DEFAULT_DELTA_USEC, 0, 0.0};
	const char *config = getenv("HAKO_CORE_CONFIG");
	int quiet = 0, c, r;
	while ((c = getopt_long(argc, argv, ":d:hc:q", longopts, NULL)) != -1) {
		switch (c) {
		case 'D': r = parse_i64(cmd, "--delta-usec", optarg, 1, &mc.delta_usec); break;
		case 'M':
			r = parse_i64(cmd, "--max-delay-usec", optarg, 1, &mc.max_delay_usec);
			break;
		case 'f':
			r = parse_double(cmd, "--real-time-factor", optarg, &mc.real_time_factor);
			break;
		case 'c':
			config = optarg;
			r = -1;
			break;
		case 'q':
			quiet = 1;
			r = -1;
			break;
		default: r = common_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if ((r = no_operands(cmd, argc, argv)) >= 0) {
		return r;
	}
	if (mc.max_delay_usec == 0) {
		mc.max_delay_usec = mc.delta_usec;
	}
	if (mc.real_time_factor > 1e6) {
		return hako_cli_usage_error(cmd, "--real-time-factor: at most 1000000");
	}
	if (mc.max_delay_usec < mc.delta_usec) {
		return hako_cli_usage_error(
		    cmd, "--max-delay-usec (%lld) must be >= --delta-usec (%lld)",
		    (long long)mc.max_delay_usec, (long long)mc.delta_usec);
	}

	hako_domain_config_t cfg;
	hako_error_t err;
	char msg[1200];
	hako_domain_config_init(&cfg);
	if (hako_domain_config_from_env(&cfg, &err) != 0) {
		errf("%s", hako_error_format(&err, msg, sizeof(msg)));
		return 1;
	}
	if (config != NULL && config[0] != '\0') {
		if (hako_domain_config_load(&cfg, config, &err) != 0) {
			errf("%s", hako_error_format(&err, msg, sizeof(msg)));
			return 1;
		}
	}

	/* Block the signals before the master thread exists so that only sigwait sees them. */
	sigset_t sigs;
	stop_signals(&sigs, 1);

	hako_domain_t *dom = NULL;
	library_quiet(1);
	r = hako_domain_create(dname(), &cfg, &dom);
	library_quiet(0);
	if (r == HAKO_EBUSY) {
		hako_domain_t *other = NULL;
		hako_domain_info_t info;
		if (hako_domain_open(dname(), &other) == 0 &&
		    hako_domain_get_info(other, &info) == 0) {
			errf("domain '%s' already has a conductor (pid %d)", dname(),
			     info.master_pid);
		} else {
			errf("domain '%s' already has a conductor", dname());
		}
		hako_domain_close(other);
		return 1;
	}
	if (r == HAKO_EMAGIC || r == HAKO_EVERSION) {
		errf("domain '%s': /dev/shm/hako.%s is not a segment of this hako version; "
		     "remove it with: hako-cmd clean",
		     dname(), dname());
		return 1;
	}
	if (r != 0) {
		char b[32];
		errf("cannot create domain '%s' (%u assets, %u channels, %s of PDU arena): %s",
		     dname(), cfg.max_assets, cfg.max_channels,
		     human_bytes(cfg.arena_bytes, b, sizeof(b)), hako_strerror(r));
		return 1;
	}
	hako_master_t *master = NULL;
	r = hako_master_start(dom, &mc, &master);
	if (r != 0) {
		errf("cannot start the master of domain '%s': %s", dname(), hako_strerror(r));
		hako_domain_close(dom);
		hako_domain_remove(dname());
		return 1;
	}
	if (!quiet && getenv("HAKO_LOG") == NULL) {
		hako_log_set_level(HAKO_LOG_INFO); /* registrations and transitions, as they come */
	}
	printf("hako-cmd: conductor of domain '%s' running (pid %d, delta %lld us, max delay "
	       "%lld us, real-time factor ",
	       dname(), (int)getpid(), (long long)mc.delta_usec, (long long)mc.max_delay_usec);
	print_factor(stdout, mc.real_time_factor);
	printf("); Ctrl-C to stop\n");
	fflush(stdout);

	int sig = 0;
	while (sigwait(&sigs, &sig) != 0) {
	}
	hako_domain_info_t info;
	hako_domain_get_info(dom, &info);
	hako_master_stop(master);
	hako_log_set_level(HAKO_LOG_WARN);
	/* Remove the segment only if it is still ours (clean --force may have replaced it). */
	hako_domain_t *now = NULL;
	hako_domain_info_t cur;
	int ours = 1;
	library_quiet(1);
	if (hako_domain_open(dname(), &now) != 0) {
		ours = 0;
	} else if (hako_domain_get_info(now, &cur) == 0 && cur.master_pid != (int)getpid()) {
		ours = 0;
	}
	library_quiet(0);
	hako_domain_close(now);
	hako_domain_close(dom);
	if (ours) {
		hako_domain_remove(dname());
	}
	printf("hako-cmd: conductor of domain '%s' stopped by %s (state %s, world time %.3f s); "
	       "%s\n",
	       dname(),
	       sig == SIGINT    ? "SIGINT"
	       : sig == SIGTERM ? "SIGTERM"
	                        : "SIGHUP",
	       hako_state_name(info.state), sec(info.world_time),
	       ours ? "segment removed" : "the segment was already gone");
	return 0;
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
	hako_asset_info_t *a = list_assets(dom, &n);
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

static int transition(const hako_cli_command_t *cmd, const struct transition *t, int argc,
                      char **argv)
{
	static const struct option longopts[] = {{"no-wait", no_argument, NULL, 'n'},
	                                         {"timeout-ms", required_argument, NULL, 't'},
	                                         COMMON_LONG_OPTIONS,
	                                         {NULL, 0, NULL, 0}};
	int no_wait = 0, c, r;
	int64_t timeout_ms = DEFAULT_WAIT_MS;
	while ((c = getopt_long(argc, argv, ":d:ht:", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			no_wait = 1;
			r = -1;
			break;
		case 't': r = parse_i64(cmd, "--timeout-ms", optarg, 0, &timeout_ms); break;
		default: r = common_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if ((r = no_operands(cmd, argc, argv)) >= 0) {
		return r;
	}
	hako_domain_t *dom;
	if (open_domain(&dom) != 0) {
		return 1;
	}
	int before = hako_domain_state(dom);
	int rc = 1;
	r = t->fire(dom);
	if (r == HAKO_ESTATE) {
		int now = hako_domain_state(dom);
		char phrase[32];
		errf("cannot %s: domain '%s' %s%s", t->verb, dname(),
		     state_phrase(now, phrase, sizeof(phrase)), state_hint(t, now));
		goto out;
	}
	if (r == HAKO_ENOMASTER) {
		hako_domain_info_t info;
		hako_domain_get_info(dom, &info);
		errf("cannot %s: the conductor of domain '%s' (pid %d) is not running; start one "
		     "with: hako-cmd conductor",
		     t->verb, dname(), info.master_pid);
		goto out;
	}
	if (r != 0) {
		errf("cannot %s domain '%s': %s", t->verb, dname(), hako_strerror(r));
		goto out;
	}
	if (no_wait) {
		printf("domain '%s': %s requested (now %s)\n", dname(), t->verb,
		       hako_state_name(hako_domain_state(dom)));
		rc = 0;
		goto out;
	}
	r = hako_domain_wait_state(dom, t->target, timeout_ms * 1000);
	int now = hako_domain_state(dom);
	if (r == 0) {
		/* A reset passes through resetting: say so, "stopped -> stopped" reads like nothing
		 * happened. */
		printf("domain '%s': %s -> %s%s\n", dname(), hako_state_name(before),
		       t->event == HAKO_EVENT_RESET ? "resetting -> " : "", hako_state_name(now));
		rc = 0;
	} else if (now == HAKO_STATE_ERROR) {
		hako_domain_info_t info;
		hako_domain_get_info(dom, &info);
		errf("%s failed: domain '%s' went to error: %s", t->verb, dname(),
		     info.error_reason[0] != '\0' ? info.error_reason : "(no reason recorded)");
	} else {
		errf("%s: timed out after %.1f s: domain '%s' is still %s", t->verb,
		     (double)timeout_ms / 1000.0, dname(), hako_state_name(now));
		print_pending(dom, t->event);
	}
out:
	hako_domain_close(dom);
	return rc;
}

static int cmd_start(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct transition t = {"start", hako_domain_start, HAKO_STATE_RUNNING,
	                                    HAKO_EVENT_START};
	return transition(cmd, &t, argc, argv);
}

static int cmd_stop(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct transition t = {"stop", hako_domain_stop, HAKO_STATE_STOPPED,
	                                    HAKO_EVENT_STOP};
	return transition(cmd, &t, argc, argv);
}

static int cmd_reset(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct transition t = {"reset", hako_domain_reset, HAKO_STATE_STOPPED,
	                                    HAKO_EVENT_RESET};
	return transition(cmd, &t, argc, argv);
}

/* ---- status / ls / info ---- */

static int simple_options(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {COMMON_LONG_OPTIONS, {NULL, 0, NULL, 0}};
	int c, r;
	while ((c = getopt_long(argc, argv, ":d:h", longopts, NULL)) != -1) {
		if ((r = common_option(cmd, c, argv)) >= 0) {
			return r;
		}
	}
	return no_operands(cmd, argc, argv);
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

static int cmd_status(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int r = simple_options(cmd, argc, argv);
	if (r >= 0) {
		return r;
	}
	hako_domain_t *dom;
	hako_domain_info_t info;
	if (open_domain(&dom) != 0) {
		return 1;
	}
	if (get_info(dom, &info) != 0) {
		hako_domain_close(dom);
		return 1;
	}
	int n = 0, alive = 0;
	hako_asset_info_t *a = list_assets(dom, &n);
	for (int i = 0; a != NULL && i < n; i++) {
		alive += a[i].alive != 0;
	}
	free(a);
	printf("status=%s\n", hako_state_name(info.state));
	printf("domain      %s\n", info.name);
	printf("world time  %.3f s (%" PRIu64 " steps)\n", sec(info.world_time), info.world_steps);
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
	hako_domain_close(dom);
	return 0;
}

static int cmd_ls(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int r = simple_options(cmd, argc, argv);
	if (r >= 0) {
		return r;
	}
	hako_domain_t *dom;
	if (open_domain(&dom) != 0) {
		return 1;
	}
	int n = 0;
	hako_asset_info_t *a = list_assets(dom, &n);
	hako_domain_close(dom);
	if (a == NULL) {
		return 1;
	}
	if (n == 0) {
		printf("no assets registered in domain '%s'\n", dname());
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
		printf("%-*s  %3d  %7d  %5s  %10.3f  %9lld  %8.3f  %10" PRIu64 "  %13lld  %7s\n", w,
		       a[i].name, a[i].id, a[i].pid, a[i].alive ? "yes" : "NO", sec(a[i].time_usec),
		       (long long)a[i].delta_usec, msec(a[i].lag_usec), a[i].steps,
		       (long long)(a[i].heartbeat_age_usec / 1000), event_name(a[i].event));
	}
	free(a);
	return 0;
}

static int cmd_info(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int r = simple_options(cmd, argc, argv);
	if (r >= 0) {
		return r;
	}
	hako_domain_t *dom;
	hako_domain_info_t info;
	char b1[32], b2[32];
	if (open_domain(&dom) != 0) {
		return 1;
	}
	if (get_info(dom, &info) != 0) {
		hako_domain_close(dom);
		return 1;
	}
	int nch = 0;
	hako_channel_info_t *ch = list_channels(dom, &nch);
	hako_domain_close(dom);
	if (ch == NULL) {
		return 1;
	}
	printf("domain          %s (/dev/shm/hako.%s)\n", info.name, info.name);
	printf("layout version  %u\n", info.layout_version);
	printf("assets          %u of %u\n", info.asset_count, info.max_assets);
	printf("channels        %u of %u\n", info.channel_count, info.max_channels);
	printf("PDU arena       %" PRIu64 " of %" PRIu64 " bytes used (%s of %s)\n",
	       info.arena_used, info.arena_bytes, human_bytes(info.arena_used, b1, sizeof(b1)),
	       human_bytes(info.arena_bytes, b2, sizeof(b2)));
	printf("segment         %" PRIu64 " bytes (%s, pages backed only when touched)\n",
	       info.segment_bytes, human_bytes(info.segment_bytes, b1, sizeof(b1)));
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
	print_factor(stdout, info.real_time_factor);
	printf("\nstate           %s\n", hako_state_name(info.state));
	if (info.state == HAKO_STATE_ERROR) {
		printf("error           %s\n", info.error_reason);
	}
	printf("world time      %.3f s (%" PRIu64 " steps)\n", sec(info.world_time),
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

/* ---- pdu ---- */

static void hex_dump(const uint8_t *p, size_t len)
{
	for (size_t off = 0; off < len; off += 16) {
		printf("%08zx ", off);
		for (size_t i = 0; i < 16; i++) {
			if (i == 8) {
				putchar(' ');
			}
			if (off + i < len) {
				printf(" %02x", p[off + i]);
			} else {
				printf("   ");
			}
		}
		printf("  |");
		for (size_t i = 0; i < 16 && off + i < len; i++) {
			putchar(isprint(p[off + i]) ? p[off + i] : '.');
		}
		printf("|\n");
	}
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The Hakoniwa meta header, when the PDU carries one. */
static void print_meta(const uint8_t *p, size_t len)
{
	if (len < 24 || le32(p) != 0x12345678u) {
		return;
	}
	printf("meta: version %u, base offset %u, heap offset %u, total size %u, epoch %u, "
	       "flags 0x%02x\n",
	       le32(p + 4), le32(p + 8), le32(p + 12), le32(p + 16), p[20], p[21]);
}

/* A channel named on the command line: robot, id, and its pdudef entry if there is one. */
struct pdu_target {
	const char *robot;
	long id;
	hako_pdudef_t *def;
	const hako_pdudef_pdu_t *pdu; /* NULL without a pdudef entry */
	const char *type;             /* --type, else the pdudef's, else NULL */
};

/* Resolve <robot> <channel-id|name>, loading the pdudef when one is given. 0 or 1 (said why). */
static int pdu_target(struct pdu_target *t, const char *pdudef, const char *type, const char *robot,
                      const char *which)
{
	memset(t, 0, sizeof(*t));
	t->robot = robot;
	if (pdudef != NULL && pdudef[0] != '\0') {
		hako_error_t err;
		char msg[1200];
		if (hako_pdudef_load(pdudef, &t->def, &err) != 0) {
			errf("%s", hako_error_format(&err, msg, sizeof(msg)));
			return 1;
		}
	}
	char *end;
	errno = 0;
	t->id = strtol(which, &end, 10);
	if (errno != 0 || end == which || *end != '\0' || t->id < 0 || t->id > INT32_MAX) {
		if (t->def == NULL) {
			errf("'%s' is not a channel id; give --pdudef FILE (or set HAKO_PDUDEF) to "
			     "look PDUs up by name",
			     which);
			return 1;
		}
		t->pdu = hako_pdudef_find(t->def, robot, which);
		if (t->pdu == NULL) {
			errf("%s: no PDU '%s' for robot '%s'", t->def->path, which, robot);
			return 1;
		}
		t->id = t->pdu->channel_id;
	} else if (t->def != NULL) {
		t->pdu = hako_pdudef_find_channel(t->def, robot, (int32_t)t->id);
	}
	t->type = type != NULL ? type : t->pdu != NULL ? t->pdu->type : NULL;
	return 0;
}

/* "Robot/0 "counter" (std_msgs/UInt64)" */
static void print_target(const struct pdu_target *t)
{
	printf("%s/%ld", t->robot, t->id);
	if (t->pdu != NULL) {
		printf(" \"%s\"", t->pdu->name);
	}
	if (t->type != NULL) {
		printf(" (%s)", t->type);
	}
}

/* The type `name` from a registry over $HAKO_MSG_PATH and the built-in packages. 0, or the
 * error code with `why` saying what went wrong. */
static int find_type(const char *name, hako_msg_registry_t **reg, const hako_msg_type_t **type,
                     char *why, size_t len)
{
	hako_error_t err;
	hako_error_clear(&err);
	int r = hako_msg_registry_create(reg);
	if (r != 0) {
		snprintf(why, len, "cannot create the type registry: %s", hako_strerror(r));
		return r;
	}
	r = hako_msg_registry_get(*reg, name, type, &err);
	if (r != 0) {
		if (err.message[0] != '\0') {
			hako_error_format(&err, why, len);
		} else {
			snprintf(why, len, "%s: %s", name, hako_strerror(r));
		}
	}
	return r;
}

/* The PDU as JSON (malloc'ed), or NULL with `why` saying why not. */
static char *pdu_json(const char *type_name, const uint8_t *buf, size_t len, char *why, size_t wlen)
{
	hako_msg_registry_t *reg = NULL;
	const hako_msg_type_t *type;
	char *json = NULL;
	if (find_type(type_name, &reg, &type, why, wlen) == 0) {
		hako_error_t err;
		hako_error_clear(&err);
		if (hako_pdu_to_json(type, buf, len, HAKO_PDU_JSON_PRETTY, &json, &err) != 0) {
			char msg[1200];
			snprintf(why, wlen, "not a valid %s PDU: %s", type_name,
			         hako_error_format(&err, msg, sizeof(msg)));
			json = NULL;
		}
	}
	hako_msg_registry_destroy(reg);
	return json;
}

static int cmd_pdu(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"pdudef", required_argument, NULL, 'p'},
	                                         {"type", required_argument, NULL, 't'},
	                                         {"raw", no_argument, NULL, 'r'},
	                                         {"hex", no_argument, NULL, 'x'},
	                                         {"json", no_argument, NULL, 'j'},
	                                         COMMON_LONG_OPTIONS,
	                                         {NULL, 0, NULL, 0}};
	const char *pdudef = getenv("HAKO_PDUDEF"), *type = NULL;
	int raw = 0, hex = 0, json_only = 0, c, r;
	while ((c = getopt_long(argc, argv, ":d:hp:t:", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pdudef = optarg;
			r = -1;
			break;
		case 't':
			type = optarg;
			r = -1;
			break;
		case 'r':
			raw = 1;
			r = -1;
			break;
		case 'x':
			hex = 1;
			r = -1;
			break;
		case 'j':
			json_only = 1;
			r = -1;
			break;
		default: r = common_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if (argc - optind != 2) {
		return hako_cli_usage_error(cmd, "need <robot> and <channel-id|name>");
	}
	if (raw + hex + json_only > 1) {
		return hako_cli_usage_error(cmd, "--raw, --hex and --json exclude each other");
	}
	struct pdu_target t;
	int rc = 1;
	hako_domain_t *dom = NULL;
	uint8_t *buf = NULL;
	if (pdu_target(&t, pdudef, type, argv[optind], argv[optind + 1]) != 0) {
		goto out;
	}
	if (json_only && t.type == NULL) {
		errf("--json: the type of %s/%ld is not known; give --pdudef FILE (or set "
		     "HAKO_PDUDEF) or --type PKG/TYPE",
		     t.robot, t.id);
		goto out;
	}
	if (open_domain(&dom) != 0) {
		goto out;
	}
	hako_channel_t *ch;
	r = hako_channel_lookup(dom, t.robot, (int32_t)t.id, &ch);
	if (r != 0) {
		errf("domain '%s' has no channel %s/%ld (the channels are listed by: hako-cmd "
		     "info)",
		     dname(), t.robot, t.id);
		goto out;
	}
	size_t size = hako_channel_size(ch), len = 0;
	uint64_t seq = 0;
	buf = malloc(size);
	if (buf == NULL) {
		errf("out of memory");
		goto out;
	}
	r = hako_channel_read(ch, buf, size, &len, &seq);
	if (r != 0) {
		errf("cannot read channel %s/%ld: %s", t.robot, t.id, hako_strerror(r));
		goto out;
	}
	if (raw) {
		fwrite(buf, 1, len, stdout);
		rc = 0;
		goto out;
	}
	char why[1400];
	if (json_only) {
		char *json = seq == 0 ? NULL : pdu_json(t.type, buf, len, why, sizeof(why));
		if (seq == 0) {
			errf("%s/%ld has never been written", t.robot, t.id);
		} else if (json == NULL) {
			errf("%s", why);
		} else {
			printf("%s\n", json);
			rc = 0;
		}
		free(json);
		goto out;
	}
	print_target(&t);
	if (seq == 0) {
		printf(": never written (channel size %zu bytes)\n", size);
		rc = 0;
		goto out;
	}
	printf(": seq %" PRIu64 ", %zu of %zu bytes\n", seq, len, size);
	print_meta(buf, len);
	char *json = NULL;
	if (!hex && t.type != NULL) {
		json = pdu_json(t.type, buf, len, why, sizeof(why));
		if (json == NULL) {
			printf("note: %s; hex dump instead\n", why);
		}
	}
	if (json != NULL) {
		printf("%s\n", json);
		free(json);
	} else {
		hex_dump(buf, len);
	}
	rc = 0;
out:
	free(buf);
	hako_domain_close(dom);
	hako_pdudef_free(t.def);
	return rc;
}

/* ---- pdu-write ---- */

/* All of stdin, NUL-terminated, or NULL. */
static char *read_stdin(size_t *len)
{
	size_t cap = 4096, used = 0, n;
	char *buf = malloc(cap);
	while (buf != NULL && (n = fread(buf + used, 1, cap - used - 1, stdin)) > 0) {
		used += n;
		if (cap - used < 2) {
			char *nbuf = realloc(buf, cap * 2);
			if (nbuf == NULL) {
				free(buf);
			}
			buf = nbuf;
			cap *= 2;
		}
	}
	if (buf != NULL) {
		buf[used] = '\0';
		*len = used;
	}
	return buf;
}

static int cmd_pdu_write(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"pdudef", required_argument, NULL, 'p'},
	                                         {"type", required_argument, NULL, 't'},
	                                         COMMON_LONG_OPTIONS,
	                                         {NULL, 0, NULL, 0}};
	const char *pdudef = getenv("HAKO_PDUDEF"), *type_opt = NULL;
	int c, r;
	while ((c = getopt_long(argc, argv, ":d:hp:t:", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pdudef = optarg;
			r = -1;
			break;
		case 't':
			type_opt = optarg;
			r = -1;
			break;
		default: r = common_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if (argc - optind != 3) {
		return hako_cli_usage_error(cmd, "need <robot>, <name|channel-id> and '<json>'");
	}
	struct pdu_target t;
	hako_msg_registry_t *reg = NULL;
	const hako_msg_type_t *type;
	hako_domain_t *dom = NULL;
	uint8_t *buf = NULL;
	char *text = NULL;
	size_t text_len = 0;
	int rc = 1;
	if (pdu_target(&t, pdudef, type_opt, argv[optind], argv[optind + 1]) != 0) {
		goto out;
	}
	if (t.type == NULL) {
		errf("the type of %s/%ld is not known; give --pdudef FILE (or set HAKO_PDUDEF) "
		     "or --type PKG/TYPE",
		     t.robot, t.id);
		goto out;
	}
	char why[1400];
	if (find_type(t.type, &reg, &type, why, sizeof(why)) != 0) {
		errf("%s", why);
		goto out;
	}
	if (strcmp(argv[optind + 2], "-") == 0) {
		text = read_stdin(&text_len);
		if (text == NULL) {
			errf("cannot read the JSON from stdin");
			goto out;
		}
	} else {
		text_len = strlen(argv[optind + 2]);
	}
	if (open_domain(&dom) != 0) {
		goto out;
	}
	hako_channel_t *ch;
	r = hako_channel_lookup(dom, t.robot, (int32_t)t.id, &ch);
	if (r != 0) {
		errf("domain '%s' has no channel %s/%ld (the channels are listed by: hako-cmd "
		     "info)",
		     dname(), t.robot, t.id);
		goto out;
	}
	size_t size = hako_channel_size(ch), len = 0;
	buf = malloc(size);
	if (buf == NULL) {
		errf("out of memory");
		goto out;
	}
	hako_error_t err;
	hako_error_clear(&err);
	r = hako_pdu_from_json(type, text != NULL ? text : argv[optind + 2], text_len, buf, size,
	                       &len, &err);
	if (r == HAKO_ETOOBIG) {
		errf("%s/%ld: the PDU needs %zu bytes, the channel has %zu", t.robot, t.id, len,
		     size);
		goto out;
	}
	if (r != 0) {
		char msg[1200];
		errf("JSON for %s: %s", t.type, hako_error_format(&err, msg, sizeof(msg)));
		goto out;
	}
	r = hako_channel_write(ch, buf, len);
	if (r != 0) {
		errf("cannot write channel %s/%ld: %s", t.robot, t.id, hako_strerror(r));
		goto out;
	}
	print_target(&t);
	printf(": wrote %zu of %zu bytes (seq %" PRIu64 ")\n", len, size, hako_channel_seq(ch));
	rc = 0;
out:
	free(text);
	free(buf);
	hako_domain_close(dom);
	hako_msg_registry_destroy(reg);
	hako_pdudef_free(t.def);
	return rc;
}

/* ---- types / type ---- */

static int cmd_types(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int r = simple_options(cmd, argc, argv);
	if (r >= 0) {
		return r;
	}
	hako_msg_registry_t *reg;
	char **names = NULL;
	size_t n = 0;
	if ((r = hako_msg_registry_create(&reg)) != 0) {
		errf("cannot create the type registry: %s", hako_strerror(r));
		return 1;
	}
	r = hako_msg_registry_list(reg, &names, &n);
	if (r != 0) {
		errf("cannot list the types: %s", hako_strerror(r));
		hako_msg_registry_destroy(reg);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		printf("%s\n", names[i]);
	}
	hako_msg_names_free(names, n);
	hako_msg_registry_destroy(reg);
	return 0;
}

/* The type of f as the .msg writes it: "float64[9]", "geometry_msgs/Vector3", "uint8[]". */
static const char *field_type(const hako_msg_field_t *f, char *buf, size_t len)
{
	const char *base =
	    f->kind == HAKO_MSG_STRUCT ? f->type->full_name : hako_msg_kind_name(f->kind);
	if (f->form == HAKO_MSG_ARRAY) {
		snprintf(buf, len, "%s[%" PRIu32 "]", base, f->count);
	} else if (f->form == HAKO_MSG_VARRAY) {
		snprintf(buf, len, "%s[]", base);
	} else {
		snprintf(buf, len, "%s", base);
	}
	return buf;
}

/* Width of the FIELD column: the longest indented field name. */
static int field_width(const hako_msg_type_t *t, int depth)
{
	int w = 5;
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		int len = depth * 2 + (int)strlen(f->name);
		w = len > w ? len : w;
		if (f->kind == HAKO_MSG_STRUCT) {
			len = field_width(f->type, depth + 1);
			w = len > w ? len : w;
		}
	}
	return w;
}

/* The fields of t, nested ones indented under their field. Offsets are from the start of the
 * base (`origin` is where t starts in it) until an array of structs: the fields of its elements
 * are shown from the start of one element, as "+N". Returns 1 if it showed such offsets. */
static int print_fields(const hako_msg_type_t *t, uint32_t origin, int per_elem, int depth,
                        int width)
{
	static const char *const forms[] = {"single", "array", "varray"};
	int relative = per_elem;
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		char off[24], count[16], ty[HAKO_MSG_FULL_MAX + 16];
		snprintf(off, sizeof(off), "%s%" PRIu32, per_elem ? "+" : "", origin + f->offset);
		if (f->form == HAKO_MSG_ARRAY) {
			snprintf(count, sizeof(count), "%" PRIu32, f->count);
		} else {
			snprintf(count, sizeof(count), "-");
		}
		printf("%8s  %8" PRIu32 "  %-7s  %-6s  %5s  %*s%-*s  %s\n", off, f->size,
		       hako_msg_kind_name(f->kind), forms[f->form], count, depth * 2, "",
		       width - depth * 2, f->name, field_type(f, ty, sizeof(ty)));
		if (f->kind != HAKO_MSG_STRUCT) {
			continue;
		}
		if (f->form == HAKO_MSG_SINGLE) {
			relative |=
			    print_fields(f->type, origin + f->offset, per_elem, depth + 1, width);
		} else {
			relative |= print_fields(f->type, 0, 1, depth + 1, width);
		}
	}
	return relative;
}

static int cmd_type(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {COMMON_LONG_OPTIONS, {NULL, 0, NULL, 0}};
	int c, r;
	while ((c = getopt_long(argc, argv, ":d:h", longopts, NULL)) != -1) {
		if ((r = common_option(cmd, c, argv)) >= 0) {
			return r;
		}
	}
	if (argc - optind != 1) {
		return hako_cli_usage_error(cmd, "need one <pkg/Type>");
	}
	hako_msg_registry_t *reg = NULL;
	const hako_msg_type_t *t;
	char why[1400];
	if (find_type(argv[optind], &reg, &t, why, sizeof(why)) != 0) {
		errf("%s", why);
		hako_msg_registry_destroy(reg);
		return 1;
	}
	uint32_t fixed = hako_msg_pdu_fixed_size(t);
	printf("%s (%s)\n", t->full_name, t->path);
	printf("size %" PRIu32 ", align %" PRIu32 ", fixed PDU size %" PRIu32
	       " bytes (24 meta + base rounded up to 8)%s\n",
	       t->size, t->align, fixed, t->has_varray ? " + heap for the variable arrays" : "");
	if (t->field_count == 0) {
		printf("no fields\n");
	} else {
		int w = field_width(t, 0);
		printf("\n%8s  %8s  %-7s  %-6s  %5s  %-*s  %s\n", "OFFSET", "SIZE", "KIND", "FORM",
		       "COUNT", w, "FIELD", "TYPE");
		if (print_fields(t, 0, 0, 0, w)) {
			printf("\n+N: offset in one element of the array above it\n");
		}
	}
	hako_msg_registry_destroy(reg);
	return 0;
}

/* ---- clean ---- */

static int cmd_clean(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"force", no_argument, NULL, 'f'}, COMMON_LONG_OPTIONS, {NULL, 0, NULL, 0}};
	int force = 0, c, r;
	while ((c = getopt_long(argc, argv, ":d:hf", longopts, NULL)) != -1) {
		if (c == 'f') {
			force = 1;
		} else if ((r = common_option(cmd, c, argv)) >= 0) {
			return r;
		}
	}
	if ((r = no_operands(cmd, argc, argv)) >= 0) {
		return r;
	}
	hako_domain_t *dom = NULL;
	unsigned uid;
	if (force) {
		/* Nothing of the segment is read: whatever it holds, it goes. */
		r = hako_domain_owner(dname(), &uid) == HAKO_ENOENT ? HAKO_ENOENT : HAKO_EAGAIN;
	} else {
		library_quiet(1);
		r = hako_domain_open(dname(), &dom);
		library_quiet(0);
	}
	if (r == HAKO_ENOENT) {
		errf("no domain '%s': nothing to clean", dname());
		return 1;
	}
	if (r == HAKO_EPERM) {
		errf(
		    "domain '%s': /dev/shm/hako.%s belongs to another user; remove it anyway with: "
		    "hako-cmd clean --force",
		    dname(), dname());
		return 1;
	}
	if (r == 0) {
		hako_domain_info_t info;
		int n = 0, alive = 0;
		hako_domain_get_info(dom, &info);
		hako_asset_info_t *a = list_assets(dom, &n);
		for (int i = 0; a != NULL && i < n; i++) {
			alive += a[i].alive != 0;
		}
		free(a);
		hako_domain_close(dom);
		if (info.master_alive && !force) {
			errf("domain '%s' has a live conductor (pid %d); stop it with Ctrl-C or "
			     "kill %d, or remove the segment anyway with: hako-cmd clean --force",
			     dname(), info.master_pid, info.master_pid);
			return 1;
		}
		if (alive > 0) {
			printf("note: %d asset process%s still attached; %s keep%s the old "
			       "segment mapped\n",
			       alive, alive == 1 ? " is" : "es are", alive == 1 ? "it" : "they",
			       alive == 1 ? "s" : "");
		}
	}
	/* A segment that does not open (another layout version, garbage) is removed too: that is
	 * what clean is for. */
	r = hako_domain_remove(dname());
	if (r != 0) {
		errf("cannot remove /dev/shm/hako.%s: %s", dname(), hako_strerror(r));
		return 1;
	}
	printf("domain '%s' removed (/dev/shm/hako.%s)\n", dname(), dname());
	return 0;
}

/* ---- watch ---- */

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
	       hako_state_name(info->state), sec(info->world_time), info->world_steps);
	if (rate >= 0.0 && info->state == HAKO_STATE_RUNNING) {
		printf("  %.2fx real time", rate);
	}
	printf("\n%s  every %lld ms, Ctrl-C to quit  Dmax %.3f ms\n", clock, (long long)interval_ms,
	       msec(info->max_delay_usec));
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
		       sec(a[i].time_usec), msec(a[i].lag_usec), msec(max), a[i].steps,
		       a[i].alive ? "yes" : "NO");
	}
}

static int cmd_watch(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"interval-ms", required_argument, NULL, 'i'},
	                                         {"count", required_argument, NULL, 'n'},
	                                         COMMON_LONG_OPTIONS,
	                                         {NULL, 0, NULL, 0}};
	int64_t interval_ms = DEFAULT_WATCH_MS, count = 0;
	int c, r;
	while ((c = getopt_long(argc, argv, ":d:hi:n:", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': r = parse_i64(cmd, "--interval-ms", optarg, 10, &interval_ms); break;
		case 'n': r = parse_i64(cmd, "--count", optarg, 0, &count); break;
		default: r = common_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if ((r = no_operands(cmd, argc, argv)) >= 0) {
		return r;
	}
	hako_domain_t *dom;
	hako_domain_info_t info;
	if (open_domain(&dom) != 0) {
		return 1;
	}
	if (get_info(dom, &info) != 0) {
		hako_domain_close(dom);
		return 1;
	}
	int cap = (int)info.max_assets;
	struct drift *d = calloc((size_t)cap, sizeof(*d));
	if (d == NULL) {
		errf("out of memory");
		hako_domain_close(dom);
		return 1;
	}
	sigset_t sigs;
	stop_signals(&sigs, 0);
	int tty = isatty(STDOUT_FILENO);
	int rc = 0;
	hako_time_t prev_world = -1, prev_wall = 0;
	for (int64_t iter = 1;; iter++) {
		int n = 0;
		if (get_info(dom, &info) != 0) {
			rc = 1;
			break;
		}
		hako_asset_info_t *a = list_assets(dom, &n);
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
		free(a);
		fflush(stdout);
		if (!info.master_alive) {
			errf("the conductor of domain '%s' (pid %d) is gone", dname(),
			     info.master_pid);
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
			       msec(d[i].max));
			shown++;
		}
	}
	if (shown > 0) {
		printf(" (Dmax %.3f ms)\n", msec(info.max_delay_usec));
	}
	free(d);
	hako_domain_close(dom);
	return rc;
}

/* ---- dispatch ---- */

static const hako_cli_command_t commands[] = {
    {"conductor", "[--delta-usec N] [--max-delay-usec N] [--real-time-factor F] [--config FILE]",
     "create the domain and run its conductor in the foreground",
     "Create the domain and run its conductor (the master: state transitions, liveness, "
     "pacing) in the foreground until Ctrl-C or SIGTERM; the segment is removed on exit.",
     "  --delta-usec N        world clock step dT_c in microseconds (default 1000)\n"
     "  --max-delay-usec N    Dmax: how far the world may run ahead of any asset\n"
     "                        (default: the delta, i.e. lock-step)\n"
     "  --real-time-factor F  0 = as fast as possible (default), 1 = wall-clock pace,\n"
     "                        2 = twice as fast as the wall clock\n"
     "  --config FILE         core config JSON: max_assets, max_channels, arena_bytes,\n"
     "                        heartbeat_timeout_usec, liveness_policy\n"
     "                        (default: $HAKO_CORE_CONFIG)\n"
     "  -q, --quiet           do not log registrations and state changes\n",
     cmd_conductor},
    {"start", "[--no-wait] [--timeout-ms N]", "start the simulation and wait until it runs",
     "Start the simulation (stopped -> runnable -> running once every asset acknowledged) and "
     "wait for running.",
     "  --no-wait             return once the start is requested\n"
     "  --timeout-ms N        how long to wait for the new state (default 5000)\n",
     cmd_start},
    {"stop", "[--no-wait] [--timeout-ms N]", "stop the simulation and wait until it has stopped",
     "Stop the simulation (running -> stopping -> stopped once every asset acknowledged) and "
     "wait for stopped.",
     "  --no-wait             return once the stop is requested\n"
     "  --timeout-ms N        how long to wait for the new state (default 5000)\n",
     cmd_stop},
    {"reset", "[--no-wait] [--timeout-ms N]", "reset clocks and PDUs, or leave the error state",
     "Reset a stopped simulation (clocks and PDUs back to zero; the assets run on_reset), or "
     "leave the error state (dead assets are removed); wait for stopped.",
     "  --no-wait             return once the reset is requested\n"
     "  --timeout-ms N        how long to wait for the new state (default 5000)\n",
     cmd_reset},
    {"status", "", "state, world time, assets, conductor (and why, in error)",
     "Print status=<state> as Hakoniwa does, then the world time, the number of assets, the "
     "conductor and, in the error state, the reason.",
     "", cmd_status},
    {"ls", "", "table of the assets and their clocks",
     "List the registered assets: id, pid, liveness, clock t_i, step, lag behind the world "
     "clock, steps done, heartbeat age and the event they have not acknowledged yet.",
     "", cmd_ls},
    {"pdu", "[--pdudef FILE] [--type PKG/TYPE] [--hex|--json|--raw] <robot> <channel-id|name>",
     "the latest PDU of a channel, as JSON when its type is known",
     "Print the latest PDU of a channel with its write sequence number and length: as JSON when "
     "the type is known (from the pdudef or --type), else as a hex dump. A PDU name is looked "
     "up in the pdudef.",
     "  --pdudef FILE         pdudef JSON to look PDU names and types up in\n"
     "                        (default: $HAKO_PDUDEF)\n"
     "  --type PKG/TYPE       the PDU's type (default: the pdudef's)\n"
     "  --hex                 hex dump even when the type is known\n"
     "  --json                print the JSON alone (fails if the type is unknown)\n"
     "  --raw                 write the bare bytes to stdout\n",
     cmd_pdu},
    {"pdu-write", "[--pdudef FILE] [--type PKG/TYPE] <robot> <name|channel-id> '<json>'",
     "write a PDU given as JSON to a channel",
     "Encode JSON (an object with the field names of the type's .msg; '-' reads it from "
     "stdin) as a PDU of the channel's type and write it to the channel. Missing fields are "
     "zero; the PDU must fit the channel.",
     "  --pdudef FILE         pdudef JSON to look PDU names and types up in\n"
     "                        (default: $HAKO_PDUDEF)\n"
     "  --type PKG/TYPE       the PDU's type (default: the pdudef's)\n",
     cmd_pdu_write},
    {"types", "", "list the known PDU types",
     "List the PDU types the .msg search path knows: the folders of $HAKO_MSG_PATH (separated "
     "by ':') and the built-in packages.",
     "", cmd_types},
    {"type", "<pkg/Type>", "layout of a PDU type: offset, size and kind of every field",
     "Print the layout of a PDU type: size, alignment and fixed PDU size, and every field with "
     "its offset, size, kind, form and count, nested fields indented under theirs.",
     "", cmd_type},
    {"info", "", "capacities, clock parameters and channels of the domain",
     "Print the layout version, capacities and their use, conductor, liveness policy, clock "
     "parameters, world time and the list of PDU channels.",
     "", cmd_info},
    {"watch", "[--interval-ms N] [--count N]", "live view of the clocks and their drift",
     "Live view of the state, the world time and each asset's clock with its drift behind the "
     "world clock (and the largest drift seen), until Ctrl-C.",
     "  --interval-ms N       refresh period (default 500, at least 10)\n"
     "  --count N             stop after N refreshes (default: until Ctrl-C)\n",
     cmd_watch},
    {"clean", "[--force]", "remove the shared-memory segment of the domain",
     "Remove the shared-memory segment of the domain (also one of another hako version).",
     "  -f, --force           remove it even though its conductor is alive\n", cmd_clean},
    {"help", "[command]", "help of hako-cmd or of a command",
     "Show the help of hako-cmd or of one command.", "", hako_cli_help},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void tool_usage(FILE *out)
{
	fprintf(out, "usage: hako-cmd [-d NAME] <command> [options]\n\n"
	             "Run the conductor of a hako domain (one shared-memory simulation on this "
	             "machine),\nand look at or drive it.\n\ncommands:\n");
	hako_cli_list_commands(out, 10);
	fprintf(out,
	        "\noptions:\n%s  -V, --version         print the version\n\n"
	        "'hako-cmd <command> --help' describes a command. Environment: HAKO_DOMAIN, "
	        "HAKO_CORE_CONFIG,\nHAKO_PDUDEF, HAKO_MSG_PATH, HAKO_LOG=debug|info|warn|error.\n",
	        common_options);
}

int main(int argc, char **argv)
{
	static const hako_cli_t cli = {
	    .prog = "hako-cmd",
	    .version = HAKO_VERSION,
	    .commands = commands,
	    .ncommands = NCOMMANDS,
	    .common_options = common_options,
	    .wrap_width = 80,
	    .domain = &opt_domain,
	    .usage = tool_usage,
	};
	return hako_cli_main(&cli, argc, argv);
}
