/* hello-run: the whole hello world in one command (what `make run` runs).
 *
 * It creates a domain and runs its conductor in this process, starts hello-writer and
 * hello-reader (found next to this executable) as two asset processes, waits until both
 * registered, runs the simulation for 1 s of simulated time, stops and resets it, and checks
 * that the reader saw the writer's counter. Exit status 0 only if all of that went right.
 *
 * The assets use the Hakoniwa-compatible API; hello-run, the conductor's side, uses the handle
 * API of hako/domain.h. A stop time set in the domain ends the run at exactly the requested
 * simulated time: the world clock halts there and the master stops the run.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hako/domain.h"
#include "hello.h"

#define WAIT_USEC  5000000 /* registration, each transition, the children's exit */
#define SLICE_USEC 100000

struct child {
	const char *name; /* executable, next to hello-run */
	const char *asset;
	pid_t pid;
	int status;
	int done; /* reaped */
};

static struct child children[] = {
    {"hello-writer", "writer", 0, 0, 0},
    {"hello-reader", "reader", 0, 0, 0},
};
#define NCHILDREN ((int)(sizeof(children) / sizeof(children[0])))

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fputs("hello-run: FAILED: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void sleep_usec(long usec)
{
	struct timespec ts = {usec / 1000000, (usec % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status)) {
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
		         strsignal(WTERMSIG(status)));
	} else {
		snprintf(buf, len, "ended with status 0x%x", status);
	}
}

/* Reap the children that exited. Returns the first one that exited during this call, or
 * NULL. */
static struct child *reap(void)
{
	struct child *first = NULL;
	for (int i = 0; i < NCHILDREN; i++) {
		struct child *c = &children[i];
		if (c->pid > 0 && !c->done && waitpid(c->pid, &c->status, WNOHANG) == c->pid) {
			c->done = 1;
			if (first == NULL) {
				first = c;
			}
		}
	}
	return first;
}

static int child_failed(const struct child *c, const char *when)
{
	char how[96];
	describe_status(c->status, how, sizeof(how));
	fail("%s %s %s (its output is above)", c->name, how, when);
	return 1;
}

static void kill_children(void)
{
	for (int i = 0; i < NCHILDREN; i++) {
		if (children[i].pid > 0 && !children[i].done) {
			kill(children[i].pid, SIGTERM);
		}
	}
	for (long waited = 0; waited < 1000000; waited += 10000) {
		reap();
		int left = 0;
		for (int i = 0; i < NCHILDREN; i++) {
			left += children[i].pid > 0 && !children[i].done;
		}
		if (left == 0) {
			return;
		}
		sleep_usec(10000);
	}
	for (int i = 0; i < NCHILDREN; i++) {
		if (children[i].pid > 0 && !children[i].done) {
			kill(children[i].pid, SIGKILL);
			waitpid(children[i].pid, &children[i].status, 0);
			children[i].done = 1;
		}
	}
}

static pid_t spawn(const char *dir, const char *exe, const char *pdudef, int report_fd)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", dir, exe) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid != 0) {
		return pid;
	}
	/* The assets must not outlive hello-run, even if it is killed with SIGKILL. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent) {
		_exit(1);
	}
	int flags = fcntl(report_fd, F_GETFD);
	fcntl(report_fd, F_SETFD, flags & ~FD_CLOEXEC);
	char fd[16];
	snprintf(fd, sizeof(fd), "%d", report_fd);
	setenv("HELLO_REPORT_FD", fd, 1);
	execl(path, path, pdudef, (char *)NULL);
	fprintf(stderr, "hello-run: cannot run %s: %s\n", path, strerror(errno));
	_exit(127);
}

/* Wait for state in slices, so that Ctrl-C and a dying child are noticed. */
static int wait_state(hako_domain_t *dom, int state, const char *what)
{
	hako_time_t deadline = hako_now_usec() + WAIT_USEC;
	for (;;) {
		int r = hako_domain_wait_state(dom, state, SLICE_USEC);
		if (r == 0) {
			return 0;
		}
		hako_domain_info_t info;
		hako_domain_get_info(dom, &info);
		if (info.state == HAKO_STATE_ERROR) {
			fail("%s: the domain went to error: %s", what, info.error_reason);
			return 1;
		}
		if (interrupted) {
			return 1;
		}
		if (hako_now_usec() >= deadline) {
			fail("%s: still %s after %.1f s", what, hako_state_name(info.state),
			     WAIT_USEC / 1e6);
			return 1;
		}
	}
}

