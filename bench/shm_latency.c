/* shm_latency: PDU ping-pong between two processes through hako core channels, side by side
 * with libzmq REQ/REP over ipc:// and a pair of pipes.
 *
 * The parent (pinger, CPU 0) writes the payload with the iteration number in its first 8 bytes
 * to the "ping" channel; the child (ponger, CPU 1) waits for the new write, reads the whole PDU
 * into its own buffer and writes it to the "pong" channel; the pinger waits, reads it into a
 * buffer and checks the iteration number. One-way latency = round trip / 2.
 *
 * The loan variants copy nothing: the pinger stamps the ping in a write loan (hako_channel_loan),
 * the ponger reads the stamp through a read loan (hako_channel_read_loan; loan-touch also reads
 * every byte there) and stamps the pong in a write loan, the pinger reads it through a read loan.
 * Both busy-poll, like spin: spin is the copy they are compared with.
 *
 * Rounds interleave the variants (for each round, for each payload: spin, blocking, zmq-ipc,
 * pipe, loan, loan-touch) and the samples of all rounds are pooled per (variant, payload). See
 * bench/README.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "bench_common.h"
#include "hako/domain.h"

enum { V_SPIN, V_BLOCKING, V_ZMQ, V_PIPE, V_LOAN, V_LOAN_TOUCH, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"spin", "blocking", "zmq-ipc",
                                                     "pipe", "loan",     "loan-touch"};
/* The issue 27 figure for iceoryx 2.0.3's C binding at 64 KiB, busy-poll, zero-copy, one-way
 * (measured on this machine kind; iceoryx is not packaged in Debian, so not run here). */
#define ICEORYX_64K_USEC 0.82

#define MAX_PAYLOADS 16
#define MAX_ROUNDS   64
/* Spin mode: "never sleep" in practice; a wait that long means the peer is gone anyway. */
#define SPIN_USEC    10000000
#define TIMEOUT_USEC 30000000
#define ZMQ_TIMEOUT  30000 /* ms */

struct cell {
	bench_samples_t s; /* round-trip times, ns */
	int64_t wall_ns;   /* timed wall time of all rounds */
	uint64_t trips;
	bench_cpu_t cpu;
	double round_p50[MAX_ROUNDS];
	int rounds;
};

/* Written by the child before it exits. */
struct child_result {
	bench_cpu_t cpu;
	uint64_t sink; /* loan-touch's sum: the bytes are really read */
	char error[160];
};

static char g_domain[64];
static char g_ipc_path[128];
static hako_domain_t *g_dom;
static hako_channel_t *g_ping, *g_pong;
static struct child_result *g_res;
static int g_verbose;

static void cleanup(void)
{
	bench_children_kill();
	if (g_domain[0] != '\0') {
		hako_domain_remove(g_domain);
	}
	if (g_ipc_path[0] != '\0') {
		unlink(g_ipc_path);
	}
}

/* ---- zero-copy legs (loan variants) ---- */

/* Publish a PDU of len bytes whose only written bytes are the stamp. */
static int loan_send(hako_channel_t *ch, uint64_t stamp, size_t len)
{
	void *buf;
	int r = hako_channel_loan(ch, &buf, NULL);
	if (r != 0) {
		return r;
	}
	memcpy(buf, &stamp, sizeof(stamp));
	return hako_channel_commit(ch, len);
}

/* The stamp of the newest PDU, read in place; touch: every byte read too (summed into *sink).
 * The writer waits for our answer before it writes again, so the loan is never overwritten:
 * a release that says otherwise is an error. */
static int loan_recv(hako_channel_t *ch, uint64_t *stamp, size_t *len, uint64_t *seq, int touch,
                     uint64_t *sink)
{
	hako_channel_read_loan_t l;
	int r = hako_channel_read_loan(ch, &l);
	if (r != 0) {
		return r;
	}
	memcpy(stamp, l.data, sizeof(*stamp));
	if (touch) {
		const uint64_t *w = l.data;
		uint64_t sum = 0;
		for (size_t i = 0; i < l.len / sizeof(*w); i++) {
			sum += w[i];
		}
		*sink += sum;
	}
	*len = l.len;
	*seq = l.seq;
	return hako_channel_read_release(ch, &l);
}

/* ---- the ponger (child) ---- */

