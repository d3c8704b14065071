/* hako-msggen: C headers for PDU types, written from the same type registry and layout engine
 * the runtime uses, so a generated struct and a PDU decoded at run time always agree.
 *
 * For every type asked for (and every type it nests) it writes <out>/<pkg>/<Type>.h with the
 * struct, the PDU size and inline helpers, plus <out>/hako_pdu_types.h shared by all of them.
 * With --offsets DIR it writes DIR/<pkg>/<Type>.offset, the layout files hakoniwa-pdu-python
 * reads, for the same types. Naming, the heap budget and the offset files are described in
 * docs/registry-msggen.md.
 *
 * Exit codes: 0 success, 1 failure (message on stderr), 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hako/error.h"
#include "hako/msg.h"
#include "hako/pdu.h"
#include "hako/pdudef.h"
#include "hako_cli.h"

#ifndef HAKO_VERSION
#define HAKO_VERSION "unknown"
#endif

/* Heap bytes given to a type with variable arrays when neither --heap-budget nor a pdudef
 * says how big its PDU is. */
#define DEFAULT_HEAP_BUDGET 4096u
/* Total PDU size must fit the uint32 total_size of the meta header (and its int32 offsets). */
#define PDU_SIZE_MAX 0x7fffffffu

struct budget {
	char type[HAKO_MSG_FULL_MAX];
	uint64_t value;
	int is_pdu_size; /* from a pdudef: value is the whole PDU size, not the heap budget */
	const char *origin;
};

struct gen {
	hako_msg_registry_t *reg;
	const char *out_dir;
	struct budget *budgets;
	size_t budget_count;
	const hako_msg_type_t **types; /* to generate, sorted by full name */
	size_t type_count;
	size_t type_cap;
	char **names; /* every type on the search path, for the alias rule */
	size_t name_count;
};

static void errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void errf(const char *fmt, ...)
{
	va_list ap;
	fputs("hako-msggen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void print_error(const hako_error_t *err)
{
	char msg[1200];
	errf("%s", hako_error_format(err, msg, sizeof(msg)));
}

/* ---- names ---- */

/* C and C++ keywords: a field with one of these names gets a '_' appended as a member name. */
static const char *const reserved_words[] = {
    "alignas", "alignof",   "and",    "asm",      "auto",      "bool",     "break",    "case",
    "catch",   "char",      "class",  "const",    "constexpr", "continue", "default",  "delete",
    "do",      "double",    "else",   "enum",     "explicit",  "export",   "extern",   "false",
    "float",   "for",       "friend", "goto",     "if",        "inline",   "int",      "long",
    "mutable", "namespace", "new",    "noexcept", "not",       "nullptr",  "operator", "or",
    "private", "protected", "public", "register", "restrict",  "return",   "short",    "signed",
    "sizeof",  "static",    "struct", "switch",   "template",  "this",     "throw",    "true",
    "try",     "typedef",   "typeid", "typename", "union",     "unsigned", "using",    "virtual",
    "void",    "volatile",  "while",  "xor",
};

static const char *member_name(const char *field, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(reserved_words) / sizeof(reserved_words[0]); i++) {
		if (strcmp(field, reserved_words[i]) == 0) {
			snprintf(buf, len, "%s_", field);
			return buf;
		}
	}
	snprintf(buf, len, "%s", field);
	return buf;
}

/* "geometry_msgs", "Twist" -> "GEOMETRY_MSGS_TWIST" */
static const char *macro_name(const hako_msg_type_t *t, char *buf, size_t len)
{
	snprintf(buf, len, "%s_%s", t->pkg, t->name);
	for (char *p = buf; *p != '\0'; p++) {
		if (*p >= 'a' && *p <= 'z') {
			*p = (char)(*p - 'a' + 'A');
		} else if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) {
			*p = '_';
		}
	}
	return buf;
}

/* The struct and helper stem: "geometry_msgs_Twist" (Hako_<stem>, hako_pdu_<stem>_...). */
static const char *stem(const hako_msg_type_t *t, char *buf, size_t len)
{
	snprintf(buf, len, "%s_%s", t->pkg, t->name);
	return buf;
}

/* Hako_<Type> is defined only when no other package on the search path (or among the
 * generated types) has a type of that name. */
static int short_name_unique(const struct gen *g, const hako_msg_type_t *t)
{
	for (size_t i = 0; i < g->name_count; i++) {
		const char *slash = strchr(g->names[i], '/');
		const char *name = slash != NULL ? slash + 1 : g->names[i];
		if (strcmp(name, t->name) == 0 && strcmp(g->names[i], t->full_name) != 0) {
			return 0;
		}
	}
	for (size_t i = 0; i < g->type_count; i++) {
		if (g->types[i] != t && strcmp(g->types[i]->name, t->name) == 0) {
			return 0;
		}
	}
	return 1;
}

/* ---- the set of types ---- */

