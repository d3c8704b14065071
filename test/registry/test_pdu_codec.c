/* The binary PDU codec: PDUs written byte by byte from the format description decode to the
 * right values and are exactly what the writer produces; malformed PDUs are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/pdu.h"
#include "test_pdu_types.h"

/* ---- little-endian bytes, written one by one (not through the library's helpers) ---- */

static void le32(uint8_t *b, size_t at, uint32_t v)
{
	b[at] = (uint8_t)v;
	b[at + 1] = (uint8_t)(v >> 8);
	b[at + 2] = (uint8_t)(v >> 16);
	b[at + 3] = (uint8_t)(v >> 24);
}

static void le64(uint8_t *b, size_t at, uint64_t v)
{
	le32(b, at, (uint32_t)v);
	le32(b, at + 4, (uint32_t)(v >> 32));
}

static void lef64(uint8_t *b, size_t at, double d)
{
	uint64_t v;
	memcpy(&v, &d, sizeof(v));
	le64(b, at, v);
}

static void meta(uint8_t *b, uint32_t heap_off, uint32_t total)
{
	static const uint8_t head[12] = {0x78, 0x56, 0x34, 0x12, 1, 0, 0, 0, 24, 0, 0, 0};
	memcpy(b, head, sizeof(head));
	le32(b, 12, heap_off);
	le32(b, 16, total);
	b[20] = b[21] = b[22] = b[23] = 0;
}

static void expect_json(const hako_msg_type_t *type, const uint8_t *pdu, size_t len,
                        const char *want)
{
	char *json = NULL;
	hako_error_t err = {0};
	int rc = hako_pdu_to_json(type, pdu, len, 0, &json, &err);
	if (rc != 0) {
		fail_msg("to_json %s: %d %s", type->full_name, rc, err.message);
	}
	assert_string_equal(json, want);
	free(json);
}

/* from_json of want gives exactly the bytes of pdu. */
static void expect_from_json(const hako_msg_type_t *type, const char *json, const uint8_t *pdu,
                             size_t len)
{
	uint8_t *buf = malloc(len + 16);
	size_t got = 0;
	hako_error_t err = {0};
	memset(buf, 0xAA, len + 16);
	int rc = hako_pdu_from_json(type, json, strlen(json), buf, len + 16, &got, &err);
	if (rc != 0) {
		fail_msg("from_json %s: %d %s", type->full_name, rc, err.message);
	}
	assert_int_equal(got, len);
	assert_memory_equal(buf, pdu, len);
	free(buf);
}

/* ---- geometry_msgs/Twist: 72 bytes, no heap ---- */

static const char twist_json[] =
    "{\"linear\":{\"x\":1.5,\"y\":-2.25,\"z\":3.0},\"angular\":{\"x\":0.0,\"y\":0.125,\"z\":-4.0}}";

static void twist_bytes(uint8_t b[72])
{
	memset(b, 0, 72);
	meta(b, 72, 72);
	lef64(b, 24, 1.5);
	lef64(b, 32, -2.25);
	lef64(b, 40, 3.0);
	lef64(b, 48, 0.0);
	lef64(b, 56, 0.125);
	lef64(b, 64, -4.0);
}

static void test_twist(void **state)
{
	(void)state;
	uint8_t b[72];
	twist_bytes(b);
	hako_pdu_meta_t m;
	assert_int_equal(hako_pdu_classify(b, sizeof(b)), HAKO_PDU_VALID);
	assert_int_equal(hako_pdu_meta_read(b, sizeof(b), &m), 0);
	assert_int_equal(m.magic, HAKO_PDU_MAGIC);
	assert_int_equal(m.version, 1);
	assert_int_equal(m.base_off, 24);
	assert_int_equal(m.heap_off, 72);
	assert_int_equal(m.total_size, 72);
	assert_int_equal(hako_msg_pdu_fixed_size(&t_twist), 72);
	assert_int_equal(hako_pdu_validate(&t_twist, b, sizeof(b), NULL), 0);
	double y;
	memcpy(&y, (uint8_t *)hako_pdu_base(b) + 8, sizeof(y));
	assert_true(y == -2.25);
	expect_json(&t_twist, b, sizeof(b), twist_json);

	/* the writer: meta, zeroed base, then the fields */
	uint8_t w_buf[80];
	hako_pdu_writer_t w;
	size_t len = 0;
	memset(w_buf, 0xAA, sizeof(w_buf));
	assert_int_equal(hako_pdu_writer_init(&w, &t_twist, w_buf, sizeof(w_buf)), 0);
	const double v[6] = {1.5, -2.25, 3.0, 0.0, 0.125, -4.0};
	memcpy(hako_pdu_base(w_buf), v, sizeof(v));
	assert_int_equal(hako_pdu_writer_finish(&w, &len), 0);
	assert_int_equal(len, 72);
	assert_memory_equal(w_buf, b, 72);

	expect_from_json(&t_twist, twist_json, b, sizeof(b));
}

