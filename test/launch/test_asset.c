/* launch-test-asset: a process for the hako-launch tests. With --asset it is a Hakoniwa-style
 * asset (hako_asset.h) that steps until the run stops; without, a plain process. Flags make it
 * misbehave on purpose: exit early with a code, die by a signal, never register, print a line
 * late, ignore SIGTERM.
 *
 * It prints "pid=<pid>" first (the tests check that it is gone afterwards) and, as an asset,
 * "done asset=<name> time=<t_i> steps=<n>" after each start -> stop -> reset cycle.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hako/hako_asset.h"

static struct {
	const char *asset;
	long long delta_usec;
	int loop;
	long long exit_at_usec; /* < 0: never */
	int exit_code;
	int exit_now;
	long long die_at_usec; /* SIGKILL itself */
	const char *once;      /* the misbehaviour only while this file does not exist */
	const char *say;
	long long say_delay_ms;
	long long sleep_ms; /* plain process: exit 0 after this long (< 0: wait for SIGTERM) */
	int ignore_term;
	long long print_every_usec;
} opt = {NULL, 1000, 0, -1, 3, 0, -1, NULL, NULL, 0, -1, 0, 0};

static int misbehave = 1;
static unsigned long long steps;
static long long last_time; /* t_i after the last step: a reset sets t_i back to 0 */

static void sleep_ms(long long ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

static int on_step(hako_asset_context_t *ctx)
{
	(void)ctx;
	hako_time_t t = hako_asset_current_time() + opt.delta_usec; /* the end of this step */
	steps++;
	last_time = t;
	if (opt.print_every_usec > 0 && t % opt.print_every_usec == 0) {
		printf("t=%lld\n", (long long)t);
	}
	if (misbehave && opt.exit_at_usec >= 0 && t >= opt.exit_at_usec) {
		printf("exiting with code %d at t=%lld\n", opt.exit_code, (long long)t);
		exit(opt.exit_code);
	}
	if (misbehave && opt.die_at_usec >= 0 && t >= opt.die_at_usec) {
		printf("dying at t=%lld\n", (long long)t);
		raise(SIGKILL);
	}
	return 0;
}

static int on_reset(hako_asset_context_t *ctx)
{
	(void)ctx;
	printf("reset\n");
	return 0;
}

static int run_asset(void)
{
	hako_asset_callbacks_t cb = {.on_simulation_step = on_step, .on_reset = on_reset};
	int r = hako_asset_register(opt.asset, NULL, &cb, opt.delta_usec, HAKO_ASSET_MODEL_PLANT);
	if (r != 0) {
		const char *msg;
		hako_asset_last_error(&msg);
		fprintf(stderr, "cannot register: %s\n", msg);
		return 1;
	}
	printf("registered asset=%s\n", opt.asset);
	do {
		steps = 0;
		r = hako_asset_start();
		if (r != EINTR) {
			const char *msg;
			hako_asset_last_error(&msg);
			fprintf(stderr, "hako_asset_start: %s\n", msg);
			return 1;
		}
		printf("done asset=%s time=%lld steps=%llu\n", opt.asset, last_time, steps);
	} while (opt.loop);
	hako_asset_unregister();
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"asset", required_argument, NULL, 'a'},
	                                         {"delta-usec", required_argument, NULL, 'd'},
	                                         {"loop", no_argument, NULL, 'l'},
	                                         {"exit-at-usec", required_argument, NULL, 'x'},
	                                         {"exit-code", required_argument, NULL, 'c'},
	                                         {"exit-now", no_argument, NULL, 'n'},
	                                         {"die-at-usec", required_argument, NULL, 'k'},
	                                         {"once", required_argument, NULL, 'o'},
	                                         {"say", required_argument, NULL, 's'},
	                                         {"say-delay-ms", required_argument, NULL, 'S'},
	                                         {"sleep-ms", required_argument, NULL, 'w'},
	                                         {"ignore-term", no_argument, NULL, 'i'},
	                                         {"print-every-usec", required_argument, NULL, 'p'},
	                                         {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'a': opt.asset = optarg; break;
		case 'd': opt.delta_usec = atoll(optarg); break;
		case 'l': opt.loop = 1; break;
		case 'x': opt.exit_at_usec = atoll(optarg); break;
		case 'c': opt.exit_code = atoi(optarg); break;
		case 'n': opt.exit_now = 1; break;
		case 'k': opt.die_at_usec = atoll(optarg); break;
		case 'o': opt.once = optarg; break;
		case 's': opt.say = optarg; break;
		case 'S': opt.say_delay_ms = atoll(optarg); break;
		case 'w': opt.sleep_ms = atoll(optarg); break;
		case 'i': opt.ignore_term = 1; break;
		case 'p': opt.print_every_usec = atoll(optarg); break;
		default: fprintf(stderr, "launch-test-asset: bad option\n"); return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("pid=%d\n", (int)getpid());
	if (opt.ignore_term) {
		signal(SIGTERM, SIG_IGN);
	}
	if (opt.once != NULL) {
		int fd = open(opt.once, O_WRONLY | O_CREAT | O_EXCL, 0644);
		misbehave = fd >= 0; /* the first run creates it and misbehaves */
		if (fd >= 0) {
			close(fd);
		}
	}
	if (opt.say != NULL) {
		sleep_ms(opt.say_delay_ms);
		printf("%s\n", opt.say);
	}
	if (opt.exit_now && misbehave) {
		printf("exiting with code %d\n", opt.exit_code);
		return opt.exit_code;
	}
	if (opt.asset != NULL) {
		return run_asset();
	}
	if (opt.sleep_ms >= 0) {
		sleep_ms(opt.sleep_ms);
		printf("slept %lld ms\n", opt.sleep_ms);
		return 0;
	}
	for (;;) {
		pause();
	}
}
