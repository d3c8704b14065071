/* The eu-input's PDU groups (gen_input.c reads the file): pdu_groups or pdu_type_groups, each
 * robot.pdu keys moved with one transfer policy; a key is in one group at most. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_input.h"

/* ---- PDU groups ---- */

static const char *const ticker_names[] = {"rd-ctrl-ticker", NULL};

/* The transfer policies gen knows: Hakoniwa's template ids, and throttle-/ticker-<N>ms. */
static int valid_policy(const char *id)
{
	if (strcmp(id, "immediate") == 0 || strcmp(id, "immediate-atomic") == 0 ||
	    strcmp(id, ticker_names[0]) == 0) {
		return 1;
	}
	const char *num = strncmp(id, "throttle-", 9) == 0 ? id + 9
	                  : strncmp(id, "ticker-", 7) == 0 ? id + 7
	                                                   : NULL;
	if (num == NULL || !isdigit((unsigned char)*num) || *num == '0') {
		return 0;
	}
	char *end;
	long ms = strtol(num, &end, 10);
	return strcmp(end, "ms") == 0 && ms >= 1 && ms <= 3600000;
}

static int check_policy(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	const char *id = (const char *)base + f->offset;
	if (!valid_policy(id)) {
		return hakoi_walk_fail(w,
		                       "\"%s\" is not a transfer policy hako-conductor gen knows: "
		                       "\"immediate\", \"immediate-atomic\", \"throttle-<N>ms\", "
		                       "\"ticker-<N>ms\" or \"rd-ctrl-ticker\"",
		                       id);
	}
	return 0;
}

