/* hako-cmd pdu and pdu-write: a channel's latest PDU read, or a PDU written, as JSON. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/pdu.h"
#include "hako/pdudef.h"

#include "hako_cmd.h"

static void hex_dump(const uint8_t *p, size_t len)
{
	for (size_t off = 0; off < len; off += 16) {
		printf("%08zx ", off);
		for (size_t i = 0; i < 16; i++) {
			if (i == 8) {
				putchar(' ');
			}
			if (off + i < len) {
				printf(" %02x", p[off + i]);
			} else {
				printf("   ");
			}
		}
		printf("  |");
		for (size_t i = 0; i < 16 && off + i < len; i++) {
			putchar(isprint(p[off + i]) ? p[off + i] : '.');
		}
		printf("|\n");
	}
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The Hakoniwa meta header, when the PDU carries one. */
static void print_meta(const uint8_t *p, size_t len)
{
	if (len < 24 || le32(p) != 0x12345678u) {
		return;
	}
	printf("meta: version %u, base offset %u, heap offset %u, total size %u, epoch %u, "
	       "flags 0x%02x\n",
	       le32(p + 4), le32(p + 8), le32(p + 12), le32(p + 16), p[20], p[21]);
}

/* A channel named on the command line: robot, id, and its pdudef entry if there is one. */
struct pdu_target {
	const char *robot;
	long id;
	hako_pdudef_t *def;
	const hako_pdudef_pdu_t *pdu; /* NULL without a pdudef entry */
	const char *type;             /* --type, else the pdudef's, else NULL */
};

/* Resolve <robot> <channel-id|name>, loading the pdudef when one is given. 0 or 1 (said why). */
static int pdu_target(struct pdu_target *t, const char *pdudef, const char *type, const char *robot,
                      const char *which)
{
	memset(t, 0, sizeof(*t));
	t->robot = robot;
	if (pdudef != NULL && pdudef[0] != '\0') {
		hako_error_t err;
		char msg[1200];
		if (hako_pdudef_load(pdudef, &t->def, &err) != 0) {
			hakoi_cmd_errf("%s", hako_error_format(&err, msg, sizeof(msg)));
			return 1;
		}
	}
	char *end;
	errno = 0;
	t->id = strtol(which, &end, 10);
	if (errno != 0 || end == which || *end != '\0' || t->id < 0 || t->id > INT32_MAX) {
		if (t->def == NULL) {
			hakoi_cmd_errf(
			    "'%s' is not a channel id; give --pdudef FILE (or set HAKO_PDUDEF) to "
			    "look PDUs up by name",
			    which);
			return 1;
		}
		t->pdu = hako_pdudef_find(t->def, robot, which);
		if (t->pdu == NULL) {
			hakoi_cmd_errf("%s: no PDU '%s' for robot '%s'", t->def->path, which,
			               robot);
			return 1;
		}
		t->id = t->pdu->channel_id;
	} else if (t->def != NULL) {
		t->pdu = hako_pdudef_find_channel(t->def, robot, (int32_t)t->id);
	}
	t->type = type != NULL ? type : t->pdu != NULL ? t->pdu->type : NULL;
	return 0;
}

/* "Robot/0 "counter" (std_msgs/UInt64)" */
static void print_target(const struct pdu_target *t)
{
	printf("%s/%ld", t->robot, t->id);
	if (t->pdu != NULL) {
		printf(" \"%s\"", t->pdu->name);
	}
	if (t->type != NULL) {
		printf(" (%s)", t->type);
	}
}

/* The PDU as JSON (malloc'ed), or NULL with `why` saying why not. */
static char *pdu_json(const char *type_name, const uint8_t *buf, size_t len, char *why, size_t wlen)
{
	hako_msg_registry_t *reg = NULL;
	const hako_msg_type_t *type;
	char *json = NULL;
	if (hakoi_cmd_find_type(type_name, &reg, &type, why, wlen) == 0) {
		hako_error_t err;
		hako_error_clear(&err);
		if (hako_pdu_to_json(type, buf, len, HAKO_PDU_JSON_PRETTY, &json, &err) != 0) {
			char msg[1200];
			snprintf(why, wlen, "not a valid %s PDU: %s", type_name,
			         hako_error_format(&err, msg, sizeof(msg)));
			json = NULL;
		}
	}
	hako_msg_registry_destroy(reg);
	return json;
}