static int wait_registered(hako_domain_t *dom)
{
	hako_time_t deadline = hako_now_usec() + WAIT_USEC;
	for (;;) {
		hako_asset_info_t a[8];
		int n = 0, found[NCHILDREN] = {0}, missing = 0;
		hako_domain_list_assets(dom, a, 8, &n);
		for (int i = 0; i < NCHILDREN; i++) {
			for (int j = 0; j < n && j < 8; j++) {
				found[i] |= strcmp(a[j].name, children[i].asset) == 0;
			}
			missing += !found[i];
		}
		if (missing == 0) {
			return 0;
		}
		if (interrupted) {
			return 1;
		}
		struct child *c = reap();
		if (c != NULL) {
			return child_failed(c, "before it registered");
		}
		if (hako_now_usec() >= deadline) {
			char names[128] = "";
			for (int i = 0; i < NCHILDREN; i++) {
				if (!found[i]) {
					snprintf(names + strlen(names),
					         sizeof(names) - strlen(names), "%s'%s' (%s)",
					         names[0] != '\0' ? ", " : "", children[i].asset,
					         children[i].name);
				}
			}
			fail("timed out after %.1f s waiting for the assets to register; missing: "
			     "%s",
			     WAIT_USEC / 1e6, names);
			return 1;
		}
		sleep_usec(10000);
	}
}

/* Wait until the master stopped the run at the stop time; 0, or 1 after a failure or Ctrl-C.
 * The world halts at the stop time by itself, so this may poll at leisure. */
static int run_until_stopped(hako_domain_t *dom, hako_time_t *wall_end)
{
	for (;;) {
		if (interrupted) {
			return 1;
		}
		struct child *c = reap();
		if (c != NULL) {
			return child_failed(c, "while the simulation ran");
		}
		int r = hako_domain_wait_state(dom, HAKO_STATE_STOPPED, SLICE_USEC);
		if (r == 0) {
			*wall_end = hako_now_usec();
			return 0;
		}
		if (r != HAKO_ETIMEDOUT) {
			hako_domain_info_t info;
			hako_domain_get_info(dom, &info);
			fail("the simulation ended early: the domain is %s%s%s",
			     hako_state_name(info.state), info.error_reason[0] != '\0' ? ": " : "",
			     info.error_reason);
			return 1;
		}
	}
}

static int wait_children(void)
{
	hako_time_t deadline = hako_now_usec() + WAIT_USEC;
	for (;;) {
		if (interrupted) {
			return 1;
		}
		reap();
		int left = 0;
		for (int i = 0; i < NCHILDREN; i++) {
			left += !children[i].done;
		}
		if (left == 0) {
			break;
		}
		if (hako_now_usec() >= deadline) {
			for (int i = 0; i < NCHILDREN; i++) {
				if (!children[i].done) {
					fail("%s did not exit within %.1f s after the reset",
					     children[i].name, WAIT_USEC / 1e6);
				}
			}
			return 1;
		}
		sleep_usec(10000);
	}
	for (int i = 0; i < NCHILDREN; i++) {
		if (!WIFEXITED(children[i].status) || WEXITSTATUS(children[i].status) != 0) {
			return child_failed(&children[i], "at the end");
		}
	}
	return 0;
}

struct results {
	int have_writer, have_reader;
	uint64_t w_steps, w_last, w_errors;
	uint64_t r_steps, r_last, r_new, r_errors;
};

