/* hako-record: the command line (docs/hako-record.md); the work is in record.c. */
#include <errno.h>
#include <getopt.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/domain.h"
#include "hako_cli.h"
#include "rec_cli.h"
#include "record.h"

static volatile sig_atomic_t g_stop;

/* "robot/name", ROBOT + "/" + "*" (any PDU of it), "robot:id" or "name". */
static int parse_spec(const char *s, rec_pdu_spec_t *p)
{
	memset(p, 0, sizeof(*p));
	p->id = -1;
	const char *slash = strchr(s, '/'), *colon = strchr(s, ':');
	if (slash != NULL) {
		if (slash == s || slash[1] == '\0' || (size_t)(slash - s) >= sizeof(p->robot) ||
		    strlen(slash + 1) >= sizeof(p->name)) {
			return -1;
		}
		snprintf(p->robot, sizeof(p->robot), "%.*s", (int)(slash - s), s);
		snprintf(p->name, sizeof(p->name), "%s", slash + 1);
		return 0;
	}
	if (colon != NULL) {
		char *end;
		long id = strtol(colon + 1, &end, 10);
		if (colon == s || (size_t)(colon - s) >= sizeof(p->robot) || end == colon + 1 ||
		    *end != '\0' || id < 0 || id > INT32_MAX) {
			return -1;
		}
		snprintf(p->robot, sizeof(p->robot), "%.*s", (int)(colon - s), s);
		p->id = (int32_t)id;
		return 0;
	}
	if (s[0] == '\0' || strlen(s) >= sizeof(p->name)) {
		return -1;
	}
	snprintf(p->name, sizeof(p->name), "%s", s);
	return 0;
}