int hakoi_cmd_pdu(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"pdudef", required_argument, NULL, 'p'},
	                                         {"type", required_argument, NULL, 't'},
	                                         {"raw", no_argument, NULL, 'r'},
	                                         {"hex", no_argument, NULL, 'x'},
	                                         {"json", no_argument, NULL, 'j'},
	                                         HAKOI_CMD_LONG_OPTIONS,
	                                         {NULL, 0, NULL, 0}};
	const char *pdudef = getenv("HAKO_PDUDEF"), *type = NULL;
	int raw = 0, hex = 0, json_only = 0, c, r;
	while ((c = getopt_long(argc, argv, ":d:hp:t:", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pdudef = optarg;
			r = -1;
			break;
		case 't':
			type = optarg;
			r = -1;
			break;
		case 'r':
			raw = 1;
			r = -1;
			break;
		case 'x':
			hex = 1;
			r = -1;
			break;
		case 'j':
			json_only = 1;
			r = -1;
			break;
		default: r = hakoi_cmd_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if (argc - optind != 2) {
		return hako_cli_usage_error(cmd, "need <robot> and <channel-id|name>");
	}
	if (raw + hex + json_only > 1) {
		return hako_cli_usage_error(cmd, "--raw, --hex and --json exclude each other");
	}
	struct pdu_target t;
	int rc = 1;
	hako_domain_t *dom = NULL;
	uint8_t *buf = NULL;
	if (pdu_target(&t, pdudef, type, argv[optind], argv[optind + 1]) != 0) {
		goto out;
	}
	if (json_only && t.type == NULL) {
		hakoi_cmd_errf(
		    "--json: the type of %s/%ld is not known; give --pdudef FILE (or set "
		    "HAKO_PDUDEF) or --type PKG/TYPE",
		    t.robot, t.id);
		goto out;
	}
	if (hakoi_cmd_open_domain(&dom) != 0) {
		goto out;
	}
	hako_channel_t *ch;
	r = hako_channel_lookup(dom, t.robot, (int32_t)t.id, &ch);
	if (r != 0) {
		hakoi_cmd_errf(
		    "domain '%s' has no channel %s/%ld (the channels are listed by: hako-cmd "
		    "info)",
		    hakoi_cmd_domain(), t.robot, t.id);
		goto out;
	}
	size_t size = hako_channel_size(ch), len = 0;
	uint64_t seq = 0;
	buf = malloc(size);
	if (buf == NULL) {
		hakoi_cmd_errf("out of memory");
		goto out;
	}
	r = hako_channel_read(ch, buf, size, &len, &seq);
	if (r != 0) {
		hakoi_cmd_errf("cannot read channel %s/%ld: %s", t.robot, t.id, hako_strerror(r));
		goto out;
	}
	if (raw) {
		fwrite(buf, 1, len, stdout);
		rc = 0;
		goto out;
	}
	char why[1400];
	if (json_only) {
		char *json = seq == 0 ? NULL : pdu_json(t.type, buf, len, why, sizeof(why));
		if (seq == 0) {
			hakoi_cmd_errf("%s/%ld has never been written", t.robot, t.id);
		} else if (json == NULL) {
			hakoi_cmd_errf("%s", why);
		} else {
			printf("%s\n", json);
			rc = 0;
		}
		free(json);
		goto out;
	}
	print_target(&t);
	if (seq == 0) {
		printf(": never written (channel size %zu bytes)\n", size);
		rc = 0;
		goto out;
	}
	printf(": seq %" PRIu64 ", %zu of %zu bytes\n", seq, len, size);
	print_meta(buf, len);
	char *json = NULL;
	if (!hex && t.type != NULL) {
		json = pdu_json(t.type, buf, len, why, sizeof(why));
		if (json == NULL) {
			printf("note: %s; hex dump instead\n", why);
		}
	}
	if (json != NULL) {
		printf("%s\n", json);
		free(json);
	} else {
		hex_dump(buf, len);
	}
	rc = 0;
out:
	free(buf);
	hako_domain_close(dom);
	hako_pdudef_free(t.def);
	return rc;
}

/* ---- pdu-write ---- */

/* All of stdin, NUL-terminated, or NULL. */
static char *read_stdin(size_t *len)
{
	size_t cap = 4096, used = 0, n;
	char *buf = malloc(cap);
	while (buf != NULL && (n = fread(buf + used, 1, cap - used - 1, stdin)) > 0) {
		used += n;
		if (cap - used < 2) {
			char *nbuf = realloc(buf, cap * 2);
			if (nbuf == NULL) {
				free(buf);
			}
			buf = nbuf;
			cap *= 2;
		}
	}
	if (buf != NULL) {
		buf[used] = '\0';
		*len = used;
	}
	return buf;
}

int hakoi_cmd_pdu_write(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"pdudef", required_argument, NULL, 'p'},
	                                         {"type", required_argument, NULL, 't'},
	                                         HAKOI_CMD_LONG_OPTIONS,
	                                         {NULL, 0, NULL, 0}};
	const char *pdudef = getenv("HAKO_PDUDEF"), *type_opt = NULL;
	int c, r;
	while ((c = getopt_long(argc, argv, ":d:hp:t:", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pdudef = optarg;
			r = -1;
			break;
		case 't':
			type_opt = optarg;
			r = -1;
			break;
		default: r = hakoi_cmd_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if (argc - optind != 3) {
		return hako_cli_usage_error(cmd, "need <robot>, <name|channel-id> and '<json>'");
	}
	struct pdu_target t;
	hako_msg_registry_t *reg = NULL;
	const hako_msg_type_t *type;
	hako_domain_t *dom = NULL;
	uint8_t *buf = NULL;
	char *text = NULL;
	size_t text_len = 0;
	int rc = 1;
	if (pdu_target(&t, pdudef, type_opt, argv[optind], argv[optind + 1]) != 0) {
		goto out;
	}
	if (t.type == NULL) {
		hakoi_cmd_errf(
		    "the type of %s/%ld is not known; give --pdudef FILE (or set HAKO_PDUDEF) "
		    "or --type PKG/TYPE",
		    t.robot, t.id);
		goto out;
	}
	char why[1400];
	if (hakoi_cmd_find_type(t.type, &reg, &type, why, sizeof(why)) != 0) {
		hakoi_cmd_errf("%s", why);
		goto out;
	}
	if (strcmp(argv[optind + 2], "-") == 0) {
		text = read_stdin(&text_len);
		if (text == NULL) {
			hakoi_cmd_errf("cannot read the JSON from stdin");
			goto out;
		}
	} else {
		text_len = strlen(argv[optind + 2]);
	}
	if (hakoi_cmd_open_domain(&dom) != 0) {
		goto out;
	}
	hako_channel_t *ch;
	r = hako_channel_lookup(dom, t.robot, (int32_t)t.id, &ch);
	if (r != 0) {
		hakoi_cmd_errf(
		    "domain '%s' has no channel %s/%ld (the channels are listed by: hako-cmd "
		    "info)",
		    hakoi_cmd_domain(), t.robot, t.id);
		goto out;
	}
	size_t size = hako_channel_size(ch), len = 0;
	buf = malloc(size);
	if (buf == NULL) {
		hakoi_cmd_errf("out of memory");
		goto out;
	}
	hako_error_t err;
	hako_error_clear(&err);
	r = hako_pdu_from_json(type, text != NULL ? text : argv[optind + 2], text_len, buf, size,
	                       &len, &err);
	if (r == HAKO_ETOOBIG) {
		hakoi_cmd_errf("%s/%ld: the PDU needs %zu bytes, the channel has %zu", t.robot,
		               t.id, len, size);
		goto out;
	}
	if (r != 0) {
		char msg[1200];
		hakoi_cmd_errf("JSON for %s: %s", t.type,
		               hako_error_format(&err, msg, sizeof(msg)));
		goto out;
	}
	r = hako_channel_write(ch, buf, len);
	if (r != 0) {
		hakoi_cmd_errf("cannot write channel %s/%ld: %s", t.robot, t.id, hako_strerror(r));
		goto out;
	}
	print_target(&t);
	printf(": wrote %zu of %zu bytes (seq %" PRIu64 ")\n", len, size, hako_channel_seq(ch));
	rc = 0;
out:
	free(text);
	free(buf);
	hako_domain_close(dom);
	hako_msg_registry_destroy(reg);
	hako_pdudef_free(t.def);
	return rc;
}