/* ---- sensor_msgs/PointCloud2: header, 3 PointFields, 12 bytes of data ---- */

#define PC2_TOTAL 632u

static const char pc2_json[] =
    "{\"header\":{\"stamp\":{\"sec\":1700000000,\"nanosec\":500},\"frame_id\":\"lidar\"},"
    "\"height\":1,\"width\":1,\"fields\":[{\"name\":\"x\",\"offset\":0,\"datatype\":7,"
    "\"count\":1},{\"name\":\"y\",\"offset\":4,\"datatype\":7,\"count\":1},{\"name\":\"z\","
    "\"offset\":8,\"datatype\":7,\"count\":1}],\"is_bigendian\":false,\"point_step\":12,"
    "\"row_step\":12,\"data\":[0,0,128,63,0,0,0,64,0,0,64,64],\"is_dense\":true}";

/* heap at 24 + 176 = 200: fields[0..2] (140 bytes each) at heap 0, data at heap 420 */
static void pc2_bytes(uint8_t b[PC2_TOTAL])
{
	memset(b, 0, PC2_TOTAL);
	meta(b, 200, PC2_TOTAL);
	le32(b, 24, 1700000000); /* header.stamp.sec */
	le32(b, 28, 500);        /* header.stamp.nanosec */
	memcpy(b + 32, "lidar", 5);
	le32(b, 160, 1);   /* height */
	le32(b, 164, 1);   /* width */
	le32(b, 168, 3);   /* fields.length */
	le32(b, 172, 0);   /* fields.offset */
	le32(b, 176, 0);   /* is_bigendian */
	le32(b, 180, 12);  /* point_step */
	le32(b, 184, 12);  /* row_step */
	le32(b, 188, 12);  /* data.length */
	le32(b, 192, 420); /* data.offset */
	le32(b, 196, 1);   /* is_dense */
	for (int i = 0; i < 3; i++) {
		size_t at = 200 + 140 * (size_t)i;
		b[at] = (uint8_t)('x' + i);
		le32(b, at + 128, 4 * (uint32_t)i); /* offset */
		b[at + 132] = 7;                    /* datatype FLOAT32 */
		le32(b, at + 136, 1);               /* count */
	}
	static const uint8_t data[12] = {0, 0, 0x80, 0x3F, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40};
	memcpy(b + 620, data, sizeof(data));
}

static void test_point_cloud2(void **state)
{
	(void)state;
	uint8_t b[PC2_TOTAL];
	pc2_bytes(b);
	assert_int_equal(hako_pdu_validate(&t_point_cloud2, b, sizeof(b), NULL), 0);
	uint8_t *base = hako_pdu_base(b);

	uint32_t n = 99;
	const uint8_t *fields = hako_pdu_varray(b, sizeof(b), base + 144, 140, &n);
	assert_int_equal(n, 3);
	assert_ptr_equal(fields, b + 200);
	assert_string_equal((const char *)fields + 140, "y");
	uint32_t off;
	memcpy(&off, fields + 2 * 140 + 128, sizeof(off));
	assert_int_equal(off, 8);

	const uint8_t *data = hako_pdu_varray(b, sizeof(b), base + 164, 1, &n);
	assert_int_equal(n, 12);
	float f;
	memcpy(&f, data + 8, sizeof(f));
	assert_true(f == 3.0f);
	expect_json(&t_point_cloud2, b, sizeof(b), pc2_json);

	/* the writer lays out the same bytes */
	uint8_t w_buf[700];
	hako_pdu_writer_t w;
	size_t len = 0;
	memset(w_buf, 0xAA, sizeof(w_buf));
	assert_int_equal(hako_pdu_writer_init(&w, &t_point_cloud2, w_buf, sizeof(w_buf)), 0);
	uint8_t *wb = hako_pdu_base(w_buf);
	const int32_t sec = 1700000000;
	const uint32_t u[] = {500, 1, 1, 12, 12, 1};
	memcpy(wb, &sec, 4);
	memcpy(wb + 4, &u[0], 4);
	memcpy(wb + 8, "lidar", 5);
	memcpy(wb + 136, &u[1], 4);
	memcpy(wb + 140, &u[2], 4);
	memcpy(wb + 156, &u[3], 4);
	memcpy(wb + 160, &u[4], 4);
	memcpy(wb + 172, &u[5], 4);
	uint8_t *wf = hako_pdu_writer_varray(&w, wb + 144, 3, 140);
	assert_non_null(wf);
	for (uint32_t i = 0; i < 3; i++) {
		uint32_t o = 4 * i;
		uint32_t one = 1;
		wf[140 * i] = (uint8_t)('x' + i);
		memcpy(wf + 140 * i + 128, &o, 4);
		wf[140 * i + 132] = 7;
		memcpy(wf + 140 * i + 136, &one, 4);
	}
	uint8_t *wd = hako_pdu_writer_varray(&w, wb + 164, 12, 1);
	assert_non_null(wd);
	const float xyz[3] = {1.0f, 2.0f, 3.0f};
	memcpy(wd, xyz, sizeof(xyz));
	assert_int_equal(hako_pdu_writer_finish(&w, &len), 0);
	assert_int_equal(len, PC2_TOTAL);
	assert_memory_equal(w_buf, b, PC2_TOTAL);

	expect_from_json(&t_point_cloud2, pc2_json, b, sizeof(b));
}