static void read_reports(int fd, struct results *res)
{
	char buf[1024];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0) {
		return;
	}
	buf[n] = '\0';
	for (char *line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		if (sscanf(line, "writer steps=%" SCNu64 " last=%" SCNu64 " errors=%" SCNu64,
		           &res->w_steps, &res->w_last, &res->w_errors) == 3) {
			res->have_writer = 1;
		} else if (sscanf(line,
		                  "reader steps=%" SCNu64 " last=%" SCNu64 " new=%" SCNu64
		                  " errors=%" SCNu64,
		                  &res->r_steps, &res->r_last, &res->r_new, &res->r_errors) == 4) {
			res->have_reader = 1;
		}
	}
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: hello-run [--duration-usec N] [--real-time-factor F] [--pdudef FILE]\n\n"
	        "Run the hello world: a conductor in this process, the assets hello-writer and\n"
	        "hello-reader as processes, 1 s of simulated time, then stop, reset and check.\n\n"
	        "options:\n"
	        "  --duration-usec N     simulated time to run (default 1000000 = 1 s)\n"
	        "  --real-time-factor F  0 = as fast as possible (default), 1 = wall-clock pace\n"
	        "  --pdudef FILE         pdudef for the assets (default: hello_pdudef.json next\n"
	        "                        to this program, else the installed one)\n"
	        "  -h, --help            show this help\n\n"
	        "The domain is $HAKO_DOMAIN, or hello-<pid> when it is not set.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"duration-usec", required_argument, NULL, 'D'},
	                                         {"real-time-factor", required_argument, NULL, 'f'},
	                                         {"pdudef", required_argument, NULL, 'p'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	hako_master_config_t mc = {HELLO_DELTA_USEC, HELLO_DELTA_USEC, 0.0};
	hako_time_t duration = 1000000;
	const char *pdudef = NULL;
	int c;
	char *end;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'D':
			duration = strtoll(optarg, &end, 10);
			if (*end != '\0' || end == optarg || duration < HELLO_DELTA_USEC) {
				fprintf(stderr,
				        "hello-run: --duration-usec: '%s' is not an integer "
				        ">= %d\n",
				        optarg, HELLO_DELTA_USEC);
				return 2;
			}
			break;
		case 'f':
			mc.real_time_factor = strtod(optarg, &end);
			if (*end != '\0' || end == optarg || !(mc.real_time_factor >= 0.0)) {
				fprintf(stderr,
				        "hello-run: --real-time-factor: '%s' is not a number "
				        ">= 0\n",
				        optarg);
				return 2;
			}
			break;
		case 'p': pdudef = optarg; break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "hello-run: %s '%s'\n",
			        c == ':' ? "missing value for" : "unknown option",
			        argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hello-run: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* A unique domain unless the user chose one: runs in parallel never collide. */
	char domain[64];
	const char *env = getenv("HAKO_DOMAIN");
	if (env != NULL && env[0] != '\0') {
		snprintf(domain, sizeof(domain), "%s", env);
	} else {
		snprintf(domain, sizeof(domain), "hello-%d", (int)getpid());
		setenv("HAKO_DOMAIN", domain, 1); /* the assets inherit it */
	}

	char dir[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0) {
		fprintf(stderr, "hello-run: cannot find my own executable: %s\n", strerror(errno));
		return 1;
	}
	dir[n] = '\0';
	*strrchr(dir, '/') = '\0';
	if (pdudef == NULL) {
		pdudef = hello_pdudef_path(1, argv);
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: sleeps end early */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	hako_domain_t *dom = NULL;
	hako_master_t *master = NULL;
	int report[2] = {-1, -1};
	int rc = 1;
	int r = hako_domain_create(domain, NULL, &dom);
	if (r == HAKO_EBUSY) {
		fail("domain '%s' (from HAKO_DOMAIN) has a conductor already; unset HAKO_DOMAIN "
		     "to run in a fresh domain hello-<pid>",
		     domain);
		return 1;
	}
	if (r != 0) {
		fail("cannot create domain '%s': %s", domain, hako_strerror(r));
		return 1;
	}
	r = hako_master_start(dom, &mc, &master);
	if (r != 0) {
		fail("cannot start the conductor of domain '%s': %s", domain, hako_strerror(r));
		goto out;
	}
	printf("hello-run: domain '%s', conductor in this process (pid %d): delta 1 ms, Dmax 1 ms, "
	       "real-time factor %g%s\n",
	       domain, (int)getpid(), mc.real_time_factor,
	       mc.real_time_factor == 0.0 ? " (as fast as possible)" : "");

	if (pipe2(report, O_CLOEXEC) != 0 || fcntl(report[0], F_SETFL, O_NONBLOCK) != 0) {
		fail("cannot create a pipe: %s", strerror(errno));
		goto out;
	}
	for (int i = 0; i < NCHILDREN; i++) {
		children[i].pid = spawn(dir, children[i].name, pdudef, report[1]);
		if (children[i].pid < 0) {
			fail("cannot fork %s: %s", children[i].name, strerror(errno));
			goto out;
		}
	}
	close(report[1]);
	report[1] = -1;

	if (wait_registered(dom) != 0) {
		goto out;
	}
	if ((r = hako_domain_set_stop_time(dom, duration)) != 0) {
		fail("cannot set the stop time: %s", hako_strerror(r));
		goto out;
	}
	printf("hello-run: 'writer' (pid %d) and 'reader' (pid %d) registered; running %.3f s of "
	       "simulated time\n",
	       (int)children[0].pid, (int)children[1].pid, duration / 1e6);
	hako_time_t wall0 = hako_now_usec();
	if ((r = hako_domain_start(dom)) != 0) {
		fail("cannot start the simulation: %s", hako_strerror(r));
		goto out;
	}
	hako_time_t wall_end = 0;
	if (run_until_stopped(dom, &wall_end) != 0) {
		goto out;
	}
	hako_time_t wall = wall_end - wall0;
	hako_domain_info_t info;
	hako_domain_get_info(dom, &info);
	/* What the writer published last, as a third opinion. */
	uint64_t published = 0;
	hako_channel_t *ch;
	uint8_t pdu[HELLO_PDU_SIZE];
	if (hako_channel_lookup(dom, HELLO_ROBOT, HELLO_CHANNEL, &ch) == 0 &&
	    hako_channel_read(ch, pdu, sizeof(pdu), NULL, NULL) == 0) {
		hello_counter_decode(pdu, &published);
	}
	printf("hello-run: stopped at world time %.3f s; resetting\n", info.world_time / 1e6);
	if ((r = hako_domain_reset(dom)) != 0) {
		fail("cannot reset the simulation: %s", hako_strerror(r));
		goto out;
	}
	if (wait_state(dom, HAKO_STATE_STOPPED, "reset") != 0 || wait_children() != 0) {
		goto out;
	}

	struct results res;
	memset(&res, 0, sizeof(res));
	read_reports(report[0], &res);
	double secs = wall / 1e6;
	printf("\nhello-run: summary (domain '%s')\n", domain);
	printf("  simulated  %.3f s in %" PRIu64 " steps of %g ms\n", info.world_time / 1e6,
	       info.world_steps, mc.delta_usec / 1e3);
	printf("  wall time  %.3f s: %.0f steps/s, %.1fx real time\n", secs,
	       secs > 0 ? (double)info.world_steps / secs : 0.0,
	       secs > 0 ? (double)info.world_time / (double)wall : 0.0);
	if (!res.have_writer || !res.have_reader) {
		fail("no result line from %s", !res.have_writer ? "hello-writer" : "hello-reader");
		goto out;
	}
	printf("  writer     %" PRIu64 " steps, last counter %" PRIu64
	       " (the channel holds %" PRIu64 ")\n",
	       res.w_steps, res.w_last, published);
	printf("  reader     %" PRIu64 " steps, last counter %" PRIu64 ", new data on %" PRIu64
	       " steps\n",
	       res.r_steps, res.r_last, res.r_new);
	/* The world is at most Dmax ahead of either asset, so when the reader reads after its
	 * step k the writer has written k - Dmax/delta .. k + Dmax/delta. */
	uint64_t allowed = (uint64_t)(mc.max_delay_usec / mc.delta_usec);
	uint64_t diff = res.w_last > res.r_last ? res.w_last - res.r_last : res.r_last - res.w_last;
	printf("  check      reader's last counter is %" PRIu64 " from the writer's (lock-step "
	       "allows %" PRIu64 ")\n",
	       diff, allowed);
	if (res.w_steps != info.world_steps || res.r_steps != info.world_steps) {
		fail("the assets did not take every step of the world: writer %" PRIu64
		     ", reader %" PRIu64 ", world %" PRIu64,
		     res.w_steps, res.r_steps, info.world_steps);
	} else if (res.w_last != res.w_steps || res.w_last != published) {
		fail("the writer's last counter %" PRIu64 " is not its step count or what the "
		     "channel holds (%" PRIu64 ")",
		     res.w_last, published);
	} else if (diff > allowed) {
		fail("the reader's last counter %" PRIu64 " is %" PRIu64
		     " away from the writer's %" PRIu64,
		     res.r_last, diff, res.w_last);
	} else if (res.r_new == 0) {
		fail("the reader never saw new data");
	} else {
		printf("hello-run: OK\n");
		rc = 0;
	}
out:
	if (interrupted) {
		fflush(stdout);
		fprintf(stderr, "hello-run: interrupted (%s); stopping the assets\n",
		        strsignal(interrupted));
		rc = 128 + interrupted;
	}
	kill_children();
	hako_master_stop(master);
	hako_domain_close(dom);
	hako_domain_remove(domain);
	if (report[0] >= 0) {
		close(report[0]);
	}
	if (report[1] >= 0) {
		close(report[1]);
	}
	return rc;
}
