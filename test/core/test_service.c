/* Hakoniwa's service API (hako_asset_service.h): requests and responses between the processes
 * of a domain over the channels of a service file. The test process is the conductor (creator
 * + master); servers and clients run in forked children, either as registered assets that step
 * the world clock with hako_asset_usleep between polls (timeouts are in world time), or as
 * attached processes that poll in wall time. Children report through HTU_CHECK (exit code)
 * and shared counters. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/hako_asset.h"
#include "hako/hako_asset_service.h"
#include "hako/msgs/hako_srv_msgs/AddTwoIntsRequestPacket.h"
#include "hako/msgs/hako_srv_msgs/AddTwoIntsResponsePacket.h"
#include "hako_test_util.h"

#define ADD   "Service/Add"
#define OTHER "Service/Other"
#define META  24
/* Requests use the server sizes of the service file, responses the client sizes. */
#define REQ_SIZE (META + 296)
#define RES_SIZE (META + 288)

#define NCLIENTS  3
#define NREQ      20
#define STEP_USEC 1000
/* Bound of every wait for an event in a child: world steps for an asset, wall milliseconds
 * for an attached process. */
#define MAX_STEPS 5000

/* Hakoniwa's example sizes; the error cases below count on its line numbers. */
#define SERVICE_JSON                                                                               \
	"{\n"                                                                                      \
	"  \"pduMetaDataSize\": 24,\n"                                                             \
	"  \"services\": [\n"                                                                      \
	"    {\"name\": \"Service/Add\", \"type\": \"hako_srv_msgs/AddTwoInts\",\n"                \
	"     \"maxClients\": 3,\n"                                                                \
	"     \"pduSize\": {\"server\": {\"baseSize\": 296, \"heapSize\": 0},\n"                   \
	"                 \"client\": {\"baseSize\": 288, \"heapSize\": 0}}},\n"                   \
	"    {\"name\": \"Service/Other\", \"type\": \"hako_srv_msgs/AddTwoInts\",\n"              \
	"     \"maxClients\": 3,\n"                                                                \
	"     \"pduSize\": {\"server\": {\"baseSize\": 296, \"heapSize\": 0},\n"                   \
	"                 \"client\": {\"baseSize\": 288, \"heapSize\": 0}}}\n"                    \
	"  ]\n"                                                                                    \
	"}\n"

typedef Hako_hako_srv_msgs_AddTwoIntsRequestPacket req_t;
typedef Hako_hako_srv_msgs_AddTwoIntsResponsePacket res_t;

/* Shared between the test and its children. */
struct shared {
	_Atomic int ready;            /* children set up */
	_Atomic int stage;            /* how far a test got (its own meaning in each test) */
	_Atomic int quit;             /* the test lets the children leave */
	_Atomic int pace_usec;        /* wall time assets also sleep per world step */
	_Atomic int killing;          /* the server is being killed */
	_Atomic int server_pid;       /* the server that is killed */
	_Atomic int served[NCLIENTS]; /* requests the server answered, per client */
	_Atomic int slots;            /* bit i: the server served client slot i */
	_Atomic int done;             /* clients that got all their answers */
	_Atomic int ids[8];           /* client slots and service ids the children got */
};

struct fx {
	char name[HAKO_NAME_MAX];
	char dir[256];
	char service[512];
	hako_domain_t *dom;
	hako_master_t *master;
	struct shared *sh;
};

static struct fx *cur; /* the children read it (a copy of the test's memory) */

static int setup(void **state, const char *test)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name(test, f->name, sizeof(f->name));
	assert_non_null(htu_tmpdir(f->dir, sizeof(f->dir)));
	snprintf(f->service, sizeof(f->service), "%s/service.json", f->dir);
	assert_int_equal(htu_write_file(f->service, SERVICE_JSON), 0);
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 8;
	cfg.max_channels = 64;
	cfg.arena_bytes = 1 << 20;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	hako_master_config_t mc = {STEP_USEC, STEP_USEC, 0};
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), 0);
	f->sh = htu_shared_alloc(sizeof(*f->sh));
	assert_non_null(f->sh);
	setenv("HAKO_DOMAIN", f->name, 1);
	cur = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	unsetenv("HAKO_DOMAIN");
	hako_master_stop(f->master);
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	htu_remove_tmpdirs();
	htu_shared_free(f->sh, sizeof(*f->sh));
	free(f);
	cur = NULL;
	return 0;
}

#define SETUP(test)                                                                                \
	static int setup_##test(void **state)                                                      \
	{                                                                                          \
		return setup(state, #test);                                                        \
	}

/* ---- the test's side ---- */

static int any_exited(const pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		if (htu_child_exited(pids[i])) {
			return 1;
		}
	}
	return 0;
}

/* Wait until the shared counter reaches want (0 when a child exited first, or on timeout). */
static int wait_count(_Atomic int *v, int want, const pid_t *pids, int n)
{
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(v) >= want || any_exited(pids, n), HTU_TIMEOUT_USEC);
	return ok && atomic_load(v) >= want;
}

/* Wait for every child; 0 as soon as one of them failed (teardown kills the others). */
static int join_all(const pid_t *pids, int n)
{
	int reaped[8] = {0};
	int left = n;
	hako_time_t deadline = hako_now_usec() + 2 * HTU_TIMEOUT_USEC;
	while (left > 0 && hako_now_usec() < deadline) {
		for (int i = 0; i < n; i++) {
			int status = 0;
			if (reaped[i] || !htu_child_exited(pids[i])) {
				continue;
			}
			reaped[i] = 1;
			left--;
			if (htu_wait_child(pids[i], HTU_TIMEOUT_USEC, &status) != 0 ||
			    !htu_exited_ok(pids[i], status)) {
				return 0;
			}
		}
		htu_sleep_usec(1000);
	}
	if (left > 0) {
		fprintf(stderr, "%d children did not exit in time\n", left);
	}
	return left == 0;
}

/* Start the run once the n asset children are ready, and wait for all of them. */
static void run_assets(struct fx *f, const pid_t *pids, int n)
{
	if (wait_count(&f->sh->ready, n, pids, n)) {
		assert_int_equal(hako_domain_start(f->dom), 0);
	}
	assert_true(join_all(pids, n));
}

/* ---- the children's side ---- */

static int g_sid = -1;            /* the service id a server child serves */
static HakoServiceHandleType g_h; /* a client child's handle */
static char g_name[32];           /* a client child's name */
static int g_index;               /* a client child's index */

static void step(void)
{
	if (hako_asset_member() != NULL) {
		HTU_CHECK_RC(hako_asset_usleep(STEP_USEC), 0);
		if (atomic_load(&cur->sh->pace_usec) > 0) {
			htu_sleep_usec(atomic_load(&cur->sh->pace_usec));
		}
	} else {
		htu_sleep_usec(STEP_USEC);
	}
}

