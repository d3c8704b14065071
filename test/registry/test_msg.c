/* Types: the .msg parser (data-driven cases), the layout engine, the registry's search path and
 * the built-in packages.
 *
 * A case is msg_cases/<name>/input.msg, defined as case/Input with the case folder on the search
 * path (so it may hold package folders of its own), and expected.txt: either the exact error
 * line with paths relative to the case folder ("." for the folder itself), or "ok", a line for
 * the type and one per field: name, kind (or the nested type), form, offset, size, count. */
#define _XOPEN_SOURCE 700

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hako/msg.h"
#include "hako_cases.h"

#ifndef HAKO_MSG_CASES
#define HAKO_MSG_CASES "msg_cases"
#endif
#ifndef HAKO_MSG_BUILTIN_DIR
#define HAKO_MSG_BUILTIN_DIR "registry/msg"
#endif

#define MIN_CASES 30

static const char *cases_dir = HAKO_MSG_CASES;

/* ---- helpers ---- */

static void write_file(const char *dir, const char *rel, const char *text)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	/* create the folders on the way */
	for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void make_tmpdir(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/hako_test_msg_%d_XXXXXX", (int)getpid());
	assert_non_null(mkdtemp(buf));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *form_name(hako_msg_form_t form)
{
	switch (form) {
	case HAKO_MSG_SINGLE: return "single";
	case HAKO_MSG_ARRAY: return "array";
	case HAKO_MSG_VARRAY: return "varray";
	}
	return "?";
}

static void format_type(const hako_msg_type_t *t, char *buf, size_t len)
{
	buf[0] = '\0';
	htc_append(buf, len, "ok\ntype %s size=%u align=%u varray=%d\n", t->full_name,
	           (unsigned)t->size, (unsigned)t->align, t->has_varray);
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		htc_append(
		    buf, len, "%s %s %s %u %u %u\n", f->name,
		    f->kind == HAKO_MSG_STRUCT ? f->type->full_name : hako_msg_kind_name(f->kind),
		    form_name(f->form), (unsigned)f->offset, (unsigned)f->size, (unsigned)f->count);
	}
}

static hako_msg_registry_t *new_registry(void)
{
	hako_msg_registry_t *reg = NULL;
	assert_int_equal(hako_msg_registry_create(&reg), 0);
	assert_non_null(reg);
	return reg;
}

static const hako_msg_type_t *get(hako_msg_registry_t *reg, const char *full)
{
	const hako_msg_type_t *t = NULL;
	hako_error_t err;
	int rc = hako_msg_registry_get(reg, full, &t, &err);
	if (rc != 0) {
		char msg[1200];
		print_error("%s: %s\n", full, hako_error_format(&err, msg, sizeof(msg)));
	}
	assert_int_equal(rc, 0);
	assert_non_null(t);
	return t;
}

static const hako_msg_field_t *field(const hako_msg_type_t *t, const char *name)
{
	for (size_t i = 0; i < t->field_count; i++) {
		if (strcmp(t->fields[i].name, name) == 0) {
			return &t->fields[i];
		}
	}
	print_error("%s has no field %s\n", t->full_name, name);
	fail();
	return NULL;
}

static void check_field(const hako_msg_type_t *t, const char *name, hako_msg_kind_t kind,
                        hako_msg_form_t form, uint32_t offset, uint32_t size)
{
	const hako_msg_field_t *f = field(t, name);
	if (f->kind != kind || f->form != form || f->offset != offset || f->size != size) {
		print_error("%s.%s: kind %d form %d offset %u size %u, expected %d %d %u %u\n",
		            t->full_name, name, f->kind, f->form, (unsigned)f->offset,
		            (unsigned)f->size, kind, form, (unsigned)offset, (unsigned)size);
		fail();
	}
}

/* ---- data-driven cases ---- */

static void run_case(const char *case_dir, const char *input, char *actual, size_t len, void *arg)
{
	(void)arg;
	char *text = htc_read_all(input, NULL);
	assert_non_null(text);

	hako_msg_registry_t *reg = new_registry();
	assert_int_equal(hako_msg_registry_add_path(reg, case_dir), 0);
	const hako_msg_type_t *t = NULL;
	hako_error_t err;
	int rc = hako_msg_registry_add_text(reg, "case", "Input", text, input, &t, &err);
	if (rc == 0) {
		assert_non_null(t);
		assert_string_equal(t->path, input);
		format_type(t, actual, len);
	} else {
		assert_null(t);
		assert_int_equal(rc, HAKO_ECONFIG);
		hako_error_format(&err, actual, len);
	}
	hako_msg_registry_destroy(reg);
	free(text);
}

/* ---- layout ---- */

static void test_layout_twist(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = new_registry();
	const hako_msg_type_t *t = get(reg, "geometry_msgs/Twist");
	const hako_msg_type_t *v = get(reg, "geometry_msgs/Vector3");
	assert_int_equal(t->size, 48);
	assert_int_equal(t->align, 8);
	assert_int_equal(t->has_varray, 0);
	assert_int_equal(t->field_count, 2);
	check_field(t, "linear", HAKO_MSG_STRUCT, HAKO_MSG_SINGLE, 0, 24);
	check_field(t, "angular", HAKO_MSG_STRUCT, HAKO_MSG_SINGLE, 24, 24);
	assert_ptr_equal(field(t, "linear")->type, v);
	assert_int_equal(field(t, "linear")->elem_size, 24);
	assert_int_equal(field(t, "linear")->elem_align, 8);
	assert_int_equal(field(t, "angular")->line, 3); /* after the comment line */
	check_field(v, "z", HAKO_MSG_FLOAT64, HAKO_MSG_SINGLE, 16, 8);
	assert_null(field(v, "z")->type);
	assert_int_equal(hako_msg_pdu_fixed_size(t), 72);
	assert_string_equal(t->pkg, "geometry_msgs");
	assert_string_equal(t->name, "Twist");
	assert_string_equal(t->path, "<builtin>/geometry_msgs/Twist.msg");
	hako_msg_registry_destroy(reg);
}

