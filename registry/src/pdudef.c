#include "hako/pdudef.h"

#include "hako/log.h"
#include "hakoi/json_pos.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_LEN 512 /* hako_pdudef_t.path and hako_error_t.file */

/* One JSON file; its text is kept so errors can point at a line and column. */
struct doc {
	char file[PATH_LEN];
	char *text;
	size_t len;
	json_t *root;
};

/* The file being checked and the path of the value being checked. After an error the path is
 * left as it was when the error was reported: nothing reads it again. */
struct ctx {
	hakoi_jctx_t j; /* file, text and path of doc: errors point at file:line:column */
	const struct doc *doc;
};

/* A "paths" entry of the compact form; its file is read once however many robots share it. */
struct pdutypes {
	char id[HAKO_PDUDEF_NAME_MAX];
	char path[PATH_LEN];
	int loaded;
	hako_pdudef_robot_t list; /* only pdu_count and pdus are used */
};

struct compact {
	size_t count;
	struct pdutypes *types;
};

#define push_key(c, key)     hakoi_jctx_push_key(&(c)->j, (key))
#define push_index(c, index) hakoi_jctx_push_index(&(c)->j, (index))
#define pop(c)               hakoi_jctx_pop(&(c)->j)
#define fail_oom(c)          hakoi_jctx_fail_oom(&(c)->j)

static struct ctx ctx_for(hako_error_t *err, const struct doc *d)
{
	return (struct ctx){.j = {.err = err, .file = d->file, .text = d->text, .len = d->len},
	                    .doc = d};
}

