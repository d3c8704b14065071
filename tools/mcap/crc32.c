/* CRC-32 (zlib / IEEE 802.3, reflected 0xEDB88320). The writer runs it over every uncompressed
 * chunk and every byte of the data section, so it must keep up with zstd: on x86-64 with PCLMULQDQ
 * it folds 64 bytes at a time with carry-less multiplications (Gopal et al., "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ Instruction", Intel, 2009; the constants
 * are x^k mod P(x), bit-reflected, for P = 0x104C11DB7), ~5x the tables; elsewhere, and for the
 * tail, slicing by 8. */
#include <pthread.h>
#include <stdlib.h>

#include "mcap.h"
#include "mcap_le.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_CLMUL 1
#endif

static uint32_t table[8][256];
static int g_clmul; /* PCLMULQDQ and SSE4.1 are there (and HAKO_MCAP_NO_CLMUL is not set) */
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
#ifdef HAVE_CLMUL
	__builtin_cpu_init();
	g_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") &&
	          getenv("HAKO_MCAP_NO_CLMUL") == NULL;
#endif
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

#ifdef HAVE_CLMUL
/* c (pre-inverted) over n bytes, n >= 64 and a multiple of 16; returns it pre-inverted. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc_clmul(uint32_t c, const uint8_t *p,
                                                                   size_t n)
{
	const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4); /* x^(4*128+-32) */
	const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0); /* x^(128+-32) */
	const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);              /* x^64 */
	const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641); /* mu, P */
	const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);

	__m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 0));
	__m128i x2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
	__m128i x3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
	__m128i x4 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
	x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)c));
	p += 64;
	n -= 64;
	/* Four lanes, each folded 512 bits forward. */
	while (n >= 64) {
		__m128i y1 = _mm_clmulepi64_si128(x1, k1k2, 0x00);
		__m128i y2 = _mm_clmulepi64_si128(x2, k1k2, 0x00);
		__m128i y3 = _mm_clmulepi64_si128(x3, k1k2, 0x00);
		__m128i y4 = _mm_clmulepi64_si128(x4, k1k2, 0x00);
		x1 = _mm_clmulepi64_si128(x1, k1k2, 0x11);
		x2 = _mm_clmulepi64_si128(x2, k1k2, 0x11);
		x3 = _mm_clmulepi64_si128(x3, k1k2, 0x11);
		x4 = _mm_clmulepi64_si128(x4, k1k2, 0x11);
		x1 = _mm_xor_si128(_mm_xor_si128(x1, y1),
		                   _mm_loadu_si128((const __m128i *)(const void *)(p + 0)));
		x2 = _mm_xor_si128(_mm_xor_si128(x2, y2),
		                   _mm_loadu_si128((const __m128i *)(const void *)(p + 16)));
		x3 = _mm_xor_si128(_mm_xor_si128(x3, y3),
		                   _mm_loadu_si128((const __m128i *)(const void *)(p + 32)));
		x4 = _mm_xor_si128(_mm_xor_si128(x4, y4),
		                   _mm_loadu_si128((const __m128i *)(const void *)(p + 48)));
		p += 64;
		n -= 64;
	}
	/* The four lanes into one, then 128 bits at a time. */
	__m128i y = _mm_clmulepi64_si128(x1, k3k4, 0x00);
	x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11), x2), y);
	y = _mm_clmulepi64_si128(x1, k3k4, 0x00);
	x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11), x3), y);
	y = _mm_clmulepi64_si128(x1, k3k4, 0x00);
	x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11), x4), y);
	while (n >= 16) {
		y = _mm_clmulepi64_si128(x1, k3k4, 0x00);
		x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11),
		                                 _mm_loadu_si128((const __m128i *)(const void *)p)),
		                   y);
		p += 16;
		n -= 16;
	}
	/* 128 -> 64 bits, then Barrett reduction to 32. */
	x2 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
	x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
	x2 = _mm_srli_si128(x1, 4);
	x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), k5, 0x00);
	x1 = _mm_xor_si128(x1, x2);
	x2 = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), poly, 0x10);
	x2 = _mm_clmulepi64_si128(_mm_and_si128(x2, low32), poly, 0x00);
	x1 = _mm_xor_si128(x1, x2);
	return (uint32_t)_mm_extract_epi32(x1, 1);
}
#endif

uint32_t hako_mcap_crc32(uint32_t crc, const void *data, size_t len)
{
	pthread_once(&table_once, table_init);
	const uint8_t *p = data;
	uint32_t c = ~crc;
#ifdef HAVE_CLMUL
	if (g_clmul && len >= 64) {
		size_t n = len & ~(size_t)15;
		c = crc_clmul(c, p, n);
		p += n;
		len -= n;
	}
#endif
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
