/* Fuzz target for RD-Full's message bodies (rd/src/rd_full_wire.h), which come from the
 * network inside the conductor's extension messages: arbitrary bytes as a received body. A
 * body that decodes must re-encode to a body of its length that decodes to the same message,
 * its reason terminated and every range check still met; a body that does not decode must say
 * why. Any disagreement is a finding (abort). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rd_full_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fuzz_rd_full_wire: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hakoi_rdf_msg_t m, again;
	char why[160] = "";
	if (hakoi_rdf_decode(data, size, &m, why, sizeof(why)) != 0) {
		if (why[0] == '\0' || memchr(why, '\0', sizeof(why)) == NULL) {
			fail("a refused body of %zu bytes without a reason", size);
		}
		return 0;
	}
	if (size > HAKOI_RDF_MAX) {
		fail("a body of %zu bytes decoded; the largest is %u", size, HAKOI_RDF_MAX);
	}
	if (memchr(m.reason, '\0', sizeof(m.reason)) == NULL) {
		fail("a decoded reason is not terminated");
	}
	if (m.curr > 255 || m.next > 255 || m.to > 255 || m.status > 2 || m.epoch < -1 ||
	    m.epoch > 255 || m.commit < -1 || m.release < -1) {
		fail("kind %u: a field out of range decoded", m.kind);
	}
	uint8_t buf[HAKOI_RDF_MAX];
	size_t len = hakoi_rdf_encode(&m, buf);
	/* A reply's reason may have bytes after its NUL: the re-encoded one stops at the NUL. */
	if (len != size && m.kind != HAKOI_RDF_REPLY) {
		fail("kind %u: re-encoded to %zu bytes, received %zu", m.kind, len, size);
	}
	if (hakoi_rdf_decode(buf, len, &again, why, sizeof(why)) != 0) {
		fail("kind %u: the re-encoded body does not decode: %s", m.kind, why);
	}
	if (m.kind != again.kind || m.eu != again.eu || m.seq != again.seq ||
	    m.epoch != again.epoch || m.commit != again.commit || m.release != again.release ||
	    strcmp(m.reason, again.reason) != 0) {
		fail("kind %u: the re-encoded body decodes to another message", m.kind);
	}
	return 0;
}