/* A new group id, unique among both kinds of groups. */
static int add_group(hakoi_walk_t *w, const char *id, const char *array, size_t index,
                     hakoi_gen_group_t **out)
{
	struct ld *l = ld_of(w);
	hakoi_gen_t *g = l->g;
	for (size_t i = 0; i < g->group_count; i++) {
		if (strcmp(g->groups[i].id, id) == 0) {
			hakoi_walk_push_key(w, "id");
			return hakoi_walk_fail(w, "group \"%s\" is already used by %s[%zu]", id,
			                       l->group_src[i].array, l->group_src[i].index);
		}
	}
	hakoi_gen_group_t *gr = realloc(g->groups, (g->group_count + 1) * sizeof(*gr));
	if (gr == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	g->groups = gr;
	struct group_src *src = realloc(l->group_src, (g->group_count + 1) * sizeof(*src));
	if (src == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	l->group_src = src;
	src[g->group_count] = (struct group_src){array, index};
	gr = &g->groups[g->group_count++];
	memset(gr, 0, sizeof(*gr));
	snprintf(gr->id, sizeof(gr->id), "%s", id);
	snprintf(gr->policy, sizeof(gr->policy), "immediate");
	gr->writer = -1;
	gr->eu = -1;
	*out = gr;
	return 0;
}

/* robot.pdu into the group: in the pdudef, and in no other group (a bridge would forward it
 * twice). */
static int add_key(hakoi_walk_t *w, hakoi_gen_group_t *gr, const char *robot, const char *pdu)
{
	const hakoi_gen_t *g = ld_of(w)->g;
	if (g->pdudef == NULL) {
		return hakoi_walk_fail(w,
		                       "robot \"%s\": no PDUs are declared (give \"pdudef\", or "
		                       "\"robot_types\" and \"robots\")",
		                       robot);
	}
	if (hako_pdudef_robot(g->pdudef, robot) == NULL) {
		return hakoi_walk_fail(w, "robot \"%s\" is not declared (pdudef or robots)", robot);
	}
	if (hako_pdudef_find(g->pdudef, robot, pdu) == NULL) {
		return hakoi_walk_fail(w, "robot \"%s\" has no PDU \"%s\"", robot, pdu);
	}
	for (size_t i = 0; i < g->group_count; i++) {
		const hakoi_gen_group_t *o = &g->groups[i];
		for (size_t k = 0; k < o->key_count; k++) {
			if (strcmp(o->keys[k].robot, robot) == 0 &&
			    strcmp(o->keys[k].pdu, pdu) == 0) {
				return hakoi_walk_fail(w, "%s.%s is already in group \"%s\"", robot,
				                       pdu, o->id);
			}
		}
	}
	hakoi_gen_key_t *k = realloc(gr->keys, (gr->key_count + 1) * sizeof(*k));
	if (k == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	gr->keys = k;
	snprintf(k[gr->key_count].robot, sizeof(k->robot), "%s", robot);
	snprintf(k[gr->key_count].pdu, sizeof(k->pdu), "%s", pdu);
	gr->key_count++;
	return 0;
}

struct key_in {
	char robot[HAKO_NAME_MAX];
	char name[HAKO_NAME_MAX];
};

static const hakoi_field_t key_fields[] = {
    HAKOI_STRING("robot", HAKOI_F_REQUIRED, struct key_in, robot),
    HAKOI_STRING("name", HAKOI_F_REQUIRED, struct key_in, name),
    HAKOI_END,
};

struct group_in {
	char id[HAKO_NAME_MAX];
	char policy[HAKO_NAME_MAX];
	char transport[16];
	json_t *keys;
};

static int keep_keys(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of {robot, name}");
	}
	if (json_array_size(v) == 0) {
		return hakoi_walk_fail(w, "must not be empty");
	}
	((struct group_in *)base)->keys = v;
	return 0;
}

static int check_transport(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	const char *t = (const char *)base + f->offset;
	return strcmp(t, "tcp") == 0
	           ? 0
	           : hakoi_walk_fail(w, "\"%s\": the generated bridges carry groups over tcp only",
	                             t);
}

static const hakoi_field_t group_fields[] = {
    HAKOI_STRING("id", HAKOI_F_REQUIRED, struct group_in, id),
    {.key = "transfer_policy_id",
     .kind = HAKOI_K_STRING,
     HAKOI_AT(struct group_in, policy),
     .check = check_policy},
    {.key = "transport",
     .kind = HAKOI_K_STRING,
     HAKOI_AT(struct group_in, transport),
     .check = check_transport},
    HAKOI_IGNORE("pdudef"),
    HAKOI_CUSTOM("pdu_keys", HAKOI_F_REQUIRED, keep_keys, "an array of {robot, name}"),
    HAKOI_OTHERS,
    HAKOI_END,
};

int hakoi_gen_parse_groups(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct ld *l = ld_of(w);
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of {id, pdu_keys, transfer_policy_id}");
	}
	l->groups_given = 1;
	for (size_t i = 0; i < json_array_size(v); i++) {
		struct group_in in;
		memset(&in, 0, sizeof(in));
		hakoi_walk_push_index(w, i);
		json_t *e = json_array_get(v, i);
		if (!json_is_object(e)) {
			return hakoi_walk_fail_must(w, "an object");
		}
		int r = hakoi_gen_walk_lenient(w, e, group_fields, &in);
		hakoi_gen_group_t *gr;
		if (r != 0 || (r = add_group(w, in.id, "pdu_groups", i, &gr)) != 0) {
			return r;
		}
		if (in.policy[0] != '\0') {
			snprintf(gr->policy, sizeof(gr->policy), "%s", in.policy);
		}
		hakoi_walk_push_key(w, "pdu_keys");
		for (size_t k = 0; k < json_array_size(in.keys); k++) {
			struct key_in key;
			memset(&key, 0, sizeof(key));
			hakoi_walk_push_index(w, k);
			r = hakoi_walk_value(
			    w, json_array_get(in.keys, k),
			    &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = key_fields}, &key);
			if (r != 0) {
				return r;
			}
			hakoi_walk_push_key(w, "name");
			if ((r = add_key(w, gr, key.robot, key.name)) != 0) {
				return r;
			}
			hakoi_walk_pop(w);
			hakoi_walk_pop(w);
		}
		hakoi_walk_pop(w);
		hakoi_walk_pop(w);
	}
	return 0;
}

struct type_group_in {
	char id[HAKO_NAME_MAX];
	char policy[HAKO_NAME_MAX];
	json_t *types;
};

static int keep_types(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of {robot_type, pdu_names}");
	}
	if (json_array_size(v) == 0) {
		return hakoi_walk_fail(w, "must not be empty");
	}
	((struct type_group_in *)base)->types = v;
	return 0;
}

static const hakoi_field_t type_group_fields[] = {
    HAKOI_STRING("id", HAKOI_F_REQUIRED, struct type_group_in, id),
    HAKOI_CUSTOM("robot_types", HAKOI_F_REQUIRED, keep_types,
                 "an array of {robot_type, pdu_names}"),
    {.key = "transfer_policy_id",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(struct type_group_in, policy),
     .check = check_policy},
    HAKOI_END,
};

struct type_entry_in {
	char type[HAKO_NAME_MAX];
	json_t *names;
};

