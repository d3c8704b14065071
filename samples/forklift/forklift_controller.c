/* forklift-controller: gives the forklift its mission and watches it.
 *
 *   forklift-controller [--rd FILE] [--forward M] [--backward M] [--speed V] [--lift M]
 *                       [--loops N] [--every-usec T]
 *
 * An asset "forklift-controller" (hako_asset.h). Before the simulation starts it writes the
 * mission PDU (std_msgs/Float64MultiArray, see forklift.h) once and prints "mission sent";
 * hako-launch waits for that line before it starts the simulation. The model reads the mission
 * only when it starts, and the mission then travels in the RD context, so nothing the model
 * computes depends on how the processes are scheduled inside a world step.
 *
 * While the simulation runs it prints one status line every simulated second: the owner, the
 * epoch, and x and the phase as the EU's PDUs say, read through an RD observer (node 0), which
 * drops a PDU whose epoch is not the current one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forklift.h"
#include "hako/hako_asset.h"
#include "hako/msgs/geometry_msgs/Twist.h"
#include "hako/msgs/std_msgs/Int32.h"
#include "hako/pdu.h"
#include "hako/pdudef.h"
#include "hako/rd.h"

#define ASSET_NAME "forklift-controller"

static struct {
	hako_rd_config_t *cfg;
	const hako_rd_eu_config_t *eu;
	hako_rd_node_t *obs;
	size_t pos_index, phase_index;
	hako_time_t every;
	hako_time_t delta;
} C;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int is_force_stop(void)
{
	return stop_requested;
}

static const char *status_name(hako_rd_status_t s)
{
	switch (s) {
	case HAKO_RD_OWNER_STABLE: return "stable";
	case HAKO_RD_OWNER_RELEASING: return "releasing";
	case HAKO_RD_OWNER_ACTIVATING: return "activating";
	}
	return "?";
}

static void print_status(hako_time_t t)
{
	hako_rd_eu_state_t st;
	if (hako_rd_get_state(C.obs, C.eu->id, &st) != 0) {
		printf("t=%6.3f s  (the EU's status is not readable)\n", t / 1e6);
		return;
	}
	char owner[64];
	if (st.status == HAKO_RD_OWNER_STABLE) {
		snprintf(owner, sizeof(owner), "owner forklift-%u", st.curr_owner);
	} else {
		snprintf(owner, sizeof(owner), "%s %u -> %u", status_name(st.status), st.curr_owner,
		         st.next_owner);
	}
	uint8_t pos[HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST], phase[HAKO_PDU_SIZE_STD_MSGS_INT32];
	size_t len = 0;
	char what[96];
	if (hako_rd_read(C.obs, C.eu->id, C.pos_index, pos, sizeof(pos), &len) == 0 &&
	    len >= sizeof(pos)) {
		const Hako_Twist *tw = hako_pdu_geometry_msgs_Twist_base(pos);
		int n = snprintf(what, sizeof(what), "x=%6.3f m  lift %.2f m", tw->linear.x,
		                 tw->linear.z);
		if (hako_rd_read(C.obs, C.eu->id, C.phase_index, phase, sizeof(phase), &len) == 0 &&
		    len >= sizeof(phase)) {
			snprintf(what + n, sizeof(what) - (size_t)n, "  %s",
			         forklift_phase_name(hako_pdu_std_msgs_Int32_base(phase)->data));
		}
	} else {
		snprintf(what, sizeof(what), "no PDU of epoch %u yet", st.epoch);
	}
	printf("t=%6.3f s  %-18s epoch %-3u %s\n", t / 1e6, owner, st.epoch, what);
}

static int on_simulation_step(hako_asset_context_t *c)
{
	(void)c;
	hako_time_t now = hako_asset_current_time() + C.delta;
	if (C.every > 0 && now % C.every == 0) {
		print_status(now);
	}
	return 0;
}

/* One line on who hosts the forklift and where it changes hands. */
static void describe_handoffs(void)
{
	const hako_rd_trigger_t *tr = &C.cfg->trigger;
	hako_domain_info_t info;
	if (strcmp(tr->type, "boundary") != 0 ||
	    hako_domain_get_info(hako_asset_domain(), &info) != 0) {
		return;
	}
	/* RD-Full: two client nodes, and the ExMonitor on the server decides: 2 Dmax. */
	int k = C.cfg->mode == HAKO_RD_MODE_FULL ? 2 : 1;
	printf("forklift-%u drives below x = %.2f m, forklift-%u above; hand-off margin %.1f cm "
	       "= v_max %.2f m/s x %sDmax %.0f ms\n",
	       tr->low_owner, tr->boundary, tr->high_owner,
	       hako_rd_trigger_margin(tr, k * info.max_delay_usec) * 100, tr->v_max,
	       k == 2 ? "2 " : "", info.max_delay_usec / 1e3);
}

