/* Shared parts of the PDU fuzz targets: the fixed list of types the first input byte picks
 * from, and the checks that turn a silent inconsistency of the codec into an abort(). */
#ifndef HAKO_FUZZ_COMMON_H
#define HAKO_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "hako/msg.h"

/* Bit 7 of the first input byte asks for pretty JSON; the other bits pick the type. */
#define FUZZ_SEL_PRETTY 0x80u

/* The type selected by the first input byte (its low 7 bits modulo the list length). The
 * registry is created on first use and kept for the life of the process. Aborts if a type of
 * the list is unknown: the target would silently test less than it claims. */
const hako_msg_type_t *fuzz_type(uint8_t sel);
size_t fuzz_type_count(void);
const char *fuzz_type_name(size_t i);

/* Print the reason and abort(): a finding. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* For a PDU that hako_pdu_validate accepted: every variable array at every depth must resolve
 * through hako_pdu_varray, and every element byte is read (so ASan sees any over-read). */
void fuzz_walk_varrays(const hako_msg_type_t *type, const void *pdu, size_t len);

/* JSON that hako_pdu_to_json produced must be a fixed point: from_json gives a PDU (sized by a
 * first attempt into a too-small or too-large buffer), validate accepts it, and to_json of it
 * with the same flags is the same text. */
void fuzz_json_fixed_point(const hako_msg_type_t *type, const char *json, int flags);

#endif
