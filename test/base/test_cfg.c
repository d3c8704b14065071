/* The config toolkit's walker (hakoi/cfg.h): each kind, ranges, required and missing members,
 * unknown keys, enums, nested objects, arrays and maps, null and "", present flags, callbacks,
 * duplicate keys and the positions errors point at. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hakoi/cfg.h"

#define REQ HAKOI_F_REQUIRED

struct inner {
	int x;
	char tag[4];
};

struct item {
	char id[8];
	int n;
};

/* One struct for every kind, so one table can fill it. */
struct all {
	char name[8];
	char path[32];
	int8_t i8;
	uint8_t u8;
	int16_t i16;
	uint32_t u32;
	int64_t i64;
	uint64_t u64;
	double num;
	int flag;
	uint8_t small_flag;
	int color;
	int level;
	struct inner inner;
	int name_given;
	int inner_given;
	size_t item_count;
	int items[3];
	size_t vec_count;
	struct item *vec;
	size_t map_count;
	struct item *map;
	char custom[16];
};

static const char *const colors[] = {"red", "green", "blue", NULL};
static const char *const levels[] = {"low", "high", NULL};
static const int level_values[] = {10, 20};

static int read_custom(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	if (!json_is_array(v) || json_array_size(v) != 2) {
		return hakoi_walk_fail_must(w, "a pair");
	}
	snprintf(((struct all *)base)->custom, sizeof(((struct all *)base)->custom), "pair of %zu",
	         json_array_size(v));
	return 0;
}

static const hakoi_field_t inner_fields[] = {
    HAKOI_INT("x", REQ, struct inner, x, 0, 9),
    HAKOI_STRING("tag", 0, struct inner, tag),
    HAKOI_END,
};

static const hakoi_field_t item_int = {.kind = HAKOI_K_INT, .size = sizeof(int), .max = 99};

static const hakoi_field_t vec_fields[] = {
    HAKOI_STRING("id", REQ, struct item, id),
    HAKOI_INT("n", 0, struct item, n, 0, 9),
    HAKOI_END,
};
static const hakoi_field_t vec_elem = {.kind = HAKOI_K_OBJECT, .fields = vec_fields};
static const hakoi_field_t map_elem = HAKOI_INT(NULL, 0, struct item, n, 0, 9);

/* Map entries take their id from their key. */
static int map_key(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const char *key = hakoi_walk_key(w);
	return hakoi_walk_string(w, key, strlen(key), 0, ((struct item *)base)->id,
	                         sizeof(((struct item *)base)->id));
}

static const hakoi_field_t all_fields[] = {
    {.key = "name",
     .kind = HAKOI_K_STRING,
     HAKOI_AT(struct all, name),
     .present = HAKOI_PRESENT(struct all, name_given)},
    HAKOI_PATH("path", 0, struct all, path),
    HAKOI_INT("i8", 0, struct all, i8, -100, 100),
    HAKOI_INT("u8", HAKOI_F_UNSIGNED, struct all, u8, 0, 255),
    HAKOI_INT("i16", 0, struct all, i16, -30000, 30000),
    HAKOI_INT("u32", HAKOI_F_UNSIGNED, struct all, u32, 0, UINT32_MAX),
    HAKOI_INT("i64", 0, struct all, i64, LLONG_MIN, LLONG_MAX),
    HAKOI_INT("u64", HAKOI_F_UNSIGNED, struct all, u64, 0, LLONG_MAX),
    HAKOI_NUMBER("num", 0, struct all, num, -INFINITY, INFINITY),
    HAKOI_BOOL("flag", 0, struct all, flag),
    HAKOI_BOOL("small_flag", 0, struct all, small_flag),
    HAKOI_ENUM("color", 0, struct all, color, colors, NULL),
    HAKOI_ENUM("level", 0, struct all, level, levels, level_values),
    {.key = "inner",
     .kind = HAKOI_K_OBJECT,
     HAKOI_AT(struct all, inner),
     .fields = inner_fields,
     .present = HAKOI_PRESENT(struct all, inner_given)},
    {.key = "items",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_IN(struct all, items, item_count),
     .elem = &item_int},
    {.key = "vec",
     .kind = HAKOI_K_ARRAY,
     HAKOI_ELEMS_NEW(struct all, vec, vec_count),
     .elem = &vec_elem},
    {.key = "map",
     .kind = HAKOI_K_MAP,
     HAKOI_ELEMS_NEW(struct all, map, map_count),
     .elem = &map_elem,
     .check = map_key},
    HAKOI_CUSTOM("custom", 0, read_custom, "a pair"),
    HAKOI_IGNORE("comment"),
    HAKOI_END,
};

