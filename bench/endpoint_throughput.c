/* endpoint_throughput: PDUs/s and MB/s from one process to another through hako endpoints
 * (tcp, udp, websocket; shm and tcp-ack in acknowledged mode), side by side with libzmq
 * PUSH/PULL over tcp.
 *
 * Streamed variants (tcp, udp, websocket, zmq-tcp): the parent sends N PDUs as fast as it can,
 * the child counts them in its subscriber callback (zmq: a zmq_recv loop) and stamps every
 * arrival with CLOCK_MONOTONIC; rate = PDUs received / (last arrival - first send).
 * Acknowledged variants (shm, tcp-ack): the parent sends PDU i and sends i+1 from its subscriber
 * callback when the child's ack PDU (sent from the child's callback) says i. shm channels keep
 * the latest value only, so shm cannot be streamed without losing PDUs; tcp-ack is tcp in the
 * same mode, for the comparison.
 *
 * Rounds interleave the variants (for each round, for each payload, every variant); rows pool
 * the rounds. See bench/README.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "bench_common.h"
#include "endpoint_common.h"

enum { V_TCP, V_UDP, V_WS, V_SHM, V_SHML, V_TCP_ACK, V_ZMQ, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"tcp",      "udp",     "websocket", "shm",
                                                     "shm-loan", "tcp-ack", "zmq-tcp"};
static const epb_proto_t variant_proto[NVARIANTS] = {EPB_TCP, EPB_UDP, EPB_WS, EPB_SHM,
                                                     EPB_SHM, EPB_TCP, EPB_TCP};
static const int variant_acked[NVARIANTS] = {0, 0, 0, 1, 1, 1, 0};

#define MAX_PAYLOADS   16
#define MAX_ROUNDS     64
#define UDP_MAX        1024 /* udp runs payloads up to this (one datagram) */
#define SETUP_MS       15000
#define RUN_MS         180000 /* a run that takes longer fails */
#define STALL_MS       10000  /* acked: no ack for this long fails the run */
#define ZMQ_TIMEOUT_MS 10000
#define WARM_STAMP     UINT64_MAX
#define NWINDOWS       100 /* streamed: samples per run = time per PDU over N/100 arrivals */

#define CH_DATA  0
#define CH_ACK   1
#define ACK_SIZE 64

struct cell {
	bench_samples_t s; /* ns per PDU (streamed: per window; acked: per PDU round trip) */
	int64_t wall_ns;
	uint64_t sent, got;
	uint64_t ooo;          /* streamed: arrivals out of order */
	uint64_t send_dropped; /* the sender endpoint's send_dropped */
	uint64_t send_errors;
	bench_cpu_t cpu;
	double round_rate[MAX_ROUNDS];
	int rounds;
	int ran;
};

/* Written by the child, read by the parent. */
struct child_result {
	char error[256];
	bench_cpu_t c0, c1;
	int have_c0, have_c1;
	_Atomic int sender_done;
	_Atomic long warm_got;
	_Atomic long got;
	_Atomic long ooo;
	_Atomic int64_t t_last;
	uint64_t max_stamp; /* the comm thread's: highest sequence number seen */
	int have_max;
	long send_errors;
	long cap;       /* entries of arr */
	int64_t arr[1]; /* arrival times, cap entries */
};

static struct child_result *g_res;
static size_t g_res_bytes;
static char g_domain[HAKO_NAME_MAX];
static hako_domain_t *g_dom;
static int g_verbose;
static int g_disabled[NVARIANTS];
static char g_disabled_why[NVARIANTS][600];

struct run_args {
	int v;
	size_t payload;
	long n;    /* timed PDUs */
	long warm; /* warm-up PDUs before them */
};

static uint32_t send_queue_depth(size_t payload)
{
	/* Deep enough that the sender never waits on a nearly empty queue, bounded to ~64 MiB. */
	size_t d = (64u << 20) / payload;
	return d < 16 ? 16 : d > 4096 ? 4096 : (uint32_t)d;
}

static void link_opts(epb_link_opts_t *o, const struct run_args *a, int parent, char *robot,
                      size_t rcap)
{
	memset(o, 0, sizeof(*o));
	snprintf(robot, rcap, "bench-%zu", a->payload);
	o->proto = variant_proto[a->v];
	o->robot = robot;
	epb_pdu_t data = {"data", CH_DATA, (uint32_t)a->payload};
	epb_pdu_t ack = {"ack", CH_ACK, ACK_SIZE};
	o->send = parent ? data : ack;
	o->recv = parent ? ack : data;
	o->send_queue_depth = send_queue_depth(a->payload);
	o->max_body_bytes =
	    a->payload + 4096 > (16u << 20) ? (uint32_t)a->payload + 4096 : (16u << 20);
	o->dom = g_dom;
}

/* ---- the receiver (child) ---- */

