/* hako-launch: run a co-simulation described by one JSON file.
 *
 * It creates the domain and runs its conductor in this process, starts the processes in order
 * (waiting for each as the file says), starts the simulation once the awaited assets are
 * registered, shows a status line while it runs, and stops everything together at the stop time,
 * on Ctrl-C or when a process fails: stop, reset (so Hakoniwa-style assets finish their cycle),
 * a grace period, SIGTERM, SIGKILL. Then the "after" processes run. Every process's output goes
 * to <log_dir>/<name>.log and, line by line, to the terminal as "[name] line".
 *
 * One thread does it all around poll(): the children's output pipes and a signalfd (SIGINT,
 * SIGTERM, SIGHUP, SIGCHLD); the master of the core runs in its own thread.
 *
 * Exit status: 0 all went well, 1 a process or the simulation failed (the last line says which
 * and how), 2 usage error or invalid launch file, 128 + N stopped by signal N.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hako/domain.h"
#include "hako/error.h"
#include "hako/log.h"
#include "launch_config.h"

#ifndef HAKO_VERSION
#define HAKO_VERSION "unknown"
#endif

#define EXIT_FAILED        1
#define EXIT_USAGE         2
#define LINE_BYTES         4096     /* longer output lines are echoed in pieces */
#define STATE_WAIT_USEC    10000000 /* each transition of the domain */
#define TERM_WAIT_USEC     2000000  /* SIGTERM -> SIGKILL */
#define STATUS_TTY_USEC    200000
#define STATUS_PIPE_USEC   5000000
#define RATE_WINDOW_USEC   1000000
#define BACKOFF_FIRST_USEC 250000
#define BACKOFF_MAX_USEC   4000000
#define SAMPLES            64

extern char **environ;

struct proc {
	const hakoi_launch_proc_t *cfg;
	pid_t pid;  /* of the running instance, 0 when none runs */
	pid_t pgid; /* its process group, kept after it exited: grandchildren may be left */
	int out_fd; /* read end of its stdout+stderr, -1 when closed */
	int log_fd;
	char line[LINE_BYTES];
	size_t line_len;
	int started;      /* ever started */
	int exited;       /* the last instance exited */
	int exit_pending; /* ... and the phase logic has not looked at it yet */
	int status;       /* its wait status */
	int signalled;    /* we sent it SIGTERM or SIGKILL */
	int restarts;
	hako_time_t started_at;
	hako_time_t restart_at; /* 0 = no restart pending */
	int seen_log;           /* its wait_for log text was seen since it started */
	int owns_asset;         /* an asset of the domain had its pid */
	int color;
};

enum exit_mode {
	MODE_START,    /* before the simulation: failures are fatal unless restarted */
	MODE_RUN,      /* while it runs */
	MODE_RESTART,  /* while the domain is being restarted for a process */
	MODE_SHUTDOWN, /* stopping: nothing is restarted */
};

struct launcher {
	hakoi_launch_config_t *cfg;
	struct proc *procs;
	int nprocs;
	hako_domain_t *dom;
	hako_master_t *master;
	hako_asset_info_t *assets;
	int asset_cap;
	int sigfd;
	int own_log;
	int tty;
	int color;
	int quiet;
	int no_echo;
	int status_on;           /* the simulation runs: show the status line */
	int status_shown;        /* a status line is on screen (tty) */
	hako_time_t next_status; /* next sample */
	hako_time_t next_print;  /* next status line when not on a terminal */
	hako_time_t sample_wall[SAMPLES];
	hako_time_t sample_world[SAMPLES];
	int samples;
	int interrupted; /* the first stop signal */
	int signals;     /* how many came */
	char failure[1024];
	hako_time_t wall0; /* simulation start */
	hako_time_t wall_end;
	hako_time_t world_end;
	int restarts_of_domain;
};

static struct launcher L = {.sigfd = -1, .own_log = -1};

/* ---- output ---- */

static void own_log(const char *text)
{
	if (L.own_log >= 0) {
		size_t n = strlen(text);
		if (write(L.own_log, text, n) != (ssize_t)n) {
			/* the log is a convenience; the terminal has the message */
		}
	}
}

static void status_clear(void)
{
	if (L.status_shown) {
		fputs("\r\033[K", stdout);
		L.status_shown = 0;
	}
}

static void vline(FILE *out, const char *prefix, const char *fmt, va_list ap)
{
	char text[2048];
	int n = snprintf(text, sizeof(text), "hako-launch: %s", prefix);
	vsnprintf(text + n, sizeof(text) - (size_t)n, fmt, ap);
	size_t len = strlen(text);
	if (len + 1 < sizeof(text)) {
		text[len++] = '\n';
		text[len] = '\0';
	}
	status_clear();
	if (out == stderr) {
		fflush(stdout);
	}
	fputs(text, out);
	fflush(out);
	own_log(text);
}

/* A progress message (not with --quiet). */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (L.quiet) {
		char text[2048];
		vsnprintf(text, sizeof(text), fmt, ap);
		char line[2100];
		snprintf(line, sizeof(line), "hako-launch: %s\n", text);
		own_log(line);
	} else {
		vline(stdout, "", fmt, ap);
	}
	va_end(ap);
}

static void complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void complain(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vline(stderr, "", fmt, ap);
	va_end(ap);
}

