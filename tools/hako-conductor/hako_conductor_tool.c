/* hako-conductor: run a node of a federation (its domain, its master and its link to the other
 * nodes), show a node's status, check the drift of a run, generate a federation's files, check
 * a Hakoniwa generated tree (docs/conductor.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hako/conductor.h"
#include "hako/rd_full.h"
#include "hako/domain.h"
#include "hako/log.h"
#include "conductor_gen.h"
#include "conductor_tree.h"
#include "hako_cli.h"

#ifndef HAKO_VERSION
#define HAKO_VERSION "unknown"
#endif

static const char *opt_domain;

static void errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void errf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("hako-conductor: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int parse_num(const hako_cli_command_t *cmd, const char *opt, const char *s, long long min,
                     long long max, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
		return hako_cli_usage_error(cmd, "%s: '%s' is not an integer in [%lld, %lld]", opt,
		                            s, min, max);
	}
	*out = v;
	return -1;
}

/* ---- drift table ---- */

static void print_peers(FILE *out, const hako_conductor_peer_stats_t *st, int n, hako_time_t dmax)
{
	fprintf(out, "%-16s %-7s %14s %12s %12s %12s %10s %8s\n", "peer", "state", "known_us",
	        "drift_p50", "drift_p95", "drift_max", "age_p50", "garbage");
	for (int i = 0; i < n; i++) {
		fprintf(out, "%-16s %-7s %14lld %12lld %12lld %12lld %10lld %8llu\n", st[i].node_id,
		        !st[i].joined     ? "-"
		        : st[i].connected ? "ok"
		                          : "lost",
		        (long long)st[i].known_time, (long long)st[i].drift_p50_usec,
		        (long long)st[i].drift_p95_usec, (long long)st[i].drift_max_usec,
		        (long long)st[i].age_p50_usec, (unsigned long long)st[i].garbage);
	}
	fprintf(out,
	        "(drift = own world time - the peer's world time as last received, us; bound: "
	        "Dmax = %lld us)\n",
	        (long long)dmax);
}

/* ---- run ---- */

static int cmd_run(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"domain", required_argument, NULL, 'd'},
	                                         {"real-time-factor", required_argument, NULL, 'r'},
	                                         {"trace", required_argument, NULL, 't'},
	                                         {"verbose", no_argument, NULL, 'v'},
	                                         {"quiet", no_argument, NULL, 'q'},
	                                         HAKO_CLI_HELP_VERSION,
	                                         {NULL, 0, NULL, 0}};
	const char *domain = opt_domain, *trace = NULL;
	double rtf = 0.0;
	int c, quiet = 0;
	while ((c = getopt_long(argc, argv, ":d:r:t:vqhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': domain = optarg; break;
		case 'r': {
			char *end;
			rtf = strtod(optarg, &end);
			if (*end != '\0' || !(rtf >= 0.0)) {
				return hako_cli_usage_error(cmd,
				                            "--real-time-factor: '%s' is not a "
				                            "number >= 0",
				                            optarg);
			}
			break;
		}
		case 't': trace = optarg; break;
		case 'v': hako_log_set_level(HAKO_LOG_INFO); break;
		case 'q': quiet = 1; break;
		default: return hako_cli_common_option(cmd, c, argv);
		}
	}
	if (optind + 1 != argc) {
		return hako_cli_usage_error(cmd, "one conductor file, please");
	}
	hako_error_t err;
	char msg[1200];
	hako_conductor_config_t *cfg = NULL;
	if (hako_conductor_config_load(argv[optind], &cfg, &err) != 0) {
		errf("%s", hako_error_format(&err, msg, sizeof(msg)));
		return 1;
	}
	if (domain == NULL) {
		domain = cfg->domain[0] != '\0' ? cfg->domain : getenv("HAKO_DOMAIN");
	}
	if (domain == NULL || domain[0] == '\0') {
		domain = cfg->node_id;
	}
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	hako_domain_config_t dc;
	if (hako_domain_config_default(&dc) != 0) {
		hako_conductor_config_free(cfg);
		return 1;
	}
	hako_domain_t *dom = NULL;
	hako_master_t *master = NULL;
	hako_conductor_node_t *node = NULL;
	int r = hako_domain_create(domain, &dc, &dom);
	if (r != 0) {
		errf("cannot create domain '%s': %s", domain, hako_strerror(r));
		hako_conductor_config_free(cfg);
		return 1;
	}
	hako_master_config_t mc = {cfg->delta_usec, cfg->max_delay_usec, rtf};
	int rc = 1;
	if ((r = hako_master_start(dom, &mc, &master)) != 0) {
		errf("domain '%s': cannot start its master: %s", domain, hako_strerror(r));
		goto out;
	}
	if (hako_rd_full_node_start(cfg, dom, &node, &err) != 0) {
		errf("%s", hako_error_format(&err, msg, sizeof(msg)));
		goto out;
	}
	if (trace != NULL && hako_conductor_node_trace(node, trace) != 0) {
		errf("cannot write the trace %s: %s", trace, strerror(errno));
		goto out;
	}
	if (!quiet) {
		printf(
		    "hako-conductor: %s %s on domain '%s' (delta %lld us, Dmax %lld us), control "
		    "%s\n",
		    cfg->role == HAKO_CONDUCTOR_SERVER ? "server" : "client", cfg->node_id, domain,
		    (long long)cfg->delta_usec, (long long)cfg->max_delay_usec,
		    cfg->control_address);
		fflush(stdout);
	}
	int sig = 0;
	sigwait(&sigs, &sig);
	rc = 0;
	hako_conductor_peer_stats_t st[HAKO_CONDUCTOR_MAX_CLIENTS];
	int n = 0;
	if (hako_conductor_node_stats(node, st, HAKO_CONDUCTOR_MAX_CLIENTS, &n) == 0 && !quiet) {
		printf("hako-conductor: %s stops (world time %lld us)\n", cfg->node_id,
		       (long long)hako_domain_world_time(dom));
		print_peers(stdout, st, n, cfg->max_delay_usec);
	}
out:
	hako_conductor_node_stop(node);
	hako_master_stop(master);
	hako_domain_close(dom);
	hako_domain_remove(domain);
	hako_conductor_config_free(cfg);
	return rc;
}

