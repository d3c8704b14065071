/* Hakoniwa wire frames v1 and v2 (see hako/frame.h). Multi-byte fields are assembled byte by
 * byte in little-endian order (never through a cast pointer), so unaligned buffers and
 * big-endian hosts are fine; every length read from a peer is checked before it is used. */
#include <stdint.h>
#include <string.h>

#include "hako/frame.h"

#define V2_OFF_MAGIC    128u
#define V2_OFF_VERSION  132u
#define V2_OFF_RESERVED 134u
#define V2_OFF_TYPE     140u
#define V2_OFF_TOTAL    144u
#define V2_OFF_BODY_LEN 148u
#define V2_OFF_HAKO_T   152u
#define V2_OFF_ASSET_T  160u
#define V2_OFF_REAL_T   168u
#define V2_OFF_CHANNEL  176u
/* total_len = 172 + body_len, as the original writes it (informational, never trusted). */
#define V2_TOTAL_BASE 172u

/* v1: [u32 header_len][u32 name_len][name][i32 channel_id][body] */
#define V1_PREFIX    8u /* header_len + name_len */
#define V1_NAME_MAX  (HAKO_FRAME_ROBOT_MAX - 1u)
#define V1_FIXED_LEN 8u /* name_len word + channel word, counted in header_len */

static uint16_t get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (uint16_t)(p[1] << 8));
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static uint64_t get_u64(const uint8_t *p)
{
	return (uint64_t)get_u32(p) | ((uint64_t)get_u32(p + 4) << 32);
}

static int32_t get_i32(const uint8_t *p)
{
	uint32_t u = get_u32(p);
	int32_t v;
	memcpy(&v, &u, sizeof(v)); /* two's complement reinterpretation, no overflow */
	return v;
}

/* *sum = a + b unless that wraps a size_t (possible for 4 GiB frames on 32-bit hosts). */
static int size_add(size_t a, size_t b, size_t *sum)
{
	if (b > SIZE_MAX - a) {
		return -1;
	}
	*sum = a + b;
	return 0;
}

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void put_u64(uint8_t *p, uint64_t v)
{
	put_u32(p, (uint32_t)v);
	put_u32(p + 4, (uint32_t)(v >> 32));
}

static void put_i32(uint8_t *p, int32_t v)
{
	uint32_t u;
	memcpy(&u, &v, sizeof(u));
	put_u32(p, u);
}

size_t hako_frame_size(hako_frame_version_t v, const char *robot, uint32_t body_len)
{
	if (robot == NULL) {
		return 0;
	}
	size_t name_len = strnlen(robot, HAKO_FRAME_ROBOT_MAX);
	if (name_len >= HAKO_FRAME_ROBOT_MAX) {
		return 0;
	}
	size_t size;
	switch (v) {
	case HAKO_FRAME_V2:
		if (body_len > UINT32_MAX - V2_TOTAL_BASE ||
		    size_add(HAKO_FRAME_V2_HEADER_SIZE, body_len, &size) != 0) {
			return 0;
		}
		return size;
	case HAKO_FRAME_V1:
		/* header_len (u32) = 8 + name_len + body_len must not wrap */
		if (body_len > UINT32_MAX - V1_FIXED_LEN - name_len ||
		    size_add(4u + V1_FIXED_LEN + name_len, body_len, &size) != 0) {
			return 0;
		}
		return size;
	}
	return 0;
}