static int add_type(struct gen *g, const hako_msg_type_t *t)
{
	for (size_t i = 0; i < g->type_count; i++) {
		if (g->types[i] == t || strcmp(g->types[i]->full_name, t->full_name) == 0) {
			return 0;
		}
	}
	if (g->type_count == g->type_cap) {
		size_t cap = g->type_cap == 0 ? 64 : g->type_cap * 2;
		const hako_msg_type_t **n = realloc(g->types, cap * sizeof(*n));
		if (n == NULL) {
			errf("out of memory");
			return 1;
		}
		g->types = n;
		g->type_cap = cap;
	}
	g->types[g->type_count++] = t;
	for (size_t i = 0; i < t->field_count; i++) {
		if (t->fields[i].kind == HAKO_MSG_STRUCT && add_type(g, t->fields[i].type) != 0) {
			return 1;
		}
	}
	return 0;
}

static int request(struct gen *g, const char *full_name)
{
	const hako_msg_type_t *t;
	hako_error_t err;
	hako_error_clear(&err);
	int r = hako_msg_registry_get(g->reg, full_name, &t, &err);
	if (r != 0) {
		if (err.message[0] != '\0') {
			print_error(&err);
		} else {
			errf("%s: %s", full_name, hako_strerror(r));
		}
		return 1;
	}
	return add_type(g, t);
}

static int cmp_type(const void *a, const void *b)
{
	const hako_msg_type_t *const *x = a, *const *y = b;
	return strcmp((*x)->full_name, (*y)->full_name);
}

/* ---- heap budgets ---- */

static struct budget *find_budget(struct gen *g, const char *type, int is_pdu_size)
{
	for (size_t i = 0; i < g->budget_count; i++) {
		if (g->budgets[i].is_pdu_size == is_pdu_size &&
		    strcmp(g->budgets[i].type, type) == 0) {
			return &g->budgets[i];
		}
	}
	return NULL;
}

static int add_budget(struct gen *g, const char *type, uint64_t value, int is_pdu_size,
                      const char *origin)
{
	struct budget *b = find_budget(g, type, is_pdu_size);
	if (b != NULL) {
		/* Several channels of one type: the header's size must hold the largest. */
		if (value > b->value) {
			b->value = value;
			b->origin = origin;
		}
		return 0;
	}
	b = realloc(g->budgets, (g->budget_count + 1) * sizeof(*b));
	if (b == NULL) {
		errf("out of memory");
		return 1;
	}
	g->budgets = b;
	b = &g->budgets[g->budget_count++];
	snprintf(b->type, sizeof(b->type), "%s", type);
	b->value = value;
	b->is_pdu_size = is_pdu_size;
	b->origin = origin;
	return 0;
}

static int parse_heap_budget(struct gen *g, const char *arg)
{
	const char *eq = strrchr(arg, '=');
	if (eq == NULL || eq == arg || (size_t)(eq - arg) >= HAKO_MSG_FULL_MAX ||
	    strchr(arg, '/') == NULL || strchr(arg, '/') > eq) {
		return hako_cli_usage_error(NULL, "--heap-budget: '%s' is not PKG/TYPE=BYTES", arg);
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(eq + 1, &end, 10);
	if (errno != 0 || end == eq + 1 || *end != '\0' || eq[1] == '-' || v > PDU_SIZE_MAX) {
		return hako_cli_usage_error(NULL, "--heap-budget: '%s' is not a byte count (0..%u)",
		                            eq + 1, PDU_SIZE_MAX);
	}
	char type[HAKO_MSG_FULL_MAX];
	snprintf(type, sizeof(type), "%.*s", (int)(eq - arg), arg);
	return add_budget(g, type, v, 0, "--heap-budget") != 0 ? 1 : -1;
}

/* The PDU size of t as the header states it; 1 with a message if the budget does not fit. */
static int pdu_size(struct gen *g, const hako_msg_type_t *t, uint64_t *heap, uint64_t *total)
{
	uint64_t fixed = hako_msg_pdu_fixed_size(t);
	const struct budget *b = find_budget(g, t->full_name, 0);
	if (b != NULL) {
		*heap = b->value;
	} else if ((b = find_budget(g, t->full_name, 1)) != NULL) {
		if (b->value < fixed) {
			errf("%s: pdu_size %" PRIu64
			     " of %s is smaller than its fixed part (%" PRIu64
			     " bytes: 24 meta + base rounded up to 8)",
			     b->origin, b->value, t->full_name, fixed);
			return 1;
		}
		*heap = b->value - fixed;
	} else {
		*heap = t->has_varray ? DEFAULT_HEAP_BUDGET : 0;
	}
	*total = fixed + *heap;
	if (*total > PDU_SIZE_MAX) {
		errf("%s: PDU size %" PRIu64 " is larger than the format allows (%u)", t->full_name,
		     *total, PDU_SIZE_MAX);
		return 1;
	}
	return 0;
}

static int load_pdudef(struct gen *g, const char *path, int want_types)
{
	hako_pdudef_t *def;
	hako_error_t err;
	hako_error_clear(&err);
	if (hako_pdudef_load(path, &def, &err) != 0) {
		print_error(&err);
		return 1;
	}
	int rc = 0;
	for (size_t i = 0; i < def->robot_count && rc == 0; i++) {
		const hako_pdudef_robot_t *robot = &def->robots[i];
		for (size_t j = 0; j < robot->pdu_count && rc == 0; j++) {
			const hako_pdudef_pdu_t *p = &robot->pdus[j];
			rc = add_budget(g, p->type, p->pdu_size, 1, path);
			if (rc == 0 && want_types) {
				rc = request(g, p->type);
			}
		}
	}
	hako_pdudef_free(def);
	return rc;
}

/* ---- writing ---- */

static int make_dir(const char *path)
{
	char buf[1024];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errf("%s: path too long", path);
		return 1;
	}
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
				errf("cannot create %s: %s", buf, strerror(errno));
				return 1;
			}
			*p = c;
			if (c == '\0') {
				return 0;
			}
		}
	}
}

