/* The inline helpers of the generated headers against the library: PDUs written through the
 * generated structs validate and convert to JSON with the values written, PDUs encoded by the
 * library read back through the generated accessors, and the sizes are the ones documented. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/msg.h"
#include "hako/pdu.h"
#include "hako/msgs/geometry_msgs/Twist.h"
#include "hako/msgs/hako_msgs/ExecutionUnitRuntimeStatus.h"
#include "hako/msgs/sensor_msgs/JointState.h"
#include "hako/msgs/sensor_msgs/PointCloud2.h"
#include "hako/msgs/std_msgs/Bool.h"

static hako_msg_registry_t *reg;

static int setup(void **state)
{
	(void)state;
	unsetenv("HAKO_MSG_PATH");
	return hako_msg_registry_create(&reg) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	hako_msg_registry_destroy(reg);
	return 0;
}

static const hako_msg_type_t *get(const char *full)
{
	const hako_msg_type_t *t = NULL;
	hako_error_t err;
	hako_error_clear(&err);
	assert_int_equal(hako_msg_registry_get(reg, full, &t, &err), 0);
	return t;
}

static void validate(const hako_msg_type_t *t, const void *pdu, size_t len)
{
	hako_error_t err;
	hako_error_clear(&err);
	int r = hako_pdu_validate(t, pdu, len, &err);
	if (r != 0) {
		print_error("%s: %s\n", t->full_name, err.message);
	}
	assert_int_equal(r, 0);
}

static char *to_json(const hako_msg_type_t *t, const void *pdu, size_t len)
{
	char *json = NULL;
	hako_error_t err;
	hako_error_clear(&err);
	int r = hako_pdu_to_json(t, pdu, len, 0, &json, &err);
	if (r != 0) {
		print_error("%s: %s\n", t->full_name, err.message);
	}
	assert_int_equal(r, 0);
	return json;
}

/* The inline _get of a fixed type accepts exactly what hako_pdu_validate accepts, on every
 * single-byte change of the meta header and on every length. */
static void test_fixed_get_agrees_with_validate(void **state)
{
	(void)state;
	hako_msg_registry_t *reg;
	const hako_msg_type_t *twist;
	assert_int_equal(hako_msg_registry_create(&reg), 0);
	assert_int_equal(hako_msg_registry_get(reg, "geometry_msgs/Twist", &twist, NULL), 0);
	uint8_t good[HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST + 8];
	memset(good, 0, sizeof(good));
	assert_int_equal(hako_pdu_geometry_msgs_Twist_init(good, sizeof(good)), 0);
	hako_pdu_geometry_msgs_Twist_base(good)->angular.z = 0.5;
	const Hako_Twist *t =
	    hako_pdu_geometry_msgs_Twist_get(good, HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST);
	assert_non_null(t);
	assert_true(t->angular.z == 0.5);
	int accepted = 0;
	for (size_t len = 0; len <= sizeof(good); len++) {
		for (int byte = -1; byte < (int)HAKO_PDU_META_SIZE; byte++) {
			for (int v = 0; v < 4; v++) {
				uint8_t pdu[sizeof(good)];
				memcpy(pdu, good, sizeof(pdu));
				if (byte >= 0) {
					static const uint8_t values[4] = {0x00, 0x01, 0x48, 0xff};
					if (pdu[byte] == values[v]) {
						continue;
					}
					pdu[byte] = values[v];
				} else if (v > 0) {
					continue;
				}
				int by_get = hako_pdu_geometry_msgs_Twist_get(pdu, len) != NULL;
				int by_validate = hako_pdu_validate(twist, pdu, len, NULL) == 0;
				if (by_get != by_validate) {
					fail_msg("len %zu, byte %d = 0x%02x: _get %d, validate %d",
					         len, byte, byte >= 0 ? pdu[byte] : 0, by_get,
					         by_validate);
				}
				accepted += by_get;
			}
		}
	}
	assert_true(accepted > 0); /* the epoch, flags and reserved bytes may take any value */
	hako_msg_registry_destroy(reg);
}

