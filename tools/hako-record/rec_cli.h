/* The options hako-record and hako-replay share, besides -h and -V: -d/--domain, --asset,
 * --pdudef, --robot, --wait-ms and -q/--quiet, parsed the same way for both. */
#ifndef REC_CLI_H
#define REC_CLI_H

#include <getopt.h>

#include "hako_cli.h"

/* Their getopt_long ids past the characters; each tool's own start at REC_O_OWN. */
enum { REC_O_ASSET = 256, REC_O_PDUDEF, REC_O_ROBOT, REC_O_WAIT, REC_O_OWN };

/* Their entries of a getopt_long table, with -h and -V ("d:q" in the short options). */
/* clang-format off */
#define REC_CLI_LONGOPTS                                        \
	{"domain", required_argument, NULL, 'd'},               \
	{"asset", required_argument, NULL, REC_O_ASSET},        \
	{"pdudef", required_argument, NULL, REC_O_PDUDEF},      \
	{"robot", required_argument, NULL, REC_O_ROBOT},        \
	{"wait-ms", required_argument, NULL, REC_O_WAIT},       \
	{"quiet", no_argument, NULL, 'q'},                      \
	HAKO_CLI_HELP_VERSION
/* clang-format on */

/* Where a tool keeps them. */
typedef struct rec_cli_opts {
	const char **domain, **asset, **pdudef;
	const char **robots; /* --robot, repeatable: *nrobots of max_robots */
	int *nrobots, max_robots;
	int *wait_ms, *quiet;
} rec_cli_opts_t;

/* getopt_long's c (with its optarg) if it is one of these, else -h, -V or a usage error as
 * hako_cli_common_option. -1 to go on, else the exit code. */
int rec_cli_option(const hako_cli_command_t *cmd, int c, char **argv, const rec_cli_opts_t *o);

#endif