/* Parse text as "dir/t.json" and walk it with fields into base: 0, or the code with the
 * formatted error ("file:line:column: path: what") in msg. */
static char msg[1024];

static int walk(const char *text, const hakoi_field_t *fields, void *base)
{
	hako_error_t err;
	json_t *root = NULL;
	msg[0] = '\0';
	hako_error_clear(&err);
	int r = hakoi_cfg_parse("dir/t.json", text, strlen(text), &err, &root);
	if (r == 0) {
		hakoi_walk_t w;
		hakoi_walk_init(&w, &err, "dir/t.json", text, strlen(text), NULL);
		r = hakoi_walk_object(&w, root, fields, base);
		json_decref(root);
	}
	if (r != 0) {
		hako_error_format(&err, msg, sizeof(msg));
	}
	return r;
}

/* The error of walking text with all_fields: the message, or "ok". */
static const char *all_error(const char *text)
{
	struct all a = {0};
	int r = walk(text, all_fields, &a);
	free(a.vec);
	free(a.map);
	return r == 0 ? "ok" : msg;
}

static void test_every_kind_stored(void **state)
{
	(void)state;
	struct all a = {0};
	const char *text = "{\"name\": \"abc\", \"path\": \"x.json\", \"i8\": -5, \"u8\": 255,"
	                   " \"i16\": -300, \"u32\": 4294967295, \"i64\": -9000000000,"
	                   " \"u64\": 1099511627776, \"num\": 2.5, \"flag\": true,"
	                   " \"small_flag\": true, \"color\": \"blue\", \"level\": \"high\","
	                   " \"inner\": {\"x\": 7, \"tag\": \"t\"}, \"items\": [1, 2],"
	                   " \"vec\": [{\"id\": \"a\", \"n\": 1}, {\"id\": \"b\"}],"
	                   " \"map\": {\"k1\": 3, \"k2\": 4}, \"custom\": [1, 2],"
	                   " \"comment\": {\"anything\": [null]}}";
	assert_int_equal(walk(text, all_fields, &a), 0);
	assert_string_equal(a.name, "abc");
	assert_string_equal(a.path, "dir/x.json");
	assert_int_equal(a.i8, -5);
	assert_int_equal(a.u8, 255);
	assert_int_equal(a.i16, -300);
	assert_true(a.u32 == 4294967295u);
	assert_true(a.i64 == -9000000000LL);
	assert_true(a.u64 == 1099511627776ULL);
	assert_true(a.num == 2.5);
	assert_int_equal(a.flag, 1);
	assert_int_equal(a.small_flag, 1);
	assert_int_equal(a.color, 2);
	assert_int_equal(a.level, 20);
	assert_int_equal(a.inner.x, 7);
	assert_string_equal(a.inner.tag, "t");
	assert_int_equal(a.item_count, 2);
	assert_int_equal(a.items[0], 1);
	assert_int_equal(a.items[1], 2);
	assert_int_equal(a.vec_count, 2);
	assert_string_equal(a.vec[0].id, "a");
	assert_int_equal(a.vec[0].n, 1);
	assert_string_equal(a.vec[1].id, "b");
	assert_int_equal(a.vec[1].n, 0);
	/* A map keeps the file's order. */
	assert_int_equal(a.map_count, 2);
	assert_string_equal(a.map[0].id, "k1");
	assert_int_equal(a.map[0].n, 3);
	assert_string_equal(a.map[1].id, "k2");
	assert_int_equal(a.map[1].n, 4);
	assert_string_equal(a.custom, "pair of 2");
	free(a.vec);
	free(a.map);
}