/* Report the value at the current path, positioned at its first `at` segments (json_pos.h). */
static int fail_at(struct ctx *c, size_t at, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_at(struct ctx *c, size_t at, int code, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return hakoi_jctx_report(&c->j, at, code, what);
}

#define fail(c, ...)       fail_at((c), (c)->j.depth, HAKO_ECONFIG, __VA_ARGS__)
#define fail_missing(c, e) fail_at((c), (c)->j.depth - 1, HAKO_ECONFIG, "missing (must be %s)", (e))

static int errno_code(int e)
{
	if (e == ENOENT || e == ENOTDIR) {
		return HAKO_ENOENT;
	}
	return e == ENOMEM ? HAKO_ENOMEM : HAKO_EIO;
}

/* Parse d->text; a syntax error is reported at jansson's line and column. */
static int doc_parse(struct doc *d, hako_error_t *err)
{
	json_error_t jerr;
	d->root = json_loadb(d->text, d->len, 0, &jerr);
	if (d->root == NULL) {
		return hako_error_set(err, HAKO_ECONFIG, d->file, jerr.line > 0 ? jerr.line : 0,
		                      jerr.column > 0 ? jerr.column : 0, "invalid JSON: %s",
		                      jerr.text);
	}
	return 0;
}

static void doc_free(struct doc *d)
{
	json_decref(d->root);
	free(d->text);
}

/* A non-empty string member shorter than size bytes. An absent optional member leaves out "". */
static int get_string(struct ctx *c, json_t *obj, const char *key, int required, char *out,
                      size_t size)
{
	json_t *v = json_object_get(obj, key);
	out[0] = '\0';
	push_key(c, key);
	if (v == NULL) {
		if (required) {
			return fail_missing(c, "a string");
		}
	} else if (!json_is_string(v)) {
		return fail(c, "must be a string");
	} else {
		size_t n = json_string_length(v);
		if (n == 0) {
			return fail(c, "must not be empty");
		}
		if (n >= size) {
			return fail(c, "is %zu bytes long; the limit is %zu", n, size - 1);
		}
		memcpy(out, json_string_value(v), n + 1);
	}
	pop(c);
	return 0;
}

static int get_name(struct ctx *c, json_t *obj, const char *key, int required, char *out)
{
	return get_string(c, obj, key, required, out, HAKO_PDUDEF_NAME_MAX);
}

/* An integer member in [min, max]; `expected` describes the lower bound ("a positive integer"). */
static int get_int(struct ctx *c, json_t *obj, const char *key, json_int_t min, json_int_t max,
                   const char *expected, json_int_t *out)
{
	json_t *v = json_object_get(obj, key);
	push_key(c, key);
	if (v == NULL) {
		return fail_missing(c, expected);
	}
	if (!json_is_integer(v) || json_integer_value(v) < min) {
		return fail(c, "must be %s", expected);
	}
	if (json_integer_value(v) > max) {
		return fail(c, "must be at most %" JSON_INTEGER_FORMAT, max);
	}
	*out = json_integer_value(v);
	pop(c);
	return 0;
}

/* One PDU entry; its short name is the member name_key ("org_name" legacy, "name" compact). */
static int load_pdu(struct ctx *c, json_t *e, const char *name_key, hako_pdudef_pdu_t *p)
{
	json_int_t channel_id = 0;
	json_int_t pdu_size = 0;
	int rc;
	if (!json_is_object(e)) {
		return fail(c, "must be an object");
	}
	if ((rc = get_name(c, e, "type", 1, p->type)) != 0 ||
	    (rc = get_name(c, e, name_key, 1, p->name)) != 0 ||
	    (rc = get_int(c, e, "channel_id", 0, INT32_MAX, "an integer >= 0", &channel_id)) != 0 ||
	    (rc = get_int(c, e, "pdu_size", 1, UINT32_MAX, "a positive integer", &pdu_size)) != 0) {
		return rc;
	}
	p->channel_id = (int32_t)channel_id;
	p->pdu_size = (uint32_t)pdu_size;
	return 0;
}

/* Append p to r, or merge it into the entry it repeats: legacy files list a PDU among both the
 * readers and the writers. A channel or a name may not stand for two different PDUs. */
static int add_pdu(struct ctx *c, hako_pdudef_robot_t *r, size_t *cap, const hako_pdudef_pdu_t *p,
                   const char *name_key)
{
	for (size_t i = 0; i < r->pdu_count; i++) {
		hako_pdudef_pdu_t *q = &r->pdus[i];
		int same_name = strcmp(q->name, p->name) == 0;
		if (q->channel_id != p->channel_id && !same_name) {
			continue;
		}
		if (!same_name) {
			push_key(c, "channel_id");
			return fail(c, "channel %" PRId32 " is already used by \"%s\"",
			            p->channel_id, q->name);
		}
		if (q->channel_id != p->channel_id) {
			push_key(c, name_key);
			return fail(c, "\"%s\" is already defined with channel_id %" PRId32,
			            p->name, q->channel_id);
		}
		if (q->pdu_size != p->pdu_size) {
			push_key(c, "pdu_size");
			return fail(c, "\"%s\" is already defined with pdu_size %" PRIu32, p->name,
			            q->pdu_size);
		}
		if (strcmp(q->type, p->type) != 0) {
			push_key(c, "type");
			return fail(c, "\"%s\" is already defined with type %s", p->name, q->type);
		}
		q->is_reader |= p->is_reader;
		q->is_writer |= p->is_writer;
		return 0;
	}
	if (r->pdu_count == *cap) {
		size_t ncap = *cap > 0 ? *cap * 2 : 8;
		hako_pdudef_pdu_t *npdus = realloc(r->pdus, ncap * sizeof(*npdus));
		if (npdus == NULL) {
			return fail_oom(c);
		}
		r->pdus = npdus;
		*cap = ncap;
	}
	r->pdus[r->pdu_count++] = *p;
	return 0;
}

/* Hakoniwa's core merges all four lists; the rpc ones carry service request/response PDUs. */
static const struct {
	const char *key;
	int writer;
} legacy_lists[] = {
    {"shm_pdu_readers", 0},
    {"shm_pdu_writers", 1},
    {"rpc_pdu_readers", 0},
    {"rpc_pdu_writers", 1},
};

static int load_legacy_robot(struct ctx *c, json_t *jr, hako_pdudef_robot_t *r)
{
	size_t cap = 0;
	for (size_t l = 0; l < sizeof(legacy_lists) / sizeof(legacy_lists[0]); l++) {
		json_t *list = json_object_get(jr, legacy_lists[l].key);
		if (list == NULL) {
			continue;
		}
		push_key(c, legacy_lists[l].key);
		if (!json_is_array(list)) {
			return fail(c, "must be an array");
		}
		for (size_t i = 0; i < json_array_size(list); i++) {
			json_t *e = json_array_get(list, i);
			hako_pdudef_pdu_t p = {.is_reader = !legacy_lists[l].writer,
			                       .is_writer = legacy_lists[l].writer};
			char full_name[HAKO_PDUDEF_NAME_MAX];
			int rc;
			push_index(c, i);
			if ((rc = load_pdu(c, e, "org_name", &p)) != 0 ||
			    (rc = get_name(c, e, "name", 0, full_name)) != 0 ||
			    (rc = add_pdu(c, r, &cap, &p, "org_name")) != 0) {
				return rc;
			}
			pop(c);
		}
		pop(c);
	}
	return 0;
}

static int load_pdutypes_list(struct ctx *c, hako_pdudef_robot_t *list)
{
	json_t *root = c->doc->root;
	size_t cap = 0;
	if (!json_is_array(root)) {
		return fail(c, "must be an array");
	}
	for (size_t i = 0; i < json_array_size(root); i++) {
		hako_pdudef_pdu_t p = {0};
		int rc;
		push_index(c, i);
		if ((rc = load_pdu(c, json_array_get(root, i), "name", &p)) != 0 ||
		    (rc = add_pdu(c, list, &cap, &p, "name")) != 0) {
			return rc;
		}
		pop(c);
	}
	return 0;
}

/* Read paths[k]'s file, relative to the directory of the pdudef file. Errors about opening it
 * point at the path in the pdudef; errors inside it point into the pdutypes file. */
static int load_pdutypes(const struct ctx *c, size_t k, struct pdutypes *t)
{
	struct ctx at = ctx_for(c->j.err, c->doc);
	push_key(&at, "paths");
	push_index(&at, k);
	push_key(&at, "path");

	const char *slash = strrchr(c->doc->file, '/');
	int dir_len = t->path[0] == '/' || slash == NULL ? 0 : (int)(slash - c->doc->file + 1);
	struct doc d = {.text = NULL};
	int n = snprintf(d.file, sizeof(d.file), "%.*s%s", dir_len, c->doc->file, t->path);
	if (n < 0 || (size_t)n >= sizeof(d.file)) {
		return fail(&at, "resolved path is too long (limit %d bytes)", PATH_LEN - 1);
	}
	int e = hakoi_read_file(d.file, &d.text, &d.len);
	if (e != 0) {
		return fail_at(&at, at.j.depth, errno_code(e), "cannot open %s: %s", d.file,
		               hakoi_read_file_strerror(e));
	}
	int rc = doc_parse(&d, c->j.err);
	if (rc == 0) {
		struct ctx in = ctx_for(c->j.err, &d);
		rc = load_pdutypes_list(&in, &t->list);
	}
	doc_free(&d);
	t->loaded = rc == 0;
	return rc;
}

static int load_paths(struct ctx *c, struct compact *cp)
{
	json_t *paths = json_object_get(c->doc->root, "paths");
	push_key(c, "paths");
	if (!json_is_array(paths)) {
		return fail(c, "must be an array");
	}
	cp->types = calloc(json_array_size(paths) + 1, sizeof(*cp->types));
	if (cp->types == NULL) {
		return fail_oom(c);
	}
	for (size_t i = 0; i < json_array_size(paths); i++) {
		json_t *e = json_array_get(paths, i);
		struct pdutypes *t = &cp->types[cp->count++];
		int rc;
		push_index(c, i);
		if (!json_is_object(e)) {
			return fail(c, "must be an object");
		}
		if ((rc = get_name(c, e, "id", 1, t->id)) != 0 ||
		    (rc = get_string(c, e, "path", 1, t->path, sizeof(t->path))) != 0) {
			return rc;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(cp->types[j].id, t->id) == 0) {
				push_key(c, "id");
				return fail(c, "id \"%s\" is already used by paths[%zu]", t->id, j);
			}
		}
		pop(c);
	}
	pop(c);
	return 0;
}