struct receiver {
	epb_link_t link;
	struct run_args a;
};

static void record_arrival(uint64_t stamp)
{
	int64_t now = bench_now_ns();
	if (stamp == WARM_STAMP) {
		atomic_fetch_add(&g_res->warm_got, 1);
		return;
	}
	long i = atomic_load_explicit(&g_res->got, memory_order_relaxed);
	if (i < g_res->cap) {
		g_res->arr[i] = now;
	}
	/* Reordered: a lower sequence number than one that arrived before (a loss is not). */
	if (g_res->have_max && stamp < g_res->max_stamp) {
		atomic_fetch_add(&g_res->ooo, 1);
	} else {
		g_res->max_stamp = stamp;
		g_res->have_max = 1;
	}
	atomic_store(&g_res->t_last, now);
	atomic_store(&g_res->got, i + 1);
}

static void data_cb(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	struct receiver *rc = user;
	(void)key;
	uint64_t stamp = WARM_STAMP;
	if (len >= sizeof(stamp)) {
		memcpy(&stamp, data, sizeof(stamp));
	}
	if (!variant_acked[rc->a.v]) {
		record_arrival(stamp);
		return;
	}
	/* shm-loan PDUs are produced in place: every byte after the stamp is its low byte. */
	if (rc->a.v == V_SHML && stamp != WARM_STAMP && len > sizeof(stamp) &&
	    ((const uint8_t *)data)[len - 1] != (uint8_t)(stamp & 0xff) &&
	    g_res->send_errors++ == 0) {
		snprintf(g_res->error, sizeof(g_res->error),
		         "PDU %llu: last byte is not the stamp's", (unsigned long long)stamp);
	}
	/* Acknowledged: answer with the stamp. */
	if (stamp == (uint64_t)rc->a.warm && !g_res->have_c0) {
		g_res->c0 = bench_cpu_self();
		g_res->have_c0 = 1;
	}
	uint8_t ack[8];
	memcpy(ack, &stamp, sizeof(ack));
	int r = hako_endpoint_send(rc->link.tx, &rc->link.send_key, ack, sizeof(ack));
	if (r != 0 && g_res->send_errors++ == 0) {
		snprintf(g_res->error, sizeof(g_res->error), "ack send: %s", hako_strerror(r));
	}
	atomic_fetch_add(&g_res->got, 1);
	if (stamp == (uint64_t)(rc->a.warm + rc->a.n - 1)) {
		g_res->c1 = bench_cpu_self();
		g_res->have_c1 = 1;
	}
}

/* Streamed: wait for the warm-up, say 'W', wait for the timed PDUs, say 'D'. */
static void receive_stream(const struct run_args *a, int wfd)
{
	int udp = a->v == V_UDP;
	int64_t t = bench_now_ns();
	while (atomic_load(&g_res->warm_got) < a->warm) {
		int64_t waited = (bench_now_ns() - t) / 1000000;
		if (udp && waited > 1000) {
			break; /* some warm-up datagrams were lost: go on */
		}
		if (waited > SETUP_MS) {
			epb_child_fail(wfd, "got %ld of %ld warm-up PDUs in %d ms",
			               (long)atomic_load(&g_res->warm_got), a->warm, SETUP_MS);
		}
		epb_sleep_us(500);
	}
	g_res->c0 = bench_cpu_self();
	g_res->have_c0 = 1;
	epb_send_msg(wfd, 'W', 0, NULL);
	t = bench_now_ns();
	/* A streamed run is over when all arrived, or the sender is done and nothing came for a
	 * while (udp loses datagrams; a tcp loss would show as got < n). */
	int64_t idle_ns = (udp ? 300 : 3000) * 1000000LL;
	for (;;) {
		int64_t now = bench_now_ns();
		if (atomic_load(&g_res->got) >= a->n) {
			break;
		}
		int64_t last = atomic_load(&g_res->t_last);
		if (atomic_load(&g_res->sender_done) && now - (last > t ? last : t) > idle_ns) {
			break;
		}
		if (now - t > RUN_MS * 1000000LL) {
			break;
		}
		epb_sleep_us(1000);
	}
	g_res->c1 = bench_cpu_self();
	g_res->have_c1 = 1;
	epb_send_msg(wfd, 'D', 0, NULL);
}