static void ponger(int v, size_t payload, long total, long warm, uint64_t seen, int ready_fd,
                   int rfd, int wfd)
{
	size_t cap = hako_channel_size(g_ping);
	uint8_t *buf = malloc(cap);
	if (buf == NULL) {
		bench_child_fail("out of memory");
	}
	memset(buf, 0, cap);
	bench_cpu_t c0 = {0, 0};
	void *ctx = NULL, *sock = NULL;
	if (v == V_ZMQ) {
		char ep[160];
		snprintf(ep, sizeof(ep), "ipc://%s", g_ipc_path);
		ctx = zmq_ctx_new();
		sock = ctx != NULL ? zmq_socket(ctx, ZMQ_REP) : NULL;
		/* Linger: the last reply is only queued when zmq_send returns; closing without
		 * linger could drop it. */
		int to = ZMQ_TIMEOUT, linger = 10000;
		if (sock == NULL || zmq_setsockopt(sock, ZMQ_RCVTIMEO, &to, sizeof(to)) != 0 ||
		    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger)) != 0 ||
		    zmq_bind(sock, ep) != 0) {
			bench_child_fail("zmq bind %s: %s", ep, zmq_strerror(zmq_errno()));
		}
	}
	if (bench_write_full(ready_fd, "r", 1) != 0) {
		bench_child_fail("ready pipe");
	}
	hako_time_t spin = v == V_BLOCKING ? 0 : SPIN_USEC;
	uint64_t sink = 0;
	for (long i = 0; i < total; i++) {
		if (i == warm) {
			c0 = bench_cpu_self();
		}
		size_t len = 0;
		int r;
		switch (v) {
		case V_SPIN:
		case V_BLOCKING:
			r = hako_channel_wait(g_ping, seen, spin, TIMEOUT_USEC);
			if (r != 0) {
				bench_child_fail("wait ping #%ld: %s", i, hako_strerror(r));
			}
			r = hako_channel_read(g_ping, buf, cap, &len, &seen);
			if (r != 0 || len != payload) {
				bench_child_fail("read ping #%ld: %s (len %zu)", i,
				                 hako_strerror(r), len);
			}
			if ((r = hako_channel_write(g_pong, buf, len)) != 0) {
				bench_child_fail("write pong: %s", hako_strerror(r));
			}
			break;
		case V_ZMQ: {
			int n = zmq_recv(sock, buf, cap, 0);
			if (n < 0 || (size_t)n != payload) {
				bench_child_fail("zmq_recv #%ld: %s", i, zmq_strerror(zmq_errno()));
			}
			if (zmq_send(sock, buf, (size_t)n, 0) != n) {
				bench_child_fail("zmq_send: %s", zmq_strerror(zmq_errno()));
			}
			break;
		}
		case V_PIPE:
			if (bench_read_full(rfd, buf, payload) != 0) {
				bench_child_fail("pipe read #%ld", i);
			}
			if (bench_write_full(wfd, buf, payload) != 0) {
				bench_child_fail("pipe write");
			}
			break;
		case V_LOAN:
		case V_LOAN_TOUCH: {
			r = hako_channel_wait(g_ping, seen, spin, TIMEOUT_USEC);
			if (r != 0) {
				bench_child_fail("wait ping #%ld: %s", i, hako_strerror(r));
			}
			uint64_t stamp = 0;
			r = loan_recv(g_ping, &stamp, &len, &seen, v == V_LOAN_TOUCH, &sink);
			if (r != 0 || len != payload) {
				bench_child_fail("read loan ping #%ld: %s (len %zu)", i,
				                 hako_strerror(r), len);
			}
			if ((r = loan_send(g_pong, stamp, len)) != 0) {
				bench_child_fail("loan pong: %s", hako_strerror(r));
			}
			break;
		}
		}
	}
	g_res->sink = sink;
	g_res->cpu = bench_cpu_sub(bench_cpu_self(), c0);
	if (sock != NULL) {
		zmq_close(sock);
	}
	if (ctx != NULL) {
		zmq_ctx_term(ctx);
	}
	free(buf);
	_exit(0);
}

/* ---- the pinger (parent) ---- */

