/* The MCAP reader. Open finds the schemas, the channels and the data blocks (chunks, and bare
 * Message records of unchunked files): from the summary when the footer is intact, else by
 * scanning the records from the start, which stops at a record cut off by the end of the file and
 * notes what it left out. Blocks are read, decompressed and checked only as the messages are
 * iterated. Every length from the file is checked against what holds it before it is used. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <lz4frame.h>
#include <zstd.h>

#include "hako/error.h"
#include "mcap.h"
#include "mcap_le.h"

#define RECORD_HEADER  9u
#define MESSAGE_PREFIX 22u
#define FOOTER_RECORD  (RECORD_HEADER + 20u)
/* Bounds on what one record may make us allocate, whatever its length field says. */
#define MAX_META_RECORD (64u << 20)   /* a Schema or Channel record, the summary */
#define MAX_CHUNK       (1024u << 20) /* a chunk, compressed or not */

typedef struct block {
	uint64_t offset, len; /* of the whole record */
	uint64_t start;       /* message_start_time (log_time of a bare message) */
	int chunk;            /* 1: Chunk record, 0: a bare Message record */
} block_t;

typedef struct entry {
	uint64_t log_time;
	size_t off; /* of the Message record in the block's records */
} entry_t;

/* A block read and parsed: its records uncompressed, its messages in the order served. */
typedef struct loaded {
	uint8_t *buf;
	size_t len;
	entry_t *e;
	size_t n, pos;
	size_t block; /* index in the iteration order: ties in log time go to the earlier */
	uint64_t offset;
} loaded_t;

typedef struct schema_slot {
	hako_mcap_schema_t s;
	char *name, *encoding;
	uint8_t *data;
} schema_slot_t;

typedef struct channel_slot {
	hako_mcap_channel_t c;
	char *topic, *encoding;
	char **metadata;
} channel_slot_t;

struct hako_mcap_reader {
	int fd;
	uint64_t size;
	char *path;
	char err[512];
	int indexed;
	char *profile;

	schema_slot_t **schemas;
	size_t nschemas;
	channel_slot_t **channels;
	size_t nchannels;
	uint32_t schema_at[65536], channel_at[65536]; /* id -> index + 1, 0: none */

	block_t *blocks;
	size_t nblocks, blocks_cap;
	hako_mcap_skip_t *skips;
	size_t nskips;

	hako_mcap_order_t order;
	size_t *seq; /* block indexes in iteration order */
	size_t next; /* in seq */
	loaded_t *open;
	size_t nopen, open_cap;
	ZSTD_DCtx
	    *zstd; /* made at the first zstd chunk, kept: ZSTD_decompress makes one per call */
};

