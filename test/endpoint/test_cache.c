/* The endpoint cache: latest and queue semantics, read_next order, ETOOBIG, subscribers, and a
 * two-writer / one-reader stress test. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ep_test_util.h"

#include "hako/endpoint_cache.h"

static void write_u32(hako_cache_t *c, const hako_pdu_key_t *k, uint32_t v)
{
	assert_int_equal(hako_cache_write(c, k, &v, sizeof(v)), 0);
}

static uint32_t read_u32(hako_cache_t *c, const hako_pdu_key_t *k)
{
	uint32_t v = 0;
	size_t len = 0;
	assert_int_equal(hako_cache_read(c, k, &v, sizeof(v), &len), 0);
	assert_int_equal(len, sizeof(v));
	return v;
}

static uint32_t read_next_u32(hako_cache_t *c, hako_pdu_key_t *k)
{
	uint32_t v = 0;
	size_t len = 0;
	assert_int_equal(hako_cache_read_next(c, k, &v, sizeof(v), &len), 0);
	assert_int_equal(len, sizeof(v));
	return v;
}

static void test_latest_overwrite(void **state)
{
	(void)state;
	hako_cache_t *c = NULL;
	assert_int_equal(hako_cache_create(HAKO_CACHE_LATEST, 1, &c), 0);
	hako_pdu_key_t a = ept_key("drone", 1);
	hako_pdu_key_t b = ept_key("drone", 2);
	uint32_t v;
	size_t len;
	assert_int_equal(hako_cache_read(c, &a, &v, sizeof(v), &len), HAKO_EAGAIN);
	write_u32(c, &a, 10);
	write_u32(c, &a, 11);
	assert_int_equal(read_u32(c, &a), 11);
	assert_int_equal(read_u32(c, &a), 11); /* not consumed */
	assert_int_equal(hako_cache_read(c, &b, &v, sizeof(v), &len), HAKO_EAGAIN);
	/* a different length replaces the old one entirely */
	char big[100];
	memset(big, 'x', sizeof(big));
	assert_int_equal(hako_cache_write(c, &a, big, sizeof(big)), 0);
	char out[128];
	assert_int_equal(hako_cache_read(c, &a, out, sizeof(out), &len), 0);
	assert_int_equal(len, sizeof(big));
	assert_memory_equal(out, big, sizeof(big));
	hako_cache_stats_t st;
	hako_cache_get_stats(c, &st);
	assert_int_equal(st.writes, 3);
	assert_int_equal(st.reads, 3);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.keys, 1);
	hako_cache_destroy(c);
}

static void test_queue_fifo(void **state)
{
	(void)state;
	hako_cache_t *c = NULL;
	assert_int_equal(hako_cache_create(HAKO_CACHE_QUEUE, 8, &c), 0);
	hako_pdu_key_t a = ept_key("rover", 0);
	for (uint32_t i = 1; i <= 5; i++) {
		write_u32(c, &a, i);
	}
	for (uint32_t i = 1; i <= 5; i++) {
		assert_int_equal(read_u32(c, &a), i);
	}
	uint32_t v;
	size_t len;
	assert_int_equal(hako_cache_read(c, &a, &v, sizeof(v), &len), HAKO_EAGAIN);
	assert_int_equal(hako_cache_read_next(c, &a, &v, sizeof(v), &len), HAKO_EAGAIN);
	/* the ring wraps around */
	for (uint32_t i = 0; i < 20; i++) {
		write_u32(c, &a, 100 + i);
		assert_int_equal(read_u32(c, &a), 100 + i);
	}
	hako_cache_destroy(c);
}

static void test_queue_overflow(void **state)
{
	(void)state;
	hako_cache_t *c = NULL;
	assert_int_equal(hako_cache_create(HAKO_CACHE_QUEUE, 3, &c), 0);
	hako_pdu_key_t a = ept_key("rover", 0);
	for (uint32_t i = 1; i <= 5; i++) {
		write_u32(c, &a, i);
	}
	/* read_next must not return the dropped 1 and 2 */
	hako_pdu_key_t got;
	assert_int_equal(read_next_u32(c, &got), 3);
	assert_string_equal(got.robot, "rover");
	assert_int_equal(read_u32(c, &a), 4);
	assert_int_equal(read_next_u32(c, &got), 5);
	uint32_t v;
	size_t len;
	assert_int_equal(hako_cache_read(c, &a, &v, sizeof(v), &len), HAKO_EAGAIN);
	assert_int_equal(hako_cache_read_next(c, &got, &v, sizeof(v), &len), HAKO_EAGAIN);
	hako_cache_stats_t st;
	hako_cache_get_stats(c, &st);
	assert_int_equal(st.writes, 5);
	assert_int_equal(st.reads, 3);
	assert_int_equal(st.dropped, 2);
	hako_cache_destroy(c);
}