struct out {
	FILE *f;
	char path[1024];
};

static int out_open(struct out *o, const char *path)
{
	snprintf(o->path, sizeof(o->path), "%s", path);
	o->f = fopen(path, "w");
	if (o->f == NULL) {
		errf("cannot write %s: %s", path, strerror(errno));
		return 1;
	}
	return 0;
}

static int out_close(struct out *o)
{
	int bad = ferror(o->f);
	if (fclose(o->f) != 0 || bad) {
		errf("cannot write %s: %s", o->path, strerror(errno));
		return 1;
	}
	return 0;
}

static const char *const pdu_types_header =
    "/* Generated by hako-msggen: do not edit.\n"
    " *\n"
    " * What the generated PDU headers hako/msgs/<pkg>/<Type>.h share. A PDU is\n"
    " * [24-byte meta][base: the struct][heap: the elements of the variable arrays].\n"
    " */\n"
    "#ifndef HAKO_MSGS_HAKO_PDU_TYPES_H\n"
    "#define HAKO_MSGS_HAKO_PDU_TYPES_H\n"
    "\n"
    "#include <stddef.h>\n"
    "#include <stdint.h>\n"
    "#include <string.h>\n"
    "\n"
    "#include \"hako/pdu.h\"\n"
    "\n"
    "#ifdef __cplusplus\n"
    "#define HAKO_PDU_STATIC_ASSERT(cond, msg) static_assert(cond, msg)\n"
    "#else\n"
    "#define HAKO_PDU_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)\n"
    "#endif\n"
    "\n"
    "/* A variable array in the base: its length in elements and the offset of its first\n"
    " * element from the heap start. */\n"
    "typedef struct hako_varray_ref {\n"
    "\tint32_t len;\n"
    "\tint32_t off;\n"
    "} hako_varray_ref_t;\n"
    "HAKO_PDU_STATIC_ASSERT(sizeof(hako_varray_ref_t) == 8, \"variable array reference\");\n"
    "\n"
    "/* One element of a string[] array: a NUL-terminated 128-byte slot. */\n"
    "typedef char hako_pdu_string_t[128];\n"
    "\n"
    "/* Start a PDU whose base struct is base_size bytes in pdu (cap bytes): meta header with\n"
    " * epoch 0 and an empty heap, base zeroed. 0, HAKO_EINVAL (pdu NULL, cap > 0) or\n"
    " * HAKO_ETOOBIG (cap too small; pdu NULL with cap 0 asks for that answer). */\n"
    "static inline int hako_pdu_gen_init(void *pdu, size_t cap, uint32_t base_size)\n"
    "{\n"
    "\tuint32_t heap_off = HAKO_PDU_META_SIZE + ((base_size + 7u) & ~7u);\n"
    "\tuint32_t meta[5] = {HAKO_PDU_MAGIC, HAKO_PDU_VERSION, HAKO_PDU_META_SIZE, heap_off,\n"
    "\t                    heap_off};\n"
    "\tif (pdu == NULL && cap > 0) {\n"
    "\t\treturn HAKO_EINVAL;\n"
    "\t}\n"
    "\tif (cap < heap_off) {\n"
    "\t\treturn HAKO_ETOOBIG;\n"
    "\t}\n"
    "\tmemset(pdu, 0, heap_off);\n"
    "\tmemcpy(pdu, meta, sizeof(meta));\n"
    "\treturn 0;\n"
    "}\n"
    "\n"
    "/* A PDU of a type without variable arrays or strings is well formed when its meta header\n"
    " * is: magic, version, base offset 24, heap offset past the fields of the base (24 +\n"
    " * base_end, where Hakoniwa's Python writer puts it, or more: hako and Hakoniwa's C++ put\n"
    " * it at 24 + base_size rounded up to 8), total size between the heap offset and len. This\n"
    " * is hako_pdu_validate for such types, inline; and len must hold the whole struct, so that\n"
    " * the caller may copy it (tail padding included) out of a buffer of len bytes. */\n"
    "static inline int hako_pdu_gen_check_fixed(const void *pdu, size_t len, uint32_t base_size,\n"
    "                                           uint32_t base_end)\n"
    "{\n"
    "\tuint32_t meta[5];\n"
    "\tif (pdu == NULL || len < HAKO_PDU_META_SIZE + (size_t)base_size) {\n"
    "\t\treturn 0;\n"
    "\t}\n"
    "\tmemcpy(meta, pdu, sizeof(meta));\n"
    "\treturn meta[0] == HAKO_PDU_MAGIC && meta[1] == HAKO_PDU_VERSION &&\n"
    "\t       meta[2] == HAKO_PDU_META_SIZE && meta[3] >= HAKO_PDU_META_SIZE + base_end &&\n"
    "\t       meta[4] >= meta[3] && meta[4] <= len;\n"
    "}\n"
    "\n"
    "/* hako_pdu_gen_init, and w set up as hako_pdu_writer_init sets it up for the same type,\n"
    " * so that hako_pdu_writer_varray and hako_pdu_writer_finish (hako/pdu.h) work on it. */\n"
    "static inline int hako_pdu_gen_writer_init(hako_pdu_writer_t *w, void *pdu, size_t cap,\n"
    "                                           uint32_t base_size)\n"
    "{\n"
    "\tint r = hako_pdu_gen_init(pdu, cap, base_size);\n"
    "\tmemset(w, 0, sizeof(*w));\n"
    "\tw->buf = (uint8_t *)pdu;\n"
    "\tw->cap = cap;\n"
    "\tw->heap_off = HAKO_PDU_META_SIZE + ((base_size + 7u) & ~7u);\n"
    "\tw->needed = w->heap_off;\n"
    "\tw->used = r == 0 ? w->heap_off : 0;\n"
    "\tw->error = r;\n"
    "\treturn r;\n"
    "}\n"
    "\n"
    "#endif\n";

