/* fleet-controller: the fleet's mission as an asset of its own (fleet_share.h). With a step P
 * (20 ms as the original's fleet controller, at most the domain's Dmax), it commands the whole
 * fleet: take off to 4 m, fly to the "HAKO" letters, to a circle, land; hosts started with
 * --controller fly what it says. A command taking effect at world time T is written during the
 * controller's step at t, the first with t + Dmax + P >= T, so T > t + Dmax: while it writes,
 * no host can be past t + Dmax, and no host passes T before the controller finished that step.
 * Every host reads every command in time, and the flight does not depend on how the processes
 * interleave.
 *
 * It also reads every drone's status PDU (Drone-<k>, channel 18) before each new command and at
 * the end, and says how many drones hold their targets: what a ground station would see.
 * Exit status: 0 after the run stopped, 1 on an error, 2 on a usage error. */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drone.h"
#include "fleet_host.h"
#include "fleet_share.h"
#include "fleet_tool.h"
#include "formation.h"
#include "hako/domain.h"
#include "hako/error.h"
#include "hako/msgs/hako_msgs/DroneStatus.h"

#define PROG "fleet-controller"

/* The mission: what the fleet does and when (world time, us; multiples of the step). */
struct step_cmd {
	int64_t at;
	uint32_t kind;
	uint32_t formation;
	const char *what;
};

static const struct step_cmd mission[] = {
    {100000, FLEET_CMD_TAKEOFF, 0, "take off to 4 m"},
    {3000000, FLEET_CMD_GOTO, FLEET_HAKO, "fly to the HAKO letters"},
    {18000000, FLEET_CMD_GOTO, FLEET_CIRCLE, "fly to the circle"},
    {33000000, FLEET_CMD_LAND, 0, "land"},
};
#define MISSION_LEN (sizeof(mission) / sizeof(mission[0]))

/* The drones' flight modes, as their status PDUs say: counts per mode. */
static void count_modes(hako_channel_t **status, size_t n, size_t counts[DRONE_MODE_COUNT],
                        size_t *unread)
{
	memset(counts, 0, DRONE_MODE_COUNT * sizeof(counts[0]));
	*unread = 0;
	uint8_t buf[HAKO_PDU_SIZE_HAKO_MSGS_DRONESTATUS];
	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		uint64_t seq = 0;
		if (status[i] == NULL ||
		    hako_channel_read(status[i], buf, sizeof(buf), &len, &seq) != 0 || seq == 0 ||
		    len < sizeof(buf)) {
			(*unread)++;
			continue;
		}
		const Hako_hako_msgs_DroneStatus *st = hako_pdu_hako_msgs_DroneStatus_base(buf);
		int mode = st->flight_mode;
		if (mode >= 0 && mode < DRONE_MODE_COUNT) {
			counts[mode]++;
		} else {
			(*unread)++;
		}
	}
}

static void report(hako_channel_t **status, size_t n, int64_t t, const char *before)
{
	size_t counts[DRONE_MODE_COUNT], unread;
	count_modes(status, n, counts, &unread);
	printf(PROG
	       ": t=%.3f s: %zu of %zu drones hold their targets, %zu landed, %zu on the way%s%s",
	       t / 1e6, counts[DRONE_HOLD], n, counts[DRONE_LANDED],
	       counts[DRONE_TAKEOFF] + counts[DRONE_GOTO] + counts[DRONE_LAND],
	       before != NULL ? "; next: " : "", before != NULL ? before : "");
	if (unread > 0) {
		printf(" (%zu not written yet)", unread);
	}
	printf("\n");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " --drones N [--step-usec P]\n"
	           "  --drones N      the fleet's size (the formations depend on it)\n"
	           "  --step-usec P   the controller's step (default: 20000, or the domain's Dmax\n"
	           "                  if smaller); at most Dmax\n"
	           "The domain is $HAKO_DOMAIN (hako-launch sets it).\n");
}

