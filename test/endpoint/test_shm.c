/* The shm comm of the endpoint (pdu-endpoint/src/comm_shm.c): two endpoints on one private
 * domain, callback and poll delivery, old content not delivered, notify_on_recv false falling
 * back to a channel read, size and name errors, latest semantics under a burst, start errors,
 * an echo between two processes, loans (zero-copy send: shm and heap), the watcher reading
 * straight into the cache under a writer that laps it, and the cache's fill writes. */
#define _GNU_SOURCE

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/endpoint.h"
#include "hako_test_util.h"

#define POS_SIZE    64
#define MOTOR_SIZE  112
#define STATUS_SIZE 32
#define ECHO_SIZE   64
#define IMAGE_SIZE  (256 * 1024)

static const char PDUDEF[] =
    "{\"robots\": [{\"name\": \"Drone\",\n"
    " \"shm_pdu_readers\": [\n"
    "  {\"type\": \"t/Motor\", \"org_name\": \"motor\", \"channel_id\": 0, \"pdu_size\": 112},\n"
    "  {\"type\": \"t/Echo\", \"org_name\": \"echo\", \"channel_id\": 3, \"pdu_size\": 64}],\n"
    " \"shm_pdu_writers\": [\n"
    "  {\"type\": \"t/Pos\", \"org_name\": \"pos\", \"channel_id\": 1, \"pdu_size\": 64},\n"
    "  {\"type\": \"t/Status\", \"org_name\": \"status\", \"channel_id\": 2, \"pdu_size\": 32},\n"
    "  {\"type\": \"t/Image\", \"org_name\": \"image\", \"channel_id\": 4, \"pdu_size\": 262144}]\n"
    "}]}\n";

static const char CACHE[] = "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n";

struct fx {
	char domain[HAKO_NAME_MAX];
	char dir[256];
	hako_domain_t *dom;
	hako_endpoint_t *a;
	hako_endpoint_t *b;
};

/* Write <dir>/<name>.json (endpoint) and <dir>/<name>_comm.json. pdus: the "pdu" array of the
 * robot Drone, e.g. "{\"name\": \"pos\", \"notify_on_recv\": true}". */
static void write_endpoint(const char *dir, const char *name, const char *impl, const char *pdus,
                           char *path, size_t cap)
{
	char file[512], text[2048];
	snprintf(file, sizeof(file), "%s/%s_comm.json", dir, name);
	snprintf(text, sizeof(text),
	         "{\"protocol\": \"shm\", \"impl_type\": \"%s\", \"asset_name\": \"%s\",\n"
	         " \"io\": {\"robots\": [{\"name\": \"Drone\", \"pdu\": [%s]}]}}\n",
	         impl, name, pdus);
	assert_int_equal(htu_write_file(file, text), 0);
	snprintf(path, cap, "%s/%s.json", dir, name);
	snprintf(text, sizeof(text),
	         "{\"name\": \"%s\", \"cache\": \"cache.json\", \"comm\": \"%s_comm.json\",\n"
	         " \"pdu_def_path\": \"pdudef.json\"}\n",
	         name, name);
	assert_int_equal(htu_write_file(path, text), 0);
}

static hako_endpoint_t *open_endpoint(struct fx *f, const char *name, const char *impl,
                                      const char *pdus)
{
	char path[512];
	write_endpoint(f->dir, name, impl, pdus, path, sizeof(path));
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	char msg[1200];
	int r = hako_endpoint_open(path, &ep, &err);
	if (r != 0) {
		fail_msg("open %s: %s", path, hako_error_format(&err, msg, sizeof(msg)));
	}
	assert_int_equal(hako_endpoint_set_domain(ep, f->dom), 0);
	return ep;
}

static void start(hako_endpoint_t *ep)
{
	hako_error_t err;
	char msg[1200];
	int r = hako_endpoint_start(ep, &err);
	if (r != 0) {
		fail_msg("start: %s", hako_error_format(&err, msg, sizeof(msg)));
	}
}

static int setup_with(void **state, const char *test)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	*state = f;
	htu_domain_name(test, f->domain, sizeof(f->domain));
	assert_non_null(htu_tmpdir(f->dir, sizeof(f->dir)));
	char file[512];
	snprintf(file, sizeof(file), "%s/pdudef.json", f->dir);
	assert_int_equal(htu_write_file(file, PDUDEF), 0);
	snprintf(file, sizeof(file), "%s/cache.json", f->dir);
	assert_int_equal(htu_write_file(file, CACHE), 0);
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 32;
	cfg.arena_bytes = 2 << 20;
	assert_int_equal(hako_domain_create(f->domain, &cfg, &f->dom), 0);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	hako_endpoint_close(f->a);
	hako_endpoint_close(f->b);
	hako_domain_close(f->dom);
	htu_remove_domain(f->domain);
	htu_remove_tmpdirs();
	free(f);
	return 0;
}

#define SETUP(test)                                                                                \
	static int setup_##test(void **state)                                                      \
	{                                                                                          \
		return setup_with(state, "epshm-" #test);                                          \
	}

static hako_pdu_key_t key(int32_t ch)
{
	hako_pdu_key_t k;
	memset(&k, 0, sizeof(k));
	snprintf(k.robot, sizeof(k.robot), "Drone");
	k.channel_id = ch;
	return k;
}

/* A PDU whose bytes all derive from v. */
static void fill(uint8_t *buf, size_t len, uint32_t v)
{
	memcpy(buf, &v, sizeof(v));
	for (size_t i = sizeof(v); i < len; i++) {
		buf[i] = (uint8_t)(v * 31u + i);
	}
}

static uint32_t value_of(const uint8_t *buf)
{
	uint32_t v;
	memcpy(&v, buf, sizeof(v));
	return v;
}

/* A subscriber that records what it got. */
struct rec {
	pthread_mutex_t lock;
	atomic_int calls;
	int out_of_order;
	uint32_t last;
	size_t len;
	uint8_t data[256];
};

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
}

static void rec_cb(void *user, const hako_pdu_key_t *k, const void *data, size_t len)
{
	struct rec *r = user;
	(void)k;
	pthread_mutex_lock(&r->lock);
	uint32_t v = len >= 4 ? value_of(data) : 0;
	if (atomic_load(&r->calls) > 0 && v <= r->last) {
		r->out_of_order++;
	}
	r->last = v;
	r->len = len < sizeof(r->data) ? len : sizeof(r->data);
	memcpy(r->data, data, r->len);
	pthread_mutex_unlock(&r->lock);
	atomic_fetch_add(&r->calls, 1);
}

