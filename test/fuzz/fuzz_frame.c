/* Fuzz target for the wire frame decoder (hako/frame.h): arbitrary bytes as a v1 and as a v2
 * frame (datagram style and as a stream of frames). A decoded frame must re-encode and decode to
 * the same fields; hako_frame_needed must agree with decode on every prefix. Any disagreement
 * is a finding (abort). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/frame.h"

/* A small limit besides the default one, so the limit checks are reached with short inputs. */
#define SMALL_MAX_BODY 64u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fuzz_frame: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

static void same_frame(const hako_frame_t *a, const hako_frame_t *b)
{
	if (strcmp(a->robot, b->robot) != 0 || a->channel_id != b->channel_id ||
	    a->request_type != b->request_type || a->hako_time_us != b->hako_time_us ||
	    a->asset_time_us != b->asset_time_us || a->real_time_us != b->real_time_us ||
	    a->body_len != b->body_len ||
	    (a->body_len > 0 && memcmp(a->body, b->body, a->body_len) != 0)) {
		fail("re-encoded frame decodes to other fields");
	}
	if (memchr(a->robot, '\0', HAKO_FRAME_ROBOT_MAX) == NULL) {
		fail("decoded robot name is not NUL-terminated");
	}
}

/* A v1 request (a declaration, a read request) decodes with its magic taken off the body: the
 * body on the wire is 4 bytes longer. */
static int v1_request(hako_frame_version_t v, const hako_frame_t *f)
{
	return v == HAKO_FRAME_V1 && f->request_type != HAKO_FRAME_PDU_DATA;
}

static uint32_t wire_body_len(hako_frame_version_t v, const hako_frame_t *f)
{
	return f->body_len + (v1_request(v, f) ? 4u : 0u);
}

/* v1 writes requests as data whose body starts with the magic, as Hakoniwa's Python does. */
static void as_v1_data(const hako_frame_t *f, hako_frame_t *data, uint8_t *body)
{
	*data = *f;
	data->request_type = HAKO_FRAME_PDU_DATA;
	body[0] = (uint8_t)f->request_type;
	body[1] = (uint8_t)(f->request_type >> 8);
	body[2] = (uint8_t)(f->request_type >> 16);
	body[3] = (uint8_t)(f->request_type >> 24);
	if (f->body_len > 0) {
		memcpy(body + 4, f->body, f->body_len);
	}
	data->body = body;
	data->body_len = f->body_len + 4u;
}

/* Re-encode a decoded frame of `size` bytes; the copy must decode to the same frame. */
static void round_trip(hako_frame_version_t v, const hako_frame_t *f, size_t size)
{
	hako_frame_t data;
	uint8_t *body = NULL;
	const hako_frame_t *enc = f;
	if (v1_request(v, f)) {
		body = malloc((size_t)f->body_len + 4u);
		if (body == NULL) {
			abort();
		}
		as_v1_data(f, &data, body);
		enc = &data;
	}
	size_t want = hako_frame_size(v, enc->robot, enc->body_len);
	if (want != size) {
		fail("v%d: frame_size %zu, decoded frame was %zu bytes", (int)v, want, size);
	}
	uint8_t *buf = malloc(want);
	if (buf == NULL) {
		abort();
	}
	size_t len = 0;
	int rc = hako_frame_encode(v, enc, buf, want, &len);
	if (rc != 0 || len != want) {
		fail("v%d: re-encode failed (%d) or wrote %zu of %zu bytes", (int)v, rc, len, want);
	}
	hako_frame_t g;
	hako_error_t err;
	rc = hako_frame_decode(v, buf, len, enc->body_len, &g, &err);
	if (rc != 0) {
		fail("v%d: re-encoded frame refused: %s", (int)v, err.message);
	}
	same_frame(f, &g);
	free(buf);
	free(body);
}

/* needed on every prefix: 0 until the header is there, then the frame's size, never an error
 * for a prefix of a frame that decodes. */
