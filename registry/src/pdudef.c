/* The pdudef loader: the legacy and compact forms as tables of the config toolkit (hakoi/cfg.h),
 * with callbacks for what a table cannot say: PDUs merged across the four legacy lists, robot
 * and path ids unique, pdutypes files read once and shared. Keys of Hakoniwa's files that hako
 * does not read (write_cycle, method_type, ...) are accepted, as Hakoniwa's loader does, and so
 * is a PDU given twice with two sizes (a warning; the larger is kept). */
#include "hako/pdudef.h"

#include "hako/log.h"
#include "hakoi/cfg.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_LEN 512 /* hako_pdudef_t.path and hako_error_t.file */

/* A "paths" entry of the compact form; its file is read once however many robots share it. */
struct pdutypes {
	char id[HAKO_NAME_MAX];
	char path[PATH_LEN]; /* resolved against the pdudef's folder */
	int loaded;
	hako_pdudef_robot_t list; /* only pdu_count and pdus are used */
};

/* Where an entry of the PDU list being built was given, in the file being walked: kept to name
 * both places when a later entry repeats it with another size. Lists are built one at a time (a
 * robot's four legacy lists, then the next robot's; one pdutypes file), so places[i] is where
 * entry i of the current list came from. */
struct place {
	hakoi_json_seg_t path[HAKOI_JCTX_DEPTH];
	size_t depth;
};

/* What the tables fill (w->user); the robots move into the hako_pdudef_t when all is read. */
struct load {
	size_t robot_count;
	hako_pdudef_robot_t *robots;
	size_t type_count;
	struct pdutypes *types;
	struct place *places;
	size_t place_cap;
};

/* A legacy list entry; its "name" (robot + "_" + org_name) is checked, not kept. */
struct legacy_entry {
	hako_pdudef_pdu_t p;
	char full_name[HAKO_NAME_MAX];
};

#define PDU_FIELDS(T, P, name_key)                                                                 \
	HAKOI_STRING("type", HAKOI_F_REQUIRED, T, P.type),                                         \
	    HAKOI_STRING(name_key, HAKOI_F_REQUIRED, T, P.name),                                   \
	    HAKOI_INT("channel_id", HAKOI_F_REQUIRED, T, P.channel_id, 0, INT32_MAX),              \
	    HAKOI_INT("pdu_size", HAKOI_F_REQUIRED | HAKOI_F_UNSIGNED, T, P.pdu_size, 1,           \
	              UINT32_MAX)

static const hakoi_field_t legacy_pdu_fields[] = {
    PDU_FIELDS(struct legacy_entry, p, "org_name"),
    HAKOI_STRING("name", 0, struct legacy_entry, full_name),
    HAKOI_OTHERS,
    HAKOI_END,
};

/* pdutypes entries are PDUs as they are: the wrapper gives the macro a member to name. */
struct compact_entry {
	hako_pdudef_pdu_t p;
};

static const hakoi_field_t compact_pdu_fields[] = {
    PDU_FIELDS(struct compact_entry, p, "name"),
    HAKOI_OTHERS,
    HAKOI_END,
};

/* Hakoniwa loads a PDU listed twice with two sizes (its own drone_pdu_config.json gives
 * "battery" 64 bytes as a reader and 56 as a writer), so hako does too, keeping the larger
 * size: what a writer of either size writes fits. The warning names both places. */