static int fail(hako_mcap_reader_t *r, int code, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(hako_mcap_reader_t *r, int code, uint64_t offset, const char *fmt, ...)
{
	int n = snprintf(r->err, sizeof(r->err), "%s: offset %llu: ", r->path,
	                 (unsigned long long)offset);
	if (n < 0 || (size_t)n >= sizeof(r->err)) {
		return code;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return code;
}

static int add_skip(hako_mcap_reader_t *r, uint64_t offset, uint64_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int add_skip(hako_mcap_reader_t *r, uint64_t offset, uint64_t bytes, const char *fmt, ...)
{
	hako_mcap_skip_t *s = realloc(r->skips, (r->nskips + 1) * sizeof(*s));
	if (s == NULL) {
		return HAKO_ENOMEM;
	}
	r->skips = s;
	s = &s[r->nskips++];
	s->offset = offset;
	s->bytes = bytes;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	return 0;
}

static const char *op_name(uint8_t op)
{
	static const char *const names[] = {
	    "?",          "Header",        "Footer",          "Schema",
	    "Channel",    "Message",       "Chunk",           "MessageIndex",
	    "ChunkIndex", "Attachment",    "AttachmentIndex", "Statistics",
	    "Metadata",   "MetadataIndex", "SummaryOffset",   "DataEnd"};
	return op < sizeof(names) / sizeof(names[0]) ? names[op] : "unknown";
}

static int read_at(hako_mcap_reader_t *r, void *buf, size_t n, uint64_t offset)
{
	uint8_t *p = buf;
	while (n > 0) {
		ssize_t k = pread(r->fd, p, n, (off_t)offset);
		if (k < 0 && errno == EINTR) {
			continue;
		}
		if (k <= 0) {
			return fail(r, HAKO_EIO, offset, "read: %s",
			            k < 0 ? strerror(errno) : "unexpected end of file");
		}
		p += k;
		n -= (size_t)k;
		offset += (uint64_t)k;
	}
	return 0;
}

/* A cursor over the body of one record: every read is checked against its end. */
typedef struct cur {
	const uint8_t *p, *end;
	uint64_t base; /* file offset of p at the start, for messages */
	const uint8_t *start;
	int bad;
} cur_t;

static int cur_need(cur_t *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return 0;
	}
	return 1;
}

static uint16_t cur_u16(cur_t *c)
{
	if (!cur_need(c, 2)) {
		return 0;
	}
	c->p += 2;
	return mcap_get_u16(c->p - 2);
}

static uint32_t cur_u32(cur_t *c)
{
	if (!cur_need(c, 4)) {
		return 0;
	}
	c->p += 4;
	return mcap_get_u32(c->p - 4);
}

static uint64_t cur_u64(cur_t *c)
{
	if (!cur_need(c, 8)) {
		return 0;
	}
	c->p += 8;
	return mcap_get_u64(c->p - 8);
}

/* A u32-length string, copied and NUL-terminated (NULL when bad or out of memory). */
static char *cur_string(cur_t *c)
{
	uint32_t n = cur_u32(c);
	if (!cur_need(c, n)) {
		return NULL;
	}
	char *s = malloc((size_t)n + 1);
	if (s == NULL) {
		c->bad = 1;
		return NULL;
	}
	memcpy(s, c->p, n);
	s[n] = '\0';
	c->p += n;
	return s;
}

static void free_schema(schema_slot_t *s)
{
	if (s) {
		free(s->name);
		free(s->encoding);
		free(s->data);
		free(s);
	}
}

static void free_channel(channel_slot_t *c)
{
	if (c) {
		free(c->topic);
		free(c->encoding);
		for (size_t i = 0; c->metadata && c->metadata[i]; i++) {
			free(c->metadata[i]);
		}
		free(c->metadata);
		free(c);
	}
}

static int add_schema(hako_mcap_reader_t *r, const uint8_t *body, size_t len, uint64_t offset)
{
	cur_t c = {body, body + len, offset, body, 0};
	schema_slot_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return HAKO_ENOMEM;
	}
	s->s.id = cur_u16(&c);
	s->name = cur_string(&c);
	s->encoding = cur_string(&c);
	uint32_t n = cur_u32(&c);
	if (!c.bad && cur_need(&c, n)) {
		s->data = malloc(n ? n : 1);
		if (s->data) {
			memcpy(s->data, c.p, n);
		}
	}
	if (c.bad || s->data == NULL) {
		const char *why =
		    c.bad ? "a field runs past the end of the record" : "out of memory";
		free_schema(s);
		return fail(r, HAKO_EPROTO, offset, "Schema record: %s", why);
	}
	if (s->s.id == 0) { /* invalid, and the spec says to ignore it */
		free_schema(s);
		return 0;
	}
	s->s.name = s->name;
	s->s.encoding = s->encoding;
	s->s.data = s->data;
	s->s.len = n;
	if (r->schema_at[s->s.id] != 0) { /* written again (summary, chunk): the first one holds */
		free_schema(s);
		return 0;
	}
	schema_slot_t **v = realloc(r->schemas, (r->nschemas + 1) * sizeof(*v));
	if (v == NULL) {
		free_schema(s);
		return HAKO_ENOMEM;
	}
	r->schemas = v;
	r->schema_at[s->s.id] = (uint32_t)r->nschemas + 1;
	v[r->nschemas++] = s;
	for (size_t i = 0; i < r->nchannels; i++) { /* channels may come first in a chunk */
		if (r->channels[i]->c.schema_id == s->s.id) {
			r->channels[i]->c.schema = &s->s;
		}
	}
	return 0;
}

static int add_channel(hako_mcap_reader_t *r, const uint8_t *body, size_t len, uint64_t offset)
{
	cur_t c = {body, body + len, offset, body, 0};
	channel_slot_t *ch = calloc(1, sizeof(*ch));
	if (ch == NULL) {
		return HAKO_ENOMEM;
	}
	ch->c.id = cur_u16(&c);
	ch->c.schema_id = cur_u16(&c);
	ch->topic = cur_string(&c);
	ch->encoding = cur_string(&c);
	uint32_t mlen = cur_u32(&c);
	if (cur_need(&c, mlen)) {
		cur_t m = {c.p, c.p + mlen, 0, c.p, 0};
		size_t n = 0;
		ch->metadata = calloc(1, sizeof(char *));
		while (ch->metadata && m.p < m.end && !m.bad) {
			char **v = realloc(ch->metadata, (n + 3) * sizeof(char *));
			if (v == NULL) {
				m.bad = 1;
				break;
			}
			ch->metadata = v;
			v[n] = cur_string(&m);
			v[n + 1] = v[n] ? cur_string(&m) : NULL;
			v[n + 2] = NULL;
			if (v[n + 1] == NULL) {
				free(v[n]);
				v[n] = NULL;
				m.bad = 1;
				break;
			}
			n += 2;
		}
		c.bad |= m.bad || ch->metadata == NULL;
		c.p += mlen;
	}
	if (c.bad || ch->topic == NULL || ch->encoding == NULL) {
		free_channel(ch);
		return fail(r, HAKO_EPROTO, offset,
		            "Channel record: a field runs past the end of the "
		            "record");
	}
	ch->c.topic = ch->topic;
	ch->c.message_encoding = ch->encoding;
	ch->c.metadata = (const char *const *)ch->metadata;
	if (r->channel_at[ch->c.id] != 0) {
		const channel_slot_t *old = r->channels[r->channel_at[ch->c.id] - 1];
		int same =
		    strcmp(old->topic, ch->topic) == 0 && old->c.schema_id == ch->c.schema_id;
		uint16_t id = ch->c.id;
		free_channel(ch);
		return same ? 0
		            : fail(r, HAKO_EPROTO, offset,
		                   "Channel record: id %u was already given to another topic", id);
	}
	channel_slot_t **v = realloc(r->channels, (r->nchannels + 1) * sizeof(*v));
	if (v == NULL) {
		free_channel(ch);
		return HAKO_ENOMEM;
	}
	r->channels = v;
	uint32_t si = r->schema_at[ch->c.schema_id];
	ch->c.schema = ch->c.schema_id && si != 0 ? &r->schemas[si - 1]->s : NULL;
	r->channel_at[ch->c.id] = (uint32_t)r->nchannels + 1;
	v[r->nchannels++] = ch;
	return 0;
}

static int add_block(hako_mcap_reader_t *r, uint64_t offset, uint64_t len, uint64_t start,
                     int chunk)
{
	if (r->nblocks == r->blocks_cap) {
		size_t cap = r->blocks_cap ? r->blocks_cap * 2 : 64;
		block_t *b = realloc(r->blocks, cap * sizeof(*b));
		if (b == NULL) {
			return HAKO_ENOMEM;
		}
		r->blocks = b;
		r->blocks_cap = cap;
	}
	r->blocks[r->nblocks++] = (block_t){offset, len, start, chunk};
	return 0;
}

/* A Schema or Channel record at offset with a body of len bytes: read and registered. */
static int read_meta_record(hako_mcap_reader_t *r, uint8_t op, uint64_t offset, uint64_t len)
{
	if (len > MAX_META_RECORD) {
		return fail(r, HAKO_EPROTO, offset, "%s record of %llu bytes (more than %u)",
		            op_name(op), (unsigned long long)len, MAX_META_RECORD);
	}
	uint8_t *body = malloc(len ? len : 1);
	if (body == NULL) {
		return HAKO_ENOMEM;
	}
	int rc = read_at(r, body, len, offset + RECORD_HEADER);
	if (rc == 0) {
		rc = op == HAKO_MCAP_OP_SCHEMA ? add_schema(r, body, len, offset)
		                               : add_channel(r, body, len, offset);
	}
	free(body);
	return rc;
}

static int load_block(hako_mcap_reader_t *r, size_t k, loaded_t *l);
static void unload(loaded_t *l);

/* The Schema and Channel records inside the chunks (other writers put them there) registered,
 * so that every table is complete before the first message. A chunk that does not load is left
 * for the iteration to report, with its offset. */
static int register_chunk_tables(hako_mcap_reader_t *r)
{
	size_t *seq = malloc((r->nblocks ? r->nblocks : 1) * sizeof(size_t));
	if (seq == NULL) {
		return HAKO_ENOMEM;
	}
	free(r->seq);
	r->seq = seq;
	for (size_t i = 0; i < r->nblocks; i++) {
		seq[i] = i;
		loaded_t l;
		if (r->blocks[i].chunk && load_block(r, i, &l) == 0) {
			unload(&l);
		}
	}
	r->err[0] = '\0';
	return 0;
}

/* The records from pos on, to DataEnd, the Footer or the end of the file; what follows DataEnd
 * is noted as skipped when note_tail. */
static int scan(hako_mcap_reader_t *r, uint64_t pos, int note_tail)
{
	for (;;) {
		if (pos == r->size) {
			return add_skip(
			    r, pos, 0,
			    "the file ends without DataEnd and summary: the recording was "
			    "not closed");
		}
		if (r->size - pos < RECORD_HEADER) {
			return add_skip(
			    r, pos, r->size - pos,
			    "%llu bytes at the end are too few for a record header: cut off",
			    (unsigned long long)(r->size - pos));
		}
		uint8_t h[RECORD_HEADER + 16];
		int rc = read_at(r, h, RECORD_HEADER, pos);
		if (rc) {
			return rc;
		}
		uint8_t op = h[0];
		uint64_t len = mcap_get_u64(h + 1);
		if (len > r->size - pos - RECORD_HEADER) {
			return add_skip(
			    r, pos, r->size - pos,
			    "%s record (opcode 0x%02x) of %llu bytes runs past the end of the "
			    "file (%llu bytes left): cut off",
			    op_name(op), op, (unsigned long long)len,
			    (unsigned long long)(r->size - pos - RECORD_HEADER));
		}
		switch (op) {
		case HAKO_MCAP_OP_SCHEMA:
		case HAKO_MCAP_OP_CHANNEL: rc = read_meta_record(r, op, pos, len); break;
		case HAKO_MCAP_OP_CHUNK:
		case HAKO_MCAP_OP_MESSAGE:
			if (len < (op == HAKO_MCAP_OP_CHUNK ? 40u : MESSAGE_PREFIX)) {
				return fail(r, HAKO_EPROTO, pos,
				            "%s record of %llu bytes is too short", op_name(op),
				            (unsigned long long)len);
			}
			rc = read_at(r, h + RECORD_HEADER, 16, pos + RECORD_HEADER);
			if (rc == 0) {
				uint64_t start = op == HAKO_MCAP_OP_CHUNK
				                     ? mcap_get_u64(h + RECORD_HEADER)
				                     : mcap_get_u64(h + RECORD_HEADER + 6);
				rc = add_block(r, pos, RECORD_HEADER + len, start,
				               op == HAKO_MCAP_OP_CHUNK);
			}
			break;
		case HAKO_MCAP_OP_DATA_END:
		case HAKO_MCAP_OP_FOOTER:
			/* Every message is before here; what follows did not pass try_summary. */
			pos += RECORD_HEADER + len;
			if (op == HAKO_MCAP_OP_FOOTER || !note_tail) {
				return 0;
			}
			return pos == r->size
			           ? add_skip(r, pos, 0,
			                      "the file ends after DataEnd: no summary, no Footer")
			           : add_skip(r, pos, r->size - pos,
			                      "the summary after DataEnd has no intact Footer: the "
			                      "records were scanned instead");
		case HAKO_MCAP_OP_HEADER:
			return fail(r, HAKO_EPROTO, pos, "a second Header record");
		default: /* indexes, attachments, metadata, opcodes of later versions: skipped */
			break;
		}
		if (rc) {
			return rc;
		}
		pos += RECORD_HEADER + len;
	}
}

/* The summary section [start, end): schemas, channels, chunk indexes. 0, or an error that
 * makes the caller scan instead. */
static int read_summary(hako_mcap_reader_t *r, uint64_t start, uint64_t end, uint32_t crc,
                        const uint8_t *footer_prefix)
{
	if (end - start > MAX_META_RECORD) {
		return fail(r, HAKO_EPROTO, start, "summary of %llu bytes (more than %u)",
		            (unsigned long long)(end - start), MAX_META_RECORD);
	}
	size_t n = (size_t)(end - start);
	uint8_t *s = malloc(n ? n : 1);
	if (s == NULL) {
		return HAKO_ENOMEM;
	}
	int rc = read_at(r, s, n, start);
	if (rc == 0 && crc != 0) {
		uint32_t got = hako_mcap_crc32(hako_mcap_crc32(0, s, n), footer_prefix, 25);
		if (got != crc) {
			rc = fail(r, HAKO_EPROTO, start,
			          "summary CRC mismatch (computed 0x%08x, the footer says 0x%08x)",
			          got, crc);
		}
	}
	size_t pos = 0;
	while (rc == 0 && pos < n) {
		if (n - pos < RECORD_HEADER) {
			rc = fail(r, HAKO_EPROTO, start + pos,
			          "summary: a record header is cut off");
			break;
		}
		uint8_t op = s[pos];
		uint64_t len = mcap_get_u64(s + pos + 1);
		if (len > n - pos - RECORD_HEADER) {
			rc = fail(r, HAKO_EPROTO, start + pos,
			          "summary: %s record of %llu bytes runs past the summary",
			          op_name(op), (unsigned long long)len);
			break;
		}
		const uint8_t *body = s + pos + RECORD_HEADER;
		if (op == HAKO_MCAP_OP_SCHEMA) {
			rc = add_schema(r, body, (size_t)len, start + pos);
		} else if (op == HAKO_MCAP_OP_CHANNEL) {
			rc = add_channel(r, body, (size_t)len, start + pos);
		} else if (op == HAKO_MCAP_OP_CHUNK_INDEX) {
			cur_t c = {body, body + len, start + pos, body, 0};
			uint64_t t0 = cur_u64(&c);
			cur_u64(&c);
			uint64_t off = cur_u64(&c);
			uint64_t clen = cur_u64(&c);
			if (c.bad || off < HAKO_MCAP_MAGIC_LEN || clen < RECORD_HEADER + 40 ||
			    off > start || clen > start - off) {
				rc = fail(r, HAKO_EPROTO, start + pos,
				          "ChunkIndex: the chunk [%llu, +%llu) is not in the data "
				          "section",
				          (unsigned long long)off, (unsigned long long)clen);
			} else {
				rc = add_block(r, off, clen, t0, 1);
			}
		}
		pos += RECORD_HEADER + (size_t)len;
	}
	free(s);
	return rc;
}

static void reset_tables(hako_mcap_reader_t *r)
{
	for (size_t i = 0; i < r->nschemas; i++) {
		r->schema_at[r->schemas[i]->s.id] = 0;
		free_schema(r->schemas[i]);
	}
	for (size_t i = 0; i < r->nchannels; i++) {
		r->channel_at[r->channels[i]->c.id] = 0;
		free_channel(r->channels[i]);
	}
	r->nschemas = r->nchannels = r->nblocks = 0;
}

/* 1 if the file ends in an intact footer and summary (read), 0 if it must be scanned. */
static int try_summary(hako_mcap_reader_t *r, uint64_t data_start)
{
	uint8_t f[FOOTER_RECORD + HAKO_MCAP_MAGIC_LEN];
	if (r->size < data_start + sizeof(f) ||
	    read_at(r, f, sizeof(f), r->size - sizeof(f)) != 0 ||
	    memcmp(f + FOOTER_RECORD, HAKO_MCAP_MAGIC, HAKO_MCAP_MAGIC_LEN) != 0 ||
	    f[0] != HAKO_MCAP_OP_FOOTER || mcap_get_u64(f + 1) != 20) {
		return 0;
	}
	uint64_t footer = r->size - sizeof(f);
	uint64_t start = mcap_get_u64(f + RECORD_HEADER);
	uint32_t crc = mcap_get_u32(f + RECORD_HEADER + 16);
	if (start == 0) {
		return 0; /* no summary written: the blocks are found by scanning */
	}
	if (start < data_start || start > footer) {
		add_skip(r, footer, FOOTER_RECORD,
		         "Footer: summary_start %llu is outside the file; "
		         "scanned the records instead",
		         (unsigned long long)start);
		return 0;
	}
	if (read_summary(r, start, footer, crc, f) != 0) {
		add_skip(r, start, footer - start,
		         "summary unusable (%s); scanned the records instead", r->err);
		reset_tables(r);
		return 0;
	}
	return 1;
}

int hako_mcap_reader_open(hako_mcap_reader_t **out, const char *path, char *errbuf, size_t errlen)
{
	if (out == NULL || path == NULL) {
		return HAKO_EINVAL;
	}
	*out = NULL;
	hako_mcap_reader_t *r = calloc(1, sizeof(*r));
	if (r == NULL || (r->path = strdup(path)) == NULL) {
		free(r);
		if (errbuf && errlen) {
			snprintf(errbuf, errlen, "%s: out of memory", path);
		}
		return HAKO_ENOMEM;
	}
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int rc = 0;
	if (r->fd < 0 || fstat(r->fd, &st) != 0) {
		rc = fail(r, errno == ENOENT ? HAKO_ENOENT : HAKO_EIO, 0, "%s", strerror(errno));
		goto out;
	}
	r->size = (uint64_t)st.st_size;
	uint8_t h[HAKO_MCAP_MAGIC_LEN + RECORD_HEADER];
	if (r->size < HAKO_MCAP_MAGIC_LEN || read_at(r, h, HAKO_MCAP_MAGIC_LEN, 0) != 0 ||
	    memcmp(h, HAKO_MCAP_MAGIC, HAKO_MCAP_MAGIC_LEN) != 0) {
		rc = fail(r, HAKO_EMAGIC, 0, "not an MCAP file (no MCAP magic at the start)");
		goto out;
	}
	/* The Header: its profile is the one thing we keep. */
	uint64_t pos = HAKO_MCAP_MAGIC_LEN;
	if (r->size - pos < RECORD_HEADER) {
		rc = add_skip(r, pos, r->size - pos, "the Header record is cut off");
		goto out;
	}
	rc = read_at(r, h, RECORD_HEADER, pos);
	if (rc) {
		goto out;
	}
	uint64_t hlen = mcap_get_u64(h + 1);
	if (h[0] != HAKO_MCAP_OP_HEADER) {
		rc = fail(r, HAKO_EPROTO, pos, "the first record is %s (opcode 0x%02x), not Header",
		          op_name(h[0]), h[0]);
		goto out;
	}
	if (hlen > r->size - pos - RECORD_HEADER) {
		rc = add_skip(r, pos, r->size - pos, "the Header record is cut off");
		goto out;
	}
	if (hlen > MAX_META_RECORD) {
		rc = fail(r, HAKO_EPROTO, pos, "Header record of %llu bytes",
		          (unsigned long long)hlen);
		goto out;
	}
	uint8_t *body = malloc(hlen ? hlen : 1);
	if (body == NULL) {
		rc = HAKO_ENOMEM;
		goto out;
	}
	rc = read_at(r, body, hlen, pos + RECORD_HEADER);
	cur_t c = {body, body + hlen, pos, body, 0};
	r->profile = rc ? NULL : cur_string(&c);
	free(body);
	if (rc == 0 && r->profile == NULL) {
		rc = fail(r, HAKO_EPROTO, pos, "Header record: the profile runs past its end");
	}
	if (rc) {
		goto out;
	}
	pos += RECORD_HEADER + hlen;
	r->indexed = try_summary(r, pos);
	if (!r->indexed) {
		rc = scan(r, pos, 1);
		rc = rc ? rc : register_chunk_tables(r);
	} else if (r->nblocks == 0) {
		/* A summary without ChunkIndex records: no chunks, or bare messages to find. */
		rc = scan(r, pos, 0);
	}
out:
	if (rc) {
		if (errbuf && errlen) {
			snprintf(errbuf, errlen, "%s", r->err[0] ? r->err : hako_strerror(rc));
		}
		hako_mcap_reader_close(r);
		return rc;
	}
	*out = r;
	return hako_mcap_reader_rewind(r, HAKO_MCAP_ORDER_FILE);
}

static void unload(loaded_t *l)
{
	free(l->buf);
	free(l->e);
}

void hako_mcap_reader_close(hako_mcap_reader_t *r)
{
	if (r == NULL) {
		return;
	}
	if (r->fd >= 0) {
		close(r->fd);
	}
	reset_tables(r);
	for (size_t i = 0; i < r->nopen; i++) {
		unload(&r->open[i]);
	}
	free(r->open);
	free(r->schemas);
	free(r->channels);
	free(r->blocks);
	free(r->skips);
	free(r->seq);
	ZSTD_freeDCtx(r->zstd);
	free(r->profile);
	free(r->path);
	free(r);
}

int hako_mcap_reader_indexed(const hako_mcap_reader_t *r)
{
	return r->indexed;
}

const char *hako_mcap_reader_profile(const hako_mcap_reader_t *r)
{
	return r->profile ? r->profile : "";
}

size_t hako_mcap_reader_schema_count(const hako_mcap_reader_t *r)
{
	return r->nschemas;
}

const hako_mcap_schema_t *hako_mcap_reader_schema(const hako_mcap_reader_t *r, size_t i)
{
	return i < r->nschemas ? &r->schemas[i]->s : NULL;
}

size_t hako_mcap_reader_channel_count(const hako_mcap_reader_t *r)
{
	return r->nchannels;
}

const hako_mcap_channel_t *hako_mcap_reader_channel(const hako_mcap_reader_t *r, size_t i)
{
	return i < r->nchannels ? &r->channels[i]->c : NULL;
}

size_t hako_mcap_reader_skip_count(const hako_mcap_reader_t *r)
{
	return r->nskips;
}

const hako_mcap_skip_t *hako_mcap_reader_skip(const hako_mcap_reader_t *r, size_t i)
{
	return i < r->nskips ? &r->skips[i] : NULL;
}

const char *hako_mcap_reader_error(const hako_mcap_reader_t *r)
{
	return r ? r->err : "";
}

static const hako_mcap_reader_t *sort_ctx;

static int cmp_block(const void *a, const void *b)
{
	const block_t *x = &sort_ctx->blocks[*(const size_t *)a];
	const block_t *y = &sort_ctx->blocks[*(const size_t *)b];
	if (x->start != y->start) {
		return x->start < y->start ? -1 : 1;
	}
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int cmp_entry(const void *a, const void *b)
{
	const entry_t *x = a, *y = b;
	if (x->log_time != y->log_time) {
		return x->log_time < y->log_time ? -1 : 1;
	}
	return x->off < y->off ? -1 : x->off > y->off; /* stable: file order among equal times */
}

int hako_mcap_reader_rewind(hako_mcap_reader_t *r, hako_mcap_order_t order)
{
	if (r == NULL || (order != HAKO_MCAP_ORDER_FILE && order != HAKO_MCAP_ORDER_LOG_TIME)) {
		return HAKO_EINVAL;
	}
	for (size_t i = 0; i < r->nopen; i++) {
		unload(&r->open[i]);
	}
	r->nopen = 0;
	r->next = 0;
	r->order = order;
	free(r->seq);
	r->seq = malloc((r->nblocks ? r->nblocks : 1) * sizeof(size_t));
	if (r->seq == NULL) {
		return HAKO_ENOMEM;
	}
	for (size_t i = 0; i < r->nblocks; i++) {
		r->seq[i] = i;
	}
	/* File order: the blocks by offset (a summary lists them as its writer pleased). */
	sort_ctx = r;
	if (order == HAKO_MCAP_ORDER_LOG_TIME) {
		qsort(r->seq, r->nblocks, sizeof(size_t), cmp_block);
	} else {
		/* by offset only: start times are equal in the comparison's eyes */
		for (size_t i = 1; i < r->nblocks; i++) {
			size_t v = r->seq[i], j = i;
			while (j > 0 && r->blocks[r->seq[j - 1]].offset > r->blocks[v].offset) {
				r->seq[j] = r->seq[j - 1];
				j--;
			}
			r->seq[j] = v;
		}
	}
	return 0;
}

/* One LZ4 frame of n bytes into exactly usize bytes at u. */
static int lz4_decompress(hako_mcap_reader_t *r, uint64_t offset, uint8_t *u, size_t usize,
                          const uint8_t *p, size_t n)
{
	LZ4F_dctx *d;
	if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION))) {
		return HAKO_ENOMEM;
	}
	size_t in = 0, out = 0, hint = 1;
	while (hint != 0) {
		size_t dn = usize - out, sn = n - in;
		hint = LZ4F_decompress(d, u + out, &dn, p + in, &sn, NULL);
		if (LZ4F_isError(hint)) {
			LZ4F_freeDecompressionContext(d);
			return fail(r, HAKO_EPROTO, offset, "Chunk: lz4: %s",
			            LZ4F_getErrorName(hint));
		}
		out += dn;
		in += sn;
		if (dn == 0 && sn == 0) {
			break; /* no progress: the frame wants more than there is */
		}
	}
	LZ4F_freeDecompressionContext(d);
	if (hint != 0 || out != usize) {
		return fail(r, HAKO_EPROTO, offset,
		            "Chunk: lz4: the frame %s (%zu bytes out, uncompressed_size %zu)",
		            hint != 0 ? "is cut off or larger than uncompressed_size" : "is short",
		            out, usize);
	}
	return 0;
}

