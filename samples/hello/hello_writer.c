/* hello-writer: an asset that counts its 1 ms steps and publishes the count as the PDU
 * Robot/counter, written with the Hakoniwa-compatible API (hako_asset.h).
 *
 * launch.json starts it under hako-launch; by hand it runs against any conductor of the domain
 * $HAKO_DOMAIN:
 *   hako-cmd conductor &  hello-writer &  hello-reader &
 *   hako-cmd start; sleep 1; hako-cmd stop; hako-cmd reset
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "hako/hako_asset.h"
#include "hello.h"

static uint64_t counter;
static uint64_t write_errors;

static int on_initialize(hako_asset_context_t *ctx)
{
	(void)ctx;
	counter = 0;
	printf("[writer] started\n");
	return 0;
}

/* Runs once per step, while the asset's clock goes from t to t + 1 ms. */
static int on_simulation_step(hako_asset_context_t *ctx)
{
	(void)ctx;
	uint8_t pdu[HELLO_PDU_SIZE];
	counter++;
	hello_counter_encode(pdu, counter);
	if (hako_asset_pdu_write(HELLO_ROBOT, HELLO_CHANNEL, (const char *)pdu, sizeof(pdu)) != 0) {
		write_errors++;
	}
	/* In lock-step (Dmax = delta) the world clock is exactly the end of this step. */
	hako_time_t t = hako_asset_simulation_time();
	if (t % 100000 == 0) {
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
	setvbuf(stdout, NULL, _IOLBF, 0); /* lines interleave in time order with the reader's */
	const char *pdudef = hello_pdudef_path(argc, argv);
	hako_asset_callbacks_t callbacks = {
	    .on_initialize = on_initialize,
	    .on_simulation_step = on_simulation_step,
	    .on_reset = on_reset,
	};
	int r = hako_asset_register("writer", pdudef, &callbacks, HELLO_DELTA_USEC,
	                            HAKO_ASSET_MODEL_PLANT);
	if (r != 0) {
		const char *msg;
		hako_asset_last_error(&msg);
		fprintf(stderr, "[writer] cannot register: %s\n", msg);
		return 1;
	}
	printf("[writer] registered in domain '%s', waiting for start\n",
	       hako_domain_name(hako_asset_domain()));

	/* One start -> stop -> reset cycle; EINTR says the cycle completed. */
	r = hako_asset_start();
	uint64_t steps = counter;
	hako_asset_unregister();
	if (r != EINTR) {
		const char *msg;
		hako_asset_last_error(&msg);
		fprintf(stderr, "[writer] the simulation failed: %s\n", msg);
		return 1;
	}
	printf("[writer] done: %" PRIu64 " steps, last counter=%" PRIu64 ", %" PRIu64
	       " write errors\n",
	       steps, counter, write_errors);
	return write_errors == 0 ? 0 : 1;
}
