/* The generated C structs against the layout engine: for every built-in type, the compiler's
 * sizeof, _Alignof and every member's offsetof and sizeof (tabulated by layout_table.c, written
 * by hako-msggen --layout-check and compiled with the generated headers) must equal what the
 * registry computes at run time.
 *
 * The comparison is also run on tampered copies of the table, to show that it catches a wrong
 * offset, a wrong size, a missing member and a missing type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/msg.h"

/* Same definition as in the generated layout_table.c. */
struct hako_layout_row {
	const char *type;
	const char *field; /* NULL: the struct itself */
	size_t offset;
	size_t size;
	size_t align;
};
extern const struct hako_layout_row hako_layout_rows[];
extern const size_t hako_layout_row_count;

static const struct hako_layout_row *find_row(const struct hako_layout_row *rows, size_t n,
                                              const char *type, const char *field)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].type, type) != 0) {
			continue;
		}
		if ((field == NULL && rows[i].field == NULL) ||
		    (field != NULL && rows[i].field != NULL && strcmp(rows[i].field, field) == 0)) {
			return &rows[i];
		}
	}
	return NULL;
}

/* Differences between the compiled struct of t (in rows) and t's layout, each printed when
 * `loud`. */
static int compare_type(const hako_msg_type_t *t, const struct hako_layout_row *rows, size_t n,
                        int loud)
{
	int bad = 0;
	const struct hako_layout_row *r = find_row(rows, n, t->full_name, NULL);
	if (r == NULL) {
		if (loud) {
			print_error("%s: no struct in the generated table\n", t->full_name);
		}
		return 1;
	}
	/* No fields: no struct (align 0 in the table); the layout must agree that it is empty. */
	uint32_t want_align = t->size == 0 ? 0 : t->align;
	if (r->size != t->size || r->align != want_align) {
		if (loud) {
			print_error(
			    "%s: compiler size %zu align %zu, layout engine size %u align %u\n",
			    t->full_name, r->size, r->align, t->size, t->align);
		}
		bad++;
	}
	size_t members = 0;
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		const struct hako_layout_row *m = find_row(rows, n, t->full_name, f->name);
		if (f->size == 0) {
			/* Takes no bytes (a nested type without fields): no member. */
			bad += m != NULL;
			continue;
		}
		members++;
		if (m == NULL) {
			if (loud) {
				print_error("%s.%s: no member in the generated struct\n",
				            t->full_name, f->name);
			}
			bad++;
		} else if (m->offset != f->offset || m->size != f->size) {
			if (loud) {
				print_error(
				    "%s.%s: compiler offset %zu size %zu, layout engine offset %u "
				    "size %u\n",
				    t->full_name, f->name, m->offset, m->size, f->offset, f->size);
			}
			bad++;
		}
	}
	size_t rows_of_t = 0;
	for (size_t i = 0; i < n; i++) {
		rows_of_t += strcmp(rows[i].type, t->full_name) == 0 && rows[i].field != NULL;
	}
	if (rows_of_t != members) {
		if (loud) {
			print_error(
			    "%s: %zu members in the generated struct, %zu fields with bytes\n",
			    t->full_name, rows_of_t, members);
		}
		bad++;
	}
	return bad;
}

static int setup(void **state)
{
	unsetenv("HAKO_MSG_PATH"); /* the built-in types, not a user's replacement */
	hako_msg_registry_t *reg;
	if (hako_msg_registry_create(&reg) != 0) {
		return -1;
	}
	*state = reg;
	return 0;
}

static int teardown(void **state)
{
	hako_msg_registry_destroy(*state);
	return 0;
}

static const hako_msg_type_t *get(hako_msg_registry_t *reg, const char *full)
{
	const hako_msg_type_t *t = NULL;
	hako_error_t err;
	hako_error_clear(&err);
	int r = hako_msg_registry_get(reg, full, &t, &err);
	if (r != 0) {
		print_error("%s: %d: %s:%d: %s\n", full, r, err.file, err.line, err.message);
	}
	assert_int_equal(r, 0);
	return t;
}

static void test_every_builtin_type(void **state)
{
	hako_msg_registry_t *reg = *state;
	size_t count = hako_msg_builtin_count();
	assert_true(count >= 40); /* the packages: far more than 40 types */
	int bad = 0;
	size_t fields = 0;
	for (size_t i = 0; i < count; i++) {
		const char *pkg, *name;
		char full[HAKO_MSG_FULL_MAX];
		hako_msg_builtin_at(i, &pkg, &name);
		snprintf(full, sizeof(full), "%s/%s", pkg, name);
		const hako_msg_type_t *t = get(reg, full);
		bad += compare_type(t, hako_layout_rows, hako_layout_row_count, 1);
		fields += t->field_count;
	}
	assert_int_equal(bad, 0);
	assert_true(fields > count); /* something was compared field by field */
}

