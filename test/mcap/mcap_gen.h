/* The recordings the MCAP tests write: deterministic schemas, channels and messages, so a test
 * (or the node check) knows every byte that should come back. */
#ifndef HAKO_TEST_MCAP_GEN_H
#define HAKO_TEST_MCAP_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "mcap.h"

#define GEN_SCHEMAS  3
#define GEN_CHANNELS 12
#define GEN_BIG      (100u * 1024u)         /* one message larger than the chunk size */
#define GEN_T0       1700000000000000000ull /* ns: beyond 2^53, as wall-clock times are */

typedef struct gen_msg {
	uint16_t channel;
	uint32_t sequence;
	uint64_t log_time, publish_time;
	size_t len;
	uint8_t data[GEN_BIG];
} gen_msg_t;

typedef struct gen_spec {
	size_t messages;   /* how many */
	size_t chunk_size; /* writer option */
	int compression;   /* hako_mcap_compression_t */
	int big_at;        /* index of the big message, -1: none */
	int with_channels; /* 0: no schema or channel at all */
} gen_spec_t;

/* Message i of a recording: channel i % GEN_CHANNELS, sizes 0..300 B, log times mostly rising
 * with some equal and some going back, sequence = i. */
void gen_message(const gen_spec_t *s, size_t i, gen_msg_t *m);
/* Schema k (0-based) name, encoding "ros2msg", text data. */
void gen_schema(size_t k, const char **name, char *data, size_t cap, size_t *len);
/* Write the recording to path. 0 or a HAKO_E code (message on stderr). */
int gen_write(const char *path, const gen_spec_t *s);

#endif
