/* endpoint_latency: PDU ping-pong between two processes through hako endpoints (tcp, udp,
 * websocket, shm), side by side with libzmq REQ/REP over tcp and plain blocking TCP sockets.
 *
 * The parent (pinger, CPU 0) sends PDU "ping" with the iteration number in its first 8 bytes;
 * the child (ponger, CPU 1) sends it back as "pong" from inside its subscriber callback; the
 * pinger's own subscriber callback takes the time, checks the number and sends the next ping
 * (the pinger's main thread only waits for the end). One-way latency = round trip / 2.
 *
 * Rounds interleave the variants (for each round, for each payload, every variant) and the
 * samples of all rounds are pooled per (variant, payload). See bench/README.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "bench_common.h"
#include "endpoint_common.h"
#include "hako/frame.h"

enum { V_TCP, V_UDP, V_WS, V_SHM, V_SHML, V_ZMQ, V_RAW, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"tcp",      "udp",     "websocket", "shm",
                                                     "shm-loan", "zmq-tcp", "raw-tcp"};
static const epb_proto_t variant_proto[NVARIANTS] = {EPB_TCP, EPB_UDP, EPB_WS, EPB_SHM, EPB_SHM};

#define MAX_PAYLOADS   16
#define MAX_ROUNDS     64
#define UDP_MAX        1024  /* udp runs payloads up to this (one datagram) */
#define STALL_MS       10000 /* no reply for this long: the variant fails */
#define UDP_RESEND_MS  100   /* udp: no reply for this long: the ping is sent again */
#define SETUP_MS       15000 /* child start-up, connection */
#define ZMQ_TIMEOUT_MS 10000

#define CH_PING 0
#define CH_PONG 1

struct cell {
	bench_samples_t s; /* round trips, ns */
	int64_t wall_ns;
	uint64_t trips;
	bench_cpu_t cpu;
	double round_p50[MAX_ROUNDS];
	int rounds;
	long resent; /* udp pings sent again after a loss */
	int ran;
};

/* Written by the child, read by the parent after the run. */
struct child_result {
	char error[256];
	bench_cpu_t c0, c1; /* at the warm-up's end / after the last echo */
	int have_c0, have_c1;
	long echoed;
	long send_errors;
};

static struct child_result *g_res;
static char g_domain[HAKO_NAME_MAX];
static hako_domain_t *g_dom;
static int g_verbose;
static int g_pin = 1;
static int g_disabled[NVARIANTS];
static char g_disabled_why[NVARIANTS][600];

struct run_args {
	int v;
	size_t payload;
	long total;
	long warm;
};

static void link_opts(epb_link_opts_t *o, int v, size_t payload, int parent, char *robot,
                      size_t rcap)
{
	memset(o, 0, sizeof(*o));
	snprintf(robot, rcap, "bench-%zu", payload);
	o->proto = variant_proto[v];
	o->robot = robot;
	epb_pdu_t ping = {"ping", CH_PING, (uint32_t)payload};
	epb_pdu_t pong = {"pong", CH_PONG, (uint32_t)payload};
	o->send = parent ? ping : pong;
	o->recv = parent ? pong : ping;
	o->send_queue_depth = 256;
	/* the body is the PDU: room for the largest one, with the default (16 MiB) as a floor */
	o->max_body_bytes = payload + 4096 > (16u << 20) ? (uint32_t)payload + 4096 : (16u << 20);
	o->dom = g_dom;
}

/* ---- the ponger (child) ---- */

struct ponger {
	epb_link_t link;
	struct run_args a;
};

static void echo_cb(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	struct ponger *p = user;
	(void)key;
	uint64_t stamp = 0;
	if (len >= sizeof(stamp)) {
		memcpy(&stamp, data, sizeof(stamp));
	}
	if (stamp == (uint64_t)p->a.warm && !g_res->have_c0) {
		g_res->c0 = bench_cpu_self();
		g_res->have_c0 = 1;
	}
	int r = p->a.v == V_SHML ? epb_send_copy_loaned(&p->link, data, len)
	                         : hako_endpoint_send(p->link.tx, &p->link.send_key, data, len);
	if (r != 0) {
		if (g_res->send_errors++ == 0) {
			snprintf(g_res->error, sizeof(g_res->error), "echo send: %s",
			         hako_strerror(r));
		}
	}
	g_res->echoed++;
	if (stamp == (uint64_t)(p->a.total - 1)) {
		g_res->c1 = bench_cpu_self();
		g_res->have_c1 = 1;
	}
}