int hako_frame_encode(hako_frame_version_t v, const hako_frame_t *f, void *buf, size_t cap,
                      size_t *len)
{
	if (f == NULL || len == NULL || (buf == NULL && cap > 0) ||
	    (f->body == NULL && f->body_len > 0)) {
		return HAKO_EINVAL;
	}
	if (v != HAKO_FRAME_V1 && v != HAKO_FRAME_V2) {
		return HAKO_EINVAL;
	}
	size_t name_len = strnlen(f->robot, HAKO_FRAME_ROBOT_MAX);
	if (name_len >= HAKO_FRAME_ROBOT_MAX) {
		return HAKO_ENAMETOOLONG;
	}
	/* v1 has no type field: control packets carry their magic in the body instead. */
	if (v == HAKO_FRAME_V1 && f->request_type != HAKO_FRAME_PDU_DATA) {
		return HAKO_EINVAL;
	}
	size_t size = hako_frame_size(v, f->robot, f->body_len);
	if (size == 0 || size > cap) {
		return HAKO_ETOOBIG;
	}
	uint8_t *p = buf;
	size_t body_off;
	if (v == HAKO_FRAME_V2) {
		memset(p, 0, HAKO_FRAME_V2_HEADER_SIZE);
		memcpy(p, f->robot, name_len);
		put_u32(p + V2_OFF_MAGIC, HAKO_FRAME_MAGIC);
		put_u16(p + V2_OFF_VERSION, (uint16_t)HAKO_FRAME_V2_VERSION);
		put_u32(p + V2_OFF_TYPE, f->request_type);
		put_u32(p + V2_OFF_TOTAL, V2_TOTAL_BASE + f->body_len);
		put_u32(p + V2_OFF_BODY_LEN, f->body_len);
		put_u64(p + V2_OFF_HAKO_T, f->hako_time_us);
		put_u64(p + V2_OFF_ASSET_T, f->asset_time_us);
		put_u64(p + V2_OFF_REAL_T, f->real_time_us);
		put_i32(p + V2_OFF_CHANNEL, f->channel_id);
		body_off = HAKO_FRAME_V2_HEADER_SIZE;
	} else {
		put_u32(p, (uint32_t)(size - 4u));
		put_u32(p + 4, (uint32_t)name_len);
		memcpy(p + V1_PREFIX, f->robot, name_len);
		put_i32(p + V1_PREFIX + name_len, f->channel_id);
		body_off = V1_PREFIX + name_len + 4u;
	}
	if (f->body_len > 0) {
		memcpy(p + body_off, f->body, f->body_len);
	}
	*len = size;
	return 0;
}

/* The v2 header at p (304 bytes present) is valid; *size = whole frame. */
static int v2_header(const uint8_t *p, uint32_t max_body, size_t *size, hako_error_t *err)
{
	uint32_t magic = get_u32(p + V2_OFF_MAGIC);
	if (magic != HAKO_FRAME_MAGIC) {
		return hako_error_set(err, HAKO_EPROTO, "", 0, 0,
		                      "v2 frame: bad magic 0x%08lx (expected 0x%08lx \"HAKO\")",
		                      (unsigned long)magic, (unsigned long)HAKO_FRAME_MAGIC);
	}
	uint16_t version = get_u16(p + V2_OFF_VERSION);
	if (version != HAKO_FRAME_V2_VERSION) {
		return hako_error_set(err, HAKO_EPROTO, "", 0, 0,
		                      "v2 frame: unsupported version %u (expected 2)",
		                      (unsigned)version);
	}
	if (memchr(p, '\0', HAKO_FRAME_ROBOT_MAX) == NULL) {
		return hako_error_set(err, HAKO_EPROTO, "", 0, 0,
		                      "v2 frame: robot name has no NUL within 128 bytes");
	}
	/* total_len (@144) is informational only and is deliberately not read. */
	uint32_t body_len = get_u32(p + V2_OFF_BODY_LEN);
	if (body_len > max_body || size_add(HAKO_FRAME_V2_HEADER_SIZE, body_len, size) != 0) {
		return hako_error_set(err, HAKO_EPROTO, "", 0, 0,
		                      "%s: body_len %lu exceeds the limit of %lu bytes", "v2 frame",
		                      (unsigned long)body_len, (unsigned long)max_body);
	}
	return 0;
}

/* The v1 length words at p (8 bytes present) name a name that fits and a header_len that
 * covers it and the channel id: *header_len, *fixed (name_len + 8). */
static int v1_words(const uint8_t *p, uint32_t *header_len, uint32_t *fixed, hako_error_t *err)
{
	*header_len = get_u32(p);
	uint32_t name_len = get_u32(p + 4);
	if (name_len > V1_NAME_MAX) {
		return hako_error_set(err, HAKO_EPROTO, "", 0, 0, "%s: name_len %lu exceeds %lu",
		                      "v1 frame", (unsigned long)name_len,
		                      (unsigned long)V1_NAME_MAX);
	}
	/* name_len <= 127, so this sum cannot wrap. */
	*fixed = V1_FIXED_LEN + name_len;
	if (*header_len < *fixed) {
		return hako_error_set(err, HAKO_EPROTO, "", 0, 0,
		                      "%s: header_len %lu is smaller than name_len + 8 = %lu",
		                      "v1 frame", (unsigned long)*header_len,
		                      (unsigned long)*fixed);
	}
	return 0;
}

