/* fleet-monitor: the fleet's ExMonitor and status line, for hosts in RD mode (fleet_zones.h).
 *
 * Every 50 ms of wall time it reads the hosts' load records (fleet_share.h) and the domain's
 * assets, and:
 *   - prints, once a second, one line for the whole fleet: world time, real-time factor, and
 *     for each host its drones, the time it spends on them a step (p50 / p99) and its CPU;
 *   - finds a host lost (its asset left the domain while the run goes on), says so, and
 *     orders the live host with the fewest drones to take its drones over from their last
 *     checkpoints;
 *   - with --balance, evens the hosts' step times (2 to FLEET_MAX_HOSTS hosts): when the
 *     busiest host spends more than 15 % longer on its drones a step than the least busy
 *     one, it orders it to hand that one as many drones as carry half the difference
 *     (docs/fleet.md, "Load balancing": why this does not oscillate).
 * It is not an asset: the world never waits for it, and hand-offs are safe whenever they
 * happen (RD-Light decides them at world times). It ends on SIGTERM / SIGINT (hako-launch
 * sends it at the end of the run) with a summary.
 *
 * Across the nodes of a federation (an RD-Full config) it runs on the server node, which runs
 * no host: the load records come into its domain, and its orders go out to the client nodes,
 * through hako-bridge (fleet_bridges.h); the hosts ask the server for each move. A host is
 * lost there when its load record stops changing (LOST_US of world time and as much wall
 * time): the server restarts that node's drones itself (docs/rd.md, RD-Full), so the monitor
 * orders no take-over and leaves the host out of the balance. */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fleet_share.h"
#include "fleet_tool.h"
#include "hako/domain.h"
#include "hako/error.h"
#include "hako/rd.h"

#define PROG      "fleet-monitor"
#define MAX_HOSTS FLEET_MAX_HOSTS
#define DEAD_BAND 1.15    /* busier / other step time below this: balanced */
#define SETTLE_US 300000  /* world time after a move before its records count */
#define RECORDS   5       /* load records of each host a decision averages */
#define LOST_US   1000000 /* RD-Full: no new load record for this long (world and wall): lost */

struct host {
	uint8_t node;
	char asset[64];
	char label[96]; /* "host 1", or in RD-Full "host 1 (cli-01)" */
	hako_channel_t *load_ch;
	uint64_t seq;
	fleet_load_t load; /* the last record */
	int have;
	int64_t rec_world, rec_wall; /* the monitor's world and wall time at its last record */
	int seen;                    /* its asset was registered once */
	int lost;
	/* balance: the records since the last move settled */
	double sum_p50;
	int records;
	/* the status line: CPU and world time at the last line */
	uint64_t cpu_last;
};

struct monitor {
	hako_domain_t *dom;
	hako_channel_t *order_ch;
	struct host h[MAX_HOSTS];
	size_t n;
	int balance;
	int full;            /* RD-Full: the hosts are on the client nodes of a federation */
	uint32_t order;      /* the number of the last order */
	uint32_t order_kind; /* ... its kind and the host that carries it out */
	size_t order_host;
	int64_t settle_until; /* world time from which records count again */
	uint32_t moves, moved, takeovers, lost;
	int running_seen;
	int64_t last_world; /* seen while it ran (a reset takes the clock back to 0) */
};

static int write_order(struct monitor *m, uint32_t kind, size_t from, size_t to, uint32_t count)
{
	fleet_order_t o = {FLEET_SHARE_MAGIC, m->order + 1,  kind,
	                   m->h[from].node,   m->h[to].node, count};
	int r = hako_channel_write(m->order_ch, &o, sizeof(o));
	if (r != 0) {
		fprintf(stderr, PROG ": cannot write an order: %s\n", hako_strerror(r));
		return r;
	}
	m->order = o.number;
	m->order_kind = kind;
	m->order_host = kind == FLEET_ORDER_MOVE ? from : to;
	return 0;
}

/* The last order is carried out (or there is none). */
static int order_done(struct monitor *m)
{
	if (m->order == 0) {
		return 1;
	}
	const struct host *h = &m->h[m->order_host];
	return h->lost || (h->have && h->load.order_done >= m->order);
}