/* Header: stamp (Time, 8) + frame_id (char[128]) = 136, 4-aligned. PointField: name 0..128,
 * offset 128, datatype 132, count 136 (after 3 bytes of padding), size 140. */
static void test_layout_pointcloud2(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = new_registry();
	const hako_msg_type_t *h = get(reg, "std_msgs/Header");
	assert_int_equal(h->size, 136);
	assert_int_equal(h->align, 4);
	check_field(h, "stamp", HAKO_MSG_STRUCT, HAKO_MSG_SINGLE, 0, 8);
	check_field(h, "frame_id", HAKO_MSG_STRING, HAKO_MSG_SINGLE, 8, 128);
	assert_int_equal(field(h, "frame_id")->elem_align, 1);

	const hako_msg_type_t *pf = get(reg, "sensor_msgs/PointField");
	check_field(pf, "name", HAKO_MSG_STRING, HAKO_MSG_SINGLE, 0, 128);
	check_field(pf, "offset", HAKO_MSG_UINT32, HAKO_MSG_SINGLE, 128, 4);
	check_field(pf, "datatype", HAKO_MSG_UINT8, HAKO_MSG_SINGLE, 132, 1);
	check_field(pf, "count", HAKO_MSG_UINT32, HAKO_MSG_SINGLE, 136, 4);
	assert_int_equal(pf->size, 140);
	assert_int_equal(pf->align, 4);

	const hako_msg_type_t *t = get(reg, "sensor_msgs/PointCloud2");
	check_field(t, "header", HAKO_MSG_STRUCT, HAKO_MSG_SINGLE, 0, 136);
	check_field(t, "height", HAKO_MSG_UINT32, HAKO_MSG_SINGLE, 136, 4);
	check_field(t, "width", HAKO_MSG_UINT32, HAKO_MSG_SINGLE, 140, 4);
	check_field(t, "fields", HAKO_MSG_STRUCT, HAKO_MSG_VARRAY, 144, 8);
	check_field(t, "is_bigendian", HAKO_MSG_BOOL, HAKO_MSG_SINGLE, 152, 4);
	check_field(t, "point_step", HAKO_MSG_UINT32, HAKO_MSG_SINGLE, 156, 4);
	check_field(t, "row_step", HAKO_MSG_UINT32, HAKO_MSG_SINGLE, 160, 4);
	check_field(t, "data", HAKO_MSG_UINT8, HAKO_MSG_VARRAY, 164, 8);
	check_field(t, "is_dense", HAKO_MSG_BOOL, HAKO_MSG_SINGLE, 172, 4);
	assert_int_equal(t->size, 176);
	assert_int_equal(t->align, 4);
	assert_int_equal(t->has_varray, 1);
	assert_ptr_equal(field(t, "fields")->type, pf);
	assert_int_equal(field(t, "fields")->elem_size, 140);
	assert_int_equal(field(t, "fields")->count, 0);
	assert_int_equal(field(t, "data")->elem_size, 1);
	assert_int_equal(hako_msg_pdu_fixed_size(t), 24 + 176);
	hako_msg_registry_destroy(reg);
}

static void test_layout_hako_msgs(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = new_registry();
	const hako_msg_type_t *t = get(reg, "hako_msgs/ExecutionUnitRuntimeStatus");
	check_field(t, "config_hash", HAKO_MSG_UINT32, HAKO_MSG_SINGLE, 0, 4);
	check_field(t, "unit_count", HAKO_MSG_UINT16, HAKO_MSG_SINGLE, 4, 2);
	check_field(t, "status", HAKO_MSG_UINT8, HAKO_MSG_VARRAY, 8, 8);
	check_field(t, "epoch", HAKO_MSG_UINT8, HAKO_MSG_VARRAY, 16, 8);
	check_field(t, "curr_owner_node_id", HAKO_MSG_UINT8, HAKO_MSG_VARRAY, 24, 8);
	check_field(t, "next_owner_node_id", HAKO_MSG_UINT8, HAKO_MSG_VARRAY, 32, 8);
	assert_int_equal(t->size, 40);
	assert_int_equal(t->align, 4);
	assert_int_equal(hako_msg_pdu_fixed_size(t), 64);

	t = get(reg, "hako_msgs/ExecutionUnitRuntimeContext");
	check_field(t, "epoch", HAKO_MSG_UINT8, HAKO_MSG_SINGLE, 4, 1);
	check_field(t, "owner_id", HAKO_MSG_UINT8, HAKO_MSG_SINGLE, 5, 1);
	check_field(t, "context", HAKO_MSG_UINT8, HAKO_MSG_VARRAY, 8, 8);
	assert_int_equal(t->size, 16);

	t = get(reg, "hako_msgs/ExecutionUnitRuntimeEpoch");
	assert_int_equal(t->size, 8);
	t = get(reg, "hako_msgs/ExecutionUnitRuntimeNode");
	assert_int_equal(t->size, 4);
	assert_int_equal(hako_msg_pdu_fixed_size(t), 32); /* base rounded up to 8 */

	t = get(reg, "hako_mavlink_msgs/HakoHilActuatorControls");
	check_field(t, "time_usec", HAKO_MSG_UINT64, HAKO_MSG_SINGLE, 0, 8);
	check_field(t, "controls", HAKO_MSG_FLOAT32, HAKO_MSG_ARRAY, 8, 64);
	assert_int_equal(field(t, "controls")->count, 16);
	assert_int_equal(field(t, "controls")->elem_size, 4);
	check_field(t, "mode", HAKO_MSG_UINT8, HAKO_MSG_SINGLE, 72, 1);
	check_field(t, "flags", HAKO_MSG_UINT64, HAKO_MSG_SINGLE, 80, 8);
	assert_int_equal(t->size, 88);
	assert_int_equal(hako_msg_pdu_fixed_size(t), 112);

	t = get(reg, "hako_msgs/DroneStatus");
	check_field(t, "flight_mode", HAKO_MSG_INT32, HAKO_MSG_SINGLE, 0, 4);
	check_field(t, "internal_state", HAKO_MSG_INT32, HAKO_MSG_SINGLE, 4, 4);
	check_field(t, "propeller_wind", HAKO_MSG_STRUCT, HAKO_MSG_SINGLE, 8, 24);
	check_field(t, "collided_counts", HAKO_MSG_INT32, HAKO_MSG_SINGLE, 32, 4);
	assert_int_equal(t->size, 40);
	assert_int_equal(hako_msg_pdu_fixed_size(t), 64);

	t = get(reg, "hako_msgs/GameControllerOperation");
	check_field(t, "axis", HAKO_MSG_FLOAT64, HAKO_MSG_ARRAY, 0, 48);
	check_field(t, "button", HAKO_MSG_BOOL, HAKO_MSG_ARRAY, 48, 60);
	assert_int_equal(t->size, 112); /* 108, padded to the 8 of float64 */
	assert_int_equal(hako_msg_pdu_fixed_size(t), 136);

	t = get(reg, "hako_msgs/SimTime");
	assert_int_equal(t->size, 8);
	hako_msg_registry_destroy(reg);
}