static int v1_body_limit(size_t body_len, uint32_t max_body, hako_error_t *err)
{
	if (body_len <= max_body) {
		return 0;
	}
	return hako_error_set(err, HAKO_EPROTO, "", 0, 0,
	                      "%s: body_len %lu exceeds the limit of %lu bytes", "v1 frame",
	                      (unsigned long)body_len, (unsigned long)max_body);
}

/* The v1 length words at p (8 bytes present) are consistent; *size = whole frame. */
static int v1_header(const uint8_t *p, uint32_t max_body, size_t *size, hako_error_t *err)
{
	uint32_t header_len, fixed;
	int rc = v1_words(p, &header_len, &fixed, err);
	if (rc != 0) {
		return rc;
	}
	rc = v1_body_limit(header_len - fixed, max_body, err);
	if (rc == 0 && size_add(4u, header_len, size) != 0) {
		rc = v1_body_limit(SIZE_MAX, max_body, err);
	}
	return rc;
}

int hako_frame_needed(hako_frame_version_t v, const void *buf, size_t len, uint32_t max_body,
                      size_t *needed, hako_error_t *err)
{
	if (needed == NULL || (buf == NULL && len > 0)) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0, "frame: invalid argument");
	}
	*needed = 0;
	switch (v) {
	case HAKO_FRAME_V2:
		if (len < HAKO_FRAME_V2_HEADER_SIZE) {
			return 0;
		}
		return v2_header(buf, max_body, needed, err);
	case HAKO_FRAME_V1:
		if (len < V1_PREFIX) {
			return 0;
		}
		return v1_header(buf, max_body, needed, err);
	}
	return hako_error_set(err, HAKO_EINVAL, "", 0, 0, "frame: unknown version %d", (int)v);
}

/* The frame takes size bytes; the buffer must hold exactly that. */
static int exact_size(const char *what, size_t size, size_t len, hako_error_t *err)
{
	if (len < size) {
		return hako_error_set(err, HAKO_EPROTO, "", 0, 0,
		                      "%s: truncated body: frame is %lu bytes, buffer has %lu",
		                      what, (unsigned long)size, (unsigned long)len);
	}
	if (len > size) {
		return hako_error_set(err, HAKO_EPROTO, "", 0, 0,
		                      "%s: %lu trailing bytes after a frame of %lu bytes", what,
		                      (unsigned long)(len - size), (unsigned long)size);
	}
	return 0;
}

static int decode_v2(const uint8_t *p, size_t len, uint32_t max_body, hako_frame_t *out,
                     hako_error_t *err)
{
	if (len < HAKO_FRAME_V2_HEADER_SIZE) {
		return hako_error_set(err, HAKO_EPROTO, "", 0, 0,
		                      "%s: truncated header: %lu of %lu bytes", "v2 frame",
		                      (unsigned long)len, (unsigned long)HAKO_FRAME_V2_HEADER_SIZE);
	}
	size_t size;
	int rc = v2_header(p, max_body, &size, err);
	if (rc != 0) {
		return rc;
	}
	rc = exact_size("v2 frame", size, len, err);
	if (rc != 0) {
		return rc;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out->robot, p, strlen((const char *)p)); /* NUL within 128 checked by v2_header */
	out->request_type = get_u32(p + V2_OFF_TYPE);
	out->hako_time_us = get_u64(p + V2_OFF_HAKO_T);
	out->asset_time_us = get_u64(p + V2_OFF_ASSET_T);
	out->real_time_us = get_u64(p + V2_OFF_REAL_T);
	out->channel_id = get_i32(p + V2_OFF_CHANNEL);
	out->body_len = (uint32_t)(size - HAKO_FRAME_V2_HEADER_SIZE);
	out->body = p + HAKO_FRAME_V2_HEADER_SIZE;
	return 0;
}

static int v1_prefix(size_t len, hako_error_t *err)
{
	if (len >= V1_PREFIX) {
		return 0;
	}
	return hako_error_set(err, HAKO_EPROTO, "", 0, 0,
	                      "%s: truncated header: %lu of at least %lu bytes", "v1 frame",
	                      (unsigned long)len, (unsigned long)(V1_PREFIX + 4u));
}