static void warn_size(hakoi_walk_t *w, const struct place *first, const hako_pdudef_pdu_t *q,
                      const hako_pdudef_pdu_t *p)
{
	hakoi_json_seg_t at[HAKOI_JCTX_DEPTH];
	size_t depth = first->depth;
	memcpy(at, first->path, depth * sizeof(at[0]));
	if (depth < HAKOI_JCTX_DEPTH) {
		at[depth++] = (hakoi_json_seg_t){.key = "pdu_size"};
	}
	int line = 0, column = 0;
	char where[256];
	hakoi_json_pos(w->j.text, w->j.len, at, depth, &line, &column);
	hakoi_json_path_format(at, depth, where, sizeof(where));
	uint32_t larger = p->pdu_size > q->pdu_size ? p->pdu_size : q->pdu_size;
	hakoi_walk_push_key(w, "pdu_size");
	hakoi_walk_warn(w,
	                "\"%s\" is %" PRIu32 " bytes here and %" PRIu32
	                " at %s:%d:%d (%s); the larger, %" PRIu32 ", is used",
	                p->name, p->pdu_size, q->pdu_size, w->j.file, line, column, where, larger);
	hakoi_walk_pop(w);
}

/* Remember where entry i of the list being built is: the entry at the walk's current path. */
static int keep_place(hakoi_walk_t *w, size_t i)
{
	struct load *l = w->user;
	if (i >= l->place_cap) {
		size_t cap = l->place_cap == 0 ? 16 : l->place_cap * 2;
		struct place *np = realloc(l->places, cap * sizeof(*np));
		if (np == NULL) {
			return hakoi_walk_fail_oom(w);
		}
		l->places = np;
		l->place_cap = cap;
	}
	struct place *pl = &l->places[i];
	pl->depth = w->j.depth < HAKOI_JCTX_DEPTH ? w->j.depth : HAKOI_JCTX_DEPTH;
	memcpy(pl->path, w->j.path, pl->depth * sizeof(pl->path[0]));
	return 0;
}

/* Append p to r, or merge it into the entry it repeats: legacy files list a PDU among both the
 * readers and the writers. A channel or a name may not stand for two different PDUs; two sizes
 * of one PDU are warned about (warn_size). */
static int add_pdu(hakoi_walk_t *w, hako_pdudef_robot_t *r, const hako_pdudef_pdu_t *p,
                   const char *name_key)
{
	const struct load *l = w->user;
	for (size_t i = 0; i < r->pdu_count; i++) {
		hako_pdudef_pdu_t *q = &r->pdus[i];
		int same_name = strcmp(q->name, p->name) == 0;
		if (q->channel_id != p->channel_id && !same_name) {
			continue;
		}
		if (!same_name) {
			hakoi_walk_push_key(w, "channel_id");
			return hakoi_walk_fail(w, "channel %" PRId32 " is already used by \"%s\"",
			                       p->channel_id, q->name);
		}
		if (q->channel_id != p->channel_id) {
			hakoi_walk_push_key(w, name_key);
			return hakoi_walk_fail(w,
			                       "\"%s\" is already defined with channel_id %" PRId32,
			                       p->name, q->channel_id);
		}
		if (strcmp(q->type, p->type) != 0) {
			hakoi_walk_push_key(w, "type");
			return hakoi_walk_fail(w, "\"%s\" is already defined with type %s", p->name,
			                       q->type);
		}
		if (q->pdu_size != p->pdu_size) {
			warn_size(w, &l->places[i], q, p);
			if (p->pdu_size > q->pdu_size) {
				q->pdu_size = p->pdu_size;
			}
		}
		q->is_reader |= p->is_reader;
		q->is_writer |= p->is_writer;
		return 0;
	}
	int rc = keep_place(w, r->pdu_count);
	if (rc != 0) {
		return rc;
	}
	hako_pdudef_pdu_t *npdus = realloc(r->pdus, (r->pdu_count + 1) * sizeof(*npdus));
	if (npdus == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	r->pdus = npdus;
	r->pdus[r->pdu_count++] = *p;
	return 0;
}

/* Hakoniwa's core merges all four legacy lists; the rpc ones carry service request/response
 * PDUs. base is the robot. */
static int legacy_entry(hakoi_walk_t *w, json_t *e, void *base, int writer)
{
	struct legacy_entry en = {.p = {.is_reader = !writer, .is_writer = writer}};
	int r = hakoi_walk_object(w, e, legacy_pdu_fields, &en);
	return r != 0 ? r : add_pdu(w, base, &en.p, "org_name");
}

static int reader_entry(hakoi_walk_t *w, json_t *e, void *base, const hakoi_field_t *f)
{
	(void)f;
	return legacy_entry(w, e, base, 0);
}

static int writer_entry(hakoi_walk_t *w, json_t *e, void *base, const hakoi_field_t *f)
{
	(void)f;
	return legacy_entry(w, e, base, 1);
}

static int compact_entry(hakoi_walk_t *w, json_t *e, void *base, const hakoi_field_t *f)
{
	(void)f;
	struct compact_entry en = {.p = {.is_reader = 0}};
	int r = hakoi_walk_object(w, e, compact_pdu_fields, &en);
	return r != 0 ? r : add_pdu(w, base, &en.p, "name");
}

static int robot_unique(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const struct load *l = w->user;
	const hako_pdudef_robot_t *r = base;
	for (size_t j = 0; j < hakoi_walk_index(w); j++) {
		if (strcmp(l->robots[j].name, r->name) == 0) {
			return hakoi_walk_fail_dup(w, j, "robot \"%s\"", r->name);
		}
	}
	return 0;
}

static int path_id_unique(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const struct load *l = w->user;
	const struct pdutypes *t = base;
	for (size_t j = 0; j < hakoi_walk_index(w); j++) {
		if (strcmp(l->types[j].id, t->id) == 0) {
			return hakoi_walk_fail_dup(w, j, "id \"%s\"", t->id);
		}
	}
	return 0;
}

#define ROBOT_NAME                                                                                 \
	{                                                                                          \
		.key = "name", .kind = HAKOI_K_STRING, .flags = HAKOI_F_REQUIRED,                  \
		HAKOI_AT(hako_pdudef_robot_t, name), .check = robot_unique                         \
	}
#define LEGACY_LIST(key_, fn)                                                                      \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_ARRAY, .parse = (fn)                                \
	}

