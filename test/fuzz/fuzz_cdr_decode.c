/* libFuzzer target: ROS 2 CDR read from an untrusted buffer (hako_cdr_decode).
 *
 * Input: one selector byte (the type: fuzz_common.h), then the CDR bytes. Decoding must never
 * read past the buffer; it must say how large the PDU is (a sizing call, then a buffer of
 * exactly that size); a PDU it accepts must pass hako_pdu_validate and encode back to CDR, and
 * that CDR must decode to the same PDU (a fixed point). The CDR need not be the input's bytes:
 * bools become 0/1, an empty string sent as length 0 comes back as length 1 and its NUL, bytes
 * after the message are dropped. Anything else aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "hako/cdr.h"
#include "hako/pdu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1) {
		return 0;
	}
	const hako_msg_type_t *type = fuzz_type(data[0]);
	/* a copy allocated to the byte: ASan catches any read past the end */
	size_t len = size - 1;
	uint8_t *cdr = malloc(len ? len : 1);
	if (len) {
		memcpy(cdr, data + 1, len);
	}
	hako_error_t err;
	hako_error_clear(&err);
	size_t need = 0;
	int rc = hako_cdr_decode(type, cdr, len, NULL, 0, &need, &err);
	if (rc == HAKO_EPROTO || (rc == HAKO_ETOOBIG && need == SIZE_MAX)) {
		if (err.message[0] == '\0') {
			fuzz_fail("%s: decode refused the CDR without a message", type->full_name);
		}
		free(cdr);
		return 0;
	}
	if (rc != HAKO_ETOOBIG) {
		fuzz_fail("%s: decode into no buffer returned %d", type->full_name, rc);
	}
	uint8_t *pdu = malloc(need);
	size_t pdu_len = 0;
	rc = hako_cdr_decode(type, cdr, len, pdu, need, &pdu_len, &err);
	if (rc != 0 || pdu_len != need) {
		fuzz_fail("%s: decode needed %zu bytes, then gave %d and %zu: %s", type->full_name,
		          need, rc, pdu_len, err.message);
	}
	if (hako_pdu_validate(type, pdu, pdu_len, &err) != 0) {
		fuzz_fail("%s: validate refused what decode wrote: %s", type->full_name,
		          err.message);
	}
	size_t clen = 0;
	if (hako_cdr_encode(type, pdu, pdu_len, NULL, 0, &clen, &err) != HAKO_ETOOBIG) {
		fuzz_fail("%s: encode did not give its size", type->full_name);
	}
	uint8_t *again = malloc(clen);
	uint8_t *pdu2 = malloc(pdu_len);
	size_t len2 = 0;
	if (hako_cdr_encode(type, pdu, pdu_len, again, clen, &clen, &err) != 0 ||
	    hako_cdr_decode(type, again, clen, pdu2, pdu_len, &len2, &err) != 0 ||
	    len2 != pdu_len || memcmp(pdu, pdu2, pdu_len) != 0) {
		fuzz_fail("%s: CDR -> PDU -> CDR -> PDU is not a fixed point: %s", type->full_name,
		          err.message);
	}
	free(again);
	free(pdu2);
	free(pdu);
	free(cdr);
	return 0;
}