/* The records of block b, uncompressed and checked, into l. */
static int load_records(hako_mcap_reader_t *r, const block_t *b, loaded_t *l)
{
	if (b->len > MAX_CHUNK || b->offset > r->size || b->len > r->size - b->offset) {
		return fail(r, HAKO_EPROTO, b->offset, "%s of %llu bytes does not fit in the file",
		            b->chunk ? "Chunk" : "Message", (unsigned long long)b->len);
	}
	uint8_t *raw = malloc(b->len);
	if (raw == NULL) {
		return HAKO_ENOMEM;
	}
	int rc = read_at(r, raw, b->len, b->offset);
	if (rc == 0 && (raw[0] != (b->chunk ? HAKO_MCAP_OP_CHUNK : HAKO_MCAP_OP_MESSAGE) ||
	                mcap_get_u64(raw + 1) != b->len - RECORD_HEADER)) {
		rc = fail(r, HAKO_EPROTO, b->offset, "no %s record of %llu bytes here",
		          b->chunk ? "Chunk" : "Message", (unsigned long long)b->len);
	}
	if (rc || !b->chunk) {
		if (rc) {
			free(raw);
		} else {
			l->buf = raw;
			l->len = b->len;
		}
		return rc;
	}
	cur_t c = {raw + RECORD_HEADER, raw + b->len, b->offset, raw, 0};
	cur_u64(&c);
	cur_u64(&c);
	uint64_t usize = cur_u64(&c);
	uint32_t crc = cur_u32(&c);
	char *comp = cur_string(&c);
	uint64_t clen = cur_u64(&c);
	if (c.bad || comp == NULL || clen > (uint64_t)(c.end - c.p)) {
		rc = fail(r, HAKO_EPROTO, b->offset, "Chunk record: a field runs past its end");
	} else if (usize > MAX_CHUNK) {
		rc = fail(r, HAKO_EPROTO, b->offset,
		          "Chunk of %llu bytes uncompressed (more than %u)",
		          (unsigned long long)usize, MAX_CHUNK);
	} else if (strcmp(comp, "") == 0 && clen != usize) {
		rc = fail(r, HAKO_EPROTO, b->offset,
		          "uncompressed Chunk holds %llu bytes, says it has %llu",
		          (unsigned long long)clen, (unsigned long long)usize);
	} else if (strcmp(comp, "") != 0 && strcmp(comp, "zstd") != 0 && strcmp(comp, "lz4") != 0) {
		rc = fail(r, HAKO_ENOTSUP, b->offset,
		          "Chunk compressed with \"%.32s\": only zstd, lz4 and none are supported",
		          comp);
	}
	uint8_t *u = NULL;
	if (rc == 0) {
		u = malloc(usize ? usize : 1);
		if (u == NULL) {
			rc = HAKO_ENOMEM;
		} else if (strcmp(comp, "") == 0) {
			memcpy(u, c.p, usize);
		} else if (strcmp(comp, "lz4") == 0) {
			rc = lz4_decompress(r, b->offset, u, (size_t)usize, c.p, (size_t)clen);
		} else {
			if (r->zstd == NULL && (r->zstd = ZSTD_createDCtx()) == NULL) {
				free(comp);
				free(raw);
				free(u);
				return HAKO_ENOMEM;
			}
			size_t z = ZSTD_decompressDCtx(r->zstd, u, usize, c.p, clen);
			if (ZSTD_isError(z) || z != usize) {
				rc = fail(r, HAKO_EPROTO, b->offset, "Chunk: zstd: %s",
				          ZSTD_isError(z) ? ZSTD_getErrorName(z)
				                          : "fewer bytes than uncompressed_size");
			}
		}
	}
	if (rc == 0 && crc != 0) {
		uint32_t got = hako_mcap_crc32(0, u, usize);
		if (got != crc) {
			rc = fail(r, HAKO_EPROTO, b->offset,
			          "Chunk CRC mismatch (computed 0x%08x, the chunk says 0x%08x)",
			          got, crc);
		}
	}
	free(comp);
	free(raw);
	if (rc) {
		free(u);
		return rc;
	}
	l->buf = u;
	l->len = usize;
	return 0;
}

