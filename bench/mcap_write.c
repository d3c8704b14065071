/* mcap_write: the MCAP writer of hako-record (tools/mcap) alone, 100 B messages on 1,024
 * channels (a fleet's PDUs), against baselines in the same run:
 *
 *   fwrite      the same Message records (131 B each) written with fwrite to a file: the I/O
 *   zstd-alone  the same records compressed by zstd (level 1) in 1 MiB buffers, written nowhere
 *   mcap-none   hako_mcap_writer, chunks of 1 MiB uncompressed, with indexes and summary
 *   mcap-zstd   the same, chunks compressed with zstd level 1 (what hako-record writes)
 *   mcap-lz4    the same, chunks compressed with lz4 (frame format, default level)
 *
 * Each round runs every variant once over N messages (file created, written, closed: the summary
 * is in the time); the files go to /dev/shm when it exists (else $TMPDIR or /tmp) so that the
 * disk does not decide. Per-message times come from batches of 1,000 messages; ops_per_s is the
 * median over the rounds of N / the round's wall time. Pinned to CPU 0 (--no-pin: not).
 * Goal (issue 25): mcap-zstd >= 1 M messages/s on one core. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "bench_common.h"
#include "mcap.h"

#define PAYLOAD    100
#define CHANNELS   1024
#define POOL       4096 /* distinct payloads, cycled */
#define BATCH      1000
#define RECORD     (9 + 22 + PAYLOAD)
#define ZBUF       (1u << 20)
#define MAX_ROUNDS 64

enum { V_FWRITE, V_ZSTD, V_MCAP_NONE, V_MCAP_ZSTD, V_MCAP_LZ4, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"fwrite", "zstd-alone", "mcap-none",
                                                     "mcap-zstd", "mcap-lz4"};

static uint8_t g_pool[POOL][PAYLOAD];
static char g_path[512];
static uint64_t g_bytes[NVARIANTS]; /* file bytes of the last round */

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: mcap_write [--quick] [--rounds R] [--count N] [--variants LIST] [--no-pin]\n"
	    "  variants: fwrite, zstd-alone, mcap-none, mcap-zstd, mcap-lz4 (default: all)\n"
	    "  --count N: messages per round (default 2,000,000; --quick 100,000)\n");
}

static void cleanup(void)
{
	if (g_path[0]) {
		unlink(g_path);
	}
}

/* Twist-like PDUs: 12 float64 drifting slowly, and a 4-byte counter; what a fleet records. */
static void make_pool(void)
{
	for (int i = 0; i < POOL; i++) {
		double v[12];
		for (int k = 0; k < 12; k++) {
			v[k] = sin(0.001 * i + k) * (k + 1);
		}
		memcpy(g_pool[i], v, sizeof(v));
		uint32_t c = (uint32_t)i;
		memcpy(g_pool[i] + 96, &c, 4);
	}
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
}

/* A Message record as the writer makes it, for the baselines. */
static void make_record(uint8_t *r, long i)
{
	r[0] = 0x05;
	put_u64(r + 1, 22 + PAYLOAD);
	r[9] = (uint8_t)(i % CHANNELS);
	r[10] = (uint8_t)((i % CHANNELS) >> 8);
	memcpy(r + 11, &i, 4);
	put_u64(r + 15, (uint64_t)i * 1000);
	put_u64(r + 23, (uint64_t)i * 1000 + 7);
	memcpy(r + 31, g_pool[i % POOL], PAYLOAD);
}

typedef struct run {
	int v;
	FILE *f;
	ZSTD_CCtx *z;
	uint8_t *buf, *zout;
	size_t len;
	hako_mcap_writer_t *w;
} run_t;

