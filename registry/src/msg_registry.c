/* The type registry: finds pkg/Type on the search path (added folders, $HAKO_MSG_PATH, the
 * built-in packages), loads it and its nested types once, and keeps them until destroy. */
#include "msg_internal.h"

#include "hako/log.h"
#include "hakoi/json_pos.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PATH_LEN  512 /* hako_msg_type_t.path and hako_error_t.file */
#define DEPTH_MAX 64  /* types nested deeper than this are refused, so loading never runs deep */
/* A folder leaves room for "/<pkg>/msg/<Type>.msg" within PATH_LEN. */
#define DIR_LEN_MAX (PATH_LEN - 2 * (HAKO_MSG_NAME_MAX - 1) - 11)

/* A type and its fields in one block, so a type never moves once loaded. */
struct loaded {
	hako_msg_type_t type;
	hako_msg_field_t fields[];
};

struct hako_msg_registry {
	pthread_mutex_t lock;
	char **dirs; /* in search order */
	size_t dir_count;
	struct loaded **types; /* sorted by full_name */
	size_t type_count;
	size_t type_cap;
	const char *loading[DEPTH_MAX]; /* full names of the types being loaded, outermost first */
	size_t depth;
};

/* The line of a .msg file that names a nested type, where errors about that type point. */
struct ref {
	const char *path;
	int line;
	int column;
};

static int load(hako_msg_registry_t *reg, const char *pkg, const char *name, const struct ref *ref,
                const hako_msg_type_t **out, hako_error_t *err);

static int by_full_name(const void *k, const void *e)
{
	const struct loaded *const *l = e;
	return strcmp(k, (*l)->type.full_name);
}

static struct loaded *find(const hako_msg_registry_t *reg, const char *full)
{
	if (reg->type_count == 0) {
		return NULL;
	}
	struct loaded **l =
	    bsearch(full, reg->types, reg->type_count, sizeof(*reg->types), by_full_name);
	return l != NULL ? *l : NULL;
}

static int insert(hako_msg_registry_t *reg, struct loaded *l)
{
	if (reg->type_count == reg->type_cap) {
		size_t ncap = reg->type_cap > 0 ? reg->type_cap * 2 : 64;
		struct loaded **nt = realloc(reg->types, ncap * sizeof(*nt));
		if (nt == NULL) {
			return HAKO_ENOMEM;
		}
		reg->types = nt;
		reg->type_cap = ncap;
	}
	size_t i = reg->type_count;
	while (i > 0 && strcmp(reg->types[i - 1]->type.full_name, l->type.full_name) > 0) {
		i--;
	}
	memmove(&reg->types[i + 1], &reg->types[i], (reg->type_count - i) * sizeof(*reg->types));
	reg->types[i] = l;
	reg->type_count++;
	return 0;
}

/* "/a, /b and the built-in packages" */
static void describe_path(const hako_msg_registry_t *reg, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < reg->dir_count && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i > 0 ? ", " : "", reg->dirs[i]);
		used += n > 0 ? (size_t)n : 0;
	}
	if (used < len) {
		snprintf(buf + used, len - used, "%sthe built-in packages",
		         reg->dir_count > 0 ? " and " : "");
	}
}

/* Read pkg/name.msg from the first folder that has it, else take the built-in text. Returns 0
 * with *text malloc'd (*owned = 1) or built in (*owned = 0) and its path in path, HAKO_ENOENT,
 * or HAKO_EIO / HAKO_ENOMEM with err set. */