/* Record why the launch failed; the first reason is the one reported at the end. */
static void failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failed(const char *fmt, ...)
{
	if (L.failure[0] != '\0') {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(L.failure, sizeof(L.failure), fmt, ap);
	va_end(ap);
}

static int failing(void)
{
	return L.failure[0] != '\0' || L.interrupted != 0;
}

/* World time in seconds, at least 3 decimals and as many as the microseconds need. */
static const char *fmt_time(hako_time_t usec, char *buf, size_t len)
{
	snprintf(buf, len, "%lld.%06lld", (long long)(usec / 1000000), (long long)(usec % 1000000));
	size_t keep = (size_t)(strchr(buf, '.') - buf) + 4; /* 3 decimals */
	size_t n = strlen(buf);
	while (n > keep && buf[n - 1] == '0') {
		buf[--n] = '\0';
	}
	return buf;
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

static int exited_ok(int status)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---- the status line ---- */

static int list_assets(int *count)
{
	*count = 0;
	if (L.dom == NULL) {
		return -1;
	}
	int n = 0;
	if (hako_domain_list_assets(L.dom, L.assets, L.asset_cap, &n) != 0) {
		return -1;
	}
	*count = n < L.asset_cap ? n : L.asset_cap;
	return 0;
}

static struct proc *proc_of_pid(pid_t pid)
{
	for (int i = 0; i < L.nprocs; i++) {
		if (L.procs[i].pgid == pid && pid > 0) {
			return &L.procs[i];
		}
	}
	return NULL;
}

/* Which process owns which asset: the pid an asset registered with is one of ours. */
static void note_owners(int n)
{
	for (int i = 0; i < n; i++) {
		struct proc *p = proc_of_pid(L.assets[i].pid);
		if (p != NULL) {
			p->owns_asset = 1;
		}
	}
}

static double measured_factor(hako_time_t wall, hako_time_t world)
{
	if (L.samples == SAMPLES) {
		memmove(L.sample_wall, L.sample_wall + 1, sizeof(L.sample_wall[0]) * (SAMPLES - 1));
		memmove(L.sample_world, L.sample_world + 1,
		        sizeof(L.sample_world[0]) * (SAMPLES - 1));
		L.samples--;
	}
	L.sample_wall[L.samples] = wall;
	L.sample_world[L.samples] = world;
	L.samples++;
	int first = 0;
	while (first + 1 < L.samples && wall - L.sample_wall[first + 1] >= RATE_WINDOW_USEC) {
		first++;
	}
	if (wall - L.sample_wall[first] <= 0 || world < L.sample_world[first]) {
		return -1.0;
	}
	return (double)(world - L.sample_world[first]) / (double)(wall - L.sample_wall[first]);
}

/* Every STATUS_TTY_USEC: note who owns which asset, sample the clock, and show the status
 * line (rewritten in place on a terminal, else one line every STATUS_PIPE_USEC). */
static void status_update(void)
{
	hako_time_t now = hako_now_usec();
	if (L.dom == NULL || now < L.next_status) {
		return;
	}
	L.next_status = now + STATUS_TTY_USEC;
	int n = 0;
	list_assets(&n);
	note_owners(n);
	if (!L.status_on) {
		return;
	}
	hako_domain_info_t info;
	hako_domain_get_info(L.dom, &info);
	double f = measured_factor(now, info.world_time);
	if (L.quiet || (!L.tty && now < L.next_print)) {
		return;
	}
	L.next_print = now + STATUS_PIPE_USEC;
	int alive = 0;
	for (int i = 0; i < n; i++) {
		alive += L.assets[i].alive;
	}
	char t[48], rate[32] = "-", stop[64] = "";
	if (f >= 0.0) {
		snprintf(rate, sizeof(rate), "%.2fx", f);
	}
	if (L.cfg->stop_at_usec > 0) {
		char s[48];
		snprintf(stop, sizeof(stop), " / %s s",
		         fmt_time(L.cfg->stop_at_usec, s, sizeof(s)));
	}
	char text[256];
	snprintf(text, sizeof(text), "%s | world %s s%s | %s real time | assets: %d, %d alive",
	         hako_state_name(info.state), fmt_time(info.world_time, t, sizeof(t)), stop, rate,
	         (int)info.asset_count, alive);
	if (L.tty) {
		struct winsize ws;
		if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 &&
		    ws.ws_col <= sizeof(text)) {
			text[ws.ws_col - 1] = '\0'; /* a wrapped line could not be rewritten */
		}
		printf("\r\033[K%s%s%s", L.color ? "\033[1m" : "", text, L.color ? "\033[0m" : "");
		L.status_shown = 1;
	} else {
		printf("hako-launch: %s\n", text);
	}
	fflush(stdout);
}

static void status_stop(void)
{
	status_clear();
	L.status_on = 0;
	fflush(stdout);
}

/* ---- process output ---- */

static void echo_line(struct proc *p, const char *text, size_t len)
{
	if (!p->cfg->echo || L.no_echo) {
		return;
	}
	status_clear();
	if (L.color) {
		printf("\033[%dm[%s]\033[0m %.*s\n", p->color, p->cfg->name, (int)len, text);
	} else {
		printf("[%s] %.*s\n", p->cfg->name, (int)len, text);
	}
	fflush(stdout); /* a pipe (| tee, a log collector) sees each line as it comes */
}

static void check_log_wait(struct proc *p)
{
	if (p->cfg->wait_for == HAKOI_LAUNCH_WAIT_LOG && !p->seen_log) {
		p->line[p->line_len] = '\0';
		if (strstr(p->line, p->cfg->wait_what) != NULL) {
			p->seen_log = 1;
		}
	}
}

static void emit_line(struct proc *p)
{
	size_t len = p->line_len;
	check_log_wait(p);
	if (len > 0 && p->line[len - 1] == '\r') {
		len--;
	}
	echo_line(p, p->line, len);
	p->line_len = 0;
}

static void feed(struct proc *p, const char *data, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (data[i] == '\n') {
			emit_line(p);
			continue;
		}
		if (p->line_len == LINE_BYTES - 1) {
			emit_line(p);
		}
		p->line[p->line_len++] = data[i];
	}
	check_log_wait(p); /* a prompt without a newline counts too */
}

static void write_all(int fd, const char *data, size_t n)
{
	while (n > 0 && fd >= 0) {
		ssize_t w = write(fd, data, n);
		if (w < 0 && errno == EINTR) {
			continue;
		}
		if (w <= 0) {
			return;
		}
		data += w;
		n -= (size_t)w;
	}
}

/* Read what the pipe holds now; at its end, close it and echo the last partial line. */
static void drain(struct proc *p)
{
	char buf[65536];
	while (p->out_fd >= 0) {
		ssize_t n = read(p->out_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0 && errno == EAGAIN) {
			return;
		}
		if (n <= 0) {
			close(p->out_fd);
			p->out_fd = -1;
			if (p->line_len > 0) {
				emit_line(p);
			}
			return;
		}
		write_all(p->log_fd, buf, (size_t)n);
		feed(p, buf, (size_t)n);
	}
}

/* ---- children ---- */

static void reap_all(void)
{
	for (;;) {
		int st = 0;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0) {
			return;
		}
		/* Orphaned grandchildren come here too (we are their subreaper): nothing to do. */
		for (int i = 0; i < L.nprocs; i++) {
			struct proc *p = &L.procs[i];
			if (p->pid == pid) {
				drain(p);
				p->pid = 0;
				p->exited = 1;
				p->exit_pending = 1;
				p->status = st;
			}
		}
	}
}

static int running(const struct proc *p)
{
	return p->pid > 0;
}

static void on_stop_signal(int sig)
{
	L.signals++;
	if (L.interrupted == 0) {
		L.interrupted = sig;
		say("SIG%s: stopping everything (again to hurry)", sigabbrev_np(sig));
	} else if (L.signals == 2) {
		say("SIG%s again: hurrying (SIGTERM now, once more for SIGKILL)",
		    sigabbrev_np(sig));
	}
}