static void receiver_endpoint(struct run_args *a, int rfd, int wfd)
{
	epb_msg_t m;
	if (epb_recv_msg(rfd, &m, SETUP_MS) != 0 || m.code != 'P') {
		_exit(0);
	}
	hako_domain_t *dom = NULL;
	if (variant_proto[a->v] == EPB_SHM) {
		int r = hako_domain_open(g_domain, &dom);
		if (r != 0) {
			epb_child_fail(wfd, "open domain %s: %s", g_domain, hako_strerror(r));
		}
	}
	static struct receiver rc;
	rc.a = *a;
	epb_link_opts_t o;
	char robot[64], why[512];
	link_opts(&o, a, 0, robot, sizeof(robot));
	o.dom = dom;
	uint16_t port = 0;
	int r = epb_link_child_open(&rc.link, &o, (uint16_t)m.value, &port, why, sizeof(why));
	if (r != 0) {
		epb_child_fail(wfd, "%s", why);
	}
	if ((r = hako_endpoint_subscribe(rc.link.rx, &rc.link.recv_key, data_cb, &rc, NULL)) != 0) {
		epb_child_fail(wfd, "subscribe: %s", hako_strerror(r));
	}
	epb_send_msg(wfd, 'R', port, NULL);
	if (!variant_acked[a->v]) {
		receive_stream(a, wfd);
	}
	while (epb_recv_msg(rfd, &m, 600000) == 0 && m.code != 'Q') {
	}
	epb_link_close(&rc.link);
	hako_domain_close(dom);
}

static void receiver_zmq(struct run_args *a, int rfd, int wfd)
{
	epb_msg_t m;
	if (epb_recv_msg(rfd, &m, SETUP_MS) != 0 || m.code != 'P') {
		_exit(0);
	}
	char why[300];
	void *ctx;
	void *s = epb_zmq_open(ZMQ_PULL, m.text, 0, ZMQ_TIMEOUT_MS, why, sizeof(why), &ctx);
	if (s == NULL) {
		epb_child_fail(wfd, "%s", why);
	}
	uint8_t *buf = malloc(a->payload);
	if (buf == NULL) {
		epb_child_fail(wfd, "out of memory");
	}
	epb_send_msg(wfd, 'R', 0, NULL);
	for (long i = 0; i < a->warm + a->n; i++) {
		if (i == a->warm) {
			g_res->c0 = bench_cpu_self();
			g_res->have_c0 = 1;
			epb_send_msg(wfd, 'W', 0, NULL);
		}
		int n = zmq_recv(s, buf, a->payload, 0);
		if (n != (int)a->payload) {
			epb_child_fail(wfd, "zmq_recv #%ld: %s", i, zmq_strerror(zmq_errno()));
		}
		uint64_t stamp;
		memcpy(&stamp, buf, sizeof(stamp));
		record_arrival(stamp);
	}
	g_res->c1 = bench_cpu_self();
	g_res->have_c1 = 1;
	epb_send_msg(wfd, 'D', 0, NULL);
	while (epb_recv_msg(rfd, &m, 600000) == 0 && m.code != 'Q') {
	}
	zmq_close(s);
	zmq_ctx_term(ctx);
	free(buf);
}

static void receiver_main(void *arg, int rfd, int wfd)
{
	struct run_args *a = arg;
	if (a->v == V_ZMQ) {
		receiver_zmq(a, rfd, wfd);
	} else {
		receiver_endpoint(a, rfd, wfd);
	}
}

/* ---- the sender (parent) ---- */

struct outcome {
	int64_t wall_ns;
	uint64_t sent, got, ooo, send_dropped, send_errors;
	bench_cpu_t cpu; /* the sender's */
};

static int wait_msg(epb_child_t *ch, int code, int timeout_ms, uint16_t *value, char *why,
                    size_t cap)
{
	epb_msg_t m;
	int r = epb_recv_msg(ch->from_child, &m, timeout_ms);
	if (r == 0 && m.code == code) {
		if (value != NULL) {
			*value = (uint16_t)m.value;
		}
		return 0;
	}
	if (r == 0 && m.code == 'E') {
		return epb_fail(why, cap, HAKO_EIO, "child: %s", m.text);
	}
	return epb_fail(why, cap, HAKO_EIO, "no '%c' from the child (%s)%s%s", code,
	                r == -2  ? "timeout"
	                : r == 0 ? "unexpected message"
	                         : "it exited",
	                g_res->error[0] ? ": " : "", g_res->error);
}

/* Streamed sends through an endpoint. websocket drops the oldest queued PDU when its send
 * queue is full (no blocking option), so the sender keeps at most `window` PDUs not yet written
 * (frames_out + send_dropped from the statistics); tcp relies on its blocking back-pressure;
 * udp sends blindly (a full socket buffer drops). */
static int send_stream(epb_link_t *l, const struct run_args *a, uint8_t *buf, uint64_t stamp0,
                       long count, uint64_t *sent_total, long window, uint64_t *errors, char *why,
                       size_t cap)
{
	uint64_t written = 0;
	for (long i = 0; i < count; i++) {
		if (window > 0 && *sent_total - written >= (uint64_t)window) {
			for (;;) {
				hako_endpoint_stats_t st;
				hako_endpoint_get_stats(l->tx, &st);
				written = st.frames_out + st.send_dropped;
				if (*sent_total - written < (uint64_t)window) {
					break;
				}
				epb_sleep_us(20);
			}
		}
		uint64_t stamp = stamp0 == WARM_STAMP ? WARM_STAMP : stamp0 + (uint64_t)i;
		memcpy(buf, &stamp, sizeof(stamp));
		int r = hako_endpoint_send(l->tx, &l->send_key, buf, a->payload);
		(*sent_total)++;
		if (r != 0) {
			if (a->v == V_UDP && r == HAKO_EAGAIN) {
				(*errors)++; /* a full socket buffer: dropped, counted */
				continue;
			}
			return epb_fail(why, cap, r, "send #%ld: %s", i, hako_strerror(r));
		}
	}
	return 0;
}

