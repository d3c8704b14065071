/* Helpers shared by the core and integration tests: unique domain names that are removed even
 * when a test fails, forked children that are killed and reaped even when a test fails,
 * shared memory between a test and its children, temporary files, and bounded waits.
 *
 * Only the process that called htu_init() cleans up: forked children never remove domains or
 * kill anything, even if they call exit().
 */
#ifndef HAKO_TEST_UTIL_H
#define HAKO_TEST_UTIL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include "hako/domain.h"

/* Generous bound for waits that must end; never a performance assertion. */
#define HTU_TIMEOUT_USEC 10000000

/* Install the exit and signal handlers that remove tracked domains and kill tracked children.
 * Idempotent; every other helper calls it. */
void htu_init(void);

/* "t-<test>-<pid>" into buf, tracked for removal at teardown and at exit. Returns buf. */
const char *htu_domain_name(const char *test, char *buf, size_t len);
/* Remove the segment of a tracked domain (ignores ENOENT) and forget it. */
void htu_remove_domain(const char *name);
/* Remove every tracked domain. */
void htu_remove_all_domains(void);

/* Fork a child that runs fn(arg) and then _exit(0)s; fn may _exit with another code. The
 * child dies with its parent and has the default handlers for fatal signals (not cmocka's). */
pid_t htu_fork(void (*fn)(void *), void *arg);
/* Wait for a tracked child: 0 and *status when it exited within timeout_usec, else
 * HAKO_ETIMEDOUT (the child is left running). */
int htu_wait_child(pid_t pid, hako_time_t timeout_usec, int *status);
/* 1 if a tracked child has exited (it is not reaped: htu_wait_child still gets its status). */
int htu_child_exited(pid_t pid);
/* 1 if the status says "exited with code 0". Prints how it ended otherwise. */
int htu_exited_ok(pid_t pid, int status);
/* Wait for a tracked child and return htu_exited_ok (0 on timeout, after killing it). */
int htu_join_child(pid_t pid, hako_time_t timeout_usec);
/* SIGKILL one tracked child and reap it. */
void htu_kill_child(pid_t pid);
/* SIGKILL and reap every tracked child. */
void htu_kill_children(void);

/* Zeroed memory shared with the children forked after this call. */
void *htu_shared_alloc(size_t len);
void htu_shared_free(void *p, size_t len);

/* A fresh directory under TMPDIR (or /tmp), removed with its files at teardown / exit. */
const char *htu_tmpdir(char *buf, size_t len);
/* Write text to path. 0 or -1. */
int htu_write_file(const char *path, const char *text);
/* Remove every tracked temporary directory. */
void htu_remove_tmpdirs(void);
/* The text of file path (at most 64 KiB; "" when it cannot be read) in a static buffer that the
 * next call overwrites. */
char *htu_slurp(const char *path);

/* A program run in a child (htu_fork(htu_exec_main, &x)): argv[0] executed with stdout and
 * stderr to log (created or truncated) and no signal blocked; exit status 127 if it cannot run. */
typedef struct htu_exec {
	char *argv[16];
	const char *log;
} htu_exec_t;
void htu_exec_main(void *arg);

void htu_sleep_usec(hako_time_t usec);

/* The threads of this process (entries of /proc/self/task), or -1 if it cannot be read. */
int htu_thread_count(void);

/* A thread that pthread_join has returned for may still be listed for a moment (the kernel
 * finishes its exit after it wakes the joiner). htu_thread_count_settled: the count once two
 * reads 10 ms apart agree (a base to compare with later). htu_thread_count_reaches: the count
 * once it is `want`, or the count after HTU_TIMEOUT_USEC (for after a stop or a close). */
int htu_thread_count_settled(void);
int htu_thread_count_reaches(int want);

/* Poll `cond` every millisecond until it holds or timeout_usec passed; `ok` gets its value. */
#define HTU_WAIT_UNTIL(ok, cond, timeout_usec)                                                     \
	do {                                                                                       \
		hako_time_t htu_deadline_ = hako_now_usec() + (timeout_usec);                      \
		while (!((ok) = !!(cond)) && hako_now_usec() < htu_deadline_) {                    \
			htu_sleep_usec(1000);                                                      \
		}                                                                                  \
	} while (0)

/* Checks inside forked children (cmocka assertions must not run there): print and _exit(1). */
#define HTU_CHECK(cond)                                                                            \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: child %d: check failed: %s\n", __FILE__, __LINE__, \
			        (int)getpid(), #cond);                                             \
			_exit(1);                                                                  \
		}                                                                                  \
	} while (0)
#define HTU_CHECK_RC(expr, want)                                                                   \
	do {                                                                                       \
		long long htu_got_ = (long long)(expr);                                            \
		long long htu_want_ = (long long)(want);                                           \
		if (htu_got_ != htu_want_) {                                                       \
			fprintf(stderr, "%s:%d: child %d: %s == %lld, expected %lld\n", __FILE__,  \
			        __LINE__, (int)getpid(), #expr, htu_got_, htu_want_);              \
			_exit(1);                                                                  \
		}                                                                                  \
	} while (0)

/* A generic asset process of the handle API, shared by the integration tests. It opens the
 * domain, registers `name`, then for ever: waits for an event, acks START / STOP / ERROR /
 * RESET, and after START steps with hako_member_step_wait until it returns non-zero. It leaves
 * when `quit` becomes non-zero (checked between events) and then unregisters. */
typedef struct htu_asset_stats {
	_Atomic int registered;   /* 1 once registered, -errno if registration failed */
	_Atomic int quit;         /* set by the test */
	_Atomic uint64_t steps;   /* steps done, over all runs */
	_Atomic int runs;         /* START events seen */
	_Atomic int resets;       /* RESET events seen */
	_Atomic int errors;       /* ERROR events seen */
	_Atomic int last_step_rc; /* what the last step wait returned when a run ended */
	_Atomic int step_intr;    /* runs that ended with HAKO_EINTR */
	_Atomic int wait_error;   /* the error that ended hako_member_wait_event (then _exit(3)) */
} htu_asset_stats_t;

typedef struct htu_asset_args {
	const char *domain;
	const char *name;
	hako_time_t delta_usec;
	htu_asset_stats_t *stats; /* in htu_shared_alloc memory */
} htu_asset_args_t;

/* The body of such a child: pass it to htu_fork with a htu_asset_args_t. */
void htu_asset_main(void *args);

#endif