static int load_compact_robot(struct ctx *c, json_t *jr, hako_pdudef_robot_t *r, struct compact *cp)
{
	char id[HAKO_PDUDEF_NAME_MAX];
	int rc = get_name(c, jr, "pdutypes_id", 1, id);
	if (rc != 0) {
		return rc;
	}
	size_t k = 0;
	while (k < cp->count && strcmp(cp->types[k].id, id) != 0) {
		k++;
	}
	if (k == cp->count) {
		push_key(c, "pdutypes_id");
		return fail(c, "no paths entry has id \"%s\"", id);
	}
	struct pdutypes *t = &cp->types[k];
	if (!t->loaded && (rc = load_pdutypes(c, k, t)) != 0) {
		return rc;
	}
	if (t->list.pdu_count > 0) {
		r->pdus = malloc(t->list.pdu_count * sizeof(*r->pdus));
		if (r->pdus == NULL) {
			return fail_oom(c);
		}
		memcpy(r->pdus, t->list.pdus, t->list.pdu_count * sizeof(*r->pdus));
		r->pdu_count = t->list.pdu_count;
	}
	return 0;
}

/* The robots of either form; cp is NULL for the legacy form. */
static int load_robots(struct ctx *c, hako_pdudef_t *def, struct compact *cp)
{
	json_t *robots = json_object_get(c->doc->root, "robots");
	push_key(c, "robots");
	if (robots == NULL) {
		return fail_missing(c, "an array");
	}
	if (!json_is_array(robots)) {
		return fail(c, "must be an array");
	}
	size_t n = json_array_size(robots);
	def->robots = calloc(n + 1, sizeof(*def->robots));
	if (def->robots == NULL) {
		return fail_oom(c);
	}
	for (size_t i = 0; i < n; i++) {
		json_t *jr = json_array_get(robots, i);
		hako_pdudef_robot_t *r = &def->robots[def->robot_count++];
		int rc;
		push_index(c, i);
		if (!json_is_object(jr)) {
			return fail(c, "must be an object");
		}
		if ((rc = get_name(c, jr, "name", 1, r->name)) != 0) {
			return rc;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(def->robots[j].name, r->name) == 0) {
				push_key(c, "name");
				return fail(c, "robot \"%s\" is already defined by robots[%zu]",
				            r->name, j);
			}
		}
		rc = cp != NULL ? load_compact_robot(c, jr, r, cp) : load_legacy_robot(c, jr, r);
		if (rc != 0) {
			return rc;
		}
		pop(c);
	}
	pop(c);
	return 0;
}