static const hakoi_field_t legacy_robot_fields[] = {
    ROBOT_NAME,
    LEGACY_LIST("shm_pdu_readers", reader_entry),
    LEGACY_LIST("shm_pdu_writers", writer_entry),
    LEGACY_LIST("rpc_pdu_readers", reader_entry),
    LEGACY_LIST("rpc_pdu_writers", writer_entry),
    HAKOI_OTHERS,
    HAKOI_END,
};

static int robot_pdutypes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);

static const hakoi_field_t compact_robot_fields[] = {
    ROBOT_NAME,
    HAKOI_CUSTOM("pdutypes_id", HAKOI_F_REQUIRED, robot_pdutypes, "a string"),
    HAKOI_OTHERS,
    HAKOI_END,
};

static const hakoi_field_t path_fields[] = {
    {.key = "id",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(struct pdutypes, id),
     .check = path_id_unique},
    HAKOI_PATH("path", HAKOI_F_REQUIRED, struct pdutypes, path),
    HAKOI_OTHERS,
    HAKOI_END,
};

static const hakoi_field_t legacy_robot = {.kind = HAKOI_K_OBJECT, .fields = legacy_robot_fields};
static const hakoi_field_t compact_robot = {.kind = HAKOI_K_OBJECT, .fields = compact_robot_fields};
static const hakoi_field_t path_entry = {.kind = HAKOI_K_OBJECT, .fields = path_fields};

static const hakoi_field_t legacy_fields[] = {
    {.key = "robots",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_ELEMS_NEW(struct load, robots, robot_count),
     .elem = &legacy_robot},
    HAKOI_OTHERS,
    HAKOI_END,
};

/* Selected by the presence of "paths". */
static const hakoi_field_t compact_fields[] = {
    {.key = "paths",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_ELEMS_NEW(struct load, types, type_count),
     .elem = &path_entry},
    {.key = "robots",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_ELEMS_NEW(struct load, robots, robot_count),
     .elem = &compact_robot},
    HAKOI_OTHERS,
    HAKOI_END,
};

