/* For the node test against @foxglove/rosmsg2-serialization: for every built-in type and a few
 * of our own (an empty type, alignment cases), a deterministic value (cdr_fill) as CDR
 * (<pkg>.<Type>.cdr), its ros2msg schema (.msg) and the value as hako's JSON (.json) into DIR,
 * and the type names in DIR/index.txt.
 * With --decode: the other way, after the node script: every DIR/<pkg>.<Type>.fox.cdr (what
 * Foxglove's MessageWriter wrote from the JSON) must decode to a PDU whose JSON is the .json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdr_fill.h"
#include "hako/cdr.h"
#include "hako/pdu.h"

/* Types no built-in package has: an empty type alone, nested and in a sequence (ROS 2 gives it
 * one uint8), and alignment cases. */
static const struct {
	const char *name;
	const char *text;
} extra[] = {
    {"Empty", ""},
    {"HasEmpty", "Empty e\nuint8 a\nEmpty[] es\nEmpty[2] two\nfloat64 z\n"},
    {"U8F64", "uint8 a\nfloat64 b\n"},
    {"StrI32", "string s\nint32 i\nstring[] ss\nint64 j\n"},
    {"P", "int16 a\nuint8 b\n"},
    {"Seq", "uint8 tag\nP[] pts\nfloat64 z\nP[3] fixed\nbool[] flags\nint64[] big\n"},
};
#define EXTRA_COUNT (sizeof(extra) / sizeof(extra[0]))

static int write_file(const char *dir, const char *base, const char *ext, const void *data,
                      size_t len)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s.%s", dir, base, ext);
	FILE *f = fopen(path, "wb");
	if (f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "cdr_vectors: cannot write %s\n", path);
		return 1;
	}
	return 0;
}

/* The bytes of a whole file into buf (cap bytes); its length, or -1. */
static long read_file(const char *dir, const char *base, const char *ext, void *buf, size_t cap)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s.%s", dir, base, ext);
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "cdr_vectors: cannot read %s\n", path);
		return -1;
	}
	size_t n = fread(buf, 1, cap, f);
	int bad = ferror(f) || n == cap;
	fclose(f);
	if (bad) {
		fprintf(stderr, "cdr_vectors: cannot read %s (or larger than %zu bytes)\n", path,
		        cap);
		return -1;
	}
	return (long)n;
}

/* Foxglove's bytes of every type in DIR/index.txt decode to the PDU of the same JSON. */
static int decode_all(hako_msg_registry_t *reg, const char *dir)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/index.txt", dir);
	FILE *index = fopen(path, "r");
	size_t cap = 1 << 20;
	uint8_t *pdu = malloc(cap);
	uint8_t *cdr = malloc(cap);
	char *want = malloc(cap);
	if (index == NULL || pdu == NULL || cdr == NULL || want == NULL) {
		fprintf(stderr, "cdr_vectors: cannot start in %s\n", dir);
		return 1;
	}
	int bad = 0;
	size_t n = 0;
	char full[HAKO_MSG_FULL_MAX + 2];
	while (fgets(full, sizeof(full), index) != NULL) {
		full[strcspn(full, "\n")] = '\0';
		char base[sizeof(full)];
		memcpy(base, full, sizeof(full));
		base[strcspn(base, "/")] = '.';
		const hako_msg_type_t *t;
		hako_error_t err;
		hako_error_clear(&err);
		long clen = read_file(dir, base, "fox.cdr", cdr, cap);
		long wlen = read_file(dir, base, "json", want, cap - 1);
		size_t plen;
		char *json = NULL;
		if (clen < 0 || wlen < 0 || hako_msg_registry_get(reg, full, &t, &err) != 0 ||
		    hako_cdr_decode(t, cdr, (size_t)clen, pdu, cap, &plen, &err) != 0 ||
		    hako_pdu_to_json(t, pdu, plen, 0, &json, &err) != 0) {
			fprintf(stderr, "FAIL %s: decoding Foxglove's CDR: %s\n", full,
			        err.message);
			bad = 1;
		} else {
			want[wlen] = '\0';
			if (strcmp(json, want) != 0) {
				fprintf(stderr, "FAIL %s: Foxglove's CDR decodes to\n%s\nnot\n%s\n",
				        full, json, want);
				bad = 1;
			}
		}
		free(json);
		n++;
	}
	fclose(index);
	free(pdu);
	free(cdr);
	free(want);
	if (n == 0) {
		fprintf(stderr, "cdr_vectors: no types in %s/index.txt\n", dir);
		return 1;
	}
	if (!bad) {
		printf("%zu/%zu types: hako decodes Foxglove's CDR to the same value\n", n, n);
	}
	return bad;
}

