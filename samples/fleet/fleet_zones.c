/* Zones: drones handed between two hosts at x = 0 (fleet_zones.h). */
#include "fleet_zones.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fleet_cmds.h"
#include "fleet_host.h"
#include "fleet_share.h"
#include "formation.h"
#include "hako/conductor.h"
#include "hako/rd_full.h"
#include "hako/error.h"
#include "hako/msgs/geometry_msgs/Twist.h"
#include "hako/msgs/hako_mavlink_msgs/HakoHilActuatorControls.h"
#include "hako/msgs/hako_msgs/DroneStatus.h"
#include "hako/rd.h"

enum { P_MOTOR, P_POS, P_VELOCITY, P_STATUS, P_COUNT };

struct zdrone {
	drone_t d;
	hako_rd_trigger_state_t tst;
	int requested;        /* RD-Full: a move was asked and not yet committed or given up */
	hako_time_t retry_at; /* RD-Full: a refused move is not asked again before this */
	size_t pdu[P_COUNT];  /* index of each PDU in the EU's writes */
	int loan;         /* the EU writes these four only: written in place (hako_rd_write_loan) */
	fleet_dcmd_t cmd; /* its per-drone command (fleet_cmds.h), in its context */
};

/* A drone's context: its state, then its per-drone command state. */
#define CTX_MAX (DRONE_CONTEXT_SIZE + FLEET_DCMD_CTX_SIZE)

struct fleet_zones {
	hako_domain_t *dom;
	hako_rd_config_t *cfg;
	hako_rd_node_t *node;
	uint8_t self;
	drone_params_t params;
	hako_time_t dmax;
	size_t total;
	struct zdrone *z;
	uint64_t releases, activations, takeovers;
	int balance; /* the RD config's trigger is "manual": the monitor moves drones */
	int grid;    /* the RD config's trigger is "grid": zones are its cells */
	hako_channel_t *load_ch, *order_ch;
	uint64_t order_seq;  /* the order channel's write behind the last order read */
	uint32_t order_done; /* the last order carried out */
	uint32_t to_release; /* a MOVE order being carried out: drones still to hand over */
	uint8_t release_to;
	uint8_t take_from;        /* a TAKE_OVER order: the lost host whose drones this one takes */
	uint8_t lost[256];        /* hosts the monitor found lost: never released to */
	const fleet_plan_t *plan; /* NULL: the built-in schedule */
	int full;                 /* RD-Full: the conductor's server commits every move */
	hako_conductor_config_t *ccfg;
	hako_rd_full_requester_t *rq;
	uint64_t refused, asked; /* RD-Full: moves refused, moves asked and committed */
	int moving;              /* RD-Full: a MOVE order is being carried out this step */
	int ctx_cmd;             /* the RD config has room for the command state in contexts */
	fleet_dcmd_io_t *dio;    /* per-drone commands: every drone's channels (NULL: off) */
	uint64_t dcmd_taken, dcmd_answered;
};

/* The files of a fleet's RD config, and the sizes of each drone's RD channels in them. */
static const char *const config_files[] = {"drone_pdutypes.json", "fleet_pdudef.json",
                                           "fleet_rd.json"};
#define RD_STATUS_SIZE 256u
/* 40 bytes of meta and base, the 24-byte RD header, then the context (rd_config.c's rule). */
#define RD_CONTEXT_SIZE (64u + CTX_MAX)

size_t fleet_zones_extra_channels(size_t n)
{
	return 2 * n + 1 + FLEET_MAX_HOSTS;
}

size_t fleet_zones_extra_bytes(size_t n)
{
	return n * 2 * (RD_STATUS_SIZE + RD_CONTEXT_SIZE) + 4096;
}

int fleet_zones_remove_config(const char *dir)
{
	int rc = 0;
	for (size_t i = 0; i < sizeof(config_files) / sizeof(config_files[0]); i++) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/%s", dir, config_files[i]);
		if (unlink(path) != 0 && errno != ENOENT) {
			rc = -1;
		}
	}
	if (rmdir(dir) != 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST) {
		rc = -1;
	}
	return rc;
}