/* Wait up to timeout_usec for output, signals and exits, and handle them. */
static void pump(hako_time_t timeout_usec)
{
	struct pollfd fds[1 + L.nprocs];
	struct proc *who[1 + L.nprocs];
	int n = 0;
	fds[n] = (struct pollfd){.fd = L.sigfd, .events = POLLIN};
	who[n++] = NULL;
	for (int i = 0; i < L.nprocs; i++) {
		if (L.procs[i].out_fd >= 0) {
			fds[n] = (struct pollfd){.fd = L.procs[i].out_fd, .events = POLLIN};
			who[n++] = &L.procs[i];
		}
	}
	hako_time_t now = hako_now_usec();
	if (L.status_on && L.next_status - now < timeout_usec) {
		timeout_usec = L.next_status > now ? L.next_status - now : 0;
	}
	int r = poll(fds, (nfds_t)n, (int)((timeout_usec + 999) / 1000));
	if (r > 0 && (fds[0].revents & POLLIN)) {
		struct signalfd_siginfo si;
		while (read(L.sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo != SIGCHLD) {
				on_stop_signal((int)si.ssi_signo);
			}
		}
	}
	for (int i = 1; r > 0 && i < n; i++) {
		if (fds[i].revents != 0) {
			drain(who[i]);
		}
	}
	reap_all();
	status_update();
}

static int is_reserved(const char *entry)
{
	static const char *const keys[] = {
	    "HAKO_DOMAIN=", "HAKO_LAUNCH_DIR=", "HAKO_LAUNCH_LOG_DIR="};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strncmp(entry, keys[i], strlen(keys[i])) == 0) {
			return 1;
		}
	}
	return 0;
}

static char *env_entry(const char *key, const char *value)
{
	size_t n = strlen(key) + strlen(value) + 2;
	char *s = malloc(n);
	if (s != NULL) {
		snprintf(s, n, "%s=%s", key, value);
	}
	return s;
}

static void free_env(char **env)
{
	for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
		free(env[i]);
	}
	free(env);
}

/* Our environment, minus what the launch sets, plus HAKO_DOMAIN and friends and the process's
 * "env". Built before fork: the child of a threaded process may not allocate. */
static char **build_env(const hakoi_launch_proc_t *pc)
{
	size_t n = 0;
	while (environ[n] != NULL) {
		n++;
	}
	char **env = calloc(n + pc->env_count + 4, sizeof(char *));
	if (env == NULL) {
		return NULL;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int skip = is_reserved(environ[i]);
		for (size_t j = 0; j < pc->env_count && !skip; j++) {
			size_t kl = strlen(pc->env[j].key);
			skip =
			    strncmp(environ[i], pc->env[j].key, kl) == 0 && environ[i][kl] == '=';
		}
		if (!skip && (env[k++] = strdup(environ[i])) == NULL) {
			goto oom;
		}
	}
	if ((env[k++] = env_entry("HAKO_DOMAIN", L.cfg->domain)) == NULL ||
	    (env[k++] = env_entry("HAKO_LAUNCH_DIR", L.cfg->dir)) == NULL ||
	    (env[k++] = env_entry("HAKO_LAUNCH_LOG_DIR", L.cfg->log_dir_abs)) == NULL) {
		goto oom;
	}
	for (size_t j = 0; j < pc->env_count; j++) {
		if ((env[k++] = env_entry(pc->env[j].key, pc->env[j].value)) == NULL) {
			goto oom;
		}
	}
	return env;
oom:
	free_env(env);
	return NULL;
}

static void child_fail(int fd, int err)
{
	if (write(fd, &err, sizeof(err)) != (ssize_t)sizeof(err)) {
		/* the parent sees an exit code 127 without a reason */
	}
	_exit(127);
}

/* Start (or restart) a process. 0, or -1 after recording why. */
static int spawn(struct proc *p)
{
	const hakoi_launch_proc_t *pc = p->cfg;
	int out[2] = {-1, -1}, err[2] = {-1, -1}, devnull = -1;
	char **env = NULL;
	if (p->log_fd < 0) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s.log", L.cfg->log_dir_abs, pc->name);
		p->log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
		if (p->log_fd < 0) {
			failed("process \"%s\": cannot create its log %s: %s", pc->name, path,
			       strerror(errno));
			return -1;
		}
	}
	if (p->started) {
		char mark[128];
		snprintf(mark, sizeof(mark), "---- hako-launch: restart %d of %d ----\n",
		         p->restarts, pc->max_restarts);
		write_all(p->log_fd, mark, strlen(mark));
	}
	if ((env = build_env(pc)) == NULL) {
		failed("out of memory");
		return -1;
	}
	if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
	    (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		failed("process \"%s\": cannot create a pipe: %s", pc->name, strerror(errno));
		goto fail;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		failed("process \"%s\": cannot fork: %s", pc->name, strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		/* Own process group: Ctrl-C at the terminal reaches hako-launch only, which then
		 * stops everything in order; and the group is what gets killed at the end. */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive hako-launch */
		if (getppid() != parent) {
			_exit(1);
		}
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(devnull, 0) < 0 || dup2(out[1], 1) < 0 || dup2(out[1], 2) < 0) {
			child_fail(err[1], errno);
		}
		if (pc->cwd != NULL && chdir(pc->cwd) != 0) {
			child_fail(err[1], errno);
		}
		execve(pc->exe, pc->argv, env);
		child_fail(err[1], errno);
	}
	setpgid(pid, pid); /* also here, so that it holds before we signal the group */
	close(out[1]);
	close(err[1]);
	close(devnull);
	out[1] = err[1] = devnull = -1;
	free_env(env);
	env = NULL;
	int e = 0;
	ssize_t got;
	while ((got = read(err[0], &e, sizeof(e))) < 0 && errno == EINTR) {
	}
	close(err[0]);
	err[0] = -1;
	if (got == (ssize_t)sizeof(e)) {
		waitpid(pid, NULL, 0);
		close(out[0]);
		failed("process \"%s\": cannot run %s%s%s: %s", pc->name, pc->exe,
		       pc->cwd != NULL ? " in " : "", pc->cwd != NULL ? pc->cwd : "", strerror(e));
		return -1;
	}
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	p->out_fd = out[0];
	p->line_len = 0;
	p->pid = pid;
	p->pgid = pid;
	p->started = 1;
	p->started_at = hako_now_usec();
	p->exited = 0;
	p->exit_pending = 0;
	p->signalled = 0;
	p->seen_log = 0;
	p->restart_at = 0;
	return 0;
