/* Test helpers: see hako_test_util.h. */
#define _GNU_SOURCE
#include "hako_test_util.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#define MAX_DOMAINS  32
#define MAX_CHILDREN 64
#define MAX_TMPDIRS  8

static pid_t owner;
static char domains[MAX_DOMAINS][HAKO_NAME_MAX];
static pid_t children[MAX_CHILDREN];
static char tmpdirs[MAX_TMPDIRS][256];

static int is_owner(void)
{
	return owner != 0 && getpid() == owner;
}

/* Async-signal-safe part of the cleanup: no allocation, no stdio. */
static void cleanup_signal_safe(void)
{
	if (!is_owner()) {
		return;
	}
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (children[i] > 0) {
			kill(children[i], SIGKILL);
			waitpid(children[i], NULL, 0);
			children[i] = 0;
		}
	}
	for (int i = 0; i < MAX_DOMAINS; i++) {
		if (domains[i][0] != '\0') {
			char path[HAKO_NAME_MAX + 8] = "/hako.";
			size_t n = strnlen(domains[i], HAKO_NAME_MAX - 1);
			memcpy(path + 6, domains[i], n);
			path[6 + n] = '\0';
			shm_unlink(path);
			domains[i][0] = '\0';
		}
	}
}

static void at_exit(void)
{
	cleanup_signal_safe();
	if (is_owner()) {
		htu_remove_tmpdirs();
	}
}

static void on_signal(int sig)
{
	cleanup_signal_safe();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Provided by the sanitizer runtimes: a sanitizer report ends the process without atexit. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/* Remove the segments "hako.t-<test>-<pid>" of earlier test processes that are dead (killed
 * by a timeout or a sanitizer before they could clean up). */
static void sweep_dead_segments(void)
{
	DIR *d = opendir("/dev/shm");
	if (d == NULL) {
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "hako.t-", 7) != 0) {
			continue;
		}
		const char *dash = strrchr(e->d_name, '-');
		char *end;
		long pid = strtol(dash + 1, &end, 10);
		if (*end != '\0' || pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno != ESRCH)) {
			continue;
		}
		if (kill((pid_t)pid, 0) == 0) {
			continue;
		}
		char path[300];
		snprintf(path, sizeof(path), "/%s", e->d_name);
		shm_unlink(path);
	}
	closedir(d);
}

void htu_init(void)
{
	if (owner != 0) {
		return;
	}
	owner = getpid();
	sweep_dead_segments();
	atexit(at_exit);
	if (__sanitizer_set_death_callback != NULL) {
		__sanitizer_set_death_callback(cleanup_signal_safe);
	}
	/* GCC links UBSan as its own library with its own copy of that hook. */
	void *ubsan = dlopen("libubsan.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (ubsan != NULL) {
		void (*set_cb)(void (*)(void));
		*(void **)&set_cb = dlsym(ubsan, "__sanitizer_set_death_callback");
		if (set_cb != NULL) {
			set_cb(cleanup_signal_safe);
		}
		dlclose(ubsan);
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGHUP, on_signal);
}

const char *htu_domain_name(const char *test, char *buf, size_t len)
{
	htu_init();
	snprintf(buf, len, "t-%s-%d", test, (int)getpid());
	for (int i = 0; i < MAX_DOMAINS; i++) {
		if (strcmp(domains[i], buf) == 0) {
			return buf;
		}
	}
	for (int i = 0; i < MAX_DOMAINS; i++) {
		if (domains[i][0] == '\0') {
			size_t n = strnlen(buf, HAKO_NAME_MAX - 1);
			memcpy(domains[i], buf, n);
			domains[i][n] = '\0';
			break;
		}
	}
	return buf;
}

void htu_remove_domain(const char *name)
{
	if (!is_owner() || name == NULL) {
		return;
	}
	hako_domain_remove(name);
	for (int i = 0; i < MAX_DOMAINS; i++) {
		if (strcmp(domains[i], name) == 0) {
			domains[i][0] = '\0';
		}
	}
}