static const hakoi_field_t type_entry_fields[] = {
    HAKOI_STRING("robot_type", HAKOI_F_REQUIRED, struct type_entry_in, type),
    {.key = "pdu_names",
     .kind = HAKOI_K_CUSTOM,
     .flags = HAKOI_F_REQUIRED,
     .offset = offsetof(struct type_entry_in, names),
     .parse = hakoi_gen_keep_json,
     .expect = "an array of PDU names"},
    HAKOI_END,
};

/* One {robot_type, pdu_names} of a type group: those PDUs of every robot of that type. */
static int expand_type(hakoi_walk_t *w, json_t *e, hakoi_gen_group_t *gr)
{
	struct ld *l = ld_of(w);
	struct type_entry_in in;
	memset(&in, 0, sizeof(in));
	int r = hakoi_walk_value(
	    w, e, &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = type_entry_fields}, &in);
	if (r != 0) {
		return r;
	}
	size_t robots = 0;
	int known = 0;
	for (size_t i = 0; i < l->robot_count; i++) {
		robots += strcmp(l->robots[i].type, in.type) == 0;
	}
	for (size_t i = 0; i < l->rtype_count; i++) {
		known |= strcmp(l->rtypes[i].name, in.type) == 0;
	}
	hakoi_walk_push_key(w, "robot_type");
	if (!known) {
		return hakoi_walk_fail(w, "robot type \"%s\" is not in robot_types", in.type);
	}
	if (robots == 0) {
		hakoi_gen_warn_at(w, NULL, "no robot is of type \"%s\": nothing to move for it",
		                  in.type);
	}
	hakoi_walk_pop(w);
	hakoi_walk_push_key(w, "pdu_names");
	if (!json_is_array(in.names) || json_array_size(in.names) == 0) {
		return json_is_array(in.names) ? hakoi_walk_fail(w, "must not be empty")
		                               : hakoi_walk_fail_must(w, "an array of PDU names");
	}
	for (size_t k = 0; k < json_array_size(in.names); k++) {
		char pdu[HAKO_NAME_MAX];
		hakoi_walk_push_index(w, k);
		if ((r = hakoi_gen_get_string(w, json_array_get(in.names, k), pdu, sizeof(pdu))) !=
		    0) {
			return r;
		}
		for (size_t i = 0; i < l->robot_count; i++) {
			if (strcmp(l->robots[i].type, in.type) == 0 &&
			    (r = add_key(w, gr, l->robots[i].name, pdu)) != 0) {
				return r;
			}
		}
		hakoi_walk_pop(w);
	}
	hakoi_walk_pop(w);
	return 0;
}

int hakoi_gen_parse_type_groups(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)base;
	(void)f;
	struct ld *l = ld_of(w);
	if (!json_is_array(v)) {
		return hakoi_walk_fail_must(w, "an array of {id, robot_types, transfer_policy_id}");
	}
	l->type_groups_given = 1;
	for (size_t i = 0; i < json_array_size(v); i++) {
		struct type_group_in in;
		memset(&in, 0, sizeof(in));
		hakoi_walk_push_index(w, i);
		int r = hakoi_walk_value(
		    w, json_array_get(v, i),
		    &(hakoi_field_t){.kind = HAKOI_K_OBJECT, .fields = type_group_fields}, &in);
		hakoi_gen_group_t *gr;
		if (r != 0 || (r = add_group(w, in.id, "pdu_type_groups", i, &gr)) != 0) {
			return r;
		}
		snprintf(gr->policy, sizeof(gr->policy), "%s", in.policy);
		hakoi_walk_push_key(w, "robot_types");
		for (size_t k = 0; k < json_array_size(in.types); k++) {
			hakoi_walk_push_index(w, k);
			if ((r = expand_type(w, json_array_get(in.types, k), gr)) != 0) {
				return r;
			}
			hakoi_walk_pop(w);
		}
		hakoi_walk_pop(w);
		hakoi_walk_pop(w);
	}
	return 0;
}

/* Hakoniwa's schema: exactly one of the two. */
int hakoi_gen_check_groups(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)base;
	(void)f;
	struct ld *l = ld_of(w);
	if (l->groups_given && l->type_groups_given) {
		hakoi_walk_push_key(w, "pdu_type_groups");
		return hakoi_walk_fail(w, "not allowed with pdu_groups: give the groups one way");
	}
	if (!l->groups_given && !l->type_groups_given) {
		hakoi_walk_push_key(w, "pdu_groups");
		return hakoi_walk_fail_missing(w, "an array of groups; or give pdu_type_groups");
	}
	return 0;
}
