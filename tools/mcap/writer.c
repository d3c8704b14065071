/* The MCAP writer: Header; Schema and Channel records as they are added (outside the chunks, so
 * a file cut off later still has them before every chunk that uses them); messages into chunks,
 * each followed by its MessageIndex records; on close DataEnd, the summary (Schemas, Channels,
 * Statistics, ChunkIndexes), SummaryOffsets, Footer and the magic. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <lz4frame.h>
#include <zstd.h>

#include "hako/error.h"
#include "mcap.h"
#include "mcap_le.h"

#define OUT_CAP            (256u * 1024u)
#define DEFAULT_CHUNK_SIZE (1024u * 1024u)
#define MESSAGE_PREFIX     22u /* channel_id, sequence, log_time, publish_time */
#define RECORD_HEADER      9u  /* opcode, length */

typedef struct buf {
	uint8_t *p;
	size_t len, cap;
} buf_t;

/* The (log_time, offset) pairs of one channel in the current chunk. */
typedef struct chan_index {
	uint64_t *pairs;
	size_t n, cap;
	uint64_t last_time;
	int unsorted;
} chan_index_t;

struct hako_mcap_writer {
	int fd;
	int error; /* the first error: every later call returns it */
	char errmsg[256];
	hako_mcap_writer_opts_t opts;
	const char *compression_name;

	buf_t out;       /* bytes not yet handed to the kernel */
	uint64_t offset; /* file offset of the next byte emitted */
	uint32_t crc;    /* of the data section, then of the summary */

	buf_t chunk; /* the records of the current chunk, uncompressed */
	uint64_t chunk_start, chunk_end, chunk_messages;
	buf_t zbuf;
	ZSTD_CCtx *cctx;
	LZ4F_cctx *lz4;

	chan_index_t *index; /* per channel */
	uint16_t *touched;   /* channels with messages in the current chunk */
	size_t ntouched;

	buf_t schemas, channels, chunk_indexes; /* serialized records for the summary */
	buf_t metadata_indexes;
	uint32_t nmetadata;
	uint16_t nschemas;
	uint32_t nchannels;
	uint64_t *channel_counts;
	size_t channel_cap;

	uint64_t messages, chunks, start_time, end_time, bytes_uncompressed;
};

static int fail(hako_mcap_writer_t *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(hako_mcap_writer_t *w, int code, const char *fmt, ...)
{
	if (w->error == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->errmsg, sizeof(w->errmsg), fmt, ap);
		va_end(ap);
		w->error = code;
	}
	return w->error;
}