/* For attached children and before a run: wait in wall time. */
static void wait_for(_Atomic int *v, int want)
{
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(v) >= want, HTU_TIMEOUT_USEC);
	HTU_CHECK(ok);
}

/* For assets during a run: wait stepping the world clock. */
static void step_until(_Atomic int *v, int want)
{
	for (int i = 0; atomic_load(v) < want; i++) {
		HTU_CHECK(i < MAX_STEPS);
		step();
	}
}

static void join_attached(void)
{
	HTU_CHECK_RC(hako_asset_attach_core(), 0);
	HTU_CHECK_RC(hako_asset_service_initialize(cur->service), 0);
}

static void join_asset(const char *name, int (*body)(hako_asset_context_t *))
{
	hako_asset_callbacks_t cb = {0};
	cb.on_manual_timing_control = body;
	HTU_CHECK_RC(hako_asset_register(name, NULL, &cb, STEP_USEC, HAKO_ASSET_MODEL_PLANT), 0);
	HTU_CHECK_RC(hako_asset_service_initialize(cur->service), 0);
}

/* Run the body once the test started the domain, then leave it: the other assets' clocks go
 * on without this one. */
static void run_asset(void)
{
	atomic_fetch_add(&cur->sh->ready, 1);
	HTU_CHECK_RC(hako_asset_start(), 0); /* the body returned while running */
	HTU_CHECK_RC(hako_asset_unregister(), 0);
}

static void create_client(const char *service, int index)
{
	g_index = index;
	snprintf(g_name, sizeof(g_name), "Client%d", index);
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, service, g_name, &g_h), 0);
	HTU_CHECK(g_h.service_id >= 0 && g_h.client_id >= 0 && g_h.client_id < 3);
}

static const char *last_message(void)
{
	const char *msg = NULL;
	hako_asset_last_error(&msg);
	HTU_CHECK(msg != NULL);
	return msg;
}

/* Send a + b as the next request of the client; its request id. */
static uint32_t send_add(int64_t a, int64_t b, int poll_msec, int timeout_msec)
{
	char *p = NULL;
	size_t len = 0;
	HTU_CHECK_RC(hako_asset_service_client_get_request_buffer(
	                 &g_h, &p, &len, HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST, poll_msec),
	             0);
	HTU_CHECK(p != NULL);
	HTU_CHECK_RC(len, REQ_SIZE);
	req_t *rq = hako_pdu_hako_srv_msgs_AddTwoIntsRequestPacket_base(p);
	HTU_CHECK(strcmp(rq->header.client_name, g_name) == 0);
	HTU_CHECK_RC(rq->header.opcode, HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST);
	HTU_CHECK_RC(rq->header.status_poll_interval_msec, poll_msec);
	HTU_CHECK(rq->body.a == 0 && rq->body.b == 0);
	rq->body.a = a;
	rq->body.b = b;
	uint32_t id = rq->header.request_id;
	HTU_CHECK_RC(hako_asset_service_client_call_request(&g_h, p, len, timeout_msec), 0);
	int st = -1;
	HTU_CHECK_RC(hako_asset_service_client_status(&g_h, &st), 0);
	HTU_CHECK_RC(st, HAKO_SERVICE_CLIENT_API_STATE_DOING);
	return id;
}

/* Poll the client every step until an event. */
static int client_wait(void)
{
	for (int i = 0; i < MAX_STEPS; i++) {
		int ev = hako_asset_service_client_poll(&g_h);
		HTU_CHECK(ev >= 0);
		if (ev != HAKO_SERVICE_CLIENT_API_EVENT_NONE) {
			return ev;
		}
		step();
	}
	fprintf(stderr, "child %d: no client event in %d steps\n", (int)getpid(), MAX_STEPS);
	_exit(1);
}

static const res_t *response(uint32_t id, int status, int result)
{
	char *p = NULL;
	size_t len = 0;
	HTU_CHECK_RC(hako_asset_service_client_get_response(&g_h, &p, &len, 0), 0);
	HTU_CHECK(p != NULL);
	HTU_CHECK_RC(len, RES_SIZE);
	const res_t *r = hako_pdu_hako_srv_msgs_AddTwoIntsResponsePacket_base(p);
	HTU_CHECK_RC(r->header.request_id, id);
	HTU_CHECK(strcmp(r->header.client_name, g_name) == 0);
	HTU_CHECK_RC(r->header.status, status);
	HTU_CHECK_RC(r->header.result_code, result);
	int st = -1;
	HTU_CHECK_RC(hako_asset_service_client_status(&g_h, &st), 0);
	HTU_CHECK_RC(st, HAKO_SERVICE_CLIENT_API_STATE_IDLE);
	return r;
}

/* Wait for the answer to request id and check it is sum. */
static void expect_sum(uint32_t id, int64_t sum)
{
	HTU_CHECK_RC(client_wait(), HAKO_SERVICE_CLIENT_API_RESPONSE_IN);
	const res_t *r =
	    response(id, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_OK);
	HTU_CHECK(strcmp(r->header.service_name, ADD) == 0);
	HTU_CHECK_RC(r->body.sum, sum);
}

/* Poll the server every step until an event. */
static int server_wait(void)
{
	for (int i = 0; i < MAX_STEPS; i++) {
		int ev = hako_asset_service_server_poll(g_sid);
		HTU_CHECK(ev >= 0);
		if (ev != HAKO_SERVICE_SERVER_API_EVENT_NONE) {
			return ev;
		}
		step();
	}
	fprintf(stderr, "child %d: no server event in %d steps\n", (int)getpid(), MAX_STEPS);
	_exit(1);
}

static int server_status(void)
{
	int st = -1;
	HTU_CHECK_RC(hako_asset_service_server_status(g_sid, &st), 0);
	return st;
}

/* A copy of the request in progress. */
static req_t request(void)
{
	char *p = NULL;
	size_t len = 0;
	HTU_CHECK_RC(hako_asset_service_server_get_request(g_sid, &p, &len), 0);
	HTU_CHECK(p != NULL);
	HTU_CHECK_RC(len, REQ_SIZE);
	req_t rq;
	memcpy(&rq, hako_pdu_hako_srv_msgs_AddTwoIntsRequestPacket_base(p), sizeof(rq));
	HTU_CHECK(strcmp(rq.header.service_name, ADD) == 0);
	HTU_CHECK_RC(rq.header.opcode, HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST);
	return rq;
}

