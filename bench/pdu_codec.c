/* pdu_codec: the binary PDU codec, PDU <-> JSON (hako/pdu.h) and PDU <-> ROS 2 CDR (hako/cdr.h)
 * against a plain memcpy of the same bytes, measured in the same run.
 *
 * Payloads: a Twist (fixed size), a 64-element struct array (bench_msgs/PoseArray, ROS's
 * geometry_msgs/PoseArray: a header and 64 Poses) and a 1 MiB PointCloud2. Operations:
 * memcpy (the baseline: the encoded PDU copied to another buffer), encode (application values
 * into a PDU with the writer), decode (validate, then every field and variable array copied out
 * to application values: what a consumer does), to-json, from-json, to-cdr (what hako-record
 * and the Foxglove bridge do per PDU), from-cdr.
 *
 * Operations take nanoseconds, so each sample is one batch of N back-to-back operations timed
 * together (N sized at start-up for ~50 us batches) divided by N. Rounds interleave everything:
 * for each round, for each payload, the five operations in turn. See bench/README.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "hako/cdr.h"
#include "hako/msg.h"
#include "hako/msgs/geometry_msgs/Twist.h"
#include "hako/pdu.h"

enum { OP_MEMCPY, OP_ENCODE, OP_DECODE, OP_TO_JSON, OP_FROM_JSON, OP_TO_CDR, OP_FROM_CDR, NOPS };
static const char *const op_names[NOPS] = {"memcpy",    "encode", "decode",  "to-json",
                                           "from-json", "to-cdr", "from-cdr"};

#define MAX_ROUNDS       64
#define POSES            64
#define CLOUD_POINTS     65536 /* x 16 B = 1 MiB of point data */
#define CLOUD_FIELDS     4
#define POINTFIELD_FLOAT 7 /* sensor_msgs/PointField FLOAT32 */

/* ROS's geometry_msgs/PoseArray, which the built-in packages do not carry. */
static const char pose_array_msg[] = "# geometry_msgs/PoseArray\n"
                                     "std_msgs/Header header\n"
                                     "geometry_msgs/Pose[] poses\n";

static int g_verbose;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("pdu_codec: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL) {
		die("out of memory (%zu bytes)", n);
	}
	return p;
}

