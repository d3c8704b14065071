/* hako-cmd dump, restore and real_cid: a channel's bytes (or every channel of the domain) to a
 * file and back, and the real channel id these take, as Hakoniwa's hako-cmd has them.
 *
 * A real channel id is the channel's index in the domain's channel table (what Hakoniwa's
 * get_pdu_channel answers, and hako_asset_get_pdu_channel of hako_capi.h). A snapshot of the
 * whole domain is a file of this layout, little-endian:
 *   "HAKOPDUS" | u32 version (1) | u32 count | count x {u32 robot length | robot (no NUL) |
 *   i32 channel id | u32 channel size | u64 write number | u32 length | length bytes}
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hako_cmd.h"

#define SNAPSHOT_MAGIC   "HAKOPDUS"
#define SNAPSHOT_VERSION 1u
/* A snapshot names at most this many channels (the domain's own limit) of at most 2^31 bytes
 * each: a file is read only as far as that allows, never trusted for an allocation size. */
#define SNAPSHOT_MAX_PDU ((uint32_t)INT32_MAX)

/* The channel whose real id (index) is cid. 0, or 1 after saying why. */
static int channel_by_cid(hako_domain_t *dom, long cid, hako_channel_t **ch)
{
	int n = 0;
	hako_channel_info_t *list = hakoi_cmd_list_channels(dom, &n);
	if (list == NULL) {
		return 1;
	}
	int r = 1;
	for (int i = 0; i < n; i++) {
		if (list[i].index == cid) {
			r = hako_channel_lookup(dom, list[i].robot, list[i].channel_id, ch) == 0
			        ? 0
			        : 1;
			break;
		}
	}
	if (r != 0) {
		hakoi_cmd_errf("domain '%s' has no channel of real id %ld (the ids are shown by: "
		               "hako-cmd real_cid <robot> <channel-id>, or hako-cmd pmeta)",
		               hakoi_cmd_domain(), cid);
	}
	free(list);
	return r;
}

static int parse_cid(const hako_cli_command_t *cmd, const char *s, long *cid)
{
	char *end;
	errno = 0;
	*cid = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *cid < 0 || *cid > INT32_MAX) {
		return hako_cli_usage_error(cmd, "'%s' is not a real channel id (an integer >= 0)",
		                            s);
	}
	return -1;
}

/* Where the bytes go: FILE, or stdout unless it is a terminal. NULL after saying why. */
static FILE *open_out(const char *path)
{
	if (path != NULL && strcmp(path, "-") != 0) {
		FILE *f = fopen(path, "wb");
		if (f == NULL) {
			hakoi_cmd_errf("cannot write %s: %s", path, strerror(errno));
		}
		return f;
	}
	if (isatty(STDOUT_FILENO)) {
		hakoi_cmd_errf("the dump is binary: redirect it to a file or give -o FILE");
		return NULL;
	}
	return stdout;
}

static int close_out(FILE *f, const char *path)
{
	int bad = ferror(f) != 0;
	if ((f == stdout ? fflush(f) : fclose(f)) != 0 || bad) {
		hakoi_cmd_errf("cannot write %s: %s", f == stdout ? "stdout" : path,
		               strerror(errno));
		return 1;
	}
	return 0;
}

static void put32(FILE *f, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	fwrite(b, 1, 4, f);
}

static void put64(FILE *f, uint64_t v)
{
	put32(f, (uint32_t)v);
	put32(f, (uint32_t)(v >> 32));
}

/* ---- dump ---- */

/* The channel's latest PDU, zero-filled to the channel size, as Hakoniwa's dump gives it. */
static int dump_channel(hako_domain_t *dom, long cid, FILE *out)
{
	hako_channel_t *ch;
	if (channel_by_cid(dom, cid, &ch) != 0) {
		return 1;
	}
	size_t size = hako_channel_size(ch), len = 0;
	uint8_t *buf = calloc(1, size > 0 ? size : 1);
	if (buf == NULL) {
		hakoi_cmd_errf("out of memory");
		return 1;
	}
	int r = hako_channel_read(ch, buf, size, &len, NULL);
	if (r != 0) {
		hakoi_cmd_errf("cannot read channel %s/%d: %s", hako_channel_robot(ch),
		               hako_channel_id(ch), hako_strerror(r));
	} else {
		fwrite(buf, 1, size, out);
	}
	free(buf);
	return r != 0;
}