static void run_one(int v, size_t payload, long n, long warm, struct cell *cell, uint8_t *sbuf,
                    uint8_t *rbuf)
{
	int ready[2], p2c[2] = {-1, -1}, c2p[2] = {-1, -1};
	if (pipe(ready) != 0 || (v == V_PIPE && (pipe(p2c) != 0 || pipe(c2p) != 0))) {
		bench_die("pipe: %s", strerror(errno));
	}
	memset(g_res, 0, sizeof(*g_res));
	uint64_t seen_ping = hako_channel_seq(g_ping);
	uint64_t seen_pong = hako_channel_seq(g_pong);
	long total = n + warm;
	pid_t pid = bench_children_fork();
	if (pid == 0) {
		bench_pin_cpu(1);
		close(ready[0]);
		if (v == V_PIPE) {
			close(p2c[1]);
			close(c2p[0]);
		}
		ponger(v, payload, total, warm, seen_ping, ready[1], p2c[0], c2p[1]);
	}
	close(ready[1]);
	if (v == V_PIPE) {
		close(p2c[0]);
		close(c2p[1]);
	}
	char c;
	if (bench_read_full(ready[0], &c, 1) != 0) {
		bench_children_wait(pid, NULL);
		bench_die("%s: the ponger did not start: %s", variant_names[v], g_res->error);
	}
	close(ready[0]);

	void *ctx = NULL, *sock = NULL;
	if (v == V_ZMQ) {
		char ep[160];
		snprintf(ep, sizeof(ep), "ipc://%s", g_ipc_path);
		ctx = zmq_ctx_new();
		sock = ctx != NULL ? zmq_socket(ctx, ZMQ_REQ) : NULL;
		int to = ZMQ_TIMEOUT, linger = 0;
		if (sock == NULL || zmq_setsockopt(sock, ZMQ_RCVTIMEO, &to, sizeof(to)) != 0 ||
		    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger)) != 0 ||
		    zmq_connect(sock, ep) != 0) {
			bench_die("zmq connect %s: %s", ep, zmq_strerror(zmq_errno()));
		}
	}
	hako_time_t spin = v == V_BLOCKING ? 0 : SPIN_USEC;
	size_t cap = hako_channel_size(g_pong);
	size_t first = cell->s.n;
	bench_cpu_t c0 = {0, 0};
	int64_t t_start = bench_now_ns();
	for (long i = 0; i < total; i++) {
		if (i == warm) {
			c0 = bench_cpu_self();
			t_start = bench_now_ns();
		}
		uint64_t stamp = (uint64_t)i;
		memcpy(sbuf, &stamp, sizeof(stamp));
		size_t len = 0;
		int r;
		int64_t t0 = bench_now_ns();
		switch (v) {
		case V_SPIN:
		case V_BLOCKING:
			if ((r = hako_channel_write(g_ping, sbuf, payload)) != 0) {
				bench_die("write ping: %s", hako_strerror(r));
			}
			if ((r = hako_channel_wait(g_pong, seen_pong, spin, TIMEOUT_USEC)) != 0) {
				bench_die("%s %zu B: wait pong #%ld: %s (ponger: %s)",
				          variant_names[v], payload, i, hako_strerror(r),
				          g_res->error);
			}
			r = hako_channel_read(g_pong, rbuf, cap, &len, &seen_pong);
			if (r != 0 || len != payload) {
				bench_die("read pong: %s (len %zu)", hako_strerror(r), len);
			}
			break;
		case V_ZMQ: {
			if (zmq_send(sock, sbuf, payload, 0) != (int)payload) {
				bench_die("zmq_send: %s", zmq_strerror(zmq_errno()));
			}
			int got = zmq_recv(sock, rbuf, cap, 0);
			if (got < 0 || (size_t)got != payload) {
				bench_die("zmq_recv #%ld: %s (ponger: %s)", i,
				          zmq_strerror(zmq_errno()), g_res->error);
			}
			break;
		}
		case V_PIPE:
			if (bench_write_full(p2c[1], sbuf, payload) != 0 ||
			    bench_read_full(c2p[0], rbuf, payload) != 0) {
				bench_die("pipe round trip #%ld (ponger: %s)", i, g_res->error);
			}
			break;
		case V_LOAN:
		case V_LOAN_TOUCH: {
			if ((r = loan_send(g_ping, stamp, payload)) != 0) {
				bench_die("loan ping: %s", hako_strerror(r));
			}
			if ((r = hako_channel_wait(g_pong, seen_pong, spin, TIMEOUT_USEC)) != 0) {
				bench_die("%s %zu B: wait pong #%ld: %s (ponger: %s)",
				          variant_names[v], payload, i, hako_strerror(r),
				          g_res->error);
			}
			uint64_t back = 0, sink = 0;
			r = loan_recv(g_pong, &back, &len, &seen_pong, 0, &sink);
			if (r != 0 || len != payload) {
				bench_die("read loan pong: %s (len %zu)", hako_strerror(r), len);
			}
			memcpy(rbuf, &back, sizeof(back));
			break;
		}
		}
		int64_t t1 = bench_now_ns();
		memcpy(&stamp, rbuf, sizeof(stamp));
		if (stamp != (uint64_t)i) {
			bench_die("%s %zu B: round trip #%ld came back as #%llu", variant_names[v],
			          payload, i, (unsigned long long)stamp);
		}
		if (i >= warm) {
			bench_samples_push(&cell->s, (uint64_t)(t1 - t0));
		}
	}
	int64_t t_end = bench_now_ns();
	bench_cpu_t c1 = bench_cpu_self();
	if (sock != NULL) {
		zmq_close(sock);
	}
	if (ctx != NULL) {
		zmq_ctx_term(ctx);
	}
	if (v == V_PIPE) {
		close(p2c[1]);
		close(c2p[0]);
	}
	int status;
	if (bench_children_wait(pid, &status) != 0) {
		bench_die("%s %zu B: ponger failed (status 0x%x): %s", variant_names[v], payload,
		          status, g_res->error);
	}
	bench_cpu_t mine = bench_cpu_sub(c1, c0);
	cell->cpu.user += mine.user + g_res->cpu.user;
	cell->cpu.sys += mine.sys + g_res->cpu.sys;
	cell->wall_ns += t_end - t_start;
	cell->trips += (uint64_t)n;

	/* This round's p50 (one-way), for the spread line. */
	bench_stats_t st = bench_stats_since(&cell->s, first, 0.5);
	if (cell->rounds < MAX_ROUNDS) {
		cell->round_p50[cell->rounds++] = st.p50;
	}
	if (g_verbose) {
		fprintf(stderr, "  %-8s %8zu B: %ld round trips, p50 %.3f us one-way\n",
		        variant_names[v], payload, n, st.p50);
	}
}