static void ponger_endpoint(struct run_args *a, int rfd, int wfd)
{
	epb_msg_t m;
	if (epb_recv_msg(rfd, &m, SETUP_MS) != 0 || m.code != 'P') {
		_exit(0); /* the parent gave up before telling us the port */
	}
	hako_domain_t *dom = NULL;
	if (variant_proto[a->v] == EPB_SHM) {
		int r = hako_domain_open(g_domain, &dom);
		if (r != 0) {
			epb_child_fail(wfd, "open domain %s: %s", g_domain, hako_strerror(r));
		}
	}
	static struct ponger p;
	p.a = *a;
	epb_link_opts_t o;
	char robot[64], why[512];
	link_opts(&o, a->v, a->payload, 0, robot, sizeof(robot));
	o.dom = dom;
	uint16_t port = 0;
	int r = epb_link_child_open(&p.link, &o, (uint16_t)m.value, &port, why, sizeof(why));
	if (r != 0) {
		epb_child_fail(wfd, "%s", why);
	}
	if ((r = hako_endpoint_subscribe(p.link.rx, &p.link.recv_key, echo_cb, &p, NULL)) != 0) {
		epb_child_fail(wfd, "subscribe: %s", hako_strerror(r));
	}
	epb_send_msg(wfd, 'R', port, NULL);
	/* Echo from the callback until the parent says quit (or dies). */
	while (epb_recv_msg(rfd, &m, 600000) == 0 && m.code != 'Q') {
	}
	epb_link_close(&p.link);
	hako_domain_close(dom);
}

static void ponger_zmq(struct run_args *a, int rfd, int wfd)
{
	epb_msg_t m;
	if (epb_recv_msg(rfd, &m, SETUP_MS) != 0 || m.code != 'P') {
		_exit(0);
	}
	char why[300];
	void *ctx;
	void *s = epb_zmq_open(ZMQ_REP, m.text, 0, ZMQ_TIMEOUT_MS, why, sizeof(why), &ctx);
	if (s == NULL) {
		epb_child_fail(wfd, "%s", why);
	}
	uint8_t *buf = malloc(a->payload);
	if (buf == NULL) {
		epb_child_fail(wfd, "out of memory");
	}
	epb_send_msg(wfd, 'R', 0, NULL);
	for (long i = 0; i < a->total; i++) {
		if (i == a->warm) {
			g_res->c0 = bench_cpu_self();
			g_res->have_c0 = 1;
		}
		int n = zmq_recv(s, buf, a->payload, 0);
		if (n != (int)a->payload) {
			epb_child_fail(wfd, "zmq_recv #%ld: %s", i, zmq_strerror(zmq_errno()));
		}
		if (zmq_send(s, buf, (size_t)n, 0) != n) {
			epb_child_fail(wfd, "zmq_send #%ld: %s", i, zmq_strerror(zmq_errno()));
		}
		g_res->echoed++;
	}
	g_res->c1 = bench_cpu_self();
	g_res->have_c1 = 1;
	while (epb_recv_msg(rfd, &m, 600000) == 0 && m.code != 'Q') {
	}
	zmq_close(s);
	zmq_ctx_term(ctx);
	free(buf);
}

static size_t raw_frame_len(size_t payload)
{
	return hako_frame_size(HAKO_FRAME_V2, "bench", (uint32_t)payload);
}

