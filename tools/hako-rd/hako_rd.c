/* hako-rd: runtime delegation from the shell: validate an RD config, check RD traces, show who
 * owns each execution unit of a running domain (docs/rd.md).
 *
 * Exit codes: 0 success, 1 failure or a violated invariant (message on stderr), 2 usage error.
 */
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
#include "hako/log.h"
#include "hako/msg.h"
#include "hako/pdu.h"
#include "hako/rd.h"
#include "hako/conductor.h"
#include "hako/rd_full.h"
#include "hako_cli.h"

#ifndef HAKO_VERSION
#define HAKO_VERSION "unknown"
#endif

#define DEFAULT_WATCH_MS 500

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void errf(const char *fmt, ...)
{
	va_list ap;
	fputs("hako-rd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char *node_label(const hako_rd_config_t *cfg, uint8_t id, char *buf, size_t len)
{
	for (size_t i = 0; i < cfg->node_count; i++) {
		if (cfg->node_ids[i] == id) {
			snprintf(buf, len, "%u (%s)", id, cfg->node_names[i]);
			return buf;
		}
	}
	snprintf(buf, len, "%u", id);
	return buf;
}

static const char *status_name(int status)
{
	switch (status) {
	case HAKO_RD_OWNER_STABLE: return "stable";
	case HAKO_RD_OWNER_RELEASING: return "releasing";
	case HAKO_RD_OWNER_ACTIVATING: return "activating";
	default: return "?";
	}
}

/* ---- validate ---- */

static int validate(const char *path, int verbose)
{
	hako_rd_config_t *cfg;
	hako_error_t err;
	char buf[1200];
	if (hako_rd_config_load(path, &cfg, &err) != 0) {
		fprintf(stderr, "%s\n", hako_error_format(&err, buf, sizeof(buf)));
		return 1;
	}
	printf("%s: ok: %zu nodes, %zu execution units, trigger %s, hand-off timeout %.3f s, "
	       "config hash 0x%08" PRIx32 "\n",
	       path, cfg->node_count, cfg->eu_count, cfg->trigger.type,
	       (double)cfg->handoff_timeout_usec / 1e6, cfg->config_hash);
	for (size_t i = 0; i < cfg->eu_count; i++) {
		const hako_rd_eu_config_t *eu = &cfg->eus[i];
		char label[160];
		printf("  eu %" PRIu32 " %s: robot %s, initial owner %s, candidates", eu->id,
		       eu->name, eu->robot,
		       node_label(cfg, eu->initial_owner, label, sizeof(label)));
		for (size_t j = 0; j < eu->candidate_count; j++) {
			printf("%s%u", j == 0 ? " " : ",", eu->candidates[j]);
		}
		printf(", context <= %" PRIu32 " bytes\n", eu->max_context_bytes);
		if (verbose) {
			printf("    status %s (channel %" PRId32 ", %" PRIu32 " bytes), context %s "
			       "(channel %" PRId32 ", %" PRIu32 " bytes)\n",
			       eu->status.name, eu->status.channel_id, eu->status.pdu_size,
			       eu->context.name, eu->context.channel_id, eu->context.pdu_size);
			for (size_t j = 0; j < eu->write_count; j++) {
				printf("    writes %s (%s, channel %" PRId32 ", %" PRIu32
				       " bytes)\n",
				       eu->writes[j].name, eu->writes[j].type,
				       eu->writes[j].channel_id, eu->writes[j].pdu_size);
			}
		}
	}
	hako_rd_config_free(cfg);
	return 0;
}

/* ---- check ---- */

static int check(char **paths, int count)
{
	hako_rd_check_result_t res;
	hako_error_t err;
	char buf[1200];
	if (hako_rd_check((const char *const *)paths, (size_t)count, &res, &err) != 0) {
		fprintf(stderr, "%s\n", hako_error_format(&err, buf, sizeof(buf)));
		return 1;
	}
	printf("hako-rd check: %d trace%s\n", count, count == 1 ? "" : "s");
	printf("  writes      %" PRIu64 "\n", res.writes);
	printf("  model steps %" PRIu64 "\n", res.steps);
	printf("  hand-offs   %" PRIu64 "\n", res.handoffs);
	printf("  reclaims    %" PRIu64 "\n", res.reclaims);
	if (res.reads > 0) {
		printf("  reads       %" PRIu64 "\n", res.reads);
	}
	if (res.restarts > 0) {
		printf("  restarts    %" PRIu64 "\n", res.restarts);
	}
	printf("  violations  %" PRIu64 "\n", res.violations);
	if (res.violations > 0) {
		printf("FAIL: first violation: %s\n", res.first_violation);
		return 1;
	}
	printf("OK: one owner at a time, every write by the owner at its epoch, each model step "
	       "run once\n");
	return 0;
}

/* ---- status ---- */

static void print_header(hako_domain_t *dom)
{
	hako_domain_info_t info;
	if (hako_domain_get_info(dom, &info) == 0) {
		printf("domain %s: %s, world time %.6f s\n", info.name, hako_state_name(info.state),
		       (double)info.world_time / 1e6);
	}
}

static int show_config(hako_domain_t *dom, const hako_rd_config_t *cfg, hako_rd_node_t *obs)
{
	print_header(dom);
	printf("config %s (hash 0x%08" PRIx32 ")\n", cfg->path, cfg->config_hash);
	printf("%-4s %-20s %-11s %-5s %-24s %s\n", "EU", "NAME", "STATE", "EPOCH", "OWNER", "NEXT");
	for (size_t i = 0; i < cfg->eu_count; i++) {
		const hako_rd_eu_config_t *eu = &cfg->eus[i];
		hako_rd_eu_state_t st;
		char owner[160], next[160];
		if (hako_rd_get_state(obs, eu->id, &st) != 0) {
			return 1;
		}
		printf("%-4" PRIu32 " %-20s %-11s %-5u %-24s %s", eu->id, eu->name,
		       status_name(st.status), st.epoch,
		       node_label(cfg, st.curr_owner, owner, sizeof(owner)),
		       st.status == HAKO_RD_OWNER_STABLE
		           ? "-"
		           : node_label(cfg, st.next_owner, next, sizeof(next)));
		if (cfg->mode == HAKO_RD_MODE_FULL && st.status == HAKO_RD_OWNER_RELEASING &&
		    st.release_time_usec >= 0) {
			printf("  (commit point %.6f s)", (double)st.release_time_usec / 1e6);
		}
		printf("\n");
	}
	return 0;
}

/* Without a config: every channel holding a valid status PDU. */
static int show_scan(hako_domain_t *dom)
{
	hako_rd_status_entry_t *found = NULL;
	size_t cap = 0, n = 0;
	int r;
	/* Sized to what the last read found: EUs may appear in between. */
	while ((r = hako_rd_status_read(dom, found, cap, &n)) == 0 && n > cap) {
		hako_rd_status_entry_t *more = realloc(found, n * sizeof(*found));
		if (more == NULL) {
			r = HAKO_ENOMEM;
			break;
		}
		found = more;
		cap = n;
	}
	if (r != 0) {
		free(found);
		errf("cannot read the status PDUs of %s: %s", hako_domain_name(dom),
		     hako_strerror(r));
		return 1;
	}
	print_header(dom);
	printf("%-32s %-11s %-5s %-6s %-6s %s\n", "STATUS PDU (robot/channel)", "STATE", "EPOCH",
	       "OWNER", "NEXT", "CONFIG HASH");
	for (size_t i = 0; i < n; i++) {
		const hako_rd_status_entry_t *e = &found[i];
		char where[200];
		snprintf(where, sizeof(where), "%.127s/%" PRId32, e->robot, e->channel_id);
		printf("%-32s %-11s %-5u %-6u %-6u 0x%08" PRIx32 "\n", where,
		       status_name(e->status), e->epoch, e->curr_owner, e->next_owner,
		       e->config_hash);
	}
	if (n == 0) {
		printf("(no status PDU written in this domain)\n");
	}
	free(found);
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	while (!g_stop && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

static int status(const char *domain, const char *config, int watch, long interval_ms)
{
	hako_domain_t *dom;
	int r = hako_domain_open(domain, &dom);
	if (r != 0) {
		errf("domain %s: %s", domain, hako_strerror(r));
		return 1;
	}
	hako_rd_config_t *cfg = NULL;
	hako_rd_node_t *obs = NULL;
	hako_error_t err;
	char buf[1200];
	int rc = 1;
	if (config != NULL) {
		if (hako_rd_config_load(config, &cfg, &err) != 0) {
			fprintf(stderr, "%s\n", hako_error_format(&err, buf, sizeof(buf)));
			goto out;
		}
		if ((r = hako_rd_node_open(dom, cfg, 0, NULL, &obs)) != 0) {
			errf("cannot watch the execution units of %s: %s", config,
			     hako_strerror(r));
			goto out;
		}
	}
	int tty = isatty(STDOUT_FILENO);
	do {
		if (watch && tty) {
			fputs("\033[H\033[J", stdout);
		}
		rc = obs != NULL ? show_config(dom, cfg, obs) : show_scan(dom);
		if (watch && !tty) {
			putchar('\n');
		}
		fflush(stdout);
		if (watch) {
			sleep_ms(interval_ms);
		}
	} while (watch && !g_stop && rc == 0);
out:
	hako_rd_node_close(obs);
	hako_rd_config_free(cfg);
	hako_domain_close(dom);
	return rc;
}

/* ---- the command line ---- */

static const char *opt_domain; /* -d before the command */

/* HAKO_LOG set by the user always wins. */
static void library_log(int level)
{
	if (getenv("HAKO_LOG") == NULL) {
		hako_log_set_level(level);
	}
}

static int cmd_validate(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"verbose", no_argument, NULL, 'v'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int verbose = 0, c;
	while ((c = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
		if (c != 'v') {
			return hako_cli_common_option(cmd, c, argv);
		}
		verbose = 1;
	}
	if (argc - optind != 1) {
		return hako_cli_usage_error(cmd, "needs one RD config file");
	}
	return validate(argv[optind], verbose);
}

static int cmd_check(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"verbose", no_argument, NULL, 'v'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
		if (c != 'v') {
			return hako_cli_common_option(cmd, c, argv);
		}
		library_log(HAKO_LOG_INFO); /* every violation */
	}
	if (argc - optind < 1) {
		return hako_cli_usage_error(cmd, "needs at least one trace file");
	}
	return check(argv + optind, argc - optind);
}

static int cmd_status(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'}, {"domain", required_argument, NULL, 'd'},
	    {"watch", no_argument, NULL, 'w'},        {"interval", required_argument, NULL, 'i'},
	    {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	const char *config = getenv("HAKO_RD_CONFIG");
	const char *domain = opt_domain != NULL ? opt_domain : hako_domain_default_name();
	int watch = 0, c;
	long interval = DEFAULT_WATCH_MS;
	char *end;
	if (config != NULL && config[0] == '\0') {
		config = NULL;
	}
	while ((c = getopt_long(argc, argv, ":c:d:wi:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
		case 'd':
			if (optarg[0] == '\0') {
				return hako_cli_usage_error(cmd,
				                            "the domain name must not be empty");
			}
			domain = optarg;
			break;
		case 'w': watch = 1; break;
		case 'i':
			interval = strtol(optarg, &end, 10);
			if (*end != '\0' || interval < 10) {
				return hako_cli_usage_error(
				    cmd, "--interval: '%s' is not a number of ms >= 10", optarg);
			}
			break;
		default: return hako_cli_common_option(cmd, c, argv);
		}
	}
	if (optind < argc) {
		return hako_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	return status(domain, config, watch, interval);
}

/* An EU or a node of cfg by name or number: its id, or -1. */
static long lookup(const hako_rd_config_t *cfg, const char *what, int node)
{
	char *end;
	long v = strtol(what, &end, 10);
	int number = what[0] != '\0' && *end == '\0';
	if (node) {
		for (size_t i = 0; i < cfg->node_count; i++) {
			if ((number && cfg->node_ids[i] == v) ||
			    strcmp(cfg->node_names[i], what) == 0) {
				return cfg->node_ids[i];
			}
		}
		return -1;
	}
	for (size_t i = 0; i < cfg->eu_count; i++) {
		if ((number && cfg->eus[i].id == (uint32_t)v) ||
		    strcmp(cfg->eus[i].name, what) == 0) {
			return (long)cfg->eus[i].id;
		}
	}
	return -1;
}

/* RD-Full: ask the federation's server to move an EU. */
static int move(const char *conductor, const char *eu_arg, const char *node_arg, int timeout_ms)
{
	hako_conductor_config_t *cc = NULL;
	hako_rd_config_t *rd = NULL;
	hako_error_t err;
	char msg[1200];
	if (hako_conductor_config_load(conductor, &cc, &err) != 0) {
		fprintf(stderr, "hako-rd move: %s\n", hako_error_format(&err, msg, sizeof(msg)));
		return 2;
	}
	int rc = 2;
	if (cc->rd_config_path[0] == '\0') {
		fprintf(stderr,
		        "hako-rd move: %s has no rd_config_path: its federation has no RD\n",
		        conductor);
		goto done;
	}
	if (hako_rd_config_load(cc->rd_config_path, &rd, &err) != 0) {
		fprintf(stderr, "hako-rd move: %s\n", hako_error_format(&err, msg, sizeof(msg)));
		goto done;
	}
	long eu = lookup(rd, eu_arg, 0), to = lookup(rd, node_arg, 1);
	if (eu < 0 || to < 0) {
		fprintf(stderr, "hako-rd move: %s: no %s \"%s\"\n", cc->rd_config_path,
		        eu < 0 ? "execution unit" : "node", eu < 0 ? eu_arg : node_arg);
		goto done;
	}
	hako_rd_commit_t c;
	char why[256];
	int r =
	    hako_rd_full_request(cc, (uint32_t)eu, (uint8_t)to, timeout_ms, &c, why, sizeof(why));
	char label[160];
	if (r == 0) {
		printf("committed: EU %s to node %s at epoch %u, commit point %.6f s\n", eu_arg,
		       node_label(rd, (uint8_t)to, label, sizeof(label)), c.epoch,
		       (double)c.commit_usec / 1e6);
		rc = 0;
	} else {
		fprintf(stderr, "hako-rd move: refused (%s): %s\n", hako_strerror(r), why);
		rc = 1;
	}
done:
	hako_rd_config_free(rd);
	hako_conductor_config_free(cc);
	return rc;
}

/* What a monitor asks for: prints the decision, counts it. */
struct monitor {
	const hako_rd_config_t *rd;
	hako_rd_full_requester_t *rq;
	hako_member_t *member; /* the ExMonitor is an asset of the server's domain */
	int moves;
	int refused;
};

/* The next step of the ExMonitor's asset: 0 with *t = the world time it decides at (the end of
 * the step, which the world cannot pass by more than Dmax while it decides), or -1 when the
 * run ended (stop, reset, error, a signal). */
static int monitor_step(struct monitor *m, hako_time_t *t)
{
	for (;;) {
		if (g_stop) {
			return -1;
		}
		int ev = hako_member_event(m->member);
		if (ev < 0) {
			return -1; /* removed from the domain */
		}
		if (ev != HAKO_EVENT_NONE) {
			hako_member_ack(m->member, ev);
			if (ev != HAKO_EVENT_START) {
				return -1;
			}
		}
		int r = hako_member_step_poll(m->member);
		if (r == 0) {
			*t = hako_member_time(m->member) + hako_member_delta(m->member);
			return 0;
		}
		if (r != HAKO_EAGAIN && r != HAKO_EINTR) {
			return -1;
		}
		if (hako_member_wait_event(m->member, 1000, &ev) == 0 && ev != HAKO_EVENT_NONE) {
			continue; /* served at the top */
		}
	}
}

static void ask_move(struct monitor *m, const hako_rd_eu_config_t *eu, uint8_t from, uint8_t to,
                     hako_time_t t, const char *why_now)
{
	hako_rd_commit_t c;
	char why[256], a[160], b[160];
	int r = hako_rd_full_requester_ask(m->rq, eu->id, to, 5000, &c, why, sizeof(why));
	if (r == 0) {
		m->moves++;
		printf("t=%.3f s  EU %s%s: node %s -> node %s, epoch %u, commit point %.6f s\n",
		       (double)t / 1e6, eu->name, why_now, node_label(m->rd, from, a, sizeof(a)),
		       node_label(m->rd, to, b, sizeof(b)), c.epoch, (double)c.commit_usec / 1e6);
	} else {
		m->refused++;
		printf("t=%.3f s  EU %s%s: move to node %s refused: %s\n", (double)t / 1e6,
		       eu->name, why_now, node_label(m->rd, to, b, sizeof(b)), why);
	}
	fflush(stdout);
}

/* 1 while world time t leaves room for a hand-off before the run's stop time. */
static int room_before_stop(hako_domain_t *dom, hako_time_t t, hako_time_t dmax)
{
	hako_time_t stop_at = hako_domain_stop_time(dom);
	return stop_at <= 0 || t + 2 * dmax < stop_at;
}

/* Timetable: every period of world time, each EU to its next candidate (in the config's order,
 * after the current owner). */
static void monitor_timetable(struct monitor *m, hako_domain_t *dom, hako_rd_node_t *obs,
                              hako_time_t dmax)
{
	const hako_rd_config_t *rd = m->rd;
	hako_time_t period = rd->trigger.period_usec, t = 0, next = -1;
	while (monitor_step(m, &t) == 0) {
		if (next < 0) {
			next = (t / period + 1) * period;
		}
		if (t >= next) {
			if (!room_before_stop(dom, next, dmax)) {
				break; /* the run ends before a hand-off could complete */
			}
			for (size_t i = 0; i < rd->eu_count; i++) {
				const hako_rd_eu_config_t *eu = &rd->eus[i];
				hako_rd_eu_state_t st;
				if (hako_rd_get_state(obs, eu->id, &st) != 0) {
					continue;
				}
				size_t k = 0;
				while (k < eu->candidate_count &&
				       eu->candidates[k] != st.curr_owner) {
					k++;
				}
				ask_move(m, eu, st.curr_owner,
				         eu->candidates[(k + 1) % eu->candidate_count], next, "");
			}
			next += period;
		}
		hako_member_step_done(m->member);
	}
}

/* Boundary: the EU's position (linear.<axis> of its first write, a geometry_msgs/Twist, as it
 * reaches this node through the bridges) against the boundary, with the margin of a hand-off
 * between two client nodes, v_max * 2 Dmax: the commit point is 2 Dmax of world time after the
 * request, and the position read here is up to Dmax old. The velocity is the position's change
 * over at least 200 ms of world time. Hysteresis and cooldown as in RD-Light. */
struct boundary_eu {
	uint8_t owner; /* the owner the trigger state belongs to, 0: none yet */
	int have;
	double x, prev_x, vel;
	hako_time_t prev_t;
	hako_rd_trigger_state_t tst;
};

static int axis_offset(const char *axis)
{
	return strcmp(axis, "x") == 0   ? 0
	       : strcmp(axis, "y") == 0 ? 8
	       : strcmp(axis, "z") == 0 ? 16
	                                : -1;
}

static void monitor_boundary(struct monitor *m, hako_domain_t *dom, hako_rd_node_t *obs,
                             hako_time_t dmax)
{
	const hako_rd_config_t *rd = m->rd;
	const hako_rd_trigger_t *tr = &rd->trigger;
	struct boundary_eu *be = calloc(rd->eu_count, sizeof(*be));
	if (be == NULL) {
		fprintf(stderr, "hako-rd monitor: out of memory\n");
		return;
	}
	int off = axis_offset(tr->axis);
	uint8_t buf[4096];
	hako_time_t t = 0;
	while (monitor_step(m, &t) == 0) {
		if (!room_before_stop(dom, t, dmax)) {
			break;
		}
		for (size_t i = 0; i < rd->eu_count; i++) {
			const hako_rd_eu_config_t *eu = &rd->eus[i];
			struct boundary_eu *b = &be[i];
			hako_rd_eu_state_t st;
			size_t len = 0;
			if (hako_rd_get_state(obs, eu->id, &st) != 0 ||
			    st.status != HAKO_RD_OWNER_STABLE) {
				continue; /* a hand-off in progress: nothing to ask */
			}
			if (st.curr_owner != b->owner) {
				b->owner = st.curr_owner;
				b->have = 0;
			}
			if (hako_rd_read(obs, eu->id, 0, buf, sizeof(buf), &len) != 0 ||
			    len < HAKO_PDU_META_SIZE + (size_t)off + 8) {
				continue; /* no PDU of this epoch here yet */
			}
			double x;
			memcpy(&x, (const uint8_t *)hako_pdu_base(buf) + off, sizeof(x));
			if (!b->have) {
				b->have = 1;
				b->x = b->prev_x = x;
				b->prev_t = t;
				b->vel = 0;
				hako_rd_trigger_reset(&b->tst, x, t);
				continue;
			}
			b->x = x;
			if (t - b->prev_t >= 200000) {
				b->vel = (x - b->prev_x) / ((double)(t - b->prev_t) / 1e6);
				b->prev_x = x;
				b->prev_t = t;
			}
			uint8_t to = hako_rd_trigger_boundary(tr, &b->tst, st.curr_owner, x, b->vel,
			                                      t, 2 * dmax);
			if (to != 0 && to != st.curr_owner) {
				char why_now[160];
				snprintf(why_now, sizeof(why_now),
				         " at %s=%.3f (%.3f m/s), boundary %.3f, margin %.3f",
				         tr->axis, x, b->vel, tr->boundary,
				         hako_rd_trigger_margin(tr, 2 * dmax));
				ask_move(m, eu, st.curr_owner, to, t, why_now);
				b->owner = 0; /* tracked again once the move settled */
			}
		}
		hako_member_step_done(m->member);
	}
	free(be);
}

/* RD-Full's ExMonitor: the RD config's trigger ("timetable" or "boundary") decides when each EU
 * moves and where; the conductor's server commits. */
static int monitor(const char *conductor, const char *domain, const char *asset)
{
	hako_conductor_config_t *cc = NULL;
	hako_rd_config_t *rd = NULL;
	hako_domain_t *dom = NULL;
	hako_rd_node_t *obs = NULL;
	hako_error_t err;
	char msg[1200];
	int rc = 1;
	struct monitor m = {NULL, NULL, NULL, 0, 0};
	if (hako_conductor_config_load(conductor, &cc, &err) != 0 ||
	    (cc->rd_config_path[0] != '\0' &&
	     hako_rd_config_load(cc->rd_config_path, &rd, &err) != 0)) {
		fprintf(stderr, "hako-rd monitor: %s\n", hako_error_format(&err, msg, sizeof(msg)));
		goto done;
	}
	int timetable = rd != NULL && strcmp(rd->trigger.type, "timetable") == 0;
	int boundary = rd != NULL && strcmp(rd->trigger.type, "boundary") == 0;
	if (rd == NULL || rd->mode != HAKO_RD_MODE_FULL || (!timetable && !boundary)) {
		fprintf(
		    stderr,
		    "hako-rd monitor: %s: needs an rd_config_path whose RD config has \"mode\": "
		    "\"full\" and a trigger of type \"timetable\" or \"boundary\"\n",
		    conductor);
		goto done;
	}
	if (boundary) {
		for (size_t i = 0; i < rd->eu_count; i++) {
			const hako_rd_pdu_ref_t *w = &rd->eus[i].writes[0];
			if (rd->eus[i].write_count == 0 ||
			    strcmp(w->type, "geometry_msgs/Twist") != 0 ||
			    axis_offset(rd->trigger.axis) < 0) {
				fprintf(stderr,
				        "hako-rd monitor: %s: the boundary trigger reads linear.x, "
				        ".y or "
				        ".z (\"axis\") of each EU's first write, a "
				        "geometry_msgs/Twist; "
				        "EU %s writes %s first, axis \"%s\"\n",
				        rd->path, rd->eus[i].name,
				        rd->eus[i].write_count > 0 ? w->type : "nothing",
				        rd->trigger.axis);
				goto done;
			}
		}
	}
	int r = hako_domain_open(domain, &dom);
	if (r == 0) {
		r = hako_rd_node_open(dom, rd, 0, NULL, &obs);
	}
	if (r != 0) {
		fprintf(stderr, "hako-rd monitor: domain '%s': %s\n", domain, hako_strerror(r));
		goto done;
	}
	m.rd = rd;
	if ((r = hako_member_register(dom, asset, cc->delta_usec, &m.member)) != 0) {
		fprintf(stderr, "hako-rd monitor: asset '%s' in domain '%s': %s\n", asset, domain,
		        hako_strerror(r));
		goto done;
	}
	if ((r = hako_rd_full_requester_open(cc, &m.rq)) != 0) {
		fprintf(stderr, "hako-rd monitor: cannot reach %s: %s\n", cc->control_address,
		        hako_strerror(r));
		goto done;
	}
	if (timetable) {
		printf("monitor: every %.3f s of world time, each EU to its next candidate\n",
		       (double)rd->trigger.period_usec / 1e6);
	} else {
		printf("monitor: every EU at the %s = %.3f boundary, margin v_max * 2 Dmax = %.3f "
		       "(%.3f below: node %u, above: node %u)\n",
		       rd->trigger.axis, rd->trigger.boundary,
		       hako_rd_trigger_margin(&rd->trigger, 2 * cc->max_delay_usec),
		       rd->trigger.boundary, rd->trigger.low_owner, rd->trigger.high_owner);
	}
	fflush(stdout);
	if (timetable) {
		monitor_timetable(&m, dom, obs, cc->max_delay_usec);
	} else {
		monitor_boundary(&m, dom, obs, cc->max_delay_usec);
	}
	hako_member_unregister(m.member); /* the world goes on without it */
	m.member = NULL;
	printf("monitor: %d moves committed, %d refused\n", m.moves, m.refused);
	rc = 0;
done:
	hako_member_unregister(m.member);
	hako_rd_full_requester_close(m.rq);
	hako_rd_node_close(obs);
	hako_domain_close(dom);
	hako_rd_config_free(rd);
	hako_conductor_config_free(cc);
	return rc;
}

static int cmd_monitor(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"conductor", required_argument, NULL, 'c'},
	                                         {"domain", required_argument, NULL, 'd'},
	                                         {"asset", required_argument, NULL, 'a'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	const char *conductor = NULL;
	const char *domain = opt_domain != NULL ? opt_domain : hako_domain_default_name();
	const char *asset = "exmonitor";
	int c;
	while ((c = getopt_long(argc, argv, ":c:d:a:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': conductor = optarg; break;
		case 'd': domain = optarg; break;
		case 'a': asset = optarg; break;
		default: return hako_cli_common_option(cmd, c, argv);
		}
	}
	if (conductor == NULL || optind < argc) {
		return hako_cli_usage_error(cmd, "needs --conductor FILE and nothing else");
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	return monitor(conductor, domain, asset);
}

static int cmd_move(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"conductor", required_argument, NULL, 'c'},
	                                         {"timeout", required_argument, NULL, 't'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	const char *conductor = NULL;
	long timeout = 5000;
	char *end;
	int c;
	while ((c = getopt_long(argc, argv, ":c:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': conductor = optarg; break;
		case 't':
			timeout = strtol(optarg, &end, 10);
			if (*end != '\0' || timeout < 1 || timeout > 3600000) {
				return hako_cli_usage_error(
				    cmd, "--timeout: '%s' is not a number of ms", optarg);
			}
			break;
		default: return hako_cli_common_option(cmd, c, argv);
		}
	}
	if (conductor == NULL) {
		return hako_cli_usage_error(cmd,
		                            "needs --conductor FILE (a node's conductor file)");
	}
	if (argc - optind != 2) {
		return hako_cli_usage_error(cmd, "needs an EU and a node");
	}
	return move(conductor, argv[optind], argv[optind + 1], (int)timeout);
}

static const hako_cli_command_t commands[] = {
    {"validate", "[-v] FILE", "load and check an RD config; print what it declares",
     "Load and check an RD config and print what it declares: nodes, execution units, trigger, "
     "hand-off timeout and config hash.",
     "  -v, --verbose         also the status, context and written PDUs of each unit\n",
     cmd_validate},
    {"check", "[-v] TRACE...", "verify the RD invariants on JSON-lines traces",
     "Verify the RD invariants on JSON-lines traces (one owner at a time, every write by the "
     "owner at its epoch, each model step run once); exit 1 on any violation.",
     "  -v, --verbose         every violation, not only the first\n", cmd_check},
    {"status", "[--config FILE] [-d DOMAIN] [--watch] [--interval MS]",
     "each execution unit's owner, epoch and state",
     "Each execution unit's owner, epoch and state in a running domain (live with --watch). "
     "Without a config (or $HAKO_RD_CONFIG) the domain's channels are scanned for status "
     "PDUs.",
     "  -c, --config FILE     RD config (default: $HAKO_RD_CONFIG)\n"
     "  -d, --domain NAME     domain (default: $HAKO_DOMAIN, else \"default\")\n"
     "  -w, --watch           redraw until Ctrl-C\n"
     "  -i, --interval MS     redraw period with --watch (default 500)\n",
     cmd_status},
    {"move", "--conductor FILE [--timeout MS] EU NODE",
     "ask the federation's server to move an execution unit (RD-Full)",
     "Ask the server of a running federation (RD-Full) to hand an execution unit over to a "
     "node: EU and NODE by name or id in the RD config the conductor file names. Prints the "
     "epoch and commit point, or the reason of a refusal (exit 1).",
     "  -c, --conductor FILE  a conductor file of the federation (any node's)\n"
     "  -t, --timeout MS      how long to wait for the server's answer (default 5000)\n",
     cmd_move},
    {"monitor", "--conductor FILE [-d DOMAIN] [-a ASSET]",
     "the ExMonitor: moves EUs by the RD config's trigger (RD-Full)",
     "Run the ExMonitor of an RD-Full federation, as an asset of a node's domain (-d; the "
     "server's, usually), so the world waits for its decisions. The RD config's trigger "
     "decides: \"timetable\" asks the server to move each execution unit to its next "
     "candidate every period_usec of world time; \"boundary\" reads linear.<axis> of each "
     "EU's first write (a geometry_msgs/Twist, bridged to this node) and asks for a move "
     "when it crosses the boundary, margin v_max * 2 Dmax, with the hysteresis and cooldown. "
     "Prints each move; ends with the run.",
     "  -c, --conductor FILE  a conductor file of the federation (any node's)\n"
     "  -d, --domain NAME     the node's domain (default: $HAKO_DOMAIN, else \"default\")\n"
     "  -a, --asset NAME      its asset's name (default \"exmonitor\")\n",
     cmd_monitor},
    {"help", "[command]", "help of hako-rd or of a command",
     "Show the help of hako-rd or of one command.", "", hako_cli_help},
};

static void tool_usage(FILE *out)
{
	fprintf(out, "usage: hako-rd [-d NAME] <command> [options]\n\n"
	             "Runtime delegation from the shell: RD configs, RD traces, and who owns each\n"
	             "execution unit of a running domain.\n\ncommands:\n");
	hako_cli_list_commands(out, 8);
	fprintf(out, "\noptions:\n"
	             "  -d, --domain NAME     domain (default: $HAKO_DOMAIN, else \"default\")\n"
	             "  -h, --help            show this help\n"
	             "  -V, --version         print the version\n\n"
	             "'hako-rd <command> --help' describes a command. Formats: docs/rd.md.\n");
}

static void before_run(void)
{
	library_log(HAKO_LOG_ERROR);
}

int main(int argc, char **argv)
{
	static const hako_cli_t cli = {
	    .prog = "hako-rd",
	    .version = HAKO_VERSION,
	    .commands = commands,
	    .ncommands = sizeof(commands) / sizeof(commands[0]),
	    .common_options = "  -h, --help            show this help\n",
	    .wrap_width = 80,
	    .domain = &opt_domain,
	    .usage = tool_usage,
	    .before_run = before_run,
	};
	return hako_cli_main(&cli, argc, argv);
}