/* The C type of one element of field f. */
static const char *elem_ctype(const hako_msg_field_t *f, char *buf, size_t len)
{
	switch (f->kind) {
	case HAKO_MSG_BOOL: return "int32_t"; /* Hakoniwa's Hako_bool is an int */
	case HAKO_MSG_BYTE:
	case HAKO_MSG_CHAR:
	case HAKO_MSG_UINT8: return "uint8_t";
	case HAKO_MSG_INT8: return "int8_t";
	case HAKO_MSG_INT16: return "int16_t";
	case HAKO_MSG_UINT16: return "uint16_t";
	case HAKO_MSG_INT32: return "int32_t";
	case HAKO_MSG_UINT32: return "uint32_t";
	case HAKO_MSG_INT64: return "int64_t";
	case HAKO_MSG_UINT64: return "uint64_t";
	case HAKO_MSG_FLOAT32: return "float";
	case HAKO_MSG_FLOAT64: return "double";
	case HAKO_MSG_STRING: return "hako_pdu_string_t";
	case HAKO_MSG_STRUCT: {
		char s[2 * HAKO_MSG_NAME_MAX];
		snprintf(buf, len, "Hako_%s", stem(f->type, s, sizeof(s)));
		return buf;
	}
	}
	return "uint8_t";
}

/* A field the base holds no bytes of (a nested type without fields, T[0]): no member. */
static int has_member(const hako_msg_field_t *f)
{
	return f->size > 0;
}

static void write_member(FILE *o, const hako_msg_field_t *f)
{
	char ct[2 * HAKO_MSG_NAME_MAX + 8], mn[HAKO_MSG_NAME_MAX + 2];
	member_name(f->name, mn, sizeof(mn));
	if (!has_member(f)) {
		fprintf(o, "\t/* %s: no bytes in the base (a type without fields) */\n", f->name);
		return;
	}
	if (f->form == HAKO_MSG_VARRAY) {
		fprintf(o, "\thako_varray_ref_t %s; /* %s[]: elements in the heap */\n", mn,
		        f->kind == HAKO_MSG_STRUCT ? f->type->full_name
		                                   : hako_msg_kind_name(f->kind));
		return;
	}
	const char *t = f->kind == HAKO_MSG_STRING ? "char" : elem_ctype(f, ct, sizeof(ct));
	fprintf(o, "\t%s %s", t, mn);
	if (f->form == HAKO_MSG_ARRAY) {
		fprintf(o, "[%" PRIu32 "]", f->count);
	}
	if (f->kind == HAKO_MSG_STRING) {
		fprintf(o, "[%d]", HAKO_MSG_STRING_SIZE);
	}
	fprintf(o, ";");
	if (f->kind == HAKO_MSG_BOOL) {
		fprintf(o, " /* bool */");
	} else if (f->kind == HAKO_MSG_BYTE || f->kind == HAKO_MSG_CHAR) {
		fprintf(o, " /* %s */", hako_msg_kind_name(f->kind));
	}
	fputc('\n', o);
}

/* Accessors of the variable array f of type t (Hako_<s>). */
static void write_varray_helpers(FILE *o, const char *s, const hako_msg_field_t *f)
{
	char ct[2 * HAKO_MSG_NAME_MAX + 8], mn[HAKO_MSG_NAME_MAX + 2];
	const char *e = elem_ctype(f, ct, sizeof(ct));
	member_name(f->name, mn, sizeof(mn));
	fprintf(
	    o,
	    "\n/* %s[] of `obj`, a Hako_%s anywhere in the PDU (nested, in an array):\n"
	    " * its elements, or NULL (*count = 0) if the reference lies outside the PDU.\n"
	    " * The heap is packed: the elements are aligned only if what precedes them is. */\n"
	    "static inline const %s *\n"
	    "hako_pdu_%s_%s_of(const void *pdu, size_t len, const Hako_%s *obj, uint32_t *count)\n"
	    "{\n"
	    "\treturn (const %s *)hako_pdu_varray(pdu, len, &obj->%s, (uint32_t)sizeof(%s),\n"
	    "\t                                   count);\n"
	    "}\n\n",
	    f->name, s, e, s, mn, s, e, mn, e);
	fprintf(o,
	        "/* %s[] of the PDU's base struct. */\n"
	        "static inline const %s *\n"
	        "hako_pdu_%s_%s(const void *pdu, size_t len, uint32_t *count)\n"
	        "{\n"
	        "\tif (pdu == NULL || len < HAKO_PDU_META_SIZE + sizeof(Hako_%s)) {\n"
	        "\t\t*count = 0;\n"
	        "\t\treturn NULL;\n"
	        "\t}\n"
	        "\treturn hako_pdu_%s_%s_of(\n"
	        "\t    pdu, len, (const Hako_%s *)((const uint8_t *)pdu + HAKO_PDU_META_SIZE), "
	        "count);\n"
	        "}\n\n",
	        f->name, e, s, mn, s, s, mn, s);
	fprintf(
	    o,
	    "/* Give %s[] of `obj` (inside the PDU being written) count zeroed elements at the\n"
	    " * end of the heap; NULL after an error (w->error). */\n"
	    "static inline %s *\n"
	    "hako_pdu_%s_%s_alloc(hako_pdu_writer_t *w, Hako_%s *obj, uint32_t count)\n"
	    "{\n"
	    "\treturn (%s *)hako_pdu_writer_varray(w, &obj->%s, count, (uint32_t)sizeof(%s));\n"
	    "}\n",
	    f->name, e, s, mn, s, e, mn, e);
}

