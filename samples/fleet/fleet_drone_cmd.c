/* fleet-drone-cmd: one per-drone command (fleet_cmds.h) written by an asset at a world time of
 * its own, and its answer awaited, as a ground station using Hakoniwa's drone_cmd PDUs would:
 *
 *   fleet-drone-cmd --drone K (--move X,Y,Z | --takeoff H | --land) [--at-usec T]
 *
 * It writes the request (header.request = true) during its step that ends at world time T
 * (default 4.05 s), half a quantum (FLEET_DCMD_QUANTUM) before the drone's owner applies it,
 * so the owner reads it in the same quantum whichever host it is, and prints the answer when
 * the drone's host writes it back (request false, result true, result_code), with the drone's
 * pos then. Its step is 1 ms or the domain's Dmax if smaller. Exit status: 0 after the run
 * stopped, 1 on an error (or no answer), 2 on a usage error. */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_cmds.h"
#include "fleet_host.h"
#include "fleet_tool.h"
#include "hako/domain.h"
#include "hako/error.h"
#include "hako/msgs/geometry_msgs/Twist.h"
#include "hako/msgs/hako_msgs/HakoDroneCmdLand.h"
#include "hako/msgs/hako_msgs/HakoDroneCmdMove.h"
#include "hako/msgs/hako_msgs/HakoDroneCmdTakeoff.h"

#define PROG "fleet-drone-cmd"

static const char *const names[FLEET_DCMD_CHANNELS] = {"drone_cmd_takeoff", "drone_cmd_move",
                                                       "drone_cmd_land"};

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " --drone K (--move X,Y,Z | --takeoff H | --land) [--at-usec T]\n"
	           "  --drone K      the drone (1-based: robot Drone-K)\n"
	           "  --move X,Y,Z   drone_cmd_move to (X, Y, Z), m in the pos frame\n"
	           "  --takeoff H    drone_cmd_takeoff to H m\n"
	           "  --land         drone_cmd_land\n"
	           "  --at-usec T    write it at world time T (default 4050000; the drone's\n"
	           "                 owner applies it at the next multiple of 100 ms after\n"
	           "                 what it saw + Dmax)\n"
	           "The domain is $HAKO_DOMAIN (hako-launch sets it).\n");
}

/* The request PDU of kind k into pdu (its size returned). */
static size_t request(int k, const double arg[3], uint8_t *pdu)
{
	Hako_hako_msgs_HakoDroneCmdHeader *h;
	switch (k) {
	case FLEET_DCMD_TAKEOFF:
		hako_pdu_hako_msgs_HakoDroneCmdTakeoff_init(
		    pdu, HAKO_PDU_SIZE_HAKO_MSGS_HAKODRONECMDTAKEOFF);
		hako_pdu_hako_msgs_HakoDroneCmdTakeoff_base(pdu)->height = arg[0];
		h = &hako_pdu_hako_msgs_HakoDroneCmdTakeoff_base(pdu)->header;
		h->request = 1;
		return HAKO_PDU_SIZE_HAKO_MSGS_HAKODRONECMDTAKEOFF;
	case FLEET_DCMD_MOVE: {
		hako_pdu_hako_msgs_HakoDroneCmdMove_init(pdu,
		                                         HAKO_PDU_SIZE_HAKO_MSGS_HAKODRONECMDMOVE);
		Hako_hako_msgs_HakoDroneCmdMove *m = hako_pdu_hako_msgs_HakoDroneCmdMove_base(pdu);
		m->x = arg[0];
		m->y = arg[1];
		m->z = arg[2];
		m->header.request = 1;
		return HAKO_PDU_SIZE_HAKO_MSGS_HAKODRONECMDMOVE;
	}
	default:
		hako_pdu_hako_msgs_HakoDroneCmdLand_init(pdu,
		                                         HAKO_PDU_SIZE_HAKO_MSGS_HAKODRONECMDLAND);
		hako_pdu_hako_msgs_HakoDroneCmdLand_base(pdu)->header.request = 1;
		return HAKO_PDU_SIZE_HAKO_MSGS_HAKODRONECMDLAND;
	}
}

