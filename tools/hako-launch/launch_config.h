/* The launch file of hako-launch (docs/hako-launch.md): loaded, checked and resolved (variables
 * expanded, commands found, paths made absolute) in one go, so that a broken file is refused
 * before anything starts. */
#ifndef HAKOI_LAUNCH_CONFIG_H
#define HAKOI_LAUNCH_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "hako/conductor.h"
#include "hako/domain.h"
#include "hako/error.h"

#define HAKOI_LAUNCH_PROC_NAME_MAX     64 /* also the name of its log file */
#define HAKOI_LAUNCH_DEFAULT_TIMEOUT   10000
#define HAKOI_LAUNCH_DEFAULT_GRACE     5000
#define HAKOI_LAUNCH_DEFAULT_RESTART   3
#define HAKOI_LAUNCH_DEFAULT_START     60000 /* a federation node: joins, or the start */
#define HAKOI_LAUNCH_DEFAULT_FED_GRACE 30000

typedef enum hakoi_launch_wait {
	HAKOI_LAUNCH_WAIT_NOTHING = 0,
	HAKOI_LAUNCH_WAIT_ASSET = 1, /* until an asset of that name is registered in the domain */
	HAKOI_LAUNCH_WAIT_LOG = 2,   /* until a line of its output holds a substring */
} hakoi_launch_wait_t;

typedef enum hakoi_launch_phase {
	HAKOI_LAUNCH_PHASE_RUN = 0,   /* started before the simulation, stopped with it */
	HAKOI_LAUNCH_PHASE_AFTER = 1, /* run to completion after the simulation stopped */
} hakoi_launch_phase_t;

typedef struct hakoi_launch_env {
	char *key;
	char *value; /* expanded; NULL: unset it (Hakoniwa's env "unset") */
} hakoi_launch_env_t;

typedef struct hakoi_launch_proc {
	char name[HAKOI_LAUNCH_PROC_NAME_MAX];
	char *command; /* as written, expanded */
	char *exe;     /* the file that runs: an absolute path */
	char **args;   /* expanded */
	size_t arg_count;
	/* "domain_needs": arguments that make the command print what it needs of the domain
	 * (launch_size.c); NULL = none */
	char **needs_args;
	size_t needs_count;
	char **argv; /* command, then the args (borrowed from them); NULL-terminated */
	size_t argc; /* entries before the NULL */
	hakoi_launch_env_t *env;
	size_t env_count;
	char *cwd; /* absolute; NULL = the current directory of hako-launch */
	hakoi_launch_wait_t wait_for;
	char *wait_what; /* asset name or log substring */
	long long timeout_ms;
	int restart_on_failure;
	int continue_on_failure; /* "on_failure": "continue": its failure is reported, the run goes
	                            on */
	int max_restarts;
	int max_restarts_set; /* given in the file */
	hakoi_launch_phase_t phase;
	int echo;
	/* its HAKO_DOMAIN; NULL = the launch's (a federation's nodes have their own) */
	char *domain;
	long long
	    delay_ms; /* after it started (and is ready): wait this long (Hakoniwa's delay_sec) */
	int viewer;   /* hako-viewer, started for "viewer": never awaited, its end never fatal */
	int recorder; /* hako-record, started for "record": the same */
} hakoi_launch_proc_t;

#define HAKOI_LAUNCH_VIEWER_PORT 8080

/* "viewer": hako-viewer started before the processes, on the launch's domain. */
typedef struct hakoi_launch_viewer {
	int enabled;
	long long port;           /* 0 = any free port */
	char *bind;               /* NULL = hako-viewer's (loopback) */
	char *pdudef;             /* absolute; NULL = none */
	char *rd;                 /* absolute; NULL = none */
	long long rate_hz;        /* 0 = hako-viewer's */
	hakoi_launch_proc_t proc; /* how it runs: name "viewer", its log viewer.log */
} hakoi_launch_viewer_t;

