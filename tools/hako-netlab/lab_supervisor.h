/* A lab's supervisor (lab_supervisor.c): the process that makes a lab, keeps it and takes it
 * down; `run` is one, `up` starts one in the background. */
#ifndef LAB_SUPERVISOR_H
#define LAB_SUPERVISOR_H

#include "netlab.h"

typedef struct nl_sup_options {
	const char *name;    /* the lab's name */
	const char *labfile; /* for the state file */
	const nl_lab_t *lab;
	char **cmd;      /* run: the command (NULL-ended); NULL: until SIGTERM/SIGINT/SIGHUP */
	int ready_fd;    /* >= 0: "ok" is written there once the lab is up */
	int log_to_file; /* the supervisor's output goes to the lab's log (up) */
	pid_t tie_pid;   /* > 0: the lab also ends when this process does (up --while-pid) */
} nl_sup_options_t;

/* Make the lab, run the command (or wait for a signal), take the lab down. Returns the
 * command's exit status (0 without one), or -1 with why when the lab could not be made (then
 * nothing of it is left). */
int nl_supervise(const nl_sup_options_t *o, char *why, size_t whylen);

#endif