static int find_source(const hako_msg_registry_t *reg, const char *pkg, const char *name,
                       char *path, char **text, size_t *len, int *owned, hako_error_t *err)
{
	static const char *const layouts[] = {"%s/%s/%s.msg", "%s/%s/msg/%s.msg"};
	for (size_t i = 0; i < reg->dir_count; i++) {
		for (size_t j = 0; j < 2; j++) {
			int n = snprintf(path, PATH_LEN, layouts[j], reg->dirs[i], pkg, name);
			if (n < 0 || n >= PATH_LEN) {
				continue; /* cannot happen: add_path bounds the folders */
			}
			int e = hakoi_read_file(path, text, len);
			if (e == 0) {
				*owned = 1;
				return 0;
			}
			if (e == ENOMEM) {
				return hako_error_set(err, HAKO_ENOMEM, path, 0, 0,
				                      "out of memory");
			}
			if (e != ENOENT && e != ENOTDIR) {
				return hako_error_set(err, HAKO_EIO, path, 0, 0, "cannot open: %s",
				                      hakoi_read_file_strerror(e));
			}
		}
	}
	const char *builtin = hako_msg_builtin_text(pkg, name);
	if (builtin == NULL) {
		return HAKO_ENOENT;
	}
	snprintf(path, PATH_LEN, "<builtin>/%s/%s.msg", pkg, name);
	*text = (char *)builtin;
	*len = strlen(builtin);
	*owned = 0;
	return 0;
}

/* Parse text as pkg/name, load its nested types, lay it out and keep it. */
static int define(hako_msg_registry_t *reg, const char *pkg, const char *name, const char *text,
                  size_t len, const char *path, const hako_msg_type_t **out, hako_error_t *err)
{
	hakoi_msg_def_t def;
	int rc = hakoi_msg_parse(pkg, text, len, path, &def, err);
	if (rc != 0) {
		return rc;
	}
	struct loaded *l = calloc(1, sizeof(*l) + def.count * sizeof(l->fields[0]));
	if (l == NULL) {
		hakoi_msg_def_free(&def);
		return hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	hako_msg_type_t *t = &l->type;
	snprintf(t->pkg, sizeof(t->pkg), "%s", pkg);
	snprintf(t->name, sizeof(t->name), "%s", name);
	snprintf(t->full_name, sizeof(t->full_name), "%s/%s", pkg, name);
	snprintf(t->path, sizeof(t->path), "%s", path);
	t->field_count = def.count;
	t->fields = l->fields;

	reg->loading[reg->depth++] = t->full_name;
	for (size_t i = 0; i < def.count && rc == 0; i++) {
		const hakoi_msg_field_def_t *fd = &def.fields[i];
		hako_msg_field_t *f = &l->fields[i];
		memcpy(f->name, fd->name, sizeof(f->name));
		f->kind = fd->kind;
		f->form = fd->form;
		f->count = fd->count;
		f->line = fd->line;
		if (fd->kind == HAKO_MSG_STRUCT) {
			struct ref ref = {path, fd->line, fd->column};
			rc = load(reg, fd->type_pkg, fd->type_name, &ref, &f->type, err);
		}
	}
	reg->depth--;
	if (rc == 0) {
		rc = hakoi_msg_layout(t, l->fields, def.count, err);
	}
	if (rc == 0 && insert(reg, l) != 0) {
		rc = hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	hakoi_msg_def_free(&def);
	if (rc != 0) {
		free(l);
		return rc;
	}
	*out = t;
	return 0;
}

static int fail_recursion(const hako_msg_registry_t *reg, size_t from, const char *full,
                          const struct ref *ref, hako_error_t *err)
{
	char chain[400];
	size_t used = 0;
	chain[0] = '\0';
	for (size_t i = from; i < reg->depth && used < sizeof(chain); i++) {
		int n = snprintf(chain + used, sizeof(chain) - used, "%s -> ", reg->loading[i]);
		used += n > 0 ? (size_t)n : 0;
	}
	return hako_error_set(err, HAKO_ECONFIG, ref->path, ref->line, ref->column,
	                      "type %s contains itself (%s%s)", full, chain, full);
}

/* pkg/name, loaded now if need be. ref: where a .msg file names it (NULL for a lookup). */
static int load(hako_msg_registry_t *reg, const char *pkg, const char *name, const struct ref *ref,
                const hako_msg_type_t **out, hako_error_t *err)
{
	char full[HAKO_MSG_FULL_MAX];
	snprintf(full, sizeof(full), "%s/%s", pkg, name);
	struct loaded *l = find(reg, full);
	if (l != NULL) {
		*out = &l->type;
		return 0;
	}
	for (size_t i = 0; i < reg->depth; i++) {
		if (strcmp(reg->loading[i], full) == 0) {
			return fail_recursion(reg, i, full, ref, err);
		}
	}
	if (reg->depth == DEPTH_MAX) {
		return hako_error_set(err, HAKO_ECONFIG, ref->path, ref->line, ref->column,
		                      "%s: types nest more than %d levels deep", full, DEPTH_MAX);
	}

	char path[PATH_LEN];
	char *text = NULL;
	size_t len = 0;
	int owned = 0;
	int rc = find_source(reg, pkg, name, path, &text, &len, &owned, err);
	if (rc == HAKO_ENOENT) {
		char where[400];
		describe_path(reg, where, sizeof(where));
		if (ref != NULL) {
			return hako_error_set(err, HAKO_ECONFIG, ref->path, ref->line, ref->column,
			                      "unknown type %s (looked in %s)", full, where);
		}
		return hako_error_set(err, HAKO_ENOENT, full, 0, 0, "unknown type (looked in %s)",
		                      where);
	}
	if (rc != 0) {
		return rc;
	}
	rc = define(reg, pkg, name, text, len, path, out, err);
	if (owned) {
		free(text);
	}
	return rc;
}

/* Split "pkg/Type" (or "pkg/msg/Type", as ROS 2 tools print it) into checked names. */
static int split_name(const char *full, char *pkg, char *name)
{
	const char *slash = full != NULL ? strchr(full, '/') : NULL;
	if (slash == NULL || (size_t)(slash - full) >= HAKO_MSG_NAME_MAX) {
		return -1;
	}
	memcpy(pkg, full, (size_t)(slash - full));
	pkg[slash - full] = '\0';
	const char *rest = slash + 1;
	if (strncmp(rest, "msg/", 4) == 0) {
		rest += 4;
	}
	if (strlen(rest) >= HAKO_MSG_NAME_MAX) {
		return -1;
	}
	strcpy(name, rest);
	return hakoi_msg_name_ok(pkg) && hakoi_msg_name_ok(name) ? 0 : -1;
}

static int add_dir(hako_msg_registry_t *reg, const char *dir, int first)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/') {
		n--; /* so paths in messages read "/a/pkg", not "/a//pkg" */
	}
	char **nd = realloc(reg->dirs, (reg->dir_count + 1) * sizeof(*nd));
	if (nd == NULL) {
		return HAKO_ENOMEM;
	}
	reg->dirs = nd;
	char *copy = malloc(n + 1);
	if (copy == NULL) {
		return HAKO_ENOMEM;
	}
	memcpy(copy, dir, n);
	copy[n] = '\0';
	size_t at = first ? 0 : reg->dir_count;
	memmove(&reg->dirs[at + 1], &reg->dirs[at], (reg->dir_count - at) * sizeof(*nd));
	reg->dirs[at] = copy;
	reg->dir_count++;
	return 0;
}

