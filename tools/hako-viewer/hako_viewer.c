/* hako-viewer: watch and drive a running simulation in the browser (docs/viewer.md). */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hako_cli.h"
#include "vw_server.h"

#ifndef HAKO_VERSION
#define HAKO_VERSION "unknown"
#endif
#ifndef HAKO_VIEWER_WWW_INSTALLED
#define HAKO_VIEWER_WWW_INSTALLED "/usr/local/share/hako/viewer/www"
#endif

static volatile sig_atomic_t stop_flag;

/* www/ next to the executable (the build tree), else the installed copy. */
static const char *default_www(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (n > 0) {
		path[n] = '\0';
		char *slash = strrchr(path, '/');
		if (slash != NULL && (size_t)(slash - path) + 20 < sizeof(path)) {
			strcpy(slash + 1, "www/index.html");
			if (access(path, R_OK) == 0) {
				slash[4] = '\0'; /* ".../www" */
				return path;
			}
		}
	}
	return HAKO_VIEWER_WWW_INSTALLED;
}

static int parse_int(const hako_cli_command_t *cmd, const char *opt, const char *s, long lo,
                     long hi, long *out)
{
	int64_t v;
	if (hako_cli_parse_i64(s, lo, hi, &v) != 0) {
		return hako_cli_usage_error(cmd, "%s %s: not an integer in [%ld, %ld]", opt, s, lo,
		                            hi);
	}
	*out = (long)v;
	return -1;
}

/* $HAKO_VIEWER_ALLOW_HOSTS: more names for --allow-host, separated by commas or spaces (a launch
 * file's viewer gets them from hako-launch's environment). -1, or the exit status of a usage
 * error. */
static int env_hosts(const hako_cli_command_t *cmd, const char **allow, int *n)
{
	static char list[8192];
	const char *env = getenv("HAKO_VIEWER_ALLOW_HOSTS");
	if (env == NULL) {
		return -1;
	}
	if (strlen(env) >= sizeof(list)) {
		return hako_cli_usage_error(cmd, "HAKO_VIEWER_ALLOW_HOSTS: longer than %d bytes",
		                            (int)sizeof(list) - 1);
	}
	snprintf(list, sizeof(list), "%s", env);
	char *save = NULL;
	for (char *h = strtok_r(list, ", ", &save); h != NULL; h = strtok_r(NULL, ", ", &save)) {
		if (*n == VW_ALLOW_MAX) {
			return hako_cli_usage_error(
			    cmd, "--allow-host and HAKO_VIEWER_ALLOW_HOSTS: %d names at most",
			    VW_ALLOW_MAX);
		}
		allow[(*n)++] = h;
	}
	return -1;
}