/* Answer the request in progress. */
static void answer(const req_t *rq, int status, int result, int64_t sum)
{
	char *p = NULL;
	size_t len = 0;
	HTU_CHECK_RC(hako_asset_service_server_get_response_buffer(g_sid, &p, &len, status, result),
	             0);
	HTU_CHECK(p != NULL);
	HTU_CHECK_RC(len, RES_SIZE);
	res_t *r = hako_pdu_hako_srv_msgs_AddTwoIntsResponsePacket_base(p);
	HTU_CHECK_RC(r->header.request_id, rq->header.request_id);
	HTU_CHECK(strcmp(r->header.service_name, ADD) == 0);
	HTU_CHECK(strcmp(r->header.client_name, rq->header.client_name) == 0);
	HTU_CHECK_RC(r->header.status, status);
	HTU_CHECK_RC(r->header.result_code, result);
	HTU_CHECK_RC(r->body.sum, 0);
	r->body.sum = sum;
	HTU_CHECK_RC(hako_asset_service_server_put_response(g_sid, p, len), 0);
	HTU_CHECK_RC(server_status(), HAKO_SERVICE_SERVER_API_STATUS_IDLE);
}

static void create_server(void)
{
	g_sid =
	    hako_asset_service_server_create(hako_asset_member() != NULL ? "server" : NULL, ADD);
	HTU_CHECK(g_sid >= 0);
	HTU_CHECK_RC(server_status(), HAKO_SERVICE_SERVER_API_STATUS_IDLE);
}

static void server_child(int (*body)(hako_asset_context_t *))
{
	join_asset("server", body);
	create_server();
	run_asset();
}

static void client_child(const char *asset, int index, int (*body)(hako_asset_context_t *))
{
	join_asset(asset, body);
	create_client(ADD, index);
	atomic_store(&cur->sh->ids[index], g_h.client_id);
	run_asset();
}

/* ---- one server, three clients at once ---- */

static int64_t operand_a(int c, int k)
{
	return 1000 * (c + 1) + k;
}

static int64_t operand_b(int c, int k)
{
	return 100000 * (c + 1) + 3 * k;
}

static int client_index(const char *name)
{
	for (int c = 0; c < NCLIENTS; c++) {
		char want[32];
		snprintf(want, sizeof(want), "Client%d", c);
		if (strcmp(name, want) == 0) {
			return c;
		}
	}
	fprintf(stderr, "child %d: request from unknown client '%s'\n", (int)getpid(), name);
	_exit(1);
}

static int serve_all(hako_asset_context_t *ctx)
{
	(void)ctx;
	struct shared *sh = cur->sh;
	for (int n = 0; n < NCLIENTS * NREQ; n++) {
		HTU_CHECK_RC(server_wait(), HAKO_SERVICE_SERVER_API_REQUEST_IN);
		HTU_CHECK_RC(server_status(), HAKO_SERVICE_SERVER_API_STATUS_DOING);
		HTU_CHECK_RC(hako_asset_service_server_is_canceled(g_sid), 0);
		req_t rq = request();
		int c = client_index(rq.header.client_name);
		int slot = hako_asset_service_server_get_current_client_id(g_sid);
		HTU_CHECK_RC(slot, atomic_load(&sh->ids[c]));
		int req_ch = -1, res_ch = -1;
		HTU_CHECK_RC(
		    hako_asset_service_server_get_current_channel_id(g_sid, &req_ch, &res_ch), 0);
		HTU_CHECK(req_ch == 2 * slot && res_ch == 2 * slot + 1);
		/* Each client's requests arrive in order, none lost. */
		int k = atomic_load(&sh->served[c]);
		HTU_CHECK_RC(rq.body.a, operand_a(c, k));
		HTU_CHECK_RC(rq.body.b, operand_b(c, k));
		answer(&rq, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_OK,
		       rq.body.a + rq.body.b);
		atomic_fetch_add(&sh->served[c], 1);
		atomic_fetch_or(&sh->slots, 1 << slot);
	}
	return 0;
}

static int request_all(hako_asset_context_t *ctx)
{
	(void)ctx;
	uint32_t first = 0;
	for (int k = 0; k < NREQ; k++) {
		int64_t a = operand_a(g_index, k), b = operand_b(g_index, k);
		uint32_t id = send_add(a, b, 0, 0);
		if (k == 0) {
			first = id;
		}
		HTU_CHECK_RC(id, first + (uint32_t)k);
		expect_sum(id, a + b);
	}
	atomic_fetch_add(&cur->sh->done, 1);
	return 0;
}

static void serve_all_child(void *p)
{
	(void)p;
	server_child(serve_all);
}

static void request_all_child(void *p)
{
	int c = (int)(intptr_t)p;
	char asset[32];
	snprintf(asset, sizeof(asset), "client%d", c);
	client_child(asset, c, request_all);
}

/* Three clients at once, twenty requests each: every client gets every answer, in order, and
 * the server takes requests from every slot (Hakoniwa's looked only at slot 0 until it had
 * answered it). */
SETUP(many_clients)
static void test_many_clients(void **state)
{
	struct fx *f = *state;
	pid_t pids[1 + NCLIENTS];
	pids[0] = htu_fork(serve_all_child, NULL);
	assert_true(pids[0] > 0);
	assert_true(wait_count(&f->sh->ready, 1, pids, 1));
	for (int c = 0; c < NCLIENTS; c++) {
		pids[1 + c] = htu_fork(request_all_child, (void *)(intptr_t)c);
		assert_true(pids[1 + c] > 0);
	}
	run_assets(f, pids, 1 + NCLIENTS);
	assert_int_equal(atomic_load(&f->sh->done), NCLIENTS);
	for (int c = 0; c < NCLIENTS; c++) {
		assert_int_equal(atomic_load(&f->sh->served[c]), NREQ);
	}
	assert_int_equal(atomic_load(&f->sh->slots), (1 << NCLIENTS) - 1);
}

/* ---- client slots ---- */

/* Holder i takes client slot "Client<i>" of ADD (and "x<i>" of OTHER, for i = 0 and 2) and
 * stays: holder 2 until stage 1, the others until quit. */
static void holder_child(void *p)
{
	int i = (int)(intptr_t)p;
	struct shared *sh = cur->sh;
	join_attached();
	create_client(ADD, i);
	HakoServiceHandleType again = {-1, -1};
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, ADD, g_name, &again), 0);
	HTU_CHECK(again.service_id == g_h.service_id && again.client_id == g_h.client_id);
	atomic_store(&sh->ids[i], g_h.client_id);
	if (i != 1) {
		char name[16];
		HakoServiceHandleType h = {-1, -1};
		snprintf(name, sizeof(name), "x%d", i);
		HTU_CHECK_RC(hako_asset_service_client_create(NULL, OTHER, name, &h), 0);
		HTU_CHECK(h.service_id != g_h.service_id);
		atomic_store(&sh->ids[4 + i], h.client_id);
	}
	atomic_fetch_add(&sh->ready, 1);
	wait_for(i == 2 ? &sh->stage : &sh->quit, 1);
}

static void full_child(void *p)
{
	(void)p;
	join_attached();
	HakoServiceHandleType h = {-1, -1};
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, ADD, "Client3", &h), -1);
	HTU_CHECK(last_message()[0] != '\0');
}

/* A name whose slot is held by a dead process gets it back. */
static void rejoin_child(void *p)
{
	(void)p;
	join_attached();
	create_client(ADD, 2);
	HTU_CHECK_RC(g_h.client_id, atomic_load(&cur->sh->ids[2]));
}