fail:
	free_env(env);
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0) {
			close(out[i]);
		}
		if (err[i] >= 0) {
			close(err[i]);
		}
	}
	if (devnull >= 0) {
		close(devnull);
	}
	return -1;
}

static void signal_group(struct proc *p, int sig)
{
	if (p->pgid > 0) {
		kill(-p->pgid, sig);
		p->signalled = 1;
	}
}

/* SIGTERM the groups of the processes still running, then SIGKILL after TERM_WAIT_USEC (or at
 * the third Ctrl-C), and reap them. */
static void terminate(int only_after)
{
	int left = 0;
	for (int i = 0; i < L.nprocs; i++) {
		struct proc *p = &L.procs[i];
		if (running(p) && (p->cfg->phase == HAKOI_LAUNCH_PHASE_AFTER) == only_after) {
			if (!p->signalled) {
				say("%s (pid %d) is still running: SIGTERM", p->cfg->name,
				    (int)p->pid);
				signal_group(p, SIGTERM);
			}
			left++;
		}
	}
	hako_time_t deadline = hako_now_usec() + TERM_WAIT_USEC;
	while (left > 0 && hako_now_usec() < deadline && L.signals < 3) {
		pump(20000);
		left = 0;
		for (int i = 0; i < L.nprocs; i++) {
			left += running(&L.procs[i]);
		}
	}
	for (int i = 0; i < L.nprocs; i++) {
		struct proc *p = &L.procs[i];
		if (running(p)) {
			say("%s (pid %d) ignored SIGTERM: SIGKILL", p->cfg->name, (int)p->pid);
			signal_group(p, SIGKILL);
			int st;
			if (waitpid(p->pid, &st, 0) == p->pid) {
				drain(p);
				p->pid = 0;
				p->exited = 1;
				p->exit_pending = 1;
				p->status = st;
			}
		}
	}
}

/* Kill whatever is left in the process groups (daemons of a child) and reap it. */
static void sweep_groups(void)
{
	for (int i = 0; i < L.nprocs; i++) {
		if (L.procs[i].pgid > 0 && kill(-L.procs[i].pgid, 0) == 0) {
			kill(-L.procs[i].pgid, SIGKILL);
		}
	}
	hako_time_t deadline = hako_now_usec() + 500000;
	while (hako_now_usec() < deadline) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid < 0) {
			break; /* no children left */
		}
		if (pid == 0) {
			struct timespec ts = {0, 5000000};
			nanosleep(&ts, NULL);
		}
	}
}

/* ---- domain ---- */

static int asset_registered(const char *name)
{
	int n = 0;
	if (list_assets(&n) != 0) {
		return 0;
	}
	note_owners(n);
	for (int i = 0; i < n; i++) {
		if (strcmp(L.assets[i].name, name) == 0 && L.assets[i].alive) {
			return 1;
		}
	}
	return 0;
}

static hako_time_t backoff(int restarts)
{
	hako_time_t b = BACKOFF_FIRST_USEC;
	for (int i = 1; i < restarts && b < BACKOFF_MAX_USEC; i++) {
		b *= 2;
	}
	return b < BACKOFF_MAX_USEC ? b : BACKOFF_MAX_USEC;
}

static int can_restart(const struct proc *p)
{
	return p->cfg->restart_on_failure && p->restarts < p->cfg->max_restarts;
}

static int owner(const struct proc *p)
{
	return p->cfg->wait_for == HAKOI_LAUNCH_WAIT_ASSET || p->owns_asset;
}

static void fail_proc(struct proc *p, const char *when)
{
	char how[128], extra[64] = "";
	describe(p->status, how, sizeof(how));
	if (p->restarts > 0) {
		snprintf(extra, sizeof(extra), " (after %d restart%s)", p->restarts,
		         p->restarts == 1 ? "" : "s");
	}
	failed("process \"%s\" %s%s%s", p->cfg->name, how, extra, when);
}

/* Look at the processes that exited since the last call. Returns the process whose failure
 * needs the whole simulation restarted (MODE_RUN only), else NULL; a fatal failure is recorded
 * with failed(). */
static struct proc *handle_exits(enum exit_mode mode)
{
	struct proc *restart_domain = NULL;
	for (int i = 0; i < L.nprocs; i++) {
		struct proc *p = &L.procs[i];
		if (!p->exit_pending) {
			continue;
		}
		p->exit_pending = 0;
		char how[128];
		describe(p->status, how, sizeof(how));
		if (p->cfg->phase == HAKOI_LAUNCH_PHASE_AFTER) {
			continue; /* run_after looks at them */
		}
		if (mode == MODE_SHUTDOWN) {
			if (!exited_ok(p->status) && !p->signalled && !failing()) {
				fail_proc(p, " after the simulation stopped");
			} else {
				say("%s (pid %d) %s", p->cfg->name, (int)p->pgid, how);
			}
			continue;
		}
		if (exited_ok(p->status)) {
			say("%s (pid %d) %s", p->cfg->name, (int)p->pgid, how);
			continue;
		}
		if (!can_restart(p) || failing()) {
			fail_proc(p,
			          mode == MODE_START ? " while the processes were starting" : "");
			continue;
		}
		p->restarts++;
		if (mode == MODE_RUN && owner(p) && restart_domain == NULL) {
			say("%s (pid %d) %s; restarting it (restart %d of %d) and the simulation "
			    "from world time 0",
			    p->cfg->name, (int)p->pgid, how, p->restarts, p->cfg->max_restarts);
			restart_domain = p;
			continue;
		}
		hako_time_t b = backoff(p->restarts);
		p->restart_at = hako_now_usec() + b;
		say("%s (pid %d) %s; restarting it in %.2f s (restart %d of %d)", p->cfg->name,
		    (int)p->pgid, how, (double)b / 1e6, p->restarts, p->cfg->max_restarts);
	}
	return restart_domain;
}

/* Start the processes whose restart is due. An asset can only register while the domain is
 * stopped, so an asset's process waits for that. */
static int service_restarts(void)
{
	hako_time_t now = hako_now_usec();
	for (int i = 0; i < L.nprocs; i++) {
		struct proc *p = &L.procs[i];
		if (p->restart_at == 0 || now < p->restart_at || running(p)) {
			continue;
		}
		if (owner(p) && hako_domain_state(L.dom) != HAKO_STATE_STOPPED) {
			continue;
		}
		if (spawn(p) != 0) {
			return -1;
		}
		say("restarted %s (pid %d)", p->cfg->name, (int)p->pid);
	}
	return 0;
}

