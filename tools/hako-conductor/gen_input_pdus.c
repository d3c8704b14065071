/* The eu-input's PDUs (gen_input.c reads the file): robot_types and robots, built into a
 * pdudef the registry loads, or the pdudef file "pdudef" names. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen_input.h"

/* ---- robot_types, robots, pdudef: the PDUs ---- */

/* Hakoniwa's schema names files without '\\' (its fileName): a Windows path is refused, not
 * taken for a file whose name holds a backslash. (The schema refuses '/' too; hako also reads
 * paths relative to the eu-input.) */
static int no_backslash(hakoi_walk_t *w, const char *name)
{
	return strchr(name, '\\') == NULL
	           ? 0
	           : hakoi_walk_fail(w, "\"%s\": '\\' is not allowed in a file name", name);
}

/* A pdutypes file that exists, made absolute: the temporary pdudef that names it is elsewhere. */
static int check_readable(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	char *path = (char *)base + f->offset;
	char real[PATH_MAX];
	int r = no_backslash(w, json_string_value(v));
	if (r != 0) {
		return r;
	}
	if (access(path, R_OK) != 0 || realpath(path, real) == NULL) {
		return hakoi_walk_fail(w, "cannot open %s: %s", path, strerror(errno));
	}
	if (strlen(real) >= f->size) {
		return hakoi_walk_fail(w, "%s: path too long", real);
	}
	memcpy(path, real, strlen(real) + 1);
	return 0;
}

static const hakoi_field_t rtype_fields[] = {
    {.key = "pdutypes",
     .kind = HAKOI_K_PATH,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(struct rtype, pdutypes),
     .check = check_readable},
    HAKOI_END,
};

static int parse_rtype(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	struct rtype *t = base;
	int r = hakoi_walk_string(w, hakoi_walk_key(w), strlen(hakoi_walk_key(w)), 0, t->name,
	                          sizeof(t->name));
	return r != 0
	           ? r
	           : hakoi_walk_value(
	                 w, v, &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = rtype_fields}, t);
}

static int check_robot(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	struct ld *l = ld_of(w);
	const struct robot *rb = base;
	size_t i = hakoi_walk_index(w);
	for (size_t j = 0; j < i; j++) {
		if (strcmp(l->robots[j].name, rb->name) == 0) {
			hakoi_walk_push_key(w, "name");
			return hakoi_walk_fail_dup(w, j, "robot \"%s\"", rb->name);
		}
	}
	for (size_t j = 0; j < l->rtype_count; j++) {
		if (strcmp(l->rtypes[j].name, rb->type) == 0) {
			return 0;
		}
	}
	hakoi_walk_push_key(w, "type");
	return hakoi_walk_fail(w, "robot type \"%s\" is not in robot_types", rb->type);
}

static const hakoi_field_t robot_fields[] = {
    HAKOI_STRING("name", HAKOI_F_REQUIRED, struct robot, name),
    HAKOI_STRING("type", HAKOI_F_REQUIRED, struct robot, type),
    HAKOI_END,
};

static const hakoi_field_t robot_elem = {.kind = HAKOI_K_OBJECT, .fields = robot_fields};

static const hakoi_field_t rtype_map = {.kind = HAKOI_K_MAP,
                                        HAKOI_ELEMS_NEW(struct ld, rtypes, rtype_count),
                                        .parse = parse_rtype,
                                        .expect = "an object of type: {pdutypes}"};

int hakoi_gen_parse_rtypes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	return hakoi_walk_value(w, v, &rtype_map, ld_of(w));
}

int hakoi_gen_parse_robots(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	static const hakoi_field_t arr = {.kind = HAKOI_K_ARRAY,
	                                  HAKOI_ELEMS_NEW(struct ld, robots, robot_count),
	                                  .elem = &robot_elem,
	                                  .check = check_robot,
	                                  .expect = "an array of {name, type}"};
	struct ld *l = ld_of(w);
	l->robots_given = 1;
	return hakoi_walk_value(w, v, &arr, l);
}

/* What gen writes into each node's folder besides the pdudef (gen_write.c): refused up front,
 * before anything is written. */
static int taken_name(const hakoi_gen_t *g, const char *name)
{
	static const char *const taken[] = {"launch.json", "bridge.json", "endpoints.json",
	                                    "conductor",   "endpoint",    NULL};
	for (size_t i = 0; taken[i] != NULL; i++) {
		if (strcmp(name, taken[i]) == 0) {
			return 1;
		}
	}
	return g->rd && strcmp(name, HAKOI_GEN_RD_FILE) == 0;
}