static uint32_t rec_last(struct rec *r)
{
	pthread_mutex_lock(&r->lock);
	uint32_t v = r->last;
	pthread_mutex_unlock(&r->lock);
	return v;
}

/* A sends pos, B's watcher thread delivers it to the subscriber and the cache; content written
 * before B started is not delivered. */
SETUP(callback)
static void test_callback(void **state)
{
	struct fx *f = *state;
	f->a = open_endpoint(f, "a", "callback", "{\"name\": \"pos\", \"notify_on_recv\": false}");
	f->b = open_endpoint(f, "b", "callback", "{\"name\": \"pos\", \"notify_on_recv\": true}");
	start(f->a);
	hako_pdu_key_t pos = key(1);
	uint8_t out[POS_SIZE], in[POS_SIZE];
	fill(out, sizeof(out), 1);
	assert_int_equal(hako_endpoint_send(f->a, &pos, out, sizeof(out)), 0); /* old */

	struct rec r;
	rec_init(&r);
	assert_int_equal(hako_endpoint_subscribe(f->b, &pos, rec_cb, &r, NULL), 0);
	start(f->b);
	htu_sleep_usec(20000); /* a watcher that took the old PDU for new would deliver it now */
	fill(out, sizeof(out), 2);
	assert_int_equal(hako_endpoint_send(f->a, &pos, out, sizeof(out)), 0);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&r.calls) >= 1, HTU_TIMEOUT_USEC);
	assert_true(ok);
	htu_sleep_usec(20000); /* a wrongly delivered old PDU would show up meanwhile */
	assert_int_equal(atomic_load(&r.calls), 1);
	assert_int_equal(r.len, POS_SIZE);
	assert_memory_equal(r.data, out, POS_SIZE);

	size_t len = 0;
	assert_int_equal(hako_endpoint_recv(f->b, &pos, in, sizeof(in), &len), 0);
	assert_int_equal(len, POS_SIZE);
	assert_memory_equal(in, out, POS_SIZE);

	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(f->a, &st);
	assert_int_equal(st.frames_out, 2);
	assert_int_equal(st.bytes_out, 2 * POS_SIZE);
	assert_int_equal(st.frames_in, 0);
	hako_endpoint_get_stats(f->b, &st);
	assert_int_equal(st.frames_in, 1);
	assert_int_equal(st.bytes_in, POS_SIZE);
	assert_int_equal(st.frames_out, 0);

	/* Both directions: B answers on motor, A reads it straight from the channel. */
	uint8_t motor[MOTOR_SIZE], got[MOTOR_SIZE];
	hako_pdu_key_t mk = key(0);
	fill(motor, sizeof(motor), 77);
	assert_int_equal(hako_endpoint_send(f->b, &mk, motor, sizeof(motor)), 0);
	assert_int_equal(hako_endpoint_recv(f->a, &mk, got, sizeof(got), &len), 0);
	assert_int_equal(len, MOTOR_SIZE);
	assert_memory_equal(got, motor, MOTOR_SIZE);

	/* Stop joins the watcher promptly; nothing is delivered while stopped. */
	hako_time_t t0 = hako_now_usec();
	assert_int_equal(hako_endpoint_stop(f->b), 0);
	assert_true(hako_now_usec() - t0 < 2000000);
	assert_int_equal(hako_endpoint_send(f->a, &pos, out, sizeof(out)), 0);
	htu_sleep_usec(20000);
	assert_int_equal(atomic_load(&r.calls), 1);
}

/* poll: process_recv_events delivers what changed and counts it; latest semantics; restart. */
SETUP(poll)
static void test_poll(void **state)
{
	struct fx *f = *state;
	f->a = open_endpoint(f, "a", "poll", "{\"name\": \"pos\", \"notify_on_recv\": false}");
	f->b = open_endpoint(f, "b", "poll",
	                     "{\"name\": \"pos\", \"notify_on_recv\": true},"
	                     "{\"name\": \"motor\", \"notify_on_recv\": true}");
	start(f->a);
	hako_pdu_key_t pos = key(1), mk = key(0);
	uint8_t p[POS_SIZE], m[MOTOR_SIZE], in[MOTOR_SIZE];
	fill(p, sizeof(p), 10);
	assert_int_equal(hako_endpoint_send(f->a, &pos, p, sizeof(p)), 0); /* before B: old */

	struct rec r;
	rec_init(&r);
	assert_int_equal(hako_endpoint_subscribe(f->b, &pos, rec_cb, &r, NULL), 0);
	assert_int_equal(hako_endpoint_process_recv_events(f->b), 0); /* not started */
	start(f->b);
	assert_int_equal(hako_endpoint_process_recv_events(f->b), 0);
	assert_int_equal(atomic_load(&r.calls), 0);

	fill(p, sizeof(p), 11);
	fill(m, sizeof(m), 12);
	assert_int_equal(hako_endpoint_send(f->a, &pos, p, sizeof(p)), 0);
	assert_int_equal(hako_endpoint_send(f->a, &mk, m, sizeof(m)), 0);
	assert_int_equal(hako_endpoint_process_recv_events(f->b), 2);
	assert_int_equal(hako_endpoint_process_recv_events(f->b), 0);
	assert_int_equal(atomic_load(&r.calls), 1);
	assert_memory_equal(r.data, p, POS_SIZE);
	size_t len = 0;
	assert_int_equal(hako_endpoint_recv(f->b, &mk, in, sizeof(in), &len), 0);
	assert_int_equal(len, MOTOR_SIZE);
	assert_memory_equal(in, m, MOTOR_SIZE);

	/* Three writes between two looks: one delivery, of the last. */
	for (uint32_t v = 20; v < 23; v++) {
		fill(p, sizeof(p), v);
		assert_int_equal(hako_endpoint_send(f->a, &pos, p, sizeof(p)), 0);
	}
	assert_int_equal(hako_endpoint_process_recv_events(f->b), 1);
	assert_int_equal(atomic_load(&r.calls), 2);
	assert_int_equal(rec_last(&r), 22);
	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(f->b, &st);
	assert_int_equal(st.frames_in, 3);
	assert_int_equal(st.bytes_in, 2 * POS_SIZE + MOTOR_SIZE);

	/* Stop and start again: what was written while stopped is old at the new start. */
	assert_int_equal(hako_endpoint_stop(f->b), 0);
	fill(p, sizeof(p), 30);
	assert_int_equal(hako_endpoint_send(f->a, &pos, p, sizeof(p)), 0);
	start(f->b);
	assert_int_equal(hako_endpoint_process_recv_events(f->b), 0);
	fill(p, sizeof(p), 31);
	assert_int_equal(hako_endpoint_send(f->a, &pos, p, sizeof(p)), 0);
	assert_int_equal(hako_endpoint_process_recv_events(f->b), 1);
	assert_int_equal(rec_last(&r), 31);

	/* A callback-mode endpoint has nothing to process. */
	assert_int_equal(hako_endpoint_process_recv_events(f->a), 0);
}

