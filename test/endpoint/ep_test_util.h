/* Shared by the in-process endpoint tests (test_udp.c, test_ws.c, test_tcp.c): a temp folder for
 * the endpoints' config files, endpoints opened from comm JSON written there, endpoints remembered
 * for a test's teardown, clocks, keys and polling waits. One process runs one test at a time, so
 * the folder and the remembered endpoints are process globals. Failures are cmocka assertions. */
#ifndef HAKO_EP_TEST_UTIL_H
#define HAKO_EP_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "hako/endpoint.h"
#include "hako_test_util.h"

#define EPT_WAIT_MS 10000
#define EPT_MAX_EPS 8

/* The temp folder: created by ept_setup_dir ("/tmp/<prefix>_XXXXXX"), removed (with all below it)
 * by ept_remove_dir; 0 / -1, as a cmocka setup / teardown returns. */
int ept_setup_dir(const char *prefix);
int ept_remove_dir(void);
const char *ept_dir(void);
/* cmocka group setup / teardown: ept_setup_dir("hako_ep_test") / ept_remove_dir(). */
int ept_group_setup(void **state);
int ept_group_teardown(void **state);
/* ept_group_setup for a test that holds many sockets (both ends of each connection): the soft
 * limit of open files raised to 4096 (or the hard limit) first. */
int ept_group_setup_many_fds(void **state);

/* <dir>/<name> := text. */
void ept_write_file(const char *name, const char *text);

/* comm with LPORT replaced by local_port (<= 0: 0, any free port) and RPORT by remote_port. */
void ept_put_ports(const char *comm, int local_port, int remote_port, char *out, size_t cap);

/* Write <name>.json, <name>.cache.json (a queue of depth) and <name>.comm.json (comm), load
 * <name>.json and open it (not started, not remembered). An error is printed to stderr. */
int ept_open(const char *name, const char *comm, int depth, hako_endpoint_t **out,
             hako_error_t *err);

/* ept_open with the ports put in (ept_put_ports) and depth 64; an opened endpoint is remembered. */
int ept_open_ports(const char *name, const char *comm, int local_port, int remote_port,
                   hako_endpoint_t **out, hako_error_t *err);

/* ept_open_ports and start, both asserted. */
hako_endpoint_t *ept_must_open(const char *name, const char *comm, int local_port, int remote_port);

/* Remember ep for ept_close_all; ept_close forgets and closes it. */
void ept_track(hako_endpoint_t *ep);
void ept_close(hako_endpoint_t *ep);
/* A cmocka teardown: closes every remembered endpoint, the last remembered first. */
int ept_close_all(void **state);

uint64_t ept_now_ms(void);
void ept_sleep_ms(unsigned ms);
hako_pdu_key_t ept_key(const char *robot, int32_t ch);
hako_endpoint_stats_t ept_stats(const hako_endpoint_t *ep);

/* hako_endpoint_recv, polled up to EPT_WAIT_MS while it says HAKO_EAGAIN. */
int ept_recv_wait(hako_endpoint_t *ep, const hako_pdu_key_t *k, void *buf, size_t cap, size_t *len);

/* Poll cond (an expression) for up to EPT_WAIT_MS (HTU_WAIT_UNTIL); asserts nothing. */
#define EPT_WAIT_UNTIL(cond)                                                                       \
	do {                                                                                       \
		int ept_ok_;                                                                       \
		HTU_WAIT_UNTIL(ept_ok_, cond, (hako_time_t)EPT_WAIT_MS * 1000);                    \
		(void)ept_ok_;                                                                     \
	} while (0)

/* The same, then assert it. */
#define EPT_WAIT_FOR(cond)                                                                         \
	do {                                                                                       \
		EPT_WAIT_UNTIL(cond);                                                              \
		assert_true(cond);                                                                 \
	} while (0)

#endif