/* A new name gets a free slot first, and a dead process's slot when no slot is free. */
static void takeover_child(void *p)
{
	(void)p;
	struct shared *sh = cur->sh;
	join_attached();
	HakoServiceHandleType h = {-1, -1};
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, ADD, "Client3", &h), 0);
	HTU_CHECK_RC(h.client_id, atomic_load(&sh->ids[2]));
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, ADD, "Client4", &h), -1);

	int x0 = atomic_load(&sh->ids[4]), x2 = atomic_load(&sh->ids[6]);
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, OTHER, "y1", &h), 0);
	HTU_CHECK(h.client_id >= 0 && h.client_id < 3 && h.client_id != x0 && h.client_id != x2);
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, OTHER, "y2", &h), 0);
	HTU_CHECK_RC(h.client_id, x2);
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, OTHER, "y3", &h), -1);
}

/* maxClients 3 of each service: a fourth live client is refused; a slot held by a dead
 * process goes back to its name, or to a new name once no slot is free. */
SETUP(client_slots)
static void test_client_slots(void **state)
{
	struct fx *f = *state;
	struct shared *sh = f->sh;
	pid_t holders[3];
	for (int i = 0; i < 3; i++) {
		holders[i] = htu_fork(holder_child, (void *)(intptr_t)i);
		assert_true(holders[i] > 0);
	}
	assert_true(wait_count(&sh->ready, 3, holders, 3));
	int ids[3] = {atomic_load(&sh->ids[0]), atomic_load(&sh->ids[1]), atomic_load(&sh->ids[2])};
	assert_true(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
	assert_true(atomic_load(&sh->ids[4]) != atomic_load(&sh->ids[6]));

	/* Every slot is held by a live process. */
	assert_true(htu_join_child(htu_fork(full_child, NULL), HTU_TIMEOUT_USEC));

	/* Holder 2 leaves: its slots are held by a dead process. */
	atomic_store(&sh->stage, 1);
	assert_true(htu_join_child(holders[2], HTU_TIMEOUT_USEC));
	assert_true(htu_join_child(htu_fork(rejoin_child, NULL), HTU_TIMEOUT_USEC));
	assert_true(htu_join_child(htu_fork(takeover_child, NULL), HTU_TIMEOUT_USEC));

	atomic_store(&sh->quit, 1);
	assert_true(htu_join_child(holders[0], HTU_TIMEOUT_USEC));
	assert_true(htu_join_child(holders[1], HTU_TIMEOUT_USEC));
}

/* ---- one server per service ---- */

static void first_server_child(void *p)
{
	(void)p;
	join_attached();
	create_server();
	HTU_CHECK_RC(hako_asset_service_server_create(NULL, ADD), g_sid);
	atomic_store(&cur->sh->ids[0], g_sid);
	atomic_fetch_add(&cur->sh->ready, 1);
	wait_for(&cur->sh->quit, 1);
}

static void second_server_child(void *p)
{
	(void)p;
	int sid = atomic_load(&cur->sh->ids[0]);
	join_attached();
	HTU_CHECK_RC(hako_asset_service_server_create(NULL, ADD), -1);
	HTU_CHECK(last_message()[0] != '\0');
	/* The service id is the same in every process. */
	create_client(ADD, 0);
	HTU_CHECK_RC(g_h.service_id, sid);
	int other = hako_asset_service_server_create(NULL, OTHER);
	HTU_CHECK(other >= 0 && other != sid);
	HTU_CHECK_RC(hako_asset_service_server_create(NULL, "Service/None"), -1);
	HTU_CHECK_RC(hako_asset_service_server_create(NULL, NULL), -1);
}

/* The server of a dead process is replaced. */
static void next_server_child(void *p)
{
	(void)p;
	join_attached();
	HTU_CHECK_RC(hako_asset_service_server_create(NULL, ADD), atomic_load(&cur->sh->ids[0]));
}

/* One server per service: a second live process is refused, the same process gets its id
 * again, and a dead server's service can be served again. */
SETUP(one_server)
static void test_one_server(void **state)
{
	struct fx *f = *state;
	pid_t first = htu_fork(first_server_child, NULL);
	assert_true(first > 0);
	assert_true(wait_count(&f->sh->ready, 1, &first, 1));
	assert_true(htu_join_child(htu_fork(second_server_child, NULL), HTU_TIMEOUT_USEC));
	atomic_store(&f->sh->quit, 1);
	assert_true(htu_join_child(first, HTU_TIMEOUT_USEC));
	assert_true(htu_join_child(htu_fork(next_server_child, NULL), HTU_TIMEOUT_USEC));
}

/* ---- timeout and cancel ---- */

#define TIMEOUT_MSEC 50

static int hold_until_cancel(hako_asset_context_t *ctx)
{
	(void)ctx;
	HTU_CHECK_RC(server_wait(), HAKO_SERVICE_SERVER_API_REQUEST_IN);
	req_t rq = request();
	HTU_CHECK_RC(hako_asset_service_server_is_canceled(g_sid), 0);
	atomic_store(&cur->sh->stage, 1);
	/* No answer, no progress report: the client times out and cancels. */
	HTU_CHECK_RC(server_wait(), HAKO_SERVICE_SERVER_API_REQUEST_CANCEL);
	HTU_CHECK_RC(hako_asset_service_server_is_canceled(g_sid), 1);
	HTU_CHECK_RC(server_status(), HAKO_SERVICE_SERVER_API_STATUS_CANCELING);
	answer(&rq, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_CANCELED, 0);
	/* The next request is served as usual. */
	HTU_CHECK_RC(server_wait(), HAKO_SERVICE_SERVER_API_REQUEST_IN);
	rq = request();
	answer(&rq, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_OK,
	       rq.body.a + rq.body.b);
	return 0;
}

static int time_out_and_cancel(hako_asset_context_t *ctx)
{
	(void)ctx;
	hako_time_t t0 = hako_asset_simulation_time();
	uint32_t id = send_add(1, 2, 0, TIMEOUT_MSEC);
	HTU_CHECK_RC(client_wait(), HAKO_SERVICE_CLIENT_API_REQUEST_TIMEOUT);
	hako_time_t waited = hako_asset_simulation_time() - t0;
	/* World time (the world runs slower than the wall clock here: a wall-clock timeout
	 * would come too early). */
	HTU_CHECK(waited >= TIMEOUT_MSEC * 1000LL);
	HTU_CHECK(waited <= 2 * TIMEOUT_MSEC * 1000LL);
	HTU_CHECK_RC(atomic_load(&cur->sh->stage), 1);

	HTU_CHECK_RC(hako_asset_service_client_cancel_request(&g_h), 0);
	int st = -1;
	HTU_CHECK_RC(hako_asset_service_client_status(&g_h, &st), 0);
	HTU_CHECK_RC(st, HAKO_SERVICE_CLIENT_API_STATE_CANCELING);
	HTU_CHECK_RC(client_wait(), HAKO_SERVICE_CLIENT_API_REQUEST_CANCEL_DONE);
	response(id, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_CANCELED);

	uint32_t next = send_add(20, 22, 0, TIMEOUT_MSEC);
	HTU_CHECK_RC(next, id + 1);
	expect_sum(next, 42);
	return 0;
}

static void hold_until_cancel_child(void *p)
{
	(void)p;
	server_child(hold_until_cancel);
}

static void time_out_and_cancel_child(void *p)
{
	(void)p;
	client_child("client", 0, time_out_and_cancel);
}

SETUP(timeout_cancel)
static void test_timeout_cancel(void **state)
{
	struct fx *f = *state;
	atomic_store(&f->sh->pace_usec, 2000);
	pid_t pids[2];
	pids[0] = htu_fork(hold_until_cancel_child, NULL);
	assert_true(pids[0] > 0);
	assert_true(wait_count(&f->sh->ready, 1, pids, 1));
	pids[1] = htu_fork(time_out_and_cancel_child, NULL);
	assert_true(pids[1] > 0);
	run_assets(f, pids, 2);
}

/* ---- progress ---- */

#define PROGRESS_MSEC 10
#define HOLD_MSEC     200

static int report_progress(hako_asset_context_t *ctx)
{
	(void)ctx;
	HTU_CHECK_RC(server_wait(), HAKO_SERVICE_SERVER_API_REQUEST_IN);
	req_t rq = request();
	HTU_CHECK_RC(rq.header.status_poll_interval_msec, PROGRESS_MSEC);
	HTU_CHECK_RC(hako_asset_service_server_set_progress(g_sid, 50), 0);
	/* Hold the request four timeouts long, polling: the progress reports keep it alive. */
	for (int i = 0; i < HOLD_MSEC; i++) {
		HTU_CHECK_RC(hako_asset_service_server_poll(g_sid),
		             HAKO_SERVICE_SERVER_API_EVENT_NONE);
		step();
	}
	answer(&rq, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_OK,
	       rq.body.a + rq.body.b);
	return 0;
}

static int follow_progress(hako_asset_context_t *ctx)
{
	(void)ctx;
	hako_time_t t0 = hako_asset_simulation_time();
	uint32_t id = send_add(3, 4, PROGRESS_MSEC, TIMEOUT_MSEC);
	int seen = -1;
	int ev = HAKO_SERVICE_CLIENT_API_EVENT_NONE;
	for (int i = 0; ev == HAKO_SERVICE_CLIENT_API_EVENT_NONE; i++) {
		HTU_CHECK(i < MAX_STEPS);
		int progress = hako_asset_service_client_get_progress(&g_h);
		HTU_CHECK(progress >= 0 && progress <= 100);
		seen = progress > seen ? progress : seen;
		ev = hako_asset_service_client_poll(&g_h);
		if (ev == HAKO_SERVICE_CLIENT_API_EVENT_NONE) {
			step();
		}
	}
	HTU_CHECK_RC(ev, HAKO_SERVICE_CLIENT_API_RESPONSE_IN);
	HTU_CHECK_RC(seen, 50);
	HTU_CHECK(hako_asset_simulation_time() - t0 >= HOLD_MSEC * 1000LL);
	const res_t *r =
	    response(id, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_OK);
	HTU_CHECK_RC(r->body.sum, 7);
	return 0;
}

static void report_progress_child(void *p)
{
	(void)p;
	server_child(report_progress);
}

static void follow_progress_child(void *p)
{
	(void)p;
	client_child("client", 0, follow_progress);
}

/* Progress reports renew the timeout (in Hakoniwa, a request timed out however often the
 * server reported progress). */
SETUP(progress)
static void test_progress(void **state)
{
	struct fx *f = *state;
	pid_t pids[2];
	pids[0] = htu_fork(report_progress_child, NULL);
	assert_true(pids[0] > 0);
	assert_true(wait_count(&f->sh->ready, 1, pids, 1));
	pids[1] = htu_fork(follow_progress_child, NULL);
	assert_true(pids[1] > 0);
	run_assets(f, pids, 2);
}

/* ---- a cancel before the server took the request ---- */

static int serve_late(hako_asset_context_t *ctx)
{
	(void)ctx;
	struct shared *sh = cur->sh;
	step_until(&sh->stage, 1);
	for (int i = 0; atomic_load(&sh->stage) < 2; i++) {
		HTU_CHECK(i < MAX_STEPS);
		int ev = hako_asset_service_server_poll(g_sid);
		HTU_CHECK(ev >= 0);
		if (ev != HAKO_SERVICE_SERVER_API_EVENT_NONE) {
			req_t rq = request();
			if (hako_asset_service_server_is_canceled(g_sid) == 1) {
				answer(&rq, HAKO_SERVICE_API_STATUS_DONE,
				       HAKO_SERVICE_API_RESULT_CODE_CANCELED, 0);
			} else {
				HTU_CHECK_RC(ev, HAKO_SERVICE_SERVER_API_REQUEST_IN);
				answer(&rq, HAKO_SERVICE_API_STATUS_DONE,
				       HAKO_SERVICE_API_RESULT_CODE_OK, rq.body.a + rq.body.b);
			}
		}
		step();
	}
	return 0;
}

static int cancel_at_once(hako_asset_context_t *ctx)
{
	(void)ctx;
	uint32_t id = send_add(5, 5, 0, 0);
	HTU_CHECK_RC(hako_asset_service_client_cancel_request(&g_h), 0);
	int st = -1;
	HTU_CHECK_RC(hako_asset_service_client_status(&g_h, &st), 0);
	HTU_CHECK_RC(st, HAKO_SERVICE_CLIENT_API_STATE_CANCELING);
	atomic_store(&cur->sh->stage, 1); /* the server may look now */
	/* No timeout was set: without an answer to the cancel this would wait for ever. */
	HTU_CHECK_RC(client_wait(), HAKO_SERVICE_CLIENT_API_REQUEST_CANCEL_DONE);
	response(id, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_CANCELED);
	uint32_t next = send_add(6, 7, 0, 0);
	HTU_CHECK_RC(next, id + 1);
	expect_sum(next, 13);
	atomic_store(&cur->sh->stage, 2);
	return 0;
}

static void serve_late_child(void *p)
{
	(void)p;
	server_child(serve_late);
}

static void cancel_at_once_child(void *p)
{
	(void)p;
	client_child("client", 0, cancel_at_once);
}

SETUP(cancel_before_taken)
static void test_cancel_before_taken(void **state)
{
	struct fx *f = *state;
	pid_t pids[2];
	pids[0] = htu_fork(serve_late_child, NULL);
	assert_true(pids[0] > 0);
	assert_true(wait_count(&f->sh->ready, 1, pids, 1));
	pids[1] = htu_fork(cancel_at_once_child, NULL);
	assert_true(pids[1] > 0);
	run_assets(f, pids, 2);
}

/* ---- the server dies ---- */

#define LONG_TIMEOUT_MSEC 5000

/* An attached server (its death does not stop the world clock) that takes one request and
 * holds it until it is killed. */
static void dying_server_child(void *p)
{
	(void)p;
	join_attached();
	create_server();
	atomic_fetch_add(&cur->sh->ready, 1);
	HTU_CHECK_RC(server_wait(), HAKO_SERVICE_SERVER_API_REQUEST_IN);
	atomic_store(&cur->sh->stage, 1);
	htu_sleep_usec(HTU_TIMEOUT_USEC);
	_exit(1); /* the test should have killed it */
}

/* The server that replaces it: answers one request. */
static void next_server_answers_child(void *p)
{
	(void)p;
	join_attached();
	create_server();
	atomic_fetch_add(&cur->sh->ready, 1);
	HTU_CHECK_RC(server_wait(), HAKO_SERVICE_SERVER_API_REQUEST_IN);
	req_t rq = request();
	answer(&rq, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_OK,
	       rq.body.a + rq.body.b);
}

static int outlive_server(hako_asset_context_t *ctx)
{
	(void)ctx;
	struct shared *sh = cur->sh;
	hako_time_t t0 = hako_asset_simulation_time();
	uint32_t id = send_add(1, 1, 0, LONG_TIMEOUT_MSEC);
	int ev = HAKO_SERVICE_CLIENT_API_EVENT_NONE;
	for (int i = 0; ev == HAKO_SERVICE_CLIENT_API_EVENT_NONE; i++) {
		HTU_CHECK(i <= LONG_TIMEOUT_MSEC + 100);
		ev = hako_asset_service_client_poll(&g_h);
		if (ev == HAKO_SERVICE_CLIENT_API_EVENT_NONE) {
			step();
		}
	}
	HTU_CHECK_RC(ev, HAKO_SERVICE_CLIENT_API_REQUEST_TIMEOUT);
	HTU_CHECK_RC(atomic_load(&sh->killing), 1);
	/* Long before the timeout, and saying why. */
	HTU_CHECK(hako_asset_simulation_time() - t0 < LONG_TIMEOUT_MSEC * 1000LL);
	const char *msg = last_message();
	char pid[32];
	snprintf(pid, sizeof(pid), "%d", atomic_load(&sh->server_pid));
	if (strstr(msg, "died") == NULL || strstr(msg, pid) == NULL) {
		fprintf(stderr, "child %d: last error '%s' does not say server %s died\n",
		        (int)getpid(), msg, pid);
		_exit(1);
	}
	/* A cancel needs no answer from a dead server. */
	HTU_CHECK_RC(hako_asset_service_client_cancel_request(&g_h), 0);
	HTU_CHECK_RC(hako_asset_service_client_poll(&g_h),
	             HAKO_SERVICE_CLIENT_API_REQUEST_CANCEL_DONE);
	int st = -1;
	HTU_CHECK_RC(hako_asset_service_client_status(&g_h, &st), 0);
	HTU_CHECK_RC(st, HAKO_SERVICE_CLIENT_API_STATE_IDLE);
	/* A new server takes over the service; the next request is its. */
	atomic_store(&sh->stage, 2);
	step_until(&sh->ready, 3);
	uint32_t next = send_add(30, 12, 0, LONG_TIMEOUT_MSEC);
	HTU_CHECK(next != id);
	expect_sum(next, 42);
	return 0;
}

static void outlive_server_child(void *p)
{
	(void)p;
	client_child("client", 0, outlive_server);
}

/* A client whose server died hears it at once (Hakoniwa's waited for the timeout, or for
 * ever). The world runs at about the wall clock's pace here: the client looks at the server's
 * process now and then in wall time. */
SETUP(server_dies)
static void test_server_dies(void **state)
{
	struct fx *f = *state;
	atomic_store(&f->sh->pace_usec, 1000);
	pid_t pids[3];
	pids[0] = htu_fork(dying_server_child, NULL);
	assert_true(pids[0] > 0);
	atomic_store(&f->sh->server_pid, (int)pids[0]);
	assert_true(wait_count(&f->sh->ready, 1, pids, 1));
	pids[1] = htu_fork(outlive_server_child, NULL);
	assert_true(pids[1] > 0);
	assert_true(wait_count(&f->sh->ready, 2, pids, 2));
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_true(wait_count(&f->sh->stage, 1, pids, 2));
	atomic_store(&f->sh->killing, 1);
	htu_kill_child(pids[0]);
	assert_true(wait_count(&f->sh->stage, 2, &pids[1], 1));
	pids[2] = htu_fork(next_server_answers_child, NULL);
	assert_true(pids[2] > 0);
	assert_true(join_all(&pids[1], 2));
}

/* ---- a client process that restarts while its request is in progress ---- */

/* The server: takes the first client's request and holds it until that client is dead and
 * its successor has sent; then the old request is cancelled (REQUEST_CANCEL), and the
 * successor's request comes in next and is answered. */
static void restart_server_child(void *p)
{
	(void)p;
	join_attached();
	create_server();
	atomic_fetch_add(&cur->sh->ready, 1);
	HTU_CHECK_RC(server_wait(), HAKO_SERVICE_SERVER_API_REQUEST_IN);
	req_t first = request();
	HTU_CHECK_RC(first.body.a, 1);
	atomic_store(&cur->sh->stage, 1);
	HTU_CHECK_RC(server_wait(), HAKO_SERVICE_SERVER_API_REQUEST_CANCEL);
	HTU_CHECK_RC(hako_asset_service_server_is_canceled(g_sid), 1);
	answer(&first, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_CANCELED, 0);
	HTU_CHECK_RC(server_wait(), HAKO_SERVICE_SERVER_API_REQUEST_IN);
	req_t second = request();
	HTU_CHECK_RC(second.body.a, 20);
	answer(&second, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_OK,
	       second.body.a + second.body.b);
}

static void first_client_child(void *p)
{
	(void)p;
	join_attached();
	create_client(ADD, 0);
	send_add(1, 2, 0, 0);
	for (;;) { /* killed by the test once the server holds the request */
		htu_sleep_usec(1000);
	}
}

static void successor_client_child(void *p)
{
	(void)p;
	join_attached();
	create_client(ADD,
	              0); /* the same name: it gets the dead client's slot, the only one used */
	HTU_CHECK_RC(g_h.client_id, 0);
	uint32_t id = send_add(20, 22, 0, 0);
	expect_sum(id, 42);
}

/* A client process that dies with a request in progress, and comes back under the same name
 * (a restart): its old request is cancelled at the server, and the new one is served instead
 * of waiting behind it for ever. */
SETUP(client_restarts)
static void test_client_restarts(void **state)
{
	struct fx *f = *state;
	pid_t pids[3];
	pids[0] = htu_fork(restart_server_child, NULL);
	assert_true(pids[0] > 0);
	assert_true(wait_count(&f->sh->ready, 1, pids, 1));
	pids[1] = htu_fork(first_client_child, NULL);
	assert_true(pids[1] > 0);
	assert_true(wait_count(&f->sh->stage, 1, pids, 2));
	htu_kill_child(pids[1]);
	pids[2] = htu_fork(successor_client_child, NULL);
	assert_true(pids[2] > 0);
	pid_t live[2] = {pids[0], pids[2]};
	assert_true(join_all(live, 2));
}

/* ---- across a reset ---- */

static int g_run; /* runs a child's body started */

static int serve_each_run(hako_asset_context_t *ctx)
{
	(void)ctx;
	HTU_CHECK_RC(server_wait(), HAKO_SERVICE_SERVER_API_REQUEST_IN);
	req_t rq = request();
	answer(&rq, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_OK,
	       rq.body.a + rq.body.b);
	while (hako_asset_usleep(STEP_USEC) == 0) {
	}
	return 0;
}

static int request_each_run(hako_asset_context_t *ctx)
{
	(void)ctx;
	g_run++;
	uint32_t id = send_add(g_run, 100, 0, 0);
	expect_sum(id, g_run + 100);
	atomic_fetch_add(&cur->sh->done, 1);
	while (hako_asset_usleep(STEP_USEC) == 0) {
	}
	return 0;
}

static void two_runs(void)
{
	atomic_fetch_add(&cur->sh->ready, 1);
	HTU_CHECK_RC(hako_asset_start(), EINTR);
	HTU_CHECK_RC(hako_asset_start(), EINTR);
	HTU_CHECK_RC(hako_asset_unregister(), 0);
}

static void serve_each_run_child(void *p)
{
	(void)p;
	join_asset("server", serve_each_run);
	create_server();
	two_runs();
}

static void request_each_run_child(void *p)
{
	(void)p;
	join_asset("client", request_each_run);
	create_client(ADD, 0);
	two_runs();
}

/* A reset zeroes the channels (the table of clients too, and the write numbers): the
 * service works again in the next run. */
SETUP(reset)
static void test_reset(void **state)
{
	struct fx *f = *state;
	pid_t pids[2];
	pids[0] = htu_fork(serve_each_run_child, NULL);
	assert_true(pids[0] > 0);
	pids[1] = htu_fork(request_each_run_child, NULL);
	assert_true(pids[1] > 0);
	assert_true(wait_count(&f->sh->ready, 2, pids, 2));
	for (int run = 1; run <= 2; run++) {
		assert_int_equal(hako_domain_start(f->dom), 0);
		if (!wait_count(&f->sh->done, run, pids, 2)) {
			break; /* a child failed its check: its exit status says where */
		}
		assert_int_equal(hako_domain_stop(f->dom), 0);
		assert_int_equal(
		    hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
		assert_int_equal(hako_domain_reset(f->dom), 0);
		assert_int_equal(
		    hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	}
	assert_true(join_all(pids, 2));
	assert_int_equal(atomic_load(&f->sh->done), 2);
}

/* ---- bad input ---- */

/* Write a request by hand to the request channel; the server must refuse it. */
static void bad_request(int req_ch, int res_ch, const char *service, const char *client,
                        uint32_t id)
{
	char buf[REQ_SIZE];
	memset(buf, 0, sizeof(buf));
	HTU_CHECK_RC(hako_pdu_hako_srv_msgs_AddTwoIntsRequestPacket_init(buf, sizeof(buf)), 0);
	req_t *rq = hako_pdu_hako_srv_msgs_AddTwoIntsRequestPacket_base(buf);
	rq->header.request_id = id;
	snprintf(rq->header.service_name, sizeof(rq->header.service_name), "%s", service);
	snprintf(rq->header.client_name, sizeof(rq->header.client_name), "%s", client);
	rq->header.opcode = HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST;
	rq->body.a = 1;
	rq->body.b = 2;
	HTU_CHECK_RC(hako_asset_pdu_write(ADD, req_ch, buf, sizeof(buf)), 0);
	for (int i = 0; i < 3; i++) {
		HTU_CHECK_RC(hako_asset_service_server_poll(g_sid),
		             HAKO_SERVICE_SERVER_API_EVENT_NONE);
	}
	HTU_CHECK_RC(server_status(), HAKO_SERVICE_SERVER_API_STATUS_IDLE);
	char out[RES_SIZE];
	HTU_CHECK_RC(hako_asset_pdu_read(ADD, res_ch, out, sizeof(out)), 0);
	const res_t *r = hako_pdu_hako_srv_msgs_AddTwoIntsResponsePacket_base(out);
	HTU_CHECK_RC(r->header.request_id, id);
	HTU_CHECK_RC(r->header.status, HAKO_SERVICE_API_STATUS_ERROR);
	HTU_CHECK_RC(r->header.result_code, HAKO_SERVICE_API_RESULT_CODE_INVALID);
}

static void bad_input_child(void *p)
{
	(void)p;
	join_attached();
	create_server();
	create_client(ADD, 0);
	HTU_CHECK_RC(g_h.service_id, g_sid);
	int req_ch = -1, res_ch = -1, req2 = -1, res2 = -1;
	HTU_CHECK_RC(hako_asset_service_client_get_channel_id_by_handle(&g_h, &req_ch, &res_ch), 0);
	HTU_CHECK(req_ch == 2 * g_h.client_id && res_ch == req_ch + 1);
	HTU_CHECK_RC(hako_asset_service_client_get_channel_id(g_sid, &req2, &res2), 0);
	HTU_CHECK(req2 == req_ch && res2 == res_ch);

	bad_request(req_ch, res_ch, "Service/Wrong", g_name, 7);
	bad_request(req_ch, res_ch, ADD, "Intruder", 8);

	/* Bad ids and handles. */
	HakoServiceHandleType bad = {g_sid, 99};
	HTU_CHECK_RC(hako_asset_service_server_poll(-1), -1);
	HTU_CHECK_RC(hako_asset_service_server_poll(g_sid + 100), -1);
	HTU_CHECK_RC(hako_asset_service_client_poll(NULL), -1);
	HTU_CHECK_RC(hako_asset_service_client_poll(&bad), -1);
	bad.service_id = g_sid + 100;
	bad.client_id = g_h.client_id;
	HTU_CHECK_RC(hako_asset_service_client_poll(&bad), -1);
	bad.service_id = -1;
	HTU_CHECK_RC(hako_asset_service_client_poll(&bad), -1);
	HTU_CHECK(last_message()[0] != '\0');

	/* Client names: 1..64 bytes. */
	char name[HAKO_SERVICE_CLIENT_NAME_MAX + 2];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	HakoServiceHandleType h = {-1, -1};
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, ADD, name, &h), -1);
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, ADD, "", &h), -1);
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, ADD, NULL, &h), -1);
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, ADD, "ok", NULL), -1);
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, "Service/None", "ok", &h), -1);
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, NULL, "ok", &h), -1);
	name[HAKO_SERVICE_CLIENT_NAME_MAX] = '\0';
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, ADD, name, &h), 0);
	HTU_CHECK(h.client_id != g_h.client_id);

	/* Nothing in progress to answer. */
	char stray[RES_SIZE];
	memset(stray, 0, sizeof(stray));
	HTU_CHECK_RC(hako_asset_service_server_put_response(g_sid, stray, sizeof(stray)), -1);

	/* One request at a time per client; the server still serves after the bad packets. */
	char *pkt = NULL;
	size_t len = 0;
	HTU_CHECK_RC(hako_asset_service_client_get_request_buffer(
	                 &g_h, &pkt, &len, HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST, 0),
	             0);
	req_t *rq = hako_pdu_hako_srv_msgs_AddTwoIntsRequestPacket_base(pkt);
	rq->body.a = 40;
	rq->body.b = 2;
	uint32_t id = rq->header.request_id;
	HTU_CHECK_RC(hako_asset_service_client_call_request(&g_h, pkt, len, 0), 0);
	HTU_CHECK_RC(hako_asset_service_client_call_request(&g_h, pkt, len, 0), -1);
	HTU_CHECK_RC(server_wait(), HAKO_SERVICE_SERVER_API_REQUEST_IN);
	req_t got = request();
	HTU_CHECK_RC(got.header.request_id, id);
	HTU_CHECK(strcmp(got.header.client_name, g_name) == 0);
	answer(&got, HAKO_SERVICE_API_STATUS_DONE, HAKO_SERVICE_API_RESULT_CODE_OK,
	       got.body.a + got.body.b);
	expect_sum(id, 42);
}