/* notify_on_recv false: never delivered, but recv reads the channel when the cache is empty. */
SETUP(no_notify)
static void test_no_notify(void **state)
{
	struct fx *f = *state;
	f->a = open_endpoint(f, "a", "callback", "{\"name\": \"pos\", \"notify_on_recv\": false}");
	f->b = open_endpoint(f, "b", "callback",
	                     "{\"name\": \"motor\", \"notify_on_recv\": false},"
	                     "{\"name\": \"pos\", \"notify_on_recv\": true}");
	start(f->a);
	start(f->b);
	hako_pdu_key_t pos = key(1), mk = key(0);
	uint8_t m[MOTOR_SIZE], p[POS_SIZE], in[MOTOR_SIZE];
	size_t len = 99;

	/* Never written: nothing in the cache nor in the channel. */
	assert_int_equal(hako_endpoint_recv(f->b, &mk, in, sizeof(in), &len), HAKO_EAGAIN);
	assert_int_equal(len, 0);
	/* A PDU of the pdudef whose channel nobody created yet. */
	assert_int_equal(hako_endpoint_recv_by_name(f->b, "Drone", "echo", in, sizeof(in), &len),
	                 HAKO_EAGAIN);

	struct rec rm, rp;
	rec_init(&rm);
	rec_init(&rp);
	assert_int_equal(hako_endpoint_subscribe(f->b, &mk, rec_cb, &rm, NULL), 0);
	assert_int_equal(hako_endpoint_subscribe(f->b, &pos, rec_cb, &rp, NULL), 0);
	fill(m, sizeof(m), 5);
	fill(p, sizeof(p), 6);
	assert_int_equal(hako_endpoint_send(f->a, &mk, m, sizeof(m)), 0);
	assert_int_equal(hako_endpoint_send(f->a, &pos, p, sizeof(p)), 0);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&rp.calls) >= 1, HTU_TIMEOUT_USEC);
	assert_true(ok);
	assert_int_equal(atomic_load(&rm.calls), 0);

	assert_int_equal(hako_endpoint_recv(f->b, &mk, in, sizeof(in), &len), 0);
	assert_int_equal(len, MOTOR_SIZE);
	assert_memory_equal(in, m, MOTOR_SIZE);
	/* Too small a buffer: ETOOBIG with the size. */
	assert_int_equal(hako_endpoint_recv(f->b, &mk, in, 8, &len), HAKO_ETOOBIG);
	assert_int_equal(len, MOTOR_SIZE);

	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(f->b, &st);
	assert_int_equal(st.frames_in, 1); /* pos only: a fallback read is not an arrival */

	/* recv_next sees only what was delivered. */
	hako_pdu_key_t k;
	assert_int_equal(hako_endpoint_recv_next(f->b, &k, in, sizeof(in), &len), 0);
	assert_int_equal(k.channel_id, 1);
	assert_int_equal(hako_endpoint_recv_next(f->b, &k, in, sizeof(in), &len), HAKO_EAGAIN);
}

/* Send errors; any PDU of the pdudef can be sent, listed or not; send by name. */
SETUP(send)
static void test_send(void **state)
{
	struct fx *f = *state;
	f->a = open_endpoint(f, "a", "callback", "{\"name\": \"pos\", \"notify_on_recv\": false}");
	f->b = open_endpoint(f, "b", "poll", "{\"name\": \"pos\", \"notify_on_recv\": true}");
	hako_pdu_key_t pos = key(1), unknown = key(99);
	uint8_t big[POS_SIZE + 1], in[POS_SIZE];
	fill(big, sizeof(big), 1);
	assert_int_equal(hako_endpoint_send(f->a, &pos, big, POS_SIZE), HAKO_ESTATE);
	start(f->a);
	start(f->b);

	assert_int_equal(hako_endpoint_send(f->a, &pos, big, sizeof(big)), HAKO_ETOOBIG);
	assert_int_equal(hako_endpoint_send(f->a, &unknown, big, 4), HAKO_ENOENT);
	assert_int_equal(hako_endpoint_send_by_name(f->a, "Drone", "nope", big, 4), HAKO_ENOENT);
	assert_int_equal(hako_endpoint_send_by_name(f->a, "Tank", "pos", big, 4), HAKO_ENOENT);
	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(f->a, &st);
	assert_int_equal(st.frames_out, 0);
	assert_int_equal(hako_endpoint_process_recv_events(f->b), 0);

	/* By name. */
	uint8_t p[POS_SIZE];
	fill(p, sizeof(p), 42);
	assert_int_equal(hako_endpoint_send_by_name(f->a, "Drone", "pos", p, sizeof(p)), 0);
	assert_int_equal(hako_endpoint_process_recv_events(f->b), 1);
	size_t len = 0;
	assert_int_equal(hako_endpoint_recv_by_name(f->b, "Drone", "pos", in, sizeof(in), &len), 0);
	assert_int_equal(len, POS_SIZE);
	assert_memory_equal(in, p, POS_SIZE);

	/* A shorter PDU is fine and keeps its length. */
	assert_int_equal(hako_endpoint_send(f->a, &pos, p, 10), 0);
	assert_int_equal(hako_endpoint_process_recv_events(f->b), 1);
	assert_int_equal(hako_endpoint_recv(f->b, &pos, in, sizeof(in), &len), 0);
	assert_int_equal(len, 10);

	/* status is in the pdudef but listed by neither comm: created on first send. */
	hako_channel_t *ch = NULL;
	assert_int_equal(hako_channel_lookup(f->dom, "Drone", 2, &ch), HAKO_ENOENT);
	uint8_t s[STATUS_SIZE];
	fill(s, sizeof(s), 7);
	assert_int_equal(hako_endpoint_send_by_name(f->a, "Drone", "status", s, sizeof(s)), 0);
	assert_int_equal(hako_channel_lookup(f->dom, "Drone", 2, &ch), 0);
	assert_int_equal(hako_channel_size(ch), STATUS_SIZE);
	assert_int_equal(hako_endpoint_recv_by_name(f->b, "Drone", "status", in, sizeof(in), &len),
	                 0);
	assert_int_equal(len, STATUS_SIZE);
	assert_memory_equal(in, s, STATUS_SIZE);
	assert_int_equal(hako_endpoint_send_by_name(f->a, "Drone", "status", big, STATUS_SIZE + 1),
	                 HAKO_ETOOBIG);

	hako_endpoint_get_stats(f->a, &st);
	assert_int_equal(st.frames_out, 3);
	assert_int_equal(st.bytes_out, POS_SIZE + 10 + STATUS_SIZE);
}