static void run_open(run_t *r, int v)
{
	memset(r, 0, sizeof(*r));
	r->v = v;
	if (v == V_FWRITE) {
		r->f = fopen(g_path, "wb");
		if (r->f == NULL) {
			bench_die("%s: cannot create", g_path);
		}
	} else if (v == V_ZSTD) {
		r->z = ZSTD_createCCtx();
		r->buf = malloc(ZBUF + RECORD);
		r->zout = malloc(ZSTD_compressBound(ZBUF + RECORD));
		if (r->z == NULL || r->buf == NULL || r->zout == NULL) {
			bench_die("out of memory");
		}
	} else {
		hako_mcap_writer_opts_t o = {.profile = "ros2",
		                             .library = "hako bench",
		                             .compression =
		                                 v == V_MCAP_ZSTD  ? HAKO_MCAP_COMPRESS_ZSTD
		                                 : v == V_MCAP_LZ4 ? HAKO_MCAP_COMPRESS_LZ4
		                                                   : HAKO_MCAP_COMPRESS_NONE,
		                             .zstd_level = 1};
		char err[512];
		int rc = hako_mcap_writer_open(&r->w, g_path, &o, err, sizeof(err));
		if (rc) {
			bench_die("%s", err);
		}
		uint16_t sid;
		rc = hako_mcap_writer_add_schema(r->w, "geometry_msgs/msg/Twist", "ros2msg",
		                                 "geometry_msgs/Vector3 linear\n", 29, &sid);
		for (int c = 0; c < CHANNELS && rc == 0; c++) {
			char topic[64];
			snprintf(topic, sizeof(topic), "/drone%d/pdu%d", c / 4, c % 4);
			rc = hako_mcap_writer_add_channel(r->w, sid, topic, "cdr", NULL, NULL);
		}
		if (rc) {
			bench_die("writer: %s", hako_mcap_writer_error(r->w));
		}
	}
}

static void zstd_flush(run_t *r)
{
	size_t z =
	    ZSTD_compressCCtx(r->z, r->zout, ZSTD_compressBound(ZBUF + RECORD), r->buf, r->len, 1);
	if (ZSTD_isError(z)) {
		bench_die("zstd: %s", ZSTD_getErrorName(z));
	}
	g_bytes[V_ZSTD] += z;
	r->len = 0;
}

static void run_message(run_t *r, long i)
{
	switch (r->v) {
	case V_FWRITE: {
		uint8_t rec[RECORD];
		make_record(rec, i);
		if (fwrite(rec, 1, RECORD, r->f) != RECORD) {
			bench_die("fwrite failed");
		}
		break;
	}
	case V_ZSTD:
		make_record(r->buf + r->len, i);
		r->len += RECORD;
		if (r->len >= ZBUF) {
			zstd_flush(r);
		}
		break;
	default: {
		int rc = hako_mcap_writer_write(r->w, (uint16_t)(i % CHANNELS), (uint32_t)i,
		                                (uint64_t)i * 1000, (uint64_t)i * 1000 + 7,
		                                g_pool[i % POOL], PAYLOAD);
		if (rc) {
			bench_die("write: %s", hako_mcap_writer_error(r->w));
		}
	}
	}
}