/* The same types written as C structs: gcc's offsetof and sizeof against the layout engine. */
typedef struct {
	int32_t length;
	int32_t offset;
} c_varray;
typedef struct {
	int32_t sec;
	uint32_t nanosec;
} c_time;
typedef struct {
	c_time stamp;
	char frame_id[128];
} c_header;
typedef struct {
	double x, y, z;
} c_vector3;
typedef struct {
	double x, y, z, w;
} c_quaternion;
typedef struct {
	c_vector3 position; /* Point has the same layout */
	c_quaternion orientation;
} c_pose;
typedef struct {
	c_pose pose;
	double covariance[36];
} c_pose_cov;
typedef struct {
	c_vector3 linear, angular;
} c_twist;
typedef struct {
	c_twist twist;
	double covariance[36];
} c_twist_cov;
typedef struct {
	c_header header;
	char child_frame_id[128];
	c_pose_cov pose;
	c_twist_cov twist;
} c_odometry;
typedef struct {
	c_header header;
	c_quaternion orientation;
	double orientation_covariance[9];
	c_vector3 angular_velocity;
	double angular_velocity_covariance[9];
	c_vector3 linear_acceleration;
	double linear_acceleration_covariance[9];
} c_imu;
typedef struct {
	int8_t status;
	uint16_t service;
} c_nav_sat_status;
typedef struct {
	c_header header;
	c_nav_sat_status status;
	double latitude, longitude, altitude;
	double position_covariance[9];
	uint8_t position_covariance_type;
} c_nav_sat_fix;
typedef struct {
	c_header header;
	uint32_t height, width;
	char encoding[128];
	uint8_t is_bigendian;
	uint32_t step;
	c_varray data;
} c_image;
typedef struct {
	c_header header;
	float angle_min, angle_max, angle_increment, time_increment, scan_time, range_min,
	    range_max;
	c_varray ranges, intensities;
} c_laser_scan;
typedef struct {
	int32_t flight_mode;
	int32_t internal_state;
	c_vector3 propeller_wind;
	int32_t collided_counts;
} c_drone_status;
typedef struct {
	double axis[6];
	int32_t button[15];
} c_game_controller;
typedef struct {
	c_varray layout_dim;
	uint32_t layout_data_offset;
	c_varray data;
} c_multi_array; /* MultiArrayLayout inlined: same offsets, it is 4-aligned */

#define CHECK_C(t, cstruct, member, name)                                                          \
	do {                                                                                       \
		const hako_msg_field_t *f_ = field((t), (name));                                   \
		assert_int_equal(f_->offset, offsetof(cstruct, member));                           \
		assert_int_equal(f_->size, sizeof(((cstruct *)0)->member));                        \
	} while (0)

static void test_layout_matches_c_structs(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = new_registry();

	const hako_msg_type_t *t = get(reg, "nav_msgs/Odometry");
	assert_int_equal(t->size, sizeof(c_odometry));
	assert_int_equal(t->align, _Alignof(c_odometry));
	CHECK_C(t, c_odometry, header, "header");
	CHECK_C(t, c_odometry, child_frame_id, "child_frame_id");
	CHECK_C(t, c_odometry, pose, "pose");
	CHECK_C(t, c_odometry, twist, "twist");
	const hako_msg_type_t *pc = field(t, "pose")->type;
	assert_int_equal(pc->size, sizeof(c_pose_cov));
	CHECK_C(pc, c_pose_cov, covariance, "covariance");
	assert_int_equal(field(pc, "covariance")->count, 36);

	t = get(reg, "sensor_msgs/Imu");
	assert_int_equal(t->size, sizeof(c_imu));
	CHECK_C(t, c_imu, orientation, "orientation");
	CHECK_C(t, c_imu, orientation_covariance, "orientation_covariance");
	CHECK_C(t, c_imu, angular_velocity, "angular_velocity");
	CHECK_C(t, c_imu, angular_velocity_covariance, "angular_velocity_covariance");
	CHECK_C(t, c_imu, linear_acceleration, "linear_acceleration");
	CHECK_C(t, c_imu, linear_acceleration_covariance, "linear_acceleration_covariance");

	t = get(reg, "sensor_msgs/NavSatFix");
	assert_int_equal(t->size, sizeof(c_nav_sat_fix));
	assert_int_equal(field(t, "status")->type->size, sizeof(c_nav_sat_status));
	assert_int_equal(field(t, "status")->type->align, _Alignof(c_nav_sat_status));
	CHECK_C(t, c_nav_sat_fix, status, "status");
	CHECK_C(t, c_nav_sat_fix, latitude, "latitude");
	CHECK_C(t, c_nav_sat_fix, position_covariance, "position_covariance");
	CHECK_C(t, c_nav_sat_fix, position_covariance_type, "position_covariance_type");

	t = get(reg, "sensor_msgs/Image");
	assert_int_equal(t->size, sizeof(c_image));
	CHECK_C(t, c_image, encoding, "encoding");
	CHECK_C(t, c_image, is_bigendian, "is_bigendian");
	CHECK_C(t, c_image, step, "step");
	CHECK_C(t, c_image, data, "data");

	t = get(reg, "sensor_msgs/LaserScan");
	assert_int_equal(t->size, sizeof(c_laser_scan));
	CHECK_C(t, c_laser_scan, range_max, "range_max");
	CHECK_C(t, c_laser_scan, ranges, "ranges");
	CHECK_C(t, c_laser_scan, intensities, "intensities");

	t = get(reg, "hako_msgs/DroneStatus");
	assert_int_equal(t->size, sizeof(c_drone_status));
	CHECK_C(t, c_drone_status, flight_mode, "flight_mode");
	CHECK_C(t, c_drone_status, propeller_wind, "propeller_wind");
	CHECK_C(t, c_drone_status, collided_counts, "collided_counts");

	t = get(reg, "hako_msgs/GameControllerOperation");
	assert_int_equal(t->size, sizeof(c_game_controller));
	CHECK_C(t, c_game_controller, button, "button");

	t = get(reg, "std_msgs/Float64MultiArray");
	assert_int_equal(t->size, sizeof(c_multi_array));
	assert_int_equal(field(t, "data")->offset, offsetof(c_multi_array, data));
	assert_int_equal(field(t, "layout")->size, offsetof(c_multi_array, data));
	hako_msg_registry_destroy(reg);
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(hako_msg_kind_name(HAKO_MSG_BOOL), "bool");
	assert_string_equal(hako_msg_kind_name(HAKO_MSG_UINT64), "uint64");
	assert_string_equal(hako_msg_kind_name(HAKO_MSG_FLOAT32), "float32");
	assert_string_equal(hako_msg_kind_name(HAKO_MSG_STRING), "string");
	assert_string_equal(hako_msg_kind_name(HAKO_MSG_STRUCT), "struct");
	assert_string_equal(hako_msg_kind_name((hako_msg_kind_t)99), "unknown");
	assert_int_equal(hako_msg_pdu_fixed_size(NULL), 0);
}