/* A burst of writes: B sees an increasing subsequence ending with the last value. */
SETUP(latest)
static void test_latest(void **state)
{
	struct fx *f = *state;
	f->a = open_endpoint(f, "a", "callback", "{\"name\": \"pos\", \"notify_on_recv\": false}");
	f->b = open_endpoint(f, "b", "callback", "{\"name\": \"pos\", \"notify_on_recv\": true}");
	hako_pdu_key_t pos = key(1);
	struct rec r;
	rec_init(&r);
	assert_int_equal(hako_endpoint_subscribe(f->b, &pos, rec_cb, &r, NULL), 0);
	start(f->a);
	start(f->b);
	enum { N = 2000 };
	uint8_t p[POS_SIZE];
	for (uint32_t v = 1; v <= N; v++) {
		fill(p, sizeof(p), v);
		assert_int_equal(hako_endpoint_send(f->a, &pos, p, sizeof(p)), 0);
	}
	int ok;
	HTU_WAIT_UNTIL(ok, rec_last(&r) == N, HTU_TIMEOUT_USEC);
	assert_true(ok);
	int calls = atomic_load(&r.calls);
	assert_true(calls >= 1 && calls <= N);
	assert_int_equal(r.out_of_order, 0);
	assert_memory_equal(r.data, p, POS_SIZE); /* never torn: the whole last PDU */
	uint8_t in[POS_SIZE];
	size_t len = 0;
	assert_int_equal(hako_endpoint_recv(f->b, &pos, in, sizeof(in), &len), 0);
	assert_memory_equal(in, p, POS_SIZE);
	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(f->b, &st);
	assert_int_equal(st.frames_in, (uint64_t)calls);
}

/* A domain reset restarts sequence numbers: the zeroed content is not delivered, and as many
 * writes after it as before are still new (poll); the watcher goes on after it (callback). */
SETUP(reset)
static void test_reset(void **state)
{
	struct fx *f = *state;
	f->a = open_endpoint(f, "a", "poll", "{\"name\": \"pos\", \"notify_on_recv\": true}");
	f->b = open_endpoint(f, "b", "callback", "{\"name\": \"pos\", \"notify_on_recv\": true}");
	hako_pdu_key_t pos = key(1);
	struct rec ra, rb;
	rec_init(&ra);
	rec_init(&rb);
	assert_int_equal(hako_endpoint_subscribe(f->a, &pos, rec_cb, &ra, NULL), 0);
	assert_int_equal(hako_endpoint_subscribe(f->b, &pos, rec_cb, &rb, NULL), 0);
	start(f->a);
	start(f->b);
	uint8_t p[POS_SIZE];
	for (uint32_t v = 1; v <= 3; v++) {
		fill(p, sizeof(p), v);
		assert_int_equal(hako_endpoint_send(f->a, &pos, p, sizeof(p)), 0);
	}
	assert_int_equal(hako_endpoint_process_recv_events(f->a), 1);
	int ok;
	HTU_WAIT_UNTIL(ok, rec_last(&rb) == 3, HTU_TIMEOUT_USEC);
	assert_true(ok);
	int b_calls = atomic_load(&rb.calls);

	assert_int_equal(hako_domain_reset(f->dom), 0); /* no asset: completes at once */
	assert_int_equal(hako_domain_reset_count(f->dom), 1);
	assert_int_equal(hako_endpoint_process_recv_events(f->a), 0);
	htu_sleep_usec(20000); /* a watcher delivering the zeroed PDU would do it now */
	assert_int_equal(atomic_load(&rb.calls), b_calls);

	for (uint32_t v = 11; v <= 13; v++) { /* seq is 3 again, as before the reset */
		fill(p, sizeof(p), v);
		assert_int_equal(hako_endpoint_send(f->a, &pos, p, sizeof(p)), 0);
	}
	assert_int_equal(hako_endpoint_process_recv_events(f->a), 1);
	assert_int_equal(rec_last(&ra), 13);
	HTU_WAIT_UNTIL(ok, rec_last(&rb) == 13, HTU_TIMEOUT_USEC);
	assert_true(ok);

	/* Reset and three writes between two looks: seq is back where it was, still new. */
	assert_int_equal(hako_domain_reset(f->dom), 0);
	for (uint32_t v = 21; v <= 23; v++) {
		fill(p, sizeof(p), v);
		assert_int_equal(hako_endpoint_send(f->a, &pos, p, sizeof(p)), 0);
	}
	assert_int_equal(hako_endpoint_process_recv_events(f->a), 1);
	assert_int_equal(rec_last(&ra), 23);
	HTU_WAIT_UNTIL(ok, rec_last(&rb) == 23, HTU_TIMEOUT_USEC);
	assert_true(ok);
}