static size_t write_index(const char *name)
{
	for (size_t k = 0; k < C.eu->write_count; k++) {
		if (strcmp(C.eu->writes[k].name, name) == 0) {
			return k;
		}
	}
	return SIZE_MAX;
}

static int send_mission(const forklift_mission_t *m)
{
	hako_pdudef_t *def;
	hako_error_t err;
	char msg[1200];
	if (hako_pdudef_load(C.cfg->pdudef_path, &def, &err) != 0) {
		fprintf(stderr, "forklift-controller: %s\n",
		        hako_error_format(&err, msg, sizeof(msg)));
		return -1;
	}
	const hako_pdudef_pdu_t *p = hako_pdudef_find(def, FORKLIFT_ROBOT, FORKLIFT_PDU_MISSION);
	if (p == NULL) {
		fprintf(stderr, "forklift-controller: %s: robot \"%s\" has no PDU \"%s\"\n",
		        C.cfg->pdudef_path, FORKLIFT_ROBOT, FORKLIFT_PDU_MISSION);
		hako_pdudef_free(def);
		return -1;
	}
	int32_t channel = p->channel_id;
	uint32_t size = p->pdu_size;
	hako_pdudef_free(def);
	uint8_t pdu[512];
	size_t len = 0;
	int r = forklift_mission_encode(m, pdu, size < sizeof(pdu) ? size : sizeof(pdu), &len);
	if (r != 0) {
		fprintf(stderr, "forklift-controller: the mission does not fit in %u bytes\n",
		        size);
		return -1;
	}
	if (hako_asset_pdu_write(FORKLIFT_ROBOT, channel, (const char *)pdu, len) != 0) {
		const char *e;
		hako_asset_last_error(&e);
		fprintf(stderr, "forklift-controller: cannot write the mission: %s\n", e);
		return -1;
	}
	char text[160];
	forklift_mission_describe(m, text, sizeof(text));
	printf("mission sent: %s\n", text);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: forklift-controller [--rd FILE] [--forward M] [--backward M] [--speed V]\n"
	    "                           [--lift M] [--loops N] [--every-usec T] [--trace FILE]\n\n"
	    "The controller of the forklift RD-Light demo: the asset forklift-controller in\n"
	    "the domain $HAKO_DOMAIN. It writes the mission once, before the start, then\n"
	    "prints the owner, epoch, x and phase of the forklift every simulated second.\n\n"
	    "options:\n"
	    "  --rd FILE       RD config (default: %s next to this program)\n"
	    "  --forward M     forward leg (default 2.0 m)\n"
	    "  --backward M    way back (default 2.0 m)\n"
	    "  --speed V       cruise speed (default 0.7 m/s, at most %.1f)\n"
	    "  --lift M        fork height at the far end (default 0.4 m)\n"
	    "  --loops N       loops, 0 = forever (default 0)\n"
	    "  --every-usec T  status line every T us of simulated time, 0 = none\n"
	    "                  (default 1000000)\n"
	    "  --trace FILE    RD trace of what it reads (hako-rd check: no PDU of an old\n"
	    "                  epoch after a commit)\n"
	    "  -h, --help      show this help\n",
	    FORKLIFT_RD_CONFIG, FORKLIFT_V_MAX);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"rd", required_argument, NULL, 'r'},
	                                         {"forward", required_argument, NULL, 'f'},
	                                         {"backward", required_argument, NULL, 'b'},
	                                         {"speed", required_argument, NULL, 's'},
	                                         {"lift", required_argument, NULL, 'l'},
	                                         {"loops", required_argument, NULL, 'n'},
	                                         {"every-usec", required_argument, NULL, 'e'},
	                                         {"trace", required_argument, NULL, 't'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	char rd_default[PATH_MAX];
	const char *rd_path = NULL, *trace_path = NULL;
	forklift_mission_t m;
	forklift_mission_default(&m);
	unsigned long every = 1000000, loops = 0;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case 'r': rd_path = optarg; break;
		case 'f': bad = forklift_parse_double(optarg, &m.forward_m); break;
		case 'b': bad = forklift_parse_double(optarg, &m.backward_m); break;
		case 's': bad = forklift_parse_double(optarg, &m.speed); break;
		case 'l': bad = forklift_parse_double(optarg, &m.lift_height); break;
		case 'n':
			bad = forklift_parse_uint(optarg, UINT32_MAX, &loops);
			m.loops = (uint32_t)loops;
			break;
		case 'e': bad = forklift_parse_uint(optarg, 3600000000ul, &every); break;
		case 't': trace_path = optarg; break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "forklift-controller: %s '%s'\n",
			        c == ':' ? "missing value for" : "unknown option",
			        argv[optind - 1]);
			usage(stderr);
			return 2;
		}
		if (bad) {
			fprintf(stderr, "forklift-controller: %s: '%s' is not a valid value\n",
			        argv[optind - 1], optarg);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "forklift-controller: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (forklift_mission_check(&m) != 0) {
		fprintf(stderr, "forklift-controller: the mission is out of range (distances "
		                "0..100 m, speed > 0, lift 0..1 m)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	C.every = (hako_time_t)every;
	C.delta = FORKLIFT_DT_USEC;
	if (rd_path == NULL) {
		rd_path = forklift_config_path(FORKLIFT_RD_CONFIG, rd_default, sizeof(rd_default));
	}
	hako_error_t err;
	char msg[1200];
	if (hako_rd_config_load(rd_path, &C.cfg, &err) != 0) {
		fprintf(stderr, "forklift-controller: %s\n",
		        hako_error_format(&err, msg, sizeof(msg)));
		return 1;
	}
	int rc = 1;
	C.eu = hako_rd_config_eu(C.cfg, FORKLIFT_EU);
	if (C.eu == NULL || (C.pos_index = write_index(FORKLIFT_PDU_POS)) == SIZE_MAX ||
	    (C.phase_index = write_index(FORKLIFT_PDU_PHASE)) == SIZE_MAX) {
		fprintf(stderr, "forklift-controller: %s: no EU \"%s\" writing \"%s\" and \"%s\"\n",
		        rd_path, FORKLIFT_EU, FORKLIFT_PDU_POS, FORKLIFT_PDU_PHASE);
		goto out;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	hako_asset_callbacks_t callbacks = {.on_simulation_step = on_simulation_step};
	if (hako_asset_register(ASSET_NAME, C.cfg->pdudef_path, &callbacks, C.delta,
	                        HAKO_ASSET_MODEL_CONTROLLER) != 0) {
		const char *e;
		hako_asset_last_error(&e);
		fprintf(stderr, "forklift-controller: cannot register: %s\n", e);
		goto out;
	}
	int r = hako_rd_node_open(hako_asset_domain(), C.cfg, 0, trace_path, &C.obs);
	if (r != 0) {
		fprintf(stderr, "forklift-controller: cannot open an RD observer: %s\n",
		        hako_strerror(r));
		hako_asset_unregister();
		goto out;
	}
	describe_handoffs();
	if (send_mission(&m) != 0) {
		hako_rd_node_close(C.obs);
		hako_asset_unregister();
		goto out;
	}
	r = hako_asset_start_no_wait(is_force_stop);
	uint64_t stale = hako_rd_stale_drops(C.obs);
	hako_rd_node_close(C.obs);
	hako_asset_unregister();
	if (r != EINTR && !stop_requested) {
		const char *e;
		hako_asset_last_error(&e);
		fprintf(stderr, "forklift-controller: the simulation failed: %s\n", e);
		goto out;
	}
	if (stale > 0) {
		printf("%" PRIu64 " stale PDU%s of an old owner dropped\n", stale,
		       stale == 1 ? "" : "s");
	}
	rc = 0;
out:
	hako_rd_config_free(C.cfg);
	return rc;
}
