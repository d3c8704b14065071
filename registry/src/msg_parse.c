/* The .msg parser: one `<type> <name>` field per line, `#` comments, nothing else. */
#include "msg_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW_MAX 64 /* longest piece of a line quoted in an error */

static const struct primitive {
	const char *name;
	hako_msg_kind_t kind;
} primitives[] = {
    {"bool", HAKO_MSG_BOOL},       {"byte", HAKO_MSG_BYTE},     {"char", HAKO_MSG_CHAR},
    {"int8", HAKO_MSG_INT8},       {"uint8", HAKO_MSG_UINT8},   {"int16", HAKO_MSG_INT16},
    {"uint16", HAKO_MSG_UINT16},   {"int32", HAKO_MSG_INT32},   {"uint32", HAKO_MSG_UINT32},
    {"int64", HAKO_MSG_INT64},     {"uint64", HAKO_MSG_UINT64}, {"float32", HAKO_MSG_FLOAT32},
    {"float64", HAKO_MSG_FLOAT64}, {"string", HAKO_MSG_STRING},
};

/* What people coming from C or ROS 1 write instead of a .msg primitive. */
static const struct hint {
	const char *name;
	const char *use;
} hints[] = {
    {"int", "int32"},
    {"uint", "uint32"},
    {"short", "int16"},
    {"long", "int64"},
    {"float", "float32"},
    {"double", "float64"},
    {"boolean", "bool"},
    {"time", "builtin_interfaces/Time"},
    {"duration", "builtin_interfaces/Duration"},
};

/* The line being parsed. */
struct cursor {
	const char *path;
	hako_error_t *err;
	const char *line_start;
	int line;
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int name_ok_n(const char *s, size_t n)
{
	if (n == 0 || n >= HAKO_MSG_NAME_MAX || !is_alpha(s[0])) {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if (!is_alpha(s[i]) && !is_digit(s[i]) && s[i] != '_') {
			return 0;
		}
	}
	return 1;
}

int hakoi_msg_name_ok(const char *s)
{
	return s != NULL && name_ok_n(s, strnlen(s, HAKO_MSG_NAME_MAX));
}

static int token_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* Columns count characters (UTF-8 continuation bytes do not start one), as in the JSON errors. */
static int column_of(const struct cursor *c, const char *at)
{
	int column = 1;
	for (const char *p = c->line_start; p < at; p++) {
		if (((unsigned char)*p & 0xC0) != 0x80) {
			column++;
		}
	}
	return column;
}

static int fail(const struct cursor *c, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(const struct cursor *c, const char *at, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return hako_error_set(c->err, HAKO_ECONFIG, c->path, c->line, column_of(c, at), "%s", what);
}

static int show_len(size_t n)
{
	return (int)(n < SHOW_MAX ? n : SHOW_MAX);
}

/* The `[...]` part of a type: sets form and count. */
static int parse_array(const struct cursor *c, const char *open, const char *end,
                       hakoi_msg_field_def_t *fd)
{
	const char *close = memchr(open, ']', (size_t)(end - open));
	if (close == NULL) {
		return fail(c, open, "missing ']' after '['");
	}
	if (close + 1 < end) {
		if (close[1] == '[') {
			return fail(c, close + 1, "arrays of arrays are not supported");
		}
		return fail(c, close + 1, "unexpected '%.*s' after ']'",
		            show_len((size_t)(end - close - 1)), close + 1);
	}
	const char *digits = open + 1;
	size_t n = (size_t)(close - digits);
	if (n == 0) {
		fd->form = HAKO_MSG_VARRAY;
		return 0;
	}
	if (digits[0] == '<') {
		return fail(c, digits, "bounded arrays (T[<=N]) are not supported");
	}
	uint32_t count = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(digits[i]) || count >= HAKOI_MSG_ARRAY_MAX) {
			count = 0;
			break;
		}
		count = count * 10 + (uint32_t)(digits[i] - '0');
	}
	if (count == 0 || count >= HAKOI_MSG_ARRAY_MAX) {
		/* Worded as the config loaders word a value out of range. */
		int number =
		    is_digit(digits[0]) || (digits[0] == '-' && n > 1 && is_digit(digits[1]));
		return fail(c, digits, "array size is %s%.*s%s; must be an integer in [1, %u]",
		            number ? "" : "\"", show_len(n), digits, number ? "" : "\"",
		            HAKOI_MSG_ARRAY_MAX - 1);
	}
	fd->form = HAKO_MSG_ARRAY;
	fd->count = count;
	return 0;
}