/* Acknowledged mode: the ack callback sends the next PDU. */
struct acker {
	epb_link_t *link;
	size_t payload;
	long total, warm;
	int loan; /* shm-loan: PDUs produced in place (epb_send_produced) */
	uint8_t *buf;
	uint64_t *rtt;
	_Atomic long cur;
	int64_t t0, t_start, t_end;
	bench_cpu_t c0, c1;
	_Atomic int stop;
	int err;
	char why[256];
	epb_done_t end;
};

static void ack_cb(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	int64_t t1 = bench_now_ns();
	struct acker *k = user;
	(void)key;
	if (atomic_load(&k->stop) || len < sizeof(uint64_t)) {
		return;
	}
	long i = atomic_load(&k->cur);
	uint64_t stamp;
	memcpy(&stamp, data, sizeof(stamp));
	if (stamp != (uint64_t)i) {
		return;
	}
	k->rtt[i] = (uint64_t)(t1 - k->t0);
	i++;
	if (i == k->warm) {
		k->c0 = bench_cpu_self();
		k->t_start = bench_now_ns();
	}
	atomic_store(&k->cur, i);
	if (i == k->total) {
		k->t_end = t1;
		k->c1 = bench_cpu_self();
		epb_done_set(&k->end);
		return;
	}
	int r = epb_send_stamped(k->link, k->loan, k->buf, k->payload, (uint64_t)i, &k->t0);
	if (r != 0) {
		k->err = r;
		snprintf(k->why, sizeof(k->why), "send #%ld: %s", i, hako_strerror(r));
		atomic_store(&k->stop, 1);
		epb_done_set(&k->end);
	}
}

static int acker_wait(struct acker *k)
{
	long last = -1;
	int64_t last_progress = bench_now_ns();
	pthread_mutex_lock(&k->end.lock);
	while (!k->end.done) {
		epb_done_wait_ms(&k->end, 100);
		long c = atomic_load(&k->cur);
		int64_t now = bench_now_ns();
		if (k->end.done) {
			break;
		}
		if (c != last) {
			last = c;
			last_progress = now;
		} else if (now - last_progress > STALL_MS * 1000000LL) {
			atomic_store(&k->stop, 1);
			k->err = HAKO_ETIMEDOUT;
			snprintf(k->why, sizeof(k->why), "no ack of PDU #%ld for %d ms", c,
			         STALL_MS);
			break;
		}
	}
	pthread_mutex_unlock(&k->end.lock);
	return k->err;
}

static struct acker k;

static int run_acked(struct run_args *a, epb_link_t *link, struct cell *cell, struct outcome *out,
                     char *why, size_t cap)
{
	memset(&k, 0, sizeof(k));
	k.link = link;
	k.payload = a->payload;
	k.loan = a->v == V_SHML;
	k.total = a->warm + a->n;
	k.warm = a->warm;
	k.buf = malloc(a->payload);
	k.rtt = calloc((size_t)k.total, sizeof(*k.rtt));
	if (k.buf == NULL || k.rtt == NULL) {
		fprintf(stderr, "endpoint_throughput: out of memory\n");
		exit(2);
	}
	memset(k.buf, 0x5a, a->payload);
	epb_done_init(&k.end);
	int r;
	if ((r = hako_endpoint_subscribe(link->rx, &link->recv_key, ack_cb, &k, NULL)) != 0) {
		epb_fail(why, cap, r, "subscribe: %s", hako_strerror(r));
	} else if ((r = epb_send_stamped(k.link, k.loan, k.buf, k.payload, 0, &k.t0)) != 0) {
		epb_fail(why, cap, r, "send #0: %s", hako_strerror(r));
	} else if ((r = acker_wait(&k)) != 0) {
		epb_fail(why, cap, r, "%s (child: %s)", k.why,
		         g_res->error[0] ? g_res->error : "no error");
	} else if (g_res->send_errors > 0) {
		r = HAKO_EPROTO;
		epb_fail(why, cap, r, "child: %s", g_res->error);
	}
	atomic_store(&k.stop, 1);
	if (r == 0) {
		for (long i = a->warm; i < k.total; i++) {
			bench_samples_push(&cell->s, k.rtt[i]);
		}
		out->wall_ns = k.t_end - k.t_start;
		out->sent = out->got = (uint64_t)a->n;
		out->cpu = bench_cpu_sub(k.c1, k.c0);
	}
	/* The caller closes the link (joining the thread that may be in ack_cb), then calls
	 * acker_release. */
	return r;
}