static int load_def(const struct doc *d, hako_pdudef_t *def, hako_error_t *err)
{
	struct ctx c = ctx_for(err, d);
	if (!json_is_object(d->root)) {
		return fail(&c, "must be an object");
	}
	if (json_object_get(d->root, "paths") == NULL) {
		return load_robots(&c, def, NULL);
	}
	struct compact cp = {0};
	int rc = load_paths(&c, &cp);
	if (rc == 0) {
		rc = load_robots(&c, def, &cp);
	}
	for (size_t k = 0; k < cp.count; k++) {
		free(cp.types[k].list.pdus);
	}
	free(cp.types);
	return rc;
}

int hako_pdudef_load(const char *path, hako_pdudef_t **out, hako_error_t *err)
{
	hako_error_clear(err);
	if (out != NULL) {
		*out = NULL;
	}
	if (path == NULL || out == NULL) {
		return hako_error_set(err, HAKO_EINVAL, path, 0, 0, "no path or no result pointer");
	}
	if (strlen(path) >= PATH_LEN) {
		return hako_error_set(err, HAKO_ENAMETOOLONG, path, 0, 0,
		                      "path is too long (limit %d bytes)", PATH_LEN - 1);
	}
	struct doc d = {.text = NULL};
	snprintf(d.file, sizeof(d.file), "%s", path);
	int e = hakoi_read_file(path, &d.text, &d.len);
	if (e != 0) {
		return hako_error_set(err, errno_code(e), path, 0, 0, "cannot open: %s",
		                      hakoi_read_file_strerror(e));
	}
	hako_pdudef_t *def = calloc(1, sizeof(*def));
	int rc = def != NULL ? doc_parse(&d, err)
	                     : hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	if (rc == 0) {
		rc = load_def(&d, def, err);
	}
	doc_free(&d);
	if (rc != 0) {
		hako_pdudef_free(def);
		return rc;
	}
	snprintf(def->path, sizeof(def->path), "%s", path);
	HAKO_DEBUG("pdudef %s: %zu robots", path, def->robot_count);
	*out = def;
	return 0;
}

void hako_pdudef_free(hako_pdudef_t *def)
{
	if (def == NULL) {
		return;
	}
	for (size_t i = 0; i < def->robot_count; i++) {
		free(def->robots[i].pdus);
	}
	free(def->robots);
	free(def);
}

const hako_pdudef_robot_t *hako_pdudef_robot(const hako_pdudef_t *def, const char *robot)
{
	if (def == NULL || robot == NULL) {
		return NULL;
	}
	for (size_t i = 0; i < def->robot_count; i++) {
		if (strcmp(def->robots[i].name, robot) == 0) {
			return &def->robots[i];
		}
	}
	return NULL;
}

const hako_pdudef_pdu_t *hako_pdudef_find(const hako_pdudef_t *def, const char *robot,
                                          const char *name)
{
	const hako_pdudef_robot_t *r = hako_pdudef_robot(def, robot);
	if (r == NULL || name == NULL) {
		return NULL;
	}
	for (size_t i = 0; i < r->pdu_count; i++) {
		if (strcmp(r->pdus[i].name, name) == 0) {
			return &r->pdus[i];
		}
	}
	return NULL;
}

const hako_pdudef_pdu_t *hako_pdudef_find_channel(const hako_pdudef_t *def, const char *robot,
                                                  int32_t channel_id)
{
	const hako_pdudef_robot_t *r = hako_pdudef_robot(def, robot);
	if (r == NULL) {
		return NULL;
	}
	for (size_t i = 0; i < r->pdu_count; i++) {
		if (r->pdus[i].channel_id == channel_id) {
			return &r->pdus[i];
		}
	}
	return NULL;
}
