/* libFuzzer target: JSON text from an untrusted source encoded as a PDU.
 *
 * Input: one selector byte (type, pretty JSON: fuzz_common.h), then the JSON text (not
 * NUL-terminated: from_json takes a length). from_json must never crash; a PDU it produces must
 * pass validate, convert back to JSON, and that JSON must be a fixed point of from_json /
 * to_json. Anything else aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "hako/pdu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1) {
		return 0;
	}
	const hako_msg_type_t *type = fuzz_type(data[0]);
	int flags = (data[0] & FUZZ_SEL_PRETTY) ? HAKO_PDU_JSON_PRETTY : 0;

	size_t json_len = size - 1;
	char *json = malloc(json_len ? json_len : 1);
	if (json_len) {
		memcpy(json, data + 1, json_len);
	}

	/* A buffer sized for the type without heap data first (to the byte, for ASan), then the
	 * size HAKO_ETOOBIG reports. */
	size_t cap = hako_msg_pdu_fixed_size(type);
	uint8_t *buf = malloc(cap);
	size_t len = 0;
	hako_error_t err;
	hako_error_clear(&err);
	int rc = hako_pdu_from_json(type, json, json_len, buf, cap, &len, &err);
	if (rc == HAKO_ETOOBIG) {
		if (len <= cap) {
			fuzz_fail("%s: from_json: HAKO_ETOOBIG with cap %zu but needs %zu",
			          type->full_name, cap, len);
		}
		/* The text was complete enough to size the PDU: the retry may still refuse it
		 * (a bad value after the first array that overflowed), but must not need more. */
		size_t needed = len;
		free(buf);
		cap = needed;
		buf = malloc(cap);
		hako_error_clear(&err);
		rc = hako_pdu_from_json(type, json, json_len, buf, cap, &len, &err);
		if (rc == HAKO_ETOOBIG) {
			fuzz_fail(
			    "%s: from_json: HAKO_ETOOBIG again with the %zu bytes it asked for",
			    type->full_name, needed);
		}
		if (rc == 0 && len != needed) {
			fuzz_fail("%s: from_json: HAKO_ETOOBIG said %zu bytes, then wrote %zu",
			          type->full_name, needed, len);
		}
	}
	free(json);
	if (rc != 0) {
		free(buf);
		return 0;
	}
	if (len > cap) {
		fuzz_fail("%s: from_json: *len %zu > cap %zu", type->full_name, len, cap);
	}

	char msg[1200];
	hako_error_clear(&err);
	rc = hako_pdu_validate(type, buf, len, &err);
	if (rc != 0) {
		fuzz_fail("%s: validate refused what from_json wrote: %s", type->full_name,
		          hako_error_format(&err, msg, sizeof(msg)));
	}
	fuzz_walk_varrays(type, buf, len);

	char *out = NULL;
	hako_error_clear(&err);
	rc = hako_pdu_to_json(type, buf, len, flags, &out, &err);
	if (rc != 0 || out == NULL) {
		fuzz_fail("%s: to_json refused what from_json wrote (%d): %s", type->full_name, rc,
		          hako_error_format(&err, msg, sizeof(msg)));
	}
	fuzz_json_fixed_point(type, out, flags);
	free(out);
	free(buf);
	return 0;
}