/* ---- status ---- */

static int cmd_status(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"domain", required_argument, NULL, 'd'}, HAKO_CLI_HELP_VERSION, {NULL, 0, NULL, 0}};
	const char *domain = opt_domain;
	int c;
	while ((c = getopt_long(argc, argv, ":d:hV", longopts, NULL)) != -1) {
		if (c == 'd') {
			domain = optarg;
		} else {
			return hako_cli_common_option(cmd, c, argv);
		}
	}
	if (domain == NULL) {
		domain = hako_domain_default_name();
	}
	hako_domain_t *dom = NULL;
	int r = hako_domain_open(domain, &dom);
	if (r != 0) {
		errf("cannot open domain '%s': %s", domain, hako_strerror(r));
		return 1;
	}
	static hako_conductor_status_t st;
	/* Right after a reset the status is empty until the node writes it again (at once). */
	hako_time_t until = hako_now_usec() + 500000;
	while ((r = hako_conductor_status_read(dom, &st)) == HAKO_EAGAIN &&
	       hako_now_usec() < until) {
		usleep(20000);
	}
	if (r == HAKO_ENOENT || r == HAKO_EAGAIN) {
		errf("domain '%s' has no conductor node linked to it", domain);
		hako_domain_close(dom);
		return 1;
	}
	if (r != 0) {
		errf("domain '%s': the conductor's status cannot be read: %s", domain,
		     hako_strerror(r));
		hako_domain_close(dom);
		return 1;
	}
	printf("node %s (%s), domain '%s' %s, world time %lld us\n", st.node_id,
	       st.role == HAKO_CONDUCTOR_SERVER ? "server" : "client", domain,
	       hako_state_name(hako_domain_state(dom)), (long long)hako_domain_world_time(dom));
	print_peers(stdout, st.peers, st.peer_count, st.dmax_usec);
	if (st.auth_refused > 0) {
		printf("%llu connection(s) without a key of the federation were refused\n",
		       (unsigned long long)st.auth_refused);
	}
	if (st.garbage_unknown > 0) {
		printf("%llu message(s) from senders that are no peer of this node were dropped\n",
		       (unsigned long long)st.garbage_unknown);
	}
	hako_domain_close(dom);
	return 0;
}

/* ---- keygen ---- */