int main(int argc, char **argv)
{
	long total = -1, step = 0;
	static const struct option longopts[] = {{"drones", required_argument, NULL, 'd'},
	                                         {"step-usec", required_argument, NULL, 's'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': total = strtol(optarg, NULL, 10); break;
		case 's': step = strtol(optarg, NULL, 10); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (total <= 0 || total > 65536 || step < 0 || step > 1000000 || optind < argc) {
		usage(stderr);
		return 2;
	}
	fleet_tool_start();

	hako_domain_t *dom = NULL;
	const char *dname = hako_domain_default_name();
	int r = fleet_open_domain(PROG, &dom);
	if (r != 0) {
		return 1;
	}
	hako_domain_info_t info;
	hako_time_t dmax = hako_domain_get_info(dom, &info) == 0 ? info.max_delay_usec : 0;
	if (step == 0) {
		step = dmax < 20000 ? (long)dmax : 20000;
	}
	int bad = step <= 0 || step > dmax || dmax + step >= mission[0].at;
	for (size_t k = 0; k < MISSION_LEN && !bad; k++) {
		bad = mission[k].at % step != 0;
	}
	if (bad) {
		fprintf(stderr,
		        PROG
		        ": a step of %ld us does not fit domain '%s' (Dmax %lld us): an asset's "
		        "step is at most Dmax, a command goes out Dmax + a step before it takes "
		        "effect, and the mission's times (0.1 s, 3 s, 18 s, 33 s) are multiples "
		        "of the step\n",
		        step, dname, (long long)dmax);
		hako_domain_close(dom);
		return 1;
	}
	hako_channel_t *cmd = NULL;
	hako_channel_t **status = calloc((size_t)total, sizeof(*status));
	if (status == NULL || (r = hako_channel_create(dom, FLEET_CONTROLLER_ROBOT, 0,
	                                               sizeof(fleet_command_t), &cmd)) != 0) {
		fprintf(stderr, PROG ": the command channel: %s\n",
		        hako_strerror(status == NULL ? HAKO_ENOMEM : r));
		free(status);
		hako_domain_close(dom);
		return 1;
	}
	/* Numbered after any command an earlier run left in the channel (hosts skip those). */
	uint32_t number = 0;
	fleet_command_t last;
	size_t len = 0;
	if (hako_channel_read(cmd, &last, sizeof(last), &len, NULL) == 0 && len == sizeof(last) &&
	    last.magic == FLEET_SHARE_MAGIC) {
		number = last.number;
	}
	hako_member_t *m = NULL;
	if ((r = hako_member_register(dom, PROG, step, &m)) != 0) {
		fprintf(stderr, PROG ": asset '" PROG "': %s\n", hako_strerror(r));
		free(status);
		hako_domain_close(dom);
		return 1;
	}
	printf(PROG ": %ld drones, a step of %ld ms; %zu commands\n", total, step / 1000,
	       MISSION_LEN);
	int rc = 0, running = 0;
	size_t next = 0;
	hako_time_t now = 0;
	while ((r = fleet_asset_next(m, PROG, &running)) > 0) {
		now = hako_member_time(m); /* this step covers [now, now + step) */
		/* The drones' status channels, once the hosts made them. */
		for (long i = 0; i < total; i++) {
			if (status[i] == NULL) {
				char robot[32];
				snprintf(robot, sizeof(robot), "Drone-%ld", i + 1);
				hako_channel_lookup(dom, robot, FLEET_CH_STATUS, &status[i]);
			}
		}
		if (next < MISSION_LEN &&
		    mission[next].at <= now + dmax + step) { /* one a step: the channel holds one */
			const struct step_cmd *s = &mission[next];
			if (next > 0) {
				report(status, (size_t)total, now, s->what);
			}
			fleet_command_t c = {FLEET_SHARE_MAGIC, ++number, s->kind,
			                     s->formation,      s->at,    FLEET_ALTITUDE};
			if ((r = hako_channel_write(cmd, &c, sizeof(c))) != 0) {
				fprintf(stderr, PROG ": writing command %u: %s\n", c.number,
				        hako_strerror(r));
				rc = 1;
				break;
			}
			printf(PROG ": t=%.3f s: command %u: %s at %.3f s\n", now / 1e6, c.number,
			       s->what, s->at / 1e6);
			next++;
		}
		hako_member_step_done(m);
		if (rc != 0) {
			break;
		}
	}
	if (r < 0) {
		rc = 1; /* said by fleet_asset_next */
	}
	if (now > 0) {
		report(status, (size_t)total, now, NULL);
	}
	hako_member_unregister(m);
	free(status);
	hako_domain_close(dom);
	return rc;
}
