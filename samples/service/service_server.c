/* service-server: the asset "Server" serving Service/Add (hako_srv_msgs/AddTwoInts) over
 * Hakoniwa's service API. Each request takes it a few steps of world time (1 + a % 4), with
 * progress reports, as a real service would; meanwhile the other client's requests wait in
 * their channel and are taken in turn.
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

static int service_id = -1;
static long served, cancelled;

static void report_error(const char *what)
{
	const char *msg;
	hako_asset_last_error(&msg);
	fprintf(stderr, "%s: %s\n", what, msg);
}

static int on_initialize(hako_asset_context_t *ctx)
{
	(void)ctx;
	service_id = hako_asset_service_server_create("Server", SAMPLE_SERVICE);
	if (service_id < 0) {
		report_error("hako_asset_service_server_create");
		return 1;
	}
	printf("serving %s (service id %d)\n", SAMPLE_SERVICE, service_id);
	return 0;
}

static int reply(int result_code, int64_t sum)
{
	char *pkt;
	size_t len;
	if (hako_asset_service_server_get_response_buffer(
	        service_id, &pkt, &len, HAKO_SERVICE_API_STATUS_DONE, result_code) != 0) {
		report_error("get_response_buffer");
		return -1;
	}
	hako_pdu_hako_srv_msgs_AddTwoIntsResponsePacket_base(pkt)->body.sum = sum;
	if (hako_asset_service_server_put_response(service_id, pkt, len) != 0) {
		report_error("put_response");
		return -1;
	}
	return 0;
}

static int on_manual_timing_control(hako_asset_context_t *ctx)
{
	(void)ctx;
	int64_t a = 0, b = 0;
	int work_left = -1; /* steps until the answer of the request in progress, -1: none */
	int work_total = 0;
	while (hako_asset_usleep(SAMPLE_DELTA_USEC) == 0) {
		int ev = hako_asset_service_server_poll(service_id);
		if (ev < 0) {
			report_error("poll");
			return 1;
		}
		if (ev == HAKO_SERVICE_SERVER_API_REQUEST_IN) {
			char *pkt;
			size_t len;
			if (hako_asset_service_server_get_request(service_id, &pkt, &len) != 0) {
				report_error("get_request");
				return 1;
			}
			const Hako_hako_srv_msgs_AddTwoIntsRequestPacket *rq =
			    hako_pdu_hako_srv_msgs_AddTwoIntsRequestPacket_base(pkt);
			a = rq->body.a;
			b = rq->body.b;
			work_total = work_left = 1 + (int)(llabs(a) % 4);
		} else if (ev == HAKO_SERVICE_SERVER_API_REQUEST_CANCEL) {
			if (reply(HAKO_SERVICE_API_RESULT_CODE_CANCELED, 0) != 0) {
				return 1;
			}
			cancelled++;
			work_left = -1;
			continue;
		}
		if (work_left > 0) {
			work_left--;
			hako_asset_service_server_set_progress(
			    service_id, 100 * (work_total - work_left) / work_total);
		}
		if (work_left == 0) {
			if (reply(HAKO_SERVICE_API_RESULT_CODE_OK, a + b) != 0) {
				return 1;
			}
			served++;
			work_left = -1;
		}
	}
	printf("%ld requests answered, %ld cancelled\n", served, cancelled);
	return 0;
}

static int on_reset(hako_asset_context_t *ctx)
{
	(void)ctx;
	return 0;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	hako_asset_callbacks_t callbacks = {
	    .on_initialize = on_initialize,
	    .on_manual_timing_control = on_manual_timing_control,
	    .on_reset = on_reset,
	};
	if (hako_asset_register("Server", NULL, &callbacks, SAMPLE_DELTA_USEC,
	                        HAKO_ASSET_MODEL_PLANT) != 0) {
		report_error("cannot register");
		return 1;
	}
	if (hako_asset_service_initialize(sample_service_file()) != 0) {
		report_error("hako_asset_service_initialize");
		return 1;
	}
	int r = hako_asset_start();
	hako_asset_unregister();
	return r == 0 || r == EINTR ? 0 : 1;
}
