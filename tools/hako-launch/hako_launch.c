/* hako-launch: run a co-simulation described by one JSON file (docs/hako-launch.md). The
 * command line is here; the run is launch_run.c, the processes launch_supervise.c, the file
 * launch_config.c (the reader, with its parts launch_config_*.c). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hako/log.h"
#include "hako_cli.h"
#include "launch_config.h"
#include "launch_console.h"
#include "launch_federation.h"
#include "launch_run.h"

#ifndef HAKO_VERSION
#define HAKO_VERSION "unknown"
#endif

#define MAX_SEARCH 64

static int run(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"path", required_argument, NULL, 'p'},
	                                         {"quiet", no_argument, NULL, 'q'},
	                                         {"no-echo", no_argument, NULL, 'E'},
	                                         {"check", no_argument, NULL, 'c'},
	                                         HAKO_CLI_HELP_VERSION,
	                                         {NULL, 0, NULL, 0}};
	const char *search[MAX_SEARCH];
	size_t nsearch = 0;
	int check = 0, quiet = 0, no_echo = 0, c;
	struct stat st;
	while ((c = getopt_long(argc, argv, ":qhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (nsearch == MAX_SEARCH) {
				return hako_cli_usage_error(cmd, "too many --path options");
			}
			if (stat(optarg, &st) != 0 || !S_ISDIR(st.st_mode)) {
				return hako_cli_usage_error(cmd, "--path %s: not a folder", optarg);
			}
			search[nsearch++] = optarg;
			break;
		case 'q': quiet = 1; break;
		case 'E': no_echo = 1; break;
		case 'c': check = 1; break;
		default: return hako_cli_common_option(cmd, c, argv);
		}
	}
	if (optind >= argc) {
		return hako_cli_usage_error(cmd, "no launch file given");
	}
	if (optind + 1 < argc) {
		return hako_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
	}
	if (getenv("HAKO_LOG") == NULL) {
		/* The library's lines would only repeat, worse, what hako-launch says. */
		hako_log_set_level(HAKO_LOG_OFF);
	}

	/* A fresh domain unless the user chose one: runs in parallel never collide. */
	char domain[64];
	const char *env = getenv("HAKO_DOMAIN");
	if (env != NULL && env[0] != '\0') {
		snprintf(domain, sizeof(domain), "%s", env);
	} else {
		snprintf(domain, sizeof(domain), "launch-%d", (int)getpid());
	}
	hakoi_launch_options_t opt = {domain, search, nsearch};
	hakoi_launch_config_t *cfg;
	hako_error_t err;
	if (hakoi_launch_load(argv[optind], &opt, &cfg, &err) != 0) {
		char msg[1200];
		fprintf(stderr, "hako-launch: %s\n", hako_error_format(&err, msg, sizeof(msg)));
		return HAKOI_LAUNCH_EXIT_USAGE;
	}
	if (cfg->hakoniwa && !quiet) {
		fprintf(stderr,
		        "hako-launch: %s is in Hakoniwa's launcher format: hako-launch is the "
		        "conductor (delta %lld us, Dmax %lld us), each asset's output goes to "
		        "%s/<asset>.log (not to its stdout / stderr paths)%s\n",
		        argv[optind], (long long)cfg->master.delta_usec,
		        (long long)cfg->master.max_delay_usec, cfg->log_dir,
		        cfg->hakoniwa_notify ? "; \"notify\" is not run: the last line says "
		                               "which process failed and how"
		                             : "");
	}
	if (cfg->node_count == 0 && hakoi_launch_size(cfg, &err) != 0) {
		char msg[1200];
		fprintf(stderr, "hako-launch: %s\n", hako_error_format(&err, msg, sizeof(msg)));
		hakoi_launch_free(cfg);
		return HAKOI_LAUNCH_EXIT_USAGE;
	}
	if (check) {
		hakoi_launch_dump(cfg, stdout);
		hakoi_launch_free(cfg);
		return 0;
	}
	hakoi_console_init(quiet, no_echo);
	return cfg->node_count > 0 ? hakoi_launch_run_federation(cfg) : hakoi_launch_run(cfg);
}

int main(int argc, char **argv)
{
	static const hako_cli_command_t command = {
	    "hako-launch",
	    "[--path DIR]... [--quiet] [--no-echo] [--check] FILE",
	    "",
	    "Run the co-simulation that the launch file FILE describes: create its domain and\n"
	    "be its conductor, start the processes in order (waiting for each as the file\n"
	    "says), run the simulation with a status line, and stop everything together at\n"
	    "the stop time, on Ctrl-C or when a process fails; then run the \"after\"\n"
	    "processes. Each process's output goes to <log_dir>/<name>.log and is echoed\n"
	    "as \"[name] line\".\n\n"
	    "A federation file (one with \"federation\": {\"nodes\": [...]}) starts every\n"
	    "node's launch file as a hako-launch of its own, each in its own domain, and\n"
	    "stops them together.",
	    "  --path DIR     look for commands in DIR first (may be repeated)\n"
	    "  -q, --quiet    no status line and no progress messages\n"
	    "  --no-echo      do not echo the output of the processes (the logs keep it)\n"
	    "  --check        check FILE, print what would run, and exit\n",
	    run,
	};
	static const hako_cli_t cli = {
	    .prog = "hako-launch",
	    .version = HAKO_VERSION,
	    .commands = &command,
	    .ncommands = 1,
	    .common_options = "  -h, --help     show this help\n"
	                      "  -V, --version  show the version\n",
	    .epilog =
	        "exit status: 0 all went well; 1 a process or the simulation failed (the last\n"
	        "line says which and how); 2 usage error or invalid launch file; 128+N stopped\n"
	        "by signal N (130 for Ctrl-C).\n\n"
	        "The format of FILE: docs/hako-launch.md, configs/schema/launch.schema.json.\n",
	    .single = 1,
	};
	return hako_cli_main(&cli, argc, argv);
}