static void ponger_raw(struct run_args *a, int rfd, int wfd)
{
	epb_msg_t m;
	if (epb_recv_msg(rfd, &m, SETUP_MS) != 0 || m.code != 'P') {
		_exit(0);
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)m.value)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int one = 1;
	if (fd < 0 || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		epb_child_fail(wfd, "raw connect 127.0.0.1:%u: %s", (unsigned)m.value,
		               strerror(errno));
	}
	size_t flen = raw_frame_len(a->payload);
	uint8_t *buf = malloc(flen);
	if (buf == NULL) {
		epb_child_fail(wfd, "out of memory");
	}
	epb_send_msg(wfd, 'R', 0, NULL);
	for (long i = 0; i < a->total; i++) {
		if (i == a->warm) {
			g_res->c0 = bench_cpu_self();
			g_res->have_c0 = 1;
		}
		if (bench_read_full(fd, buf, flen) != 0 || bench_write_full(fd, buf, flen) != 0) {
			epb_child_fail(wfd, "raw echo #%ld: %s", i, strerror(errno));
		}
		g_res->echoed++;
	}
	g_res->c1 = bench_cpu_self();
	g_res->have_c1 = 1;
	while (epb_recv_msg(rfd, &m, 600000) == 0 && m.code != 'Q') {
	}
	close(fd);
	free(buf);
}

static void ponger_main(void *arg, int rfd, int wfd)
{
	struct run_args *a = arg;
	switch (a->v) {
	case V_ZMQ: ponger_zmq(a, rfd, wfd); break;
	case V_RAW: ponger_raw(a, rfd, wfd); break;
	default: ponger_endpoint(a, rfd, wfd); break;
	}
}

/* ---- the pinger (parent) ---- */

struct pinger {
	epb_link_t *link;
	size_t payload;
	long total, warm;
	int loan; /* shm-loan: pings produced in place (epb_send_produced) */
	uint8_t *sbuf;
	uint64_t *rtt; /* total entries; 0 = no sample (a resent ping) */
	_Atomic long cur;
	_Atomic int resent_cur; /* the current ping was sent again: no sample */
	int64_t t0;
	int64_t t_start, t_end;
	bench_cpu_t c0, c1;
	_Atomic int stop;
	int err;
	char why[256];
	epb_done_t end;
};

static void pong_cb(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	int64_t t1 = bench_now_ns();
	struct pinger *p = user;
	(void)key;
	if (atomic_load(&p->stop)) {
		return;
	}
	long i = atomic_load(&p->cur);
	uint64_t stamp = 0;
	if (len != p->payload) {
		p->err = HAKO_EPROTO;
		snprintf(p->why, sizeof(p->why), "pong #%ld has %zu bytes, not %zu", i, len,
		         p->payload);
		atomic_store(&p->stop, 1);
		epb_done_set(&p->end);
		return;
	}
	memcpy(&stamp, data, sizeof(stamp));
	if (stamp != (uint64_t)i) {
		return; /* a late answer to a ping that was sent again (udp) */
	}
	if (p->loan && ((const uint8_t *)data)[len - 1] != (uint8_t)(stamp & 0xff)) {
		p->err = HAKO_EPROTO;
		snprintf(p->why, sizeof(p->why), "pong #%ld: last byte is not the stamp's", i);
		atomic_store(&p->stop, 1);
		epb_done_set(&p->end);
		return;
	}
	p->rtt[i] = atomic_exchange(&p->resent_cur, 0) ? 0 : (uint64_t)(t1 - p->t0);
	i++;
	if (i == p->warm) {
		p->c0 = bench_cpu_self();
		p->t_start = bench_now_ns();
	}
	if (i == p->total) {
		p->t_end = t1;
		p->c1 = bench_cpu_self();
		atomic_store(&p->cur, i);
		epb_done_set(&p->end);
		return;
	}
	atomic_store(&p->cur, i);
	int r = epb_send_stamped(p->link, p->loan, p->sbuf, p->payload, (uint64_t)i, &p->t0);
	if (r != 0) {
		p->err = r;
		snprintf(p->why, sizeof(p->why), "send ping #%ld: %s", i, hako_strerror(r));
		atomic_store(&p->stop, 1);
		epb_done_set(&p->end);
	}
}

/* Wait for the callback-driven run to end. udp: a ping without an answer for UDP_RESEND_MS is
 * sent again (its round trip is not sampled). */
