/* service-client NAME COUNT: an asset calling Service/Add COUNT times with operands of its own
 * and checking every sum; it prints the round trips in world time. Two of them share the
 * server in the sample. Exits 1 if a sum is wrong or a request is lost.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "hako/hako_asset.h"
#include "hako/hako_asset_service.h"
#include "hako/msgs/hako_srv_msgs/AddTwoIntsRequestPacket.h"
#include "hako/msgs/hako_srv_msgs/AddTwoIntsResponsePacket.h"
#include "service_sample.h"

static const char *name;
static long count;
static HakoServiceHandleType handle;
static long right, wrong, timeouts;
static hako_time_t total_wait, max_wait;

static void report_error(const char *what)
{
	const char *msg;
	hako_asset_last_error(&msg);
	fprintf(stderr, "%s: %s\n", what, msg);
}

static int on_initialize(hako_asset_context_t *ctx)
{
	(void)ctx;
	if (hako_asset_service_client_create(name, SAMPLE_SERVICE, name, &handle) != 0) {
		report_error("hako_asset_service_client_create");
		return 1;
	}
	printf("client slot %d of %s\n", handle.client_id, SAMPLE_SERVICE);
	return 0;
}

static int send_request(long i, int64_t *a, int64_t *b)
{
	char *pkt;
	size_t len;
	if (hako_asset_service_client_get_request_buffer(
	        &handle, &pkt, &len, HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST, 2) != 0) {
		report_error("get_request_buffer");
		return -1;
	}
	Hako_hako_srv_msgs_AddTwoIntsRequestPacket *rq =
	    hako_pdu_hako_srv_msgs_AddTwoIntsRequestPacket_base(pkt);
	*a = rq->body.a = (int64_t)(handle.client_id + 1) * 1000 + i;
	*b = rq->body.b = i * i;
	if (hako_asset_service_client_call_request(&handle, pkt, len, 1000) != 0) {
		report_error("call_request");
		return -1;
	}
	return 0;
}

static int on_manual_timing_control(hako_asset_context_t *ctx)
{
	(void)ctx;
	long i = 0;
	int64_t a = 0, b = 0;
	hako_time_t sent_at = 0;
	int busy = 0;
	while (hako_asset_usleep(SAMPLE_DELTA_USEC) == 0) {
		if (!busy && i < count) {
			if (send_request(i, &a, &b) != 0) {
				return 1;
			}
			sent_at = hako_asset_simulation_time();
			busy = 1;
			continue;
		}
		if (!busy) {
			continue;
		}
		int ev = hako_asset_service_client_poll(&handle);
		if (ev == HAKO_SERVICE_CLIENT_API_RESPONSE_IN) {
			char *pkt;
			size_t len;
			hako_asset_service_client_get_response(&handle, &pkt, &len, 0);
			const Hako_hako_srv_msgs_AddTwoIntsResponsePacket *rs =
			    hako_pdu_hako_srv_msgs_AddTwoIntsResponsePacket_base(pkt);
			if (rs->header.result_code == HAKO_SERVICE_API_RESULT_CODE_OK &&
			    rs->body.sum == a + b) {
				right++;
			} else {
				wrong++;
				fprintf(stderr,
				        "%" PRId64 " + %" PRId64 ": got %" PRId64
				        " (result code %d)\n",
				        a, b, rs->body.sum, rs->header.result_code);
			}
			hako_time_t w = hako_asset_simulation_time() - sent_at;
			total_wait += w;
			max_wait = w > max_wait ? w : max_wait;
			busy = 0;
			i++;
			if (i == count) {
				printf("%ld of %ld sums right; round trip %.2f ms mean, %.2f ms "
				       "max (world time)\n",
				       right, count, (double)total_wait / (double)count / 1e3,
				       (double)max_wait / 1e3);
			}
		} else if (ev == HAKO_SERVICE_CLIENT_API_REQUEST_TIMEOUT) {
			report_error("request timed out");
			timeouts++;
			return 1;
		} else if (ev < 0) {
			report_error("poll");
			return 1;
		}
	}
	if (i < count) {
		fprintf(stderr, "the run ended after %ld of %ld requests\n", i, count);
	}
	return 0;
}

static int on_reset(hako_asset_context_t *ctx)
{
	(void)ctx;
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 3 || (count = strtol(argv[2], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: service-client NAME COUNT\n");
		return 2;
	}
	name = argv[1];
	hako_asset_callbacks_t callbacks = {
	    .on_initialize = on_initialize,
	    .on_manual_timing_control = on_manual_timing_control,
	    .on_reset = on_reset,
	};
	if (hako_asset_register(name, NULL, &callbacks, SAMPLE_DELTA_USEC,
	                        HAKO_ASSET_MODEL_CONTROLLER) != 0) {
		report_error("cannot register");
		return 1;
	}
	if (hako_asset_service_initialize(sample_service_file()) != 0) {
		report_error("hako_asset_service_initialize");
		return 1;
	}
	int r = hako_asset_start();
	hako_asset_unregister();
	if (wrong != 0 || right != count) {
		return 1;
	}
	return r == 0 || r == EINTR ? 0 : 1;
}