/* start errors name the domain / channel; open without a pdudef names the comm file. */
SETUP(errors)
static void test_errors(void **state)
{
	struct fx *f = *state;
	hako_error_t err;
	char msg[1200];

	/* A channel of another size already in the domain. */
	hako_channel_t *ch = NULL;
	assert_int_equal(hako_channel_create(f->dom, "Drone", 1, 8, &ch), 0);
	f->a = open_endpoint(f, "a", "callback", "{\"name\": \"pos\", \"notify_on_recv\": true}");
	assert_int_equal(hako_endpoint_start(f->a, &err), HAKO_ESIZE);
	hako_error_format(&err, msg, sizeof(msg));
	assert_non_null(strstr(msg, "a_comm.json"));
	assert_non_null(strstr(msg, "Drone/pos"));
	assert_non_null(strstr(msg, f->domain));
	assert_false(hako_endpoint_is_running(f->a));

	/* No domain given and HAKO_DOMAIN names none. */
	char missing[HAKO_NAME_MAX + 16];
	snprintf(missing, sizeof(missing), "%s-none", f->domain);
	f->b = open_endpoint(f, "b", "poll", "{\"name\": \"motor\", \"notify_on_recv\": true}");
	assert_int_equal(hako_endpoint_set_domain(f->b, NULL), 0);
	setenv("HAKO_DOMAIN", missing, 1);
	int r = hako_endpoint_start(f->b, &err);
	unsetenv("HAKO_DOMAIN");
	assert_int_equal(r, HAKO_ENOENT);
	hako_error_format(&err, msg, sizeof(msg));
	assert_non_null(strstr(msg, missing));

	/* ... and names ours: opened at start, closed at stop. */
	setenv("HAKO_DOMAIN", f->domain, 1);
	r = hako_endpoint_start(f->b, &err);
	unsetenv("HAKO_DOMAIN");
	assert_int_equal(r, 0);
	uint8_t m[MOTOR_SIZE];
	fill(m, sizeof(m), 3);
	hako_channel_t *mc = NULL;
	assert_int_equal(hako_channel_lookup(f->dom, "Drone", 0, &mc), 0);
	assert_int_equal(hako_channel_write(mc, m, sizeof(m)), 0);
	assert_int_equal(hako_endpoint_process_recv_events(f->b), 1);
	assert_int_equal(hako_endpoint_stop(f->b), 0);

	/* No pdudef (the loader refuses that already; the comm checks it again). */
	char path[512];
	write_endpoint(f->dir, "c", "poll", "{\"name\": \"pos\", \"notify_on_recv\": true}", path,
	               sizeof(path));
	hako_endpoint_config_t *cfg = NULL;
	assert_int_equal(hako_endpoint_config_load(path, &cfg, &err), 0);
	hako_pdudef_free(cfg->pdudef);
	cfg->pdudef = NULL;
	hako_endpoint_t *c = NULL;
	assert_int_equal(hako_endpoint_open_config(cfg, &c, &err), HAKO_ECONFIG);
	assert_null(c);
	hako_error_format(&err, msg, sizeof(msg));
	assert_non_null(strstr(msg, "c_comm.json"));
	assert_non_null(strstr(msg, "pdu_def_path"));
}

/* ---- two processes ---- */

struct shared {
	atomic_int ready;
	atomic_int quit;
	atomic_int echoed;
};

struct child_args {
	const char *domain;
	const char *config;
	struct shared *sh;
};

struct echo_ctx {
	hako_endpoint_t *ep;
	struct shared *sh;
};

/* pos in, echo out: every byte + 1. Runs in the watcher thread. */
static void echo_cb(void *user, const hako_pdu_key_t *k, const void *data, size_t len)
{
	struct echo_ctx *e = user;
	uint8_t out[ECHO_SIZE];
	(void)k;
	if (len > sizeof(out)) {
		len = sizeof(out);
	}
	for (size_t i = 0; i < len; i++) {
		out[i] = (uint8_t)(((const uint8_t *)data)[i] + 1);
	}
	if (hako_endpoint_send_by_name(e->ep, "Drone", "echo", out, len) == 0) {
		atomic_fetch_add(&e->sh->echoed, 1);
	}
}

static void child_main(void *arg)
{
	struct child_args *a = arg;
	hako_domain_t *dom = NULL;
	HTU_CHECK_RC(hako_domain_open(a->domain, &dom), 0);
	hako_endpoint_t *ep = NULL;
	HTU_CHECK_RC(hako_endpoint_open(a->config, &ep, NULL), 0);
	HTU_CHECK_RC(hako_endpoint_set_domain(ep, dom), 0);
	struct echo_ctx e = {ep, a->sh};
	HTU_CHECK_RC(hako_endpoint_subscribe_by_name(ep, "Drone", "pos", echo_cb, &e, NULL), 0);
	HTU_CHECK_RC(hako_endpoint_start(ep, NULL), 0);
	atomic_store(&a->sh->ready, 1);
	hako_time_t deadline = hako_now_usec() + 2 * HTU_TIMEOUT_USEC;
	while (!atomic_load(&a->sh->quit) && hako_now_usec() < deadline) {
		htu_sleep_usec(1000);
	}
	hako_endpoint_close(ep);
	hako_domain_close(dom);
	HTU_CHECK(atomic_load(&a->sh->quit));
}

SETUP(two_process)
static void test_two_process(void **state)
{
	struct fx *f = *state;
	char child_cfg[512];
	write_endpoint(f->dir, "child", "callback",
	               "{\"name\": \"pos\", \"notify_on_recv\": true},"
	               "{\"name\": \"echo\", \"notify_on_recv\": false}",
	               child_cfg, sizeof(child_cfg));
	f->a = open_endpoint(f, "a", "callback",
	                     "{\"name\": \"pos\", \"notify_on_recv\": false},"
	                     "{\"name\": \"echo\", \"notify_on_recv\": true}");
	struct shared *sh = htu_shared_alloc(sizeof(*sh));
	assert_non_null(sh);
	struct child_args args = {f->domain, child_cfg, sh};
	pid_t pid = htu_fork(child_main, &args); /* before any endpoint thread of ours runs */
	assert_true(pid > 0);

	hako_pdu_key_t echo = key(3);
	struct rec r;
	rec_init(&r);
	assert_int_equal(hako_endpoint_subscribe(f->a, &echo, rec_cb, &r, NULL), 0);
	start(f->a);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&sh->ready) || htu_child_exited(pid), HTU_TIMEOUT_USEC);
	assert_true(ok && atomic_load(&sh->ready));

	uint8_t p[POS_SIZE], want[POS_SIZE];
	for (uint32_t v = 1; v <= 20; v++) {
		fill(p, sizeof(p), v);
		for (size_t i = 0; i < sizeof(p); i++) {
			want[i] = (uint8_t)(p[i] + 1);
		}
		assert_int_equal(hako_endpoint_send_by_name(f->a, "Drone", "pos", p, sizeof(p)), 0);
		/* One at a time: the next is sent once its echo came back. */
		HTU_WAIT_UNTIL(ok, atomic_load(&r.calls) >= (int)v, HTU_TIMEOUT_USEC);
		assert_true(ok);
		uint8_t got[ECHO_SIZE];
		pthread_mutex_lock(&r.lock);
		size_t len = r.len;
		memcpy(got, r.data, sizeof(got));
		pthread_mutex_unlock(&r.lock);
		assert_int_equal(len, ECHO_SIZE);
		assert_memory_equal(got, want, ECHO_SIZE);
	}
	/* The child counts after its send returned, maybe after our watcher saw the echo. */
	HTU_WAIT_UNTIL(ok, atomic_load(&sh->echoed) == 20, HTU_TIMEOUT_USEC);
	assert_int_equal(atomic_load(&sh->echoed), 20);
	atomic_store(&sh->quit, 1);
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
	htu_shared_free(sh, sizeof(*sh));
}