/* A string field at any depth (fixed arrays and nested structs included). */
static int has_string(const hako_msg_type_t *t)
{
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		if (f->kind == HAKO_MSG_STRING ||
		    (f->kind == HAKO_MSG_STRUCT && f->type != NULL && has_string(f->type))) {
			return 1;
		}
	}
	return 0;
}

static int write_header(struct gen *g, const hako_msg_type_t *t)
{
	char s[2 * HAKO_MSG_NAME_MAX], m[2 * HAKO_MSG_NAME_MAX], path[1024];
	uint64_t heap, total;
	if (pdu_size(g, t, &heap, &total) != 0) {
		return 1;
	}
	stem(t, s, sizeof(s));
	macro_name(t, m, sizeof(m));
	snprintf(path, sizeof(path), "%s/%s", g->out_dir, t->pkg);
	if (make_dir(path) != 0) {
		return 1;
	}
	snprintf(path, sizeof(path), "%s/%s/%s.h", g->out_dir, t->pkg, t->name);
	struct out out;
	if (out_open(&out, path) != 0) {
		return 1;
	}
	FILE *o = out.f;
	int empty = t->size == 0;
	fprintf(o,
	        "/* Generated by hako-msggen from %s: do not edit.\n"
	        " *\n"
	        " * %s: base struct %" PRIu32 " bytes, align %" PRIu32 ".\n"
	        " * PDU: 24-byte meta + base rounded up to 8 + %" PRIu64 " heap bytes = %" PRIu64
	        " bytes.\n",
	        t->path, t->full_name, t->size, t->align, heap, total);
	if (empty) {
		fprintf(o,
		        " * The type has no fields: ISO C has no empty struct, so there is no\n"
		        " * Hako_%s; its PDU is the meta header alone.\n",
		        s);
	}
	fprintf(o,
	        " */\n"
	        "#ifndef HAKO_MSGS_%s_H\n"
	        "#define HAKO_MSGS_%s_H\n\n"
	        "#include <stddef.h>\n"
	        "#include <stdint.h>\n\n"
	        "#include \"../hako_pdu_types.h\"\n",
	        m, m);
	/* Nested types, each once, in name order (g->types is sorted and holds them all). */
	for (size_t i = 0; i < g->type_count; i++) {
		const hako_msg_type_t *n = g->types[i];
		for (size_t j = 0; j < t->field_count && n->size > 0; j++) {
			if (t->fields[j].kind == HAKO_MSG_STRUCT && t->fields[j].type == n) {
				fprintf(o, "#include \"../%s/%s.h\"\n", n->pkg, n->name);
				break;
			}
		}
	}
	fprintf(o,
	        "\n#define HAKO_MSG_NAME_%s \"%s\"\n"
	        "/* Heap bytes in HAKO_PDU_SIZE_%s, and the whole PDU size. */\n"
	        "#define HAKO_PDU_HEAP_BUDGET_%s %" PRIu64 "u\n"
	        "#define HAKO_PDU_SIZE_%s %" PRIu64 "u\n",
	        m, t->full_name, m, m, heap, m, total);

	if (empty) {
		fprintf(o,
		        "\n/* Start an (empty) PDU of %s: the meta header. */\n"
		        "static inline int hako_pdu_%s_init(void *pdu, size_t cap)\n"
		        "{\n"
		        "\treturn hako_pdu_gen_init(pdu, cap, 0);\n"
		        "}\n\n#endif\n",
		        t->full_name, s);
		return out_close(&out);
	}

	fprintf(o, "\ntypedef struct Hako_%s {\n", s);
	int members = 0;
	for (size_t i = 0; i < t->field_count; i++) {
		write_member(o, &t->fields[i]);
		members += has_member(&t->fields[i]);
	}
	if (members == 0) {
		/* Fields that all take no bytes, yet a size: keep the size the layout says. */
		fprintf(o, "\tuint8_t hako_pad_[%" PRIu32 "];\n", t->size);
	}
	fprintf(o, "} Hako_%s;\n", s);
	if (short_name_unique(g, t)) {
		fprintf(o, "typedef Hako_%s Hako_%s;\n", s, t->name);
	}

	fprintf(o, "\n/* The layout engine's layout: a compiler that disagrees stops here. */\n");
	fprintf(o, "HAKO_PDU_STATIC_ASSERT(sizeof(Hako_%s) == %" PRIu32 ",\n\t\"%s: size\");\n", s,
	        t->size, t->full_name);
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		char mn[HAKO_MSG_NAME_MAX + 2];
		if (!has_member(f)) {
			continue;
		}
		fprintf(o,
		        "HAKO_PDU_STATIC_ASSERT(offsetof(Hako_%s, %s) == %" PRIu32
		        ",\n\t\"%s: offset of %s\");\n",
		        s, member_name(f->name, mn, sizeof(mn)), f->offset, t->full_name, f->name);
	}

	fprintf(o,
	        "\n/* The base struct of a PDU of %s. */\n"
	        "static inline Hako_%s *hako_pdu_%s_base(void *pdu)\n"
	        "{\n"
	        "\treturn (Hako_%s *)((uint8_t *)pdu + HAKO_PDU_META_SIZE);\n"
	        "}\n\n"
	        "/* Start a PDU of %s in pdu (cap bytes): meta header\n"
	        " * (epoch 0, empty heap), zeroed base. 0, HAKO_EINVAL or HAKO_ETOOBIG. */\n"
	        "static inline int hako_pdu_%s_init(void *pdu, size_t cap)\n"
	        "{\n"
	        "\treturn hako_pdu_gen_init(pdu, cap, (uint32_t)sizeof(Hako_%s));\n"
	        "}\n",
	        t->full_name, s, s, s, t->full_name, s, s);
	if (!t->has_varray && !has_string(t)) {
		fprintf(
		    o,
		    "\n/* The base struct of a PDU of %s in a buffer of len bytes, NULL unless\n"
		    " * the PDU is well formed (for this type, which holds no variable array and "
		    "no\n"
		    " * string, that is what hako_pdu_validate checks) and the buffer holds the\n"
		    " * whole struct. */\n"
		    "static inline const Hako_%s *hako_pdu_%s_get(const void *pdu, size_t len)\n"
		    "{\n"
		    "\treturn hako_pdu_gen_check_fixed(pdu, len, (uint32_t)sizeof(Hako_%s), "
		    "%" PRIu32 "u)\n"
		    "\t           ? (const Hako_%s *)((const uint8_t *)pdu + HAKO_PDU_META_SIZE)\n"
		    "\t           : NULL;\n"
		    "}\n",
		    t->full_name, s, s, s, hako_msg_data_end(t), s);
	}
	if (t->has_varray) {
		fprintf(
		    o,
		    "\n/* Start a PDU as hako_pdu_%s_init does, and a writer for its\n"
		    " * variable arrays: fill them with the _alloc helpers (an array of structs\n"
		    " * before its elements' arrays), then hako_pdu_writer_finish(w, &len). */\n"
		    "static inline int\n"
		    "hako_pdu_%s_writer_init(hako_pdu_writer_t *w, void *pdu, size_t cap)\n"
		    "{\n"
		    "\treturn hako_pdu_gen_writer_init(w, pdu, cap, (uint32_t)sizeof(Hako_%s));\n"
		    "}\n",
		    s, s, s);
	}
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		if (f->form == HAKO_MSG_VARRAY &&
		    (f->kind != HAKO_MSG_STRUCT || f->type->size > 0)) {
			write_varray_helpers(o, s, f);
		}
	}
	fprintf(o, "\n#endif\n");
	return out_close(&out);
}

