/* What endpoint_throughput and endpoint_latency share: a temporary folder for the endpoint
 * config files, cleanup at exit and on SIGINT/SIGTERM (child killed and reaped, files and folder
 * removed, the private shm domain removed), a forked child with a pair of message pipes, and the
 * "link" between the two processes: one endpoint per side for tcp, websocket and shm, two per side
 * for udp (an "in" endpoint bound to a kernel-chosen port, an "out" endpoint sending to the
 * peer's).
 */
#ifndef HAKO_BENCH_ENDPOINT_COMMON_H
#define HAKO_BENCH_ENDPOINT_COMMON_H

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench_common.h"
#include "hako/domain.h"
#include "hako/endpoint.h"

/* ---- process-wide state and cleanup ---- */

/* Make the temporary folder /tmp/hako-<tag>-<pid>-XXXXXX, install the SIGINT/SIGTERM handlers
 * and the atexit cleanup. prog: the benchmark's name in messages. Exits with a message on
 * failure. */
void epb_init(const char *tag, const char *prog);
/* The folder, and "<folder>/<name>" (tracked: removed by the cleanup). */
const char *epb_dir(void);
const char *epb_file(const char *name, char *buf, size_t cap);
/* Write text to <folder>/<name>. 0, or -1 (errno). */
int epb_write_file(const char *name, const char *text);
/* Remember the private domain (removed by the cleanup). "" forgets it. */
void epb_set_domain(const char *name);
/* Kill and reap the child (if any), remove the domain, the files and the folder. Idempotent;
 * only the first call of a process (never a forked child) does anything. */
void epb_cleanup(void);

/* ---- the command line and the report ---- */

/* After bench_parse_opts: --quick means payloads 64 B and 64 KiB (unless --payloads) and one
 * round; then 1 <= rounds <= max_rounds, count >= 0 (else usage on stderr) and every payload
 * >= 8 bytes (else a message naming `stamp`, what the first 8 bytes hold). *sum: the payloads
 * rounded up to pages, added. Returns -1 to go on, else the exit code (2). */
int epb_check_opts(bench_opts_t *o, long max_rounds, const char *stamp, void (*usage)(FILE *out),
                   size_t *sum);

/* Create the private domain bench-<tag>-<pid> (name: its name) for shm variants whose payloads
 * add up to payload_sum (two channels each, two buffers a channel) and remember it for the
 * cleanup. NULL, after "<prog>: skipped: shm: ..." on stderr, if it cannot be made. */
hako_domain_t *epb_create_domain(const char *tag, size_t payload_sum, char *name, size_t cap);

/* A variant's run failed with r (HAKO_ENOTSUP: the variant cannot run here: it is disabled for
 * the rest of the benchmark, the reason kept in disabled_why; else only this round's run is
 * dropped). The message goes to stderr. */
void epb_run_failed(int r, const char *variant, const char *size, const char *why, int *disabled,
                    char *disabled_why, size_t cap);
/* "# skipped <variant>: <why>" on stdout for every enabled variant that was disabled. */
void epb_print_skipped(const char *const *names, int n, const int *enabled, const int *disabled,
                       const char (*disabled_why)[600]);