static void acker_release(void)
{
	epb_done_destroy(&k.end);
	free(k.buf);
	free(k.rtt);
	k.buf = NULL;
	k.rtt = NULL;
}

static int run_endpoint(struct run_args *a, epb_child_t *ch, struct cell *cell, struct outcome *out,
                        char *why, size_t cap)
{
	epb_link_t link;
	epb_link_opts_t o;
	char robot[64];
	link_opts(&o, a, 1, robot, sizeof(robot));
	uint16_t port = 0, cport = 0;
	int r = epb_link_parent_open(&link, &o, &port, why, cap);
	if (r != 0) {
		epb_link_close(&link);
		return r;
	}
	epb_send_msg(ch->to_child, 'P', port, NULL);
	if ((r = wait_msg(ch, 'R', SETUP_MS, &cport, why, cap)) != 0 ||
	    (r = epb_link_parent_connect(&link, &o, cport, SETUP_MS, why, cap)) != 0) {
		epb_link_close(&link);
		return r;
	}
	if (variant_acked[a->v]) {
		r = run_acked(a, &link, cell, out, why, cap);
		char rwhy[200];
		epb_reap(ch, 5000, rwhy, sizeof(rwhy));
		epb_link_close(&link);
		acker_release();
		return r;
	}
	uint8_t *buf = malloc(a->payload);
	if (buf == NULL) {
		fprintf(stderr, "endpoint_throughput: out of memory\n");
		exit(2);
	}
	for (size_t i = 0; i < a->payload; i++) {
		buf[i] = (uint8_t)(i * 131u + 7u);
	}
	long window = 0;
	if (a->v == V_WS) {
		long w = (long)(o.send_queue_depth / 2);
		long by_bytes = (long)((16u << 20) / a->payload);
		window = by_bytes < w ? (by_bytes < 8 ? 8 : by_bytes) : w;
	}
	uint64_t sent_total = 0, errors = 0;
	if ((r = send_stream(&link, a, buf, WARM_STAMP, a->warm, &sent_total, window, &errors, why,
	                     cap)) == 0 &&
	    (r = wait_msg(ch, 'W', SETUP_MS + 5000, NULL, why, cap)) == 0) {
		hako_endpoint_stats_t st0;
		epb_link_tx_stats(&link, &st0);
		bench_cpu_t c0 = bench_cpu_self();
		int64_t t0 = bench_now_ns();
		errors = 0;
		r = send_stream(&link, a, buf, 0, a->n, &sent_total, window, &errors, why, cap);
		atomic_store(&g_res->sender_done, 1);
		if (r == 0 && (r = wait_msg(ch, 'D', RUN_MS, NULL, why, cap)) == 0) {
			bench_cpu_t c1 = bench_cpu_self();
			hako_endpoint_stats_t st1;
			epb_link_tx_stats(&link, &st1);
			out->cpu = bench_cpu_sub(c1, c0);
			out->sent = (uint64_t)a->n;
			out->got = (uint64_t)atomic_load(&g_res->got);
			out->ooo = (uint64_t)atomic_load(&g_res->ooo);
			out->send_dropped = st1.send_dropped - st0.send_dropped;
			out->send_errors = errors;
			out->wall_ns = atomic_load(&g_res->t_last) - t0;
			/* windows: time per PDU over got/NWINDOWS arrivals */
			long got = (long)out->got < g_res->cap ? (long)out->got : g_res->cap;
			long w = got / NWINDOWS > 1 ? got / NWINDOWS : 1;
			int64_t prev = t0;
			for (long i = w - 1; i < got; i += w) {
				bench_samples_push(&cell->s,
				                   (uint64_t)(g_res->arr[i] - prev) / (uint64_t)w);
				prev = g_res->arr[i];
			}
		}
	}
	char rwhy[200];
	epb_reap(ch, 5000, rwhy, sizeof(rwhy));
	epb_link_close(&link);
	free(buf);
	return r;
}