static int add_env_path(hako_msg_registry_t *reg, const char *env)
{
	while (*env != '\0') {
		const char *colon = strchr(env, ':');
		size_t n = colon != NULL ? (size_t)(colon - env) : strlen(env);
		if (n > DIR_LEN_MAX) {
			HAKO_WARN("HAKO_MSG_PATH: skipping a folder of %zu bytes (the limit is %d)",
			          n, DIR_LEN_MAX);
		} else if (n > 0) {
			char dir[DIR_LEN_MAX + 1];
			memcpy(dir, env, n);
			dir[n] = '\0';
			int rc = add_dir(reg, dir, 0);
			if (rc != 0) {
				return rc;
			}
		}
		env += n + (colon != NULL ? 1 : 0);
	}
	return 0;
}

int hako_msg_registry_create(hako_msg_registry_t **out)
{
	if (out == NULL) {
		return HAKO_EINVAL;
	}
	*out = NULL;
	hako_msg_registry_t *reg = calloc(1, sizeof(*reg));
	if (reg == NULL) {
		return HAKO_ENOMEM;
	}
	if (pthread_mutex_init(&reg->lock, NULL) != 0) {
		free(reg);
		return HAKO_ENOMEM;
	}
	const char *env = getenv("HAKO_MSG_PATH");
	if (env != NULL) {
		int rc = add_env_path(reg, env);
		if (rc != 0) {
			hako_msg_registry_destroy(reg);
			return rc;
		}
	}
	*out = reg;
	return 0;
}

