/* Shared parts of the PDU fuzz targets (see fuzz_common.h). */
#include "fuzz_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/pdu.h"

/* The order is part of the corpus format (the first byte of every corpus file indexes it):
 * append, never reorder. Chosen for variable arrays of primitives and of structs, nested
 * variable arrays, strings, fixed arrays and bools. */
static const char *const type_names[] = {
    "sensor_msgs/PointCloud2",
    "sensor_msgs/JointState",
    "hako_msgs/ExecutionUnitRuntimeStatus",
    "hako_msgs/ExecutionUnitRuntimeContext",
    "geometry_msgs/Twist",
    "std_msgs/String",
    "sensor_msgs/LaserScan",
    "nav_msgs/Odometry",
    "std_msgs/Float64MultiArray",
    "sensor_msgs/Image",
    "sensor_msgs/Imu",
    /* Was hako_msgs/HakoHilActuatorControls, a type Hakoniwa does not have: the same
     * fields, so the corpus files that name it keep their meaning. */
    "hako_mavlink_msgs/HakoHilActuatorControls",
};
#define TYPE_COUNT (sizeof(type_names) / sizeof(type_names[0]))

static hako_msg_registry_t *registry;
static const hako_msg_type_t *types[TYPE_COUNT];

/* Read by the varray walk so the compiler cannot drop the reads. */
static volatile uint8_t sink;

