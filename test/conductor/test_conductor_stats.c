/* The drift statistics a conductor node keeps per peer (node.c): percentiles of the newest
 * samples, the maximum of all of them, signed values kept as they are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conductor_internal.h"

static void test_ring(void **state)
{
	(void)state;
	hakoi_ring_t r;
	memset(&r, 0, sizeof(r));
	assert_int_equal(hakoi_ring_percentile(&r, 50), 0);
	for (hako_time_t v = 1000; v >= 1; v--) { /* out of order */
		hakoi_ring_push(&r, v);
	}
	assert_int_equal(r.total, 1000);
	assert_int_equal(r.max, 1000);
	assert_int_equal(hakoi_ring_percentile(&r, 0), 1);
	assert_int_equal(hakoi_ring_percentile(&r, 100), 1000);
	assert_in_range(hakoi_ring_percentile(&r, 50), 500, 501);
	assert_in_range(hakoi_ring_percentile(&r, 95), 950, 951);
	hakoi_ring_free(&r);

	/* Negative samples (the peer ahead) are kept as they are. */
	hakoi_ring_push(&r, -5);
	hakoi_ring_push(&r, -9);
	assert_int_equal(r.max, -5);
	assert_int_equal(hakoi_ring_percentile(&r, 0), -9);
	hakoi_ring_free(&r);

	/* The percentiles are of the newest samples, the max of all of them. */
	hakoi_ring_push(&r, 1000000);
	for (int i = 0; i < HAKOI_DRIFT_SAMPLES; i++) {
		hakoi_ring_push(&r, 7);
	}
	assert_int_equal(r.n, HAKOI_DRIFT_SAMPLES);
	assert_int_equal(r.total, HAKOI_DRIFT_SAMPLES + 1);
	assert_int_equal(hakoi_ring_percentile(&r, 100), 7);
	assert_int_equal(r.max, 1000000);
	hakoi_ring_free(&r);
}

static int cmp(const void *a, const void *b)
{
	hako_time_t x = *(const hako_time_t *)a, y = *(const hako_time_t *)b;
	return (x > y) - (x < y);
}

/* The selection (no sort) gives what a sort gives, on data with many equal values, sorted,
 * reversed and random; p50 / p95 are cached until a sample comes in. */
static void test_percentiles_match_sort(void **state)
{
	(void)state;
	enum { N = 5000 };
	static hako_time_t copy[N + 1];
	srand(12345);
	for (int shape = 0; shape < 4; shape++) {
		for (int n = 1; n <= N; n = n * 3 + 1) {
			hakoi_ring_t r;
			memset(&r, 0, sizeof(r));
			for (int i = 0; i < n; i++) {
				hako_time_t v = shape == 0   ? rand() % 7
				                : shape == 1 ? i
				                : shape == 2
				                    ? n - i
				                    : (hako_time_t)(rand() % 100000) - 50000;
				hakoi_ring_push(&r, v);
				copy[i] = v;
			}
			qsort(copy, (size_t)n, sizeof(copy[0]), cmp);
			static const double ps[] = {0, 1, 25, 50, 90, 95, 99, 100};
			for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
				size_t rank = (size_t)(ps[k] / 100.0 * (double)(n - 1) + 0.5);
				assert_int_equal(hakoi_ring_percentile(&r, ps[k]), copy[rank]);
			}
			hako_time_t p50, p95;
			hakoi_ring_p50_p95(&r, 0, &p50, &p95);
			assert_int_equal(p50, hakoi_ring_percentile(&r, 50));
			assert_int_equal(p95, hakoi_ring_percentile(&r, 95));
			/* exact: a new sample is seen by the next call */
			hakoi_ring_push(&r, 1000000);
			hakoi_ring_p50_p95(&r, 1, &p50, &p95);
			assert_int_equal(p95, hakoi_ring_percentile(&r, 95));
			assert_int_equal(p50, hakoi_ring_percentile(&r, 50));
			/* not exact: once 1/64 of the kept samples are new (at least one) */
			hako_time_t q50, q95;
			uint64_t base = r.total;
			for (;;) {
				hakoi_ring_push(&r, 2000000);
				uint64_t need = r.n / 64 > 0 ? r.n / 64 : 1;
				hakoi_ring_p50_p95(&r, 0, &q50, &q95);
				if (r.total - base >= need) {
					break;
				}
				assert_int_equal(q95, p95); /* not computed again yet */
			}
			assert_int_equal(q95, hakoi_ring_percentile(&r, 95));
			assert_int_equal(q50, hakoi_ring_percentile(&r, 50));
			hakoi_ring_free(&r);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring),
	    cmocka_unit_test(test_percentiles_match_sort),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