void hako_msg_registry_destroy(hako_msg_registry_t *reg)
{
	if (reg == NULL) {
		return;
	}
	for (size_t i = 0; i < reg->type_count; i++) {
		free(reg->types[i]);
	}
	free(reg->types);
	for (size_t i = 0; i < reg->dir_count; i++) {
		free(reg->dirs[i]);
	}
	free(reg->dirs);
	pthread_mutex_destroy(&reg->lock);
	free(reg);
}

int hako_msg_registry_add_path(hako_msg_registry_t *reg, const char *dir)
{
	if (reg == NULL || dir == NULL || dir[0] == '\0') {
		return HAKO_EINVAL;
	}
	if (strlen(dir) > DIR_LEN_MAX) {
		return HAKO_ENAMETOOLONG;
	}
	pthread_mutex_lock(&reg->lock);
	int rc = add_dir(reg, dir, 1);
	pthread_mutex_unlock(&reg->lock);
	return rc;
}

int hako_msg_registry_get(hako_msg_registry_t *reg, const char *full_name,
                          const hako_msg_type_t **out, hako_error_t *err)
{
	char pkg[HAKO_MSG_NAME_MAX];
	char name[HAKO_MSG_NAME_MAX];
	hako_error_clear(err);
	if (out != NULL) {
		*out = NULL;
	}
	if (reg == NULL || out == NULL) {
		return hako_error_set(err, HAKO_EINVAL, NULL, 0, 0, "no registry or no output");
	}
	if (split_name(full_name, pkg, name) != 0) {
		return hako_error_set(
		    err, HAKO_EINVAL, NULL, 0, 0,
		    "bad type name '%.*s': must be <pkg>/<Type>, names of letters, "
		    "digits and '_' starting with a letter, at most %d bytes each",
		    full_name != NULL ? 128 : 6, full_name != NULL ? full_name : "(null)",
		    HAKO_MSG_NAME_MAX - 1);
	}
	pthread_mutex_lock(&reg->lock);
	int rc = load(reg, pkg, name, NULL, out, err);
	pthread_mutex_unlock(&reg->lock);
	return rc;
}

int hako_msg_registry_add_text(hako_msg_registry_t *reg, const char *pkg, const char *name,
                               const char *text, const char *path, const hako_msg_type_t **out,
                               hako_error_t *err)
{
	char default_path[PATH_LEN];
	const hako_msg_type_t *t = NULL;
	hako_error_clear(err);
	if (out != NULL) {
		*out = NULL;
	}
	if (reg == NULL || text == NULL) {
		return hako_error_set(err, HAKO_EINVAL, path, 0, 0, "no registry or no text");
	}
	if (!hakoi_msg_name_ok(pkg) || !hakoi_msg_name_ok(name)) {
		return hako_error_set(err, HAKO_EINVAL, path, 0, 0,
		                      "bad package or type name: letters, digits and '_' starting "
		                      "with a letter, at most %d bytes",
		                      HAKO_MSG_NAME_MAX - 1);
	}
	if (path == NULL) {
		snprintf(default_path, sizeof(default_path), "%s/%s.msg", pkg, name);
		path = default_path;
	}
	pthread_mutex_lock(&reg->lock);
	char full[HAKO_MSG_FULL_MAX];
	snprintf(full, sizeof(full), "%s/%s", pkg, name);
	int rc;
	if (find(reg, full) != NULL) {
		rc = hako_error_set(err, HAKO_EEXIST, path, 0, 0, "type %s is defined already",
		                    full);
	} else {
		rc = define(reg, pkg, name, text, strlen(text), path, &t, err);
	}
	pthread_mutex_unlock(&reg->lock);
	if (rc == 0 && out != NULL) {
		*out = t;
	}
	return rc;
}

