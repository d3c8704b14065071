/* The env of a Hakoniwa launcher file's asset or defaults (launch_config_hakoniwa.c has the
 * assets): {set, prepend, append, unset}, applied in that order to what the process starts
 * with; "lib_path" is LD_LIBRARY_PATH. */
#include <stdlib.h>
#include <string.h>

#include "launch_config_internal.h"

static const char *hk_env_key(const char *key)
{
	return strcmp(key, "lib_path") == 0 ? "LD_LIBRARY_PATH" : key;
}

/* The env entry of key in p (added, value NULL, when absent), or NULL when out of memory. */
static hakoi_launch_env_t *hk_env_slot(hakoi_launch_proc_t *p, const char *key)
{
	for (size_t i = 0; i < p->env_count; i++) {
		if (strcmp(p->env[i].key, key) == 0) {
			return &p->env[i];
		}
	}
	hakoi_launch_env_t *n = realloc(p->env, (p->env_count + 1) * sizeof(*n));
	if (n == NULL) {
		return NULL;
	}
	p->env = n;
	hakoi_launch_env_t *e = &n[p->env_count];
	if ((e->key = strdup(key)) == NULL) {
		return NULL;
	}
	e->value = NULL;
	p->env_count++;
	return e;
}

/* The value the process starts with so far: set by an earlier op, else hako-launch's own. */
static const char *hk_env_now(const hakoi_launch_env_t *e, int fresh)
{
	if (!fresh) {
		return e->value;
	}
	return getenv(e->key);
}

/* One "set" member: a string. */
static int hk_env_set(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_launch_proc_t *p = base;
	const char *key = hk_env_key(hakoi_walk_key(w));
	if (hakoi_launch_reserved_env(key)) {
		return hakoi_walk_fail(w, "is set by hako-launch for every process");
	}
	char *value = NULL;
	int r = hakoi_launch_parse_expanded(
	    w, v, &value, &(hakoi_field_t){.flags = HAKOI_F_EMPTY_OK, .offset = 0});
	if (r != 0) {
		return r;
	}
	hakoi_launch_env_t *e = hk_env_slot(p, key);
	if (e == NULL) {
		free(value);
		return hakoi_walk_fail_oom(w);
	}
	free(e->value);
	e->value = value;
	return 0;
}

/* One "prepend" / "append" member: an array of strings joined with ':' around the value. */
static int hk_env_join(hakoi_walk_t *w, json_t *v, hakoi_launch_proc_t *p, int prepend)
{
	const char *key = hk_env_key(hakoi_walk_key(w));
	if (hakoi_launch_reserved_env(key)) {
		return hakoi_walk_fail(w, "is set by hako-launch for every process");
	}
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of strings");
	}
	size_t n = 1, i;
	json_t *item;
	json_array_foreach(v, i, item)
	{
		if (!json_is_string(item)) {
			hakoi_walk_push_index(w, i);
			return hakoi_walk_fail_must(w, "a string");
		}
		n += json_string_length(item) + 1;
	}
	size_t before = p->env_count;
	hakoi_launch_env_t *e = hk_env_slot(p, key);
	if (e == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	const char *now = hk_env_now(e, p->env_count != before);
	n += now != NULL ? strlen(now) : 0;
	char *joined = malloc(n + 1);
	if (joined == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	joined[0] = '\0';
	if (!prepend && now != NULL && now[0] != '\0') {
		strcat(joined, now);
	}
	json_array_foreach(v, i, item)
	{
		if (joined[0] != '\0') {
			strcat(joined, ":");
		}
		strcat(joined, json_string_value(item));
	}
	if (prepend && now != NULL && now[0] != '\0') {
		strcat(joined, ":");
		strcat(joined, now);
	}
	free(e->value);
	e->value = joined;
	return 0;
}

static int hk_env_prepend(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hk_env_join(w, v, base, 1);
}

static int hk_env_append(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hk_env_join(w, v, base, 0);
}

/* "unset": an array of names; the process starts without them. */
static int hk_env_unset(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_launch_proc_t *p = base;
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of variable names");
	}
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item)
	{
		hakoi_walk_push_index(w, i);
		if (!json_is_string(item)) {
			return hakoi_walk_fail_must(w, "a string");
		}
		const char *key = hk_env_key(json_string_value(item));
		if (hakoi_launch_reserved_env(key)) {
			return hakoi_walk_fail(w, "is set by hako-launch for every process");
		}
		hakoi_launch_env_t *e = hk_env_slot(p, key);
		if (e == NULL) {
			return hakoi_walk_fail_oom(w);
		}
		free(e->value);
		e->value = NULL;
		hakoi_walk_pop(w);
	}
	return 0;
}

static int hk_env_map(hakoi_walk_t *w, json_t *v, void *base,
                      int (*one)(hakoi_walk_t *, json_t *, void *, const hakoi_field_t *))
{
	if (!json_is_object(v)) {
		return hakoi_walk_fail_must(w, "an object");
	}
	const char *key;
	json_t *item;
	json_object_foreach(v, key, item)
	{
		hakoi_walk_push_key(w, key);
		int r = one(w, item, base, NULL);
		if (r != 0) {
			return r;
		}
		hakoi_walk_pop(w);
	}
	return 0;
}

static int hk_env_set_map(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hk_env_map(w, v, base, hk_env_set);
}

static int hk_env_prepend_map(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hk_env_map(w, v, base, hk_env_prepend);
}

static int hk_env_append_map(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hk_env_map(w, v, base, hk_env_append);
}

static const hakoi_field_t hk_env_fields[] = {
    HAKOI_CUSTOM("set", 0, hk_env_set_map, "an object of strings"),
    HAKOI_CUSTOM("prepend", 0, hk_env_prepend_map, "an object of string arrays"),
    HAKOI_CUSTOM("append", 0, hk_env_append_map, "an object of string arrays"),
    HAKOI_CUSTOM("unset", 0, hk_env_unset, "an array of variable names"),
    HAKOI_END,
};

int hakoi_launch_hk_env(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	return hakoi_walk_object(w, v, hk_env_fields, base);
}
