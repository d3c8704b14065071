/* The supervision of hako-launch's processes (launch_supervise.h). */
#define _GNU_SOURCE
#include "launch_supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch_console.h"

#define TERM_WAIT_USEC     2000000 /* SIGTERM -> SIGKILL */
#define SWEEP_USEC         500000
#define BACKOFF_FIRST_USEC 250000
#define BACKOFF_MAX_USEC   4000000

extern char **environ;

/* ---- output ---- */

static void check_log_wait(hakoi_proc_t *p)
{
	if (p->cfg->wait_for == HAKOI_LAUNCH_WAIT_LOG && !p->seen_log) {
		p->line[p->line_len] = '\0';
		if (strstr(p->line, p->cfg->wait_what) != NULL) {
			p->seen_log = 1;
		}
	}
}

static void emit_line(hakoi_proc_t *p)
{
	size_t len = p->line_len;
	check_log_wait(p);
	if (len > 0 && p->line[len - 1] == '\r') {
		len--;
	}
	if (p->cfg->echo) {
		hakoi_console_echo(p->cfg->name, p->color, p->line, len);
	}
	if (p->on_line != NULL) {
		p->line[len] = '\0';
		p->on_line(p, p->line, len);
	}
	if (len > 0) {
		size_t keep = len < sizeof(p->last) - 1 ? len : sizeof(p->last) - 1;
		memcpy(p->last, p->line, keep);
		p->last[keep] = '\0';
	}
	p->line_len = 0;
}

static void feed(hakoi_proc_t *p, const char *data, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (data[i] == '\n') {
			emit_line(p);
			continue;
		}
		if (p->line_len == HAKOI_LAUNCH_LINE_BYTES - 1) {
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

void hakoi_sup_drain(hakoi_proc_t *p)
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

/* ---- exits and signals ---- */

static void exited(hakoi_proc_t *p, int status)
{
	hakoi_sup_drain(p);
	p->pid = 0;
	p->exited = 1;
	p->exit_pending = 1;
	p->status = status;
}

static void reap_all(hakoi_sup_t *s)
{
	for (;;) {
		int st = 0;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0) {
			return;
		}
		/* Orphaned grandchildren come here too (we are their subreaper): nothing to do. */
		for (int i = 0; i < s->nprocs; i++) {
			if (s->procs[i].pid == pid) {
				exited(&s->procs[i], st);
			}
		}
	}
}

static void on_stop_signal(hakoi_sup_t *s, int sig)
{
	s->signals++;
	if (s->interrupted == 0) {
		s->interrupted = sig;
		hakoi_say("SIG%s: stopping everything (again to hurry)", sigabbrev_np(sig));
	} else if (s->signals == 2) {
		hakoi_say("SIG%s again: hurrying (SIGTERM now, once more for SIGKILL)",
		          sigabbrev_np(sig));
	}
}

void hakoi_sup_pump(hakoi_sup_t *s, hako_time_t timeout_usec)
{
	struct pollfd fds[1 + s->nprocs];
	hakoi_proc_t *who[1 + s->nprocs];
	int n = 0;
	fds[n] = (struct pollfd){.fd = s->sigfd, .events = POLLIN};
	who[n++] = NULL;
	for (int i = 0; i < s->nprocs; i++) {
		if (s->procs[i].out_fd >= 0) {
			fds[n] = (struct pollfd){.fd = s->procs[i].out_fd, .events = POLLIN};
			who[n++] = &s->procs[i];
		}
	}
	int r = poll(fds, (nfds_t)n, (int)((timeout_usec + 999) / 1000));
	if (r > 0 && (fds[0].revents & POLLIN)) {
		struct signalfd_siginfo si;
		while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo != SIGCHLD) {
				on_stop_signal(s, (int)si.ssi_signo);
			}
		}
	}
	for (int i = 1; r > 0 && i < n; i++) {
		if (fds[i].revents != 0) {
			hakoi_sup_drain(who[i]);
		}
	}
	reap_all(s);
}

/* Block the stop signals (threads started later inherit the mask) and read them from a
 * signalfd. A shell starts background jobs of a script with SIGINT ignored, and an ignored
 * signal is discarded even when blocked: reset it so that `kill -INT` works. SIGHUP stays
 * ignored under nohup. */
