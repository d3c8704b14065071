/* The built-in packages against Hakoniwa's published PDU sizes (hakoniwa_pdu_sizes.h): every
 * type Hakoniwa publishes is built in with the same size, and every built-in type is one of
 * Hakoniwa's. A type whose fields drift from Hakoniwa's (hako_msgs/DroneStatus had other
 * fields, 32 bytes for 40) or a type Hakoniwa does not have in one of its packages fails here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/msg.h"
#include "hakoniwa_pdu_sizes.h"

#define NSIZES (sizeof(hakoniwa_pdu_sizes) / sizeof(hakoniwa_pdu_sizes[0]))

/* Built-in types Hakoniwa defines but does not list in its sizes, each with why. */
static const char *const not_in_size_list[] = {
    /* idl/hako_srv_msgs/msg/WorldTimeNotification.msg: config/ros_msgs.txt names it
     * hako_msgs/WorldTimeNotification, so Hakoniwa's generator never reaches it. */
    "hako_srv_msgs/WorldTimeNotification",
};

static hako_msg_registry_t *builtin_registry(void)
{
	hako_msg_registry_t *reg = NULL;
	unsetenv("HAKO_MSG_PATH"); /* the built-in packages only */
	assert_int_equal(hako_msg_registry_create(&reg), 0);
	return reg;
}

static const struct hakoniwa_pdu_size *published(const char *type)
{
	for (size_t i = 0; i < NSIZES; i++) {
		if (strcmp(hakoniwa_pdu_sizes[i].type, type) == 0) {
			return &hakoniwa_pdu_sizes[i];
		}
	}
	return NULL;
}

static int excepted(const char *type)
{
	for (size_t i = 0; i < sizeof(not_in_size_list) / sizeof(not_in_size_list[0]); i++) {
		if (strcmp(not_in_size_list[i], type) == 0) {
			return 1;
		}
	}
	return 0;
}

static void test_every_published_type_has_its_size(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = builtin_registry();
	int bad = 0;
	for (size_t i = 0; i < NSIZES; i++) {
		const hako_msg_type_t *t = NULL;
		hako_error_t err;
		const char *name = hakoniwa_pdu_sizes[i].type;
		uint32_t want = 24 + hakoniwa_pdu_sizes[i].size;
		if (hako_msg_registry_get(reg, name, &t, &err) != 0) {
			print_error("%s: not built in: %s\n", name, err.message);
			bad++;
			continue;
		}
		if (hako_msg_pdu_fixed_size(t) != want) {
			print_error("%s: PDU size %u, Hakoniwa's is %u (24 + %u)\n", name,
			            hako_msg_pdu_fixed_size(t), want, hakoniwa_pdu_sizes[i].size);
			bad++;
		}
	}
	hako_msg_registry_destroy(reg);
	assert_int_equal(bad, 0);
}

static void test_every_builtin_type_is_hakoniwas(void **state)
{
	(void)state;
	size_t n = hako_msg_builtin_count();
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		const char *pkg;
		const char *name;
		char full[HAKO_MSG_FULL_MAX];
		hako_msg_builtin_at(i, &pkg, &name);
		snprintf(full, sizeof(full), "%s/%s", pkg, name);
		if (published(full) == NULL && !excepted(full)) {
			print_error("%s: built in, but Hakoniwa has no such type\n", full);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
	assert_int_equal(n, NSIZES + sizeof(not_in_size_list) / sizeof(not_in_size_list[0]));
}

/* The type the table was made to catch, field by field. */
static void test_drone_status_is_hakoniwas(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = builtin_registry();
	const hako_msg_type_t *t = NULL;
	hako_error_t err;
	assert_int_equal(hako_msg_registry_get(reg, "hako_msgs/DroneStatus", &t, &err), 0);
	static const struct {
		const char *name;
		uint32_t offset;
		uint32_t size;
	} want[] = {
	    {"flight_mode", 0, 4},
	    {"internal_state", 4, 4},
	    {"propeller_wind", 8, 24},
	    {"collided_counts", 32, 4},
	};
	assert_int_equal(t->field_count, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_string_equal(t->fields[i].name, want[i].name);
		assert_int_equal(t->fields[i].offset, want[i].offset);
		assert_int_equal(t->fields[i].size, want[i].size);
	}
	assert_int_equal(t->size, 40);
	hako_msg_registry_destroy(reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_published_type_has_its_size),
	    cmocka_unit_test(test_every_builtin_type_is_hakoniwas),
	    cmocka_unit_test(test_drone_status_is_hakoniwas),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