int main(int argc, char **argv)
{
	int decode = argc == 3 && strcmp(argv[1], "--decode") == 0;
	if (argc != 2 && !decode) {
		fprintf(stderr, "usage: cdr_vectors [--decode] DIR\n");
		return 2;
	}
	const char *dir = argv[argc - 1];
	hako_msg_registry_t *reg;
	if (hako_msg_registry_create(&reg) != 0) {
		return 1;
	}
	for (size_t i = 0; i < EXTRA_COUNT; i++) {
		hako_error_t err;
		if (hako_msg_registry_add_text(reg, "cdrtest", extra[i].name, extra[i].text,
		                               extra[i].name, NULL, &err) != 0) {
			fprintf(stderr, "cdr_vectors: cdrtest/%s: %s\n", extra[i].name,
			        err.message);
			return 1;
		}
	}
	if (decode) {
		int rc = decode_all(reg, dir);
		hako_msg_registry_destroy(reg);
		return rc;
	}
	size_t cap = 1 << 20;
	uint8_t *pdu = malloc(cap);
	uint8_t *cdr = malloc(cap);
	char *schema = malloc(cap);
	char index_path[1024];
	snprintf(index_path, sizeof(index_path), "%s/index.txt", dir);
	FILE *index = fopen(index_path, "w");
	if (pdu == NULL || cdr == NULL || schema == NULL || index == NULL) {
		fprintf(stderr, "cdr_vectors: cannot start in %s\n", dir);
		return 1;
	}
	int bad = 0;
	size_t builtins = hako_msg_builtin_count();
	for (size_t i = 0; i < builtins + EXTRA_COUNT; i++) {
		const char *pkg = "cdrtest";
		const char *name;
		if (i < builtins) {
			hako_msg_builtin_at(i, &pkg, &name);
		} else {
			name = extra[i - builtins].name;
		}
		char full[HAKO_MSG_FULL_MAX];
		snprintf(full, sizeof(full), "%s/%s", pkg, name);
		const hako_msg_type_t *t;
		hako_error_t err;
		hako_error_clear(&err);
		size_t len;
		size_t clen;
		size_t slen;
		char *json = NULL;
		if (hako_msg_registry_get(reg, full, &t, &err) != 0 ||
		    cdr_fill(t, (uint32_t)i * 13u + 1u, pdu, cap, &len) != 0 ||
		    hako_cdr_encode(t, pdu, len, cdr, cap, &clen, &err) != 0 ||
		    hako_cdr_schema(t, schema, cap, &slen) != 0 ||
		    hako_pdu_to_json(t, pdu, len, 0, &json, &err) != 0) {
			fprintf(stderr, "cdr_vectors: %s: %s\n", full, err.message);
			bad = 1;
			free(json);
			continue;
		}
		char base[HAKO_MSG_FULL_MAX];
		snprintf(base, sizeof(base), "%s.%s", pkg, name);
		bad |= write_file(dir, base, "cdr", cdr, clen);
		bad |= write_file(dir, base, "msg", schema, slen);
		bad |= write_file(dir, base, "json", json, strlen(json));
		fprintf(index, "%s\n", full);
		free(json);
	}
	fclose(index);
	free(pdu);
	free(cdr);
	free(schema);
	hako_msg_registry_destroy(reg);
	return bad;
}