static int domain_error(void)
{
	hako_domain_info_t info;
	hako_domain_get_info(L.dom, &info);
	int n = 0;
	list_assets(&n);
	struct proc *culprit = NULL;
	const char *asset = "";
	for (int i = 0; i < n && culprit == NULL; i++) {
		if (!L.assets[i].alive) {
			culprit = proc_of_pid(L.assets[i].pid);
			asset = L.assets[i].name;
		}
	}
	if (culprit != NULL) {
		char how[160] = "";
		if (culprit->exited) {
			describe(culprit->status, how, sizeof(how));
			strcat(how, ": ");
		}
		failed("process \"%s\" (asset '%s') %sdomain error: %s", culprit->cfg->name, asset,
		       how, info.error_reason);
	} else {
		failed("domain error: %s", info.error_reason);
	}
	return -1;
}

/* Wait (handling everything) until the domain reaches `state`; -1 after a failure. */
static int wait_state(int state, const char *what, enum exit_mode mode)
{
	hako_time_t deadline = hako_now_usec() + STATE_WAIT_USEC;
	for (;;) {
		int st = hako_domain_state(L.dom);
		if (st == state) {
			return 0;
		}
		if (st == HAKO_STATE_ERROR && state != HAKO_STATE_ERROR) {
			return domain_error();
		}
		if (hako_now_usec() >= deadline) {
			int n = 0;
			char names[512] = "";
			list_assets(&n);
			for (int i = 0; i < n; i++) {
				if (L.assets[i].event != HAKO_EVENT_NONE) {
					struct proc *p = proc_of_pid(L.assets[i].pid);
					size_t u = strlen(names);
					snprintf(names + u, sizeof(names) - u, "%s'%s'%s%s%s",
					         u > 0 ? ", " : "", L.assets[i].name,
					         p != NULL ? " (process " : "",
					         p != NULL ? p->cfg->name : "",
					         p != NULL ? ")" : "");
				}
			}
			failed("%s: the domain is still %s after %d s%s%s", what,
			       hako_state_name(st), STATE_WAIT_USEC / 1000000,
			       names[0] != '\0' ? "; not acknowledged by " : "", names);
			return -1;
		}
		if (mode != MODE_SHUTDOWN && L.interrupted) {
			return -1;
		}
		pump(20000);
		handle_exits(mode);
		if (mode != MODE_SHUTDOWN && failing()) {
			return -1;
		}
	}
}

/* ---- phases ---- */

static int ready(struct proc *p)
{
	switch (p->cfg->wait_for) {
	case HAKOI_LAUNCH_WAIT_ASSET: return asset_registered(p->cfg->wait_what);
	case HAKOI_LAUNCH_WAIT_LOG: return p->seen_log;
	default: return 1;
	}
}

static const char *wait_phrase(const struct proc *p, char *buf, size_t len)
{
	switch (p->cfg->wait_for) {
	case HAKOI_LAUNCH_WAIT_ASSET:
		snprintf(buf, len, "register asset '%s'", p->cfg->wait_what);
		break;
	case HAKOI_LAUNCH_WAIT_LOG: snprintf(buf, len, "print \"%s\"", p->cfg->wait_what); break;
	default: buf[0] = '\0';
	}
	return buf;
}

/* Wait until p is ready as its wait_for says, restarting it if it may be. `recheck`: p was
 * ready before, say nothing if it still is. */
static int wait_ready(struct proc *p, enum exit_mode mode, int recheck)
{
	char what[256];
	hako_time_t deadline = hako_now_usec() + p->cfg->timeout_ms * 1000;
	wait_phrase(p, what, sizeof(what));
	for (int waited = 0;; waited = 1) {
		if (ready(p)) {
			drain(p); /* its own lines about it come first */
			if ((waited || !recheck) && p->cfg->wait_for != HAKOI_LAUNCH_WAIT_NOTHING) {
				say("%s is ready (did %s %.2f s after it started)", p->cfg->name,
				    what, (double)(hako_now_usec() - p->started_at) / 1e6);
			}
			return 0;
		}
		if (L.interrupted) {
			return -1;
		}
		int was_running = running(p);
		pump(20000);
		handle_exits(mode);
		if (failing()) {
			return -1;
		}
		if (!running(p) && p->restart_at == 0 && !ready(p)) {
			char how[128];
			describe(p->status, how, sizeof(how));
			failed("process \"%s\" %s before it did %s", p->cfg->name, how, what);
			return -1;
		}
		if (service_restarts() != 0) {
			return -1;
		}
		if (!was_running && running(p)) {
			deadline = hako_now_usec() + p->cfg->timeout_ms * 1000; /* a new try */
		}
		if (hako_now_usec() >= deadline && p->restart_at == 0) {
			failed("process \"%s\" did not %s within %lld ms", p->cfg->name, what,
			       p->cfg->timeout_ms);
			return -1;
		}
	}
}

/* Every awaited asset registered (again, after a restart of the domain). */
static int wait_assets(enum exit_mode mode)
{
	for (int i = 0; i < L.nprocs; i++) {
		struct proc *p = &L.procs[i];
		if (p->cfg->phase == HAKOI_LAUNCH_PHASE_RUN && p->started &&
		    p->cfg->wait_for != HAKOI_LAUNCH_WAIT_NOTHING && wait_ready(p, mode, 1) != 0) {
			return -1;
		}
	}
	return 0;
}

static int start_processes(void)
{
	for (int i = 0; i < L.nprocs; i++) {
		struct proc *p = &L.procs[i];
		if (p->cfg->phase != HAKOI_LAUNCH_PHASE_RUN) {
			continue;
		}
		if (L.interrupted || failing() || spawn(p) != 0) {
			return -1;
		}
		char what[256];
		wait_phrase(p, what, sizeof(what));
		say("started %s (pid %d)%s%s", p->cfg->name, (int)p->pid,
		    what[0] != '\0' ? "; waiting for it to " : "", what);
		if (wait_ready(p, MODE_START, 0) != 0) {
			return -1;
		}
		pump(0);
		handle_exits(MODE_START);
		if (service_restarts() != 0) {
			return -1;
		}
	}
	return wait_assets(MODE_START);
}

/* Start the run. A process that ends meanwhile is left to run_simulation, which may restart
 * it. */