static int cmd_keygen(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {HAKO_CLI_HELP_VERSION, {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, ":hV", longopts, NULL)) != -1) {
		return hako_cli_common_option(cmd, c, argv);
	}
	int n = argc - optind;
	if (n < 1) {
		return hako_cli_usage_error(cmd, "the conductor files of the federation, please");
	}
	hako_conductor_config_t **cfgs = calloc((size_t)n, sizeof(*cfgs));
	hako_error_t err;
	int rc = cfgs == NULL;
	for (int i = 0; i < n && rc == 0; i++) {
		if (hako_conductor_config_load(argv[optind + i], &cfgs[i], &err) != 0) {
			char line[1600];
			errf("%s", hako_error_format(&err, line, sizeof(line)));
			rc = 1;
		}
	}
	int created = 0;
	if (rc == 0 && hako_conductor_keygen((const hako_conductor_config_t *const *)cfgs,
	                                     (size_t)n, &created, &err) != 0) {
		char line[1600];
		errf("%s", hako_error_format(&err, line, sizeof(line)));
		rc = 1;
	}
	if (rc == 0) {
		printf(
		    "%d key pair(s) made, %d kept; every node's keys folder has the public keys of "
		    "all %d nodes\n",
		    created, n - created, n);
		for (int i = 0; i < n; i++) {
			printf("  %-12s %s/%s.key\n", cfgs[i]->node_id, cfgs[i]->keys_dir,
			       cfgs[i]->node_id);
		}
	}
	for (int i = 0; cfgs != NULL && i < n; i++) {
		hako_conductor_config_free(cfgs[i]);
	}
	free(cfgs);
	return rc;
}

/* ---- check ---- */

/* Traces (CSV of hako_conductor_node_trace): every sample of a node's world time against its
 * peer's known time is within Dmax. */
static int check_traces(int argc, char **argv, hako_time_t dmax)
{
	uint64_t rows = 0, bad = 0;
	hako_time_t worst = 0;
	for (int i = 0; i < argc; i++) {
		FILE *f = fopen(argv[i], "r");
		if (f == NULL) {
			errf("%s: %s", argv[i], strerror(errno));
			return 1;
		}
		char line[512];
		int lineno = 0;
		while (fgets(line, sizeof(line), f) != NULL) {
			lineno++;
			long long wall, own, peer, age;
			char node[80], pnode[80];
			if (lineno == 1 && strncmp(line, "wall_ns,", 8) == 0) {
				continue;
			}
			if (sscanf(line, "%lld,%79[^,],%lld,%79[^,],%lld,%lld", &wall, node, &own,
			           pnode, &peer, &age) != 6) {
				errf("%s:%d: not a conductor trace line", argv[i], lineno);
				fclose(f);
				return 1;
			}
			rows++;
			hako_time_t d = own - peer;
			if (d > worst) {
				worst = d;
			}
			if (d > dmax) {
				if (bad++ < 5) {
					printf("%s:%d: %s at %lld us is %lld us ahead of %s (Dmax "
					       "%lld)\n",
					       argv[i], lineno, node, own, (long long)d, pnode,
					       (long long)dmax);
				}
			}
		}
		fclose(f);
	}
	printf("%llu samples, largest lead over a known peer time %lld us, Dmax %lld us: %s\n",
	       (unsigned long long)rows, (long long)worst, (long long)dmax,
	       bad == 0 && rows > 0 ? "ok" : "VIOLATED");
	return bad == 0 && rows > 0 ? 0 : 1;
}

/* Every domain runs, and ran through the whole snapshot: states and reset counts read before
 * the times (first) and after them. */
static int all_running(hako_domain_t **dom, int n, uint32_t *resets, int first)
{
	int running = 1;
	for (int i = 0; i < n; i++) {
		uint32_t r = hako_domain_reset_count(dom[i]);
		running &=
		    hako_domain_state(dom[i]) == HAKO_STATE_RUNNING && (first || r == resets[i]);
		resets[i] = r;
	}
	return running;
}

/* The true drift: every node's segment read at the same instant (one machine). The first domain
 * is the server's; Dmax between it and each client, 2 Dmax between two clients. Only snapshots
 * taken while every domain runs are judged: a stopped or resetting domain's clock is not held
 * to the others' (a final reset puts one node at 0 while another still shows the end). */
