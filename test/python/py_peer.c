/* py-peer: the C side of the hakopy tests (test/python): a Hakoniwa-style C asset on
 * hako_asset.h / hako_asset_service.h, or a one-shot tool on the domain HAKO_DOMAIN.
 *
 *   py-peer lockstep NAME PDUDEF MY_CH OTHER_CH   step in lock-step (1 ms), write a test PDU
 *                                                 on MY_CH each step, check the one on OTHER_CH
 *                                                 (-1: read nothing)
 *   py-peer add-server NAME SERVICE_JSON          serve Service/Add (AddTwoInts)
 *   py-peer add-client NAME SERVICE_JSON COUNT    call Service/Add COUNT times, check the sums
 *   py-peer stop-at USEC                          set the domain's stop time, then exit
 *
 * An asset prints "registered", runs one start -> stop -> reset cycle (hako_asset_start, as a
 * C asset does: it does not return before the reset), prints its counters as one line
 * "result key=value ..." and exits 0; 1 if it could not register or set up, 2 on bad usage.
 * The test script judges the counters.
 *
 * The test PDU (64 bytes; test/python/hakotest.py builds the same): on channel ch at step n,
 *   uint32 tag = 0x48414b4f ^ ch, uint32 n, uint64 n * 0x9e3779b97f4a7c15 ^ tag,
 *   48 bytes (n * 31 + i * 7 + ch) & 0xff.
 * In lock-step (world step = asset step = max delay) the PDU read during step n was written
 * by the other asset at its step n - 1 or n: the world reached n ms only after both finished
 * step n - 1, and goes on to n + 1 ms only after this asset finished step n. Never written
 * (all zeros) is right only at step 1.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/hako_asset.h"
#include "hako/hako_asset_service.h"
#include "hako/msgs/hako_srv_msgs/AddTwoIntsRequestPacket.h"
#include "hako/msgs/hako_srv_msgs/AddTwoIntsResponsePacket.h"

#define DELTA_USEC 1000
#define PDU_BYTES  64
#define ROBOT      "PyTest"
#define SERVICE    "Service/Add"
#define SHOWN_MAX  5 /* mismatches described on stderr */

static struct {
	const char *name;
	int my_ch, other_ch;
	long count; /* add-client: requests to make */
	long steps;
	long mismatches;
	long same_step; /* reads that saw the other's write of this very step */
	long last_seen;
	int service_id;
	HakoServiceHandleType handle;
	long served, right, wrong, sent;
	int busy;
	int64_t a, b;
} P;

static void report_error(const char *what)
{
	const char *msg = NULL;
	hako_asset_last_error(&msg);
	fprintf(stderr, "py-peer: %s: %s\n", what, msg != NULL ? msg : "");
}

static void make_pdu(unsigned char *p, int ch, long n)
{
	uint32_t tag = 0x48414b4fu ^ (uint32_t)ch;
	uint32_t step = (uint32_t)n;
	uint64_t mix = (uint64_t)n * 0x9e3779b97f4a7c15ull ^ tag;
	for (int i = 0; i < 4; i++) {
		p[i] = (unsigned char)(tag >> (8 * i));
		p[4 + i] = (unsigned char)(step >> (8 * i));
	}
	for (int i = 0; i < 8; i++) {
		p[8 + i] = (unsigned char)(mix >> (8 * i));
	}
	for (int i = 0; i < 48; i++) {
		p[16 + i] = (unsigned char)((n * 31 + i * 7 + ch) & 0xff);
	}
}

