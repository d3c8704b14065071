/* The keys of hako-launch's files (docs/hako-launch.md) that hako-conductor gen writes
 * (tools/hako-conductor/gen_write.c) and hako-launch reads (the tables of
 * tools/hako-launch/launch_config_*.c): one spelling for the writer and the reader, so that a key
 * renamed here is renamed in both. The reader knows more keys than these; those gen does not
 * write stay in its tables. test/conductor/gen loads every file gen writes with the reader, and
 * fails when a case's files hold a key that is not here or when a key here is written by no
 * case (a key added here goes into its launch_keys too). Header only: target
 * hako_launch_keys. */
#ifndef HAKOI_LAUNCH_KEYS_H
#define HAKOI_LAUNCH_KEYS_H

/* ---- a launch file: its top level ---- */

/* The folder of the logs (hako-launch.log, <process>.log), relative to where hako-launch runs;
 * a federation file has it too. */
#define HAKOI_LAUNCH_KEY_LOG_DIR "log_dir"
/* Folders where a command without a '/' is looked for (after --path, before $PATH), relative to
 * the launch file. */
#define HAKOI_LAUNCH_KEY_PATH "path"
/* The clock of the launch's domain: an object of the "conductor" keys below. */
#define HAKOI_LAUNCH_KEY_CONDUCTOR "conductor"
/* What runs: an array of processes, each an object of the process keys below. */
#define HAKOI_LAUNCH_KEY_PROCESSES "processes"

/* ---- "conductor" ---- */

/* The node's conductor file, relative to the launch file: the launch is a node of a federation,
 * whose step and Dmax that file gives. */
#define HAKOI_LAUNCH_KEY_CONDUCTOR_FILE "federation"
/* World time against wall time: 1 is real time, 0 as fast as possible. */
#define HAKOI_LAUNCH_KEY_REAL_TIME_FACTOR "real_time_factor"
/* The world time (microseconds) the run stops at; 0: none. A server's only, in a federation. */
#define HAKOI_LAUNCH_KEY_STOP_AT_USEC "stop_at_usec"

/* ---- a process: an element of "processes" ---- */

/* Its name, which names its log file too. */
#define HAKOI_LAUNCH_KEY_PROC_NAME "name"
/* The program: with a '/', relative to the launch file; else looked for on the search path. */
#define HAKOI_LAUNCH_KEY_PROC_COMMAND "command"
/* Its arguments: an array of strings, ${NAME} expanded. */
#define HAKOI_LAUNCH_KEY_PROC_ARGS "args"
/* Its environment on top of hako-launch's: an object of name: value, ${NAME} expanded. */
#define HAKOI_LAUNCH_KEY_PROC_ENV "env"
/* What hako-launch waits for before it starts the next process: an object of one of the two
 * keys below (and timeout_ms). */
#define HAKOI_LAUNCH_KEY_PROC_WAIT_FOR "wait_for"
/* In "wait_for": the name of an asset the process registers in the domain. */
#define HAKOI_LAUNCH_KEY_WAIT_ASSET "asset"
/* In "wait_for": a text that a line of the process's output holds once it is ready. */
#define HAKOI_LAUNCH_KEY_WAIT_LOG "log"

/* ---- a federation file: its top level (and HAKOI_LAUNCH_KEY_LOG_DIR) ---- */

/* The federation: an object of the key below. A file with this key is a federation file. */
#define HAKOI_LAUNCH_KEY_FEDERATION "federation"
/* In "federation": the nodes' launch files, relative to the federation file; each node runs
 * in a hako-launch of its own. */
#define HAKOI_LAUNCH_KEY_NODES "nodes"

#endif
