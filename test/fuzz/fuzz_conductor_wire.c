/* Fuzz target for the conductor's control-plane frames (conductor/src/wire.h): arbitrary bytes
 * as a received frame. A frame that decodes must re-encode to a frame of its length that
 * decodes to the same message, with every string terminated and every range check still met;
 * a frame that does not decode must say why. Any disagreement is a finding (abort). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fuzz_conductor_wire: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hakoi_msg_t m, again;
	char why[160] = "";
	if (hakoi_wire_decode(data, size, &m, why, sizeof(why)) != 0) {
		if (why[0] == '\0' || memchr(why, '\0', sizeof(why)) == NULL) {
			fail("a refused frame of %zu bytes without a reason", size);
		}
		return 0;
	}
	if (size > hakoi_wire_max()) {
		fail("a frame of %zu bytes decoded; the largest is %zu", size, hakoi_wire_max());
	}
	if (memchr(m.node, '\0', sizeof(m.node)) == NULL || m.node[0] == '\0' ||
	    memchr(m.reason, '\0', sizeof(m.reason)) == NULL) {
		fail("a decoded string is empty or not terminated");
	}
	uint8_t buf[1024];
	size_t len = hakoi_wire_encode(&m, buf);
	if (len != size) {
		fail("type %u: re-encoded to %zu bytes, received %zu", m.type, len, size);
	}
	if (hakoi_wire_decode(buf, len, &again, why, sizeof(why)) != 0) {
		fail("type %u: the re-encoded frame does not decode: %s", m.type, why);
	}
	/* decode zeroes the whole message first, padding included */
	if (memcmp(&m, &again, sizeof(m)) != 0) {
		fail("type %u: the re-encoded frame decodes to another message", m.type);
	}
	return 0;
}
