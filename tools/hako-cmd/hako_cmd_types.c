/* hako-cmd types, type and schema: the PDU types known, the layout of one, its ros2msg schema. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/cdr.h"
#include "hako_cmd.h"

int hakoi_cmd_find_type(const char *name, hako_msg_registry_t **reg, const hako_msg_type_t **type,
                        char *why, size_t len)
{
	hako_error_t err;
	hako_error_clear(&err);
	int r = hako_msg_registry_create(reg);
	if (r != 0) {
		snprintf(why, len, "cannot create the type registry: %s", hako_strerror(r));
		return r;
	}
	r = hako_msg_registry_get(*reg, name, type, &err);
	if (r != 0) {
		if (err.message[0] != '\0') {
			hako_error_format(&err, why, len);
		} else {
			snprintf(why, len, "%s: %s", name, hako_strerror(r));
		}
	}
	return r;
}

int hakoi_cmd_types(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int r = hakoi_cmd_simple_options(cmd, argc, argv);
	if (r >= 0) {
		return r;
	}
	hako_msg_registry_t *reg;
	char **names = NULL;
	size_t n = 0;
	if ((r = hako_msg_registry_create(&reg)) != 0) {
		hakoi_cmd_errf("cannot create the type registry: %s", hako_strerror(r));
		return 1;
	}
	r = hako_msg_registry_list(reg, &names, &n);
	if (r != 0) {
		hakoi_cmd_errf("cannot list the types: %s", hako_strerror(r));
		hako_msg_registry_destroy(reg);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		printf("%s\n", names[i]);
	}
	hako_msg_names_free(names, n);
	hako_msg_registry_destroy(reg);
	return 0;
}

/* The type of f as the .msg writes it: "float64[9]", "geometry_msgs/Vector3", "uint8[]". */
static const char *field_type(const hako_msg_field_t *f, char *buf, size_t len)
{
	const char *base =
	    f->kind == HAKO_MSG_STRUCT ? f->type->full_name : hako_msg_kind_name(f->kind);
	if (f->form == HAKO_MSG_ARRAY) {
		snprintf(buf, len, "%s[%" PRIu32 "]", base, f->count);
	} else if (f->form == HAKO_MSG_VARRAY) {
		snprintf(buf, len, "%s[]", base);
	} else {
		snprintf(buf, len, "%s", base);
	}
	return buf;
}

/* Width of the FIELD column: the longest indented field name. */
static int field_width(const hako_msg_type_t *t, int depth)
{
	int w = 5;
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		int len = depth * 2 + (int)strlen(f->name);
		w = len > w ? len : w;
		if (f->kind == HAKO_MSG_STRUCT) {
			len = field_width(f->type, depth + 1);
			w = len > w ? len : w;
		}
	}
	return w;
}

/* The fields of t, nested ones indented under their field. Offsets are from the start of the
 * base (`origin` is where t starts in it) until an array of structs: the fields of its elements
 * are shown from the start of one element, as "+N". Returns 1 if it showed such offsets. */
static int print_fields(const hako_msg_type_t *t, uint32_t origin, int per_elem, int depth,
                        int width)
{
	static const char *const forms[] = {"single", "array", "varray"};
	int relative = per_elem;
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		char off[24], count[16], ty[HAKO_MSG_FULL_MAX + 16];
		snprintf(off, sizeof(off), "%s%" PRIu32, per_elem ? "+" : "", origin + f->offset);
		if (f->form == HAKO_MSG_ARRAY) {
			snprintf(count, sizeof(count), "%" PRIu32, f->count);
		} else {
			snprintf(count, sizeof(count), "-");
		}
		printf("%8s  %8" PRIu32 "  %-7s  %-6s  %5s  %*s%-*s  %s\n", off, f->size,
		       hako_msg_kind_name(f->kind), forms[f->form], count, depth * 2, "",
		       width - depth * 2, f->name, field_type(f, ty, sizeof(ty)));
		if (f->kind != HAKO_MSG_STRUCT) {
			continue;
		}
		if (f->form == HAKO_MSG_SINGLE) {
			relative |=
			    print_fields(f->type, origin + f->offset, per_elem, depth + 1, width);
		} else {
			relative |= print_fields(f->type, 0, 1, depth + 1, width);
		}
	}
	return relative;
}

/* The options and the one <pkg/Type> operand of type and schema: -1 and the type (*reg to
 * destroy), or the command's exit status. */
static int one_type(const hako_cli_command_t *cmd, int argc, char **argv, hako_msg_registry_t **reg,
                    const hako_msg_type_t **t)
{
	static const struct option longopts[] = {HAKOI_CMD_LONG_OPTIONS, {NULL, 0, NULL, 0}};
	int c, r;
	while ((c = getopt_long(argc, argv, ":d:h", longopts, NULL)) != -1) {
		if ((r = hakoi_cmd_option(cmd, c, argv)) >= 0) {
			return r;
		}
	}
	if (argc - optind != 1) {
		return hako_cli_usage_error(cmd, "need one <pkg/Type>");
	}
	*reg = NULL;
	char why[1400];
	if (hakoi_cmd_find_type(argv[optind], reg, t, why, sizeof(why)) != 0) {
		hakoi_cmd_errf("%s", why);
		hako_msg_registry_destroy(*reg);
		return 1;
	}
	return -1;
}

int hakoi_cmd_type(const hako_cli_command_t *cmd, int argc, char **argv)
{
	hako_msg_registry_t *reg = NULL;
	const hako_msg_type_t *t = NULL;
	int r = one_type(cmd, argc, argv, &reg, &t);
	if (r >= 0) {
		return r;
	}
	uint32_t fixed = hako_msg_pdu_fixed_size(t);
	printf("%s (%s)\n", t->full_name, t->path);
	printf("size %" PRIu32 ", align %" PRIu32 ", fixed PDU size %" PRIu32
	       " bytes (24 meta + base rounded up to 8)%s\n",
	       t->size, t->align, fixed, t->has_varray ? " + heap for the variable arrays" : "");
	if (t->field_count == 0) {
		printf("no fields\n");
	} else {
		int w = field_width(t, 0);
		printf("\n%8s  %8s  %-7s  %-6s  %5s  %-*s  %s\n", "OFFSET", "SIZE", "KIND", "FORM",
		       "COUNT", w, "FIELD", "TYPE");
		if (print_fields(t, 0, 0, 0, w)) {
			printf("\n+N: offset in one element of the array above it\n");
		}
	}
	hako_msg_registry_destroy(reg);
	return 0;
}

int hakoi_cmd_schema(const hako_cli_command_t *cmd, int argc, char **argv)
{
	hako_msg_registry_t *reg = NULL;
	const hako_msg_type_t *t = NULL;
	int r = one_type(cmd, argc, argv, &reg, &t);
	if (r >= 0) {
		return r;
	}
	size_t len = 0;
	char *text = NULL;
	r = hako_cdr_schema(t, NULL, 0, &len);
	if (r == HAKO_ETOOBIG && (text = malloc(len + 1)) != NULL) {
		r = hako_cdr_schema(t, text, len + 1, &len);
	}
	if (r == 0) {
		fwrite(text, 1, len, stdout);
	} else {
		hakoi_cmd_errf("%s: no schema: %s", t->full_name, hako_strerror(r));
	}
	free(text);
	hako_msg_registry_destroy(reg);
	return r == 0 ? 0 : 1;
}
