/* The options hako-record and hako-replay share (rec_cli.h). */
#include "rec_cli.h"

#include <string.h>

#include "hako/domain.h"

int rec_cli_option(const hako_cli_command_t *cmd, int c, char **argv, const rec_cli_opts_t *o)
{
	double v = 0;
	int r;
	switch (c) {
	case 'd': *o->domain = optarg; return -1;
	case 'q': *o->quiet = 1; return -1;
	case REC_O_ASSET:
		if (optarg[0] == '\0' || strlen(optarg) >= HAKO_NAME_MAX) {
			return hako_cli_usage_error(cmd, "--asset: 1..%d characters",
			                            HAKO_NAME_MAX - 1);
		}
		*o->asset = optarg;
		return -1;
	case REC_O_PDUDEF: *o->pdudef = optarg; return -1;
	case REC_O_ROBOT:
		return hako_cli_option_list(cmd, "--robot", optarg, o->robots, o->nrobots,
		                            o->max_robots);
	case REC_O_WAIT:
		r = hako_cli_option_double(cmd, "--wait-ms", optarg, 0, 3600000,
		                           "a number in [0, 3600000]", &v);
		*o->wait_ms = (int)v;
		return r;
	default: return hako_cli_common_option(cmd, c, argv);
	}
}