/* Every channel in the snapshot format; *count channels, *bytes bytes of PDUs. */
static int dump_domain(hako_domain_t *dom, FILE *out, int *count, uint64_t *bytes)
{
	int n = 0;
	hako_channel_info_t *list = hakoi_cmd_list_channels(dom, &n);
	if (list == NULL) {
		return 1;
	}
	int rc = 0;
	fwrite(SNAPSHOT_MAGIC, 1, 8, out);
	put32(out, SNAPSHOT_VERSION);
	put32(out, (uint32_t)n);
	for (int i = 0; i < n && rc == 0; i++) {
		hako_channel_t *ch;
		uint8_t *buf = malloc(list[i].size > 0 ? list[i].size : 1);
		size_t len = 0;
		uint64_t seq = 0;
		int r = buf == NULL
		            ? HAKO_ENOMEM
		            : hako_channel_lookup(dom, list[i].robot, list[i].channel_id, &ch);
		if (r == 0) {
			r = hako_channel_read(ch, buf, list[i].size, &len, &seq);
		}
		if (r != 0) {
			hakoi_cmd_errf("cannot read channel %s/%d: %s", list[i].robot,
			               list[i].channel_id, hako_strerror(r));
			rc = 1;
		} else {
			size_t rl = strlen(list[i].robot);
			put32(out, (uint32_t)rl);
			fwrite(list[i].robot, 1, rl, out);
			put32(out, (uint32_t)list[i].channel_id);
			put32(out, list[i].size);
			put64(out, seq);
			put32(out, (uint32_t)len);
			fwrite(buf, 1, len, out);
			*bytes += len;
		}
		free(buf);
	}
	free(list);
	*count = n;
	return rc;
}

int hakoi_cmd_dump(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'}, HAKOI_CMD_LONG_OPTIONS, {NULL, 0, NULL, 0}};
	const char *path = NULL;
	int c, r;
	while ((c = getopt_long(argc, argv, ":d:ho:", longopts, NULL)) != -1) {
		if (c == 'o') {
			path = optarg;
			continue;
		}
		if ((r = hakoi_cmd_option(cmd, c, argv)) >= 0) {
			return r;
		}
	}
	long cid = -1;
	if (argc - optind > 1) {
		return hako_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
	}
	if (argc - optind == 1 && (r = parse_cid(cmd, argv[optind], &cid)) >= 0) {
		return r;
	}
	hako_domain_t *dom;
	if (hakoi_cmd_open_domain(&dom) != 0) {
		return 1;
	}
	FILE *out = open_out(path);
	if (out == NULL) {
		hako_domain_close(dom);
		return 1;
	}
	int count = 0;
	uint64_t bytes = 0;
	int rc = cid >= 0 ? dump_channel(dom, cid, out) : dump_domain(dom, out, &count, &bytes);
	hako_domain_close(dom);
	if (rc == 0) {
		rc = close_out(out, path);
	} else if (out != stdout) {
		fclose(out);
		unlink(path); /* no half dump left to be restored */
	}
	if (rc == 0 && cid < 0) {
		char human[32];
		/* beside the dump, not into it */
		fprintf(out == stdout ? stderr : stdout,
		        "domain '%s': %d channel%s (%s of PDUs) written to %s\n",
		        hakoi_cmd_domain(), count, count == 1 ? "" : "s",
		        hakoi_cmd_human_bytes(bytes, human, sizeof(human)),
		        out == stdout ? "stdout" : path);
	}
	return rc;
}

/* ---- restore ---- */

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		hakoi_cmd_errf("cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 4096, n = 0;
	uint8_t *buf = malloc(cap);
	while (buf != NULL) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap) {
			break;
		}
		if (cap >= (size_t)SNAPSHOT_MAX_PDU) {
			hakoi_cmd_errf("%s: larger than 2 GiB, not a PDU file", path);
			free(buf);
			buf = NULL;
			break;
		}
		uint8_t *nb = realloc(buf, cap * 2);
		if (nb == NULL) {
			free(buf);
		}
		buf = nb;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (buf != NULL && bad) {
		hakoi_cmd_errf("cannot read %s: %s", path, strerror(errno));
		free(buf);
		return NULL;
	}
	if (buf == NULL) {
		hakoi_cmd_errf("out of memory reading %s", path);
		return NULL;
	}
	*len = n;
	return buf;
}