int main(int argc, char **argv)
{
	long drone = 0;
	int kind = -1;
	double arg[3] = {0, 0, 0};
	long long at = 4050000;
	static const struct option longopts[] = {{"drone", required_argument, NULL, 'd'},
	                                         {"move", required_argument, NULL, 'm'},
	                                         {"takeoff", required_argument, NULL, 't'},
	                                         {"land", no_argument, NULL, 'l'},
	                                         {"at-usec", required_argument, NULL, 'a'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': drone = strtol(optarg, NULL, 10); break;
		case 'm':
			kind = sscanf(optarg, "%lf,%lf,%lf", &arg[0], &arg[1], &arg[2]) == 3
			           ? FLEET_DCMD_MOVE
			           : -2;
			break;
		case 't': kind = FLEET_DCMD_TAKEOFF, arg[0] = strtod(optarg, NULL); break;
		case 'l': kind = FLEET_DCMD_LAND; break;
		case 'a': at = strtoll(optarg, NULL, 10); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (drone < 1 || kind < 0 || at <= 0 || optind < argc) {
		usage(stderr);
		return 2;
	}
	fleet_tool_start();
	hako_domain_t *dom = NULL;
	if (fleet_open_domain(PROG, &dom) != 0) {
		return 1;
	}
	hako_domain_info_t info;
	long step = 1000;
	if (hako_domain_get_info(dom, &info) == 0 && info.max_delay_usec < step) {
		step = (long)info.max_delay_usec;
	}
	fleet_dcmd_io_t io;
	hako_channel_t *pos = NULL;
	char robot[32];
	snprintf(robot, sizeof(robot), "Drone-%ld", drone);
	int r = fleet_dcmd_open(dom, (size_t)drone - 1, &io);
	if (r == 0) {
		r = hako_channel_create(dom, robot, FLEET_CH_POS, HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST,
		                        &pos);
	}
	hako_member_t *m = NULL;
	if (r != 0 || (r = hako_member_register(dom, PROG, step, &m)) != 0) {
		fprintf(stderr, PROG ": %s: %s\n", robot, hako_strerror(r));
		hako_domain_close(dom);
		return 1;
	}
	int rc = 0, running = 0, written = 0, answered = 0;
	uint64_t seq = 0;
	while ((r = fleet_asset_next(m, PROG, &running)) > 0) {
		hako_time_t now = hako_member_time(m) + step; /* once this step is done */
		uint8_t pdu[HAKO_PDU_SIZE_HAKO_MSGS_HAKODRONECMDMOVE];
		if (!written && now >= at) {
			size_t len = request(kind, arg, pdu);
			if ((r = hako_channel_write(io.ch[kind], pdu, len)) != 0) {
				fprintf(stderr, PROG ": writing %s: %s\n", names[kind],
				        hako_strerror(r));
				rc = 1;
				hako_member_step_done(m);
				break;
			}
			seq = hako_channel_seq(io.ch[kind]);
			written = 1;
			printf(PROG ": t=%.3f s: %s of Drone-%ld written (request)\n", now / 1e6,
			       names[kind], drone);
		} else if (written && !answered && hako_channel_seq(io.ch[kind]) != seq) {
			size_t len = 0;
			const Hako_hako_msgs_HakoDroneCmdHeader *h =
			    &hako_pdu_hako_msgs_HakoDroneCmdMove_base(pdu)->header;
			if (hako_channel_read(io.ch[kind], pdu, sizeof(pdu), &len, &seq) == 0 &&
			    !h->request && h->result) {
				uint8_t p[HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST];
				const Hako_Twist *tw = NULL;
				if (hako_channel_read(pos, p, sizeof(p), &len, NULL) == 0) {
					tw = hako_pdu_geometry_msgs_Twist_get(p, len);
				}
				printf(PROG ": t=%.3f s: %s of Drone-%ld answered: result_code %d; "
				            "pos %.3f %.3f %.3f\n",
				       now / 1e6, names[kind], drone, (int)h->result_code,
				       tw != NULL ? tw->linear.x : 0.0,
				       tw != NULL ? tw->linear.y : 0.0,
				       tw != NULL ? tw->linear.z : 0.0);
				answered = 1;
			}
		}
		hako_member_step_done(m);
	}
	if (r < 0) {
		rc = 1;
	}
	if (!answered) {
		fprintf(stderr, PROG ": %s of Drone-%ld: no answer before the run ended\n",
		        names[kind], drone);
		rc = 1;
	}
	hako_member_unregister(m);
	hako_domain_close(dom);
	return rc;
}