/* What is absent stays as the caller set it (defaults), and false is stored as 0. */
static void test_absent_keeps_defaults(void **state)
{
	(void)state;
	struct all a = {.i8 = 42, .num = 1.25, .flag = 1, .color = 1};
	assert_int_equal(walk("{\"flag\": false}", all_fields, &a), 0);
	assert_int_equal(a.i8, 42);
	assert_true(a.num == 1.25);
	assert_int_equal(a.flag, 0);
	assert_int_equal(a.color, 1);
	assert_null(a.vec);
	assert_int_equal(a.vec_count, 0);
}

static void test_ranges(void **state)
{
	(void)state;
	assert_string_equal(all_error("{\"i8\": 101}"),
	                    "dir/t.json:1:8: i8: is 101; must be an integer in [-100, 100]");
	assert_string_equal(all_error("{\"i8\": -101}"),
	                    "dir/t.json:1:8: i8: is -101; must be an integer in [-100, 100]");
	assert_string_equal(all_error("{\"u8\": 256}"),
	                    "dir/t.json:1:8: u8: is 256; must be an integer in [0, 255]");
	assert_string_equal(all_error("{\"u64\": -1}"),
	                    "dir/t.json:1:9: u64: is -1; must be an integer >= 0");
	assert_string_equal(all_error("{\"u8\": 1.0}"),
	                    "dir/t.json:1:8: u8: must be an integer in [0, 255]");
	assert_string_equal(all_error("{\"u8\": \"1\"}"),
	                    "dir/t.json:1:8: u8: must be an integer in [0, 255]");
	assert_string_equal(all_error("{\"num\": \"x\"}"), "dir/t.json:1:9: num: must be a number");
	assert_string_equal(all_error("{\"flag\": 1}"),
	                    "dir/t.json:1:10: flag: must be true or false");
	assert_string_equal(all_error("{\"name\": 5}"), "dir/t.json:1:10: name: must be a string");
	/* The edges are in. */
	assert_string_equal(all_error("{\"i8\": -100, \"u8\": 0, \"u32\": 0}"), "ok");
}

static void test_number_wording(void **state)
{
	(void)state;
	struct n {
		double a, b, c;
	} n;
	static const hakoi_field_t fields[] = {
	    HAKOI_NUMBER("a", 0, struct n, a, 0.0, 1.0),
	    HAKOI_NUMBER("b", 0, struct n, b, 0.5, INFINITY),
	    HAKOI_NUMBER("c", 0, struct n, c, -INFINITY, 2.0),
	    HAKOI_END,
	};
	assert_int_not_equal(walk("{\"a\": 1.5}", fields, &n), 0);
	assert_string_equal(msg, "dir/t.json:1:7: a: is 1.5; must be a number in [0, 1]");
	assert_int_not_equal(walk("{\"b\": 0}", fields, &n), 0);
	assert_string_equal(msg, "dir/t.json:1:7: b: is 0; must be a number >= 0.5");
	assert_int_not_equal(walk("{\"c\": 3}", fields, &n), 0);
	assert_string_equal(msg, "dir/t.json:1:7: c: is 3; must be a number <= 2");
	assert_int_equal(walk("{\"a\": 1, \"b\": 0.5, \"c\": -1e300}", fields, &n), 0);
	assert_true(n.a == 1.0 && n.b == 0.5 && n.c == -1e300);
}

static void test_strings(void **state)
{
	(void)state;
	assert_string_equal(all_error("{\"name\": \"abcdefgh\"}"),
	                    "dir/t.json:1:10: name: is 8 bytes long; the limit is 7");
	assert_string_equal(all_error("{\"name\": \"abcdefg\"}"), "ok");
	assert_string_equal(all_error("{\"name\": \"\"}"),
	                    "dir/t.json:1:10: name: must not be empty");
	/* jansson refuses an escaped NUL in a value or key; text from elsewhere is checked. */
	assert_string_equal(all_error("{\"name\": \"a\\u0000b\"}"),
	                    "dir/t.json:1:19: invalid JSON: \\u0000 is not allowed without "
	                    "JSON_ALLOW_NUL near '\"a\\u0000b\"'");
	hako_error_t err;
	hakoi_walk_t w;
	char out[8];
	hakoi_walk_init(&w, &err, "f", "{}", 2, NULL);
	assert_int_equal(hakoi_walk_string(&w, "a\0b", 3, 0, out, sizeof(out)), HAKO_ECONFIG);
	assert_string_equal(err.message, "top level: must not contain a NUL character");
	assert_int_equal(hakoi_walk_string(&w, "", 0, HAKOI_F_EMPTY_OK, out, sizeof(out)), 0);
	assert_int_equal(hakoi_walk_string(&w, "abc", 3, 0, out, sizeof(out)), 0);
	assert_string_equal(out, "abc");
}

