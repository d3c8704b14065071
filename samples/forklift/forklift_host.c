/* forklift-host: one host of the forklift execution unit (EU), node 1 or 2 of the RD-Light
 * demo. Two of them run the same model; at any time one of them, the owner, steps it and
 * writes its PDUs (pos, height, phase); the other is a standby whose clock goes on without the
 * model. The owner hands the EU over, with the model's packed state as the RD context, when the
 * boundary trigger fires (forklift_rd.json: x = 1 m, margin v_max * Dmax).
 *
 *   forklift-host --node N [--rd FILE] [--out DIR]
 *
 * It is a Hakoniwa-style asset "forklift-<N>" (hako_asset.h), 1 ms steps. Each step, at asset
 * time s (the step covers world time [s, s + 1 ms]):
 *   1. hako_rd_poll: ACTIVATE -> restore the context, hako_rd_activate; RELEASED -> standby;
 *      RECLAIMED -> owner again (nobody took over in time);
 *   2. as the owner: run model steps until the model's step count is (s + 1 ms) / 1 ms (after
 *      a hand-off the new owner may be ahead of the old one's last step: it runs the steps in
 *      between, so no step is skipped or run twice), write the PDUs, evaluate the trigger and,
 *      if it fires, release the EU with the packed state.
 * It writes the RD trace and a record of every model step it ran (forklift-report reads both)
 * into DIR, and prints one line per hand-off it receives.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forklift.h"
#include "forklift_records.h"
#include "hako/hako_asset.h"
#include "hako/msgs/geometry_msgs/Twist.h"
#include "hako/msgs/std_msgs/Float64.h"
#include "hako/msgs/std_msgs/Int32.h"
#include "hako/pdu.h"
#include "hako/pdudef.h"
#include "hako/rd.h"

#define MISSION_WAIT_USEC 3000000 /* for the controller's mission at the first step */

enum { PDU_POS, PDU_HEIGHT, PDU_PHASE, PDU_COUNT };