/* ---- hako_msgs/ExecutionUnitRuntimeStatus with 3 units ---- */

#define EU_TOTAL 76u

static const char eu_json[] =
    "{\"config_hash\":3405691582,\"unit_count\":3,\"status\":[0,1,2],\"epoch\":[5,6,7],"
    "\"curr_owner_node_id\":[1,2,3],\"next_owner_node_id\":[2,3,1]}";

static void eu_bytes(uint8_t b[EU_TOTAL])
{
	static const uint8_t heap[12] = {0, 1, 2, 5, 6, 7, 1, 2, 3, 2, 3, 1};
	memset(b, 0, EU_TOTAL);
	meta(b, 64, EU_TOTAL);
	le32(b, 24, 0xCAFEBABEu); /* config_hash */
	b[28] = 3;                /* unit_count (uint16) */
	for (uint32_t i = 0; i < 4; i++) {
		le32(b, 32 + 8 * i, 3);     /* length */
		le32(b, 36 + 8 * i, 3 * i); /* heap offset: packed, one after the other */
	}
	memcpy(b + 64, heap, sizeof(heap));
}

static void test_eu_status(void **state)
{
	(void)state;
	uint8_t b[EU_TOTAL];
	eu_bytes(b);
	assert_int_equal(hako_pdu_validate(&t_eu_status, b, sizeof(b), NULL), 0);
	uint8_t *base = hako_pdu_base(b);
	uint32_t n = 0;
	const uint8_t *next = hako_pdu_varray(b, sizeof(b), base + 32, 1, &n);
	assert_int_equal(n, 3);
	assert_int_equal(next[0], 2);
	assert_int_equal(next[2], 1);
	expect_json(&t_eu_status, b, sizeof(b), eu_json);

	uint8_t w_buf[EU_TOTAL];
	hako_pdu_writer_t w;
	size_t len = 0;
	assert_int_equal(hako_pdu_writer_init(&w, &t_eu_status, w_buf, sizeof(w_buf)), 0);
	uint8_t *wb = hako_pdu_base(w_buf);
	const uint32_t hash = 0xCAFEBABEu;
	const uint16_t units = 3;
	memcpy(wb, &hash, 4);
	memcpy(wb + 4, &units, 2);
	static const uint8_t vals[4][3] = {{0, 1, 2}, {5, 6, 7}, {1, 2, 3}, {2, 3, 1}};
	for (uint32_t i = 0; i < 4; i++) {
		uint8_t *a = hako_pdu_writer_varray(&w, wb + 8 + 8 * i, 3, 1);
		assert_non_null(a);
		memcpy(a, vals[i], 3);
	}
	assert_int_equal(hako_pdu_writer_finish(&w, &len), 0);
	assert_int_equal(len, EU_TOTAL);
	assert_memory_equal(w_buf, b, EU_TOTAL);

	expect_from_json(&t_eu_status, eu_json, b, sizeof(b));
}

/* ---- malformed PDUs ---- */

static void expect_refused(const hako_msg_type_t *type, const uint8_t *b, size_t len,
                           const char *want)
{
	hako_error_t err = {0};
	char *json = (char *)"untouched";
	assert_int_equal(hako_pdu_validate(type, b, len, &err), HAKO_EPROTO);
	assert_string_equal(err.message, want);
	/* to_json validates first and says the same */
	memset(&err, 0, sizeof(err));
	assert_int_equal(hako_pdu_to_json(type, b, len, 0, &json, &err), HAKO_EPROTO);
	assert_null(json);
	assert_string_equal(err.message, want);
}

struct mutation {
	size_t at;
	uint32_t value;
	const char *want;
};