SETUP(bad_input)
static void test_bad_input(void **state)
{
	(void)state;
	assert_true(htu_join_child(htu_fork(bad_input_child, NULL), HTU_TIMEOUT_USEC));
}

/* ---- service file errors ---- */

/* text with the first `from` replaced by `to` (free it). */
static char *replaced(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	HTU_CHECK(at != NULL);
	size_t len = strlen(text) - strlen(from) + strlen(to) + 1;
	char *out = malloc(len);
	HTU_CHECK(out != NULL);
	snprintf(out, len, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	return out;
}

/* The service file with the first `from` replaced by `to`, written to path. */
static void write_variant(const char *path, const char *from, const char *to)
{
	char *text = replaced(SERVICE_JSON, from, to);
	HTU_CHECK_RC(htu_write_file(path, text), 0);
	free(text);
}

/* initialize fails, and its message holds every one of the words. */
static void expect_init_error(const char *path, const char *w1, const char *w2)
{
	HTU_CHECK_RC(hako_asset_service_initialize(path), -1);
	const char *msg = last_message();
	if ((w1 != NULL && strstr(msg, w1) == NULL) || (w2 != NULL && strstr(msg, w2) == NULL)) {
		fprintf(stderr, "child %d: '%s': expected '%s' and '%s' in it\n", (int)getpid(),
		        msg, w1 != NULL ? w1 : "", w2 != NULL ? w2 : "");
		_exit(1);
	}
}

static void config_errors_child(void *p)
{
	(void)p;
	const char *dir = cur->dir;
	char path[600], name[200];
	/* Register or attach first. */
	HTU_CHECK_RC(hako_asset_service_initialize(cur->service), -1);
	HTU_CHECK_RC(hako_asset_attach_core(), 0);
	HTU_CHECK_RC(hako_asset_service_initialize(NULL), -1);

	snprintf(path, sizeof(path), "%s/missing.json", dir);
	expect_init_error(path, path, NULL);

	snprintf(path, sizeof(path), "%s/syntax.json", dir);
	HTU_CHECK_RC(
	    htu_write_file(path, "{\n  \"pduMetaDataSize\": 24,\n  \"services\": [,]\n}\n"), 0);
	expect_init_error(path, "syntax.json:3:16: ", NULL);

	snprintf(path, sizeof(path), "%s/no_services.json", dir);
	HTU_CHECK_RC(htu_write_file(path, "{\"pduMetaDataSize\": 24}\n"), 0);
	expect_init_error(path, "no_services.json:1:1: ", "services");

	snprintf(path, sizeof(path), "%s/max_clients.json", dir);
	write_variant(path, "\"maxClients\": 3", "\"maxClients\": 0");
	expect_init_error(path, "max_clients.json:5:", "services[0].maxClients");

	snprintf(path, sizeof(path), "%s/long_name.json", dir);
	memset(name, 'S', 150);
	name[150] = '\0';
	write_variant(path, ADD, name);
	expect_init_error(path, "long_name.json:4:", "services[0].name");

	snprintf(path, sizeof(path), "%s/small.json", dir);
	write_variant(path, "\"baseSize\": 296", "\"baseSize\": 100");
	expect_init_error(path, "small.json:6:", "services[0].pduSize.server");

	/* A name given twice. */
	snprintf(path, sizeof(path), "%s/twice.json", dir);
	write_variant(path, OTHER, ADD);
	expect_init_error(path, "twice.json:", "services[1].name");

	/* The good file still loads, again and again. */
	HTU_CHECK_RC(hako_asset_service_initialize(cur->service), 0);
	HTU_CHECK_RC(hako_asset_service_initialize(cur->service), 0);
	/* A file that disagrees with the channels the good one created. */
	snprintf(path, sizeof(path), "%s/bigger.json", dir);
	write_variant(path, "\"baseSize\": 296", "\"baseSize\": 400");
	expect_init_error(path, "bigger.json", ADD);

	/* More channels than the domain has: refused, and the service cannot be used. */
	snprintf(path, sizeof(path), "%s/big.json", dir);
	char *many = replaced(SERVICE_JSON, "\"maxClients\": 3", "\"maxClients\": 40");
	char *big = replaced(many, ADD, "Service/Big");
	HTU_CHECK_RC(htu_write_file(path, big), 0);
	free(big);
	free(many);
	expect_init_error(path, "Service/Big", "max_channels");
	HakoServiceHandleType h = {-1, -1};
	HTU_CHECK_RC(hako_asset_service_server_create(NULL, "Service/Big"), -1);
	HTU_CHECK_RC(hako_asset_service_client_create(NULL, "Service/Big", "c", &h), -1);
}

SETUP(config_errors)
static void test_config_errors(void **state)
{
	(void)state;
	assert_true(htu_join_child(htu_fork(config_errors_child, NULL), HTU_TIMEOUT_USEC));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup_##name, teardown)

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    T(many_clients), T(client_slots),        T(one_server),      T(timeout_cancel),
	    T(progress),     T(cancel_before_taken), T(server_dies),     T(reset),
	    T(bad_input),    T(config_errors),       T(client_restarts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