static void prefixes(hako_frame_version_t v, const uint8_t *data, size_t size)
{
	size_t known = 0;
	for (size_t k = 0; k <= size; k++) {
		size_t needed = 77;
		hako_error_t err;
		int rc = hako_frame_needed(v, data, k, HAKO_FRAME_DEFAULT_MAX_BODY, &needed, &err);
		if (rc != 0) {
			fail("v%d: needed refused a %zu-byte prefix of a valid frame: %s", (int)v,
			     k, err.message);
		}
		if (needed == 0) {
			if (known != 0) {
				fail("v%d: needed forgot the size at %zu bytes", (int)v, k);
			}
			continue;
		}
		if (needed != size || (known != 0 && needed != known)) {
			fail("v%d: needed %zu at %zu bytes, frame is %zu", (int)v, needed, k, size);
		}
		known = needed;
	}
	if (known != size) {
		fail("v%d: needed never gave the size", (int)v);
	}
}

static void one_frame(hako_frame_version_t v, const uint8_t *data, size_t size)
{
	hako_frame_t f;
	hako_error_t err;
	int rc = hako_frame_decode(v, data, size, HAKO_FRAME_DEFAULT_MAX_BODY, &f, &err);
	if (rc != 0) {
		if (rc != HAKO_EPROTO || err.message[0] == '\0') {
			fail("v%d: refusal %d without HAKO_EPROTO and a message", (int)v, rc);
		}
		return;
	}
	if (f.body_len > 0 && (f.body < data || f.body + f.body_len != data + size)) {
		fail("v%d: body does not end the buffer", (int)v);
	}
	round_trip(v, &f, size);
	prefixes(v, data, size);

	hako_frame_t small;
	rc = hako_frame_decode(v, data, size, SMALL_MAX_BODY, &small, &err);
	if ((rc == 0) != (wire_body_len(v, &f) <= SMALL_MAX_BODY)) {
		fail("v%d: body_len %u against limit %u gave %d", (int)v, wire_body_len(v, &f),
		     SMALL_MAX_BODY, rc);
	}
	if (rc == 0) {
		same_frame(&f, &small);
	}
}

/* The bytes as a TCP stream: frame after frame as long as needed and decode agree. */
static void as_stream(hako_frame_version_t v, const uint8_t *data, size_t size)
{
	size_t off = 0;
	while (off < size) {
		size_t needed = 0;
		hako_error_t err;
		if (hako_frame_needed(v, data + off, size - off, HAKO_FRAME_DEFAULT_MAX_BODY,
		                      &needed, &err) != 0 ||
		    needed == 0 || needed > size - off) {
			return;
		}
		hako_frame_t f;
		if (hako_frame_decode(v, data + off, needed, HAKO_FRAME_DEFAULT_MAX_BODY, &f,
		                      &err) == 0) {
			round_trip(v, &f, needed);
		} else if (v == HAKO_FRAME_V2) {
			/* needed validates the whole v2 header: decode of those bytes must work */
			fail("v2: needed accepted a frame decode refuses: %s", err.message);
		}
		off += needed;
	}
}

/* The bytes as one message (websocket, udp): whatever decode takes, decode_message takes the
 * same way; what it takes has its body inside the message and ending it. */
static void as_message(hako_frame_version_t v, const uint8_t *data, size_t size)
{
	hako_frame_t f, g;
	hako_error_t err;
	int rc = hako_frame_decode_message(v, data, size, HAKO_FRAME_DEFAULT_MAX_BODY, &f, &err);
	if (rc != 0) {
		if (rc != HAKO_EPROTO || err.message[0] == '\0') {
			fail("v%d message: refusal %d without HAKO_EPROTO and a message", (int)v,
			     rc);
		}
		if (hako_frame_decode(v, data, size, HAKO_FRAME_DEFAULT_MAX_BODY, &g, &err) == 0) {
			fail("v%d: decode takes a frame decode_message refuses", (int)v);
		}
		return;
	}
	if (f.body_len > HAKO_FRAME_DEFAULT_MAX_BODY ||
	    (f.body_len > 0 && (f.body < data || f.body + f.body_len != data + size))) {
		fail("v%d message: body outside the message or over the limit", (int)v);
	}
	if (hako_frame_decode(v, data, size, HAKO_FRAME_DEFAULT_MAX_BODY, &g, &err) == 0) {
		same_frame(&f, &g);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	as_message(HAKO_FRAME_V1, data, size);
	as_message(HAKO_FRAME_V2, data, size);
	one_frame(HAKO_FRAME_V1, data, size);
	one_frame(HAKO_FRAME_V2, data, size);
	as_stream(HAKO_FRAME_V1, data, size);
	as_stream(HAKO_FRAME_V2, data, size);
	return 0;
}
