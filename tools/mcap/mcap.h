/* The MCAP container (https://mcap.dev/spec) as hako-record writes it and hako-replay reads it:
 * schemas, channels and messages, chunked and zstd-compressed, with message and chunk indexes and
 * the summary section. Knows nothing of CDR or of the core: the bytes of a schema and of a message
 * are the caller's. A static library of the programs' floor (tools/), see docs/mcap.md.
 *
 * Every call returns 0 or a negative HAKO_E* code (hako/error.h); the writer and the reader each
 * keep the message of their last error (with the file offset, for the reader). */
#ifndef HAKO_MCAP_H
#define HAKO_MCAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_MCAP_MAGIC     "\x89MCAP0\r\n"
#define HAKO_MCAP_MAGIC_LEN 8

enum hako_mcap_opcode {
	HAKO_MCAP_OP_HEADER = 0x01,
	HAKO_MCAP_OP_FOOTER = 0x02,
	HAKO_MCAP_OP_SCHEMA = 0x03,
	HAKO_MCAP_OP_CHANNEL = 0x04,
	HAKO_MCAP_OP_MESSAGE = 0x05,
	HAKO_MCAP_OP_CHUNK = 0x06,
	HAKO_MCAP_OP_MESSAGE_INDEX = 0x07,
	HAKO_MCAP_OP_CHUNK_INDEX = 0x08,
	HAKO_MCAP_OP_ATTACHMENT = 0x09,
	HAKO_MCAP_OP_ATTACHMENT_INDEX = 0x0A,
	HAKO_MCAP_OP_STATISTICS = 0x0B,
	HAKO_MCAP_OP_METADATA = 0x0C,
	HAKO_MCAP_OP_METADATA_INDEX = 0x0D,
	HAKO_MCAP_OP_SUMMARY_OFFSET = 0x0E,
	HAKO_MCAP_OP_DATA_END = 0x0F,
};

typedef enum hako_mcap_compression {
	HAKO_MCAP_COMPRESS_NONE = 0,
	HAKO_MCAP_COMPRESS_ZSTD = 1,
	HAKO_MCAP_COMPRESS_LZ4 = 2, /* the LZ4 frame format */
} hako_mcap_compression_t;

/* CRC-32 of zlib / IEEE 802.3, continued from crc (0 to start). */
uint32_t hako_mcap_crc32(uint32_t crc, const void *data, size_t len);

/* ---- writer ---- */

typedef struct hako_mcap_writer hako_mcap_writer_t;

typedef struct hako_mcap_writer_opts {
	const char *profile; /* Header profile, e.g. "ros2"; NULL: "" */
	const char *library; /* Header library; NULL: "hako" */
	size_t chunk_size;   /* uncompressed bytes that close a chunk; 0: 1 MiB */
	hako_mcap_compression_t compression;
	int zstd_level; /* 0: 1 (fastest of the usual levels); lz4 runs at its default */
	int fsync;      /* fsync the file on close */
} hako_mcap_writer_opts_t;

/* Create (truncate) path and write the magic and the Header. opts NULL: the defaults (zstd).
 * On error the message ("path: why") goes to errbuf (may be NULL). */
int hako_mcap_writer_open(hako_mcap_writer_t **out, const char *path,
                          const hako_mcap_writer_opts_t *opts, char *errbuf, size_t errlen);
/* A Schema record, written at once (outside any chunk) and again in the summary. *id: 1, 2, ... */
int hako_mcap_writer_add_schema(hako_mcap_writer_t *w, const char *name, const char *encoding,
                                const void *data, size_t len, uint16_t *id);
/* A Channel record, written at once and again in the summary. schema_id 0: no schema. metadata:
 * key, value, key, value, ..., NULL (NULL: none). *id: 0, 1, ... */
int hako_mcap_writer_add_channel(hako_mcap_writer_t *w, uint16_t schema_id, const char *topic,
                                 const char *message_encoding, const char *const *metadata,
                                 uint16_t *id);
/* One Message into the current chunk; a full chunk is compressed and written. No allocation
 * unless a message is larger than any before it. */
int hako_mcap_writer_write(hako_mcap_writer_t *w, uint16_t channel_id, uint32_t sequence,
                           uint64_t log_time, uint64_t publish_time, const void *data, size_t len);