static int restore_channel(hako_domain_t *dom, long cid, const char *path)
{
	hako_channel_t *ch;
	size_t len = 0;
	if (channel_by_cid(dom, cid, &ch) != 0) {
		return 1;
	}
	uint8_t *buf = read_file(path, &len);
	if (buf == NULL) {
		return 1;
	}
	int rc = 1;
	if (len > hako_channel_size(ch)) {
		hakoi_cmd_errf("%s: %zu bytes, more than the %zu of channel %s/%d", path, len,
		               hako_channel_size(ch), hako_channel_robot(ch), hako_channel_id(ch));
	} else {
		int r = hako_channel_write(ch, buf, len);
		if (r != 0) {
			hakoi_cmd_errf("cannot write channel %s/%d: %s", hako_channel_robot(ch),
			               hako_channel_id(ch), hako_strerror(r));
		} else {
			printf("%s/%d (real id %ld): wrote %zu of %zu bytes from %s (seq %" PRIu64
			       ")\n",
			       hako_channel_robot(ch), hako_channel_id(ch), cid, len,
			       hako_channel_size(ch), path, hako_channel_seq(ch));
			rc = 0;
		}
	}
	free(buf);
	return rc;
}

/* A snapshot being read: bounds-checked, a short file is an error with the offset. */
struct reader {
	const uint8_t *p;
	size_t len;
	size_t at;
	const char *path;
};

static int take(struct reader *r, size_t n, const uint8_t **out, const char *what)
{
	if (r->len - r->at < n) {
		hakoi_cmd_errf("%s: cut short at byte %zu (in %s): not a whole hako-cmd dump",
		               r->path, r->at, what);
		return 1;
	}
	*out = r->p + r->at;
	r->at += n;
	return 0;
}

static int take32(struct reader *r, uint32_t *v, const char *what)
{
	const uint8_t *b;
	if (take(r, 4, &b, what) != 0) {
		return 1;
	}
	*v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return 0;
}

struct record {
	char robot[HAKO_NAME_MAX];
	int32_t channel_id;
	uint32_t size;
	uint32_t len;
	const uint8_t *bytes;
	hako_channel_t *ch;
};

/* Every record, checked against the domain before anything is written: a snapshot restores
 * whole or not at all. */
static int read_snapshot(hako_domain_t *dom, struct reader *rd, struct record **out,
                         uint32_t *count)
{
	const uint8_t *magic;
	uint32_t version, n;
	if (take(rd, 8, &magic, "the magic") != 0 || memcmp(magic, SNAPSHOT_MAGIC, 8) != 0) {
		hakoi_cmd_errf("%s: not a dump of hako-cmd dump (give a real channel id to restore "
		               "raw bytes: hako-cmd restore <real-cid> %s)",
		               rd->path, rd->path);
		return 1;
	}
	if (take32(rd, &version, "the version") != 0 || take32(rd, &n, "the count") != 0) {
		return 1;
	}
	if (version != SNAPSHOT_VERSION) {
		hakoi_cmd_errf("%s: dump version %u (this hako-cmd reads %u)", rd->path, version,
		               SNAPSHOT_VERSION);
		return 1;
	}
	/* Each record takes at least 24 bytes: a count beyond that is a lie, not a size. */
	if (n > (rd->len - rd->at) / 24) {
		hakoi_cmd_errf("%s: counts %u channels, more than its %zu bytes can hold", rd->path,
		               n, rd->len);
		return 1;
	}
	struct record *recs = calloc(n > 0 ? n : 1, sizeof(*recs));
	if (recs == NULL) {
		hakoi_cmd_errf("out of memory");
		return 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct record *c = &recs[i];
		uint32_t rl, id, seq_lo, seq_hi;
		const uint8_t *name;
		if (take32(rd, &rl, "a robot name") != 0) {
			goto bad;
		}
		if (rl == 0 || rl >= HAKO_NAME_MAX) {
			hakoi_cmd_errf("%s: channel %u: robot name of %u bytes", rd->path, i, rl);
			goto bad;
		}
		if (take(rd, rl, &name, "a robot name") != 0 ||
		    take32(rd, &id, "a channel id") != 0 ||
		    take32(rd, &c->size, "a channel size") != 0 ||
		    take32(rd, &seq_lo, "a write number") != 0 ||
		    take32(rd, &seq_hi, "a write number") != 0 ||
		    take32(rd, &c->len, "a length") != 0 ||
		    take(rd, c->len, &c->bytes, "a PDU") != 0) {
			goto bad;
		}
		memcpy(c->robot, name, rl);
		c->robot[rl] = '\0';
		c->channel_id = (int32_t)id;
		if (c->len > c->size) {
			hakoi_cmd_errf("%s: channel %s/%d: a PDU of %u bytes in a channel of %u",
			               rd->path, c->robot, c->channel_id, c->len, c->size);
			goto bad;
		}
		if (hako_channel_lookup(dom, c->robot, c->channel_id, &c->ch) != 0) {
			hakoi_cmd_errf("domain '%s' has no channel %s/%d (its assets create the "
			               "channels: register them first); nothing restored",
			               hakoi_cmd_domain(), c->robot, c->channel_id);
			goto bad;
		}
		if (hako_channel_size(c->ch) != c->size) {
			hakoi_cmd_errf(
			    "channel %s/%d has %zu bytes in domain '%s', %u in %s; nothing "
			    "restored",
			    c->robot, c->channel_id, hako_channel_size(c->ch), hakoi_cmd_domain(),
			    c->size, rd->path);
			goto bad;
		}
	}
	if (rd->at != rd->len) {
		hakoi_cmd_errf("%s: %zu bytes after the last channel: not a hako-cmd dump",
		               rd->path, rd->len - rd->at);
		goto bad;
	}
	*out = recs;
	*count = n;
	return 0;
bad:
	free(recs);
	return 1;
}