/* A pdutypes file: an array of PDUs, merged into t->list as a legacy list is. */
static const hakoi_field_t pdutypes_list = {.kind = HAKOI_K_ARRAY, .parse = compact_entry};

/* Read the file of paths[k]. Errors opening it point at its path in the pdudef (w's document);
 * errors inside it point into the pdutypes file. */
static int load_pdutypes(const hakoi_walk_t *w, size_t k, struct pdutypes *t)
{
	hako_error_t *err = w->j.err;
	char *text = NULL;
	size_t len = 0;
	int e = hakoi_read_file(t->path, &text, &len);
	if (e != 0) {
		char what[PATH_LEN + 100];
		hakoi_walk_t at;
		hakoi_walk_init(&at, err, w->j.file, w->j.text, w->j.len, NULL);
		hakoi_walk_push_key(&at, "paths");
		hakoi_walk_push_index(&at, k);
		hakoi_walk_push_key(&at, "path");
		snprintf(what, sizeof(what), "cannot open %s: %s", t->path,
		         hakoi_read_file_strerror(e));
		return hakoi_jctx_report(&at.j, at.j.depth, hakoi_read_file_code(e), what);
	}
	json_t *root = NULL;
	int r = hakoi_cfg_parse(t->path, text, len, err, &root);
	if (r == 0) {
		hakoi_walk_t in;
		hakoi_walk_init(&in, err, t->path, text, len, w->user);
		r = hakoi_walk_value(&in, root, &pdutypes_list, &t->list);
	}
	json_decref(root);
	free(text);
	t->loaded = r == 0;
	return r;
}

/* pdutypes_id: the robot's PDUs are those of the paths entry with that id. */
static int robot_pdutypes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	static const hakoi_field_t id_field = {.kind = HAKOI_K_STRING, .size = HAKO_NAME_MAX};
	struct load *l = w->user;
	hako_pdudef_robot_t *r = base;
	char id[HAKO_NAME_MAX];
	(void)f;
	int rc = hakoi_walk_value(w, v, &id_field, id);
	if (rc != 0) {
		return rc;
	}
	size_t k = 0;
	while (k < l->type_count && strcmp(l->types[k].id, id) != 0) {
		k++;
	}
	if (k == l->type_count) {
		return hakoi_walk_fail(w, "\"%s\" is not in paths", id);
	}
	struct pdutypes *t = &l->types[k];
	if (!t->loaded && (rc = load_pdutypes(w, k, t)) != 0) {
		return rc;
	}
	if (t->list.pdu_count > 0) {
		r->pdus = malloc(t->list.pdu_count * sizeof(*r->pdus));
		if (r->pdus == NULL) {
			return hakoi_walk_fail_oom(w);
		}
		memcpy(r->pdus, t->list.pdus, t->list.pdu_count * sizeof(*r->pdus));
		r->pdu_count = t->list.pdu_count;
	}
	return 0;
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
	json_t *root;
	char *text;
	size_t len;
	int rc = hakoi_cfg_load(path, err, &root, &text, &len);
	if (rc != 0) {
		return rc;
	}
	struct load l = {0};
	hakoi_walk_t w;
	hakoi_walk_init(&w, err, path, text, len, &l);
	int compact = json_object_get(root, "paths") != NULL;
	rc = hakoi_walk_object(&w, root, compact ? compact_fields : legacy_fields, &l);
	json_decref(root);
	free(text);
	for (size_t k = 0; k < l.type_count; k++) {
		free(l.types[k].list.pdus);
	}
	free(l.types);
	free(l.places);
	hako_pdudef_t *def = rc == 0 ? calloc(1, sizeof(*def)) : NULL;
	if (rc == 0 && def == NULL) {
		rc = hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	if (rc != 0) {
		for (size_t i = 0; i < l.robot_count; i++) {
			free(l.robots[i].pdus);
		}
		free(l.robots);
		return rc;
	}
	def->robot_count = l.robot_count;
	def->robots = l.robots;
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