/* Block seq[k] read, its records walked (schemas and channels in it registered, messages
 * indexed) and, in log-time order, its messages sorted. */
static int load_block(hako_mcap_reader_t *r, size_t k, loaded_t *l)
{
	const block_t *b = &r->blocks[r->seq[k]];
	memset(l, 0, sizeof(*l));
	l->block = k;
	l->offset = b->offset;
	int rc = load_records(r, b, l);
	size_t cap = 0, pos = 0;
	/* Positions are reported as the chunk's offset plus the position in its records. */
	while (rc == 0 && pos < l->len) {
		if (l->len - pos < RECORD_HEADER) {
			rc = fail(r, HAKO_EPROTO, b->offset,
			          "record header cut off at %zu of the chunk's records", pos);
			break;
		}
		uint8_t op = l->buf[pos];
		uint64_t len = mcap_get_u64(l->buf + pos + 1);
		if (len > l->len - pos - RECORD_HEADER) {
			rc = fail(r, HAKO_EPROTO, b->offset,
			          "%s record at %zu of the chunk's records runs past their end",
			          op_name(op), pos);
			break;
		}
		const uint8_t *body = l->buf + pos + RECORD_HEADER;
		if (op == HAKO_MCAP_OP_MESSAGE) {
			uint16_t ch = len >= 2 ? mcap_get_u16(body) : 0;
			if (len < MESSAGE_PREFIX || r->channel_at[ch] == 0) {
				rc = fail(r, HAKO_EPROTO, b->offset,
				          len < MESSAGE_PREFIX ? "Message record at %zu of the "
				                                 "chunk's records is too short"
				                               : "Message at %zu of the chunk's "
				                                 "records on an unknown channel",
				          pos);
				break;
			}
			if (l->n == cap) {
				cap = cap ? cap * 2 : 256;
				entry_t *e = realloc(l->e, cap * sizeof(*e));
				if (e == NULL) {
					rc = HAKO_ENOMEM;
					break;
				}
				l->e = e;
			}
			l->e[l->n++] = (entry_t){mcap_get_u64(body + 6), pos};
		} else if (op == HAKO_MCAP_OP_SCHEMA) {
			rc = add_schema(r, body, (size_t)len, b->offset);
		} else if (op == HAKO_MCAP_OP_CHANNEL) {
			rc = add_channel(r, body, (size_t)len, b->offset);
		}
		pos += RECORD_HEADER + (size_t)len;
	}
	if (rc == 0 && r->order == HAKO_MCAP_ORDER_LOG_TIME && l->n > 1) {
		qsort(l->e, l->n, sizeof(*l->e), cmp_entry);
	}
	if (rc) {
		unload(l);
		memset(l, 0, sizeof(*l));
	}
	return rc;
}

