/* bridge-writer: the asset of node A in the bridge sample. Every 1 ms step it publishes two
 * PDUs of samples/bridge/config/bridge_pdudef.json (std_msgs/UInt64, Hakoniwa's binary format):
 *
 *   Robot/counter   (channel 0)  1, 2, 3, ... one more each step (as hello-writer)
 *   Robot/sim_time  (channel 1)  the writer's simulation time in microseconds
 *
 * node A's bridge forwards counter at once (policy "immediate") and sim_time at most once per
 * 100 ms of world time (policy "throttle"), over tcp to node B.
 *
 * usage: bridge-writer PDUDEF   (hako-launch starts it; HAKO_DOMAIN names the domain)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "hako/hako_asset.h"
#include "hello.h" /* the UInt64 PDU encoder of the hello sample */

#define ROBOT            "Robot"
#define CHANNEL_COUNTER  0
#define CHANNEL_SIM_TIME 1
#define PRINT_EVERY_USEC 500000

static uint64_t counter;
static uint64_t write_errors;

static int on_initialize(hako_asset_context_t *ctx)
{
	(void)ctx;
	counter = 0;
	printf("[writer] started\n");
	return 0;
}

static int on_simulation_step(hako_asset_context_t *ctx)
{
	(void)ctx;
	uint8_t pdu[HELLO_PDU_SIZE];
	hako_time_t t = hako_asset_simulation_time(); /* the end of this step */
	counter++;
	hello_counter_encode(pdu, counter);
	if (hako_asset_pdu_write(ROBOT, CHANNEL_COUNTER, (const char *)pdu, sizeof(pdu)) != 0) {
		write_errors++;
	}
	hello_counter_encode(pdu, (uint64_t)t);
	if (hako_asset_pdu_write(ROBOT, CHANNEL_SIM_TIME, (const char *)pdu, sizeof(pdu)) != 0) {
		write_errors++;
	}
	if (t % PRINT_EVERY_USEC == 0) {
		printf("[writer] t=%.3f s counter=%" PRIu64 "\n", (double)t / 1e6, counter);
	}
	return 0;
}

static int on_reset(hako_asset_context_t *ctx)
{
	(void)ctx;
	printf("[writer] reset\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: bridge-writer PDUDEF\n");
		return 2;
	}
	hako_asset_callbacks_t callbacks = {
	    .on_initialize = on_initialize,
	    .on_simulation_step = on_simulation_step,
	    .on_reset = on_reset,
	};
	int r = hako_asset_register("writer", argv[1], &callbacks, HELLO_DELTA_USEC,
	                            HAKO_ASSET_MODEL_PLANT);
	if (r != 0) {
		const char *msg;
		hako_asset_last_error(&msg);
		fprintf(stderr, "[writer] cannot register: %s\n", msg);
		return 1;
	}
	printf("[writer] registered in domain '%s', waiting for start\n",
	       hako_domain_name(hako_asset_domain()));

	r = hako_asset_start(); /* one start -> stop -> reset cycle: EINTR */
	hako_asset_unregister();
	if (r != EINTR) {
		const char *msg;
		hako_asset_last_error(&msg);
		fprintf(stderr, "[writer] the simulation failed: %s\n", msg);
		return 1;
	}
	printf("[writer] done: %" PRIu64 " steps, last counter=%" PRIu64 ", %" PRIu64
	       " write errors\n",
	       counter, counter, write_errors);
	return write_errors == 0 ? 0 : 1;
}