static int pinger_wait(struct pinger *p, int udp, long *resent)
{
	long last = -1;
	int64_t last_progress = bench_now_ns();
	pthread_mutex_lock(&p->end.lock);
	while (!p->end.done) {
		epb_done_wait_ms(&p->end, udp ? 20 : 100);
		if (p->end.done) {
			break;
		}
		long c = atomic_load(&p->cur);
		int64_t now = bench_now_ns();
		if (c != last) {
			last = c;
			last_progress = now;
			continue;
		}
		int64_t idle_ms = (now - last_progress) / 1000000;
		if (udp && idle_ms >= UDP_RESEND_MS && *resent < 1000) {
			pthread_mutex_unlock(&p->end.lock);
			uint8_t *b = malloc(p->payload);
			if (b != NULL) {
				memcpy(b, p->sbuf, p->payload);
				uint64_t stamp = (uint64_t)c;
				memcpy(b, &stamp, sizeof(stamp));
				atomic_store(&p->resent_cur, 1);
				hako_endpoint_send(p->link->tx, &p->link->send_key, b, p->payload);
				free(b);
			}
			(*resent)++;
			last_progress = now;
			pthread_mutex_lock(&p->end.lock);
			continue;
		}
		if (idle_ms >= STALL_MS || (udp && *resent >= 1000)) {
			atomic_store(&p->stop, 1);
			p->err = HAKO_ETIMEDOUT;
			snprintf(p->why, sizeof(p->why), "no answer to ping #%ld for %d ms", c,
			         STALL_MS);
			break;
		}
	}
	pthread_mutex_unlock(&p->end.lock);
	return p->err;
}

/* The child's 'R' (with its udp port), or its error. */
static int wait_ready(epb_child_t *ch, uint16_t *port, char *why, size_t cap)
{
	epb_msg_t m;
	int r = epb_recv_msg(ch->from_child, &m, SETUP_MS);
	if (r == 0 && m.code == 'R') {
		*port = (uint16_t)m.value;
		return 0;
	}
	if (r == 0 && m.code == 'E') {
		return epb_fail(why, cap, HAKO_EIO, "child: %s", m.text);
	}
	return epb_fail(why, cap, HAKO_EIO, "the child did not get ready (%s)%s%s",
	                r == -2 ? "timeout" : "it exited", g_res->error[0] ? ": " : "",
	                g_res->error);
}

static int run_endpoint(struct run_args *a, epb_child_t *ch, struct cell *cell, bench_cpu_t *mine,
                        int64_t *wall, char *why, size_t cap)
{
	epb_link_t link;
	epb_link_opts_t o;
	char robot[64];
	link_opts(&o, a->v, a->payload, 1, robot, sizeof(robot));
	uint16_t port = 0, cport = 0;
	int r = epb_link_parent_open(&link, &o, &port, why, cap);
	if (r != 0) {
		epb_link_close(&link);
		return r;
	}
	epb_send_msg(ch->to_child, 'P', port, NULL);
	if ((r = wait_ready(ch, &cport, why, cap)) != 0 ||
	    (r = epb_link_parent_connect(&link, &o, cport, SETUP_MS, why, cap)) != 0) {
		epb_link_close(&link);
		return r;
	}
	static struct pinger p;
	memset(&p, 0, sizeof(p));
	p.link = &link;
	p.payload = a->payload;
	p.loan = a->v == V_SHML;
	p.total = a->total;
	p.warm = a->warm;
	p.sbuf = malloc(a->payload);
	p.rtt = calloc((size_t)a->total, sizeof(*p.rtt));
	if (p.sbuf == NULL || p.rtt == NULL) {
		fprintf(stderr, "endpoint_latency: out of memory\n");
		exit(2);
	}
	for (size_t i = 0; i < a->payload; i++) {
		p.sbuf[i] = (uint8_t)(i * 131u + 7u);
	}
	epb_done_init(&p.end);
	if ((r = hako_endpoint_subscribe(link.rx, &link.recv_key, pong_cb, &p, NULL)) != 0) {
		epb_fail(why, cap, r, "subscribe: %s", hako_strerror(r));
	} else if ((r = epb_send_stamped(p.link, p.loan, p.sbuf, p.payload, 0, &p.t0)) != 0) {
		epb_fail(why, cap, r, "send ping #0: %s", hako_strerror(r));
	} else if ((r = pinger_wait(&p, a->v == V_UDP, &cell->resent)) != 0) {
		epb_fail(why, cap, r, "%s (child: %s)", p.why,
		         g_res->error[0] ? g_res->error : "no error");
	}
	atomic_store(&p.stop, 1);
	if (r == 0) {
		for (long i = a->warm; i < a->total; i++) {
			if (p.rtt[i] != 0) {
				bench_samples_push(&cell->s, p.rtt[i]);
			}
		}
		*mine = bench_cpu_sub(p.c1, p.c0);
		*wall = p.t_end - p.t_start;
	}
	/* The child first: our endpoint's thread may still be in pong_cb until close joins it. */
	char rwhy[200];
	epb_reap(ch, 5000, rwhy, sizeof(rwhy));
	epb_link_close(&link);
	epb_done_destroy(&p.end);
	free(p.sbuf);
	free(p.rtt);
	return r;
}