static int check_live(char *list, hako_time_t dmax, long long ms)
{
	hako_domain_t *dom[HAKO_CONDUCTOR_MAX_CLIENTS + 1];
	int n = 0;
	for (char *tok = strtok(list, ","); tok != NULL && n <= HAKO_CONDUCTOR_MAX_CLIENTS;
	     tok = strtok(NULL, ",")) {
		int r = hako_domain_open(tok, &dom[n]);
		if (r != 0) {
			errf("cannot open domain '%s': %s", tok, hako_strerror(r));
			while (n > 0) {
				hako_domain_close(dom[--n]);
			}
			return 1;
		}
		n++;
	}
	hako_time_t worst_sc = 0, worst_cc = 0;
	uint64_t samples = 0, judged = 0, bad = 0;
	hako_time_t end = hako_now_usec() + ms * 1000;
	while (hako_now_usec() < end) {
		hako_time_t t[HAKO_CONDUCTOR_MAX_CLIENTS + 1];
		uint32_t resets[HAKO_CONDUCTOR_MAX_CLIENTS + 1];
		int running = all_running(dom, n, resets, 1);
		/* A consistent snapshot: the server's time is the same before and after the others
		 * were read, so every value held at the instant of the second read. */
		hako_time_t before, after;
		do {
			before = hako_domain_world_time(dom[0]);
			for (int i = 1; i < n; i++) {
				t[i] = hako_domain_world_time(dom[i]);
			}
			after = hako_domain_world_time(dom[0]);
		} while (before != after);
		t[0] = after;
		running &= all_running(dom, n, resets, 0);
		samples++;
		if (!running) {
			usleep(200);
			continue;
		}
		judged++;
		for (int i = 1; i < n; i++) {
			hako_time_t d = llabs(t[0] - t[i]);
			worst_sc = d > worst_sc ? d : worst_sc;
			bad += d > dmax;
			for (int j = i + 1; j < n; j++) {
				hako_time_t e = llabs(t[i] - t[j]);
				worst_cc = e > worst_cc ? e : worst_cc;
				bad += e > 2 * dmax;
			}
		}
		usleep(200);
	}
	printf("%llu snapshots of %d domains, %llu while every one ran: max |server - client| %lld "
	       "us (bound %lld), max |client - client| %lld us (bound %lld): %s\n",
	       (unsigned long long)samples, n, (unsigned long long)judged, (long long)worst_sc,
	       (long long)dmax, (long long)worst_cc, (long long)(2 * dmax),
	       bad == 0 ? "ok" : "VIOLATED");
	for (int i = 0; i < n; i++) {
		hako_domain_close(dom[i]);
	}
	return bad == 0 ? 0 : 1;
}

static int cmd_check(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"dmax-usec", required_argument, NULL, 'm'},
	                                         {"domains", required_argument, NULL, 'D'},
	                                         {"duration-ms", required_argument, NULL, 'T'},
	                                         HAKO_CLI_HELP_VERSION,
	                                         {NULL, 0, NULL, 0}};
	long long dmax = -1, ms = 1000;
	char *domains = NULL;
	int c, r;
	while ((c = getopt_long(argc, argv, ":m:D:T:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if ((r = parse_num(cmd, "--dmax-usec", optarg, 1, 1ll << 40, &dmax)) >= 0) {
				return r;
			}
			break;
		case 'D': domains = optarg; break;
		case 'T':
			if ((r = parse_num(cmd, "--duration-ms", optarg, 1, 86400000, &ms)) >= 0) {
				return r;
			}
			break;
		default: return hako_cli_common_option(cmd, c, argv);
		}
	}
	if (dmax < 0) {
		return hako_cli_usage_error(cmd, "--dmax-usec is needed");
	}
	if (domains != NULL) {
		if (optind != argc) {
			return hako_cli_usage_error(cmd, "traces or --domains, not both");
		}
		return check_live(domains, dmax, ms);
	}
	if (optind >= argc) {
		return hako_cli_usage_error(cmd, "no trace to check");
	}
	return check_traces(argc - optind, argv + optind, dmax);
}