static void test_malformed_pc2(void **state)
{
	(void)state;
	static const struct mutation cases[] = {
	    /* heap overlapping the base */
	    {12, 192,
	     "heap offset 192 is inside the base of sensor_msgs/PointCloud2 (its fields end at "
	     "200)"},
	    {12, 20, "heap offset 20 (must be at least 24)"},
	    /* a heap offset past the base is followed, wherever it points */
	    {12, 204, "data: length 12 x 1 at heap offset 420 runs past the end (total size 632)"},
	    {8, 32, "base offset 32 (expected 24)"},
	    {0, 0x12345679, "bad magic 0x12345679 (expected 0x12345678)"},
	    {4, 2, "unsupported version 2 (expected 1)"},
	    {16, 100, "total size 100 is less than the heap offset 200"},
	    {16, 640, "truncated: total size 640 but 632 bytes"},
	    /* offsets past the end */
	    {192, 421, "data: length 12 x 1 at heap offset 421 runs past the end (total size 632)"},
	    {188, 0x7FFFFFFF,
	     "data: length 2147483647 x 1 at heap offset 420 runs past the end (total size 632)"},
	    {172, 300,
	     "fields: length 3 x 140 at heap offset 300 runs past the end (total size 632)"},
	    /* negative lengths and offsets */
	    {168, 0xFFFFFFFF, "fields: negative length -1"},
	    {188, 0x80000000, "data: negative length -2147483648"},
	    {192, 0xFFFFFFF8, "data: negative heap offset -8"},
	    /* length * element size overflowing int32 */
	    {168, 20000000, "fields: length 20000000 x 140 overflows int32"},
	    {168, 0x7FFFFFFF, "fields: length 2147483647 x 140 overflows int32"},
	    {188, 13, "data: length 13 x 1 at heap offset 420 runs past the end (total size 632)"},
	};
	uint8_t good[PC2_TOTAL];
	uint8_t b[PC2_TOTAL];
	pc2_bytes(good);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(b, good, sizeof(b));
		le32(b, cases[i].at, cases[i].value);
		expect_refused(&t_point_cloud2, b, sizeof(b), cases[i].want);
	}

	/* truncated buffers */
	expect_refused(&t_point_cloud2, good, PC2_TOTAL - 1,
	               "truncated: total size 632 but 631 bytes");
	expect_refused(&t_point_cloud2, good, 23, "23 bytes, shorter than the 24-byte meta header");

	/* never written */
	memset(b, 0, sizeof(b));
	assert_int_equal(hako_pdu_classify(b, sizeof(b)), HAKO_PDU_UNINITIALIZED);
	expect_refused(&t_point_cloud2, b, sizeof(b),
	               "never written (the meta header is all zero)");

	/* arrays that share heap bytes: data over the fields, 13 more bytes than the heap */
	memcpy(b, good, sizeof(b));
	le32(b, 188, 13);
	le32(b, 192, 0);
	expect_refused(&t_point_cloud2, b, sizeof(b),
	               "data: variable arrays overlap (together more than the 432-byte heap)");

	/* a string slot without NUL */
	memcpy(b, good, sizeof(b));
	memset(b + 200 + 140, 'y', 128);
	expect_refused(&t_point_cloud2, b, sizeof(b),
	               "fields[1].name: string not NUL-terminated in its 128-byte slot");
	memcpy(b, good, sizeof(b));
	memset(b + 32, 'f', 128);
	expect_refused(&t_point_cloud2, b, sizeof(b),
	               "header.frame_id: string not NUL-terminated in its 128-byte slot");

	/* a smaller type's PDU against this type: its heap would cover this type's fields */
	hako_error_t err = {0};
	uint8_t tw[72];
	twist_bytes(tw);
	assert_int_equal(hako_pdu_validate(&t_point_cloud2, tw, sizeof(tw), &err), HAKO_EPROTO);
	assert_string_equal(
	    err.message,
	    "heap offset 72 is inside the base of sensor_msgs/PointCloud2 (its fields end at 200)");
	assert_int_equal(hako_pdu_validate(NULL, good, sizeof(good), &err), HAKO_EINVAL);
}

/* ---- test/Poly: struct arrays with their own arrays, Hakoniwa's heap order ---- */

