/* hako_mcap (tools/mcap): what the writer writes, the reader reads back, in file and log-time
 * order; a file cut off anywhere reads up to its last whole chunk and says what it skipped; a
 * corrupt byte anywhere never gives a wrong message; write errors are reported. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/error.h"
#include "mcap_gen.h"
#include "mcap_le.h"

static char g_dir[256];
static gen_msg_t g_msg;

static const char *tmp_path(const char *name)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/%s", g_dir, name);
	return p;
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(*n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, *n, f), *n);
	fclose(f);
	return b;
}

static void spit(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static int same(const hako_mcap_message_t *m, const gen_msg_t *g)
{
	return m->channel->id == g->channel && m->sequence == g->sequence &&
	       m->log_time == g->log_time && m->publish_time == g->publish_time &&
	       m->len == g->len && memcmp(m->data, g->data, g->len) == 0;
}

/* Messages read in file order until the end or an error: how many equal the recording's first
 * ones (fails on the first that differs). *err: the return code that ended it. */
static size_t read_prefix(hako_mcap_reader_t *r, const gen_spec_t *s, int *err)
{
	hako_mcap_message_t m;
	size_t i = 0;
	int rc;
	assert_int_equal(hako_mcap_reader_rewind(r, HAKO_MCAP_ORDER_FILE), 0);
	while ((rc = hako_mcap_reader_next(r, &m)) == 1) {
		assert_true(i < s->messages);
		gen_message(s, i, &g_msg);
		if (!same(&m, &g_msg)) {
			fail_msg("message %zu differs from what was written", i);
		}
		i++;
	}
	*err = rc;
	return i;
}

static void check_tables(hako_mcap_reader_t *r)
{
	assert_string_equal(hako_mcap_reader_profile(r), "ros2");
	assert_int_equal(hako_mcap_reader_schema_count(r), GEN_SCHEMAS);
	for (size_t k = 0; k < GEN_SCHEMAS; k++) {
		const hako_mcap_schema_t *s = hako_mcap_reader_schema(r, k);
		const char *name;
		char data[128];
		size_t len;
		gen_schema(k, &name, data, sizeof(data), &len);
		assert_int_equal(s->id, k + 1);
		assert_string_equal(s->name, name);
		assert_string_equal(s->encoding, "ros2msg");
		assert_int_equal(s->len, len);
		assert_memory_equal(s->data, data, len);
	}
	assert_int_equal(hako_mcap_reader_channel_count(r), GEN_CHANNELS);
	for (size_t c = 0; c < GEN_CHANNELS; c++) {
		const hako_mcap_channel_t *ch = hako_mcap_reader_channel(r, c);
		char topic[64];
		snprintf(topic, sizeof(topic), "/robot%zu/pdu_%zu", c / 4, c);
		assert_int_equal(ch->id, c);
		assert_string_equal(ch->topic, topic);
		assert_string_equal(ch->message_encoding, "cdr");
		if (c == 11) {
			assert_int_equal(ch->schema_id, 0);
			assert_null(ch->schema);
		} else {
			assert_int_equal(ch->schema_id, c % GEN_SCHEMAS + 1);
			assert_ptr_equal(ch->schema, hako_mcap_reader_schema(r, c % GEN_SCHEMAS));
		}
		if (c % 2) {
			assert_string_equal(ch->metadata[0], "robot");
			assert_string_equal(ch->metadata[3], ch->topic + strlen(ch->topic) -
			                                         strlen(ch->metadata[3]));
			assert_null(ch->metadata[4]);
		} else {
			assert_null(ch->metadata[0]);
		}
	}
}