void htu_remove_all_domains(void)
{
	for (int i = 0; i < MAX_DOMAINS; i++) {
		if (domains[i][0] != '\0') {
			char name[HAKO_NAME_MAX];
			memcpy(name, domains[i], sizeof(name));
			htu_remove_domain(name);
		}
	}
}

static void forget_child(pid_t pid)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (children[i] == pid) {
			children[i] = 0;
		}
	}
}

pid_t htu_fork(void (*fn)(void *), void *arg)
{
	htu_init();
	fflush(stdout);
	fflush(stderr);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		/* Not cmocka's handlers: a crash must end the child, not resume the test suite. */
		static const int fatal[] = {SIGSEGV, SIGBUS,  SIGILL, SIGFPE, SIGABRT,
		                            SIGSYS,  SIGTERM, SIGINT, SIGHUP};
		for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
			signal(fatal[i], SIG_DFL);
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent) {
			_exit(99);
		}
		fn(arg);
		_exit(0);
	}
	if (pid > 0) {
		for (int i = 0; i < MAX_CHILDREN; i++) {
			if (children[i] == 0) {
				children[i] = pid;
				break;
			}
		}
	}
	return pid;
}

int htu_wait_child(pid_t pid, hako_time_t timeout_usec, int *status)
{
	hako_time_t deadline = hako_now_usec() + timeout_usec;
	for (;;) {
		int st = 0;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid) {
			forget_child(pid);
			if (status != NULL) {
				*status = st;
			}
			return 0;
		}
		if (r < 0 && errno != EINTR) {
			forget_child(pid);
			return HAKO_ENOENT;
		}
		if (hako_now_usec() >= deadline) {
			return HAKO_ETIMEDOUT;
		}
		htu_sleep_usec(1000);
	}
}

int htu_child_exited(pid_t pid)
{
	siginfo_t info;
	memset(&info, 0, sizeof(info));
	if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
		return 1; /* not our child (any more) */
	}
	return info.si_pid == pid;
}

int htu_exited_ok(pid_t pid, int status)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		return 1;
	}
	if (WIFEXITED(status)) {
		fprintf(stderr, "child %d exited with code %d\n", (int)pid, WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		fprintf(stderr, "child %d killed by signal %d\n", (int)pid, WTERMSIG(status));
	}
	return 0;
}

int htu_join_child(pid_t pid, hako_time_t timeout_usec)
{
	int status = 0;
	if (htu_wait_child(pid, timeout_usec, &status) != 0) {
		fprintf(stderr, "child %d did not exit in time; killing it\n", (int)pid);
		htu_kill_child(pid);
		return 0;
	}
	return htu_exited_ok(pid, status);
}

void htu_kill_child(pid_t pid)
{
	if (pid <= 0) {
		return;
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
	}
	forget_child(pid);
}

void htu_kill_children(void)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (children[i] > 0) {
			htu_kill_child(children[i]);
		}
	}
}

void *htu_shared_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void htu_shared_free(void *p, size_t len)
{
	if (p != NULL) {
		munmap(p, len);
	}
}

const char *htu_tmpdir(char *buf, size_t len)
{
	htu_init();
	const char *base = getenv("TMPDIR");
	snprintf(buf, len, "%s/hako-test-XXXXXX", base != NULL && base[0] != '\0' ? base : "/tmp");
	if (mkdtemp(buf) == NULL) {
		return NULL;
	}
	for (int i = 0; i < MAX_TMPDIRS; i++) {
		if (tmpdirs[i][0] == '\0') {
			size_t n = strnlen(buf, sizeof(tmpdirs[i]) - 1);
			memcpy(tmpdirs[i], buf, n);
			tmpdirs[i][n] = '\0';
			return buf;
		}
	}
	/* Not tracked: it would outlive the test. */
	fprintf(stderr,
	        "htu_tmpdir: %s is left behind: %d directories are tracked at once (remove them "
	        "in teardown with htu_remove_tmpdirs)\n",
	        buf, MAX_TMPDIRS);
	return buf;
}