/* Keeps the compiler from dropping work whose result is only in memory. */
static inline void escape(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* ---- Layout lookups (done once; the hot loops use plain offsets, as generated code would) */

static const hako_msg_field_t *field(const hako_msg_type_t *t, const char *name)
{
	for (size_t i = 0; i < t->field_count; i++) {
		if (strcmp(t->fields[i].name, name) == 0) {
			return &t->fields[i];
		}
	}
	die("%s has no field %s", t->full_name, name);
}

/* Offset of a dotted path of single fields ("header.stamp.sec") from the start of t. */
static uint32_t off(const hako_msg_type_t *t, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	uint32_t o = 0;
	char *save = NULL;
	for (char *name = strtok_r(buf, ".", &save); name; name = strtok_r(NULL, ".", &save)) {
		if (t == NULL) {
			die("%s: not a struct on the way", path);
		}
		const hako_msg_field_t *f = field(t, name);
		o += f->offset;
		t = f->type;
	}
	return o;
}

typedef struct header_off {
	uint32_t sec, nanosec, frame_id;
} header_off_t;

static header_off_t header_offsets(const hako_msg_type_t *t)
{
	header_off_t h = {off(t, "header.stamp.sec"), off(t, "header.stamp.nanosec"),
	                  off(t, "header.frame_id")};
	return h;
}

typedef struct header_app {
	int32_t sec;
	uint32_t nanosec;
	char frame_id[HAKO_MSG_STRING_SIZE];
} header_app_t;

static void put_string(uint8_t *slot, const char *s)
{
	size_t n = strnlen(s, HAKO_MSG_STRING_SIZE - 1);
	memcpy(slot, s, n);
	slot[n] = '\0';
}

static void get_string(char *out, const uint8_t *slot)
{
	size_t n = strnlen((const char *)slot, HAKO_MSG_STRING_SIZE - 1);
	memcpy(out, slot, n);
	out[n] = '\0';
}

static void put_header(uint8_t *b, const header_off_t *o, const header_app_t *h)
{
	memcpy(b + o->sec, &h->sec, 4);
	memcpy(b + o->nanosec, &h->nanosec, 4);
	put_string(b + o->frame_id, h->frame_id);
}

static void get_header(const uint8_t *b, const header_off_t *o, header_app_t *h)
{
	memcpy(&h->sec, b + o->sec, 4);
	memcpy(&h->nanosec, b + o->nanosec, 4);
	get_string(h->frame_id, b + o->frame_id);
}

/* ---- Payloads ---- */

typedef struct twist_app {
	double linear[3], angular[3];
} twist_app_t;

typedef struct pose_app {
	double position[3], orientation[4];
} pose_app_t;

typedef struct pose_array_app {
	header_app_t header;
	uint32_t count;
	pose_app_t poses[POSES];
} pose_array_app_t;

typedef struct point_field_app {
	char name[HAKO_MSG_STRING_SIZE];
	uint32_t offset;
	uint8_t datatype;
	uint32_t count;
} point_field_app_t;

typedef struct cloud_app {
	header_app_t header;
	uint32_t height, width;
	uint32_t field_count;
	point_field_app_t fields[CLOUD_FIELDS];
	int32_t is_bigendian;
	uint32_t point_step, row_step;
	uint32_t data_len;
	uint8_t *data;
	int32_t is_dense;
} cloud_app_t;

typedef struct payload payload_t;
struct payload {
	const char *name;
	const char *what;
	const hako_msg_type_t *type;
	uint8_t *pdu; /* the reference PDU: source of memcpy, decode and to-json */
	size_t pdu_len;
	uint8_t *dst; /* destination of memcpy, encode and from-json */
	size_t cap;   /* of dst: pdu_len once set up */
	char *json;   /* to_json of the reference PDU: source of from-json */
	size_t json_len;
	uint8_t *cdr; /* CDR of the reference PDU: source of from-cdr */
	size_t cdr_len;
	uint8_t *cdr_dst; /* destination of to-cdr */
	size_t enc_len;   /* of the last encode */
	uint8_t epoch;
	void (*encode)(payload_t *p);
	void (*decode)(payload_t *p);
	int (*decoded_ok)(const payload_t *p); /* out == in after a decode */
	void *in, *out;                        /* application values */
	void *owned[2];                        /* more of them, freed with the payload */
	uint32_t o[16];                        /* offsets of the payload's fields */
	header_off_t hdr;
	uint32_t elem_size; /* of the struct array */
};

static hako_error_t g_err;

static void finish(payload_t *p, hako_pdu_writer_t *w)
{
	size_t len = 0;
	if (hako_pdu_writer_finish(w, &len) != 0 || (p->pdu_len != 0 && len != p->pdu_len)) {
		die("%s: encode: %s (%zu bytes, expected %zu)", p->name, hako_strerror(w->error),
		    len, p->pdu_len);
	}
	p->enc_len = len;
	hako_pdu_set_epoch(p->dst, len, ++p->epoch);
}

static void validate(const payload_t *p)
{
	int rc = hako_pdu_validate(p->type, p->pdu, p->pdu_len, &g_err);
	if (rc != 0) {
		die("%s: validate: %s: %s", p->name, hako_strerror(rc), g_err.message);
	}
}

static const uint8_t *varray(const payload_t *p, const uint8_t *ref, uint32_t elem_size,
                             uint32_t max, uint32_t *count)
{
	const uint8_t *a = hako_pdu_varray(p->pdu, p->pdu_len, ref, elem_size, count);
	if (a == NULL || *count > max) {
		die("%s: decode: variable array refused or longer than %u", p->name, max);
	}
	return a;
}

/* Twist, a fixed-size type, goes through its generated header (hako-msggen), as C code using
 * the type does: init + the struct's fields on encode; hako_pdu_geometry_msgs_Twist_get (for a
 * type without variable arrays or strings, the same checks as hako_pdu_validate, inline) + the
 * fields on decode. o[0] linear, o[1] angular (each 3 float64). */
static void twist_encode(payload_t *p)
{
	const twist_app_t *v = p->in;
	if (hako_pdu_geometry_msgs_Twist_init(p->dst, p->cap) != 0) {
		die("%s: encode: buffer too small", p->name);
	}
	Hako_Twist *b = hako_pdu_geometry_msgs_Twist_base(p->dst);
	b->linear.x = v->linear[0];
	b->linear.y = v->linear[1];
	b->linear.z = v->linear[2];
	b->angular.x = v->angular[0];
	b->angular.y = v->angular[1];
	b->angular.z = v->angular[2];
	p->enc_len = HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST;
	((uint8_t *)p->dst)[HAKO_PDU_EPOCH_OFFSET] = ++p->epoch;
}

static void twist_decode(payload_t *p)
{
	twist_app_t *v = p->out;
	const Hako_Twist *b = hako_pdu_geometry_msgs_Twist_get(p->pdu, p->pdu_len);
	if (b == NULL) {
		die("%s: decode: PDU refused", p->name);
	}
	v->linear[0] = b->linear.x;
	v->linear[1] = b->linear.y;
	v->linear[2] = b->linear.z;
	v->angular[0] = b->angular.x;
	v->angular[1] = b->angular.y;
	v->angular[2] = b->angular.z;
}

static int twist_same(const payload_t *p)
{
	return memcmp(p->in, p->out, sizeof(twist_app_t)) == 0;
}

static void twist_init(payload_t *p)
{
	twist_app_t *in = xmalloc(sizeof(*in));
	*in = (twist_app_t){{1.25, -0.5, 0.0}, {0.0, 0.0, 0.785398}};
	p->in = in;
	p->out = xmalloc(sizeof(twist_app_t));
	p->o[0] = off(p->type, "linear");
	p->o[1] = off(p->type, "angular");
	p->encode = twist_encode;
	p->decode = twist_decode;
	p->decoded_ok = twist_same;
}

/* PoseArray: o[0] poses; the element is geometry_msgs/Pose, laid out as pose_app_t. */
static void poses_encode(payload_t *p)
{
	const pose_array_app_t *v = p->in;
	hako_pdu_writer_t w;
	hako_pdu_writer_init(&w, p->type, p->dst, p->cap);
	uint8_t *b = hako_pdu_base(p->dst);
	put_header(b, &p->hdr, &v->header);
	void *a = hako_pdu_writer_varray(&w, b + p->o[0], v->count, p->elem_size);
	if (a != NULL) {
		memcpy(a, v->poses, (size_t)v->count * sizeof(pose_app_t));
	}
	finish(p, &w);
}

static void poses_decode(payload_t *p)
{
	pose_array_app_t *v = p->out;
	validate(p);
	const uint8_t *b = p->pdu + HAKO_PDU_META_SIZE;
	get_header(b, &p->hdr, &v->header);
	const uint8_t *a = varray(p, b + p->o[0], p->elem_size, POSES, &v->count);
	memcpy(v->poses, a, (size_t)v->count * sizeof(pose_app_t));
}

static int poses_same(const payload_t *p)
{
	return memcmp(p->in, p->out, sizeof(pose_array_app_t)) == 0;
}

static void poses_init(payload_t *p)
{
	const hako_msg_field_t *f = field(p->type, "poses");
	if (f->kind != HAKO_MSG_STRUCT || f->elem_size != sizeof(pose_app_t) ||
	    off(f->type, "position") != 0 || off(f->type, "orientation") != 24) {
		die("geometry_msgs/Pose is not laid out as 7 float64");
	}
	pose_array_app_t *in = calloc(1, sizeof(*in));
	if (in == NULL) {
		die("out of memory");
	}
	in->header = (header_app_t){1700000000, 250000000, "map"};
	in->count = POSES;
	for (int i = 0; i < POSES; i++) {
		double t = i * 0.1;
		in->poses[i] = (pose_app_t){{cos(t) * 10, sin(t) * 10, 0.5 * i},
		                            {0.0, 0.0, sin(t / 2), cos(t / 2)}};
	}
	p->in = in;
	p->out = calloc(1, sizeof(pose_array_app_t));
	p->hdr = header_offsets(p->type);
	p->o[0] = f->offset;
	p->elem_size = f->elem_size;
	p->encode = poses_encode;
	p->decode = poses_decode;
	p->decoded_ok = poses_same;
}

/* PointCloud2: o[0..7] height, width, fields, is_bigendian, point_step, row_step, data,
 * is_dense; o[8..11] PointField name, offset, datatype, count. */
enum { C_HEIGHT, C_WIDTH, C_FIELDS, C_BIGENDIAN, C_POINT_STEP, C_ROW_STEP, C_DATA, C_DENSE };
enum { PF_NAME = 8, PF_OFFSET, PF_DATATYPE, PF_COUNT };

static void cloud_encode(payload_t *p)
{
	const cloud_app_t *v = p->in;
	const uint32_t *o = p->o;
	hako_pdu_writer_t w;
	hako_pdu_writer_init(&w, p->type, p->dst, p->cap);
	uint8_t *b = hako_pdu_base(p->dst);
	put_header(b, &p->hdr, &v->header);
	memcpy(b + o[C_HEIGHT], &v->height, 4);
	memcpy(b + o[C_WIDTH], &v->width, 4);
	uint8_t *fs = hako_pdu_writer_varray(&w, b + o[C_FIELDS], v->field_count, p->elem_size);
	for (uint32_t i = 0; fs != NULL && i < v->field_count; i++) {
		uint8_t *e = fs + (size_t)i * p->elem_size;
		put_string(e + o[PF_NAME], v->fields[i].name);
		memcpy(e + o[PF_OFFSET], &v->fields[i].offset, 4);
		e[o[PF_DATATYPE]] = v->fields[i].datatype;
		memcpy(e + o[PF_COUNT], &v->fields[i].count, 4);
	}
	memcpy(b + o[C_BIGENDIAN], &v->is_bigendian, 4);
	memcpy(b + o[C_POINT_STEP], &v->point_step, 4);
	memcpy(b + o[C_ROW_STEP], &v->row_step, 4);
	uint8_t *d = hako_pdu_writer_varray(&w, b + o[C_DATA], v->data_len, 1);
	if (d != NULL) {
		memcpy(d, v->data, v->data_len);
	}
	memcpy(b + o[C_DENSE], &v->is_dense, 4);
	finish(p, &w);
}

static void cloud_decode(payload_t *p)
{
	cloud_app_t *v = p->out;
	const uint32_t *o = p->o;
	validate(p);
	const uint8_t *b = p->pdu + HAKO_PDU_META_SIZE;
	get_header(b, &p->hdr, &v->header);
	memcpy(&v->height, b + o[C_HEIGHT], 4);
	memcpy(&v->width, b + o[C_WIDTH], 4);
	const uint8_t *fs = varray(p, b + o[C_FIELDS], p->elem_size, CLOUD_FIELDS, &v->field_count);
	for (uint32_t i = 0; i < v->field_count; i++) {
		const uint8_t *e = fs + (size_t)i * p->elem_size;
		get_string(v->fields[i].name, e + o[PF_NAME]);
		memcpy(&v->fields[i].offset, e + o[PF_OFFSET], 4);
		v->fields[i].datatype = e[o[PF_DATATYPE]];
		memcpy(&v->fields[i].count, e + o[PF_COUNT], 4);
	}
	memcpy(&v->is_bigendian, b + o[C_BIGENDIAN], 4);
	memcpy(&v->point_step, b + o[C_POINT_STEP], 4);
	memcpy(&v->row_step, b + o[C_ROW_STEP], 4);
	const uint8_t *d = varray(p, b + o[C_DATA], 1, CLOUD_POINTS * 16, &v->data_len);
	memcpy(v->data, d, v->data_len);
	memcpy(&v->is_dense, b + o[C_DENSE], 4);
}

static int cloud_same(const payload_t *p)
{
	const cloud_app_t *a = p->in;
	const cloud_app_t *b = p->out;
	return memcmp(&a->header, &b->header, sizeof(a->header)) == 0 && a->height == b->height &&
	       a->width == b->width && a->field_count == b->field_count &&
	       memcmp(a->fields, b->fields, sizeof(a->fields)) == 0 &&
	       a->is_bigendian == b->is_bigendian && a->point_step == b->point_step &&
	       a->row_step == b->row_step && a->data_len == b->data_len &&
	       memcmp(a->data, b->data, a->data_len) == 0 && a->is_dense == b->is_dense;
}

static void cloud_init(payload_t *p)
{
	static const char *const names[CLOUD_FIELDS] = {"x", "y", "z", "intensity"};
	cloud_app_t *in = calloc(1, sizeof(*in));
	cloud_app_t *out = calloc(1, sizeof(*out));
	if (in == NULL || out == NULL) {
		die("out of memory");
	}
	in->header = (header_app_t){1700000000, 500, "lidar"};
	in->height = 1;
	in->width = CLOUD_POINTS;
	in->field_count = CLOUD_FIELDS;
	for (uint32_t i = 0; i < CLOUD_FIELDS; i++) {
		snprintf(in->fields[i].name, sizeof(in->fields[i].name), "%s", names[i]);
		in->fields[i].offset = 4 * i;
		in->fields[i].datatype = POINTFIELD_FLOAT;
		in->fields[i].count = 1;
	}
	in->point_step = 16;
	in->row_step = 16 * CLOUD_POINTS;
	in->data_len = 16 * CLOUD_POINTS;
	in->data = xmalloc(in->data_len);
	out->data = xmalloc(in->data_len);
	p->owned[0] = in->data;
	p->owned[1] = out->data;
	/* A ring of points at lidar-like distances: float bits look like real data, not zeros. */
	uint32_t seed = 12345;
	for (uint32_t i = 0; i < CLOUD_POINTS; i++) {
		seed = seed * 1664525u + 1013904223u;
		float r = 2.0f + (float)(seed >> 8) / 16777216.0f * 30.0f;
		float a = (float)i * 0.0001f;
		float pt[4] = {r * cosf(a), r * sinf(a), (float)(seed & 0xff) / 64.0f - 2.0f,
		               (float)(seed >> 24)};
		memcpy(in->data + (size_t)i * 16, pt, 16);
	}
	in->is_dense = 1;
	p->in = in;
	p->out = out;
	p->hdr = header_offsets(p->type);
	static const char *const top[] = {"height",     "width",    "fields", "is_bigendian",
	                                  "point_step", "row_step", "data",   "is_dense"};
	for (int i = 0; i < 8; i++) {
		p->o[i] = field(p->type, top[i])->offset;
	}
	const hako_msg_field_t *f = field(p->type, "fields");
	p->o[PF_NAME] = field(f->type, "name")->offset;
	p->o[PF_OFFSET] = field(f->type, "offset")->offset;
	p->o[PF_DATATYPE] = field(f->type, "datatype")->offset;
	p->o[PF_COUNT] = field(f->type, "count")->offset;
	p->elem_size = f->elem_size;
	p->encode = cloud_encode;
	p->decode = cloud_decode;
	p->decoded_ok = cloud_same;
}

struct payload_def {
	const char *name;
	const char *type;
	const char *what;
	void (*init)(payload_t *p);
};
static const struct payload_def payload_defs[] = {
    {"twist", "geometry_msgs/Twist", "fixed size, 6 float64", twist_init},
    {"struct-array-64", "bench_msgs/PoseArray",
     "ROS geometry_msgs/PoseArray: std_msgs/Header + 64 geometry_msgs/Pose (56 B each)",
     poses_init},
    {"pointcloud2-1MiB", "sensor_msgs/PointCloud2",
     "65536 points x 16 B (x y z intensity float32), 4 PointFields", cloud_init},
};
#define NPAYLOADS (sizeof(payload_defs) / sizeof(payload_defs[0]))

/* Encode the reference PDU and its JSON, and check that every operation gives the values back:
 * a benchmark of a codec that gets them wrong would measure nothing. */
static void payload_setup(payload_t *p, const struct payload_def *d, hako_msg_registry_t *reg)
{
	hako_error_t err;
	char msg[1200];
	hako_error_clear(&err);
	if (hako_msg_registry_get(reg, d->type, &p->type, &err) != 0) {
		die("%s: %s", d->type, hako_error_format(&err, msg, sizeof(msg)));
	}
	p->name = d->name;
	p->what = d->what;
	d->init(p);

	p->cap = (size_t)4 << 20;
	p->dst = xmalloc(p->cap);
	p->pdu_len = 0;
	p->encode(p);
	p->pdu_len = p->enc_len;
	p->pdu = xmalloc(p->pdu_len);
	memcpy(p->pdu, p->dst, p->pdu_len);
	free(p->dst);
	p->cap = p->pdu_len;
	p->dst = xmalloc(p->cap);

	p->encode(p); /* into a buffer of exactly the size: same bytes but the epoch */
	if (memcmp(p->dst, p->pdu, HAKO_PDU_EPOCH_OFFSET) != 0 ||
	    memcmp(p->dst + HAKO_PDU_EPOCH_OFFSET + 1, p->pdu + HAKO_PDU_EPOCH_OFFSET + 1,
	           p->pdu_len - HAKO_PDU_EPOCH_OFFSET - 1) != 0) {
		die("%s: two encodes of the same values differ", p->name);
	}
	p->decode(p);
	if (!p->decoded_ok(p)) {
		die("%s: decode does not give back the encoded values", p->name);
	}
	int rc = hako_pdu_to_json(p->type, p->pdu, p->pdu_len, 0, &p->json, &err);
	if (rc != 0) {
		die("%s: to_json: %s", p->name, hako_error_format(&err, msg, sizeof(msg)));
	}
	p->json_len = strlen(p->json);
	size_t len = 0;
	rc = hako_pdu_from_json(p->type, p->json, p->json_len, p->dst, p->cap, &len, &err);
	if (rc != 0 || len != p->pdu_len) {
		die("%s: from_json (%zu bytes, PDU %zu): %s", p->name, len, p->pdu_len,
		    hako_error_format(&err, msg, sizeof(msg)));
	}
	char *again = NULL;
	rc = hako_pdu_to_json(p->type, p->dst, len, 0, &again, &err);
	if (rc != 0 || strcmp(again, p->json) != 0) {
		die("%s: JSON -> PDU -> JSON is not the identity", p->name);
	}
	free(again);
	rc = hako_cdr_encode(p->type, p->pdu, p->pdu_len, NULL, 0, &p->cdr_len, &err);
	p->cdr = xmalloc(p->cdr_len);
	p->cdr_dst = xmalloc(p->cdr_len);
	if (hako_cdr_encode(p->type, p->pdu, p->pdu_len, p->cdr, p->cdr_len, &len, &err) != 0) {
		die("%s: to CDR: %s", p->name, hako_error_format(&err, msg, sizeof(msg)));
	}
	rc = hako_cdr_decode(p->type, p->cdr, p->cdr_len, p->dst, p->cap, &len, &err);
	if (rc != 0 || len != p->pdu_len || memcmp(p->dst, p->pdu, HAKO_PDU_EPOCH_OFFSET) != 0 ||
	    memcmp(p->dst + HAKO_PDU_EPOCH_OFFSET + 1, p->pdu + HAKO_PDU_EPOCH_OFFSET + 1,
	           p->pdu_len - HAKO_PDU_EPOCH_OFFSET - 1) != 0) {
		die("%s: PDU -> CDR -> PDU is not the identity", p->name);
	}
}

static void payload_free(payload_t *p)
{
	free(p->owned[0]);
	free(p->owned[1]);
	free(p->in);
	free(p->out);
	free(p->pdu);
	free(p->dst);
	free(p->json);
	free(p->cdr);
	free(p->cdr_dst);
}

/* ---- Timing ---- */

static void run_batch(payload_t *p, int op, uint64_t n)
{
	switch (op) {
	case OP_MEMCPY:
		for (uint64_t i = 0; i < n; i++) {
			memcpy(p->dst, p->pdu, p->pdu_len);
			escape(p->dst);
		}
		break;
	case OP_ENCODE:
		for (uint64_t i = 0; i < n; i++) {
			p->encode(p);
			escape(p->dst);
		}
		break;
	case OP_DECODE:
		for (uint64_t i = 0; i < n; i++) {
			p->decode(p);
			escape(p->out);
		}
		break;
	case OP_TO_JSON:
		for (uint64_t i = 0; i < n; i++) {
			char *out = NULL;
			int rc = hako_pdu_to_json(p->type, p->pdu, p->pdu_len, 0, &out, &g_err);
			if (rc != 0) {
				die("%s: to_json: %s", p->name, hako_strerror(rc));
			}
			escape(out);
			free(out);
		}
		break;
	case OP_FROM_JSON:
		for (uint64_t i = 0; i < n; i++) {
			size_t len = 0;
			int rc = hako_pdu_from_json(p->type, p->json, p->json_len, p->dst, p->cap,
			                            &len, &g_err);
			if (rc != 0) {
				die("%s: from_json: %s", p->name, hako_strerror(rc));
			}
			escape(p->dst);
		}
		break;
	case OP_TO_CDR:
		for (uint64_t i = 0; i < n; i++) {
			size_t len = 0;
			int rc = hako_cdr_encode(p->type, p->pdu, p->pdu_len, p->cdr_dst,
			                         p->cdr_len, &len, &g_err);
			if (rc != 0) {
				die("%s: to CDR: %s", p->name, hako_strerror(rc));
			}
			escape(p->cdr_dst);
		}
		break;
	case OP_FROM_CDR:
		for (uint64_t i = 0; i < n; i++) {
			size_t len = 0;
			int rc = hako_cdr_decode(p->type, p->cdr, p->cdr_len, p->dst, p->cap, &len,
			                         &g_err);
			if (rc != 0) {
				die("%s: from CDR: %s", p->name, hako_strerror(rc));
			}
			escape(p->dst);
		}
		break;
	}
}

struct cell {
	bench_samples_t s; /* per-operation time of each batch, in picoseconds */
	uint64_t batch;    /* operations per batch */
	uint64_t ops;
	int64_t wall_ns;
	bench_cpu_t cpu;
	double round_p50_ns[MAX_ROUNDS];
	int rounds;
};

/* Operations per batch so that one batch takes about batch_ns (at least 1). The time of one
 * operation is the fastest of 5 trials of about half a batch each, so a cold start or a
 * preemption during calibration does not shrink the batches. */
static uint64_t calibrate(payload_t *p, int op, int64_t batch_ns)
{
	double per_op = 0.0;
	for (int trial = 0; trial < 5; trial++) {
		uint64_t n = 0;
		int64_t t0 = bench_now_ns();
		int64_t el;
		do {
			run_batch(p, op, 1);
			n++;
			el = bench_now_ns() - t0;
		} while (el < batch_ns / 2);
		double t = (double)el / (double)n;
		if (trial == 0 || t < per_op) {
			per_op = t;
		}
	}
	double b = (double)batch_ns / per_op;
	return b < 1.0 ? 1 : (uint64_t)b;
}

static void run_cell(payload_t *p, int op, struct cell *c, int64_t budget_ns, int min_batches)
{
	bench_samples_t round = {0};
	run_batch(p, op, c->batch); /* warm-up, discarded */
	bench_cpu_t cpu0 = bench_cpu_self();
	int64_t start = bench_now_ns();
	int64_t wall = 0;
	int batches = 0;
	while (batches < min_batches || wall < budget_ns) {
		int64_t t0 = bench_now_ns();
		run_batch(p, op, c->batch);
		int64_t t1 = bench_now_ns();
		uint64_t ps = (uint64_t)(t1 - t0) * 1000u / c->batch;
		bench_samples_push(&round, ps);
		bench_samples_push(&c->s, ps);
		c->ops += c->batch;
		c->wall_ns += t1 - t0;
		wall = t1 - start;
		batches++;
	}
	bench_cpu_t d = bench_cpu_sub(bench_cpu_self(), cpu0);
	c->cpu.user += d.user;
	c->cpu.sys += d.sys;
	bench_stats_t st = bench_stats(&round, 0.001);
	if (c->rounds < MAX_ROUNDS) {
		c->round_p50_ns[c->rounds++] = st.p50 * 1000.0;
	}
	bench_samples_free(&round);
}

/* As bench_print_row, with 0.1 ns resolution in the latency columns (operations are ns-scale). */
static void print_row(const char *variant, size_t payload, const struct cell *c,
                      const bench_stats_t *st)
{
	double ops_per_s = c->wall_ns > 0 ? (double)c->ops * 1e9 / (double)c->wall_ns : 0.0;
	printf("pdu_codec,%s,%zu,%llu,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.1f,%.3f,%.3f\n", variant,
	       payload, (unsigned long long)c->ops, st->min, st->mean, st->p50, st->p90, st->p99,
	       st->max, ops_per_s, c->cpu.user, c->cpu.sys);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: pdu_codec [options]\n"
	           "  --quick          short runs (CI smoke run)\n"
	           "  --rounds R       interleaved rounds (default 3)\n"
	           "  --seconds S      time per operation and payload, all rounds (default 0.3)\n"
	           "  --batch-us B     target duration of one timed batch (default 50)\n"
	           "  --payloads LIST  of twist,struct-array-64,pointcloud2-1MiB (default all)\n"
	           "  -v, --verbose    progress on stderr\n");
}

