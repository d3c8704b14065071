/* hako-netlab's pieces, shared by its files: the lab file (lab_config.c), the nodes' namespaces
 * (lab_ns.c), the lab's state directory (lab_state.c). docs/netlab.md describes the lab. */
#ifndef NETLAB_H
#define NETLAB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hako/error.h"

#define NL_NAME_MAX   32 /* lab and node names, with the NUL */
#define NL_MAX_NODES  64
#define NL_SWITCH     "switch" /* the node that holds the bridge: a reserved name */
#define NL_BRIDGE     "br0"
#define NL_STATE_ROOT "/run/hako-netlab"

typedef struct nl_node {
	char name[NL_NAME_MAX];
	char address[64]; /* as the file gives it */
	uint32_t ip;      /* host order */
} nl_node_t;

typedef struct nl_lab {
	char subnet_text[64];
	char switch_text[64];
	uint32_t net, mask, sw_ip; /* host order */
	int prefix;
	nl_node_t *nodes;
	size_t nnodes;
} nl_lab_t;

/* ---- lab_config.c ---- */

/* Load a lab file: hako's ({"subnet", "switch", "nodes": [{"name", "address"}]}) or a
 * node-ip-map.json ({"nodes": {"name": "ip"}}). renumber (NULL: none) is a CIDR in which the nodes
 * are numbered .11, .12, ... in file order instead of the file's addresses. 0 or an error in err
 * (file:line:column: path: what). */
int nl_lab_load(const char *file, const char *renumber, nl_lab_t *lab, hako_error_t *err);
void nl_lab_free(nl_lab_t *lab);

/* "a.b.c.d" of ip (host order) into buf (16 bytes). */
const char *nl_ip_text(uint32_t ip, char buf[16]);
/* A name is 1..31 of [A-Za-z0-9_.-], not starting with '.' or '-'. */
int nl_name_ok(const char *name);

/* ---- lab_state.c: /run/hako-netlab/NAME/{lock,state,log} ---- */

/* One node as the state file records it (the switch is a node named NL_SWITCH). */
typedef struct nl_live_node {
	char name[NL_NAME_MAX];
	pid_t pid;                /* its holder (pid 1 of its pid namespace), in the host's */
	unsigned long long start; /* the holder's start time (/proc/PID/stat field 22) */
	char cidr[32];
	char port[16]; /* its port on the bridge, in the switch's namespace ("-" for the switch) */
	int dead;
} nl_live_node_t;

typedef struct nl_state {
	char name[NL_NAME_MAX];
	pid_t supervisor;
	unsigned long long supervisor_start;
	char labfile[512];
	char subnet[64];
	int netem;
	nl_live_node_t nodes[NL_MAX_NODES + 1];
	size_t nnodes;
} nl_state_t;

const char *nl_state_root(void); /* $HAKO_NETLAB_DIR, else NL_STATE_ROOT */
void nl_state_path(const char *lab, const char *file, char *buf, size_t len);
int nl_state_write(const nl_state_t *st);
/* 0, or -1 with a message in why (no such lab, unreadable). */
int nl_state_read(const char *lab, nl_state_t *st, char *why, size_t whylen);
const nl_live_node_t *nl_state_node(const nl_state_t *st, const char *name);

/* The start time of pid, 0 if it is gone (or a zombie). */
unsigned long long nl_proc_start(pid_t pid);
/* pid is alive and is the process that started at start. */
int nl_proc_is(pid_t pid, unsigned long long start);

/* Take the root's lock (creating the root), for making and sweeping labs. fd or -1 (errno). */
int nl_root_lock(void);
/* Remove every lab whose supervisor is gone (its lock is free): kill what it recorded, remove
 * its directory. Called under the root's lock. Returns the number removed. */
int nl_sweep(int verbose);
/* Remove the directory of lab (its files, then itself). */
void nl_state_remove(const char *lab);

/* ---- lab_ns.c ---- */

/* Start a holder: a child in new network, mount, pid, IPC and UTS namespaces, that mounts a
 * fresh tmpfs on /dev/shm and a fresh /proc, names itself hostname, sets lo up, then only reaps
 * what is reparented to it. It dies with its parent (PR_SET_PDEATHSIG). life: a pipe whose write
 * end only the caller holds (so a holder started as the caller died sees it at EOF). Returns
 * its pid, or -1 with the reason in why. */
pid_t nl_holder_start(const char *hostname, const int life[2], char *why, size_t whylen);

/* Run argv with the network namespace of pid (0: the caller's), stdin from in_text (NULL:
 * /dev/null), stdout into out (NULL: /dev/null; out_len bytes, NUL-ended), stderr inherited unless
 * quiet. Returns the exit status (0..255, 128+signal), or -1 (errno) if it did not start. */
int nl_run_in(pid_t pid, char *const argv[], const char *in_text, char *out, size_t out_len,
              int quiet);

/* Enter every namespace of pid (net, ipc, uts, pid for the children, mount last), keeping the
 * working directory when it exists there. 0 or -1 with why. */
int nl_enter(pid_t pid, char *why, size_t whylen);

/* The inode of /proc/PID/ns/KIND, 0 if unknown. */
unsigned long long nl_ns_inode(pid_t pid, const char *kind);
/* How many processes are alive in the namespace of kind with that inode. */
int nl_ns_count(const char *kind, unsigned long long ino);

#endif
