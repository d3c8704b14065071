/* hako-cmd conductor: create the domain and run its master in the foreground. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "hako/log.h"

#include "hako_cmd.h"

int hakoi_cmd_conductor(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"delta-usec", required_argument, NULL, 'D'},
	                                         {"max-delay-usec", required_argument, NULL, 'M'},
	                                         {"real-time-factor", required_argument, NULL, 'f'},
	                                         {"config", required_argument, NULL, 'c'},
	                                         {"quiet", no_argument, NULL, 'q'},
	                                         HAKOI_CMD_LONG_OPTIONS,
	                                         {NULL, 0, NULL, 0}};
	hako_master_config_t mc = {HAKOI_CMD_DELTA_USEC, 0, 0.0};
	const char *config = getenv("HAKO_CORE_CONFIG");
	int quiet = 0, c, r;
	int64_t v = 0; /* hako_time_t is Hakoniwa's long long, not int64_t's long */
	while ((c = getopt_long(argc, argv, ":d:hc:q", longopts, NULL)) != -1) {
		switch (c) {
		case 'D':
			r = hakoi_cmd_parse_i64(cmd, "--delta-usec", optarg, 1, &v);
			mc.delta_usec = v;
			break;
		case 'M':
			r = hakoi_cmd_parse_i64(cmd, "--max-delay-usec", optarg, 1, &v);
			mc.max_delay_usec = v;
			break;
		case 'f':
			r = hakoi_cmd_parse_double(cmd, "--real-time-factor", optarg,
			                           &mc.real_time_factor);
			break;
		case 'c':
			config = optarg;
			r = -1;
			break;
		case 'q':
			quiet = 1;
			r = -1;
			break;
		default: r = hakoi_cmd_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if ((r = hakoi_cmd_no_operands(cmd, argc, argv)) >= 0) {
		return r;
	}
	if (mc.max_delay_usec == 0) {
		mc.max_delay_usec = mc.delta_usec;
	}
	if (mc.real_time_factor > 1e6) {
		return hako_cli_usage_error(cmd, "--real-time-factor: at most 1000000");
	}
	if (mc.max_delay_usec < mc.delta_usec) {
		return hako_cli_usage_error(
		    cmd, "--max-delay-usec (%lld) must be >= --delta-usec (%lld)",
		    (long long)mc.max_delay_usec, (long long)mc.delta_usec);
	}

	hako_domain_config_t cfg;
	hako_error_t err;
	char msg[1200];
	hako_domain_config_init(&cfg);
	if (hako_domain_config_from_env(&cfg, &err) != 0) {
		hakoi_cmd_errf("%s", hako_error_format(&err, msg, sizeof(msg)));
		return 1;
	}
	if (config != NULL && config[0] != '\0') {
		if (hako_domain_config_load(&cfg, config, &err) != 0) {
			hakoi_cmd_errf("%s", hako_error_format(&err, msg, sizeof(msg)));
			return 1;
		}
	}

	/* Block the signals before the master thread exists so that only sigwait sees them. */
	sigset_t sigs;
	hakoi_cmd_stop_signals(&sigs, 1);

	hako_domain_t *dom = NULL;
	hakoi_cmd_library_quiet(1);
	r = hako_domain_create(hakoi_cmd_domain(), &cfg, &dom);
	hakoi_cmd_library_quiet(0);
	if (r == HAKO_EBUSY) {
		hako_domain_t *other = NULL;
		hako_domain_info_t info;
		if (hako_domain_open(hakoi_cmd_domain(), &other) == 0 &&
		    hako_domain_get_info(other, &info) == 0) {
			hakoi_cmd_errf("domain '%s' already has a conductor (pid %d)",
			               hakoi_cmd_domain(), info.master_pid);
		} else {
			hakoi_cmd_errf("domain '%s' already has a conductor", hakoi_cmd_domain());
		}
		hako_domain_close(other);
		return 1;
	}
	if (r == HAKO_EMAGIC || r == HAKO_EVERSION) {
		hakoi_cmd_errf(
		    "domain '%s': /dev/shm/hako.%s is not a segment of this hako version; "
		    "remove it with: hako-cmd clean",
		    hakoi_cmd_domain(), hakoi_cmd_domain());
		return 1;
	}
	if (r != 0) {
		char b[32];
		hakoi_cmd_errf(
		    "cannot create domain '%s' (%u assets, %u channels, %s of PDU arena): %s",
		    hakoi_cmd_domain(), cfg.max_assets, cfg.max_channels,
		    hakoi_cmd_human_bytes(cfg.arena_bytes, b, sizeof(b)), hako_strerror(r));
		return 1;
	}
	hako_master_t *master = NULL;
	r = hako_master_start(dom, &mc, &master);
	if (r != 0) {
		hakoi_cmd_errf("cannot start the master of domain '%s': %s", hakoi_cmd_domain(),
		               hako_strerror(r));
		hako_domain_close(dom);
		hako_domain_remove(hakoi_cmd_domain());
		return 1;
	}
	if (!quiet && getenv("HAKO_LOG") == NULL) {
		hako_log_set_level(HAKO_LOG_INFO); /* registrations and transitions, as they come */
	}
	printf("hako-cmd: conductor of domain '%s' running (pid %d, delta %lld us, max delay "
	       "%lld us, real-time factor ",
	       hakoi_cmd_domain(), (int)getpid(), (long long)mc.delta_usec,
	       (long long)mc.max_delay_usec);
	hakoi_cmd_print_factor(stdout, mc.real_time_factor);
	printf("); Ctrl-C to stop\n");
	fflush(stdout);

	int sig = 0;
	while (sigwait(&sigs, &sig) != 0) {
	}
	hako_domain_info_t info;
	hako_domain_get_info(dom, &info);
	hako_master_stop(master);
	hako_log_set_level(HAKO_LOG_WARN);
	/* Remove the segment only if it is still ours (clean --force may have replaced it). */
	hako_domain_t *now = NULL;
	hako_domain_info_t cur;
	int ours = 1;
	hakoi_cmd_library_quiet(1);
	if (hako_domain_open(hakoi_cmd_domain(), &now) != 0) {
		ours = 0;
	} else if (hako_domain_get_info(now, &cur) == 0 && cur.master_pid != (int)getpid()) {
		ours = 0;
	}
	hakoi_cmd_library_quiet(0);
	hako_domain_close(now);
	hako_domain_close(dom);
	if (ours) {
		hako_domain_remove(hakoi_cmd_domain());
	}
	printf("hako-cmd: conductor of domain '%s' stopped by %s (state %s, world time %.3f s); "
	       "%s\n",
	       hakoi_cmd_domain(),
	       sig == SIGINT    ? "SIGINT"
	       : sig == SIGTERM ? "SIGTERM"
	                        : "SIGHUP",
	       hako_state_name(info.state), hakoi_cmd_sec(info.world_time),
	       ours ? "segment removed" : "the segment was already gone");
	return 0;
}