/* With robot_types and robots, "pdudef" names the file Hakoniwa's generator writes: each node's
 * copy gets that name. Without them, it is the pdudef to read (relative to the eu-input). */
int hakoi_gen_parse_pdudef(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_gen_t *g = base;
	struct ld *l = ld_of(w);
	char name[sizeof(g->pdudef_name)], path[512];
	int r = hakoi_gen_get_string(w, v, name, sizeof(name));
	if (r != 0) {
		return r;
	}
	l->pdudef_given = 1;
	if ((r = no_backslash(w, name)) != 0) {
		return r;
	}
	if (l->robots_given) {
		if (strchr(name, '/') != NULL || strcmp(name, ".") == 0 ||
		    strcmp(name, "..") == 0) {
			return hakoi_walk_fail(
			    w,
			    "\"%s\": with robot_types and robots, pdudef names the "
			    "generated file: a file name without '/'",
			    name);
		}
		if (taken_name(g, name)) {
			return hakoi_walk_fail(
			    w,
			    "\"%s\" is the name of another file or folder of each "
			    "node",
			    name);
		}
		snprintf(g->pdudef_name, sizeof(g->pdudef_name), "%s", name);
		return 0;
	}
	if ((r = hakoi_walk_resolve(w, name, path, sizeof(path))) != 0) {
		return r;
	}
	hako_error_t sub;
	r = hako_pdudef_load(path, &g->pdudef, &sub);
	return r != 0 ? hakoi_walk_sub_error(w, r, &sub, path) : 0;
}

static void json_quote(FILE *f, const char *s)
{
	json_t *j = json_string(s);
	char *t = j != NULL ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	fputs(t != NULL ? t : "\"\"", f);
	free(t);
	json_decref(j);
}

/* robot_types + robots as a compact pdudef in a temporary file, loaded by the registry: the
 * registry reads the pdutypes files, and its errors name them. */
int hakoi_gen_build_pdudef(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_gen_t *g = base;
	struct ld *l = ld_of(w);
	if (!l->robots_given || l->robot_count == 0) {
		return 0;
	}
	const char *tmpdir = getenv("TMPDIR");
	char tmp[512];
	snprintf(tmp, sizeof(tmp), "%s/hako-gen-pdudef-XXXXXX.json",
	         tmpdir != NULL && tmpdir[0] != '\0' ? tmpdir : "/tmp");
	int fd = mkstemps(tmp, 5);
	FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (out == NULL) {
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		hakoi_walk_push_key(w, "robots");
		return hakoi_walk_fail(w, "cannot write a temporary pdudef in %s: %s",
		                       tmpdir != NULL ? tmpdir : "/tmp", strerror(errno));
	}
	fputs("{\"paths\": [", out);
	for (size_t i = 0; i < l->rtype_count; i++) {
		fputs(i > 0 ? ", {\"id\": " : "{\"id\": ", out);
		json_quote(out, l->rtypes[i].name);
		fputs(", \"path\": ", out);
		json_quote(out, l->rtypes[i].pdutypes);
		fputs("}", out);
	}
	fputs("], \"robots\": [", out);
	for (size_t i = 0; i < l->robot_count; i++) {
		fputs(i > 0 ? ", {\"name\": " : "{\"name\": ", out);
		json_quote(out, l->robots[i].name);
		fputs(", \"pdutypes_id\": ", out);
		json_quote(out, l->robots[i].type);
		fputs("}", out);
	}
	fputs("]}\n", out);
	int bad = ferror(out);
	bad |= fclose(out) != 0;
	hako_error_t sub;
	int r = bad ? HAKO_EIO : hako_pdudef_load(tmp, &g->pdudef, &sub);
	unlink(tmp);
	if (r == 0) {
		return 0;
	}
	hakoi_walk_push_key(w, "robots");
	if (bad) {
		return hakoi_walk_fail(w, "cannot write a temporary pdudef %s", tmp);
	}
	if (strcmp(sub.file, tmp) == 0) { /* about the robots, not inside a pdutypes file */
		return hakoi_walk_fail(w, "%s", sub.message);
	}
	return hakoi_walk_sub_error(w, r, &sub, tmp);
}