static void read_loads(struct monitor *m, int64_t world)
{
	for (size_t i = 0; i < m->n; i++) {
		struct host *h = &m->h[i];
		if (h->load_ch == NULL || hako_channel_seq(h->load_ch) == h->seq) {
			continue;
		}
		fleet_load_t l;
		size_t len = 0;
		uint64_t seq = 0;
		if (hako_channel_read(h->load_ch, &l, sizeof(l), &len, &seq) != 0 ||
		    len != sizeof(l) || l.magic != FLEET_SHARE_MAGIC || l.node != h->node) {
			continue;
		}
		h->seq = seq;
		h->load = l;
		h->have = 1;
		h->rec_world = world;
		h->rec_wall = fleet_now_ns();
		if (world >= m->settle_until && l.world >= m->settle_until && order_done(m)) {
			h->sum_p50 += (double)l.busy_p50_ns;
			h->records++;
		}
	}
}

/* RD-Full: hosts whose load record stopped changing while the world went on are lost. The
 * server restarts their drones on the live hosts from their last checkpoints; the monitor
 * only leaves them out of the balance. */
static void find_stalled(struct monitor *m, int64_t world)
{
	if (hako_domain_state(m->dom) != HAKO_STATE_RUNNING) {
		return;
	}
	m->running_seen = 1;
	int64_t now = fleet_now_ns();
	for (size_t i = 0; i < m->n; i++) {
		struct host *h = &m->h[i];
		if (!h->have || h->lost || world - h->rec_world < LOST_US ||
		    now - h->rec_wall < LOST_US * 1000) {
			continue;
		}
		h->lost = 1;
		m->lost++;
		/* Its drones move to the live hosts: figures from before do not measure that. */
		for (size_t j = 0; j < m->n; j++) {
			m->h[j].sum_p50 = 0;
			m->h[j].records = 0;
		}
		m->settle_until = world + SETTLE_US;
		printf(PROG
		       ": t=%.3f s: %s sent no load record for %.3f s of world time (its last "
		       "at %.3f s, %u drones): lost; the server restarts its drones (RD-Full), "
		       "the balance goes on without it\n",
		       world / 1e6, h->label, (world - h->rec_world) / 1e6, h->load.world / 1e6,
		       h->load.owned);
	}
}

/* Hosts whose asset left the domain while it runs: lost; the other takes their drones. */
static void find_lost(struct monitor *m, int64_t world)
{
	if (m->full) {
		find_stalled(m, world);
		return;
	}
	hako_asset_info_t a[64];
	int count = 0;
	if (hako_domain_list_assets(m->dom, a, 64, &count) != 0) {
		return;
	}
	int running = hako_domain_state(m->dom) == HAKO_STATE_RUNNING;
	m->running_seen |= running;
	for (size_t i = 0; i < m->n; i++) {
		struct host *h = &m->h[i];
		int alive = 0;
		for (int k = 0; k < count && k < 64; k++) {
			alive |= strcmp(a[k].name, h->asset) == 0 && a[k].alive;
		}
		h->seen |= alive;
		if (!h->seen || alive || h->lost || !running) {
			continue;
		}
		h->lost = 1;
		/* The live host with the fewest drones takes them. */
		size_t to = m->n;
		for (size_t j = 0; j < m->n; j++) {
			const struct host *o = &m->h[j];
			if (j != i && !o->lost && o->seen &&
			    (to == m->n || o->load.owned < m->h[to].load.owned)) {
				to = j;
			}
		}
		printf(PROG
		       ": t=%.3f s: host %u (%s) is lost; it had %u drones at its last record%s\n",
		       world / 1e6, h->node, h->asset, h->have ? h->load.owned : 0,
		       to < m->n ? "" : "; no host is left to take them");
		if (to < m->n && write_order(m, FLEET_ORDER_TAKE_OVER, i, to, 0) == 0) {
			printf(PROG
			       ": host %u takes them over from their last checkpoints (order %u)\n",
			       m->h[to].node, m->order);
			m->takeovers++;
		}
	}
}

/* Balance: hand drones from the busiest host to the least busy one until the step times of
 * all live hosts are even: one order at a time, each between those two. */
