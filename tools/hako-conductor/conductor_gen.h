/* hako-conductor gen: one federation file (Hakoniwa's eu-input form) into every node's files
 * (docs/conductor.md, "Generating a federation"). Internal to the tool; the test of the
 * generator links the same objects.
 *
 * Loading reads the eu-input with the config walker (file:line:column errors, warnings at their
 * place for what hako accepts and does not use) into a model: the nodes (one server, its
 * clients), the PDU groups with the nodes that may write each and the nodes it goes to, and the
 * execution units with the node each is placed on. Writing turns the model into files under a
 * folder, one sub-folder per node.
 *
 * Mode "rd" (RD-Full, docs/rd.md): every placed unit that writes a group is an RD execution unit
 * (EU) that runs on each of its candidate client nodes, the owner and the standbys; the clients
 * are the RD nodes 1..N (their node index), and one RD config goes into every node's folder. */
#ifndef HAKOI_CONDUCTOR_GEN_H
#define HAKOI_CONDUCTOR_GEN_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "hako/conductor.h"
#include "hako/error.h"
#include "hako/pdudef.h"
#include "hako/rd.h"
#include "hako_cli.h"

#define HAKOI_GEN_DEFAULT_BASE_PORT 54011 /* Hakoniwa's generated samples start there */
#define HAKOI_GEN_MAX_NODES         (HAKO_CONDUCTOR_MAX_CLIENTS + 1)
#define HAKOI_GEN_NAME_MAX          64                /* units: they name processes and logs */
#define HAKOI_GEN_RD_FILE           "rd.json"         /* each node's RD config (mode "rd") */
#define HAKOI_GEN_FEDERATION_FILE   "federation.json" /* beside the nodes' folders */
#define HAKOI_GEN_MAX_EUS           64                /* mode "rd": the EUs gen writes */

/* A warning, formatted as "file:line:column: path: what". */
typedef void (*hakoi_gen_warn_fn)(void *user, const char *line);

typedef struct hakoi_gen_options {
	int base_port;           /* > 0: instead of comm_defaults.tcp.base_port */
	long long stop_at_usec;  /* > 0: the server's launch file stops the federation there */
	double real_time_factor; /* of every node's launch file */
	const char *const *path; /* "path" of every launch file (absolute or relative to it) */
	size_t path_count;
	hakoi_gen_warn_fn warn; /* NULL: warnings are dropped */
	void *warn_user;
} hakoi_gen_options_t;

typedef struct hakoi_gen_node {
	char id[HAKO_CONDUCTOR_ID_MAX];
	int server;
	char server_node[HAKO_CONDUCTOR_ID_MAX]; /* client: its pair's server_node_id */
	char address[64];                        /* IPv4 or IPv6 literal */
	int port;     /* client: the tcp port of its link to the server */
	int listens;  /* client: it is the tcp server of its link */
	int executes; /* listed in execution_nodes */
} hakoi_gen_node_t;

typedef struct hakoi_gen_key {
	char robot[HAKO_NAME_MAX];
	char pdu[HAKO_NAME_MAX];
} hakoi_gen_key_t;

typedef struct hakoi_gen_group {
	char id[HAKO_NAME_MAX];
	char policy[HAKO_NAME_MAX]; /* a transfer policy id (gen_policy) */
	hakoi_gen_key_t *keys;
	size_t key_count;
	int writer; /* node index (of an EU: its initial owner); -1: no placed unit writes it */
	int eu;     /* the EU that writes it (index in eus); -1: none */
	unsigned char src[HAKOI_GEN_MAX_NODES];  /* node i's units may write it: the writer, or
	                                            every candidate of its EU */
	unsigned char read[HAKOI_GEN_MAX_NODES]; /* a unit running on node i reads it */
	unsigned char dest[HAKOI_GEN_MAX_NODES]; /* it is delivered to node i's domain */
} hakoi_gen_group_t;

typedef struct hakoi_gen_unit {
	char name[HAKOI_GEN_NAME_MAX];
	char type[HAKO_NAME_MAX]; /* "" for a unit given as a bare name */
	char *command;            /* hako's own: NULL = not launched */
	char **args;
	size_t arg_count;
	char asset[HAKO_NAME_MAX]; /* awaited by the launch; default the unit's name */
	int node;                  /* -1: not placed */
	size_t index;              /* in execution_units, for messages */
	unsigned char *writes;     /* per group */
	unsigned char *reads;
	/* mode "rd": the nodes that may own it (node indexes, which are the RD node ids) */
	size_t candidate_count; /* 0: not given */
	int candidates[HAKOI_GEN_MAX_NODES];
	int eu; /* index in eus; -1: not an execution unit */
} hakoi_gen_unit_t;

/* An RD execution unit (mode "rd"): a placed unit that writes groups, all of one robot. */
typedef struct hakoi_gen_eu {
	size_t unit; /* index in units */
	char robot[HAKO_NAME_MAX];
	size_t write_count;
	char writes[HAKO_RD_MAX_PDUS][HAKO_NAME_MAX];
	char status[HAKO_NAME_MAX];  /* rd_status_<unit>, added to the robot by gen */
	char context[HAKO_NAME_MAX]; /* rd_context_<unit> */
} hakoi_gen_eu_t;

typedef struct hakoi_gen {
	char input[512];
	char input_dir[512];
	size_t node_count; /* node 0 is the server */
	hakoi_gen_node_t nodes[HAKOI_GEN_MAX_NODES];
	int base_port;
	int client_initiates; /* comm_defaults.tcp.connection_initiator */
	/* conductor_defaults, as every node's conductor file has them */
	long long delta_usec, max_delay_usec, real_sleep_msec, interval_usec;
	int publish_mode; /* hako_conductor_publish_t */
	int publish_mode_set, interval_set, real_sleep_set;
	long long heartbeat_ms, peer_timeout_ms; /* 0: not given */
	int on_client_loss;                      /* -1: not given */
	hako_pdudef_t *pdudef;                   /* NULL: no PDUs declared */
	char pdudef_name[128];                   /* the file name each node's copy gets */
	size_t group_count;
	hakoi_gen_group_t *groups;
	size_t unit_count;
	hakoi_gen_unit_t *units;
	/* mode "rd" */
	int rd;                     /* the mode is "rd" */
	long long rd_timeout_usec;  /* rd.handoff_timeout_usec */
	long long rd_context_bytes; /* rd.max_context_bytes */
	json_t *rd_trigger;         /* rd.trigger as given, copied into the RD config */
	char rd_trigger_type[16];   /* "manual", "boundary" or "timetable" */
	size_t eu_count;
	hakoi_gen_eu_t eus[HAKOI_GEN_MAX_EUS];
	hakoi_gen_options_t opt;
} hakoi_gen_t;

/* Load and check an eu-input file. 0, or an error in err (file:line:column) and *out NULL. */
int hakoi_gen_load(const char *path, const hakoi_gen_options_t *opt, hakoi_gen_t **out,
                   hako_error_t *err);
void hakoi_gen_free(hakoi_gen_t *g);

/* What was loaded, one item a line (the data-driven tests compare it). */
void hakoi_gen_dump(const hakoi_gen_t *g, FILE *out);

/* Write every file under dir (created if missing). 0, or an error naming the file. *count, if
 * not NULL, receives how many files were written. */
int hakoi_gen_write(const hakoi_gen_t *g, const char *dir, size_t *count, hako_error_t *err);

/* The "gen" command of hako-conductor. */
int hakoi_gen_command(const hako_cli_command_t *cmd, int argc, char **argv);

#endif
