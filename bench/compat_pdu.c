/* compat_pdu: hako_asset_pdu_write / hako_asset_pdu_read (Hakoniwa's by-name API) of a 64-byte
 * PDU against hako_channel_write / hako_channel_read through a handle kept by the caller, and a
 * memcpy of the same bytes, in one process and one run.
 *
 * The by-name calls find the channel from (robot, channel id) on every call; the goal (issue 11)
 * is <= 0.2 us per write. Each sample is a batch of back-to-back calls timed together and
 * divided by the batch size; rounds interleave the variants.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "hako/domain.h"
#include "hako/hako_asset.h"

enum { V_MEMCPY, V_HANDLE_WRITE, V_HANDLE_READ, V_COMPAT_WRITE, V_COMPAT_READ, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"memcpy", "handle-write", "handle-read",
                                                     "compat-write", "compat-read"};

#define PDU_BYTES 64
#define BATCH     1000
#define ROBOT     "Drone"
#define CHANNEL   3

static char g_domain[64];
static hako_domain_t *g_dom;
static hako_master_t *g_master;

static void cleanup(void)
{
	hako_asset_unregister();
	hako_master_stop(g_master);
	g_master = NULL;
	hako_domain_close(g_dom);
	g_dom = NULL;
	hako_domain_remove(g_domain);
}

static inline void escape(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: compat_pdu [--quick] [--rounds R] [--count N] [--variants LIST]\n"
	    "  --quick            a few batches per variant (CI smoke run)\n"
	    "  --rounds R         interleaved rounds (default 3)\n"
	    "  --count N          batches of %d calls per variant, all rounds together\n"
	    "  --variants LIST    of memcpy,handle-write,handle-read,compat-write,compat-read\n",
	    BATCH);
}

/* One batch of BATCH calls of variant v: nanoseconds per call. */
static uint64_t batch(int v, hako_channel_t *ch, char *src, char *dst)
{
	int64_t t0 = bench_now_ns();
	for (int i = 0; i < BATCH; i++) {
		src[0] = (char)i;
		int r = 0;
		switch (v) {
		case V_MEMCPY: memcpy(dst, src, PDU_BYTES); break;
		case V_HANDLE_WRITE: r = hako_channel_write(ch, src, PDU_BYTES); break;
		case V_HANDLE_READ: r = hako_channel_read(ch, dst, PDU_BYTES, NULL, NULL); break;
		case V_COMPAT_WRITE:
			r = hako_asset_pdu_write(ROBOT, CHANNEL, src, PDU_BYTES);
			break;
		case V_COMPAT_READ: r = hako_asset_pdu_read(ROBOT, CHANNEL, dst, PDU_BYTES); break;
		}
		if (r != 0) {
			bench_die("%s: call %d failed (%d)", variant_names[v], i, r);
		}
		escape(dst);
	}
	return (uint64_t)((bench_now_ns() - t0) / BATCH);
}

int main(int argc, char **argv)
{
	bench_opts_t opt;
	int rc = bench_parse_opts(argc, argv, variant_names, NVARIANTS, 0, usage, &opt);
	if (rc >= 0) {
		return rc;
	}
	bench_exit_init("compat_pdu", cleanup, 1);
	long per_round =
	    opt.count > 0 ? (opt.count + opt.rounds - 1) / opt.rounds : (opt.quick ? 20 : 2000);
	snprintf(g_domain, sizeof(g_domain), "bench-compat-%d", (int)getpid());
	setenv("HAKO_DOMAIN", g_domain, 1);
	hako_domain_config_t cfg;
	hako_domain_config_init(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 64;
	cfg.arena_bytes = 1 << 20;
	int r = hako_domain_create(g_domain, &cfg, &g_dom);
	hako_master_config_t mc = {1000, 1000, 0};
	if (r != 0 || (r = hako_master_start(g_dom, &mc, &g_master)) != 0) {
		bench_die("domain %s: %s", g_domain, hako_strerror(r));
	}
	hako_asset_callbacks_t cb = {0};
	if (hako_asset_register("bench", NULL, &cb, 1000, HAKO_ASSET_MODEL_PLANT) != 0 ||
	    hako_asset_pdu_create(ROBOT, CHANNEL, PDU_BYTES) != 0) {
		bench_die("register: %s", hako_strerror(hako_asset_last_error(NULL)));
	}
	/* A few other channels, so the by-name lookup is not alone in the table. */
	for (int i = 0; i < 16; i++) {
		char robot[32];
		snprintf(robot, sizeof(robot), "Other-%d", i);
		hako_asset_pdu_create(robot, i, PDU_BYTES);
	}
	hako_channel_t *ch = NULL;
	if ((r = hako_channel_lookup(g_dom, ROBOT, CHANNEL, &ch)) != 0) {
		bench_die("lookup: %s", hako_strerror(r));
	}
	static char src[PDU_BYTES], dst[PDU_BYTES];
	memset(src, 0x5a, sizeof(src));
	bench_samples_t s[NVARIANTS];
	memset(s, 0, sizeof(s));
	bench_cpu_t cpu0 = bench_cpu_self();
	for (long round = 0; round < opt.rounds; round++) {
		for (long b = 0; b < per_round; b++) {
			for (int v = 0; v < NVARIANTS; v++) {
				if (opt.enabled[v]) {
					bench_samples_push(&s[v], batch(v, ch, src, dst));
				}
			}
		}
	}
	bench_cpu_t cpu = bench_cpu_sub(bench_cpu_self(), cpu0);
	printf("%s\n", BENCH_CSV_HEADER);
	bench_stats_t st[NVARIANTS];
	for (int v = 0; v < NVARIANTS; v++) {
		if (!opt.enabled[v]) {
			continue;
		}
		st[v] = bench_stats(&s[v], 1.0);
		bench_print_row("compat_pdu", variant_names[v], PDU_BYTES, s[v].n * (uint64_t)BATCH,
		                &st[v], st[v].p50 > 0 ? 1e6 / st[v].p50 : 0, cpu);
	}
	printf("# method: batches of %d calls timed together, per-call time; %ld interleaved "
	       "rounds\n",
	       BATCH, opt.rounds);
	if (opt.enabled[V_COMPAT_WRITE] && opt.enabled[V_HANDLE_WRITE]) {
		printf("# ratio compat-write/handle-write p50: %.3f\n",
		       st[V_COMPAT_WRITE].p50 / st[V_HANDLE_WRITE].p50);
	}
	if (opt.enabled[V_COMPAT_READ] && opt.enabled[V_HANDLE_READ]) {
		printf("# ratio compat-read/handle-read p50: %.3f\n",
		       st[V_COMPAT_READ].p50 / st[V_HANDLE_READ].p50);
	}
	for (int v = 0; v < NVARIANTS; v++) {
		bench_samples_free(&s[v]);
	}
	cleanup();
	return 0;
}
