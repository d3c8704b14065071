/* What the processes of the hello sample share: the "counter" PDU of hello_pdudef.json in
 * Hakoniwa's binary format, and where to find the pdudef.
 *
 * The PDU is [24-byte meta header][uint64 value], little-endian:
 *   0 magic 0x12345678 | 4 version 1 | 8 base offset 24 | 12 heap offset 32 | 16 total size 32
 *   20 epoch | 21 flags | 22..23 reserved | 24 the counter (the std_msgs/UInt64 "data" field)
 * (The registry's codec will do this for any type; a counter does not need it.)
 */
#ifndef HELLO_H
#define HELLO_H

#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define HELLO_ROBOT      "Robot"
#define HELLO_CHANNEL    0    /* the PDU "counter" */
#define HELLO_DELTA_USEC 1000 /* both assets step 1 ms */
#define HELLO_META_SIZE  24
#define HELLO_PDU_SIZE   32 /* pdu_size in hello_pdudef.json */
#define HELLO_PDU_MAGIC  0x12345678u

#ifndef HELLO_PDUDEF_INSTALLED /* set by CMake from the install prefix */
#define HELLO_PDUDEF_INSTALLED "/usr/local/share/hako/samples/hello/hello_pdudef.json"
#endif

static inline void hello_put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
}

static inline uint64_t hello_get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++) {
		v |= (uint64_t)p[i] << (8 * i);
	}
	return v;
}

static inline void hello_counter_encode(uint8_t pdu[HELLO_PDU_SIZE], uint64_t value)
{
	memset(pdu, 0, HELLO_PDU_SIZE); /* epoch 0, flags 0, reserved */
	hello_put_le(pdu + 0, HELLO_PDU_MAGIC, 4);
	hello_put_le(pdu + 4, 1, 4);               /* version */
	hello_put_le(pdu + 8, HELLO_META_SIZE, 4); /* base: the uint64 */
	hello_put_le(pdu + 12, HELLO_PDU_SIZE, 4); /* heap: after the base, empty */
	hello_put_le(pdu + 16, HELLO_PDU_SIZE, 4); /* total size */
	hello_put_le(pdu + HELLO_META_SIZE, value, 8);
}

/* 0 with *value set, or -1 if pdu is not a counter PDU (a channel never written is all zero). */
static inline int hello_counter_decode(const uint8_t pdu[HELLO_PDU_SIZE], uint64_t *value)
{
	if (hello_get_le(pdu, 4) != HELLO_PDU_MAGIC || hello_get_le(pdu + 4, 4) != 1 ||
	    hello_get_le(pdu + 8, 4) != HELLO_META_SIZE) {
		return -1;
	}
	*value = hello_get_le(pdu + HELLO_META_SIZE, 8);
	return 0;
}

/* The pdudef to use: the first argument if given, else hello_pdudef.json next to the
 * executable (the build tree), else the installed copy. */
static inline const char *hello_pdudef_path(int argc, char **argv)
{
	static char path[PATH_MAX];
	if (argc > 1) {
		return argv[1];
	}
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (n > 0) {
		path[n] = '\0';
		char *slash = strrchr(path, '/');
		if (slash != NULL && (size_t)(slash - path) + 20 < sizeof(path)) {
			strcpy(slash + 1, "hello_pdudef.json");
			if (access(path, R_OK) == 0) {
				return path;
			}
		}
	}
	return HELLO_PDUDEF_INSTALLED;
}

#endif