static int run_zmq(struct run_args *a, epb_child_t *ch, struct cell *cell, bench_cpu_t *mine,
                   int64_t *wall, char *why, size_t cap)
{
	void *ctx;
	void *s = epb_zmq_open(ZMQ_REQ, "tcp://127.0.0.1:*", 1, ZMQ_TIMEOUT_MS, why, cap, &ctx);
	if (s == NULL) {
		return HAKO_EIO;
	}
	char ep[256];
	size_t eplen = sizeof(ep);
	zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &eplen);
	epb_send_msg(ch->to_child, 'P', 0, ep);
	uint16_t cport;
	int r = wait_ready(ch, &cport, why, cap);
	uint8_t *sbuf = malloc(a->payload), *rbuf = malloc(a->payload);
	if (sbuf == NULL || rbuf == NULL) {
		fprintf(stderr, "endpoint_latency: out of memory\n");
		exit(2);
	}
	memset(sbuf, 0x5a, a->payload);
	bench_cpu_t c0 = {0, 0};
	int64_t t_start = 0;
	for (long i = 0; r == 0 && i < a->total; i++) {
		if (i == a->warm) {
			c0 = bench_cpu_self();
			t_start = bench_now_ns();
		}
		uint64_t stamp = (uint64_t)i;
		memcpy(sbuf, &stamp, sizeof(stamp));
		int64_t t0 = bench_now_ns();
		if (zmq_send(s, sbuf, a->payload, 0) != (int)a->payload) {
			r = epb_fail(why, cap, HAKO_EIO, "zmq_send #%ld: %s", i,
			             zmq_strerror(zmq_errno()));
			break;
		}
		int n = zmq_recv(s, rbuf, a->payload, 0);
		int64_t t1 = bench_now_ns();
		if (n != (int)a->payload) {
			r = epb_fail(why, cap, HAKO_EIO, "zmq_recv #%ld: %s (child: %s)", i,
			             zmq_strerror(zmq_errno()), g_res->error);
			break;
		}
		memcpy(&stamp, rbuf, sizeof(stamp));
		if (stamp != (uint64_t)i) {
			r = epb_fail(why, cap, HAKO_EPROTO, "round trip #%ld came back as #%llu", i,
			             (unsigned long long)stamp);
			break;
		}
		if (i >= a->warm) {
			bench_samples_push(&cell->s, (uint64_t)(t1 - t0));
		}
	}
	if (r == 0) {
		*wall = bench_now_ns() - t_start;
		*mine = bench_cpu_sub(bench_cpu_self(), c0);
	}
	char rwhy[200];
	epb_reap(ch, 5000, rwhy, sizeof(rwhy));
	zmq_close(s);
	zmq_ctx_term(ctx);
	free(sbuf);
	free(rbuf);
	return r;
}