static void fill(const hako_mcap_reader_t *r, const loaded_t *l, hako_mcap_message_t *m)
{
	const entry_t *e = &l->e[l->pos];
	const uint8_t *rec = l->buf + e->off;
	uint64_t len = mcap_get_u64(rec + 1);
	const uint8_t *body = rec + RECORD_HEADER;
	m->channel = &r->channels[r->channel_at[mcap_get_u16(body)] - 1]->c;
	m->sequence = mcap_get_u32(body + 2);
	m->log_time = mcap_get_u64(body + 6);
	m->publish_time = mcap_get_u64(body + 14);
	m->data = body + MESSAGE_PREFIX;
	m->len = (size_t)(len - MESSAGE_PREFIX);
	m->chunk_offset = l->offset;
}

static int open_next(hako_mcap_reader_t *r)
{
	if (r->nopen == r->open_cap) {
		size_t cap = r->open_cap ? r->open_cap * 2 : 4;
		loaded_t *o = realloc(r->open, cap * sizeof(*o));
		if (o == NULL) {
			return HAKO_ENOMEM;
		}
		r->open = o;
		r->open_cap = cap;
	}
	size_t k = r->next++; /* consumed even when it fails: the next call goes on after it */
	int rc = load_block(r, k, &r->open[r->nopen]);
	if (rc == 0) {
		r->nopen++;
	}
	return rc;
}

