/* What the tests of hako-bridge --asset share (test_bridge_asset.c, test_bridge_stop.c): the
 * files of a test's folder, the daemon started as an asset of the test's domain with a control
 * socket, its statistics over that socket, and waits on the domain's state. Each test embeds a
 * bak_t in its fixture (bak_open, bak_close) and opens rx itself. */
#ifndef HAKO_TEST_BRIDGE_ASSET_KIT_H
#define HAKO_TEST_BRIDGE_ASSET_KIT_H

#include <sys/types.h>
#include <sys/un.h>

#include "hako/domain.h"
#include "hako/endpoint.h"

typedef struct bak {
	char dir[256];
	char dom_name[HAKO_NAME_MAX];
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char log[400];
	hako_domain_t *dom;
	hako_master_t *master; /* in this process, free-running (delta = Dmax = 1 ms) */
	hako_endpoint_t *rx;   /* the test's tcp server: the bridge's destination */
	pid_t pid;             /* the daemon */
	int ctl_fd;            /* its control socket (-1: none) */
	int starts;            /* daemons started: each gets its own log */
} bak_t;

/* A fresh folder, and a domain "t-<test>-<pid>" (4 assets, 8 channels, 1 MiB) with its master
 * running in this process. */
void bak_open(bak_t *k, const char *test);
/* After the test's own end of the daemon: the control socket, the children left, rx, the
 * master, the domain and the folder. */
void bak_close(bak_t *k);
/* src.json (over the test's src_comm.json), dst (a tcp client of rx_port) and container.json
 * with both, as node n1. */
void bak_write_endpoints(bak_t *k, unsigned rx_port);
/* dir/name, in one of 4 static buffers (so that a call can take two). */
const char *bak_path(bak_t *k, const char *name);
/* Write the formatted text to dir/name. */
void bak_put(bak_t *k, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* name.json and name_comm.json: a tcp endpoint (server on port, or client of it) with
 * cache.json and pdudef.json of the folder. */
void bak_write_tcp_endpoint(bak_t *k, const char *name, int server, unsigned port);
/* Wait for `what` in the daemon's log. Fails if the daemon exits first. */
void bak_wait_log(bak_t *k, const char *what);
/* Start hako-bridge (tool) on dir/bridge.json as node n1 and asset "bridge" of the domain,
 * with env ("NAME=value", or NULL) set for it alone; wait for its line `ready`, its control
 * socket and its tcp destination's connection to rx. */
void bak_start_daemon(bak_t *k, const char *tool, const char *ready, const char *env);
/* "stats" over the control socket: the answer up to its "ok" line. */
const char *bak_ctl_stats(bak_t *k);
/* Wait until the domain is in state; fails with the reason and the daemon's log if not. */
void bak_expect_state(bak_t *k, int state);

#endif