/* A Metadata record (name, then key, value, ..., NULL; NULL: none) between chunks (the current
 * chunk is closed first), indexed in the summary (MetadataIndex) and counted in Statistics. */
int hako_mcap_writer_add_metadata(hako_mcap_writer_t *w, const char *name,
                                  const char *const *pairs);
/* Close the current chunk (if any) and hand every byte to the kernel. */
int hako_mcap_writer_flush(hako_mcap_writer_t *w);
/* The last chunk, DataEnd, the summary, the summary offsets, the Footer and the magic; then
 * closes and frees w (also on error). Returns the first error the writer met, if any. */
int hako_mcap_writer_close(hako_mcap_writer_t *w);
/* The message of the writer's first error ("" if none). */
const char *hako_mcap_writer_error(const hako_mcap_writer_t *w);

typedef struct hako_mcap_writer_stats {
	uint64_t messages, chunks, bytes_uncompressed, bytes_written;
} hako_mcap_writer_stats_t;
void hako_mcap_writer_get_stats(const hako_mcap_writer_t *w, hako_mcap_writer_stats_t *st);

/* ---- reader ---- */

typedef struct hako_mcap_reader hako_mcap_reader_t;

typedef struct hako_mcap_schema {
	uint16_t id;
	const char *name, *encoding;
	const uint8_t *data;
	size_t len;
} hako_mcap_schema_t;

typedef struct hako_mcap_channel {
	uint16_t id, schema_id;
	const char *topic, *message_encoding;
	const char *const *metadata;      /* key, value, ..., NULL */
	const hako_mcap_schema_t *schema; /* NULL when schema_id is 0 */
} hako_mcap_channel_t;

typedef struct hako_mcap_message {
	const hako_mcap_channel_t *channel;
	uint32_t sequence;
	uint64_t log_time, publish_time;
	const uint8_t *data; /* valid until the next call on the reader */
	size_t len;
	uint64_t chunk_offset; /* file offset of the chunk (or message record) it came from */
} hako_mcap_message_t;

/* What the reader left out of a damaged file: [offset, offset + bytes) and why. */
typedef struct hako_mcap_skip {
	uint64_t offset, bytes;
	char why[160];
} hako_mcap_skip_t;

typedef enum hako_mcap_order {
	HAKO_MCAP_ORDER_FILE = 0, /* the order of the records in the file */
	HAKO_MCAP_ORDER_LOG_TIME, /* by log_time; equal times in file order */
} hako_mcap_order_t;

/* Open path: validate the magic, read the summary when the footer is intact (indexed), else scan
 * the records from the start (streamed), noting what a cut-off or damaged tail lost. On error
 * the message (with the file offset) goes to errbuf (may be NULL). */
int hako_mcap_reader_open(hako_mcap_reader_t **out, const char *path, char *errbuf, size_t errlen);
void hako_mcap_reader_close(hako_mcap_reader_t *r);
/* 1: the summary was read; 0: the records were scanned. */
int hako_mcap_reader_indexed(const hako_mcap_reader_t *r);
const char *hako_mcap_reader_profile(const hako_mcap_reader_t *r);
size_t hako_mcap_reader_schema_count(const hako_mcap_reader_t *r);
const hako_mcap_schema_t *hako_mcap_reader_schema(const hako_mcap_reader_t *r, size_t i);
size_t hako_mcap_reader_channel_count(const hako_mcap_reader_t *r);
const hako_mcap_channel_t *hako_mcap_reader_channel(const hako_mcap_reader_t *r, size_t i);
/* Parts of the file left out, in file order. */
size_t hako_mcap_reader_skip_count(const hako_mcap_reader_t *r);
const hako_mcap_skip_t *hako_mcap_reader_skip(const hako_mcap_reader_t *r, size_t i);
/* Start (again) iterating the messages in this order. */
int hako_mcap_reader_rewind(hako_mcap_reader_t *r, hako_mcap_order_t order);
/* The next message: 1 and *m filled, 0 at the end, < 0 on error (hako_mcap_reader_error). */
int hako_mcap_reader_next(hako_mcap_reader_t *r, hako_mcap_message_t *m);
/* The message of the last error, with the file offset. */
const char *hako_mcap_reader_error(const hako_mcap_reader_t *r);

#ifdef __cplusplus
}
#endif
#endif