static struct {
	uint8_t node_id;
	char name[32];
	const char *out_dir;
	hako_rd_config_t *cfg;
	const hako_rd_eu_config_t *eu;
	size_t pdu_index[PDU_COUNT]; /* in eu->writes */
	int32_t mission_channel;
	uint32_t mission_size;
	hako_rd_node_t *node;
	hako_time_t delta;
	hako_time_t dmax;
	char trace_path[PATH_MAX];
	char steps_path[PATH_MAX];
	FILE *steps;
	forklift_state_t model;
	int have_model; /* the model was started here or restored from a context */
	uint8_t epoch;
	hako_rd_trigger_state_t trigger;
	/* RD-Full: the commit point this owner stops at (-1: none), from HAKO_RD_EV_COMMIT. */
	hako_time_t commit_at;
	int failed;
	char failure[512];
} H;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int is_force_stop(void)
{
	return stop_requested || H.failed;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	if (H.failed) {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(H.failure, sizeof(H.failure), fmt, ap);
	va_end(ap);
	H.failed = 1;
}

static double t_sec(hako_time_t t)
{
	return (double)t / 1e6;
}

/* The mission the controller wrote before the start; the initial owner starts the model with
 * it. The controller writes it before the simulation starts (hako-launch waits for its
 * "mission sent" line), so this normally succeeds at once. */
static int read_mission(forklift_mission_t *m)
{
	uint8_t pdu[512];
	size_t cap = H.mission_size < sizeof(pdu) ? H.mission_size : sizeof(pdu);
	hako_time_t deadline = hako_now_usec() + MISSION_WAIT_USEC;
	for (;;) {
		int r = hako_asset_pdu_read(FORKLIFT_ROBOT, H.mission_channel, (char *)pdu, cap);
		if (r == 0) {
			r = forklift_mission_decode(pdu, cap, m);
			if (r == 0) {
				return 0;
			}
			if (r != HAKO_EAGAIN) {
				fail("the mission PDU is not a valid mission (%s)",
				     hako_strerror(r));
				return -1;
			}
		}
		if (hako_now_usec() >= deadline || stop_requested) {
			fail("no mission from the controller after %.1f s",
			     MISSION_WAIT_USEC / 1e6);
			return -1;
		}
		usleep(1000);
	}
}

static void write_pdus(hako_time_t model_time)
{
	uint8_t pos[HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST];
	uint8_t height[HAKO_PDU_SIZE_STD_MSGS_FLOAT64];
	uint8_t phase[HAKO_PDU_SIZE_STD_MSGS_INT32];
	hako_pdu_geometry_msgs_Twist_init(pos, sizeof(pos));
	Hako_Twist *tw = hako_pdu_geometry_msgs_Twist_base(pos);
	tw->linear.x = H.model.x;
	tw->linear.y = H.model.y;
	tw->linear.z = H.model.lift;
	tw->angular.z = H.model.yaw;
	hako_pdu_std_msgs_Float64_init(height, sizeof(height));
	hako_pdu_std_msgs_Float64_base(height)->data = H.model.lift;
	hako_pdu_std_msgs_Int32_init(phase, sizeof(phase));
	hako_pdu_std_msgs_Int32_base(phase)->data = H.model.phase;
	struct {
		void *data;
		size_t len;
	} w[PDU_COUNT] = {{pos, sizeof(pos)}, {height, sizeof(height)}, {phase, sizeof(phase)}};
	for (int i = 0; i < PDU_COUNT; i++) {
		int r = hako_rd_write(H.node, H.eu->id, H.pdu_index[i], w[i].data, w[i].len,
		                      model_time);
		if (r != 0) {
			fail("hako_rd_write(%s): %s", H.eu->writes[H.pdu_index[i]].name,
			     hako_strerror(r));
		}
	}
}

static void became_owner(hako_time_t now)
{
	hako_rd_trigger_reset(&H.trigger, H.model.x, now);
}

/* Step 1: what happened to the EU since the last step. */
static void poll_rd(hako_time_t now)
{
	static uint8_t ctx[65536];
	hako_rd_event_t ev = HAKO_RD_EV_NONE;
	hako_rd_activation_t act;
	memset(&act, 0, sizeof(act));
	int r = hako_rd_poll(H.node, H.eu->id, now, &ev, ctx, sizeof(ctx), &act);
	if (r != 0) {
		fail("hako_rd_poll: %s", hako_strerror(r));
		return;
	}
	switch (ev) {
	case HAKO_RD_EV_ACTIVATE: {
		forklift_state_t restored;
		r = forklift_context_unpack(&restored, ctx, act.ctx_len);
		if (r == 0 && restored.step != act.model_step) {
			r = HAKO_EPROTO; /* the RD header and the model disagree */
		}
		if (r != 0) {
			/* Refuse: the old owner keeps (takes back) the EU at its timeout. */
			printf("t=%.3f s  cannot restore the context of epoch %u from node %u: %s; "
			       "refusing the hand-off\n",
			       t_sec(now), act.epoch, act.from, hako_strerror(r));
			hako_rd_activate(H.node, H.eu->id, 0, now);
			return;
		}
		H.model = restored;
		H.have_model = 1;
		r = hako_rd_activate(H.node, H.eu->id, 1, now);
		if (r != 0) {
			fail("hako_rd_activate: %s", hako_strerror(r));
			return;
		}
		H.epoch = act.epoch;
		became_owner(now);
		printf("t=%.3f s  hand-off %u -> %u  epoch %u  x=%.3f m\n",
		       t_sec(act.release_time_usec), act.from, H.node_id, act.epoch, H.model.x);
		break;
	}
	case HAKO_RD_EV_COMMIT: /* RD-Full: stop at the commit point and hand over there */
		H.commit_at = act.release_time_usec;
		break;
	case HAKO_RD_EV_RELEASED: break; /* a standby now: the model waits */
	case HAKO_RD_EV_RECLAIMED: {
		H.commit_at = -1; /* an abandoned commit point is not stopped at */
		hako_rd_eu_state_t st;
		if (hako_rd_get_state(H.node, H.eu->id, &st) == 0) {
			H.epoch = st.epoch;
		}
		printf("t=%.3f s  the hand-off timed out: node %u owns the EU again  epoch %u  "
		       "x=%.3f m\n",
		       t_sec(now), H.node_id, H.epoch, H.model.x);
		became_owner(now);
		break;
	}
	default: break;
	}
}

/* Step 2: the owner's part. */
static void run_model(hako_time_t now)
{
	if (!H.have_model) {
		if (H.node_id != H.eu->initial_owner) {
			fail("node %u owns the EU but never received its context", H.node_id);
			return;
		}
		forklift_mission_t m;
		if (read_mission(&m) != 0) {
			return;
		}
		forklift_model_init(&H.model, &m);
		forklift_steps_write_mission(H.steps, &m);
		H.have_model = 1;
		became_owner(now);
	}
	/* Catch up to this asset step; a new owner that is behind the old one waits. An owner
	 * whose hand-off is committed runs to the commit point and no further. */
	hako_time_t upto = H.commit_at >= 0 && H.commit_at < now ? H.commit_at : now;
	uint64_t target = (uint64_t)(upto / H.delta);
	hako_time_t world = hako_asset_simulation_time();
	int ran = 0;
	while (H.model.step < target) {
		forklift_model_step(&H.model);
		hako_time_t mt = (hako_time_t)H.model.step * H.delta;
		hako_rd_trace_step(H.node, H.eu->id, H.model.step, mt);
		forklift_steps_write(H.steps, &H.model, world, H.node_id, H.epoch);
		ran = 1;
	}
	hako_time_t mt = (hako_time_t)H.model.step * H.delta;
	if (ran) {
		write_pdus(mt);
	}
	if (H.cfg->mode == HAKO_RD_MODE_FULL) {
		/* Released even when no step ran now: the announcement may come in the asset step
		 * after the one that ran the model to the commit point. */
		if (H.commit_at >= 0 && mt >= H.commit_at) {
			uint8_t ctx[FORKLIFT_CONTEXT_SIZE];
			size_t n = forklift_context_pack(&H.model, ctx, sizeof(ctx));
			int r = hako_rd_release(H.node, H.eu->id, 0, ctx, n, H.model.step, now);
			if (r != 0) {
				fail("hako_rd_release at the commit point %.6f s: %s",
				     t_sec(H.commit_at), hako_strerror(r));
			}
			H.commit_at = -1;
		}
		return; /* the conductor's ExMonitor decides the hand-offs */
	}
	if (!ran) {
		return;
	}
	uint8_t next = hako_rd_trigger_boundary(&H.cfg->trigger, &H.trigger, H.node_id, H.model.x,
	                                        H.model.v, mt, H.dmax);
	if (next == 0) {
		return;
	}
	uint8_t ctx[FORKLIFT_CONTEXT_SIZE];
	size_t n = forklift_context_pack(&H.model, ctx, sizeof(ctx));
	int r = hako_rd_release(H.node, H.eu->id, next, ctx, n, H.model.step, mt);
	if (r != 0) {
		fail("hako_rd_release to node %u: %s", next, hako_strerror(r));
		return;
	}
}

/* mkdir -p: 0, or -1 with errno. */
static int make_dirs(const char *path)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = buf + 1; *p != '\0'; p++) {
		if (*p == '/') {
			*p = '\0';
			if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
				return -1;
			}
			*p = '/';
		}
	}
	return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int on_initialize(hako_asset_context_t *c)
{
	(void)c;
	return 0;
}