static void test_sizes(void **state)
{
	(void)state;
	assert_int_equal(sizeof(Hako_Twist), 48);
	assert_int_equal(HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST, 72);
	assert_int_equal(HAKO_PDU_HEAP_BUDGET_GEOMETRY_MSGS_TWIST, 0);
	assert_int_equal(HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST,
	                 hako_msg_pdu_fixed_size(get(HAKO_MSG_NAME_GEOMETRY_MSGS_TWIST)));
	/* bool is 4 bytes, as Hakoniwa's Hako_bool */
	assert_int_equal(sizeof(Hako_std_msgs_Bool), 4);
	assert_int_equal(HAKO_PDU_SIZE_STD_MSGS_BOOL, 32);
	/* variable arrays: the default heap budget on top of the fixed part */
	assert_int_equal(sizeof(Hako_hako_msgs_ExecutionUnitRuntimeStatus), 40);
	assert_int_equal(HAKO_PDU_SIZE_HAKO_MSGS_EXECUTIONUNITRUNTIMESTATUS, 24 + 40 + 4096);
}

static void test_fixed_type_written_through_struct(void **state)
{
	(void)state;
	uint8_t pdu[HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST];
	memset(pdu, 0xa5, sizeof(pdu));
	assert_int_equal(hako_pdu_geometry_msgs_Twist_init(pdu, sizeof(pdu)), 0);
	Hako_Twist *tw = hako_pdu_geometry_msgs_Twist_base(pdu);
	tw->linear.x = 1.5;
	tw->linear.z = -2.0;
	tw->angular.y = 0.25;
	const hako_msg_type_t *t = get("geometry_msgs/Twist");
	validate(t, pdu, sizeof(pdu));
	assert_int_equal(hako_pdu_classify(pdu, sizeof(pdu)), HAKO_PDU_VALID);
	hako_pdu_meta_t meta;
	assert_int_equal(hako_pdu_meta_read(pdu, sizeof(pdu), &meta), 0);
	assert_int_equal(meta.heap_off, 72);
	assert_int_equal(meta.total_size, 72);
	assert_int_equal(meta.epoch, 0);

	char *json = to_json(t, pdu, sizeof(pdu));
	assert_non_null(strstr(json, "1.5"));
	assert_non_null(strstr(json, "0.25"));
	assert_non_null(strstr(json, "-2"));
	free(json);

	/* and the other way: JSON encoded by the library, read through the struct */
	static const char in[] = "{\"linear\": {\"x\": 3, \"y\": 4}, \"angular\": {\"z\": -7.5}}";
	size_t len = 0;
	hako_error_t err;
	hako_error_clear(&err);
	memset(pdu, 0, sizeof(pdu));
	assert_int_equal(hako_pdu_from_json(t, in, strlen(in), pdu, sizeof(pdu), &len, &err), 0);
	assert_int_equal(len, HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST);
	tw = hako_pdu_geometry_msgs_Twist_base(pdu);
	assert_true(tw->linear.x == 3.0 && tw->linear.y == 4.0 && tw->angular.z == -7.5);

	assert_int_equal(hako_pdu_geometry_msgs_Twist_init(pdu, 71), HAKO_ETOOBIG);
	assert_int_equal(hako_pdu_geometry_msgs_Twist_init(NULL, 72), HAKO_EINVAL);
}

static void test_varray_written_through_helpers(void **state)
{
	(void)state;
	const hako_msg_type_t *t = get("hako_msgs/ExecutionUnitRuntimeStatus");
	static uint8_t pdu[HAKO_PDU_SIZE_HAKO_MSGS_EXECUTIONUNITRUNTIMESTATUS];
	hako_pdu_writer_t w;
	assert_int_equal(
	    hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_writer_init(&w, pdu, sizeof(pdu)), 0);
	Hako_ExecutionUnitRuntimeStatus *s =
	    hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_base(pdu);
	s->config_hash = 0xdeadbeef;
	s->unit_count = 3;
	uint8_t *status = hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_status_alloc(&w, s, 3);
	uint8_t *epoch = hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_epoch_alloc(&w, s, 3);
	uint8_t *curr =
	    hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_curr_owner_node_id_alloc(&w, s, 3);
	uint8_t *next =
	    hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_next_owner_node_id_alloc(&w, s, 0);
	assert_non_null(status);
	assert_non_null(epoch);
	assert_non_null(curr);
	for (int i = 0; i < 3; i++) {
		status[i] = (uint8_t)i;
		epoch[i] = (uint8_t)(10 + i);
		curr[i] = (uint8_t)(20 + i);
	}
	(void)next;
	size_t len = 0;
	assert_int_equal(hako_pdu_writer_finish(&w, &len), 0);
	assert_int_equal(len, 24 + 40 + 9);
	validate(t, pdu, len);

	uint32_t n = 99;
	const uint8_t *e = hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_epoch(pdu, len, &n);
	assert_non_null(e);
	assert_int_equal(n, 3);
	assert_int_equal(e[2], 12);
	const uint8_t *nx =
	    hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_next_owner_node_id(pdu, len, &n);
	assert_non_null(nx);
	assert_int_equal(n, 0);

	char *json = to_json(t, pdu, len);
	assert_non_null(strstr(json, "3735928559")); /* 0xdeadbeef */
	assert_non_null(strstr(json, "22"));
	free(json);

	/* A reference that lies is refused by the accessor. */
	s->epoch.len = 1000;
	n = 99;
	assert_null(hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_epoch(pdu, len, &n));
	assert_int_equal(n, 0);
	/* A PDU shorter than its base. */
	assert_null(hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_status(pdu, 30, &n));
	assert_int_equal(n, 0);
}