static void test_empty_ok(void **state)
{
	(void)state;
	struct s {
		char a[4];
	} s = {"xyz"};
	static const hakoi_field_t fields[] = {
	    HAKOI_STRING("a", HAKOI_F_EMPTY_OK, struct s, a),
	    HAKOI_END,
	};
	assert_int_equal(walk("{\"a\": \"\"}", fields, &s), 0);
	assert_string_equal(s.a, "");
}

static void test_null_ok(void **state)
{
	(void)state;
	struct s {
		char a[4];
		int a_given;
		int b;
	} s = {"xyz", 0, 5};
	static const hakoi_field_t fields[] = {
	    {.key = "a",
	     .kind = HAKOI_K_STRING,
	     .flags = HAKOI_F_NULL_OK,
	     HAKOI_AT(struct s, a),
	     .present = HAKOI_PRESENT(struct s, a_given)},
	    HAKOI_INT("b", 0, struct s, b, 0, 9),
	    HAKOI_END,
	};
	/* null is absent: nothing stored, not marked present. */
	assert_int_equal(walk("{\"a\": null}", fields, &s), 0);
	assert_string_equal(s.a, "xyz");
	assert_int_equal(s.a_given, 0);
	assert_int_not_equal(walk("{\"a\": 3}", fields, &s), 0);
	assert_string_equal(msg, "dir/t.json:1:7: a: must be a string or null");
	/* Without the flag, null is a wrong value. */
	assert_int_not_equal(walk("{\"b\": null}", fields, &s), 0);
	assert_string_equal(msg, "dir/t.json:1:7: b: must be an integer in [0, 9]");
	assert_int_equal(s.b, 5);
}

static void test_present_flags(void **state)
{
	(void)state;
	struct all a = {0};
	assert_int_equal(walk("{\"inner\": {\"x\": 1}}", all_fields, &a), 0);
	assert_int_equal(a.inner_given, 1);
	assert_int_equal(a.name_given, 0);
	assert_int_equal(walk("{\"name\": \"n\"}", all_fields, &a), 0);
	assert_int_equal(a.name_given, 1);
}

