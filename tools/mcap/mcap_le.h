/* Little-endian integers and strings of MCAP records, shared by writer.c and reader.c. */
#ifndef HAKO_MCAP_LE_H
#define HAKO_MCAP_LE_H

#include <stdint.h>
#include <string.h>

static inline uint8_t *mcap_put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	return p + 2;
}

static inline uint8_t *mcap_put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
	return p + 4;
}

static inline uint8_t *mcap_put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
	return p + 8;
}

static inline uint16_t mcap_get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t mcap_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t mcap_get_u64(const uint8_t *p)
{
	return (uint64_t)mcap_get_u32(p) | ((uint64_t)mcap_get_u32(p + 4) << 32);
}

#endif
