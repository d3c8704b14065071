/* The command-line skeleton shared by every hako tool, so that they all word help, versions and
 * usage errors the same way, with the same exit codes (0 ok, 2 usage error; the commands' own
 * codes otherwise).
 *
 * A tool with sub-commands (hako-cmd, hako-endpoint, hako-rd) has a table of commands, its own
 * options before the command name (-h, -V, and -d when the tool has a domain),
 * "<tool> help [command]" and per-command --help. A tool that is one command (hako-launch,
 * hako-msggen) sets `single`: its one command parses the whole command line, and its help and
 * errors name the tool alone.
 *
 * hako_cli_main() remembers the tool for the calls below; one tool a process. */
#ifndef HAKO_CLI_H
#define HAKO_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define HAKO_CLI_EXIT_USAGE 2

/* -h/--help and -V/--version for the getopt_long table of a single-command tool; its getopt
 * result goes to hako_cli_common_option. */
/* clang-format off */
#define HAKO_CLI_HELP_VERSION {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}
/* clang-format on */

typedef struct hako_cli_command {
	const char *name;
	const char *synopsis;
	const char *brief;   /* one line for the overview */
	const char *summary; /* the first paragraph of the command's help */
	const char *options; /* the command's option lines, before the tool's common ones */
	int (*run)(const struct hako_cli_command *cmd, int argc, char **argv);
} hako_cli_command_t;

typedef struct hako_cli {
	const char *prog; /* "hako-cmd" */
	const char *version;
	const hako_cli_command_t *commands;
	size_t ncommands;
	const char *common_options; /* the option lines every command's help ends with */
	int wrap_width;             /* > 0: synopsis and summary wrapped at this column; 0: as is */
	const char **domain;        /* non-NULL: -d/--domain NAME before the command sets it */
	void (*usage)(FILE *out);   /* the tool's overview (--help, help, no command) */
	void (*before_run)(void);   /* optional: called once the command is known */
	const char *epilog;         /* optional: a paragraph after the options of each help */
	int single;                 /* the tool is commands[0], run with the whole command line */
} hako_cli_t;

/* Parse the tool's options, find the command and run it with argv[0] its name (getopt reset).
 * Returns the exit code. */
int hako_cli_main(const hako_cli_t *cli, int argc, char **argv);

const hako_cli_command_t *hako_cli_find(const char *name);

/* "  <name padded to width>  <brief>" a command. */
void hako_cli_list_commands(FILE *out, int width);

void hako_cli_command_usage(const hako_cli_command_t *cmd, FILE *out);

/* "<prog>[ <cmd>]: <message>" and "Try '<prog> [<cmd> ]--help'." on stderr; returns
 * HAKO_CLI_EXIT_USAGE. cmd may be NULL (the tool's own options). */
int hako_cli_usage_error(const hako_cli_command_t *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A command's getopt result for -h (help on stdout: 0), -V (the version: 0), ':' and '?' (usage
 * errors). Returns the exit code. */
int hako_cli_common_option(const hako_cli_command_t *cmd, int c, char **argv);

/* hako_cli_main for a tool that is one command (`single`), cmd, named prog: -h and -V described
 * in its help with their descriptions at column col, like its own options; epilog as
 * hako_cli_t's. Returns the exit code. */
int hako_cli_main_single(const char *prog, const hako_cli_command_t *cmd, int col,
                         const char *epilog, int argc, char **argv);

/* A repeatable option's value s appended to list, which holds *n of at most max, with the usage
 * error "too many <opt> options". -1 to go on, else the exit code, as hako_cli_option_double. */
int hako_cli_option_list(const hako_cli_command_t *cmd, const char *opt, const char *s,
                         const char **list, int *n, int max);

/* The "help [command]" command. */
int hako_cli_help(const hako_cli_command_t *cmd, int argc, char **argv);

/* Numbers of options (hako_cli_number.c). The whole of s, base 10 for integers, in [lo, hi]
 * (what the type cannot hold is out of range too): 0 and *out set, else -1 and nothing said,
 * so that each tool keeps its own words for the error. */
int hako_cli_parse_double(const char *s, double lo, double hi, double *out);
int hako_cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* An option's number with the usage error "<opt> <s>: expected <expected>" (hako-record's and
 * hako-replay's words). -1 to go on with *out set, else the exit code, as
 * hako_cli_common_option. */
int hako_cli_option_double(const hako_cli_command_t *cmd, const char *opt, const char *s, double lo,
                           double hi, const char *expected, double *out);

/* Signals that a tool's loop looks for (hako_cli_signal.c): sig sets *flag to sig. No
 * SA_RESTART, so a sleep or a poll ends at once and the loop sees it. once: the handler is reset
 * after the first signal, so a second one ends the process at once. Call before the threads
 * start. */
void hako_cli_catch_signal(int sig, volatile sig_atomic_t *flag, int once);

/* SIGINT and SIGTERM, as hako_cli_catch_signal: how every long-running tool is stopped. */
void hako_cli_catch_stop(volatile sig_atomic_t *flag, int once);

#endif