static void balance(struct monitor *m, int64_t world)
{
	if (!m->balance || m->n < 2 || !order_done(m)) {
		return;
	}
	double b[MAX_HOSTS];
	size_t hi = m->n, lo = m->n, live = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct host *h = &m->h[i];
		if (h->lost) {
			continue;
		}
		if (h->records < RECORDS) {
			return; /* wait for settled figures of every live host */
		}
		b[i] = h->sum_p50 / h->records;
		hi = hi == m->n || b[i] > b[hi] ? i : hi;
		lo = lo == m->n || b[i] < b[lo] ? i : lo;
		live++;
	}
	if (live < 2 || hi == lo) {
		return;
	}
	uint32_t n_hi = m->h[hi].load.owned;
	for (size_t i = 0; i < m->n; i++) {
		m->h[i].sum_p50 = 0;
		m->h[i].records = 0;
	}
	if (b[lo] <= 0 || b[hi] < DEAD_BAND * b[lo] || n_hi < 2) {
		return; /* even enough */
	}
	/* The busier host sheds half the difference; its time per drone (which also holds its
	 * fixed cost a step) overestimates a drone's cost, so the move falls short, never past. */
	double per_drone = b[hi] / n_hi;
	long move = lround((b[hi] - b[lo]) / 2.0 / per_drone);
	if (move > (long)n_hi / 2) {
		move = (long)n_hi / 2;
	}
	if (move < 1) {
		return;
	}
	if (write_order(m, FLEET_ORDER_MOVE, hi, lo, (uint32_t)move) == 0) {
		printf(PROG ": t=%.3f s: %s spends %.3f ms a step on %u drones, %s %.3f ms on %u: "
		            "moving %ld drones to host %u (order %u)\n",
		       world / 1e6, m->h[hi].label, b[hi] / 1e6, n_hi, m->h[lo].label, b[lo] / 1e6,
		       m->h[lo].load.owned, move, m->h[lo].node, m->order);
		m->moves++;
		m->moved += (uint32_t)move;
		m->settle_until = world + SETTLE_US;
	}
}

static void status_line(struct monitor *m, int64_t world, double rtf, double wall_s,
                        const char *lead)
{
	char line[2048];
	int len = snprintf(line, sizeof(line), "%s t=%7.3f s  RTF %5.2f", lead, world / 1e6, rtf);
	uint64_t handoffs = 0, taken = 0;
	for (size_t i = 0; i < m->n && len < (int)sizeof(line); i++) {
		struct host *h = &m->h[i];
		if (!h->have) {
			len +=
			    snprintf(line + len, sizeof(line) - (size_t)len, " | %s: -", h->label);
			continue;
		}
		double cpu = wall_s > 0 ? (double)(h->load.cpu_ns - h->cpu_last) / 1e9 / wall_s : 0;
		h->cpu_last = h->load.cpu_ns;
		len += snprintf(line + len, sizeof(line) - (size_t)len,
		                " | %s: %3u drones, step p50 %.3f p99 %.3f ms, CPU %3.0f %%%s",
		                h->label, h->load.owned, h->load.busy_p50_ns / 1e6,
		                h->load.busy_p99_ns / 1e6, 100.0 * cpu, h->lost ? " (lost)" : "");
		handoffs += h->load.releases;
		taken += h->load.takeovers;
	}
	if (len < (int)sizeof(line)) {
		snprintf(line + len, sizeof(line) - (size_t)len,
		         " | hand-offs %llu, taken over %llu", (unsigned long long)handoffs,
		         (unsigned long long)taken);
	}
	printf("%s\n", line);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " --zones RD [--balance]\n"
	           "  --zones RD   the fleet's RD config (fleet-host --write-zones): its hosts\n"
	           "  --balance    move drones between the hosts until their step times are even\n"
	           "The domain is $HAKO_DOMAIN (hako-launch sets it). With an RD-Full config, run\n"
	           "it on the federation's server node, whose hako-bridge brings the hosts' load\n"
	           "records (fleet-host --write-bridges).\n");
}