static int write_pdu_types(struct gen *g)
{
	char path[1024];
	struct out out;
	if (make_dir(g->out_dir) != 0) {
		return 1;
	}
	snprintf(path, sizeof(path), "%s/hako_pdu_types.h", g->out_dir);
	if (out_open(&out, path) != 0) {
		return 1;
	}
	fputs(pdu_types_header, out.f);
	return out_close(&out);
}

/* A C file that includes every generated header and tabulates what the compiler made of the
 * structs; test/registry/test_layout_gcc.c compares it with the layout engine. */
static int write_layout_check(struct gen *g, const char *path)
{
	struct out out;
	if (out_open(&out, path) != 0) {
		return 1;
	}
	FILE *o = out.f;
	fprintf(o, "/* Generated by hako-msggen --layout-check: do not edit. */\n"
	           "#include <stddef.h>\n\n");
	for (size_t i = 0; i < g->type_count; i++) {
		fprintf(o, "#include \"%s/%s.h\"\n", g->types[i]->pkg, g->types[i]->name);
	}
	fprintf(
	    o,
	    "\n/* field == NULL: the struct itself, its size and alignment (0 and 0: no struct,\n"
	    " * the type has no fields); else one member: its offset and size. */\n"
	    "struct hako_layout_row {\n"
	    "\tconst char *type;\n"
	    "\tconst char *field;\n"
	    "\tsize_t offset;\n"
	    "\tsize_t size;\n"
	    "\tsize_t align;\n"
	    "};\n\n"
	    "const struct hako_layout_row hako_layout_rows[] = {\n");
	size_t rows = 0;
	for (size_t i = 0; i < g->type_count; i++) {
		const hako_msg_type_t *t = g->types[i];
		char s[2 * HAKO_MSG_NAME_MAX];
		stem(t, s, sizeof(s));
		if (t->size == 0) {
			fprintf(o, "    {\"%s\", NULL, 0, 0, 0},\n", t->full_name);
			rows++;
			continue;
		}
		fprintf(o, "    {\"%s\", NULL, 0, sizeof(Hako_%s), _Alignof(Hako_%s)},\n",
		        t->full_name, s, s);
		rows++;
		for (size_t j = 0; j < t->field_count; j++) {
			const hako_msg_field_t *f = &t->fields[j];
			char mn[HAKO_MSG_NAME_MAX + 2];
			if (!has_member(f)) {
				continue;
			}
			member_name(f->name, mn, sizeof(mn));
			fprintf(o,
			        "    {\"%s\", \"%s\", offsetof(Hako_%s, %s), sizeof(((Hako_%s "
			        "*)0)->%s), "
			        "0},\n",
			        t->full_name, f->name, s, mn, s, mn);
			rows++;
		}
	}
	fprintf(o, "};\n\nconst size_t hako_layout_row_count = %zu;\n", rows);
	return out_close(&out);
}