/* points: 3 Segs with data of 2 bytes each; pair[i].data 1 byte each; k 2 int16 */
static size_t poly_write(uint8_t *buf, size_t cap, int *rc)
{
	hako_pdu_writer_t w;
	size_t len = 0;
	hako_pdu_writer_init(&w, &t_poly, buf, cap);
	uint8_t *base = buf != NULL && cap >= 328 ? hako_pdu_base(buf) : NULL;
	uint8_t *pts = hako_pdu_writer_varray(&w, base, 3, 136);
	for (uint32_t i = 0; i < 3; i++) {
		uint8_t *d = hako_pdu_writer_varray(&w, pts != NULL ? pts + 136 * i : NULL, 2, 1);
		if (d != NULL) {
			d[0] = (uint8_t)(10 * i);
			d[1] = (uint8_t)(10 * i + 1);
			snprintf((char *)pts + 136 * i + 8, 128, "p%u", i);
		}
	}
	for (uint32_t i = 0; i < 2; i++) {
		uint8_t *d =
		    hako_pdu_writer_varray(&w, base != NULL ? base + 20 + 136 * i : NULL, 1, 1);
		if (d != NULL) {
			d[0] = (uint8_t)(100 + i);
		}
	}
	int16_t *k = hako_pdu_writer_varray(&w, base != NULL ? base + 292 : NULL, 2, 2);
	if (k != NULL) {
		const int16_t kv[2] = {-1, 300};
		memcpy(k, kv, sizeof(kv));
	}
	if (base != NULL) {
		const float wv[3] = {0.5f, -1.0f, 0.1f};
		memcpy(base + 8, wv, sizeof(wv));
	}
	*rc = hako_pdu_writer_finish(&w, &len);
	return len;
}