int main(int argc, char **argv)
{
	const char *rd = NULL;
	struct monitor m;
	memset(&m, 0, sizeof(m));
	static const struct option longopts[] = {{"zones", required_argument, NULL, 'z'},
	                                         {"balance", no_argument, NULL, 'b'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'z': rd = optarg; break;
		case 'b': m.balance = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (rd == NULL || optind < argc) {
		usage(stderr);
		return 2;
	}
	fleet_tool_start();

	hako_rd_config_t *cfg = NULL;
	hako_error_t err;
	int r = hako_rd_config_load(rd, &cfg, &err);
	if (r != 0) {
		char why[1200];
		hako_error_format(&err, why, sizeof(why));
		fprintf(stderr, PROG ": %s\n", why);
		return 1;
	}
	if (cfg->node_count > MAX_HOSTS) {
		fprintf(stderr, PROG ": %s has %zu hosts; the monitor knows %d\n", rd,
		        cfg->node_count, MAX_HOSTS);
		hako_rd_config_free(cfg);
		return 1;
	}
	const char *dname = hako_domain_default_name();
	if ((r = fleet_open_domain(PROG, &m.dom)) != 0) {
		hako_rd_config_free(cfg);
		return 1;
	}
	m.n = cfg->node_count;
	m.full = cfg->mode == HAKO_RD_MODE_FULL;
	for (size_t i = 0; i < m.n; i++) {
		struct host *h = &m.h[i];
		h->node = cfg->node_ids[i];
		if (m.full) {
			snprintf(h->label, sizeof(h->label), "host %u (%s)", h->node,
			         cfg->node_names[i]);
		} else {
			snprintf(h->label, sizeof(h->label), "host %u", h->node);
		}
		snprintf(h->asset, sizeof(h->asset), "fleet-zone-%u", h->node);
		char robot[64];
		snprintf(robot, sizeof(robot), FLEET_LOAD_ROBOT "%u", h->node);
		if ((r = hako_channel_create(m.dom, robot, 0, sizeof(fleet_load_t), &h->load_ch)) !=
		    0) {
			break;
		}
		h->seq = hako_channel_seq(h->load_ch); /* an earlier run's record is not news */
	}
	if (r == 0) {
		r = hako_channel_create(m.dom, FLEET_ORDER_ROBOT, 0, sizeof(fleet_order_t),
		                        &m.order_ch);
	}
	if (r != 0) {
		fprintf(stderr, PROG ": the fleet's channels in '%s': %s\n", dname,
		        hako_strerror(r));
		hako_domain_close(m.dom);
		hako_rd_config_free(cfg);
		return 1;
	}
	/* Orders are numbered after any left in the channel by an earlier run. */
	fleet_order_t last;
	size_t len = 0;
	if (hako_channel_read(m.order_ch, &last, sizeof(last), &len, NULL) == 0 &&
	    len == sizeof(last) && last.magic == FLEET_SHARE_MAGIC) {
		m.order = last.number;
	}
	uint32_t first_order = m.order;
	printf(PROG ": %zu drones on %zu hosts%s%s\n", cfg->eu_count, m.n,
	       m.full ? " on the client nodes of a federation (RD-Full)" : "",
	       m.balance ? ", balancing their step times" : "");
	int64_t t_line = fleet_now_ns(), w_line = hako_domain_world_time(m.dom);
	int64_t t_run = 0, w_run = 0,
	        t_adv = 0; /* the run's start, the last advance of the clock */
	while (!fleet_quit) {
		struct timespec ts = {0, 50 * 1000000};
		nanosleep(&ts, NULL);
		int64_t world = hako_domain_world_time(m.dom);
		if (world > m.last_world) {
			m.last_world = world;
			t_adv = fleet_now_ns();
		}
		read_loads(&m, world);
		find_lost(&m, world);
		if (m.running_seen && t_run == 0) {
			t_run = fleet_now_ns();
			w_run = world;
		}
		balance(&m, world);
		int64_t t = fleet_now_ns();
		if (t - t_line >= 1000000000 && m.running_seen) {
			double wall = (double)(t - t_line) / 1e9;
			status_line(&m, world, (double)(world - w_line) / 1e6 / wall, wall,
			            "fleet:");
			t_line = t;
			w_line = world;
		}
	}
	int64_t world = hako_domain_world_time(m.dom);
	world = world > m.last_world ? world : m.last_world;
	read_loads(&m, world);
	double wall = t_run != 0 && t_adv > t_run ? (double)(t_adv - t_run) / 1e9 : 0;
	for (size_t i = 0; i < m.n; i++) {
		m.h[i].cpu_last = 0; /* the done line: each host's CPU over the whole run */
	}
	status_line(&m, world, wall > 0 ? (double)(world - w_run) / 1e6 / wall : 0, wall,
	            PROG ": done:");
	if (m.full) {
		printf(PROG ": %u moves ordered (%u drones), %u hosts lost (their drones restarted "
		            "by the server), %u orders\n",
		       m.moves, m.moved, m.lost, m.order - first_order);
	} else {
		printf(PROG
		       ": %u moves ordered (%u drones), %u hosts lost and taken over, %u orders\n",
		       m.moves, m.moved, m.takeovers, m.order - first_order);
	}
	hako_domain_close(m.dom);
	hako_rd_config_free(cfg);
	return 0;
}