/* ---- built-in packages ---- */

static const char *const required_builtins[] = {
    "builtin_interfaces/Duration",
    "builtin_interfaces/Time",
    "geometry_msgs/Accel",
    "geometry_msgs/AccelStamped",
    "geometry_msgs/Point",
    "geometry_msgs/Point32",
    "geometry_msgs/PointStamped",
    "geometry_msgs/Pose",
    "geometry_msgs/PoseStamped",
    "geometry_msgs/PoseWithCovariance",
    "geometry_msgs/Quaternion",
    "geometry_msgs/QuaternionStamped",
    "geometry_msgs/Transform",
    "geometry_msgs/TransformStamped",
    "geometry_msgs/Twist",
    "geometry_msgs/TwistStamped",
    "geometry_msgs/TwistWithCovariance",
    "geometry_msgs/Vector3",
    "geometry_msgs/Vector3Stamped",
    "geometry_msgs/Wrench",
    "geometry_msgs/WrenchStamped",
    "hako_mavlink_msgs/HakoHilActuatorControls",
    "hako_msgs/DroneStatus",
    "hako_msgs/ExecutionUnitRuntimeContext",
    "hako_msgs/ExecutionUnitRuntimeEpoch",
    "hako_msgs/ExecutionUnitRuntimeNode",
    "hako_msgs/ExecutionUnitRuntimeStatus",
    "hako_msgs/GameControllerOperation",
    "hako_msgs/SimTime",
    "nav_msgs/Odometry",
    "sensor_msgs/CompressedImage",
    "sensor_msgs/Image",
    "sensor_msgs/Imu",
    "sensor_msgs/JointState",
    "sensor_msgs/LaserScan",
    "sensor_msgs/NavSatFix",
    "sensor_msgs/NavSatStatus",
    "sensor_msgs/PointCloud2",
    "sensor_msgs/PointField",
    "std_msgs/Bool",
    "std_msgs/Byte",
    "std_msgs/ByteMultiArray",
    "std_msgs/Char",
    "std_msgs/ColorRGBA",
    "std_msgs/Float32",
    "std_msgs/Float32MultiArray",
    "std_msgs/Float64",
    "std_msgs/Float64MultiArray",
    "std_msgs/Header",
    "std_msgs/Int16",
    "std_msgs/Int16MultiArray",
    "std_msgs/Int32",
    "std_msgs/Int32MultiArray",
    "std_msgs/Int64",
    "std_msgs/Int64MultiArray",
    "std_msgs/Int8",
    "std_msgs/Int8MultiArray",
    "std_msgs/MultiArrayDimension",
    "std_msgs/MultiArrayLayout",
    "std_msgs/String",
    "std_msgs/UInt16",
    "std_msgs/UInt16MultiArray",
    "std_msgs/UInt32",
    "std_msgs/UInt32MultiArray",
    "std_msgs/UInt64",
    "std_msgs/UInt64MultiArray",
    "std_msgs/UInt8",
    "std_msgs/UInt8MultiArray",
};

static void test_builtins_all_load(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = new_registry();
	size_t n = hako_msg_builtin_count();
	assert_true(n >= sizeof(required_builtins) / sizeof(required_builtins[0]));
	for (size_t i = 0; i < n; i++) {
		const char *pkg = NULL;
		const char *name = NULL;
		char full[HAKO_MSG_FULL_MAX];
		hako_msg_builtin_at(i, &pkg, &name);
		assert_non_null(pkg);
		assert_non_null(name);
		snprintf(full, sizeof(full), "%s/%s", pkg, name);
		const hako_msg_type_t *t = get(reg, full);
		assert_string_equal(t->full_name, full);
		assert_true(t->field_count > 0);
		assert_true(t->size > 0);
		/* every field within the struct, in order, aligned */
		uint32_t end = 0;
		for (size_t j = 0; j < t->field_count; j++) {
			const hako_msg_field_t *f = &t->fields[j];
			uint32_t align = f->form == HAKO_MSG_VARRAY ? 4 : f->elem_align;
			assert_true(f->offset >= end);
			assert_int_equal(f->offset % align, 0);
			assert_true(align <= t->align);
			end = f->offset + f->size;
		}
		assert_true(end <= t->size);
		assert_int_equal(t->size % t->align, 0);
		assert_non_null(hako_msg_builtin_text(pkg, name));
	}
	hako_msg_registry_destroy(reg);
}