/* v1 has no type field: Hakoniwa's Python library sends its declarations and read requests
 * as a v1 frame whose body is the request's magic, and Hakoniwa's endpoint takes any body that
 * starts with one of these as that request, not as a PDU. The other v2 types have no v1 form. */
static uint32_t v1_request_type(const uint8_t *body, size_t len)
{
	uint32_t magic = len >= 4u ? get_u32(body) : 0u;
	switch (magic) {
	case HAKO_FRAME_DECLARE_READ:
	case HAKO_FRAME_DECLARE_WRITE:
	case HAKO_FRAME_REQUEST_READ: return magic;
	default: return HAKO_FRAME_PDU_DATA;
	}
}

/* The name, channel id and body of a checked v1 frame whose body runs to p + end. */
static int v1_take(const uint8_t *p, size_t end, hako_frame_t *out, hako_error_t *err)
{
	uint32_t name_len = get_u32(p + 4);
	if (memchr(p + V1_PREFIX, '\0', name_len) != NULL) {
		return hako_error_set(err, HAKO_EPROTO, "", 0, 0,
		                      "v1 frame: robot name contains a NUL byte");
	}
	memset(out, 0, sizeof(*out));
	memcpy(out->robot, p + V1_PREFIX, name_len);
	out->channel_id = get_i32(p + V1_PREFIX + name_len);
	size_t body_off = V1_PREFIX + name_len + 4u;
	out->request_type = v1_request_type(p + body_off, end - body_off);
	if (out->request_type != HAKO_FRAME_PDU_DATA) {
		body_off += 4u; /* the magic is the type: a request decodes as its v2 form does */
	}
	out->body_len = (uint32_t)(end - body_off);
	out->body = p + body_off;
	return 0;
}

static int decode_v1(const uint8_t *p, size_t len, uint32_t max_body, hako_frame_t *out,
                     hako_error_t *err)
{
	size_t size = 0;
	int rc = v1_prefix(len, err);
	if (rc == 0) {
		rc = v1_header(p, max_body, &size, err);
	}
	if (rc == 0) {
		rc = exact_size("v1 frame", size, len, err);
	}
	return rc != 0 ? rc : v1_take(p, size, out, err);
}

int hako_frame_decode(hako_frame_version_t v, const void *buf, size_t len, uint32_t max_body,
                      hako_frame_t *out, hako_error_t *err)
{
	if (out == NULL || (buf == NULL && len > 0)) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0, "frame: invalid argument");
	}
	if (v != HAKO_FRAME_V1 && v != HAKO_FRAME_V2) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0, "frame: unknown version %d",
		                      (int)v);
	}
	if (len == 0) {
		return hako_error_set(err, HAKO_EPROTO, "", 0, 0, "v%d frame: empty buffer",
		                      (int)v);
	}
	return v == HAKO_FRAME_V2 ? decode_v2(buf, len, max_body, out, err)
	                          : decode_v1(buf, len, max_body, out, err);
}

/* v1 in a message: the body runs to the message's end (hako/frame.h). */
static int decode_v1_message(const uint8_t *p, size_t len, uint32_t max_body, hako_frame_t *out,
                             hako_error_t *err)
{
	uint32_t header_len = 0, fixed = 0;
	int rc = v1_prefix(len, err);
	if (rc == 0) {
		rc = v1_words(p, &header_len, &fixed, err);
	}
	if (rc == 0 && (uint64_t)header_len + 4u > (uint64_t)len) {
		rc = hako_error_set(err, HAKO_EPROTO, "", 0, 0,
		                    "%s: header_len %lu needs %llu bytes, the message has %lu",
		                    "v1 frame", (unsigned long)header_len,
		                    (unsigned long long)header_len + 4u, (unsigned long)len);
	}
	if (rc == 0) {
		rc = v1_body_limit(len - (fixed + 4u), max_body, err); /* after the channel id */
	}
	return rc != 0 ? rc : v1_take(p, len, out, err);
}

int hako_frame_decode_message(hako_frame_version_t v, const void *buf, size_t len,
                              uint32_t max_body, hako_frame_t *out, hako_error_t *err)
{
	if (v != HAKO_FRAME_V1 || out == NULL || buf == NULL || len == 0) {
		return hako_frame_decode(v, buf, len, max_body, out, err);
	}
	return decode_v1_message(buf, len, max_body, out, err);
}