static int run_zmq(struct run_args *a, epb_child_t *ch, struct cell *cell, struct outcome *out,
                   char *why, size_t cap)
{
	void *ctx;
	void *s = epb_zmq_open(ZMQ_PUSH, "tcp://127.0.0.1:*", 1, ZMQ_TIMEOUT_MS, why, cap, &ctx);
	if (s == NULL) {
		return HAKO_EIO;
	}
	char ep[256];
	size_t eplen = sizeof(ep);
	zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &eplen);
	epb_send_msg(ch->to_child, 'P', 0, ep);
	uint8_t *buf = malloc(a->payload);
	if (buf == NULL) {
		fprintf(stderr, "endpoint_throughput: out of memory\n");
		exit(2);
	}
	memset(buf, 0x5a, a->payload);
	int r = wait_msg(ch, 'R', SETUP_MS, NULL, why, cap);
	for (long i = 0; r == 0 && i < a->warm; i++) {
		uint64_t stamp = WARM_STAMP;
		memcpy(buf, &stamp, sizeof(stamp));
		if (zmq_send(s, buf, a->payload, 0) != (int)a->payload) {
			r = epb_fail(why, cap, HAKO_EIO, "zmq_send: %s", zmq_strerror(zmq_errno()));
		}
	}
	if (r == 0) {
		r = wait_msg(ch, 'W', SETUP_MS, NULL, why, cap);
	}
	if (r == 0) {
		bench_cpu_t c0 = bench_cpu_self();
		int64_t t0 = bench_now_ns();
		for (long i = 0; r == 0 && i < a->n; i++) {
			uint64_t stamp = (uint64_t)i;
			memcpy(buf, &stamp, sizeof(stamp));
			if (zmq_send(s, buf, a->payload, 0) != (int)a->payload) {
				r = epb_fail(why, cap, HAKO_EIO, "zmq_send #%ld: %s", i,
				             zmq_strerror(zmq_errno()));
			}
		}
		atomic_store(&g_res->sender_done, 1);
		if (r == 0 && (r = wait_msg(ch, 'D', RUN_MS, NULL, why, cap)) == 0) {
			out->cpu = bench_cpu_sub(bench_cpu_self(), c0);
			out->sent = (uint64_t)a->n;
			out->got = (uint64_t)atomic_load(&g_res->got);
			out->ooo = (uint64_t)atomic_load(&g_res->ooo);
			out->wall_ns = atomic_load(&g_res->t_last) - t0;
			long got = (long)out->got < g_res->cap ? (long)out->got : g_res->cap;
			long w = got / NWINDOWS > 1 ? got / NWINDOWS : 1;
			int64_t prev = t0;
			for (long i = w - 1; i < got; i += w) {
				bench_samples_push(&cell->s,
				                   (uint64_t)(g_res->arr[i] - prev) / (uint64_t)w);
				prev = g_res->arr[i];
			}
		}
	}
	char rwhy[200];
	epb_reap(ch, 5000, rwhy, sizeof(rwhy));
	zmq_close(s);
	zmq_ctx_term(ctx);
	free(buf);
	return r;
}

static void run_one(int v, size_t payload, long n, long warm, struct cell *cell)
{
	char why[600] = "", sz[32];
	bench_size_str(payload, sz, sizeof(sz));
	if (variant_proto[v] == EPB_SHM && g_dom == NULL) {
		return;
	}
	memset(g_res, 0, offsetof(struct child_result, arr));
	g_res->cap = (long)((g_res_bytes - offsetof(struct child_result, arr)) / sizeof(int64_t));
	struct run_args a = {v, payload, n, warm};
	epb_child_t ch;
	/* Not pinned: each side has its own threads (the comm's, zmq's I/O thread) that may use
	 * the other CPU while the main thread sends. */
	if (epb_spawn(&ch, -1, receiver_main, &a) != 0) {
		fprintf(stderr, "endpoint_throughput: skipped: %s %s: fork: %s\n", variant_names[v],
		        sz, strerror(errno));
		return;
	}
	size_t first = cell->s.n;
	struct outcome out;
	memset(&out, 0, sizeof(out));
	int r = v == V_ZMQ ? run_zmq(&a, &ch, cell, &out, why, sizeof(why))
	                   : run_endpoint(&a, &ch, cell, &out, why, sizeof(why));
	char rwhy[200];
	epb_reap(&ch, 5000, rwhy, sizeof(rwhy));
	if (r != 0) {
		cell->s.n = first;
		epb_run_failed(r, variant_names[v], sz, why, &g_disabled[v], g_disabled_why[v],
		               sizeof(g_disabled_why[v]));
		return;
	}
	if (g_res->have_c0 && g_res->have_c1) {
		bench_cpu_t theirs = bench_cpu_sub(g_res->c1, g_res->c0);
		out.cpu.user += theirs.user;
		out.cpu.sys += theirs.sys;
	}
	if (!variant_acked[v] && v != V_UDP && out.got != out.sent) {
		fprintf(stderr, "endpoint_throughput: %s %s: the receiver got %llu of %llu PDUs\n",
		        variant_names[v], sz, (unsigned long long)out.got,
		        (unsigned long long)out.sent);
	}
	cell->cpu.user += out.cpu.user;
	cell->cpu.sys += out.cpu.sys;
	cell->wall_ns += out.wall_ns;
	cell->sent += out.sent;
	cell->got += out.got;
	cell->ooo += out.ooo;
	cell->send_dropped += out.send_dropped;
	cell->send_errors += out.send_errors;
	cell->ran = 1;
	double rate = out.wall_ns > 0 ? (double)out.got * 1e9 / (double)out.wall_ns : 0;
	if (cell->rounds < MAX_ROUNDS) {
		cell->round_rate[cell->rounds++] = rate;
	}
	if (g_verbose) {
		fprintf(stderr, "  %-10s %8s: %llu/%llu PDUs, %.0f PDU/s, %.1f MB/s\n",
		        variant_names[v], sz, (unsigned long long)out.got,
		        (unsigned long long)out.sent, rate, rate * (double)payload / 1e6);
	}
}

