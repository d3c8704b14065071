/* The processes of a launch: started with their environment and a log, their output read and
 * echoed line by line, their exits reaped, restarts paced, and at the end every process group
 * signalled until nothing is left. hako-launch is the subreaper of what they start, so that no
 * grandchild outlives it.
 *
 * One thread does it all around poll(): the output pipes and a signalfd (SIGINT, SIGTERM,
 * SIGHUP, SIGCHLD), so that no signal handler runs and nothing is lost between two polls. */
#ifndef HAKOI_LAUNCH_SUPERVISE_H
#define HAKOI_LAUNCH_SUPERVISE_H

#include <stddef.h>
#include <sys/types.h>

#include "hako/domain.h"
#include "launch_config.h"

#define HAKOI_LAUNCH_LINE_BYTES 4096 /* longer output lines are echoed in pieces */

typedef struct hakoi_proc {
	const hakoi_launch_proc_t *cfg;
	pid_t pid;  /* of the running instance, 0 when none runs */
	pid_t pgid; /* its process group, kept after it exited: grandchildren may be left */
	int out_fd; /* read end of its stdout+stderr, -1 when closed */
	int log_fd;
	char line[HAKOI_LAUNCH_LINE_BYTES];
	size_t line_len;
	char last[512];   /* its last line of output (a federation node's outcome) */
	int started;      /* ever started */
	int exited;       /* the last instance exited */
	int exit_pending; /* ... and the run has not looked at it yet */
	int status;       /* its wait status */
	int signalled;    /* we sent it SIGTERM or SIGKILL */
	int restarts;
	hako_time_t started_at;
	hako_time_t restart_at; /* 0 = no restart pending */
	int seen_log;           /* its wait_for log text was seen since it started */
	int owns_asset;         /* an asset of the domain had its pid (set by the run) */
	int color;
	/* Each line of its output, as it comes (NULL: none): what the run reads in it. */
	void (*on_line)(struct hakoi_proc *p, const char *line, size_t len);
} hakoi_proc_t;

typedef struct hakoi_sup {
	const hakoi_launch_config_t *cfg;
	hakoi_proc_t *procs; /* one per process of cfg, in its order, then its viewer if any */
	int nprocs;
	int sigfd;
	int interrupted; /* the first stop signal, 0 before */
	int signals;     /* how many came: the second hurries, the third kills */
} hakoi_sup_t;

/* The processes of cfg (none started), the stop signals read from a signalfd (the mask is
 * inherited by threads started later, such as the master's), and hako-launch made the
 * subreaper of their descendants. 0, or -1 with why. */
int hakoi_sup_open(hakoi_sup_t *s, const hakoi_launch_config_t *cfg, char *why, size_t len);
/* SIGKILL whatever is left in the processes' groups (daemons of a child) and reap it. */
void hakoi_sup_sweep(hakoi_sup_t *s);
/* Close every descriptor and free the table. */
void hakoi_sup_close(hakoi_sup_t *s);

/* The environment pc runs in: ours, minus what the launch sets, plus HAKO_DOMAIN,
 * HAKO_LAUNCH_DIR, HAKO_LAUNCH_LOG_DIR and pc's "env". Built before a fork (the child of a
 * threaded process may not allocate); NULL when out of memory. */
char **hakoi_launch_env(const hakoi_launch_config_t *cfg, const hakoi_launch_proc_t *pc);
void hakoi_launch_env_free(char **env);

/* Start (or restart) p: its log opened (appended to on a restart), stdin from /dev/null,
 * stdout and stderr to a pipe, its own process group. 0, or -1 with why. */
int hakoi_sup_spawn(hakoi_sup_t *s, hakoi_proc_t *p, char *why, size_t len);

/* Wait up to timeout_usec for output, signals and exits, and handle them: output to the logs
 * and the console, a stop signal counted in interrupted/signals, an exit in exit_pending. */
void hakoi_sup_pump(hakoi_sup_t *s, hako_time_t timeout_usec);
/* Read what p's pipe holds now; at its end, close it and echo the last partial line. */
void hakoi_sup_drain(hakoi_proc_t *p);

static inline int hakoi_sup_running(const hakoi_proc_t *p)
{
	return p->pid > 0;
}

/* The process whose group leader is pid, or NULL. */
hakoi_proc_t *hakoi_sup_find(hakoi_sup_t *s, pid_t pid);

/* Signal p's process group. */
void hakoi_sup_signal(hakoi_proc_t *p, int sig);

/* SIGTERM the groups of the processes still running (those of phase "after" only, or all
 * others), SIGKILL them after 2 s (or at the third stop signal), and reap them. */
void hakoi_sup_terminate(hakoi_sup_t *s, int only_after);

/* Restarts: allowed while p has restarts left; the wait before restart n doubles from 250 ms up
 * to 4 s. */
int hakoi_sup_can_restart(const hakoi_proc_t *p);
hako_time_t hakoi_sup_backoff(int restarts);

#endif