/* ---- Listing ---- */

struct names {
	char **v;
	size_t count;
	size_t cap;
};

static int names_add(struct names *n, const char *pkg, const char *name)
{
	if (n->count == n->cap) {
		size_t ncap = n->cap > 0 ? n->cap * 2 : 128;
		char **nv = realloc(n->v, ncap * sizeof(*nv));
		if (nv == NULL) {
			return HAKO_ENOMEM;
		}
		n->v = nv;
		n->cap = ncap;
	}
	size_t len = strlen(pkg) + 1 + strlen(name) + 1;
	char *s = malloc(len);
	if (s == NULL) {
		return HAKO_ENOMEM;
	}
	snprintf(s, len, "%s/%s", pkg, name);
	n->v[n->count++] = s;
	return 0;
}

/* The types of one package folder: its <Type>.msg files. */
static int scan_pkg(struct names *n, const char *dir, const char *pkg)
{
	DIR *d = opendir(dir);
	if (d == NULL) {
		return 0;
	}
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		char type[HAKO_MSG_NAME_MAX];
		char path[PATH_LEN];
		struct stat st;
		if (len <= 4 || len - 4 >= sizeof(type) ||
		    strcmp(de->d_name + len - 4, ".msg") != 0) {
			continue;
		}
		memcpy(type, de->d_name, len - 4);
		type[len - 4] = '\0';
		if (!hakoi_msg_name_ok(type)) {
			continue;
		}
		int pn = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (pn < 0 || (size_t)pn >= sizeof(path) || stat(path, &st) != 0 ||
		    !S_ISREG(st.st_mode)) {
			continue;
		}
		rc = names_add(n, pkg, type);
	}
	closedir(d);
	return rc;
}

static int scan_dir(struct names *n, const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL) {
		return 0;
	}
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		char path[PATH_LEN];
		if (!hakoi_msg_name_ok(de->d_name)) {
			continue;
		}
		int pn = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (pn < 0 || (size_t)pn >= sizeof(path) - 4) {
			continue;
		}
		rc = scan_pkg(n, path, de->d_name);
		if (rc == 0) {
			strcat(path, "/msg");
			rc = scan_pkg(n, path, de->d_name);
		}
	}
	closedir(d);
	return rc;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int hako_msg_registry_list(hako_msg_registry_t *reg, char ***names, size_t *count)
{
	if (names != NULL) {
		*names = NULL;
	}
	if (count != NULL) {
		*count = 0;
	}
	if (reg == NULL || names == NULL || count == NULL) {
		return HAKO_EINVAL;
	}
	struct names n = {NULL, 0, 0};
	int rc = 0;
	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < reg->dir_count && rc == 0; i++) {
		rc = scan_dir(&n, reg->dirs[i]);
	}
	for (size_t i = 0; i < reg->type_count && rc == 0; i++) {
		rc = names_add(&n, reg->types[i]->type.pkg, reg->types[i]->type.name);
	}
	pthread_mutex_unlock(&reg->lock);
	for (size_t i = 0; i < hakoi_builtin_msg_count && rc == 0; i++) {
		rc = names_add(&n, hakoi_builtin_msgs[i].pkg, hakoi_builtin_msgs[i].name);
	}
	if (rc != 0) {
		hako_msg_names_free(n.v, n.count);
		return rc;
	}
	if (n.count > 0) {
		qsort(n.v, n.count, sizeof(*n.v), by_string);
	}
	size_t out = 0;
	for (size_t i = 0; i < n.count; i++) {
		if (out > 0 && strcmp(n.v[out - 1], n.v[i]) == 0) {
			free(n.v[i]);
		} else {
			n.v[out++] = n.v[i];
		}
	}
	*names = n.v;
	*count = out;
	return 0;
}

void hako_msg_names_free(char **names, size_t count)
{
	if (names == NULL) {
		return;
	}
	for (size_t i = 0; i < count; i++) {
		free(names[i]);
	}
	free(names);
}
