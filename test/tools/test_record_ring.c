/* The ring between hako-record's sampler and its writer thread (tools/hako-record/
 * record_ring.c): entries come out in order and whole across the wrap, a full ring refuses
 * (the sampler counts a drop) and takes entries again once the writer has caught up, an entry
 * larger than half the ring is always refused, and two threads pass 200000 entries without
 * losing or reordering one. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "record_ring.h"

static void fill(rec_entry_t *e, uint32_t len, uint64_t seq)
{
	e->len = len;
	e->chan = (uint32_t)(seq % 7);
	e->seq = seq;
	e->log_ns = (int64_t)seq * 1000;
	e->wall_ns = 0;
	memset(e + 1, (int)(seq & 0xff), len);
}

static void check(const rec_entry_t *e, uint64_t seq)
{
	assert_non_null(e);
	assert_int_equal(e->seq, seq);
	assert_int_equal(e->chan, seq % 7);
	const uint8_t *p = (const uint8_t *)(e + 1);
	for (uint32_t i = 0; i < e->len; i++) {
		assert_int_equal(p[i], seq & 0xff);
	}
}

static void test_wrap_and_full(void **state)
{
	(void)state;
	rec_ring_t r;
	assert_int_equal(rec_ring_init(&r, 4096), 0);
	uint64_t in = 0, out = 0;
	/* Odd sizes so that entries end at every offset of the buffer and wrap with a pad. */
	for (int round = 0; round < 2000; round++) {
		uint32_t len = (uint32_t)(13 + (round * 37) % 300);
		rec_entry_t *e = rec_ring_reserve(&r, len);
		if (e == NULL) {
			/* full: the writer empties it, then it takes entries again */
			assert_true(rec_ring_used(&r) > 4096 / 2 - 400);
			const rec_entry_t *o;
			while ((o = rec_ring_peek(&r)) != NULL) {
				check(o, out++);
				rec_ring_pop(&r);
			}
			assert_int_equal(rec_ring_used(&r), 0);
			e = rec_ring_reserve(&r, len);
			assert_non_null(e);
		}
		fill(e, len, in++);
		rec_ring_commit(&r);
		if (round % 3 == 0) {
			const rec_entry_t *o = rec_ring_peek(&r);
			check(o, out++);
			rec_ring_pop(&r);
		}
	}
	const rec_entry_t *o;
	while ((o = rec_ring_peek(&r)) != NULL) {
		check(o, out++);
		rec_ring_pop(&r);
	}
	assert_int_equal(in, out);
	/* larger than half the ring: never */
	assert_null(rec_ring_reserve(&r, 4096));
	rec_ring_free(&r);
}

#define MANY 200000

static void *consumer(void *arg)
{
	rec_ring_t *r = arg;
	uint64_t next = 0;
	while (next < MANY) {
		const rec_entry_t *e = rec_ring_peek(r);
		if (e == NULL) {
			continue;
		}
		if (e->seq != next || e->len != (uint32_t)(8 + next % 120)) {
			return (void *)1;
		}
		const uint8_t *p = (const uint8_t *)(e + 1);
		if (e->len > 0 && (p[0] != (next & 0xff) || p[e->len - 1] != (next & 0xff))) {
			return (void *)1;
		}
		next++;
		rec_ring_pop(r);
	}
	return NULL;
}

static void test_two_threads(void **state)
{
	(void)state;
	rec_ring_t r;
	assert_int_equal(rec_ring_init(&r, 8192), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, consumer, &r), 0);
	for (uint64_t i = 0; i < MANY;) {
		uint32_t len = (uint32_t)(8 + i % 120);
		rec_entry_t *e = rec_ring_reserve(&r, len);
		if (e == NULL) {
			continue; /* full: the consumer catches up */
		}
		fill(e, len, i++);
		rec_ring_commit(&r);
	}
	void *bad = NULL;
	pthread_join(t, &bad);
	assert_null(bad);
	rec_ring_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_wrap_and_full),
	    cmocka_unit_test(test_two_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