static void test_read_next_queue(void **state)
{
	(void)state;
	hako_cache_t *c = NULL;
	assert_int_equal(hako_cache_create(HAKO_CACHE_QUEUE, 4, &c), 0);
	hako_pdu_key_t a = ept_key("a", 1), b = ept_key("b", 1), a2 = ept_key("a", 2);
	write_u32(c, &a, 1);
	write_u32(c, &b, 2);
	write_u32(c, &a, 3);
	write_u32(c, &a2, 4);
	write_u32(c, &b, 5);
	const hako_pdu_key_t *want[] = {&a, &b, &a, &a2, &b};
	for (uint32_t i = 0; i < 5; i++) {
		hako_pdu_key_t got;
		assert_int_equal(read_next_u32(c, &got), i + 1);
		assert_string_equal(got.robot, want[i]->robot);
		assert_int_equal(got.channel_id, want[i]->channel_id);
	}
	hako_pdu_key_t got;
	uint32_t v;
	size_t len;
	assert_int_equal(hako_cache_read_next(c, &got, &v, sizeof(v), &len), HAKO_EAGAIN);

	/* a PDU popped by key is not returned again by read_next */
	write_u32(c, &a, 6);
	write_u32(c, &b, 7);
	assert_int_equal(read_u32(c, &a), 6);
	assert_int_equal(read_next_u32(c, &got), 7);
	assert_int_equal(hako_cache_read_next(c, &got, &v, sizeof(v), &len), HAKO_EAGAIN);
	hako_cache_destroy(c);
}

static void test_read_next_latest(void **state)
{
	(void)state;
	hako_cache_t *c = NULL;
	assert_int_equal(hako_cache_create(HAKO_CACHE_LATEST, 1, &c), 0);
	hako_pdu_key_t a = ept_key("a", 1), b = ept_key("b", 1), d = ept_key("d", 7);
	write_u32(c, &a, 1);
	write_u32(c, &b, 2);
	write_u32(c, &a, 3); /* a stays first (first pending write), with its latest value */
	write_u32(c, &d, 4);
	hako_pdu_key_t got;
	assert_int_equal(read_next_u32(c, &got), 3);
	assert_string_equal(got.robot, "a");
	assert_int_equal(read_next_u32(c, &got), 2);
	assert_string_equal(got.robot, "b");
	assert_int_equal(read_next_u32(c, &got), 4);
	assert_string_equal(got.robot, "d");
	assert_int_equal(got.channel_id, 7);
	uint32_t v;
	size_t len;
	assert_int_equal(hako_cache_read_next(c, &got, &v, sizeof(v), &len), HAKO_EAGAIN);
	/* still readable by key; read by key also clears pending */
	assert_int_equal(read_u32(c, &b), 2);
	write_u32(c, &b, 5);
	write_u32(c, &a, 6);
	assert_int_equal(read_u32(c, &b), 5);
	assert_int_equal(read_next_u32(c, &got), 6);
	assert_string_equal(got.robot, "a");
	assert_int_equal(hako_cache_read_next(c, &got, &v, sizeof(v), &len), HAKO_EAGAIN);
	hako_cache_destroy(c);
}

static void check_too_big(hako_cache_mode_t mode)
{
	hako_cache_t *c = NULL;
	assert_int_equal(hako_cache_create(mode, 2, &c), 0);
	hako_pdu_key_t a = ept_key("a", 1);
	char data[64];
	memset(data, 7, sizeof(data));
	assert_int_equal(hako_cache_write(c, &a, data, sizeof(data)), 0);
	char out[64];
	size_t len = 0;
	assert_int_equal(hako_cache_read(c, &a, out, 10, &len), HAKO_ETOOBIG);
	assert_int_equal(len, sizeof(data));
	len = 0;
	hako_pdu_key_t got;
	assert_int_equal(hako_cache_read_next(c, &got, out, 10, &len), HAKO_ETOOBIG);
	assert_int_equal(len, sizeof(data));
	assert_int_equal(hako_cache_read_next(c, &got, NULL, 0, &len), HAKO_ETOOBIG);
	/* nothing consumed: read_next still has it, then it is gone (queue) */
	assert_int_equal(hako_cache_read_next(c, &got, out, sizeof(out), &len), 0);
	assert_int_equal(len, sizeof(data));
	assert_memory_equal(out, data, sizeof(data));
	assert_int_equal(hako_cache_read_next(c, &got, out, sizeof(out), &len), HAKO_EAGAIN);
	hako_cache_stats_t st;
	hako_cache_get_stats(c, &st);
	assert_int_equal(st.reads, 1);
	hako_cache_destroy(c);
}

