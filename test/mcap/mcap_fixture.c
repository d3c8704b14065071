/* mcap_fixture OUTDIR: writes recordings with hako_mcap and, beside them, manifest.json saying
 * what each holds (every schema, channel and message, byte for byte), for check_mcap.mjs to
 * compare with what @mcap/core reads. Files:
 *   zstd.mcap   many channels, many zstd chunks, one message larger than the chunk size
 *   none.mcap   uncompressed chunks
 *   lz4.mcap    lz4 chunks (frame format), one message larger than the chunk size
 *   empty.mcap  schemas and channels, no message
 *   cut.mcap    zstd.mcap cut off in the middle of its last chunk (a crash while recording):
 *               the messages are those hako_mcap's reader finds in the whole chunks
 * mcap_fixture --dump FILE: what hako_mcap's reader finds in FILE, in file order, as one such
 * manifest entry (with "skips"), for write_mcap.mjs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcap_gen.h"

static void hex(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%02x", p[i]);
	}
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\') {
			fputc('\\', f);
			fputc(*s, f);
		} else if ((unsigned char)*s < 0x20) {
			fprintf(f, "\\u%04x", *s);
		} else {
			fputc(*s, f);
		}
	}
	fputc('"', f);
}

/* The file as our reader sees it, in file order: the manifest entry. */
static int manifest_entry(FILE *f, const char *dir, const char *name, int indexed, int first)
{
	char path[4096], err[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	hako_mcap_reader_t *r;
	if (hako_mcap_reader_open(&r, path, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	fprintf(f, "%s{\"file\":", first ? "" : ",\n");
	json_str(f, name);
	if (indexed < 0) {
		indexed = hako_mcap_reader_indexed(r);
		fprintf(f, ",\"skips\":[");
		for (size_t i = 0; i < hako_mcap_reader_skip_count(r); i++) {
			const hako_mcap_skip_t *sk = hako_mcap_reader_skip(r, i);
			fprintf(f, "%s{\"offset\":%llu,\"bytes\":%llu,\"why\":", i ? "," : "",
			        (unsigned long long)sk->offset, (unsigned long long)sk->bytes);
			json_str(f, sk->why);
			fputc('}', f);
		}
		fputc(']', f);
	}
	fprintf(f, ",\"indexed\":%s,\"profile\":", indexed ? "true" : "false");
	json_str(f, hako_mcap_reader_profile(r));
	fprintf(f, ",\n\"schemas\":[");
	for (size_t i = 0; i < hako_mcap_reader_schema_count(r); i++) {
		const hako_mcap_schema_t *s = hako_mcap_reader_schema(r, i);
		fprintf(f, "%s{\"id\":%u,\"name\":", i ? "," : "", s->id);
		json_str(f, s->name);
		fprintf(f, ",\"encoding\":");
		json_str(f, s->encoding);
		fprintf(f, ",\"data\":\"");
		hex(f, s->data, s->len);
		fprintf(f, "\"}");
	}
	fprintf(f, "],\n\"channels\":[");
	for (size_t i = 0; i < hako_mcap_reader_channel_count(r); i++) {
		const hako_mcap_channel_t *c = hako_mcap_reader_channel(r, i);
		fprintf(f, "%s{\"id\":%u,\"schema_id\":%u,\"topic\":", i ? "," : "", c->id,
		        c->schema_id);
		json_str(f, c->topic);
		fprintf(f, ",\"message_encoding\":");
		json_str(f, c->message_encoding);
		fprintf(f, ",\"metadata\":{");
		for (size_t k = 0; c->metadata[k]; k += 2) {
			fprintf(f, "%s", k ? "," : "");
			json_str(f, c->metadata[k]);
			fputc(':', f);
			json_str(f, c->metadata[k + 1]);
		}
		fprintf(f, "}}");
	}
	fprintf(f, "],\n\"messages\":[");
	hako_mcap_message_t m;
	int rc, n = 0;
	while ((rc = hako_mcap_reader_next(r, &m)) == 1) {
		fprintf(
		    f,
		    "%s\n{\"channel\":%u,\"sequence\":%u,\"log_time\":\"%llu\",\"publish_time\":"
		    "\"%llu\",\"data\":\"",
		    n++ ? "," : "", m.channel->id, m.sequence, (unsigned long long)m.log_time,
		    (unsigned long long)m.publish_time);
		hex(f, m.data, m.len);
		fprintf(f, "\"}");
	}
	fprintf(f, "]}");
	if (rc < 0) {
		fprintf(stderr, "%s\n", hako_mcap_reader_error(r));
	}
	hako_mcap_reader_close(r);
	return rc < 0;
}

/* Every message of the recording comes back from our reader as written: the manifest is only
 * trusted once it holds exactly what gen_message made. */
static int check_against_gen(const char *path, const gen_spec_t *s)
{
	char err[512];
	hako_mcap_reader_t *r;
	if (hako_mcap_reader_open(&r, path, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	static gen_msg_t g;
	hako_mcap_message_t m;
	size_t i = 0;
	int rc;
	while ((rc = hako_mcap_reader_next(r, &m)) == 1) {
		gen_message(s, i, &g);
		if (m.channel->id != g.channel || m.sequence != g.sequence ||
		    m.log_time != g.log_time || m.publish_time != g.publish_time ||
		    m.len != g.len || memcmp(m.data, g.data, g.len) != 0) {
			fprintf(stderr, "%s: message %zu differs from what was written\n", path, i);
			rc = -1;
			break;
		}
		i++;
	}
	hako_mcap_reader_close(r);
	if (rc == 0 && i != s->messages) {
		fprintf(stderr, "%s: %zu messages read, %zu written\n", path, i, s->messages);
		rc = -1;
	}
	return rc != 0;
}

static int cut(const char *dir, const char *from, const char *to)
{
	char a[4096], b[4096];
	snprintf(a, sizeof(a), "%s/%s", dir, from);
	snprintf(b, sizeof(b), "%s/%s", dir, to);
	hako_mcap_reader_t *r;
	char err[512];
	if (hako_mcap_reader_open(&r, a, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	/* The middle of the last chunk: its offset is that of the last message read. */
	hako_mcap_message_t m;
	uint64_t last = 0;
	while (hako_mcap_reader_next(r, &m) == 1) {
		last = m.chunk_offset;
	}
	hako_mcap_reader_close(r);
	FILE *in = fopen(a, "rb"), *out = fopen(b, "wb");
	if (in == NULL || out == NULL || last == 0) {
		fprintf(stderr, "%s: cannot cut\n", b);
		return 1;
	}
	uint64_t keep = last + 200;
	for (uint64_t k = 0; k < keep; k++) {
		int c = fgetc(in);
		if (c == EOF) {
			break;
		}
		fputc(c, out);
	}
	fclose(in);
	return fclose(out) != 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--dump") == 0) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s", argv[2]);
		char *slash = strrchr(dir, '/');
		const char *name = slash ? slash + 1 : dir;
		if (slash) {
			*slash = '\0';
		}
		int rc = manifest_entry(stdout, slash ? dir : ".", name, -1, 1);
		printf("\n");
		return rc;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: mcap_fixture OUTDIR | --dump FILE\n");
		return 2;
	}
	const char *dir = argv[1];
	mkdir(dir, 0755);
	struct {
		const char *name;
		gen_spec_t s;
	} files[] = {
	    {"zstd.mcap", {5000, 16384, HAKO_MCAP_COMPRESS_ZSTD, 2500, 1}},
	    {"none.mcap", {700, 8192, HAKO_MCAP_COMPRESS_NONE, -1, 1}},
	    {"lz4.mcap", {3000, 65536, HAKO_MCAP_COMPRESS_LZ4, 1200, 1}},
	    {"empty.mcap", {0, 0, HAKO_MCAP_COMPRESS_ZSTD, -1, 1}},
	};
	int bad = 0;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
		bad |= gen_write(path, &files[i].s) != 0;
		bad |= check_against_gen(path, &files[i].s);
	}
	bad |= cut(dir, "zstd.mcap", "cut.mcap");
	if (bad) {
		return 1;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		perror(path);
		return 1;
	}
	fprintf(f, "{\"files\":[\n");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		bad |= manifest_entry(f, dir, files[i].name, 1, i == 0);
	}
	bad |= manifest_entry(f, dir, "cut.mcap", 0, 0);
	fprintf(f, "\n]}\n");
	bad |= fclose(f) != 0;
	return bad;
}
