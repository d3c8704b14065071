/* A federation file's run (launch_federation.h): every node is a hako-launch of its own, on its
 * launch file and in its own domain, so that a node runs here exactly as it would alone on its
 * machine. This process only starts them, echoes their output as "[node] line", stops them
 * together, and says how each ended. The federation itself starts and stops through the
 * conductors: the server node starts it once every client joined, and its stop reaches every
 * client. */
#define _GNU_SOURCE
#include "launch_federation.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "launch_console.h"
#include "launch_supervise.h"
#include "hakoi/file.h"

static hakoi_sup_t S = {.sigfd = -1};

static char failure[1024];

static void failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failed(const char *fmt, ...)
{
	if (failure[0] != '\0') {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(failure, sizeof(failure), fmt, ap);
	va_end(ap);
}

static void describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status)) {
		snprintf(buf, len, "exited with code %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
		         strsignal(WTERMSIG(status)));
	} else {
		snprintf(buf, len, "ended with status 0x%x", status);
	}
}

static int running(void)
{
	int n = 0;
	for (int i = 0; i < S.nprocs; i++) {
		n += hakoi_sup_running(&S.procs[i]);
	}
	return n;
}

/* A node that ends before the others: fine when it ended well (the federation stopped), a
 * failure of the federation otherwise, unless it was told to stop. */
static void handle_exits(void)
{
	for (int i = 0; i < S.nprocs; i++) {
		hakoi_proc_t *p = &S.procs[i];
		if (!p->exit_pending) {
			continue;
		}
		p->exit_pending = 0;
		char how[128];
		describe(p->status, how, sizeof(how));
		hakoi_say("node %s (pid %d) %s", p->cfg->name, (int)p->pgid, how);
		if (!(WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0) && !p->signalled &&
		    S.interrupted == 0) {
			/* its own last line says why */
			const char *last = p->last;
			if (strncmp(last, "hako-launch: ", 13) == 0) {
				last += 13;
			}
			if (strncmp(last, "FAILED: ", 8) == 0) {
				last += 8;
			}
			failed("node \"%s\" %s%s%s%s", p->cfg->name, how,
			       last[0] != '\0' ? " (" : "", last, last[0] != '\0' ? ")" : "");
		}
	}
}

/* Every node still running gets sig; SIGKILL for those left after grace_ms (or at the third
 * stop signal). Each node stops its own processes first, so it is given time. */
static void stop_nodes(int sig, long long grace_ms)
{
	for (int i = 0; i < S.nprocs; i++) {
		hakoi_proc_t *p = &S.procs[i];
		if (hakoi_sup_running(p) && !p->signalled) {
			hakoi_say("stopping node %s (pid %d): SIG%s", p->cfg->name, (int)p->pid,
			          sigabbrev_np(sig));
			hakoi_sup_signal(p, sig);
		}
	}
	hako_time_t deadline = hako_now_usec() + grace_ms * 1000;
	while (running() > 0 && hako_now_usec() < deadline && S.signals < 3) {
		hakoi_sup_pump(&S, 50000);
		handle_exits();
	}
	hakoi_sup_terminate(&S, 0);
	handle_exits();
}

/* Every node runs here: the federation's keys are this machine's to make. A node's pair that
 * exists is kept (hako_conductor_keygen), the public keys are written again. */
static void make_keys(const hakoi_launch_config_t *cfg)
{
	const hako_conductor_config_t *cfgs[HAKO_CONDUCTOR_MAX_CLIENTS + 1];
	size_t n = 0;
	for (size_t i = 0; i < cfg->node_count && n < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		const hako_conductor_config_t *c = cfg->nodes[i].cfg->federation;
		if (c->auth == HAKO_CONDUCTOR_AUTH_CURVE) {
			cfgs[n++] = c;
		}
	}
	if (n == 0) {
		return;
	}
	hako_error_t err;
	int created = 0;
	if (hako_conductor_keygen(cfgs, n, &created, &err) != 0) {
		char line[1600];
		failed("the federation's keys: %s", hako_error_format(&err, line, sizeof(line)));
	} else if (created > 0) {
		hakoi_say("made %d key pair(s) for the control plane (each node's keys folder, "
		          "mode 0600)",
		          created);
	}
}

int hakoi_launch_run_federation(hakoi_launch_config_t *cfg)
{
	char why[1024];
	int rc = 0;
	failure[0] = '\0';
	if (hakoi_sup_open(&S, cfg, why, sizeof(why)) != 0) {
		hakoi_complain("%s", why);
		hakoi_sup_close(&S);
		hakoi_launch_free(cfg);
		return HAKOI_LAUNCH_EXIT_FAILED;
	}
	if (hakoi_mkdirs(cfg->log_dir_abs, 0755) != 0) {
		failed("cannot create the log folder %s: %s", cfg->log_dir, strerror(errno));
	} else {
		char own[PATH_MAX];
		snprintf(own, sizeof(own), "%s/hako-launch.log", cfg->log_dir_abs);
		hakoi_console_open_log(own);
		hakoi_say(
		    "federation of %zu nodes, each its own hako-launch and domain; logs in %s",
		    cfg->node_count, cfg->log_dir);
	}
	if (failure[0] == '\0') {
		make_keys(cfg);
	}
	for (int i = 0; i < S.nprocs && failure[0] == '\0' && S.interrupted == 0; i++) {
		hakoi_proc_t *p = &S.procs[i];
		const hakoi_launch_node_t *n = &cfg->nodes[i];
		if (hakoi_sup_spawn(&S, p, why, sizeof(why)) != 0) {
			failed("%s", why);
			break;
		}
		hakoi_say("started node %s (pid %d, %s): %s, domain '%s'", p->cfg->name,
		          (int)p->pid,
		          n->cfg->federation->role == HAKO_CONDUCTOR_SERVER ? "server" : "client",
		          n->file, n->domain);
	}
	/* The nodes run the federation; this only watches. */
	while (running() > 0 && failure[0] == '\0' && S.interrupted == 0) {
		hakoi_sup_pump(&S, 200000);
		handle_exits();
	}
	if (running() > 0) {
		stop_nodes(S.interrupted != 0 ? S.interrupted : SIGTERM, cfg->grace_ms);
	}
	hakoi_sup_sweep(&S);
	/* How each node ended, in the nodes' order: its own last line. */
	for (int i = 0; i < S.nprocs; i++) {
		const hakoi_proc_t *p = &S.procs[i];
		if (p->started) {
			const char *last = p->last;
			if (strncmp(last, "hako-launch: ", 13) == 0) {
				last += 13;
			}
			hakoi_say_always("node %s: %s", p->cfg->name,
			                 last[0] != '\0' ? last : "(no output)");
		}
	}
	if (S.interrupted != 0 && failure[0] == '\0') {
		hakoi_complain("stopped by SIG%s; every node has ended",
		               sigabbrev_np(S.interrupted));
		rc = 128 + S.interrupted;
	} else if (failure[0] != '\0') {
		hakoi_say("logs in %s", cfg->log_dir);
		hakoi_complain("FAILED: %s", failure);
		rc = HAKOI_LAUNCH_EXIT_FAILED;
	} else {
		hakoi_say_always("done: every node of the federation ended well; logs in %s",
		                 cfg->log_dir);
	}
	hakoi_console_close_log();
	hakoi_sup_close(&S);
	hakoi_launch_free(cfg);
	return rc;
}
