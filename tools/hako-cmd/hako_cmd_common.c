/* What the commands of hako-cmd share: the domain option, errors, domain access and number
 * formats. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hako/log.h"

#include "hako_cmd.h"

const char *hakoi_cmd_domain_opt;

const char *hakoi_cmd_domain(void)
{
	return hakoi_cmd_domain_opt != NULL ? hakoi_cmd_domain_opt : hako_domain_default_name();
}

void hakoi_cmd_errf(const char *fmt, ...)
{
	va_list ap;
	fputs("hako-cmd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* HAKO_LOG set by the user always wins. */
void hakoi_cmd_library_quiet(int quiet)
{
	if (getenv("HAKO_LOG") == NULL) {
		hako_log_set_level(quiet ? HAKO_LOG_OFF : HAKO_LOG_WARN);
	}
}

/* ---- options ---- */

int hakoi_cmd_option(const hako_cli_command_t *cmd, int c, char **argv)
{
	if (c != 'd') {
		return hako_cli_common_option(cmd, c, argv);
	}
	if (optarg[0] == '\0') {
		return hako_cli_usage_error(cmd, "the domain name must not be empty");
	}
	hakoi_cmd_domain_opt = optarg;
	return -1;
}

int hakoi_cmd_parse_i64(const hako_cli_command_t *cmd, const char *opt, const char *s, int64_t min,
                        int64_t *out)
{
	if (hako_cli_parse_i64(s, min, INT64_MAX, out) != 0) {
		return hako_cli_usage_error(cmd, "%s: '%s' is not an integer >= %lld", opt, s,
		                            (long long)min);
	}
	return -1;
}

int hakoi_cmd_parse_double(const hako_cli_command_t *cmd, const char *opt, const char *s,
                           double *out)
{
	if (hako_cli_parse_double(s, 0.0, HUGE_VAL, out) != 0) {
		return hako_cli_usage_error(cmd, "%s: '%s' is not a number >= 0", opt, s);
	}
	return -1;
}

int hakoi_cmd_no_operands(const hako_cli_command_t *cmd, int argc, char **argv)
{
	if (optind < argc) {
		return hako_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	}
	return -1;
}

int hakoi_cmd_simple_options(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {HAKOI_CMD_LONG_OPTIONS, {NULL, 0, NULL, 0}};
	int c, r;
	while ((c = getopt_long(argc, argv, ":d:h", longopts, NULL)) != -1) {
		if ((r = hakoi_cmd_option(cmd, c, argv)) >= 0) {
			return r;
		}
	}
	return hakoi_cmd_no_operands(cmd, argc, argv);
}

/* ---- domain access ---- */

int hakoi_cmd_open_domain(hako_domain_t **dom)
{
	hakoi_cmd_library_quiet(1);
	int r = hako_domain_open(hakoi_cmd_domain(), dom);
	hakoi_cmd_library_quiet(0);
	switch (r) {
	case 0: return 0;
	case HAKO_ENOENT:
		hakoi_cmd_errf(
		    "no domain '%s' (is a conductor running? start one with: hako-cmd conductor)",
		    hakoi_cmd_domain());
		break;
	case HAKO_EMAGIC:
	case HAKO_EVERSION:
		hakoi_cmd_errf(
		    "domain '%s': /dev/shm/hako.%s is not a segment of this hako version (%s); "
		    "remove it with: hako-cmd clean",
		    hakoi_cmd_domain(), hakoi_cmd_domain(), hako_strerror(r));
		break;
	case HAKO_ECORRUPT:
		hakoi_cmd_errf(
		    "domain '%s': /dev/shm/hako.%s is corrupted (run with HAKO_LOG=error to see "
		    "which field); remove it with: hako-cmd clean",
		    hakoi_cmd_domain(), hakoi_cmd_domain());
		break;
	case HAKO_EPERM: {
		unsigned uid = 0;
		if (hako_domain_owner(hakoi_cmd_domain(), &uid) == 0 &&
		    uid != (unsigned)geteuid()) {
			hakoi_cmd_errf(
			    "domain '%s': /dev/shm/hako.%s is owned by uid %u, not by you (uid "
			    "%u); "
			    "its conductor is that user's (HAKO_ALLOW_FOREIGN_DOMAIN=1 joins it "
			    "anyway)",
			    hakoi_cmd_domain(), hakoi_cmd_domain(), uid, (unsigned)geteuid());
		} else {
			hakoi_cmd_errf("domain '%s': permission denied", hakoi_cmd_domain());
		}
		break;
	}
	default:
		hakoi_cmd_errf("cannot open domain '%s': %s", hakoi_cmd_domain(), hako_strerror(r));
		break;
	}
	return 1;
}

int hakoi_cmd_get_info(hako_domain_t *dom, hako_domain_info_t *info)
{
	int r = hako_domain_get_info(dom, info);
	if (r != 0) {
		hakoi_cmd_errf("domain '%s': cannot read its header: %s", hakoi_cmd_domain(),
		               hako_strerror(r));
		return 1;
	}
	return 0;
}

typedef int (*lister_t)(hako_domain_t *dom, void *out, int max, int *count);

static int assets_lister(hako_domain_t *dom, void *out, int max, int *count)
{
	return hako_domain_list_assets(dom, out, max, count);
}

static int channels_lister(hako_domain_t *dom, void *out, int max, int *count)
{
	return hako_domain_list_channels(dom, out, max, count);
}

/* What a lister returns, in a malloc'ed array (*count entries), however many there are. */
static void *fetch_list(hako_domain_t *dom, lister_t lister, size_t elem, const char *what,
                        int *count)
{
	int max = 64;
	for (;;) {
		void *a = calloc((size_t)max, elem);
		int n = 0;
		if (a == NULL) {
			hakoi_cmd_errf("out of memory");
			return NULL;
		}
		int r = lister(dom, a, max, &n);
		if (r != 0) {
			hakoi_cmd_errf("domain '%s': cannot list the %s: %s", hakoi_cmd_domain(),
			               what, hako_strerror(r));
			free(a);
			return NULL;
		}
		if (n <= max) {
			*count = n;
			return a;
		}
		free(a);
		max = n + 16; /* more registered meanwhile */
	}
}

hako_asset_info_t *hakoi_cmd_list_assets(hako_domain_t *dom, int *count)
{
	return fetch_list(dom, assets_lister, sizeof(hako_asset_info_t), "assets", count);
}

hako_channel_info_t *hakoi_cmd_list_channels(hako_domain_t *dom, int *count)
{
	return fetch_list(dom, channels_lister, sizeof(hako_channel_info_t), "channels", count);
}

void hakoi_cmd_print_factor(FILE *out, double factor)
{
	if (factor == 0.0) {
		fprintf(out, "0 = as fast as possible");
	} else {
		fprintf(out, "%g", factor);
	}
}

const char *hakoi_cmd_human_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;
	while (v >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	if (u == 0) {
		snprintf(buf, len, "%" PRIu64 " B", b);
	} else {
		snprintf(buf, len, "%.1f %s", v, units[u]);
	}
	return buf;
}

/* Block the signals that end a foreground command, for sigwait. A shell starts background
 * jobs of a script with SIGINT ignored, and an ignored signal is discarded even when blocked:
 * reset it so that `kill -INT` still works. SIGHUP stays ignored under nohup. */
void hakoi_cmd_stop_signals(sigset_t *set, int hup)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	struct sigaction old;
	if (hup && sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler != SIG_IGN) {
		sigaddset(set, SIGHUP);
	}
	pthread_sigmask(SIG_BLOCK, set, NULL);
}
