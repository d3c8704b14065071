/* See hako_cli.h. */
#define _POSIX_C_SOURCE 200809L

#include "hako_cli.h"

#include <getopt.h>
#include <stdarg.h>
#include <string.h>

static const hako_cli_t *g_cli;

/* Length of the word at text: up to a space outside brackets, so "[--config FILE]" stays
 * on one line. */
static int word_len(const char *text)
{
	int depth = 0, i = 0;
	for (; text[i] != '\0' && (text[i] != ' ' || depth > 0); i++) {
		depth += text[i] == '[' || text[i] == '<';
		depth -= (text[i] == ']' || text[i] == '>') && depth > 0;
	}
	return i;
}

/* The words of text on lines of at most `width` columns. The cursor is at column `col`;
 * continuation lines start at column `indent`. */
static void print_wrapped(FILE *out, const char *text, int col, int indent, int width)
{
	int first = 1;
	while (*text != '\0') {
		int len = word_len(text);
		if (!first && col + 1 + len > width) {
			fprintf(out, "\n%*s", indent, "");
			col = indent;
		} else if (!first) {
			fputc(' ', out);
			col++;
		}
		fprintf(out, "%.*s", len, text);
		col += len;
		first = 0;
		text += len;
		text += strspn(text, " ");
	}
	fputc('\n', out);
}

const hako_cli_command_t *hako_cli_find(const char *name)
{
	for (size_t i = 0; i < g_cli->ncommands; i++) {
		if (strcmp(g_cli->commands[i].name, name) == 0) {
			return &g_cli->commands[i];
		}
	}
	return NULL;
}

void hako_cli_list_commands(FILE *out, int width)
{
	for (size_t i = 0; i < g_cli->ncommands; i++) {
		fprintf(out, "  %-*s  %s\n", width, g_cli->commands[i].name,
		        g_cli->commands[i].brief);
	}
}

void hako_cli_command_usage(const hako_cli_command_t *cmd, FILE *out)
{
	int w = g_cli->wrap_width;
	int col = g_cli->single ? fprintf(out, "usage: %s", g_cli->prog)
	                        : fprintf(out, "usage: %s %s", g_cli->prog, cmd->name);
	if (w <= 0) {
		fprintf(out, " %s\n\n%s\n", cmd->synopsis, cmd->summary);
	} else {
		if (cmd->synopsis[0] != '\0') {
			fputc(' ', out);
			print_wrapped(out, cmd->synopsis, col + 1, col + 1, w);
		} else {
			fputc('\n', out);
		}
		fputc('\n', out);
		print_wrapped(out, cmd->summary, 0, 0, w);
	}
	fprintf(out, "\noptions:\n%s%s", cmd->options, g_cli->common_options);
	if (g_cli->epilog != NULL) {
		fprintf(out, "\n%s", g_cli->epilog);
	}
}

int hako_cli_usage_error(const hako_cli_command_t *cmd, const char *fmt, ...)
{
	va_list ap;
	if (g_cli->single) {
		cmd = NULL; /* the command is the tool */
	}
	fprintf(stderr, "%s%s%s: ", g_cli->prog, cmd != NULL ? " " : "",
	        cmd != NULL ? cmd->name : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s %s%s--help'.\n", g_cli->prog, cmd != NULL ? cmd->name : "",
	        cmd != NULL ? " " : "");
	return HAKO_CLI_EXIT_USAGE;
}

int hako_cli_common_option(const hako_cli_command_t *cmd, int c, char **argv)
{
	switch (c) {
	case 'h': hako_cli_command_usage(cmd, stdout); return 0;
	case 'V': printf("%s %s\n", g_cli->prog, g_cli->version); return 0;
	case ':': return hako_cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
	case '?':
		if (optopt != 0) {
			return hako_cli_usage_error(cmd, "unknown option '-%c'", optopt);
		}
		return hako_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
	default: return hako_cli_usage_error(cmd, "unexpected option");
	}
}

int hako_cli_help(const hako_cli_command_t *cmd, int argc, char **argv)
{
	(void)cmd;
	if (argc <= 1) {
		g_cli->usage(stdout);
		return 0;
	}
	const hako_cli_command_t *c = hako_cli_find(argv[1]);
	if (c == NULL) {
		return hako_cli_usage_error(NULL, "unknown command '%s'", argv[1]);
	}
	hako_cli_command_usage(c, stdout);
	return 0;
}

int hako_cli_main(const hako_cli_t *cli, int argc, char **argv)
{
	static const struct option longopts[] = {{"domain", required_argument, NULL, 'd'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {"version", no_argument, NULL, 'V'},
	                                         {NULL, 0, NULL, 0}};
	g_cli = cli;
	opterr = 0;
	if (cli->single) {
		if (cli->before_run != NULL) {
			cli->before_run();
		}
		int r = cli->commands[0].run(&cli->commands[0], argc, argv);
		fflush(stdout);
		return r;
	}
	/* '+': stop at the command name; its options are parsed by the command. Without a domain
	 * the table starts after "domain". */
	const struct option *lo = cli->domain != NULL ? longopts : longopts + 1;
	const char *shortopts = cli->domain != NULL ? "+:d:hV" : "+:hV";
	int c;
	while ((c = getopt_long(argc, argv, shortopts, lo, NULL)) != -1) {
		switch (c) {
		case 'd': *cli->domain = optarg; break;
		case 'h': cli->usage(stdout); return 0;
		case 'V': printf("%s %s\n", cli->prog, cli->version); return 0;
		case ':':
			/* only -d takes a value */
			return hako_cli_usage_error(NULL, "option '%s' needs a value",
			                            argv[optind - 1]);
		default:
			if (optopt != 0) {
				return hako_cli_usage_error(NULL, "unknown option '-%c'", optopt);
			}
			return hako_cli_usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		cli->usage(stderr);
		return HAKO_CLI_EXIT_USAGE;
	}
	const hako_cli_command_t *cmd = hako_cli_find(argv[optind]);
	if (cmd == NULL) {
		return hako_cli_usage_error(NULL, "unknown command '%s'", argv[optind]);
	}
	if (cli->domain != NULL && *cli->domain != NULL && (*cli->domain)[0] == '\0') {
		return hako_cli_usage_error(NULL, "the domain name must not be empty");
	}
	if (cli->before_run != NULL) {
		cli->before_run();
	}
	int sub_argc = argc - optind;
	char **sub_argv = argv + optind;
	optind = 0; /* re-initialise getopt for the command's options; its argv[0] is its name */
	int r = cmd->run(cmd, sub_argc, sub_argv);
	fflush(stdout);
	return r;
}

int hako_cli_main_single(const char *prog, const hako_cli_command_t *cmd, int col,
                         const char *epilog, int argc, char **argv)
{
	static char common[160];
	static hako_cli_t cli;
	snprintf(common, sizeof(common), "  %-*sshow this help\n  %-*sshow the version\n", col - 2,
	         "-h, --help", col - 2, "-V, --version");
	cli = (hako_cli_t){.prog = prog,
	                   .version = HAKO_VERSION,
	                   .commands = cmd,
	                   .ncommands = 1,
	                   .common_options = common,
	                   .epilog = epilog,
	                   .single = 1};
	return hako_cli_main(&cli, argc, argv);
}

int hako_cli_option_list(const hako_cli_command_t *cmd, const char *opt, const char *s,
                         const char **list, int *n, int max)
{
	if (*n >= max) {
		return hako_cli_usage_error(cmd, "too many %s options", opt);
	}
	list[(*n)++] = s;
	return -1;
}