static void test_builtins_required_present(void **state)
{
	(void)state;
	size_t want = sizeof(required_builtins) / sizeof(required_builtins[0]);
	for (size_t i = 0; i < want; i++) {
		char pkg[HAKO_MSG_NAME_MAX];
		const char *slash = strchr(required_builtins[i], '/');
		snprintf(pkg, sizeof(pkg), "%.*s", (int)(slash - required_builtins[i]),
		         required_builtins[i]);
		if (hako_msg_builtin_text(pkg, slash + 1) == NULL) {
			print_error("missing built-in %s\n", required_builtins[i]);
			fail();
		}
	}
	/* no empty message, as std_msgs/Empty would be: the generator could not write it in C */
	assert_null(hako_msg_builtin_text("std_msgs", "Empty"));
	assert_null(hako_msg_builtin_text("std_msgs", NULL));
	assert_null(hako_msg_builtin_text(NULL, "Bool"));
	assert_null(hako_msg_builtin_text("geometry_msgs", "Twis"));
}

static void test_builtins_sorted_and_same_as_files(void **state)
{
	(void)state;
	size_t n = hako_msg_builtin_count();
	const char *prev_pkg = "";
	const char *prev_name = "";
	for (size_t i = 0; i < n; i++) {
		const char *pkg;
		const char *name;
		hako_msg_builtin_at(i, &pkg, &name);
		int d = strcmp(prev_pkg, pkg);
		assert_true(d < 0 || (d == 0 && strcmp(prev_name, name) < 0));
		prev_pkg = pkg;
		prev_name = name;

		char path[1024];
		snprintf(path, sizeof(path), "%s/%s/%s.msg", HAKO_MSG_BUILTIN_DIR, pkg, name);
		char *file = htc_read_all(path, NULL);
		assert_non_null(file);
		assert_string_equal(hako_msg_builtin_text(pkg, name), file);
		assert_true(file[0] == '#'); /* each starts with a line saying what it is */
		free(file);
	}
	const char *pkg = "x";
	const char *name = "y";
	hako_msg_builtin_at(n, &pkg, &name);
	assert_null(pkg);
	assert_null(name);
	hako_msg_builtin_at(0, NULL, NULL);
}

static int in_list(char **names, size_t count, const char *name)
{
	for (size_t i = 0; i < count; i++) {
		if (strcmp(names[i], name) == 0) {
			return 1;
		}
	}
	return 0;
}

static void test_list_builtins(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = new_registry();
	char **names = NULL;
	size_t count = 0;
	assert_int_equal(hako_msg_registry_list(reg, &names, &count), 0);
	assert_int_equal(count, hako_msg_builtin_count());
	for (size_t i = 0; i < hako_msg_builtin_count(); i++) {
		const char *pkg;
		const char *name;
		char full[HAKO_MSG_FULL_MAX];
		hako_msg_builtin_at(i, &pkg, &name);
		snprintf(full, sizeof(full), "%s/%s", pkg, name);
		assert_true(in_list(names, count, full));
	}
	for (size_t i = 1; i < count; i++) {
		assert_true(strcmp(names[i - 1], names[i]) < 0);
	}
	hako_msg_names_free(names, count);
	assert_int_equal(hako_msg_registry_list(reg, NULL, &count), HAKO_EINVAL);
	assert_int_equal(hako_msg_registry_list(NULL, &names, &count), HAKO_EINVAL);
	assert_null(names);
	hako_msg_names_free(NULL, 0);
	hako_msg_registry_destroy(reg);
}

/* ---- search path ---- */

static void test_user_package_add_path(void **state)
{
	(void)state;
	char dir[256];
	make_tmpdir(dir, sizeof(dir));
	write_file(dir, "robot_msgs/Motor.msg",
	           "# a user type nesting built-in ones\n"
	           "std_msgs/Header header\n"
	           "geometry_msgs/Vector3 thrust\n"
	           "float32[4] duty\n"
	           "Gear[] gears # same package\n");
	write_file(dir, "robot_msgs/Gear.msg", "uint8 teeth\nfloat64 ratio\n");
	write_file(dir, "robot_msgs/README.txt", "not a type\n");
	write_file(dir, "robot_msgs/bad-name.msg", "int32 x\n");

	hako_msg_registry_t *reg = new_registry();
	const hako_msg_type_t *t = NULL;
	hako_error_t err;
	assert_int_equal(hako_msg_registry_get(reg, "robot_msgs/Motor", &t, &err), HAKO_ENOENT);
	assert_null(t);
	assert_int_equal(hako_msg_registry_add_path(reg, dir), 0);
	t = get(reg, "robot_msgs/Motor");
	char path[512];
	snprintf(path, sizeof(path), "%s/robot_msgs/Motor.msg", dir);
	assert_string_equal(t->path, path);
	check_field(t, "header", HAKO_MSG_STRUCT, HAKO_MSG_SINGLE, 0, 136);
	check_field(t, "thrust", HAKO_MSG_STRUCT, HAKO_MSG_SINGLE, 136, 24);
	check_field(t, "duty", HAKO_MSG_FLOAT32, HAKO_MSG_ARRAY, 160, 16);
	check_field(t, "gears", HAKO_MSG_STRUCT, HAKO_MSG_VARRAY, 176, 8);
	assert_int_equal(t->size, 184);
	assert_int_equal(field(t, "gears")->elem_size, 16);
	assert_ptr_equal(field(t, "thrust")->type, get(reg, "geometry_msgs/Vector3"));
	assert_ptr_equal(field(t, "gears")->type, get(reg, "robot_msgs/Gear"));
	assert_int_equal(field(t, "gears")->line, 5);

	char **names = NULL;
	size_t count = 0;
	assert_int_equal(hako_msg_registry_list(reg, &names, &count), 0);
	assert_int_equal(count, hako_msg_builtin_count() + 2);
	assert_true(in_list(names, count, "robot_msgs/Motor"));
	assert_true(in_list(names, count, "robot_msgs/Gear"));
	assert_true(in_list(names, count, "nav_msgs/Odometry"));
	hako_msg_names_free(names, count);
	hako_msg_registry_destroy(reg);
	rm_tree(dir);
}