static int start_simulation(void)
{
	int r;
	if (L.cfg->stop_at_usec > 0 &&
	    (r = hako_domain_set_stop_time(L.dom, L.cfg->stop_at_usec)) != 0) {
		failed("cannot set the stop time: %s", hako_strerror(r));
		return -1;
	}
	if ((r = hako_domain_start(L.dom)) != 0) {
		failed("cannot start the simulation: %s (the domain is %s)", hako_strerror(r),
		       hako_state_name(hako_domain_state(L.dom)));
		return -1;
	}
	/* Runnable until every asset acknowledged the start; a short run may be over already. */
	hako_time_t deadline = hako_now_usec() + STATE_WAIT_USEC;
	while (hako_domain_state(L.dom) == HAKO_STATE_RUNNABLE) {
		if (hako_now_usec() >= deadline) {
			return wait_state(HAKO_STATE_RUNNING, "start", MODE_RUN);
		}
		if (L.interrupted) {
			return -1;
		}
		pump(10000);
	}
	L.wall0 = hako_now_usec();
	L.samples = 0;
	L.status_on = 1;
	L.next_status = L.wall0;
	L.next_print = L.wall0 + STATUS_PIPE_USEC;
	return 0;
}

/* Stop what is left of the run, reset, restart p and everything from world time 0. */
static int restart_domain(struct proc *p)
{
	status_stop();
	int st = hako_domain_state(L.dom);
	if (st == HAKO_STATE_RUNNING || st == HAKO_STATE_RUNNABLE) {
		hako_domain_stop(L.dom);
	}
	/* The dead asset cannot acknowledge the stop: the liveness check puts the domain in
	 * Error, which a reset leaves. */
	hako_time_t deadline = hako_now_usec() + STATE_WAIT_USEC;
	while ((st = hako_domain_state(L.dom)) != HAKO_STATE_STOPPED && st != HAKO_STATE_ERROR) {
		if (hako_now_usec() >= deadline || L.interrupted) {
			failed("restart of \"%s\": the domain is still %s after %d s", p->cfg->name,
			       hako_state_name(st), STATE_WAIT_USEC / 1000000);
			return -1;
		}
		pump(20000);
		handle_exits(MODE_RESTART);
	}
	int r = hako_domain_reset(L.dom);
	if (r != 0) {
		failed("restart of \"%s\": cannot reset the domain: %s", p->cfg->name,
		       hako_strerror(r));
		return -1;
	}
	if (wait_state(HAKO_STATE_STOPPED, "reset", MODE_RESTART) != 0) {
		return -1;
	}
	L.restarts_of_domain++;
	p->restart_at = hako_now_usec() + backoff(p->restarts);
	while (p->restart_at != 0) {
		if (L.interrupted || failing()) {
			return -1;
		}
		pump(20000);
		handle_exits(MODE_RESTART);
		if (service_restarts() != 0) {
			return -1;
		}
	}
	if (wait_assets(MODE_RESTART) != 0 || start_simulation() != 0) {
		return -1;
	}
	say("simulation restarted from world time 0 (%s restarted %d of %d times)", p->cfg->name,
	    p->restarts, p->cfg->max_restarts);
	return 0;
}

static int all_run_processes_done(void)
{
	for (int i = 0; i < L.nprocs; i++) {
		const struct proc *p = &L.procs[i];
		if (p->cfg->phase == HAKOI_LAUNCH_PHASE_RUN &&
		    (running(p) || p->restart_at != 0 || p->exit_pending)) {
			return 0;
		}
	}
	return 1;
}

/* Run until the stop time, a signal, a failure, or the end of every process. */
static int run_simulation(void)
{
	char t[48];
	if (L.cfg->stop_at_usec > 0) {
		say("simulation running until world time %s s",
		    fmt_time(L.cfg->stop_at_usec, t, sizeof(t)));
	} else {
		say("simulation running (no stop time: Ctrl-C to stop)");
	}
	for (;;) {
		pump(100000);
		if (L.interrupted) {
			return -1;
		}
		struct proc *p = handle_exits(MODE_RUN);
		if (failing()) {
			return -1;
		}
		if (p != NULL) {
			if (restart_domain(p) != 0) {
				return -1;
			}
			continue;
		}
		if (service_restarts() != 0) {
			return -1;
		}
		int st = hako_domain_state(L.dom);
		if (st == HAKO_STATE_ERROR) {
			/* Its process may not have been reaped yet: give the exit a moment to come
			 * in, so that a restartable process is restarted. */
			pump(50000);
			if ((p = handle_exits(MODE_RUN)) != NULL) {
				if (restart_domain(p) != 0) {
					return -1;
				}
				continue;
			}
			return failing() ? -1 : domain_error();
		}
		if (st == HAKO_STATE_STOPPED) {
			L.wall_end = hako_now_usec();
			L.world_end = hako_domain_world_time(L.dom);
			fmt_time(L.world_end, t, sizeof(t));
			status_stop();
			if (L.cfg->stop_at_usec > 0 && hako_domain_stop_time(L.dom) == 0) {
				say("stop time reached: the simulation stopped at world time %s s",
				    t);
			} else {
				say("the simulation was stopped from outside at world time %s s",
				    t);
			}
			return 0;
		}
		if (all_run_processes_done()) {
			L.wall_end = hako_now_usec();
			L.world_end = hako_domain_world_time(L.dom);
			status_stop();
			say("every process has exited: stopping the simulation at world time %s s",
			    fmt_time(L.world_end, t, sizeof(t)));
			return 0;
		}
	}
}

/* Stop, reset, let the processes finish, then SIGTERM / SIGKILL the rest. */
static void shutdown_run(void)
{
	status_stop();
	for (int i = 0; i < L.nprocs; i++) {
		L.procs[i].restart_at = 0;
	}
	handle_exits(MODE_SHUTDOWN);
	int st = hako_domain_state(L.dom);
	if (st == HAKO_STATE_RUNNING || st == HAKO_STATE_RUNNABLE) {
		hako_domain_stop(L.dom);
	}
	if (st != HAKO_STATE_STOPPED && st != HAKO_STATE_ERROR) {
		hako_time_t deadline = hako_now_usec() + STATE_WAIT_USEC / 2;
		while ((st = hako_domain_state(L.dom)) != HAKO_STATE_STOPPED &&
		       st != HAKO_STATE_ERROR && hako_now_usec() < deadline && L.signals < 2) {
			pump(20000);
			handle_exits(MODE_SHUTDOWN);
		}
	}
	if ((st == HAKO_STATE_STOPPED || st == HAKO_STATE_ERROR) && hako_domain_reset(L.dom) == 0) {
		hako_time_t deadline = hako_now_usec() + STATE_WAIT_USEC / 2;
		while (hako_domain_state(L.dom) != HAKO_STATE_STOPPED && L.signals < 2) {
			if (hako_now_usec() >= deadline) {
				say("the reset was not acknowledged within %d s; going on",
				    STATE_WAIT_USEC / 2000000);
				break;
			}
			pump(20000);
			handle_exits(MODE_SHUTDOWN);
		}
	}
	/* The assets finish their cycle after the reset and exit; the other processes do not
	 * follow the simulation, so they are asked to end now. */
	for (int i = 0; i < L.nprocs; i++) {
		struct proc *p = &L.procs[i];
		if (running(p) && !p->owns_asset) {
			say("stopping %s (pid %d, not an asset): SIGTERM", p->cfg->name,
			    (int)p->pid);
			signal_group(p, SIGTERM);
		}
	}
	hako_time_t deadline = hako_now_usec() + L.cfg->grace_ms * 1000;
	for (;;) {
		int left = 0;
		for (int i = 0; i < L.nprocs; i++) {
			left += running(&L.procs[i]) && L.procs[i].owns_asset;
		}
		if (left == 0 || hako_now_usec() >= deadline || L.signals >= 2) {
			break;
		}
		pump(20000);
		handle_exits(MODE_SHUTDOWN);
	}
	terminate(0);
	handle_exits(MODE_SHUTDOWN);
}

