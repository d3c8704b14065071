/* Types for the PDU tests, laid out by hand from the layout rules (natural C alignment, string
 * = 128 bytes, bool = 4 bytes, variable array = {int32 length, int32 offset}, 4-aligned), so
 * the codec is tested without the .msg parser and the layout engine; test_pdu_codec checks
 * that the registry agrees on the real ones. */
#ifndef TEST_PDU_TYPES_H
#define TEST_PDU_TYPES_H

#include "hako/msg.h"

#define FIELD(name_, kind_, form_, type_, count_, esize_, ealign_, off_, size_)                    \
	{                                                                                          \
		.name = name_, .kind = kind_, .form = form_, .type = type_, .count = count_,       \
		.elem_size = esize_, .elem_align = ealign_, .offset = off_, .size = size_          \
	}
#define ONE(name_, kind_, size_, off_)                                                             \
	FIELD(name_, kind_, HAKO_MSG_SINGLE, NULL, 0, size_, (size_) > 8 ? 1 : (size_), off_, size_)
#define STR(name_, off_) FIELD(name_, HAKO_MSG_STRING, HAKO_MSG_SINGLE, NULL, 0, 128, 1, off_, 128)
#define SUB(name_, t, tsize, talign, off_)                                                         \
	FIELD(name_, HAKO_MSG_STRUCT, HAKO_MSG_SINGLE, &t, 0, tsize, talign, off_, tsize)
#define VAR(name_, kind_, esize_, off_)                                                            \
	FIELD(name_, kind_, HAKO_MSG_VARRAY, NULL, 0, esize_, (esize_) > 8 ? 1 : (esize_), off_, 8)
#define VARS(name_, t, tsize, talign, off_)                                                        \
	FIELD(name_, HAKO_MSG_STRUCT, HAKO_MSG_VARRAY, &t, 0, tsize, talign, off_, 8)
#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))
#define TYPE(pkg_, name_, fields_, size_, align_, varray_)                                         \
	{                                                                                          \
		.pkg = pkg_, .name = name_, .full_name = pkg_ "/" name_,                           \
		.path = "<hand>/" pkg_ "/" name_ ".msg", .field_count = NFIELDS(fields_),          \
		.fields = fields_, .size = size_, .align = align_, .has_varray = varray_           \
	}

/* builtin_interfaces/Time: int32 sec @0, uint32 nanosec @4 */
static const hako_msg_field_t time_fields[] = {
    ONE("sec", HAKO_MSG_INT32, 4, 0),
    ONE("nanosec", HAKO_MSG_UINT32, 4, 4),
};
static const hako_msg_type_t t_time = TYPE("builtin_interfaces", "Time", time_fields, 8, 4, 0);

/* std_msgs/Header: Time stamp @0, string frame_id @8: 136 bytes */
static const hako_msg_field_t header_fields[] = {
    SUB("stamp", t_time, 8, 4, 0),
    STR("frame_id", 8),
};
static const hako_msg_type_t t_header = TYPE("std_msgs", "Header", header_fields, 136, 4, 0);

/* geometry_msgs/Vector3 and Twist: 24 and 48 bytes, a 72-byte PDU */
static const hako_msg_field_t vector3_fields[] = {
    ONE("x", HAKO_MSG_FLOAT64, 8, 0),
    ONE("y", HAKO_MSG_FLOAT64, 8, 8),
    ONE("z", HAKO_MSG_FLOAT64, 8, 16),
};
static const hako_msg_type_t t_vector3 = TYPE("geometry_msgs", "Vector3", vector3_fields, 24, 8, 0);
static const hako_msg_field_t twist_fields[] = {
    SUB("linear", t_vector3, 24, 8, 0),
    SUB("angular", t_vector3, 24, 8, 24),
};
static const hako_msg_type_t t_twist = TYPE("geometry_msgs", "Twist", twist_fields, 48, 8, 0);

/* sensor_msgs/PointField: string name @0, uint32 offset @128, uint8 datatype @132,
 * uint32 count @136: 140 bytes, 4-aligned */
static const hako_msg_field_t point_field_fields[] = {
    STR("name", 0),
    ONE("offset", HAKO_MSG_UINT32, 4, 128),
    ONE("datatype", HAKO_MSG_UINT8, 1, 132),
    ONE("count", HAKO_MSG_UINT32, 4, 136),
};
static const hako_msg_type_t t_point_field =
    TYPE("sensor_msgs", "PointField", point_field_fields, 140, 4, 0);