static void test_required_missing(void **state)
{
	(void)state;
	struct item it;
	static const hakoi_field_t fields[] = {
	    HAKOI_STRING("id", REQ, struct item, id),
	    HAKOI_INT("n", REQ, struct item, n, 1, 5),
	    HAKOI_END,
	};
	/* A missing member points at the object that lacks it. */
	assert_int_equal(walk("{\n  \"id\": \"a\"\n}", fields, &it), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:1: n: missing (must be an integer in [1, 5])");
	assert_int_equal(walk("{}", fields, &it), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:1: id: missing (must be a string)");
	/* ... also when nested. */
	assert_string_equal(all_error("{\"i8\": 1,\n \"inner\": {\"tag\": \"t\"}}"),
	                    "dir/t.json:2:11: inner.x: missing (must be an integer in [0, 9])");
}

static void test_unknown_keys(void **state)
{
	(void)state;
	struct item it;
	static const hakoi_field_t fields[] = {
	    HAKOI_STRING("id", 0, struct item, id),
	    HAKOI_INT("n", 0, struct item, n, 0, 9),
	    HAKOI_CHECK(NULL), /* not a key: never listed (and without a function, a no-op) */
	    HAKOI_END,
	};
	static const hakoi_field_t none[] = {HAKOI_END};
	static const hakoi_field_t open[] = {
	    HAKOI_INT("n", 0, struct item, n, 0, 9),
	    HAKOI_OTHERS,
	    HAKOI_END,
	};
	assert_int_equal(walk("{\"n\": 1,\n \"nn\": 2}", fields, &it), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:2:8: nn: unknown key (known: id, n)");
	assert_int_equal(walk("{\"x\": 1}", none, &it), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:7: x: unknown key (none is allowed here)");
	/* An unknown key is refused before any value is read. */
	it.n = 0;
	assert_int_equal(walk("{\"n\": 77, \"zz\": 2}", fields, &it), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:17: zz: unknown key (known: id, n)");
	/* HAKOI_OTHERS: the rest is accepted and not read, the named keys still are. */
	assert_int_equal(walk("{\"n\": 3, \"zz\": [1], \"write_cycle\": 1}", open, &it), 0);
	assert_int_equal(it.n, 3);
	assert_int_equal(walk("{\"n\": 10, \"zz\": 1}", open, &it), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:7: n: is 10; must be an integer in [0, 9]");
	/* Keys of nested objects are listed from their own table. */
	assert_string_equal(all_error("{\"inner\": {\"x\": 1, \"y\": 2}}"),
	                    "dir/t.json:1:25: inner.y: unknown key (known: x, tag)");
}

static void test_enum_wording(void **state)
{
	(void)state;
	assert_string_equal(all_error("{\"color\": \"purple\"}"),
	                    "dir/t.json:1:11: color: is \"purple\"; must be \"red\", \"green\" or "
	                    "\"blue\"");
	assert_string_equal(all_error("{\"level\": 2}"),
	                    "dir/t.json:1:11: level: must be \"low\" or \"high\"");
	static const char *const one[] = {"2.0.0", NULL};
	static const hakoi_field_t version[] = {
	    {.key = "version", .kind = HAKOI_K_ENUM, .flags = REQ, .names = one},
	    HAKOI_END,
	};
	int unused = 0;
	assert_int_equal(walk("{}", version, &unused), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:1: version: missing (must be \"2.0.0\")");
	assert_int_equal(walk("{\"version\": \"1.0\"}", version, &unused), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:13: version: is \"1.0\"; must be \"2.0.0\"");
	/* size 0: checked, not stored. */
	assert_int_equal(walk("{\"version\": \"2.0.0\"}", version, &unused), 0);
	assert_int_equal(unused, 0);
}

static void test_nested_objects(void **state)
{
	(void)state;
	assert_string_equal(all_error("{\n\"inner\": {\n  \"x\": 12}}"),
	                    "dir/t.json:3:8: inner.x: is 12; must be an integer in [0, 9]");
	assert_string_equal(all_error("{\"inner\": [1]}"),
	                    "dir/t.json:1:11: inner: must be an object");
	assert_string_equal(all_error("{\"inner\": {\"x\": 1, \"tag\": \"long\"}}"),
	                    "dir/t.json:1:27: inner.tag: is 4 bytes long; the limit is 3");
}

static void test_arrays(void **state)
{
	(void)state;
	assert_string_equal(all_error("{\"items\": [1, 2, 3]}"), "ok");
	/* An in-place array holds at most its length. */
	assert_string_equal(all_error("{\"items\": [1, 2, 3, 4]}"),
	                    "dir/t.json:1:11: items: has 4 entries; the limit is 3");
	assert_string_equal(all_error("{\"items\": [1, 100]}"),
	                    "dir/t.json:1:15: items[1]: is 100; must be an integer in [0, 99]");
	assert_string_equal(all_error("{\"items\": {}}"),
	                    "dir/t.json:1:11: items: must be an array");
	assert_string_equal(all_error("{\"vec\": [{\"id\": \"a\"},\n {\"n\": 1}]}"),
	                    "dir/t.json:2:2: vec[1].id: missing (must be a string)");
	assert_string_equal(all_error("{\"vec\": [{\"id\": \"a\"}, 3]}"),
	                    "dir/t.json:1:23: vec[1]: must be an object");
	assert_string_equal(all_error("{\"map\": {\"k\": 10}}"),
	                    "dir/t.json:1:15: map.k: is 10; must be an integer in [0, 9]");
	assert_string_equal(all_error("{\"map\": {\"toolongkey\": 1}}"),
	                    "dir/t.json:1:24: map.toolongkey: is 10 bytes long; the limit is 7");
	assert_string_equal(all_error("{\"map\": []}"), "dir/t.json:1:9: map: must be an object");
}

static void test_array_counts(void **state)
{
	(void)state;
	struct c {
		size_t n;
		int v[8];
	} c;
	static const hakoi_field_t elem = {.kind = HAKOI_K_INT, .size = sizeof(int), .max = 9};
	static const hakoi_field_t one[] = {
	    {.key = "v",
	     .kind = HAKOI_K_ARRAY,
	     .min = 1,
	     HAKOI_ELEMS_IN(struct c, v, n),
	     .elem = &elem},
	    HAKOI_END,
	};
	static const hakoi_field_t two[] = {
	    {.key = "v",
	     .kind = HAKOI_K_ARRAY,
	     .min = 2,
	     HAKOI_ELEMS_IN(struct c, v, n),
	     .elem = &elem},
	    HAKOI_END,
	};
	assert_int_equal(walk("{\"v\": []}", one, &c), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:7: v: must not be empty");
	assert_int_equal(walk("{\"v\": [1]}", two, &c), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:7: v: has 1 entries; must have at least 2");
	/* The count covers the element that failed: a free function reaches what it holds. */
	assert_int_equal(walk("{\"v\": [1, 2, 30, 4]}", one, &c), HAKO_ECONFIG);
	assert_int_equal(c.n, 3);
	assert_int_equal(walk("{\"v\": [4, 5]}", one, &c), 0);
	assert_int_equal(c.n, 2);
}

/* Element callbacks see their index and the earlier elements; duplicates are worded once. */
static int id_unique(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const struct item *it = base;
	const struct item *first = it - hakoi_walk_index(w);
	for (size_t j = 0; j < hakoi_walk_index(w); j++) {
		if (strcmp(first[j].id, it->id) == 0) {
			hakoi_walk_push_key(w, "id");
			return hakoi_walk_fail_dup(w, j, "id \"%s\"", it->id);
		}
	}
	return 0;
}

static void test_element_checks_and_duplicates(void **state)
{
	(void)state;
	struct v {
		size_t n;
		struct item *items;
	} v = {0};
	static const hakoi_field_t fields[] = {
	    {.key = "items",
	     .kind = HAKOI_K_ARRAY,
	     HAKOI_ELEMS_NEW(struct v, items, n),
	     .elem = &vec_elem,
	     .check = id_unique},
	    HAKOI_END,
	};
	assert_int_equal(walk("{\"items\": [{\"id\": \"a\"}, {\"id\": \"b\"},\n"
	                      "  {\"id\": \"a\"}]}",
	                      fields, &v),
	                 HAKO_ECONFIG);
	assert_string_equal(msg,
	                    "dir/t.json:2:10: items[2].id: id \"a\" is already used by items[0]");
	assert_int_equal(v.n, 3);
	free(v.items);
	v.items = NULL;
	assert_int_equal(walk("{\"items\": []}", fields, &v), 0);
	assert_null(v.items);
	assert_int_equal(v.n, 0);
}

/* A check entry runs in the table's order, after the members above it. */
static char id_seen_by_check[8];

static int ordered(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	const struct item *it = base;
	(void)f;
	assert_null(v);
	snprintf(id_seen_by_check, sizeof(id_seen_by_check), "%s", it->id);
	if (it->n <= 0) {
		hakoi_walk_push_key(w, "n");
		return hakoi_walk_fail(w, "must be > 0");
	}
	return 0;
}

static void test_check_entries(void **state)
{
	(void)state;
	struct item it = {0};
	static const hakoi_field_t fields[] = {
	    HAKOI_INT("n", 0, struct item, n, 0, 9),
	    HAKOI_CHECK(ordered),
	    HAKOI_STRING("id", 0, struct item, id),
	    HAKOI_END,
	};
	assert_int_equal(walk("{\"id\": \"late\", \"n\": 0}", fields, &it), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:21: n: must be > 0");
	strcpy(id_seen_by_check, "?");
	assert_int_equal(walk("{\"id\": \"late\", \"n\": 1}", fields, &it), 0);
	/* The check ran before "id" was read. */
	assert_string_equal(id_seen_by_check, "");
	assert_string_equal(it.id, "late");
}

static int pick_table(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	static const char *const kinds[] = {"int", "string", NULL};
	static const hakoi_field_t kind = {
	    .key = "kind", .kind = HAKOI_K_ENUM, .flags = REQ, .size = sizeof(int), .names = kinds};
	static const hakoi_field_t int_fields[] = {
	    HAKOI_IGNORE("kind"), HAKOI_INT("value", REQ, struct item, n, 0, 9), HAKOI_END};
	static const hakoi_field_t string_fields[] = {
	    HAKOI_IGNORE("kind"), HAKOI_STRING("value", REQ, struct item, id), HAKOI_END};
	int k = 0;
	(void)f;
	int r = hakoi_walk_member(w, v, &kind, &k);
	return r != 0 ? r : hakoi_walk_object(w, v, k == 0 ? int_fields : string_fields, base);
}

/* hakoi_walk_member: a callback reads one member, then chooses the table of the others. */
static void test_walk_member_selects_table(void **state)
{
	(void)state;
	struct item it = {0};
	static const hakoi_field_t fields[] = {
	    HAKOI_CUSTOM("opt", REQ, pick_table, "an object {kind, value}"),
	    HAKOI_END,
	};
	assert_int_equal(walk("{\"opt\": {\"kind\": \"int\", \"value\": 4}}", fields, &it), 0);
	assert_int_equal(it.n, 4);
	assert_int_equal(walk("{\"opt\": {\"kind\": \"string\", \"value\": \"s\"}}", fields, &it),
	                 0);
	assert_string_equal(it.id, "s");
	assert_int_equal(walk("{\"opt\": {\"kind\": \"string\", \"value\": 4}}", fields, &it),
	                 HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:37: opt.value: must be a string");
	assert_int_equal(walk("{\"opt\": {\"value\": 4}}", fields, &it), HAKO_ECONFIG);
	assert_string_equal(msg,
	                    "dir/t.json:1:9: opt.kind: missing (must be \"int\" or \"string\")");
	assert_int_equal(walk("{}", fields, &it), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:1: opt: missing (must be an object {kind, value})");
}

static void test_paths(void **state)
{
	(void)state;
	struct p {
		char rel[16];
		char abs[16];
	} p;
	static const hakoi_field_t fields[] = {
	    HAKOI_PATH("rel", 0, struct p, rel),
	    HAKOI_PATH("abs", 0, struct p, abs),
	    HAKOI_END,
	};
	assert_int_equal(walk("{\"rel\": \"sub/a.json\", \"abs\": \"/etc/a.json\"}", fields, &p),
	                 0);
	assert_string_equal(p.rel, "dir/sub/a.json");
	assert_string_equal(p.abs, "/etc/a.json");
	assert_int_equal(walk("{\"rel\": \"sub/abcdefgh.json\"}", fields, &p), HAKO_ECONFIG);
	assert_string_equal(msg,
	                    "dir/t.json:1:9: rel: is 21 bytes long once resolved against dir/; "
	                    "the limit is 15");
	assert_int_equal(walk("{\"abs\": \"/abcdefghijklmnop\"}", fields, &p), HAKO_ECONFIG);
	assert_string_equal(msg, "dir/t.json:1:9: abs: is 17 bytes long; the limit is 15");
}

static void test_top_level(void **state)
{
	(void)state;
	assert_string_equal(all_error("[1]"), "dir/t.json:1:1: top level: must be an object");
	assert_string_equal(all_error("\n  [1]"), "dir/t.json:2:3: top level: must be an object");
}

/* One duplicate-key policy for every file: refused where the key is repeated. */
static void test_duplicate_keys(void **state)
{
	(void)state;
	hako_error_t err;
	json_t *root = NULL;
	const char *text = "{\"a\": 1,\n \"b\": {\"c\": 1, \"c\": 2}}";
	assert_int_equal(hakoi_cfg_parse("f.json", text, strlen(text), &err, &root), HAKO_ECONFIG);
	assert_null(root);
	assert_string_equal(err.file, "f.json");
	assert_int_equal(err.line, 2);
	assert_int_equal(err.column, 18); /* the end of the repeated key */
	assert_string_equal(err.message, "invalid JSON: duplicate object key near '\"c\"'");
	/* The same key in two objects is not a duplicate. */
	text = "{\"a\": {\"c\": 1}, \"b\": {\"c\": 2}}";
	assert_int_equal(hakoi_cfg_parse("f.json", text, strlen(text), &err, &root), 0);
	json_decref(root);
}

/* hakoi_cfg_load reads a file and refuses what cannot be read, naming it. */
static void test_load_files(void **state)
{
	(void)state;
	char dir[] = "/tmp/hako-test-cfg-XXXXXX";
	char path[64], missing[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.json", dir);
	snprintf(missing, sizeof(missing), "%s/none.json", dir);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("{\"k\": 1,\n \"k\": 2}", fp);
	fclose(fp);

	hako_error_t err;
	json_t *root = NULL;
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(hakoi_cfg_load(path, &err, &root, &text, &len), HAKO_ECONFIG);
	assert_null(root);
	assert_null(text);
	assert_string_equal(err.file, path);
	assert_int_equal(err.line, 2);

	assert_int_equal(hakoi_cfg_load(missing, &err, &root, &text, &len), HAKO_ENOENT);
	assert_string_equal(err.file, missing);
	assert_string_equal(err.message, "cannot open: No such file or directory");
	assert_int_equal(hakoi_cfg_load(dir, &err, &root, &text, &len), HAKO_EIO);
	assert_string_equal(err.message, "cannot open: is a directory");

	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("{\"k\": 1}", fp);
	fclose(fp);
	assert_int_equal(hakoi_cfg_load(path, &err, &root, &text, &len), 0);
	assert_non_null(root);
	assert_int_equal(len, 8);
	assert_memory_equal(text, "{\"k\": 1}", 8);
	json_decref(root);
	free(text);
	unlink(path);
	rmdir(dir);
}

static void test_field_expect(void **state)
{
	(void)state;
	char buf[128];
	static const hakoi_field_t big = HAKOI_INT("n", 0, struct item, n, 1, LLONG_MAX);
	static const hakoi_field_t told = {
	    .key = "n", .kind = HAKOI_K_INT, .min = 1, .max = 255, .expect = "a node id"};
	static const hakoi_field_t arr = {.key = "a", .kind = HAKOI_K_ARRAY};
	hakoi_field_expect(&big, buf, sizeof(buf));
	assert_string_equal(buf, "an integer >= 1");
	hakoi_field_expect(&told, buf, sizeof(buf));
	assert_string_equal(buf, "a node id");
	hakoi_field_expect(&arr, buf, sizeof(buf));
	assert_string_equal(buf, "an array");
	/* A short buffer is cut, never overrun. */
	char small[8];
	hakoi_field_expect(&all_fields[11], small, sizeof(small));
	assert_string_equal(small, "\"red\", ");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_kind_stored),
	    cmocka_unit_test(test_absent_keeps_defaults),
	    cmocka_unit_test(test_ranges),
	    cmocka_unit_test(test_number_wording),
	    cmocka_unit_test(test_strings),
	    cmocka_unit_test(test_empty_ok),
	    cmocka_unit_test(test_null_ok),
	    cmocka_unit_test(test_present_flags),
	    cmocka_unit_test(test_required_missing),
	    cmocka_unit_test(test_unknown_keys),
	    cmocka_unit_test(test_enum_wording),
	    cmocka_unit_test(test_nested_objects),
	    cmocka_unit_test(test_arrays),
	    cmocka_unit_test(test_array_counts),
	    cmocka_unit_test(test_element_checks_and_duplicates),
	    cmocka_unit_test(test_check_entries),
	    cmocka_unit_test(test_walk_member_selects_table),
	    cmocka_unit_test(test_paths),
	    cmocka_unit_test(test_top_level),
	    cmocka_unit_test(test_duplicate_keys),
	    cmocka_unit_test(test_load_files),
	    cmocka_unit_test(test_field_expect),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