/* Loans of the shm comm: the PDU is produced in the channel's buffer; cancel sends nothing;
 * misuse is refused; stop cancels a forgotten loan. */
SETUP(loan)
static void test_loan(void **state)
{
	struct fx *f = *state;
	f->a = open_endpoint(f, "a", "callback", "{\"name\": \"pos\", \"notify_on_recv\": false}");
	f->b = open_endpoint(f, "b", "callback", "{\"name\": \"pos\", \"notify_on_recv\": true}");
	hako_pdu_key_t pos = key(1), unknown = key(99);
	void *buf = NULL;
	assert_int_equal(hako_endpoint_loan(f->a, &pos, POS_SIZE, &buf), HAKO_ESTATE);
	assert_null(buf);
	struct rec r;
	rec_init(&r);
	assert_int_equal(hako_endpoint_subscribe(f->b, &pos, rec_cb, &r, NULL), 0);
	start(f->a);
	start(f->b);
	assert_int_equal(hako_endpoint_loan(f->a, &pos, POS_SIZE, NULL), HAKO_EINVAL);
	assert_int_equal(hako_endpoint_loan(f->a, &unknown, 4, &buf), HAKO_ENOENT);
	assert_int_equal(hako_endpoint_loan(f->a, &pos, POS_SIZE + 1, &buf), HAKO_ETOOBIG);
	assert_int_equal(hako_endpoint_commit(f->a, &pos, POS_SIZE), HAKO_ESTATE);
	assert_int_equal(hako_endpoint_cancel(f->a, &pos), HAKO_ESTATE);

	uint8_t p[POS_SIZE], in[POS_SIZE];
	fill(p, sizeof(p), 5);
	assert_int_equal(hako_endpoint_loan(f->a, &pos, POS_SIZE, &buf), 0);
	assert_non_null(buf);
	void *again = NULL;
	assert_int_equal(hako_endpoint_loan(f->a, &pos, POS_SIZE, &again), HAKO_EBUSY);
	memcpy(buf, p, sizeof(p));
	assert_int_equal(hako_endpoint_commit(f->a, &pos, POS_SIZE + 1), HAKO_ETOOBIG);
	assert_int_equal(hako_endpoint_commit(f->a, &pos, POS_SIZE), 0);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&r.calls) == 1, HTU_TIMEOUT_USEC);
	assert_true(ok);
	assert_memory_equal(r.data, p, POS_SIZE);
	size_t len = 0;
	assert_int_equal(hako_endpoint_recv(f->b, &pos, in, sizeof(in), &len), 0);
	assert_int_equal(len, POS_SIZE);
	assert_memory_equal(in, p, POS_SIZE);

	/* Cancelled: nothing delivered, the channel still holds PDU 5. */
	assert_int_equal(hako_endpoint_loan(f->a, &pos, POS_SIZE, &buf), 0);
	memset(buf, 0xff, POS_SIZE);
	assert_int_equal(hako_endpoint_cancel(f->a, &pos), 0);
	htu_sleep_usec(20000);
	assert_int_equal(atomic_load(&r.calls), 1);
	hako_channel_t *ch = NULL;
	assert_int_equal(hako_channel_lookup(f->dom, "Drone", 1, &ch), 0);
	assert_int_equal(hako_channel_read(ch, in, sizeof(in), &len, NULL), 0);
	assert_memory_equal(in, p, POS_SIZE);

	/* A shorter PDU; then plain sends still work after loans. */
	assert_int_equal(hako_endpoint_loan(f->a, &pos, 10, &buf), 0);
	fill(p, sizeof(p), 6);
	memcpy(buf, p, 10);
	assert_int_equal(hako_endpoint_commit(f->a, &pos, 10), 0);
	HTU_WAIT_UNTIL(ok, rec_last(&r) == 6, HTU_TIMEOUT_USEC);
	assert_true(ok);
	assert_int_equal(r.len, 10);
	fill(p, sizeof(p), 7);
	assert_int_equal(hako_endpoint_send(f->a, &pos, p, sizeof(p)), 0);
	HTU_WAIT_UNTIL(ok, rec_last(&r) == 7, HTU_TIMEOUT_USEC);
	assert_true(ok);
	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(f->a, &st);
	assert_int_equal(st.frames_out, 3);
	assert_int_equal(st.bytes_out, POS_SIZE + 10 + POS_SIZE);

	/* A loan of a PDU only in the pdudef creates its channel. */
	hako_pdu_key_t status = key(2);
	assert_int_equal(hako_endpoint_loan(f->a, &status, STATUS_SIZE, &buf), 0);
	assert_int_equal(hako_endpoint_commit(f->a, &status, 0), 0);
	assert_int_equal(hako_channel_lookup(f->dom, "Drone", 2, &ch), 0);

	/* Stop with a loan left open cancels it: the channel takes writes after a restart. */
	assert_int_equal(hako_endpoint_loan(f->a, &pos, POS_SIZE, &buf), 0);
	assert_int_equal(hako_endpoint_stop(f->a), 0);
	assert_int_equal(hako_endpoint_commit(f->a, &pos, POS_SIZE), HAKO_ESTATE);
	start(f->a);
	fill(p, sizeof(p), 8);
	assert_int_equal(hako_endpoint_send(f->a, &pos, p, sizeof(p)), 0);
	HTU_WAIT_UNTIL(ok, rec_last(&r) == 8, HTU_TIMEOUT_USEC);
	assert_true(ok);
	assert_int_equal(r.out_of_order, 0);
}