static void run_close(run_t *r)
{
	if (r->v == V_FWRITE) {
		g_bytes[V_FWRITE] = (uint64_t)ftell(r->f);
		if (fclose(r->f) != 0) {
			bench_die("fclose failed");
		}
	} else if (r->v == V_ZSTD) {
		if (r->len) {
			zstd_flush(r);
		}
		ZSTD_freeCCtx(r->z);
		free(r->buf);
		free(r->zout);
	} else {
		hako_mcap_writer_stats_t st;
		hako_mcap_writer_get_stats(r->w, &st);
		int rc = hako_mcap_writer_close(r->w);
		if (rc) {
			bench_die("close: %d", rc);
		}
		FILE *f = fopen(g_path, "rb");
		if (f) {
			fseek(f, 0, SEEK_END);
			g_bytes[r->v] = (uint64_t)ftell(f);
			fclose(f);
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	bench_opts_t opt;
	int rc = bench_parse_opts(argc, argv, variant_names, NVARIANTS, 1, usage, &opt);
	if (rc >= 0) {
		return rc;
	}
	bench_exit_init("mcap_write", cleanup, 1);
	if (opt.rounds > MAX_ROUNDS) {
		opt.rounds = MAX_ROUNDS;
	}
	long n = opt.count > 0 ? opt.count : (opt.quick ? 100000 : 2000000);
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
	snprintf(g_path, sizeof(g_path), "%s/hako-bench-mcap-%d.mcap", dir ? dir : "/tmp",
	         (int)getpid());
	int pinned = !opt.no_pin && bench_pin_cpu(0) == 0;
	make_pool();

	bench_samples_t s[NVARIANTS];
	memset(s, 0, sizeof(s));
	double rate[NVARIANTS][MAX_ROUNDS];
	bench_cpu_t cpu[NVARIANTS];
	memset(cpu, 0, sizeof(cpu));
	for (long round = 0; round < opt.rounds; round++) {
		for (int v = 0; v < NVARIANTS; v++) {
			if (!opt.enabled[v]) {
				continue;
			}
			g_bytes[v] = 0;
			bench_cpu_t c0 = bench_cpu_self();
			int64_t t0 = bench_now_ns();
			run_t r;
			run_open(&r, v);
			int64_t tb = bench_now_ns();
			for (long i = 0; i < n; i++) {
				run_message(&r, i);
				if ((i + 1) % BATCH == 0) {
					int64_t t = bench_now_ns();
					bench_samples_push(&s[v], (uint64_t)(t - tb) / BATCH);
					tb = t;
				}
			}
			run_close(&r);
			int64_t t1 = bench_now_ns();
			bench_cpu_t d = bench_cpu_sub(bench_cpu_self(), c0);
			cpu[v].user += d.user;
			cpu[v].sys += d.sys;
			rate[v][round] = (double)n / ((double)(t1 - t0) / 1e9);
			unlink(g_path);
		}
	}

	printf("%s\n", BENCH_CSV_HEADER);
	double med[NVARIANTS] = {0};
	for (int v = 0; v < NVARIANTS; v++) {
		if (!opt.enabled[v]) {
			continue;
		}
		double sorted[MAX_ROUNDS];
		memcpy(sorted, rate[v], (size_t)opt.rounds * sizeof(double));
		qsort(sorted, (size_t)opt.rounds, sizeof(double), cmp_double);
		med[v] = sorted[opt.rounds / 2];
		bench_stats_t st = bench_stats(&s[v], 1.0);
		bench_print_row("mcap_write", variant_names[v], PAYLOAD, (uint64_t)n * opt.rounds,
		                &st, med[v], cpu[v]);
	}
	printf("# method: %ld rounds x %ld messages of %d B on %d channels per variant, "
	       "interleaved; per-message times from batches of %d; ops_per_s = median over rounds "
	       "of messages / wall time (open to close); files in %s; %s\n",
	       opt.rounds, n, PAYLOAD, CHANNELS, BATCH, dir ? dir : "/tmp",
	       pinned ? "pinned to CPU 0" : "not pinned");
	for (int v = 0; v < NVARIANTS; v++) {
		if (!opt.enabled[v]) {
			continue;
		}
		printf("# rounds %s msgs/s:", variant_names[v]);
		for (long k = 0; k < opt.rounds; k++) {
			printf(" %.0f", rate[v][k]);
		}
		printf("; output %.1f B/message\n", (double)g_bytes[v] / (double)n);
	}
	if (opt.enabled[V_MCAP_ZSTD] && opt.enabled[V_FWRITE]) {
		printf("# ratio mcap-zstd/fwrite msgs/s: %.3f\n", med[V_MCAP_ZSTD] / med[V_FWRITE]);
	}
	if (opt.enabled[V_MCAP_ZSTD] && opt.enabled[V_ZSTD]) {
		printf("# ratio mcap-zstd/zstd-alone msgs/s: %.3f\n",
		       med[V_MCAP_ZSTD] / med[V_ZSTD]);
	}
	if (opt.enabled[V_MCAP_ZSTD]) {
		printf(
		    "# goal mcap-zstd >= 1000000 msgs/s of 100 B on one core: %s (median %.0f)\n",
		    med[V_MCAP_ZSTD] >= 1e6 ? "PASS" : "MISS", med[V_MCAP_ZSTD]);
	}
	for (int v = 0; v < NVARIANTS; v++) {
		bench_samples_free(&s[v]);
	}
	cleanup();
	return 0;
}
