/* hako-conductor gen: the command line of the generator (conductor_gen.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conductor_gen.h"

#define MAX_PATHS 32

static void print_warning(void *user, const char *line)
{
	(void)user;
	fprintf(stderr, "hako-conductor gen: warning: %s\n", line);
}

static int number(const hako_cli_command_t *cmd, const char *opt, const char *s, long long min,
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

static void free_paths(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(paths[i]);
	}
}

static void summary(const hakoi_gen_t *g, const char *dir, size_t files)
{
	char clients[1024] = "";
	for (size_t i = 1; i < g->node_count; i++) {
		size_t n = strlen(clients);
		snprintf(clients + n, sizeof(clients) - n, "%s%s", i > 1 ? ", " : "",
		         g->nodes[i].id);
	}
	size_t launched = 0;
	for (size_t k = 0; k < g->unit_count; k++) {
		launched += g->units[k].node >= 0 && g->units[k].command != NULL;
	}
	printf("hako-conductor gen: server %s, client%s %s; %zu PDU group%s, %zu of %zu unit%s "
	       "launched; %zu files in %s\n",
	       g->nodes[0].id, g->node_count > 2 ? "s" : "", clients, g->group_count,
	       g->group_count == 1 ? "" : "s", launched, g->unit_count,
	       g->unit_count == 1 ? "" : "s", files, dir);
	if (g->rd) {
		printf("  RD-Full: %zu execution unit%s, trigger %s; every node's %s\n",
		       g->eu_count, g->eu_count == 1 ? "" : "s", g->rd_trigger_type,
		       HAKOI_GEN_RD_FILE);
	}
	printf("  control plane keys:         <node>/conductor/keys (the node's pair, mode 0600, "
	       "and every node's public key)\n");
	printf("  every node on this machine: hako-launch %s/federation.json\n", dir);
	printf("  one node:                   hako-launch %s/<node>/launch.json\n", dir);
}

/* The control plane's keys in every node's conductor folder (a pair made once, then kept). */
static int gen_keys(const hakoi_gen_t *g, const char *dir, hako_error_t *err)
{
	hako_conductor_config_t *cfgs[HAKOI_GEN_MAX_NODES] = {NULL};
	int r = 0;
	for (size_t i = 0; i < g->node_count && r == 0; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s/conductor/%s.json", dir, g->nodes[i].id,
		         g->nodes[i].id);
		r = hako_conductor_config_load(path, &cfgs[i], err);
	}
	if (r == 0) {
		r = hako_conductor_keygen((const hako_conductor_config_t *const *)cfgs,
		                          g->node_count, NULL, err);
	}
	for (size_t i = 0; i < g->node_count; i++) {
		hako_conductor_config_free(cfgs[i]);
	}
	return r;
}

int hakoi_gen_command(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
	                                         {"base-port", required_argument, NULL, 'b'},
	                                         {"stop-at-usec", required_argument, NULL, 's'},
	                                         {"real-time-factor", required_argument, NULL, 'r'},
	                                         {"path", required_argument, NULL, 'p'},
	                                         {"dry-run", no_argument, NULL, 'n'},
	                                         {"quiet", no_argument, NULL, 'q'},
	                                         HAKO_CLI_HELP_VERSION,
	                                         {NULL, 0, NULL, 0}};
	const char *dir = NULL;
	char *paths[MAX_PATHS];
	struct stat st;
	hakoi_gen_options_t opt = {.warn = print_warning};
	int c, r, dry = 0, quiet = 0;
	long long v = 0;
	while ((c = getopt_long(argc, argv, ":o:b:s:r:p:nqhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': dir = optarg; break;
		case 'b':
			if ((r = number(cmd, "--base-port", optarg, 1, 65535, &v)) >= 0) {
				return r;
			}
			opt.base_port = (int)v;
			break;
		case 's':
			if ((r = number(cmd, "--stop-at-usec", optarg, 1, 1ll << 50, &v)) >= 0) {
				return r;
			}
			opt.stop_at_usec = v;
			break;
		case 'r': {
			char *end;
			opt.real_time_factor = strtod(optarg, &end);
			if (*end != '\0' || end == optarg || !(opt.real_time_factor >= 0.0) ||
			    opt.real_time_factor > 1e6) {
				return hako_cli_usage_error(cmd,
				                            "--real-time-factor: '%s' is not a "
				                            "number in [0, 1000000]",
				                            optarg);
			}
			break;
		}
		case 'p':
			if (opt.path_count == MAX_PATHS) {
				return hako_cli_usage_error(cmd, "too many --path options");
			}
			/* Absolute: a launch file reads "path" relative to its own folder, not to
			 * where gen ran. */
			if ((paths[opt.path_count] = realpath(optarg, NULL)) == NULL ||
			    stat(paths[opt.path_count], &st) != 0 || !S_ISDIR(st.st_mode)) {
				free(paths[opt.path_count]);
				free_paths(paths, opt.path_count);
				return hako_cli_usage_error(cmd, "--path %s: not a folder", optarg);
			}
			opt.path_count++;
			break;
		case 'n': dry = 1; break;
		case 'q': quiet = 1; break;
		default: return hako_cli_common_option(cmd, c, argv);
		}
	}
	opt.path = (const char *const *)paths;
	if (optind + 1 != argc || (dir == NULL && !dry)) {
		free_paths(paths, opt.path_count);
		return optind + 1 != argc
		           ? hako_cli_usage_error(cmd, "one eu-input file, please")
		           : hako_cli_usage_error(cmd, "-o DIR is needed (where the files go)");
	}
	hakoi_gen_t *g = NULL;
	hako_error_t err;
	char msg[1200];
	if (hakoi_gen_load(argv[optind], &opt, &g, &err) != 0) {
		fprintf(stderr, "hako-conductor gen: %s\n",
		        hako_error_format(&err, msg, sizeof(msg)));
		free_paths(paths, opt.path_count);
		return 1;
	}
	if (dry) {
		hakoi_gen_dump(g, stdout);
		hakoi_gen_free(g);
		free_paths(paths, opt.path_count);
		return 0;
	}
	size_t files = 0;
	r = hakoi_gen_write(g, dir, &files, &err);
	if (r == 0) {
		r = gen_keys(g, dir, &err);
	}
	if (r != 0) {
		fprintf(stderr, "hako-conductor gen: %s\n",
		        hako_error_format(&err, msg, sizeof(msg)));
	} else if (!quiet) {
		summary(g, dir, files);
	}
	hakoi_gen_free(g);
	free_paths(paths, opt.path_count);
	return r != 0 ? 1 : 0;
}