static void test_ros_layout_and_env_path(void **state)
{
	(void)state;
	char a[256];
	char b[256];
	make_tmpdir(a, sizeof(a));
	make_tmpdir(b, sizeof(b));
	write_file(a, "ros_pkg/msg/Sample.msg", "int16 value\n");
	write_file(b, "other_pkg/Thing.msg", "ros_pkg/Sample s\nint64 t\n");
	write_file(b, "ros_pkg/msg/Sample.msg", "int64 shadowed\n"); /* a comes first */

	char env[600];
	snprintf(env, sizeof(env), ":%s::%s/:", a, b);
	setenv("HAKO_MSG_PATH", env, 1);
	hako_msg_registry_t *reg = new_registry();
	unsetenv("HAKO_MSG_PATH");

	const hako_msg_type_t *t = get(reg, "other_pkg/Thing");
	const hako_msg_type_t *s = get(reg, "ros_pkg/Sample");
	assert_ptr_equal(field(t, "s")->type, s);
	check_field(s, "value", HAKO_MSG_INT16, HAKO_MSG_SINGLE, 0, 2);
	assert_int_equal(s->size, 2);
	assert_int_equal(t->size, 16);
	char path[512];
	snprintf(path, sizeof(path), "%s/ros_pkg/msg/Sample.msg", a);
	assert_string_equal(s->path, path);
	/* pkg/msg/Type, as ROS 2 tools print names, is the same type */
	assert_ptr_equal(get(reg, "ros_pkg/msg/Sample"), s);

	char **names = NULL;
	size_t count = 0;
	assert_int_equal(hako_msg_registry_list(reg, &names, &count), 0);
	assert_int_equal(count, hako_msg_builtin_count() + 2); /* Sample once */
	assert_true(in_list(names, count, "ros_pkg/Sample"));
	assert_true(in_list(names, count, "other_pkg/Thing"));
	hako_msg_names_free(names, count);

	/* the error for an unknown type says where it looked, trailing '/' dropped */
	hako_error_t err;
	const hako_msg_type_t *none = NULL;
	assert_int_equal(hako_msg_registry_get(reg, "ros_pkg/Nothing", &none, &err), HAKO_ENOENT);
	char want[1200];
	snprintf(want, sizeof(want), "unknown type (looked in %s, %s and the built-in packages)", a,
	         b);
	assert_string_equal(err.message, want);
	assert_string_equal(err.file, "ros_pkg/Nothing");
	hako_msg_registry_destroy(reg);
	rm_tree(a);
	rm_tree(b);
}

static void test_shadowing_order(void **state)
{
	(void)state;
	char env_dir[256];
	char first[256];
	char second[256];
	make_tmpdir(env_dir, sizeof(env_dir));
	make_tmpdir(first, sizeof(first));
	make_tmpdir(second, sizeof(second));
	write_file(env_dir, "shadow/T.msg", "int8 from_env\n");
	write_file(env_dir, "shadow/OnlyEnv.msg", "int8 from_env\n");
	write_file(env_dir, "std_msgs/Bool.msg", "uint8 mine\n");
	write_file(first, "shadow/T.msg", "int16 from_first\n");
	write_file(first, "shadow/U.msg", "int16 from_first\n");
	write_file(second, "shadow/T.msg", "int32 from_second\n");

	setenv("HAKO_MSG_PATH", env_dir, 1);
	hako_msg_registry_t *reg = new_registry();
	unsetenv("HAKO_MSG_PATH");
	assert_int_equal(hako_msg_registry_add_path(reg, first), 0);
	assert_int_equal(hako_msg_registry_add_path(reg, second), 0);

	/* most recently added first, then the earlier one, then HAKO_MSG_PATH, then built-in */
	assert_string_equal(get(reg, "shadow/T")->fields[0].name, "from_second");
	assert_string_equal(get(reg, "shadow/U")->fields[0].name, "from_first");
	assert_string_equal(get(reg, "shadow/OnlyEnv")->fields[0].name, "from_env");
	assert_string_equal(get(reg, "std_msgs/Bool")->fields[0].name, "mine");
	assert_string_equal(get(reg, "std_msgs/Int8")->fields[0].name, "data");

	/* a loaded type stays as it is: a folder added later does not change it */
	char third[256];
	make_tmpdir(third, sizeof(third));
	write_file(third, "shadow/T.msg", "int64 from_third\n");
	write_file(third, "shadow/V.msg", "shadow/T t\n");
	const hako_msg_type_t *t = get(reg, "shadow/T");
	assert_int_equal(hako_msg_registry_add_path(reg, third), 0);
	assert_ptr_equal(get(reg, "shadow/T"), t);
	assert_ptr_equal(field(get(reg, "shadow/V"), "t")->type, t);
	assert_string_equal(t->fields[0].name, "from_second");
	hako_msg_registry_destroy(reg);
	rm_tree(env_dir);
	rm_tree(first);
	rm_tree(second);
	rm_tree(third);
}