static int setup_signals(hakoi_sup_t *s)
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
	s->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return s->sigfd >= 0 ? 0 : -1;
}

int hakoi_sup_open(hakoi_sup_t *s, const hakoi_launch_config_t *cfg, char *why, size_t len)
{
	static const int colors[] = {36, 33, 32, 35, 34, 96, 93, 92, 95, 94};
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->sigfd = -1;
	s->nprocs =
	    (int)cfg->proc_count + (cfg->viewer.enabled ? 1 : 0) + (cfg->record.enabled ? 1 : 0);
	s->procs = calloc((size_t)s->nprocs + 1, sizeof(*s->procs));
	if (s->procs == NULL) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	for (int i = 0; i < s->nprocs; i++) {
		size_t k = (size_t)i;
		s->procs[i].cfg = k < cfg->proc_count                           ? &cfg->procs[k]
		                  : k == cfg->proc_count && cfg->viewer.enabled ? &cfg->viewer.proc
		                                                                : &cfg->record.proc;
		s->procs[i].out_fd = s->procs[i].log_fd = -1;
		s->procs[i].color = colors[i % (int)(sizeof(colors) / sizeof(colors[0]))];
	}
	if (setup_signals(s) != 0) {
		snprintf(why, len, "cannot set up the signals: %s", strerror(errno));
		return -1;
	}
	/* Orphaned grandchildren come back to us, so that they are reaped and none is left. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	return 0;
}

void hakoi_sup_close(hakoi_sup_t *s)
{
	for (int i = 0; i < s->nprocs; i++) {
		if (s->procs[i].log_fd >= 0) {
			close(s->procs[i].log_fd);
		}
		if (s->procs[i].out_fd >= 0) {
			close(s->procs[i].out_fd);
		}
	}
	free(s->procs);
	s->procs = NULL;
	s->nprocs = 0;
	if (s->sigfd >= 0) {
		close(s->sigfd);
		s->sigfd = -1;
	}
}

/* ---- starting ---- */

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
	char *e = malloc(n);
	if (e != NULL) {
		snprintf(e, n, "%s=%s", key, value);
	}
	return e;
}

void hakoi_launch_env_free(char **env)
{
	for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
		free(env[i]);
	}
	free(env);
}

char **hakoi_launch_env(const hakoi_launch_config_t *cfg, const hakoi_launch_proc_t *pc)
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
	const char *domain = pc->domain != NULL ? pc->domain : cfg->domain;
	if ((env[k++] = env_entry("HAKO_DOMAIN", domain)) == NULL ||
	    (env[k++] = env_entry("HAKO_LAUNCH_DIR", cfg->dir)) == NULL ||
	    (env[k++] = env_entry("HAKO_LAUNCH_LOG_DIR", cfg->log_dir_abs)) == NULL) {
		goto oom;
	}
	for (size_t j = 0; j < pc->env_count; j++) {
		if (pc->env[j].value == NULL) {
			continue; /* unset: its entry of environ was skipped above */
		}
		if ((env[k++] = env_entry(pc->env[j].key, pc->env[j].value)) == NULL) {
			goto oom;
		}
	}
	return env;
oom:
	hakoi_launch_env_free(env);
	return NULL;
}

static void child_fail(int fd, int err)
{
	if (write(fd, &err, sizeof(err)) != (ssize_t)sizeof(err)) {
		/* the parent sees an exit code 127 without a reason */
	}
	_exit(127);
}

