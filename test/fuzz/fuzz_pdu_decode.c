/* libFuzzer target: a PDU read from an untrusted buffer.
 *
 * Input: one selector byte (type, pretty JSON: fuzz_common.h), then the PDU bytes. The meta
 * calls must never read past the buffer; a PDU that validate accepts must resolve every
 * variable array inside its heap, convert to JSON, and that JSON must be a fixed point of
 * from_json / to_json. Anything else aborts.
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

	/* A copy allocated to the byte (ASan catches any read past the end) and aligned as a PDU
	 * in shared memory would be. */
	size_t len = size - 1;
	uint8_t *pdu = malloc(len ? len : 1);
	if (len) {
		memcpy(pdu, data + 1, len);
	}

	int cls = hako_pdu_classify(pdu, len);
	if (cls != HAKO_PDU_INVALID && cls != HAKO_PDU_UNINITIALIZED && cls != HAKO_PDU_VALID) {
		fuzz_fail("hako_pdu_classify returned %d", cls);
	}
	hako_pdu_meta_t meta;
	int meta_rc = hako_pdu_meta_read(pdu, len, &meta);
	if (meta_rc == 0 && cls != HAKO_PDU_VALID) {
		fuzz_fail("hako_pdu_meta_read accepted a PDU of class %d", cls);
	}
	uint8_t epoch = 0;
	int epoch_rc = hako_pdu_get_epoch(pdu, len, &epoch);
	if ((epoch_rc == 0) != (cls == HAKO_PDU_VALID)) {
		fuzz_fail("hako_pdu_get_epoch returned %d for class %d", epoch_rc, cls);
	}
	if (epoch_rc == 0 && epoch != pdu[HAKO_PDU_EPOCH_OFFSET]) {
		fuzz_fail("hako_pdu_get_epoch gave %u, the byte is %u", epoch,
		          pdu[HAKO_PDU_EPOCH_OFFSET]);
	}

	hako_error_t err;
	hako_error_clear(&err);
	if (hako_pdu_validate(type, pdu, len, &err) != 0) {
		free(pdu);
		return 0;
	}
	if (meta_rc != 0) {
		fuzz_fail("%s: validate accepted a PDU whose meta hako_pdu_meta_read refused",
		          type->full_name);
	}
	fuzz_walk_varrays(type, pdu, len);

	/* Every value has a JSON form (NaN and the infinities as strings, uint64 past INT64_MAX as
	 * a string of digits, bytes that are not UTF-8 escaped), so a PDU that validate accepted
	 * must convert, and what to_json writes must round-trip. */
	char *json = NULL;
	char msg[1200];
	hako_error_clear(&err);
	int rc = hako_pdu_to_json(type, pdu, len, flags, &json, &err);
	if (rc != 0 || json == NULL) {
		fuzz_fail("%s: to_json refused a PDU that validate accepted (%s): %s",
		          type->full_name, hako_strerror(rc),
		          hako_error_format(&err, msg, sizeof(msg)));
	}
	fuzz_json_fixed_point(type, json, flags);
	free(json);
	free(pdu);
	return 0;
}