static void test_writer_too_small(void **state)
{
	(void)state;
	uint8_t pdu[24 + 40 + 4];
	hako_pdu_writer_t w;
	assert_int_equal(
	    hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_writer_init(&w, pdu, sizeof(pdu)), 0);
	Hako_ExecutionUnitRuntimeStatus *s =
	    hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_base(pdu);
	assert_null(hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_status_alloc(&w, s, 8));
	size_t len = 0;
	assert_int_equal(hako_pdu_writer_finish(&w, &len), HAKO_ETOOBIG);
	assert_int_equal(w.needed, 24 + 40 + 8);

	assert_int_equal(hako_pdu_hako_msgs_ExecutionUnitRuntimeStatus_writer_init(&w, pdu, 40),
	                 HAKO_ETOOBIG);
}

/* string[] and struct arrays: JSON encoded by the library, read through the accessors. */
static void test_library_pdu_read_through_accessors(void **state)
{
	(void)state;
	static uint8_t pdu[8192];
	size_t len = 0;
	hako_error_t err;
	hako_error_clear(&err);
	static const char js[] =
	    "{\"name\": [\"shoulder\", \"elbow\"], \"position\": [0.5, -1.25], \"effort\": []}";
	const hako_msg_type_t *t = get("sensor_msgs/JointState");
	assert_int_equal(hako_pdu_from_json(t, js, strlen(js), pdu, sizeof(pdu), &len, &err), 0);
	uint32_t n = 0;
	const hako_pdu_string_t *names = hako_pdu_sensor_msgs_JointState_name(pdu, len, &n);
	assert_non_null(names);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], "shoulder");
	assert_string_equal(names[1], "elbow");
	const double *pos = hako_pdu_sensor_msgs_JointState_position(pdu, len, &n);
	assert_int_equal(n, 2);
	double p1;
	memcpy(&p1, &pos[1], sizeof(p1)); /* the heap is packed: no alignment promised */
	assert_true(p1 == -1.25);
	assert_non_null(hako_pdu_sensor_msgs_JointState_effort(pdu, len, &n));
	assert_int_equal(n, 0);

	static const char pc[] =
	    "{\"height\": 1, \"width\": 2, \"fields\": [{\"name\": \"x\", \"offset\": 0, "
	    "\"datatype\": 7, \"count\": 1}, {\"name\": \"y\", \"offset\": 4, \"datatype\": 7, "
	    "\"count\": 1}], \"point_step\": 8, \"row_step\": 16, \"data\": [1, 2, 3], "
	    "\"is_dense\": true}";
	t = get("sensor_msgs/PointCloud2");
	assert_int_equal(hako_pdu_from_json(t, pc, strlen(pc), pdu, sizeof(pdu), &len, &err), 0);
	const Hako_sensor_msgs_PointField *f =
	    hako_pdu_sensor_msgs_PointCloud2_fields(pdu, len, &n);
	assert_non_null(f);
	assert_int_equal(n, 2);
	Hako_sensor_msgs_PointField f1;
	memcpy(&f1, &f[1], sizeof(f1));
	assert_string_equal(f1.name, "y");
	assert_int_equal(f1.offset, 4);
	const uint8_t *d = hako_pdu_sensor_msgs_PointCloud2_data(pdu, len, &n);
	assert_int_equal(n, 3);
	assert_int_equal(d[2], 3);
	const Hako_sensor_msgs_PointCloud2 *base =
	    hako_pdu_sensor_msgs_PointCloud2_base((void *)pdu);
	assert_int_equal(base->is_dense, 1);
	assert_int_equal(base->width, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sizes),
	    cmocka_unit_test(test_fixed_get_agrees_with_validate),
	    cmocka_unit_test(test_fixed_type_written_through_struct),
	    cmocka_unit_test(test_varray_written_through_helpers),
	    cmocka_unit_test(test_writer_too_small),
	    cmocka_unit_test(test_library_pdu_read_through_accessors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