static int run_raw(struct run_args *a, epb_child_t *ch, struct cell *cell, bench_cpu_t *mine,
                   int64_t *wall, char *why, size_t cap)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t slen = sizeof(sa);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 1) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &slen) != 0) {
		int e = errno;
		if (lfd >= 0) {
			close(lfd);
		}
		return epb_fail(why, cap, HAKO_EIO, "raw listen: %s", strerror(e));
	}
	epb_send_msg(ch->to_child, 'P', ntohs(sa.sin_port), NULL);
	uint16_t cport;
	int r = wait_ready(ch, &cport, why, cap);
	int fd = -1;
	if (r == 0) {
		struct pollfd pf = {.fd = lfd, .events = POLLIN};
		if (poll(&pf, 1, SETUP_MS) != 1 ||
		    (fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
			r = epb_fail(why, cap, HAKO_EIO, "raw accept: %s", strerror(errno));
		}
	}
	close(lfd);
	int one = 1;
	if (fd >= 0) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	/* The same bytes as the endpoint writes: a v2 header, then the payload. */
	size_t flen = raw_frame_len(a->payload);
	uint8_t *sbuf = malloc(flen), *rbuf = malloc(flen), *body = malloc(a->payload);
	if (sbuf == NULL || rbuf == NULL || body == NULL) {
		fprintf(stderr, "endpoint_latency: out of memory\n");
		exit(2);
	}
	memset(body, 0x5a, a->payload);
	hako_frame_t f;
	memset(&f, 0, sizeof(f));
	snprintf(f.robot, sizeof(f.robot), "bench");
	f.channel_id = CH_PING;
	f.request_type = HAKO_FRAME_PDU_DATA;
	f.body = body;
	f.body_len = (uint32_t)a->payload;
	size_t got = 0;
	if (r == 0 &&
	    (hako_frame_encode(HAKO_FRAME_V2, &f, sbuf, flen, &got) != 0 || got != flen)) {
		r = epb_fail(why, cap, HAKO_EINVAL, "hako_frame_encode failed");
	}
	size_t off = flen - a->payload;
	bench_cpu_t c0 = {0, 0};
	int64_t t_start = 0;
	for (long i = 0; r == 0 && i < a->total; i++) {
		if (i == a->warm) {
			c0 = bench_cpu_self();
			t_start = bench_now_ns();
		}
		uint64_t stamp = (uint64_t)i;
		memcpy(sbuf + off, &stamp, sizeof(stamp));
		int64_t t0 = bench_now_ns();
		if (bench_write_full(fd, sbuf, flen) != 0 || bench_read_full(fd, rbuf, flen) != 0) {
			r = epb_fail(why, cap, HAKO_EIO, "raw round trip #%ld: %s (child: %s)", i,
			             strerror(errno), g_res->error);
			break;
		}
		int64_t t1 = bench_now_ns();
		memcpy(&stamp, rbuf + off, sizeof(stamp));
		if (stamp != (uint64_t)i) {
			r = epb_fail(why, cap, HAKO_EPROTO, "round trip #%ld came back as #%llu", i,
			             (unsigned long long)stamp);
			break;
		}
		if (i >= a->warm) {
			bench_samples_push(&cell->s, (uint64_t)(t1 - t0));
		}
	}
	if (r == 0) {
		*wall = bench_now_ns() - t_start;
		*mine = bench_cpu_sub(bench_cpu_self(), c0);
	}
	char rwhy[200];
	epb_reap(ch, 5000, rwhy, sizeof(rwhy));
	if (fd >= 0) {
		close(fd);
	}
	free(sbuf);
	free(rbuf);
	free(body);
	return r;
}