static int run_after(void)
{
	for (int i = 0; i < L.nprocs; i++) {
		struct proc *p = &L.procs[i];
		if (p->cfg->phase != HAKOI_LAUNCH_PHASE_AFTER) {
			continue;
		}
		if (spawn(p) != 0) {
			return -1;
		}
		say("started %s (pid %d), after the simulation", p->cfg->name, (int)p->pid);
		while (running(p) && !L.interrupted) {
			pump(100000);
		}
		if (L.interrupted) {
			terminate(1);
			return -1;
		}
		p->exit_pending = 0;
		if (!exited_ok(p->status)) {
			fail_proc(p, "");
			return -1;
		}
		say("%s (pid %d) exited with code 0", p->cfg->name, (int)p->pgid);
	}
	return 0;
}

/* ---- setup ---- */

static int mkdirs(const char *path)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = buf + 1; *s != '\0'; s++) {
		if (*s == '/') {
			*s = '\0';
			if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
				return -1;
			}
			*s = '/';
		}
	}
	return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Block the stop signals (the master thread inherits the mask) and read them from a signalfd.
 * A shell starts background jobs of a script with SIGINT ignored, and an ignored signal is
 * discarded even when blocked: reset it so that `kill -INT` works. SIGHUP stays ignored under
 * nohup. */
static int setup_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	struct sigaction old;
	if (sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler != SIG_IGN) {
		sigaddset(&set, SIGHUP);
	}
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
		return -1;
	}
	L.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return L.sigfd >= 0 ? 0 : -1;
}

static int create_domain(void)
{
	const char *name = L.cfg->domain;
	int r = hako_domain_create(name, &L.cfg->core, &L.dom);
	if (r == HAKO_EBUSY) {
		hako_domain_t *other = NULL;
		hako_domain_info_t info;
		if (hako_domain_open(name, &other) == 0 &&
		    hako_domain_get_info(other, &info) == 0) {
			failed(
			    "domain '%s' already has a conductor (pid %d); hako-launch is the "
			    "conductor of its domain: stop that one or choose another \"domain\"",
			    name, info.master_pid);
		} else {
			failed("domain '%s' already has a conductor", name);
		}
		hako_domain_close(other);
		return -1;
	}
	if (r != 0) {
		failed("cannot create domain '%s': %s", name, hako_strerror(r));
		return -1;
	}
	if ((r = hako_master_start(L.dom, &L.cfg->master, &L.master)) != 0) {
		failed("cannot start the conductor of domain '%s': %s", name, hako_strerror(r));
		return -1;
	}
	hako_domain_info_t info;
	hako_domain_get_info(L.dom, &info);
	L.asset_cap = (int)info.max_assets;
	L.assets = calloc((size_t)L.asset_cap, sizeof(*L.assets));
	if (L.assets == NULL) {
		failed("out of memory");
		return -1;
	}
	return 0;
}

static void close_domain(void)
{
	if (L.master != NULL) {
		hako_master_stop(L.master);
		L.master = NULL;
	}
	if (L.dom != NULL) {
		/* Remove the segment only if it is still ours (hako-cmd clean --force may have
		 * replaced it). */
		hako_domain_t *now = NULL;
		hako_domain_info_t cur;
		int ours = hako_domain_open(L.cfg->domain, &now) == 0 &&
		           hako_domain_get_info(now, &cur) == 0 && cur.master_pid == (int)getpid();
		hako_domain_close(now);
		hako_domain_close(L.dom);
		L.dom = NULL;
		if (ours) {
			hako_domain_remove(L.cfg->domain);
		}
	}
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: hako-launch [--path DIR]... [--quiet] [--no-echo] [--check] FILE\n\n"
	        "Run the co-simulation that the launch file FILE describes: create its domain and\n"
	        "be its conductor, start the processes in order (waiting for each as the file\n"
	        "says), run the simulation with a status line, and stop everything together at\n"
	        "the stop time, on Ctrl-C or when a process fails; then run the \"after\"\n"
	        "processes. Each process's output goes to <log_dir>/<name>.log and is echoed\n"
	        "as \"[name] line\".\n\n"
	        "options:\n"
	        "  --path DIR     look for commands in DIR first (may be repeated)\n"
	        "  -q, --quiet    no status line and no progress messages\n"
	        "  --no-echo      do not echo the output of the processes (the logs keep it)\n"
	        "  --check        check FILE, print what would run, and exit\n"
	        "  -h, --help     show this help\n"
	        "  --version      show the version\n\n"
	        "exit status: 0 all went well; 1 a process or the simulation failed (the last\n"
	        "line says which and how); 2 usage error or invalid launch file; 128+N stopped\n"
	        "by signal N (130 for Ctrl-C).\n\n"
	        "The format of FILE: docs/hako-launch.md, configs/schema/launch.schema.json.\n");
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "hako-launch: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'hako-launch --help'.\n");
	return EXIT_USAGE;
}