static void test_too_big(void **state)
{
	(void)state;
	check_too_big(HAKO_CACHE_QUEUE);
	check_too_big(HAKO_CACHE_LATEST);
}

struct sub_rec {
	hako_cache_t *c;
	int calls;
	uint32_t last_seen;
	uint32_t read_inside; /* what hako_cache_read returned inside the callback */
	int read_rc;
};

static void on_write(void *user, const hako_pdu_key_t *k, const void *data, size_t len)
{
	struct sub_rec *r = user;
	assert_int_equal(len, sizeof(uint32_t));
	memcpy(&r->last_seen, data, sizeof(uint32_t));
	r->calls++;
	size_t n = 0;
	r->read_rc = hako_cache_read(r->c, k, &r->read_inside, sizeof(r->read_inside), &n);
}

static void test_subscribers(void **state)
{
	(void)state;
	hako_cache_t *c = NULL;
	assert_int_equal(hako_cache_create(HAKO_CACHE_LATEST, 1, &c), 0);
	hako_pdu_key_t a = ept_key("a", 1), b = ept_key("b", 1);
	struct sub_rec r1 = {.c = c}, r2 = {.c = c}, rb = {.c = c};
	assert_int_equal(hako_cache_subscribe(c, &a, on_write, &r1, NULL), 0);
	assert_int_equal(hako_cache_subscribe(c, &a, on_write, &r2, NULL), 0);
	assert_int_equal(hako_cache_subscribe(c, &b, on_write, &rb, NULL), 0);
	assert_int_equal(hako_cache_subscribe(c, &a, NULL, &r1, NULL), HAKO_EINVAL);
	hako_cache_stats_t st;
	hako_cache_get_stats(c, &st);
	assert_int_equal(st.keys, 0); /* keys appear on first write */

	write_u32(c, &a, 42);
	assert_int_equal(r1.calls, 1);
	assert_int_equal(r2.calls, 1);
	assert_int_equal(rb.calls, 0);
	assert_int_equal(r1.last_seen, 42);
	assert_int_equal(r1.read_rc, 0);
	assert_int_equal(r1.read_inside, 42);
	assert_int_equal(r2.read_inside, 42);
	write_u32(c, &a, 43);
	assert_int_equal(r1.calls, 2);
	assert_int_equal(r2.last_seen, 43);
	assert_int_equal(rb.calls, 0);
	write_u32(c, &b, 7);
	assert_int_equal(rb.calls, 1);
	assert_int_equal(rb.last_seen, 7);
	assert_int_equal(r1.calls, 2);
	hako_cache_get_stats(c, &st);
	assert_int_equal(st.keys, 2);
	hako_cache_destroy(c);

	/* queue: the callback's read pops what was just written */
	assert_int_equal(hako_cache_create(HAKO_CACHE_QUEUE, 4, &c), 0);
	struct sub_rec rq = {.c = c};
	assert_int_equal(hako_cache_subscribe(c, &a, on_write, &rq, NULL), 0);
	write_u32(c, &a, 9);
	assert_int_equal(rq.read_rc, 0);
	assert_int_equal(rq.read_inside, 9);
	uint32_t v;
	size_t len;
	assert_int_equal(hako_cache_read(c, &a, &v, sizeof(v), &len), HAKO_EAGAIN);
	hako_cache_destroy(c);
}

static void test_bad_args(void **state)
{
	(void)state;
	hako_cache_t *c = (hako_cache_t *)0x1;
	assert_int_equal(hako_cache_create(HAKO_CACHE_QUEUE, 0, &c), HAKO_EINVAL);
	assert_int_equal(hako_cache_create(HAKO_CACHE_QUEUE, HAKO_CACHE_MAX_DEPTH + 1, &c),
	                 HAKO_EINVAL);
	assert_int_equal(hako_cache_create(HAKO_CACHE_LATEST, 0, &c), HAKO_EINVAL);
	assert_int_equal(hako_cache_create((hako_cache_mode_t)7, 1, &c), HAKO_EINVAL);
	assert_int_equal(hako_cache_create(HAKO_CACHE_QUEUE, HAKO_CACHE_MAX_DEPTH, &c), 0);
	hako_pdu_key_t k = ept_key("x", 0);
	memset(k.robot, 'r', sizeof(k.robot)); /* not terminated */
	uint32_t v = 1;
	assert_int_equal(hako_cache_write(c, &k, &v, sizeof(v)), HAKO_EINVAL);
	k = ept_key("x", 0);
	assert_int_equal(hako_cache_write(c, &k, NULL, 4), HAKO_EINVAL);
	assert_int_equal(hako_cache_write(c, &k, NULL, 0), 0); /* an empty PDU is a PDU */
	size_t len = 99;
	assert_int_equal(hako_cache_read(c, &k, NULL, 0, &len), 0);
	assert_int_equal(len, 0);
	hako_cache_destroy(c);
}