/* dir/drone_pdutypes.json and dir/fleet_pdudef.json: the fleet's robots and their PDUs. */
static int write_pdu_files(const char *dir, size_t total)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, config_files[0]);
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		return -1;
	}
	fprintf(f,
	        "[\n"
	        "  {\"channel_id\": 0, \"pdu_size\": 112, \"name\": \"motor\", "
	        "\"type\": \"hako_mavlink_msgs/HakoHilActuatorControls\"},\n"
	        "  {\"channel_id\": 1, \"pdu_size\": 72, \"name\": \"pos\", "
	        "\"type\": \"geometry_msgs/Twist\"},\n"
	        "  {\"channel_id\": 5, \"pdu_size\": 72, \"name\": \"velocity\", "
	        "\"type\": \"geometry_msgs/Twist\"},\n"
	        "  {\"channel_id\": 18, \"pdu_size\": 64, \"name\": \"status\", "
	        "\"type\": \"hako_msgs/DroneStatus\"},\n"
	        "  {\"channel_id\": 30, \"pdu_size\": %u, \"name\": \"rd_status\", "
	        "\"type\": \"hako_msgs/ExecutionUnitRuntimeStatus\"},\n"
	        "  {\"channel_id\": 31, \"pdu_size\": %u, \"name\": \"rd_context\", "
	        "\"type\": \"hako_msgs/ExecutionUnitRuntimeContext\"}\n"
	        "]\n",
	        RD_STATUS_SIZE, RD_CONTEXT_SIZE);
	if (fclose(f) != 0) {
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, config_files[1]);
	if ((f = fopen(path, "w")) == NULL) {
		return -1;
	}
	fprintf(f, "{\"paths\": [{\"id\": \"drone\", \"path\": \"drone_pdutypes.json\"}],\n"
	           " \"robots\": [");
	for (size_t k = 1; k <= total; k++) {
		fprintf(f, "%s{\"name\": \"Drone-%zu\", \"pdutypes_id\": \"drone\"}",
		        k > 1 ? ",\n    " : "", k);
	}
	fprintf(f, "]}\n");
	return fclose(f) != 0 ? -1 : 0;
}

/* dir/fleet_rd.json: `head` (up to the execution units), then one EU per drone, candidates
 * nodes 1..hosts; its first owner: with counts, host k has counts[k - 1] drones in order;
 * without, zones: node 1 west of x = 0, node 2 east. */
