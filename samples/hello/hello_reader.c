/* hello-reader: an asset that drives its own clock (on_manual_timing_control) and reads the
 * counter that hello-writer publishes, once per 1 ms step. A receive event in flag mode tells it
 * whether the writer wrote since the last look.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "hako/hako_asset.h"
#include "hello.h"

static uint64_t steps;
static uint64_t last_counter;
static uint64_t new_data;      /* steps on which the writer had written since the last one */
static uint64_t read_errors;   /* reads that failed */
static uint64_t never_written; /* reads before the writer's first write */

static int on_initialize(hako_asset_context_t *ctx)
{
	(void)ctx;
	steps = last_counter = new_data = read_errors = never_written = 0;
	printf("[reader] started\n");
	return 0;
}

/* Called once after start; returns when the simulation stops (hako_asset_usleep gives EINTR). */
static int on_manual_timing_control(hako_asset_context_t *ctx)
{
	(void)ctx;
	while (hako_asset_usleep(HELLO_DELTA_USEC) == 0) {
		steps++;
		if (hako_asset_check_data_recv_event(HELLO_ROBOT, HELLO_CHANNEL) == 0) {
			new_data++;
		}
		uint8_t pdu[HELLO_PDU_SIZE];
		uint64_t value;
		if (hako_asset_pdu_read(HELLO_ROBOT, HELLO_CHANNEL, (char *)pdu, sizeof(pdu)) !=
		    0) {
			read_errors++;
		} else if (hello_counter_decode(pdu, &value) != 0) {
			never_written++;
		} else {
			last_counter = value;
		}
		hako_time_t t = hako_asset_current_time();
		if (t % 100000 == 0) {
			printf("[reader] t=%.3f s counter=%" PRIu64 "\n", (double)t / 1e6,
			       last_counter);
		}
	}
	return 0;
}

static int on_reset(hako_asset_context_t *ctx)
{
	(void)ctx;
	printf("[reader] reset\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *pdudef = hello_pdudef_path(argc, argv);
	hako_asset_callbacks_t callbacks = {
	    .on_initialize = on_initialize,
	    .on_manual_timing_control = on_manual_timing_control,
	    .on_reset = on_reset,
	};
	int r = hako_asset_register("reader", pdudef, &callbacks, HELLO_DELTA_USEC,
	                            HAKO_ASSET_MODEL_CONTROLLER);
	if (r != 0) {
		const char *msg;
		hako_asset_last_error(&msg);
		fprintf(stderr, "[reader] cannot register: %s\n", msg);
		return 1;
	}
	/* NULL callback: flag mode, polled with hako_asset_check_data_recv_event. */
	int event_id;
	r = hako_asset_register_data_recv_event(HELLO_ROBOT, HELLO_CHANNEL, NULL, &event_id);
	if (r != 0) {
		const char *msg;
		hako_asset_last_error(&msg);
		fprintf(stderr, "[reader] cannot register the receive event: %s\n", msg);
		hako_asset_unregister();
		return 1;
	}
	printf("[reader] registered in domain '%s', waiting for start\n",
	       hako_domain_name(hako_asset_domain()));

	r = hako_asset_start();
	hako_asset_unregister();
	if (r != EINTR) {
		const char *msg;
		hako_asset_last_error(&msg);
		fprintf(stderr, "[reader] the simulation failed: %s\n", msg);
		return 1;
	}
	printf("[reader] done: %" PRIu64 " steps, last counter=%" PRIu64 ", %" PRIu64
	       " reads with new data, %" PRIu64 " before the first write, %" PRIu64
	       " read errors\n",
	       steps, last_counter, new_data, never_written, read_errors);
	return read_errors == 0 ? 0 : 1;
}