/* A '#' line on stdout, and the same on stderr after "<prog>: " (ratios and goals). */
void epb_both(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the child ---- */

/* Messages on the pipes: a code ('R' ready, 'W' warm-up done, 'D' done, 'Q' quit, 'E' error,
 * 'P' port), a number (a port), a string (an error or a zmq endpoint). */
typedef struct epb_msg {
	int32_t code;
	uint32_t value;
	char text[240];
} epb_msg_t;

typedef struct epb_child {
	pid_t pid;
	int to_child;   /* parent writes */
	int from_child; /* parent reads */
} epb_child_t;

/* Fork a child that runs fn(arg, rfd, wfd) and _exit(0)s when it returns (it may _exit itself).
 * cpu >= 0: pin the child to that CPU. The child dies with the parent (PR_SET_PDEATHSIG). The
 * cleanup kills it if the parent stops early. 0, or -1. */
int epb_spawn(epb_child_t *c, int cpu, void (*fn)(void *arg, int rfd, int wfd), void *arg);
/* Tell the child to quit ('Q'), close the pipes, wait up to timeout_ms for it to exit, then
 * SIGKILL it. 0 if it exited with status 0, else -1 with the reason in why. */
int epb_reap(epb_child_t *c, int timeout_ms, char *why, size_t cap);

int epb_send_msg(int fd, int code, uint32_t value, const char *text);
/* 0, -1 on EOF / error, -2 on timeout (timeout_ms < 0: forever). */
int epb_recv_msg(int fd, epb_msg_t *m, int timeout_ms);

/* The child's error text goes to buf (shared memory the parent reads); NULL: a local buffer. */
void epb_set_child_error(char *buf, size_t cap);
/* In the child: the error into that buffer, sent to the parent as 'E', then _exit(4). */
void epb_child_fail(int wfd, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* vsnprintf(why, cap, fmt, ...) and return code. */
int epb_fail(char *why, size_t cap, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A zmq socket of type bound to / connected to ep, send and receive timeouts timeout_ms, linger
 * 1 s, in a context of its own (*ctx). NULL with the reason in why. */
void *epb_zmq_open(int type, const char *ep, int bind, int timeout_ms, char *why, size_t cap,
                   void **ctx);

/* Sleep this many microseconds. */
void epb_sleep_us(long us);

/* ---- the link between the two processes ---- */

typedef enum epb_proto {
	EPB_TCP = 0,
	EPB_UDP = 1,
	EPB_WS = 2,
	EPB_SHM = 3,
} epb_proto_t;

/* One PDU of the link: its name in the pdudef (shm), channel id and size. */
typedef struct epb_pdu {
	const char *name;
	int32_t channel_id;
	uint32_t size;
} epb_pdu_t;

typedef struct epb_link_opts {
	epb_proto_t proto;
	const char *robot; /* the key's robot name, e.g. "bench-65536" */
	epb_pdu_t send;    /* what this side sends */
	epb_pdu_t recv;    /* what this side receives (shm: notify_on_recv) */
	uint32_t send_queue_depth;
	uint32_t max_body_bytes;
	hako_domain_t *dom; /* shm */
} epb_link_opts_t;

typedef struct epb_link {
	epb_proto_t proto;
	hako_endpoint_t *rx; /* subscribe here */
	hako_endpoint_t *tx; /* send here (== rx except udp) */
	hako_pdu_key_t send_key;
	hako_pdu_key_t recv_key;
} epb_link_t;

/* Parent, first: open and start the side the child connects to (tcp / websocket server bound to
 * 127.0.0.1 on a port the kernel picks, udp "in" endpoint, shm endpoint); *port = its port
 * (0 for shm). tag names the config files ("p"). 0, or a hako error with the reason in why. */
int epb_link_parent_open(epb_link_t *l, const epb_link_opts_t *o, uint16_t *port, char *why,
                         size_t cap);
/* Child: open and start its side, given the parent's port; *port = the child's udp port. */
int epb_link_child_open(epb_link_t *l, const epb_link_opts_t *o, uint16_t parent_port,
                        uint16_t *port, char *why, size_t cap);
/* Parent, second: udp opens the "out" endpoint to the child's port; tcp / websocket wait until
 * the child is connected (timeout_ms). */
int epb_link_parent_connect(epb_link_t *l, const epb_link_opts_t *o, uint16_t child_port,
                            int timeout_ms, char *why, size_t cap);
void epb_link_close(epb_link_t *l);
/* shm-loan variants: send a PDU of len bytes produced in place in a buffer lent by
 * hako_endpoint_loan (the channel's own buffer for shm). The producer writes every byte, as a
 * simulator rendering an image into the buffer would: the stamp in the first 8 bytes, the
 * stamp's low byte in the rest (memset). So the loaned path pays a full pass over the PDU,
 * which the plain variants, sending a ready buffer, do not: a conservative comparison. */
int epb_send_produced(const epb_link_t *l, uint64_t stamp, size_t len);
/* Copy data (a received PDU) into a loaned buffer and commit it: the echo of the loaned path. */
int epb_send_copy_loaned(const epb_link_t *l, const void *data, size_t len);

/* Send a PDU of len bytes stamped with stamp (its first 8 bytes) and set *t0 to the send time:
 * loan, produced in place (epb_send_produced, the production timed too); else buf (len bytes,
 * its stamp overwritten) sent as it is. */
int epb_send_stamped(const epb_link_t *l, int loan, uint8_t *buf, size_t len, uint64_t stamp,
                     int64_t *t0);

/* The end of a run driven from a subscriber callback: the callback sets it, the main thread
 * waits for it (deadlines on CLOCK_MONOTONIC). */
typedef struct epb_done {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
} epb_done_t;
void epb_done_init(epb_done_t *d);
void epb_done_destroy(epb_done_t *d);
/* done = 1, signalled. */
void epb_done_set(epb_done_t *d);
/* With d->lock held: wait until signalled or ms milliseconds passed. */
void epb_done_wait_ms(epb_done_t *d, long ms);

/* Statistics of the sending / receiving endpoint. */
void epb_link_tx_stats(const epb_link_t *l, hako_endpoint_stats_t *st);
void epb_link_rx_stats(const epb_link_t *l, hako_endpoint_stats_t *st);

#endif
