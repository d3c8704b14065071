/* fed-counter: the asset of each node of the federation sample (docs/conductor.md, "The
 * sample"). Every 1 ms step it writes its robot's "counter" PDU (its step count) into its
 * node's domain, where the node's bridge picks it up, and reads the counters of the peers it is
 * given, which the bridges bring from the other nodes. At the end it says what it wrote and
 * what it received.
 *
 *   usage: fed-counter PDUDEF ROBOT [PEER_ROBOT...]     (asset "counter-<ROBOT>")
 *
 * Exit 1 when a peer's counter never arrived: the sample is about PDUs crossing nodes. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/hako_asset.h"
#include "hako/pdudef.h"
#include "hello.h"

#define MAX_PEERS 16

struct peer {
	const char *robot;
	int32_t channel;
	uint64_t last;    /* the last counter read */
	uint64_t updates; /* steps on which it had changed */
	int64_t lead;     /* own counter - theirs, when it last changed */
};

static const char *robot;
static char name[160];
static int32_t channel;
static uint64_t counter, write_errors;
static struct peer peers[MAX_PEERS];
static int npeers;

static int on_initialize(hako_asset_context_t *ctx)
{
	(void)ctx;
	counter = 0;
	return 0;
}

static int on_simulation_step(hako_asset_context_t *ctx)
{
	(void)ctx;
	uint8_t pdu[HELLO_PDU_SIZE];
	counter++;
	hello_counter_encode(pdu, counter);
	if (hako_asset_pdu_write(robot, channel, (const char *)pdu, sizeof(pdu)) != 0) {
		write_errors++;
	}
	for (int i = 0; i < npeers; i++) {
		uint64_t v;
		struct peer *p = &peers[i];
		if (hako_asset_pdu_read(p->robot, p->channel, (char *)pdu, sizeof(pdu)) == 0 &&
		    hello_counter_decode(pdu, &v) == 0 && v != p->last) {
			p->last = v;
			p->updates++;
			p->lead = (int64_t)counter - (int64_t)v;
		}
	}
	hako_time_t t = hako_asset_simulation_time();
	if (t % 1000000 == 0) {
		printf("[%s] t=%.3f s counter=%" PRIu64 "\n", name, (double)t / 1e6, counter);
	}
	return 0;
}

static int on_reset(hako_asset_context_t *ctx)
{
	(void)ctx;
	return 0;
}

/* The channel of robot's "counter" PDU in the pdudef. */
static int counter_channel(const hako_pdudef_t *def, const char *rb, int32_t *out)
{
	const hako_pdudef_pdu_t *p = hako_pdudef_find(def, rb, "counter");
	if (p == NULL || p->pdu_size != HELLO_PDU_SIZE) {
		fprintf(stderr, "[%s] robot '%s' has no 32-byte PDU 'counter' in the pdudef\n",
		        name, rb);
		return -1;
	}
	*out = p->channel_id;
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3 || argc - 3 > MAX_PEERS) {
		fprintf(stderr, "usage: fed-counter PDUDEF ROBOT [PEER_ROBOT...] (at most %d)\n",
		        MAX_PEERS);
		return 2;
	}
	robot = argv[2];
	snprintf(name, sizeof(name), "counter-%s", robot);
	hako_pdudef_t *def = NULL;
	hako_error_t err;
	char msg[1200];
	if (hako_pdudef_load(argv[1], &def, &err) != 0) {
		fprintf(stderr, "[%s] %s\n", name, hako_error_format(&err, msg, sizeof(msg)));
		return 1;
	}
	int bad = counter_channel(def, robot, &channel);
	for (int i = 3; i < argc; i++, npeers++) {
		peers[npeers].robot = argv[i];
		bad |= counter_channel(def, argv[i], &peers[npeers].channel);
	}
	hako_pdudef_free(def);
	if (bad) {
		return 1;
	}
	hako_asset_callbacks_t callbacks = {
	    .on_initialize = on_initialize,
	    .on_simulation_step = on_simulation_step,
	    .on_reset = on_reset,
	};
	int r = hako_asset_register(name, argv[1], &callbacks, HELLO_DELTA_USEC,
	                            HAKO_ASSET_MODEL_PLANT);
	if (r != 0) {
		const char *why;
		hako_asset_last_error(&why);
		fprintf(stderr, "[%s] cannot register: %s\n", name, why);
		return 1;
	}
	printf("[%s] registered in domain '%s'\n", name, hako_domain_name(hako_asset_domain()));
	r = hako_asset_start(); /* one start -> stop -> reset cycle: EINTR at its end */
	uint64_t steps = counter;
	hako_asset_unregister();
	if (r != EINTR) {
		const char *why;
		hako_asset_last_error(&why);
		fprintf(stderr, "[%s] the simulation failed: %s\n", name, why);
		return 1;
	}
	printf("[%s] done: %" PRIu64 " steps, wrote %s.counter up to %" PRIu64 ", %" PRIu64
	       " write errors\n",
	       name, steps, robot, counter, write_errors);
	int missing = 0;
	for (int i = 0; i < npeers; i++) {
		const struct peer *p = &peers[i];
		printf("[%s] received %s.counter: %" PRIu64 " updates, last %" PRIu64
		       " (this node's own was %+" PRId64 " from it then)\n",
		       name, p->robot, p->updates, p->last, p->lead);
		missing += p->updates == 0;
	}
	return write_errors == 0 && missing == 0 ? 0 : 1;
}