static void test_recursion_and_unknown_nested(void **state)
{
	(void)state;
	char dir[256];
	make_tmpdir(dir, sizeof(dir));
	write_file(dir, "loop/A.msg", "int32 x\nB b\n");
	write_file(dir, "loop/B.msg", "# B nests C nests A\nloop/C c\n");
	write_file(dir, "loop/C.msg", "float64 y\n  A  a\n");
	write_file(dir, "loop/Self.msg", "Self[] children\n");
	write_file(dir, "loop/User.msg", "int8 x\nloop/Missing m\n");
	write_file(dir, "loop/Outer.msg", "loop/User u\n");

	hako_msg_registry_t *reg = new_registry();
	assert_int_equal(hako_msg_registry_add_path(reg, dir), 0);
	const hako_msg_type_t *t = NULL;
	hako_error_t err;
	char msg[1200];
	char want[1200];

	for (int round = 0; round < 2; round++) {
		/* the same error the second time: nothing half-loaded was kept */
		assert_int_equal(hako_msg_registry_get(reg, "loop/A", &t, &err), HAKO_ECONFIG);
		assert_null(t);
		snprintf(
		    want, sizeof(want),
		    "%s/loop/C.msg:2:3: type loop/A contains itself (loop/A -> loop/B -> loop/C "
		    "-> loop/A)",
		    dir);
		assert_string_equal(hako_error_format(&err, msg, sizeof(msg)), want);
	}
	/* entered through B, the cycle is reported from B */
	assert_int_equal(hako_msg_registry_get(reg, "loop/B", &t, &err), HAKO_ECONFIG);
	assert_non_null(strstr(err.message, "(loop/B -> loop/C -> loop/A -> loop/B)"));

	assert_int_equal(hako_msg_registry_get(reg, "loop/Self", &t, &err), HAKO_ECONFIG);
	assert_string_equal(err.message, "type loop/Self contains itself (loop/Self -> loop/Self)");
	assert_int_equal(err.line, 1);
	assert_int_equal(err.column, 1);

	assert_int_equal(hako_msg_registry_get(reg, "loop/Outer", &t, &err), HAKO_ECONFIG);
	snprintf(want, sizeof(want),
	         "%s/loop/User.msg:2:1: unknown type loop/Missing (looked in %s and the built-in "
	         "packages)",
	         dir, dir);
	assert_string_equal(hako_error_format(&err, msg, sizeof(msg)), want);

	/* add_text: a text that nests itself, and one that nests a broken type */
	assert_int_equal(
	    hako_msg_registry_add_text(reg, "mem", "Node", "mem/Node next\n", NULL, &t, &err),
	    HAKO_ECONFIG);
	assert_string_equal(err.file, "mem/Node.msg");
	assert_int_equal(
	    hako_msg_registry_add_text(reg, "mem", "Node", "loop/A a\n", "x.msg", &t, &err),
	    HAKO_ECONFIG);
	assert_non_null(strstr(err.file, "loop/C.msg"));
	hako_msg_registry_destroy(reg);
	rm_tree(dir);
}

static void test_add_text(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = new_registry();
	const hako_msg_type_t *t = NULL;
	hako_error_t err;
	const hako_msg_type_t *point = NULL;
	assert_int_equal(hako_msg_registry_add_text(reg, "mem", "Point", "float32 x\nfloat32 y\n",
	                                            NULL, &point, &err),
	                 0);
	assert_string_equal(point->path, "mem/Point.msg"); /* the default path */
	/* b is mem/Point, the type just defined: a bare type name is of the same package */
	assert_int_equal(hako_msg_registry_add_text(reg, "mem", "Pair",
	                                            "geometry_msgs/Point a\nPoint b\n", "pair.msg",
	                                            &t, &err),
	                 0);
	assert_non_null(t);
	assert_string_equal(t->full_name, "mem/Pair");
	assert_string_equal(t->path, "pair.msg");
	assert_int_equal(t->size, 32); /* 24 + 8 */
	assert_ptr_equal(field(t, "b")->type, point);
	assert_ptr_equal(get(reg, "mem/Pair"), t);
	assert_ptr_equal(get(reg, "mem/Point"), point);
	char **names = NULL;
	size_t count = 0;
	assert_int_equal(hako_msg_registry_list(reg, &names, &count), 0);
	assert_true(in_list(names, count, "mem/Pair")); /* types from text are listed too */
	assert_int_equal(count, hako_msg_builtin_count() + 2);
	hako_msg_names_free(names, count);

	const hako_msg_type_t *dup = NULL;
	assert_int_equal(
	    hako_msg_registry_add_text(reg, "mem", "Pair", "int8 x\n", NULL, &dup, &err),
	    HAKO_EEXIST);
	assert_null(dup);
	/* a built-in type once loaded is there already too */
	get(reg, "std_msgs/Bool");
	assert_int_equal(
	    hako_msg_registry_add_text(reg, "std_msgs", "Bool", "int8 x\n", NULL, &dup, &err),
	    HAKO_EEXIST);
	/* but one not loaded yet can be defined: it then shadows the built-in text */
	assert_int_equal(
	    hako_msg_registry_add_text(reg, "std_msgs", "Int8", "int64 wide\n", NULL, &dup, &err),
	    0);
	assert_int_equal(get(reg, "std_msgs/Int8")->size, 8);

	/* an empty text is a type with no fields */
	assert_int_equal(
	    hako_msg_registry_add_text(reg, "mem", "Nothing", "# nothing\n\n", NULL, &t, &err), 0);
	assert_int_equal(t->field_count, 0);
	assert_int_equal(t->size, 0);
	assert_int_equal(t->align, 1);
	assert_int_equal(hako_msg_pdu_fixed_size(t), 24);

	assert_int_equal(
	    hako_msg_registry_add_text(reg, "bad-pkg", "T", "int8 x\n", NULL, &t, &err),
	    HAKO_EINVAL);
	assert_int_equal(hako_msg_registry_add_text(reg, "mem", "T", NULL, NULL, &t, &err),
	                 HAKO_EINVAL);
	assert_int_equal(hako_msg_registry_add_text(NULL, "mem", "T", "", NULL, &t, &err),
	                 HAKO_EINVAL);
	/* out and err are optional */
	assert_int_equal(
	    hako_msg_registry_add_text(reg, "mem", "Quiet", "int8 x\n", NULL, NULL, NULL), 0);
	assert_int_equal(
	    hako_msg_registry_add_text(reg, "mem", "Broken", "int8 X=1\n", NULL, NULL, NULL),
	    HAKO_ECONFIG);
	hako_msg_registry_destroy(reg);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = new_registry();
	const hako_msg_type_t *t = NULL;
	hako_error_t err;
	static const char *const bad[] = {
	    "Twist",
	    "geometry_msgs/",
	    "/Twist",
	    "geometry_msgs/Twist/x",
	    "geo-msgs/Twist",
	    "1pkg/T",
	    "pkg/T x",
	    "",
	    "a_package_name_that_is_far_too_long_for_the_limit_of_sixty_three/T",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = (const hako_msg_type_t *)&err; /* must be reset */
		assert_int_equal(hako_msg_registry_get(reg, bad[i], &t, &err), HAKO_EINVAL);
		assert_null(t);
		assert_non_null(strstr(err.message, "bad type name"));
	}
	assert_int_equal(hako_msg_registry_get(reg, NULL, &t, &err), HAKO_EINVAL);
	assert_int_equal(hako_msg_registry_get(reg, "std_msgs/Bool", NULL, &err), HAKO_EINVAL);
	assert_int_equal(hako_msg_registry_get(NULL, "std_msgs/Bool", &t, NULL), HAKO_EINVAL);
	assert_int_equal(hako_msg_registry_get(reg, "std_msgs/Bool", &t, NULL), 0);
	assert_int_equal(hako_msg_registry_get(reg, "std_msgs/Nope", &t, NULL), HAKO_ENOENT);

	assert_int_equal(hako_msg_registry_add_path(reg, NULL), HAKO_EINVAL);
	assert_int_equal(hako_msg_registry_add_path(reg, ""), HAKO_EINVAL);
	assert_int_equal(hako_msg_registry_add_path(NULL, "/tmp"), HAKO_EINVAL);
	char longdir[600];
	memset(longdir, 'd', sizeof(longdir) - 1);
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = '\0';
	assert_int_equal(hako_msg_registry_add_path(reg, longdir), HAKO_ENAMETOOLONG);
	/* a folder that does not exist is searched (and found empty) */
	assert_int_equal(hako_msg_registry_add_path(reg, "/nonexistent/hako/msgs"), 0);
	assert_int_equal(hako_msg_registry_get(reg, "std_msgs/String", &t, &err), 0);

	assert_int_equal(hako_msg_registry_create(NULL), HAKO_EINVAL);
	hako_msg_registry_destroy(NULL);
	hako_msg_registry_destroy(reg);
}