static void usage(FILE *f)
{
	fprintf(
	    f, "usage: shm_latency [options]\n"
	       "  --quick            ~200 round trips per variant and payload (CI smoke run)\n"
	       "  --rounds R         interleaved rounds (default 3)\n"
	       "  --count N          round trips per variant and payload, all rounds together\n"
	       "                     (default 20000 for <= 1 KiB, 5000 for <= 64 KiB, 1000 above)\n"
	       "  --payloads LIST    e.g. 64,1K,64K,1M (default)\n"
	       "  --variants LIST    of spin,blocking,zmq-ipc,pipe,loan,loan-touch (default all)\n"
	       "  -v, --verbose      progress on stderr\n");
}

int main(int argc, char **argv)
{
	bench_opts_t opt;
	int rc = bench_parse_opts(argc, argv, variant_names, NVARIANTS, 0, usage, &opt);
	if (rc >= 0) {
		return rc;
	}
	long *payloads = opt.payloads;
	int npayloads = opt.npayloads;
	int *enabled = opt.enabled;
	long rounds = opt.rounds, count = opt.count;
	int quick = opt.quick;
	g_verbose = opt.verbose;
	if (rounds < 1 || rounds > MAX_ROUNDS || count < 0) {
		usage(stderr);
		return 2;
	}
	size_t max_payload = 0;
	for (int p = 0; p < npayloads; p++) {
		if (payloads[p] < 8) {
			fprintf(stderr, "payloads must be >= 8 bytes (the iteration stamp)\n");
			return 2;
		}
		if ((size_t)payloads[p] > max_payload) {
			max_payload = (size_t)payloads[p];
		}
	}

	/* The domain: two channels of the largest payload, two buffers each, plus slack. */
	snprintf(g_domain, sizeof(g_domain), "bench-lat-%d", (int)getpid());
	snprintf(g_ipc_path, sizeof(g_ipc_path), "/tmp/hako-bench-lat-%d.ipc", (int)getpid());
	bench_exit_init("shm_latency", cleanup, 1);
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 8;
	cfg.arena_bytes = 2ull * 2ull * ((max_payload + 4095) & ~(size_t)4095) + (1ull << 20);
	int r = hako_domain_create(g_domain, &cfg, &g_dom);
	if (r != 0) {
		g_domain[0] = '\0';
		bench_die("create domain: %s", hako_strerror(r));
	}
	if ((r = hako_channel_create(g_dom, "bench", 0, max_payload, &g_ping)) != 0 ||
	    (r = hako_channel_create(g_dom, "bench", 1, max_payload, &g_pong)) != 0) {
		bench_die("create channels: %s", hako_strerror(r));
	}
	g_res = bench_shared_alloc(sizeof(*g_res));
	bench_child_fail_init(g_res->error, sizeof(g_res->error));
	uint8_t *sbuf = malloc(max_payload), *rbuf = malloc(max_payload);
	if (sbuf == NULL || rbuf == NULL) {
		bench_die("out of memory");
	}
	for (size_t i = 0; i < max_payload; i++) {
		sbuf[i] = (uint8_t)(i * 131u + 7u);
	}
	memset(rbuf, 0, max_payload);
	int pinned = bench_pin_cpu(0) == 0;

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
				if (enabled[v]) {
					run_one(v, (size_t)payloads[p], per, warm, &cells[p][v],
					        sbuf, rbuf);
				}
			}
		}
	}

	puts(BENCH_CSV_HEADER);
	bench_stats_t st[MAX_PAYLOADS][NVARIANTS];
	for (int p = 0; p < npayloads; p++) {
		for (int v = 0; v < NVARIANTS; v++) {
			if (!enabled[v]) {
				continue;
			}
			struct cell *c = &cells[p][v];
			st[p][v] = bench_stats(&c->s, 0.5);
			double ops =
			    c->wall_ns > 0 ? (double)c->trips * 1e9 / (double)c->wall_ns : 0;
			bench_print_row("shm_latency", variant_names[v], (size_t)payloads[p],
			                c->trips, &st[p][v], ops, c->cpu);
		}
	}

	printf("# method: one-way = RTT/2; %ld interleaved rounds, samples pooled per variant; "
	       "%s; warm-up 10%% per round discarded\n",
	       rounds, pinned ? "pinger on CPU 0, ponger on CPU 1" : "not pinned");
	char sz[32];
	for (int p = 0; p < npayloads; p++) {
		bench_size_str((size_t)payloads[p], sz, sizeof(sz));
		printf("# round p50s (us) at %s:", sz);
		for (int v = 0; v < NVARIANTS; v++) {
			if (!enabled[v]) {
				continue;
			}
			printf(" %s", variant_names[v]);
			for (int i = 0; i < cells[p][v].rounds; i++) {
				printf("%c%.2f", i == 0 ? ' ' : '/', cells[p][v].round_p50[i]);
			}
		}
		printf("\n");
	}
	static const int pairs[][2] = {{V_SPIN, V_ZMQ},  {V_BLOCKING, V_ZMQ},
	                               {V_SPIN, V_PIPE}, {V_BLOCKING, V_PIPE},
	                               {V_LOAN, V_SPIN}, {V_LOAN_TOUCH, V_SPIN}};
	for (int p = 0; p < npayloads; p++) {
		bench_size_str((size_t)payloads[p], sz, sizeof(sz));
		for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
			int a = pairs[k][0], b = pairs[k][1];
			if (enabled[a] && enabled[b] && st[p][b].p50 > 0) {
				printf("# ratio %s/%s p50 at %s: %.3f\n", variant_names[a],
				       variant_names[b], sz, st[p][a].p50 / st[p][b].p50);
			}
		}
	}
	for (int p = 0; p < npayloads; p++) {
		bench_size_str((size_t)payloads[p], sz, sizeof(sz));
		for (int v = V_LOAN; v <= V_LOAN_TOUCH; v++) {
			if (enabled[v] && enabled[V_SPIN] && st[p][V_SPIN].mean > 0) {
				printf("# ratio %s/spin mean at %s: %.3f\n", variant_names[v], sz,
				       st[p][v].mean / st[p][V_SPIN].mean);
			}
		}
		if (payloads[p] == 64 * 1024 && enabled[V_LOAN]) {
			double x = st[p][V_LOAN].mean;
			printf(
			    "# goal loan one-way mean at 64 KiB <= iceoryx %.2f us (the issue 27 "
			    "figure: iceoryx is not in Debian, not run here): %.3f us, %.2fx %s\n",
			    ICEORYX_64K_USEC, x, x / ICEORYX_64K_USEC,
			    x <= ICEORYX_64K_USEC ? "PASS" : "MISS");
		}
	}
	for (int p = 0; p < npayloads; p++) {
		if (payloads[p] != 64) {
			continue;
		}
		if (enabled[V_SPIN]) {
			double x = st[p][V_SPIN].p50;
			printf("# goal spin one-way p50 at 64 B < 1 us: %.3f us %s\n", x,
			       x < 1.0 ? "PASS" : "MISS");
		}
		if (enabled[V_BLOCKING] && enabled[V_ZMQ] && st[p][V_ZMQ].p50 > 0) {
			double x = st[p][V_BLOCKING].p50 / st[p][V_ZMQ].p50;
			printf("# goal blocking p50 < 0.3x zmq-ipc p50 at 64 B: %.3f %s\n", x,
			       x < 0.3 ? "PASS" : "MISS");
		}
	}
	fflush(stdout);

	for (int p = 0; p < npayloads; p++) {
		for (int v = 0; v < NVARIANTS; v++) {
			bench_samples_free(&cells[p][v].s);
		}
	}
	free(sbuf);
	free(rbuf);
	bench_shared_free(g_res, sizeof(*g_res));
	hako_domain_close(g_dom);
	cleanup();
	return 0;
}
