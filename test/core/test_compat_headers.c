/* Hakoniwa's headers as its programs include them, compiled with -Wformat=2 -Werror (see
 * CMakeLists.txt): hako_time_t printed with %lld as Hakoniwa's examples do (a build failure if
 * hako_time_t is not Hakoniwa's long long), all five headers in one file (no conflicting
 * declarations), and the sim-event truth values read the way those programs read them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <hako_asset.h>
#include <hako_asset_service.h>
#include <hako_capi.h>
#include <hako_conductor.h>
#include <hako_simevent.h>

static void test_hako_time_t_is_long_long(void **state)
{
	(void)state;
	char buf[64];
	hako_time_t t = 1234567;
	snprintf(buf, sizeof(buf), "%lld", t);
	assert_string_equal(buf, "1234567");
	/* _Generic picks the exact type, not just its width. */
	assert_int_equal(_Generic(t, long long : 1, default : 0), 1);
	snprintf(buf, sizeof(buf), "%lld", hako_asset_simulation_time());
	assert_string_equal(buf, "0");
}

static void test_simevent_reads_as_in_hakoniwa(void **state)
{
	(void)state;
	setenv("HAKO_DOMAIN", "t-there-is-no-such-domain", 1);
	int failed = 0;
	if (!hako_simevent_init()) { /* Hakoniwa's idiom: false means it did not work */
		failed = 1;
	}
	assert_int_equal(failed, 1);
	assert_int_equal(hako_simevent_get_state(), -1);
	bool (*start)(void) = hako_simevent_start; /* Hakoniwa's signature, exactly */
	assert_false(start());
	assert_false(hako_asset_init());
	unsetenv("HAKO_DOMAIN");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hako_time_t_is_long_long),
	    cmocka_unit_test(test_simevent_reads_as_in_hakoniwa),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