static long default_count(int v, size_t payload, int quick)
{
	if (variant_acked[v]) {
		if (quick) {
			return payload <= 1024 ? 1000 : 300;
		}
		return payload <= 1024 ? 20000 : payload <= 65536 ? 5000 : 1000;
	}
	if (quick) {
		return payload <= 1024 ? 20000 : 1000;
	}
	if (payload <= 64) {
		return 300000;
	}
	if (payload <= 1024) {
		return 150000;
	}
	if (payload <= 65536) {
		return 8000; /* 512 MiB */
	}
	long n = (long)((512u << 20) / payload);
	return n < 100 ? 100 : n;
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: endpoint_throughput [options]\n"
	    "  --quick            fewer PDUs, payloads 64 B and 64 KiB, 1 round (CI)\n"
	    "  --rounds R         interleaved rounds (default 3)\n"
	    "  --count N          PDUs per variant and payload, all rounds together\n"
	    "                     (default: streamed 300000 / 150000 / 8000 / 512 MiB worth;\n"
	    "                     acknowledged 20000 / 20000 / 5000 / 1000)\n"
	    "  --payloads LIST    e.g. 64,1K,64K,1M (default)\n"
	    "  --variants LIST    of tcp,udp,websocket,shm,shm-loan,tcp-ack,zmq-tcp (default all)\n"
	    "  -v, --verbose      progress on stderr\n");
}

static double cell_rate(const struct cell *c)
{
	return c->wall_ns > 0 ? (double)c->got * 1e9 / (double)c->wall_ns : 0;
}