/* One (variant, payload) run of `per` timed round trips after `warm` discarded ones. */
static void run_one(int v, size_t payload, long per, long warm, struct cell *cell)
{
	char why[600] = "", sz[32];
	bench_size_str(payload, sz, sizeof(sz));
	if (variant_proto[v] == EPB_SHM && g_dom == NULL) {
		return; /* disabled at start-up */
	}
	memset(g_res, 0, sizeof(*g_res));
	struct run_args a = {v, payload, per + warm, warm};
	epb_child_t ch;
	if (epb_spawn(&ch, g_pin ? 1 : -1, ponger_main, &a) != 0) {
		fprintf(stderr, "endpoint_latency: skipped: %s %s: fork: %s\n", variant_names[v],
		        sz, strerror(errno));
		return;
	}
	size_t first = cell->s.n;
	bench_cpu_t mine = {0, 0};
	int64_t wall = 0;
	int r;
	switch (v) {
	case V_ZMQ: r = run_zmq(&a, &ch, cell, &mine, &wall, why, sizeof(why)); break;
	case V_RAW: r = run_raw(&a, &ch, cell, &mine, &wall, why, sizeof(why)); break;
	default: r = run_endpoint(&a, &ch, cell, &mine, &wall, why, sizeof(why)); break;
	}
	char rwhy[200];
	epb_reap(&ch, 5000, rwhy, sizeof(rwhy)); /* no-op if already reaped */
	if (r != 0) {
		cell->s.n = first; /* drop this run's samples */
		epb_run_failed(r, variant_names[v], sz, why, &g_disabled[v], g_disabled_why[v],
		               sizeof(g_disabled_why[v]));
		return;
	}
	if (g_res->have_c0 && g_res->have_c1) {
		bench_cpu_t theirs = bench_cpu_sub(g_res->c1, g_res->c0);
		mine.user += theirs.user;
		mine.sys += theirs.sys;
	}
	cell->cpu.user += mine.user;
	cell->cpu.sys += mine.sys;
	cell->wall_ns += wall;
	cell->trips += (uint64_t)per;
	cell->ran = 1;
	bench_stats_t st = bench_stats_since(&cell->s, first, 0.5);
	if (cell->rounds < MAX_ROUNDS) {
		cell->round_p50[cell->rounds++] = st.p50;
	}
	if (g_verbose) {
		fprintf(stderr, "  %-10s %8s: %ld round trips, p50 %.3f us one-way\n",
		        variant_names[v], sz, per, st.p50);
	}
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: endpoint_latency [options]\n"
	    "  --quick            200 round trips, payloads 64 B and 64 KiB, 1 round (CI)\n"
	    "  --rounds R         interleaved rounds (default 3)\n"
	    "  --count N          round trips per variant and payload, all rounds together\n"
	    "                     (default 20000 for <= 1 KiB, 5000 for <= 64 KiB, 1000 above)\n"
	    "  --payloads LIST    e.g. 64,1K,64K,1M (default)\n"
	    "  --variants LIST    of tcp,udp,websocket,shm,shm-loan,zmq-tcp,raw-tcp (default all)\n"
	    "  --no-pin           do not pin the pinger to CPU 0 and the ponger to CPU 1\n"
	    "  -v, --verbose      progress on stderr\n");
}