/* sensor_msgs/PointCloud2: header @0, height @136, width @140, fields[] @144, is_bigendian
 * @152, point_step @156, row_step @160, data[] @164, is_dense @172: 176 bytes, heap at 200 */
static const hako_msg_field_t point_cloud2_fields[] = {
    SUB("header", t_header, 136, 4, 0),         ONE("height", HAKO_MSG_UINT32, 4, 136),
    ONE("width", HAKO_MSG_UINT32, 4, 140),      VARS("fields", t_point_field, 140, 4, 144),
    ONE("is_bigendian", HAKO_MSG_BOOL, 4, 152), ONE("point_step", HAKO_MSG_UINT32, 4, 156),
    ONE("row_step", HAKO_MSG_UINT32, 4, 160),   VAR("data", HAKO_MSG_UINT8, 1, 164),
    ONE("is_dense", HAKO_MSG_BOOL, 4, 172),
};
static const hako_msg_type_t t_point_cloud2 =
    TYPE("sensor_msgs", "PointCloud2", point_cloud2_fields, 176, 4, 1);

/* hako_msgs/ExecutionUnitRuntimeStatus: config_hash @0, unit_count @4, four uint8[] @8..32:
 * 40 bytes, heap at 64 */
static const hako_msg_field_t eu_status_fields[] = {
    ONE("config_hash", HAKO_MSG_UINT32, 4, 0),
    ONE("unit_count", HAKO_MSG_UINT16, 2, 4),
    VAR("status", HAKO_MSG_UINT8, 1, 8),
    VAR("epoch", HAKO_MSG_UINT8, 1, 16),
    VAR("curr_owner_node_id", HAKO_MSG_UINT8, 1, 24),
    VAR("next_owner_node_id", HAKO_MSG_UINT8, 1, 32),
};
static const hako_msg_type_t t_eu_status =
    TYPE("hako_msgs", "ExecutionUnitRuntimeStatus", eu_status_fields, 40, 4, 1);

/* test/Seg: uint8[] data @0, string name @8: 136 bytes */
static const hako_msg_field_t seg_fields[] = {
    VAR("data", HAKO_MSG_UINT8, 1, 0),
    STR("name", 8),
};
static const hako_msg_type_t t_seg = TYPE("test", "Seg", seg_fields, 136, 4, 1);

/* test/Poly: Seg[] points @0, float32[3] w @8, Seg[2] pair @20, int16[] k @292: 300 bytes */
static const hako_msg_field_t poly_fields[] = {
    VARS("points", t_seg, 136, 4, 0),
    FIELD("w", HAKO_MSG_FLOAT32, HAKO_MSG_ARRAY, NULL, 3, 4, 4, 8, 12),
    FIELD("pair", HAKO_MSG_STRUCT, HAKO_MSG_ARRAY, &t_seg, 2, 136, 4, 20, 272),
    VAR("k", HAKO_MSG_INT16, 2, 292),
};
static const hako_msg_type_t t_poly = TYPE("test", "Poly", poly_fields, 300, 4, 1);

/* test/Scalars: one of each primitive: 184 bytes, 8-aligned */
static const hako_msg_field_t scalars_fields[] = {
    ONE("b", HAKO_MSG_BOOL, 4, 0),       ONE("by", HAKO_MSG_BYTE, 1, 4),
    ONE("ch", HAKO_MSG_CHAR, 1, 5),      ONE("i8", HAKO_MSG_INT8, 1, 6),
    ONE("u8", HAKO_MSG_UINT8, 1, 7),     ONE("i16", HAKO_MSG_INT16, 2, 8),
    ONE("u16", HAKO_MSG_UINT16, 2, 10),  ONE("i32", HAKO_MSG_INT32, 4, 12),
    ONE("u32", HAKO_MSG_UINT32, 4, 16),  ONE("i64", HAKO_MSG_INT64, 8, 24),
    ONE("u64", HAKO_MSG_UINT64, 8, 32),  ONE("f32", HAKO_MSG_FLOAT32, 4, 40),
    ONE("f64", HAKO_MSG_FLOAT64, 8, 48), STR("s", 56),
};
static const hako_msg_type_t t_scalars = TYPE("test", "Scalars", scalars_fields, 184, 8, 0);

/* test/Empty: no fields */
static const hako_msg_type_t t_empty = {
    .pkg = "test", .name = "Empty", .full_name = "test/Empty", .size = 0, .align = 1};

#endif