static int on_simulation_step(hako_asset_context_t *c)
{
	(void)c;
	if (H.failed) {
		return 0;
	}
	hako_time_t now = hako_asset_current_time() + H.delta; /* the end of this step */
	poll_rd(now);
	if (!H.failed && hako_rd_is_owner(H.node, H.eu->id)) {
		run_model(now);
	}
	return 0;
}

static int on_reset(hako_asset_context_t *c)
{
	(void)c;
	return 0;
}

/* The EU's PDUs by name, and the mission channel. */
static int resolve_pdus(void)
{
	const char *names[PDU_COUNT] = {FORKLIFT_PDU_POS, FORKLIFT_PDU_HEIGHT, FORKLIFT_PDU_PHASE};
	for (int i = 0; i < PDU_COUNT; i++) {
		size_t k = 0;
		while (k < H.eu->write_count && strcmp(H.eu->writes[k].name, names[i]) != 0) {
			k++;
		}
		if (k == H.eu->write_count) {
			fprintf(stderr, "forklift-host: %s: EU \"%s\" does not write \"%s\"\n",
			        H.cfg->path, H.eu->name, names[i]);
			return -1;
		}
		H.pdu_index[i] = k;
	}
	hako_pdudef_t *def;
	hako_error_t err;
	char msg[1200];
	if (hako_pdudef_load(H.cfg->pdudef_path, &def, &err) != 0) {
		fprintf(stderr, "forklift-host: %s\n", hako_error_format(&err, msg, sizeof(msg)));
		return -1;
	}
	const hako_pdudef_pdu_t *p = hako_pdudef_find(def, FORKLIFT_ROBOT, FORKLIFT_PDU_MISSION);
	if (p == NULL) {
		fprintf(stderr, "forklift-host: %s: robot \"%s\" has no PDU \"%s\"\n",
		        H.cfg->pdudef_path, FORKLIFT_ROBOT, FORKLIFT_PDU_MISSION);
		hako_pdudef_free(def);
		return -1;
	}
	H.mission_channel = p->channel_id;
	H.mission_size = p->pdu_size;
	hako_pdudef_free(def);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: forklift-host --node N [--rd FILE] [--out DIR]\n\n"
	        "One host of the forklift execution unit of the RD-Light demo: the asset\n"
	        "forklift-<N> in the domain $HAKO_DOMAIN. hako-launch starts two of them (see\n"
	        "launch.json next to this program).\n\n"
	        "options:\n"
	        "  --node N   node id of this host in the RD config (1 = initial owner; default\n"
	        "             $HAKO_RD_NODE, which hako-conductor gen sets)\n"
	        "  --rd FILE  RD config (default: $HAKO_RD_CONFIG, else %s next to this\n"
	        "             program)\n"
	        "  --out DIR  where to write forklift-<N>.trace.jsonl and forklift-<N>.steps.csv\n"
	        "             (default: the current folder)\n"
	        "  -h, --help show this help\n",
	        FORKLIFT_RD_CONFIG);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"node", required_argument, NULL, 'n'},
	                                         {"rd", required_argument, NULL, 'r'},
	                                         {"out", required_argument, NULL, 'o'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	char rd_default[PATH_MAX];
	const char *rd_path = NULL;
	unsigned long node = 0;
	int c;
	H.out_dir = ".";
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (forklift_parse_uint(optarg, 255, &node) != 0 || node == 0) {
				fprintf(stderr, "forklift-host: --node: '%s' is not in 1..255\n",
				        optarg);
				return 2;
			}
			break;
		case 'r': rd_path = optarg; break;
		case 'o': H.out_dir = optarg; break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "forklift-host: %s '%s'\n",
			        c == ':' ? "missing value for" : "unknown option",
			        argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	/* A unit of a generated RD-Full federation (hako-conductor gen, mode "rd") gets its node
	 * and RD config in its environment. */
	const char *env_node = getenv("HAKO_RD_NODE");
	if (node == 0 && env_node != NULL &&
	    (forklift_parse_uint(env_node, 255, &node) != 0 || node == 0)) {
		fprintf(stderr, "forklift-host: HAKO_RD_NODE: '%s' is not in 1..255\n", env_node);
		return 2;
	}
	if (rd_path == NULL && getenv("HAKO_RD_CONFIG") != NULL) {
		rd_path = getenv("HAKO_RD_CONFIG");
	}
	if (node == 0 || optind < argc) {
		fprintf(stderr, "forklift-host: %s\n",
		        node == 0 ? "--node (or HAKO_RD_NODE) is required" : "unexpected argument");
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	H.node_id = (uint8_t)node;
	H.commit_at = -1;
	snprintf(H.name, sizeof(H.name), "forklift-%u", H.node_id);
	if (rd_path == NULL) {
		rd_path = forklift_config_path(FORKLIFT_RD_CONFIG, rd_default, sizeof(rd_default));
	}

	hako_error_t err;
	char msg[1200];
	int r = hako_rd_config_load(rd_path, &H.cfg, &err);
	if (r != 0) {
		fprintf(stderr, "forklift-host: %s\n", hako_error_format(&err, msg, sizeof(msg)));
		return 1;
	}
	H.eu = hako_rd_config_eu(H.cfg, FORKLIFT_EU);
	if (H.eu == NULL) {
		fprintf(stderr, "forklift-host: %s: no execution unit \"%s\"\n", rd_path,
		        FORKLIFT_EU);
		goto fail_cfg;
	}
	int candidate = 0;
	for (size_t i = 0; i < H.eu->candidate_count; i++) {
		candidate |= H.eu->candidates[i] == H.node_id;
	}
	if (!candidate) {
		fprintf(stderr, "forklift-host: %s: node %u is not a candidate owner of \"%s\"\n",
		        rd_path, H.node_id, FORKLIFT_EU);
		goto fail_cfg;
	}
	if (resolve_pdus() != 0) {
		goto fail_cfg;
	}

	/* Fresh files: the RD trace is appended to, and the report must not read an old run. */
	/* The folder the hosts share (a federation's nodes write into one): made if missing. */
	if (make_dirs(H.out_dir) != 0) {
		fprintf(stderr, "forklift-host: cannot make %s: %s\n", H.out_dir, strerror(errno));
		return 1;
	}
	snprintf(H.trace_path, sizeof(H.trace_path), "%s/" FORKLIFT_TRACE_FMT, H.out_dir,
	         H.node_id);
	snprintf(H.steps_path, sizeof(H.steps_path), "%s/" FORKLIFT_STEPS_FMT, H.out_dir,
	         H.node_id);
	if (unlink(H.trace_path) != 0 && errno != ENOENT) {
		fprintf(stderr, "forklift-host: cannot remove %s: %s\n", H.trace_path,
		        strerror(errno));
		goto fail_cfg;
	}
	H.steps = fopen(H.steps_path, "w");
	if (H.steps == NULL) {
		fprintf(stderr, "forklift-host: cannot write %s: %s\n", H.steps_path,
		        strerror(errno));
		goto fail_cfg;
	}
	setvbuf(H.steps, NULL, _IOFBF, 1 << 20);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	hako_asset_callbacks_t callbacks = {
	    .on_initialize = on_initialize,
	    .on_simulation_step = on_simulation_step,
	    .on_reset = on_reset,
	};
	r = hako_asset_register(H.name, H.cfg->pdudef_path, &callbacks, FORKLIFT_DT_USEC,
	                        HAKO_ASSET_MODEL_PLANT);
	if (r != 0) {
		const char *m;
		hako_asset_last_error(&m);
		fprintf(stderr, "forklift-host: cannot register asset %s: %s\n", H.name, m);
		goto fail_steps;
	}
	hako_domain_info_t info;
	hako_domain_get_info(hako_asset_domain(), &info);
	H.delta = FORKLIFT_DT_USEC;
	H.dmax = info.max_delay_usec;
	forklift_steps_info_t si = {.node = H.node_id, .delta_usec = H.delta, .dmax_usec = H.dmax};
	snprintf(si.domain, sizeof(si.domain), "%s", info.name);
	forklift_steps_write_header(H.steps, &si);

	r = hako_rd_node_open(hako_asset_domain(), H.cfg, H.node_id, H.trace_path, &H.node);
	if (r != 0) {
		fprintf(stderr, "forklift-host: cannot open RD node %u: %s\n", H.node_id,
		        hako_strerror(r));
		hako_asset_unregister();
		goto fail_steps;
	}
	r = hako_asset_start_no_wait(is_force_stop);
	hako_rd_node_close(H.node);
	hako_asset_unregister();
	int bad_close = fclose(H.steps) != 0;
	hako_rd_config_free(H.cfg);
	if (H.failed) {
		fprintf(stderr, "forklift-host: node %u: %s\n", H.node_id, H.failure);
		return 1;
	}
	if (bad_close) {
		fprintf(stderr, "forklift-host: cannot write %s\n", H.steps_path);
		return 1;
	}
	if (r != EINTR && !stop_requested) {
		const char *m;
		hako_asset_last_error(&m);
		fprintf(stderr, "forklift-host: the simulation failed: %s\n", m);
		return 1;
	}
	return 0;

fail_steps:
	fclose(H.steps);
fail_cfg:
	hako_rd_config_free(H.cfg);
	return 1;
}