/* ---- offset files ---- */

/* The type column of an offset file: a primitive's name as the .msg writes it (byte and char
 * stay byte and char, as in Hakoniwa's files), a nested type's bare name when it is in the
 * package of the type described, else pkg/Type. */
static const char *offset_type(const hako_msg_type_t *t, const hako_msg_field_t *f)
{
	if (f->kind != HAKO_MSG_STRUCT) {
		return hako_msg_kind_name(f->kind);
	}
	return strcmp(f->type->pkg, t->pkg) == 0 ? f->type->name : f->type->full_name;
}

/* DIR/<pkg>/<Type>.offset, the layout file hakoniwa-pdu-python's PduManager converts PDUs
 * with: one line per field, in .msg order. */
static int write_offsets(const char *dir, const hako_msg_type_t *t)
{
	char path[1024];
	if (snprintf(path, sizeof(path), "%s/%s/%s.offset", dir, t->pkg, t->name) >=
	    (int)sizeof(path)) {
		errf("%s/%s/%s.offset: path too long", dir, t->pkg, t->name);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, t->pkg);
	if (make_dir(path) != 0) {
		return 1;
	}
	snprintf(path, sizeof(path), "%s/%s/%s.offset", dir, t->pkg, t->name);
	struct out out;
	if (out_open(&out, path) != 0) {
		return 1;
	}
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		const char *kind = f->kind == HAKO_MSG_STRUCT ? "struct" : "primitive";
		const char *type = offset_type(t, f);
		switch (f->form) {
		case HAKO_MSG_SINGLE:
			fprintf(out.f, "single:%s:%s:%s:%" PRIu32 ":%" PRIu32 "\n", kind, f->name,
			        type, f->offset, f->size);
			break;
		case HAKO_MSG_ARRAY:
			fprintf(out.f, "array:%s:%s:%s:%" PRIu32 ":%" PRIu32 ":%" PRIu32 "\n", kind,
			        f->name, type, f->offset, f->size, f->count);
			break;
		case HAKO_MSG_VARRAY:
			/* The size column is one element's; the last is what the base holds. */
			fprintf(out.f, "varray:%s:%s:%s:%" PRIu32 ":%" PRIu32 ":%" PRIu32 "\n",
			        kind, f->name, type, f->offset, f->elem_size, f->size);
			break;
		}
	}
	return out_close(&out);
}

/* ---- main ---- */

static void gen_free(struct gen *g)
{
	hako_msg_names_free(g->names, g->name_count);
	free(g->types);
	free(g->budgets);
	hako_msg_registry_destroy(g->reg);
}