void fuzz_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("FUZZ FINDING: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

static void load_types(void)
{
	if (hako_msg_registry_create(&registry) != 0) {
		fuzz_fail("hako_msg_registry_create failed");
	}
	for (size_t i = 0; i < TYPE_COUNT; i++) {
		hako_error_t err;
		char msg[1200];
		hako_error_clear(&err);
		if (hako_msg_registry_get(registry, type_names[i], &types[i], &err) != 0) {
			fprintf(stderr, "fuzz: cannot load %s: %s\n", type_names[i],
			        hako_error_format(&err, msg, sizeof(msg)));
			abort();
		}
	}
}

const hako_msg_type_t *fuzz_type(uint8_t sel)
{
	if (registry == NULL) {
		load_types();
	}
	return types[(sel & ~FUZZ_SEL_PRETTY) % TYPE_COUNT];
}

size_t fuzz_type_count(void)
{
	return TYPE_COUNT;
}

const char *fuzz_type_name(size_t i)
{
	return i < TYPE_COUNT ? type_names[i] : NULL;
}

static void walk_struct(const hako_msg_type_t *type, const uint8_t *pdu, size_t len,
                        const hako_pdu_meta_t *meta, const uint8_t *base);

static void walk_varray(const hako_msg_field_t *f, const uint8_t *pdu, size_t len,
                        const hako_pdu_meta_t *meta, const uint8_t *ref)
{
	uint32_t n = 0xffffffffu;
	const uint8_t *p = hako_pdu_varray(pdu, len, ref, f->elem_size, &n);
	if (p == NULL) {
		fuzz_fail("hako_pdu_varray refused field '%s' of a PDU that hako_pdu_validate "
		          "accepted",
		          f->name);
	}
	if (n == 0) {
		return;
	}
	size_t bytes = (size_t)n * f->elem_size;
	if (p < pdu + meta->heap_off || p > pdu + meta->total_size ||
	    bytes > (size_t)(pdu + meta->total_size - p)) {
		fuzz_fail(
		    "hako_pdu_varray: field '%s' (%u x %u bytes) at PDU offset %td lies outside "
		    "the heap [%u, %u)",
		    f->name, n, f->elem_size, p - pdu, meta->heap_off, meta->total_size);
	}
	uint8_t acc = 0;
	for (size_t i = 0; i < bytes; i++) {
		acc ^= p[i];
	}
	sink = acc;
	if (f->kind == HAKO_MSG_STRUCT && f->type->has_varray) {
		for (uint32_t i = 0; i < n; i++) {
			walk_struct(f->type, pdu, len, meta, p + (size_t)i * f->elem_size);
		}
	}
}

static void walk_struct(const hako_msg_type_t *type, const uint8_t *pdu, size_t len,
                        const hako_pdu_meta_t *meta, const uint8_t *base)
{
	for (size_t i = 0; i < type->field_count; i++) {
		const hako_msg_field_t *f = &type->fields[i];
		if (f->form == HAKO_MSG_VARRAY) {
			walk_varray(f, pdu, len, meta, base + f->offset);
		} else if (f->kind == HAKO_MSG_STRUCT && f->type->has_varray) {
			uint32_t n = f->form == HAKO_MSG_ARRAY ? f->count : 1;
			for (uint32_t k = 0; k < n; k++) {
				walk_struct(f->type, pdu, len, meta,
				            base + f->offset + (size_t)k * f->elem_size);
			}
		}
	}
}

void fuzz_walk_varrays(const hako_msg_type_t *type, const void *pdu, size_t len)
{
	hako_pdu_meta_t meta;
	if (hako_pdu_meta_read(pdu, len, &meta) != 0) {
		fuzz_fail("hako_pdu_meta_read refused a PDU that hako_pdu_validate accepted");
	}
	walk_struct(type, pdu, len, &meta, (const uint8_t *)pdu + meta.base_off);
}

void fuzz_json_fixed_point(const hako_msg_type_t *type, const char *json, int flags)
{
	hako_error_t err;
	char msg[1200];
	size_t json_len = strlen(json);

	/* First into a buffer sized for the type without heap data: too small whenever a variable
	 * array is not empty, which must give HAKO_ETOOBIG and the exact size needed. Allocated to
	 * the byte so ASan sees a write past cap. */
	size_t cap = hako_msg_pdu_fixed_size(type);
	uint8_t *buf = malloc(cap);
	size_t len = 0;
	hako_error_clear(&err);
	int rc = hako_pdu_from_json(type, json, json_len, buf, cap, &len, &err);
	if (rc == HAKO_ETOOBIG) {
		if (len <= cap) {
			fuzz_fail("%s: from_json: HAKO_ETOOBIG with cap %zu but needs %zu",
			          type->full_name, cap, len);
		}
		size_t needed = len;
		free(buf);
		cap = needed;
		buf = malloc(cap);
		hako_error_clear(&err);
		rc = hako_pdu_from_json(type, json, json_len, buf, cap, &len, &err);
		if (rc == 0 && len != needed) {
			fuzz_fail("%s: from_json: HAKO_ETOOBIG said %zu bytes, then wrote %zu",
			          type->full_name, needed, len);
		}
	}
	if (rc != 0) {
		fuzz_fail("%s: from_json refused what to_json wrote (%s: %s):\n%s", type->full_name,
		          hako_strerror(rc), hako_error_format(&err, msg, sizeof(msg)), json);
	}
	if (len > cap) {
		fuzz_fail("%s: from_json: *len %zu > cap %zu", type->full_name, len, cap);
	}
	if (hako_pdu_classify(buf, len) != HAKO_PDU_VALID) {
		fuzz_fail("%s: from_json wrote a PDU that does not classify as valid",
		          type->full_name);
	}
	hako_error_clear(&err);
	rc = hako_pdu_validate(type, buf, len, &err);
	if (rc != 0) {
		fuzz_fail("%s: validate refused what from_json wrote (%s): %s", type->full_name,
		          hako_strerror(rc), hako_error_format(&err, msg, sizeof(msg)));
	}
	fuzz_walk_varrays(type, buf, len);

	char *again = NULL;
	hako_error_clear(&err);
	rc = hako_pdu_to_json(type, buf, len, flags, &again, &err);
	if (rc != 0) {
		fuzz_fail("%s: to_json refused what from_json wrote (%s): %s", type->full_name,
		          hako_strerror(rc), hako_error_format(&err, msg, sizeof(msg)));
	}
	if (strcmp(json, again) != 0) {
		fuzz_fail("%s: JSON -> PDU -> JSON is not the identity\nfirst:\n%s\nsecond:\n%s",
		          type->full_name, json, again);
	}
	free(again);
	free(buf);
}