static const hako_cli_command_t commands[] = {
    {"run", "[-d DOMAIN] [--real-time-factor F] [--trace FILE] CONDUCTOR.json",
     "run a node: its domain, master and link to the federation",
     "Create the node's domain (-d, the file's \"domain\", HAKO_DOMAIN or the node id), run its "
     "master with the file's delta_time_usec and max_delay_time_usec, and link it to the other "
     "nodes until SIGINT or SIGTERM; then print the drift table.",
     "  -d, --domain NAME          the node's domain\n"
     "  -r, --real-time-factor F   pace the world (0: as fast as the nodes allow)\n"
     "  -t, --trace FILE           write every time sample as CSV (for check)\n"
     "  -v, --verbose / -q, --quiet\n",
     cmd_run},
    {"status", "[-d DOMAIN]", "the node's peers, their times and the drift held",
     "Read the status the node's conductor keeps in its domain.",
     "  -d, --domain NAME          the node's domain (HAKO_DOMAIN)\n", cmd_status},
    {"check", "--dmax-usec D (TRACE... | --domains SERVER,CLIENT... [--duration-ms N])",
     "verify the drift bound over traces, or live across domains",
     "Over traces: every sample's lead over a known peer time is <= Dmax. Live (one machine): "
     "read every node's segment at the same instant, for N ms, and verify |server - client| <= "
     "Dmax and |client - client| <= 2 Dmax: the true drift, not an estimate. Exit 1 on a "
     "violation.",
     "  -m, --dmax-usec D          the bound\n"
     "  -D, --domains LIST         the server's domain first, then the clients'\n"
     "  -T, --duration-ms N        how long to sample (1000)\n",
     cmd_check},
    {"gen",
     "-o DIR [--base-port N] [--stop-at-usec N] [--real-time-factor F] [--path DIR]... "
     "EU_INPUT.json",
     "every node's files from one federation file (Hakoniwa's eu-input)",
     "Read the federation file (execution_nodes, connection_pairs, comm_defaults, "
     "conductor_defaults, PDU groups, units and their placement) and write, per node, its "
     "conductor file, pdudef, endpoints, bridge and hako-launch file, plus DIR/federation.json "
     "that starts every node on this machine (docs/conductor.md).",
     "  -o, --output DIR           where the files go (created if missing)\n"
     "  -b, --base-port N          instead of comm_defaults.tcp.base_port\n"
     "  -s, --stop-at-usec N       the server's launch file stops the federation there\n"
     "  -r, --real-time-factor F   every node's launch file paces its world so\n"
     "  -p, --path DIR             \"path\" of every launch file (may be repeated)\n"
     "  -n, --dry-run              print the federation as read; write nothing\n"
     "  -q, --quiet                no summary\n",
     hakoi_gen_command},
    {"tree", "DIR", "every file of a tree Hakoniwa's gen wrote: loaded, read and not used, refused",
     "Walk DIR (Hakoniwa's config/generated) and say of every file: loaded (by which hako "
     "loader: conductor file, pdudef, node map, endpoint container, bridge per node, endpoint, "
     "comm, cache), read, not used (parsed, its shape checked, and why hako has no use for it), "
     "refused (file:line:column: why) or unknown (not a file Hakoniwa's gen writes). The "
     "tree's node-ip-map.json is the endpoints' HAKO_NODE_IP_MAP. Exit 1 when a file is "
     "refused or unknown (docs/hakoniwa-compat.md).",
     "", hakoi_tree_command},
    {"keygen", "CONDUCTOR.json...", "the federation's keys (authenticated control plane)",
     "Give every node of the files a CURVE key pair (keys_dir/<node>.key, mode 0600; one that "
     "exists is kept) and put the public key of every node into every node's keys_dir "
     "(<node>.pub). Name all nodes of the federation. A node's folder then has all it needs: "
     "copy it to the node's machine (docs/conductor.md).",
     "", cmd_keygen},
    {"help", "[COMMAND]", "help on a command", NULL, NULL, hako_cli_help},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: hako-conductor [-d DOMAIN] COMMAND [ARGS]\n\ncommands:\n");
	hako_cli_list_commands(out, 8);
}

int main(int argc, char **argv)
{
	static const hako_cli_t cli = {
	    .prog = "hako-conductor",
	    .version = HAKO_VERSION,
	    .commands = commands,
	    .ncommands = sizeof(commands) / sizeof(commands[0]),
	    .common_options = "  -h, --help                 this help\n",
	    .domain = &opt_domain,
	    .usage = usage,
	};
	return hako_cli_main(&cli, argc, argv);
}