/* Types stay where they are while many more load. */
static void test_pointers_stay_valid(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = new_registry();
	const hako_msg_type_t *first = get(reg, "std_msgs/Header");
	for (int i = 0; i < 200; i++) {
		char name[64];
		char text[64];
		snprintf(name, sizeof(name), "T%03d", i);
		snprintf(text, sizeof(text), "std_msgs/Header h\nint32[%d] v\n", i + 1);
		const hako_msg_type_t *t = NULL;
		assert_int_equal(
		    hako_msg_registry_add_text(reg, "many", name, text, NULL, &t, NULL), 0);
		assert_ptr_equal(field(t, "h")->type, first);
		assert_int_equal(t->size, 136 + 4 * (uint32_t)(i + 1));
	}
	assert_ptr_equal(get(reg, "std_msgs/Header"), first);
	assert_string_equal(first->fields[1].name, "frame_id");
	assert_int_equal(get(reg, "many/T000")->size, 140);
	hako_msg_registry_destroy(reg);
}

struct thread_arg {
	hako_msg_registry_t *reg;
	const hako_msg_type_t *got[4];
	int rc;
};

static void *getter(void *p)
{
	static const char *const names[] = {"nav_msgs/Odometry", "sensor_msgs/PointCloud2",
	                                    "geometry_msgs/TwistStamped", "sensor_msgs/Imu"};
	struct thread_arg *a = p;
	for (int round = 0; round < 50; round++) {
		for (size_t i = 0; i < 4; i++) {
			const hako_msg_type_t *t = NULL;
			int rc =
			    hako_msg_registry_get(a->reg, names[(i + (size_t)round) % 4], &t, NULL);
			if (rc != 0) {
				a->rc = rc;
				return NULL;
			}
			if (round == 0) {
				a->got[i] = t;
			}
		}
	}
	return NULL;
}

static void test_threads_share_types(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = new_registry();
	pthread_t th[4];
	struct thread_arg args[4];
	for (int i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){.reg = reg};
		assert_int_equal(pthread_create(&th[i], NULL, getter, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(args[i].rc, 0);
	}
	for (int i = 1; i < 4; i++) {
		for (int j = 0; j < 4; j++) {
			assert_ptr_equal(args[i].got[j], args[0].got[j]);
		}
	}
	hako_msg_registry_destroy(reg);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		cases_dir = argv[1];
	}
	unsetenv("HAKO_MSG_PATH"); /* the caller's folders must not change what the tests see */
	int failed =
	    htc_run_cases("msg_cases", cases_dir, "input.msg", MIN_CASES, 0, run_case, NULL);

	const struct CMUnitTest api[] = {
	    cmocka_unit_test(test_layout_twist),
	    cmocka_unit_test(test_layout_pointcloud2),
	    cmocka_unit_test(test_layout_hako_msgs),
	    cmocka_unit_test(test_layout_matches_c_structs),
	    cmocka_unit_test(test_kind_names),
	    cmocka_unit_test(test_builtins_all_load),
	    cmocka_unit_test(test_builtins_required_present),
	    cmocka_unit_test(test_builtins_sorted_and_same_as_files),
	    cmocka_unit_test(test_list_builtins),
	    cmocka_unit_test(test_user_package_add_path),
	    cmocka_unit_test(test_ros_layout_and_env_path),
	    cmocka_unit_test(test_shadowing_order),
	    cmocka_unit_test(test_recursion_and_unknown_nested),
	    cmocka_unit_test(test_add_text),
	    cmocka_unit_test(test_bad_arguments),
	    cmocka_unit_test(test_pointers_stay_valid),
	    cmocka_unit_test(test_threads_share_types),
	};
	failed += cmocka_run_group_tests_name("msg_api", api, NULL, NULL);
	return failed != 0;
}