static void mismatch(long n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mismatch(long n, const char *fmt, ...)
{
	if (P.mismatches++ < SHOWN_MAX) {
		va_list ap;
		va_start(ap, fmt);
		fprintf(stderr, "py-peer: step %ld: ", n);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
}

/* Which step of the other asset wrote buf: n - 1 or n, else a mismatch. */
static void check_read(long n, const unsigned char *buf)
{
	static const unsigned char zero[PDU_BYTES];
	unsigned char want[PDU_BYTES];
	long seen = -1;
	if (memcmp(buf, zero, PDU_BYTES) == 0) {
		seen = 0;
	} else {
		for (long s = n - 1; s <= n && seen < 0; s++) {
			make_pdu(want, P.other_ch, s);
			if (s > 0 && memcmp(buf, want, PDU_BYTES) == 0) {
				seen = s;
			}
		}
	}
	if (seen < 0 || seen < n - 1) {
		long got =
		    (long)(buf[4] | buf[5] << 8 | buf[6] << 16 | (unsigned long)buf[7] << 24);
		mismatch(n,
		         "read a PDU that is not the other's of this or the last step (its "
		         "step field says %ld)",
		         got);
		return;
	}
	if (seen < P.last_seen) {
		mismatch(n, "read step %ld, older than a read before", seen);
	}
	P.same_step += seen == n;
	P.last_seen = seen;
}

static int lockstep_step(hako_asset_context_t *ctx)
{
	(void)ctx;
	long n = P.steps + 1;
	if (hako_asset_simulation_time() != n * DELTA_USEC) {
		mismatch(n, "world time %lld us", hako_asset_simulation_time());
	}
	if (hako_asset_current_time() != (n - 1) * DELTA_USEC) {
		mismatch(n, "asset time %lld us", hako_asset_current_time());
	}
	unsigned char buf[PDU_BYTES];
	if (P.other_ch < 0) {
		/* a writer only */
	} else if (hako_asset_pdu_read(ROBOT, P.other_ch, (char *)buf, sizeof(buf)) != 0) {
		report_error("pdu_read");
		mismatch(n, "pdu_read failed");
	} else {
		check_read(n, buf);
	}
	make_pdu(buf, P.my_ch, n);
	if (hako_asset_pdu_write(ROBOT, P.my_ch, (const char *)buf, sizeof(buf)) != 0) {
		report_error("pdu_write");
		mismatch(n, "pdu_write failed");
	}
	P.steps = n;
	return 0;
}

/* ---- Service/Add ---- */

static int server_init(hako_asset_context_t *ctx)
{
	(void)ctx;
	P.service_id = hako_asset_service_server_create(P.name, SERVICE);
	if (P.service_id < 0) {
		report_error("hako_asset_service_server_create");
	}
	return 0;
}

static int server_step(hako_asset_context_t *ctx)
{
	(void)ctx;
	P.steps++;
	if (P.service_id < 0 ||
	    hako_asset_service_server_poll(P.service_id) != HAKO_SERVICE_SERVER_API_REQUEST_IN) {
		return 0;
	}
	char *pkt;
	size_t len;
	if (hako_asset_service_server_get_request(P.service_id, &pkt, &len) != 0) {
		report_error("get_request");
		P.wrong++;
		return 0;
	}
	const Hako_hako_srv_msgs_AddTwoIntsRequestPacket *rq =
	    hako_pdu_hako_srv_msgs_AddTwoIntsRequestPacket_base(pkt);
	int64_t sum = rq->body.a + rq->body.b;
	if (hako_asset_service_server_get_response_buffer(P.service_id, &pkt, &len,
	                                                  HAKO_SERVICE_API_STATUS_DONE,
	                                                  HAKO_SERVICE_API_RESULT_CODE_OK) != 0) {
		report_error("get_response_buffer");
		P.wrong++;
		return 0;
	}
	hako_pdu_hako_srv_msgs_AddTwoIntsResponsePacket_base(pkt)->body.sum = sum;
	if (hako_asset_service_server_put_response(P.service_id, pkt, len) != 0) {
		report_error("put_response");
		P.wrong++;
		return 0;
	}
	P.served++;
	return 0;
}

static int client_init(hako_asset_context_t *ctx)
{
	(void)ctx;
	if (hako_asset_service_client_create(P.name, SERVICE, P.name, &P.handle) != 0) {
		report_error("hako_asset_service_client_create");
		P.handle.service_id = -1;
	}
	return 0;
}

/* The operands of request i: large, negative and mixed. */
static void operands(long i, int64_t *a, int64_t *b)
{
	*a = (i % 2 == 0 ? 1 : -1) * ((int64_t)1 << 40) + i * 1000003;
	*b = -(int64_t)i * i * 7919 + 11;
}

static void client_send(void)
{
	char *pkt;
	size_t len;
	if (hako_asset_service_client_get_request_buffer(
	        &P.handle, &pkt, &len, HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST, -1) != 0) {
		report_error("get_request_buffer");
		P.wrong++;
		return;
	}
	Hako_hako_srv_msgs_AddTwoIntsRequestPacket *rq =
	    hako_pdu_hako_srv_msgs_AddTwoIntsRequestPacket_base(pkt);
	operands(P.sent, &P.a, &P.b);
	rq->body.a = P.a;
	rq->body.b = P.b;
	if (hako_asset_service_client_call_request(&P.handle, pkt, len, 1000) != 0) {
		report_error("call_request");
		P.wrong++;
		return;
	}
	P.sent++;
	P.busy = 1;
}

static int client_step(hako_asset_context_t *ctx)
{
	(void)ctx;
	P.steps++;
	if (P.handle.service_id < 0) {
		return 0;
	}
	if (!P.busy) {
		if (P.sent < P.count) {
			client_send();
		}
		return 0;
	}
	int ev = hako_asset_service_client_poll(&P.handle);
	if (ev == HAKO_SERVICE_CLIENT_API_RESPONSE_IN) {
		char *pkt;
		size_t len;
		if (hako_asset_service_client_get_response(&P.handle, &pkt, &len, 0) != 0) {
			report_error("get_response");
			P.wrong++;
		} else {
			const Hako_hako_srv_msgs_AddTwoIntsResponsePacket *rs =
			    hako_pdu_hako_srv_msgs_AddTwoIntsResponsePacket_base(pkt);
			if (rs->header.result_code == HAKO_SERVICE_API_RESULT_CODE_OK &&
			    rs->body.sum == P.a + P.b) {
				P.right++;
			} else {
				P.wrong++;
				fprintf(stderr,
				        "py-peer: %" PRId64 " + %" PRId64 ": got %" PRId64
				        " (result code %d)\n",
				        P.a, P.b, rs->body.sum, (int)rs->header.result_code);
			}
		}
		P.busy = 0;
	} else if (ev != HAKO_SERVICE_CLIENT_API_EVENT_NONE) {
		report_error("client_poll");
		P.wrong++;
		P.busy = 0;
	}
	return 0;
}

static int on_reset(hako_asset_context_t *ctx)
{
	(void)ctx;
	printf("on_reset\n");
	return 0;
}

static int run(const char *pdudef, const char *service_json, int (*on_init)(hako_asset_context_t *),
               int (*on_step)(hako_asset_context_t *))
{
	hako_asset_callbacks_t cb = {
	    .on_initialize = on_init, .on_simulation_step = on_step, .on_reset = on_reset};
	if (hako_asset_register(P.name, pdudef, &cb, DELTA_USEC, HAKO_ASSET_MODEL_PLANT) != 0) {
		report_error("hako_asset_register");
		return 1;
	}
	if (service_json != NULL && hako_asset_service_initialize(service_json) != 0) {
		report_error("hako_asset_service_initialize");
		return 1;
	}
	printf("registered\n");
	int r = hako_asset_start();
	printf("result steps=%ld mismatches=%ld same_step=%ld served=%ld right=%ld wrong=%ld "
	       "start=%d\n",
	       P.steps, P.mismatches, P.same_step, P.served, P.right, P.wrong, r);
	hako_asset_unregister();
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: py-peer lockstep NAME PDUDEF MY_CH OTHER_CH\n"
	                "       py-peer add-server NAME SERVICE_JSON\n"
	                "       py-peer add-client NAME SERVICE_JSON COUNT\n"
	                "       py-peer stop-at USEC\n");
	return 2;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		return usage();
	}
	const char *mode = argv[1];
	P.name = argv[2];
	if (strcmp(mode, "lockstep") == 0 && argc == 6) {
		P.my_ch = atoi(argv[4]);
		P.other_ch = atoi(argv[5]);
		return run(argv[3], NULL, NULL, lockstep_step);
	}
	if (strcmp(mode, "add-server") == 0 && argc == 4) {
		P.service_id = -1;
		return run(NULL, argv[3], server_init, server_step);
	}
	if (strcmp(mode, "add-client") == 0 && argc == 5) {
		P.count = atol(argv[4]);
		return run(NULL, argv[3], client_init, client_step);
	}
	if (strcmp(mode, "stop-at") == 0 && argc == 3) {
		hako_domain_t *dom;
		int r = hako_domain_open(hako_domain_default_name(), &dom);
		if (r == 0) {
			r = hako_domain_set_stop_time(dom, atoll(argv[2]));
			hako_domain_close(dom);
		}
		if (r != 0) {
			fprintf(stderr, "py-peer: stop-at: %s\n", hako_strerror(r));
			return 1;
		}
		return 0;
	}
	return usage();
}