/* Every row names a built-in type: the table holds no type the test would not look at. */
static void test_table_holds_only_builtins(void **state)
{
	(void)state;
	assert_true(hako_layout_row_count > 0);
	for (size_t i = 0; i < hako_layout_row_count; i++) {
		char pkg[HAKO_MSG_NAME_MAX];
		const char *slash = strchr(hako_layout_rows[i].type, '/');
		assert_non_null(slash);
		snprintf(pkg, sizeof(pkg), "%.*s", (int)(slash - hako_layout_rows[i].type),
		         hako_layout_rows[i].type);
		assert_non_null(hako_msg_builtin_text(pkg, slash + 1));
	}
}

/* Known layouts, from the reference description of the format. */
static void test_known_sizes(void **state)
{
	hako_msg_registry_t *reg = *state;
	const struct hako_layout_row *r;
	r = find_row(hako_layout_rows, hako_layout_row_count, "geometry_msgs/Twist", NULL);
	assert_non_null(r);
	assert_int_equal(r->size, 48);
	r = find_row(hako_layout_rows, hako_layout_row_count, "geometry_msgs/Twist", "angular");
	assert_non_null(r);
	assert_int_equal(r->offset, 24);
	r = find_row(hako_layout_rows, hako_layout_row_count,
	             "hako_msgs/ExecutionUnitRuntimeStatus", NULL);
	assert_non_null(r);
	assert_int_equal(r->size, 40);
	r = find_row(hako_layout_rows, hako_layout_row_count,
	             "hako_msgs/ExecutionUnitRuntimeStatus", "next_owner_node_id");
	assert_non_null(r);
	assert_int_equal(r->offset, 32);
	assert_int_equal(r->size, 8);
	assert_int_equal(get(reg, "geometry_msgs/Twist")->size, 48);
}

/* A copy of the table with one thing changed must make the comparison fail. */
static struct hako_layout_row *table_copy(size_t *n)
{
	struct hako_layout_row *rows = malloc(hako_layout_row_count * sizeof(*rows));
	assert_non_null(rows);
	memcpy(rows, hako_layout_rows, hako_layout_row_count * sizeof(*rows));
	*n = hako_layout_row_count;
	return rows;
}

static struct hako_layout_row *row_of(struct hako_layout_row *rows, size_t n, const char *type,
                                      const char *field)
{
	struct hako_layout_row *r = (struct hako_layout_row *)find_row(rows, n, type, field);
	assert_non_null(r);
	return r;
}

static void test_mismatch_is_caught(void **state)
{
	hako_msg_registry_t *reg = *state;
	const hako_msg_type_t *twist = get(reg, "geometry_msgs/Twist");
	const hako_msg_type_t *imu = get(reg, "sensor_msgs/Imu");
	size_t n;
	struct hako_layout_row *rows = table_copy(&n);
	assert_int_equal(compare_type(twist, rows, n, 1), 0);
	assert_int_equal(compare_type(imu, rows, n, 1), 0);

	row_of(rows, n, "geometry_msgs/Twist", "angular")->offset += 8;
	assert_int_not_equal(compare_type(twist, rows, n, 0), 0);
	row_of(rows, n, "geometry_msgs/Twist", "angular")->offset -= 8;

	row_of(rows, n, "geometry_msgs/Twist", NULL)->size += 8;
	assert_int_not_equal(compare_type(twist, rows, n, 0), 0);
	row_of(rows, n, "geometry_msgs/Twist", NULL)->size -= 8;

	row_of(rows, n, "geometry_msgs/Twist", NULL)->align = 4;
	assert_int_not_equal(compare_type(twist, rows, n, 0), 0);
	row_of(rows, n, "geometry_msgs/Twist", NULL)->align = twist->align;

	row_of(rows, n, "sensor_msgs/Imu", "orientation_covariance")->size -= 8;
	assert_int_not_equal(compare_type(imu, rows, n, 0), 0);
	row_of(rows, n, "sensor_msgs/Imu", "orientation_covariance")->size += 8;

	/* A member missing from the struct (its row renamed away). */
	row_of(rows, n, "sensor_msgs/Imu", "linear_acceleration")->field = "renamed";
	assert_int_not_equal(compare_type(imu, rows, n, 0), 0);
	row_of(rows, n, "sensor_msgs/Imu", "renamed")->field = "linear_acceleration";

	/* The whole type missing. */
	row_of(rows, n, "geometry_msgs/Twist", NULL)->type = "geometry_msgs/Gone";
	assert_int_not_equal(compare_type(twist, rows, n, 0), 0);
	row_of(rows, n, "geometry_msgs/Gone", NULL)->type = "geometry_msgs/Twist";

	assert_int_equal(compare_type(twist, rows, n, 1), 0);
	assert_int_equal(compare_type(imu, rows, n, 1), 0);
	free(rows);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_builtin_type),
	    cmocka_unit_test(test_table_holds_only_builtins),
	    cmocka_unit_test(test_known_sizes),
	    cmocka_unit_test(test_mismatch_is_caught),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