/* A nested type: `pkg/Type`, `pkg/msg/Type` (as ROS 2 tools print it) or `Type` of pkg. */
static int parse_nested(const struct cursor *c, const char *pkg, const char *s, size_t n,
                        hakoi_msg_field_def_t *fd)
{
	const char *slash = memchr(s, '/', n);
	const char *tpkg = pkg;
	size_t tpkg_len = strlen(pkg);
	const char *tname = s;
	size_t tname_len = n;
	if (slash != NULL) {
		tpkg = s;
		tpkg_len = (size_t)(slash - s);
		tname = slash + 1;
		tname_len = n - tpkg_len - 1;
		if (tname_len > 4 && memcmp(tname, "msg/", 4) == 0) {
			tname += 4;
			tname_len -= 4;
		}
		if (!name_ok_n(tpkg, tpkg_len)) {
			return fail(c, s, "bad package name '%.*s' in type '%.*s'",
			            show_len(tpkg_len), tpkg, show_len(n), s);
		}
		if (!name_ok_n(tname, tname_len)) {
			return fail(c, tname, "bad type name '%.*s' in type '%.*s'",
			            show_len(tname_len), tname, show_len(n), s);
		}
	} else {
		if (s[0] >= 'a' && s[0] <= 'z') {
			/* a type of the same package is CamelCase; this is a misspelt primitive */
			for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
				if (token_is(s, n, hints[i].name)) {
					return fail(c, s, "unknown primitive type '%s' (use %s)",
					            hints[i].name, hints[i].use);
				}
			}
			return fail(c, s, "unknown primitive type '%.*s'", show_len(n), s);
		}
		if (!name_ok_n(s, n)) {
			return fail(c, s, "bad type '%.*s'", show_len(n), s);
		}
		if (token_is(s, n, "Header")) {
			/* ROS 1 rule (genmsg): a bare Header is std_msgs/Header in every package */
			tpkg = "std_msgs";
			tpkg_len = strlen(tpkg);
		}
	}
	fd->kind = HAKO_MSG_STRUCT;
	memcpy(fd->type_pkg, tpkg, tpkg_len);
	fd->type_pkg[tpkg_len] = '\0';
	memcpy(fd->type_name, tname, tname_len);
	fd->type_name[tname_len] = '\0';
	return 0;
}

/* The type token [s, end): base type, then an optional array suffix. */
static int parse_type(const struct cursor *c, const char *pkg, const char *s, const char *end,
                      hakoi_msg_field_def_t *fd)
{
	const char *open = memchr(s, '[', (size_t)(end - s));
	const char *base_end = open != NULL ? open : end;
	size_t n = (size_t)(base_end - s);
	const char *bound = memchr(s, '<', n);
	int rc;

	fd->column = column_of(c, s);
	if (n >= 7 && memcmp(s, "wstring", 7) == 0 && (n == 7 || s[7] == '<')) {
		return fail(c, s, "wstring is not supported");
	}
	if (bound != NULL) {
		if (token_is(s, (size_t)(bound - s), "string")) {
			return fail(c, bound, "bounded strings (string<=N) are not supported");
		}
		return fail(c, bound, "unexpected '<' in type '%.*s'", show_len(n), s);
	}
	if (n == 0) {
		return fail(c, s, "missing type before '['");
	}
	if (open != NULL && (rc = parse_array(c, open, end, fd)) != 0) {
		return rc;
	}
	for (size_t i = 0; i < sizeof(primitives) / sizeof(primitives[0]); i++) {
		if (token_is(s, n, primitives[i].name)) {
			fd->kind = primitives[i].kind;
			return 0;
		}
	}
	return parse_nested(c, pkg, s, n, fd);
}

/* The name token and what follows it, up to end (comment and trailing blanks removed). */
static int parse_name(const struct cursor *c, const char *p, const char *end,
                      hakoi_msg_field_def_t *fd)
{
	const char *n0 = p;
	while (p < end && !is_space(*p) && *p != '=') {
		p++;
	}
	const char *n1 = p;
	while (p < end && is_space(*p)) {
		p++;
	}
	if (p < end && *p == '=') {
		if (n0 == n1) {
			return fail(c, p, "missing field name before '='");
		}
		return fail(c, p,
		            "constant '%.*s' is not supported (a .msg here declares fields only)",
		            show_len((size_t)(n1 - n0)), n0);
	}
	size_t n = (size_t)(n1 - n0);
	if (n >= HAKO_MSG_NAME_MAX && name_ok_n(n0, HAKO_MSG_NAME_MAX - 1)) {
		return fail(c, n0, "field name is %zu bytes long; the limit is %d", n,
		            HAKO_MSG_NAME_MAX - 1);
	}
	if (!name_ok_n(n0, n)) {
		return fail(c, n0,
		            "field name is \"%.*s\"; must be a letter, then letters, digits or '_'",
		            show_len(n), n0);
	}
	if (p < end) {
		return fail(c, p,
		            "unexpected '%.*s' after the field name (default values are not "
		            "supported)",
		            show_len((size_t)(end - p)), p);
	}
	memcpy(fd->name, n0, n);
	fd->name[n] = '\0';
	fd->name_column = column_of(c, n0);
	return 0;
}