static int run(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"domain", required_argument, NULL, 'd'},
	                                         {"port", required_argument, NULL, 'p'},
	                                         {"bind", required_argument, NULL, 'b'},
	                                         {"www", required_argument, NULL, 'w'},
	                                         {"pdudef", required_argument, NULL, 'P'},
	                                         {"rd", required_argument, NULL, 'r'},
	                                         {"rate-hz", required_argument, NULL, 'R'},
	                                         {"max-message", required_argument, NULL, 'm'},
	                                         {"max-sessions", required_argument, NULL, 's'},
	                                         {"session-budget", required_argument, NULL, 'B'},
	                                         {"cpu-max", required_argument, NULL, 'C'},
	                                         {"foxglove-rate-hz", required_argument, NULL, 'F'},
	                                         {"foxglove-origin", required_argument, NULL, 'O'},
	                                         {"allow-host", required_argument, NULL, 'A'},
	                                         HAKO_CLI_HELP_VERSION,
	                                         {NULL, 0, NULL, 0}};
	vw_server_config_t sc = {
	    .bind = "127.0.0.1",
	    .port = 8080,
	    .www = NULL,
	    .rate_hz = 10,
	    .max_message = 65536,
	    .max_sessions = 128,
	    .session_budget = 1u << 20,
	    .cpu_max = 0.10,
	    .foxglove_rate_hz = 30,
	};
	vw_sampler_config_t pc = {hako_domain_default_name(), getenv("HAKO_PDUDEF"), NULL};
	/* --allow-host, then $HAKO_VIEWER_ALLOW_HOSTS (how a launch file's viewer gets some) */
	const char *allow[VW_ALLOW_MAX];
	/* the Foxglove web app by default; --foxglove-origin replaces it ("" for none) */
	const char *origins[VW_ALLOW_MAX] = {"https://app.foxglove.dev"};
	int norigins = 1, origins_given = 0;
	int nallow = 0;
	long v = 0;
	int c, r = -1;
	while ((c = getopt_long(argc, argv, ":d:p:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': pc.domain = optarg; break;
		case 'p':
			r = parse_int(cmd, "--port", optarg, 0, 65535, &v);
			sc.port = (int)v;
			break;
		case 'b': sc.bind = optarg; break;
		case 'w': sc.www = optarg; break;
		case 'P': pc.pdudef = optarg; break;
		case 'r': pc.rd = optarg; break;
		case 'R':
			r = parse_int(cmd, "--rate-hz", optarg, 1, 100, &v);
			sc.rate_hz = (int)v;
			break;
		case 'm':
			r = parse_int(cmd, "--max-message", optarg, 1024, 64L << 20, &v);
			sc.max_message = (size_t)v;
			break;
		case 's':
			r = parse_int(cmd, "--max-sessions", optarg, 1, 4096, &v);
			sc.max_sessions = (int)v;
			break;
		case 'B':
			r = parse_int(cmd, "--session-budget", optarg, 16384, 1L << 30, &v);
			sc.session_budget = (size_t)v;
			break;
		case 'C':
			r = parse_int(cmd, "--cpu-max", optarg, 1, 100, &v);
			sc.cpu_max = (double)v / 100.0;
			break;
		case 'O':
			if (!origins_given) {
				norigins = 0;
				origins_given = 1;
			}
			if (norigins == VW_ALLOW_MAX) {
				return hako_cli_usage_error(cmd, "--foxglove-origin: %d at most",
				                            VW_ALLOW_MAX);
			}
			if (optarg[0] != '\0') {
				origins[norigins++] = optarg;
			}
			break;
		case 'F':
			r = parse_int(cmd, "--foxglove-rate-hz", optarg, 1, 1000, &v);
			sc.foxglove_rate_hz = (int)v;
			break;
		case 'A':
			if (nallow == VW_ALLOW_MAX) {
				return hako_cli_usage_error(cmd, "--allow-host: %d names at most",
				                            VW_ALLOW_MAX);
			}
			allow[nallow++] = optarg;
			break;
		default: return hako_cli_common_option(cmd, c, argv);
		}
		if (r >= 0) {
			return r;
		}
	}
	if (optind < argc) {
		return hako_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	}
	if (sc.www == NULL) {
		sc.www = default_www();
	}
	if ((r = env_hosts(cmd, allow, &nallow)) >= 0) {
		return r;
	}
	sc.fox_origins = origins;
	sc.nfox_origins = norigins;
	sc.allow_hosts = allow;
	sc.nallow_hosts = nallow;
	char token[VW_TOKEN_LEN * 2 + 1];
	const char *env = getenv("HAKO_VIEWER_TOKEN");
	if (env != NULL && env[0] != '\0') {
		if (strlen(env) < 16 || strlen(env) >= sizeof(token)) {
			return hako_cli_usage_error(cmd, "HAKO_VIEWER_TOKEN: 16 to %d characters",
			                            (int)sizeof(token) - 1);
		}
		snprintf(token, sizeof(token), "%s", env);
	} else if (vw_token_new(token) != 0) {
		fprintf(stderr, "hako-viewer: cannot draw a random token\n");
		return 1;
	}
	sc.token = token;

	char why[1200];
	vw_sampler_t *sampler = NULL;
	vw_server_t *srv = NULL;
	if (vw_sampler_create(&pc, &sampler, why, sizeof(why)) != 0) {
		fprintf(stderr, "hako-viewer: %s\n", why);
		return 1;
	}
	sc.sampler = sampler;
	if (vw_server_create(&sc, &srv, why, sizeof(why)) != 0) {
		fprintf(stderr, "hako-viewer: %s\n", why);
		vw_sampler_destroy(sampler);
		return 1;
	}
	hako_cli_catch_stop(&stop_flag, 0);
	signal(SIGPIPE, SIG_IGN);

	const char *host =
	    strcmp(sc.bind, "0.0.0.0") == 0 || strcmp(sc.bind, "::") == 0 ? "localhost" : sc.bind;
	int port = vw_server_port(srv);
	printf("hako-viewer: domain '%s', read-only at http://%s:%d/\n", pc.domain, host, port);
	printf("hako-viewer: to control the simulation (start, stop, reset) open\n"
	       "    http://%s:%d/?token=%s\n",
	       host, port, token);
	printf("hako-viewer: Foxglove: ws://%s:%d/ (read-only), ws://%s:%d/?token=%s (publish)\n",
	       host, port, host, port, token);
	fflush(stdout);
	vw_server_run(srv, &stop_flag);
	vw_server_destroy(srv);
	vw_sampler_destroy(sampler);
	printf("hako-viewer: stopped\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	static const hako_cli_command_t command = {
	    "hako-viewer",
	    "[-d DOMAIN] [--port N] [--bind ADDR] [--allow-host NAME]... [--pdudef FILE]\n"
	    "       [--rd FILE] [--www DIR]\n"
	    "       [--rate-hz N] [--max-message BYTES] [--max-sessions N]\n"
	    "       [--session-budget BYTES] [--cpu-max PERCENT] [--foxglove-rate-hz N]\n"
	    "       [--foxglove-origin ORIGIN]...",
	    "",
	    "Serve a page that shows a running domain in the browser: its state, world time,\n"
	    "real-time factor, the assets' clocks and drift, the PDU channels and their values,\n"
	    "RD ownership, a map of the Twist PDUs and a plot of any numeric field. Start, stop\n"
	    "and reset need the token printed at start (or $HAKO_VIEWER_TOKEN); without it the\n"
	    "page is read-only.",
	    "  -d, --domain NAME     domain to show (default: $HAKO_DOMAIN, else \"default\")\n"
	    "  -p, --port N          port to listen on (default 8080; 0: any free port)\n"
	    "      --bind ADDR       address to listen on (default 127.0.0.1: this machine only)\n"
	    "      --allow-host NAME  a name (or address) of this machine that requests may\n"
	    "                        give as their Host, besides localhost, the loopback\n"
	    "                        addresses and ADDR (repeat it; also\n"
	    "                        $HAKO_VIEWER_ALLOW_HOSTS); other requests get 403\n"
	    "      --pdudef FILE     PDU names and types, for values as JSON (default "
	    "$HAKO_PDUDEF)\n"
	    "      --rd FILE         RD config: show who owns each execution unit\n"
	    "      --www DIR         the page's folder (default: the installed one)\n"
	    "      --rate-hz N       samples sent per second, 1..100 (default 10)\n"
	    "      --max-message N   largest message a client may send (default 65536)\n"
	    "      --max-sessions N  WebSocket sessions at once (default 128)\n"
	    "      --session-budget BYTES  bytes a second one session may be sent (default "
	    "1048576)\n"
	    "      --cpu-max PERCENT  of a core the viewer may use; it samples slower past it\n"
	    "                        (default 10)\n",
	    run,
	};
	return hako_cli_main_single(
	    "hako-viewer", &command, 24,
	    "Open it from another machine with: ssh -L 8080:localhost:8080 HOST\n"
	    "Format of the stream and limits: docs/viewer.md.\n",
	    argc, argv);
}