static void describe_setup(void)
{
	const hakoi_launch_config_t *c = L.cfg;
	char stop[64] = "no stop time";
	if (c->stop_at_usec > 0) {
		char t[48];
		snprintf(stop, sizeof(stop), "stop at %s s",
		         fmt_time(c->stop_at_usec, t, sizeof(t)));
	}
	char factor[32];
	if (c->master.real_time_factor == 0.0) {
		snprintf(factor, sizeof(factor), "as fast as possible");
	} else {
		snprintf(factor, sizeof(factor), "%gx real time", c->master.real_time_factor);
	}
	say("domain '%s', conductor in this process (pid %d): delta %g ms, Dmax %g ms, %s, %s; "
	    "logs in %s",
	    c->domain, (int)getpid(), (double)c->master.delta_usec / 1e3,
	    (double)c->master.max_delay_usec / 1e3, factor, stop, c->log_dir);
}

static int finish(int rc)
{
	sweep_groups();
	close_domain();
	if (L.interrupted && L.failure[0] == '\0') {
		complain("stopped by SIG%s; every process has ended", sigabbrev_np(L.interrupted));
		rc = 128 + L.interrupted;
	} else if (L.failure[0] != '\0') {
		if (L.cfg != NULL && L.own_log >= 0) {
			say("logs in %s", L.cfg->log_dir);
		}
		complain("FAILED: %s", L.failure);
		rc = EXIT_FAILED;
	}
	if (L.own_log >= 0) {
		close(L.own_log);
	}
	for (int i = 0; i < L.nprocs; i++) {
		if (L.procs[i].log_fd >= 0) {
			close(L.procs[i].log_fd);
		}
		if (L.procs[i].out_fd >= 0) {
			close(L.procs[i].out_fd);
		}
	}
	free(L.procs);
	free(L.assets);
	if (L.sigfd >= 0) {
		close(L.sigfd);
	}
	hakoi_launch_free(L.cfg);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"path", required_argument, NULL, 'p'},
	                                         {"quiet", no_argument, NULL, 'q'},
	                                         {"no-echo", no_argument, NULL, 'E'},
	                                         {"check", no_argument, NULL, 'c'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {"version", no_argument, NULL, 'V'},
	                                         {NULL, 0, NULL, 0}};
	const char *search[64];
	size_t nsearch = 0;
	int check = 0, c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (nsearch == sizeof(search) / sizeof(search[0])) {
				return usage_error("too many --path options%s", "");
			}
			struct stat st;
			if (stat(optarg, &st) != 0 || !S_ISDIR(st.st_mode)) {
				return usage_error("--path %s: not a folder", optarg);
			}
			search[nsearch++] = optarg;
			break;
		case 'q': L.quiet = 1; break;
		case 'E': L.no_echo = 1; break;
		case 'c': check = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("hako-launch %s\n", HAKO_VERSION); return 0;
		case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
		default: return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		return usage_error("no launch file given%s", "");
	}
	if (optind + 1 < argc) {
		return usage_error("unexpected argument '%s'", argv[optind + 1]);
	}
	if (getenv("HAKO_LOG") == NULL) {
		/* The library's lines would only repeat, worse, what hako-launch says. */
		hako_log_set_level(HAKO_LOG_OFF);
	}

	/* A fresh domain unless the user chose one: runs in parallel never collide. */
	char domain[64];
	const char *env = getenv("HAKO_DOMAIN");
	if (env != NULL && env[0] != '\0') {
		snprintf(domain, sizeof(domain), "%s", env);
	} else {
		snprintf(domain, sizeof(domain), "launch-%d", (int)getpid());
	}
	hakoi_launch_options_t opt = {domain, search, nsearch};
	hako_error_t err;
	int r = hakoi_launch_load(argv[optind], &opt, &L.cfg, &err);
	if (r != 0) {
		char msg[1200];
		fprintf(stderr, "hako-launch: %s\n", hako_error_format(&err, msg, sizeof(msg)));
		return EXIT_USAGE;
	}
	if (check) {
		hakoi_launch_dump(L.cfg, stdout);
		hakoi_launch_free(L.cfg);
		return 0;
	}
	L.tty = isatty(STDOUT_FILENO);
	L.color = L.tty && getenv("NO_COLOR") == NULL;
	L.nprocs = (int)L.cfg->proc_count;
	L.procs = calloc((size_t)L.nprocs, sizeof(*L.procs));
	if (L.procs == NULL) {
		complain("out of memory");
		hakoi_launch_free(L.cfg);
		return EXIT_FAILED;
	}
	static const int colors[] = {36, 33, 32, 35, 34, 96, 93, 92, 95, 94};
	for (int i = 0; i < L.nprocs; i++) {
		L.procs[i].cfg = &L.cfg->procs[i];
		L.procs[i].out_fd = L.procs[i].log_fd = -1;
		L.procs[i].color = colors[i % (int)(sizeof(colors) / sizeof(colors[0]))];
	}
	if (setup_signals() != 0) {
		complain("cannot set up the signals: %s", strerror(errno));
		return finish(EXIT_FAILED);
	}
	/* Orphaned grandchildren come back to us, so that they are reaped and none is left. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (mkdirs(L.cfg->log_dir_abs) != 0) {
		failed("cannot create the log folder %s: %s", L.cfg->log_dir, strerror(errno));
		return finish(EXIT_FAILED);
	}
	char own[PATH_MAX];
	snprintf(own, sizeof(own), "%s/hako-launch.log", L.cfg->log_dir_abs);
	L.own_log = open(own, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (create_domain() != 0) {
		return finish(EXIT_FAILED);
	}
	describe_setup();

	int ok = start_processes() == 0 && start_simulation() == 0 && run_simulation() == 0;
	if (L.wall_end == 0) {
		L.wall_end = hako_now_usec();
		L.world_end = hako_domain_world_time(L.dom);
	}
	shutdown_run();
	if (ok && !failing()) {
		/* Before the "after" processes, so that a report's last line is the last line. */
		char t[48];
		double wall = (double)(L.wall_end - L.wall0) / 1e6;
		int quiet = L.quiet;
		L.quiet = 0; /* always shown */
		say("done: world time %s s in %.2f s of wall time (%.2fx real time)%s; logs in %s",
		    fmt_time(L.world_end, t, sizeof(t)), wall,
		    wall > 0 ? (double)L.world_end / 1e6 / wall : 0.0,
		    L.restarts_of_domain > 0 ? " after restarts" : "", L.cfg->log_dir);
		L.quiet = quiet;
		run_after();
	} else if (L.failure[0] == '\0' && L.interrupted == 0) {
		failed("the run ended without a reason");
	}
	int has_after = 0;
	for (int i = 0; i < L.nprocs; i++) {
		has_after |=
		    L.procs[i].cfg->phase == HAKOI_LAUNCH_PHASE_AFTER && !L.procs[i].started;
	}
	if (has_after && failing()) {
		say("the \"after\" processes were not run");
	}
	return finish(0);
}