static int parse_payloads(const char *s, int *want)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", s);
	char *save = NULL;
	int n = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t i = 0;
		while (i < NPAYLOADS && strcmp(payload_defs[i].name, t) != 0) {
			i++;
		}
		if (i == NPAYLOADS) {
			fprintf(stderr, "pdu_codec: unknown payload %s\n", t);
			return -1;
		}
		want[i] = 1;
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	long rounds = 3;
	double seconds = 0.3, batch_us = 50;
	int quick = 0;
	int want[NPAYLOADS];
	for (size_t i = 0; i < NPAYLOADS; i++) {
		want[i] = 1;
	}
	static const struct option opts[] = {
	    {"quick", no_argument, NULL, 'q'},          {"rounds", required_argument, NULL, 'r'},
	    {"seconds", required_argument, NULL, 's'},  {"batch-us", required_argument, NULL, 'b'},
	    {"payloads", required_argument, NULL, 'p'}, {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
	};
	int o;
	while ((o = getopt_long(argc, argv, "qr:s:b:p:vh", opts, NULL)) != -1) {
		switch (o) {
		case 'q': quick = 1; break;
		case 'r': rounds = atol(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'b': batch_us = atof(optarg); break;
		case 'p':
			for (size_t i = 0; i < NPAYLOADS; i++) {
				want[i] = 0;
			}
			if (parse_payloads(optarg, want) <= 0) {
				usage(stderr);
				return 2;
			}
			break;
		case 'v': g_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (quick) {
		seconds = 0.03;
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || seconds <= 0 || batch_us <= 0) {
		usage(stderr);
		return 2;
	}
	int min_batches = quick ? 2 : 5;
	int64_t budget_ns = (int64_t)(seconds * 1e9 / (double)rounds);
	int64_t batch_ns = (int64_t)(batch_us * 1000.0);

	hako_msg_registry_t *reg = NULL;
	if (hako_msg_registry_create(&reg) != 0) {
		die("hako_msg_registry_create failed");
	}
	hako_error_t err;
	char msg[1200];
	hako_error_clear(&err);
	const hako_msg_type_t *pa = NULL;
	if (hako_msg_registry_add_text(reg, "bench_msgs", "PoseArray", pose_array_msg,
	                               "<bench>/bench_msgs/PoseArray.msg", &pa, &err) != 0) {
		die("%s", hako_error_format(&err, msg, sizeof(msg)));
	}

	static payload_t payloads[NPAYLOADS];
	static struct cell cells[NPAYLOADS][NOPS];
	for (size_t i = 0; i < NPAYLOADS; i++) {
		if (!want[i]) {
			continue;
		}
		payload_setup(&payloads[i], &payload_defs[i], reg);
		for (int op = 0; op < NOPS; op++) {
			cells[i][op].batch = calibrate(&payloads[i], op, batch_ns);
		}
	}
	for (long rd = 0; rd < rounds; rd++) {
		if (g_verbose) {
			fprintf(stderr, "round %ld/%ld\n", rd + 1, rounds);
		}
		for (size_t i = 0; i < NPAYLOADS; i++) {
			for (int op = 0; want[i] && op < NOPS; op++) {
				run_cell(&payloads[i], op, &cells[i][op], budget_ns, min_batches);
			}
		}
	}

	puts(BENCH_CSV_HEADER);
	double p50[NPAYLOADS][NOPS]; /* ns per PDU */
	char name[64];
	for (size_t i = 0; i < NPAYLOADS; i++) {
		for (int op = 0; want[i] && op < NOPS; op++) {
			struct cell *c = &cells[i][op];
			bench_stats_t st = bench_stats(&c->s, 0.001);
			st.mean = (double)c->wall_ns / (double)c->ops / 1000.0;
			p50[i][op] = st.p50 * 1000.0;
			snprintf(name, sizeof(name), "%s:%s", op_names[op], payloads[i].name);
			print_row(name, payloads[i].pdu_len, c, &st);
		}
	}

	printf("# method: %ld interleaved rounds (per round, per payload:", rounds);
	for (int op = 0; op < NOPS; op++) {
		printf("%s %s", op == 0 ? "" : ",", op_names[op]);
	}
	printf("), %.3f s per operation and payload per round, at least %d batches; one sample = "
	       "one batch of N back-to-back operations (N for ~%.0f us) / N; latency columns = "
	       "time per PDU in us; variant = operation:payload; payload_bytes = PDU size; "
	       "JSON compact\n",
	       (double)budget_ns / 1e9, min_batches, batch_us);
	for (size_t i = 0; i < NPAYLOADS; i++) {
		if (!want[i]) {
			continue;
		}
		const payload_t *p = &payloads[i];
		printf("# payload %s: %s, %s; PDU %zu B, JSON %zu B, CDR %zu B\n", p->name,
		       p->type->full_name, p->what, p->pdu_len, p->json_len, p->cdr_len);
		printf("# batch size %s:", p->name);
		for (int op = 0; op < NOPS; op++) {
			printf(" %s %llu", op_names[op], (unsigned long long)cells[i][op].batch);
		}
		printf("\n");
		for (int op = 0; op < NOPS; op++) {
			printf("# round p50 ns %s:%s:", op_names[op], p->name);
			for (int r = 0; r < cells[i][op].rounds; r++) {
				printf(" %.1f", cells[i][op].round_p50_ns[r]);
			}
			printf("\n");
		}
		printf("# ns per PDU p50 %s:", p->name);
		for (int op = 0; op < NOPS; op++) {
			printf(" %s %.1f", op_names[op], p50[i][op]);
		}
		printf("\n");
		printf("# GB/s of PDU %s (PDU bytes / p50):", p->name);
		for (int op = 0; op <= OP_DECODE; op++) {
			printf(" %s %.2f", op_names[op], (double)p->pdu_len / p50[i][op]);
		}
		printf("\n");
		printf("# MB/s of JSON %s (JSON bytes / p50): to-json %.0f, from-json %.0f\n",
		       p->name, (double)p->json_len / p50[i][OP_TO_JSON] * 1000.0,
		       (double)p->json_len / p50[i][OP_FROM_JSON] * 1000.0);
		for (int op = OP_ENCODE; op < NOPS; op++) {
			printf("# ratio %s/memcpy p50 %s: %.2f\n", op_names[op], p->name,
			       p50[i][op] / p50[i][OP_MEMCPY]);
		}
	}
	for (size_t i = 0; i < NPAYLOADS; i++) {
		if (!want[i] || payloads[i].type->has_varray) {
			continue;
		}
		for (int op = OP_ENCODE; op <= OP_DECODE; op++) {
			double r = p50[i][op] / p50[i][OP_MEMCPY];
			printf("# goal fixed-size %s %s <= 2x memcpy: %.2f %s\n", payloads[i].name,
			       op_names[op], r, r <= 2.0 ? "PASS" : "MISS");
		}
	}
	for (size_t i = 0; i < NPAYLOADS; i++) {
		for (int op = OP_TO_JSON; want[i] && op <= OP_FROM_JSON; op++) {
			double mbs = (double)payloads[i].json_len / p50[i][op] * 1000.0;
			printf("# goal %s %s >= 100 MB/s of JSON: %.0f %s\n", op_names[op],
			       payloads[i].name, mbs, mbs >= 100.0 ? "PASS" : "MISS");
		}
	}
	/* hako-record of the 256-drone fleet: 1,024 PDUs in every 1 ms step, on one core */
	for (size_t i = 0; i < NPAYLOADS; i++) {
		if (want[i] && !payloads[i].type->has_varray) {
			double per_s = 1e9 / p50[i][OP_TO_CDR];
			printf("# goal to-cdr %s >= 1.024 M PDUs/s: %.2f M %s\n", payloads[i].name,
			       per_s / 1e6, per_s >= 1.024e6 ? "PASS" : "MISS");
		}
	}
	fflush(stdout);
	for (size_t i = 0; i < NPAYLOADS; i++) {
		for (int op = 0; op < NOPS; op++) {
			bench_samples_free(&cells[i][op].s);
		}
		if (want[i]) {
			payload_free(&payloads[i]);
		}
	}
	hako_msg_registry_destroy(reg);
	return 0;
}