static int reserve(hako_mcap_writer_t *w, buf_t *b, size_t more)
{
	if (b->len + more <= b->cap) {
		return 0;
	}
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more) {
		cap *= 2;
	}
	uint8_t *p = realloc(b->p, cap);
	if (p == NULL) {
		return fail(w, HAKO_ENOMEM, "out of memory (%zu bytes)", cap);
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

static int write_all(hako_mcap_writer_t *w, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(w->fd, p, n);
		if (k < 0) {
			if (errno == EINTR) {
				continue;
			}
			int e = errno;
			return fail(w, e == ENOSPC ? HAKO_ENOSPC : HAKO_EIO, "write: %s",
			            strerror(e));
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int out_flush(hako_mcap_writer_t *w)
{
	int rc = w->error ? w->error : write_all(w, w->out.p, w->out.len);
	w->out.len = 0;
	return rc;
}

/* Every byte of the file goes through here: counted, CRC'd, buffered. */
static int emit(hako_mcap_writer_t *w, const void *p, size_t n)
{
	if (w->error) {
		return w->error;
	}
	w->crc = hako_mcap_crc32(w->crc, p, n);
	w->offset += n;
	if (w->out.len + n > w->out.cap) {
		int rc = out_flush(w);
		if (rc) {
			return rc;
		}
		if (n >= w->out.cap / 2) {
			return write_all(w, p, n);
		}
	}
	memcpy(w->out.p + w->out.len, p, n);
	w->out.len += n;
	return 0;
}

static int emit_record_header(hako_mcap_writer_t *w, uint8_t op, uint64_t len)
{
	uint8_t h[RECORD_HEADER];
	h[0] = op;
	mcap_put_u64(h + 1, len);
	return emit(w, h, sizeof(h));
}

static void put_string(buf_t *b, const char *s)
{
	size_t n = strlen(s);
	mcap_put_u32(b->p + b->len, (uint32_t)n);
	memcpy(b->p + b->len + 4, s, n);
	b->len += 4 + n;
}

static int open_error(char *errbuf, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int open_error(char *errbuf, size_t errlen, int code, const char *fmt, ...)
{
	if (errbuf && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

int hako_mcap_writer_open(hako_mcap_writer_t **out, const char *path,
                          const hako_mcap_writer_opts_t *opts, char *errbuf, size_t errlen)
{
	if (out == NULL || path == NULL) {
		return open_error(errbuf, errlen, HAKO_EINVAL, "no path");
	}
	if (errbuf && errlen) {
		errbuf[0] = '\0';
	}
	*out = NULL;
	hako_mcap_writer_t *w = calloc(1, sizeof(*w));
	if (w == NULL) {
		return HAKO_ENOMEM;
	}
	if (opts) {
		w->opts = *opts;
	} else {
		w->opts.compression = HAKO_MCAP_COMPRESS_ZSTD;
	}
	if (w->opts.chunk_size == 0) {
		w->opts.chunk_size = DEFAULT_CHUNK_SIZE;
	}
	if (w->opts.zstd_level == 0) {
		w->opts.zstd_level = 1;
	}
	if (w->opts.compression == HAKO_MCAP_COMPRESS_ZSTD) {
		w->compression_name = "zstd";
		w->cctx = ZSTD_createCCtx();
		if (w->cctx == NULL) {
			free(w);
			return HAKO_ENOMEM;
		}
		ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, w->opts.zstd_level);
		ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 0);
	} else if (w->opts.compression == HAKO_MCAP_COMPRESS_LZ4) {
		w->compression_name = "lz4";
		if (LZ4F_isError(LZ4F_createCompressionContext(&w->lz4, LZ4F_VERSION))) {
			free(w);
			return HAKO_ENOMEM;
		}
	} else if (w->opts.compression == HAKO_MCAP_COMPRESS_NONE) {
		w->compression_name = "";
	} else {
		free(w);
		return open_error(errbuf, errlen, HAKO_EINVAL, "%s: unknown compression %d", path,
		                  (int)opts->compression);
	}
	w->out.p = malloc(OUT_CAP);
	w->out.cap = OUT_CAP;
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->out.p == NULL || w->fd < 0) {
		int e = errno;
		int rc = w->out.p == NULL ? HAKO_ENOMEM : (e == ENOENT ? HAKO_ENOENT : HAKO_EIO);
		open_error(errbuf, errlen, rc, "%s: %s", path,
		           w->out.p == NULL ? "out of memory" : strerror(e));
		if (w->fd >= 0) {
			close(w->fd);
		}
		free(w->out.p);
		ZSTD_freeCCtx(w->cctx);
		LZ4F_freeCompressionContext(w->lz4);
		free(w);
		return rc;
	}
	const char *profile = w->opts.profile ? w->opts.profile : "";
	const char *library = w->opts.library ? w->opts.library : "hako";
	buf_t hdr = {0};
	int rc = reserve(w, &hdr, 8 + strlen(profile) + strlen(library));
	if (rc == 0) {
		put_string(&hdr, profile);
		put_string(&hdr, library);
		rc = emit(w, HAKO_MCAP_MAGIC, HAKO_MCAP_MAGIC_LEN);
		rc = rc ? rc : emit_record_header(w, HAKO_MCAP_OP_HEADER, hdr.len);
		rc = rc ? rc : emit(w, hdr.p, hdr.len);
	}
	free(hdr.p);
	if (rc) {
		open_error(errbuf, errlen, rc, "%s: %s", path, w->errmsg);
		hako_mcap_writer_close(w);
		return rc;
	}
	*out = w;
	return 0;
}

int hako_mcap_writer_add_schema(hako_mcap_writer_t *w, const char *name, const char *encoding,
                                const void *data, size_t len, uint16_t *id)
{
	if (w == NULL || name == NULL || encoding == NULL || (data == NULL && len > 0) ||
	    len > UINT32_MAX) {
		return HAKO_EINVAL;
	}
	if (w->error) {
		return w->error;
	}
	if (w->nschemas == UINT16_MAX) {
		return HAKO_ENOSPC;
	}
	uint16_t sid = (uint16_t)(w->nschemas + 1); /* 0 means "no schema" */
	size_t body = 2 + 4 + strlen(name) + 4 + strlen(encoding) + 4 + len;
	size_t at = w->schemas.len;
	int rc = reserve(w, &w->schemas, RECORD_HEADER + body);
	if (rc) {
		return rc;
	}
	uint8_t *p = w->schemas.p + at;
	p[0] = HAKO_MCAP_OP_SCHEMA;
	mcap_put_u64(p + 1, body);
	mcap_put_u16(p + RECORD_HEADER, sid);
	w->schemas.len += RECORD_HEADER + 2;
	put_string(&w->schemas, name);
	put_string(&w->schemas, encoding);
	mcap_put_u32(w->schemas.p + w->schemas.len, (uint32_t)len);
	if (len) {
		memcpy(w->schemas.p + w->schemas.len + 4, data, len);
	}
	w->schemas.len += 4 + len;
	rc = emit(w, w->schemas.p + at, RECORD_HEADER + body);
	if (rc) {
		return rc;
	}
	w->nschemas = sid;
	if (id) {
		*id = sid;
	}
	return 0;
}

int hako_mcap_writer_add_channel(hako_mcap_writer_t *w, uint16_t schema_id, const char *topic,
                                 const char *message_encoding, const char *const *metadata,
                                 uint16_t *id)
{
	if (w == NULL || topic == NULL || message_encoding == NULL || schema_id > w->nschemas) {
		return HAKO_EINVAL;
	}
	if (w->error) {
		return w->error;
	}
	if (w->nchannels > UINT16_MAX) {
		return HAKO_ENOSPC;
	}
	size_t meta = 0, nmeta = 0;
	if (metadata) {
		for (; metadata[nmeta]; nmeta++) {
			meta += 4 + strlen(metadata[nmeta]);
		}
		if (nmeta % 2) {
			return HAKO_EINVAL;
		}
	}
	uint16_t cid = (uint16_t)w->nchannels;
	if (w->nchannels == w->channel_cap) {
		size_t cap = w->channel_cap ? w->channel_cap * 2 : 16;
		chan_index_t *ix = realloc(w->index, cap * sizeof(*ix));
		if (ix) {
			w->index = ix;
		}
		uint64_t *cc = realloc(w->channel_counts, cap * sizeof(*cc));
		if (cc) {
			w->channel_counts = cc;
		}
		uint16_t *t = realloc(w->touched, cap * sizeof(*t));
		if (t) {
			w->touched = t;
		}
		if (ix == NULL || cc == NULL || t == NULL) {
			return fail(w, HAKO_ENOMEM, "out of memory (channel table)");
		}
		w->channel_cap = cap;
	}
	size_t body = 2 + 2 + 4 + strlen(topic) + 4 + strlen(message_encoding) + 4 + meta;
	size_t at = w->channels.len;
	int rc = reserve(w, &w->channels, RECORD_HEADER + body);
	if (rc) {
		return rc;
	}
	uint8_t *p = w->channels.p + at;
	p[0] = HAKO_MCAP_OP_CHANNEL;
	mcap_put_u64(p + 1, body);
	mcap_put_u16(p + RECORD_HEADER, cid);
	mcap_put_u16(p + RECORD_HEADER + 2, schema_id);
	w->channels.len += RECORD_HEADER + 4;
	put_string(&w->channels, topic);
	put_string(&w->channels, message_encoding);
	mcap_put_u32(w->channels.p + w->channels.len, (uint32_t)meta);
	w->channels.len += 4;
	for (size_t i = 0; i < nmeta; i++) {
		put_string(&w->channels, metadata[i]);
	}
	rc = emit(w, w->channels.p + at, RECORD_HEADER + body);
	if (rc) {
		return rc;
	}
	memset(&w->index[cid], 0, sizeof(w->index[cid]));
	w->channel_counts[cid] = 0;
	w->nchannels++;
	if (id) {
		*id = cid;
	}
	return 0;
}

/* Stable: equal times keep their order, so a reader of the index sees file order among them. */
static void sort_pairs(uint64_t *p, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t t = p[2 * i], o = p[2 * i + 1];
		size_t j = i;
		while (j > 0 && p[2 * (j - 1)] > t) {
			p[2 * j] = p[2 * (j - 1)];
			p[2 * j + 1] = p[2 * (j - 1) + 1];
			j--;
		}
		p[2 * j] = t;
		p[2 * j + 1] = o;
	}
}

static int close_chunk(hako_mcap_writer_t *w)
{
	if (w->error) {
		return w->error;
	}
	if (w->chunk.len == 0) {
		return 0;
	}
	uint32_t crc = hako_mcap_crc32(0, w->chunk.p, w->chunk.len);
	const uint8_t *data = w->chunk.p;
	size_t clen = w->chunk.len;
	if (w->cctx) {
		int rc = reserve(w, &w->zbuf, ZSTD_compressBound(w->chunk.len));
		if (rc) {
			return rc;
		}
		size_t z =
		    ZSTD_compress2(w->cctx, w->zbuf.p, w->zbuf.cap, w->chunk.p, w->chunk.len);
		if (ZSTD_isError(z)) {
			return fail(w, HAKO_EIO, "zstd: %s", ZSTD_getErrorName(z));
		}
		data = w->zbuf.p;
		clen = z;
	} else if (w->lz4) {
		LZ4F_preferences_t prefs;
		memset(&prefs, 0, sizeof(prefs));
		prefs.frameInfo.contentSize = w->chunk.len;
		size_t cap = LZ4F_HEADER_SIZE_MAX + LZ4F_compressBound(w->chunk.len, &prefs);
		int rc = reserve(w, &w->zbuf, cap);
		if (rc) {
			return rc;
		}
		size_t n = LZ4F_compressBegin(w->lz4, w->zbuf.p, w->zbuf.cap, &prefs);
		size_t k = LZ4F_isError(n)
		               ? n
		               : LZ4F_compressUpdate(w->lz4, w->zbuf.p + n, w->zbuf.cap - n,
		                                     w->chunk.p, w->chunk.len, NULL);
		n += LZ4F_isError(k) ? 0 : k;
		size_t e = LZ4F_isError(k)
		               ? k
		               : LZ4F_compressEnd(w->lz4, w->zbuf.p + n, w->zbuf.cap - n, NULL);
		if (LZ4F_isError(e)) {
			return fail(w, HAKO_EIO, "lz4: %s", LZ4F_getErrorName(e));
		}
		data = w->zbuf.p;
		clen = n + e;
	}
	size_t cname = strlen(w->compression_name);
	uint8_t h[8 + 8 + 8 + 4 + 4 + 8 + 8];
	uint8_t *p = h;
	p = mcap_put_u64(p, w->chunk_start);
	p = mcap_put_u64(p, w->chunk_end);
	p = mcap_put_u64(p, w->chunk.len);
	p = mcap_put_u32(p, crc);
	p = mcap_put_u32(p, (uint32_t)cname);
	uint64_t chunk_offset = w->offset;
	int rc = emit_record_header(w, HAKO_MCAP_OP_CHUNK, (uint64_t)(p - h) + cname + 8 + clen);
	rc = rc ? rc : emit(w, h, (size_t)(p - h));
	rc = rc ? rc : emit(w, w->compression_name, cname);
	mcap_put_u64(h, clen);
	rc = rc ? rc : emit(w, h, 8);
	rc = rc ? rc : emit(w, data, clen);
	uint64_t chunk_length = w->offset - chunk_offset;

	/* ChunkIndex: the fixed fields, the message index offsets, the rest. */
	size_t ci_body = 8 * 4 + 4 + 10 * w->ntouched + 8 + 4 + cname + 8 + 8;
	size_t at = w->chunk_indexes.len;
	rc = rc ? rc : reserve(w, &w->chunk_indexes, RECORD_HEADER + ci_body);
	if (rc) {
		return rc;
	}
	uint8_t *ci = w->chunk_indexes.p + at;
	*ci++ = HAKO_MCAP_OP_CHUNK_INDEX;
	ci = mcap_put_u64(ci, ci_body);
	ci = mcap_put_u64(ci, w->chunk_start);
	ci = mcap_put_u64(ci, w->chunk_end);
	ci = mcap_put_u64(ci, chunk_offset);
	ci = mcap_put_u64(ci, chunk_length);
	ci = mcap_put_u32(ci, (uint32_t)(10 * w->ntouched));

	uint64_t index_start = w->offset;
	for (size_t i = 0; i < w->ntouched && rc == 0; i++) {
		uint16_t c = w->touched[i];
		chan_index_t *ix = &w->index[c];
		if (ix->unsorted) {
			sort_pairs(ix->pairs, ix->n);
		}
		ci = mcap_put_u16(ci, c);
		ci = mcap_put_u64(ci, w->offset);
		/* The whole record in zbuf (its chunk is out already): one emit, not one per pair.
		 */
		size_t body = 2 + 4 + 16 * ix->n;
		w->zbuf.len = 0;
		rc = reserve(w, &w->zbuf, RECORD_HEADER + body);
		if (rc) {
			break;
		}
		uint8_t *m = w->zbuf.p;
		*m++ = HAKO_MCAP_OP_MESSAGE_INDEX;
		m = mcap_put_u64(m, body);
		m = mcap_put_u16(m, c);
		m = mcap_put_u32(m, (uint32_t)(16 * ix->n));
		for (size_t k = 0; k < ix->n; k++) {
			m = mcap_put_u64(m, ix->pairs[2 * k]);
			m = mcap_put_u64(m, ix->pairs[2 * k + 1]);
		}
		rc = emit(w, w->zbuf.p, RECORD_HEADER + body);
		ix->n = 0;
		ix->unsorted = 0;
		ix->last_time = 0;
	}
	ci = mcap_put_u64(ci, w->offset - index_start);
	ci = mcap_put_u32(ci, (uint32_t)cname);
	memcpy(ci, w->compression_name, cname);
	ci += cname;
	ci = mcap_put_u64(ci, clen);
	mcap_put_u64(ci, w->chunk.len);
	w->chunk_indexes.len += RECORD_HEADER + ci_body;

	w->bytes_uncompressed += w->chunk.len;
	w->chunk.len = 0;
	w->chunk_messages = 0;
	w->ntouched = 0;
	w->chunks++;
	return rc;
}

int hako_mcap_writer_write(hako_mcap_writer_t *w, uint16_t channel_id, uint32_t sequence,
                           uint64_t log_time, uint64_t publish_time, const void *data, size_t len)
{
	if (w == NULL || channel_id >= w->nchannels || (data == NULL && len > 0)) {
		return HAKO_EINVAL;
	}
	if (w->error) {
		return w->error;
	}
	size_t rec = RECORD_HEADER + MESSAGE_PREFIX + len;
	int rc = reserve(w, &w->chunk, rec);
	if (rc) {
		return rc;
	}
	chan_index_t *ix = &w->index[channel_id];
	if (ix->n == ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 256;
		uint64_t *p = realloc(ix->pairs, cap * 2 * sizeof(uint64_t));
		if (p == NULL) {
			return fail(w, HAKO_ENOMEM, "out of memory (message index)");
		}
		ix->pairs = p;
		ix->cap = cap;
	}
	uint64_t at = w->chunk.len;
	uint8_t *p = w->chunk.p + at;
	*p++ = HAKO_MCAP_OP_MESSAGE;
	p = mcap_put_u64(p, MESSAGE_PREFIX + len);
	p = mcap_put_u16(p, channel_id);
	p = mcap_put_u32(p, sequence);
	p = mcap_put_u64(p, log_time);
	p = mcap_put_u64(p, publish_time);
	if (len) {
		memcpy(p, data, len);
	}
	w->chunk.len += rec;

	if (ix->n == 0) {
		w->touched[w->ntouched++] = channel_id;
	} else if (log_time < ix->last_time) {
		ix->unsorted = 1;
	}
	ix->pairs[2 * ix->n] = log_time;
	ix->pairs[2 * ix->n + 1] = at;
	ix->n++;
	ix->last_time = log_time;

	if (w->chunk_messages == 0 || log_time < w->chunk_start) {
		w->chunk_start = log_time;
	}
	if (w->chunk_messages == 0 || log_time > w->chunk_end) {
		w->chunk_end = log_time;
	}
	if (w->messages == 0 || log_time < w->start_time) {
		w->start_time = log_time;
	}
	if (w->messages == 0 || log_time > w->end_time) {
		w->end_time = log_time;
	}
	w->chunk_messages++;
	w->messages++;
	w->channel_counts[channel_id]++;
	if (w->chunk.len >= w->opts.chunk_size) {
		return close_chunk(w);
	}
	return 0;
}

int hako_mcap_writer_flush(hako_mcap_writer_t *w)
{
	if (w == NULL) {
		return HAKO_EINVAL;
	}
	int rc = close_chunk(w);
	return rc ? rc : out_flush(w);
}

int hako_mcap_writer_add_metadata(hako_mcap_writer_t *w, const char *name, const char *const *pairs)
{
	if (w == NULL || name == NULL) {
		return HAKO_EINVAL;
	}
	if (w->error) {
		return w->error;
	}
	size_t map = 0, n = 0;
	for (; pairs && pairs[n]; n++) {
		map += 4 + strlen(pairs[n]);
	}
	if (n % 2) {
		return HAKO_EINVAL;
	}
	/* A Metadata record lives outside the chunks. */
	int rc = close_chunk(w);
	if (rc) {
		return rc;
	}
	size_t body = 4 + strlen(name) + 4 + map;
	buf_t rec = {0};
	rc = reserve(w, &rec, RECORD_HEADER + body);
	if (rc) {
		return rc;
	}
	rec.p[0] = HAKO_MCAP_OP_METADATA;
	mcap_put_u64(rec.p + 1, body);
	rec.len = RECORD_HEADER;
	put_string(&rec, name);
	mcap_put_u32(rec.p + rec.len, (uint32_t)map);
	rec.len += 4;
	for (size_t i = 0; i < n; i++) {
		put_string(&rec, pairs[i]);
	}
	uint64_t at = w->offset;
	rc = emit(w, rec.p, rec.len);
	free(rec.p);
	if (rc) {
		return rc;
	}
	size_t ibody = 8 + 8 + 4 + strlen(name);
	size_t ix = w->metadata_indexes.len;
	rc = reserve(w, &w->metadata_indexes, RECORD_HEADER + ibody);
	if (rc) {
		return rc;
	}
	uint8_t *p = w->metadata_indexes.p + ix;
	p[0] = HAKO_MCAP_OP_METADATA_INDEX;
	mcap_put_u64(p + 1, ibody);
	mcap_put_u64(p + RECORD_HEADER, at);
	mcap_put_u64(p + RECORD_HEADER + 8, RECORD_HEADER + body);
	w->metadata_indexes.len += RECORD_HEADER + 16;
	put_string(&w->metadata_indexes, name);
	w->nmetadata++;
	return 0;
}

static int write_summary(hako_mcap_writer_t *w)
{
	int rc = close_chunk(w);
	if (rc) {
		return rc;
	}
	uint8_t b[32];
	mcap_put_u32(b, w->crc); /* the data section: every byte before DataEnd */
	rc = emit_record_header(w, HAKO_MCAP_OP_DATA_END, 4);
	rc = rc ? rc : emit(w, b, 4);
	if (rc) {
		return rc;
	}

	uint64_t summary_start = w->offset;
	w->crc = 0;
	struct {
		uint8_t op;
		uint64_t start, len;
	} groups[5];
	int ngroups = 0;
	const buf_t *lists[] = {&w->schemas, &w->channels};
	const uint8_t ops[] = {HAKO_MCAP_OP_SCHEMA, HAKO_MCAP_OP_CHANNEL};
	for (int i = 0; i < 2; i++) {
		if (lists[i]->len) {
			groups[ngroups].op = ops[i];
			groups[ngroups].start = w->offset;
			rc = rc ? rc : emit(w, lists[i]->p, lists[i]->len);
			groups[ngroups++].len = lists[i]->len;
		}
	}

	buf_t st = {0};
	size_t nonzero = 0;
	for (uint32_t c = 0; c < w->nchannels; c++) {
		nonzero += w->channel_counts[c] > 0;
	}
	rc = rc ? rc : reserve(w, &st, 8 + 2 + 4 * 4 + 8 + 8 + 4 + 10 * nonzero);
	if (rc == 0) {
		uint8_t *p = st.p;
		p = mcap_put_u64(p, w->messages);
		p = mcap_put_u16(p, w->nschemas);
		p = mcap_put_u32(p, w->nchannels);
		p = mcap_put_u32(p, 0); /* attachments */
		p = mcap_put_u32(p, w->nmetadata);
		p = mcap_put_u32(p, (uint32_t)w->chunks);
		p = mcap_put_u64(p, w->start_time);
		p = mcap_put_u64(p, w->end_time);
		p = mcap_put_u32(p, (uint32_t)(10 * nonzero));
		for (uint32_t c = 0; c < w->nchannels; c++) {
			if (w->channel_counts[c]) {
				p = mcap_put_u16(p, (uint16_t)c);
				p = mcap_put_u64(p, w->channel_counts[c]);
			}
		}
		st.len = (size_t)(p - st.p);
		groups[ngroups].op = HAKO_MCAP_OP_STATISTICS;
		groups[ngroups].start = w->offset;
		rc = emit_record_header(w, HAKO_MCAP_OP_STATISTICS, st.len);
		rc = rc ? rc : emit(w, st.p, st.len);
		groups[ngroups++].len = RECORD_HEADER + st.len;
	}
	free(st.p);
	if (rc == 0 && w->chunk_indexes.len) {
		groups[ngroups].op = HAKO_MCAP_OP_CHUNK_INDEX;
		groups[ngroups].start = w->offset;
		rc = emit(w, w->chunk_indexes.p, w->chunk_indexes.len);
		groups[ngroups++].len = w->chunk_indexes.len;
	}

	if (rc == 0 && w->metadata_indexes.len) {
		groups[ngroups].op = HAKO_MCAP_OP_METADATA_INDEX;
		groups[ngroups].start = w->offset;
		rc = emit(w, w->metadata_indexes.p, w->metadata_indexes.len);
		groups[ngroups++].len = w->metadata_indexes.len;
	}

	uint64_t summary_offset_start = w->offset;
	for (int i = 0; i < ngroups && rc == 0; i++) {
		b[0] = groups[i].op;
		mcap_put_u64(b + 1, groups[i].start);
		mcap_put_u64(b + 9, groups[i].len);
		rc = emit_record_header(w, HAKO_MCAP_OP_SUMMARY_OFFSET, 17);
		rc = rc ? rc : emit(w, b, 17);
	}
	mcap_put_u64(b, summary_start);
	mcap_put_u64(b + 8, summary_offset_start);
	rc = rc ? rc : emit_record_header(w, HAKO_MCAP_OP_FOOTER, 20);
	rc = rc ? rc : emit(w, b, 16);
	mcap_put_u32(b, w->crc); /* the summary up to here, the footer's own fields included */
	rc = rc ? rc : emit(w, b, 4);
	rc = rc ? rc : emit(w, HAKO_MCAP_MAGIC, HAKO_MCAP_MAGIC_LEN);
	return rc ? rc : out_flush(w);
}

int hako_mcap_writer_close(hako_mcap_writer_t *w)
{
	if (w == NULL) {
		return HAKO_EINVAL;
	}
	int rc = w->fd >= 0 ? write_summary(w) : w->error;
	if (rc == 0 && w->opts.fsync && fsync(w->fd) != 0) {
		rc = fail(w, HAKO_EIO, "fsync: %s", strerror(errno));
	}
	if (w->fd >= 0 && close(w->fd) != 0 && rc == 0) {
		rc = fail(w, HAKO_EIO, "close: %s", strerror(errno));
	}
	for (uint32_t c = 0; c < w->nchannels; c++) {
		free(w->index[c].pairs);
	}
	free(w->index);
	free(w->touched);
	free(w->channel_counts);
	free(w->out.p);
	free(w->chunk.p);
	free(w->zbuf.p);
	free(w->schemas.p);
	free(w->channels.p);
	free(w->chunk_indexes.p);
	free(w->metadata_indexes.p);
	ZSTD_freeCCtx(w->cctx);
	LZ4F_freeCompressionContext(w->lz4);
	free(w);
	return rc;
}

const char *hako_mcap_writer_error(const hako_mcap_writer_t *w)
{
	return w ? w->errmsg : "";
}

void hako_mcap_writer_get_stats(const hako_mcap_writer_t *w, hako_mcap_writer_stats_t *st)
{
	st->messages = w->messages;
	st->chunks = w->chunks;
	st->bytes_uncompressed = w->bytes_uncompressed + w->chunk.len;
	st->bytes_written = w->offset;
}
