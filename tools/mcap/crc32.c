/* CRC-32 (zlib / IEEE 802.3, reflected 0xEDB88320), slicing by 8: the writer runs it over every
 * uncompressed chunk and every byte of the data section, so it must keep up with zstd. */
#include <pthread.h>

#include "mcap.h"
#include "mcap_le.h"

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++) {
			c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		}
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++) {
		for (int t = 1; t < 8; t++) {
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
		}
	}
}

uint32_t hako_mcap_crc32(uint32_t crc, const void *data, size_t len)
{
	pthread_once(&table_once, table_init);
	const uint8_t *p = data;
	uint32_t c = ~crc;
	while (len >= 8) {
		uint32_t a = mcap_get_u32(p) ^ c;
		uint32_t b = mcap_get_u32(p + 4);
		c = table[7][a & 0xFF] ^ table[6][(a >> 8) & 0xFF] ^ table[5][(a >> 16) & 0xFF] ^
		    table[4][a >> 24] ^ table[3][b & 0xFF] ^ table[2][(b >> 8) & 0xFF] ^
		    table[1][(b >> 16) & 0xFF] ^ table[0][b >> 24];
		p += 8;
		len -= 8;
	}
	while (len--) {
		c = table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
	}
	return ~c;
}