static int restore_domain(hako_domain_t *dom, const char *path)
{
	size_t len = 0;
	uint8_t *buf = read_file(path, &len);
	if (buf == NULL) {
		return 1;
	}
	struct reader rd = {buf, len, 0, path};
	struct record *recs = NULL;
	uint32_t n = 0;
	int rc = read_snapshot(dom, &rd, &recs, &n);
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		int r = hako_channel_write(recs[i].ch, recs[i].bytes, recs[i].len);
		if (r != 0) {
			hakoi_cmd_errf(
			    "cannot write channel %s/%d: %s (%u of %u channels restored)",
			    recs[i].robot, recs[i].channel_id, hako_strerror(r), i, n);
			rc = 1;
		}
	}
	if (rc == 0) {
		printf("domain '%s': %u channel%s restored from %s\n", hakoi_cmd_domain(), n,
		       n == 1 ? "" : "s", path);
	}
	free(recs);
	free(buf);
	return rc;
}

int hakoi_cmd_restore(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {HAKOI_CMD_LONG_OPTIONS, {NULL, 0, NULL, 0}};
	int c, r;
	while ((c = getopt_long(argc, argv, ":d:h", longopts, NULL)) != -1) {
		if ((r = hakoi_cmd_option(cmd, c, argv)) >= 0) {
			return r;
		}
	}
	int nargs = argc - optind;
	long cid = -1;
	if (nargs < 1 || nargs > 2) {
		return hako_cli_usage_error(cmd, "need <file> (a dump of the domain) or <real-cid> "
		                                 "<file> (a channel's bytes)");
	}
	if (nargs == 2 && (r = parse_cid(cmd, argv[optind], &cid)) >= 0) {
		return r;
	}
	hako_domain_t *dom;
	if (hakoi_cmd_open_domain(&dom) != 0) {
		return 1;
	}
	int rc = nargs == 2 ? restore_channel(dom, cid, argv[optind + 1])
	                    : restore_domain(dom, argv[optind]);
	hako_domain_close(dom);
	return rc;
}

/* ---- real_cid ---- */

int hakoi_cmd_real_cid(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {HAKOI_CMD_LONG_OPTIONS, {NULL, 0, NULL, 0}};
	int c, r;
	while ((c = getopt_long(argc, argv, ":d:h", longopts, NULL)) != -1) {
		if ((r = hakoi_cmd_option(cmd, c, argv)) >= 0) {
			return r;
		}
	}
	if (argc - optind != 2) {
		return hako_cli_usage_error(cmd, "need <robot> and <channel-id>");
	}
	int64_t id = 0;
	if ((r = hakoi_cmd_parse_i64(cmd, "<channel-id>", argv[optind + 1], 0, &id)) >= 0) {
		return r;
	}
	if (id > INT32_MAX) {
		return hako_cli_usage_error(cmd, "<channel-id>: %" PRId64 " is not a channel id",
		                            id);
	}
	hako_domain_t *dom;
	if (hakoi_cmd_open_domain(&dom) != 0) {
		return 1;
	}
	hako_channel_t *ch;
	r = hako_channel_lookup(dom, argv[optind], (int32_t)id, &ch);
	int rc = 0;
	if (r == 0) {
		printf("%d\n", hako_channel_index(ch));
	} else {
		/* Hakoniwa prints -1; say why too. */
		printf("-1\n");
		hakoi_cmd_errf("domain '%s' has no channel %s/%" PRId64, hakoi_cmd_domain(),
		               argv[optind], id);
		rc = 1;
	}
	hako_domain_close(dom);
	return rc;
}