static int write_rd(const char *dir, size_t total, const char *head, size_t hosts,
                    const size_t *counts, const hako_rd_trigger_t *grid, char *rd_path, size_t len)
{
	char path[4200], cand[160] = "";
	snprintf(path, sizeof(path), "%s/%s", dir, config_files[2]);
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		return -1;
	}
	for (size_t k = 1; k <= hosts; k++) {
		size_t at = strlen(cand);
		snprintf(cand + at, sizeof(cand) - at, "%s%zu", k > 1 ? ", " : "", k);
	}
	fputs(head, f);
	size_t host = 1, left = counts != NULL ? counts[0] : 0;
	for (size_t i = 0; i < total; i++) {
		double start[3];
		fleet_formation_point(FLEET_GRID, i, total, start);
		int owner = start[0] < 0 ? 1 : 2;
		if (grid != NULL) {
			owner = hako_rd_trigger_grid_owner(grid, start[0], start[1]);
		}
		if (counts != NULL) {
			while (left == 0 && host < hosts) {
				left = counts[host++];
			}
			left -= left > 0;
			owner = (int)host;
		}
		fprintf(f,
		        "%s{\"id\": %zu, \"name\": \"drone-%zu\", \"robot\": \"Drone-%zu\", "
		        "\"writes\": [\"motor\", \"pos\", \"velocity\", \"status\"], "
		        "\"candidates\": [%s], \"initial_owner\": %d, \"max_context_bytes\": %u, "
		        "\"status\": \"rd_status\", \"context\": \"rd_context\"}",
		        i > 0 ? ",\n    " : "", i, i + 1, i + 1, cand, owner, CTX_MAX);
	}
	fprintf(f, "]}\n");
	if (fclose(f) != 0) {
		return -1;
	}
	if (snprintf(rd_path, len, "%s/%s", dir, config_files[2]) >= (int)len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* The RD configs' hand-off timeout, us of world time. RD-Light: a released drone not activated
 * by then goes back. RD-Full: the new owner's world is held at the commit point until the
 * context comes, so the timeout does not wait for the context: it bounds how long after a lost
 * node was dropped its drones are restarted elsewhere (the take-over: about this + 2 Dmax). */
#define TIMEOUT_LIGHT "200000"
#define TIMEOUT_FULL  "10000"

int fleet_zones_write_config(const char *dir, size_t total, const char *full, char *rd_path,
                             size_t len)
{
	if (write_pdu_files(dir, total) != 0) {
		return -1;
	}
	drone_params_t p;
	drone_params_default(&p);
	char head[1024];
	if (full != NULL) {
		/* RD-Full: the nodes are the federation's two client nodes, named as their
		 * conductor files name them ("west,east" node ids). */
		char west[64] = "", east[64] = "";
		const char *comma = strchr(full, ',');
		if (comma == NULL || comma == full || (size_t)(comma - full) >= sizeof(west) ||
		    strlen(comma + 1) == 0 || strlen(comma + 1) >= sizeof(east)) {
			errno = EINVAL;
			return -1;
		}
		memcpy(west, full, (size_t)(comma - full));
		snprintf(east, sizeof(east), "%s", comma + 1);
		snprintf(head, sizeof(head),
		         "{\"mode\": \"full\", \"pdudef\": \"fleet_pdudef.json\",\n"
		         " \"nodes\": [{\"id\": 1, \"name\": \"%s\"}, {\"id\": 2, \"name\": "
		         "\"%s\"}],\n"
		         " \"handoff_timeout_usec\": " TIMEOUT_FULL ",\n"
		         " \"trigger\": {\"type\": \"boundary\", \"axis\": \"x\", \"boundary\": "
		         "0.0, \"v_max\": %.1f, \"hysteresis\": 0.3, \"cooldown_usec\": 300000, "
		         "\"low_owner\": 1, \"high_owner\": 2},\n"
		         " \"execution_units\": [",
		         west, east, p.v_max + 0.5);
	} else {
		snprintf(head, sizeof(head),
		         "{\"pdudef\": \"fleet_pdudef.json\",\n"
		         " \"nodes\": [{\"id\": 1, \"name\": \"west\"}, {\"id\": 2, \"name\": "
		         "\"east\"}],\n"
		         " \"handoff_timeout_usec\": " TIMEOUT_LIGHT ",\n"
		         " \"trigger\": {\"type\": \"boundary\", \"axis\": \"x\", \"boundary\": "
		         "0.0, \"v_max\": %.1f, \"hysteresis\": 0.3, \"cooldown_usec\": 300000, "
		         "\"low_owner\": 1, \"high_owner\": 2},\n"
		         " \"execution_units\": [",
		         p.v_max + 0.5);
	}
	return write_rd(dir, total, head, 2, NULL, NULL, rd_path, len);
}

/* Boundaries splitting [lo, hi] into n equal parts, rounded to a millimetre (the file and the
 * writer then hold the same doubles). */
static void split(double lo, double hi, size_t n, double *b)
{
	for (size_t k = 1; k < n; k++) {
		double v = lo + (hi - lo) * (double)k / (double)n;
		b[k - 1] = round(v * 1000.0) / 1000.0;
	}
}

/* The RD config's node names: with full ("n1,n2,...", exactly `hosts` client node ids of a
 * federation) those, else "<prefix>-1", ... 0, or -1 with errno EINVAL. */
static int node_names(const char *full, const char *prefix, size_t hosts,
                      char names[FLEET_MAX_HOSTS][64])
{
	for (size_t k = 0; k < hosts; k++) {
		snprintf(names[k], sizeof(names[k]), "%s-%zu", prefix, k + 1);
	}
	const char *p = full;
	for (size_t k = 0; full != NULL && k < hosts; k++) {
		const char *end = strchr(p, ',');
		size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
		if (n == 0 || n >= sizeof(names[k]) || (k + 1 < hosts) != (end != NULL)) {
			errno = EINVAL;
			return -1;
		}
		memcpy(names[k], p, n);
		names[k][n] = '\0';
		p = end != NULL ? end + 1 : p + n;
	}
	return 0;
}

int fleet_zones_write_grid(const char *dir, size_t total, size_t cols, size_t rows,
                           const char *full, char *rd_path, size_t len)
{
	size_t hosts = cols * rows;
	if (cols < 1 || rows < 1 || hosts < 2 || hosts > FLEET_MAX_HOSTS ||
	    cols > HAKO_RD_GRID_LINES + 1 || rows > HAKO_RD_GRID_LINES + 1) {
		errno = EINVAL;
		return -1;
	}
	/* The nodes' names: the federation's client nodes for RD-Full, in cell order. */
	char names[FLEET_MAX_HOSTS][64];
	if (node_names(full, "zone", hosts, names) != 0) {
		return -1;
	}
	/* The airspace: every place of the mission's formations, split evenly. */
	double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
	for (int f = FLEET_GRID; f <= FLEET_CIRCLE; f++) {
		for (size_t i = 0; i < total; i++) {
			double xyz[3];
			fleet_formation_point((fleet_formation_t)f, i, total, xyz);
			for (int a = 0; a < 2; a++) {
				lo[a] = xyz[a] < lo[a] ? xyz[a] : lo[a];
				hi[a] = xyz[a] > hi[a] ? xyz[a] : hi[a];
			}
		}
	}
	hako_rd_trigger_t g = {.type = "grid", .grid_nx = cols - 1, .grid_ny = rows - 1};
	split(lo[0], hi[0], cols, g.grid_x);
	split(lo[1], hi[1], rows, g.grid_y);
	if (write_pdu_files(dir, total) != 0) {
		return -1;
	}
	drone_params_t p;
	drone_params_default(&p);
	char head[8192];
	int at =
	    snprintf(head, sizeof(head), "{%s\"pdudef\": \"fleet_pdudef.json\",\n \"nodes\": [",
	             full != NULL ? "\"mode\": \"full\", " : "");
	for (size_t k = 0; k < hosts; k++) {
		at += snprintf(head + at, sizeof(head) - (size_t)at,
		               "%s{\"id\": %zu, \"name\": \"%s\"}", k > 0 ? ", " : "", k + 1,
		               names[k]);
	}
	at += snprintf(
	    head + at, sizeof(head) - (size_t)at,
	    "],\n \"handoff_timeout_usec\": %s,\n \"trigger\": {\"type\": \"grid\", \"x\": [",
	    full != NULL ? TIMEOUT_FULL : TIMEOUT_LIGHT);
	for (size_t k = 0; k < g.grid_nx; k++) {
		at += snprintf(head + at, sizeof(head) - (size_t)at, "%s%.3f", k > 0 ? ", " : "",
		               g.grid_x[k]);
	}
	at += snprintf(head + at, sizeof(head) - (size_t)at, "], \"y\": [");
	for (size_t k = 0; k < g.grid_ny; k++) {
		at += snprintf(head + at, sizeof(head) - (size_t)at, "%s%.3f", k > 0 ? ", " : "",
		               g.grid_y[k]);
	}
	at += snprintf(head + at, sizeof(head) - (size_t)at, "],\n  \"owners\": [");
	for (size_t j = 0; j < rows; j++) {
		at += snprintf(head + at, sizeof(head) - (size_t)at, "%s[", j > 0 ? ", " : "");
		for (size_t i = 0; i < cols; i++) {
			g.grid_owner[j][i] = (uint8_t)(1 + i + cols * j);
			at += snprintf(head + at, sizeof(head) - (size_t)at, "%s%u",
			               i > 0 ? ", " : "", g.grid_owner[j][i]);
		}
		at += snprintf(head + at, sizeof(head) - (size_t)at, "]");
	}
	snprintf(head + at, sizeof(head) - (size_t)at,
	         "],\n  \"v_max\": %.1f, \"hysteresis\": 0.3, \"cooldown_usec\": 300000},\n"
	         " \"execution_units\": [",
	         p.v_max + 0.5);
	return write_rd(dir, total, head, hosts, NULL, &g, rd_path, len);
}

int fleet_zones_write_balance(const char *dir, size_t total, const size_t *counts, size_t hosts,
                              const char *full, char *rd_path, size_t len)
{
	size_t sum = 0;
	for (size_t k = 0; k < hosts && counts != NULL; k++) {
		sum += counts[k];
	}
	char names[FLEET_MAX_HOSTS][64];
	if (counts == NULL || hosts < 2 || hosts > FLEET_MAX_HOSTS || sum != total) {
		errno = EINVAL;
		return -1;
	}
	if (node_names(full, "host", hosts, names) != 0 || write_pdu_files(dir, total) != 0) {
		return -1;
	}
	/* The monitor orders the moves ("manual" for the RD library); in RD-Full the hosts ask
	 * the server for each one, as zone hosts do (the same hand-off timeout). */
	char head[2048];
	int at =
	    snprintf(head, sizeof(head), "{%s\"pdudef\": \"fleet_pdudef.json\",\n \"nodes\": [",
	             full != NULL ? "\"mode\": \"full\", " : "");
	for (size_t k = 1; k <= hosts; k++) {
		at += snprintf(head + at, sizeof(head) - (size_t)at,
		               "%s{\"id\": %zu, \"name\": \"%s\"}", k > 1 ? ", " : "", k,
		               names[k - 1]);
	}
	snprintf(head + at, sizeof(head) - (size_t)at,
	         "],\n"
	         " \"handoff_timeout_usec\": %s,\n"
	         " \"trigger\": {\"type\": \"manual\"},\n"
	         " \"execution_units\": [",
	         full != NULL ? TIMEOUT_FULL : TIMEOUT_LIGHT);
	return write_rd(dir, total, head, hosts, counts, NULL, rd_path, len);
}

/* This host got drone zd at world time now: the trigger counts from here. */
static void trigger_reset(struct zdrone *zd, hako_time_t now)
{
	hako_rd_trigger_reset_xy(&zd->tst, zd->d.pos[0], zd->d.pos[1], now);
}

/* The node the RD config's trigger hands drone zd to at model time mt, or 0: the boundary at
 * x = 0, or the owner of the grid cell it enters. */
static uint8_t trigger_next(fleet_zones_t *z, struct zdrone *zd, hako_time_t mt)
{
	const hako_rd_trigger_t *tr = &z->cfg->trigger;
	double v[3];
	drone_velocity_world(&zd->d, v);
	if (z->grid) {
		return hako_rd_trigger_grid(tr, &zd->tst, z->self, zd->d.pos[0], zd->d.pos[1], v[0],
		                            v[1], mt, z->dmax);
	}
	return hako_rd_trigger_boundary(tr, &zd->tst, z->self, zd->d.pos[0], v[0], mt, z->dmax);
}

static size_t write_index(const hako_rd_eu_config_t *eu, const char *name)
{
	for (size_t k = 0; k < eu->write_count; k++) {
		if (strcmp(eu->writes[k].name, name) == 0) {
			return k;
		}
	}
	return SIZE_MAX;
}

int fleet_zones_open(hako_domain_t *dom, const char *rd_path, uint8_t node, const char *trace,
                     fleet_zones_t **out, char *why, size_t why_len)
{
	*out = NULL;
	fleet_zones_t *z = calloc(1, sizeof(*z));
	if (z == NULL) {
		return HAKO_ENOMEM;
	}
	z->dom = dom;
	z->self = node;
	drone_params_default(&z->params);
	hako_error_t err;
	int r = hako_rd_config_load(rd_path, &z->cfg, &err);
	if (r != 0) {
		hako_error_format(&err, why, why_len);
		free(z);
		return r;
	}
	hako_domain_info_t info;
	z->dmax = hako_domain_get_info(dom, &info) == 0 ? info.max_delay_usec : 1000;
	z->total = z->cfg->eu_count;
	z->z = calloc(z->total, sizeof(*z->z));
	if (z->z == NULL) {
		fleet_zones_close(z);
		return HAKO_ENOMEM;
	}
	static const char *const names[P_COUNT] = {"motor", "pos", "velocity", "status"};
	for (size_t i = 0; i < z->total; i++) {
		fleet_drone_start(&z->z[i].d, i, z->total);
		for (int k = 0; k < P_COUNT; k++) {
			z->z[i].pdu[k] = write_index(&z->cfg->eus[i], names[k]);
			if (z->z[i].pdu[k] == SIZE_MAX) {
				snprintf(why, why_len, "%s: EU %s does not write \"%s\"", rd_path,
				         z->cfg->eus[i].name, names[k]);
				fleet_zones_close(z);
				return HAKO_ECONFIG;
			}
		}
		z->z[i].loan = z->cfg->eus[i].write_count == P_COUNT;
		trigger_reset(&z->z[i], 0);
	}
	if ((r = hako_rd_node_open(dom, z->cfg, node, trace, &z->node)) != 0) {
		snprintf(why, why_len, "%s: node %u: %s", rd_path, node, hako_strerror(r));
		fleet_zones_close(z);
		return r;
	}
	hako_rd_trace_writes(z->node, 0);
	z->ctx_cmd = 1;
	for (size_t i = 0; i < z->total; i++) {
		z->ctx_cmd &= z->cfg->eus[i].max_context_bytes >= CTX_MAX;
	}
	z->balance = strcmp(z->cfg->trigger.type, "manual") == 0;
	z->grid = strcmp(z->cfg->trigger.type, "grid") == 0;
	z->full = z->cfg->mode == HAKO_RD_MODE_FULL;
	char robot[64];
	snprintf(robot, sizeof(robot), FLEET_LOAD_ROBOT "%u", node);
	if ((r = hako_channel_create(dom, robot, 0, sizeof(fleet_load_t), &z->load_ch)) != 0 ||
	    (r = hako_channel_create(dom, FLEET_ORDER_ROBOT, 0, sizeof(fleet_order_t),
	                             &z->order_ch)) != 0) {
		snprintf(why, why_len, "the monitor's channels: %s", hako_strerror(r));
		fleet_zones_close(z);
		return r;
	}
	/* An order of an earlier run is not this run's. */
	z->order_seq = hako_channel_seq(z->order_ch);
	*out = z;
	return 0;
}

void fleet_zones_close(fleet_zones_t *z)
{
	if (z == NULL) {
		return;
	}
	hako_rd_full_requester_close(z->rq);
	hako_conductor_config_free(z->ccfg);
	hako_rd_node_close(z->node);
	hako_rd_config_free(z->cfg);
	free(z->dio);
	free(z->z);
	free(z);
}

/* The drone's four PDUs, through the RD node (it stamps the epoch and checks the owner):
 * filled in place in its channels and published together, when the EU writes nothing else. */
static int write_pdus(fleet_zones_t *z, uint32_t eu, struct zdrone *zd, int64_t mt)
{
	static const size_t sizes[P_COUNT] = {
	    HAKO_PDU_SIZE_HAKO_MAVLINK_MSGS_HAKOHILACTUATORCONTROLS,
	    HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST, HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST,
	    HAKO_PDU_SIZE_HAKO_MSGS_DRONESTATUS};
	void *buf[P_COUNT];
	if (zd->loan) {
		int r = hako_rd_write_loan(z->node, eu, buf, P_COUNT);
		if (r == HAKO_EINVAL) {
			zd->loan = 0; /* its writes name a channel twice: written by copy below */
		} else if (r != 0) {
			return r;
		}
	}
	if (zd->loan) {
		void *pdu[P_COUNT];
		size_t lens[P_COUNT];
		for (int k = 0; k < P_COUNT; k++) {
			pdu[k] = buf[zd->pdu[k]];
			lens[zd->pdu[k]] = sizes[k];
		}
		fleet_drone_pdus(&zd->d, mt, pdu);
		return hako_rd_write_commit(z->node, eu, lens, mt);
	}
	uint8_t motor[HAKO_PDU_SIZE_HAKO_MAVLINK_MSGS_HAKOHILACTUATORCONTROLS];
	uint8_t pos[HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST], vel[HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST];
	uint8_t status[HAKO_PDU_SIZE_HAKO_MSGS_DRONESTATUS];
	void *const pdu[P_COUNT] = {motor, pos, vel, status};
	const size_t len[P_COUNT] = {sizeof(motor), sizeof(pos), sizeof(vel), sizeof(status)};
	fleet_drone_pdus(&zd->d, mt, pdu);
	for (int k = 0; k < P_COUNT; k++) {
		int r = hako_rd_write(z->node, eu, zd->pdu[k], pdu[k], len[k], mt);
		if (r != 0) {
			return r;
		}
	}
	return 0;
}

/* A new order of the monitor for this host: remember what to do. */
static void read_order(fleet_zones_t *z)
{
	uint64_t seq = hako_channel_seq(z->order_ch);
	if (seq == z->order_seq) {
		return;
	}
	fleet_order_t o;
	size_t len = 0;
	if (hako_channel_read(z->order_ch, &o, sizeof(o), &len, &seq) != 0 || len != sizeof(o) ||
	    o.magic != FLEET_SHARE_MAGIC || o.number <= z->order_done) {
		z->order_seq = seq;
		return;
	}
	z->order_seq = seq;
	if (o.kind == FLEET_ORDER_MOVE && o.from == z->self && o.to != z->self && o.to <= 255) {
		z->to_release = o.count;
		z->release_to = (uint8_t)o.to;
		z->order_done = o.number;
		z->moving = z->full;
	} else if (o.kind == FLEET_ORDER_TAKE_OVER && o.to == z->self && o.from != z->self &&
	           o.from <= 255) {
		z->take_from = (uint8_t)o.from;
		z->lost[o.from] = 1;
		z->order_done = o.number;
		printf("fleet-zone-%u: taking over the drones of the lost host %u (order %u)\n",
		       z->self, o.from, o.number);
	}
}

/* Drone zd's context into ctx (CTX_MAX bytes): its state, and its command state if the RD
 * config has room for it (a config written before per-drone commands has not). */
static size_t pack_ctx(const fleet_zones_t *z, const struct zdrone *zd, uint8_t *ctx)
{
	size_t n = drone_context_pack(&zd->d, ctx, DRONE_CONTEXT_SIZE);
	if (z->ctx_cmd) {
		n += fleet_dcmd_pack(&zd->cmd, ctx + n, FLEET_DCMD_CTX_SIZE);
	}
	return n;
}

/* A context of a drone at model step `step` into d and c. 0, or -1 if it is not one. */
static int unpack_ctx(drone_t *d, fleet_dcmd_t *c, const uint8_t *ctx, size_t len, uint64_t step)
{
	fleet_dcmd_t none;
	memset(&none, 0, sizeof(none));
	if (len < DRONE_CONTEXT_SIZE || drone_context_unpack(d, ctx, DRONE_CONTEXT_SIZE) != 0 ||
	    d->step != step) {
		return -1;
	}
	if (len == DRONE_CONTEXT_SIZE) {
		*c = none;
		return 0;
	}
	return fleet_dcmd_unpack(c, ctx + DRONE_CONTEXT_SIZE, len - DRONE_CONTEXT_SIZE) == 0 ? 0
	                                                                                     : -1;
}

/* Take drone i over from the lost host, from its last context (or its start). 1 if taken. */
static int take_over(fleet_zones_t *z, size_t i, int64_t now)
{
	struct zdrone *zd = &z->z[i];
	uint32_t eu = z->cfg->eus[i].id;
	hako_rd_eu_state_t st;
	if (hako_rd_get_state(z->node, eu, &st) != 0 || st.curr_owner != z->take_from ||
	    st.local != HAKO_RD_LOCAL_STANDBY) {
		return 0;
	}
	uint8_t ctx[CTX_MAX];
	hako_rd_activation_t act;
	if (hako_rd_take_over(z->node, eu, z->take_from, now, ctx, sizeof(ctx), &act) != 0) {
		return 0; /* logged by the RD library; the drone stays where it is */
	}
	if (act.ctx_len == 0) {
		fleet_drone_start(&zd->d, i, z->total);
		memset(&zd->cmd, 0, sizeof(zd->cmd));
	} else if (unpack_ctx(&zd->d, &zd->cmd, ctx, act.ctx_len, act.model_step) != 0) {
		fprintf(stderr,
		        "fleet-zone-%u: drone %zu: the context of the lost host is not a "
		        "drone's\n",
		        z->self, i + 1);
		return 0;
	}
	trigger_reset(zd, now);
	z->takeovers++;
	return 1;
}

/* Run drone i's model up to step `target`: a drone activated here runs the steps after its
 * release (a drone taken over, those after its last checkpoint). */
static void run_to(fleet_zones_t *z, size_t i, uint64_t target)
{
	struct zdrone *zd = &z->z[i];
	uint32_t eu = z->cfg->eus[i].id;
	while (zd->d.step < target) {
		int64_t mt = (int64_t)(zd->d.step + 1) * DRONE_DT_USEC;
		if (zd->cmd.state == FLEET_DCMD_NONE) {
			fleet_plan_apply(z->plan, &zd->d, i, z->total, mt);
			drone_step(&zd->d, &z->params);
		} else {
			drone_t before = zd->d;
			fleet_plan_apply(z->plan, &zd->d, i, z->total, mt);
			fleet_dcmd_apply(&zd->cmd, &zd->d, mt, fleet_dcmd_changed(&before, &zd->d));
			drone_step(&zd->d, &z->params);
			fleet_dcmd_check(&zd->cmd, &zd->d);
		}
		hako_rd_trace_step(z->node, eu, zd->d.step, mt);
	}
}

/* RD-Full: the conductor committed a move of drone i to node `next` at commit point c: run the
 * model to c, not beyond, write its PDUs there and hand it over with its context. */
static int release_at_commit(fleet_zones_t *z, size_t i, hako_time_t c, uint8_t next)
{
	struct zdrone *zd = &z->z[i];
	uint32_t eu = z->cfg->eus[i].id;
	uint8_t ctx[CTX_MAX];
	run_to(z, i, (uint64_t)(c / DRONE_DT_USEC));
	int64_t mt = (int64_t)zd->d.step * DRONE_DT_USEC;
	int r = write_pdus(z, eu, zd, mt);
	if (r != 0) {
		return r;
	}
	size_t n = pack_ctx(z, zd, ctx);
	if ((r = hako_rd_release(z->node, eu, next, ctx, n, zd->d.step, c)) != 0) {
		return r;
	}
	zd->requested = 0;
	z->releases++;
	return 0;
}

/* RD-Full: ask the server to move drone i to node `next` (it commits the move, or says why
 * not: a hand-off of it is under way, ...; asked again after the trigger's cooldown). 1 if it
 * asked (committed or refused), 0 if the drone was not to be asked now. */
static int ask_move(fleet_zones_t *z, size_t i, uint8_t next, hako_time_t now)
{
	struct zdrone *zd = &z->z[i];
	if (zd->requested || now < zd->retry_at || z->rq == NULL) {
		return 0;
	}
	char why[256] = "";
	hako_rd_commit_t c;
	int r =
	    hako_rd_full_requester_ask(z->rq, z->cfg->eus[i].id, next, 5000, &c, why, sizeof(why));
	if (r == 0) {
		zd->requested = 1;
		z->asked++;
		return 1;
	}
	zd->retry_at = now + z->cfg->trigger.cooldown_usec;
	if (r == HAKO_ECRASHED) {
		z->lost[next] = 1; /* the server lost that node: its zone is this host's now */
	}
	if (z->refused++ < 5) {
		fprintf(stderr, "fleet-zone-%u: moving drone %zu to node %u: %s%s%s\n", z->self,
		        i + 1, next, hako_strerror(r), why[0] ? ": " : "", why);
	}
	return 1;
}

/* The name of RD node `id` (RD-Full: the client node's id in the federation). */
static const char *node_name(const hako_rd_config_t *cfg, uint8_t id)
{
	for (size_t k = 0; k < cfg->node_count; k++) {
		if (cfg->node_ids[k] == id) {
			return cfg->node_names[k];
		}
	}
	return "?";
}

int fleet_zones_step(fleet_zones_t *z, int64_t now)
{
	uint8_t ctx[CTX_MAX];
	read_order(z);
	uint32_t ordered = z->to_release;
	uint64_t asked = z->asked, refused = z->refused;
	int checkpoint = now % FLEET_CKPT_EVERY == 0;
	for (size_t i = 0; i < z->total; i++) {
		struct zdrone *zd = &z->z[i];
		uint32_t eu = z->cfg->eus[i].id;
		hako_rd_event_t ev = HAKO_RD_EV_NONE;
		hako_rd_activation_t act;
		int r = hako_rd_poll(z->node, eu, now, &ev, ctx, sizeof(ctx), &act);
		if (r != 0) {
			return r;
		}
		if (ev == HAKO_RD_EV_ACTIVATE) {
			drone_t restored;
			fleet_dcmd_t cmd;
			int ok = unpack_ctx(&restored, &cmd, ctx, act.ctx_len, act.model_step) == 0;
			if ((r = hako_rd_activate(z->node, eu, ok, now)) != 0) {
				return r;
			}
			if (ok) {
				zd->d = restored;
				zd->cmd = cmd;
				/* RD-Full: a context from the authority (from 0) restarts a
				 * drone of a lost node. */
				if (act.from == 0) {
					z->takeovers++;
				} else {
					z->activations++;
				}
				trigger_reset(zd, now);
			}
		} else if (ev == HAKO_RD_EV_RECLAIMED) {
			trigger_reset(zd, now);
			zd->requested = 0;
		} else if (ev == HAKO_RD_EV_COMMIT) {
			if ((r = release_at_commit(z, i, act.release_time_usec, act.from)) != 0) {
				return r;
			}
			continue;
		} else if (ev == HAKO_RD_EV_HOLD) {
			continue; /* its commit point is not known yet: not a step past it */
		}
		if (!hako_rd_is_owner(z->node, eu) &&
		    (z->take_from == 0 || !take_over(z, i, now))) {
			continue;
		}
		uint64_t target = (uint64_t)(now / DRONE_DT_USEC);
		if (zd->d.step >= target) {
			continue;
		}
		if (z->dio != NULL) {
			z->dcmd_taken +=
			    (uint64_t)fleet_dcmd_poll(&z->dio[i], &zd->cmd, now, z->dmax);
		}
		run_to(z, i, target);
		int64_t mt = (int64_t)zd->d.step * DRONE_DT_USEC;
		if ((r = write_pdus(z, eu, zd, mt)) != 0) {
			return r;
		}
		if (z->dio != NULL && (r = fleet_dcmd_reply(&z->dio[i], &zd->cmd)) != 0) {
			if (r < 0) {
				return r;
			}
			z->dcmd_answered++;
		}
		uint8_t next = 0;
		if (!z->balance) {
			next = trigger_next(z, zd, mt);
			next =
			    z->lost[next] ? 0 : next; /* the lost host's zone is this host's now */
			if (z->full && next != 0) {
				ask_move(z, i, next,
				         mt); /* the server commits it; released at COMMIT */
				next = 0;
			}
		} else if (z->to_release > 0 && z->full) {
			/* A MOVE order in RD-Full: one ask a drone, released at its commit. The
			 * order is done once the asks were made; a refused one is not asked
			 * again for this order (the move falls short, never past). */
			z->to_release -= (uint32_t)ask_move(z, i, z->release_to, mt);
		} else if (z->to_release > 0) {
			next = z->release_to;
			z->to_release--;
		}
		if (next != 0 || checkpoint) {
			size_t n = pack_ctx(z, zd, ctx);
			r = next != 0 ? hako_rd_release(z->node, eu, next, ctx, n, zd->d.step, mt)
			              : hako_rd_checkpoint(z->node, eu, ctx, n, zd->d.step, mt);
			if (r != 0) {
				return r;
			}
			z->releases += next != 0;
		}
	}
	if (z->moving) {
		z->moving = 0;
		printf("fleet-zone-%u: order %u: %u drones to node %u (%s) asked of the server: "
		       "%llu committed, %llu refused\n",
		       z->self, z->order_done, ordered, z->release_to,
		       node_name(z->cfg, z->release_to), (unsigned long long)(z->asked - asked),
		       (unsigned long long)(z->refused - refused));
	}
	z->to_release = 0; /* fewer drones than ordered: the order is done */
	z->take_from = 0;  /* every drone of the lost host was looked at */
	return 0;
}

size_t fleet_zones_owned(fleet_zones_t *z)
{
	size_t n = 0;
	for (size_t i = 0; z != NULL && i < z->total; i++) {
		n += hako_rd_is_owner(z->node, z->cfg->eus[i].id) != 0;
	}
	return n;
}

int fleet_zones_publish(fleet_zones_t *z, int64_t now, uint64_t busy_p50_ns, uint64_t busy_p99_ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	fleet_load_t l = {FLEET_SHARE_MAGIC,
	                  z->self,
	                  (uint32_t)fleet_zones_owned(z),
	                  z->order_done,
	                  now,
	                  busy_p50_ns,
	                  busy_p99_ns,
	                  (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
	                  z->releases,
	                  z->activations,
	                  z->takeovers};
	return hako_channel_write(z->load_ch, &l, sizeof(l));
}

int fleet_zones_enable_cmds(fleet_zones_t *z, char *why, size_t why_len)
{
	if (!z->ctx_cmd) {
		snprintf(why, why_len,
		         "%s: its contexts have no room for per-drone commands (max_context_bytes "
		         "%u); write it again with fleet-host --write-zones",
		         z->cfg->path, CTX_MAX);
		return HAKO_ECONFIG;
	}
	z->dio = calloc(z->total, sizeof(*z->dio));
	if (z->dio == NULL) {
		return HAKO_ENOMEM;
	}
	for (size_t i = 0; i < z->total; i++) {
		int r = fleet_dcmd_open(z->dom, i, &z->dio[i]);
		if (r != 0) {
			snprintf(why, why_len, "the drone_cmd channels of Drone-%zu: %s", i + 1,
			         hako_strerror(r));
			return r;
		}
	}
	return 0;
}

void fleet_zones_cmd_counts(const fleet_zones_t *z, uint64_t *taken, uint64_t *answered)
{
	*taken = z != NULL ? z->dcmd_taken : 0;
	*answered = z != NULL ? z->dcmd_answered : 0;
}

int fleet_zones_grid(const fleet_zones_t *z)
{
	return z != NULL && z->grid;
}

int fleet_zones_full(const fleet_zones_t *z)
{
	return z != NULL && z->full;
}

int fleet_zones_set_conductor(fleet_zones_t *z, const char *path, char *why, size_t why_len)
{
	hako_error_t err;
	int r = hako_conductor_config_load(path, &z->ccfg, &err);
	if (r != 0) {
		hako_error_format(&err, why, why_len);
		return r;
	}
	if ((r = hako_rd_full_requester_open(z->ccfg, &z->rq)) != 0) {
		snprintf(why, why_len, "%s: cannot reach its server: %s", path, hako_strerror(r));
	}
	return r;
}

void fleet_zones_set_plan(fleet_zones_t *z, const fleet_plan_t *p)
{
	z->plan = p;
}

int fleet_zones_balancing(const fleet_zones_t *z)
{
	return z != NULL && z->balance;
}

uint64_t fleet_zones_takeovers(const fleet_zones_t *z)
{
	return z != NULL ? z->takeovers : 0;
}

size_t fleet_zones_total(const fleet_zones_t *z)
{
	return z != NULL ? z->total : 0;
}

int fleet_zones_owns(fleet_zones_t *z, size_t i)
{
	return z != NULL && i < z->total && hako_rd_is_owner(z->node, z->cfg->eus[i].id);
}

const drone_t *fleet_zones_drone(const fleet_zones_t *z, size_t i)
{
	return z != NULL && i < z->total ? &z->z[i].d : NULL;
}

uint64_t fleet_zones_releases(const fleet_zones_t *z)
{
	return z != NULL ? z->releases : 0;
}

uint64_t fleet_zones_activations(const fleet_zones_t *z)
{
	return z != NULL ? z->activations : 0;
}
