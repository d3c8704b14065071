/* The drift statistics a conductor node keeps per peer (node.c): percentiles of the newest
 * samples, the maximum of all of them, signed values kept as they are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