int main(int argc, char **argv)
{
	bench_opts_t opt;
	size_t sum = 0;
	int rc = bench_parse_opts(argc, argv, variant_names, NVARIANTS, 0, usage, &opt);
	if (rc < 0) {
		rc = epb_check_opts(&opt, MAX_ROUNDS, "the sequence number", usage, &sum);
	}
	if (rc >= 0) {
		return rc;
	}
	const long *payloads = opt.payloads;
	int npayloads = opt.npayloads;
	const int *enabled = opt.enabled;
	long rounds = opt.rounds, count = opt.count;
	int quick = opt.quick;
	g_verbose = opt.verbose;
	long max_per = 1;
	for (int p = 0; p < npayloads; p++) {
		for (int v = 0; v < NVARIANTS; v++) {
			long n = count > 0 ? count : default_count(v, (size_t)payloads[p], quick);
			long per = (n + rounds - 1) / rounds;
			if (per > max_per) {
				max_per = per;
			}
		}
	}

	epb_init("eptput", "endpoint_throughput");
	g_res_bytes = offsetof(struct child_result, arr) + (size_t)max_per * sizeof(int64_t);
	g_res = bench_shared_alloc(g_res_bytes);
	epb_set_child_error(g_res->error, sizeof(g_res->error));
	if (enabled[V_SHM] || enabled[V_SHML]) {
		g_dom = epb_create_domain("eptput", sum, g_domain, sizeof(g_domain));
	}

	static struct cell cells[MAX_PAYLOADS][NVARIANTS];
	for (long rd = 0; rd < rounds; rd++) {
		if (g_verbose) {
			fprintf(stderr, "round %ld/%ld\n", rd + 1, rounds);
		}
		for (int p = 0; p < npayloads; p++) {
			for (int v = 0; v < NVARIANTS; v++) {
				if (!enabled[v] || g_disabled[v] ||
				    (v == V_UDP && payloads[p] > UDP_MAX)) {
					continue;
				}
				long n = count > 0 ? count
				                   : default_count(v, (size_t)payloads[p], quick);
				long per = (n + rounds - 1) / rounds;
				long warm = per / 20 > 10 ? per / 20 : 10;
				if (warm > 2000) {
					warm = 2000;
				}
				run_one(v, (size_t)payloads[p], per, warm, &cells[p][v]);
			}
		}
	}

	puts(BENCH_CSV_HEADER);
	for (int p = 0; p < npayloads; p++) {
		for (int v = 0; v < NVARIANTS; v++) {
			struct cell *c = &cells[p][v];
			if (!c->ran) {
				continue;
			}
			bench_stats_t st = bench_stats(&c->s, 1.0);
			/* mean = wall time per PDU received */
			st.mean = c->got > 0 ? (double)c->wall_ns / (double)c->got / 1000.0 : 0;
			bench_print_row("endpoint_throughput", variant_names[v],
			                (size_t)payloads[p], c->got, &st, cell_rate(c), c->cpu);
		}
	}

	printf("# method: streamed (tcp, udp, websocket, zmq-tcp): rate = PDUs received / (last "
	       "arrival - first send), latency columns = time per PDU over windows of 1/%d of the "
	       "arrivals; acknowledged (shm, shm-loan, tcp-ack): PDU i+1 is sent when the ack of "
	       "PDU i "
	       "arrives, latency columns = per-PDU send-to-ack time; %ld interleaved rounds; "
	       "processes not pinned\n",
	       NWINDOWS, rounds);
	char sz[32];
	for (int p = 0; p < npayloads; p++) {
		bench_size_str((size_t)payloads[p], sz, sizeof(sz));
		printf("# MB/s at %s:", sz);
		for (int v = 0; v < NVARIANTS; v++) {
			if (cells[p][v].ran) {
				printf(" %s %.1f", variant_names[v],
				       cell_rate(&cells[p][v]) * (double)payloads[p] / 1e6);
			}
		}
		printf("\n# round PDU/s at %s:", sz);
		for (int v = 0; v < NVARIANTS; v++) {
			if (!cells[p][v].ran) {
				continue;
			}
			printf(" %s", variant_names[v]);
			for (int i = 0; i < cells[p][v].rounds; i++) {
				printf("%c%.0f", i == 0 ? ' ' : '/', cells[p][v].round_rate[i]);
			}
		}
		printf("\n");
		for (int v = 0; v < NVARIANTS; v++) {
			struct cell *c = &cells[p][v];
			if (!c->ran || variant_acked[v]) {
				continue;
			}
			if (v == V_UDP || c->got != c->sent || c->send_dropped > 0 || c->ooo > 0) {
				epb_both(
				    "# %s at %s: received %llu of %llu sent (%.2f%% lost; sender "
				    "dropped %llu, send errors %llu), %llu out of order\n",
				    variant_names[v], sz, (unsigned long long)c->got,
				    (unsigned long long)c->sent,
				    c->sent > 0
				        ? 100.0 * (double)(c->sent - c->got) / (double)c->sent
				        : 0.0,
				    (unsigned long long)c->send_dropped,
				    (unsigned long long)c->send_errors, (unsigned long long)c->ooo);
			}
		}
	}
	epb_print_skipped(variant_names, NVARIANTS, enabled, g_disabled,
	                  (const char(*)[600])g_disabled_why);
	static const int pairs[][2] = {{V_TCP, V_ZMQ},     {V_WS, V_TCP},       {V_UDP, V_TCP},
	                               {V_SHM, V_TCP_ACK}, {V_SHML, V_TCP_ACK}, {V_SHML, V_SHM},
	                               {V_TCP_ACK, V_TCP}};
	for (int p = 0; p < npayloads; p++) {
		bench_size_str((size_t)payloads[p], sz, sizeof(sz));
		for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
			int a = pairs[k][0], b = pairs[k][1];
			if (cells[p][a].ran && cells[p][b].ran && cell_rate(&cells[p][b]) > 0) {
				epb_both("# ratio %s/%s PDU/s at %s: %.3f\n", variant_names[a],
				         variant_names[b], sz,
				         cell_rate(&cells[p][a]) / cell_rate(&cells[p][b]));
			}
		}
	}
	for (int p = 0; p < npayloads; p++) {
		if (payloads[p] == 64 && cells[p][V_TCP].ran && cells[p][V_ZMQ].ran) {
			double x = cell_rate(&cells[p][V_TCP]) / cell_rate(&cells[p][V_ZMQ]);
			epb_both("# goal tcp >= 0.5x zmq-tcp msg/s at 64 B: %.3f %s\n", x,
			         x >= 0.5 ? "PASS" : "MISS");
		}
		for (int v = V_SHM; v <= V_SHML; v++) {
			if (payloads[p] == 1048576 && cells[p][v].ran && cells[p][V_TCP_ACK].ran) {
				double x =
				    cell_rate(&cells[p][v]) / cell_rate(&cells[p][V_TCP_ACK]);
				epb_both("# goal %s >= 5x tcp-ack PDU/s at 1 MiB (acknowledged "
				         "delivery): %.2f %s\n",
				         variant_names[v], x, x >= 5.0 ? "PASS" : "MISS");
			}
		}
	}
	fflush(stdout);

	for (int p = 0; p < npayloads; p++) {
		for (int v = 0; v < NVARIANTS; v++) {
			bench_samples_free(&cells[p][v].s);
		}
	}
	hako_domain_close(g_dom);
	g_dom = NULL;
	bench_shared_free(g_res, g_res_bytes);
	g_res = NULL;
	epb_cleanup();
	return 0;
}