int hakoi_sup_spawn(hakoi_sup_t *s, hakoi_proc_t *p, char *why, size_t len)
{
	const hakoi_launch_proc_t *pc = p->cfg;
	int out[2] = {-1, -1}, err[2] = {-1, -1}, devnull = -1;
	char **env = NULL;
	if (p->log_fd < 0) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s.log", s->cfg->log_dir_abs, pc->name);
		p->log_fd = hakoi_log_open(path);
		if (p->log_fd < 0) {
			snprintf(why, len, "process \"%s\": cannot create its log %s: %s", pc->name,
			         path,
			         errno == EPERM || errno == ELOOP
			             ? "a file there is not a plain file of this user"
			             : strerror(errno));
			return -1;
		}
	}
	if (p->started) {
		char mark[128];
		snprintf(mark, sizeof(mark), "---- hako-launch: restart %d of %d ----\n",
		         p->restarts, pc->max_restarts);
		write_all(p->log_fd, mark, strlen(mark));
	}
	if ((env = hakoi_launch_env(s->cfg, pc)) == NULL) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
	    (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(why, len, "process \"%s\": cannot create a pipe: %s", pc->name,
		         strerror(errno));
		goto fail;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, len, "process \"%s\": cannot fork: %s", pc->name, strerror(errno));
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
	hakoi_launch_env_free(env);
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
		snprintf(why, len, "process \"%s\": cannot run %s%s%s: %s", pc->name, pc->exe,
		         pc->cwd != NULL ? " in " : "", pc->cwd != NULL ? pc->cwd : "",
		         strerror(e));
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
	hakoi_launch_env_free(env);
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

/* ---- stopping ---- */

hakoi_proc_t *hakoi_sup_find(hakoi_sup_t *s, pid_t pid)
{
	for (int i = 0; i < s->nprocs; i++) {
		if (s->procs[i].pgid == pid && pid > 0) {
			return &s->procs[i];
		}
	}
	return NULL;
}

void hakoi_sup_signal(hakoi_proc_t *p, int sig)
{
	if (p->pgid > 0) {
		kill(-p->pgid, sig);
		p->signalled = 1;
	}
}

void hakoi_sup_terminate(hakoi_sup_t *s, int only_after)
{
	int left = 0;
	for (int i = 0; i < s->nprocs; i++) {
		hakoi_proc_t *p = &s->procs[i];
		if (hakoi_sup_running(p) &&
		    (p->cfg->phase == HAKOI_LAUNCH_PHASE_AFTER) == only_after) {
			if (!p->signalled) {
				hakoi_say("%s (pid %d) is still running: SIGTERM", p->cfg->name,
				          (int)p->pid);
				hakoi_sup_signal(p, SIGTERM);
			}
			left++;
		}
	}
	hako_time_t deadline = hako_now_usec() + TERM_WAIT_USEC;
	while (left > 0 && hako_now_usec() < deadline && s->signals < 3) {
		hakoi_sup_pump(s, 20000);
		left = 0;
		for (int i = 0; i < s->nprocs; i++) {
			left += hakoi_sup_running(&s->procs[i]);
		}
	}
	for (int i = 0; i < s->nprocs; i++) {
		hakoi_proc_t *p = &s->procs[i];
		if (hakoi_sup_running(p)) {
			hakoi_say("%s (pid %d) ignored SIGTERM: SIGKILL", p->cfg->name,
			          (int)p->pid);
			hakoi_sup_signal(p, SIGKILL);
			int st;
			if (waitpid(p->pid, &st, 0) == p->pid) {
				exited(p, st);
			}
		}
	}
}

void hakoi_sup_sweep(hakoi_sup_t *s)
{
	for (int i = 0; i < s->nprocs; i++) {
		if (s->procs[i].pgid > 0 && kill(-s->procs[i].pgid, 0) == 0) {
			kill(-s->procs[i].pgid, SIGKILL);
		}
	}
	/* SIGKILL cannot be ignored: the dead come quickly, but reaping them has no event to
	 * wait on here (SIGCHLD is blocked into the signalfd), so it polls for a bounded time. */
	hako_time_t deadline = hako_now_usec() + SWEEP_USEC;
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

/* ---- restarts ---- */

int hakoi_sup_can_restart(const hakoi_proc_t *p)
{
	return p->cfg->restart_on_failure && p->restarts < p->cfg->max_restarts;
}

hako_time_t hakoi_sup_backoff(int restarts)
{
	hako_time_t b = BACKOFF_FIRST_USEC;
	for (int i = 1; i < restarts && b < BACKOFF_MAX_USEC; i++) {
		b *= 2;
	}
	return b < BACKOFF_MAX_USEC ? b : BACKOFF_MAX_USEC;
}