int htu_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		return -1;
	}
	size_t n = strlen(text);
	int ok = fwrite(text, 1, n, f) == n;
	ok = (fclose(f) == 0) && ok;
	return ok ? 0 : -1;
}

char *htu_slurp(const char *path)
{
	static char buf[65536];
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	if (f != NULL) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	return buf;
}

void htu_exec_main(void *arg)
{
	htu_exec_t *x = arg;
	int fd = open(x->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		dup2(fd, 2);
		dup2(fd, 1);
		close(fd);
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execv(x->argv[0], x->argv);
	_exit(127);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void htu_remove_tmpdirs(void)
{
	if (!is_owner()) {
		return;
	}
	for (int i = 0; i < MAX_TMPDIRS; i++) {
		if (tmpdirs[i][0] != '\0') {
			nftw(tmpdirs[i], rm_entry, 8, FTW_DEPTH | FTW_PHYS);
			tmpdirs[i][0] = '\0';
		}
	}
}

int htu_thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	if (d == NULL) {
		return -1;
	}
	int n = 0;
	for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
		n += e->d_name[0] != '.';
	}
	closedir(d);
	return n;
}

int htu_thread_count_settled(void)
{
	int n = htu_thread_count();
	for (int i = 0; i < 200; i++) {
		htu_sleep_usec(10000);
		int m = htu_thread_count();
		if (m == n) {
			return n;
		}
		n = m;
	}
	return n;
}

int htu_thread_count_reaches(int want)
{
	int n = htu_thread_count();
	for (hako_time_t waited = 0; n != want && waited < HTU_TIMEOUT_USEC; waited += 1000) {
		htu_sleep_usec(1000);
		n = htu_thread_count();
	}
	return n;
}

void htu_sleep_usec(hako_time_t usec)
{
	struct timespec ts = {(time_t)(usec / 1000000), (long)(usec % 1000000) * 1000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

void htu_asset_main(void *p)
{
	htu_asset_args_t *a = p;
	htu_asset_stats_t *st = a->stats;
	hako_domain_t *dom = NULL;
	hako_member_t *m = NULL;
	int r = hako_domain_open(a->domain, &dom);
	if (r == 0) {
		r = hako_member_register(dom, a->name, a->delta_usec, &m);
	}
	if (r != 0) {
		atomic_store(&st->registered, r);
		fprintf(stderr, "asset %s: cannot register: %s\n", a->name, hako_strerror(r));
		_exit(2);
	}
	atomic_store(&st->registered, 1);
	while (!atomic_load(&st->quit)) {
		int ev = HAKO_EVENT_NONE;
		r = hako_member_wait_event(m, 50000, &ev);
		if (r == HAKO_ETIMEDOUT) {
			continue;
		}
		if (r != 0) {
			atomic_store(&st->wait_error, r);
			fprintf(stderr, "asset %s: wait_event: %s\n", a->name, hako_strerror(r));
			_exit(3);
		}
		switch (ev) {
		case HAKO_EVENT_START:
			atomic_fetch_add(&st->runs, 1);
			hako_member_ack(m, ev);
			for (;;) {
				r = hako_member_step_wait(m);
				if (r != 0) {
					break;
				}
				hako_member_step_done(m);
				atomic_fetch_add(&st->steps, 1);
			}
			atomic_store(&st->last_step_rc, r);
			if (r == HAKO_EINTR) {
				atomic_fetch_add(&st->step_intr, 1);
			}
			break;
		case HAKO_EVENT_RESET:
			atomic_fetch_add(&st->resets, 1);
			hako_member_ack(m, ev);
			break;
		case HAKO_EVENT_ERROR:
			atomic_fetch_add(&st->errors, 1);
			hako_member_ack(m, ev);
			break;
		default: hako_member_ack(m, ev); break;
		}
	}
	hako_member_unregister(m);
	hako_domain_close(dom);
}
