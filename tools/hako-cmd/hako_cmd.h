/* Inside hako-cmd: what its commands (hako_cmd_<group>.c) share, and the commands themselves
 * for the table in hako_cmd.c. */
#ifndef HAKOI_CMD_H
#define HAKOI_CMD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hako/domain.h"
#include "hako/msg.h"
#include "hako_cli.h"

#define HAKOI_CMD_WAIT_MS    5000
#define HAKOI_CMD_WATCH_MS   500
#define HAKOI_CMD_DELTA_USEC 1000

/* The options every command takes, for its getopt_long table. */
/* clang-format off */
#define HAKOI_CMD_LONG_OPTIONS {"domain", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'}
/* clang-format on */

/* -d / --domain before or after the command; NULL: HAKO_DOMAIN, else "default". */
extern const char *hakoi_cmd_domain_opt;
const char *hakoi_cmd_domain(void);

/* "hako-cmd: <message>" on stderr. */
void hakoi_cmd_errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The tool reports the errors it understands in its own words; the library's log lines would
 * only repeat them. */
void hakoi_cmd_library_quiet(int quiet);

/* Option parsing: each returns -1 to go on, else the exit code. */
/* -d, -h and getopt's errors. */
int hakoi_cmd_option(const hako_cli_command_t *cmd, int c, char **argv);
int hakoi_cmd_parse_i64(const hako_cli_command_t *cmd, const char *opt, const char *s, int64_t min,
                        int64_t *out);
int hakoi_cmd_parse_double(const hako_cli_command_t *cmd, const char *opt, const char *s,
                           double *out);
int hakoi_cmd_no_operands(const hako_cli_command_t *cmd, int argc, char **argv);
/* The common options and no operands. */
int hakoi_cmd_simple_options(const hako_cli_command_t *cmd, int argc, char **argv);

/* The domain, or 1 after saying why not (and how to fix it). */
int hakoi_cmd_open_domain(hako_domain_t **dom);
int hakoi_cmd_get_info(hako_domain_t *dom, hako_domain_info_t *info);
/* Every asset (channel) of the domain, malloc'ed; NULL after saying why. */
hako_asset_info_t *hakoi_cmd_list_assets(hako_domain_t *dom, int *count);
hako_channel_info_t *hakoi_cmd_list_channels(hako_domain_t *dom, int *count);

/* The type `name` from a registry over $HAKO_MSG_PATH and the built-in packages. 0, or the
 * error code with `why` saying what went wrong. *reg is the caller's to destroy either way. */
int hakoi_cmd_find_type(const char *name, hako_msg_registry_t **reg, const hako_msg_type_t **type,
                        char *why, size_t len);

static inline double hakoi_cmd_sec(hako_time_t usec)
{
	return (double)usec / 1e6;
}

static inline double hakoi_cmd_msec(hako_time_t usec)
{
	return (double)usec / 1e3;
}

/* "0 = as fast as possible" or the factor. */
void hakoi_cmd_print_factor(FILE *out, double factor);
/* "512 B", "1.5 MiB" */
const char *hakoi_cmd_human_bytes(uint64_t b, char *buf, size_t len);
/* Block SIGINT, SIGTERM (and SIGHUP if hup and not ignored) for sigwait. */
void hakoi_cmd_stop_signals(sigset_t *set, int hup);

/* The commands. */
int hakoi_cmd_conductor(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_start(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_stop(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_reset(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_status(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_ls(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_info(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_pdu(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_pdu_write(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_types(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_type(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_schema(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_clean(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_watch(const hako_cli_command_t *cmd, int argc, char **argv);
/* Hakoniwa's dump, restore, real_cid (hako_cmd_dump.c), pmeta, jmeta, plog (hako_cmd_meta.c). */
int hakoi_cmd_dump(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_restore(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_real_cid(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_pmeta(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_jmeta(const hako_cli_command_t *cmd, int argc, char **argv);
int hakoi_cmd_plog(const hako_cli_command_t *cmd, int argc, char **argv);

#endif