/* One line, [p, end) without its newline: *is_field = 0 for a blank or comment line. */
static int parse_line(const struct cursor *c, const char *pkg, const char *p, const char *end,
                      hakoi_msg_field_def_t *fd, int *is_field)
{
	const char *hash = memchr(p, '#', (size_t)(end - p));
	int rc;
	*is_field = 0;
	if (hash != NULL) {
		end = hash;
	}
	while (p < end && is_space(*p)) {
		p++;
	}
	while (end > p && is_space(end[-1])) {
		end--;
	}
	if (p == end) {
		return 0;
	}
	const char *t = p;
	while (p < end && !is_space(*p)) {
		p++;
	}
	if (token_is(t, (size_t)(p - t), "---")) {
		return fail(c, t,
		            "'---' separates the parts of a .srv or .action file, not a .msg");
	}
	memset(fd, 0, sizeof(*fd));
	fd->line = c->line;
	if ((rc = parse_type(c, pkg, t, p, fd)) != 0) {
		return rc;
	}
	const char *type_end = p;
	while (p < end && is_space(*p)) {
		p++;
	}
	if (p == end) {
		return fail(c, type_end, "missing field name after the type");
	}
	if ((rc = parse_name(c, p, end, fd)) != 0) {
		return rc;
	}
	*is_field = 1;
	return 0;
}

struct name_at {
	const char *name;
	size_t index;
};

static int by_name_then_index(const void *a, const void *b)
{
	const struct name_at *x = a;
	const struct name_at *y = b;
	int d = strcmp(x->name, y->name);
	if (d != 0) {
		return d;
	}
	return x->index < y->index ? -1 : x->index > y->index;
}

/* The first field (in file order) whose name an earlier field has: *dup = SIZE_MAX if none,
 * else its index and the earlier one's in *first. Sorting keeps this O(n log n) for huge
 * inputs. */
static int find_duplicate(const hakoi_msg_def_t *def, size_t *dup, size_t *first)
{
	*dup = SIZE_MAX;
	if (def->count < 2) {
		return 0;
	}
	struct name_at *v = malloc(def->count * sizeof(*v));
	if (v == NULL) {
		return HAKO_ENOMEM;
	}
	for (size_t i = 0; i < def->count; i++) {
		v[i] = (struct name_at){def->fields[i].name, i};
	}
	qsort(v, def->count, sizeof(*v), by_name_then_index);
	size_t group = 0;
	for (size_t k = 1; k < def->count; k++) {
		if (strcmp(v[k].name, v[group].name) != 0) {
			group = k;
		} else if (k == group + 1 && v[k].index < *dup) {
			*dup = v[k].index;
			*first = v[group].index;
		}
	}
	free(v);
	return 0;
}

int hakoi_msg_parse(const char *pkg, const char *text, size_t len, const char *path,
                    hakoi_msg_def_t *def, hako_error_t *err)
{
	struct cursor c = {path, err, text, 0};
	const char *end = text + len;
	const char *p = text;
	size_t cap = 0;
	int rc = 0;

	def->count = 0;
	def->fields = NULL;
	if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) {
		p += 3; /* a UTF-8 byte order mark, as some editors write */
	}
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol != NULL ? eol : end;
		hakoi_msg_field_def_t fd;
		int is_field;
		c.line++;
		c.line_start = p;
		if ((rc = parse_line(&c, pkg, p, line_end, &fd, &is_field)) != 0) {
			goto fail;
		}
		if (is_field) {
			if (def->count == cap) {
				size_t ncap = cap > 0 ? cap * 2 : 16;
				hakoi_msg_field_def_t *nf =
				    realloc(def->fields, ncap * sizeof(*nf));
				if (nf == NULL) {
					rc = hako_error_set(err, HAKO_ENOMEM, path, 0, 0,
					                    "out of memory");
					goto fail;
				}
				def->fields = nf;
				cap = ncap;
			}
			def->fields[def->count++] = fd;
		}
		p = line_end + (eol != NULL ? 1 : 0);
	}

	size_t dup;
	size_t first;
	if (find_duplicate(def, &dup, &first) != 0) {
		rc = hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
		goto fail;
	}
	if (dup != SIZE_MAX) {
		const hakoi_msg_field_def_t *d = &def->fields[dup];
		rc = hako_error_set(err, HAKO_ECONFIG, path, d->line, d->name_column,
		                    "field name \"%s\" is already used by the field at line %d",
		                    d->name, def->fields[first].line);
		goto fail;
	}
	return 0;

fail:
	hakoi_msg_def_free(def);
	return rc;
}

void hakoi_msg_def_free(hakoi_msg_def_t *def)
{
	if (def != NULL) {
		free(def->fields);
		def->fields = NULL;
		def->count = 0;
	}
}