static void drop_open(hako_mcap_reader_t *r, size_t i)
{
	unload(&r->open[i]);
	memmove(&r->open[i], &r->open[i + 1], (r->nopen - i - 1) * sizeof(loaded_t));
	r->nopen--;
}

int hako_mcap_reader_next(hako_mcap_reader_t *r, hako_mcap_message_t *m)
{
	if (r == NULL || m == NULL) {
		return HAKO_EINVAL;
	}
	/* Drop what the previous call finished (its data stayed valid until now). */
	for (size_t i = 0; i < r->nopen;) {
		if (r->open[i].pos >= r->open[i].n) {
			drop_open(r, i);
		} else {
			i++;
		}
	}
	for (;;) {
		if (r->order == HAKO_MCAP_ORDER_FILE) {
			if (r->nopen == 0) {
				if (r->next >= r->nblocks) {
					return 0;
				}
				int rc = open_next(r);
				if (rc) {
					return rc;
				}
				continue;
			}
			loaded_t *l = &r->open[0];
			if (l->pos >= l->n) {
				drop_open(r, 0);
				continue;
			}
			fill(r, l, m);
			l->pos++;
			return 1;
		}
		/* Log time: every block that may hold a message before the earliest one loaded
		 * is loaded first. */
		size_t best = r->nopen;
		for (size_t i = 0; i < r->nopen; i++) {
			const loaded_t *l = &r->open[i];
			if (l->pos < l->n &&
			    (best == r->nopen ||
			     l->e[l->pos].log_time < r->open[best].e[r->open[best].pos].log_time ||
			     (l->e[l->pos].log_time ==
			          r->open[best].e[r->open[best].pos].log_time &&
			      l->block < r->open[best].block))) {
				best = i;
			}
		}
		if (r->next < r->nblocks &&
		    (best == r->nopen || r->blocks[r->seq[r->next]].start <=
		                             r->open[best].e[r->open[best].pos].log_time)) {
			int rc = open_next(r);
			if (rc) {
				return rc;
			}
			continue;
		}
		if (best == r->nopen) {
			return 0;
		}
		loaded_t *l = &r->open[best];
		fill(r, l, m);
		l->pos++;
		return 1;
	}
}