static int run(const hako_cli_command_t *cmd, int argc, char **argv)
{
	enum {
		O_PDU = REC_O_OWN,
		O_TYPE,
		O_RATE,
		O_PDU_RATE,
		O_BUFFER,
		O_COMPRESS,
		O_CHUNK,
		O_SKIP,
		O_UNTIL,
		O_STALL,
		O_POLL,
		O_WAKE,
		O_NICE,
		O_BUDGET,
		O_IDLE
	};
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"pdu", required_argument, NULL, O_PDU},
	    {"type", required_argument, NULL, O_TYPE},
	    {"rate-hz", required_argument, NULL, O_RATE},
	    {"pdu-rate", required_argument, NULL, O_PDU_RATE},
	    {"buffer-mb", required_argument, NULL, O_BUFFER},
	    {"compression", required_argument, NULL, O_COMPRESS},
	    {"chunk-kb", required_argument, NULL, O_CHUNK},
	    {"skip-unknown", no_argument, NULL, O_SKIP},
	    {"until-stop", no_argument, NULL, O_UNTIL},
	    {"poll-usec", required_argument, NULL, O_POLL},
	    {"wake-on-write", no_argument, NULL, O_WAKE},
	    {"nice", required_argument, NULL, O_NICE},
	    {"cpu-budget", required_argument, NULL, O_BUDGET},
	    {"idle", no_argument, NULL, O_IDLE},
	    {"test-stall-writer", no_argument, NULL, O_STALL}, /* tests only: rec_opts_t */
	    REC_CLI_LONGOPTS,
	    {NULL, 0, NULL, 0}};
	rec_opts_t o = {.domain = hako_domain_default_name(),
	                .buffer_bytes = 64u << 20,
	                .compression = HAKO_MCAP_COMPRESS_ZSTD,
	                .wait_ms = 10000,
	                .poll_usec = 100,
	                .cpu_budget = 0.1};
	const rec_cli_opts_t shared = {.domain = &o.domain,
	                               .asset = &o.asset,
	                               .pdudef = &o.pdudef,
	                               .robots = o.robots,
	                               .nrobots = &o.nrobots,
	                               .max_robots = REC_MAX_FILTERS,
	                               .wait_ms = &o.wait_ms,
	                               .quiet = &o.quiet};
	int c, r = -1;
	double v = 0; /* set by each option that reads it, before use */
	int nice_level = 10;
	while (r < 0 && (c = getopt_long(argc, argv, ":d:o:qhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': o.out = optarg; break;
		case O_TYPE:
			r = hako_cli_option_list(cmd, "--type", optarg, o.types, &o.ntypes,
			                         REC_MAX_FILTERS);
			break;
		case O_PDU:
			if (o.npdus == REC_MAX_FILTERS) {
				return hako_cli_usage_error(cmd, "too many --pdu options");
			}
			if (parse_spec(optarg, &o.pdus[o.npdus++]) != 0) {
				return hako_cli_usage_error(
				    cmd, "--pdu %s: expected ROBOT/NAME, ROBOT/*, ROBOT:ID or NAME",
				    optarg);
			}
			break;
		case O_RATE:
			r = hako_cli_option_double(cmd, "--rate-hz", optarg, 0, 1e6,
			                           "a number in [0, 1e6]", &o.rate_hz);
			break;
		case O_PDU_RATE: {
			char *eq = strrchr(optarg, '=');
			if (o.nrates == REC_MAX_FILTERS) {
				return hako_cli_usage_error(cmd, "too many --pdu-rate options");
			}
			if (eq == NULL || hako_cli_parse_double(eq + 1, 0, 1e6, &v) != 0) {
				return hako_cli_usage_error(cmd, "--pdu-rate %s: expected PDU=HZ",
				                            optarg);
			}
			*eq = '\0';
			int bad = parse_spec(optarg, &o.rates[o.nrates]);
			*eq = '=';
			if (bad) {
				return hako_cli_usage_error(cmd,
				                            "--pdu-rate %s: expected ROBOT/NAME, "
				                            "ROBOT/*, ROBOT:ID or NAME=HZ",
				                            optarg);
			}
			o.rates[o.nrates++].rate_hz = v;
			break;
		}
		case O_BUFFER:
			r = hako_cli_option_double(cmd, "--buffer-mb", optarg, 0.01, 65536,
			                           "a number in [0.01, 65536]", &v);
			o.buffer_bytes = (size_t)(v * (1 << 20));
			break;
		case O_COMPRESS:
			if (strcmp(optarg, "zstd") == 0) {
				o.compression = HAKO_MCAP_COMPRESS_ZSTD;
			} else if (strcmp(optarg, "lz4") == 0) {
				o.compression = HAKO_MCAP_COMPRESS_LZ4;
			} else if (strcmp(optarg, "none") == 0) {
				o.compression = HAKO_MCAP_COMPRESS_NONE;
			} else {
				return hako_cli_usage_error(
				    cmd, "--compression %s: expected zstd, lz4 or none", optarg);
			}
			break;
		case O_CHUNK:
			r = hako_cli_option_double(cmd, "--chunk-kb", optarg, 1, 1 << 20,
			                           "a number in [1, 1048576]", &v);
			o.chunk_size = (size_t)(v * 1024);
			break;
		case O_SKIP: o.skip_unknown = 1; break;
		case O_STALL: o.test_stall_writer = 1; break;
		case O_WAKE: o.wake_on_write = 1; break;
		case O_BUDGET:
			if (strcmp(optarg, "auto") == 0) {
				o.cpu_budget = -1;
			} else {
				r = hako_cli_option_double(cmd, "--cpu-budget", optarg, 0, 64,
				                           "auto or [0, 64] (CPUs)", &o.cpu_budget);
			}
			break;
		case O_IDLE: o.idle = 1; break;
		case O_NICE:
			r = hako_cli_option_double(cmd, "--nice", optarg, 0, 19, "[0, 19]", &v);
			nice_level = (int)v;
			break;
		case O_POLL:
			r = hako_cli_option_double(cmd, "--poll-usec", optarg, 1, 1000000,
			                           "[1, 1000000]", &v);
			o.poll_usec = (int)v;
			break;
		case O_UNTIL: o.until_stop = 1; break;
		default: r = rec_cli_option(cmd, c, argv, &shared); break;
		}
	}
	if (r >= 0) {
		return r;
	}
	if (optind < argc) {
		return hako_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	}
	if (o.out == NULL) {
		return hako_cli_usage_error(cmd, "no output file given (-o FILE)");
	}
	if (o.ntypes > 0 && o.pdudef == NULL) {
		return hako_cli_usage_error(cmd,
		                            "--type needs --pdudef (the types of the channels)");
	}
	hako_cli_catch_stop(&g_stop, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The simulation first: on a busy machine the recorder gets the CPU time the assets
	 * leave (what it cannot keep up with is counted as missed), never theirs. */
	if (nice_level > 0 && setpriority(PRIO_PROCESS, 0, nice_level) != 0) {
		fprintf(stderr, "hako-record: --nice %d: %s\n", nice_level, strerror(errno));
	}
	return rec_run(&o, &g_stop) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const hako_cli_command_t command = {
	    "hako-record",
	    "[-d DOMAIN] -o FILE [--pdudef FILE] [--robot R]... [--pdu P]... [--type T]...\n"
	    "       [--rate-hz HZ] [--pdu-rate P=HZ]... [--until-stop] [options]",
	    "",
	    "Record the PDUs of a domain into an MCAP file (profile ros2): one ros2msg schema\n"
	    "per type, one channel per PDU (/<robot>/<pdu>), CDR messages stamped with the\n"
	    "world time (log_time) and the wall time (publish_time), chunked and compressed,\n"
	    "indexed. It follows the domain without being an asset: the world never waits\n"
	    "for it; writes it did not see are counted as missed, writes it had no room for\n"
	    "as dropped. SIGINT / SIGTERM end it with a complete file.",
	    "  -d, --domain NAME    the domain (default $HAKO_DOMAIN, else default)\n"
	    "  -o, --output FILE    the MCAP file to write (replaced)\n"
	    "  --pdudef FILE        names and types of the channels; channels it does not\n"
	    "                       type are recorded as raw PDU bytes (encoding hako.pdu)\n"
	    "  --robot R            only the channels of robot R (may be repeated)\n"
	    "  --pdu P              only these PDUs: ROBOT/NAME, ROBOT/*, ROBOT:ID or NAME\n"
	    "  --type T             only PDUs of type T (pkg/Type; needs --pdudef)\n"
	    "  --rate-hz HZ         at most HZ messages per PDU per second of world time\n"
	    "                       (default 0: every write)\n"
	    "  --pdu-rate P=HZ      the rate of the PDUs P (as --pdu), before --rate-hz\n"
	    "  --skip-unknown       leave out channels whose type is unknown\n"
	    "  --asset NAME         be an asset: read at each of its steps (the world's step),\n"
	    "                       stamped with the step's time; the world waits for it\n"
	    "                       (at most Dmax). Register before the run starts.\n"
	    "  --poll-usec N        while the run runs, look at the channels every N us of\n"
	    "                       wall time (default 100); no cost to the writers\n"
	    "  --cpu-budget F       a follower uses at most F CPUs on average (default 0.1;\n"
	    "                       0: no limit); what it then does not see is missed;\n"
	    "                       auto: as much as keeps the world at 0.9 of its speed\n"
	    "  --nice N             run at this nice level (default 10: below the assets)\n"
	    "  --idle               a follower runs only on CPU time nothing else wants\n"
	    "                       (SCHED_IDLE) until the run ends\n"
	    "  --wake-on-write      wake at every write instead: sees more writes of a slow\n"
	    "                       run, costs each writer a system call while it sleeps\n"
	    "  --until-stop         end when the run stops (else at a signal, or when the\n"
	    "                       domain's conductor ends)\n"
	    "  --buffer-mb N        room between the reader and the file (default 64)\n"
	    "  --compression C      zstd (default), lz4 or none\n"
	    "  --chunk-kb N         uncompressed chunk size (default 1024)\n"
	    "  --wait-ms N          wait this long for the domain to exist (default 10000)\n"
	    "  -q, --quiet          only the last line and errors\n",
	    run,
	};
	return hako_cli_main_single(
	    "hako-record", &command, 23,
	    "exit status: 0 the file was written whole; 1 an error (said on stderr);\n"
	    "2 usage error. See docs/hako-record.md.\n",
	    argc, argv);
}
