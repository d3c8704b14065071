/* hako-replay: the command line (docs/hako-record.md); the work is in replay.c. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/domain.h"
#include "hako_cli.h"
#include "rec_cli.h"
#include "replay.h"

static volatile sig_atomic_t g_stop;

static int run(const hako_cli_command_t *cmd, int argc, char **argv)
{
	enum { O_PDU = REC_O_OWN, O_SPEED, O_LOOP, O_OFFSET, O_REMAP, O_DELTA, O_CHECK, O_DUMP };
	static const struct option longopts[] = {
	    {"pdu", required_argument, NULL, O_PDU},
	    {"speed", required_argument, NULL, O_SPEED},
	    {"loop", no_argument, NULL, O_LOOP},
	    {"start-offset", required_argument, NULL, O_OFFSET},
	    {"remap", required_argument, NULL, O_REMAP},
	    {"delta-usec", required_argument, NULL, O_DELTA},
	    {"check", no_argument, NULL, O_CHECK},
	    {"dump", no_argument, NULL, O_DUMP},
	    REC_CLI_LONGOPTS,
	    {NULL, 0, NULL, 0}};
	rep_opts_t o = {.domain = hako_domain_default_name(),
	                .asset = "hako-replay",
	                .speed = 1.0,
	                .wait_ms = 10000};
	const rec_cli_opts_t shared = {.domain = &o.domain,
	                               .asset = &o.asset,
	                               .pdudef = &o.pdudef,
	                               .robots = o.robots,
	                               .nrobots = &o.nrobots,
	                               .max_robots = REP_MAX_FILTERS,
	                               .wait_ms = &o.wait_ms,
	                               .quiet = &o.quiet};
	int c, r = -1;
	double v = 0; /* set by each option that reads it, before use */
	while (r < 0 && (c = getopt_long(argc, argv, ":d:qhV", longopts, NULL)) != -1) {
		switch (c) {
		case O_PDU:
			r = hako_cli_option_list(cmd, "--pdu", optarg, o.pdus, &o.npdus,
			                         REP_MAX_FILTERS);
			break;
		case O_SPEED:
			r = hako_cli_option_double(cmd, "--speed", optarg, 1e-6, 1e6,
			                           "a number in [1e-6, 1e6]", &o.speed);
			break;
		case O_LOOP: o.loop = 1; break;
		case O_OFFSET:
			r = hako_cli_option_double(cmd, "--start-offset", optarg, 0, 1e9,
			                           "seconds in [0, 1e9]", &v);
			o.start_offset_ns = (int64_t)(v * 1e9 + 0.5);
			break;
		case O_REMAP: {
			char *eq = strchr(optarg, '=');
			if (o.nremaps == REP_MAX_FILTERS) {
				return hako_cli_usage_error(cmd, "too many --remap options");
			}
			if (eq == NULL || eq == optarg || eq[1] == '\0' ||
			    strlen(eq + 1) >= HAKO_NAME_MAX) {
				return hako_cli_usage_error(
				    cmd, "--remap %s: expected OLD=NEW (robot names)", optarg);
			}
			*eq = '\0';
			o.remaps[o.nremaps].from = optarg;
			o.remaps[o.nremaps++].to = eq + 1;
			break;
		}
		case O_DELTA:
			r = hako_cli_option_double(cmd, "--delta-usec", optarg, 1, 3600e6,
			                           "[1, 3600000000]", &v);
			o.delta_usec = (hako_time_t)v;
			break;
		case O_CHECK: o.check = 1; break;
		case O_DUMP: o.check = o.dump = 1; break;
		default: r = rec_cli_option(cmd, c, argv, &shared); break;
		}
	}
	if (r >= 0) {
		return r;
	}
	if (optind >= argc) {
		return hako_cli_usage_error(cmd, "no recording given");
	}
	if (optind + 1 < argc) {
		return hako_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
	}
	o.file = argv[optind];
	hako_cli_catch_stop(&g_stop, 1); /* a second one ends it at once */
	setvbuf(stdout, NULL, _IOLBF, 0);
	return rep_run(&o, &g_stop) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const hako_cli_command_t command = {
	    "hako-replay",
	    "[-d DOMAIN] [--asset NAME] [--speed F] [--loop] [--start-offset S]\n"
	    "       [--robot R]... [--pdu P]... [--remap OLD=NEW]... [--check] FILE",
	    "",
	    "Write the PDUs of an MCAP recording (hako-record's) back into a domain at their\n"
	    "world times. It is an asset: at the step that brings its clock to T it writes,\n"
	    "in order, every message whose log time is at most start-offset + T x speed, so\n"
	    "the same file gives the same channel contents at every step. Channels the\n"
	    "domain lacks are created (sizes from the recording, else the pdudef). A file\n"
	    "cut off mid-chunk is replayed up to its last whole chunk; what was skipped is\n"
	    "said.",
	    "  -d, --domain NAME    the domain (default $HAKO_DOMAIN, else default)\n"
	    "  --asset NAME         the asset's name (default hako-replay)\n"
	    "  --delta-usec D       its step (default: the domain's world step)\n"
	    "  --speed F            recorded time per world time (default 1; 2 = twice as fast)\n"
	    "  --loop               start over after the last message\n"
	    "  --start-offset S     begin S seconds into the recording\n"
	    "  --robot R            only the channels of robot R (as recorded; repeatable)\n"
	    "  --pdu P              only these PDUs: /ROBOT/NAME (a topic), ROBOT/NAME or NAME\n"
	    "  --remap OLD=NEW      write robot OLD's channels into robot NEW (repeatable)\n"
	    "  --pdudef FILE        PDU sizes for recordings that lack them\n"
	    "  --check              read the file and say what it holds, do not replay\n"
	    "  --dump               --check, and a line per message: log time (us), ROBOT:ID\n"
	    "                       and an FNV-1a hash of the PDU after its meta header\n"
	    "  --wait-ms N          wait this long for the domain to exist (default 10000)\n"
	    "  -q, --quiet          only the last line and errors\n",
	    run,
	};
	return hako_cli_main_single(
	    "hako-replay", &command, 23,
	    "exit status: 0 done; 1 an error (said on stderr: a file that is not MCAP,\n"
	    "a domain that refuses the asset); 2 usage error. See docs/hako-record.md.\n",
	    argc, argv);
}