int main(int argc, char **argv)
{
	bench_opts_t opt;
	size_t sum = 0;
	int rc = bench_parse_opts(argc, argv, variant_names, NVARIANTS, 1, usage, &opt);
	if (rc < 0) {
		rc = epb_check_opts(&opt, MAX_ROUNDS, "the iteration stamp", usage, &sum);
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
	g_pin = !opt.no_pin;

	epb_init("eplat", "endpoint_latency");
	g_res = bench_shared_alloc(sizeof(*g_res));
	epb_set_child_error(g_res->error, sizeof(g_res->error));
	if (enabled[V_SHM] || enabled[V_SHML]) {
		g_dom = epb_create_domain("eplat", sum, g_domain, sizeof(g_domain));
	}
	int pinned = g_pin && bench_pin_cpu(0) == 0;

	static struct cell cells[MAX_PAYLOADS][NVARIANTS];
	for (long rd = 0; rd < rounds; rd++) {
		if (g_verbose) {
			fprintf(stderr, "round %ld/%ld\n", rd + 1, rounds);
		}
		for (int p = 0; p < npayloads; p++) {
			long n = quick
			             ? 200
			             : (count > 0 ? count
			                          : bench_default_round_trips((size_t)payloads[p]));
			long per = (n + rounds - 1) / rounds;
			long warm = per / 10 > 10 ? per / 10 : 10;
			for (int v = 0; v < NVARIANTS; v++) {
				if (!enabled[v] || g_disabled[v] ||
				    (v == V_UDP && payloads[p] > UDP_MAX)) {
					continue;
				}
				run_one(v, (size_t)payloads[p], per, warm, &cells[p][v]);
			}
		}
	}

	puts(BENCH_CSV_HEADER);
	static bench_stats_t st[MAX_PAYLOADS][NVARIANTS];
	for (int p = 0; p < npayloads; p++) {
		for (int v = 0; v < NVARIANTS; v++) {
			struct cell *c = &cells[p][v];
			if (!c->ran) {
				continue;
			}
			st[p][v] = bench_stats(&c->s, 0.5);
			double ops =
			    c->wall_ns > 0 ? (double)c->trips * 1e9 / (double)c->wall_ns : 0;
			bench_print_row("endpoint_latency", variant_names[v], (size_t)payloads[p],
			                c->s.n, &st[p][v], ops, c->cpu);
		}
	}

	printf("# method: one-way = RTT/2; %ld interleaved rounds, samples pooled per variant; "
	       "%s; warm-up 10%% per round discarded; endpoint variants: the ponger echoes from "
	       "its subscriber callback, the pinger sends the next ping from its own callback\n",
	       rounds, pinned ? "pinger on CPU 0, ponger on CPU 1" : "not pinned");
	char sz[32];
	for (int p = 0; p < npayloads; p++) {
		bench_size_str((size_t)payloads[p], sz, sizeof(sz));
		printf("# round p50s (us) at %s:", sz);
		for (int v = 0; v < NVARIANTS; v++) {
			if (!cells[p][v].ran) {
				continue;
			}
			printf(" %s", variant_names[v]);
			for (int i = 0; i < cells[p][v].rounds; i++) {
				printf("%c%.2f", i == 0 ? ' ' : '/', cells[p][v].round_p50[i]);
			}
		}
		printf("\n");
		if (cells[p][V_UDP].ran && cells[p][V_UDP].resent > 0) {
			epb_both("# udp at %s: %ld pings lost and sent again (not sampled)\n", sz,
			         cells[p][V_UDP].resent);
		}
	}
	epb_print_skipped(variant_names, NVARIANTS, enabled, g_disabled,
	                  (const char(*)[600])g_disabled_why);
	static const int pairs[][2] = {{V_TCP, V_RAW},  {V_TCP, V_ZMQ}, {V_WS, V_TCP},
	                               {V_UDP, V_TCP},  {V_SHM, V_TCP}, {V_SHML, V_TCP},
	                               {V_SHML, V_SHM}, {V_ZMQ, V_RAW}};
	for (int p = 0; p < npayloads; p++) {
		bench_size_str((size_t)payloads[p], sz, sizeof(sz));
		for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
			int a = pairs[k][0], b = pairs[k][1];
			if (cells[p][a].ran && cells[p][b].ran && st[p][b].p50 > 0) {
				epb_both("# ratio %s/%s p50 at %s: %.3f\n", variant_names[a],
				         variant_names[b], sz, st[p][a].p50 / st[p][b].p50);
			}
		}
	}
	for (int p = 0; p < npayloads; p++) {
		bench_size_str((size_t)payloads[p], sz, sizeof(sz));
		if (payloads[p] == 64 && cells[p][V_TCP].ran && cells[p][V_RAW].ran &&
		    st[p][V_RAW].p50 > 0) {
			double x = st[p][V_TCP].p50 / st[p][V_RAW].p50;
			epb_both("# goal tcp p50 <= 1.3x raw-tcp p50 at 64 B: %.3f %s\n", x,
			         x <= 1.3 ? "PASS" : "MISS");
		}
		for (int v = V_SHM; v <= V_SHML; v++) {
			if (payloads[p] == 1048576 && cells[p][v].ran && cells[p][V_TCP].ran &&
			    st[p][v].p50 > 0) {
				epb_both("# %s vs tcp at 1 MiB: p50 %.1f us vs %.1f us, %s %.2fx "
				         "faster\n",
				         variant_names[v], st[p][v].p50, st[p][V_TCP].p50,
				         variant_names[v], st[p][V_TCP].p50 / st[p][v].p50);
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
	bench_shared_free(g_res, sizeof(*g_res));
	g_res = NULL;
	epb_cleanup();
	return 0;
}