/* Comm-less endpoint: a heap loan that commit delivers into the cache. */
SETUP(loan_heap)
static void test_loan_heap(void **state)
{
	struct fx *f = *state;
	char path[512];
	snprintf(path, sizeof(path), "%s/bus.json", f->dir);
	assert_int_equal(htu_write_file(path,
	                                "{\"name\": \"bus\", \"cache\": \"cache.json\", "
	                                "\"comm\": null, \"pdu_def_path\": \"pdudef.json\"}\n"),
	                 0);
	hako_error_t err;
	assert_int_equal(hako_endpoint_open(path, &f->a, &err), 0);
	hako_pdu_key_t pos = key(1);
	struct rec r;
	rec_init(&r);
	assert_int_equal(hako_endpoint_subscribe(f->a, &pos, rec_cb, &r, NULL), 0);
	void *buf = NULL, *again = NULL;
	assert_int_equal(hako_endpoint_commit(f->a, &pos, 1), HAKO_ESTATE);
	assert_int_equal(hako_endpoint_loan(f->a, &pos, POS_SIZE, &buf), 0);
	assert_int_equal(hako_endpoint_loan(f->a, &pos, POS_SIZE, &again), HAKO_EBUSY);
	uint8_t p[POS_SIZE], in[POS_SIZE];
	fill(p, sizeof(p), 9);
	memcpy(buf, p, sizeof(p));
	assert_int_equal(hako_endpoint_commit(f->a, &pos, POS_SIZE + 1), HAKO_ETOOBIG);
	assert_int_equal(hako_endpoint_commit(f->a, &pos, POS_SIZE), 0);
	assert_int_equal(atomic_load(&r.calls), 1);
	size_t len = 0;
	assert_int_equal(hako_endpoint_recv(f->a, &pos, in, sizeof(in), &len), 0);
	assert_int_equal(len, POS_SIZE);
	assert_memory_equal(in, p, POS_SIZE);
	assert_int_equal(hako_endpoint_loan(f->a, &pos, POS_SIZE, &buf), 0);
	assert_int_equal(hako_endpoint_cancel(f->a, &pos), 0);
	assert_int_equal(hako_endpoint_cancel(f->a, &pos), HAKO_ESTATE);
	assert_int_equal(atomic_load(&r.calls), 1);
	assert_int_equal(hako_endpoint_loan(f->a, &pos, POS_SIZE, &buf), 0); /* freed by close */
}

/* The lap test through the endpoint: a writer thread produces 256 KiB PDUs as fast as it can
 * (loans and plain sends, every 64-bit word = its number) while B's watcher reads the channel
 * straight into its cache and the main thread reads the cache: no subscriber and no reader ever
 * sees a torn PDU, and the subscriber sees increasing numbers. */
struct lap {
	hako_endpoint_t *ep;
	_Atomic int stop;
	_Atomic uint64_t written;
	_Atomic uint64_t torn;
	_Atomic uint64_t calls;
	uint64_t last;
	_Atomic uint64_t back;
};

static int image_intact(const void *data, size_t len)
{
	const uint64_t *w = data;
	if (len != IMAGE_SIZE) {
		return 0;
	}
	for (size_t i = 1; i < IMAGE_SIZE / 8; i++) {
		if (w[i] != w[0]) {
			return 0;
		}
	}
	return 1;
}

static void lap_cb(void *user, const hako_pdu_key_t *k, const void *data, size_t len)
{
	struct lap *l = user;
	(void)k;
	if (!image_intact(data, len)) {
		atomic_fetch_add(&l->torn, 1);
		return;
	}
	uint64_t v;
	memcpy(&v, data, sizeof(v));
	if (v <= l->last) {
		atomic_fetch_add(&l->back, 1);
	}
	l->last = v;
	atomic_fetch_add(&l->calls, 1);
}

static void *lap_writer(void *arg)
{
	struct lap *l = arg;
	hako_pdu_key_t image = key(4);
	static uint64_t plain[IMAGE_SIZE / 8];
	for (uint64_t k = 1; !atomic_load(&l->stop); k++) {
		if (k % 4 == 0) {
			for (size_t i = 0; i < IMAGE_SIZE / 8; i++) {
				plain[i] = k;
			}
			if (hako_endpoint_send(l->ep, &image, plain, IMAGE_SIZE) != 0) {
				break;
			}
		} else {
			void *buf;
			if (hako_endpoint_loan(l->ep, &image, IMAGE_SIZE, &buf) != 0) {
				break;
			}
			uint64_t *w = buf;
			for (size_t i = 0; i < IMAGE_SIZE / 8; i++) {
				w[i] = k;
			}
			if (hako_endpoint_commit(l->ep, &image, IMAGE_SIZE) != 0) {
				break;
			}
		}
		atomic_store(&l->written, k);
	}
	return NULL;
}

SETUP(lap)
static void test_lap(void **state)
{
	struct fx *f = *state;
	f->a =
	    open_endpoint(f, "a", "callback", "{\"name\": \"image\", \"notify_on_recv\": false}");
	f->b = open_endpoint(f, "b", "callback", "{\"name\": \"image\", \"notify_on_recv\": true}");
	static struct lap l;
	memset(&l, 0, sizeof(l));
	l.ep = f->a;
	hako_pdu_key_t image = key(4);
	assert_int_equal(hako_endpoint_subscribe(f->b, &image, lap_cb, &l, NULL), 0);
	start(f->a);
	start(f->b);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, lap_writer, &l), 0);
	static uint8_t in[IMAGE_SIZE];
	uint64_t reads = 0, torn_reads = 0;
	hako_time_t end = hako_now_usec() + 400000;
	while ((hako_now_usec() < end || atomic_load(&l.calls) < 20) &&
	       hako_now_usec() < end + HTU_TIMEOUT_USEC) {
		size_t len = 0;
		if (hako_endpoint_recv(f->b, &image, in, sizeof(in), &len) == 0) {
			reads++;
			torn_reads += !image_intact(in, len);
		}
	}
	atomic_store(&l.stop, 1);
	pthread_join(t, NULL);
	/* The last write is delivered too. */
	uint64_t last = atomic_load(&l.written);
	int ok;
	HTU_WAIT_UNTIL(ok, l.last == last, HTU_TIMEOUT_USEC);
	assert_true(ok);
	assert_int_equal(atomic_load(&l.torn), 0);
	assert_int_equal(torn_reads, 0);
	assert_int_equal(atomic_load(&l.back), 0);
	assert_true(atomic_load(&l.calls) >= 20);
	assert_true(reads > 0);
}