/* "record": hako-record started before the processes, its file under the log folder. */
typedef struct hakoi_launch_record {
	int enabled;
	char *file;   /* as given, relative to the log folder; NULL = record.mcap */
	char *pdudef; /* absolute; NULL = none */
	char **pdus;  /* --pdu */
	size_t pdu_count;
	char **robots; /* --robot */
	size_t robot_count;
	double rate_hz;           /* 0 = every write */
	char *asset;              /* NULL = a follower; else --asset NAME */
	hakoi_launch_proc_t proc; /* name "record", its log record.log */
} hakoi_launch_record_t;

struct hakoi_launch_config;

/* A node of a federation file: its own launch file, run by a hako-launch of its own. */
typedef struct hakoi_launch_node {
	char *file;                      /* absolute */
	char *domain;                    /* the domain it runs in */
	struct hakoi_launch_config *cfg; /* its launch file, loaded (checks and --check) */
} hakoi_launch_node_t;

typedef struct hakoi_launch_config {
	char *file;       /* as given */
	char *dir;        /* absolute folder of the file */
	char *domain;     /* from the file, else the caller's default */
	int domain_given; /* by the file */
	hako_master_config_t master;
	hako_time_t stop_at_usec;  /* 0 = none */
	char *core_config;         /* absolute, NULL = none */
	hako_domain_config_t core; /* defaults + environment, then core_config */
	int sized;                 /* core was grown to the processes' "domain_needs" */
	char *log_dir;             /* as written (relative to the current directory), expanded */
	char *log_dir_abs;
	char **path; /* absolute folders from "path" */
	size_t path_count;
	long long grace_ms;
	hakoi_launch_proc_t *procs;
	size_t proc_count;
	int procs_given;
	/* A federation node (conductor.federation): its conductor file, which gives the step and
	 * Dmax; NULL for a plain launch. */
	hako_conductor_config_t *federation;
	char *federation_file;      /* absolute */
	long long start_timeout_ms; /* 0 = wait for ever */
	char *trace_file;           /* conductor.trace: the node's drift samples, or NULL */
	/* A federation file: its nodes, each run as a child hako-launch (procs holds one process
	 * per node); 0 for a launch file. */
	char *prefix; /* of the nodes' domains: "<prefix>-<node id>" */
	hakoi_launch_node_t *nodes;
	size_t node_count;
	hakoi_launch_viewer_t viewer;
	hakoi_launch_record_t record;
	int hakoniwa;        /* the file is in Hakoniwa's launcher format (assets, defaults) */
	int hakoniwa_notify; /* ... with a "notify" (checked, not run) */
} hakoi_launch_config_t;

typedef struct hakoi_launch_options {
	const char *default_domain; /* when the file has no "domain" */
	const char *const *search;  /* --path folders, searched before "path" and $PATH */
	size_t search_count;
} hakoi_launch_options_t;

/* Load and check file: a launch file, or a federation file (its "federation" member; every node's
 * launch file is loaded and checked too). *out is NULL on failure and err says where and why
 * (HAKO_ECONFIG for a bad file, HAKO_ENOENT when it is missing, HAKO_ENOMEM). */
int hakoi_launch_load(const char *file, const hakoi_launch_options_t *opt,
                      hakoi_launch_config_t **out, hako_error_t *err);

/* Accepts NULL. */
void hakoi_launch_free(hakoi_launch_config_t *cfg);

/* The domain's size from the processes' "domain_needs" (launch_size.c): run each such query
 * once, add the needs up; without core_config, grow cfg->core to hold them (cfg->sized = 1);
 * with one, HAKO_ECONFIG (err says the numbers) if it is too small. 0 if nothing asks. */
int hakoi_launch_size(hakoi_launch_config_t *cfg, hako_error_t *err);

/* Everything that was loaded, one item a line (the data-driven tests compare it). */
void hakoi_launch_dump(const hakoi_launch_config_t *cfg, FILE *out);

#endif
