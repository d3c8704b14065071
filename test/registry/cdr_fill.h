/* A deterministic, non-trivial PDU of any type, for the CDR tests: every field set, variable
 * arrays of 0 to 3 elements, ASCII strings (some empty), negative integers, uint64 above
 * INT64_MAX, fractional floats. */
#ifndef HAKO_TEST_CDR_FILL_H
#define HAKO_TEST_CDR_FILL_H

#include <stddef.h>
#include <stdint.h>

#include "hako/msg.h"

/* The PDU of `type` for `seed` into buf; *len its size. 0 or the writer's error. */
int cdr_fill(const hako_msg_type_t *type, uint32_t seed, void *buf, size_t cap, size_t *len);

#endif
