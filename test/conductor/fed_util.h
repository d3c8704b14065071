/* A federation for the conductor tests: one server node and its clients, each a
 * `hako-conductor run` process with its own domain, an asset in each domain (a forked
 * htu_asset_main stepping 1 ms steps), optionally a hako-relay between the clients and the
 * server. Everything is a tracked child or a tracked domain of the test kit, so it is killed and
 * removed even when a test fails; ports come from the kernel (port 0) and domain names carry the
 * test's pid, so tests running at the same time never meet. */
#ifndef HAKO_FED_UTIL_H
#define HAKO_FED_UTIL_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "hako/domain.h"
#include "hako_test_util.h"
#include "relay_util.h"

#define FED_MAX_NODES 4
#define FED_WAIT_USEC 20000000 /* a bound for what must happen (loaded CI machines) */

/* The live checker for a whole run: a child that runs hako-conductor check --domains (1 s
 * each) back to back until fed_checker_end, so every instant of the run is sampled but the
 * few ms between two checks. */
typedef struct fed_checker {
	_Atomic int stop;
	_Atomic int checks;
	_Atomic int failed;
	_Atomic long long worst_sc, worst_cc; /* the largest drifts the checks saw, us */
	char failure[4096];                   /* the output of the first failed check */
} fed_checker_t;
typedef struct fed_node {
	char id[64]; /* node id: srv-01, cli-01, ... */
	char domain[HAKO_NAME_MAX];
	char config[512];
	char log[512];
	char trace[512];
	char extra[256];  /* more fields for its conductor file ("" or "\"k\": v, ...") */
	hako_time_t dmax; /* its file's Dmax (another one gives another config hash) */
	pid_t pid;        /* hako-conductor run */
	pid_t asset;
	htu_asset_stats_t *stats;
	hako_domain_t *dom; /* opened by the test once the node runs */
	char env[128];      /* "NAME=value" for its hako-conductor run ("" = none) */
	int starts;         /* how often it was started (log file names) */
} fed_node_t;

typedef struct fed {
	char name[32]; /* the scenario */
	char dir[256];
	int n; /* nodes; 0 is the server */
	fed_node_t node[FED_MAX_NODES];
	hako_time_t delta, dmax;
	int ctl_port, time_port;                /* where the server listens */
	char client_ctl[128], client_time[128]; /* where the clients connect */
	relay_t relay;
	int runs; /* tool runs (output file names) */
	fed_checker_t *checker;
	pid_t checker_pid;
	int passed; /* set by a test that got to its end: else teardown shows the logs */
} fed_t;

typedef struct fed_peer_row {
	char state[16];
	long long known, p50, p95, max, age_p50;
	unsigned long long garbage;
} fed_peer_row_t;

/* Every node's key pair and the public keys, in <dir>/keys (fed_init does it once; again after
 * a node's extra fields changed its id or keys_dir). */
int fed_keygen(fed_t *f);
/* Fill f for a server and nclients clients, with their keys; nothing runs yet. 0 or -1. */
int fed_init(fed_t *f, const char *name, int nclients, hako_time_t delta, hako_time_t dmax);
/* Start the server on free ports (new ones if another process took them meanwhile). With a
 * delay >= 0 a hako-relay (that delay and jitter) stands between the clients and the server.
 * Then the clients. 0 or -1 (why on stderr). */
int fed_start(fed_t *f, double relay_delay_ms, double relay_jitter_ms);
/* Start node i (again): its hako-conductor run, and open its domain. 0 or -1. */
int fed_start_node(fed_t *f, int i);
/* SIGINT node i and wait for it: 0 if it exited 0 (its log then has the final table). */
int fed_stop_node(fed_t *f, int i);
/* SIGKILL node i (its domain is left behind, as after a crash). */
void fed_kill_node(fed_t *f, int i);
/* An asset in node i's domain; waits until it registered. 0 or -1. */
int fed_start_asset(fed_t *f, int i);
void fed_kill_asset(fed_t *f, int i);
/* Tell node i's asset to leave (it unregisters): 0 if it exited 0. */
int fed_stop_asset(fed_t *f, int i);
/* Kill everything, remove the domains and files. */
void fed_teardown(fed_t *f);

/* Run a program (NULL-terminated argv) to completion: its exit code (-1 if it did not end in
 * time), its output in out (a path, kept under f->dir). */
int fed_run(fed_t *f, char *out, size_t outlen, const char *const *argv);
/* hako-cmd -d <node i's domain> verb [args]: its exit code; output file in out. */
int fed_hako_cmd(fed_t *f, int i, const char *verb, const char *arg, char *out, size_t outlen);
/* Start `hako-conductor check --domains <the live nodes'> --dmax-usec D --duration-ms ms` in the
 * background; fed_check_end waits for it: 0 if it exited 0 and said ok. */
pid_t fed_check_begin(fed_t *f, int ms, char *out, size_t outlen);
int fed_check_end(fed_t *f, pid_t pid, const char *out);
int fed_checker_begin(fed_t *f);
/* Stop it (after its current check): 0 if every check passed and at least one ran. */
int fed_checker_end(fed_t *f);

/* hako-conductor check --dmax-usec D over the traces of every node: 0 if ok. */
int fed_check_traces(fed_t *f, char *out, size_t outlen);

hako_time_t fed_world(fed_t *f, int i);
/* 1 if node i runs (started and not killed or stopped). */
int fed_live(fed_t *f, int i);
int fed_state(fed_t *f, int i);
/* 1 if every live node's domain is in that state. */
int fed_all_in(fed_t *f, int state);
/* 1 if node i's world cannot advance until a proxy's time moves: its assets caught up with
 * it, and one more step would put it more than Dmax ahead of a peer's known time. A fixed
 * point: only a message from a peer gets it out. */
int fed_stuck(fed_t *f, int i);
/* The note of the proxy "proxy:<peer>" in node i's domain into buf ("" if none); 0 if found. */
int fed_proxy_note(fed_t *f, int i, const char *peer, char *buf, size_t len);
/* 1 if node i's domain has the proxy "proxy:<peer>". */
int fed_has_proxy(fed_t *f, int i, const char *peer);
/* The row of `peer` in a drift table (hako-conductor status output, or a run's log): 0 or -1. */
int fed_peer_row(const char *table_file, const char *peer, fed_peer_row_t *row);
/* hako-conductor status -d <node i's domain>, then its row of peer: 0 or -1. */
int fed_status_row(fed_t *f, int i, const char *peer, fed_peer_row_t *row);

/* One consistent snapshot of every node's world time (the server's unchanged around the
 * reads of the others). */
void fed_snapshot(fed_t *f, hako_time_t *t);

#endif