static void test_many_keys(void **state)
{
	(void)state;
	hako_cache_t *c = NULL;
	assert_int_equal(hako_cache_create(HAKO_CACHE_QUEUE, 2, &c), 0);
	for (uint32_t i = 0; i < 1000; i++) {
		hako_pdu_key_t k = ept_key(i % 2 ? "odd" : "even", (int32_t)i);
		write_u32(c, &k, i);
	}
	for (uint32_t i = 0; i < 1000; i += 7) {
		hako_pdu_key_t k = ept_key(i % 2 ? "odd" : "even", (int32_t)i);
		assert_int_equal(read_u32(c, &k), i);
	}
	hako_cache_stats_t st;
	hako_cache_get_stats(c, &st);
	assert_int_equal(st.keys, 1000);
	hako_cache_destroy(c);
}

/* Stress: two writers, each on its own key and on one shared key; one reader with read_next.
 * Every PDU is either read or counted as dropped, and per (key, writer) the order holds. */
#define STRESS_N     20000
#define STRESS_DEPTH 16

struct pdu {
	uint32_t writer;
	uint32_t seq;
};

struct stress {
	hako_cache_t *c;
	uint32_t writer;
	int done;
};

static pthread_mutex_t stress_lock = PTHREAD_MUTEX_INITIALIZER;
static int writers_done;

static void *writer_main(void *arg)
{
	struct stress *s = arg;
	hako_pdu_key_t own = ept_key(s->writer == 0 ? "w0" : "w1", 3);
	hako_pdu_key_t shared = ept_key("shared", 3);
	for (uint32_t i = 0; i < STRESS_N; i++) {
		struct pdu p = {s->writer, i};
		if (hako_cache_write(s->c, i % 3 == 0 ? &shared : &own, &p, sizeof(p)) != 0) {
			s->done = -1;
			break;
		}
	}
	pthread_mutex_lock(&stress_lock);
	writers_done++;
	pthread_mutex_unlock(&stress_lock);
	return NULL;
}

static void test_stress(void **state)
{
	(void)state;
	hako_cache_t *c = NULL;
	assert_int_equal(hako_cache_create(HAKO_CACHE_QUEUE, STRESS_DEPTH, &c), 0);
	writers_done = 0;
	struct stress w[2] = {{c, 0, 0}, {c, 1, 0}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
	}
	/* last seq seen per (key: own=0, shared=1) x writer; -1 = none yet */
	int64_t last[2][2] = {{-1, -1}, {-1, -1}};
	uint64_t received = 0;
	int order_ok = 1;
	for (;;) {
		pthread_mutex_lock(&stress_lock);
		int done = writers_done == 2;
		pthread_mutex_unlock(&stress_lock);
		hako_pdu_key_t got;
		struct pdu p;
		size_t len;
		int rc = hako_cache_read_next(c, &got, &p, sizeof(p), &len);
		if (rc == HAKO_EAGAIN) {
			if (done) {
				break; /* everything written before `done` was seen has been drained
				        */
			}
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(len, sizeof(p));
		assert_true(p.writer < 2);
		int shared = strcmp(got.robot, "shared") == 0;
		if (!shared) {
			assert_int_equal(got.robot[1] - '0', (int)p.writer);
		}
		assert_int_equal(p.seq % 3 == 0, shared);
		if ((int64_t)p.seq <= last[shared][p.writer]) {
			order_ok = 0;
		}
		last[shared][p.writer] = p.seq;
		received++;
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(w[i].done, 0);
	}
	assert_true(order_ok);
	hako_cache_stats_t st;
	hako_cache_get_stats(c, &st);
	assert_int_equal(st.writes, 2 * STRESS_N);
	assert_int_equal(st.reads, received);
	assert_int_equal(received + st.dropped, 2 * STRESS_N);
	assert_int_equal(st.keys, 3);
	/* each writer's final PDU to its own key is never dropped (nothing follows it) */
	uint32_t last_own = STRESS_N - 1;
	while (last_own % 3 == 0) {
		last_own--;
	}
	assert_int_equal(last[0][0], last_own);
	assert_int_equal(last[0][1], last_own);
	hako_cache_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_latest_overwrite), cmocka_unit_test(test_queue_fifo),
	    cmocka_unit_test(test_queue_overflow),   cmocka_unit_test(test_read_next_queue),
	    cmocka_unit_test(test_read_next_latest), cmocka_unit_test(test_too_big),
	    cmocka_unit_test(test_subscribers),      cmocka_unit_test(test_bad_args),
	    cmocka_unit_test(test_many_keys),        cmocka_unit_test(test_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
