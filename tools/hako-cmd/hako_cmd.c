/* hako-cmd: run the conductor of a domain and look at or drive it from the shell. The commands
 * of Hakoniwa's hako-cmd (start, stop, reset, status, ls) plus a foreground conductor, PDUs read
 * and written as JSON, the PDU types and their layout, domain info, live clock view and segment
 * removal (docs/hako-cmd.md).
 *
 * Exit codes: 0 success, 1 failure (message on stderr), 2 usage error.
 */
#include <stdio.h>

#include "hako_cmd.h"

#ifndef HAKO_VERSION
#define HAKO_VERSION "unknown"
#endif

static const char common_options[] =
    "  -d, --domain NAME     domain to act on (default: $HAKO_DOMAIN, else \"default\")\n"
    "  -h, --help            show this help\n";

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
     hakoi_cmd_conductor},
    {"start", "[--no-wait] [--timeout-ms N] [--until-usec T]",
     "start the simulation and wait until it runs",
     "Start the simulation (stopped -> runnable -> running once every asset acknowledged) and "
     "wait for running. A run that is already over when this looks (it reached its stop time) "
     "is said so, and is a success.",
     "  --no-wait             return once the start is requested\n"
     "  --timeout-ms N        how long to wait for the new state (default 5000)\n"
     "  --until-usec T        stop the run at world time T (the domain's stop time)\n",
     hakoi_cmd_start},
    {"stop", "[--no-wait] [--timeout-ms N]", "stop the simulation and wait until it has stopped",
     "Stop the simulation (running -> stopping -> stopped once every asset acknowledged) and "
     "wait for stopped.",
     "  --no-wait             return once the stop is requested\n"
     "  --timeout-ms N        how long to wait for the new state (default 5000)\n",
     hakoi_cmd_stop},
    {"reset", "[--no-wait] [--timeout-ms N]", "reset clocks and PDUs, or leave the error state",
     "Reset a stopped simulation (clocks and PDUs back to zero; the assets run on_reset), or "
     "leave the error state (dead assets are removed); wait for stopped.",
     "  --no-wait             return once the reset is requested\n"
     "  --timeout-ms N        how long to wait for the new state (default 5000)\n",
     hakoi_cmd_reset},
    {"status", "", "state, world time, assets, conductor (and why, in error)",
     "Print status=<state> as Hakoniwa does, then the world time, the number of assets, the "
     "conductor and, in the error state, the reason.",
     "", hakoi_cmd_status},
    {"ls", "", "table of the assets and their clocks",
     "List the registered assets: id, pid, liveness, clock t_i, step, lag behind the world "
     "clock, steps done, heartbeat age and the event they have not acknowledged yet.",
     "", hakoi_cmd_ls},
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
     hakoi_cmd_pdu},
    {"pdu-write", "[--pdudef FILE] [--type PKG/TYPE] <robot> <name|channel-id> '<json>'",
     "write a PDU given as JSON to a channel",
     "Encode JSON (an object with the field names of the type's .msg; '-' reads it from "
     "stdin) as a PDU of the channel's type and write it to the channel. Missing fields are "
     "zero; the PDU must fit the channel.",
     "  --pdudef FILE         pdudef JSON to look PDU names and types up in\n"
     "                        (default: $HAKO_PDUDEF)\n"
     "  --type PKG/TYPE       the PDU's type (default: the pdudef's)\n",
     hakoi_cmd_pdu_write},
    {"types", "", "list the known PDU types",
     "List the PDU types the .msg search path knows: the folders of $HAKO_MSG_PATH (separated "
     "by ':') and the built-in packages.",
     "", hakoi_cmd_types},
    {"type", "<pkg/Type>", "layout of a PDU type: offset, size and kind of every field",
     "Print the layout of a PDU type: size, alignment and fixed PDU size, and every field with "
     "its offset, size, kind, form and count, nested fields indented under theirs.",
     "", hakoi_cmd_type},
    {"schema", "<pkg/Type>", "the ros2msg schema of a PDU type (Foxglove, MCAP)",
     "Print the ros2msg schema of a PDU type, as Foxglove and MCAP's ros2 profile read it with "
     "its ROS 2 CDR messages: its fields, then each type it uses after a line of 80 '=' and "
     "'MSG: pkg/Type'.",
     "", hakoi_cmd_schema},
    {"info", "", "capacities, clock parameters and channels of the domain",
     "Print the layout version, capacities and their use, conductor, liveness policy, clock "
     "parameters, world time and the list of PDU channels.",
     "", hakoi_cmd_info},
    {"watch", "[--interval-ms N] [--count N]", "live view of the clocks and their drift",
     "Live view of the state, the world time and each asset's clock with its drift behind the "
     "world clock (and the largest drift seen), until Ctrl-C.",
     "  --interval-ms N       refresh period (default 500, at least 10)\n"
     "  --count N             stop after N refreshes (default: until Ctrl-C)\n",
     hakoi_cmd_watch},
    {"clean", "[--force]", "remove the shared-memory segment of the domain",
     "Remove the shared-memory segment of the domain (also one of another hako version).",
     "  -f, --force           remove it even though its conductor is alive\n", hakoi_cmd_clean},
    {"dump", "[-o FILE] [<real-cid>]", "the domain's PDUs (or one channel's bytes) to a file",
     "Write the latest PDU of every channel of the domain to FILE (or stdout), to be written "
     "back with 'hako-cmd restore FILE'; with a real channel id (hako-cmd real_cid), that "
     "channel's bytes alone, zero-filled to its size, as Hakoniwa's 'hako-cmd dump <cid>'.",
     "  -o, --output FILE     write to FILE (default: stdout, which must not be a terminal)\n",
     hakoi_cmd_dump},
    {"restore", "<file> | <real-cid> <file>", "write a dump back into the domain's channels",
     "Write every PDU of a dump made by 'hako-cmd dump' back into its channel (each must exist "
     "with the same size, else nothing is written); with a real channel id, write the bytes of "
     "a file into that channel, as Hakoniwa's 'hako-cmd restore <cid> <file>'.",
     "", hakoi_cmd_restore},
    {"real_cid", "<robot> <channel-id>", "the real channel id of a channel",
     "Print the real channel id (the channel's index in the domain, which dump and restore "
     "take) of the channel <robot>/<channel-id>; -1 and exit status 1 if there is none.",
     "", hakoi_cmd_real_cid},
    {"pmeta", "", "print the master data of the domain",
     "Print the domain's master data, one 'key = value' per line with Hakoniwa's key names "
     "where hako has the datum: header, clock, every asset and every channel.",
     "", hakoi_cmd_pmeta},
    {"jmeta", "", "the master data of the domain as JSON",
     "Print the domain's master data (as pmeta) as one JSON document, with the keys of "
     "Hakoniwa's 'hako-cmd jmeta' where hako has the datum.",
     "", hakoi_cmd_jmeta},
    {"plog", "[--follow]", "print the domain's event log",
     "Print the domain's event log kept in its segment: creation, masters, state changes, "
     "assets registered and removed, channels created, errors (the latest 256 events).",
     "  -f, --follow          keep printing new events until Ctrl-C\n", hakoi_cmd_plog},
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
	    .domain = &hakoi_cmd_domain_opt,
	    .usage = tool_usage,
	};
	return hako_cli_main(&cli, argc, argv);
}