static int run(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"out", required_argument, NULL, 'o'},
	                                         {"heap-budget", required_argument, NULL, 'b'},
	                                         {"pdudef", required_argument, NULL, 'p'},
	                                         {"all-builtin", no_argument, NULL, 'a'},
	                                         {"layout-check", required_argument, NULL, 'l'},
	                                         {"no-headers", no_argument, NULL, 'n'},
	                                         {"offsets", required_argument, NULL, 'f'},
	                                         HAKO_CLI_HELP_VERSION,
	                                         {NULL, 0, NULL, 0}};
	struct gen g;
	memset(&g, 0, sizeof(g));
	g.out_dir = ".";
	const char *pdudef = NULL, *layout = NULL, *offsets = NULL;
	const char **dirs = calloc((size_t)argc, sizeof(*dirs));
	size_t ndirs = 0;
	int all = 0, headers = 1, out_given = 0, c, rc = 1;
	if (dirs == NULL) {
		errf("out of memory");
		return 1;
	}
	while ((c = getopt_long(argc, argv, ":I:o:hV", longopts, NULL)) != -1) {
		int r = -1;
		switch (c) {
		case 'I': dirs[ndirs++] = optarg; break;
		case 'o':
			g.out_dir = optarg;
			out_given = 1;
			break;
		case 'b': r = parse_heap_budget(&g, optarg); break;
		case 'p': pdudef = optarg; break;
		case 'a': all = 1; break;
		case 'l': layout = optarg; break;
		case 'n': headers = 0; break;
		case 'f': offsets = optarg; break;
		default: r = hako_cli_common_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			free(dirs);
			free(g.budgets);
			return r;
		}
	}
	/* Offset files alone are what a Python user asks for: headers in the current folder would
	 * be litter. */
	if (offsets != NULL && !out_given) {
		headers = 0;
	}
	if (!all && pdudef == NULL && optind >= argc) {
		free(dirs);
		free(g.budgets);
		return hako_cli_usage_error(
		    cmd, "no types: give PKG/TYPE, --all-builtin or --pdudef FILE");
	}

	int r = hako_msg_registry_create(&g.reg);
	if (r != 0) {
		errf("cannot create the type registry: %s", hako_strerror(r));
		goto out;
	}
	/* add_path puts a folder first: add them last to first so that the first -I wins. */
	for (size_t i = ndirs; i-- > 0;) {
		if ((r = hako_msg_registry_add_path(g.reg, dirs[i])) != 0) {
			errf("-I %s: %s", dirs[i], hako_strerror(r));
			goto out;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (request(&g, argv[i]) != 0) {
			goto out;
		}
	}
	if (pdudef != NULL && load_pdudef(&g, pdudef, optind >= argc && !all) != 0) {
		goto out;
	}
	for (size_t i = 0; all && i < hako_msg_builtin_count(); i++) {
		const char *pkg, *name;
		char full[HAKO_MSG_FULL_MAX];
		hako_msg_builtin_at(i, &pkg, &name);
		snprintf(full, sizeof(full), "%s/%s", pkg, name);
		if (request(&g, full) != 0) {
			goto out;
		}
	}
	for (size_t i = 0; i < g.budget_count; i++) {
		size_t j = 0;
		while (j < g.type_count && strcmp(g.types[j]->full_name, g.budgets[i].type) != 0) {
			j++;
		}
		if (!g.budgets[i].is_pdu_size && j == g.type_count) {
			errf("--heap-budget %s: not one of the types generated", g.budgets[i].type);
			goto out;
		}
	}
	if ((r = hako_msg_registry_list(g.reg, &g.names, &g.name_count)) != 0) {
		errf("cannot list the types on the search path: %s", hako_strerror(r));
		goto out;
	}
	qsort(g.types, g.type_count, sizeof(g.types[0]), cmp_type);
	if (headers && write_pdu_types(&g) != 0) {
		goto out;
	}
	for (size_t i = 0; i < g.type_count; i++) {
		uint64_t heap, total;
		/* Sizes are checked also without headers: a bad budget is an error either way. */
		if (pdu_size(&g, g.types[i], &heap, &total) != 0 ||
		    (headers && write_header(&g, g.types[i]) != 0)) {
			goto out;
		}
	}
	for (size_t i = 0; offsets != NULL && i < g.type_count; i++) {
		if (write_offsets(offsets, g.types[i]) != 0) {
			goto out;
		}
	}
	if (layout != NULL && write_layout_check(&g, layout) != 0) {
		goto out;
	}
	rc = 0;
out:
	free(dirs);
	gen_free(&g);
	return rc;
}

int main(int argc, char **argv)
{
	static const hako_cli_command_t command = {
	    "hako-msggen",
	    "[-I DIR]... [--out DIR] [--heap-budget PKG/TYPE=BYTES]...\n"
	    "                   [--pdudef FILE] [--all-builtin] [--layout-check FILE]\n"
	    "                   [--no-headers] [--offsets DIR] [PKG/TYPE]...",
	    "",
	    "Write a C header per PDU type (and per type it nests) to DIR/<pkg>/<Type>.h,\n"
	    "plus DIR/hako_pdu_types.h. Types come from the .msg search path: -I folders,\n"
	    "then $HAKO_MSG_PATH, then the built-in packages.",
	    "  -I DIR                      search DIR for <pkg>/<Type>.msg first\n"
	    "  -o, --out DIR               where the headers go (default: ., and none\n"
	    "                              with --offsets unless --out is given)\n"
	    "  --heap-budget PKG/TYPE=N    heap bytes in HAKO_PDU_SIZE_* of that type\n"
	    "  --pdudef FILE               PDU sizes from a pdudef; with no PKG/TYPE given,\n"
	    "                              generate every type it lists\n"
	    "  --all-builtin               generate every built-in type\n"
	    "  --layout-check FILE         write a C file that includes the headers and\n"
	    "                              tabulates the compiler's offsetof/sizeof of\n"
	    "                              every struct (for the layout test)\n"
	    "  --no-headers                write no headers (with --layout-check, for\n"
	    "                              headers generated before)\n"
	    "  --offsets DIR               write DIR/<pkg>/<Type>.offset, the layout files\n"
	    "                              of hakoniwa-pdu-python (HAKO_BINARY_PATH=DIR)\n",
	    run,
	};
	static char epilog[200];
	snprintf(
	    epilog, sizeof(epilog),
	    "Types with variable arrays get a heap budget of %u bytes unless --heap-budget or\n"
	    "the pdudef's pdu_size says otherwise.\n",
	    DEFAULT_HEAP_BUDGET);
	const hako_cli_t cli = {
	    .prog = "hako-msggen",
	    .version = HAKO_VERSION,
	    .commands = &command,
	    .ncommands = 1,
	    .common_options = "  -h, --help                  show this help\n"
	                      "  -V, --version               show the version\n",
	    .epilog = epilog,
	    .single = 1,
	};
	return hako_cli_main(&cli, argc, argv);
}