static int32_t rd32(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static void test_poly_heap_order(void **state)
{
	(void)state;
	int rc;
	/* a sizing pass without a buffer */
	size_t need = poly_write(NULL, 0, &rc);
	assert_int_equal(rc, HAKO_ETOOBIG);
	assert_int_equal(need, 328 + 420);
	uint8_t *b = calloc(1, need);
	assert_int_equal(poly_write(b, need, &rc), need);
	assert_int_equal(rc, 0);
	assert_int_equal(hako_pdu_validate(&t_poly, b, need, NULL), 0);
	uint8_t *base = hako_pdu_base(b);
	uint8_t *heap = b + 328;
	/* the three elements' fixed parts first, then their data in element order */
	assert_int_equal(rd32(base), 3);
	assert_int_equal(rd32(base + 4), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(rd32(heap + 136 * i), 2);
		assert_int_equal(rd32(heap + 136 * i + 4), 408 + 2 * i);
	}
	assert_int_equal(rd32(base + 20 + 4), 414);
	assert_int_equal(rd32(base + 20 + 136 + 4), 415);
	assert_int_equal(rd32(base + 292 + 4), 416);
	assert_int_equal(rd32(b + 16), 748);

	/* the elements through hako_pdu_varray, nested ones too */
	uint32_t n = 0;
	const uint8_t *pts = hako_pdu_varray(b, need, base, 136, &n);
	assert_int_equal(n, 3);
	const uint8_t *d = hako_pdu_varray(b, need, pts + 2 * 136, 1, &n);
	assert_int_equal(n, 2);
	assert_int_equal(d[1], 21);

	expect_json(
	    &t_poly, b, need,
	    "{\"points\":[{\"data\":[0,1],\"name\":\"p0\"},{\"data\":[10,11],\"name\":\"p1\"},"
	    "{\"data\":[20,21],\"name\":\"p2\"}],\"w\":[0.5,-1.0,0.1],\"pair\":[{\"data\":["
	    "100],\"name\":\"\"},{\"data\":[101],\"name\":\"\"}],\"k\":[-1,300]}");

	/* errors name the path */
	uint8_t *bad = malloc(need);
	memcpy(bad, b, need);
	le32(bad, 328 + 2 * 136, 100);
	expect_refused(&t_poly, bad, need,
	               "points[2].data: length 100 x 1 at heap offset 412 runs past the end (total "
	               "size 748)");
	memcpy(bad, b, need);
	memset(base - b + bad + 20 + 136 + 8, 'n', 128);
	expect_refused(&t_poly, bad, need,
	               "pair[1].name: string not NUL-terminated in its 128-byte slot");
	memcpy(bad, b, need);
	le32(bad, 328 + 136 + 4, 0xFFFFFFFF);
	expect_refused(&t_poly, bad, need, "points[1].data: negative heap offset -1");
	free(bad);
	free(b);
}

/* ---- hako_pdu_varray ---- */

static void test_varray_bounds(void **state)
{
	(void)state;
	uint8_t b[PC2_TOTAL];
	uint32_t n = 7;
	pc2_bytes(b);
	uint8_t *base = hako_pdu_base(b);
	uint32_t outside[2] = {1, 0};
	assert_null(hako_pdu_varray(b, sizeof(b), b + 8, 1, &n)); /* in the meta */
	assert_int_equal(n, 0);
	assert_null(hako_pdu_varray(b, sizeof(b), b + PC2_TOTAL - 4, 1, &n)); /* past the end */
	assert_null(hako_pdu_varray(b, sizeof(b), outside, 1, &n));
	assert_null(hako_pdu_varray(b, sizeof(b), NULL, 1, &n));
	assert_null(hako_pdu_varray(b, sizeof(b), base + 144, 0x10000000, &n)); /* overflow */
	assert_null(hako_pdu_varray(b, PC2_TOTAL - 1, base + 144, 140, &n));    /* truncated */
	le32(b, PC2_TOTAL - 8, 2); /* the last 8 bytes read as {2, 0}: a ref may sit there */
	le32(b, PC2_TOTAL - 4, 0);
	assert_ptr_equal(hako_pdu_varray(b, sizeof(b), b + PC2_TOTAL - 8, 1, &n), b + 200);
	assert_int_equal(n, 2);
	le32(b, 188, 0xFFFFFFF0);
	assert_null(hako_pdu_varray(b, sizeof(b), base + 164, 1, &n));
	le32(b, 188, 13);
	assert_null(hako_pdu_varray(b, sizeof(b), base + 164, 1, &n));
	le32(b, 188, 0);
	le32(b, 192, 432); /* empty, at the end of the heap */
	const uint8_t *e = hako_pdu_varray(b, sizeof(b), base + 164, 1, &n);
	assert_non_null(e);
	assert_ptr_equal(e, b + PC2_TOTAL);
	assert_int_equal(n, 0);
	le32(b, 192, 433);
	assert_null(hako_pdu_varray(b, sizeof(b), base + 164, 1, &n));
}

/* ---- the writer ---- */

static void test_writer(void **state)
{
	(void)state;
	uint8_t b[128];
	hako_pdu_writer_t w;
	size_t len = 0;

	/* count 0 takes the current heap end as its offset */
	assert_int_equal(hako_pdu_writer_init(&w, &t_eu_status, b, sizeof(b)), 0);
	uint8_t *base = hako_pdu_base(b);
	assert_non_null(hako_pdu_writer_varray(&w, base + 8, 2, 1));
	uint8_t *e = hako_pdu_writer_varray(&w, base + 16, 0, 1);
	assert_ptr_equal(e, b + 66);
	assert_int_equal(rd32(base + 16), 0);
	assert_int_equal(rd32(base + 20), 2);
	/* a ref outside the written part is refused */
	assert_null(hako_pdu_writer_varray(&w, b + 70, 1, 1));
	assert_int_equal(w.error, HAKO_EINVAL);
	assert_int_equal(hako_pdu_writer_finish(&w, &len), HAKO_EINVAL);

	assert_int_equal(hako_pdu_writer_init(&w, &t_eu_status, b, sizeof(b)), 0);
	assert_null(hako_pdu_writer_varray(&w, b + 8, 1, 1)); /* in the meta */
	assert_int_equal(w.error, HAKO_EINVAL);
	assert_int_equal(hako_pdu_writer_init(&w, &t_eu_status, b, sizeof(b)), 0);
	assert_null(hako_pdu_writer_varray(&w, NULL, 1, 1));
	assert_int_equal(w.error, HAKO_EINVAL);

	/* too small: keeps counting */
	assert_int_equal(hako_pdu_writer_init(&w, &t_eu_status, b, 70), 0);
	assert_non_null(hako_pdu_writer_varray(&w, base + 8, 3, 1));
	assert_null(hako_pdu_writer_varray(&w, base + 16, 5, 1));
	assert_int_equal(w.error, HAKO_ETOOBIG);
	assert_null(hako_pdu_writer_varray(&w, base + 24, 7, 1));
	assert_int_equal(hako_pdu_writer_finish(&w, &len), HAKO_ETOOBIG);
	assert_int_equal(len, 64 + 15);
	assert_int_equal(hako_pdu_writer_init(&w, &t_eu_status, b, 63), HAKO_ETOOBIG);
	assert_int_equal(w.needed, 64);

	/* bad arguments; more than int32 */
	assert_int_equal(hako_pdu_writer_init(&w, &t_eu_status, NULL, 10), HAKO_EINVAL);
	assert_int_equal(hako_pdu_writer_init(&w, NULL, b, sizeof(b)), HAKO_EINVAL);
	assert_int_equal(hako_pdu_writer_init(&w, &t_point_cloud2, NULL, 0), HAKO_ETOOBIG);
	assert_null(hako_pdu_writer_varray(&w, NULL, 0x40000000, 140));
	assert_int_equal(hako_pdu_writer_finish(&w, &len), HAKO_ETOOBIG);
	assert_int_equal(len, SIZE_MAX);

	/* a type without fields: meta only */
	assert_int_equal(hako_pdu_writer_init(&w, &t_empty, b, sizeof(b)), 0);
	assert_int_equal(hako_pdu_writer_finish(&w, &len), 0);
	assert_int_equal(len, 24);
	assert_int_equal(hako_pdu_validate(&t_empty, b, len, NULL), 0);
	expect_json(&t_empty, b, len, "{}");
}

/* ---- meta and epoch ---- */

static void test_meta_epoch(void **state)
{
	(void)state;
	uint8_t b[72];
	uint8_t epoch = 9;
	twist_bytes(b);
	assert_int_equal(hako_pdu_get_epoch(b, sizeof(b), &epoch), 0);
	assert_int_equal(epoch, 0);
	assert_int_equal(hako_pdu_set_epoch(b, sizeof(b), 201), 0);
	assert_int_equal(b[HAKO_PDU_EPOCH_OFFSET], 201);
	assert_int_equal(hako_pdu_get_epoch(b, sizeof(b), &epoch), 0);
	assert_int_equal(epoch, 201);
	hako_pdu_meta_t m;
	assert_int_equal(hako_pdu_meta_read(b, sizeof(b), &m), 0);
	assert_int_equal(m.epoch, 201);
	assert_int_equal(hako_pdu_validate(&t_twist, b, sizeof(b), NULL), 0);
	assert_int_equal(hako_pdu_get_epoch(b, 23, &epoch), HAKO_EPROTO);
	assert_int_equal(hako_pdu_set_epoch(b, 23, 1), HAKO_EPROTO);
	assert_int_equal(hako_pdu_get_epoch(NULL, 72, &epoch), HAKO_EINVAL);

	/* classify is Hakoniwa's: short, zero, magic+version, anything else */
	assert_int_equal(hako_pdu_classify(b, 23), HAKO_PDU_INVALID);
	assert_int_equal(hako_pdu_classify(NULL, 72), HAKO_PDU_INVALID);
	memset(b, 0, sizeof(b));
	assert_int_equal(hako_pdu_classify(b, 24), HAKO_PDU_UNINITIALIZED);
	assert_int_equal(hako_pdu_meta_read(b, 24, &m), HAKO_EPROTO);
	assert_int_equal(hako_pdu_set_epoch(b, sizeof(b), 1), HAKO_EPROTO);
	assert_int_equal(b[HAKO_PDU_EPOCH_OFFSET], 0);
	b[20] = 1;
	assert_int_equal(hako_pdu_classify(b, 24), HAKO_PDU_INVALID);
	twist_bytes(b);
	b[7] = 1; /* version 0x01000001 */
	assert_int_equal(hako_pdu_classify(b, 72), HAKO_PDU_INVALID);
	twist_bytes(b);
	le32(b, 16, 73);
	assert_int_equal(hako_pdu_classify(b, 72), HAKO_PDU_VALID);
	assert_int_equal(hako_pdu_meta_read(b, 72, &m), HAKO_EPROTO);
}

/* ---- the registry's layout of the same types gives the same reading ---- */

static void test_registry_agrees(void **state)
{
	(void)state;
	static const struct {
		const hako_msg_type_t *hand;
		void (*bytes)(uint8_t *);
		size_t len;
	} cases[] = {
	    {&t_twist, twist_bytes, 72},
	    {&t_point_cloud2, pc2_bytes, PC2_TOTAL},
	    {&t_eu_status, eu_bytes, EU_TOTAL},
	};
	hako_msg_registry_t *reg = NULL;
	assert_int_equal(hako_msg_registry_create(&reg), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const hako_msg_type_t *t = NULL;
		hako_error_t err = {0};
		int rc = hako_msg_registry_get(reg, cases[i].hand->full_name, &t, &err);
		if (rc != 0) {
			fail_msg("%s: %d %s", cases[i].hand->full_name, rc, err.message);
		}
		assert_int_equal(t->size, cases[i].hand->size);
		assert_int_equal(t->field_count, cases[i].hand->field_count);
		for (size_t f = 0; f < t->field_count; f++) {
			assert_string_equal(t->fields[f].name, cases[i].hand->fields[f].name);
			assert_int_equal(t->fields[f].offset, cases[i].hand->fields[f].offset);
			assert_int_equal(t->fields[f].elem_size,
			                 cases[i].hand->fields[f].elem_size);
		}
		uint8_t *b = malloc(cases[i].len);
		char *a = NULL;
		char *c = NULL;
		cases[i].bytes(b);
		assert_int_equal(hako_pdu_to_json(cases[i].hand, b, cases[i].len, 0, &a, NULL), 0);
		assert_int_equal(hako_pdu_to_json(t, b, cases[i].len, 0, &c, NULL), 0);
		assert_string_equal(a, c);
		free(a);
		free(c);
		free(b);
	}
	hako_msg_registry_destroy(reg);
}

/* ---- heap offsets that are not a multiple of 8 ---- */

/* PDUs as Hakoniwa's Python writer lays them out: the heap starts right where the base's last
 * field ends (24 + 4 for a std_msgs/Bool, 24 + 20 for a Float64MultiArray), and the total size
 * has no padding either. Each sits in a buffer of exactly its size, so a read past it or an
 * unaligned load shows under the sanitizers. */
static void test_unaligned_heap_offset(void **state)
{
	(void)state;
	hako_msg_registry_t *reg = NULL;
	const hako_msg_type_t *t = NULL;
	hako_error_t err = {0};
	unsetenv("HAKO_MSG_PATH");
	assert_int_equal(hako_msg_registry_create(&reg), 0);

	assert_int_equal(hako_msg_registry_get(reg, "std_msgs/Bool", &t, &err), 0);
	assert_int_equal(hako_msg_data_end(t), 4);
	uint8_t *b = malloc(28);
	meta(b, 28, 28);
	le32(b, 24, 1);
	assert_int_equal(hako_pdu_validate(t, b, 28, &err), 0);
	expect_json(t, b, 28, "{\"data\":true}");
	free(b);

	/* float64 elements at byte 44 of the PDU: 4 past an 8-byte boundary */
	assert_int_equal(hako_msg_registry_get(reg, "std_msgs/Float64MultiArray", &t, &err), 0);
	assert_int_equal(hako_msg_data_end(t), 20);
	b = malloc(68);
	meta(b, 44, 68);
	le32(b, 24, 0); /* layout.dim: empty */
	le32(b, 28, 0); /* ... at the heap start */
	le32(b, 32, 0); /* layout.data_offset */
	le32(b, 36, 3); /* data: 3 elements */
	le32(b, 40, 0); /* ... at the heap start */
	lef64(b, 44, 0.5);
	lef64(b, 52, -1.25);
	lef64(b, 60, 1e300);
	assert_int_equal(hako_pdu_validate(t, b, 68, &err), 0);
	expect_json(t, b, 68,
	            "{\"layout\":{\"dim\":[],\"data_offset\":0},\"data\":[0.5,-1.25,1e+300]}");
	uint32_t n = 0;
	const uint8_t *data = hako_pdu_varray(b, 68, b + 36, 8, &n);
	assert_int_equal(n, 3);
	assert_ptr_equal(data, b + 44);
	double d;
	memcpy(&d, data + 8, sizeof(d));
	assert_true(d == -1.25);
	/* the heap may not start inside the fields */
	le32(b, 12, 43);
	assert_int_equal(hako_pdu_validate(t, b, 68, &err), HAKO_EPROTO);
	assert_string_equal(err.message, "heap offset 43 is inside the base of "
	                                 "std_msgs/Float64MultiArray (its fields end at 44)");
	free(b);

	/* an odd heap offset: the base's fields end on a uint8 */
	assert_int_equal(hako_msg_registry_add_text(reg, "test_msgs", "Odd",
	                                            "float32[] values\nuint8 flag\n", "<test>", &t,
	                                            &err),
	                 0);
	assert_int_equal(t->size, 12);
	assert_int_equal(hako_msg_data_end(t), 9);
	b = malloc(41);
	meta(b, 33, 41);
	le32(b, 24, 2);
	le32(b, 28, 0);
	b[32] = 7;
	uint32_t f1 = 0x3fc00000u; /* 1.5f */
	uint32_t f2 = 0xc0200000u; /* -2.5f */
	le32(b, 33, f1);
	le32(b, 37, f2);
	expect_json(t, b, 41, "{\"values\":[1.5,-2.5],\"flag\":7}");
	free(b);

	/* what hako writes stays aligned: 24 + size rounded up to 8 */
	uint8_t out[64];
	size_t len = 0;
	const char *json = "{\"values\":[1.5],\"flag\":7}";
	assert_int_equal(hako_pdu_from_json(t, json, strlen(json), out, sizeof(out), &len, &err),
	                 0);
	hako_pdu_meta_t m;
	assert_int_equal(hako_pdu_meta_read(out, len, &m), 0);
	assert_int_equal(m.heap_off, 40);
	assert_int_equal(len, 44);
	hako_msg_registry_destroy(reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_twist),           cmocka_unit_test(test_point_cloud2),
	    cmocka_unit_test(test_eu_status),       cmocka_unit_test(test_malformed_pc2),
	    cmocka_unit_test(test_poly_heap_order), cmocka_unit_test(test_varray_bounds),
	    cmocka_unit_test(test_writer),          cmocka_unit_test(test_meta_epoch),
	    cmocka_unit_test(test_registry_agrees), cmocka_unit_test(test_unaligned_heap_offset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