/* Write s, read it back whole in both orders. */
static void round_trip(const gen_spec_t *s)
{
	const char *path = tmp_path("rt.mcap");
	assert_int_equal(gen_write(path, s), 0);
	char err[512];
	hako_mcap_reader_t *r;
	assert_int_equal(hako_mcap_reader_open(&r, path, err, sizeof(err)), 0);
	assert_int_equal(hako_mcap_reader_indexed(r), 1);
	assert_int_equal(hako_mcap_reader_skip_count(r), 0);
	check_tables(r);
	int rc;
	assert_int_equal(read_prefix(r, s, &rc), s->messages);
	assert_int_equal(rc, 0);

	/* Log-time order: every message once, times never going back, equal times in file order. */
	assert_int_equal(hako_mcap_reader_rewind(r, HAKO_MCAP_ORDER_LOG_TIME), 0);
	uint8_t *seen = calloc(s->messages + 1, 1);
	hako_mcap_message_t m;
	size_t n = 0;
	uint64_t prev_t = 0;
	uint32_t prev_seq = 0;
	while ((rc = hako_mcap_reader_next(r, &m)) == 1) {
		assert_true(m.sequence < s->messages);
		assert_false(seen[m.sequence]);
		seen[m.sequence] = 1;
		gen_message(s, m.sequence, &g_msg);
		assert_true(same(&m, &g_msg));
		if (n > 0) {
			assert_true(m.log_time >= prev_t);
			if (m.log_time == prev_t) {
				assert_true(m.sequence > prev_seq);
			}
		}
		prev_t = m.log_time;
		prev_seq = m.sequence;
		n++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(n, s->messages);
	free(seen);
	hako_mcap_reader_close(r);
}

static void test_round_trip_zstd(void **state)
{
	(void)state;
	gen_spec_t s = {6000, 8192, HAKO_MCAP_COMPRESS_ZSTD, -1, 1};
	round_trip(&s);
}

static void test_round_trip_none(void **state)
{
	(void)state;
	gen_spec_t s = {3000, 4096, HAKO_MCAP_COMPRESS_NONE, -1, 1};
	round_trip(&s);
}

static void test_round_trip_lz4(void **state)
{
	(void)state;
	gen_spec_t s = {4000, 8192, HAKO_MCAP_COMPRESS_LZ4, 1000, 1};
	round_trip(&s);
}

static void test_round_trip_big_message(void **state)
{
	(void)state;
	gen_spec_t s = {300, 4096, HAKO_MCAP_COMPRESS_ZSTD, 150, 1};
	round_trip(&s);
	gen_spec_t u = {300, 4096, HAKO_MCAP_COMPRESS_NONE, 0, 1};
	round_trip(&u);
}

static void test_round_trip_one_chunk(void **state)
{
	(void)state;
	gen_spec_t s = {500, 0, HAKO_MCAP_COMPRESS_ZSTD, -1, 1}; /* default 1 MiB: one chunk */
	round_trip(&s);
}

static void test_empty(void **state)
{
	(void)state;
	gen_spec_t s = {0, 0, HAKO_MCAP_COMPRESS_ZSTD, -1, 1};
	round_trip(&s);

	/* Nothing at all: no schema, no channel, no message. */
	gen_spec_t bare = {0, 0, HAKO_MCAP_COMPRESS_NONE, -1, 0};
	const char *path = tmp_path("bare.mcap");
	assert_int_equal(gen_write(path, &bare), 0);
	hako_mcap_reader_t *r;
	assert_int_equal(hako_mcap_reader_open(&r, path, NULL, 0), 0);
	assert_int_equal(hako_mcap_reader_indexed(r), 1);
	assert_int_equal(hako_mcap_reader_channel_count(r), 0);
	hako_mcap_message_t m;
	assert_int_equal(hako_mcap_reader_next(r, &m), 0);
	hako_mcap_reader_close(r);
}

/* The file cut at every offset of its first 400 bytes and at 1500 more after: the reader
 * opens it (or says it is no MCAP file when the magic is cut), gives the first messages exactly
 * as written, never fewer than at a shorter cut, all of them once the cut is past the last
 * chunk, and notes what it skipped. */
static void test_truncated(void **state)
{
	(void)state;
	gen_spec_t s = {1000, 2048, HAKO_MCAP_COMPRESS_ZSTD, -1, 1};
	const char *full = tmp_path("full.mcap");
	assert_int_equal(gen_write(full, &s), 0);
	size_t size;
	uint8_t *b = slurp(full, &size);
	const char *path = tmp_path("cut.mcap");
	size_t prev = 0, cuts = 0, partial = 0;
	size_t step = size / 1500 + 1;
	for (size_t cut = 0; cut <= size; cut += cut < 400 ? 1 : step) {
		spit(path, b, cut);
		char err[512];
		hako_mcap_reader_t *r;
		int rc = hako_mcap_reader_open(&r, path, err, sizeof(err));
		if (cut < HAKO_MCAP_MAGIC_LEN) {
			assert_int_equal(rc, HAKO_EMAGIC);
			assert_non_null(strstr(err, "offset 0"));
			continue;
		}
		if (rc != 0) {
			fail_msg("cut at %zu: %s", cut, err);
		}
		assert_int_equal(hako_mcap_reader_indexed(r), 0);
		assert_true(hako_mcap_reader_skip_count(r) >= 1);
		const hako_mcap_skip_t *sk = hako_mcap_reader_skip(r, 0);
		assert_true(sk->offset + sk->bytes == cut);
		assert_true(sk->why[0] != '\0');
		int end;
		size_t n = read_prefix(r, &s, &end);
		if (end != 0) {
			fail_msg("cut at %zu: %s", cut, hako_mcap_reader_error(r));
		}
		assert_true(n >= prev);
		prev = n;
		partial += n > 0 && n < s.messages;
		cuts++;
		hako_mcap_reader_close(r);
	}
	assert_true(partial > 50);
	assert_true(cuts > 500);
	/* Cut anywhere in the summary: every chunk is whole, so every message is there. */
	spit(path, b, size - 40);
	hako_mcap_reader_t *r;
	assert_int_equal(hako_mcap_reader_open(&r, path, NULL, 0), 0);
	int end;
	assert_int_equal(read_prefix(r, &s, &end), s.messages);
	hako_mcap_reader_close(r);
	free(b);
}

/* One byte changed at each of many offsets (every offset of small files): the reader opens or
 * refuses with a message, and never gives a message other than the one written. */
static void corrupt_everywhere(const gen_spec_t *s, size_t step, size_t *errors)
{
	const char *orig = tmp_path("orig.mcap");
	assert_int_equal(gen_write(orig, s), 0);
	size_t size;
	uint8_t *b = slurp(orig, &size);
	const char *path = tmp_path("bad.mcap");
	for (size_t at = 0; at < size; at += step) {
		for (int v = 0; v < 2; v++) {
			uint8_t keep = b[at];
			b[at] = v ? (uint8_t)(keep ^ 0x01) : (uint8_t)(keep ^ 0xFF);
			spit(path, b, size);
			b[at] = keep;
			char err[512];
			hako_mcap_reader_t *r;
			int rc = hako_mcap_reader_open(&r, path, err, sizeof(err));
			if (rc != 0) {
				assert_non_null(strstr(err, "offset"));
				(*errors)++;
				continue;
			}
			int end;
			read_prefix(r, s, &end);
			if (end < 0) {
				assert_non_null(strstr(hako_mcap_reader_error(r), "offset"));
				(*errors)++;
			}
			/* and the log-time order survives it too */
			hako_mcap_reader_rewind(r, HAKO_MCAP_ORDER_LOG_TIME);
			hako_mcap_message_t m;
			while ((rc = hako_mcap_reader_next(r, &m)) == 1) {
				gen_message(s, m.sequence < s->messages ? m.sequence : 0, &g_msg);
				assert_true(same(&m, &g_msg));
			}
			hako_mcap_reader_close(r);
		}
	}
	free(b);
}

static void test_corrupt_bytes(void **state)
{
	(void)state;
	size_t errors = 0;
	gen_spec_t small = {40, 512, HAKO_MCAP_COMPRESS_NONE, -1, 1};
	corrupt_everywhere(&small, 1, &errors);
	assert_true(errors > 100);
	gen_spec_t z = {400, 2048, HAKO_MCAP_COMPRESS_ZSTD, -1, 1};
	corrupt_everywhere(&z, 29, &errors);
	gen_spec_t l = {400, 2048, HAKO_MCAP_COMPRESS_LZ4, -1, 1};
	corrupt_everywhere(&l, 31, &errors);
}

/* A byte of a message changed in an uncompressed chunk: the chunk's CRC says so, with the
 * chunk's offset; the reader goes on with the next chunk. */
static void test_crc_mismatch(void **state)
{
	(void)state;
	gen_spec_t s = {200, 1024, HAKO_MCAP_COMPRESS_NONE, -1, 1};
	const char *path = tmp_path("crc.mcap");
	assert_int_equal(gen_write(path, &s), 0);
	hako_mcap_reader_t *r;
	assert_int_equal(hako_mcap_reader_open(&r, path, NULL, 0), 0);
	hako_mcap_message_t m;
	assert_int_equal(hako_mcap_reader_next(r, &m), 1);
	uint64_t chunk = m.chunk_offset;
	hako_mcap_reader_close(r);

	size_t size;
	uint8_t *b = slurp(path, &size);
	/* record header, 3 x u64 + crc, compression "" (u32 0), records length u64 */
	size_t records = chunk + 9 + 8 + 8 + 8 + 4 + 4 + 8;
	assert_int_equal(b[records], HAKO_MCAP_OP_MESSAGE);
	assert_int_equal(b[records + 9 + 22], HAKO_MCAP_OP_MESSAGE); /* message 0 has no data */
	size_t data1 = records + 9 + 22 + 9 + 22; /* message 1's data: 37 bytes */
	b[data1 + 3] ^= 0x40;
	spit(path, b, size);
	free(b);

	assert_int_equal(hako_mcap_reader_open(&r, path, NULL, 0), 0);
	assert_int_equal(hako_mcap_reader_next(r, &m), HAKO_EPROTO);
	char want[64];
	snprintf(want, sizeof(want), "offset %llu: Chunk CRC mismatch", (unsigned long long)chunk);
	assert_non_null(strstr(hako_mcap_reader_error(r), want));
	assert_int_equal(hako_mcap_reader_next(r, &m), 1); /* the next chunk */
	assert_true(m.chunk_offset > chunk);
	hako_mcap_reader_close(r);
}

static void put_rec(uint8_t **p, uint8_t op, const void *body, size_t len)
{
	**p = op;
	mcap_put_u64(*p + 1, len);
	memcpy(*p + 9, body, len);
	*p += 9 + len;
}

/* A file another writer might make: no chunks, a record of an opcode we do not know, no
 * summary. Streamed, the unknown record skipped, the bare message read. */
static void test_unchunked_unknown_opcode(void **state)
{
	(void)state;
	uint8_t f[512], body[128], *p = f;
	memcpy(p, HAKO_MCAP_MAGIC, 8);
	p += 8;
	uint8_t hdr[] = {1, 0, 0, 0, 'x', 3, 0, 0, 0, 'l', 'i', 'b'};
	put_rec(&p, HAKO_MCAP_OP_HEADER, hdr, sizeof(hdr));
	put_rec(&p, 0x80, "future", 6);
	uint8_t ch[] = {7, 0, 0, 0, 2, 0, 0, 0, '/', 't', 3, 0, 0, 0, 'c', 'd', 'r', 0, 0, 0, 0};
	put_rec(&p, HAKO_MCAP_OP_CHANNEL, ch, sizeof(ch));
	uint8_t *q = body;
	q = mcap_put_u16(q, 7);
	q = mcap_put_u32(q, 42);
	q = mcap_put_u64(q, 1000);
	q = mcap_put_u64(q, 2000);
	memcpy(q, "hello", 5);
	put_rec(&p, HAKO_MCAP_OP_MESSAGE, body, 22 + 5);
	const char *path = tmp_path("bare_msgs.mcap");
	spit(path, f, (size_t)(p - f));

	hako_mcap_reader_t *r;
	char err[512];
	assert_int_equal(hako_mcap_reader_open(&r, path, err, sizeof(err)), 0);
	assert_int_equal(hako_mcap_reader_indexed(r), 0);
	assert_string_equal(hako_mcap_reader_profile(r), "x");
	assert_int_equal(hako_mcap_reader_skip_count(r), 1); /* the end: no summary */
	assert_non_null(strstr(hako_mcap_reader_skip(r, 0)->why, "not closed"));
	hako_mcap_message_t m;
	assert_int_equal(hako_mcap_reader_next(r, &m), 1);
	assert_string_equal(m.channel->topic, "/t");
	assert_int_equal(m.sequence, 42);
	assert_int_equal(m.log_time, 1000);
	assert_int_equal(m.len, 5);
	assert_memory_equal(m.data, "hello", 5);
	assert_int_equal(hako_mcap_reader_next(r, &m), 0);
	hako_mcap_reader_close(r);

	/* A message on a channel never declared: an error with the offset, not a crash. */
	body[0] = 9;
	p = f + 8 + 9 + sizeof(hdr);
	put_rec(&p, HAKO_MCAP_OP_MESSAGE, body, 22 + 5);
	spit(path, f, (size_t)(p - f));
	assert_int_equal(hako_mcap_reader_open(&r, path, NULL, 0), 0);
	assert_int_equal(hako_mcap_reader_next(r, &m), HAKO_EPROTO);
	assert_non_null(strstr(hako_mcap_reader_error(r), "unknown channel"));
	hako_mcap_reader_close(r);

	/* Not MCAP at all; and a first record that is no Header. */
	static const char zip[] = "PK\003\004 not an mcap file";
	spit(path, (const uint8_t *)zip, sizeof(zip) - 1);
	assert_int_equal(hako_mcap_reader_open(&r, path, err, sizeof(err)), HAKO_EMAGIC);
	assert_non_null(strstr(err, "not an MCAP file"));
	p = f + 8;
	put_rec(&p, HAKO_MCAP_OP_MESSAGE, body, 22);
	spit(path, f, (size_t)(p - f));
	assert_int_equal(hako_mcap_reader_open(&r, path, err, sizeof(err)), HAKO_EPROTO);
	assert_non_null(strstr(err, "offset 8: the first record is Message"));
}

/* The disk full: the writer says so (on a write or at the latest on close), never silently. */
static void test_write_error(void **state)
{
	(void)state;
	if (access("/dev/full", W_OK) != 0) {
		skip();
	}
	hako_mcap_writer_t *w;
	assert_int_equal(hako_mcap_writer_open(&w, "/dev/full", NULL, NULL, 0), 0);
	uint16_t ch;
	int rc = hako_mcap_writer_add_channel(w, 0, "/t", "cdr", NULL, &ch);
	uint8_t data[100] = {0};
	for (int i = 0; i < 100000 && rc == 0; i++) {
		rc = hako_mcap_writer_write(w, ch, (uint32_t)i, (uint64_t)i, 0, data, sizeof(data));
	}
	assert_int_equal(rc, HAKO_ENOSPC); /* 10 MB: the chunks went out and failed */
	assert_non_null(strstr(hako_mcap_writer_error(w), "No space"));
	assert_int_equal(hako_mcap_writer_write(w, ch, 0, 0, 0, data, 1), HAKO_ENOSPC);
	assert_int_equal(hako_mcap_writer_close(w), HAKO_ENOSPC);

	/* Nothing but a header and close: the error still comes out of close. */
	assert_int_equal(hako_mcap_writer_open(&w, "/dev/full", NULL, NULL, 0), 0);
	assert_int_equal(hako_mcap_writer_close(w), HAKO_ENOSPC);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	hako_mcap_writer_t *w;
	char err[256];
	assert_int_equal(
	    hako_mcap_writer_open(&w, "/nonexistent-dir/x.mcap", NULL, err, sizeof(err)),
	    HAKO_ENOENT);
	assert_string_equal(err, "/nonexistent-dir/x.mcap: No such file or directory");
	assert_int_equal(hako_mcap_writer_open(&w, tmp_path("args.mcap"), NULL, err, sizeof(err)),
	                 0);
	uint16_t id;
	assert_int_equal(hako_mcap_writer_add_channel(w, 5, "/t", "cdr", NULL, &id), HAKO_EINVAL);
	const char *odd[] = {"k", NULL};
	assert_int_equal(hako_mcap_writer_add_channel(w, 0, "/t", "cdr", odd, &id), HAKO_EINVAL);
	assert_int_equal(hako_mcap_writer_write(w, 0, 0, 0, 0, "x", 1), HAKO_EINVAL);
	assert_int_equal(hako_mcap_writer_close(w), 0);
	hako_mcap_reader_t *r;
	assert_int_equal(hako_mcap_reader_open(&r, tmp_path("nonexistent"), err, sizeof(err)),
	                 HAKO_ENOENT);
}

/* One bit at a time: the definition the fast paths must agree with. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
	uint32_t c = ~crc;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++) {
			c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		}
	}
	return ~c;
}

static void test_crc32(void **state)
{
	(void)state;
	/* The check value of CRC-32/ISO-HDLC (zlib's crc32). */
	assert_int_equal(hako_mcap_crc32(0, "123456789", 9), 0xCBF43926u);
	assert_int_equal(hako_mcap_crc32(hako_mcap_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
	/* Every length to 600 at every alignment to 16 (the folding path takes 64+ bytes in
	 * 16-byte steps, the tables the rest), and continued across a split. */
	static uint8_t b[4096 + 16];
	for (size_t i = 0; i < sizeof(b); i++) {
		b[i] = (uint8_t)(i * 167 + (i >> 5) * 13 + 1);
	}
	for (size_t off = 0; off < 16; off++) {
		for (size_t n = 0; n <= 600; n++) {
			uint32_t want = crc_bitwise(0, b + off, n);
			assert_int_equal(hako_mcap_crc32(0, b + off, n), want);
			size_t h = n / 3;
			assert_int_equal(
			    hako_mcap_crc32(hako_mcap_crc32(0, b + off, h), b + off + h, n - h),
			    want);
		}
	}
	assert_int_equal(hako_mcap_crc32(7, b, 4096), crc_bitwise(7, b, 4096));
}

int main(int argc, char **argv)
{
	/* Thousands of small files: in memory when the machine has it. */
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(g_dir, sizeof(g_dir), "%s/hako-test-mcap-%d", base, (int)getpid());
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "mkdir -p %s", g_dir);
	if (system(cmd) != 0) {
		return 1;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc32),
	    cmocka_unit_test(test_round_trip_zstd),
	    cmocka_unit_test(test_round_trip_none),
	    cmocka_unit_test(test_round_trip_lz4),
	    cmocka_unit_test(test_round_trip_big_message),
	    cmocka_unit_test(test_round_trip_one_chunk),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_corrupt_bytes),
	    cmocka_unit_test(test_crc_mismatch),
	    cmocka_unit_test(test_unchunked_unknown_opcode),
	    cmocka_unit_test(test_write_error),
	    cmocka_unit_test(test_bad_arguments),
	};
	/* "crc": that test alone (ctest runs it again with HAKO_MCAP_NO_CLMUL, the tables only). */
	const struct CMUnitTest crc_only[] = {cmocka_unit_test(test_crc32)};
	int failed = argc > 1 && strcmp(argv[1], "crc") == 0
	                 ? cmocka_run_group_tests(crc_only, NULL, NULL)
	                 : cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	if (system(cmd) != 0) {
		return 1;
	}
	return failed;
}