/* hako_cache_write_fill: a failing fill stores nothing and keeps the previous PDU; a subscriber
 * keeps its buffer while the same key is written again meanwhile (here from inside it). */
struct fill_src {
	const uint8_t *data;
	size_t len;
	int fail;
};

static int fill_from(void *arg, void *dst, size_t cap, size_t *len)
{
	struct fill_src *s = arg;
	if (s->fail || s->len > cap) {
		return HAKO_EAGAIN;
	}
	memcpy(dst, s->data, s->len);
	*len = s->len;
	return 0;
}

struct rewrite {
	hako_cache_t *c;
	int depth;
	int intact;
	uint8_t expect[POS_SIZE];
};

static void rewrite_cb(void *user, const hako_pdu_key_t *k, const void *data, size_t len)
{
	struct rewrite *w = user;
	if (w->depth++ > 0) {
		return;
	}
	uint8_t other[POS_SIZE];
	fill(other, sizeof(other), 99);
	struct fill_src s = {other, sizeof(other), 0};
	/* The same key again while this subscriber holds the slot's buffer. */
	assert_int_equal(hako_cache_write_fill(w->c, k, POS_SIZE, fill_from, &s, NULL), 0);
	assert_int_equal(hako_cache_write(w->c, k, other, sizeof(other)), 0);
	w->intact = len == POS_SIZE && memcmp(data, w->expect, POS_SIZE) == 0;
}

SETUP(cache_fill)
static void test_cache_fill(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		hako_cache_t *c = NULL;
		assert_int_equal(
		    hako_cache_create(mode == 0 ? HAKO_CACHE_LATEST : HAKO_CACHE_QUEUE, 2, &c), 0);
		hako_pdu_key_t pos = key(1);
		uint8_t p[POS_SIZE], in[POS_SIZE];
		fill(p, sizeof(p), 1);
		struct fill_src s = {p, sizeof(p), 0};
		size_t len = 0;
		assert_int_equal(hako_cache_write_fill(c, &pos, POS_SIZE, fill_from, &s, &len), 0);
		assert_int_equal(len, POS_SIZE);
		s.fail = 1;
		assert_int_equal(hako_cache_write_fill(c, &pos, POS_SIZE, fill_from, &s, &len),
		                 HAKO_EAGAIN);
		assert_int_equal(hako_cache_read(c, &pos, in, sizeof(in), &len), 0);
		assert_memory_equal(in, p, POS_SIZE);
		if (mode == 1) {
			assert_int_equal(hako_cache_read(c, &pos, in, sizeof(in), &len),
			                 HAKO_EAGAIN);
		}

		static struct rewrite w;
		memset(&w, 0, sizeof(w));
		w.c = c;
		fill(w.expect, sizeof(w.expect), 2);
		assert_int_equal(hako_cache_subscribe(c, &pos, rewrite_cb, &w, NULL), 0);
		s.data = w.expect;
		s.fail = 0;
		assert_int_equal(hako_cache_write_fill(c, &pos, POS_SIZE, fill_from, &s, &len), 0);
		assert_true(w.intact);
		/* The newest PDU is the subscriber's last write (99). */
		uint8_t other[POS_SIZE];
		fill(other, sizeof(other), 99);
		size_t n = 0;
		while (hako_cache_read(c, &pos, in, sizeof(in), &len) == 0 && n++ < 4 &&
		       mode == 1) {
		}
		assert_memory_equal(in, other, POS_SIZE);
		hako_cache_destroy(c);
	}
}

static int thread_count(void)
{
	int n = htu_thread_count();
	assert_true(n > 0);
	return n;
}

/* callback mode watches every notified PDU from one thread (a core wait-set), however many
 * there are, and delivers each of them; stop ends that thread. */
SETUP(one_watcher)
static void test_one_watcher(void **state)
{
	struct fx *f = *state;
	f->a = open_endpoint(f, "a", "callback", "{\"name\": \"pos\", \"notify_on_recv\": false}");
	f->b = open_endpoint(f, "b", "callback",
	                     "{\"name\": \"motor\", \"notify_on_recv\": true},"
	                     "{\"name\": \"pos\", \"notify_on_recv\": true},"
	                     "{\"name\": \"status\", \"notify_on_recv\": true},"
	                     "{\"name\": \"echo\", \"notify_on_recv\": true},"
	                     "{\"name\": \"image\", \"notify_on_recv\": true}");
	start(f->a);
	struct rec r;
	rec_init(&r);
	assert_int_equal(hako_endpoint_subscribe(f->b, NULL, rec_cb, &r, NULL), 0);
	int before = htu_thread_count_settled();
	start(f->b);
	assert_int_equal(thread_count(), before + 1);
	static const int32_t ids[] = {0, 1, 2, 3, 4};
	static const size_t sizes[] = {MOTOR_SIZE, POS_SIZE, STATUS_SIZE, ECHO_SIZE, IMAGE_SIZE};
	static uint8_t buf[IMAGE_SIZE];
	for (int i = 0; i < 5; i++) {
		hako_pdu_key_t k = key(ids[i]);
		fill(buf, sizes[i], 100 + (uint32_t)i);
		assert_int_equal(hako_endpoint_send(f->a, &k, buf, sizes[i]), 0);
		int ok;
		HTU_WAIT_UNTIL(ok, atomic_load(&r.calls) >= i + 1, HTU_TIMEOUT_USEC);
		assert_true(ok);
		assert_int_equal(r.len, sizes[i] < sizeof(r.data) ? sizes[i] : sizeof(r.data));
		assert_int_equal(rec_last(&r), 100 + (uint32_t)i);
	}
	assert_int_equal(hako_endpoint_stop(f->b), 0);
	assert_int_equal(htu_thread_count_reaches(before), before);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup_##name, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(callback), T(poll),       T(no_notify),   T(send), T(latest),
	    T(reset),    T(errors),     T(two_process), T(loan), T(loan_heap),
	    T(lap),      T(cache_fill), T(one_watcher),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
